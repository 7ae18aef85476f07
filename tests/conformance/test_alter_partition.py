"""A leader's pending ISR change when AlterPartition fails, per era, held against Kafka's
``PartitionTest`` (issue 17, divergence 2).

The shape of Kafka's ``handleAlterIsrFailure``: a leader of epoch 5 over ten records of epoch
4, replicas (1, 2), ISR (1); broker 2 fetches up to the LEO, the leader proposes ISR (1, 2)
(the maximal ISR holds 2 at once, KIP-497), then the controller's answer is an error.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import batches, lead, replica, sent
from kafkacite import kafka

from actors.core import Emit, Timer
from actors.messages import (
    AlterPartition,
    AlterPartitionResponse,
    BrokerStates,
    Fetch,
    Tick,
)
from actors.replica import Replica


def _expanding_leader(era: str) -> Replica:
    r = replica(1, batches((4, 10)), era=era)
    lead(r, 5, replicas=(1, 2), isr=(1,))
    assert r.hw == 10
    r.handle(BrokerStates(1, ((1, 7, False), (2, 8, False))), ("controller", "controller"))
    r.drain()
    r.handle(Fetch("t", 0, 2, 8, 10, 4, 5, 0, 1000, 1), ("broker-2", "t-0"))
    (proposal,) = sent(r.drain(), AlterPartition)
    assert [b for b, _ in proposal.new_isr] == [1, 2]
    assert r.isr == (1,) and r.maximal_isr == (1, 2)
    return r


def _fail(r: Replica, error: str) -> list[Any]:
    r.handle(AlterPartitionResponse("t", 0, error, (1,), 5, 1), ("controller", "controller"))
    return r.drain()


def _retried(r: Replica, effects: list[Any]) -> bool:
    """Is the change sent again: at once, or by the retry timer the failure set?"""
    if sent(effects, AlterPartition):
        return True
    for e in effects:
        if isinstance(e, Timer) and isinstance(e.msg, Tick) \
                and e.msg.kind == "alter_partition_timeout":
            r.handle(e.msg, r.address)
            if sent(r.drain(), AlterPartition):
                return True
    return False


@kafka("3.7.0", "PartitionTest", "testAlterIsrInvalidVersion")
@kafka("2.8.0", "PartitionTest", "testAlterIsrInvalidVersion")
@pytest.mark.parametrize("era", ["2.8", "4.1"])
def test_a_stale_partition_epoch_leaves_the_expansion_pending_and_not_retried(era: str) -> None:
    """2.8 and 3.7+: INVALID_UPDATE_VERSION gives up without reverting: the ISR stays (1),
    the maximal ISR keeps 2 (so the HW waits for it), and nothing is sent again until new
    partition state arrives."""
    r = _expanding_leader(era)
    effects = _fail(r, "INVALID_UPDATE_VERSION")
    assert r.isr == (1,) and r.maximal_isr == (1, 2) and r.pending_isr == (1, 2)
    assert not _retried(r, effects)


@kafka("3.7.0", "PartitionTest", "testAlterIsrUnknownTopic")
@kafka("2.8.0", "PartitionTest", "testAlterIsrUnknownTopic")
@pytest.mark.parametrize("era", ["2.8", "4.1"])
def test_an_unknown_partition_at_the_controller_leaves_the_expansion_pending(era: str) -> None:
    """2.8 and 3.7+: UNKNOWN_TOPIC_OR_PARTITION: the same as a stale version — pending, the
    maximal ISR holding 2, no retry."""
    r = _expanding_leader(era)
    effects = _fail(r, "UNKNOWN_TOPIC_OR_PARTITION")
    assert r.isr == (1,) and r.maximal_isr == (1, 2)
    assert not _retried(r, effects)


@kafka("3.7.0", "PartitionTest", "testAlterIsrNewLeaderElected")
def test_new_leader_elected_leaves_the_change_pending_until_metadata_arrives() -> None:
    """3.7+: NEW_LEADER_ELECTED (the change was applied but this broker left the replica
    set): pending, maximal ISR (1, 2), no retry."""
    r = _expanding_leader("4.1")
    effects = _fail(r, "NEW_LEADER_ELECTED")
    assert r.isr == (1,) and r.maximal_isr == (1, 2)
    assert not _retried(r, effects)


@kafka("3.7.0", "PartitionTest", "testInvalidAlterPartitionRequestsAreNotRetried")
def test_an_invalid_request_is_not_retried_and_keeps_the_maximal_isr() -> None:
    """3.7+: INVALID_REQUEST (KRaft's answer to a request from a broker that is not the
    leader; isrlab's controller says NOT_LEADER_OR_FOLLOWER): no ISR change, the maximal
    ISR keeps 2, no retry."""
    for error in ("INVALID_REQUEST", "NOT_LEADER_OR_FOLLOWER"):
        r = _expanding_leader("4.1")
        effects = _fail(r, error)
        assert r.isr == (1,) and r.maximal_isr == (1, 2)
        assert not _retried(r, effects)


@kafka("3.7.0", "PartitionTest", "testAlterIsrUnexpectedError")
@kafka("2.8.0", "PartitionTest", "testAlterIsrUnexpectedError")
@pytest.mark.parametrize("era", ["2.8", "4.1"])
def test_an_unexpected_error_is_retried_with_the_maximal_isr_kept(era: str) -> None:
    """2.8 and 3.7+: an unexpected error (UNKNOWN_SERVER_ERROR) is retried: the same
    proposal goes to the controller again, the ISR still (1) and the maximal ISR (1, 2)."""
    r = _expanding_leader(era)
    effects = _fail(r, "UNKNOWN_SERVER_ERROR")
    assert r.isr == (1,) and r.maximal_isr == (1, 2)
    assert _retried(r, effects)


@kafka("3.7.0", "PartitionTest", "testIsrNotExpandedIfReplicaIsFencedOrShutdown")
def test_an_ineligible_replica_answer_reverts_to_the_committed_isr() -> None:
    """3.3+: INELIGIBLE_REPLICA says the request was not applied and the partition epoch is
    right: the leader reverts to the committed ISR (maximal ISR (1)), nothing in flight;
    once it knows broker 2 is fenced, a fetch triggers no expansion; unfenced, it does."""
    r = _expanding_leader("4.1")
    effects = _fail(r, "INELIGIBLE_REPLICA")
    assert r.isr == r.maximal_isr == (1,) and r.pending_isr is None
    assert not _retried(r, effects)
    r.handle(BrokerStates(1, ((1, 7, False), (2, 8, True))), ("controller", "controller"))
    r.drain()
    r.handle(Fetch("t", 0, 2, 8, 10, 4, 5, 0, 1000, 2), ("broker-2", "t-0"))
    assert not sent(r.drain(), AlterPartition) and r.maximal_isr == (1,)
    r.handle(BrokerStates(1, ((1, 7, False), (2, 8, False))), ("controller", "controller"))
    r.drain()
    r.handle(Fetch("t", 0, 2, 8, 10, 4, 5, 0, 1000, 3), ("broker-2", "t-0"))
    assert sent(r.drain(), AlterPartition) and r.maximal_isr == (1, 2)


@kafka("3.7.0", "PartitionTest", "testIsrNotShrunkIfUpdateFails")
def test_a_failed_shrink_stays_pending_and_the_isr_keeps_the_lagging_replica() -> None:
    """3.7+: the leader proposes to drop broker 2 (no fetch for longer than
    replica.lag.time.max.ms); INVALID_UPDATE_VERSION leaves the shrink pending: the ISR
    still holds 2, nothing is sent again, and the HW has not moved (0: 2 never fetched)."""
    r = replica(1, batches((4, 10)), era="4.1")
    lead(r, 5, replicas=(1, 2), isr=(1, 2))
    r.now_us = 30_001 * 1000
    r.handle(Tick("isr_expiration", 0, 0), r.address)
    (proposal,) = sent(r.drain(), AlterPartition)
    assert [b for b, _ in proposal.new_isr] == [1]
    effects = _fail(r, "INVALID_UPDATE_VERSION")
    assert r.isr == (1, 2) and r.pending_isr == (1,)
    assert not _retried(r, effects)
    assert r.hw == 0


@kafka("3.7.0", "NodeToControllerRequestThreadTest", "testControllerChanged")
@pytest.mark.parametrize("controller", ["controller", "controller-3001"])
def test_a_reset_of_the_controller_connection_sends_the_pending_change_again_soon(
        controller: str) -> None:
    """3.7.0 ``NodeToControllerRequestThread``: a request whose controller connection breaks
    is queued again and sent to the controller the broker then knows (Kafka's test: the
    old controller made unreachable, the request completes through the new one); isrlab's
    replica sends it again after a short backoff (``ALTER_PARTITION_RETRY_MS``). The reset
    names the controller node the broker's frames reached: ``controller``, or with a
    controller quorum the active voter ``controller-300N`` (before, only the first failed
    the request early; the second waited for the request's timeout)."""
    r = _expanding_leader("4.1")
    r.connection_reset(controller)
    effects = r.drain()
    assert [e.fields["request"] for e in effects
            if type(e) is Emit and e.event == "request_failed"] == ["AlterPartition"]
    assert _retried(r, effects)
    r2 = _expanding_leader("4.1")
    r2.connection_reset("broker-3")   # another peer: the change is not affected
    assert not [e for e in r2.drain() if type(e) is Emit and e.event == "request_failed"]
