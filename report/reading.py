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
* operations (:data:`OPERATIONS`: an operator's reassignment, controlled shutdown,
  preferred election, ...) as intervals of their own, each lasting as long as its own events
  say — a reassignment from its start to the ``reassignment`` completion, cancellation or
  refusal of every partition it moves, a controlled shutdown until the broker's
  ``node_restart``, a decommission until its ``done``, a new broker until it registers — and
  not until a ``fault`` stop that operations never have; instantaneous steps (a preferred
  election, added partitions, a damaged record) last no time;
* ``replica_deleted`` ends a replica's LEO and HW lines (:data:`GONE` in the series) until a
  ``replica_created`` starts them again;
* ``ts_us`` by ``seq`` so an anomaly example without a time can still be placed;
* the KRaft controller quorum (:class:`QuorumView`, only when the trace has ``raft_*``
  events): each voter's Raft state over time (``raft_transition``; a crash of its node ends
  the state it was in until the restart's transition), its votes (``raft_vote``), its
  metadata high watermark (``raft_hw``), the leader's appends (``raft_append``), renounced
  leaderships, the epoch each active controller's claim committed in
  (``controller_elected``), and per broker the controller it follows
  (``controller_followed``) and the metadata it applied (``metadata_apply`` from a broker).

Times are drawn on the trace's :class:`Clock`: simulated seconds from the run's start, or,
for a trace imported from Kafka's logs, the logs' wall clock (``imported.time_origin``).

A trace cut off while written (no ``run_end``, torn last line, truncated gzip) is re-read with
``verify=False`` and reported with a warning; any other verification failure (an edited line,
a file that is not a trace) propagates as ``TraceError`` and becomes exit 2 in the CLI.

The space-time diagram needs the individual events around one moment, which are not worth
keeping for the whole run: :func:`read_window` makes a second, early-stopping pass.
"""

from __future__ import annotations

import datetime as dt
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from traces.checker import Checker, CheckResult
from traces.reader import Event, TraceError, iter_events

PKey = tuple[str, int]

#: A LEO/HW series value meaning "no log from here on" (``replica_deleted``): offsets are
#: never negative, so the drawing breaks the line there (``figures.timeline_figure``).
GONE: Final = -1

#: Plan steps that are an operator's operations, not faults: drawn for as long as their own
#: events say (module notes), never until a fault ``stop``.
OPERATIONS: Final = ("reassign", "cancel_reassign", "controlled_shutdown", "preferred_election",
                     "decommission", "add_broker", "create_topic", "add_partitions")
#: Operations whose targets are partitions ("orders-0"; "all": every one).
PARTITION_OPERATIONS: Final = ("reassign", "cancel_reassign", "preferred_election")
#: Plan steps that act once and last no time, operation or not.
INSTANTS: Final = ("preferred_election", "create_topic", "add_partitions", "corrupt_disk",
                   "restart", "resume", "heal")
#: ``reassignment`` phases that end a partition's move
_MOVE_ENDS: Final = ("complete", "cancel", "rejected")

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Clock:
    """The time axis of a trace's plots: simulated seconds from the run's start, or — for a
    trace imported from Kafka's logs, whose ``run_start.imported.time_origin`` is the UTC
    time ``ts_us`` 0 stands for — the logs' own wall clock."""

    #: µs since the Unix epoch of ``ts_us`` 0; None: simulated time
    origin_us: int | None = None

    @classmethod
    def of(cls, header: Event) -> Clock:
        imported = header.get("imported")
        origin = imported.get("time_origin") if isinstance(imported, dict) else None
        if not isinstance(origin, str):
            return cls()
        try:
            when = dt.datetime.fromisoformat(origin)
        except ValueError:
            return cls()
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return cls((when - _EPOCH) // dt.timedelta(microseconds=1))

    @property
    def wall(self) -> bool:
        return self.origin_us is not None

    def _when(self, ts_us: int) -> dt.datetime:
        try:
            return _EPOCH + dt.timedelta(microseconds=(self.origin_us or 0) + ts_us)
        except OverflowError:   # a forged header or time beyond the calendar: its edge
            edge = dt.datetime.max if (self.origin_us or 0) + ts_us > 0 else dt.datetime.min
            return edge.replace(tzinfo=dt.UTC)

    def x(self, ts_us: int) -> float | str:
        """The plot coordinate: seconds (to the ms), or a Plotly date string (UTC, µs)."""
        if self.origin_us is None:
            return round(ts_us / 1e6, 3)
        return self._when(ts_us).strftime("%Y-%m-%d %H:%M:%S.%f")

    def text(self, ts_us: int) -> str:
        """The time as a reader reads it: ``5.051 s``, or ``2016-12-18 15:15:55.046 UTC``."""
        if self.origin_us is None:
            return f"{ts_us / 1e6:.3f} s"
        return self._when(ts_us).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"

    def js(self, ts_us: int) -> float:
        """The coordinate as the page's script computes ranges with: seconds, or ms since
        the Unix epoch (what a Plotly date axis takes as a number)."""
        if self.origin_us is None:
            return ts_us / 1e6
        return (self.origin_us + ts_us) / 1e3

    @property
    def axis_title(self) -> str:
        return ("the logs' wall clock (UTC)" if self.origin_us is not None
                else "simulated time (s)")


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
    #: (ts_us, replica) of each ``replica_deleted``: the replica's log is gone from there
    deleted: list[tuple[int, int]] = field(default_factory=list)

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
    #: an operator's operation (``OPERATIONS``), not a fault
    operation: bool = False

    @property
    def instant(self) -> bool:
        return self.end_us == self.start_us

    def concerns(self, partition: str) -> bool:
        """Whether a partition's timeline shows it: partition operations only on the
        partitions they name, everything else everywhere."""
        return (self.kind not in PARTITION_OPERATIONS or "all" in self.targets
                or partition in self.targets)


#: At most this many appends, votes and broker applies are kept per trace (the hover of
#: each is drawn; a run with more is cut, and the section says so).
QUORUM_MARKS: Final = 4000


@dataclass
class QuorumView:
    """What the report draws of a KRaft controller quorum (empty: not a quorum trace)."""

    #: voter id -> (ts_us, state, epoch) at each change: a ``raft_transition``'s ``to``, or
    #: "" from a crash of its node (nothing known until it restarts)
    states: dict[int, list[tuple[int, str, int]]] = field(default_factory=dict)
    #: (ts_us, voter, candidate, epoch, granted) of each vote answered
    votes: list[tuple[int, int, int, int, bool]] = field(default_factory=list)
    #: voter id -> its metadata high watermark at each change
    hw: dict[int, StepSeries] = field(default_factory=dict)
    #: (ts_us, voter, epoch, first, last, record kinds) of each append by a leader
    appends: list[tuple[int, int, int, int, int, str]] = field(default_factory=list)
    #: (ts_us, voter, epoch, pending operations dropped) of each renounced leadership
    renounced: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: (ts_us, controller epoch) of each ``controller_elected``: the new active controller's
    #: claim committed
    active: list[tuple[int, int]] = field(default_factory=list)
    #: broker id -> (ts_us, controller node, reason) each time it turned to another one
    followed: dict[int, list[tuple[int, str, str]]] = field(default_factory=dict)
    #: broker id -> (ts_us, first, last offset) of each metadata batch it applied
    applied: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    #: marks left out past :data:`QUORUM_MARKS`
    cut: int = 0

    @property
    def present(self) -> bool:
        return bool(self.states or self.votes or self.hw)

    def voters(self) -> list[int]:
        return sorted(set(self.states) | set(self.hw) | {v[1] for v in self.votes})

    def brokers(self) -> list[int]:
        return sorted(set(self.followed) | set(self.applied))

    def tenures(self, end_us: int) -> list[tuple[int, int, int, int]]:
        """(voter, epoch, start_us, end_us) of each leadership, in time order: from the
        voter's move to leader to its next state (or its node's crash, or the end)."""
        out = []
        for voter, changes in self.states.items():
            for i, (ts, state, epoch) in enumerate(changes):
                if state == "leader":
                    until = changes[i + 1][0] if i + 1 < len(changes) else end_us
                    out.append((voter, epoch, ts, max(ts, until)))
        return sorted(out, key=lambda t: (t[2], t[0]))

    def _mark(self) -> bool:
        full = len(self.votes) + len(self.appends) + sum(map(len, self.applied.values()))
        if full >= QUORUM_MARKS:
            self.cut += 1
            return False
        return True


def _node_id(node: Any, kind: str) -> int | None:
    """3000 for ``controller-3000`` (kind "controller"), 1 for ``broker-1``."""
    text = str(node)
    if not text.startswith(kind + "-") or not text[len(kind) + 1:].isdigit():
        return None
    return int(text[len(kind) + 1:])


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
    #: operations (``OPERATIONS``), each with its real duration
    operations: list[Interval] = field(default_factory=list)
    #: the KRaft controller quorum (empty for a ZooKeeper-era trace)
    quorum: QuorumView = field(default_factory=QuorumView)

    @property
    def clock(self) -> Clock:
        return Clock.of(self.header)

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
        self.operations: list[Interval] = []
        #: partition name -> the reassign / cancel_reassign operation still moving it
        self._moving: dict[str, Interval] = {}
        #: node -> (its controlled shutdown still on, whether the broker has stopped yet)
        self._shutting: dict[str, tuple[Interval, bool]] = {}
        #: broker id -> its decommission still on / the added broker not registered yet
        self._decommissioning: dict[int, Interval] = {}
        self._joining: dict[int, Interval] = {}
        #: preferred elections asked for and not answered yet, oldest first (the answer comes
        #: at once from the single controller, a network hop later from a quorum's)
        self._electing: list[Interval] = []
        self.quorum = QuorumView()

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
            if str(ev.get("fault")) in OPERATIONS:
                self._on_operation(ev, ts)
            else:
                self._on_fault(ev, ts)
        elif name in ("reassignment", "alter_reassignments", "decommission",
                      "broker_registered", "elect_leaders", "replica_created",
                      "replica_deleted"):
            self._on_operation_event(ev, ts)
        elif name in _QUORUM_EVENTS:
            self._on_quorum(ev, ts)
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
            voter = _node_id(node, "controller")
            if name == "node_crash" and voter is not None and voter in self.quorum.states:
                self.quorum.states[voter].append((ts, "", -1))   # state unknown until back
            if name == "node_crash" and node in self._shutting:
                op, _ = self._shutting[node]
                self._shutting[node] = (op, True)
                op.detail = _join(op.detail, f"stopped after {_ms(ts - op.start_us)}")
        elif name in ("node_restart", "node_resume"):
            what = "down" if name == "node_restart" else "paused"
            key = (str(ev.get("node")), what)
            if key in self._open_down:
                self._open_down.pop(key).end_us = ts
            shutting = self._shutting.get(key[0])
            if name == "node_restart" and shutting is not None and shutting[1]:
                del self._shutting[key[0]]
                shutting[0].end_us = ts
                shutting[0].detail = _join(shutting[0].detail, "back (restarted)")

    def _on_quorum(self, ev: Event, ts: int) -> None:
        """The controller quorum's events (:class:`QuorumView`)."""
        q, name = self.quorum, ev.get("event")
        voter = _int(ev.get("voter"))
        epoch = _int(ev.get("epoch"))
        if name == "raft_transition" and voter is not None:
            q.states.setdefault(voter, []).append((ts, str(ev.get("to", "?")), epoch or 0))
        elif name == "raft_vote" and voter is not None:
            candidate = _int(ev.get("candidate"))
            if candidate is not None and q._mark():
                q.votes.append((ts, voter, candidate, epoch or 0, ev.get("granted") is True))
        elif name == "raft_hw" and voter is not None:
            hw = _int(ev.get("hw"))
            if hw is not None:
                q.hw.setdefault(voter, StepSeries()).add(ts, hw)
        elif name == "raft_append" and voter is not None:
            first, last = _int(ev.get("first")), _int(ev.get("last"))
            kinds = ev.get("records")
            if first is not None and last is not None and q._mark():
                q.appends.append((ts, voter, epoch or 0, first, last, _kinds(kinds)))
        elif name == "controller_renounced" and voter is not None:
            q.renounced.append((ts, voter, epoch or 0, _int(ev.get("dropped")) or 0))
        elif name == "controller_elected":
            ce = _int(ev.get("controller_epoch"))
            if ce is not None and _node_id(ev.get("node"), "controller") is not None:
                q.active.append((ts, ce))
        elif name == "controller_followed":
            broker = _int(ev.get("broker"))
            if broker is not None:
                q.followed.setdefault(broker, []).append(
                    (ts, str(ev.get("controller", "?")), str(ev.get("reason", ""))))
        elif name == "metadata_apply":
            broker = _node_id(ev.get("node"), "broker")
            first, last = _int(ev.get("first")), _int(ev.get("offset"))
            if broker is not None and first is not None and last is not None and q._mark():
                q.applied.setdefault(broker, []).append((ts, first, last))

    def _on_fault(self, ev: Event, ts: int) -> None:
        kind, targets = str(ev.get("fault", "?")), _targets(ev.get("target"))
        if ev.get("phase") not in ("start", "stop"):   # "skipped": it never acted
            return
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
        extra = [f"{k}={ev[k]}" for k in ("extra_ms", "rate", "offset", "topic_partition")
                 if ev.get(k) is not None and ev.get(k) != 0]
        iv = Interval(ts, None, kind, targets, " ".join(extra))
        self.faults.append(iv)
        if kind in INSTANTS:   # a damaged record, a restart, a heal: done at once
            iv.end_us = ts
        else:
            self._open_faults.append(iv)

    def _down(self, node: str) -> bool:
        return (node, "down") in self._open_down

    def _on_operation(self, ev: Event, ts: int) -> None:
        """An operation starts (``fault`` phase start of an ``OPERATIONS`` kind); its own
        events end it (:meth:`_on_operation_event`, the node events in :meth:`feed`)."""
        kind, targets = str(ev.get("fault", "?")), _targets(ev.get("target"))
        if ev.get("phase") != "start":   # a reassign's --cancel stop, "skipped": not an end
            return
        op = Interval(ts, None, kind, targets, operation=True)
        self.operations.append(op)
        if kind == "reassign" and isinstance(ev.get("replicas"), list):
            op.detail = "to " + ",".join(map(str, ev["replicas"]))
        if kind in ("reassign", "cancel_reassign", "preferred_election") and self._down(
                "controller"):   # world.reassign / elect_preferred: nothing is sent
            op.end_us = ts
            op.detail = _join(op.detail, "the controller was down: nothing sent")
            return
        if kind == "preferred_election":
            self._electing.append(op)
        if kind in INSTANTS:
            op.end_us = ts
            return
        if kind in ("reassign", "cancel_reassign"):
            for tp in targets:
                older = self._moving.get(tp)
                if older is not None:   # a new target for a partition already moving
                    self._end_move(older, tp, ts, f"{tp} given a new target")
                self._moving[tp] = op
            if not targets:
                op.end_us = ts
        elif kind == "controlled_shutdown":
            node = targets[0] if targets else "?"
            if self._down(node) or node in self._shutting:
                op.end_us = ts
                op.detail = "the broker was down already: nothing to do"
            else:
                self._shutting[node] = (op, False)
        elif kind in ("decommission", "add_broker"):
            b = _broker_id(targets[0] if targets else "")
            if b is None:
                op.end_us = ts
            elif kind == "decommission":
                self._decommissioning[b] = op
            else:
                self._joining[b] = op

    def _end_move(self, op: Interval, tp: str, ts: int, how: str) -> None:
        if self._moving.get(tp) is op:
            del self._moving[tp]
        op.detail = _join(op.detail, how)
        if not any(o is op for o in self._moving.values()):
            op.end_us = ts

    def _on_operation_event(self, ev: Event, ts: int) -> None:
        name = ev.get("event")
        if name == "reassignment":
            tp = f"{ev.get('topic')}-{ev.get('partition')}"
            op = self._moving.get(tp)
            if op is not None and ev.get("phase") in _MOVE_ENDS:
                how = {"complete": "completed", "cancel": "cancelled"}.get(
                    str(ev.get("phase")), f"rejected ({ev.get('error')})")
                self._end_move(op, tp, ts, f"{tp} {how} after {_ms(ts - op.start_us)}")
        elif name == "alter_reassignments" and isinstance(ev.get("results"), list):
            for res in ev["results"]:
                tp, _, err = str(res).rpartition(":")
                op = self._moving.get(tp)
                if op is not None and err != "NONE":
                    self._end_move(op, tp, ts, f"{tp} refused ({err})")
        elif name == "decommission":
            b = _int(ev.get("broker"))
            op = self._decommissioning.get(b) if b is not None else None
            if op is not None and ev.get("phase") in ("done", "rejected"):
                del self._decommissioning[b or 0]
                op.end_us = ts
                op.detail = _join(op.detail, "stopped and unregistered" if ev.get("phase")
                                  == "done" else f"rejected ({ev.get('error')})")
        elif name == "broker_registered":
            b = _int(ev.get("broker"))
            op = self._joining.pop(b, None) if b is not None else None
            if op is not None:
                op.end_us = ts
                op.detail = _join(op.detail, "registered")
        elif (name == "elect_leaders" and isinstance(ev.get("results"), list)
              and ev.get("trigger", "request") == "request"):
            op = self._electing.pop(0) if self._electing else None
            if op is not None:
                done = [str(r).rpartition(":")[0] for r in ev["results"]
                        if str(r).endswith(":NONE")]
                op.detail = _join(op.detail, "elected: " + (", ".join(done) or "none"))
        elif name in ("replica_created", "replica_deleted"):
            pv, replica = self._part(ev), _int(ev.get("replica"))
            if pv is None or replica is None:
                return
            if name == "replica_deleted":   # its log is gone: its lines end here
                for table in (pv.leo, pv.hw):
                    table.setdefault(replica, StepSeries()).add(ts, GONE)
                pv.deleted.append((ts, replica))
            elif (leo := _int(ev.get("leo"))) is not None:
                pv.leo.setdefault(replica, StepSeries()).add(ts, leo)


#: The controller quorum's events (``_Collector._on_quorum``).
_QUORUM_EVENTS: Final = frozenset({
    "raft_transition", "raft_vote", "raft_hw", "raft_append", "controller_renounced",
    "controller_elected", "controller_followed", "metadata_apply"})


def _kinds(records: Any) -> str:
    """``LeaderChange, 2×PartitionRecord, Trace``: a batch's record kinds, runs counted."""
    if not isinstance(records, list):
        return ""
    runs: list[list[Any]] = []
    for r in records:
        if runs and runs[-1][0] == str(r):
            runs[-1][1] += 1
        else:
            runs.append([str(r), 1])
    return ", ".join(k if n == 1 else f"{n}×{k}" for k, n in runs)


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _ms(us: int) -> str:
    return f"{us / 1e3:,.1f} ms" if us < 1_000_000 else f"{us / 1e6:,.3f} s"


def _broker_id(node: str) -> int | None:
    return int(node[7:]) if node.startswith("broker-") and node[7:].isdigit() else None


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
    for op in col.operations:
        if op.end_us is None:
            op.detail = _join(op.detail, "still on at the end of the trace")
    parts = {pv.name: pv for _, pv in sorted(col.parts.items())}
    return TraceView(path=path, header=header, footer=footer, result=checker.result(),
                     partitions=parts, faults=col.faults, node_down=col.node_down,
                     end_us=col.end_us, events=lines, ts_by_seq=col.ts_by_seq, phases=col.phases,
                     warnings=warnings, operations=col.operations, quorum=col.quorum)


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
