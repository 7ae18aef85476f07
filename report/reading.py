"""One pass over a trace for ``isrlab report``: the checker's verdict plus what the plots need.

Design. The trace is read once, streaming, through ``traces.reader.iter_events`` (which
verifies crc, seq and the run_end digest); every event goes both to ``traces.checker.Checker``
(the verdict and the anomaly examples, so the report and ``isrlab check`` can never disagree)
and to :class:`_Collector`, which keeps only compact state:

* per partition and replica, the *change points* of LEO and HW as two ``array('q')`` (a 60 s
  reference run has ~100k updates; arrays keep that to a few MB), fed by ``leo_update``,
  ``hw_update``, ``log_truncate`` and the ``leo``/``hw`` carried by ``become_leader``,
  ``become_follower`` and ``log_recovery``;
* ISR changes, leader elections and offline moments per partition;
* fault intervals (``fault`` start/stop, paired per kind and target) and node down/paused
  intervals (``node_crash``/``node_restart``, ``node_pause``/``node_resume``);
* ``ts_us`` by ``seq`` so an anomaly example without a time can still be placed.

A trace cut off while written (no ``run_end``, torn last line, truncated gzip) is re-read with
``verify=False`` and reported with a warning; any other verification failure (an edited line,
a file that is not a trace) propagates as ``TraceError`` and becomes exit 2 in the CLI.

The space-time diagram needs the individual events around one moment, which are not worth
keeping for the whole run: :func:`read_window` makes a second, early-stopping pass.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from traces.checker import Checker, CheckResult
from traces.reader import Event, TraceError, iter_events

PKey = tuple[str, int]


@dataclass
class StepSeries:
    """Change points of one integer quantity over time (a step function)."""

    ts: array[int] = field(default_factory=lambda: array("q"))
    val: array[int] = field(default_factory=lambda: array("q"))

    def add(self, ts: int, value: int) -> None:
        if self.val and self.val[-1] == value:
            return
        if self.ts and self.ts[-1] == ts:  # several moves at one instant: keep the last
            self.val[-1] = value
            if len(self.val) > 1 and self.val[-2] == value:
                self.ts.pop()
                self.val.pop()
            return
        self.ts.append(ts)
        self.val.append(value)

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class Election:
    ts_us: int
    leader: int | None
    epoch: int | None
    kind: str
    isr: list[int]


@dataclass
class PartitionView:
    topic: str
    partition: int
    leo: dict[int, StepSeries] = field(default_factory=dict)
    hw: dict[int, StepSeries] = field(default_factory=dict)
    #: (ts_us, ISR after the change, reason)
    isr: list[tuple[int, list[int], str]] = field(default_factory=list)
    elections: list[Election] = field(default_factory=list)
    offline: list[int] = field(default_factory=list)
    #: (ts_us, replica, old_leo, new_leo, reason)
    truncations: list[tuple[int, int, int, int, str]] = field(default_factory=list)
    #: the replica list (AR) after each change: (ts_us, replicas, adding, removing) — from
    #: the ISR the partition was created with, then every ``replicas_change``
    ar: list[tuple[int, list[int], list[int], list[int]]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def replicas(self) -> list[int]:
        seen = set(self.leo) | set(self.hw)
        for _, members, _ in self.isr:
            seen.update(members)
        for _, members, _, _ in self.ar:
            seen.update(members)
        return sorted(seen)


@dataclass
class Interval:
    start_us: int
    end_us: int | None  #: None: still on at the end of the trace
    kind: str
    targets: list[str]
    detail: str = ""


@dataclass
class TraceView:
    path: str
    header: Event
    footer: Event | None
    result: CheckResult
    partitions: dict[str, PartitionView]
    faults: list[Interval]
    node_down: list[Interval]
    end_us: int
    events: int
    ts_by_seq: array[int]
    phases: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def scenario(self) -> dict[str, Any]:
        sc = self.header.get("scenario")
        return sc if isinstance(sc, dict) else {}

    def ts_of(self, seq: Any) -> int | None:
        if type(seq) is int and 0 <= seq < len(self.ts_by_seq):
            return int(self.ts_by_seq[seq])
        return None


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _ints(v: Any) -> list[int]:
    return sorted(x for x in v if type(x) is int) if isinstance(v, list) else []


def _targets(v: Any) -> list[str]:
    if isinstance(v, list):
        return [str(x) for x in v]
    return [] if v is None else [str(v)]


class _Collector:
    """Folds events into the compact state of a :class:`TraceView` (see module notes)."""

    def __init__(self) -> None:
        self.parts: dict[PKey, PartitionView] = {}
        self.faults: list[Interval] = []
        self.node_down: list[Interval] = []
        self._open_faults: list[Interval] = []
        self._open_down: dict[tuple[str, str], Interval] = {}
        self.ts_by_seq: array[int] = array("q")
        self.phases: list[tuple[int, str]] = []
        self.end_us = 0

    def _part(self, ev: Event) -> PartitionView | None:
        topic, part = ev.get("topic"), ev.get("partition")
        if not isinstance(topic, str) or type(part) is not int:
            return None
        key = (topic, part)
        pv = self.parts.get(key)
        if pv is None:
            pv = self.parts[key] = PartitionView(topic, part)
        return pv

    def feed(self, ev: Event) -> None:
        ts = ev.get("ts_us")
        if type(ts) is not int:
            ts = self.end_us
        elif ts > self.end_us:
            self.end_us = ts
        seq = ev.get("seq")
        if type(seq) is int and seq == len(self.ts_by_seq):
            self.ts_by_seq.append(ts)
        name = ev.get("event")
        if name in ("leo_update", "hw_update"):
            pv, replica, new = self._part(ev), _int(ev.get("replica")), _int(ev.get("new"))
            if pv is not None and replica is not None and new is not None:
                table = pv.leo if name == "leo_update" else pv.hw
                table.setdefault(replica, StepSeries()).add(ts, new)
        elif name == "log_truncate":
            pv, replica, new = self._part(ev), _int(ev.get("replica")), _int(ev.get("new_leo"))
            if pv is not None and replica is not None and new is not None:
                pv.leo.setdefault(replica, StepSeries()).add(ts, new)
                pv.truncations.append(
                    (ts, replica, _int(ev.get("old_leo")) or 0, new, str(ev.get("reason", "")))
                )
        elif name in ("become_leader", "become_follower", "log_recovery"):
            pv, replica = self._part(ev), _int(ev.get("replica"))
            if pv is not None and replica is not None:
                leo, hw = _int(ev.get("leo")), _int(ev.get("hw"))
                if leo is not None:
                    pv.leo.setdefault(replica, StepSeries()).add(ts, leo)
                if hw is not None:
                    pv.hw.setdefault(replica, StepSeries()).add(ts, hw)
        elif name == "isr_change":
            pv = self._part(ev)
            if pv is not None:
                old = ev.get("old")
                if not pv.isr and isinstance(old, list) and old:
                    # the first ISR change of a partition whose ISR the trace never stated
                    # (an imported log starts mid-life): the line's "from" held until then
                    pv.isr.append((0, _ints(old), "before the trace"))
                pv.isr.append((ts, _ints(ev.get("new")), str(ev.get("reason", ""))))
                if ev.get("reason") == "create":
                    pv.ar.append((ts, _ints(ev.get("new")), [], []))
        elif name == "replicas_change":
            pv = self._part(ev)
            if pv is not None:
                pv.ar.append((ts, _ints(ev.get("new")), _ints(ev.get("adding")),
                              _ints(ev.get("removing"))))
        elif name == "leader_elected":
            pv = self._part(ev)
            if pv is not None:
                pv.elections.append(Election(ts, _int(ev.get("leader")),
                                             _int(ev.get("leader_epoch")),
                                             str(ev.get("election", "")), _ints(ev.get("isr"))))
                if isinstance(ev.get("isr"), list):
                    pv.isr.append((ts, _ints(ev.get("isr")), "election"))
        elif name == "partition_offline":
            pv = self._part(ev)
            if pv is not None:
                pv.offline.append(ts)
        elif name == "fault":
            self._on_fault(ev, ts)
        elif name == "phase":
            phase = str(ev.get("phase", "?"))
            self.phases.append((ts, phase))
            if phase != "workload":  # the healing phase reverts every fault still on
                for iv in self._open_faults:
                    iv.end_us = ts
                    iv.detail = (iv.detail + f" (ended by the {phase} phase)").strip()
                self._open_faults.clear()
        elif name in ("node_crash", "node_pause"):
            node = str(ev.get("node"))
            kind = str(ev.get("kind", "process")) if name == "node_crash" else "paused"
            what = "down" if name == "node_crash" else "paused"
            if (node, what) not in self._open_down:
                iv = Interval(ts, None, kind, [node])
                self._open_down[(node, what)] = iv
                self.node_down.append(iv)
        elif name in ("node_restart", "node_resume"):
            what = "down" if name == "node_restart" else "paused"
            key = (str(ev.get("node")), what)
            if key in self._open_down:
                self._open_down.pop(key).end_us = ts

    def _on_fault(self, ev: Event, ts: int) -> None:
        kind, targets = str(ev.get("fault", "?")), _targets(ev.get("target"))
        if ev.get("phase") == "stop":
            matchers: tuple[Callable[[Interval], bool], ...] = (
                lambda iv: iv.kind == kind and iv.targets == targets,
                lambda iv: iv.kind == kind)
            for match in matchers:
                for i, iv in enumerate(self._open_faults):
                    if match(iv):
                        iv.end_us = ts
                        del self._open_faults[i]
                        return
            return
        extra = [f"{k}={ev[k]}" for k in ("extra_ms", "rate") if ev.get(k)]
        iv = Interval(ts, None, kind, targets, " ".join(extra))
        self.faults.append(iv)
        self._open_faults.append(iv)


def _fold(path: str, verify: bool) -> tuple[Event, Event | None, Checker, _Collector, int]:
    checker, collector = Checker(), _Collector()
    stream = iter_events(path, verify=verify)
    with stream:
        for ev in stream:
            checker.feed(ev)
            collector.feed(ev)
        header, footer = stream.header, stream.footer
    if header is None:  # iter_events raises first; kept for the type checker
        raise TraceError(path, 1, "not an isrlab trace: no run_start")
    checker.truncated = footer is None
    return header, footer, checker, collector, stream.lines


def _cut_off(exc: TraceError) -> bool:
    """True for the failures of a run killed while writing (tolerated, with a warning)."""
    return exc.field in ("run_end", "gzip") or "cut off" in exc.message


def read_view(path: str) -> TraceView:
    """Read and check one trace; raises ``TraceError`` on a file that is not a sound trace."""
    warnings: list[str] = []
    try:
        header, footer, checker, col, lines = _fold(path, verify=True)
    except TraceError as exc:
        if not _cut_off(exc):
            raise
        warnings.append(f"incomplete trace, shown as far as it goes: {exc}")
        header, footer, checker, col, lines = _fold(path, verify=False)
    for iv in col._open_faults:
        iv.detail = (iv.detail + " (no stop traced)").strip()
    parts = {pv.name: pv for _, pv in sorted(col.parts.items())}
    return TraceView(path=path, header=header, footer=footer, result=checker.result(),
                     partitions=parts, faults=col.faults, node_down=col.node_down,
                     end_us=col.end_us, events=lines, ts_by_seq=col.ts_by_seq, phases=col.phases,
                     warnings=warnings)


#: Events the space-time diagram draws from (the rest of a window is skipped).
WINDOW_EVENTS = frozenset({
    "produce_send", "produce_ack", "produce_error", "leo_update", "hw_update", "log_truncate",
    "consume", "leader_elected", "become_leader", "become_follower", "isr_change",
    "partition_offline", "msg_drop", "node_crash", "node_restart", "node_pause",
    "node_resume", "fault",
})


def read_window(path: str, start_us: int, end_us: int, *, limit: int = 50_000) -> list[Event]:
    """The events of ``WINDOW_EVENTS`` with ``start_us <= ts_us <= end_us`` (second pass).

    The trace was verified by :func:`read_view`, so this pass reads without verification and
    stops at the first event after ``end_us`` or after ``limit`` events.
    """
    out: list[Event] = []
    stream = iter_events(path, verify=False)
    with stream:
        for ev in _until(stream, end_us):
            ts = ev.get("ts_us")
            if type(ts) is int and ts >= start_us and ev.get("event") in WINDOW_EVENTS:
                out.append(ev)
                if len(out) >= limit:
                    break
    return out


def _until(events: Iterable[Event], end_us: int) -> Iterator[Event]:
    for ev in events:
        ts = ev.get("ts_us")
        if type(ts) is int and ts > end_us:
            return
        yield ev
