"""``isrlab show TRACE [filters]``: a trace as a readable terminal timeline.

Design note
-----------
One line per event, in trace order, in aligned columns::

      41.207  broker-1         orders-0   hw_update            orders-0 r2 41→57 (follower_fetch)

time (virtual seconds with milliseconds), node, actor, event, then a compact rendering of
the event's key fields (one renderer per event kind in ``_RENDER``; any other member is
appended as ``key=value``, so nothing is hidden; big lists are summarised). Column widths are
fixed (a stream has no look-ahead) and a longer name just pushes the line right.

* Streaming: the trace is read with :func:`traces.reader.iter_events`, so it is verified as
  it is shown: an altered line is refused before it is printed, a missing, swapped or cut
  line stops the listing there, and the ``run_end`` digest is checked at the end. Any of
  these is ``isrlab: <TraceError>`` on stderr and exit 2 (after the good lines shown, as a
  streaming viewer must). ``--no-verify`` reads aborted or damaged traces as far as they
  parse. A 100 MB trace costs constant memory.
* Filters: ``--partition orders-0`` or ``--partition 0`` (every topic), ``--node broker-2``
  or ``--node 2`` (plus the faults aimed at it; ``--node controller`` is every voter of a
  controller quorum), ``--from/--to`` seconds (inclusive),
  ``--events hw_update,isr_change``; they combine (and). A name the trace does not have is
  bad input, as a malformed ``--partition`` is: ``--node`` naming no node of the trace (no
  event of it, no fault aimed at it) and ``--events`` naming a kind neither in the trace nor
  in ``traces.schema.EVENTS`` end with one line naming the flag, and exit 2 — found once
  the trace has been read (a stream has no look-ahead), so nothing of that name was shown.
* Exit codes: 0 shown; 2 bad input (a flag, an unknown name, a trace that is not a regular
  file or breaks the trace contract, see ``traces.reader``).
* Colour by event family when stdout is a terminal, never when ``NO_COLOR`` is set or the
  output is piped (``--color always|never`` overrides). ``| head`` closing the pipe ends the
  listing quietly (exit 0).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TextIO

import orjson

from actors.nodes import controller_id
from traces.reader import Event, open_bytes
from traces.schema import EVENTS

__all__ = ["Filter", "format_event", "parse_filter"]

_RESET: Final = "\x1b[0m"
_DIM: Final = "\x1b[2m"
_COLOURS: Final[dict[str, str]] = {
    "fault": "\x1b[1;31m", "node_crash": "\x1b[1;31m", "node_restart": "\x1b[32m",
    "node_pause": "\x1b[31m", "node_resume": "\x1b[32m", "msg_drop": "\x1b[31m",
    "frame_rejected": "\x1b[31m", "invariant_violation": "\x1b[1;41m",
    "leader_elected": "\x1b[1;33m", "become_leader": "\x1b[33m", "become_follower": "\x1b[33m",
    "isr_change": "\x1b[1;35m", "alter_partition": "\x1b[35m",
    "alter_partition_result": "\x1b[35m", "partition_offline": "\x1b[1;31m",
    "hw_update": "\x1b[34m", "leo_update": "\x1b[2;34m", "log_truncate": "\x1b[1;31m",
    "corrupt_record": "\x1b[1;31m",
    "produce_send": "\x1b[32m", "produce_ack": "\x1b[1;32m", "produce_error": "\x1b[31m",
    "consume": "\x1b[36m", "offset_commit": "\x1b[2;36m", "offset_reset": "\x1b[1;36m",
    "run_start": "\x1b[1m", "run_end": "\x1b[1m", "phase": "\x1b[1m",
    "convergence": "\x1b[1m", "final_log": "\x1b[1m",
}
_HEAD: Final = ("seq", "ts_us", "event", "node", "actor")
#: A value rendered longer than this is summarised (``records=[…120 items]``).
_VALUE_WIDTH: Final = 60
#: ``--node controller`` in a trace of a controller quorum: every voter's node
#: (``controller-3000``, ...: actors.quorum_controller.controller_node's naming)
CONTROLLER: Final = "controller"


# --- rendering -------------------------------------------------------------------------------


def _tp(ev: Event) -> str:
    return f"{ev.get('topic', '?')}-{ev.get('partition', '?')}"


def _r(v: Any) -> str:
    return "r?" if v is None else f"r{v}"


def _isr(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


def _val(v: Any) -> str:
    if isinstance(v, str):
        return v
    text = orjson.dumps(v).decode()
    if len(text) > _VALUE_WIDTH:
        if isinstance(v, list):
            return f"[…{len(v)} items]"
        if isinstance(v, dict):
            return f"{{…{len(v)} keys}}"
        return text[: _VALUE_WIDTH - 1] + "…"
    return text


def replica_sets(ev: Event) -> str:
    """AR, ISR and OSR (= AR - ISR, docs/eras.md 1.4) of a ``reassignment`` step, with the replicas
    it is adding and removing: ``AR [4,5,6,1,2,3] ISR [1,2,3] OSR [4,5,6] +[4,5,6]
    -[1,2,3]``."""
    ar, isr = ev.get("replicas"), ev.get("isr")
    if not isinstance(ar, list) or not isinstance(isr, list):
        return ""
    osr = [r for r in ar if r not in isr]
    text = f"AR {_isr(ar)} ISR {_isr(isr)} OSR {_isr(osr)}"
    for sign, key in (("+", "adding"), ("-", "removing")):
        v = ev.get(key)
        if isinstance(v, list) and v:
            text += f" {sign}{_isr(v)}"
    return text


def _timed(path: str, *events: str) -> Iterator[tuple[str, Event]]:
    """``(when, event)`` for each line of ``path`` that is one of ``events`` (a quick scan
    for ``isrlab run``'s summaries: lines that do not parse are skipped)."""
    needles = [f'"event":"{e}"'.encode() for e in events]
    with open_bytes(path) as f:
        for raw in f:
            if not any(n in raw for n in needles):
                continue
            try:
                ev = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            ts = ev.get("ts_us")
            yield (f"{ts / 1e6:9.3f} s" if isinstance(ts, int) else "        ? s"), ev


def reassignment_steps(path: str) -> list[str]:
    """The ``reassignment`` steps of a trace, one line each (``isrlab run`` prints them):
    ``  5.000 s  orders-0 start     AR [4,5,6,1,2,3] ISR [1,2,3] OSR [4,5,6] ...``."""
    out = []
    for when, ev in _timed(path, "reassignment"):
        text = replica_sets(ev) or f"error={ev.get('error')} {ev.get('detail', '')}"
        out.append(f"{when}  {_tp(ev)} {ev.get('phase')!s:<9} {text}".rstrip())
    return out


def topic_changes(path: str) -> list[str]:
    """Topics created and partitions added (``create_partitions``) and the clients that saw
    it (``partitions_change``), one line each (``isrlab run`` prints them)."""
    return [f"{when}  {ev.get('node')!s:<14} {_render_topic_change(ev)}"
            for when, ev in _timed(path, "create_partitions", "partitions_change")]


def _render_topic_change(e: Event) -> str:
    if e.get("event") == "create_partitions":
        placed = e.get("replicas") or []
        old = e.get("old")
        first = old if isinstance(old, int) and old >= 0 else 0
        where = " ".join(f"{e.get('topic')}-{first + i}:{_isr(r)}" for i, r in enumerate(placed))
        return (f"{e.get('request')} {e.get('topic')} {e.get('old')}→{e.get('count')} "
                f"partitions {e.get('error')} {where}").rstrip()
    moved = e.get("moved_keys") or {}
    keys = f", {len(moved)} keys moved" if moved else ""
    return f"{e.get('topic')} {e.get('old')}→{e.get('new')} partitions seen{keys}"


def _names(v: Any) -> str:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return ",".join(v) or "-"
    return _val(v)


#: event -> (renderer, members it consumes); other members are appended as key=value.
_Renderer = Callable[[Event], str]
_RENDER: Final[dict[str, tuple[_Renderer, tuple[str, ...]]]] = {
    "leo_update": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} {e.get('old')}→{e.get('new')}",
                   ("topic", "partition", "replica", "old", "new")),
    "hw_update": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} {e.get('old')}→{e.get('new')} "
                            f"({e.get('reason')})",
                  ("topic", "partition", "replica", "old", "new", "reason")),
    "log_truncate": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} leo "
                               f"{e.get('old_leo')}→{e.get('new_leo')} ({e.get('reason')})",
                     ("topic", "partition", "replica", "old_leo", "new_leo", "reason")),
    "corrupt_record": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} @{e.get('offset')} "
                                 f"fails its CRC ({e.get('where')})",
                       ("topic", "partition", "replica", "offset", "where")),
    "log_start_offset_update": (
        lambda e: f"{_tp(e)} {_r(e.get('replica'))} log start {e.get('old')}→{e.get('new')} "
                  f"({e.get('reason')})",
        ("topic", "partition", "replica", "old", "new", "reason")),
    "isr_change": (lambda e: f"{_tp(e)} isr {_isr(e.get('old'))}→{_isr(e.get('new'))} "
                             f"({e.get('reason')}) epoch {e.get('leader_epoch')} "
                             f"pe {e.get('partition_epoch')}",
                   ("topic", "partition", "old", "new", "reason", "leader_epoch",
                    "partition_epoch")),
    "leader_elected": (lambda e: f"{_tp(e)} leader {_r(e.get('leader'))} epoch "
                                 f"{e.get('leader_epoch')} isr {_isr(e.get('isr'))} "
                                 f"({e.get('election')})",
                       ("topic", "partition", "leader", "leader_epoch", "isr", "election")),
    "become_leader": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} epoch {e.get('leader_epoch')} "
                                f"isr {_isr(e.get('isr'))} leo {e.get('leo')} hw {e.get('hw')}",
                      ("topic", "partition", "replica", "leader_epoch", "isr", "leo", "hw")),
    "become_follower": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} follows "
                                  f"{_r(e.get('leader'))} epoch {e.get('leader_epoch')} "
                                  f"leo {e.get('leo')} hw {e.get('hw')}",
                        ("topic", "partition", "replica", "leader", "leader_epoch", "leo",
                         "hw")),
    "produce_send": (lambda e: f"{_tp(e)} {e.get('value')} key={e.get('key')} "
                               f"acks={e.get('acks')}",
                     ("topic", "partition", "value", "key", "acks", "producer")),
    "produce_ack": (lambda e: f"{_tp(e)} {e.get('value')} @{e.get('offset')} "
                              f"acks={e.get('acks')}",
                    ("topic", "partition", "value", "offset", "acks", "producer")),
    "produce_error": (lambda e: f"{_tp(e)} {e.get('value')} {e.get('error')}",
                      ("topic", "partition", "value", "error", "producer")),
    "consume": (lambda e: f"{_tp(e)} {e.get('value')} @{e.get('offset')} hw {e.get('hw')}",
                ("topic", "partition", "value", "offset", "hw", "group", "consumer")),
    "offset_commit": (lambda e: f"{_tp(e)} {e.get('group')} @{e.get('offset')}",
                      ("topic", "partition", "group", "offset", "consumer")),
    "offset_reset": (lambda e: f"{_tp(e)} {e.get('group')} {e.get('old')}→{e.get('new')} "
                               f"({e.get('policy')})",
                     ("topic", "partition", "group", "old", "new", "policy", "consumer")),
    "fault": (lambda e: f"{e.get('fault')} {e.get('phase')} {_names(e.get('target'))}",
              ("fault", "phase", "target")),
    "reassignment": (lambda e: f"{_tp(e)} {e.get('phase')} {replica_sets(e)}",
                     ("topic", "partition", "phase", "replicas", "isr", "adding", "removing")),
    "replicas_change": (lambda e: f"{_tp(e)} AR {_isr(e.get('old'))}→{_isr(e.get('new'))} "
                                  f"({e.get('reason')})",
                        ("topic", "partition", "old", "new", "reason")),
    "create_partitions": (_render_topic_change,
                          ("topic", "request", "old", "count", "error", "replicas")),
    "partitions_change": (_render_topic_change, ("topic", "old", "new", "moved_keys")),
    "node_crash": (lambda e: f"{e.get('kind')}", ("kind",)),
    "msg_drop": (lambda e: f"{_val(e.get('src'))}→{_val(e.get('dst'))} {e.get('msg')} "
                           f"({e.get('reason')})",
                 ("src", "dst", "msg", "reason")),
    "tcp_stall": (lambda e: f"→{_val(e.get('dst'))} holding ({e.get('reason')})",
                  ("dst", "reason")),
    "tcp_resume": (lambda e: f"→{_val(e.get('dst'))} {e.get('frames')} frame(s) after "
                             f"{e.get('stalled_ms')} ms, {e.get('retransmits')} "
                             f"retransmission(s)", ("dst", "frames", "retransmits",
                                                    "stalled_ms")),
    "connection_failed": (lambda e: f"→{_val(e.get('dst'))} {e.get('reason')}, "
                                    f"{e.get('discarded')} frame(s) discarded",
                          ("dst", "reason", "discarded")),
    "connection_close": (lambda e: f"→{_val(e.get('peer'))} closed, {e.get('discarded')} "
                                   f"frame(s) discarded", ("peer", "discarded")),
    "msg_send": (lambda e: f"#{e.get('msg_id')} {e.get('msg')} → {_val(e.get('dst'))} "
                           + (f"(due {e['deliver_us'] / 1e6:.3f})"
                              if isinstance(e.get("deliver_us"), int)
                              else f"({e.get('fate')})"),
                 ("msg_id", "msg", "src", "dst", "fate", "deliver_us")),
    "msg_recv": (lambda e: f"#{e.get('msg_id')} {e.get('msg')} ← {_val(e.get('src'))}",
                 ("msg_id", "msg", "src")),
    "frame_rejected": (lambda e: f"{_val(e.get('src'))}→{_val(e.get('dst'))} "
                                 f"{e.get('error')}",
                       ("src", "dst", "error")),
    "final_log": (lambda e: f"{_tp(e)} {_r(e.get('replica'))} log start "
                            f"{e.get('log_start_offset')} hw {e.get('hw')} leo {e.get('leo')} "
                            f"epoch {e.get('leader_epoch')}, "
                            f"{len(e.get('records') or [])} records",
                  ("topic", "partition", "replica", "log_start_offset", "hw", "leo",
                   "leader_epoch", "records")),
    "phase": (lambda e: f"{e.get('phase')}", ("phase",)),
    "run_start": (lambda e: f"schema {e.get('schema')} isrlab {e.get('isrlab_version')} "
                            f"scenario {(e.get('scenario') or {}).get('name')} seed "
                            f"{e.get('seed')} protocol {e.get('protocol')}, "
                            f"{len(e.get('fault_plan') or [])} planned faults",
                  ("schema", "isrlab_version", "scenario", "seed", "protocol", "fault_plan")),
    "run_end": (lambda e: f"{e.get('status')}, {e.get('events')} events",
                ("status", "events", "sha256")),
}


#: a field an event lacks, as a renderer's f-string writes it: shown as "?" (an imported
#: line says only what Kafka logged; human output never shows Python's None)
_NONE: Final = re.compile(r"(?<![\w\"'])None(?![\w\"'])")


def format_event(ev: Event, *, colour: bool = False) -> str:
    """One aligned timeline line for an event."""
    ts = ev.get("ts_us")
    when = f"{ts / 1e6:10.3f}" if isinstance(ts, int) else f"{'?':>10}"
    kind = str(ev.get("event", "?"))
    renderer, used = _RENDER.get(kind, (None, ()))
    parts = [_NONE.sub("?", renderer(ev))] if renderer is not None else []
    if renderer is None and "topic" in ev and "partition" in ev:  # any partition event
        parts, used = [_tp(ev)], ("topic", "partition")
    rest = [f"{k}={_val(v)}" for k, v in ev.items() if k not in _HEAD and k not in used]
    text = " ".join(parts)
    extra = " ".join(rest)
    node = f"{ev.get('node', '?')!s:<16}"
    actor = f"{ev.get('actor', '?')!s:<10}"
    name = f"{kind:<22}"
    if not colour:
        line = f"{when}  {node} {actor} {name} {text}"
        return (f"{line} {extra}" if text else f"{line}{extra}").rstrip()
    tint = _COLOURS.get(kind, "")
    line = (f"{_DIM}{when}{_RESET}  {node} {_DIM}{actor}{_RESET} "
            f"{tint}{name}{_RESET} {text}")
    if extra:
        line += (" " if text else "") + f"{_DIM}{extra}{_RESET}"
    return line.rstrip()


# --- filtering -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Filter:
    topic: str | None = None
    partition: int | None = None
    node: str | None = None
    from_us: int | None = None
    to_us: int | None = None
    events: frozenset[str] | None = None

    def __call__(self, ev: Event) -> bool:
        if self.events is not None and ev.get("event") not in self.events:
            return False
        ts = ev.get("ts_us")
        if self.from_us is not None and isinstance(ts, int) and ts < self.from_us:
            return False
        if self.to_us is not None and isinstance(ts, int) and ts > self.to_us:
            return False
        if self.node is not None and not self.matches_node(ev.get("node")):
            target = ev.get("target")  # a fault aimed at the node belongs to its story
            if not (ev.get("event") == "fault" and isinstance(target, list)
                    and any(self.matches_node(t) for t in target)):
                return False
        if self.partition is not None:
            if ev.get("partition") != self.partition:
                return False
            if self.topic is not None and ev.get("topic") != self.topic:
                return False
        return True

    def matches_node(self, node: object) -> bool:
        """``--node`` names this node: itself, or ``controller`` for every voter of a
        controller quorum (``controller-3000``, ...: the active one changes over a run)."""
        return node == self.node or (self.node == CONTROLLER and isinstance(node, str)
                                     and controller_id(node) >= 0)


def _partition(text: str) -> tuple[str | None, int]:
    if text.isdigit():
        return None, int(text)
    topic, sep, p = text.rpartition("-")
    if not sep or not topic or not p.isdigit():
        raise ValueError(f"--partition: expected TOPIC-N (orders-0) or N, got {text!r}")
    return topic, int(p)


def parse_filter(args: argparse.Namespace) -> Filter:
    """Build a :class:`Filter` from parsed arguments; ValueError names the bad option."""
    topic, partition = _partition(args.partition) if args.partition else (None, None)
    node = args.node
    if node is not None and node.isdigit():
        node = f"broker-{node}"

    def seconds(opt: str, v: str | None) -> int | None:
        if v is None:
            return None
        try:
            s = float(v)
        except ValueError:
            raise ValueError(f"{opt}: expected seconds, got {v!r}") from None
        if not math.isfinite(s):
            raise ValueError(f"{opt}: expected a finite number of seconds, got {v!r}")
        return round(s * 1_000_000)

    events = None
    if args.events is not None:
        events = frozenset(e.strip() for e in args.events.split(",") if e.strip())
        if not events:
            raise ValueError(f"--events: expected KIND,... (hw_update,isr_change), got "
                             f"{args.events!r}")
    start, end = seconds("--from", args.from_s), seconds("--to", args.to_s)
    if start is not None and end is not None and start > end:
        raise ValueError(f"--from {args.from_s} is after --to {args.to_s}: no event can match")
    return Filter(topic, partition, node, start, end, events)


# --- the command -----------------------------------------------------------------------------


def _use_colour(choice: str, out: TextIO) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


@dataclass(slots=True)
class Seen:
    """The event kinds and node names a listing met (a fault's targets count as met)."""

    events: set[str]
    nodes: set[str]


def _watched(events: Iterable[Event], seen: Seen) -> Iterator[Event]:
    for ev in events:
        kind, node = ev.get("event"), ev.get("node")
        if isinstance(kind, str):
            seen.events.add(kind)
            target = ev.get("target")
            if kind == "fault" and isinstance(target, list):
                seen.nodes.update(t for t in target if isinstance(t, str))
        if isinstance(node, str):
            seen.nodes.add(node)
        yield ev


def unknown_names(keep: Filter, seen: Seen) -> str | None:
    """What ``--events`` / ``--node`` named that the trace does not have (a kind neither in
    the trace nor in the schema, a node that emitted nothing and no fault aimed at), as one
    line; None when every name is known. A kind of the schema that this trace lacks is no
    error (a run without truncation has no ``log_truncate``)."""
    if keep.events is not None:
        unknown = sorted(e for e in keep.events if e not in seen.events and e not in EVENTS)
        if unknown:
            return (f"--events: {', '.join(map(repr, unknown))}: no such event kind in this "
                    "trace or in the trace schema (kinds here: "
                    f"{_some(sorted(seen.events))})")
    if keep.node is not None and not any(keep.matches_node(n) for n in seen.nodes):
        return (f"--node {keep.node}: no such node in this trace (nodes: "
                f"{_some(sorted(seen.nodes))})")
    return None


def _some(names: list[str], most: int = 12) -> str:
    if not names:
        return "none"
    more = f", … {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def show(events: Iterable[Event], keep: Filter, out: TextIO, *, colour: bool) -> int:
    """Write the timeline; return the number of events shown."""
    shown = 0
    for ev in events:
        if keep(ev):
            out.write(format_event(ev, colour=colour) + "\n")
            shown += 1
    return shown
