"""Opening a log after a crash (isrlab's ``PartitionLog.load`` and ``lose_page_cache``), held
against Kafka's ``LogLoaderTest`` at 3.7.0 (issue 17: recovery after power loss).

isrlab's disk model: a process crash keeps everything written (the page cache survives); a
power loss keeps the flushed prefix (up to the recovery point) and the checkpoint files as
last written. Kafka's tests reach the same states by closing a log and reopening it with a
chosen recovery point, or by corrupting a segment file.
"""

from __future__ import annotations

from harness import rec
from kafkacite import kafka

from actors.log import PartitionLog

NEVER_ROLL_MS = 1 << 40


def _append(log: PartitionLog, *epochs: int, roll_each: bool = False) -> None:
    for epoch in epochs:
        seg_bytes = 1 if roll_each else 1 << 30
        o = log.log_end_offset
        if log.append(rec(o, epoch), seg_bytes, NEVER_ROLL_MS, 0):
            log.flush(0, upto=o)   # a roll flushes the rolled segment


@kafka("3.7.0", "LogLoaderTest", "testLogRecoversForLeaderEpoch")
def test_recovery_rebuilds_epoch_entries_lost_from_the_cache_from_the_records() -> None:
    """Records of epochs 1, 2, 2, 3 give the cache (1, 0), (2, 1), (3, 3). With entries
    deliberately cut from it (truncateFromEnd(2)), an unclean open re-reads the unflushed
    records and the cache is whole again."""
    log = PartitionLog("t", 0)
    _append(log, 1, 2, 2, 3)
    assert log.epochs.entries == [(1, 0), (2, 1), (3, 3)]
    log.epochs.truncate_from_end(2)
    assert log.epochs.entries == [(1, 0), (2, 1)]
    log.epochs.reload()          # reopened: the cache is read from its checkpoint file
    log.load(unclean=True)
    assert log.epochs.entries == [(1, 0), (2, 1), (3, 3)]


@kafka("3.7.0", "LogLoaderTest", "testLogRecoversToCorrectOffset")
def test_an_unclean_open_keeps_the_records_and_moves_the_recovery_point_only_on_flush(
) -> None:
    """100 records on disk after a process crash, recovery point 10: the open keeps all 100
    (LEO 100) and leaves the recovery point at 10 — it advances only when the log is
    flushed, to the LEO."""
    log = PartitionLog("t", 0)
    _append(log, *([0] * 100))
    log.recovery_point = 10
    log.load(unclean=True)
    assert (log.log_end_offset, log.recovery_point) == (100, 10)
    log.flush(0)
    assert log.recovery_point == 100


@kafka("3.7.0", "LogLoaderTest", "testLogEndLessThanStartAfterReopen")
def test_a_log_recovered_below_its_start_offset_restarts_empty_at_the_start_offset() -> None:
    """Five records in five segments, the log start offset moved to 4 and checkpointed; a
    power loss leaves only offset 0 flushed (Kafka: a corrupt segment truncated at 1). The
    recovered log would end below its start offset, so every segment goes and the log
    restarts empty at 4: log start offset 4, LEO 4, one segment based at 4."""
    log = PartitionLog("t", 0)
    _append(log, 0, 0, 0, 0, 0, roll_each=True)
    assert len(log.segments) == 5 and log.log_end_offset == 5
    log.log_start_offset = log.log_start_checkpoint = 4
    log.delete_segments_below(4)
    log.recovery_point = 1
    log.lose_page_cache()
    assert (log.log_start_offset, log.log_end_offset) == (4, 4)
    assert [s.base_offset for s in log.segments] == [4] and log.records == []
    assert log.epochs.entries == []


@kafka("3.7.0", "LogLoaderTest", "testLogRecoveryIsCalledUponBrokerCrash")
def test_a_power_loss_keeps_the_flushed_prefix_and_the_cache_up_to_it() -> None:
    """3.7: after a hard failure the log is recovered: records past the recovery point are
    gone (isrlab: a power loss drops them), the epoch cache is cut to what is left, and the
    log start offset comes from its checkpoint."""
    log = PartitionLog("t", 0)
    _append(log, 0, 0, 1, 1, 2, 2)
    log.flush(0, upto=3)
    log.log_start_checkpoint = 0
    log.lose_page_cache()
    assert log.log_end_offset == 3 and [r[0] for r in log.records] == [0, 1, 2]
    assert log.epochs.entries == [(0, 0), (1, 2)]
    assert log.log_start_offset == 0
