"""One SparkSession and one analysed corpus for the whole test run (docs/stack-notes.md, 4.3).

Session: ``local[2]`` (both cores: the corpus is ~1.5M events), UI off, UTC, loopback, and
``session.QUICK_JVM_OPTIONS``: the C1-only JIT with the serial GC (about half of the start-up
and first-query time; the test JVM runs each plan once or twice, so the slower peak code does
not pay back) and a code cache sized explicitly (C1-only mode would reserve 48 MiB, which the
suite could fill: issue 24; ``test_session.py`` asserts the live JVM's value). The JVM writes
to its own log and is watched after every test that uses it (``jvmwatch``): a dead or failing
JVM is one error quoting its reason, and the later Spark tests are skipped. Every test in this
folder is marked ``spark``; run them with ``pytest tests/spark`` or skip them with
``-m "not spark"``.

Corpus (``corpus`` fixture), in a temporary folder:

* the catalog: the regression suite's recorded trace of every ``scenarios/*.toml`` (and its
  three recorded random-nemesis runs), copied from ``tests/regressions``; ``test_regress``
  proves each is byte for byte what its scenario writes today, so running the catalog again
  here would only repeat that work (it was most of this fixture's six minutes);
* ``RANDOM_RUNS`` random-seed runs written during the test session (never committed):
  ``safe-acks-all`` and ``default`` with random nemeses (kill, power loss, partition, pause,
  isolated leader, delay, drop), short runs, across protocol eras, acks and min ISR, so that
  anomalies occur in some of them;
* the hand-built catalogue of ``tracebuild`` (every anomaly expression non-zero somewhere).

The random runs go to a process pool of 2 (``forkserver``), each worker running
``faults.campaign.run_seed`` (the emulator, then ``traces.checker.check_file`` on the trace:
the checker's counts come back with the row). Generation starts when the Spark fixture is
first requested, so it overlaps the JVM start and the small tests. Spark then reads the
whole folder in one load and computes the anomaly table (``analyses.Analysis``) once.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import io
import json
import multiprocessing
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from jvmwatch import MIB, JvmWatch, guard
from pyspark.sql import DataFrame, SparkSession
from tracebuild import Trace, catalogue

from cli.analyze import main
from emulator.scenario import load as load_scenario
from faults.campaign import Job, run_seed
from spark_analysis import analyses as A
from spark_analysis.load import Loaded, load_traces
from spark_analysis.session import QUICK_JVM_OPTIONS
from traces import regress
from traces.checker import check_file
from traces.integrity import seal

ROOT = Path(__file__).resolve().parents[2]
TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.extraJavaOptions": QUICK_JVM_OPTIONS,
}
NEMESES = '["kill","power_loss","partition","pause","isolate_leader","delay","drop"]'
SHORT = ["duration_s=4", "heal_s=20", f"faults.nemesis={NEMESES}", "faults.interval_s=1.5",
         "faults.fault_duration_s=2.0"]
#: (scenario, extra --set values, seeds): 220 random-seed runs.
RANDOM_CONFIGS: list[tuple[str, list[str], range]] = [
    ("safe-acks-all", [], range(1, 41)),
    ("safe-acks-all", ['protocol="0.10"'], range(1, 41)),
    ("safe-acks-all", ['protocol="0.11"', 'producers.acks="1"',
      "producers.enable.idempotence=false"], range(1, 31)),
    ("safe-acks-all", ["topics.min.insync.replicas=1", "faults.budget=false"], range(1, 31)),
    ("default", ['protocol="2.8"'], range(1, 41)),
    ("default", ["topics.unclean.leader.election.enable=true", 'producers.acks="1"',
      "producers.enable.idempotence=false"],
     range(1, 41)),
]
RANDOM_RUNS = sum(len(seeds) for _, _, seeds in RANDOM_CONFIGS)


@dataclass
class Corpus:
    folder: Path
    #: trace path -> the checker's anomalies
    expected: dict[str, dict[str, int]]
    #: trace path -> "catalog" / "random" / "handmade"
    kind: dict[str, str]
    #: trace path -> scenario name (catalog runs)
    scenario: dict[str, str]
    loaded: Loaded
    table: DataFrame
    wide: DataFrame
    generate_s: float
    spark_s: float


_generation: dict[str, Any] = {}


def _start_generation(folder: Path) -> None:
    """Submit every random run to a pool of 2."""
    if _generation:
        return
    pool = cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("forkserver"))
    futures: list[tuple[cf.Future[dict[str, Any]], str, str]] = []
    for i, (name, sets, seeds) in enumerate(RANDOM_CONFIGS):
        sc = load_scenario(name, [*SHORT, *sets])
        job = Job(sc=sc, out_dir=str(folder / "random" / f"{name}-{i}"), keep_all=True)
        futures += [(pool.submit(run_seed, job, s), "random", name) for s in seeds]
    _generation.update(pool=pool, futures=futures, t0=time.perf_counter(), folder=folder)


_watch: list[JvmWatch] = []


@pytest.fixture(scope="session")
def jvm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JvmWatch]:
    """The one test JVM, its output in ``<pytest's temp root>/spark-jvm.log``."""
    log = tmp_path_factory.getbasetemp() / "spark-jvm.log"
    watch = JvmWatch.start(log, app_name="isrlab-tests", conf=TEST_CONF)
    _watch.append(watch)
    yield watch
    watch.stop()  # reads the code cache a last time (the summary line) unless the JVM is dead


@pytest.fixture(scope="session")
def spark(jvm: JvmWatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    _start_generation(tmp_path_factory.mktemp("corpus"))
    yield jvm.spark
    if _generation:
        _generation["pool"].shutdown(cancel_futures=True)


@pytest.fixture(autouse=True)
def _jvm_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used the session: is the JVM still healthy? (``jvmwatch``)."""
    yield from guard(request)


def _jvm_lines() -> list[str]:
    """One line per test JVM: its state, its code cache's peak against what is reserved,
    its log."""
    lines = []
    for watch in _watch:
        cc = watch.last
        figure = (f"code cache peak {cc.peak / MIB:.0f} MiB of {cc.reserved / MIB:.0f} MiB"
                  if cc is not None else "code cache not read")
        state = f"died: {watch.death}" if watch.death else "healthy"
        lines.append(f"Spark test JVM: {state}; {figure}; log {watch.log}")
    return lines


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The JVM's line at the end of a run in one process."""
    for line in _jvm_lines():
        terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist the Spark worker has no terminal: it hands the line to the
    controller (``workeroutput``), which prints it (``tests/conftest.py``)."""
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        output["spark_jvm"] = _jvm_lines()


@pytest.fixture(scope="session")
def corpus(spark: SparkSession) -> Corpus:
    folder: Path = _generation["folder"]
    expected: dict[str, dict[str, int]] = {}
    kind: dict[str, str] = {}
    scenario: dict[str, str] = {}
    for future, k, name in _generation["futures"]:
        row = future.result(timeout=600)
        assert row["trace"], f"{name} seed {row['seed']}: {row.get('error')}"
        trace = str(Path(row["trace"]).resolve())
        expected[trace], kind[trace], scenario[trace] = row["anomalies"], k, name
    _generation["pool"].shutdown()
    (folder / "catalog").mkdir()
    for entry in regress.load_index(regress.DEFAULT_DIR):
        path = folder / "catalog" / entry["file"]
        shutil.copyfile(regress.DEFAULT_DIR / entry["file"], path)
        key = str(path.resolve())
        expected[key] = check_file(path).anomalies
        kind[key] = "catalog" if entry["kind"] == "catalog" else "recorded"
        scenario[key] = entry["scenario"]
    for i, (name, trace) in enumerate(sorted(catalogue().items())):
        suffix = ".jsonl.gz" if i % 3 == 1 else ".jsonl"
        (folder / "handmade").mkdir(exist_ok=True)
        path = trace.write(folder / "handmade" / f"{name}{suffix}", end=name != "healthy")
        key = str(path.resolve())
        expected[key], kind[key], scenario[key] = check_file(path).anomalies, "handmade", name
    # a run traced with its messages (isrlab run --trace-messages): Spark reads the extra
    # msg_send / msg_recv lines and agrees with the checker all the same
    from emulator.cluster import run
    traced = folder / "messages" / "s13-with-messages.jsonl"
    traced.parent.mkdir(exist_ok=True)
    run(load_scenario("s13-kafka13141-diverging-fetch-hw"), 1, str(traced), trace_messages=True)
    key = str(traced.resolve())
    expected[key], kind[key], scenario[key] = check_file(traced).anomalies, "messages", "s13"
    generate_s = time.perf_counter() - _generation["t0"]
    t0 = time.perf_counter()
    loaded = load_traces(spark, [str(folder)])  # one read of the whole folder
    analysis = A.Analysis(loaded)
    table, wide = analysis.table(), analysis.wide()
    analysis.unpersist()
    return Corpus(folder, expected, kind, scenario, loaded, table, wide, generate_s,
                  time.perf_counter() - t0)


@dataclass
class Run:
    """One ``isrlab analyze --json --out`` over a folder of good and damaged traces."""

    folder: Path
    out: Path
    code: int
    report: dict[str, Any]
    stderr: str
    paths: dict[str, Path]


@pytest.fixture(scope="session")
def bad_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Run:
    folder = tmp_path_factory.mktemp("bad") / "traces"
    folder.mkdir()
    cat = catalogue()
    ok = cat["s8_unclean"].write(folder / "ok.jsonl")
    damaged = cat["lost_acks_all"].write(folder / "damaged.jsonl")
    lines = damaged.read_bytes().splitlines(keepends=True)
    lines[2] = b"this is not json\n"
    lines[4] = lines[4].replace(b'"ts_us":', b'"ts_us": ')  # crc no longer matches
    damaged.write_bytes(b"".join(lines))
    big = Trace()
    for i in range(3000):
        big.at(i / 100).send(f"v{i}").hw(0, i, i + 1).ack(f"v{i}", i)
    cut = big.write(folder / "cut.jsonl.gz")
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) * 2 // 3])  # the gzip stream ends early
    schema2 = folder / "schema2.jsonl"
    ev = [orjson.loads(raw[: raw.rindex(b',"crc":')] + b"}")
          for raw in ok.read_bytes().splitlines()]
    ev[0]["schema"] = 2
    schema2.write_bytes(b"".join(seal(orjson.dumps(e)) for e in ev))
    (folder / "notes.txt").write_text("not a trace")  # ignored: not *.jsonl
    # the --out of a previous analysis that was killed while it wrote a dataset: its
    # marker, and the dataset's scratch folder (dataset_out), which this run sweeps
    previous = folder.parent / "analysis"
    (previous / ".isrlab-scratch-killed").mkdir(parents=True)
    (previous / ".isrlab-scratch-killed" / "part-00000.snappy.parquet").write_bytes(b"PAR1")
    (previous / "analysis.json").write_text('{"isrlab": "analyze", "complete": false}\n')
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(folder), "--json", "--out", str(previous)])
    paths = {"ok": ok, "damaged": damaged, "cut": cut, "schema2": schema2}
    return Run(folder, folder.parent / "analysis", code, json.loads(out.getvalue()), err.getvalue(),
               {k: p.resolve() for k, p in paths.items()})
