"""The campaign page of ``isrlab report DIR``: anomaly rates by knob and the failing seeds.

Design. A campaign folder holds ``campaign.json`` (the campaign's own record: the command's
scenario and ``--set`` values, the resolved scenario every seed ran and its digest),
``results.jsonl`` (one JSON row per seed) and the kept traces; every field is read
defensively, so older folders and hand-made ones still read:

* a row's verdict is its ``expect_met`` (top level or inside a ``verdict`` object) when
  present, else its ``verdict`` text (``fail``/``failed``/``anomalies``/``not met``/``error``
  mean failing), else "any anomaly of ``DEFAULT_FORBID`` counted"; its words are
  :mod:`traces.verdict`'s;
* anomaly counts come from ``anomalies`` (a map) or from top-level keys named as in
  docs/anomalies.md; a row without counts whose trace is present gets the trace checked;
* knobs (era, acks, min.insync.replicas, unclean election, fault kinds, bugs) come from the
  seed's own trace header when it was kept (only the first line is read), else from a
  ``scenario`` object in the row, else from the campaign's scenario — every seed of a
  campaign runs the same one: ``campaign.json``'s ``resolved``, else a kept trace's header
  scenario with the digest ``campaign.json`` records, else the scenario and ``--set``
  values it records resolved again, when that still gives the recorded digest. What varies
  from seed to seed is the fault plan: a row's ``fault_kinds`` (``--swarm`` draws each
  seed's own kinds). Only a knob nothing records shows as ``?``;
* each failing seed's reproduce line is ``faults.campaign.reproduce_command`` over the
  record's scenario and ``--set`` values (the line the campaign printed), or
  ``isrlab replay TRACE`` for a folder without a record;
* the shrunk schedule is the ``shrunk.toml`` of the trace's shrink folder
  (``faults.campaign.shrink_folder``: where ``campaign --shrink`` and ``isrlab shrink TRACE``
  put it), linked with its fault plan and its own reproduce line; else a row's ``shrunk``
  (a fault plan, an object holding one under ``plan``/``fault_plan``/``faults``, or
  anything else, shown as JSON);
* the rules at fault are ``isrlab explain``'s chains (``traces.explain.explain``, the code
  ``isrlab analyze --explain`` runs per trace, cli/analyze.py) of the failing seeds whose
  traces are kept (the reproducing ones when none fails), grouped as analyze's table
  'why (isrlab explain): rules at fault' groups them: per anomaly and rule, the seeds and
  findings, an example; anomalies in the checker's order, then the most widespread rule.

A folder without ``results.jsonl`` is treated as a plain folder of traces: each is checked
with the in-process checker. Unreadable rows and traces are listed on the page, never fatal;
a folder with nothing to report is a ``ReportError`` (exit 2). Damaged traces (unreadable,
or failing verification) are also returned one line each by :func:`campaign_page`, which
``isrlab report`` prints on stderr before exiting 1.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.scenario import ScenarioError, load
from faults.campaign import MANIFEST, reproduce_command, scenario_digest, shrink_folder
from report.markup import Html, badge, esc, figure, page, table, tag
from traces.checker import Checker
from traces.explain import RULES, explain
from traces.reader import TraceError, iter_events
from traces.schema import ANOMALIES, DEFAULT_FORBID
from traces.verdict import INFORMATIONAL, judge

FAILING_WORDS = ("fail", "failed", "failing", "anomalies", "not met", "error", "violation",
                 "not_met")
KNOBS = ("era (protocol)", "acks", "min.insync.replicas", "unclean.leader.election.enable",
         "fault kinds", "bugs")
#: the shrink folder's scenario file (``isrlab shrink``'s output, ``faults.shrink_cli``)
SHRUNK_TOML = "shrunk.toml"


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
    #: the line that runs this seed again (the campaign's ``--set`` values included)
    reproduce: str = ""
    #: the ``shrunk.toml`` of the trace's shrink folder, when there is one
    shrunk_toml: Path | None = None
    #: ``isrlab explain``'s chains of the kept trace: (anomaly, rule, findings) each
    chains: list[tuple[str, str, int]] = field(default_factory=list)
    header: dict[str, Any] | None = None


@dataclass
class Record:
    """The campaign's own record (``campaign.json``) and the scenario every seed ran."""

    scenario: str | None = None
    name: str | None = None
    overrides: list[str] = field(default_factory=list)
    sha256: str | None = None
    #: the resolved scenario every seed of the campaign ran (None: unknown)
    resolved: dict[str, Any] | None = None


def _is_trace(p: Path) -> bool:
    n = p.name
    return n.endswith(".jsonl.gz") or (n.endswith(".jsonl") and n != "results.jsonl")


def _header(path: Path) -> dict[str, Any] | None:
    stream = iter_events(path, verify=False)
    with stream:
        next(stream, None)
        return stream.header


def _value(v: Any) -> str:
    """A knob's value as a scenario file spells it (``true``, not Python's ``True``)."""
    return json.dumps(v) if isinstance(v, bool) or v is None else str(v)


def _own_scenario(header: dict[str, Any] | None, row: dict[str, Any]) -> dict[str, Any] | None:
    """The scenario a seed's own trace header, or its row, names (None: neither does)."""
    for sc in ((header or {}).get("scenario"), row.get("scenario")):
        if isinstance(sc, dict):
            return sc
    return None


def _knobs(header: dict[str, Any] | None, row: dict[str, Any],
           campaign: dict[str, Any] | None = None) -> tuple[dict[str, list[str]], str]:
    """A seed's knob values and scenario name: from its own trace header or row, else from
    the campaign's scenario (every seed runs it); the fault kinds from its own plan (the
    header's, else the row's ``fault_kinds``)."""
    own = _own_scenario(header, row)
    sc: dict[str, Any] = own if own is not None else (campaign or {})
    known = bool(sc)
    topics = [t for t in sc.get("topics", []) if isinstance(t, dict)]
    producers = [p for p in sc.get("producers", []) if isinstance(p, dict)]

    def vals(items: list[dict[str, Any]], key: str) -> list[str]:
        if not known:
            return ["?"]
        if not items:
            return ["none"]
        return sorted({_value(i[key]) for i in items if key in i}) or ["?"]

    plan = (header or {}).get("fault_plan")
    faults = sc.get("faults") if isinstance(sc.get("faults"), dict) else {}
    kinds: list[str]
    if isinstance(plan, list):
        kinds = sorted({str(f.get("fault")) for f in plan if isinstance(f, dict)})
    elif isinstance(row.get("fault_kinds"), list):   # the row's own plan (swarm: its own)
        kinds = sorted({str(k) for k in row["fault_kinds"]})
    elif known and isinstance(faults, dict) and not faults.get("nemesis"):
        explicit = faults.get("plan")   # a scripted plan only: the same for every seed
        kinds = sorted({str(f.get("fault")) for f in explicit or [] if isinstance(f, dict)})
    else:
        kinds = ["?"]
    era = (header or {}).get("protocol") or sc.get("protocol") or row.get("protocol") or "?"
    bugs = sc.get("bugs")
    knobs = {
        "era (protocol)": [str(era)],
        "acks": vals(producers, "acks"),
        "min.insync.replicas": vals(topics, "min.insync.replicas"),
        "unclean.leader.election.enable": vals(topics, "unclean.leader.election.enable"),
        "fault kinds": kinds or ["none"],
        "bugs": ([str(b) for b in bugs] or ["none"]) if isinstance(bugs, list)
        else ["none"] if known else ["?"],
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
        # the folder's own copy first: a campaign folder copied or moved elsewhere names
        # its traces where the campaign wrote them
        for cand in (folder / "traces" / Path(t).name, folder / Path(t).name, folder / t,
                     Path(t)):
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
    runs, problems, _damaged, has_results, _record = _load(folder)
    return runs, problems, has_results


def _read_record(folder: Path, problems: list[str]) -> Record | None:
    """``campaign.json`` (None when there is none, or it is not a record)."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path}: unreadable ({exc}): the campaign's scenario and --set "
                        "values are unknown")
        return None
    if not isinstance(known, dict):
        problems.append(f"{path}: not the campaign record isrlab writes")
        return None
    overrides = known.get("overrides")
    sha = known.get("scenario_sha256")
    resolved = known.get("resolved")
    return Record(
        scenario=known["scenario"] if isinstance(known.get("scenario"), str) else None,
        name=known["name"] if isinstance(known.get("name"), str) else None,
        overrides=[str(o) for o in overrides] if isinstance(overrides, list) else [],
        sha256=sha if isinstance(sha, str) else None,
        resolved=resolved if isinstance(resolved, dict)
        and (sha is None or scenario_digest(resolved) == sha) else None)


def _campaign_scenario(folder: Path, record: Record | None, runs: list[Run],
                       problems: list[str]) -> dict[str, Any] | None:
    """The scenario every seed of the campaign ran: the record's ``resolved``; else a kept
    trace's header scenario with the recorded digest (without a record: the one all kept
    headers agree on); else the record's scenario and ``--set`` values resolved again, when
    that gives the recorded digest."""
    if record is not None and record.resolved is not None:
        return record.resolved
    headers = [sc for r in runs if (sc := (r.header or {}).get("scenario"))
               and isinstance(sc, dict)]
    digests = {scenario_digest(sc): sc for sc in headers}
    if record is None or record.sha256 is None:
        return next(iter(digests.values())) if len(digests) == 1 else None
    if record.sha256 in digests:
        return digests[record.sha256]
    if record.scenario is not None:
        try:
            sc = load(record.scenario, record.overrides)
        except (ScenarioError, OSError) as exc:
            problems.append(f"{folder / MANIFEST}: its scenario no longer loads ({exc}): the "
                            "knobs of seeds without a kept trace are unknown")
            return None
        if scenario_digest(sc) == record.sha256:
            return sc
        problems.append(f"{folder / MANIFEST}: {record.scenario} with its --set values no "
                        "longer resolves to the scenario the campaign ran (the file or the "
                        "defaults changed): the knobs of seeds without a kept trace are "
                        "unknown")
    return None


def _load(folder: Path) -> tuple[list[Run], list[str], list[str], bool, Record | None]:
    """:func:`load_campaign`, the damaged traces (one line per trace file that could not be
    read or did not verify, naming it and the problem) and the campaign's record."""
    runs: list[Run] = []
    problems: list[str] = []
    damaged: list[str] = []
    results = folder / "results.jsonl"
    if results.is_file():
        record = _read_record(folder, problems)
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
        campaign = _campaign_scenario(folder, record, runs, problems)
        for run in runs:
            run.knobs, run.scenario = _knobs(run.header, run.row, campaign)
            if run.scenario == "?" and record is not None and record.name:
                run.scenario = record.name
            run.reproduce = _reproduce(record, run)
        return runs, problems, damaged, True, record
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and _is_trace(q)):
        try:
            header, counts, failing = _check(p)
        except (TraceError, OSError) as exc:
            problems.append(f"{exc}")
            damaged.append(_damage(p, exc))
            continue
        knobs, name = _knobs(header, {})
        run = Run(seed=(header or {}).get("seed"), failing=failing,
                  verdict=_words(counts, failing), anomalies=counts, knobs=knobs, trace=p,
                  scenario=name, header=header)
        run.reproduce = _reproduce(None, run)
        runs.append(run)
    return runs, problems, damaged, False, None


def _reproduce(record: Record | None, run: Run) -> str:
    """The line that runs ``run``'s seed again: the campaign's own (its scenario and every
    ``--set`` value, as the campaign printed it), else a replay of its kept trace."""
    if record is not None and record.scenario is not None and isinstance(run.seed, int):
        return reproduce_command(record.scenario, run.seed, record.overrides)
    if run.trace is not None:
        return f"isrlab replay {run.trace}"
    return ""


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
    toml = shrink_folder(trace) / SHRUNK_TOML if trace is not None else None
    return Run(seed=row.get("seed"), failing=failing, verdict=verdict, anomalies=counts,
               knobs=knobs, trace=trace, shrunk=row.get("shrunk"), row=row, scenario=name,
               shrunk_toml=toml if toml is not None and toml.is_file() else None,
               header=header)


def _plan_of(shrunk: Any) -> list[dict[str, Any]] | None:
    if isinstance(shrunk, dict):
        for key in ("plan", "fault_plan", "faults", "schedule"):
            if isinstance(shrunk.get(key), list):
                shrunk = shrunk[key]
                break
    if isinstance(shrunk, list) and all(isinstance(f, dict) for f in shrunk):
        return shrunk
    return None


def _plan_table(plan: list[dict[str, Any]]) -> Html:
    rows = [[f.get("at_s"), f.get("fault"), f.get("target"), f.get("duration_s")]
            for f in plan]
    return (table(["at (s)", "fault", "target", "duration (s)"], rows) if rows
            else Html("empty plan (fails without faults)"))


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
        return Html((f'<div class="caption">{esc(extra)}</div>' if extra else "")
                    + _plan_table(plan))
    return Html(f"<pre>{esc(json.dumps(shrunk, indent=1, sort_keys=True))}</pre>")


def _shrunk_toml_html(run: Run, folder: Path, problems: list[str]) -> Html:
    """A seed's shrunk schedule from its shrink folder: links to ``shrunk.toml`` (and its
    trace), the line that runs it, its fault plan and the workload it kept."""
    toml = run.shrunk_toml
    assert toml is not None
    try:
        doc = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{toml}: unreadable ({exc})")
        return Html(f"{tag('a', toml.name, href=_href(toml, folder))} (unreadable)")
    faults = doc.get("faults") if isinstance(doc.get("faults"), dict) else {}
    plan = _plan_of((faults or {}).get("plan")) or []
    links = [tag("a", toml.name, href=_href(toml, folder))]
    trace = toml.with_name("shrunk.jsonl")
    if trace.is_file():
        links.append(tag("a", trace.name, href=_href(trace, folder)))
    rates = [p.get("rate") for p in doc.get("producers") or [] if isinstance(p, dict)]
    kept = (f"{len(plan)} fault{'s' if len(plan) != 1 else ''}, duration_s "
            f"{doc.get('duration_s')}, producer rate "
            f"{'/'.join(_value(r) for r in rates) or '–'}")
    line = f"isrlab run {toml} --seed {run.seed}"
    return Html(f'<div class="caption">{" ".join(links)} — {esc(kept)}</div>'
                f"<code>{esc(line)}</code>" + _plan_table(plan))


def _href(path: Path, folder: Path) -> str:
    return os.path.relpath(path.resolve(), folder.resolve())


def _explain_runs(runs: list[Run], problems: list[str]) -> None:
    """Fills each run's ``chains`` from ``isrlab explain`` over its kept trace."""
    for r in runs:
        if r.trace is None:
            continue
        try:
            ex = explain(str(r.trace))
        except (TraceError, OSError) as exc:
            problems.append(f"isrlab explain {r.trace}: {exc}")
            continue
        except Exception as exc:  # noqa: BLE001  # one trace's explanation, not the page
            problems.append(f"isrlab explain {r.trace}: failed ({type(exc).__name__}: "
                            f"{exc})")
            continue
        r.chains = [(c.anomaly, c.rule, c.count) for c in ex.chains]


def rule_rows(runs: list[Run]) -> list[tuple[str, str, int, int, Run]]:
    """The rules at fault across ``runs`` (each with its ``chains``): per anomaly and rule,
    (anomaly, rule, seeds showing it, findings it covers, the lowest such seed's run) —
    the grouping and order of ``isrlab analyze --explain``'s 'why (isrlab explain): rules
    at fault' (cli/analyze.py): anomalies in the checker's order, then the most seeds,
    the most findings, the rule's name."""
    groups: dict[tuple[str, str], tuple[set[Any], int, Run]] = {}
    for r in sorted(runs, key=lambda r: str(r.seed).zfill(20)):
        for anomaly, rule, findings in r.chains:
            seeds, total, example = groups.get((anomaly, rule), (set(), 0, r))
            seeds.add(r.seed)
            groups[(anomaly, rule)] = (seeds, total + findings, example)
    order = {a: i for i, a in enumerate(ANOMALIES)}
    rows = [(a, rule, len(seeds), total, example)
            for (a, rule), (seeds, total, example) in groups.items()]
    return sorted(rows, key=lambda x: (order.get(x[0], len(order)), -x[2], -x[3], x[1]))


def _rules_html(subjects: list[Run], what: str, folder: Path) -> Html:
    rows = rule_rows(subjects)
    if not rows:
        return Html('<section id="rules"><h2>Why (isrlab explain): rules at fault</h2>'
                    f'<p class="note">No chain in the {esc(what)} ({len(subjects)}).</p>'
                    "</section>")
    cells = []
    classes = []
    for anomaly, rule, seeds, findings, example in rows:
        known = RULES.get(rule)
        link: Any = example.seed
        if example.trace is not None:
            link = tag("a", f"seed {example.seed}", href=_href(example.trace, folder))
        cells.append([anomaly, rule, seeds, findings, link,
                      (known.what + (" (Kafka's designed behaviour)" if known.expected
                                     else "")) if known else "–"])
        classes.append("zero" if anomaly in INFORMATIONAL or (known and known.expected)
                       else "")
    return Html('<section id="rules"><h2>Why (isrlab explain): rules at fault</h2>'
                f'<p class="note">Counted over the {esc(what)} ({len(subjects)}): each '
                "trace's causal chains as <code>isrlab explain TRACE</code> gives them, "
                "grouped by anomaly and rule as <code>isrlab analyze --explain</code> groups "
                "them.</p>"
                + table(["anomaly", "rule", "seeds", "findings", "example", "what it did"],
                        cells, id_="rules-table", row_classes=classes)
                + "</section>")


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

    runs, problems, damaged, has_results, record = _load(folder)
    read = [r.trace for r in runs if r.trace is not None]
    read += [f for r in runs if r.shrunk_toml is not None
             for f in (r.shrunk_toml, r.shrunk_toml.with_name("shrunk.jsonl"))]
    if has_results:
        read.append(folder / "results.jsonl")
    if not runs and not has_results:
        detail = f" ({len(problems)} unreadable: {problems[0]})" if problems else ""
        raise ReportError(f"{folder}: no results.jsonl and no readable trace "
                          f"(*.jsonl, *.jsonl.gz): nothing to report{detail}")
    failing = [r for r in runs if r.failing]
    subjects = [r for r in failing if r.trace is not None]
    what = "failing seeds whose traces are kept"
    if not failing:
        subjects = [r for r in runs if r.trace is not None and _shown_anomalies([r])]
        what = "seeds whose kept traces show an anomaly (no seed fails)"
    _explain_runs(subjects, problems)
    names = sorted({r.scenario for r in runs})
    title = f"isrlab campaign report — {folder.name}"
    kv: list[tuple[str, Any]] = [
        ("runs", len(runs)), ("failing", len(failing)), ("scenario", ", ".join(names) or "–")]
    if record is not None and record.overrides:
        kv.append(("--set", " ".join(record.overrides)))
    kv.append(("source", "results.jsonl" if has_results else "traces (checked now)"))
    verdict = (badge("no runs yet", "info") if not runs else
               badge(f"{len(failing)} failing of {len(runs)}", "bad") if failing else
               badge(f"all {len(runs)} runs meet their expectations", "ok"))
    header = Html(f"<header><h1>Campaign {esc(folder.name)}</h1>"
                  "<div class=\"kv\">" + "".join(f"<span>{esc(k)} <b>{esc(v)}</b></span>"
                                                 for k, v in kv)
                  + f'</div><div class="verdict">{verdict}</div></header>')
    frows = []   # first: reading a shrunk schedule may add a problem
    for r in sorted(failing, key=lambda r: str(r.seed).zfill(20)):
        found = ", ".join(f"{a}={c}" for a, c in r.anomalies.items() if c and a in ANOMALIES
                          and a not in INFORMATIONAL) or "–"
        link: Any = "–"
        if r.trace is not None:
            link = tag("a", r.trace.name, href=_href(r.trace, folder))
        rules = ", ".join(dict.fromkeys(f"{a}: {rule}" for a, rule, _ in r.chains)) or "–"
        shrunk = (_shrunk_toml_html(r, folder, problems) if r.shrunk_toml is not None
                  else _shrunk_html(r.shrunk))
        frows.append([r.seed, r.verdict, found, rules, link,
                      Html(f"<code>{esc(r.reproduce)}</code>") if r.reproduce else "–",
                      shrunk])
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
    if subjects:
        body.append(_rules_html(subjects, what, folder))
    body.append(Html(
        '<section id="failing"><h2>Failing seeds</h2>'
        + (table(["seed", "verdict", "anomalies", "rules at fault (isrlab explain)", "trace",
                  "reproduce", "shrunk fault schedule"], frows, id_="failing-table")
           + '<p class="note">Each reproduce line runs that seed again with the campaign\'s '
           "scenario and every <code>--set</code> value; report a trace with "
           "<code>isrlab report TRACE</code>; shrink one with <code>isrlab shrink TRACE</code> "
           "(or <code>isrlab campaign ... --shrink N</code>), and its shrunk schedule shows "
           "here.</p>"
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
