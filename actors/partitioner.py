"""Kafka's producer partitioners, bit for bit.

A producer picks a record's partition before it sends; a scenario that compares keyed
ordering or per-partition load with a real cluster only means something if this choice is
*exactly* Kafka's. So this module ports the Java arithmetic, not the idea of it.

What is modelled
----------------
* **Keyed records** (every Kafka release since 0.8.2's Java producer, and the built-in
  partitioner of 3.3+, ``BuiltInPartitioner.partitionForKey``)::

      Utils.toPositive(Utils.murmur2(keyBytes)) % numPartitions

  :func:`murmur2` is ``org.apache.kafka.common.utils.Utils.murmur2``: MurmurHash2, seed
  ``0x9747b28c``, ``m = 0x5bd1e995``, ``r = 24``, little-endian 4-byte words, the tail
  ``switch`` falling through cases 3, 2, 1, and Java's signed 32-bit ``int`` result.
  :func:`to_positive` masks the sign bit (``n & 0x7fffffff``); it is *not* an absolute value,
  and Kafka keeps it that way so keys never move between partitions across releases.
  ``keyBytes`` are the serialized key: Kafka's ``StringSerializer`` writes UTF-8, so a
  string key ``k`` hashes ``k.encode("utf-8")``.
* **The legacy Scala producer** (``kafka.producer.DefaultPartitioner``, 0.8 to 0.10,
  described in seed note 002)::

      Utils.abs(key.hashCode) % numPartitions

  :func:`java_string_hashcode` is ``java.lang.String.hashCode`` (``31*h + c`` over UTF-16
  code units, wrapping at 32 bits). ``Utils.abs`` is Kafka's own guard, *not*
  ``Math.abs``: Java's ``Math.abs(Integer.MIN_VALUE)`` is ``Integer.MIN_VALUE`` (negative,
  see :func:`java_math_abs`), and Java's ``%`` keeps the dividend's sign, so
  ``Math.abs(h) % n`` would be a negative "partition" for the keys whose hash is
  ``MIN_VALUE`` (for example ``"polygenelubricants"``). Kafka's ``Utils.abs`` returns 0 for
  ``MIN_VALUE`` (``UtilsTest.testAbs``), so such keys land on partition 0; we do the same in
  :func:`kafka_utils_abs`. Only string keys are supported: for other key types the JVM's
  ``hashCode`` is identity-based and no emulator can reproduce it.
* **Null keys.** :class:`StickyPartitioner` is the shape of Kafka 2.4+'s sticky behaviour
  (KIP-480, and 3.3+'s built-in uniform sticky partitioner, KIP-794 without the adaptive
  weighting): every keyless record goes to the current partition until the batch is full or
  the producer reports a new batch (:meth:`StickyPartitioner.on_new_batch`); then another
  partition is chosen at random, different from the previous one when there is a choice
  (``StickyPartitionCache.nextPartition``). The random choice uses an injected
  :class:`random.Random` so a run is a function of its seed. :class:`RoundRobinPartitioner`
  is ``org.apache.kafka.clients.producer.RoundRobinPartitioner``: a per-topic 32-bit counter,
  ``toPositive(counter++) % len(available)``, keys ignored.

Left out: adaptive partitioning (``partitioner.adaptive.partitioning.enable`` weights the
random choice by broker queue sizes, which the emulator does not model yet) and the
``partitioner.ignore.keys`` switch (use a null key instead).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from typing import Final

__all__ = [
    "INT_MIN",
    "RoundRobinPartitioner",
    "StickyPartitioner",
    "default_partition",
    "java_math_abs",
    "java_string_hashcode",
    "kafka_utils_abs",
    "legacy_partition",
    "murmur2",
    "to_positive",
]

INT_MIN: Final = -(2**31)  # Java Integer.MIN_VALUE
_MASK32: Final = 0xFFFF_FFFF
_SEED: Final = 0x9747B28C
_M: Final = 0x5BD1E995
_R: Final = 24
_WORDS: Final = struct.Struct("<I")


def _to_int32(n: int) -> int:
    """Reinterpret the low 32 bits of ``n`` as a Java ``int`` (two's complement)."""
    n &= _MASK32
    return n - 0x1_0000_0000 if n & 0x8000_0000 else n


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2(byte[])``: a signed 32-bit MurmurHash2 of ``data``.

    Computed on unsigned 32-bit values (Java's ``*``, ``^`` and ``>>>`` give the same low 32
    bits), then reinterpreted as a Java ``int``.
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    body = length & ~3
    for (k,) in _WORDS.iter_unpack(data[:body]):
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    # Java's `switch (length % 4)` with fall-through: case 3 runs 3, 2 and 1.
    tail = length & 3
    if tail == 3:
        h ^= data[body + 2] << 16
    if tail >= 2:
        h ^= data[body + 1] << 8
    if tail >= 1:
        h ^= data[body]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _to_int32(h)


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit of a Java ``int`` (not ``abs``)."""
    return n & 0x7FFF_FFFF


def _check_partitions(num_partitions: int) -> None:
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")


def default_partition(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's producer picks for a record with serialized key ``key``.

    ``BuiltInPartitioner.partitionForKey`` (and the ``DefaultPartitioner`` before 3.3).
    """
    _check_partitions(num_partitions)
    return to_positive(murmur2(key)) % num_partitions


def java_string_hashcode(s: str) -> int:
    """``java.lang.String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units.

    Characters outside the BMP count as two code units (a surrogate pair), as in Java. Lone
    surrogates, legal in both Java and Python strings, are hashed as themselves.
    """
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for (unit,) in struct.iter_unpack(">H", units):
        h = (31 * h + unit) & _MASK32
    return _to_int32(h)


def java_math_abs(n: int) -> int:
    """``java.lang.Math.abs(int)``: note ``Math.abs(Integer.MIN_VALUE) == Integer.MIN_VALUE``."""
    return _to_int32(abs(n))


def kafka_utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs(int)``: like ``Math.abs`` but ``Integer.MIN_VALUE`` maps to 0."""
    return 0 if n == INT_MIN else java_math_abs(n)


def legacy_partition(key: str, num_partitions: int) -> int:
    """The legacy Scala producer's ``Utils.abs(key.hashCode) % numPartitions`` for a string key.

    The result is always in ``[0, num_partitions)``: a key whose hash is ``Integer.MIN_VALUE``
    goes to partition 0, because Kafka's ``Utils.abs`` guards that case (see module notes).
    """
    _check_partitions(num_partitions)
    return kafka_utils_abs(java_string_hashcode(key)) % num_partitions


def _choose_other(
    rng: random.Random, num_partitions: int, available: Sequence[int] | None, previous: int | None
) -> int:
    """``StickyPartitionCache.nextPartition``: a random available partition, not ``previous``.

    With no available partition the choice is over all partitions; with exactly one choice it
    is taken even when it equals ``previous``.
    """
    pool = list(available) if available else list(range(num_partitions))
    if len(pool) == 1:
        return pool[0]
    candidates = [p for p in pool if p != previous]
    return candidates[rng.randrange(len(candidates))]


class StickyPartitioner:
    """Null-key partitioning that sticks to one partition per batch.

    ``partition(size)`` returns the current partition and counts ``size`` towards the batch
    (bytes, records, whatever unit ``batch_size`` uses; 1 by default so ``batch_size`` counts
    records). The record that fills the batch still goes to the current partition; the next
    one goes to a freshly chosen partition. ``on_new_batch()`` forces the switch, as the
    producer's accumulator does when it closes a batch early (``linger.ms`` expired, a
    flush). With ``batch_size=None`` only ``on_new_batch()`` switches.
    """

    __slots__ = ("_available", "_batch_size", "_current", "_filled", "_num_partitions", "_rng")

    def __init__(
        self,
        num_partitions: int,
        rng: random.Random,
        *,
        batch_size: int | None = None,
        available: Sequence[int] | None = None,
    ) -> None:
        _check_partitions(num_partitions)
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._num_partitions = num_partitions
        self._rng = rng
        self._batch_size = batch_size
        self._available: tuple[int, ...] = ()
        self._current: int | None = None
        self._filled = 0
        self.set_available(available)

    @property
    def current(self) -> int | None:
        """The partition the next keyless record goes to, or None before the first one."""
        return self._current

    def set_available(self, available: Sequence[int] | None) -> None:
        """Partitions with a live leader (from metadata); empty or None means all of them."""
        parts = tuple(available or ())
        for p in parts:
            if not 0 <= p < self._num_partitions:
                raise ValueError(f"partition {p} out of range [0, {self._num_partitions})")
        self._available = parts

    def partition(self, size: int = 1) -> int:
        """The partition for one keyless record of ``size`` units."""
        if self._current is None:
            self._switch()
        assert self._current is not None
        chosen = self._current
        self._filled += size
        if self._batch_size is not None and self._filled >= self._batch_size:
            self._switch()
        return chosen

    def set_num_partitions(self, num_partitions: int) -> None:
        """The topic grew (``CreatePartitions``): later switches choose among all of them;
        the current partition stays until its batch closes."""
        _check_partitions(num_partitions)
        self._num_partitions = num_partitions

    def on_new_batch(self) -> int:
        """The current batch is closed: move to another partition and return it."""
        return self._switch()

    def _switch(self) -> int:
        self._current = _choose_other(
            self._rng, self._num_partitions, self._available, self._current
        )
        self._filled = 0
        return self._current


class RoundRobinPartitioner:
    """Kafka's ``RoundRobinPartitioner``: cycle through a topic's available partitions.

    One Java ``AtomicInteger`` per topic; it wraps at 2**31 like Java's and ``toPositive`` keeps
    the index non-negative. Keys are ignored, as in Kafka.
    """

    __slots__ = ("_counters",)

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def partition(
        self, topic: str, num_partitions: int, available: Sequence[int] | None = None
    ) -> int:
        """The next partition of ``topic``; ``available`` lists partitions with a leader."""
        _check_partitions(num_partitions)
        value = self._counters.get(topic, 0)
        self._counters[topic] = _to_int32(value + 1)
        if available:
            return available[to_positive(value) % len(available)]
        return to_positive(value) % num_partitions
