"""Every message that crosses the simulated network, named after Kafka's own APIs.

Value classes (slotted dataclasses, frozen for the type checker) registered with
:func:`actors.wire.message`; sequences are tuples (frames decode with ``use_list=False``).
A record on the wire is a tuple ``(offset, value, leader_epoch, timestamp_ms, producer_id,
sequence, key)``; offset is -1 in a produce request (the leader assigns it).

Error codes are Kafka's error names as strings ("NONE" for success).
"""

from __future__ import annotations

import zlib
from typing import Any, Final

from actors.wire import message

Record = tuple[int, str, int, int, int, int, Any]
"""(offset, value, leader_epoch, timestamp_ms, producer_id, sequence, key)"""

NONE = "NONE"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
REQUEST_TIMED_OUT = "REQUEST_TIMED_OUT"
OUT_OF_ORDER_SEQUENCE_NUMBER = "OUT_OF_ORDER_SEQUENCE_NUMBER"
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
DELIVERY_TIMEOUT = "DELIVERY_TIMEOUT"
ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
NETWORK_EXCEPTION = "NETWORK_EXCEPTION"

RETRIABLE = frozenset({NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
                       NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                       REQUEST_TIMED_OUT, OUT_OF_ORDER_SEQUENCE_NUMBER, NETWORK_EXCEPTION})


def metadata_view_crc(partitions: list[tuple[str, int, int, int, int]],
                      brokers: tuple[tuple[int, int, bool], ...]) -> int:
    """CRC-32 of a metadata view: sorted (topic, partition, leader, leader_epoch,
    partition_epoch) and the broker states. A broker that missed a PartitionState (a lost
    frame) heartbeats a different checksum and the controller sends it everything again,
    as a KRaft broker catches up by fetching the metadata log."""
    text = repr((sorted(partitions), tuple(sorted(brokers))))
    return zlib.crc32(text.encode())


# --- controller <-> brokers -------------------------------------------------------------
@message(1)
class BrokerRegistration:
    broker: int
    incarnation: int
    clean_shutdown: bool


@message(2)
class BrokerRegistrationResponse:
    broker: int
    broker_epoch: int       # the new broker epoch; REGISTER_AGAIN or
                            # DUPLICATE_BROKER_REGISTRATION when refused
    controller_epoch: int


REGISTER_AGAIN: Final = -1
"""The controller does not know this broker epoch (a heartbeat of a session it fenced or
forgot): register again at once."""
DUPLICATE_BROKER_REGISTRATION: Final = -2
"""Kafka's DUPLICATE_BROKER_REGISTRATION: another incarnation of this broker id still has
a valid session; try again after a heartbeat interval."""


@message(3)
class BrokerHeartbeat:
    broker: int
    broker_epoch: int
    metadata_crc: int        # checksum of the broker's metadata view (see metadata_view_crc)


@message(51)
class BrokerHeartbeatResponse:
    """The controller's answer to a heartbeat (KRaft ``BrokerHeartbeatResponse``; in the
    ZooKeeper eras, the answer to the session's ping)."""

    broker: int
    broker_epoch: int


@message(4)
class PartitionState:
    """LeaderAndIsr / metadata update for one partition (KRaft PartitionRegistration)."""

    controller_epoch: int
    topic: str
    partition: int
    replicas: tuple[int, ...]
    leader: int              # -1: offline
    leader_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    partition_epoch: int
    recovering: bool         # KIP-704: elected uncleanly
    adding: tuple[int, ...] = ()     # KIP-455: replicas a reassignment is adding
    removing: tuple[int, ...] = ()   # and removing


@message(5)
class BrokerStates:
    """Which brokers are alive (unfenced) and their broker epochs."""

    controller_epoch: int
    brokers: tuple[tuple[int, int, bool], ...]   # (broker, broker_epoch, fenced)


@message(6)
class AlterPartition:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    broker_epoch: int
    new_isr: tuple[tuple[int, int], ...]          # (broker, broker_epoch seen by the leader)
    partition_epoch: int


@message(7)
class AlterPartitionResponse:
    topic: str
    partition: int
    error: str
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int


# --- replication ---------------------------------------------------------------------------
@message(10)
class Fetch:
    topic: str
    partition: int
    replica: int             # -1 for consumers
    broker_epoch: int
    fetch_offset: int
    last_fetched_epoch: int  # -1: not sent (pre-2.8)
    current_leader_epoch: int  # -1: not sent (pre-2.1)
    log_start_offset: int
    max_records: int
    correlation: int
    #: a consumer's ``fetch.max.wait.ms`` (FetchRequest ``max_wait_ms``); -1: a follower's
    #: fetch, which waits the leader broker's ``replica.fetch.wait.max.ms``
    max_wait_ms: int = -1


@message(11)
class FetchResponse:
    topic: str
    partition: int
    error: str
    high_watermark: int
    log_end_offset: int
    log_start_offset: int
    records: tuple[Record, ...]
    diverging_epoch: int     # -1: none
    diverging_end_offset: int
    leader_epoch: int
    correlation: int
    #: the offsets among ``records`` whose batch is damaged on the leader's disk (the
    #: ``corrupt_disk`` fault): sent as they are (``LogSegment.read`` checks no CRC), and
    #: what the receiver's own CRC check (``RecordBatch.isValid``) would find
    damaged: tuple[int, ...] = ()


@message(12)
class OffsetsForLeaderEpoch:
    topic: str
    partition: int
    replica: int
    leader_epoch: int        # the follower's latest epoch
    current_leader_epoch: int
    correlation: int


@message(13)
class OffsetsForLeaderEpochResponse:
    topic: str
    partition: int
    error: str
    leader_epoch: int        # the epoch the end offset belongs to (KIP-279); -1 undefined
    end_offset: int          # -1 undefined
    correlation: int


@message(14)
class ReplicaFetch:
    """One FetchRequest of a replica fetcher thread (Kafka's FetchRequest with a replica id)
    — every partition the thread fetches from this leader — or, with ``replica`` -1, of a
    consumer: every partition it reads from this leader (``fetcher`` names the member).
    ``parts`` holds each partition's :class:`Fetch` as a tuple of its fields (rebuilt with
    ``Fetch(*part)``). The leader answers at once when any partition has data or an error,
    else parks the whole request until ``min_bytes`` are available across its partitions or
    ``max_wait_ms`` passes."""

    replica: int
    broker_epoch: int
    fetcher: str             # the thread's name, ReplicaFetcherThread-<fetcher id>-<leader>
    max_wait_ms: int
    min_bytes: int
    parts: tuple[tuple[Any, ...], ...]
    correlation: int


@message(15)
class ReplicaFetchResponse:
    """The answer to a :class:`ReplicaFetch`: each part a :class:`FetchResponse` as a tuple
    of its fields, in the request's order."""

    error: str
    parts: tuple[tuple[Any, ...], ...]
    correlation: int


@message(16)
class ReplicaEpochs:
    """A fetcher thread's OffsetsForLeaderEpoch request for every partition it is
    truncating (``AbstractFetcherThread.maybeTruncate``); each part an
    :class:`OffsetsForLeaderEpoch` as a tuple of its fields."""

    replica: int
    fetcher: str
    parts: tuple[tuple[Any, ...], ...]
    correlation: int


@message(17)
class ReplicaEpochsResponse:
    """Each part an :class:`OffsetsForLeaderEpochResponse` as a tuple of its fields."""

    error: str
    parts: tuple[tuple[Any, ...], ...]
    correlation: int


# --- clients -------------------------------------------------------------------------------
@message(20)
class Produce:
    topic: str
    partition: int
    acks: int                # 0, 1, -1
    records: tuple[Record, ...]
    timeout_ms: int
    correlation: int


@message(21)
class ProduceResponse:
    topic: str
    partition: int
    error: str
    base_offset: int
    correlation: int


@message(22)
class MetadataRequest:
    correlation: int


@message(23)
class MetadataResponse:
    # (topic, partition, leader, leader_epoch)
    partitions: tuple[tuple[str, int, int, int], ...]
    correlation: int


@message(24)
class OffsetCommit:
    group: str
    topic: str
    partition: int
    offset: int
    generation: int          # -1: a simple (group-less) commit
    correlation: int


@message(25)
class OffsetCommitResponse:
    group: str
    topic: str
    partition: int
    error: str
    correlation: int


@message(26)
class OffsetFetch:
    group: str
    topic: str
    partition: int
    correlation: int


@message(27)
class OffsetFetchResponse:
    group: str
    topic: str
    partition: int
    offset: int              # -1: none committed
    error: str
    correlation: int


@message(28)
class ListOffsets:
    topic: str
    partition: int
    timestamp: int           # -2 earliest, -1 latest
    correlation: int


@message(29)
class ListOffsetsResponse:
    topic: str
    partition: int
    error: str
    offset: int
    correlation: int


# --- the simulated TCP stack -------------------------------------------------------------
@message(41)
class ConnectionReset:
    """The connection to ``peer`` was reset: its process died (or shut down) on a live host,
    and the host's kernel answered with a reset. Sent by the runtime, not by an actor, one
    network delay after the death, to every actor of every node the link reaches; a host
    that lost power, a cut link or a paused process send nothing (the peer's request times
    out). The runtime hands it to :meth:`actors.core.Machine.connection_reset`."""

    peer: str


@message(42)
class FetcherStall:
    """The ``stall_fetcher`` fault: the fetcher thread it reaches stops working for
    ``duration_ms`` (a stuck thread: it sends nothing and handles no response until then;
    0 ends a stall). Sent by the runtime, not by an actor."""

    duration_ms: int


# --- timers (self-addressed) -----------------------------------------------------------------
@message(40)
class Tick:
    """A self-addressed timer: ``kind`` names it, ``token`` lets stale ones be ignored."""

    kind: str
    token: int
    arg: int


# --- leader elections (kafka-leader-election, Admin.electLeaders) ----------------------------
@message(36)
class ElectLeaders:
    """ElectLeadersRequest: ``election_type`` "preferred" for the named partitions
    (``(topic, partition)`` pairs; empty: every partition)."""

    election_type: str
    partitions: tuple[tuple[str, int], ...]
    correlation: int


@message(37)
class ElectLeadersResponse:
    """Per partition ``(topic, partition, error)``: NONE, ELECTION_NOT_NEEDED,
    PREFERRED_LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION."""

    results: tuple[tuple[str, int, str], ...]
    correlation: int


# --- controlled shutdown ---------------------------------------------------------------------
@message(38)
class ControlledShutdownRequest:
    """A broker asks to stop (ZooKeeper eras' ControlledShutdownRequest; KRaft's heartbeat
    with ``wantShutDown``): the controller moves its leaderships and takes it out of the
    ISRs."""

    broker: int
    broker_epoch: int


@message(39)
class ControlledShutdownResponse:
    """How many partitions the broker still leads (0: it may stop)."""

    broker: int
    remaining: int


@message(43)
class ControlledShutdown:
    """The ``controlled_shutdown`` step: the broker it reaches begins a controlled shutdown.
    Sent by the runtime (an operator stopping the process), not by an actor."""

    max_retries: int
    retry_backoff_ms: int


# --- partition reassignment (kafka-reassign-partitions, Admin.alterPartitionReassignments) ---
@message(44)
class AlterPartitionReassignments:
    """AlterPartitionReassignmentsRequest: per partition ``(topic, partition, replicas)``,
    the target replica list; an empty list cancels the partition's ongoing reassignment
    (Kafka's null)."""

    parts: tuple[tuple[str, int, tuple[int, ...]], ...]
    correlation: int


@message(45)
class AlterPartitionReassignmentsResponse:
    """Per partition ``(topic, partition, error)``: NONE, NO_REASSIGNMENT_IN_PROGRESS,
    INVALID_REPLICA_ASSIGNMENT or UNKNOWN_TOPIC_OR_PARTITION."""

    results: tuple[tuple[str, int, str], ...]
    correlation: int


@message(46)
class StopReplica:
    """The broker to its replica manager: it is no longer a replica of the partition
    (KRaft: the metadata no longer lists it; ZooKeeper eras: StopReplica with
    ``deletePartition``): stop the replica and delete its log."""

    topic: str
    partition: int


@message(47)
class UnregisterBroker:
    """UnregisterBrokerRequest (``kafka-cluster unregister``, KRaft): the controller forgets
    a broker that was decommissioned. Sent by the runtime (the operator), not by an actor."""

    broker: int


@message(48)
class ReplicationThrottle:
    """A replica manager's replication throttle, as dynamic configs set it (rates in bytes
    per second, negative: none; the partitions throttled on this broker as a leader and as a
    follower). Sent by the runtime (``kafka-reassign-partitions --throttle`` / ``--verify``)."""

    leader_rate: int
    follower_rate: int
    leader_parts: tuple[tuple[str, int], ...]
    follower_parts: tuple[tuple[str, int], ...]


@message(49)
class CreateTopics:
    """CreateTopicsRequest (``kafka-topics --create``) for one topic, with the replica
    placement left to the controller. Sent by the runtime (the operator)."""

    topic: str
    partitions: int
    replication_factor: int
    min_isr: int
    unclean: bool


@message(50)
class CreatePartitions:
    """CreatePartitionsRequest (``kafka-topics --alter --partitions N``, KIP-195): the
    topic's partition count becomes ``count``; placement left to the controller. Sent by
    the runtime (the operator)."""

    topic: str
    count: int


# --- consumer groups -------------------------------------------------------------------------
@message(30)
class JoinGroup:
    group: str
    member: str              # stable member name (client id); a restart rejoins anew
    incarnation: int
    topic: str
    partitions: int
    assignor: str            # "range" | "roundrobin" | "cooperative-sticky"
    session_timeout_ms: int
    correlation: int


@message(31)
class GroupAssignment:
    """JoinGroup/SyncGroup response and rebalance notification, in one (eager protocol)."""

    group: str
    member: str
    generation: int
    partitions: tuple[int, ...]
    error: str
    correlation: int


@message(32)
class GroupHeartbeat:
    group: str
    member: str
    incarnation: int
    generation: int


@message(33)
class GroupHeartbeatResponse:
    group: str
    member: str
    error: str               # NONE | REBALANCE_IN_PROGRESS | UNKNOWN_MEMBER_ID
    generation: int


# --- admin ---------------------------------------------------------------------------------
@message(34)
class DeleteRecords:
    topic: str
    partition: int
    offset: int              # -1: up to the HW
    timeout_ms: int
    correlation: int


@message(35)
class DeleteRecordsResponse:
    topic: str
    partition: int
    error: str
    low_watermark: int
    correlation: int
