"""One partition replica on one broker: Kafka's ``Partition`` + ``ReplicaFetcherThread``.

The replica is a sans-IO state machine with three roles — ``none`` (just started, waiting
for the controller's PartitionState), ``leader`` and ``follower`` — on a broker that hosts
the partition (``hosted``: a reassignment creates and deletes the log, :meth:`create_log`,
:meth:`delete_log`), and its transitions
are driven by four kinds of input: PartitionState (LeaderAndIsr), requests (Fetch,
Produce, OffsetsForLeaderEpoch, ListOffsets), responses, and its own timers.

The rules are Kafka's, summarised in docs/eras.md, section 1 (the numbers below are its
subsections), and switched by era (:mod:`actors.eras`):

* **Leader HW** (1.2): ``min(leader LEO, LEO of every remote replica that is in the
  maximal ISR, or caught up and ISR-eligible)``, never decreasing; not at all while the
  committed ISR is below ``min(min.insync.replicas, RF)`` (3.7+). Older eras: min over the
  ISR (0.10), or ISR + caught-up replicas (0.11-2.1). Every change is traced as
  ``hw_update`` with its reason (produce, follower_fetch, become_leader, isr_shrink, or
  another named one: traces/schema.py).
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

The machine is put together from Kafka's own seams, one module each, imports running one
way: :mod:`actors.replica_state` (``Replica.ReplicaState``: the leader's record of a
follower) ← :mod:`actors.local_replica` (the state both sides share and the log's write
path) ← :mod:`actors.partition` (the leader side, ``Partition``) and
:mod:`actors.fetch_state` (the follower side, ``PartitionFetchState``) ← this module, whose
:class:`Replica` keeps what switches a replica between the sides: its lifecycle, the
message and timer dispatch, PartitionState (``makeFollower`` included), connection resets
and the live invariants. The names other modules import from here are re-exported.
"""

from __future__ import annotations

from typing import Any

from actors.core import Address
from actors.fetch_state import PartitionFetchState
from actors.local_replica import (
    CONTROLLER,
    DelayedProduce,
    FetcherHost,
    InvariantViolation,
    LocalReplica,
    ParkedFetch,
    ReplicaConfig,
)
from actors.log import PartitionLog
from actors.messages import (
    REQUEST_TIMED_OUT,
    AlterPartitionResponse,
    BrokerStates,
    DeleteRecords,
    DeleteRecordsResponse,
    Fetch,
    FetchResponse,
    ListOffsets,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    PartitionState,
    Produce,
    Tick,
)
from actors.partition import (
    ALTER_PARTITION_RETRY_MS,
    ALTER_PARTITION_WAIT,
    Partition,
    alter_partition_error_action,
)
from actors.replica_state import NEVER_MS, UNKNOWN_OFFSET, FollowerState, StaleFetch

__all__ = [
    "ALTER_PARTITION_RETRY_MS", "ALTER_PARTITION_WAIT", "CONTROLLER", "NEVER_MS",
    "UNKNOWN_OFFSET", "DelayedProduce", "FetcherHost", "FollowerState", "InvariantViolation",
    "LocalReplica", "ParkedFetch", "Partition", "PartitionFetchState", "Replica",
    "ReplicaConfig", "StaleFetch", "alter_partition_error_action",
]


def _is_controller(peer: str) -> bool:
    """Whether a reset names the controller: ``controller``, or with a controller quorum the
    voter ``controller-300N`` the broker believes active (its frames to "controller" are
    routed there), so that an AlterPartition in flight fails at once on either."""
    return peer == CONTROLLER[0] or peer.startswith(f"{CONTROLLER[0]}-")


class Replica(Partition, PartitionFetchState):
    """One partition replica on one broker: the leader side (:class:`Partition`) and the
    follower side (:class:`PartitionFetchState`) of one state (:class:`LocalReplica`)."""

    #: the broker's replica manager when the replica runs in one (see :class:`LocalReplica`)
    host: FetcherHost[Replica] | None

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
            self.fetch_state = "idle"
            self.fetch_delay_until_us = 0
            self._fetch_gen += 1

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
        self.fetch_state = "idle"
        self.fetch_delay_until_us = 0
        if self.host is not None:   # ReplicaFetcherManager.addFetcherForPartitions
            self.touch(self.host).follow(self)
        self.start_following()

    # -- connections -----------------------------------------------------------------------
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
        elif (self.role == "leader" and _is_controller(peer) and self.pending_isr is not None
              and self._alter_token >= 0 and self.rules.alter_partition_errors != "zk"):
            self.emit("request_failed", **self._tp(), peer=peer, request="AlterPartition",
                      reason="disconnected")
            self._alter_token = self._next_token()
            self.timer(ALTER_PARTITION_RETRY_MS,
                       Tick("alter_partition_timeout", self._alter_token, self._fetch_gen))

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
                self.disconnect(self._addr(self.leader)[0])   # as the fetcher thread does
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
                if t.token == self._alter_sent_token:
                    # unanswered: the controller channel's request timed out and its
                    # connection is closed (NodeToControllerChannelManager)
                    self.disconnect(CONTROLLER[0])
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
