"""``isrlab import`` as a Spark job: a month of a large cluster's logs, on a cluster.

When the logs are a URI (``hdfs://``, ``s3a://``, ``file:/``), a large local folder or
``--master`` is given, the parse runs in Spark's Python workers and only the events — a
small fraction of a log's lines — come back to the driver, which writes the trace.

* Listing: Spark's ``binaryFile`` source with ``recursiveFileLookup`` and the glob
  ``*.log*`` (the in-process import's rule: a name containing ``.log``, so rotated and gzip
  files too). The listing is read first (paths and sizes only; Spark reads no content for
  it) and sorted by path: a file's index is its place in that order.
* Parse: ``mapInArrow`` over ``(path, content)``, one whole file per row (a log4j record
  may continue over lines, so a file is the unit; ``binaryFile`` holds up to 2 GiB per
  file). Each file goes through ``importer.import_file`` — the same code as the in-process
  import — and yields its event rows, then one summary row with its counts (or why it
  cannot be read: a binary file is bad input, as in process).
* Merge: the event rows sorted by (time, file index, line, place in its file) — the
  in-process import's stable sort made total — and streamed to the driver a partition at
  a time (``toLocalIterator``), which writes the trace with ``importer.write_trace``. The
  parsed rows are persisted once for both the counts and the events.

So an import in Spark writes the same events, byte for byte, as one in process from the
same files (a test holds them to it); only the header's file names differ (absolute paths
here, ``file:`` dropped).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from typing import Any, Final, TextIO

import orjson
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from spark_analysis.progress import SparkProgress
from traces.logs.importer import (
    BrokerHint,
    FileImport,
    ImportError_,
    ImportResult,
    Row,
    check_out,
    import_file,
    write_trace,
    zone,
)
from traces.logs.lines import FileStats, LogFileError, decode_text, records_of

#: the rows the parse sends back: an event (``kind`` 0) or one file's summary (1)
PARSED_SCHEMA: Final = ("_kind int, file int, ts long, line long, n long, kind string, "
                        "ev string, summary string")
#: the in-process import's rule for folders: a name containing ``.log``
LOG_GLOB: Final = "*.log*"


def shown(path: str) -> str:
    """A path as the trace's header shows it: local files without ``file:``."""
    return path[len("file:"):] if path.startswith("file:") else path


def import_with_spark(spark: SparkSession, paths: Sequence[str], out: str, *,
                      tz: str = "UTC", broker: BrokerHint | int | None = None,
                      cluster: str = "imported", progress: TextIO | None = None,
                      fmt: str = "auto") -> ImportResult:
    """Parse ``paths`` (files, folders, URIs) in Spark and write the trace ``out``;
    ImportError_ on bad input (one line)."""
    zone(tz)   # a bad --tz is bad input before any Spark work
    check_out(out, list(paths))
    with SparkProgress(spark, progress, "import") if progress is not None else nullcontext():
        listed = _listing(spark, paths)
        index = {p: i for i, p in enumerate(listed)}
        parsed = (_files(spark, paths).select("path", "content")
                  .mapInArrow(_parser(index, tz, broker, fmt), PARSED_SCHEMA)
                  .persist(StorageLevel.MEMORY_AND_DISK))
        try:
            summaries = sorted((r["file"], orjson.loads(r["summary"]))
                               for r in parsed.where("_kind = 1").collect())
            result = ImportResult(out, [shown(p) for p in listed], fmt)
            for _i, s in summaries:
                if s.get("error"):
                    raise ImportError_(s["error"])
                result.add(_file_import(s))
            n_rows = sum(int(s["events"]) for _i, s in summaries)
            events = (parsed.where("_kind = 0").orderBy("ts", "file", "line", "n")
                      .select("ts", "file", "line", "kind", "ev").toLocalIterator())
            rows: Iterator[Row] = ((int(r["ts"]), int(r["file"]), int(r["line"]), r["kind"],
                                    orjson.loads(r["ev"])) for r in events)
            write_trace(result, rows, n_rows, cluster=cluster, progress=None)
        finally:
            parsed.unpersist()
    return result


def _files(spark: SparkSession, paths: Sequence[str]) -> Any:
    return (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
            .option("pathGlobFilter", LOG_GLOB).load(list(paths)))


def _listing(spark: SparkSession, paths: Sequence[str]) -> list[str]:
    try:
        listed = sorted(r["path"] for r in _files(spark, paths).select("path").collect())
    except AnalysisException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ImportError_(f"{' '.join(paths)}: {first}") from None
    if not listed:
        raise ImportError_(f"{' '.join(paths)}: no log file found (names containing .log)")
    return listed


def _parser(index: dict[str, int], tz: str, broker: BrokerHint | int | None, fmt: str) -> Any:
    """The task's function: whole files in, event rows and one summary per file out."""

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tzinfo = zone(tz)
        for batch in batches:
            for path, content in zip(batch.column("path").to_pylist(),
                                     batch.column("content").to_pylist(), strict=True):
                i, name = index[path], shown(path)
                stats = FileStats()
                try:   # the lines are read as parsed: a bad file is found on the way
                    one = import_file(records_of(name, decode_text(content, name), tzinfo,
                                                 stats), stats, i, broker, fmt, name=name)
                except LogFileError as exc:
                    yield _summary(i, {"error": str(exc)})
                    continue
                for start in range(0, len(one.rows), 8192):
                    yield _events(one.rows[start:start + 8192], start)
                yield _summary(i, {
                    "events": len(one.rows), "records": one.records, "parsed": one.parsed,
                    "by_kind": dict(one.by_kind), "unframed": one.unframed,
                    "continuation": one.continuation,
                    "unparsed_replication": one.unparsed_replication,
                    "samples": one.samples,
                    "broken": one.broken, "name": one.name, "broker": one.broker,
                    "broker_from": one.broker_from, "unknown_broker": one.unknown_broker,
                    "first_us": one.first_us, "last_us": one.last_us})

    return parse


def _events(rows: list[Row], start: int) -> pa.RecordBatch:
    n = len(rows)
    return pa.RecordBatch.from_pydict({
        "_kind": pa.array([0] * n, pa.int32()),
        "file": pa.array([r[1] for r in rows], pa.int32()),
        "ts": pa.array([r[0] for r in rows], pa.int64()),
        "line": pa.array([r[2] for r in rows], pa.int64()),
        "n": pa.array(range(start, start + n), pa.int64()),
        "kind": pa.array([r[3] for r in rows], pa.string()),
        "ev": pa.array([orjson.dumps(r[4]).decode() for r in rows], pa.string()),
        "summary": pa.nulls(n, pa.string()),
    })


def _summary(i: int, facts: dict[str, Any]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "_kind": pa.array([1], pa.int32()), "file": pa.array([i], pa.int32()),
        "ts": pa.nulls(1, pa.int64()), "line": pa.nulls(1, pa.int64()),
        "n": pa.nulls(1, pa.int64()), "kind": pa.nulls(1, pa.string()),
        "ev": pa.nulls(1, pa.string()),
        "summary": pa.array([orjson.dumps(facts).decode()], pa.string()),
    })


def _file_import(s: dict[str, Any]) -> FileImport:
    f = FileImport(records=s["records"], parsed=s["parsed"], unframed=s["unframed"],
                   continuation=s["continuation"],
                   unparsed_replication=s["unparsed_replication"], samples=s["samples"],
                   broken=s["broken"], name=s["name"], broker=s["broker"],
                   broker_from=s["broker_from"], unknown_broker=s["unknown_broker"],
                   first_us=s["first_us"], last_us=s["last_us"])
    f.by_kind.update(s["by_kind"])
    return f

