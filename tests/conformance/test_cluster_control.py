"""Broker registration on the KRaft controller (isrlab's ``Controller``, Kafka's
``ClusterControlManager.registerBroker``), held against ``ClusterControlManagerTest`` at
4.1.0.

A new incarnation of a broker id is refused with DUPLICATE_BROKER_REGISTRATION while the
previous incarnation's session is valid (``BrokerHeartbeatManager.hasValidSession``: not
fenced, heard from within ``broker.session.timeout.ms``); once the session has expired and
the controller has fenced the old incarnation, the new one registers with a new broker
epoch. A crashed broker that restarts quickly therefore keeps its ISRs and leaderships
until its session ends, as in Kafka.
"""

from __future__ import annotations

from typing import Any

from harness import session_checks
from kafkacite import kafka

from actors.controller import Controller, ControllerStore, PartitionRecord
from actors.core import Emit
from actors.eras import rules_for
from actors.messages import (
    DUPLICATE_BROKER_REGISTRATION,
    BrokerHeartbeat,
    BrokerRegistration,
    BrokerRegistrationResponse,
)

SESSION_MS = 9000


class Cluster:
    """One controller, brokers 0..n-1 registered (incarnation 1), partitions of topic
    ``foo`` with the given replicas."""

    def __init__(self, n: int, assignments: list[tuple[int, ...]], era: str = "4.1") -> None:
        store = ControllerStore()
        for i, replicas in enumerate(assignments):
            store.partitions[("foo", i)] = PartitionRecord("foo", i, replicas, 1, False)
        self.c = Controller(store, rules_for(era), brokers=tuple(range(n)),
                            session_timeout_ms=SESSION_MS)
        self.events: list[dict[str, Any]] = []
        self.c.start()
        self.drain()
        for b in range(n):
            self.register(b, 1)

    def drain(self) -> list[Any]:
        effects = self.c.drain()
        self.events += [{"event": e.event, **e.fields} for e in effects if isinstance(e, Emit)]
        return effects

    def at(self, ms: int) -> None:
        self.c.now_us = ms * 1000

    def register(self, broker: int, incarnation: int) -> BrokerRegistrationResponse:
        self.c.handle(BrokerRegistration(broker, incarnation, False),
                      (f"broker-{broker}", "broker"))
        (resp,) = [e.msg for e in self.drain() if hasattr(e, "msg")
                   and isinstance(e.msg, BrokerRegistrationResponse)
                   and e.msg.broker == broker]
        return resp

    def heartbeat(self, broker: int) -> None:
        rec = self.c.store.brokers[broker]
        self.c.handle(BrokerHeartbeat(broker, rec.epoch, 0), (f"broker-{broker}", "broker"))
        self.drain()

    def session_check(self) -> None:
        effects = session_checks(self.c)
        self.events += [{"event": e.event, **e.fields} for e in effects if isinstance(e, Emit)]


@kafka("4.1.0", "ClusterControlManagerTest", "testDuplicateBrokerRegistrationWithActiveOldBroker")
def test_a_new_incarnation_is_refused_while_the_old_session_is_valid() -> None:
    """Broker 0 leads foo-0. Half a session after its last heartbeat a new incarnation is
    refused (the old one keeps its epoch, stays unfenced and keeps the leadership); once
    the session has expired and the old incarnation is fenced, the new one registers with
    a new broker epoch."""
    cl = Cluster(3, [(0, 1, 2)])
    old_epoch = cl.c.store.brokers[0].epoch
    assert cl.c.store.partitions[("foo", 0)].leader == 0
    cl.at(SESSION_MS // 2)
    resp = cl.register(0, 2)
    assert resp.broker_epoch == DUPLICATE_BROKER_REGISTRATION
    rec = cl.c.store.brokers[0]
    assert (rec.epoch, rec.incarnation, rec.fenced) == (old_epoch, 1, False)
    assert cl.c.store.partitions[("foo", 0)].leader == 0
    refused = [e for e in cl.events if e["event"] == "broker_registration_refused"]
    assert refused and refused[-1]["error"] == "DUPLICATE_BROKER_REGISTRATION"

    cl.at(SESSION_MS + 1)
    for b in (1, 2):
        cl.heartbeat(b)
    cl.session_check()
    assert cl.c.store.brokers[0].fenced
    assert cl.c.store.partitions[("foo", 0)].leader != 0
    resp = cl.register(0, 2)
    assert resp.broker_epoch > old_epoch
    assert cl.c.store.brokers[0].incarnation == 2


@kafka("4.1.0", "ClusterControlManagerTest", "testDuplicateBrokerRegistrationWithInactiveBroker")
def test_a_fenced_old_incarnation_does_not_block_but_one_in_controlled_shutdown_does() -> None:
    """Broker 0 is fenced: its new incarnation registers at once. Broker 1 is in controlled
    shutdown and not yet fenced (set in the controller's image, as Kafka's test replays a
    RegisterBrokerRecord with inControlledShutdown; in a run isrlab's controller fences it
    as soon as it leads nothing): its session is still valid, so a new incarnation is
    refused."""
    cl = Cluster(2, [(0, 1)])
    cl.at(SESSION_MS + 1)
    cl.heartbeat(1)
    cl.session_check()
    assert cl.c.store.brokers[0].fenced
    resp = cl.register(0, 2)
    assert resp.broker_epoch >= 0 and cl.c.store.brokers[0].incarnation == 2

    cl.c.store.brokers[1].shutting_down = True
    cl.at(SESSION_MS + 2)
    assert cl.register(1, 2).broker_epoch == DUPLICATE_BROKER_REGISTRATION
    assert cl.c.store.brokers[1].incarnation == 1
