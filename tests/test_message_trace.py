"""Message-level traces (issue 20, item 2): ``--trace-messages`` records every message sent
and received without changing the run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import FAULTY

from cli.replay import main as replay_main
from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_file
from traces.reader import iter_events
from traces.replay import model_lines

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One faulty run (kills, power losses, partitions, pauses) without and with messages."""
    d = tmp_path_factory.mktemp("msgs")
    sc = load("default", FAULTY)
    plain, traced = d / "plain.jsonl", d / "traced.jsonl"
    # seed 41 draws a pause, a crash, a power loss and a partition; frames reach a paused
    # receiver late, and TCP holds some across the partition
    run(sc, 41, str(plain))
    run(sc, 41, str(traced), trace_messages=True)
    return plain, traced


def test_message_tracing_changes_no_other_event(pair: tuple[Path, Path]) -> None:
    plain, traced = pair
    faults = [f["fault"] for f in next(iter_events(plain))["fault_plan"]]
    assert {"pause", "crash", "power_loss", "partition"} <= set(faults), faults
    assert list(model_lines(plain)) == list(model_lines(traced))
    assert check_file(plain).anomalies == check_file(traced).anomalies


def test_each_message_is_sent_once_and_received_at_most_once_when_due(
        pair: tuple[Path, Path]) -> None:
    """A ``msg_recv`` follows its ``msg_send`` from the same sender: at the time the network
    gave it (later only while its receiver was paused), or, for a frame TCP held on its
    connection across a cut (fate ``held``), once the cut heals; dropped sends are never
    received."""
    _, traced = pair
    sends: dict[int, dict[str, object]] = {}
    received: set[int] = set()
    late = held = 0
    with iter_events(traced) as evs:
        header = next(evs)
        assert header["trace_messages"] is True
        for ev in evs:
            if ev["event"] == "msg_send":
                assert ev["msg_id"] == len(sends) + 1
                sends[ev["msg_id"]] = ev
            elif ev["event"] == "msg_recv":
                sent = sends[ev["msg_id"]]
                assert ev["msg_id"] not in received
                received.add(ev["msg_id"])
                assert sent["fate"] in ("deliver", "held")
                assert (ev["src"], ev["msg"]) == (sent["src"], sent["msg"])
                assert sent["dst"] == f"{ev['node']}/{ev['actor']}"
                assert ev["ts_us"] >= sent["ts_us"]
                if sent["fate"] == "held":
                    held += 1
                    continue
                assert isinstance(sent["deliver_us"], int) and ev["ts_us"] >= sent["deliver_us"]
                late += ev["ts_us"] > sent["deliver_us"]
    assert len(received) > 500
    assert late > 0   # frames held while their receiver was paused
    assert held > 0   # frames TCP held across the partition, delivered after it
    # no frame has another fate (the network is TCP and the plan has no drop fault), and
    # the crashes leave frames their receivers never get (a msg_drop each, no msg_recv)
    assert all(s["fate"] in ("deliver", "held") for s in sends.values())
    assert set(sends) - received


def test_a_fetcher_request_names_each_partition_with_its_fetch_offset(
        pair: tuple[Path, Path]) -> None:
    _, traced = pair
    with iter_events(traced) as evs:
        fetch = next(e for e in evs if e["event"] == "msg_send" and e["msg"] == "ReplicaFetch")
    assert fetch["src"].split("/")[1].startswith("ReplicaFetcherThread-")
    [part, *_] = fetch["parts"]
    assert {"topic", "partition", "fetch_offset", "current_leader_epoch"} <= set(part)


def test_replay_adds_messages_to_a_recorded_trace_and_keeps_every_event(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recorded = REGRESSIONS / "s13-kafka13141-diverging-fetch-hw.jsonl.gz"
    out = tmp_path / "with-messages.jsonl.gz"
    assert replay_main([str(recorded), "--trace-messages", "--out", str(out)]) == 0
    assert "replays event for event" in capsys.readouterr().out
    # a trace recorded with messages replays byte for byte (with messages again)
    assert replay_main([str(out)]) == 0
    assert "byte for byte" in capsys.readouterr().out


def test_a_message_trace_is_byte_identical_across_processes_and_hash_seeds(
        tmp_path: Path) -> None:
    import hashlib
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    digests = []
    for hashseed in ("0", "4242"):
        out = tmp_path / f"m-{hashseed}.jsonl"
        args = [sys.executable, "-m", "cli", "run", "default", "--seed", "13",
                "--out", str(out), "--trace-messages"]
        for s in FAULTY:
            args += ["--set", s]
        subprocess.run(args, cwd=root, env=dict(os.environ, PYTHONHASHSEED=hashseed),
                       check=False, capture_output=True, timeout=600)
        data = out.read_bytes()
        assert b'"event":"msg_recv"' in data
        digests.append(hashlib.sha256(data).hexdigest())
    assert digests[0] == digests[1]
