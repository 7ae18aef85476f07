"""Trace schema 1: the contract between the emulator and everything that reads traces.

A trace is JSON lines (UTF-8, optionally gzip). Every line is one flat JSON object whose
first members are, in this order::

    seq     0-based line index (int)
    ts_us   virtual time in microseconds (int)
    event   the event name (one of EVENTS below)
    node    the emitting node: "broker-<id>", "controller", "producer-<n>",
            "consumer-<group>-<n>", or "sim" for run-level events
    actor   the emitting actor on that node: "broker", "controller", "<topic>-<partition>"
            for a partition replica, "ReplicaFetcherThread-<fetcher id>-<leader id>" for a
            replica fetcher thread, "producer", "consumer", or "sim"

then the event's own fields (below), and last a ``crc`` member: the CRC-32 (zlib) of the
line's JSON text rendered *without* the crc member, so an altered line is found by its
own number (see ``traces.integrity``). Line 1 is ``run_start``; the last line is
``run_end`` whose ``sha256`` is the hex SHA-256 of every byte before that line.

Broker ids, offsets and epochs are integers. LEO and HW are exclusive (HW = 10 means
offsets 0..9 are committed). A record's ``value`` is a string unique in the run,
``"p<producer>-<sequence>"``.

The names here are part of the contract: the checker, the Spark analyses, replay and the
reports all read them. Adding fields is compatible; renaming or removing is a new schema.
"""

from __future__ import annotations

from typing import Final

SCHEMA_VERSION: Final = 1

#: Event name -> the fields the analyses rely on (more may be present).
EVENTS: Final[dict[str, tuple[str, ...]]] = {
    # run-level
    "run_start": ("schema", "isrlab_version", "seed", "scenario", "fault_plan", "protocol"),
    "run_end": ("status", "events", "sha256"),
    "fault": ("fault", "phase", "target"),
    "phase": ("phase",),
    # isrlab explore: a run under a schedule left the ordinary one at this choice point
    # (emulator.choice): option ``option`` of ``options``, named by ``label``
    "choice": ("point", "option", "label", "options"),
    "invariant_violation": ("invariant", "detail"),
    # runtime
    "node_crash": ("kind",),
    "node_restart": (),
    "node_start": (),          # a spare broker added to the cluster (add_broker) starts
    # decommission: its reassignments (start), then stopped and unregistered (done)
    "decommission": ("broker", "phase"),
    "broker_unregistered": ("broker",),
    # a reassignment throttle set or removed on a broker (rate -1: none)
    "replication_throttle": ("broker", "rate", "leader", "follower"),
    "node_pause": (),
    "node_resume": (),
    "msg_drop": ("src", "dst", "msg", "reason"),
    # message tracing (isrlab run --trace-messages; run_start then has trace_messages: true):
    # every frame sent (its fate: "deliver" at deliver_us, or a drop reason) and received,
    # with the message's key fields (emulator.msgtrace)
    "msg_send": ("msg_id", "src", "dst", "msg", "fate"),
    "msg_recv": ("msg_id", "src", "msg"),
    "request_failed": ("peer", "request", "reason"),
    # TCP (emulator.tcp), summarised per connection (src: the emitting node/actor): a
    # connection starts holding frames (reason: a cut, a loss or damage on the wire, or a
    # new connection's handshake); resumes (its held frames retransmitted and delivered,
    # after so many retransmissions); the connection failed (a reset, a connect or the
    # retransmissions given up); the actor closed its connections to a node
    "tcp_stall": ("dst", "reason"),
    "tcp_resume": ("dst", "frames", "retransmits", "stalled_ms"),
    "connection_failed": ("dst", "reason", "discarded"),
    "connection_close": ("peer", "discarded"),
    # replica fetcher threads (actor ReplicaFetcherThread-<fetcher id>-<leader>)
    # (``topic_partition(s)``: "<topic>-<p>" strings, never ``partition``, an int everywhere)
    "fetcher_partitions": ("leader", "fetcher_id", "change", "topic_partition",
                           "topic_partitions"),
    "fetcher_stall": ("leader", "fetcher_id", "duration_ms", "topic_partitions"),
    "fetcher_resume": ("leader", "fetcher_id", "topic_partitions"),
    "frame_rejected": ("src", "dst", "error"),
    # replica state
    "leo_update": ("topic", "partition", "replica", "old", "new"),
    "hw_update": ("topic", "partition", "replica", "old", "new", "reason", "role"),
    "log_truncate": ("topic", "partition", "replica", "old_leo", "new_leo", "reason"),
    "log_start_offset_update": ("topic", "partition", "replica", "old", "new", "reason"),
    "log_flush": ("topic", "partition", "replica", "recovery_point"),
    "segment_roll": ("topic", "partition", "replica", "base_offset"),
    "segment_delete": ("topic", "partition", "replica", "base_offset", "next_offset", "reason"),
    "log_recovery": ("topic", "partition", "replica", "leo", "hw", "log_start_offset"),
    # a record batch whose CRC does not match (the corrupt_disk fault), found by a follower
    # appending what it fetched (where "fetch": nothing appended, fetched again after the
    # backoff), by log recovery after an unclean shutdown (where "recovery": the log is
    # cut at ``offset``) or by a consumer's poll (where "poll", check.crcs: node is the
    # consumer, ``replica`` the broker that served the damaged copy; the member delivers
    # and fetches nothing more until the partition is revoked or its leader changes)
    "corrupt_record": ("topic", "partition", "replica", "offset", "where"),
    "become_leader": ("topic", "partition", "replica", "leader_epoch", "isr", "leo", "hw"),
    "become_follower": ("topic", "partition", "replica", "leader", "leader_epoch", "leo", "hw"),
    "isr_change": (
        "topic", "partition", "old", "new", "reason", "leader_epoch", "partition_epoch",
    ),
    "alter_partition": ("topic", "partition", "replica", "proposed_isr", "partition_epoch"),
    "alter_partition_result": ("topic", "partition", "replica", "error"),
    # controller
    "broker_registered": ("broker", "broker_epoch", "clean_shutdown"),
    "broker_fenced": ("broker", "reason"),
    "broker_registration_refused": ("broker", "error"),
    "broker_unfenced": ("broker",),
    "leader_elected": (
        "topic", "partition", "leader", "leader_epoch", "isr", "election", "partition_epoch",
    ),
    "partition_offline": ("topic", "partition", "leader_epoch"),
    "partition_state": ("topic", "partition", "path", "state"),
    "controller_elected": ("controller_epoch",),
    # the KRaft controller quorum (cluster.controller_quorum; actors.quorum_controller):
    # a voter's Raft state change (from/to: unattached, voted, candidate, leader, follower,
    # resigned), its answer to a candidate's Vote, its metadata high watermark (on change),
    # the committed records it replayed (first..offset; from a broker too, a Raft observer of
    # the metadata log: node broker-<id>, voter its id, observer true), and an active
    # controller that lost the leadership (what waited for a commit is dropped)
    "raft_transition": ("voter", "from", "to", "epoch", "leader"),
    "raft_vote": ("voter", "candidate", "epoch", "granted"),
    "raft_hw": ("voter", "hw", "leo", "epoch"),
    # entries appended to a voter's metadata log (epoch: the entries'; role: leader or
    # follower; records: their kinds) and a truncation of it (to offset, from old: its LEO)
    "raft_append": ("voter", "epoch", "first", "last", "records", "role"),
    "raft_truncate": ("voter", "offset", "old"),
    # a broker of a quorum-run cluster turns to another controller: the quorum leader its
    # observer learnt from a Fetch answer (reason raft_leader; traces before brokers were
    # observers: not_controller, timeout, published)
    "controller_followed": ("broker", "controller", "reason"),
    "metadata_apply": ("voter", "first", "offset"),
    "controller_renounced": ("voter", "epoch", "dropped"),
    "convergence": ("topic", "partition", "converged", "detail"),
    "assignment": ("group", "consumer", "generation", "partitions"),
    "delete_records": ("topic", "partition", "offset", "leader"),
    "delete_records_result": ("topic", "partition", "error", "low_watermark"),
    # clients
    "produce_send": ("topic", "partition", "key", "value", "producer", "acks"),
    "produce_ack": ("topic", "partition", "value", "offset", "producer", "acks"),
    "produce_error": ("topic", "partition", "value", "producer", "error"),
    "consume": ("group", "consumer", "topic", "partition", "offset", "value", "hw"),
    "offset_commit": ("group", "consumer", "topic", "partition", "offset", "commit_id"),
    "offset_commit_ack": ("group", "consumer", "topic", "partition", "offset", "commit_id"),
    "offset_fetch": ("group", "consumer", "topic", "partition", "offset", "requested_us"),
    # the group coordinator (actor group-coordinator), on a __consumer_offsets leader
    "coordinator_load": ("partition", "leader_epoch", "log_end_offset"),
    # the controller's preferred elections ("<topic>-<p>:<error>" per partition)
    "elect_leaders": ("election_type", "trigger", "results"),
    "controlled_shutdown": ("broker", "broker_epoch"),
    # partition reassignment (KIP-455): each step with AR (``replicas``) and ISR; AR changes
    "reassignment": ("topic", "partition", "phase"),
    "replicas_change": ("topic", "partition", "old", "new", "adding", "removing", "reason"),
    "alter_reassignments": ("results",),
    # topics created and partitions added mid-run (CreateTopics, CreatePartitions)
    "create_partitions": ("topic", "request", "old", "count", "error", "replicas"),
    # a client's metadata shows a topic's partition count change (the producer's
    # partitioner, a consumer group's rejoin)
    "partitions_change": ("topic", "old", "new"),
    # a broker becoming / ceasing to be a replica of a partition
    "replica_created": ("topic", "partition", "replica", "leo"),
    "replica_deleted": ("topic", "partition", "replica", "leo", "hw"),
    "coordinator_loaded": ("partition", "leader_epoch", "groups", "offsets", "log_end_offset"),
    "coordinator_unload": ("partition", "reason"),
    "offset_reset": ("group", "consumer", "topic", "partition", "old", "new", "policy"),
    "rebalance": ("group", "generation", "assignment"),
    # imported from Kafka's logs (isrlab import; run_start then has ``imported``): what the
    # lines said that the emulator has no event for
    "isr_update_skipped": ("topic", "partition", "replica", "partition_epoch", "reason"),
    "append_rejected": ("topic", "partition", "error"),
    "broker_change": ("added", "deleted", "live"),
    "fetch_offset_reset": ("topic", "partition", "old", "new"),
    "partition_failed": ("topic", "partition", "replica"),
    "fetch_error": ("topic", "partition", "error"),
    "log_dir_recovery": ("dir", "clean_shutdown"),
    "segment_corruption": ("topic", "partition", "file", "byte_offset"),
    # end of run
    "final_log": (
        "topic", "partition", "replica", "log_start_offset", "hw", "leo", "leader_epoch",
        "records",
    ),
}

#: Reasons carried by ``hw_update`` (docs/eras.md 1.2: the four moments a leader updates its HW,
#: plus the follower and recovery paths).
HW_REASONS: Final = (
    "produce",          # leader appended (ISR may be just the leader)
    "follower_fetch",   # leader saw a follower's LEO move
    "become_leader",    # replica became leader
    "isr_shrink",       # ISR shrank, the min over fewer replicas may rise
    "isr_change",       # other committed ISR change (expand)
    "fetch_response",   # follower: min(own LEO, leader HW)
    "truncate",         # truncation pulled the HW down with the LEO
    "log_start_offset", # logStartOffset moved above the HW
    "recovery",         # restart: loaded from the HW checkpoint
)

RUN_STATUSES: Final = ("ok", "anomalies", "error", "aborted")

#: Anomaly names (defined in docs/anomalies.md); every --json output carries all of them.
ANOMALIES: Final = (
    "lost_acked_write",
    "lost_acked_uncommitted",
    "expired",
    "hw_regression_visible",
    "hw_regression_replica",
    "log_divergence",
    "read_uncommitted",
    "nonmonotonic_send",
    "duplicate",
    "poll_skip",
    "nonmonotonic_poll",
    "no_convergence",
    "isr_churn",
    "under_min_isr",
    "lost_committed_offset",
    "outside_assignment",
    "possible_committed_truncation",
    "unclean_election",
    "leader_epoch_regression",
    # the KRaft controller quorum (cluster.controller_quorum; traces.quorum_check)
    "metadata_divergence",
    "uncommitted_metadata_applied",
)
#: Signals of a possible loss that a log shows without proving it (issue 54): in a trace
#: imported from Kafka's logs they choose the verdict ("POSSIBLE LOSS"); in an emulator's
#: trace, whose records are all known, they are informational.
POSSIBLE_LOSS: Final = ("possible_committed_truncation", "unclean_election",
                        "leader_epoch_regression")
#: Forbidden anomalies when a scenario's ``[expect]`` has no ``forbid`` list (the scenario
#: loader fills it in; the checker falls back on it for a trace whose header has none).
DEFAULT_FORBID: Final = (
    "lost_acked_write",
    "hw_regression_visible",
    "log_divergence",
    "read_uncommitted",
    "no_convergence",
    "lost_committed_offset",
    "outside_assignment",
)
#: Forbidden by default too in a scenario with a controller quorum (``cluster.controller_quorum``;
#: kept apart so that the resolved scenario of every other run, which its trace header
#: records, is unchanged).
QUORUM_FORBID: Final = ("metadata_divergence", "uncommitted_metadata_applied")
