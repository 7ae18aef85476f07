"""The HTML shell of ``isrlab report``: one self-contained page, no network access.

Design. The page is plain HTML with a small inline stylesheet and script, plus plotly.js
inlined once in ``<head>`` (from the installed ``plotly`` package, so the report opens
offline and its plots match the Python library that built them). Figures are rendered with
``plotly.io.to_html(include_plotlyjs=False, full_html=False)`` into fixed ``div`` ids so
links can address them: an anomaly row's link zooms the partition's timeline to that moment
(``data-plot``/``data-t`` attributes handled by one delegated listener, no inline handlers).
Text from the trace is always escaped (``esc``); ``Html`` marks strings already safe.
When every plot has been drawn the page sets ``window.__reportReady`` (used by the browser
test and the benchmark to time opening).

Labels never overlap: the figures lay their text out for a nominal width
(``figures.place_labels``), and after every drawing of a plot (``plotly_afterplot``: the
first, a zoom, a resize) the script measures the boxes of its time-axis tick labels,
annotations and shape labels in that order and hides (``visibility: hidden``, marked
``data-overlap``) any that would cover one already shown — what a page narrower than the
nominal width needs. A moment link on a trace imported from Kafka's logs carries the logs'
wall clock (``data-clock="wall"``: ms since the Unix epoch, as a Plotly date axis takes).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs

PLOT_CONFIG: dict[str, Any] = {"displaylogo": False, "responsive": True,
                               "modeBarButtonsToRemove": ["select2d", "lasso2d"]}


class Html(str):
    """A string of markup that must not be escaped again."""


def esc(v: Any) -> Html:
    if isinstance(v, Html):
        return v
    if v is None:
        return Html("–")
    if isinstance(v, float):
        v = f"{v:.3f}".rstrip("0").rstrip(".")
    return Html(html.escape(str(v), quote=True))


def tag(name: str, content: Any = "", **attrs: Any) -> Html:
    at = "".join(f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in attrs.items()
                 if v is not None)
    return Html(f"<{name}{at}>{esc(content)}</{name}>")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "",
          id_: str | None = None, row_classes: Sequence[str] | None = None) -> Html:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for i, row in enumerate(rows):
        rc = row_classes[i] if row_classes and i < len(row_classes) else ""
        cells = "".join(f"<td>{esc(c)}</td>" for c in row)
        body.append(f'<tr class="{rc}">{cells}</tr>' if rc else f"<tr>{cells}</tr>")
    ida = f' id="{esc(id_)}"' if id_ else ""
    return Html(f'<table class="{cls}"{ida}><thead><tr>{head}</tr></thead>'
                f'<tbody>{"".join(body)}</tbody></table>')


def figure(fig: Any, div_id: str) -> Html:
    """A placeholder div plus the figure as inert JSON; the page script draws it lazily."""
    spec = pio.to_json(fig, validate=False, pretty=False, engine="json")
    spec = spec.replace("<", "\\u003c")  # still JSON, and cannot close the script element
    height = int(fig.layout.height or 400)
    return Html(f'<div id="{esc(div_id)}" class="plot" style="height:{height}px"></div>'
                f'<script type="application/json" id="{esc(div_id)}-fig">{spec}</script>')


def badge(text: str, kind: str) -> Html:
    return Html(f'<span class="badge {kind}">{esc(text)}</span>')


CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#dde1e8; --bad:#b00020; --ok:#1b7f3a;
        --warn:#a35a00; --bg:#fafbfc; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
       color:var(--fg); background:var(--bg); }
header { background:#1d2330; color:#fff; padding:18px 28px 14px; }
header h1 { margin:0 0 4px; font-size:22px; font-weight:600; }
header .sub { color:#c5cbd6; }
header .kv { margin-top:10px; display:flex; flex-wrap:wrap; gap:6px 22px; }
header .kv span b { color:#fff; font-weight:600; }
header .kv span { color:#aab2c0; }
main { padding:8px 28px 40px; max-width:1500px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px;
          padding:14px 18px; margin:16px 0; }
h2 { font-size:17px; margin:0 0 10px; }
h3 { font-size:15px; margin:18px 0 6px; }
p.note, .caption { color:var(--muted); font-size:12.5px; margin:6px 0; }
table { border-collapse:collapse; font-size:13px; margin:6px 0 10px; }
th, td { border-bottom:1px solid var(--line); padding:4px 10px; text-align:left;
         vertical-align:top; }
th { background:#f1f3f7; font-weight:600; position:sticky; top:0; }
td.num, th.num { text-align:right; }
tr.bad td { background:#fdecee; } tr.warn td { background:#fff6e5; }
tr.zero td { color:#9aa1ad; }
#anomaly-table td:not(:last-child) { white-space:nowrap; }
.badge { display:inline-block; padding:2px 9px; border-radius:10px; font-weight:600;
         font-size:12.5px; }
.badge.ok { background:#e3f4e8; color:var(--ok); } .badge.bad { background:#fde2e6;
  color:var(--bad); } .badge.info { background:#e8edf6; color:#2f4a7a; }
.badge.warn { background:#fff0d6; color:var(--warn); }
header .badge { font-size:13px; }
.verdict { display:flex; gap:10px; align-items:center; flex-wrap:wrap; margin-top:10px; }
.warnbox { background:#fff6e5; border:1px solid #f0c36d; padding:8px 12px; border-radius:6px;
           margin:12px 0; }
a.moment { color:#0b57d0; text-decoration:none; border-bottom:1px dotted #0b57d0;
           cursor:pointer; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:12px; }
pre { background:#f5f6f8; padding:8px; border-radius:4px; overflow:auto; max-height:240px; }
.cols { display:flex; flex-wrap:wrap; gap:8px 30px; }
.plot { min-height:200px; }
nav.toc a { margin-right:14px; color:#0b57d0; text-decoration:none; }
"""

SCRIPT = """
(function () {
  var CONFIG = __CONFIG__;
  var LABELS = [".xaxislayer-above text", "g.annotation-text-g", "text.shape-label"];
  function overlaps(a, b) {
    return a.left < b.right - 1 && b.left < a.right - 1 &&
      a.top < b.bottom - 1 && b.top < a.bottom - 1;
  }
  function declutter(el) {
    var kept = [];
    LABELS.forEach(function (sel) {
      Array.prototype.forEach.call(el.querySelectorAll(sel), function (n) {
        n.style.visibility = "";
        n.removeAttribute("data-overlap");
        if (!(n.textContent || "").trim()) { return; }
        var r = n.getBoundingClientRect();
        if (!r.width || !r.height) { return; }
        if (kept.some(function (k) { return overlaps(k, r); })) {
          n.style.visibility = "hidden";
          n.setAttribute("data-overlap", "1");
        } else {
          kept.push(r);
        }
      });
    });
  }
  function render(el) {
    if (el.__drawn) { return el.__drawn; }
    var spec = JSON.parse(document.getElementById(el.id + "-fig").textContent);
    el.__drawn = window.Plotly.newPlot(el, spec.data, spec.layout, CONFIG).then(function () {
      declutter(el);
      el.on("plotly_afterplot", function () { declutter(el); });
      return el;
    });
    return el.__drawn;
  }
  var plots = Array.prototype.slice.call(document.querySelectorAll("div.plot"));
  window.__renderAll = function () { return Promise.all(plots.map(render)); };
  function focusMoment(a) {
    var el = document.getElementById(a.dataset.plot);
    if (!el) { return; }
    var t = parseFloat(a.dataset.t), w = parseFloat(a.dataset.w || "1");
    el.scrollIntoView({block: "center"});
    render(el).then(function () {
      var lo = a.dataset.clock === "wall" ? t - w : Math.max(0, t - w);
      var upd = {"xaxis.range": [lo, t + w]};
      if (el.layout && el.layout.xaxis2) { upd["xaxis2.range"] = [lo, t + w]; }
      return window.Plotly.relayout(el, upd);
    });
  }
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a.moment") : null;
    if (a) { ev.preventDefault(); focusMoment(a); }
  });
  function ready() {
    requestAnimationFrame(function () { requestAnimationFrame(function () {
      window.__reportReady = true;
      document.body.setAttribute("data-ready", "1");
    }); });
  }
  window.__reportReady = false;
  window.addEventListener("load", function () {
    if (!plots.length || !window.Plotly) { ready(); return; }
    if (!("IntersectionObserver" in window)) { window.__renderAll().then(ready); return; }
    var first = true;
    var io = new IntersectionObserver(function (entries) {
      var now = [];
      entries.forEach(function (e) {
        if (e.isIntersecting) { io.unobserve(e.target); now.push(render(e.target)); }
      });
      if (first) { first = false; Promise.all(now).then(ready); }
    }, {rootMargin: "300px 0px"});
    plots.forEach(function (el) { io.observe(el); });
  });
})();
""".replace("__CONFIG__", json.dumps(PLOT_CONFIG))


def page(title: str, header: Html, body: Sequence[Html], with_plotly: bool = True) -> str:
    js = get_plotlyjs() if with_plotly else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<link rel=\"icon\" href=\"data:,\">"
        f"<title>{esc(title)}</title><style>{CSS}</style>"
        + (f"<script type=\"text/javascript\">{js}</script>" if js else "")
        + f"</head><body>{header}<main>{''.join(body)}</main>"
        f"<script type=\"text/javascript\">{SCRIPT}</script></body></html>\n"
    )
