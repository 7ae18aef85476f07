"""Message-level tracing (``isrlab run --trace-messages``): what a message line carries.

With message tracing on, the scheduler writes a ``msg_send`` line for every frame an actor
sends (when the effect is committed, in the run's canonical order: with its id, sender,
receiver, kind, its fate on the wire — delivered at ``deliver_us`` or dropped, and why — and
its key fields) and a ``msg_recv`` line when the frame is put into its receiver's inbox.
Timers are in-process and are not messages; a frame the receiver never gets (its node down,
the link cut by then) has a ``msg_send`` and the existing ``msg_drop``, no ``msg_recv``.

Nothing here feeds back into the run: lines are written, never read, and the frame is
decoded from its bytes (a pure function), so every other event of the run is the same, in
the same order, with the same fields; only ``seq`` (and so each line's ``crc`` and the
``run_end`` digest) moves (tested). Message ids count sends from 1 in commit order.

Key fields are those of :data:`KEY_FIELDS` the message has; a multi-partition request or
response (a fetcher thread's) lists its parts, each with its own key fields, and a batch of
records is summarised as its count and first offset.
"""

from __future__ import annotations

from typing import Any, Final

from actors.messages import (
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    ReplicaEpochs,
    ReplicaEpochsResponse,
    ReplicaFetch,
    ReplicaFetchResponse,
)
from actors.wire import FrameError, decode

MESSAGE_EVENTS: Final = ("msg_send", "msg_recv")

#: the fields a message line copies when the message has them (Kafka's request fields)
KEY_FIELDS: Final = (
    "topic", "partition", "replica", "broker", "leader", "leader_epoch",
    "current_leader_epoch", "partition_epoch", "fetch_offset", "last_fetched_epoch",
    "offset", "high_watermark", "log_end_offset", "log_start_offset", "isr", "new_isr",
    "diverging_epoch", "diverging_end_offset", "group", "member", "generation", "error",
    "correlation",
)

#: multi-partition messages: the class of each of their parts
_PART_CLASS: Final[dict[type[Any], type[Any]]] = {
    ReplicaFetch: Fetch,
    ReplicaFetchResponse: FetchResponse,
    ReplicaEpochs: OffsetsForLeaderEpoch,
    ReplicaEpochsResponse: OffsetsForLeaderEpochResponse,
}


def describe(frame: bytes) -> tuple[str, dict[str, Any]]:
    """The kind of a frame and its key fields (``corrupt`` when it does not decode)."""
    try:
        msg = decode(frame)
    except FrameError:
        return "corrupt", {}
    return type(msg).__name__, _keys(msg)


def _keys(msg: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in KEY_FIELDS:
        v = getattr(msg, name, None)
        if v is None:
            continue
        out[name] = list(v) if isinstance(v, tuple) else v
    records = getattr(msg, "records", None)
    if isinstance(records, tuple):
        out["records"] = len(records)
        if records:
            out["first_offset"] = records[0][0]
    part_class = _PART_CLASS.get(type(msg))
    parts = getattr(msg, "parts", None)
    if isinstance(parts, tuple):
        if part_class is not None:
            out["parts"] = [_keys(part_class(*p)) for p in parts]
        else:
            out["topic_partitions"] = [f"{p[0]}-{p[1]}" for p in parts]
    return out


