"""``isrlab compare SCENARIO``: one fault schedule under every era and re-enabled bug.

The catalog says S1 loses acknowledged writes under 0.10 and under no later era; this
command shows it from runs. It fixes the fault schedule once and replays it, unchanged,
under each protocol era (``actors.eras.ERAS``) and under the scenario's era with each
re-enabled bug, then prints one row per variant: the anomaly counts, and *why* — the rule
at fault of the first chain ``isrlab explain`` finds (``traces.explain``).

The schedule. A scripted scenario's ``[[faults.plan]]`` is the schedule. A scenario with a
nemesis has its plan generated from each seed *once*, under the scenario's own settings,
with the very RNG stream ``isrlab run`` uses (``RngTree(seed).child("nemesis")``), and
every row runs that explicit plan with the nemesis off — so a random nemesis cannot pick
other targets or times in another era, and the row of the scenario's own era is the run
``isrlab run SCENARIO --seed N`` makes (its trace has the same records and faults). Each
variant is the scenario file re-resolved with ``protocol`` and ``bugs`` changed, so every
default is that era's (``unclean.leader.election.enable`` is on before 0.11); what the
scenario or ``--set`` states explicitly stays. A variant the schedule is not valid in (a
``cancel_reassign`` before KIP-455) is shown as n/a with the validator's one line.

Rows: ``--eras`` (default all: each era with no bug), then ``--bugs`` (default: the
scenario's own bugs; ``all``; ``none``), each on the scenario's era. Columns: the anomalies
forbidden by default, the scenario's expected ones and ``lost_acked_uncommitted``, those
found in some row. Cells sum the seeds' counts, with how many seeds showed it when there
are several. Traces go to ``--out DIR`` when given (``DIR/<row>/seed-N.jsonl.gz``), else to
a temporary folder removed at the end. ``DIR`` (``emulator.files``) must be new, empty or an
earlier compare folder (it holds ``compare.json``); any other non-empty folder, and one that
holds the scenario file, is refused before the first run (exit 2). The runs write into a
scratch folder inside ``DIR``; only when every row has run are the row folders moved into
place and ``compare.json`` written, so an interrupted compare leaves an earlier comparison in
``DIR`` whole.
"""

from __future__ import annotations

import copy
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from actors.eras import ERAS
from emulator.files import (
    FileRefused,
    claim_folder,
    remove_scratch,
    remove_stale_scratch,
    scratch_folder,
    write_bytes,
)
from emulator.progress import Progress
from traces.checker import check_file
from traces.explain import RULES, explain
from traces.schema import ANOMALIES, DEFAULT_FORBID

EXIT_BAD_INPUT: Final = 2
#: what ``--out DIR`` holds besides the traces: the comparison, read by ``isrlab report DIR``
RESULT_FILE: Final = "compare.json"
#: the most seeds one compare runs (each seed's fault plan is kept, and run once per row)
MAX_SEEDS: Final = 10_000


class CompareError(Exception):
    """Bad input: one line, exit 2."""


@dataclass
class Row:
    label: str
    era: str
    bugs: list[str]
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    #: per anomaly, how many seeds showed it
    seeds_with: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    #: the rule of the first chain explain finds (None: nothing to explain)
    why: str | None = None
    error: str | None = None
    #: ``--set`` overrides of this row on top of the schedule (``[catalog] fixed`` variants)
    overrides: list[str] = field(default_factory=list)
    #: the traces of the row, relative to ``--out`` (kept only with it)
    traces: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "protocol": self.era, "bugs": self.bugs,
                "anomalies": self.counts, "seeds_with": self.seeds_with, "why": self.why,
                "error": self.error, "traces": self.traces}


@dataclass
class Comparison:
    scenario: str
    seeds: list[int]
    faults: dict[int, int]
    columns: list[str]
    rows: list[Row]

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "seeds": self.seeds,
                "faults": {str(k): v for k, v in self.faults.items()},
                "columns": self.columns, "rows": [r.to_json() for r in self.rows]}


def schedule(sc: dict[str, Any], seed: int) -> list[dict[str, Any]]:
    """The explicit fault plan ``isrlab run`` would use for ``sc`` and ``seed``: the
    scripted steps and what the nemesis draws from the seed, in time order."""
    from emulator.rng import RngTree
    from faults.nemesis import generate

    plan = [dict(f) for f in sc["faults"]["plan"]]
    plan += generate(sc, RngTree(seed).child("nemesis"), swarm=sc["faults"]["swarm"])
    plan.sort(key=lambda f: float(f["at_s"]))
    return plan


def variants(base: dict[str, Any], eras: Sequence[str], bugs: Sequence[str]
             ) -> list[tuple[str, str, list[str]]]:
    """(label, protocol, bugs) for each row."""
    rows: list[tuple[str, str, list[str]]] = [(era, era, []) for era in eras]
    rows += [(f"{base['protocol']} + {bug}", str(base["protocol"]), [bug]) for bug in bugs]
    return rows


def compare(scenario: str, *, sets: Sequence[str] = (), eras: Sequence[str] = ERAS,
            bugs: Sequence[str] | None = None, seeds: Sequence[int] | None = None,
            out: Path | None = None, progress: Progress | None = None,
            extra: Sequence[tuple[str, list[str]]] = (), why_first: Sequence[str] = ()
            ) -> Comparison:
    """Run the fixed schedule under each variant; raises CompareError on bad input.
    ``extra``: more rows, (label, overrides) on the scenario as written (its own era and
    bugs) — the overrides apply after the schedule is fixed, so one may replace it.
    ``why_first``: anomalies whose chains name a row's rule before the others'."""
    from emulator.cluster import run
    from emulator.scenario import ScenarioError, apply_override, find, load_raw, resolve

    try:
        raw0, file, text, given = load_raw(scenario, list(sets))
        base = resolve(copy.deepcopy(raw0), file, text, given)
    except ScenarioError as exc:
        raise CompareError(str(exc)) from None
    if bugs is None:
        bugs = list(base["bugs"])
    if seeds is None:
        seeds = [int(base.get("seed") or 1)]
    plans = {s: schedule(base, s) for s in seeds}
    rows = [Row(label, era, list(bug)) for label, era, bug in variants(base, eras, bugs)]
    rows += [Row(label, str(base["protocol"]), list(base["bugs"]), overrides=list(sets_))
             for label, sets_ in extra]
    if progress is not None:
        progress.set_total(progress.done + len(rows) * len(seeds))
    if out is not None:
        try:
            source = find(scenario)
            claim_folder(out, "--out", RESULT_FILE, "a compare folder",
                         [source] if source.is_file() else [])
            remove_stale_scratch(out, RESULT_FILE)
            work = scratch_folder(out)
        except FileRefused as exc:
            raise CompareError(str(exc)) from None
    else:
        work = Path(tempfile.mkdtemp(prefix="isrlab-compare-"))
    try:
        for row in rows:
            for s in seeds:
                raw = copy.deepcopy(raw0)
                raw["protocol"] = row.era
                raw["bugs"] = list(row.bugs)
                faults = raw.setdefault("faults", {})
                faults["plan"] = [dict(f) for f in plans[s]]
                faults["nemesis"] = []
                try:
                    mine = dict(given)
                    for item in row.overrides:
                        mine[apply_override(raw, item, file)] = item
                    sc = resolve(raw, file, text, mine)
                except ScenarioError as exc:   # the schedule is not valid in this variant
                    row.error = f"{exc.field}: {exc.message}"
                    break
                path = work / _slug(row.label) / f"seed-{s}.jsonl.gz"
                path.parent.mkdir(parents=True, exist_ok=True)
                run(sc, s, str(path))
                if progress is not None:
                    progress.advance(1, f"{base['name']}: {row.label}, seed {s}")
                row.traces.append(str(path.relative_to(work)))
                found = check_file(path)
                for name, n in found.anomalies.items():
                    row.counts[name] += n
                    row.seeds_with[name] += 1 if n else 0
                if row.why is None:
                    row.why = _why(path, base, why_first)
        result = Comparison(str(base["name"]), list(seeds),
                            {s: len(p) for s, p in plans.items()}, _columns(base, rows), rows)
        if out is not None:   # the rows into place, then the matrix (``isrlab report DIR``)
            for sub in sorted(work.iterdir()):
                shutil.rmtree(out / sub.name, ignore_errors=True)
                sub.replace(out / sub.name)
            write_bytes(out / RESULT_FILE,
                        orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2), "--out")
    finally:
        if out is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            remove_scratch(work)
    return result


def _why(path: Path, base: dict[str, Any], first: Sequence[str] = ()) -> str | None:
    """The rule of the chain covering the most findings of the first watched anomaly (those
    of ``first`` before the others) that has chains (``+N``: N other rules for it)."""
    every = explain(str(path)).chains
    chains = [c for c in every if not RULES[c.rule].expected]
    for anomaly in [*first, *_watched(base)]:
        rules: dict[str, int] = {}
        # an anomaly the scenario is there to show is named by its rule even when Kafka
        # permits it (S16's churn: follower_lagged)
        for c in every if anomaly in first else chains:
            if c.anomaly == anomaly:
                rules[c.rule] = rules.get(c.rule, 0) + c.count
        if rules:
            ranked = sorted(rules, key=lambda r: -rules[r])   # stable: first seen wins ties
            return ranked[0] + (f" +{len(ranked) - 1}" if len(ranked) > 1 else "")
    return None


def _watched(base: dict[str, Any]) -> list[str]:
    expect = base.get("expect") or {}
    wanted = set(DEFAULT_FORBID) | set(expect.get("anomalies") or []) | {
        "lost_acked_uncommitted"}
    return [a for a in ANOMALIES if a in wanted and a != "under_min_isr"]


def _columns(base: dict[str, Any], rows: list[Row]) -> list[str]:
    cols = [a for a in _watched(base) if any(r.counts[a] for r in rows)]
    return cols or ["lost_acked_write"]


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", label).strip("_")


@dataclass
class CatalogEntry:
    """One catalog bug scenario from runs: what it shows as written, and which of its
    ``[catalog] fixed`` variants make it go away (the README's table)."""

    scenario: str
    expected: list[str]
    under: str
    shows: dict[str, int]
    gone_under: list[str]
    still_under: list[str]
    why: str | None


def catalog(names: Sequence[str] | None = None, progress: Progress | None = None
            ) -> list[CatalogEntry]:
    """The catalog's bug scenarios (those with ``[expect] anomalies``), each run as written
    and under every ``[catalog] fixed`` variant, on its fixed schedule."""
    from emulator.scenario import SCENARIO_DIR, ScenarioError, load

    if names is None:
        names = sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))
    out: list[CatalogEntry] = []
    for name in names:
        try:
            sc = load(name)
        except ScenarioError as exc:
            raise CompareError(str(exc)) from None
        expected = list(sc["expect"]["anomalies"])
        if not expected:
            continue
        fixed = [f if isinstance(f, list) else [f] for f in sc["catalog"]["fixed"]]
        c = compare(name, eras=[], bugs=[], progress=progress, why_first=expected,
                    extra=[("as written", []), *[(", ".join(f), f) for f in fixed]])
        own, *fixes = c.rows
        under = str(sc["protocol"]) + "".join(f" + {b}" for b in sc["bugs"]) + "".join(
            f" + fix {f}" for f in sc["fixes"])
        gone = [r.label for r in fixes if r.error is None and not any(
            r.counts[a] for a in expected)]
        still = [r.label + (f" (n/a: {r.error})" if r.error else "") for r in fixes
                 if r.label not in gone]
        out.append(CatalogEntry(name, expected, under, {a: own.counts[a] for a in expected},
                                gone, still, own.why))
    return out


def catalog_markdown(entries: Sequence[CatalogEntry]) -> str:
    """The README's catalog table, from runs."""
    lines = ["| scenario | shows (as written) | under | gone under | why |",
             "|---|---|---|---|---|"]
    for e in entries:
        shows = ", ".join(f"{a} ×{n}" if n else f"{a}: NOT SHOWN" for a, n in e.shows.items())
        gone = ", ".join(f"`{g}`" for g in e.gone_under) or "—"
        if e.still_under:
            gone += "; STILL UNDER " + ", ".join(f"`{g}`" for g in e.still_under)
        lines.append(f"| `{e.scenario}` | {shows} | {e.under} | {gone} | {e.why or ''} |")
    return "\n".join(lines)


def format_table(c: Comparison) -> str:
    many = len(c.seeds) > 1
    faults = sorted(set(c.faults.values()))
    lines = [f"compare {c.scenario}: seeds {c.seeds[0]}..{c.seeds[-1]}, one fault schedule "
             f"per seed ({'/'.join(map(str, faults))} faults), replayed under each row"]
    width = max(len(r.label) for r in c.rows) + 2
    head = "row".ljust(width) + "".join(f"{a:>{max(len(a), 9) + 2}}" for a in c.columns)
    lines.append(head + "  why")
    for r in c.rows:
        if r.error is not None:
            lines.append(r.label.ljust(width) + f"n/a: {r.error}")
            continue
        cells = ""
        for a in c.columns:
            cell = str(r.counts[a])
            if many and r.counts[a]:
                cell += f" ({r.seeds_with[a]}/{len(c.seeds)})"
            cells += f"{cell:>{max(len(a), 9) + 2}}"
        lines.append(r.label.ljust(width) + cells + f"  {r.why or ''}".rstrip())
    return "\n".join(lines)


def _parse_list(text: str, known: Sequence[str], flag: str) -> list[str]:
    """A comma list of known names, at least one (``--eras ''`` was a traceback)."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise CompareError(f"{flag}: {text!r} names nothing; give one or more of "
                           f"{', '.join(known)}")
    bad = [x for x in items if x not in known]
    if bad:
        raise CompareError(f"{flag}: unknown {', '.join(bad)} (known: {', '.join(known)})")
    return list(dict.fromkeys(items))
