"""The broker's replica manager: Kafka's ``ReplicaManager`` around its partitions.

One per broker. It runs the broker's partition replicas (:class:`actors.replica.Replica`)
and its fetcher threads (:class:`actors.fetcher.ReplicaFetcherThread`) in one task, as
Kafka's request handlers and fetcher threads share a broker's ``Partition`` objects (under
locks; here one message at a time, in the scheduler's order). Each replica keeps its own
address, timers and trace identity; the manager adds what spans partitions:

* *follower side* (``ReplicaFetcherManager``): a replica that becomes a follower of leader
  ``L`` joins thread ``(L, fetcher_id)``, leaves it when it leads or leaves the
  assignment, and moves when leadership moves;
* *leader side* (``ReplicaManager.fetchMessages`` and ``DelayedFetch``): a fetcher
  thread's :class:`~actors.messages.ReplicaFetch` is read partition by partition (each
  updating that follower's fetch state, the ISR and the HW); the answer goes at once when
  some partition has an error, a diverging epoch or enough data (``replica.fetch.min.bytes``
  across all partitions), else the whole request is parked until an append makes enough
  data available, a partition changes leadership, or ``replica.fetch.wait.max.ms`` passes
  — then it is read again, without touching the fetch states a second time (2.x
  ``DelayedFetch.onComplete``);
* :class:`~actors.messages.ReplicaEpochs`: OffsetsForLeaderEpoch for many partitions;
* *becoming and ceasing to be a replica* (``ReplicaManager.applyDelta``): a PartitionState
  that names this broker for a partition it does not host (a reassignment adding it, a
  partition created mid-run: :meth:`ReplicaManager.add_replica`) creates the replica with
  an empty log on the broker's disk, then makes it a follower;
  a :class:`~actors.messages.StopReplica` (the broker left the replica list) stops the
  replica and deletes its log from the disk.

A consumer's fetch is the same request with replica id -1 (Kafka has one FetchRequest):
one per (consumer, leader broker) naming every partition the consumer reads there, each
read up to the HW with no fetch state touched, parked until a partition has records below
the HW or the consumer's ``fetch.max.wait.ms`` passes; replication throttles do not apply.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from actors.coordinator import OFFSETS_TOPIC, GroupCoordinator
from actors.core import Address, Machine
from actors.fetcher import (
    REPLICA_MANAGER,
    FetcherConfig,
    ReplicaFetcherThread,
    fetcher_id,
)
from actors.log import RECORD_OVERHEAD_BYTES, BrokerDisk, PartitionLog, records_bytes
from actors.messages import (
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    PartitionState,
    ReplicaEpochs,
    ReplicaEpochsResponse,
    ReplicaFetch,
    ReplicaFetchResponse,
    ReplicationThrottle,
    StopReplica,
    Tick,
)
from actors.quota import ReplicationQuota
from actors.replica import Replica
from actors.wire import fields


@dataclass(slots=True)
class DelayedFetch:
    src: Address
    req: ReplicaFetch
    parts: list[Fetch]
    token: int
    handle: int


class ReplicaManager(Machine):
    def __init__(self, node: str, broker_id: int, replicas: list[Replica],
                 brokers: tuple[int, ...], cfg: FetcherConfig,
                 coordinator: GroupCoordinator | None = None,
                 disk: BrokerDisk | None = None) -> None:
        super().__init__(node, REPLICA_MANAGER)
        self.broker_id = broker_id
        self.disk = disk
        self.cfg = cfg
        self.replicas = {(r.topic, r.partition): r for r in replicas}
        for r in replicas:
            self.adopt(r)
            r.host = self
        correlations = itertools.count(1)
        self.threads = {(b, i): ReplicaFetcherThread(node, broker_id, b, i, cfg, correlations)
                        for b in brokers if b != broker_id
                        for i in range(cfg.num_replica_fetchers)}
        #: replication throttles (``ReplicationQuotaManager``, leader and follower side)
        self.leader_quota = ReplicationQuota()
        self.follower_quota = ReplicationQuota()
        for t in self.threads.values():
            self.adopt(t)
            t.quota = self.follower_quota
        self._thread_of: dict[tuple[str, int], ReplicaFetcherThread] = {}
        self.coordinator = coordinator
        if coordinator is not None:
            self.adopt(coordinator)
            coordinator.replicas = {r.partition: r for r in replicas
                                    if r.topic == OFFSETS_TOPIC}
        self.delayed: list[DelayedFetch] = []
        self._token = 0

    def add_replica(self, r: Replica) -> None:
        """A partition created after this broker started (CreateTopics, CreatePartitions):
        its idle replica machine joins the task, as the factory's do at start; a
        PartitionState naming this broker then creates its log."""
        self.adopt(r)
        r.host = self
        self.replicas[(r.topic, r.partition)] = r

    def machines(self) -> list[Machine]:
        """Every machine of the task: the manager, its replicas, its fetcher threads, its
        group coordinator."""
        extra: list[Machine] = [self.coordinator] if self.coordinator is not None else []
        return [self, *self.replicas.values(), *self.threads.values(), *extra]

    # -- follower side: ReplicaFetcherManager ------------------------------------------------
    def follow(self, r: Replica) -> None:
        tp = (r.topic, r.partition)
        new = self.threads.get(
            (r.leader, fetcher_id(r.topic, r.partition, self.cfg.num_replica_fetchers)))
        old = self._thread_of.get(tp)
        if old is not None and old is not new:
            self.touch(old).remove(r)
            del self._thread_of[tp]
        if new is not None and old is not new:
            self.touch(new).add(r)
            self._thread_of[tp] = new

    def unfollow(self, r: Replica) -> None:
        old = self._thread_of.pop((r.topic, r.partition), None)
        if old is not None:
            self.touch(old).remove(r)

    def wake(self, r: Replica) -> None:
        thread = self._thread_of.get((r.topic, r.partition))
        if thread is not None:
            self.touch(thread).pump()

    # -- leader side: fetchMessages and DelayedFetch ----------------------------------------
    def handle(self, msg: Any, src: Address) -> None:
        t = type(msg)
        if t is ReplicaFetch:
            self._on_replica_fetch(msg, src)
        elif t is ReplicaEpochs:
            answers = []
            for p in msg.parts:
                req = OffsetsForLeaderEpoch(*p)
                r = self.replicas.get((req.topic, req.partition))
                answers.append(fields(
                    self.touch(r).epoch_end_offset(req) if r is not None
                    else OffsetsForLeaderEpochResponse(req.topic, req.partition,
                                                       NOT_LEADER_OR_FOLLOWER, -1, -1,
                                                       req.correlation)))
            self.send(src, ReplicaEpochsResponse(NONE, tuple(answers), msg.correlation))
        elif t is PartitionState:
            r = self.replicas.get((msg.topic, msg.partition))
            if r is None or self.disk is None:
                return
            if not r.hosted:
                self.touch(r).create_log(self.disk.log(msg.topic, msg.partition))
            self.touch(r).handle(msg, src)
        elif t is ReplicationThrottle:
            self.leader_quota.configure(msg.leader_rate, set(msg.leader_parts))
            self.follower_quota.configure(msg.follower_rate, set(msg.follower_parts))
        elif t is StopReplica:
            r = self.replicas.get((msg.topic, msg.partition))
            if r is None or self.disk is None or not r.hosted:
                return
            self.touch(r).delete_log(PartitionLog(msg.topic, msg.partition))
            self.disk.delete_log(msg.topic, msg.partition)
        elif t is Tick and msg.kind == "delayed_fetch":
            for d in self.delayed:
                if d.token == msg.token:
                    self._complete(d)
                    break

    def _on_replica_fetch(self, req: ReplicaFetch, src: Address) -> None:
        parts = [Fetch(*p) for p in req.parts]
        answers = []
        ready = False
        size = 0
        for f in parts:
            r = self.replicas.get((f.topic, f.partition))
            if r is None:
                answers.append(_not_here(f))
                ready = True
                continue
            if f.replica < 0:
                answer, _has_data = self.touch(r).consumer_fetch(f)
            else:
                answer, _has_data = self.touch(r).follower_fetch(f)
                answer = self._throttle(r, f, answer)
            if answer.error != NONE or answer.diverging_epoch >= 0:
                ready = True
            if size < req.min_bytes:
                size += _bytes(answer)
            answers.append(answer)
        if ready or size >= max(1, req.min_bytes) or req.max_wait_ms <= 0:
            self._record_throttled(answers)
            self.send(src, ReplicaFetchResponse(NONE, tuple(fields(a) for a in answers),
                                                req.correlation))
            return
        self._token += 1
        handle = self.timer(req.max_wait_ms, Tick("delayed_fetch", self._token, 0),
                            cancellable=True)
        self.delayed.append(DelayedFetch(src, req, parts, self._token, handle))

    def leader_progress(self, r: Replica) -> None:
        """``tryCompleteDelayedRequests`` after an append, a HW change or a leadership
        change of ``r``: complete every parked request on that partition that can (and tell
        the group coordinator when ``r`` is a ``__consumer_offsets`` partition)."""
        if self.coordinator is not None and r.topic == OFFSETS_TOPIC:
            self.touch(self.coordinator).on_partition_change(r)
        if not self.delayed:
            return
        tp = (r.topic, r.partition)
        for d in list(self.delayed):
            if any((f.topic, f.partition) == tp for f in d.parts) and self._can_complete(d):
                self._complete(d)

    def _can_complete(self, d: DelayedFetch) -> bool:
        """``DelayedFetch.tryComplete``: a partition no longer led here in the fetched epoch
        (cases A, F), or at least ``min_bytes`` readable across the partitions."""
        size = 0
        for f in d.parts:
            r = self.replicas.get((f.topic, f.partition))
            if r is not None and r.role == "leader" and r.is_unknown_follower_wait(f):
                continue   # 2.0-2.8: parked with an unknown fetch offset, never looked at
            if r is None or r.role != "leader" or (
                    f.current_leader_epoch >= 0 and f.current_leader_epoch != r.leader_epoch):
                return True
            end = r.hw if f.replica < 0 else r.leo   # a consumer reads up to the HW
            if f.fetch_offset < end:
                size += records_bytes(r.log.read(
                    f.fetch_offset, end, d.req.min_bytes // RECORD_OVERHEAD_BYTES + 1))
                if size >= max(1, d.req.min_bytes):
                    return True
        return False

    def _complete(self, d: DelayedFetch) -> None:
        self.delayed.remove(d)
        self.cancel_timer(d.handle)
        answers = []
        for f in d.parts:
            r = self.replicas.get((f.topic, f.partition))
            if r is None:
                answers.append(_not_here(f))
            elif f.replica < 0:
                answers.append(self.touch(r).consumer_fetch(f)[0])
            else:
                answers.append(self._throttle(r, f, self.touch(r).follower_answer(f)))
        self._record_throttled(answers)
        self.send(d.src, ReplicaFetchResponse(NONE, tuple(fields(a) for a in answers),
                                              d.req.correlation))

    # -- replication throttles (leader side) --------------------------------------------------
    def _throttle(self, r: Replica, f: Fetch, answer: FetchResponse) -> FetchResponse:
        """``shouldLeaderThrottle``: a throttled partition's records are left out of the
        answer while the follower is out of the ISR and the leader quota is exceeded."""
        q = self.leader_quota
        if (answer.records and f.replica not in r.isr and q.is_throttled((f.topic, f.partition))
                and q.is_exceeded(self.now_us // 1000)):
            return FetchResponse(answer.topic, answer.partition, answer.error,
                                 answer.high_watermark, answer.log_end_offset,
                                 answer.log_start_offset, (), answer.diverging_epoch,
                                 answer.diverging_end_offset, answer.leader_epoch,
                                 answer.correlation)
        return answer

    def _record_throttled(self, answers: list[FetchResponse]) -> None:
        """``sizeOfThrottledPartitions``: the bytes of throttled partitions sent count
        against the leader quota."""
        q = self.leader_quota
        if q.rate >= 0:
            q.record(sum(_bytes(a) for a in answers if q.is_throttled((a.topic, a.partition))),
                     self.now_us // 1000)


def _not_here(f: Fetch) -> FetchResponse:
    return FetchResponse(f.topic, f.partition, NOT_LEADER_OR_FOLLOWER, -1, -1, -1, (), -1, -1,
                         -1, f.correlation)


def _bytes(answer: FetchResponse) -> int:
    return records_bytes(answer.records)
