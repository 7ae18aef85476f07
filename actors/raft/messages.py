"""The quorum's RPCs (KIP-595) and its LeaderChange control record, as plain value classes.

Named after Kafka's request and response data (3.7.0 ``VoteRequestData``,
``BeginQuorumEpochRequestData``, ``EndQuorumEpochRequestData``, ``FetchRequestData`` and
their responses), flattened to the one partition (``__cluster_metadata-0``) KRaft
replicates: no topic lists, no cluster id (isrlab runs one cluster), no top-level error
code (the partition's error is the only one; a transport failure reaches the client as
:meth:`actors.raft.client.KafkaRaftClient.handle_send_failure`). Leader ids are -1 when
unknown, offsets and epochs -1 when absent, as on Kafka's wire.

They are ``actors.core.value`` classes and not yet wire messages: the shell registers them
with ``actors.wire.message`` tags when it wires the quorum in. Sequences are tuples (the
codec decodes with ``use_list=False``); a Fetch answer's records are ``(offset, epoch,
record)`` tuples, a record being the controller's metadata record or a
:class:`LeaderChangeMessage`.

Error names are Kafka's ``Errors`` as strings ("NONE" for success).
"""

from __future__ import annotations

from typing import Any, Final

from actors.core import value

NONE: Final = "NONE"
FENCED_LEADER_EPOCH: Final = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH: Final = "UNKNOWN_LEADER_EPOCH"
NOT_LEADER_OR_FOLLOWER: Final = "NOT_LEADER_OR_FOLLOWER"
INCONSISTENT_VOTER_SET: Final = "INCONSISTENT_VOTER_SET"
INVALID_REQUEST: Final = "INVALID_REQUEST"
BROKER_NOT_AVAILABLE: Final = "BROKER_NOT_AVAILABLE"
REQUEST_TIMED_OUT: Final = "REQUEST_TIMED_OUT"

#: FetchRequest v18's ``HighWatermark`` default (``Long.MAX_VALUE``): "the feature is not
#: supported" — never below the leader's, so never answered early
HWM_NOT_SENT: Final = 2**63 - 1


@value
class LeaderChangeMessage:
    """The control record a new leader appends first (3.7.0 ``LeaderChangeMessage``): its
    own epoch's first record, whose commit lets the high watermark move."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


# --- Vote ------------------------------------------------------------------------------
@value
class VoteRequest:
    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int    # the candidate's lastFetchedEpoch
    last_offset: int          # the candidate's log end offset


@value
class VoteResponse:
    error: str
    leader_epoch: int         # the voter's epoch
    leader_id: int            # the leader it knows in that epoch, -1 if none
    vote_granted: bool


# --- BeginQuorumEpoch: a new leader announces itself to the voters -----------------------
@value
class BeginQuorumEpochRequest:
    leader_epoch: int
    leader_id: int


@value
class BeginQuorumEpochResponse:
    error: str
    leader_epoch: int
    leader_id: int


# --- EndQuorumEpoch: a resigning leader asks the voters to elect another ------------------
@value
class EndQuorumEpochRequest:
    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...]   # voters by descending fetch offset


@value
class EndQuorumEpochResponse:
    error: str
    leader_epoch: int
    leader_id: int


# --- Fetch: followers and observers replicate the log -----------------------------------
@value
class RaftFetchRequest:
    replica_id: int               # -1: not a replica
    current_leader_epoch: int     # the fetcher's epoch
    fetch_offset: int             # the fetcher's log end offset
    last_fetched_epoch: int       # the epoch of its last record (its cache's last epoch)
    max_wait_ms: int
    # KIP-1166 (4.1.0, FetchRequest v18): the high watermark the fetcher knows, -1 when it
    # knows none; HWM_NOT_SENT (Long.MAX_VALUE, the field's default) from a 3.7 fetcher
    high_watermark: int = HWM_NOT_SENT


@value
class RaftFetchResponse:
    error: str
    leader_epoch: int             # currentLeader: the answering node's epoch and leader
    leader_id: int
    high_watermark: int           # -1 when the leader has none yet
    log_start_offset: int
    diverging_epoch: int = -1     # DivergingEpoch: truncate to (end_offset, epoch)
    diverging_end_offset: int = -1
    records: tuple[tuple[int, int, Any], ...] = ()


RaftRequest = VoteRequest | BeginQuorumEpochRequest | EndQuorumEpochRequest | RaftFetchRequest
RaftResponse = (VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse
                | RaftFetchResponse)


@value
class Outbound:
    """What the client asks the shell to send: a request (``is_response`` False, answered
    with the same ``correlation_id``) or the answer to an inbound request."""

    destination: int
    correlation_id: int
    message: Any
    is_response: bool
