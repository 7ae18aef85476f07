"""Choice points: where a run may go another way, and who decides (``isrlab explore``).

Design note
-----------
An ordinary run has exactly one schedule: the scheduler delivers every entry due at the
earliest instant, in commit order, and faults start when the plan says. For systematic
exploration (faults/explore.py) the same runtime exposes the decisions it makes silently as
*choice points*, and an :class:`Oracle` takes them. Nothing in the actors changes: a run
under a choice sequence is an ordinary run with an ordinary trace, which ``replay``,
``check``, ``shrink``, ``explain`` and ``report`` read unchanged.

Where the points are. Inside the *window* of a scenario's ``[explore]`` table — from
``from_s`` on, for ``depth`` points, during the workload phase — the scheduler delivers one
entry at a time instead of a whole instant's batch, and before each delivery it asks the
:class:`Driver`. The options at a point, in a canonical order:

0. deliver the entry an ordinary run delivers next (the earliest; ties by commit order);
1. deliver another *candidate* instead — the first undelivered entry of another channel due
   within ``horizon_ms`` of the earliest (a channel is a directed node pair for frames, so
   every TCP link stays FIFO, or one actor's own timers). Delivering an entry due later
   moves the clock to its time: every other entry, the earliest included, arrives late —
   a message delayed past another node's timer, or a timer that fires late. At most
   ``max_reorders`` such choices per run;
2. start one of the scenario's candidate faults (``[explore] faults``: ``"crash broker-2"``,
   ``"power_loss leader:orders-0"``, ``"isolate broker-1"``, ``"pause broker-1"``, ``"cut
   broker-1 broker-2"``; with ``for 4s`` a fault that reverts by itself that much later),
   at most ``max_faults`` per run, only where it acts (a down node is not crashed again);
   and the revert of a fault without a duration while it holds (``restart``, ``resume``,
   ``heal``), which does not count against ``max_faults``. Faults are offered at the first
   point of each instant — or, with ``slot_ms``, of each slot of that many milliseconds,
   for faults whose timing matters to the hundred milliseconds rather than to the message
   — and after another fault at the same instant. A fault is a point of its own: after it
   the scheduler looks again, and the next point decides the delivery.

A point with a single option is not a point: it takes no decision and does not count
towards ``depth``.

Outside the window the run is an ordinary one, batch by batch; so a run whose oracle takes
option 0 everywhere is the scenario's ordinary run with single-entry batches in the window:
the same deliveries in the same order (a batch is committed in delivery order anyway) and
the same trace, but for a timer cancelled by an earlier delivery of its instant, which a
batch had already taken and its machine ignores, and which a single-entry batch never
delivers (tests/test_explore.py compares the traces).

A schedule (the ``choices`` of ``[explore]``) lists only the points where an option other
than 0 was taken — ``{point, option, label}`` — and :class:`ScriptedOracle` replays it,
refusing one whose label no longer matches what the point offers (the code changed under
it). Every non-default choice is traced (``choice`` from ``sim/explore``), so a trace says
where its run left the ordinary schedule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from actors.wire import FrameError, decode

US: Final = 1_000_000
_SECONDS: Final = re.compile(r"^(\d+(?:\.\d+)?)s$")
#: an oracle's answer that ends the run at this point (its state was explored before)
PRUNE: Final = -1
#: the fault kinds a candidate fault may name, and the revert each one has
FAULT_REVERT: Final = {"crash": "restart", "power_loss": "restart", "shutdown": "restart",
                       "pause": "resume", "isolate": "heal", "partition": "heal",
                       "cut": "heal", "partition_reject": "heal"}


class ChoiceError(ValueError):
    """A schedule that does not fit the run it is replayed on."""


@dataclass(frozen=True, slots=True)
class Option:
    """One way a point can go: ``kind`` "deliver" (``index`` into the candidates) or
    "fault" (``plan``: the plan entry it starts); ``label`` names it in traces and
    schedules."""

    kind: str
    label: str
    index: int = 0
    plan: dict[str, Any] | None = None
    #: a fault that counts against max_faults (its revert does not)
    counts: bool = False
    #: a delivery's channel — ``"src->dst"`` nodes for frames, ``"timer node/actor"`` for
    #: an actor's timers: the chains of ``--strategy pct`` (faults.explore)
    chain: str = ""


class Oracle(Protocol):
    """Takes the decisions at the points of one run."""

    def pick(self, point: int, options: list[Option], state: Callable[[], bytes],
             left: tuple[int, int]) -> int:
        """The index of the option taken, or :data:`PRUNE`. ``state()`` computes the
        canonical digest of the whole cluster (emulator.digest) and of what the run's own
        faults hold, only when asked for; ``left`` is the (faults, reorderings) the run may
        still choose."""
        ...


@dataclass(frozen=True, slots=True)
class Window:
    """The bounds of ``[explore]``, resolved."""

    from_us: int
    depth: int
    max_faults: int
    max_reorders: int
    horizon_us: int
    #: the candidate faults: (text, kind, targets, duration in seconds)
    faults: tuple[tuple[str, str, tuple[str, ...], float], ...]
    #: faults may start once per slot of this length (0: at every instant)
    slot_us: int

    @classmethod
    def of(cls, table: dict[str, Any]) -> Window:
        return cls(int(float(table["from_s"]) * US), int(table["depth"]),
                   int(table["max_faults"]), int(table["max_reorders"]),
                   int(float(table["horizon_ms"]) * 1000),
                   tuple((text, *_parsed(text)) for text in table["faults"]),
                   int(float(table["slot_ms"]) * 1000))


def _parsed(text: str) -> tuple[str, tuple[str, ...], float]:
    kind, targets, duration = parse_fault(text)
    return kind, tuple(targets), duration


def parse_fault(text: str) -> tuple[str, list[str], float]:
    """``"crash broker-2"`` -> ("crash", ["broker-2"], 0.0); ``"isolate broker-1 for 4s"``
    -> ("isolate", ["broker-1"], 4.0): a fault that reverts by itself after that long.
    Raises ValueError."""
    words = text.split()
    duration = 0.0
    if len(words) >= 2 and words[-2] == "for":
        m = _SECONDS.match(words[-1])
        if m is None or float(m.group(1)) <= 0:
            raise ValueError(f"{text!r}: 'for' takes a duration in seconds, as 'for 4s'")
        duration = float(m.group(1))
        words = words[:-2]
    if not words or words[0] not in FAULT_REVERT:
        raise ValueError(f"{text!r}: a candidate fault is '<kind> <target>... [for <N>s]' "
                         f"with kind one of {', '.join(FAULT_REVERT)}")
    if len(words) < 2:
        raise ValueError(f"{text!r}: names no target")
    if words[0] == "cut" and len(words) != 3:
        raise ValueError(f"{text!r}: a cut names two nodes, 'cut <from> <to>'")
    return words[0], words[1:], duration


class ScriptedOracle:
    """Follows a schedule: option 0 at every point it does not name."""

    def __init__(self, choices: list[dict[str, Any]]) -> None:
        self.by_point = {int(c["point"]): c for c in choices}

    def pick(self, point: int, options: list[Option], state: Callable[[], bytes],
             left: tuple[int, int]) -> int:
        c = self.by_point.get(point)
        if c is None:
            return 0
        i = int(c["option"])
        if i >= len(options) or options[i].label != c.get("label", options[i].label):
            offered = options[i].label if i < len(options) else f"{len(options)} options"
            raise ChoiceError(f"explore.choices: at point {point} option {i} is {offered!r}, "
                              f"the schedule says {c.get('label')!r}")
        return i


class _Scheduler(Protocol):
    """What a :class:`Driver` reads of the scheduler (``emulator.scheduler.Scheduler``)."""

    @property
    def now(self) -> int: ...
    @property
    def nodes(self) -> Mapping[str, Any]: ...
    def stop(self) -> None: ...
    def emit(self, node: str, actor: str, event: str, **fields: Any) -> None: ...


class Steered(Protocol):
    """The run a :class:`Driver` steers (``emulator.cluster.Cluster`` is one): handed in,
    so the kernel knows nothing of cluster assembly or of what a fault does."""

    @property
    def sched(self) -> _Scheduler: ...
    @property
    def phase(self) -> str: ...
    def resolve_target(self, target: Any) -> list[str]: ...
    def start_fault(self, f: dict[str, Any]) -> None: ...


class Driver:
    """The runtime side of the choice points of one run (see the module note)."""

    def __init__(self, cluster: Steered, window: Window, oracle: Oracle,
                 digest: Callable[[], bytes]) -> None:
        self.cluster = cluster
        self.window = window
        self.oracle = oracle
        self.digest = digest
        self.point = 0
        self.faults_used = 0
        self.reorders_used = 0
        #: what the run's own faults hold: node -> revert kind ("restart", "resume"); and
        #: whether links are cut
        self.held: dict[str, str] = {}
        self.cut = False
        #: faults may start at the first point of an instant, or right after another fault
        self._instant = -1
        self._fault_point = True
        self._next_slot = window.from_us

    def active(self, now: int) -> bool:
        return (now >= self.window.from_us and self.point < self.window.depth
                and self.cluster.phase == "workload")

    def options(self, candidates: list[tuple[str, str, Any]]) -> list[Option]:
        """The options of this point; ``candidates`` are (src, dst, frame) of each
        deliverable entry, the earliest first."""
        w = self.window
        out = [Option("deliver", _deliver_label(*candidates[0]), 0,
                      chain=_chain(*candidates[0]))]
        if self.reorders_used < w.max_reorders:
            out += [Option("deliver", _deliver_label(*c), i, chain=_chain(*c))
                    for i, c in enumerate(candidates) if i > 0]
        now = self.cluster.sched.now
        if now != self._instant and now >= self._next_slot:
            self._instant = now
            self._fault_point = True
            if w.slot_us:
                self._next_slot = now - (now - w.from_us) % w.slot_us + w.slot_us
        if self._fault_point and self.faults_used < w.max_faults:
            for text, kind, target, duration in w.faults:
                if self._acts(kind, target):
                    out.append(Option("fault", text, plan=_plan(kind, target, duration),
                                      counts=True))
        if self._fault_point:
            for node, revert in sorted(self.held.items()):
                out.append(Option("fault", f"{revert} {node}", plan=_plan(revert, [node])))
            if self.cut:
                out.append(Option("fault", "heal", plan=_plan("heal", [])))
        return out

    def _acts(self, kind: str, target: tuple[str, ...]) -> bool:
        nodes = [n for t in target for n in self.cluster.resolve_target(t)]
        if not nodes:
            return False
        state = self.cluster.sched.nodes
        if kind in ("crash", "power_loss", "shutdown", "pause"):
            return all(n in state and state[n].state == "up" for n in nodes)
        return all(n in state for n in nodes)

    def decide(self, candidates: list[tuple[str, str, Any]]) -> int:
        """The candidate to deliver now; -1 when a fault was started (look again) or the
        run is pruned (the scheduler has been stopped)."""
        options = self.options(candidates)
        if len(options) == 1:   # not a choice: not a point
            self._fault_point = False
            return 0
        point = self.point
        self.point += 1
        w = self.window
        i = self.oracle.pick(point, options, self._state,
                             (w.max_faults - self.faults_used, w.max_reorders - self.reorders_used))
        if i == PRUNE:
            self.cluster.sched.stop()
            return -1
        opt = options[i]
        if i:
            self.cluster.sched.emit("sim", "explore", "choice", point=point, option=i,
                                    label=opt.label, options=len(options))
        if opt.kind == "deliver":
            self._fault_point = False
            if i:
                self.reorders_used += 1
            return opt.index
        assert opt.plan is not None
        self._start(opt)
        return -1

    def _state(self) -> bytes:
        """The cluster's digest and this driver's own part of the state: what its faults
        hold, and whether (and from when) faults may start."""
        now = self.cluster.sched.now
        own = (sorted(self.held.items()), self.cut, self._fault_point,
               self._next_slot - now if self.window.slot_us else 0)
        return self.digest() + repr(own).encode()

    def _start(self, opt: Option) -> None:
        plan = opt.plan
        assert plan is not None
        kind = str(plan["fault"])
        if opt.counts:
            self.faults_used += 1
        nodes = [n for t in plan["target"] for n in self.cluster.resolve_target(t)]
        if plan["duration_s"] > 0:
            pass   # it reverts by itself (Steered.start_fault: faults.plan.start_fault)
        elif kind in ("crash", "power_loss", "shutdown", "pause"):
            for n in nodes:
                self.held[n] = FAULT_REVERT[kind]
        elif kind in ("restart", "resume"):
            for n in nodes:
                self.held.pop(n, None)
        elif kind == "heal":
            self.cut = False
        else:
            self.cut = True
        self.cluster.start_fault({**plan, "target": nodes if kind != "heal" else [],
                                  "at_s": self.cluster.sched.now / US})


def _plan(kind: str, target: Sequence[str], duration_s: float = 0.0) -> dict[str, Any]:
    return {"fault": kind, "target": list(target), "duration_s": duration_s}


def _chain(src: str, dst: str, frame: Any) -> str:
    """The channel of a candidate: what stays FIFO whatever the explorer chooses."""
    if src == dst:
        return f"timer {dst}"
    return f"{src.partition('/')[0]}->{dst.partition('/')[0]}"


def _deliver_label(src: str, dst: str, frame: Any) -> str:
    if type(frame) is not bytes:
        kind = getattr(frame, "kind", "")
        return f"timer {dst} {type(frame).__name__}{f' {kind}' if kind else ''}"
    try:
        name = type(decode(frame)).__name__
    except FrameError:
        name = "corrupt"
    return f"deliver {src}->{dst} {name}"
