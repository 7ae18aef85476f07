"""The epoch states other than candidate and leader: Kafka 3.7.0 ``EpochState`` and its
``UnattachedState``, ``VotedState``, ``FollowerState`` and ``ResignedState``.

A node is in exactly one epoch state at a time (:class:`actors.raft.quorum.QuorumState`
holds it). Each knows its epoch, the :class:`ElectionState` it persists, the high watermark
it carries (the last one this node learnt; a new leader starts with none), its timers as
deadlines, and whether it may grant a vote (``EpochState.canGrantVote``: the caller has
already compared logs and passes ``is_log_up_to_date``):

* *unattached* — knows the epoch but neither a leader nor a vote: grants a vote to any
  candidate whose log is at least as up to date; its election timer expiring makes it a
  candidate (a voter) — an observer's never expires once it learnt a higher epoch;
* *voted* — voted for ``voted_id`` in this epoch: grants only that candidate again (one
  vote per epoch, kept across a crash by the quorum-state file);
* *follower* — knows the leader: grants no vote in this epoch; fetches, and becomes a
  candidate (a voter) when no fetch succeeded within ``quorum.fetch.timeout.ms``. Its high
  watermark only rises (``updateHighWatermark``);
* *resigned* — was the leader of this epoch (shut down, check quorum failed, or restarted
  as leader): grants no vote in this epoch, sends EndQuorumEpoch to the voters until each
  acknowledges, and becomes a candidate when its election timer expires.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from actors.raft.election import ElectionState
from actors.raft.errors import IllegalArgumentError
from actors.raft.timer import Deadline


class EpochState:
    """Kafka's ``EpochState`` interface."""

    name: ClassVar[str] = "?"
    epoch: int

    def election(self) -> ElectionState:
        raise NotImplementedError

    @property
    def high_watermark(self) -> int | None:
        return None

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        raise NotImplementedError


@dataclass(slots=True, eq=False)
class UnattachedState(EpochState):
    name: ClassVar[str] = "unattached"
    epoch: int
    voters: frozenset[int]
    carried_high_watermark: int | None
    election_timeout_ms: int
    election_timer: Deadline

    def election(self) -> ElectionState:
        return ElectionState.with_unknown_leader(self.epoch, self.voters)

    @property
    def high_watermark(self) -> int | None:
        return self.carried_high_watermark

    def remaining_election_time_ms(self, now_ms: int) -> int:
        return self.election_timer.remaining_ms(now_ms)

    def has_election_timeout_expired(self, now_ms: int) -> bool:
        return self.election_timer.expired(now_ms)

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        return is_log_up_to_date


@dataclass(slots=True, eq=False)
class VotedState(EpochState):
    name: ClassVar[str] = "voted"
    epoch: int
    voted_id: int
    voters: frozenset[int]
    carried_high_watermark: int | None
    election_timer: Deadline

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, -1, self.voted_id, self.voters)

    @property
    def high_watermark(self) -> int | None:
        return self.carried_high_watermark

    def remaining_election_time_ms(self, now_ms: int) -> int:
        return self.election_timer.remaining_ms(now_ms)

    def has_election_timeout_expired(self, now_ms: int) -> bool:
        return self.election_timer.expired(now_ms)

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        """Only the candidate already voted for (``VotedState.canGrantVote``: the log check
        is not repeated for it)."""
        return candidate_id == self.voted_id


@dataclass(slots=True, eq=False)
class FollowerState(EpochState):
    name: ClassVar[str] = "follower"
    epoch: int
    leader_id: int
    voters: frozenset[int]
    carried_high_watermark: int | None
    fetch_timeout_ms: int
    fetch_timer: Deadline

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, -1, self.voters)

    @property
    def high_watermark(self) -> int | None:
        return self.carried_high_watermark

    def remaining_fetch_time_ms(self, now_ms: int) -> int:
        return self.fetch_timer.remaining_ms(now_ms)

    def has_fetch_timeout_expired(self, now_ms: int) -> bool:
        return self.fetch_timer.expired(now_ms)

    def reset_fetch_timeout(self, now_ms: int) -> None:
        self.fetch_timer.reset(now_ms, self.fetch_timeout_ms)

    def override_fetch_timeout(self, now_ms: int, timeout_ms: int) -> None:
        """EndQuorumEpoch from the leader: start the election sooner."""
        self.fetch_timer.reset(now_ms, timeout_ms)

    def update_high_watermark(self, new: int | None) -> bool:
        """``FollowerState.updateHighWatermark``: True when it moved; never back, never from
        known to unknown."""
        old = self.carried_high_watermark
        if new is None:
            if old is not None:
                raise IllegalArgumentError(f"attempt to overwrite high watermark {old} "
                                           "with an unknown value")
            return False
        if old is not None:
            if new < 0:
                raise IllegalArgumentError(f"illegal negative high watermark {new}")
            if old > new:
                raise IllegalArgumentError(f"non-monotonic high watermark {old} -> {new}")
            if old == new:
                return False
        self.carried_high_watermark = new
        return True

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        return False


@dataclass(slots=True, eq=False)
class ResignedState(EpochState):
    name: ClassVar[str] = "resigned"
    local_id: int
    epoch: int
    voters: frozenset[int]
    election_timer: Deadline
    preferred_successors: tuple[int, ...]
    unacked_voters: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.unacked_voters = set(self.voters) - {self.local_id}

    def election(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.local_id, self.voters)

    def acknowledge_resignation(self, voter_id: int) -> None:
        """A voter answered our EndQuorumEpoch: stop sending it."""
        if voter_id not in self.voters:
            raise IllegalArgumentError(f"EndQuorumEpoch acknowledged by non-voter {voter_id}")
        self.unacked_voters.discard(voter_id)

    def remaining_election_time_ms(self, now_ms: int) -> int:
        return self.election_timer.remaining_ms(now_ms)

    def has_election_timeout_expired(self, now_ms: int) -> bool:
        return self.election_timer.expired(now_ms)

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        return False
