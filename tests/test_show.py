"""``isrlab show``: a readable, filterable, verified timeline that behaves in a pipe."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from cli import show as show_door
from emulator.cluster import run
from emulator.scenario import load
from traces import show

ROOT = Path(__file__).resolve().parent.parent
OVERRIDES = ["duration_s=5.0", "heal_s=30.0", "producers[0].rate=40", "faults.plan=[]",
             'faults.nemesis=["kill","partition"]', "faults.interval_s=1.5"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("show") / "t.jsonl.gz"
    run(load("default", OVERRIDES), 2, str(path))
    return path


def events_of(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(x) for x in gzip.decompress(path.read_bytes()).splitlines()]


def show_lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert show_door.main(list(argv)) == 0
    out = capsys.readouterr()
    assert out.err == ""
    return out.out.splitlines()


def test_an_event_renders_as_aligned_columns_with_its_key_fields() -> None:
    ev = {"seq": 9, "ts_us": 41_207_300, "event": "hw_update", "node": "broker-2",
          "actor": "orders-0", "topic": "orders", "partition": 0, "replica": 2, "old": 41,
          "new": 57, "reason": "follower_fetch"}
    line = show.format_event(ev)
    assert line == (f"{'41.207':>10}  {'broker-2':<16} {'orders-0':<10} {'hw_update':<22} "
                    "orders-0 r2 41→57 (follower_fetch)")
    extra = show.format_event({**ev, "role": "leader"})
    assert extra.endswith("(follower_fetch) role=leader")


def test_the_whole_trace_shows_one_line_per_event_in_order(
    trace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    lines = show_lines(capsys, str(trace))
    evs = events_of(trace)
    assert len(lines) == len(evs)
    assert "run_start" in lines[0] and "scenario default seed 2" in lines[0]
    assert "run_end" in lines[-1] and "ok," in lines[-1]
    # the event column starts at the same place on every line
    for line, ev in zip(lines, evs, strict=True):
        if len(str(ev["node"])) <= 16 and len(str(ev["actor"])) <= 10:
            assert line[40:62].rstrip() == ev["event"], line


def test_partition_filter_accepts_topic_partition_or_a_bare_number(
    trace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    named = show_lines(capsys, str(trace), "--partition", "orders-1")
    bare = show_lines(capsys, str(trace), "--partition", "1")
    expected = [e for e in events_of(trace) if e.get("partition") == 1]
    assert len(named) == len(bare) == len(expected) > 0
    assert all("orders-1" in line for line in named if "final_log" not in line)
    assert show_lines(capsys, str(trace), "--partition", "payments-1") == []


def test_node_time_window_and_event_filters_combine(
    trace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    lines = show_lines(capsys, str(trace), "--node", "2", "--from", "1.5", "--to", "3",
                       "--events", "hw_update,leo_update")
    expected = [e for e in events_of(trace)
                if e["node"] == "broker-2" and 1_500_000 <= int(str(e["ts_us"])) <= 3_000_000
                and e["event"] in ("hw_update", "leo_update")]
    assert len(lines) == len(expected) > 0
    for line, ev in zip(lines, expected, strict=True):
        assert line.split()[0] == f"{int(str(ev['ts_us'])) / 1e6:.3f}"
        assert line.split()[1] == "broker-2"


def test_no_colour_when_piped_or_no_color_set_and_colour_on_a_terminal(
    trace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = show_lines(capsys, str(trace), "--events", "hw_update")
    assert not any(ANSI.search(x) for x in plain)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = show_lines(capsys, str(trace), "--events", "hw_update")
    assert all(ANSI.search(x) for x in coloured)
    assert [ANSI.sub("", x) for x in coloured] == plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert show_lines(capsys, str(trace), "--events", "hw_update") == plain


def test_a_reader_closing_the_pipe_ends_the_listing_quietly(trace: Path) -> None:
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c",
         f"{sys.executable} -m cli show {trace} | head -n 2"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 2


def test_a_tampered_trace_is_refused_with_exit_2_after_the_good_lines(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    lines = gzip.decompress(trace.read_bytes()).splitlines(keepends=True)
    lines[50] = lines[50].replace(b'"ts_us":', b'"ts_us":9', 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    assert show_door.main([str(bad)]) == 2
    out = capsys.readouterr()
    assert len(out.out.splitlines()) == 50  # lines 1..50 verified and shown, not line 51
    assert out.err == f"isrlab: {bad}:51: crc mismatch: the line was altered\n"


def test_no_verify_shows_an_aborted_trace_with_a_warning(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = gzip.decompress(trace.read_bytes())
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[: len(data) // 2])
    assert show_door.main([str(cut)]) == 2
    assert "cut off" in capsys.readouterr().err
    assert show_door.main([str(cut), "--no-verify"]) == 0
    out = capsys.readouterr()
    assert len(out.out.splitlines()) == data[: len(data) // 2].count(b"\n")
    assert "warning" in out.err and "cut off" in out.err


def test_a_file_that_is_not_a_trace_or_a_bad_filter_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    assert show_door.main([str(notes)]) == 2
    assert "not an isrlab trace" in capsys.readouterr().err
    assert show_door.main([str(trace), "--partition", "orders-x"]) == 2
    assert "--partition" in capsys.readouterr().err
    assert show_door.main([str(trace), "--from", "soon"]) == 2
    assert "--from" in capsys.readouterr().err


def test_node_controller_names_every_voter_of_a_controller_quorum(
    trace: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The default scenario runs three controller voters (4.1); the active one changes over a
    run, so ``--node controller`` keeps every voter's events (and a fault aimed at one),
    while ``--node controller-3001`` is that voter alone."""
    evs = events_of(trace)
    voters = {e["node"] for e in evs if str(e["node"]).startswith("controller-")}
    assert voters and "controller" not in {e["node"] for e in evs}
    lines = show_lines(capsys, str(trace), "--node", "controller")
    assert len(lines) == sum(1 for e in evs if str(e["node"]).startswith("controller-"))
    keep = show.Filter(node="controller")
    fault = {"seq": 5, "ts_us": 1, "event": "fault", "node": "sim", "actor": "nemesis",
             "fault": "pause", "phase": "start", "target": ["controller-3002"]}
    assert keep(fault) and not show.Filter(node="controller-3001")(fault)
    assert not keep({**fault, "target": ["broker-1"]})
    one = show_lines(capsys, str(trace), "--node", "controller-3000")
    assert 0 < len(one) < len(lines) or len(voters) == 1


def test_node_filter_keeps_the_faults_aimed_at_that_node() -> None:
    keep = show.Filter(node="broker-2")
    fault = {"seq": 5, "ts_us": 1, "event": "fault", "node": "sim", "actor": "nemesis",
             "fault": "crash", "phase": "start", "target": ["broker-2"]}
    assert keep(fault)
    assert not keep({**fault, "target": ["broker-1"]})
    assert not keep({**fault, "event": "phase", "target": None})
