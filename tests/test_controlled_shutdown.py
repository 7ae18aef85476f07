"""Controlled shutdown (issue 19, item 3): a broker stopped with
``controlled.shutdown.enable`` first has the controller move its leaderships and take it out
of the ISRs (KRaft ``handleBrokerInControlledShutdown``; ZooKeeper eras
``KafkaController.doControlledShutdown``), then stops cleanly; without it, leadership moves
only when the broker's session expires."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest

from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_events
from traces.writer import TraceWriter


def _events(name: str, overrides: list[str] | None = None) -> list[dict[str, Any]]:
    sc = load(name, overrides or [])
    buf = io.BytesIO()
    res = run(sc, sc["seed"], None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(x) for x in buf.getvalue().splitlines()]


def _led_by(evs: list[dict[str, Any]], broker: int, before_seq: int) -> set[str]:
    leader: dict[str, int] = {}
    for e in evs[:before_seq]:
        if e["event"] in ("leader_elected", "partition_offline"):
            leader[f"{e['topic']}-{e['partition']}"] = e.get("leader", -1)
    return {tp for tp, b in leader.items() if b == broker}


@pytest.mark.parametrize("protocol", ["2.8", "4.1"])
def test_leaderships_move_before_the_process_stops_and_the_restart_needs_no_recovery(
        protocol: str) -> None:
    evs = _events("rolling-restart", [f'protocol="{protocol}"'])
    for b in (1, 2, 3):
        start = next(e for e in evs if e["event"] == "controlled_shutdown" and e["broker"] == b)
        stop = next(e for e in evs if e["event"] == "node_crash"
                    and e["node"] == f"broker-{b}" and e["seq"] > start["seq"])
        assert stop["kind"] == "clean_shutdown"
        assert _led_by(evs, b, start["seq"]), f"broker {b} led nothing to move"
        assert not _led_by(evs, b, stop["seq"]), f"broker {b} still led something"
        # out of every ISR before it stopped (KRaft: KIP-841 refuses to put it back); in
        # the ZooKeeper eras a leader may put it back for the few ms it still fetches, and
        # the end of its session takes it out right after it stopped
        fenced = next(e for e in evs if e["event"] == "broker_fenced" and e["broker"] == b
                      and e["seq"] > start["seq"])
        assert fenced["reason"] == "controlled_shutdown"
        upto = stop["seq"] if protocol == "4.1" else next(
            e["seq"] for e in evs if e["ts_us"] > fenced["ts_us"])
        if protocol != "4.1":
            assert fenced["ts_us"] - stop["ts_us"] < 1_000_000
        isr: dict[str, list[int]] = {}
        for e in evs[:upto]:
            if e["event"] == "isr_change":
                isr[f"{e['topic']}-{e['partition']}"] = e["new"]
            elif e["event"] == "leader_elected":
                isr[f"{e['topic']}-{e['partition']}"] = e["isr"]
        assert not [tp for tp, members in isr.items() if b in members and len(members) > 1]
        # a clean stop: the restart loads its logs without recovery
        assert not [e for e in evs if e["event"] == "log_recovery"
                    and e["node"] == f"broker-{b}" and e["seq"] > stop["seq"]]
    result = check_events(evs)
    assert result.expect_met and result.anomalies["lost_acked_write"] == 0


def test_without_controlled_shutdown_leadership_waits_for_the_session_to_expire() -> None:
    evs = _events("rolling-restart", ["cluster.controlled.shutdown.enable=false"])
    stop = next(e for e in evs if e["event"] == "node_crash" and e["node"] == "broker-1")
    back = next(e for e in evs if e["event"] == "node_restart" and e["node"] == "broker-1")
    moved = next(e for e in evs if e["event"] == "leader_elected" and e["seq"] > stop["seq"]
                 and e["topic"] == "orders" and e["partition"] == 0)
    assert not [e for e in evs if e["event"] == "controlled_shutdown"]
    # the controller hears of nothing while it is down (5 s, less than the 9 s session):
    # orders-0 keeps its dead leader until the restarted broker registers again
    assert moved["ts_us"] > back["ts_us"] > stop["ts_us"] + 4_000_000


def test_a_broker_in_controlled_shutdown_is_never_elected_nor_unfenced_by_its_heartbeats(
        ) -> None:
    """Controller level: broker 1 leads foo-0 = [1, 2, 3]; its ControlledShutdownRequest moves
    leadership to 2 and drops 1 from the ISR; the answer says it leads nothing; a heartbeat
    from it afterwards does not unfence it, and a preferred election cannot pick it."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))
    from test_replication_control import Ctx, _elect_preferred

    from actors.messages import (
        BrokerHeartbeat,
        ControlledShutdownRequest,
        ControlledShutdownResponse,
    )
    ctx = Ctx((1, 2, 3), [(1, 2, 3)])
    ctx.c.handle(ControlledShutdownRequest(1, ctx.epoch(1)), ("broker-1", "broker"))
    out = ctx.c.drain()
    (resp,) = [e.msg for e in out if hasattr(e, "msg")
               and isinstance(e.msg, ControlledShutdownResponse)]
    assert resp.remaining == 0
    assert (ctx.p().leader, ctx.p().isr) == (2, (2, 3))
    ctx.c.handle(BrokerHeartbeat(1, ctx.epoch(1), 0), ("broker-1", "broker"))
    ctx.c.drain()
    assert ctx.c.store.brokers[1].fenced
    assert _elect_preferred(ctx, (("foo", 0),)) == {"foo-0": "PREFERRED_LEADER_NOT_AVAILABLE"}


def test_a_controlled_shutdown_that_ends_after_the_heal_began_still_comes_back() -> None:
    """A broker cut off when asked to stop can only finish its controlled shutdown once the
    partition heals — after the workload phase here. It stops then and is restarted at once
    (the heal restarts what is down), so the cluster converges (safe-acks-all seed 166 of a
    campaign with these steps did not)."""
    evs = _events("rolling-restart", [
        "duration_s=20.0",
        'faults.plan=[{at_s=18.0, fault="isolate", target="broker-1", duration_s=5.0}, '
        '{at_s=19.0, fault="controlled_shutdown", target="broker-1", duration_s=10.0}]'])
    heal = next(e for e in evs if e["event"] == "phase" and e["phase"] == "heal")
    stop = next(e for e in evs if e["event"] == "node_crash" and e["node"] == "broker-1")
    back = next(e for e in evs if e["event"] == "node_restart" and e["node"] == "broker-1")
    assert stop["ts_us"] > heal["ts_us"] and back["ts_us"] == stop["ts_us"]
    conv = [e for e in evs if e["event"] == "convergence"]
    assert conv and all(e["converged"] for e in conv)


def test_zk_era_controlled_shutdown_bumps_the_leader_epoch_of_partitions_it_follows() -> None:
    """2.8.0 ``KafkaController.doControlledShutdown`` puts the partitions the stopping broker
    follows through ``OfflineReplica``, and ``ReplicaStateMachine.doRemoveReplicasFromIsr``
    writes the shrunken ISR with ``newLeaderAndIsr``: the leader stays, its epoch goes up.
    KRaft (3.7) shrinks the ISR without a leader-epoch bump."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))
    from test_replication_control import Ctx

    from actors.messages import ControlledShutdownRequest
    for era, bump in (("2.8", 1), ("3.7", 0)):
        ctx = Ctx((1, 2, 3), [(1, 2, 3), (2, 3)], era=era)
        before = ctx.p(0).leader_epoch
        ctx.c.handle(ControlledShutdownRequest(2, ctx.epoch(2)), ("broker-2", "broker"))
        ctx.c.drain()
        assert ctx.p(0).leader == 1 and 2 not in ctx.p(0).isr
        assert ctx.p(0).leader_epoch == before + bump, era


def test_zk_era_controlled_shutdown_leaves_single_replica_partitions_led() -> None:
    """2.8.0 ``doControlledShutdown`` acts only on partitions with more than one assigned
    replica: a single-replica partition keeps its leader (and the broker is told it still
    leads one) until the process stops. KRaft moves nothing either — there is no one to
    move it to — but takes the broker out (ELR keeps it eligible)."""
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))
    from test_replication_control import Ctx

    from actors.messages import ControlledShutdownRequest, ControlledShutdownResponse
    ctx = Ctx((1, 2), [(2,), (1, 2)], era="2.8")
    ctx.c.handle(ControlledShutdownRequest(2, ctx.epoch(2)), ("broker-2", "broker"))
    out = [e.msg for e in ctx.c.drain() if isinstance(getattr(e, "msg", None),
                                                      ControlledShutdownResponse)]
    assert ctx.p(0).leader == 2 and ctx.p(0).isr == (2,)
    assert ctx.p(1).leader == 1
    assert out and out[0].remaining == 1
