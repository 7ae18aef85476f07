"""The leader's HW and a follower outside the ISR, held against Kafka's ``PartitionTest``.

Kafka 3.7.0 and 4.1.0 ``Partition.maybeIncrementLeaderHW`` lowers the new HW to a replica's
LEO when the replica is in the maximal ISR, or when ``shouldWaitForReplicaToJoinIsr``: it is
caught up (``ReplicaState.isCaughtUp``, within ``replica.lag.time.max.ms``) and
``isReplicaIsrEligible`` — not fenced, not shutting down, and ``isBrokerEpochIsrEligible``:
the broker epoch of its *last fetch* (``stateSnapshot.brokerEpoch``) is -1 or the alive
broker's epoch in the metadata. A broker that crashed and registered again has a new epoch,
so until it fetches under it the leader does not wait for it. (isrlab's broker states carry
no controlled-shutdown flag: docs/fidelity.md.)
"""

from __future__ import annotations

import pytest
from harness import batches, lead, replica
from kafkacite import kafka

from actors.messages import BrokerStates, Fetch, PartitionState, Produce
from actors.replica import Replica, ReplicaConfig

CONTROLLER = ("controller", "controller")
#: the follower's broker epoch in the metadata once its state is set: the same incarnation
#: (unfenced), fenced, or a new incarnation that has not fetched yet
STATES = {"unfenced": (8, False), "fenced": (8, True), "re-registered": (12, False)}


def _fetch(r: Replica, epoch: int, offset: int) -> None:
    r.handle(Fetch("t", 0, 2, epoch, offset, 4, 5, 0, 1000, 1), ("broker-2", "t-0"))
    r.drain()


@kafka("4.1.0", "PartitionTest", "testHighWatermarkIncreasesWithFencedOrShutdownFollower")
@kafka("3.7.0", "PartitionTest", "testHighWatermarkIncreasesWithFencedOrShutdownFollower")
@pytest.mark.parametrize("state", sorted(STATES))
def test_a_caught_up_follower_out_of_the_isr_holds_the_hw_only_while_eligible(
        state: str) -> None:
    """Leader 1 of (1, 2) over ten records, ISR (1, 2); broker 2 (epoch 8) fetches to the
    LEO: HW 10. Its state changes, ten more records are appended, and the controller shrinks
    the ISR to (1) in the same leader epoch. Unfenced, broker 2 is still caught up (within
    the lag) and eligible: the HW stays at 10 until it rejoins. Fenced, it no longer counts:
    the HW moves to 20. Re-registered under epoch 12 (isrlab's case of the same rule: the
    epoch clause of ``isReplicaIsrEligible``, which Kafka's test does not vary), its last
    fetch was the old incarnation's: the HW moves to 20 too."""
    cfg = ReplicaConfig(replica_lag_time_max_ms=30_000, replica_fetch_wait_max_ms=0)
    r = replica(1, batches((4, 10)), era="4.1", cfg=cfg)
    r.handle(BrokerStates(1, ((1, 7, False), (2, 8, False))), CONTROLLER)
    r.drain()
    lead(r, 5, replicas=(1, 2))
    _fetch(r, 8, 10)
    assert r.hw == 10 and r.followers[2].broker_epoch == 8
    epoch, fenced = STATES[state]
    r.handle(BrokerStates(1, ((1, 7, False), (2, epoch, fenced))), CONTROLLER)
    r.drain()
    recs = tuple((-1, f"n{i}", -1, 0, -1, -1, None) for i in range(10))
    r.handle(Produce("t", 0, 1, recs, 30000, 7), ("producer-0", "producer"))
    r.drain()
    r.handle(PartitionState(1, "t", 0, (1, 2), 1, 5, (1,), (), 6, False), CONTROLLER)
    r.drain()
    assert r.isr == r.maximal_isr == (1,)
    assert r.hw == (10 if state == "unfenced" else 20)
