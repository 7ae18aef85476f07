"""Wire messages of the KRaft controller quorum (issue 52), and the metadata records.

The Raft core's messages (:mod:`actors.raft.messages`) are plain value classes; they cross
the wire inside one envelope, :class:`RaftEnvelope`: the correlation id that pairs a request
with its answer (Kafka's request header), whether it is an answer, the message's kind (an
index into :data:`RAFT_KINDS`) and its field values. A Fetch answer's records are
``(offset, epoch, record)`` tuples; a record is a metadata record (a plain tuple, below) or
the core's :class:`LeaderChangeMessage`, which is carried as the tuple
``("LeaderChange", leader_id, voters, granting_voters)`` on the wire.

**Metadata records** (KIP-631's ``__cluster_metadata`` records, flattened to tuples so that
msgpack carries them as they are):

* ``("TopicRecord", topic)``: before the first partition of a new topic;
* ``("PartitionRecord", topic, partition, replicas, min_isr, unclean, leader, leader_epoch,
  isr, elr, last_known_elr, partition_epoch, recovering, adding, removing)``: a partition's
  whole registration, when it is created;
* ``("PartitionChangeRecord", topic, partition, ((field, value), ...))``: the fields of the
  ``PartitionRecord`` that a change set (leader, ISR, ELR, assignment, ...), as Kafka's
  ``PartitionChangeRecord`` carries only what changed; isrlab also writes the leader and
  partition epochs, which Kafka's replay derives;
* ``("RegisterBrokerRecord", broker, broker_epoch, incarnation, fenced, shutting_down)``: a
  registration (a new incarnation or broker epoch);
* ``("BrokerRegistrationChangeRecord", broker, broker_epoch, fenced, shutting_down)``:
  fencing, unfencing, entering controlled shutdown (Kafka's record of the same name; the
  ``FenceBrokerRecord``/``UnfenceBrokerRecord`` of older metadata versions are not used);
* ``("UnregisterBrokerRecord", broker)``;
* ``("ControllerMeta", controller_epoch, next_broker_epoch, bootstrapped)``: isrlab's own
  counters (Kafka derives the broker epoch from the registration record's offset and the
  controller epoch from the Raft epoch);
* ``("Trace", ((event, fields), ...))``: the trace events of the decision that wrote the
  batch, emitted when the batch commits (not a Kafka record: the trace's account of the
  change, so that it appears when the change takes effect).

:class:`NotController` is the answer of a controller that is not the active one (Kafka's
``NOT_CONTROLLER`` error code in the broker's registration, heartbeat and controlled
shutdown answers), naming the leader it knows (-1: none).
"""

from __future__ import annotations

from typing import Any, Final

from actors.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    LeaderChangeMessage,
    RaftFetchRequest,
    RaftFetchResponse,
    VoteRequest,
    VoteResponse,
)
from actors.wire import message

#: the Raft messages an envelope carries, by kind (the index)
RAFT_KINDS: Final[tuple[type[Any], ...]] = (
    VoteRequest, VoteResponse, BeginQuorumEpochRequest, BeginQuorumEpochResponse,
    EndQuorumEpochRequest, EndQuorumEpochResponse, RaftFetchRequest, RaftFetchResponse)
_KIND_OF: Final[dict[type[Any], int]] = {cls: i for i, cls in enumerate(RAFT_KINDS)}
#: the field names of each kind (``dataclasses.fields`` order)
_NAMES: Final[dict[type[Any], tuple[str, ...]]] = {
    cls: tuple(cls.__dataclass_fields__) for cls in RAFT_KINDS}

LEADER_CHANGE: Final = "LeaderChange"


@message(52)
class RaftEnvelope:
    correlation_id: int
    is_response: bool
    kind: int
    body: tuple[Any, ...]


@message(53)
class NotController:
    leader_id: int     # the controller the answering node knows as leader, -1: none


def _record_to_wire(record: Any) -> Any:
    if type(record) is LeaderChangeMessage:
        return (LEADER_CHANGE, record.leader_id, tuple(record.voters),
                tuple(record.granting_voters))
    return record


def _record_from_wire(record: Any) -> Any:
    if isinstance(record, tuple) and record and record[0] == LEADER_CHANGE:
        return LeaderChangeMessage(record[1], tuple(record[2]), tuple(record[3]))
    return record


def envelope(correlation_id: int, is_response: bool, msg: Any) -> RaftEnvelope:
    """Wrap one Raft message for the wire."""
    kind = _KIND_OF[type(msg)]
    body = _values(msg)
    if type(msg) is RaftFetchResponse:
        i = _NAMES[RaftFetchResponse].index("records")
        body = (*body[:i], tuple((o, e, _record_to_wire(r)) for o, e, r in body[i]),
                *body[i + 1:])
    return RaftEnvelope(correlation_id, is_response, kind, body)


def unwrap(env: RaftEnvelope) -> Any:
    """The Raft message an envelope carries (raises ValueError on a malformed one)."""
    if not 0 <= env.kind < len(RAFT_KINDS):
        raise ValueError(f"unknown Raft message kind {env.kind}")
    cls = RAFT_KINDS[env.kind]
    body = tuple(env.body)
    if len(body) != len(_NAMES[cls]):
        raise ValueError(f"{cls.__name__}: expected {len(_NAMES[cls])} fields")
    if cls is RaftFetchResponse:
        i = _NAMES[cls].index("records")
        body = (*body[:i], tuple((o, e, _record_from_wire(r)) for o, e, r in body[i]),
                *body[i + 1:])
    return cls(*body)


def _values(msg: Any) -> tuple[Any, ...]:
    return tuple(getattr(msg, n) for n in _NAMES[type(msg)])


__all__ = ["LEADER_CHANGE", "RAFT_KINDS", "NotController", "RaftEnvelope", "envelope",
           "unwrap"]
