"""Which of Kafka's own tests — or of Jepsen's Kafka checker tests — a conformance test
follows (issue 17).

Every test in ``tests/conformance/`` carries one or more ``@kafka(tag, test_class, method)``
marks: the Kafka release tag whose code and tests it follows (the era isrlab models with
it), the Kafka test class (``KAFKA_TEST_FILES`` gives its path at that tag) and the test
method. ``test_manifest.py`` holds ``MANIFEST.md`` in step with these marks, so the count of
rows there is the count of Kafka behaviours ported, never of padding.

A mark is a citation, not a copy: the test states the behaviour in isrlab's words, on its
sans-IO API, and says in its docstring what it asserts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: Kafka test class -> its file in apache/kafka (the same path in every tag cited here).
KAFKA_TEST_FILES: dict[str, str] = {
    "LeaderEpochFileCacheTest":
        "core/src/test/scala/unit/kafka/server/epoch/LeaderEpochFileCacheTest.scala",
    "ReplicaTest": "core/src/test/scala/unit/kafka/cluster/ReplicaTest.scala",
    "ReplicaManagerTest": "core/src/test/scala/unit/kafka/server/ReplicaManagerTest.scala",
    "PartitionTest": "core/src/test/scala/unit/kafka/cluster/PartitionTest.scala",
    "UnifiedLogTest": "core/src/test/scala/unit/kafka/log/UnifiedLogTest.scala",
    "LogTest": "core/src/test/scala/unit/kafka/log/LogTest.scala",
    "LogLoaderTest": "core/src/test/scala/unit/kafka/log/LogLoaderTest.scala",
    "AbstractFetcherThreadTest":
        "core/src/test/scala/unit/kafka/server/AbstractFetcherThreadTest.scala",
    "ReplicaFetcherThreadTest":
        "core/src/test/scala/unit/kafka/server/ReplicaFetcherThreadTest.scala",
    "ReplicaStateMachineTest":
        "core/src/test/scala/unit/kafka/controller/ReplicaStateMachineTest.scala",
    "PartitionLeaderElectionAlgorithmsTest":
        "core/src/test/scala/unit/kafka/controller/PartitionLeaderElectionAlgorithmsTest.scala",
    "ClusterControlManagerTest":
        "metadata/src/test/java/org/apache/kafka/controller/ClusterControlManagerTest.java",
    "BrokerHeartbeatManagerTest":
        "metadata/src/test/java/org/apache/kafka/controller/BrokerHeartbeatManagerTest.java",
    "BrokerHeartbeatTrackerTest":
        "metadata/src/test/java/org/apache/kafka/controller/BrokerHeartbeatTrackerTest.java",
    "QuorumControllerTest":
        "metadata/src/test/java/org/apache/kafka/controller/QuorumControllerTest.java",
    "ReplicationControlManagerTest":
        "metadata/src/test/java/org/apache/kafka/controller/ReplicationControlManagerTest.java",
    "PartitionChangeBuilderTest":
        "metadata/src/test/java/org/apache/kafka/controller/PartitionChangeBuilderTest.java",
    "ReplicationQuotaManagerTest":
        "core/src/test/scala/unit/kafka/server/ReplicationQuotaManagerTest.scala",
    "PartitionReassignmentReplicasTest":
        "metadata/src/test/java/org/apache/kafka/controller/"
        "PartitionReassignmentReplicasTest.java",
    "PartitionReassignmentRevertTest":
        "metadata/src/test/java/org/apache/kafka/controller/"
        "PartitionReassignmentRevertTest.java",
    "ConsumerCoordinatorTest":
        "clients/src/test/java/org/apache/kafka/clients/consumer/internals/"
        "ConsumerCoordinatorTest.java",
    "GroupCoordinatorTest":
        "core/src/test/scala/unit/kafka/coordinator/group/GroupCoordinatorTest.scala",
    "NetworkClientTest": "clients/src/test/java/org/apache/kafka/clients/NetworkClientTest.java",
    "KafkaNetworkChannelTest":
        "raft/src/test/java/org/apache/kafka/raft/KafkaNetworkChannelTest.java",
    "NodeToControllerRequestThreadTest":
        "core/src/test/scala/kafka/server/NodeToControllerRequestThreadTest.scala",
    "ClusterConnectionStatesTest":
        "clients/src/test/java/org/apache/kafka/clients/ClusterConnectionStatesTest.java",
    "EpochDrivenReplicationProtocolAcceptanceTest":
        "core/src/test/scala/unit/kafka/server/epoch/"
        "EpochDrivenReplicationProtocolAcceptanceTest.scala",
    "QuorumStateTest": "raft/src/test/java/org/apache/kafka/raft/QuorumStateTest.java",
    "CandidateStateTest": "raft/src/test/java/org/apache/kafka/raft/CandidateStateTest.java",
    "FollowerStateTest": "raft/src/test/java/org/apache/kafka/raft/FollowerStateTest.java",
    "LeaderStateTest": "raft/src/test/java/org/apache/kafka/raft/LeaderStateTest.java",
    "KafkaRaftClientTest": "raft/src/test/java/org/apache/kafka/raft/KafkaRaftClientTest.java",
    "KafkaRaftClientFetchTest":
        "raft/src/test/java/org/apache/kafka/raft/KafkaRaftClientFetchTest.java",
}


def kafka(tag: str, test_class: str, method: str) -> Callable[[F], F]:
    """Mark a conformance test as following Kafka ``tag``'s ``test_class.method``."""
    if test_class not in KAFKA_TEST_FILES:
        raise KeyError(f"unknown Kafka test class {test_class!r}: add its path")

    def mark(fn: F) -> F:
        cites: list[tuple[str, str, str]] = fn.__dict__.setdefault("__kafka__", [])
        cites.insert(0, (tag, test_class, method))
        return fn

    return mark


#: Jepsen's queue checker (``jepsen.tests.kafka``) and its tests, at the commit read.
JEPSEN_REPO = "jepsen-io/jepsen"
JEPSEN_COMMIT = "c4c7473d9ee22a06318433f7c523185478dd6f86"
JEPSEN_TEST_FILE = "jepsen/test/jepsen/tests/kafka_test.clj"


def jepsen(deftest: str, case: str = "") -> Callable[[F], F]:
    """Mark a conformance test as following Jepsen's ``deftest`` (and its ``testing`` case)
    in ``JEPSEN_TEST_FILE``: the same history, as isrlab trace events, judged by isrlab's
    checker; the test says where the verdicts agree and why where they differ."""
    def mark(fn: F) -> F:
        cites: list[tuple[str, str]] = fn.__dict__.setdefault("__jepsen__", [])
        cites.insert(0, (deftest, case))
        return fn

    return mark
