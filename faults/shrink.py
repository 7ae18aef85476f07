"""Delta debugging: shrink a failing list (a fault plan) to a minimal failing one.

``isrlab shrink TRACE`` turns a failing campaign run into the smallest fault plan that still
fails. This module is the search, kept generic and pure: it sees a list of items and an
oracle ``fails(candidate) -> bool`` (for the CLI: "re-run the scenario with this plan and
the checker reports the anomaly") and knows nothing about faults, traces or the emulator.

Algorithm
---------
:func:`ddmin` is Zeller and Hildebrandt's *ddmin* ("Simplifying and Isolating
Failure-Inducing Input", TSE 2002). Split the current failing list into ``n`` nearly equal
chunks; if one chunk fails, keep it (``n = 2``); else if the list minus one chunk fails, keep
that (``n = n - 1``); else split finer (``n = 2n``) until the chunks are single items. The
result is *1-minimal*: removing any one item makes the failure go away (for a one-item result
that includes the empty list, which ddmin therefore tries). It needs ``O(k log n)`` oracle
calls for ``k`` relevant items out of ``n`` when failures are monotone, ``O(n^2)`` at worst.

:func:`shrink` adds a second axis: after ddmin removed what it can, each remaining item is
replaced by the first failing variant from ``simplify(item)`` (a shorter partition, a
smaller delay), repeatedly, then ddmin runs again because a simpler item can make others
redundant; this alternates until nothing changes. ``simplify`` should list smaller variants
first, and should be well-founded (no cycles), though the budget stops a cycle anyway.

Contract
--------
* Deterministic: the oracle is called on the same candidates in the same order for the same
  input; nothing here uses randomness, clocks or hashing of items.
* Candidates are always sub-lists of the input in the input's order (ddmin) or that with some
  items replaced by their variants (simplification); every call gets a fresh list.
* ddmin never asks the oracle the same subset twice (answers are cached by item positions).
  The oracle is assumed deterministic; a flaky one gives a result that failed *once*.
* Bounded: at most ``budget`` oracle calls. When the budget runs out the best failing list
  found so far is returned with ``stats.exhausted = True`` (it fails, but may not be
  1-minimal).
* The input is checked to fail first (one call) unless ``check_input=False``;
  :class:`InputDoesNotFail` is raised when it does not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = [
    "DEFAULT_BUDGET",
    "InputDoesNotFail",
    "ShrinkResult",
    "ShrinkStats",
    "ddmin",
    "shrink",
]

T = TypeVar("T")

#: Oracle calls allowed when the caller names no budget.
DEFAULT_BUDGET: Final = 1000

#: Rounds of "ddmin, then simplify items" in :func:`shrink` at most.
MAX_ROUNDS: Final = 32


class InputDoesNotFail(ValueError):
    """The list given to shrink does not fail, so there is nothing to shrink."""


@dataclass(frozen=True, slots=True)
class ShrinkStats:
    """What a shrink cost and achieved."""

    calls: int  #: oracle calls made
    cache_hits: int  #: candidates answered from the cache instead of the oracle
    size_before: int
    size_after: int
    budget: int
    exhausted: bool  #: stopped by the budget: the result fails but may not be 1-minimal
    simplified: int = 0  #: items replaced by a simpler variant (``shrink`` only)
    rounds: int = 0  #: ddmin + simplify rounds (``shrink`` only)


@dataclass(frozen=True, slots=True)
class ShrinkResult(Generic[T]):
    """The smallest failing list found, and the statistics of the search."""

    items: list[T]
    stats: ShrinkStats


class _OutOfBudget(Exception):
    pass


class _Oracle(Generic[T]):
    """Counts oracle calls against the budget; one instance spans a whole shrink."""

    __slots__ = ("budget", "cache_hits", "calls", "fails")

    def __init__(self, fails: Callable[[list[T]], bool], budget: int) -> None:
        if budget < 0:
            raise ValueError(f"budget must be >= 0, got {budget}")
        self.fails = fails
        self.budget = budget
        self.calls = 0
        self.cache_hits = 0

    def ask(self, candidate: list[T]) -> bool:
        if self.calls >= self.budget:
            raise _OutOfBudget
        self.calls += 1
        return bool(self.fails(candidate))


def _split(config: tuple[int, ...], n: int) -> list[tuple[int, ...]]:
    """``config`` cut into ``n`` contiguous chunks whose sizes differ by at most one."""
    chunks = []
    start = 0
    for i in range(n):
        stop = start + (len(config) - start) // (n - i)
        chunks.append(config[start:stop])
        start = stop
    return chunks


class _DDMin(Generic[T]):
    """One ddmin pass over ``items``; ``best`` is the smallest failing configuration so far."""

    def __init__(self, items: Sequence[T], oracle: _Oracle[T]) -> None:
        self.items = items
        self.oracle = oracle
        self.cache: dict[tuple[int, ...], bool] = {}
        self.best: tuple[int, ...] = tuple(range(len(items)))

    def test(self, config: tuple[int, ...]) -> bool:
        known = self.cache.get(config)
        if known is not None:
            self.oracle.cache_hits += 1
            return known
        result = self.oracle.ask([self.items[i] for i in config])
        self.cache[config] = result
        if result and len(config) < len(self.best):
            self.best = config
        return result

    def run(self) -> None:
        """Shrink ``best``; raises ``_OutOfBudget`` part-way, leaving ``best`` valid."""
        current = self.best
        n = 2
        while len(current) >= 2:
            chunks = _split(current, n)
            reduced = next((c for c in chunks if self.test(c)), None)
            if reduced is not None:
                current, n = reduced, 2
                continue
            if n > 2:  # with two chunks the complements are the chunks, already tested
                for i in range(n):
                    complement = tuple(x for j, c in enumerate(chunks) if j != i for x in c)
                    if self.test(complement):
                        reduced = complement
                        break
                if reduced is not None:
                    current, n = reduced, max(n - 1, 2)
                    continue
            if n >= len(current):
                break
            n = min(2 * n, len(current))
        if len(current) == 1:
            # 1-minimality of a single item: does the failure need it at all?
            self.test(())


def _check_input(items: list[T], oracle: _Oracle[T]) -> None:
    if not oracle.ask(list(items)):
        raise InputDoesNotFail(f"the input ({len(items)} items) does not fail")


def ddmin(
    items: Sequence[T],
    fails: Callable[[list[T]], bool],
    *,
    budget: int = DEFAULT_BUDGET,
    check_input: bool = True,
) -> ShrinkResult[T]:
    """A 1-minimal failing sub-list of ``items`` (in input order), within ``budget`` calls."""
    oracle: _Oracle[T] = _Oracle(fails, budget)
    current = list(items)
    try:
        if check_input:
            _check_input(current, oracle)
    except _OutOfBudget:
        exhausted = True
    else:
        current, exhausted = _ddmin_pass(current, oracle)
    return ShrinkResult(
        current,
        ShrinkStats(
            calls=oracle.calls,
            cache_hits=oracle.cache_hits,
            size_before=len(items),
            size_after=len(current),
            budget=budget,
            exhausted=exhausted,
        ),
    )


def _ddmin_pass(items: list[T], oracle: _Oracle[T]) -> tuple[list[T], bool]:
    """Run ddmin: the best failing list found, and whether the budget ran out."""
    search = _DDMin(items, oracle)
    try:
        search.run()
    except _OutOfBudget:
        return [items[i] for i in search.best], True
    return [items[i] for i in search.best], False


def shrink(
    items: Sequence[T],
    fails: Callable[[list[T]], bool],
    simplify: Callable[[T], Sequence[T]],
    *,
    budget: int = DEFAULT_BUDGET,
    check_input: bool = True,
    max_rounds: int = MAX_ROUNDS,
) -> ShrinkResult[T]:
    """ddmin, then replace items by simpler failing variants, alternating to a fixpoint.

    ``simplify(item)`` lists smaller variants of ``item``, preferred (smallest) first; an
    empty list means the item is as simple as it gets.
    """
    oracle: _Oracle[T] = _Oracle(fails, budget)
    current = list(items)
    exhausted = False
    simplified = 0
    rounds = 0
    try:
        if check_input:
            _check_input(current, oracle)
        while rounds < max_rounds:
            rounds += 1
            current, exhausted = _ddmin_pass(current, oracle)
            if exhausted:
                break
            changed = False
            for i in range(len(current)):
                while True:  # keep simplifying item i until no variant of it fails
                    for variant in simplify(current[i]):
                        candidate = [*current[:i], variant, *current[i + 1 :]]
                        if oracle.ask(candidate):
                            current = candidate
                            simplified += 1
                            changed = True
                            break
                    else:
                        break
            if not changed:
                break
    except _OutOfBudget:
        exhausted = True  # `current` is the last list that failed
    return ShrinkResult(
        current,
        ShrinkStats(
            calls=oracle.calls,
            cache_hits=oracle.cache_hits,
            size_before=len(items),
            size_after=len(current),
            budget=budget,
            exhausted=exhausted,
            simplified=simplified,
            rounds=rounds,
        ),
    )
