"""The follower side (Kafka's ``AbstractFetcherThread``/``ReplicaFetcherThread`` as run by
isrlab's ``Replica``), held against Kafka's fetcher tests (issue 17).

Kafka's tests drive a ``MockFetcherThread`` against a mock leader; here two real isrlab
replicas exchange real messages over :class:`harness.Wire` (sans-IO, virtual time), or a
test hands the follower the leader's answer directly where Kafka's test mocks the network.
"""

from __future__ import annotations

from typing import Any

from harness import Wire, batches, follow, lead, rec, replica, sent, values
from kafkacite import kafka

from actors.messages import (
    NONE,
    Fetch,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Record,
)
from actors.replica import Replica


def _fetches(wire: Wire, r: Replica) -> list[Fetch]:
    return [e.msg for a, e in wire.log
            if a == r.address and hasattr(e, "msg") and isinstance(e.msg, Fetch)]


def _in_step(leader: Replica, follower: Replica) -> bool:
    return values(leader) == values(follower) and follower.hw == leader.hw


def _pair(leader_log: list[Record], follower_log: list[Record], epoch: int, *,
          leader_hw: int, era: str = "2.8") -> tuple[Replica, Replica, Wire]:
    """Broker 1 leads ``epoch`` over ``leader_log``; broker 2, over ``follower_log`` with
    HW 0, has just been told to follow it (its first request is on the wire)."""
    leader = replica(1, leader_log, era=era, hw=leader_hw)
    follower = replica(2, follower_log, era=era, hw=0)
    lead(leader, epoch)
    wire = Wire(leader, follower)
    wire.take(follower, follow(follower, 1, epoch))
    return leader, follower, wire


@kafka("2.8.0", "AbstractFetcherThreadTest", "testTruncation")
def test_a_follower_truncates_its_divergent_epochs_and_ends_with_the_leaders_log() -> None:
    """2.8 (truncate-on-fetch): a follower whose records carry epochs 0, 2, 4 follows a
    leader whose records at the same offsets carry epochs 1, 3, 5; the diverging-epoch
    answers walk it back, it refetches, and it ends with the leader's log, log start
    offset, LEO and HW."""
    leader, follower, wire = _pair([rec(0, 1, "a"), rec(1, 3, "b"), rec(2, 5, "c")],
                                   [rec(0, 0, "a"), rec(1, 2, "b"), rec(2, 4, "c")], 5,
                                   leader_hw=2)
    assert wire.run(lambda: _in_step(leader, follower))
    assert values(follower) == [(0, "a", 1), (1, "b", 3), (2, "c", 5)]
    assert follower.log.log_start_offset == leader.log.log_start_offset == 0
    # Kafka's mock leader keeps HW 2; isrlab's real leader moves it to 3 once the follower,
    # in its ISR, has fetched up to 3
    assert (follower.leo, follower.hw) == (leader.leo, leader.hw) == (3, 3)


@kafka("2.8.0", "AbstractFetcherThreadTest", "testDivergingEpochs")
def test_the_last_fetched_epoch_is_the_cache_latest_then_the_truncated_then_the_leaders(
) -> None:
    """2.8: the first fetch carries the epoch cache's latest epoch (4); after the leader
    answers with a diverging epoch and the follower truncates, the next fetch carries the
    latest epoch left (2); once in step, the leader's (5)."""
    leader, follower, wire = _pair([rec(0, 0, "a"), rec(1, 2, "b"), rec(2, 5, "d")],
                                   [rec(0, 0, "a"), rec(1, 2, "b"), rec(2, 4, "c")], 5,
                                   leader_hw=2)
    assert wire.run(lambda: _in_step(leader, follower))
    sent_epochs = [f.last_fetched_epoch for f in _fetches(wire, follower)]
    assert sent_epochs[:2] == [4, 2]
    follower.now_us = wire.now_us
    follower.handle(Fetch("t", 0, 9, -1, 0, -1, -1, 0, 1, 0), ("x", "y"))  # nothing
    follower.drain()
    assert follower.log.epochs.latest_epoch() == 5
    assert values(follower)[2] == (2, "d", 5)


@kafka("2.8.0", "AbstractFetcherThreadTest", "testDivergingEpochs")
def test_a_replica_that_led_an_epoch_without_appending_drops_that_stale_cache_entry() -> None:
    """2.8, the KAFKA-7415 situation: broker 2 led epoch 5 without appending (its cache has
    (5, 10) past its last record, of epoch 3), then follows broker 1, which leads epoch 6
    with records of epoch 4 at offsets 10-11. The follower's fetch offers epoch 5 (its
    cache's latest), the leader answers with the diverging epoch (4, 12), the follower's
    truncation trims (5, 10), and the epoch-4 records are assigned (4, 10). Its cache must
    then answer endOffsetFor(4) = (4, 12); with the stale entry it said (3, 10), and a
    follower asking it later would have cut committed records 10-11."""
    leader = replica(1, batches((3, 10), (4, 2)), era="2.8", hw=12)
    follower = replica(2, batches((3, 10)), era="2.8", hw=10)
    lead(follower, 5)
    assert follower.log.epochs.entries == [(3, 0), (5, 10)]
    lead(leader, 6)
    wire = Wire(leader, follower)
    wire.take(follower, follow(follower, 1, 6))
    assert wire.run(lambda: _in_step(leader, follower))
    assert _fetches(wire, follower)[0].last_fetched_epoch == 5
    assert follower.log.epochs.entries == [(3, 0), (4, 10)]
    assert follower.log.epochs.end_offset_for(4, follower.leo) == (4, 12)


@kafka("2.8.0", "AbstractFetcherThreadTest", "testFollowerFetchOutOfRangeHigh")
def test_a_follower_above_the_leaders_log_end_truncates_to_it_on_out_of_range() -> None:
    """2.8: a follower in step at LEO 3 keeps fetching after the leader's log was emptied
    behind its back; the leader no longer knows the follower's last epoch, so it answers
    OFFSET_OUT_OF_RANGE (not a diverging (-1, -1)), and the follower truncates to the
    leader's LEO: LEO, log start offset and HW all 0."""
    log = [rec(0, 0, "a"), rec(1, 2, "b"), rec(2, 4, "c")]
    leader, follower, wire = _pair(log, log, 4, leader_hw=2)
    assert wire.run(lambda: follower.leo == 3 and follower.hw == leader.hw == 3)
    # the leader's log is emptied without a truncation phase
    leader.log.truncate_fully_and_start_at(0)
    leader.hw = 0
    assert wire.run(lambda: follower.leo == 0, max_steps=200)
    assert (follower.leo, follower.log.log_start_offset, follower.hw) == (0, 0, 0)


@kafka("2.8.0", "AbstractFetcherThreadTest", "testFollowerFetchOutOfRangeLow")
def test_a_follower_below_the_leaders_log_start_restarts_its_log_there() -> None:
    """2.8: a follower holding offset 0 follows a leader whose log starts at 2; it is out of
    range low, empties its log and starts it at the leader's log start offset, then
    replicates and ends with the leader's log start offset, LEO and HW."""
    leader, follower, wire = _pair([rec(2, 4, "c")], [rec(0, 0, "a")], 5, leader_hw=2)
    assert wire.run(lambda: follower.log.log_start_offset == 2)
    assert follower.log.records == [] and follower.leo == 2
    assert wire.run(lambda: _in_step(leader, follower))
    assert (follower.log.log_start_offset, follower.leo) == (2, 3)
    assert follower.hw == leader.hw


@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldTruncateToOffsetSpecifiedInEpochOffsetResponseIfFollowerHasNoMoreEpochs")
def test_a_follower_with_no_epoch_at_or_below_the_leaders_answer_cuts_to_its_end_offset(
) -> None:
    """2.0 (KIP-279): the follower's cache knows only epoch 5; the leader answers epoch 4
    with end offset 156 for one partition and 202 for another. Having no epoch at or below
    4, the follower truncates to min(leader's end offset, its LEO): 156, and 200 (its LEO,
    so nothing is cut) — not to its HW (197)."""
    for leader_end, expected in ((156, 156), (202, 200)):
        f = replica(2, batches((5, 200)), era="2.0", hw=197)
        assert f.log.epochs.entries == [(5, 0)] and f.hw == 197
        (req,) = sent(follow(f, 1, 6), OffsetsForLeaderEpoch)
        assert req.leader_epoch == 5
        f.handle(OffsetsForLeaderEpochResponse("t", 0, NONE, 4, leader_end, req.correlation),
                 ("broker-1", "t-0"))
        assert f.leo == expected
        assert sent(f.drain(), Fetch)   # truncation done: it fetches from there


def _epoch_request(f: Replica, effects: list[Any]) -> OffsetsForLeaderEpoch:
    (req,) = sent(effects, OffsetsForLeaderEpoch)
    assert isinstance(req, OffsetsForLeaderEpoch)
    return req


def _answer(f: Replica, req: OffsetsForLeaderEpoch, epoch: int, end_offset: int
            ) -> list[Any]:
    f.handle(OffsetsForLeaderEpochResponse("t", 0, NONE, epoch, end_offset, req.correlation),
             ("broker-1", "t-0"))
    return f.drain()


@kafka("2.0.0", "ReplicaFetcherThreadTest", "shouldTruncateToOffsetSpecifiedInEpochOffsetResponse")
def test_a_follower_truncates_to_the_end_offset_the_leader_gives_for_its_latest_epoch() -> None:
    """2.0 (KIP-279): the follower's latest epoch is 5 (LEO 200, HW 199); the leader answers
    epoch 5 with end offset 156 for one partition and 172 for another: it truncates to
    156 and 172, then fetches."""
    for leader_end in (156, 172):
        f = replica(2, batches((5, 200)), era="2.0", hw=199)
        req = _epoch_request(f, follow(f, 1, 6))
        assert req.leader_epoch == 5
        effects = _answer(f, req, 5, leader_end)
        assert f.leo == leader_end and sent(effects, Fetch)


@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldFetchLeaderEpochSecondTimeIfLeaderRepliesWithEpochNotKnownToFollower")
def test_an_unknown_epoch_in_the_answer_cuts_to_the_previous_epoch_and_asks_again() -> None:
    """2.0: the follower's cache is (3, 0), (5, 120), LEO 200. The leader answers epoch 4,
    which the follower does not know: it cuts to the end of its largest epoch below 4
    (120), asks again (now for epoch 3, no fetch yet), and on the answer (3, 101) — or
    (3, 102) — truncates there and only then fetches."""
    for second_end in (101, 102):
        f = replica(2, batches((3, 120), (5, 80)), era="2.0", hw=198)
        assert f.log.epochs.entries == [(3, 0), (5, 120)]
        req = _epoch_request(f, follow(f, 1, 6))
        effects = _answer(f, req, 4, 155)
        assert f.leo == 120 and not sent(effects, Fetch)
        again = _epoch_request(f, effects)
        assert again.leader_epoch == 3
        effects = _answer(f, again, 3, second_end)
        assert f.leo == second_end and sent(effects, Fetch)


@kafka("2.0.0", "ReplicaFetcherThreadTest", "shouldUseLeaderEndOffsetIfInterBrokerVersionBelow20")
def test_before_kip_279_the_follower_truncates_to_the_leaders_end_offset_alone() -> None:
    """0.11 (OffsetsForLeaderEpoch v0, no epoch in the answer): the follower truncates to
    min(the leader's end offset, its LEO) at once — 155, and 143 — and fetches; it never
    asks a second time."""
    for leader_end in (155, 143):
        f = replica(2, batches((3, 120), (5, 80)), era="0.11", hw=198)
        req = _epoch_request(f, follow(f, 1, 6))
        effects = _answer(f, req, -1, leader_end)
        assert f.leo == leader_end
        assert sent(effects, Fetch) and not sent(effects, OffsetsForLeaderEpoch)


@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldTruncateToInitialFetchOffsetIfLeaderReturnsUndefinedOffset")
def test_an_undefined_answer_truncates_to_the_initial_fetch_offset_the_hw() -> None:
    """2.0: the leader has no epoch information (undefined epoch and offset): the follower
    truncates to its initial fetch offset, which before truncate-on-fetch is its HW (100),
    from LEO 300."""
    f = replica(2, batches((5, 300)), era="2.0", hw=100)
    req = _epoch_request(f, follow(f, 1, 6))
    effects = _answer(f, req, -1, -1)
    assert f.leo == 100 and sent(effects, Fetch)
