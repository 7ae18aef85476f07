"""The quorum's high watermark travels with Fetch in 4.1 (KAFKA-14145, KIP-1166), held
against Kafka 4.1.0's ``KafkaRaftClientFetchTest``.

From 4.1.0 a Fetch carries the high watermark its sender knows (FetchRequest v18,
``buildFetchRequest``), and the leader (``KafkaRaftClient.handleFetchRequest``) answers at
once when its own is higher (``isHighWatermarkUpdated``) and, whenever its high watermark
moves, answers every parked Fetch (``onUpdateLeaderHighWatermark`` →
``fetchPurgatory.completeAll``). A 3.7 node sends no high watermark (the field's default,
``Long.MAX_VALUE``) and answers a parked Fetch only when records arrive or after
``maxWaitMs``: its brokers learn a committed metadata change up to 500 ms later.

Each test builds the leader as Kafka's does: six records of epoch 2 in the log, voters
{0, 1}, local 0 elected in epoch 3 (its LeaderChange record is offset 6, the LEO 7); the
remote fetcher 2 is an observer (a broker).
"""

from __future__ import annotations

import pytest
from kafkacite import kafka
from test_raft_client import LOCAL, Ctx, as_leader

from actors.raft.election import ElectionState
from actors.raft.messages import (
    HWM_NOT_SENT,
    NONE,
    RaftFetchRequest,
    RaftFetchResponse,
)

KRCFT = "KafkaRaftClientFetchTest"
LOG = ((2, ("a", "b", "c")), (2, ("d", "e", "f")))
VOTER, REMOTE = 1, 2
EPOCH = 3            # the leader's epoch after unattachedToLeader from epoch 2
LEO = 7              # six records and the LeaderChange
WAIT_MS = 2**31 - 1  # Integer.MAX_VALUE: the test's fetches would wait for ever


def leader(era: str = "4.1") -> Ctx:
    return as_leader({LOCAL, VOTER}, EPOCH, log=LOG, era=era)


def fetch(replica: int, offset: int, hw: int = HWM_NOT_SENT, wait_ms: int = WAIT_MS
          ) -> RaftFetchRequest:
    return RaftFetchRequest(replica, EPOCH, offset, EPOCH if offset == LEO else 2, wait_ms,
                            high_watermark=hw)


def advance_high_watermark_to_log_end(ctx: Ctx) -> None:
    """``advanceLocalLeaderHighWatermarkToLogEndOffset``: the voter fetches at the LEO."""
    ctx.deliver_request(VOTER, fetch(VOTER, LEO, wait_ms=0))
    ctx.poll()
    assert ctx.client.high_watermark == LEO
    assert ctx.fetch_response().high_watermark == LEO


def deferred(ctx: Ctx) -> bool:
    for _ in range(10):
        ctx.poll()
        if ctx.take(RaftFetchResponse):
            return False
    return True


@pytest.mark.parametrize("era, first, second", [("4.1", -1, 6),
                                                ("3.7", HWM_NOT_SENT, HWM_NOT_SENT)])
@kafka("4.1.0", KRCFT, "testHighWatermarkSentInFetchRequest")
def test_a_fetch_carries_the_high_watermark_its_sender_knows(era: str, first: int,
                                                             second: int) -> None:
    """A follower of leader 1 in epoch 2 with six records fetches with no known high watermark
    (-1); once an answer gives it 6, its next Fetch says 6. A 3.7 follower sends the field's
    default, Long.MAX_VALUE ("not supported")."""
    voters = {LOCAL, VOTER}
    ctx = Ctx(voters, election=ElectionState.with_elected_leader(2, VOTER, frozenset(voters)),
              log=LOG, era=era)
    ctx.poll()
    sent = ctx.take_one(RaftFetchRequest)
    assert isinstance(sent.message, RaftFetchRequest)
    assert (sent.message.fetch_offset, sent.message.last_fetched_epoch,
            sent.message.high_watermark) == (6, 2, first)
    ctx.deliver_response(sent, RaftFetchResponse(NONE, 2, VOTER, 6, 0))
    ctx.sleep(1)
    ctx.poll()
    again = ctx.take_one(RaftFetchRequest)
    assert isinstance(again.message, RaftFetchRequest)
    assert (again.message.fetch_offset, again.message.high_watermark) == (6, second)


@kafka("4.1.0", KRCFT, "testDefaultHwmDeferred")
def test_a_fetch_without_the_field_waits_though_the_leader_knows_a_high_watermark() -> None:
    """A Fetch at the LEO without the field (Long.MAX_VALUE, a fetcher that does not send
    it) is parked although the leader's high watermark is at its LEO."""
    ctx = leader()
    advance_high_watermark_to_log_end(ctx)
    ctx.deliver_request(REMOTE, fetch(REMOTE, LEO))
    assert deferred(ctx)


@kafka("4.1.0", KRCFT, "testUnknownHwmDeferredWhenLeaderDoesNotKnowHwm")
def test_an_unknown_high_watermark_waits_while_the_leader_knows_none_either() -> None:
    """A Fetch at the LEO saying -1 (no high watermark known) is parked while the leader has
    none either: -1 is not behind -1."""
    ctx = leader()
    assert ctx.client.high_watermark is None
    ctx.deliver_request(REMOTE, fetch(REMOTE, LEO, hw=-1))
    assert deferred(ctx)


@kafka("4.1.0", KRCFT, "testOutdatedHwmCompletedWhenLeaderKnowsHwm")
def test_a_fetch_behind_the_leaders_high_watermark_is_answered_at_once() -> None:
    """At the LEO, with nothing to read: answered at once with the high watermark when the
    fetcher knows none (-1) or an older one (LEO - 1)."""
    ctx = leader()
    advance_high_watermark_to_log_end(ctx)
    for known in (-1, LEO - 1):
        ctx.deliver_request(REMOTE, fetch(REMOTE, LEO, hw=known))
        response = ctx.fetch_response()
        assert (response.error, response.leader_epoch, response.high_watermark,
                response.records) == (NONE, EPOCH, LEO, ())


@kafka("4.1.0", KRCFT, "testUnchangedHighWatermarkDeferred")
def test_a_fetch_that_knows_the_leaders_high_watermark_waits() -> None:
    """A Fetch at the LEO that already knows the leader's high watermark (the LEO) is
    parked: nothing to read and nothing new to learn."""
    ctx = leader()
    advance_high_watermark_to_log_end(ctx)
    ctx.deliver_request(REMOTE, fetch(REMOTE, LEO, hw=LEO))
    assert deferred(ctx)


@pytest.mark.parametrize("era", ["4.1", "3.7"])
@kafka("4.1.0", KRCFT, "testUpdatedHighWatermarkCompleted")
def test_a_moving_high_watermark_answers_every_parked_fetch(era: str) -> None:
    """The voter at offset 3 commits nothing (the leader's epoch starts at 6); the observer's
    Fetch at the LEO parks. The voter's Fetch at the LEO moves the high watermark to 7: in
    4.1 both Fetches are answered with it; in 3.7 only the voter's, and the observer's waits
    (for records, or its maxWaitMs)."""
    ctx = leader(era)
    ctx.deliver_request(VOTER, fetch(VOTER, 3, wait_ms=0))
    assert ctx.fetch_response().error == NONE
    assert ctx.client.high_watermark is None
    ctx.deliver_request(REMOTE, fetch(REMOTE, LEO, hw=LEO if era == "4.1" else HWM_NOT_SENT))
    assert deferred(ctx)
    ctx.deliver_request(VOTER, fetch(VOTER, LEO, wait_ms=0))
    ctx.poll()
    answered = ctx.take(RaftFetchResponse)
    assert ctx.client.high_watermark == LEO
    assert sorted(o.destination for o in answered) == (
        [VOTER, REMOTE] if era == "4.1" else [VOTER])
    for out in answered:
        assert isinstance(out.message, RaftFetchResponse)
        assert (out.message.error, out.message.leader_epoch,
                out.message.high_watermark) == (NONE, EPOCH, LEO)
