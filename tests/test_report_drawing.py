"""``isrlab report`` draws what happened with the right shapes (issue 50, point 4).

Real traces of real runs: operations last as long as their own events say (a reassignment
from its start to its completion, a controlled shutdown until the broker is back, a
preferred election no time at all), never to the end of the run, and a kind's shading never
stacks; a removed replica's LEO and HW lines end where its log was deleted
(``replica_deleted``); the space-time diagram is centred on the first loss (else the first
forbidden anomaly), never on an informational finding; a trace imported from Kafka's logs
is drawn on the logs' wall clock; and in a real headless Chromium (``report.browser``), no
time label of the space-time diagram or of a timeline covers another, and the operation
bars measure their real durations on screen.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import SMALL, catalog_trace, events, run_to_bytes

from cli import report
from report.browser import INSTALL_HINT, Chromium, find_chromium
from report.figures import place_labels, timeline_figure
from report.reading import GONE, Interval, read_view
from traces.explain_output import Chain, Step

ROOT = Path(__file__).resolve().parent.parent
S1 = ROOT / "tests" / "regressions" / "s1-kip101-hw-truncation.jsonl.gz"
LOGS = ROOT / "tests" / "data" / "kafka_logs"
CAPS = [400] * 64


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("drawing")
    out: dict[str, Path] = {}
    for name in ("reassign-under-load", "rolling-restart", "expand-and-decommission"):
        out[name] = d / f"{name}.jsonl"
        out[name].write_bytes(catalog_trace(name))
    return out


def _of(path: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in events(path.read_bytes()) if e["event"] == name]


def _named(fig: Any, name: str) -> Any:
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, [t.name for t in fig.data]
    return found[0]


def _bars(trace: Any) -> list[tuple[float, float]]:
    """The (start, end) of each bar of a lane trace (x = a0, b0, None, a1, b1, None, ...)."""
    xs = list(trace.x)
    return [(xs[i], xs[i + 1]) for i in range(0, len(xs), 3)]


def _rects(fig: Any, color: str) -> list[tuple[float, float]]:
    return sorted((s.x0, s.x1) for s in fig.layout.shapes
                  if s.type == "rect" and s.fillcolor == color)


# --------------------------------------------------------------------------- operations


def test_a_reassignment_lasts_from_its_start_to_its_completion(traces: dict[str, Path]) -> None:
    """reassign-under-load moves orders-0 at 10 s (done in under 0.3 s) and orders-1 at 22 s
    (done at 27.8 s, once broker 5 caught up): each operation ends at its partition's
    ``reassignment`` completion, and its bar and shading on that partition's timeline are
    that long — not a band to the heal phase."""
    path = traces["reassign-under-load"]
    done = {f"{e['topic']}-{e['partition']}": e["ts_us"] for e in _of(path, "reassignment")
            if e["phase"] == "complete"}
    view = read_view(str(path))
    ops = [op for op in view.operations if op.kind == "reassign"]
    assert [(op.targets, op.start_us, op.end_us) for op in ops] == [
        (["orders-0"], 10_000_000, done["orders-0"]), (["orders-1"], 22_000_000, done["orders-1"])]
    assert done["orders-0"] - 10_000_000 < 300_000
    assert not view.faults[0].operation and all(op.operation for op in ops)
    for pname in ("orders-0", "orders-1"):
        fig = timeline_figure(view, view.partitions[pname], CAPS, [])
        op = next(o for o in ops if o.targets == [pname])
        bars = _bars(_named(fig, "operation: reassign"))
        # its own move only (not the other partition's), with its real length
        assert bars == [(round(op.start_us / 1e6, 3), round(int(op.end_us or 0) / 1e6, 3))]
        assert _rects(fig, "#138d75") == bars   # the shading: the same span, once


def test_a_controlled_shutdown_lasts_until_the_broker_is_back(traces: dict[str, Path]) -> None:
    """rolling-restart stops brokers 1, 2 and 3 in turn with a controlled shutdown and runs
    a preferred election at 47 s: each shutdown lasts from the request until that broker's
    ``node_restart``; the election is an instant (a mark and a dotted vertical, no band);
    nothing is drawn to the end of the run and no shading overlaps its own kind."""
    path = traces["rolling-restart"]
    back = {e["node"]: e["ts_us"] for e in _of(path, "node_restart")}
    view = read_view(str(path))
    shutdowns = [op for op in view.operations if op.kind == "controlled_shutdown"]
    assert [(op.targets[0], op.start_us, op.end_us) for op in shutdowns] == [
        (f"broker-{b}", at, back[f"broker-{b}"])
        for b, at in ((1, 5_000_000), (2, 20_000_000), (3, 35_000_000))]
    election = next(op for op in view.operations if op.kind == "preferred_election")
    assert election.instant and election.start_us == 47_000_000
    assert view.faults == []
    fig = timeline_figure(view, view.partitions["orders-0"], CAPS, [])
    bars = _bars(_named(fig, "operation: controlled_shutdown"))
    assert [round(b - a, 3) for a, b in bars] == [5.01, 5.01, 5.01]
    assert max(b for _, b in bars) < view.end_us / 1e6 - 10
    rects = [(s.x0, s.x1) for s in fig.layout.shapes if s.type == "rect"]
    assert sorted(rects) == sorted(bars)   # one band per shutdown, none for the election
    assert all(a1 <= b0 for (_, a1), (b0, _) in zip(sorted(rects), sorted(rects)[1:],
                                                   strict=False))
    dotted = [s for s in fig.layout.shapes if s.type == "line" and s.x0 == 47.0
              and s.line.dash == "dot"]
    assert len(dotted) == 1
    marks = _named(fig, "operation: preferred_election")
    assert list(marks.x) == [47.0] and marks.mode == "markers"
    assert "elected: " in marks.text[0]


def test_a_kinds_overlapping_intervals_shade_once() -> None:
    """Two faults of one kind that overlap shade their union, so the overlap is not drawn
    darker than the rest."""
    from report.figures import FAULT_COLORS, _interval_shapes
    from report.reading import Clock
    faults = [Interval(1_000_000, 4_000_000, "crash", ["broker-1"]),
              Interval(2_000_000, 6_000_000, "crash", ["broker-2"]),
              Interval(8_000_000, None, "crash", ["broker-3"])]
    shapes = _interval_shapes(faults, Clock(), 10_000_000, FAULT_COLORS, 0.1)
    assert [(s["x0"], s["x1"]) for s in shapes] == [(1.0, 6.0), (8.0, 10.0)]


def test_a_decommission_and_an_added_broker_last_as_long_as_their_events(
        traces: dict[str, Path]) -> None:
    """expand-and-decommission: broker 4 is added at 5 s (until it registers) and broker 1
    decommissioned at 22 s (until it is stopped and unregistered, ``decommission`` done)."""
    path = traces["expand-and-decommission"]
    registered = next(e["ts_us"] for e in _of(path, "broker_registered") if e["broker"] == 4)
    decommissioned = next(e["ts_us"] for e in _of(path, "decommission")
                          if e["phase"] == "done")
    view = read_view(str(path))
    spans = {op.kind: (op.start_us, op.end_us) for op in view.operations}
    assert spans["add_broker"] == (5_000_000, registered)
    assert spans["decommission"] == (22_000_000, decommissioned)


# --------------------------------------------------------------------------- deleted logs


def _line(fig: Any, name: str) -> list[tuple[Any, Any]]:
    t = _named(fig, name)
    return list(zip(t.x, t.y, strict=True))


def test_a_removed_replicas_lines_end_where_its_log_was_deleted(
        traces: dict[str, Path]) -> None:
    """reassign-under-load moves orders-0 from brokers 1, 2, 3 to 4, 5, 6: each old
    replica's LEO and HW lines end at its ``replica_deleted`` (with the value it had), and
    the new replicas' lines run to the end of the run."""
    path = traces["reassign-under-load"]
    deleted = {e["replica"]: e for e in _of(path, "replica_deleted") if e["partition"] == 0}
    assert sorted(deleted) == [1, 2, 3]
    view = read_view(str(path))
    pv = view.partitions["orders-0"]
    assert sorted(pv.deleted) == sorted((e["ts_us"], r) for r, e in deleted.items())
    assert all(pv.leo[r].val[-1] == GONE for r in deleted)
    fig = timeline_figure(view, pv, CAPS, [])
    end = round(view.end_us / 1e6, 3)
    for r, e in deleted.items():
        for what in ("LEO", "HW"):
            points = _line(fig, f"{what} broker {r}")
            assert points[-1] == (None, None), points[-3:]
            x, y = points[-2]
            assert x == round(e["ts_us"] / 1e6, 3) and y == e[what.lower()]
            assert all(px is None or px <= x for px, _ in points)
    for r in (4, 5, 6):
        assert _line(fig, f"LEO broker {r}")[-1][0] == end
    gone = _named(fig, "log deleted (replica removed)")
    assert sorted(gone.x) == sorted(round(e["ts_us"] / 1e6, 3) for e in deleted.values())


# --------------------------------------------------------------------------- focus


def _chain(anomaly: str, topic: str, ts_us: int) -> Chain:
    return Chain(anomaly, topic, 0, "unexplained", [Step(ts_us // 1000, ts_us, anomaly)],
                 records=[(1, "p0-1")] if anomaly.startswith("lost") else [])


def test_the_space_time_diagram_is_centred_on_the_first_loss() -> None:
    """Of a trace's chains the diagram takes the first loss (expected or not), even after
    an informational churn of ``__consumer_offsets`` and an earlier forbidden anomaly;
    without a loss the first forbidden anomaly; an anomaly the scenario allows, or only
    informational findings: nothing (the demo's churn is no centre)."""
    from report.trace_page import _focus_chain
    churn = _chain("isr_churn", "__consumer_offsets", 1_000_000)
    late_loss = _chain("lost_acked_write", "orders", 9_000_000)
    early_loss = _chain("lost_acked_write", "orders", 7_000_000)
    visible = _chain("hw_regression_visible", "orders", 2_000_000)
    forbidden = ["hw_regression_visible", "isr_churn"]
    assert _focus_chain([churn, visible, late_loss, early_loss], forbidden) is early_loss
    assert _focus_chain([churn, visible, late_loss], []) is late_loss
    assert _focus_chain([churn, visible], forbidden) is visible
    assert _focus_chain([churn, visible], []) is None
    assert _focus_chain([churn], forbidden) is None


def test_s1s_space_time_diagram_draws_its_loss_not_its_churn(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """S1's trace has ISR churn before its loss: the diagram (from messages, a re-run) is
    the loss's, and the inferred one (--no-rerun) centres on the first lost write."""
    for flags, words in (([], "around each step of the first loss"),
                         (["--no-rerun"], "Around the first loss: <b>lost_acked_write")):
        out = tmp_path / "s1.html"
        assert report.main([str(S1), "-o", str(out), *flags]) == 0
        capsys.readouterr()
        html = out.read_text()
        section = html[html.index('<section id="spacetime">'):]
        section = section[:section.index("</section>")]
        assert words in section and "isr_churn" not in section, flags


def test_the_demo_report_does_not_centre_its_diagram_on_a_churn(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``isrlab run default`` loses nothing: its only findings are informational (ISR churn,
    a replica's HW after its restart), so the space-time diagram says there is nothing to
    centre on instead of drawing ``__consumer_offsets``."""
    res, data = run_to_bytes("default", 1, [])
    assert res.status == "ok"
    trace = tmp_path / "demo.jsonl"
    trace.write_bytes(data)
    assert report.main([str(trace), "-o", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()
    html = (tmp_path / "r.html").read_text()
    section = html[html.index('<section id="spacetime">'):]
    section = section[:section.index("</section>")]
    assert "nothing to centre a space-time diagram on" in section
    assert "__consumer_offsets" not in section and "spacetime-plot" not in section


# --------------------------------------------------------------------------- wall clock


def test_an_imported_trace_is_drawn_on_the_logs_wall_clock(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace imported from Kafka's logs has no simulated time: its timelines are a date
    axis on the logs' clock (UTC), its moments read as the logs' times and zoom in ms since
    the epoch, and the header gives the span the logs cover."""
    from traces.logs.importer import import_logs
    out = tmp_path / "t.jsonl"
    import_logs([str(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log")], str(out))
    view = read_view(str(out))
    assert view.clock.wall and view.clock.text(0) == "2016-12-18 15:15:55.046 UTC"
    fig = timeline_figure(view, view.partitions["topic-24"], CAPS, [])
    assert fig.layout.xaxis.type == "date" and fig.layout.xaxis2.type == "date"
    assert fig.layout.xaxis2.title.text == "the logs' wall clock (UTC)"
    lo, hi = fig.layout.xaxis2.range
    assert lo == "2016-12-18 15:15:55.046000"
    assert hi == view.clock.x(view.end_us) and str(hi).startswith("2016-12-18 15:15:55.")
    isr = _named(fig, "in ISR broker 1")
    assert all(x is None or str(x).startswith("2016-12-18 15:15:5") for x in isr.x)
    html_out = tmp_path / "r.html"
    assert report.main([str(out), "-o", str(html_out)]) == 0
    capsys.readouterr()
    html = html_out.read_text()
    assert "simulated" not in re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert "logs&#x27; wall clock <b>2016-12-18 15:15:55.046 UTC to 2016-12-18 15:15:55." in html
    # the unclean elections of a KRaft controller's log (2024-01-16 23:28:50.746 to .747):
    # each example's moment is the logs' time, and zooms its timeline in ms since the epoch
    out2 = tmp_path / "t2.jsonl"
    import_logs([str(LOGS / "03-automq-kraft-controller-fencing-unclean.log")], str(out2))
    assert report.main([str(out2), "-o", str(html_out)]) == 0
    capsys.readouterr()
    moment = re.search(r'<a class="moment"[^>]*>[^<]*</a>', html_out.read_text())
    assert moment is not None and 'data-clock="wall"' in moment.group(0)
    assert moment.group(0).endswith(">2024-01-16 23:28:50.747 UTC</a>")
    t = re.search(r'data-t="([0-9.]+)"', moment.group(0))
    assert t is not None and float(t.group(1)) == 1705447730747.0


# --------------------------------------------------------------------------- labels


def test_labels_are_placed_only_where_they_overlap_no_other() -> None:
    rows = place_labels([(100, 60), (130, 60), (300, 40), (110, 40)], rows=2)
    assert rows == [0, 1, 0, None]


LABELS_JS = """(function (id) {
  var el = document.getElementById(id);
  var sels = [".xaxislayer-above text", "g.annotation-text-g", "text.shape-label"];
  var out = [];
  sels.forEach(function (sel) {
    Array.prototype.forEach.call(el.querySelectorAll(sel), function (n) {
      if (!(n.textContent || "").trim()) { return; }
      var r = n.getBoundingClientRect();
      out.push([n.textContent, r.left, r.top, r.right, r.bottom,
                getComputedStyle(n).visibility === "hidden" ? 1 : 0]);
    });
  });
  return JSON.stringify(out);
})"""


def _labels(browser: Chromium, plot_id: str) -> list[list[Any]]:
    return list(json.loads(browser.evaluate(f"{LABELS_JS}({json.dumps(plot_id)})")))


def _overlapping(labels: list[list[Any]]) -> list[tuple[str, str]]:
    shown = [lb for lb in labels if not lb[5] and lb[3] > lb[1]]
    return [(a[0], b[0]) for i, a in enumerate(shown) for b in shown[i + 1:]
            if a[1] < b[3] - 1 and b[1] < a[3] - 1 and a[2] < b[4] - 1 and b[2] < a[4] - 1]


def _open_drawn(browser: Chromium, page: Path) -> list[str]:
    res = browser.open(page)
    assert res.console_errors == []
    browser.evaluate("window.__renderAll().then(function () { return 1; }), 1")
    ids: list[str] = json.loads(browser.evaluate(
        "JSON.stringify(Array.prototype.map.call(document.querySelectorAll('div.plot'),"
        " function (d) { return d.id; }))"))
    for _ in range(300):
        if browser.evaluate("document.querySelectorAll('div.plot .main-svg').length") >= \
                len(ids):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    return ids


#: orders-0's leader crashed every 0.4 s for 8 s: elections closer than their labels are wide
#: (era 2.8, where a restarted broker fails its old incarnation when it registers again; a
#: KRaft controller refuses the restart until the old session expires, 9 s later)
CHURN = [*SMALL, 'protocol="2.8"', "duration_s=10.0", "heal_s=10.0", "faults.plan=[" + ", ".join(
    f'{{at_s={1.0 + 0.4 * i:.1f}, fault="crash", target="leader:orders-0", duration_s=0.2}}'
    for i in range(20)) + "]"]


def test_no_time_label_covers_another_in_chromium(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """S1's space-time diagram (its windows a few instants wide, side by side) and the
    timelines of a run whose leader crashes every 0.4 s (an election label wider than the
    time between two elections), measured in the browser: at 1400 pixels every label
    the figures place is shown and none covers another (each window of the diagram keeps a
    time label); at 760 pixels the page hides what would collide, and still none covers
    another."""
    if find_chromium() is None:
        pytest.skip(f"no Chromium found; {INSTALL_HINT}")
    s1 = tmp_path / "s1.html"
    assert report.main([str(S1), "-o", str(s1)]) == 0
    _, data = run_to_bytes("default", 1, CHURN)
    faulty_trace = tmp_path / "faulty.jsonl"
    faulty_trace.write_bytes(data)
    faulty = tmp_path / "faulty.html"
    assert report.main([str(faulty_trace), "-o", str(faulty), "--no-rerun"]) == 0
    capsys.readouterr()
    elections = [e for e in _of(faulty_trace, "leader_elected") if e["partition"] == 0]
    assert len(elections) > 15   # one every 0.4 s: more labels than fit in one row
    with Chromium(width=1400) as browser:
        ids = _open_drawn(browser, s1)
        assert "spacetime-plot" in ids
        st = _labels(browser, "spacetime-plot")
        times = [lb for lb in st if re.fullmatch(r"\d+\.\d{3} s", lb[0])]
        windows = len(json.loads(browser.evaluate(
            "JSON.stringify(document.getElementById('spacetime-plot').layout.shapes"
            ".filter(function (s) { return s.type === 'rect'; }))"))) + 1
        assert len(times) >= windows >= 3
        assert _overlapping(st) == [] and [lb[0] for lb in st if lb[5]] == []
        for plot in ids:
            labels = _labels(browser, plot)
            assert _overlapping(labels) == [], plot
            assert [lb[0] for lb in labels if lb[5]] == [], plot
        ids = _open_drawn(browser, faulty)
        for plot in ids:
            labels = _labels(browser, plot)
            assert _overlapping(labels) == [], plot
            assert [lb[0] for lb in labels if lb[5]] == [], plot
    with Chromium(width=760) as browser:
        for page in (s1, faulty):
            for plot in _open_drawn(browser, page):
                assert _overlapping(_labels(browser, plot)) == [], (page.name, plot)


SEGMENTS_JS = """(function (id, name) {
  var el = document.getElementById(id);
  var i = el.data.findIndex(function (t) { return t.name === name; });
  var tr = el.querySelectorAll(".scatterlayer .trace")[i];
  var ax = el._fullLayout.xaxis2;
  var d = Array.prototype.map.call(tr.querySelectorAll(".js-line"),
                                   function (p) { return p.getAttribute("d"); });
  return JSON.stringify({d: d.join(""), px: ax._length / (ax.range[1] - ax.range[0])});
})"""


def test_operation_bars_measure_their_real_durations_in_chromium(
        traces: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """rolling-restart's page in the browser: the drawn controlled-shutdown bars are each as
    long on screen as the shutdown lasted (request to ``node_restart``, 5.01 s), not a band
    to the end of the run."""
    if find_chromium() is None:
        pytest.skip(f"no Chromium found; {INSTALL_HINT}")
    page = tmp_path / "rr.html"
    assert report.main([str(traces["rolling-restart"]), "-o", str(page), "--no-rerun"]) == 0
    capsys.readouterr()
    with Chromium(width=1400) as browser:
        _open_drawn(browser, page)
        got = json.loads(browser.evaluate(
            f"{SEGMENTS_JS}('tl-orders-0', 'operation: controlled_shutdown')"))
    # one sub-path per bar, "M x0,y L x1,y" (Plotly may add points along a straight bar)
    bars = []
    for sub in re.findall(r"M[^M]+", got["d"]):
        xs = [float(v) for v in re.findall(r"([-\d.]+),[-\d.]+", sub)]
        bars.append((max(xs) - min(xs)) / got["px"])
    assert len(bars) == 3 and all(abs(b - 5.01) < 0.05 for b in bars), bars
