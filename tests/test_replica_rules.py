"""The replica state machine, fed messages directly (sans-IO), read as the seeds' rules.

The LEO and HW update rules of docs/eras.md, section 1 (1.2, 1.3, 1.6). Offsets are
Kafka's: LEO and HW are exclusive (HW = 8 means offsets 0..7 are committed).
"""

from __future__ import annotations

from typing import Any

from actors.core import Emit, Send
from actors.eras import rules_for
from actors.log import LeaderEpochCache, PartitionLog, Segment
from actors.messages import (
    NONE,
    NOT_ENOUGH_REPLICAS,
    Fetch,
    FetchResponse,
    PartitionState,
    Produce,
    ProduceResponse,
)
from actors.replica import Replica, ReplicaConfig

PRODUCER = ("producer-0", "producer")


def leader(era: str = "4.1", min_isr: int = 1, isr: tuple[int, ...] = (1, 2, 3),
           bugs: tuple[str, ...] = ()) -> Replica:
    r = Replica("broker-1", 1, PartitionLog("orders", 0), rules_for(era, bugs),
                ReplicaConfig(min_insync_replicas=min_isr), clean_start=True)
    r.start()
    r.drain()
    r.handle(PartitionState(1, "orders", 0, (1, 2, 3), 1, 1, isr, (), 1, False), ("x", "y"))
    r.drain()
    return r


def follower(broker: int = 2) -> Replica:
    r = Replica(f"broker-{broker}", broker, PartitionLog("orders", 0), rules_for("4.1"),
                ReplicaConfig(), clean_start=True)
    r.start()
    r.handle(PartitionState(1, "orders", 0, (1, 2, 3), 1, 1, (1, 2, 3), (), 1, False),
             ("x", "y"))
    r.drain()
    return r


def produce(r: Replica, n: int, acks: int = -1, at_ms: int = 0) -> list[Any]:
    r.now_us = at_ms * 1000
    recs = tuple((-1, f"v{i}", -1, 0, -1, -1, None) for i in range(n))
    r.handle(Produce("orders", 0, acks, recs, 30000, 7), PRODUCER)
    return r.drain()


def fetch(r: Replica, replica: int, offset: int, at_ms: int = 0,
          last_epoch: int = -1) -> list[Any]:
    r.now_us = at_ms * 1000
    r.handle(Fetch("orders", 0, replica, -1, offset, last_epoch, r.leader_epoch, 0, 1000, 1),
             (f"broker-{replica}", "orders-0"))
    return r.drain()


def hw_updates(effects: list[Any]) -> list[dict[str, Any]]:
    return [e.fields for e in effects if isinstance(e, Emit) and e.event == "hw_update"]


def test_seed000_hw_7_leo_12_commits_offsets_up_to_the_hw_only() -> None:
    """Seed 000: HW and LEO; records below the HW are committed, the rest are not."""
    r = leader()
    produce(r, 12)
    fetch(r, 2, 8)
    fetch(r, 3, 8)
    assert (r.hw, r.leo) == (8, 12)        # the seed's "HW 7" is Kafka's exclusive 8
    r.handle(Fetch("orders", 0, -1, -1, 0, -1, 1, 0, 100, 2), ("consumer-g-0", "consumer"))
    resp = [e.msg for e in r.drain() if isinstance(e, Send)][0]
    assert [rec[0] for rec in resp.records] == list(range(8))   # 8..11 are not readable


def test_leader_updates_a_followers_leo_before_answering_its_fetch() -> None:
    r = leader()
    produce(r, 5)
    effects = fetch(r, 2, 3)
    assert r.followers[2].log_end_offset == 3
    resp = [e.msg for e in effects if isinstance(e, Send)][0]
    assert isinstance(resp, FetchResponse) and resp.records[0][0] == 3


def test_leader_hw_is_min_leo_over_the_isr_and_rises_on_follower_fetch() -> None:
    r = leader()
    produce(r, 10)
    assert r.hw == 0
    fetch(r, 2, 10)
    assert r.hw == 0          # broker 3 (in the ISR) is still at 0
    updates = hw_updates(fetch(r, 3, 6))
    assert r.hw == 6 and updates[-1]["reason"] == "follower_fetch"


def test_isr_of_just_the_leader_advances_the_hw_on_produce() -> None:
    r = leader(isr=(1,))
    updates = hw_updates(produce(r, 4))
    assert r.hw == 4 and updates[-1]["reason"] == "produce"


def test_follower_hw_is_min_of_own_leo_and_leader_hw() -> None:
    f = follower()
    corr = f._outstanding
    recs = tuple((i, f"v{i}", 1, 0, -1, -1, None) for i in range(5))
    f.handle(FetchResponse("orders", 0, NONE, 9, 12, 0, recs, -1, -1, 1, corr),
             ("broker-1", "orders-0"))
    assert (f.leo, f.hw) == (5, 5)
    corr = f._outstanding
    more = tuple((i, f"v{i}", 1, 0, -1, -1, None) for i in range(5, 12))
    f.handle(FetchResponse("orders", 0, NONE, 9, 12, 0, more, -1, -1, 1, corr),
             ("broker-1", "orders-0"))
    assert (f.leo, f.hw) == (12, 9)


def test_follower_hw_lags_the_leaders_by_one_fetch_round() -> None:
    """The leader learns the follower's LEO from fetch N+1, so the HW that fetch makes
    reaches the follower only in the response to fetch N+1 (docs/eras.md 1.6)."""
    r = leader(isr=(1, 2))
    produce(r, 3)
    first = [e.msg for e in fetch(r, 2, 0) if isinstance(e, Send)][0]
    assert first.high_watermark == 0 and len(first.records) == 3   # data, old HW
    fetch(r, 2, 3)                                                  # parked: nothing new
    assert r.hw == 3                                                # the leader moved
    second = [e.msg for e in produce(r, 1) if isinstance(e, Send)
              and isinstance(e.msg, FetchResponse)]
    assert second[0].high_watermark == 3 and second[0].records[0][0] == 3


def test_acks_all_is_acknowledged_exactly_when_the_hw_passes_the_last_offset() -> None:
    r = leader(isr=(1, 2))
    effects = produce(r, 2)
    assert not [e for e in effects if isinstance(e, Send)
                and isinstance(e.msg, ProduceResponse)]
    fetch(r, 2, 1)
    assert not [e for e in r.drain() if isinstance(e, Send)]
    acks = [e.msg for e in fetch(r, 2, 2) if isinstance(e, Send)
            and isinstance(e.msg, ProduceResponse)]
    assert acks and acks[0].error == NONE and acks[0].base_offset == 0


def test_acks_all_below_min_isr_is_rejected_before_append() -> None:
    r = leader(min_isr=2, isr=(1,))
    resp = [e.msg for e in produce(r, 1) if isinstance(e, Send)][0]
    assert resp.error == NOT_ENOUGH_REPLICAS and r.leo == 0


def test_hw_does_not_advance_under_min_isr_from_3_7_but_did_in_2_8() -> None:
    strict = leader("4.1", min_isr=2, isr=(1,))
    produce(strict, 3, acks=1)
    assert strict.hw == 0
    old = leader("2.8", min_isr=2, isr=(1,))
    produce(old, 3, acks=1)
    assert old.hw == 3


def test_isr_expands_only_when_follower_reaches_hw_and_leader_epoch_start() -> None:
    r = leader(isr=(1, 3))
    produce(r, 4)
    fetch(r, 3, 4)
    assert r.hw == 4 and r.leso == 0
    fetch(r, 2, 2)
    assert r.pending_isr is None                    # LEO 2 < HW 4
    effects = fetch(r, 2, 4)
    assert r.pending_isr == (1, 2, 3)
    assert any(isinstance(e, Emit) and e.event == "alter_partition" for e in effects)
    assert r.maximal_isr == (1, 2, 3)               # KIP-497: counts at once


def test_kafka_7128_expansion_without_the_epoch_start_check() -> None:
    """A new leader with a stale HW: LEO >= HW but < LESO must not join (KAFKA-7128)."""
    for bugs, joins in (((), False), (("KAFKA-7128",), True)):
        r = Replica("broker-1", 1, PartitionLog("orders", 0), rules_for("4.1", bugs),
                    ReplicaConfig(), clean_start=True)
        r.start()
        r.log.append((0, "m", 1, 0, -1, -1, None), 1 << 30, 1 << 40, 0)
        r.handle(PartitionState(1, "orders", 0, (1, 2, 3), 1, 2, (1, 2), (), 2, False),
                 ("x", "y"))
        r.drain()
        assert r.leso == 1 and r.hw == 0
        fetch(r, 3, 0)
        assert (r.pending_isr is not None) == joins


def test_isr_shrinks_a_follower_that_has_not_caught_up_within_the_lag() -> None:
    from actors.messages import Tick
    r = leader(isr=(1, 2, 3))
    produce(r, 5, at_ms=0)
    fetch(r, 2, 5, at_ms=100)
    r.now_us = 40_000 * 1000
    r.handle(Tick("isr_expiration", 0, 0), r.address)
    assert r.pending_isr == (1, 2)                  # 3 never fetched: out of sync
    assert r.isr == (1, 2, 3)                       # shrinks take effect on commit


def test_leader_epoch_cache_end_offset_for_follows_kafka() -> None:
    c = LeaderEpochCache([(0, 0), (1, 5), (3, 9)])
    assert c.end_offset_for(3, 12) == (3, 12)       # latest epoch: the LEO
    assert c.end_offset_for(1, 12) == (1, 9)        # start of the next epoch
    assert c.end_offset_for(2, 12) == (1, 9)        # KIP-279: the epoch it belongs to
    assert c.end_offset_for(-1, 12) == (-1, -1)
    c.assign(2, 7)                                  # monotonic: drops (3, 9)
    assert c.entries == [(0, 0), (1, 5), (2, 7)]


def test_seed002_segments_0_11_23_with_log_start_25_make_the_first_two_deletable() -> None:
    log = PartitionLog("orders", 0)
    for i in range(30):
        log.records.append((i, f"v{i}", 0, 0, -1, -1, None))
    log.segments = [Segment(0, 100), Segment(11, 100), Segment(23, 100)]
    gone = log.delete_segments_below(25)
    assert [s.base_offset for s in gone] == [0, 11]
    assert log.segments[0].base_offset == 23 and log.base == 23


def test_a_leader_that_appended_nothing_drops_its_epoch_entry_when_a_fetch_diverges() -> None:
    """UnifiedLog.truncateTo cuts the epoch cache at the LEO even when no record is cut.

    Broker 3 is elected (epoch 1, start offset 0 in its cache), appends nothing and loses the
    leadership to broker 2, whose log is epoch 0 up to offset 89. Its fetch says "last
    epoch 1"; the leader answers "diverging: epoch 0 ends at 89". Without the cut, every
    later fetch says "last epoch 1" again and the follower never catches up (found by a
    swarm campaign: safe-acks-all seed 5118, no_convergence).
    """
    r = Replica("broker-3", 3, PartitionLog("orders", 0), rules_for("4.1"), ReplicaConfig(),
                clean_start=True)
    r.start()
    r.handle(PartitionState(2, "orders", 0, (2, 3, 1), 3, 1, (1, 2, 3), (), 3, False),
             ("x", "y"))
    assert r.role == "leader" and r.log.epochs.entries == [(1, 0)]
    r.handle(PartitionState(2, "orders", 0, (2, 3, 1), 2, 2, (1, 2), (), 4, False),
             ("x", "y"))
    first = [e.msg for e in r.drain() if isinstance(e, Send) and isinstance(e.msg, Fetch)]
    assert first[-1].last_fetched_epoch == 1
    r.handle(FetchResponse("orders", 0, NONE, 89, 89, 0, (), 0, 89, 2,
                           first[-1].correlation), ("broker-2", "orders-0"))
    assert r.log.epochs.entries == []
    again = [e.msg for e in r.drain() if isinstance(e, Send) and isinstance(e.msg, Fetch)]
    assert again and again[-1].fetch_offset == 0 and again[-1].last_fetched_epoch != 1


def test_follower_whose_leader_epoch_request_times_out_asks_again_before_fetching() -> None:
    """KIP-101/279 eras: the truncation step is not skipped when its OffsetsForLeaderEpoch
    is lost (a partitioned leader): the follower asks again rather than fetching from its
    own LEO with a divergent suffix (S3 random mode, seed 27, diverged on 2.0 and 2.1)."""
    from actors.core import Timer
    from actors.messages import OffsetsForLeaderEpoch, Tick

    r = Replica("broker-2", 2, PartitionLog("orders", 0), rules_for("2.0"), ReplicaConfig(),
                clean_start=True)
    r.start()
    r.handle(PartitionState(1, "orders", 0, (1, 2, 3), 1, 1, (1, 2, 3), (), 1, False),
             ("x", "y"))
    out = r.drain()
    assert [e.msg for e in out if isinstance(e, Send)
            and isinstance(e.msg, OffsetsForLeaderEpoch)]
    timeouts = [e.msg for e in out if isinstance(e, Timer) and isinstance(e.msg, Tick)
                and e.msg.kind == "fetch_timeout"]
    r.handle(timeouts[-1], ("broker-2", "orders-0"))
    sent = [e.msg for e in r.drain() if isinstance(e, Send)]
    assert [type(m).__name__ for m in sent] == ["OffsetsForLeaderEpoch"]


def test_log_truncate_on_out_of_range_low_records_the_leo_before_the_cut() -> None:
    """Issue 17 (7): a follower below the leader's log start offset restarts its log there;
    the ``log_truncate`` event says where it was (``old_leo`` 3), then where it is (5)."""
    f = follower()
    corr = f._outstanding
    recs = tuple((i, f"v{i}", 1, 0, -1, -1, None) for i in range(3))
    f.handle(FetchResponse("orders", 0, NONE, 0, 3, 0, recs, -1, -1, 1, corr),
             ("broker-1", "orders-0"))
    f.drain()
    corr = f._outstanding
    f.handle(FetchResponse("orders", 0, "OFFSET_OUT_OF_RANGE", 5, 9, 5, (), -1, -1, 1, corr),
             ("broker-1", "orders-0"))
    cuts = [e.fields for e in f.drain() if isinstance(e, Emit) and e.event == "log_truncate"]
    assert [(c["old_leo"], c["new_leo"]) for c in cuts] == [(3, 5)]
    assert (f.leo, f.log.log_start_offset, f.hw) == (5, 5, 5)


def test_zookeeper_eras_keep_the_isr_when_the_conditional_write_fails() -> None:
    """Before 2.7 the leader wrote the ISR to ZooKeeper conditionally on its zkVersion
    (2.1.0 ``Partition.updateIsr``: "Cached zkVersion ... not equal to that in zookeeper,
    skip updating ISR"). isrlab's controller stands for ZooKeeper: the failed change leaves
    the committed ISR and nothing pending, and the next fetch tries again."""
    from actors.messages import AlterPartition, AlterPartitionResponse

    r = Replica("broker-1", 1, PartitionLog("orders", 0), rules_for("2.1"), ReplicaConfig(),
                clean_start=True)
    r.start()
    for i in range(10):
        r.log.append((i, f"v{i}", 4, 0, -1, -1, None), 1 << 30, 1 << 40, 0)
    r.handle(PartitionState(1, "orders", 0, (1, 2), 1, 5, (1,), (), 1, False), ("x", "y"))
    r.drain()
    fetch(r, 2, 10)
    r.handle(AlterPartitionResponse("orders", 0, "INVALID_UPDATE_VERSION", (1,), 5, 1),
             ("controller", "controller"))
    r.drain()
    assert r.isr == r.maximal_isr == (1,) and r.pending_isr is None
    assert any(isinstance(e, Send) and isinstance(e.msg, AlterPartition)
               for e in fetch(r, 2, 10))


def test_a_replica_added_to_the_assignment_at_the_same_epoch_can_fetch_at_once() -> None:
    """Issue 17 (3): a leader told of a new assignment without a new leader epoch (the
    controller adds broker 4) starts an empty follower state for it, as
    ``Partition.updateAssignmentAndIsr`` does, so broker 4's first fetch is served instead
    of being refused as NOT_LEADER_OR_FOLLOWER; a replica that left is forgotten."""
    r = leader(isr=(1, 2, 3))
    produce(r, 3, acks=1)
    r.handle(PartitionState(1, "orders", 0, (1, 2, 4), 1, 1, (1, 2), (), 2, False),
             ("x", "y"))
    r.drain()
    assert sorted(r.followers) == [2, 4] and r.followers[4].log_end_offset == -1
    resp = [e.msg for e in fetch(r, 4, 0) if isinstance(e, Send)
            and isinstance(e.msg, FetchResponse)][0]
    assert resp.error == NONE and len(resp.records) == 3
    assert r.followers[4].log_end_offset == 0


def test_a_follower_keeps_no_isr_of_its_own() -> None:
    """Issue 17 (7): ``Partition.makeFollower`` sets the ISR to the empty set: only the
    leader's view of the ISR is kept."""
    f = follower()
    assert f.role == "follower" and f.isr == () and f.maximal_isr == ()


def test_a_consumer_fetch_at_the_hw_waits_its_own_fetch_max_wait_ms() -> None:
    """``DelayedFetch`` waits the request's ``max_wait_ms``: a consumer's
    ``fetch.max.wait.ms``, not the leader broker's ``replica.fetch.wait.max.ms`` (which a
    follower's fetch waits); then it is answered empty."""
    from actors.core import Timer
    r = leader()   # replica.fetch.wait.max.ms = 500 by default
    consumer = ("consumer-g-0", "consumer")
    r.handle(Fetch("orders", 0, -1, -1, 0, -1, 1, 0, 100, 2, 120), consumer)
    (wait,) = [e for e in r.drain() if isinstance(e, Timer)]
    assert wait.delay_us == 120_000
    r.now_us = 120_000
    r.handle(wait.msg, r.address)
    (resp,) = [e.msg for e in r.drain() if isinstance(e, Send)]
    assert resp.correlation == 2 and resp.records == ()
    # a follower at the leader's LEO: parked for replica.fetch.wait.max.ms
    waits = [e.delay_us for e in fetch(r, 2, 0) if isinstance(e, Timer)]
    assert waits == [500_000]
