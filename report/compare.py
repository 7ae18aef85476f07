"""The era-matrix page of ``isrlab report DIR`` for a folder ``isrlab compare --out DIR`` wrote.

Design. ``DIR/compare.json`` (``faults.compare.RESULT_FILE``) holds the matrix: rows (each
era, each re-enabled bug), the anomaly columns, counts, the rule at fault of each row and
the row's traces, relative to ``DIR``. The page shows the matrix, then for every row with a
finding the chain ``isrlab explain`` reads off that row's first trace (steps and rule), so
a reader sees not only *that* 0.10 loses what 0.11 keeps but *how*; a chain several rows
share is shown once, naming them (``compare.json``'s ``chains``; an older file without them
has each row's chain explained again from its trace). Nothing is re-run.
A malformed ``compare.json`` is a ``ReportError`` (exit 2); a row trace that is gone or
damaged is named on the page instead of its chain.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from report.markup import Html, badge, esc, page, table
from traces.explain import RULES, explain
from traces.reader import TraceError
from traces.verdict import DURATIONS


class CompareReportError(Exception):
    """``compare.json`` cannot be read: one line."""


def _load(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CompareReportError(f"{path}: cannot read: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list) or not isinstance(
            doc.get("columns"), list):
        raise CompareReportError(f"{path}: rows/columns: not an isrlab compare result")
    return doc


def compare_report(folder: Path, result_file: str) -> tuple[str, str]:
    """(HTML, one-line summary) for a compare folder."""
    doc = _load(folder / result_file)
    columns = [str(c) for c in doc["columns"]]
    rows, classes = [], []
    chains: list[Html] = []
    for row in doc["rows"]:
        if not isinstance(row, dict):
            raise CompareReportError(f"{folder / result_file}: rows: an entry is not an object")
        label = str(row.get("label"))
        if row.get("error"):
            rows.append([label, *["n/a"] * len(columns), f"n/a: {row['error']}"])
            classes.append("")
            continue
        given = row.get("anomalies")
        counts: dict[str, Any] = given if isinstance(given, dict) else {}
        found = any(counts.get(c) for c in columns)
        rows.append([label, *[_cell(c, counts.get(c, 0)) for c in columns],
                     row.get("why") or ""])
        classes.append("bad" if found else "")
        traces = [t for t in row.get("traces") or [] if isinstance(t, str)]
        if found and traces and not isinstance(doc.get("chains"), list):
            chains.append(_row_chain(folder, label, traces[0], columns))
    if isinstance(doc.get("chains"), list):   # each distinct chain once, with its rows
        chains = [_shared_chain(g) for g in doc["chains"] if isinstance(g, dict)]
    name = str(doc.get("scenario"))
    seeds = doc.get("seeds") or []
    header = Html(f"<header><h1>{esc(name)} · one fault schedule under every era</h1>"
                  f"<div class=\"sub\">isrlab compare: seeds {esc(seeds)}; the schedule is "
                  "fixed once and replayed under each row</div></header>")
    lost = [r[0] for r, c in zip(rows, classes, strict=True) if c == "bad"]
    body = [Html('<section id="matrix"><h2>Era matrix</h2>'
                 + table(["row", *columns, "why (rule at fault)"], rows, id_="era-matrix",
                         row_classes=classes)
                 + "<p class=\"note\">A row is an era (its default settings), or an "
                 "era that has a bug's fix with that bug re-enabled; cells sum the seeds' "
                 "counts.</p>"
                 + ("".join(badge(f"found under {r}", "bad") for r in lost) or
                    badge("nothing found in any row", "ok"))
                 + "</section>"),
            Html('<section id="row-chains"><h2>How each row lost it</h2>'
                 + ("".join(chains) or '<p class="note">No row found anything.</p>')
                 + "</section>")]
    summary = f"{name}: " + (f"found under {', '.join(lost)}" if lost else "nothing found")
    return page(f"isrlab compare — {name}", header, body, with_plotly=False), summary


def _row_chain(folder: Path, label: str, trace: str, columns: list[str]) -> Html:
    head = f'<div class="chain"><h3>{esc(label)}</h3>'
    path = folder / trace
    try:
        ex = explain(str(path))
    except (TraceError, OSError) as exc:
        return Html(head + f'<p class="note">{esc(trace)}: {esc(exc)}</p></div>')
    chain = next((c for c in ex.chains if c.anomaly in columns
                  and not RULES[c.rule].expected), None)
    if chain is None:
        return Html(head + '<p class="note">no chain</p></div>')
    rule = RULES[chain.rule]
    steps = "".join(f"<li>{st.ts_us / 1e6:.3f} s {esc(st.text)}</li>" if st.seq != 1 << 62
                    else f"<li><i>{esc(st.text)}</i></li>" for st in chain.steps)
    return Html(head + f"<p>{esc(chain.anomaly)} {esc(chain.topic)}-{esc(chain.partition)}"
                f" ×{chain.count} — <b>rule</b> <code>{esc(chain.rule)}</code>: "
                f"{esc(rule.what)}<br><b>changed by</b> {esc(rule.fix)}</p>"
                f'<ol class="steps">{steps}</ol><p class="note">trace {esc(trace)}</p></div>')


def _shared_chain(group: dict[str, Any]) -> Html:
    """One chain of ``compare.json``'s ``chains``: the rows whose runs tell it, then it."""
    labels = [str(x) for x in group.get("rows") or []]
    given = group.get("chain")
    c: dict[str, Any] = given if isinstance(given, dict) else {}
    steps = "".join(f"<li>{int(st.get('ts_us', 0)) / 1e6:.3f} s {esc(st.get('text'))}</li>"
                    if st.get("seq") != 1 << 62 else f"<li><i>{esc(st.get('text'))}</i></li>"
                    for st in c.get("steps") or [] if isinstance(st, dict))
    rows = (esc(labels[0]) if len(labels) == 1
            else f"{len(labels)} rows, the same chain: {esc(', '.join(labels))}")
    return Html(f'<div class="chain"><h3>{rows}</h3>'
                f"<p>{esc(c.get('anomaly'))} {esc(c.get('topic'))}-{esc(c.get('partition'))}"
                f" ×{esc(c.get('count'))} — <b>rule</b> <code>{esc(c.get('rule'))}</code>: "
                f"{esc(c.get('what'))}<br><b>changed by</b> {esc(c.get('fix'))}</p>"
                f'<ol class="steps">{steps}</ol></div>')


def _cell(anomaly: str, count: Any) -> str:
    """A count as ``compare`` prints it: durations (milliseconds) in seconds."""
    if not isinstance(count, int | float):
        return str(count)
    return f"{count / 1000:,.1f} s" if anomaly in DURATIONS else f"{count:,}"
