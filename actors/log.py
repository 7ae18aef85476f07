"""A partition replica's log and the durable files around it (Kafka's ``UnifiedLog``).

What is kept, per replica, on the broker's simulated disk (:class:`BrokerDisk`):

* the records, each stamped with the leader epoch that appended it, grouped in segments
  (base offset, size in bytes, largest timestamp) — the active segment rolls at
  ``segment.bytes`` / ``segment.ms``;
* ``recovery_point``: the flushed prefix. Everything past it lives only in the page cache
  until the kernel writes it back: a process crash keeps it, a power loss drops what was
  not written back yet (Kafka leaves flushing to the page cache: ``flush.messages``/
  ``flush.ms`` are off by default). The kernel's writeback is modelled per file, the
  active segment's (see :class:`PartitionLog`);
* the leader-epoch cache (``leader-epoch-checkpoint``), the HW checkpoint
  (``replication-offset-checkpoint``), the logStartOffset checkpoint and the
  clean-shutdown marker. Checkpoint files are written with fsync, so they survive power
  loss, but they are only as fresh as their last write;
* ``damaged``: the offsets of records (isrlab's record batches) whose bytes on disk no
  longer match their CRC (the ``corrupt_disk`` fault). The damage is on disk: it survives
  crashes and goes only with the record (truncation, retention, deletion). Nothing checks
  it on the leader's read path (``LogSegment.read`` hands out the bytes as they are); a
  follower's append (``UnifiedLog.analyzeAndValidateRecords``) and recovery after an
  unclean shutdown (``LogSegment.recover``) find it by the CRC.

The in-memory high watermark is *not* here: it is volatile and belongs to the replica
state machine, which writes it to the checkpoint on Kafka's schedule.

``LeaderEpochCache`` follows Kafka's ``LeaderEpochFileCache``: ``assign``
keeps the map monotonic, ``end_offset_for`` answers OffsetsForLeaderEpoch and the
diverging-epoch check.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable
from dataclasses import dataclass, field

from actors.messages import Record

UNDEFINED = -1
RECORD_OVERHEAD_BYTES = 70   # a v2 record batch header amortised + record framing


def records_bytes(records: Iterable[Record]) -> int:
    """The bytes ``records`` take on disk and on the wire (framing plus values)."""
    return sum(RECORD_OVERHEAD_BYTES + len(r[1]) for r in records)


@dataclass(slots=True)
class Segment:
    base_offset: int
    size: int = 0
    largest_timestamp: int = -1
    created_ms: int = 0


class LeaderEpochCache:
    """epoch -> start offset of the first record of that epoch (sorted, monotonic), and the
    ``leader-epoch-checkpoint`` file behind it.

    Two generations of Kafka's ``LeaderEpochFileCache``, chosen by ``kafka7415``:

    * 0.11-2.0 (``kafka7415=False``; tags 0.11.0.0, 2.0.0): ``assign`` takes an entry only
      when its epoch is above the latest *and* its start offset is not below the latest's;
      anything else is refused (logged, the cache unchanged). ``endOffsetFor`` of an epoch
      below the first cached one is undefined (the follower falls back to its HW).
    * 2.1+ (``kafka7415=True``; KAFKA-7415, commit f2dd6aa2698): ``assign`` takes any entry
      that differs from the latest in epoch, or has the latest's epoch and a smaller start
      offset, after dropping every entry it conflicts with (``epoch >= new.epoch ||
      startOffset >= new.startOffset``): "we assume that the latest append is always
      accurate". ``endOffsetFor`` of an epoch below the first answers (that epoch, the first
      entry's start offset).

    Every change is written to the checkpoint (``checkpoint``) at once: Kafka writes it in
    ``assign`` synchronously and, since 3.6 (KAFKA-15046), after a truncation in a flush it
    schedules at once; isrlab does not model the gap (docs/fidelity.md).
    """

    __slots__ = ("checkpoint", "entries", "kafka7415")

    def __init__(self, entries: list[tuple[int, int]] | None = None, *,
                 kafka7415: bool = True) -> None:
        self.entries: list[tuple[int, int]] = list(entries or [])
        self.kafka7415 = kafka7415
        #: the leader-epoch-checkpoint file: what survives a power loss
        self.checkpoint: list[tuple[int, int]] = list(self.entries)

    def _write(self) -> None:
        self.checkpoint = list(self.entries)

    def reload(self) -> None:
        """A restart reads the cache back from its checkpoint file."""
        self.entries = list(self.checkpoint)

    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED

    def latest_entry(self) -> tuple[int, int] | None:
        return self.entries[-1] if self.entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """``LeaderEpochFileCache.assign`` of the cache's generation; True when it changed."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        last = self.entries[-1] if self.entries else None
        if not self.kafka7415:
            if last is not None and (epoch <= last[0] or start_offset < last[1]):
                return False   # 0.11-2.0: "once the epoch is assigned it cannot be reassigned"
            self.entries.append((epoch, start_offset))
            self._write()
            return True
        if last is not None and epoch == last[0] and start_offset >= last[1]:
            return False       # isUpdateNeeded
        while self.entries and (self.entries[-1][0] >= epoch
                                or self.entries[-1][1] >= start_offset):
            self.entries.pop()   # maybeTruncateNonMonotonicEntries
        self.entries.append((epoch, start_offset))
        self._write()
        return True

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) as ``LeaderEpochFileCache.endOffsetFor``: the largest cached
        epoch <= ``requested`` and the start offset of the first epoch above it (the LEO for
        the latest epoch); (-1, -1) when undefined."""
        if requested == UNDEFINED or not self.entries:
            return (UNDEFINED, UNDEFINED)
        if requested == self.entries[-1][0]:
            return (requested, log_end_offset)
        higher = next(((e, s) for e, s in self.entries if e > requested), None)
        if higher is None:
            return (UNDEFINED, UNDEFINED)   # above every cached epoch
        floor = None
        for e, s in self.entries:
            if e <= requested:
                floor = (e, s)
        if floor is None:
            # below the first cached epoch
            return (requested, higher[1]) if self.kafka7415 else (UNDEFINED, UNDEFINED)
        return (floor[0], higher[1])

    def start_offset_of(self, epoch: int) -> int:
        for e, s in self.entries:
            if e == epoch:
                return s
        return UNDEFINED

    def truncate_from_end(self, end_offset: int) -> None:
        """``truncateFromEnd``: drop the entries starting at or after ``end_offset``; a
        negative offset changes nothing."""
        if end_offset < 0 or not self.entries or self.entries[-1][1] < end_offset:
            return
        self.entries = [(e, s) for e, s in self.entries if s < end_offset]
        self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        """``truncateFromStart``: the entries starting at or before ``start_offset`` give
        way to one, the latest of them, moved to ``start_offset``."""
        if not self.entries or self.entries[0][1] > start_offset:
            return
        kept: list[tuple[int, int]] = []
        for e, s in self.entries:
            if s <= start_offset:
                kept = [(e, start_offset)]
            else:
                kept.append((e, s))
        if kept != self.entries:
            self.entries = kept
            self._write()

    def clear(self) -> None:
        """``clearAndFlush``: no entries, in memory and in the checkpoint."""
        self.entries = []
        self._write()


@dataclass(slots=True)
class PartitionLog:
    """Durable state of one replica. Mutated by the replica machine; survives crashes.

    Page cache
    ----------
    What a power loss keeps of the unflushed tail is what Linux's flusher wrote back, and
    Linux ages dirty data per file (inode), not per page or record (fs/fs-writeback.c, read
    as of v4.2 and v6.x; the rules below hold in both):

    * ``__mark_inode_dirty`` stamps ``dirtied_when`` only when the inode goes from clean to
      dirty; writes to a file already dirty (or queued for writeback) leave the stamp.
    * The periodic (kupdate) writeback runs every ``dirty_writeback_interval``
      (``wb_check_old_data_flush`` → ``wb_writeback``): ``queue_io`` /
      ``move_expired_inodes`` take every inode whose stamp is at least
      ``dirty_expire_interval`` old, and ``writeback_sb_inodes`` →
      ``__writeback_single_inode`` → ``do_writepages`` writes *all* its dirty pages —
      the young ones too (in chunks of at least 4 MiB, the loop going on while it makes
      progress; isrlab's rates never need a second chunk).
    * ``requeue_inode`` then takes a clean inode off the dirty lists. One redirtied while it
      was being written goes back through ``redirty_tail_locked``, which stamps it with the
      current time when a younger inode is on the device's dirty list, and keeps the old
      stamp otherwise (it is then written again at the next wake-up).

    isrlab models one file per log, the active segment's: older segments were fsynced when
    they rolled (``UnifiedLog.roll`` schedules ``flushUptoOffsetExclusive(new base)`` at
    once; isrlab flushes in the same step), so they lie below the recovery point. The
    flusher's wake-ups fall on the multiples of ``writeback_ms`` and take no time: a
    wake-up at W writes everything appended before W if the file's stamp is at least
    ``expire_ms`` older than W, and the file is clean; the next append (at W or later)
    stamps it again. That is ``redirty_tail_locked``'s re-stamp to within the writeback's
    own duration; its keep-the-old-stamp branch needs the device's dirty list empty, which
    a Kafka host does not have (other partitions' segments and indexes, the
    ``replication-offset-checkpoint`` rewritten every 5 s). So a power loss drops from
    nothing to about ``expire_ms + writeback_ms`` of the tail, depending on where the
    file's stamp fell. Nothing runs on a timer: ``dirtied_ms`` and the wake-up due to
    write the file (``writeback_due_ms``) are settled lazily, at the next append or at the
    power loss. ``writeback_ms = 0`` disables periodic writeback, as in Linux: a power
    loss then keeps exactly what Kafka flushed.
    """

    topic: str
    partition: int
    records: list[Record] = field(default_factory=list)
    log_start_offset: int = 0
    recovery_point: int = 0
    segments: list[Segment] = field(default_factory=lambda: [Segment(0)])
    epochs: LeaderEpochCache = field(default_factory=LeaderEpochCache)
    # checkpoint files (fsynced when written)
    hw_checkpoint: int = 0
    log_start_checkpoint: int = 0
    unflushed_messages: int = 0
    last_flush_ms: int = 0
    # the host's page cache (Linux writeback), per file: see *Page cache* above
    #: vm.dirty_writeback_centisecs in ms: the flusher's wake-up period (0: never wakes)
    writeback_ms: int = 0
    #: vm.dirty_expire_centisecs in ms: how long a file stays dirty before a wake-up writes it
    expire_ms: int = 30_000
    #: when the active segment's file went from clean to dirty (its inode's
    #: ``dirtied_when``); -1: clean
    dirtied_ms: int = -1
    #: the first flusher wake-up that finds that file expired and writes all of it; -1: none
    writeback_due_ms: int = -1
    #: the offset below which the kernel has certainly written the log
    written_back: int = 0
    #: the last power loss's toll, (LEO before, LEO after), until the restart traces it
    power_loss_cut: tuple[int, int] | None = None
    #: offsets of the records damaged on disk, sorted (see the module note)
    damaged: list[int] = field(default_factory=list)
    #: what the last recovery found, (damaged offset, LEO before it cut the log there),
    #: until the restart traces it
    recovery_corruption: tuple[int, int] | None = None

    # -- reading ---------------------------------------------------------------------------
    @property
    def base(self) -> int:
        """Offset of ``records[0]`` (the first record still on disk)."""
        return self.records[0][0] if self.records else self.log_end_offset

    @property
    def log_end_offset(self) -> int:
        if self.records:
            return self.records[-1][0] + 1
        return self.segments[-1].base_offset if self.segments else self.log_start_offset

    def read(self, start: int, end: int, max_records: int) -> tuple[Record, ...]:
        if not self.records or start >= end:
            return ()
        base = self.records[0][0]
        lo = max(0, start - base)
        hi = min(len(self.records), end - base, lo + max_records)
        return tuple(self.records[lo:hi])

    def record_at(self, offset: int) -> Record | None:
        if not self.records:
            return None
        i = offset - self.records[0][0]
        if 0 <= i < len(self.records):
            return self.records[i]
        return None

    def damaged_in(self, start: int, end: int) -> tuple[int, ...]:
        """The damaged offsets in [``start``, ``end``), in order."""
        d = self.damaged
        if not d or start >= end:
            return ()
        return tuple(d[bisect_left(d, start):bisect_left(d, end)])

    def corrupt(self, offset: int) -> int | None:
        """Damage the record at ``offset`` on disk (-1: the last record); the offset
        damaged, or None when the log holds no such record."""
        if offset < 0:
            offset = self.log_end_offset - 1
        if self.record_at(offset) is None:
            return None
        if offset not in self.damaged:
            insort(self.damaged, offset)
        return offset

    def _forget_damage(self, lo: int, hi: int) -> None:
        """The records in [``lo``, ``hi``) left the disk, and their damage with them."""
        if self.damaged:
            self.damaged = [d for d in self.damaged if not lo <= d < hi]

    @property
    def epoch_checkpoint(self) -> list[tuple[int, int]]:
        """The leader-epoch-checkpoint file as last written."""
        return self.epochs.checkpoint

    def last_epoch(self) -> int:
        return self.records[-1][2] if self.records else self.epochs.latest_epoch()

    # -- writing ---------------------------------------------------------------------------
    def append(self, rec: Record, segment_bytes: int, segment_ms: int, now_ms: int) -> bool:
        """Append one record; returns True when the active segment rolled first."""
        rolled = False
        seg = self.segments[-1]
        size = RECORD_OVERHEAD_BYTES + len(rec[1])
        if seg.size > 0 and (seg.size + size > segment_bytes
                             or now_ms - seg.created_ms >= segment_ms):
            self.segments.append(Segment(rec[0], created_ms=now_ms))
            seg = self.segments[-1]
            rolled = True
        if self.writeback_ms > 0:
            # the page cache (*Page cache* above): settled here and at a power loss
            due = self.writeback_due_ms
            if 0 <= due <= now_ms:
                # the wake-up at ``due`` (before this append) wrote the whole file, clean
                self.written_back = rec[0]
                due = -1
            if due < 0 or rolled:
                # a clean file, or the new segment's file, becomes dirty now; writes to a
                # file already dirty do not move its stamp (__mark_inode_dirty)
                self.dirtied_ms = now_ms
                self.writeback_due_ms = self._writeback_due(now_ms)
        self.records.append(rec)
        seg.size += size
        if rec[3] > seg.largest_timestamp:
            seg.largest_timestamp = rec[3]
        latest = self.epochs.latest_entry()
        if latest is None or latest[0] != rec[2] or latest[1] > rec[0]:
            # UnifiedLog.append: maybeAssignEpochStartOffset(batch epoch, base offset); the
            # cache's own rule decides (an older epoch is refused before 2.1, taken after)
            self.epochs.assign(rec[2], rec[0])
        self.unflushed_messages += 1
        return rolled

    def _writeback_due(self, dirtied_ms: int) -> int:
        """The first flusher wake-up (a multiple of ``writeback_ms``) that finds a file
        dirtied at ``dirtied_ms`` expired: at least ``expire_ms`` later, and after the
        write (a wake-up at the same millisecond comes before it)."""
        wb = self.writeback_ms
        earliest = dirtied_ms + max(self.expire_ms, 1)
        return -(-earliest // wb) * wb

    def flush(self, now_ms: int, upto: int | None = None) -> None:
        """Kafka's flush (``fsync``) up to ``upto`` (the LEO when None). It leaves the active
        file's dirty stamp as it was: ext4's and XFS's fsync write the pages and commit the
        journal, but the inode stays on the flusher's dirty list, stamp unchanged, until a
        wake-up finds it expired (``ext4_sync_file``: ``file_write_and_wait_range`` then
        the journal; no ``I_DIRTY`` flag is cleared) — later appends do not stamp it anew.
        Only when nothing is left in the active file (a roll just made it, empty) is there
        no dirty file at all."""
        self.recovery_point = max(self.recovery_point,
                                  self.log_end_offset if upto is None else upto)
        self.unflushed_messages = 0
        self.last_flush_ms = now_ms
        if self.segments[-1].size == 0 and self.recovery_point >= self.log_end_offset:
            # a new, empty active segment (a roll outside append: retention's): its file
            # is not dirty until its first append
            self.dirtied_ms = self.writeback_due_ms = -1
            self.written_back = max(self.written_back, self.log_end_offset)

    def truncate_to(self, offset: int) -> int:
        """Remove every record at or above ``offset``; returns the old LEO."""
        old = self.log_end_offset
        if offset >= old:
            # UnifiedLog.truncateTo: nothing to cut, but the epoch cache is truncated at
            # the LEO all the same — a broker that was leader assigned its epoch's start
            # offset, appended nothing and lost the leadership keeps an entry past its log
            # that makes every truncate-on-fetch request diverge again (a fetch livelock)
            self.epochs.truncate_from_end(old)
            return old
        if offset < self.segments[0].base_offset:
            # UnifiedLog.truncateTo (3.7.0): a target below the first segment restarts the
            # log there (truncateFullyAndStartAt: log start offset = target)
            self.truncate_fully_and_start_at(offset)
            return old
        if self.records:
            keep = max(0, offset - self.records[0][0])
            del self.records[keep:]
        self._forget_damage(offset, old)
        # LocalLog.truncateTo: segments based above the target go, the one holding it is cut
        if len(self.segments) > 1 and self.segments[-1].base_offset > offset:
            # the active file is deleted with its dirty pages; the segment holding the
            # target was flushed when it rolled (it is below the recovery point): clean
            self.dirtied_ms = self.writeback_due_ms = -1
        while len(self.segments) > 1 and self.segments[-1].base_offset > offset:
            self.segments.pop()
        self._resize_active()
        self.epochs.truncate_from_end(offset)
        # "logStartOffset = math.min(targetOffset, logStartOffset)"
        self.log_start_offset = min(self.log_start_offset, offset)
        self.recovery_point = min(self.recovery_point, offset)
        # cut within the active file: its dirty stamp stays (the cut is no write to data)
        self.written_back = min(self.written_back, offset)
        return old

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.records.clear()
        self.damaged = []
        self.segments = [Segment(offset)]
        self.log_start_offset = offset
        self.log_start_checkpoint = offset
        self.recovery_point = offset
        self.written_back = offset
        self.dirtied_ms = self.writeback_due_ms = -1   # new files, empty
        self.epochs.clear()

    def _resize_active(self) -> None:
        seg = self.segments[-1]
        base = seg.base_offset
        recs = [r for r in self.records[max(0, base - self.base):]] if self.records else []
        seg.size = records_bytes(recs)
        seg.largest_timestamp = max((r[3] for r in recs), default=-1)

    def delete_segments_below(self, offset: int) -> list[Segment]:
        """Delete whole segments whose next segment starts at or below ``offset``."""
        gone: list[Segment] = []
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            gone.append(self.segments.pop(0))
        if gone:
            new_base = self.segments[0].base_offset
            if self.records:
                drop = max(0, new_base - self.records[0][0])
                del self.records[:drop]
            self._forget_damage(gone[0].base_offset, new_base)
        return gone

    # -- crashes ---------------------------------------------------------------------------
    def lose_page_cache(self, now_ms: int = 0) -> None:
        """Power loss at ``now_ms``: what Kafka flushed, what the kernel's flusher wrote back
        (*Page cache* in the class note: the whole active file, if a wake-up at or before
        ``now_ms`` found it expired since its last write; else what an earlier wake-up
        wrote) and the checkpoint files survive; then the log is opened as ``LogLoader``
        opens it after a hard failure, keeping the valid records past the recovery point
        (``recoverLog``)."""
        epoch_file, start_file = list(self.epochs.checkpoint), self.log_start_checkpoint
        durable = max(self.recovery_point, self.written_back)
        if 0 <= self.writeback_due_ms <= now_ms:
            # every append came before that wake-up (a later one would have settled it)
            durable = self.log_end_offset
        self.power_loss_cut = (self.log_end_offset, min(durable, self.log_end_offset))
        if self.log_end_offset > durable:
            self.truncate_to(durable)
        self.dirtied_ms = self.writeback_due_ms = -1
        self.written_back = self.log_end_offset
        # the loss writes no checkpoint file: they are as last written
        self.epochs.checkpoint, self.log_start_checkpoint = epoch_file, start_file
        self.epochs.reload()
        if self.log_end_offset < start_file:
            # deleteSegmentsIfLogStartGreaterThanLogEnd: every segment goes, the log
            # restarts empty at the checkpointed log start offset
            self.truncate_fully_and_start_at(start_file)
        self.log_start_offset = max(start_file, self.segments[0].base_offset)
        self.load(unclean=True)

    def load(self, *, unclean: bool) -> None:
        """``LogLoader.load`` (3.7.0) when the broker opens the log. After an unclean
        shutdown the records of the unflushed segments are read again
        (``LogLoader.recoverLog``, ``recoverSegment`` → ``LogSegment.recover``): the first
        damaged record from the segment holding the recovery point on fails its CRC check
        (``RecordBatch.ensureValid``, CorruptRecordException), the segment is cut there and
        the segments after it are deleted ("Corruption found in segment ..."); damage in the
        flushed segments before it is not looked at. The records kept from the recovery
        point on assign their epochs when above the cache's latest. In every case the cache
        is then cut to the log at both ends (``truncateFromEnd(nextOffset)``;
        ``truncateFromStart(logStartOffset)``: "the earliest leader epoch may not be flushed
        during a hard failure")."""
        if unclean:
            # LogSegments.values(recoveryPoint, ...) starts at the segment that includes
            # the recovery point, not at the recovery point itself
            base = self.segments[0].base_offset
            for seg in self.segments:
                if seg.base_offset <= self.recovery_point:
                    base = seg.base_offset
            d = self.damaged
            i = bisect_left(d, base)
            if i < len(d) and d[i] < self.log_end_offset:
                leo = self.log_end_offset
                self.truncate_to(d[i])
                self.recovery_corruption = (d[i], leo)
                if self.log_end_offset < self.log_start_checkpoint:
                    # deleteSegmentsIfLogStartGreaterThanLogEnd
                    self.truncate_fully_and_start_at(self.log_start_checkpoint)
            for rec in self.read(self.recovery_point, self.log_end_offset, 1 << 62):
                if rec[2] > self.epochs.latest_epoch():
                    self.epochs.assign(rec[2], rec[0])
        self.epochs.truncate_from_end(self.log_end_offset)
        self.epochs.truncate_from_start(self.log_start_offset)


class BrokerDisk:
    """Everything a broker keeps across restarts."""

    def __init__(self, *, writeback_ms: int = 0, expire_ms: int = 30_000) -> None:
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.clean_shutdown = False
        self.crashes = 0
        #: the host's writeback settings (vm.dirty_writeback_centisecs / _expire_centisecs)
        self.writeback_ms = writeback_ms
        self.expire_ms = expire_ms

    def log(self, topic: str, partition: int) -> PartitionLog:
        key = (topic, partition)
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = PartitionLog(topic, partition, writeback_ms=self.writeback_ms,
                                                expire_ms=self.expire_ms)
        return log

    def delete_log(self, topic: str, partition: int) -> None:
        """The replica was removed from this broker: its log directory is deleted."""
        self.logs.pop((topic, partition), None)

    def crash(self, power_loss: bool, now_ms: int = 0) -> None:
        self.clean_shutdown = False
        self.crashes += 1
        if power_loss:
            for key in sorted(self.logs):
                self.logs[key].lose_page_cache(now_ms)


class NoDisk:
    """Clients and the controller keep nothing across restarts in this model.

    (The controller's state is the metadata quorum in KRaft / ZooKeeper: it is kept in
    :class:`ControllerStore`, which survives controller crashes.)
    """

    def crash(self, power_loss: bool, now_ms: int = 0) -> None:
        return None
