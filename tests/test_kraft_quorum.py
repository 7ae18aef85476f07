"""The KRaft controller quorum wired into the cluster (issue 52): ``cluster.controller_quorum``.

Each controller node hosts Kafka 3.7.0's ``KafkaRaftClient`` (actors/raft) and the controller
logic as ``QuorumController`` does: the active controller is the Raft leader, its changes are
metadata records that take effect once committed, brokers follow it when it moves.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from emulator.cluster import run
from emulator.scenario import load
from tests.helpers import ROOT, scenario_file
from traces.checker import check_events
from traces.writer import TraceWriter

SCENARIO = """
name = "kraft-quorum-failover"
description = "3 voters, acks=all: the active controller is killed, then a broker"
protocol = "4.1"
duration_s = 14.0
heal_s = 40.0
invariants = true

[cluster]
brokers = 3
controller_quorum = 3

[[topics]]
name = "orders"
partitions = 2
"replication.factor" = 3
"min.insync.replicas" = 2

[[producers]]
topic = "orders"
rate = 80
keys = 16
acks = "all"

[[consumers]]
group = "g0"
topic = "orders"
members = 1
"auto.offset.reset" = "earliest"

[faults]
plan = [
  { at_s = 5.0, fault = "crash", target = "controller", duration_s = 4.0 },
  { at_s = 8.0, fault = "crash", target = "broker-1", duration_s = 2.0 },
]

[expect]
forbid = ["lost_acked_write", "log_divergence", "hw_regression_visible", "read_uncommitted",
          "no_convergence"]
"""

SEED = 3


def _scenario_file(text: str = SCENARIO) -> Path:
    return scenario_file(text, "kraft-quorum")


@cache
def _trace(text: str = SCENARIO, seed: int = SEED) -> bytes:
    buf = io.BytesIO()
    res = run(load(str(_scenario_file(text))), seed, None,
              writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return buf.getvalue()


def _events(text: str = SCENARIO, seed: int = SEED) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in _trace(text, seed).splitlines()]


def _leaders(events: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """(ts_us, voter, epoch) of every move to leader."""
    return [(e["ts_us"], e["voter"], e["epoch"]) for e in events
            if e["event"] == "raft_transition" and e["to"] == "leader"]


def test_killing_the_active_controller_elects_a_new_leader_that_brokers_follow() -> None:
    ev = _events()
    crash = next(e for e in ev if e["event"] == "fault" and e["fault"] == "crash"
                 and e["phase"] == "start" and e["target"][0].startswith("controller-"))
    killed = crash["target"][0]
    before = [x for x in _leaders(ev) if x[0] < crash["ts_us"]]
    after = [x for x in _leaders(ev) if x[0] > crash["ts_us"]]
    # kill_controller's target is the active controller: the last leader elected before
    assert before and f"controller-{before[-1][1]}" == killed
    ts, new_leader, epoch = after[0]
    assert f"controller-{new_leader}" != killed and epoch > before[-1][2]
    # the votes that made it leader, from a majority (itself and at least one other)
    votes = [e for e in ev if e["event"] == "raft_vote" and e["candidate"] == new_leader
             and e["epoch"] == epoch and e["granted"]]
    assert votes and all(e["ts_us"] <= ts for e in votes)
    # its first record in the new epoch is the LeaderChange control record
    first_append = next(e for e in ev if e["event"] == "raft_append"
                        and e["voter"] == new_leader and e["epoch"] == epoch)
    assert first_append["records"][0] == "LeaderChange"
    # it becomes the active controller (controller epoch = the Raft epoch) ...
    assert any(e["event"] == "controller_elected" and e["node"] == f"controller-{new_leader}"
               and e["controller_epoch"] == epoch for e in ev)
    # ... and every broker turns to it (a request timed out, a NotController answer), or,
    # restarted, registers with it
    for b in (1, 2, 3):
        assert any(e["event"] in ("controller_followed", "broker_registered")
                   and e["broker"] == b and e["ts_us"] > ts
                   and f"controller-{new_leader}" in (e.get("controller"), e["node"])
                   for e in ev), f"broker {b} never followed the new active controller"
    # the broker crash after the fail-over is handled by the new controller
    assert any(e["event"] == "broker_registered" and e["broker"] == 1
               and e["node"] == f"controller-{new_leader}" and e["ts_us"] > ts for e in ev)


def test_controller_failover_under_acks_all_loses_nothing_and_converges() -> None:
    result = check_events(_events())
    assert result.expect_met, (result.forbidden_found, result.anomalies)
    assert result.anomalies.get("lost_acked_write", 0) == 0
    assert all(p.converged for p in result.partitions.values())


def test_a_change_takes_effect_only_when_a_majority_of_voters_has_it() -> None:
    """Every controller decision is replayed (metadata_apply) only below the high
    watermark, and the trace events of a decision come after the append that carries
    them has been committed: a partition's leader election appears after the raft_hw
    that covers its batch."""
    ev = _events()
    hw: dict[int, int] = {}
    appended: list[tuple[int, int]] = []   # (last offset, voter) of each append with a Trace
    for e in ev:
        if e["event"] == "raft_hw":
            hw[e["voter"]] = e["hw"]
        elif e["event"] == "metadata_apply":
            # a controller below its own HW; a broker (a Raft observer) below the quorum's
            limit = max(hw.values()) if e.get("observer") else hw[e["voter"]]
            assert e["offset"] < limit, e
        elif e["event"] == "raft_append" and "Trace" in e["records"]:
            appended.append((e["last"], e["voter"]))
        elif e["event"] == "leader_elected":
            node = int(e["node"].rsplit("-", 1)[1])
            # the batch it came from is committed at the node that tells it
            assert appended and any(last < hw[node] for last, _ in appended)


LOST_QUORUM = SCENARIO.replace('''plan = [
  { at_s = 5.0, fault = "crash", target = "controller", duration_s = 4.0 },
  { at_s = 8.0, fault = "crash", target = "broker-1", duration_s = 2.0 },
]''', '''plan = [
  { at_s = 5.0, fault = "crash", target = ["FOLLOWERS"], duration_s = 5.0 },
  { at_s = 6.0, fault = "crash", target = "broker-1", duration_s = 0.5 },
]''')


def test_with_the_quorum_lost_a_broker_restart_is_registered_only_once_it_returns() -> None:
    """Two of three voters down from 5 s to 10 s: the restarted broker 1 re-registers at
    6.5 s, the active controller appends the change but nothing commits, so no new
    registration takes effect (nor is traced) until the voters are back."""
    leader = next(v for ts, v, _ in _leaders(_events()) if ts < 5_000_000)
    followers = [f"controller-{v}" for v in (3000, 3001, 3002) if v != leader]
    text = LOST_QUORUM.replace('["FOLLOWERS"]', orjson.dumps(followers).decode())
    ev = _events(text)
    regs = [e for e in ev if e["event"] == "broker_registered" and e["broker"] == 1]
    assert regs[0]["ts_us"] < 5_000_000                 # the first registration
    assert all(not 5_000_000 < e["ts_us"] < 10_000_000 for e in regs)
    assert any(e["ts_us"] >= 10_000_000 for e in regs)  # once the quorum is back
    result = check_events(ev)
    assert result.expect_met, (result.forbidden_found, result.anomalies)


def test_a_restarted_leader_keeps_its_quorum_state_and_comes_back_resigned() -> None:
    """The quorum-state file survives the crash: the killed leader restarts resigned in
    the epoch it led (QuorumState.initialize), never unattached in epoch 0."""
    ev = _events()
    crash = next(e for e in ev if e["event"] == "fault" and e["fault"] == "crash"
                 and e["phase"] == "start" and e["target"][0].startswith("controller-"))
    killed = crash["target"][0]
    led = max(epoch for ts, v, epoch in _leaders(ev)
              if ts < crash["ts_us"] and f"controller-{v}" == killed)
    restart = next(e for e in ev if e["event"] == "node_restart" and e["node"] == killed)
    first = next(e for e in ev if e["event"] == "raft_transition" and e["node"] == killed
                 and e["ts_us"] >= restart["ts_us"])
    assert (first["from"], first["to"], first["epoch"]) == ("none", "resigned", led)
    # and it catches up: it replays the committed log again from offset 0
    assert any(e["event"] == "metadata_apply" and e["node"] == killed and e["first"] == 0
               and e["ts_us"] > restart["ts_us"] for e in ev)


def test_same_seed_gives_a_byte_identical_trace() -> None:
    a = _trace()
    buf = io.BytesIO()
    run(load(str(_scenario_file())), SEED, None, writer=TraceWriter(None, buffer=buf))
    assert buf.getvalue() == a


def test_the_trace_does_not_depend_on_the_hash_seed() -> None:
    path = _scenario_file()
    script = ("import io, sys\nfrom emulator.cluster import run\n"
              "from emulator.scenario import load\nfrom traces.writer import TraceWriter\n"
              "buf = io.BytesIO()\n"
              f"run(load({str(path)!r}), {SEED}, None, writer=TraceWriter(None, buffer=buf))\n"
              "sys.stdout.buffer.write(buf.getvalue())\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                         env=dict(os.environ, PYTHONHASHSEED="4242"), timeout=600, check=True)
    assert out.stdout == _trace()


def test_with_the_key_at_zero_the_single_controller_runs_as_before() -> None:
    text = SCENARIO.replace("controller_quorum = 3\n", "controller_quorum = 0\n")
    sc = load(str(_scenario_file(text)))
    assert "controller_quorum" not in sc["cluster"]
