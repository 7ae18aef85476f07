"""The elected leader of an epoch: Kafka 3.7.0 ``LeaderState``.

The leader keeps a ``ReplicaState`` per voter (and per observer that fetches): its end
offset (the offset of its last Fetch), when it last fetched and last caught up, and whether
it has *acknowledged* this leader (answered BeginQuorumEpoch, or fetched). Voters that have
not are sent BeginQuorumEpoch until they do.

**High watermark** (``maybeUpdateHighWatermark``): sort the voters by end offset, largest
first (unknown last); the HW candidate is the one at index ``voters // 2`` — the largest
offset a majority holds, the leader counting as a voter. It becomes the HW only when it is
*above the epoch start offset*: a new leader exposes nothing, not even earlier epochs'
committed records, before a majority holds a record of its own epoch (the LeaderChange
record it writes first). That is Raft's rule that a leader commits only entries of its own
term, and it keeps the HW monotonic across leaders. A smaller candidate (a voter lost its
disk) leaves the HW where it is. Observers never count.

**Check quorum** (KAFKA-15489, 3.7.0): the leader resigns when it has not received a Fetch
from a majority of the voters (itself excluded: ``voters // 2`` others) within
1.5 x ``quorum.fetch.timeout.ms``; a one-voter quorum never does. The era flag
(:class:`actors.raft.config.RaftRules`) turns the check off for the KAFKA-15489 bug.

Not modelled: the ``BatchAccumulator`` (the client appends at once, see
:mod:`actors.raft.client`), ``describeQuorum`` and its observer session expiry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from actors.raft.election import ElectionState
from actors.raft.errors import IllegalArgumentError, IllegalStateError
from actors.raft.messages import LeaderChangeMessage
from actors.raft.states import EpochState
from actors.raft.timer import FOREVER, Deadline


@dataclass(slots=True)
class ReplicaState:
    """``LeaderState.ReplicaState``: what the leader knows of one replica."""

    node_id: int
    has_acknowledged_leader: bool
    end_offset: int | None = None
    last_fetch_timestamp: int = -1
    last_fetch_leader_log_end_offset: int = -1
    last_caught_up_timestamp: int = -1

    def update_follower_state(self, now_ms: int, fetch_offset: int,
                              leader_end_offset: int | None) -> None:
        """``ReplicaState.updateFollowerState``: caught up when it fetched at the leader's
        LEO, or at the LEO the leader had at its previous fetch (then caught up as of that
        fetch)."""
        if leader_end_offset is not None:
            if fetch_offset >= leader_end_offset:
                self.last_caught_up_timestamp = max(self.last_caught_up_timestamp, now_ms)
            elif (self.last_fetch_leader_log_end_offset > 0
                  and fetch_offset >= self.last_fetch_leader_log_end_offset):
                self.last_caught_up_timestamp = max(self.last_caught_up_timestamp,
                                                    self.last_fetch_timestamp)
            self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_timestamp = max(self.last_fetch_timestamp, now_ms)
        self.end_offset = fetch_offset
        self.has_acknowledged_leader = True

    def sort_key(self) -> tuple[int, int, int]:
        """``ReplicaState.compareTo``: known end offsets first, largest first, then id."""
        if self.end_offset is None:
            return (1, 0, self.node_id)
        return (0, -self.end_offset, self.node_id)


@dataclass(slots=True, eq=False)
class LeaderState(EpochState):
    name: ClassVar[str] = "leader"
    local_id: int
    epoch: int
    epoch_start_offset: int
    voters: frozenset[int]
    granting_voters: frozenset[int]
    check_quorum_timeout_ms: int
    check_quorum_timer: Deadline
    check_quorum: bool = True
    hw: int | None = None
    voter_states: dict[int, ReplicaState] = field(default_factory=dict)
    observer_states: dict[int, ReplicaState] = field(default_factory=dict)
    fetched_voters: set[int] = field(default_factory=set)
    resign_requested: bool = False

    def __post_init__(self) -> None:
        self.voter_states = {v: ReplicaState(v, v == self.local_id) for v in sorted(self.voters)}

    @property
    def high_watermark(self) -> int | None:
        return self.hw

    def election(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.local_id, self.voters)

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        return False

    # -- check quorum (KAFKA-15489) ------------------------------------------------------
    def time_until_check_quorum_expires(self, now_ms: int) -> int:
        """0 when the leader must resign; ``FOREVER`` for a one-voter quorum or an era
        without the check."""
        if len(self.voter_states) == 1 or not self.check_quorum:
            return FOREVER
        return self.check_quorum_timer.remaining_ms(now_ms)

    def update_check_quorum_for_following_voter(self, node_id: int, now_ms: int) -> None:
        """A Fetch from ``node_id``: once ``voters // 2`` distinct voters fetched, the
        check-quorum timer restarts."""
        if node_id == self.local_id:
            raise IllegalArgumentError("received a Fetch from the leader itself")
        if node_id in self.voter_states:
            self.fetched_voters.add(node_id)
        if len(self.fetched_voters) >= len(self.voter_states) // 2:
            self.fetched_voters.clear()
            self.check_quorum_timer.reset(now_ms, self.check_quorum_timeout_ms)

    # -- acknowledgement -----------------------------------------------------------------
    def non_acknowledging_voters(self) -> frozenset[int]:
        return frozenset(s.node_id for s in self.voter_states.values()
                         if not s.has_acknowledged_leader)

    def add_acknowledgement_from(self, node_id: int) -> None:
        state = self.voter_states.get(node_id)
        if state is None:
            raise IllegalArgumentError(f"unexpected acknowledgement from non-voter {node_id}")
        state.has_acknowledged_leader = True

    def leader_change_message(self) -> LeaderChangeMessage:
        """The control record a new leader appends first (``appendLeaderChangeMessage``)."""
        return LeaderChangeMessage(leader_id=self.local_id,
                                   voters=tuple(sorted(self.voter_states)),
                                   granting_voters=tuple(sorted(self.granting_voters)))

    def request_resign(self) -> None:
        self.resign_requested = True

    # -- high watermark ------------------------------------------------------------------
    def _by_descending_fetch_offset(self) -> list[ReplicaState]:
        return sorted(self.voter_states.values(), key=ReplicaState.sort_key)

    def non_leader_voters_by_descending_fetch_offset(self) -> list[int]:
        """The order of preferred successors a resigning leader sends in EndQuorumEpoch."""
        return [s.node_id for s in self._by_descending_fetch_offset()
                if s.node_id != self.local_id]

    def _maybe_update_high_watermark(self) -> bool:
        ranked = self._by_descending_fetch_offset()
        candidate = ranked[len(self.voter_states) // 2].end_offset
        if candidate is None or candidate <= self.epoch_start_offset:
            return False
        if self.hw is None or candidate > self.hw:
            self.hw = candidate
            return True
        # candidate < hw: a voter lost committed data; Kafka logs an error and keeps the HW
        return False

    def update_local_state(self, end_offset: int) -> bool:
        """The leader's own LEO moved; True when the HW moved."""
        state = self.voter_states[self.local_id]
        if state.end_offset is not None and state.end_offset > end_offset:
            raise IllegalStateError(f"non-monotonic update of the local end offset "
                                    f"{state.end_offset} -> {end_offset}")
        state.end_offset = end_offset
        return self._maybe_update_high_watermark()

    def update_replica_state(self, replica_id: int, now_ms: int, fetch_offset: int) -> bool:
        """A valid Fetch at ``fetch_offset`` from ``replica_id``; True when the HW moved.
        A negative id (a consumer) is ignored; an observer is tracked but never counts."""
        if replica_id < 0:
            return False
        if replica_id == self.local_id:
            raise IllegalStateError(f"remote replica id {replica_id} is the leader's")
        state = self.voter_states.get(replica_id)
        if state is None:
            state = self.observer_states.setdefault(replica_id, ReplicaState(replica_id, False))
        state.update_follower_state(now_ms, fetch_offset,
                                    self.voter_states[self.local_id].end_offset)
        self.update_check_quorum_for_following_voter(replica_id, now_ms)
        return replica_id in self.voter_states and self._maybe_update_high_watermark()

    def replica_state(self, node_id: int) -> ReplicaState:
        """A voter's or an observer's state (for describing the quorum)."""
        if node_id in self.voter_states:
            return self.voter_states[node_id]
        return self.observer_states[node_id]

    def describe_replica(self, node_id: int, now_ms: int) -> tuple[int, int, int]:
        """``describeQuorum``'s (logEndOffset, lastFetchTimestamp, lastCaughtUpTimestamp) of
        one replica: -1 for an unknown end offset; the leader itself is caught up and has
        fetched "now"."""
        state = self.replica_state(node_id)
        end = -1 if state.end_offset is None else state.end_offset
        if node_id == self.local_id:
            return end, now_ms, now_ms
        return end, state.last_fetch_timestamp, state.last_caught_up_timestamp
