"""The ``corrupt_disk`` fault: a record batch damaged on one replica's disk, found by its CRC.

Corruption on the wire is TCP's business (a damaged segment is discarded and retransmitted),
so the corruption that reaches Kafka is on disk. A broker checks a batch's CRC in two
places only, and isrlab follows it (isrlab's records are its batches):

* a follower appending what it fetched: ``UnifiedLog.appendAsFollower`` validates every
  batch of the partition's data (``analyzeAndValidateRecords``: ``RecordBatch.isValid``,
  else CorruptRecordException) before it appends any; ``AbstractFetcherThread
  .processFetchRequest`` catches it, marks the partition with an error and delays it by
  ``replica.fetch.backoff.ms`` at the same fetch offset — the thread carries on;
* recovery after an unclean shutdown: ``LogLoader.recoverLog`` re-reads the segments from
  the one holding the recovery point on (``recoverSegment`` → ``LogSegment.recover``, which
  stops at the first invalid batch and cuts the segment there) and deletes the segments
  after a cut one.

A leader reads its log without any check (``LogSegment.read`` hands out the file's bytes),
so it serves a damaged batch as it is; the consumer checks it (``check.crcs``, default
true) as poll() hands the records out: 3.7.0 ``CompletedFetch.nextFetchedRecord`` →
``maybeEnsureValid``, 2.8.0 ``Fetcher.PartitionRecords``, the same.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from helpers import events, isrlab, one_line_exit_2, run_to_bytes

from actors.consumer import Consumer, ConsumerConfig
from actors.coordinator import GROUP_COORDINATOR, OFFSETS_TOPIC, partition_for
from actors.core import Emit, Send, Timer
from actors.eras import rules_for
from actors.fetcher import REPLICA_MANAGER
from actors.log import BrokerDisk, PartitionLog
from actors.messages import (
    NONE,
    Fetch,
    FetchResponse,
    GroupAssignment,
    JoinGroup,
    MetadataRequest,
    MetadataResponse,
    OffsetCommit,
    OffsetFetch,
    OffsetFetchResponse,
    PartitionState,
    Produce,
    ReplicaFetch,
    ReplicaFetchResponse,
    Tick,
)
from actors.replica import Replica, ReplicaConfig
from actors.wire import fields, round_trip
from emulator.scenario import ScenarioError, load
from faults.nemesis import generate
from traces.checker import check_events
from traces.show import format_event

PRODUCER = ("producer-0", "producer")
BACKOFF_MS = 1000


# -- helpers ---------------------------------------------------------------------------------
#: every test record's size on disk: 70 bytes of framing and a 5-character value
RECORD_BYTES = 75


def rec(offset: int, epoch: int = 1) -> tuple[Any, ...]:
    return (offset, f"v{offset:04d}", epoch, 0, -1, -1, None)


def fill(log: PartitionLog, n: int, segment_bytes: int = 1 << 30) -> None:
    """Append ``n`` records as a replica does: a roll flushes the rolled segment."""
    start = log.log_end_offset
    for o in range(start, start + n):
        if log.append(rec(o), segment_bytes, 1 << 40, 0):
            log.flush(0, upto=o)


def emitted(effects: list[Any], event: str) -> list[dict[str, Any]]:
    return [e.fields for e in effects if isinstance(e, Emit) and e.event == event]


def leader(isr: tuple[int, ...] = (1, 2, 3)) -> Replica:
    r = Replica("broker-1", 1, PartitionLog("orders", 0), rules_for("4.1"),
                ReplicaConfig(min_insync_replicas=1), clean_start=True)
    r.start()
    r.handle(PartitionState(1, "orders", 0, (1, 2, 3), 1, 1, isr, (), 1, False), ("x", "y"))
    r.drain()
    return r


def follower() -> Replica:
    r = Replica("broker-2", 2, PartitionLog("orders", 0), rules_for("4.1"),
                ReplicaConfig(replica_fetch_backoff_ms=BACKOFF_MS), clean_start=True)
    r.start()
    r.handle(PartitionState(1, "orders", 0, (1, 2, 3), 1, 1, (1, 2, 3), (), 1, False),
             ("x", "y"))
    r.drain()
    return r


def answer(f: Replica, records: tuple[Any, ...], hw: int, leo: int,
           damaged: tuple[int, ...] = ()) -> list[Any]:
    f.handle(FetchResponse("orders", 0, NONE, hw, leo, 0, records, -1, -1, 1, f._outstanding,
                           damaged), ("broker-1", "orders-0"))
    return f.drain()


def restarted(log: PartitionLog, *, clean: bool) -> tuple[Replica, list[Any]]:
    r = Replica("broker-1", 1, log, rules_for("4.1"), ReplicaConfig(invariants=True),
                clean_start=clean)
    r.start()
    return r, r.drain()


# -- the damage lives on disk, with its record -----------------------------------------------
def test_damage_is_kept_sorted_and_leaves_the_disk_only_with_its_record() -> None:
    """The damaged offsets are a sorted list on the log (never a set: the order is part of
    the state), added by the fault and removed only when the record itself goes: a
    truncation, a segment deleted below the log start offset, a log started over."""
    log = PartitionLog("orders", 0)
    fill(log, 20, segment_bytes=RECORD_BYTES * 5)   # segments 0, 5, 10, 15
    assert [s.base_offset for s in log.segments] == [0, 5, 10, 15]
    assert [log.corrupt(o) for o in (12, 3, 17, -1)] == [12, 3, 17, 19]
    assert log.corrupt(3) == 3                 # damaging it twice changes nothing
    assert log.damaged == [3, 12, 17, 19]
    assert log.corrupt(20) is None and log.corrupt(99) is None   # no such record
    assert log.damaged_in(4, 18) == (12, 17)
    log.truncate_to(18)
    assert log.damaged == [3, 12, 17]
    log.delete_segments_below(10)              # segments 0 and 5 go, offset 3 with them
    assert log.damaged == [12, 17]
    log.truncate_fully_and_start_at(40)
    assert log.damaged == [] and PartitionLog("t", 0).corrupt(-1) is None


def test_damage_survives_a_process_crash_and_goes_with_the_records_a_power_loss_drops() -> None:
    """The damage is on disk: a process crash keeps it; a power loss that drops the
    unflushed record drops its damage too (nothing is left to find at recovery)."""
    disk = BrokerDisk(writeback_ms=0)
    log = disk.log("orders", 0)
    fill(log, 10)
    log.flush(0, upto=4)
    log.corrupt(7)
    disk.crash(power_loss=False)
    assert log.damaged == [7] and log.log_end_offset == 10
    disk.crash(power_loss=True)
    assert log.log_end_offset == 4 and log.damaged == []
    assert log.recovery_corruption is None


# -- the leader's read path: no check --------------------------------------------------------
def test_a_leader_serves_a_damaged_batch_as_it_is_and_the_answer_names_it() -> None:
    """``LogSegment.read`` returns the bytes without validating them: the leader's answer to
    a follower (and to a consumer) holds the damaged record, and names its offset among the
    records returned, as the receiver's own CRC check would find it."""
    r = leader(isr=(1,))
    r.handle(Produce("orders", 0, -1, tuple((-1, f"v{i}", -1, 0, -1, -1, None)
                                             for i in range(10)), 30000, 7), PRODUCER)
    r.drain()
    r.log.corrupt(6)
    r.handle(Fetch("orders", 0, 2, -1, 3, 1, 1, 0, 1000, 1), ("broker-2", "orders-0"))
    to_follower = [e.msg for e in r.drain() if isinstance(e, Send)][0]
    assert [x[0] for x in to_follower.records] == list(range(3, 10))
    assert to_follower.damaged == (6,)
    r.handle(Fetch("orders", 0, -1, -1, 0, -1, 1, 0, 1000, 2), ("consumer-g0-0", "consumer"))
    to_consumer = [e.msg for e in r.drain() if isinstance(e, Send)][0]
    assert [x[0] for x in to_consumer.records] == list(range(10))
    assert to_consumer.damaged == (6,)
    r.handle(Fetch("orders", 0, 2, -1, 7, 1, 1, 0, 1000, 3), ("broker-2", "orders-0"))
    past = [e.msg for e in r.drain() if isinstance(e, Send)][0]
    assert past.damaged == ()                  # only damage among the records returned


def test_a_fetch_response_carries_its_damaged_offsets_on_the_wire() -> None:
    """Every message is msgpack on the wire: the new field survives a frame, and a part of a
    fetcher thread's response rebuilt from its fields; older constructors default it."""
    msg = FetchResponse("orders", 0, NONE, 5, 9, 0, (rec(5), rec(6)), -1, -1, 1, 4, (6,))
    assert round_trip(msg) == msg
    assert FetchResponse(*fields(msg)).damaged == (6,)
    assert FetchResponse("orders", 0, NONE, 5, 9, 0, (), -1, -1, 1, 4).damaged == ()


# -- the follower's append path: refused whole, fetched again --------------------------------
def test_a_follower_that_fetches_a_damaged_batch_appends_nothing_and_retries_from_the_same_offset(
        ) -> None:
    """The follower's append validates every batch of the answer before it appends any
    (``analyzeAndValidateRecords``): the records before the damaged one are not appended
    either, the HW and log start offset are not updated (``processPartitionData`` stopped),
    and after ``replica.fetch.backoff.ms`` the same offset is fetched again."""
    f = follower()
    answer(f, tuple(rec(o) for o in range(5)), hw=5, leo=5)
    assert (f.leo, f.hw) == (5, 5)
    effects = answer(f, tuple(rec(o) for o in range(5, 10)), hw=9, leo=10, damaged=(7,))
    assert (f.leo, f.hw) == (5, 5)
    assert [x[0] for x in f.log.records] == list(range(5))
    assert emitted(effects, "corrupt_record") == [
        {"topic": "orders", "partition": 0, "replica": 2, "offset": 7, "where": "fetch",
         "leader": 1, "fetch_offset": 5}]
    assert not emitted(effects, "leo_update") and not emitted(effects, "hw_update")
    assert not [e for e in effects if isinstance(e, Send)]     # nothing until the backoff
    backoff = [e for e in effects if isinstance(e, Timer) and isinstance(e.msg, Tick)
               and e.msg.kind == "fetch_backoff"]
    assert [t.delay_us for t in backoff] == [BACKOFF_MS * 1000]
    f.now_us += BACKOFF_MS * 1000
    f.handle(backoff[0].msg, f.address)
    again = [e.msg for e in f.drain() if isinstance(e, Send)]
    assert len(again) == 1 and isinstance(again[0], Fetch) and again[0].fetch_offset == 5
    # the same damaged batch again: still nothing (Kafka does not repair it)
    effects = answer(f, tuple(rec(o) for o in range(5, 10)), hw=9, leo=10, damaged=(7,))
    assert f.leo == 5 and len(emitted(effects, "corrupt_record")) == 1


# -- the consumer's poll: check.crcs ---------------------------------------------------------
ME = ("consumer-g0-0", "consumer")
G0_OFFSETS = partition_for("g0", 50)
COORDINATOR = ("broker-3", GROUP_COORDINATOR)


class Member:
    """A consumer of group g0 driven by hand: messages through ``handle``, its effects kept
    in ``log`` (timers are delivered only when a test hands their ``Tick`` in)."""

    def __init__(self, leaders: dict[int, tuple[int, int]], *, committed: int = 5,
                 assignor: str = "range") -> None:
        self.c = Consumer(ME[0], ConsumerConfig("g0", "orders", len(leaders), 0, 1,
                                                assignor=assignor), brokers=(1, 2, 3))
        self.log: list[Any] = []
        self.committed = committed
        self.c.start()
        self.collect()
        self.metadata(leaders)
        retry = [e.msg for e in self.log if isinstance(e, Timer)
                 and isinstance(e.msg, Tick) and e.msg.kind == "join_retry"]
        self.handle(retry[-1])                     # the join waited for the coordinator
        self.assign(1, tuple(sorted(leaders)))

    def collect(self) -> list[Any]:
        out = self.c.drain()
        self.log += out
        return out

    def handle(self, msg: Any, src: tuple[str, str] = ME) -> list[Any]:
        self.c.handle(msg, src)
        return self.collect()

    def sent(self, kind: type, effects: list[Any] | None = None) -> list[Send]:
        return [e for e in (self.log if effects is None else effects)
                if isinstance(e, Send) and isinstance(e.msg, kind)]

    def metadata(self, leaders: dict[int, tuple[int, int]]) -> list[Any]:
        """Answer a metadata request (asked for now, a second past the last answer):
        ``orders`` partition -> (leader, epoch); g0's coordinator is broker-3."""
        self.c.now_us += 1_000_000
        self.c.refresh_metadata()
        self.collect()
        ask = self.sent(MetadataRequest)[-1].msg
        parts = tuple(("orders", p, b, e) for p, (b, e) in sorted(leaders.items()))
        return self.handle(MetadataResponse(parts + ((OFFSETS_TOPIC, G0_OFFSETS, 3, 0),),
                                            ask.correlation), ("broker-1", "broker"))

    def assign(self, generation: int, partitions: tuple[int, ...]) -> list[Any]:
        """The coordinator gives this member ``partitions``; each committed offset read
        back is ``committed``."""
        join = self.sent(JoinGroup)[-1]
        out = self.handle(GroupAssignment("g0", "g0-0", generation, partitions, NONE,
                                          join.msg.correlation), COORDINATOR)
        for ask in self.sent(OffsetFetch, out):
            out += self.handle(OffsetFetchResponse("g0", "orders", ask.msg.partition,
                                                   self.committed, NONE,
                                                   ask.msg.correlation), COORDINATOR)
        return out

    def answer(self, req: Send, records: dict[int, range], *, hw: int = 10, epoch: int = 0,
               damaged: tuple[int, ...] = ()) -> list[Any]:
        """The leader answers the fetch ``req``: each partition it names gets the records
        ``records`` gives it (none by default), ``damaged`` among them."""
        corr = req.msg.correlation
        parts = []
        for part in req.msg.parts:
            offsets = records.get(part[1], range(0))
            recs = tuple((o, f"v{o}", epoch, 0, -1, -1, None) for o in offsets)
            bad = tuple(d for d in damaged if d in offsets)
            parts.append(fields(FetchResponse("orders", part[1], NONE, hw, hw, 0, recs, -1, -1,
                                              epoch, corr, bad)))
        return self.handle(ReplicaFetchResponse(NONE, tuple(parts), corr),
                           (req.dst[0], REPLICA_MANAGER))

    def fetch_to(self, broker: int, effects: list[Any] | None = None) -> Send:
        """The last fetch request sent to ``broker``."""
        return [s for s in self.sent(ReplicaFetch, effects) if s.dst[0] == f"broker-{broker}"][-1]


def consumed(effects: list[Any]) -> list[tuple[int, int]]:
    return [(f["partition"], f["offset"]) for f in emitted(effects, "consume")]


def positions_fetched(effects: list[Any]) -> list[tuple[str, int, int]]:
    """(broker, partition, offset) of every partition each fetch request names."""
    return [(s.dst[0], part[1], part[4]) for s in effects
            if isinstance(s, Send) and isinstance(s.msg, ReplicaFetch) for part in s.msg.parts]


def stuck_member() -> tuple[Member, list[Any]]:
    """A member reading orders-0 (leader broker-1) and orders-1 (leader broker-2), both
    from committed offset 5, whose fetch of orders-0 answers 5-9 with 7 damaged."""
    m = Member({0: (1, 0), 1: (2, 0)})
    assert sorted(positions_fetched(m.log)) == [("broker-1", 0, 5), ("broker-2", 1, 5)]
    return m, m.answer(m.fetch_to(1), {0: range(5, 10)}, damaged=(7,))


def test_a_consumer_returns_the_records_before_a_damaged_batch_and_stops_its_position_at_it(
        ) -> None:
    """check.crcs: poll() hands out the records before the damaged batch, then fails on it;
    the position is the damaged offset (3.7.0 ``CompletedFetch.fetchRecords``: the good
    records are returned and the exception kept; Kafka's ``FetcherTest
    .testParseCorruptedRecord``: one record returned, position 1, every later fetch throws
    there). The failure is traced once, as ``corrupt_record`` where ``poll``, naming the
    broker that served the damaged copy."""
    m, effects = stuck_member()
    assert consumed(effects) == [(0, 5), (0, 6)]
    assert m.c.position[0] == 7
    assert emitted(effects, "corrupt_record") == [
        {"topic": "orders", "partition": 0, "replica": 1, "offset": 7, "where": "poll",
         "leader": 1, "group": "g0", "consumer": "g0-0", "fetch_offset": 5, "position": 7, "hw": 10,
         "leader_epoch": 0}]
    assert m.c.stuck is not None and (m.c.stuck.partition, m.c.stuck.offset) == (0, 7)


def test_a_consumer_stuck_on_a_damaged_batch_reads_nothing_more_from_any_partition() -> None:
    """The failed fetch stays next in line (``corruptLastRecord``), so every later poll
    throws at it before it reaches another partition's data (3.7.0 ``FetchCollector
    .collectFetch``; ``FetcherTest.testInvalidDefaultRecordBatch``: collectFetch throws
    again and again, the position unchanged), and a partition with data buffered is not
    fetched again (``fetchablePartitions``): orders-1's answer, already on its way, is not
    read, and no fetch goes to any broker — after a retry, a reconnect or a metadata
    refresh naming the same leaders either; nor is the failure traced again."""
    m, effects = stuck_member()
    assert not positions_fetched(effects)
    later = m.answer(m.fetch_to(2), {1: range(5, 9)})
    assert not consumed(later) and m.c.position[1] == 5
    later += m.handle(Tick("retry", 0, 1))
    later += m.metadata({0: (1, 0), 1: (2, 0)})
    m.c.connection_reset("broker-2")
    later += m.collect()
    assert not positions_fetched(later) and not emitted(later, "corrupt_record")
    assert m.c.position == {0: 7, 1: 5}


def test_a_consumer_stuck_on_a_damaged_batch_never_commits_past_it() -> None:
    """Auto-commit commits the positions (``SubscriptionState.allConsumed``): orders-0's
    is the damaged offset, and stays there; nothing moved is committed again."""
    m, _ = stuck_member()
    commits = m.handle(Tick("commit", 0, 0))
    assert [(s.msg.partition, s.msg.offset) for s in m.sent(OffsetCommit, commits)] == [(0, 7)]
    m.answer(m.fetch_to(2), {1: range(5, 9)})
    again = m.handle(Tick("commit", 0, 0))
    assert not m.sent(OffsetCommit, again)
    assert max(s.msg.offset for s in m.sent(OffsetCommit) if s.msg.partition == 0) == 7


def test_a_new_leader_in_the_metadata_lets_a_stuck_consumer_read_on_from_it() -> None:
    """The metadata names another leader (or epoch) for the stuck partition: its position
    awaits validation, so it is not fetchable and the failed fetch is drained (3.7.0
    ``SubscriptionState.maybeValidatePositionForCurrentLeader``, ``FetchCollector
    .fetchRecords``: "no longer fetchable"); the partition is fetched from the damaged
    offset at the new leader, whose copy is good, and every other partition goes on."""
    m, _ = stuck_member()
    m.answer(m.fetch_to(2), {1: range(5, 9)})           # not read: behind the failed fetch
    none_yet = m.metadata({0: (-1, 1), 1: (2, 0)})       # no leader yet: nothing changes
    assert not positions_fetched(none_yet) and m.c.stuck is not None
    moved = m.metadata({0: (2, 1), 1: (2, 0)})
    assert m.c.stuck is None
    assert positions_fetched(moved) == [("broker-2", 0, 7), ("broker-2", 1, 5)]
    read = m.answer(m.fetch_to(2), {0: range(7, 10), 1: range(5, 9)}, epoch=1)
    assert consumed(read) == [(0, 7), (0, 8), (0, 9), (1, 5), (1, 6), (1, 7), (1, 8)]
    assert not emitted(read, "corrupt_record")


def test_a_stuck_partition_revoked_frees_the_others_and_given_back_meets_the_damage_again(
        ) -> None:
    """A rebalance that takes the stuck partition away drains its failed fetch (3.7.0
    ``FetchCollector.fetchRecords``: "no longer assigned"): under the cooperative protocol
    the kept partition goes on from its position at once. Given back, the partition starts
    from the committed offset — the damaged one — and, its leader still serving the damaged
    copy, the member is stuck on it again (a new ``corrupt_record``)."""
    m = Member({0: (1, 0), 1: (2, 0)}, assignor="cooperative-sticky")
    m.answer(m.fetch_to(1), {0: range(5, 10)}, damaged=(7,))
    m.handle(Tick("commit", 0, 0))                      # orders-0 committed at 7
    m.answer(m.fetch_to(2), {1: range(5, 6)})           # not read
    m.committed = 7
    revoked = m.assign(2, (1,))
    assert m.c.stuck is None
    assert positions_fetched(revoked) == [("broker-2", 1, 5)]
    assert consumed(m.answer(m.fetch_to(2, revoked), {1: range(5, 9)})) == [
        (1, 5), (1, 6), (1, 7), (1, 8)]
    back = m.assign(3, (0, 1))
    assert positions_fetched(back) == [("broker-1", 0, 7)]
    again = m.answer(m.fetch_to(1, back), {0: range(7, 10)}, damaged=(7,))
    assert not consumed(again)
    assert [(e["offset"], e["fetch_offset"]) for e in emitted(again, "corrupt_record")] == [
        (7, 7)]
    assert m.c.stuck is not None and m.c.position[0] == 7


# -- recovery after an unclean shutdown ------------------------------------------------------
def test_unclean_restart_truncates_the_log_at_a_damaged_batch_past_the_recovery_point() -> None:
    """``LogSegment.recover`` stops at the first batch that fails its CRC and cuts the
    segment there; the restart traces what it found (``corrupt_record``, where
    "recovery"), the cut (``log_truncate``) and the log as opened (``log_recovery``); the
    HW from the checkpoint is clamped to the shorter log."""
    log = PartitionLog("orders", 0)
    fill(log, 10)
    log.flush(0, upto=4)
    log.hw_checkpoint = 9
    log.corrupt(7)
    log.corrupt(8)
    r, effects = restarted(log, clean=False)
    assert log.log_end_offset == 7 and log.damaged == [] and r.hw == 7
    assert emitted(effects, "corrupt_record") == [
        {"topic": "orders", "partition": 0, "replica": 1, "offset": 7, "where": "recovery",
         "old_leo": 10, "new_leo": 7}]
    assert [(t["old_leo"], t["new_leo"], t["reason"]) for t in emitted(
        effects, "log_truncate")] == [(10, 7, "corrupt_record")]
    assert emitted(effects, "log_recovery")[0]["leo"] == 7
    order = [e.event for e in effects if isinstance(e, Emit)]
    assert order.index("corrupt_record") < order.index("log_recovery")


def test_damage_below_the_recovery_point_survives_recovery_unnoticed() -> None:
    """Kafka recovers only the unflushed segments (``LogLoader.recoverLog``: from the one
    holding the recovery point on); damage in an older, flushed segment is not read, and
    stays on disk until a follower fetches it from this replica as leader."""
    log = PartitionLog("orders", 0)
    fill(log, 12, segment_bytes=RECORD_BYTES * 5)        # segments 0, 5, 10; rolls flushed to 10
    assert log.recovery_point == 10
    log.corrupt(3)
    log.corrupt(7)
    _r, effects = restarted(log, clean=False)
    assert log.log_end_offset == 12 and log.damaged == [3, 7]
    assert not emitted(effects, "corrupt_record") and not emitted(effects, "log_truncate")


def test_damage_in_the_segment_holding_the_recovery_point_is_found_even_below_it() -> None:
    """Recovery starts at the *segment* that holds the recovery point
    (``LogSegments.values(recoveryPoint, ...)`` starts at its floor segment), so damage
    below the recovery point but in that segment is found: the log is cut there."""
    log = PartitionLog("orders", 0)
    fill(log, 14, segment_bytes=RECORD_BYTES * 5)        # segments 0, 5, 10
    log.flush(0, upto=12)
    log.corrupt(11)
    _r, effects = restarted(log, clean=False)
    assert log.log_end_offset == 11 and log.recovery_point == 11
    assert [e["offset"] for e in emitted(effects, "corrupt_record")] == [11]


def test_a_clean_restart_does_not_look_for_damage() -> None:
    """With the clean-shutdown marker ``LogLoader`` skips recovery: the damage stays."""
    log = PartitionLog("orders", 0)
    fill(log, 10)
    log.corrupt(8)
    _r, effects = restarted(log, clean=True)
    assert log.log_end_offset == 10 and log.damaged == [8]
    assert not emitted(effects, "corrupt_record")


def test_a_power_loss_recovery_cuts_at_damage_the_page_cache_kept() -> None:
    """A power loss keeps the flushed prefix and recovers it at once; the damage found
    there is traced when the broker restarts, as part of opening the log."""
    disk = BrokerDisk(writeback_ms=0)
    log = disk.log("orders", 0)
    fill(log, 10)
    log.flush(0, upto=8)
    log.corrupt(2)                             # in the segment holding the recovery point
    disk.crash(power_loss=True)
    assert log.log_end_offset == 2
    _r, effects = restarted(log, clean=False)
    assert [(e["offset"], e["old_leo"], e["new_leo"]) for e in emitted(
        effects, "corrupt_record")] == [(2, 8, 2)]
    recovery = emitted(effects, "log_recovery")[0]
    assert (recovery["power_loss_leo"], recovery["leo"]) == (10, 2)


# -- whole runs ------------------------------------------------------------------------------
#: both followers of orders-0 stop fetching for 1.5 s; meanwhile the leader's last record
#: is damaged, so that they meet it when they resume (from 2.5 s: the controller quorum's
#: first election and the topic's creation come first)
STALL_AND_DAMAGE = (
    '{at_s=2.5, fault="stall_fetcher", target=["follower:orders-0/0", "follower:orders-0/1"],'
    ' duration_s=1.5}, {at_s=3.5, fault="corrupt_disk", target="leader:orders-0",'
    ' topic_partition="orders-0"}')


def test_followers_stuck_behind_a_damaged_leader_batch_fall_out_of_the_isr() -> None:
    """The default scenario with the leader of orders-0 damaged: both followers fetch the
    damaged batch, refuse it, and fetch the same offset again every backoff for the rest of
    the run; the leader drops them from the ISR by the lag rule, and the partition never
    converges (nothing repairs the batch: Kafka's behaviour)."""
    _res, data = run_to_bytes("default", 1, [
        "duration_s=10", "heal_s=20", "cluster.replica.lag.time.max.ms=4000",
        f"faults.plan=[{STALL_AND_DAMAGE}]"])
    evs = events(data)
    fault = [e for e in evs if e["event"] == "fault" and e["fault"] == "corrupt_disk"]
    assert [f["phase"] for f in fault] == ["start"]
    damaged, leader_node = fault[0]["offset"], fault[0]["target"][0]
    leader_id = int(leader_node[7:])
    found = [e for e in evs if e["event"] == "corrupt_record"]
    followers = sorted({e["replica"] for e in found})
    assert len(followers) == 2 and leader_id not in followers
    assert {(e["offset"], e["where"], e["leader"]) for e in found} == {
        (damaged, "fetch", leader_id)}
    for b in followers:   # the same fetch offset, again and again, backoff apart
        mine = [e for e in found if e["replica"] == b]
        assert len(mine) >= 10 and len({e["fetch_offset"] for e in mine}) == 1
        gaps = {(y["ts_us"] - x["ts_us"]) // 1000
                for x, y in zip(mine, mine[1:], strict=False)}
        assert min(gaps) >= 1000
    shrinks = [e for e in evs if e["event"] == "isr_change" and e["topic"] == "orders"
               and e["partition"] == 0 and e["new"] == [leader_id]]
    assert shrinks
    final = {e["replica"]: e for e in evs if e["event"] == "final_log"
             and e["topic"] == "orders" and e["partition"] == 0}
    assert all(final[b]["leo"] <= damaged for b in followers)
    assert final[leader_id]["leo"] > damaged
    conv = [e for e in evs if e["event"] == "convergence" and e["topic"] == "orders"
            and e["partition"] == 0]
    assert conv and not conv[0]["converged"]
    result = check_events(iter(evs))
    assert result.anomalies["no_convergence"] >= 1
    assert result.anomalies["lost_acked_write"] == 0


def test_a_damaged_leader_killed_uncleanly_cuts_its_log_at_the_damage_on_restart() -> None:
    """The same damage, then the default scenario's crash of the leader: a stuck follower is
    elected (the records past the damage were never acknowledged: the HW stopped below it),
    and the old leader's recovery finds the damaged batch and cuts its log there, then
    follows the new leader: the cluster converges and no acknowledged write is lost."""
    _res, data = run_to_bytes("default", 1, [
        f'faults.plan=[{STALL_AND_DAMAGE}, {{at_s=5.5, fault="crash", '
        f'target="leader:orders-0", duration_s=5.0}}]'])
    evs = events(data)
    damaged = next(e["offset"] for e in evs if e["event"] == "fault"
                   and e["fault"] == "corrupt_disk")
    old_leader = next(e["target"][0] for e in evs if e["event"] == "fault"
                      and e["fault"] == "crash")
    recovered = [e for e in evs if e["event"] == "corrupt_record" and e["where"] == "recovery"]
    assert [(e["node"], e["offset"]) for e in recovered] == [(old_leader, damaged)]
    assert recovered[0]["new_leo"] == damaged < recovered[0]["old_leo"]
    assert any(e["event"] == "log_truncate" and e["reason"] == "corrupt_record"
               and e["node"] == old_leader for e in evs)
    result = check_events(iter(evs))
    assert result.anomalies["lost_acked_write"] == 0
    assert result.anomalies["no_convergence"] == 0


#: one member reads every partition of orders; it is paused from 1 s to 3 s while the
#: leader of orders-0 gets record 100 damaged at 2 s — by then on every replica, and below
#: the HW: only the leader's copy is bad, and the member meets it when it resumes
PAUSED_READER_AND_DAMAGE = (
    '{at_s=1.0, fault="pause", target="consumer-g0-0", duration_s=2.0}, '
    '{at_s=2.0, fault="corrupt_disk", target="leader:orders-0", topic_partition="orders-0", '
    'offset=100}')
ONE_READER = ["duration_s=8", "heal_s=20", "consumers[0].members=1"]


def _poll_failures(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in evs if e["event"] == "corrupt_record" and e["where"] == "poll"]


def _committed_on(evs: list[dict[str, Any]], partition: int) -> list[int]:
    return [e["offset"] for e in evs if e["event"] == "offset_commit"
            and e["topic"] == "orders" and e["partition"] == partition]


def test_a_consumer_meeting_a_damaged_batch_below_the_hw_stays_stuck_and_commits_no_further(
        ) -> None:
    """The member reads orders-0 up to the damaged record, fails there (once traced,
    ``corrupt_record`` where ``poll``, naming the leader's copy), and from then on reads
    nothing from any of its partitions and never commits orders-0 past the damage. The
    followers' copies are good but nothing makes the member look for another leader, as
    nothing makes Kafka's: each partition it holds ends ``no_convergence`` with the
    member's position below the HW (Kafka's behaviour: the application must seek past the
    record), and nothing acknowledged is lost."""
    _res, data = run_to_bytes("default", 1, [
        *ONE_READER, f"faults.plan=[{PAUSED_READER_AND_DAMAGE}]"])
    evs = events(data)
    (fault,) = [e for e in evs if e["event"] == "fault" and e["fault"] == "corrupt_disk"]
    leader_id = int(fault["target"][0][7:])
    (failed,) = _poll_failures(evs)
    assert (failed["node"], failed["partition"], failed["offset"], failed["replica"]) == (
        "consumer-g0-0", 0, 100, leader_id)
    assert failed["hw"] > 100 and failed["position"] == 100
    read = [e["offset"] for e in evs if e["event"] == "consume" and e["partition"] == 0]
    assert read and max(read) == 99
    assert not [e for e in evs if e["event"] == "consume" and e["seq"] > failed["seq"]]
    assert _committed_on(evs, 0) and max(_committed_on(evs, 0)) == 100
    conv = {e["partition"]: e for e in evs if e["event"] == "convergence"
            and e["topic"] == "orders"}
    assert conv[0]["detail"].startswith("consumer-g0-0 at 100 < HW")
    assert all(not c["converged"] for c in conv.values())
    result = check_events(iter(evs))
    assert result.anomalies["no_convergence"] == 3
    assert result.anomalies["lost_acked_write"] == 0 and result.anomalies["poll_skip"] == 0


def test_a_stuck_consumer_reads_on_once_the_leader_moves_to_a_replica_without_the_damage(
        ) -> None:
    """The same damage, then the damaged leader crashes: a follower with a good copy is
    elected; the member, whose metadata is refreshed every second, sees the new leader,
    drops the failed fetch and reads orders-0 on from the damaged offset — the good copy of
    record 100, under the new epoch — and every partition converges (the old leader's
    recovery cuts its log at the damage, and it follows the new leader)."""
    _res, data = run_to_bytes("default", 1, [
        *ONE_READER, "consumers[0].metadata.max.age.ms=1000",
        f'faults.plan=[{PAUSED_READER_AND_DAMAGE}, {{at_s=4.0, fault="crash", '
        f'target="leader:orders-0", duration_s=3.0}}]'])
    evs = events(data)
    (failed,) = _poll_failures(evs)
    assert (failed["partition"], failed["offset"]) == (0, 100)
    after = [e for e in evs if e["event"] == "consume" and e["partition"] == 0
             and e["seq"] > failed["seq"]]
    assert after and after[0]["offset"] == 100
    assert after[0]["leader_epoch"] > failed["leader_epoch"]
    elected = [e for e in evs if e["event"] == "leader_elected" and e["topic"] == "orders"
               and e["partition"] == 0 and e["seq"] < after[0]["seq"]]
    assert elected[-1]["leader"] != failed["replica"]
    assert max(e["offset"] for e in evs if e["event"] == "offset_commit"
               and e["partition"] == 0 and e["seq"] < after[0]["seq"]) == 100
    result = check_events(iter(evs))
    assert result.anomalies["no_convergence"] == 0
    assert result.anomalies["lost_acked_write"] == 0
    assert result.anomalies["poll_skip"] == 0 and result.anomalies["nonmonotonic_poll"] == 0


def test_a_consumer_poll_failure_line_names_the_damaged_copy_and_the_member() -> None:
    line = format_event({"seq": 1, "ts_us": 3_009_290, "event": "corrupt_record",
                         "node": "consumer-g0-0", "actor": "consumer", "topic": "orders",
                         "partition": 0, "replica": 1, "offset": 100, "where": "poll",
                         "group": "g0", "consumer": "g0-0", "position": 100})
    assert "@100 fails its CRC (poll)" in line and "consumer-g0-0" in line


def test_a_corrupt_disk_with_nothing_to_damage_is_traced_as_skipped() -> None:
    """No record at that offset, or no log of the partition on that broker: nothing is
    damaged, and the trace says why (never a silent no-op)."""
    _res, data = run_to_bytes("default", 1, [
        "duration_s=2", "heal_s=5", "topics[0].replication.factor=1",
        "topics[0].min.insync.replicas=1",
        'faults.plan=[{at_s=1.0, fault="corrupt_disk", target="broker-1", '
        'topic_partition="orders-0", offset=100000}, {at_s=1.0, fault="corrupt_disk", '
        'target="broker-2", topic_partition="orders-0"}]'])
    skipped = [e for e in events(data) if e["event"] == "fault"
               and e["fault"] == "corrupt_disk"]
    assert [(e["phase"], e["target"]) for e in skipped] == [
        ("skipped", ["broker-1"]), ("skipped", ["broker-2"])]
    assert "no record at offset 100000" in skipped[0]["reason"]
    assert "hosts no log of orders-0" in skipped[1]["reason"]


def test_a_corrupt_record_line_reads_as_a_failed_crc_check() -> None:
    line = format_event({"seq": 1, "ts_us": 2_500_000, "event": "corrupt_record",
                         "node": "broker-2", "actor": "orders-0", "topic": "orders",
                         "partition": 0, "replica": 2, "offset": 64, "where": "fetch"})
    assert "orders-0" in line and "@64 fails its CRC (fetch)" in line


# -- the plan entry and the nemesis ----------------------------------------------------------
@pytest.mark.parametrize("step, field, words", [
    ('{at_s=1.0, fault="corrupt_disk", target="broker-1", topic_partition="orders-0", '
     'offset=-2}', "faults.plan[0].offset", "must be >= -1"),
    ('{at_s=1.0, fault="corrupt_disk", target="broker-1", topic_partition="orders-9"}',
     "faults.plan[0].topic_partition", "no partition 'orders-9'"),
    ('{at_s=1.0, fault="corrupt_disk", target="broker-1"}',
     "faults.plan[0].topic_partition", "is required"),
    ('{at_s=1.0, fault="corrupt_disk", target="broker-1", topic_partition=0}',
     "faults.plan[0].topic_partition", "expected a string"),
    ('{at_s=1.0, fault="corrupt_disk", target="controller", topic_partition="orders-0"}',
     "faults.plan[0].target", "unknown node 'controller'"),
    ('{at_s=1.0, fault="crash", target="broker-1", offset=3}',
     "faults.plan[0].offset", "unknown key"),
])
def test_a_bad_corrupt_disk_step_is_refused_at_load_naming_its_field(
        step: str, field: str, words: str) -> None:
    with pytest.raises(ScenarioError) as err:
        load("default", [f"faults.plan=[{step}]"])
    text = str(err.value)
    assert f"{field}: " in text and words in text and "\n" not in text


def test_a_bad_corrupt_disk_key_is_one_line_and_exit_2_from_the_command_line(tmp_path: Any
                                                                              ) -> None:
    proc = isrlab("run", "default", "--set",
                  'faults.plan=[{at_s=1.0, fault="corrupt_disk", target="broker-1", '
                  'topic_partition="orders-0", offset=-7}]', "--out", str(tmp_path / "t.jsonl"))
    one_line_exit_2(proc, "faults.plan[0].offset", "must be >= -1")
    assert not (tmp_path / "t.jsonl").exists()


def test_a_good_corrupt_disk_step_resolves_with_its_own_keys_only() -> None:
    """The step's keys are its own: ``offset`` defaults to -1 (the last record), and the
    other steps' entries (and so the trace headers that record them) keep their shape."""
    sc = load("default", ['faults.plan=[{at_s=1.0, fault="corrupt_disk", '
                          'target="follower:orders-0/1", topic_partition="orders-0"}, '
                          '{at_s=2.0, fault="crash", target="broker-1"}]'])
    step, crash = sc["faults"]["plan"]
    assert (step["offset"], step["topic_partition"]) == (-1, "orders-0")
    assert "offset" not in crash and "topic_partition" not in crash


def test_the_corrupt_disk_nemesis_picks_a_broker_hosting_the_partition_and_the_last_record(
        ) -> None:
    """The nemesis draws a data-topic partition and one of the brokers the cluster first
    placed it on (partition p on brokers p+1, p+2, ... mod n), offset -1; each entry is a
    valid scripted step (a shrunk plan is loaded again)."""
    sc = load("default", ['faults.nemesis=["corrupt_disk"]', "faults.interval_s=1.0",
                          "topics[0].replication.factor=2", "cluster.brokers=4"])
    plan = generate(sc, random.Random(5))
    assert len(plan) >= 5 and all(f["fault"] == "corrupt_disk" for f in plan)
    for f in plan:
        p = int(f["topic_partition"].rpartition("-")[2])
        assert f["target"] in (f"broker-{p % 4 + 1}", f"broker-{(p + 1) % 4 + 1}")
        assert f["offset"] == -1
    targets = {f["target"] for f in plan}
    assert len(targets) >= 2
    steps = ", ".join("{" + ", ".join(f"{k}={v!r}".replace("'", '"') for k, v in f.items())
                      + "}" for f in plan)
    again = load("default", ["topics[0].replication.factor=2", "cluster.brokers=4",
                             f"faults.plan=[{steps}]"])
    assert [{k: g[k] for k in f} for f, g in zip(plan, again["faults"]["plan"],
                                                  strict=True)] == plan
