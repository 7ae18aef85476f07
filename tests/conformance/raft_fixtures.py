"""Shared pieces of the Raft conformance tests (issue 52): a ``random.Random`` whose draws a
test can pin, as Kafka's ``MockableRandom`` does for the election jitter and backoff."""

from __future__ import annotations

import random


class MockableRandom(random.Random):
    """Kafka's ``MockableRandom``: ``mock_next_int(value)`` makes every ``randrange(bound)``
    return ``value``; ``mock_next_int(value, bound)`` only the draws below ``bound``."""

    def __init__(self, seed: int = 1) -> None:
        super().__init__(seed)
        self._value: int | None = None
        self._bound: int | None = None

    def mock_next_int(self, value: int, bound: int | None = None) -> None:
        self._value, self._bound = value, bound

    def randrange(self, start: int, stop: int | None = None,
                  step: int = 1) -> int:
        if stop is None and self._value is not None and self._bound in (None, start):
            return self._value
        return super().randrange(start, stop, step)
