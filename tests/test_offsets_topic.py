"""``__consumer_offsets`` as a replicated internal topic (issue 18, item 3): a group's
coordinator is the leader of partition ``Utils.abs(groupId.hashCode) % n``
(``GroupMetadataManager.partitionFor``), commits are records of that partition answered once
the HW passes them, and coordinator fail-over is that partition's leader election — the new
leader loads the log, answering COORDINATOR_LOAD_IN_PROGRESS meanwhile."""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import orjson

from actors.coordinator import (
    COORDINATOR_LOAD_IN_PROGRESS,
    NOT_COORDINATOR,
    OFFSETS_TOPIC,
    GroupCoordinator,
    partition_for,
)
from actors.core import Send
from actors.eras import rules_for
from actors.fetcher import FetcherConfig
from actors.log import PartitionLog
from actors.messages import Fetch, OffsetCommit, OffsetCommitResponse, OffsetFetch, PartitionState
from actors.replica import Replica, ReplicaConfig
from actors.replica_manager import ReplicaManager
from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_events
from traces.writer import TraceWriter

G0 = partition_for("g0", 50)


@cache
def _trace(name: str) -> tuple[dict[str, Any], ...]:
    sc = load(name)
    buf = io.BytesIO()
    res = run(sc, sc["seed"], None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return tuple(orjson.loads(line) for line in buf.getvalue().splitlines())


def _coordinator() -> tuple[GroupCoordinator, Replica]:
    """Broker 1's replica manager with its coordinator, leading g0's offsets partition with
    broker 2 as follower (both in the ISR)."""
    log = PartitionLog(OFFSETS_TOPIC, G0)
    r = Replica("broker-1", 1, log, rules_for("4.1"), ReplicaConfig(
        replica_fetch_wait_max_ms=0, min_insync_replicas=1), clean_start=True)
    c = GroupCoordinator("broker-1", 1, 1, num_partitions=50)
    ReplicaManager("broker-1", 1, [r], (1, 2), FetcherConfig(), c)
    r.start()
    r.handle(PartitionState(1, OFFSETS_TOPIC, G0, (1, 2), 1, 0, (1, 2), (), 0, False),
             ("controller", "controller"))
    r.drain()
    c.drain()
    return c, r


def test_partition_for_is_abs_of_the_java_hash_of_the_group_id_mod_n() -> None:
    # "g0".hashCode() = 'g' * 31 + '0' = 103 * 31 + 48 = 3241
    assert partition_for("g0", 50) == 3241 % 50 == 41
    assert partition_for("g0", 7) == 3241 % 7
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE: Utils.abs makes it 0
    assert partition_for("polygenelubricants", 50) == 0


def test_a_loading_coordinator_answers_load_in_progress_then_serves_the_loaded_offsets(
        ) -> None:
    c, r = _coordinator()
    assert c.state[G0][0] == "loading"
    c.handle(OffsetFetch("g0", "orders", 0, 7), ("consumer-g0-0", "consumer"))
    (ans,) = [e.msg for e in c.drain() if isinstance(e, Send)]
    assert ans.error == COORDINATOR_LOAD_IN_PROGRESS
    c.now_us = 5_000
    c.handle(_load_tick(c), ("broker-1", "group-coordinator"))
    assert c.state[G0][0] == "loaded"
    c.handle(OffsetFetch("g0", "orders", 0, 8), ("consumer-g0-0", "consumer"))
    (ans,) = [e.msg for e in c.drain() if isinstance(e, Send)]
    assert (ans.error, ans.offset) == ("NONE", -1)
    # a group of another offsets partition is not ours
    other = next(g for g in (f"g{i}" for i in range(1, 99)) if partition_for(g, 50) != G0)
    c.handle(OffsetFetch(other, "orders", 0, 9), ("consumer-x", "consumer"))
    (ans,) = [e.msg for e in c.drain() if isinstance(e, Send)]
    assert ans.error == NOT_COORDINATOR


def _load_tick(c: GroupCoordinator) -> Any:
    from actors.messages import Tick
    return Tick("coordinator_load", G0, c.state[G0][1])


def test_a_commit_is_answered_once_the_hw_passes_its_record_and_then_read_back() -> None:
    c, r = _coordinator()
    c.handle(_load_tick(c), ("broker-1", "group-coordinator"))
    c.drain()
    c.handle(OffsetCommit("g0", "orders", 0, 42, -1, 5), ("consumer-g0-0", "consumer"))
    assert not [e for e in c.drain() if isinstance(e, Send)
                and isinstance(e.msg, OffsetCommitResponse)]
    assert r.leo == 1 and r.hw == 0            # appended, not yet replicated
    # the follower fetches past the record: the HW moves, the commit is answered
    r.follower_fetch(Fetch(OFFSETS_TOPIC, G0, 2, -1, 1, -1, 0, 0, 100, 1))
    (ans,) = [e.msg for e in c.drain() if isinstance(e, Send)
              and isinstance(e.msg, OffsetCommitResponse)]
    assert ans.error == "NONE" and r.hw == 1
    c.handle(OffsetFetch("g0", "orders", 0, 6), ("consumer-g0-0", "consumer"))
    (fetched,) = [e.msg for e in c.drain() if isinstance(e, Send)]
    assert fetched.offset == 42


def test_the_coordinator_is_the_leader_of_the_groups_offsets_partition() -> None:
    evs = _trace("coordinator-failover")
    leader: dict[str, int] = {}
    for e in evs:
        if e["event"] == "leader_elected" and e["topic"] == OFFSETS_TOPIC:
            leader[OFFSETS_TOPIC] = e["leader"]
        if e["event"] == "rebalance":
            assert e["node"] == f"broker-{leader[OFFSETS_TOPIC]}"
            assert e["actor"] == "group-coordinator"
    assert {e["partition"] for e in evs if e.get("topic") == OFFSETS_TOPIC} == {G0}


def test_a_killed_coordinator_hands_the_group_to_the_new_leader_which_loads_it() -> None:
    evs = _trace("coordinator-failover")
    crash = next(e for e in evs if e["event"] == "node_crash")
    loaded = [e for e in evs if e["event"] == "coordinator_loaded" and e["seq"] > crash["seq"]]
    assert loaded and loaded[0]["node"] != crash["node"]
    assert loaded[0]["groups"] == ["g0"] and loaded[0]["offsets"] > 0
    # the group goes on with the generation it had: no member had to join again
    gens = [e["generation"] for e in evs if e["event"] == "rebalance"]
    assert max(gens) == max(e["generation"] for e in evs if e["event"] == "rebalance"
                            and e["seq"] < crash["seq"])
    # consumers keep reading after the fail-over, and every read-back offset is right
    assert any(e["event"] == "consume" and e["seq"] > loaded[0]["seq"] for e in evs)
    result = check_events(evs)
    assert result.anomalies["lost_committed_offset"] == 0 and result.expect_met


def test_with_one_offsets_replica_a_power_loss_loses_acknowledged_commits() -> None:
    evs = _trace("offsets-rf1-power-loss")
    result = check_events(evs)
    assert result.anomalies["lost_committed_offset"] > 0
    (first, *_) = result.details["lost_committed_offset"]
    assert first["fetched"] < first["acknowledged"]
    # and with the default replication factor the same power loss loses none
    sc = load("offsets-rf1-power-loss", ["cluster.offsets.topic.replication.factor=3"])
    buf = io.BytesIO()
    run(sc, sc["seed"], None, writer=TraceWriter(None, buffer=buf))
    again = check_events(orjson.loads(line) for line in buf.getvalue().splitlines())
    assert again.anomalies["lost_committed_offset"] == 0


def test_a_member_told_illegal_generation_loses_its_partitions_and_rejoins() -> None:
    """The group record of generation N is written beside the assignment, so a fail-over
    can lose it: the new coordinator knows N-1 while a member holds N. A heartbeat naming a
    generation above the coordinator's is ILLEGAL_GENERATION (Kafka's ``handleHeartbeat``
    checks the generation first), and the member loses its partitions and rejoins
    (``resetGenerationOnResponseError``) — before, it ignored the older generation's
    rebalance notices and the group waited on it until its session ran out."""
    from actors.consumer import Consumer, ConsumerConfig
    from actors.messages import (
        ILLEGAL_GENERATION,
        GroupAssignment,
        GroupHeartbeatResponse,
        JoinGroup,
        MetadataResponse,
    )

    # the coordinator's half (ILLEGAL_GENERATION) is
    # tests/conformance/test_group_coordinator.py; this is the consumer's
    m = Consumer("consumer-g0-0", ConsumerConfig("g0", "orders", 2, 0, 1), brokers=(1,))
    m.handle(MetadataResponse(((OFFSETS_TOPIC, G0, 1, 0), ("orders", 0, 1, 0),
                               ("orders", 1, 1, 0)), -1), ("broker-1", "broker"))
    m.handle(GroupAssignment("g0", "g0-0", 2, (0, 1), "NONE", 0), ("broker-1", "x"))
    m.drain()
    m.handle(GroupHeartbeatResponse("g0", "g0-0", ILLEGAL_GENERATION, 1), ("broker-1", "x"))
    out = m.drain()
    lost = [e.fields for e in out if getattr(e, "event", "") == "assignment"]
    assert lost == [{"group": "g0", "consumer": "g0-0", "generation": -1, "partitions": [],
                     "revoked": [0, 1], "protocol": "eager"}]
    assert any(isinstance(getattr(e, "msg", None), JoinGroup) for e in out)
    assert m.generation == -1 and not m.assigned
