"""Every request a consumer sends fails at its timeout when its answer never comes.

Kafka's ``NetworkClient`` keeps each request in ``InFlightRequests`` until its answer; one
still unanswered after ``request.timeout.ms`` (a fetch: plus ``fetch.max.wait.ms``, the time
the leader may park it) makes ``handleTimedOutRequests`` close the connection to that node
(``processTimeoutDisconnection``), and every other request in flight to the node then fails
as disconnected. ``ConsumerNetworkClient`` hands those failures to ``Fetcher`` and
``AbstractCoordinator``, which try again. Under isrlab's TCP network an answer can be held
by a stalled connection for as long as the stall lasts; a request must never stay pending
past its timeout, whatever the group did meanwhile (a rebalance, a new generation).

The member is driven as the runtime drives it: messages through ``handle``, its timers
delivered at their due time unless cancelled, its effects read with ``drain``. The tests
state deadlines from the time a request was sent, not from the member's timers.
"""

from __future__ import annotations

import heapq
from typing import Any

import orjson

from actors.consumer import Consumer, ConsumerConfig
from actors.coordinator import GROUP_COORDINATOR, OFFSETS_TOPIC, partition_for
from actors.core import CancelTimer, Disconnect, Emit, Send, Timer
from actors.fetcher import REPLICA_MANAGER
from actors.messages import (
    NONE,
    REBALANCE_IN_PROGRESS,
    FetchResponse,
    GroupAssignment,
    GroupHeartbeat,
    GroupHeartbeatResponse,
    JoinGroup,
    ListOffsets,
    ListOffsetsResponse,
    MetadataRequest,
    MetadataResponse,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    ReplicaFetch,
    ReplicaFetchResponse,
    Tick,
)
from actors.wire import fields
from tests.helpers import run_to_bytes
from traces.checker import check_events

G0 = partition_for("g0", 50)
ME = ("consumer-g0-0", "consumer")
MS = 1000
REQUEST_TIMEOUT_MS = 30_000
FETCH_MAX_WAIT_MS = 500
HEARTBEAT_MS = 3000
SESSION_TIMEOUT_MS = 45_000
#: AbstractCoordinator: max(request.timeout.ms, rebalance timeout + 5 s); isrlab's
#: coordinator holds a join at most the session timeout, its rebalance timeout
JOIN_TIMEOUT_MS = max(REQUEST_TIMEOUT_MS, SESSION_TIMEOUT_MS + 5000)
AUTO_COMMIT_MS = 5000


class Member:
    """A consumer machine and its timers, run as the scheduler runs it: a timer is
    delivered at its due time unless cancelled first (``deliver_cancelled``: delivered
    regardless, as a timer already on its way would be). ``log`` holds every other effect
    with the time it was made. With ``answer_heartbeats`` the coordinator answers each
    heartbeat at once, so that only the request a test starves goes unanswered."""

    def __init__(self, cfg: ConsumerConfig, *, answer_heartbeats: bool = True,
                 deliver_cancelled: bool = False) -> None:
        self.c = Consumer(ME[0], cfg, brokers=(1, 2, 3))
        self.answer_heartbeats = answer_heartbeats
        self.deliver_cancelled = deliver_cancelled
        self.timers: list[tuple[int, int, Any, int]] = []   # (due, seq, msg, handle)
        self._seq = 0
        self.cancelled: set[int] = set()
        self.log: list[tuple[int, Any]] = []
        #: the fetch requests answered (by correlation)
        self.answered: set[int] = set()
        self.c.start()
        self.collect()

    @property
    def now_us(self) -> int:
        return self.c.now_us

    def collect(self) -> list[Any]:
        out = []
        for e in self.c.drain():
            if isinstance(e, Timer):
                self._seq += 1
                heapq.heappush(self.timers, (self.c.now_us + e.delay_us, self._seq, e.msg,
                                             e.handle))
            elif isinstance(e, CancelTimer):
                self.cancelled.add(e.handle)
            else:
                out.append(e)
                self.log.append((self.c.now_us, e))
        if self.answer_heartbeats:
            for e in list(out):
                if isinstance(e, Send) and isinstance(e.msg, GroupHeartbeat):
                    self.c.handle(GroupHeartbeatResponse("g0", "g0-0", NONE,
                                                         e.msg.generation), e.dst)
                    out += self.collect()
        return out

    def handle(self, msg: Any, src: tuple[str, str]) -> list[Any]:
        self.c.handle(msg, src)
        return self.collect()

    def run_until(self, until_us: int) -> list[Any]:
        """Deliver every timer due up to ``until_us``, in order; then the clock is
        ``until_us``. The effects made meanwhile."""
        assert until_us >= self.c.now_us, "time never goes back"
        out: list[Any] = []
        while self.timers and self.timers[0][0] <= until_us:
            at, _, msg, handle = heapq.heappop(self.timers)
            if handle and handle in self.cancelled and not self.deliver_cancelled:
                continue
            self.c.now_us = at
            out += self.handle(msg, ME)
        self.c.now_us = until_us
        return out

    def answer_metadata(self, leaders: dict[int, int], coordinator: int) -> None:
        """Answer the last metadata request: ``orders`` partition -> leader broker, and
        the coordinator (the leader of g0's ``__consumer_offsets`` partition)."""
        ask = self.sent(MetadataRequest)[-1].msg
        parts = tuple(("orders", p, b, 0) for p, b in sorted(leaders.items()))
        self.handle(MetadataResponse(parts + ((OFFSETS_TOPIC, G0, coordinator, 0),),
                                     ask.correlation), ("broker-1", "broker"))

    def sent_at(self, kind: type, since_us: int = 0) -> list[tuple[int, Send]]:
        return [(t, e) for t, e in self.log
                if t >= since_us and isinstance(e, Send) and isinstance(e.msg, kind)]

    def sent(self, kind: type, since_us: int = 0) -> list[Send]:
        return [e for _, e in self.sent_at(kind, since_us)]

    def failed(self, since_us: int = 0) -> list[dict[str, Any]]:
        return [e.fields for t, e in self.log
                if t >= since_us and isinstance(e, Emit) and e.event == "request_failed"]

    def disconnects(self, since_us: int = 0) -> list[str]:
        return [e.peer for t, e in self.log if t >= since_us and isinstance(e, Disconnect)]


def _cfg(partitions: int, **kw: Any) -> ConsumerConfig:
    return ConsumerConfig("g0", "orders", partitions, 0, 1,
                          request_timeout_ms=REQUEST_TIMEOUT_MS,
                          fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
                          heartbeat_interval_ms=HEARTBEAT_MS,
                          session_timeout_ms=SESSION_TIMEOUT_MS,
                          auto_commit_interval_ms=AUTO_COMMIT_MS, **kw)


def _joined(m: Member, leaders: dict[int, int], coordinator: int) -> Send:
    """The metadata answered, the member's JoinGroup sent; the JoinGroup."""
    m.answer_metadata(leaders, coordinator)
    m.run_until(500 * MS)                         # the join waited for the coordinator
    (join,) = m.sent(JoinGroup)
    assert join.dst == (f"broker-{coordinator}", GROUP_COORDINATOR)
    return join


def _fetching(leaders: dict[int, int], *, coordinator: int = 3,
              answer_heartbeats: bool = True, deliver_cancelled: bool = False
              ) -> tuple[Member, list[Send]]:
    """A member of g0 in generation 1 (range: eager) holding every partition of
    ``orders`` from committed offset 5, its first fetch requests just sent, unanswered.
    The offsets come one partition at a time: the first one's fetch goes at once, and the
    others led by the same broker wait behind it."""
    m = Member(_cfg(len(leaders)), answer_heartbeats=answer_heartbeats,
               deliver_cancelled=deliver_cancelled)
    join = _joined(m, leaders, coordinator)
    m.handle(GroupAssignment("g0", "g0-0", 1, tuple(sorted(leaders)), NONE,
                             join.msg.correlation), join.dst)
    for ask in m.sent(OffsetFetch):
        m.handle(OffsetFetchResponse("g0", "orders", ask.msg.partition, 5, NONE,
                                     ask.msg.correlation), join.dst)
    fetches = m.sent(ReplicaFetch)
    assert fetches
    return m, fetches


def _fetch_deadline(m: Member, req: Send) -> int:
    (sent_us,) = [t for t, s in m.sent_at(ReplicaFetch) if s is req]
    return sent_us + (FETCH_MAX_WAIT_MS + REQUEST_TIMEOUT_MS) * MS


def _answer_fetch(m: Member, req: Send, records: tuple[tuple[int, str], ...] = ()) -> None:
    """The leader answers ``req``: ``records`` for its first partition, none for others."""
    corr = req.msg.correlation
    m.answered.add(corr)
    recs = tuple((offset, value, 0, 0, -1, -1, None) for offset, value in records)
    parts = tuple(fields(FetchResponse("orders", p[1], NONE, 9, 9, 0,
                                       recs if i == 0 else (), -1, -1, 0, corr))
                  for i, p in enumerate(req.msg.parts))
    m.handle(ReplicaFetchResponse(NONE, parts, corr), (req.dst[0], REPLICA_MANAGER))


def _parts(req: Send) -> list[int]:
    return [p[1] for p in req.msg.parts]


def _serve(m: Member, until_us: int, broker: str, since_us: int = 0) -> set[tuple[int, int]]:
    """Run the member to ``until_us`` in steps of 10 ms while ``broker`` answers, at each
    step, every fetch it got (sent from ``since_us`` on, not answered yet) with no new
    records — as a leader that parks a fetch for a while. The (partition, position) pairs
    fetched."""
    seen: set[tuple[int, int]] = set()
    mark = 0
    t = m.now_us
    while True:
        new = [e for at, e in m.log[mark:]
               if at >= since_us and isinstance(e, Send) and isinstance(e.msg, ReplicaFetch)
               and e.dst[0] == broker and e.msg.correlation not in m.answered]
        mark = len(m.log)
        for f in new:
            seen |= {(p[1], p[4]) for p in f.msg.parts}
            _answer_fetch(m, f)
        if t >= until_us:
            return seen
        t = min(t + 10 * MS, until_us)
        m.run_until(t)


# -- fetches ------------------------------------------------------------------------------------
def test_consumer_fetch_that_is_never_answered_fails_at_its_timeout() -> None:
    """Partition 0's fetch goes to broker-1 at once; partition 1 (also led by broker-1)
    waits behind it, one fetch pending per broker. The fetch is parked or held for ever:
    ``fetch.max.wait.ms`` + ``request.timeout.ms`` after it was sent, and not before, it
    fails (reason timeout) and the connection to broker-1 is closed; after the backoffs both
    partitions are fetched again from their positions."""
    m, (req,) = _fetching({0: 1, 1: 1})
    assert _parts(req) == [0]
    due = _fetch_deadline(m, req)
    m.run_until(due - 1)
    assert not m.failed() and not m.disconnects()
    m.run_until(due)
    assert [(f["partition"], f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-1", "Fetch", "timeout")]
    assert m.disconnects() == ["broker-1"]
    assert _serve(m, due + 2000 * MS, "broker-1", due) == {(0, 5), (1, 5)}


def test_a_fetch_answered_in_time_no_longer_times_out_even_if_its_timer_fires() -> None:
    """The answer ends the request. Its timeout timer is cancelled, and should it reach
    the member all the same (cancelling is only a saving) nothing fails and nothing is
    closed."""
    m, (req,) = _fetching({0: 1}, deliver_cancelled=True)
    due = _fetch_deadline(m, req)
    _answer_fetch(m, req, ((5, "a"),))
    assert m.c.position[0] == 6
    (nxt,) = m.sent(ReplicaFetch)[1:]
    _answer_fetch(m, nxt)   # keeps the follow-up fetches answered until past the deadline
    _serve(m, due + 1, "broker-1")
    assert not m.failed() and not m.disconnects()


def test_a_timed_out_request_closes_its_connection_and_fails_the_others_to_that_broker(
        ) -> None:
    """Partition 0 is read from broker-1, which is also the coordinator; partition 1 from
    broker-2. Broker-1 never answers the fetch; the auto-commit of partition 1 goes to
    broker-1 and is not answered either. At the fetch's timeout the connection to broker-1
    is closed once; the fetch fails as timed out (once: it is not failed again as
    disconnected), the commit in flight on that connection fails as disconnected and is
    forgotten, so the next auto-commit sends the same offset again; the coordinator is
    looked up again. Broker-2's fetches are not touched."""
    m, reqs = _fetching({0: 1, 1: 2}, coordinator=1)
    by_broker = {r.dst[0]: r for r in reqs}
    assert sorted(by_broker) == ["broker-1", "broker-2"]
    _answer_fetch(m, by_broker["broker-2"], ((5, "a"), (6, "b")))
    due = _fetch_deadline(m, by_broker["broker-1"])
    _serve(m, due - 1, "broker-2")
    (commit,) = m.sent(OffsetCommit)
    assert commit.dst == ("broker-1", GROUP_COORDINATOR)
    assert (commit.msg.partition, commit.msg.offset) == (1, 7)
    assert not m.failed()
    m.run_until(due)
    assert [(f.get("partition"), f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-1", "Fetch", "timeout"), (1, "broker-1", "OffsetCommit", "disconnected")]
    assert m.disconnects() == ["broker-1"]
    assert m.c.coordinator is None and m.sent(MetadataRequest, due)
    assert 1 in m.c.outstanding   # broker-2's fetch is still in flight
    # the coordinator found again, the next auto-commit commits partition 1 again
    m.answer_metadata({0: 1, 1: 2}, 1)
    _serve(m, due + AUTO_COMMIT_MS * MS, "broker-2")
    assert [(c.msg.partition, c.msg.offset) for c in m.sent(OffsetCommit, due)] == [(1, 7)]


def test_a_fetch_pending_across_an_eager_rebalance_does_not_wedge_the_new_generation() -> None:
    """The bug of safe-acks-all seed 40058 (5 brokers, every nemesis), on the lossy
    network: a fetch to broker-3 got no answer; before its timeout the group rebalanced
    (eager: every position dropped, the pending fetch no longer tied to any partition). The
    new generation's partitions, led by the same broker, wait behind the pending fetch
    (``nodesWithPendingFetchRequests``) — but when that fetch timed out, nothing sent the
    next one, and the member committed and heartbeated for ever without reading. The fetch
    must fail at its timeout, and the partitions held back behind it must then be fetched."""
    m, (req,) = _fetching({0: 3, 1: 3}, coordinator=1)
    coord = ("broker-1", GROUP_COORDINATOR)
    due = _fetch_deadline(m, req)
    m.run_until(2000 * MS)
    # the coordinator prepares a rebalance: nothing to commit (the positions are the
    # committed offsets), the member rejoins, and generation 2 gives the same partitions
    m.handle(GroupAssignment("g0", "g0-0", 1, (0, 1), REBALANCE_IN_PROGRESS, 0), coord)
    assert m.sent(JoinGroup, 2000 * MS)
    m.handle(GroupAssignment("g0", "g0-0", 2, (0, 1), NONE, 0), coord)
    for ask in m.sent(OffsetFetch, 2000 * MS):
        m.handle(OffsetFetchResponse("g0", "orders", ask.msg.partition, 5, NONE,
                                     ask.msg.correlation), coord)
    assert not m.sent(ReplicaFetch, 2000 * MS)   # one fetch pending per broker, as Kafka
    m.run_until(due - 1)
    assert not m.failed()
    assert _serve(m, due + 2000 * MS, "broker-3", due) == {(0, 5), (1, 5)}, \
        "the new generation never fetches: the member is wedged"
    assert [(f["partition"], f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-3", "Fetch", "timeout")]


def test_a_reset_connection_lets_the_partitions_held_back_behind_its_fetch_go() -> None:
    """The same with a reset instead of a timeout: the fetch pending at broker-3 across a
    rebalance fails as disconnected when broker-3's connection resets, and the new
    generation's partitions are fetched once the reconnect backoff is over."""
    m, (req,) = _fetching({0: 3, 1: 3}, coordinator=1)
    coord = ("broker-1", GROUP_COORDINATOR)
    m.handle(GroupAssignment("g0", "g0-0", 1, (0, 1), REBALANCE_IN_PROGRESS, 0), coord)
    m.handle(GroupAssignment("g0", "g0-0", 2, (0, 1), NONE, 0), coord)
    for ask in m.sent(OffsetFetch)[2:]:
        m.handle(OffsetFetchResponse("g0", "orders", ask.msg.partition, 5, NONE,
                                     ask.msg.correlation), coord)
    t = m.now_us + 100 * MS
    m.run_until(t)
    assert m.sent(ReplicaFetch) == [req]
    m.c.connection_reset("broker-3")
    m.collect()
    assert _serve(m, t + 2000 * MS, "broker-3", t) == {(0, 5), (1, 5)}, \
        "the new generation never fetches: the member is wedged"
    assert [(f["partition"], f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-3", "Fetch", "disconnected")]
    m.run_until(_fetch_deadline(m, req) + 1)   # the old fetch's timer is stale now
    assert len(m.failed()) == 1


# -- offsets ------------------------------------------------------------------------------------
def test_consumer_offset_fetch_that_is_never_answered_fails_at_its_timeout() -> None:
    """OffsetFetch to the coordinator, never answered: ``request.timeout.ms`` after it was
    sent it fails, the connection to the coordinator is closed, the coordinator is looked
    up again, and the committed offset is asked for again."""
    m = Member(_cfg(1))
    join = _joined(m, {0: 1}, 2)
    m.handle(GroupAssignment("g0", "g0-0", 1, (0,), NONE, join.msg.correlation), join.dst)
    ((sent_us, ask),) = m.sent_at(OffsetFetch)
    due = sent_us + REQUEST_TIMEOUT_MS * MS
    m.run_until(due - 1)
    assert not m.failed()
    m.run_until(due)
    assert [(f["partition"], f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-2", "OffsetFetch", "timeout")]
    assert m.disconnects() == ["broker-2"]
    assert m.c.coordinator is None
    m.answer_metadata({0: 1}, 2)
    m.run_until(due + 2000 * MS)
    (again,) = m.sent(OffsetFetch, due)
    assert again.dst == ("broker-2", GROUP_COORDINATOR) and again.msg.partition == 0


def test_consumer_list_offsets_that_is_never_answered_fails_at_its_timeout() -> None:
    """No committed offset: ListOffsets to the leader, never answered. It fails at its
    timeout, the leader's connection is closed, and the offset is looked up again."""
    m = Member(_cfg(1, auto_offset_reset="earliest"))
    join = _joined(m, {0: 1}, 2)
    m.handle(GroupAssignment("g0", "g0-0", 1, (0,), NONE, join.msg.correlation), join.dst)
    (ask,) = m.sent(OffsetFetch)
    m.handle(OffsetFetchResponse("g0", "orders", 0, -1, NONE, ask.msg.correlation), join.dst)
    ((sent_us, lo),) = m.sent_at(ListOffsets)
    assert lo.dst == ("broker-1", "orders-0")
    due = sent_us + REQUEST_TIMEOUT_MS * MS
    m.run_until(due - 1)
    assert not m.failed()
    m.run_until(due)
    assert [(f["partition"], f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-1", "ListOffsets", "timeout")]
    assert m.disconnects() == ["broker-1"]
    m.run_until(due + 2000 * MS)
    again = m.sent(ListOffsets, due)
    assert again and again[0].msg.partition == 0
    m.handle(ListOffsetsResponse("orders", 0, NONE, 0, again[0].msg.correlation),
             ("broker-1", "orders-0"))
    assert m.sent(ReplicaFetch)


# -- group membership ---------------------------------------------------------------------------
def test_consumer_join_group_that_is_never_answered_fails_at_its_timeout() -> None:
    """A JoinGroup the coordinator never answers fails at its timeout — longer than
    ``request.timeout.ms``: the coordinator may hold a join for the whole rebalance, and
    Kafka gives it that plus 5 s — the connection to the coordinator is closed, and the
    member joins again."""
    m = Member(_cfg(1))
    join = _joined(m, {0: 1}, 2)
    due = 500 * MS + JOIN_TIMEOUT_MS * MS
    m.run_until(due - 1)
    assert not m.failed()
    m.run_until(due)
    assert [(f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [("broker-2", "JoinGroup", "timeout")]
    assert m.disconnects() == ["broker-2"]
    m.answer_metadata({0: 1}, 2)
    m.run_until(due + 2000 * MS)
    again = m.sent(JoinGroup, due)
    assert again and again[0].msg.correlation != join.msg.correlation


def test_a_join_answered_by_the_coordinators_push_does_not_time_out_later() -> None:
    """The coordinator answers a join it held during a rebalance with the generation it
    pushes to every member (correlation 0): the join is over, and nothing fails or is
    closed at what would have been its timeout."""
    m = Member(_cfg(1))
    join = _joined(m, {0: 1}, 2)
    m.handle(GroupAssignment("g0", "g0-0", 1, (0,), NONE, 0), join.dst)
    for ask in m.sent(OffsetFetch):
        m.handle(OffsetFetchResponse("g0", "orders", 0, 5, NONE, ask.msg.correlation),
                 join.dst)
    _serve(m, 500 * MS + JOIN_TIMEOUT_MS * MS + 1, "broker-1")
    assert not m.failed() and not m.disconnects()


def test_consumer_heartbeat_that_is_never_answered_fails_at_its_timeout() -> None:
    """A heartbeat never answered fails ``request.timeout.ms`` after it was sent; the
    coordinator's connection is closed and the coordinator is looked up again
    (``markCoordinatorUnknown``)."""
    m, _ = _fetching({0: 1}, coordinator=2, answer_heartbeats=False)
    m.run_until(HEARTBEAT_MS * MS)
    ((sent_us, hb),) = m.sent_at(GroupHeartbeat)
    assert hb.dst == ("broker-2", GROUP_COORDINATOR)
    due = sent_us + REQUEST_TIMEOUT_MS * MS
    _serve(m, due - 1, "broker-1")                 # the leader answers every fetch
    assert not m.failed()
    m.run_until(due)
    assert [(f["peer"], f["request"], f["reason"]) for f in m.failed()][0] \
        == ("broker-2", "Heartbeat", "timeout")
    assert m.disconnects() == ["broker-2"]
    assert m.c.coordinator is None


def test_an_answered_heartbeat_does_not_time_out() -> None:
    """The answer to a heartbeat (it carries no correlation: the oldest heartbeat in
    flight to that broker) ends it; only the later heartbeats, unanswered, fail."""
    m, _ = _fetching({0: 1}, coordinator=2, answer_heartbeats=False)
    m.run_until(HEARTBEAT_MS * MS)
    (hb,) = m.sent(GroupHeartbeat)
    m.handle(GroupHeartbeatResponse("g0", "g0-0", NONE, 1), hb.dst)
    first_due = HEARTBEAT_MS * MS + REQUEST_TIMEOUT_MS * MS
    _serve(m, first_due + 1, "broker-1")
    assert not m.failed() and not m.disconnects()
    _serve(m, 2 * HEARTBEAT_MS * MS + REQUEST_TIMEOUT_MS * MS, "broker-1")
    assert [(f["request"], f["reason"]) for f in m.failed()][0] == ("Heartbeat", "timeout")


def test_consumer_offset_commit_that_is_never_answered_fails_at_its_timeout() -> None:
    """An auto-commit the coordinator never answers fails ``request.timeout.ms`` after it
    was sent (``RetriableCommitFailedException``): no ack is traced, the offset counts as
    not committed (the next auto-commit sends it again), and the connection to the
    coordinator is closed."""
    m, (req,) = _fetching({0: 1}, coordinator=2)
    _answer_fetch(m, req, ((5, "a"), (6, "b")))
    _serve(m, AUTO_COMMIT_MS * MS, "broker-1")
    ((sent_us, commit),) = m.sent_at(OffsetCommit)
    assert (commit.dst[0], commit.msg.offset) == ("broker-2", 7)
    due = sent_us + REQUEST_TIMEOUT_MS * MS
    _serve(m, due - 1, "broker-1")
    assert not m.failed()
    m.run_until(due)
    assert [(f["partition"], f["peer"], f["request"], f["reason"]) for f in m.failed()] \
        == [(0, "broker-2", "OffsetCommit", "timeout")]
    assert m.disconnects() == ["broker-2"]
    assert not [e for _, e in m.log if isinstance(e, Emit) and e.event == "offset_commit_ack"]
    m.answer_metadata({0: 1}, 2)
    _serve(m, due + AUTO_COMMIT_MS * MS, "broker-1")
    (again,) = m.sent(OffsetCommit, due)
    assert again.msg.offset == 7
    m.handle(OffsetCommitResponse("g0", "orders", 0, NONE, again.msg.correlation), again.dst)
    assert [e.fields["offset"] for _, e in m.log
            if isinstance(e, Emit) and e.event == "offset_commit_ack"] == [7]


def test_a_rebalance_waiting_for_a_commit_that_is_never_answered_rejoins_at_its_timeout(
        ) -> None:
    """``onJoinPrepare`` commits and waits for the answer before it rejoins; a commit that
    is never answered fails at its timeout, and the member then joins again."""
    m, (req,) = _fetching({0: 1}, coordinator=2)
    coord = ("broker-2", GROUP_COORDINATOR)
    _answer_fetch(m, req, ((5, "a"),))
    m.run_until(m.now_us + 100 * MS)
    t0 = m.now_us
    m.handle(GroupAssignment("g0", "g0-0", 1, (0,), REBALANCE_IN_PROGRESS, 0), coord)
    ((sent_us, commit),) = m.sent_at(OffsetCommit, t0)
    due = sent_us + REQUEST_TIMEOUT_MS * MS
    m.run_until(due - 1)
    assert not m.sent(JoinGroup, t0)            # waits for the commit's answer
    m.run_until(due)
    assert [(f["request"], f["reason"]) for f in m.failed()] == [("OffsetCommit", "timeout")]
    m.answer_metadata({0: 1}, 2)
    m.run_until(due + 2000 * MS)
    assert m.sent(JoinGroup, due), "the member never rejoins"


def test_every_request_in_flight_has_a_live_timeout() -> None:
    """Through a rebalance, each request the member has in flight has a timer that will
    fail it."""
    m, _ = _fetching({0: 1, 1: 2}, coordinator=3)
    m.run_until(7000 * MS)
    m.handle(GroupAssignment("g0", "g0-0", 1, (0, 1), REBALANCE_IN_PROGRESS, 0),
             ("broker-3", GROUP_COORDINATOR))
    live = {msg.token for _, _, msg, handle in m.timers
            if isinstance(msg, Tick) and handle not in m.cancelled}
    assert m.c.requests and set(m.c.requests) <= live


# -- end to end ---------------------------------------------------------------------------------
NEMESIS = ('faults.nemesis=["reassign","kill","pause","partition","isolate","power_loss",'
           '"controlled_shutdown","preferred_election","stall_fetcher","kill_controller",'
           '"drop","delay"]')


def test_safe_acks_all_seed_40058_with_every_nemesis_converges() -> None:
    """``isrlab campaign safe-acks-all --seeds 40058:40058`` with 5 brokers and every
    nemesis: the consumer reads on to the end, and the run converges."""
    res, data = run_to_bytes("safe-acks-all", 40058, ["cluster.brokers=5", NEMESIS])
    assert res.status == "ok", res.error
    evs = [orjson.loads(line) for line in data.splitlines()]
    result = check_events(evs)
    assert result.anomalies["no_convergence"] == 0
    assert not result.forbidden_found
    consumed = [e for e in evs if e["event"] == "consume"]
    assert consumed and max(e["ts_us"] for e in consumed) > 20_000_000
