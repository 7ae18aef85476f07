"""Building the SparkSession for trace analytics: local by default, any cluster by URL.

Rules (docs/stack-notes.md, sections 4.1-4.2, measured on pyspark 4.3):

* No master given and nothing in the environment chooses one (``SPARK_REMOTE``, a running
  spark-submit) → ``local[*]`` with the small-machine profile: shuffle partitions = 2 × cores,
  file splits ≥ 4 × cores, UI off, UTC session time zone, every listener on loopback, a
  driver heap of a third of the machine's memory (2-8 GiB), room for 1,000 generated
  classes (``CODEGEN_CACHE_ENTRIES``) named so that an analysis run again finds them
  (``STABLE_CODE``), the parallel collector (``LOCAL_JVM_OPTIONS``), Arrow's per-access
  checks off (``ARROW_JVM_OPTIONS``), and the driver's planning code kept out of C2
  (``C1_ONLY_CODE``).
* ``--master local[...]`` → that master with the same profile.
* a local session for small inputs (``input_bytes`` at most ``SMALL_INPUT_BYTES``: ``isrlab
  analyze`` of one trace, ``make demo``) → the same profile with ``SMALL_INPUT``: the JVM
  options of the test suite (``QUICK_JVM_OPTIONS``) and small Tungsten pages, measured on
  ``make demo``'s trace (``SMALL_INPUT``'s note).
* ``--master sc://host:port`` → Spark Connect via ``builder.remote``; nothing local is set.
* any other URL (``spark://``, ``yarn``, ``k8s://``) → ``.master(URL)`` and nothing sized for
  this machine: the cluster's defaults and spark-submit flags decide.

A master hard-coded in code beats spark-submit's ``--master``, so code never sets one unless
the user asked. With no master given, an already active session (a notebook, the test
fixture) is returned as it is. ``conf`` adds or overrides settings (the test fixture and
``campaign --spark`` pass ``QUICK_JVM_OPTIONS``).

The JIT's code cache (issue 24). ``-XX:TieredStopAtLevel=1`` makes HotSpot size the code
cache as for a non-tiered VM: 48 MiB instead of 240. Spark generates and loads classes for
every query plan, so a long session fills 48 MiB; HotSpot then disables the compiler and,
at the next adapter it needs, throws ``VirtualMachineError: Out of space in CodeCache for
adapters``, which kills the session. ``QUICK_JVM_OPTIONS`` therefore sizes the cache
explicitly (so does ``SMALL_INPUT``, which takes them). ``isrlab analyze``'s session for a
large input keeps the JVM's tiered default (240 MiB, segmented); ``code_cache`` reads the
live figures so the bench can report the margin.

The analysis code uses DataFrames only — no RDDs, no ``sparkContext`` outside the guarded
``setLogLevel`` — so it runs unchanged under Connect.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pyspark.sql import SparkSession

from spark_analysis.class_archive import with_archive

#: The code cache ``QUICK_JVM_OPTIONS`` reserves, MiB (the tiered default is 240). The test
#: suite's C1-only session peaks far below it (the figure is printed after every test run).
CODE_CACHE_MIB = 256

APP_NAME = "isrlab-analyze"

#: Arrow's Java library without its per-access checks, for every driver JVM started here
#: (``QUICK_JVM_OPTIONS``, ``LOCAL_JVM_OPTIONS``). The native scan's rows reach the JVM as
#: Arrow batches, and Spark reads each value of each through ``ArrowColumnVector``: by
#: default every read checks the buffer's bounds and reference count (``ArrowBuf``), and
#: every ``get`` the value's null bit again, after Spark has already asked ``isNullAt``.
#: The batches are the stream the scan's pyarrow wrote, in the schema Spark declared for
#: it (``mapInArrow`` checks each batch's). Measured on 10M events (2026-11-28, the scan
#: into rows, two sessions each way, the JVM's own CPU): 8.2-9.3 CPU s without, 5.0-5.7
#: with (the scan's wall 18-19 s against 14-16 s; ``docs/performance.md``). Read once,
#: when Arrow's classes load: a startup option, not a setting of a running session.
ARROW_JVM_OPTIONS = ("-Darrow.enable_unsafe_memory_access=true "
                     "-Darrow.enable_null_check_for_get=false")

#: The C1-only JIT and the serial GC (about half of Spark's start-up and first-query time,
#: docs/stack-notes.md, section 4.3) for JVMs that run each plan once or twice or mostly
#: schedule tasks, with the code cache sized explicitly: without it C1-only mode reserves
#: 48 MiB, which a long session fills (see the module note).
QUICK_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1 -XX:+UseSerialGC "
                     f"-XX:ReservedCodeCacheSize={CODE_CACHE_MIB}m {ARROW_JVM_OPTIONS}")


#: The local driver's JVM (JDK 17): the parallel collector, not G1. Tungsten's 64 MiB pages
#: are humongous objects to G1, which never moves them: once the in-memory cache and earlier
#: pages have cut the old generation into pieces, a new page finds no run of free regions
#: however much room the heap has, and every try is a full GC. Seen on the third pass over
#: 10M events in one session (bench/spark.py, 2026-11-27 13:20: both tasks of a sort stuck
#: in ``HeapMemoryAllocator.allocate``, 1,000 full GCs, 430 s of GC, old generation 66 %
#: full). Earlier the same day a pass had failed instead with AGGREGATE_OUT_OF_MEMORY: an
#: allocation that found the GC locker held (a JNI critical section: the compression
#: codecs of the in-memory cache) gave up after 2 tries (JDK-8192647, fixed in JDK 20;
#: "Retried waiting for GCLocker too often allocating 8388608 words"). The parallel
#: collector compacts the whole heap in a full GC, so a page fits whenever the heap has
#: room for it, and the retry count lets the locker be released first. Measured the same
#: speed as G1 (a warm pass 140.8 s against 141.7–144.9 s, 2026-11-27). A JVM that does not
#: know the retry flag (JDK 22 replaced the locker, later JDKs drop the flag) ignores it
#: rather than refusing to start.
LOCAL_JVM_OPTIONS = ("-XX:+UseParallelGC -XX:+IgnoreUnrecognizedVMOptions "
                     "-XX:+UnlockDiagnosticVMOptions "
                     f"-XX:GCLockerRetryAllocationCount=100 {ARROW_JVM_OPTIONS}")


#: Driver-side code that HotSpot's optimizing compiler (C2) is kept away from in
#: ``isrlab analyze``'s local driver (``keep_driver_code_out_of_c2``): class-name prefixes of
#: code that plans, compiles and reports queries — Janino (which compiles Spark's generated
#: classes), Catalyst's analyzer, optimizer, rules and plan trees, Py4J and Pyrolite (the
#: Python bridge), json4s and the SQL listener's plan graphs — never the code that runs per
#: row (Catalyst's expressions, the generated classes, execution, Jackson: the JSON reader's
#: tokenizer, which parses the side lines). Such code runs a few thousand times per query
#: plan, so it reaches C2's thresholds late, a few methods at a time, and a warm pass kept
#: paying C2 for it: in a third pass over 10M events C2 spent 22 s, 4.4 s of it on the
#: planner's packages and 1.6 s on Janino (2026-11-28, ``-XX:+LogCompilation``; in the
#: second pass Janino's share was 5.0 s of 34.4 s). Kept out of C2, it stays at C1's
#: full-speed tier. Measured the same day (three sessions of three
#: passes each way): the JVM's compilation time in the first two warm passes 22.2/12.9,
#: 28.0/13.6 and 31.5/14.3 s against 30.3/16.8, 30.6/24.0, 28.6/18.3 and 36.2/19.9 s — a
#: quarter to a third less for the machine's speed at the time — and the CPU outside the
#: compiler no higher (``docs/performance.md``); the cold pass's compilation no higher.
C1_ONLY_CODE: Final = (
    "org/codehaus/",
    "org/apache/spark/sql/catalyst/analysis/",
    "org/apache/spark/sql/catalyst/optimizer/",
    "org/apache/spark/sql/catalyst/rules/",
    "org/apache/spark/sql/catalyst/trees/",
    "org/apache/spark/sql/catalyst/plans/",
    "org/apache/spark/sql/execution/ui/",
    "py4j/",
    "net/razorvine/",
    "org/json4s/",
)
#: The JVM system property that says ``C1_ONLY_CODE``'s directive is installed.
_C1_ONLY_MARK: Final = "isrlab.c1-only-code"


#: Generated classes Spark keeps compiled (``spark.sql.codegen.cache.maxEntries``, a static
#: setting; Spark's default is 100). One ``isrlab analyze --out`` pass compiles about 480
#: pieces of generated code (about 1,000 classes: Spark's own counters, 10M-event bench), so
#: with 100 the cache is an LRU too small for one pass: every later pass over the same plans
#: compiled all of them again with Janino, and HotSpot, their code being new classes,
#: JIT-compiled all of them again: 31.7-42.5 s of compiler threads in a warm pass of 84-90 s
#: on two cores. With room for two passes a warm pass compiles 10 pieces and the JIT's time
#: drops to 19.6 s (2026-11-27, ``bench/spark.py``'s corpus; ``docs/performance.md``). Kept
#: classes keep their JIT code too: after three 10M passes the code cache held 77 MiB of 240,
#: as with 100 entries (issue 24's margin).
CODEGEN_CACHE_ENTRIES: Final = 1000


#: Settings that keep a query's generated code the same text from one analysis to the next,
#: so that the codegen cache (``CODEGEN_CACHE_ENTRIES``) finds it; for any driver that runs
#: analyses, local or not (they change no result). A whole-stage class is named after its
#: stage's number, which comes from a per-thread counter (``WholeStageCodegenId``); under
#: adaptive execution, which plans stages as they become ready, it depends on what was
#: planned before: the same stage of the same plan was
#: ``GeneratedIteratorForCodegenStage3`` in one pass and ``...Stage1`` in the next, new source
#: text each time, so compiled by Janino again and JIT-compiled again from the interpreter
#: up. In a first warm pass over 4 of the bench's traces, 24 of the 34 sources compiled
#: were such renamings (2026-11-28, Spark's generated code logged at DEBUG;
#: ``docs/performance.md``). Without the number the name is
#: ``GeneratedIteratorForCodegenStage``: stack traces lose the stage's number, nothing
#: else. (The analyses' lambda variables, the other varying name in the code, are written
#: in their SQL statements with fixed names.)
STABLE_CODE: Final = {"spark.sql.codegen.useIdInClassName": "false"}


#: Inputs of at most this many bytes (the local files an analysis reads) get ``SMALL_INPUT``
#: in a local session. ``make demo``'s trace is 4.5 MB; a trace of the bench's campaign
#: (about 600k events) is about 125 MB and keeps the large-input profile, as do URIs (their
#: size is not known before the session starts).
SMALL_INPUT_BYTES: Final = 64 << 20

#: The local profile's changes for small inputs, each with its measured reason (2026-11-29,
#: ``isrlab analyze`` of ``make demo``'s trace, 21,933 lines, 4.5 MB, ``--out``: each
#: configuration in a fresh process, JVM start included, CPU = Python's rusage + the driver
#: JVM and its descendants from ``/proc``; the machine shared, so CPU is the figure to
#: trust; ``bench/analyze.py`` measures the whole):
#:
#: * ``spark.driver.extraJavaOptions`` = ``QUICK_JVM_OPTIONS`` (the C1-only JIT, the serial
#:   collector): on so small an input the run is start-up, planning and code generation, and
#:   the large-input JVM spent about a third of its CPU in C2's compiler threads (27.8 s of
#:   ~75, compiling Spark's classes for a run that ends before the code pays back) and 10 s
#:   in the parallel collector's threads. 71.3 and 71.7 CPU s with the large-input options
#:   against 48.3 and 47.8 with these (alternating, two rounds: -33 %; wall 87.6-129.9 s
#:   against 56.9-69.7 s on a loaded machine). C2's code matters on a large input (the
#:   10M-event bench's passes), so it stays there.
#: * ``spark.buffer.pageSize`` = 2 MiB. Spark's default is the execution memory over the
#:   cores and 16, a power of two, at most 64 MiB: 64 MiB on this heap, and every hash
#:   aggregate and sort task takes a page at its first row, so the analysis' few hundred
#:   small tasks allocated 64 MiB each: 45 collector pauses, 6 of them full, the heap grown
#:   to 3 GiB. With 2 MiB pages: short young pauses only, the heap at most 465 MiB, the
#:   collector's thread 1.8 s instead of 3.4-3.9 s; 41.4, 41.2 and 38.9 CPU s against 45.0,
#:   46.3 and 43.3 (-5 to -10 %; a record larger than a page gets a page of its size, so
#:   no result depends on it).
#: * ``spark.sql.codegen.wholeStage`` = false and ``spark.sql.codegen.factoryMode`` =
#:   ``NO_CODEGEN``: expressions and operators interpreted, nothing compiled by Janino (then
#:   by the JIT) — about 480 pieces of generated code per analysis, each compiled once for a
#:   few thousand rows. 35.9 and 35.8 CPU s against 41.2 and 38.9 with the two above alone
#:   (-12 %; whole-stage code generation off alone: 40.7 and 39.3, nothing gained, as the
#:   expressions were still compiled). ``factoryMode`` is an internal setting (Spark's
#:   ``SQLConf``: "only for the internal usage"; its own tests run every expression both
#:   ways with it): the outputs were compared — the same ``--json`` and the same rows,
#:   schemas, Spark row metadata and file counts in every Parquet view, on the demo's trace
#:   and on the 31 traces of ``tests/regressions`` in one analysis.
SMALL_INPUT: Final = {
    "spark.driver.extraJavaOptions": QUICK_JVM_OPTIONS,
    "spark.buffer.pageSize": "2m",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def small_input(input_bytes: int | None) -> bool:
    """Whether a local session for ``input_bytes`` (None: not known) takes ``SMALL_INPUT``."""
    return input_bytes is not None and 0 <= input_bytes <= SMALL_INPUT_BYTES


def local_profile(cores: int | None = None, *, small: bool = False) -> dict[str, str]:
    """Settings for a small local machine (docs/stack-notes.md, section 4.1); ``small``: for a
    small input too (``SMALL_INPUT``)."""
    n = cores if cores is not None else (os.cpu_count() or 2)
    return {
        "spark.sql.shuffle.partitions": str(2 * n),
        # a few large .jsonl.gz (not splittable) would be read by fewer tasks than cores
        "spark.sql.files.minPartitionNum": str(4 * n),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": f"{driver_memory_gib()}g",
        "spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS,
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        # the cached events as plain columns: gathering the compression statistics of every
        # string value (a hash lookup each) cost more CPU than the load's shuffle; the
        # memory is there locally (10M events; a larger load spills to disk, MEMORY_AND_DISK)
        # — cache build 20.2 -> 8.4-12.1 s, load 62.1 -> 49.9-57.8 s (bench/spark.py corpus)
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # generated classes kept for a whole analysis and the next (see CODEGEN_CACHE_ENTRIES)
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        **STABLE_CODE,
        **(_small_input() if small else {}),
    }


def _small_input() -> dict[str, str]:
    """``SMALL_INPUT``, its JVM mapping the driver's class archive when there is one
    (``class_archive``: made by ``make demo``, keyed by the JDK, Spark and these options)."""
    return {**SMALL_INPUT, "spark.driver.extraJavaOptions": with_archive(QUICK_JVM_OPTIONS)}


def driver_memory_gib() -> int:
    """The local driver's heap: a third of the machine's memory, between 2 and 8 GiB (the
    events of a 10M-event campaign are about 2 GiB in memory; in local mode the driver is
    the executor too)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: assume a small machine
        return 2
    return max(2, min(8, total // 3 // (1 << 30)))


#: the ports Spark's master URLs mean when they name none
_DEFAULT_PORTS: Final = {"spark": 7077, "sc": 15002}


def unreachable_master(master: str | None, timeout_s: float = 5.0) -> str | None:
    """Why a ``spark://`` or ``sc://`` master cannot be reached (no host of the URL accepts
    a TCP connection within ``timeout_s``), or None. Spark itself would retry for a minute
    and end in a page of Java; other forms (local, yarn, k8s) are not probed."""
    if master is None or "://" not in master:
        return None
    scheme, _, rest = master.partition("://")
    if scheme not in _DEFAULT_PORTS:
        return None
    hosts = rest.split("/", 1)[0].split(";", 1)[0].split(",")
    reasons = []
    for h in hosts:
        host, colon, port = h.rpartition(":")
        if not colon or not port.isdigit():
            host, port = h, str(_DEFAULT_PORTS[scheme])
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return None
        except OSError as exc:
            reasons.append(f"{host}:{port}: {exc.strerror or exc}")
    return "cannot reach the master (" + "; ".join(reasons) + ")"


def build_session(
    master: str | None = None,
    *,
    app_name: str = APP_NAME,
    conf: Mapping[str, str] | None = None,
    input_bytes: int | None = None,
) -> SparkSession:
    """A SparkSession for ``master`` (see the module doc for what each form means).
    ``input_bytes``: the size of the local files the session is for, when known (a local
    session for at most ``SMALL_INPUT_BYTES`` takes ``SMALL_INPUT``)."""
    extra = dict(conf or {})
    active = SparkSession.getActiveSession()
    if master is None and active is not None:
        return active  # e.g. a notebook or the test fixture: never reconfigure it
    builder = SparkSession.builder.appName(app_name)
    local = False  # a driver JVM started here with the local profile
    if master is not None and master.startswith("sc://"):
        builder = builder.remote(master)
        settings: dict[str, str] = {}
    elif master is not None and not master.startswith("local"):
        builder = builder.master(master)
        settings = {"spark.sql.session.timeZone": "UTC", **STABLE_CODE}
    elif master is None and _chosen_by_environment():
        settings = {"spark.sql.session.timeZone": "UTC", **STABLE_CODE}
    else:
        builder = builder.master(master or "local[*]")
        settings = local_profile(small=small_input(input_bytes))
        local = True
        # the Python workers (the native scan) run this interpreter, with its packages
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings.update(extra)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    _quiet(spark)
    if local and "TieredStopAtLevel" not in settings["spark.driver.extraJavaOptions"]:
        keep_driver_code_out_of_c2(spark)  # a C1-only JVM (the test suite's) has no C2
    return spark


def keep_driver_code_out_of_c2(spark: SparkSession) -> str:
    """Installs, once per JVM, a compiler directive that excludes ``C1_ONLY_CODE`` from C2 in
    the session's driver JVM (HotSpot then compiles it at C1's full-speed tier), through the
    JVM's ``Compiler.directives_add`` diagnostic command — at run time, so the JVM prints
    nothing of it and starts with no extra flag. Returns the JVM's answer ("1 compiler
    directives added"), or why not: a JVM without the command or without the session's
    driver here (Spark Connect) keeps its JIT as it is, which changes speed, not results."""
    try:
        sc = spark.sparkContext
        jvm: Any = sc._jvm  # noqa: SLF001 - the documented py4j entry points
        gateway: Any = sc._gateway  # noqa: SLF001
        system = jvm.java.lang.System
        if system.getProperty(_C1_ONLY_MARK) is not None:
            return "already installed"
        directive = json.dumps([{"match": [f"{prefix}*.*" for prefix in C1_ONLY_CODE],
                                 "c2": {"Exclude": True}}])
        with tempfile.TemporaryDirectory(prefix="isrlab-jit-") as folder:
            path = Path(folder) / "directives.json"
            path.write_text(directive, encoding="utf-8")
            answer = _diagnostic_command(jvm, gateway, "compilerDirectivesAdd", str(path))
        if "added" in answer:
            system.setProperty(_C1_ONLY_MARK, "1")
        return answer.strip()
    except Exception as exc:  # noqa: BLE001 - Connect, another JVM, py4j: speed only
        return f"not installed: {type(exc).__name__}"


def _diagnostic_command(jvm: Any, gateway: Any, operation: str, *args: str) -> str:
    """A HotSpot diagnostic command (``jcmd``'s, by its MBean operation name) run in the
    session's own JVM, and its output. Called through the exported ``MBeanServerConnection``
    interface: Py4J finds no ``invoke`` on the platform server's own (unexported) class."""
    Class = jvm.java.lang.Class

    def array(of: Any, items: list[Any]) -> Any:
        out = gateway.new_array(of, len(items))
        for i, item in enumerate(items):
            out[i] = item
        return out

    invoke = Class.forName("javax.management.MBeanServerConnection").getMethod(
        "invoke", array(jvm.java.lang.Class, [
            Class.forName(n) for n in ("javax.management.ObjectName", "java.lang.String",
                                       "[Ljava.lang.Object;", "[Ljava.lang.String;")]))
    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    name = jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand")
    params = array(jvm.java.lang.Object, [array(jvm.java.lang.String, list(args))])
    signature = array(jvm.java.lang.String, ["[Ljava.lang.String;"])
    return str(invoke.invoke(server, array(jvm.java.lang.Object,
                                           [name, operation, params, signature])))


@dataclass(frozen=True)
class CodeCache:
    """The live JIT code cache of a classic session's driver JVM, bytes (every code heap
    added up: one heap when the cache is not segmented, three when it is)."""

    used: int
    peak: int
    reserved: int


def code_cache(spark: SparkSession) -> CodeCache:
    """The driver JVM's code cache now (py4j: the JVM's memory pool beans). Classic sessions
    only: a Connect session has no JVM here (raises)."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the documented py4j entry point
    if jvm is None:
        raise RuntimeError("this session has no driver JVM here (stopped, or Spark Connect)")
    used = peak = reserved = 0
    for pool in jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans():
        name = str(pool.getName())
        if name == "CodeCache" or name.startswith("CodeHeap"):
            used += int(pool.getUsage().getUsed())
            peak += int(pool.getPeakUsage().getUsed())
            reserved += int(pool.getUsage().getMax())
    return CodeCache(used, peak, reserved)


def _chosen_by_environment() -> bool:
    """True when spark-submit, ``SPARK_REMOTE`` or ``PYSPARK_SUBMIT_ARGS`` picks the master."""
    if os.environ.get("SPARK_REMOTE") or os.environ.get("SPARK_CONNECT_MODE_ENABLED"):
        return True
    return "--master" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def _quiet(spark: SparkSession) -> None:
    """ERROR-level logs on classic Spark; a no-op under Connect (no sparkContext there)."""
    try:
        spark.sparkContext.setLogLevel("ERROR")
    except Exception:  # noqa: BLE001 - Connect raises a variety of "not supported" errors
        pass


#: what ``--master`` may be: local[N] / local[*], a standalone cluster, Spark Connect, YARN,
#: Kubernetes (Spark's own master URL forms)
MASTER_URL: Final = re.compile(
    r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://[^/\s]+(:\d+)?(,[^/\s]+(:\d+)?)*"
    r"|sc://[^\s]+|yarn|k8s://[^\s]+)$")


def master_problem(master: str | None) -> str | None:
    """What is wrong with ``--master`` (not a master URL; a cluster that does not answer),
    found before Spark starts; None when nothing is."""
    if master is not None and not MASTER_URL.match(master):
        return (f"--master {master!r}: not a Spark master URL (local[N], local[*], "
                f"spark://HOST:PORT, sc://HOST:PORT, yarn, k8s://...)")
    unreachable = unreachable_master(master)
    return f"--master {master}: {unreachable}" if unreachable else None


def open_session(master: str | None, input_bytes: int | None = None) -> SparkSession | str:
    """The session for ``--master``, or the one line saying why the master refused it (a
    local session that cannot start is a defect: its error propagates). ``input_bytes``: as
    for ``build_session``."""
    try:
        return build_session(master, input_bytes=input_bytes)
    except Exception as exc:  # py4j / Spark Connect errors: the master refused the session
        if master is None or master.startswith("local"):
            raise
        return (f"--master {master}: Spark could not start a session there "
                f"({java_reason(exc)})")


def java_reason(exc: BaseException) -> str:
    """The one line of a Java error that says what went wrong (``: java.lang.X: why``)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith(": "):
            return ln[2:]
    return lines[0] if lines else type(exc).__name__
