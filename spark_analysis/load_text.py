"""The JVM's reading of traces: Spark's text and JSON sources over the files the native scan
does not read (URIs, every file with ``native=False``, and on the careful path every file).

``read_text`` gives every line with its trace, split (``_block``) and row id (``_rid``), lines
ending at LF only and bounded (``scan.MAX_LINE_BYTES``). The fast path's ``audit_text``
passes over that text without parsing JSON (each line's crc by ``_crc_ok``, its ``seq``,
``ts_us`` and ``event`` from its fixed prefix), giving a ``FileAudit`` per file, whose
``clean`` decides the path the file takes, and keeping the side lines (``audit_side``);
``read_hot`` then parses the clean files' hot lines with Spark's JSON source. The careful
path's ``read_lines`` parses every line on its own, with a problem column (BOM, CR LF, not a
JSON object, crc, no seq or event) that ``load_problems`` turns into verdicts and places.
``side_lines`` parses the side lines of every path in full (``TRACE_SCHEMA``), keyed by the
native scan's topic and partition when they come from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis import scan
from spark_analysis.load_problems import _split_starts
from spark_analysis.load_rows import (
    _CORRUPT,
    _CRLF,
    _HOT_ONLY,
    _HOT_SCHEMA,
    _PATH_COLUMNS,
    _S,
    HOT_EVENTS,
    LEVEL,
    LINE_SCHEMA,
    SIDE_EVENTS,
    TRACE_SCHEMA,
)

_CRC_MARK: Final = ',"crc":'
#: The crc member is looked for in this many last bytes of a line (``,"crc":4294967295}``
#: is 18).
_CRC_TAIL: Final = 32
#: The first characters of a line, where a writer's line has ``seq``, ``ts_us`` and ``event``.
_PREFIX: Final = 64
#: How a writer's line 1 opens (the line the audit keeps to check it is a run_start).
_LINE1: Final = '{"seq":0,'
_PERMISSIVE: Final = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
#: Hadoop's ``LineRecordReader`` option bounding a line (longer ones are skipped).
_MAX_LINE_OPTION: Final = "mapreduce.input.linerecordreader.line.maxlength"
_BOM_TEXT: Final = "\ufeff"
_BOM_PROBLEM: Final = ("starts with a UTF-8 byte-order mark (BOM): the file was re-saved by an "
                       "editor; isrlab traces have none")


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
