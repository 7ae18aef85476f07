"""isrlab's Raft core (``actors.raft``) beyond the Kafka tests the conformance suite ports
(issue 52): the KAFKA-15489 bug flag (3.6's leader without check quorum), and rules Kafka's
3.7.0 code enforces that its own tests only reach through other assertions — the vote's
up-to-date comparison, the follower HW capped by its LEO, observers outside the HW, the new
leader's epoch-start rule seen end to end, and no truncation below the HW.

The harness is the conformance suite's (``tests/conformance/test_raft_client.py``'s
:class:`Ctx`, Kafka's ``RaftClientTestContext``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))

from test_raft_client import (  # noqa: E402
    CHECK_QUORUM_TIMEOUT_MS,
    LOCAL,
    Ctx,
    as_leader,
    fetch,
)
from test_raft_leader_state import leader  # noqa: E402

from actors.raft.election import ElectionState  # noqa: E402
from actors.raft.errors import RaftInvariantError  # noqa: E402
from actors.raft.messages import NONE, RaftFetchRequest, RaftFetchResponse, VoteRequest  # noqa: E402
from actors.raft.timer import FOREVER  # noqa: E402


def test_with_kafka_15489_a_leader_no_voter_fetches_from_keeps_leading() -> None:
    """The bug flag (3.6.x: no check quorum): the same leader, never fetched from by any
    voter, is still leader long after 1.5 x the fetch timeout."""
    ctx = Ctx({LOCAL, 1, 2}, bugs=("KAFKA-15489",))
    ctx.become_leader()
    ctx.sleep(10 * CHECK_QUORUM_TIMEOUT_MS)
    ctx.poll()
    assert ctx.client.quorum.is_leader()


def test_a_vote_is_refused_to_a_candidate_whose_log_is_behind() -> None:
    """The up-to-date rule (``handleVoteRequest``): this log ends at (epoch 3, offset 2); a
    candidate at (3, 1) or (2, 5) is refused, one at (3, 2) granted."""
    voters = frozenset({LOCAL, 1, 2})
    for (last_epoch, last_offset), granted in (((3, 1), False), ((2, 5), False),
                                               ((3, 2), True)):
        ctx = Ctx(set(voters), election=ElectionState.with_unknown_leader(4, voters),
                  log=((3, ("a", "b")),))
        ctx.deliver_request(1, VoteRequest(5, 1, last_epoch, last_offset))
        assert ctx.vote_response().vote_granted is granted


def test_a_followers_high_watermark_is_the_leaders_capped_by_its_own_log_end() -> None:
    """``updateFollowerHighWatermark``: leader HW 5, follower LEO 2 after the append: 2."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(5, 1, frozenset({0, 1})))
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    ctx.deliver_response(request, RaftFetchResponse(NONE, 5, 1, 5, 0,
                                                    records=((0, 3, "a"), (1, 3, "b"))))
    assert ctx.client.high_watermark == 2 and ctx.log.high_watermark == 2


def test_an_observer_never_counts_for_the_high_watermark() -> None:
    """Leader of two voters (epoch 5, LEO 1): an observer fetching at 1 moves nothing; the
    other voter fetching at 1 commits the LeaderChange record (HW 1)."""
    ctx = as_leader({LOCAL, 1}, 5)
    ctx.deliver_request(7, fetch(5, 7, 1, 5, 0))
    assert ctx.fetch_response().high_watermark == -1
    assert ctx.client.high_watermark is None
    ctx.deliver_request(1, fetch(5, 1, 1, 5, 0))
    assert ctx.fetch_response().high_watermark == 1
    assert ctx.log.high_watermark == 1


def test_a_new_leader_does_not_expose_earlier_epochs_before_its_own_record_commits() -> None:
    """A new leader of 3 voters whose log holds 3 records of epoch 1 (HW unknown): a voter
    fetching at 3 (all old records) commits nothing; at 4 (its LeaderChange) the HW is 4."""
    voters = frozenset({LOCAL, 1, 2})
    ctx = Ctx(set(voters), election=ElectionState.with_unknown_leader(1, voters),
              log=((1, ("a", "b", "c")),))
    ctx.become_leader()
    ctx.deliver_request(1, fetch(2, 1, 3, 1, 0))
    response = ctx.fetch_response()
    assert response.high_watermark == -1 and len(response.records) == 1
    ctx.deliver_request(1, fetch(2, 1, 4, 2, 0))
    assert ctx.fetch_response().high_watermark == 4


def test_a_follower_refuses_to_truncate_below_its_high_watermark() -> None:
    """``handleFetchResponse``: a DivergingEpoch below the follower's HW raises (Kafka's
    KafkaException): committed records are never given up."""
    ctx = Ctx({LOCAL, 1}, election=ElectionState.with_elected_leader(5, 1, frozenset({0, 1})),
              log=((3, ("a", "b", "c")),))
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    ctx.deliver_response(request, RaftFetchResponse(NONE, 5, 1, 3, 0))
    assert ctx.log.high_watermark == 3
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    with pytest.raises(RaftInvariantError):
        ctx.deliver_response(request, RaftFetchResponse(NONE, 5, 1, 3, 0, diverging_epoch=3,
                                                        diverging_end_offset=1))


def test_with_kafka_15489_the_leader_never_fails_check_quorum() -> None:
    """The bug flag (3.6 and before: no check-quorum timer in ``LeaderState``): three voters,
    nobody fetches for ever, the leader never has to resign."""
    s = leader({LOCAL, 1, 2}, 0, check_quorum=False)
    assert s.time_until_check_quorum_expires(10 * CHECK_QUORUM_TIMEOUT_MS) == FOREVER
