"""The canonical digest of a whole running cluster: when two schedules reach the same state.

Design note
-----------
``isrlab explore`` (faults/explore.py) explores each state once: a point whose cluster
state it has seen before, with at least the budget left now, is not explored again. That is
only as sound as the digest, which must tell apart any two states whose futures can differ,
and should merge states that differ only in how they were labelled. It covers:

* every node's lifecycle state (up, down, paused, host powered off) and the entries held
  while it is paused;
* every actor's state — all of it, durable and volatile, walked generically (``__slots__``
  and ``__dict__``, dicts and sets in sorted order, never ``hash()``), so a field added to an
  actor is covered without touching this module; a reference from one actor to another is
  the other's address, not a second walk;
* every node's disk (logs, checkpoints, page cache, the clean-shutdown marker);
* every scheduler entry — frames in flight (decoded), timers, control entries — with its
  due time relative to now, in (time, commit) order;
* the network's cut and rejecting links, delay spikes, loss rates, per-link FIFO floors
  (relative), round-trip estimates, its connections' retransmission state and the frames
  they hold (decoded), and the state of its random stream;
* the checker's view of the history so far (:class:`History`): which records were acked
  and consumed at which offsets, and the highest HW each replica and each reader has seen —
  a lost acked write is a fact of the history, not of the state, so two runs that reach the
  same cluster state with different acks must not merge.

Normalisations, each one a relabelling that no decision depends on:

* **Time** is relative: an integer field whose name says it holds a time (``*_us``,
  ``*_ms``, ``*_until*``, ``*deadline*``, ``*_time*``, ``*since*``) becomes its distance
  from now, in its own unit; a negative value is a sentinel ("never") and is kept.
* **Ever-growing ids** — correlation ids, timer tokens and handles, generation counters of
  stale-timer checks (fields named ``*correlation*``, ``*corr*``, ``*token*``,
  ``*handle*``, ``*_gen*``, ``_outstanding``, ``_timer_handles``, ``msg_count``) — become
  their rank among the distinct id values of the whole state, so equality and order among
  them (what a stale-response check compares) survive and absolute values do not.

The clock itself is part of the state: the end of the workload phase and each producer's
stop are absolute times in configuration the walk does not see, so two states merge only
at the same instant (which is where independent deliveries meet again). Left out: each
machine's copy of the clock, its configuration (the same in every execution of a search),
the queue of effects (always empty between deliveries) and the machines touched by the
current message (none). Rates, counts and epochs are kept as they are: an epoch is protocol
state, not a label. Every normalisation only relabels; a field compared as it is can only
keep two states apart.
"""

from __future__ import annotations

import array
import functools
import hashlib
import random
import re
import types
from collections.abc import Callable
from typing import Any, Final

from actors.core import Machine
from actors.wire import FrameError, decode
from emulator.network import Network
from emulator.scheduler import DELIVER, SEQ_BITS, SEQ_MASK, Scheduler

_SKIP: Final = frozenset({"now_us", "_out", "touched", "task", "node", "name", "address",
                          "rules", "cfg", "factory", "host"})
_TIME: Final = re.compile(r"(_us|_ms|until|deadline|_time|since|_at)(_|$)")
_ID: Final = re.compile(r"correlation|corr|token|handle|_gen|_outstanding|msg_count")


class History:
    """What the checker will judge of the history so far, kept up to date from the trace
    (a :class:`traces.writer.TraceWriter` tap)."""

    __slots__ = ("acked", "consumed", "hw_seen")

    def __init__(self) -> None:
        self.acked: set[tuple[Any, ...]] = set()
        self.consumed: set[tuple[Any, ...]] = set()
        self.hw_seen: dict[tuple[Any, ...], int] = {}

    def __call__(self, event: str, fields: dict[str, Any], node: str) -> None:
        if event == "produce_ack":
            self.acked.add((fields.get("topic"), fields.get("partition"),
                            fields.get("value"), fields.get("offset")))
        elif event == "consume":
            self.consumed.add((node, fields.get("topic"), fields.get("partition"),
                               fields.get("value"), fields.get("offset")))
            key = (node, fields.get("topic"), fields.get("partition"))
            self.hw_seen[key] = max(self.hw_seen.get(key, -1), int(fields.get("hw") or 0))
        elif event == "hw_update":
            key = (node, fields.get("topic"), fields.get("partition"))
            self.hw_seen[key] = max(self.hw_seen.get(key, -1), int(fields.get("new") or 0))


def cluster_digest(sched: Scheduler, net: Network, phase: str, history: History) -> bytes:
    """The digest of a cluster's whole state now (16 bytes): its scheduler (nodes, their
    machines and storage, the pending entries), its network, its phase, and ``history``."""
    walker = _Walker(sched.now)
    nodes = []
    for name in sorted(sched.nodes):
        node = sched.nodes[name]
        machines = tuple((m, walker.top(node.machines[m])) for m in sorted(node.machines))
        nodes.append((name, node.state, node.power_off, walker.value(node.storage),
                      tuple(walker.entry(e) for e in node.held), machines))
    entries = []
    for key in sorted(sched._heap):
        entry = sched._entries[key & SEQ_MASK]
        entries.append((walker.rel_us(key >> SEQ_BITS), walker.entry(entry)))
    held = sorted((k, tuple(walker.entry((DELIVER, *h, 0)) for h in s.held or ()))
                  for k, s in net._streams.items())
    network = (net.state(walker.rel_us), held, _rng(net._rng))
    hist = (sorted(history.acked, key=repr), sorted(history.consumed, key=repr),
            sorted(history.hw_seen.items(), key=repr))
    state = (sched.now, phase, nodes, entries, network, hist)
    return hashlib.blake2b(walker.renumber(repr(state)).encode(), digest_size=16).digest()


def _rng(rng: random.Random) -> str:
    """A random stream's position: its Mersenne Twister words (and the cached gauss)."""
    version, words, gauss = rng.getstate()
    h = hashlib.blake2b(array.array("Q", words).tobytes(), digest_size=8)
    return f"{h.hexdigest()}/{gauss!r}"


class _Id:
    """An id value, renumbered by rank once the whole state has been walked."""

    __slots__ = ("v",)

    def __init__(self, v: int) -> None:
        self.v = v

    def __repr__(self) -> str:   # sorts as the value does (sets, dict keys)
        return f"id({self.v:+021d})"  # nondeterminism-ok: a renumbered position


_ID_TEXT: Final = re.compile(r"id\(([+-]\d{21})\)")


@functools.cache
def _field_kind(name: str) -> int:
    """0: a plain int; -1: an id; otherwise a time in that many microseconds per unit."""
    if _ID.search(name):
        return -1
    if _TIME.search(name):
        return 1000 if "_ms" in name else 1
    return 0


class _Walker:
    def __init__(self, now_us: int) -> None:
        self.now_us = now_us
        self._ids: set[int] = set()
        self._active: set[int] = set()  # nondeterminism-ok: membership only

    def rel_us(self, t: int) -> int:
        return t - self.now_us

    def top(self, m: Machine) -> Any:
        return self._object(m)

    def entry(self, entry: tuple[Any, ...]) -> Any:
        kind, dst, src, frame, handle = entry
        if callable(dst):   # a control entry: the function and what it closes over
            return (kind, _callable(dst, self))
        return (kind, dst, src, self._frame(frame), self._id(handle) if handle else 0)

    def _frame(self, frame: Any) -> Any:
        if type(frame) is bytes:
            try:
                return self.value(decode(frame))
            except FrameError:
                return ("corrupt", frame)
        return self.value(frame)

    def _id(self, v: int) -> _Id:
        self._ids.add(v)
        return _Id(v)

    def value(self, v: Any, field: str = "") -> Any:
        t = type(v)
        if t is int:
            if field:
                kind = _field_kind(field)
                if kind < 0:
                    return self._id(v)
                if kind and 0 <= v < 1 << 62:
                    return ("t", v - self.now_us // kind)
            return v
        if v is None or t is str or t is bool or t is float or t is bytes:
            return v
        if t is tuple or t is list:
            return tuple(self.value(x, field) for x in v)
        if t is dict:
            items = [(self.value(k), self.value(x, field if not isinstance(k, str) else k))
                     for k, x in v.items()]
            return ("d", tuple(sorted(items, key=_sort_key)))
        if t is set or t is frozenset:
            return ("s", tuple(sorted((self.value(x, field) for x in v), key=_sort_key)))
        if isinstance(v, Machine):
            return ("m", v.address)
        if isinstance(v, random.Random):
            return ("rng", _rng(v))
        if t is types.FunctionType:
            return _callable(v, self)
        if t is types.MethodType:
            return ("method", v.__func__.__qualname__, self.value(v.__self__))
        return self._object(v)

    def _object(self, v: Any) -> Any:
        if type(v).__module__.startswith("trio"):
            # the runtime is not state: walking it never ends (its task tree is shared
            # everywhere) and its sets have no order. Reached through a bound method of the
            # cluster kept in a closure (a fault's stop): keep names there, not methods
            raise TypeError(f"the state digest reached the Trio runtime ({type(v).__name__})")
        key = id(v)   # nondeterminism-ok: a cycle guard (membership), never digested
        if key in self._active:
            return ("cycle", type(v).__name__)
        self._active.add(key)
        try:
            fields: list[tuple[str, Any]] = []
            for cls in type(v).__mro__:
                for name in getattr(cls, "__slots__", ()):
                    if name not in _SKIP and hasattr(v, name):
                        fields.append((name, self.value(getattr(v, name), name)))
            for name, x in sorted(getattr(v, "__dict__", {}).items()):
                if name not in _SKIP and not name.startswith("__"):
                    fields.append((name, self.value(x, name)))
            return (type(v).__name__, tuple(fields))
        finally:
            self._active.discard(key)

    def renumber(self, text: str) -> str:
        """Each id, written ``id(<value>)`` by :class:`_Id`, as its rank instead."""
        ranks = {v: i for i, v in enumerate(sorted(self._ids))}
        return _ID_TEXT.sub(lambda m: f"#{ranks[int(m.group(1))]}", text)


def _callable(fn: Callable[..., Any], walker: _Walker) -> Any:
    cells = getattr(fn, "__closure__", None) or ()
    closed = []
    for c in cells:
        try:
            x = c.cell_contents
        except ValueError:
            continue
        if x is None or type(x) in (int, str, bool, float, list, tuple, dict):
            closed.append(walker.value(x))
        elif type(x) in (types.FunctionType, types.MethodType):
            closed.append(walker.value(x))
    return ("fn", getattr(fn, "__qualname__", type(fn).__name__), tuple(closed))


def _sort_key(x: Any) -> str:
    return repr(x)
