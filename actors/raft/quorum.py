"""Which epoch state a node is in, and the transitions allowed: Kafka 3.7.0 ``QuorumState``.

States (:mod:`actors.raft.states`, :mod:`.candidate`, :mod:`.leader`) and transitions, each
guarded as Kafka guards it (a forbidden one raises :class:`IllegalStateError` and changes
nothing):

* unattached / resigned -> unattached (higher epoch), voted (grant a vote), candidate
  (election timeout), follower (a leader of an equal or higher epoch);
* voted -> unattached (higher epoch), candidate (election timeout), follower (the leader of
  this epoch or a later one);
* candidate -> unattached (higher epoch), candidate (timeout, after backoff), leader
  (majority granted), follower, voted (a higher epoch);
* leader -> unattached, voted, follower (a higher epoch), resigned (shutdown, resign
  request, failed check quorum);
* follower -> unattached (higher epoch), candidate (fetch timeout), follower (a higher
  epoch), voted (a higher epoch).

Guards (``transitionTo*``): no move to a lower epoch; in the same epoch, voting only from
unattached (one vote per epoch), following only from a state without a leader; no voting
for or following oneself or a non-voter; observers (not in ``voters``, or no node id) are
only ever unattached or follower; a leader only from a candidate with a majority granted;
resigned only from leader; candidate never from leader.

Every transition except to resigned is *durable*: the new state's :class:`ElectionState` is
written to the store before the switch. Timers: a new election timer is
``quorum.election.timeout.ms`` plus a random jitter in [0, that) (``randomElectionTimeoutMs``);
moving to unattached keeps the remaining time of a running election timer (from
candidate, voted or unattached), an observer's unattached timer never expires; a follower's
fetch timer is ``quorum.fetch.timeout.ms``. The high watermark is carried from state to
state, except into leader (a new leader must first commit a record of its own epoch).

``initialize`` picks the starting state from the store and the log (``initialize``): a
store that cannot be read is cleared (epoch 0); voters different from the configured ones,
or a voted-for on an observer, raise; an epoch below the log's last epoch starts unattached
in the log's epoch; a leader restarts *resigned*, a candidate as candidate, a voter as voted,
a follower as follower, anything else unattached.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from actors.raft.candidate import CandidateState
from actors.raft.election import ElectionState, OffsetAndEpoch, QuorumStateStore
from actors.raft.errors import IllegalStateError
from actors.raft.leader import LeaderState
from actors.raft.states import (
    EpochState,
    FollowerState,
    ResignedState,
    UnattachedState,
    VotedState,
)
from actors.raft.timer import FOREVER, Deadline

S = TypeVar("S", bound=EpochState)


class QuorumState:
    """A node's place in the quorum (see the module note)."""

    def __init__(self, local_id: int | None, voters: frozenset[int], election_timeout_ms: int,
                 fetch_timeout_ms: int, store: QuorumStateStore, rng: random.Random,
                 check_quorum_timeout_ms: int = 3000, check_quorum: bool = True) -> None:
        self.local_id = local_id
        self.voters = frozenset(voters)
        self.election_timeout_ms = election_timeout_ms
        self.fetch_timeout_ms = fetch_timeout_ms
        self.store = store
        self.rng = rng
        self.check_quorum_timeout_ms = check_quorum_timeout_ms
        self.check_quorum = check_quorum
        self._state: EpochState | None = None
        #: (from, to, epoch) of every transition, for the shell's trace
        self.transitions: list[tuple[str, str, int]] = []

    # -- reading -------------------------------------------------------------------------
    @property
    def state(self) -> EpochState:
        if self._state is None:
            raise IllegalStateError("quorum state not initialized")
        return self._state

    @property
    def epoch(self) -> int:
        return self.state.epoch

    @property
    def leader_id(self) -> int | None:
        election = self.state.election()
        return election.leader_id if election.has_leader else None

    def leader_id_or_sentinel(self) -> int:
        return self.state.election().leader_id

    def has_leader(self) -> bool:
        return self.leader_id is not None

    def has_remote_leader(self) -> bool:
        return self.has_leader() and self.leader_id != self.local_id_or_sentinel()

    @property
    def high_watermark(self) -> int | None:
        return self.state.high_watermark

    def local_id_or_sentinel(self) -> int:
        return -1 if self.local_id is None else self.local_id

    def local_id_or_throw(self) -> int:
        if self.local_id is None:
            raise IllegalStateError("required local id is not present")
        return self.local_id

    def remote_voters(self) -> frozenset[int]:
        return self.voters - {self.local_id_or_sentinel()}

    def is_voter(self, node_id: int | None = None) -> bool:
        if node_id is None:
            return self.local_id is not None and self.local_id in self.voters
        return node_id in self.voters

    def is_observer(self) -> bool:
        return not self.is_voter()

    def is_unattached(self) -> bool:
        return isinstance(self._state, UnattachedState)

    def is_voted(self) -> bool:
        return isinstance(self._state, VotedState)

    def is_candidate(self) -> bool:
        return isinstance(self._state, CandidateState)

    def is_leader(self) -> bool:
        return isinstance(self._state, LeaderState)

    def is_follower(self) -> bool:
        return isinstance(self._state, FollowerState)

    def is_resigned(self) -> bool:
        return isinstance(self._state, ResignedState)

    def _expect(self, kind: type[S]) -> S:
        if not isinstance(self._state, kind):
            raise IllegalStateError(f"expected {kind.name}, but the state is {self._state}")
        return self._state

    def unattached_state(self) -> UnattachedState:
        return self._expect(UnattachedState)

    def voted_state(self) -> VotedState:
        return self._expect(VotedState)

    def candidate_state(self) -> CandidateState:
        return self._expect(CandidateState)

    def leader_state(self) -> LeaderState:
        return self._expect(LeaderState)

    def follower_state(self) -> FollowerState:
        return self._expect(FollowerState)

    def resigned_state(self) -> ResignedState:
        return self._expect(ResignedState)

    def can_grant_vote(self, candidate_id: int, is_log_up_to_date: bool) -> bool:
        return self.state.can_grant_vote(candidate_id, is_log_up_to_date)

    # -- timers --------------------------------------------------------------------------
    def random_election_timeout_ms(self) -> int:
        """``randomElectionTimeoutMs``: the timeout plus a jitter below it."""
        if self.election_timeout_ms == 0:
            return 0
        return self.election_timeout_ms + self.rng.randrange(self.election_timeout_ms)

    # -- initialize ----------------------------------------------------------------------
    def initialize(self, log_end: OffsetAndEpoch, now_ms: int) -> None:
        try:
            election = self.store.read_election_state()
        except IllegalStateError:
            self.store.clear()
            election = None
        if election is None:
            election = ElectionState.with_unknown_leader(0, self.voters)
        local = self.local_id
        initial: EpochState
        if election.voters and election.voters != self.voters:
            raise IllegalStateError(f"configured voters {sorted(self.voters)} differ from the "
                                    f"quorum-state file's {sorted(election.voters)}")
        if election.has_voted and not self.is_voter():
            raise IllegalStateError(f"quorum-state {election} has a voted candidate but the "
                                    f"local id {local} is not a voter")
        if election.epoch < log_end.epoch:
            initial = UnattachedState(log_end.epoch, self.voters, None,
                                      *self._election_timer(now_ms))
        elif local is not None and election.is_leader(local):
            initial = ResignedState(local, election.epoch, self.voters,
                                    Deadline.after(now_ms, self.random_election_timeout_ms()),
                                    ())
        elif local is not None and election.is_voted_candidate(local):
            initial = CandidateState(local, election.epoch, self.voters, None, 1,
                                     Deadline.after(now_ms, self.random_election_timeout_ms()))
        elif election.has_voted:
            initial = VotedState(election.epoch, election.voted_id, self.voters, None,
                                 Deadline.after(now_ms, self.random_election_timeout_ms()))
        elif election.has_leader:
            initial = FollowerState(election.epoch, election.leader_id, self.voters, None,
                                    self.fetch_timeout_ms,
                                    Deadline.after(now_ms, self.fetch_timeout_ms))
        else:
            initial = UnattachedState(election.epoch, self.voters, None,
                                      *self._election_timer(now_ms))
        self._durable_transition_to(initial)

    def _election_timer(self, now_ms: int, timeout_ms: int | None = None) -> tuple[int, Deadline]:
        timeout = self.random_election_timeout_ms() if timeout_ms is None else timeout_ms
        return timeout, Deadline.after(now_ms, timeout)

    # -- transitions ---------------------------------------------------------------------
    def transition_to_resigned(self, preferred_successors: Sequence[int], now_ms: int) -> None:
        if not self.is_leader():
            raise IllegalStateError(f"invalid transition to resigned from {self._state}")
        self._memory_transition_to(ResignedState(
            self.local_id_or_throw(), self.epoch, self.voters,
            Deadline.after(now_ms, self.random_election_timeout_ms()),
            tuple(preferred_successors)))

    def transition_to_unattached(self, epoch: int, now_ms: int) -> None:
        """A higher epoch without a known leader."""
        if epoch <= self.epoch:
            raise IllegalStateError(f"cannot become unattached in epoch {epoch} from "
                                    f"{self._state}")
        state = self.state
        if self.is_observer():
            timeout = FOREVER
        elif isinstance(state, CandidateState | VotedState | UnattachedState):
            timeout = state.remaining_election_time_ms(now_ms)
        else:
            timeout = self.random_election_timeout_ms()
        self._durable_transition_to(UnattachedState(
            epoch, self.voters, state.high_watermark, *self._election_timer(now_ms, timeout)))

    def transition_to_voted(self, epoch: int, candidate_id: int, now_ms: int) -> None:
        """Grant ``candidate_id`` this node's vote in ``epoch``."""
        if candidate_id == self.local_id:
            raise IllegalStateError(f"cannot vote for the local node {candidate_id}")
        if self.is_observer():
            raise IllegalStateError(f"observer {self.local_id} cannot vote")
        if not self.is_voter(candidate_id):
            raise IllegalStateError(f"cannot vote for non-voter {candidate_id}")
        if epoch < self.epoch:
            raise IllegalStateError(f"cannot vote in epoch {epoch} below {self.epoch}")
        if epoch == self.epoch and not self.is_unattached():
            raise IllegalStateError(f"cannot vote in epoch {epoch} from {self._state}")
        self._durable_transition_to(VotedState(
            epoch, candidate_id, self.voters, self.state.high_watermark,
            Deadline.after(now_ms, self.random_election_timeout_ms())))

    def transition_to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        """Follow the elected ``leader_id`` of ``epoch``."""
        if leader_id == self.local_id:
            raise IllegalStateError(f"cannot follow the local node {leader_id}")
        if not self.is_voter(leader_id):
            raise IllegalStateError(f"cannot follow non-voter {leader_id}")
        if epoch < self.epoch:
            raise IllegalStateError(f"cannot follow in epoch {epoch} below {self.epoch}")
        if epoch == self.epoch and (self.is_follower() or self.is_leader()):
            raise IllegalStateError(f"cannot follow {leader_id} in epoch {epoch} from "
                                    f"{self._state}")
        self._durable_transition_to(FollowerState(
            epoch, leader_id, self.voters, self.state.high_watermark, self.fetch_timeout_ms,
            Deadline.after(now_ms, self.fetch_timeout_ms)))

    def transition_to_candidate(self, now_ms: int) -> None:
        """Stand for election in the next epoch."""
        if self.is_observer():
            raise IllegalStateError(f"observer {self.local_id} cannot become a candidate")
        if self.is_leader():
            raise IllegalStateError(f"leader cannot become a candidate: {self._state}")
        state = self.state
        retries = state.retries + 1 if isinstance(state, CandidateState) else 1
        self._durable_transition_to(CandidateState(
            self.local_id_or_throw(), self.epoch + 1, self.voters, state.high_watermark,
            retries, Deadline.after(now_ms, self.random_election_timeout_ms())))

    def transition_to_leader(self, epoch_start_offset: int, now_ms: int) -> LeaderState:
        """Become the leader of this epoch, whose records start at ``epoch_start_offset``."""
        if self.is_observer():
            raise IllegalStateError(f"observer {self.local_id} cannot become leader")
        if not self.is_candidate():
            raise IllegalStateError(f"cannot become leader from {self._state}")
        candidate = self.candidate_state()
        if not candidate.is_vote_granted():
            raise IllegalStateError("cannot become leader without a majority of votes")
        leader = LeaderState(
            self.local_id_or_throw(), self.epoch, epoch_start_offset, self.voters,
            candidate.granting_voters(), self.check_quorum_timeout_ms,
            Deadline.after(now_ms, self.check_quorum_timeout_ms), self.check_quorum)
        self._durable_transition_to(leader)
        return leader

    def _durable_transition_to(self, state: EpochState) -> None:
        self.store.write_election_state(state.election())
        self._memory_transition_to(state)

    def _memory_transition_to(self, state: EpochState) -> None:
        previous = "none" if self._state is None else self._state.name
        self._state = state
        self.transitions.append((previous, state.name, state.epoch))
