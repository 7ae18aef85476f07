"""Brokers as Raft observers of the metadata log (issue 52, point 3; KIP-595, KIP-631).

With ``cluster.controller_quorum`` each broker hosts a ``MetadataObserver`` (actor ``raft``):
a ``KafkaRaftClient`` whose id is not a voter's. It fetches the metadata log from the
quorum leader, re-discovers the leader after a fail-over by asking any voter, applies the
records below its high watermark in offset order and only then does the broker act on
them; the leader it knows is the controller its heartbeats, registration and
AlterPartition go to (3.7.0 ``RaftControllerNodeProvider``); a heartbeat carries the offset
of the last record applied (``BrokerHeartbeatRequest.currentMetadataOffset``). The active
controller no longer pushes PartitionState / BrokerStates.
"""

from __future__ import annotations

import io
import random
from functools import cache
from typing import Any

import orjson

from actors.broker import Broker
from actors.controller import BrokerRecord, ControllerStore, PartitionRecord
from actors.core import Send
from actors.log import BrokerDisk
from actors.messages import (
    BrokerHeartbeat,
    BrokerRegistration,
    BrokerRegistrationResponse,
    BrokerStates,
    PartitionState,
    Tick,
)
from actors.quorum_controller import (
    MetadataObserver,
    apply_record,
    broker_record,
    partition_record,
)
from actors.raft.config import raft_rules_for
from emulator.cluster import run
from emulator.scenario import load
from tests.helpers import scenario_file
from traces.checker import check_events
from traces.writer import TraceWriter

SCENARIO = """
name = "kraft-observers"
description = "3 voters, brokers observe the metadata log: the active controller and a broker die"
protocol = "3.7"
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
rate = 50
acks = "all"

[faults]
plan = [
  { at_s = 4.0, fault = "crash", target = "controller", duration_s = 3.0 },
  { at_s = 9.0, fault = "crash", target = "broker-2", duration_s = 1.5 },
]
"""
SEED = 5
VOTERS = ("controller-3000", "controller-3001", "controller-3002")


@cache
def _events() -> tuple[dict[str, Any], ...]:
    path = scenario_file(SCENARIO, "kraft-observers")
    buf = io.BytesIO()
    res = run(load(str(path)), SEED, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return tuple(orjson.loads(line) for line in buf.getvalue().splitlines())


def _observer_applies(ev: tuple[dict[str, Any], ...], broker: int) -> list[dict[str, Any]]:
    return [e for e in ev if e["event"] == "metadata_apply" and e["node"] == f"broker-{broker}"]


# -- from a run -------------------------------------------------------------------------------

def test_each_broker_applies_only_what_the_quorum_high_watermark_has_passed() -> None:
    """Every broker traces what it applied (node broker-N, ``observer``), and each apply's
    last offset is below the largest high watermark a voter had traced before it: a broker
    never acts on an uncommitted metadata record. The checker agrees
    (``uncommitted_metadata_applied`` is 0)."""
    ev = _events()
    quorum_hw = 0
    for e in ev:
        if e["event"] == "raft_hw":
            quorum_hw = max(quorum_hw, e["hw"])
        elif e["event"] == "metadata_apply" and e["node"].startswith("broker-"):
            assert e["observer"] is True and e["voter"] == int(e["node"][7:])
            assert e["offset"] < quorum_hw, e
    for b in (1, 2, 3):
        assert _observer_applies(ev, b), f"broker {b} applied nothing"
    r = check_events(list(ev))
    assert r.anomalies["uncommitted_metadata_applied"] == 0
    assert r.anomalies["metadata_divergence"] == 0


def test_a_broker_acts_on_a_partition_change_only_when_it_applies_it() -> None:
    """A replica becomes leader or follower at a broker only in the step where that
    broker's observer applied a batch (same time, after the ``metadata_apply``): the
    controller's ``leader_elected`` alone moves nothing."""
    ev = _events()
    last_apply: dict[str, int] = {}
    moves = 0
    for e in ev:
        if e["event"] == "metadata_apply" and e["node"].startswith("broker-"):
            last_apply[e["node"]] = e["ts_us"]
        elif e["event"] in ("become_leader", "become_follower") and e["ts_us"] > 0:
            assert last_apply.get(e["node"]) == e["ts_us"], e
            moves += 1
    assert moves >= 6


def test_after_the_active_controller_dies_brokers_find_the_new_leader_by_fetching() -> None:
    """The active controller is killed: the survivors elect a new leader (here after a split
    vote, in a later epoch), and every broker turns to the leader elected last, because its
    observer learnt it from a Fetch answer (reason ``raft_leader``), not from a
    NotController answer nor a pushed state."""
    ev = _events()
    crash = next(e for e in ev if e["event"] == "fault" and e["phase"] == "start"
                 and e["target"][0] in VOTERS)
    leaders = [e for e in ev if e["event"] == "raft_transition" and e["to"] == "leader"
               and e["ts_us"] > crash["ts_us"]]
    assert leaders and all(f"controller-{e['voter']}" != crash["target"][0] for e in leaders)
    for b in (1, 2, 3):
        follow = next(e for e in ev if e["event"] == "controller_followed"
                      and e["broker"] == b and e["ts_us"] > crash["ts_us"])
        latest = [e for e in leaders if e["seq"] < follow["seq"]][-1]
        assert follow["controller"] == f"controller-{latest['voter']}"
        assert follow["reason"] == "raft_leader"
    assert not any(e["event"] == "controller_followed" and e["reason"] != "raft_leader"
                   for e in ev)


def test_a_restarted_broker_refetches_the_log_from_zero_and_catches_up() -> None:
    """Broker 2's metadata log is in memory: after its restart its observer fetches from
    offset 0 again, applies up to what the quorum had committed, and only then do its
    replicas move (they wait for its own registration record: the initial catch-up)."""
    ev = _events()
    restart = next(e for e in ev if e["event"] == "node_restart" and e["node"] == "broker-2")
    applies = [e for e in _observer_applies(ev, 2) if e["ts_us"] >= restart["ts_us"]]
    assert applies and applies[0]["first"] == 0
    hw_at_restart = max(e["hw"] for e in ev if e["event"] == "raft_hw"
                        and e["ts_us"] <= restart["ts_us"])
    assert applies[-1]["offset"] >= hw_at_restart - 1
    reg = next(e for e in ev if e["event"] == "broker_registered" and e["broker"] == 2
               and e["ts_us"] > restart["ts_us"])
    moved = [e for e in ev if e["event"] in ("become_leader", "become_follower")
             and e["node"] == "broker-2" and e["ts_us"] > restart["ts_us"]]
    assert moved and all(m["ts_us"] >= reg["ts_us"] for m in moved)


def test_the_run_keeps_its_safety_properties() -> None:
    r = check_events(list(_events()))
    assert r.anomalies["lost_acked_write"] == 0 and r.anomalies["log_divergence"] == 0
    assert all(p.converged for p in r.partitions.values())


# -- the broker and its observer, by hand ---------------------------------------------------

def _broker() -> tuple[Broker, MetadataObserver]:
    base = ControllerStore()
    obs = MetadataObserver("broker-1", 1, (3000, 3001, 3002), base, random.Random(1),
                           raft_rules_for("3.7"))
    broker = Broker("broker-1", 1, BrokerDisk(), incarnation=1, hosted=(("orders", 0),),
                    heartbeat_interval_ms=2000,
                    controllers=("controller-3000", "controller-3001", "controller-3002"),
                    observer=obs)
    return broker, obs


def _apply(obs: MetadataObserver, *records: tuple[Any, ...]) -> None:
    for rec in records:
        apply_record(obs.image, rec)
        obs.applied += 1


def _sends(broker: Broker) -> list[Send]:
    return [e for e in broker.drain() if type(e) is Send]


def test_a_broker_registers_only_once_its_observer_knows_the_leader() -> None:
    broker, _ = _broker()
    broker.start()
    assert not any(type(s.msg) is BrokerRegistration for s in _sends(broker))
    broker.on_raft_leader("controller-3001")
    regs = [s for s in _sends(broker) if type(s.msg) is BrokerRegistration]
    assert [s.dst for s in regs] == [("controller-3001", "controller")]


def test_a_heartbeat_carries_the_offset_of_the_last_record_applied() -> None:
    broker, obs = _broker()
    broker.broker_epoch = 4
    _apply(obs, ("ControllerMeta", 1, 5, True), broker_record(1, BrokerRecord(4, 1, False)))
    broker.handle(Tick("heartbeat", 0, 0), ("broker-1", "broker"))
    beats = [s.msg for s in _sends(broker) if type(s.msg) is BrokerHeartbeat]
    assert beats == [BrokerHeartbeat(1, 4, 1)]   # offsets 0 and 1 applied


def test_a_broker_acts_only_once_it_has_applied_its_own_registration() -> None:
    """3.7.0 ``BrokerServer``: the metadata publishers start after the initial catch-up
    (the broker's applied offset reached its registration record). Before, applied
    partition changes move no replica; at the catch-up the whole image is published, the
    broker states first; after it, each change as it is applied."""
    broker, obs = _broker()
    p = PartitionRecord("orders", 0, (1, 2, 3), 2, False, leader=1, leader_epoch=3,
                        isr=(1, 2, 3), partition_epoch=7)
    _apply(obs, ("ControllerMeta", 2, 9, True), partition_record(p))
    broker.on_metadata([("orders", 0)], False)
    assert _sends(broker) == []
    broker.handle(BrokerRegistrationResponse(1, 8, 2), ("controller-3000", "controller"))
    assert not any(type(s.msg) is PartitionState for s in _sends(broker))
    _apply(obs, broker_record(1, BrokerRecord(8, 1, False)))
    broker.on_metadata([], True)
    sent = [(s.dst, type(s.msg)) for s in _sends(broker)]
    assert sent == [(("broker-1", "orders-0"), BrokerStates),
                    (("broker-1", "orders-0"), PartitionState)]
    assert broker.metadata[("orders", 0)] == (1, 3)
    p2 = PartitionRecord("orders", 0, (1, 2, 3), 2, False, leader=2, leader_epoch=4,
                         isr=(2, 3), partition_epoch=8)
    _apply(obs, partition_record(p2))
    broker.on_metadata([("orders", 0)], False)
    states = [s.msg for s in _sends(broker) if type(s.msg) is PartitionState]
    assert [(m.leader, m.leader_epoch, m.controller_epoch) for m in states] == [(2, 4, 2)]
