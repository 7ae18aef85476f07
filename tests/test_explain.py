"""isrlab explain (issue 20): each anomaly's causal chain, read from the trace alone.

The catalog's recorded traces (tests/regressions, replayed bit for bit by test_regress) are
the inputs: for each historical scenario the chain must end in the rule its catalog
description names — truncation to the HW (S1), divergence kept by truncation to the HW
(S2), the epoch-of-end answer (S3), the LESO check (S4), the maximal ISR (S5), an unclean
election (S8), page-cache loss on the last ISR member (S9), the HW applied before truncation
(S12) and a diverging fetch counted (S13) — and the replica logs the explainer rebuilds from
the trace must equal the logs the run ended with.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from cli.explain import main
from traces.checker import check_file
from traces.explain import RULES, explain, format_text, replica_logs

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


def recorded(name: str) -> str:
    return str(REGRESSIONS / f"{name}.jsonl.gz")


@pytest.mark.parametrize("scenario, anomaly, rule, steps", [
    ("s1-kip101-hw-truncation", "lost_acked_write", "truncation_to_hw",
     ["broker-2 truncated", "(high_watermark): lost the record",
      "broker-2 elected leader (clean"]),
    ("s2-kip101-power-loss-divergence", "log_divergence", "divergence_kept_hw",
     ["became follower of broker-2", "did not truncate below"]),
    ("s3-kip279-fast-failover-divergence", "log_divergence", "epoch_end_answer",
     ["broker-2 became follower of broker-1 (epoch 2)", "so it kept its record"]),
    ("s4-kafka7128-stale-hw-isr-expand", "lost_acked_write", "leso_check",
     ["broker-3 joined the ISR", "leader epoch start offset 35",
      "broker-3 elected leader (clean"]),
    ("s5-kip497-maximal-isr-race", "lost_acked_write", "maximal_isr",
     ["broker-3 joined the ISR [1,2,3]", "broker-3 elected leader (clean"]),
    ("s8-unclean-election", "lost_acked_write", "unclean_election",
     ["elected leader (unclean"]),
    ("s9-last-replica-standing", "lost_acked_write", "last_replica_standing",
     ["broker-1 power loss: recovered to LEO 0", "broker-1 elected leader (clean"]),
    ("s12-kafka14704-follower-hw-before-truncate", "hw_regression_replica",
     "hw_before_truncation", ["(fetch_response), while its own record at 30 differs",
                              "truncated 35 -> 30 (leader_epoch)"]),
    ("s13-kafka13141-diverging-fetch-hw", "lost_acked_write", "diverging_fetch_counted",
     ["broker-1 elected leader (clean"]),
    ("kafka15665-reassign-completes-short", "lost_acked_write", "removed_by_reassignment",
     ["reassignment complete", "replica deleted: lost the record"]),
    ("reassign-cancel-unclean", "lost_acked_write", "reassignment_revert",
     ["reassignment cancel: replicas [1,2]", "it takes away [3]"]),
    # S7: what was acknowledged with the leader alone in the ISR (min ISR 1) is lost with its
    # page cache; what all three had is lost as in S9, the emptied leader being re-elected
    ("s7-acks-all-min-isr-1", "lost_acked_write", "min_isr_1 last_replica_standing",
     ["ISR [1], HW", "broker-1 power loss: recovered to LEO 0"]),
    ("s6-acks1-leader-failover", "lost_acked_uncommitted", "acks_1", ["(acks 1)"]),
    ("elr-keeps-removed-replica", "lost_acked_write", "elr_election",
     ["reassignment cancel: replicas [1,2]", "broker-3 elected leader (elr"]),
])
def test_each_catalog_chain_names_the_rule_its_description_names(
        scenario: str, anomaly: str, rule: str, steps: list[str]) -> None:
    ex = explain(recorded(scenario))
    chains = [c for c in ex.chains if c.anomaly == anomaly and not RULES[c.rule].expected]
    assert chains, format_text(ex)
    assert {c.rule for c in chains} == set(rule.split()), format_text(ex)
    text = "\n".join(s.text for c in chains for s in c.steps)
    for words in steps:
        assert words in text, (words, text)
    for c in chains:
        assert [s.seq for s in c.steps] == sorted(s.seq for s in c.steps)


def test_one_cause_is_one_chain_covering_every_record_it_lost() -> None:
    """S1: every lost write comes from the same truncation and election: one chain, whose
    records are exactly the checker's findings, and whose acknowledgement step reads the
    leader, its epoch, the ISR and the HW off the trace."""
    path = recorded("s1-kip101-hw-truncation")
    found = check_file(path, max_details=1 << 30)
    ex = explain(path)
    [chain] = [c for c in ex.chains if c.anomaly == "lost_acked_write"]
    assert chain.count == found.anomalies["lost_acked_write"] > 100
    assert sorted(chain.records) == sorted(
        (d["offset"], d["value"]) for d in found.details["lost_acked_write"])
    assert chain.reads == found.anomalies["hw_regression_visible"]
    ack = chain.steps[0].text
    assert "by broker-1: leader epoch 0, ISR [1,2]" in ack and "on [1,2]" in ack


def test_a_record_and_an_anomaly_can_be_asked_for_alone(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = recorded("s1-kip101-hw-truncation")
    assert main([path, "--record", "orders-0@5", "--json"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    lost = [c for c in out["chains"] if c["anomaly"] == "lost_acked_write"]
    assert [c["offsets"] for c in lost] == [[5, 5]]
    assert lost[0]["rule"] == "truncation_to_hw" and "KIP-101" in lost[0]["fix"]
    assert main([path, "--anomaly", "isr_churn"]) == 0
    text = capsys.readouterr().out
    assert "isr_churn" in text and "lost_acked_write" not in text


def test_record_prints_that_records_chain_only_and_one_line_counting_the_rest(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 50, point 5: ``--record`` on S2, whose offset 100 is both a lost write and a
    divergent offset, in a trace that also has ISR churn, HW regressions and other lost
    records: one chain (the lost write, explain's first), then one line with how many
    findings it leaves out and the command that shows them all."""
    path = recorded("s2-kip101-power-loss-divergence")
    found = check_file(path)
    assert found.anomalies["log_divergence"] and found.anomalies["lost_acked_write"] > 1
    assert main([path, "--record", "orders-0@100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [ln for ln in lines[1:] if not ln.startswith(" ") and not ln.startswith("(")]
    assert heads == ["lost_acked_write orders-0: offset 100 (p0-100); 1 read of them "
                     "rewritten"], lines
    assert sum(ln.startswith("  rule  ") for ln in lines) == 1
    total = sum(found.anomalies.values())
    left = dict(found.anomalies)
    left["lost_acked_write"] -= 1        # the chain's record
    left["hw_regression_visible"] -= 1   # its rewritten read, folded into the chain
    kinds = ", ".join(f"{k} {n:,}" for k, n in left.items() if n)
    assert lines[-1] == (f"(the trace has {total - 2:,} other findings: {kinds}; all of "
                         f"them: isrlab explain {path})")
    assert main([path, "--record", "orders-0@100", "--json"]) == 0
    out = orjson.loads(capsys.readouterr().out)
    assert [(c["anomaly"], c["offsets"]) for c in out["chains"]] == [
        ("lost_acked_write", [100, 100])]
    assert out["record"] == "orders-0@100"
    assert sum(out["other_findings"].values()) == total - 2


def test_a_record_no_finding_names_says_so_and_still_counts_the_rest(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = recorded("s1-kip101-hw-truncation")
    assert main([path, "--record", "orders-0@999999"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "nothing to explain: no finding names orders-0@999999"
    assert len(lines) == 3 and lines[2].startswith(
        f"(the trace has {sum(check_file(path).anomalies.values()):,} other findings: "
        "lost_acked_write ")


@pytest.mark.parametrize("trace", sorted(p.name for p in REGRESSIONS.glob("*.jsonl.gz")))
def test_rebuilt_replica_logs_equal_the_logs_the_run_ended_with(trace: str) -> None:
    """The fold's reconstruction (leader appends in its epoch, follower appends copying
    the leader, truncations and recoveries cutting) against each replica's ``final_log``,
    record by record, on every recorded trace — divergent ones included."""
    rebuilt, finals = replica_logs(str(REGRESSIONS / trace))
    assert finals and any(finals.values())
    for key, epochs in finals.items():
        assert rebuilt[key] == epochs, key


def test_an_unfinished_trace_is_explained_but_marked_incomplete(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = gzip.decompress(Path(recorded("s1-kip101-hw-truncation")).read_bytes()).splitlines(
        keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[: len(lines) * 3 // 4]))
    assert main([str(cut)]) == 3
    assert "INCOMPLETE" in capsys.readouterr().out


@pytest.mark.parametrize("args, words", [
    (["--record", "orders@5"], "--record"),
    (["--anomaly", "meteor_strike"], "--anomaly"),
])
def test_bad_arguments_exit_2_with_one_line(
        capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    assert main([recorded("s1-kip101-hw-truncation"), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_a_missing_or_foreign_file_exits_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign = tmp_path / "t.jsonl"
    foreign.write_text('{"not": "a trace"}\n')
    for path in (tmp_path / "absent.jsonl", foreign):
        assert main([str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0]


def test_messages_show_the_fetch_response_that_never_reached_the_follower(
        capsys: pytest.CaptureFixture[str]) -> None:
    """S1 with ``--messages`` (its recorded trace has none: it is re-run with them): the
    fetch response carrying the HW that committed the record never reached broker-2 (it had
    crashed), which then truncated to its older checkpoint — KIP-101's own account — and
    the election's PartitionState went to broker-2."""
    assert main([recorded("s1-kip101-hw-truncation"), "--anomaly", "lost_acked_write",
                 "--messages"]) == 0
    out = capsys.readouterr().out
    assert "messages from a re-run" in out
    assert "ReplicaFetchResponse broker-1/replica-manager → broker-2/" in out
    assert "never received: it carried HW 200 (offset 199 committed)" in out
    assert "PartitionState controller/controller → broker-2/broker" in out
    assert "leader broker-2, epoch 1" in out


def test_messages_are_refused_when_the_rerun_is_another_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import dataclasses
    from typing import Any

    from helpers import FAULTY

    import emulator.cluster
    from emulator.cluster import run
    from emulator.scenario import load
    trace = tmp_path / "t.jsonl"
    run(load("default", FAULTY), 3, str(trace))
    # a model change since the trace was recorded: a follower 20 ms behind leaves the ISR
    original = emulator.cluster.Cluster._replica_cfg

    def changed(self: emulator.cluster.Cluster, topic: dict[str, Any]) -> Any:
        return dataclasses.replace(original(self, topic), replica_lag_time_max_ms=20)

    monkeypatch.setattr(emulator.cluster.Cluster, "_replica_cfg", changed)
    assert main([str(trace), "--messages"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not give the same run" in err[0], err


def test_a_last_known_leader_election_is_named_for_kip966_not_for_the_unclean_setting(
        tmp_path: Path) -> None:
    """4.1 with the ELR fix, the issue-53 campaign's seed 1292: power losses of the in-sync
    replicas leave ISR and ELR empty, and KIP-966 elects the last-known leader without the
    records (RECOVERING: traced as an unclean election). The rule is ``last_known_leader``
    — Kafka 4.1 elects it whatever ``unclean.leader.election.enable`` says — never the
    unclean setting's rule, whose fix would not help here. (The test followed seed 605
    until the controller's session check ran every session timeout / 8, as 4.1's does:
    that seed's faults then land at other moments of the sessions and lose nothing.)"""
    from helpers import run_to_bytes

    sets = ['faults.plan=[]', 'fixes=["ELR-IN-REPLICAS"]',
            'faults.nemesis=["reassign","pause","power_loss","kill","controlled_shutdown",'
            '"kill_controller"]', "faults.interval_s=2.0", "faults.fault_duration_s=10.0",
            "duration_s=60.0", "expect.anomalies=[]",
            # the campaign ran with the single controller (docs/findings/
            # elr-keeps-removed-replica.md, before a quorum was 4.1's default)
            "cluster.controller_quorum=0"]
    res, data = run_to_bytes("elr-keeps-removed-replica", 1292, sets)
    assert res.status == "ok"
    path = tmp_path / "seed-1292.jsonl"
    path.write_bytes(data)
    lost = [c for c in explain(str(path)).chains if c.anomaly == "lost_acked_write"]
    assert lost and lost[0].rule == "last_known_leader"
    assert "unclean.leader.election.enable=false" not in RULES[lost[0].rule].fix


def test_a_record_acked_after_the_cancel_took_its_copy_is_lost_to_the_elr_election(
        tmp_path: Path) -> None:
    """The finding's scenario (docs/findings/elr-keeps-removed-replica.md) at seed 2: one
    record is acknowledged by broker-1 after the cancel removed broker-3's replica (the
    leader had not applied the change yet). broker-3's ISR join is the ELR election itself,
    not a leader's expansion, so that record's chain is the same story as the others'
    (``elr_election``), not the LESO check of a leader's expansion. (The report's own run,
    seed 1, showed such a record until the controller wrote KRaft's NoOpRecord: its leader
    now learns the cancel sooner.)"""
    from helpers import run_to_bytes

    res, data = run_to_bytes("elr-keeps-removed-replica", 2, [])
    assert res.status == "ok"
    path = tmp_path / "elr.jsonl"
    path.write_bytes(data)
    lost = [c for c in explain(str(path)).chains if c.anomaly == "lost_acked_write"]
    assert len(lost) >= 2 and {c.rule for c in lost} == {"elr_election"}


def test_a_write_acked_under_min_isr_2_is_never_said_acked_by_the_leader_alone() -> None:
    """explain's ISR at an acknowledgement is the controller's, which the leader learns a
    metadata update later (with the KRaft quorum, at its next metadata fetch). With
    ``min.insync.replicas = 2`` Kafka never acknowledges an acks=all write on an ISR of one
    (``Partition.checkEnoughReplicasReachOffset``: NOT_ENOUGH_REPLICAS_AFTER_APPEND), so a
    record the controller's ISR [1] shows acked, and that two power losses took from both
    replicas holding it, is a page-cache loss, not ``min_isr_1``; with min ISR 1 (or not
    said) it stays ``min_isr_1``."""
    from traces.explain_fold import _Change, _Snap
    from traces.explain_rules import record_rule

    snap = _Snap(1, 0, (1,), {1: 10, 2: 10}, {1: 0, 2: 0}, ())
    lost = {1: _Change(20, 2_000, 1, None, "power loss"),
            2: _Change(10, 1_000, 2, None, "power loss")}

    def rule(min_isr: int | None) -> str:
        return record_rule("lost_acked_write", snap, 0, {1, 2}, lost, {}, None,
                           {"acks": "all"}, era=(4, 1), min_isr=min_isr)

    assert rule(2) == "page_cache_loss"
    assert rule(1) == rule(None) == "min_isr_1"
