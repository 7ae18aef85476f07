"""isrlab import (issue 54, point 1): every release family's wording of every message kind.

Each :data:`WORDINGS` entry is one logging call of Kafka's source, read at the tags it names
(``apache/kafka`` 0.10.2.2 to 3.7.0, ``aiven/inkless`` 4.1.0): its file and method, its
format string, and one line built from that format string with the fields filled in (under the
logIdent its class writes), with the facts the importer must read from it. :data:`ABSENT`
says, for a kind a family does not log, why not. A test per wording, named after its kind and
release family; a test that every kind has all six families (0.10, 0.11, 1.x, 2.x, 3.x, 4.x)
covered; and the table of docs/import.md is :func:`table` (``python
tests/test_import_wordings.py`` prints it).
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from traces.logs.kinds import KINDS, match
from traces.logs.lines import FileStats, read_records, records_of

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("0.10", "0.11", "1.x", "2.x", "3.x", "4.x")


@dataclass(frozen=True)
class Wording:
    kind: str
    family: str
    #: the release tags read that log this wording
    tags: str
    #: file (Kafka's module path shortened) and method
    where: str
    #: the format string, as the logging call writes it ({} / %s / $x: a field)
    wording: str
    #: the message as the logger writes it, with the class's logIdent
    message: str
    #: what the first event must say (a subset of its fields)
    expect: dict[str, Any] = field(default_factory=dict)
    level: str = "INFO"
    logger: str = "kafka.x"
    #: how many events the line makes (None: at least one)
    events: int | None = None


P010 = "Partition [orders,0] on broker 1: "
P1 = "[Partition orders-0 broker=1] "
SC = "[Broker id=1] "
LOG1 = "[Log partition=orders-0, dir=/var/kafka] "
ULOG = "[UnifiedLog partition=orders-0, dir=/var/kafka] "
F010 = "[ReplicaFetcherThread-0-2], "
F1 = "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] "
C010 = "[Controller 1]: "
C1 = "[Controller id=1] "
QC = "[QuorumController id=3000] "
TP = {"topic": "orders", "partition": 0}
SEG = ("LogSegment(baseOffset={b}, size=1024, lastModifiedTime=1700000000000, "
       "largestRecordTimestamp=Some(1700000000000))")
SEG41 = ("LogSegment(baseOffset={b}, size=1024, lastModifiedTime=1700000000000, "
         "largestRecordTimestamp=1700000000000)")
LOG_TS = ("Log(dir=/var/kafka/orders-0, topic=orders, partition=0, highWatermark=90, "
          "lastStableOffset=90, logStartOffset=10, logEndOffset=100)")
ULOG_TS = ("UnifiedLog(dir=/var/kafka/orders-0, topicId=Jb1n0ZBuQAmkZqQqLJ0CKw, topic=orders, "
           "partition=0, highWatermark=90, lastStableOffset=90, logStartOffset=10, "
           "logEndOffset=100)")
REG = ("RegisterBrokerRecord(brokerId=2, isMigratingZkBroker=false, incarnationId=Zx0w, "
       "brokerEpoch=42, endPoints=[], features=[], rack=null, fenced=true, "
       "inControlledShutdown=false, logDirs=[])")
LAI_11 = "LeaderAndIsr(leader=2, leaderEpoch=5, isr=List(2, 3), zkVersion=7)"
LAI_37 = ("LeaderAndIsr(leader=2, leaderEpoch=5, isrWithBrokerEpoch=List(BrokerState(brokerId=2, "
          "brokerEpoch=-1), BrokerState(brokerId=3, brokerEpoch=-1)), leaderRecoveryState="
          "RECOVERED, partitionEpoch=7)")

W = Wording
WORDINGS: tuple[Wording, ...] = (
    # --- isr_shrink ---------------------------------------------------------------------
    W("isr_shrink", "0.10", "0.10.2.2", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR for partition [%s,%d] from %s to %s",
      P010 + "Shrinking ISR for partition [orders,0] from 1,2,3 to 1",
      {**TP, "old": [1, 2, 3], "new": [1], "replica": 1, "reason": "shrink"}),
    W("isr_shrink", "0.11", "0.11.0.2", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR from %s to %s", P010 + "Shrinking ISR from 1,2,3 to 1,2",
      {**TP, "old": [1, 2, 3], "new": [1, 2], "replica": 1}),
    W("isr_shrink", "1.x", "1.0.2, 1.1.1", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR from %s to %s", P1 + "Shrinking ISR from 1,2,3 to 1,2",
      {**TP, "old": [1, 2, 3], "new": [1, 2], "replica": 1}),
    W("isr_shrink", "2.x", "2.0.1", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR from %s to %s", P1 + "Shrinking ISR from 1,2 to 1",
      {**TP, "old": [1, 2], "new": [1]}),
    W("isr_shrink", "2.x", "2.4.1, 2.8.2", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR from %s to %s. Leader: (highWatermark: %d, endOffset: %d). Out of sync "
      "replicas: %s.",
      P1 + "Shrinking ISR from 1,2 to 1. Leader: (highWatermark: 90, endOffset: 100). Out of "
      "sync replicas: (brokerId: 2, endOffset: 80).",
      {**TP, "old": [1, 2], "new": [1], "hw": 90, "leo": 100}),
    W("isr_shrink", "3.x", "3.5.2, 3.7.0", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR from ${isr} to $newIsrLog. Leader: (highWatermark: .., endOffset: ..). "
      "Out of sync replicas: $outOfSyncReplicaLog.",
      P1 + "Shrinking ISR from 1,2 to 1. Leader: (highWatermark: 90, endOffset: 100). Out of "
      "sync replicas: (brokerId: 2, endOffset: 80, lastCaughtUpTimeMs: 1700000000000).",
      {**TP, "old": [1, 2], "new": [1], "hw": 90, "leo": 100}),
    W("isr_shrink", "4.x", "4.1.0", "core/cluster/Partition.scala:maybeShrinkIsr",
      "Shrinking ISR from ${isr} to $newIsrLog. Leader: (highWatermark: .., endOffset: ..). "
      "Out of sync replicas: $outOfSyncReplicaLog.",
      P1 + "Shrinking ISR from 1,2,3 to 1,3. Leader: (highWatermark: 5, endOffset: 7). Out of "
      "sync replicas: (brokerId: 2, endOffset: 4, lastCaughtUpTimeMs: 1700000000000).",
      {**TP, "old": [1, 2, 3], "new": [1, 3], "hw": 5, "leo": 7}),
    # --- isr_expand ---------------------------------------------------------------------
    W("isr_expand", "0.10", "0.10.2.2", "core/cluster/Partition.scala:maybeExpandIsr",
      "Expanding ISR for partition $topicPartition from .. to ..",
      P010 + "Expanding ISR for partition orders-0 from 1 to 1,2",
      {**TP, "old": [1], "new": [1, 2], "reason": "expand"}),
    W("isr_expand", "0.11", "0.11.0.2", "core/cluster/Partition.scala:maybeExpandIsr",
      "Expanding ISR from .. to ..", P010 + "Expanding ISR from 1 to 1,2",
      {**TP, "old": [1], "new": [1, 2]}),
    W("isr_expand", "1.x", "1.0.2, 1.1.1", "core/cluster/Partition.scala:maybeExpandIsr",
      "Expanding ISR from .. to ..", P1 + "Expanding ISR from 1 to 1,2",
      {**TP, "old": [1], "new": [1, 2], "replica": 1}),
    W("isr_expand", "2.x", "2.0.1, 2.4.1", "core/cluster/Partition.scala:maybeExpandIsr",
      "Expanding ISR from .. to ..", P1 + "Expanding ISR from 1,3 to 1,3,2",
      {**TP, "old": [1, 3], "new": [1, 3, 2]}),
    # --- isr_updated --------------------------------------------------------------------
    W("isr_updated", "0.10", "0.10.2.2", "core/cluster/Partition.scala:updateIsr",
      "ISR updated to [%s] and zkVersion updated to [%d] (TRACE)",
      P010 + "ISR updated to [1,2] and zkVersion updated to [7]",
      {**TP, "new": [1, 2], "partition_epoch": 7}, level="TRACE"),
    W("isr_updated", "0.11", "0.11.0.2", "core/cluster/Partition.scala:updateIsr",
      "ISR updated to [%s] and zkVersion updated to [%d] (TRACE)",
      P010 + "ISR updated to [1] and zkVersion updated to [8]",
      {**TP, "new": [1], "partition_epoch": 8}, level="TRACE"),
    W("isr_updated", "1.x", "1.0.2, 1.1.1", "core/cluster/Partition.scala:updateIsr",
      "ISR updated to [%s] and zkVersion updated to [%d] (TRACE)",
      P1 + "ISR updated to [1,2] and zkVersion updated to [9]",
      {**TP, "new": [1, 2], "partition_epoch": 9}, level="TRACE"),
    W("isr_updated", "2.x", "2.0.1 (TRACE), 2.4.1 (INFO)", "core/cluster/Partition.scala:updateIsr",
      "ISR updated to [%s] and zkVersion updated to [%d]",
      P1 + "ISR updated to [1,2,3] and zkVersion updated to [10]",
      {**TP, "new": [1, 2, 3], "partition_epoch": 10}),
    W("isr_updated", "2.x", "2.8.2", "core/cluster/Partition.scala:handleAlterIsrResponse",
      "ISR updated to ${isr} and version updated to [$zkVersion]",
      P1 + "ISR updated to 1,2 and version updated to [11]",
      {**TP, "new": [1, 2], "partition_epoch": 11}),
    W("isr_updated", "3.x", "3.5.2, 3.7.0",
      "core/cluster/Partition.scala:handleAlterPartitionUpdate",
      "ISR updated to ${isr} ${(under-min-isr)} and version updated to $partitionEpoch",
      P1 + "ISR updated to 1  and version updated to 12",
      {**TP, "new": [1], "partition_epoch": 12}),
    W("isr_updated", "4.x", "4.1.0", "core/cluster/Partition.scala:handleAlterPartitionUpdate",
      "ISR updated to ${isr} ${(under-min-isr)} and version updated to $partitionEpoch",
      P1 + "ISR updated to 1 (under-min-isr) and version updated to 13",
      {**TP, "new": [1], "partition_epoch": 13}),
    # --- zk_version_stale ---------------------------------------------------------------
    W("zk_version_stale", "0.10", "0.10.2.2", "core/cluster/Partition.scala:updateIsr",
      "Cached zkVersion [%d] not equal to that in zookeeper, skip updating ISR",
      P010 + "Cached zkVersion [7] not equal to that in zookeeper, skip updating ISR",
      {**TP, "partition_epoch": 7, "replica": 1}),
    W("zk_version_stale", "0.11", "0.11.0.2", "core/cluster/Partition.scala:updateIsr",
      "Cached zkVersion [%d] not equal to that in zookeeper, skip updating ISR",
      P010 + "Cached zkVersion [3] not equal to that in zookeeper, skip updating ISR",
      {**TP, "partition_epoch": 3}),
    W("zk_version_stale", "1.x", "1.0.2, 1.1.1", "core/cluster/Partition.scala:updateIsr",
      "Cached zkVersion [%d] not equal to that in zookeeper, skip updating ISR",
      P1 + "Cached zkVersion [4] not equal to that in zookeeper, skip updating ISR",
      {**TP, "partition_epoch": 4}),
    W("zk_version_stale", "2.x", "2.0.1", "core/cluster/Partition.scala:updateIsr",
      "Cached zkVersion [%d] not equal to that in zookeeper, skip updating ISR",
      P1 + "Cached zkVersion [5] not equal to that in zookeeper, skip updating ISR",
      {**TP, "partition_epoch": 5}),
    W("zk_version_stale", "2.x", "2.4.1", "core/cluster/Partition.scala:updateIsr",
      "Cached zkVersion $zkVersion not equal to that in zookeeper, skip updating ISR",
      P1 + "Cached zkVersion 6 not equal to that in zookeeper, skip updating ISR",
      {**TP, "partition_epoch": 6}),
    # --- become_leader ------------------------------------------------------------------
    W("become_leader", "0.11", "0.11.0.2", "core/cluster/Partition.scala:makeLeader",
      "$topicPartition starts at Leader Epoch .. from offset ... Previous Leader Epoch was: ..",
      P010 + "orders-0 starts at Leader Epoch 4 from offset 10. Previous Leader Epoch was: 3",
      {**TP, "leader_epoch": 4, "leso": 10, "previous_leader_epoch": 3, "replica": 1}),
    W("become_leader", "1.x", "1.0.2, 1.1.1", "core/cluster/Partition.scala:makeLeader",
      "$topicPartition starts at Leader Epoch .. from offset ... Previous Leader Epoch was: ..",
      P1 + "orders-0 starts at Leader Epoch 4 from offset 1. Previous Leader Epoch was: -1",
      {**TP, "leader_epoch": 4, "leso": 1, "previous_leader_epoch": -1, "replica": 1}),
    W("become_leader", "2.x", "2.0.1", "core/cluster/Partition.scala:makeLeader",
      "$topicPartition starts at Leader Epoch .. from offset $leaderEpochStartOffset. Previous "
      "Leader Epoch was: $leaderEpoch",
      P1 + "orders-0 starts at Leader Epoch 5 from offset 20. Previous Leader Epoch was: 4",
      {**TP, "leader_epoch": 5, "leso": 20, "previous_leader_epoch": 4}),
    W("become_leader", "2.x", "2.4.1", "core/cluster/Partition.scala:makeLeader",
      "$topicPartition starts at leader epoch .. from offset .. with high watermark ... "
      "Previous leader epoch was $leaderEpoch.",
      P1 + "orders-0 starts at leader epoch 6 from offset 30 with high watermark 28. Previous "
      "leader epoch was 5.",
      {**TP, "leader_epoch": 6, "leso": 30, "hw": 28, "previous_leader_epoch": 5}),
    W("become_leader", "2.x", "2.8.2", "core/cluster/Partition.scala:makeLeader",
      "Leader $topicPartition starts at leader epoch .. from offset .. with high watermark .. "
      "ISR [..] addingReplicas [..] removingReplicas [..]. Previous leader epoch was ...",
      SC + "Leader orders-0 starts at leader epoch 7 from offset 40 with high watermark 40 ISR "
      "[1,2] addingReplicas [] removingReplicas []. Previous leader epoch was 6.",
      {**TP, "leader_epoch": 7, "leso": 40, "hw": 40, "isr": [1, 2],
       "previous_leader_epoch": 6, "replica": 1}, logger="state.change.logger"),
    W("become_leader", "3.x", "3.5.2", "core/cluster/Partition.scala:makeLeader",
      "Leader $topicPartition with topic id $topicId starts at leader epoch .. from offset .. "
      "with partition epoch .., high watermark .., ISR [..], adding replicas [..] and removing "
      "replicas [..] ${(under-min-isr)}. Previous leader epoch was ...",
      SC + "Leader orders-0 with topic id Some(Jb1n0ZBuQAmkZqQqLJ0CKw) starts at leader epoch "
      "8 from offset 50 with partition epoch 12, high watermark 49, ISR [1,2], adding replicas "
      "[] and removing replicas [] . Previous leader epoch was 7.",
      {**TP, "leader_epoch": 8, "leso": 50, "partition_epoch": 12, "hw": 49, "isr": [1, 2],
       "previous_leader_epoch": 7}, logger="state.change.logger"),
    W("become_leader", "3.x", "3.7.0", "core/cluster/Partition.scala:makeLeader",
      "... removing replicas [..] ${(under-min-isr)}. Previous leader $leaderReplicaIdOpt and "
      "previous leader epoch was $leaderEpoch.",
      SC + "Leader orders-0 with topic id Some(Jb1n0ZBuQAmkZqQqLJ0CKw) starts at leader epoch "
      "9 from offset 60 with partition epoch 14, high watermark 60, ISR [1], adding replicas "
      "[] and removing replicas [] (under-min-isr). Previous leader Some(2) and previous "
      "leader epoch was 8.",
      {**TP, "leader_epoch": 9, "leso": 60, "partition_epoch": 14, "isr": [1],
       "previous_leader_epoch": 8}, logger="state.change.logger"),
    W("become_leader", "4.x", "4.1.0", "core/cluster/Partition.scala:makeLeader",
      "... removing replicas [..] ${(under-min-isr)}. Previous leader $leaderReplicaIdOpt and "
      "previous leader epoch was $leaderEpoch.",
      SC + "Leader orders-0 with topic id Some(Jb1n0ZBuQAmkZqQqLJ0CKw) starts at leader epoch "
      "3 from offset 0 with partition epoch 3, high watermark 0, ISR [1,2,3], adding replicas "
      "[] and removing replicas [] . Previous leader None and previous leader epoch was -1.",
      {**TP, "leader_epoch": 3, "leso": 0, "isr": [1, 2, 3], "previous_leader_epoch": -1},
      logger="state.change.logger"),
    # --- become_follower ----------------------------------------------------------------
    W("become_follower", "2.x", "2.8.2", "core/cluster/Partition.scala:makeFollower",
      "Follower $topicPartition starts at leader epoch .. from offset .. with high watermark "
      "... Previous leader epoch was ...",
      SC + "Follower orders-0 starts at leader epoch 7 from offset 40 with high watermark 38. "
      "Previous leader epoch was 6.",
      {**TP, "leader_epoch": 7, "leo": 40, "hw": 38, "replica": 1},
      logger="state.change.logger"),
    W("become_follower", "3.x", "3.5.2", "core/cluster/Partition.scala:makeFollower",
      "Follower .. starts at leader epoch .. from offset .. with partition epoch .. and high "
      "watermark ... Current leader is ... Previous leader epoch was ...",
      SC + "Follower orders-0 starts at leader epoch 8 from offset 50 with partition epoch 12 "
      "and high watermark 49. Current leader is 2. Previous leader epoch was 7.",
      {**TP, "leader_epoch": 8, "leo": 50, "partition_epoch": 12, "hw": 49, "leader": 2},
      logger="state.change.logger"),
    W("become_follower", "3.x", "3.7.0", "core/cluster/Partition.scala:makeFollower",
      "... Current leader is ... Previous leader $leaderReplicaIdOpt and previous leader "
      "epoch was ...",
      SC + "Follower orders-0 starts at leader epoch 9 from offset 60 with partition epoch 14 "
      "and high watermark 60. Current leader is 2. Previous leader Some(1) and previous "
      "leader epoch was 8.",
      {**TP, "leader_epoch": 9, "leo": 60, "partition_epoch": 14, "leader": 2},
      logger="state.change.logger"),
    W("become_follower", "4.x", "4.1.0", "core/cluster/Partition.scala:makeFollower",
      "... Current leader is ... Previous leader $leaderReplicaIdOpt and previous leader "
      "epoch was ...",
      SC + "Follower orders-0 starts at leader epoch 4 from offset 7 with partition epoch 5 "
      "and high watermark 7. Current leader is 3. Previous leader None and previous leader "
      "epoch was -1.",
      {**TP, "leader_epoch": 4, "leo": 7, "partition_epoch": 5, "leader": 3},
      logger="state.change.logger"),
    # --- truncate_no_effect -------------------------------------------------------------
    W("truncate_no_effect", "0.10", "0.10.2.2", "core/log/Log.scala:truncateTo",
      "Truncating %s to %d has no effect as the largest offset in the log is %d.",
      "Truncating orders-0 to 2334 has no effect as the largest offset in the log is 2333.",
      events=0),
    W("truncate_no_effect", "0.11", "0.11.0.2", "core/log/Log.scala:truncateTo",
      "Truncating %s to %d has no effect as the largest offset in the log is %d.",
      "Truncating orders-0 to 9 has no effect as the largest offset in the log is 8.",
      events=0),
    W("truncate_no_effect", "1.x", "1.0.2, 1.1.1", "core/log/Log.scala:truncateTo",
      "Truncating to $targetOffset has no effect as the largest offset in the log is ..",
      LOG1 + "Truncating to 9 has no effect as the largest offset in the log is 8", events=0),
    W("truncate_no_effect", "2.x", "2.0.1, 2.4.1, 2.8.2", "core/log/Log.scala:truncateTo",
      "Truncating to $targetOffset has no effect as the largest offset in the log is ..",
      LOG1 + "Truncating to 0 has no effect as the largest offset in the log is -1", events=0),
    W("truncate_no_effect", "3.x", "3.5.2, 3.7.0", "core/log/UnifiedLog.scala:truncateTo",
      "Truncating to $targetOffset has no effect as the largest offset in the log is ..",
      ULOG + "Truncating to 12 has no effect as the largest offset in the log is 11", events=0),
    W("truncate_no_effect", "4.x", "4.1.0",
      "storage/.../log/UnifiedLog.java:truncateTo",
      "Truncating to {} has no effect as the largest offset in the log is {}",
      ULOG + "Truncating to 12 has no effect as the largest offset in the log is 11", events=0),
    # --- truncate -----------------------------------------------------------------------
    W("truncate", "0.10", "0.10.2.2", "core/log/Log.scala:truncateTo",
      "Truncating log %s to offset %d. (logged before the 'has no effect' check)",
      "Truncating log orders-0 to offset 2051.",
      {**TP, "new_leo": 2051, "reason": "truncate"}),
    W("truncate", "0.11", "0.11.0.2", "core/log/Log.scala:truncateTo",
      "Truncating log %s to offset %d.", "Truncating log orders-0 to offset 17.",
      {**TP, "new_leo": 17}),
    W("truncate", "1.x", "1.0.2, 1.1.1", "core/log/Log.scala:truncateTo",
      "Truncating to offset $targetOffset", LOG1 + "Truncating to offset 17",
      {**TP, "new_leo": 17, "reason": "truncate"}),
    W("truncate", "2.x", "2.0.1, 2.4.1, 2.8.2", "core/log/Log.scala:truncateTo",
      "Truncating to offset $targetOffset", LOG1 + "Truncating to offset 18",
      {**TP, "new_leo": 18}),
    W("truncate", "3.x", "3.5.2, 3.7.0", "core/log/UnifiedLog.scala:truncateTo",
      "Truncating to offset $targetOffset", ULOG + "Truncating to offset 19",
      {**TP, "new_leo": 19}),
    W("truncate", "4.x", "4.1.0", "storage/.../log/UnifiedLog.java:truncateTo",
      "Truncating to offset {}", ULOG + "Truncating to offset 20", {**TP, "new_leo": 20}),
    # --- truncate_to_hw -----------------------------------------------------------------
    W("truncate_to_hw", "2.x", "2.4.1, 2.8.2",
      "core/server/AbstractFetcherThread.scala:truncateToHighWatermark",
      "Truncating partition $tp to local high watermark $highWatermark",
      F1 + "Truncating partition orders-0 to local high watermark 0",
      {**TP, "new_leo": 0, "reason": "high_watermark", "replica": 1}),
    W("truncate_to_hw", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherThread.scala:truncateToHighWatermark",
      "Truncating partition $tp with $truncationState due to local high watermark "
      "$highWatermark",
      F1 + "Truncating partition orders-0 with TruncationState(offset=25, completed=true) due "
      "to local high watermark 25",
      {**TP, "new_leo": 25, "hw": 25, "completed": True, "reason": "high_watermark"}),
    W("truncate_to_hw", "4.x", "4.1.0",
      "core/server/AbstractFetcherThread.scala:truncateToHighWatermark",
      "Truncating partition $tp with $truncationState due to local high watermark "
      "$highWatermark",
      F1 + "Truncating partition orders-0 with TruncationState(offset=7, completed=true) due "
      "to local high watermark 7",
      {**TP, "new_leo": 7, "hw": 7}),
    # --- log_start_offset ---------------------------------------------------------------
    W("log_start_offset", "1.x", "1.0.2, 1.1.1", "core/log/Log.scala:maybeIncrementLogStartOffset",
      "Incrementing log start offset to $newLogStartOffset",
      LOG1 + "Incrementing log start offset to 500", {**TP, "new": 500}),
    W("log_start_offset", "2.x", "2.0.1, 2.4.1",
      "core/log/Log.scala:maybeIncrementLogStartOffset",
      "Incrementing log start offset to $newLogStartOffset",
      LOG1 + "Incrementing log start offset to 600", {**TP, "new": 600}),
    W("log_start_offset", "2.x", "2.8.2", "core/log/Log.scala:maybeIncrementLogStartOffset",
      "Incremented log start offset to $newLogStartOffset due to $reason",
      LOG1 + "Incremented log start offset to 700 due to leader offset increment",
      {**TP, "new": 700, "reason": "leader offset increment"}),
    W("log_start_offset", "3.x", "3.5.2, 3.7.0",
      "core/log/UnifiedLog.scala:maybeIncrementLogStartOffset",
      "Incremented log start offset to $newLogStartOffset due to $reason",
      ULOG + "Incremented log start offset to 800 due to segment deletion",
      {**TP, "new": 800, "reason": "segment deletion"}),
    W("log_start_offset", "4.x", "4.1.0",
      "storage/.../log/UnifiedLog.java:maybeIncrementLogStartOffset",
      "Incremented log start offset to {} due to {}",
      ULOG + "Incremented log start offset to 900 due to client delete records request",
      {**TP, "new": 900, "reason": "client delete records request"}),
    # --- segment_delete -----------------------------------------------------------------
    W("segment_delete", "0.10", "0.10.2.2", "core/log/Log.scala:deleteSeg",
      "Deleting segment %d from log %s.", "Deleting segment 0 from log orders-0.",
      {**TP, "base_offset": 0}),
    W("segment_delete", "0.11", "0.11.0.2", "core/log/Log.scala:deleteSeg",
      "Deleting segment %d from log %s.", "Deleting segment 4096 from log orders-0.",
      {**TP, "base_offset": 4096}),
    W("segment_delete", "2.x", "2.8.2", "core/log/Log.scala:deleteRetentionMsBreachedSegments",
      "Deleting segment $segment due to retention time ${retentionMs}ms breach based on the "
      "largest record timestamp in the segment",
      LOG1 + "Deleting segment " + SEG.format(b=0) + " due to retention time 604800000ms "
      "breach based on the largest record timestamp in the segment",
      {**TP, "base_offset": 0}),
    W("segment_delete", "2.x", "2.8.2", "core/log/Log.scala:deleteLogStartOffsetBreachedSegments",
      "Deleting segments due to log start offset $logStartOffset breach: $toDelete",
      LOG1 + "Deleting segments due to log start offset 200 breach: " + SEG.format(b=0) + ","
      + SEG.format(b=100),
      {**TP, "base_offset": 0, "reason": "log start offset 200 breach"}, events=2),
    W("segment_delete", "3.x", "3.5.2",
      "core/log/UnifiedLog.scala:deleteRetentionSizeBreachedSegments",
      "Deleting segment $segment due to retention size .. breach. Log size after deletion "
      "will be $size.",
      ULOG + "Deleting segment " + SEG.format(b=300) + " due to retention size 1073741824 "
      "breach. Log size after deletion will be 1073741000.",
      {**TP, "base_offset": 300}),
    W("segment_delete", "3.x", "3.7.0",
      "core/log/UnifiedLog.scala:deleteRetentionMsBreachedSegments",
      "Deleting segment $segment due to [local] log retention time ${retentionMs}ms breach "
      "based on the largest record timestamp in the segment",
      ULOG + "Deleting segment " + SEG.format(b=400) + " due to log retention time "
      "604800000ms breach based on the largest record timestamp in the segment",
      {**TP, "base_offset": 400}),
    W("segment_delete", "3.x", "3.7.0",
      "core/log/UnifiedLog.scala:deleteLogStartOffsetBreachedSegments",
      "Deleting segments due to [local] log start offset .. breach: $toDelete",
      ULOG + "Deleting segments due to local log start offset 500 breach: " + SEG.format(b=400),
      {**TP, "base_offset": 400, "reason": "local log start offset 500 breach"}, events=1),
    W("segment_delete", "4.x", "4.1.0", "storage/.../log/UnifiedLog.java:deleteOldSegments",
      "Deleting segment {} due to log retention time {}ms breach based on the last modified "
      "time of the segment",
      ULOG + "Deleting segment " + SEG41.format(b=500) + " due to log retention time "
      "604800000ms breach based on the last modified time of the segment",
      {**TP, "base_offset": 500}),
    W("segment_delete", "4.x", "4.1.0", "storage/.../log/UnifiedLog.java:deleteOldSegments",
      "Deleting segments due to log start offset {} breach: {}",
      ULOG + "Deleting segments due to log start offset 700 breach: " + SEG41.format(b=500)
      + "," + SEG41.format(b=600),
      {**TP, "base_offset": 500}, events=2),
    # --- recovering_segment -------------------------------------------------------------
    W("recovering_segment", "0.10", "0.10.2.2", "core/log/Log.scala:recoverLog",
      "Recovering unflushed segment %d in log %s.",
      "Recovering unflushed segment 0 in log orders-0.", {**TP, "unflushed_segment": 0}),
    W("recovering_segment", "0.11", "0.11.0.2", "core/log/Log.scala:recoverLog",
      "Recovering unflushed segment %d in log %s.",
      "Recovering unflushed segment 100 in log orders-0.", {**TP, "unflushed_segment": 100}),
    W("recovering_segment", "1.x", "1.0.2, 1.1.1", "core/log/Log.scala:recoverLog",
      "Recovering unflushed segment ${segment.baseOffset}",
      LOG1 + "Recovering unflushed segment 200", {**TP, "unflushed_segment": 200}),
    W("recovering_segment", "2.x", "2.0.1, 2.4.1, 2.8.2", "core/log/Log.scala:recoverLog",
      "Recovering unflushed segment ${segment.baseOffset}",
      LOG1 + "Recovering unflushed segment 300", {**TP, "unflushed_segment": 300}),
    W("recovering_segment", "3.x", "3.5.2, 3.7.0", "core/log/LogLoader.scala:recoverLog",
      "Recovering unflushed segment ${segment.baseOffset}. $numFlushed/$numUnflushed "
      "recovered for $topicPartition.",
      "[LogLoader partition=orders-0, dir=/var/kafka] Recovering unflushed segment 400. 0/2 "
      "recovered for orders-0.",
      {**TP, "unflushed_segment": 400}),
    W("recovering_segment", "4.x", "4.1.0", "storage/.../log/LogLoader.java:recoverLog",
      "Recovering unflushed segment {}. {} recovered for {}.",
      "[LogLoader partition=orders-0, dir=/var/kafka] Recovering unflushed segment 500. 0 "
      "recovered for orders-0.",
      {**TP, "unflushed_segment": 500}),
    # --- broker_change ------------------------------------------------------------------
    W("broker_change", "0.10", "0.10.2.2",
      "core/controller/ReplicaStateMachine.scala:BrokerChangeListener.handleChildChange",
      "Newly added brokers: %s, deleted brokers: %s, all live brokers: %s",
      "[BrokerChangeListener on Controller 1]: Newly added brokers: , deleted brokers: 3, all "
      "live brokers: 1,2",
      {"added": [], "deleted": [3], "live": [1, 2]}),
    W("broker_change", "0.11", "0.11.0.2",
      "core/controller/KafkaController.scala:BrokerChange.process",
      "Newly added brokers: %s, deleted brokers: %s, all live brokers: %s",
      C010 + "Newly added brokers: 3, deleted brokers: , all live brokers: 1,2,3",
      {"added": [3], "deleted": [], "live": [1, 2, 3]}),
    W("broker_change", "1.x", "1.0.2, 1.1.1",
      "core/controller/KafkaController.scala:BrokerChange.process",
      "Newly added brokers: .., deleted brokers: .., all live brokers: ..",
      C1 + "Newly added brokers: , deleted brokers: 2, all live brokers: 1,3",
      {"added": [], "deleted": [2], "live": [1, 3]}, events=2),
    W("broker_change", "2.x", "2.0.1", "core/controller/KafkaController.scala:BrokerChange.process",
      "Newly added brokers: .., deleted brokers: .., all live brokers: ..",
      C1 + "Newly added brokers: 2, deleted brokers: , all live brokers: 1,2,3",
      {"added": [2], "live": [1, 2, 3]}),
    W("broker_change", "2.x", "2.4.1, 2.8.2",
      "core/controller/KafkaController.scala:processBrokerChange",
      "Newly added brokers: .., deleted brokers: .., bounced brokers: .., all live brokers: ..",
      C1 + "Newly added brokers: , deleted brokers: , bounced brokers: 2, all live brokers: "
      "1,2,3", {"bounced": [2], "live": [1, 2, 3]}),
    W("broker_change", "3.x", "3.5.2, 3.7.0",
      "core/controller/KafkaController.scala:processBrokerChange",
      "Newly added brokers: .., deleted brokers: .., bounced brokers: .., all live brokers: ..",
      C1 + "Newly added brokers: , deleted brokers: 3, bounced brokers: , all live brokers: 1,2",
      {"deleted": [3], "bounced": [], "live": [1, 2]}),
    # --- offline_election_failed --------------------------------------------------------
    W("offline_election_failed", "0.10", "0.10.2.2",
      "core/controller/PartitionStateMachine.scala:handleStateChange",
      "Controller %d epoch %d initiated state change for partition %s from %s to %s failed",
      "Controller 1 epoch 3 initiated state change for partition [orders,0] from "
      "OfflinePartition to OnlinePartition failed", {**TP, "reason": "election failed"},
      level="ERROR", logger="state.change.logger"),
    W("offline_election_failed", "0.11", "0.11.0.2",
      "core/controller/PartitionStateMachine.scala:handleStateChange",
      "Controller %d epoch %d initiated state change for partition %s from %s to %s failed",
      "Controller 1 epoch 4 initiated state change for partition [orders,0] from "
      "OfflinePartition to OnlinePartition failed", {**TP}, level="ERROR",
      logger="state.change.logger"),
    W("offline_election_failed", "1.x", "1.0.2",
      "core/controller/PartitionStateMachine.scala:handleStateChange",
      "Initiated state change for partition $topicAndPartition from .. to .. failed",
      "[Controller id=1 epoch=5] Initiated state change for partition [orders,0] from "
      "OfflinePartition to OnlinePartition failed", {**TP}, level="ERROR",
      logger="state.change.logger"),
    W("offline_election_failed", "1.x", "1.1.1",
      "core/controller/PartitionStateMachine.scala:logFailedStateChange",
      "Controller $controllerId epoch .. failed to change state for partition $partition from "
      "$currState to $targetState",
      "[Controller id=1 epoch=6] Controller 1 epoch 6 failed to change state for partition "
      "orders-0 from OfflinePartition to OnlinePartition", {**TP}, level="ERROR",
      logger="state.change.logger"),
    W("offline_election_failed", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/controller/PartitionStateMachine.scala:logFailedStateChange",
      "Controller $controllerId epoch .. failed to change state for partition $partition from "
      "$currState to $targetState",
      "[Controller id=1 epoch=7] Controller 1 epoch 7 failed to change state for partition "
      "orders-0 from OfflinePartition to OnlinePartition", {**TP}, level="ERROR",
      logger="state.change.logger"),
    W("offline_election_failed", "3.x", "3.5.2, 3.7.0",
      "core/controller/PartitionStateMachine.scala:logFailedStateChange",
      "Controller $controllerId epoch .. failed to change state for partition $partition from "
      "$currState to $targetState",
      "[Controller id=1 epoch=8] Controller 1 epoch 8 failed to change state for partition "
      "orders-0 from OfflinePartition to OnlinePartition", {**TP}, level="ERROR",
      logger="state.change.logger"),
    # --- broker_fenced ------------------------------------------------------------------
    W("broker_fenced", "2.x", "2.8.2",
      "metadata/.../controller/ReplicationControlManager.java:maybeFenceStaleBrokers",
      "Fencing broker {} because its session has timed out.",
      QC + "Fencing broker 2 because its session has timed out.",
      {"broker": 2, "reason": "session_timeout"}),
    W("broker_fenced", "3.x", "3.5.2, 3.7.0",
      "metadata/.../controller/ReplicationControlManager.java:maybeFenceOneStaleBroker",
      "Fencing broker {} because its session has timed out.",
      QC + "Fencing broker 3 because its session has timed out.", {"broker": 3}),
    W("broker_fenced", "4.x", "4.0.0, 4.1.0",
      "metadata/.../controller/ReplicationControlManager.java:maybeFenceOneStaleBroker",
      "Fencing broker {} at epoch {} because its session has timed out.",
      QC + "Fencing broker 2 at epoch 42 because its session has timed out.",
      {"broker": 2, "broker_epoch": 42, "reason": "session_timeout"}),
    # --- broker_registered --------------------------------------------------------------
    W("broker_registered", "2.x", "2.8.2",
      "metadata/.../controller/ClusterControlManager.java:replay(RegisterBrokerRecord)",
      "Registered new broker: {}", QC + "Registered new broker: " + REG,
      {"broker": 2, "broker_epoch": 42}),
    W("broker_registered", "3.x", "3.5.2",
      "metadata/.../controller/ClusterControlManager.java:replay(RegisterBrokerRecord)",
      "Re-registered broker id {}: {}", QC + "Re-registered broker id 2: " + REG,
      {"broker": 2, "broker_epoch": 42}),
    W("broker_registered", "3.x", "3.7.0",
      "metadata/.../controller/ClusterControlManager.java:replay(RegisterBrokerRecord)",
      "Replayed initial RegisterBrokerRecord for broker {}: {}",
      QC + "Replayed initial RegisterBrokerRecord for broker 2: " + REG,
      {"broker": 2, "broker_epoch": 42}),
    W("broker_registered", "4.x", "4.1.0",
      "metadata/.../controller/ClusterControlManager.java:replay(RegisterBrokerRecord)",
      "Replayed RegisterBrokerRecord establishing a new incarnation of broker {}: {}",
      QC + "Replayed RegisterBrokerRecord establishing a new incarnation of broker 2: " + REG,
      {"broker": 2, "broker_epoch": 42}),
    # --- kraft_partition_change ---------------------------------------------------------
    W("kraft_partition_change", "3.x", "3.5.2, 3.7.0",
      "metadata/.../metadata/PartitionRegistration.java:maybeLogPartitionChange",
      "UNCLEAN partition change for {}: {}",
      QC + "UNCLEAN partition change for orders-0 with topic ID Jb1n0ZBuQAmkZqQqLJ0CKw: "
      "leader: -1 -> 3, leaderEpoch: 4 -> 5, isr: [1] -> [3], partitionEpoch: 8 -> 9",
      {**TP, "old": [1], "new": [3], "reason": "unclean_election", "partition_epoch": 9}),
    W("kraft_partition_change", "4.x", "4.1.0",
      "metadata/.../metadata/PartitionRegistration.java:maybeLogPartitionChange",
      "partition change for {}: {} (DEBUG)",
      QC + "partition change for orders-0 with topic ID Jb1n0ZBuQAmkZqQqLJ0CKw: isr: [1, 2] "
      "-> [1], partitionEpoch: 3 -> 4",
      {**TP, "old": [1, 2], "new": [1], "reason": "controller"}, level="DEBUG"),
    # --- truncate_below_hw --------------------------------------------------------------
    W("truncate_below_hw", "2.x", "2.0.1", "core/server/ReplicaFetcherThread.scala:maybeTruncate",
      "Truncating $tp to offset .. below high watermark ..",
      F1 + "Truncating orders-0 to offset 90 below high watermark 95",
      {**TP, "new_leo": 90, "hw": 95, "reason": "below_high_watermark"}, level="WARN"),
    W("truncate_below_hw", "2.x", "2.4.1, 2.8.2", "core/server/ReplicaFetcherThread.scala:truncate",
      "Truncating $tp to offset .. below high watermark ..",
      F1 + "Truncating orders-0 to offset 91 below high watermark 96",
      {**TP, "new_leo": 91, "hw": 96}, level="WARN"),
    W("truncate_below_hw", "3.x", "3.5.2, 3.7.0", "core/server/ReplicaFetcherThread.scala:truncate",
      "Truncating $tp to offset .. below high watermark ..",
      F1 + "Truncating orders-0 to offset 92 below high watermark 97",
      {**TP, "new_leo": 92, "hw": 97}, level="WARN"),
    W("truncate_below_hw", "4.x", "4.1.0", "core/server/ReplicaFetcherThread.scala:truncate",
      "Truncating $tp to offset .. below high watermark ..",
      F1 + "Truncating orders-0 to offset 93 below high watermark 98",
      {**TP, "new_leo": 93, "hw": 98}, level="WARN"),
    # --- fetch_offset_reset -------------------------------------------------------------
    W("fetch_offset_reset", "0.10", "0.10.2.2",
      "core/server/AbstractFetcherThread.scala:updatePartitionsWithError",
      "Current offset %d for partition [%s,%d] out of range; reset offset to %d",
      F010 + "Current offset 120 for partition [orders,0] out of range; reset offset to 100",
      {**TP, "old": 120, "new": 100}, level="ERROR"),
    W("fetch_offset_reset", "0.11", "0.11.0.2",
      "core/server/AbstractFetcherThread.scala:updatePartitionsWithError",
      "Current offset %d for partition [%s,%d] out of range; reset offset to %d",
      F010 + "Current offset 121 for partition [orders,0] out of range; reset offset to 101",
      {**TP, "old": 121, "new": 101}, level="ERROR"),
    W("fetch_offset_reset", "1.x", "1.0.2",
      "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Current offset .. for partition $topicPartition out of range; reset offset to $newOffset",
      F1 + "Current offset 122 for partition orders-0 out of range; reset offset to 102",
      {**TP, "old": 122, "new": 102, "replica": 1}, level="ERROR"),
    W("fetch_offset_reset", "1.x", "1.1.1",
      "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Current offset .. for partition $topicPartition is out of range, which typically "
      "implies a leader change. Reset fetch offset to $newOffset",
      F1 + "Current offset 123 for partition orders-0 is out of range, which typically "
      "implies a leader change. Reset fetch offset to 103",
      {**TP, "old": 123, "new": 103}),
    W("fetch_offset_reset", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/server/AbstractFetcherThread.scala:handleOutOfRangeError",
      "Current offset .. for partition $topicPartition is out of range, which typically "
      "implies a leader change. Reset fetch offset to ..",
      F1 + "Current offset 124 for partition orders-0 is out of range, which typically "
      "implies a leader change. Reset fetch offset to 104",
      {**TP, "old": 124, "new": 104}),
    W("fetch_offset_reset", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherThread.scala:handleOutOfRangeError",
      "Current offset .. for partition $topicPartition is out of range, which typically "
      "implies a leader change. Reset fetch offset to ..",
      F1 + "Current offset 125 for partition orders-0 is out of range, which typically "
      "implies a leader change. Reset fetch offset to 105",
      {**TP, "old": 125, "new": 105}),
    W("fetch_offset_reset", "4.x", "4.1.0",
      "core/server/AbstractFetcherThread.scala:handleOutOfRangeError",
      "Current offset .. for partition $topicPartition is out of range, which typically "
      "implies a leader change. Reset fetch offset to ..",
      F1 + "Current offset 126 for partition orders-0 is out of range, which typically "
      "implies a leader change. Reset fetch offset to 106",
      {**TP, "old": 126, "new": 106}),
    # --- fetch_offset_truncate ----------------------------------------------------------
    W("fetch_offset_truncate", "0.10", "0.10.2.2",
      "core/server/ReplicaFetcherThread.scala:handleOffsetOutOfRange",
      "Replica %d for partition %s reset its fetch offset from %d to current leader %d's "
      "latest offset %d",
      F010 + "Replica 1 for partition orders-0 reset its fetch offset from 2391 to current "
      "leader 2's latest offset 2051",
      {**TP, "replica": 1, "old_leo": 2391, "new_leo": 2051, "to": "latest"}, level="WARN"),
    W("fetch_offset_truncate", "0.11", "0.11.0.2",
      "core/server/ReplicaFetcherThread.scala:handleOffsetOutOfRange",
      "Replica %d for partition %s reset its fetch offset from %d to current leader %d's "
      "start offset %d",
      F010 + "Replica 1 for partition orders-0 reset its fetch offset from 5 to current "
      "leader 2's start offset 40",
      {**TP, "old_leo": 5, "new_leo": 40, "to": "start"}, level="WARN"),
    W("fetch_offset_truncate", "1.x", "1.0.2, 1.1.1",
      "core/server/ReplicaFetcherThread.scala:handleOffsetOutOfRange",
      "Reset fetch offset for partition $topicPartition from .. to current leader's latest "
      "offset $leaderEndOffset",
      F1 + "Reset fetch offset for partition orders-0 from 2391 to current leader's latest "
      "offset 2051",
      {**TP, "replica": 1, "old_leo": 2391, "new_leo": 2051, "to": "latest"}, level="WARN"),
    W("fetch_offset_truncate", "2.x", "2.0.1 (ReplicaFetcherThread), 2.4.1, 2.8.2",
      "core/server/AbstractFetcherThread.scala:fetchOffsetAndTruncate",
      "Reset fetch offset for partition $topicPartition from $replicaEndOffset to current "
      "leader's start offset $leaderStartOffset",
      F1 + "Reset fetch offset for partition orders-0 from 5 to current leader's start "
      "offset 40",
      {**TP, "old_leo": 5, "new_leo": 40, "to": "start"}, level="WARN"),
    W("fetch_offset_truncate", "3.x", "3.5.2",
      "core/server/AbstractFetcherThread.scala:fetchOffsetAndTruncate",
      "Reset fetch offset for partition $topicPartition from $replicaEndOffset to current "
      "leader's latest|start offset ..",
      F1 + "Reset fetch offset for partition orders-0 from 50 to current leader's latest "
      "offset 45",
      {**TP, "old_leo": 50, "new_leo": 45, "to": "latest"}, level="WARN"),
    W("fetch_offset_truncate", "3.x", "3.7.0",
      "core/server/AbstractFetcherThread.scala:fetchOffsetAndTruncate",
      "Truncate fully and reset fetch offset for partition $topicPartition from "
      "$replicaEndOffset to the current leader's start offset $leaderStartOffset because ...",
      F1 + "Truncate fully and reset fetch offset for partition orders-0 from 5 to the "
      "current leader's start offset 40 because the local replica's end offset is smaller "
      "than the current leader's start offsets.",
      {**TP, "old_leo": 5, "new_leo": 40, "to": "start"}, level="WARN"),
    W("fetch_offset_truncate", "3.x", "3.7.0",
      "core/server/AbstractFetcherThread.scala:fetchOffsetAndTruncate",
      "Reset fetch offset for partition $topicPartition from $replicaEndOffset to the current "
      "local replica's end offset $offsetToFetch (no truncation: a fetch_offset_reset)",
      F1 + "Reset fetch offset for partition orders-0 from 30 to the current local "
      "replica's end offset 60",
      {"event": "fetch_offset_reset", **TP, "old": 30, "new": 60, "replica": 1}),
    W("fetch_offset_truncate", "4.x", "4.1.0",
      "core/server/AbstractFetcherThread.scala:fetchOffsetAndTruncate",
      "Reset fetch offset for partition $topicPartition from $replicaEndOffset to current "
      "leader's latest offset $leaderEndOffset",
      F1 + "Reset fetch offset for partition orders-0 from 70 to current leader's latest "
      "offset 65",
      {**TP, "old_leo": 70, "new_leo": 65, "to": "latest"}, level="WARN"),
    # --- state_change_online ------------------------------------------------------------
    W("state_change_online", "0.10", "0.10.2.2",
      "core/controller/PartitionStateMachine.scala:handleStateChange",
      "Controller %d epoch %d changed partition %s from %s to %s with leader %d (TRACE)",
      "Controller 1 epoch 3 changed partition [orders,0] from OfflinePartition to "
      "OnlinePartition with leader 2",
      {**TP, "leader": 2, "election": "OfflinePartition->OnlinePartition"}, level="TRACE",
      logger="state.change.logger"),
    W("state_change_online", "0.11", "0.11.0.2",
      "core/controller/PartitionStateMachine.scala:handleStateChange",
      "Controller %d epoch %d changed partition %s from %s to %s with leader %d (TRACE)",
      "Controller 1 epoch 4 changed partition [orders,0] from NewPartition to "
      "OnlinePartition with leader 1", {**TP, "leader": 1}, level="TRACE",
      logger="state.change.logger"),
    W("state_change_online", "1.x", "1.0.2",
      "core/controller/PartitionStateMachine.scala:handleStateChange",
      "Changed partition $topicAndPartition from .. to .. with leader $leader (TRACE)",
      "[Controller id=1 epoch=5] Changed partition [orders,0] from OfflinePartition to "
      "OnlinePartition with leader 3", {**TP, "leader": 3}, level="TRACE",
      logger="state.change.logger"),
    W("state_change_online", "1.x", "1.1.1",
      "core/controller/PartitionStateMachine.scala:doHandleStateChanges",
      "Changed partition $partition from .. to $targetState with state ..leaderAndIsr (TRACE)",
      "[Controller id=1 epoch=6] Changed partition orders-0 from OfflinePartition to "
      "OnlinePartition with state " + LAI_11,
      {**TP, "leader": 2, "leader_epoch": 5, "isr": [2, 3], "partition_epoch": 7},
      level="TRACE", logger="state.change.logger"),
    W("state_change_online", "2.x", "2.0.1, 2.4.1 (TRACE), 2.8.2 (INFO)",
      "core/controller/PartitionStateMachine.scala:doHandleStateChanges",
      "Changed partition $partition from .. to $targetState with state $leaderAndIsr",
      "[Controller id=1 epoch=7] Changed partition orders-0 from OnlinePartition to "
      "OnlinePartition with state " + LAI_11,
      {**TP, "leader": 2, "isr": [2, 3], "election": "OnlinePartition->OnlinePartition"},
      logger="state.change.logger"),
    W("state_change_online", "3.x", "3.5.2, 3.7.0",
      "core/controller/PartitionStateMachine.scala:doHandleStateChanges",
      "Changed partition $partition from .. to $targetState with state $leaderAndIsr",
      "[Controller id=1 epoch=8] Changed partition orders-0 from OfflinePartition to "
      "OnlinePartition with state " + LAI_37,
      {**TP, "leader": 2, "leader_epoch": 5, "isr": [2, 3], "partition_epoch": 7},
      logger="state.change.logger"),
    # --- broker_unfenced ----------------------------------------------------------------
    W("broker_unfenced", "2.x", "2.8.2",
      "metadata/.../controller/ClusterControlManager.java:replay(UnfenceBrokerRecord)",
      "Unfenced broker: {}", QC + "Unfenced broker: UnfenceBrokerRecord(id=2, epoch=42)",
      {"broker": 2}),
    W("broker_unfenced", "2.x", "2.8.2",
      "metadata/.../controller/BrokerHeartbeatManager.java:calculateNextBrokerState",
      "The request from broker {} to unfence has been granted because it has caught up with "
      "the last committed metadata offset {}.",
      QC + "The request from broker 2 to unfence has been granted because it has caught up "
      "with the last committed metadata offset 500.", {"broker": 2}),
    W("broker_unfenced", "3.x", "3.5.2, 3.7.0",
      "metadata/.../controller/BrokerHeartbeatManager.java:calculateNextBrokerState",
      "The request from broker {} to unfence has been granted because it has caught up with "
      "the offset of its register broker record {}.",
      QC + "The request from broker 3 to unfence has been granted because it has caught up "
      "with the offset of its register broker record 600.", {"broker": 3}),
    W("broker_unfenced", "3.x", "3.7.0",
      "metadata/.../controller/ClusterControlManager.java:replayRegistrationChange",
      "Replayed {} modifying the registration for broker {}: {}",
      QC + "Replayed UnfenceBrokerRecord modifying the registration for broker 3: "
      "UnfenceBrokerRecord(id=3, epoch=42)", {"broker": 3}),
    W("broker_unfenced", "4.x", "4.1.0",
      "metadata/.../controller/ClusterControlManager.java:replayRegistrationChange",
      "Replayed {} modifying the registration for broker {}: {} (fenced=-1: UNFENCE)",
      QC + "Replayed BrokerRegistrationChangeRecord modifying the registration for broker 2: "
      "BrokerRegistrationChangeRecord(brokerId=2, brokerEpoch=42, fenced=-1, "
      "inControlledShutdown=0, logDirs=[])", {"broker": 2}),
    W("broker_unfenced", "4.x", "4.1.0",
      "metadata/.../controller/BrokerHeartbeatManager.java:calculateNextBrokerState",
      "The request from broker {} to unfence has been granted because it has caught up with "
      "the offset of its register broker record {}.",
      QC + "The request from broker 2 to unfence has been granted because it has caught up "
      "with the offset of its register broker record 9.", {"broker": 2}),
    # --- truncate_by_epoch --------------------------------------------------------------
    W("truncate_by_epoch", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherThread.scala:truncateToEpochEndOffsets",
      "Truncating partition $tp with $offsetTruncationState due to leader epoch and offset "
      "$leaderEpochOffset",
      F1 + "Truncating partition orders-0 with TruncationState(offset=80, completed=true) due "
      "to leader epoch and offset EpochEndOffset(errorCode=0, partition=0, leaderEpoch=4, "
      "endOffset=80)",
      {**TP, "new_leo": 80, "completed": True, "reason": "leader_epoch"}),
    W("truncate_by_epoch", "4.x", "4.1.0",
      "core/server/AbstractFetcherThread.scala:truncateToEpochEndOffsets",
      "Truncating partition $tp with $offsetTruncationState due to leader epoch and offset "
      "$leaderEpochOffset",
      F1 + "Truncating partition orders-0 with TruncationState(offset=81, completed=false) due "
      "to leader epoch and offset EpochEndOffset(errorCode=0, partition=0, leaderEpoch=5, "
      "endOffset=90)",
      {**TP, "new_leo": 81, "completed": False}),
    # --- log_loaded ---------------------------------------------------------------------
    W("log_loaded", "0.10", "0.10.2.2", "core/log/Log.scala:loadSegments",
      "Completed load of log %s with %d log segments and log end offset %d in %d ms",
      "Completed load of log orders-0 with 2 log segments and log end offset 100 in 13 ms",
      {**TP, "segments": 2, "leo": 100}),
    W("log_loaded", "0.11", "0.11.0.2", "core/log/Log.scala:loadSegments",
      "Completed load of log %s with %d log segments, log start offset %d and log end offset "
      "%d in %d ms",
      "Completed load of log orders-0 with 2 log segments, log start offset 10 and log end "
      "offset 100 in 13 ms",
      {**TP, "segments": 2, "leo": 100, "log_start_offset": 10}),
    W("log_loaded", "1.x", "1.0.0, 1.0.1", "core/log/Log.scala:loadSegments",
      "Completed load of log %s with %d log segments, log start offset %d and log end offset "
      "%d in %d ms (as 0.11; real excerpt 12-vpg-disturb-travis-broker-startup-10.log)",
      "Completed load of log __consumer_offsets-12 with 1 log segments, log start offset 0 and "
      "log end offset 0 in 2 ms",
      {"topic": "__consumer_offsets", "partition": 12, "segments": 1, "leo": 0,
       "log_start_offset": 0}),
    W("log_loaded", "1.x", "1.0.2, 1.1.1", "core/log/Log.scala:loadSegments",
      "Completed load of log with .. segments, log start offset .. and log end offset .. in "
      ".. ms",
      LOG1 + "Completed load of log with 3 segments, log start offset 10 and log end offset "
      "100 in 5 ms",
      {**TP, "segments": 3, "leo": 100, "log_start_offset": 10}),
    W("log_loaded", "2.x", "2.0.1, 2.4.1", "core/log/Log.scala:loadSegments",
      "Completed load of log with .. segments, log start offset .. and log end offset .. in "
      ".. ms",
      LOG1 + "Completed load of log with 1 segments, log start offset 0 and log end offset 0 "
      "in 2 ms", {**TP, "segments": 1, "leo": 0, "log_start_offset": 0}),
    W("log_loaded", "2.x", "2.8.2", "core/log/LogManager.scala:loadLogs",
      "Completed load of $log with .. segments in ..ms ($currentNumLoaded/.. loaded in ..)",
      "Completed load of " + LOG_TS + " with 2 segments in 31ms (1/4 loaded in /var/kafka)",
      {**TP, "segments": 2, "leo": 100, "log_start_offset": 10, "hw": 90}),
    W("log_loaded", "3.x", "3.5.2", "core/log/LogManager.scala:loadLog",
      "Completed load of $loadedLog with .. segments in ..ms (../.. completed in ..)",
      "Completed load of " + LOG_TS.replace("Log(", "UnifiedLog(") + " with 2 segments in "
      "31ms (1/4 completed in /var/kafka)",
      {**TP, "segments": 2, "leo": 100, "hw": 90}),
    W("log_loaded", "3.x", "3.7.0", "core/log/LogManager.scala:loadLog",
      "Completed load of $loadedLog with .. segments, local-log-start-offset .. and "
      "log-end-offset .. in ..ms (../.. completed in ..)",
      "Completed load of " + ULOG_TS + " with 2 segments, local-log-start-offset 10 and "
      "log-end-offset 100 in 31ms (1/4 completed in /var/kafka)",
      {**TP, "segments": 2, "leo": 100, "log_start_offset": 10, "hw": 90}),
    W("log_loaded", "4.x", "4.1.0", "core/log/LogManager.scala:loadLog",
      "Completed load of $loadedLog with .. segments, local-log-start-offset .. and "
      "log-end-offset .. in ..ms (../.. completed in ..)",
      "Completed load of " + ULOG_TS + " with 3 segments, local-log-start-offset 10 and "
      "log-end-offset 100 in 31ms (2/4 completed in /var/kafka)",
      {**TP, "segments": 3, "leo": 100}),
    # --- partition_failed ---------------------------------------------------------------
    W("partition_failed", "2.x", "2.4.1, 2.8.2",
      "core/server/AbstractFetcherThread.scala:markPartitionFailed",
      "Partition $topicPartition marked as failed",
      F1 + "Partition orders-0 marked as failed", {**TP, "replica": 1}, level="WARN"),
    W("partition_failed", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherThread.scala:markPartitionFailed",
      "Partition $topicPartition marked as failed",
      F1 + "Partition orders-0 marked as failed", {**TP}, level="WARN"),
    W("partition_failed", "4.x", "4.1.0",
      "core/server/AbstractFetcherThread.scala:markPartitionFailed",
      "Partition $topicPartition marked as failed",
      F1 + "Partition orders-0 marked as failed", {**TP}, level="WARN"),
    # --- coordinator_loaded -------------------------------------------------------------
    W("coordinator_loaded", "0.10", "0.10.2.2",
      "core/coordinator/GroupMetadataManager.scala:loadGroupsForPartition",
      "Finished loading offsets from %s in %d milliseconds.",
      "[Group Metadata Manager on Broker 1]: Finished loading offsets from __consumer_offsets-"
      "7 in 25 milliseconds.",
      {"topic": "__consumer_offsets", "partition": 7, "load_ms": 25}),
    W("coordinator_loaded", "0.11", "0.11.0.2",
      "core/coordinator/group/GroupMetadataManager.scala:doLoadGroupsAndOffsets",
      "Finished loading offsets and group metadata from $topicPartition in .. milliseconds.",
      "[Group Metadata Manager on Broker 1]: Finished loading offsets and group metadata from "
      "__consumer_offsets-7 in 26 milliseconds.",
      {"topic": "__consumer_offsets", "partition": 7, "load_ms": 26}),
    W("coordinator_loaded", "1.x", "1.0.2, 1.1.1",
      "core/coordinator/group/GroupMetadataManager.scala:doLoadGroupsAndOffsets",
      "Finished loading offsets and group metadata from $topicPartition in .. milliseconds.",
      "[GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from "
      "__consumer_offsets-7 in 27 milliseconds.",
      {"topic": "__consumer_offsets", "partition": 7, "load_ms": 27, "replica": 1}),
    W("coordinator_loaded", "2.x", "2.0.1, 2.4.1",
      "core/coordinator/group/GroupMetadataManager.scala:loadGroupsAndOffsets",
      "Finished loading offsets and group metadata from $topicPartition in .. milliseconds.",
      "[GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from "
      "__consumer_offsets-7 in 28 milliseconds.", {"load_ms": 28}),
    W("coordinator_loaded", "2.x", "2.8.2",
      "core/coordinator/group/GroupMetadataManager.scala:loadGroupsAndOffsets",
      "Finished loading offsets and group metadata from $topicPartition in .. milliseconds for "
      "epoch $coordinatorEpoch, of which .. milliseconds was spent in the scheduler.",
      "[GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from "
      "__consumer_offsets-7 in 29 milliseconds for epoch 3, of which 1 milliseconds was spent "
      "in the scheduler.", {"load_ms": 29, "leader_epoch": 3}),
    W("coordinator_loaded", "3.x", "3.5.2, 3.7.0",
      "core/coordinator/group/GroupMetadataManager.scala:loadGroupsAndOffsets",
      "Finished loading offsets and group metadata from $topicPartition in .. milliseconds for "
      "epoch $coordinatorEpoch, of which .. milliseconds was spent in the scheduler.",
      "[GroupMetadataManager brokerId=1] Finished loading offsets and group metadata from "
      "__consumer_offsets-7 in 30 milliseconds for epoch 4, of which 0 milliseconds was spent "
      "in the scheduler.", {"load_ms": 30, "leader_epoch": 4}),
    W("coordinator_loaded", "3.x", "3.7.0 (group.coordinator.new.enable)",
      "group-coordinator/.../runtime/CoordinatorRuntime.java:scheduleLoadOperation",
      "Finished loading of metadata from {} with epoch {} and LoadSummary={}.",
      "[GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-7 with "
      "epoch 5 and LoadSummary=LoadSummary(startTimeMs=1000, endTimeMs=1031, numRecords=12, "
      "numBytes=2048).",
      {"topic": "__consumer_offsets", "partition": 7, "load_ms": 31, "leader_epoch": 5,
       "replica": 1}),
    W("coordinator_loaded", "4.x", "4.1.0",
      "coordinator-common/.../runtime/CoordinatorRuntime.java:scheduleLoadOperation",
      "Finished loading of metadata from {} with epoch {} in {}ms where {}ms was spent in the "
      "scheduler. Loaded {} records which total to {} bytes.",
      "[GroupCoordinator id=1] Finished loading of metadata from __consumer_offsets-7 with "
      "epoch 6 in 32ms where 2ms was spent in the scheduler. Loaded 12 records which total to "
      "2048 bytes.",
      {"topic": "__consumer_offsets", "partition": 7, "load_ms": 32, "leader_epoch": 6,
       "replica": 1}),
    # --- controller_elected -------------------------------------------------------------
    W("controller_elected", "0.10", "0.10.2.2", "core/server/ZookeeperLeaderElector.scala:elect",
      "brokerId + \" successfully elected as leader\"", "1 successfully elected as leader",
      {"broker": 1}),
    W("controller_elected", "0.11", "0.11.0.2", "core/controller/KafkaController.scala:elect",
      "config.brokerId + \" successfully elected as the controller\"",
      C010 + "1 successfully elected as the controller", {"broker": 1}),
    W("controller_elected", "1.x", "1.0.2, 1.1.1", "core/controller/KafkaController.scala:elect",
      "${config.brokerId} successfully elected as the controller",
      C1 + "1 successfully elected as the controller", {"broker": 1}),
    W("controller_elected", "2.x", "2.0.1", "core/controller/KafkaController.scala:elect",
      "${config.brokerId} successfully elected as the controller",
      C1 + "2 successfully elected as the controller", {"broker": 2}),
    W("controller_elected", "2.x", "2.4.1, 2.8.2", "core/controller/KafkaController.scala:elect",
      "${config.brokerId} successfully elected as the controller. Epoch incremented to .. and "
      "epoch zk version is now ..",
      C1 + "2 successfully elected as the controller. Epoch incremented to 9 and epoch zk "
      "version is now 8", {"broker": 2, "controller_epoch": 9}),
    W("controller_elected", "3.x", "3.5.2, 3.7.0", "core/controller/KafkaController.scala:elect",
      "${config.brokerId} successfully elected as the controller. Epoch incremented to .. and "
      "epoch zk version is now ..",
      C1 + "3 successfully elected as the controller. Epoch incremented to 10 and epoch zk "
      "version is now 9", {"broker": 3, "controller_epoch": 10}),
    # --- controlled_shutdown ------------------------------------------------------------
    W("controlled_shutdown", "0.10", "0.10.2.2",
      "core/controller/KafkaController.scala:shutdownBroker",
      "\"Shutting down broker \" + id", C010 + "Shutting down broker 2", {"broker": 2}),
    W("controlled_shutdown", "0.11", "0.11.0.2",
      "core/controller/KafkaController.scala:doControlledShutdown",
      "\"Shutting down broker \" + id", C010 + "Shutting down broker 3", {"broker": 3}),
    W("controlled_shutdown", "1.x", "1.0.2 ('...' + id), 1.1.1",
      "core/controller/KafkaController.scala:doControlledShutdown",
      "Shutting down broker $id", C1 + "Shutting down broker 2", {"broker": 2}),
    W("controlled_shutdown", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/controller/KafkaController.scala:doControlledShutdown",
      "Shutting down broker $id", C1 + "Shutting down broker 1", {"broker": 1}),
    W("controlled_shutdown", "3.x", "3.5.2, 3.7.0",
      "core/controller/KafkaController.scala:doControlledShutdown",
      "Shutting down broker $id", C1 + "Shutting down broker 3", {"broker": 3}),
    # --- log_dir_recovery ---------------------------------------------------------------
    W("log_dir_recovery", "0.10", "0.10.2.2", "core/log/LogManager.scala:loadLogs",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: ... "
      "(DEBUG)",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: /var/kafka",
      {"dir": "/var/kafka", "clean_shutdown": True}, level="DEBUG"),
    W("log_dir_recovery", "0.11", "0.11.0.2", "core/log/LogManager.scala:loadLogs",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: ... "
      "(DEBUG)",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: /data/k",
      {"dir": "/data/k", "clean_shutdown": True}, level="DEBUG"),
    W("log_dir_recovery", "1.x", "1.0.2, 1.1.1", "core/log/LogManager.scala:loadLogs",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: "
      "${dir.getAbsolutePath} (DEBUG)",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: /data/k",
      {"dir": "/data/k", "clean_shutdown": True}, level="DEBUG"),
    W("log_dir_recovery", "2.x", "2.0.1, 2.4.1", "core/log/LogManager.scala:loadLogs",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: "
      "${dir.getAbsolutePath} (DEBUG)",
      "Found clean shutdown file. Skipping recovery for all logs in data directory: /data/k",
      {"dir": "/data/k", "clean_shutdown": True}, level="DEBUG"),
    W("log_dir_recovery", "2.x", "2.8.2", "core/log/LogManager.scala:loadLogs",
      "Attempting recovery for all logs in $logDirAbsolutePath since no clean shutdown file "
      "was found",
      "Attempting recovery for all logs in /data/k since no clean shutdown file was found",
      {"dir": "/data/k", "clean_shutdown": False}),
    W("log_dir_recovery", "3.x", "3.5.2, 3.7.0", "core/log/LogManager.scala:loadLogs",
      "Recovering ${logsToLoad.length} logs from $logDirAbsolutePath since no clean shutdown "
      "file was found",
      "Recovering 12 logs from /data/k since no clean shutdown file was found",
      {"dir": "/data/k", "clean_shutdown": False, "logs": 12}),
    W("log_dir_recovery", "4.x", "4.1.0", "core/log/LogManager.scala:loadLogs",
      "Skipping recovery of ${logsToLoad.length} logs from $logDirAbsolutePath since clean "
      "shutdown file was found",
      "Skipping recovery of 12 logs from /data/k since clean shutdown file was found",
      {"dir": "/data/k", "clean_shutdown": True, "logs": 12}),
    # --- invalid_messages ---------------------------------------------------------------
    W("invalid_messages", "0.10", "0.10.2.2", "core/log/LogSegment.scala:recover",
      "Found invalid messages in log segment %s at byte offset %d: %s.",
      "Found invalid messages in log segment /var/kafka/orders-0/00000000000000000000.log at "
      "byte offset 4096: Record is corrupt (stored crc = 1, computed crc = 2).",
      {**TP, "byte_offset": 4096}, level="WARN"),
    W("invalid_messages", "0.11", "0.11.0.2", "core/log/LogSegment.scala:recover",
      "Found invalid messages in log segment %s at byte offset %d: %s.",
      "Found invalid messages in log segment /var/kafka/orders-0/00000000000000000000.log at "
      "byte offset 12: Record size is less than the minimum record overhead (14).",
      {**TP, "byte_offset": 12}, level="WARN"),
    W("invalid_messages", "1.x", "1.0.2, 1.1.1", "core/log/LogSegment.scala:recover",
      "Found invalid messages in log segment %s at byte offset %d: %s.",
      LOG1 + "Found invalid messages in log segment /var/kafka/orders-0/00000000000000000000"
      ".log at byte offset 13: Record is corrupt.", {**TP, "byte_offset": 13}, level="WARN"),
    W("invalid_messages", "2.x", "2.4.1, 2.8.2", "core/log/LogSegment.scala:recover",
      "Found invalid messages in log segment %s at byte offset %d: %s. %s",
      "Found invalid messages in log segment /var/kafka/orders-0/00000000000000000100.log at "
      "byte offset 14: Record is corrupt. null", {**TP, "byte_offset": 14}, level="WARN"),
    W("invalid_messages", "3.x", "3.7.0", "storage/.../log/LogSegment.java:recover",
      "Found invalid messages in log segment {} at byte offset {}.",
      "Found invalid messages in log segment /var/kafka/orders-0/00000000000000000100.log at "
      "byte offset 15.", {**TP, "byte_offset": 15}, level="WARN"),
    W("invalid_messages", "4.x", "4.1.0", "storage/.../log/LogSegment.java:recover",
      "Found invalid messages in log segment {} at byte offset {}.",
      "Found invalid messages in log segment /var/kafka/orders-0/00000000000000000100.log at "
      "byte offset 16.", {**TP, "byte_offset": 16}, level="WARN"),
    # --- found_deletable_segments -------------------------------------------------------
    W("found_deletable_segments", "0.11", "0.11.0.2", "core/log/Log.scala:deleteOldSegments",
      "Found deletable segments with base offsets [..] due to $reason",
      "Found deletable segments with base offsets [0,100] due to retention time 604800000ms "
      "breach", {"base_offset": 0}, events=2),
    W("found_deletable_segments", "1.x", "1.0.2, 1.1.1", "core/log/Log.scala:deleteOldSegments",
      "Found deletable segments with base offsets [..] due to $reason",
      LOG1 + "Found deletable segments with base offsets [200] due to retention size in bytes "
      "1073741824 breach", {**TP, "base_offset": 200}, events=1),
    W("found_deletable_segments", "2.x", "2.0.1, 2.4.1", "core/log/Log.scala:deleteOldSegments",
      "Found deletable segments with base offsets [..] due to $reason",
      LOG1 + "Found deletable segments with base offsets [300,400] due to log start offset 450 "
      "breach", {**TP, "base_offset": 300, "reason": "log start offset 450 breach"}, events=2),
    # --- offline_leader_selected_010 ----------------------------------------------------
    W("offline_leader_selected_010", "0.10", "0.10.2.2",
      "core/controller/PartitionLeaderSelector.scala:OfflinePartitionLeaderSelector.selectLeader",
      "No broker in ISR is alive for %s. Elect leader %d from live brokers %s. There's "
      "potential data loss. (WARN)",
      "[OfflinePartitionLeaderSelector]: No broker in ISR is alive for [orders,0]. Elect "
      "leader 3 from live brokers 3. There's potential data loss.",
      {**TP, "leader": 3, "election": "unclean", "live": [3]}, level="WARN"),
    W("offline_leader_selected_010", "0.11", "0.11.0.2",
      "core/controller/PartitionLeaderSelector.scala:OfflinePartitionLeaderSelector.selectLeader",
      "Selected new leader and ISR $newLeaderAndIsr for offline partition $topicAndPartition",
      "[OfflinePartitionLeaderSelector]: Selected new leader and ISR {\"leader\":2,"
      "\"leader_epoch\":6,\"isr\":[2]} for offline partition [orders,0]",
      {**TP, "leader": 2, "leader_epoch": 6, "isr": [2], "election": "offline"}),
    W("offline_leader_selected_010", "1.x", "1.0.2",
      "core/controller/PartitionLeaderSelector.scala:OfflinePartitionLeaderSelector.selectLeader",
      "No broker in ISR is alive for $topicAndPartition. Elect leader $newLeader from live "
      "brokers ... There's potential data loss. (WARN)",
      "[OfflinePartitionLeaderSelector]: No broker in ISR is alive for [orders,0]. Elect "
      "leader 2 from live brokers 2,3. There's potential data loss.",
      {**TP, "leader": 2, "live": [2, 3]}, level="WARN"),
    # --- fetcher_added ------------------------------------------------------------------
    W("fetcher_added", "0.10", "0.10.2.2",
      "core/server/AbstractFetcherManager.scala:addFetcherForPartitions",
      "Added fetcher for partitions %s (each '[tp, initOffset n to broker BrokerEndPoint(..)] ')",
      "[ReplicaFetcherManager on broker 1] Added fetcher for partitions List([orders-0, "
      "initOffset 5 to broker BrokerEndPoint(2,kafka-2,9092)] , [orders-1, initOffset 0 to "
      "broker BrokerEndPoint(2,kafka-2,9092)] )",
      {"replica": 1, "change": "add", "topic_partitions": ["orders-0", "orders-1"],
       "leader": 2}),
    W("fetcher_added", "0.11", "0.11.0.2",
      "core/server/AbstractFetcherManager.scala:addFetcherForPartitions",
      "Added fetcher for partitions %s",
      "[ReplicaFetcherManager on broker 1] Added fetcher for partitions List([orders-0, "
      "initOffset 5 to broker BrokerEndPoint(2,kafka-2,9092)] )",
      {"topic_partitions": ["orders-0"], "leader": 2}),
    W("fetcher_added", "1.x", "1.0.2, 1.1.1",
      "core/server/AbstractFetcherManager.scala:addFetcherForPartitions",
      "Added fetcher for partitions %s",
      "[ReplicaFetcherManager on broker 1] Added fetcher for partitions List([orders-0, "
      "initOffset 5 to broker BrokerEndPoint(2,kafka-2,9092)] , [audit-3, initOffset 7 to "
      "broker BrokerEndPoint(3,kafka-3,9092)] )",
      {"topic_partitions": ["audit-3", "orders-0"]}),
    W("fetcher_added", "2.x", "2.0.1",
      "core/server/AbstractFetcherManager.scala:addFetcherForPartitions",
      "Added fetcher for partitions %s",
      "[ReplicaFetcherManager on broker 1] Added fetcher for partitions List([orders-0, "
      "initOffset 5 to broker BrokerEndPoint(2,kafka-2,9092)] )",
      {"topic_partitions": ["orders-0"], "leader": 2}),
    W("fetcher_added", "2.x", "2.4.1",
      "core/server/AbstractFetcherManager.scala:addFetcherForPartitions",
      "Added fetcher to broker ${brokerAndFetcherId.broker} for partitions "
      "$initialOffsetAndEpochs (a BrokerEndPoint)",
      "[ReplicaFetcherManager on broker 1] Added fetcher to broker BrokerEndPoint(id=2, "
      "host=kafka-2:9092) for partitions Map(orders-0 -> (offset=5, leaderEpoch=3))",
      {"topic_partitions": ["orders-0"], "leader": 2}),
    W("fetcher_added", "2.x", "2.8.2",
      "core/server/AbstractFetcherManager.scala:addPartitionsToFetcherThread",
      "Added fetcher to broker ${fetcherThread.sourceBroker.id} for partitions "
      "$initialOffsetAndEpochs",
      "[ReplicaFetcherManager on broker 1] Added fetcher to broker 2 for partitions "
      "Map(orders-0 -> InitialFetchState(BrokerEndPoint(id=2, host=kafka-2:9092),3,5))",
      {"topic_partitions": ["orders-0"], "leader": 2}),
    W("fetcher_added", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherManager.scala:addPartitionsToFetcherThread",
      "Added fetcher to broker ${fetcherThread.leader.brokerEndPoint().id} for partitions "
      "$initialOffsetAndEpochs",
      "[ReplicaFetcherManager on broker 1] Added fetcher to broker 2 for partitions "
      "HashMap(orders-0 -> InitialFetchState(Some(Jb1n0ZBuQAmkZqQqLJ0CKw),BrokerEndPoint(id=2, "
      "host=kafka-2:9092),3,5), orders-1 -> InitialFetchState(Some(Jb1n0ZBuQAmkZqQqLJ0CKw),"
      "BrokerEndPoint(id=2, host=kafka-2:9092),3,0))",
      {"topic_partitions": ["orders-0", "orders-1"], "leader": 2}),
    W("fetcher_added", "4.x", "4.1.0",
      "core/server/AbstractFetcherManager.scala:addPartitionsToFetcherThread",
      "Added fetcher to broker ${fetcherThread.leader.brokerEndPoint().id} for partitions "
      "$initialOffsetAndEpochs",
      "[ReplicaFetcherManager on broker 1] Added fetcher to broker 3 for partitions "
      "HashMap(orders-0 -> InitialFetchState(Some(Jb1n0ZBuQAmkZqQqLJ0CKw),BrokerEndPoint(id=3, "
      "host=kafka-3:9092),3,5))",
      {"topic_partitions": ["orders-0"], "leader": 3}),
    # --- fetcher_removed ----------------------------------------------------------------
    W("fetcher_removed", "0.10", "0.10.2.2",
      "core/server/AbstractFetcherManager.scala:removeFetcherForPartitions",
      "Removed fetcher for partitions %s",
      "[ReplicaFetcherManager on broker 1] Removed fetcher for partitions orders-0,orders-1",
      {"change": "remove", "topic_partitions": ["orders-0", "orders-1"]}),
    W("fetcher_removed", "0.11", "0.11.0.2",
      "core/server/AbstractFetcherManager.scala:removeFetcherForPartitions",
      "Removed fetcher for partitions %s",
      "[ReplicaFetcherManager on broker 1] Removed fetcher for partitions orders-0",
      {"topic_partitions": ["orders-0"]}),
    W("fetcher_removed", "1.x", "1.0.2, 1.1.1",
      "core/server/AbstractFetcherManager.scala:removeFetcherForPartitions",
      "Removed fetcher for partitions %s",
      "[ReplicaFetcherManager on broker 1] Removed fetcher for partitions orders-0",
      {"topic_partitions": ["orders-0"], "replica": 1}),
    W("fetcher_removed", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/server/AbstractFetcherManager.scala:removeFetcherForPartitions",
      "Removed fetcher for partitions $partitions",
      "[ReplicaFetcherManager on broker 1] Removed fetcher for partitions Set(orders-0, "
      "orders-2)", {"topic_partitions": ["orders-0", "orders-2"]}),
    W("fetcher_removed", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherManager.scala:removeFetcherForPartitions",
      "Removed fetcher for partitions $partitions",
      "[ReplicaFetcherManager on broker 1] Removed fetcher for partitions HashSet(orders-0)",
      {"topic_partitions": ["orders-0"]}),
    W("fetcher_removed", "4.x", "4.1.0",
      "core/server/AbstractFetcherManager.scala:removeFetcherForPartitions",
      "Removed fetcher for partitions $partitions",
      "[ReplicaFetcherManager on broker 1] Removed fetcher for partitions Set(orders-1)",
      {"topic_partitions": ["orders-1"]}),
    # --- fetch_error --------------------------------------------------------------------
    W("fetch_error", "0.10", "0.10.2.2",
      "core/server/AbstractFetcherThread.scala:updatePartitionsWithError",
      "Error for partition [%s,%d] to broker %d:%s",
      F010 + "Error for partition [orders,0] to broker 2:org.apache.kafka.common.errors."
      "NotLeaderForPartitionException", {**TP, "error": "NotLeaderForPartitionException"},
      level="ERROR"),
    W("fetch_error", "0.11", "0.11.0.2",
      "core/server/AbstractFetcherThread.scala:updatePartitionsWithError",
      "Error for partition [%s,%d] to broker %d:%s",
      F010 + "Error for partition [orders,0] to broker 2:org.apache.kafka.common.errors."
      "UnknownTopicOrPartitionException", {**TP, "error": "UnknownTopicOrPartitionException"},
      level="ERROR"),
    W("fetch_error", "1.x", "1.0.2", "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Error for partition $topicPartition to broker ..:..",
      F1 + "Error for partition orders-0 to broker 2:org.apache.kafka.common.errors."
      "NotLeaderForPartitionException: This server is not the leader for that "
      "topic-partition.", {**TP, "error": "NotLeaderForPartitionException", "replica": 1},
      level="ERROR"),
    W("fetch_error", "1.x", "1.1.1", "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Error for partition $topicPartition at offset .. (the exception follows)",
      F1 + "Error for partition orders-0 at offset 42", {**TP, "offset": 42}, level="ERROR"),
    W("fetch_error", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Error for partition $topicPartition at offset .. (the exception follows)",
      F1 + "Error for partition orders-0 at offset 43", {**TP, "offset": 43}, level="ERROR"),
    W("fetch_error", "3.x", "3.5.2, 3.7.0",
      "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Error for partition $topicPartition at offset .. (the exception follows)",
      F1 + "Error for partition orders-0 at offset 44", {**TP, "offset": 44}, level="ERROR"),
    W("fetch_error", "4.x", "4.1.0", "core/server/AbstractFetcherThread.scala:processFetchRequest",
      "Error for partition $topicPartition at offset .. (the exception follows)",
      F1 + "Error for partition orders-0 at offset 45", {**TP, "offset": 45}, level="ERROR"),
    # --- alter_partition_rejected -------------------------------------------------------
    W("alter_partition_rejected", "3.x", "3.5.2, 3.7.0",
      "metadata/.../controller/ReplicationControlManager.java:validateAlterPartitionData",
      "Rejecting AlterPartition request from node {} for {}-{} because the current leader "
      "epoch is {}, not {}. (DEBUG; INFO for the other reasons)",
      QC + "Rejecting AlterPartition request from node 1 for orders-0 because the current "
      "leader epoch is 6, not 5.",
      {**TP, "replica": 1, "error": "REJECTED"}, level="DEBUG"),
    W("alter_partition_rejected", "4.x", "4.1.0",
      "metadata/.../controller/ReplicationControlManager.java:validateAlterPartitionData",
      "Rejecting AlterPartition request from node {} for {}-{} because it specified "
      "ineligible replicas {} in the new ISR {}.",
      QC + "Rejecting AlterPartition request from node 1 for orders-0 because it specified "
      "ineligible replicas [2 (fenced)] in the new ISR [BrokerState(brokerId=1, brokerEpoch="
      "5), BrokerState(brokerId=2, brokerEpoch=6)].",
      {**TP, "replica": 1, "error": "REJECTED"}),
    # --- alter_partition_failed ---------------------------------------------------------
    W("alter_partition_failed", "2.x", "2.8.2",
      "core/cluster/Partition.scala:handleAlterIsrResponse",
      "Failed to update ISR to $proposedIsrState due to unexpected $error. Retrying. (WARN)",
      P1 + "Failed to update ISR to PendingExpandIsr(isr=Set(1), newInSyncReplicaId=2) due "
      "to unexpected UNKNOWN_SERVER_ERROR. Retrying.",
      {**TP, "error": "UNKNOWN_SERVER_ERROR", "replica": 1}, level="WARN"),
    W("alter_partition_failed", "3.x", "3.5.2, 3.7.0",
      "core/cluster/Partition.scala:handleAlterPartitionError",
      "Failed to alter partition to $proposedIsrState since the controller rejected the "
      "request with $error. Partition state has been reset to the latest committed state "
      "$partitionState.",
      P1 + "Failed to alter partition to PendingShrinkIsr(outOfSyncReplicaIds=Set(2), "
      "sentLeaderAndIsr=LeaderAndIsr(leader=1, leaderEpoch=5, isrWithBrokerEpoch=List(), "
      "leaderRecoveryState=RECOVERED, partitionEpoch=7), lastCommittedState=...) since the "
      "controller rejected the request with INELIGIBLE_REPLICA. Partition state has been "
      "reset to the latest committed state CommittedPartitionState(isr=Set(1, 2), "
      "leaderRecoveryState=RECOVERED).",
      {**TP, "error": "INELIGIBLE_REPLICA"}),
    W("alter_partition_failed", "4.x", "4.1.0",
      "core/cluster/Partition.scala:handleAlterPartitionError",
      "Failed to update ISR to $proposedIsrState due to unexpected $error. Retrying. (WARN)",
      P1 + "Failed to update ISR to PendingExpandIsr(newInSyncReplicaId=2, ...) due to "
      "unexpected REQUEST_TIMED_OUT. Retrying.",
      {**TP, "error": "REQUEST_TIMED_OUT"}, level="WARN"),
    # --- preferred_election_done --------------------------------------------------------
    W("preferred_election_done", "0.10", "0.10.2.2",
      "core/controller/KafkaController.scala:removePartitionsFromPreferredReplicaElection",
      "Partition %s completed preferred replica leader election. New leader is %d",
      C010 + "Partition [orders,0] completed preferred replica leader election. New leader "
      "is 1", {**TP, "leader": 1, "election": "preferred"}),
    W("preferred_election_done", "0.11", "0.11.0.2",
      "core/controller/KafkaController.scala:removePartitionsFromPreferredReplicaElection",
      "Partition %s failed to complete preferred replica leader election. Leader is %d (WARN)",
      C010 + "Partition [orders,0] failed to complete preferred replica leader election. "
      "Leader is 2", {**TP, "leader": 2, "election": "preferred_failed"}, level="WARN"),
    W("preferred_election_done", "1.x", "1.0.2 ('%s'.format), 1.1.1",
      "core/controller/KafkaController.scala:removePartitionsFromPreferredReplicaElection",
      "Partition $partition failed to complete preferred replica leader election. Leader is "
      "$currentLeader (WARN)",
      C1 + "Partition orders-0 failed to complete preferred replica leader election. Leader "
      "is 2", {**TP, "leader": 2, "election": "preferred_failed"}, level="WARN"),
    W("preferred_election_done", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/controller/KafkaController.scala:removePartitionsFromPreferredReplicaElection",
      "Partition $partition failed to complete preferred replica leader election to "
      "$preferredReplica. Leader is still $currentLeader (WARN)",
      C1 + "Partition orders-0 failed to complete preferred replica leader election to 1. "
      "Leader is still 2", {**TP, "leader": 2, "election": "preferred_failed"}, level="WARN"),
    W("preferred_election_done", "3.x", "3.5.2, 3.7.0",
      "core/controller/KafkaController.scala:removePartitionsFromPreferredReplicaElection",
      "Partition $partition completed preferred replica leader election. New leader is "
      "$preferredReplica",
      C1 + "Partition orders-0 completed preferred replica leader election. New leader is 1",
      {**TP, "leader": 1, "election": "preferred"}),
    # --- coordinator_unloaded -----------------------------------------------------------
    W("coordinator_unloaded", "0.11", "0.11.0.2",
      "core/coordinator/group/GroupMetadataManager.scala:removeGroupsAndOffsets",
      "Finished unloading $topicPartition. Removed .. cached offsets and .. cached groups.",
      "[Group Metadata Manager on Broker 1]: Finished unloading __consumer_offsets-7. Removed "
      "4 cached offsets and 1 cached groups.",
      {"topic": "__consumer_offsets", "partition": 7, "offsets_removed": 4,
       "groups_removed": 1}),
    W("coordinator_unloaded", "1.x", "1.0.2, 1.1.1",
      "core/coordinator/group/GroupMetadataManager.scala:removeGroupsAndOffsets",
      "Finished unloading $topicPartition. Removed .. cached offsets and .. cached groups.",
      "[GroupMetadataManager brokerId=1] Finished unloading __consumer_offsets-7. Removed 5 "
      "cached offsets and 2 cached groups.", {"offsets_removed": 5, "groups_removed": 2}),
    W("coordinator_unloaded", "2.x", "2.0.1, 2.4.1",
      "core/coordinator/group/GroupMetadataManager.scala:removeGroupsAndOffsets",
      "Finished unloading $topicPartition. Removed .. cached offsets and .. cached groups.",
      "[GroupMetadataManager brokerId=1] Finished unloading __consumer_offsets-7. Removed 6 "
      "cached offsets and 3 cached groups.", {"offsets_removed": 6, "groups_removed": 3}),
    W("coordinator_unloaded", "2.x", "2.8.2",
      "core/coordinator/group/GroupMetadataManager.scala:removeGroupsAndOffsets",
      "Finished unloading $topicPartition for coordinator epoch $coordinatorEpoch. Removed .. "
      "cached offsets and .. cached groups.",
      "[GroupMetadataManager brokerId=1] Finished unloading __consumer_offsets-7 for "
      "coordinator epoch 4. Removed 7 cached offsets and 1 cached groups.",
      {"offsets_removed": 7, "groups_removed": 1, "leader_epoch": 4}),
    W("coordinator_unloaded", "3.x", "3.5.2, 3.7.0",
      "core/coordinator/group/GroupMetadataManager.scala:removeGroupsAndOffsets",
      "Finished unloading $topicPartition for coordinator epoch $coordinatorEpoch. Removed .. "
      "cached offsets and .. cached groups.",
      "[GroupMetadataManager brokerId=1] Finished unloading __consumer_offsets-7 for "
      "coordinator epoch 5. Removed 0 cached offsets and 0 cached groups.",
      {"offsets_removed": 0, "groups_removed": 0, "leader_epoch": 5}),
    W("coordinator_unloaded", "4.x", "4.1.0",
      "coordinator-common/.../runtime/CoordinatorRuntime.java:scheduleUnloadOperation",
      "Finished unloading metadata for {} with epoch {}.",
      "[GroupCoordinator id=1] Finished unloading metadata for __consumer_offsets-7 with "
      "epoch 6.",
      {"topic": "__consumer_offsets", "partition": 7, "leader_epoch": 6, "replica": 1}),
    # --- controller_ready ---------------------------------------------------------------
    W("controller_ready", "0.10", "0.10.2.2",
      "core/controller/KafkaController.scala:onControllerFailover",
      "Broker %d is ready to serve as the new controller with epoch %d",
      C010 + "Broker 1 is ready to serve as the new controller with epoch 3",
      {"broker": 1, "controller_epoch": 3}),
    W("controller_ready", "0.11", "0.11.0.2",
      "core/controller/KafkaController.scala:onControllerFailover",
      "Broker %d is ready to serve as the new controller with epoch %d",
      C010 + "Broker 2 is ready to serve as the new controller with epoch 4",
      {"broker": 2, "controller_epoch": 4}),
    W("controller_ready", "1.x", "1.0.2, 1.1.1",
      "core/controller/KafkaController.scala:onControllerFailover",
      "Ready to serve as the new controller with epoch $epoch",
      C1 + "Ready to serve as the new controller with epoch 5",
      {"broker": 1, "controller_epoch": 5}),
    W("controller_ready", "2.x", "2.0.1, 2.4.1, 2.8.2",
      "core/controller/KafkaController.scala:onControllerFailover",
      "Ready to serve as the new controller with epoch $epoch",
      C1 + "Ready to serve as the new controller with epoch 6",
      {"broker": 1, "controller_epoch": 6}),
    W("controller_ready", "3.x", "3.5.2, 3.7.0",
      "core/controller/KafkaController.scala:onControllerFailover",
      "Ready to serve as the new controller with epoch $epoch",
      C1 + "Ready to serve as the new controller with epoch 7",
      {"broker": 1, "controller_epoch": 7}),
    # --- not_enough_replicas ------------------------------------------------------------
    W("not_enough_replicas", "0.10", "0.10.2.2",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "Number of insync replicas for partition %s is [%d], below required minimum [%d]",
      "[ReplicaManager broker=1] Error processing append operation on partition orders-0 "
      "org.apache.kafka.common.errors.NotEnoughReplicasException: Number of insync replicas "
      "for partition orders-0 is [1], below required minimum [2]",
      {**TP, "isr_size": 1, "min_isr": 2, "error": "NOT_ENOUGH_REPLICAS"}, level="ERROR"),
    W("not_enough_replicas", "0.11", "0.11.0.2",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "Number of insync replicas for partition %s is [%d], below required minimum [%d]",
      "Error processing append operation on partition orders-0 org.apache.kafka.common.errors"
      ".NotEnoughReplicasException: Number of insync replicas for partition orders-0 is [1], "
      "below required minimum [2]", {**TP, "isr_size": 1, "min_isr": 2}, level="ERROR"),
    W("not_enough_replicas", "1.x", "1.0.2, 1.1.1",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "Number of insync replicas for partition %s is [%d], below required minimum [%d]",
      "[ReplicaManager broker=1] Error processing append operation on partition orders-0 "
      "org.apache.kafka.common.errors.NotEnoughReplicasException: Number of insync replicas "
      "for partition orders-0 is [1], below required minimum [3]",
      {**TP, "isr_size": 1, "min_isr": 3, "replica": 1}, level="ERROR"),
    W("not_enough_replicas", "2.x", "2.0.1",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "Number of insync replicas for partition %s is [%d], below required minimum [%d]",
      "[ReplicaManager broker=1] Error processing append operation on partition orders-0 "
      "org.apache.kafka.common.errors.NotEnoughReplicasException: Number of insync replicas "
      "for partition orders-0 is [1], below required minimum [2]",
      {**TP, "isr_size": 1, "min_isr": 2}, level="ERROR"),
    W("not_enough_replicas", "2.x", "2.4.1, 2.8.2",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "The size of the current ISR $inSyncReplicaIds is insufficient to satisfy the min.isr "
      "requirement of $minIsr for partition $topicPartition",
      "[ReplicaManager broker=1] Error processing append operation on partition orders-0 "
      "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR "
      "Set(1) is insufficient to satisfy the min.isr requirement of 2 for partition orders-0",
      {**TP, "isr": [1], "min_isr": 2}, level="ERROR"),
    W("not_enough_replicas", "3.x", "3.5.2, 3.7.0",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "The size of the current ISR ${partitionState.isr} is insufficient to satisfy the "
      "min.isr requirement of $minIsr for partition $topicPartition",
      "[ReplicaManager broker=1] Error processing append operation on partition orders-0 "
      "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR "
      "Set(1, 3) is insufficient to satisfy the min.isr requirement of 3 for partition "
      "orders-0", {**TP, "isr": [1, 3], "min_isr": 3}, level="ERROR"),
    W("not_enough_replicas", "4.x", "4.1.0",
      "core/cluster/Partition.scala:appendRecordsToLeader (NotEnoughReplicasException)",
      "The size of the current ISR : $inSyncSize is insufficient to satisfy the min.isr "
      "requirement of $minIsr for partition $topicPartition, live replica(s) broker.id are : "
      "$inSyncReplicaIds",
      "[ReplicaManager broker=1] Error processing append operation on partition orders-0 "
      "org.apache.kafka.common.errors.NotEnoughReplicasException: The size of the current ISR "
      ": 1 is insufficient to satisfy the min.isr requirement of 2 for partition orders-0, "
      "live replica(s) broker.id are : Set(1)",
      {**TP, "isr_size": 1, "isr": [1], "min_isr": 2}, level="ERROR"),
)

#: (kind, family) -> why the family has no wording of the kind
ABSENT: dict[tuple[str, str], str] = {
    ("isr_expand", "3.x"): "no 'Expanding ISR' from 2.8: AlterPartition, then 'ISR updated to'",
    ("isr_expand", "4.x"): "no 'Expanding ISR' from 2.8: AlterPartition, then 'ISR updated to'",
    ("zk_version_stale", "3.x"): "the leader writes no ISR to ZooKeeper from 2.8 (AlterIsr)",
    ("zk_version_stale", "4.x"): "no ZooKeeper",
    ("become_leader", "0.10"): "no leader epoch before 0.11 (KIP-101)",
    ("become_follower", "0.10"): "Partition.makeFollower logs no such line before 2.8",
    ("become_follower", "0.11"): "Partition.makeFollower logs no such line before 2.8",
    ("become_follower", "1.x"): "Partition.makeFollower logs no such line before 2.8",
    ("truncate_to_hw", "0.10"): "no truncateToHighWatermark line before 2.4",
    ("truncate_to_hw", "0.11"): "no truncateToHighWatermark line before 2.4",
    ("truncate_to_hw", "1.x"): "no truncateToHighWatermark line before 2.4",
    ("log_start_offset", "0.10"): "no log start offset before 0.11 (KIP-107)",
    ("log_start_offset", "0.11"): "Log.maybeIncrementLogStartOffset logs nothing in 0.11",
    ("segment_delete", "1.x"): "deleteSeg's 'Deleting segment %d' gives no reason; "
                               "found_deletable_segments reads the decision",
    ("broker_fenced", "0.10"): "no KRaft before 2.8",
    ("broker_fenced", "0.11"): "no KRaft before 2.8",
    ("broker_fenced", "1.x"): "no KRaft before 2.8",
    ("broker_registered", "0.10"): "no KRaft before 2.8",
    ("broker_registered", "0.11"): "no KRaft before 2.8",
    ("broker_registered", "1.x"): "no KRaft before 2.8",
    ("kraft_partition_change", "0.10"): "no KRaft before 2.8",
    ("kraft_partition_change", "0.11"): "no KRaft before 2.8",
    ("kraft_partition_change", "1.x"): "no KRaft before 2.8",
    ("kraft_partition_change", "2.x"): "2.8.2's controller logs no partition change",
    ("truncate_below_hw", "0.10"): "no such warning before 2.0",
    ("truncate_below_hw", "0.11"): "no such warning before 2.0",
    ("truncate_below_hw", "1.x"): "no such warning before 2.0",
    ("broker_unfenced", "0.10"): "no KRaft before 2.8",
    ("broker_unfenced", "0.11"): "no KRaft before 2.8",
    ("broker_unfenced", "1.x"): "no KRaft before 2.8",
    ("truncate_by_epoch", "0.10"): "no leader epoch before 0.11",
    ("truncate_by_epoch", "0.11"): "before 3.1 an epoch truncation shows as Log's "
                                   "'Truncating to offset' alone",
    ("truncate_by_epoch", "1.x"): "before 3.1 an epoch truncation shows as Log's "
                                  "'Truncating to offset' alone",
    ("truncate_by_epoch", "2.x"): "before 3.1 an epoch truncation shows as Log's "
                                  "'Truncating to offset' alone",
    ("partition_failed", "0.10"): "a failed partition stops its fetcher thread before 2.1",
    ("partition_failed", "0.11"): "a failed partition stops its fetcher thread before 2.1",
    ("partition_failed", "1.x"): "a failed partition stops its fetcher thread before 2.1",
    ("state_change_online", "4.x"): "no ZooKeeper controller",
    ("broker_change", "4.x"): "no ZooKeeper controller",
    ("offline_election_failed", "4.x"): "no ZooKeeper controller",
    ("controller_elected", "4.x"): "no ZooKeeper controller (QuorumController's 'Becoming "
                                   "the active controller' is not read)",
    ("controlled_shutdown", "4.x"): "no ZooKeeper controller",
    ("controller_ready", "4.x"): "no ZooKeeper controller",
    ("preferred_election_done", "4.x"): "no ZooKeeper controller",
    ("found_deletable_segments", "0.10"): "0.10 logs only deleteSeg's line (segment_delete)",
    ("found_deletable_segments", "3.x"): "per-segment reasons from 2.8 (segment_delete)",
    ("found_deletable_segments", "4.x"): "per-segment reasons from 2.8 (segment_delete)",
    ("offline_leader_selected_010", "2.x"): "PartitionLeaderSelector is gone from 1.1",
    ("offline_leader_selected_010", "3.x"): "PartitionLeaderSelector is gone from 1.1",
    ("offline_leader_selected_010", "4.x"): "PartitionLeaderSelector is gone from 1.1",
    ("alter_partition_rejected", "0.10"): "no AlterPartition before 3.2",
    ("alter_partition_rejected", "0.11"): "no AlterPartition before 3.2",
    ("alter_partition_rejected", "1.x"): "no AlterPartition before 3.2",
    ("alter_partition_rejected", "2.x"): "no AlterPartition before 3.2",
    ("alter_partition_failed", "0.10"): "no AlterIsr before 2.7",
    ("alter_partition_failed", "0.11"): "no AlterIsr before 2.7",
    ("alter_partition_failed", "1.x"): "no AlterIsr before 2.7",
    ("coordinator_unloaded", "0.10"): "0.10 logs only non-zero counts: 'Removed %d cached "
                                      "offsets for %s on follower transition.' (not read)",
}


def record(w: Wording) -> Any:
    text = f"[2024-05-01 10:00:00,000] {w.level} {w.message} ({w.logger})"
    [rec] = records_of("wording.log", [text], dt.UTC, FileStats())
    return rec


def wording_id(w: Wording) -> str:
    same = [x for x in WORDINGS if (x.kind, x.family) == (w.kind, w.family)]
    suffix = f"-{same.index(w) + 1}" if len(same) > 1 else ""
    return f"{w.kind}-{w.family}{suffix}"


@pytest.mark.parametrize("w", WORDINGS, ids=wording_id)
def test_each_release_wording_is_read_with_its_fields(w: Wording) -> None:
    found = match(record(w))
    assert found is not None, f"{w.kind} {w.family} ({w.tags}): not understood"
    kind, events = found
    assert kind.name == w.kind
    if w.events is not None:
        assert len(events) == w.events
    else:
        assert events
    if w.expect:
        got = events[0]
        assert {k: got.get(k) for k in w.expect} == {
            k: v for k, v in w.expect.items()}, got


def test_every_kind_covers_every_release_family() -> None:
    """Each kind has, in each family, a wording with a test or a reason it logs none."""
    names = {k.name for k in KINDS}
    assert {w.kind for w in WORDINGS} == names
    for name in sorted(names):
        for family in FAMILIES:
            has = any((w.kind, w.family) == (name, family) for w in WORDINGS)
            assert has != ((name, family) in ABSENT), (name, family)
    assert all(w.family in FAMILIES for w in WORDINGS)


def test_the_old_fetcher_lines_do_not_read_a_broker_host_as_a_partition() -> None:
    """``BrokerEndPoint(2,kafka-2,9092)`` (0.10-2.0's case-class toString) names a host,
    ``kafka-2``, that looks like a topic-partition."""
    [w] = [x for x in WORDINGS if (x.kind, x.family) == ("fetcher_added", "0.11")]
    found = match(record(w))
    assert found is not None
    assert found[1][0]["topic_partitions"] == ["orders-0"]


def test_a_registration_change_that_fences_is_no_unfencing() -> None:
    w = Wording("broker_unfenced", "4.x", "", "", "", QC + "Replayed "
                "BrokerRegistrationChangeRecord modifying the registration for broker 2: "
                "BrokerRegistrationChangeRecord(brokerId=2, brokerEpoch=42, fenced=1, "
                "inControlledShutdown=0, logDirs=[])")
    assert match(record(w)) is None


@pytest.mark.parametrize(("name", "line", "kind", "facts"), [
    ("12-vpg-disturb-travis-broker-startup-10.log", 9, "log_loaded",
     {"topic": "__consumer_offsets", "partition": 12, "leo": 0, "log_start_offset": 0}),
    ("16-bitnami-charts-kraft-registration-stale-epoch.log", 5, "broker_registered",
     {"broker": 0, "broker_epoch": 20}),
    ("33-parkeeper-controlled-shutdown-broker-not-available-0822.log", 5, "controller_elected",
     {"broker": 0}),
], ids=["1.0-log-load", "3.7-replayed-registration", "0.8-zookeeper-leader-elector"])
def test_real_excerpts_in_the_wordings_added(name: str, line: int, kind: str,
                                             facts: dict[str, Any]) -> None:
    """Lines of the real excerpts that no kind read before issue 54: 1.0.0's log load (the
    0.11 wording, which 1.0.2 changed), 3.7's "Replayed RegisterBrokerRecord modifying the
    registration", ZookeeperLeaderElector's "successfully elected as leader" (0.8-0.10)."""
    path = ROOT / "tests" / "data" / "kafka_logs" / name
    [rec] = [r for r in read_records(path, dt.UTC, FileStats()) if r.line == line]
    found = match(rec)
    assert found is not None and found[0].name == kind
    assert {k: found[1][0].get(k) for k in facts} == facts


def table() -> str:
    """The wordings table of docs/import.md."""
    rows = ["| kind | family | wording | tags | file:method |", "|---|---|---|---|---|"]

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    for kind in KINDS:
        for family in FAMILIES:
            ws = [w for w in WORDINGS if (w.kind, w.family) == (kind.name, family)]
            if not ws:
                rows.append(f"| `{kind.name}` | {family} | — ({cell(ABSENT[kind.name, family])})"
                            " | | |")
            for w in ws:
                rows.append(f"| `{kind.name}` | {family} | {cell(w.wording)} | {w.tags} | "
                            f"{cell(w.where)} |")
    return "\n".join(rows)


def test_docs_import_md_has_the_wordings_table() -> None:
    doc = (ROOT / "docs" / "import.md").read_text()
    m = re.search(r"<!-- wordings:begin -->\n(.*?)\n<!-- wordings:end -->", doc, re.S)
    assert m is not None, "docs/import.md lacks the wordings table"
    assert m.group(1) == table(), "regenerate: python tests/test_import_wordings.py"


if __name__ == "__main__":
    sys.stdout.write(table() + "\n")
