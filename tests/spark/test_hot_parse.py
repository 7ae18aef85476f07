"""The hot lines' parse (``spark_analysis.hot_parse``): the fast parser (DuckDB cuts, Arrow
types) gives the strict reader's rows wherever it answers, and leaves to the reader every
line it cannot vouch for — so the scan refuses exactly the lines pyarrow's reader refuses.

No Spark here: the scan's use of it, with Spark, is in ``test_scan.py`` and
``test_load_paths.py``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from tracebuild import catalogue

from spark_analysis import hot_parse, scan
from spark_analysis.hot_parse import HOT_ARROW, parse_hot
from traces import regress

pytestmark = pytest.mark.spark

#: A writer's produce_ack and hw_update (the member order of ``traces.writer``), unsealed.
ACK = {"seq": 292, "ts_us": 106948, "event": "produce_ack", "node": "producer-0",
       "actor": "producer", "topic": "orders", "partition": 1, "value": "p0-9", "offset": 0,
       "producer": 0, "acks": "all"}
HW = {"seq": 287, "ts_us": 106305, "event": "hw_update", "node": "broker-2",
      "actor": "orders-1", "topic": "orders", "partition": 1, "replica": 2, "old": 0, "new": 21,
      "reason": "follower_fetch", "role": "leader"}


def _lines(*raw: bytes) -> pa.LargeBinaryArray:
    """Lines as the scan hands them over: each with its newline, one contiguous buffer."""
    return pa.array([r + b"\n" for r in raw], pa.large_binary())


def _block(text: bytes) -> tuple[pa.LargeBinaryArray, pa.BooleanArray]:
    """A trace's lines and which are hot, as the scan has them."""
    region = memoryview(text if text.endswith(b"\n") else text + b"\n")
    block = scan._Block(region, 0, np.flatnonzero(np.frombuffer(region, np.uint8) == 10))
    return block.lines, pc.is_in(block.event, value_set=scan._HOT_SET)


def _all(lines: pa.LargeBinaryArray) -> pa.BooleanArray:
    """Every line hot."""
    return pa.array([True] * len(lines))


def _fast(lines: pa.LargeBinaryArray) -> pa.Table | None:
    """The fast parser's answer for all of ``lines``."""
    return hot_parse._tokenized(lines, _all(lines))


def _readers_verdict(lines: pa.LargeBinaryArray) -> pa.Table | None:
    """``parse_hot`` gives what pyarrow's reader gives: its rows (returned), or its refusal
    (None)."""
    try:
        expected = hot_parse._read(lines)
    except pa.ArrowInvalid:
        with pytest.raises(pa.ArrowInvalid):
            parse_hot(lines, _all(lines))
        return None
    assert parse_hot(lines, _all(lines)).equals(expected)
    return expected


def _traces(tmp_path: Path) -> list[tuple[str, bytes]]:
    """Every recorded regression trace (emulated runs) and every hand-built catalogue trace."""
    out = [(e["file"], gzip.decompress((regress.DEFAULT_DIR / e["file"]).read_bytes()))
           for e in regress.load_index(regress.DEFAULT_DIR)]
    for name, trace in sorted(catalogue().items()):
        out.append((name, trace.write(tmp_path / f"{name}.jsonl").read_bytes()))
    return out


def test_the_fast_parser_gives_the_readers_rows_for_every_recorded_and_catalogue_trace(
        tmp_path: Path) -> None:
    traces = _traces(tmp_path)
    assert len(traces) > 40
    for name, text in traces:
        lines, hot = _block(text)
        if not hot.true_count:
            continue
        fast = hot_parse._tokenized(lines, hot)
        assert fast is not None, name
        assert fast.equals(hot_parse._read(lines.filter(hot))), name
        assert fast.schema == HOT_ARROW and fast.num_rows == hot.true_count


def test_a_field_the_line_lacks_or_writes_as_null_is_null() -> None:
    lines = _lines(orjson.dumps(ACK), orjson.dumps({**HW, "role": None, "old": None}))
    table = parse_hot(lines, _all(lines))
    assert _fast(lines) is not None
    rows = table.to_pylist()
    assert rows[0]["replica"] is None and rows[0]["offset"] == 0 and rows[0]["acks"] == "all"
    assert rows[1]["role"] is None and rows[1]["old"] is None and rows[1]["new"] == 21
    assert rows[1]["value"] is None and rows[1]["reason"] == "follower_fetch"


@pytest.mark.parametrize("field, value", [
    ("partition", "1"),            # DuckDB alone would read 1
    ("partition", 1.5),            # ... 2
    ("offset", 1.0),
    ("offset", True),              # ... 1
    ("partition", 1 << 31),        # out of int32
    ("acks", 1),                   # DuckDB alone would read "1"
    ("value", [1, 2]),
    ("topic", {"name": "orders"}),
    ("role", False),
])
def test_a_field_of_another_json_type_is_refused_as_the_reader_refuses_it(
        field: str, value: object) -> None:
    lines = _lines(orjson.dumps(HW), orjson.dumps({**HW, field: value}))
    assert _fast(lines) is None
    with pytest.raises(pa.ArrowInvalid):
        hot_parse._read(lines)
    with pytest.raises(pa.ArrowInvalid):
        parse_hot(lines, _all(lines))


def test_a_number_too_large_for_int64_is_refused() -> None:
    lines = _lines(orjson.dumps(ACK).replace(b'"offset":0', b'"offset":99999999999999999999'))
    assert _fast(lines) is None
    with pytest.raises(pa.ArrowInvalid):
        parse_hot(lines, _all(lines))


@pytest.mark.parametrize("raw", [
    # an escaped string: the text between the quotes is not the string
    orjson.dumps({**ACK, "value": 'p0-"9"\\'}),
    # a member name spelt with an escape is still that member
    orjson.dumps(ACK).replace(b'"partition":1', b'"p\\u0061rtition":"1"'),
    orjson.dumps({**ACK, "node": "br\u00f6ker\n"}),
])
def test_a_line_with_a_backslash_is_left_to_the_reader(raw: bytes) -> None:
    lines = _lines(orjson.dumps(HW), raw)
    assert _fast(lines) is None
    table = _readers_verdict(lines)
    if table is not None:
        assert table.column("value")[1].as_py() == orjson.loads(raw).get("value")


def test_a_line_duckdb_cannot_read_gets_the_readers_verdict() -> None:
    # not JSON after the first member's value (DuckDB refuses it; so does the reader)
    lines = _lines(orjson.dumps(HW), b'{"seq":288,"ts_us":1,"event":"hw_update" "x"}')
    assert _fast(lines) is None
    with pytest.raises(pa.ArrowInvalid):
        parse_hot(lines, _all(lines))


def test_bytes_that_are_not_utf8_get_the_readers_verdict() -> None:
    lines = _lines(orjson.dumps(HW), orjson.dumps(ACK).replace(b"producer-0", b"producer-\xff"))
    assert _fast(lines) is None
    _readers_verdict(lines)


def test_lines_cut_into_several_queries_give_the_same_rows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _lines(*[orjson.dumps({**ACK, "seq": n, "offset": n, "value": f"p0-{n}"})
                     for n in range(500)])
    whole = _fast(lines)
    monkeypatch.setattr(hot_parse, "_TOKENIZE_BLOCK", 1000)  # ≈ 6 lines per query
    cut = _fast(lines)
    assert whole is not None and cut is not None
    assert cut.equals(whole) and cut.num_rows == 500
    assert cut.column("offset").to_pylist() == list(range(500))


def test_without_duckdb_the_reader_parses_every_line(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _lines(orjson.dumps(ACK), orjson.dumps(HW))
    monkeypatch.setattr(hot_parse, "DUCKDB", None)
    assert _fast(lines) is None
    assert parse_hot(lines, _all(lines)).equals(hot_parse._read(lines))
    assert parse_hot(lines, _all(lines)).column("event").to_pylist() == ["produce_ack", "hw_update"]


def test_only_the_hot_lines_are_parsed_and_a_backslash_elsewhere_does_not_matter() -> None:
    side = orjson.dumps({"seq": 1, "ts_us": 0, "event": "fault", "note": 'a "quoted" \\ word',
                         "partition": "not an int here"})
    lines = _lines(orjson.dumps(HW), side, orjson.dumps(ACK))
    hot = pa.array([True, False, True])
    fast = hot_parse._tokenized(lines, hot)
    assert fast is not None and fast.equals(hot_parse._read(lines.filter(hot)))
    assert fast.column("event").to_pylist() == ["hw_update", "produce_ack"]
    assert parse_hot(lines, hot).equals(fast)
