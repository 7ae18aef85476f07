"""Kafka's ``NetworkClient`` on a request that times out and on a connection that cannot be
set up, held against ``NetworkClientTest`` of 3.7.0.

In Kafka the network client closes the connection of a request unanswered within its
timeout and fails it as a disconnection (``handleTimedOutRequests`` →
``processTimeoutDisconnection``); isrlab's actors do the same through
``Machine.disconnect``, and the simulated TCP network discards what the closed connection
still held. A connection attempt that does not complete within
``socket.connection.setup.timeout.ms`` fails, and the next attempt's timeout is longer
(``ClusterConnectionStates.connectionSetupTimeoutMs``, exponential; isrlab without jitter).
"""

from __future__ import annotations

import random
from typing import Any

from kafkacite import kafka

from actors.core import Disconnect, Emit, Send
from actors.messages import MetadataRequest, MetadataResponse, Produce, Tick
from actors.producer import Producer, ProducerConfig
from emulator.network import HELD, DelayDist, Network
from emulator.tcp import TcpConfig

TIMEOUT_MS = 30_000


@kafka("3.7.0", "NetworkClientTest", "testRequestTimeout")
def test_a_request_unanswered_at_its_timeout_fails_as_a_disconnection() -> None:
    """A produce request with no answer by ``request.timeout.ms`` fails (``request_failed``,
    reason timeout) and its connection to the broker is closed (a ``Disconnect`` effect):
    the response Kafka's client returns is ``wasDisconnected``."""
    p = Producer("producer-0", 0, ProducerConfig("orders", 1, keys=0, rate=10.0,
                                                 request_timeout_ms=TIMEOUT_MS),
                 random.Random(1), brokers=(1, 2, 3))
    me = ("producer-0", "producer")
    p.start()
    ask = [e.msg for e in p.drain() if isinstance(e, Send) and isinstance(e.msg,
                                                                          MetadataRequest)]
    p.handle(MetadataResponse((("orders", 0, 2, 1),), ask[-1].correlation),
             ("broker-1", "broker"))
    p.handle(Tick("produce", 0, 0), me)
    p.now_us = 5_000
    p.handle(Tick("linger", 0, 0), me)
    out = p.drain()
    (req,) = [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, Produce)]
    p.now_us = 5_000 + TIMEOUT_MS * 1000
    p.handle(Tick("request_timeout", req.correlation, 0), me)
    effects = p.drain()
    assert Disconnect("broker-2") in effects
    failed: list[dict[str, Any]] = [e.fields for e in effects if isinstance(e, Emit)
                                    and e.event == "request_failed"]
    assert failed and failed[0]["reason"] == "timeout" and failed[0]["peer"] == "broker-2"


@kafka("3.7.0", "NetworkClientTest", "testConnectionSetupTimeout")
def test_a_connection_that_cannot_be_set_up_fails_at_the_setup_timeout() -> None:
    """The application closed its connection to ``b`` and ``b`` cannot be reached: the new
    connection's first frame waits for its handshake, and the attempt fails once
    ``socket.connection.setup.timeout.ms`` (10 s) has passed — the frame is discarded and
    the actor hears a reset; the next attempt is given twice as long."""
    net = Network(random.Random(1), DelayDist(dist="constant", ms=1.0),
                  tcp=TcpConfig(setup_timeout_ms=10_000, setup_timeout_max_ms=30_000))
    a, b = ("a", "fetcher"), ("b", "replica-manager")
    net.close(a, "b")
    net.cut("b", "a")            # the SYN-ACK cannot come back
    assert net.send(0, a, b, b"fetch") == HELD
    stream = net.timers.pop()
    outcome = "wait"
    while outcome == "wait":
        outcome, _, discarded = net.retransmit(stream.timer_us, stream)
        if outcome == "wait":
            stream = net.timers.pop()
    assert outcome == "connect_timeout" and discarded == [(b, a, b"fetch")]
    assert stream.timer_us == 10_000_000
    assert net.send(10_000_000, a, b, b"fetch") == HELD
    assert net.timers.pop().deadline_us == 10_000_000 + 20_000_000
