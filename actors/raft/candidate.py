"""A voter standing for election: Kafka 3.7.0 ``CandidateState``.

A candidate has bumped the epoch and voted for itself (its ``ElectionState`` is "voted for
myself", so a restart resumes the candidacy: ``QuorumState.initialize``). It tallies one of
*unrecorded*, *granted*, *rejected* per voter:

* granted by a majority (``voters // 2 + 1``, itself included): it becomes leader;
* rejected so that a majority can no longer be reached (``isVoteRejected``), or its
  election timer expired: it *backs off* — a random binary exponential backoff
  (``KafkaRaftClient.binaryExponentialElectionBackoffMs``: ``min(100 * random(2^retries),
  quorum.election.backoff.max.ms)``) — then stands again in the next epoch with
  ``retries + 1``.

A vote cannot change sides (granted then rejected or the reverse raises), nor come from a
non-voter. A candidate grants no vote to anyone in its epoch (its own is implicit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from actors.raft.election import ElectionState
from actors.raft.errors import IllegalArgumentError, IllegalStateError
from actors.raft.states import EpochState
from actors.raft.timer import Deadline

UNRECORDED, GRANTED, REJECTED = "unrecorded", "granted", "rejected"


@dataclass(slots=True, eq=False)
class CandidateState(EpochState):
    name: ClassVar[str] = "candidate"
    local_id: int
    epoch: int
    voters: frozenset[int]
    carried_high_watermark: int | None
    retries: int
    election_timer: Deadline
    backoff_timer: Deadline = field(default_factory=lambda: Deadline(0))
    is_backing_off: bool = False
    vote_states: dict[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.vote_states = {v: UNRECORDED for v in sorted(self.voters)}
        self.vote_states[self.local_id] = GRANTED

    @property
    def high_watermark(self) -> int | None:
        return self.carried_high_watermark

    @property
    def majority_size(self) -> int:
        return len(self.vote_states) // 2 + 1

    def _count(self, state: str) -> int:
        return sum(1 for s in self.vote_states.values() if s == state)

    def is_vote_granted(self) -> bool:
        return self._count(GRANTED) >= self.majority_size

    def is_vote_rejected(self) -> bool:
        """No majority of grants is reachable any more."""
        return self._count(GRANTED) + self._count(UNRECORDED) < self.majority_size

    def record_granted_vote(self, voter: int) -> bool:
        """True when the vote was not recorded before."""
        state = self.vote_states.get(voter)
        if state is None:
            raise IllegalArgumentError(f"attempt to grant vote to non-voter {voter}")
        if state == REJECTED:
            raise IllegalArgumentError(f"node {voter} granted a vote it had rejected")
        self.vote_states[voter] = GRANTED
        return state == UNRECORDED

    def record_rejected_vote(self, voter: int) -> bool:
        state = self.vote_states.get(voter)
        if state is None:
            raise IllegalArgumentError(f"attempt to reject vote to non-voter {voter}")
        if state == GRANTED:
            raise IllegalArgumentError(f"node {voter} rejected a vote it had granted")
        self.vote_states[voter] = REJECTED
        return state == UNRECORDED

    def start_backing_off(self, now_ms: int, backoff_ms: int) -> None:
        self.backoff_timer.reset(now_ms, backoff_ms)
        self.is_backing_off = True

    def _voters_in(self, state: str) -> frozenset[int]:
        return frozenset(v for v, s in self.vote_states.items() if s == state)

    def unrecorded_voters(self) -> frozenset[int]:
        return self._voters_in(UNRECORDED)

    def granting_voters(self) -> frozenset[int]:
        return self._voters_in(GRANTED)

    def rejecting_voters(self) -> frozenset[int]:
        return self._voters_in(REJECTED)

    def has_election_timeout_expired(self, now_ms: int) -> bool:
        return self.election_timer.expired(now_ms)

    def remaining_election_time_ms(self, now_ms: int) -> int:
        return self.election_timer.remaining_ms(now_ms)

    def is_backoff_complete(self, now_ms: int) -> bool:
        return self.backoff_timer.expired(now_ms)

    def remaining_backoff_ms(self, now_ms: int) -> int:
        if not self.is_backing_off:
            raise IllegalStateError("candidate is not backing off")
        return self.backoff_timer.remaining_ms(now_ms)

    def election(self) -> ElectionState:
        return ElectionState.with_voted_candidate(self.epoch, self.local_id,
                                                  frozenset(self.vote_states))

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        return False
