"""Topics created and partitions added mid-run (issue 19, item 4): ``create_topic`` and
``add_partitions`` steps, the controller's placement, replicas created on running brokers,
producers that block until a topic exists and repartition keys when it grows, and consumer
groups that rebalance when their metadata shows more partitions. The controller's rules alone
are ``tests/conformance/test_create_partitions.py``."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import catalog_events

from actors.partitioner import default_partition
from emulator.scenario import ScenarioError, load
from traces.checker import check_events

Event = dict[str, Any]
SCENARIO = "add-partitions-under-load"


_events = catalog_events


def _of(evs: tuple[Event, ...], event: str, **match: Any) -> list[Event]:
    return [e for e in evs if e["event"] == event and all(e.get(k) == v for k, v in match.items())]


def test_a_topic_created_mid_run_is_written_only_after_it_exists_and_loses_nothing() -> None:
    """payments does not exist until its create_topic step at 4 s: its producer blocks
    (``produce_blocked``), sends nothing before the topic is created, then produces at its
    rate; every acknowledged record is in the final logs and its group reads both
    partitions to the end."""
    evs = _events(SCENARIO)
    (created,) = _of(evs, "create_partitions", topic="payments")
    assert (created["request"], created["old"], created["count"], created["error"]) == (
        "CreateTopics", 0, 2, "NONE")
    assert _of(evs, "produce_blocked", topic="payments")
    sends = _of(evs, "produce_send", topic="payments")
    assert sends and min(e["ts_us"] for e in sends) > created["ts_us"]
    assert {e["partition"] for e in sends} == {0, 1}
    res = check_events(evs)
    assert res.anomalies["lost_acked_write"] == 0 and res.expect_met
    acked = {e["value"] for e in _of(evs, "produce_ack", topic="payments")}
    read = {e["value"] for e in _of(evs, "consume", topic="payments")}
    assert acked and acked <= read


def test_new_partitions_start_with_every_placed_replica_in_the_isr_and_epoch_zero() -> None:
    """orders 3 -> 6: partitions 3..5 get RF 3 (that of orders-0), a rotation over the
    registered brokers, ISR = the unfenced replicas (broker 2 is down but not fenced yet, so
    it is placed and counted), leader the first, leader and partition epoch 0; every listed
    broker that is up creates the replica with an empty log."""
    evs = _events(SCENARIO)
    (grown,) = _of(evs, "create_partitions", topic="orders")
    assert (grown["old"], grown["count"], grown["replicas"]) == (
        3, 6, [[4, 1, 2], [1, 2, 3], [2, 3, 4]])
    for p, replicas in zip((3, 4, 5), grown["replicas"], strict=True):
        (first,) = [e for e in _of(evs, "leader_elected", topic="orders", partition=p)
                    if e["leader_epoch"] == 0]
        assert (first["leader"], first["isr"], first["partition_epoch"]) == (
            replicas[0], replicas, 0)
        (ar,) = _of(evs, "replicas_change", topic="orders", partition=p)
        assert (ar["old"], ar["new"], ar["reason"]) == ([], replicas, "create")
        made = {e["replica"] for e in _of(evs, "replica_created", topic="orders", partition=p)
                if e["ts_us"] < 12_000_000}
        assert made == set(replicas) - {2}   # broker 2 is down until 12 s


def test_keyed_records_move_to_the_partition_their_key_maps_to_over_the_new_count() -> None:
    """Before the producer's metadata shows 6 partitions a key goes to
    ``murmur2(key) % 3``, after it to ``% 6``; ``partitions_change`` lists exactly the keys
    seen so far whose partition changed; the order checks (per partition and producer)
    find nothing in the move."""
    evs = _events(SCENARIO)
    (change,) = _of(evs, "partitions_change", topic="orders", producer=0)
    assert (change["old"], change["new"]) == (3, 6)
    at = change["seq"]
    seen: set[str] = set()
    for e in _of(evs, "produce_send", topic="orders"):
        n = 3 if e["seq"] < at else 6
        assert e["partition"] == default_partition(e["key"].encode(), n)
        if e["seq"] < at:
            seen.add(e["key"])
    moved = {k for k in seen
             if default_partition(k.encode(), 3) != default_partition(k.encode(), 6)}
    assert set(change["moved_keys"]) == moved and moved
    for k, (was, now) in change["moved_keys"].items():
        assert (was, now) == (default_partition(k.encode(), 3), default_partition(k.encode(), 6))
    # order is judged per partition and producer: a key that moved is no order violation
    res = check_events(evs)
    assert (res.anomalies["nonmonotonic_send"], res.anomalies["nonmonotonic_poll"],
            res.anomalies["poll_skip"]) == (0, 0, 0)


def test_the_group_rebalances_over_the_new_partitions_once_a_member_sees_them() -> None:
    """A member whose metadata shows 6 partitions rejoins; the coordinator's next
    generation spreads all six and every partition is read to the end."""
    evs = _events(SCENARIO)
    first_seen = min(e["ts_us"] for e in _of(evs, "partitions_change", topic="orders",
                                                group="g0"))
    later = [e for e in _of(evs, "rebalance", group="g0") if e["ts_us"] >= first_seen]
    assert later
    last = later[-1]
    assert sorted(p for ps in last["assignment"].values() for p in ps) == list(range(6))
    for p in range(3, 6):
        assert _of(evs, "consume", topic="orders", partition=p)
    assert all(e["converged"] for e in _of(evs, "convergence"))


def test_topic_steps_are_checked_against_the_topics_at_load() -> None:
    """create_topic names a topic with create_at_start = false; add_partitions an increase
    of a known topic; each error names the plan entry."""
    bad = [
        ('faults.plan[2].partitions=3', "faults.plan[2].partitions"),
        ('faults.plan[2].target="nosuch"', "faults.plan[2].target"),
        ('topics[1].create_at_start=true', "faults.plan[0].target"),
        ('faults.plan[0].partitions=4', "faults.plan[0].partitions"),
    ]
    for override, field in bad:
        with pytest.raises(ScenarioError) as err:
            load(SCENARIO, [override])
        assert field in str(err.value), (override, str(err.value))


def test_a_request_while_the_controller_is_down_waits_for_it() -> None:
    """Every controller voter is down from 7 s to 10 s: the add_partitions step at 8 s is
    retried by the admin client and the partitions are created once the voters are back
    and have elected a leader (one voter down would only move the leadership)."""
    evs = _events(SCENARIO, 'faults.plan=[{at_s=7.0, fault="crash", target=["controller-3000",'
                            ' "controller-3001", "controller-3002"], duration_s=3.0}, '
                            '{at_s=8.0, fault="add_partitions", target="orders", '
                            'partitions=6}]')
    (grown,) = _of(evs, "create_partitions", topic="orders")
    elected = [e for e in evs if e["event"] == "raft_transition" and e.get("to") == "leader"
               and e["ts_us"] >= 10_000_000]
    assert elected, "the voters elect a leader once they are back"
    assert grown["error"] == "NONE" and elected[0]["ts_us"] <= grown["ts_us"] < 13_000_000
    assert check_events(evs).expect_met


def test_the_add_partitions_nemesis_grows_data_topics_one_or_two_at_a_time() -> None:
    """Each drawn step names a data topic (never one a create_topic step makes) and raises
    its count by one or two over the previous step, at most to four times the first."""
    import random

    from faults.nemesis import generate

    sc = load(SCENARIO, ["faults.plan=[]", 'faults.nemesis=["add_partitions"]',
                         "faults.interval_s=1.0", "duration_s=60"])
    plan = generate(sc, random.Random(3))
    counts = [e["partitions"] for e in plan]
    assert plan and all(e["fault"] == "add_partitions" and e["target"] == "orders"
                        for e in plan)
    assert all(1 <= b - a <= 2 for a, b in zip([3, *counts], counts, strict=False))
    assert max(counts) <= 12


def test_random_growth_under_faults_keeps_every_acknowledged_write() -> None:
    """add_partitions drawn with kills and partitions (acks=all, min ISR 2, within the
    fault budget), invariants on: nothing acknowledged is lost, every partition converges."""
    evs = _events(SCENARIO, "faults.plan=[]", "invariants=true",
                  'faults.nemesis=["add_partitions", "kill", "partition", "kill_controller"]',
                  "faults.interval_s=3.0")
    grown = [e for e in _of(evs, "create_partitions", topic="orders") if e["error"] == "NONE"]
    assert grown
    res = check_events(evs)
    assert res.expect_met, (res.forbidden_found, res.missing_expected)


def test_added_partitions_take_the_replication_factor_and_configs_of_the_first() -> None:
    """``createPartitions`` reads the replication factor from the first partition's replica
    list and the configs from the topic: RF 2, min ISR 2, unclean election on carry over;
    the rotation starts partition ``p`` at the ``p``-th usable broker, as the cluster's
    own placement does."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))
    from test_create_partitions import _add_partitions, _part
    from test_replication_control import Ctx

    ctx = Ctx((1, 2, 3, 4), [(1, 2)], min_isr=2)
    ctx.c.store.partitions[("foo", 0)].unclean = True
    ev = _add_partitions(ctx, "foo", 4)
    assert ev["replicas"] == [[2, 3], [3, 4], [4, 1]]
    for p in (1, 2, 3):
        rec = _part(ctx, "foo", p)
        assert (rec.min_isr, rec.unclean, len(rec.replicas)) == (2, True, 2)
