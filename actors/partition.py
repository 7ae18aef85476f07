"""The leader side of a partition replica: Kafka's ``kafka.cluster.Partition`` as leader.

:class:`Partition` is what a replica does while it leads (Kafka's ``Partition``, with
``appendRecordsToLeader``'s min.insync.replicas check):
``makeLeader`` and resigning, the leader HW (``maybeIncrementLeaderHW``), ISR shrink on
the ``isr-expiration`` check and expansion on a follower's fetch, the one AlterPartition
in flight and what its errors mean (``AlterPartitionManager``), and its answers to
requests — Produce and its ``DelayedProduce``, follower and consumer Fetch (parked as
``DelayedFetch`` while there is nothing to read), OffsetsForLeaderEpoch, ListOffsets and
DeleteRecords (KIP-107). It reads and writes the state of
:class:`actors.local_replica.LocalReplica`, keeps a
:class:`actors.replica_state.FollowerState` per remote replica, and never sends a fetch.
The follower half of Kafka's ``Partition`` (``makeFollower``) is in :mod:`actors.replica`,
which switches a replica between this side and :mod:`actors.fetch_state`.
"""

from __future__ import annotations

from typing import Final

from actors.core import Address
from actors.local_replica import CONTROLLER, DelayedProduce, LocalReplica, ParkedFetch
from actors.log import UNDEFINED
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
    UNKNOWN_LEADER_EPOCH,
    AlterPartition,
    AlterPartitionResponse,
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
from actors.replica_state import UNKNOWN_OFFSET, FollowerState, StaleFetch

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


class Partition(LocalReplica):
    """The leader side of a partition replica (see the module note)."""

    # -- leader HW -------------------------------------------------------------------------
    def _maybe_increment_leader_hw(self, reason: str) -> bool:
        """``Partition.maybeIncrementLeaderHW`` for the era's rule."""
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
                # shouldWaitForReplicaToJoinIsr: caught up and ISR-eligible, the broker
                # epoch checked being the one of the replica's last fetch (3.7.0/4.1.0
                # Partition.isReplicaIsrEligible, stateSnapshot.brokerEpoch): a restarted
                # broker whose last fetch was its old incarnation's holds nothing back
                caught_up = (st is not None and rules.hw_counts_caught_up
                             and st.is_caught_up(leo, now, lag)
                             and (not rules.isr_eligibility
                                  or self._isr_eligible(broker, st.broker_epoch)))
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

    # -- becoming leader, resigning --------------------------------------------------------
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
        self._alter_token = self._alter_sent_token = self._next_token()
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
                out.append(b)   # the pre-0.9 message-count rule (replica.lag.max.messages)
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
        that the request may be parked (``DelayedFetch``).

        The order (3.7.0 and 4.1.0 ``Partition.fetchRecords``): the request's leader epoch
        and this broker's role (``localLogWithEpochOrThrow``), then whether the fetching
        broker is a replica at all (``followerReplicaOrThrow``, 3.3+), then
        ``readRecords`` (:meth:`_read_checks`), and the follower's position is recorded
        last. 2.0.0-2.8.0 ``ReplicaManager.fetchMessages`` read first and look the
        follower up afterwards (``updateFollowerLogReadResults`` /
        ``updateFollowerFetchState``)."""
        err = self._check_epoch(req.current_leader_epoch)
        if err != NONE:
            return self._fetch_error(req, err), True
        known = req.replica in self.followers
        if not known and self.rules.unknown_follower_fetch_is_error:
            return self._fetch_error(req, self._unknown_follower_error(req)), True
        early = self._read_checks(req)
        if early is not None:
            if known and early.error == NONE and not self.rules.skip_diverging_fetch_state:
                try:
                    self._update_follower_fetch_state(req)   # KAFKA-13141
                except StaleFetch:
                    return self._fetch_error(req, NOT_LEADER_OR_FOLLOWER), True
            return early, True
        if not known:
            # 2.0.0-2.8.0: "Empty records will be returned for this partition"
            # (LogReadResult.withEmptyFetchInfo), no error and no position recorded. The
            # request is parked with an unknown fetch offset, which DelayedFetch.tryComplete
            # skips: only the max wait completes it (then onComplete reads again, records
            # and all: follower_answer)
            return self._read_answer(req, with_records=False), False
        try:
            self._update_follower_fetch_state(req)
        except StaleFetch:
            return self._fetch_error(req, NOT_LEADER_OR_FOLLOWER), True
        return self._read_answer(req), req.fetch_offset < self.leo

    def _update_follower_fetch_state(self, req: Fetch) -> None:
        """``Replica.updateFetchStateOrThrow`` then HW and ISR expansion (docs/eras.md 1.3, 1.5)."""
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

    def _unknown_follower_error(self, req: Fetch) -> str:
        """3.3+ (KAFKA-13837; 3.7.0 and 4.1.0 ``Partition.followerReplicaOrThrow``): a fetch
        from a broker outside the replica set is refused. With a current leader epoch (it
        matched ours) the pair (replica, epoch) is not known yet — a replica a reassignment
        is adding may fetch before this leader learns of it — so UNKNOWN_LEADER_EPOCH; an
        older request without one gets NOT_LEADER_OR_FOLLOWER. Either way the follower backs
        off and retries."""
        return UNKNOWN_LEADER_EPOCH if req.current_leader_epoch >= 0 else NOT_LEADER_OR_FOLLOWER

    def is_unknown_follower_wait(self, req: Fetch) -> bool:
        """Whether a parked follower fetch is one 2.0.0-2.8.0 parked with an unknown fetch
        offset (a broker outside the replica set): ``DelayedFetch.tryComplete`` skips such a
        partition, so only the max wait completes it."""
        return (req.replica >= 0 and not self.rules.unknown_follower_fetch_is_error
                and req.replica not in self.followers)

    def _read_checks(self, req: Fetch) -> FetchResponse | None:
        """``Partition.readRecords`` up to the read: the answer when the fetch diverges or is
        out of range, else None.

        With truncate-on-fetch (2.8+) and a lastFetchedEpoch: the end of that epoch on this
        leader; an epoch it cannot place is OFFSET_OUT_OF_RANGE ("Could not determine the
        end offset of the last fetched epoch"); 3.0+ (KAFKA-12996, 3.7.0/4.1.0
        ``readRecords``) then refuses an offset below the log start offset, diverging or not;
        an epoch that ends earlier here than the follower's offset, or that this leader
        never had, is the diverging epoch (2.8.0 answers it even below the log start
        offset). Last the log's own range check (2.8.0 ``Log.read``; 3.7.0 and 4.1.0
        ``UnifiedLog.read``/``checkLogStartOffset`` and ``LocalLog.read``): below the log
        start offset or past the LEO is OFFSET_OUT_OF_RANGE. A fetch past the LEO that
        names the current epoch never gets there: that epoch ends at the LEO, so it
        diverges."""
        start = self.log.log_start_offset
        if self.rules.truncation == "fetch" and req.last_fetched_epoch >= 0:
            epoch, end = self.log.epochs.end_offset_for(req.last_fetched_epoch, self.leo)
            if epoch == UNDEFINED or end == UNDEFINED:
                return self._fetch_error(req, OFFSET_OUT_OF_RANGE)
            if self.rules.fetch_below_start_is_out_of_range and req.fetch_offset < start:
                return self._fetch_error(req, OFFSET_OUT_OF_RANGE)
            if epoch < req.last_fetched_epoch or end < req.fetch_offset:
                return FetchResponse(
                    self.topic, self.partition, NONE, self.hw, self.leo, start, (), epoch,
                    end, self.leader_epoch, req.correlation)
        if req.fetch_offset > self.leo or req.fetch_offset < start:
            return self._fetch_error(req, OFFSET_OUT_OF_RANGE)
        return None

    def follower_answer(self, req: Fetch) -> FetchResponse:
        """What a follower's fetch reads now, without touching its fetch state (a parked
        fetch completing: ``DelayedFetch.onComplete`` reads again through the same checks —
        the leader epoch, 3.3+ the replica set, the divergence and the range — with
        ``updateFetchState`` off)."""
        err = self._check_epoch(req.current_leader_epoch)
        if err != NONE:
            return self._fetch_error(req, err)
        if req.replica not in self.followers and self.rules.unknown_follower_fetch_is_error:
            return self._fetch_error(req, self._unknown_follower_error(req))
        early = self._read_checks(req)
        if early is not None:
            return early
        return self._read_answer(req)

    def _read_answer(self, req: Fetch, *, with_records: bool = True) -> FetchResponse:
        """The records from the fetch offset up to the LEO (``UnifiedLog.read`` with
        ``FetchLogEnd``), with the leader's offsets as they are now."""
        recs = (self.log.read(req.fetch_offset, self.leo,
                              min(req.max_records, self.cfg.replica_fetch_max_records))
                if with_records else ())
        return FetchResponse(self.topic, self.partition, NONE, self.hw, self.leo,
                             self.log.log_start_offset, recs, -1, -1,
                             self.leader_epoch, req.correlation, self._damage_in(recs))

    def _damage_in(self, recs: tuple[Record, ...]) -> tuple[int, ...]:
        """The damaged offsets among ``recs`` (the ``corrupt_disk`` fault). The leader reads
        its log without checking any CRC (``LogSegment.read`` returns the file's bytes; the
        zero-copy send never looks inside): a damaged batch is served as it is, and the
        answer names it so that the receiver can tell, as its own CRC check would."""
        if not recs or not self.log.damaged:
            return ()
        return self.log.damaged_in(recs[0][0], recs[-1][0] + 1)

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
                             req.correlation, self._damage_in(recs))

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
                     else self.leo > p.req.fetch_offset
                     and not self.is_unknown_follower_wait(p.req))
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
