"""``isrlab explain`` has a rule and a causal chain for every anomaly kind (issue 50, point
5): each kind the checker counts is shown by a real run — a catalog scenario, a small run
with a ``[faults]`` plan, or, for the kinds only Kafka's own logs show, a log imported in
Kafka's wording — and explained by a chain naming a rule of its own, never "unexplained".
A chain that includes a late request or answer says TCP held it, and for how long (issue
55)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from tests.helpers import catalog_trace, run_to_bytes
from traces.checker import check_file
from traces.explain import RECORD_ANOMALIES, RULES, Chain, explain
from traces.explain_story import STORY_KINDS
from traces.logs.importer import import_logs
from traces.schema import ANOMALIES, POSSIBLE_LOSS

DATA = Path(__file__).parent / "data" / "kafka_logs"

#: small real runs: (scenario, seed, overrides)
RUNS: dict[str, tuple[str, int, list[str]]] = {
    # a leader slower than the producer's request timeout: the producer retries batches the
    # leader had written, without idempotence
    "slow-leader-retries": ("default", 1, [
        "duration_s=12", "heal_s=20", "producers[0].enable.idempotence=false",
        "producers[0].request.timeout.ms=1000",
        'faults.plan=[{at_s=4.0, fault="delay", target="leader:orders-0", duration_s=2.0, '
        'extra_ms=1500}]']),
    # a consumer paused for longer than retention keeps the segments: its position falls
    # below the log start
    "paused-past-retention": ("default", 1, [
        "duration_s=20", "heal_s=20", "consumers[0].members=1", "topics[0].retention.ms=3000",
        "topics[0].segment.bytes=4000", "cluster.log.retention.check.interval.ms=1000",
        'faults.plan=[{at_s=4.0, fault="pause", target="consumer-g0-0", duration_s=8.0}]']),
    # the leader's disk damages a batch a paused consumer has not read yet (check.crcs)
    "damaged-batch": ("default", 1, [
        "duration_s=8", "heal_s=20", "consumers[0].members=1",
        'faults.plan=[{at_s=1.0, fault="pause", target="consumer-g0-0", duration_s=2.0}, '
        '{at_s=2.0, fault="corrupt_disk", target="leader:orders-0", '
        'topic_partition="orders-0", offset=100}]']),
    # a follower cut off for longer than replica.lag.time.max.ms: TCP holds its fetches
    "cut-follower": ("default", 1, [
        "duration_s=14", "heal_s=20", "cluster.replica.lag.time.max.ms=2000",
        'faults.plan=[{at_s=3.0, fault="isolate", target="broker-2", duration_s=6.0}]']),
}

#: Kafka's own wording (ReplicaFetcherThread.truncate's warning, 2.0.1+; Partition.makeLeader
#: 1.1.1), for the possible-loss kinds no log of tests/data/kafka_logs shows
LINES = {
    "truncation-below-hw": (
        "[2024-03-01 10:01:00,000] WARN [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] "
        "Truncating orders-0 to offset 1610 below high watermark 1620 "
        "(kafka.server.ReplicaFetcherThread)\n"),
    "epoch-went-back": (
        "[2024-03-01 10:00:00,000] INFO [Partition orders-0 broker=1] orders-0 starts at Leader"
        " Epoch 5 from offset 100. Previous Leader Epoch was: 4 (kafka.cluster.Partition)\n"
        "[2024-03-01 10:01:00,000] INFO [Partition orders-0 broker=1] orders-0 starts at Leader"
        " Epoch 3 from offset 100. Previous Leader Epoch was: 2 (kafka.cluster.Partition)\n"),
}


@cache
def _trace(source: str, where: Path) -> str:
    """The trace of ``source``: a catalog scenario, a run of :data:`RUNS`, a log of
    tests/data/kafka_logs or of :data:`LINES` (imported), written under ``where``."""
    out = where / f"{source.replace('/', '_')}.jsonl"
    if source in RUNS:
        name, seed, overrides = RUNS[source]
        res, data = run_to_bytes(name, seed, overrides)
        assert res.status == "ok", res.error
        out.write_bytes(data)
    elif source in LINES:
        log = where / f"{source}.log"
        log.write_text(LINES[source])
        import_logs([str(log)], str(out))
    elif source.endswith(".log"):
        import_logs([str(DATA / source)], str(out))
    else:
        out.write_bytes(catalog_trace(source))
    return str(out)


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("every-anomaly")


def _chains(source: str, where: Path, anomaly: str) -> list[Chain]:
    return [c for c in explain(_trace(source, where), anomaly=anomaly).chains
            if c.anomaly == anomaly]


#: (the run that shows it, the anomaly, the rule its chain names)
CASES = [
    ("offsets-rf1-power-loss", "lost_committed_offset", "offsets_partition_loss"),
    ("offsets-rf1-power-loss", "unclean_election", "unclean_leader_election"),
    ("offsets-rf1-power-loss", "isr_churn", "broker_fenced_rejoined"),
    ("offsets-rf1-power-loss", "hw_regression_replica", "hw_checkpoint"),
    ("s16-isr-churn", "isr_churn", "follower_lagged"),
    ("kafka15665-reassign-completes-short", "no_convergence", "partition_offline"),
    ("kafka15665-reassign-completes-short", "under_min_isr", "isr_below_min"),
    ("kafka15665-reassign-completes-short", "lost_acked_write", "removed_by_reassignment"),
    ("s7-acks-all-min-isr-1", "nonmonotonic_send", "offsets_reused"),
    ("s7-acks-all-min-isr-1", "nonmonotonic_poll", "offset_reset"),
    ("s6-acks1-leader-failover", "lost_acked_uncommitted", "acks_1"),
    ("s8-unclean-election", "hw_regression_visible", "unclean_election"),
    ("s2-kip101-power-loss-divergence", "log_divergence", "divergence_kept_hw"),
    ("slow-leader-retries", "duplicate", "retry_duplicate"),
    ("paused-past-retention", "poll_skip", "offset_reset"),
    ("paused-past-retention", "expired", "retention"),
    ("damaged-batch", "no_convergence", "consumer_stuck_on_damaged_batch"),
    ("03-automq-kraft-controller-fencing-unclean.log", "unclean_election",
     "unclean_leader_election"),
    ("25-sentry383-offline-to-online-failed-election.log", "no_convergence",
     "partition_offline"),
    ("truncation-below-hw", "possible_committed_truncation", "truncation_below_hw"),
    ("epoch-went-back", "leader_epoch_regression", "stale_leader_epoch"),
]

#: kinds no real run shows: the emulator serves consumers only below the HW, and keeps an
#: ISR and a leader within the replica list (their chains exist: STORY_KINDS)
NEVER_SHOWN = {"read_uncommitted", "outside_assignment",
               # the KRaft quorum's safety anomalies: no run of a correct quorum shows them;
               # their chains are held by tests/test_quorum_anomalies.py on built traces
               "metadata_divergence", "uncommitted_metadata_applied"}


@pytest.mark.parametrize("source, anomaly, rule", CASES,
                         ids=[f"{a}-{s}" for s, a, _ in CASES])
def test_each_anomaly_kind_a_run_shows_is_explained_by_its_own_rule(
        where: Path, source: str, anomaly: str, rule: str) -> None:
    assert check_file(_trace(source, where)).anomalies[anomaly] > 0
    chains = _chains(source, where, anomaly)
    assert chains and all(c.rule != "unexplained" for c in chains)
    assert rule in {c.rule for c in chains}
    assert all(len(c.steps) >= 1 for c in chains)


def test_the_cases_cover_every_anomaly_kind_and_every_kind_has_a_chain_builder() -> None:
    shown = {a for _s, a, _r in CASES}
    assert shown | NEVER_SHOWN == set(ANOMALIES)
    assert set(POSSIBLE_LOSS) <= shown
    told = {*RECORD_ANOMALIES, "log_divergence", "hw_regression_replica", "under_min_isr",
            *STORY_KINDS}
    assert told == set(ANOMALIES)
    assert all(r in RULES for _s, _a, r in CASES)


def test_informational_kinds_name_expected_rules_and_forbidden_kinds_do_not() -> None:
    """Kafka permits the ISR's churn and shortfall, retries' reorderings and duplicates,
    resets and retention: their rules are expected. A partition offline at the end, a lost
    commit or an unclean election is not."""
    for _source, anomaly, rule in CASES:
        informational = anomaly in ("isr_churn", "under_min_isr", "nonmonotonic_send",
                                    "nonmonotonic_poll", "poll_skip", "duplicate", "expired")
        if informational:
            assert RULES[rule].expected, rule
        elif anomaly in ("no_convergence", "lost_committed_offset", "unclean_election",
                         "possible_committed_truncation", "leader_epoch_regression"):
            assert not RULES[rule].expected, rule


def test_a_lost_commit_is_told_from_its_ack_through_the_offsets_partitions_loss(
        where: Path) -> None:
    """The commit, its acknowledgement on __consumer_offsets-41's only replica, the power
    loss that took the record back out of the page cache, the last-known-leader election,
    the coordinator's reload of an empty log, and the read-back of no offset."""
    [chain] = _chains("offsets-rf1-power-loss", where, "lost_committed_offset")
    texts = [s.text for s in chain.steps]
    assert texts[0].startswith("g0-0 committed offset")
    assert "acknowledged: written to __consumer_offsets-41 (offsets.topic.replication." \
           "factor=1), leader broker-3" in texts[1]
    assert any("power loss" in t and "the commit's record" in t and "gone from it" in t
               for t in texts)
    assert any("elected leader (unclean" in t for t in texts)
    assert any("group coordinator loaded __consumer_offsets-41" in t for t in texts)
    assert texts[-1].startswith("g0-0 read back no committed offset")
    assert chain.count == 2 and chain.more == ["orders-1"]   # one loss, both partitions


def test_an_offline_partition_says_what_became_of_each_replica_it_could_elect(
        where: Path) -> None:
    [chain] = _chains("kafka15665-reassign-completes-short", where, "no_convergence")
    offline = next(s.text for s in chain.steps if "offline: no leader" in s.text)
    electable = re.search(r"electable \[([\d,]+)\]", offline)
    assert electable and " — at the end " in offline
    fates = offline.split(" — at the end ", 1)[1]
    for b in electable.group(1).split(","):   # each one's fate is said
        assert re.search(rf"broker-{b} (fenced|alive|not in the replica list|crashed)", fates)
    assert "not in the replica list" in fates
    assert any("crashed (power_loss)" in s.text for s in chain.steps)


def test_a_churn_behind_a_cut_says_tcp_held_the_fetches_and_for_how_long(
        where: Path) -> None:
    chains = _chains("cut-follower", where, "isr_churn")
    assert chains and {c.rule for c in chains} == {"follower_lagged"}
    held = [s.text for c in chains for s in c.steps if "held by TCP (partition)" in s.text]
    assert any(re.search(r"held by TCP \(partition\) for \d+ ms, then delivered \(\d+ "
                         r"frames, \d+ retransmissions\)", t) for t in held)
    assert any("fault isolate on broker-2 from 3.000 s to 9.000 s" in s.text
               for c in chains for s in c.steps)


def test_a_duplicate_names_the_failed_requests_and_the_fault_that_made_them_late(
        where: Path) -> None:
    chain = _chains("slow-leader-retries", where, "duplicate")[0]
    texts = [s.text for s in chain.steps]
    assert "enable.idempotence=False" in texts[0]
    assert any("Produce to broker-1 failed (timeout)" in t for t in texts)
    assert any(t.startswith("fault delay on broker-1") for t in texts)
    assert " is at offsets " in texts[-1]


def test_a_skip_names_the_reset_and_the_retention_that_moved_the_log_start_past_it(
        where: Path) -> None:
    chain = _chains("paused-past-retention", where, "poll_skip")[0]
    texts = [s.text for s in chain.steps]
    assert any("(auto.offset.reset=earliest)" in t for t in texts)
    assert any("log start" in t and "out of the log" in t for t in texts)
    assert "skipping" in texts[-1]


def test_a_truncation_below_the_hw_names_the_records_between_its_target_and_the_hw(
        where: Path) -> None:
    [chain] = _chains("truncation-below-hw", where, "possible_committed_truncation")
    assert chain.steps[-1].text == (
        "broker-1 truncated orders-0 to 1610, below its high watermark 1620: offsets "
        "1610..1619 (10 records) it had seen committed are gone from it")


def test_a_consumer_stuck_on_a_damaged_batch_names_the_damage_and_the_fault(
        where: Path) -> None:
    chains = _chains("damaged-batch", where, "no_convergence")
    assert {c.rule for c in chains} == {"consumer_stuck_on_damaged_batch"}
    texts = [s.text for s in chains[0].steps]
    assert any(t.startswith("fault corrupt_disk on broker-") for t in texts)
    assert any("found a damaged record batch of orders-0 at offset 100 (poll" in t
               for t in texts)
