"""The operating system's page cache (issue 18, item 4; issue 49, item 3): Linux writes dirty
pages back on its own — the flusher wakes every ``vm.dirty_writeback_centisecs`` and writes
every *file* that has been dirty longer than ``vm.dirty_expire_centisecs``, all of its dirty
pages at once (fs/fs-writeback.c: ``__mark_inode_dirty`` stamps ``dirtied_when`` on a file's
first dirtying write only; ``wb_writeback`` for kupdate, ``writeback_sb_inodes``,
``requeue_inode``/``redirty_tail_locked``) — so a power loss drops from nothing to about
expiry + wake-up interval of a log's tail, not everything since Kafka's last flush. Kafka's
recovery (``LogLoader.recoverLog``) then keeps the valid records past the recovery point.
The file is the active segment's: a roll fsyncs the old one (``UnifiedLog.roll``)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from actors.log import PartitionLog, Segment
from emulator.cluster import run
from emulator.scenario import load
from traces.writer import TraceWriter

SCENARIO = """
name = "page-cache"
description = "one broker, a record every 100 ms for 70 s, then a power loss"
protocol = "4.1"
duration_s = 70.0
heal_s = 20.0

[cluster]
brokers = 1
"vm.dirty_writeback_centisecs" = {writeback}
"vm.dirty_expire_centisecs" = 3000

[[topics]]
name = "orders"
partitions = 1
"replication.factor" = 1
"min.insync.replicas" = 1

[network]
delay = {{ dist = "constant", ms = 1.0 }}

[[producers]]
topic = "orders"
rate = 10
acks = "1"
"enable.idempotence" = false

[[faults.plan]]
at_s = 62.3
fault = "power_loss"
target = "broker-1"
duration_s = 1.0
"""


def _survivors(tmp_path: Path, writeback: int) -> tuple[int, int, list[dict[str, Any]]]:
    """(LEO before the power loss, LEO after it, the trace)."""
    f = tmp_path / f"wb{writeback}.toml"
    f.write_text(SCENARIO.format(writeback=writeback))
    buf = io.BytesIO()
    res = run(load(str(f)), 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    evs = [orjson.loads(x) for x in buf.getvalue().splitlines()]
    crash = next(e for e in evs if e["event"] == "node_crash")
    before = max(e["offset"] for e in evs if e["event"] == "produce_ack"
                 and e["ts_us"] <= crash["ts_us"]) + 1
    (recovery,) = [e for e in evs if e["event"] == "log_recovery"
                   and e["ts_us"] > crash["ts_us"]]
    return before, recovery["leo"], evs


def test_a_power_loss_drops_only_what_the_flusher_had_not_written_back(
        tmp_path: Path) -> None:
    """Defaults (wake every 5 s, write what is 30 s old). The log's file is first dirtied by
    the append at 0.105 s, so the wake-up at 35 s finds it expired and writes all of it —
    every record appended before 35 s, the one of 34.9 s too; the append just after makes it
    dirty again, due at 70 s. The power loss at 62.3 s keeps those 350 records and drops the
    27.3 s since (about 273 at 10/s), although Kafka never flushed."""
    before, after, evs = _survivors(tmp_path, 500)
    lost = before - after
    (recovery,) = [e for e in evs if e["event"] == "log_recovery"]
    assert (recovery["power_loss_leo"], recovery["kept_leo"]) == (before, after)
    appended_by_35s = max(e["new"] for e in evs if e["event"] == "leo_update"
                          and e["ts_us"] < 35_000_000)
    assert after == appended_by_35s == 350
    assert 270 <= lost <= 276
    assert not [e for e in evs if e["event"] == "log_flush"]


def test_with_writeback_disabled_a_power_loss_drops_everything_since_kafkas_flush(
        tmp_path: Path) -> None:
    """``vm.dirty_writeback_centisecs = 0`` (no periodic writeback: ``wb_check_old_data_flush``
    returns at once): nothing Kafka did not flush survives — here, with no flush at all, the
    whole log."""
    before, after, _ = _survivors(tmp_path, 0)
    assert before > 600 and after == 0


# -- the rules, one by one, on a log alone --------------------------------------------------
NEVER_ROLL = 1 << 40


def _log(writeback_ms: int = 5000, expire_ms: int = 30_000) -> PartitionLog:
    return PartitionLog("t", 0, writeback_ms=writeback_ms, expire_ms=expire_ms)


def _append(log: PartitionLog, at_ms: int) -> bool:
    o = log.log_end_offset
    return log.append((o, f"v{o}", 0, at_ms, -1, -1, None), 1 << 30, NEVER_ROLL, at_ms)


def _kept_at(log: PartitionLog, at_ms: int) -> int:
    log.lose_page_cache(now_ms=at_ms)
    return log.log_end_offset


def _every_second(log: PartitionLog, first_s: int, last_s: int) -> None:
    for s in range(first_s, last_s + 1):
        _append(log, 1000 * s)


@pytest.mark.parametrize("at_ms, kept", [
    (34_999, 0),       # the file was dirtied at 1 s: not yet 30 s old at the wake-up of 30 s
    (35_000, 34),      # the wake-up at 35 s writes all of it: every record of 1 s .. 34 s
    (41_000, 34),      # ... but only what was there: 35 s on re-dirtied it, due at 65 s
    (64_999, 34),
    (65_000, 64),      # the wake-up at 65 s writes the file again: 35 s .. 64 s
])
def test_the_flusher_writes_a_whole_file_once_its_first_write_is_expire_old(
        at_ms: int, kept: int) -> None:
    """One record a second from 1 s until the power loss at ``at_ms``: a wake-up writes the
    file whole, the records appended a moment before it as well as the 30-s-old ones, once
    the file's stamp — its first write since it was last clean — is ``expire`` old."""
    log = _log()
    _every_second(log, 1, at_ms // 1000)
    assert _kept_at(log, at_ms) == kept


def test_later_writes_to_a_dirty_file_do_not_move_its_stamp() -> None:
    """``__mark_inode_dirty`` stamps only the clean-to-dirty write: a file written every
    second since 1 s is due at the first wake-up 30 s after 1 s, however recent its last
    write."""
    log = _log()
    _every_second(log, 1, 33)
    assert (log.dirtied_ms, log.writeback_due_ms) == (1000, 35_000)


def test_after_a_writeback_the_next_write_stamps_the_file_anew() -> None:
    """Written whole at 35 s, the file is clean; the append at 35.5 s dirties it again
    (``requeue_inode`` takes a clean inode off the lists; redirtied while being written,
    ``redirty_tail_locked`` re-stamps it with the current time), so it is next written at
    the first wake-up at least 30 s later: 70 s, not 40 s."""
    log = _log()
    _append(log, 1000)
    _append(log, 35_500)
    assert (log.written_back, log.dirtied_ms, log.writeback_due_ms) == (1, 35_500, 70_000)
    assert _kept_at(log, 69_999) == 1


def test_a_wake_up_comes_before_the_writes_of_its_own_millisecond() -> None:
    """A record appended at the very millisecond of the wake-up is not in what that wake-up
    wrote; a power loss at that millisecond comes after the wake-up."""
    log = _log()
    _append(log, 5000)       # due at 35 s
    _append(log, 35_000)     # after the wake-up of 35 s: dirties the file again
    assert _kept_at(log, 35_000) == 1


def test_a_zero_expiry_writes_a_file_at_the_first_wake_up_after_its_write() -> None:
    """``vm.dirty_expire_centisecs = 0``: every dirty file is expired, so the next wake-up
    writes it — but not one at the same millisecond as the write."""
    log = _log(expire_ms=0)
    _append(log, 10_000)
    assert log.writeback_due_ms == 15_000
    assert _kept_at(log, 15_000) == 1


def test_writeback_goes_on_while_nothing_is_appended() -> None:
    """Nothing runs on a timer: the wake-up that writes the file is settled at the power
    loss, however long after the last append (the broker process may have been down)."""
    log = _log()
    _every_second(log, 1, 10)
    assert _kept_at(log, 600_000) == 10


def test_a_power_loss_loses_from_nothing_to_expiry_plus_interval_of_a_steady_writer() -> None:
    """A record every 100 ms (at 50 ms past each tenth of a second) for up to 200 s; a power
    loss at every half second from 100 s to 200 s. Per-file ageing loses anything from
    nothing (just after a wake-up wrote the file) to about 35 s of records (just before the
    next one does) — not always the last 30-35 s, as per-record ageing did."""
    losses = []
    for crash in range(100_000, 200_000, 500):
        log = _log()
        for t in range(50, crash, 100):
            _append(log, t)
        leo = log.log_end_offset
        losses.append(leo - _kept_at(log, crash))
    assert min(losses) == 0
    assert 345 <= max(losses) <= 350
    assert sorted(losses)[len(losses) // 2] < 200    # the median: far less than 30 s


def test_kafkas_flush_does_not_stamp_the_file_anew() -> None:
    """Kafka's fsync (``log.flush.interval.*``) writes the pages but leaves the inode on the
    dirty list with its stamp (``ext4_sync_file``: ``file_write_and_wait_range`` and a
    journal commit; no dirty flag cleared): what is appended after the flush is written at
    the wake-up the first write was due for."""
    log = _log()
    _every_second(log, 1, 10)
    log.flush(10_000)
    _every_second(log, 11, 34)
    assert log.recovery_point == 10 and log.writeback_due_ms == 35_000
    assert _kept_at(log, 35_000) == 34


def test_a_roll_starts_a_new_file_with_its_own_stamp() -> None:
    """A roll fsyncs the old segment (``UnifiedLog.roll``: ``flushUptoOffsetExclusive`` of
    the new base) and the new segment is a new file, dirtied by its first append: its
    records wait for a wake-up 30 s after the roll (40 s), not the one the old file's stamp
    of 1 s was due for (35 s)."""
    log = _log()
    size = 70 + 2   # one record's bytes ("vN", N < 10)
    for o, at_ms in enumerate([1000, 2000, 3000, 10_000, 11_000]):
        if log.append((o, f"v{o}", 0, 0, -1, -1, None), 3 * size, NEVER_ROLL, at_ms):
            log.flush(at_ms, upto=o)   # what the replica does on a roll
    assert [seg.base_offset for seg in log.segments] == [0, 3]
    assert (log.dirtied_ms, log.writeback_due_ms) == (10_000, 40_000)
    assert _kept_at(log, 37_000) == 3     # the old segment, flushed at the roll


def test_a_roll_by_retention_leaves_no_dirty_file() -> None:
    """Retention rolls an empty active segment and flushes the old one up to the LEO: the
    new file holds nothing until its first append, which stamps it."""
    log = _log()
    _every_second(log, 1, 5)
    log.segments.append(Segment(5, created_ms=6000))
    log.flush(6000, upto=5)
    assert (log.dirtied_ms, log.writeback_due_ms) == (-1, -1)
    _append(log, 20_000)
    assert log.writeback_due_ms == 50_000


def test_truncation_within_the_active_file_keeps_its_stamp() -> None:
    """A follower's truncation cuts the active file: its pages past the cut go, the file
    stays dirty with the stamp it had."""
    log = _log()
    _every_second(log, 1, 10)
    log.truncate_to(4)
    _every_second(log, 11, 20)
    assert (log.dirtied_ms, log.writeback_due_ms) == (1000, 35_000)
    assert _kept_at(log, 35_000) == 14


def test_truncation_into_a_flushed_segment_leaves_a_clean_file() -> None:
    """Truncating below the active segment deletes its file with its dirty pages; the
    segment holding the target was fsynced when it rolled, so it is clean, and the next
    append stamps it."""
    log = _log()
    size = 70 + 2
    for s in range(1, 6):
        if log.append((s - 1, f"v{s - 1}", 0, 0, -1, -1, None), 3 * size, NEVER_ROLL,
                      1000 * s):
            log.flush(1000 * s, upto=s - 1)
    log.truncate_to(2)
    assert log.segments[-1].base_offset == 0 and log.recovery_point == 2
    assert (log.dirtied_ms, log.writeback_due_ms) == (-1, -1)
    _append(log, 10_000)
    assert log.writeback_due_ms == 40_000
    assert _kept_at(log, 39_999) == 2


def test_after_a_power_loss_the_log_is_clean_on_disk() -> None:
    """What recovery kept is on disk: the next write dirties a clean file."""
    log = _log()
    _every_second(log, 1, 40)
    assert _kept_at(log, 40_500) == 34
    assert (log.dirtied_ms, log.writeback_due_ms, log.written_back) == (-1, -1, 34)
    _append(log, 41_000)
    assert log.writeback_due_ms == 75_000


def test_with_writeback_disabled_only_kafkas_flush_survives() -> None:
    """``writeback_ms = 0``: no wake-up ever writes the file."""
    log = _log(writeback_ms=0)
    _every_second(log, 1, 100)
    log.flush(50_000, upto=20)
    assert log.writeback_due_ms == -1
    assert _kept_at(log, 1_000_000) == 20
