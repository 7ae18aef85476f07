"""``isrlab regress [--record]``: the regression suite of recorded traces.

Design note
-----------
``tests/regressions/`` holds small gzip traces and ``index.json``, one entry per trace::

    {"name", "kind", "scenario", "seed", "overrides", "file", "digest", "events", "verdict"}

``kind`` is ``catalog`` (one per scenario of ``isrlab scenarios``, its own seed) or
``random`` (a few seeds of the default scenario with a random nemesis, expected to be safe:
``RANDOM_RUNS``). ``digest`` is the SHA-256 of the decompressed trace (the run's digest, the
same at any gzip level or zlib version); ``verdict`` is :func:`traces.checker.check_file`'s
``anomalies`` and ``expect_met``.

``isrlab regress`` (verify) checks, per entry, everything that could change silently:

1. the stored trace verifies (:func:`traces.reader.iter_events`) and has the index's digest;
2. the scenario named by the entry (``scenario`` + ``overrides``, loaded today) still
   resolves to the scenario in the trace header (a catalog edit needs a re-record);
3. the trace replays byte for byte (:func:`traces.replay.replay_trace`); if not, the first
   divergent event is printed;
4. the checker's verdict on the replayed run equals the index's (a checker change shows);
5. and, suite-wide, every catalog scenario has an entry.

Any difference exits 1 and says what changed; the fix is a deliberate
``isrlab regress --record``, which re-runs every entry, adds catalog scenarios that have
none, drops entries of scenarios that left the catalog, rewrites the traces and the index,
and prints which digests and verdicts changed, so a change of behaviour is always a visible
decision in a commit.

Size: a catalog scenario is recorded short, with overrides computed by :func:`fit` (the
workload capped at ``MAX_DURATION_S`` but never before a scripted fault has ended, producer
``heal_s`` capped at ``MAX_HEAL_S`` (a converging run ends at its first converged check
anyway), rates scaled to about ``TARGET_RECORDS`` records; rates halved while the trace is
above ``MAX_BYTES``); if the shortened run no longer meets its ``[expect]`` the scenario
is recorded as written when that fits under 200 KB. An entry with ``"pinned": true`` keeps
the overrides written in the index by hand, and ``random`` entries keep the overrides of
``RANDOM_RUNS``.
Entries run in a process pool (``--jobs``); each is independent.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from emulator.files import FileRefused, input_file
from traces.reader import TraceError

__all__ = [
    "DEFAULT_DIR",
    "RANDOM_RUNS",
    "Outcome",
    "fit",
    "load_index",
    "record",
    "verify",
    "verify_all",
    "verify_entry",
]

DEFAULT_DIR: Final = Path(__file__).resolve().parent.parent / "tests" / "regressions"
INDEX: Final = "index.json"
MAX_BYTES: Final = 150_000
TARGET_RECORDS: Final = 800
MAX_DURATION_S: Final = 15.0
MAX_HEAL_S: Final = 30.0
#: Below this many records a scenario is left at its own rates.
_MIN_RATE: Final = 1.0

_FAST_FAULTS: Final = ["faults.plan=[]", "faults.interval_s=2.5", "faults.fault_duration_s=2.0",
                       "duration_s=12.0", "producers[0].rate=60"]
#: Safe random runs: the default scenario, its scripted faults replaced by a nemesis.
RANDOM_RUNS: Final[list[dict[str, Any]]] = [
    {"name": "random-kill-partition-pause-s7", "scenario": "default", "seed": 7,
     "overrides": [*_FAST_FAULTS, 'faults.nemesis=["kill","partition","pause"]']},
    {"name": "random-powerloss-isolate-s8", "scenario": "default", "seed": 8,
     "overrides": [*_FAST_FAULTS, 'faults.nemesis=["power_loss","isolate_leader","partition"]']},
    {"name": "random-era-2.8-s9", "scenario": "default", "seed": 9,
     "overrides": [*_FAST_FAULTS, 'protocol="2.8"', 'faults.nemesis=["kill","partition"]']},
]

Entry = dict[str, Any]
_R = TypeVar("_R")


# --- the index -------------------------------------------------------------------------------


#: an index larger than this is refused unread (the suite's is about 30 KB)
MAX_INDEX_BYTES: Final = 16 << 20


def unknown_only(directory: Path, only: list[str]) -> str | None:
    """What is wrong with ``--only``'s names (none given, or one that is no entry of the
    index), as one line; None when each names an entry."""
    if not only:
        return "--only: expected NAME,... (entries of the index), got no name"
    names = [e["name"] for e in load_index(directory)]
    unknown = [n for n in only if n not in names]
    if not unknown:
        return None
    shown = ", ".join(sorted(names)[:8]) + (", …" if len(names) > 8 else "")
    return (f"--only: {', '.join(map(repr, unknown))}: no such entry in "
            f"{directory / INDEX} (entries: {shown or 'none'})")


def load_index(directory: Path) -> list[Entry]:
    """The entries of ``directory/index.json``; ``[]`` when there is none yet."""
    path = directory / INDEX
    if not path.exists():
        return []
    try:
        size = input_file(path, "--dir").stat().st_size
    except FileRefused as exc:
        raise TraceError(str(path), None, f"unreadable regression index: {exc}") from None
    if size > MAX_INDEX_BYTES:
        raise TraceError(str(path), None, f"regression index of {size} bytes: more than "
                         f"{MAX_INDEX_BYTES >> 20} MiB, not an index this suite wrote")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise TraceError(str(path), None, f"unreadable regression index: {exc}") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise TraceError(str(path), None, "regression index has no list of entries", "entries")
    for e in entries:
        for key in ("name", "scenario", "seed", "overrides", "digest", "verdict"):
            if key not in e:
                raise TraceError(str(path), None, f"entry {e.get('name')!r} has no {key}", key)
    return entries


def _write_index(directory: Path, entries: list[Entry]) -> None:
    from traces.writer import ISRLAB_VERSION

    data = {
        "about": "Recorded regression traces (traces/regress.py). Verified by pytest and "
                 "`isrlab regress`; re-record on purpose with `isrlab regress --record`.",
        "isrlab_version": ISRLAB_VERSION,
        "entries": sorted(entries, key=lambda e: (e.get("kind") != "catalog", e["name"])),
    }
    tmp = directory / (INDEX + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, directory / INDEX)


def _trace_file(entry: Entry) -> str:
    return str(entry.get("file") or f"{entry['name']}.jsonl.gz")


# --- verdicts --------------------------------------------------------------------------------


def verdict_of(trace: str) -> dict[str, Any]:
    from traces.checker import check_file

    result = check_file(trace)
    return {"expect_met": result.expect_met, "anomalies": dict(result.anomalies)}


def verdict_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two verdicts (an anomaly absent on one side counts as 0)."""
    out: list[str] = []
    a_old, a_new = old.get("anomalies") or {}, new.get("anomalies") or {}
    for name in list(a_old) + [n for n in a_new if n not in a_old]:
        x, y = a_old.get(name, 0), a_new.get(name, 0)
        if x != y:
            out.append(f"{name} {x} → {y}")
    if old.get("expect_met") != new.get("expect_met"):
        out.append(f"expect_met {old.get('expect_met')} → {new.get('expect_met')}")
    return out


def _describe_verdict(v: dict[str, Any]) -> str:
    """The recorded verdict in the words every door uses (:mod:`traces.verdict`); an index
    keeps the counts and whether ``[expect]`` was met, not which anomaly broke it."""
    from traces.schema import ANOMALIES
    from traces.verdict import counts_text, judge

    counts = v.get("anomalies") or {}
    met = bool(v.get("expect_met"))
    verdict = judge(counts, expect_met=met)
    label = verdict.word + ("" if verdict.word == "SAFE" else f" {verdict.what}")
    return (f"{label} ({'as expected' if met else 'NOT AS EXPECTED'}); "
            f"anomalies {counts_text(counts, ANOMALIES)}")


# --- fitting a catalog scenario into a small trace -------------------------------------------


def fit(scenario: str, halvings: int = 0) -> list[str]:
    """``--set`` overrides that make a catalog scenario's trace small (see module notes)."""
    from emulator.scenario import load

    sc = load(scenario)
    overrides: list[str] = []
    duration = float(sc["duration_s"])
    scripted_end = max((float(f["at_s"]) + float(f["duration_s"]) for f in sc["faults"]["plan"]),
                       default=0.0)
    short = min(duration, max(MAX_DURATION_S, scripted_end + 2.0))
    if short <= 0.75 * duration:  # not worth an override (and a less faithful run) otherwise
        overrides.append(f"duration_s={short:g}")
        duration = short
    if float(sc["heal_s"]) > MAX_HEAL_S:  # only a run that does not converge waits it out
        overrides.append(f"heal_s={MAX_HEAL_S:g}")
    total = sum(float(p["rate"]) for p in sc["producers"]) * duration
    factor = min(1.0, TARGET_RECORDS / total) if total > 0 else 1.0
    factor /= 2 ** halvings
    if factor < 1.0:
        for i, p in enumerate(sc["producers"]):
            rate = max(_MIN_RATE, round(float(p["rate"]) * factor, 1))
            if rate < float(p["rate"]):
                overrides.append(f"producers[{i}].rate={rate:g}")
    return overrides


# --- one entry -------------------------------------------------------------------------------


def _record_one(directory: str, spec: Entry, refit: bool) -> tuple[Entry, list[str]]:
    """Run one entry into ``directory``; return the new entry and notes for the user."""
    from emulator.cluster import run
    from emulator.scenario import load

    notes: list[str] = []
    halvings = 0
    overrides = list(spec["overrides"])
    if refit:
        overrides = fit(spec["scenario"])
    path = Path(directory) / f"{spec['name']}.jsonl.gz"
    while True:
        sc = load(spec["scenario"], overrides)
        seed = int(spec["seed"])
        result = run(sc, seed, str(path))
        size = path.stat().st_size
        if size <= MAX_BYTES or not refit or halvings >= 3:
            break
        halvings += 1
        overrides = fit(spec["scenario"], halvings)
    verdict = verdict_of(str(path))
    if refit and overrides and not verdict["expect_met"]:
        # the shortened run may no longer reproduce what the scenario is about: try it as
        # written, and keep that when it meets [expect] and still fits under 200 KB
        plain = Path(directory) / "unfitted" / path.name
        alt = run(load(spec["scenario"]), seed, str(plain))
        alt_verdict = verdict_of(str(plain))
        if alt_verdict["expect_met"] and plain.stat().st_size < 195_000:
            os.replace(plain, path)
            overrides, result, verdict, size = [], alt, alt_verdict, path.stat().st_size
            notes.append("recorded as written: the shortened run did not meet [expect]")
        else:
            notes.append("does not meet [expect] with these overrides; set \"pinned\": true "
                         "and hand-written overrides in index.json if it should")
        shutil.rmtree(plain.parent, ignore_errors=True)
    if size > MAX_BYTES:
        notes.append(f"trace is {size // 1000} KB, above {MAX_BYTES // 1000} KB: shorten it "
                     "with more overrides")
    if result.status not in ("ok", "anomalies"):
        notes.append(f"the run ended with status {result.status}: {result.error}")
    entry: Entry = {
        "name": spec["name"], "kind": spec.get("kind", "catalog"),
        "scenario": spec["scenario"], "seed": seed, "overrides": overrides,
        "file": path.name, "digest": result.digest, "events": result.events,
        "verdict": verdict,
    }
    if spec.get("pinned"):
        entry["pinned"] = True
    return entry, notes


def verify_entry(directory: Path, entry: Entry, *, context: int = 3) -> list[str]:
    """Everything that changed for one entry since it was recorded ([] when nothing)."""
    from emulator.scenario import ScenarioError, load
    from traces.replay import format_result, member_differences, replay_trace, verify_trace

    problems: list[str] = []
    trace = str(directory / _trace_file(entry))
    if not os.path.exists(trace):
        return [f"trace file {trace} is missing: re-record"]
    try:
        header, _footer, digest = verify_trace(trace)
    except TraceError as exc:
        return [f"stored trace does not verify: {exc}"]
    if digest != entry["digest"]:
        problems.append(f"stored trace's digest {digest[:12]}… is not the index's "
                        f"{str(entry['digest'])[:12]}… (trace replaced without the index?)")
    try:
        today = load(entry["scenario"], entry["overrides"])
    except ScenarioError as exc:
        problems.append(f"scenario no longer loads with its overrides: {exc}")
    else:
        if today != header.get("scenario"):
            diff = member_differences(header.get("scenario"), today, limit=4)
            problems.append("scenario definition changed since recording: " + "; ".join(diff))
    if header.get("seed") != entry["seed"]:
        problems.append(f"seed in the trace {header.get('seed')} is not the index's "
                        f"{entry['seed']}")
    with tempfile.TemporaryDirectory(prefix="isrlab-regress-") as tmp:
        new = str(Path(tmp) / "replay.jsonl")
        try:
            res = replay_trace(trace, new, context=context)
        except TraceError as exc:
            return [*problems, f"cannot replay: {exc}"]
        if not res.identical or res.replayed_digest != entry["digest"]:
            report = format_result(res, width=300).replace(f"replayed trace: {new}", "")
            problems.append(f"digest changed {str(entry['digest'])[:12]}… → "
                            f"{res.replayed_digest[:12]}…:\n" + _indent(report.rstrip()))
        verdict = verdict_of(new)
    changes = verdict_changes(entry["verdict"], verdict)
    if changes:
        problems.append("verdict changed: " + ", ".join(changes))
    return problems


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# --- the suite -------------------------------------------------------------------------------


@dataclass
class Outcome:
    """Suite-wide result: per-entry problems and what is missing from the index."""

    problems: dict[str, list[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  #: catalog scenarios without an entry
    gone: list[str] = field(default_factory=list)  #: entries whose scenario left the catalog

    @property
    def changed(self) -> bool:
        return bool(self.missing or self.gone or any(self.problems.values()))


def _catalog() -> list[str]:
    from emulator.scenario import catalog

    return [name for name, _desc in catalog()]


def _map(fn: Callable[..., _R], args: Iterable[tuple[Any, ...]], jobs: int) -> list[_R]:
    work = list(args)
    if jobs <= 1 or len(work) <= 1:
        return [fn(*a) for a in work]
    with ProcessPoolExecutor(max_workers=min(jobs, len(work))) as pool:
        futures = [pool.submit(fn, *a) for a in work]
        return [f.result() for f in futures]


def _verify_worker(directory: str, entry: Entry) -> list[str]:
    return verify_entry(Path(directory), entry)


def verify_all(directory: Path, entries: list[Entry], *, jobs: int = 1) -> list[list[str]]:
    """:func:`verify_entry` for each entry, ``jobs`` at a time, in entry order."""
    return _map(_verify_worker, ((str(directory), e) for e in entries), jobs)


def verify(directory: Path, *, only: list[str] | None = None, jobs: int = 1,
           out: Callable[[str], None] = print) -> Outcome:
    entries = load_index(directory)
    outcome = Outcome()
    if only is None:
        catalog = _catalog()
        have = {e["scenario"] for e in entries if e.get("kind", "catalog") == "catalog"}
        outcome.missing = [name for name in catalog if name not in have]
        outcome.gone = [e["name"] for e in entries
                        if e.get("kind", "catalog") == "catalog" and e["scenario"] not in catalog]
    else:
        unknown = [n for n in only if n not in {e["name"] for e in entries}]
        outcome.problems.update({n: ["no such entry in the index"] for n in unknown})
        entries = [e for e in entries if e["name"] in only]
    results = verify_all(directory, entries, jobs=jobs)
    for entry, problems in zip(entries, results, strict=True):
        outcome.problems[entry["name"]] = problems
        if problems:
            out(f"CHANGED  {entry['name']}")
            for p in problems:
                out(_indent(p))
        else:
            out(f"ok       {entry['name']:40} {str(entry['digest'])[:12]}  "
                f"{_describe_verdict(entry['verdict'])}")
    for name in outcome.missing:
        out(f"MISSING  {name}: a catalog scenario with no recorded trace")
    for name in outcome.gone:
        out(f"GONE     {name}: its scenario left the catalog")
    return outcome


def _planned(entries: list[Entry], only: list[str] | None) -> tuple[list[Entry], list[str]]:
    """The entries a re-record runs (with ``refit``), and the names it drops."""
    by_name = {e["name"]: e for e in entries}
    if only is not None:
        return [dict(by_name[n], refit=False) for n in only if n in by_name], []
    catalog = _catalog()
    planned: list[Entry] = []
    dropped: list[str] = []
    for e in entries:
        if e.get("kind", "catalog") == "catalog" and e["scenario"] not in catalog:
            dropped.append(e["name"])
        elif e.get("kind", "catalog") == "catalog":
            planned.append(dict(e, refit=not e.get("pinned")))
        else:
            planned.append(dict(e, refit=False))
    names = {e["name"] for e in planned}
    covered = {e["scenario"] for e in planned if e.get("kind", "catalog") == "catalog"}
    for name in catalog:
        if name not in covered and name not in names:
            planned.append({"name": name, "kind": "catalog", "scenario": name,
                            "seed": _catalog_seed(name), "overrides": [], "refit": True})
    for r in RANDOM_RUNS:
        if r["name"] not in names:
            planned.append({**r, "kind": "random", "refit": False})
    return planned, dropped


def _catalog_seed(name: str) -> int:
    from emulator.scenario import load

    return int(load(name)["seed"])


def _record_worker(directory: str, spec: Entry) -> tuple[Entry, list[str]]:
    return _record_one(directory, spec, bool(spec.get("refit")))


def record(directory: Path, *, only: list[str] | None = None, jobs: int = 1,
           out: Callable[[str], None] = print) -> int:
    """Re-record the suite; print what changed; return how many entries changed."""
    directory.mkdir(parents=True, exist_ok=True)
    old = load_index(directory)
    old_by_name = {e["name"]: e for e in old}
    planned, dropped = _planned(old, only)
    staging = Path(tempfile.mkdtemp(prefix=".record-", dir=directory))
    try:
        results = _map(_record_worker, ((str(staging), s) for s in planned), jobs)
        for new, _notes in results:
            os.replace(staging / new["file"], directory / new["file"])
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    changed = 0
    kept = {e["name"]: e for e in old if e["name"] not in dropped}
    for new, notes in results:
        prev = old_by_name.get(new["name"])
        what: list[str] = []
        if prev is None:
            what.append("new entry")
        else:
            if prev["digest"] != new["digest"]:
                what.append(f"digest {str(prev['digest'])[:12]}… → {new['digest'][:12]}…")
            changes = verdict_changes(prev["verdict"], new["verdict"])
            if changes:
                what.append("verdict " + ", ".join(changes))
            if prev["overrides"] != new["overrides"]:
                what.append(f"overrides {prev['overrides']} → {new['overrides']}")
        changed += bool(what)
        label = ("new     " if prev is None else "CHANGED ") if what else "same    "
        out(f"{label} {new['name']:40} {new['digest'][:12]}  {_describe_verdict(new['verdict'])}"
            f"  ({new['events']} events, {(directory / new['file']).stat().st_size // 1000} KB)")
        for w in what:
            out(f"    {w}")
        if not new["verdict"]["expect_met"] and new.get("kind") == "random":
            notes = [*notes, "a random run meant to be safe does not meet its [expect]"]
        for n in notes:
            out(f"    note: {n}")
        kept[new["name"]] = new
    for name in dropped:
        changed += 1
        out(f"DROPPED  {name}: its scenario left the catalog")
        with contextlib.suppress(FileNotFoundError):
            (directory / _trace_file(old_by_name[name])).unlink()
    _write_index(directory, list(kept.values()))
    return changed


# --- the command -----------------------------------------------------------------------------
