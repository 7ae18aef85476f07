"""A consumer group member: group membership, committed offsets, fetches below the HW.

Lifecycle, after Kafka's ``KafkaConsumer`` with the classic (eager) group protocol:

1. **Join**: ``JoinGroup`` to the group's coordinator — the leader of the group's
   ``__consumer_offsets`` partition (:mod:`actors.coordinator`), found in the metadata as
   FindCoordinator would answer, and looked up again after NOT_COORDINATOR,
   COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or a disconnect; it answers with
   the member's partitions for the current *generation* (``GroupAssignment``), and pushes a
   new one whenever membership changes.
2. **Assignment**, by the protocol of the configured assignor (``actors.group.protocol_of``):
   under the *eager* protocol (range, roundrobin) every partition is given up at a new
   generation — positions committed and dropped — and each partition of the new assignment
   starts again from the committed offset, kept ones included (3.7.0
   ``ConsumerCoordinator.onJoinPrepare``, EAGER: ``assignFromSubscribed(emptySet)``; 2.0.0
   builds a fresh ``TopicPartitionState`` for every assigned partition); under the
   *cooperative* protocol (cooperative-sticky, KIP-429) only the partitions taken away are
   committed and dropped and the kept ones go on from their positions. A partition starts
   from the committed offset (``OffsetFetch``) or, with none committed or on
   OFFSET_OUT_OF_RANGE, from ``auto.offset.reset`` (earliest / latest / none) via
   ListOffsets. The ``assignment`` event names the protocol, so a checker knows which
   positions had to survive the rebalance.
3. **Fetch**: from the partitions' leaders, which serve only what is below the HW: one
   fetch request per leader broker naming every partition read there
   (``Fetcher.prepareFetchRequests``), and none to a broker that still has one pending
   (``nodesWithPendingFetchRequests``) or is in its reconnect backoff; the leader parks it
   until some partition has records below its HW or ``fetch.max.wait.ms`` passes. A
   partition whose fetch failed waits its retry before it joins a request again. Each
   record is traced as ``consume`` with the HW it was served under.
4. **Heartbeat** every ``heartbeat.interval.ms``; ``UNKNOWN_MEMBER_ID`` (the coordinator
   restarted, or expired us) means join again. Positions are committed every
   ``auto.commit.interval.ms`` with the generation, so a zombie's commit is rejected. A
   commit is traced when sent (``offset_commit``) and when acknowledged
   (``offset_commit_ack``, same ``commit_id``); every committed offset read back is traced
   (``offset_fetch``, with the time it was asked for), which is what the checkers'
   ``lost_committed_offset`` rule reads.

5. **Requests and their timeouts**: every request the member sends — fetch, ListOffsets,
   OffsetFetch, JoinGroup, OffsetCommit, heartbeat — is in flight until its answer comes or
   its timeout fires, as ``NetworkClient``'s ``InFlightRequests`` holds it for
   ``ConsumerNetworkClient``: ``request.timeout.ms``; a fetch adds ``fetch.max.wait.ms``,
   the time the leader may park it; a JoinGroup is given the rebalance's bound plus 5 s. A
   request that times out closes the connections to its broker
   (``NetworkClient.handleTimedOutRequests`` → ``processTimeoutDisconnection``): it fails
   with ``request_failed`` reason=timeout, and every other request in flight to that broker
   fails as disconnected, exactly as a reset fails them (:meth:`Consumer.connection_reset`).
   A request is never left without its timeout: a rebalance that gives up the partitions a
   fetch named does not forget the fetch, and whenever a fetch is over — answered, timed out
   or disconnected — the next fetches go (``Fetcher.sendFetches``), so a partition held back
   behind a fetch pending at its leader (``nodesWithPendingFetchRequests``) always goes on.

6. **check.crcs** (default true): the member checks each record batch's CRC as poll()
   hands the records out (3.7.0 ``CompletedFetch.nextFetchedRecord`` →
   ``maybeEnsureValid``; 2.8.0 ``Fetcher.PartitionRecords``, the same). The records before
   a damaged batch are returned; at the batch poll() throws ("If needed, please seek past
   the record to continue consumption") and the position stays on it. The failed fetch
   stays next in line (``corruptLastRecord``: never drained), so *every* later poll throws
   at it before it reaches any other partition's data (``FetchCollector.collectFetch``),
   and no partition with data buffered is fetched again (``fetchablePartitions``): the
   whole member stops returning records, not only that partition. isrlab's application
   does what a typical one does — it does not seek past a record it cannot read; it logs
   the error and polls again — so the member traces ``corrupt_record`` (where ``poll``) once,
   delivers nothing more and fetches nothing (:attr:`Consumer.stuck`), and commits its
   positions as they are (never past the damaged batch). The failed fetch is dropped, and
   the member reads on, only when Kafka's collector drains it
   (``FetchCollector.fetchRecords``): the partition is revoked or lost (a rebalance; the
   partition starts again from the committed offset: the damaged batch, if its leader
   still serves it), or the metadata names a new leader or epoch for it (3.7.0
   ``SubscriptionState.maybeValidatePositionForCurrentLeader``: the position awaits
   validation, so the partition is not fetchable and its failed fetch is drained; the next
   fetch goes to the new leader, whose copy may be good). Consumers before 2.3 had no
   position validation and stayed stuck until a rebalance; isrlab's consumer is the same in
   every era.

A restarted consumer process is a new incarnation of the same member name: the
coordinator rebalances at once and the member resumes from the committed offsets, which
is Kafka's at-least-once: records after the last commit are read again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Final

from actors.client import Client
from actors.coordinator import (
    COORDINATOR_ERRORS,
    GROUP_COORDINATOR,
    OFFSETS_TOPIC,
    partition_for,
)
from actors.core import Address
from actors.fetcher import REPLICA_MANAGER
from actors.group import protocol_of
from actors.messages import (
    FENCED_LEADER_EPOCH,
    ILLEGAL_GENERATION,
    NETWORK_EXCEPTION,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    REBALANCE_IN_PROGRESS,
    REQUEST_TIMED_OUT,
    UNKNOWN_MEMBER_ID,
    Fetch,
    FetchResponse,
    GroupAssignment,
    GroupHeartbeat,
    GroupHeartbeatResponse,
    JoinGroup,
    ListOffsets,
    ListOffsetsResponse,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    ReplicaFetch,
    ReplicaFetchResponse,
    Tick,
)
from actors.wire import fields

#: the requests a member sends, as ``request_failed`` names them
FETCH: Final = "Fetch"
LIST_OFFSETS: Final = "ListOffsets"
OFFSET_FETCH: Final = "OffsetFetch"
OFFSET_COMMIT: Final = "OffsetCommit"
JOIN_GROUP: Final = "JoinGroup"
HEARTBEAT: Final = "Heartbeat"
#: ``AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE``: a JoinGroup may be held by the
#: coordinator for the rebalance timeout, and is given this much more before it times out
JOIN_GROUP_TIMEOUT_LAPSE_MS: Final = 5000


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    group: str
    topic: str
    partitions: int
    member: int
    members: int
    assignor: str = "range"
    auto_offset_reset: str = "latest"
    auto_commit_interval_ms: int = 5000
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    request_timeout_ms: int = 30000
    fetch_max_wait_ms: int = 500
    max_poll_records: int = 500
    retry_backoff_ms: int = 100
    offsets_topic_partitions: int = 50
    metadata_max_age_ms: int = 300000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000


@dataclass(slots=True)
class InFlight:
    """A request sent and not yet over (an entry of ``NetworkClient``'s
    ``InFlightRequests``): the broker node it went to, which request it is, the partitions
    it names, the handle of its timeout timer and when it was sent."""

    node: str
    request: str
    partitions: tuple[int, ...]
    handle: int
    sent_us: int


@dataclass(frozen=True, slots=True)
class StuckFetch:
    """The fetched data poll() keeps failing on (``CompletedFetch`` with
    ``corruptLastRecord``): ``partition``'s record batch at ``offset`` fails its CRC; the
    position stays at ``position`` (the first offset not returned); ``leader`` and
    ``leader_epoch`` are the leader that served it and its epoch (the position's
    ``currentLeader``): a metadata naming another one ends it."""

    partition: int
    offset: int
    position: int
    leader: int
    leader_epoch: int


class Consumer(Client):
    def __init__(self, node: str, cfg: ConsumerConfig, *, brokers: tuple[int, ...],
                 incarnation: int = 1, connection_rng: random.Random | None = None) -> None:
        super().__init__(node, "consumer", brokers=brokers,
                         request_timeout_ms=cfg.request_timeout_ms,
                         retry_backoff_ms=cfg.retry_backoff_ms,
                         metadata_max_age_ms=cfg.metadata_max_age_ms,
                         reconnect_backoff_ms=cfg.reconnect_backoff_ms,
                         reconnect_backoff_max_ms=cfg.reconnect_backoff_max_ms,
                         rng=connection_rng)
        self.cfg = cfg
        #: the topic's partition count as the metadata shows it, and the count this member
        #: last joined the group with
        self.partitions = cfg.partitions
        self._joined_partitions = cfg.partitions
        self.incarnation = incarnation
        self.assigned: tuple[int, ...] = ()
        self.generation = -1
        self.coordinator_partition = partition_for(cfg.group, cfg.offsets_topic_partitions)
        #: commits in flight: correlation -> (partition, offset, commit id)
        self.commits: dict[int, tuple[int, int, int]] = {}
        self._commit_ids = 0
        #: onJoinPrepare: the commits whose answers (or failures) the rejoin waits for
        self._sync_commits: set[int] = set()
        self.position: dict[int, int] = {}
        self.committed: dict[int, int] = {}
        self.outstanding: dict[int, int] = {}   # partition -> correlation in flight
        #: partitions waiting out a retry backoff: no fetch request takes them meanwhile
        self._waiting: set[int] = set()
        #: every request in flight, by correlation; each has a live timeout timer
        self.requests: dict[int, InFlight] = {}
        self._answering = False
        self.consumer_name = f"{cfg.group}-{cfg.member}"
        self._join_corr = -1
        self._last_coordinator_ms = 0
        #: eager protocol, between onJoinPrepare and the new assignment: nothing is fetched
        self._rejoining = False
        #: a damaged record batch poll() keeps failing on (``check.crcs``): while set,
        #: nothing is delivered or fetched for any partition (module note, point 6)
        self.stuck: StuckFetch | None = None

    # -- requests in flight (NetworkClient.InFlightRequests) ---------------------------------
    def _track(self, corr: int, node: str, request: str, timeout_ms: float,
               partitions: tuple[int, ...] = ()) -> None:
        """``corr`` was sent to ``node``: it is in flight until answered, failed, or its
        timeout fires (``ClientRequest.requestTimeoutMs``)."""
        handle = self.timer(timeout_ms, Tick("request_timeout", corr, 0), cancellable=True)
        self.requests[corr] = InFlight(node, request, partitions, handle, self.now_us)

    def _answered(self, corr: int) -> InFlight | None:
        """``corr`` is over (answered, or no longer waited for): no timeout any more. None
        when it was not in flight (a late answer to a request that already failed)."""
        req = self.requests.pop(corr, None)
        if req is not None:
            self.cancel_timer(req.handle)
        return req

    def _fetch_nodes(self) -> set[str]:
        """The brokers with a fetch request of this member pending
        (``AbstractFetch.nodesWithPendingFetchRequests``)."""
        return {r.node for r in self.requests.values() if r.request == FETCH}

    def _on_request_timeout(self, corr: int) -> None:
        """``NetworkClient.handleTimedOutRequests``: the request ``corr`` is still
        unanswered at its timeout. It fails (reason timeout), the connections to its broker
        are closed (``processTimeoutDisconnection``), and every other request in flight to
        that broker fails as disconnected, as :meth:`connection_reset` fails them; only then
        is the timed-out request's own failure handled, so that nothing it triggers (a
        retry, a rejoin) goes out on the connection being closed."""
        req = self.requests.pop(corr, None)
        if req is None:
            return   # answered, failed with its connection, or replaced: a stale timer
        self._emit_failed(req, "timeout")
        self.disconnect(req.node)
        self.connection_reset(req.node)
        self._fail(corr, req, "timeout")
        self._send_fetches()

    def _emit_failed(self, req: InFlight, reason: str) -> None:
        """``request_failed``: one per partition the request named, else one for the
        request (JoinGroup, heartbeat)."""
        cfg = self.cfg
        if not req.partitions:
            self.emit("request_failed", peer=req.node, request=req.request, reason=reason,
                      group=cfg.group, consumer=self.consumer_name)
        for p in req.partitions:
            self.emit("request_failed", topic=cfg.topic, partition=p, peer=req.node,
                      request=req.request, reason=reason)

    def _fail(self, corr: int, req: InFlight, reason: str) -> None:
        """What a failed request (timed out or disconnected) means to the member, as the
        response handlers of ``Fetcher`` and ``AbstractCoordinator`` take a
        ``RequestFuture`` that failed: a partition still waiting for it is tried again after
        the backoff with fresh metadata; a commit fails (``RetriableCommitFailedException``)
        and, the last of a prepared rebalance, lets the member rejoin; a join is sent again
        after the backoff; a heartbeat needs nothing more (its coordinator is looked up
        again when it was the one disconnected, and the session check rejoins a member whose
        coordinator stays silent)."""
        if req.request in (FETCH, LIST_OFFSETS, OFFSET_FETCH):
            failed = [p for p in req.partitions if self.outstanding.get(p) == corr]
            for p in failed:
                self._retry_later(p)
            if failed:
                self.refresh_metadata()
        elif req.request == OFFSET_COMMIT:
            self._on_commit_response(OffsetCommitResponse(
                self.cfg.group, self.cfg.topic, req.partitions[0],
                REQUEST_TIMED_OUT if reason == "timeout" else NETWORK_EXCEPTION, corr))
        elif req.request == JOIN_GROUP and corr == self._join_corr:
            self.timer(self.cfg.retry_backoff_ms * 5, Tick("join_retry", corr, 0))

    # -- the coordinator ---------------------------------------------------------------------
    @property
    def coordinator(self) -> Address | None:
        """The group coordinator: the leader of the group's ``__consumer_offsets`` partition
        in the metadata (None while unknown)."""
        leader, _ = self.leader_of(OFFSETS_TOPIC, self.coordinator_partition)
        return (f"broker-{leader}", GROUP_COORDINATOR) if leader >= 0 else None

    def _coordinator_unknown(self) -> None:
        """``markCoordinatorUnknown``: look it up again."""
        self.leaders.pop((OFFSETS_TOPIC, self.coordinator_partition), None)
        self.refresh_metadata()

    # -- group membership --------------------------------------------------------------------
    def start(self) -> None:
        self.refresh_metadata()
        self._join()
        self.timer(self.cfg.heartbeat_interval_ms, Tick("heartbeat", 0, 0))
        self.timer(self.cfg.auto_commit_interval_ms, Tick("commit", 0, 0))

    def _join(self) -> None:
        """``AbstractCoordinator.sendJoinGroupRequest``. A join this one replaces is no
        longer waited for (Kafka keeps one ``joinFuture``; the coordinator answers the
        member, not the request, so its answer is the same). The coordinator may hold a
        JoinGroup until the rebalance completes, so Kafka gives it the rebalance timeout plus
        ``JOIN_GROUP_TIMEOUT_LAPSE``, and never less than ``request.timeout.ms``; isrlab's
        coordinator bounds a rebalance by the members' session timeouts
        (:mod:`actors.coordinator`), which stand for the rebalance timeout here."""
        cfg = self.cfg
        self._answered(self._join_corr)
        corr = self.next_correlation()
        self._join_corr = corr
        self._last_coordinator_ms = self.now_ms
        coordinator = self.coordinator
        if coordinator is None:   # not known yet: ask for metadata, try again soon
            self.refresh_metadata()
            self.timer(cfg.retry_backoff_ms * 5, Tick("join_retry", corr, 0))
            return
        self._joined_partitions = self.partitions
        self.send(coordinator, JoinGroup(cfg.group, self.consumer_name, self.incarnation,
                                         cfg.topic, self.partitions, cfg.assignor,
                                         cfg.session_timeout_ms, corr))
        self._track(corr, coordinator[0], JOIN_GROUP,
                    max(cfg.request_timeout_ms,
                        cfg.session_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS))

    def _joined(self) -> None:
        """The join is over: the coordinator gave this member its generation."""
        self._answered(self._join_corr)
        self._join_corr = -1
        self._last_coordinator_ms = self.now_ms

    def _on_assignment(self, a: GroupAssignment) -> None:
        if a.error in COORDINATOR_ERRORS:
            if a.correlation == self._join_corr:   # join again after the backoff
                self._answered(a.correlation)
                self._coordinator_unknown()
                self.timer(self.cfg.retry_backoff_ms * 5, Tick("join_retry", a.correlation, 0))
            return
        if a.generation < self.generation:
            return
        if a.error == REBALANCE_IN_PROGRESS:
            if a.generation == self.generation:
                if self._sync_commits:
                    pass                  # still committing before the rejoin
                elif self._rejoining:
                    self._join()          # told again: our JoinGroup may have been lost
                else:
                    self._prepare_rebalance()
            return
        if (a.generation == self.generation and not self._rejoining
                and tuple(a.partitions) == self.assigned):
            self._joined()
            return                                 # a re-delivery of what we hold
        self._rejoining = False
        self._joined()
        new = tuple(a.partitions)
        protocol = protocol_of(self.cfg.assignor)
        revoked = [p for p in self.assigned if p not in new]
        # eager: a new generation gives up everything (already dropped if it was prepared)
        given_up = (list(self.assigned) if protocol == "eager" and a.generation > self.generation
                    else revoked)
        self._commit(given_up)                     # commit, then give up
        unstuck = self.stuck is not None and self.stuck.partition in given_up
        for p in given_up:
            self.position.pop(p, None)
            self.outstanding.pop(p, None)
            self._waiting.discard(p)
        if unstuck:
            self.stuck = None   # FetchCollector.fetchRecords: no longer assigned, drained
        self.generation = a.generation
        self.assigned = new
        self.emit("assignment", group=self.cfg.group, consumer=self.consumer_name,
                  generation=a.generation, partitions=list(new), revoked=revoked,
                  protocol=protocol)
        for p in new:
            if p not in self.position and p not in self.outstanding:
                self._offset_fetch(p)
        if unstuck:
            self._send_fetches()   # the partitions kept go on from their positions
        if self._joined_partitions < self.partitions:
            self._prepare_rebalance()   # the topic grew while this join was under way

    def on_metadata(self) -> None:
        """The metadata shows more partitions of the topic (created, or partitions added):
        the member rejoins so that the group spreads them (``ConsumerCoordinator``
        ``rejoinNeededOrPending``: "cached metadata has changed"; Kafka lets only the
        group leader's metadata trigger it, isrlab any member's: docs/fidelity.md). Until
        then the new partitions are read by no one; with ``auto.offset.reset = latest``
        whatever is written to them before the group takes them is skipped, as in Kafka."""
        self._validate_stuck_position()
        n = self.partition_count(self.cfg.topic)
        if n <= self.partitions:
            return
        old, self.partitions = self.partitions, n
        self.emit("partitions_change", topic=self.cfg.topic, old=old, new=n,
                  group=self.cfg.group, consumer=self.consumer_name)
        if (self.generation >= 0 and not self._rejoining and not self._sync_commits
                and self._join_corr < 0):
            self._prepare_rebalance()

    def _validate_stuck_position(self) -> None:
        """The metadata names a leader, or a leader epoch, other than the one the stuck
        partition was fetched from: its position awaits validation (3.7.0
        ``OffsetFetcherUtils.validatePositionsOnMetadataChange`` →
        ``SubscriptionState.maybeValidatePositionForCurrentLeader``), so it is not fetchable
        and the collector drains the failed fetch (``FetchCollector.fetchRecords``: "no
        longer fetchable"). isrlab has no OffsetsForLeaderEpoch from the consumer: the
        partition is fetched again at once, from the same position, at the new leader. A
        metadata without a leader changes nothing (``maybeValidatePosition`` waits for one)."""
        s = self.stuck
        if s is None:
            return
        leader, epoch = self.leader_of(self.cfg.topic, s.partition)
        if leader < 0 or (leader, epoch) == (s.leader, s.leader_epoch):
            return
        self.stuck = None
        self._send_fetches()

    def _prepare_rebalance(self) -> None:
        """``ConsumerCoordinator.onJoinPrepare``: commit every position while the generation
        still holds and wait for the answers (``maybeAutoCommitOffsetsSync``: a failed commit
        is not retried; each commit's ``request.timeout.ms`` bounds the wait); under the
        eager protocol give up every partition (``assignFromSubscribed(emptySet)``: positions
        dropped, fetching stops — a fetch already pending stays pending until its answer or
        its timeout, as Kafka's does); then join again."""
        self._commit(self.assigned)
        if protocol_of(self.cfg.assignor) == "eager":
            self.position.clear()
            self.outstanding.clear()
            self._waiting.clear()
            self.stuck = None
            self._rejoining = True
        # every commit in flight, not only the ones just sent: Kafka commits all consumed
        # positions here, changed or not (3.7.0 onJoinPrepare, maybeAutoCommitOffsetsAsync),
        # and the coordinator answers one connection's commits in order, so the rejoin
        # waits for an auto-commit already in flight too; isrlab sends no commit for a
        # position already committed, and waits for that one's answer instead
        self._sync_commits = set(self.commits)
        if self._sync_commits:
            return
        self._join()

    def _lose_partitions(self) -> None:
        """The coordinator no longer knows us (it restarted, or expired us): the partitions
        are lost, not revoked — nothing can be committed any more — under either protocol
        (``onPartitionsLost``; ``resetGenerationOnResponseError``: generation -1); the
        traced assignment is empty until the group gives us partitions again."""
        if not self.assigned and self.generation < 0:
            return
        lost = list(self.assigned)
        self.position.clear()
        self.outstanding.clear()
        self._waiting.clear()
        self.stuck = None
        self.assigned = ()
        self.generation = -1
        self.emit("assignment", group=self.cfg.group, consumer=self.consumer_name,
                  generation=-1, partitions=[], revoked=lost,
                  protocol=protocol_of(self.cfg.assignor))

    # -- per partition -----------------------------------------------------------------------
    def _offset_fetch(self, p: int) -> None:
        coordinator = self.coordinator
        if coordinator is None:
            self.refresh_metadata()
            self._retry_later(p)
            return
        corr = self.next_correlation()
        self.outstanding[p] = corr
        self.send(coordinator, OffsetFetch(self.cfg.group, self.cfg.topic, p, corr))
        self._track(corr, coordinator[0], OFFSET_FETCH, self.cfg.request_timeout_ms, (p,))

    def _reset(self, p: int, old: int) -> None:
        policy = self.cfg.auto_offset_reset
        if policy == "none":
            self.emit("consumer_error", group=self.cfg.group, consumer=self.consumer_name,
                      topic=self.cfg.topic, partition=p, error="NoOffsetForPartition")
            self.outstanding.pop(p, None)
            return
        leader, _ = self.leader_of(self.cfg.topic, p)
        if leader < 0:
            self._retry_later(p)
            self.refresh_metadata()   # else a partition unknown at start is never learnt
            return
        corr = self.next_correlation()
        self.outstanding[p] = corr
        self.send(self.replica_address(leader, self.cfg.topic, p),
                  ListOffsets(self.cfg.topic, p, -2 if policy == "earliest" else -1, corr))
        self._track(corr, f"broker-{leader}", LIST_OFFSETS, self.cfg.request_timeout_ms, (p,))
        self.position[p] = -1 - old if old >= 0 else -1   # remembers the old for tracing

    def _fetch(self, p: int) -> None:
        """``p`` may be fetched from its position: it joins the next request to its leader."""
        leader, _ = self.leader_of(self.cfg.topic, p)
        if leader < 0:
            self._retry_later(p)
            self.refresh_metadata()
            return
        self.outstanding.pop(p, None)
        if not self._answering:
            self._send_fetches()

    def _send_fetches(self) -> None:
        """``Fetcher.sendFetches``: one request per leader broker without one pending,
        naming every fetchable partition it leads, each from its position; a partition
        whose leader is unknown or in its reconnect backoff ("awaiting reconnect backoff")
        waits for a retry of its own. A partition held back by a pending request goes with
        the next one, which is sent when the pending one is over, whichever way it ends:
        answered (``handle``), timed out (:meth:`_on_request_timeout`) or disconnected
        (:meth:`connection_reset`)."""
        cfg = self.cfg
        if self._rejoining or self.stuck is not None:
            return   # a stuck poll delivers nothing, so the member fetches nothing more
        pending = self._fetch_nodes()
        by_leader: dict[int, list[tuple[int, int]]] = {}
        for p in self.assigned:
            pos = self.position.get(p, -1)
            if pos < 0 or p in self.outstanding or p in self._waiting:
                continue
            leader, epoch = self.leader_of(cfg.topic, p)
            if leader < 0:   # the metadata lost its leader since: ask, and try again later
                self._retry_later(p)
                self.refresh_metadata()
                continue
            if f"broker-{leader}" in pending:
                continue   # goes with the next request, once the pending one is over
            wait_ms = self.connect_delay_ms(leader)
            if wait_ms > 0:
                self._waiting.add(p)
                self.timer(wait_ms, Tick("retry", 0, p))
                continue
            by_leader.setdefault(leader, []).append((p, epoch))
        for leader in sorted(by_leader):
            node = f"broker-{leader}"
            corr = self.next_correlation()
            parts = []
            for p, epoch in sorted(by_leader[leader]):
                self.outstanding[p] = corr
                parts.append(fields(Fetch(cfg.topic, p, -1, -1, self.position[p], -1, epoch, 0,
                                          cfg.max_poll_records, corr, cfg.fetch_max_wait_ms)))
            self.send((node, REPLICA_MANAGER), ReplicaFetch(
                -1, -1, self.consumer_name, cfg.fetch_max_wait_ms, 1, tuple(parts), corr))
            self._track(corr, node, FETCH, cfg.fetch_max_wait_ms + cfg.request_timeout_ms,
                        tuple(p for p, _ in sorted(by_leader[leader])))

    def connection_reset(self, peer: str) -> None:
        """The connection to ``peer`` is down — reset by its host, or closed by this member
        when a request to it timed out (``NetworkClient.processDisconnection``): every
        request in flight to it fails now as disconnected (``cancelInFlightRequests``) and
        is handled as :meth:`_fail` says; the coordinator's disconnect makes it unknown
        (``markCoordinatorUnknown``), so it is looked up again before anything is sent to
        it; and the fetches that were held back behind a failed one go."""
        super().connection_reset(peer)
        coordinator = self.coordinator
        if coordinator is not None and coordinator[0] == peer:
            self._coordinator_unknown()
        for corr in sorted(c for c, r in self.requests.items() if r.node == peer):
            req = self._answered(corr)
            if req is None:
                continue   # a failure before it already ended it
            self._emit_failed(req, "disconnected")
            self._fail(corr, req, "disconnected")
        if not self._answering:
            self._send_fetches()

    def _retry_later(self, p: int) -> None:
        self.outstanding.pop(p, None)
        self._waiting.add(p)
        self.timer(self.cfg.retry_backoff_ms * 10, Tick("retry", 0, p))

    def _resume(self, p: int) -> None:
        if p not in self.assigned or self._rejoining:
            return
        if p not in self.position:
            self._offset_fetch(p)
        elif self.position[p] < 0:
            self._reset(p, -1 - self.position[p] if self.position[p] < -1 else -1)
        else:
            self._fetch(p)

    def _mine(self, p: int, correlation: int) -> bool:
        """The answer ``correlation`` for ``p`` is the one ``p`` waits for."""
        if self.outstanding.get(p) != correlation or p not in self.assigned:
            return False
        del self.outstanding[p]
        return True

    def _on_fetch_response(self, msg: FetchResponse, broker: int) -> None:
        """One partition's part of a fetch request's answer, from ``broker``. Parts are
        polled in the answer's order; once poll() fails on a damaged batch, the parts after
        it stay unread (Kafka buffers them behind the failed fetch: module note, point 6),
        and are fetched again once the member reads on."""
        p = msg.partition
        if not self._mine(p, msg.correlation):
            return
        if self.stuck is not None:
            return
        cfg = self.cfg
        if msg.error == NONE:
            start = pos = self.position[p]
            # check.crcs: the first damaged batch at or past the position (records below it
            # are skipped unchecked: CompletedFetch.nextFetchedRecord)
            bad = next((d for d in msg.damaged if d >= pos), -1)
            for rec in msg.records:
                if rec[0] < pos:
                    continue
                if rec[0] == bad:
                    break
                self.emit("consume", group=cfg.group, consumer=self.consumer_name,
                          topic=cfg.topic, partition=p, offset=rec[0], value=rec[1],
                          hw=msg.high_watermark, leader_epoch=msg.leader_epoch)
                pos = rec[0] + 1
            self.position[p] = pos
            if bad >= 0:
                self._poll_fails(msg, broker, bad, start)
                return
            self._fetch(p)
        elif msg.error == OFFSET_OUT_OF_RANGE:
            self._reset(p, self.position[p])
        else:
            if msg.error in (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH):
                self.refresh_metadata()
            self._retry_later(p)

    def _poll_fails(self, msg: FetchResponse, broker: int, offset: int, start: int) -> None:
        """poll() met ``msg.partition``'s damaged batch at ``offset`` (served by ``broker``
        from ``start`` on): the records before it are returned, the position stays at the
        first one not returned, and poll() throws "Received exception when fetching the next
        record from <tp>. If needed, please seek past the record to continue consumption"
        (3.7.0 ``CompletedFetch.fetchRecords``; 2.8.0 ``Fetcher.PartitionRecords``), now
        and at every later poll (``corruptLastRecord``). Traced once, as ``corrupt_record``
        (where ``poll``); ``replica`` and ``leader`` are the broker whose copy is damaged
        (``leader`` names it as a follower's ``fetch`` finding does)."""
        p = msg.partition
        # the leader the fetch went to, under the epoch it answered with (the metadata's at
        # the time the fetch was sent: a leader fences a fetch naming another epoch)
        self.stuck = StuckFetch(p, offset, self.position[p], broker, msg.leader_epoch)
        self.emit("corrupt_record", topic=self.cfg.topic, partition=p, replica=broker,
                  offset=offset, where="poll", leader=broker, group=self.cfg.group,
                  consumer=self.consumer_name, fetch_offset=start,
                  position=self.position[p], hw=msg.high_watermark,
                  leader_epoch=msg.leader_epoch)

    # -- messages ----------------------------------------------------------------------------
    def handle(self, msg: Any, src: tuple[str, str]) -> None:
        if self.handle_metadata(msg, src):
            return
        t = type(msg)
        cfg = self.cfg
        if t is ReplicaFetchResponse:
            self._answered(msg.correlation)
            self._answering = True   # every part first, then the next requests
            broker = int(src[0].rpartition("-")[2])
            for part in msg.parts:
                self._on_fetch_response(FetchResponse(*part), broker)
            self._answering = False
            self._send_fetches()
        elif t is OffsetFetchResponse:
            p = msg.partition
            req = self._answered(msg.correlation)
            if req is None or not self._mine(p, msg.correlation):
                return
            if msg.error != NONE:
                if msg.error in COORDINATOR_ERRORS:
                    self._coordinator_unknown()
                self._retry_later(p)
                return
            self.emit("offset_fetch", group=cfg.group, consumer=self.consumer_name,
                      topic=cfg.topic, partition=p, offset=msg.offset, requested_us=req.sent_us)
            if msg.offset >= 0:
                self.position[p] = msg.offset
                self.committed[p] = msg.offset
                self._fetch(p)
            else:
                self._reset(p, -1)
        elif t is ListOffsetsResponse:
            p = msg.partition
            self._answered(msg.correlation)
            if not self._mine(p, msg.correlation):
                return
            if msg.error != NONE:
                self.refresh_metadata()
                self._retry_later(p)
                return
            old = self.position.get(p, -1)
            old = -1 - old if old < -1 else -1
            self.emit("offset_reset", group=cfg.group, consumer=self.consumer_name,
                      topic=cfg.topic, partition=p, old=old, new=msg.offset,
                      policy=cfg.auto_offset_reset)
            self.position[p] = msg.offset
            self._fetch(p)
        elif t is GroupAssignment:
            self._on_assignment(msg)
        elif t is GroupHeartbeatResponse:
            # the answer to the oldest heartbeat in flight to that broker (the message
            # carries no correlation; a connection answers in order)
            self._answered(min((c for c, r in self.requests.items()
                                if r.request == HEARTBEAT and r.node == src[0]), default=-1))
            self._last_coordinator_ms = self.now_ms
            if msg.error in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                # unknown, or a generation the coordinator does not have (it lost it in a
                # fail-over): resetGenerationOnResponseError — the partitions are lost
                self._lose_partitions()
                self._join()
            elif msg.error in COORDINATOR_ERRORS:
                self._coordinator_unknown()
        elif t is OffsetCommitResponse:
            self._answered(msg.correlation)
            self._on_commit_response(msg)
        elif t is Tick:
            self._on_tick(msg)

    def _on_tick(self, msg: Tick) -> None:
        cfg = self.cfg
        k = msg.kind
        if k == "request_timeout":
            self._on_request_timeout(msg.token)
        elif k == "retry":
            self._waiting.discard(msg.arg)
            if msg.arg not in self.outstanding:
                self._resume(msg.arg)
        elif k == "commit":
            self._commit(self.assigned)
            self.timer(cfg.auto_commit_interval_ms, Tick("commit", 0, 0))
        elif k == "heartbeat":
            coordinator = self.coordinator
            if self.generation >= 0 and coordinator is None:
                self.refresh_metadata()
            elif self.generation >= 0 and coordinator is not None:
                corr = self.next_correlation()
                self.send(coordinator, GroupHeartbeat(
                    cfg.group, self.consumer_name, self.incarnation, self.generation))
                self._track(corr, coordinator[0], HEARTBEAT, cfg.request_timeout_ms)
            if self.generation >= 0:
                if self.now_ms - self._last_coordinator_ms > cfg.session_timeout_ms:
                    self._join()   # the coordinator has been silent: find it again
            self.timer(cfg.heartbeat_interval_ms, Tick("heartbeat", 0, 0))
        elif k == "join_retry":
            if msg.token == self._join_corr:
                self._join()

    def _commit(self, partitions: tuple[int, ...] | list[int]) -> None:
        coordinator = self.coordinator
        if coordinator is None:
            if partitions:
                self.refresh_metadata()
            return
        for p in partitions:
            pos = self.position.get(p, -1)
            if pos >= 0 and pos != self.committed.get(p):
                self.committed[p] = pos
                self._commit_ids += 1
                corr = self.next_correlation()
                self.commits[corr] = (p, pos, self._commit_ids)
                self.emit("offset_commit", group=self.cfg.group, consumer=self.consumer_name,
                          topic=self.cfg.topic, partition=p, offset=pos,
                          generation=self.generation, commit_id=self._commit_ids)
                self.send(coordinator, OffsetCommit(
                    self.cfg.group, self.cfg.topic, p, pos, self.generation, corr))
                self._track(corr, coordinator[0], OFFSET_COMMIT, self.cfg.request_timeout_ms,
                            (p,))

    def _on_commit_response(self, r: OffsetCommitResponse) -> None:
        """A commit acknowledged is traced; a failed one (an error, a timeout, a disconnect)
        may be committed again (and after a coordinator error, the coordinator is looked up
        again). The last answer a prepared rebalance waits for lets it rejoin."""
        entry = self.commits.pop(r.correlation, None)
        if entry is None:
            return
        p, offset, commit_id = entry
        if r.error == NONE:
            self.emit("offset_commit_ack", group=self.cfg.group, consumer=self.consumer_name,
                      topic=self.cfg.topic, partition=p, offset=offset, commit_id=commit_id)
        else:
            if self.committed.get(p) == offset:
                del self.committed[p]
            if r.error in COORDINATOR_ERRORS:
                self._coordinator_unknown()
        if r.correlation in self._sync_commits:
            self._sync_commits.discard(r.correlation)
            if not self._sync_commits:
                self._join()
