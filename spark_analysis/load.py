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

Where the parts live: this module puts them together (``load_traces``, and the native scan's
driver side, ``scan_input`` and ``native_scan``); ``load_rows`` holds the schemas, the
partitioning, ``BadLine`` and ``Loaded``; ``load_inputs`` the paths (``expand_paths``,
``TraceInputError``); ``load_text`` the JVM's passes (``read_text``, ``audit_text``,
``read_hot``, ``read_lines``, ``side_lines``); ``load_problems`` the careful path's verdicts
and line numbers; ``load_cache`` ``--cache``. Every name of theirs that other modules use is
importable from here (``__all__``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Final

import orjson
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_analysis import scan
from spark_analysis.load_cache import _META, CACHE_MARKER, _cache_path, _store, claim_cache
from spark_analysis.load_inputs import TraceInputError, expand_paths
from spark_analysis.load_problems import (
    _bad_lines,
    _converted,
    _file_problems,
    _locate,
    _LocatedById,
    _misnamed,
    _number,
    _summarize,
)
from spark_analysis.load_rows import (
    _CORRUPT,
    _PATH_COLUMNS,
    EVENT_COLUMNS,
    EVENT_SCHEMA,
    HOT_EVENTS,
    LEVEL,
    LINE_SCHEMA,
    LINE_SKIPPED,
    PARTITION_KEY,
    SCENARIO_SCHEMA,
    SIDE_EVENTS,
    TAIL_LOST,
    TRACE_SCHEMA,
    TRACE_SKIPPED,
    TRACES_SCHEMA,
    BadLine,
    Loaded,
    _default_partitions,
    partition_events,
    swap_key,
)
from spark_analysis.load_text import (
    Audit,
    FileAudit,
    audit_side,
    audit_text,
    read_hot,
    read_lines,
    read_text,
    side_lines,
)

__all__ = [
    "CACHE_MARKER",
    "EVENT_COLUMNS",
    "EVENT_SCHEMA",
    "HOT_EVENTS",
    "LEVEL",
    "LINE_SCHEMA",
    "LINE_SKIPPED",
    "PARTITION_KEY",
    "SCENARIO_SCHEMA",
    "SIDE_EVENTS",
    "TAIL_LOST",
    "TRACES_SCHEMA",
    "TRACE_SCHEMA",
    "TRACE_SKIPPED",
    "Audit",
    "BadLine",
    "FileAudit",
    "Loaded",
    "TraceInputError",
    "_misnamed",
    "audit_side",
    "audit_text",
    "claim_cache",
    "expand_paths",
    "load_traces",
    "native_scan",
    "partition_events",
    "read_hot",
    "read_lines",
    "read_text",
    "scan_input",
    "side_lines",
    "swap_key",
]

_SIDE_TEXT: Final = "tid int, _block long, _rid long, _raw string"
#: At most this many tasks read the local files (a task reads its files one after another).
_MAX_SCAN_TASKS: Final = 1000


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
