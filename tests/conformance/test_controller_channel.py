"""A KRaft broker's channel to the controller when the controller answers NOT_CONTROLLER,
held against Kafka 3.7.0's ``NodeToControllerRequestThreadTest``.

3.7.0 ``NodeToControllerRequestThread.handleResponse``: a response carrying NOT_CONTROLLER
closes the connection, forgets the active controller and puts the request back first in the
queue; the next ``doWork`` asks the ``ControllerNodeProvider`` again (with a controller
quorum, ``RaftControllerNodeProvider``: the Raft leader the broker's observer knows) and
sends it there. The request is not failed and not left to the caller's own retry. isrlab's
broker (``actors.broker``) does this for its registration, which a quorum leader refuses
until it has claimed the active role: sent again to the Raft leader once the connection's
``reconnect.backoff.ms`` (50 ms, ``CONTROLLER_RECONNECT_BACKOFF_MS``) has passed — Kafka's
test drives a ``MockClient`` with no reconnect backoff.
"""

from __future__ import annotations

import random

from kafkacite import kafka

from actors.broker import CONTROLLER_RECONNECT_BACKOFF_MS, Broker
from actors.core import Send, Timer
from actors.log import BrokerDisk
from actors.messages import BrokerRegistration, Tick
from actors.quorum_controller import ControllerStore, MetadataObserver
from actors.quorum_messages import NotController
from actors.raft.config import raft_rules_for

VOTERS = ("controller-3000", "controller-3001", "controller-3002")
LEADER = ("controller-3000", "controller")


def _registering_broker() -> Broker:
    obs = MetadataObserver("broker-1", 1, (3000, 3001, 3002), ControllerStore(),
                           random.Random(1), raft_rules_for("3.7"))
    broker = Broker("broker-1", 1, BrokerDisk(), incarnation=1, hosted=(("orders", 0),),
                    heartbeat_interval_ms=2000, controllers=VOTERS, observer=obs)
    broker.start()
    broker.on_raft_leader(LEADER[0])
    assert [e.dst for e in broker.drain()
            if type(e) is Send and type(e.msg) is BrokerRegistration] == [LEADER]
    return broker


@kafka("3.7.0", "NodeToControllerRequestThreadTest", "testNotController")
def test_a_registration_refused_not_controller_goes_again_to_the_raft_leader() -> None:
    """The Raft leader (3000) answers NOT_CONTROLLER naming itself (elected, not yet active):
    nothing is sent at once; after the reconnect backoff the registration goes again to the
    controller the observer names, 3000 — not a second later at the registration's retry."""
    broker = _registering_broker()
    broker.handle(NotController(3000), LEADER)
    effects = broker.drain()
    assert not [e for e in effects if type(e) is Send]
    retries = [e for e in effects if type(e) is Timer and type(e.msg) is Tick
               and e.msg.kind == "register_retry"]
    assert [t.delay_us for t in retries] == [CONTROLLER_RECONNECT_BACKOFF_MS * 1000]
    broker.handle(retries[0].msg, ("broker-1", "broker"))
    again = [e for e in broker.drain() if type(e) is Send and type(e.msg) is BrokerRegistration]
    assert [e.dst for e in again] == [LEADER]
