"""A Raft *observer* (``actors.raft.client.KafkaRaftClient`` with a node id outside the
voters, or none) held against Kafka 3.7.0's ``KafkaRaftClientTest`` (issue 52, point 3):
isrlab's brokers run one each (``actors.quorum_controller.MetadataObserver``) to fetch the
metadata log.

An observer never votes nor stands: it finds the leader through any voter's Fetch answer
(every answer names the answering node's epoch and leader), fetches from it, and when the
leader's connection fails (an error answer, a request timeout) or its fetch timer expires it
asks any voter again, whose answer names the current leader (3.7.0
``KafkaRaftClient.pollFollowerAsObserver``, ``maybeSendAnyVoterFetch``,
``RequestManager.findReadyVoter``). The context is :mod:`test_raft_client`'s ``Ctx``
(Kafka's ``RaftClientTestContext``).
"""

from __future__ import annotations

import pytest
from kafkacite import kafka
from test_raft_client import CONFIG, KRCT, LOCAL, Ctx

from actors.raft.errors import IllegalStateError
from actors.raft.messages import (
    BROKER_NOT_AVAILABLE,
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    Outbound,
    RaftFetchRequest,
    RaftFetchResponse,
)

LEADER, OTHER, EPOCH = 1, 2, 5


def _discover(ctx: Ctx, error: str = NONE) -> None:
    """``discoverLeaderAsObserver``: the first Fetch goes to a voter, in epoch 0 from offset
    0; its answer names leader 1 in epoch 5."""
    ctx.poll()
    request = ctx.take_one(RaftFetchRequest)
    assert request.destination in ctx.voters
    assert request.message == RaftFetchRequest(ctx.client.quorum.local_id_or_sentinel(), 0,
                                               0, 0, 0)
    ctx.deliver_response(request, RaftFetchResponse(error, EPOCH, LEADER, 0, 0))
    ctx.assert_elected_leader(EPOCH, LEADER)


def _one_fetch(ctx: Ctx) -> Outbound:
    ctx.poll()
    return ctx.take_one(RaftFetchRequest)


@kafka("3.7.0", KRCT, "testObserverQuorumDiscoveryFailure")
def test_an_observer_asks_a_voter_again_after_an_answer_from_no_epoch() -> None:
    """Lone voter 1: an answer with an unknown error and no epoch teaches nothing; after
    the retry backoff the observer asks again (epoch 0, offset 0) and the answer naming
    leader 1 in epoch 5 makes it 1's follower."""
    ctx = Ctx({LEADER})
    first = _one_fetch(ctx)
    assert first.destination == LEADER
    ctx.deliver_response(first, RaftFetchResponse("UNKNOWN_SERVER_ERROR", -1, -1, -1, 0))
    assert ctx.client.leader_and_epoch() == (None, 0)
    ctx.sleep(CONFIG.retry_backoff_ms)
    again = _one_fetch(ctx)
    assert again.destination == LEADER
    assert again.message == RaftFetchRequest(LOCAL, 0, 0, 0, 0)
    ctx.deliver_response(again, RaftFetchResponse(FENCED_LEADER_EPOCH, EPOCH, LEADER, 0, 0))
    ctx.assert_elected_leader(EPOCH, LEADER)
    assert not ctx.client.quorum.is_voter()


@kafka("3.7.0", KRCT, "testObserverSendDiscoveryFetchAfterFetchTimeout")
def test_an_observer_whose_fetch_timer_expired_asks_any_voter_in_its_epoch() -> None:
    """Follower of 1 in epoch 5: once ``quorum.fetch.timeout.ms`` passes without a
    successful answer, the next Fetch goes to any voter (the leader may have moved),
    still in epoch 5 from offset 0."""
    ctx = Ctx({LEADER, OTHER})
    _discover(ctx, FENCED_LEADER_EPOCH)
    to_leader = _one_fetch(ctx)
    assert to_leader.destination == LEADER
    ctx.sleep(CONFIG.fetch_timeout_ms)
    rediscovery = _one_fetch(ctx)
    assert rediscovery.destination in (LEADER, OTHER)
    assert rediscovery.message == RaftFetchRequest(LOCAL, EPOCH, 0, 0, 0)
    assert ctx.client.quorum.follower_state().has_fetch_timeout_expired(ctx.now)


@kafka("3.7.0", KRCT, "testObserverLeaderRediscoveryAfterBrokerNotAvailableError")
def test_an_observer_asks_the_other_voter_while_the_leaders_connection_backs_off() -> None:
    """BROKER_NOT_AVAILABLE from leader 1 backs its connection off; the next Fetch goes to
    voter 2, whose NOT_LEADER_OR_FOLLOWER answer names 1 again: the observer stays its
    follower in epoch 5."""
    ctx = Ctx({LEADER, OTHER})
    _discover(ctx)
    first = _one_fetch(ctx)
    assert first.destination == LEADER
    assert first.message == RaftFetchRequest(LOCAL, EPOCH, 0, 0, 0)
    ctx.deliver_response(first, RaftFetchResponse(BROKER_NOT_AVAILABLE, EPOCH, -1, -1, 0))
    second = _one_fetch(ctx)
    assert second.destination == OTHER
    assert second.message == RaftFetchRequest(LOCAL, EPOCH, 0, 0, 0)
    ctx.deliver_response(second, RaftFetchResponse(NOT_LEADER_OR_FOLLOWER, EPOCH, LEADER, 0,
                                                   0))
    ctx.assert_elected_leader(EPOCH, LEADER)


@kafka("3.7.0", KRCT, "testObserverLeaderRediscoveryAfterRequestTimeout")
def test_an_observer_whose_fetch_to_the_leader_timed_out_asks_another_voter() -> None:
    """Leader 1 leaves the Fetch unanswered for ``quorum.request.timeout.ms``: the observer
    sends the next one to a voter found by ``findReadyVoter`` (here, with its random start
    pinned, voter 2, the last ready one of the walk), and its answer names the leader."""
    ctx = Ctx({LEADER, OTHER})
    _discover(ctx)
    first = _one_fetch(ctx)
    assert first.destination == LEADER
    ctx.sleep(CONFIG.request_timeout_ms)
    ctx.random.mock_next_int(0)
    second = _one_fetch(ctx)
    assert second.destination == OTHER
    assert second.message == RaftFetchRequest(LOCAL, EPOCH, 0, 0, 0)
    ctx.deliver_response(second, RaftFetchResponse(FENCED_LEADER_EPOCH, EPOCH, LEADER, 0, 0))
    ctx.assert_elected_leader(EPOCH, LEADER)
    # the late answer of the timed-out request is ignored
    ctx.deliver_response(first, RaftFetchResponse(NONE, EPOCH, LEADER, 0, 0,
                                                  records=((0, 3, "late"),)))
    assert ctx.log.end_offset == 0


@kafka("3.7.0", KRCT, "testObserverFetchWithNoLocalId")
def test_an_observer_without_a_node_id_fetches_and_appends_from_the_leader() -> None:
    """No node id (tooling): the Fetch carries replica id -1; the discovered leader's
    records are appended (LEO 3, last fetched epoch 3)."""
    ctx = Ctx({LEADER, OTHER}, local=None)
    _discover(ctx, FENCED_LEADER_EPOCH)
    fetch = _one_fetch(ctx)
    assert fetch.destination == LEADER
    assert fetch.message == RaftFetchRequest(-1, EPOCH, 0, 0, 0)
    ctx.deliver_response(fetch, RaftFetchResponse(
        NONE, EPOCH, LEADER, 0, 0, records=((0, 3, "a"), (1, 3, "b"), (2, 3, "c"))))
    assert (ctx.log.end_offset, ctx.log.last_fetched_epoch) == (3, 3)


@kafka("3.7.0", KRCT, "testCannotResignIfObserver")
def test_an_observer_cannot_resign() -> None:
    """An observer that found leader 1 in epoch 5 may not resign that epoch."""
    ctx = Ctx({LEADER, OTHER}, local=None)
    _discover(ctx, FENCED_LEADER_EPOCH)
    with pytest.raises(IllegalStateError):
        ctx.client.resign(EPOCH)

