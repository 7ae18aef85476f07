"""Reading traces: good ones read back, damaged ones are refused at the first bad line."""

from __future__ import annotations

import gzip
import hashlib
import pickle
from pathlib import Path
from typing import Any

import orjson
import pytest

from traces import integrity
from traces.reader import (
    TraceError,
    iter_events,
    iter_events_lenient,
    read_trace,
)
from traces.schema import SCHEMA_VERSION

# --- a tiny trace writer: the documented format (orjson + integrity.seal) -------------------


def sealed(obj: dict[str, Any]) -> bytes:
    return integrity.seal(orjson.dumps(obj))


def run_start(**overrides: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "seq": 0,
        "ts_us": 0,
        "event": "run_start",
        "node": "sim",
        "actor": "sim",
        "schema": SCHEMA_VERSION,
        "isrlab_version": "0.1.0",
        "seed": 7,
        "scenario": {"name": "toy"},
        "fault_plan": [],
        "protocol": "4.1",
    }
    event.update(overrides)
    return event


def hw_update(seq: int) -> dict[str, Any]:
    return {
        "seq": seq,
        "ts_us": 10 * seq,
        "event": "hw_update",
        "node": "broker-1",
        "actor": "t-0",
        "topic": "t",
        "partition": 0,
        "replica": 1,
        "old": seq - 1,
        "new": seq,
        "reason": "produce",
        "role": "leader",
    }


def run_end(before: list[bytes], **overrides: Any) -> bytes:
    event: dict[str, Any] = {
        "seq": len(before),
        "ts_us": 10 * len(before),
        "event": "run_end",
        "node": "sim",
        "actor": "sim",
        "status": "ok",
        "events": len(before),
        "sha256": hashlib.sha256(b"".join(before)).hexdigest(),
    }
    event.update(overrides)
    return sealed(event)


def trace_lines(total: int = 100, **start: Any) -> list[bytes]:
    """``total`` lines: run_start, hw_update events, run_end."""
    lines = [sealed(run_start(**start))] + [sealed(hw_update(i)) for i in range(1, total - 1)]
    return lines + [run_end(lines)]


def write(tmp_path: Path, lines: list[bytes], name: str = "trace.jsonl") -> Path:
    data = b"".join(lines)
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def error_of(path: Path, *, verify: bool = True) -> TraceError:
    with pytest.raises(TraceError) as caught:
        read_trace(path, verify=verify)
    return caught.value


# --- good traces --------------------------------------------------------------------------


def test_a_sound_trace_reads_back_as_header_events_and_footer(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, trace_lines(100)))
    assert trace.header["event"] == "run_start"
    assert trace.header["schema"] == SCHEMA_VERSION
    assert [e["seq"] for e in trace.events] == list(range(1, 99))
    assert trace.footer is not None and trace.footer["events"] == 99
    assert trace.problems == []


def test_events_come_without_their_crc_member(tmp_path: Path) -> None:
    events = list(iter_events(write(tmp_path, trace_lines(5))))
    assert [e["event"] for e in events] == ["run_start"] + ["hw_update"] * 3 + ["run_end"]
    assert all("crc" not in e for e in events)
    assert list(events[1]) == list(hw_update(1))  # members in file order


def test_a_gzip_trace_reads_like_the_plain_one(tmp_path: Path) -> None:
    lines = trace_lines(50)
    plain = read_trace(write(tmp_path, lines))
    packed = read_trace(write(tmp_path, lines, "trace.jsonl.gz"))
    assert (packed.header, packed.events, packed.footer) == (
        plain.header,
        plain.events,
        plain.footer,
    )


def test_digest_names_the_content_and_raw_digest_the_stored_file(tmp_path: Path) -> None:
    lines = trace_lines(50)
    content = b"".join(lines)
    plain = read_trace(write(tmp_path, lines))
    packed_path = write(tmp_path, lines, "trace.jsonl.gz")
    packed = read_trace(packed_path)
    assert plain.digest == packed.digest == hashlib.sha256(content).hexdigest()
    assert plain.raw_digest == plain.digest
    assert packed.raw_digest == hashlib.sha256(packed_path.read_bytes()).hexdigest()


def test_gzip_is_recognised_by_its_magic_bytes_not_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes(gzip.compress(b"".join(trace_lines(10))))
    assert len(read_trace(path).events) == 8


def test_iter_events_streams_the_good_lines_before_the_bad_one(tmp_path: Path) -> None:
    lines = trace_lines(100)
    lines[56] = lines[56].replace(b'"new":56', b'"new":99')
    seen: list[int] = []
    with pytest.raises(TraceError) as caught:
        for event in iter_events(write(tmp_path, lines)):
            seen.append(event["seq"])
    assert seen == list(range(56))
    assert caught.value.line == 57


def test_stopping_early_closes_the_file(tmp_path: Path) -> None:
    with iter_events(write(tmp_path, trace_lines(100), "trace.jsonl.gz")) as events:
        first = next(events)
    assert first["event"] == "run_start"
    with pytest.raises(StopIteration):
        next(events)


# --- damage, each found at its line -------------------------------------------------------


def test_an_altered_value_is_a_crc_mismatch_on_its_own_line(tmp_path: Path) -> None:
    lines = trace_lines(100)
    lines[56] = lines[56].replace(b'"new":56', b'"new":99')
    path = write(tmp_path, lines)
    error = error_of(path)
    assert (error.line, error.field) == (57, "crc")
    assert error.message == "crc mismatch: the line was altered"
    assert str(error) == f"{path}:57: crc mismatch: the line was altered"


def test_a_line_without_crc_is_refused(tmp_path: Path) -> None:
    lines = trace_lines(20)
    lines[5] = orjson.dumps(hw_update(5)) + b"\n"
    error = error_of(write(tmp_path, lines))
    assert (error.line, error.field) == (6, "crc")
    assert error.message.startswith("no crc member")


def test_a_removed_line_is_named_by_the_line_after_it(tmp_path: Path) -> None:
    lines = trace_lines(100)
    del lines[41]
    error = error_of(write(tmp_path, lines))
    assert (error.line, error.field) == (42, "seq")
    assert error.message == "expected seq 41, found 42: a line is missing before this one"


def test_several_removed_lines_are_counted(tmp_path: Path) -> None:
    lines = trace_lines(100)
    del lines[10:14]
    error = error_of(write(tmp_path, lines))
    assert error.line == 11
    assert error.message == "expected seq 10, found 14: 4 lines are missing before this one"


def test_two_swapped_lines_are_named_as_swapped(tmp_path: Path) -> None:
    lines = trace_lines(100)
    lines[30], lines[31] = lines[31], lines[30]
    error = error_of(write(tmp_path, lines))
    assert (error.line, error.field) == (31, "seq")
    assert error.message == "expected seq 30, found 31: lines 31 and 32 are swapped"


def test_a_repeated_line_is_refused(tmp_path: Path) -> None:
    lines = trace_lines(100)
    lines.insert(21, lines[20])
    error = error_of(write(tmp_path, lines))
    assert error.line == 22
    assert error.message == "expected seq 21, found 20: this line is repeated or out of order"


def test_a_missing_first_line_is_not_mistaken_for_a_foreign_file(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, trace_lines(20)[1:]))
    assert (error.line, error.field) == (1, "seq")
    assert error.message == "expected seq 0, found 1: the first line is missing (run_start)"


def test_a_trace_without_run_end_was_cut_off(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, trace_lines(100)[:-1]))
    assert (error.line, error.field) == (99, "run_end")
    assert error.message == (
        "the trace ends without run_end: line 99 (hw_update) is the last; "
        "the run was cut off or the file truncated"
    )


def test_a_partial_last_line_is_reported_as_truncated(tmp_path: Path) -> None:
    lines = trace_lines(100)[:-1]
    lines[-1] = lines[-1][:25]  # the writer was killed mid-line
    error = error_of(write(tmp_path, lines))
    assert error.line == 99
    assert error.message == (
        "line 99 is cut off (no newline at the end): the trace was truncated while being written"
    )


def test_a_damaged_line_in_the_middle_is_not_json(tmp_path: Path) -> None:
    lines = trace_lines(30)
    lines[12] = b'{"seq":12,"ts_us"\n'
    error = error_of(write(tmp_path, lines))
    assert error.line == 13
    assert error.message == "not valid JSON: the line is damaged"


def test_a_run_end_with_the_wrong_event_count_is_refused(tmp_path: Path) -> None:
    lines = trace_lines(10)[:-1]
    path = write(tmp_path, [*lines, run_end(lines, events=12)])
    error = error_of(path)
    assert (error.line, error.field) == (10, "events")
    assert error.message == "run_end says events=12 but 9 lines precede it"


def test_a_run_end_with_the_wrong_digest_is_refused(tmp_path: Path) -> None:
    lines = trace_lines(10)[:-1]
    error = error_of(write(tmp_path, [*lines, run_end(lines, sha256="0" * 64)]))
    assert (error.line, error.field) == (10, "sha256")
    assert error.message.startswith("sha256 mismatch: run_end says '0000")


def test_a_line_replaced_by_another_sealed_line_is_caught_by_the_digest(tmp_path: Path) -> None:
    lines = trace_lines(10)
    forged = hw_update(4) | {"new": 1000}
    lines[4] = sealed(forged)  # its own crc and seq are right
    error = error_of(write(tmp_path, lines))
    assert (error.line, error.field) == (10, "sha256")


def test_data_after_run_end_is_refused(tmp_path: Path) -> None:
    lines = trace_lines(10)
    error = error_of(write(tmp_path, lines + lines))  # two traces concatenated
    assert error.line == 11
    assert error.message == ("line after run_end (line 10): data was appended to a finished trace")


def test_another_schema_is_refused_by_name(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, trace_lines(10, schema=2)))
    assert (error.line, error.field) == (1, "schema")
    assert error.message == f"trace schema 2, this isrlab reads schema {SCHEMA_VERSION}"


def test_a_run_start_without_isrlab_version_is_refused(tmp_path: Path) -> None:
    start = run_start()
    del start["isrlab_version"]
    lines = [sealed(start)] + trace_lines(5)[1:]
    error = error_of(write(tmp_path, lines))
    assert (error.line, error.field) == (1, "isrlab_version")


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"time,node,event\n0,broker-1,start\n", "not JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "binary data, not JSON"),
        (b'{"level":"info","msg":"hello"}\n', "not a run_start event"),
        (b"[1, 2, 3]\n", "not a JSON object"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary data, not JSON"),
    ],
    ids=["csv", "png", "other-json-lines", "json-array", "binary-without-newline"],
)
def test_a_file_that_is_not_a_trace_says_so(tmp_path: Path, content: bytes, kind: str) -> None:
    path = tmp_path / "input"
    path.write_bytes(content)
    error = error_of(path)
    assert error.line == 1
    assert error.message == f"not an isrlab trace: line 1 is {kind}"


def test_an_empty_file_is_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    error = error_of(path)
    assert error.line is None
    assert str(error) == f"{path}: empty file: not an isrlab trace"


def test_an_empty_gzip_file_is_not_a_trace(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, [], "empty.jsonl.gz"))
    assert error.message == "empty file (after gzip decompression): not an isrlab trace"


def test_a_truncated_gzip_names_the_last_good_line(tmp_path: Path) -> None:
    path = write(tmp_path, trace_lines(2000), "trace.jsonl.gz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    error = caught.value
    assert error.field == "gzip"
    assert error.line is not None and 0 < error.line < 2000
    assert error.message.startswith("the gzip stream is cut off")
    assert error.message.endswith(
        f"after line {error.line}; line {error.line} is the last good line"
    )


def test_a_gzip_cut_inside_its_header_is_refused_as_a_whole(tmp_path: Path) -> None:
    path = write(tmp_path, trace_lines(10), "trace.jsonl.gz")
    path.write_bytes(path.read_bytes()[:6])
    error = error_of(path)
    assert error.line is None
    assert error.message.endswith("before the first line")


def test_a_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    error = error_of(tmp_path / "nope.jsonl")
    assert error.line is None
    assert "cannot open the trace" in error.message


def test_trace_error_is_one_line_and_survives_pickling(tmp_path: Path) -> None:
    error = TraceError("t.jsonl", 57, "crc mismatch: the line was altered", "crc")
    assert str(error) == "t.jsonl:57: crc mismatch: the line was altered"
    copy = pickle.loads(pickle.dumps(error))  # Spark ships exceptions between processes
    assert (copy.path, copy.line, copy.message, copy.field) == ("t.jsonl", 57, error.message, "crc")


# --- verify=False: aborted traces ---------------------------------------------------------


def test_unverified_reading_accepts_a_trace_without_run_end(tmp_path: Path) -> None:
    trace = read_trace(write(tmp_path, trace_lines(100)[:-1]), verify=False)
    assert trace.footer is None
    assert len(trace.events) == 98
    assert [(p.line, p.field) for p in trace.problems] == [(99, "run_end")]


def test_unverified_reading_drops_a_partial_last_line(tmp_path: Path) -> None:
    lines = trace_lines(100)[:-1]
    lines[-1] = lines[-1][:25]
    trace = read_trace(write(tmp_path, lines), verify=False)
    assert trace.events[-1]["seq"] == 97
    assert [p.line for p in trace.problems] == [99, 99]  # cut-off line, then no run_end


def test_unverified_reading_accepts_what_a_truncated_gzip_still_holds(tmp_path: Path) -> None:
    path = write(tmp_path, trace_lines(2000), "trace.jsonl.gz")
    path.write_bytes(path.read_bytes()[:-200])
    trace = read_trace(path, verify=False)
    assert trace.footer is None
    assert [p.field for p in trace.problems] == ["gzip"]
    assert trace.problems[0].line == len(trace.events) + 1


def test_unverified_reading_skips_the_crc_and_seq_checks(tmp_path: Path) -> None:
    lines = trace_lines(20)
    lines[5] = lines[5].replace(b'"new":5', b'"new":6')
    del lines[9]
    trace = read_trace(write(tmp_path, lines), verify=False)
    assert trace.events[4]["new"] == 6
    assert trace.problems == []


def test_unverified_reading_still_refuses_an_unparseable_line(tmp_path: Path) -> None:
    lines = trace_lines(20)
    lines[7] = b"garbage\n"
    error = error_of(write(tmp_path, lines), verify=False)
    assert error.line == 8


def test_unverified_reading_still_refuses_another_schema(tmp_path: Path) -> None:
    error = error_of(write(tmp_path, trace_lines(10, schema=2)), verify=False)
    assert error.field == "schema"


# --- lenient: partial answers -------------------------------------------------------------


def test_lenient_reading_skips_an_altered_line_and_reports_it(tmp_path: Path) -> None:
    lines = trace_lines(100)
    lines[56] = lines[56].replace(b'"new":56', b'"new":99')
    events = iter_events_lenient(write(tmp_path, lines))
    seqs = [e["seq"] for e in events]
    assert seqs == [s for s in range(100) if s != 56]
    # The altered byte also changes the digest that run_end vouches for.
    assert [(p.line, p.field) for p in events.problems] == [(57, "crc"), (100, "sha256")]


def test_lenient_reading_reports_a_swap_once(tmp_path: Path) -> None:
    lines = trace_lines(100)
    lines[30], lines[31] = lines[31], lines[30]
    events = iter_events_lenient(write(tmp_path, lines))
    assert len(list(events)) == 100
    assert [(p.line, p.field) for p in events.problems] == [(31, "seq"), (100, "sha256")]


def test_lenient_reading_resynchronises_after_a_removed_line(tmp_path: Path) -> None:
    lines = trace_lines(100)
    del lines[41]
    events = iter_events_lenient(write(tmp_path, lines))
    assert len(list(events)) == 99
    assert [(p.line, p.field) for p in events.problems] == [
        (42, "seq"),
        (99, "events"),
        (99, "sha256"),
    ]


def test_lenient_reading_reports_a_missing_run_end_and_keeps_the_header(tmp_path: Path) -> None:
    events = iter_events_lenient(write(tmp_path, trace_lines(10)[:-1]))
    assert len(list(events)) == 9
    assert events.header is not None and events.header["seed"] == 7
    assert events.footer is None
    assert [(p.line, p.field) for p in events.problems] == [(9, "run_end")]


def test_lenient_reading_still_refuses_a_file_that_is_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello\n")
    with pytest.raises(TraceError, match="not an isrlab trace"):
        list(iter_events_lenient(path))
