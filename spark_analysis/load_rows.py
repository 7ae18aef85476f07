"""What a load is made of: the rows' schemas and partitioning, one problem (``BadLine``) and
the result (``Loaded``).

The columns every path of ``load`` produces and every analysis reads: ``TRACE_SCHEMA`` (a
side line in full), ``LINE_SCHEMA`` (what the careful parse reads of every line),
``EVENT_COLUMNS`` / ``EVENT_SCHEMA`` (``Loaded.events``), ``TRACES_SCHEMA`` (``Loaded.traces``)
and ``SCENARIO_SCHEMA`` (the parts of ``run_start.scenario`` the analyses parse); with them
``PARTITION_KEY`` and ``partition_events``, which lay out events and side lines alike (so a
union of both keeps the partitioning), and ``LEVEL``, how the rows are kept. ``BadLine`` is
one problem, placed on its file's 1-based line, with what was done about it
(``LINE_SKIPPED``, ``TRACE_SKIPPED``, ``TAIL_LOST``); ``Loaded`` is what
``load.load_traces`` hands the analyses, and ``swap_key`` the broadcast join that swaps a
trace's id for its path and back. Nothing here reads a file: the other ``load_*`` modules
build on these names, and ``load``'s notes tell how the rows are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis import scan

_S, _L, _I = T.StringType(), T.LongType(), T.IntegerType()

#: The columns every analysis partitions by; the events DataFrame is hash-partitioned by them.
#: ``tid`` is the trace's id in this load (``Loaded.traces`` maps it to the path): an int, so
#: that no row carries the path and no sort compares paths.
PARTITION_KEY: Final = ("tid", "topic", "partition")
#: How the parsed rows are kept: columnar batches in memory, as objects (no serialisation on
#: every read), spilling to disk only if memory runs out.
LEVEL: Final = StorageLevel.MEMORY_AND_DISK_DESER

#: The bulk event types (``events``) and the side lines (``side``): one list, the scan's.
HOT_EVENTS, SIDE_EVENTS = scan.HOT_EVENTS, scan.SIDE_EVENTS

#: The full flat trace row (the fields any analysis reads, in traces.schema order): ``side``.
TRACE_SCHEMA = T.StructType(
    [T.StructField(n, t) for n, t in [
        ("seq", _L), ("ts_us", _L), ("event", _S), ("node", _S),
        # run_start / run_end / run-level
        ("schema", _S), ("seed", _L), ("scenario", _S), ("protocol", _S), ("status", _S),
        ("events", _L), ("fault", _S),
        # replica state and controller
        ("topic", _S), ("partition", _I), ("replica", _I), ("old", _S), ("new", _S),
        ("reason", _S), ("role", _S), ("log_start_offset", _L), ("hw", _L), ("leo", _L),
        ("leader", _I), ("leader_epoch", _I), ("isr", T.ArrayType(_I)),
        ("new_leo", _L), ("election", _S),
        # clients
        ("value", _S), ("producer", _L), ("acks", _S), ("offset", _L),
        ("group", _S), ("consumer", _S), ("partitions", T.ArrayType(_I)),
        ("commit_id", _L), ("requested_us", _L),
        # end of run
        ("records", T.ArrayType(T.ArrayType(_S))), ("converged", T.BooleanType()),
    ]]
)
_HOT_FIELDS: Final = ("seq", "ts_us", "event", "schema", "topic", "partition", "replica", "old",
                      "new", "role", "reason", "value", "producer", "acks", "offset", "hw",
                      "group", "consumer")
#: What the one pass over the JSON parses: the fields of the bulk events (and line 1's schema).
LINE_SCHEMA = T.StructType([f for f in TRACE_SCHEMA.fields if f.name in _HOT_FIELDS])
#: The columns of ``Loaded.events``.
EVENT_COLUMNS: Final = ("tid", "topic", "partition", "seq", "ts_us", "event", "replica",
                        "old_n", "new_n", "role", "reason", "value", "producer", "acks",
                        "offset", "hw", "group", "consumer")
_TYPES: Final = {"tid": _I, "trace": _S, "old_n": _L, "new_n": _L,
                 **{f.name: f.dataType for f in TRACE_SCHEMA.fields}}
#: The schema of ``Loaded.events``.
EVENT_SCHEMA = T.StructType([T.StructField(c, _TYPES[c]) for c in EVENT_COLUMNS])
#: ``EVENT_COLUMNS`` keyed by the trace's path, as the JVM paths read them before ``_tids``.
_PATH_COLUMNS: Final = ("trace", *EVENT_COLUMNS[1:])
#: What the JSON source parses of a clean file's hot lines.
_HOT_SCHEMA = T.StructType([f for f in LINE_SCHEMA.fields if f.name != "schema"])
_HOT_ONLY: Final = ("replica", "role", "reason", "value", "producer", "acks", "offset", "hw",
                    "group", "consumer")

_TOPIC_SCHEMA = T.StructType([
    T.StructField("name", _S),
    T.StructField("partitions", _I),
    T.StructField("replication.factor", _I),
    T.StructField("min.insync.replicas", _I),
    T.StructField("unclean.leader.election.enable", T.BooleanType()),
])
_PRODUCER_SCHEMA = T.StructType([
    T.StructField("topic", _S), T.StructField("acks", _S),
    T.StructField("enable.idempotence", T.BooleanType()), T.StructField("retries", _L),
    T.StructField("max.in.flight.requests.per.connection", _I),
])
#: The parts of run_start.scenario the analyses read.
SCENARIO_SCHEMA = T.StructType([
    T.StructField("name", _S),
    T.StructField("protocol", _S),
    T.StructField("bugs", T.ArrayType(_S)),
    T.StructField("topics", T.ArrayType(_TOPIC_SCHEMA)),
    T.StructField("producers", T.ArrayType(_PRODUCER_SCHEMA)),
    T.StructField("expect", T.MapType(_S, T.ArrayType(_S))),
    #: true in a trace read from Kafka's logs (isrlab import)
    T.StructField("imported", T.BooleanType()),
])

_CORRUPT: Final = "not a schema-1 JSON object: the line is damaged"
_CRLF: Final = ("ends with CR LF: the file's line endings were converted; isrlab traces end "
                "lines with LF only")
#: What happened to the input named by a problem.
LINE_SKIPPED: Final = "line skipped"
TRACE_SKIPPED: Final = "trace skipped"
TAIL_LOST: Final = "tail lost"
#: The schema of ``Loaded.traces``.
TRACES_SCHEMA: Final = "tid int, trace string, events long, end_us long"


@dataclass(frozen=True)
class BadLine:
    """Something wrong in one trace, located to its 1-based line: reported, never dropped.

    ``action`` says what the analysis did about it: ``LINE_SKIPPED`` (the line is left out),
    ``TRACE_SKIPPED`` (the whole file is left out) or ``TAIL_LOST`` (the lines read are
    analysed, the trace's end is missing).
    """

    trace: str
    line: int
    problem: str
    text: str = ""
    action: str = LINE_SKIPPED

    def __str__(self) -> str:
        return f"{self.trace}:{self.line}: {self.problem} ({self.action})"


@dataclass(frozen=True)
class Loaded:
    """The good rows of every analysed trace plus everything that was skipped, and why."""

    #: The good ``HOT_EVENTS`` lines (``EVENT_COLUMNS``), partitioned by ``PARTITION_KEY``,
    #: persisted.
    events: DataFrame
    #: The ``SIDE_EVENTS`` lines: ``tid`` + ``TRACE_SCHEMA``, same partitioning, persisted.
    side: DataFrame
    #: Per analysed trace: tid, trace (its path), events (good lines), end_us (largest
    #: ts_us). Small.
    traces: DataFrame
    problems: list[BadLine]
    files: list[str]
    #: The persisted DataFrames behind ``events`` and ``side`` (``unpersist`` drops them).
    caches: tuple[DataFrame, ...] = ()
    #: How many hash partitions ``events`` and ``side`` have (a union of rows of both keeps
    #: the partitioning only if the counts are equal).
    partitions: int = 0

    def unpersist(self) -> None:
        """Free the cached rows (the next analysis re-reads the input)."""
        for df in self.caches:
            df.unpersist()

    def named(self, df: DataFrame) -> DataFrame:
        """``df`` with its ``tid`` column replaced, in place, by ``trace`` (the path): what a
        view shows."""
        return swap_key(df, self.traces, "tid", "trace")

    def paths(self) -> dict[int, str]:
        """tid → the trace's path (collected from ``traces``)."""
        return {int(r["tid"]): r["trace"] for r in self.traces.select("tid", "trace").collect()}

    @property
    def bad_lines(self) -> list[BadLine]:
        """Single lines left out (the rest of their trace was analysed)."""
        return [p for p in self.problems if p.action == LINE_SKIPPED]

    @property
    def skipped_traces(self) -> list[str]:
        return [p.trace for p in self.problems if p.action == TRACE_SKIPPED]

    @property
    def analysed_files(self) -> list[str]:
        skipped = set(self.skipped_traces)
        return [f for f in self.files if f not in skipped]


def partition_events(df: DataFrame, partitions: int | None = None) -> DataFrame:
    """``df`` hash-partitioned by ``PARTITION_KEY`` into ``partitions`` (default: 2 × the
    default parallelism)."""
    return df.repartition(partitions or _default_partitions(df.sparkSession), *PARTITION_KEY)


def _default_partitions(spark: SparkSession) -> int:
    """2 × the default parallelism; under Spark Connect (no ``sparkContext`` here), the
    session's shuffle partitions."""
    try:
        cores = spark.sparkContext.defaultParallelism
    except Exception:  # noqa: BLE001 - Connect raises a variety of "not supported" errors
        return max(2, int(spark.conf.get("spark.sql.shuffle.partitions") or 200))
    return max(2, 2 * cores)


def swap_key(df: DataFrame, table: DataFrame, have: str, want: str) -> DataFrame:
    """``df`` with its column ``have`` replaced, in place, by ``want``, looked up in ``table``
    (one row per ``have``; small: broadcast, so ``df`` keeps its partitions)."""
    return df.join(F.broadcast(table.select(have, want)), have).select(
        *[F.col(want) if c == have else F.col(c) for c in df.columns])
