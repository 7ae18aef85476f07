"""Partition reassignment: the replica lists a reassignment goes through (KIP-455).

Pure functions over replica lists, used by the controller (:mod:`actors.controller`), in
the words of Kafka's ``PartitionReassignmentReplicas`` and ``PartitionReassignmentRevert``
(metadata module, 3.7.0) and the ZooKeeper controller's ``ReplicaAssignment`` (2.8.0):

* **start** (``PartitionReassignmentReplicas(current, target)``): removing = current minus
  target, adding = target minus current; the replica list becomes target followed by the
  removing replicas — so the first target replica is the preferred leader from the start.
  KRaft keeps adding and removing sorted (``TreeSet``); the ZooKeeper controller keeps
  them, and the removing replicas appended to the target, in their original order
  (``ReplicaAssignment.fromOldAndNewReplicas``: ``(target ++ original).distinct``).
* **completion** (``maybeCompleteReassignment``): once every target replica is in the ISR
  without the removing ones — and that ISR and the remaining list are not empty — the
  removing replicas leave the replica list and the ISR (3.8.0, KAFKA-15665; 3.7.0 asked it
  of the adding replicas only). The ZooKeeper controller's ``isReassignmentComplete`` asks
  the same: every target replica in the ISR.
* **revert** (``PartitionReassignmentRevert``, a cancellation): the original replicas (the
  list without the adding ones) and the ISR without the adding ones; when that ISR is
  empty, the first original replica is put back in it alone — which KRaft calls unclean
  and allows only with ``unclean.leader.election.enable``, since that replica may lack
  committed records.

KRaft's ``ReplicationControlManager.changePartitionReassignment`` sets the new adding and
removing lists only when they are not empty: a partition keeps the previous lists
otherwise. A second reassignment back to the original replicas while one is in progress
therefore keeps the first one's adding list; before KAFKA-15665 (3.8), which completes on
the target replicas, those could never be all in the ISR without the removing replicas and
the reassignment waited until it was cancelled or replaced. isrlab keeps both (a test
documents it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Assignment:
    """A partition's replica list with its ongoing reassignment (KRaft's
    ``PartitionRegistration.replicas / addingReplicas / removingReplicas``)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas the partition will have once the reassignment completes."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """``originalReplicas``: the list without the replicas being added."""
        return tuple(r for r in self.replicas if r not in self.adding)


def invalid_target(target: Sequence[int], registered: Sequence[int]) -> str:
    """Why ``target`` is not a valid replica list (``validateManualPartitionAssignment``,
    ``KafkaController.validateReplicas``); "" when it is."""
    if not target:
        return "empty replica list"
    if len(set(target)) != len(target):
        return f"duplicate replica ids in {list(target)}"
    unknown = [b for b in target if b not in registered]
    if unknown:
        return f"broker {unknown[0]} is not registered"
    return ""


def start(current: Assignment, target: Sequence[int], *, zk: bool) -> Assignment:
    """The assignment once a reassignment of ``current`` to ``target`` begins (see the
    module note); a target equal to the replica list changes nothing."""
    replicas = current.replicas
    removing = [r for r in replicas if r not in target]
    adding = [r for r in target if r not in replicas]
    if not zk:
        removing.sort()
        adding.sort()
    merged = (*target, *removing)
    if zk:
        # the ZooKeeper controller replaces any ongoing reassignment outright
        return Assignment(tuple(merged), tuple(adding), tuple(removing))
    # changePartitionReassignment: only non-empty lists replace the partition's own
    return Assignment(tuple(merged), tuple(adding) or current.adding,
                      tuple(removing) or current.removing)


def maybe_complete(a: Assignment, isr: Sequence[int], *, all_targets: bool = True
                   ) -> tuple[Assignment, tuple[int, ...]] | None:
    """``maybeCompleteReassignment``: the finished assignment and its ISR, or None while
    a target replica is not in the ISR (or nothing would be left). With ``all_targets``
    false, KRaft before 3.8 (KAFKA-15665): only the adding replicas must be in it, so a
    move can complete with a target replica out of sync and the ISR below the target
    replication factor — the removed replicas, which had every record, delete their logs."""
    if not a.reassigning:
        return None
    new_isr = tuple(r for r in isr if r not in a.removing)
    replicas = tuple(r for r in a.replicas if r not in a.removing)
    if not new_isr or not replicas:
        return None
    if any(r not in new_isr for r in (replicas if all_targets else a.adding)):
        return None
    return Assignment(replicas), new_isr


def revert(a: Assignment, isr: Sequence[int]) -> tuple[Assignment, tuple[int, ...], bool]:
    """``PartitionReassignmentRevert``: the original assignment, its ISR, and whether
    putting the ISR back needed an unclean step (the first original replica alone)."""
    replicas = a.original
    new_isr = [r for r in isr if r not in a.adding]
    if new_isr:
        return Assignment(replicas), tuple(new_isr), False
    return Assignment(replicas), (replicas[0],), True
