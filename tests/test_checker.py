"""Behaviour of ``traces.checker``: each anomaly on a small hand-built trace.

The traces are built with ``tests/spark/tracebuild.py`` (one topic ``t``, partition 0, three
replicas 0-2, min ISR 2 unless a test says otherwise). Definitions: ``docs/anomalies.md``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from spark.tracebuild import Trace, all_crashed, healthy, lossy, reassigned, scenario

from cli.check import main
from traces.checker import ANOMALIES, check_events, check_file
from traces.integrity import seal


def counts(t: Trace) -> dict[str, int]:
    return check_events(t.events).anomalies


def only(c: dict[str, int], **expected: int) -> None:
    """Every anomaly is zero except the ones named."""
    assert c == {a: expected.get(a, 0) for a in ANOMALIES}


# --------------------------------------------------------------------------- baseline


def test_healthy_run_has_no_anomalies_and_meets_default_expect() -> None:
    r = check_events(healthy().events)
    only(r.anomalies)
    assert r.expect_met and r.forbidden_found == [] and r.missing_expected == []
    s = r.partitions["t-0"]
    assert (s.final_log_replica, s.final_hw, s.offline, s.converged) == (0, 3, False, True)


# --------------------------------------------------------------------------- writes


def test_acked_write_missing_from_final_committed_log_is_lost() -> None:
    r = check_events(lossy().events)
    assert r.anomalies["lost_acked_write"] == 1
    assert r.details["lost_acked_write"][0]["value"] == "p0-1"
    assert "lost_acked_write" in r.forbidden_found and not r.expect_met


def test_acks1_loss_is_lost_acked_uncommitted() -> None:
    only(counts(lossy(acks="1")), lost_acked_uncommitted=1)


def test_acked_record_above_final_hw_counts_as_lost() -> None:
    t = healthy(values=2)
    t.at(40).ack("p0-9", 2)
    for ev in t.events:
        if ev["event"] == "final_log":
            ev["records"].append([2, "p0-9", 1])  # present, but at the HW (2): uncommitted
    assert counts(t)["lost_acked_write"] == 1


def test_record_below_final_log_start_offset_is_expired_not_lost() -> None:
    t = Trace()
    t.elect(0, [0, 1, 2])
    for i in range(4):
        t.at(1 + i).send(f"p0-{i}").hw(0, i, i + 1).ack(f"p0-{i}", i)
    t.at(30).converged(True)
    for r in (0, 1, 2):  # DeleteRecords(2): offsets 0 and 1 gone from every replica
        t.final_log(r, [(2, "p0-2"), (3, "p0-3")], hw=4, log_start_offset=2)
    only(counts(t), expired=2)


def test_acks0_records_are_never_judged() -> None:
    t = healthy(values=1)
    t.at(40).ack("p0-9", -1, acks="0")
    only(counts(t))


# --------------------------------------------------------------------------- HW


def test_new_leader_with_stale_hw_is_replica_regression_not_visible() -> None:
    """S11: r1 commits m@0 (HW 1), consumer reads it; r2 elected with local HW 0, then 1."""
    t = Trace()
    t.elect(1, [1, 2, 3])
    t.at(1).send("m").hw(1, 0, 1).ack("m", 0).consume(0, "m", hw=1)
    t.hw(2, 0, 1, role="follower", reason="fetch_response")
    t.at(2).elect(2, [2, 3], epoch=2)
    t.hw(2, 1, 0, reason="become_leader")  # stale HW on the new leader: local regression
    t.at(3).hw(2, 0, 1)
    t.at(30).converged(True)
    for r in (2, 3):
        t.final_log(r, [(0, "m")], hw=1)
    only(counts(t), hw_regression_replica=1)


def test_unclean_election_rewrites_consumed_offsets_is_visible_regression() -> None:
    """S8: offsets 1-2 committed on A only and consumed; B elected uncleanly writes n1."""
    t = Trace(scenario(min_isr=1, unclean=True))
    t.elect(0, [0, 1])
    t.at(1).hw(0, 0, 1).ack("a0", 0).consume(0, "a0", hw=1)
    t.at(2).isr([0, 1], [0])
    t.at(3).hw(0, 1, 3).ack("a1", 1).ack("a2", 2)
    t.consume(1, "a1", hw=3).consume(2, "a2", hw=3)
    t.at(4).elect(1, [1], epoch=2, election="unclean")
    t.hw(1, 1, 2).ack("n1", 1)
    t.at(5).consume(1, "n1", hw=2)  # re-reads offset 1: the log was rewritten under it
    t.at(30).converged(True)
    for r in (0, 1):
        t.final_log(r, [(0, "a0"), (1, "n1")], hw=2)
    c = counts(t)
    # a1, a2 lost; the reads of a1, a2 were rewritten/retracted; the re-read goes backwards
    assert c["lost_acked_write"] == 2
    assert c["hw_regression_visible"] == 2
    assert c["nonmonotonic_poll"] == 1
    assert c["read_uncommitted"] == 0 and c["log_divergence"] == 0


def test_read_served_under_an_hw_the_final_leader_never_reached_is_visible_regression() -> None:
    t = healthy(values=2)
    t.at(20).consume(0, "p0-0", hw=5, consumer="late")  # served under HW 5; final HW is 2
    assert counts(t)["hw_regression_visible"] == 1


# --------------------------------------------------------------------------- reads


def test_read_at_or_beyond_the_hw_it_was_served_under_is_read_uncommitted() -> None:
    t = healthy(values=2)
    t.at(20).consume(1, "p0-1", hw=1, consumer="c9")
    assert counts(t)["read_uncommitted"] == 1


def test_read_beyond_every_leader_hw_so_far_is_read_uncommitted() -> None:
    """KAFKA-14704 shape: a replica serving under an HW no leader has reached yet."""
    t = Trace()
    t.elect(0, [0, 1, 2])
    t.at(1).hw(0, 0, 1).ack("p0-0", 0)
    t.at(2).consume(1, "x1", hw=2)  # follower claims HW 2; leaders only ever reached 1
    t.at(3).hw(0, 1, 2).ack("p0-1", 1)
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(0, "p0-0"), (1, "p0-1")], hw=2)
    c = counts(t)
    assert c["read_uncommitted"] == 1
    assert c["hw_regression_visible"] == 1  # and the value it read was never committed


def test_consumer_jumping_over_offsets_is_poll_skip() -> None:
    t = healthy(values=4)
    t.at(20).consume(0, "p0-0", hw=4, consumer="c1").consume(3, "p0-3", hw=4, consumer="c1")
    only(counts(t), poll_skip=1)


def test_consumer_rereading_an_offset_is_nonmonotonic_poll() -> None:
    t = healthy(values=3)
    t.at(20).consume(1, "p0-1", hw=3)  # c0 already read 0,1,2
    only(counts(t), nonmonotonic_poll=1)


@pytest.mark.parametrize("protocol", ["eager", None])
def test_an_eager_rebalance_starts_a_new_poll_chain(protocol: str | None) -> None:
    """Eager protocol (and traces that do not name one): the consumer starts its kept
    partition again from the committed offset, so reading 1 after 2 is no anomaly."""
    t = healthy(values=3)
    t.at(20).rebalance(protocol=protocol).consume(1, "p0-1", hw=3)
    only(counts(t))


def test_a_cooperative_rebalance_keeps_the_chain_of_a_kept_partition() -> None:
    """Cooperative protocol: partition 0 stays with c0 and so does its position; reading 1
    after 2 is a nonmonotonic poll, and jumping from 2 to 4 a skip."""
    t = healthy(values=3)
    t.at(20).rebalance(protocol="cooperative").consume(1, "p0-1", hw=3)
    only(counts(t), nonmonotonic_poll=1)
    t = Trace(scenario())
    t.elect(0, [0, 1, 2])
    for i in range(5):
        t.at(1 + i).send(f"p0-{i}").hw(0, i, i + 1).ack(f"p0-{i}", i)
        if i < 3:
            t.consume(i, f"p0-{i}", hw=i + 1)
    t.at(20).rebalance(protocol="cooperative").consume(4, "p0-4", hw=5)
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(i, f"p0-{i}") for i in range(5)], hw=5)
    only(counts(t), poll_skip=1)


def test_a_cooperative_rebalance_ends_the_chain_of_a_partition_taken_away() -> None:
    """Cooperative protocol: partition 0 is taken from c0 and later given back: the new
    assignment's position comes from the committed offset, so a fresh chain starts."""
    t = healthy(values=3)
    t.at(20).assignment([1], protocol="cooperative").assignment([0, 1], protocol="cooperative")
    t.consume(1, "p0-1", hw=3)
    only(counts(t))


def test_same_value_at_two_offsets_is_one_duplicate() -> None:
    t = Trace()
    t.elect(0, [0, 1, 2])
    t.at(1).send("p0-0").hw(0, 0, 2).ack("p0-0", 1)  # retry appended it twice: offsets 0, 1
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(0, "p0-0"), (1, "p0-0")], hw=2)
    only(counts(t), duplicate=1)


def test_later_send_landing_at_lower_offset_is_nonmonotonic_send() -> None:
    t = Trace()
    t.elect(0, [0, 1, 2])
    t.at(1).send("p0-0").send("p0-1")
    t.at(2).hw(0, 0, 2).ack("p0-1", 0).ack("p0-0", 1)  # second send landed first
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(0, "p0-1"), (1, "p0-0")], hw=2)
    only(counts(t), nonmonotonic_send=1)


# --------------------------------------------------------------------------- logs


def test_replicas_disagreeing_below_both_hws_count_each_offset() -> None:
    t = Trace()
    t.elect(0, [0, 1])
    t.at(30).converged(True)
    t.final_log(0, [(0, "a"), (1, "b"), (2, "c")], hw=3)
    t.final_log(1, [(0, "a"), (1, "x"), (2, "y")], hw=3)
    c = check_events(t.events)
    assert c.anomalies["log_divergence"] == 2
    assert c.details["log_divergence"][0]["values"] == {"0": ["b"], "1": ["x"]}


def test_difference_above_one_replicas_hw_is_not_divergence() -> None:
    t = Trace()
    t.elect(0, [0, 1])
    t.at(30).converged(True)
    t.final_log(0, [(0, "a"), (1, "b")], hw=2)
    t.final_log(1, [(0, "a"), (1, "x")], hw=1)  # x above replica 1's HW: not yet compared
    only(counts(t))


def test_final_log_split_over_several_events_is_one_log() -> None:
    t = healthy(values=0)
    t.events = [e for e in t.events if e["event"] != "final_log"]
    for r in (0, 1, 2):
        t.final_log(r, [(0, "p0-0")], hw=2).final_log(r, [(1, "p0-1")], hw=2)
    t.ack("p0-0", 0).ack("p0-1", 1)  # after the logs: order does not matter
    only(counts(t))


# --------------------------------------------------------------------------- liveness


def test_partition_without_leader_at_end_is_no_convergence() -> None:
    t = Trace()
    t.elect(0, [0, 1, 2]).at(1).hw(0, 0, 1).ack("p0-0", 0)
    t.at(2).emit("partition_offline", node="controller", actor="controller", topic="t",
                 partition=0, leader_epoch=1)
    t.at(30).final_log(1, [(0, "p0-0")], hw=1).final_log(2, [], hw=0)
    r = check_events(t.events)
    only(r.anomalies, no_convergence=1)
    assert r.partitions["t-0"].final_log_replica == 1  # highest HW stands in for the leader


def test_offline_partition_is_judged_on_the_log_a_recovery_would_elect() -> None:
    # every replica crashed, HW checkpoints at 0: the acked records are on disk, not lost
    r = check_events(all_crashed().events)
    only(r.anomalies, no_convergence=1)
    s = r.partitions["t-0"]
    # replica 1: epoch 2 like replica 0 but longer; replica 2 is longest but of epoch 1
    assert (s.final_log_replica, s.final_hw, s.offline) == (1, 3, True)


def test_offline_partition_still_loses_what_the_recovered_log_lacks() -> None:
    r = check_events(all_crashed(lost_tail=True).events)
    only(r.anomalies, no_convergence=1, lost_acked_write=1, hw_regression_visible=1)
    assert r.details["lost_acked_write"][0]["value"] == "p0-2"


def test_convergence_false_counts_once_per_partition() -> None:
    t = healthy()
    t.converged(False).converged(False)
    only(counts(t), no_convergence=1)


def test_missing_convergence_event_counts_nothing() -> None:
    t = healthy()
    t.events = [e for e in t.events if e["event"] != "convergence"]
    only(counts(t))


def test_shrink_then_expand_within_60s_is_one_churn_per_replica() -> None:
    t = healthy()
    t.at(100).isr([0, 1, 2], [0, 1]).at(159).isr([0, 1], [0, 1, 2])  # 59 s: churn
    t.at(200).isr([0, 1, 2], [0, 2]).at(261).isr([0, 2], [0, 1, 2])  # 61 s: not churn
    c = counts(t)
    assert c["isr_churn"] == 1
    assert c["under_min_isr"] == 0  # ISR of 2 is not below min ISR 2


def test_time_with_isr_below_min_isr_is_summed_in_ms() -> None:
    t = healthy()
    t.at(100).isr([0, 1, 2], [0]).at(102.5).isr([0], [0, 1])
    t.at(200).elect(0, [0], epoch=2)
    t.at(201).emit("phase", node="sim", actor="sim", phase="final")  # trace ends at 201 s
    assert counts(t)["under_min_isr"] == 3500


# --------------------------------------------------------------------------- expect


def test_expected_anomaly_that_does_not_appear_fails_expect() -> None:
    t = healthy(expect={"anomalies": ["lost_acked_write"], "forbid": []})
    r = check_events(t.events)
    assert r.missing_expected == ["lost_acked_write"] and not r.expect_met


def test_bug_reproduction_meets_expect_when_anomaly_appears() -> None:
    t = lossy()
    t.events[0]["scenario"]["expect"] = {"anomalies": ["lost_acked_write"], "forbid": []}
    assert check_events(t.events).expect_met


# --------------------------------------------------------------------------- CLI


def test_check_json_prints_one_object_with_every_anomaly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = healthy().write(tmp_path / "ok.jsonl")
    assert main([str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["anomalies"]) == list(ANOMALIES)
    assert out["expect_met"] is True and out["events"] == len(healthy().events) + 1
    assert len(out["digest"]) == 64 and out["trace"] == str(path)


def test_check_exits_1_when_expect_not_met(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(lossy().write(tmp_path / "lost.jsonl.gz"))]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("LOST ") and "UNEXPECTED: lost_acked_write is forbidden here" in first


def test_check_output_is_byte_identical_across_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = lossy().write(tmp_path / "lost.jsonl")
    main([str(path), "--json"])
    first = capsys.readouterr().out
    main([str(path), "--json"])
    assert capsys.readouterr().out == first


def test_line_with_bad_crc_exits_2_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = healthy().write(tmp_path / "bad.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b'"seq":3', b'"seq":4')
    path.write_bytes(b"".join(lines))
    assert main([str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{path}:4:" in err and "crc" in err


def test_well_sealed_line_that_is_not_json_exits_2(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = healthy().write(tmp_path / "bad.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = seal(b"{not json}")
    path.write_bytes(b"".join(lines))
    assert main([str(path)]) == 2
    assert f"{path}:3:" in capsys.readouterr().err


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err


def test_trace_without_run_end_or_with_torn_last_line_is_checked(tmp_path: Path) -> None:
    path = lossy().write(tmp_path / "killed.jsonl", end=False)
    path.write_bytes(path.read_bytes() + b'{"seq":99,"ts_us')
    r = check_file(path)
    assert r.truncated and r.anomalies["lost_acked_write"] == 1


def test_gzip_trace_reads_like_plain(tmp_path: Path) -> None:
    plain = check_file(lossy().write(tmp_path / "a.jsonl"))
    gz = check_file(lossy().write(tmp_path / "a.jsonl.gz"))
    assert plain == gz
    assert gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes()) == (
        tmp_path / "a.jsonl").read_bytes()


def test_a_send_whose_ack_was_lost_is_placed_by_the_read_that_saw_it() -> None:
    """p0-0 is sent first but its acknowledgement never arrives; p0-1, sent after it, is
    acknowledged at 0; a consumer reads p0-0 at 1. The read is evidence of where p0-0 was
    written, so the producer's sends landed out of order (Jepsen's version orders)."""
    from spark.tracebuild import catalogue
    c = counts(catalogue()["placed_send_cooperative"])
    assert c["nonmonotonic_send"] == 1
    # the cooperative chain skips 2 once; the re-assigned partition and the new process
    # start fresh chains
    assert c["poll_skip"] == 1 and c["nonmonotonic_poll"] == 0


@pytest.mark.parametrize("how", ["cut", "aborted", "error"])
def test_a_run_that_did_not_finish_is_incomplete_never_met(
        tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A trace cut before ``run_end`` (a killed writer, a copy cut short) or ending with
    status ``aborted``/``error`` is not bad input — its anomalies are counted — but gets no
    verdict: ``isrlab check`` says INCOMPLETE and exits 3, even when nothing was expected
    and nothing is wrong in what is there (before, a healthy-looking cut trace was "met")."""
    path = healthy().write(tmp_path / "t.jsonl", end=(how != "cut"))
    if how != "cut":
        lines = path.read_bytes().splitlines(keepends=True)
        end = json.loads(lines[-1])
        end["status"] = how
        del end["crc"]
        lines[-1] = seal(json.dumps(end, separators=(",", ":")).encode())
        path.write_bytes(b"".join(lines))
    r = check_file(path)
    assert r.incomplete and not r.expect_met and r.forbidden_found == []
    assert main([str(path)]) == 3
    assert "INCOMPLETE" in capsys.readouterr().out
    assert main([str(path), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["incomplete"] is True
    complete = healthy().write(tmp_path / "ok.jsonl")
    assert not check_file(complete).incomplete and main([str(complete)]) == 0


def test_a_leader_or_isr_member_outside_the_replica_list_is_outside_assignment() -> None:
    """The replica list starts as the ISR a partition is created with and follows every
    ``replicas_change``; an elected leader or a committed ISR member outside it counts once
    per event. A replica deleted and created again starts its HW over: no regression."""
    c = check_events(reassigned().events).anomalies
    assert c["outside_assignment"] == 2
    assert c["hw_regression_replica"] == 0


def test_a_gzip_trace_cut_short_is_incomplete_as_a_plain_one_is(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 23 (review): a .jsonl.gz whose writer was killed ends without gzip's end of
    stream; check called it unreadable (exit 2) where the same run written plain is
    INCOMPLETE (exit 3), and analyze keeps the lines before a cut. Now both are incomplete,
    counted up to the cut; and the report of such a file no longer dies on it."""
    whole = lossy().write(tmp_path / "whole.jsonl.gz")
    data = whole.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    r = check_file(cut)
    assert r.incomplete and r.truncated and 0 < r.events < check_file(whole).events
    assert main([str(cut)]) == 3
    assert "INCOMPLETE" in capsys.readouterr().out
    from cli import report
    assert report.main([str(cut), "-o", str(tmp_path / "r.html")]) == 0
    assert "INCOMPLETE" in capsys.readouterr().out
