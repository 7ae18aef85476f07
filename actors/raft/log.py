"""The replicated log the Raft core needs: Kafka 3.7.0 ``ReplicatedLog``, as ``MockLog`` runs it.

A log of entries ``(offset, epoch, record)`` with an epoch cache (``epochStartOffsets``: the
first offset of each epoch, in order). What the core asks of it (``ReplicatedLog``):

* ``endOffset`` (the LEO) and ``lastFetchedEpoch`` (the epoch of the cache's last entry, 0
  for an empty log): together the (offset, epoch) a candidate's Vote carries and a
  follower's Fetch starts from;
* ``endOffsetForEpoch(epoch)``: the end of the largest epoch <= ``epoch`` — the start offset
  of the first later epoch, paired with the epoch before it; the LEO and last epoch when no
  later epoch is cached. An epoch below the first cached one answers (its start, 0);
* ``validateOffsetAndEpoch(offset, epoch)`` (the interface's default method): a fetch at
  (offset, lastFetchedEpoch) is *valid* when this log holds ``epoch`` up to at least
  ``offset``, else *diverging* at ``endOffsetForEpoch(epoch)`` — the DivergingEpoch a leader
  answers; (0, any) on a log starting at 0 is always valid;
* ``truncateToEndOffset(divergingEpoch)`` (default method): a follower truncates to the
  smaller of the leader's end offset and its own end of that epoch, or — when it does not
  have that epoch — to its own end of the largest epoch below it;
* ``initializeLeaderEpoch(epoch)``: a new leader caches its epoch at its LEO before its
  first append (entries at or after the LEO, or of an epoch >= the new one, are dropped);
* ``truncateTo`` refuses to go below the high watermark, and the high watermark only rises
  and never passes the LEO (``MockLog.truncateTo``, ``updateHighWatermark``).

No snapshots and no log start offset above 0 (``FetchSnapshot`` is not modelled:
docs/fidelity.md). Appends are flushed at once: what is in the log is on disk, and the
shell decides what a crash keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from actors.raft.election import OffsetAndEpoch
from actors.raft.errors import IllegalArgumentError

Entry = tuple[int, int, Any]
"""(offset, epoch, record): one record of the replicated log."""


@dataclass(frozen=True, slots=True)
class ValidOffsetAndEpoch:
    """Kafka's ``ValidOffsetAndEpoch``: ``kind`` "valid" or "diverging"."""

    kind: str
    offset_and_epoch: OffsetAndEpoch


@dataclass(slots=True)
class RaftLog:
    """An in-memory ``ReplicatedLog`` with ``MockLog``'s semantics (see the module note)."""

    entries: list[Entry] = field(default_factory=list)
    #: (epoch, start offset), in offset order: ``MockLog.epochStartOffsets``
    epoch_start_offsets: list[tuple[int, int]] = field(default_factory=list)
    high_watermark: int = 0

    # -- reading -------------------------------------------------------------------------
    @property
    def start_offset(self) -> int:
        return self.entries[0][0] if self.entries else 0

    @property
    def end_offset(self) -> int:
        return self.entries[-1][0] + 1 if self.entries else 0

    @property
    def last_fetched_epoch(self) -> int:
        return self.epoch_start_offsets[-1][0] if self.epoch_start_offsets else 0

    def end_offset_and_epoch(self) -> OffsetAndEpoch:
        """``KafkaRaftClient.endOffset()``: (LEO, lastFetchedEpoch)."""
        return OffsetAndEpoch(epoch=self.last_fetched_epoch, offset=self.end_offset)

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """``MockLog.endOffsetForEpoch``."""
        lower_epoch = 0
        for cached_epoch, start in self.epoch_start_offsets:
            if cached_epoch > epoch:
                return OffsetAndEpoch(epoch=lower_epoch, offset=start)
            lower_epoch = cached_epoch
        return self.end_offset_and_epoch()

    def validate_offset_and_epoch(self, offset: int, epoch: int) -> ValidOffsetAndEpoch:
        """``ReplicatedLog.validateOffsetAndEpoch`` (no snapshots)."""
        if self.start_offset == 0 and offset == 0:
            return ValidOffsetAndEpoch("valid", OffsetAndEpoch(epoch=0, offset=0))
        end = self.end_offset_for_epoch(epoch)
        if end.epoch != epoch or end.offset < offset:
            return ValidOffsetAndEpoch("diverging", end)
        return ValidOffsetAndEpoch("valid", OffsetAndEpoch(epoch=epoch, offset=offset))

    def read(self, start_offset: int, max_records: int | None = None) -> tuple[Entry, ...]:
        """The entries from ``start_offset`` to the LEO (``Isolation.UNCOMMITTED``)."""
        first = start_offset - self.start_offset
        if first < 0 or start_offset > self.end_offset:
            raise IllegalArgumentError(f"read at {start_offset} outside the log "
                                       f"[{self.start_offset}, {self.end_offset}]")
        last = len(self.entries) if max_records is None else first + max_records
        return tuple(self.entries[first:last])

    def committed(self, start_offset: int) -> tuple[Entry, ...]:
        """The entries from ``start_offset`` below the high watermark
        (``Isolation.COMMITTED``): what a listener may apply."""
        return tuple(e for e in self.read(start_offset) if e[0] < self.high_watermark)

    # -- writing -------------------------------------------------------------------------
    def _append(self, offset: int, epoch: int, record: Any) -> None:
        if epoch > self.last_fetched_epoch:
            self.epoch_start_offsets.append((epoch, offset))
        self.entries.append((offset, epoch, record))

    def append_as_leader(self, records: Sequence[Any], epoch: int) -> tuple[int, int]:
        """Append ``records`` in ``epoch`` at the LEO; returns (first, last) offset."""
        if not records:
            raise IllegalArgumentError("attempt to append an empty record set")
        first = self.end_offset
        for record in records:
            self._append(self.end_offset, epoch, record)
        return first, self.end_offset - 1

    def append_as_follower(self, entries: Iterable[Entry]) -> tuple[int, int]:
        """Append the leader's entries, which must start at the LEO."""
        first = self.end_offset
        for offset, epoch, record in entries:
            if offset != self.end_offset:
                raise IllegalArgumentError(
                    f"unexpected append offset {offset}, log end offset {self.end_offset}")
            self._append(offset, epoch, record)
        if self.end_offset == first:
            raise IllegalArgumentError("attempt to append an empty record set")
        return first, self.end_offset - 1

    def initialize_leader_epoch(self, epoch: int) -> None:
        """``MockLog.initializeLeaderEpoch``."""
        start = self.end_offset
        self.epoch_start_offsets = [(e, s) for e, s in self.epoch_start_offsets
                                    if s < start and e < epoch]
        self.epoch_start_offsets.append((epoch, start))

    def truncate_to(self, offset: int) -> None:
        """``MockLog.truncateTo``: drop entries at or after ``offset``."""
        if offset < self.high_watermark:
            raise IllegalArgumentError(f"illegal attempt to truncate to {offset}, below the "
                                       f"high watermark {self.high_watermark}")
        self.entries = [e for e in self.entries if e[0] < offset]
        self.epoch_start_offsets = [(e, s) for e, s in self.epoch_start_offsets if s < offset]

    def truncate_to_end_offset(self, end: OffsetAndEpoch) -> int:
        """``ReplicatedLog.truncateToEndOffset``: truncate on a DivergingEpoch answer;
        returns the truncation offset."""
        if end.epoch == 0:
            offset = min(end.offset, self.end_offset)
        else:
            local = self.end_offset_for_epoch(end.epoch)
            offset = min(local.offset, end.offset) if local.epoch == end.epoch else local.offset
        self.truncate_to(offset)
        return offset

    def update_high_watermark(self, offset: int) -> None:
        """``MockLog.updateHighWatermark``: monotonic, never past the LEO."""
        if offset < self.high_watermark:
            raise IllegalArgumentError(
                f"non-monotonic high watermark {self.high_watermark} -> {offset}")
        if offset > self.end_offset:
            raise IllegalArgumentError(
                f"high watermark {offset} beyond the log end offset {self.end_offset}")
        self.high_watermark = offset
