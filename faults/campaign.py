"""Fault campaigns: one scenario, a range of seeds, every core; one result row per seed.

``isrlab campaign SCENARIO --seeds A:B`` runs seeds ``A..B`` (both included) of one resolved
scenario, checks each trace with the in-process checker (``traces.checker``) and appends one
JSON row per seed to ``DIR/results.jsonl``. It is the FoundationDB / TigerBeetle VOPR loop
("run many seeds, keep the failing ones, print the line that reproduces each") with Jepsen's
nemeses as the fault source, sized for one machine; past one machine the same command takes
``--spark MASTER`` and the seeds become Spark tasks (README.md, *Using a Spark cluster*).

Design
------
* **One seed, one task.** The driver resolves the scenario once (bad input stops here, exit
  2) and sends ``(Job, seed)`` to a worker; the worker runs the emulator to a plain trace in
  the invocation's scratch folder (``DIR/.isrlab-scratch-XXXX``, made by ``mkdtemp``), checks
  it, gzips it into ``DIR/traces`` when it is kept, and returns the row.
  Rows are small; traces never cross the process boundary.
* **Processes, not forks of a live process.** Workers come from a ``forkserver`` (``spawn``
  where there is none) so no Trio run state, open file or lock of the driver is inherited; the
  forkserver preloads the emulator so a new worker costs a fork, not an interpreter start.
  Workers ignore SIGINT: stopping is the driver's decision (below).
* **Bounded.** At most ``2 × jobs`` seeds are in flight; a range of a million seeds costs no
  more driver memory than ten.
* **Rows are the campaign's state.** Each finished seed is appended to ``results.jsonl`` and
  flushed at once, so the file is valid JSON lines up to the last finished seed whatever
  happens next. Rows arrive in *completion* order, not seed order (seed 7 may finish before
  seed 6); readers key rows by ``seed``. Re-running the same command resumes: seeds with a row
  are skipped, and a torn last line (a driver killed mid-write) is ignored and cut off.
  ``campaign.json`` records the command's scenario and ``--set`` values (what reproduces a
  seed: :func:`reproduce_command`), the resolved scenario every seed ran (``resolved``; a
  folder written before it was recorded gets it on resume) and its digest, so a resume with
  other ``--set`` values is refused instead of mixing two campaigns; by default ``DIR`` is
  named after that digest. A row records what differs from seed to seed: the fault kinds
  of its plan (``fault_kinds``; ``--swarm`` draws each seed's own subset).
* **Ctrl-C** (SIGINT) and **SIGTERM** set a flag; the driver cancels the seeds not yet
  started, kills the workers (their unfinished seeds have no row and run again on resume),
  shuts the pool down, prints the summary of what finished and exits 130 (143 for SIGTERM).
  A second signal stops at once.
* **Only its own folder** (``emulator.files``). ``--out DIR`` must be new, empty, or a campaign
  folder (it holds ``campaign.json``): any other non-empty folder is the user's and is refused
  before anything in it is read or removed (``--out ~`` once deleted every file in ``~/tmp``).
  Scratch space is a fresh ``mkdtemp`` folder per invocation, removed at the end; those a killed
  driver left are removed on resume, and only inside a campaign folder. Workers watch the
  driver: when it is killed (even by SIGKILL) they exit within a second. A ``campaign.json``
  that does not parse is refused (it cannot tell which campaign the rows belong to). A row of
  ``results.jsonl`` that is not a well-formed result (a seed, a verdict, counts) is skipped
  with a warning and its seed runs again. A seed that hit an *infrastructure* error (an
  ``OSError`` writing its trace: a full disk, a vanished folder) is written with status
  ``infra_error`` and never counts as done: the summary says so plainly and a resume runs it
  again.
* **Verdicts.** A row is ``fail`` when the checker found an anomaly the scenario forbids
  (``[expect] forbid``) or the run itself errored (an actor raised). A bug-reproduction
  scenario (``[expect] anomalies``) does not make a seed fail by *not* reproducing; the
  summary counts the seeds that did. Traces are kept (gzip) for failing and reproducing seeds,
  or all seeds with ``--keep-all``. ``--shrink N`` then shrinks the first ``N`` failing
  seeds with a kept trace (``isrlab shrink``, several at once on the pool), each into
  :func:`shrink_folder` of its trace, where ``isrlab shrink TRACE`` puts it by default and
  the campaign page (``isrlab report DIR``) finds it; a seed already shrunk there is not
  shrunk again. Exit 1 when any seed of the range failed (rows from an
  earlier, resumed invocation included, so the exit code does not depend on resumption) or
  the determinism check failed; 0 otherwise; 2 bad input; 130 interrupted.
* **Determinism, continuously** (FoundationDB, madsim): ``--check-determinism F`` re-runs
  every ``round(1/F)``-th seed this invocation ran in a *fresh* ``spawn``-ed process (new
  interpreter, new ``str`` hash seed) and compares trace digests.
* **Spark.** ``--spark [MASTER]`` maps the seeds over ``sparkContext.parallelize`` in waves
  (one task per seed, a wave of ``2 × defaultParallelism`` seeds) and the driver writes the
  rows between waves, in the same format. ``DIR`` must then be on storage the executors
  share (it is, trivially, for ``local[*]``).

Left out: retrying a seed whose worker died (the pool is broken then: the campaign stops
with exit 1 and resumes from its rows), and a ``--json`` summary.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import fcntl
import functools
import gzip
import hashlib
import itertools
import json
import multiprocessing
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, Final, TextIO

from emulator.files import (
    FileRefused,
    claim_folder,
    remove_scratch,
    remove_stale_scratch,
    scratch_folder,
    write_text,
)
from emulator.progress import Progress
from emulator.scenario import SAFE_NAME, ScenarioError, find, load
from faults.shrink_cli import DEFAULT_BUDGET as SHRINK_DEFAULT_BUDGET
from faults.shrink_cli import shrink_folder
from traces.verdict import SAFE_PHRASE, WORDS, data_word

__all__ = [
    "CampaignConfig",
    "CampaignError",
    "Job",
    "digest_seed",
    "parse_seeds",
    "read_results",
    "run_campaign",
    "run_seed",
    "scenario_digest",
    "shrink_folder",
]

EXIT_OK: Final = 0
EXIT_FAIL: Final = 1
EXIT_BAD_INPUT: Final = 2
EXIT_INTERRUPTED: Final = 130
#: the status of a seed that an infrastructure error stopped (never done: resume retries)
INFRA: Final = "infra_error"
#: the largest seed (a signed 64-bit number, as ``run --seed``) and the most seeds a
#: campaign takes (more would never finish; ``len(range)`` must fit a machine word)
MAX_SEED: Final = 2**63 - 1
MAX_SEEDS: Final = 10**12

RESULTS: Final = "results.jsonl"
MANIFEST: Final = "campaign.json"
TRACES: Final = "traces"
#: How often the driver wakes up to refresh progress and look at the Ctrl-C flag.
POLL_S: Final = 0.25
#: Failing seeds listed with their reproduce command in the summary.
SHOW_FAILURES: Final = 5
#: Emulator runs each ``--shrink`` of a seed may make: ``isrlab shrink``'s default.
SHRINK_BUDGET: Final = SHRINK_DEFAULT_BUDGET


class CampaignError(Exception):
    """Bad input: a one-line message naming what is wrong (exit 2)."""


# --------------------------------------------------------------------------- the worker side


@dataclass(frozen=True)
class Job:
    """What every seed of one campaign shares; pickled to the worker with each seed."""

    sc: dict[str, Any]
    out_dir: str
    keep_all: bool = False
    #: this invocation's scratch folder (``out_dir`` itself when empty: the benches' own tmp)
    scratch: str = ""

    @property
    def work(self) -> Path:
        return Path(self.scratch or self.out_dir)


def _worker_init(driver: int = 0) -> None:
    """Workers leave Ctrl-C to the driver (a terminal sends SIGINT to the whole group), and
    exit when the driver is gone (``driver``: its pid; 0 for none to watch)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if driver:
        threading.Thread(target=_watch_driver, args=(driver, _started(driver)),
                         name="isrlab-watch-driver", daemon=True).start()


def _started(pid: int) -> str | None:
    """A process's start time (``/proc/PID/stat`` field 22: tells a reused pid apart), or
    None where there is no ``/proc``."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat_line.rsplit(")", 1)[-1].split()[19]


def _driver_alive(pid: int, started: str | None) -> bool:
    if started is not None:
        return _started(pid) == started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _watch_driver(pid: int, started: str | None) -> None:
    """A worker's watch on its driver. A killed driver (SIGKILL: no ``finally`` runs) cannot
    stop its workers, and a worker of a ``forkserver`` is not even the driver's child, so
    each worker looks every ``POLL_S`` and leaves when the driver is gone: a seed it was
    running has no row and runs again on resume."""
    while _driver_alive(pid, started):
        time.sleep(POLL_S)
    os._exit(1)


def _header(path: Path) -> dict[str, Any]:
    from traces.reader import iter_events

    with iter_events(path, verify=False) as events:
        return next(events)


def _gzip_into(src: Path, dst: Path) -> None:
    part = dst.with_name(dst.name + ".part")
    with src.open("rb") as fin, gzip.GzipFile(part, "wb", compresslevel=6, mtime=0) as fout:
        shutil.copyfileobj(fin, fout, 1 << 20)
    os.replace(part, dst)


def run_seed(job: Job, seed: int) -> dict[str, Any]:
    """Run and check one seed; return its result row (never raises for a bad run)."""
    from emulator.cluster import run
    from traces.checker import check_file
    from traces.schema import ANOMALIES

    out = Path(job.out_dir)
    tmp = job.work / f"seed-{seed}.jsonl"
    t0 = time.perf_counter()
    row: dict[str, Any] = {"seed": seed}
    try:
        res = run(job.sc, seed, str(tmp))
        check = check_file(tmp)
        plan = _header(tmp).get("fault_plan") or []
    except OSError as exc:   # the machine, not the system under test: retried on resume
        tmp.unlink(missing_ok=True)
        row.update(digest=None, verdict="infra", expect_met=False, status=INFRA,
                   anomalies={a: 0 for a in ANOMALIES}, forbidden_found=[],
                   missing_expected=[], events=0, sim_seconds=0.0,
                   wall_seconds=round(time.perf_counter() - t0, 3), trace=None, faults=0,
                   fault_kinds=[], error=f"{type(exc).__name__}: {exc}")
        return row
    except Exception as exc:  # noqa: BLE001  # a broken seed is a row, not a dead campaign
        tmp.unlink(missing_ok=True)
        row.update(digest=None, verdict="fail", expect_met=False, status="error",
                   anomalies={a: 0 for a in ANOMALIES}, forbidden_found=[],
                   missing_expected=[], events=0, sim_seconds=0.0,
                   wall_seconds=round(time.perf_counter() - t0, 3), trace=None, faults=0,
                   fault_kinds=[], error=f"{type(exc).__name__}: {exc}")
        return row
    failed = bool(check.forbidden_found) or res.status == "error"
    reproduced = bool(job.sc["expect"]["anomalies"]) and not check.missing_expected
    trace: str | None = None
    if job.keep_all or failed or reproduced:
        final = out / TRACES / f"seed-{seed}.jsonl.gz"
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            _gzip_into(tmp, final)
        except OSError as exc:   # keeping the trace failed (a full disk): retried on resume
            tmp.unlink(missing_ok=True)
            if final.is_file():
                final.unlink()
            row.update(digest=None, verdict="infra", expect_met=False, status=INFRA,
                       anomalies={a: 0 for a in ANOMALIES}, forbidden_found=[],
                       missing_expected=[], events=0, sim_seconds=0.0,
                       wall_seconds=round(time.perf_counter() - t0, 3), trace=None,
                       faults=0, fault_kinds=[], error=f"{type(exc).__name__}: {exc}")
            return row
        trace = str(final)
    tmp.unlink(missing_ok=True)
    row.update(
        digest=res.digest, verdict="fail" if failed else "ok", expect_met=check.expect_met,
        status=res.status, anomalies=dict(check.anomalies),
        forbidden_found=list(check.forbidden_found),
        missing_expected=list(check.missing_expected), events=res.events,
        sim_seconds=round(res.sim_seconds, 3),
        wall_seconds=round(time.perf_counter() - t0, 3), trace=trace, faults=len(plan),
        fault_kinds=sorted({str(f.get("fault")) for f in plan}))
    if res.error:
        row["error"] = res.error
    return row


def shrink_seed(traces: Mapping[int, str], budget: int, seed: int) -> dict[str, Any]:
    """Shrink one failing seed's kept trace into its :func:`shrink_folder` (a worker task;
    never raises: a seed that cannot be shrunk says why)."""
    import io

    from faults.shrink_cli import ShrinkInputError, shrink_trace

    trace = Path(traces[seed])
    out = shrink_folder(trace)
    result: dict[str, Any] = {"seed": seed, "folder": str(out)}
    try:
        o = shrink_trace(trace, out, budget=budget, stdout=io.StringIO(),
                         stderr=io.StringIO())
    except ShrinkInputError as exc:
        return {**result, "error": str(exc)}
    except Exception as exc:  # noqa: BLE001  # one seed's shrink, not the campaign
        return {**result, "error": f"{type(exc).__name__}: {exc}"}
    if o.code != EXIT_OK or o.toml is None or o.plan is None:
        return {**result, "error": f"its plan, replayed, no longer shows "
                                   f"{', '.join(o.targets or []) or 'the failure'}"}
    return {**result, "toml": str(o.toml), "faults": len(o.plan), "calls": o.calls,
            "targets": list(o.targets or [])}


def digest_seed(job: Job, seed: int) -> tuple[int, str]:
    """Run one seed only for its trace digest (the determinism re-run)."""
    from emulator.cluster import run

    tmp = job.work / f"seed-{seed}.rerun-{os.getpid()}.jsonl"
    try:
        return seed, run(job.sc, seed, str(tmp)).digest
    finally:
        tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------- results file


def parse_seeds(text: str) -> range:
    """``A:B`` (both included) or ``N``; raises CampaignError."""
    a, sep, b = text.partition(":")
    try:
        lo, hi = int(a), int(b if sep else a)
    except ValueError:
        raise CampaignError(f"--seeds: expected A:B (two integers), got {text!r}") from None
    if lo < 0:
        raise CampaignError(f"--seeds: seeds must be >= 0, got {text!r}")
    if hi < lo:
        raise CampaignError(f"--seeds: {text!r} is empty: A must not exceed B")
    if hi > MAX_SEED:
        raise CampaignError(f"--seeds: seeds must be within [0, 2^63-1] (a seed is a signed "
                            f"64-bit number, as run --seed), got {text!r}")
    if hi - lo + 1 > MAX_SEEDS:
        raise CampaignError(f"--seeds: {text!r} is {hi - lo + 1} seeds; a campaign takes at "
                            f"most {MAX_SEEDS:,} (split it into several)")
    return range(lo, hi + 1)


class _Todo:
    """The seeds of the range not run yet, never materialised (``--seeds 0:999999999`` is a
    billion seeds: a list of them is gigabytes before the first run)."""

    def __init__(self, seeds: range, done: Mapping[int, Any]) -> None:
        self.seeds = seeds
        self.done = done
        self.n = len(seeds) - sum(1 for s in done if s in seeds)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[int]:
        return (s for s in self.seeds if s not in self.done)


def read_results(path: Path, unusable: list[str] | None = None
                 ) -> tuple[dict[int, dict[str, Any]], int]:
    """Rows of ``results.jsonl`` by seed (the last row of a seed wins) and the byte length
    of its valid prefix: everything up to the last newline. A torn last line is ignored;
    ``unusable`` gets ``FILE:LINE: why`` for each other line that is not a result row."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}, 0
    end = data.rfind(b"\n") + 1
    rows: dict[int, dict[str, Any]] = {}
    for n, line in enumerate(data[:end].splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if well_formed(row) and row.get("status") != INFRA:
            rows[row["seed"]] = row
            continue
        if isinstance(row, dict) and isinstance(row.get("seed"), int):
            rows.pop(row["seed"], None)   # its last row is unusable: the seed runs again
        if unusable is not None and (not isinstance(row, dict) or row.get("status") != INFRA):
            unusable.append(f"{path}:{n}: not a result row (no integer seed, verdict and "
                            "counts); ignored")
    return rows, end


def well_formed(row: Any) -> bool:
    """A result row readers can rely on: an integer seed, a verdict, counts by anomaly."""
    if not isinstance(row, dict) or type(row.get("seed")) is not int:
        return False
    counts = row.get("anomalies")
    return (isinstance(row.get("verdict"), str) and isinstance(counts, dict)
            and all(isinstance(k, str) and type(v) is int for k, v in counts.items())
            and all(isinstance(row.get(k, []), list)
                    for k in ("forbidden_found", "missing_expected")))


class _Results:
    """``results.jsonl`` opened for appending, its torn tail (if any) cut off first."""

    def __init__(self, path: Path, valid: int) -> None:
        with path.open("ab") as fh:
            if fh.tell() > valid:
                fh.truncate(valid)
        self._fh: IO[str] = path.open("a", encoding="utf-8")

    def append(self, row: dict[str, Any]) -> None:
        self._fh.write(json.dumps(row, separators=(",", ":")) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


# --------------------------------------------------------------------------- progress


class _Progress:
    """The campaign's progress (``emulator.progress``: tqdm's bar on a terminal, a plain line
    every few s otherwise), its status the failing seeds by forbidden anomaly."""

    def __init__(self, stream: TextIO, total: int, name: str, *, quiet: bool = False) -> None:
        self.bar = Progress(stream, total, f"campaign {name}", "seed", quiet=quiet)
        self.failing = 0
        self.kinds: Counter[str] = Counter()

    def add(self, row: dict[str, Any]) -> None:
        if row.get("verdict") == "fail":
            self.failing += 1
            for name in row.get("forbidden_found") or ["run_error"]:
                self.kinds[name] += 1
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        self.bar.advance(1, f"{self.failing} failing" + (f" ({kinds})" if kinds else ""))

    def tick(self) -> None:
        self.bar.tick()

    def finish(self) -> None:
        self.bar.finish()


# --------------------------------------------------------------------------- Ctrl-C


class _Interrupt:
    """The first SIGINT or SIGTERM only sets ``hit`` (the driver stops between rows) and
    remembers which (``signum``); a second raises."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.hit = False
        self.signum = 0
        self._old: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.hit:
            raise KeyboardInterrupt
        self.hit = True
        self.signum = signum

    def __enter__(self) -> _Interrupt:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


# --------------------------------------------------------------------------- pools


def _context(method: str) -> multiprocessing.context.BaseContext:
    if method == "forkserver" and "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["emulator.cluster", "traces.checker", "faults.campaign",
                                   "faults.explore"])
        return ctx
    return multiprocessing.get_context("spawn")


def process_pool(jobs: int, method: str = "forkserver") -> cf.ProcessPoolExecutor:
    """Worker processes from a forkserver that preloaded the emulator (campaign, explore)."""
    return cf.ProcessPoolExecutor(max_workers=jobs, mp_context=_context(method),
                                  initializer=_worker_init, initargs=(os.getpid(),))


def _kill_workers(pool: cf.ProcessPoolExecutor) -> None:
    """Stop the workers now (their seeds have no row yet and run again on resume)."""
    procs: dict[int, Any] = getattr(pool, "_processes", None) or {}  # private; best effort
    for proc in list(procs.values()):
        with contextlib.suppress(Exception):
            proc.kill()


class _BrokenPool(Exception):
    pass


def _drive_pool(pool: cf.ProcessPoolExecutor, fn: Callable[[int], Any], seeds: Iterable[int],
                window: int, on_result: Callable[[Any], None], stop: _Interrupt,
                tick: Callable[[], None]) -> bool:
    """Run ``fn`` over ``seeds`` with at most ``window`` in flight; feed each result to
    ``on_result`` as it finishes. Returns False when stopped by Ctrl-C."""
    todo = iter(seeds)
    inflight: dict[cf.Future[Any], int] = {}
    exhausted = False
    try:
        while True:
            while not exhausted and not stop.hit and len(inflight) < window:
                seed = next(todo, None)
                if seed is None:
                    exhausted = True
                    break
                inflight[pool.submit(fn, seed)] = seed
            if stop.hit or not inflight:
                break
            done, _ = cf.wait(inflight, timeout=POLL_S, return_when=cf.FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: inflight[f]):
                inflight.pop(fut)
                try:
                    result = fut.result()
                except cf.process.BrokenProcessPool as exc:
                    raise _BrokenPool(str(exc)) from exc
                on_result(result)
            tick()
    finally:
        if stop.hit or inflight:
            for fut in inflight:
                fut.cancel()
            _kill_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)
    return not stop.hit


def _drive_spark(master: str, start: Callable[[str], Any], job: Job, seeds: Iterable[int],
                 on_result: Callable[[Any], None], stop: _Interrupt,
                 tick: Callable[[], None]) -> bool:
    """The same loop as Spark tasks: waves of ``parallelize(seeds).map(run_seed)`` on the
    session ``start(master)`` gives (stopped at the end unless it was already running)."""
    if master.startswith("local"):
        # local workers must run this interpreter (the venv), not whatever python3 is on PATH
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    owned = SparkSession.getActiveSession() is None  # never stop a caller's session
    spark = start(master)
    try:
        ctx = spark.sparkContext
        wave = max(2 * int(ctx.defaultParallelism), 1)
        task = functools.partial(run_seed, job)
        it = iter(seeds)
        while chunk := list(itertools.islice(it, wave)):
            if stop.hit:
                return False
            for row in ctx.parallelize(chunk, len(chunk)).map(task).collect():
                on_result(row)
            tick()
        return not stop.hit
    finally:
        if owned:
            spark.stop()


# --------------------------------------------------------------------------- the campaign


@dataclass
class CampaignConfig:
    scenario: str
    seeds: range
    overrides: list[str] = field(default_factory=list)
    jobs: int = 0  #: 0: every core
    out: str | None = None
    keep_all: bool = False
    check_determinism: float = 0.0
    spark: str | None = None
    #: starts a Spark session on a master URL (``spark``): handed in by the command line,
    #: so the driver knows nothing of ``spark_analysis``
    spark_session: Callable[[str], Any] | None = None
    quiet: bool = False  #: no progress line (benchmarks)
    #: shrink the first N failing seeds with a kept trace (``--shrink N``; 0: none)
    shrink: int = 0


@dataclass
class CampaignOutcome:
    code: int
    out_dir: Path
    rows: dict[int, dict[str, Any]]  #: every row of the range, resumed ones included
    ran: int  #: seeds run by this invocation
    wall_seconds: float
    interrupted: bool = False
    determinism_mismatches: list[tuple[int, str, str]] = field(default_factory=list)
    #: one result of :func:`shrink_seed` per seed ``--shrink`` chose, by seed
    shrunk: dict[int, dict[str, Any]] = field(default_factory=dict)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def scenario_digest(sc: dict[str, Any]) -> str:
    """The digest ``campaign.json`` keeps of the resolved scenario (``scenario_sha256``)."""
    return hashlib.sha256(json.dumps(sc, sort_keys=True).encode()).hexdigest()


def _prepare_dir(cfg: CampaignConfig, sc: dict[str, Any]) -> Path:
    if cfg.out is None and not SAFE_NAME.fullmatch(sc["name"]):
        raise CampaignError(f"{cfg.scenario}: name: {sc['name']!r} cannot name a folder under "
                            "out/campaigns (letters, digits, '.', '_', '-'; not starting with "
                            "'.'): give --out")
    digest = scenario_digest(sc)
    out = Path(cfg.out or f"out/campaigns/{sc['name']}-{digest[:10]}")
    source = find(cfg.scenario)
    try:
        claim_folder(out, "--out", MANIFEST, "a campaign folder",
                     [source] if source.is_file() else [])
    except FileRefused as exc:
        raise CampaignError(str(exc)) from None
    manifest = out / MANIFEST
    if manifest.exists():
        try:
            known = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = None
        if not isinstance(known, dict) or not isinstance(known.get("scenario_sha256"), str):
            raise CampaignError(
                f"{manifest}: damaged (not the campaign record isrlab writes): cannot tell "
                "which campaign this folder holds; choose another --out")
        if known.get("scenario_sha256") != digest:
            raise CampaignError(
                f"{out}: --out: holds a campaign of another scenario or other --set values "
                f"({known.get('scenario')} {' '.join(known.get('overrides', []))}); "
                "resume with the same arguments or choose another --out")
        if "resolved" not in known:   # written before the record held the scenario itself
            write_text(manifest, json.dumps({**known, "resolved": sc}, indent=1) + "\n")
    else:
        write_text(manifest, json.dumps({
            "scenario": cfg.scenario, "name": sc["name"], "overrides": cfg.overrides,
            "scenario_sha256": digest, "resolved": sc}, indent=1) + "\n")
    return out


def _lock(out: Path) -> IO[bytes]:
    fh = (out / ".lock").open("ab")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise CampaignError(f"{out}: --out: another campaign is running in this directory"
                            ) from None
    return fh


def reproduce_command(scenario: str, seed: int, overrides: Sequence[str]) -> str:
    return shlex.join(["isrlab", "run", scenario, "--seed", str(seed),
                       *[x for o in overrides for x in ("--set", o)]])


def run_campaign(cfg: CampaignConfig, *, stdout: TextIO | None = None,
                 stderr: TextIO | None = None) -> CampaignOutcome:
    """Run (or resume) a campaign. Raises CampaignError on bad input."""
    out_stream = stdout or sys.stdout
    err = stderr or sys.stderr
    try:
        sc = load(cfg.scenario, cfg.overrides)
    except ScenarioError as exc:
        raise CampaignError(str(exc)) from None
    jobs = cfg.jobs or _cores()
    out = _prepare_dir(cfg, sc)
    lock = _lock(out)
    scratch: Path | None = None
    try:
        remove_stale_scratch(out, MANIFEST)   # what a killed campaign left behind
        scratch = scratch_folder(out)
        results_path = out / RESULTS
        unusable: list[str] = []
        previous, valid = read_results(results_path, unusable)
        for line in unusable[:5]:
            err.write(f"isrlab campaign: {line}\n")
        if len(unusable) > 5:
            err.write(f"isrlab campaign: {results_path}: {len(unusable) - 5} more rows that "
                      "are not result rows; ignored\n")
        todo = _Todo(cfg.seeds, previous)
        job = Job(sc, str(out), cfg.keep_all, str(scratch))
        rows = {s: previous[s] for s in sorted(previous) if s in cfg.seeds}
        progress = _Progress(err, len(todo), sc["name"], quiet=cfg.quiet)
        results = _Results(results_path, valid)
        new: list[int] = []

        def on_row(row: dict[str, Any]) -> None:
            results.append(row)
            rows[row["seed"]] = row
            new.append(row["seed"])
            progress.add(row)

        t0 = time.perf_counter()
        if len(rows) and not cfg.quiet:
            err.write(f"campaign {sc['name']}: resuming in {out}: {len(rows)} of "
                      f"{len(cfg.seeds)} seeds already done\n")
        mismatches: list[tuple[int, str, str]] = []
        with _Interrupt() as stop:
            try:
                if not todo:
                    finished = True
                elif cfg.spark is not None:
                    if cfg.spark_session is None:
                        raise CampaignError(f"--spark {cfg.spark}: no way to start a Spark "
                                            "session was given (CampaignConfig.spark_session)")
                    finished = _drive_spark(cfg.spark, cfg.spark_session, job, todo, on_row,
                                            stop, progress.tick)
                else:
                    finished = _drive_pool(process_pool(min(jobs, len(todo))),
                                           functools.partial(run_seed, job), todo,
                                           2 * jobs, on_row, stop, progress.tick)
            except _BrokenPool as exc:
                results.close()
                progress.finish()
                err.write(f"isrlab campaign: a worker process died ({exc}); the rows so far "
                          f"are in {results_path}; re-run the command to resume\n")
                return CampaignOutcome(EXIT_FAIL, out, rows, len(new),
                                       time.perf_counter() - t0)
            finally:
                results.close()
            progress.finish()
            wall = time.perf_counter() - t0
            if finished and cfg.check_determinism > 0:
                finished, mismatches = _check_determinism(cfg, job, rows, new, jobs, stop, err)
            shrunk: dict[int, dict[str, Any]] = {}
            if finished and cfg.shrink > 0:
                finished = _shrink_failing(cfg, out, rows, jobs, stop, shrunk, err)
        outcome = CampaignOutcome(EXIT_OK, out, rows, len(new), wall, not finished,
                                  mismatches, shrunk)
        _summary(cfg, sc, outcome, jobs, out_stream)
        if outcome.interrupted:
            outcome.code = 128 + stop.signum if stop.signum else EXIT_INTERRUPTED
        elif mismatches or any(_failed(r) or r.get("status") == INFRA
                               for r in rows.values()):
            outcome.code = EXIT_FAIL
        return outcome
    finally:
        if scratch is not None:
            remove_scratch(scratch)
        lock.close()


def _failed(row: dict[str, Any]) -> bool:
    return row.get("verdict") == "fail"


def _shrink_failing(cfg: CampaignConfig, out: Path, rows: Mapping[int, dict[str, Any]],
                    jobs: int, stop: _Interrupt, shrunk: dict[int, dict[str, Any]],
                    err: TextIO) -> bool:
    """``--shrink N``: the first N failing seeds (by seed) with a kept trace, each shrunk
    into its :func:`shrink_folder` unless a ``shrunk.toml`` is there already (a resumed
    campaign, or ``isrlab shrink`` by hand); fills ``shrunk`` by seed. False when stopped."""
    def kept(row: dict[str, Any]) -> Path | None:   # named from another cwd: in DIR/traces
        named = row.get("trace")
        if not isinstance(named, str) or not named:
            return None
        return next((t for t in (Path(named), out / TRACES / Path(named).name)
                     if t.is_file()), None)

    found = {s: kept(rows[s]) for s in sorted(rows) if _failed(rows[s])}
    traces = {s: str(t) for s, t in found.items() if t is not None}
    chosen = sorted(traces)[:cfg.shrink]
    traces = {s: traces[s] for s in chosen}
    todo = []
    for s in chosen:
        toml = shrink_folder(traces[s]) / "shrunk.toml"
        if toml.is_file():
            shrunk[s] = {"seed": s, "folder": str(toml.parent), "toml": str(toml),
                         "earlier": True}
        else:
            todo.append(s)
    if not todo:
        return True
    if not cfg.quiet:
        err.write(f"shrinking {len(todo)} failing seeds (up to {SHRINK_BUDGET} runs each): "
                  f"{', '.join(map(str, todo))}\n")

    def on_result(result: dict[str, Any]) -> None:
        shrunk[result["seed"]] = result

    pool = process_pool(min(jobs, len(todo)))
    return _drive_pool(pool, functools.partial(shrink_seed, traces, SHRINK_BUDGET), todo,
                       2 * jobs, on_result, stop, lambda: None)


def _check_determinism(cfg: CampaignConfig, job: Job, rows: dict[int, dict[str, Any]],
                       new: list[int], jobs: int, stop: _Interrupt, err: TextIO
                       ) -> tuple[bool, list[tuple[int, str, str]]]:
    """Re-run every k-th seed of this invocation in fresh (spawned) processes."""
    k = max(1, round(1 / cfg.check_determinism))
    ran = sorted(s for s in new if rows[s].get("digest"))
    chosen = [s for s in ran if (s - cfg.seeds.start) % k == 0] or ran[:1]
    if not chosen:
        err.write("determinism: no seed was run by this invocation; nothing to compare\n")
        return True, []
    mismatches: list[tuple[int, str, str]] = []

    def on_digest(pair: tuple[int, str]) -> None:
        seed, digest = pair
        if digest != rows[seed]["digest"]:
            mismatches.append((seed, rows[seed]["digest"], digest))

    pool = process_pool(min(jobs, len(chosen)), "spawn")
    finished = _drive_pool(pool, functools.partial(digest_seed, job), chosen, 2 * jobs,
                           on_digest, stop, lambda: None)
    if not finished:
        return False, mismatches
    if mismatches:
        for seed, first, again in sorted(mismatches):
            err.write(f"determinism: FAILED: seed {seed} gave digest {first[:16]}… first and "
                      f"{again[:16]}… in a fresh process: the run is not a function of "
                      f"(scenario, seed, code version); reproduce with: "
                      f"{reproduce_command(cfg.scenario, seed, cfg.overrides)} (twice)\n")
    else:
        err.write(f"determinism: re-ran {len(chosen)} of {len(ran)} seeds (1 in {k}) in "
                  "fresh processes: every digest equal\n")
    return True, mismatches


def _summary(cfg: CampaignConfig, sc: dict[str, Any], o: CampaignOutcome, jobs: int,
             out: TextIO) -> None:
    rows = o.rows
    total = len(cfg.seeds)
    rate = o.ran / o.wall_seconds if o.wall_seconds > 0 else 0.0
    done = sum(1 for r in rows.values() if r.get("status") != INFRA)
    head = (f"campaign {sc['name']} seeds {cfg.seeds.start}:{cfg.seeds.stop - 1}: "
            f"{done}/{total} done")
    if o.interrupted:
        head += " (interrupted: re-run the same command to resume)"
    out.write(head + f"; this run {o.ran} seeds in {o.wall_seconds:.1f} s "
              f"({rate:.2f} seeds/s, {'spark ' + cfg.spark if cfg.spark else f'{jobs} jobs'})\n")
    infra = sorted(s for s, r in rows.items() if r.get("status") == INFRA)
    if infra:
        out.write(f"INFRASTRUCTURE ERRORS: {len(infra)} seeds could not be run or kept "
                  f"(first: seed {infra[0]}: {rows[infra[0]].get('error')}); they are not "
                  "done: re-run the same command to retry them\n")
    failing = sorted(s for s, r in rows.items() if _failed(r))
    by_kind: dict[str, list[int]] = {}
    for s in failing:
        for name in rows[s].get("forbidden_found") or ["run_error"]:
            by_kind.setdefault(name, []).append(s)
    expected = list(sc["expect"]["anomalies"])
    hits = sorted(s for s, r in rows.items() if r.get("digest")
                  and expected and not r.get("missing_expected"))
    out.write(campaign_verdict(rows, done, failing, expected, hits) + "\n")
    if failing:
        for name, seeds in sorted(by_kind.items()):
            out.write(f"  {name:<24} {len(seeds):>6} seeds  (first: "
                      f"{', '.join(map(str, seeds[:5]))})\n")
    if expected:
        out.write(f"expected anomalies ({', '.join(expected)}) reproduced by {len(hits)} seeds"
                  + (f" (first: {', '.join(map(str, hits[:5]))})" if hits else "") + "\n")
    for s in failing[:SHOW_FAILURES]:
        r = rows[s]
        found = ", ".join(f"{k}={v}" for k, v in sorted((r.get("anomalies") or {}).items())
                          if v and k in (r.get("forbidden_found") or []))
        out.write(f"seed {s}: {found or r.get('error') or r.get('status')}"
                  + (f"  trace {r['trace']}" if r.get("trace") else "") + "\n")
        out.write(f"  {reproduce_command(cfg.scenario, s, cfg.overrides)}\n")
    for s, r in sorted(o.shrunk.items()):
        if r.get("error"):
            out.write(f"seed {s}: not shrunk: {r['error']}\n")
            continue
        how = ("shrunk earlier" if r.get("earlier") else
               f"shrunk from {rows[s].get('faults', '?')} to {r.get('faults')} faults in "
               f"{r.get('calls')} runs")
        out.write(f"seed {s}: {how}: {r['toml']}\n")
        out.write(f"  {shlex.join(['isrlab', 'run', r['toml'], '--seed', str(s)])}\n")
    if o.determinism_mismatches:
        out.write(f"DETERMINISM FAILED for seeds "
                  f"{', '.join(str(m[0]) for m in sorted(o.determinism_mismatches))}\n")
    out.write(f"results {o.out_dir / RESULTS} (one row per seed, in completion order)\n")
    out.flush()


def campaign_verdict(rows: Mapping[int, Mapping[str, Any]], done: int, failing: Sequence[int],
                     expected: Sequence[str], hits: Sequence[int]) -> str:
    """The campaign's verdict in the words of :mod:`traces.verdict`: the most serious word
    any seed's data chose, in how many seeds, then whether that was the scenario's rule
    broken (``UNEXPECTED``: seeds with a forbidden anomaly or a run error) or what it
    expected."""
    worst, seeds = "SAFE", 0
    order = [w for w, _ in WORDS]
    for r in rows.values():
        counts = r.get("anomalies")
        if not isinstance(counts, dict):
            continue
        word, _ = data_word(counts)
        if word == "SAFE":
            continue
        if worst == "SAFE" or order.index(word) < order.index(worst):
            worst, seeds = word, 1
        elif word == worst:
            seeds += 1
    head = (f"SAFE in all {done} seeds: {SAFE_PHRASE}" if worst == "SAFE"
            else f"{worst} in {seeds} of {done} seeds")
    if failing:
        return (f"{head} — UNEXPECTED: {len(failing)} seeds broke the scenario's rules "
                "(forbidden anomalies or a run error)")
    if hits:
        return f"{head} — expected: {', '.join(expected)} reproduced by {len(hits)} seeds"
    if worst != "SAFE":
        return f"{head} — allowed by this scenario; no forbidden anomaly"
    return head + "; no forbidden anomaly"


def iter_rows(out_dir: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a campaign directory (any order; keyed by ``seed``)."""
    rows, _ = read_results(Path(out_dir) / RESULTS)
    yield from rows.values()
