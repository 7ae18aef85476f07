"""Why an anomaly happened: causal chains read from a trace (``isrlab explain``).

``isrlab check`` says *that* acknowledged writes were lost; this module says *why*, in the
seeds' terms (LEO, HW, ISR, truncation, election) and from the trace contract alone
(``traces.schema``): no model code is imported, so a chain is evidence, not a restatement of
what the emulator meant to do.

How
---
Two passes over the trace.

1. The checker (:mod:`traces.checker`), keeping every finding rather than the first ten.
2. A fold over the partitions that have findings, rebuilding what each replica's log held.
   A replica's log is a list of *runs*: offsets ``[start, end)`` tagged with the leader
   *term* that wrote them — one ``become_leader`` of one replica, shown by its leader
   epoch. A leader's append (``leo_update`` while it is leader) is its own term; a
   follower's append copies its leader's runs over the same offsets (the records a fetch
   carries are the leader's); ``log_truncate``, ``log_recovery`` (a power loss keeps only
   what the page cache had flushed), ``replica_deleted`` and ``replica_created`` cut or
   reset the log. A record is identified by ``(offset, term)``: in one term one leader
   writes each offset at most once. (Terms, not epochs: before KIP-380 a broker that
   bounced inside its ZooKeeper session resumed leadership in the *same* epoch with an
   emptied log and wrote the offsets again.) For every offset a finding names, the fold keeps
   each replica's history at that offset (which epoch it held, since when, and what changed
   it), and at each finding's witnessing event a snapshot of the partition (leader, epoch,
   committed ISR, the leader's HW, pending ISR expansions).

Each finding is then judged into a *chain*: the write and its acknowledgement, every event
that took the record from a replica, the ISR changes that let a replica without it in, the
election that made such a replica leader, and the append that overwrote the offset — plus the
faults that set these off — and named by the *rule at fault* (:data:`RULES`): the Kafka
mechanism, and the KIP or JIRA whose fix changes it. Findings of one partition whose chains
are made of the same trace events (the same truncation, the same election) are one chain
listing the offsets it covers: 500 lost writes of one truncation are one story, not 500.

The epoch a follower copies is its leader's *at the time of the append* in trace order; a
fetch response overtaken by the leader's own truncation is not modelled (the trace does not
carry the records a response held). The final logs (``final_log``, which carry each record's
epoch) check the reconstruction: a test holds the two equal on the catalog's traces.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from emulator.args import Parser
from traces.checker import EXIT_INCOMPLETE, CheckResult, Event, PartitionKey, check_file
from traces.reader import TraceError, iter_events

#: the epoch of records whose writer the trace does not show (written before it started)
UNKNOWN: Final = -1
#: findings whose chain the fold rebuilds offset by offset; the others get a generic chain
RECORD_ANOMALIES: Final = ("lost_acked_write", "lost_acked_uncommitted", "hw_regression_visible")
#: an HW regression's range wider than this is compared on its first offsets only
MAX_RANGE: Final = 10_000

Key = PartitionKey


@dataclass(frozen=True)
class Rule:
    """A Kafka mechanism a chain ends in: what it did, and what changes it."""

    what: str
    fix: str
    #: Kafka's designed behaviour, not a loss (a finding the checker reports for study)
    expected: bool = False


#: The rules at fault, by name. ``fix`` names the KIP or JIRA and the Kafka release where
#: the behaviour changed (KAFKA_REFERENCE section 2), or the setting that forbids it.
RULES: Final[dict[str, Rule]] = {
    "truncation_to_hw": Rule(
        "a follower truncated to its own high watermark on restart or on becoming follower, "
        "dropping records the leader had already committed, and stayed in the ISR",
        "KIP-101 (Kafka 0.11): a follower truncates to the leader's end offset for its "
        "epoch (OffsetsForLeaderEpoch), never below a committed record"),
    "no_epoch_entry": Rule(
        "the follower found no entry for its epoch on the new leader and fell back to its "
        "own HW and then to the leader's log end",
        "KAFKA-7415 (Kafka 2.1): a new leader records its epoch when it is elected"),
    "divergence_kept_hw": Rule(
        "on becoming follower the replica truncated to its own HW, which lay above records "
        "the new leader never had, so it kept them: the logs diverge",
        "KIP-101 (Kafka 0.11): truncation by the leader's epoch end finds the divergence"),
    "epoch_end_answer": Rule(
        "the leader answered the follower's OffsetsForLeaderEpoch with the start of its next "
        "epoch, past records it never had, so the follower kept its divergent suffix",
        "KIP-279 (Kafka 2.0): the leader answers with the end of the largest epoch at or "
        "below the asked one, and the follower truncates to the smaller of the two ends"),
    "divergence_kept": Rule(
        "a replica kept records the final leader does not have: no truncation reached them",
        "none named: read the steps"),
    "leso_check": Rule(
        "the leader added a follower to the ISR before the follower reached the start offset "
        "of the leader's epoch, against a stale HW: an ISR member lacked committed records",
        "KAFKA-7128 (Kafka 2.1): a follower joins the ISR only once its LEO reaches the "
        "leader epoch start offset"),
    "maximal_isr": Rule(
        "the leader acknowledged while an ISR expansion was pending at the controller, "
        "counting only the committed ISR; the controller then committed a replica without "
        "the record",
        "KIP-497 (Kafka 2.7): the leader counts the pending expansion (the maximal ISR) "
        "in the HW"),
    "diverging_fetch_counted": Rule(
        "the leader took the fetch offset of a follower with a divergent log for real and "
        "counted it in the ISR and the HW, although the follower held other records there",
        "KAFKA-13141 (Kafka 3.1): a fetch that carries a diverging epoch does not update "
        "the follower's state on the leader"),
    "isr_without_record": Rule(
        "a replica without the record was in (or joined) the ISR after it was acknowledged",
        "none named: read the steps"),
    "removed_by_reassignment": Rule(
        "a reassignment completed and deleted the logs of replicas that held the record "
        "while the replicas it kept did not all hold it",
        "KAFKA-15665 (Kafka 3.8): KRaft completes a reassignment only once every target "
        "replica is in the ISR"),
    "bounce_unnoticed": Rule(
        "the leader restarted within its ZooKeeper session after losing the record; the "
        "controller never saw it fail, so it kept its leadership (same epoch) and its ISR "
        "place, and wrote the offsets again",
        "KIP-380 (Kafka 2.2): broker epochs let the controller detect a bounced broker and "
        "fail it out of its leaderships and ISRs"),
    "reassignment_revert": Rule(
        "cancelling a reassignment put the original replicas back, without the record (an "
        "unclean revert: KIP-455's PartitionReassignmentRevert), and took the replicas "
        "that held it away", "unclean.leader.election.enable=false: the cancel is refused"),
    "unclean_election": Rule(
        "an unclean election made an out-of-sync replica without the record leader",
        "unclean.leader.election.enable=false (the default since Kafka 0.11)"),
    "elr_election": Rule(
        "an eligible leader replica (KIP-966) without the record was elected",
        "none named: read the steps"),
    "last_replica_standing": Rule(
        "the last ISR member lost the record from its page cache at a power loss and was "
        "re-elected on restart (last replica standing)",
        "KIP-966 (Kafka 4.0): an uncleanly shut-down broker leaves the eligible leader "
        "replicas, so a complete replica is elected"),
    "page_cache_loss": Rule(
        "replicas lost the record from their page caches at power losses: as many as or "
        "more than the ISR could spare (beyond the fault budget)",
        "none: flush.messages=1, or fewer simultaneous power losses than "
        "min.insync.replicas"),
    "acks_1": Rule(
        "acknowledged by its leader alone (acks=1) before any follower had it; a replica "
        "without it became (or already was) the leader",
        "acks=all (Kafka's default since 3.0): this loss is allowed under acks=1"),
    "min_isr_1": Rule(
        "acknowledged while the ISR was the leader alone (min.insync.replicas=1), so one "
        "replica's loss lost the record",
        "min.insync.replicas=2 with acks=all"),
    "hw_before_truncation": Rule(
        "a follower applied the leader's HW from a diverging fetch response before "
        "truncating, so its HW briefly covered its own divergent records",
        "KAFKA-14704 (Kafka 3.5): truncate first, then apply the leader's HW"),
    "stale_leader_hw": Rule(
        "a newly elected leader's HW lags the old leader's until its followers fetch "
        "(expected: Kafka's local HW is not monotonic across leaders)",
        "none needed: consumers never see a committed offset go back", expected=True),
    "hw_checkpoint": Rule(
        "on restart the replica loaded its HW from a checkpoint older than the HW it had "
        "shown", "none needed: a restarted replica relearns the HW from its leader",
        expected=True),
    "truncated_below_hw": Rule(
        "a follower truncated below its HW to a new leader's log: records it had seen "
        "committed were not on that leader (a consequence of a loss above, if any)",
        "as for the loss", expected=True),
    "unexplained": Rule(
        "no rule of this table matches the trace's steps", "read the steps"),
}


# --------------------------------------------------------------------------- replica logs


class _Log:
    """One replica's log as the trace shows it: runs ``[start, end)`` with their epoch."""

    __slots__ = ("starts", "ends", "epochs", "end")

    def __init__(self, end: int = 0) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.epochs: list[int] = []
        self.end = end

    def epoch_at(self, offset: int) -> int | None:
        """The epoch of the record at ``offset``, None when the log does not hold it."""
        if offset >= self.end:
            return None
        i = bisect.bisect_right(self.starts, offset) - 1
        if i < 0 or offset >= self.ends[i]:
            return None
        return self.epochs[i]

    def runs(self, lo: int, hi: int) -> list[tuple[int, int, int]]:
        """The runs over ``[lo, hi)``, clipped; offsets the log lacks are UNKNOWN runs."""
        out: list[tuple[int, int, int]] = []
        at = lo
        i = max(0, bisect.bisect_right(self.starts, lo) - 1)
        while at < hi and i < len(self.starts):
            s, e, ep = self.starts[i], self.ends[i], self.epochs[i]
            if e <= at:
                i += 1
                continue
            if s > at:
                out.append((at, min(s, hi), UNKNOWN))
                at = min(s, hi)
                continue
            out.append((at, min(e, hi), ep))
            at = min(e, hi)
            i += 1
        if at < hi:
            out.append((at, hi, UNKNOWN))
        return out

    def _add(self, s: int, e: int, ep: int) -> None:
        if self.ends and self.ends[-1] == s and self.epochs[-1] == ep:
            self.ends[-1] = e
        else:
            self.starts.append(s)
            self.ends.append(e)
            self.epochs.append(ep)

    def append(self, old: int, new: int, runs: Iterable[tuple[int, int, int]]) -> None:
        if old < self.end:
            self.cut(old)
        for s, e, ep in runs:
            self._add(s, e, ep)
        self.end = max(self.end, new)

    def cut(self, n: int) -> None:
        while self.starts and self.starts[-1] >= n:
            self.starts.pop()
            self.ends.pop()
            self.epochs.pop()
        if self.ends and self.ends[-1] > n:
            self.ends[-1] = n
        self.end = min(self.end, n)

    def reset(self, start: int) -> None:
        self.starts.clear()
        self.ends.clear()
        self.epochs.clear()
        self.end = start


# --------------------------------------------------------------------------- the fold


@dataclass(frozen=True)
class _Change:
    """A replica's record at one offset changed: ``epoch`` is the term of the record it
    holds after (None: nothing), ``how`` what did it."""

    seq: int
    ts: int
    replica: int
    epoch: int | None
    how: str


@dataclass(frozen=True)
class _Snap:
    """The partition when a finding's witnessing event happened."""

    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    #: every replica's HW
    hw: dict[int, int]
    #: replica -> epoch of its record at the finding's offset (None: lacks it)
    held: dict[int, int | None]
    #: replicas whose ISR expansion the leader had proposed and the controller not answered
    pending: tuple[int, ...]


@dataclass
class _Part:
    logs: dict[int, _Log] = field(default_factory=dict)
    #: replica -> (role, its term as leader or its leader epoch as follower, its leader)
    role: dict[int, tuple[str, int, int | None]] = field(default_factory=dict)
    leader: int | None = None
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    hw: dict[int, int] = field(default_factory=dict)
    #: the leader epoch start offset of each replica's last leadership
    leso: dict[int, int] = field(default_factory=dict)
    #: replica -> (seq, ts) of the first expansion proposal naming it, while pending
    pending: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: offsets findings name, sorted, and each replica's history at each of them
    watch: list[int] = field(default_factory=list)
    hist: dict[int, list[_Change]] = field(default_factory=dict)
    #: partition-level steps: (seq, ts, kind, fields)
    steps: list[tuple[int, int, str, dict[str, Any]]] = field(default_factory=list)
    #: replica -> its last HW raise: (seq, ts, old, new, reason, first divergent offset)
    raise_: dict[int, tuple[int, int, int, int, str, int | None]] = field(default_factory=dict)
    #: replica -> its last restart's recovery: (seq, ts, what it did)
    recovered: dict[int, tuple[int, int, str]] = field(default_factory=dict)
    track_hw: bool = False


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


def _ints(v: Any) -> tuple[int, ...]:
    return tuple(x for x in v if type(x) is int) if isinstance(v, list) else ()


def _broker(node: Any) -> int | None:
    if isinstance(node, str) and node.startswith("broker-"):
        try:
            return int(node[len("broker-"):])
        except ValueError:
            return None
    return None


class _Fold:
    """Pass 2: the replicas' logs of the watched partitions, and the snapshots asked for."""

    def __init__(self, watch: dict[Key, set[int]], snaps: dict[int, tuple[Key, int]],
                 hw_wanted: dict[int, tuple[Key, int]], *, every: bool = False) -> None:
        self.parts: dict[Key, _Part] = {}
        #: fold every partition, not only the watched ones (:func:`replica_logs`)
        self.every = every
        for key, offsets in watch.items():
            p = self.parts[key] = _Part()
            p.watch = sorted(offsets)
            p.hist = {o: [] for o in p.watch}
        for key, _replica in hw_wanted.values():
            self.parts.setdefault(key, _Part()).track_hw = True
        #: seq of an HW regression -> (partition, replica); and what the fold saw there:
        #: the replica's last HW raise, its HW before the regression, its last recovery
        self.hw_wanted = hw_wanted
        self.hw_seen: dict[int, tuple[tuple[int, int, int, int, str, int | None] | None,
                                      int | None, tuple[int, int, str] | None]] = {}
        #: seq -> (partition, offset) for every snapshot wanted
        self.want = snaps
        self.snaps: dict[int, _Snap] = {}
        self.faults: list[tuple[int, int, str, str, tuple[str, ...]]] = []
        self.crash_kind: dict[str, str] = {}
        self.header: Event = {}
        self.final_epochs: dict[tuple[str, int, int], dict[int, int]] = {}
        #: leader term (the seq of its become_leader) -> its leader epoch
        self.term_epoch: dict[int, int] = {UNKNOWN: UNKNOWN}
        #: the final value at each watched offset, per replica
        self.final_values: dict[tuple[str, int, int], dict[int, str]] = {}
        self.end_ts = 0
        #: message lines (a trace run with --trace-messages) about a watched partition:
        #: msg_id -> the msg_send line, msg_id -> the receipt time, (node, ts) -> ids received
        self.sent: dict[int, Event] = {}
        self.received: dict[int, int] = {}
        self.recv_at: dict[tuple[str, int], list[int]] = {}

    # -- helpers --

    def _log(self, p: _Part, replica: int) -> _Log:
        log = p.logs.get(replica)
        if log is None:
            log = p.logs[replica] = _Log()
        return log

    def _changed(self, p: _Part, replica: int, lo: int, hi: int, seq: int, ts: int,
                 how: str) -> None:
        """Note the watched offsets in ``[lo, hi)`` whose record on ``replica`` changed."""
        if not p.watch or hi <= lo:
            return
        log = p.logs.get(replica)
        i = bisect.bisect_left(p.watch, lo)
        while i < len(p.watch) and p.watch[i] < hi:
            o = p.watch[i]
            now = log.epoch_at(o) if log is not None else None
            h = p.hist[o]
            before = next((c.epoch for c in reversed(h) if c.replica == replica), None)
            if now != before:
                h.append(_Change(seq, ts, replica, now, how))
            i += 1

    # -- the events --

    def feed(self, ev: Event) -> None:
        name = ev.get("event")
        seq = _int(ev.get("seq")) or 0
        ts = _int(ev.get("ts_us")) or 0
        self.end_ts = max(self.end_ts, ts)
        if name == "run_start":
            self.header = ev
        elif name == "fault":
            target = ev.get("target")
            targets = tuple(t for t in target if isinstance(t, str)) if isinstance(
                target, list) else ((target,) if isinstance(target, str) else ())
            self.faults.append((seq, ts, str(ev.get("fault")), str(ev.get("phase")), targets))
        elif name == "node_crash":
            self.crash_kind[str(ev.get("node"))] = str(ev.get("kind"))
        elif name == "msg_send":
            if self._about_watched(ev):
                self.sent[int(ev["msg_id"])] = ev
            return
        elif name == "msg_recv":
            mid = _int(ev.get("msg_id"))
            if mid is not None and mid in self.sent:
                self.received[mid] = ts
                self.recv_at.setdefault((str(ev.get("node")), ts), []).append(mid)
            return
        topic, partition = ev.get("topic"), _int(ev.get("partition"))
        if isinstance(topic, str) and partition is not None:
            p = self.parts.get((topic, partition))
            if p is None and self.every:
                p = self.parts[(topic, partition)] = _Part()
            if p is not None:
                hw = self.hw_wanted.get(seq)
                if hw is not None:
                    self.hw_seen[seq] = (p.raise_.get(hw[1]), p.hw.get(hw[1]),
                                         p.recovered.get(hw[1]))
                self._partition_event(p, str(name), ev, seq, ts)
        want = self.want.get(seq)
        if want is not None:
            self._snapshot(seq, want)

    def _about_watched(self, ev: Event) -> bool:
        """Does a msg_send line name a partition with findings (itself or among its parts)?"""
        if (ev.get("topic"), ev.get("partition")) in self.parts:
            return True
        parts = ev.get("parts")
        return isinstance(parts, list) and any(
            isinstance(q, dict) and (q.get("topic"), q.get("partition")) in self.parts
            for q in parts)

    def _snapshot(self, seq: int, want: tuple[Key, int]) -> None:
        key, offset = want
        p = self.parts.get(key)
        if p is None:
            return
        held = {r: log.epoch_at(offset) for r, log in sorted(p.logs.items())}
        self.snaps[seq] = _Snap(p.leader, p.leader_epoch, p.isr, dict(p.hw), held,
                                tuple(sorted(p.pending)))

    def _partition_event(self, p: _Part, name: str, ev: Event, seq: int, ts: int) -> None:
        replica = _int(ev.get("replica"))
        if name == "leo_update" and replica is not None:
            old, new = _int(ev.get("old")), _int(ev.get("new"))
            if old is None or new is None or new <= old:
                return
            role, term, leader = p.role.get(replica, ("none", UNKNOWN, None))
            log = self._log(p, replica)
            if role == "leader":
                runs = [(old, new, term)]
                how = f"appended as leader in epoch {self.term_epoch[term]}"
            else:
                source = p.logs.get(leader) if leader is not None else None
                runs = source.runs(old, new) if source is not None else [(old, new, UNKNOWN)]
                how = f"fetched from broker-{leader}" if leader is not None else "fetched"
            log.append(old, new, runs)
            self._changed(p, replica, old, new, seq, ts, how)
        elif name == "log_truncate" and replica is not None:
            old, new = _int(ev.get("old_leo")), _int(ev.get("new_leo"))
            if old is None or new is None:
                return
            reason = str(ev.get("reason"))
            log = self._log(p, replica)
            if new > old:   # truncated fully and restarted at the leader's log start
                log.reset(new)
                self._changed(p, replica, 0, new, seq, ts, f"log reset to {new} ({reason})")
            else:
                log.cut(new)
                self._changed(p, replica, new, old, seq, ts,
                              f"truncated {old} -> {new} ({reason})")
            p.steps.append((seq, ts, "truncate", {"replica": replica, "old": old,
                                                  "new": new, "reason": reason}))
        elif name == "log_recovery" and replica is not None:
            leo = _int(ev.get("leo"))
            if leo is None:
                return
            log = self._log(p, replica)
            had = log.end
            log.cut(leo)
            power = (self.crash_kind.get(str(ev.get("node")), "") == "power_loss"
                     or "power_loss_leo" in ev)
            p.recovered[replica] = (seq, ts, (
                f"broker-{replica} restarted{' after a power loss' if power else ''}: log "
                f"recovered to LEO {leo}, HW {ev.get('hw')} from its checkpoint"))
            if leo < had:
                how = (f"power loss: recovered to LEO {leo} (had {had}; "
                       f"recovery point {ev.get('recovery_point')})"
                       if power else f"recovered to LEO {leo} (had {had})")
                self._changed(p, replica, leo, had, seq, ts, how)
        elif name == "replica_deleted" and replica is not None:
            log = self._log(p, replica)
            had = log.end
            log.reset(0)
            self._changed(p, replica, 0, had, seq, ts, "replica deleted")
        elif name == "replica_created" and replica is not None:
            leo = _int(ev.get("leo")) or 0
            self._log(p, replica).reset(leo)
        elif name == "become_leader" and replica is not None:
            epoch = _int(ev.get("leader_epoch"))
            self.term_epoch[seq] = epoch if epoch is not None else UNKNOWN
            p.role[replica] = ("leader", seq, replica)
            p.steps.append((seq, ts, "become_leader", {
                "replica": replica, "leader_epoch": epoch, "leo": _int(ev.get("leo"))}))
            leso = _int(ev.get("leso"))
            if leso is None:
                leso = _int(ev.get("leo"))
            if leso is not None:
                p.leso[replica] = leso
            self._sync_end(p, replica, _int(ev.get("leo")), seq, ts)
        elif name == "become_follower" and replica is not None:
            epoch = _int(ev.get("leader_epoch"))
            p.role[replica] = ("follower", epoch if epoch is not None else UNKNOWN,
                               _int(ev.get("leader")))
            self._sync_end(p, replica, _int(ev.get("leo")), seq, ts)
            p.steps.append((seq, ts, "become_follower", {
                "replica": replica, "leader": _int(ev.get("leader")),
                "leader_epoch": epoch, "leo": _int(ev.get("leo")), "hw": _int(ev.get("hw"))}))
        elif name == "hw_update" and replica is not None:
            new, old = _int(ev.get("new")), _int(ev.get("old"))
            if new is None:
                return
            if p.track_hw and old is not None and new > old:
                p.raise_[replica] = (seq, ts, old, new, str(ev.get("reason")),
                                     self._divergent(p, replica, old, new))
            p.hw[replica] = new
        elif name == "leader_elected":
            leader = _int(ev.get("leader"))
            epoch = _int(ev.get("leader_epoch"))
            p.leader = leader if leader is not None and leader >= 0 else None
            p.leader_epoch = epoch if epoch is not None else p.leader_epoch
            p.isr = _ints(ev.get("isr"))
            p.steps.append((seq, ts, "elected", {
                "leader": p.leader, "leader_epoch": epoch, "isr": list(p.isr),
                "election": str(ev.get("election")), "elr": list(_ints(ev.get("elr")))}))
        elif name == "reassignment" and ev.get("phase") in ("complete", "cancel"):
            p.steps.append((seq, ts, "reassigned", {
                "phase": str(ev.get("phase")), "replicas": list(_ints(ev.get("replicas"))),
                "isr": list(_ints(ev.get("isr"))), "removed": list(_ints(ev.get("removed")))}))
        elif name == "partition_offline":
            p.leader = None
            p.steps.append((seq, ts, "offline", {}))
        elif name == "isr_change":
            new_isr = _ints(ev.get("new"))
            added = sorted(set(new_isr) - set(p.isr))
            p.isr = new_isr
            for r in added:
                proposed_at = p.pending.pop(r, None)
                p.steps.append((seq, ts, "isr_join", {
                    "replica": r, "reason": str(ev.get("reason")),
                    "proposed": proposed_at, "isr": list(new_isr),
                    "leso": p.leso.get(p.leader) if p.leader is not None else None,
                    "leo": p.logs[r].end if r in p.logs else None}))
            for r in [r for r in p.pending if r in new_isr]:
                del p.pending[r]
        elif name == "alter_partition":
            proposed = _ints(ev.get("proposed_isr"))
            if ev.get("kind") == "expand":
                for r in proposed:
                    if r not in p.isr and r not in p.pending:
                        p.pending[r] = (seq, ts)
            else:
                for r in [r for r in p.pending if r not in proposed]:
                    del p.pending[r]
        elif name == "final_log" and replica is not None:
            records = ev.get("records")
            if isinstance(records, list):
                epochs: dict[int, int] = {}
                values: dict[int, str] = {}
                watched = set(p.watch)
                for rec in records:
                    if isinstance(rec, list) and len(rec) >= 3:
                        o, ep = _int(rec[0]), _int(rec[2])
                        if o is not None and ep is not None:
                            epochs[o] = ep
                            if o in watched:
                                values[o] = str(rec[1])
                rkey = (str(ev.get("topic")), int(ev["partition"]), replica)
                self.final_epochs[rkey] = epochs
                self.final_values[rkey] = values

    def _sync_end(self, p: _Part, replica: int, leo: int | None, seq: int, ts: int) -> None:
        """A role change names the replica's LEO: records the trace never showed written
        (before it started, or a restart's recovery) fill in as UNKNOWN; a shorter log is
        cut."""
        if leo is None:
            return
        log = self._log(p, replica)
        if leo > log.end:
            old = log.end
            log.append(old, leo, [(old, leo, UNKNOWN)])
        elif leo < log.end:
            had = log.end
            log.cut(leo)
            self._changed(p, replica, leo, had, seq, ts, f"log end {had} -> {leo}")

    def _divergent(self, p: _Part, replica: int, lo: int, hi: int) -> int | None:
        """The first offset in ``[lo, hi)`` where ``replica`` holds another record than the
        leader it follows (None: none, or no leader known)."""
        role = p.role.get(replica)
        if role is None or role[0] != "follower" or role[2] is None:
            return None
        mine, theirs = p.logs.get(replica), p.logs.get(role[2])
        if mine is None or theirs is None:
            return None
        hi = min(hi, lo + MAX_RANGE)
        for o in range(lo, hi):
            a, b = mine.epoch_at(o), theirs.epoch_at(o)
            if a is not None and a != b:
                return o
        return None


def replica_logs(path: str) -> tuple[dict[tuple[str, int, int], dict[int, int | None]],
                                     dict[tuple[str, int, int], dict[int, int]]]:
    """For each replica with a ``final_log``: the epoch of each of its final offsets as the
    fold rebuilt it from ``path`` (None: not held), and as ``final_log`` gives it — what
    the tests hold equal."""
    fold = _Fold({}, {}, {}, every=True)
    with iter_events(path, verify=False) as stream:
        for ev in stream:
            fold.feed(ev)
    logs = {(k[0], k[1], r): log for k, p in fold.parts.items() for r, log in p.logs.items()}
    rebuilt: dict[tuple[str, int, int], dict[int, int | None]] = {}
    for key, epochs in fold.final_epochs.items():
        log = logs.get(key)
        mine = rebuilt[key] = {}
        for o in epochs:
            term = log.epoch_at(o) if log is not None else None
            mine[o] = None if term is None else fold.term_epoch[term]
    return rebuilt, fold.final_epochs


# --------------------------------------------------------------------------- chains


@dataclass
class Step:
    seq: int
    ts_us: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts_us": self.ts_us, "text": self.text}


@dataclass
class Chain:
    """One cause: the anomaly, the partition, the findings it covers and the steps."""

    anomaly: str
    topic: str
    partition: int
    rule: str
    steps: list[Step]
    #: (offset, value) of each record the chain covers (empty for partition findings)
    records: list[tuple[int, str | None]] = field(default_factory=list)
    count: int = 1
    #: reads of the chain's records that consumers saw rewritten (hw_regression_visible)
    reads: int = 0
    key: tuple[Any, ...] = ()
    #: further partitions one cause reached (a broker's restart regresses each of its HWs)
    more: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        offsets = [o for o, _ in self.records]
        return {
            "anomaly": self.anomaly, "topic": self.topic, "partition": self.partition,
            "count": self.count, "rule": self.rule, "what": RULES[self.rule].what,
            "fix": RULES[self.rule].fix,
            "offsets": [min(offsets), max(offsets)] if offsets else None,
            "values": [self.records[0][1], self.records[-1][1]] if self.records else None,
            "reads_rewritten": self.reads, "more_partitions": self.more,
            "steps": [s.to_json() for s in self.steps],
        }


def _s(ts: int) -> str:
    return f"{ts / 1e6:8.3f} s"


def _set(v: Iterable[int]) -> str:
    return "[" + ",".join(str(x) for x in v) + "]"


class _Judge:
    """Turn the checker's findings and the fold into chains."""

    def __init__(self, result: CheckResult, fold: _Fold) -> None:
        self.result = result
        self.fold = fold
        scenario = fold.header.get("scenario")
        self.scenario: Mapping[str, Any] = scenario if isinstance(scenario, dict) else {}
        self.protocol = str(fold.header.get("protocol") or self.scenario.get("protocol") or "")
        bugs = self.scenario.get("bugs")
        self.bugs = [b for b in bugs if isinstance(b, str)] if isinstance(bugs, list) else []

    def _ep(self, term: int | None) -> int | None:
        """The leader epoch of a term (None stays None)."""
        return None if term is None else self.fold.term_epoch.get(term, UNKNOWN)

    def era(self) -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in self.protocol.split("."))
        except ValueError:
            return (99,)

    # -- faults --

    def _faults(self, nodes: set[str], lo_seq: int, hi_seq: int) -> list[Step]:
        out = []
        for seq, ts, fault, phase, targets in self.fold.faults:
            if lo_seq < seq <= hi_seq and nodes & set(targets):
                out.append(Step(seq, ts, f"fault {fault} {phase}: {', '.join(targets)}"))
        return out

    # -- records --

    def record_chain(self, anomaly: str, key: Key, offset: int, value: str | None,
                     anchor: dict[str, Any]) -> Chain:
        """The chain of one record: written, acknowledged (or read) at ``anchor``'s seq, gone
        from the final log."""
        p = self.fold.parts[key]
        seq = int(anchor["seq"])
        snap = self.fold.snaps.get(seq)
        held_at = snap.held if snap is not None else {}
        # The record is the one the last leader to write the offset before the anchor wrote:
        # the producer heard from that broker, which may no longer be the controller's leader
        # by the time the acknowledgement arrives (acks=1 from a deposed leader).
        written: _Change | None = None
        for wc in p.hist.get(offset, []):
            if wc.seq >= seq:
                break
            if wc.how.startswith("appended as leader"):
                written = wc
        leader = written.replica if written is not None else (
            snap.leader if snap is not None else None)
        epoch = written.epoch if written is not None else (
            held_at.get(leader) if leader is not None else None)
        holders = {r for r, e in held_at.items() if e is not None and e == epoch}
        steps: list[Step] = []
        ts = int(anchor.get("ts_us") or 0)
        if anomaly == "hw_regression_visible":
            what = (f"read at offset {offset} by {anchor.get('consumer')} "
                    f"(group {anchor.get('group')}, served HW {anchor.get('hw')})")
        else:
            what = (f"acked at offset {offset} to producer {anchor.get('producer')} "
                    f"(acks {anchor.get('acks')})")
        if snap is not None and leader is not None:
            on = _set(sorted(holders)) if holders else "no replica"
            hw = snap.hw.get(leader)
            ep = self._ep(epoch)
            if leader == snap.leader and ep == snap.leader_epoch:
                what += (f" by broker-{leader}: leader epoch {ep}, ISR {_set(snap.isr)}, "
                         f"HW {hw}; record of epoch {ep} on {on}")
            else:
                now = (f"broker-{snap.leader} (epoch {snap.leader_epoch}, ISR "
                       f"{_set(snap.isr)})" if snap.leader is not None else "none")
                what += (f": written by broker-{leader} as leader in epoch {ep}, its HW "
                         f"{hw}; the controller's leader by then {now}; record on {on}")
        steps.append(Step(seq, ts, what))
        if epoch is None:
            return Chain(anomaly, key[0], key[1], "unexplained", steps, [(offset, value)],
                         key=(anomaly, key, "unexplained"))

        # Walk everything after the anchor: the record's history at its offset, and the
        # partition's elections and ISR joins.
        events: list[tuple[int, int, str, Any]] = [
            (c.seq, c.ts, "change", c) for c in p.hist.get(offset, []) if c.seq > seq]
        events += [(s, t, k, f) for s, t, k, f in p.steps
                   if s > seq and k in ("elected", "isr_join", "reassigned", "become_leader")]
        events.sort(key=lambda e: (e[0], e[2]))
        had = set(holders)            # ever held it since the anchor
        lost: dict[int, _Change] = {}  # replica -> how it lost it (last time)
        joins: dict[int, tuple[int, int, dict[str, Any], int | None]] = {}
        isr = set(snap.isr) if snap is not None else set()
        decisive: tuple[int, int, dict[str, Any]] | None = None
        cur_leader = leader
        overwrite: _Change | None = None
        shown: list[Step] = []
        key_steps: list[int] = []
        for s, t, kind, data in events:
            if kind == "change":
                c: _Change = data
                if c.epoch == epoch:
                    holders.add(c.replica)
                    had.add(c.replica)
                    continue
                if c.replica in holders:
                    holders.discard(c.replica)
                    lost[c.replica] = c
                    shown.append(Step(s, t, f"broker-{c.replica} {c.how}: lost the record"))
                    key_steps.append(s)
                elif (overwrite is None and decisive is not None and c.replica == cur_leader
                      and c.epoch is not None):
                    overwrite = c
                    shown.append(Step(s, t, (
                        f"broker-{c.replica} {c.how}: offset {offset} overwritten by "
                        f"{self._value(key, c.replica, offset, c.epoch)}")))
            elif kind == "isr_join":
                r = data["replica"]
                isr.add(r)
                if r not in holders and decisive is None:   # after it: consequences
                    log_epoch = self._epoch_at(key, r, offset, s)
                    joins[r] = (s, t, data, log_epoch)
                    where = ("nothing" if log_epoch is None else
                             f"a record of epoch {self._ep(log_epoch)}")
                    shown.append(Step(s, t, (
                        f"broker-{r} joined the ISR {_set(data['isr'])} ({data['reason']}) "
                        f"without the record: LEO {data['leo']}, at {offset} {where}"
                        + (f"; leader epoch start offset {data['leso']}"
                           if data.get("leso") is not None else ""))))
                    key_steps.append(s)
            elif kind == "become_leader":
                r = data["replica"]
                if r == cur_leader and decisive is None and r not in holders and r in lost:
                    # the controller's leader takes over without the record, which it lost
                    # after its election: either it had led this very epoch before (it
                    # bounced unnoticed and resumed) or it lost the record on its way in
                    e = data["leader_epoch"]
                    resumed = any(st[2] == "become_leader" and st[3]["replica"] == r
                                  and st[3]["leader_epoch"] == e and st[0] < lost[r].seq
                                  for st in p.steps)
                    decisive = (s, t, {"leader": r, "leader_epoch": e, "isr": list(isr),
                                       "election": "resumed" if resumed else "took over",
                                       "holders": sorted(holders)})
                    key_steps.append(s)
                    shown.append(Step(s, t, (
                        f"broker-{r} resumed leadership in epoch {e} without an election"
                        if resumed else f"broker-{r} took leadership in epoch {e}, elected "
                        "while it still held the record")
                        + f" (LEO {data['leo']}), without the record"))
            elif kind == "reassigned":
                left = set(data["replicas"])
                gone = sorted(holders - left)
                if gone or not holders & left:
                    shown.append(Step(s, t, (
                        f"reassignment {data['phase']}: replicas {_set(data['replicas'])}, ISR "
                        f"{_set(data['isr'])}; it takes away {_set(gone)}, which held the "
                        f"record; of the replicas left, {_set(sorted(holders & left))} hold it")))
                    key_steps.append(s)
                    if not holders & left and decisive is None:
                        # no replica it leaves holds the record: this is the loss
                        decisive = (s, t, {"leader": cur_leader, "leader_epoch": None,
                                           "isr": data["isr"], "holders": [],
                                           "election": f"reassignment_{data['phase']}"})
            elif kind == "elected":
                new = data["leader"]
                isr = set(data["isr"])
                if new is None:
                    continue
                if new != cur_leader or decisive is None:
                    if new in holders:
                        decisive = None
                    else:
                        if decisive is None:
                            decisive = (s, t, {**data, "holders": sorted(holders)})
                            key_steps.append(s)
                        shown.append(Step(s, t, (
                            f"broker-{new} elected leader ({data['election']}, epoch "
                            f"{data['leader_epoch']}, ISR {_set(data['isr'])}) without the "
                            "record")))
                cur_leader = new
        if self.fold.sent:
            shown = self._with_messages(key, offset, ts, leader, shown, lost, decisive)
        final = self._final(key, offset)
        if final:
            steps.append(Step(1 << 62, self.fold.end_ts, final))
        rule = self._rule(anomaly, key, offset, snap, epoch, had, lost, joins, decisive,
                          anchor)
        nodes = {f"broker-{r}" for r in (set(lost) | set(joins) | had)}
        if decisive is not None and decisive[2]["leader"] is not None:
            nodes.add(f"broker-{decisive[2]['leader']}")
        # the causes end with the decisive election; the losses after it are its
        # consequences (followers truncating to the new leader), shown without their faults
        cut = decisive[0] if decisive is not None else max(
            (st.seq for st in shown), default=seq)
        body = sorted(shown + self._faults(nodes, seq, cut), key=lambda st: st.seq)
        chain_steps = [steps[0], *body, *steps[1:]]
        group = (anomaly, key, rule, leader, snap.leader_epoch if snap else None,
                 tuple(k for k in key_steps if k <= cut))
        return Chain(anomaly, key[0], key[1], rule, chain_steps, [(offset, value)], key=group)

    # -- messages (a trace with message lines) --

    def _msg(self, mid: int) -> str:
        ev = self.fold.sent[mid]
        got = self.fold.received.get(mid)
        fate = (f"received at {got / 1e6:.3f} s" if got is not None else
                "never received" if ev.get("fate") == "deliver" else f"dropped ({ev.get('fate')})")
        return f"#{mid} {ev.get('msg')} {ev.get('src')} → {ev.get('dst')}, {fate}"

    def _part_of(self, ev: Event, key: Key) -> Event:
        """The part of a multi-partition message about ``key`` (or the message itself)."""
        parts = ev.get("parts")
        if isinstance(parts, list):
            for q in parts:
                if isinstance(q, dict) and (q.get("topic"), q.get("partition")) == key:
                    return q
        return ev

    def _with_messages(self, key: Key, offset: int, anchor_ts: int, writer: int | None,
                       shown: list[Step], lost: dict[int, _Change],
                       decisive: tuple[int, int, dict[str, Any]] | None) -> list[Step]:
        """The chain's steps with the messages behind them: the message each loss and the
        overwrite arrived on, the last fetch response that could have told a replica which
        later cut the record that it was committed, and the election's PartitionState."""
        fold = self.fold
        out: list[Step] = []
        for st in shown:
            node = st.text.split(" ", 1)[0]
            ids = [m for m in fold.recv_at.get((node, st.ts_us), [])
                   if fold.sent[m].get("msg") in ("PartitionState", "ReplicaFetchResponse",
                                                  "ReplicaEpochsResponse", "Produce")]
            if ids and (": lost the record" in st.text or "overwritten by" in st.text):
                st = Step(st.seq, st.ts_us, f"{st.text} — on {self._msg(ids[-1])}")
            out.append(st)
        for r, c in sorted(lost.items()):
            if "(high_watermark)" not in c.how or r == writer:
                continue
            # the fetch responses to r between the acknowledgement and the cut: did one
            # carry an HW above the offset (telling r the record was committed)?
            told = [m for m, ev in fold.sent.items() if ev.get("msg") == "ReplicaFetchResponse"
                    and str(ev.get("dst")).startswith(f"broker-{r}/")
                    and anchor_ts <= int(ev["ts_us"]) <= c.ts
                    and (_int(self._part_of(ev, key).get("high_watermark")) or 0) > offset]
            if told:
                m = told[0]
                got = m in fold.received
                out.append(Step(int(fold.sent[m]["seq"]), int(fold.sent[m]["ts_us"]), (
                    f"{self._msg(m)}: it carried HW "
                    f"{self._part_of(fold.sent[m], key).get('high_watermark')} (offset "
                    f"{offset} committed)"
                    + ("" if got else f", so broker-{r} never learnt it and kept its older "
                       "HW checkpoint"))))
            else:
                out.append(Step(c.seq, c.ts, (
                    f"no fetch response between the acknowledgement and broker-{r}'s cut "
                    f"told it that offset {offset} was committed")))
        if decisive is not None and decisive[2].get("leader_epoch") is not None:
            leader, epoch = decisive[2]["leader"], decisive[2]["leader_epoch"]
            ps = [m for m, ev in fold.sent.items() if ev.get("msg") == "PartitionState"
                  and ev.get("leader_epoch") == epoch and ev.get("leader") == leader
                  and str(ev.get("src")).startswith("controller/")
                  and str(ev.get("dst")).startswith(f"broker-{leader}/")
                  and (ev.get("topic"), ev.get("partition")) == key]
            if ps:
                ev = fold.sent[ps[0]]
                out.append(Step(int(ev["seq"]), int(ev["ts_us"]), (
                    f"{self._msg(ps[0])}: leader broker-{leader}, epoch {epoch}, ISR "
                    f"{_set(_ints(ev.get('isr')))}")))
        return sorted(out, key=lambda st: st.seq)

    def _epoch_at(self, key: Key, replica: int, offset: int, seq: int) -> int | None:
        """The epoch of ``replica``'s record at ``offset`` just before ``seq``."""
        out: int | None = None
        for c in self.fold.parts[key].hist.get(offset, []):
            if c.seq >= seq:
                break
            if c.replica == replica:
                out = c.epoch
        return out

    def _final(self, key: Key, offset: int) -> str:
        summary = self.result.partitions.get(f"{key[0]}-{key[1]}")
        if summary is None or summary.final_log_replica is None:
            return "final: the partition has no final log"
        r = summary.final_log_replica
        ep = self.fold.final_epochs.get((key[0], key[1], r), {}).get(offset)
        value = self.fold.final_values.get((key[0], key[1], r), {}).get(offset)
        if ep is None:
            held = "no record"
        elif value is not None:
            held = f"{value} (epoch {ep})"
        else:
            held = f"a record of epoch {ep}"
        return (f"final log (broker-{r}, HW {summary.final_hw}): offset {offset} holds "
                f"{held}")

    def _value(self, key: Key, replica: int, offset: int, epoch: int | None) -> str:
        """``p0-17 (epoch 2)`` when the final log of ``replica`` holds a record of ``epoch``
        at ``offset`` (its value is known there), else ``a record of epoch 2``."""
        final = self.fold.final_epochs.get((key[0], key[1], replica), {})
        value = self.fold.final_values.get((key[0], key[1], replica), {}).get(offset)
        if value is not None and final.get(offset) == self._ep(epoch):
            return f"{value} (epoch {self._ep(epoch)})"
        return f"a record of epoch {self._ep(epoch)}"

    def _rule(self, anomaly: str, key: Key, offset: int, snap: _Snap | None, epoch: int,
              had: set[int], lost: dict[int, _Change],
              joins: dict[int, tuple[int, int, dict[str, Any], int | None]],
              decisive: tuple[int, int, dict[str, Any]] | None,
              anchor: dict[str, Any]) -> str:
        acks = str(anchor.get("acks"))
        if anomaly == "lost_acked_uncommitted" and acks == "1":
            return "acks_1"
        single = snap is not None and len(snap.isr) == 1 and anomaly == "lost_acked_write"
        if decisive is not None and decisive[2]["election"] == "reassignment_cancel":
            return "reassignment_revert"
        if decisive is not None and decisive[2]["election"] == "reassignment_complete":
            return "removed_by_reassignment"
        if decisive is not None and not decisive[2].get("holders"):
            # no replica held it any more when the next leader came: how that leader was
            # chosen is moot; what lost the last copies is the story
            if single:
                return "min_isr_1"   # acknowledged with one copy: any loss of it is a loss
            before = [c for c in lost.values() if c.seq < decisive[0]]
            if before and all("power loss" in c.how for c in before):
                return self._power_rule({c.replica: c for c in before})
        if decisive is not None and decisive[2]["election"] == "unclean":
            return "unclean_election"
        if decisive is not None:
            data = decisive[2]
            x = data["leader"]
            kind = data["election"]
            if kind == "resumed":
                return "bounce_unnoticed"
            if x in lost:
                how = lost[x].how
                if "power loss" in how:
                    return self._power_rule(
                        {r: c for r, c in lost.items() if c.seq < decisive[0]})
                if "(high_watermark)" in how:
                    return "truncation_to_hw" if self.era() < (0, 11) else "no_epoch_entry"
                if "(offset_out_of_range)" in how:
                    return "no_epoch_entry"
            if x not in had:
                joined = joins.get(x)
                in_isr_at_ack = snap is not None and x in snap.isr
                at_ack = snap.held.get(x) if snap is not None else None
                if joined is not None:
                    _s, _t, jd, log_epoch = joined
                    proposed = jd.get("proposed")
                    if log_epoch is not None and log_epoch != epoch:
                        return "diverging_fetch_counted"
                    if proposed is not None and proposed[0] < int(anchor["seq"]):
                        return "maximal_isr"
                    leso = jd.get("leso")
                    if leso is not None and jd.get("leo") is not None and jd["leo"] < leso:
                        return "leso_check"
                    return "isr_without_record"
                if in_isr_at_ack:
                    if at_ack is not None and at_ack != epoch:
                        return "diverging_fetch_counted"
                    return "isr_without_record"
            if kind in ("elr", "last_known_leader"):
                return "elr_election"
        if any(c.how == "replica deleted" for c in lost.values()):
            return "removed_by_reassignment"
        if single:
            return "min_isr_1"
        if lost and all("power loss" in c.how for c in lost.values()):
            return self._power_rule(lost)
        return "unexplained"

    def _power_rule(self, lost: dict[int, _Change]) -> str:
        losses = sum(1 for c in lost.values() if "power loss" in c.how)
        return "last_replica_standing" if losses <= 1 else "page_cache_loss"

    # -- log divergence --

    def divergence_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        offset = int(d["offset"])
        p = self.fold.parts[key]
        final = self.result.partitions.get(f"{key[0]}-{key[1]}")
        f = final.final_log_replica if final is not None else None
        epochs = {r: p.logs[r].epoch_at(offset) for r in sorted(p.logs)}
        good = epochs.get(f) if f is not None else None
        steps = [Step(-1, self.fold.end_ts, "offset " + str(offset) + " in the end: " + ", ".join(
            f"broker-{r} epoch {self._ep(e)}" for r, e in epochs.items() if e is not None)
            + (f"; the final leader broker-{f} holds epoch {self._ep(good)}"
               if f is not None else ""))]
        kept = [r for r, e in epochs.items() if e is not None and e != good]
        rule = "divergence_kept"
        key_steps: list[Any] = []
        for r in kept[:2]:
            got = [c for c in p.hist.get(offset, []) if c.replica == r and c.epoch == epochs[r]]
            if got:
                c = got[-1]
                steps.append(Step(c.seq, c.ts, f"broker-{r} {c.how}: its record of epoch "
                                               f"{self._ep(c.epoch)} at {offset}"))
            # its first follower turn under a leader of the final epoch or later, and the
            # truncations after it that stopped above the offset
            after = got[-1].seq if got else 0
            turn = next((st for st in p.steps if st[2] == "become_follower"
                         and st[3]["replica"] == r and st[0] > after
                         and (good is None
                              or (st[3]["leader_epoch"] or -1) >= (self._ep(good) or -1))),
                        None)
            if turn is None:
                continue
            s, t, _, fd = turn
            steps.append(Step(s, t, (
                f"broker-{r} became follower of broker-{fd['leader']} (epoch "
                f"{fd['leader_epoch']}) with LEO {fd['leo']}, HW {fd['hw']}")))
            key_steps.append(s)
            cuts = [st for st in p.steps if st[2] == "truncate" and st[3]["replica"] == r
                    and st[0] > s]
            cut = cuts[0] if cuts else None
            if cut is not None and cut[3]["new"] > offset:
                steps.append(Step(cut[0], cut[1], (
                    f"broker-{r} truncated {cut[3]['old']} -> {cut[3]['new']} "
                    f"({cut[3]['reason']}): above offset {offset}, so it kept its record")))
                key_steps.append(cut[0])
            elif cut is None or cut[3]["new"] > offset:
                steps.append(Step(s, t, f"broker-{r} did not truncate below {offset + 1}"))
            reason = cut[3]["reason"] if cut is not None else None
            if self.era() < (0, 11):
                rule = "divergence_kept_hw"
            elif reason == "offset_out_of_range" or self.era() >= (2, 0):
                rule = "no_epoch_entry" if reason == "offset_out_of_range" else rule
            else:
                rule = "epoch_end_answer"
        return Chain("log_divergence", key[0], key[1], rule,
                     sorted(steps, key=lambda st: st.seq), [(offset, None)],
                     key=("log_divergence", key, rule, tuple(kept), tuple(key_steps)))

    # -- replica HW regressions --

    def hw_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        replica = int(d["replica"])
        reason = str(d.get("reason"))
        seq, ts = int(d["seq"]), int(d.get("ts_us") or 0)
        raised, prev, recovered = self.fold.hw_seen.get(seq, (None, None, None))
        p = self.fold.parts[key]
        steps: list[Step] = []
        rule = {"become_leader": "stale_leader_hw", "recovery": "hw_checkpoint",
                "truncate": "truncated_below_hw"}.get(reason, "unexplained")
        since = 0
        if raised is not None:
            rs, rt, old, new, why, divergent = raised
            text = f"broker-{replica} HW {old} -> {new} ({why})"
            if divergent is not None:
                text += (f", while its own record at {divergent} differs from its leader's: "
                         "the HW covers its divergent suffix")
                if why == "fetch_response" and reason == "truncate":
                    rule = "hw_before_truncation"
            steps.append(Step(rs, rt, text))
            since = rs
        if recovered is not None and recovered[0] > since:
            steps.append(Step(recovered[0], recovered[1], recovered[2]))
            if rule == "unexplained":
                rule = "hw_checkpoint"
        cut = next((st for st in p.steps if st[2] == "truncate" and st[3]["replica"] == replica
                    and since <= st[0] <= seq), None)
        if cut is not None:
            steps.append(Step(cut[0], cut[1], f"broker-{replica} truncated {cut[3]['old']} "
                                              f"-> {cut[3]['new']} ({cut[3]['reason']})"))
        steps.append(Step(seq, ts, f"broker-{replica} HW {prev if prev is not None else '?'}"
                                   f" -> {d.get('new')} ({reason}, {d.get('role')})"))
        steps.sort(key=lambda st: st.seq)
        # one restart (or one election) regresses the HW of every partition it touches:
        # one chain; any other regression is its own
        cause = (recovered[1] if rule == "hw_checkpoint" and recovered is not None else
                 ts if rule == "stale_leader_hw" else 0 if rule == "truncated_below_hw"
                 else seq)
        return Chain("hw_regression_replica", key[0], key[1], rule, steps, [],
                     key=("hw_regression_replica", rule,
                          0 if rule == "truncated_below_hw" else replica, cause))

    # -- the rest --

    def generic_chain(self, anomaly: str, key: Key, d: dict[str, Any]) -> Chain:
        """A finding without a rule of its own: its checker detail, in one step."""
        seq = _int(d.get("seq"))
        ts = _int(d.get("ts_us")) or 0
        shown = {k: v for k, v in d.items() if k not in ("topic", "partition", "seq", "ts_us")}
        # one broker's ISR exit and return is one churn in every partition it follows
        group = ((anomaly, d.get("replica"), d.get("shrink_ts_us")) if anomaly == "isr_churn"
                 else (anomaly, key))
        return Chain(anomaly, key[0], key[1], "unexplained",
                     [Step(seq if seq is not None else 1 << 62, ts,
                           orjson.dumps(shown).decode())], [], key=group)


# --------------------------------------------------------------------------- entry points


@dataclass
class Explanation:
    trace: str
    result: CheckResult
    protocol: str
    bugs: list[str]
    chains: list[Chain]
    #: the message lines came from re-running the trace with --trace-messages
    rerun: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, "rerun_with_messages": self.rerun,
                "scenario": self.result.scenario,
                "seed": self.result.seed, "protocol": self.protocol, "bugs": self.bugs,
                "incomplete": self.result.incomplete,
                "chains": [c.to_json() for c in self.chains]}


def _matches(d: Mapping[str, Any], record: tuple[Key, int] | None) -> bool:
    if record is None:
        return True
    (topic, partition), offset = record
    return (d.get("topic") == topic and d.get("partition") == partition
            and d.get("offset") == offset)


class ExplainError(Exception):
    """``--messages`` cannot be honoured: one line (exit 2)."""


def explain_with_messages(path: str, *, anomaly: str | None = None,
                          record: tuple[Key, int] | None = None) -> Explanation:
    """:func:`explain` with the messages behind each step. A trace recorded without message
    lines is re-run from its header with ``--trace-messages`` (``traces.replay``) and the
    re-run is explained — only when it is the same run event for event; otherwise (other
    code, another version) :class:`ExplainError` says so."""
    import tempfile

    from traces.replay import replay_trace

    with iter_events(path, verify=False) as events:
        header = next(events, {})
    if header.get("trace_messages") is True:
        return explain(path, anomaly=anomaly, record=record)
    with tempfile.TemporaryDirectory(prefix="isrlab-explain-") as tmp:
        out = str(Path(tmp) / "with-messages.jsonl")
        res = replay_trace(path, out, trace_messages=True)
        if not res.identical:
            where = res.divergence.seq if res.divergence is not None else "?"
            raise ExplainError(
                f"{path}: --messages: the trace has no message lines, and re-running it "
                f"with message tracing does not give the same run (it diverges at model event "
                f"{where}; recorded by isrlab {res.recorded_version}): explain it without "
                "--messages")
        ex = explain(out, anomaly=anomaly, record=record)
    ex.trace, ex.rerun = path, True
    return ex


def explain(path: str, *, anomaly: str | None = None,
            record: tuple[Key, int] | None = None) -> Explanation:
    """Every finding of the trace at ``path`` (or those of ``anomaly``, or of one record)
    judged into chains. Raises :class:`traces.reader.TraceError` on bad input."""
    result = check_file(path, max_details=1 << 62)
    findings = {name: [d for d in ds if _matches(d, record) or (
        record is not None and name not in (*RECORD_ANOMALIES, "log_divergence")
        and d.get("topic") == record[0][0] and d.get("partition") == record[0][1])]
        for name, ds in result.details.items() if ds and (anomaly is None or name == anomaly)}
    watch: dict[Key, set[int]] = {}
    snaps: dict[int, tuple[Key, int]] = {}
    hw_wanted: dict[int, tuple[Key, int]] = {}
    for name, ds in findings.items():
        for d in ds:
            key = (str(d["topic"]), int(d["partition"]))
            if name in RECORD_ANOMALIES or name == "log_divergence":
                watch.setdefault(key, set()).add(int(d["offset"]))
                if name in RECORD_ANOMALIES:
                    snaps[int(d["seq"])] = (key, int(d["offset"]))
            elif name == "hw_regression_replica":
                hw_wanted[int(d["seq"])] = (key, int(d["replica"]))
                watch.setdefault(key, set())
    fold = _Fold(watch, snaps, hw_wanted)
    with iter_events(path, verify=False) as stream:
        for ev in stream:
            fold.feed(ev)
    judge = _Judge(result, fold)
    chains: dict[tuple[Any, ...], Chain] = {}
    lost_values: dict[tuple[Key, str], Chain] = {}

    def add(c: Chain) -> Chain:
        have = chains.get(c.key)
        if have is None:
            chains[c.key] = c
            return c
        have.count += 1
        name = f"{c.topic}-{c.partition}"
        if name != f"{have.topic}-{have.partition}" and name not in have.more:
            have.more.append(name)
        have.records.extend(c.records)
        if c.records:
            have.steps = c.steps   # the latest record (findings come in trace order)
        return have

    for name in ("lost_acked_write", "lost_acked_uncommitted", "log_divergence",
                 "hw_regression_visible", "hw_regression_replica"):
        for d in findings.get(name, []):
            key = (str(d["topic"]), int(d["partition"]))
            if name == "log_divergence":
                add(judge.divergence_chain(key, d))
            elif name == "hw_regression_replica":
                add(judge.hw_chain(key, d))
            elif name == "hw_regression_visible":
                value = d.get("value")
                owner = lost_values.get((key, str(value)))
                if owner is not None:
                    owner.reads += 1
                    continue
                add(judge.record_chain(name, key, int(d["offset"]), value, d))
            else:
                c = add(judge.record_chain(name, key, int(d["offset"]), d.get("value"), d))
                lost_values[(key, str(d.get("value")))] = c
    for name, ds in findings.items():
        if name in (*RECORD_ANOMALIES, "log_divergence", "hw_regression_replica"):
            continue
        for d in ds:
            add(judge.generic_chain(name, (str(d["topic"]), int(d["partition"])), d))
    ordered = sorted(chains.values(), key=lambda c: (
        _ORDER.get(c.anomaly, 99), c.topic, c.partition,
        min((o for o, _ in c.records), default=0)))
    return Explanation(path, result, judge.protocol, judge.bugs, ordered)


_ORDER = {"lost_acked_write": 0, "lost_acked_uncommitted": 1, "log_divergence": 2,
          "hw_regression_visible": 3, "hw_regression_replica": 4}


def format_text(ex: Explanation) -> str:
    r = ex.result
    lines = [f"trace {ex.trace}  scenario {r.scenario}  seed {r.seed}  protocol {ex.protocol}"
             + (f"  bugs {','.join(ex.bugs)}" if ex.bugs else "")]
    if ex.rerun:
        lines.append("(messages from a re-run with --trace-messages: the same run, event for "
                     "event)")
    if r.incomplete:
        lines.append("INCOMPLETE: the run did not finish; the chains cover what the trace has")
    if not ex.chains:
        lines.append("nothing to explain: no anomaly found")
    for c in ex.chains:
        head = f"{c.anomaly} {', '.join([f'{c.topic}-{c.partition}', *c.more])}"
        rule = RULES[c.rule]
        if rule.expected:
            st = c.steps[-1]
            times = f"{c.count} times" if c.count > 1 else "once"
            lines.append(f"{head}: {times}, expected ({c.rule}): {rule.what}; the last at "
                         f"{_s(st.ts_us).strip()}: {st.text}")
            continue
        if c.rule == "unexplained" and not c.records:
            # a finding with no rule of its own: one line, its first occurrence
            st = c.steps[0]
            when = "at the end" if st.seq == 1 << 62 else f"at {_s(st.ts_us).strip()}"
            times = f"{c.count} times, first " if c.count > 1 else ""
            lines.append(f"{head}: {times}{when}: {st.text}")
            continue
        if c.records and c.records[0][1] is not None:
            offs = sorted(o for o, _ in c.records)
            vals = [v for _, v in sorted(c.records)]
            span = (f"offset {offs[0]}" if len(offs) == 1
                    else f"{len(offs)} records, offsets {offs[0]}..{offs[-1]}")
            head += f": {span} ({vals[0]}" + (f" .. {vals[-1]})" if len(vals) > 1 else ")")
        elif c.records:
            offs = sorted(o for o, _ in c.records)
            head += (f": offset {offs[0]}" if len(offs) == 1
                     else f": {len(offs)} offsets, {offs[0]}..{offs[-1]}")
        elif c.count > 1:
            head += f": {c.count} times, the last:"
        if c.reads:
            head += f"; {c.reads} read{'s' if c.reads > 1 else ''} of them rewritten"
        lines.append(head)
        lines.append(f"  rule  {c.rule}: {rule.what}")
        lines.append(f"  fix   {rule.fix}")
        for st in c.steps:
            when = "  at end" if st.seq < 0 or st.seq >= 1 << 62 else _s(st.ts_us)
            lines.append(f"  {when}  {st.text}")
    return "\n".join(lines)


def _record_arg(text: str) -> tuple[Key, int]:
    """``orders-0@1234`` -> ((orders, 0), 1234)."""
    tp, sep, off = text.rpartition("@")
    topic, dash, part = tp.rpartition("-")
    if not sep or not dash or not topic or not part.isdigit() or not off.isdigit():
        raise ValueError(f"--record: {text!r} is not TOPIC-PARTITION@OFFSET (orders-0@1234)")
    return (topic, int(part)), int(off)


def main(argv: list[str]) -> int:
    """``isrlab explain TRACE [--anomaly KIND] [--record TOPIC-P@OFFSET] [--json]``: 0, 2
    bad input, 3 the run did not finish (chains are still printed)."""
    from traces.schema import ANOMALIES
    parser = Parser(
        prog="isrlab explain",
        description="Explain each anomaly of a trace: its causal chain and the rule at fault.")
    parser.add_argument("trace", help="a .jsonl or .jsonl.gz trace")
    parser.add_argument("--anomaly", metavar="KIND", help="only this anomaly")
    parser.add_argument("--record", metavar="TOPIC-P@OFFSET", help="only this record")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--messages", action="store_true",
                        help="add the messages behind the steps (a trace without message "
                             "lines is re-run with --trace-messages when it replays "
                             "identically)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    if args.anomaly is not None and args.anomaly not in ANOMALIES:
        print(f"isrlab explain: --anomaly: {args.anomaly!r} is not one of "
              f"{', '.join(ANOMALIES)}", file=sys.stderr)
        return 2
    try:
        record = _record_arg(args.record) if args.record is not None else None
    except ValueError as exc:
        print(f"isrlab explain: {exc}", file=sys.stderr)
        return 2
    try:
        how = explain_with_messages if args.messages else explain
        ex = how(args.trace, anomaly=args.anomaly, record=record)
    except (TraceError, ExplainError) as exc:
        print(f"isrlab explain: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"isrlab explain: {args.trace}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(orjson.dumps(ex.to_json()).decode() + "\n")
    else:
        print(format_text(ex))
    return EXIT_INCOMPLETE if ex.result.incomplete else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
