"""What is wrong with the files the careful path reads, each problem placed on its 1-based
line.

Over ``load_text.read_lines``' rows (every line of the files that are not clean, each with its
problem column): ``_summarize`` aggregates each file (lines, good and bad lines, line 1, its
``run_end``, where its seq order breaks) and ``_file_problems`` gives the file-level verdicts
(not an isrlab trace, another schema, a line deleted, duplicated or moved, a line after
``run_end``: *trace skipped*; no ``run_end``: *tail lost*, ``_gzip_break`` saying how a local
gzip stream broke); ``_converted`` skips a file whose lines end in CR LF, ``_bad_lines`` lists
the single bad lines (*line skipped*), and ``_misnamed`` adds the hint when a file's name and
bytes disagree about gzip. Spark numbers no line: ``_locate``, ``_split_starts`` and
``_number`` count a line's place from the lines in its file's earlier splits (``_block``) and
its row id in its split (``_rid``), which is also how the fast paths place a side line that
fails its parse.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from spark_analysis import scan
from spark_analysis.load_rows import _CRLF, TAIL_LOST, TRACE_SKIPPED, BadLine
from traces.schema import SCHEMA_VERSION

#: A line to number: (trace, _block, _rid, problem, text).
_Located = tuple[str, int, int, str, str]
#: The same with the trace's id (``tid``) for its path.
_LocatedById = tuple[int, int, int, str, str]


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
