"""The log itself (isrlab's ``PartitionLog``), held against Kafka's ``UnifiedLogTest``
(issue 17, divergence 5).
"""

from __future__ import annotations

import pytest
from harness import rec, replica
from kafkacite import kafka

from actors.log import RECORD_OVERHEAD_BYTES, PartitionLog
from actors.messages import Tick
from actors.replica import Replica, ReplicaConfig

NEVER_ROLL_MS = 1 << 40


def _append(log: PartitionLog, n: int, epoch: int = 0, segment_bytes: int = 1 << 30) -> None:
    for _ in range(n):
        log.append(rec(log.log_end_offset, epoch, "test"), segment_bytes, NEVER_ROLL_MS, 0)


def _size(log: PartitionLog) -> int:
    return sum(s.size for s in log.segments)


@kafka("3.7.0", "UnifiedLogTest", "testTruncateTo")
def test_truncate_to_keeps_cuts_and_restarts_the_log_like_kafka() -> None:
    """3.7: truncating at or past the LEO changes nothing; inside the log it cuts the LEO
    and the size; to 0 it empties the log; ``truncateFullyAndStartAt`` restarts it empty at
    an offset; and truncating below the first segment's base restarts it there too — with
    the log start offset moved down to the target, never left above the LEO."""
    per_record = RECORD_OVERHEAD_BYTES + len("test")
    segment_bytes = 10 * per_record
    log = PartitionLog("t", 0)
    _append(log, 10, segment_bytes=segment_bytes)
    assert len(log.segments) == 1 and log.log_end_offset == 10
    size = _size(log)
    log.truncate_to(10)
    assert (log.log_end_offset, _size(log)) == (10, size)
    log.truncate_to(11)
    assert (log.log_end_offset, _size(log)) == (10, size)
    log.truncate_to(5)
    assert log.log_end_offset == 5 and _size(log) < size
    log.truncate_to(0)
    assert (log.log_end_offset, _size(log)) == (0, 0)
    _append(log, 10, segment_bytes=segment_bytes)
    assert (log.log_end_offset, _size(log)) == (10, size)
    log.truncate_fully_and_start_at(1)
    assert (log.log_end_offset, _size(log), log.log_start_offset) == (1, 0, 1)
    _append(log, 10, segment_bytes=segment_bytes)
    assert log.log_end_offset == 11 and _size(log) == size
    log.truncate_to(0)   # below the first segment's base offset (1)
    assert (log.log_end_offset, _size(log), log.log_start_offset) == (0, 0, 0)
    assert log.records == [] and log.epochs.entries == []


@kafka("3.7.0", "UnifiedLogTest", "testTruncateToEndOffsetClearsEpochCache")
def test_truncating_at_or_past_the_leo_still_drops_a_trivial_epoch_entry_at_the_end() -> None:
    """3.7: a follower's log holds offsets 27-28 of epoch 19; as leader of epoch N it
    assigns (N, 29) with nothing appended; truncating to 29 or 30 (at or past the LEO)
    removes that entry, leaving (19, 27) as the latest, the LEO still 29."""
    for epoch, target in ((20, 29), (24, 30)):
        log = PartitionLog("t", 0)
        log.truncate_fully_and_start_at(27)
        for o in (27, 28):
            log.append(rec(o, 19), 1 << 30, NEVER_ROLL_MS, 0)
        assert log.epochs.latest_entry() == (19, 27) and log.log_end_offset == 29
        log.epochs.assign(epoch, log.log_end_offset)
        assert log.epochs.latest_entry() == (epoch, 29)
        log.truncate_to(target)
        assert log.epochs.latest_entry() == (19, 27) and log.log_end_offset == 29


@kafka("3.7.0", "UnifiedLogTest", "testTruncateTo")
def test_a_cut_inside_the_log_below_its_start_offset_moves_the_start_offset_down() -> None:
    """3.7 ``UnifiedLog.truncateTo``: ``logStartOffset = min(target, logStartOffset)``. A log
    whose start offset was moved to 8 (DeleteRecords) but whose first segment still starts at
    0 is cut to 5: the LEO is 5 and so is the log start offset (isrlab left it at 8, above
    the LEO and the HW)."""
    log = PartitionLog("t", 0)
    _append(log, 10)
    log.log_start_offset = 8
    log.truncate_to(5)
    assert (log.log_end_offset, log.log_start_offset) == (5, 5)


# -- retention (UnifiedLog.deleteOldSegments) --------------------------------------------------
NOW_MS = 1_000_000
RECORD = RECORD_OVERHEAD_BYTES + len("e0-o00")


def _retaining(n: int, *, retention_ms: int = -1, retention_bytes: int = -1,
               per_segment: int = 5, value_width: int = 2) -> Replica:
    """A replica holding ``n`` records of epoch 0 written at time 0, ``per_segment`` to a
    segment, its clock at ``NOW_MS``."""
    cfg = ReplicaConfig(segment_bytes=per_segment * RECORD, retention_ms=retention_ms,
                        retention_bytes=retention_bytes)
    records = [rec(i, 0, f"e0-o{i:0{value_width}d}") for i in range(n)]
    r = replica(1, records, cfg=cfg)
    r.now_us = NOW_MS * 1000
    return r


def _retain(r: Replica, hw: int | None = None) -> None:
    if hw is not None:
        r.hw = hw   # Kafka's test sets the HW directly (updateHighWatermark)
    r.handle(Tick("retention", 0, 0), r.address)
    r.drain()


@kafka("3.7.0", "UnifiedLogTest", "testCannotDeleteSegmentsAtOrAboveHighWatermark")
def test_retention_never_deletes_at_or_above_the_hw_and_finally_deletes_the_active_segment(
) -> None:
    """3.7: 100 expired records over many segments; for every HW from 0 to 100 retention
    leaves the log start offset at or below the HW, the first segment starting at or below
    it and every other above it. At HW 100 even the active segment goes (a new empty one is
    rolled first): log start offset 100, one empty segment."""
    r = _retaining(100, retention_ms=999, per_segment=6, value_width=2)
    assert len(r.log.segments) > 5 and (r.hw, r.log.log_start_offset, r.leo) == (0, 0, 100)
    for hw in range(101):
        _retain(r, hw)
        assert r.log.log_start_offset <= hw
        first, *rest = r.log.segments
        assert r.log.log_start_offset <= first.base_offset <= hw
        assert all(s.base_offset > hw and s.base_offset >= r.log.log_start_offset for s in rest)
    assert r.log.log_start_offset == 100
    assert len(r.log.segments) == 1 and r.log.segments[0].size == 0


@kafka("3.7.0", "UnifiedLogTest", "testDeleteOldSegments")
def test_no_segment_is_deleted_without_a_hw_and_all_go_with_the_hw_at_the_leo() -> None:
    """3.7: 100 expired records, 5 to a segment, epochs (0, 0) and (1, 90): with the HW at 0
    nothing is deleted; with the HW between 25 and 30 the log start offset stays at or
    below it and every remaining segment ends at or above it; with the HW at the LEO one
    segment remains and the epoch cache holds only (1, 100)."""
    r = _retaining(100, retention_ms=999)
    r.log.epochs.assign(0, 40)
    r.log.epochs.assign(1, 90)
    assert r.log.epochs.entries == [(0, 0), (1, 90)]
    before = len(r.log.segments)
    _retain(r)
    assert len(r.log.segments) == before and r.log.log_start_offset == 0
    for hw in range(25, 31):
        _retain(r, hw)
        assert r.log.log_start_offset <= hw
        segs = r.log.segments
        ends = [s.base_offset - 1 for s in segs[1:]] + [r.leo - 1]   # last offset of each
        assert all(end >= hw for end in ends)
    _retain(r, r.leo)
    assert len(r.log.segments) == 1
    assert r.log.epochs.entries == [(1, 100)]


@kafka("3.7.0", "UnifiedLogTest", "shouldDeleteTimeBasedSegmentsReadyToBeDeleted")
@kafka("3.7.0", "UnifiedLogTest", "shouldNotDeleteTimeBasedSegmentsWhenNoneReadyToBeDeleted")
@kafka("3.7.0", "UnifiedLogTest", "shouldDeleteSizeBasedSegments")
@kafka("3.7.0", "UnifiedLogTest", "shouldNotDeleteSizeBasedSegmentsWhenUnderRetentionSize")
@pytest.mark.parametrize("policy, segments, log_start_offset", [
    ({"retention_ms": 10_000}, 1, 15),          # all expired: one empty segment, rolled
    ({"retention_ms": 10 * NOW_MS}, 3, 0),      # none old enough
    ({"retention_bytes": 10 * RECORD}, 2, 5),   # the oldest segment covers the excess
    ({"retention_bytes": 15 * RECORD}, 3, 0),   # within retention.bytes
])
def test_retention_by_time_and_size_with_the_hw_at_the_leo(
        policy: dict[str, int], segments: int, log_start_offset: int) -> None:
    """3.7: 15 records written long ago, 5 to a segment (3 segments), the HW at the LEO.
    retention.ms 10 s: every segment goes — the active one after a new empty one is rolled
    at the LEO — leaving one segment and log start offset 15; retention.ms longer than the
    records' age: all 3 stay. retention.bytes of 10 records: the oldest segment goes (2
    remain, log start offset 5); of 15 records: all 3 stay."""
    r = _retaining(15, **policy)
    assert len(r.log.segments) == 3
    _retain(r, r.leo)
    assert (len(r.log.segments), r.log.log_start_offset) == (segments, log_start_offset)
