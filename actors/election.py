"""Choosing a partition's leader: one pure function for every era.

KRaft's ``PartitionChangeBuilder.electAnyLeader`` (3.7.0) decides, in order:

1. keep the current leader if it is still a valid leader;
2. else the first replica, in assignment order, that is a valid leader: in the target ISR,
   or — only when the ISR is empty — in the ELR (KIP-966), and acceptable (alive,
   unfenced, not shutting down);
3. else, with ELR and the last-known-leader recovery, when ISR and ELR are both empty and
   exactly one replica is last known eligible: that one (an unclean election);
4. else, if unclean elections are allowed for the topic: the first acceptable replica;
5. else no leader: the partition is offline.

The ZooKeeper controller's ``PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection``
(2.8.0) is the same rule without ELR: the first live ISR member in assignment order, else
(unclean enabled) the first live replica. isrlab's controller calls this function for every
election; the result names which step chose, so the controller can trace it and apply the
step's side effects (the ISR set to the new leader alone for ELR and unclean elections).

One deliberate difference (docs/fidelity.md): 3.7.0's ``canElectLastKnownLeader`` logs but
does not refuse a last-known leader that is not alive; isrlab elects it only when alive (a
dead leader serves nothing; the election is tried again when it registers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

NO_LEADER: Final = -1


@dataclass(frozen=True, slots=True)
class Election:
    leader: int
    #: which step chose: "keep", "clean", "elr", "last_known_leader", "unclean" or "none"
    kind: str

    @property
    def unclean(self) -> bool:
        """``ElectionResult.unclean``: the new leader may lack committed records."""
        return self.kind in ("last_known_leader", "unclean")


def elect_leader(replicas: Sequence[int], isr: Sequence[int], elr: Sequence[int],
                 last_known_elr: Sequence[int], current: int,
                 acceptable: Callable[[int], bool], *, unclean_allowed: bool,
                 elr_enabled: bool) -> Election:
    """The leader ``electAnyLeader`` picks (see the module note)."""

    def valid(r: int) -> bool:
        return (r in isr or (not isr and r in elr)) and acceptable(r)

    if current != NO_LEADER and valid(current):
        return Election(current, "keep")
    for r in replicas:
        if valid(r):
            return Election(r, "clean" if r in isr else "elr")
    if (elr_enabled and not isr and not elr and len(last_known_elr) == 1
            and acceptable(last_known_elr[0])):
        return Election(last_known_elr[0], "last_known_leader")
    if unclean_allowed:
        for r in replicas:
            if acceptable(r):
                return Election(r, "unclean")
    return Election(NO_LEADER, "none")
