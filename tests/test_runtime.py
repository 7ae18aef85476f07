"""The runtime's contract: determinism, FIFO links, crashes, corrupt frames, killed runs."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.network import DelayDist, Network
from tests.helpers import FAULTY, SMALL, events, run_to_bytes

ROOT = Path(__file__).resolve().parent.parent
ISRLAB = [sys.executable, "-m", "cli"]


#: ``isrlab run`` for each seed in one interpreter (argv: out folder, seeds...), the CLI's own
#: entry point; one interpreter per hash seed, the two side by side on the two cores
_RUN_SEEDS = """
import sys
from cli.main import main
sets = [arg for s in FAULTY for arg in ("--set", s)]
for seed in sys.argv[2:]:
    code = main(["run", "default", "--seed", seed, "--out", f"{sys.argv[1]}/s{seed}.jsonl", *sets])
    if code:
        sys.exit(code)
"""


def test_same_seed_gives_byte_identical_traces_across_processes_and_hash_seeds(
        tmp_path: Path) -> None:
    """20 seeds with faults on, run by two interpreters with different PYTHONHASHSEED (each
    runs the 20 in turn, so no state may leak from one run into the next either)."""
    seeds = [str(s) for s in range(1, 21)]
    script = f"FAULTY = {FAULTY!r}\n{_RUN_SEEDS}"
    procs = []
    for hashseed in ("0", "12345"):
        (tmp_path / hashseed).mkdir()
        procs.append(subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path / hashseed), *seeds], cwd=ROOT,
            env=dict(os.environ, PYTHONHASHSEED=hashseed), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()
    digests = {}
    for seed in seeds:
        a = (tmp_path / "0" / f"s{seed}.jsonl").read_bytes()
        b = (tmp_path / "12345" / f"s{seed}.jsonl").read_bytes()
        assert a == b, f"seed {seed}: traces differ across processes"
        digests[seed] = hashlib.sha256(a).hexdigest()
    assert len(set(digests.values())) == 20, "different seeds must give different traces"


def test_event_order_does_not_depend_on_trios_scheduler() -> None:
    """Reseeding Trio's batch-shuffling RNG and adding idle tasks changes nothing."""
    _, base = run_to_bytes("default", 3, FAULTY)
    import trio._core._run as trio_run
    saved = trio_run._ALLOW_DETERMINISTIC_SCHEDULING
    orig_run = trio.run
    try:
        for trio_seed, idle in ((1, 0), (2, 7), (99, 31)):
            trio_run._ALLOW_DETERMINISTIC_SCHEDULING = True
            trio_run._r.seed(trio_seed)

            def patched(fn, *a, idle=idle, **kw):  # type: ignore[no-untyped-def]
                async def wrapper(*args):  # type: ignore[no-untyped-def]
                    async with trio.open_nursery() as n:
                        for _ in range(idle):
                            n.start_soon(trio.sleep_forever)
                        await fn(*args)
                        n.cancel_scope.cancel()
                return orig_run(wrapper, *a, **kw)
            trio.run = patched
            _, again = run_to_bytes("default", 3, FAULTY)
            assert again == base
    finally:
        trio.run = orig_run
        trio_run._ALLOW_DETERMINISTIC_SCHEDULING = saved


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32), sends=st.lists(st.integers(0, 5000), min_size=2,
                                                   max_size=60),
       dist=st.sampled_from(DelayDist.KINDS))
def test_links_are_fifo_under_jitter(seed: int, sends: list[int], dist: str) -> None:
    net = Network(random.Random(seed), DelayDist(dist=dist, ms=1.0, low_ms=0.0, high_ms=50.0,
                                                 mean_ms=20.0, mu=2.0, sigma=1.5))
    now = 0
    arrivals = []
    for gap in sends:
        now += gap
        fate = net.send(now, ("a", "x"), ("b", "y"), b"x")
        assert not isinstance(fate, str)
        arrivals.append(fate[0])
    assert arrivals == sorted(arrivals)


def test_crashed_node_receives_nothing_and_in_flight_messages_are_traced_dropped() -> None:
    _, data = run_to_bytes("default", 5, SMALL + [
        'faults.plan=[{at_s=2.0, fault="crash", target="broker-2", duration_s=2.0}]'])
    evs = events(data)
    crash = next(e for e in evs if e["event"] == "node_crash")
    restart = next(e for e in evs if e["event"] == "node_restart")
    down = [e for e in evs if crash["seq"] < e["seq"] < restart["seq"]]
    assert not [e for e in down if e["node"] == "broker-2" and e["actor"] != "sim"], \
        "a crashed node must not handle anything"
    drops = [e for e in down if e["event"] == "msg_drop" and e["dst"].startswith("broker-2/")]
    assert drops and all(d["reason"] == "node_down" for d in drops)


def test_restart_keeps_durable_log_and_loses_volatile_state() -> None:
    _, data = run_to_bytes("default", 5, SMALL + [
        'faults.plan=[{at_s=3.0, fault="crash", target="broker-2", duration_s=1.0}]'])
    evs = events(data)
    crash = next(e for e in evs if e["event"] == "node_crash")
    before = [e for e in evs if e["event"] == "leo_update" and e["node"] == "broker-2"
              and e["seq"] < crash["seq"] and e["partition"] == 0]
    recovery = next(e for e in evs if e["event"] == "log_recovery" and e["node"] == "broker-2"
                    and e["partition"] == 0)
    # durable: a process crash keeps the whole log (page cache survives)
    assert recovery["leo"] == before[-1]["new"]
    # volatile: the HW comes back from the (older) checkpoint, the role from the controller
    assert recovery["hw"] <= recovery["leo"]
    after = [e for e in evs if e["seq"] > recovery["seq"] and e["node"] == "broker-2"
             and e["event"] in ("become_leader", "become_follower")]
    assert after, "a restarted replica waits for the controller to tell it its role"


def test_power_loss_keeps_only_the_flushed_prefix() -> None:
    _, data = run_to_bytes("default", 5, SMALL + [
        'faults.plan=[{at_s=3.0, fault="power_loss", target="broker-2", duration_s=1.0}]'])
    rec = next(e for e in events(data) if e["event"] == "log_recovery"
               and e["node"] == "broker-2")
    assert rec["leo"] == rec["recovery_point"]


def test_frames_corrupted_on_the_wire_are_retransmitted_never_lost_or_delivered_damaged(
        ) -> None:
    """TCP's checksum discards a damaged segment and the sender retransmits it: with 2%
    corruption some connections hold a frame for a retransmission (``tcp_stall`` with
    reason ``loss``, then ``tcp_resume``), none is dropped or reaches an actor damaged
    (``frame_rejected``)."""
    res, data = run_to_bytes("default", 2, SMALL + ["network.corrupt_rate=0.02"])
    evs = events(data)
    stalls = [e for e in evs if e["event"] == "tcp_stall"]
    assert stalls and all(e["reason"] == "loss" for e in stalls)
    resumed = [e for e in evs if e["event"] == "tcp_resume"]
    assert resumed and all(e["stalled_ms"] >= 200 for e in resumed)
    assert not [e for e in evs if e["event"] == "frame_rejected"]
    assert not [e for e in evs if e["event"] == "msg_drop" and e["reason"] != "node_down"]
    assert res.status == "ok"


def test_killed_run_leaves_a_valid_trace_ending_in_run_end(tmp_path: Path) -> None:
    out = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([*ISRLAB, "run", "default", "--out", str(out), "--set",
                             "duration_s=100000", "--set", "heal_s=10"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # the trace is written under a temporary name ending in its own, renamed at the end
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(
            p.stat().st_size >= 2 for p in tmp_path.glob(f".isrlab-part-*-{out.name}")):
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    lines = out.read_bytes().splitlines()
    import orjson
    parsed = [orjson.loads(x) for x in lines]
    assert parsed[-1]["event"] == "run_end"
    assert parsed[-1]["status"] == "aborted"
    assert [e["seq"] for e in parsed] == list(range(len(parsed)))
    assert parsed[-1]["sha256"] == hashlib.sha256(b"".join(x + b"\n" for x in lines[:-1])
                                                  ).hexdigest()


def test_exception_inside_an_actor_ends_the_trace_with_status_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.replica import Replica

    def boom(self: Replica, *a: object) -> None:
        raise RuntimeError("injected failure")
    monkeypatch.setattr(Replica, "_on_tick", boom)
    res, data = run_to_bytes("default", 1, SMALL)
    last = events(data)[-1]
    assert res.status == "error"
    assert last["event"] == "run_end" and last["status"] == "error"
    assert last["error_type"] == "RuntimeError" and "injected" in last["error_message"]
    # every broker's replicas tick at 5 s and raise at that one instant: the trace names the
    # error and counts the others, never Trio's nursery group (whose order is Trio's)
    assert "more raised at the same instant" in last["error_message"]


def test_collector_thresholds_are_restored_after_a_run_even_one_that_fails(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from actors.replica import Replica
    before = gc.get_threshold()
    run_to_bytes("default", 2, SMALL)
    assert gc.get_threshold() == before

    def boom(self: Replica, *a: object) -> None:
        raise RuntimeError("injected failure")
    monkeypatch.setattr(Replica, "_on_tick", boom)
    res, _ = run_to_bytes("default", 2, SMALL)
    assert res.status == "error"
    assert gc.get_threshold() == before


def test_trace_bytes_do_not_depend_on_how_the_sink_batches_lines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from traces.writer import _Sink
    _, batched = run_to_bytes("default", 3, [*SMALL, *FAULTY])
    monkeypatch.setattr(_Sink, "BATCH", 1)
    _, line_by_line = run_to_bytes("default", 3, [*SMALL, *FAULTY])
    assert batched == line_by_line
    last = events(batched)[-1]
    body = batched[: batched.rindex(b"\n", 0, len(batched) - 1) + 1]
    assert last["sha256"] == hashlib.sha256(body).hexdigest()


def test_cluster_operations_are_byte_identical_across_processes_and_hash_seeds(
        tmp_path: Path) -> None:
    """Reassignments (cancelled ones too), brokers joining and leaving, and a throttled
    move: the same seed gives the same trace in two processes with different
    PYTHONHASHSEED (replica sets, hosted partitions and throttles are sets in the code)."""
    ops = ['faults.nemesis=["reassign","add_broker","decommission","kill","pause"]',
           "cluster.brokers=4", "cluster.spare.brokers=2", "faults.interval_s=1.0",
           "duration_s=8.0", "heal_s=30.0", "producers[0].rate=80"]
    throttled = ['faults.plan=[{at_s = 2.0, fault = "reassign", target = "orders-0", '
                 'replicas = [4, 5, 6], throttle = 20000}]', "cluster.brokers=6",
                 "duration_s=8.0", "heal_s=30.0"]
    for seed, sets in ((1, ops), (2, ops), (3, throttled)):
        digests = []
        for hashseed in ("0", "777"):
            out = tmp_path / f"ops{seed}-{hashseed}.jsonl"
            args = [*ISRLAB, "run", "default", "--seed", str(seed), "--out", str(out)]
            for s in sets:
                args += ["--set", s]
            subprocess.run(args, cwd=ROOT, env=dict(os.environ, PYTHONHASHSEED=hashseed),
                           check=False, capture_output=True)
            data = out.read_bytes()
            assert b'"event":"reassignment"' in data
            digests.append(hashlib.sha256(data).hexdigest())
        assert digests[0] == digests[1], f"seed {seed}: traces differ across processes"
