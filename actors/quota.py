"""Replication throttles: Kafka's ``ReplicationQuotaManager`` (one per broker and side).

A reassignment started with ``--throttle`` (``kafka-reassign-partitions``) sets, on every
broker involved, ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (bytes/s), and on the moving topics
``leader.replication.throttled.replicas`` (the existing replicas, which may lead) and
``follower.replication.throttled.replicas`` (the replicas being added); ``--verify`` removes
them once the move is done. The broker's quota for a side then:

* says whether a partition is throttled on this broker (``isThrottled``);
* measures the bytes of throttled partitions it moved (``record``) as a rate
  (``SimpleRate``): a sample opens when a record or a measurement finds none open and lasts
  ``replication.quota.window.size.seconds`` (1 s); ``replication.quota.window.num`` (11)
  samples are kept, and the rate is their bytes over the time since the oldest one opened,
  at least one window (``SimpleRate.windowSize``, unlike the client quotas' ``Rate``);
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
    windows: int = WINDOWS
    #: the samples kept: [opened at ms, bytes], oldest first
    _samples: list[list[int]] = field(default_factory=list)

    def is_throttled(self, tp: tuple[str, int]) -> bool:
        return self.rate >= 0 and tp in self.throttled

    def _purge(self, now_ms: int) -> None:
        """``purgeObsoleteSamples``: a sample older than all the windows kept is gone."""
        horizon = self.windows * WINDOW_MS
        self._samples = [s for s in self._samples if now_ms - s[0] < horizon]

    def record(self, nbytes: int, now_ms: int) -> None:
        if nbytes <= 0 or self.rate < 0:
            return
        self._purge(now_ms)
        if not self._samples or now_ms >= self._samples[-1][0] + WINDOW_MS:
            self._samples.append([now_ms, 0])   # SampledStat.current: a new sample
        self._samples[-1][1] += nbytes

    def measured(self, now_ms: int) -> float:
        """Bytes per second (``SimpleRate.measure``)."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append([now_ms, 0])   # SampledStat.oldest opens one
        total = sum(b for _, b in self._samples)
        return total * 1000.0 / max(now_ms - self._samples[0][0], WINDOW_MS)

    def is_exceeded(self, now_ms: int) -> bool:
        """``isQuotaExceeded``: the measured rate is above the quota's bound."""
        return self.rate >= 0 and self.measured(now_ms) > self.rate

    def configure(self, rate: int, throttled: set[tuple[str, int]]) -> None:
        """A dynamic config change: the rate and the throttled partitions of this side."""
        self.rate = rate
        self.throttled = set(throttled)
        if rate < 0:
            self._samples.clear()
