"""Kafka's ``org.apache.kafka.common.utils.Timer`` as a deadline on the caller's clock.

Kafka's epoch states hold ``Timer`` objects that read a ``Time``; here a timer is the
absolute deadline in milliseconds of whatever clock the shell runs (virtual time), and every
question about it takes ``now_ms``. ``Timer.isExpired`` is ``now >= deadline`` and
``remainingMs`` is ``max(0, deadline - now)``; a timeout of ``Long.MAX_VALUE`` (an observer's
election timer) never expires: :data:`FOREVER`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Java's ``Long.MAX_VALUE``: "never", as Kafka's timers and poll timeouts use it.
FOREVER: Final = 2**63 - 1


@dataclass(slots=True)
class Deadline:
    """A timer started at some ``now_ms`` for ``timeout_ms`` (``Time.timer(timeoutMs)``)."""

    deadline_ms: int

    @staticmethod
    def after(now_ms: int, timeout_ms: int) -> Deadline:
        """``time.timer(timeoutMs)``: a deadline ``timeout_ms`` from ``now_ms`` (capped)."""
        return Deadline(min(FOREVER, now_ms + timeout_ms))

    def reset(self, now_ms: int, timeout_ms: int) -> None:
        """``timer.update(now); timer.reset(timeoutMs)``."""
        self.deadline_ms = min(FOREVER, now_ms + timeout_ms)

    def expired(self, now_ms: int) -> bool:
        return now_ms >= self.deadline_ms

    def remaining_ms(self, now_ms: int) -> int:
        if self.deadline_ms == FOREVER:
            return FOREVER
        return max(0, self.deadline_ms - now_ms)
