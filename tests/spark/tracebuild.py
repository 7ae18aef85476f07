"""Hand-built traces for checker and Spark tests: a tiny builder that reads like a scenario.

``Trace`` appends schema-1 events with ``seq`` = index and a virtual clock you advance with
``at(seconds)``; ``write(path)`` seals each line (crc) and ends with ``run_end`` carrying the
SHA-256 of the lines before, exactly as ``traces.writer`` does, so the files pass the
checker's loader and the Spark loader. It lives under ``tests/spark`` (the Spark tests import
it as ``tracebuild``); ``tests/test_checker.py`` imports it as ``spark.tracebuild``.
"""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Any

import orjson

from traces.integrity import seal

TOPIC = "t"


def scenario(
    *,
    name: str = "hand",
    min_isr: int = 2,
    rf: int = 3,
    acks: str = "all",
    unclean: bool = False,
    expect: dict[str, list[str]] | None = None,
    protocol: str = "4.1",
) -> dict[str, Any]:
    sc: dict[str, Any] = {
        "name": name,
        "protocol": protocol,
        "bugs": [],
        "topics": [{
            "name": TOPIC, "partitions": 1, "replication.factor": rf,
            "min.insync.replicas": min_isr, "unclean.leader.election.enable": unclean,
        }],
        "producers": [{"topic": TOPIC, "acks": acks, "enable.idempotence": True,
                       "retries": 5, "max.in.flight.requests.per.connection": 5}],
        "consumers": [{"group": "g", "topic": TOPIC, "members": 1,
                       "auto.offset.reset": "earliest"}],
        "heal_s": 10,
        "duration_s": 60,
    }
    if expect is not None:
        sc["expect"] = expect
    return sc


class Trace:
    """A growing list of events for one run of one partition (topic ``t``, partition 0)."""

    def __init__(self, sc: dict[str, Any] | None = None, *, seed: int = 1) -> None:
        self.ts_us = 0
        self.events: list[dict[str, Any]] = []
        sc = sc if sc is not None else scenario()
        self.emit("run_start", node="sim", actor="sim", schema=1, isrlab_version="0.1.0",
                  seed=seed, scenario=sc, fault_plan=[], protocol=sc["protocol"])

    def at(self, seconds: float) -> Trace:
        self.ts_us = int(seconds * 1_000_000)
        return self

    def emit(self, event: str, *, node: str = "broker-0", actor: str = "t-0", **fields: Any
             ) -> Trace:
        self.events.append({"seq": len(self.events), "ts_us": self.ts_us, "event": event,
                            "node": node, "actor": actor, **fields})
        return self

    # --- vocabulary ---------------------------------------------------------------------
    def elect(self, leader: int | None, isr: list[int], epoch: int = 1,
              election: str = "clean", partition: int = 0) -> Trace:
        return self.emit("leader_elected", node="controller", actor="controller", topic=TOPIC,
                         partition=partition, leader=leader, leader_epoch=epoch, isr=isr,
                         election=election, partition_epoch=epoch)

    def isr(self, old: list[int], new: list[int], partition: int = 0) -> Trace:
        return self.emit("isr_change", node="controller", actor="controller", topic=TOPIC,
                         partition=partition, old=old, new=new, reason="x",
                         leader_epoch=1, partition_epoch=1)

    def hw(self, replica: int, old: int, new: int, role: str = "leader",
           reason: str = "follower_fetch", partition: int = 0) -> Trace:
        return self.emit("hw_update", node=f"broker-{replica}", topic=TOPIC,
                         partition=partition, replica=replica, old=old, new=new,
                         reason=reason, role=role)

    def send(self, value: str, producer: int = 0, acks: str = "all", partition: int = 0
             ) -> Trace:
        return self.emit("produce_send", node=f"producer-{producer}", actor="producer",
                         topic=TOPIC, partition=partition, key=None, value=value,
                         producer=producer, acks=acks)

    def ack(self, value: str, offset: int, producer: int = 0, acks: str = "all",
            partition: int = 0) -> Trace:
        return self.emit("produce_ack", node=f"producer-{producer}", actor="producer",
                         topic=TOPIC, partition=partition, value=value, offset=offset,
                         producer=producer, acks=acks)

    def consume(self, offset: int, value: str, hw: int, consumer: str = "c0",
                group: str = "g", partition: int = 0) -> Trace:
        return self.emit("consume", node=f"consumer-{group}-0", actor="consumer", group=group,
                         consumer=consumer, topic=TOPIC, partition=partition, offset=offset,
                         value=value, hw=hw)

    def rebalance(self, group: str = "g", generation: int = 1,
                  protocol: str | None = "eager") -> Trace:
        """The coordinator's new generation, and consumer c0's new assignment (partition 0)
        under ``protocol`` (None: an assignment event without the field, as older traces)."""
        self.emit("rebalance", node="controller", actor="controller", group=group,
                  generation=generation, reason="test", assignment={"c0": [0]})
        return self.assignment([0], group=group, generation=generation, protocol=protocol)

    def assignment(self, partitions: list[int], consumer: str = "c0", group: str = "g",
                   generation: int = 1, protocol: str | None = "eager") -> Trace:
        extra = {} if protocol is None else {"protocol": protocol}
        return self.emit("assignment", node=f"consumer-{group}-0", actor="consumer",
                         group=group, consumer=consumer, generation=generation,
                         partitions=partitions, revoked=[], **extra)

    def final_log(self, replica: int, records: list[tuple[int, str]], hw: int,
                  log_start_offset: int = 0, epoch: int = 1, partition: int = 0) -> Trace:
        leo = max([o + 1 for o, _ in records], default=log_start_offset)
        return self.emit("final_log", node=f"broker-{replica}", topic=TOPIC,
                         partition=partition, replica=replica,
                         log_start_offset=log_start_offset, hw=hw, leo=leo,
                         leader_epoch=epoch, records=[[o, v, epoch] for o, v in records])

    def converged(self, ok: bool, partition: int = 0) -> Trace:
        return self.emit("convergence", node="sim", actor="sim", topic=TOPIC,
                         partition=partition, converged=ok, detail="")

    # --- output ---------------------------------------------------------------------------
    def write(self, path: Path, *, end: bool = True) -> Path:
        """Seal every line and, unless ``end`` is False, append ``run_end``."""
        sha = hashlib.sha256()
        lines = []
        for ev in self.events:
            line = seal(orjson.dumps(ev))
            sha.update(line)
            lines.append(line)
        if end:
            lines.append(seal(orjson.dumps({
                "seq": len(self.events), "ts_us": self.ts_us, "event": "run_end",
                "node": "sim", "actor": "sim", "status": "ok", "events": len(self.events),
                "sha256": sha.hexdigest()})))
        data = b"".join(lines)
        if path.name.endswith(".gz"):
            path.write_bytes(gzip.compress(data, mtime=0))
        else:
            path.write_bytes(data)
        return path


def healthy(values: int = 3, **kw: Any) -> Trace:
    """Three replicas, leader 0, ``values`` acked, committed and consumed records; converged."""
    t = Trace(scenario(**kw))
    t.elect(0, [0, 1, 2])
    recs = []
    for i in range(values):
        t.at(1 + i)
        v = f"p0-{i}"
        t.send(v).hw(0, i, i + 1).ack(v, i).consume(i, v, hw=i + 1)
        recs.append((i, v))
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, recs, hw=values)
    return t


# --------------------------------------------------------------------------- catalogue


def lossy(acks: str = "all") -> Trace:
    """p0-0 committed everywhere; p0-1 acked at offset 1, then the final leader holds x@1."""
    t = Trace(scenario(acks=acks))
    t.elect(0, [0, 1, 2])
    t.at(1).send("p0-0", acks=acks).hw(0, 0, 1).ack("p0-0", 0, acks=acks)
    t.at(2).send("p0-1", acks=acks).ack("p0-1", 1, acks=acks)
    t.at(3).elect(1, [1, 2], epoch=2)
    t.at(4).send("p0-2", acks=acks).hw(1, 1, 2).ack("p0-2", 1, acks=acks)
    t.at(30).converged(True)
    for r in (1, 2):
        t.final_log(r, [(0, "p0-0"), (1, "p0-2")], hw=2)
    return t


def all_crashed(lost_tail: bool = False) -> Trace:
    """Every replica crashes uncleanly (KIP-966: ISR and ELR emptied, the partition stays
    offline) after p0-0..p0-2 were acked; their HW checkpoints still say 0. Replica 2 holds a
    longer log of an older epoch. With ``lost_tail`` the replica a recovery would elect (1:
    epoch 2, then longest) lost p0-2 (power loss)."""
    t = Trace()
    t.elect(0, [0, 1, 2]).at(1).elect(0, [0, 1, 2], epoch=2)
    for i in range(3):
        t.at(2 + i).send(f"p0-{i}").hw(0, i, i + 1).ack(f"p0-{i}", i)
        t.consume(i, f"p0-{i}", hw=i + 1)
    t.at(6).emit("partition_offline", node="controller", actor="controller", topic=TOPIC,
                 partition=0, leader_epoch=3, isr=[], elr=[])
    t.at(30).converged(False)
    kept = [(0, "p0-0"), (1, "p0-1")] if lost_tail else [(0, "p0-0"), (1, "p0-1"), (2, "p0-2")]
    t.final_log(0, kept[:2], hw=0, epoch=2)
    t.final_log(1, kept, hw=0, epoch=2)
    t.final_log(2, [(0, "p0-0"), (1, "o1"), (2, "o2"), (3, "o3")], hw=0, epoch=1)
    return t


def reassigned() -> Trace:
    """A reassignment [0,1,2] -> [3,4,5] and back to 0 (issue 19): replica 0 is deleted and
    created again, its HW starting over from 0 (no regression); then a leader outside the
    replica list (0, removed) and an ISR with a removed member: two ``outside_assignment``."""
    t = Trace()
    t.emit("isr_change", node="controller", actor="controller", topic=TOPIC, partition=0,
           old=[], new=[0, 1, 2], reason="create", leader_epoch=0, partition_epoch=0)
    t.elect(0, [0, 1, 2], epoch=0, election="preferred")
    t.at(1).send("p0-0").hw(0, 0, 5).ack("p0-0", 0).hw(1, 0, 5, role="follower",
                                                        reason="fetch_response")
    rc = {"node": "controller", "actor": "controller", "topic": TOPIC, "partition": 0}
    t.at(2).emit("replicas_change", **rc, old=[0, 1, 2], new=[3, 4, 5, 0, 1, 2],
                 adding=[3, 4, 5], removing=[0, 1, 2], reason="reassign")
    t.at(3).isr([0, 1, 2], [0, 1, 2, 3, 4, 5])
    t.emit("replicas_change", **rc, old=[3, 4, 5, 0, 1, 2], new=[3, 4, 5], adding=[],
           removing=[], reason="reassignment_complete")
    t.isr([0, 1, 2, 3, 4, 5], [3, 4, 5]).elect(3, [3, 4, 5], epoch=1)
    t.at(4).emit("replica_deleted", node="broker-1", actor="t-0", topic=TOPIC, partition=0,
                 replica=1, leo=1, hw=5)
    t.at(5).emit("replicas_change", **rc, old=[3, 4, 5], new=[1, 3, 4, 5], adding=[1],
                 removing=[], reason="reassign")
    t.at(6).hw(1, 0, 1, role="follower", reason="fetch_response")   # created again: no regression
    t.at(7).elect(0, [3, 4, 5], epoch=2)       # 0 is no replica any more: outside
    t.at(8).isr([3, 4, 5], [2, 3, 4, 5])       # nor is 2
    t.at(30).converged(True)
    for r in (3, 4, 5):
        t.final_log(r, [(0, "p0-0")], hw=1)
    return t


# -- the KRaft controller quorum's metadata log (raft_* events) -------------------------
def broker_behind_metadata() -> Trace:
    """A KRaft broker acting on the creation's leadership (epoch 0) after the controller has
    moved it (epoch 1) but before any broker took over at epoch 1: not a regression; the
    same broker doing so again after broker 1 took over at epoch 1: one."""
    t = Trace()
    t.elect(0, [0, 1], epoch=0)
    t.at(1).elect(1, [1], epoch=1)
    t.emit("become_leader", node="broker-0", topic=TOPIC, partition=0, replica=0,
           leader_epoch=0, isr=[0, 1], leo=0, hw=0)    # behind the metadata log
    t.emit("become_leader", node="broker-1", topic=TOPIC, partition=0, replica=1,
           leader_epoch=1, isr=[1], leo=0, hw=0)
    t.at(2).emit("become_leader", node="broker-0", topic=TOPIC, partition=0, replica=0,
                 leader_epoch=0, isr=[0, 1], leo=0, hw=0)   # after a take-over at epoch 1
    t.at(30).converged(True)
    for r in (0, 1):
        t.final_log(r, [], hw=0)
    return t


def quorum_trace(name: str = "quorum") -> Trace:
    sc = scenario(name=name)
    sc["cluster"] = {"controller_quorum": 3}
    sc["expect"] = {"anomalies": [], "forbid": ["metadata_divergence",
                                                "uncommitted_metadata_applied"]}
    return Trace(sc)


def append(t: Trace, voter: int, epoch: int, first: int, last: int,
           role: str = "follower") -> Trace:
    return t.emit("raft_append", node=f"controller-{voter}", actor="controller", voter=voter,
                  epoch=epoch, first=first, last=last, role=role,
                  records=["PartitionRecord"] * (last - first + 1))


def hw(t: Trace, voter: int, value: int, epoch: int = 1) -> Trace:
    return t.emit("raft_hw", node=f"controller-{voter}", actor="controller", voter=voter,
                  hw=value, leo=value, epoch=epoch)


def applied(t: Trace, voter: int, first: int, offset: int) -> Trace:
    return t.emit("metadata_apply", node=f"controller-{voter}", actor="controller",
                  voter=voter, first=first, offset=offset)


def truncate(t: Trace, voter: int, offset: int, old: int) -> Trace:
    return t.emit("raft_truncate", node=f"controller-{voter}", actor="controller",
                  voter=voter, offset=offset, old=old, epoch=2)


def diverged_quorum() -> Trace:
    """Voters 1 and 2 commit offsets 0..2 in epoch 1; voter 3 later holds epoch 2's entries
    at 1..2 and its HW passes them: two offsets diverge. Voter 3 also replays offset 3,
    above the quorum's HW (3)."""
    t = quorum_trace("diverged-quorum")
    append(t, 1, 1, 0, 2, "leader")
    append(t, 2, 1, 0, 2)
    hw(t, 1, 3)
    hw(t, 2, 3)
    append(t, 3, 1, 0, 0)
    append(t, 3, 2, 1, 3, "leader")
    hw(t, 3, 3, epoch=2)
    applied(t, 3, 0, 3)
    return t


def catalogue() -> dict[str, Trace]:
    """Small traces that, together, make every anomaly of ``ANOMALIES`` non-zero."""
    out: dict[str, Trace] = {"healthy": healthy()}

    for acks in ("all", "1"):  # S6 shape: acked at 1, the next leader writes x@1
        out[f"lost_acks_{acks}"] = lossy(acks)

    t = Trace()  # retention: offsets 0, 1 deleted everywhere
    t.elect(0, [0, 1, 2])
    for i in range(4):
        t.at(1 + i).send(f"p0-{i}").hw(0, i, i + 1).ack(f"p0-{i}", i)
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(2, "p0-2"), (3, "p0-3")], hw=4, log_start_offset=2)
    out["expired"] = t

    t = Trace()  # S11: stale HW on the new leader
    t.elect(1, [1, 2, 3])
    t.at(1).send("m").hw(1, 0, 1).ack("m", 0).consume(0, "m", hw=1)
    t.hw(2, 0, 1, role="follower", reason="fetch_response")
    t.at(2).elect(2, [2, 3], epoch=2).hw(2, 1, 0, reason="become_leader")
    t.at(3).hw(2, 0, 1).at(30).converged(True)
    for r in (2, 3):
        t.final_log(r, [(0, "m")], hw=1)
    out["s11_stale_hw"] = t

    t = Trace(scenario(min_isr=1, unclean=True))  # S8: unclean election rewrites offsets
    t.elect(0, [0, 1])
    t.at(1).hw(0, 0, 1).ack("a0", 0).consume(0, "a0", hw=1)
    t.at(2).isr([0, 1], [0])
    t.at(3).hw(0, 1, 3).ack("a1", 1).ack("a2", 2).consume(1, "a1", hw=3).consume(2, "a2", hw=3)
    t.at(4).elect(1, [1], epoch=2, election="unclean").hw(1, 1, 2).ack("n1", 1)
    t.at(5).consume(1, "n1", hw=2).consume(1, "n1", hw=2, consumer="c1")
    t.consume(1, "n1", hw=1, consumer="c2")  # served beyond its HW
    t.at(30).converged(True)
    t.final_log(0, [(0, "a0"), (1, "a1"), (2, "a2")], hw=3)  # never rejoined: diverged
    t.final_log(1, [(0, "a0"), (1, "n1")], hw=2)
    out["s8_unclean"] = t

    t = Trace()  # retries without idempotence: duplicate + reordered sends; poll skip
    t.elect(0, [0, 1, 2])
    t.at(1).send("p0-0").send("p0-1").hw(0, 0, 3).ack("p0-1", 0).ack("p0-0", 2)
    t.consume(0, "p0-1", hw=3).consume(2, "p0-0", hw=3)
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(0, "p0-1"), (1, "p0-0"), (2, "p0-0")], hw=3)
    out["retries"] = t

    t = healthy(values=2)  # ISR flapping; time under min ISR; a rebalance
    t.at(100).isr([0, 1, 2], [0, 1]).at(130).isr([0, 1], [0, 1, 2])
    t.at(140).isr([0, 1, 2], [0]).at(150.25).isr([0], [0, 2])
    t.at(300).isr([0, 2], [0, 1, 2])
    t.at(301).rebalance().consume(0, "p0-0", hw=2)
    t.at(302).elect(None, [], epoch=3)  # ... and ends without a leader
    out["churn_offline"] = t

    t = healthy()
    t.converged(False)
    out["not_converged"] = t

    t = Trace()  # an ack lost, the read places the send: reordered; a cooperative chain
    t.elect(0, [0, 1, 2])
    t.at(1).send("p0-0").send("p0-1").hw(0, 0, 4).ack("p0-1", 0)
    t.send("p0-2").send("p0-3").ack("p0-2", 2).ack("p0-3", 3)
    t.consume(0, "p0-1", hw=4).consume(1, "p0-0", hw=4)
    t.at(2).rebalance(protocol="cooperative").consume(3, "p0-3", hw=4)     # skips 2
    t.at(3).assignment([1], protocol="cooperative").assignment([0], protocol="cooperative")
    t.consume(2, "p0-2", hw=4)                                              # a new chain
    t.at(4).emit("node_crash", node="consumer-c0", actor="sim", kind="process")
    t.consume(1, "p0-0", hw=4)                                              # a new process
    t.at(30).converged(True)
    for r in (0, 1, 2):
        t.final_log(r, [(0, "p0-1"), (1, "p0-0"), (2, "p0-2"), (3, "p0-3")], hw=4)
    out["placed_send_cooperative"] = t

    t = healthy()  # committed offsets: one read back right, one lost, one pending commit
    c = {"node": "consumer-g-0", "actor": "consumer", "group": "g", "consumer": "c0",
         "topic": TOPIC, "partition": 0}
    t.at(40).emit("offset_commit", **c, offset=2, generation=1, commit_id=1)
    t.at(41).emit("offset_commit_ack", **c, offset=2, commit_id=1)
    t.at(42).emit("offset_fetch", **c, offset=2, requested_us=41_500_000)      # right
    t.at(43).emit("offset_commit", **c, offset=3, generation=1, commit_id=2)
    t.at(44).emit("offset_fetch", **c, offset=3, requested_us=43_500_000)      # pending: ok
    t.at(45).emit("offset_commit_ack", **c, offset=3, commit_id=2)
    t.at(46).emit("offset_fetch", **c, offset=2, requested_us=45_500_000)      # lost: 3
    t.at(47).emit("offset_fetch", **c, offset=-1, requested_us=46_500_000)     # lost: none
    t.at(48).emit("offset_fetch", **c, offset=3, requested_us=45_000_000)      # same us: ok
    out["committed_offsets"] = t

    out["reassigned"] = reassigned()
    out["all_crashed"] = all_crashed()  # offline, nothing lost: the logs are on disk
    out["all_crashed_lost_tail"] = all_crashed(lost_tail=True)
    t = Trace()  # what a log shows of a possible loss (issue 54): a truncation below the
    t.elect(0, [0, 1], epoch=3)  # HW, and an election with an older epoch than one before
    t.at(1).emit("log_truncate", node="broker-1", topic=TOPIC, partition=0, replica=1,
                 new_leo=3, hw=5, reason="below_high_watermark")
    t.emit("log_truncate", node="broker-1", topic=TOPIC, partition=0, replica=1,
           old_leo=6, new_leo=5, reason="leader_epoch")     # at the HW it names: none
    t.at(2).elect(1, [1], epoch=2)
    t.emit("become_leader", node="broker-1", topic=TOPIC, partition=0, replica=1,
           leader_epoch=2, isr=[1], leo=5, hw=5)           # the same old epoch again
    t.at(30).converged(True)
    for r in (0, 1):
        t.final_log(r, [], hw=0)
    out["log_loss_signals"] = t
    out["broker_behind_metadata"] = broker_behind_metadata()
    out["diverged_quorum"] = diverged_quorum()  # metadata_divergence, uncommitted_...
    return out
