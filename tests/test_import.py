"""isrlab import (issue 22): Kafka broker and controller logs read into an isrlab trace.

Inputs are real log excerpts (``tests/data/kafka_logs/``, each with its source); every test
states the facts the importer must extract from them — broker, partition, ISR before and
after, epochs, offsets — as the lines say them, and nothing they do not say.
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cli.import_logs import main
from traces.checker import check_file
from traces.logs.importer import import_logs
from traces.logs.kinds import KINDS
from traces.reader import iter_events

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "tests" / "data" / "kafka_logs"


def imported(tmp_path: Path, *names: str, **kw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / "t.jsonl"
    import_logs([str(LOGS / n) for n in names], str(out), **kw)
    with iter_events(out) as events:   # a verified trace: crc, seq, run_end digest
        evs = list(events)
    return evs[0], [e for e in evs[1:-1]]


def only(evs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in evs if e["event"] == name]


def test_zookeeper_era_isr_shrinks_and_stale_zkversions(tmp_path: Path) -> None:
    """0.10.x (librdkafka#948): ``Partition [t,p] on broker 1: Shrinking ISR for partition
    [t,p] from 1,0,2 to 1`` and the ``Cached zkVersion [0] not equal to that in zookeeper``
    that follows each (KAFKA-2729's signature)."""
    header, evs = imported(tmp_path, "22-librdkafka948-isr-shrink-zkversion-0102.log")
    shrinks = only(evs, "isr_change")
    assert [(e["topic"], e["partition"], e["old"], e["new"], e["node"]) for e in shrinks] == [
        ("topicold", 24, [1, 0, 2], [1], "broker-1"), ("topic", 24, [1, 0, 2], [1], "broker-1"),
        ("topic", 6, [1, 3, 5], [1, 3], "broker-1"), ("topic", 42, [1, 5, 6], [1, 6],
                                                      "broker-1")]
    assert all(e["reason"] == "shrink" and "hw" not in e for e in shrinks)  # not in the line
    stale = only(evs, "isr_update_skipped")
    assert [(e["topic"], e["partition"], e["partition_epoch"]) for e in stale] == [
        ("topicold", 0, 0), ("topicold", 24, 0), ("topic", 24, 0), ("topic", 6, 2)]
    imp = header["imported"]
    assert imp["kinds"] == {"isr_shrink": 4, "zk_version_stale": 4}
    assert imp["records"] == imp["parsed"] == 8 and imp["time_origin"].startswith(
        "2016-12-18T15:15:55.046")


def test_isr_expansion_in_the_old_format(tmp_path: Path) -> None:
    _, evs = imported(tmp_path, "09-librdkafka1575-notleader-expanding-isr-zkversion-"
                                "controller.log")
    [first, *_] = only(evs, "isr_change")
    assert (first["topic"], first["partition"], first["old"], first["new"], first["reason"]) == (
        "LIVETOPICOLD", 36, [1, 5], [1, 5, 0], "expand")


def test_kraft_fencing_and_unclean_partition_changes_are_the_controllers(tmp_path: Path) -> None:
    """KRaft controller (AutoMQ's fork, Apache's wording: ``ReplicationControlManager``,
    ``PartitionRegistration.maybeLogPartitionChange``)."""
    _, evs = imported(tmp_path, "03-automq-kraft-controller-fencing-unclean.log")
    [fenced] = only(evs, "broker_fenced")
    assert (fenced["broker"], fenced["reason"], fenced["node"]) == (1, "session_timeout",
                                                                   "controller")
    elected = only(evs, "leader_elected")
    assert [(e["topic"], e["partition"], e["leader"], e["leader_epoch"], e["isr"],
             e["election"]) for e in elected] == [
        ("testOther", 1, 0, 86, [0], "unclean"), ("testOther", 3, 0, 74, [0], "unclean"),
        ("testMain", 5, 0, 114, [0], "unclean")]
    assert all(e["node"] == "controller" for e in only(evs, "isr_change"))


def test_become_leader_with_its_epoch_and_start_offset(tmp_path: Path) -> None:
    _, evs = imported(tmp_path, "18-yolean-log-truncation-not-allowed-crashloop.log")
    [lead] = only(evs, "become_leader")
    assert (lead["topic"], lead["partition"], lead["replica"], lead["leader_epoch"],
            lead["leso"], lead["previous_leader_epoch"]) == (
        "kafka-monitor-topic", 0, 2, 4, 1, -1)


def test_truncation_to_the_local_hw_under_kubernetes_timestamps(tmp_path: Path) -> None:
    """Each line behind a container runtime's RFC 3339 timestamp; the "has no effect" lines
    are read (counted) and make no event."""
    header, evs = imported(tmp_path, "30-yolean261-truncate-to-local-hw-k8s-timestamps.log")
    cuts = only(evs, "log_truncate")
    assert [(e["partition"], e["replica"], e["new_leo"], e["reason"]) for e in cuts] == [
        (9, 2, 0, "high_watermark"), (42, 2, 0, "high_watermark"), (24, 2, 0, "high_watermark")]
    assert "old_leo" not in cuts[0]   # the line does not say
    assert header["imported"]["kinds"] == {"truncate_no_effect": 3, "truncate_to_hw": 3}


def test_docker_json_lines_log_start_and_retention(tmp_path: Path) -> None:
    _, evs = imported(tmp_path, "05-bitnami-371-retention-deleting-segments-json.log",
                      broker=3)
    [lso] = only(evs, "log_start_offset_update")
    assert (lso["topic"], lso["partition"], lso["new"], lso["reason"], lso["node"]) == (
        "topic.name", 24, 3053267, "segment deletion", "broker-3")   # --broker: the file's
    [seg] = only(evs, "segment_delete")
    assert seg["base_offset"] == 3048556 and seg["reason"].startswith("log retention time")


def test_log4j2_layout_and_recovery_and_min_isr(tmp_path: Path) -> None:
    _, evs = imported(tmp_path, "29-strimzi11613-kraft-retention-deleting-segment.log")
    [seg] = only(evs, "segment_delete")
    assert (seg["topic"], seg["partition"], seg["base_offset"]) == (
        "strimzi.cruisecontrol.partitionmetricsamples", 25, 0)
    _, evs = imported(tmp_path / "b", "04-bitnami-unclean-start-recovering-segments.log")
    [rec] = [e for e in only(evs, "log_recovery") if "unflushed_segment" in e]
    assert (rec["topic"], rec["partition"], rec["unflushed_segment"]) == (
        "__consumer_offsets", 41, 0)
    _, evs = imported(tmp_path / "c", "06-yolean-notenoughreplicas-consumer-offsets.log")
    [rej] = only(evs, "append_rejected")
    assert (rej["topic"], rej["partition"], rej["isr_size"], rej["min_isr"], rej["node"]) == (
        "__consumer_offsets", 32, 1, 2, "broker-1")


def test_zookeeper_controller_broker_changes_and_failed_elections(tmp_path: Path) -> None:
    _, evs = imported(tmp_path, "11-mesos-kafka-controller-broker-change-082.log",
                      "25-sentry383-offline-to-online-failed-election.log",
                      "28-kafka-pr11291-kraft-registered-new-broker.log")
    changes = only(evs, "broker_change")
    assert [(c["added"], c["deleted"], c["live"]) for c in changes] == [
        ([], [1], [0, 5, 2, 3, 4]), ([1], [], [0, 5, 1, 2, 3, 4])]
    assert [f["broker"] for f in only(evs, "broker_fenced")] == [1]
    [off] = only(evs, "partition_offline")
    assert (off["topic"], off["partition"]) == ("__consumer_offsets", 40)
    assert [(r["broker"], r["broker_epoch"]) for r in only(evs, "broker_registered")] == [
        (0, 0), (0, 0)]
    times = [e["ts_us"] for e in evs]
    assert times == sorted(times)   # files merged by time


def test_what_is_not_understood_is_counted_and_sampled_never_dropped(tmp_path: Path) -> None:
    header, evs = imported(tmp_path, "01-kafka7165-zk-session-expired-isr-shrink.log",
                           "07-kafka-junit-notenoughreplicas-min-isr.log")
    imp = header["imported"]
    # the KAFKA-7165 paste redacted its partition names (spaces inside the brackets), and the
    # kafka-junit paste has no timestamps (an slf4j layout): both said, neither guessed
    assert evs == []
    assert imp["unparsed_replication_like"] == 5 and len(imp["samples"]) == 5
    assert "Shrinking ISR from 1,3,4,2 to 1,4,2" in imp["samples"][0]
    assert imp["unframed_lines"] >= 7


def test_an_imported_trace_is_never_given_a_verdict(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.jsonl"
    import_logs([str(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log")], str(out))
    result = check_file(out)
    assert result.imported and result.to_json_dict()["expect_met"] is None
    assert result.to_json_dict()["anomalies"]["lost_acked_write"] is None
    from cli.check import main as check_main
    assert check_main([str(out)]) == 0
    text = capsys.readouterr().out
    assert "not available for imported traces" in text and "expect met" not in text


def test_every_kind_cites_its_source() -> None:
    assert len({k.name for k in KINDS}) == len(KINDS) >= 40
    for k in KINDS:
        assert ".scala" in k.source or ".java" in k.source, k.name
        assert any(c.isdigit() for c in k.source), k.name   # the releases


def test_bad_input_is_one_line_and_nothing_is_overwritten(tmp_path: Path) -> None:
    def isrlab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cli", "import", *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    binary = tmp_path / "x.log"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    existing = tmp_path / "kept.jsonl"
    existing.write_text("precious")
    good = str(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log")
    for args, words in (((str(binary), "--out", str(tmp_path / "a.jsonl")), "binary"),
                        ((good, "--out", str(existing)), "exists"),
                        ((good, "--out", good), "refusing to overwrite"),
                        ((str(tmp_path / "nope.log"), "--out", str(tmp_path / "b.jsonl")),
                         "no such file"),
                        ((good, "--tz", "Mars/Olympus", "--out", str(tmp_path / "c.jsonl")),
                         "--tz"),
                        ((good, "--master", "bogus://x", "--out", str(tmp_path / "d.jsonl")),
                         "--master"),
                        ((good, "--engine", "jvm", "--out", str(tmp_path / "e.jsonl")),
                         "--engine")):
        proc = isrlab(*args)
        err = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(err) == 1 and words in err[0], (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert existing.read_text() == "precious"
    # a gzip cut in the middle: the lines before the cut are imported
    text = b"".join(path.read_bytes() for path in sorted(LOGS.glob("*.log")))
    data = gzip.compress(text, compresslevel=1)
    cut = tmp_path / "server.log.1.gz"
    cut.write_bytes(data[: len(data) * 2 // 3])
    assert main([str(cut), "--out", str(tmp_path / "g.jsonl")]) == 0
    with iter_events(tmp_path / "g.jsonl") as evs:
        header = next(evs)
    whole = tmp_path / "whole.log"
    whole.write_bytes(text)
    assert main([str(whole), "--out", str(tmp_path / "w.jsonl")]) == 0
    with iter_events(tmp_path / "w.jsonl") as evs:
        full = next(evs)
    assert 0 < header["imported"]["parsed"] < full["imported"]["parsed"]
    assert json.dumps(header["imported"]["files"]).count("server.log.1.gz") == 1


def test_show_explain_and_report_read_an_imported_trace(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    from cli import report
    from cli.explain import main as explain_main
    from cli.show import main as show_main
    out = tmp_path / "t.jsonl"
    import_logs([str(LOGS / "03-automq-kraft-controller-fencing-unclean.log"),
                 str(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log")], str(out))
    assert show_main([str(out), "--events", "leader_elected"]) == 0
    assert "testOther-1 leader r0 epoch 86 isr [0] (unclean)" in capsys.readouterr().out
    assert explain_main([str(out)]) == 0
    capsys.readouterr()
    assert report.main([str(out), "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out   # the logs' unclean elections: a possible loss, not "lost"
    assert "POSSIBLE LOSS 3 unclean elections on 3 partitions — from Kafka's logs" in out
    html = (tmp_path / "r.html").read_text()
    assert "POSSIBLE LOSS 3 unclean elections" in html and "does not prove" in html


def test_a_0_9_follower_resetting_its_fetch_offset_to_the_leaders_start(tmp_path: Path) -> None:
    """KAFKA-3123 (0.9): ``Replica 177775588 for partition [EventLogs4,1] reset its fetch
    offset from 0 to current leader 169595708's start offset 334086``: the follower's log is
    emptied and restarts at the leader's log start."""
    _, evs = imported(tmp_path, "31-kafka3123-follower-offset-out-of-range-09.log")
    [cut] = only(evs, "log_truncate")
    assert (cut["topic"], cut["partition"], cut["replica"], cut["old_leo"], cut["new_leo"],
            cut["reason"], cut["to"]) == ("EventLogs4", 1, 177775588, 0, 334086,
                                          "offset_out_of_range", "start")


def test_log_loads_and_coordinator_loads_from_real_lines(tmp_path: Path) -> None:
    """A log loaded after a restart says its end offset (2.8's ``Completed load of Log(...,
    logEndOffset=3) with 1 segments``; 1.1-2.4's ``... log start offset 0 and log end offset
    0``); a group coordinator's load says its partition, time and epoch (3.x)."""
    _, evs = imported(tmp_path, "04-bitnami-unclean-start-recovering-segments.log")
    loaded = [e for e in only(evs, "log_recovery") if "leo" in e]
    assert [(e["topic"], e["partition"], e["leo"], e["hw"], e["log_start_offset"])
            for e in loaded] == [("__consumer_offsets", 41, 3, 0, 0)]
    _, evs = imported(tmp_path / "b", "08-apicurio-transaction-state-log-load.log")
    [tx] = only(evs, "log_recovery")
    assert (tx["topic"], tx["partition"], tx["leo"], tx["log_start_offset"]) == (
        "__transaction_state", 25, 0, 0)
    _, evs = imported(tmp_path / "c", "10-thingsboard-group-metadata-loading-3x.log")
    first = only(evs, "coordinator_loaded")[0]
    assert (first["partition"], first["load_ms"], first["leader_epoch"], first["replica"]) == (
        10, 31, 0, 0)


def test_zookeeper_offline_elections_fetch_errors_and_fetchers_from_real_lines(
        tmp_path: Path) -> None:
    """0.10/0.11 (librdkafka#1575): ``[OfflinePartitionLeaderSelector]: Selected new leader
    and ISR {"leader":1,"leader_epoch":1,"isr":[1]} for offline partition [LIVETOPICOLD,0]``
    and a fetcher's ``Error for partition [__consumer_offsets,9] to broker 1:...
    NotLeaderForPartitionException``; 2.x (confluent-kafka-dotnet#1460): ``[ReplicaFetcherManager
    on broker 1] Removed fetcher for partitions Set(eventbus-2, eventbus-1, eventbus-0)``."""
    _, evs = imported(tmp_path, "09-librdkafka1575-notleader-expanding-isr-zkversion-"
                                "controller.log", broker=5)
    offline = [e for e in only(evs, "leader_elected") if e["election"] == "offline"]
    assert (offline[0]["topic"], offline[0]["partition"], offline[0]["leader"],
            offline[0]["leader_epoch"], offline[0]["isr"], offline[0]["node"]) == (
        "LIVETOPICOLD", 0, 1, 1, [1], "controller")
    [err] = only(evs, "fetch_error")
    # the line names no broker; the file's other lines do ("Partition [...] on broker 1"),
    # and they come before --broker (docs/import.md, "Which broker wrote a line")
    assert (err["topic"], err["partition"], err["error"], err["replica"]) == (
        "__consumer_offsets", 9, "NotLeaderForPartitionException", 1)
    _, evs = imported(tmp_path / "b", "23-dotnet1460-state-change-become-leader-docker.log")
    [removed] = only(evs, "fetcher_partitions")
    assert (removed["change"], removed["replica"], removed["topic_partitions"]) == (
        "remove", 1, ["eventbus-0", "eventbus-1", "eventbus-2"])


# Kinds with no public example found: lines written from the format string of the release
# cited (the source named in each kind's ``source``), with made-up values only.
FROM_FORMAT = [
    # core/src/main/scala/kafka/cluster/Partition.scala, makeFollower, 2.8.2 (StateChangeLogger
    # prefix "[Broker id=N] ")
    ("[2021-03-01 10:00:00,000] INFO [Broker id=2] Follower orders-0 starts at leader epoch 5 "
     "from offset 120 with high watermark 118. Previous leader epoch was 4. (state.change.logger)",
     "become_follower", {"topic": "orders", "partition": 0, "replica": 2, "leader_epoch": 5,
                         "leo": 120, "hw": 118}),
    # same, 3.7.1
    ("[2024-03-01 10:00:00,000] INFO [Broker id=3] Follower orders-1 starts at leader epoch 9 "
     "from offset 40 with partition epoch 12 and high watermark 38. Current leader is 1. "
     "Previous leader Some(3) and previous leader epoch was 8. (state.change.logger)",
     "become_follower", {"partition": 1, "replica": 3, "leader": 1, "partition_epoch": 12}),
    # Partition.makeLeader, 3.7.1
    ("[2024-03-01 10:00:00,000] INFO [Broker id=1] Leader orders-0 with topic id "
     "Fs3yVbY9S2qtNEF8A-xMSA starts at leader epoch 7 from offset 200 with partition epoch 9, "
     "high watermark 198, ISR [1,2], adding replicas [] and removing replicas [] . Previous "
     "leader Some(2) and previous leader epoch was 6. (state.change.logger)",
     "become_leader", {"replica": 1, "leader_epoch": 7, "leso": 200, "hw": 198,
                       "partition_epoch": 9, "isr": [1, 2], "previous_leader_epoch": 6}),
    # Partition.updateIsr / handleAlterPartitionUpdate, 3.7.1
    ("[2024-03-01 10:00:00,000] INFO [Partition orders-0 broker=1] ISR updated to 1 "
     "(under-min-isr) and version updated to 14 (kafka.cluster.Partition)",
     "isr_change", {"new": [1], "reason": "updated", "partition_epoch": 14}),
    # ReplicaFetcherThread.truncate, 2.4.1
    ("[2020-03-01 10:00:00,000] WARN [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
     "Truncating orders-0 to offset 90 below high watermark 100 "
     "(kafka.server.ReplicaFetcherThread)",
     "log_truncate", {"replica": 2, "new_leo": 90, "hw": 100, "reason": "below_high_watermark"}),
    # AbstractFetcherThread.handleOutOfRangeError, 2.8.2
    ("[2021-03-01 10:00:00,000] INFO [ReplicaFetcher replicaId=3, leaderId=2, fetcherId=0] "
     "Current offset 500 for partition orders-2 is out of range, which typically implies a "
     "leader change. Reset fetch offset to 450 (kafka.server.ReplicaFetcherThread)",
     "fetch_offset_reset", {"partition": 2, "replica": 3, "old": 500, "new": 450}),
    # AbstractFetcherThread.fetchOffsetAndTruncate, 2.4.1
    ("[2020-03-01 10:00:00,000] WARN [ReplicaFetcher replicaId=3, leaderId=2, fetcherId=0] "
     "Reset fetch offset for partition orders-2 from 500 to current leader's latest offset 450 "
     "(kafka.server.ReplicaFetcherThread)",
     "log_truncate", {"replica": 3, "old_leo": 500, "new_leo": 450, "to": "latest"}),
    # PartitionStateMachine (state-change.log), 2.8.2; LeaderAndIsr.toString of 2.8.2
    ("[2021-03-01 10:00:00,000] INFO [Controller id=1 epoch=3] Changed partition orders-0 from "
     "OfflinePartition to OnlinePartition with state LeaderAndIsr(leader=2, leaderEpoch=5, "
     "isr=List(2), zkVersion=7) (state.change.logger)",
     "leader_elected", {"leader": 2, "leader_epoch": 5, "isr": [2], "partition_epoch": 7,
                        "election": "OfflinePartition->OnlinePartition"}),
    # same, 3.7.1 (LeaderAndIsr with isrWithBrokerEpoch)
    ("[2024-03-01 10:00:00,000] INFO [Controller id=1 epoch=3] Changed partition orders-0 from "
     "OnlinePartition to OnlinePartition with state LeaderAndIsr(leader=3, leaderEpoch=6, "
     "isrWithBrokerEpoch=List(BrokerState(brokerId=3, brokerEpoch=-1), BrokerState(brokerId=1, "
     "brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=8) (state.change.logger)",
     "leader_elected", {"leader": 3, "isr": [3, 1], "partition_epoch": 8}),
    # AbstractFetcherThread.truncateToEpochEndOffsets, 3.7.1 (OffsetTruncationState's
    # toString: "TruncationState(offset=..., completed=...)")
    ("[2024-03-01 10:00:00,000] INFO [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
     "Truncating partition orders-0 with TruncationState(offset=95, completed=true) due to "
     "leader epoch and offset EpochEndOffset(errorCode=0, partition=0, leaderEpoch=4, "
     "endOffset=95) (kafka.server.ReplicaFetcherThread)",
     "log_truncate", {"replica": 2, "new_leo": 95, "reason": "leader_epoch"}),
    # AbstractFetcherThread.markPartitionFailed, 2.4.1
    ("[2020-03-01 10:00:00,000] WARN [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] "
     "Partition orders-0 marked as failed (kafka.server.ReplicaFetcherThread)",
     "partition_failed", {"topic": "orders", "partition": 0, "replica": 2}),
    # KafkaController.elect, 2.4.1
    ("[2020-03-01 10:00:00,000] INFO [Controller id=1] 1 successfully elected as the "
     "controller. Epoch incremented to 4 and epoch zk version is now 3 "
     "(kafka.controller.KafkaController)",
     "controller_elected", {"broker": 1, "controller_epoch": 4}),
    # KafkaController.doControlledShutdown, 1.1.1
    ("[2018-03-01 10:00:00,000] INFO [Controller id=1] Shutting down broker 3 "
     "(kafka.controller.KafkaController)",
     "controlled_shutdown", {"broker": 3}),
    # LogManager.loadLogs, 2.8.2 and 3.7.1
    ("[2021-03-01 10:00:00,000] INFO Attempting recovery for all logs in /var/kafka-logs since "
     "no clean shutdown file was found (kafka.log.LogManager)",
     "log_dir_recovery", {"dir": "/var/kafka-logs", "clean_shutdown": False}),
    ("[2024-03-01 10:00:00,000] INFO Skipping recovery of 52 logs from /var/kafka-logs since "
     "clean shutdown file was found (kafka.log.LogManager)",
     "log_dir_recovery", {"clean_shutdown": True, "logs": 52}),
    # LogSegment.recover, 2.4.1
    ("[2020-03-01 10:00:00,000] WARN Found invalid messages in log segment "
     "/var/kafka-logs/orders-0/00000000000000000000.log at byte offset 4096: Record is corrupt "
     "(stored crc = 1, computed crc = 2). null (kafka.log.LogSegment)",
     "segment_corruption", {"topic": "orders", "partition": 0, "byte_offset": 4096}),
    # Log.deleteOldSegments, 2.4.1
    ("[2020-03-01 10:00:00,000] INFO [Log partition=orders-0, dir=/var/kafka-logs] Found "
     "deletable segments with base offsets [0,470] due to retention time 604800000ms breach "
     "(kafka.log.Log)",
     "segment_delete", {"topic": "orders", "base_offset": 0, "_count": 2}),
    # PartitionLeaderSelector (OfflinePartitionLeaderSelector.selectLeader), 0.10.2.2
    ("[2017-03-01 10:00:00,000] WARN [OfflinePartitionLeaderSelector]: No broker in ISR is "
     "alive for [orders,0]. Elect leader 3 from live brokers 3. There's potential data loss. "
     "(kafka.controller.OfflinePartitionLeaderSelector)",
     "leader_elected", {"topic": "orders", "partition": 0, "leader": 3, "election": "unclean"}),
    # AbstractFetcherManager.addFetcherForPartitions, 2.4.1 (a Map of OffsetAndEpoch)
    ("[2020-03-01 10:00:00,000] INFO [ReplicaFetcherManager on broker 2] Added fetcher to "
     "broker 1 for partitions Map(orders-0 -> (offset=5, leaderEpoch=3), orders-3 -> "
     "(offset=0, leaderEpoch=3)) (kafka.server.ReplicaFetcherManager)",
     "fetcher_partitions", {"change": "add", "leader": 1, "replica": 2,
                            "topic_partitions": ["orders-0", "orders-3"]}),
    # ReplicationControlManager.alterPartition, 3.7.1 (under the controller's prefix)
    ("[2024-03-01 10:00:00,000] INFO [QuorumController id=0] Rejecting AlterPartition request "
     "from node 2 for orders-0 because the current leader is 1. "
     "(org.apache.kafka.controller.ReplicationControlManager)",
     "alter_partition_result", {"topic": "orders", "partition": 0, "replica": 2,
                                "error": "REJECTED", "node": "controller"}),
    # Partition.handleAlterPartitionError, 2.8.2
    ("[2021-03-01 10:00:00,000] WARN [Partition orders-0 broker=1] Failed to update ISR to "
     "PendingExpandIsr(isr=Set(1), newInSyncReplicaId=2) due to unexpected "
     "UNKNOWN_SERVER_ERROR. Retrying. (kafka.cluster.Partition)",
     "alter_partition_result", {"partition": 0, "replica": 1, "error": "UNKNOWN_SERVER_ERROR"}),
    # KafkaController.onPreferredReplicaElection, 1.1.1
    ("[2018-03-01 10:00:00,000] INFO [Controller id=1] Partition orders-0 completed preferred "
     "replica leader election. New leader is 2 (kafka.controller.KafkaController)",
     "leader_elected", {"leader": 2, "election": "preferred"}),
    # GroupMetadataManager.removeGroupsForPartition, 2.8.2
    ("[2021-03-01 10:00:00,000] INFO [GroupMetadataManager brokerId=1] Finished unloading "
     "__consumer_offsets-7 for coordinator epoch 3. Removed 12 cached offsets and 2 cached "
     "groups. (kafka.coordinator.group.GroupMetadataManager)",
     "coordinator_unload", {"partition": 7, "leader_epoch": 3, "offsets_removed": 12,
                            "groups_removed": 2, "replica": 1}),
    # KafkaController.onControllerFailover, 1.1.1
    ("[2018-03-01 10:00:00,000] INFO [Controller id=3] Ready to serve as the new controller "
     "with epoch 9 (kafka.controller.KafkaController)",
     "controller_elected", {"broker": 3, "controller_epoch": 9}),
    # BrokerHeartbeatManager, 3.7.1
    ("[2024-03-01 10:00:00,000] INFO [QuorumController id=0] The request from broker 2 to "
     "unfence has been granted because it has caught up with the offset of its register "
     "broker record 1234. (org.apache.kafka.controller.BrokerHeartbeatManager)",
     "broker_unfenced", {"broker": 2}),
]


@pytest.mark.parametrize("line, event, facts", FROM_FORMAT)
def test_kinds_known_from_their_format_strings(tmp_path: Path, line: str, event: str,
                                               facts: dict[str, Any]) -> None:
    log = tmp_path / "server.log"
    log.write_text(line + "\n")
    out = tmp_path / "t.jsonl"
    import_logs([str(log)], str(out))
    with iter_events(out) as events:
        evs = [e for e in events if e["event"] == event]
    facts = dict(facts)
    assert len(evs) == facts.pop("_count", 1), evs
    for k, v in facts.items():
        assert evs[0][k] == v, (k, evs[0])


def test_the_report_timeline_of_an_imported_multi_broker_excerpt(tmp_path: Path) -> None:
    """Issue 22's acceptance: ISR bands (every broker the lines name, the ISR before the
    first change included), elections and truncations on the partition timelines."""
    from report.figures import timeline_figure
    from report.reading import read_view
    out = tmp_path / "t.jsonl"
    import_logs([str(LOGS / n) for n in (
        "09-librdkafka1575-notleader-expanding-isr-zkversion-controller.log",
        "22-librdkafka948-isr-shrink-zkversion-0102.log",
        "30-yolean261-truncate-to-local-hw-k8s-timestamps.log")], str(out))
    view = read_view(str(out))

    def names(p: str) -> set[str]:
        pv = view.partitions[p]
        return {str(t.name) for t in timeline_figure(view, pv, [200] * 64, []).data}

    assert {"in ISR broker 1", "in ISR broker 3", "in ISR broker 5"} <= names("topic-6")
    assert {"in ISR broker 0", "in ISR broker 1", "in ISR broker 5"} <= names(
        "LIVETOPICOLD-36")
    assert "leader" in names("LIVETOPICOLD-0")          # the offline election
    assert "log truncation" in names("__consumer_offsets-9")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_import_draws_its_reading_and_writing_bars(tmp_path: Path) -> None:
    """Issue 23: a long import shows tqdm's bars (reading by the files' bytes, writing by
    events) on a terminal; off one it writes nothing but its one-line problems."""
    shown = _Terminal()
    res = import_logs([str(LOGS)], str(tmp_path / "t.jsonl"), progress=shown)
    text = shown.getvalue()
    assert "import: reading" in text and "import: writing" in text
    assert "100%" in text and f"{res.events}/{res.events}" in text
    size = sum(f.stat().st_size for f in LOGS.iterdir() if ".log" in f.name)
    assert res.files and size > 1024   # the reading bar counted the bytes of every file
    assert "kB" in text or "MB" in text
    quiet = io.StringIO()
    import_logs([str(LOGS)], str(tmp_path / "u.jsonl"), progress=quiet)
    assert quiet.getvalue() == ""


def test_the_header_says_whose_controller_statements_were_seen_and_format_narrows_them(
        tmp_path: Path) -> None:
    """Issue 22 item 1: ``--format zk|kraft`` reads one kind of controller's statements
    (the KRaft controller's in metadata/, the ZooKeeper controller's in core/.../controller/
    and its zkVersion ISR writes); the brokers' own statements are read in both. The header
    names the format and the eras whose statements were seen; a record only the other
    format's kinds would read is counted as not understood, never dropped."""
    zk, kraft = ("22-librdkafka948-isr-shrink-zkversion-0102.log",
                 "03-automq-kraft-controller-fencing-unclean.log")
    (tmp_path / "a").mkdir()
    header, _ = imported(tmp_path / "a", zk, kraft)
    assert header["imported"]["format"] == "auto"
    assert header["imported"]["eras_seen"] == ["kraft", "zk"]
    (tmp_path / "b").mkdir()
    header, evs = imported(tmp_path / "b", zk, kraft, fmt="zk")
    imp = header["imported"]
    assert imp["format"] == "zk" and imp["eras_seen"] == ["zk"]
    assert not only(evs, "broker_fenced") and not only(evs, "broker_registered")
    (tmp_path / "c").mkdir()
    whole, _ = imported(tmp_path / "c", kraft)
    (tmp_path / "d").mkdir()
    narrowed, _ = imported(tmp_path / "d", kraft, fmt="zk")
    w, n = whole["imported"], narrowed["imported"]
    assert n["parsed"] == 0 < w["parsed"]
    assert n["unparsed_replication_like"] == (w["unparsed_replication_like"] + w["parsed"])
