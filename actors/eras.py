"""Protocol eras: which of Kafka's replication rules were in force in which release.

Each era is a set of named rule switches (docs/eras.md: the rules in section 1, these
switches per era in section 2). ``bugs`` re-enable one historical defect on top of an era,
to prove the checkers catch it. Names are the JIRA/KIP ids Kafka engineers search for.

| era  | HW rule                       | truncation                 | other                        |
|------|-------------------------------|----------------------------|------------------------------|
| 0.10 | min LEO over ISR              | to local HW                | unclean election default on  |
| 0.11 | ISR or caught-up (KAFKA-4485) | OffsetsForLeaderEpoch (101)|                              |
| 2.0  | same                          | KIP-279 (epoch of end)     |                              |
| 2.1  | same                          | KIP-320 fencing            | LESO rule (KAFKA-7128)       |
| 2.8  | maximal ISR (KIP-497)         | truncate-on-fetch          | KAFKA-13141, -14704 present  |
| 3.7  | + ISR-eligible, strict min ISR| truncate-on-fetch          | broker-epoch fencing (903)   |
| 4.1  | same                          | same                       | ELR (KIP-966), unclean detect|

Reassignment (KIP-455): the ZooKeeper controller and KRaft from 3.8 complete a move once
every target replica is in the ISR; KRaft 3.7 once every *adding* one is (KAFKA-15665).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

ERAS: Final = ("0.10", "0.11", "2.0", "2.1", "2.8", "3.7", "4.1")
#: the eras whose controller is KRaft's (a Raft quorum of controllers, KIP-595/KIP-631);
#: the others' is ZooKeeper's
KRAFT_ERAS: Final = ("3.7", "4.1")

BUGS: Final = {
    "KAFKA-7128": "no leader-epoch-start-offset check on ISR expand",
    "KAFKA-13141": "a diverging fetch is counted for the leader's HW",
    "KAFKA-14704": "follower applies the leader HW before truncating a diverging log",
    "KIP-497": "KIP-497 absent: the HW is computed over the committed ISR only",
    "KAFKA-15583": "KAFKA-15583 absent: the HW advances while ISR < min.insync.replicas",
    "KAFKA-15665": "a reassignment completes once its adding replicas are in the ISR, "
                   "whatever the other target replicas",
    # the controller quorum's Raft (actors.raft.config.RAFT_BUGS): needs
    # cluster.controller_quorum
    "KAFKA-15489": "a controller quorum leader that no majority of voters fetches from "
                   "never resigns (no check quorum, as before 3.7.0)",
}
#: bugs of the KRaft controller quorum's Raft (``actors.raft``): a scenario naming one needs
#: ``cluster.controller_quorum``
QUORUM_BUGS: Final = ("KAFKA-15489",)

#: Fixes isrlab proposes for defects it finds in the Kafka code it models, applied on top of
#: an era with ``fixes = [...]``: the catalog shows the defect with and without them.
FIXES: Final = {
    "ELR-IN-REPLICAS": "keep the ELR within the target replica list "
                       "(PartitionChangeBuilder.maybePopulateTargetElr, unchanged from 3.7.0 "
                       "to 4.2.0-rc1, keeps a replica a cancelled reassignment removed; "
                       "added back with an empty log, it can be elected cleanly)",
}


@dataclass(frozen=True, slots=True)
class Rules:
    era: str
    hw_over_isr_only: bool          # 0.10: HW = min LEO over the ISR
    hw_counts_caught_up: bool       # KAFKA-4485: caught-up non-ISR replicas hold the HW
    maximal_isr: bool               # KIP-497 / KAFKA-8836
    isr_eligibility: bool           # KAFKA-15021 / KIP-903: fenced replicas don't count
    strict_min_isr: bool            # KAFKA-15583: no HW advance under min ISR
    truncation: str                 # "hw" | "kip101" | "kip279" | "fetch"
    epoch_fencing: bool             # KIP-320: currentLeaderEpoch in Fetch/OffsetsForLeaderEpoch
    leso_check: bool                # KAFKA-7128
    skip_diverging_fetch_state: bool  # KAFKA-13141 fixed
    truncate_before_hw: bool        # KAFKA-14704 fixed
    alter_partition_errors: str     # how a leader takes an ISR update's error: "zk" (the
                                    # conditional ZooKeeper write failed: ISR unchanged),
                                    # "2.7" (AlterIsr: stay pending or retry), "3.3"
                                    # (+ INELIGIBLE_REPLICA resets to the committed ISR)
    epoch_cache_kafka7415: bool     # 2.1+: LeaderEpochFileCache.assign takes an older epoch
                                    # (dropping the entries it conflicts with) and
                                    # endOffsetFor below the first epoch answers its start
    broker_epoch_check: bool        # KIP-903: AlterPartition validates broker epochs
    elr: bool                       # KIP-966
    unclean_shutdown_detection: bool  # KAFKA-15586
    unclean_default: bool           # unclean.leader.election.enable default
    lag_time_default_ms: int        # replica.lag.time.max.ms default (KIP-537)
    fence_on_reregistration: bool   # a restarted broker is failed out of its ISRs and
                                    # leaderships when it registers again: KRaft, and ZK
                                    # since 2.2 (KIP-380 broker epochs, "bounced brokers");
                                    # before, a quick restart inside the ZooKeeper session
                                    # went unnoticed and kept both
    zk_controller: bool             # the ZooKeeper-era controller (KafkaController), not
                                    # KRaft's QuorumController: e.g. auto leader rebalance
                                    # weighs leader.imbalance.per.broker.percentage
    isr_removal_bumps_leader_epoch: bool  # the ZooKeeper controller removes an offline
                                    # replica from the ISR with a new leader epoch
                                    # (ReplicaStateMachine.doRemoveReplicasFromIsr:
                                    # LeaderAndIsr.newLeaderAndIsr, epoch + 1); KRaft at
                                    # metadata version 3.6+ keeps it (KAFKA-15021)
    reassignment_completes_on_targets: bool = True  # a reassignment completes only once
                                    # every target replica is in the ISR: the ZooKeeper
                                    # controller (isReassignmentComplete) and KRaft from
                                    # 3.8 (KAFKA-15665); KRaft before asked it of the
                                    # adding replicas only
    elr_within_replicas: bool = False  # the ELR only holds replicas of the partition (the
                                    # ELR-IN-REPLICAS fix; Kafka's maybePopulateTargetElr
                                    # does not filter by the target replicas, 3.7.0 to
                                    # 4.2.0-rc1: docs/findings/elr-keeps-removed-replica.md)
    duplicate_registration_refused: bool = False  # KRaft: a new incarnation's
                                    # registration is refused (DUPLICATE_BROKER_REGISTRATION)
                                    # while the previous one's session is valid: unfenced and
                                    # heard from within broker.session.timeout.ms (3.7.0 and
                                    # 4.1.0 ClusterControlManager.registerBroker with
                                    # BrokerHeartbeatManager.hasValidSession); the broker tries
                                    # again a heartbeat interval later
                                    # (BrokerLifecycleManager
                                    # .scheduleNextCommunicationAfterFailure), so a crashed
                                    # broker keeps its ISRs and leaderships until its session
                                    # expires
    reassignment_cancel: bool = True  # KIP-455 (2.4): AlterPartitionReassignments can
                                    # cancel an ongoing reassignment; before, a started
                                    # reassignment could only run to its end
    raft_check_quorum: bool = True  # KAFKA-15489 fixed (3.7.0): a controller quorum
                                    # leader that no majority of voters fetched from within
                                    # 1.5 x quorum.fetch.timeout.ms resigns (LeaderState's
                                    # check-quorum timer, commit 37416e1a); read by
                                    # actors.raft.config.raft_rules_for, KRaft eras only
    stale_broker_check: str = "periodic"  # when a KRaft controller looks for a broker
                                    # whose session expired (the ZooKeeper eras: ZooKeeper's
                                    # session expiry, isrlab's 500 ms check): "deadline" (3.7.0
                                    # QuorumController.rescheduleMaybeFenceStaleBrokers: one
                                    # deferred event at the oldest unfenced broker's last
                                    # contact + broker.session.timeout.ms, re-armed by every
                                    # heartbeat, registration and check) or "periodic"
                                    # (KAFKA-17793, 4.0.0: the maybeFenceStaleBroker periodic
                                    # task every session timeout / 8, 10 ms after a run that
                                    # fenced one; QuorumController.maybeFenceStaleBrokerPeriodNs)
    epochless_truncation_is_local: bool = True  # 2.1+: a truncating partition whose
                                    # epoch cache is empty truncates to its fetch offset (the
                                    # HW) without asking the leader (2.1.0
                                    # ReplicaFetcherThread.fetchEpochsFromLeader skips an
                                    # undefined epoch; 2.8.0/3.7.0 maybeTruncate:
                                    # partitionsWithoutEpochs → truncateToHighWatermark);
                                    # 0.11-2.0 send epoch -1 and truncate to the HW on the
                                    # leader's undefined answer
    fetch_below_start_is_out_of_range: bool = True  # KAFKA-12996 (3.0.0, backported to
                                    # 2.8.1): with truncate-on-fetch, a follower fetch below
                                    # the leader's log start offset is OFFSET_OUT_OF_RANGE
                                    # even when its lastFetchedEpoch diverges (3.7.0/4.1.0
                                    # Partition.readRecords checks the log start offset
                                    # before the divergence); 2.8.0 answers the diverging
                                    # epoch (its readRecords reaches UnifiedLog.read's range
                                    # check only when nothing diverges)
    unknown_follower_fetch_is_error: bool = True  # KAFKA-13837 (3.3.0): a fetch from a
                                    # broker outside the replica set is refused before the
                                    # read (3.7.0/4.1.0 Partition.followerReplicaOrThrow:
                                    # UNKNOWN_LEADER_EPOCH when it names a current leader
                                    # epoch, else NOT_LEADER_OR_FOLLOWER); 2.0-3.2 read it and
                                    # answer without records and without recording its
                                    # position (ReplicaManager.updateFollowerLogReadResults /
                                    # updateFollowerFetchState: withEmptyFetchInfo). 0.10 and
                                    # 0.11 fail the request (Partition.updateReplicaLogReadResult
                                    # throws NotAssignedReplicaException): isrlab answers
                                    # NOT_LEADER_OR_FOLLOWER there


_BASE = Rules(
    era="4.1", hw_over_isr_only=False, hw_counts_caught_up=True, maximal_isr=True,
    isr_eligibility=True, strict_min_isr=True, truncation="fetch", epoch_fencing=True,
    leso_check=True, skip_diverging_fetch_state=True, truncate_before_hw=True,
    epoch_cache_kafka7415=True, alter_partition_errors="3.3",
    broker_epoch_check=True, elr=True, unclean_shutdown_detection=True,
    unclean_default=False, lag_time_default_ms=30000, fence_on_reregistration=True,
    isr_removal_bumps_leader_epoch=False, zk_controller=False,
    duplicate_registration_refused=True,
)

_ERA_RULES: Final = {
    "4.1": _BASE,
    "3.7": replace(_BASE, era="3.7", elr=False, unclean_shutdown_detection=False,
                   reassignment_completes_on_targets=False, stale_broker_check="deadline"),
    "2.8": replace(_BASE, era="2.8",
                   duplicate_registration_refused=False,
                   elr=False, unclean_shutdown_detection=False,
                   fetch_below_start_is_out_of_range=False,
                   unknown_follower_fetch_is_error=False,
                   isr_eligibility=False, strict_min_isr=False, broker_epoch_check=False,
                   skip_diverging_fetch_state=False, truncate_before_hw=False,
                   alter_partition_errors="2.7", isr_removal_bumps_leader_epoch=True,
                   zk_controller=True),
    "2.1": replace(_BASE, era="2.1",
                   duplicate_registration_refused=False,
                   reassignment_cancel=False, alter_partition_errors="zk",
                   unknown_follower_fetch_is_error=False,
                   isr_removal_bumps_leader_epoch=True, zk_controller=True,
                   fence_on_reregistration=False, elr=False,
                   unclean_shutdown_detection=False,
                   isr_eligibility=False, strict_min_isr=False, broker_epoch_check=False,
                   maximal_isr=False, truncation="kip279", skip_diverging_fetch_state=False,
                   truncate_before_hw=False, lag_time_default_ms=10000),
    "2.0": replace(_BASE, era="2.0",
                   duplicate_registration_refused=False,
                   reassignment_cancel=False, alter_partition_errors="zk",
                   unknown_follower_fetch_is_error=False,
                   epochless_truncation_is_local=False,
                   isr_removal_bumps_leader_epoch=True, zk_controller=True,
                   epoch_cache_kafka7415=False,
                   fence_on_reregistration=False, elr=False,
                   unclean_shutdown_detection=False,
                   isr_eligibility=False, strict_min_isr=False, broker_epoch_check=False,
                   maximal_isr=False, truncation="kip279", epoch_fencing=False,
                   leso_check=False, skip_diverging_fetch_state=False,
                   truncate_before_hw=False, lag_time_default_ms=10000),
    "0.11": replace(_BASE, era="0.11",
                    duplicate_registration_refused=False,
                    reassignment_cancel=False, alter_partition_errors="zk",
                    epochless_truncation_is_local=False,
                    isr_removal_bumps_leader_epoch=True, zk_controller=True,
                    epoch_cache_kafka7415=False,
                    fence_on_reregistration=False, elr=False,
                    unclean_shutdown_detection=False,
                    isr_eligibility=False, strict_min_isr=False, broker_epoch_check=False,
                    maximal_isr=False, truncation="kip101", epoch_fencing=False,
                    leso_check=False, skip_diverging_fetch_state=False,
                    truncate_before_hw=False, lag_time_default_ms=10000),
    "0.10": replace(_BASE, era="0.10",
                    duplicate_registration_refused=False,
                    reassignment_cancel=False, alter_partition_errors="zk",
                    epochless_truncation_is_local=False,
                    isr_removal_bumps_leader_epoch=True, zk_controller=True,
                    epoch_cache_kafka7415=False,
                    fence_on_reregistration=False, elr=False,
                    unclean_shutdown_detection=False,
                    isr_eligibility=False, strict_min_isr=False, broker_epoch_check=False,
                    maximal_isr=False, truncation="hw", epoch_fencing=False,
                    leso_check=False, skip_diverging_fetch_state=False,
                    truncate_before_hw=False, hw_over_isr_only=True,
                    hw_counts_caught_up=False, unclean_default=True,
                    lag_time_default_ms=10000),
}


def rules_for(era: str, bugs: tuple[str, ...] | list[str] = (),
              fixes: tuple[str, ...] | list[str] = ()) -> Rules:
    """The rule set of ``era`` with each named bug re-enabled and each proposed fix
    (:data:`FIXES`) applied."""
    rules = _ERA_RULES[era]
    for fix in fixes:
        if fix == "ELR-IN-REPLICAS":
            rules = replace(rules, elr_within_replicas=True)
        else:
            raise KeyError(fix)
    for bug in bugs:
        if bug == "KAFKA-7128":
            rules = replace(rules, leso_check=False)
        elif bug == "KAFKA-13141":
            rules = replace(rules, skip_diverging_fetch_state=False)
        elif bug == "KAFKA-14704":
            rules = replace(rules, truncate_before_hw=False)
        elif bug == "KIP-497":
            rules = replace(rules, maximal_isr=False)
        elif bug == "KAFKA-15583":
            rules = replace(rules, strict_min_isr=False)
        elif bug == "KAFKA-15665":
            rules = replace(rules, reassignment_completes_on_targets=False)
        elif bug == "KAFKA-15489":
            rules = replace(rules, raft_check_quorum=False)
        else:
            raise KeyError(bug)
    return rules
