"""The catalog's random-fault modes (``[catalog] random``, bench/campaigns.py): each finds
its bug's anomaly at a known seed without a script, the fixed variants do not at that seed,
and the nemesis kinds those modes use draw and resolve their targets as documented. (That
the older kinds still draw exactly as before is what ``isrlab regress`` proves: recorded
random-fault traces replay byte for byte.)"""

from __future__ import annotations

import io
import random
from typing import Any

import orjson
import pytest

from emulator.cluster import run
from emulator.scenario import load
from faults.nemesis import generate
from faults.plan import resolve
from traces.checker import CheckResult, check_events
from traces.writer import TraceWriter

#: catalog entry -> the first seed whose random mode shows the expected anomalies
#: (what ``bench/campaigns.py`` reports as seeds to first detection)
FIRST_DETECTION = {
    "s1-kip101-hw-truncation": 1,
    "s2-kip101-power-loss-divergence": 3,
    "s4-kafka7128-stale-hw-isr-expand": 53,
    "s5-kip497-maximal-isr-race": 26,
    "s6-acks1-leader-failover": 1,
    "s10-lossy-crash-beyond-min-isr": 2,
    "s13-kafka13141-diverging-fetch-hw": 11,
    "s17-kafka7415-leader-without-epoch-entry": 80,
    "kafka15665-reassign-completes-short": 42,
    "elr-keeps-removed-replica": 37,
}


def _random_mode(name: str, extra: list[str] | None = None) -> dict[str, Any]:
    sc = load(name)
    return load(name, ["faults.plan=[]", *sc["catalog"]["random"], *(extra or [])])


def _check(sc: dict[str, Any], seed: int) -> CheckResult:
    buf = io.BytesIO()
    res = run(sc, seed, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return check_events(orjson.loads(line) for line in buf.getvalue().splitlines())


@pytest.mark.parametrize("name, seed", sorted(FIRST_DETECTION.items()))
def test_random_mode_finds_the_bug_at_its_known_seed(name: str, seed: int) -> None:
    sc = _random_mode(name)
    assert not sc["faults"]["plan"] and sc["faults"]["nemesis"]
    result = _check(sc, seed)
    assert not result.missing_expected, f"{name} seed {seed}: {result.missing_expected}"


@pytest.mark.parametrize("name, seed", sorted(FIRST_DETECTION.items()))
def test_random_mode_of_the_fixed_variants_does_not_show_it(name: str, seed: int) -> None:
    expected = load(name)["expect"]["anomalies"]
    for fix in load(name)["catalog"]["fixed"]:
        fix_list = fix if isinstance(fix, list) else [fix]
        if any(o.startswith("faults.plan") for o in fix_list):
            continue   # a fix by a smaller script (S10), which random mode drops
        result = _check(_random_mode(name, fix_list), seed)
        found = {a: result.anomalies[a] for a in expected if result.anomalies[a]}
        assert not found, f"{name} seed {seed} with {fix_list}: {found}"


def _sc(nemesis: list[str], **faults: Any) -> dict[str, Any]:
    sc = load("default", ["duration_s=60", "topics[0].partitions=3"])
    sc["faults"].update(nemesis=nemesis, budget=False, interval_s=2.0, **faults)
    return sc


def test_new_kinds_draw_their_targets() -> None:
    plan = generate(_sc(["pause_controller", "delay_controller", "cut", "cut_leader",
                         "deafen"]), random.Random(7))
    assert plan
    for f in plan:
        # 4.1 runs a controller quorum: pause_controller draws the active one or a voter
        if f["target"] == "controller" or str(f["target"]).startswith("controller-300"):
            assert f["fault"] in ("pause", "delay")
        else:
            assert f["fault"] == "cut" and len(f["target"]) == 2
            src, dst = f["target"]
            assert src != dst
            if src.startswith("leader:"):
                assert dst.startswith("follower:" + src[len("leader:"):] + "/")
    kinds = {f["fault"] for f in plan}
    assert kinds == {"pause", "delay", "cut"}


def test_power_outage_takes_every_broker_and_ends_within_the_workload() -> None:
    sc = _sc(["power_outage"], fault_duration_s=8.0)
    plan = generate(sc, random.Random(3))
    starts = sorted({f["at_s"] for f in plan})
    assert starts
    for at in starts:
        hit = [f for f in plan if f["at_s"] == at]
        assert sorted(f["target"] for f in hit) == ["broker-1", "broker-2", "broker-3"]
        assert all(f["fault"] == "power_loss" for f in hit)
        assert max(at + f["duration_s"] for f in hit) < sc["duration_s"]
    for a, b in zip(starts, starts[1:], strict=False):   # never two outages at once
        assert all(b >= a + f["duration_s"] for f in plan if f["at_s"] == a)
    assert generate({**sc, "faults": {**sc["faults"], "budget": True}}, random.Random(3)) == []


def test_split_puts_some_brokers_and_any_other_node_on_one_side() -> None:
    sc = _sc(["split"])
    sc["consumers"][0]["members"] = 2
    buf = io.BytesIO()
    nodes = set(run(sc, 1, None, writer=TraceWriter(None, buffer=buf)) and
                [orjson.loads(line)["node"] for line in buf.getvalue().splitlines()])
    plan = generate(sc, random.Random(5))
    assert len(plan) > 5
    clients = False
    for f in plan:
        assert f["fault"] == "partition"
        side = set(f["target"])
        assert side <= nodes                         # names the cluster really has
        brokers = {n for n in side if n.startswith("broker-")}
        assert brokers and brokers != {"broker-1", "broker-2", "broker-3"}
        clients |= any(n.startswith(("producer-", "consumer-")) for n in side)
    assert clients


def test_split_with_a_controller_quorum_puts_each_voter_on_its_own_side() -> None:
    """With three voters there is no node "controller": each voter is drawn onto one side or
    the other like any node, so a split may leave the quorum's majority on either side."""
    sc = load("default", ["duration_s=60", "topics[0].partitions=3",
                          "cluster.controller_quorum=3"])
    sc["faults"].update(nemesis=["split"], budget=False, interval_s=2.0)
    plan = generate(sc, random.Random(5))
    sides = [set(f["target"]) for f in plan]
    voters = {"controller-3000", "controller-3001", "controller-3002"}
    assert sides and not any("controller" in side for side in sides)
    assert any(side & voters and voters - side for side in sides)   # a quorum split apart


class _World:
    """Just what target resolution reads."""

    def __init__(self, leader: int) -> None:
        self.node_names = ["controller", "broker-1", "broker-2", "broker-3"]
        self.assignment = {("orders", 0): (1, 2, 3), ("orders", 1): (2, 3, 1)}
        self.leader = leader

    def resolve_target(self, target: Any) -> list[str]:
        if isinstance(target, str) and target.startswith("leader:"):
            return [f"broker-{self.leader}"] if self.leader > 0 else []
        return [str(target)]


@pytest.mark.parametrize("leader, k, expected", [
    (1, 0, "broker-2"), (1, 1, "broker-3"), (1, 2, "broker-2"),
    (2, 0, "broker-1"), (3, 1, "broker-2"),
])
def test_follower_targets_resolve_against_the_current_leader(leader: int, k: int,
                                                             expected: str) -> None:
    world: Any = _World(leader)
    assert resolve(world, ["leader:orders-0", f"follower:orders-0/{k}"]) == [
        f"broker-{leader}", expected]


def test_follower_targets_resolve_to_nothing_without_a_leader() -> None:
    world: Any = _World(-1)
    assert resolve(world, ["leader:orders-1", "follower:orders-1/0"]) == []
    assert resolve(world, ["broker-1", "broker-2"]) == ["broker-1", "broker-2"]
    assert resolve(world, "broker-3") == ["broker-3"]
