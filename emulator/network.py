"""The simulated network: the one component that decides the fate of every frame.

What is modelled (after TigerBeetle's packet simulator and Jepsen's nemeses):

* **Links** are directed node pairs. Kafka runs on TCP, so every link is FIFO: a frame's
  delivery time is ``max(now + delay, last delivery time on that link)``; equal times keep
  send order because the scheduler breaks ties by commit sequence.
* **Delay** is drawn per frame from one distribution (constant, uniform, exponential,
  lognormal), plus a per-link extra delay while a delay-spike fault is on.
* **Loss**: a global drop rate and per-link drop rates (the "drops" nemesis). With TCP a
  lost frame is really a broken connection; Kafka's request timeouts and retries cover it.
* **Partitions** are sets of cut directed links. A frame is dropped if its link is cut when
  it is sent *or* when it would arrive (the connection broke while it was in flight).
* **Corruption** flips one byte of a frame; the receiver's CRC check rejects it.
* Frames between actors of one node (loopback) are never delayed, dropped or corrupted.

Everything random comes from the one ``random.Random`` the network is given (a named child
of the run seed); draws happen in the scheduler's canonical commit order, so the same seed
gives the same delays whatever Trio does.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

Link = tuple[str, str]

DROP_PARTITION: Final = "partition"
DROP_LOSS: Final = "loss"


@dataclass(frozen=True, slots=True)
class DelayDist:
    """A one-way delay distribution in milliseconds (sampled to integer microseconds)."""

    dist: str = "uniform"
    ms: float = 1.0          # constant
    low_ms: float = 0.2      # uniform
    high_ms: float = 2.0
    mean_ms: float = 1.0     # exponential
    mu: float = 0.0          # lognormal of milliseconds
    sigma: float = 0.5

    KINDS = ("constant", "uniform", "exponential", "lognormal")

    def sample_us(self, rng: random.Random) -> int:
        if self.dist == "constant":
            ms = self.ms
        elif self.dist == "uniform":
            ms = rng.uniform(self.low_ms, self.high_ms)
        elif self.dist == "exponential":
            ms = rng.expovariate(1.0 / self.mean_ms) if self.mean_ms > 0 else 0.0
        elif self.dist == "lognormal":
            ms = math.exp(rng.gauss(self.mu, self.sigma))
        else:  # validated by the scenario loader
            raise ValueError(f"unknown delay distribution {self.dist!r}")
        return max(0, int(ms * 1000))


class Network:
    __slots__ = ("_rng", "delay", "drop_rate", "corrupt_rate", "_cut", "_extra_us",
                 "_link_drop", "_last_at")

    def __init__(self, rng: random.Random, delay: DelayDist, *, drop_rate: float = 0.0,
                 corrupt_rate: float = 0.0) -> None:
        self._rng = rng
        self.delay = delay
        self.drop_rate = drop_rate
        self.corrupt_rate = corrupt_rate
        self._cut: dict[Link, int] = {}        # link -> number of partitions cutting it
        self._extra_us: dict[Link, int] = {}
        self._link_drop: dict[Link, float] = {}
        self._last_at: dict[Link, int] = {}

    # -- faults --------------------------------------------------------------------------
    def cut(self, src: str, dst: str) -> None:
        self._cut[(src, dst)] = self._cut.get((src, dst), 0) + 1

    def heal(self, src: str, dst: str) -> None:
        n = self._cut.get((src, dst), 0) - 1
        if n > 0:
            self._cut[(src, dst)] = n
        else:
            self._cut.pop((src, dst), None)

    def heal_all(self) -> None:
        self._cut.clear()
        self._extra_us.clear()
        self._link_drop.clear()

    def is_cut(self, src: str, dst: str) -> bool:
        return (src, dst) in self._cut

    def set_extra_delay(self, src: str, dst: str, extra_ms: float) -> None:
        if extra_ms > 0:
            self._extra_us[(src, dst)] = int(extra_ms * 1000)
        else:
            self._extra_us.pop((src, dst), None)

    def set_link_drop(self, src: str, dst: str, rate: float) -> None:
        if rate > 0:
            self._link_drop[(src, dst)] = rate
        else:
            self._link_drop.pop((src, dst), None)

    # -- delivery ------------------------------------------------------------------------
    def transmit(self, now_us: int, src: str, dst: str, frame: bytes
                 ) -> tuple[int, bytes] | str:
        """Decide one frame's fate: ``(deliver_at_us, frame)`` or a drop reason."""
        if src == dst:
            return now_us, frame
        link = (src, dst)
        if link in self._cut:
            return DROP_PARTITION
        rng = self._rng
        rate = self._link_drop.get(link, self.drop_rate)
        if rate and rng.random() < rate:
            return DROP_LOSS
        at = now_us + self.delay.sample_us(rng) + self._extra_us.get(link, 0)
        last = self._last_at.get(link, 0)
        if at < last:
            at = last
        self._last_at[link] = at
        if self.corrupt_rate and rng.random() < self.corrupt_rate:
            i = rng.randrange(len(frame))
            frame = frame[:i] + bytes([frame[i] ^ (1 + rng.randrange(255))]) + frame[i + 1:]
        return at, frame
