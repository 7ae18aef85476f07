"""Reading trace files: every line's crc checked (or the file's digest), every bad line and
file accounted for.

Three paths, one result (``tests/spark/test_load_paths.py`` holds them to the same rows and
problems). A file is *clean* when every crc matches, line 1 is a schema-``SCHEMA_VERSION``
``run_start`` and its ``run_end`` is there (``scan.is_clean``): its lines are the writer's
own, and it takes a fast path; any other file takes the careful path, where each line is
parsed on its own and each problem found and placed. ``careful=True`` (``isrlab analyze
--careful``) sends every file there.

* native (local files; ``native_scan``, ``scan.py``): each file is read once, in Spark's
  Python workers (``mapInArrow``, one file per task), by Arrow's kernels: the crcs through
  the file's digest (``run_end``'s ``sha256`` over every byte before it, stricter than the
  crcs: a resealed or moved line fails it too), each seq against its place, side lines kept
  as text, hot lines parsed by pyarrow's JSON reader with the writer's types (a line of
  another type makes the file not clean). The hot rows, side lines and per-file summaries come back
  as one DataFrame, hash-partitioned and persisted: it *is* ``events`` (filtered to the hot
  rows), so the load shuffles the bulk rows once and builds one cache.
* JVM fast path (URIs, or ``native=False``): a text pass (``audit_text``: no JSON parsed)
  checks the crc of each line, counts lines per split, finds line 1, the largest ``ts_us``
  and whether a ``run_end`` is there, and keeps the side lines (by their
  ``{"seq":N,"ts_us":M,"event":`` prefix); the hot lines of clean files are parsed by
  Spark's JSON source (``read_hot``, the filter on ``event`` pushed into the parser), the
  side lines with ``from_json``. It trusts a line whose crc matches to have the writer's
  types for the hot fields; a side line of the wrong type is still found and placed.
* careful: one ``from_json`` over every line (``LINE_SCHEMA``), the line's crc recomputed
  with byte-based functions (``traces.integrity``: CRC-32 of the line without
  ``,"crc":N``), a problem column, line numbers from ``_metadata.file_block_start`` and
  ``monotonically_increasing_id()`` (``_locate``).

What is kept (``Loaded``):

* ``events``: the ``HOT_EVENTS`` lines (produce_send, produce_ack, consume, hw_update: the
  only ones the record and order passes read) as ``EVENT_COLUMNS``, hash-partitioned by
  ``PARTITION_KEY`` = (tid, topic, partition) and kept in memory as columns
  (``MEMORY_AND_DISK_DESER``); ``leo_update`` (a fifth of a trace) and the rest are
  counted, not kept;
* ``side``: the ``SIDE_EVENTS`` lines (run_start, final_log, leadership, ISR, ...) parsed
  with the full ``TRACE_SCHEMA``, partitioned the same way (so a union of rows of both
  keeps the partitioning) and persisted on their own: the big, rarely read columns never
  travel with the bulk rows. The native scan sends each side line with its topic and
  partition, so the scan's shuffle already puts it where it belongs and it is parsed there
  (``side_lines(keyed=True)``; a line whose parse disagrees sends them all through a
  shuffle of their own, as on the other paths);
* ``traces``: per analysed trace, ``tid``, ``trace`` (its path), ``events`` (good lines) and
  ``end_us`` (largest ``ts_us``).

Rows name their trace by ``tid``, a small integer (the local files in order, then the traces
the JVM found, in order; each load its own), never by the path: a 60-byte path in every row
was most of what every sort of the analyses compared, its first bytes alike in every row.
The JVM paths read the path (``_metadata.file_path``) and swap it for the id through a
broadcast join (``_tids``) before the shuffle; the native scan is handed the id with the
file. ``Loaded.named`` swaps it back for a view. ``producer`` is an integer (the writer's
type: the producer's index), so the record aggregates keep fixed-width buffers.

``old`` / ``new`` are integers in ``hw_update`` but broker lists in ``isr_change``: they are
read as ``StringType`` (Spark keeps the raw JSON text of a non-string value in a string
column, ``"5"``, ``"[1,2]"``); ``events`` carries them as ``old_n``/``new_n`` (bigint, for
``hw_update``), ``side`` as text (``analyses`` parses the lists). ``scenario`` is kept as raw
JSON text and parsed with a narrow schema where an analysis needs it (``SCENARIO_SCHEMA``);
``records`` (``[[offset, value, epoch], ...]``) is ``array<array<string>>``.

Bad input, reported and never dropped silently (``Loaded.problems``, each naming the file and
the 1-based line, ``str()`` = ``file:line: message``):

* a line that is not a JSON object, fails its crc or lacks ``seq``/``event``: *line skipped*,
  the rest of the trace is analysed (a ``SIDE_EVENTS`` line whose fields have the wrong JSON
  type is found when ``side`` is parsed, and is left out of the analyses the same way; it
  still counts in ``traces.events``);
* line 1 not a ``run_start`` (not an isrlab trace), or a ``schema`` other than
  ``traces.schema.SCHEMA_VERSION``: *trace skipped* (its lines are not analysed, and not
  listed one by one: a foreign file would otherwise produce a line per line); a file with no
  readable line at all is skipped the same way;
* a file Spark's text source read (a URI, or any file on the careful path) whose name and
  bytes disagree (gzip named ``.jsonl``, plain text named ``.gz``: Spark decompresses by the
  name) is skipped as above, the message saying so and how to rename it;
* no ``run_end`` (the run was cut off, or a gzip stream ends early): *tail lost*, the lines
  read are analysed. Spark reads the files with ``ignoreCorruptFiles`` so that a truncated
  gzip keeps the lines before the break instead of failing the job; the driver then
  re-reads only such a file to say where the stream broke.

Inputs are files or folders (searched recursively for ``*.jsonl`` and ``*.jsonl.gz``); local
paths are expanded on the driver (sorted, de-duplicated), URIs with a scheme (``hdfs://``,
``s3a://``) are handed to Spark with ``recursiveFileLookup``. ``cache_dir`` keeps a zstd
Parquet copy of ``events`` and ``side`` (and the problems and per-trace sizes, as JSON next
to them) keyed by the inputs' names and the SHA-256 of their bytes (``_cache_path``: a file
changed in place to the same size and mtime is another key), so a second analysis of the
same files skips the JSON. The cache folder must be new, empty or carry ``.isrlab-cache``
(``claim_cache``): a cached load is written into a scratch folder and renamed into place,
so nothing but the cache's own entries is ever replaced.

Inputs must be regular files (named, or found in folders): a FIFO, a device or a socket is
refused at once (``TraceInputError``, exit 2), never opened. Every line is bounded
(``scan.MAX_LINE_BYTES``, the trace reader's 64 MiB) and read in pieces; a longer line, a
UTF-8 byte-order mark on line 1 or a line ending in CR LF refuses its file — *trace
skipped*, naming the line — as ``isrlab check`` refuses it (exit 2 for both doors). The
native scan finds these on every local file (with ``--careful`` too, in a pass that looks
for nothing else); for a URI, Spark's text source keeps a CR in its line (found as
``_CRLF``) and skips a line past the bound, which then shows as a missing line (its
``seq`` gap).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import shutil
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Final

import orjson
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from emulator.files import (
    FileRefused,
    claim_folder,
    input_file,
    remove_scratch,
    remove_stale_scratch,
    scratch_folder,
    write_text,
)
from spark_analysis import scan
from traces.schema import SCHEMA_VERSION

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

_CRC_MARK: Final = ',"crc":'
#: The crc member is looked for in this many last bytes of a line (``,"crc":4294967295}``
#: is 18).
_CRC_TAIL: Final = 32
#: The first characters of a line, where a writer's line has ``seq``, ``ts_us`` and ``event``.
_PREFIX: Final = 64
_META: Final = "meta.json"
#: How a writer's line 1 opens (the line the audit keeps to check it is a run_start).
_LINE1: Final = '{"seq":0,'
_PATTERNS: Final = ("*.jsonl", "*.jsonl.gz")
_PERMISSIVE: Final = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
_CORRUPT: Final = "not a schema-1 JSON object: the line is damaged"
#: Hadoop's ``LineRecordReader`` option bounding a line (longer ones are skipped).
_MAX_LINE_OPTION: Final = "mapreduce.input.linerecordreader.line.maxlength"
_BOM_TEXT: Final = "\ufeff"
_BOM_PROBLEM: Final = ("starts with a UTF-8 byte-order mark (BOM): the file was re-saved by an "
                       "editor; isrlab traces have none")
_CRLF: Final = ("ends with CR LF: the file's line endings were converted; isrlab traces end "
                "lines with LF only")
#: What happened to the input named by a problem.
LINE_SKIPPED: Final = "line skipped"
TRACE_SKIPPED: Final = "trace skipped"
TAIL_LOST: Final = "tail lost"
#: The schema of ``Loaded.traces``.
TRACES_SCHEMA: Final = "tid int, trace string, events long, end_us long"
_SIDE_TEXT: Final = "tid int, _block long, _rid long, _raw string"
#: At most this many tasks read the local files (a task reads its files one after another).
_MAX_SCAN_TASKS: Final = 1000


#: A line to number: (trace, _block, _rid, problem, text).
_Located = tuple[str, int, int, str, str]
#: The same with the trace's id (``tid``) for its path.
_LocatedById = tuple[int, int, int, str, str]


class TraceInputError(Exception):
    """A path that names no trace file."""


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


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files named, plus ``*.jsonl``/``*.jsonl.gz`` under folders; URIs pass through."""
    out: list[str] = []
    for p in paths:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", p) and not p.startswith("file://"):
            out.append(p)
            continue
        path = Path(p[len("file://"):] if p.startswith("file://") else p)
        if path.is_dir():
            found = sorted({f for pat in _PATTERNS for f in path.rglob(pat)
                            if not f.is_dir()})
            if not found:
                raise TraceInputError(f"{p}: no *.jsonl or *.jsonl.gz files")
            out.extend(_regular(f) for f in found)
        elif path.exists() or path.is_symlink():
            out.append(_regular(path))
        else:
            raise TraceInputError(f"{p}: no such file or directory")
    return sorted(set(out))


def _regular(path: Path) -> str:
    """``path`` resolved, when it is a regular file; TraceInputError (one line) for a FIFO,
    a device, a socket, a broken link — named or found in a folder: reading one would
    block or never end (``emulator.files.input_file``)."""
    try:
        return str(input_file(path).resolve())
    except FileRefused as exc:
        raise TraceInputError(str(exc)) from None


def _trace_id(col: Column) -> Column:
    """The file path without ``file:`` / ``file://`` (the trace id of its rows)."""
    return (F.when(col.startswith("file://"), F.substring(col, 8, 1 << 30))
            .when(col.startswith("file:"), F.substring(col, 6, 1 << 30))
            .otherwise(col))


def _crc_ok(line: Column) -> Column:
    """The line's ``crc`` member (the last one, ``,"crc":N}``) equals the CRC-32 of the line
    without it. Byte-based functions only: the mark is looked for in the line's last bytes."""
    raw = line.cast("binary")
    tail = F.substring(raw, -_CRC_TAIL, _CRC_TAIL).cast("string")
    after = F.substring_index(tail, _CRC_MARK, -1)  # N}
    n_after = F.octet_length(after)
    body = F.concat(F.substring(raw, F.lit(1), F.octet_length(line) - n_after - len(_CRC_MARK)),
                    F.lit(b"}"))
    crc = F.substring(after, F.lit(1), n_after - 1).try_cast("long")
    ok = (F.instr(tail, _CRC_MARK) > 0) & line.endswith("}") & (F.crc32(body) == crc)
    return F.coalesce(ok, F.lit(False))


def read_text(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """Every line of ``files``: ``_text``, ``trace``, ``_block`` (start of its split) and
    ``_rid`` (consecutive within a split). The same plan gives the same ``_rid``s when run
    again, so a line found in one pass can be located by another over the same DataFrame."""
    return (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "{*.jsonl,*.jsonl.gz}")
        .option("ignoreCorruptFiles", "true")  # a cut gzip keeps its lines before the cut
        # lines end at LF only (as the writer's and ``traces.reader``'s): a CR before it
        # stays in the line, so a converted file is found (``_CRLF``), never read as clean
        .option("lineSep", "\n")
        # Hadoop's line reader keeps at most this much of a line (and skips a longer one,
        # reading it in pieces): never a line past the reader's bound in memory
        .option(_MAX_LINE_OPTION, str(scan.MAX_LINE_BYTES + 1))
        .text(list(files))
        .select(
            F.col("value").alias("_text"),
            _trace_id(F.col("_metadata.file_path")).alias("trace"),
            F.col("_metadata.file_block_start").alias("_block"),
            F.monotonically_increasing_id().alias("_rid"),
        )
    )


def read_lines(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """Every line with its trace id, split start, per-task row id, problem and narrow fields.

    Columns: trace, _block, _rid, _problem (null for a good line), _line (text of a bad line
    only), schema (line 1's), _raw (text of a ``SIDE_EVENTS`` line), then the columns of
    ``EVENT_COLUMNS`` after ``tid`` (null for a bad line; the ``HOT_EVENTS`` fields null on
    other lines).
    The careful path: every line parsed on its own, so that each problem is found and placed.
    """
    raw = read_text(spark, files)
    schema = T.StructType([*LINE_SCHEMA.fields, T.StructField("_corrupt_record", _S)])
    j = raw.select("trace", "_block", "_rid", "_text", _crc_ok(F.col("_text")).alias("_crc_ok"),
                   F.from_json("_text", schema, _PERMISSIVE).alias("j"))
    problem = (
        F.when(F.col("_text").startswith(_BOM_TEXT), F.lit(_BOM_PROBLEM))
        .when(F.col("_text").endswith("\r"), F.lit(_CRLF))
        .when(F.col("j._corrupt_record").isNotNull(), F.lit(_CORRUPT))
        .when(~F.col("_crc_ok"), F.lit("crc: missing or does not match the line"))
        .when(F.col("j.seq").isNull() | F.col("j.event").isNull(), F.lit("seq/event missing"))
    )
    good = problem.isNull()
    event = F.col("j.event")
    hot = good & event.isin(*HOT_EVENTS)
    is_hw = good & (event == "hw_update")

    def field(name: str) -> Column:
        return F.when(hot if name in _HOT_ONLY else good, F.col(f"j.{name}")).alias(name)

    cols: dict[str, Column] = {
        "old_n": F.when(is_hw, F.col("j.old").try_cast("bigint")).alias("old_n"),
        "new_n": F.when(is_hw, F.col("j.new").try_cast("bigint")).alias("new_n"),
        "trace": F.col("trace"),
    }
    return j.select(
        "trace", "_block", "_rid", problem.alias("_problem"),
        F.when(~good, F.col("_text")).alias("_line"),
        F.when(good & (event == "run_start"), F.col("j.schema")).alias("schema"),
        F.when(good & event.isin(*SIDE_EVENTS), F.col("_text")).alias("_raw"),
        *[cols[c] if c in cols else field(c) for c in _PATH_COLUMNS],
    )


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


def _prefix_event(line: Column) -> Column:
    """The ``event`` of a writer's line, from its first bytes (``{"seq":N,"ts_us":M,"event":"``
    open every line), without parsing it: a fast filter, not a check."""
    head = F.substring(line, 1, _PREFIX)
    return F.substring_index(F.substring_index(head, '"event":"', -1), '"', 1)


def _prefix_seq(line: Column) -> Column:
    """The ``seq`` of a writer's line from its first bytes (null if it is not there)."""
    head = F.substring(line, 1, _PREFIX)
    return F.when(head.startswith('{"seq":'), F.substring_index(
        F.substring_index(head, '"seq":', -1), ",", 1).try_cast("long"))


def _prefix_ts(line: Column) -> Column:
    """The ``ts_us`` of a writer's line from its first bytes (null if it is not there)."""
    head = F.substring(line, 1, _PREFIX)
    return F.substring_index(F.substring_index(head, '"ts_us":', -1), ",", 1).try_cast("long")


@dataclass(frozen=True)
class FileAudit:
    """One file as the text pass saw it: enough to tell a clean trace from a damaged one."""

    trace: str
    lines: int
    #: Lines whose crc is missing or wrong.
    bad: int
    end_us: int | None
    #: Text of line 1 when it looks like a writer's event (null otherwise).
    first: str | None
    has_end: bool
    #: every line's seq is its place in the file and ``run_end`` is the last line
    ordered: bool = True

    @property
    def clean(self) -> bool:
        """Every line is the writer's own (crc) in its place (seq), line 1 is a
        schema-``SCHEMA_VERSION`` ``run_start`` and a ``run_end`` ends it: nothing for the
        careful path to find."""
        return self.ordered and scan.is_clean(self.bad, self.has_end, self.first)


@dataclass(frozen=True)
class Audit:
    """The text pass over every file: per-file facts, where each split starts, and the raw
    side lines (``SIDE_EVENTS`` by their prefix, and line 1), persisted until parsed."""

    files: list[FileAudit]
    #: (trace, _block) → (lines in earlier splits of the file, first _rid of the split).
    starts: dict[tuple[str, int], tuple[int, int]]
    #: trace, _block, _rid, _raw of the side lines of every file. Persisted.
    side: DataFrame


def audit_text(text: DataFrame) -> Audit:
    """Two passes over ``text`` (``read_text``), no JSON parsed: one aggregate per split
    (lines, first ``_rid``, crc failures, largest ``ts_us``, a ``run_end`` seen: fixed-width
    buffers only, so Spark hash-aggregates in generated code), and the side lines kept."""
    line = F.col("_text")
    event = _prefix_event(line)
    seq = _prefix_seq(line)
    per_split = text.select(
        "trace", "_block", "_rid", (~_crc_ok(line)).cast("int").alias("_bad"),
        _prefix_ts(line).alias("_ts"), (event == "run_end").alias("_end"),
        seq.alias("_seq"), (seq - F.col("_rid")).alias("_d"),
    ).groupBy("trace", "_block").agg(
        F.count(F.lit(1)).alias("n"), F.min("_rid").alias("rid0"), F.sum("_bad").alias("bad"),
        F.max("_ts").alias("end_us"), F.coalesce(F.max("_end"), F.lit(False)).alias("has_end"),
        F.count("_seq").alias("n_seq"), F.min("_seq").alias("seq0"),
        F.min("_d").alias("d_min"), F.max("_d").alias("d_max"),
        F.max(F.when(F.col("_end"), F.col("_seq"))).alias("end_seq"),
    ).collect()
    side = (text.where(event.isin(*SIDE_EVENTS) | line.startswith(_LINE1))
            .select("trace", "_block", "_rid", line.alias("_raw")).persist(LEVEL))
    heads = {(r["trace"], int(r["_block"]), int(r["_rid"])): r["_raw"] for r in
             side.where(F.col("_raw").startswith(_LINE1)).collect()}
    starts = _split_starts(per_split)
    by_trace: dict[str, list[Row]] = {}
    for r in per_split:
        by_trace.setdefault(r["trace"], []).append(r)
    files = []
    for trace in sorted(by_trace):
        blocks = sorted(by_trace[trace], key=lambda r: int(r["_block"]))
        ends = [int(r["end_us"]) for r in blocks if r["end_us"] is not None]
        files.append(FileAudit(
            trace=trace, lines=sum(int(r["n"]) for r in blocks),
            bad=sum(int(r["bad"]) for r in blocks),
            end_us=max(ends) if ends else None,
            first=heads.get((trace, int(blocks[0]["_block"]), int(blocks[0]["rid0"]))),
            has_end=any(bool(r["has_end"]) for r in blocks), ordered=_ordered(blocks)))
    return Audit(files=files, starts=starts, side=side)


def _ordered(blocks: list[Row]) -> bool:
    """A file's splits (in file order) hold seq 0, 1, 2, ... line after line (in a split,
    seq minus the row id is one number and its first seq counts the lines before it), and
    ``run_end`` is its last line."""
    before = 0
    ends = []
    for r in blocks:
        n = int(r["n"])
        if int(r["n_seq"]) != n or r["d_min"] != r["d_max"] or int(r["seq0"]) != before:
            return False
        before += n
        if r["end_seq"] is not None:
            ends.append(int(r["end_seq"]))
    return not ends or ends == [before - 1]


def audit_side(audit: Audit, slow: Sequence[str]) -> DataFrame:
    """The side lines of the files not in ``slow``: trace, _block, _rid, _raw."""
    side = audit.side.where(~F.col("trace").isin(*slow)) if slow else audit.side
    return side.where(_prefix_event(F.col("_raw")).isin(*SIDE_EVENTS))


def read_hot(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """The ``HOT_EVENTS`` lines of clean ``files`` as ``EVENT_COLUMNS`` keyed by the trace's
    path (``_PATH_COLUMNS``: ``_tids`` numbers them), parsed by Spark's JSON
    source (a byte-based parse, about twice as fast as ``from_json`` over text, with the
    filter on ``event`` pushed into the parser: other lines are not parsed past it)."""
    j = (spark.read.schema(_HOT_SCHEMA).json(list(files))
         .where(F.col("event").isin(*HOT_EVENTS)))
    is_hw = F.col("event") == "hw_update"
    cols = {
        "trace": _trace_id(F.col("_metadata.file_path")).alias("trace"),
        "old_n": F.when(is_hw, F.col("old").try_cast("bigint")).alias("old_n"),
        "new_n": F.when(is_hw, F.col("new").try_cast("bigint")).alias("new_n"),
    }
    return j.select(*[cols.get(c, F.col(c)) for c in _PATH_COLUMNS])


def side_lines(rows: DataFrame, *, keyed: bool = False) -> DataFrame:
    """The lines of ``rows`` (tid, _block, _rid, _raw: ``SIDE_EVENTS`` text) parsed in full:
    ``tid``, ``_block``, ``_rid``, ``_bad`` (the line does not fit ``TRACE_SCHEMA``),
    ``_moved``, then ``TRACE_SCHEMA``.

    ``keyed``: ``rows`` also carry the ``topic`` and ``partition`` the native scan read from
    each line and partitioned it by (``scan.side_key``). The result keeps those two columns
    instead of the parsed ones, and with them that partitioning: the lines need no shuffle
    of their own. ``_moved`` marks a good line whose parsed topic or partition is not the
    scan's (a line the two parsers read differently, e.g. a topic written as a number):
    ``load_traces`` then partitions the parsed lines instead. Unkeyed, ``_moved`` is false."""
    schema = T.StructType([*TRACE_SCHEMA.fields, T.StructField("_corrupt_record", _S)])
    keys = ("topic", "partition") if keyed else ()
    parsed = rows.select("tid", "_block", "_rid", *keys,
                         F.from_json("_raw", schema, _PERMISSIVE).alias("j"))
    bad = F.col("j._corrupt_record").isNotNull()
    moved = (~bad & ~(F.col("topic").eqNullSafe(F.col("j.topic"))
                      & F.col("partition").eqNullSafe(F.col("j.partition")))
             if keyed else F.lit(False))
    return parsed.select(
        "tid", "_block", "_rid", bad.alias("_bad"), moved.alias("_moved"),
        *[F.col(n) if n in keys else F.col(f"j.{n}").alias(n)
          for n in TRACE_SCHEMA.fieldNames()])


def load_traces(
    spark: SparkSession, paths: Iterable[str], *, cache_dir: str | None = None,
    partitions: int | None = None, careful: bool = False, native: bool = True,
) -> Loaded:
    """Read traces: the hot rows, persisted and partitioned by ``PARTITION_KEY``, the side
    lines parsed in full, per-trace sizes, and every problem found (see the module notes).
    ``careful``: every file takes the careful path (each line parsed on its own);
    ``native=False``: local files take the JVM fast path too (as URIs do)."""
    files = expand_paths(paths)
    cached = _cache_path(cache_dir, files, careful=careful)
    if cached is not None and (cached / _META).exists():
        meta = orjson.loads((cached / _META).read_bytes())
        kept = spark.read.parquet(str(cached / "side")).select(
            "tid", F.lit(None).cast("long").alias("_block"),
            F.lit(None).cast("long").alias("_rid"), F.lit(False).alias("_bad"),
            *TRACE_SCHEMA.fieldNames())
        return _loaded(spark, spark.read.parquet(str(cached / "events")), kept,
                       [BadLine(**d) for d in meta["problems"]], files, meta["traces"],
                       partitions=partitions)

    n = partitions or _default_partitions(spark)
    local = [f for f in files if "://" not in f] if native else []
    # each trace's id: the local files in order, then the traces the JVM found, in order
    ids = {f: i for i, f in enumerate(local)}
    scanned, audits, refused = (native_scan(spark, local, n, ids, careful=careful) if local
                                else (None, [], []))
    if careful and scanned is not None:   # the scan only looked for what refuses a file
        scanned.unpersist()
        scanned, local, audits = None, [], []
    native_files = set(local)
    refused_files = {b.trace for b in refused}
    rest = [f for f in files if f not in native_files and f not in refused_files]
    audit = audit_text(read_text(spark, rest)) if rest else None
    audits += audit.files if audit is not None else []
    for a in sorted(audits, key=lambda a: a.trace):
        ids.setdefault(a.trace, len(ids))
    id_rows = spark.createDataFrame(sorted(ids.items(), key=lambda kv: kv[1]),
                                    "trace string, tid int")
    clean = [] if careful else [a for a in audits if a.clean]
    slow = sorted({a.trace for a in audits} - {a.trace for a in clean})
    sizes: list[list[Any]] = [[ids[a.trace], a.trace, a.lines, a.end_us] for a in clean]
    hots: list[DataFrame] = []
    sides: list[DataFrame] = []
    # a file the scan found not clean may have sent rows before it knew: they are dropped
    unclean = sorted(ids[t] for t in native_files & set(slow))
    wanted = ~F.col("tid").isin(*unclean) if unclean else F.lit(True)
    scanned_side: DataFrame | None = None
    if scanned is not None:
        scanned_side = scanned.where((F.col("_kind") == scan.SIDE) & wanted).select(
            "tid", F.lit(0).cast("long").alias("_block"),
            (F.col("_line") - 1).alias("_rid"), "_raw", "topic", "partition")
        sides.append(scanned_side.drop("topic", "partition"))
    uri_clean = [a.trace for a in clean if a.trace not in native_files]
    if audit is not None and uri_clean:
        hots.append(_tids(read_hot(spark, uri_clean), id_rows))
        sides.append(_tids(audit_side(audit, slow), id_rows))
    problems: list[BadLine] = []
    flagged: DataFrame | None = None
    if slow:
        flagged = read_lines(spark, slow).persist(LEVEL)
        summary = _summarize(flagged)
        problems = _file_problems(summary)
        skipped = sorted({p.trace for p in problems if p.action == TRACE_SKIPPED})
        converted = _converted(flagged, [r["trace"] for r in summary
                                         if r["crlf"] and r["trace"] not in skipped])
        problems += converted
        skipped = sorted({*skipped, *(p.trace for p in converted)})
        if any(int(r["bad"]) for r in summary if r["trace"] not in skipped):
            problems += [b for b in _bad_lines(flagged) if b.trace not in skipped]
        good = flagged.where(F.col("_problem").isNull() & ~F.col("trace").isin(*skipped))
        hots.append(_tids(good.where(F.col("event").isin(*HOT_EVENTS)).select(*_PATH_COLUMNS),
                          id_rows))
        sides.append(_tids(good.where(F.col("_raw").isNotNull()).select(
            "trace", "_block", "_rid", "_raw"), id_rows))
        sizes += [[ids[r["trace"]], r["trace"], int(r["good"]), r["end_us"]] for r in summary
                  if r["trace"] not in skipped]
    starts = {**(audit.starts if audit is not None else {}),
              **{(a.trace, 0): (0, 0) for a in clean if a.trace in native_files}}

    names = {i: t for t, i in ids.items()}

    def locate(by_id: list[_LocatedById]) -> list[BadLine]:
        bad = [(names[t], block, rid, problem, text) for t, block, rid, problem, text in by_id]
        mine = [b for b in bad if b[0] not in slow]
        others = [b for b in bad if b[0] in slow]
        return _number(starts, mine) + (
            _locate(flagged, others) if flagged is not None else [])

    problems += refused
    seen = {a.trace for a in audits if a.lines} | refused_files
    problems += [BadLine(f, 1, "no line could be read (an empty or unreadable file); "
                         "not an isrlab trace", action=TRACE_SKIPPED)
                 for f in files if f not in seen and (
                     "://" not in f or f.endswith((".jsonl", ".jsonl.gz")))]
    # a folder URI (read recursively by Spark) in which not one line was read
    problems += [BadLine(f, 1, "no trace line was read under this folder", action=TRACE_SKIPPED)
                 for f in files if "://" in f and not f.endswith((".jsonl", ".jsonl.gz"))
                 and not any(t.startswith(f.rstrip("/") + "/") for t in seen)]
    jvm_read = set(rest) | set(slow)
    problems = [replace(p, problem=f"{p.problem}; {hint}")
                if p.action == TRACE_SKIPPED and p.trace in jvm_read
                and (hint := _misnamed(spark, p.trace)) else p for p in problems]
    sizes.sort(key=lambda s: str(s[1]))
    side = (_union(sides) if sides else spark.createDataFrame([], _SIDE_TEXT))
    # only the scan's side lines: parsed where the scan put them (by their topic and
    # partition), unless a line's parse disagrees with the scan's keys (``side_lines``)
    rekey = None
    if scanned_side is not None and len(sides) == 1:
        rekey, side = partial(side_lines, side), side_lines(scanned_side, keyed=True)
    else:
        side = side_lines(side)
    ready = (scanned.where((F.col("_kind") == scan.HOT) & wanted).select(*EVENT_COLUMNS)
             if scanned is not None else None)
    if ready is None and not hots:  # every file was skipped: no rows, same columns
        hots.append(spark.createDataFrame([], EVENT_SCHEMA))
    loaded = _loaded(spark, _union(hots) if hots else None, side, problems, files,
                     sizes, partitions=n, locate=locate, ready=ready, rekey=rekey,
                     extra=tuple(df for df in (audit.side if audit else None, flagged)
                                 if df is not None),
                     keep=(scanned,) if scanned is not None else ())
    if cached is not None:
        _store(cached, loaded, sizes)
    return loaded


def _union(dfs: Sequence[DataFrame]) -> DataFrame:
    out = dfs[0]
    for df in dfs[1:]:
        out = out.unionByName(df)
    return out


def _tids(df: DataFrame, ids: DataFrame) -> DataFrame:
    """``df`` with its ``trace`` column (a path) replaced, in place, by that trace's ``tid``
    (``ids``: trace, tid)."""
    return swap_key(df, ids, "trace", "tid")


def swap_key(df: DataFrame, table: DataFrame, have: str, want: str) -> DataFrame:
    """``df`` with its column ``have`` replaced, in place, by ``want``, looked up in ``table``
    (one row per ``have``; small: broadcast, so ``df`` keeps its partitions)."""
    return df.join(F.broadcast(table.select(have, want)), have).select(
        *[F.col(want) if c == have else F.col(c) for c in df.columns])


def scan_input(spark: SparkSession, files: Sequence[str], ids: dict[str, int]) -> DataFrame:
    """(path, tid) of ``files``, largest first, one file per partition (up to
    ``_MAX_SCAN_TASKS`` partitions): ``spark.range`` cuts its ids into contiguous even runs,
    one per partition, and a broadcast join (which keeps the range's partitions) gives each
    id its file. DataFrames only, so it runs under Spark Connect too. (A round-robin
    ``repartition`` starts each input partition at its own place, so two files could share a
    task while another core idled: two files on two cores took one task 5.5 s and the other
    0.1 s.)"""
    by_size = sorted(files, key=lambda f: (-_size(f), f))
    tasks = max(1, min(len(files), _MAX_SCAN_TASKS))
    order = spark.createDataFrame([(i, f, ids[f]) for i, f in enumerate(by_size)],
                                  "id long, path string, tid int")
    return (spark.range(0, len(by_size), 1, tasks).join(F.broadcast(order), "id")
            .select("path", "tid"))


def native_scan(spark: SparkSession, files: Sequence[str], partitions: int,
                ids: dict[str, int], *, careful: bool = False
                ) -> tuple[DataFrame, list[FileAudit], list[BadLine]]:
    """The local ``files`` read by ``scan.scan_files`` in Spark's Python workers (one file per
    task, largest first): the clean files' hot rows, side lines and every file's summary,
    hash-partitioned by ``PARTITION_KEY`` and persisted; a ``FileAudit`` per file (a file
    pyarrow could not read as the writer's is not clean); and the files the scan refused
    (``scan.scan_file``: a line past the bound, a BOM, CR LF, not a regular file), each a
    ``TRACE_SKIPPED`` problem naming its line, with no audit: no other path reads them.
    ``careful``: the scan only looks for what refuses a file (``scan_files_carefully``)."""
    how = scan.scan_files_carefully if careful else scan.scan_files
    rows = scan_input(spark, files, ids).mapInArrow(how, scan.SCAN_DDL)
    native = partition_events(rows, partitions).persist(LEVEL)
    audits = []
    refused = []
    names = {i: f for f, i in ids.items()}
    for r in native.where(F.col("_kind") == scan.SUMMARY).select("tid", "_raw").collect():
        facts = orjson.loads(r["_raw"])
        if facts.get("refused"):
            line = int(facts["refused_line"])
            refused.append(BadLine(names[int(r["tid"])], line, f"{facts['refused']}; the "
                                   "trace was not analysed (isrlab check refuses it too)",
                                   action=TRACE_SKIPPED))
            continue
        audit = FileAudit(trace=names[int(r["tid"])], lines=int(facts["lines"]),
                          bad=int(facts["bad"]), end_us=facts["end_us"], first=facts["first"],
                          has_end=bool(facts["has_end"]))
        if not facts["ok"]:  # cut, or not of the writer's types: not clean
            audit = replace(audit, first=None)
        if audit.lines:  # a file without a line is reported by load_traces
            audits.append(audit)
    return native, sorted(audits, key=lambda a: a.trace), refused


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


def _loaded(spark: SparkSession, hot: DataFrame | None, side: DataFrame,
            problems: list[BadLine], files: list[str], sizes: list[list[Any]], *,
            partitions: int | None,
            locate: Callable[[list[_LocatedById]], list[BadLine]] | None = None,
            ready: DataFrame | None = None, extra: tuple[DataFrame, ...] = (),
            keep: tuple[DataFrame, ...] = (),
            rekey: Callable[[], DataFrame] | None = None) -> Loaded:
    """``Loaded`` around the ``hot`` rows (partitioned and persisted) plus the ``ready`` ones
    (already partitioned alike and persisted: the native scan's) and the parsed ``side``
    lines (``side_lines``, partitioned and persisted); with ``locate``, side lines that do
    not fit ``TRACE_SCHEMA`` join the problems. ``rekey``: ``side`` is the scan's lines,
    keyed and partitioned as the scan read them (``side_lines(keyed=True)``), and
    ``rekey()`` the same lines unkeyed, partitioned here should any line have ``_moved``.
    ``extra``: DataFrames persisted for the load only, freed once ``events`` and ``side``
    are built (then, not lazily); ``keep``: persisted DataFrames behind ``ready``, freed
    with the rest by ``Loaded.unpersist``."""
    n = partitions or _default_partitions(spark)
    caches = list(keep)
    events = ready
    if hot is not None:
        more = partition_events(hot, n).persist(LEVEL)
        caches.append(more)
        events = more if events is None else events.unionByName(more)
    assert events is not None
    side_all = (side if rekey is not None else partition_events(side, n)).persist(LEVEL)
    if locate is not None or rekey is not None:
        flag = "_bad OR _moved" if rekey is not None else "_bad"
        wrong = side_all.where(flag).select("tid", "_block", "_rid", "_bad").collect()
        if rekey is not None and not all(r["_bad"] for r in wrong):  # a line moved
            side_all.unpersist()
            side_all = partition_events(rekey(), n).persist(LEVEL)
            wrong = side_all.where("_bad").select("tid", "_block", "_rid", "_bad").collect()
        if locate is not None:
            problems = [*problems, *locate([(int(r["tid"]), r["_block"], r["_rid"], _CORRUPT,
                                             "") for r in wrong])]
    if extra:
        events.count()
        for df in extra:
            df.unpersist()
    problems.sort(key=lambda b: (b.trace, b.line, b.action))
    side = side_all.where(~F.col("_bad")).drop("_block", "_rid", "_bad", "_moved")
    traces = spark.createDataFrame([tuple(s) for s in sizes], TRACES_SCHEMA)
    return Loaded(events=events, side=side, traces=traces, problems=problems, files=files,
                  caches=(*caches, side_all), partitions=n)


def _summarize(flagged: DataFrame) -> list[dict[str, Any]]:
    """Per file: lines, good lines, bad lines, largest ts_us, line 1 (event, schema, problem),
    whether it has a run_end, its last good event, and where its order breaks (``off_at``,
    ``off_seq``: the first line whose seq is not its place, 0-based; ``end_at``: the place
    of its first run_end). One aggregate per file and one per split over the cached lines
    (no sort: a window over every line of a corpus took minutes)."""
    order = F.struct("_block", "_rid")
    per_file = flagged.groupBy("trace").agg(
        F.count(F.lit(1)).alias("lines"),
        F.count("seq").alias("good"),
        F.count("_problem").alias("bad"),
        F.count(F.when(F.col("_problem") == _CRLF, F.lit(1))).alias("crlf"),
        F.max("ts_us").alias("end_us"),
        F.min_by(F.struct("event", "schema", "_problem"), order).alias("first"),
        F.max(F.when(F.col("event") == "run_end", F.lit(True))).alias("has_end"),
        F.max_by("event", F.when(F.col("_problem").isNull(), order)).alias("last_event"),
    ).collect()
    # in a split, _rid is consecutive: a good line's place is (lines of earlier splits) +
    # (_rid - the split's first _rid), so every seq is its place when seq - _rid is one
    # number in the split, that number being (lines before) - (first _rid)
    d = F.col("seq") - F.col("_rid")
    per_split = flagged.groupBy("trace", "_block").agg(
        F.count(F.lit(1)).alias("n"), F.min("_rid").alias("rid0"),
        F.min(d).alias("d_min"), F.max(d).alias("d_max"),
        F.min(F.when(F.col("event") == "run_end", F.col("_rid"))).alias("end_rid"),
    ).collect()
    splits: dict[str, list[Row]] = {}
    for r in per_split:
        splits.setdefault(r["trace"], []).append(r)
    out = []
    for r in per_file:
        row = r.asDict()
        row.update(off_at=None, off_seq=None, end_at=None)
        before = 0
        for sp in sorted(splits.get(r["trace"], []), key=lambda x: int(x["_block"])):
            want = before - int(sp["rid0"])
            if row["end_at"] is None and sp["end_rid"] is not None:
                row["end_at"] = before + int(sp["end_rid"]) - int(sp["rid0"])
            if row["off_at"] is None and sp["d_min"] is not None and not (
                    sp["d_min"] == sp["d_max"] == want):
                bad = flagged.where(
                    (F.col("trace") == r["trace"]) & (F.col("_block") == sp["_block"])
                    & F.col("seq").isNotNull() & (d != F.lit(want))
                ).agg(F.min_by("seq", "_rid").alias("seq"), F.min("_rid").alias("rid")).first()
                assert bad is not None
                row["off_at"] = before + int(bad["rid"]) - int(sp["rid0"])
                row["off_seq"] = bad["seq"]
            before += int(sp["n"])
        out.append(row)
    return out


def _file_problems(summary: list[dict[str, Any]]) -> list[BadLine]:
    """Per file: a line 1 that is not a readable ``run_start``, a line whose seq is not its
    place, a line after ``run_end`` (trace skipped), or no ``run_end`` (tail lost)."""
    out: list[BadLine] = []
    for r in summary:
        trace, lines, first = r["trace"], int(r["lines"]), r["first"]
        if first["_problem"] is not None or first["event"] != "run_start":
            what = first["_problem"] or "not a run_start event"
            out.append(BadLine(trace, 1, f"not an isrlab trace: line 1 is {what}; "
                               f"its {lines} lines were not analysed", action=TRACE_SKIPPED))
            continue
        if first["schema"] != str(SCHEMA_VERSION):
            shown = "missing" if first["schema"] is None else first["schema"]
            out.append(BadLine(trace, 1, f"trace schema {shown}, this isrlab reads schema "
                               f"{SCHEMA_VERSION}; its {lines} lines were not analysed",
                               action=TRACE_SKIPPED))
            continue
        if r["off_at"] is not None:
            at = int(r["off_at"])
            out.append(BadLine(trace, at + 1, f"seq {r['off_seq']}, expected {at}: a line "
                               f"was deleted, duplicated or moved (isrlab check refuses the "
                               f"file); its {lines} lines were not analysed",
                               action=TRACE_SKIPPED))
            continue
        if r["end_at"] is not None and int(r["end_at"]) != lines - 1:
            out.append(BadLine(trace, int(r["end_at"]) + 2, f"a line after run_end (line "
                               f"{int(r['end_at']) + 1}): the file was appended to; its "
                               f"{lines} lines were not analysed", action=TRACE_SKIPPED))
            continue
        if not r["has_end"]:
            broken = _gzip_break(trace)
            how = (f"the gzip stream {broken}" if broken else
                   "the trace ends without run_end (the run was cut off or the file truncated)")
            out.append(BadLine(trace, lines, f"{how}; line {lines} ({r['last_event'] or '?'}) "
                               f"is the last one read; lines 1-{lines} were analysed",
                               action=TAIL_LOST))
    return out


def _converted(flagged: DataFrame, traces: Sequence[str]) -> list[BadLine]:
    """The files of ``traces`` (each with a line ending in CR LF) skipped whole, named by
    their first such line: the file was converted, as ``traces.reader`` says and the native
    scan finds (``scan.crlf_refusal``)."""
    if not traces:
        return []
    first = (flagged.where((F.col("_problem") == _CRLF) & F.col("trace").isin(*traces))
             .groupBy("trace").agg(F.min(F.struct("_block", "_rid")).alias("at")).collect())
    located = _locate(flagged, [(r["trace"], r["at"]["_block"], r["at"]["_rid"], _CRLF, "")
                                for r in first])
    return [BadLine(b.trace, b.line, f"{scan.crlf_refusal(b.line)}; the trace was not "
                    "analysed (isrlab check refuses it too)", action=TRACE_SKIPPED)
            for b in located]


def _misnamed(spark: SparkSession, trace: str) -> str | None:
    """Why a file the JVM read (a URI, or any file on the careful path) may have looked like
    no trace: Spark's text source decides compression by the file's name, so gzip bytes named
    ``.jsonl`` read as binary lines and plain text named ``.gz`` as no line at all. The first
    two bytes are read through Hadoop's FileSystem (any scheme Spark reads); None when they
    agree with the name or cannot be read (e.g. over Spark Connect)."""
    try:
        if "://" in trace:
            jvm = spark.sparkContext._jvm
            assert jvm is not None
            path = jvm.org.apache.hadoop.fs.Path(trace)
            stream = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).open(path)
            try:
                head = bytes([stream.read() & 0xFF, stream.read() & 0xFF])
            finally:
                stream.close()
        else:
            with Path(trace).open("rb") as fh:
                head = fh.read(2)
    except Exception:  # noqa: BLE001 - a hint only: the trace is reported skipped either way
        return None
    gzip_bytes = head == b"\x1f\x8b"
    if gzip_bytes and not trace.endswith(".gz"):
        return ("its bytes are gzip but its name does not end in .gz (Spark's text source "
                "decompresses by the name): rename it *.jsonl.gz")
    if not gzip_bytes and trace.endswith(".gz"):
        return ("its name ends in .gz but its bytes are not gzip (Spark's text source "
                "decompresses by the name): rename it *.jsonl")
    return None


def _gzip_break(trace: str) -> str | None:
    """How a local gzip trace's stream is damaged, or None (not gzip, not local, or intact)."""
    path = Path(trace)
    try:
        with path.open("rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return None
        with gzip.open(path, "rb") as gz:
            while gz.read(1 << 20):
                pass
    except EOFError:
        return "is cut off (truncated file)"
    except (OSError, zlib.error) as exc:
        return f"is damaged ({exc})"
    return None


def _bad_lines(flagged: DataFrame) -> list[BadLine]:
    bad_rows = (flagged.where(F.col("_problem").isNotNull())
                .select("trace", "_block", "_rid", "_problem", "_line").collect())
    return _locate(flagged, [(r["trace"], r["_block"], r["_rid"], r["_problem"],
                              r["_line"] or "") for r in bad_rows])


def _locate(rows: DataFrame, bad: list[_Located]) -> list[BadLine]:
    """``BadLine``s for (trace, _block, _rid, problem, text) of ``rows`` (every line of their
    files, in ``rows``), numbered by the rows in earlier splits plus the position in the split.
    """
    if not bad:
        return []
    splits = rows.groupBy("trace", "_block").agg(
        F.count(F.lit(1)).alias("n"), F.min("_rid").alias("rid0")).collect()
    return _number(_split_starts(splits), bad)


def _split_starts(splits: Iterable[Row]) -> dict[tuple[str, int], tuple[int, int]]:
    """Where each split starts, from one row per split (trace, _block, n lines, rid0):
    (trace, _block) → (lines in the earlier splits of its file, the split's first _rid)."""
    out: dict[tuple[str, int], tuple[int, int]] = {}
    before: dict[str, int] = {}
    for r in sorted(splits, key=lambda r: (r["trace"], int(r["_block"]))):
        n = before.get(r["trace"], 0)
        out[(r["trace"], int(r["_block"]))] = (n, int(r["rid0"]))
        before[r["trace"]] = n + int(r["n"])
    return out


def _number(starts: dict[tuple[str, int], tuple[int, int]], bad: list[_Located]
            ) -> list[BadLine]:
    """``BadLine``s for ``bad``, given where each split starts: (trace, _block) → (lines in
    earlier splits of the file, the split's first _rid)."""
    out = []
    for trace, block, rid, problem, text in bad:
        n_before, rid0 = starts[(trace, block)]
        out.append(BadLine(trace=trace, line=n_before + int(rid) - rid0 + 1, problem=problem,
                           text=text[:200]))
    return sorted(out, key=lambda b: (b.trace, b.line))


#: the marker of a folder ``--cache`` may write into (``emulator.files.claim_folder``)
CACHE_MARKER: Final = ".isrlab-cache"
#: the prefix of a cached load's folder inside the cache folder
_CACHE_PREFIX: Final = "traces-"


def claim_cache(cache_dir: str, inputs: Sequence[str] = ()) -> Path:
    """``cache_dir`` as the cache's folder: new, empty, or one that carries
    ``CACHE_MARKER`` (written here when missing); TraceInputError (one line) for any other
    folder — a cache replaces what it cached before, so never inside a folder of the
    user's. Scratch folders a killed analysis left in it are removed."""
    try:
        folder = claim_folder(cache_dir, "--cache", CACHE_MARKER,
                              "an isrlab analyze cache", [f for f in inputs if "://" not in f])
        if not (folder / CACHE_MARKER).exists():
            write_text(folder / CACHE_MARKER, "isrlab analyze --cache: parsed traces, keyed "
                       "by the inputs' paths and contents; safe to delete\n", "--cache")
    except FileRefused as exc:
        raise TraceInputError(str(exc)) from None
    remove_stale_scratch(folder, CACHE_MARKER)
    return folder


def _digest(path: str) -> str:
    """The SHA-256 of a local file's bytes (a URI: its name alone)."""
    if "://" in path:
        return "-"
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return "?"


def _cache_path(cache_dir: str | None, files: Sequence[str], *, careful: bool = False
                ) -> Path | None:
    """``cache_dir/traces-<key>/`` (``events/``, ``side/`` Parquet, ``meta.json``), keyed
    by the inputs' paths and the SHA-256 of each local input's bytes: a file changed in
    place — even to the same size and mtime — is another key, never a stale verdict (the
    digest costs one read of the bytes, far less than the parse it saves). A URI is keyed
    by its name alone."""
    if cache_dir is None:
        return None
    folder = claim_cache(cache_dir, files)
    h = hashlib.sha256()
    h.update(b"schema-v7\n")  # the cached columns and side lines: bump when they change
    h.update(b"careful\n" if careful else b"")
    for f in files:
        h.update(f"{f}\0{_digest(f)}\n".encode())
    return folder / f"{_CACHE_PREFIX}{h.hexdigest()[:16]}"


def _store(cached: Path, loaded: Loaded, sizes: list[list[Any]]) -> None:
    """The load into ``cached``, whole or not at all: written into a scratch folder beside
    it, renamed onto ``cached`` once complete (``meta.json`` last). A concurrent analysis
    that stored the same key first keeps its copy; a copy left without ``meta.json`` (an
    older isrlab killed while writing) is replaced."""
    scratch = scratch_folder(cached.parent)
    try:
        for name, df in (("events", loaded.events), ("side", loaded.side)):
            df.write.option("compression", "zstd").parquet(str(scratch / name))
        (scratch / _META).write_bytes(orjson.dumps(
            {"problems": [asdict(p) for p in loaded.problems], "traces": sizes}))
        if cached.is_dir() and not (cached / _META).exists():
            shutil.rmtree(cached, ignore_errors=True)
        with contextlib.suppress(OSError):   # another analysis stored it meanwhile
            os.rename(scratch, cached)
    finally:
        if scratch.exists():
            remove_scratch(scratch)
