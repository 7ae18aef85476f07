"""Delta debugging: minimal failing lists, bounded oracle calls, deterministic search."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from faults.shrink import InputDoesNotFail, ddmin, shrink


class Recorder:
    """A toy oracle that records every candidate it is asked about."""

    def __init__(self, fails: Callable[[list[int]], bool]) -> None:
        self._fails = fails
        self.asked: list[list[int]] = []

    def __call__(self, candidate: list[int]) -> bool:
        self.asked.append(list(candidate))
        return self._fails(candidate)


def needs_all(*culprits: int) -> Callable[[list[int]], bool]:
    return lambda c: all(x in c for x in culprits)


def is_one_minimal(result: list[int], fails: Callable[[list[int]], bool]) -> bool:
    return fails(result) and not any(
        fails(result[:i] + result[i + 1 :]) for i in range(len(result))
    )


# --- ddmin --------------------------------------------------------------------------------


def test_ddmin_finds_exactly_the_two_culprits_among_forty() -> None:
    result = ddmin(list(range(40)), needs_all(3, 17))
    assert result.items == [3, 17]
    assert result.stats.size_before == 40
    assert result.stats.size_after == 2
    assert not result.stats.exhausted


def test_ddmin_needs_far_fewer_calls_than_trying_every_subset() -> None:
    result = ddmin(list(range(40)), needs_all(3, 17))
    assert result.stats.calls <= 60  # O(k log n), not 2**40


def test_ddmin_counts_every_oracle_call_and_never_repeats_a_candidate() -> None:
    oracle = Recorder(needs_all(3, 17))
    result = ddmin(list(range(40)), oracle)
    assert result.stats.calls == len(oracle.asked)
    assert len({tuple(c) for c in oracle.asked}) == len(oracle.asked)


def test_ddmin_keeps_input_order_in_candidates_and_result() -> None:
    oracle = Recorder(needs_all(30, 5, 12))
    result = ddmin(list(range(40)), oracle)
    assert result.items == [5, 12, 30]
    assert all(c == sorted(c) for c in oracle.asked)


def test_ddmin_finds_a_single_culprit() -> None:
    assert ddmin(list(range(100)), needs_all(63)).items == [63]


def test_ddmin_returns_the_empty_list_when_the_failure_needs_no_item() -> None:
    result = ddmin(list(range(10)), lambda c: True)
    assert result.items == []


def test_ddmin_result_is_one_minimal_for_random_monotone_failures() -> None:
    rng = random.Random(2024)
    for _ in range(50):
        size = rng.randrange(1, 60)
        groups = [
            rng.sample(range(size), rng.randrange(1, min(size, 3) + 1))
            for _ in range(rng.randrange(1, 4))
        ]

        def fails(c: list[int], groups: list[list[int]] = groups) -> bool:
            return any(all(x in c for x in g) for g in groups)

        result = ddmin(list(range(size)), fails)
        assert is_one_minimal(result.items, fails), (size, groups, result.items)


def test_ddmin_result_is_one_minimal_even_for_non_monotone_failures() -> None:
    # Fails on an even count of items >= 4: adding an item can make it pass again.
    def fails(c: list[int]) -> bool:
        return len(c) >= 4 and len(c) % 2 == 0

    result = ddmin(list(range(32)), fails)
    assert is_one_minimal(result.items, fails)


def test_ddmin_is_deterministic() -> None:
    first, second = Recorder(needs_all(7, 8, 33)), Recorder(needs_all(7, 8, 33))
    assert ddmin(list(range(50)), first) == ddmin(list(range(50)), second)
    assert first.asked == second.asked


def test_ddmin_works_on_unhashable_items() -> None:
    items = [{"fault": "crash", "node": n} for n in range(12)]
    result = ddmin(items, lambda c: {"fault": "crash", "node": 9} in c)
    assert result.items == [{"fault": "crash", "node": 9}]


def test_ddmin_stops_at_the_budget_with_the_best_failing_list_so_far() -> None:
    fails = needs_all(3, 17)
    oracle = Recorder(fails)
    result = ddmin(list(range(40)), oracle, budget=6)
    assert result.stats.exhausted
    assert result.stats.calls == len(oracle.asked) == 6
    assert fails(result.items)
    assert 2 < len(result.items) < 40
    smallest_failing = min((c for c in oracle.asked if fails(c)), key=len)
    assert result.items == smallest_failing


def test_ddmin_with_a_zero_budget_returns_the_input_unexamined() -> None:
    oracle = Recorder(needs_all(3))
    result = ddmin(list(range(5)), oracle, budget=0)
    assert result.items == [0, 1, 2, 3, 4]
    assert result.stats.exhausted
    assert oracle.asked == []


def test_ddmin_checks_first_that_the_input_fails() -> None:
    oracle = Recorder(needs_all(99))
    with pytest.raises(InputDoesNotFail):
        ddmin(list(range(10)), oracle)
    assert oracle.asked == [list(range(10))]


def test_ddmin_can_trust_the_caller_that_the_input_fails() -> None:
    oracle = Recorder(needs_all(3, 17))
    result = ddmin(list(range(40)), oracle, check_input=False)
    assert result.items == [3, 17]
    assert list(range(40)) not in oracle.asked


# --- shrink: ddmin plus item simplification -----------------------------------------------


def shorter(duration: int) -> list[int]:
    """Smaller variants of a fault duration, smallest first."""
    return [d for d in (0, duration // 2, duration - 1) if 0 <= d < duration]


def test_shrink_removes_items_then_simplifies_the_rest() -> None:
    # Faults are durations; the bug needs two faults that last at least 10 and 3.
    def fails(c: list[int]) -> bool:
        return sum(1 for d in c if d >= 10) >= 1 and sum(1 for d in c if d >= 3) >= 2

    plan = [1, 50, 2, 7, 1, 40, 0]
    result = shrink(plan, fails, shorter)
    assert sorted(result.items) == [3, 10]
    assert result.stats.size_before == 7
    assert result.stats.size_after == 2
    assert result.stats.simplified > 0
    assert not result.stats.exhausted


def test_shrink_reruns_ddmin_when_a_simplified_item_makes_another_redundant() -> None:
    # Two faults adding up to 10 fail, and so does any zero-length fault on its own. ddmin
    # alone keeps [6, 6]; simplifying turns a 6 into a 0, after which the other 6 can go.
    def fails(c: list[int]) -> bool:
        return sum(c) >= 10 or 0 in c

    assert ddmin([6, 6], fails).items == [6, 6]
    result = shrink([6, 6], fails, shorter)
    assert result.items == [0]
    assert result.stats.rounds >= 2


def test_shrink_without_simpler_variants_is_ddmin() -> None:
    items = list(range(40))
    assert (
        shrink(items, needs_all(3, 17), lambda _: []).items == ddmin(items, needs_all(3, 17)).items
    )


def test_shrink_stops_at_the_budget_with_a_failing_list() -> None:
    def fails(c: list[int]) -> bool:
        return any(d >= 5 for d in c)

    oracle = Recorder(fails)
    result = shrink([100, 200, 300], oracle, lambda d: [d - 1] if d > 0 else [], budget=20)
    assert result.stats.exhausted
    assert result.stats.calls == 20
    assert fails(result.items)


def test_shrink_budget_bounds_a_cyclic_simplify() -> None:
    # 1 simplifies to 0 and 0 to 1, and both fail: only the budget ends it.
    result = shrink([1], lambda c: len(c) == 1, lambda d: [1 - d], budget=10)
    assert result.stats.exhausted
    assert result.stats.calls == 10
