"""Hostile input, second pass (issue 47; the suite's index: tests/test_hostile_input.py).
At the doors that read traces and logs: check,
show, explain, regress, import, and analyze's checks made before Spark starts. Each test
runs the real command in a subprocess and asserts what the issue asks: the inputs are
byte-identical afterwards, stderr is exactly one line naming the source and the field, the
exit code is the documented one, and there is no traceback. Each test's docstring names its
class of issue 47. Analyze's judgements that need Spark are in tests/spark/test_bad_input.py.
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from helpers import isrlab, one_line, one_line_exit_2

from traces.integrity import seal, unseal

ROOT = Path(__file__).resolve().parent.parent
#: a small recorded trace (17 KB of gzip): the source every doctored trace is made from
TRACE = ROOT / "tests" / "regressions" / "s12-kafka14704-follower-hw-before-truncate.jsonl.gz"
LOG = ROOT / "tests" / "data" / "kafka_logs" / "22-librdkafka948-isr-shrink-zkversion-0102.log"
#: one record of that log, a line Kafka 0.10 writes
RECORD = ("[2016-12-18 15:15:55,046] INFO Partition [topicold,24] on broker 1: Shrinking ISR "
          "for partition [topicold,24] from 1,0,2 to 1 (kafka.cluster.Partition)\n")
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lines(path: Path = TRACE) -> list[bytes]:
    """A trace's lines (decompressed), each with its newline."""
    return gzip.decompress(path.read_bytes()).splitlines(keepends=True)


def _obj(line: bytes) -> dict[str, object]:
    body = unseal(line.rstrip(b"\n"))
    assert body is not None
    out = orjson.loads(body)
    assert isinstance(out, dict)
    return out


def _sealed(obj: dict[str, object]) -> bytes:
    return seal(orjson.dumps(obj))


def _resealed(lines: list[bytes]) -> bytes:
    """``lines`` with the run_end (the last run_end found) sealed again over what precedes
    it: its ``events`` and ``sha256`` match, so only the doctored point is wrong."""
    at = max(i for i, ln in enumerate(lines) if b'"event":"run_end"' in ln)
    end = _obj(lines[at])
    end["events"] = at
    end["sha256"] = hashlib.sha256(b"".join(lines[:at])).hexdigest()
    return b"".join([*lines[:at], _sealed(end), *lines[at + 1:]])


# --- class 2: inputs that are not regular files, lines past the bound ------------------------


@pytest.fixture
def odd_inputs(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """A FIFO, a device, a socket and a folder, where a file is expected."""
    fifo = tmp_path / "t.fifo.jsonl"
    os.mkfifo(fifo)
    sock_path = tmp_path / "t.sock.jsonl"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    folder = tmp_path / "folder.jsonl"
    folder.mkdir()
    try:
        yield {"fifo": fifo, "device": Path("/dev/zero"), "socket": sock_path,
               "folder": folder}
    finally:
        sock.close()


KIND_WORDS = {"fifo": "FIFO", "device": "character device", "socket": "socket",
              "folder": "folder"}


@pytest.mark.parametrize("door", ["check", "show", "explain"])
@pytest.mark.parametrize("kind", ["fifo", "device", "socket", "folder"])
def test_a_trace_that_is_not_a_regular_file_is_refused_at_once(
        odd_inputs: dict[str, Path], door: str, kind: str) -> None:
    """Class 2: a FIFO (which blocked the reader), /dev/zero (which never ends), a socket or
    a folder given as the trace is refused before it is opened: one line naming it, exit 2,
    within the timeout."""
    path = odd_inputs[kind]
    one_line_exit_2(isrlab(door, str(path), timeout=60), str(path), KIND_WORDS[kind])


def test_regress_refuses_an_index_that_is_not_a_regular_file(tmp_path: Path) -> None:
    """Class 2: ``regress --dir D`` whose index.json is a FIFO hung reading it."""
    os.mkfifo(tmp_path / "index.json")
    one_line_exit_2(isrlab("regress", "--dir", str(tmp_path), timeout=60), "index.json",
                     "FIFO")


def test_a_trace_line_past_the_bound_is_refused_naming_its_line(tmp_path: Path) -> None:
    """Class 2: a line of 65 MiB (a gzip bomb of one endless line, 70 KB on disk) is read in
    pieces and refused naming its line at check, show and explain: no MemoryError."""
    head = _lines()[0]
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(head + b"x" * ((65 << 20) + 1), compresslevel=1))
    before = _digest(bomb)
    for door in ("check", "show", "explain"):
        one_line_exit_2(isrlab(door, str(bomb)), f"{bomb}:2:", "longer than 64 MiB")
    assert _digest(bomb) == before


@pytest.mark.parametrize("kind", ["fifo", "device", "socket"])
def test_import_refuses_a_log_that_is_not_a_regular_file(
        odd_inputs: dict[str, Path], tmp_path: Path, kind: str) -> None:
    """Class 2: ``import /dev/zero`` read forever, a FIFO blocked; now one line, exit 2, and
    nothing at ``--out``."""
    out = tmp_path / "t.jsonl"
    one_line_exit_2(isrlab("import", str(odd_inputs[kind]), "--out", str(out), timeout=60),
                     str(odd_inputs[kind]), KIND_WORDS[kind])
    assert not out.exists()


def test_import_refuses_a_fifo_found_in_a_folder_of_logs(tmp_path: Path) -> None:
    """Class 2: a FIFO named like a log inside a folder given to import is refused, not read
    (it blocked) and not skipped silently."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOG, logs / "server.log")
    os.mkfifo(logs / "server.log.1")
    one_line_exit_2(isrlab("import", str(logs), "--out", str(tmp_path / "t.jsonl"),
                             timeout=60), "server.log.1", "FIFO")


def test_import_refuses_a_log_line_past_the_bound(tmp_path: Path) -> None:
    """Class 2: a gzip bomb of one endless line (17 MiB of text, 17 KB on disk) was
    decompressed whole; now it is read in pieces and refused naming the file and the line."""
    bomb = tmp_path / "server.log.gz"
    bomb.write_bytes(gzip.compress(RECORD.encode() + b"a" * ((16 << 20) + 1),
                                   compresslevel=1))
    before = _digest(bomb)
    out = tmp_path / "t.jsonl"
    one_line_exit_2(isrlab("import", str(bomb), "--out", str(out)), f"{bomb}:2:",
                     "longer than 16 MiB")
    assert _digest(bomb) == before and not out.exists()


# --- class 3: one trace contract ---------------------------------------------------------------


def _doctored(tmp_path: Path, how: str) -> Path:
    lines = _lines()
    if how == "schema 2":
        head = _obj(lines[0])
        head["schema"] = 2
        lines[0] = _sealed(head)
    elif how == "no isrlab_version":
        head = _obj(lines[0])
        del head["isrlab_version"]
        lines[0] = _sealed(head)
    elif how == "unknown status":
        end = _obj(lines[-1])
        end["status"] = "fine"
        lines[-1] = _sealed(end)
    elif how == "line after run_end":
        extra = _obj(lines[-2])
        extra["seq"] = len(lines)
        lines.append(_sealed(extra))
    path = tmp_path / "doctored.jsonl"
    path.write_bytes(_resealed(lines))
    return path


@pytest.mark.parametrize("how, line, words", [
    ("schema 2", 1, ("schema 2", "reads schema 1")),
    ("no isrlab_version", 1, ("isrlab_version",)),
    ("unknown status", 0, ("status", "'fine'")),
    ("line after run_end", 0, ("after run_end",)),
])
def test_check_applies_the_trace_contract_of_every_other_door(
        tmp_path: Path, how: str, line: int, words: tuple[str, ...]) -> None:
    """Class 3: a sealed trace (every crc and the run_end digest right) with ``schema: 2``,
    no ``isrlab_version``, an unknown run_end status or a line after run_end got "expect
    met" from check; now check refuses it as show and explain do, naming the line."""
    path = _doctored(tmp_path, how)
    before = _digest(path)
    n = len(path.read_bytes().splitlines())
    where = f"{path}:{n + line if line <= 0 else line}:"
    for door in ("check", "show", "explain"):
        one_line_exit_2(isrlab(door, str(path)), where, *words)
    assert _digest(path) == before


def _imported(tmp_path: Path) -> Path:
    out = tmp_path / "imported.jsonl"
    proc = isrlab("import", str(LOG), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("how", ["cut", "aborted"])
def test_an_imported_trace_cut_short_or_aborted_is_incomplete_in_check(
        tmp_path: Path, how: str) -> None:
    """Class 3: an imported trace without its run_end (cut) or ending ``aborted`` was exit 0
    in check while explain said INCOMPLETE; now both exit 3."""
    path = _imported(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    if how == "cut":
        path.write_bytes(b"".join(lines[:-1]))
    else:
        end = _obj(lines[-1])
        end["status"] = "aborted"
        path.write_bytes(b"".join([*lines[:-1], _sealed(end)]))
    before = _digest(path)
    for door in ("check", "explain"):
        proc = isrlab(door, str(path))
        assert proc.returncode == EXIT_INCOMPLETE, (door, proc.stderr)
        assert "INCOMPLETE" in proc.stdout and "Traceback" not in proc.stderr
    assert _digest(path) == before


# --- class 4: check and analyze judge alike (check's half; analyze's is in tests/spark) -----


@pytest.mark.parametrize("how, line", [("bom", 1), ("crlf", 1)])
def test_check_refuses_a_bom_or_crlf_naming_the_line(tmp_path: Path, how: str,
                                                     line: int) -> None:
    """Class 4: a trace re-saved with a UTF-8 BOM or CR LF line endings: check refuses it,
    naming the line, exit 2 — as analyze skips the trace naming the line and exits 2
    (tests/spark/test_bad_input.py)."""
    data = b"".join(_lines())
    data = b"\xef\xbb\xbf" + data if how == "bom" else data.replace(b"\n", b"\r\n")
    path = tmp_path / f"{how}.jsonl"
    path.write_bytes(data)
    word = "byte-order mark" if how == "bom" else "CR LF"
    one_line_exit_2(isrlab("check", str(path)), f"{path}:{line}:", word)
    assert path.read_bytes() == data


# --- class 5: names and values ----------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["--events", "hw_updat"], ("--events", "'hw_updat'", "no such event kind")),
    (["--events", ","], ("--events", "expected KIND")),
    (["--node", "broker-99"], ("--node broker-99", "no such node", "broker-1")),
    (["--node", "99"], ("--node broker-99", "no such node")),
])
def test_show_refuses_an_unknown_event_kind_or_node(args: list[str],
                                                    words: tuple[str, ...]) -> None:
    """Class 5: ``show --events NAME`` / ``--node NAME`` naming nothing in the trace printed
    nothing and exited 0, where ``--partition zzz`` is bad input; now one line, exit 2."""
    proc = isrlab("show", str(TRACE), *args)
    one_line_exit_2(proc, *words)
    assert proc.stdout == ""


def test_show_still_accepts_a_known_kind_the_trace_lacks() -> None:
    """Class 5 (the other side): a kind of the schema that this run never traced is no
    error: nothing is shown, exit 0."""
    proc = isrlab("show", str(TRACE), "--events", "segment_delete")
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == ""


@pytest.mark.parametrize("only, words", [("nope", ("--only", "'nope'", "no such entry")),
                                         ("s12-kafka14704-follower-hw-before-truncate,nope",
                                          ("--only", "'nope'")),
                                         (",", ("--only", "no name"))])
def test_regress_refuses_an_unknown_only_entry(only: str, words: tuple[str, ...]) -> None:
    """Class 5: ``regress --only NAME`` with an unknown entry ran the others (or nothing)
    and reported a change; an empty list ran the whole suite. Now one line, exit 2,
    before anything runs."""
    index = ROOT / "tests" / "regressions" / "index.json"
    before = _digest(index)
    one_line_exit_2(isrlab("regress", "--only", only), *words)
    assert _digest(index) == before


@pytest.mark.parametrize("line, tz, words", [
    ("[2016-12-18 15:15:55,046] INFO Partition [topicold,24] on broker 99999999999999999999: "
     "Shrinking ISR for partition [topicold,24] from 1,0,2 to 1 (kafka.cluster.Partition)\n",
     "UTC", "99999999999999999999: beyond a 32-bit integer"),
    ("[0001-01-01 00:00:00,000] INFO Partition [topicold,24] on broker 1: Shrinking ISR for "
     "partition [topicold,24] from 1,0,2 to 1 (kafka.cluster.Partition)\n",
     "+02:00", "out of range"),
])
def test_import_refuses_a_record_with_a_value_no_kafka_field_holds(
        tmp_path: Path, line: str, tz: str, words: str) -> None:
    """Class 5: a 20-digit broker id (past any 64-bit integer) was a traceback when the
    trace was written; ``0001-01-01`` with ``--tz +02:00`` an OverflowError. No broker
    writes either (the log is damaged or forged): one line naming the file, the line and
    the value, exit 2, and nothing written at ``--out``."""
    log = tmp_path / "server.log"
    log.write_text(RECORD + line)
    before = _digest(log)
    out = tmp_path / "t.jsonl"
    one_line_exit_2(isrlab("import", str(log), "--tz", tz, "--out", str(out)), f"{log}:2:",
                    words)
    assert not out.exists() and _digest(log) == before


def test_import_refuses_a_broker_id_beyond_32_bits() -> None:
    """Class 5: ``import --broker 99999999999999999999`` wrote a broker id no field holds
    (a traceback in the writer); now one line naming the flag, exit 2."""
    one_line_exit_2(isrlab("import", str(LOG), "--broker", "9" * 20, "--out",
                             "never-written.jsonl"), "--broker", "32-bit")
    assert not (ROOT / "never-written.jsonl").exists()


# --- class 6: outputs --------------------------------------------------------------------------


@pytest.mark.parametrize("out, words", [("/dev/null", "character device"),
                                        ("/dev/full", "character device")])
def test_import_refuses_an_out_that_is_a_device(out: str, words: str) -> None:
    """Class 6: ``import --out /dev/null`` / ``/dev/full``: one line, exit 2, not a
    traceback; isrlab writes regular files only."""
    one_line_exit_2(isrlab("import", str(LOG), "--out", out), out, "--out", words)


@pytest.fixture
def held_lock(tmp_path: Path) -> Iterator[Path]:
    """The lock another isrlab command holds while it writes ``tmp_path/t.jsonl``
    (``emulator.files.replacing``): held here, so that "at once" is certain."""
    out = tmp_path / "t.jsonl"
    fd = os.open(tmp_path / f".isrlab-lock-{out.name}", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield out
    finally:
        os.close(fd)


def test_two_imports_writing_one_out_at_once_the_second_is_refused(held_lock: Path) -> None:
    """Class 6: two imports writing one ``--out`` at once raced; the second is now refused
    (one line, exit 2) and writes nothing, while the first holds the output."""
    one_line_exit_2(isrlab("import", str(LOG), "--out", str(held_lock)), str(held_lock),
                     "another isrlab command is writing")
    assert not held_lock.exists()
    assert [p.name for p in held_lock.parent.iterdir()] == [f".isrlab-lock-{held_lock.name}"]


def test_import_writes_whole_or_nothing(tmp_path: Path) -> None:
    """Class 6: the import's trace is written under a temporary name and renamed once
    closed: afterwards the folder holds the trace and nothing else, and it verifies."""
    out = _imported(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    assert isrlab("check", str(out)).returncode == 0


@pytest.mark.parametrize("flag, value, words", [
    ("--out", "/dev/null", ("--out", "not a directory", "character device")),
    ("--out", "/dev/full", ("--out", "not a directory", "character device")),
    ("--out", "FOREIGN", ("--out", "not empty", "analysis.json")),
    ("--cache", "FOREIGN", ("--cache", "not empty", ".isrlab-cache")),
])
def test_analyze_refuses_an_out_that_is_a_device_or_a_foreign_folder(
        tmp_path: Path, flag: str, value: str, words: tuple[str, ...]) -> None:
    """Class 6: ``analyze --out /dev/null`` / ``/dev/full`` and an ``--out`` or ``--cache``
    that is a non-empty folder of the user's (Spark's overwrite of a dataset there deleted
    their files): one line, exit 2, before Spark starts; the folder's files are intact."""
    trace = tmp_path / "t.jsonl.gz"
    shutil.copy(TRACE, trace)
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("precious")
    target = str(foreign) if value == "FOREIGN" else value
    one_line_exit_2(isrlab("analyze", str(trace), flag, target, timeout=60), target,
                     *words)
    assert (foreign / "thesis.tex").read_text() == "precious"
    assert [p.name for p in foreign.iterdir()] == ["thesis.tex"]


def test_two_analyses_writing_one_out_at_once_the_second_is_refused(tmp_path: Path) -> None:
    """Class 6: a second ``analyze --out D`` while another writes D is refused before Spark
    starts (one line, exit 2): D's marker ``analysis.json`` is held for the whole run (the
    first analysis is played here by its marker and its lock)."""
    trace = tmp_path / "t.jsonl.gz"
    shutil.copy(TRACE, trace)
    out = tmp_path / "analysis"
    out.mkdir()
    (out / "analysis.json").write_text('{"isrlab":"analyze","complete":false}\n')
    fd = os.open(out / ".isrlab-lock-analysis.json", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        one_line_exit_2(isrlab("analyze", str(trace), "--out", str(out), timeout=60),
                         "analysis.json", "another isrlab command is writing")
    finally:
        os.close(fd)


def test_analyze_refuses_a_fifo_among_its_inputs_before_spark_starts(tmp_path: Path) -> None:
    """Class 2: a FIFO named like a trace in a folder given to analyze is refused at once
    (one line, exit 2), not opened (it blocked a Spark task) and not skipped silently."""
    folder = tmp_path / "traces"
    folder.mkdir()
    shutil.copy(TRACE, folder / "a.jsonl.gz")
    os.mkfifo(folder / "b.jsonl")
    one_line_exit_2(isrlab("analyze", str(folder), timeout=60), "b.jsonl", "FIFO")


# --- class 8: a truncated gzip log -----------------------------------------------------------


def test_import_says_how_much_of_a_cut_gzip_log_was_read(tmp_path: Path) -> None:
    """Class 8: a gzip log cut short was imported up to the cut in silence; now the import
    still writes what was read (exit 0) and says on one stderr line which file broke and
    how much of it was read, in lines and bytes; the header records it too."""
    text = b"".join(RECORD.encode() for _ in range(4000))
    data = gzip.compress(text, compresslevel=1)
    cut = tmp_path / "server.log.1.gz"
    cut.write_bytes(data[: len(data) // 2])
    before = _digest(cut)
    out = tmp_path / "t.jsonl"
    proc = isrlab("import", str(cut), "--out", str(out))
    line = one_line(proc, 0, "warning", str(cut), "cut off", "lines", "bytes")
    assert "imported" in line
    header = orjson.loads(unseal(out.read_bytes().splitlines()[0]) or b"{}")
    assert header["imported"]["broken_files"] == [line.split("warning: ", 1)[1]]
    assert 0 < header["imported"]["parsed"] < 4000
    assert _digest(cut) == before
