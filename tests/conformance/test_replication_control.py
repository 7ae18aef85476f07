"""The controller (isrlab's ``Controller``, KRaft's ``ReplicationControlManager`` and its
``PartitionChangeBuilder``), held against Kafka's ``ReplicationControlManagerTest`` at 3.7.0.

Driven sans-IO: brokers register and heartbeat by message, a broker is fenced by missing
heartbeats for ``broker.session.timeout.ms`` (in broker-id order, one after the other, as
``ReplicationControlTestContext.fenceBrokers`` calls ``handleBrokerFenced`` for each), and
AlterPartition requests arrive as a leader would send them.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness import session_checks
from kafkacite import kafka

from actors.controller import Controller, ControllerStore, PartitionRecord
from actors.eras import rules_for
from actors.messages import (
    INELIGIBLE_REPLICA,
    NONE,
    AlterPartition,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerRegistration,
    Tick,
)

SESSION_MS = 9000


class Ctx:
    """One controller over topic ``foo`` with the given assignments, every broker
    registered (and so unfenced)."""

    def __init__(self, brokers: Iterable[int], assignments: list[tuple[int, ...]], *,
                 min_isr: int = 1, era: str = "4.1") -> None:
        self.brokers = tuple(brokers)
        store = ControllerStore()
        for i, replicas in enumerate(assignments):
            store.partitions[("foo", i)] = PartitionRecord("foo", i, replicas, min_isr, False)
        self.c = Controller(store, rules_for(era), brokers=self.brokers,
                            session_timeout_ms=SESSION_MS)
        self.now_ms = 0
        self.c.start()
        self.c.drain()
        for b in self.brokers:
            self.c.handle(BrokerRegistration(b, 1, True), (f"broker-{b}", "broker"))
            self.c.drain()

    def p(self, i: int = 0) -> PartitionRecord:
        return self.c.store.partitions[("foo", i)]

    def epoch(self, b: int) -> int:
        return self.c.store.brokers[b].epoch

    def fence(self, *brokers: int) -> None:
        """``brokers`` miss their heartbeats for a session; the others keep beating."""
        self.now_ms += SESSION_MS + 1
        self.c.now_us = (self.now_ms - 1) * 1000
        for b in self.brokers:
            rec = self.c.store.brokers[b]
            if b not in brokers and not rec.fenced:
                self.c.handle(BrokerHeartbeat(b, rec.epoch, 0), (f"broker-{b}", "broker"))
        self.c.now_us = self.now_ms * 1000
        session_checks(self.c)
        assert all(self.c.store.brokers[b].fenced for b in brokers)

    def expire_session(self, broker: int) -> None:
        """``broker``'s process died a session ago and the controller has not fenced it yet
        (Kafka fences stale brokers one at a time, ``maybeFenceOneStaleBroker``): a new
        incarnation may register (``ClusterControlManager.registerBroker`` refuses one only
        while the old session is valid). Kafka's test contexts call
        ``handleBrokerUncleanShutdown`` directly, which skips that check."""
        self.c.last_heartbeat[broker] = self.c.now_ms - SESSION_MS - 1

    def unfence(self, *brokers: int) -> None:
        for b in brokers:
            self.c.handle(BrokerHeartbeat(b, self.epoch(b), 0), (f"broker-{b}", "broker"))
        self.c.drain()

    def alter(self, leader: int, isr: Iterable[int], *, member_epochs: dict[int, int] | None
              = None, i: int = 0) -> AlterPartitionResponse:
        p = self.p(i)
        members = tuple((b, (member_epochs or {}).get(b, self.epoch(b))) for b in isr)
        self.c.handle(AlterPartition("foo", i, leader, p.leader_epoch, self.epoch(leader),
                                     members, p.partition_epoch), (f"broker-{leader}", "t"))
        (resp,) = [e.msg for e in self.c.drain()
                   if hasattr(e, "msg") and isinstance(e.msg, AlterPartitionResponse)]
        return resp


def _consistent(ctx: Ctx, resp: AlterPartitionResponse) -> None:
    """``assertConsistentAlterPartitionResponse``: the answer is the registration now."""
    p = ctx.p()
    assert resp.error == NONE
    assert (resp.isr, resp.leader_epoch, resp.partition_epoch) == (
        p.isr, p.leader_epoch, p.partition_epoch)


@kafka("3.7.0", "ReplicationControlManagerTest", "testShrinkAndExpandIsr")
def test_the_leader_shrinks_then_expands_the_isr_and_each_answer_is_the_new_state() -> None:
    """Replicas (0, 1, 2), leader 0: AlterPartition to (0, 1) is accepted, then back to
    (0, 1, 2); each answer carries the partition as the controller now has it."""
    ctx = Ctx((0, 1, 2), [(0, 1, 2)])
    assert ctx.p().leader == 0
    _consistent(ctx, ctx.alter(0, (0, 1)))
    assert ctx.p().isr == (0, 1)
    _consistent(ctx, ctx.alter(0, (0, 1, 2)))
    assert ctx.p().isr == (0, 1, 2)


@kafka("3.7.0", "ReplicationControlManagerTest", "testEligibleLeaderReplicas_ShrinkAndExpandIsr")
def test_a_shrink_below_min_isr_fills_the_elr_and_an_expansion_back_empties_it() -> None:
    """ELR on, min ISR 2, replicas (0, 1, 2): the ISR shrunk to (0) leaves ELR (1, 2) and
    no last-known ELR; expanded to (0, 1), both are empty again."""
    ctx = Ctx((0, 1, 2), [(0, 1, 2)], min_isr=2)
    _consistent(ctx, ctx.alter(0, (0,)))
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((1, 2), ())
    _consistent(ctx, ctx.alter(0, (0, 1)))
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((), ())


@kafka("3.7.0", "ReplicationControlManagerTest", "testEligibleLeaderReplicas_BrokerFence")
def test_fenced_brokers_join_the_elr_only_once_the_isr_is_below_min_isr() -> None:
    """ELR on, min ISR 3, replicas (0, 1, 2, 3). Fencing 2 then 3: 2 leaves while the ISR
    (0, 1, 3) still meets min ISR, so only 3 enters the ELR. Fencing 1 too: ELR (1, 3).
    Unfencing everyone changes neither (rejoining the ISR takes an AlterPartition)."""
    ctx = Ctx((0, 1, 2, 3), [(0, 1, 2, 3)], min_isr=3)
    ctx.fence(2, 3)
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((3,), ())
    ctx.fence(1, 2, 3)
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((1, 3), ())
    ctx.unfence(1, 2, 3)
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((1, 3), ())


@kafka("3.7.0", "ReplicationControlManagerTest", "testEligibleLeaderReplicas_CleanElection")
def test_with_the_isr_empty_an_unfenced_elr_member_is_elected_cleanly() -> None:
    """ELR on, min ISR 3, replicas (0, 1, 2, 3): fencing 1, 2, 3 leaves ISR (0), ELR (2, 3).
    Then 2 is unfenced and 0 (and 1) fenced: the ISR is empty, 2 is the first unfenced ELR
    member, so it leads with ISR (2); the ELR becomes (0, 3)."""
    ctx = Ctx((0, 1, 2, 3), [(0, 1, 2, 3)], min_isr=3)
    ctx.fence(1, 2, 3)
    assert (ctx.p().isr, ctx.p().elr) == ((0,), (2, 3))
    ctx.unfence(2)
    ctx.fence(0, 1)
    p = ctx.p()
    assert (p.elr, p.isr, p.leader, p.last_known_elr) == ((0, 3), (2,), 2, ())


@kafka("3.7.0", "ReplicationControlManagerTest", "testRemoveLeaderships")
def test_a_fenced_broker_leaves_every_isr_it_was_in() -> None:
    """Brokers 0-3, four partitions; broker 0 is in the ISR of partitions 0, 2 and 3 and
    leads 0 and 3. Fenced, it is in no ISR and leads nothing."""
    ctx = Ctx((0, 1, 2, 3), [(0, 1, 2), (1, 2, 3), (2, 3, 0), (0, 2, 1)])
    assert [i for i in range(4) if 0 in ctx.p(i).isr] == [0, 2, 3]
    ctx.fence(0)
    assert [i for i in range(4) if 0 in ctx.p(i).isr or ctx.p(i).leader == 0] == []


@kafka("3.7.0", "ReplicationControlManagerTest", "testAlterPartitionShouldRejectFencedBrokers")
def test_an_expansion_to_a_fenced_broker_is_ineligible_until_it_is_unfenced() -> None:
    """Replicas (1, 2, 3, 4), leader 1: fencing 3 leaves ISR (1, 2, 4), partition epoch 1.
    The leader's AlterPartition back to (1, 2, 3, 4) is INELIGIBLE_REPLICA while 3 is
    fenced; after 3 is unfenced the same request is accepted: ISR (1, 2, 3, 4), partition
    epoch 2, leader epoch still 0."""
    ctx = Ctx((0, 1, 2, 3, 4), [(1, 2, 3, 4)])
    ctx.fence(3)
    p = ctx.p()
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1, 2, 4), 1, 0, 1)
    assert ctx.alter(1, (1, 2, 3, 4)).error == INELIGIBLE_REPLICA
    ctx.unfence(3)
    resp = ctx.alter(1, (1, 2, 3, 4))
    assert (resp.error, resp.isr, resp.leader_epoch, resp.partition_epoch) == (
        NONE, (1, 2, 3, 4), 0, 2)


@kafka("3.7.0", "ReplicationControlManagerTest",
       "testAlterPartitionShouldRejectBrokersWithStaleEpoch")
def test_an_expansion_naming_an_older_incarnation_of_a_broker_is_ineligible() -> None:
    """KIP-903 (AlterPartition v3+): the leader proposes adding broker 4 with the broker
    epoch it saw on 4's fetches; 4 has since restarted and registered with a new epoch.
    The late request is INELIGIBLE_REPLICA."""
    ctx = Ctx((0, 1, 2, 3, 4), [(1, 2, 3, 4)])
    _consistent(ctx, ctx.alter(1, (1, 2, 3)))
    old_epoch = ctx.epoch(4)
    ctx.expire_session(4)
    ctx.c.handle(BrokerRegistration(4, 2, False), ("broker-4", "broker"))
    ctx.c.drain()
    ctx.unfence(4)
    assert ctx.epoch(4) != old_epoch and not ctx.c.store.brokers[4].fenced
    resp = ctx.alter(1, (1, 2, 3, 4), member_epochs={4: old_epoch})
    assert resp.error == INELIGIBLE_REPLICA


# --- the leader epoch on a controller-made ISR change, per era ---------------------------

@kafka("2.0.0", "ReplicaStateMachineTest", "testOnlineReplicaToOfflineReplicaTransition")
def test_zk_era_an_offline_follower_leaves_the_isr_with_the_next_leader_epoch() -> None:
    """2.0 (ZooKeeper controller): a replica going offline is removed from the ISR with
    ``LeaderAndIsr.newLeaderAndIsr``, i.e. leader epoch + 1, even though the leader stays —
    so the leader's next records are written in a new epoch (what
    ``EpochDrivenReplicationProtocolAcceptanceTest`` sees after bouncing the follower)."""
    ctx = Ctx((1, 2), [(1, 2)], era="2.0")
    assert (ctx.p().leader, ctx.p().leader_epoch) == (1, 0)
    ctx.fence(2)
    p = ctx.p()
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (1, (1,), 1, 1)


@kafka("2.0.0", "ReplicaStateMachineTest", "testOnlineReplicaToOfflineReplicaTransition")
def test_zk_era_an_offline_leader_is_replaced_with_one_leader_epoch_step() -> None:
    """2.0: the offline replica is the leader and another ISR member lives: the election and
    the ISR removal together move the leader epoch by exactly one (the election's)."""
    ctx = Ctx((1, 2), [(1, 2)], era="2.0")
    ctx.fence(1)
    p = ctx.p()
    assert (p.leader, p.isr, p.leader_epoch) == (2, (2,), 1)


@kafka("3.7.0", "PartitionChangeBuilderTest", "testIsrChangeDoesntBumpLeaderEpoch")
@kafka("3.7.0", "PartitionChangeBuilderTest", "testTriggerLeaderEpochBumpIfNeeded")
def test_kraft_isr_changes_keep_the_leader_epoch() -> None:
    """3.7 (KRaft, metadata version 3.6+, KAFKA-15021): neither the leader's AlterPartition
    shrink and expansion nor fencing a follower changes the leader epoch; only the
    partition epoch moves."""
    ctx = Ctx((1, 2, 3), [(1, 2, 3)], era="3.7")
    _consistent(ctx, ctx.alter(1, (1, 2)))
    _consistent(ctx, ctx.alter(1, (1, 2, 3)))
    ctx.fence(3)
    p = ctx.p()
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (1, (1, 2), 0, 3)


# --- ELR population (KIP-966; era 4.1), from a prepared partition state ------------------

def _elr_ctx(isr: tuple[int, ...], elr: tuple[int, ...] = (),
             last_known_elr: tuple[int, ...] = ()) -> Ctx:
    """Replicas (1, 2, 3, 4), leader 1, min ISR 3, with the given ISR, ELR and last-known
    ELR (``PartitionRegistration.Builder`` in Kafka's tests)."""
    ctx = Ctx((1, 2, 3, 4), [(1, 2, 3, 4)], min_isr=3)
    p = ctx.p()
    p.isr, p.elr, p.last_known_elr = isr, elr, last_known_elr
    return ctx


@kafka("3.7.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_IsrShrinkBelowMinISR")
def test_a_shrink_below_min_isr_puts_the_removed_members_in_the_elr() -> None:
    """ISR (1, 2, 3, 4) shrunk by the leader to (1, 2), under min ISR 3: ELR (3, 4), no
    last-known ELR."""
    ctx = _elr_ctx((1, 2, 3, 4))
    _consistent(ctx, ctx.alter(1, (1, 2)))
    assert (ctx.p().isr, ctx.p().elr, ctx.p().last_known_elr) == ((1, 2), (3, 4), ())


@kafka("3.7.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_IsrExpandAboveMinISR")
def test_an_expansion_back_to_min_isr_clears_the_elr_and_the_last_known_elr() -> None:
    """ISR (1, 2), ELR (3), last-known ELR (4): expanded to (1, 2, 3), which meets min ISR
    3, both are emptied."""
    ctx = _elr_ctx((1, 2), (3,), (4,))
    _consistent(ctx, ctx.alter(1, (1, 2, 3)))
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((), ())


@kafka("3.7.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_IsrAddNewMemberNotInELR")
def test_a_new_isr_member_from_outside_the_elr_leaves_the_elr_as_it_is() -> None:
    """ISR (1), ELR (3): 4 joins, ISR (1, 4) still under min ISR 3, and the ELR stays (3).
    (Kafka's test also keeps a last-known ELR (2), but it runs the builder with
    ``useLastKnownLeaderInBalancedRecovery`` off, which no Kafka controller does; in the
    mode they run, a partition with a leader has no last-known ELR.)"""
    ctx = _elr_ctx((1,), (3,))
    _consistent(ctx, ctx.alter(1, (1, 4)))
    assert (ctx.p().isr, ctx.p().elr, ctx.p().last_known_elr) == ((1, 4), (3,), ())


@kafka("3.7.0", "PartitionChangeBuilderTest",
       "testEligibleLeaderReplicas_RemoveUncleanShutdownReplicasFromElr")
def test_a_replica_back_from_an_unclean_shutdown_leaves_the_elr() -> None:
    """ISR (1), ELR (2, 3): broker 3 registers again after an unclean shutdown (KAFKA-15586):
    it leaves the ELR, which becomes (2). The last-known ELR stays empty: Kafka's test
    expects (3) there only because it turns ``useLastKnownLeaderInBalancedRecovery`` off
    (see the 4.1.0 tests below for the mode Kafka's controller runs in)."""
    ctx = _elr_ctx((1,), (2, 3))
    ctx.expire_session(3)
    ctx.c.handle(BrokerRegistration(3, 2, False), ("broker-3", "broker"))
    ctx.c.drain()
    assert (ctx.p().isr, ctx.p().elr, ctx.p().last_known_elr) == ((1,), (2,), ())


# --- the last-known leader (KIP-966 as Kafka 4.1.0's controller runs it) ----------------
#
# ``PartitionChangeBuilder.useLastKnownLeaderInBalancedRecovery`` is true unless a caller
# turns it off, and no caller in Kafka's main code does (4.1.0): the last-known ELR then
# holds one broker, the leader the partition had when a change emptied its ISR
# (``maybeUpdateLastKnownLeader``); it is emptied when the partition has a leader again.

def _restart_unclean(ctx: Ctx, broker: int) -> None:
    """``broker`` registers a new incarnation after an unclean shutdown (in Kafka's test
    context: ``handleBrokersShutdown(false, broker)``)."""
    rec = ctx.c.store.brokers[broker]
    ctx.expire_session(broker)
    ctx.c.handle(BrokerRegistration(broker, rec.incarnation + 1, False),
                 (f"broker-{broker}", "broker"))
    ctx.c.drain()


@kafka("4.1.0", "ReplicationControlManagerTest", "testEligibleLeaderReplicas_ShrinkToEmptyIsr")
def test_the_change_that_empties_the_isr_records_its_leader_as_last_known() -> None:
    """Min ISR 3, replicas (0, 1, 2), leader 0: fencing 1 and 2 leaves ISR (0), ELR (1, 2),
    no last-known ELR. Then 0 goes (Kafka's test: a clean shutdown, which removes it as a
    fencing does): ISR empty, ELR (0, 1, 2), last-known ELR (0) — the leader, not the
    members that left before it."""
    ctx = Ctx((0, 1, 2), [(0, 1, 2)], min_isr=3)
    ctx.fence(1, 2)
    assert (ctx.p().isr, ctx.p().elr, ctx.p().last_known_elr) == ((0,), (1, 2), ())
    ctx.fence(0, 1, 2)
    p = ctx.p()
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (0, 1, 2), (0,), -1)


@kafka("4.1.0", "ReplicationControlManagerTest", "testEligibleLeaderReplicas_UncleanShutdown")
def test_an_unclean_shutdown_of_the_last_isr_member_makes_it_the_last_known_leader() -> None:
    """Min ISR 3, replicas (0, 1, 2, 3): fencing 1, 2, 3 leaves ISR (0), ELR (2, 3). 3 back
    from an unclean shutdown leaves the ELR, (2), and is not recorded anywhere; 0, the last
    ISR member and leader, back from an unclean shutdown: ELR (2), last-known ELR (0)."""
    ctx = Ctx((0, 1, 2, 3), [(0, 1, 2, 3)], min_isr=3)
    ctx.fence(1, 2, 3)
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((2, 3), ())
    _restart_unclean(ctx, 3)
    assert (ctx.p().elr, ctx.p().last_known_elr) == ((2,), ())
    _restart_unclean(ctx, 0)
    p = ctx.p()
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (2,), (0,), -1)


@kafka("4.1.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_IsrCanShrinkToZero")
@kafka("4.1.0", "PartitionChangeBuilderTest", "testEligibleLeaderReplicas_ElectLastKnownLeader")
def test_the_last_leader_is_elected_when_it_returns_to_an_empty_isr_and_elr() -> None:
    """Min ISR 2, replicas (1, 2), leader 1: 2 then 1 fenced: ISR empty, ELR (1, 2),
    last-known ELR (1). 2 back from an unclean shutdown leaves the ELR and the last-known
    ELR stays (1) (Kafka's IsrCanShrinkToZero: an unclean shutdown does not touch it). 1
    back from an unclean shutdown empties the ELR; once it is unfenced the last-known
    leader is elected — an unclean election (ISR (1), recovering), whatever
    ``unclean.leader.election.enable`` says — and the field is emptied (ElectLastKnownLeader).
    A last-known ELR of every member that left (isrlab's model before issue 53) held (1, 2)
    here and elected nobody."""
    ctx = Ctx((1, 2), [(1, 2)], min_isr=2)
    ctx.fence(2)
    ctx.fence(1, 2)
    p = ctx.p()
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (1, 2), (1,), -1)
    _restart_unclean(ctx, 2)
    assert (p.isr, p.elr, p.last_known_elr, p.leader) == ((), (1,), (1,), -1)
    _restart_unclean(ctx, 1)
    assert not p.unclean
    assert (p.isr, p.elr, p.last_known_elr, p.leader, p.recovering) == (
        (1,), (), (), 1, True)


def _elect_preferred(ctx: Ctx, partitions: tuple[tuple[str, int], ...]) -> dict[str, str]:
    """``replication.electLeaders(PREFERRED, partitions)``: partition -> error."""
    from actors.messages import ElectLeaders, ElectLeadersResponse
    ctx.c.handle(ElectLeaders("preferred", partitions, 7), ("admin", "admin"))
    (resp,) = [e.msg for e in ctx.c.drain()
               if hasattr(e, "msg") and isinstance(e.msg, ElectLeadersResponse)]
    return {f"{t}-{p}": err for t, p, err in resp.results}


@kafka("3.7.0", "ReplicationControlManagerTest", "testElectPreferredLeaders")
def test_a_preferred_election_moves_leadership_only_to_an_in_sync_unfenced_first_replica(
        ) -> None:
    """Brokers 0-4, foo = [1,2,3], [2,3,4], [0,2,1], with 0 and 1 out (Kafka's test has 1 in
    controlled shutdown, which isrlab does not model yet: fenced stands in for it). Broker 2
    leads all three. A preferred election: foo-0 and foo-2 PREFERRED_LEADER_NOT_AVAILABLE,
    foo-1 ELECTION_NOT_NEEDED, bar-0/1 UNKNOWN_TOPIC_OR_PARTITION, nothing changes. Once 0
    and 1 are back and the leader has put them in the ISRs, the same request moves foo-0 to
    1 and foo-2 to 0, each with the next leader epoch."""
    ctx = Ctx((0, 1, 2, 3, 4), [(1, 2, 3), (2, 3, 4), (0, 2, 1)])
    ctx.fence(0, 1)
    assert [ctx.p(i).leader for i in range(3)] == [2, 2, 2]
    request = (("foo", 0), ("foo", 1), ("foo", 2), ("bar", 0), ("bar", 1))
    before = [(ctx.p(i).leader_epoch, ctx.p(i).partition_epoch) for i in range(3)]
    assert _elect_preferred(ctx, request) == {
        "foo-0": "PREFERRED_LEADER_NOT_AVAILABLE", "foo-1": "ELECTION_NOT_NEEDED",
        "foo-2": "PREFERRED_LEADER_NOT_AVAILABLE", "bar-0": "UNKNOWN_TOPIC_OR_PARTITION",
        "bar-1": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert [(ctx.p(i).leader_epoch, ctx.p(i).partition_epoch) for i in range(3)] == before
    ctx.unfence(0, 1)
    ctx.alter(2, (1, 2, 3), i=0)
    ctx.alter(2, (0, 2, 1), i=2)
    epochs = [ctx.p(i).leader_epoch for i in range(3)]
    assert _elect_preferred(ctx, request) == {
        "foo-0": "NONE", "foo-1": "ELECTION_NOT_NEEDED", "foo-2": "NONE",
        "bar-0": "UNKNOWN_TOPIC_OR_PARTITION", "bar-1": "UNKNOWN_TOPIC_OR_PARTITION"}
    assert [ctx.p(i).leader for i in range(3)] == [1, 2, 0]
    assert [ctx.p(i).leader_epoch for i in range(3)] == [epochs[0] + 1, epochs[1],
                                                         epochs[2] + 1]


@kafka("3.7.0", "ReplicationControlManagerTest",
       "testPreferredElectionDoesNotTriggerUncleanElection")
def test_a_preferred_election_never_elects_uncleanly() -> None:
    """foo-0 = [1,2,3] (3.7, no ELR): fencing 2, 3 then 1 leaves no leader and ISR [1]; with
    unclean election enabled and 2 back, a preferred election is still
    PREFERRED_LEADER_NOT_AVAILABLE and changes nothing."""
    ctx = Ctx((1, 2, 3, 4), [(1, 2, 3)], era="3.7")
    ctx.fence(2, 3)
    ctx.fence(1, 2, 3)
    p = ctx.p()
    assert (p.leader, p.isr) == (-1, (1,))
    p.unclean = True
    ctx.unfence(2)
    # (unfencing 2 does not elect it: ISR [1] has no live member and this test's controller
    # elects uncleanly only on a change it makes itself)
    state = (p.leader, p.isr, p.leader_epoch, p.partition_epoch)
    assert _elect_preferred(ctx, (("foo", 0),)) == {"foo-0": "PREFERRED_LEADER_NOT_AVAILABLE"}
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == state


@kafka("3.7.0", "ReplicationControlManagerTest", "testBalancePartitionLeaders")
def test_the_periodic_rebalance_elects_every_preferred_leader_that_can_lead() -> None:
    """Brokers 0-4 with 0 and 1 out: broker 2 leads foo-0, foo-1 and foo-2. Back, 1 is put in
    foo-0's ISR; the balance moves foo-0 to 1 and leaves foo-2 (its preferred 0 is still
    out): leaders 1, 2, 2, still imbalanced."""
    ctx = Ctx((0, 1, 2, 3, 4), [(1, 2, 3), (2, 3, 4), (0, 2, 1)])
    ctx.fence(0, 1)
    ctx.unfence(1)
    ctx.alter(2, (1, 2, 3), i=0)
    ctx.c.handle(Tick("leader_balance", 0, 0), ctx.c.address)
    ctx.c.drain()
    assert [ctx.p(i).leader for i in range(3)] == [1, 2, 2]

