"""Replication throttles: Kafka's ``ReplicationQuotaManager`` (one per broker and side).

A reassignment started with ``--throttle`` (``kafka-reassign-partitions``) sets, on every
broker involved, ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (bytes/s), and on the moving topics
``leader.replication.throttled.replicas`` (the existing replicas, which may lead) and
``follower.replication.throttled.replicas`` (the replicas being added); ``--verify`` removes
them once the move is done. The broker's quota for a side then:

* says whether a partition is throttled on this broker (``isThrottled``);
* measures the bytes of throttled partitions it moved (``record``) as a rate over
  ``replication.quota.window.num`` (11) windows of ``replication.quota.window.size.seconds``
  (1 s), the elapsed time counted as at least ten full windows, as Kafka's ``Rate`` does;
* is exceeded when that rate is above the configured one (``isQuotaExceeded``).

The leader leaves a throttled partition's records out of a follower's fetch while the
follower is out of the ISR and the quota is exceeded (``ReplicaManager.shouldLeaderThrottle``);
the follower leaves a throttled partition out of its fetch request while it is behind the
leader's HW and its quota is exceeded (``ReplicaFetcherThread.shouldFollowerThrottle``).
Replicas in the ISR are never held back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

WINDOW_MS: Final = 1000
WINDOWS: Final = 11


@dataclass(slots=True)
class ReplicationQuota:
    """One side (leader or follower) of one broker's replication throttle."""

    #: bytes per second; negative: no throttle
    rate: int = -1
    throttled: set[tuple[str, int]] = field(default_factory=set)
    #: window index (now_ms // WINDOW_MS) -> bytes recorded in it
    _windows: dict[int, int] = field(default_factory=dict)

    def is_throttled(self, tp: tuple[str, int]) -> bool:
        return self.rate >= 0 and tp in self.throttled

    def record(self, nbytes: int, now_ms: int) -> None:
        if nbytes <= 0 or self.rate < 0:
            return
        w = now_ms // WINDOW_MS
        self._windows[w] = self._windows.get(w, 0) + nbytes
        for old in [k for k in self._windows if k <= w - WINDOWS]:
            del self._windows[old]

    def measured(self, now_ms: int) -> float:
        """Bytes per second over the kept windows (``Rate.measure``)."""
        w = now_ms // WINDOW_MS
        total = sum(b for k, b in self._windows.items() if k > w - WINDOWS)
        if not total:
            return 0.0
        oldest = min(k for k in self._windows if k > w - WINDOWS) * WINDOW_MS
        elapsed = max(now_ms - oldest, (WINDOWS - 1) * WINDOW_MS)
        return total * 1000.0 / elapsed

    def is_exceeded(self, now_ms: int) -> bool:
        return self.rate >= 0 and self.measured(now_ms) > self.rate

    def configure(self, rate: int, throttled: set[tuple[str, int]]) -> None:
        """A dynamic config change: the rate and the throttled partitions of this side."""
        self.rate = rate
        self.throttled = set(throttled)
        if rate < 0:
            self._windows.clear()
