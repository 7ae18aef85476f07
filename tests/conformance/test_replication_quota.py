"""Replication throttles (:mod:`actors.quota`), held against Kafka 3.7.0's
``ReplicationQuotaManagerTest``: which partitions are throttled, and the ``SimpleRate``
measurement that decides when the quota is exceeded."""

from __future__ import annotations

from kafkacite import kafka

from actors.quota import ReplicationQuota


@kafka("3.7.0", "ReplicationQuotaManagerTest", "shouldThrottleOnlyDefinedReplicas")
def test_only_the_partitions_marked_throttled_are_throttled() -> None:
    """Partitions 1-3 of topic1 marked throttled: those are, partition 4 is not; with no
    rate set (no throttle) nothing is."""
    q = ReplicationQuota()
    q.configure(100, {("topic1", 1), ("topic1", 2), ("topic1", 3)})
    assert [q.is_throttled(("topic1", p)) for p in (1, 2, 3, 4)] == [True, True, True, False]
    q.configure(-1, {("topic1", 1)})
    assert not q.is_throttled(("topic1", 1))


@kafka("3.7.0", "ReplicationQuotaManagerTest",
       "shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses")
def test_the_quota_is_exceeded_then_falls_back_below_its_bound_as_time_passes() -> None:
    """10 samples of 1 s, a 100 B/s quota, the first sample opened by a check at 0: 150 B at
    1.5 s is exactly the bound (not exceeded), 151 B breaks it (151/1.5); at 2 s the rate is
    151/2; at 2.5 s, 250 B is again the bound and 251 B breaks it; at 4.5 s, 251/4.5."""
    q = ReplicationQuota(windows=10)
    q.configure(100, {("t", 0)})
    assert not q.is_exceeded(0)
    q.record(1, 1500)
    assert not q.is_exceeded(1500)
    q.record(149, 1500)
    assert not q.is_exceeded(1500)
    q.record(1, 1500)
    assert q.measured(1500) == 151 / 1.5 and q.is_exceeded(1500)
    assert abs(q.measured(2000) - 151 / 2) < 0.1 and not q.is_exceeded(2000)
    q.record(99, 2500)
    assert q.measured(2500) == 250 / 2.5 and not q.is_exceeded(2500)
    q.record(1, 2500)
    assert q.is_exceeded(2500) and q.measured(2500) == 251 / 2.5
    assert q.measured(4500) == 251 / 4.5 and not q.is_exceeded(4500)
