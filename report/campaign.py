"""The campaign page of ``isrlab report DIR``: anomaly rates by knob and the failing seeds.

Design. A campaign folder holds ``results.jsonl`` (one JSON row per seed) and trace files;
the campaign runner is young, so every field is read defensively:

* a row's verdict is its ``expect_met`` (top level or inside a ``verdict`` object) when
  present, else its ``verdict`` text (``fail``/``failed``/``anomalies``/``not met``/``error``
  mean failing), else "any anomaly of ``DEFAULT_FORBID`` counted";
* anomaly counts come from ``anomalies`` (a map) or from top-level keys named as in
  docs/anomalies.md; a row without counts whose trace is present gets the trace checked;
* knobs (era, acks, min.insync.replicas, unclean election, fault kinds, bugs) come from the
  trace header's resolved scenario and fault plan (only the first line is read), else from a
  ``scenario`` object in the row, else they show as ``?``;
* ``shrunk`` may be a fault plan (list), an object holding one (``plan``/``fault_plan``/
  ``faults``), or anything else (shown as JSON).

A folder without ``results.jsonl`` is treated as a plain folder of traces: each is checked
with the in-process checker. Unreadable rows and traces are listed on the page, never fatal;
a folder with nothing to report is a ``ReportError`` (exit 2). Damaged traces (unreadable,
or failing verification) are also returned one line each by :func:`campaign_page`, which
``isrlab report`` prints on stderr before exiting 1.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report.markup import Html, badge, esc, figure, page, table, tag
from traces.checker import Checker
from traces.reader import TraceError, iter_events
from traces.schema import ANOMALIES, DEFAULT_FORBID
from traces.verdict import INFORMATIONAL, judge

FAILING_WORDS = ("fail", "failed", "failing", "anomalies", "not met", "error", "violation",
                 "not_met")
KNOBS = ("era (protocol)", "acks", "min.insync.replicas", "unclean.leader.election.enable",
         "fault kinds", "bugs")


@dataclass
class Run:
    seed: Any
    failing: bool
    verdict: str
    anomalies: dict[str, int]
    knobs: dict[str, list[str]] = field(default_factory=dict)
    trace: Path | None = None
    shrunk: Any = None
    row: dict[str, Any] = field(default_factory=dict)
    scenario: str = "?"


def _is_trace(p: Path) -> bool:
    n = p.name
    return n.endswith(".jsonl.gz") or (n.endswith(".jsonl") and n != "results.jsonl")


def _header(path: Path) -> dict[str, Any] | None:
    stream = iter_events(path, verify=False)
    with stream:
        next(stream, None)
        return stream.header


def _knobs(header: dict[str, Any] | None, row: dict[str, Any]) -> tuple[dict[str, list[str]], str]:
    sc: Any = (header or {}).get("scenario") or row.get("scenario")
    sc = sc if isinstance(sc, dict) else {}
    topics = [t for t in sc.get("topics", []) if isinstance(t, dict)]
    producers = [p for p in sc.get("producers", []) if isinstance(p, dict)]

    def vals(items: list[dict[str, Any]], key: str) -> list[str]:
        return sorted({str(i[key]) for i in items if key in i}) or ["?"]

    plan = (header or {}).get("fault_plan")
    if not isinstance(plan, list):
        faults = sc.get("faults") if isinstance(sc.get("faults"), dict) else {}
        plan = (faults or {}).get("plan") if isinstance(faults, dict) else None
    kinds = sorted({str(f.get("fault")) for f in plan or [] if isinstance(f, dict)}) or ["none"]
    era = (header or {}).get("protocol") or sc.get("protocol") or row.get("protocol") or "?"
    knobs = {
        "era (protocol)": [str(era)],
        "acks": vals(producers, "acks"),
        "min.insync.replicas": vals(topics, "min.insync.replicas"),
        "unclean.leader.election.enable": vals(topics, "unclean.leader.election.enable"),
        "fault kinds": kinds,
        "bugs": [str(b) for b in sc.get("bugs") or []] or ["none"],
    }
    return knobs, str(sc.get("name") or row.get("scenario_name") or "?")


def _counts(row: dict[str, Any]) -> dict[str, int] | None:
    src = row.get("anomalies")
    if not isinstance(src, dict):
        src = {k: row[k] for k in ANOMALIES if k in row} or None
    if src is None:
        return None
    return {k: int(v) for k, v in src.items() if isinstance(v, int | float)}


def _failing(row: dict[str, Any], counts: dict[str, int]) -> bool:
    verdict = row.get("verdict")
    met = row.get("expect_met")
    if isinstance(verdict, dict):
        met = verdict.get("expect_met", met)
    if isinstance(met, bool):
        return not met
    if isinstance(verdict, str):
        v = verdict.lower()
        return any(v == w or v.startswith(w) for w in FAILING_WORDS)
    return any(counts.get(n) for n in DEFAULT_FORBID)


def _words(counts: dict[str, int], failing: bool, row: dict[str, Any] | None = None) -> str:
    """A seed's verdict in the words every door uses (:mod:`traces.verdict`)."""
    row = row or {}
    forbidden = [str(a) for a in row.get("forbidden_found") or [] if isinstance(a, str)]
    if row.get("status") == "error":
        return "ERROR: the run raised — " + str(row.get("error") or "see its trace")
    if failing and not forbidden:
        forbidden = [n for n in DEFAULT_FORBID if counts.get(n)]
    return judge(counts, forbidden_found=forbidden, expect_met=not failing).headline


def _check(path: Path) -> tuple[dict[str, Any] | None, dict[str, int], bool]:
    checker = Checker()
    stream = iter_events(path)
    with stream:
        for ev in stream:
            checker.feed(ev)
    r = checker.result()
    return stream.header, dict(r.anomalies), not r.expect_met


def _find_trace(folder: Path, row: dict[str, Any]) -> Path | None:
    t = row.get("trace")
    if isinstance(t, str) and t:
        for cand in (Path(t), folder / t, folder / Path(t).name):
            if cand.is_file():
                return cand
    seed = row.get("seed")
    if seed is not None:
        for p in sorted(folder.rglob(f"*{seed}*.jsonl*")):
            stem = p.name.removesuffix(".gz").removesuffix(".jsonl")
            if _is_trace(p) and "".join(c if c.isdigit() else " " for c in stem).split()[-1:] \
                    == [str(seed)]:
                return p
    return None


def load_campaign(folder: Path) -> tuple[list[Run], list[str], bool]:
    """(runs, problems, has_results) for a campaign folder or a plain folder of traces."""
    runs, problems, _damaged, has_results = _load(folder)
    return runs, problems, has_results


def _load(folder: Path) -> tuple[list[Run], list[str], list[str], bool]:
    """:func:`load_campaign`, and the damaged traces: one line per trace file that could
    not be read or did not verify, naming it and the problem."""
    runs: list[Run] = []
    problems: list[str] = []
    damaged: list[str] = []
    results = folder / "results.jsonl"
    if results.is_file():
        with results.open("rb") as fh:
            for n, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                except ValueError as exc:
                    problems.append(f"{results}:{n}: not JSON ({exc})")
                    continue
                if not isinstance(row, dict):
                    problems.append(f"{results}:{n}: not a JSON object")
                    continue
                if row.get("status") == "infra_error":   # faults.campaign.INFRA: not run
                    problems.append(f"{results}:{n}: seed {row.get('seed')} hit an "
                                    f"infrastructure error ({row.get('error')}): not run")
                    continue
                if type(row.get("seed")) is not int or row["seed"] < 0:
                    problems.append(f"{results}:{n}: seed {row.get('seed')!r} is not a "
                                    "seed (a non-negative integer): not counted as a run")
                    continue
                run = _row_run(folder, row, problems, f"{results}:{n}", damaged)
                runs = [r for r in runs if r.seed != row["seed"]]   # run again: last wins
                runs.append(run)
        return runs, problems, damaged, True
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and _is_trace(q)):
        try:
            header, counts, failing = _check(p)
        except (TraceError, OSError) as exc:
            problems.append(f"{exc}")
            damaged.append(_damage(p, exc))
            continue
        knobs, name = _knobs(header, {})
        runs.append(Run(seed=(header or {}).get("seed"), failing=failing,
                        verdict=_words(counts, failing), anomalies=counts,
                        knobs=knobs, trace=p, scenario=name))
    return runs, problems, damaged, False


def _damage(trace: Path, exc: Exception) -> str:
    """One line naming a damaged trace and its problem (TraceError names the file)."""
    if isinstance(exc, TraceError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{trace}: {exc.strerror or exc}"
    return f"{trace}: {exc}"


def _row_run(folder: Path, row: dict[str, Any], problems: list[str], where: str,
             damaged: list[str] | None = None) -> Run:
    trace = _find_trace(folder, row)
    counts = _counts(row)
    header = None
    failing_checked: bool | None = None
    if trace is not None:
        try:
            if counts is None:
                header, counts, failing_checked = _check(trace)
            else:
                header = _header(trace)
        except (TraceError, OSError) as exc:
            problems.append(f"{where}: trace {exc}")
            if damaged is not None:
                damaged.append(_damage(trace, exc))
    counts = counts or {}
    failing = _failing(row, counts)
    if failing_checked is not None and "verdict" not in row and "expect_met" not in row:
        failing = failing_checked
    verdict = _words(counts, failing, row)
    knobs, name = _knobs(header, row)
    return Run(seed=row.get("seed"), failing=failing, verdict=verdict, anomalies=counts,
               knobs=knobs, trace=trace, shrunk=row.get("shrunk"), row=row, scenario=name)


def _plan_of(shrunk: Any) -> list[dict[str, Any]] | None:
    if isinstance(shrunk, dict):
        for key in ("plan", "fault_plan", "faults", "schedule"):
            if isinstance(shrunk.get(key), list):
                shrunk = shrunk[key]
                break
    if isinstance(shrunk, list) and all(isinstance(f, dict) for f in shrunk):
        return shrunk
    return None


def _shrunk_html(shrunk: Any) -> Html:
    if shrunk is None:
        return Html("–")
    plan = _plan_of(shrunk)
    extra = ""
    if isinstance(shrunk, dict):
        rest = {k: v for k, v in shrunk.items() if k not in ("plan", "fault_plan", "faults",
                                                             "schedule")}
        extra = " ".join(f"{k}={v}" for k, v in rest.items()
                         if isinstance(v, str | int | float | bool))
    if plan is not None:
        rows = [[f.get("at_s"), f.get("fault"), f.get("target"), f.get("duration_s")]
                for f in plan]
        return Html((f'<div class="caption">{esc(extra)}</div>' if extra else "")
                    + (table(["at (s)", "fault", "target", "duration (s)"], rows) if rows
                       else "empty plan (fails without faults)"))
    return Html(f"<pre>{esc(json.dumps(shrunk, indent=1, sort_keys=True))}</pre>")


def _shown_anomalies(runs: list[Run]) -> list[str]:
    hit = [n for n in ANOMALIES if n not in INFORMATIONAL and any(r.anomalies.get(n) for r in runs)]
    return hit


def campaign_report(folder: Path) -> tuple[str, str]:
    """(HTML, one-line summary) for a campaign folder; ReportError when there is nothing."""
    html, summary, _damaged, _read = campaign_page(folder)
    return html, summary


def campaign_page(folder: Path) -> tuple[str, str, list[str], list[Path]]:
    """(HTML, one-line summary, damaged traces, files read) for a campaign folder: the
    damaged traces one line each (``isrlab report`` prints them on stderr), the files read
    are the inputs a report may not be written over. ReportError when there is nothing."""
    from report import ReportError
    from report.figures import rate_chart

    runs, problems, damaged, has_results = _load(folder)
    read = [r.trace for r in runs if r.trace is not None]
    if has_results:
        read.append(folder / "results.jsonl")
    if not runs and not has_results:
        detail = f" ({len(problems)} unreadable: {problems[0]})" if problems else ""
        raise ReportError(f"{folder}: no results.jsonl and no readable trace "
                          f"(*.jsonl, *.jsonl.gz): nothing to report{detail}")
    failing = [r for r in runs if r.failing]
    names = sorted({r.scenario for r in runs})
    title = f"isrlab campaign report — {folder.name}"
    kv = [("runs", len(runs)), ("failing", len(failing)),
          ("scenario", ", ".join(names) or "–"), ("source", "results.jsonl" if has_results
                                                  else "traces (checked now)")]
    verdict = (badge("no runs yet", "info") if not runs else
               badge(f"{len(failing)} failing of {len(runs)}", "bad") if failing else
               badge(f"all {len(runs)} runs meet their expectations", "ok"))
    header = Html(f"<header><h1>Campaign {esc(folder.name)}</h1>"
                  "<div class=\"kv\">" + "".join(f"<span>{esc(k)} <b>{esc(v)}</b></span>"
                                                 for k, v in kv)
                  + f'</div><div class="verdict">{verdict}</div></header>')
    body: list[Html] = [Html(f'<div class="warnbox">{esc(p)}</div>') for p in problems[:20]]
    if len(problems) > 20:
        body.append(Html(f'<div class="warnbox">… and {len(problems) - 20} more problems</div>'))
    shown = _shown_anomalies(runs)
    n = max(1, len(runs))
    rows = [[a, sum(1 for r in runs if r.anomalies.get(a)),
             f"{100 * sum(1 for r in runs if r.anomalies.get(a)) / n:.1f}%",
             f"{sum(r.anomalies.get(a, 0) for r in runs):,}"] for a in ANOMALIES]
    body.append(Html('<section id="summary"><h2>Anomalies over all runs</h2>'
                     + table(["anomaly", "runs with it", "% of runs", "total count"], rows,
                             row_classes=["" if int(r[1]) else "zero" for r in rows])
                     + "</section>"))
    sec = ['<section id="rates"><h2>Anomaly rates by knob</h2>']
    if not runs:
        sec.append('<p class="note">results.jsonl has no rows yet.</p>')
    elif not shown:
        sec.append('<p class="note">No run shows any non-informational anomaly, so every rate '
                   "is 0; the tables below still list the runs per knob value.</p>")
    else:
        sec.append('<p class="note">Bars: % of runs with at least one occurrence of each '
                   "anomaly, per knob value (a run with several fault kinds counts under each)."
                   "</p>")
    for i, knob in enumerate(KNOBS):
        values = sorted({v for r in runs for v in r.knobs.get(knob, ["?"])})
        if not values:
            continue
        members = {v: [r for r in runs if v in r.knobs.get(knob, ["?"])] for v in values}
        if shown and (len(values) > 1 or i == 0):
            rates = {a: [sum(1 for r in members[v] if r.anomalies.get(a)) / len(members[v])
                         for v in values] for a in shown}
            sec.append(figure(rate_chart(knob, values, [len(members[v]) for v in values],
                                         rates), f"rate-{i}"))
        trows = []
        for v in values:
            m = members[v]
            fails = sum(1 for r in m if r.failing)
            trows.append([v, len(m), fails, f"{100 * fails / len(m):.1f}%"] +
                         [f"{100 * sum(1 for r in m if r.anomalies.get(a)) / len(m):.1f}%"
                          for a in shown])
        sec.append(f"<h3>{esc(knob)}</h3>")
        sec.append(table([knob, "runs", "failing", "% failing", *shown], trows))
    sec.append("</section>")
    body.append(Html("".join(sec)))
    frows = []
    for r in sorted(failing, key=lambda r: str(r.seed).zfill(12)):
        found = ", ".join(f"{a}={c}" for a, c in r.anomalies.items() if c and a in ANOMALIES
                          and a not in INFORMATIONAL) or "–"
        link: Any = "–"
        if r.trace is not None:
            href = os.path.relpath(r.trace.resolve(), folder.resolve())
            link = tag("a", r.trace.name, href=href)
        frows.append([r.seed, r.verdict, found, link, _shrunk_html(r.shrunk)])
    body.append(Html(
        '<section id="failing"><h2>Failing seeds</h2>'
        + (table(["seed", "verdict", "anomalies", "trace", "shrunk fault schedule"], frows,
                 id_="failing-table")
           + '<p class="note">Reproduce one: <code>isrlab run SCENARIO --seed N</code>; '
           "report one: <code>isrlab report TRACE</code>.</p>"
           if frows else '<p class="note">No failing seed: every run met its '
           "<code>[expect]</code>.</p>")
        + "</section>"))
    arows = [[r.seed, r.verdict, r.row.get("digest", "–") if isinstance(r.row.get("digest"), str)
              else "–", r.row.get("sim_seconds", r.row.get("sim_s", "–")),
              r.row.get("wall_seconds", r.row.get("wall_s", "–")),
              r.trace.name if r.trace else "–"] for r in runs]
    body.append(Html('<section id="runs"><details><summary><b>All runs</b> '
                     f"({len(runs)})</summary>"
                     + table(["seed", "verdict", "digest", "simulated s", "wall s", "trace"],
                             arows, row_classes=["bad" if r.failing else "" for r in runs])
                     + "</details></section>"))
    summary = f"campaign {folder}: {len(runs)} runs, {len(failing)} failing" + (
        f", {len(damaged)} damaged trace(s) left out" if damaged else "")
    return page(title, header, body, with_plotly=bool(shown)), summary, damaged, read
