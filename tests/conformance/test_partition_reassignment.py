"""Partition reassignment (KIP-455), held against Kafka 3.7.0's
``PartitionReassignmentReplicasTest``, ``PartitionReassignmentRevertTest``,
``PartitionChangeBuilderTest`` and ``ReplicationControlManagerTest``.

The list arithmetic is :mod:`actors.reassignment` (pure functions); the controller tests drive
isrlab's :class:`~actors.controller.Controller` sans-IO with AlterPartitionReassignments and
AlterPartition requests, as ``ReplicationControlTestContext`` does.
"""

from __future__ import annotations

from kafkacite import kafka
from test_replication_control import Ctx

from actors.messages import (
    NONE,
    AlterPartitionReassignments,
    AlterPartitionReassignmentsResponse,
    ElectLeaders,
)
from actors.reassignment import Assignment, maybe_complete, revert, start


def _start(current: tuple[int, ...], target: tuple[int, ...]) -> Assignment:
    return start(Assignment(current), target, zk=False)


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testNoneAddedOrRemoved")
def test_a_target_equal_to_the_replicas_adds_and_removes_nothing() -> None:
    """[3,2,1] to [3,2,1]: nothing is added or removed; the list stays."""
    a = _start((3, 2, 1), (3, 2, 1))
    assert (a.removing, a.adding, a.replicas) == ((), (), (3, 2, 1))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testAdditions")
def test_added_replicas_are_listed_sorted_and_the_replicas_are_the_target() -> None:
    """[3,2,1] to [3,6,2,1,5]: adding [5,6] (sorted), nothing removed, the list is the target."""
    a = _start((3, 2, 1), (3, 6, 2, 1, 5))
    assert (a.removing, a.adding, a.replicas) == ((), (5, 6), (3, 6, 2, 1, 5))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testRemovals")
def test_removed_replicas_follow_the_target_sorted() -> None:
    """[3,2,1,0] to [3,1]: removing [0,2] (sorted), appended after the target."""
    a = _start((3, 2, 1, 0), (3, 1))
    assert (a.removing, a.adding, a.replicas) == ((0, 2), (), (3, 1, 0, 2))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testAdditionsAndRemovals")
def test_the_replica_list_is_the_target_then_the_removing_replicas() -> None:
    """[3,2,1,0] to [7,3,1,9]: adding [7,9], removing [0,2], list [7,3,1,9,0,2]."""
    a = _start((3, 2, 1, 0), (7, 3, 1, 9))
    assert (a.removing, a.adding, a.replicas) == ((0, 2), (7, 9), (7, 3, 1, 9, 0, 2))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testRearrangement")
def test_a_rearrangement_only_reorders_the_replicas() -> None:
    """[3,2,1,0] to [0,1,3,2]: nothing added or removed; the list takes the new order."""
    a = _start((3, 2, 1, 0), (0, 1, 3, 2))
    assert (a.removing, a.adding, a.replicas) == ((), (), (0, 1, 3, 2))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testDoesNotCompleteReassignment")
def test_a_reassignment_waits_until_every_adding_replica_is_in_the_isr() -> None:
    """[0,1,2] to [3,4,5] with ISR [0,1,2,3,4]: 5 is not in, so nothing completes."""
    a = _start((0, 1, 2), (3, 4, 5))
    assert a.reassigning
    assert maybe_complete(a, (0, 1, 2, 3, 4)) is None


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testDoesNotCompleteReassignmentIfNoneOngoing")
def test_nothing_completes_without_a_reassignment() -> None:
    """A partition with no adding or removing replicas has nothing to complete."""
    a = Assignment((0, 1, 2))
    assert not a.reassigning
    assert maybe_complete(a, (0, 1, 2)) is None


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testDoesCompleteReassignmentAllNewReplicas")
def test_with_all_new_replicas_in_the_isr_the_old_ones_leave_list_and_isr() -> None:
    """[0,1,2] to [3,4,5] with all six in the ISR: list and ISR become [3,4,5]."""
    done = maybe_complete(_start((0, 1, 2), (3, 4, 5)), (0, 1, 2, 3, 4, 5))
    assert done == (Assignment((3, 4, 5)), (3, 4, 5))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testDoesCompleteReassignmentSomeNewReplicas")
def test_a_partial_move_completes_with_the_kept_and_new_replicas() -> None:
    """[0,1,2] to [0,1,3] with ISR [0,1,2,3]: list and ISR become [0,1,3]."""
    done = maybe_complete(_start((0, 1, 2), (0, 1, 3)), (0, 1, 2, 3))
    assert done == (Assignment((0, 1, 3)), (0, 1, 3))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testIsReassignmentInProgress")
def test_a_reassignment_is_in_progress_while_it_adds_or_removes_replicas() -> None:
    """In progress with adding and removing, with either alone; not with neither."""
    assert Assignment((0, 1, 3, 2), adding=(3,), removing=(2,)).reassigning
    assert Assignment((0, 1, 3, 2), removing=(2,)).reassigning
    assert Assignment((0, 1, 3, 2), adding=(3,)).reassigning
    assert not Assignment((0, 1, 2)).reassigning


@kafka("3.8.0", "PartitionReassignmentReplicasTest",
       "testDoesNotCompleteReassignmentIfIsrDoesNotHaveAllTargetReplicas")
def test_a_move_does_not_complete_while_a_kept_target_replica_is_out_of_the_isr() -> None:
    """[0,1,2] to [0,1,3] with ISR [3]: the adding replica is in, but targets 0 and 1 are
    not — no completion (KAFKA-15665). Kafka 3.7.0 completed it, leaving ISR [3]."""
    a = _start((0, 1, 2), (0, 1, 3))
    assert maybe_complete(a, (3,)) is None
    assert maybe_complete(a, (3,), all_targets=False) == (Assignment((0, 1, 3)), (3,))


@kafka("3.7.0", "PartitionReassignmentReplicasTest", "testOriginalReplicas")
def test_the_original_replicas_are_the_list_without_the_adding_ones() -> None:
    """[0,1,2] to [0,1,3]: the original replicas are [0,1,2]."""
    assert _start((0, 1, 2), (0, 1, 3)).original == (0, 1, 2)


@kafka("3.7.0", "PartitionReassignmentRevertTest", "testNoneAddedOrRemoved")
def test_reverting_nothing_keeps_replicas_and_isr() -> None:
    """No reassignment: the revert keeps list [3,2,1] and ISR [3,2], clean."""
    assert revert(Assignment((3, 2, 1)), (3, 2)) == (Assignment((3, 2, 1)), (3, 2), False)


@kafka("3.7.0", "PartitionReassignmentRevertTest", "testSomeRemoving")
def test_reverting_a_removal_keeps_the_removing_replicas() -> None:
    """Removing [2,1] only: the revert keeps all of [3,2,1] and the ISR, clean."""
    a = Assignment((3, 2, 1), removing=(2, 1))
    assert revert(a, (3, 2)) == (Assignment((3, 2, 1)), (3, 2), False)


@kafka("3.7.0", "PartitionReassignmentRevertTest", "testSomeAdding")
def test_reverting_drops_the_adding_replicas_from_list_and_isr() -> None:
    """Adding [4,5]: the revert leaves [3,2,1] and the ISR without 4 and 5 ([2]), clean."""
    a = Assignment((4, 5, 3, 2, 1), adding=(4, 5))
    assert revert(a, (4, 5, 2)) == (Assignment((3, 2, 1)), (2,), False)


@kafka("3.7.0", "PartitionReassignmentRevertTest", "testSomeRemovingAndAdding")
def test_reverting_an_exchange_keeps_the_original_replicas() -> None:
    """Adding [4,5], removing [2]: back to [3,2,1] with ISR [2], clean."""
    a = Assignment((4, 5, 3, 2, 1), adding=(4, 5), removing=(2,))
    assert revert(a, (4, 5, 2)) == (Assignment((3, 2, 1)), (2,), False)


@kafka("3.7.0", "PartitionReassignmentRevertTest", "testIsrSpecialCase")
def test_a_revert_that_would_empty_the_isr_puts_the_first_original_back_uncleanly() -> None:
    """The ISR held only adding replicas: the first original replica becomes the ISR alone —
    an unclean step (it may lack records every ISR member had)."""
    a = Assignment((4, 5, 3, 2, 1), adding=(4, 5), removing=(2,))
    assert revert(a, (4, 5)) == (Assignment((3, 2, 1)), (3,), True)


# -- the controller ---------------------------------------------------------------------------

def _reassign(ctx: Ctx, *parts: tuple[int, tuple[int, ...]], topic: str = "foo"
              ) -> dict[int, str]:
    """AlterPartitionReassignments from an admin client: per partition, its error."""
    req = AlterPartitionReassignments(tuple((topic, i, r) for i, r in parts), 7)
    ctx.c.handle(req, ("admin", "admin"))
    (resp,) = [e.msg for e in ctx.c.drain() if isinstance(getattr(e, "msg", None),
                                                          AlterPartitionReassignmentsResponse)]
    assert resp.correlation == 7
    return {p: err for _, p, err in resp.results}


@kafka("3.7.0", "PartitionChangeBuilderTest", "testReassignmentRearrangesReplicas")
@kafka("3.7.0", "PartitionChangeBuilderTest", "testRemovingReplicaReassignment")
@kafka("3.7.0", "ReplicationControlManagerTest", "testCancelReassignPartitions")
def test_moves_that_need_no_new_replica_complete_at_once() -> None:
    """3.7.0 (era 3.7): partition 0 [1,2,3,4] with 3 fenced (ISR [1,2,4]) goes to [1,2,3]:
    no replica is added, so it completes at once — 4 leaves list and ISR and, a replica
    having left, the leader epoch bumps (leader 1 stays) — although target replica 3 is not
    in the ISR (KAFKA-15665). Partition 1 [0,1,2,3] is rearranged to [1,2,3,0]: it completes
    at once, the leader (0) and its epoch stay. A target naming an unregistered broker is
    refused."""
    ctx = Ctx((0, 1, 2, 3, 4), [(1, 2, 3, 4), (0, 1, 2, 3), (4, 3, 1, 0)], era="3.7")
    ctx.fence(3)
    assert ctx.p(0).isr == (1, 2, 4) and ctx.p(0).leader_epoch == 0
    errors = _reassign(ctx, (0, (1, 2, 3)), (1, (1, 2, 3, 0)), (2, (5, 6, 7)))
    assert errors == {0: NONE, 1: NONE, 2: "INVALID_REPLICA_ASSIGNMENT"}
    p0, p1 = ctx.p(0), ctx.p(1)
    assert (p0.replicas, p0.isr, p0.leader, p0.leader_epoch) == ((1, 2, 3), (1, 2), 1, 1)
    assert not p0.assignment.reassigning
    assert (p1.replicas, p1.isr, p1.leader, p1.leader_epoch) == ((1, 2, 3, 0), (0, 1, 2), 0, 0)
    assert ctx.p(2).replicas == (4, 3, 1, 0)


@kafka("3.8.0", "ReplicationControlManagerTest", "testCancelReassignPartitions")
def test_since_kafka15665_a_move_completes_only_with_every_target_replica_in_the_isr() -> None:
    """3.8.0 (era 4.1): the same partition 0 moved to [1,2,4] completes at once (all three
    in the ISR: [1,2,4], leader epoch 1); moved to [1,2,3] instead it waits for 3 to be in
    the ISR, keeping 4 in the list meanwhile."""
    ctx = Ctx((0, 1, 2, 3, 4), [(1, 2, 3, 4), (1, 2, 3, 4)])
    ctx.fence(3)
    assert _reassign(ctx, (0, (1, 2, 4)), (1, (1, 2, 3))) == {0: NONE, 1: NONE}
    p0, p1 = ctx.p(0), ctx.p(1)
    assert (p0.replicas, p0.isr, p0.leader, p0.leader_epoch) == ((1, 2, 4), (1, 2, 4), 1, 1)
    assert (p1.replicas, p1.removing, p1.isr) == ((1, 2, 3, 4), (4,), (1, 2, 4))
    ctx.unfence(3)
    ctx.alter(1, (1, 2, 3, 4), i=1)
    assert (p1.replicas, p1.isr, p1.removing) == ((1, 2, 3), (1, 2, 3), ())


@kafka("3.7.0", "PartitionChangeBuilderTest", "testAddingReplicaReassignment")
@kafka("3.7.0", "ReplicationControlManagerTest", "testCancelReassignPartitions")
def test_adding_replicas_enter_the_list_outside_the_isr_and_a_cancel_takes_them_out() -> None:
    """bar-0 [4,3,2] (ISR [4,2] with 3 fenced) to [1,2,3,4,0]: the list becomes the target,
    adding [0,1], the ISR and the leader epoch stay. Cancelling reverts to the original
    replicas — [2,3,4]: the target order is kept, the original order is not — with the
    leader epoch bumped (replicas left)."""
    ctx = Ctx((0, 1, 2, 3, 4), [(4, 3, 2)])
    ctx.fence(3)
    assert _reassign(ctx, (0, (1, 2, 3, 4, 0))) == {0: NONE}
    p = ctx.p(0)
    assert (p.replicas, p.adding, p.removing, p.isr, p.leader, p.leader_epoch) == (
        (1, 2, 3, 4, 0), (0, 1), (), (4, 2), 4, 0)
    assert _reassign(ctx, (0, ())) == {0: NONE}
    assert (p.replicas, p.adding, p.removing, p.isr, p.leader, p.leader_epoch) == (
        (2, 3, 4), (), (), (4, 2), 4, 1)
    assert _reassign(ctx, (0, ())) == {0: "NO_REASSIGNMENT_IN_PROGRESS"}


@kafka("3.7.0", "PartitionChangeBuilderTest", "testIsrEnlargementCompletesReassignment")
def test_the_isr_expansion_that_takes_in_the_last_adding_replica_completes_the_move() -> None:
    """[1,2,3] to [2,3,4] (adding 4, removing 1), leader 1: the AlterPartition that puts 4
    in the ISR completes it in the same change — list and ISR [2,3,4], and leader 1, being
    removed, is replaced by the first target replica in the ISR."""
    ctx = Ctx((1, 2, 3, 4), [(1, 2, 3)])
    assert _reassign(ctx, (0, (2, 3, 4))) == {0: NONE}
    assert ctx.p().replicas == (2, 3, 4, 1)
    resp = ctx.alter(1, (1, 2, 3, 4))
    p = ctx.p()
    assert resp.error == NONE
    assert (p.replicas, p.isr, p.leader, p.adding, p.removing) == ((2, 3, 4), (2, 3, 4), 2, (),
                                                                  ())


@kafka("3.7.0", "PartitionChangeBuilderTest",
       "testStoppedLeaderIsDemotedAfterReassignmentCompletesEvenIfNoNewEligibleLeaders")
def test_a_removed_leader_is_demoted_even_when_no_new_replica_can_lead() -> None:
    """[0,1] to [2,3] with brokers 2 and 3 fenced when the ISR expansion completes the move:
    the partition goes offline rather than keep leader 0, which is no longer a replica. (The
    ZooKeeper-era controller of 2.8, which does not check the eligibility of new ISR members
    — KIP-841 is 3.3 — lets the expansion through, as Kafka's builder test does directly.)"""
    ctx = Ctx((0, 1, 2, 3), [(0, 1)])
    assert _reassign(ctx, (0, (2, 3))) == {0: NONE}
    ctx.alter(0, (0, 1, 2, 3))
    assert ctx.p().replicas == (2, 3) and ctx.p().leader == 2
    ctx2 = Ctx((0, 1, 2, 3), [(0, 1)], era="2.8")
    _reassign(ctx2, (0, (2, 3)))
    ctx2.c.store.brokers[2].fenced = ctx2.c.store.brokers[3].fenced = True
    ctx2.alter(0, (0, 1, 2, 3))
    p = ctx2.p()
    assert (p.replicas, p.isr, p.leader) == ((2, 3), (2, 3), -1)


@kafka("3.7.0", "ReplicationControlManagerTest",
       "testReassignPartitionsHandlesNewReassignmentThatRemovesPreviouslyAddingReplicas")
def test_a_new_reassignment_replaces_one_in_progress_and_removes_its_adding_replicas() -> None:
    """[0,1] to [2,3]; 2 joins the ISR and is elected preferred leader; then [4,5]: the list
    is [4,5,0,1,2,3], removing 0-3 (2, the leader, included: it still leads until the move
    completes); once 4 and 5 are in the ISR, [4,5] is the list and the ISR and 4 leads."""
    ctx = Ctx((0, 1, 2, 3, 4, 5), [(0, 1)])
    assert _reassign(ctx, (0, (2, 3))) == {0: NONE}
    p = ctx.p()
    assert (p.replicas, p.adding, p.removing) == ((2, 3, 0, 1), (2, 3), (0, 1))
    assert ctx.alter(0, (0, 1, 2)).isr == (0, 1, 2)
    ctx.c.handle(ElectLeaders("preferred", (("foo", 0),), 1), ("admin", "admin"))
    ctx.c.drain()
    assert p.leader == 2
    assert _reassign(ctx, (0, (4, 5))) == {0: NONE}
    assert (p.replicas, p.adding, p.removing, p.leader) == (
        (4, 5, 0, 1, 2, 3), (4, 5), (0, 1, 2, 3), 2)
    ctx.alter(2, (0, 1, 2, 3, 4, 5))
    assert (p.replicas, p.isr, p.leader, p.adding, p.removing) == ((4, 5), (4, 5), 4, (), ())
