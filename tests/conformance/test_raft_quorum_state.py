"""The quorum's epoch states and their transitions (``actors.raft.quorum.QuorumState``,
``actors.raft.candidate``, ``actors.raft.states``), held against Kafka 3.7.0's
``QuorumStateTest``, ``CandidateStateTest`` and ``FollowerStateTest`` (issue 52).

Kafka's tests run a ``MockTime``; here time is ``now_ms`` passed in (``T0``, then later
values). The store is :class:`MemoryQuorumStateStore` (Kafka's ``MockQuorumStateStore``):
what it holds is what a restarted node reads back. The election jitter is pinned with
:class:`MockableRandom` as Kafka's tests pin it.

Not ported: the ``BatchAccumulator`` argument of ``transitionToLeader`` (isrlab's leader has
no accumulator).
"""

from __future__ import annotations

import pytest
from kafkacite import kafka
from raft_fixtures import MockableRandom

from actors.raft.candidate import CandidateState
from actors.raft.election import ElectionState, MemoryQuorumStateStore, OffsetAndEpoch
from actors.raft.errors import IllegalArgumentError, IllegalStateError
from actors.raft.quorum import QuorumState
from actors.raft.states import FollowerState
from actors.raft.timer import FOREVER, Deadline

QST = "QuorumStateTest"
LOCAL = 0
ELECTION_TIMEOUT_MS = 5000
FETCH_TIMEOUT_MS = 10000
T0 = 1_000
LOG_END = OffsetAndEpoch(epoch=0, offset=0)


class Node:
    """A quorum state with its store and its random, as ``QuorumStateTest`` builds one."""

    def __init__(self, voters: set[int], local_id: int | None = LOCAL,
                 store: MemoryQuorumStateStore | None = None) -> None:
        self.voters = frozenset(voters)
        self.store = store or MemoryQuorumStateStore()
        self.random = MockableRandom(1)
        self.q = QuorumState(local_id, self.voters, ELECTION_TIMEOUT_MS, FETCH_TIMEOUT_MS,
                             self.store, self.random)

    def initialize(self, log_end: OffsetAndEpoch = LOG_END) -> QuorumState:
        self.q.initialize(log_end, T0)
        return self.q


def empty(voters: set[int], local_id: int | None = LOCAL) -> Node:
    """``initializeEmptyState``: the store says epoch 0, no leader, no vote."""
    node = Node(voters, local_id)
    node.store.write_election_state(ElectionState.with_unknown_leader(0, node.voters))
    node.initialize()
    return node


def leader_of_two(node: Node) -> None:
    """Candidate, granted by the other voter (1), then leader."""
    node.q.transition_to_candidate(T0)
    node.q.candidate_state().record_granted_vote(1)
    node.q.transition_to_leader(0, T0)


# --- initialize: the state a node restarts in -------------------------------------------

@kafka("3.7.0", QST, "testInitializePrimordialEpoch")
def test_a_new_lone_voter_starts_unattached_in_epoch_0_and_wins_epoch_1_alone() -> None:
    """Nothing stored: unattached in epoch 0; standing for election makes it a candidate in
    epoch 1 that already has its majority (itself)."""
    node = Node({LOCAL})
    assert node.store.read_election_state() is None
    q = node.initialize()
    assert q.is_unattached() and q.epoch == 0
    q.transition_to_candidate(T0)
    assert q.candidate_state().is_vote_granted()
    assert q.candidate_state().epoch == 1


@kafka("3.7.0", QST, "testInitializeAsUnattached")
def test_a_stored_epoch_without_leader_restarts_unattached_with_a_jittered_timer() -> None:
    """Stored (5, no leader): unattached in 5, election timer = timeout + jitter (2500)."""
    node = Node({LOCAL, 1, 2})
    node.store.write_election_state(ElectionState.with_unknown_leader(5, node.voters))
    node.random.mock_next_int(2500)
    q = node.initialize()
    assert q.is_unattached()
    assert q.unattached_state().epoch == 5
    assert q.unattached_state().remaining_election_time_ms(T0) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testInitializeAsFollower")
def test_a_stored_leader_restarts_as_its_follower_with_a_full_fetch_timer() -> None:
    """Stored (5, leader 1): follower of 1 in epoch 5, fetch timer = quorum.fetch.timeout.ms."""
    node = Node({LOCAL, 1, 2})
    node.store.write_election_state(ElectionState.with_elected_leader(5, 1, node.voters))
    q = node.initialize()
    assert q.is_follower() and q.epoch == 5
    assert q.follower_state().leader_id == 1
    assert q.follower_state().remaining_fetch_time_ms(T0) == FETCH_TIMEOUT_MS


@kafka("3.7.0", QST, "testInitializeAsVoted")
def test_a_stored_vote_restarts_voted_for_the_same_candidate() -> None:
    """Stored (5, voted 1): voted for 1 in epoch 5, election timer with its jitter."""
    node = Node({LOCAL, 1, 2})
    node.store.write_election_state(ElectionState.with_voted_candidate(5, 1, node.voters))
    node.random.mock_next_int(2500)
    q = node.initialize()
    assert q.is_voted() and q.epoch == 5
    assert q.voted_state().voted_id == 1
    assert q.voted_state().remaining_election_time_ms(T0) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testInitializeAsResignedCandidate")
def test_a_stored_vote_for_oneself_resumes_the_candidacy_in_that_epoch() -> None:
    """Stored (5, voted for me): candidate in 5 again (not 6), only its own vote granted."""
    node = Node({LOCAL, 1, 2})
    election = ElectionState.with_voted_candidate(5, LOCAL, node.voters)
    node.store.write_election_state(election)
    node.random.mock_next_int(2500)
    q = node.initialize()
    assert q.is_candidate() and q.epoch == 5
    c = q.candidate_state()
    assert c.election() == election
    assert c.unrecorded_voters() == {1, 2}
    assert c.granting_voters() == {LOCAL}
    assert c.rejecting_voters() == frozenset()
    assert c.remaining_election_time_ms(T0) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testInitializeAsResignedLeader")
def test_a_restarted_leader_comes_back_resigned_in_its_epoch() -> None:
    """Stored (5, leader me): resigned in 5, not leader — it cannot vote again in 5, and a
    record stays unique by (offset, epoch) even if unflushed data was lost; EndQuorumEpoch
    goes to both other voters."""
    node = Node({LOCAL, 1, 2})
    election = ElectionState.with_elected_leader(5, LOCAL, node.voters)
    node.store.write_election_state(election)
    node.random.mock_next_int(2500)
    q = node.initialize()
    assert not q.is_leader() and q.epoch == 5
    r = q.resigned_state()
    assert r.election() == election
    assert r.unacked_voters == {1, 2}
    assert r.remaining_election_time_ms(T0) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testInitializeWithCorruptedStore")
def test_an_unreadable_quorum_state_file_is_cleared_and_the_log_epoch_wins() -> None:
    """The store cannot be read: it is cleared, and the node starts unattached in the log's
    last epoch (2), knowing no leader."""
    node = Node({LOCAL}, store=MemoryQuorumStateStore(corrupt=True))
    q = node.initialize(OffsetAndEpoch(epoch=2, offset=0))
    assert q.epoch == 2 and q.is_unattached() and not q.has_leader()


@kafka("3.7.0", QST, "testInconsistentVotersBetweenConfigAndState")
def test_voters_different_from_the_quorum_state_file_refuse_to_start() -> None:
    """Configured voters {0, 1}, the file says {0, 1, 2}: initialize raises."""
    node = empty({LOCAL, 1})
    node.store.write_election_state(
        ElectionState.with_elected_leader(5, LOCAL, frozenset({LOCAL, 1, 2})))
    with pytest.raises(IllegalStateError):
        node.initialize()


@kafka("3.7.0", QST, "testObserverInitializationFailsIfElectionStateHasVotedCandidate")
def test_an_observer_cannot_start_from_a_file_with_a_vote() -> None:
    """A vote in the file means the node was a voter: as observer 2, or with no id, raises."""
    for local in (2, None):
        node = Node({0, 1}, local_id=local)
        node.store.write_election_state(ElectionState.with_voted_candidate(5, 1, node.voters))
        with pytest.raises(IllegalStateError):
            node.initialize()


@kafka("3.7.0", QST, "testInitializeWithEmptyLocalId")
def test_a_node_without_id_is_an_observer_that_only_follows() -> None:
    """No local id: an observer; candidate, voted and leader raise; follower and unattached
    are allowed."""
    q = Node({0, 1}, local_id=None).initialize()
    assert q.is_observer() and not q.is_voter()
    with pytest.raises(IllegalStateError):
        q.transition_to_candidate(T0)
    with pytest.raises(IllegalStateError):
        q.transition_to_voted(1, 1, T0)
    with pytest.raises(IllegalStateError):
        q.transition_to_leader(0, T0)
    q.transition_to_follower(1, 1, T0)
    assert q.is_follower()
    q.transition_to_unattached(2, T0)
    assert q.is_unattached()


# --- candidate ---------------------------------------------------------------------------

@kafka("3.7.0", QST, "testCandidateToCandidate")
def test_a_candidate_backs_off_then_stands_again_in_the_next_epoch() -> None:
    """Rejected, backing off 500 ms: not complete at 499, complete at 500; standing again
    bumps the epoch to 2 with only its own vote and a fresh jittered timer."""
    node = empty({LOCAL, 1, 2})
    q = node.q
    q.transition_to_candidate(T0)
    assert q.is_candidate() and q.epoch == 1
    first = q.candidate_state()
    first.record_rejected_vote(2)
    first.start_backing_off(T0, 500)
    assert first.is_backing_off and not first.is_backoff_complete(T0 + 499)
    assert first.is_backoff_complete(T0 + 500)
    node.random.mock_next_int(2500)
    q.transition_to_candidate(T0 + 500)
    second = q.candidate_state()
    assert q.epoch == 2
    assert second.granting_voters() == {LOCAL}
    assert second.rejecting_voters() == frozenset()
    assert second.remaining_election_time_ms(T0 + 500) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testCandidateToResigned")
def test_a_candidate_cannot_resign() -> None:
    """A candidate in 1: resigned raises and it stays a candidate."""
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_candidate(T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_resigned([LOCAL], T0)
    assert node.q.is_candidate()


@kafka("3.7.0", QST, "testCandidateToLeader")
def test_a_lone_candidate_becomes_leader_with_no_high_watermark_yet() -> None:
    """A lone candidate of 1 becomes leader of 1 with no HW (none until it commits a record of
    epoch 1)."""
    node = empty({LOCAL})
    node.q.transition_to_candidate(T0)
    node.q.transition_to_leader(0, T0)
    assert node.q.is_leader()
    assert node.q.leader_state().epoch == 1
    assert node.q.leader_state().high_watermark is None


@kafka("3.7.0", QST, "testCandidateToLeaderWithoutGrantedVote")
def test_a_candidate_without_a_majority_cannot_become_leader() -> None:
    """Two voters: its own vote is not a majority (raises); with the other's grant it is."""
    node = empty({LOCAL, 1})
    node.q.transition_to_candidate(T0)
    assert not node.q.candidate_state().is_vote_granted()
    with pytest.raises(IllegalStateError):
        node.q.transition_to_leader(0, T0)
    node.q.candidate_state().record_granted_vote(1)
    assert node.q.candidate_state().is_vote_granted()
    node.q.transition_to_leader(0, T0)
    assert node.q.is_leader()


@kafka("3.7.0", QST, "testCandidateToFollower")
@kafka("3.7.0", QST, "testCandidateToUnattached")
@kafka("3.7.0", QST, "testCandidateToVoted")
def test_a_candidate_yields_to_a_higher_epoch_and_persists_it() -> None:
    """From candidate: follower of 1 in 5, unattached in 5, voted for 1 in 5 — each written
    to the store before the node acts in it."""
    node = empty({LOCAL, 1})
    node.q.transition_to_candidate(T0)
    node.q.transition_to_follower(5, 1, T0)
    assert node.q.epoch == 5 and node.q.leader_id == 1
    assert node.store.state == ElectionState.with_elected_leader(5, 1, node.voters)

    node = empty({LOCAL, 1})
    node.q.transition_to_candidate(T0)
    node.q.transition_to_unattached(5, T0)
    assert node.q.epoch == 5 and node.q.leader_id is None
    assert node.store.state == ElectionState.with_unknown_leader(5, node.voters)

    node = empty({LOCAL, 1})
    node.q.transition_to_candidate(T0)
    node.q.transition_to_voted(5, 1, T0)
    assert node.q.epoch == 5 and node.q.leader_id is None
    assert node.q.voted_state().voted_id == 1
    assert node.store.state == ElectionState.with_voted_candidate(5, 1, node.voters)


@kafka("3.7.0", QST, "testCandidateToAnyStateLowerEpoch")
@kafka("3.7.0", QST, "testLeaderToAnyStateLowerEpoch")
@kafka("3.7.0", QST, "testUnattachedToAnyStateLowerEpoch")
@kafka("3.7.0", QST, "testVotedToAnyStateLowerEpoch")
@kafka("3.7.0", QST, "testFollowerToAnyStateLowerEpoch")
@pytest.mark.parametrize("state", ["candidate", "leader", "unattached", "voted", "follower"])
def test_no_state_moves_to_a_lower_epoch(state: str) -> None:
    """Whatever the state, unattached / voted / follower in a lower epoch (4) raise, and the
    epoch and the stored election stay."""
    node = empty({LOCAL, 1})
    q = node.q
    if state in ("candidate", "leader", "unattached"):
        q.transition_to_unattached(5, T0)
    if state in ("candidate", "leader"):
        q.transition_to_candidate(T0)
    if state == "leader":
        q.candidate_state().record_granted_vote(1)
        q.transition_to_leader(0, T0)
    if state == "voted":
        q.transition_to_voted(5, 1, T0)
    if state == "follower":
        q.transition_to_follower(5, 1, T0)
    epoch, stored = q.epoch, node.store.state
    with pytest.raises(IllegalStateError):
        q.transition_to_unattached(4, T0)
    with pytest.raises(IllegalStateError):
        q.transition_to_voted(4, 1, T0)
    with pytest.raises(IllegalStateError):
        q.transition_to_follower(4, 1, T0)
    assert q.epoch == epoch == {"candidate": 6, "leader": 6}.get(state, 5)
    assert node.store.state == stored == q.state.election()


# --- leader ------------------------------------------------------------------------------

@kafka("3.7.0", QST, "testLeaderToLeader")
@kafka("3.7.0", QST, "testLeaderToCandidate")
def test_a_leader_can_neither_be_elected_again_nor_stand_for_election() -> None:
    """Leader of 1: becoming leader again or a candidate raises; still leader of 1."""
    node = empty({LOCAL})
    node.q.transition_to_candidate(T0)
    node.q.transition_to_leader(0, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_leader(0, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_candidate(T0)
    assert node.q.is_leader() and node.q.epoch == 1


@kafka("3.7.0", QST, "testLeaderToResigned")
def test_a_resigned_leader_keeps_its_epoch_and_is_not_persisted() -> None:
    """Leader of 1 resigns: resigned in 1 with election (1, leader me); a lone voter has
    nobody to send EndQuorumEpoch to; the store still says leader (resigned is soft)."""
    node = empty({LOCAL})
    node.q.transition_to_candidate(T0)
    node.q.transition_to_leader(0, T0)
    writes = node.store.writes
    node.q.transition_to_resigned([LOCAL], T0)
    r = node.q.resigned_state()
    assert r.election() == ElectionState.with_elected_leader(1, LOCAL, node.voters)
    assert r.epoch == 1 and r.unacked_voters == set()
    assert node.store.writes == writes


@kafka("3.7.0", QST, "testLeaderToFollower")
@kafka("3.7.0", QST, "testLeaderToUnattached")
@kafka("3.7.0", QST, "testLeaderToVoted")
def test_a_leader_yields_to_a_higher_epoch() -> None:
    """From leader: follower of 1 in 5, unattached in 5, or voted for 1 in 5 (3.7.0 lets a
    leader vote in a higher epoch directly), each persisted."""
    node = empty({LOCAL, 1})
    leader_of_two(node)
    node.q.transition_to_follower(5, 1, T0)
    assert node.q.epoch == 5 and node.q.leader_id == 1
    assert node.store.state == ElectionState.with_elected_leader(5, 1, node.voters)

    node = empty({LOCAL, 1})
    leader_of_two(node)
    node.q.transition_to_unattached(5, T0)
    assert node.q.leader_id is None
    assert node.store.state == ElectionState.with_unknown_leader(5, node.voters)

    node = empty({LOCAL, 1})
    leader_of_two(node)
    node.q.transition_to_voted(5, 1, T0)
    assert node.q.voted_state().voted_id == 1
    assert node.store.state == ElectionState.with_voted_candidate(5, 1, node.voters)


@kafka("3.7.0", QST, "testCannotFollowOrVoteForSelf")
def test_a_node_never_follows_or_votes_for_itself() -> None:
    """Following itself or voting for itself in 0 raises."""
    node = empty({LOCAL})
    with pytest.raises(IllegalStateError):
        node.q.transition_to_follower(0, LOCAL, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_voted(0, LOCAL, T0)


@kafka("3.7.0", QST, "testUnattachedToLeaderOrResigned")
@kafka("3.7.0", QST, "testVotedToInvalidLeaderOrResigned")
@kafka("3.7.0", QST, "testFollowerToLeaderOrResigned")
@pytest.mark.parametrize("state", ["unattached", "voted", "follower"])
def test_only_a_candidate_becomes_leader_and_only_a_leader_resigns(state: str) -> None:
    """Unattached, voted or follower: leader and resigned both raise."""
    node = empty({LOCAL, 1, 2})
    if state == "voted":
        node.q.transition_to_voted(5, 1, T0)
    if state == "follower":
        node.q.transition_to_follower(8, 2, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_leader(0, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_resigned([], T0)


# --- unattached and voted ----------------------------------------------------------------

@kafka("3.7.0", QST, "testUnattachedToVotedSameEpoch")
def test_voting_restarts_the_election_timer() -> None:
    """Unattached in 5, votes for 1 in 5: voted, persisted, and the election timer starts
    over (timeout + jitter): the candidate has as good a chance as this node."""
    node = empty({LOCAL, 1})
    node.q.transition_to_unattached(5, T0)
    node.random.mock_next_int(2500, ELECTION_TIMEOUT_MS)
    node.q.transition_to_voted(5, 1, T0 + 100)
    v = node.q.voted_state()
    assert v.epoch == 5 and v.voted_id == 1
    assert node.store.state == ElectionState.with_voted_candidate(5, 1, node.voters)
    assert v.remaining_election_time_ms(T0 + 100) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testUnattachedToUnattached")
@kafka("3.7.0", QST, "testVotedToUnattachedHigherEpoch")
@pytest.mark.parametrize("state", ["unattached", "voted"])
def test_learning_a_higher_epoch_keeps_the_running_election_timer(state: str) -> None:
    """Unattached in 5 (or voted in 5), 1000 ms later unattached in 6: the election timer is
    not reset — 1000 ms less remain."""
    node = empty({LOCAL, 1})
    if state == "unattached":
        node.q.transition_to_unattached(5, T0)
        remaining = node.q.unattached_state().remaining_election_time_ms(T0)
    else:
        node.q.transition_to_voted(5, 1, T0)
        remaining = node.q.voted_state().remaining_election_time_ms(T0)
    node.q.transition_to_unattached(6, T0 + 1000)
    u = node.q.unattached_state()
    assert u.epoch == 6
    assert u.remaining_election_time_ms(T0 + 1000) == remaining - 1000


@kafka("3.7.0", QST, "testVotedToVotedSameEpoch")
@kafka("3.7.0", QST, "testFollowerToVotedSameEpoch")
def test_one_vote_per_epoch() -> None:
    """Voted for 1 in 8: voting again in 8 (for 1 or 2) raises; a follower in 8 cannot vote
    in 8 for anyone."""
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_unattached(5, T0)
    node.q.transition_to_voted(8, 1, T0)
    for candidate in (1, 2):
        with pytest.raises(IllegalStateError):
            node.q.transition_to_voted(8, candidate, T0)
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_follower(8, 2, T0)
    for candidate in (1, LOCAL, 2):
        with pytest.raises(IllegalStateError):
            node.q.transition_to_voted(8, candidate, T0)


@kafka("3.7.0", QST, "testVotedToFollowerSameEpoch")
@kafka("3.7.0", QST, "testUnattachedToFollowerSameEpoch")
def test_learning_the_leader_of_the_current_epoch_makes_a_follower() -> None:
    """Voted for 1 in 5, then 2 is elected in 5: follower of 2, persisted. Unattached in 5,
    then 1 is the leader: follower with a full fetch timer."""
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_voted(5, 1, T0)
    node.q.transition_to_follower(5, 2, T0)
    assert node.q.follower_state().leader_id == 2
    assert node.store.state == ElectionState.with_elected_leader(5, 2, node.voters)
    node = empty({LOCAL, 1})
    node.q.transition_to_unattached(5, T0)
    node.q.transition_to_follower(5, 1, T0)
    f = node.q.follower_state()
    assert (f.epoch, f.leader_id) == (5, 1)
    assert f.remaining_fetch_time_ms(T0) == FETCH_TIMEOUT_MS


@kafka("3.7.0", QST, "testVotedToUnattachedSameEpoch")
@kafka("3.7.0", QST, "testFollowerToUnattachedSameEpoch")
def test_unattached_needs_a_higher_epoch() -> None:
    """Voted in 5 or follower in 8: unattached in the same epoch raises."""
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_voted(5, 1, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_unattached(5, T0)
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_follower(8, 2, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_unattached(8, T0)


# --- follower ----------------------------------------------------------------------------

@kafka("3.7.0", QST, "testFollowerToFollowerSameEpoch")
@kafka("3.7.0", QST, "testFollowerToFollowerHigherEpoch")
def test_a_follower_changes_leader_only_in_a_higher_epoch() -> None:
    """Follower of 2 in 8: following 1 or 2 in 8 raises; following 1 in 9 is allowed."""
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_follower(8, 2, T0)
    for leader in (1, 2):
        with pytest.raises(IllegalStateError):
            node.q.transition_to_follower(8, leader, T0)
    assert node.store.state == ElectionState.with_elected_leader(8, 2, node.voters)
    node.q.transition_to_follower(9, 1, T0)
    assert (node.q.epoch, node.q.follower_state().leader_id) == (9, 1)
    assert node.store.state == ElectionState.with_elected_leader(9, 1, node.voters)


@kafka("3.7.0", QST, "testFollowerToCandidate")
def test_a_follower_stands_in_the_next_epoch_with_a_fresh_timer() -> None:
    """Follower in 8 becomes a candidate in 9 with timeout + jitter (2500) on its election
    timer."""
    node = empty({LOCAL, 1, 2})
    node.q.transition_to_follower(8, 2, T0)
    node.random.mock_next_int(2500, ELECTION_TIMEOUT_MS)
    node.q.transition_to_candidate(T0)
    c = node.q.candidate_state()
    assert c.epoch == 9
    assert c.remaining_election_time_ms(T0) == ELECTION_TIMEOUT_MS + 2500


@kafka("3.7.0", QST, "testCannotBecomeFollowerOfNonVoter")
def test_only_voters_can_be_voted_for_or_followed() -> None:
    """Voters {0, 1}: voting for or following node 2 raises."""
    node = empty({LOCAL, 1})
    with pytest.raises(IllegalStateError):
        node.q.transition_to_voted(4, 2, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_follower(4, 2, T0)


# --- observers ---------------------------------------------------------------------------

@kafka("3.7.0", QST, "testObserverCannotBecomeCandidateOrLeaderOrVoted")
def test_an_observer_never_stands_leads_or_votes() -> None:
    """An observer (voters {1}): candidate, leader and voted all raise."""
    node = empty({1})
    assert node.q.is_observer()
    with pytest.raises(IllegalStateError):
        node.q.transition_to_candidate(T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_leader(0, T0)
    with pytest.raises(IllegalStateError):
        node.q.transition_to_voted(5, 1, T0)


@kafka("3.7.0", QST, "testObserverFollowerToUnattached")
def test_an_unattached_observer_waits_for_a_leader_forever() -> None:
    """An observer that learns epoch 3 without a leader has no election timeout."""
    node = empty({1, 2})
    node.q.transition_to_follower(2, 1, T0)
    node.q.transition_to_unattached(3, T0)
    u = node.q.unattached_state()
    assert u.epoch == 3
    assert u.election_timeout_ms == FOREVER


@kafka("3.7.0", QST, "testHasRemoteLeader")
def test_only_a_follower_has_a_remote_leader() -> None:
    """Unattached, candidate, leader, unattached, voted: no remote leader; follower of 1: a
    remote leader."""
    node = empty({LOCAL, 1})
    q = node.q
    assert not q.has_remote_leader()
    q.transition_to_candidate(T0)
    assert not q.has_remote_leader()
    q.candidate_state().record_granted_vote(1)
    q.transition_to_leader(0, T0)
    assert not q.has_remote_leader()
    q.transition_to_unattached(q.epoch + 1, T0)
    assert not q.has_remote_leader()
    q.transition_to_voted(q.epoch + 1, 1, T0)
    assert not q.has_remote_leader()
    q.transition_to_follower(q.epoch + 1, 1, T0)
    assert q.has_remote_leader()


@kafka("3.7.0", QST, "testHighWatermarkRetained")
def test_the_high_watermark_is_carried_until_the_node_leads() -> None:
    """A follower's HW (10) is kept through unattached, voted and candidate; a new leader
    starts with none (it must commit a record of its own epoch first)."""
    node = empty({LOCAL, 1})
    q = node.q
    q.transition_to_follower(5, 1, T0)
    q.follower_state().update_high_watermark(10)
    assert q.high_watermark == 10
    q.transition_to_unattached(6, T0)
    assert q.high_watermark == 10
    q.transition_to_voted(7, 1, T0)
    assert q.high_watermark == 10
    q.transition_to_candidate(T0)
    assert q.high_watermark == 10
    q.candidate_state().record_granted_vote(1)
    q.transition_to_leader(10, T0)
    assert q.high_watermark is None


# --- CandidateState and FollowerState alone ---------------------------------------------

def candidate(voters: set[int]) -> CandidateState:
    return CandidateState(LOCAL, 5, frozenset(voters), None, 1, Deadline.after(0, 5000))


@kafka("3.7.0", "CandidateStateTest", "testSingleNodeQuorum")
@kafka("3.7.0", "CandidateStateTest", "testTwoNodeQuorumVoteRejected")
@kafka("3.7.0", "CandidateStateTest", "testThreeNodeQuorumVoteGranted")
@kafka("3.7.0", "CandidateStateTest", "testThreeNodeQuorumVoteRejected")
def test_a_candidate_wins_with_a_majority_and_loses_when_none_is_reachable() -> None:
    """Alone: won. Of two: one rejection loses. Of three: one grant wins (a later rejection
    changes nothing); two rejections lose, one does not."""
    c = candidate({LOCAL})
    assert c.is_vote_granted() and not c.is_vote_rejected()
    assert c.unrecorded_voters() == frozenset()

    c = candidate({LOCAL, 1})
    assert not c.is_vote_granted() and not c.is_vote_rejected()
    assert c.unrecorded_voters() == {1}
    assert c.record_rejected_vote(1)
    assert not c.is_vote_granted() and c.is_vote_rejected()

    c = candidate({LOCAL, 1, 2})
    assert c.record_granted_vote(1)
    assert c.unrecorded_voters() == {2}
    assert c.is_vote_granted() and not c.is_vote_rejected()
    assert c.record_rejected_vote(2)
    assert c.is_vote_granted() and not c.is_vote_rejected()

    c = candidate({LOCAL, 1, 2})
    assert c.record_rejected_vote(1)
    assert not c.is_vote_granted() and not c.is_vote_rejected()
    assert c.record_rejected_vote(2)
    assert c.unrecorded_voters() == frozenset()
    assert not c.is_vote_granted() and c.is_vote_rejected()


@kafka("3.7.0", "CandidateStateTest", "testCannotRejectVoteFromLocalId")
@kafka("3.7.0", "CandidateStateTest", "testCannotChangeVoteGrantedToRejected")
@kafka("3.7.0", "CandidateStateTest", "testCannotGrantOrRejectNonVoters")
@kafka("3.7.0", "CandidateStateTest", "testIdempotentGrant")
def test_a_vote_is_counted_once_and_never_changes_sides() -> None:
    """Its own vote cannot be rejected; a grant cannot turn into a rejection; non-voters
    cannot vote; a second grant from the same voter is not new."""
    c = candidate({LOCAL, 1})
    with pytest.raises(IllegalArgumentError):
        c.record_rejected_vote(LOCAL)
    assert c.record_granted_vote(1)
    assert not c.record_granted_vote(1)
    with pytest.raises(IllegalArgumentError):
        c.record_rejected_vote(1)
    assert c.is_vote_granted()
    c = candidate({LOCAL})
    with pytest.raises(IllegalArgumentError):
        c.record_granted_vote(1)
    with pytest.raises(IllegalArgumentError):
        c.record_rejected_vote(1)


def follower() -> FollowerState:
    return FollowerState(5, 1, frozenset({1, 2, 3}), None, 15000, Deadline.after(0, 15000))


@kafka("3.7.0", "FollowerStateTest", "testFetchTimeoutExpiration")
def test_the_fetch_timer_expires_after_quorum_fetch_timeout_ms() -> None:
    """Fetch timeout 15000: 15000 left at 0, 10000 at 5000, expired (0 left) at 15000."""
    f = follower()
    assert not f.has_fetch_timeout_expired(0) and f.remaining_fetch_time_ms(0) == 15000
    assert not f.has_fetch_timeout_expired(5000) and f.remaining_fetch_time_ms(5000) == 10000
    assert f.has_fetch_timeout_expired(15000) and f.remaining_fetch_time_ms(15000) == 0


@kafka("3.7.0", "FollowerStateTest", "testMonotonicHighWatermark")
def test_a_followers_high_watermark_never_goes_back_or_becomes_unknown() -> None:
    """HW 15: unknown or 14 raise; 15 again is no change; the HW stays 15."""
    f = follower()
    assert f.update_high_watermark(15)
    with pytest.raises(IllegalArgumentError):
        f.update_high_watermark(None)
    with pytest.raises(IllegalArgumentError):
        f.update_high_watermark(14)
    assert not f.update_high_watermark(15)
    assert f.high_watermark == 15
