"""The native scan (``spark_analysis.scan``) on its own, without Spark: what a file yields.

Its agreement with the JVM and careful paths over the whole corpus is in
``test_load_paths.py``; these are the file-level rules behind it.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from tracebuild import catalogue

from spark_analysis import scan
from spark_analysis.load import HOT_EVENTS, SIDE_EVENTS, scan_input
from spark_analysis.scan import HOT, SIDE, SUMMARY, read_lines, scan_file, side_key
from traces.integrity import seal

pytestmark = pytest.mark.spark


def _scan(path: Path) -> tuple[dict[str, object], pa.Table]:
    batches = list(scan_file(str(path), 7))
    table = pa.Table.from_batches(batches)
    kinds = table.column("_kind").to_pylist()
    summary = orjson.loads(table.column("_raw")[kinds.index(SUMMARY)].as_py())
    return summary, table


def _events(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in read_lines(str(path))[0]]


def test_a_clean_file_yields_its_hot_rows_its_side_lines_and_a_summary(tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl.gz")
    events = _events(path)
    summary, table = _scan(path)
    kinds = table.column("_kind").to_pylist()
    assert summary["lines"] == len(events) and summary["bad"] == 0 and summary["ok"]
    assert summary["end_us"] == max(int(str(e["ts_us"])) for e in events)
    hot = [e for e in events if e["event"] in HOT_EVENTS]
    assert kinds.count(HOT) == len(hot)
    assert [r for r, k in zip(table.column("seq").to_pylist(), kinds, strict=True)
            if k == HOT] == [e["seq"] for e in hot]
    side_lines = [n for n, e in enumerate(events, 1) if e["event"] in SIDE_EVENTS]
    assert [n for n, k in zip(table.column("_line").to_pylist(), kinds, strict=True)
            if k == SIDE] == side_lines
    # each side line goes with its topic and partition (Spark partitions it by them)
    keys = [key for key, k in zip(zip(table.column("topic").to_pylist(),
                                      table.column("partition").to_pylist(), strict=True),
                                  kinds, strict=True) if k == SIDE]
    assert keys == [(events[n - 1].get("topic"), events[n - 1].get("partition"))
                    for n in side_lines]
    assert any(key != (None, None) for key in keys)


def test_a_side_lines_key_is_its_own_topic_and_partition_never_a_nested_ones() -> None:
    assert side_key(b'{"seq":3,"ts_us":0,"event":"final_log","node":"broker-1",'
                    b'"topic":"orders","partition":4,"records":[[0,"a",0]],"crc":1}') == (
        "orders", 4)
    # after a nested value (or an escaped string) the scan does not look: the load's parse
    # decides (and partitions the lines itself if it finds a key there)
    assert side_key(b'{"seq":0,"ts_us":0,"event":"run_start","scenario":{"topic":"x",'
                    b'"partition":1},"crc":1}') == (None, None)
    assert side_key(b'{"seq":5,"ts_us":0,"event":"isr_change","reason":"a\\"b",'
                    b'"topic":"t","partition":0}') == (None, None)
    assert side_key(b'{"seq":5,"ts_us":0,"event":"fault","topic":7,"partition":9999999999}'
                    ) == (None, None)


def test_a_line_whose_seq_is_not_its_place_stops_the_rows_of_its_file(tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"seq":3', b'"seq":4')
    path.write_bytes(b"".join(lines))
    summary, table = _scan(path)
    assert not summary["ok"] and "seq" in str(summary["error"]) and table.num_rows == 1


def test_a_resealed_line_fails_the_files_digest(tmp_path: Path) -> None:
    """An edit that keeps the line's prefix, type and crc (the line sealed again) is the
    case the per-line checks cannot see: the digest in ``run_end`` does."""
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    i = next(n for n, raw in enumerate(lines) if b'"event":"produce_ack"' in raw)
    event = orjson.loads(lines[i][: lines[i].rindex(b',"crc":')] + b"}")
    event["offset"] = int(str(event["offset"])) + 1
    lines[i] = seal(orjson.dumps(event))
    path.write_bytes(b"".join(lines))
    summary, _ = _scan(path)
    assert summary["has_end"] and not summary["ok"] and "sha256" in str(summary["error"])


def test_a_line_after_run_end_makes_the_file_not_clean(tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines, lines[1].replace(b'"seq":1,', b'"seq":%d,' % len(lines))]))
    summary, _ = _scan(path)
    assert not summary["ok"] and not summary["has_end"]
    assert summary["lines"] == len(lines) + 1


def test_a_hot_line_of_another_json_type_is_not_trusted(tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    i = next(n for n, raw in enumerate(lines) if b'"event":"produce_ack"' in raw)
    event = orjson.loads(raw := lines[i][: lines[i].rindex(b',"crc":')] + b"}")
    assert raw
    event["partition"] = "zero"
    lines[i] = seal(orjson.dumps(event))
    path.write_bytes(b"".join(lines))
    summary, table = _scan(path)
    assert summary["bad"] == 0 and not summary["ok"] and table.num_rows == 1


@pytest.fixture(params=["zlib-ng", "zlib"])
def inflate(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each gzip rule holds with zlib-ng's inflate (what isrlab installs) and with the
    standard library's (a worker without zlib-ng)."""
    import zlib

    from zlib_ng import zlib_ng
    monkeypatch.setattr(scan, "INFLATE", zlib_ng if request.param == "zlib-ng" else zlib)
    return str(request.param)


@pytest.mark.usefixtures("inflate")
def test_a_cut_gzip_stream_gives_the_lines_before_the_break(tmp_path: Path) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl.gz")
    whole = gzip.decompress(path.read_bytes()).splitlines()
    path.write_bytes(path.read_bytes()[:-40])
    lines, error = read_lines(str(path))
    assert error is not None and 0 < len(lines) <= len(whole)
    assert lines[:-1] == whole[: len(lines) - 1]
    summary, _ = _scan(path)  # rows read before the break may have gone out: load drops them
    assert not summary["ok"] and not summary["has_end"] and summary["lines"] == len(lines)


@pytest.mark.usefixtures("inflate")
def test_small_blocks_and_gzip_members_give_the_same_lines_and_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = catalogue()["s8_unclean"].write(tmp_path / "t.jsonl")
    text = path.read_bytes()
    half = text.index(b"\n", len(text) // 2) + 1
    members = tmp_path / "m.jsonl.gz"  # two gzip members, as `cat a.gz b.gz` makes
    members.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    whole_summary, whole = _scan(path)
    monkeypatch.setattr(scan, "_BLOCK", 97)  # lines and members cut across blocks
    for p in (path, members):
        assert read_lines(str(p)) == (text.splitlines(), None)
        summary, table = _scan(p)
        assert summary == whole_summary
        order = [("_kind", "ascending"), ("seq", "ascending"), ("_line", "ascending")]
        assert (table.sort_by(order).combine_chunks()
                .equals(whole.sort_by(order).combine_chunks()))


def test_each_file_gets_a_scan_task_of_its_own_largest_first(
        spark: SparkSession, tmp_path: Path) -> None:
    """Two files must not share a task while a core idles (a round-robin repartition placed
    both of two files in one task)."""
    files = []
    for i in range(5):
        f = tmp_path / f"t{i}.jsonl"
        f.write_bytes(b"x" * (100 * (i + 1)))
        files.append(str(f))
    df = scan_input(spark, files, {f: i for i, f in enumerate(files)})
    per_task = df.rdd.glom().map(lambda rows: [r["tid"] for r in rows]).collect()
    assert per_task == [[4], [3], [2], [1], [0]]
