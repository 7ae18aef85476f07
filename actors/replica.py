"""One partition replica on one broker: Kafka's ``Partition`` + ``ReplicaFetcherThread``.

The replica is a sans-IO state machine with three roles — ``none`` (just started, waiting
for the controller's PartitionState), ``leader`` and ``follower`` — on a broker that hosts
the partition (``hosted``: a reassignment creates and deletes the log, :meth:`create_log`,
:meth:`delete_log`), and its transitions
are driven by four kinds of input: PartitionState (LeaderAndIsr), requests (Fetch,
Produce, OffsetsForLeaderEpoch, ListOffsets), responses, and its own timers.

The rules are Kafka's, cited from KAFKA_REFERENCE section 1, and switched by era
(:mod:`actors.eras`):

* **Leader HW** (1.2): ``min(leader LEO, LEO of every remote replica that is in the
  maximal ISR, or caught up and ISR-eligible)``, never decreasing; not at all while the
  committed ISR is below ``min(min.insync.replicas, RF)`` (3.7+). Older eras: min over the
  ISR (0.10), or ISR + caught-up replicas (0.11-2.1). Every change is traced as
  ``hw_update`` with one of seed 000's reasons (produce, follower_fetch, become_leader,
  isr_shrink) or another named reason.
* **Follower fetch state** (1.3): ``lastCaughtUpTimeMs`` from the fetch offset against the
  leader LEO now and at the previous fetch; the follower's LEO is updated *before* the
  response is built, so a follower learns the HW its own fetch made one round later.
* **ISR shrink** (1.4) by the ``isr-expiration`` timer every ``replica.lag.time.max.ms/2``;
  **expand** (1.5) on a fetch with LEO >= HW and >= the leader-epoch start offset (LESO).
  One AlterPartition in flight; while an expand is pending the *maximal* ISR counts.
  ``replica.lag.max.messages`` > 0 brings back the removed pre-0.9 message-count rule.
* **Follower HW** (1.6): ``min(own LEO, leader HW)`` clamped to [logStartOffset, LEO], not
  monotonic; the leader's logStartOffset is copied.
* **Truncation** (1.7) by era: to HW, OffsetsForLeaderEpoch (KIP-101), KIP-279, KIP-320
  fencing, or diverging-epoch truncate-on-fetch.
* **acks** (1.9): NOT_ENOUGH_REPLICAS before append, the DelayedProduce completing when
  the HW passes the last offset (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is
  below min ISR then).
* **Durability** (1.13): flush by ``log.flush.interval.messages``/``.ms`` and on segment
  roll, HW checkpoint every ``replica.high.watermark.checkpoint.interval.ms``; a restart
  loads the HW from the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol

from actors.core import Address, Machine
from actors.eras import Rules
from actors.log import UNDEFINED, PartitionLog, Segment
from actors.messages import (
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    REQUEST_TIMED_OUT,
    UNKNOWN_LEADER_EPOCH,
    AlterPartition,
    AlterPartitionResponse,
    BrokerStates,
    DeleteRecords,
    DeleteRecordsResponse,
    Fetch,
    FetchResponse,
    ListOffsets,
    ListOffsetsResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    PartitionState,
    Produce,
    ProduceResponse,
    Record,
    Tick,
)

CONTROLLER: Address = ("controller", "controller")
UNKNOWN_OFFSET = -1
#: "Never": Kafka's 0 for lastCaughtUpTimeMs is the 1970 epoch, decades before any wall
#: clock; virtual time starts at 0, so "never" must be far in the past.
NEVER_MS = -(2**62)


#: AlterPartition errors after which the leader keeps its change pending, awaiting new
#: metadata (2.8.0 ``Partition.handleAlterIsrResponse``: "Giving up"; 3.7.0
#: ``Partition.handleAlterPartitionError``: "awaiting new the latest metadata").
#: isrlab's controller answers NOT_LEADER_OR_FOLLOWER where KRaft answers INVALID_REQUEST.
ALTER_PARTITION_WAIT: Final = frozenset({
    FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, NOT_LEADER_OR_FOLLOWER,
    "UNKNOWN_TOPIC_OR_PARTITION", "UNKNOWN_TOPIC_ID", "INVALID_REQUEST", "NEW_LEADER_ELECTED"})


#: AlterPartitionManager's delay before it sends a failed request again (3.7.0).
ALTER_PARTITION_RETRY_MS: Final = 50


def alter_partition_error_action(style: str, error: str) -> str:
    """What a leader does with its pending ISR change when AlterPartition fails:
    ``reset`` to the committed ISR, ``wait`` with the change pending, or ``retry`` it.

    * ``zk`` (before 2.7, ``Partition.updateIsr``): the ISR is written to ZooKeeper only if
      the cached zkVersion matches; otherwise "skip updating ISR" — the in-memory ISR never
      changed, so the committed ISR stands (``reset``) and the next check tries again.
    * ``2.7`` (AlterIsr, 2.7-3.0): the give-up errors ``wait``; any other is retried.
    * ``3.3`` (3.3+): INELIGIBLE_REPLICA and OPERATION_NOT_ATTEMPTED (the controller says the
      request was not applied) ``reset``; the give-up errors ``wait``; others are retried.
    """
    if style == "zk":
        return "reset"
    if style == "3.3" and error in (INELIGIBLE_REPLICA, "OPERATION_NOT_ATTEMPTED"):
        return "reset"
    if error in ALTER_PARTITION_WAIT:
        return "wait"
    return "retry"


class FetcherHost(Protocol):
    """What a replica tells the broker's replica manager (:mod:`actors.replica_manager`),
    which runs it in one task with the broker's fetcher threads (:mod:`actors.fetcher`)."""

    def follow(self, replica: Replica) -> None: ...
    def unfollow(self, replica: Replica) -> None: ...
    def wake(self, replica: Replica) -> None: ...
    def leader_progress(self, replica: Replica) -> None: ...


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


class StaleFetch(Exception):
    """A follower's fetch from an incarnation older than the leader knows of: Kafka's
    ``NotLeaderOrFollowerException`` from ``updateFetchStateOrThrow``."""


@dataclass(slots=True)
class FollowerState:
    """Kafka's ``Replica.ReplicaState``, kept by the leader for each remote replica.

    The initial values are ``ReplicaState.Empty`` (3.7.0 ``ReplicaTest.testInitialState``):
    offsets unknown, the leader's LEO at the last fetch 0, times 0 (``NEVER_MS`` here), no
    broker epoch (-1)."""

    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_leo: int = 0
    last_fetch_time_ms: int = NEVER_MS
    last_caught_up_time_ms: int = NEVER_MS
    broker_epoch: int = -1

    def is_caught_up(self, leader_leo: int, now_ms: int, max_lag_ms: int) -> bool:
        """``ReplicaState.isCaughtUp``: at the leader's LEO, or caught up within the lag."""
        return (leader_leo == self.log_end_offset
                or now_ms - self.last_caught_up_time_ms <= max_lag_ms)

    def update_fetch_state(self, fetch_offset: int, start_offset: int, fetch_time_ms: int,
                           leader_end_offset: int, broker_epoch: int,
                           alive_broker_epoch: int = -1) -> None:
        """``Replica.updateFetchStateOrThrow``: a fetch at ``fetch_offset`` made the follower
        caught up *now* if it reached the leader's LEO, or as of its previous fetch if it
        reached the LEO the leader had then. ``alive_broker_epoch`` (KRaft, 3.5+: the
        follower's epoch in the leader's metadata, -1 when not checked): a fetch from an
        older incarnation raises :class:`StaleFetch` and changes nothing."""
        if broker_epoch != -1 and alive_broker_epoch > broker_epoch:
            raise StaleFetch(f"broker epoch {broker_epoch} < {alive_broker_epoch}")
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms,
                                              self.last_fetch_time_ms)
        self.log_start_offset = start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_leo = max(leader_end_offset, self.last_fetch_leader_leo)
        self.last_fetch_time_ms = fetch_time_ms
        self.broker_epoch = broker_epoch

    def reset(self, now_ms: int, leader_end_offset: int, *, new_leader: bool,
              in_sync: bool) -> None:
        """``Replica.resetReplicaState`` on makeLeader: caught up now if in the ISR, else
        never (so a replica outside the ISR does not hold the HW back). A *new* leader knows
        nothing of the follower yet; a re-elected one keeps its offsets and broker epoch, sets
        the leader LEO seen to its own and the last fetch to now if in the ISR, else never
        ("so that the follower is not brought back into the ISR before a fetch")."""
        self.last_caught_up_time_ms = now_ms if in_sync else NEVER_MS
        if new_leader:
            self.log_start_offset = UNKNOWN_OFFSET
            self.log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_leo = UNKNOWN_OFFSET
            self.last_fetch_time_ms = NEVER_MS
            self.broker_epoch = -1
        else:
            self.last_fetch_leader_leo = leader_end_offset
            self.last_fetch_time_ms = now_ms if in_sync else NEVER_MS


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


class Replica(Machine):
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
        self._leader_hw_seen = (-1, 0)
        #: the broker's replica manager when the replica runs in one (the cluster); None
        #: when it runs alone (the conformance harness): then it fetches by itself, one
        #: partition per request, as a fetcher thread carrying one partition would
        self.host: FetcherHost | None = None
        #: follower, with a host: what its fetcher thread is to do for it (Kafka's
        #: ``PartitionFetchState``: truncating or fetching) and until when it is delayed
        #: after an error (``replica.fetch.backoff.ms``; 0: not delayed)
        self.fetch_state = "idle"
        self.fetch_delay_until_us = 0
        #: follower: the leader's HW in its last answer (how far behind it this replica is)
        self.leader_hw = 0

    # -- helpers -------------------------------------------------------------------------
    @property
    def leo(self) -> int:
        return self.log.log_end_offset

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

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> None:
        if self.hosted:
            self._load()
        self.timer(self.cfg.hw_checkpoint_interval_ms,
                   Tick("hw_checkpoint", 0, 0))
        self.timer(self.cfg.replica_lag_time_max_ms / 2, Tick("isr_expiration", 0, 0))
        self.timer(self.cfg.retention_check_interval_ms, Tick("retention", 0, 0))
        if self.cfg.log_flush_interval_ms < 2**62:
            self.timer(self.cfg.log_flush_interval_ms, Tick("flush", 0, 0))

    def create_log(self, log: PartitionLog) -> None:
        """The broker became a replica of the partition (a reassignment adds it): an empty
        log (``ReplicaManager.applyLocalFollowersDelta`` creating the partition), then the
        PartitionState that named it makes it a follower."""
        log.epochs.kafka7415 = self.rules.epoch_cache_kafka7415
        self.log = log
        self.hosted = True
        self.role = "none"
        self.hw = 0
        self.producers = {}
        self.emit("replica_created", **self._tp(), leo=log.log_end_offset,
                  log_start_offset=log.log_start_offset)

    def delete_log(self, detached: PartitionLog) -> None:
        """The broker is no longer a replica (``stopPartitions`` with delete): the replica
        stops (its PartitionState already took its role away) and its log is gone;
        ``detached`` is an empty log that belongs to no disk."""
        if self.role == "leader":
            self._resign()
        elif self.role == "follower" and self.host is not None:
            self.touch(self.host).unfollow(self)
        self.emit("replica_deleted", **self._tp(), leo=self.leo, hw=self.hw,
                  log_start_offset=self.log.log_start_offset)
        self.hosted = False
        self.role = "none"
        self.log = detached
        self.hw = 0
        self.isr = self.maximal_isr = ()
        self.pending_isr = None
        self.followers = {}
        self.producers = {}
        self.fetch_state = "idle"
        self.fetch_delay_until_us = 0
        self._fetch_gen += 1
        self._outstanding = -1

    def _load(self) -> None:
        log = self.log
        hw = min(max(log.hw_checkpoint, log.log_start_offset), log.log_end_offset)
        log.load(unclean=not self.clean_start)
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

    def handle(self, msg: Any, src: Address) -> None:
        t = type(msg)
        if t is Fetch:
            self._on_fetch(msg, src)
        elif t is FetchResponse:
            self.on_fetch_answer(msg)
        elif t is Produce:
            self._on_produce(msg, src)
        elif t is Tick:
            self._on_tick(msg)
        elif t is PartitionState:
            self._on_partition_state(msg)
        elif t is AlterPartitionResponse:
            self._on_alter_partition_response(msg)
        elif t is OffsetsForLeaderEpoch:
            self._on_offsets_for_leader_epoch(msg, src)
        elif t is OffsetsForLeaderEpochResponse:
            self.on_epoch_answer(msg)
        elif t is BrokerStates:
            self._on_broker_states(msg)
        elif t is ListOffsets:
            self._on_list_offsets(msg, src)
        elif t is DeleteRecords:
            self._on_delete_records(msg, src)
        if self.cfg.invariants:
            self._check_invariants()

    # -- HW bookkeeping ----------------------------------------------------------------------
    def _set_hw(self, new: int, reason: str) -> None:
        if new != self.hw:
            self.emit("hw_update", **self._tp(), old=self.hw, new=new, reason=reason,
                      role=self.role)
            self.hw = new

    def _maybe_increment_leader_hw(self, reason: str) -> bool:
        """``Partition.maybeIncrementLeaderHW`` for the era's rule (KAFKA_REFERENCE 1.2)."""
        rules = self.rules
        if rules.strict_min_isr and len(self.isr) < self.effective_min_isr():
            return False
        leo = self.leo
        new_hw = leo
        now = self.now_ms
        lag = self.cfg.replica_lag_time_max_ms
        counted = self.maximal_isr if rules.maximal_isr else self.isr
        for broker in self.replicas:
            if broker == self.broker_id:
                continue
            st = self.followers.get(broker)
            f_leo = st.log_end_offset if st is not None else UNKNOWN_OFFSET
            if f_leo >= new_hw:
                continue
            if rules.hw_over_isr_only:
                holds = broker in self.isr
            else:
                caught_up = (st is not None and rules.hw_counts_caught_up
                             and st.is_caught_up(leo, now, lag)
                             and (not rules.isr_eligibility or self._isr_eligible(broker, -1)))
                holds = broker in counted or caught_up
            if holds:
                new_hw = f_leo
        if new_hw > self.hw:
            self._set_hw(new_hw, reason)
            self._complete_delayed()
            self._complete_parked()
            return True
        return False

    def _isr_eligible(self, broker: int, fetch_broker_epoch: int) -> bool:
        state = self.broker_epochs.get(broker)
        if state is None:
            return True
        epoch, fenced = state
        if fenced:
            return False
        return fetch_broker_epoch in (-1, epoch)

    # -- PartitionState (LeaderAndIsr) -----------------------------------------------------
    def _on_partition_state(self, ps: PartitionState) -> None:
        if ps.controller_epoch < self.controller_epoch or not self.hosted:
            return
        self.controller_epoch = ps.controller_epoch
        if ps.leader_epoch < self.leader_epoch:
            return   # stale LeaderAndIsr
        new_epoch = ps.leader_epoch > self.leader_epoch
        self.replicas = ps.replicas
        if ps.leader == self.broker_id:
            if new_epoch or self.role != "leader":
                self._make_leader(ps)
            else:
                # same epoch: a controller-side ISR change (e.g. a fenced follower removed)
                # or a new assignment. makeLeader without a new epoch (updateAssignmentAndIsr)
                # keeps the state of known replicas, starts an empty one for a replica new to
                # the assignment and forgets the ones that left
                self.followers = {b: self.followers.get(b) or FollowerState()
                                  for b in ps.replicas if b != self.broker_id}
                if ps.partition_epoch > self.partition_epoch:
                    old = self.isr
                    self.partition_epoch = ps.partition_epoch
                    self._commit_isr(ps.isr)
                    # handleAlterPartitionUpdate: try the HW after every committed change
                    # (an expand can lift the ISR back to min ISR on an idle partition)
                    self._maybe_increment_leader_hw(
                        "isr_shrink" if len(ps.isr) < len(old) else "isr_change")
        elif ps.leader >= 0 and self.broker_id in ps.replicas:
            if new_epoch or self.role != "follower" or self.leader != ps.leader:
                self._make_follower(ps)
            else:
                self.partition_epoch = ps.partition_epoch
        else:
            # offline partition or not a replica: stop whatever we were doing
            if self.role == "leader":
                self._resign()
            elif self.role == "follower" and self.host is not None:
                self.touch(self.host).unfollow(self)
            self.role = "none"
            self.leader = ps.leader
            self.leader_epoch = ps.leader_epoch
            self.isr = ps.isr
            self.partition_epoch = ps.partition_epoch
            self._fetch_gen += 1

    def _make_leader(self, ps: PartitionState) -> None:
        """``Partition.makeLeader``: LESO = LEO, epoch cache entry, follower state reset."""
        re_elected = self.role == "leader" and self.leader == self.broker_id
        if self.role == "follower" and self.host is not None:
            self.touch(self.host).unfollow(self)
        self._fetch_gen += 1
        self._outstanding = -1
        new_epoch = ps.leader_epoch > self.leader_epoch
        self.role = "leader"
        self.leader = self.broker_id
        self.leader_epoch = ps.leader_epoch
        self.partition_epoch = ps.partition_epoch
        self.isr = ps.isr
        self.maximal_isr = ps.isr
        self.pending_isr = None
        if new_epoch:
            if self.rules.epoch_cache_kafka7415:
                # KAFKA-7415 (2.1.0): the new epoch and its start offset go into the cache at
                # once, so a follower holding records of a later epoch than any in this log
                # can still find where to truncate; before 2.1 the epoch entered the cache
                # with the leader's first append (2.0.0 Partition.makeLeader assigns nothing)
                self.log.epochs.assign(ps.leader_epoch, self.leo)
            self.leso = self.leo
        now = self.now_ms
        followers: dict[int, FollowerState] = {}
        for b in ps.replicas:
            if b == self.broker_id:
                continue
            # Partition.makeLeader: every remote replica's state is reset for the new term
            st = self.followers.get(b) if re_elected else None
            st = st if st is not None else FollowerState()
            st.reset(now, self.leo, new_leader=not re_elected, in_sync=b in ps.isr)
            followers[b] = st
        self.followers = followers
        self.emit("become_leader", **self._tp(), leader_epoch=ps.leader_epoch,
                  isr=list(ps.isr), leo=self.leo, hw=self.hw, leso=self.leso,
                  recovering=ps.recovering)
        self._maybe_increment_leader_hw("become_leader")
        self._complete_parked()

    def _resign(self) -> None:
        for src, req, _offset, _token in self.delayed_deletes:
            self.send(src, DeleteRecordsResponse(self.topic, self.partition,
                                                 NOT_LEADER_OR_FOLLOWER, -1, req.correlation))
        self.delayed_deletes = []
        for d in self.delayed:
            self._respond_produce(d.src, d.req, NOT_LEADER_OR_FOLLOWER, -1)
            self.cancel_timer(d.handle)
        self.delayed = []
        for p in self.parked:
            self._respond_fetch_error(p.src, p.req, NOT_LEADER_OR_FOLLOWER)
            self.cancel_timer(p.handle)
        self.parked = []
        self.pending_isr = None
        self.leso = UNDEFINED
        self.role = "resigned"
        if self.host is not None:   # the manager's parked fetches on this partition end
            self.touch(self.host).leader_progress(self)

    def _make_follower(self, ps: PartitionState) -> None:
        if self.role == "leader":
            self._resign()
        self._fetch_gen += 1
        self._outstanding = -1
        self.role = "follower"
        self.leader = ps.leader
        self.leader_epoch = ps.leader_epoch
        self.partition_epoch = ps.partition_epoch
        # Partition.makeFollower: a follower keeps no ISR (updateAssignmentAndIsr with an
        # empty set); only the leader's view of the ISR means anything
        self.isr = ()
        self.maximal_isr = ()
        self.followers = {}
        self.emit("become_follower", **self._tp(), leader=ps.leader,
                  leader_epoch=ps.leader_epoch, leo=self.leo, hw=self.hw)
        if self.host is not None:   # ReplicaFetcherManager.addFetcherForPartitions
            self.fetch_state = "idle"
            self.fetch_delay_until_us = 0
            self.touch(self.host).follow(self)
        trunc = self.rules.truncation
        if trunc == "hw":
            self._truncate(self.hw, "high_watermark")
            self._send_fetch()
        elif trunc in ("kip101", "kip279"):
            self._send_offsets_for_leader_epoch()
        else:
            self._send_fetch()

    # -- ISR changes -----------------------------------------------------------------------
    def _commit_isr(self, isr: tuple[int, ...]) -> None:
        """The controller committed an ISR (it traces the ``isr_change``)."""
        self.isr = isr
        self.maximal_isr = isr
        self.pending_isr = None

    def _propose_isr(self, proposed: tuple[int, ...], kind: str) -> None:
        self.pending_isr = proposed
        if kind == "expand" and self.rules.maximal_isr:
            self.maximal_isr = tuple(sorted(set(self.isr) | set(proposed)))
        own_epoch = self.broker_epochs.get(self.broker_id, (-1, False))[0]
        members = tuple((b, self.followers[b].broker_epoch if b in self.followers
                         else own_epoch) for b in proposed)
        self.emit("alter_partition", **self._tp(), proposed_isr=list(proposed),
                  partition_epoch=self.partition_epoch, kind=kind)
        self.send(CONTROLLER, AlterPartition(
            self.topic, self.partition, self.broker_id, self.leader_epoch, own_epoch,
            members, self.partition_epoch))
        # AlterPartitionManager retries a request the controller never answered
        self._alter_token = self._next_token()
        self.timer(self.cfg.replica_socket_timeout_ms,
                   Tick("alter_partition_timeout", self._alter_token, self._fetch_gen))

    def _on_alter_partition_response(self, r: AlterPartitionResponse) -> None:
        if self.role != "leader" or self.pending_isr is None:
            return
        self.emit("alter_partition_result", **self._tp(), error=r.error,
                  isr=list(r.isr), partition_epoch=r.partition_epoch)
        self._alter_token = -1   # answered: the no-answer retry timer is void
        if r.error != NONE:
            action = alter_partition_error_action(self.rules.alter_partition_errors, r.error)
            if action == "reset":
                self.pending_isr = None
                self.maximal_isr = self.isr
            elif action == "retry":
                # AlterPartitionManager sends it again "in the near future" (50 ms)
                self._alter_token = self._next_token()
                self.timer(ALTER_PARTITION_RETRY_MS,
                           Tick("alter_partition_timeout", self._alter_token, self._fetch_gen))
            # "wait": the change stays pending (an expansion's replica stays in the maximal
            # ISR, no other ISR change starts) until new partition state arrives
            return
        if r.leader_epoch != self.leader_epoch:
            return
        shrink = len(r.isr) < len(self.isr)
        self.partition_epoch = r.partition_epoch
        self._commit_isr(r.isr)
        self._maybe_increment_leader_hw("isr_shrink" if shrink else "isr_change")

    def _out_of_sync(self) -> tuple[int, ...]:
        now = self.now_ms
        lag = self.cfg.replica_lag_time_max_ms
        leo = self.leo
        out = []
        for b in self.isr:
            if b == self.broker_id:
                continue
            st = self.followers.get(b)
            if st is None or not st.is_caught_up(leo, now, lag):
                out.append(b)
            elif (self.cfg.replica_lag_max_messages > 0
                  and leo - st.log_end_offset > self.cfg.replica_lag_max_messages):
                out.append(b)   # the pre-0.9 message-count rule (seed 001)
        return tuple(out)

    def _maybe_expand_isr(self, broker: int, fetch_broker_epoch: int) -> None:
        if self.pending_isr is not None or broker in self.isr:
            return
        if self.rules.isr_eligibility and not self._isr_eligible(broker, fetch_broker_epoch):
            return
        st = self.followers[broker]
        if st.log_end_offset < self.hw:
            return
        if self.rules.leso_check and st.log_end_offset < self.leso:
            return   # KAFKA-7128
        if (self.cfg.replica_lag_max_messages > 0
                and self.leo - st.log_end_offset > self.cfg.replica_lag_max_messages):
            return
        self._propose_isr(tuple(sorted((*self.isr, broker))), "expand")

    # -- leader: requests ------------------------------------------------------------------
    def _check_epoch(self, current_leader_epoch: int) -> str:
        """``Partition.localLogWithEpochOrException`` (2.1+): the request's leader epoch is
        checked first (older: FENCED_LEADER_EPOCH, newer: UNKNOWN_LEADER_EPOCH), then the
        role — a follower behind on metadata answers UNKNOWN_LEADER_EPOCH, not
        NOT_LEADER_OR_FOLLOWER, so the client waits instead of refreshing metadata. A
        broker that is not a replica answers NOT_LEADER_OR_FOLLOWER (``getPartitionOrError``
        for a partition the metadata has but this broker does not host)."""
        if not self.hosted:
            return NOT_LEADER_OR_FOLLOWER
        if self.rules.epoch_fencing and current_leader_epoch >= 0:
            if current_leader_epoch < self.leader_epoch:
                return FENCED_LEADER_EPOCH
            if current_leader_epoch > self.leader_epoch:
                return UNKNOWN_LEADER_EPOCH
        if self.role != "leader":
            return NOT_LEADER_OR_FOLLOWER
        return NONE

    def _on_produce(self, req: Produce, src: Address) -> None:
        if self.role != "leader":
            self._respond_produce(src, req, NOT_LEADER_OR_FOLLOWER, -1)
            return
        if req.acks == -1 and len(self.isr) < self.effective_min_isr():
            self._respond_produce(src, req, NOT_ENOUGH_REPLICAS, -1)
            return
        first = req.records[0]
        pid, seq = first[4], first[5]
        if pid >= 0:
            last = self.producers.get(pid)
            if last is not None and seq <= last[0]:
                # a duplicate batch (a retry): it keeps its original offsets and, with
                # acks=all, is still acknowledged only once the HW has passed them
                base = last[1] - (last[0] - seq)
                if req.acks == -1:
                    d = DelayedProduce(src, req, base + len(req.records), base,
                                       self._next_token())
                    self._delay_produce(d)
                    self._complete_delayed()
                else:
                    self._respond_produce(src, req, NONE, base)
                return
            expected = 0 if last is None else last[0] + 1
            if seq != expected:
                self._respond_produce(src, req, OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
                return
        base = self.leo
        self._append(tuple((base + i, r[1], self.leader_epoch, self.now_ms, r[4], r[5], r[6])
                           for i, r in enumerate(req.records)))
        if req.acks == -1:
            d = DelayedProduce(src, req, self.leo, base, self._next_token())
            self._delay_produce(d)
        self._maybe_increment_leader_hw("produce")
        if req.acks == 1:
            self._respond_produce(src, req, NONE, base)
        elif req.acks == -1:
            self._complete_delayed()
        self._complete_parked()

    def append_as_coordinator(self, key: str, value: str) -> tuple[str, int]:
        """``ReplicaManager.appendRecords`` with origin COORDINATOR and acks -1 (the group
        coordinator writing to its ``__consumer_offsets`` partition): the error, and the
        offset the HW must reach for the record to be committed."""
        if self.role != "leader":
            return NOT_LEADER_OR_FOLLOWER, -1
        if len(self.isr) < self.effective_min_isr():
            return NOT_ENOUGH_REPLICAS, -1
        base = self.leo
        self._append(((base, value, self.leader_epoch, self.now_ms, -1, -1, key),))
        self._maybe_increment_leader_hw("produce")
        self._complete_parked()
        return NONE, self.leo

    def _delay_produce(self, d: DelayedProduce) -> None:
        self.delayed.append(d)
        d.handle = self.timer(d.req.timeout_ms, Tick("produce_timeout", d.token, 0),
                              cancellable=True)

    def _respond_produce(self, src: Address, req: Produce, error: str, base: int) -> None:
        if req.acks != 0:
            self.send(src, ProduceResponse(req.topic, req.partition, error, base,
                                           req.correlation))

    def _complete_delayed(self) -> None:
        """``DelayedProduce.tryComplete`` via ``checkEnoughReplicasReachOffset``."""
        if not self.delayed:
            return
        keep = []
        for d in self.delayed:
            if self.hw >= d.required_offset:
                err = (NONE if len(self.maximal_isr) >= self.effective_min_isr()
                       else NOT_ENOUGH_REPLICAS_AFTER_APPEND)
                self._respond_produce(d.src, d.req, err, d.base_offset)
                self.cancel_timer(d.handle)
            else:
                keep.append(d)
        self.delayed = keep

    def _on_fetch(self, req: Fetch, src: Address) -> None:
        if req.replica < 0:
            self._on_consumer_fetch(req, src)
            return
        answer, ready = self.follower_fetch(req)
        if not ready and self.cfg.replica_fetch_wait_max_ms > 0:
            self._park(src, req)
        else:
            self.send(src, answer)

    def follower_fetch(self, req: Fetch) -> tuple[FetchResponse, bool]:
        """The leader's side of one partition of a follower's fetch (``Partition.fetchRecords``
        with ``updateFollowerFetchState``): the answer, and whether it is ready — False
        when there is nothing to read yet (no records, no error, no diverging epoch), so
        that the request may be parked (``DelayedFetch``)."""
        err = self._check_epoch(req.current_leader_epoch)
        if err != NONE:
            return self._fetch_error(req, err), True
        if req.replica not in self.followers:
            return self._fetch_error(req, NOT_LEADER_OR_FOLLOWER), True
        # truncate-on-fetch: the diverging-epoch check (KAFKA-10554, 2.8+)
        if self.rules.truncation == "fetch" and req.last_fetched_epoch >= 0:
            epoch, end = self.log.epochs.end_offset_for(req.last_fetched_epoch, self.leo)
            if epoch == UNDEFINED or end == UNDEFINED:
                # Partition.readRecords (2.8.0): "Could not determine the end offset of the
                # last fetched epoch" is OFFSET_OUT_OF_RANGE, never a diverging (-1, -1)
                return self._fetch_error(req, OFFSET_OUT_OF_RANGE), True
            if epoch < req.last_fetched_epoch or end < req.fetch_offset:
                if not self.rules.skip_diverging_fetch_state:
                    try:
                        self._update_follower_fetch_state(req)   # KAFKA-13141
                    except StaleFetch:
                        return self._fetch_error(req, NOT_LEADER_OR_FOLLOWER), True
                return FetchResponse(
                    self.topic, self.partition, NONE, self.hw, self.leo,
                    self.log.log_start_offset, (), epoch, end, self.leader_epoch,
                    req.correlation), True
        if req.fetch_offset > self.leo or req.fetch_offset < self.log.log_start_offset:
            return self._fetch_error(req, OFFSET_OUT_OF_RANGE), True
        try:
            self._update_follower_fetch_state(req)
        except StaleFetch:
            return self._fetch_error(req, NOT_LEADER_OR_FOLLOWER), True
        return self.follower_answer(req), req.fetch_offset < self.leo

    def _update_follower_fetch_state(self, req: Fetch) -> None:
        """``Replica.updateFetchStateOrThrow`` then HW and ISR expansion (1.3, 1.5)."""
        st = self.followers[req.replica]
        changed = st.log_end_offset != req.fetch_offset
        alive = (self.broker_epochs.get(req.replica, (-1, False))[0]
                 if self.rules.broker_epoch_check else -1)
        st.update_fetch_state(req.fetch_offset, req.log_start_offset, self.now_ms, self.leo,
                              req.broker_epoch, alive)
        self._maybe_expand_isr(req.replica, req.broker_epoch)
        if changed:
            self._maybe_increment_leader_hw("follower_fetch")
        if self.delayed_deletes:
            self._complete_deletes()

    def follower_answer(self, req: Fetch) -> FetchResponse:
        """What a follower's fetch reads now, without touching its fetch state (a parked
        fetch completing: ``DelayedFetch.onComplete``); an error if this replica is no
        longer the leader of the epoch the fetch named."""
        err = self._check_epoch(req.current_leader_epoch)
        if err != NONE:
            return self._fetch_error(req, err)
        recs = self.log.read(req.fetch_offset, self.leo,
                             min(req.max_records, self.cfg.replica_fetch_max_records))
        return FetchResponse(self.topic, self.partition, NONE, self.hw, self.leo,
                             self.log.log_start_offset, recs, -1, -1,
                             self.leader_epoch, req.correlation)

    def _answer_follower_fetch(self, src: Address, req: Fetch) -> None:
        self.send(src, self.follower_answer(req))

    def _on_consumer_fetch(self, req: Fetch, src: Address) -> None:
        answer, ready = self.consumer_fetch(req)
        if ready:
            self.send(src, answer)
        else:
            self._park(src, req)

    def consumer_fetch(self, req: Fetch) -> tuple[FetchResponse, bool]:
        """The leader's side of one partition of a consumer's fetch (replica id -1:
        ``Partition.fetchRecords`` bounded by the HW, ``FetchHighWatermark`` isolation): the
        answer, and whether it is ready — False when nothing below the HW is left to read,
        so that the request may be parked (``DelayedFetch``). No fetch state changes."""
        err = self._check_epoch(req.current_leader_epoch)
        if err != NONE:
            return self._fetch_error(req, err), True
        if req.fetch_offset > self.leo or req.fetch_offset < self.log.log_start_offset:
            return self._fetch_error(req, OFFSET_OUT_OF_RANGE), True
        return self.consumer_answer(req), req.fetch_offset < self.hw

    def consumer_answer(self, req: Fetch) -> FetchResponse:
        """What a consumer reads now: from its offset up to the HW."""
        recs = self.log.read(req.fetch_offset, self.hw, req.max_records)
        return FetchResponse(self.topic, self.partition, NONE, self.hw, self.leo,
                             self.log.log_start_offset, recs, -1, -1, self.leader_epoch,
                             req.correlation)

    def _answer_consumer_fetch(self, src: Address, req: Fetch) -> None:
        self.send(src, self.consumer_answer(req))

    def _fetch_error(self, req: Fetch, error: str) -> FetchResponse:
        return FetchResponse(self.topic, self.partition, error, self.hw, self.leo,
                             self.log.log_start_offset, (), -1, -1, self.leader_epoch,
                             req.correlation)

    def _respond_fetch_error(self, src: Address, req: Fetch, error: str) -> None:
        self.send(src, self._fetch_error(req, error))

    def _park(self, src: Address, req: Fetch) -> None:
        p = ParkedFetch(src, req, self._next_token())
        self.parked.append(p)
        # a consumer's request waits as long as it asked (fetch.max.wait.ms), a
        # follower's as long as the leader's replica.fetch.wait.max.ms says
        wait = req.max_wait_ms if req.max_wait_ms >= 0 else self.cfg.replica_fetch_wait_max_ms
        p.handle = self.timer(wait, Tick("fetch_wait", p.token, 0), cancellable=True)

    def _complete_parked(self) -> None:
        if self.host is not None:
            self.touch(self.host).leader_progress(self)
        if not self.parked or self.role != "leader":
            return
        keep = []
        for p in self.parked:
            ready = (self.hw > p.req.fetch_offset if p.req.replica < 0
                     else self.leo > p.req.fetch_offset)
            if ready:
                self.cancel_timer(p.handle)
                if p.req.replica < 0:
                    self._answer_consumer_fetch(p.src, p.req)
                else:
                    self._answer_follower_fetch(p.src, p.req)
            else:
                keep.append(p)
        self.parked = keep

    def _on_offsets_for_leader_epoch(self, req: OffsetsForLeaderEpoch, src: Address) -> None:
        self.send(src, self.epoch_end_offset(req))

    def epoch_end_offset(self, req: OffsetsForLeaderEpoch) -> OffsetsForLeaderEpochResponse:
        """The leader's answer to one partition of OffsetsForLeaderEpoch
        (``Partition.lastOffsetForLeaderEpoch``)."""
        err = self._check_epoch(req.current_leader_epoch)
        if err != NONE:
            return OffsetsForLeaderEpochResponse(self.topic, self.partition, err, -1, -1,
                                                 req.correlation)
        epoch, end = self.log.epochs.end_offset_for(req.leader_epoch, self.leo)
        if self.rules.truncation == "kip101" and epoch != UNDEFINED:
            epoch = req.leader_epoch   # pre-KIP-279: no "epoch of the end offset"
        return OffsetsForLeaderEpochResponse(self.topic, self.partition, NONE, epoch, end,
                                             req.correlation)

    # -- DeleteRecords (KIP-107) -----------------------------------------------------------
    def low_watermark(self) -> int:
        """``Partition.lowWatermarkIfLeader``: min logStartOffset over live replicas."""
        low = self.log.log_start_offset
        for b, st in self.followers.items():
            state = self.broker_epochs.get(b)
            alive = state is None or not state[1]
            if alive and st.log_start_offset >= 0:
                low = min(low, st.log_start_offset)
            elif alive:
                low = min(low, 0)
        return low

    def _on_delete_records(self, req: DeleteRecords, src: Address) -> None:
        if self.role != "leader":
            self.send(src, DeleteRecordsResponse(self.topic, self.partition,
                                                 NOT_LEADER_OR_FOLLOWER, -1, req.correlation))
            return
        offset = self.hw if req.offset < 0 else req.offset
        if offset > self.hw:
            self.send(src, DeleteRecordsResponse(self.topic, self.partition,
                                                 OFFSET_OUT_OF_RANGE, -1, req.correlation))
            return
        self._increment_log_start_offset(offset, "client_deletion")
        token = self._next_token()
        self.delayed_deletes.append((src, req, offset, token))
        self.timer(req.timeout_ms, Tick("delete_timeout", token, 0))
        self._complete_deletes()

    def _complete_deletes(self) -> None:
        if not self.delayed_deletes:
            return
        low = self.low_watermark()
        keep = []
        for src, req, offset, token in self.delayed_deletes:
            if low >= offset:
                self.send(src, DeleteRecordsResponse(self.topic, self.partition, NONE, low,
                                                     req.correlation))
            else:
                keep.append((src, req, offset, token))
        self.delayed_deletes = keep

    def _on_list_offsets(self, req: ListOffsets, src: Address) -> None:
        if self.role != "leader":
            self.send(src, ListOffsetsResponse(self.topic, self.partition,
                                               NOT_LEADER_OR_FOLLOWER, -1, req.correlation))
            return
        if req.timestamp == -2:
            off, err = self.log.log_start_offset, NONE
        elif self.leso > self.hw:
            off, err = -1, "OFFSET_NOT_AVAILABLE"   # KIP-207: ListOffsets stays monotonic
        else:
            off, err = self.hw, NONE
        self.send(src, ListOffsetsResponse(self.topic, self.partition, err, off,
                                           req.correlation))

    # -- follower --------------------------------------------------------------------------
    def _send_fetch(self) -> None:
        if self.role != "follower" or self.leader < 0:
            return
        if self.host is not None:   # the fetcher thread sends it, with its siblings
            self._outstanding = -1
            self.fetch_state = "fetching"
            self.touch(self.host).wake(self)
            return
        corr = self._next_correlation()
        self.send(self._addr(self.leader), Fetch(*self.fetch_part(corr)))
        self._fetch_timer = self.timer(
            self.cfg.replica_fetch_wait_max_ms + self.cfg.replica_socket_timeout_ms,
            Tick("fetch_timeout", corr, self._fetch_gen), cancellable=True)

    def fetch_part(self, corr: int) -> tuple[Any, ...]:
        """This partition's part of a fetch request with correlation ``corr`` (the fields
        of a :class:`Fetch`): from the LEO, with the era's epochs; awaits its answer."""
        self._outstanding = corr
        self._outstanding_is_epoch = False
        # lastFetchedEpoch (2.8+): the epoch cache's latest epoch when the fetch state is
        # built (AbstractFetcherThread.partitionFetchState: latestEpoch(tp)) and after a
        # truncation, the last appended batch's epoch after an append; with the 2.1+ cache
        # rule both are the cache's latest epoch. Not the last record's epoch: a replica that
        # led an epoch without appending must offer that epoch, so that the leader answers
        # with a diverging epoch and the truncation trims the stale entry (KAFKA-7415).
        last_epoch = self.log.epochs.latest_epoch() if self.rules.truncation == "fetch" else -1
        own_epoch = self.broker_epochs.get(self.broker_id, (-1, False))[0]
        return (self.topic, self.partition, self.broker_id, own_epoch, self.leo, last_epoch,
                self.leader_epoch if self.rules.epoch_fencing else -1,
                self.log.log_start_offset, self.cfg.replica_fetch_max_records, corr)

    def _send_offsets_for_leader_epoch(self) -> None:
        if self.host is not None:   # the fetcher thread asks, for all it is truncating
            self._outstanding = -1
            self.fetch_state = "truncating"
            self.touch(self.host).wake(self)
            return
        corr = self._next_correlation()
        self.send(self._addr(self.leader), OffsetsForLeaderEpoch(*self.epoch_part(corr)))
        self._fetch_timer = self.timer(self.cfg.replica_socket_timeout_ms,
                                       Tick("fetch_timeout", corr, self._fetch_gen),
                                       cancellable=True)

    def epoch_part(self, corr: int) -> tuple[Any, ...]:
        """This partition's part of an OffsetsForLeaderEpoch request (the fields of an
        :class:`OffsetsForLeaderEpoch`): its latest epoch; awaits the answer."""
        self._outstanding = corr
        self._outstanding_is_epoch = True
        return (self.topic, self.partition, self.broker_id, self.log.epochs.latest_epoch(),
                self.leader_epoch if self.rules.epoch_fencing else -1, corr)

    def awaits(self, corr: int) -> bool:
        """Whether this follower awaits its part of the fetcher's request ``corr``."""
        return self.role == "follower" and self._outstanding == corr

    def fetch_failed(self, corr: int, peer: str, reason: str) -> None:
        """The fetcher thread's request ``corr`` failed as a whole (a disconnect, a timeout,
        an error for the request): if this partition was in it, it is delayed by
        ``replica.fetch.backoff.ms`` (``AbstractFetcherThread.processFetchRequest``: every
        partition of the thread is marked with an error)."""
        if self.role == "follower" and self._outstanding == corr:
            self._backoff()

    def end_backoff(self) -> None:
        """The delay after an error is over: fetch again (or, in the eras that truncate by
        OffsetsForLeaderEpoch, ask for the epoch's end offset first)."""
        self.fetch_delay_until_us = 0
        if self.role != "follower":
            return
        if self.rules.truncation in ("kip101", "kip279"):
            self._send_offsets_for_leader_epoch()
        else:
            self._send_fetch()

    def connection_reset(self, peer: str) -> None:
        """The connection to ``peer`` was reset. A follower whose leader it is fails its
        fetch (or epoch lookup) now and, as ``AbstractFetcherThread`` does for a partition
        with an error, tries again after ``replica.fetch.backoff.ms`` (the fetcher's client
        reconnects without a backoff of its own). A leader with an AlterPartition in flight
        to the controller sends it again soon (``AlterPartitionManager``); in the ZooKeeper
        eras the ISR is written to ZooKeeper, not through the controller: nothing to do."""
        if (self.role == "follower" and self.leader >= 0 and self._outstanding >= 0
                and self.host is None and peer == self._addr(self.leader)[0]):
            self.emit("request_failed", **self._tp(), peer=peer,
                      request="OffsetsForLeaderEpoch" if self._outstanding_is_epoch
                      else "Fetch", reason="disconnected")
            self._backoff()
        elif (self.role == "leader" and peer == CONTROLLER[0] and self.pending_isr is not None
              and self._alter_token >= 0 and self.rules.alter_partition_errors != "zk"):
            self.emit("request_failed", **self._tp(), peer=peer, request="AlterPartition",
                      reason="disconnected")
            self._alter_token = self._next_token()
            self.timer(ALTER_PARTITION_RETRY_MS,
                       Tick("alter_partition_timeout", self._alter_token, self._fetch_gen))

    def _backoff(self) -> None:
        self._outstanding = -1
        if self.host is not None:   # the thread leaves it out until the delay is over
            self.fetch_delay_until_us = self.now_us + int(
                self.cfg.replica_fetch_backoff_ms * 1000)
            self.touch(self.host).wake(self)
            return
        self.timer(self.cfg.replica_fetch_backoff_ms, Tick("fetch_backoff", 0, self._fetch_gen))

    def on_epoch_answer(self, r: OffsetsForLeaderEpochResponse) -> None:
        if self.role != "follower" or r.correlation != self._outstanding:
            return
        self._outstanding = -1
        self.cancel_timer(self._fetch_timer)
        if r.error != NONE:
            self._backoff()
            return
        if r.end_offset == UNDEFINED:
            self._truncate(self.hw, "high_watermark")   # leader has no epoch info
            self._send_fetch()
            return
        if self.rules.truncation == "kip101":
            self._truncate(min(r.end_offset, self.leo), "leader_epoch")
            self._send_fetch()
            return
        done = self._truncate_to_epoch_end(r.leader_epoch, r.end_offset)
        if done:
            self._send_fetch()
        else:
            self._send_offsets_for_leader_epoch()

    def _truncate_to_epoch_end(self, leader_epoch: int, leader_end: int) -> bool:
        """``AbstractFetcherThread.getOffsetTruncationState`` (KIP-279; tags 2.0.0, 2.8.0).
        True when done."""
        local_epoch, local_end = self.log.epochs.end_offset_for(leader_epoch, self.leo)
        if local_end == UNDEFINED:
            # no local epoch at or below the leader's answer: "the leader's offset only will
            # be used for truncation" (the same as KIP-101 before KIP-279)
            self._truncate(min(leader_end, self.leo), "leader_epoch")
            return True
        if local_epoch != leader_epoch:
            # we don't know the leader's epoch: cut to the end of our largest smaller one
            self._truncate(min(local_end, self.leo), "leader_epoch")
            return False
        self._truncate(min(leader_end, local_end, self.leo), "leader_epoch")
        return True

    def on_fetch_answer(self, r: FetchResponse) -> None:
        if self.role != "follower" or r.correlation != self._outstanding:
            return
        self._outstanding = -1
        self.cancel_timer(self._fetch_timer)
        if r.error == OFFSET_OUT_OF_RANGE:
            # AbstractFetcherThread.fetchOffsetAndTruncate (the unclean-election path)
            if r.log_end_offset < self.leo:
                self._truncate(r.log_end_offset, "offset_out_of_range")
            elif r.log_start_offset > self.leo:
                old_leo = self.leo
                self.log.truncate_fully_and_start_at(r.log_start_offset)
                self.emit("log_truncate", **self._tp(), old_leo=old_leo,
                          new_leo=r.log_start_offset, reason="offset_out_of_range")
                self._set_hw(r.log_start_offset, "truncate")
            self._send_fetch()
            return
        if r.error != NONE:
            self._backoff()
            return
        if r.diverging_epoch >= 0:
            if not self.rules.truncate_before_hw:   # KAFKA-14704: HW applied first
                self._follower_apply_hw(r.high_watermark)
            self._truncate_to_epoch_end(r.diverging_epoch, r.diverging_end_offset)
            self._send_fetch()
            return
        if r.records:
            old = self.leo
            if r.records[0][0] != old:
                self._backoff()      # not contiguous (stale response): refetch
                return
            self._append(r.records)
            self.emit("leo_update", **self._tp(), old=old, new=self.leo)
        self._follower_apply_hw(r.high_watermark)
        if r.log_start_offset > self.log.log_start_offset:
            self._increment_log_start_offset(min(r.log_start_offset, self.hw), "leader")
        self._send_fetch()

    def _follower_apply_hw(self, leader_hw: int) -> None:
        self.leader_hw = leader_hw
        new = min(self.leo, leader_hw)
        new = max(new, self.log.log_start_offset)
        self._set_hw(new, "fetch_response")

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
        """``UnifiedLog.deleteOldSegments`` on every replica (KAFKA_REFERENCE 1.11; 3.7.0
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

    # -- timers ----------------------------------------------------------------------------
    def _on_tick(self, t: Tick) -> None:
        k = t.kind
        if not self.hosted and k in ("hw_checkpoint", "flush", "retention"):
            # not a replica here (yet, or any more): the periodic work has no log to do
            # but keeps its schedule, for when the broker becomes a replica again
            delay = {"hw_checkpoint": self.cfg.hw_checkpoint_interval_ms,
                     "flush": self.cfg.log_flush_interval_ms,
                     "retention": self.cfg.retention_check_interval_ms}[k]
            self.timer(delay, Tick(k, 0, 0))
            return
        if k == "fetch_wait":
            for i, p in enumerate(self.parked):
                if p.token == t.token:
                    del self.parked[i]
                    if p.req.replica < 0:
                        self._answer_consumer_fetch(p.src, p.req)
                    else:
                        self._answer_follower_fetch(p.src, p.req)
                    break
        elif k == "fetch_timeout":
            if t.token == self._outstanding and t.arg == self._fetch_gen:
                self._outstanding = -1
                if self._outstanding_is_epoch:
                    # the truncation is still to do: ask again (the partition stays in the
                    # fetcher's truncating state; fetching from its LEO would keep a
                    # divergent suffix)
                    self._send_offsets_for_leader_epoch()
                else:
                    self._send_fetch()
        elif k == "fetch_backoff":
            if t.arg == self._fetch_gen and self.role == "follower" and self._outstanding < 0:
                self.end_backoff()
        elif k == "isr_expiration":
            self.timer(self.cfg.replica_lag_time_max_ms / 2, Tick("isr_expiration", 0, 0))
            if self.role == "leader" and self.pending_isr is None:
                out = self._out_of_sync()
                if out:
                    self._propose_isr(tuple(b for b in self.isr if b not in out), "shrink")
        elif k == "alter_partition_timeout":
            if (t.token == self._alter_token and t.arg == self._fetch_gen
                    and self.role == "leader" and self.pending_isr is not None):
                proposed = self.pending_isr
                kind = "shrink" if len(proposed) < len(self.isr) else "expand"
                self._propose_isr(proposed, kind)
        elif k == "delete_timeout":
            for i, (src, req, _offset, token) in enumerate(self.delayed_deletes):
                if token == t.token:
                    del self.delayed_deletes[i]
                    self.send(src, DeleteRecordsResponse(self.topic, self.partition,
                                                         REQUEST_TIMED_OUT,
                                                         self.low_watermark(),
                                                         req.correlation))
                    break
        elif k == "produce_timeout":
            for i, d in enumerate(self.delayed):
                if d.token == t.token:
                    del self.delayed[i]
                    self._respond_produce(d.src, d.req, REQUEST_TIMED_OUT, -1)
                    break
        elif k == "hw_checkpoint":
            self.log.hw_checkpoint = self.hw
            self.log.log_start_checkpoint = self.log.log_start_offset
            self.timer(self.cfg.hw_checkpoint_interval_ms, Tick("hw_checkpoint", 0, 0))
        elif k == "flush":
            if self.log.unflushed_messages:
                self.log.flush(self.now_ms)
                self.emit("log_flush", **self._tp(), recovery_point=self.log.recovery_point)
            self.timer(self.cfg.log_flush_interval_ms, Tick("flush", 0, 0))
        elif k == "retention":
            self._retention()
            self.timer(self.cfg.retention_check_interval_ms, Tick("retention", 0, 0))

    def _on_broker_states(self, m: BrokerStates) -> None:
        if m.controller_epoch < self.controller_epoch:
            return
        self.broker_epochs = {b: (e, f) for b, e, f in m.brokers}
        if self.role == "leader":
            self._maybe_increment_leader_hw("follower_fetch")

    # -- invariants ------------------------------------------------------------------------
    def _check_invariants(self) -> None:
        lso, hw, leo = self.log.log_start_offset, self.hw, self.leo
        if not lso <= hw <= leo:
            raise InvariantViolation(
                f"{self.node}/{self.name}: logStartOffset {lso} <= HW {hw} <= LEO {leo}")
        if self.leader_epoch < self._highest_epoch_seen:
            raise InvariantViolation(
                f"{self.node}/{self.name}: leader epoch went back to {self.leader_epoch}")
        self._highest_epoch_seen = self.leader_epoch
        if self.role == "leader":
            epoch, hw = self._leader_hw_seen
            if epoch == self.leader_epoch and self.hw < hw:
                raise InvariantViolation(f"{self.node}/{self.name}: leader HW went back from "
                                         f"{hw} to {self.hw} in epoch {epoch}")
            self._leader_hw_seen = (self.leader_epoch, self.hw)
        if any(b not in self.replicas for b in self.isr) and self.replicas:
            raise InvariantViolation(f"{self.node}/{self.name}: ISR {self.isr} not in AR")
