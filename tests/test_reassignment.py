"""Partition reassignment in whole runs (issue 19, item 1): new replicas enter through the
OSR, join the ISR under the normal rules, the old ones leave list and ISR once every new one
is in, and a broker that is no longer a replica deletes its log — even one that was down when
it was removed. The controller's rules alone are
``tests/conformance/test_partition_reassignment.py``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import catalog_events

from actors.messages import NONE, AlterPartitionReassignments, AlterPartitionReassignmentsResponse
from actors.reassignment import Assignment, start
from emulator.scenario import ScenarioError, load
from traces.checker import check_events

sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))

from test_replication_control import Ctx  # noqa: E402

Event = dict[str, Any]


def _reassign(ctx: Ctx, *parts: tuple[int, tuple[int, ...]]) -> dict[int, str]:
    """AlterPartitionReassignments from an admin client: per partition, its error."""
    ctx.c.handle(AlterPartitionReassignments(tuple(("foo", i, r) for i, r in parts), 7),
                 ("admin", "admin"))
    (resp,) = [e.msg for e in ctx.c.drain() if isinstance(getattr(e, "msg", None),
                                                          AlterPartitionReassignmentsResponse)]
    return {p: err for _, p, err in resp.results}


_events = catalog_events


def _of(evs: tuple[Event, ...], event: str, **match: Any) -> list[Event]:
    return [e for e in evs if e["event"] == event and all(e.get(k) == v for k, v in match.items())]


def test_new_replicas_go_from_the_osr_into_the_isr_before_the_old_ones_leave() -> None:
    """orders-0 [1,2,3] -> [4,5,6] under acks=all load: each new replica is created empty
    after the move starts, enters the ISR only after that (never before it fetched), the
    move completes only when all three are in, the old replicas then delete their logs and
    none of them leads again; nothing acknowledged is lost."""
    evs = _events("reassign-under-load")
    start = _of(evs, "reassignment", topic="orders", partition=0, phase="start")[0]
    done = _of(evs, "reassignment", topic="orders", partition=0, phase="complete")[0]
    assert start["replicas"] == [4, 5, 6, 1, 2, 3] and start["isr"] == [1, 2, 3]
    assert done["replicas"] == [4, 5, 6] and done["isr"] == [4, 5, 6]
    created = {e["replica"]: e for e in _of(evs, "replica_created", topic="orders", partition=0)}
    assert sorted(created) == [4, 5, 6]
    assert all(e["seq"] > start["seq"] and e["leo"] == 0 for e in created.values())
    joined: dict[int, Event] = {}
    for e in _of(evs, "isr_change", topic="orders", partition=0):
        for b in set(e["new"]) - set(e["old"]):
            joined.setdefault(b, e)
    for b in (4, 5, 6):   # the last one joins in the same change that completes the move
        assert created[b]["seq"] < joined[b]["seq"], b
        assert joined[b]["ts_us"] <= done["ts_us"], b
    # OSR -> ISR: before completing, at least one step shows a new replica still outside
    steps = _of(evs, "reassignment", topic="orders", partition=0, phase="progress")
    assert any(set(s["replicas"]) - set(s["isr"]) & {4, 5, 6} for s in steps)
    deleted = _of(evs, "replica_deleted", topic="orders", partition=0)
    assert sorted(e["replica"] for e in deleted) == [1, 2, 3]
    assert all(e["seq"] > done["seq"] for e in deleted)
    leaders = [e["leader"] for e in _of(evs, "leader_elected", topic="orders", partition=0)
               if e["seq"] > done["seq"]]
    assert leaders and not set(leaders) & {1, 2, 3}
    finals = {e["replica"] for e in _of(evs, "final_log", topic="orders", partition=0)}
    assert finals == {4, 5, 6}
    result = check_events(evs)
    assert result.expect_met
    assert result.anomalies["lost_acked_write"] == result.anomalies["outside_assignment"] == 0


def test_a_replica_removed_while_its_broker_was_down_is_deleted_when_it_returns() -> None:
    """orders-1 [2,3,4] -> [5,3,4] issued while broker 2 is down: the move completes without
    it (a removing replica need not catch up: broker 2 is not in the ISR the move ends with);
    when broker 2 restarts it still has the log, learns from the metadata that it is no
    longer a replica, and deletes it. (The move ends about when broker 2 returns: broker
    5's ISR join waits for broker 2's session to end and for its own catch-up.)"""
    evs = _events("reassign-under-load")
    crash = next(e for e in evs if e["event"] == "node_crash" and e["node"] == "broker-2")
    restart = next(e for e in evs if e["event"] == "node_restart" and e["node"] == "broker-2")
    start = _of(evs, "reassignment", topic="orders", partition=1, phase="start")[0]
    done = _of(evs, "reassignment", topic="orders", partition=1, phase="complete")[0]
    assert crash["seq"] < start["seq"] < restart["seq"] and start["removing"] == [2]
    assert 2 not in done["isr"] and done["removed"] == [2]
    (deleted,) = _of(evs, "replica_deleted", topic="orders", partition=1)
    assert deleted["replica"] == 2 and deleted["seq"] > max(restart["seq"], done["seq"])
    assert deleted["leo"] > 0


def test_a_cancel_needing_an_unclean_step_loses_writes_only_when_the_topic_allows_it() -> None:
    """reassign-cancel-unclean: the ISR holds only the adding replica 3 when the move is
    cancelled. With unclean elections allowed the revert puts broker 1 back as the ISR alone
    and 3 out of the replica list; the first original replica to return leads without what
    3 acknowledged (broker 2 here, in an unclean election); with them off the cancel is
    refused (INVALID_REPLICA_ASSIGNMENT), the move completes once broker 4 catches up, and
    nothing is lost."""
    bug = _events("reassign-cancel-unclean")
    (cancel,) = _of(bug, "reassignment", phase="cancel")
    assert cancel["replicas"] == [1, 2] and cancel["isr"] == [1] and cancel["unclean"] is True
    after = [e for e in _of(bug, "leader_elected", topic="orders")
             if e["seq"] > cancel["seq"] and e["leader"] >= 0]
    assert after[0]["leader"] in (1, 2)
    assert check_events(bug).anomalies["lost_acked_write"] > 0
    fixed = _events("reassign-cancel-unclean", "topics[0].unclean.leader.election.enable=false")
    (refused,) = _of(fixed, "reassignment", phase="rejected")
    assert refused["error"] == "INVALID_REPLICA_ASSIGNMENT"
    assert _of(fixed, "reassignment", phase="complete")[0]["replicas"] == [3, 4]
    assert check_events(fixed).anomalies["lost_acked_write"] == 0


def test_a_timed_reassign_is_cancelled_when_its_duration_ends_unfinished() -> None:
    """``duration_s`` on a reassign step: ``--cancel`` then, if it has not completed. Here the
    new replica's fetcher is stalled, so the move is still running and is reverted."""
    evs = _events("reassign-under-load", 'faults.plan=[{at_s = 10.0, fault = "reassign", '
                  'target = "orders-0", replicas = [4, 5, 6], duration_s = 3.0}, '
                  '{at_s = 9.0, fault = "stall_fetcher", target = "broker-5", '
                  'duration_s = 20.0}]')
    phases = [e["phase"] for e in _of(evs, "reassignment", topic="orders", partition=0)]
    assert phases[0] == "start" and "cancel" in phases and "complete" not in phases
    assert _of(evs, "reassignment", topic="orders", partition=0, phase="cancel")[0][
        "replicas"] == [1, 2, 3]
    assert sorted(e["replica"] for e in _of(evs, "replica_deleted", topic="orders",
                                            partition=0)) == [4, 5, 6]


def test_a_reassign_issued_while_the_controller_is_down_waits_for_it() -> None:
    """The admin client retries a call that finds no controller every ``retry.backoff.ms``
    until ``default.api.timeout.ms`` (``KafkaAdminClient``): a reassignment issued while
    every controller voter is down starts when they are back (before, it was dropped
    unseen); one still without a controller after 60 s is traced as timed out. (One voter
    down would only move the leadership to another.)"""
    voters = ["controller-3000", "controller-3001", "controller-3002"]
    plan = (f'faults.plan=[{{at_s = 9.0, fault = "crash", target = {voters}, '
            'duration_s = 4.0}, {at_s = 10.0, fault = "reassign", target = "orders-0", '
            'replicas = [4, 5, 6]}]').replace("'", '"')
    evs = _events("reassign-under-load", plan)
    (back,) = [e for e in evs if e["event"] == "fault" and e["phase"] == "stop"
               and e["target"] == voters]
    (asked,) = _of(evs, "alter_reassignments")
    assert asked["ts_us"] >= back["ts_us"] and asked["results"] == ["orders-0:NONE"]
    assert _of(evs, "reassignment", topic="orders", partition=0, phase="complete")
    # the controller down past the end of a longer, lighter workload phase
    never = _events("reassign-under-load", plan.replace("duration_s = 4.0", "duration_s = 70.0"),
                    "duration_s=75.0", "heal_s=5.0", "producers[0].rate=20")
    (gave_up,) = _of(never, "alter_reassignments")
    assert gave_up["node"] == "sim" and gave_up["results"] == ["orders-0:TIMEOUT"]
    assert gave_up["ts_us"] == 70_000_000   # 60 s after it was issued
    assert not _of(never, "reassignment", topic="orders", partition=0)


@pytest.mark.parametrize("step, field, why", [
    ('{at_s = 1, fault = "reassign", target = "orders-0"}', "replicas", "target replicas"),
    ('{at_s = 1, fault = "reassign", target = "orders-0", replicas = [1, 1]}', "replicas",
     "duplicate"),
    ('{at_s = 1, fault = "reassign", target = "orders-0", replicas = [7]}', "replicas",
     "not a broker id"),
    ('{at_s = 1, fault = "reassign", target = "orders-9", replicas = [1]}', "target",
     "no partition"),
    ('{at_s = 1, fault = "cancel_reassign", target = "orders-0", replicas = [1]}', "replicas",
     "takes no replicas"),
])
def test_a_malformed_reassign_step_is_refused_at_load_naming_its_field(
        step: str, field: str, why: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        load("default", [f"faults.plan=[{step}]"])
    assert f"faults.plan[0].{field}" in str(exc.value) and why in str(exc.value)


def test_eras_before_kip455_cannot_cancel_a_reassignment() -> None:
    with pytest.raises(ScenarioError) as exc:
        load("default", ['protocol="2.1"', 'faults.plan=[{at_s = 1, fault = "cancel_reassign",'
                         ' target = "orders-0"}]'])
    assert "KIP-455" in str(exc.value)


def test_the_reassign_nemesis_moves_partitions_and_a_safe_run_stays_clean() -> None:
    """The ``reassign`` nemesis under kills and partitions, acks=all, min ISR 2, RF 3 on 5
    brokers: partitions move (some cancelled), nothing forbidden shows."""
    moved = 0
    for seed in (1, 2, 3):
        evs = _events("safe-acks-all", "cluster.brokers=5",
                      'faults.nemesis=["reassign","kill","partition"]', "faults.interval_s=2.0",
                      seed=seed)
        moved += len(_of(evs, "reassignment", phase="complete"))
        result = check_events(evs)
        assert result.expect_met, (seed, result.forbidden_found)
    assert moved > 0


def test_cancelling_is_refused_when_it_needs_an_unclean_election_the_topic_forbids() -> None:
    """``cancelPartitionReassignment``: with only adding replicas in the ISR, the revert
    would put the first original replica back alone; unless the topic allows unclean
    elections that is INVALID_REPLICA_ASSIGNMENT and nothing changes. With it allowed, the
    first original replica is the ISR alone (and leads if it can)."""
    for unclean in (False, True):
        ctx = Ctx((1, 2, 3, 4), [(1, 2)])
        ctx.p().unclean = unclean
        _reassign(ctx, (0, (3, 4)))
        ctx.alter(1, (1, 2, 3))
        ctx.fence(1, 2)
        p = ctx.p()
        assert (p.isr, p.leader) == ((3,), 3)
        err = _reassign(ctx, (0, ()))
        if not unclean:
            assert err == {0: "INVALID_REPLICA_ASSIGNMENT"} and p.replicas == (3, 4, 1, 2)
        else:
            assert err == {0: NONE}
            assert (p.replicas, p.isr, p.adding, p.removing) == ((1, 2), (1,), (), ())
            assert p.leader == -1   # 1 and 2 are fenced: no original replica can lead
            ctx.unfence(1)
            assert (p.leader, p.isr) == (1, (1,))


def test_a_second_reassignment_back_to_the_original_replicas_keeps_the_first_adding_list(
) -> None:
    """KRaft keeps a partition's adding list when a new reassignment adds nothing
    (``changePartitionReassignment`` sets only non-empty lists): [1,2,3] to [4,5,6], then
    back to [1,2,3] while in progress, leaves adding [4,5,6] beside removing [4,5,6]. In
    3.7 (completion asks for the adding replicas) the move can never complete — they cannot
    be in the ISR without the removing ones — until it is cancelled; from 3.8 (KAFKA-15665:
    every target replica in the ISR) it completes at once. The ZooKeeper controller
    replaces the lists outright."""
    ctx = Ctx((1, 2, 3, 4, 5, 6), [(1, 2, 3)], era="3.7")
    _reassign(ctx, (0, (4, 5, 6)))
    _reassign(ctx, (0, (1, 2, 3)))
    p = ctx.p()
    assert (p.replicas, p.adding, p.removing) == ((1, 2, 3, 4, 5, 6), (4, 5, 6), (4, 5, 6))
    ctx.alter(1, (1, 2, 3, 4, 5, 6))
    assert p.assignment.reassigning and p.replicas == (1, 2, 3, 4, 5, 6)
    assert _reassign(ctx, (0, ())) == {0: NONE}
    assert (p.replicas, p.isr, p.adding, p.removing) == ((1, 2, 3), (1, 2, 3), (), ())
    ctx41 = Ctx((1, 2, 3, 4, 5, 6), [(1, 2, 3)])
    _reassign(ctx41, (0, (4, 5, 6)))
    _reassign(ctx41, (0, (1, 2, 3)))
    assert (ctx41.p().replicas, ctx41.p().adding, ctx41.p().removing) == ((1, 2, 3), (), ())
    zk = start(Assignment((1, 2, 3, 4, 5, 6), (4, 5, 6), (1, 2, 3)), (1, 2, 3), zk=True)
    assert zk == Assignment((1, 2, 3, 4, 5, 6), (), (4, 5, 6))


def test_zk_era_reassignment_bumps_the_leader_epoch_at_the_start_and_at_completion() -> None:
    """The ZooKeeper controller (``onPartitionReassignment``) sends the new replica set with
    the next leader epoch when the move starts (A1) and again when it completes (B3), here
    with leader 1 staying; KRaft bumps only when replicas leave the list."""
    for era, epochs in (("2.8", (1, 2)), ("4.1", (0, 1))):
        ctx = Ctx((1, 2, 3, 4), [(1, 2, 3)], era=era)
        _reassign(ctx, (0, (1, 2, 4)))
        seen = [ctx.p().leader_epoch]
        ctx.alter(1, (1, 2, 3, 4))
        seen.append(ctx.p().leader_epoch)
        assert tuple(seen) == epochs, era
        assert ctx.p().replicas == (1, 2, 4)


def test_a_move_that_starts_and_completes_at_once_reports_what_it_removed() -> None:
    """[1,2,3,4] to [1,2,4] with all four in the ISR starts and completes in one change:
    the ``complete`` step names the replica it removed (3), not the previous move's lists."""
    from actors.core import Emit
    ctx = Ctx((1, 2, 3, 4), [(1, 2, 3, 4)])
    ctx.c.handle(AlterPartitionReassignments((("foo", 0, (1, 2, 4)),), 1), ("admin", "admin"))
    steps = [e.fields for e in ctx.c.drain()
             if isinstance(e, Emit) and e.event == "reassignment"]
    assert [s["phase"] for s in steps] == ["start", "complete"]
    assert (steps[1]["removed"], steps[1]["added"], steps[1]["replicas"]) == ([3], [], [1, 2, 4])


@pytest.mark.parametrize("protocol, bugs, completes_short", [
    ("3.7", "[]", True), ("4.1", '["KAFKA-15665"]', True), ("4.1", "[]", False)])
def test_kafka15665_a_move_completes_while_a_kept_target_lags_only_before_the_fix(
        protocol: str, bugs: str, completes_short: bool) -> None:
    """KAFKA-15665: orders-0 [1,2,3] -> [3,4] while 3 lags. Before the fix the move
    completes as soon as 4 is in the ISR (ISR [4] alone, 1 and 2 delete their logs) and one
    power loss on 4 loses acknowledged writes; with it (3.8+), the move waits until 3 is
    back in the ISR and nothing is lost."""
    evs = _events("kafka15665-reassign-completes-short", f'protocol="{protocol}"',
                  f"bugs={bugs}")
    (start,) = _of(evs, "reassignment", phase="start")
    (done,) = _of(evs, "reassignment", phase="complete")
    lost = check_events(evs).anomalies["lost_acked_write"]
    if completes_short:
        # within 2 s of its start: 4 has joined, 3 is still far behind
        assert done["isr"] == [4] and done["ts_us"] - start["ts_us"] < 2_000_000 and lost > 0
    else:
        assert done["isr"] == [3, 4] and done["ts_us"] > 20_000_000 and lost == 0


def test_the_elr_can_elect_a_replica_a_reassignment_removed_and_added_back_empty() -> None:
    """elr-keeps-removed-replica: after the cancel, broker 3 is no replica but is in the
    ELR; added back (empty) it is elected from the ELR once the leader is fenced, and the
    acknowledged writes are gone. With the ELR kept within the replica list (the
    ELR-IN-REPLICAS fix) it is not: the partition waits for broker 1."""
    evs = _events("elr-keeps-removed-replica")
    (cancel,) = _of(evs, "reassignment", phase="cancel")
    elr_after_cancel = next(e for e in _of(evs, "partition_state", topic="orders")
                            if e["seq"] > cancel["seq"])["elr"]
    assert cancel["replicas"] == [1, 2] and elr_after_cancel == [3]
    recreated = [e for e in _of(evs, "replica_created", topic="orders", replica=3)
                 if e["seq"] > cancel["seq"]]
    elected = [e for e in _of(evs, "leader_elected", topic="orders") if e["election"] == "elr"]
    assert recreated and elected and elected[0]["leader"] == 3
    assert elected[0]["seq"] > recreated[0]["seq"]
    assert check_events(evs).anomalies["lost_acked_write"] > 0
    fixed = _events("elr-keeps-removed-replica", 'fixes=["ELR-IN-REPLICAS"]')
    assert not [e for e in _of(fixed, "leader_elected", topic="orders")
                if e["election"] == "elr" and e["leader"] == 3]
    assert check_events(fixed).anomalies["lost_acked_write"] == 0


def test_a_spare_broker_joins_and_a_decommissioned_one_leaves_for_good() -> None:
    """expand-and-decommission: spare broker 4 starts at 5 s and registers with a new broker
    epoch, hosting nothing until orders-0 is moved to it; broker 1's decommission moves each
    of its replicas (to the broker hosting the fewest), then it stops cleanly, is
    unregistered, and is never restarted - not even by the heal. Nothing is lost."""
    evs = _events("expand-and-decommission")
    (start,) = [e for e in evs if e["event"] == "node_start"]
    assert start["node"] == "broker-4" and start["ts_us"] == 5_000_000
    reg = _of(evs, "broker_registered", broker=4)
    assert reg and reg[0]["broker_epoch"] > max(e["broker_epoch"] for e in evs
                                                 if e["event"] == "broker_registered"
                                                 and e["seq"] < reg[0]["seq"])
    created = _of(evs, "replica_created", replica=4)
    assert created and min(e["seq"] for e in created) > _of(
        evs, "reassignment", topic="orders", partition=0, phase="start")[0]["seq"]
    (done,) = _of(evs, "decommission", phase="done")
    (gone,) = _of(evs, "broker_unregistered", broker=1)
    stop = next(e for e in evs if e["event"] == "node_crash" and e["node"] == "broker-1")
    assert stop["kind"] == "clean_shutdown" and stop["seq"] < done["seq"] < gone["seq"]
    assert not [e for e in evs if e["event"] == "node_restart" and e["node"] == "broker-1"]
    assert not [e for e in _of(evs, "final_log", replica=1)]
    for e in evs:
        if e["event"] in ("leader_elected", "isr_change") and e["seq"] > done["seq"]:
            assert 1 not in (e.get("isr") or e.get("new") or []) and e.get("leader") != 1
    result = check_events(evs)
    assert result.expect_met and result.anomalies["lost_acked_write"] == 0


def test_add_broker_names_a_spare_broker() -> None:
    with pytest.raises(ScenarioError) as exc:
        load("default", ['faults.plan=[{at_s = 1, fault = "add_broker", target = "broker-2"}]'])
    assert "faults.plan[0].target" in str(exc.value) and "spare" in str(exc.value)


def test_brokers_join_and_leave_under_the_nemesis_and_a_safe_run_stays_clean() -> None:
    """add_broker and decommission as nemesis operations, with reassign, kill and
    partition, acks=all, min ISR 2, RF 3 on 4 + 2 spare brokers: brokers join and leave,
    nothing forbidden shows."""
    joined = left = 0
    for seed in (1, 2, 3):
        evs = _events("safe-acks-all", "cluster.brokers=4", "cluster.spare.brokers=2",
                      'faults.nemesis=["add_broker","decommission","reassign","kill",'
                      '"partition"]', "faults.interval_s=2.0", seed=seed)
        joined += len([e for e in evs if e["event"] == "node_start"])
        left += len(_of(evs, "broker_unregistered"))
        result = check_events(evs)
        assert result.expect_met, (seed, result.forbidden_found)
    assert joined > 0 and left > 0


def test_a_throttled_reassignment_keeps_its_new_replicas_in_the_osr_until_verify() -> None:
    """throttled-reassignment: the throttle is set on the six brokers when the move starts
    (old replicas leader-throttled, new ones follower-throttled), holds the new replicas in
    the OSR for many seconds, and is removed once the move
    is over; without it the same move completes within a second."""
    evs = _events("throttled-reassignment")
    start = _of(evs, "reassignment", phase="start")[0]
    done = _of(evs, "reassignment", phase="complete")[0]
    assert done["ts_us"] - start["ts_us"] > 10_000_000
    sets = [e for e in _of(evs, "replication_throttle") if e["rate"] > 0]
    assert {e["broker"] for e in sets} == {1, 2, 3, 4, 5, 6}
    assert all(e["leader"] == ["orders-0"] for e in sets if e["broker"] <= 3)
    assert all(e["follower"] == ["orders-0"] for e in sets if e["broker"] >= 4)
    cleared = [e for e in _of(evs, "replication_throttle") if e["rate"] < 0]
    assert {e["broker"] for e in cleared} == {1, 2, 3, 4, 5, 6}
    assert min(e["ts_us"] for e in cleared) > done["ts_us"]
    assert check_events(evs).expect_met
    free = _events("throttled-reassignment", 'faults.plan=[{at_s = 30.0, fault = "reassign", '
                   'target = "orders-0", replicas = [4, 5, 6]}]')
    f_start = _of(free, "reassignment", phase="start")[0]
    f_done = _of(free, "reassignment", phase="complete")[0]
    assert f_done["ts_us"] - f_start["ts_us"] < 1_000_000


def test_kip966_keeps_a_replica_a_cancelled_move_removed_in_the_elr_and_elects_it() -> None:
    """The controller alone, step by step (the minimal form of elr-keeps-removed-replica;
    Kafka's PartitionChangeBuilder.maybePopulateTargetElr is the same from 3.7.0 to
    4.2.0-rc1): [1,2] (min ISR 2, unclean elections off, 2 fenced: ISR [1]) -> [3,4]; 3
    joins (ISR [1,3]); cancel -> [1,2] with ISR [1], and 3 — no longer a replica — in the
    ELR. A move back to [1,3] adds 3 (its log deleted, so empty) and the ELR still holds
    it; when 1 is fenced the ISR empties and 3 is elected from the ELR: a clean election
    (not recovering), so unclean.leader.election.enable=false does not stop it. With
    ELR-IN-REPLICAS (the ELR intersected with the target replicas) the ELR never holds 3
    and the partition waits for 1, its last-known leader."""
    from actors.eras import rules_for

    def play(fixes: tuple[str, ...]) -> tuple[object, ...]:
        ctx = Ctx((1, 2, 3, 4), [(1, 2)], min_isr=2)
        ctx.c.rules = rules_for("4.1", (), fixes)
        assert not ctx.p().unclean
        ctx.fence(2)
        assert ctx.p().isr == (1,)
        assert _reassign(ctx, (0, (3, 4))) == {0: NONE}
        ctx.alter(1, (1, 3))
        assert _reassign(ctx, (0, ())) == {0: NONE}
        p = ctx.p()
        after_cancel = (p.replicas, p.isr, p.elr)
        assert _reassign(ctx, (0, (1, 3))) == {0: NONE}
        readded = (p.replicas, p.elr)
        ctx.fence(1)
        return after_cancel, readded, (p.leader, p.isr, p.recovering, p.last_known_elr)

    assert play(()) == (((1, 2), (1,), (3,)), ((1, 3, 2), (3,)), (3, (3,), False, ()))
    assert play(("ELR-IN-REPLICAS",)) == (((1, 2), (1,), ()), ((1, 3, 2), ()),
                                          (-1, (), False, (1,)))
