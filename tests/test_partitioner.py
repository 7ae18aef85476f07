"""Kafka's producer partitioners: same keys, same partitions as the Java client."""

from __future__ import annotations

import random

import pytest

from actors.partitioner import (
    INT_MIN,
    RoundRobinPartitioner,
    StickyPartitioner,
    default_partition,
    java_math_abs,
    java_string_hashcode,
    kafka_utils_abs,
    legacy_partition,
    murmur2,
    to_positive,
)

# Kafka's UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils/).
KAFKA_MURMUR2_VECTORS: list[tuple[bytes, int]] = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

# librdkafka's src/rdmurmur2.c unit test, `java_murmur2_results` (int32 written in hex):
# Kafka's vectors never end in a 1-byte tail nor hash the empty key; these do.
LIBRDKAFKA_JAVA_VECTORS: list[tuple[bytes, int]] = [
    (b"kafka", 0xD067CF64),
    (b"giberish123456789", 0x8F552B0C),
    (b"1234", 0x9FC97B14),
    (b"234", 0xE7C009CA),
    (b"34", 0x873930DA),
    (b"4", 0x5A4B5CA1),
    (b"PreAmbleWillBeRemoved,ThePrePartThatIs", 0x78424F1C),
    (b"reAmbleWillBeRemoved,ThePrePartThatIs", 0x4A62B377),
    (b"eAmbleWillBeRemoved,ThePrePartThatIs", 0xE0E4E09E),
    (b"AmbleWillBeRemoved,ThePrePartThatIs", 0x62B8B43F),
    (b"", 0x106E08D9),
]


# --- murmur2 / toPositive / partitionForKey -------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), KAFKA_MURMUR2_VECTORS)
def test_murmur2_matches_kafka_java_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(("data", "expected_bits"), LIBRDKAFKA_JAVA_VECTORS)
def test_murmur2_matches_java_for_every_tail_length_and_the_empty_key(
    data: bytes, expected_bits: int
) -> None:
    assert murmur2(data) & 0xFFFF_FFFF == expected_bits


def test_murmur2_returns_a_signed_java_int() -> None:
    for data, _ in KAFKA_MURMUR2_VECTORS + LIBRDKAFKA_JAVA_VECTORS:
        assert INT_MIN <= murmur2(data) < 2**31


def test_to_positive_clears_the_sign_bit_rather_than_negating() -> None:
    assert to_positive(5) == 5
    assert to_positive(-1) == 0x7FFF_FFFF  # not 1: it is a mask, not abs()
    assert to_positive(INT_MIN) == 0
    assert to_positive(-973932308) == 2**31 - 973932308


def test_default_partition_is_to_positive_murmur2_mod_partitions() -> None:
    # Derived by hand from the Kafka vectors: toPositive(h) = h for h >= 0, else 2**31 + h.
    # "21": toPositive(-973932308) = 1173551340 = 3 * 391183780 = 7 * 167650191 + 3.
    assert default_partition(b"21", 3) == 0
    assert default_partition(b"21", 7) == 3
    # "foobar": toPositive(-790332482) = 1357151166 = 10 * 135715116 + 6.
    assert default_partition(b"foobar", 10) == 6
    # "abc": 479470107 is odd and its digits sum to 39, so it is 3 mod 6.
    assert default_partition(b"abc", 6) == 3
    # "a-little-bit-longer-string": toPositive(-1486304829) = 661178819 = 12 * 55098234 + 11.
    assert default_partition(b"a-little-bit-longer-string", 12) == 11


def test_default_partition_with_one_partition_is_always_zero() -> None:
    for data, _ in KAFKA_MURMUR2_VECTORS:
        assert default_partition(data, 1) == 0


def test_default_partition_rejects_a_topic_without_partitions() -> None:
    with pytest.raises(ValueError, match="num_partitions"):
        default_partition(b"k", 0)


# --- legacy Scala producer: Utils.abs(key.hashCode) % n -------------------------------------


def test_java_string_hashcode_matches_java() -> None:
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("Aa") == java_string_hashcode("BB") == 2112  # Java's classic
    assert java_string_hashcode("é") == 0xE9


def test_java_string_hashcode_counts_utf16_code_units() -> None:
    # U+1F600 is the surrogate pair D83D DE00 in Java's UTF-16.
    assert java_string_hashcode("\U0001f600") == 31 * 0xD83D + 0xDE00


def test_java_string_hashcode_wraps_to_a_negative_int_like_java() -> None:
    assert java_string_hashcode("polygenelubricants") == INT_MIN


def test_math_abs_of_int_min_is_negative_but_kafka_utils_abs_is_zero() -> None:
    assert java_math_abs(INT_MIN) == INT_MIN
    assert java_math_abs(-10) == 10
    # Kafka's UtilsTest.testAbs
    assert kafka_utils_abs(INT_MIN) == 0
    assert kafka_utils_abs(-10) == 10
    assert kafka_utils_abs(10) == 10
    assert kafka_utils_abs(0) == 0
    assert kafka_utils_abs(-1) == 1


def test_legacy_partition_is_abs_hashcode_mod_partitions() -> None:
    assert legacy_partition("hello", 7) == 99162322 % 7
    # "Aa".hashCode() = 2112 = 3 * 704: colliding keys share a partition.
    assert legacy_partition("Aa", 3) == legacy_partition("BB", 3) == 0


def test_legacy_partition_sends_an_int_min_hash_to_partition_zero() -> None:
    # Math.abs would leave INT_MIN, and Java's INT_MIN % 3 is -2: Kafka's Utils.abs prevents it.
    for n in (1, 3, 7, 10):
        assert legacy_partition("polygenelubricants", n) == 0


# --- null keys: sticky ---------------------------------------------------------------------


def test_sticky_partitioner_sticks_until_the_batch_is_full() -> None:
    sticky = StickyPartitioner(6, random.Random(7), batch_size=3)
    picks = [sticky.partition() for _ in range(9)]
    batches = [picks[0:3], picks[3:6], picks[6:9]]
    for batch in batches:
        assert len(set(batch)) == 1
    assert batches[0][0] != batches[1][0] != batches[2][0]


def test_sticky_partitioner_counts_batch_size_in_the_callers_unit() -> None:
    sticky = StickyPartitioner(4, random.Random(1), batch_size=100)
    first = sticky.partition(60)
    assert sticky.partition(60) == first  # this record fills the batch (120 >= 100)
    assert sticky.partition(60) != first


def test_sticky_partitioner_switches_on_new_batch_to_a_different_partition() -> None:
    sticky = StickyPartitioner(5, random.Random(3))
    first = sticky.partition()
    assert [sticky.partition() for _ in range(20)] == [first] * 20  # no batch_size: sticks
    second = sticky.on_new_batch()
    assert second != first
    assert sticky.partition() == second == sticky.current


def test_sticky_partitioner_only_chooses_available_partitions() -> None:
    sticky = StickyPartitioner(10, random.Random(5), available=[2, 8])
    seen = {sticky.partition()} | {sticky.on_new_batch() for _ in range(20)}
    assert seen == {2, 8}


def test_sticky_partitioner_with_a_single_choice_keeps_it() -> None:
    sticky = StickyPartitioner(1, random.Random(5), batch_size=1)
    assert [sticky.partition() for _ in range(5)] == [0] * 5
    assert sticky.on_new_batch() == 0


def test_sticky_partitioner_is_a_function_of_the_injected_rng() -> None:
    def run(seed: int) -> list[int]:
        sticky = StickyPartitioner(12, random.Random(seed), batch_size=2)
        return [sticky.partition() for _ in range(40)]

    assert run(42) == run(42)
    assert run(42) != run(43)


def test_sticky_partitioner_never_touches_the_global_random() -> None:
    before = random.getstate()
    sticky = StickyPartitioner(8, random.Random(0), batch_size=1)
    for _ in range(50):
        sticky.partition()
    assert random.getstate() == before


def test_sticky_partitioner_rejects_unknown_available_partitions() -> None:
    with pytest.raises(ValueError, match="out of range"):
        StickyPartitioner(3, random.Random(0), available=[3])


# --- null keys: round robin ----------------------------------------------------------------


def test_round_robin_cycles_through_all_partitions() -> None:
    rr = RoundRobinPartitioner()
    assert [rr.partition("t", 3) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_round_robin_keeps_one_counter_per_topic() -> None:
    rr = RoundRobinPartitioner()
    assert [rr.partition("a", 4), rr.partition("b", 4), rr.partition("a", 4)] == [0, 0, 1]


def test_round_robin_cycles_through_available_partitions_only() -> None:
    rr = RoundRobinPartitioner()
    assert [rr.partition("t", 6, available=[1, 4]) for _ in range(4)] == [1, 4, 1, 4]


def test_round_robin_counter_wraps_like_a_java_int() -> None:
    rr = RoundRobinPartitioner()
    rr._counters["t"] = 2**31 - 1  # white-box: jump to Integer.MAX_VALUE
    # MAX_VALUE % 3 = 1, then the counter wraps to MIN_VALUE and toPositive(MIN_VALUE) = 0.
    assert [rr.partition("t", 3), rr.partition("t", 3), rr.partition("t", 3)] == [1, 0, 1]
