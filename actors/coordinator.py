"""The group coordinator on a broker: Kafka's ``GroupCoordinator`` + ``GroupMetadataManager``.

A consumer group lives in partition ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``
of the internal topic ``__consumer_offsets`` (``GroupMetadataManager.partitionFor``, Java's
``String.hashCode``), and its coordinator is whichever broker leads that partition. The
partition is replicated by the same replica code as any other, so coordinator fail-over is
that partition's leader election, and what the group had committed survives exactly as far
as the partition's records do.

* **Election** (``onElection`` / ``loadGroupsForPartition``): the new leader loads every
  record of the partition up to its log end offset (``doLoadGroupsAndOffsets`` reads to
  ``logEndOffset``, not to the HW) — offset commits and group metadata, the last record per
  key winning — and meanwhile answers ``COORDINATOR_LOAD_IN_PROGRESS``. Loading takes
  ``LOAD_MS_BASE`` plus ``LOAD_MS_PER_1000`` per thousand records (Kafka loads on a
  scheduler thread, reading the log in chunks). Loaded members keep their generation;
  their session timers restart at the load.
* **Resignation** (``onResignation``): the groups are dropped from memory; requests are
  answered ``NOT_COORDINATOR`` and the members look the coordinator up again.
* **Offset commit** (``storeOffsets``): a record appended to the partition's leader with
  ``offsets.commit.required.acks`` (-1: the commit is answered once the HW passes it, or
  after ``offsets.commit.timeout.ms`` with REQUEST_TIMED_OUT); only then does it enter the
  cache that OffsetFetch reads (``putCacheCallback``). Append errors map as Kafka maps them
  (NOT_ENOUGH_REPLICAS* → COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER →
  NOT_COORDINATOR).
* **Group metadata** (``storeGroup``): every completed generation is a record (members,
  incarnations, assignment), so a new coordinator knows the members.

Membership and rebalances are :mod:`actors.group`'s. A record's value carries, after the
payload, the writer's ``broker.incarnation.n``, so that no two records of the run are equal
(the checkers' duplicate rule applies to every partition).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from actors.core import Address, Machine
from actors.fetcher import java_abs, java_string_hash
from actors.group import Group, Member
from actors.messages import (
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_OR_FOLLOWER,
    REBALANCE_IN_PROGRESS,
    REQUEST_TIMED_OUT,
    UNKNOWN_MEMBER_ID,
    GroupAssignment,
    GroupHeartbeat,
    GroupHeartbeatResponse,
    JoinGroup,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    Tick,
)

if TYPE_CHECKING:
    from actors.replica import Replica

OFFSETS_TOPIC: Final = "__consumer_offsets"
GROUP_COORDINATOR: Final = "group-coordinator"
NOT_COORDINATOR: Final = "NOT_COORDINATOR"
COORDINATOR_LOAD_IN_PROGRESS: Final = "COORDINATOR_LOAD_IN_PROGRESS"
#: the errors after which a member looks its coordinator up again
COORDINATOR_ERRORS: Final = frozenset({NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
                                       COORDINATOR_LOAD_IN_PROGRESS})
GROUP_CHECK_MS: Final = 1000
LOAD_MS_BASE: Final = 1
LOAD_MS_PER_1000: Final = 1


def partition_for(group: str, num_partitions: int) -> int:
    """``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) % n``."""
    return java_abs(java_string_hash(group)) % num_partitions


def coordinator_error(append_error: str) -> str:
    """``GroupMetadataManager.storeOffsets``' mapping of an append error to a commit's."""
    if append_error in (NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                        "UNKNOWN_TOPIC_OR_PARTITION"):
        return COORDINATOR_NOT_AVAILABLE
    if append_error == NOT_LEADER_OR_FOLLOWER:
        return NOT_COORDINATOR
    return append_error


@dataclass(slots=True)
class PendingCommit:
    """An offset commit appended and waiting for the HW (``DelayedProduce``)."""
    src: Address
    req: OffsetCommit
    partition: int           # of __consumer_offsets
    required_offset: int
    token: int
    handle: int


class GroupCoordinator(Machine):
    def __init__(self, node: str, broker_id: int, incarnation: int, *, num_partitions: int,
                 commit_timeout_ms: int = 5000) -> None:
        super().__init__(node, GROUP_COORDINATOR)
        self.broker_id = broker_id
        self.incarnation = incarnation
        self.num_partitions = num_partitions
        self.commit_timeout_ms = commit_timeout_ms
        #: the __consumer_offsets replicas on this broker, by partition
        self.replicas: dict[int, Replica] = {}
        #: partitions this broker leads: "loading" or "loaded", and the leader epoch
        self.state: dict[int, tuple[str, int]] = {}
        self.groups: dict[str, Group] = {}
        self.committed: dict[tuple[str, str, int], int] = {}
        self.pending: list[PendingCommit] = []
        self._n = 0
        self._token = 0

    def start(self) -> None:
        self.timer(GROUP_CHECK_MS, Tick("group_session", 0, 0))

    # -- which groups this broker coordinates ------------------------------------------------
    def _status(self, group: str) -> str:
        st = self.state.get(partition_for(group, self.num_partitions))
        if st is None:
            return NOT_COORDINATOR
        return NONE if st[0] == "loaded" else COORDINATOR_LOAD_IN_PROGRESS

    def on_partition_change(self, r: Replica) -> None:
        """The offsets partition ``r`` leads here changed (election, resignation, HW)."""
        p = r.partition
        st = self.state.get(p)
        if r.role == "leader":
            if st is None or st[1] != r.leader_epoch:
                if st is not None:
                    self._unload(p, "new leader epoch")
                self.state[p] = ("loading", r.leader_epoch)
                n = r.leo - r.log.log_start_offset
                self.emit("coordinator_load", partition=p, leader_epoch=r.leader_epoch,
                          log_end_offset=r.leo)
                self.timer(LOAD_MS_BASE + LOAD_MS_PER_1000 * (n // 1000),
                           Tick("coordinator_load", p, r.leader_epoch))
            self._complete_pending(r)
        elif st is not None:
            self._unload(p, "resigned")

    def _unload(self, p: int, reason: str) -> None:
        """``onResignation``: the partition's groups leave memory; commits in flight on it
        fail with NOT_COORDINATOR."""
        del self.state[p]
        for name in [g for g in self.groups if partition_for(g, self.num_partitions) == p]:
            del self.groups[name]
        for key in [k for k in self.committed if partition_for(k[0], self.num_partitions) == p]:
            del self.committed[key]
        for c in [c for c in self.pending if c.partition == p]:
            self._answer_commit(c, NOT_COORDINATOR)
        self.emit("coordinator_unload", partition=p, reason=reason)

    def _load(self, p: int, epoch: int) -> None:
        r = self.replicas.get(p)
        st = self.state.get(p)
        if r is None or st != ("loading", epoch) or r.role != "leader":
            return
        offsets = 0
        for rec in r.log.read(r.log.log_start_offset, r.leo, r.leo + 1):
            key = rec[6]
            if not isinstance(key, str):
                continue
            payload = rec[1].rsplit("|", 1)[0]
            kind, _, rest = key.partition("|")
            if kind == "offset":
                group, topic, part = rest.split("|")
                self.committed[(group, topic, int(part))] = int(payload)
                offsets += 1
            elif kind == "group":
                self.groups[rest] = self._group_from(rest, json.loads(payload))
        self.state[p] = ("loaded", epoch)
        self.emit("coordinator_loaded", partition=p, leader_epoch=epoch,
                  groups=sorted(g for g in self.groups
                                if partition_for(g, self.num_partitions) == p),
                  offsets=offsets, log_end_offset=r.leo)

    def _group_from(self, name: str, d: dict[str, Any]) -> Group:
        g = Group(name, d["topic"], d["partitions"], d["assignor"], d["generation"])
        for m, (node, actor, inc, timeout) in sorted(d["members"].items()):
            g.members[m] = Member((node, actor), inc, self.now_ms, timeout)
        g.assignment = {m: tuple(ps) for m, ps in sorted(d["assignment"].items())}
        return g

    # -- appends to the offsets partition ----------------------------------------------------
    def _value(self, payload: str) -> str:
        self._n += 1
        return f"{payload}|{self.broker_id}.{self.incarnation}.{self._n}"

    def _append(self, group: str, key: str, payload: str) -> tuple[str, int, int]:
        """Append one record for ``group``: (error, partition, offset it must reach)."""
        p = partition_for(group, self.num_partitions)
        r = self.replicas.get(p)
        if r is None:
            return NOT_LEADER_OR_FOLLOWER, p, -1
        err, end = self.touch(r).append_as_coordinator(key, self._value(payload))
        return err, p, end

    def _store_group(self, g: Group) -> None:
        """``storeGroup``: the generation's membership and assignment, as a record."""
        d = {"topic": g.topic, "partitions": g.partitions, "assignor": g.assignor,
             "generation": g.generation,
             "members": {m: [st.address[0], st.address[1], st.incarnation,
                             st.session_timeout_ms] for m, st in sorted(g.members.items())},
             "assignment": {m: list(ps) for m, ps in sorted(g.assignment.items())}}
        self._append(g.name, f"group|{g.name}", json.dumps(d, sort_keys=True))

    def _complete_pending(self, r: Replica) -> None:
        if not self.pending:
            return
        for c in [c for c in self.pending if c.partition == r.partition]:
            if r.hw >= c.required_offset:
                err = (NONE if len(r.maximal_isr) >= r.effective_min_isr()
                       else NOT_ENOUGH_REPLICAS_AFTER_APPEND)
                self._answer_commit(c, coordinator_error(err))

    def _answer_commit(self, c: PendingCommit, error: str) -> None:
        self.pending.remove(c)
        self.cancel_timer(c.handle)
        if error == NONE:
            self.committed[(c.req.group, c.req.topic, c.req.partition)] = c.req.offset
        self.send(c.src, OffsetCommitResponse(c.req.group, c.req.topic, c.req.partition,
                                              error, c.req.correlation))

    # -- requests ------------------------------------------------------------------------------
    def handle(self, msg: Any, src: Address) -> None:
        t = type(msg)
        if t is Tick:
            self._on_tick(msg)
            return
        status = self._status(msg.group)
        if t is JoinGroup:
            if status != NONE:
                self.send(src, GroupAssignment(msg.group, msg.member, -1, (), status,
                                               msg.correlation))
            else:
                self._on_join(msg, src)
        elif t is GroupHeartbeat:
            if status != NONE:
                self.send(src, GroupHeartbeatResponse(msg.group, msg.member, status, -1))
            else:
                self._on_group_heartbeat(msg, src)
        elif t is OffsetCommit:
            self._on_offset_commit(msg, src, status)
        elif t is OffsetFetch:
            off = self.committed.get((msg.group, msg.topic, msg.partition), -1)
            self.send(src, OffsetFetchResponse(msg.group, msg.topic, msg.partition,
                                               off if status == NONE else -1, status,
                                               msg.correlation))

    def _on_offset_commit(self, m: OffsetCommit, src: Address, status: str) -> None:
        group = self.groups.get(m.group)
        if status != NONE:
            err = status
        elif m.generation >= 0 and (group is None or group.generation != m.generation):
            err = ILLEGAL_GENERATION   # a zombie member of an older generation
        else:
            err, p, end = self._append(m.group, f"offset|{m.group}|{m.topic}|{m.partition}",
                                       str(m.offset))
            if err == NONE:
                self._token += 1
                handle = self.timer(self.commit_timeout_ms,
                                    Tick("commit_timeout", self._token, 0), cancellable=True)
                c = PendingCommit(src, m, p, end, self._token, handle)
                self.pending.append(c)
                self._complete_pending(self.replicas[p])
                return
            err = coordinator_error(err)
        self.send(src, OffsetCommitResponse(m.group, m.topic, m.partition, err,
                                            m.correlation))

    def _on_tick(self, t: Tick) -> None:
        if t.kind == "coordinator_load":
            self._load(t.token, t.arg)
        elif t.kind == "commit_timeout":
            for c in self.pending:
                if c.token == t.token:
                    self._answer_commit(c, REQUEST_TIMED_OUT)
                    break
        elif t.kind == "group_session":
            for name in sorted(self.groups):
                g = self.groups[name]
                gone = g.expired(self.now_ms)
                if g.pending and self.now_ms >= g.prepare_deadline_ms:
                    gone = sorted(set(gone) | g.pending)   # never rejoined
                for m in gone:
                    del g.members[m]
                    g.pending.discard(m)
                if gone:
                    self._rebalance(g, f"session timeout of {', '.join(gone)}")
            self.timer(GROUP_CHECK_MS, Tick("group_session", 0, 0))

    # -- membership (actors.group) -------------------------------------------------------------
    def _on_join(self, m: JoinGroup, src: Address) -> None:
        g = self.groups.get(m.group)
        if g is None:
            g = self.groups[m.group] = Group(m.group)
        # partitions only grow: a member with older metadata does not shrink the group's
        grew = m.partitions > g.partitions
        g.topic, g.partitions, g.assignor = m.topic, max(g.partitions, m.partitions), m.assignor
        old = g.members.get(m.member)
        g.members[m.member] = Member(src, m.incarnation, self.now_ms, m.session_timeout_ms)
        if old is not None and old.incarnation == m.incarnation and m.member in g.pending:
            g.pending.discard(m.member)         # rejoined after committing
            g.rejoined.add(m.member)
            if not g.pending:
                self._complete_rebalance(g)
            return
        if old is not None and old.incarnation == m.incarnation and g.generation > 0:
            if grew and not g.pending:
                # a member saw the topic grow: a new generation spreads the new partitions
                self._rebalance(g, f"{m.member}: metadata changed ({m.topic} has "
                                f"{m.partitions} partitions)", joined=m.member)
                return
            if not g.pending:
                self.send(src, GroupAssignment(g.name, m.member, g.generation,
                                               g.assignment.get(m.member, ()), NONE,
                                               m.correlation))
            return
        self._rebalance(g, f"{m.member} joined" if old is None else f"{m.member} restarted",
                        joined=m.member)

    def _rebalance(self, g: Group, reason: str, joined: str = "") -> None:
        """``PreparingRebalance``: every other member holding partitions must commit and
        rejoin first; with none, the new generation is completed at once."""
        holders = {name for name in g.members
                   if name != joined and name not in g.rejoined and g.assignment.get(name)}
        g.prepare_reason = reason if not g.pending else f"{g.prepare_reason}; {reason}"
        told = set(g.pending)
        g.pending = (g.pending | holders) & set(g.members)
        g.pending.discard(joined)
        if not g.pending:
            self._complete_rebalance(g)
            return
        g.prepare_deadline_ms = self.now_ms + max(
            (g.members[n].session_timeout_ms for n in g.pending), default=0)
        for name in sorted(g.pending - told):
            self.send(g.members[name].address, GroupAssignment(
                g.name, name, g.generation, g.assignment.get(name, ()), REBALANCE_IN_PROGRESS,
                0))

    def _complete_rebalance(self, g: Group) -> None:
        reason, g.prepare_reason = g.prepare_reason, ""
        g.rejoined.clear()
        g.rebalance()
        self.emit("rebalance", group=g.name, generation=g.generation, reason=reason,
                  assignment={m: list(p) for m, p in sorted(g.assignment.items())})
        self._store_group(g)
        for name, member in sorted(g.members.items()):
            self.send(member.address, GroupAssignment(g.name, name, g.generation,
                                                      g.assignment[name], NONE, 0))

    def _on_group_heartbeat(self, m: GroupHeartbeat, src: Address) -> None:
        g = self.groups.get(m.group)
        member = g.members.get(m.member) if g is not None else None
        if g is None or member is None or member.incarnation != m.incarnation:
            self.send(src, GroupHeartbeatResponse(m.group, m.member, UNKNOWN_MEMBER_ID, -1))
            return
        member.last_heartbeat_ms = self.now_ms
        if m.generation > g.generation:
            # the member holds a generation this coordinator never completed: the record of
            # it was lost with the previous coordinator (it is written beside the
            # assignment, not before it). Kafka's handleHeartbeat checks the generation
            # first: ILLEGAL_GENERATION, and the member rejoins with its partitions lost.
            self.send(src, GroupHeartbeatResponse(m.group, m.member, ILLEGAL_GENERATION,
                                                  g.generation))
        elif m.member in g.pending:                 # the notification may have been lost
            self.send(src, GroupHeartbeatResponse(m.group, m.member, REBALANCE_IN_PROGRESS,
                                                  g.generation))
            self.send(src, GroupAssignment(g.name, m.member, g.generation,
                                           g.assignment.get(m.member, ()),
                                           REBALANCE_IN_PROGRESS, 0))
        elif m.generation != g.generation:
            self.send(src, GroupHeartbeatResponse(m.group, m.member, REBALANCE_IN_PROGRESS,
                                                  g.generation))
            self.send(src, GroupAssignment(g.name, m.member, g.generation,
                                           g.assignment.get(m.member, ()), NONE, 0))
        else:
            self.send(src, GroupHeartbeatResponse(m.group, m.member, NONE, g.generation))
