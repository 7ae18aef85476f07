"""The Raft shell around ``actors.raft.client.KafkaRaftClient`` (``actors.quorum_controller``:
a controller voter and a broker's observer), held against Kafka 3.7.0: the transport's
request timeout (``KafkaNetworkChannel`` over a ``NetworkClient``), and the leader's append
answering the fetches parked on it at once (``KafkaRaftClient.appendBatch`` ->
``fetchPurgatory.maybeComplete``), both found by the safe campaigns of issue 52; and the
active controller's periodic ``NoOpRecord`` (``QuorumController``, KIP-835)."""

from __future__ import annotations

import random
from typing import Any

from kafkacite import kafka

from actors.controller import Controller, ControllerStore, PartitionRecord
from actors.core import Disconnect, Emit, Send, Timer
from actors.eras import rules_for
from actors.messages import BrokerRegistration
from actors.quorum_controller import (
    METADATA_MAX_IDLE_INTERVAL_MS,
    ControllerDisk,
    MetadataObserver,
    QuorumController,
    QuorumView,
    RaftTick,
    _WriteNoOp,
)
from actors.raft.config import raft_rules_for


@kafka("3.7.0", "KafkaNetworkChannelTest", "testSendAndDisconnect")
@kafka("3.7.0", "KafkaRaftClientTest", "testObserverLeaderRediscoveryAfterRequestTimeout")
def test_a_raft_request_unanswered_for_the_request_timeout_fails_and_closes_the_connection(
        ) -> None:
    """3.7.0 ``KafkaNetworkChannel`` sends through a ``NetworkClient`` with
    ``quorum.request.timeout.ms``: a request it times out closes the connection and
    completes with ``BROKER_NOT_AVAILABLE``, which the client handles as a failed request
    (that voter backs off; ``RequestManager.findReadyVoter`` asks another). Without the
    transport's timeout, a fetch whose frames a crash discarded while a cut held them was
    never failed: an observer that had asked that voter polled with no deadline and
    stopped following the quorum (a campaign's seed 72: three partitions never
    converged)."""
    obs = MetadataObserver("broker-1", 1, (3000, 3001, 3002), ControllerStore(),
                           random.Random(1), raft_rules_for("3.7"))
    obs.start()
    effects = [(0, e) for e in obs.drain()]
    first = next(e for _, e in effects if type(e) is Send)
    while obs.now_us < 2_000_000:   # deliver the observer's live timer, as the runtime does
        obs.now_us = max(t + e.delay_us for t, e in effects
                         if type(e) is Timer and e.msg.token == obs._tick_token)  # noqa: SLF001
        obs.handle(RaftTick(obs._tick_token), ("broker-1", "raft"))  # noqa: SLF001
        effects += [(obs.now_us, e) for e in obs.drain()]
    failed = [(t, e.fields["peer"]) for t, e in effects
              if type(e) is Emit and e.event == "request_failed"]
    assert failed[0] == (2_000_000, first.dst[0])   # quorum.request.timeout.ms after it
    assert (2_000_000, Disconnect(first.dst[0])) in effects


def _active_single_voter(era: str = "3.7") -> tuple[QuorumController, list[Any]]:
    """A one-voter quorum that elected itself and claimed the active role (its LeaderChange
    committed), and the effects it queued meanwhile."""
    base = ControllerStore()
    base.partitions[("orders", 0)] = PartitionRecord("orders", 0, (1,), 1, False)
    c = QuorumController(
        "controller-3000", 3000, (3000,), ControllerDisk(), base, QuorumView(base),
        lambda st: Controller(st, rules_for(era), brokers=(1,), session_timeout_ms=9000),
        random.Random(1), raft_rules_for(era))
    c.start()
    effects: list[Any] = []
    for _ in range(5):   # a one-voter quorum elects itself, commits its LeaderChange
        out = c.drain()
        effects += out
        deadline = [e for e in out if type(e) is Timer and type(e.msg) is RaftTick]
        if c.active:
            break
        c.now_us += deadline[-1].delay_us
        c.handle(deadline[-1].msg, c.address)
    assert c.active
    return c, effects


@kafka("3.7.0", "QuorumControllerTest", "testNoOpRecordWriteAfterTimeout")
@kafka("4.1.0", "QuorumControllerTest", "testNoOpRecordWriteAfterTimeout")
def test_the_active_controller_writes_a_no_op_record_every_max_idle_interval() -> None:
    """3.7.0 and 4.1.0 ``QuorumController.maybeScheduleNextWriteNoOpRecord`` (KIP-835): once
    active, the controller appends a ``NoOpRecord`` ``metadata.max.idle.interval.ms`` (500
    ms) later, and schedules the next one each time it writes one; the high watermark moves
    with it though no metadata changed. ``renounce`` cancels the schedule
    (``cancelNextWriteNoOpRecord``). Without it, a quiet quorum's parked fetches waited for
    their ``maxWaitMs`` and its brokers learnt a committed change up to ~1 s late."""
    for era in ("3.7", "4.1"):
        c, effects = _active_single_voter(era)
        client = c.client
        assert client is not None
        (first,) = [e for e in effects if type(e) is Timer and type(e.msg) is _WriteNoOp]
        assert first.delay_us == METADATA_MAX_IDLE_INTERVAL_MS * 1000
        image = dict(c.image.partitions)
        pending = first
        for n in range(1, 3):
            end, hw = client.log.end_offset, client.log.high_watermark
            c.now_us += pending.delay_us
            c.handle(pending.msg, c.address)
            out = c.drain()
            assert client.log.end_offset == end + 1
            assert client.log.entries[-1][2] == ("NoOpRecord",)
            assert client.log.high_watermark > hw          # one voter: committed at once
            assert c.image.partitions == image             # it changes no metadata
            (pending,) = [e for e in out if type(e) is Timer and type(e.msg) is _WriteNoOp]
            assert pending.delay_us == METADATA_MAX_IDLE_INTERVAL_MS * 1000, n
        c._renounce()   # noqa: SLF001 - what losing the leadership runs
        end = client.log.end_offset
        c.handle(pending.msg, c.address)                   # scheduled before: stale now
        assert client.log.end_offset == end and not [
            e for e in c.drain() if type(e) is Timer and type(e.msg) is _WriteNoOp]


@kafka("3.7.0", "KafkaRaftClientTest", "testPurgatoryFetchSatisfiedByWrite")
def test_a_controller_request_that_writes_records_answers_the_parked_fetches_at_once() -> None:
    """3.7.0 ``KafkaRaftClient.appendBatch`` completes the fetches parked on the leader
    (``fetchPurgatory.maybeComplete``) and its I/O thread sends the answers at once: an
    observer parked at the log end gets the new records with the request that wrote them,
    not at its fetch's ``maxWaitMs``."""
    from actors.quorum_messages import envelope, unwrap
    from actors.raft.messages import RaftFetchRequest, RaftFetchResponse

    c, _ = _active_single_voter()
    end = c.client.log.end_offset  # type: ignore[union-attr]
    fetch = RaftFetchRequest(1, c.client.quorum.epoch, end,  # type: ignore[union-attr]
                             c.client.log.last_fetched_epoch, 500)  # type: ignore[union-attr]
    c.handle(envelope(7, False, fetch), ("broker-1", "raft"))
    assert not [e for e in c.drain() if type(e) is Send]   # parked: nothing new to give
    c.handle(BrokerRegistration(1, 1, True), ("broker-1", "broker"))
    answers = [unwrap(e.msg) for e in c.drain()
               if type(e) is Send and e.dst == ("broker-1", "raft")]
    assert [type(a) for a in answers] == [RaftFetchResponse]
    assert any(r[2][0] == "RegisterBrokerRecord" for r in answers[0].records)
