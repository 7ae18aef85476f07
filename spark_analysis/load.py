"""Reading trace files into one flat DataFrame, with every bad line and file accounted for.

Shape. One explicit ``StructType`` (``TRACE_SCHEMA``) covers every event: a wide, sparse row
holding the fields the analyses read (``traces.schema.EVENTS`` has more; the JSON parser skips
a member that is not in the schema without materialising it, which halves the parse cost
against the full contract). Inference is never used (STACK_NOTES §3.1). Fields that need care:

* ``old`` / ``new`` are integers in ``hw_update`` / ``leo_update`` but broker lists in
  ``isr_change``. They are read as ``StringType``: Spark's JSON parser keeps the raw JSON
  text of a non-string value in a string column (``"5"``, ``"[1,2]"``), and
  ``analyses.typed`` casts per event.
* ``scenario`` (nested) is kept as raw JSON text and parsed with a narrow schema where an
  analysis needs it (``SCENARIO_SCHEMA``); ``schema`` is text too, so a foreign value can
  never turn the header into a corrupt line.
* ``records`` (``[[offset, value, epoch], ...]``) is ``array<array<string>>``: numbers come
  back as their text and are cast in ``analyses``.

One pass over the JSON. Files are read as text (gzip by extension, Hadoop's codec) and each
line parsed with ``from_json`` in PERMISSIVE mode; its ``crc`` member is re-computed
(``traces.integrity``: CRC-32 of the line without ``,"crc":N``), with plain string functions
(a regex costs a third more). The parsed narrow rows are then hash-partitioned by
``(trace, topic, partition)`` and kept in memory (``persist``): that single shuffle is the
only large one of the whole analysis, because every anomaly is keyed by a superset of those
columns (``analyses`` is written so that no step needs another exchange of the big tables).
Everything below reads that cache, never the JSON again.

Bad input, reported and never dropped silently (``Loaded.problems``, each naming the file and
the 1-based line, ``str()`` = ``file:line: message``):

* a line that is not a JSON object, fails its crc or lacks ``seq``/``event``: *line skipped*,
  the rest of the trace is analysed;
* line 1 not a ``run_start`` (not an isrlab trace), or a ``schema`` other than
  ``traces.schema.SCHEMA_VERSION``: *trace skipped* (its lines are not analysed, and not
  listed one by one: a foreign file would otherwise produce a line per line);
* no ``run_end`` (the run was cut off, or a gzip stream ends early): *tail lost*, the lines
  read are analysed. Spark reads the files with ``ignoreCorruptFiles`` so that a truncated
  gzip keeps the lines before the break instead of failing the job; the driver then
  re-reads only such a file to say where the stream broke.

Line numbers come from ``_metadata.file_block_start`` (which split of the file) and
``monotonically_increasing_id()`` (consecutive within one task): the line of a row is the
number of rows in earlier splits of its file plus its position in its split. That costs an
aggregate over the cache, so it is computed only when there are bad lines.

Inputs are files or folders (searched recursively for ``*.jsonl`` and ``*.jsonl.gz``); local
paths are expanded on the driver (sorted, de-duplicated), URIs with a scheme (``hdfs://``,
``s3a://``) are handed to Spark with ``recursiveFileLookup``. The trace id of a row is its
file path without the ``file:`` scheme. ``cache_dir`` keeps a zstd Parquet copy of the good
rows (and the problems found, as JSON next to it) keyed by the inputs' names, sizes and
mtimes, so a second analysis of the same files skips the JSON parse.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

import orjson
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from traces.schema import SCHEMA_VERSION

_S, _L, _I = T.StringType(), T.LongType(), T.IntegerType()

#: The columns every analysis partitions by; the events DataFrame is hash-partitioned by them.
PARTITION_KEY: Final = ("trace", "topic", "partition")

#: The flat trace row: the fields the analyses read, in traces.schema order.
TRACE_SCHEMA = T.StructType(
    [T.StructField(n, t) for n, t in [
        ("seq", _L), ("ts_us", _L), ("event", _S),
        # run_start / run_end / run-level
        ("schema", _S), ("seed", _L), ("scenario", _S), ("protocol", _S), ("status", _S),
        ("events", _L), ("fault", _S),
        # replica state and controller
        ("topic", _S), ("partition", _I), ("replica", _I), ("old", _S), ("new", _S),
        ("reason", _S), ("role", _S), ("log_start_offset", _L), ("hw", _L), ("leo", _L),
        ("leader", _I), ("leader_epoch", _I), ("isr", T.ArrayType(_I)),
        # clients
        ("value", _S), ("producer", _S), ("acks", _S), ("offset", _L),
        ("group", _S), ("consumer", _S),
        # end of run
        ("records", T.ArrayType(T.ArrayType(_S))), ("converged", T.BooleanType()),
    ]]
)

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
])

_CRC_MARK: Final = ',"crc":'
_PATTERNS: Final = ("*.jsonl", "*.jsonl.gz")
#: What happened to the input named by a problem.
LINE_SKIPPED: Final = "line skipped"
TRACE_SKIPPED: Final = "trace skipped"
TAIL_LOST: Final = "tail lost"


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
    """The good rows of every input trace plus everything that was skipped, and why."""

    events: DataFrame
    problems: list[BadLine]
    files: list[str]
    #: The persisted DataFrame ``events`` reads (drop it with ``unpersist``).
    cache: DataFrame | None = None

    def unpersist(self) -> None:
        """Free the cached rows (the next analysis of ``events`` re-reads the input)."""
        if self.cache is not None:
            self.cache.unpersist()

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
            found = sorted({str(f.resolve()) for pat in _PATTERNS for f in path.rglob(pat)
                            if f.is_file()})
            if not found:
                raise TraceInputError(f"{p}: no *.jsonl or *.jsonl.gz files")
            out.extend(found)
        elif path.is_file():
            out.append(str(path.resolve()))
        else:
            raise TraceInputError(f"{p}: no such file or directory")
    return sorted(set(out))


def _trace_id(col: Column) -> Column:
    return F.regexp_replace(col, r"^file:(//)?", "")


def _crc_ok(line: Column) -> Column:
    """The line's ``crc`` member equals the CRC-32 of the line without it (string functions
    only: the member is the last one, ``,"crc":N}``)."""
    tail = F.substring_index(line, _CRC_MARK, -1)  # N}  (the whole line when there is none)
    n_tail = F.length(tail)
    body = F.concat(F.substring(line, F.lit(1), F.length(line) - n_tail - len(_CRC_MARK)),
                    F.lit("}"))
    crc = F.substring(tail, F.lit(1), n_tail - 1).try_cast("long")
    ok = (F.instr(line, _CRC_MARK) > 0) & line.endswith("}") & (
        F.crc32(body.cast("binary")) == crc)
    return F.coalesce(ok, F.lit(False))


def read_lines(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """Every line with its trace id, split start, per-task row id, parsed fields and problem.

    Columns: trace, _block, _rid, _problem (null for a good line), _line (text of a bad line
    only), then the ``TRACE_SCHEMA`` columns (null for a bad line).
    """
    raw = (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "{*.jsonl,*.jsonl.gz}")
        .option("ignoreCorruptFiles", "true")  # a cut gzip keeps its lines before the cut
        .text(list(files))
        .select(
            F.col("value").alias("_text"),
            _trace_id(F.col("_metadata.file_path")).alias("trace"),
            F.col("_metadata.file_block_start").alias("_block"),
            F.monotonically_increasing_id().alias("_rid"),
        )
    )
    schema = T.StructType([*TRACE_SCHEMA.fields, T.StructField("_corrupt_record", _S)])
    parsed = F.from_json(
        "_text", schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    )
    j = raw.select("trace", "_block", "_rid", "_text", parsed.alias("j"),
                   _crc_ok(F.col("_text")).alias("_crc_ok"))
    problem = (
        F.when(F.col("j._corrupt_record").isNotNull(),
               F.lit("not a schema-1 JSON object: the line is damaged"))
        .when(~F.col("_crc_ok"), F.lit("crc: missing or does not match the line"))
        .when(F.col("j.seq").isNull() | F.col("j.event").isNull(), F.lit("seq/event missing"))
    )
    good = problem.isNull()
    return j.select(
        "trace", "_block", "_rid", problem.alias("_problem"),
        F.when(~good, F.col("_text")).alias("_line"),
        *[F.when(good, F.col(f"j.{f.name}")).alias(f.name) for f in TRACE_SCHEMA.fields],
    )


def partition_events(df: DataFrame, partitions: int | None = None) -> DataFrame:
    """``df`` hash-partitioned by ``PARTITION_KEY`` (2 × the default parallelism)."""
    n = partitions or max(2, 2 * df.sparkSession.sparkContext.defaultParallelism)
    return df.repartition(n, *PARTITION_KEY)


def load_traces(
    spark: SparkSession, paths: Iterable[str], *, cache_dir: str | None = None,
    partitions: int | None = None,
) -> Loaded:
    """Read traces; the good rows (``trace`` + ``TRACE_SCHEMA``), persisted and partitioned by
    ``PARTITION_KEY``, and every problem found (see the module notes)."""
    files = expand_paths(paths)
    cached = _cache_path(cache_dir, files)
    cols = ["trace", *TRACE_SCHEMA.fieldNames()]
    if cached is not None and cached.exists() and cached.with_suffix(".problems.json").exists():
        problems = [BadLine(**d) for d in
                    orjson.loads(cached.with_suffix(".problems.json").read_bytes())]
        events = partition_events(spark.read.parquet(str(cached)), partitions)
        events = events.persist(StorageLevel.MEMORY_AND_DISK)
        return Loaded(events=events, problems=problems, files=files, cache=events)

    flagged = partition_events(read_lines(spark, files), partitions).persist(
        StorageLevel.MEMORY_AND_DISK)
    problems = _file_problems(flagged)
    skipped = sorted({p.trace for p in problems if p.action == TRACE_SKIPPED})
    problems += [b for b in _bad_lines(flagged) if b.trace not in skipped]
    problems.sort(key=lambda b: (b.trace, b.line, b.action))
    good = flagged.where(F.col("_problem").isNull())
    if skipped:
        good = good.where(~F.col("trace").isin(*skipped))
    events = good.select(*cols)
    if cached is not None:
        events.write.mode("overwrite").option("compression", "zstd").parquet(str(cached))
        cached.with_suffix(".problems.json").write_bytes(
            orjson.dumps([asdict(p) for p in problems]))
        flagged.unpersist()
        events = partition_events(spark.read.parquet(str(cached)), partitions).persist(
            StorageLevel.MEMORY_AND_DISK)
        return Loaded(events=events, problems=problems, files=files, cache=events)
    return Loaded(events=events, problems=problems, files=files, cache=flagged)


def _file_problems(flagged: DataFrame) -> list[BadLine]:
    """Per file: a line 1 that is not a readable ``run_start`` (trace skipped), or no
    ``run_end`` (tail lost). One small aggregate over the cached lines."""
    order = F.struct("_block", "_rid")
    rows = flagged.groupBy("trace").agg(
        F.count(F.lit(1)).alias("lines"),
        F.min_by(F.struct("event", "schema", "_problem"), order).alias("first"),
        F.max(F.when(F.col("event") == "run_end", F.lit(True))).alias("has_end"),
        F.max_by("event", F.when(F.col("_problem").isNull(), order)).alias("last_event"),
    ).collect()
    out: list[BadLine] = []
    for r in rows:
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
        if not r["has_end"]:
            broken = _gzip_break(trace)
            how = (f"the gzip stream {broken}" if broken else
                   "the trace ends without run_end (the run was cut off or the file truncated)")
            out.append(BadLine(trace, lines, f"{how}; line {lines} ({r['last_event'] or '?'}) "
                               f"is the last one read; lines 1-{lines} were analysed",
                               action=TAIL_LOST))
    return out


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
    if not bad_rows:
        return []
    splits = flagged.groupBy("trace", "_block").agg(
        F.count(F.lit(1)).alias("n"), F.min("_rid").alias("rid0"))
    w = Window.partitionBy("trace").orderBy("_block").rowsBetween(
        Window.unboundedPreceding, -1)
    before = {
        (r["trace"], r["_block"]): (int(r["before"]), int(r["rid0"]))
        for r in splits.select("trace", "_block", "rid0",
                               F.coalesce(F.sum("n").over(w), F.lit(0)).alias("before")).collect()
    }
    out = []
    for r in bad_rows:
        n_before, rid0 = before[(r["trace"], r["_block"])]
        out.append(BadLine(trace=r["trace"], line=n_before + int(r["_rid"]) - rid0 + 1,
                           problem=r["_problem"], text=(r["_line"] or "")[:200]))
    return sorted(out, key=lambda b: (b.trace, b.line))


def _cache_path(cache_dir: str | None, files: Sequence[str]) -> Path | None:
    """``cache_dir/<digest>.parquet``, keyed by the local inputs' paths, sizes and mtimes."""
    if cache_dir is None:
        return None
    h = hashlib.sha256()
    h.update(b"schema-v2\n")  # the cached columns: bump when TRACE_SCHEMA changes
    for f in files:
        p = Path(f)
        st = p.stat() if p.exists() else None
        h.update(f"{f}\0{st.st_size if st else -1}\0{st.st_mtime_ns if st else -1}\n".encode())
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    return Path(cache_dir) / f"events-{h.hexdigest()[:16]}.parquet"
