"""The group coordinator: membership, generations and assignments of a consumer group.

Kafka's classic (eager) group protocol, compressed: members ``JoinGroup``; any change of
membership — a join, a ``session.timeout.ms`` without heartbeats, a member restarting
with a new incarnation — starts a new *generation* and the coordinator pushes every
member its partitions for it (``GroupAssignment``; in Kafka the group leader computes the
assignment with the configured assignor and SyncGroup distributes it — here the
coordinator runs the same assignors, ``RangeAssignor`` and ``RoundRobinAssignor``).
Heartbeats carry the generation; a stale one is told ``REBALANCE_IN_PROGRESS`` and given
its current assignment. Offset commits from a stale generation are rejected
(``ILLEGAL_GENERATION``), so a zombie member cannot move the group back.

Membership is volatile (it lives in the coordinator broker's memory); committed offsets
are durable (the broker's disk). When the coordinator broker restarts, members find out
through ``UNKNOWN_MEMBER_ID`` and join again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actors.core import Address


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

    def rebalance(self) -> None:
        """A new generation: every member gets its share of the topic's partitions."""
        self.generation += 1
        names = sorted(self.members)
        self.assignment = {m: assign(self.partitions, len(names), i, self.assignor)
                           for i, m in enumerate(names)}

    def expired(self, now_ms: int) -> list[str]:
        return [m for m, st in sorted(self.members.items())
                if now_ms - st.last_heartbeat_ms > st.session_timeout_ms]
