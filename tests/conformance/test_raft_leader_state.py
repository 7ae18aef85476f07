"""The quorum leader's view of the replicas (``actors.raft.leader.LeaderState``) held against
Kafka 3.7.0's ``LeaderStateTest`` (issue 52): acknowledgement, the majority high watermark
that moves only above the epoch start offset, caught-up times, the preferred successors,
and the check-quorum timer of KAFKA-15489.

Kafka's tests pass a fetch timeout of 2000 ms, so the check-quorum timeout is 3000 ms
(1.5 x). Not ported: ``testRequireNonNullAccumulator`` (no accumulator),
``testUpdateHighWatermarkMetadata`` (no offset metadata), the ``describeQuorum`` and
observer-expiry tests (no DescribeQuorum API).
"""

from __future__ import annotations

import pytest
from kafkacite import kafka

from actors.raft.errors import IllegalArgumentError, IllegalStateError
from actors.raft.leader import LeaderState
from actors.raft.timer import FOREVER, Deadline

LST = "LeaderStateTest"
LOCAL = 0
EPOCH = 5
FETCH_TIMEOUT_MS = 2000
CHECK_QUORUM_TIMEOUT_MS = 3000


def leader(voters: set[int], epoch_start_offset: int, now_ms: int = 0,
           check_quorum: bool = True) -> LeaderState:
    """``newLeaderState``: every voter granted the vote."""
    vs = frozenset(voters)
    return LeaderState(LOCAL, EPOCH, epoch_start_offset, vs, vs, CHECK_QUORUM_TIMEOUT_MS,
                       Deadline.after(now_ms, CHECK_QUORUM_TIMEOUT_MS), check_quorum)


@kafka("3.7.0", LST, "testFollowerAcknowledgement")
def test_begin_quorum_epoch_goes_to_voters_until_each_acknowledges() -> None:
    """Voters 1 and 2 have not acknowledged; after 1 then 2 do, none is left."""
    s = leader({LOCAL, 1, 2}, 0)
    assert s.non_acknowledging_voters() == {1, 2}
    s.add_acknowledgement_from(1)
    assert s.non_acknowledging_voters() == {2}
    s.add_acknowledgement_from(2)
    assert s.non_acknowledging_voters() == frozenset()


@kafka("3.7.0", LST, "testNonFollowerAcknowledgement")
def test_an_acknowledgement_from_a_non_voter_is_refused() -> None:
    """A lone leader: an acknowledgement from node 1 (not a voter) raises."""
    s = leader({LOCAL}, 0)
    with pytest.raises(IllegalArgumentError):
        s.add_acknowledgement_from(1)


@kafka("3.7.0", LST, "testUpdateHighWatermarkQuorumSizeOne")
def test_a_lone_leader_commits_once_it_holds_a_record_of_its_epoch() -> None:
    """Epoch start 15: LEO 15 commits nothing (nothing of epoch 5 yet); LEO 16 makes the HW
    16, LEO 20 makes it 20."""
    s = leader({LOCAL}, 15)
    assert s.high_watermark is None
    assert not s.update_local_state(15)
    assert s.non_acknowledging_voters() == frozenset()
    assert s.high_watermark is None
    assert s.update_local_state(16) and s.high_watermark == 16
    assert s.update_local_state(20) and s.high_watermark == 20


@kafka("3.7.0", LST, "testNonMonotonicLocalEndOffsetUpdate")
@kafka("3.7.0", LST, "testIdempotentEndOffsetUpdate")
def test_the_leaders_own_end_offset_only_rises() -> None:
    """LEO 16 moves the HW; 16 again does not; 15 raises."""
    s = leader({LOCAL}, 15)
    assert s.update_local_state(16)
    assert not s.update_local_state(16)
    assert s.high_watermark == 16
    with pytest.raises(IllegalStateError):
        s.update_local_state(15)


@kafka("3.7.0", LST, "testUpdateHighWatermarkQuorumSizeTwo")
def test_two_voters_commit_what_both_hold_above_the_epoch_start() -> None:
    """Epoch start 10, leader LEO 13: the follower at 10 acknowledges but commits nothing;
    at 11 the HW is 11, at 13 it is 13."""
    s = leader({LOCAL, 1}, 10)
    assert not s.update_local_state(13)
    assert s.non_acknowledging_voters() == {1}
    assert s.high_watermark is None
    assert not s.update_replica_state(1, 0, 10)
    assert s.non_acknowledging_voters() == frozenset()
    assert s.high_watermark is None
    assert s.update_replica_state(1, 0, 11) and s.high_watermark == 11
    assert s.update_replica_state(1, 0, 13) and s.high_watermark == 13


@kafka("3.7.0", LST, "testUpdateHighWatermarkQuorumSizeThree")
def test_three_voters_commit_the_second_largest_end_offset() -> None:
    """Epoch start 10, leader at 15: followers at 10 commit nothing; one follower at 15
    makes the HW 15; the leader at 20 alone changes nothing; a second voter at 20 makes it
    20."""
    s = leader({LOCAL, 1, 2}, 10)
    assert not s.update_local_state(15)
    assert not s.update_replica_state(1, 0, 10)
    assert s.non_acknowledging_voters() == {2}
    assert not s.update_replica_state(2, 0, 10)
    assert s.non_acknowledging_voters() == frozenset()
    assert s.high_watermark is None
    assert s.update_replica_state(2, 0, 15) and s.high_watermark == 15
    assert not s.update_local_state(20) and s.high_watermark == 15
    assert s.update_replica_state(1, 0, 20) and s.high_watermark == 20
    assert not s.update_replica_state(2, 0, 20) and s.high_watermark == 20


@kafka("3.7.0", LST, "testNonMonotonicHighWatermarkUpdate")
def test_a_voter_that_lost_its_disk_does_not_pull_the_high_watermark_back() -> None:
    """HW 10; the follower comes back fetching at 5: its end offset is 5, the HW stays 10."""
    s = leader({LOCAL, 1}, 0)
    s.update_local_state(10)
    s.update_replica_state(1, 0, 10)
    assert s.high_watermark == 10
    assert not s.update_replica_state(1, 0, 5)
    assert s.describe_replica(1, 0)[0] == 5
    assert s.high_watermark == 10


@kafka("3.7.0", LST, "testGetNonLeaderFollowersByFetchOffsetDescending")
def test_preferred_successors_are_the_voters_by_descending_fetch_offset() -> None:
    """Leader at 15 (epoch start 10), voter 1 at 10, voter 2 at 15: successors (2, 1)."""
    s = leader({LOCAL, 1, 2}, 10)
    s.update_local_state(15)
    s.add_acknowledgement_from(1)
    s.add_acknowledgement_from(2)
    s.update_replica_state(1, 0, 10)
    s.update_replica_state(2, 0, 15)
    assert s.non_leader_voters_by_descending_fetch_offset() == [2, 1]


@kafka("3.7.0", LST, "testLastCaughtUpTimeVoters")
def test_a_voter_is_caught_up_when_it_reaches_the_leaders_end_offset_of_its_last_fetch(
) -> None:
    """Caught up at a fetch that reaches the leader's LEO (the fetch's time), or that
    reaches the LEO the leader had at the previous fetch (the previous fetch's time); a
    voter that never did has -1. The leader itself is caught up "now"."""
    now = 1000
    s = leader({LOCAL, 1, 2}, 10)
    assert not s.update_local_state(10)
    assert not s.update_local_state(11)
    assert not s.update_replica_state(1, 1, 10)
    assert s.describe_replica(LOCAL, now)[2] == now
    assert s.describe_replica(1, now)[2] == -1
    assert s.update_replica_state(1, 2, 11)
    assert s.describe_replica(1, now)[2] == 2
    assert not s.update_local_state(100)
    assert s.update_replica_state(1, 3, 50)
    assert s.describe_replica(1, now)[2] == 2
    assert not s.update_local_state(200)
    assert s.update_replica_state(1, 4, 100)
    assert s.describe_replica(1, now)[2] == 3
    assert s.describe_replica(2, now)[2] == -1
    assert not s.update_local_state(300)
    assert s.update_replica_state(2, 5, 200)
    assert s.describe_replica(2, now)[2] == -1
    assert s.update_replica_state(2, 6, 250)
    assert s.describe_replica(2, now)[2] == -1


@kafka("3.7.0", LST, "testLastCaughtUpTimeObserver")
def test_an_observer_is_tracked_for_catching_up_but_never_counts() -> None:
    """Observer 1 of a lone leader (epoch start 5): the same caught-up rule as a voter
    (reaching the leader's LEO, or the LEO of its previous fetch), while the HW moves with
    the leader's LEO alone (``updateReplicaState`` answers False for every observer fetch)."""
    now = 1000
    s = leader({LOCAL}, 5)
    assert s.high_watermark is None
    assert s.non_acknowledging_voters() == frozenset()
    assert s.update_local_state(11)
    assert not s.update_replica_state(1, 1, 10)
    assert s.describe_replica(LOCAL, now)[2] == now
    assert s.describe_replica(1, now)[2] == -1
    assert not s.update_replica_state(1, 2, 11)
    assert s.describe_replica(1, now)[2] == 2
    assert s.update_local_state(100)
    assert not s.update_replica_state(1, 3, 50)
    assert s.describe_replica(1, now)[2] == 2
    assert s.update_local_state(200)
    assert not s.update_replica_state(1, 4, 102)
    assert s.describe_replica(1, now)[2] == 3
    assert not s.update_replica_state(1, 5, 200)
    assert s.describe_replica(1, now)[2] == 5


@kafka("3.7.0", LST, "testNoOpForNegativeRemoteNodeId")
def test_a_fetch_from_a_non_replica_is_ignored() -> None:
    """A Fetch with replica id -1 (a consumer) moves nothing and tracks no observer."""
    s = leader({LOCAL}, 10)
    assert not s.update_replica_state(-1, 0, 10)
    assert s.observer_states == {}


@kafka("3.7.0", LST, "testGrantVote")
def test_a_leader_grants_no_vote_in_its_epoch() -> None:
    """Leader of 5 among voters 1, 2, 3: no vote to any of them, up to date or not."""
    s = LeaderState(1, EPOCH, 1, frozenset({1, 2, 3}), frozenset({1, 2, 3}),
                    CHECK_QUORUM_TIMEOUT_MS, Deadline.after(0, CHECK_QUORUM_TIMEOUT_MS))
    for candidate in (1, 2, 3):
        for up_to_date in (True, False):
            assert not s.can_grant_vote(candidate, up_to_date)


# --- check quorum (KAFKA-15489) ----------------------------------------------------------

@kafka("3.7.0", LST, "testCheckQuorum")
def test_the_leader_must_hear_from_a_majority_of_voters_within_the_check_quorum_timeout(
) -> None:
    """Five voters: 3000 ms to hear from two others. Fetches from two voters restart the
    timer; one voter and an observer do not, and the timer expires 3000 ms after the
    last restart."""
    half = CHECK_QUORUM_TIMEOUT_MS // 2
    s = leader({LOCAL, 1, 2, 3, 4}, 0)
    assert s.time_until_check_quorum_expires(0) == CHECK_QUORUM_TIMEOUT_MS
    assert s.time_until_check_quorum_expires(half) > 0
    s.update_check_quorum_for_following_voter(1, half)
    s.update_check_quorum_for_following_voter(2, half)
    assert s.time_until_check_quorum_expires(half) == CHECK_QUORUM_TIMEOUT_MS
    remaining = s.time_until_check_quorum_expires(2 * half)
    assert remaining > 0
    s.update_check_quorum_for_following_voter(3, 2 * half)
    s.update_check_quorum_for_following_voter(5, 2 * half)   # an observer
    assert s.time_until_check_quorum_expires(2 * half) == remaining
    assert s.time_until_check_quorum_expires(3 * half) == 0


@kafka("3.7.0", LST, "testCheckQuorumWithOneVoter")
def test_a_lone_voter_never_fails_check_quorum() -> None:
    """A one-voter leader: the check-quorum timer never runs, even after an observer fetches."""
    s = leader({LOCAL}, 0)
    assert s.time_until_check_quorum_expires(0) == FOREVER
    assert s.time_until_check_quorum_expires(CHECK_QUORUM_TIMEOUT_MS) == FOREVER
    s.update_check_quorum_for_following_voter(1, CHECK_QUORUM_TIMEOUT_MS)
    assert s.time_until_check_quorum_expires(CHECK_QUORUM_TIMEOUT_MS) == FOREVER
