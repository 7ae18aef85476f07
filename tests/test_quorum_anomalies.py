"""The controller quorum's faults and anomalies (issue 52, points 4 and 5).

``metadata_divergence`` and ``uncommitted_metadata_applied`` (docs/anomalies.md, "The
controller quorum") on hand-built traces, where each can be made to happen; the faults
``isolate_controller`` and ``lose_quorum``; the KAFKA-15489 bug flag; and the two catalog
scenarios' stories as their traces tell them.
"""

from __future__ import annotations

import io
import random
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest
from spark.tracebuild import Trace, append, applied, diverged_quorum, hw, quorum_trace, truncate

from emulator.cluster import run
from emulator.scenario import ScenarioError, load
from tests.helpers import catalog_trace, scenario_file
from traces.checker import check_events
from traces.explain import explain
from traces.writer import TraceWriter


def healthy_quorum() -> Trace:
    """Epoch 1 commits 0..2 on voters 1 and 2; voter 3, behind, truncates an uncommitted
    suffix of an old epoch and catches up; every replay is below the HW."""
    t = quorum_trace("healthy-quorum")
    append(t, 1, 1, 0, 2, "leader")
    append(t, 2, 1, 0, 2)
    hw(t, 1, 3)
    applied(t, 1, 0, 2)
    hw(t, 2, 3)
    applied(t, 2, 0, 2)
    append(t, 3, 0, 0, 1)          # a stale suffix of epoch 0, never committed
    truncate(t, 3, 0, 2)
    append(t, 3, 1, 0, 2)
    hw(t, 3, 3)
    applied(t, 3, 0, 2)
    return t


def _check(t: Trace) -> Any:
    return check_events(t.events)


def test_a_healthy_quorum_trace_shows_neither_quorum_anomaly() -> None:
    r = _check(healthy_quorum())
    assert r.anomalies["metadata_divergence"] == 0
    assert r.anomalies["uncommitted_metadata_applied"] == 0
    assert "__cluster_metadata-0" not in r.partitions   # appears only with a finding


def test_voters_holding_different_entries_below_their_hws_is_metadata_divergence() -> None:
    r = _check(diverged_quorum())
    assert r.anomalies["metadata_divergence"] == 2      # offsets 1 and 2, once each
    d = r.details["metadata_divergence"][0]
    assert (d["offset"], d["voter"], d["epoch"], d["committed_epoch"], d["committed_by"]) == (
        1, 3, 2, 1, 1)
    assert r.partitions["__cluster_metadata-0"].anomalies["metadata_divergence"] == 2
    assert "metadata_divergence" in r.forbidden_found and not r.expect_met
    assert r.verdict().word == "DIVERGED" and "__cluster_metadata-0" in r.verdict().what


def test_a_replay_at_or_above_the_quorum_hw_is_uncommitted_metadata_applied() -> None:
    r = _check(diverged_quorum())
    assert r.anomalies["uncommitted_metadata_applied"] == 1
    d = r.details["uncommitted_metadata_applied"][0]
    assert (d["voter"], d["offset"], d["quorum_hw"]) == (3, 3, 3)
    # one below the quorum's HW is not
    t = quorum_trace()
    append(t, 1, 1, 0, 4, "leader")
    hw(t, 1, 5)
    applied(t, 2, 0, 4)
    assert _check(t).anomalies["uncommitted_metadata_applied"] == 0


def test_a_brokers_apply_above_the_quorum_hw_is_uncommitted_metadata_applied_too() -> None:
    """Brokers are Raft observers: their ``metadata_apply`` (node broker-N, ``observer``)
    is held to the voters' high watermark like a controller's replay, and the finding says
    which node applied; an observer's own HW never raises the quorum's."""
    t = quorum_trace()
    append(t, 1, 1, 0, 4, "leader")
    hw(t, 1, 3)
    t.emit("metadata_apply", node="broker-2", actor="raft", voter=2, first=0, offset=2,
           observer=True)
    t.emit("metadata_apply", node="broker-2", actor="raft", voter=2, first=3, offset=4,
           observer=True)
    r = _check(t)
    assert r.anomalies["uncommitted_metadata_applied"] == 1
    d = r.details["uncommitted_metadata_applied"][0]
    assert (d["node"], d["observer"], d["offset"], d["quorum_hw"]) == ("broker-2", True, 4, 3)


def test_explain_names_the_broker_that_applied_above_the_quorum_hw(tmp_path: Path) -> None:
    """The chain of a broker's early apply names ``broker-N`` (an observer applies), not a
    controller (a voter replays)."""
    t = quorum_trace()
    append(t, 1, 1, 0, 4, "leader")
    hw(t, 1, 3)
    t.emit("metadata_apply", node="broker-2", actor="raft", voter=2, first=3, offset=4,
           observer=True)
    chains = explain(str(t.write(tmp_path / "early.jsonl"))).chains
    chain = next(c for c in chains if c.anomaly == "uncommitted_metadata_applied")
    assert "broker-2 applied metadata offsets 3..4" in chain.steps[-1].text
    assert not any("controller-2" in s.text for s in chain.steps)


def test_a_voter_whose_hw_restarts_at_zero_is_checked_again_against_the_first_commit() -> None:
    """A restarted voter re-learns its HW from 0: the entries it passes again are compared
    with what was committed first, and an offset already counted is not counted twice."""
    t = diverged_quorum()
    hw(t, 3, 0)
    hw(t, 3, 3)
    assert _check(t).anomalies["metadata_divergence"] == 2
    t = healthy_quorum()
    hw(t, 2, 0)
    truncate(t, 2, 2, 3)            # below no HW now (the restart reset it)
    append(t, 2, 2, 2, 2)
    hw(t, 2, 3, epoch=2)
    assert _check(t).anomalies["metadata_divergence"] == 1


def test_explain_names_a_rule_for_each_quorum_anomaly(tmp_path: Path) -> None:
    path = diverged_quorum().write(tmp_path / "diverged.jsonl")
    chains = explain(str(path)).chains
    rules = {c.anomaly: c.rule for c in chains}
    assert rules["metadata_divergence"] == "metadata_log_diverged"
    assert rules["uncommitted_metadata_applied"] == "applied_above_quorum_hw"
    div = next(c for c in chains if c.anomaly == "metadata_divergence")
    assert any("epoch 2" in s.text and "appended" in s.text for s in div.steps)


# -- the faults --------------------------------------------------------------------------------

BASE = """
name = "quorum-fault"
protocol = "{era}"
duration_s = 14.0
heal_s = 30.0
{bugs}

[cluster]
brokers = 3
{quorum}

[[topics]]
name = "orders"
partitions = 1
"replication.factor" = 3
"min.insync.replicas" = 2

[[producers]]
topic = "orders"
rate = 40
acks = "all"

[faults]
{faults}
"""


def load_text(text: str, _name: str) -> dict[str, Any]:
    """The scenario of ``text`` (written to a file named by its digest)."""
    return load(str(scenario_file(text, "quorum-faults")))


def _text(faults: str, quorum: int = 3, era: str = "4.1", bugs: str = "") -> str:
    return BASE.format(era=era, bugs=bugs, faults=faults,
                       quorum=f"controller_quorum = {quorum}")


@cache
def _events(text: str, seed: int = 1) -> list[dict[str, Any]]:
    buf = io.BytesIO()
    res = run(load_text(text, "quorum-fault.toml"), seed, None,
              writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(line) for line in buf.getvalue().splitlines()]


@pytest.mark.parametrize("faults, needs", [
    ('plan = [{ at_s = 5.0, fault = "isolate_controller", duration_s = 3.0 }]', "quorum"),
    ('plan = [{ at_s = 5.0, fault = "lose_quorum", duration_s = 3.0 }]', "quorum"),
    ('nemesis = ["lose_quorum"]', "quorum"),
    ('plan = [{ at_s = 5.0, fault = "crash", target = "controller-3001" }]', "quorum"),
])
def test_controller_quorum_faults_without_a_quorum_are_a_one_line_error(faults: str,
                                                                        needs: str) -> None:
    with pytest.raises(ScenarioError) as e:
        load_text(_text(faults, quorum=0), "x.toml")
    assert needs in str(e.value) and "\n" not in str(e.value)


def test_kafka15489_without_a_quorum_is_a_one_line_error() -> None:
    with pytest.raises(ScenarioError) as e:
        load_text(_text("", quorum=0, era="3.7", bugs='bugs = ["KAFKA-15489"]'), "x.toml")
    assert "controller_quorum" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("faults", [
    'plan = [{ at_s = 5.0, fault = "lose_quorum", target = ["controller-3000"] }]',
    'plan = [{ at_s = 5.0, fault = "isolate_controller", target = "controller-3009" }]',
    'plan = [{ at_s = 5.0, fault = "isolate_controller", scope = "brokers" }]',
])
def test_bad_quorum_fault_targets_and_options_are_refused(faults: str) -> None:
    with pytest.raises(ScenarioError):
        load_text(_text(faults), "x.toml")


def test_isolate_controller_cuts_the_active_one_from_the_voters_and_a_new_leader_follows() -> None:
    ev = _events(_text('plan = [{ at_s = 5.0, fault = "isolate_controller", '
                       'target = "controller", duration_s = 6.0 }]'))
    start = next(e for e in ev if e["event"] == "fault" and e["phase"] == "start")
    assert start["scope"] == "voters" and len(start["target"]) == 1
    cut = int(start["target"][0].rpartition("-")[2])
    leaders = [(e["ts_us"], e["voter"], e["epoch"]) for e in ev
               if e["event"] == "raft_transition" and e["to"] == "leader"]
    assert any(v == cut for ts, v, _ in leaders if ts < start["ts_us"])
    after = [(ts, v, ep) for ts, v, ep in leaders if ts > start["ts_us"]]
    assert after and after[0][1] != cut
    # check quorum (4.1): the cut leader resigns 1.5 x quorum.fetch.timeout.ms (3 s) after
    # its last majority of fetches
    resigned = [e for e in ev if e["event"] == "raft_transition" and e["voter"] == cut
                and e["from"] == "leader" and e["ts_us"] > start["ts_us"]]
    assert resigned and resigned[0]["ts_us"] - start["ts_us"] <= 3_500_000
    assert check_events(ev).expect_met


def test_lose_quorum_stops_commits_until_the_majority_returns_while_data_flows() -> None:
    ev = _events(_text('plan = [{ at_s = 5.0, fault = "lose_quorum", duration_s = 4.0 }]'))
    start = next(e for e in ev if e["event"] == "fault" and e["phase"] == "start")
    stop = next(e for e in ev if e["event"] == "fault" and e["phase"] == "stop")
    assert start["how"] == "crash" and len(start["target"]) == 2   # a majority of three
    hws = [(e["ts_us"], e["hw"]) for e in ev if e["event"] == "raft_hw"]
    top_before = max(h for ts, h in hws if ts <= start["ts_us"])
    during = [h for ts, h in hws if start["ts_us"] < ts < stop["ts_us"]]
    assert all(h <= top_before for h in during)                      # nothing commits
    assert max(h for ts, h in hws if ts > stop["ts_us"]) > top_before   # then it does
    acks = [e for e in ev if e["event"] == "produce_ack"
            and start["ts_us"] < e["ts_us"] < stop["ts_us"]]
    assert acks                                                      # data keeps flowing
    assert check_events(ev).expect_met


def test_lose_quorum_by_isolation_cuts_the_majority_from_the_other_voters() -> None:
    ev = _events(_text('plan = [{ at_s = 5.0, fault = "lose_quorum", how = "isolate", '
                       'duration_s = 4.0 }]'))
    start = next(e for e in ev if e["event"] == "fault" and e["phase"] == "start")
    assert start["how"] == "isolate"
    assert not any(e["event"] == "node_crash" for e in ev)
    assert check_events(ev).expect_met


def test_nemesis_quorum_kinds_draw_voters_and_options() -> None:
    from faults.nemesis import generate
    sc = load_text(_text('nemesis = ["isolate_controller", "lose_quorum", "kill_controller"]\n'
                         'interval_s = 1.0'), "x.toml")
    plan = generate(sc, random.Random(3))
    kinds = {f["fault"] for f in plan}
    assert {"isolate_controller", "lose_quorum", "crash"} <= kinds
    targets = {f["target"] for f in plan if f["fault"] in ("isolate_controller", "crash")}
    assert targets & {"controller-3000", "controller-3001", "controller-3002"}
    assert {f.get("how") for f in plan if f["fault"] == "lose_quorum"} <= {"crash", "isolate"}
    # without a quorum, kill_controller draws nothing more: the single controller
    sc0 = load_text(_text('nemesis = ["kill_controller"]', quorum=0), "x.toml")
    assert {f["target"] for f in generate(sc0, random.Random(3))} == {"controller"}


# -- the catalog scenarios ---------------------------------------------------------------------

def _catalog(name: str, *overrides: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in catalog_trace(name, *overrides).splitlines()]


def test_kafka15489_the_cut_leader_never_resigns_and_the_metadata_stands_still() -> None:
    """With the bug the isolated leader of epoch 1 stays leader for the whole cut and the
    brokers keep following it: no broker reaches the new active controller, so it arms no
    session check (3.7.0 ``QuorumController.rescheduleMaybeFenceStaleBrokers`` runs on a
    heartbeat or a registration, never on activation) and fences nobody during the cut,
    and no metadata change commits. At the heal the first heartbeat it hears arms the check
    for sessions that began at its activation, long expired: the brokers not heard from
    yet are fenced at once, one after the other, and the committed ISRs fall under
    min.insync.replicas until their heartbeats unfence them."""
    ev = _catalog("kafka15489-partitioned-controller")
    start = next(e for e in ev if e["event"] == "fault" and e["phase"] == "start")
    stop = next(e for e in ev if e["event"] == "fault" and e["phase"] == "stop")
    cut = int(start["target"][0].rpartition("-")[2])
    assert not any(e["event"] == "raft_transition" and e["voter"] == cut
                   and e["from"] == "leader" and e["ts_us"] < stop["ts_us"] for e in ev)
    new = next(e for e in ev if e["event"] == "raft_transition" and e["to"] == "leader"
               and e["ts_us"] > start["ts_us"])
    assert not any(e["event"] in ("broker_fenced", "isr_change") and start["ts_us"] < e["ts_us"]
                   < stop["ts_us"] for e in ev)
    fenced = [e for e in ev if e["event"] == "broker_fenced"
              and e["node"] == f"controller-{new['voter']}"]
    assert len(fenced) >= 2 and all(e["reason"] == "session_timeout" and
                                    e["ts_us"] > stop["ts_us"] for e in fenced)
    r = check_events(ev)
    assert r.anomalies["under_min_isr"] > 0 and r.expect_met


def test_kafka15489_fixed_the_cut_leader_resigns_and_brokers_follow_the_new_one() -> None:
    ev = _catalog("kafka15489-partitioned-controller", "bugs=[]")
    start = next(e for e in ev if e["event"] == "fault" and e["phase"] == "start")
    cut = int(start["target"][0].rpartition("-")[2])
    assert any(e["event"] == "raft_transition" and e["voter"] == cut and e["from"] == "leader"
               and e["to"] == "resigned" for e in ev)
    assert not any(e["event"] == "broker_fenced" and e["reason"] == "session_timeout"
                   for e in ev)
    r = check_events(ev)
    assert not any(r.anomalies.values()), r.anomalies


def test_kraft_failover_trace_shows_votes_epochs_leader_change_and_brokers_applying() -> None:
    """Acceptance (issue 52): the election (votes, the new epoch, the LeaderChange record),
    the brokers turning to the new leader and the moment each committed change is applied."""
    ev = _catalog("kraft-controller-failover")
    crashes = [e for e in ev if e["event"] == "fault" and e["fault"] == "crash"
               and e["phase"] == "start" and e["target"][0].startswith("controller-")]
    assert len(crashes) == 2
    for crash in crashes:
        new = next(e for e in ev if e["event"] == "raft_transition" and e["to"] == "leader"
                   and e["ts_us"] > crash["ts_us"])
        assert f"controller-{new['voter']}" != crash["target"][0]
        assert any(e["event"] == "raft_vote" and e["candidate"] == new["voter"]
                   and e["epoch"] == new["epoch"] and e["granted"] for e in ev)
        lc = next(e for e in ev if e["event"] == "raft_append" and e["voter"] == new["voter"]
                  and e["epoch"] == new["epoch"])
        assert lc["records"][0] == "LeaderChange" and lc["role"] == "leader"
        assert any(e["event"] == "controller_followed" and e["ts_us"] > new["ts_us"]
                   and e["controller"] == f"controller-{new['voter']}" for e in ev)
    assert any(e["event"] == "metadata_apply" for e in ev)
    r = check_events(ev)
    assert r.expect_met and r.anomalies["lost_acked_write"] == 0
    assert {"metadata_divergence", "uncommitted_metadata_applied"} <= set(
        load("kraft-controller-failover")["expect"]["forbid"])


def test_a_quorums_safety_is_forbidden_even_where_a_scenario_lists_what_it_forbids() -> None:
    """``safe-acks-all`` lists its own ``forbid`` (written for the single controller); run
    with a quorum, Raft's two safety anomalies join that list unless a scenario expects
    them (a 1,000-seed campaign had reported a metadata_divergence as allowed)."""
    single = load("safe-acks-all", ["cluster.controller_quorum=0"])["expect"]["forbid"]
    quorum = load("safe-acks-all")["expect"]["forbid"]   # three voters, KRaft's default
    assert "metadata_divergence" not in single
    assert quorum == [*single, "metadata_divergence", "uncommitted_metadata_applied"]
    expected = load("safe-acks-all", ["cluster.controller_quorum=3",
                                      'expect.anomalies=["metadata_divergence"]'])
    assert "metadata_divergence" not in expected["expect"]["forbid"]
    assert "uncommitted_metadata_applied" in expected["expect"]["forbid"]
