"""Hostile input, second pass (issue 47; the suite's index: tests/test_hostile_input.py).
At the doors that run and write: ``run``,
``replay``, ``report`` and the scenario loader every door shares. Each test runs the real
command line in a subprocess and says which class of the issue it covers: the inputs are
byte-identical afterwards, bad input is one line on stderr naming the source and the field
with exit 2, an interrupted run is INCOMPLETE (exit 3), never a traceback, never a hang.

Exit codes asserted here, as the doors' module docstrings document them: ``run`` 0 met,
1 not met, 2 bad input or an output that cannot be written, 3 INCOMPLETE (interrupted);
``replay`` 0 identical, 1 diverged, 2 bad input or an unwritable ``--out``, 3 interrupted;
``report`` 0 written, 1 written with damaged traces named on stderr, 2 bad input or an
unwritable ``-o``, 3 interrupted.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import isrlab, one_line_exit_2

ROOT = Path(__file__).resolve().parent.parent
#: a few simulated seconds, no scripted fault: a run of well under a second
SHORT = ("--set", "duration_s=2", "--set", "heal_s=3", "--set", "faults.plan=[]")
#: a run far longer than any test waits for: it is stopped by a signal
LONG = ("--set", "duration_s=600", "--set", "heal_s=3", "--set", "faults.plan=[]")
#: a limit on the size of any file the command writes: the disk "fills up" mid-write
FILE_LIMIT = 200_000


def _disk_fills_up() -> None:
    """In the child: writing past FILE_LIMIT bytes fails (EFBIG, as a full disk fails with
    ENOSPC; Python ignores SIGXFSZ, so the write raises)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def _leftovers(folder: Path) -> list[str]:
    """Temporary files or locks a command left beside its output."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".isrlab-"))


def _scenario(folder: Path, text: str, name: str = "s.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _snapshot(*paths: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


def _unchanged(before: dict[Path, bytes]) -> None:
    for path, data in before.items():
        assert path.read_bytes() == data, f"{path} changed"


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short trace of the default scenario (gzip), recorded once for the module."""
    path = tmp_path_factory.mktemp("recorded") / "short.jsonl.gz"
    proc = isrlab("run", "default", *SHORT, "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.fixture
def scenario_copy(tmp_path: Path) -> Path:
    """The default scenario as a file of the test's own (its bytes are checked after)."""
    return _scenario(tmp_path, (ROOT / "scenarios" / "default.toml").read_text(),
                     "default.toml")


def _popen_run(scenario: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cli", "run", str(scenario),
                             *LONG, "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_until_written(out: Path, proc: subprocess.Popen[str], at_least: int = 100_000,
                        timeout: float = 120) -> None:
    """Until the run's trace (under its temporary name or its own) holds ``at_least``
    bytes: the run is under way, inside the emulator."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        sizes = [p.stat().st_size for p in out.parent.iterdir()
                 if p.name.endswith(out.name) and p.is_file()]
        if sizes and max(sizes) >= at_least:
            return
        time.sleep(0.05)
    raise AssertionError(f"{out}: the run wrote nothing within {timeout} s")


def _last_event(path: Path) -> dict[str, object]:
    lines = path.read_bytes().splitlines()
    event: dict[str, object] = json.loads(lines[-1])
    return event


# ------------------------------------------------------------------ class 1/6: outputs


@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_run_refuses_an_out_that_is_a_device(device: str, scenario_copy: Path) -> None:
    """Class 6: ``run --out /dev/null`` ended in a checker traceback, ``--out /dev/full``
    in an OSError traceback; isrlab writes regular files only."""
    before = _snapshot(scenario_copy)
    one_line_exit_2(isrlab("run", str(scenario_copy), *SHORT, "--out", device), device,
                     "--out", "regular files only")
    _unchanged(before)


@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_replay_and_report_refuse_an_out_that_is_a_device(device: str, trace: Path) -> None:
    """Class 6: the same rule at ``replay --out`` and ``report -o``."""
    before = _snapshot(trace)
    one_line_exit_2(isrlab("replay", str(trace), "--out", device), device, "--out",
                     "regular files only")
    one_line_exit_2(isrlab("report", str(trace), "--no-rerun", "-o", device), device, "-o",
                     "regular files only")
    _unchanged(before)


def test_replay_and_report_refuse_to_write_over_their_input(trace: Path, tmp_path: Path
                                                            ) -> None:
    """Class 1: no output may resolve to an input, through another name either."""
    before = _snapshot(trace)
    other_name = tmp_path / ".." / tmp_path.name / "link.jsonl.gz"
    os.symlink(trace, tmp_path / "link.jsonl.gz")
    one_line_exit_2(isrlab("replay", str(trace), "--out", str(other_name)), "--out",
                     "refusing to overwrite")
    one_line_exit_2(isrlab("report", str(trace), "-o", str(other_name)), "-o",
                     "refusing to overwrite")
    _unchanged(before)


def test_a_disk_that_fills_up_mid_run_leaves_the_old_trace_untouched(
        scenario_copy: Path, tmp_path: Path) -> None:
    """Class 1/6: a full disk mid-run was an OSError traceback and left a cut file under
    the final name; now one line, exit 2, and ``--out`` keeps what it held before."""
    out = tmp_path / "out" / "trace.jsonl"
    out.parent.mkdir()
    out.write_bytes(b"what was there before\n")
    before = _snapshot(scenario_copy, out)
    one_line_exit_2(isrlab("run", str(scenario_copy), *SHORT, "--out", str(out),
                             preexec_fn=_disk_fills_up), str(out), "--out", "cannot write",
                     "nothing written")
    _unchanged(before)
    assert _leftovers(out.parent) == []


def test_a_disk_that_fills_up_mid_replay_or_report_leaves_the_old_output_untouched(
        trace: Path, tmp_path: Path) -> None:
    """Class 1/6: the same at ``replay --out`` (a trace re-run) and ``report -o`` (a page
    of megabytes): one line, exit 2, the earlier output untouched, no temporary file."""
    replayed, page = tmp_path / "replayed.jsonl", tmp_path / "page.html"
    replayed.write_bytes(b"an earlier replay\n")
    page.write_bytes(b"<p>an earlier page</p>\n")
    before = _snapshot(trace, replayed, page)
    one_line_exit_2(isrlab("replay", str(trace), "--out", str(replayed),
                             preexec_fn=_disk_fills_up), "--out", "cannot write")
    one_line_exit_2(isrlab("report", str(trace), "--no-rerun", "-o", str(page),
                             preexec_fn=_disk_fills_up), "-o", "cannot write")
    _unchanged(before)
    assert _leftovers(tmp_path) == []


def test_run_replaces_its_own_output_whole_and_the_bytes_do_not_depend_on_the_temp_name(
        scenario_copy: Path, tmp_path: Path) -> None:
    """Class 1: the trace is written under a temporary name, then renamed: running twice
    into one ``--out`` (``make demo`` twice) replaces it; the gzip bytes are those of a
    trace written under its own name (the header names the final file, not the temporary
    one), so the same scenario and seed give the same bytes in any folder."""
    first, second = tmp_path / "a" / "t.jsonl.gz", tmp_path / "b" / "t.jsonl.gz"
    for out in (first, first, second):
        proc = isrlab("run", str(scenario_copy), *SHORT, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    assert first.read_bytes() == second.read_bytes()
    assert _leftovers(first.parent) == [] and _leftovers(second.parent) == []
    replayed = tmp_path / "c" / "t.jsonl.gz"
    proc = isrlab("replay", str(first), "--out", str(replayed))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert replayed.read_bytes() == first.read_bytes()


def test_two_runs_writing_one_out_at_once(scenario_copy: Path, tmp_path: Path) -> None:
    """Class 6: a second run writing the same ``--out`` while the first one writes it is
    refused at once (one line, exit 2), never interleaved; the first one's trace is what
    ``--out`` holds at the end (here it is stopped with SIGTERM: exit 3, trace kept)."""
    out = tmp_path / "shared.jsonl"
    before = _snapshot(scenario_copy)
    first = _popen_run(scenario_copy, out)
    try:
        _wait_until_written(out, first)
        one_line_exit_2(isrlab("run", str(scenario_copy), *SHORT, "--out", str(out)),
                         str(out), "another isrlab command is writing")
        first.send_signal(signal.SIGTERM)
        _stdout, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 3, stderr
    assert _last_event(out)["status"] == "aborted"
    assert _leftovers(tmp_path) == []
    _unchanged(before)


# ------------------------------------------------------ class 2: inputs that are not files


@pytest.fixture(params=["fifo", "folder", "socket", "device"])
def not_a_file(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A path where a file is expected, and the kind the refusal names."""
    kind = request.param
    if kind == "device":
        yield Path("/dev/zero"), "character device"
        return
    path = tmp_path / f"a-{kind}.toml"
    if kind == "fifo":
        os.mkfifo(path)
        yield path, "FIFO"
    elif kind == "folder":
        path.mkdir()
        yield path, "folder"
    else:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(str(path))
            yield path, "socket"


def test_a_scenario_that_is_not_a_regular_file_is_refused_at_once(
        not_a_file: tuple[Path, str], tmp_path: Path) -> None:
    """Class 2: a FIFO as the scenario blocked ``run`` for ever, ``/dev/zero`` read until
    memory ran out; a folder or a socket failed deep inside. Refused before reading."""
    path, kind = not_a_file
    proc = isrlab("run", str(path), *SHORT, "--out", str(tmp_path / "t.jsonl"), timeout=60)
    one_line_exit_2(proc, str(path), "scenario", kind)
    assert not (tmp_path / "t.jsonl").exists()


def test_report_refuses_a_path_that_is_not_a_regular_file(tmp_path: Path) -> None:
    """Class 2: ``report FIFO`` is refused at once (a folder is a campaign folder)."""
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    one_line_exit_2(isrlab("report", str(fifo), "-o", str(tmp_path / "r.html"),
                             timeout=60), str(fifo), "FIFO")


def test_replay_refuses_a_trace_that_is_not_a_regular_file_before_its_out(
        tmp_path: Path) -> None:
    """Class 2: ``replay FIFO --out NEW`` is refused at once, and ``NEW`` is not made."""
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    one_line_exit_2(isrlab("replay", str(fifo), "--out", str(tmp_path / "new.jsonl"),
                             timeout=60), str(fifo), "FIFO")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


# ------------------------------------------------------------------------ class 5: values


@pytest.mark.parametrize("item", ["duration_s=2\nheal_s=1", "name=\"a\"\nfoo=1",
                                  "topics[0].partitions=2\r"])
def test_a_set_with_a_line_break_is_refused(item: str, scenario_copy: Path) -> None:
    """Class 5: ``--set 'duration_s=2<newline>heal_s=1'`` kept the first line and dropped
    the rest silently; now one line (the break shown escaped), exit 2."""
    before = _snapshot(scenario_copy)
    one_line_exit_2(isrlab("run", str(scenario_copy), *SHORT, "--set", item), "--set",
                     "line break")
    _unchanged(before)


@pytest.mark.parametrize("value", ["99999999999999999999", "-5", "1e3", "ten"])
def test_replay_context_is_a_count_within_bounds(value: str, trace: Path) -> None:
    """Class 5: ``replay --context 99999999999999999999`` was an OverflowError traceback,
    ``--context -5`` was accepted; a count is 0..10000."""
    before = _snapshot(trace)
    one_line_exit_2(isrlab("replay", str(trace), f"--context={value}"), "--context")
    _unchanged(before)


@pytest.mark.parametrize("value", ["-5", "99999999999999999999"])
def test_report_max_points_is_a_count_within_bounds(value: str, trace: Path, tmp_path: Path
                                                    ) -> None:
    """Class 5: ``report --max-points -5`` was accepted silently (and drawn as 100)."""
    one_line_exit_2(isrlab("report", str(trace), f"--max-points={value}", "-o",
                             str(tmp_path / "r.html")), "--max-points")
    assert not (tmp_path / "r.html").exists()


# ------------------------------------------------------------- class 7: scenario semantics

TOPIC = """name = "topics"
duration_s = 2.0
heal_s = 3.0

[[topics]]
name = {name}

[[producers]]
topic = {name}
"""


@pytest.mark.parametrize("name, words", [
    ("", "can't be empty"),
    (".", "cannot be"),
    ("..", "cannot be"),
    ("x" * 250, "longer than 249"),
    ("orders 1", "ASCII alphanumerics"),
    ("ordres/1", "ASCII alphanumerics"),
    ("commandes-été", "ASCII alphanumerics"),
    ("__consumer_offsets", "internal"),
    ("__transaction_state", "internal"),
])
def test_a_topic_name_kafka_refuses_is_refused_at_load(name: str, words: str,
                                                       tmp_path: Path) -> None:
    """Class 7: an empty topic name ran; internal topics and names ``Topic.validate``
    refuses are refused at load, naming the file, the line and ``topics[0].name``."""
    path = _scenario(tmp_path, TOPIC.format(name=json.dumps(name)))
    before = _snapshot(path)
    one_line_exit_2(isrlab("run", str(path), "--out", str(tmp_path / "t.jsonl")),
                     f"{path}:6: topics[0].name", words)
    _unchanged(before)
    assert not (tmp_path / "t.jsonl").exists()


def test_topic_names_that_collide_in_metric_names_are_refused(tmp_path: Path) -> None:
    """Class 7: ``a.b`` and ``a_b`` are one metric name (``Topic.hasCollision``): Kafka
    refuses the second topic; so does the scenario, naming ``topics[1].name``."""
    path = _scenario(tmp_path, TOPIC.format(name='"a.b"')
                     + '\n[[topics]]\nname = "a_b"\n')
    one_line_exit_2(isrlab("run", str(path), "--out", str(tmp_path / "t.jsonl")),
                     "topics[1].name", "collides", "a.b")


DECOMMISSION = """name = "leaving"
duration_s = 4.0
heal_s = 6.0

[cluster]
brokers = {brokers}
"spare.brokers" = 1

[[topics]]
name = "orders"
"replication.factor" = 3
"min.insync.replicas" = 2

[[producers]]
topic = "orders"
rate = 50
{steps}
[[faults.plan]]
at_s = 1.5
fault = "decommission"
target = "broker-1"
"""


def test_a_decommission_with_nowhere_to_move_the_replicas_is_refused_at_load(
        tmp_path: Path) -> None:
    """Class 7: decommissioning one of three brokers with replication factor 3 started an
    operation that never finished, exit 0; Kafka's kafka-reassign-partitions refuses
    such a plan. Refused at load, naming the step."""
    path = _scenario(tmp_path, DECOMMISSION.format(brokers=3, steps=""))
    before = _snapshot(path)
    one_line_exit_2(isrlab("run", str(path), "--out", str(tmp_path / "t.jsonl")),
                     "faults.plan[0].target", "broker-1", "nowhere to go",
                     "larger than available brokers")
    _unchanged(before)


def test_a_decommission_after_a_spare_joined_runs_to_its_end(tmp_path: Path) -> None:
    """Class 7: with a spare broker added first, the same decommission is possible: it
    loads, the replicas move, and broker-1 leaves (``decommission`` phase done)."""
    steps = '\n[[faults.plan]]\nat_s = 0.2\nfault = "add_broker"\ntarget = "broker-4"\n'
    path = _scenario(tmp_path, DECOMMISSION.format(brokers=3, steps=steps))
    out = tmp_path / "t.jsonl"
    proc = isrlab("run", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    phases = [json.loads(line)["phase"] for line in out.read_text().splitlines()
              if '"event":"decommission"' in line]
    assert phases == ["start", "done"]


def test_a_decommission_with_every_other_broker_down_is_traced_as_rejected(
        tmp_path: Path) -> None:
    """Class 7: a decommission possible on paper but not when it starts (broker-4 is down
    and fenced: two brokers left for replication factor 3) is traced as rejected, as
    kafka-reassign-partitions rejects it, and said by ``run``: never an operation that
    silently never finishes."""
    steps = ('\n[[faults.plan]]\nat_s = 0.2\nfault = "crash"\ntarget = "broker-4"\n'
             'duration_s = 8.0\n')
    text = DECOMMISSION.format(brokers=4, steps=steps).replace(
        '"spare.brokers" = 1', '"spare.brokers" = 0\n"broker.session.timeout.ms" = 1000\n'
        '"broker.heartbeat.interval.ms" = 300')
    path = _scenario(tmp_path, text)
    out = tmp_path / "t.jsonl"
    proc = isrlab("run", str(path), "--out", str(out))
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    events = [json.loads(line) for line in out.read_text().splitlines()
              if '"event":"decommission"' in line]
    assert [e["phase"] for e in events] == ["rejected"]
    assert events[0]["broker"] == 1 and events[0]["error"] == "INVALID_REPLICATION_FACTOR"
    assert "decommission of broker-1 rejected" in proc.stdout


# ---------------------------------------------------------- class 8: processes and signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_run_stopped_by_a_signal_is_incomplete(sig: signal.Signals, scenario_copy: Path,
                                                 tmp_path: Path) -> None:
    """Class 8: a run stopped by SIGINT or SIGTERM said "expect NOT met" and exited 1; now
    INCOMPLETE, exit 3, one line on stderr naming the signal, and the trace keeps what was
    written, sealed with run_end status aborted."""
    out = tmp_path / "stopped.jsonl"
    before = _snapshot(scenario_copy)
    proc = _popen_run(scenario_copy, out)
    try:
        _wait_until_written(out, proc)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 3, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0] and sig.name in lines[0], lines
    assert str(out) in lines[0]
    assert stdout.startswith("INCOMPLETE") and "UNEXPECTED" not in stdout
    end = _last_event(out)
    assert end["event"] == "run_end" and end["status"] == "aborted"
    assert isrlab("check", str(out)).returncode == 3   # the trace says the same
    assert _leftovers(tmp_path) == []
    _unchanged(before)


def test_report_over_a_folder_with_damaged_traces_names_each_and_exits_1(
        trace: Path, tmp_path: Path) -> None:
    """Class 8: ``report DIR`` over damaged traces exited 0 with the damage only inside
    the page; now each damaged trace is one line on stderr naming it and the problem, the
    page is still written for the good ones, and the exit code is 1."""
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "good.jsonl.gz").write_bytes(trace.read_bytes())
    raw = gzip.decompress(trace.read_bytes())
    (folder / "cut.jsonl").write_bytes(raw[: len(raw) // 2])
    (folder / "junk.jsonl").write_bytes(b"not a trace\n")
    before = _snapshot(*folder.iterdir())
    page = tmp_path / "report.html"
    proc = isrlab("report", str(folder), "-o", str(page))
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    for name in ("cut.jsonl", "junk.jsonl"):   # each named once, with its problem after it
        (line,) = [line for line in lines if str(folder / name) in line]
        assert line.startswith("isrlab report: damaged trace: ") and len(line) > len(
            f"isrlab report: damaged trace: {folder / name}: ")
    assert "1 runs" in proc.stdout and "2 damaged" in proc.stdout
    assert page.is_file()
    _unchanged(before)
