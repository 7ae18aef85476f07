"""The broker actor: registration, heartbeats, the metadata cache, group offsets.

One per broker node, beside the broker's partition replicas. It does what Kafka's
``BrokerLifecycleManager``, ``MetadataCache`` and (the offset-storage half of) the
``GroupCoordinator`` do:

* registers with the controller at start-up, saying whether the last shutdown was clean
  (KAFKA-15586); gets a broker epoch; heartbeats every ``broker.heartbeat.interval.ms``;
  re-registers when the controller does not recognise its epoch;
* keeps the metadata cache (leader and leader epoch per partition) and routes the
  controller's PartitionState (LeaderAndIsr) and BrokerStates to the local replicas,
  dropping those from a stale controller epoch;
* answers clients' Metadata requests; is the group coordinator of the groups that map to
  it (:mod:`actors.group`: membership, generations, assignments, session timeouts) and
  stores their committed offsets durably (the ``__consumer_offsets`` log is not
  replicated in this model: the coordinator broker's disk keeps them).
"""

from __future__ import annotations

from typing import Any

from actors.core import Address, Machine
from actors.group import Group, Member
from actors.log import BrokerDisk
from actors.messages import (
    COORDINATOR_NOT_AVAILABLE,
    ILLEGAL_GENERATION,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    BrokerHeartbeat,
    BrokerRegistration,
    BrokerRegistrationResponse,
    BrokerStates,
    GroupAssignment,
    GroupHeartbeat,
    GroupHeartbeatResponse,
    JoinGroup,
    MetadataRequest,
    MetadataResponse,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    PartitionState,
    Tick,
    metadata_view_crc,
)

CONTROLLER: Address = ("controller", "controller")
GROUP_CHECK_MS = 1000


class Broker(Machine):
    def __init__(self, node: str, broker_id: int, disk: BrokerDisk, *, incarnation: int,
                 hosted: tuple[tuple[str, int], ...], heartbeat_interval_ms: int,
                 registration_retry_ms: int = 1000) -> None:
        super().__init__(node, "broker")
        self.broker_id = broker_id
        self.disk = disk
        self.incarnation = incarnation
        self.hosted = frozenset(hosted)
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.registration_retry_ms = registration_retry_ms
        self.broker_epoch = -1
        self.controller_epoch = -1
        self.metadata: dict[tuple[str, int], tuple[int, int]] = {}
        self.clean_shutdown = disk.clean_shutdown
        self._registering = 0
        self.partition_epochs: dict[tuple[str, int], int] = {}
        self.broker_states: tuple[tuple[int, int, bool], ...] = ()
        self.groups: dict[str, Group] = {}

    def start(self) -> None:
        self._register()
        self.timer(GROUP_CHECK_MS, Tick("group_session", 0, 0))

    def _register(self) -> None:
        self._registering += 1
        self.send(CONTROLLER, BrokerRegistration(self.broker_id, self.incarnation,
                                                 self.clean_shutdown))
        self.timer(self.registration_retry_ms, Tick("register_retry", self._registering, 0))

    def _view_crc(self) -> int:
        return metadata_view_crc(
            [(t, p, leader, epoch, self.partition_epochs.get((t, p), -1))
             for (t, p), (leader, epoch) in self.metadata.items()], self.broker_states)

    def handle(self, msg: Any, src: Address) -> None:
        t = type(msg)
        if (t is PartitionState or t is BrokerStates) and self.broker_epoch < 0:
            # Not registered in this incarnation: metadata is applied only after the
            # registration is acknowledged (KRaft's initial catch-up; ZooKeeper brokers
            # register before any LeaderAndIsr reaches them). A controller that still
            # knows the previous incarnation must not make this one a leader on its old
            # state; the view checksum in the first heartbeat brings everything back.
            return
        if t is PartitionState:
            if msg.controller_epoch < self.controller_epoch:
                return   # a zombie controller (controller-epoch fencing)
            self.controller_epoch = msg.controller_epoch
            key = (msg.topic, msg.partition)
            if msg.partition_epoch < self.partition_epochs.get(key, -1):
                return   # reordered: an older state of the same controller
            self.partition_epochs[key] = msg.partition_epoch
            self.metadata[key] = (msg.leader, msg.leader_epoch)
            if (msg.topic, msg.partition) in self.hosted:
                self.send((self.node, f"{msg.topic}-{msg.partition}"), msg)
        elif t is BrokerStates:
            if msg.controller_epoch < self.controller_epoch:
                return
            self.controller_epoch = msg.controller_epoch
            self.broker_states = msg.brokers
            for tp in sorted(self.hosted):
                self.send((self.node, f"{tp[0]}-{tp[1]}"), msg)
        elif t is BrokerRegistrationResponse:
            if msg.broker_epoch < 0:
                self.broker_epoch = -1
                self._register()
                return
            if self.broker_epoch < 0:
                self.broker_epoch = msg.broker_epoch
                self._registering += 1   # cancels the retry timer
                self.timer(self.heartbeat_interval_ms, Tick("heartbeat", 0, 0))
        elif t is Tick:
            if msg.kind == "heartbeat":
                if self.broker_epoch >= 0:
                    self.send(CONTROLLER, BrokerHeartbeat(self.broker_id, self.broker_epoch,
                                                              self._view_crc()))
                self.timer(self.heartbeat_interval_ms, Tick("heartbeat", 0, 0))
            elif msg.kind == "group_session":
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
            elif msg.kind == "register_retry":
                if msg.token == self._registering and self.broker_epoch < 0:
                    self._register()
        elif t is MetadataRequest:
            parts = tuple((tp[0], tp[1], leader, epoch)
                          for tp, (leader, epoch) in sorted(self.metadata.items()))
            self.send(src, MetadataResponse(parts, msg.correlation))
        elif t is OffsetCommit:
            group = self.groups.get(msg.group)
            if msg.generation >= 0 and (group is None or group.generation != msg.generation):
                err = ILLEGAL_GENERATION   # a zombie member of an older generation
            else:
                err = NONE
                self.disk.committed_offsets[(msg.group, msg.topic, msg.partition)] = msg.offset
            self.send(src, OffsetCommitResponse(msg.group, msg.topic, msg.partition, err,
                                                msg.correlation))
        elif t is JoinGroup:
            self._on_join(msg, src)
        elif t is GroupHeartbeat:
            self._on_group_heartbeat(msg, src)
        elif t is OffsetFetch:
            off = self.disk.committed_offsets.get((msg.group, msg.topic, msg.partition), -1)
            err = NONE if self.broker_epoch >= 0 else COORDINATOR_NOT_AVAILABLE
            self.send(src, OffsetFetchResponse(msg.group, msg.topic, msg.partition, off, err,
                                               msg.correlation))

    # -- group coordinator ---------------------------------------------------------------------
    def _on_join(self, m: JoinGroup, src: Address) -> None:
        g = self.groups.get(m.group)
        if g is None:
            g = self.groups[m.group] = Group(m.group)
        g.topic, g.partitions, g.assignor = m.topic, m.partitions, m.assignor
        old = g.members.get(m.member)
        g.members[m.member] = Member(src, m.incarnation, self.now_ms, m.session_timeout_ms)
        if old is not None and old.incarnation == m.incarnation and m.member in g.pending:
            g.pending.discard(m.member)         # rejoined after committing
            g.rejoined.add(m.member)
            if not g.pending:
                self._complete_rebalance(g)
            return
        if old is not None and old.incarnation == m.incarnation and g.generation > 0:
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
        if m.member in g.pending:                 # the notification may have been lost
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
