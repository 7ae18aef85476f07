"""The group coordinator: membership, generations and assignments of a consumer group.

Kafka's classic (eager) group protocol, compressed: members ``JoinGroup``; any change of
membership — a join, a ``session.timeout.ms`` without heartbeats, a member restarting
with a new incarnation — starts a new *generation* and the coordinator pushes every
member its partitions for it (``GroupAssignment``; in Kafka the group leader computes the
assignment with the configured assignor and SyncGroup distributes it — here the
coordinator runs the same assignors: ``RangeAssignor`` and ``RoundRobinAssignor``, which
Kafka runs under the eager protocol, and ``CooperativeStickyAssignor`` (KIP-429), which it
runs under the cooperative one: see :func:`protocol_of`).
A rebalance has Kafka's two steps: while *preparing* (``PreparingRebalance``) the members
that hold an assignment are told ``REBALANCE_IN_PROGRESS`` (the generation unchanged), commit
their positions — still accepted, the generation has not moved — and join again
(``ConsumerCoordinator.onJoinPrepare``); once every one of them has rejoined, or a session
timeout has passed (then the missing ones are dropped), the new generation is *completed*
and every member gets its partitions. Heartbeats carry the generation; a stale one is told
``REBALANCE_IN_PROGRESS`` and given its current assignment. Offset commits from a stale
generation are rejected (``ILLEGAL_GENERATION``), so a zombie member cannot move the group
back.

Membership is volatile (it lives in the coordinator broker's memory); committed offsets
are durable (the broker's disk). When the coordinator broker restarts, members find out
through ``UNKNOWN_MEMBER_ID`` and join again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.core import Address

#: the assignors isrlab's consumers offer, and the rebalance protocol each runs under
ASSIGNORS: dict[str, str] = {"range": "eager", "roundrobin": "eager",
                             "cooperative-sticky": "cooperative"}


def protocol_of(assignor: str) -> str:
    """The rebalance protocol an assignor runs under (``ConsumerPartitionAssignor
    .supportedProtocols``): "eager" — at a rebalance a member gives up every partition and
    starts each one it is given again from the committed offset (3.7.0
    ``ConsumerCoordinator.onJoinPrepare``, EAGER: ``assignFromSubscribed(emptySet)``) — or
    "cooperative" — it keeps the partitions it keeps, with their positions."""
    return ASSIGNORS[assignor]


def sticky(partitions: int, members: list[str], previous: dict[str, tuple[int, ...]]
           ) -> dict[str, tuple[int, ...]]:
    """``CooperativeStickyAssignor`` for one topic: balanced (every member ``n // m`` or one
    more partitions), keeping as many partitions with their previous owner as balance
    allows. Members that owned more come first for the larger quotas; the partitions freed
    or never owned go, lowest first, to the members with the fewest (then by name)."""
    if not members:
        return {}
    per, extra = divmod(partitions, len(members))
    owned = {m: sorted(p for p in previous.get(m, ()) if p < partitions) for m in members}
    out: dict[str, list[int]] = {}
    taken: set[int] = set()
    for m in sorted(members, key=lambda x: (-len(owned[x]), x)):
        quota = per + (1 if extra > 0 and len(owned[m]) > per else 0)
        extra -= quota - per
        keep = [p for p in owned[m] if p not in taken][:quota]
        out[m] = keep
        taken.update(keep)
    for p in range(partitions):
        if p in taken:
            continue
        m = min(members, key=lambda x: (len(out[x]), x))
        out[m].append(p)
    return {m: tuple(sorted(out[m])) for m in members}


def assign(partitions: int, members: int, member: int, assignor: str) -> tuple[int, ...]:
    """Kafka's RangeAssignor / RoundRobinAssignor for one topic, for member ``member`` of
    ``members`` (members sorted by id)."""
    if assignor == "roundrobin":
        return tuple(p for p in range(partitions) if p % members == member)
    per, extra = divmod(partitions, members)
    start = member * per + min(member, extra)
    return tuple(range(start, start + per + (1 if member < extra else 0)))


@dataclass(slots=True)
class Member:
    address: Address
    incarnation: int
    last_heartbeat_ms: int
    session_timeout_ms: int


@dataclass(slots=True)
class Group:
    name: str
    topic: str = ""
    partitions: int = 0
    assignor: str = "range"
    generation: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    assignment: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: PreparingRebalance: the members still to rejoin, and until when they may
    pending: set[str] = field(default_factory=set)
    #: PreparingRebalance: the members that have rejoined already
    rejoined: set[str] = field(default_factory=set)
    prepare_deadline_ms: int = 0
    prepare_reason: str = ""

    def rebalance(self) -> None:
        """A new generation: every member gets its share of the topic's partitions."""
        self.generation += 1
        names = sorted(self.members)
        if self.assignor == "cooperative-sticky":
            self.assignment = sticky(self.partitions, names, self.assignment)
            return
        self.assignment = {m: assign(self.partitions, len(names), i, self.assignor)
                           for i, m in enumerate(names)}

    def expired(self, now_ms: int) -> list[str]:
        return [m for m, st in sorted(self.members.items())
                if now_ms - st.last_heartbeat_ms > st.session_timeout_ms]
