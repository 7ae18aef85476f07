"""A KRaft controller node: the Raft core (:mod:`actors.raft`) hosting the controller logic.

One :class:`QuorumController` per voter of ``controller.quorum.voters`` (scenario key
``cluster.controller_quorum``). It is the shell of docs/kraft-quorum.md around a
:class:`actors.raft.client.KafkaRaftClient` and the state machine Kafka's
``QuorumController`` is (3.7.0, ``metadata/src/main/java/org/apache/kafka/controller/``):

* **Raft I/O.** Inbound :class:`~actors.quorum_messages.RaftEnvelope` frames go to the
  client (``handle_request`` / ``handle_response``; a connection reset fails the request in
  flight to that peer: ``handle_send_failure``); after every call the client's outbox is
  sent and one self-addressed timer is kept at the deadline ``poll`` returns (a token makes
  stale ones no-ops).
* **Durability** (:class:`ControllerDisk`, the node's storage): the ``quorum-state`` file
  (every ``write_election_state`` is Kafka's atomic temp-file-and-rename write,
  ``FileBasedStateStore``) and the metadata log (KRaft flushes a voter's log before it
  fetches again and after each leader append: every entry is on disk) survive every crash;
  the high watermark does not (it is re-learnt from the leader).
* **The image.** Every controller replays the committed records (below the high watermark)
  in offset order into its committed image, a :class:`~actors.controller.ControllerStore`
  (``QuorumController.QuorumMetaLogListener.handleCommit`` -> ``replay``); the LeaderChange
  control record is skipped.
* **The active controller** is the Raft leader once it has replayed its own epoch's
  LeaderChange record (Kafka claims leadership in ``handleLeaderChange`` when the listener
  has caught up to the epoch start offset; here: the high watermark is past it). It runs
  today's :class:`~actors.controller.Controller` on a working copy of the committed image:
  like Kafka's active controller, which replays its own records into its in-memory state
  at once and reverts to the last committed snapshot when it loses the leadership
  (``SnapshotRegistry.revertToSnapshot`` in ``renounce``). What one operation changed
  becomes one batch of metadata records (``schedule_append``, ``appendRecords``); the
  operation's sends (answers to the brokers; the partition and broker states today's
  ``Controller`` pushes are dropped: brokers read them from the log through their
  :class:`MetadataObserver`) and trace events wait in a purgatory until the batch
  commits (``ControllerPurgatory``, keyed by offset): a change *takes effect* only once
  committed. An operation that wrote nothing answers once
  everything appended before it is committed (it may have read it). Losing the leadership
  drops the purgatory (the brokers retry against the new active controller, as Kafka's
  NOT_CONTROLLER path does). Every ``metadata.max.idle.interval.ms`` (500 ms) the active
  controller also appends a ``NoOpRecord`` (KIP-835), which keeps the log and the high
  watermark moving in a quiet cluster.
* A controller that is not active answers a broker's registration, heartbeat and controlled
  shutdown with :class:`~actors.quorum_messages.NotController` naming the leader it knows;
  other requests are dropped (their senders retry).

The trace: ``raft_transition`` (node, from, to, epoch, leader), ``raft_vote`` (a voter's
answer: candidate, epoch, granted), ``raft_hw`` (node, hw: on change), ``metadata_apply``
(node, first, offset: the committed records a controller replayed, or a broker's
:class:`MetadataObserver` applied, with ``observer``: true). A batch's ``Trace``
record is emitted by the first controller of the run to replay it (the shared
:class:`QuorumView`, which is also the runtime's view of the committed metadata).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from actors.controller import BrokerRecord, Controller, ControllerStore, PartitionRecord
from actors.core import Address, CancelTimer, Emit, Machine, Send, Timer
from actors.messages import (
    AlterPartition,
    AlterPartitionReassignments,
    BrokerHeartbeat,
    BrokerRegistration,
    BrokerStates,
    ControlledShutdownRequest,
    CreatePartitions,
    CreateTopics,
    ElectLeaders,
    PartitionState,
    UnregisterBroker,
)
from actors.nodes import BROKER_PREFIX, controller_node, raft_node_id
from actors.quorum_messages import NotController, RaftEnvelope, envelope, unwrap
from actors.raft.client import KafkaRaftClient
from actors.raft.config import QuorumConfig, RaftRules
from actors.raft.election import MemoryQuorumStateStore
from actors.raft.errors import NotLeaderError
from actors.raft.log import RaftLog
from actors.raft.messages import LeaderChangeMessage, VoteResponse
from actors.raft.timer import FOREVER

#: the requests only the active controller serves
_CONTROLLER_REQUESTS: Final = (BrokerRegistration, BrokerHeartbeat, ControlledShutdownRequest,
                               AlterPartition, ElectLeaders, AlterPartitionReassignments,
                               UnregisterBroker, CreateTopics, CreatePartitions)
#: of those, the ones a non-active controller answers with NotController
_REDIRECTED: Final = (BrokerRegistration, BrokerHeartbeat, ControlledShutdownRequest)
#: what today's :class:`Controller` pushes to brokers, which a quorum's brokers read from
#: the metadata log instead (:class:`MetadataObserver`): dropped
_PUBLISHED: Final = (PartitionState, BrokerStates)
#: the actor of a broker node that observes the metadata log (:class:`MetadataObserver`)
OBSERVER_ACTOR: Final = "raft"
#: the shortest wait between two polls of an observer whose client asks to be polled again
#: at once (see :meth:`MetadataObserver._step`)
OBSERVER_SPIN_MS: Final = 1
#: ``metadata.max.idle.interval.ms`` (KIP-835, Kafka 3.3+; its default): how often the
#: active controller appends a ``NoOpRecord`` (see :meth:`QuorumController._write_no_op`)
METADATA_MAX_IDLE_INTERVAL_MS: Final = 500


def raft_address(node_id: int, voters: tuple[int, ...]) -> Address:
    """Where the Raft messages of node ``node_id`` go: a voter's controller, else the
    observer actor of broker ``node_id``."""
    if node_id in voters:
        return (controller_node(node_id), "controller")
    return (f"{BROKER_PREFIX}{node_id}", OBSERVER_ACTOR)


@dataclass
class ControllerDisk:
    """A controller node's storage: the quorum-state file and the metadata log survive a
    crash (see the module note); the high watermark is in memory only."""

    log: RaftLog = field(default_factory=RaftLog)
    state: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)

    def crash(self, power_loss: bool, now_ms: int = 0) -> None:
        self.log.high_watermark = 0


@dataclass
class QuorumView:
    """The committed metadata as the runtime sees it (fault targets, convergence): the
    records every controller replays, applied once, in offset order, by whichever
    controller replays each first. Not read by any controller's decisions."""

    store: ControllerStore
    applied: int = 0


@dataclass(slots=True)
class RaftTick:
    token: int


@dataclass(slots=True)
class _InnerTimer:
    generation: int
    msg: Any


@dataclass(slots=True)
class _WriteNoOp:
    """The active controller's ``writeNoOpRecord`` event, for the activation ``generation``
    that scheduled it (a renounce makes it stale)."""

    generation: int


# -- metadata records ------------------------------------------------------------------------
#: PartitionRecord's fields in record order (after topic and partition), and those that are
#: lists of broker ids (tuples in the image; msgpack brings them back as lists)
_PARTITION_FIELDS: Final = ("replicas", "min_isr", "unclean", "leader", "leader_epoch", "isr",
                            "elr", "last_known_elr", "partition_epoch", "recovering",
                            "adding", "removing")
_ID_LISTS: Final = frozenset(("replicas", "isr", "elr", "last_known_elr", "adding",
                              "removing"))
#: the records that change a partition, and those that change a broker's registration
PARTITION_RECORDS: Final = ("PartitionRecord", "PartitionChangeRecord")
BROKER_RECORDS: Final = ("RegisterBrokerRecord", "BrokerRegistrationChangeRecord",
                         "UnregisterBrokerRecord")


def partition_record(p: PartitionRecord) -> tuple[Any, ...]:
    """``PartitionRecord``: a partition as it is created (the whole registration)."""
    return ("PartitionRecord", p.topic, p.partition,
            *(getattr(p, f) for f in _PARTITION_FIELDS))


def partition_change_record(before: tuple[Any, ...], after: tuple[Any, ...]
                            ) -> tuple[Any, ...]:
    """``PartitionChangeRecord``: the fields of partition ``after`` (a ``partition_record``)
    that differ from ``before``, as (field, value) pairs in record order (Kafka's
    ``PartitionChangeBuilder.build`` sets only what changed; isrlab also writes the leader
    and partition epochs the change bumps, which Kafka derives when it replays)."""
    return ("PartitionChangeRecord", after[1], after[2],
            tuple((f, a) for f, b, a in zip(_PARTITION_FIELDS, before[3:], after[3:],
                                            strict=True) if a != b))


def broker_record(b: int, r: BrokerRecord) -> tuple[Any, ...]:
    """``RegisterBrokerRecord``: broker ``b``'s registration (a new incarnation or epoch)."""
    return ("RegisterBrokerRecord", b, r.epoch, r.incarnation, r.fenced, r.shutting_down)


def meta_record(st: ControllerStore) -> tuple[Any, ...]:
    return ("ControllerMeta", st.controller_epoch, st.next_broker_epoch, st.bootstrapped)


def _partition_value(name: str, value: Any) -> Any:
    return tuple(value) if name in _ID_LISTS else value


def apply_record(st: ControllerStore, rec: Any) -> None:
    """Replay one committed record into an image (``QuorumController.replay``)."""
    if type(rec) is LeaderChangeMessage:
        return   # a control record
    kind = rec[0]
    if kind == "PartitionRecord":
        st.partitions[(rec[1], rec[2])] = PartitionRecord(
            rec[1], rec[2], *(_partition_value(f, v)
                              for f, v in zip(_PARTITION_FIELDS, rec[3:], strict=True)))
    elif kind == "PartitionChangeRecord":
        p = st.partitions[(rec[1], rec[2])]
        for name, value in rec[3]:
            setattr(p, name, _partition_value(name, value))
    elif kind == "RegisterBrokerRecord":
        st.brokers[rec[1]] = BrokerRecord(rec[2], rec[3], rec[4], rec[5])
    elif kind == "BrokerRegistrationChangeRecord":
        r = st.brokers[rec[1]]
        r.fenced, r.shutting_down = rec[3], rec[4]
    elif kind == "UnregisterBrokerRecord":
        st.brokers.pop(rec[1], None)
    elif kind == "ControllerMeta":
        st.controller_epoch, st.next_broker_epoch, st.bootstrapped = rec[1], rec[2], rec[3]
    elif kind not in ("TopicRecord", "Trace", "NoOpRecord"):
        raise ValueError(f"unknown metadata record {kind!r}")


_Snapshot = tuple[dict[tuple[str, int], tuple[Any, ...]], dict[int, tuple[Any, ...]],
                  tuple[Any, ...]]


def _snapshot(st: ControllerStore) -> _Snapshot:
    return ({k: partition_record(p) for k, p in st.partitions.items()},
            {b: broker_record(b, r) for b, r in st.brokers.items()}, meta_record(st))


def records_between(before: _Snapshot, st: ControllerStore) -> list[tuple[Any, ...]]:
    """The records that turn image ``before`` into ``st``, in Kafka's vocabulary and a
    canonical order: a ``RegisterBrokerRecord`` for a new registration (a new broker epoch),
    a ``BrokerRegistrationChangeRecord`` when only its fencing or controlled shutdown
    changed (3.7.0 ``ClusterControlManager``, metadata versions that have the record), an
    ``UnregisterBrokerRecord``; a ``TopicRecord`` before the first partition of a new
    topic, a ``PartitionRecord`` for a new partition, a ``PartitionChangeRecord`` with the
    changed fields otherwise. The controller's decisions change a working image and this
    writes what changed, so every path (registration, fencing, AlterPartition, elections,
    reassignments, creation) writes records of the same shape as Kafka's."""
    after = _snapshot(st)
    out: list[tuple[Any, ...]] = []
    if after[2] != before[2]:
        out.append(after[2])
    for b in sorted(set(before[1]) | set(after[1])):
        old, new = before[1].get(b), after[1].get(b)
        if new is None:
            out.append(("UnregisterBrokerRecord", b))
        elif old is None or old[2:4] != new[2:4]:
            out.append(new)
        elif old != new:
            out.append(("BrokerRegistrationChangeRecord", b, new[2], new[4], new[5]))
    topics = {k[0] for k in before[0]}
    for k in sorted(after[0]):
        old, new = before[0].get(k), after[0][k]
        if old is None:
            if k[0] not in topics:
                topics.add(k[0])
                out.append(("TopicRecord", k[0]))
            out.append(new)
        elif old != new:
            out.append(partition_change_record(old, new))
    return out


class _RaftShell(Machine):
    """What a controller and a broker's observer share of the Raft shell
    (docs/kraft-quorum.md): an inbound envelope handed to the client, a request in flight
    per peer (failed on a connection reset, or once ``quorum.request.timeout.ms`` passes
    unanswered), the client's outbox sent in envelopes, and one timer kept at the earlier
    of the deadline ``poll`` returns and the first request's timeout (a token makes stale
    ones no-ops)."""

    voters: tuple[int, ...]
    client: KafkaRaftClient | None
    config: QuorumConfig
    #: the request in flight to each peer: (correlation id, when it was sent, ms)
    _inflight: dict[int, tuple[int, int]]
    _tick_token: int
    _tick_at: int

    rng: random.Random
    raft_rules: RaftRules

    def _step(self) -> None:
        raise NotImplementedError

    def _accepts(self, peer: int) -> bool:
        """Whether Raft messages from node ``peer`` are handled (a voter serves observers
        too; an observer hears only voters)."""
        raise NotImplementedError

    def _start_client(self, node_id: int, log: RaftLog, store: MemoryQuorumStateStore) -> None:
        self.client = KafkaRaftClient(node_id, self.voters, log, store, self.rng, self.config,
                                      self.raft_rules)
        self.client.initialize(self.now_ms)
        self._step()

    def _raft_message(self, msg: Any, src: Address) -> bool:
        """An envelope or the shell's timer, handled here (True); else False."""
        t = type(msg)
        if t is RaftEnvelope:
            peer = raft_node_id(src[0])
            if self._accepts(peer):
                self._deliver(msg, peer)
            return True
        if t is RaftTick:
            self._on_tick(msg)
            return True
        return False

    def _deliver(self, msg: RaftEnvelope, peer: int) -> None:
        """An envelope from ``peer`` to the client (one it cannot decode is dropped), then
        a step."""
        client = self.client
        assert client is not None
        try:
            inner = unwrap(msg)
        except (ValueError, TypeError):
            return
        if msg.is_response:
            sent = self._inflight.get(peer)
            if sent is not None and sent[0] == msg.correlation_id:
                del self._inflight[peer]
            client.handle_response(peer, msg.correlation_id, inner, self.now_ms)
        else:
            client.handle_request(peer, msg.correlation_id, inner, self.now_ms)
        self._step()

    def connection_reset(self, peer: str) -> None:
        pid = raft_node_id(peer)
        sent = self._inflight.pop(pid, None)
        if sent is not None and self.client is not None:
            self.client.handle_send_failure(pid, sent[0], self.now_ms)
            self._step()

    def _on_tick(self, tick: RaftTick) -> None:
        """The timer: requests unanswered for ``quorum.request.timeout.ms`` fail first.
        Kafka's ``KafkaNetworkChannel`` sends through a ``NetworkClient`` built with that
        timeout (3.7.0 ``RaftManager.buildNetworkChannel``): a request it times out
        disconnects the node (``NetworkClient.handleTimedOutRequests``) and completes with
        ``BROKER_NOT_AVAILABLE`` (``KafkaNetworkChannel.sendOnComplete``), which the client
        handles as a failed request (backoff, then another voter). Without it, a request
        whose frames a crash discarded while a cut held them waited forever: an observer
        fetching from that voter stopped following the quorum (campaign seed 72)."""
        if tick.token != self._tick_token:
            return
        self._tick_at = -1
        client = self.client
        assert client is not None
        timeout = self.config.request_timeout_ms
        for pid in sorted(self._inflight):
            corr, sent_ms = self._inflight[pid]
            if self.now_ms >= sent_ms + timeout:
                del self._inflight[pid]
                peer = raft_address(pid, self.voters)[0]
                self.emit("request_failed", peer=peer, request="Raft", reason="timeout")
                self.disconnect(peer)
                client.handle_send_failure(pid, corr, self.now_ms)
        self._step()

    def _send_raft(self, destination: int, correlation_id: int, is_response: bool,
                   message: Any) -> None:
        if not is_response:
            self._inflight[destination] = (correlation_id, self.now_ms)
        self.send(raft_address(destination, self.voters),
                  envelope(correlation_id, is_response, message))

    def _arm(self, deadline: int) -> None:
        """Keep the one timer at ``deadline`` (ms; ``FOREVER``: none needed), or earlier
        at the first in-flight request's timeout."""
        if self._inflight:
            deadline = min(deadline, self.config.request_timeout_ms
                           + min(sent for _, sent in self._inflight.values()))
        if deadline != FOREVER and deadline != self._tick_at:
            self._tick_token += 1
            self._tick_at = deadline
            self._out.append(Timer(max(0, deadline * 1000 - self.now_us),
                                   RaftTick(self._tick_token)))


class QuorumController(_RaftShell):
    """One controller node of the quorum (see the module note)."""

    def __init__(self, node: str, node_id: int, voters: tuple[int, ...], disk: ControllerDisk,
                 base: ControllerStore, view: QuorumView,
                 make_controller: Callable[[ControllerStore], Controller],
                 rng: random.Random, raft_rules: RaftRules,
                 config: QuorumConfig | None = None) -> None:
        super().__init__(node, "controller")
        self.node_id = node_id
        self.voters = voters
        self.disk = disk
        self.base = base
        self.view = view
        self.make_controller = make_controller
        self.rng = rng
        self.raft_rules = raft_rules
        self.config = config or QuorumConfig()
        self.client: KafkaRaftClient | None = None
        #: the committed image and the next offset to replay into it
        self.image = copy.deepcopy(base)
        self.applied = 0
        self._tick_token = 0
        self._tick_at = -1
        self._transitions_seen = 0
        self._hw = -1
        #: the epoch of each entry of the log as traced so far (``_trace_appends``)
        self._traced_epochs = [e for _, e, _ in disk.log.entries]
        #: the request in flight to each peer (for a connection reset)
        self._inflight: dict[int, tuple[int, int]] = {}
        # the active controller
        self.active_epoch = -1
        self.working: ControllerStore | None = None
        self.inner: Controller | None = None
        self._generation = 0
        #: (offset, sends, emits): released once the high watermark passes offset
        self._purgatory: list[tuple[int, list[Send], list[Emit]]] = []

    @property
    def active(self) -> bool:
        return self.inner is not None

    # -- the runtime's calls ---------------------------------------------------------------
    def start(self) -> None:
        self._start_client(self.node_id, self.disk.log, self.disk.state)

    def _accepts(self, peer: int) -> bool:
        return peer >= 0

    def handle(self, msg: Any, src: Address) -> None:
        client = self.client
        assert client is not None
        t = type(msg)
        if self._raft_message(msg, src):
            return
        if t is _InnerTimer:
            if self.inner is not None and msg.generation == self._generation:
                self._run(msg.msg, (self.node, self.name))
                self._step()
        elif t is _WriteNoOp:
            if self.inner is not None and msg.generation == self._generation:
                self._write_no_op()
                self._step()
        elif isinstance(msg, _CONTROLLER_REQUESTS):
            if self.inner is not None:
                # the batch is appended now; a step then answers the fetches parked on the
                # leader (``_complete_parked_fetches``) and traces the append, as Kafka's
                # Raft I/O thread sends what the append completed at once
                # (``KafkaRaftClient.appendBatch`` -> ``fetchPurgatory.maybeComplete``).
                # Without it the answers waited in the outbox for the next message or
                # timer (up to ``fetch_max_wait_ms``), and a leader that crashed meanwhile
                # left its append untraced (a 1,000-seed campaign's seed 665 then showed a
                # metadata_divergence that was only a gap in the trace)
                self._run(msg, src)
                self._step()
            elif isinstance(msg, _REDIRECTED):
                leader = client.quorum.leader_id
                self.send(src, NotController(-1 if leader is None else leader))

    # -- the shell ------------------------------------------------------------------------
    def _step(self) -> None:
        """Poll, send, trace, replay what is committed, claim or renounce the active role,
        release the purgatory; again while an append happened; then re-arm the timer."""
        client = self.client
        assert client is not None
        now = self.now_ms
        deadline = FOREVER
        for _ in range(4):
            end = client.log.end_offset
            deadline = client.poll(now)
            self._send_outbox()
            self._trace_raft()
            self._trace_appends()
            self._trace_hw()
            self._replay()
            self._claim_or_renounce()
            self._release()
            self._trace_appends()
            if client.log.end_offset == end:
                break
        self._arm(deadline)

    def _trace_appends(self) -> None:
        """``raft_truncate`` and ``raft_append``: how this node's log changed since the last
        call. A truncation (a follower cutting a diverging suffix, a new leader dropping
        what it had past its LEO) is traced with the offset it cut to; then each run of new
        entries of one epoch is a ``raft_append`` (``epoch``: the entries', the leader's
        when it appended them; ``role``: leader or follower; ``records``: their kinds, the
        LeaderChange control record first in a new epoch). With the entries' epochs a
        reader rebuilds every voter's log as (offset, epoch) pairs, which identify a Raft
        entry (the checker's ``metadata_divergence``)."""
        client = self.client
        assert client is not None
        log = client.log
        traced = self._traced_epochs
        entries = log.entries
        base = log.start_offset
        keep = min(len(traced), len(entries))
        # the logs share a prefix; what changed is a suffix: find where it starts
        while keep > 0 and traced[keep - 1] != entries[keep - 1][1]:
            keep -= 1
        if keep < len(traced):
            self.emit("raft_truncate", voter=self.node_id, offset=base + keep,
                      old=base + len(traced), epoch=client.quorum.epoch)
            del traced[keep:]
        role = "leader" if client.quorum.is_leader() else "follower"
        i = keep
        while i < len(entries):
            epoch = entries[i][1]
            j = i
            while j < len(entries) and entries[j][1] == epoch:
                j += 1
            self.emit("raft_append", voter=self.node_id, epoch=epoch, first=base + i,
                      last=base + j - 1, role=role,
                      records=[("LeaderChange" if type(r) is LeaderChangeMessage else r[0])
                               for _, _, r in entries[i:j]])
            traced.extend([epoch] * (j - i))
            i = j

    def _send_outbox(self) -> None:
        client = self.client
        assert client is not None
        for o in client.drain():
            m = o.message
            if o.is_response and type(m) is VoteResponse:
                self.emit("raft_vote", voter=self.node_id, candidate=o.destination,
                          epoch=m.leader_epoch, granted=m.vote_granted)
            self._send_raft(o.destination, o.correlation_id, o.is_response, m)

    def _trace_raft(self) -> None:
        client = self.client
        assert client is not None
        q = client.quorum
        for frm, to, epoch in q.transitions[self._transitions_seen:]:
            self.emit("raft_transition", **{"from": frm}, to=to, epoch=epoch,
                      leader=q.leader_id_or_sentinel(), voter=self.node_id)
        self._transitions_seen = len(q.transitions)

    def _trace_hw(self) -> None:
        """``raft_hw`` on a change, after the log changes that brought the entries below it
        (``_trace_appends``)."""
        client = self.client
        assert client is not None
        q = client.quorum
        hw = client.log.high_watermark
        if hw != self._hw:
            self._hw = hw
            self.emit("raft_hw", voter=self.node_id, hw=hw, leo=client.log.end_offset,
                      epoch=q.epoch)

    def _replay(self) -> None:
        client = self.client
        assert client is not None
        if self.applied >= client.log.high_watermark:
            return
        first = self.applied
        for offset, _epoch, rec in client.log.committed(self.applied):
            apply_record(self.image, rec)
            if offset >= self.view.applied:
                # the first controller to replay this record: the runtime's view, and the
                # trace events of the decision that wrote it
                apply_record(self.view.store, rec)
                self.view.applied = offset + 1
                if type(rec) is tuple and rec[0] == "Trace":
                    for event, fields in rec[1]:
                        self.emit(event, **dict(fields))
            self.applied = offset + 1
        self.emit("metadata_apply", voter=self.node_id, first=first, offset=self.applied - 1)

    def _claim_or_renounce(self) -> None:
        client = self.client
        assert client is not None
        q = client.quorum
        if q.is_leader():
            epoch = q.epoch
            if self.inner is not None and self.active_epoch == epoch:
                return
            if self.inner is not None:
                self._renounce()
            start = q.leader_state().epoch_start_offset
            if client.log.high_watermark > start and self.applied >= client.log.high_watermark:
                self._claim(epoch)
        elif self.inner is not None:
            self._renounce()

    def _claim(self, epoch: int) -> None:
        """``QuorumController.claim``: active in ``epoch`` on a copy of the committed image;
        the controller epoch is the Raft epoch."""
        self._generation += 1
        self.active_epoch = epoch
        self.working = copy.deepcopy(self.image)
        self.working.controller_epoch = epoch - 1   # Controller.start bumps it
        self.inner = self.make_controller(self.working)
        self._run(None, (self.node, self.name))
        self._schedule_no_op()

    def _schedule_no_op(self) -> None:
        """``maybeScheduleNextWriteNoOpRecord``: the next ``NoOpRecord`` one
        ``metadata.max.idle.interval.ms`` from now, scheduled when the controller becomes
        active and again each time one is written; a renounce cancels it
        (``cancelNextWriteNoOpRecord``: here, a new generation makes it stale)."""
        self._out.append(Timer(METADATA_MAX_IDLE_INTERVAL_MS * 1000,
                               _WriteNoOp(self._generation)))

    def _write_no_op(self) -> None:
        """The ``writeNoOpRecord`` event (3.7.0 and 4.1.0 ``QuorumController``, KIP-835): the
        next one is scheduled first, then one ``NoOpRecord`` is appended as a batch of its
        own, whatever else was written meanwhile. It changes no image; what it does is
        keep the log moving, so a Fetch parked on the leader is answered and followers and
        brokers learn the high watermark within about the interval, and a broker's applied
        offset keeps advancing (its heartbeat's ``currentMetadataOffset``)."""
        client = self.client
        assert client is not None
        self._schedule_no_op()
        try:
            client.schedule_append(self.active_epoch, [("NoOpRecord",)], self.now_ms)
        except NotLeaderError:
            self._renounce()

    def _renounce(self) -> None:
        """``QuorumController.renounce``: back to the committed image; what waited for a
        commit is dropped."""
        self.emit("controller_renounced", voter=self.node_id, epoch=self.active_epoch,
                  dropped=len(self._purgatory))
        self._generation += 1
        self.active_epoch = -1
        self.working = None
        self.inner = None
        self._purgatory = []

    def _run(self, msg: Any, src: Address) -> None:
        """One controller operation on the working image; its changes become one batch."""
        inner, working, client = self.inner, self.working, self.client
        assert inner is not None and working is not None and client is not None
        inner.now_us = self.now_us
        before = _snapshot(working)
        if msg is None:
            inner.start()
        else:
            inner.handle(msg, src)
        sends: list[Send] = []
        emits: list[Emit] = []
        for e in inner.drain():
            if type(e) is Send:
                sends.append(e)
            elif type(e) is Emit:
                emits.append(e)
            elif type(e) is Timer:
                self._out.append(Timer(e.delay_us, _InnerTimer(self._generation, e.msg)))
            elif type(e) is CancelTimer:
                pass   # the controller's timers are not cancellable
        records: list[Any] = list(records_between(before, working))
        if records:
            if emits:
                records.append(("Trace", tuple((e.event, e.fields) for e in emits)))
            try:
                last = client.schedule_append(self.active_epoch, records, self.now_ms)
            except NotLeaderError:
                self._renounce()
                return
            self._purgatory.append((last, sends, []))
        else:
            self._purgatory.append((client.log.end_offset - 1, sends, emits))
        self._release()

    def _release(self) -> None:
        client = self.client
        assert client is not None
        hw = client.log.high_watermark
        while self._purgatory and self._purgatory[0][0] < hw:
            _, sends, emits = self._purgatory.pop(0)
            for e in emits:
                self._out.append(e)
            for s in sends:
                if type(s.msg) in _PUBLISHED:
                    continue   # brokers fetch the committed metadata (MetadataObserver)
                self._out.append(s)

    def leader_id(self) -> int:
        """The leader this node knows (-1: none)."""
        if self.client is None:
            return -1
        leader = self.client.quorum.leader_id
        return -1 if leader is None else leader


class MetadataHost(Protocol):
    """What a :class:`MetadataObserver` tells its broker (:class:`actors.broker.Broker`)."""

    def on_raft_leader(self, node: str) -> None: ...

    def on_metadata(self, partitions: list[tuple[str, int]], brokers: bool) -> None: ...


class MetadataObserver(_RaftShell):
    """A broker's Raft *observer* of the metadata log (KIP-595, KIP-631): actor ``raft``
    of node ``broker-<id>``, beside the broker actor that adopts it.

    It hosts a :class:`KafkaRaftClient` whose node id, the broker's, is not among the
    voters, so the client never votes nor stands: it fetches from the leader it knows and,
    when that one stops answering (its fetch timer, a request timeout, a failed answer),
    from any voter, whose answer names the current leader (3.7.0
    ``KafkaRaftClient.pollFollowerAsObserver``, ``maybeSendAnyVoterFetch``); the leader
    never counts it for the high watermark nor for check quorum (``LeaderState``). The
    shell is the controllers' (docs/kraft-quorum.md): every inbound envelope goes to the
    client, its outbox is sent, one timer is kept at the deadline ``poll`` returns.

    The records below the client's high watermark (its LEO capped by the leader's HW) are
    applied in offset order to the broker's metadata image (``metadata_apply``, node
    ``broker-<id>``, with ``observer``: true), and only then does the broker act on them
    (:meth:`MetadataHost.on_metadata`: Kafka's ``MetadataLoader`` publishing the committed
    image to ``BrokerMetadataPublisher``). The leader it learns is the controller its
    broker sends to (:meth:`MetadataHost.on_raft_leader`: 3.7.0
    ``RaftControllerNodeProvider`` answers the Raft client's ``leaderAndEpoch``).

    The log lives in memory: a restarted broker fetches it again from offset 0 (Kafka's
    brokers keep ``__cluster_metadata`` on disk; refetching only costs time)."""

    def __init__(self, node: str, broker_id: int, voters: tuple[int, ...],
                 base: ControllerStore, rng: random.Random, raft_rules: RaftRules,
                 config: QuorumConfig | None = None) -> None:
        super().__init__(node, OBSERVER_ACTOR)
        self.broker_id = broker_id
        self.voters = voters
        self.rng = rng
        self.raft_rules = raft_rules
        self.config = config or QuorumConfig()
        self.host: MetadataHost | None = None
        self.client: KafkaRaftClient | None = None
        #: the broker's metadata image and the next offset to apply to it
        self.image = copy.deepcopy(base)
        self.applied = 0
        self.leader: int | None = None
        self._tick_token = 0
        self._tick_at = -1
        self._inflight: dict[int, tuple[int, int]] = {}

    @property
    def offset(self) -> int:
        """The offset of the last record applied (-1: none): the heartbeat's
        ``currentMetadataOffset``."""
        return self.applied - 1

    def start(self) -> None:
        self._start_client(self.broker_id, RaftLog(), MemoryQuorumStateStore())

    def _accepts(self, peer: int) -> bool:
        return peer in self.voters

    def handle(self, msg: Any, src: Address) -> None:
        self._raft_message(msg, src)

    def _step(self) -> None:
        client = self.client
        assert client is not None
        deadline = client.poll(self.now_ms)
        for o in client.drain():
            self._send_raft(o.destination, o.correlation_id, o.is_response, o.message)
        leader = client.quorum.leader_id
        if leader is not None and leader != self.leader:
            self.leader = leader
            if self.host is not None:
                self.touch(self.host).on_raft_leader(controller_node(leader))
        self._apply()
        if deadline != FOREVER:
            # 3.7.0's observer spins (poll timeout 0) while one voter has its request in
            # flight and another is ready (findReadyVoter finds none, and
            # backoffBeforeAvailableVoter answers 0): in real time the spin lasts until
            # the answer or the request timeout; in virtual time it would never end
            deadline = max(deadline, self.now_ms + OBSERVER_SPIN_MS)
        self._arm(deadline)

    def _apply(self) -> None:
        """The committed records not applied yet, in offset order; then the broker acts."""
        client = self.client
        assert client is not None
        if self.applied >= client.log.high_watermark:
            return
        first = self.applied
        partitions: dict[tuple[str, int], None] = {}
        brokers = False
        for offset, _epoch, rec in client.log.committed(first):
            apply_record(self.image, rec)
            if type(rec) is tuple:
                if rec[0] in PARTITION_RECORDS:
                    partitions[(rec[1], rec[2])] = None
                elif rec[0] in BROKER_RECORDS:
                    brokers = True
            self.applied = offset + 1
        self.emit("metadata_apply", voter=self.broker_id, first=first, offset=self.applied - 1,
                  observer=True)
        if self.host is not None:
            self.touch(self.host).on_metadata(list(partitions), brokers)


__all__ = ["OBSERVER_ACTOR", "ControllerDisk", "MetadataHost", "MetadataObserver",
           "QuorumController", "QuorumView", "RaftTick", "apply_record", "raft_address",
           "records_between"]
