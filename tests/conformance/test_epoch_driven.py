"""Whole-cluster runs held against Kafka's ``EpochDrivenReplicationProtocolAcceptanceTest``
(2.0.0, the ZooKeeper era with KIP-101 and KIP-279; 2.8.0, ZooKeeper with AlterIsr).

Kafka's test starts two real brokers (100 and 101; here broker-1 and broker-2), one
partition with both as replicas, and a producer, then bounces and kills brokers between
writes and compares the brokers' logs and leader-epoch files. Here the same sequences run
on isrlab's emulated cluster (controller, brokers, producer; every message through the
simulated network), scripted as fault plans, and the assertions read the trace:
``final_log`` gives every replica's records with the leader epoch each was written in,
from which the leader-epoch cache each replica must hold follows (the start offset of
each epoch's first record).

Two things differ in how a step is taken, never in what is asserted:

* Kafka "bounces" a broker with a controlled shutdown; isrlab has no controlled shutdown
  yet (issue 19), so a bounce is a crash long enough for the controller to expire the
  broker's session — the controller then removes it from the ISR as the ZooKeeper
  controller does for a controlled shutdown (``ReplicaStateMachine``: leader epoch + 1).
* Kafka deletes bytes from the end of a stopped leader's log file to make it lose its
  unflushed tail; isrlab loses it the way it happens in production, by a power loss
  (scenario S2, KIP-101's own "scenario 2").
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import data_topics_only
from kafkacite import kafka

from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_events
from traces.writer import TraceWriter

Event = dict[str, Any]
TEST = "EpochDrivenReplicationProtocolAcceptanceTest"
ZK_ERAS = pytest.mark.parametrize("era", ["2.0", "2.8"])
#: S2's script is timed for the eras before KIP-380 (2.2), where a quick restart inside the
#: ZooKeeper session goes unnoticed; 2.1 is the last of them
S2_ERAS = pytest.mark.parametrize("era", ["2.0", "2.1"])

BASE = """
name = "epoch-driven"
description = "EpochDrivenReplicationProtocolAcceptanceTest"
protocol = "{era}"
duration_s = {duration}
heal_s = 30.0

[cluster]
brokers = 2
"broker.heartbeat.interval.ms" = 500
"broker.session.timeout.ms" = 3000

[[topics]]
name = "topic1"
partitions = 1
"replication.factor" = 2
"min.insync.replicas" = 1
"unclean.leader.election.enable" = {unclean}

[network]
delay = {{ dist = "constant", ms = 1.0 }}

[[producers]]
topic = "topic1"
rate = {rate}
keys = 0
acks = "{acks}"
"enable.idempotence" = false
"request.timeout.ms" = 1000

[[consumers]]
group = "g0"
topic = "topic1"
"auto.offset.reset" = "earliest"
"""


def _fault(at_s: float, fault: str, target: str, duration_s: float) -> str:
    return (f'\n[[faults.plan]]\nat_s = {at_s}\nfault = "{fault}"\ntarget = "{target}"\n'
            f"duration_s = {duration_s}\n")


def _run(tmp_path: Path, era: str, faults: list[str], *, duration: float, rate: float = 2,
         acks: str = "all", unclean: bool = False) -> list[Event]:
    f = tmp_path / f"epoch-driven-{era}.toml"
    f.write_text(BASE.format(era=era, duration=duration, rate=rate, acks=acks,
                             unclean=str(unclean).lower()) + "".join(faults))
    sc = load(str(f))
    buf = io.BytesIO()
    res = run(sc, 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return data_topics_only([orjson.loads(line) for line in buf.getvalue().splitlines()])


def _of(evs: list[Event], event: str, /, **match: Any) -> list[Event]:
    return [e for e in evs if e["event"] == event
            and all(e.get(k) == v for k, v in match.items())]


def _logs(evs: list[Event]) -> dict[int, list[tuple[int, str, int]]]:
    """replica -> its final log as (offset, value, leader epoch)."""
    out: dict[int, list[tuple[int, str, int]]] = {}
    for e in _of(evs, "final_log"):
        out.setdefault(e["replica"], []).extend((o, v, ep) for o, v, ep in e["records"])
    return out


def _epoch_entries(log: list[tuple[int, str, int]]) -> list[tuple[int, int]]:
    """The leader-epoch cache a log's records make: (epoch, offset of its first record)."""
    out: list[tuple[int, int]] = []
    for offset, _, epoch in log:
        if not out or out[-1][0] != epoch:
            out.append((epoch, offset))
    return out


def _acked(evs: list[Event]) -> dict[int, str]:
    return {e["offset"]: e["value"] for e in _of(evs, "produce_ack")}


@kafka("2.0.0", TEST, "shouldFollowLeaderEpochBasicWorkflow")
@kafka("2.8.0", TEST, "shouldFollowLeaderEpochBasicWorkflow")
@ZK_ERAS
def test_each_leader_epoch_reaches_the_follower_with_the_first_record_written_in_it(
        tmp_path: Path, era: str) -> None:
    """Records are written in epoch 0; bouncing the follower moves the leader to epoch 1
    (the controller's ISR removal) and bouncing the leader elects the follower in epoch 2.
    Each epoch enters a cache only with its first record (Kafka 2.0 has no entry for an
    epoch without records), and both replicas end with the same log and the same cache,
    (0, 0), (1, a), (2, b)."""
    evs = _run(tmp_path, era, [_fault(1.5, "crash", "follower:topic1-0", 5.0),
                               _fault(10.5, "crash", "leader:topic1-0", 5.0)], duration=20.0)
    (fenced,) = _of(evs, "isr_change", reason="fenced", new=[1])
    assert fenced["leader_epoch"] == 1
    assert _of(evs, "become_leader", replica=1, leader_epoch=1)
    assert [e["leader"] for e in _of(evs, "leader_elected")] == [1, 2]
    assert _of(evs, "leader_elected")[-1]["leader_epoch"] == 2
    logs = _logs(evs)
    assert logs[1] == logs[2]
    entries = _epoch_entries(logs[1])
    assert [epoch for epoch, _ in entries] == [0, 1, 2]
    assert entries[0] == (0, 0)
    # every acknowledged write is in both logs, at its acknowledged offset
    assert all(logs[1][o][1] == v for o, v in _acked(evs).items())


def _s2(era: str) -> list[Event]:
    sc = load("s2-kip101-power-loss-divergence", [f'protocol="{era}"'])
    buf = io.BytesIO()
    res = run(sc, sc["seed"], None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return data_topics_only([orjson.loads(line) for line in buf.getvalue().splitlines()])


@kafka("2.0.0", TEST, "shouldNotAllowDivergentLogs")
@kafka("2.1.0", TEST, "shouldNotAllowDivergentLogs")
@S2_ERAS
def test_a_leader_that_lost_its_tail_and_wrote_on_leaves_no_divergent_follower(
        era: str) -> None:
    """The leader's log loses its unflushed tail, it is elected again and writes new
    records over those offsets; the other replica, which still holds the lost tail from
    the older epoch, comes back and must end with exactly the leader's log (it truncates
    to the end of its last common epoch, not to its HW)."""
    evs = _s2(era)
    logs = _logs(evs)
    assert logs[1] == logs[2]
    assert _of(evs, "log_truncate", replica=1) or _of(evs, "log_truncate", replica=2)
    assert not check_events(iter(evs)).anomalies.get("log_divergence")


@kafka("2.0.0", TEST, "shouldNotAllowDivergentLogs")
def test_before_kip_101_the_same_sequence_leaves_divergent_logs() -> None:
    """The test's ``KIP_101_ENABLED = false`` switch (inter-broker protocol 0.11.0-IV1,
    truncation to the high watermark): the returning replica keeps its stale suffix and the
    two logs hold different records at the same offsets — the failure the test was written
    to show."""
    evs = _s2("0.10")
    logs = _logs(evs)
    common = min(len(logs[1]), len(logs[2]))
    assert logs[1][:common] != logs[2][:common]
    assert check_events(iter(evs)).anomalies.get("log_divergence")


@kafka("2.0.0", TEST, "offsetsShouldNotGoBackwards")
@kafka("2.1.0", TEST, "offsetsShouldNotGoBackwards")
@S2_ERAS
def test_after_the_lost_tail_is_rewritten_offsets_only_go_forward(era: str) -> None:
    """After the same loss and resync, every log's offsets are consecutive from its log
    start and a consumer reading the partition sees each offset after the one before
    (no nonmonotonic poll within an assignment). isrlab's logs hold records, not
    compressed message sets, so the pre-KIP-101 way offsets went backwards (a follower's
    LEO landing inside a compressed set) cannot happen here; the property is still held."""
    evs = _s2(era)
    assert _of(evs, "log_truncate")          # the lost tail was there to be rewritten
    for log in _logs(evs).values():
        offsets = [o for o, _, _ in log]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    counts = check_events(iter(evs)).anomalies
    assert not counts.get("nonmonotonic_poll") and not counts.get("log_divergence")
    assert _of(evs, "consume")


@kafka("2.0.0", TEST, "shouldSurviveFastLeaderChange")
@kafka("2.8.0", TEST, "shouldSurviveFastLeaderChange")
@ZK_ERAS
def test_five_rounds_of_bouncing_follower_then_leader_lose_no_acknowledged_write(
        tmp_path: Path, era: str) -> None:
    """Five rounds of: a write, the follower bounced, then the leader bounced (each time
    the other replica is back in the ISR first). Every acknowledged write is in both logs
    at the end and both logs end at the same offset."""
    faults = []
    for i in range(5):
        t = 1.0 + 16.0 * i
        faults += [_fault(t, "crash", "follower:topic1-0", 4.0),
                   _fault(t + 8.0, "crash", "leader:topic1-0", 4.0)]
    evs = _run(tmp_path, era, faults, duration=82.0, rate=1)
    assert len(_of(evs, "leader_elected")) >= 6     # the first, then one per leader bounce
    logs = _logs(evs)
    assert logs[1] == logs[2]
    acked = _acked(evs)
    assert acked and all(logs[1][o][1] == v for o, v in acked.items())
    assert not check_events(iter(evs)).anomalies.get("lost_acked_write")


@kafka("2.0.0", TEST, "logsShouldNotDivergeOnUncleanLeaderElections")
@kafka("2.8.0", TEST, "logsShouldNotDivergeOnUncleanLeaderElections")
@ZK_ERAS
def test_alternating_unclean_elections_still_end_with_one_log(tmp_path: Path,
                                                               era: str) -> None:
    """Unclean election on, min ISR 1, acks=1: broker-1 dies; broker-2 writes alone; then
    they swap four times, each coming back while the other is down and being elected
    uncleanly, each writing records the other never saw. When both are finally up, the
    follower truncates to where its log and the leader's part, and the two logs are the
    same (acknowledged writes are lost — unclean election allows that — but the replicas
    never disagree)."""
    faults = [_fault(1.0, "crash", "broker-1", 7.0),
              _fault(8.0, "crash", "broker-2", 7.0),
              _fault(15.0, "crash", "broker-1", 7.0),
              _fault(22.0, "crash", "broker-2", 7.0)]
    evs = _run(tmp_path, era, faults, duration=32.0, acks="1", unclean=True)
    assert len(_of(evs, "leader_elected", election="unclean")) >= 2
    assert _of(evs, "log_truncate")          # someone had records the leader never saw
    logs = _logs(evs)
    assert logs[1] == logs[2]
    assert not check_events(iter(evs)).anomalies.get("log_divergence")
