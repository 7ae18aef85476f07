"""The follower's fetch state (Kafka's ``PartitionFetchState`` in ``AbstractFetcherThread``)
across an error, a fencing, an out-of-range reset and a log without leader epochs, era by
era (issue 49, items 2, 4 and 5).

* A delay after an error keeps the state: a partition that was fetching fetches again, one
  that was truncating asks again (``delayPartitions``); only a new LeaderAndIsr starts a
  new truncation.
* FENCED_LEADER_EPOCH takes the partition out of the fetcher until a new leader epoch
  (``onPartitionFenced``), with no retry after ``replica.fetch.backoff.ms``.
* OFFSET_OUT_OF_RANGE resets the fetch offset and fetches again at once.
* Without any leader epoch the follower truncates to its HW (2.1+ without asking).
* ``lastFetchedEpoch`` is the fetch state's, kept as Kafka keeps it.

Most tests drive one follower replica alone (its own requests, answers handed to it); the
``_Broker`` tests run it in a replica manager with its fetcher thread, as the cluster does.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import Wire, batches, follow, lead, rec, replica, sent, state, values
from kafkacite import kafka

from actors.core import Emit, Send, Timer
from actors.eras import rules_for
from actors.fetcher import FetcherConfig, ReplicaFetcherThread
from actors.log import PartitionLog
from actors.messages import (
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    PartitionState,
    Record,
    ReplicaEpochs,
    ReplicaEpochsResponse,
    ReplicaFetch,
    ReplicaFetchResponse,
    Tick,
)
from actors.replica import Replica, ReplicaConfig
from actors.replica_manager import ReplicaManager

LEADER = ("broker-1", "t-0")
BACKOFF_US = 1_000_000   # replica.fetch.backoff.ms, the default


# -- one follower alone --------------------------------------------------------------------
def _one(effects: list[Any], kind: type) -> Any:
    (msg,) = sent(effects, kind)
    return msg


def _fetch_answer(f: Replica, req: Fetch, *, error: str = NONE, hw: int = 0, leo: int = 0,
                  log_start: int = 0, records: tuple[Record, ...] = ()) -> list[Any]:
    f.handle(FetchResponse("t", 0, error, hw, leo, log_start, records, -1, -1,
                           f.leader_epoch, req.correlation), LEADER)
    return f.drain()


def _epoch_answer(f: Replica, req: OffsetsForLeaderEpoch, *, error: str = NONE,
                  epoch: int = -1, end: int = -1) -> list[Any]:
    f.handle(OffsetsForLeaderEpochResponse("t", 0, error, epoch, end, req.correlation), LEADER)
    return f.drain()


def _backoffs(effects: list[Any]) -> list[Timer]:
    return [e for e in effects if isinstance(e, Timer) and isinstance(e.msg, Tick)
            and e.msg.kind == "fetch_backoff"]


def _after_backoff(f: Replica, effects: list[Any]) -> list[Any]:
    """Nothing was sent and one delay of ``replica.fetch.backoff.ms`` was set: let it pass."""
    assert not sent(effects)
    (t,) = _backoffs(effects)
    assert t.delay_us == BACKOFF_US
    f.now_us += t.delay_us
    f.handle(t.msg, f.address)
    return f.drain()


def _fetching(f: Replica, era: str, hw: int) -> Fetch:
    """Make ``f`` (LEO ``hw``, its latest epoch 1) follow broker 1 in epoch 2 and get past
    the truncation step (0.11-2.1: an OffsetsForLeaderEpoch answered with its own LEO);
    returns its first Fetch."""
    effects = follow(f, 1, 2)
    if era in ("0.11", "2.0", "2.1"):
        req = _one(effects, OffsetsForLeaderEpoch)
        effects = _epoch_answer(f, req, epoch=-1 if era == "0.11" else 1, end=hw)
    assert not sent(effects, OffsetsForLeaderEpoch)
    fetch = _one(effects, Fetch)
    assert fetch.fetch_offset == hw
    return fetch  # type: ignore[no-any-return]


@kafka("0.11.0.0", "ReplicaFetcherThreadTest", "shouldFetchLeaderEpochOnFirstFetchOnly")
@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldFetchLeaderEpochOnFirstFetchOnlyIfLeaderEpochKnownToBoth")
@kafka("2.1.0", "AbstractFetcherThreadTest", "testUnknownLeaderEpochWhileFetching")
@pytest.mark.parametrize("era", ["0.11", "2.0", "2.1"])
def test_a_fetch_error_delays_the_partition_and_it_fetches_again_without_truncating(
        era: str) -> None:
    """0.11-2.1: the follower has truncated (one OffsetsForLeaderEpoch) and fetches; the
    leader answers its fetch with an error (UNKNOWN_LEADER_EPOCH in 2.1,
    NOT_LEADER_FOR_PARTITION before). The partition is delayed by
    ``replica.fetch.backoff.ms`` and stays fetching (``delayPartitions`` keeps the state):
    after the delay it fetches again from the same offset and never asks for its epoch's
    end offset a second time — a second OffsetsForLeaderEpoch would repair a divergence
    Kafka keeps until the next LeaderAndIsr."""
    f = replica(2, batches((1, 5)), era=era, hw=5)
    fetch = _fetching(f, era, 5)
    error = UNKNOWN_LEADER_EPOCH if era == "2.1" else NOT_LEADER_OR_FOLLOWER
    for _ in range(3):
        effects = _after_backoff(f, _fetch_answer(f, fetch, error=error))
        assert not sent(effects, OffsetsForLeaderEpoch)
        fetch = _one(effects, Fetch)
        assert fetch.fetch_offset == 5 and f.fetch_state == "fetching"
    effects = _fetch_answer(f, fetch, hw=6, leo=6, records=(rec(5, 2),))
    assert f.leo == 6 and sent(effects, Fetch) and not sent(effects, OffsetsForLeaderEpoch)


@kafka("0.11.0.0", "ReplicaFetcherThreadTest", "shouldPollIndefinitelyIfLeaderReturnsAnyException")
@kafka("2.0.0", "ReplicaFetcherThreadTest", "shouldPollIndefinitelyIfLeaderReturnsAnyException")
@kafka("2.1.0", "AbstractFetcherThreadTest", "testUnknownLeaderEpochInTruncation")
@pytest.mark.parametrize("era", ["0.11", "2.0", "2.1"])
def test_an_epoch_request_error_keeps_the_follower_truncating_until_an_answer(
        era: str) -> None:
    """0.11-2.1: the leader answers the follower's OffsetsForLeaderEpoch with an error
    (UNKNOWN_LEADER_EPOCH in 2.1, NOT_LEADER_FOR_PARTITION before) three times: each time
    the partition is delayed and asks again — nothing is truncated (LEO 300, HW 100) and
    nothing is fetched. Then the leader answers end offset 156: the follower truncates to
    156 and only then fetches."""
    f = replica(2, batches((5, 300)), era=era, hw=100)
    req = _one(follow(f, 1, 6), OffsetsForLeaderEpoch)
    error = UNKNOWN_LEADER_EPOCH if era == "2.1" else NOT_LEADER_OR_FOLLOWER
    for _ in range(3):
        effects = _after_backoff(f, _epoch_answer(f, req, error=error))
        assert not sent(effects, Fetch)
        req = _one(effects, OffsetsForLeaderEpoch)
        assert req.leader_epoch == 5 and f.fetch_state == "truncating"
        assert (f.leo, f.hw) == (300, 100)
    effects = _epoch_answer(f, req, epoch=-1 if era == "0.11" else 5, end=156)
    assert f.leo == 156 and _one(effects, Fetch).fetch_offset == 156


@kafka("2.1.0", "AbstractFetcherThreadTest", "testFencedFetch")
@kafka("2.8.0", "AbstractFetcherThreadTest", "testFencedFetch")
@kafka("3.7.0", "AbstractFetcherThreadTest", "testFencedFetch")
@pytest.mark.parametrize("era", ["2.1", "2.8", "3.7"])
def test_a_fenced_fetch_stops_the_partition_until_a_new_leader_epoch(era: str) -> None:
    """2.1+: the follower fetches in epoch 2; the leader, already in a newer epoch, answers
    FENCED_LEADER_EPOCH. The partition leaves the fetcher (``onPartitionFenced``): no
    request, and no retry after ``replica.fetch.backoff.ms`` — its fetch state is failed,
    its LEO and HW unchanged. A LeaderAndIsr of the same epoch (an ISR change) does not
    bring it back; the next leader epoch does, with a new fetch state."""
    f = replica(2, batches((1, 5)), era=era, hw=5)
    fetch = _fetching(f, era, 5)
    effects = _fetch_answer(f, fetch, error=FENCED_LEADER_EPOCH)
    assert not sent(effects) and not _backoffs(effects)
    assert f.fetch_state == "failed" and (f.leo, f.hw) == (5, 5)
    f.handle(state(1, 2, isr=(1,)), ("controller", "controller"))
    assert not sent(f.drain())
    effects = follow(f, 1, 3)
    assert f.fetch_state in ("truncating", "fetching")
    assert sent(effects, Fetch if era != "2.1" else OffsetsForLeaderEpoch)


@kafka("2.1.0", "AbstractFetcherThreadTest", "testFencedTruncation")
def test_a_fenced_epoch_request_stops_the_truncation_until_a_new_leader_epoch() -> None:
    """2.1: the follower (epoch 0) asks the leader (epoch 1) for its epoch's end offset and
    is answered FENCED_LEADER_EPOCH: no progress (LEO 0, HW 0), no retry, the partition is
    out of the fetcher until the next LeaderAndIsr, which starts a new truncation."""
    f = replica(2, [], era="2.1")
    f.log.epochs.assign(0, 0)   # an epoch, so that 2.1 asks
    req = _one(follow(f, 1, 0), OffsetsForLeaderEpoch)
    effects = _epoch_answer(f, req, error=FENCED_LEADER_EPOCH)
    assert not sent(effects) and not _backoffs(effects)
    assert f.fetch_state == "failed" and (f.leo, f.hw) == (0, 0)
    assert _one(follow(f, 1, 1), OffsetsForLeaderEpoch).current_leader_epoch == 1


@kafka("2.8.0", "AbstractFetcherThreadTest", "testFencedTruncation")
@kafka("3.7.0", "AbstractFetcherThreadTest", "testFencedTruncation")
@pytest.mark.parametrize("era", ["2.8", "3.7"])
def test_an_empty_follower_fenced_on_its_first_fetch_is_out_until_a_new_epoch(
        era: str) -> None:
    """2.8+ (truncate on fetch): an empty follower in epoch 0 has no epoch, so it truncates
    to its HW (0) locally and fetches; the leader, in epoch 1, fences that fetch. No
    progress (LEO 0, HW 0) and the partition is failed: nothing more is sent."""
    f = replica(2, [], era=era)
    effects = follow(f, 1, 0)
    assert not sent(effects, OffsetsForLeaderEpoch)
    effects = _fetch_answer(f, _one(effects, Fetch), error=FENCED_LEADER_EPOCH)
    assert not sent(effects) and not _backoffs(effects)
    assert f.fetch_state == "failed" and (f.leo, f.hw) == (0, 0)


def _without_epochs(era: str, hw: int) -> Replica:
    """A follower whose three records carry no leader epoch in its cache (Kafka's test
    overrides ``latestEpoch`` with None: a log of the old message format)."""
    f = replica(2, [rec(0, 0, "a"), rec(1, 2, "b"), rec(2, 4, "c")], era=era, hw=hw)
    f.log.epochs.clear()
    return f


@kafka("2.8.0", "AbstractFetcherThreadTest",
       "testTruncateToHighWatermarkIfLeaderEpochInfoNotAvailable")
@kafka("3.7.0", "AbstractFetcherThreadTest",
       "testTruncateToHighWatermarkIfLeaderEpochInfoNotAvailable")
@kafka("2.1.0", "ReplicaFetcherThreadTest",
       "shouldNotSendEpochRequestIfLastEpochUndefinedForAllPartitions")
@pytest.mark.parametrize("era", ["2.1", "2.8", "3.7"])
def test_without_any_epoch_a_follower_truncates_to_its_hw_without_asking_the_leader(
        era: str) -> None:
    """2.1+: a follower (LEO 3, HW 2) with no leader epoch at all is made a follower in
    epoch 5. It sends no OffsetsForLeaderEpoch (2.1: the undefined epoch is answered
    locally; 2.8+: ``partitionsWithoutEpochs`` → ``truncateToHighWatermark``), truncates
    to its HW and fetches from there, with no lastFetchedEpoch."""
    f = _without_epochs(era, 2)
    effects = follow(f, 1, 5)
    assert not sent(effects, OffsetsForLeaderEpoch)
    assert f.leo == 2 and values(f) == [(0, "a", 0), (1, "b", 2)]
    fetch = _one(effects, Fetch)
    assert (fetch.fetch_offset, fetch.last_fetched_epoch) == (2, -1)
    assert f.fetch_state == "fetching"


@kafka("0.11.0.0", "ReplicaFetcherThreadTest",
       "shouldTruncateToHighWatermarkIfLeaderReturnsUndefinedOffset")
@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldTruncateToInitialFetchOffsetIfLeaderReturnsUndefinedOffset")
@pytest.mark.parametrize("era", ["0.11", "2.0"])
def test_before_2_1_a_follower_without_any_epoch_asks_with_epoch_minus_1(era: str) -> None:
    """0.11 and 2.0: the same follower asks the leader for the end offset of epoch -1 (its
    cache's latest: undefined); the leader's undefined answer truncates it to its HW (2),
    then it fetches."""
    f = _without_epochs(era, 2)
    req = _one(follow(f, 1, 5), OffsetsForLeaderEpoch)
    assert req.leader_epoch == -1 and f.leo == 3
    effects = _epoch_answer(f, req)
    assert f.leo == 2 and _one(effects, Fetch).fetch_offset == 2


@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldFetchLeaderEpochSecondTimeIfLeaderRepliesWithEpochNotKnownToFollower")
@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldTruncateToInitialFetchOffsetIfLeaderReturnsUndefinedOffset")
def test_an_undefined_second_answer_keeps_the_intermediate_truncation_not_the_hw() -> None:
    """2.0 (KIP-279): the follower's cache is (3, 0), (5, 120), LEO 200, HW 10. The leader
    answers epoch 4, unknown to the follower: it cuts to 120 and asks again for epoch 3,
    which the leader answers undefined. ``getOffsetTruncationState`` then truncates to the
    fetch state's offset — 120 since the intermediate truncation — not to the HW: records
    10-119 of epoch 3 stay."""
    f = replica(2, batches((3, 120), (5, 80)), era="2.0", hw=10)
    req = _one(follow(f, 1, 6), OffsetsForLeaderEpoch)
    again = _one(_epoch_answer(f, req, epoch=4, end=155), OffsetsForLeaderEpoch)
    assert f.leo == 120 and again.leader_epoch == 3
    effects = _epoch_answer(f, again)
    assert f.leo == 120 and _one(effects, Fetch).fetch_offset == 120


@kafka("2.1.0", "AbstractFetcherThreadTest", "testFollowerFetchOutOfRangeHigh")
@kafka("3.7.0", "AbstractFetcherThreadTest", "testFollowerFetchOutOfRangeHigh")
@pytest.mark.parametrize("era", ["0.11", "2.1", "3.7"])
def test_out_of_range_resets_the_offset_and_fetches_again_at_once(era: str) -> None:
    """OFFSET_OUT_OF_RANGE is no error to back off from: the follower (LEO 3) truncates to
    the leader's LEO (1; ``fetchOffsetAndTruncate``) and its next fetch goes in the same
    step, from 1, with no ``replica.fetch.backoff.ms`` delay (``handleOutOfRangeError``
    sets a Fetching state without a DelayedItem; 0.11 a new ``PartitionFetchState``). From
    2.8 the fetch carries the cache's latest epoch after the cut (0)."""
    f = replica(2, batches((0, 1), (1, 2)), era=era, hw=1)
    fetch = _fetching(f, era, 3) if era != "3.7" else _one(follow(f, 1, 2), Fetch)
    effects = _fetch_answer(f, fetch, error=OFFSET_OUT_OF_RANGE, hw=1, leo=1)
    assert not _backoffs(effects)
    again = _one(effects, Fetch)
    assert f.leo == 1 and again.fetch_offset == 1 and f.fetch_state == "fetching"
    assert again.last_fetched_epoch == (0 if era == "3.7" else -1)


@kafka("2.8.0", "AbstractFetcherThreadTest", "testDivergingEpochs")
@kafka("3.7.0", "AbstractFetcherThreadTest", "testDivergingEpochs")
@pytest.mark.parametrize("era", ["2.8", "3.7"])
def test_the_last_fetched_epoch_is_the_fetch_states_and_equals_the_caches_latest(
        era: str) -> None:
    """2.8+: the fetch state's lastFetchedEpoch — the cache's latest epoch when the
    follower starts and after each truncation, the last appended batch's epoch after an
    append — is the number every Fetch carries, and with the 2.1+ cache rule it is the
    cache's latest epoch at every fetch. Here in the KAFKA-7415 case: broker 2 led epoch 5
    without appending; its first fetch offers 5, the diverging answer cuts the stale entry
    and the next offers 3, and after appending the leader's records of epochs 4 and 6
    the last fetched epoch is 6."""
    leader = replica(1, batches((3, 10), (4, 2), (6, 3)), era=era, hw=10)
    follower = replica(2, batches((3, 10), (5, 0)), era=era, hw=10)
    lead(follower, 5)
    assert follower.log.epochs.latest_epoch() == 5
    lead(leader, 7)
    seen: list[tuple[int, int]] = []
    build = follower.fetch_part

    def checked(corr: int) -> tuple[Any, ...]:
        part = build(corr)
        seen.append((part[5], follower.log.epochs.latest_epoch()))
        return part

    follower.fetch_part = checked  # type: ignore[method-assign]
    wire = Wire(leader, follower)
    wire.take(follower, follow(follower, 1, 7))
    assert wire.run(lambda: values(follower) == values(leader) and follower.hw == leader.hw)
    assert seen[:3] == [(5, 5), (3, 3), (6, 6)]
    assert all(sent_epoch == latest for sent_epoch, latest in seen)
    assert follower.last_fetched_epoch == 6


# -- a follower broker: replicas run by a replica manager with a fetcher thread ----------------
class _Broker:
    """Broker 2's replica manager, its replicas and its fetcher thread for leader broker 1,
    driven by hand: requests the thread sends are kept, answers are handed to it, and its
    own timers fire when the test moves the clock."""

    def __init__(self, replicas: list[Replica]) -> None:
        self.mgr = ReplicaManager("broker-2", 2, replicas, (1, 2),
                                  FetcherConfig(replica_fetch_wait_max_ms=0))
        self.thread: ReplicaFetcherThread = self.mgr.threads[(1, 0)]
        self.now_us = 0
        self.requests: list[Any] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._timers: list[tuple[int, Any]] = []

    def _collect(self) -> None:
        for m in self.mgr.machines():
            for e in m.drain():
                if isinstance(e, Send) and isinstance(e.msg, ReplicaFetch | ReplicaEpochs):
                    self.requests.append(e.msg)
                elif isinstance(e, Timer) and m is self.thread:
                    self._timers.append((self.now_us + e.delay_us, e.msg))
                elif isinstance(e, Emit):
                    self.events.append((e.event, e.fields))

    def tell(self, r: Replica, msg: Any) -> None:
        r.now_us = self.now_us
        r.handle(msg, ("controller", "controller"))
        self._collect()

    def answer(self, msg: Any) -> None:
        self.thread.now_us = self.now_us
        self.thread.handle(msg, LEADER)
        self._collect()

    def advance(self, us: int) -> None:
        """Move the clock by ``us``, firing the thread's timers due by then, in order."""
        end = self.now_us + us
        while True:
            due = sorted((t for t in self._timers if t[0] <= end), key=lambda t: t[0])
            if not due:
                break
            at, msg = due[0]
            self._timers.remove(due[0])
            self.now_us = at
            self.answer(msg)
        self.now_us = end

    def last(self) -> Any:
        return self.requests[-1]


def _partition(p: int, era: str) -> Replica:
    """Broker 2's replica of t-``p``: five records of epoch 1, HW 5."""
    log = PartitionLog("t", p)
    r = Replica("broker-2", 2, log, rules_for(era), ReplicaConfig(), clean_start=True)
    for x in batches((1, 5)):
        log.append(x, 1 << 30, 1 << 40, 0)
    log.hw_checkpoint = 5
    r.start()
    r.drain()
    return r


def _state_for(r: Replica, epoch: int) -> PartitionState:
    return PartitionState(1, "t", r.partition, (1, 2), 1, epoch, (1, 2), (), epoch, False)


def _follow_all(b: _Broker, parts: list[Replica], epoch: int) -> None:
    for r in parts:
        b.tell(r, _state_for(r, epoch))
    b.advance(0)   # the thread's partitions_added: its first request goes


def _fetch_parts(req: ReplicaFetch) -> dict[int, Fetch]:
    return {Fetch(*p).partition: Fetch(*p) for p in req.parts}


def _ok(f: Fetch, leo: int = 5) -> tuple[Any, ...]:
    """``f``'s part of a fetch answer: no error, no records, the leader at LEO and HW 5."""
    return ("t", f.partition, NONE, leo, leo, 0, (), -1, -1, 0, f.correlation)


@kafka("3.7.0", "AbstractFetcherThreadTest", "testPartitionsInError")
def test_a_thread_delays_only_the_partitions_answered_with_an_error() -> None:
    """3.7: one thread fetches t-0 and t-1; the leader answers t-0 with an error and t-1
    with no error. Only t-0 is delayed (by ``replica.fetch.backoff.ms``) and both stay
    fetching: the next request carries t-1 alone, the one after the delay both."""
    parts = [_partition(0, "3.7"), _partition(1, "3.7")]
    b = _Broker(parts)
    _follow_all(b, parts, 2)
    req = b.last()
    assert isinstance(req, ReplicaFetch) and sorted(_fetch_parts(req)) == [0, 1]
    fs = _fetch_parts(req)
    b.answer(ReplicaFetchResponse(NONE, (
        ("t", 0, NOT_LEADER_OR_FOLLOWER, -1, -1, -1, (), -1, -1, -1, req.correlation),
        _ok(fs[1])), req.correlation))
    assert parts[0].fetch_delay_until_us == b.now_us + BACKOFF_US
    assert parts[1].fetch_delay_until_us == 0
    assert [r.fetch_state for r in parts] == ["fetching", "fetching"]
    assert sorted(_fetch_parts(b.last())) == [1]
    n = len(b.requests)
    # t-1's fetches go on; once the delay has passed, t-0 is back in the request
    while b.now_us < BACKOFF_US:
        req = b.last()
        b.advance(100_000)
        b.answer(ReplicaFetchResponse(NONE, tuple(_ok(f) for f in _fetch_parts(req).values()),
                                      req.correlation))
    assert len(b.requests) > n
    assert sorted(_fetch_parts(b.last())) == [0, 1]


@kafka("3.7.0", "AbstractFetcherThreadTest", "testDelay")
@kafka("2.0.0", "ReplicaFetcherThreadTest",
       "shouldFetchLeaderEpochOnFirstFetchOnlyIfLeaderEpochKnownToBoth")
@pytest.mark.parametrize("era", ["2.0", "3.7"])
def test_a_failed_fetch_request_delays_the_thread_and_it_fetches_again_without_truncating(
        era: str) -> None:
    """A fetch request that fails as a whole (here its timeout) delays its partitions by
    ``replica.fetch.backoff.ms``: nothing is sent before the delay has passed, then the
    thread fetches again — in 2.0 a Fetch too, not a second OffsetsForLeaderEpoch: the
    partition was fetching and the delay keeps that state."""
    p = _partition(0, era)
    b = _Broker([p])
    _follow_all(b, [p], 2)
    if era == "2.0":
        req = b.last()
        assert isinstance(req, ReplicaEpochs)
        b.answer(ReplicaEpochsResponse(NONE, (("t", 0, NONE, 1, 5, req.correlation),),
                                       req.correlation))
    req = b.last()
    assert isinstance(req, ReplicaFetch)
    n = len(b.requests)
    b.advance(30_000_000)   # replica.socket.timeout.ms: the request times out
    failed = [f for ev, f in b.events if ev == "request_failed"]
    assert failed and failed[-1]["reason"] == "timeout"
    assert len(b.requests) == n and p.fetch_state == "fetching"
    b.advance(BACKOFF_US - 1)
    assert len(b.requests) == n
    b.advance(1)
    again = b.last()
    assert isinstance(again, ReplicaFetch) and len(b.requests) == n + 1
    assert _fetch_parts(again)[0].fetch_offset == 5


@kafka("2.8.0", "AbstractFetcherThreadTest", "testFencedFetch")
@kafka("3.7.0", "AbstractFetcherThreadTest", "testFencedFetch")
@pytest.mark.parametrize("era", ["2.8", "3.7"])
def test_a_fenced_partition_leaves_its_fetcher_thread_until_a_new_leader_epoch(
        era: str) -> None:
    """2.8+: the leader fences t-0's fetch; the thread drops t-0 (traced as a
    ``fetcher_partitions`` removal with ``failed``) and goes on fetching t-1 alone, and
    never sends t-0 again while its epoch stays — no retry after the backoff. The next
    leader epoch for t-0 adds it back to the thread."""
    parts = [_partition(0, era), _partition(1, era)]
    b = _Broker(parts)
    _follow_all(b, parts, 2)
    req = b.last()
    fs = _fetch_parts(req)
    b.answer(ReplicaFetchResponse(NONE, (
        ("t", 0, FENCED_LEADER_EPOCH, -1, -1, -1, (), -1, -1, -1, req.correlation),
        _ok(fs[1])), req.correlation))
    removed = [f for ev, f in b.events if ev == "fetcher_partitions" and f["change"] == "remove"]
    assert removed == [{**removed[0], "topic_partition": "t-0", "failed": True}]
    assert parts[0].fetch_state == "failed" and ("t", 0) not in b.thread.partitions
    for _ in range(5):
        req = b.last()
        assert sorted(_fetch_parts(req)) == [1]
        b.advance(BACKOFF_US)
        b.answer(ReplicaFetchResponse(NONE, (_ok(_fetch_parts(req)[1]),), req.correlation))
    b.tell(parts[0], _state_for(parts[0], 3))
    b.advance(0)
    req = b.last()
    b.answer(ReplicaFetchResponse(NONE, tuple(_ok(f) for f in _fetch_parts(req).values()),
                                  req.correlation))
    assert sorted(_fetch_parts(b.last())) == [0, 1]
