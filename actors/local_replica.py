"""A partition replica's shared state: Kafka's ``Partition`` fields and ``UnifiedLog`` writes.

:class:`LocalReplica` owns every field of a partition replica — whether the broker hosts
it, role, leader and epochs, assignment and ISR, the HW, the leader's per-follower
:class:`~actors.replica_state.FollowerState` and its purgatories (:class:`DelayedProduce`,
:class:`ParkedFetch`: Kafka's ``DelayedProduce``/``DelayedFetch``), the follower's fetch
state — declared in one ``__init__``, and the operations both sides call: the HW update
(traced as ``hw_update``), appends with segment rolls and flushes, ``truncateTo``,
``maybeIncrementLogStartOffset``, the retention pass (``UnifiedLog.deleteOldSegments``)
and recovery from the checkpoints on start (Kafka's ``UnifiedLog``/``LogLoader``: log start
offset, retention, recovery point). With it live the settings a replica reads
(:class:`ReplicaConfig`) and what it tells the broker's replica manager
(:class:`FetcherHost`). It knows neither side: the leader side (:mod:`actors.partition`) and
the follower side (:mod:`actors.fetch_state`) build on it, and
:class:`actors.replica.Replica` combines them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from actors.core import Address, Machine
from actors.eras import Rules
from actors.log import UNDEFINED, PartitionLog, Segment
from actors.messages import DeleteRecords, Fetch, Produce, Record
from actors.replica_state import FollowerState

CONTROLLER: Address = ("controller", "controller")

#: the replica a :class:`FetcherHost` is handed (:class:`actors.replica.Replica`, which
#: this module must not import: it builds on this one)
R_contra = TypeVar("R_contra", contravariant=True)


class FetcherHost(Protocol[R_contra]):
    """What a replica tells the broker's replica manager (:mod:`actors.replica_manager`),
    which runs it in one task with the broker's fetcher threads (:mod:`actors.fetcher`)."""

    def follow(self, replica: R_contra) -> None: ...
    def unfollow(self, replica: R_contra) -> None: ...
    def wake(self, replica: R_contra) -> None: ...
    def leader_progress(self, replica: R_contra) -> None: ...


class InvariantViolation(AssertionError):
    """A live sanity invariant broke (only raised when invariants are switched on)."""


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    """The Kafka settings a replica reads (names in Kafka's spelling live in the scenario)."""

    replica_lag_time_max_ms: int = 30000
    replica_lag_max_messages: int = 0
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_records: int = 2000
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30000
    hw_checkpoint_interval_ms: int = 5000
    log_flush_interval_messages: int = 2**63 - 1
    log_flush_interval_ms: int = 2**63 - 1
    min_insync_replicas: int = 1
    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    retention_check_interval_ms: int = 300000
    invariants: bool = False


@dataclass(slots=True)
class DelayedProduce:
    src: Address
    req: Produce
    required_offset: int
    base_offset: int
    token: int
    handle: int = 0          # the timeout timer (cancelled once answered)


@dataclass(slots=True)
class ParkedFetch:
    src: Address
    req: Fetch
    token: int
    handle: int = 0          # the max-wait timer (cancelled once answered)


class LocalReplica(Machine):
    """The state of one partition replica and its log's write path (see the module note);
    :class:`actors.replica.Replica` is the machine that runs it."""

    def __init__(self, node: str, broker_id: int, log: PartitionLog, rules: Rules,
                 cfg: ReplicaConfig, *, clean_start: bool, hosted: bool = True) -> None:
        super().__init__(node, f"{log.topic}-{log.partition}")
        #: False while this broker is not a replica of the partition (Kafka's
        #: ``HostedPartition.None``): it has no log, answers NOT_LEADER_OR_FOLLOWER, and
        #: becomes one when a reassignment adds the broker (:meth:`create_log`)
        self.hosted = hosted
        self.broker_id = broker_id
        self.topic = log.topic
        self.partition = log.partition
        self.log = log
        log.epochs.kafka7415 = rules.epoch_cache_kafka7415
        self.rules = rules
        self.cfg = cfg
        self.clean_start = clean_start
        self.role = "none"
        self.hw = 0
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.controller_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.maximal_isr: tuple[int, ...] = ()
        self.pending_isr: tuple[int, ...] | None = None
        self.leso = UNDEFINED
        self.followers: dict[int, FollowerState] = {}
        self.broker_epochs: dict[int, tuple[int, bool]] = {}
        self.delayed: list[DelayedProduce] = []
        self.parked: list[ParkedFetch] = []
        self.producers: dict[int, tuple[int, int]] = {}   # pid -> (last seq, last offset)
        self.delayed_deletes: list[tuple[Address, DeleteRecords, int, int]] = []
        self._token = 0
        self._correlation = 0
        self._outstanding = -1           # follower: correlation of the request in flight
        self._fetch_timer = 0              # follower: its timeout timer's handle
        #: follower: the request in flight is an OffsetsForLeaderEpoch (truncation pending)
        self._outstanding_is_epoch = False
        self._fetch_gen = 0              # bumps on every role change: stale timers ignored
        self._highest_epoch_seen = -1
        self._alter_token = -1
        #: the token of the no-answer timer of the AlterPartition in flight (-1: none)
        self._alter_sent_token = -1
        self._leader_hw_seen = (-1, 0)
        #: the broker's replica manager when the replica runs in one (the cluster); None
        #: when it runs alone (the conformance harness): then it fetches by itself, one
        #: partition per request, as a fetcher thread carrying one partition would
        self.host: FetcherHost[Any] | None = None
        #: follower: Kafka's ``PartitionFetchState`` — what its fetcher thread is to do for
        #: it ("truncating": OffsetsForLeaderEpoch; "fetching"), "failed" once fenced
        #: (FENCED_LEADER_EPOCH: out of the fetcher until a new leader epoch), "idle" when
        #: not following; and, with a host, until when it is delayed after an error
        #: (``replica.fetch.backoff.ms``; 0: not delayed). A delay keeps the state.
        self.fetch_state = "idle"
        self.fetch_delay_until_us = 0
        #: follower, while truncating (0.11-2.1): the fetch state's offset — the HW when
        #: the partition was added, then each intermediate (KIP-279) truncation's offset;
        #: an undefined epoch answer truncates there
        self.fetch_offset = 0
        #: follower, 2.8+: the fetch state's ``lastFetchedEpoch`` — the cache's latest
        #: epoch when the state is built or after a truncation, the last appended batch's
        #: epoch after an append (-1: none)
        self.last_fetched_epoch = -1
        #: follower: the leader's HW in its last answer (how far behind it this replica is)
        self.leader_hw = 0

    # -- helpers -------------------------------------------------------------------------
    @property
    def leo(self) -> int:
        # PartitionLog.log_end_offset's common case inlined (read millions of times a run)
        recs = self.log.records
        return recs[-1][0] + 1 if recs else self.log.log_end_offset

    def _next_token(self) -> int:
        self._token += 1
        return self._token

    def _next_correlation(self) -> int:
        self._correlation += 1
        return self._correlation

    def _tp(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "replica": self.broker_id}

    def _addr(self, broker: int) -> Address:
        return (f"broker-{broker}", self.name)

    def effective_min_isr(self) -> int:
        return min(self.cfg.min_insync_replicas, max(1, len(self.replicas)))

    def statistics(self) -> dict[str, Any]:
        return {"role": self.role, "leo": self.leo, "hw": self.hw,
                "log_start_offset": self.log.log_start_offset,
                "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "leader": self.leader, "replicas": list(self.replicas)}

    def _load(self) -> None:
        log = self.log
        log.load(unclean=not self.clean_start)
        # the HW checkpoint, clamped to the log as opened (UnifiedLog.updateHighWatermark)
        hw = min(max(log.hw_checkpoint, log.log_start_offset), log.log_end_offset)
        found = log.recovery_corruption
        if found is not None:
            # LogSegment.recover hit a record whose CRC does not match: LogLoader cut the
            # log there (a power loss's recovery did it when the power went)
            log.recovery_corruption = None
            offset, before = found
            self.emit("corrupt_record", **self._tp(), offset=offset, where="recovery",
                      old_leo=before, new_leo=log.log_end_offset)
            if before > log.log_end_offset:
                self.emit("log_truncate", **self._tp(), old_leo=before,
                          new_leo=log.log_end_offset, reason="corrupt_record")
        if not self.clean_start:
            # after a power loss: the LEO it had and the one the page cache let it keep
            cut = log.power_loss_cut
            log.power_loss_cut = None
            extra = {} if cut is None else {"power_loss_leo": cut[0], "kept_leo": cut[1]}
            self.emit("log_recovery", **self._tp(), leo=log.log_end_offset, hw=hw,
                      log_start_offset=log.log_start_offset,
                      recovery_point=log.recovery_point, **extra)
        if hw != self.hw:
            self.emit("hw_update", **self._tp(), old=self.hw, new=hw, reason="recovery",
                      role=self.role)
        self.hw = hw
        for rec in log.records:   # idempotent producer state, rebuilt from the log
            if rec[4] >= 0:
                self.producers[rec[4]] = (rec[5], rec[0])

    # -- HW bookkeeping ----------------------------------------------------------------------
    def _set_hw(self, new: int, reason: str) -> None:
        if new != self.hw:
            self.emit("hw_update", **self._tp(), old=self.hw, new=new, reason=reason,
                      role=self.role)
            self.hw = new

    # -- log writes ------------------------------------------------------------------------
    def _append(self, recs: tuple[Record, ...]) -> None:
        log = self.log
        cfg = self.cfg
        now = self.now_ms
        old = log.log_end_offset
        producers = self.producers
        for rec in recs:
            if rec[4] >= 0:
                producers[rec[4]] = (rec[5], rec[0])   # idempotent producer state
            if log.append(rec, cfg.segment_bytes, cfg.segment_ms, now):
                self.emit("segment_roll", **self._tp(), base_offset=rec[0])
                log.flush(now, upto=rec[0])   # Kafka flushes the rolled segment
        if self.role == "leader":
            self.emit("leo_update", **self._tp(), old=old, new=log.log_end_offset)
        if log.unflushed_messages >= cfg.log_flush_interval_messages:
            log.flush(now)
            self.emit("log_flush", **self._tp(), recovery_point=log.recovery_point)

    def _truncate(self, offset: int, reason: str) -> None:
        if offset >= self.leo:
            self.log.truncate_to(offset)   # no record to cut, but maybe an epoch entry
            return
        old_lso = self.log.log_start_offset
        old = self.log.truncate_to(offset)
        self.emit("log_truncate", **self._tp(), old_leo=old, new_leo=self.leo, reason=reason)
        if self.log.log_start_offset != old_lso:
            # a cut below the log start offset moves it down to the target (truncateTo)
            self.emit("log_start_offset_update", **self._tp(), old=old_lso,
                      new=self.log.log_start_offset, reason="truncate")
        if self.hw > self.leo:
            self._set_hw(self.leo, "truncate")
        if self.producers:
            self.producers = {}
            for rec in self.log.records:
                if rec[4] >= 0:
                    self.producers[rec[4]] = (rec[5], rec[0])

    def _increment_log_start_offset(self, new: int, reason: str) -> None:
        log = self.log
        if new <= log.log_start_offset:
            return
        old = log.log_start_offset
        log.log_start_offset = new
        log.epochs.truncate_from_start(new)
        self.emit("log_start_offset_update", **self._tp(), old=old, new=new, reason=reason)
        if self.hw < new:
            self._set_hw(new, "log_start_offset")
        gone = log.delete_segments_below(new)
        for i, seg in enumerate(gone):
            nxt = gone[i + 1].base_offset if i + 1 < len(gone) else log.segments[0].base_offset
            self.emit("segment_delete", **self._tp(), base_offset=seg.base_offset,
                      next_offset=nxt, reason="log_start_offset")

    def _retention(self) -> None:
        """``UnifiedLog.deleteOldSegments`` on every replica (3.7.0
        ``deletableSegments``/``deleteSegments``): walk the segments oldest first while one
        breaches a policy and lies wholly below the HW (its upper bound: the next segment's
        base, the LEO for the active one). The active segment is deletable too when it is
        not empty: a new one is rolled first ("we must always have at least one segment").
        """
        log = self.log
        cfg = self.cfg
        segs = log.segments
        leo = self.leo
        total = sum(s.size for s in segs)
        diff = total - cfg.retention_bytes if cfg.retention_bytes >= 0 else -1
        cut = -1
        for i, seg in enumerate(segs):
            last = i == len(segs) - 1
            upper = leo if last else segs[i + 1].base_offset
            if self.hw < upper or (last and seg.size == 0):
                break   # never delete at or beyond the HW; never the empty active segment
            breached = ((not last and upper <= log.log_start_offset)
                        or (cfg.retention_ms >= 0
                            and self.now_ms - seg.largest_timestamp > cfg.retention_ms)
                        or (diff >= 0 and diff - seg.size >= 0))
            if not breached:
                break
            if diff >= 0:
                diff -= seg.size
            cut = upper
        if cut > log.log_start_offset:
            if cut == leo and segs[-1].base_offset < leo:
                segs.append(Segment(leo, created_ms=self.now_ms))   # roll, then delete all
                self.emit("segment_roll", **self._tp(), base_offset=leo)
                log.flush(self.now_ms, upto=leo)   # a roll flushes the rolled segment
            log.log_start_checkpoint = cut
            self._increment_log_start_offset(cut, "segment_deletion")
