"""Leader elections (``actors.election.elect_leader``, used by isrlab's controller for every
election), held against Kafka's ``PartitionLeaderElectionAlgorithmsTest`` (ZooKeeper
controller, 2.8.0) and ``PartitionChangeBuilderTest`` (KRaft, 3.7.0).

isrlab's controller has no preferred-leader elections yet: every election it runs is
``electAnyLeader`` (Election.ONLINE, or UNCLEAN for a topic that allows it). Kafka's ELR
tests below use Election.PREFERRED on partitions whose preferred replica (the first) is not
a valid leader and whose current leader is not either, where ``electPreferredLeader`` and
``electAnyLeader`` choose the same replica; each test says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkacite import kafka

from actors.election import NO_LEADER, elect_leader


def _zk(assignment: Sequence[int], isr: Sequence[int], live: set[int],
        unclean: bool) -> int | None:
    e = elect_leader(assignment, isr, (), (), NO_LEADER, live.__contains__,
                     unclean_allowed=unclean, elr_enabled=False)
    return None if e.leader == NO_LEADER else e.leader


@kafka("2.8.0", "PartitionLeaderElectionAlgorithmsTest", "testOfflinePartitionLeaderElection")
def test_zk_offline_election_takes_the_first_live_isr_member() -> None:
    """Assignment (2, 4), ISR (2, 4), only 4 alive: 4."""
    assert _zk([2, 4], [2, 4], {4}, unclean=False) == 4


@kafka("2.8.0", "PartitionLeaderElectionAlgorithmsTest",
       "testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionDisabled")
def test_zk_offline_election_leaves_the_partition_offline_when_no_isr_member_lives() -> None:
    """Assignment (2, 4), ISR (2), only 4 alive, unclean elections off: no leader."""
    assert _zk([2, 4], [2], {4}, unclean=False) is None


@kafka("2.8.0", "PartitionLeaderElectionAlgorithmsTest",
       "testOfflinePartitionLeaderElectionLastIsrOfflineUncleanLeaderElectionEnabled")
def test_zk_offline_election_takes_a_live_replica_out_of_the_isr_when_unclean_is_on() -> None:
    """Assignment (2, 4), ISR (2), only 4 alive, unclean elections on: 4, an unclean
    election (Kafka counts it in UncleanLeaderElectionsPerSec)."""
    e = elect_leader([2, 4], [2], (), (), NO_LEADER, {4}.__contains__, unclean_allowed=True,
                     elr_enabled=False)
    assert (e.leader, e.unclean) == (4, True)


FOO_REPLICAS = (2, 1, 3)


def _foo(isr: Sequence[int] = (2, 1), *, unclean: bool = False,
         replicas: Sequence[int] = FOO_REPLICAS) -> tuple[int, bool]:
    """Kafka's FOO partition: replicas (2, 1, 3), ISR (2, 1), leader 1; broker 3 is not an
    acceptable leader."""
    e = elect_leader(replicas, isr, (), (), 1, lambda r: r != 3, unclean_allowed=unclean,
                     elr_enabled=False)
    return (e.leader, e.unclean)


@kafka("3.7.0", "PartitionChangeBuilderTest", "testElectLeader")
def test_kraft_keeps_a_valid_leader_and_elects_uncleanly_only_when_allowed_and_needed() -> None:
    """electAnyLeader on FOO: the current leader 1 stays (online or unclean, ISR (2, 1) or
    (1, 3)); with the target ISR (3) — 3 not acceptable — there is no leader, unless unclean
    elections are allowed: then 2, uncleanly; with the target ISR (4) and 4 added to the
    replicas, 4 is a clean choice. BAZ (ISR (1, 3), leader 3, all acceptable) keeps 3."""
    assert _foo() == (1, False)
    assert _foo(unclean=True) == (1, False)
    assert _foo((1, 3)) == (1, False)
    assert _foo((1, 3), unclean=True) == (1, False)
    assert _foo((3,)) == (NO_LEADER, False)
    assert _foo((3,), unclean=True) == (2, True)
    assert _foo((4,), unclean=True, replicas=(2, 1, 3, 4)) == (4, False)
    for unclean in (False, True):
        baz = elect_leader((2, 1, 3), (1, 3), (), (), 3, lambda r: True,
                           unclean_allowed=unclean, elr_enabled=False)
        assert (baz.leader, baz.unclean) == (3, False)


@kafka("3.7.0", "PartitionChangeBuilderTest", "testUncleanLeaderElection")
def test_kraft_unclean_election_on_an_offline_partition_takes_the_first_acceptable() -> None:
    """The OFFLINE partition (replicas (2, 1, 3), ISR (3), no leader; only broker 1
    acceptable) with unclean elections: 1, uncleanly — with or without ELR state, and with
    the target ISR (2) too (2 is not acceptable)."""
    ok = {1}.__contains__
    for isr, elr, elr_on in (((3,), (), False), ((), (3,), True), ((2,), (), False)):
        e = elect_leader((2, 1, 3), isr, elr, (2,) if elr_on else (), NO_LEADER, ok,
                         unclean_allowed=True, elr_enabled=elr_on)
        assert (e.leader, e.unclean) == (1, True)


@kafka("3.7.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_ElrCanBeElected")
def test_kraft_elects_from_the_elr_when_the_isr_is_empty() -> None:
    """Replicas (1, 2, 3, 4), target ISR empty, ELR (1, 3) (the old ISR member 1 joined it),
    broker 1 offline: 3, a clean ELR election, whether or not the last-known-leader
    recovery is on. (Kafka's test asks for a preferred election; the preferred replica 1
    and the current leader 1 are offline, so it agrees with electAnyLeader.)"""
    for last_known in ((), (2,)):
        e = elect_leader((1, 2, 3, 4), (), (1, 3), last_known, 1, lambda r: r != 1,
                         unclean_allowed=False, elr_enabled=True)
        assert (e.leader, e.kind, e.unclean) == (3, "elr", False)


@kafka("3.7.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_ElectLastKnownLeader")
def test_kraft_elects_the_single_last_known_leader_uncleanly_when_isr_and_elr_are_empty(
) -> None:
    """Replicas (1, 2, 3, 4), ISR and ELR empty, last known ELR (1), no leader: 1, as an
    unclean election (KIP-966 last-known-leader; the controller then sets the ISR to (1)
    and the partition to RECOVERING). (Preferred in Kafka's test; no replica is valid, so
    both elections reach the last-known step.)"""
    e = elect_leader((1, 2, 3, 4), (), (), (1,), NO_LEADER, lambda r: True,
                     unclean_allowed=False, elr_enabled=True)
    assert (e.leader, e.kind, e.unclean) == (1, "last_known_leader", True)


@kafka("3.7.0", "PartitionChangeBuilderTest",
       "testEligibleLeaderReplicas_ElectLastKnownLeaderShouldFail")
def test_kraft_does_not_use_the_last_known_leader_while_the_elr_is_not_empty() -> None:
    """Replicas (1, 2, 3, 4), ISR empty, ELR (3) but 3 not acceptable, last known ELR (1):
    no leader — the last known leader is a candidate only when ISR and ELR are both
    empty."""
    e = elect_leader((1, 2, 3, 4), (), (3,), (1,), NO_LEADER, lambda r: r != 3,
                     unclean_allowed=False, elr_enabled=True)
    assert (e.leader, e.kind) == (NO_LEADER, "none")
