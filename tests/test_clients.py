"""Producers and consumer groups (issue 4): ownership, delivery, at-least-once resume."""

from __future__ import annotations

import io
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
from helpers import data_topics_only

from actors.coordinator import OFFSETS_TOPIC, partition_for
from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_events
from traces.writer import TraceWriter

TWO_GROUPS = """
name = "two-groups"
description = "two groups on one topic; a consumer crash"
duration_s = 12.0
heal_s = 60.0

[[topics]]
name = "orders"
partitions = 4
"replication.factor" = 3
"min.insync.replicas" = 2

[[producers]]
topic = "orders"
rate = 100

[[consumers]]
group = "ga"
topic = "orders"
members = 2
"auto.offset.reset" = "earliest"
"auto.commit.interval.ms" = 1000

[[consumers]]
group = "gb"
topic = "orders"
members = 3
"partition.assignment.strategy" = "roundrobin"
"auto.offset.reset" = "earliest"

[[faults.plan]]
at_s = 5.0
fault = "crash"
target = "consumer-ga-1"
duration_s = 2.0
"""


def _run(tmp_path: Path, text: str, seed: int = 1) -> list[dict[str, Any]]:
    f = tmp_path / "s.toml"
    f.write_text(text)
    buf = io.BytesIO()
    res = run(load(str(f), ["invariants=true"]), seed, None,
              writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(x) for x in buf.getvalue().splitlines()]


#: g0's __consumer_offsets partition (Kafka's 50 partitions)
G0 = partition_for("g0", 50)


def _committed_values(evs: list[dict[str, Any]]) -> set[str]:
    """Records of the final committed log (the final leader's records below its HW)."""
    leader: dict[int, int] = {}
    for e in data_topics_only(evs):
        if e["event"] == "leader_elected":
            leader[e["partition"]] = e["leader"]
    out = set()
    evs = data_topics_only(evs)
    for e in evs:
        if e["event"] == "final_log" and leader.get(e["partition"]) == e["replica"]:
            out |= {v for off, v, _ in e["records"] if off < e["hw"]}
    return out


def test_each_partition_has_exactly_one_owner_per_group_after_rebalances(
        tmp_path: Path) -> None:
    evs = _run(tmp_path, TWO_GROUPS)
    final: dict[str, dict[str, list[int]]] = {}
    for e in evs:
        if e["event"] == "rebalance":
            final[e["group"]] = e["assignment"]
    for group, members in (("ga", 2), ("gb", 3)):
        owners = defaultdict(list)
        for member, parts in final[group].items():
            for p in parts:
                owners[p].append(member)
        assert sorted(owners) == [0, 1, 2, 3], group
        assert all(len(m) == 1 for m in owners.values()), (group, owners)
        assert len(final[group]) == members


def test_two_groups_each_receive_every_committed_record(tmp_path: Path) -> None:
    evs = _run(tmp_path, TWO_GROUPS)
    committed = _committed_values(evs)
    assert len(committed) > 500
    for group in ("ga", "gb"):
        seen = {e["value"] for e in evs if e["event"] == "consume" and e["group"] == group}
        assert committed <= seen, f"{group} missed {len(committed - seen)} records"


def test_no_consumer_reads_at_or_above_the_hw_it_was_served_under(tmp_path: Path) -> None:
    evs = _run(tmp_path, TWO_GROUPS)
    reads = [e for e in evs if e["event"] == "consume"]
    assert reads and all(e["offset"] < e["hw"] for e in reads)
    assert check_events(evs).anomalies["read_uncommitted"] == 0


def test_restarted_consumer_resumes_from_the_committed_offset(tmp_path: Path) -> None:
    evs = _run(tmp_path, TWO_GROUPS)
    crash = next(e for e in evs if e["event"] == "node_crash" and e["node"] == "consumer-ga-1")
    owned = next(e for e in reversed(evs[:crash["seq"]]) if e["event"] == "assignment"
                 and e["consumer"] == "ga-1")["partitions"]
    assert owned
    # the committed offset a restart reads is the last acknowledged commit, or one sent after
    # it that the coordinator applied once the consumer was gone
    commits: dict[int, int] = {}
    later: dict[int, set[int]] = defaultdict(set)
    for e in evs[:crash["seq"]]:
        if e["event"] == "offset_commit_ack" and e["group"] == "ga":
            commits[e["partition"]] = e["offset"]
            later[e["partition"]] = set()
        elif e["event"] == "offset_commit" and e["group"] == "ga":
            later[e["partition"]].add(e["offset"])
    last_read = {p: max(e["offset"] for e in evs[:crash["seq"]] if e["event"] == "consume"
                        and e["group"] == "ga" and e["partition"] == p) for p in owned}
    first_after: dict[int, int] = {}
    for e in evs[crash["seq"]:]:
        if (e["event"] == "consume" and e["group"] == "ga" and e["partition"] in owned
                and e["partition"] not in first_after):
            first_after[e["partition"]] = e["offset"]
    for p in owned:
        # no committed record is skipped: reading resumes exactly at a committed offset
        assert first_after[p] in {commits[p]} | later[p], (p, first_after[p], commits[p])
        commits[p] = first_after[p]
        # at-least-once: what was read after the last commit is read again, nothing more
        assert commits[p] <= last_read[p] + 1
    reads: dict[str, int] = defaultdict(int)
    for e in evs:
        if e["event"] == "consume" and e["group"] == "ga":
            reads[e["value"]] += 1
    again = {v for v, n in reads.items() if n > 1}
    assert all(reads[v] == 2 for v in again)
    assert len(again) <= sum(last_read[p] + 1 - commits[p] for p in owned)


def test_acks0_is_acknowledged_at_send_without_an_offset_and_never_judged(
        tmp_path: Path) -> None:
    """acks=0: the producer does not wait (offset -1); what a dead leader never wrote is
    gone without anyone being told — not reported as a lost acknowledged write."""
    text = TWO_GROUPS.replace('rate = 100', 'rate = 100\nacks = "0"\n'
                              '"enable.idempotence" = false').replace(
        'target = "consumer-ga-1"', 'target = "leader:orders-0"').replace(
        'duration_s = 2.0', 'duration_s = 12.0')
    evs = _run(tmp_path, text)
    sends = {e["value"]: e["seq"] for e in evs if e["event"] == "produce_send"}
    acks = [e for e in evs if e["event"] == "produce_ack"]
    assert acks and all(e["offset"] == -1 and e["acks"] == "0" for e in acks)
    assert all(e["seq"] > sends[e["value"]] for e in acks)
    committed = _committed_values(evs)
    assert {e["value"] for e in acks} - committed, "the crash must have cost some records"
    result = check_events(evs)
    assert result.anomalies["lost_acked_write"] == 0
    assert result.anomalies["lost_acked_uncommitted"] == 0


def test_a_group_without_a_topic_is_bad_input(tmp_path: Path) -> None:
    import pytest

    from emulator.scenario import ScenarioError
    f = tmp_path / "s.toml"
    f.write_text(TWO_GROUPS.replace('group = "gb"\ntopic = "orders"\n', 'group = "gb"\n'))
    with pytest.raises(ScenarioError) as err:
        load(str(f))
    assert "consumers[1].topic" in str(err.value) and "required" in str(err.value)


def test_consumer_learns_the_leader_of_an_assigned_partition_missing_from_its_metadata(
        ) -> None:
    """A partition assigned before the brokers knew its leader (the first metadata answer
    lists only partition 0) is reset only after a fresh metadata request (swarm seed 130
    of ``default``: the consumer retried OffsetFetch for 60 s and never read partition 2)."""
    from actors.consumer import Consumer, ConsumerConfig
    from actors.core import Send
    from actors.messages import (
        GroupAssignment,
        ListOffsets,
        MetadataRequest,
        MetadataResponse,
        OffsetFetch,
        OffsetFetchResponse,
        Tick,
    )
    c = Consumer("consumer-g0-1", ConsumerConfig("g0", "orders", 3, 1, 2,
                                                 auto_offset_reset="earliest"),
                 brokers=(1, 2, 3))
    c.start()
    first = [e.msg for e in c.drain() if isinstance(e, Send)
             and isinstance(e.msg, MetadataRequest)][0]
    c.handle(MetadataResponse((("orders", 0, 1, 0), (OFFSETS_TOPIC, G0, 3, 0)),
                              first.correlation), ("broker-1", "broker"))
    c.handle(GroupAssignment("g0", "g0-1", 2, (2,), "NONE", 0), ("broker-3", "broker"))
    ask = [e.msg for e in c.drain() if isinstance(e, Send) and isinstance(e.msg, OffsetFetch)]
    c.handle(OffsetFetchResponse("g0", "orders", 2, -1, "NONE", ask[-1].correlation),
             ("broker-3", "broker"))
    # the last answer is less than retry.backoff.ms old: the update waits for it
    # (Metadata.timeToAllowUpdate), then goes
    assert not [e for e in c.drain() if isinstance(e, Send)]
    c.now_us = 100_000
    c.handle(Tick("metadata_wait", 0, 0), ("consumer-g0-1", "consumer"))
    again = [e.msg for e in c.drain() if isinstance(e, Send)
             and isinstance(e.msg, MetadataRequest)]
    assert again, "no metadata request for a partition with no known leader"
    c.handle(MetadataResponse((("orders", 0, 1, 0), ("orders", 2, 3, 0)),
                              again[0].correlation), ("broker-2", "broker"))
    c.drain()
    c.handle(Tick("retry", 0, 2), ("consumer-g0-1", "consumer"))
    ask = [e.msg for e in c.drain() if isinstance(e, Send) and isinstance(e.msg, OffsetFetch)]
    c.handle(OffsetFetchResponse("g0", "orders", 2, -1, "NONE", ask[-1].correlation),
             ("broker-3", "broker"))
    sent = [e for e in c.drain() if isinstance(e, Send) and isinstance(e.msg, ListOffsets)]
    assert sent and sent[0].dst == ("broker-3", "orders-2")


def test_a_failed_batch_is_resent_only_after_retry_backoff() -> None:
    """A batch that failed with a retriable error waits ``retry.backoff.ms`` even when the
    metadata answer comes back sooner (a retry every round trip made one offline partition
    cost 30,000 requests a simulated second: S5 random mode, seed 27)."""
    import random

    from actors.core import Send
    from actors.messages import MetadataRequest, MetadataResponse, Produce, ProduceResponse, Tick
    from actors.producer import Producer, ProducerConfig

    p = Producer("producer-0", 0, ProducerConfig("orders", 1, keys=0, rate=10.0,
                                                 retry_backoff_ms=100), random.Random(1),
                 brokers=(1, 2, 3))
    me = ("producer-0", "producer")

    def sent(kind: type) -> list[Any]:
        return [e.msg for e in p.drain() if isinstance(e, Send) and isinstance(e.msg, kind)]

    def metadata() -> None:
        ask = sent(MetadataRequest)
        assert ask
        p.handle(MetadataResponse((("orders", 0, 2, 1),), ask[-1].correlation),
                 ("broker-1", "broker"))

    p.start()
    metadata()
    p.handle(Tick("produce", 0, 0), me)
    p.now_us = 5_000
    p.handle(Tick("linger", 0, 0), me)
    first = sent(Produce)
    assert len(first) == 1
    p.now_us = 6_000
    p.handle(ProduceResponse("orders", 0, "NOT_LEADER_OR_FOLLOWER", -1, first[0].correlation),
             ("broker-2", "orders-0"))
    # the metadata update waits retry.backoff.ms after the last answer (at 0 ms:
    # Metadata.timeToAllowUpdate), then its answer comes back in 2 ms...
    p.now_us = 100_000
    p.handle(Tick("metadata_wait", 0, 0), me)
    p.now_us = 102_000
    metadata()
    assert sent(Produce) == []       # ...and the batch still backs off (to 106 ms)
    p.now_us = 106_000
    p.handle(Tick("retry", 0, 0), me)
    again = sent(Produce)
    assert [m.records[0][1] for m in again] == ["p0-0"]


def _bare_producer(**cfg: Any) -> tuple[Any, Any, Any]:
    """A producer machine on one partition, its ``sent(kind)`` and ``metadata(leader)``."""
    import random

    from actors.core import Send
    from actors.messages import MetadataRequest, MetadataResponse
    from actors.producer import Producer, ProducerConfig

    p = Producer("producer-0", 0, ProducerConfig("orders", 1, keys=0, rate=10.0, **cfg),
                 random.Random(1), brokers=(1, 2, 3))

    def sent(kind: type) -> list[Any]:
        return [e.msg for e in p.drain() if isinstance(e, Send) and isinstance(e.msg, kind)]

    def metadata(leader: int) -> None:
        ask = sent(MetadataRequest)
        assert ask
        p.handle(MetadataResponse((("orders", 0, leader, 1),), ask[-1].correlation),
                 ("broker-1", "broker"))
    return p, sent, metadata


def test_a_lingered_batch_without_a_leader_keeps_filling_and_asks_for_metadata() -> None:
    """``RecordAccumulator``: the last batch of a partition takes records until it is full;
    ``linger.ms`` only makes it ready, and a ready batch without a leader makes the sender
    request metadata. So records produced while no leader is known leave in one batch."""
    from actors.messages import MetadataRequest, MetadataResponse, Produce, Tick
    p, sent, metadata = _bare_producer()
    me = ("producer-0", "producer")
    p.start()
    metadata(-1)                     # no leader yet
    for i in range(5):               # five records, 100 ms apart, lingering 5 ms each
        p.now_us = i * 100_000
        p.handle(Tick("produce", 0, 0), me)
        p.now_us += 5_000
        p.handle(Tick("linger", 0, 0), me)
    out = [e.msg for e in p.drain() if hasattr(e, "msg")]
    assert not any(isinstance(m, Produce) for m in out)
    assert any(isinstance(m, MetadataRequest) for m in out)
    p.now_us = 500_000
    ask = [m for m in out if isinstance(m, MetadataRequest)][-1]
    p.handle(MetadataResponse((("orders", 0, 2, 1),), ask.correlation), ("broker-1", "broker"))
    (req,) = sent(Produce)
    assert [r[1] for r in req.records] == [f"p0-{i}" for i in range(5)]


def test_an_idempotent_retry_waits_until_it_is_first_in_flight() -> None:
    """``RecordAccumulator.shouldStopDrainBatchesForPartition``: with batches 0 and 1 in
    flight and 0 failing, 0 is not resent beside 1 (which would answer
    OUT_OF_ORDER_SEQUENCE_NUMBER in turn); once 1 is answered too, 0 goes alone first."""
    from actors.messages import Produce, ProduceResponse, Tick
    p, sent, metadata = _bare_producer(retry_backoff_ms=100)
    me = ("producer-0", "producer")
    p.start()
    metadata(2)
    reqs = []
    for i in range(2):
        p.now_us = i * 100_000
        p.handle(Tick("produce", 0, 0), me)
        p.now_us += 5_000
        p.handle(Tick("linger", 0, 0), me)
        reqs += sent(Produce)
    assert [r.records[0][5] for r in reqs] == [0, 1]          # sequences 0 and 1
    p.now_us = 110_000
    p.handle(ProduceResponse("orders", 0, "NOT_LEADER_OR_FOLLOWER", -1, reqs[0].correlation),
             ("broker-2", "orders-0"))
    metadata(2)
    p.now_us = 220_000
    p.handle(Tick("retry", 0, 0), me)
    assert sent(Produce) == []                                  # 1 is still first in flight
    p.handle(ProduceResponse("orders", 0, "OUT_OF_ORDER_SEQUENCE_NUMBER", -1,
                             reqs[1].correlation), ("broker-2", "orders-0"))
    p.now_us = 330_000
    p.handle(Tick("retry", 0, 0), me)
    (again,) = sent(Produce)
    assert again.records[0][5] == 0


def test_cooperative_sticky_assignment_is_balanced_and_keeps_owners() -> None:
    """``CooperativeStickyAssignor``: every member gets n // m or one more partitions, and a
    partition stays with its owner whenever balance allows — a joining member takes only
    the surplus, a leaving member's partitions are spread over the rest."""
    from actors.group import sticky
    one = sticky(6, ["a"], {})
    assert one == {"a": (0, 1, 2, 3, 4, 5)}
    two = sticky(6, ["a", "b"], one)
    assert two["a"] == (0, 1, 2) and two["b"] == (3, 4, 5)
    three = sticky(6, ["a", "b", "c"], two)
    assert sorted(len(p) for p in three.values()) == [2, 2, 2]
    assert set(three["a"]) < set(two["a"]) and set(three["b"]) < set(two["b"])
    back = sticky(6, ["a", "c"], three)
    assert set(three["a"]) <= set(back["a"]) and set(three["c"]) <= set(back["c"])
    assert sorted(back["a"] + back["c"]) == [0, 1, 2, 3, 4, 5]
    uneven = sticky(7, ["a", "b", "c"], {"a": (0, 1, 2, 3, 4, 5, 6)})
    assert sorted(len(p) for p in uneven.values()) == [2, 2, 3]


def _consumer_at(assignor: str, position: dict[int, int]) -> Any:
    """A consumer of 4 partitions holding ``position`` in generation 1 (its coordinator,
    the leader of g0's ``__consumer_offsets`` partition, is broker 1)."""
    from actors.consumer import Consumer, ConsumerConfig
    from actors.core import Send
    from actors.messages import GroupAssignment, MetadataRequest, MetadataResponse
    c = Consumer("consumer-g0-0", ConsumerConfig("g0", "orders", 4, 0, 2, assignor=assignor),
                 brokers=(1,))
    c.start()
    ask = [e.msg for e in c.drain() if isinstance(e, Send)
           and isinstance(e.msg, MetadataRequest)][0]
    c.handle(MetadataResponse((("orders", 0, 1, 0), (OFFSETS_TOPIC, G0, 1, 0)),
                              ask.correlation), ("broker-1", "broker"))
    c.drain()
    c.handle(GroupAssignment("g0", "g0-0", 1, tuple(sorted(position)), "NONE", 0),
             ("broker-1", "broker"))
    c.drain()
    c.outstanding.clear()
    c.position.update(position)
    return c


def test_an_eager_member_restarts_every_partition_from_the_committed_offset() -> None:
    """Range (eager): at generation 2 the member gives up partitions 0-3, keeps 0-1, and asks
    the committed offset of both kept partitions again; the assignment says ``eager``."""
    from actors.core import Emit, Send
    from actors.messages import GroupAssignment, OffsetFetch
    c = _consumer_at("range", {0: 7, 1: 9, 2: 3, 3: 4})
    c.handle(GroupAssignment("g0", "g0-0", 2, (0, 1), "NONE", 0), ("broker-1", "broker"))
    out = c.drain()
    assert sorted(e.msg.partition for e in out
                  if isinstance(e, Send) and isinstance(e.msg, OffsetFetch)) == [0, 1]
    assert c.position == {}
    (ev,) = [e.fields for e in out if isinstance(e, Emit) and e.event == "assignment"]
    assert (ev["protocol"], ev["partitions"], ev["revoked"]) == ("eager", [0, 1], [2, 3])


def test_a_cooperative_member_keeps_the_positions_of_the_partitions_it_keeps() -> None:
    """Cooperative-sticky: at generation 2 the member keeps 0-1 with their positions (no
    OffsetFetch), gives up 2-3 and asks the committed offset of nothing."""
    from actors.core import Emit, Send
    from actors.messages import GroupAssignment, OffsetFetch
    c = _consumer_at("cooperative-sticky", {0: 7, 1: 9, 2: 3, 3: 4})
    c.handle(GroupAssignment("g0", "g0-0", 2, (0, 1), "NONE", 0), ("broker-1", "broker"))
    out = c.drain()
    assert not [e for e in out if isinstance(e, Send) and isinstance(e.msg, OffsetFetch)]
    assert c.position == {0: 7, 1: 9}
    (ev,) = [e.fields for e in out if isinstance(e, Emit) and e.event == "assignment"]
    assert (ev["protocol"], ev["revoked"]) == ("cooperative", [2, 3])


def test_a_rebalance_waits_for_the_members_to_commit_and_rejoin(tmp_path: Path) -> None:
    """``PreparingRebalance``: when ga-1 comes back, ga-0 commits its positions in the old
    generation (accepted: the generation has not moved yet) before the new generation is
    made, and resumes its kept partitions exactly where it had read to — the only records
    read twice are the ones ga-1 had read past its last commit before it crashed."""
    evs = _run(tmp_path, TWO_GROUPS)
    restart = next(e for e in evs if e["event"] == "node_restart"
                   and e["node"] == "consumer-ga-1")
    reb = next(e for e in evs[restart["seq"]:] if e["event"] == "rebalance"
               and e["group"] == "ga")
    prepared = [e for e in evs[restart["seq"]:reb["seq"]] if e["event"] == "offset_commit"
                and e["consumer"] == "ga-0"]
    assert prepared and all(e["generation"] == reb["generation"] - 1 for e in prepared)
    first_after = {}
    for e in evs[reb["seq"]:]:
        if (e["event"] == "consume" and e["consumer"] == "ga-0"
                and e["partition"] not in first_after):
            first_after[e["partition"]] = e["offset"]
    committed = {e["partition"]: e["offset"] for e in prepared}
    for p, offset in first_after.items():
        if p in committed:
            assert offset == committed[p], (p, offset, committed[p])


def test_cooperative_members_keep_reading_their_partitions_through_a_rebalance(
        tmp_path: Path) -> None:
    """cooperative-sticky: when ga-1 crashes and comes back, ga-0 keeps the partitions it
    keeps with their positions (its chain on them never breaks: no poll skip, no step
    back), and the checker holds it to that."""
    text = TWO_GROUPS.replace('"auto.commit.interval.ms" = 1000',
                              '"auto.commit.interval.ms" = 1000\n'
                              '"partition.assignment.strategy" = "cooperative-sticky"')
    evs = _run(tmp_path, text)
    assigns = [e for e in evs if e["event"] == "assignment" and e["consumer"] == "ga-0"]
    assert {e["protocol"] for e in assigns} == {"cooperative"}
    # at least one rebalance after the first assignment (ga-1's new incarnation joining;
    # the old one's session expiring may make another, if the run lasts that long)
    assert len(assigns) >= 2 and assigns[-1]["generation"] > assigns[0]["generation"]
    kept = set(assigns[0]["partitions"]) & set(assigns[-1]["partitions"])
    assert kept
    for p in kept:
        offsets = [e["offset"] for e in evs if e["event"] == "consume"
                   and e["consumer"] == "ga-0" and e["partition"] == p]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    verdict = check_events(iter(evs)).anomalies
    assert verdict["poll_skip"] == verdict["nonmonotonic_poll"] == 0


def test_a_member_the_coordinator_forgot_loses_its_partitions_and_starts_over() -> None:
    """UNKNOWN_MEMBER_ID (the coordinator restarted or expired us): the partitions are lost,
    not revoked — positions dropped, generation -1, an empty assignment traced — so the
    coordinator's fresh generation 1 is a new assignment, read from the committed offsets
    (before, a member at generation 1 took the new generation 1 for a re-delivery)."""
    from actors.core import Emit, Send
    from actors.messages import GroupAssignment, GroupHeartbeatResponse, OffsetFetch
    c = _consumer_at("cooperative-sticky", {0: 7, 1: 9})
    c.handle(GroupHeartbeatResponse("g0", "g0-0", "UNKNOWN_MEMBER_ID", -1),
             ("broker-1", "broker"))
    out = c.drain()
    (lost,) = [e.fields for e in out if isinstance(e, Emit) and e.event == "assignment"]
    assert (lost["partitions"], lost["revoked"], lost["generation"]) == ([], [0, 1], -1)
    assert c.position == {} and c.generation == -1
    c.handle(GroupAssignment("g0", "g0-0", 1, (0, 1), "NONE", 0), ("broker-1", "broker"))
    asked = [e.msg.partition for e in c.drain()
             if isinstance(e, Send) and isinstance(e.msg, OffsetFetch)]
    assert sorted(asked) == [0, 1]


def test_a_fast_producer_sends_the_records_due_at_each_millisecond_step() -> None:
    """Above one record per millisecond the workload clock ticks every millisecond and sends
    what is due by then (rate 2,500/s: 3, 2, 3, 2, ... records), and a batch is closed at the
    first tick at least ``linger.ms`` after it opened, before that tick's new records."""
    import random

    from actors.core import Emit, Send, Timer
    from actors.messages import MetadataRequest, MetadataResponse, Produce, Tick
    from actors.producer import Producer, ProducerConfig

    p = Producer("producer-0", 0, ProducerConfig("orders", 1, keys=0, rate=2500.0,
                                                 linger_ms=2, batch_size=10**9),
                 random.Random(1), brokers=(1,))
    me = ("producer-0", "producer")
    p.start()
    ask = [e.msg for e in p.drain() if isinstance(e, Send) and isinstance(e.msg, MetadataRequest)]
    p.handle(MetadataResponse((("orders", 0, 1, 1),), ask[-1].correlation), ("broker-1", "broker"))
    p.drain()
    per_tick, produced = [], []
    for ms in range(6):
        p.now_us = ms * 1000
        p.handle(Tick("produce", 0, 0), me)
        out = p.drain()
        sends = [e for e in out if isinstance(e, Emit) and e.event == "produce_send"]
        per_tick.append(len(sends))
        produced += [len(e.msg.records) for e in out
                     if isinstance(e, Send) and isinstance(e.msg, Produce)]
        steps = [e.delay_us for e in out if isinstance(e, Timer) and e.msg.kind == "produce"]
        assert steps == [1000]
        assert not any(isinstance(e, Timer) and e.msg.kind == "linger" for e in out)
    assert per_tick == [1, 2, 3, 2, 3, 2]          # 1 + 2.5 records per ms after the first
    # the batch opened at 0 ms closes at the 2 ms tick holding the 3 records sent before it;
    # the one opened at 2 ms closes at 4 ms with the 5 sent at 2 and 3 ms
    assert produced == [3, 5]


ONE_MEMBER = """
name = "one-member"
description = "one consumer reads four partitions led by three brokers"
duration_s = 4.0
heal_s = 10.0

[[topics]]
name = "orders"
partitions = 4
"replication.factor" = 3

[[producers]]
topic = "orders"
rate = 200

[[consumers]]
group = "g0"
topic = "orders"
"auto.offset.reset" = "earliest"
"fetch.max.wait.ms" = 200
"""


def test_a_consumer_sends_one_fetch_per_leader_broker_and_none_while_one_is_pending(
        tmp_path: Path) -> None:
    """``Fetcher.prepareFetchRequests``/``sendFetches``: one FetchRequest (replica id -1)
    per leader broker naming every partition the member reads there, each from its
    position, and no second request to a broker while one is pending there
    (``nodesWithPendingFetchRequests``); the leader answers with each partition's records
    below its HW, and every record is consumed."""
    f = tmp_path / "one.toml"
    f.write_text(ONE_MEMBER)
    buf = io.BytesIO()
    res = run(load(str(f)), 1, None, writer=TraceWriter(None, buffer=buf), trace_messages=True)
    assert res.status == "ok", res.error
    evs = [orjson.loads(x) for x in buf.getvalue().splitlines()]
    mine = "consumer-g0-0/consumer"
    sent = {e["msg_id"]: e for e in evs if e["event"] == "msg_send" and e["src"] == mine
            and e["msg"] == "ReplicaFetch"}
    assert sent and all(e["dst"].endswith("/replica-manager") and e["replica"] == -1
                        for e in sent.values())
    widths = {len(e["parts"]) for e in sent.values()}
    assert max(widths) >= 2   # four partitions over three leaders: one leads two
    # per broker, a request goes only once the previous one's answer is in
    answered: dict[str, int] = {}
    pending: dict[str, int] = {}
    for e in evs:
        if e["event"] == "msg_send" and e.get("msg_id") in sent:
            broker = e["dst"].split("/")[0]
            assert broker not in pending, f"two fetches pending at {broker} at {e['ts_us']}"
            pending[broker] = e["correlation"]
        elif (e["event"] == "msg_recv" and e["node"] == "consumer-g0-0"
              and e["msg"] == "ReplicaFetchResponse"):
            broker = e["src"].split("/")[0]
            pending.pop(broker, None)
            answered[broker] = answered.get(broker, 0) + 1
    assert len(answered) == 3
    sent_values = {e["value"] for e in evs if e["event"] == "produce_ack"}
    consumed = {e["value"] for e in evs if e["event"] == "consume"}
    assert sent_values and sent_values <= consumed


def test_a_partition_whose_leader_is_lost_between_two_fetches_is_retried_not_stranded(
        ) -> None:
    """Partition 0's offset comes first and its fetch goes to broker-1 at once; partition 1
    (also led by broker-1) waits for that request — one pending per broker. The metadata
    then loses partition 1's leader. When the request is answered, the next one names only
    partition 0, and partition 1 gets a retry of its own and a metadata request — it is
    never left fetchable with nothing to wake it."""
    from actors.consumer import Consumer, ConsumerConfig
    from actors.core import Send, Timer
    from actors.messages import (
        FetchResponse,
        GroupAssignment,
        MetadataRequest,
        MetadataResponse,
        OffsetFetch,
        OffsetFetchResponse,
        ReplicaFetch,
        ReplicaFetchResponse,
        Tick,
    )
    from actors.wire import fields
    c = Consumer("consumer-g0-0", ConsumerConfig("g0", "orders", 2, 0, 1), brokers=(1, 2, 3))
    c.start()
    first = [e.msg for e in c.drain() if isinstance(e, Send)
             and isinstance(e.msg, MetadataRequest)][0]
    c.handle(MetadataResponse((("orders", 0, 1, 0), ("orders", 1, 1, 0),
                               (OFFSETS_TOPIC, G0, 3, 0)), first.correlation),
             ("broker-1", "broker"))
    c.handle(GroupAssignment("g0", "g0-0", 1, (0, 1), "NONE", 0), ("broker-3", "broker"))
    asks = [e.msg for e in c.drain() if isinstance(e, Send) and isinstance(e.msg, OffsetFetch)]
    for ask in asks:
        c.handle(OffsetFetchResponse("g0", "orders", ask.partition, 5, "NONE",
                                     ask.correlation), ("broker-3", "broker"))
    reqs = [e.msg for e in c.drain() if isinstance(e, Send) and isinstance(e.msg, ReplicaFetch)]
    assert [[p[1] for p in r.parts] for r in reqs] == [[0]]
    # partition 1 goes offline in the metadata while that request is parked at broker-1
    c.now_us = 200_000
    c.refresh_metadata()
    again = [e.msg for e in c.drain() if isinstance(e, Send)
             and isinstance(e.msg, MetadataRequest)]
    c.handle(MetadataResponse((("orders", 0, 1, 0), ("orders", 1, -1, 1)),
                              again[0].correlation), ("broker-2", "broker"))
    c.drain()
    req = reqs[0]
    c.now_us = 300_000
    c.handle(ReplicaFetchResponse("NONE", (fields(FetchResponse(
        "orders", 0, "NONE", 5, 5, 0, (), -1, -1, 0, req.correlation)),), req.correlation),
        ("broker-1", "replica-manager"))
    out = c.drain()
    nxt = [e.msg for e in out if isinstance(e, Send) and isinstance(e.msg, ReplicaFetch)]
    assert [[p[1] for p in r.parts] for r in nxt] == [[0]]
    retries = [e.msg for e in out if isinstance(e, Timer) and isinstance(e.msg, Tick)
               and e.msg.kind == "retry"]
    assert [t.arg for t in retries] == [1]
