"""Protocol behaviours seen through whole runs (issue 3): HW-update moments, controller
epochs, the pre-0.9 ISR rule, clean shutdowns."""

from __future__ import annotations

import io
from typing import Any

import orjson

from actors.broker import Broker
from actors.core import Send
from actors.log import BrokerDisk
from actors.messages import BrokerRegistrationResponse, PartitionState
from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_events
from traces.writer import TraceWriter


def _events(name: str, overrides: list[str], seed: int = 1) -> list[dict[str, Any]]:
    buf = io.BytesIO()
    res = run(load(name, overrides), seed, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(x) for x in buf.getvalue().splitlines()]


def test_the_four_leader_hw_update_moments_of_seed_000_are_traced() -> None:
    """produce, follower fetch, becoming leader, ISR shrink (docs/eras.md 1.2)."""
    reasons: set[str] = set()
    for name, over in (("default", ["invariants=true"]),
                       ("s7-acks-all-min-isr-1", ["invariants=true"]),
                       ("s8-unclean-election", ["invariants=true"]),
                       ("default", ['topics[0].min.insync.replicas=1', "invariants=true",
                                    'faults.plan=[{at_s=3.0, fault="isolate", '
                                    'target="broker-2", duration_s=50.0}]',
                                    "cluster.replica.lag.time.max.ms=2000",
                                    "duration_s=12.0"])):
        reasons |= {e["reason"] for e in _events(name, over)
                    if e["event"] == "hw_update" and e["role"] == "leader"}
    assert {"produce", "follower_fetch", "become_leader", "isr_shrink"} <= reasons, reasons


def test_a_restarted_controller_bumps_its_epoch_and_brokers_drop_stale_states() -> None:
    evs = _events("default", ['faults.plan=[{at_s=3.0, fault="crash", target="controller", '
                              'duration_s=2.0}]', "invariants=true"])
    epochs = [e["state"]["controller_epoch"] for e in evs if e["event"] == "partition_state"]
    assert epochs[0] == 1 and max(epochs) == 2
    broker = Broker("broker-1", 1, BrokerDisk(), incarnation=1, hosted=(("orders", 0),),
                    heartbeat_interval_ms=2000)
    broker.handle(BrokerRegistrationResponse(1, 4, 2), ("controller", "controller"))
    broker.drain()
    new = PartitionState(2, "orders", 0, (1, 2, 3), 2, 5, (1, 2, 3), (), 7, False)
    stale = PartitionState(1, "orders", 0, (1, 2, 3), 1, 6, (1, 2, 3), (), 8, False)
    broker.handle(new, ("controller", "controller"))
    assert broker.drain()                        # forwarded to the local replica
    broker.handle(stale, ("controller", "controller"))
    assert broker.drain() == [] and broker.metadata[("orders", 0)] == (2, 5)


def test_a_broker_applies_no_partition_state_before_its_registration_is_acknowledged(
        ) -> None:
    """A controller that still knows the previous incarnation (it was down when the broker
    restarted) must not make the new one leader on the old state: KRaft brokers apply
    metadata only after registering (swarm seed 5118 had a power-lost broker lead with an
    empty log for most of a second)."""
    broker = Broker("broker-3", 3, BrokerDisk(), incarnation=2, hosted=(("orders", 1),),
                    heartbeat_interval_ms=2000)
    broker.start()
    broker.drain()
    old_state = PartitionState(2, "orders", 1, (2, 3, 1), 3, 1, (1, 2, 3), (), 3, False)
    broker.handle(old_state, ("controller", "controller"))
    assert broker.drain() == [] and broker.metadata == {}
    broker.handle(BrokerRegistrationResponse(3, 5, 2), ("controller", "controller"))
    broker.drain()
    fresh = PartitionState(2, "orders", 1, (2, 3, 1), 2, 2, (1, 2), (), 5, False)
    broker.handle(fresh, ("controller", "controller"))
    sent = [e.msg for e in broker.drain() if isinstance(e, Send)]
    assert sent == [fresh] and broker.metadata[("orders", 1)] == (2, 2)


def test_replica_lag_max_messages_brings_back_pre_0_9_isr_churn() -> None:
    """Seed 001: with the removed message-count rule a burst makes caught-up followers
    leave the ISR although they fetch continuously; the time rule does not."""
    burst = ["producers[0].rate=2000", "producers[0].linger.ms=50", "duration_s=10.0",
             "topics[0].partitions=1", "network.delay.low_ms=5.0", "network.delay.high_ms=50.0",
             "faults.plan=[]", "cluster.replica.lag.time.max.ms=1000"]
    by_messages = check_events(_events("default", burst + [
        "cluster.replica.lag.max.messages=20"]))
    by_time = check_events(_events("default", burst))
    assert by_messages.anomalies["isr_churn"] > by_time.anomalies["isr_churn"]


def test_clean_shutdown_skips_recovery_and_keeps_the_broker_eligible() -> None:
    evs = _events("default", ['faults.plan=[{at_s=3.0, fault="shutdown", target="broker-3", '
                              'duration_s=1.0}]', "invariants=true"])
    stop = next(e for e in evs if e["event"] == "node_crash")
    assert stop["kind"] == "clean_shutdown"
    reg = [e for e in evs if e["event"] == "broker_registered" and e["broker"] == 3]
    assert reg[-1]["clean_shutdown"] is True
    assert not [e for e in evs if e["event"] == "log_recovery" and e["node"] == "broker-3"]
    result = check_events(evs)
    assert result.expect_met
