"""The scenario's topics are created once every broker has registered (``Controller``'s
bootstrap, ``_elect_initial``), as a KRaft topic is created over the brokers registered
then: the ISR is the replicas that are active (unfenced, not shutting down), the first of
them leads (``ReplicationControlManager.createTopic`` -> ``buildPartitionRegistration``,
``isActive``). Nothing before the creation changes a partition: found by a swarm campaign
with a controller quorum (seed 355), where a controlled shutdown before the third broker
registered made every partition an offline partition that the creation then skipped.
"""

from __future__ import annotations

from typing import Any

from harness import session_checks
from kafkacite import kafka

from actors.controller import Controller, ControllerStore, PartitionRecord
from actors.core import Emit
from actors.eras import rules_for
from actors.messages import BrokerHeartbeat, BrokerRegistration, ControlledShutdownRequest

SESSION_MS = 9000


def _controller() -> Controller:
    store = ControllerStore()
    store.partitions[("orders", 0)] = PartitionRecord("orders", 0, (2, 1, 3), 2, False)
    store.partitions[("orders", 1)] = PartitionRecord("orders", 1, (3, 1, 2), 2, False)
    c = Controller(store, rules_for("4.1"), brokers=(1, 2, 3), session_timeout_ms=SESSION_MS)
    c.start()
    c.drain()
    return c


def _register(c: Controller, broker: int, incarnation: int = 1) -> list[Any]:
    c.handle(BrokerRegistration(broker, incarnation, True), (f"broker-{broker}", "broker"))
    return c.drain()


def _events(effects: list[Any], name: str) -> list[dict[str, Any]]:
    return [e.fields for e in effects if type(e) is Emit and e.event == name]


@kafka("3.7.0", "ReplicationControlManagerTest", "testCreateTopicsISRInvariants")
def test_a_controlled_shutdown_before_the_topics_exist_leaves_them_to_be_created() -> None:
    """A broker in controlled shutdown before the creation is in no ISR and leads nothing
    (Kafka's test: fenced and shutting-down brokers are left out of a new topic's ISR),
    and the partitions it could have changed before are created, never left offline."""
    c = _controller()
    _register(c, 1)
    _register(c, 2)
    c.handle(ControlledShutdownRequest(2, c.store.brokers[2].epoch), ("broker-2", "broker"))
    before = c.drain()
    assert c.store.brokers[2].fenced
    assert not _events(before, "isr_change") and not _events(before, "partition_state")
    assert all(p.partition_epoch == -1 for p in c.store.partitions.values())
    created = _register(c, 3)
    p0, p1 = c.store.partitions[("orders", 0)], c.store.partitions[("orders", 1)]
    # the stopped broker is no ISR member and leads nothing; the replica lists are whole
    assert (p0.leader, p0.isr, p0.partition_epoch) == (1, (1, 3), 0)
    assert (p1.leader, p1.isr) == (3, (3, 1))
    assert [(e["partition"], e["new"]) for e in _events(created, "replicas_change")] == [
        (0, [2, 1, 3]), (1, [3, 1, 2])]
    # back from its restart, broker 2 is a replica like any other: nothing is offline
    assert p0.leader >= 0 and p1.leader >= 0


@kafka("3.7.0", "ReplicationControlManagerTest", "testCreateTopicsISRInvariants")
def test_a_broker_fenced_before_the_topics_exist_is_left_out_of_their_isrs() -> None:
    """A broker fenced before the creation is left out of the ISRs; its next heartbeat
    unfences it."""
    c = _controller()
    _register(c, 1)
    c.now_us = (SESSION_MS + 1) * 1000
    session_checks(c)
    assert c.store.brokers[1].fenced
    assert all(p.partition_epoch == -1 for p in c.store.partitions.values())
    _register(c, 2)
    _register(c, 3)
    assert [(p.leader, p.isr) for _, p in sorted(c.store.partitions.items())] == [
        (2, (2, 3)), (3, (3, 2))]
    # its next heartbeat unfences it; it then rejoins the ISRs as a follower that caught up
    c.handle(BrokerHeartbeat(1, c.store.brokers[1].epoch, 0), ("broker-1", "broker"))
    c.drain()
    assert not c.store.brokers[1].fenced


@kafka("3.7.0", "ReplicationControlManagerTest", "testCreateTopics")
def test_with_every_broker_active_the_creation_traces_no_replica_list_of_its_own() -> None:
    """The creation's ISR names the replica list then (the traces recorded before stay
    byte-identical)."""
    c = _controller()
    _register(c, 1)
    _register(c, 2)
    created = _register(c, 3)
    assert not _events(created, "replicas_change")
    assert [e["new"] for e in _events(created, "isr_change")] == [[2, 1, 3], [3, 1, 2]]
