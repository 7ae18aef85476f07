"""The leader's answers to a follower's fetch, per era (issue 49, items 4 and 6), held
against Kafka's ``PartitionTest``, ``ReplicaManagerTest`` and ``LogTest``/``UnifiedLogTest``.

Item 4: which check wins when a fetch is both below the leader's log start offset and
diverging, past the LEO, or diverging within range. 2.8.0 ``Partition.readRecords`` asks
the epoch first and reaches the log's range check (``Log.read``) only when nothing
diverges; 3.0+ (KAFKA-12996; 3.7.0 and 4.1.0 ``readRecords``) refuses an offset below the
log start offset before looking at the divergence.

Item 6: a fetch from a broker outside the replica set. 2.0.0-2.8.0 ``ReplicaManager`` reads
it and then drops the records (``updateFollowerLogReadResults`` /
``updateFollowerFetchState`` answer ``withEmptyFetchInfo``), recording nothing; 3.3+
(KAFKA-13837; 3.7.0 and 4.1.0 ``Partition.fetchRecords`` → ``followerReplicaOrThrow``)
refuses it before the read: UNKNOWN_LEADER_EPOCH when it names a current leader epoch,
NOT_LEADER_OR_FOLLOWER when it names none.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from harness import batches, fetch_response, lead, replica, sent, state
from kafkacite import kafka

from actors.core import Timer
from actors.fetcher import REPLICA_MANAGER, FetcherConfig
from actors.messages import (
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
    Fetch,
    FetchResponse,
    Produce,
    ReplicaFetch,
    ReplicaFetchResponse,
    Tick,
)
from actors.replica import Replica, ReplicaConfig
from actors.replica_manager import ReplicaManager
from actors.wire import fields


def _fetch(r: Replica, broker: int, fetch_offset: int, *, last_fetched_epoch: int = -1,
           current_leader_epoch: int | None = None) -> FetchResponse:
    """Broker ``broker``'s fetch of t-0 at ``fetch_offset``, answered at once (the harness's
    replica waits 0 ms); ``current_leader_epoch`` defaults to the leader's own."""
    epoch = r.leader_epoch if current_leader_epoch is None else current_leader_epoch
    r.handle(Fetch("t", 0, broker, -1, fetch_offset, last_fetched_epoch, epoch, 0, 1000, 1),
             (f"broker-{broker}", "t-0"))
    return fetch_response(r.drain())


def _diverging(resp: FetchResponse) -> tuple[int, int] | None:
    assert resp.error == NONE, resp.error
    if resp.diverging_epoch < 0:
        return None
    assert resp.records == ()
    return (resp.diverging_epoch, resp.diverging_end_offset)


def _kafka_log_leader(era: str, log_start_offset: int = 0) -> Replica:
    """``testLastFetchedOffsetValidation``'s leader: epochs 0, 3, 3, 4, 7, 9 (LEO 17), leader
    epoch 10, its log start offset at ``log_start_offset`` (the epoch cache cut there)."""
    r = replica(1, batches((0, 2), (3, 3), (3, 3), (4, 5), (7, 1), (9, 3)), era=era, hw=17,
                log_start_offset=log_start_offset or None)
    lead(r, 10)
    assert r.leo == 17 and r.log.log_start_offset == log_start_offset
    return r


# -- item 4: below the log start offset, past the LEO, diverging within range -----------------
@pytest.mark.parametrize("era", ["3.7", "4.1"])
@kafka("3.7.0", "PartitionTest", "testLastFetchedOffsetValidation")
@kafka("4.1.0", "PartitionTest", "testLastFetchedOffsetValidation")
def test_from_3_0_a_fetch_below_the_log_start_offset_is_out_of_range_even_when_diverging(
        era: str) -> None:
    """3.0+ (KAFKA-12996): with the log start offset at 10, a fetch at 6 is
    OFFSET_OUT_OF_RANGE whether its last fetched epoch diverges (epoch 5: this leader ends
    epoch 4 at 13 and has no 5) or not (epoch 3, below the first cached epoch); the
    follower's position is not recorded."""
    r = _kafka_log_leader(era, log_start_offset=10)
    assert r.log.epochs.entries[0] == (4, 10)
    assert _fetch(r, 2, 6, last_fetched_epoch=5).error == OFFSET_OUT_OF_RANGE   # diverging
    assert _fetch(r, 2, 6, last_fetched_epoch=3).error == OFFSET_OUT_OF_RANGE   # not
    assert r.followers[2].log_end_offset == -1
    # from the log start offset on, the divergence is answered again
    assert _diverging(_fetch(r, 2, 10, last_fetched_epoch=5)) == (4, 13)


@kafka("2.8.0", "PartitionTest", "testLastFetchedOffsetValidation")
def test_in_2_8_a_diverging_fetch_below_the_log_start_offset_gets_its_diverging_epoch() -> None:
    """2.8.0 ``Partition.readRecords`` answers a diverging lastFetchedEpoch before the log's
    range check: the fetch at 6 with epoch 5 gets (4, 13), no error, below the log start
    offset 10 (Kafka's 2.8.0 test does not assert this case; 2.8.1 backports KAFKA-12996).
    The same fetch with a non-diverging epoch reaches ``Log.read``: OFFSET_OUT_OF_RANGE."""
    r = _kafka_log_leader("2.8", log_start_offset=10)
    resp = _fetch(r, 2, 6, last_fetched_epoch=5)
    assert _diverging(resp) == (4, 13)
    assert resp.log_start_offset == 10
    assert _fetch(r, 2, 6, last_fetched_epoch=3).error == OFFSET_OUT_OF_RANGE


_PAST_LEO_CITES = {"2.1": ("2.1.0", "LogTest"), "2.8": ("2.8.0", "LogTest"),
                   "3.7": ("3.7.0", "UnifiedLogTest"), "4.1": ("4.1.0", "UnifiedLogTest")}


@pytest.mark.parametrize("era", sorted(_PAST_LEO_CITES))
@kafka("2.1.0", "LogTest", "testReadOutOfRange")
@kafka("2.8.0", "LogTest", "testReadOutOfRange")
@kafka("3.7.0", "UnifiedLogTest", "testReadOutOfRange")
@kafka("4.1.0", "UnifiedLogTest", "testReadOutOfRange")
@kafka("2.8.0", "PartitionTest", "testLastFetchedOffsetValidation")
@kafka("3.7.0", "PartitionTest", "testLastFetchedOffsetValidation")
@kafka("4.1.0", "PartitionTest", "testLastFetchedOffsetValidation")
def test_a_fetch_past_the_leo_is_out_of_range_unless_its_epoch_ends_there(era: str) -> None:
    """A log starting at 1024 with one record: a fetch at the LEO (1025) reads nothing, one
    below the log start offset (0) or past the LEO (1026) is OFFSET_OUT_OF_RANGE (the log's
    range check). With truncate-on-fetch (2.8+) a fetch past the LEO that names the leader's
    current epoch diverges instead — that epoch ends at the LEO (``read(10, 18)`` in
    ``testLastFetchedOffsetValidation``); an epoch above every epoch the leader knows is
    OFFSET_OUT_OF_RANGE. 2.1 ignores the lastFetchedEpoch (not in its Fetch)."""
    r = replica(1, [(1024, "42", 0, 0, -1, -1, None)], era=era, hw=1025)
    lead(r, 1)
    assert (r.log.log_start_offset, r.leo) == (1024, 1025)
    at_leo = _fetch(r, 2, 1025)
    assert (at_leo.error, at_leo.records) == (NONE, ())
    assert _fetch(r, 2, 0).error == OFFSET_OUT_OF_RANGE
    assert _fetch(r, 2, 1026).error == OFFSET_OUT_OF_RANGE
    assert _fetch(r, 2, 1026, last_fetched_epoch=2).error == OFFSET_OUT_OF_RANGE
    current_epoch = _fetch(r, 2, 1026, last_fetched_epoch=1)
    if era == "2.1":
        assert current_epoch.error == OFFSET_OUT_OF_RANGE
    else:
        assert _diverging(current_epoch) == (1, 1025)


@pytest.mark.parametrize("era", ["2.8", "3.7", "4.1"])
@kafka("2.8.0", "PartitionTest", "testLastFetchedOffsetValidation")
@kafka("3.7.0", "PartitionTest", "testLastFetchedOffsetValidation")
@kafka("4.1.0", "PartitionTest", "testLastFetchedOffsetValidation")
def test_a_diverging_fetch_within_range_gets_the_epoch_and_end_it_diverges_at(era: str) -> None:
    """Within the log's range a diverging lastFetchedEpoch is answered with no error, no
    records and (epoch, end offset) of this leader's log: epoch 6 at 6 → (4, 13), epoch 2 at
    5 → (0, 2). 2.8.0 records the diverging fetch's offset as the follower's position
    (KAFKA-13141, fixed in 3.1: 3.7.0 and 4.1.0 ``fetchRecords`` skip
    ``updateFollowerFetchState`` when diverging)."""
    r = _kafka_log_leader(era)
    assert _diverging(_fetch(r, 2, 6, last_fetched_epoch=6)) == (4, 13)
    assert _diverging(_fetch(r, 2, 5, last_fetched_epoch=2)) == (0, 2)
    assert r.followers[2].log_end_offset == (5 if era == "2.8" else -1)


# -- item 6: a fetch from a broker outside the replica set ------------------------------------
@pytest.mark.parametrize("era", ["3.7", "4.1"])
@kafka("3.7.0", "PartitionTest", "testFetchFromUnrecognizedFollower")
@kafka("4.1.0", "PartitionTest", "testFetchFromUnrecognizedFollower")
@kafka("3.7.0", "ReplicaManagerTest", "testFetchMessagesWhenNotFollowerForOnePartition")
@kafka("4.1.0", "ReplicaManagerTest", "testFetchMessagesWhenNotFollowerForOnePartition")
def test_from_3_3_a_broker_outside_the_replica_set_is_refused_before_the_read(era: str) -> None:
    """3.3+ (KAFKA-13837): leader 1 of epoch 8 with replicas (1, 2). Broker 3's fetch naming
    epoch 8 is UNKNOWN_LEADER_EPOCH (the pair is not known yet: a reassignment may be adding
    it), broker 4's naming no epoch NOT_LEADER_OR_FOLLOWER; neither is recorded. The
    replica check comes after the epoch check (a stale epoch is still FENCED_LEADER_EPOCH)
    and before the read (an offset past the LEO is not OFFSET_OUT_OF_RANGE). Once the
    reassignment adds them (same leader epoch, new partition epoch) both fetch normally and
    are recorded."""
    r = replica(1, batches((0, 3)), era=era, hw=3)
    lead(r, 8)
    assert _fetch(r, 3, 0).error == UNKNOWN_LEADER_EPOCH
    assert _fetch(r, 4, 0, current_leader_epoch=-1).error == NOT_LEADER_OR_FOLLOWER
    assert _fetch(r, 3, 99).error == UNKNOWN_LEADER_EPOCH
    assert _fetch(r, 3, 0, current_leader_epoch=7).error == FENCED_LEADER_EPOCH
    assert 3 not in r.followers and 4 not in r.followers
    r.handle(replace(state(1, 8, (1, 2, 3, 4), (1, 2)), partition_epoch=9, adding=(3, 4)),
             ("controller", "controller"))
    r.drain()
    ok3 = _fetch(r, 3, 0)
    ok4 = _fetch(r, 4, 0, current_leader_epoch=-1)
    assert (ok3.error, ok4.error) == (NONE, NONE)
    assert len(ok3.records) == 3 and ok3.log_end_offset == 3
    assert r.followers[3].log_end_offset == 0 and r.followers[4].log_end_offset == 0


@pytest.mark.parametrize("era", ["2.1", "2.8"])
@kafka("2.1.0", "ReplicaManagerTest", "testFetchMessagesWhenNotFollowerForOnePartition")
@kafka("2.8.0", "ReplicaManagerTest", "testFetchMessagesWhenNotFollowerForOnePartition")
def test_before_3_3_a_broker_outside_the_replica_set_reads_nothing_and_is_not_recorded(
        era: str) -> None:
    """2.0.0-2.8.0: the fetch of broker 3 (replicas (1, 2)) is read like any other — the
    epoch check, 2.8's divergence and the range check answer as usual — but its records are
    dropped (``withEmptyFetchInfo``): no error, no records, the leader's HW and LEO, and the
    fetch is not recorded, so the HW does not move. Broker 2's fetch of the same offset
    advances the HW."""
    r = replica(1, batches((0, 3)), era=era, hw=0)
    lead(r, 8)
    empty = _fetch(r, 3, 3)
    assert (empty.error, empty.records, empty.high_watermark, empty.log_end_offset) == (
        NONE, (), 0, 3)
    assert _fetch(r, 3, 0).records == ()
    assert 3 not in r.followers and r.hw == 0
    assert _fetch(r, 3, 99).error == OFFSET_OUT_OF_RANGE
    assert _fetch(r, 3, 0, current_leader_epoch=9).error == UNKNOWN_LEADER_EPOCH
    if era == "2.8":
        assert _diverging(_fetch(r, 3, 3, last_fetched_epoch=5)) == (0, 3)
    assert _fetch(r, 2, 3).error == NONE
    assert r.hw == 3


def _drained(*machines: Any) -> list[Any]:
    return [e for m in machines for e in m.drain()]


def _replica_fetch(mgr: ReplicaManager, broker: int, offset: int, corr: int) -> None:
    part = fields(Fetch("t", 0, broker, -1, offset, -1, 8, 0, 1000, corr))
    mgr.handle(ReplicaFetch(broker, -1, "ReplicaFetcherThread-0-1", 500, 1, (part,), corr),
               (f"broker-{broker}", REPLICA_MANAGER))


def _answered(effects: list[Any]) -> dict[int, list[int]]:
    """Each ReplicaFetchResponse sent, by correlation: the offsets it carries."""
    return {m.correlation: [x[0] for x in FetchResponse(*m.parts[0]).records]
            for m in sent(effects, ReplicaFetchResponse)}


@pytest.mark.parametrize("era", ["2.1", "2.8"])
@kafka("2.1.0", "ReplicaManagerTest", "testFetchMessagesWhenNotFollowerForOnePartition")
@kafka("2.8.0", "ReplicaManagerTest", "testFetchMessagesWhenNotFollowerForOnePartition")
def test_before_3_3_an_unrecognised_fetch_waits_its_full_max_wait_then_reads(era: str) -> None:
    """2.0.0-2.8.0 ``fetchMessages``: the unrecognised broker's fetch has no bytes to send
    (its records dropped), so with ``replica.fetch.min.bytes`` 1 it is parked
    (``DelayedFetch``) with an unknown fetch offset, which ``tryComplete`` skips: an append
    that completes replica 2's parked fetch does not complete broker 3's. The max wait does,
    and ``onComplete`` reads again without the follower lookup: the records go out, the
    broker is still not recorded. (Kafka's test fetches with min bytes 0 and asserts the
    empty answer; the wait is read from ``fetchMessages`` and ``DelayedFetch``.)"""
    r = replica(1, batches((0, 3)), era=era, hw=3,
                cfg=ReplicaConfig(replica_fetch_wait_max_ms=500))
    mgr = ReplicaManager("broker-1", 1, [r], (1, 2, 3), FetcherConfig())
    lead(r, 8)
    _drained(*mgr.machines())
    _replica_fetch(mgr, 3, 3, 5)
    _replica_fetch(mgr, 2, 3, 6)
    effects = _drained(*mgr.machines())
    assert _answered(effects) == {}
    waits = {e.msg.token: e.msg for e in effects if isinstance(e, Timer)
             and isinstance(e.msg, Tick) and e.msg.kind == "delayed_fetch"}
    assert len(waits) == 2
    r.handle(Produce("t", 0, 1, ((-1, "x", -1, 0, -1, -1, None),), 30000, 7),
             ("client", "client"))
    assert r.leo == 4
    assert _answered(_drained(*mgr.machines())) == {6: [3]}   # replica 2 only
    for wait in waits.values():
        mgr.handle(wait, ("broker-1", REPLICA_MANAGER))
    assert _answered(_drained(*mgr.machines())) == {5: [3]}   # broker 3, at its max wait
    assert 3 not in r.followers
