"""One seed drives everything: named, independent random streams derived from the run seed.

``RngTree(seed).child("network")`` always yields the same stream for the same seed and name,
whatever else asked for streams first — so adding a producer does not shift the network's
delays. Names are hashed with SHA-256 (never Python's ``hash()``, which is salted per process
by PYTHONHASHSEED). The global ``random`` module is never used.
"""

from __future__ import annotations

import hashlib
import random


class RngTree:
    __slots__ = ("seed",)

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def child(self, name: str) -> random.Random:
        digest = hashlib.sha256(f"{self.seed}/{name}".encode()).digest()
        return random.Random(int.from_bytes(digest[:16], "big"))
