"""The ways a trace is read (issue #6): a fast path for files whose every crc matches, line 1
is a schema-1 ``run_start`` and a ``run_end`` is there (the native scan for local files, the
JVM's text and JSON sources for URIs), and the careful path (each line parsed on its own) for
every other file. They must load the same rows and report the same problems, at the same
lines.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import Corpus, Run
from pyspark.sql import DataFrame, SparkSession
from pyspark.testing import assertDataFrameEqual
from tracebuild import catalogue

from spark_analysis.load import LINE_SKIPPED, TRACE_SKIPPED, BadLine, load_traces
from traces.integrity import seal

pytestmark = pytest.mark.spark


def _same_rows(a: DataFrame, b: DataFrame) -> None:
    assert a.count() == b.count()
    assert a.exceptAll(b).isEmpty() and b.exceptAll(a).isEmpty()


def _slice(corpus: Corpus) -> list[str]:
    """Every trace of the corpus but the random runs, and every tenth random run: each kind
    of file the corpus has (the catalog's gzip recordings, the hand-built traces with their
    problems, the --trace-messages run, the random runs plain), in a third of the time the
    whole corpus takes on the careful path."""
    random = sorted(t for t, k in corpus.kind.items() if k == "random")
    return sorted([t for t, k in corpus.kind.items() if k != "random"] + random[::10])


@pytest.mark.parametrize("way", ["jvm", "careful"])
def test_the_native_scan_and_the_other_paths_load_the_same_rows_from_every_kind_of_trace(
        spark: SparkSession, corpus: Corpus, way: str) -> None:
    paths = _slice(corpus)
    assert len(paths) >= 60
    native = load_traces(spark, paths)
    other = load_traces(spark, paths, careful=way == "careful", native=way != "jvm")
    try:
        # rows compared by trace path (the ids are each load's own)
        _same_rows(native.named(native.events), other.named(other.events))
        _same_rows(native.named(native.side), other.named(other.side))
        assertDataFrameEqual(native.traces.drop("tid"), other.traces.drop("tid"),
                             checkRowOrder=False)
        assert native.problems == other.problems and native.problems
    finally:
        native.unpersist()
        other.unpersist()


def _unsealed(raw: bytes) -> dict[str, object]:
    event: dict[str, object] = orjson.loads(raw[: raw.rindex(b',"crc":')] + b"}")
    return event


def test_a_side_line_of_the_wrong_type_with_a_good_crc_is_named_by_file_and_line(
        spark: SparkSession, tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl.gz")
    lines = gzip.decompress(path.read_bytes()).splitlines(keepends=True)
    i = next(n for n, raw in enumerate(lines) if _unsealed(raw)["event"] == "leader_elected")
    event = _unsealed(lines[i])
    event["leader"] = "broker one"  # an int in the schema; the crc still matches the line
    lines[i] = seal(orjson.dumps(event))
    path.write_bytes(gzip.compress(b"".join(lines), mtime=0))
    want = [(str(path.resolve()), i + 1, LINE_SKIPPED)]
    for careful, native in ((False, True), (False, False), (True, True)):
        loaded = load_traces(spark, [str(path)], careful=careful, native=native)
        try:
            assert [(p.trace, p.line, p.action) for p in loaded.problems] == want
            assert "not a schema-1 JSON object" in loaded.problems[0].problem
            assert loaded.side.where("event = 'leader_elected'").count() == sum(
                1 for raw in lines if _unsealed(raw)["event"] == "leader_elected") - 1
        finally:
            loaded.unpersist()


def test_a_hot_line_of_another_json_type_sends_its_file_to_the_careful_path(
        spark: SparkSession, tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    i = next(n for n, raw in enumerate(lines) if _unsealed(raw)["event"] == "produce_ack")
    event = _unsealed(lines[i])
    event["offset"] = str(event["offset"])  # a string where the writer writes a number
    lines[i] = seal(orjson.dumps(event))
    path.write_bytes(b"".join(lines))
    native = load_traces(spark, [str(path)])
    careful = load_traces(spark, [str(path)], careful=True)
    try:
        _same_rows(native.events, careful.events)
        assert native.problems == careful.problems
    finally:
        native.unpersist()
        careful.unpersist()


def _shuffles_of_side(df: DataFrame) -> list[str]:
    """The shuffles in the plan of ``df`` and of the first cache it reads (``side_all``),
    not inside the caches that one reads in turn (the native scan's rows): what the side
    lines cost beyond the scan."""
    found: list[str] = []

    def walk(node: Any, caches: int) -> None:
        name = str(node.getClass().getSimpleName())
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan(), caches)
        elif name == "InMemoryTableScanExec":
            if caches == 0:
                walk(node.relation().cachedPlan(), 1)
        elif name.endswith("QueryStageExec"):
            walk(node.plan(), caches)
        else:
            if name == "ShuffleExchangeExec":
                found.append(str(node.toString()).splitlines()[0])
            children = node.children()
            for i in range(children.size()):
                walk(children.apply(i), caches)

    walk(df._jdf.queryExecution().executedPlan(), 0)  # noqa: SLF001 - py4j's plan
    return found


def test_the_side_lines_of_scanned_traces_are_parsed_where_the_scan_put_them(
        spark: SparkSession, corpus: Corpus, tmp_path: Path) -> None:
    """The native scan sends each side line with its topic and partition (``scan.side_key``),
    so Spark's partitioning of the scan's rows already puts it where the analyses group it:
    the parsed lines keep that partitioning and need no shuffle of their own. (They had one:
    106 MiB of final logs shuffled a second time per 10M-event pass, each trace's lines
    parsed by one task.) The careful path's lines are partitioned after parsing."""
    built = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    emulated = next(t for t, k in sorted(corpus.kind.items()) if k == "random")
    paths = [str(built), emulated]
    native = load_traces(spark, paths)
    careful = load_traces(spark, paths, careful=True)
    try:
        assert not native.problems
        assert _shuffles_of_side(native.side) == []
        assert len(_shuffles_of_side(careful.side)) == 1
        _same_rows(native.side, careful.side)
        # what the analyses rely on: a partition's side lines are grouped without a shuffle
        assert _shuffles_of_side(native.side.groupBy("tid", "topic", "partition").count()) == []
    finally:
        native.unpersist()
        careful.unpersist()


def _resealed(lines: list[bytes]) -> bytes:
    """``lines`` as a clean file again: ``run_end``'s digest and line count recomputed over
    the lines before it, and the line sealed (what the writer would have written)."""
    end = _unsealed(lines[-1])
    end["sha256"] = hashlib.sha256(b"".join(lines[:-1])).hexdigest()
    end["events"] = len(lines) - 1
    return b"".join([*lines[:-1], seal(orjson.dumps(end))])


def test_a_side_line_the_scan_keys_otherwise_than_spark_is_partitioned_by_sparks_parse(
        spark: SparkSession, tmp_path: Path) -> None:
    """The load checks each side line's parsed topic and partition against the scan's; where
    one differs (a topic written as a number: Spark keeps its text, ``"7"``, where the
    scan's reader finds no string), the parsed lines are partitioned by their parse, as
    on the careful path: the same rows and the same grouping either way."""
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    i = next(n for n, raw in enumerate(lines) if _unsealed(raw)["event"] == "leader_elected")
    event = _unsealed(lines[i])
    event["topic"] = 7
    lines[i] = seal(orjson.dumps(event))
    path.write_bytes(_resealed(lines))
    native = load_traces(spark, [str(path)])
    careful = load_traces(spark, [str(path)], careful=True)
    try:
        assert not native.problems  # a clean file: the native scan read it
        assert native.side.where("topic = '7'").count() == 1
        assert len(_shuffles_of_side(native.side)) == 1
        _same_rows(native.side, careful.side)
    finally:
        native.unpersist()
        careful.unpersist()


def test_an_empty_file_is_a_skipped_trace_not_silence(spark: SparkSession, tmp_path: Path
                                                      ) -> None:
    good = catalogue()["s8_unclean"].write(tmp_path / "good.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    loaded = load_traces(spark, [str(tmp_path)])
    try:
        assert [(p.trace, p.line, p.action) for p in loaded.problems] == [
            (str(empty.resolve()), 1, TRACE_SKIPPED)]
        assert [r["trace"] for r in loaded.traces.collect()] == [str(good.resolve())]
    finally:
        loaded.unpersist()


def test_the_parquet_cache_gives_back_the_same_rows_and_problems(
        spark: SparkSession, bad_run: Run, tmp_path: Path) -> None:
    first = load_traces(spark, [str(bad_run.folder)], cache_dir=str(tmp_path))
    (meta,) = tmp_path.glob("traces-*/meta.json")
    saved = orjson.loads(meta.read_bytes())
    assert [BadLine(**p) for p in saved["problems"]] == first.problems and first.problems
    # a mark only the cache can carry: the second load must come from it
    meta.write_bytes(orjson.dumps({**saved, "problems": saved["problems"][:1]}))
    second = load_traces(spark, [str(bad_run.folder)], cache_dir=str(tmp_path))
    try:
        assert second.problems == first.problems[:1]
        _same_rows(first.events, second.events)
        _same_rows(first.side, second.side)
        assertDataFrameEqual(first.traces, second.traces, checkRowOrder=False)
    finally:
        first.unpersist()
        second.unpersist()
