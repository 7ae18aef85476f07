"""What a leader knows of each other replica: Kafka's ``Replica`` and its ``ReplicaState``.

The leader of a partition keeps one :class:`FollowerState` per remote replica of the
assignment — the follower's log end and start offsets, when it last fetched and the
leader's LEO then, when it was last caught up, the broker epoch it fetched with — updated
on every follower fetch (``Replica.updateFetchStateOrThrow``, which raises
:class:`StaleFetch` for an older incarnation) and reset on ``makeLeader``
(``resetReplicaState``); the leader HW, ISR shrink and ISR expansion of
:class:`actors.partition.Partition` (``Partition.maybeIncrementLeaderHW``,
``maybeShrinkIsr``, ``maybeExpandIsr``) are read from it. It is a plain value with no
machine behind it and imports nothing of the replica, so the state base
(:mod:`actors.local_replica`) and both sides of a replica can use it.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_OFFSET = -1
#: "Never": Kafka's 0 for lastCaughtUpTimeMs is the 1970 epoch, decades before any wall
#: clock; virtual time starts at 0, so "never" must be far in the past.
NEVER_MS = -(2**62)


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
