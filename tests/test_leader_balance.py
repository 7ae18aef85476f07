"""The ZooKeeper-era controller's automatic leader rebalance (issue 19, item 2): unlike KRaft
(``tests/conformance/test_replication_control.py``), it weighs
``leader.imbalance.per.broker.percentage``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))

from test_replication_control import Ctx, _elect_preferred  # noqa: E402


def test_zk_era_rebalance_waits_for_the_imbalance_to_pass_the_per_broker_percentage() -> None:
    """The ZooKeeper controller (2.8, ``KafkaController.checkAndTriggerAutoLeaderRebalance``)
    moves leaders back to a preferred broker only when the share of partitions preferring it
    that another broker leads is above ``leader.imbalance.per.broker.percentage``: broker 1
    prefers 4 partitions and leads 3 — 25 % is above 10 % but not above 50 %."""
    from actors.messages import Tick

    def rebalanced(pct: int) -> list[int]:
        ctx = Ctx((1, 2, 3), [(1, 2, 3), (1, 3, 2), (1, 2, 3), (1, 3, 2)], era="2.8")
        ctx.c.imbalance_per_broker_pct = pct
        ctx.fence(1)
        ctx.unfence(1)
        for i in range(4):
            ctx.alter(ctx.p(i).leader, ctx.p(i).replicas, i=i)
        for i in (0, 1, 2):   # three of the four go back by hand
            _elect_preferred(ctx, (("foo", i),))
        ctx.c.handle(Tick("leader_balance", 0, 0), ctx.c.address)
        ctx.c.drain()
        return [ctx.p(i).leader for i in range(4)]

    assert rebalanced(10) == [1, 1, 1, 1]
    assert rebalanced(50)[3] != 1


def test_a_scripted_preferred_election_moves_leadership_back_after_a_restart() -> None:
    """``preferred_election`` as a plan step: broker 1 (first replica of orders-0) is killed,
    comes back and rejoins the ISR; the step at 16 s makes it leader again (an
    ``elect_leaders`` event naming the result, a ``leader_elected`` with election
    ``preferred``)."""
    import io

    import orjson

    from emulator.cluster import run
    from emulator.scenario import load
    from traces.writer import TraceWriter
    sc = load("default", ["faults.plan=[{at_s=3.0, fault=\"crash\", target=\"broker-1\", "
                          "duration_s=2.0}, {at_s=16.0, fault=\"preferred_election\", "
                          "target=\"orders-0\"}]", "duration_s=20.0", "heal_s=30.0"])
    buf = io.BytesIO()
    assert run(sc, 1, None, writer=TraceWriter(None, buffer=buf)).status == "ok"
    evs = [orjson.loads(x) for x in buf.getvalue().splitlines()]
    (req,) = [e for e in evs if e["event"] == "elect_leaders"]
    assert req["results"] == ["orders-0:NONE"] and req["trigger"] == "request"
    moved = [e for e in evs if e["event"] == "leader_elected" and e["ts_us"] == req["ts_us"]
             and e["topic"] == "orders" and e["partition"] == 0]
    assert [(e["election"], e["leader"]) for e in moved] == [("preferred", 1)]


def _rebalance(ctx: Ctx) -> None:
    from actors.messages import Tick
    ctx.c.handle(Tick("leader_balance", 0, 0), ctx.c.address)
    ctx.c.drain()


def test_zk_era_rebalance_waits_while_any_partition_is_being_reassigned() -> None:
    """2.8.0 ``KafkaController.checkAndTriggerAutoLeaderRebalance`` elects no preferred
    leader while ``partitionsBeingReassigned`` is not empty — of any partition. Partition 0
    is off its preferred leader; partition 1 is moving: nothing is rebalanced until the move
    is done."""
    ctx = Ctx((1, 2, 3), [(1, 2, 3), (2, 3, 1)], era="2.8")
    ctx.c.imbalance_per_broker_pct = 10
    ctx.fence(1)
    ctx.unfence(1)
    ctx.alter(ctx.p(0).leader, ctx.p(0).replicas, i=0)
    assert ctx.p(0).leader != 1
    ctx.p(1).adding, ctx.p(1).removing = (1,), (3,)     # a reassignment in progress
    _rebalance(ctx)
    assert ctx.p(0).leader != 1
    ctx.p(1).adding, ctx.p(1).removing = (), ()
    _rebalance(ctx)
    assert ctx.p(0).leader == 1


def test_zk_era_imbalance_counts_an_offline_partition_as_off_its_preferred_leader() -> None:
    """2.8.0 ``checkAndTriggerAutoLeaderRebalance``: a partition whose leadership is NoLeader
    is "not in preferred replica" (its leader is not the preferred broker), so it counts in
    the preferred broker's imbalance ratio. Broker 1 prefers two partitions: one led by 2,
    one offline — 100 %, above 50 %, so the led one moves back; counting only led partitions
    (50 %) would not have moved it."""
    ctx = Ctx((1, 2, 3), [(1, 2, 3), (1, 3, 2)], era="2.8")
    ctx.c.imbalance_per_broker_pct = 50
    ctx.fence(1)
    ctx.unfence(1)
    ctx.alter(ctx.p(0).leader, ctx.p(0).replicas, i=0)
    ctx.p(1).leader = -1                                 # offline (NoLeader)
    _rebalance(ctx)
    assert ctx.p(0).leader == 1
