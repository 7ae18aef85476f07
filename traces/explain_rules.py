"""``isrlab explain``'s rules at fault: the table of Kafka mechanisms, and which one a chain names.

Design. This module owns the *rules*: :data:`RULES`, each a Kafka mechanism with what it
did, the KIP or JIRA (and release) or the setting whose fix changes it, and whether it is
Kafka's designed behaviour rather than a loss; and the classification that names a chain's
rule from the facts the chain gathered — :func:`record_rule` for a lost or rewritten
record (with :func:`power_rule`), :func:`divergence_rule` for a divergent log,
:func:`hw_rule` for a replica's HW regression. It reads the fold's fact types
(:mod:`traces.explain_fold`) and nothing else of ``explain``: the chains
(:mod:`traces.explain_chains`) call it, and the text (:mod:`traces.explain_output`) shows
its texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from traces.explain_fold import _Change, _Snap


@dataclass(frozen=True)
class Rule:
    """A Kafka mechanism a chain ends in: what it did, and what changes it."""

    what: str
    fix: str
    #: Kafka's designed behaviour, not a loss (a finding the checker reports for study)
    expected: bool = False


#: The rules at fault, by name. ``fix`` names the KIP or JIRA and the Kafka release where
#: the behaviour changed (docs/historical-scenarios.md), or the setting that forbids it.
RULES: Final[dict[str, Rule]] = {
    "truncation_to_hw": Rule(
        "a follower truncated to its own high watermark on restart or on becoming follower, "
        "dropping records the leader had already committed, and stayed in the ISR",
        "KIP-101 (Kafka 0.11): a follower truncates to the leader's end offset for its "
        "epoch (OffsetsForLeaderEpoch), never below a committed record"),
    "no_epoch_entry": Rule(
        "the follower found no entry for its epoch on the new leader and fell back to its "
        "own HW and then to the leader's log end",
        "KAFKA-7415 (Kafka 2.1): a new leader records its epoch when it is elected"),
    "divergence_kept_hw": Rule(
        "on becoming follower the replica truncated to its own HW, which lay above records "
        "the new leader never had, so it kept them: the logs diverge",
        "KIP-101 (Kafka 0.11): truncation by the leader's epoch end finds the divergence"),
    "epoch_end_answer": Rule(
        "the leader answered the follower's OffsetsForLeaderEpoch with the start of its next "
        "epoch, past records it never had, so the follower kept its divergent suffix",
        "KIP-279 (Kafka 2.0): the leader answers with the end of the largest epoch at or "
        "below the asked one, and the follower truncates to the smaller of the two ends"),
    "divergence_kept": Rule(
        "a replica kept records the final leader does not have: no truncation reached them",
        "none named: read the steps"),
    "leso_check": Rule(
        "the leader added a follower to the ISR before the follower reached the start offset "
        "of the leader's epoch, against a stale HW: an ISR member lacked committed records",
        "KAFKA-7128 (Kafka 2.1): a follower joins the ISR only once its LEO reaches the "
        "leader epoch start offset"),
    "maximal_isr": Rule(
        "the leader acknowledged while an ISR expansion was pending at the controller, "
        "counting only the committed ISR; the controller then committed a replica without "
        "the record",
        "KIP-497 (Kafka 2.7): the leader counts the pending expansion (the maximal ISR) "
        "in the HW"),
    "diverging_fetch_counted": Rule(
        "the leader took the fetch offset of a follower with a divergent log for real and "
        "counted it in the ISR and the HW, although the follower held other records there",
        "KAFKA-13141 (Kafka 3.1): a fetch that carries a diverging epoch does not update "
        "the follower's state on the leader"),
    "isr_without_record": Rule(
        "a replica without the record was in (or joined) the ISR after it was acknowledged",
        "none named: read the steps"),
    "removed_by_reassignment": Rule(
        "a reassignment completed and deleted the logs of replicas that held the record "
        "while the replicas it kept did not all hold it",
        "KAFKA-15665 (Kafka 3.8): KRaft completes a reassignment only once every target "
        "replica is in the ISR"),
    "bounce_unnoticed": Rule(
        "the leader restarted within its ZooKeeper session after losing the record; the "
        "controller never saw it fail, so it kept its leadership (same epoch) and its ISR "
        "place, and wrote the offsets again",
        "KIP-380 (Kafka 2.2): broker epochs let the controller detect a bounced broker and "
        "fail it out of its leaderships and ISRs"),
    "reassignment_revert": Rule(
        "cancelling a reassignment put the original replicas back, without the record (an "
        "unclean revert: KIP-455's PartitionReassignmentRevert), and took the replicas "
        "that held it away", "unclean.leader.election.enable=false: the cancel is refused"),
    "unclean_election": Rule(
        "an unclean election made an out-of-sync replica without the record leader",
        "unclean.leader.election.enable=false (the default since Kafka 0.11)"),
    "elr_election": Rule(
        "an eligible leader replica (KIP-966) without the record was elected",
        "none named: read the steps"),
    "last_known_leader": Rule(
        "with ISR and ELR empty, KIP-966 elected the last-known leader, which had lost the "
        "record (its power loss, or the copies that left with the ISR and ELR); Kafka "
        "4.1 does so whatever unclean.leader.election.enable says",
        "none within KIP-966, which tolerates min.insync.replicas - 1 unclean shutdowns of "
        "the ISR and ELR: more in-sync copies, or a flush policy (log.flush.interval.*)"),
    "last_replica_standing": Rule(
        "the last ISR member lost the record from its page cache at a power loss and was "
        "re-elected on restart (last replica standing)",
        "KIP-966 (Kafka 4.0): an uncleanly shut-down broker leaves the eligible leader "
        "replicas, so a complete replica is elected"),
    "page_cache_loss": Rule(
        "replicas lost the record from their page caches at power losses: as many as or "
        "more than the ISR could spare (beyond the fault budget)",
        "none: flush.messages=1, or fewer simultaneous power losses than "
        "min.insync.replicas"),
    "acks_1": Rule(
        "acknowledged by its leader alone (acks=1) before any follower had it; a replica "
        "without it became (or already was) the leader",
        "acks=all (Kafka's default since 3.0): this loss is allowed under acks=1"),
    "min_isr_1": Rule(
        "acknowledged while the ISR was the leader alone (min.insync.replicas=1), so one "
        "replica's loss lost the record",
        "min.insync.replicas=2 with acks=all"),
    "hw_before_truncation": Rule(
        "a follower applied the leader's HW from a diverging fetch response before "
        "truncating, so its HW briefly covered its own divergent records",
        "KAFKA-14704 (Kafka 3.5): truncate first, then apply the leader's HW"),
    "stale_leader_hw": Rule(
        "a newly elected leader's HW lags the old leader's until its followers fetch "
        "(expected: Kafka's local HW is not monotonic across leaders)",
        "none needed: consumers never see a committed offset go back", expected=True),
    "hw_checkpoint": Rule(
        "on restart the replica loaded its HW from a checkpoint older than the HW it had "
        "shown", "none needed: a restarted replica relearns the HW from its leader",
        expected=True),
    "truncated_below_hw": Rule(
        "a follower truncated below its HW to a new leader's log: records it had seen "
        "committed were not on that leader (a consequence of a loss above, if any)",
        "as for the loss", expected=True),
    # -- partition- and client-level findings (one per anomaly kind the checker counts) --
    "partition_offline": Rule(
        "the partition ended without a leader: every replica the controller may elect (the "
        "ISR, the ELR) was down or fenced, and no clean election was possible",
        "none while those replicas stay down (Kafka waits for one: "
        "PartitionChangeBuilder.electLeader); unclean.leader.election.enable=true trades "
        "the wait for a possible loss"),
    "replica_down_at_end": Rule(
        "a replica of the partition was still down, fenced or without a leader to follow "
        "when the run ended", "none named: a longer heal, or the broker's return"),
    "not_caught_up": Rule(
        "when the run ended a replica had not caught up: the ISR was short of the replica "
        "list, or the replicas' HW and LEO still differed",
        "none named: a longer heal (replicas catch up by fetching)"),
    "consumer_stuck_on_damaged_batch": Rule(
        "a consumer's CRC check (check.crcs) found a damaged record batch served by a "
        "replica whose disk was corrupted; it delivers and fetches nothing more from the "
        "partition until it is revoked or its leader changes",
        "none in Kafka: the application must seek past the batch (the consumer raises at "
        "the damaged batch: CompletedFetch.corruptLastRecord, FetchCollector.collectFetch "
        "3.7.0); a leader change lets it fetch a healthy copy"),
    "consumer_behind": Rule(
        "when the run ended a consumer's position was still below the HW",
        "none named: a longer heal"),
    "producer_retrying": Rule(
        "when the run ended a producer still had batches to deliver: its requests were "
        "failing or held, and it was retrying",
        "none named: the batches are delivered or expire (delivery.timeout.ms)"),
    "offsets_partition_loss": Rule(
        "the __consumer_offsets partition of the group lost the record of an acknowledged "
        "commit (a power loss, a truncation or an unclean election on its only copies); "
        "the coordinator that loaded it again answered an older offset, or none",
        "offsets.topic.replication.factor=3 (Kafka's default) with clean elections: a "
        "commit is acknowledged only once min.insync.replicas of its replicas have it "
        "(GroupMetadataManager.storeOffsets appends with acks=all)"),
    "commit_not_loaded": Rule(
        "the coordinator answered an older offset than the one it had acknowledged, "
        "without its offsets partition losing a record the trace shows",
        "none named: read the steps"),
    "follower_lagged": Rule(
        "the leader took a follower out of the ISR after it had not caught up for "
        "replica.lag.time.max.ms (slow, cut off or down), and added it back once it reached "
        "the leader's log end (Partition.maybeShrinkIsr / maybeExpandIsr)",
        "none needed: the ISR follows its followers (informational)", expected=True),
    "broker_fenced_rejoined": Rule(
        "the controller fenced the follower's broker (its heartbeats stopped, or it "
        "registered again after a restart) and took it out of the ISR; the leader added it "
        "back once it caught up", "none needed: the ISR follows its followers "
        "(informational)", expected=True),
    "controlled_shutdown_rejoined": Rule(
        "a controlled shutdown took the broker out of the ISR before it stopped; the "
        "leader added it back once it had restarted and caught up",
        "none needed: a rolling restart moves replicas out of and back into the ISR",
        expected=True),
    "isr_below_min": Rule(
        "the ISR was smaller than min.insync.replicas while replicas were down, fenced or "
        "lagging: acks=all writes were refused (NOT_ENOUGH_REPLICAS) until it grew back",
        "none needed: Kafka gives up availability to keep acknowledged writes "
        "(informational)", expected=True),
    "offsets_reused": Rule(
        "the earlier send's offset was taken from the partition's log (a truncation, a "
        "power loss, the election of a replica without it), so the log the later send "
        "reached gave it a lower offset", "as for the loss of the earlier record",
        expected=True),
    "retry_reordered": Rule(
        "an earlier batch failed (or its answer was late) and was retried while a later "
        "batch, sent with more than one request in flight, had already been written",
        "enable.idempotence=true (KIP-98, Kafka 0.11; the default since 3.0) or "
        "max.in.flight.requests.per.connection=1", expected=True),
    "retry_duplicate": Rule(
        "the producer retried a batch the broker had already written (its answer was lost "
        "or late), and without idempotence the broker wrote it again",
        "enable.idempotence=true (KIP-98, Kafka 0.11; the default since 3.0): the broker "
        "drops a retried batch by its producer id and sequence", expected=True),
    "duplicate_after_loss": Rule(
        "the record was written twice at different offsets after the partition's log was "
        "rewritten under it (a retry into a new leader's log)",
        "as for the loss", expected=True),
    "offset_reset": Rule(
        "the consumer's position fell out of the partition's log (the log was truncated "
        "or rewritten under it, or retention removed it) and auto.offset.reset moved it",
        "none needed: auto.offset.reset decides where a lost position restarts "
        "(FetchCollector: OFFSET_OUT_OF_RANGE requests a reset; "
        "OffsetFetcher.resetPositionsIfNeeded, 3.7.0)", expected=True),
    "position_restored": Rule(
        "the consumer's position came from the group's committed offset again (a "
        "rebalance or a restart), not from its last read",
        "none needed: at-least-once delivery re-reads what was read after the last "
        "commit", expected=True),
    "read_rewritten_log": Rule(
        "the consumer kept its position while the partition's log was rewritten under it "
        "(a new leader without the records it had read), so its next reads came from "
        "other records", "as for the loss of the records read", expected=True),
    "retention": Rule(
        "retention (retention.ms / retention.bytes) deleted the segment holding the "
        "acknowledged record: the log no longer starts at or below it",
        "none needed: not a loss (informational)", expected=True),
    "deleted_records": Rule(
        "DeleteRecords moved the log start offset past the acknowledged record",
        "none needed: not a loss (informational)", expected=True),
    "outside_replica_list": Rule(
        "a replica outside the partition's replica list (one a reassignment removed) was "
        "in the ISR or elected", "none named: read the steps"),
    "metadata_log_diverged": Rule(
        "two voters of the controller quorum held different entries at an offset of the "
        "metadata log below their high watermarks: a committed metadata record was "
        "replaced (Raft's Log Matching and Leader Completeness broken)",
        "KRaft's elections (a vote only for a log at least as long in the last epoch, "
        "KafkaRaftClient.handleVoteRequest) and truncation only above the high watermark "
        "(ReplicatedLog.truncateTo) forbid it"),
    "applied_above_quorum_hw": Rule(
        "a controller replayed metadata records at or above the quorum's high watermark, "
        "before a majority of the voters held them",
        "KRaft hands its listeners (the controller's replay) only batches below the high "
        "watermark (3.7.0 KafkaRaftClient.updateListenersProgress, after "
        "onUpdateLeaderHighWatermark)"),
    "read_above_hw": Rule(
        "a consumer was handed a record at or above the high watermark of the leader "
        "that served it",
        "Kafka serves consumers only below the HW (Partition.fetchRecords, "
        "FetchHighWatermark isolation)"),
    "truncation_below_hw": Rule(
        "a replica truncated its log below the high watermark it knew (Kafka's "
        "'Truncating ... below high watermark'): records it had seen committed are gone from "
        "it; a log cannot show whether they were acknowledged",
        "unclean.leader.election.enable=false and min.insync.replicas>=2: a leader then "
        "holds every committed record (ReplicaFetcherThread.truncate, 2.0.1+)"),
    "unclean_leader_election": Rule(
        "no replica of the ISR (or the ELR) could be elected, and the controller elected "
        "one outside it, which lacks what only the ISR held",
        "unclean.leader.election.enable=false (the default since Kafka 0.11, KIP-106)"),
    "stale_leader_epoch": Rule(
        "a leader took over with a lower leader epoch than an earlier leader of the "
        "partition: the epoch went back (a stale LeaderAndIsr from a deposed controller, "
        "or a topic deleted and created again)",
        "none named: brokers refuse a LeaderAndIsr whose leader epoch is not higher than "
        "their own and one from an older controller epoch (ReplicaManager."
        "becomeLeaderOrFollower, STALE_CONTROLLER_EPOCH, 3.7.0); a log that shows one has "
        "lines missing or out of order, or the topic was created again"),
    "follower_hw_from_leader": Rule(
        "a follower takes its HW from its leader's fetch responses (the smaller of its LEO "
        "and the leader's HW): a leader with a lower HW (a new one, not yet caught up) "
        "brought it down", "none needed: a follower's HW is a lagging copy (informational)",
        expected=True),
    "hw_local_regression": Rule(
        "the replica's local HW went down with a change of its log or of its leader",
        "none needed: Kafka's local HW is not monotonic across leaders (informational)",
        expected=True),
    "unexplained": Rule(
        "no rule of this table matches the trace's steps", "read the steps"),
}


def record_rule(anomaly: str, snap: _Snap | None, epoch: int, had: set[int],
                lost: dict[int, _Change],
                joins: dict[int, tuple[int, int, dict[str, Any], int | None]],
                decisive: tuple[int, int, dict[str, Any]] | None,
                anchor: dict[str, Any], *, era: tuple[int, ...],
                min_isr: int | None = None) -> str:
    """The rule at fault of a record's chain: ``epoch`` the record's term, ``had`` the
    replicas that ever held it after ``anchor`` (its acknowledgement or read), ``lost`` how
    each lost it (last time), ``joins`` the ISR joins without it, ``decisive`` the election
    (or reassignment, or takeover) that left no leader holding it; ``era`` the trace's
    protocol, ``min_isr`` the topic's effective ``min.insync.replicas`` (Kafka's
    ``effectiveMinIsr``: capped by the replication factor) when the trace says it."""
    acks = str(anchor.get("acks"))
    if anomaly == "lost_acked_uncommitted" and acks == "1":
        return "acks_1"
    # acknowledged with the leader alone in the ISR: the ISR here is the controller's, which
    # the leader learns a metadata update later; with min.insync.replicas above 1 an acks=all
    # write is never acknowledged on an ISR of one (checkEnoughReplicasReachOffset answers
    # NOT_ENOUGH_REPLICAS_AFTER_APPEND), so the leader still counted more replicas
    single = (snap is not None and len(snap.isr) == 1 and anomaly == "lost_acked_write"
              and (min_isr is None or min_isr <= 1))
    if decisive is not None and decisive[2]["election"] == "reassignment_cancel":
        return "reassignment_revert"
    if decisive is not None and decisive[2]["election"] == "reassignment_complete":
        return "removed_by_reassignment"
    if decisive is not None and not decisive[2].get("holders"):
        # no replica held it any more when the next leader came: how that leader was
        # chosen is moot; what lost the last copies is the story
        if single:
            return "min_isr_1"   # acknowledged with one copy: any loss of it is a loss
        before = [c for c in lost.values() if c.seq < decisive[0]]
        if before and all("power loss" in c.how for c in before):
            return power_rule({c.replica: c for c in before})
    if decisive is not None and decisive[2]["election"] == "unclean":
        joined_as = joins.get(decisive[2]["leader"])
        if joined_as is not None and joined_as[2].get("reason") == "last_known_leader":
            # KIP-966 (4.1.0 PartitionChangeBuilder.canElectLastKnownLeader): with ISR and
            # ELR empty the last-known leader is elected (RECOVERING) whatever
            # unclean.leader.election.enable says; what emptied them is the story
            return "last_known_leader"
        return "unclean_election"
    if decisive is not None:
        data = decisive[2]
        x = data["leader"]
        kind = data["election"]
        if kind == "resumed":
            return "bounce_unnoticed"
        if x in lost:
            how = lost[x].how
            if "power loss" in how:
                return power_rule(
                    {r: c for r, c in lost.items() if c.seq < decisive[0]})
            if "(high_watermark)" in how:
                return "truncation_to_hw" if era < (0, 11) else "no_epoch_entry"
            if "(offset_out_of_range)" in how:
                return "no_epoch_entry"
        if x not in had:
            if kind == "elr":
                # its ISR join is the ELR election itself (no leader's expansion to judge):
                # a record acked after the replica lost its copy is the same story
                return "elr_election"
            joined = joins.get(x)
            in_isr_at_ack = snap is not None and x in snap.isr
            at_ack = snap.held.get(x) if snap is not None else None
            if joined is not None:
                _s, _t, jd, log_epoch = joined
                proposed = jd.get("proposed")
                if log_epoch is not None and log_epoch != epoch:
                    return "diverging_fetch_counted"
                if proposed is not None and proposed[0] < int(anchor["seq"]):
                    return "maximal_isr"
                leso = jd.get("leso")
                if leso is not None and jd.get("leo") is not None and jd["leo"] < leso:
                    return "leso_check"
                return "isr_without_record"
            if in_isr_at_ack:
                if at_ack is not None and at_ack != epoch:
                    return "diverging_fetch_counted"
                return "isr_without_record"
        if kind in ("elr", "last_known_leader"):
            return "elr_election"
    if any(c.how == "replica deleted" for c in lost.values()):
        return "removed_by_reassignment"
    if single:
        return "min_isr_1"
    if lost and all("power loss" in c.how for c in lost.values()):
        return power_rule(lost)
    return "unexplained"


def power_rule(lost: dict[int, _Change]) -> str:
    """Power losses took the record: from the last ISR member alone, or from more."""
    losses = sum(1 for c in lost.values() if "power loss" in c.how)
    return "last_replica_standing" if losses <= 1 else "page_cache_loss"


def divergence_rule(reason: str | None, rule: str, *, era: tuple[int, ...]) -> str:
    """The rule of a divergent log, from the reason of the truncation that followed the
    replica's follower turn (None: none did); ``rule`` the one named so far."""
    if era < (0, 11):
        return "divergence_kept_hw"
    if reason == "offset_out_of_range" or era >= (2, 0):
        return "no_epoch_entry" if reason == "offset_out_of_range" else rule
    return "epoch_end_answer"


def hw_rule(reason: str,
            raised: tuple[int, int, int, int, str, int | None] | None,
            recovered: tuple[int, int, str] | None) -> str:
    """The rule of a replica's HW regression of ``reason``, from the replica's last HW raise
    before it and its last restart's recovery (:attr:`_Fold.hw_seen`)."""
    rule = {"become_leader": "stale_leader_hw", "recovery": "hw_checkpoint",
            "truncate": "truncated_below_hw",
            "fetch_response": "follower_hw_from_leader"}.get(reason, "unexplained")
    since = 0
    if raised is not None:
        rs, _rt, _old, _new, why, divergent = raised
        if divergent is not None and why == "fetch_response" and reason == "truncate":
            rule = "hw_before_truncation"
        since = rs
    if recovered is not None and recovered[0] > since and rule == "unexplained":
        rule = "hw_checkpoint"
    return "hw_local_regression" if rule == "unexplained" else rule
