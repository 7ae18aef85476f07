"""The leader's HW and a restarted follower: a caught-up replica outside the ISR holds the HW
back only while it is ISR-eligible, and eligibility compares the broker epoch of its *last
fetch* with the one the metadata now has.

Kafka 3.7.0 and 4.1.0 ``Partition.maybeIncrementLeaderHW`` lowers the new HW to a replica's
LEO when the replica is in the maximal ISR, or when ``shouldWaitForReplicaToJoinIsr``: it is
caught up (``ReplicaState.isCaughtUp``, within ``replica.lag.time.max.ms``) and
``isReplicaIsrEligible`` — not fenced, not shutting down, and ``isBrokerEpochIsrEligible``
(the stored epoch of its last fetch is -1 or equals the cached alive-broker epoch). A broker
that crashed and registered again has a new epoch; until it fetches under it, it is not
eligible, so acks=all writes complete on the ISR the controller committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))

from harness import batches, lead, replica  # noqa: E402

from actors.messages import BrokerStates, Fetch, PartitionState, Produce  # noqa: E402
from actors.replica import Replica, ReplicaConfig  # noqa: E402

CONTROLLER = ("controller", "controller")


def _fetch(r: Replica, broker: int, epoch: int, offset: int, last_epoch: int = 4) -> None:
    r.handle(Fetch("t", 0, broker, epoch, offset, last_epoch, 5, 0, 1000, 1),
             (f"broker-{broker}", "t-0"))
    r.drain()


def _leader_with_a_restarted_follower(new_epoch_of_2: int) -> Replica:
    """Leader 1 of (1, 2, 3), all in sync at 10; five more records, which broker 3 fetches;
    broker 2 does not fetch again. The controller fences broker 2 out of the ISR (same leader
    epoch, partition epoch 6), and broker 2 is alive with epoch ``new_epoch_of_2``."""
    cfg = ReplicaConfig(replica_lag_time_max_ms=30_000, replica_fetch_wait_max_ms=0)
    r = replica(1, batches((4, 10)), era="4.1", cfg=cfg)
    r.handle(BrokerStates(1, ((1, 7, False), (2, 8, False), (3, 9, False))), CONTROLLER)
    r.drain()
    lead(r, 5, replicas=(1, 2, 3))
    _fetch(r, 2, 8, 10)
    _fetch(r, 3, 9, 10)
    assert r.hw == 10
    recs = tuple((-1, f"n{i}", -1, 0, -1, -1, None) for i in range(5))
    r.handle(Produce("t", 0, -1, recs, 30000, 7), ("producer-0", "producer"))
    r.drain()
    r.now_us = 1_000_000
    _fetch(r, 3, 9, 15, last_epoch=5)
    assert r.hw == 10   # broker 2, in the ISR, is at 10
    r.handle(BrokerStates(1, ((1, 7, False), (2, new_epoch_of_2, False), (3, 9, False))),
             CONTROLLER)
    r.drain()
    r.handle(PartitionState(1, "t", 0, (1, 2, 3), 1, 5, (1, 3), (), 6, False), CONTROLLER)
    r.drain()
    return r


def test_a_restarted_follower_whose_last_fetch_was_its_old_incarnation_does_not_hold_the_hw(
        ) -> None:
    r = _leader_with_a_restarted_follower(new_epoch_of_2=12)
    assert r.isr == (1, 3)
    assert r.hw == 15


def test_a_caught_up_follower_of_the_same_incarnation_still_holds_the_hw_out_of_the_isr(
        ) -> None:
    r = _leader_with_a_restarted_follower(new_epoch_of_2=8)
    assert r.isr == (1, 3)
    assert r.hw == 10   # caught up 1 s ago, eligible: the leader waits for it to rejoin
