"""``isrlab explore``: bounded systematic exploration of faults and delivery orders.

Design note
-----------
Random campaigns find a bug; they never say there is none. ``explore`` enumerates every
schedule of a small scenario within bounds — where up to K of the scenario's candidate
faults start (and their reverts), which of the deliveries due together goes first, which
message is held back past another — and runs the real actors under each one, as TLC
enumerates the behaviours of a TLA+ spec, but on the code the campaigns run. The choice
points themselves live in the runtime (emulator.choice); this module only decides.

* **Re-execution, not snapshots.** A schedule is a list of option indices, one per point;
  each execution re-runs the scenario from the start under its prefix and takes option 0
  after it. A tiny variant runs in ~15 ms, so re-running the common prefix is cheaper than
  copying a cluster of Trio tasks, and it keeps every execution an ordinary run with an
  ordinary trace (bench/explore.py measures executions/s).
* **Depth-first with an odometer.** After an execution that reached points 0..L-1 with
  ``n_i`` options each, the next one takes the deepest point ``i`` with an untried option
  and its next option, the prefix before it unchanged. A search is cut into *units*: the
  all-default execution (the spine), then one depth-first subtree per first deviation from
  it (``[0]*p + [k]``: option ``k`` at point ``p``), the latest point first — one
  depth-first search's own order. Units run in this process or over ``--jobs`` workers;
  their results are merged in unit order, and each has its own state cache, so the
  counts and witnesses do not depend on how many workers ran them. ``--strategy bfs``
  runs such searches with a bound on the number of non-default choices, raised one at a
  time, so the first witness of each anomaly has the fewest choices; ``dfs`` goes straight
  to the full bounds; ``pct`` samples schedules at random (below).
* **State caching.** At every point past its prefix an execution computes the canonical
  digest of the whole cluster (emulator.digest: actors, disks, messages in flight, timers,
  the network, and the history the checker will judge). A state seen before with at least
  the budget left now (points, faults, reorders, choices) was or is being explored from
  there: the execution stops (pruned). Deliveries to different nodes commute, so the orders
  of independent deliveries reach one state and are explored once — the reduction sleep
  sets would give, found by the digest instead (a test compares cached and uncached
  searches on small bounds). The merge is only as sound as the digest; its
  normalisations are listed in emulator.digest.
* **Leaves.** An execution that is not pruned runs to its end — the scenario's heal phase
  and convergence check included — and the trace checker judges it. The anomalies that
  count are the scenario's forbidden and expected ones. For each kind the witness with the
  fewest non-default choices is kept (the first found on ties), written as a scenario file
  whose ``[explore] choices`` reproduce it and as its trace, so ``isrlab run``, ``replay``,
  ``check``, ``explain`` and ``report`` take it as it is.
* **pct**: PCTCP (Ozkan, Majumdar, Niksic, Befrouei, Weissenbacher, "Randomized testing of
  distributed systems with probabilistic guarantees", OOPSLA 2018), PCT adapted to message
  passing. The chains are the channels (a directed node pair's frames, an actor's timers:
  each is FIFO, so a chain's next message is its channel's candidate). Each execution
  gives every chain a random priority when it first appears, delivers at every point the
  candidate of the highest-priority chain (reordering at will within ``horizon_ms``:
  ``max_reorders`` is not a cap here but the bug depth aimed at, ``d - 1``), and at
  ``max_reorders`` change points drawn uniformly among the ``depth`` points lowers the
  chain about to be served below every other (the i-th change point to priority i). With
  ``max_reorders`` 0 nothing is reordered (every delivery keeps its order, so the points
  are where faults may start, as in bfs and dfs) and only the faults are drawn.
  Faults are not in PCTCP's theory: each execution draws a number ``m`` of fault points
  from 1 to ``n`` (``max_faults``, twice that when a candidate fault has no duration, for
  its revert), places them uniformly, and takes a uniformly random fault option at each.
  The guarantee it prints is PCTCP's bound times the chance of the fault draw: an
  execution hits a given bug of depth ``d`` whose ``m`` fault picks sit at given points
  with probability at least ``1/(c * k**(d-1)) * 1/(n * C(k, m) * F**m)`` (``c`` chains,
  ``k`` = depth points, at most ``F`` fault options; the least likely ``m`` is printed), so
  ``E`` executions miss it with probability at most ``(1 - p)**E``. It covers nothing
  completely and says so, but reaches deep bounds cheaply.

Determinism: the search order is a function of the scenario, seed and bounds; digests never
use ``hash()`` or addresses; so the same command gives the same executions, witnesses and
counts, with any ``--jobs``. What ends a search early ends it at a point that depends on
the machine: a budget in seconds always, a budget in executions with more than one job
(one job stops at exactly that many), and ``--stop-when-found`` stops at the end of the
unit in which the last expected anomaly was found.
"""

from __future__ import annotations

import copy
import io
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

import orjson

from emulator.choice import PRUNE, Option, Window
from emulator.cluster import run
from traces.checker import check_events
from traces.writer import TraceWriter

STRATEGIES: Final = ("dfs", "bfs", "pct")
#: the verdict of an execution whose actors raised (a model bug is a finding too)
ERROR_KIND: Final = "run_error"

Budget = tuple[int, int, int, int]   # points, faults, reorders, choices left


@dataclass
class Witness:
    kind: str
    choices: list[dict[str, Any]]
    execution: int
    count: int   # how many of that anomaly the trace shows


@dataclass
class Summary:
    scenario: str
    strategy: str
    depth: int
    max_faults: int
    max_reorders: int
    horizon_ms: float
    executions: int = 0
    pruned: int = 0
    leaves: int = 0
    points: int = 0
    states: int = 0
    complete: bool = False
    seconds: float = 0.0
    bound_choices: int = -1       # bfs: the choice bound fully covered (-1: none)
    witnesses: dict[str, Witness] = field(default_factory=dict)
    #: pct: the most chains and fault options any execution saw, and its fault points
    chains: int = 0
    fault_options: int = 0
    fault_points: int = 0

    def pct_bound(self) -> tuple[float, float]:
        """pct: (p, miss) — the least chance that one execution hits a given bug of depth
        ``max_reorders + 1`` with its faults at given points, and the most that every
        execution so far missed it (see the module note)."""
        c, k, n = max(1, self.chains), max(1, self.depth), self.fault_points
        # without reorderings (R = 0, no chains ranked) every order is the ordinary one
        p = 1.0 / (c * k ** self.max_reorders) if self.chains else 1.0
        if n:   # m fault points (m drawn from 1..n), the least likely m
            f = max(1, self.fault_options)
            p /= n * max(math.comb(k, m) * f ** m for m in range(1, min(n, k) + 1))
        return p, (1.0 - p) ** self.executions

    def statement(self) -> str:
        if self.witnesses:
            return "found " + ", ".join(sorted(self.witnesses))
        if self.complete:
            return (f"no anomaly within {self.max_faults} faults, {self.max_reorders} "
                    f"reorderings and depth {self.depth} ({self.states} distinct states)")
        if self.strategy == "pct":
            p, miss = self.pct_bound()
            return (f"no anomaly found in {self.executions} random executions (PCTCP: a bug "
                    f"of depth {self.max_reorders + 1} within depth {self.depth} "
                    f"({self.chains} chains ranked), with its {self.fault_points} fault points of "
                    f"at most {self.fault_options} options placed, is hit by each with "
                    f"probability >= {p:.3g}; missed by all with probability <= "
                    f"{miss:.6g}); nothing is covered completely")
        return (f"no anomaly found in {self.executions} executions ({self.states} distinct "
                f"states); the bounds were not covered completely")

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario, "strategy": self.strategy, "depth": self.depth,
            "max_faults": self.max_faults, "max_reorders": self.max_reorders,
            "horizon_ms": self.horizon_ms, "executions": self.executions,
            "pruned": self.pruned, "leaves": self.leaves, "points": self.points,
            "distinct_states": self.states, "complete": self.complete,
            "bound_choices": self.bound_choices, "seconds": round(self.seconds, 3),
            **({"pct": {"chains": self.chains, "fault_points": self.fault_points,
                        "fault_options": self.fault_options,
                        "p_hit": self.pct_bound()[0], "p_miss": self.pct_bound()[1]}}
               if self.strategy == "pct" else {}),
            "statement": self.statement(),
            "witnesses": {k: {"choices": w.choices, "execution": w.execution,
                              "count": w.count}
                          for k, w in sorted(self.witnesses.items())},
        }


class StateCache:
    """digest -> the budgets it was explored with; a state is new unless one dominates."""

    def __init__(self) -> None:
        self.seen: dict[bytes, list[Budget]] = {}

    def visit(self, key: bytes, budget: Budget) -> bool:
        """True when ``key`` must be explored with ``budget`` (and remember it)."""
        old = self.seen.get(key)
        if old is None:
            self.seen[key] = [budget]
            return True
        for b in old:
            if all(x >= y for x, y in zip(b, budget, strict=True)):
                return False
        old.append(budget)
        return True


class _Execution:
    """The oracle of one execution: follows ``prefix``, then option 0 (or, for pct, a
    random option at its change points)."""

    def __init__(self, prefix: list[int], cache: StateCache | None, depth: int,
                 max_choices: int, change: dict[int, float] | None = None) -> None:
        self.prefix = prefix
        self.cache = cache
        self.depth = depth
        self.max_choices = max_choices
        self.change = change
        self.taken: list[int] = []
        self.counts: list[int] = []    # options that may still be tried at each point
        self.choices = 0
        self.pruned = False
        self.labels: dict[int, str] = {}   # point -> label of a non-default choice

    def pick(self, point: int, options: list[Option], state: Callable[[], bytes],
             left: tuple[int, int]) -> int:
        n = len(options)
        eff = n if self.choices < self.max_choices else 1
        if point < len(self.prefix):
            i = self.prefix[point]
        else:
            if self.cache is not None and not self.cache.visit(
                    state(), (self.depth - point, *left, self.max_choices - self.choices)):
                self.pruned = True
                self.taken.append(0)
                self.counts.append(1)
                return PRUNE
            i = 0
            if self.change is not None and point in self.change and eff > 1:
                i = 1 + int(self.change[point] * (n - 1))
        self.taken.append(i)
        self.counts.append(eff)
        if i:
            self.choices += 1
            self.labels[point] = options[i].label
        return i


class _PctExecution(_Execution):
    """The oracle of one pct execution (PCTCP, see the module note)."""

    def __init__(self, depth: int, seed: int, change_points: list[int],
                 fault_points: dict[int, float]) -> None:
        super().__init__([], None, depth, 1 << 30)
        self.rng = random.Random(seed)
        self.d = len(change_points) + 1
        #: the i-th change point (from 1) lowers the chain about to be served to priority i
        self.lower = {p: i + 1 for i, p in enumerate(sorted(change_points))}
        self.fault_points = fault_points
        self.priority: dict[str, float] = {}
        self.fault_options = 0

    def _top(self, options: list[Option]) -> int:
        best, top = -1.0, 0
        for i, o in enumerate(options):
            if o.kind != "deliver":
                continue
            prio = self.priority.get(o.chain)
            if prio is None:   # a chain seen for the first time: a random initial priority
                prio = self.priority[o.chain] = self.d + self.rng.random()
            if prio > best:
                best, top = prio, i
        return top

    def pick(self, point: int, options: list[Option], state: Callable[[], bytes],
             left: tuple[int, int]) -> int:
        faults = [i for i, o in enumerate(options) if o.kind == "fault"]
        self.fault_options = max(self.fault_options, len(faults))
        if point in self.fault_points and faults:
            i = faults[int(self.fault_points[point] * len(faults))]
        else:
            i = self._top(options)
            if point in self.lower:
                self.priority[options[i].chain] = self.lower[point]
                i = self._top(options)
        self.taken.append(i)
        self.counts.append(len(options))
        if i:
            self.choices += 1
            self.labels[point] = options[i].label
        return i


def _next_prefix(taken: list[int], counts: list[int], floor: int = 0) -> list[int] | None:
    """The next schedule depth first: the deepest point at or after ``floor`` with an
    untried option takes it."""
    for i in range(len(taken) - 1, floor - 1, -1):
        if taken[i] + 1 < counts[i]:
            return [*taken[:i], taken[i] + 1]
    return None


@dataclass
class UnitResult:
    """What the search of one unit — the subtree of schedules whose first non-default
    choice is ``root``'s last — found; merged by the explorer in unit order."""

    executions: int = 0
    pruned: int = 0
    leaves: int = 0
    points: int = 0
    states: set[bytes] = field(default_factory=set)
    witnesses: dict[str, Witness] = field(default_factory=dict)
    complete: bool = True
    #: the options at each point of the unit's first execution (the spine's: the units)
    counts: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Unit:
    """One piece of a search: a depth-first search under ``root`` that backtracks only at
    points after it (``spine``: the single all-default execution)."""

    sc: dict[str, Any]
    seed: int
    kinds: tuple[str, ...]
    expected: tuple[str, ...]
    root: tuple[int, ...]
    max_choices: int
    cache: bool
    spine: bool = False
    max_executions: int = 0
    deadline: float = 0.0          # time.monotonic() (system-wide on Linux); 0: none
    stop_when_found: bool = False


def run_unit(unit: Unit, progress: Callable[[UnitResult], None] | None = None
             ) -> UnitResult:
    """Search one unit (in this process or a worker's)."""

    def _past(deadline: float) -> bool:
        return time.monotonic() >= deadline  # nondeterminism-ok: budget ends search only

    r = UnitResult()
    cache = StateCache() if unit.cache else None
    depth = unit.sc["explore"]["depth"]
    floor = len(unit.root)
    prefix: list[int] | None = list(unit.root)
    while prefix is not None:
        if ((unit.max_executions and r.executions >= unit.max_executions)
                or (unit.deadline and _past(unit.deadline))
                or (unit.stop_when_found and unit.expected
                    and all(k in r.witnesses for k in unit.expected))):
            r.complete = False
            break
        oracle = _Execution(prefix, cache, depth, unit.max_choices)
        _execute(unit, oracle, r)
        if not r.counts:
            r.counts = list(oracle.counts)
        prefix = None if unit.spine else _next_prefix(oracle.taken, oracle.counts, floor)
        if progress is not None:
            progress(r)
    if cache is not None:
        r.states = set(cache.seen)
    return r


def _execute(unit: Unit, oracle: _Execution, r: UnitResult) -> None:
    buf = io.BytesIO()
    res = run(unit.sc, unit.seed, None, writer=TraceWriter(None, buffer=buf), oracle=oracle)
    if res.status == "aborted":   # SIGINT or SIGTERM during the run: the search ends
        raise KeyboardInterrupt
    r.executions += 1
    r.points += len(oracle.taken)
    if oracle.pruned:
        r.pruned += 1
        return
    r.leaves += 1
    found: dict[str, int] = {}
    if res.status == "error":
        found[ERROR_KIND] = 1
    else:
        result = check_events(orjson.loads(line) for line in buf.getvalue().splitlines())
        found = {k: n for k, n in result.anomalies.items() if n and k in unit.kinds}
    for kind, n in found.items():
        choices = [{"point": p, "option": i, "label": oracle.labels[p]}
                   for p, i in enumerate(oracle.taken) if i]
        old = r.witnesses.get(kind)
        if old is None or len(choices) < len(old.choices):
            r.witnesses[kind] = Witness(kind, choices, r.executions, n)


class Explorer:
    def __init__(self, sc: dict[str, Any], seed: int, *, strategy: str = "bfs",
                 max_executions: int = 0, max_seconds: float = 0.0, cache: bool = True,
                 stop_when_found: bool = False, jobs: int = 1,
                 progress: TextIO | None = None) -> None:
        if "explore" not in sc:
            raise ValueError("the scenario has no [explore] table")
        self.sc = copy.deepcopy(sc)
        self.sc["explore"].pop("choices", None)
        self.seed = seed
        self.strategy = strategy
        self.max_executions = max_executions
        self.max_seconds = max_seconds
        self.use_cache = cache
        #: stop once each of the scenario's expected anomalies has a witness
        self.stop_when_found = stop_when_found
        self.jobs = max(1, jobs)
        self.progress = progress
        ex = self.sc["explore"]
        self.summary = Summary(sc["name"], strategy, ex["depth"], ex["max_faults"],
                               ex["max_reorders"], float(ex["horizon_ms"]))
        exp = sc["expect"]
        # what the scenario says matters: the anomalies it expects (its bug) and those it
        # forbids (DEFAULT_FORBID unless it says otherwise: a scenario with unclean
        # elections allows lost writes, one under acks=1 allows them too)
        self.kinds = tuple(sorted({*exp["forbid"], *exp["anomalies"]}))
        self._t0 = 0.0
        self._last_report = 0.0
        self._states: set[bytes] = set()
        self._frontier = 0

    # -- merging and budgets ----------------------------------------------------------------
    def _merge(self, r: UnitResult) -> None:
        s = self.summary
        for kind, w in sorted(r.witnesses.items()):
            old = s.witnesses.get(kind)
            if old is None or len(w.choices) < len(old.choices):
                s.witnesses[kind] = Witness(kind, w.choices, s.executions + w.execution,
                                            w.count)
        s.executions += r.executions
        s.pruned += r.pruned
        s.leaves += r.leaves
        s.points += r.points
        self._states |= r.states
        s.states = len(self._states)

    def _out_of_budget(self) -> bool:
        s = self.summary
        if self.max_executions and s.executions >= self.max_executions:
            return True
        elapsed = time.monotonic() - self._t0  # nondeterminism-ok: --budget, never traced
        return bool(self.max_seconds) and elapsed >= self.max_seconds

    def _expected_found(self) -> bool:
        expected = self.sc["expect"]["anomalies"]
        return bool(expected) and all(k in self.summary.witnesses for k in expected)

    def _report(self, extra: UnitResult | None = None) -> None:
        if self.progress is None:
            return
        now = time.monotonic()  # nondeterminism-ok: progress lines only
        if now - self._last_report < 1.0:
            return
        self._last_report = now
        s = self.summary
        execs = s.executions + (extra.executions if extra is not None else 0)
        elapsed = max(now - self._t0, 1e-9)
        line = (f"explore: {execs} executions ({execs / elapsed:.0f}/s), {s.states} states "
                f"({s.states / elapsed:.0f}/s), {self._frontier} subtrees to go, found "
                f"{', '.join(sorted(s.witnesses)) or 'nothing'}")
        end = "\r" if self.progress.isatty() else "\n"
        self.progress.write(line + end)
        self.progress.flush()

    # -- strategies -------------------------------------------------------------------------
    def explore(self) -> Summary:
        """Search; an interrupt (KeyboardInterrupt) leaves what was found in ``summary``."""
        self._t0 = time.monotonic()   # nondeterminism-ok: the budget's start, reported only
        try:
            self._explore()
        finally:
            self.summary.seconds = time.monotonic() - self._t0  # nondeterminism-ok: report only
            if self.progress is not None and self.progress.isatty():
                self.progress.write("\n")
        return self.summary

    def _explore(self) -> None:
        s = self.summary
        ex = self.sc["explore"]
        if self.strategy == "pct":
            self._pct(ex)
        elif self.strategy == "dfs":
            s.complete = self._search(1 << 30)
            s.bound_choices = 2 * ex["max_faults"] + ex["max_reorders"] if s.complete else -1
        else:
            # no run makes more choices than its faults, their reverts and its reorderings
            most = min(ex["depth"], 2 * ex["max_faults"] + ex["max_reorders"])
            for bound in range(most + 1):
                if not self._search(bound):
                    break
                s.bound_choices = bound
                if self.stop_when_found and self._expected_found():
                    break
            s.complete = s.bound_choices == most

    def _unit(self, root: tuple[int, ...], max_choices: int, *, spine: bool = False) -> Unit:
        left = max(0, self.max_executions - self.summary.executions) \
            if self.max_executions else 0
        return Unit(self.sc, self.seed, self.kinds, tuple(self.sc["expect"]["anomalies"]),
                    root, max_choices, self.use_cache, spine,
                    max_executions=left if self.jobs == 1 else 0,
                    deadline=self._t0 + self.max_seconds if self.max_seconds else 0.0,
                    stop_when_found=self.stop_when_found)

    def _search(self, max_choices: int) -> bool:
        """Every schedule within a choice bound, unit by unit: the all-default execution
        (the spine), then one depth-first search per first deviation from it, the latest
        point first — in this process, or over ``jobs`` workers with the results merged in
        that same order. True when it covered everything."""
        if self._out_of_budget():
            return False
        spine = run_unit(self._unit((), max_choices, spine=True))
        self._merge(spine)
        # the deepest first deviation first: the order of one depth-first search over the
        # whole tree, where small subtrees near the leaves come before the large ones
        units = [tuple([0] * p + [k]) for p in reversed(range(len(spine.counts)))
                 for k in range(1, spine.counts[p])]
        self._frontier = len(units)
        if self.jobs == 1:
            for root in units:
                if self._out_of_budget() or (self.stop_when_found and self._expected_found()):
                    return False
                r = run_unit(self._unit(root, max_choices), self._report)
                self._merge(r)
                self._frontier -= 1
                if not r.complete:
                    return False
            return True
        return self._parallel(units, max_choices)

    def _parallel(self, units: list[tuple[int, ...]], max_choices: int) -> bool:
        from faults.campaign import process_pool

        pool = process_pool(min(self.jobs, max(1, len(units))))
        try:
            futures = [pool.submit(run_unit, self._unit(root, max_choices)) for root in units]
            for fut in futures:
                r = fut.result()
                self._merge(r)
                self._frontier -= 1
                self._report()
                if not r.complete or self._out_of_budget() or (
                        self.stop_when_found and self._expected_found()):
                    return False
            return True
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _pct(self, ex: dict[str, Any]) -> None:
        rng = random.Random(f"isrlab-explore-pct/{self.seed}")
        depth, s = ex["depth"], self.summary
        changes = min(ex["max_reorders"], depth)
        faults = Window.of(ex).faults
        # a fault without a duration needs a point for its revert as well
        s.fault_points = min(depth, ex["max_faults"] * (
            2 if any(duration <= 0 for *_, duration in faults) else 1)) if faults else 0
        # PCTCP reorders wherever the priorities say: every run may deviate at every point
        # (a witness keeps this bound, so that it replays). Without reorderings in the
        # bounds (R = 0) deliveries keep their order and only the faults are drawn: the
        # points are then where faults may start, as in bfs and dfs
        if changes:
            ex["max_reorders"] = depth
        while not self._out_of_budget() and not (self.stop_when_found
                                                  and self._expected_found()):
            change = rng.sample(range(depth), changes) if depth else []
            # how many fault points this execution has is drawn too (1 to n): a bug that
            # needs fewer faults than the bound allows is not undone by the extra ones
            m = rng.randint(1, s.fault_points) if s.fault_points else 0
            fault_at = sorted(rng.sample(range(depth), m)) if depth else []
            oracle = _PctExecution(depth, rng.getrandbits(64), change,
                                   {p: rng.random() for p in fault_at})
            r = UnitResult()
            _execute(self._unit((), 1 << 30, spine=True), oracle, r)
            if changes:
                s.chains = max(s.chains, len(oracle.priority))
            s.fault_options = max(s.fault_options, oracle.fault_options)
            self._merge(r)
            self._report()
