"""``isrlab explain``'s facts: the replicas' logs and the partition's history, folded from a trace.

Design. This module owns pass 2 of :mod:`traces.explain`: reading the trace, in order and
from the trace contract alone, into the facts a chain is built from. A replica's log is a
list of runs ``[start, end)`` tagged with the leader *term* that wrote them (:class:`_Log`);
:class:`_Fold` replays appends, truncations, recoveries, deletions and role changes onto
those logs for the partitions that have findings, and keeps what the chains need: each
replica's history at every watched offset (:class:`_Change`), a snapshot of the partition
at each finding's witnessing event (:class:`_Snap`), the partition's elections, ISR joins,
reassignments and truncations, the faults, the final logs and the message lines.
:func:`replica_logs` folds every partition, for the test that holds the rebuilt logs equal
to ``final_log``. It knows nothing of rules, chains or text, and imports nothing of
``explain``'s other modules.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from traces.checker import Event, PartitionKey
from traces.reader import iter_events

#: the epoch of records whose writer the trace does not show (written before it started)
UNKNOWN: Final = -1
#: an HW regression's range wider than this is compared on its first offsets only
MAX_RANGE: Final = 10_000

Key = PartitionKey


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
                 hw_wanted: dict[int, tuple[Key, int]], *, every: bool = False,
                 story: _Story | None = None) -> None:
        self.parts: dict[Key, _Part] = {}
        #: the partition- and client-level facts, folded in the same pass (None: no
        #: finding needs them)
        self.story = story
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
        if self.story is not None:
            self.story.feed(ev)
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


# --------------------------------------------------------------------------- the story

#: the events a partition's or a client's chain is told from: faults, membership, roles,
#: truncations, the clients' errors, resets and rebalances, TCP's held frames — never one
#: per record (``leo_update``, ``hw_update``, ``consume``, ``produce_*`` are kept apart)
STORY_EVENTS: Final = frozenset({
    "fault", "node_crash", "node_restart", "node_pause", "node_resume", "node_start",
    "broker_fenced", "broker_unfenced", "broker_registered", "broker_unregistered",
    "controlled_shutdown", "isr_change", "alter_partition", "alter_partition_result",
    "leader_elected", "partition_offline", "become_leader", "become_follower",
    "log_truncate", "log_recovery", "replica_deleted", "replica_created", "reassignment",
    "replicas_change", "fetcher_stall", "fetcher_resume", "tcp_stall", "tcp_resume",
    "connection_failed", "connection_close", "request_failed", "produce_error",
    "offset_reset", "rebalance", "assignment", "offset_fetch", "coordinator_load",
    "coordinator_loaded", "coordinator_unload", "convergence", "corrupt_record",
    "segment_delete", "log_start_offset_update", "delete_records", "delete_records_result",
    "isr_update_skipped", "fetch_error", "partition_failed", "fetch_offset_reset",
    "append_rejected", "msg_drop", "elect_leaders", "controller_elected",
    # the controller quorum (traces.explain_quorum)
    "raft_transition", "raft_append", "raft_truncate", "raft_hw", "metadata_apply",
    "controller_renounced",
})


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (31·h + c over UTF-16 code units, a 32-bit int): how
    Kafka places a group in ``__consumer_offsets`` (the trace contract names the formula,
    ``GroupMetadataManager.partitionFor``; it is written again here, not imported, so the
    explainer stays apart from the model)."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group: str, num_partitions: int) -> int:
    """``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % max(1, num_partitions)


class _Story:
    """What the chains of partition- and client-level findings are told from, in the same
    pass as :class:`_Fold`: the :data:`STORY_EVENTS` by partition and by node, the faults,
    each replica's LEO and HW and each partition's leader (snapshots at asked seqs), the
    sends of watched values, the commits of watched keys, and the read before each watched
    read."""

    def __init__(self, *, values: Iterable[str] = (), commits: Iterable[tuple[str, str, int]]
                 = (), polls: Iterable[int] = (), snaps: Iterable[int] = ()) -> None:
        self.header: Event = {}
        self.events: list[Event] = []
        self.by_part: dict[Key, list[Event]] = {}
        self.by_node: dict[str, list[Event]] = {}
        self.leo: dict[tuple[str, int, int], int] = {}
        self.hw: dict[tuple[str, int, int], int] = {}
        #: partition -> its leader (None: none) and leader epoch, from the controller
        self.leader: dict[Key, tuple[int | None, int | None]] = {}
        self.isr: dict[Key, tuple[int, ...]] = {}
        self.values = set(values)
        #: produce_send / produce_ack / produce_error lines of the watched values
        self.sends: dict[str, list[Event]] = {}
        self.commit_keys = set(commits)
        #: offset_commit / offset_commit_ack lines of the watched (group, topic, partition)
        self.commits: dict[tuple[str, str, int], list[Event]] = {}
        #: seq of an ack of a watched commit -> the offsets partition then (leader, epoch,
        #: ISR, replica -> (LEO, HW))
        self.at_ack: dict[int, tuple[int | None, int | None, tuple[int, ...],
                                     dict[int, tuple[int, int]]]] = {}
        self.polls = set(polls)
        self._last_read: dict[tuple[Any, ...], Event] = {}
        #: seq of a watched read -> the same chain's read before it
        self.poll_prev: dict[int, Event] = {}
        #: seq -> every replica's (LEO, HW) of the event's partition just before it
        self.want = set(snaps)
        self.state_at: dict[int, dict[int, tuple[int, int]]] = {}
        self.end_ts = 0

    def offsets_key(self, group: str) -> Key:
        scenario = self.header.get("scenario")
        cluster = scenario.get("cluster") if isinstance(scenario, dict) else None
        n = _int(cluster.get("offsets.topic.num.partitions")) if isinstance(
            cluster, dict) else None
        return ("__consumer_offsets", offsets_partition(group, n or 50))

    def _state(self, key: Key) -> dict[int, tuple[int, int]]:
        return {r: (leo, self.hw.get((t, p, r), 0)) for (t, p, r), leo in sorted(
            self.leo.items()) if (t, p) == key}

    def feed(self, ev: Event) -> None:
        name = ev.get("event")
        seq = _int(ev.get("seq")) or 0
        self.end_ts = max(self.end_ts, _int(ev.get("ts_us")) or 0)
        topic, partition = ev.get("topic"), _int(ev.get("partition"))
        key = (topic, partition) if isinstance(topic, str) and partition is not None else None
        if seq in self.want and key is not None:
            self.state_at[seq] = self._state(key)
        if name == "run_start":
            self.header = ev
        elif name == "leo_update" and key is not None:
            r, new = _int(ev.get("replica")), _int(ev.get("new"))
            if r is not None and new is not None:
                self.leo[(key[0], key[1], r)] = new
            return
        elif name == "hw_update" and key is not None:
            r, new = _int(ev.get("replica")), _int(ev.get("new"))
            if r is not None and new is not None:
                self.hw[(key[0], key[1], r)] = new
            return
        elif name == "consume":
            chain = (ev.get("group"), ev.get("consumer"), topic, partition)
            if seq in self.polls and chain in self._last_read:
                self.poll_prev[seq] = self._last_read[chain]
            self._last_read[chain] = ev
            return
        elif name in ("produce_send", "produce_ack", "produce_error"):
            v = ev.get("value")
            if isinstance(v, str) and v in self.values:
                self.sends.setdefault(v, []).append(ev)
            if name != "produce_error":
                return
        elif name in ("offset_commit", "offset_commit_ack"):
            ck = (str(ev.get("group")), str(topic), partition if partition is not None else -1)
            if ck in self.commit_keys:
                self.commits.setdefault(ck, []).append(ev)
                if name == "offset_commit_ack":
                    okey = self.offsets_key(ck[0])
                    leader, epoch = self.leader.get(okey, (None, None))
                    self.at_ack[seq] = (leader, epoch, self.isr.get(okey, ()),
                                        self._state(okey))
            return
        elif name == "node_crash" and str(ev.get("node")).startswith("consumer-"):
            node = str(ev.get("node"))[len("consumer-"):]
            for chain in [c for c in self._last_read if c[1] == node]:
                del self._last_read[chain]
        elif name == "assignment":
            # as the checker's poll chains: an eager rebalance starts every chain again
            # from the committed offset, a cooperative one those of partitions taken away
            parts = ev.get("partitions")
            kept = set(_ints(parts)) if ev.get("protocol", "eager") != "eager" else set()
            who = (ev.get("group"), ev.get("consumer"))
            for chain in [c for c in self._last_read if c[:2] == who and c[3] not in kept]:
                del self._last_read[chain]
        if name == "leader_elected" and key is not None:
            leader = _int(ev.get("leader"))
            self.leader[key] = (leader if leader is not None and leader >= 0 else None,
                                _int(ev.get("leader_epoch")))
            self.isr[key] = _ints(ev.get("isr"))
        elif name == "partition_offline" and key is not None:
            self.leader[key] = (None, _int(ev.get("leader_epoch")))
        elif name == "isr_change" and key is not None:
            self.isr[key] = _ints(ev.get("new"))
        elif name in ("log_truncate", "log_recovery") and key is not None:
            r = _int(ev.get("replica"))
            leo = _int(ev.get("new_leo" if name == "log_truncate" else "leo"))
            if r is not None and leo is not None:
                self.leo[(key[0], key[1], r)] = leo
        if name not in STORY_EVENTS:
            return
        self.events.append(ev)
        if key is not None:
            self.by_part.setdefault(key, []).append(ev)
        elif name in ("coordinator_load", "coordinator_loaded", "coordinator_unload") and (
                partition is not None):
            self.by_part.setdefault(("__consumer_offsets", partition), []).append(ev)
        src = ev.get("node")
        if isinstance(src, str):
            self.by_node.setdefault(src, []).append(ev)
