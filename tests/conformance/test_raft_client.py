"""One node's Raft client (``actors.raft.client.KafkaRaftClient``) held against Kafka
3.7.0's ``KafkaRaftClientTest`` (issue 52): elections, votes, BeginQuorumEpoch,
EndQuorumEpoch, Fetch with DivergingEpoch and the high watermark, check quorum.

:class:`Ctx` plays Kafka's ``RaftClientTestContext``: the same settings (election timeout
10 s, backoff max 100 ms, fetch timeout 50 s, request timeout 5 s, retry backoff 50 ms, and
``fetchMaxWaitMs`` 0 unless a test sets it), a clock advanced by ``sleep``, requests and
answers delivered by hand, and what the client sends collected from ``drain``. Kafka's
``client.poll()`` handles at most one inbound message after polling its state; here a
delivered message is handled at once and ``poll`` runs the state's timers, which the tests
call in Kafka's order.

Not ported: cluster-id, snapshot, graceful-shutdown, listener, metrics and
``BatchAccumulator`` tests (none of these are modelled by the core: docs/fidelity.md).
"""

from __future__ import annotations

from typing import Any

from kafkacite import kafka
from raft_fixtures import MockableRandom

from actors.raft.client import KafkaRaftClient
from actors.raft.config import QuorumConfig, raft_rules_for
from actors.raft.election import ElectionState, MemoryQuorumStateStore
from actors.raft.log import RaftLog
from actors.raft.messages import (
    FENCED_LEADER_EPOCH,
    INCONSISTENT_VOTER_SET,
    INVALID_REQUEST,
    NONE,
    UNKNOWN_LEADER_EPOCH,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    LeaderChangeMessage,
    Outbound,
    RaftFetchRequest,
    RaftFetchResponse,
    VoteRequest,
    VoteResponse,
)

KRCT = "KafkaRaftClientTest"
CONFIG = QuorumConfig(election_timeout_ms=10_000, election_backoff_max_ms=100,
                      fetch_timeout_ms=50_000, request_timeout_ms=5_000, retry_backoff_ms=50,
                      fetch_max_wait_ms=0)
CHECK_QUORUM_TIMEOUT_MS = CONFIG.check_quorum_timeout_ms
LOCAL = 0


class Ctx:
    """Kafka's ``RaftClientTestContext`` for isrlab's client."""

    def __init__(self, voters: set[int], local: int | None = LOCAL,
                 election: ElectionState | None = None,
                 log: tuple[tuple[int, tuple[str, ...]], ...] = (),
                 mock_jitter: int | None = None, bugs: tuple[str, ...] = (),
                 era: str = "3.7") -> None:
        self.voters = frozenset(voters)
        self.store = MemoryQuorumStateStore(election)
        self.log = RaftLog()
        for epoch, records in log:
            self.log.append_as_leader(records, epoch)
        self.random = MockableRandom(1)
        if mock_jitter is not None:
            self.random.mock_next_int(mock_jitter)
        self.now = 1_000
        self.client = KafkaRaftClient(local, voters, self.log, self.store, self.random, CONFIG,
                                      raft_rules_for(era, bugs))
        self.local = local
        self.sent: list[Outbound] = []
        self._correlation = 1000
        self.client.initialize(self.now)

    # -- driving ---------------------------------------------------------------------------
    def sleep(self, ms: int) -> None:
        self.now += ms

    def poll(self) -> None:
        self.client.poll(self.now)
        self.sent += self.client.drain()

    def take(self, kind: type[Any]) -> list[Outbound]:
        """The sent messages of ``kind`` (removed from the send queue)."""
        out = [o for o in self.sent if isinstance(o.message, kind)]
        self.sent = [o for o in self.sent if not isinstance(o.message, kind)]
        return out

    def take_one(self, kind: type[Any]) -> Outbound:
        out = self.take(kind)
        assert len(out) == 1, out
        return out[0]

    def deliver_request(self, source: int, request: Any) -> None:
        self._correlation += 1
        self.client.handle_request(source, self._correlation, request, self.now)
        self.sent += self.client.drain()

    def deliver_response(self, sent: Outbound, response: Any) -> None:
        self.client.handle_response(sent.destination, sent.correlation_id, response, self.now)
        self.sent += self.client.drain()

    # -- Kafka's context helpers -----------------------------------------------------------
    @property
    def epoch(self) -> int:
        return self.client.quorum.epoch

    def become_leader(self) -> None:
        """``becomeLeader``: time out, win every vote, hear every BeginQuorumEpoch back."""
        epoch = self.epoch + 1
        self.sleep(2 * CONFIG.election_timeout_ms)
        self.expect_and_grant_votes(epoch)
        self.poll()
        for begin in self.take(BeginQuorumEpochRequest):
            assert begin.message == BeginQuorumEpochRequest(epoch, LOCAL)
            self.deliver_response(begin, BeginQuorumEpochResponse(NONE, epoch, LOCAL))

    def expect_and_grant_votes(self, epoch: int) -> None:
        self.poll()
        votes = self.take(VoteRequest)
        assert votes
        expected = VoteRequest(epoch, LOCAL, self.log.last_fetched_epoch, self.log.end_offset)
        assert {vote.message for vote in votes} == {expected}
        for vote in votes:
            self.deliver_response(vote, VoteResponse(NONE, epoch, -1, True))
        self.poll()
        self.assert_elected_leader(epoch, LOCAL)

    def assert_elected_leader(self, epoch: int, leader: int) -> None:
        assert self.client.leader_and_epoch() == (leader, epoch)
        assert self.store.state == ElectionState.with_elected_leader(epoch, leader, self.voters)

    def assert_voted_candidate(self, epoch: int, candidate: int) -> None:
        assert self.store.state == ElectionState.with_voted_candidate(epoch, candidate,
                                                                      self.voters)

    def assert_unknown_leader(self, epoch: int) -> None:
        assert self.client.leader_and_epoch() == (None, epoch)
        assert self.store.state == ElectionState.with_unknown_leader(epoch, self.voters)

    def vote_response(self) -> VoteResponse:
        out = self.take_one(VoteResponse)
        assert isinstance(out.message, VoteResponse)
        return out.message

    def fetch_response(self) -> RaftFetchResponse:
        out = self.take_one(RaftFetchResponse)
        assert isinstance(out.message, RaftFetchResponse)
        return out.message


def as_leader(voters: set[int], epoch: int, *,
              log: tuple[tuple[int, tuple[str, ...]], ...] = (), era: str = "3.7") -> Ctx:
    """``initializeAsLeader``: unattached in epoch - 1, then elected in ``epoch``."""
    ctx = Ctx(voters, election=ElectionState.with_unknown_leader(epoch - 1, frozenset(voters)),
              log=log, era=era)
    ctx.become_leader()
    return ctx


def fetch(epoch: int, replica: int, offset: int, last_epoch: int, max_wait_ms: int
          ) -> RaftFetchRequest:
    return RaftFetchRequest(replica, epoch, offset, last_epoch, max_wait_ms)


# --- initialization -----------------------------------------------------------------------

@kafka("3.7.0", KRCT, "testInitializeSingleMemberQuorum")
def test_a_lone_voter_elects_itself_in_epoch_1() -> None:
    """A one-voter quorum: initialize makes it leader of epoch 1 at once."""
    ctx = Ctx({LOCAL})
    ctx.assert_elected_leader(1, LOCAL)


@kafka("3.7.0", KRCT, "testLeaderAppendSingleMemberQuorum")
def test_a_lone_leader_commits_its_leader_change_then_its_appends() -> None:
    """The LeaderChange record (leader 0, voters (0), granted by 0) commits at once: HW 1;
    three appended records make it 4; a fetch from 0 returns the LeaderChange then the
    records, all in epoch 1."""
    ctx = Ctx({LOCAL})
    ctx.assert_elected_leader(1, LOCAL)
    assert ctx.client.high_watermark == 1
    ctx.poll()
    assert ctx.client.high_watermark == 1
    ctx.client.schedule_append(1, ["a", "b", "c"], ctx.now)
    ctx.poll()
    assert ctx.client.high_watermark == 4
    ctx.deliver_request(1, fetch(1, 1, 0, 0, 0))
    records = ctx.fetch_response().records
    assert records == ((0, 1, LeaderChangeMessage(LOCAL, (LOCAL,), (LOCAL,))),
                       (1, 1, "a"), (2, 1, "b"), (3, 1, "c"))


@kafka("3.7.0", KRCT, "testInitializeAsCandidateFromStateStore")
def test_a_restarted_candidate_asks_the_other_voters_again() -> None:
    """Stored "voted for myself" in 2: candidate in 2 again; the first poll sends Vote(2, 0, 0,
    0) to both other voters."""
    ctx = Ctx({LOCAL, 1, 2},
              election=ElectionState.with_voted_candidate(2, LOCAL, frozenset({LOCAL, 1, 2})))
    ctx.assert_voted_candidate(2, LOCAL)
    assert ctx.log.end_offset == 0
    ctx.poll()
    votes = ctx.take(VoteRequest)
    assert sorted(v.destination for v in votes) == [1, 2]
    assert {v.message for v in votes} == {VoteRequest(2, LOCAL, 0, 0)}


@kafka("3.7.0", KRCT, "testInitializeAsCandidateAndBecomeLeaderQuorumOfThree")
def test_a_candidate_with_one_grant_of_three_leads_and_writes_the_leader_change() -> None:
    """Three voters: after the election timeout, Vote(1, 0, 0, 0) to both; one grant makes
    it leader of epoch 1; the LeaderChange record (voters 0,1,2; granted by 0,1) is the
    log's first, and BeginQuorumEpoch goes to the two others."""
    ctx = Ctx({LOCAL, 1, 2})
    ctx.assert_unknown_leader(0)
    ctx.sleep(2 * CONFIG.election_timeout_ms)
    ctx.poll()
    ctx.assert_voted_candidate(1, LOCAL)
    votes = ctx.take(VoteRequest)
    assert {v.message for v in votes} == {VoteRequest(1, LOCAL, 0, 0)}
    to_1 = next(v for v in votes if v.destination == 1)
    ctx.deliver_response(to_1, VoteResponse(NONE, 1, -1, True))
    ctx.assert_elected_leader(1, LOCAL)
    assert ctx.log.end_offset == 1
    ctx.poll()
    begins = ctx.take(BeginQuorumEpochRequest)
    assert sorted(b.destination for b in begins) == [1, 2]
    assert ctx.log.read(0) == ((0, 1, LeaderChangeMessage(LOCAL, (0, 1, 2), (0, 1))),)


# --- a restarted leader is resigned ------------------------------------------------------

def restarted_leader() -> Ctx:
    return Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(2, LOCAL,
                                                                      frozenset({LOCAL, 1})),
               mock_jitter=0)


@kafka("3.7.0", KRCT, "testRejectVotesFromSameEpochAfterResigningLeadership")
def test_a_restarted_leader_votes_for_nobody_in_its_epoch() -> None:
    """Leader of 2 before the restart: a Vote in 2 from a voter as caught up as itself is
    refused (it may have led records in 2 that were lost)."""
    ctx = restarted_leader()
    assert ctx.log.end_offset == 0
    ctx.assert_elected_leader(2, LOCAL)
    ctx.deliver_request(1, VoteRequest(2, 1, ctx.log.last_fetched_epoch, ctx.log.end_offset))
    assert ctx.vote_response() == VoteResponse(NONE, 2, LOCAL, False)


@kafka("3.7.0", KRCT, "testGrantVotesFromHigherEpochAfterResigningLeadership")
def test_a_restarted_leader_votes_in_a_higher_epoch() -> None:
    """A Vote in 3: unattached in 3, then voted for 1 (persisted), granted."""
    ctx = restarted_leader()
    assert ctx.client.quorum.is_resigned()
    ctx.deliver_request(1, VoteRequest(3, 1, ctx.log.last_fetched_epoch, ctx.log.end_offset))
    ctx.poll()
    assert ctx.client.quorum.is_voted()
    ctx.assert_voted_candidate(3, 1)
    assert ctx.vote_response() == VoteResponse(NONE, 3, -1, True)


@kafka("3.7.0", KRCT, "testInitializeAsResignedAndBecomeCandidate")
def test_a_restarted_leader_stands_again_after_its_election_timeout() -> None:
    """Resigned in 2 after the restart: once the election timeout passes, a candidate in 3
    (persisted)."""
    ctx = restarted_leader()
    assert ctx.client.quorum.is_resigned()
    ctx.sleep(CONFIG.election_timeout_ms)
    ctx.poll()
    assert ctx.client.quorum.is_candidate()
    ctx.assert_voted_candidate(3, LOCAL)


# --- check quorum (KAFKA-15489) ----------------------------------------------------------

@kafka("3.7.0", KRCT, "testLeaderShouldResignLeadershipIfNotGetFetchRequestFromMajorityVoters")
def test_a_leader_no_voter_fetches_from_resigns_after_the_check_quorum_timeout() -> None:
    """Three voters: each voter's Fetch restarts the check-quorum timer (one other voter is
    a majority with the leader); an observer's does not, and the leader resigns in its
    epoch 1.5 x the fetch timeout after the last voter fetch."""
    half = CHECK_QUORUM_TIMEOUT_MS // 2
    ctx = Ctx({LOCAL, 1, 2})
    ctx.become_leader()
    epoch = ctx.epoch
    ctx.sleep(half)
    ctx.poll()
    assert not ctx.client.quorum.is_resigned()
    for voter in (1, 2):
        ctx.deliver_request(voter, fetch(epoch, voter, 0, 0, 0))
        ctx.sleep(half)
        ctx.poll()
        assert not ctx.client.quorum.is_resigned()
    ctx.deliver_request(3, fetch(epoch, 3, 0, 0, 0))
    ctx.sleep(half)
    ctx.poll()
    assert ctx.client.quorum.is_resigned()
    assert ctx.store.state == ElectionState.with_elected_leader(epoch, LOCAL, ctx.voters)


@kafka("3.7.0", KRCT, "testLeaderShouldNotResignLeadershipIfOnlyOneVoters")
def test_a_lone_leader_never_resigns_for_check_quorum() -> None:
    """A one-voter leader, no fetch for the whole check-quorum timeout: not resigned."""
    ctx = Ctx({LOCAL})
    ctx.sleep(CHECK_QUORUM_TIMEOUT_MS)
    ctx.poll()
    assert not ctx.client.quorum.is_resigned()


# --- BeginQuorumEpoch and EndQuorumEpoch -------------------------------------------------

@kafka("3.7.0", KRCT, "testHandleBeginQuorumRequest")
def test_begin_quorum_epoch_makes_a_voter_follow_the_new_leader() -> None:
    """Voted for 1 in 2; BeginQuorumEpoch(2, 1): follower of 1, answered (NONE, 2, 1)."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_voted_candidate(2, 1, frozenset({0, 1})))
    ctx.deliver_request(1, BeginQuorumEpochRequest(2, 1))
    ctx.assert_elected_leader(2, 1)
    assert ctx.take_one(BeginQuorumEpochResponse).message == BeginQuorumEpochResponse(NONE, 2, 1)


@kafka("3.7.0", KRCT, "testHandleEndQuorumRequest")
def test_the_first_preferred_successor_stands_at_once_on_end_quorum_epoch() -> None:
    """Follower of 1 in 2; 1 resigns naming this node first: answered (NONE, 2, 1), and the
    next poll makes it a candidate in 3."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(2, 1, frozenset({0, 1})))
    ctx.deliver_request(1, EndQuorumEpochRequest(2, 1, (LOCAL,)))
    assert ctx.take_one(EndQuorumEpochResponse).message == EndQuorumEpochResponse(NONE, 2, 1)
    ctx.poll()
    ctx.assert_voted_candidate(3, LOCAL)


@kafka("3.7.0", KRCT, "testEndQuorumEpochSentBasedOnFetchOffset")
def test_a_resigning_leader_names_its_successors_by_fetch_offset() -> None:
    """Leader of 1; voter 1 fetched at 1, voter 2 (after two appends) at 3; resigning, it
    sends EndQuorumEpoch(1, 0, (2, 1)) to both. (Kafka resigns by shutting down; isrlab by
    ``resign``: the same transition, the same request.)"""
    ctx = as_leader({LOCAL, 1, 2}, 1)
    ctx.deliver_request(1, fetch(1, 1, 1, 1, 0))
    assert ctx.fetch_response().high_watermark == 1
    ctx.client.schedule_append(1, ["foo", "bar"], ctx.now)
    ctx.poll()
    ctx.deliver_request(2, fetch(1, 2, 3, 1, 0))
    assert ctx.fetch_response().high_watermark == 3
    ctx.client.resign(1)
    ctx.poll()
    ends = ctx.take(EndQuorumEpochRequest)
    assert sorted(e.destination for e in ends) == [1, 2]
    assert {e.message for e in ends} == {EndQuorumEpochRequest(1, LOCAL, (2, 1))}


@kafka("3.7.0", KRCT, "testFetchShouldBeTreatedAsLeaderAcknowledgement")
def test_a_fetch_acknowledges_the_leader_like_begin_quorum_epoch() -> None:
    """BeginQuorumEpoch to 1 is lost, but 1 fetches: answered as leader, and when the
    BeginQuorumEpoch request times out it is not sent again."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_unknown_leader(4, frozenset({0, 1})),
              mock_jitter=0)
    ctx.sleep(CONFIG.election_timeout_ms)
    ctx.expect_and_grant_votes(5)
    ctx.poll()
    assert ctx.take_one(BeginQuorumEpochRequest).message == BeginQuorumEpochRequest(5, LOCAL)
    ctx.deliver_request(1, fetch(5, 1, 0, 0, 500))
    response = ctx.fetch_response()
    assert (response.error, response.leader_epoch, response.leader_id) == (NONE, 5, LOCAL)
    ctx.sleep(CONFIG.request_timeout_ms)
    ctx.poll()
    assert ctx.sent == []


# --- Vote ----------------------------------------------------------------------------------

@kafka("3.7.0", KRCT, "testVoteRequestTimeout")
def test_a_vote_request_is_retried_after_the_request_timeout_and_the_late_answer_ignored(
) -> None:
    """Vote(1) unanswered for quorum.request.timeout.ms is sent again; the late grant of the
    first is ignored (still candidate), the retry's grant elects it."""
    ctx = Ctx({LOCAL, 1})
    ctx.sleep(2 * CONFIG.election_timeout_ms)
    ctx.poll()
    ctx.assert_voted_candidate(1, LOCAL)
    first = ctx.take_one(VoteRequest)
    assert first.message == VoteRequest(1, LOCAL, 0, 0)
    ctx.sleep(CONFIG.request_timeout_ms)
    ctx.poll()
    retry = ctx.take_one(VoteRequest)
    assert retry.correlation_id != first.correlation_id
    ctx.deliver_response(first, VoteResponse(NONE, 1, -1, True))
    ctx.poll()
    ctx.assert_voted_candidate(1, LOCAL)
    ctx.deliver_response(retry, VoteResponse(NONE, 1, -1, True))
    ctx.poll()
    ctx.assert_elected_leader(1, LOCAL)


@kafka("3.7.0", KRCT, "testHandleValidVoteRequestAsFollower")
def test_an_unattached_voter_grants_an_up_to_date_candidate_and_persists_the_vote() -> None:
    """Unattached in 2, Vote(2, 1, last (1, 1)) against an empty log: granted, and "voted for 1
    in 2" is stored."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_unknown_leader(2, frozenset({0, 1})))
    ctx.deliver_request(1, VoteRequest(2, 1, 1, 1))
    assert ctx.vote_response() == VoteResponse(NONE, 2, -1, True)
    ctx.assert_voted_candidate(2, 1)


@kafka("3.7.0", KRCT, "testHandleVoteRequestAsFollowerWithVotedCandidate")
def test_a_voter_that_voted_refuses_another_candidate_in_the_same_epoch() -> None:
    """Voted for 3 in 2: a Vote from 1 in 2 is refused, the stored vote stays 3."""
    voters = frozenset({LOCAL, 1, 3})
    ctx = Ctx(set(voters), election=ElectionState.with_voted_candidate(2, 3, voters))
    ctx.deliver_request(1, VoteRequest(2, 1, 1, 1))
    assert ctx.vote_response() == VoteResponse(NONE, 2, -1, False)
    ctx.assert_voted_candidate(2, 3)


@kafka("3.7.0", KRCT, "testHandleInvalidVoteRequestWithOlderEpoch")
def test_a_vote_from_an_older_epoch_is_fenced() -> None:
    """Unattached in 2: a Vote in 1 is answered FENCED_LEADER_EPOCH (epoch 2, no leader),
    nothing changes."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_unknown_leader(2, frozenset({0, 1})))
    ctx.deliver_request(1, VoteRequest(1, 1, 0, 1))
    assert ctx.vote_response() == VoteResponse(FENCED_LEADER_EPOCH, 2, -1, False)
    ctx.assert_unknown_leader(2)


@kafka("3.7.0", KRCT, "testHandleInvalidVoteRequestAsObserver")
def test_an_observer_answers_a_vote_with_inconsistent_voter_set() -> None:
    """An observer (voters 1, 2) answers a Vote INCONSISTENT_VOTER_SET and stays unattached in
    its epoch."""
    ctx = Ctx({1, 2}, election=ElectionState.with_unknown_leader(2, frozenset({1, 2})))
    ctx.deliver_request(1, VoteRequest(3, 1, 2, 1))
    assert ctx.vote_response() == VoteResponse(INCONSISTENT_VOTER_SET, 2, -1, False)
    ctx.assert_unknown_leader(2)


@kafka("3.7.0", KRCT, "testInvalidVoteRequest")
def test_a_vote_with_an_impossible_log_end_is_an_invalid_request() -> None:
    """A negative last offset, a negative last epoch, or a last epoch not below the
    candidate's epoch: INVALID_REQUEST, and the node keeps following its leader."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(5, 1, frozenset({0, 1})))
    for last_epoch, last_offset in ((0, -5), (-1, 0), (6, 0)):
        ctx.deliver_request(1, VoteRequest(6, 1, last_epoch, last_offset))
        assert ctx.vote_response() == VoteResponse(INVALID_REQUEST, 5, 1, False)
        ctx.assert_elected_leader(5, 1)


@kafka("3.7.0", KRCT, "testLeaderIgnoreVoteRequestOnSameEpoch")
@kafka("3.7.0", KRCT, "testCandidateIgnoreVoteRequestOnSameEpoch")
def test_a_leader_or_candidate_votes_for_nobody_else_in_its_epoch() -> None:
    """A leader of 2, or a candidate of 2, refuses a Vote in 2 from the other voter."""
    leader = as_leader({LOCAL, 1}, 2)
    leader.deliver_request(1, VoteRequest(2, 1, 0, 0))
    assert leader.vote_response() == VoteResponse(NONE, 2, LOCAL, False)
    leader.assert_elected_leader(2, LOCAL)
    candidate = Ctx({LOCAL, 1},
                    election=ElectionState.with_voted_candidate(2, LOCAL, frozenset({0, 1})))
    candidate.deliver_request(1, VoteRequest(2, 1, 0, 0))
    assert candidate.vote_response() == VoteResponse(NONE, 2, -1, False)
    candidate.assert_voted_candidate(2, LOCAL)


@kafka("3.7.0", KRCT, "testRetryElection")
def test_a_rejected_candidate_backs_off_then_stands_in_the_next_epoch() -> None:
    """Of two voters, one rejection loses: still voted for itself in 1, it backs off
    (bounded by quorum.election.backoff.max.ms, 100) and then asks for votes in 2."""
    ctx = Ctx({LOCAL, 1}, mock_jitter=85)
    ctx.assert_unknown_leader(0)
    ctx.sleep(2 * CONFIG.election_timeout_ms)
    ctx.poll()
    ctx.assert_voted_candidate(1, LOCAL)
    vote = ctx.take_one(VoteRequest)
    ctx.deliver_response(vote, VoteResponse(NONE, 1, -1, False))
    ctx.poll()
    ctx.assert_voted_candidate(1, LOCAL)
    ctx.sleep(CONFIG.election_backoff_max_ms - 1)
    ctx.poll()
    ctx.assert_voted_candidate(1, LOCAL)
    ctx.sleep(1)
    ctx.poll()
    ctx.assert_voted_candidate(2, LOCAL)
    assert ctx.take_one(VoteRequest).message == VoteRequest(2, LOCAL, 0, 0)


# --- Fetch ---------------------------------------------------------------------------------

@kafka("3.7.0", KRCT, "testVoterBecomeCandidateAfterFetchTimeout")
def test_a_follower_that_cannot_fetch_stands_with_its_log_end() -> None:
    """Follower of 1 in 5, its log one record of epoch 3: Fetch(5, 1, 3); after the fetch
    timeout, a candidate in 6 asking with (3, 1)."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(5, 1, frozenset({0, 1})),
              log=((3, ("foo",)),))
    ctx.assert_elected_leader(5, 1)
    ctx.poll()
    assert ctx.take_one(RaftFetchRequest).message == RaftFetchRequest(LOCAL, 5, 1, 3, 0)
    ctx.sleep(CONFIG.fetch_timeout_ms)
    ctx.poll()
    assert ctx.take_one(VoteRequest).message == VoteRequest(6, LOCAL, 3, 1)
    ctx.assert_voted_candidate(6, LOCAL)


@kafka("3.7.0", KRCT, "testFollowerReplication")
def test_a_follower_appends_what_the_leader_sends() -> None:
    """Follower of 1 in 5: Fetch(5, 0, 0); the answer's two records are appended (LEO 2)."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(5, 1, frozenset({0, 1})))
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    assert request.message == RaftFetchRequest(LOCAL, 5, 0, 0, 0)
    ctx.deliver_response(request, RaftFetchResponse(NONE, 5, 1, 0, 0,
                                                    records=((0, 3, "a"), (1, 3, "b"))))
    ctx.poll()
    assert ctx.log.end_offset == 2


@kafka("3.7.0", KRCT, "testFollowerLogReconciliation")
def test_a_follower_truncates_to_the_diverging_epoch_and_fetches_from_there() -> None:
    """Follower of 1 in 5 with three records of epoch 3 fetches (3, 3); the leader answers
    DivergingEpoch (3, end 2): the log is cut to 2, and the next Fetch is (2, 3)."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(5, 1, frozenset({0, 1})),
              log=((3, ("foo", "bar")), (3, ("baz",))))
    assert ctx.log.end_offset == 3
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    assert request.message == RaftFetchRequest(LOCAL, 5, 3, 3, 0)
    ctx.deliver_response(request, RaftFetchResponse(NONE, 5, 1, 1, 0, diverging_epoch=3,
                                                    diverging_end_offset=2))
    ctx.poll()
    assert ctx.log.end_offset == 2
    assert ctx.take_one(RaftFetchRequest).message == RaftFetchRequest(LOCAL, 5, 2, 3, 0)


@kafka("3.7.0", KRCT, "testLeaderImmediatelySendsDivergingEpoch")
def test_the_leader_answers_a_diverged_fetch_with_the_end_of_the_last_common_epoch() -> None:
    """Log: epoch 1 at 0-2, 3 at 3-5, 5 at 6-8; leader of 6. A Fetch at (6, epoch 2) — an
    epoch this log never had — is answered at once (though it may wait 500 ms) with
    DivergingEpoch (1, 3)."""
    voters = frozenset({LOCAL, 1})
    ctx = Ctx(set(voters), election=ElectionState.with_unknown_leader(5, voters),
              log=((1, ("a", "b", "c")), (3, ("d", "e", "f")), (5, ("g", "h", "i"))))
    ctx.become_leader()
    epoch = ctx.epoch
    ctx.deliver_request(1, fetch(epoch, 1, 6, 2, 500))
    ctx.poll()
    response = ctx.fetch_response()
    assert (response.error, response.leader_epoch, response.leader_id) == (NONE, epoch, LOCAL)
    assert (response.diverging_epoch, response.diverging_end_offset) == (1, 3)


@kafka("3.7.0", KRCT, "testInvalidFetchRequest")
def test_a_fetch_with_impossible_offsets_is_invalid_and_a_future_epoch_unknown() -> None:
    """Negative fetch offset, negative last epoch, last epoch above the request's epoch, or
    negative max wait: INVALID_REQUEST; the request's epoch above the leader's:
    UNKNOWN_LEADER_EPOCH; every answer names the leader (5, 0)."""
    ctx = as_leader({LOCAL, 1}, 5)
    for request, error in ((fetch(5, 1, -5, 0, 0), INVALID_REQUEST),
                           (fetch(5, 1, 0, -1, 0), INVALID_REQUEST),
                           (fetch(5, 1, 0, 6, 0), INVALID_REQUEST),
                           (fetch(6, 1, 0, 0, 0), UNKNOWN_LEADER_EPOCH),
                           (fetch(5, 1, 0, 0, -1), INVALID_REQUEST)):
        ctx.deliver_request(1, request)
        response = ctx.fetch_response()
        assert (response.error, response.leader_epoch, response.leader_id) == (error, 5, LOCAL)


@kafka("3.7.0", KRCT, "testPurgatoryFetchSatisfiedByWrite")
def test_a_parked_fetch_is_answered_by_the_next_append() -> None:
    """A Fetch at the leader's LEO waiting up to 500 ms gets no answer; an append answers
    it with the new records."""
    ctx = as_leader({LOCAL, 1}, 5)
    ctx.deliver_request(1, fetch(5, 1, 1, 5, 500))
    ctx.poll()
    assert ctx.sent == []
    ctx.client.schedule_append(5, ["a", "b", "c"], ctx.now)
    ctx.sent += ctx.client.drain()
    ctx.poll()
    response = ctx.fetch_response()
    assert (response.error, response.leader_epoch, response.leader_id) == (NONE, 5, LOCAL)
    assert [r for _, _, r in response.records] == ["a", "b", "c"]


@kafka("3.7.0", KRCT, "testPurgatoryFetchTimeout")
def test_a_parked_fetch_is_answered_empty_after_its_max_wait() -> None:
    """A Fetch at the LEO waiting 500 ms is parked; 500 ms later it is answered with no records
    and no error."""
    ctx = as_leader({LOCAL, 1}, 5)
    ctx.deliver_request(1, fetch(5, 1, 1, 5, 500))
    ctx.poll()
    assert ctx.sent == []
    ctx.sleep(500)
    ctx.poll()
    response = ctx.fetch_response()
    assert (response.error, response.records) == (NONE, ())


@kafka("3.7.0", KRCT, "testPurgatoryFetchCompletedByFollowerTransition")
def test_a_parked_fetch_is_failed_when_the_leader_learns_a_newer_leader() -> None:
    """Parked Fetch from 1; BeginQuorumEpoch(6) from 2: the leader follows 2, and the parked
    Fetch is answered NOT_LEADER_OR_FOLLOWER naming (6, 2)."""
    ctx = as_leader({LOCAL, 1, 2}, 5)
    ctx.deliver_request(1, fetch(5, 1, 1, 5, 500))
    ctx.poll()
    assert ctx.sent == []
    ctx.deliver_request(2, BeginQuorumEpochRequest(6, 2))
    response = ctx.fetch_response()
    assert (response.error, response.leader_epoch, response.leader_id) == (
        "NOT_LEADER_OR_FOLLOWER", 6, 2)
    ctx.assert_elected_leader(6, 2)


@kafka("3.7.0", KRCT, "testInitializeObserverNoPreviousState")
def test_an_observer_finds_the_leader_through_any_voters_fetch_answer() -> None:
    """Observer of voters {1, 2}: it fetches from a voter; an answer naming leader 1 in
    epoch 5 (FENCED_LEADER_EPOCH: the observer asked in epoch 0) makes it 1's follower."""
    ctx = Ctx({1, 2}, local=LOCAL)
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    assert request.destination in (1, 2)
    assert request.message == RaftFetchRequest(LOCAL, 0, 0, 0, 0)
    ctx.deliver_response(request, RaftFetchResponse(FENCED_LEADER_EPOCH, 5, 1, -1, 0))
    ctx.assert_elected_leader(5, 1)
