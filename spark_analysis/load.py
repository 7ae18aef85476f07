"""Reading trace files into one flat DataFrame, with every bad line accounted for.

Shape. One explicit ``StructType`` (``TRACE_SCHEMA``) covers every event: a wide, sparse row
whose columns are the contract fields of ``traces.schema.EVENTS``. Inference is never used
(STACK_NOTES §3.1: an extra pass, wrong widths, vanishing columns). Three fields need care:

* ``old`` / ``new`` are integers in ``hw_update`` / ``leo_update`` but broker lists in
  ``isr_change``. They are read as ``StringType``: Spark's JSON parser keeps the raw JSON
  text of a non-string value in a string column (``"5"``, ``"[1,2]"``), and
  ``analyses.typed`` casts per event.
* ``scenario``, ``fault_plan`` and other nested or loosely typed fields are kept as raw JSON
  text and parsed with narrow schemas where an analysis needs them (``SCENARIO_SCHEMA``).
* ``records`` (``[[offset, value, epoch], ...]``) is ``array<array<string>>``: numbers come
  back as their text and are cast in ``analyses``.

Fields the analyses do not read are strings too, so an unexpected type there can never turn a
good line into a corrupt one.

Bad lines. Files are read as text, each line parsed with ``from_json`` in PERMISSIVE mode
into a ``_corrupt_record`` column, and its ``crc`` member re-computed (``traces.integrity``).
A line that fails either is *reported* with its file and 1-based line number, never dropped
silently. Line numbers come from ``_metadata.file_block_start`` (which split of the file) and
``monotonically_increasing_id()`` (consecutive within one task): the line of a row is the
number of rows in earlier splits of its file plus its position in its split. That costs an
aggregate over all rows, so it is computed only when there are bad lines.

Inputs are files or folders (searched recursively for ``*.jsonl`` and ``*.jsonl.gz``); local
paths are expanded on the driver (sorted, de-duplicated), URIs with a scheme (``hdfs://``,
``s3a://``) are handed to Spark with ``recursiveFileLookup``. The trace id of a row is its
file path without the ``file:`` scheme. ``cache_dir`` keeps a zstd Parquet copy of the good
rows keyed by the inputs' names, sizes and mtimes, so a second analysis skips the JSON parse.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

_S, _L, _I = T.StringType(), T.LongType(), T.IntegerType()

#: The flat trace row. Order follows traces.schema: envelope, run-level, replica, clients.
TRACE_SCHEMA = T.StructType(
    [T.StructField(n, t) for n, t in [
        ("seq", _L), ("ts_us", _L), ("event", _S), ("node", _S), ("actor", _S),
        # run_start / run_end / run-level
        ("schema", _S), ("isrlab_version", _S), ("seed", _L), ("scenario", _S),
        ("fault_plan", _S), ("protocol", _S), ("status", _S), ("events", _L), ("sha256", _S),
        ("fault", _S), ("phase", _S), ("target", _S), ("invariant", _S), ("detail", _S),
        ("kind", _S), ("src", _S), ("dst", _S), ("msg", _S), ("error", _S),
        # replica state and controller
        ("topic", _S), ("partition", _I), ("replica", _I), ("old", _S), ("new", _S),
        ("reason", _S), ("role", _S), ("old_leo", _S), ("new_leo", _S),
        ("log_start_offset", _L), ("hw", _L), ("leo", _L),
        ("leader", _I), ("leader_epoch", _I), ("partition_epoch", _I),
        ("isr", T.ArrayType(_I)), ("election", _S),
        ("broker", _S), ("broker_epoch", _S), ("clean_shutdown", _S),
        ("proposed_isr", _S), ("path", _S), ("state", _S),
        ("base_offset", _S), ("next_offset", _S), ("recovery_point", _S),
        # clients
        ("key", _S), ("value", _S), ("producer", _S), ("acks", _S), ("offset", _L),
        ("group", _S), ("consumer", _S), ("policy", _S), ("generation", _S),
        ("assignment", _S),
        # end of run
        ("records", T.ArrayType(T.ArrayType(_S))), ("converged", T.BooleanType()),
        ("crc", _L),
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

_CRC_TAIL = r',"crc":(-?[0-9]+)\}$'
_PATTERNS = ("*.jsonl", "*.jsonl.gz")


class TraceInputError(Exception):
    """A path that names no trace file."""


@dataclass(frozen=True)
class BadLine:
    """A line that did not parse, or whose crc does not match: reported, never dropped."""

    trace: str
    line: int
    problem: str
    text: str


@dataclass(frozen=True)
class Loaded:
    """The good rows of every input trace plus the list of bad lines."""

    events: DataFrame
    bad_lines: list[BadLine]
    files: list[str]


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


def read_lines(spark: SparkSession, files: Sequence[str]) -> DataFrame:
    """Every line with its trace id, split start and a per-task row id, parsed."""
    raw = (
        spark.read.option("recursiveFileLookup", "true")
        .option("pathGlobFilter", "{*.jsonl,*.jsonl.gz}")
        .text(list(files))
        .select(
            F.col("value").alias("_line"),
            _trace_id(F.col("_metadata.file_path")).alias("trace"),
            F.col("_metadata.file_block_start").alias("_block"),
            F.monotonically_increasing_id().alias("_rid"),
        )
    )
    schema = T.StructType([*TRACE_SCHEMA.fields, T.StructField("_corrupt_record", _S)])
    parsed = F.from_json(
        "_line", schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    )
    body = F.regexp_replace("_line", _CRC_TAIL, "}")
    line_crc = F.regexp_extract("_line", _CRC_TAIL, 1).try_cast("long")
    crc_ok = F.crc32(body.cast("binary")) == line_crc
    return raw.select("trace", "_block", "_rid", "_line", parsed.alias("j"),
                      F.coalesce(crc_ok, F.lit(False)).alias("_crc_ok"))


def _problem(col_j: Column, crc_ok: Column) -> Column:
    return (
        F.when(col_j["_corrupt_record"].isNotNull(), F.lit("not a schema-1 JSON object"))
        .when(~crc_ok, F.lit("crc: missing or does not match the line"))
        .when(col_j["seq"].isNull() | col_j["event"].isNull(), F.lit("seq/event missing"))
    )


def load_traces(
    spark: SparkSession, paths: Iterable[str], *, cache_dir: str | None = None
) -> Loaded:
    """Read traces; returns the good rows (``TRACE_SCHEMA`` + ``trace``) and bad lines."""
    files = expand_paths(paths)
    cached = _cache_path(cache_dir, files)
    lines = read_lines(spark, files)
    problem = _problem(F.col("j"), F.col("_crc_ok"))
    # One parse serves both the bad-line report and the events: keep the parsed rows (the
    # raw text only of bad lines).
    flagged = lines.select("trace", "_block", "_rid", "j", problem.alias("_problem"),
                           F.when(problem.isNotNull(), F.col("_line")).alias("_line")).persist()
    bad = _bad_lines(lines, flagged)
    if cached is not None and cached.exists():
        events = spark.read.parquet(str(cached))
    else:
        events = flagged.where(F.col("_problem").isNull()).select("trace", "j.*").drop(
            "_corrupt_record")
        if cached is not None:
            (events.repartition("trace").sortWithinPartitions("trace", "seq")
             .write.mode("overwrite").option("compression", "zstd").parquet(str(cached)))
            events = spark.read.parquet(str(cached))
    return Loaded(events=events, bad_lines=bad, files=files)


def _bad_lines(lines: DataFrame, flagged: DataFrame) -> list[BadLine]:
    bad_rows = (flagged.where(F.col("_problem").isNotNull())
                .select("trace", "_block", "_rid", "_problem", "_line").collect())
    if not bad_rows:
        return []
    splits = lines.groupBy("trace", "_block").agg(
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
    for f in files:
        p = Path(f)
        st = p.stat() if p.exists() else None
        h.update(f"{f}\0{st.st_size if st else -1}\0{st.st_mtime_ns if st else -1}\n".encode())
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    return Path(cache_dir) / f"events-{h.hexdigest()[:16]}.parquet"
