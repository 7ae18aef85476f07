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
scenario's own bugs; ``all``; ``none``), each re-enabled on an era it belongs to
(:data:`BUG_ERAS`): an era that has the fix, so that undoing it means something — the
scenario's era when it is one, else the nearest such era (a later one first). A bug the
scenario's era never had (``KAFKA-15665`` under the ZooKeeper controller of ``0.10``) or
shipped as released (``KAFKA-13141`` in ``2.8``) is not run there: one note says so and
names the era it runs on instead (``4.1 + KAFKA-15665``). Columns: the anomalies
forbidden by default, the scenario's expected ones and ``lost_acked_uncommitted``, those
found in some row. Cells sum the seeds' counts, with how many seeds showed it when there
are several. Each row's ``why`` names the rule of its chain (the first seed's that has
one); a chain several rows share (the same anomaly, records, rule and steps) is printed
once below the table, with the rows it covers. Traces go to ``--out DIR`` when given
(``DIR/<row>/seed-N.jsonl.gz``), else to a temporary folder removed at the end. ``DIR``
(``emulator.files``) must be new, empty or an earlier compare folder (it holds
``compare.json``); any other non-empty folder, and one that holds the scenario file, is
refused before the first run (exit 2). The runs write into a scratch folder inside ``DIR``;
only when every row has run are the row folders moved into place and ``compare.json``
written, so an interrupted compare leaves an earlier comparison in ``DIR`` whole.
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
from traces.explain import RULES, Chain, explain
from traces.explain_output import chain_lines
from traces.schema import ANOMALIES, DEFAULT_FORBID
from traces.verdict import DURATIONS

EXIT_BAD_INPUT: Final = 2
#: what ``--out DIR`` holds besides the traces: the comparison, read by ``isrlab report DIR``
RESULT_FILE: Final = "compare.json"
#: the most seeds one compare runs (each seed's fault plan is kept, and run once per row)
MAX_SEEDS: Final = 10_000


#: Per re-enabled bug (``actors.eras.BUGS``): the eras that ship it as released and the
#: eras that have its fix — the ones it can be re-enabled on; every other era never had the
#: code it lives in. A test holds this against ``rules_for``: re-enabling the bug changes
#: the rules of each fixed era and of no shipping one.
#: KAFKA-7128: Partition.maybeExpandIsr asks a joining follower to reach the leader epoch's
#:   start offset from 2.0.1/2.1.0; the leader epochs it needs came with KIP-101 (0.11), so
#:   0.10 never had it.
#: KAFKA-13141, KAFKA-14704: both live in the diverging-epoch fetch answer of truncate-on-
#:   fetch (2.7, KAFKA-10554), so no era before 2.8 had them. Fixed in 3.1.0
#:   (Partition.fetchRecords no longer updates the follower's fetch state from a diverging
#:   fetch) and 3.5.0 (AbstractFetcherThread.processFetchRequest leaves a diverging
#:   answer's data and HW alone until it has truncated).
#: KIP-497: the maximal ISR (AlterIsr, KAFKA-8836, 2.7.0); before it the HW was the
#:   committed ISR's, which is what re-enabling it does.
#: KAFKA-15583: no HW advance while the ISR is under min.insync.replicas, from 3.7.0.
#: KAFKA-15489: KRaft's LeaderState has the check-quorum timer from 3.7.0 (commit 37416e1a;
#:   3.6.2 has none): KRaft's 3.6 releases shipped the bug, which no isrlab era is; ZooKeeper
#:   eras have no controller quorum. Its scenarios need cluster.controller_quorum.
#: KAFKA-15665: KRaft's ReplicationControlManager completed a reassignment on its adding
#:   replicas until 3.8.0; the ZooKeeper controller (isReassignmentComplete) never did.
BUG_ERAS: Final[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
    "KAFKA-7128": (("0.11", "2.0"), ("2.1", "2.8", "3.7", "4.1")),
    "KAFKA-13141": (("2.8",), ("3.7", "4.1")),
    "KAFKA-14704": (("2.8",), ("3.7", "4.1")),
    "KIP-497": (("0.10", "0.11", "2.0", "2.1"), ("2.8", "3.7", "4.1")),
    "KAFKA-15583": (("0.10", "0.11", "2.0", "2.1", "2.8"), ("3.7", "4.1")),
    "KAFKA-15665": (("3.7",), ("4.1",)),
    "KAFKA-15489": ((), ("3.7", "4.1")),
}


class CompareError(Exception):
    """Bad input: one line, exit 2."""


def bug_era(bug: str, era: str) -> tuple[str | None, str | None]:
    """(the era ``bug`` is re-enabled on for a scenario of ``era``, the note saying why it is
    not ``era`` — None when it is). The era is ``era`` when it has the bug's fix, else the
    nearest era that has it, a later one first; None when no era has (no row, the note)."""
    has, fixed = BUG_ERAS.get(bug, ((), ()))
    if era in fixed:
        return era, None
    order = list(ERAS)
    at = order.index(era) if era in order else len(order)
    later = [e for e in fixed if order.index(e) > at]
    earlier = [e for e in fixed if order.index(e) < at]
    target = later[0] if later else (earlier[-1] if earlier else None)
    how = (f"{era} has it as released" if era in has
           else f"{era} never had it (released with it: {', '.join(has)})" if has
           else f"{era} never had it")
    where = (f"re-enabled on {target} instead, which has the fix" if target is not None
             else "no era has its fix: not run")
    return target, f"{bug}: {how}; {where}"


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
    #: the chain behind ``why`` (of the first seed that has one)
    chain: Chain | None = None

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
    #: one line per bug not re-enabled on the scenario's era (:func:`bug_era`)
    notes: list[str] = field(default_factory=list)

    def chains(self) -> list[tuple[Chain, list[str]]]:
        """Each distinct row chain once, with the labels of the rows it explains, in row
        order: rows whose runs tell the same story (an era or bug that changes nothing the
        schedule reaches) share one."""
        groups: dict[bytes, tuple[Chain, list[str]]] = {}
        for r in self.rows:
            if r.chain is not None:
                groups.setdefault(_chain_key(r.chain), (r.chain, []))[1].append(r.label)
        return list(groups.values())

    def to_json(self) -> dict[str, Any]:
        groups = self.chains()
        index = {label: i for i, (_, labels) in enumerate(groups) for label in labels}
        return {"scenario": self.scenario, "seeds": self.seeds,
                "faults": {str(k): v for k, v in self.faults.items()},
                "columns": self.columns, "notes": self.notes,
                "rows": [{**r.to_json(), "chain": index.get(r.label)} for r in self.rows],
                "chains": [{"rows": labels, "chain": c.to_json()} for c, labels in groups]}


def _chain_key(c: Chain) -> bytes:
    """What makes two rows' chains the same story: everything but the steps' sequence
    numbers (another era may number the same events otherwise)."""
    doc = c.to_json()
    doc["steps"] = [[s.ts_us, s.text] for s in c.steps]
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


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
             ) -> tuple[list[tuple[str, str, list[str]]], list[str]]:
    """(label, protocol, bugs) for each row, and the notes on bugs not re-enabled on the
    scenario's era: each bug runs on the era :func:`bug_era` picks."""
    rows: list[tuple[str, str, list[str]]] = [(era, era, []) for era in eras]
    notes: list[str] = []
    for bug in bugs:
        era, note = bug_era(bug, str(base["protocol"]))
        if note is not None:
            notes.append(note)
        if era is not None:
            rows.append((f"{era} + {bug}", era, [bug]))
    return rows, notes


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
    chosen, notes = variants(base, eras, bugs)
    rows = [Row(label, era, list(bug)) for label, era, bug in chosen]
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
                    row.why, row.chain = _why(path, base, why_first)
        result = Comparison(str(base["name"]), list(seeds),
                            {s: len(p) for s, p in plans.items()}, _columns(base, rows), rows,
                            notes)
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


def _why(path: Path, base: dict[str, Any], first: Sequence[str] = ()
         ) -> tuple[str | None, Chain | None]:
    """The rule of the chain covering the most findings of the first watched anomaly (those
    of ``first`` before the others) that has chains (``+N``: N other rules for it), and the
    chain of that rule covering the most of them (the first on ties)."""
    every = explain(str(path)).chains
    chains = [c for c in every if not RULES[c.rule].expected]
    for anomaly in [*first, *_watched(base)]:
        rules: dict[str, int] = {}
        # an anomaly the scenario is there to show is named by its rule even when Kafka
        # permits it (S16's churn: follower_lagged)
        source = every if anomaly in first else chains
        for c in source:
            if c.anomaly == anomaly:
                rules[c.rule] = rules.get(c.rule, 0) + c.count
        if rules:
            ranked = sorted(rules, key=lambda r: -rules[r])   # stable: first seen wins ties
            top = max((c for c in source if c.anomaly == anomaly and c.rule == ranked[0]),
                      key=lambda c: c.count)   # max keeps the first of equals
            return ranked[0] + (f" +{len(ranked) - 1}" if len(ranked) > 1 else ""), top
    return None, None


def _watched(base: dict[str, Any]) -> list[str]:
    expect = base.get("expect") or {}
    wanted = set(DEFAULT_FORBID) | set(expect.get("anomalies") or []) | {
        "lost_acked_uncommitted"}
    # a duration is watched only when the scenario expects it (KAFKA-15489's partitioned
    # controller shows itself as time under min ISR); else it is background
    expected = set(expect.get("anomalies") or [])
    return [a for a in ANOMALIES
            if a in wanted and (a not in DURATIONS or a in expected)]


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
    """The matrix, then each distinct row chain once (``[N]`` in the ``why`` column)."""
    many = len(c.seeds) > 1
    faults = sorted(set(c.faults.values()))
    lines = [f"compare {c.scenario}: seeds {c.seeds[0]}..{c.seeds[-1]}, one fault schedule "
             f"per seed ({'/'.join(map(str, faults))} faults), replayed under each row"]
    lines += [f"  {note}" for note in c.notes]
    groups = c.chains()
    ref = {label: f" [{i}]" for i, (_, labels) in enumerate(groups, 1) for label in labels}
    width = max([len(r.label) for r in c.rows], default=3) + 2
    head = "row".ljust(width) + "".join(f"{a:>{max(len(a), 9) + 2}}" for a in c.columns)
    lines.append(head + "  why")
    for r in c.rows:
        if r.error is not None:
            lines.append(r.label.ljust(width) + f"n/a: {r.error}")
            continue
        cells = ""
        for a in c.columns:
            cell = (f"{r.counts[a] / 1000:,.1f} s" if a in DURATIONS
                    else str(r.counts[a]))
            if many and r.counts[a]:
                cell += f" ({r.seeds_with[a]}/{len(c.seeds)})"
            cells += f"{cell:>{max(len(a), 9) + 2}}"
        why = f"{r.why}{ref.get(r.label, '')}" if r.why else ""
        lines.append(r.label.ljust(width) + cells + f"  {why}".rstrip())
    for i, (chain, labels) in enumerate(groups, 1):
        rows = (f"the row {labels[0]}" if len(labels) == 1
                else f"{len(labels)} rows, the same chain: {', '.join(labels)}")
        lines += ["", f"[{i}] {rows}", *chain_lines(chain)]
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
