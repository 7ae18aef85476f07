"""A client's connection states (Kafka's ``ClusterConnectionStates``, as isrlab's
``actors.client.ConnectionStates`` models them), held against Kafka's
``ClusterConnectionStatesTest`` of 2.0.0 (its constructor takes reconnect.backoff.ms and
reconnect.backoff.max.ms: 10 s and 60 s there, jitter 20 %).

isrlab has no CONNECTING state (a request is the connection attempt) and tracks only the
brokers whose last connection failed, so "ready" is the absence of a blackout and
``delay_us`` is ``connectionDelay`` for a disconnected node.
"""

from __future__ import annotations

import random

from kafkacite import kafka

from actors.client import ConnectionStates

BACKOFF_MS = 10_000
BACKOFF_MAX_MS = 60_000
JITTER = 0.2
MS = 1000


def _states(seed: int = 1) -> ConnectionStates:
    return ConnectionStates(BACKOFF_MS, BACKOFF_MAX_MS, random.Random(seed))


@kafka("2.0.0", "ClusterConnectionStatesTest", "testClusterConnectionStateChanges")
def test_a_disconnect_blacks_the_node_out_for_the_backoff_then_it_may_connect() -> None:
    """A node never seen may be connected to; after a disconnect it is blacked out for
    reconnect.backoff.ms within ±20 % jitter, and once that delay has passed it may be
    connected to again."""
    s = _states()
    now = 0
    assert s.delay_us("broker-1", now) == 0
    now += 15_100 * MS
    s.disconnected("broker-1", now)
    delay = s.delay_us("broker-1", now)
    assert abs(delay - BACKOFF_MS * MS) <= BACKOFF_MS * JITTER * MS
    assert s.delay_us("broker-1", now + delay + 1) == 0


@kafka("2.0.0", "ClusterConnectionStatesTest", "testMultipleNodeConnectionStates")
def test_one_nodes_blackout_leaves_the_others_connectable() -> None:
    """node 2 disconnects and is blacked out while node 1 is not; once node 2's delay has
    passed and node 1 disconnects, node 1 is blacked out and node 2 no longer is."""
    s = _states()
    now = 14_000 * MS
    s.disconnected("broker-2", now)
    assert s.delay_us("broker-2", now) > 0 and s.delay_us("broker-1", now) == 0
    now += s.delay_us("broker-2", now)
    s.disconnected("broker-1", now + 1)
    assert s.delay_us("broker-1", now) > 0 and s.delay_us("broker-2", now) == 0


@kafka("2.0.0", "ClusterConnectionStatesTest", "testMaxReconnectBackoff")
def test_a_hundred_failed_attempts_never_wait_more_than_the_maximum_plus_jitter() -> None:
    """A hundred connection attempts in a row, each failing 10 ms after it is made: the
    delay grows but never exceeds reconnect.backoff.max.ms × 1.2, and the node may be
    connected to again once each delay has passed."""
    s = _states()
    limit = round(BACKOFF_MAX_MS * (1 + JITTER)) * MS
    now = 1000 * MS
    s.disconnected("broker-1", now)
    for _ in range(100):
        delay = s.delay_us("broker-1", now)
        assert 0 < delay <= limit
        now += delay + 1 * MS
        assert s.delay_us("broker-1", now) == 0
        now += 10 * MS
        s.disconnected("broker-1", now)
