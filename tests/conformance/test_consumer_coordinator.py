"""A member's rebalance: ``onJoinPrepare`` commits and waits, held against Kafka's
``ConsumerCoordinatorTest`` at 3.7.0.

``ConsumerCoordinator.onJoinPrepare`` (3.7.0) commits every consumed position
(``maybeAutoCommitOffsetsAsync``) and returns — lets the member send its JoinGroup — only
once that commit is done (answered, failed, or past the rebalance timeout). The coordinator
answers one connection's commits in order, so the join also comes after an auto-commit that
was already in flight. isrlab sends no commit for a position it has already sent, and waits
for that commit's answer instead: the same wait, one request fewer. The member is
``tests/test_consumer_timeouts.py``'s: a consumer machine whose timers are delivered as the
scheduler delivers them.
"""

from __future__ import annotations

from kafkacite import kafka

from actors.coordinator import GROUP_COORDINATOR
from actors.messages import (
    NONE,
    REBALANCE_IN_PROGRESS,
    GroupAssignment,
    JoinGroup,
    OffsetCommit,
    OffsetCommitResponse,
)
from tests.test_consumer_timeouts import AUTO_COMMIT_MS, MS, Member, _answer_fetch, _fetching

COORDINATOR = ("broker-2", GROUP_COORDINATOR)


def _reading() -> Member:
    """A member of generation 1 reading orders-0 (coordinator broker-2): record 5 read."""
    m, (req,) = _fetching({0: 1}, coordinator=2)
    _answer_fetch(m, req, ((5, "a"),))
    return m


def _rebalance(m: Member) -> int:
    """The coordinator says a rebalance is under way; the time it did."""
    t0 = m.now_us
    m.handle(GroupAssignment("g0", "g0-0", 1, (0,), REBALANCE_IN_PROGRESS, 0), COORDINATOR)
    return t0


def _answer(m: Member, commit: OffsetCommit) -> None:
    m.handle(OffsetCommitResponse("g0", "orders", commit.partition, NONE, commit.correlation),
             COORDINATOR)


@kafka("3.7.0", "ConsumerCoordinatorTest", "testJoinPrepareAndCommitCompleted")
def test_the_rejoin_waits_for_the_commit_of_the_consumed_positions() -> None:
    """The rebalance finds position 6 uncommitted: the member commits it and sends no
    JoinGroup until the commit is answered; then it joins."""
    m = _reading()
    m.run_until(m.now_us + 100 * MS)
    t0 = _rebalance(m)
    (commit,) = m.sent(OffsetCommit, t0)
    assert commit.msg.offset == 6
    m.run_until(m.now_us + 1000 * MS)
    assert not m.sent(JoinGroup, t0)
    _answer(m, commit.msg)
    assert m.sent(JoinGroup, t0)


@kafka("3.7.0", "ConsumerCoordinatorTest", "testJoinPrepareAndCommitCompleted")
def test_the_rejoin_waits_for_an_auto_commit_already_in_flight() -> None:
    """The periodic auto-commit of position 6 is in flight when the rebalance begins: there
    is nothing new to commit, and the member still sends no JoinGroup until that commit is
    answered (Kafka's second commit would be answered after it), so the partition's next
    owner reads the offset the member committed."""
    m = _reading()
    m.run_until(AUTO_COMMIT_MS * MS + 100 * MS)
    (commit,) = m.sent(OffsetCommit)
    assert commit.msg.offset == 6
    t0 = _rebalance(m)
    assert not m.sent(OffsetCommit, t0)
    m.run_until(m.now_us + 1000 * MS)
    assert not m.sent(JoinGroup, t0)
    _answer(m, commit.msg)
    assert m.sent(JoinGroup, t0)
