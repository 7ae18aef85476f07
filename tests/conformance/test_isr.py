"""ISR expansion and shrinking on the leader, held against Kafka's ``PartitionTest`` at 3.7.0.

Kafka's set-up in each: a leader of epoch 5 over ten records of epoch 4 (``seedLogData``),
partition epoch 1; ``maybeShrinkIsr`` is isrlab's ``isr-expiration`` timer firing;
``completeIsrUpdate`` is the controller's successful AlterPartition answer.
"""

from __future__ import annotations

from typing import Any

from harness import batches, lead, replica, sent
from kafkacite import kafka

from actors.messages import (
    NONE,
    AlterPartition,
    AlterPartitionResponse,
    Fetch,
    Produce,
    Tick,
)
from actors.replica import NEVER_MS, Replica, ReplicaConfig

LAG_MS = 30000


def _leader(isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2),
            lag_ms: int = LAG_MS) -> Replica:
    cfg = ReplicaConfig(replica_lag_time_max_ms=lag_ms, replica_fetch_wait_max_ms=0)
    r = replica(1, batches((4, 10)), era="4.1", cfg=cfg)
    lead(r, 5, replicas=replicas, isr=isr)
    return r


def _at(r: Replica, ms: int) -> None:
    r.now_us = ms * 1000


def _fetch(r: Replica, broker: int, offset: int) -> list[Any]:
    r.handle(Fetch("t", 0, broker, -1, offset, 4, 5, 0, 1000, 1), (f"broker-{broker}", "t-0"))
    return r.drain()


def _shrink_check(r: Replica) -> list[AlterPartition]:
    r.handle(Tick("isr_expiration", 0, 0), r.address)
    return [m for m in sent(r.drain(), AlterPartition)]


def _proposed(m: AlterPartition) -> list[int]:
    return [b for b, _ in m.new_isr]


def _commit(r: Replica, isr: tuple[int, ...]) -> None:
    r.handle(AlterPartitionResponse("t", 0, NONE, isr, 5, 2), ("controller", "controller"))
    r.drain()


@kafka("3.7.0", "PartitionTest", "testIsrExpansion")
def test_a_follower_joins_the_isr_once_it_reaches_the_hw_and_the_controller_agrees() -> None:
    """ISR (1), HW 10: broker 2 fetching at 3 is not proposed; at 10 it is (ISR (1, 2)
    proposed, the maximal ISR already holds it, caught up now); the ISR changes only when
    the controller accepts."""
    r = _leader((1,))
    assert r.hw == 10 and r.followers[2].last_caught_up_time_ms == NEVER_MS
    _at(r, 100)
    assert not sent(_fetch(r, 2, 3), AlterPartition)
    assert r.followers[2].log_end_offset == 3
    (proposal,) = sent(_fetch(r, 2, 10), AlterPartition)
    assert _proposed(proposal) == [1, 2]
    assert r.isr == (1,) and r.maximal_isr == (1, 2)
    assert r.followers[2].last_caught_up_time_ms == 100
    _commit(r, (1, 2))
    assert r.isr == r.maximal_isr == (1, 2)


@kafka("3.7.0", "PartitionTest", "testMaybeShrinkIsr")
def test_a_follower_that_never_fetches_is_dropped_after_the_lag_and_the_hw_then_moves() -> None:
    """ISR (1, 2, 3), HW 0; broker 2 fetches to the LEO, broker 3 never fetches. Right after
    the election 3 counts as caught up (the election time), so no shrink; after
    replica.lag.time.max.ms it is proposed out (ISR still (1, 2, 3) and the HW 0 until the
    controller accepts); on acceptance the ISR is (1, 2) and the HW moves to the LEO."""
    r = _leader((1, 2, 3), replicas=(1, 2, 3))
    assert r.hw == 0
    _fetch(r, 2, 10)
    assert not _shrink_check(r)
    assert r.isr == (1, 2, 3)
    _at(r, LAG_MS + 1)
    (proposal,) = _shrink_check(r)
    assert _proposed(proposal) == [1, 2]
    assert r.isr == r.maximal_isr == (1, 2, 3) and r.hw == 0
    _commit(r, (1, 2))
    assert r.isr == r.maximal_isr == (1, 2) and r.partition_epoch == 2
    assert r.hw == 10


@kafka("3.7.0", "PartitionTest", "testShouldNotShrinkIsrIfPreviousFetchIsCaughtUp")
def test_a_follower_that_reached_the_previous_fetchs_leo_is_not_dropped() -> None:
    """ISR (1, 2), replica.lag.time.max.ms 10 s (the figure the test's comments assume):
    broker 2 fetches at 5 after 5 s (not caught up: the LEO is 10); 5 s later five records
    are appended and it fetches at 10 — the LEO of its previous fetch — so it counts as
    caught up as of that previous fetch (5 s). 10.001 s after the election, more than the
    lag, it is still in sync counting from then: no shrink."""
    r = _leader((1, 2), lag_ms=10_000)
    _at(r, 5000)
    _fetch(r, 2, 5)
    assert r.followers[2].last_caught_up_time_ms == 0 and r.hw == 5
    _at(r, 10001)
    recs = tuple((-1, f"n{i}", -1, 0, -1, -1, None) for i in range(5))
    r.handle(Produce("t", 0, 1, recs, 30000, 7), ("producer-0", "producer"))
    r.drain()
    _fetch(r, 2, 10)
    assert r.followers[2].last_caught_up_time_ms == 5000 and r.hw == 10
    assert not _shrink_check(r) and r.isr == (1, 2)


@kafka("3.7.0", "PartitionTest", "testShouldNotShrinkIsrIfFollowerCaughtUpToLogEnd")
def test_a_follower_at_the_log_end_is_never_dropped_however_long_it_is_quiet() -> None:
    """ISR (1, 2): broker 2 fetches to the LEO (HW 10) and then nothing happens for longer
    than the lag: it is still caught up (its LEO is the leader's), so no shrink."""
    r = _leader((1, 2))
    _fetch(r, 2, 10)
    assert r.hw == 10
    _at(r, LAG_MS + 1)
    assert not _shrink_check(r) and r.isr == (1, 2)
