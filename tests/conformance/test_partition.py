"""The leader side of a partition, held against Kafka's ``PartitionTest`` (issue 17).

Each test builds isrlab's ``Replica`` (Kafka's ``Partition`` plus its fetcher) on a log
prepared like the Kafka test's and asserts what the Kafka test asserts, on isrlab's messages.
"""

from __future__ import annotations

from harness import batches, fetch_response, follow, lead, replica, sent
from kafkacite import kafka

from actors.messages import (
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    UNKNOWN_LEADER_EPOCH,
    DeleteRecords,
    DeleteRecordsResponse,
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Produce,
)
from actors.replica import Replica

FOLLOWER = ("broker-2", "t-0")


def _read(r: Replica, last_fetched_epoch: int, fetch_offset: int) -> FetchResponse:
    r.handle(Fetch("t", 0, 2, -1, fetch_offset, last_fetched_epoch, r.leader_epoch,
                   0, 1000, 1), FOLLOWER)
    return fetch_response(r.drain())


def _diverges(resp: FetchResponse) -> tuple[int, int] | None:
    assert resp.error == NONE
    if resp.diverging_epoch < 0:
        return None
    assert resp.records == ()
    return (resp.diverging_epoch, resp.diverging_end_offset)


@kafka("2.8.0", "PartitionTest", "testLastFetchedOffsetValidation")
def test_a_fetch_diverges_where_its_last_epoch_ends_earlier_on_the_leader() -> None:
    """2.8 (truncate-on-fetch): the leader answers a follower's (lastFetchedEpoch, offset)
    with the diverging epoch and its end offset when its own log ends that epoch earlier or
    never had it; with no divergence when they agree; with OFFSET_OUT_OF_RANGE when the
    epoch is above every epoch it knows, and for an offset below its log start offset once
    that moved (the cache's first entry then starts there)."""
    log = batches((0, 2), (3, 3), (3, 3), (4, 5), (7, 1), (9, 3))
    r = replica(1, log, era="2.8")
    assert r.leo == 17
    lead(r, 10)
    assert _diverges(_read(r, 2, 5)) == (0, 2)
    assert _diverges(_read(r, 0, 4)) == (0, 2)
    assert _diverges(_read(r, 6, 6)) == (4, 13)
    assert _diverges(_read(r, 5, 9)) == (4, 13)
    assert _diverges(_read(r, 10, 18)) == (10, 17)
    assert _diverges(_read(r, 0, 2)) is None
    assert _diverges(_read(r, 7, 14)) is None
    assert _diverges(_read(r, 9, 17)) is None
    assert _diverges(_read(r, 10, 17)) is None
    # an epoch the leader never knew, above all of its own
    assert _read(r, 11, 5).error == OFFSET_OUT_OF_RANGE
    # the HW reaches the LEO, then the log start offset moves into the middle of epoch 3
    assert r.hw == 17
    r.handle(DeleteRecords("t", 0, 5, 30000, 9), ("admin", "admin"))
    # answered once the follower's log start offset follows (the low watermark): not yet
    assert not sent(r.drain(), DeleteRecordsResponse)
    assert r.log.log_start_offset == 5 and r.log.epochs.entries[0] == (3, 5)
    assert _diverges(_read(r, 2, 8)) == (2, 5)
    assert _diverges(_read(r, 0, 5)) is None
    assert _diverges(_read(r, 3, 5)) is None
    assert _read(r, 0, 0).error == OFFSET_OUT_OF_RANGE


@kafka("2.8.0", "PartitionTest", "testMakeLeaderUpdatesEpochCache")
def test_becoming_leader_writes_the_new_epoch_at_the_leo_into_the_epoch_cache() -> None:
    """2.1+ (KAFKA-7415): makeLeader assigns (new leader epoch, LEO) in the epoch cache at
    once, before any record of the epoch is written, and the checkpoint file holds it."""
    r = replica(1, batches((4, 2), (5, 3)), era="2.8")
    assert r.log.epochs.entries == [(4, 0), (5, 2)]
    lead(r, 8)
    assert r.log.epochs.entries == [(4, 0), (5, 2), (8, 5)]
    assert r.log.epochs.checkpoint == [(4, 0), (5, 2), (8, 5)]
    assert r.leso == 5


def _fetch_error(r: Replica, current_leader_epoch: int) -> str:
    r.handle(Fetch("t", 0, 2, -1, 0, -1, current_leader_epoch, 0, 1000, 1), FOLLOWER)
    return fetch_response(r.drain()).error


def _epoch_lookup_error(r: Replica, current_leader_epoch: int) -> str:
    r.handle(OffsetsForLeaderEpoch("t", 0, 2, 0, current_leader_epoch, 1), FOLLOWER)
    (resp,) = sent(r.drain(), OffsetsForLeaderEpochResponse)
    return str(resp.error)


def _leader_at_5() -> Replica:
    r = replica(1, batches((4, 3)), era="2.8", hw=3)
    lead(r, 5)
    return r


def _follower_at_5() -> Replica:
    r = replica(1, batches((4, 3)), era="2.8", hw=3)
    follow(r, 2, 5)
    return r


@kafka("2.8.0", "PartitionTest", "testReadRecordEpochValidationForLeader")
def test_a_leader_serves_fetches_of_its_epoch_or_none_and_fences_the_others() -> None:
    """2.1+ (KIP-320): a leader of epoch 5 serves a fetch that names no epoch or epoch 5;
    epoch 4 is FENCED_LEADER_EPOCH, epoch 6 UNKNOWN_LEADER_EPOCH."""
    r = _leader_at_5()
    assert [_fetch_error(r, e) for e in (-1, 5, 4, 6)] == [
        NONE, NONE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH]


@kafka("2.8.0", "PartitionTest", "testReadRecordEpochValidationForFollower")
def test_a_follower_checks_the_fetchs_epoch_before_saying_it_is_not_the_leader() -> None:
    """2.1+: a follower of epoch 5 asked for leader-only data answers NOT_LEADER_OR_FOLLOWER
    for no epoch or epoch 5, but FENCED_LEADER_EPOCH for 4 and UNKNOWN_LEADER_EPOCH for 6:
    the epoch check comes first (isrlab models no fetch from followers, KIP-392, so only the
    leader-only half of Kafka's test applies)."""
    r = _follower_at_5()
    assert [_fetch_error(r, e) for e in (-1, 5, 4, 6)] == [
        NOT_LEADER_OR_FOLLOWER, NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH]


@kafka("2.8.0", "PartitionTest", "testOffsetForLeaderEpochValidationForLeader")
def test_a_leader_answers_epoch_lookups_of_its_epoch_or_none_and_fences_the_others() -> None:
    """2.1+: OffsetsForLeaderEpoch on a leader of epoch 5: no epoch or 5 is answered, 4 is
    FENCED_LEADER_EPOCH, 6 UNKNOWN_LEADER_EPOCH."""
    r = _leader_at_5()
    assert [_epoch_lookup_error(r, e) for e in (-1, 5, 4, 6)] == [
        NONE, NONE, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH]


@kafka("2.8.0", "PartitionTest", "testOffsetForLeaderEpochValidationForFollower")
def test_a_follower_fences_epoch_lookups_before_saying_it_is_not_the_leader() -> None:
    """2.1+: OffsetsForLeaderEpoch on a follower of epoch 5 (leader only): no epoch or 5 is
    NOT_LEADER_OR_FOLLOWER, 4 FENCED_LEADER_EPOCH, 6 UNKNOWN_LEADER_EPOCH."""
    r = _follower_at_5()
    assert [_epoch_lookup_error(r, e) for e in (-1, 5, 4, 6)] == [
        NOT_LEADER_OR_FOLLOWER, NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH]


@kafka("2.1.0", "PartitionTest", "testMakeLeaderUpdatesEpochCache")
def test_before_2_1_becoming_leader_leaves_the_epoch_cache_to_the_first_append() -> None:
    """KAFKA-7415 added this test with the fix (2.1.0): makeLeader assigns (new epoch, LEO).
    Before it (``Partition.makeLeader`` at tag 2.0.0) the epoch entered the cache only with
    the new leader's first append. So at 2.0 a leader of epoch 8 over epochs 4 and 5 has
    the cache (4, 0), (5, 2) until it appends, then (8, 5); at 2.1 it has (8, 5) at once."""
    old = replica(1, batches((4, 2), (5, 3)), era="2.0")
    lead(old, 8)
    assert old.log.epochs.entries == [(4, 0), (5, 2)]
    old.handle(Produce("t", 0, 1, ((-1, "x", -1, 0, -1, -1, None),), 30000, 7),
               ("producer-0", "producer"))
    old.drain()
    assert old.log.epochs.entries == [(4, 0), (5, 2), (8, 5)]
    new = replica(1, batches((4, 2), (5, 3)), era="2.1")
    lead(new, 8)
    assert new.log.epochs.entries == [(4, 0), (5, 2), (8, 5)]
