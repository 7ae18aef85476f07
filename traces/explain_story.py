"""``isrlab explain``'s partition- and client-level chains: every finding that is not a record's.

Design. This module owns the chains of the findings the checker counts per partition, per
client or per event rather than per record — the ISR's churn and shortfall, a partition
that did not converge, a lost committed offset, a producer's reordered or duplicated
sends, a consumer's skips and steps back, expired records, a replica outside its
assignment, a read above the HW, and the possible losses a Kafka log shows (a truncation
below the HW, an unclean election, a leader epoch going back). Each is told from the
*story* the fold kept (:class:`traces.explain_fold._Story`: the faults, the brokers'
crashes and fencing, the partition's ISR and elections, the clients' errors, resets and
rebalances, the commits, TCP's held frames) as the events that led to it, and named by a
rule of :data:`traces.explain_rules.RULES`. :class:`_Teller` is the half of
:class:`traces.explain_chains._Judge` that does it; it imports the fold and the output's
types, nothing of the chains.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import orjson

from traces.checker import Event
from traces.explain_fold import Key, _Fold, _int, _ints, _Story
from traces.explain_output import Chain, Step
from traces.explain_quorum import metadata_chain


def _set(v: Iterable[int]) -> str:
    return "[" + ",".join(str(x) for x in v) + "]"


#: the partition- and client-level findings, and the method that tells each one's chain
#: (``under_min_isr``, a duration with no detail, is told per partition by min_isr_chain)
STORY_KINDS: Final = {
    "isr_churn": "churn_chain", "no_convergence": "convergence_chain",
    "lost_committed_offset": "commit_chain", "nonmonotonic_send": "send_chain",
    "duplicate": "duplicate_chain", "expired": "expired_chain",
    "outside_assignment": "outside_chain", "read_uncommitted": "uncommitted_chain",
    "possible_committed_truncation": "truncation_chain",
    "unclean_election": "unclean_chain", "leader_epoch_regression": "epoch_chain",
    "nonmonotonic_poll": "poll_chain", "poll_skip": "poll_chain",
    # the controller quorum's (traces.explain_quorum)
    "metadata_divergence": "metadata_chain", "uncommitted_metadata_applied": "metadata_chain",
}

_NODE_WORDS: Final = {"node_restart": "restarted", "node_pause": "paused",
                      "node_resume": "resumed", "node_start": "started"}


def _opt(label: str, v: Any) -> str:
    """``, LEO 7`` — or nothing when the trace does not give it (an imported line)."""
    return "" if v is None else f"{label} {v}"


def _dedup(steps: list[Step]) -> list[Step]:
    """The steps in trace order, each event once (the first text given for it)."""
    seen: set[tuple[int, str]] = set()
    out: list[Step] = []
    for st in sorted(steps, key=lambda st: st.seq):
        k = (st.seq, st.text) if st.seq >= 1 << 62 else (st.seq, "")
        if k not in seen:
            seen.add(k)
            out.append(st)
    return out


class _Teller:
    """The chains of partition- and client-level findings (a base of ``_Judge``)."""

    fold: _Fold
    scenario: Mapping[str, Any]
    _seqs: list[int] | None
    _tss: list[int]

    # -- partition- and client-level findings, told from the story --

    @property
    def story(self) -> _Story:
        assert self.fold.story is not None
        return self.fold.story

    def _scenario_list(self, name: str) -> list[dict[str, Any]]:
        v = self.scenario.get(name)
        return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []

    def _topic_cfg(self, topic: str) -> dict[str, Any]:
        return next((t for t in self._scenario_list("topics") if t.get("name") == topic), {})

    def _cluster(self, name: str) -> Any:
        c = self.scenario.get("cluster")
        return c.get(name) if isinstance(c, dict) else None

    def _words(self, ev: Event) -> str:
        """One story event in words."""
        n, node = str(ev.get("event")), str(ev.get("node"))
        r = ev.get("replica")
        tp = f"{ev.get('topic')}-{ev.get('partition')}"
        if n == "fault":
            t = ev.get("target")
            targets = ", ".join(t) if isinstance(t, list) else str(t)
            return f"fault {ev.get('fault')} {ev.get('phase')}: {targets}"
        if n == "node_crash":
            return f"{node} crashed ({ev.get('kind')})"
        if n in _NODE_WORDS:
            return f"{node} {_NODE_WORDS[n]}"
        if n in ("broker_fenced", "broker_unfenced"):
            why = f" ({ev.get('reason')})" if ev.get("reason") else ""
            return f"the controller {n.split('_')[1]} broker-{ev.get('broker')}{why}"
        if n == "broker_registered":
            return (f"broker-{ev.get('broker')} registered (broker epoch "
                    f"{ev.get('broker_epoch')}, clean shutdown {ev.get('clean_shutdown')})")
        if n == "controlled_shutdown":
            return f"broker-{ev.get('broker')} asked for a controlled shutdown"
        if n == "isr_change":
            return (f"{tp} ISR {_set(_ints(ev.get('old')))} -> {_set(_ints(ev.get('new')))} "
                    f"({ev.get('reason')}{_opt(', leader epoch', ev.get('leader_epoch'))})")
        if n == "alter_partition":
            return (f"broker-{r}, leader of {tp}, asked the controller for ISR "
                    f"{_set(_ints(ev.get('proposed_isr')))} ({ev.get('kind')})")
        if n == "leader_elected":
            lead = _int(ev.get("leader"))
            who = f"broker-{lead}" if lead is not None and lead >= 0 else "no replica"
            return (f"{tp}: {who} elected leader ({ev.get('election')}, epoch "
                    f"{ev.get('leader_epoch')}, ISR {_set(_ints(ev.get('isr')))})")
        if n == "partition_offline":
            return (f"{tp} offline: no leader (ISR {_set(_ints(ev.get('isr')))}, ELR "
                    f"{_set(_ints(ev.get('elr')))}{_opt(', epoch', ev.get('leader_epoch'))})")
        if n == "become_leader":
            return (f"broker-{r} became leader of {tp} (epoch {ev.get('leader_epoch')}"
                    f"{_opt(', LEO', ev.get('leo'))}{_opt(', HW', ev.get('hw'))})")
        if n == "become_follower":
            return (f"broker-{r} became follower of broker-{ev.get('leader')} for {tp} "
                    f"(epoch {ev.get('leader_epoch')}{_opt(', LEO', ev.get('leo'))}"
                    f"{_opt(', HW', ev.get('hw'))})")
        if n == "log_truncate":
            below = f" below its HW {ev.get('hw')}" if ev.get("hw") is not None else ""
            return (f"broker-{r} truncated {tp} {ev.get('old_leo')} -> {ev.get('new_leo')}"
                    f"{below} ({ev.get('reason')})")
        if n == "log_recovery":
            lost = (f" (had {ev.get('power_loss_leo')}: a power loss kept only what the page "
                    "cache had written back)" if "power_loss_leo" in ev
                    and ev.get("power_loss_leo") != ev.get("leo") else "")
            return (f"broker-{r} recovered {tp} to LEO {ev.get('leo')}, HW {ev.get('hw')}"
                    + lost)
        if n in ("replica_deleted", "replica_created"):
            return f"broker-{r}'s replica of {tp} {n.split('_')[1]} (LEO {ev.get('leo')})"
        if n == "reassignment":
            return (f"{tp} reassignment {ev.get('phase')}: replicas "
                    f"{_set(_ints(ev.get('replicas')))}")
        if n == "replicas_change":
            return (f"{tp} replicas {_set(_ints(ev.get('old')))} -> "
                    f"{_set(_ints(ev.get('new')))} ({ev.get('reason')})")
        if n in ("fetcher_stall", "fetcher_resume"):
            d = f" for {ev.get('duration_ms')} ms" if ev.get("duration_ms") is not None else ""
            return (f"{node}'s fetcher from broker-{ev.get('leader')} "
                    f"{'stalled' if n == 'fetcher_stall' else 'resumed'}{d}")
        if n == "request_failed":
            return (f"{node} {ev.get('request')} to {ev.get('peer')} failed "
                    f"({ev.get('reason')})")
        if n == "produce_error":
            return f"producer {ev.get('producer')}: {ev.get('value')} failed ({ev.get('error')})"
        if n == "offset_reset":
            return (f"{ev.get('consumer')} reset its position on {tp} {ev.get('old')} -> "
                    f"{ev.get('new')} (auto.offset.reset={ev.get('policy')})")
        if n == "rebalance":
            return (f"group {ev.get('group')} rebalanced, generation {ev.get('generation')} "
                    f"({ev.get('reason')})")
        if n == "assignment":
            return (f"{ev.get('consumer')} assigned {ev.get('partitions')} (revoked "
                    f"{ev.get('revoked')}, {ev.get('protocol', 'eager')})")
        if n == "offset_fetch":
            return (f"{ev.get('consumer')} read back committed offset {ev.get('offset')} of "
                    f"{tp}")
        if n in ("coordinator_load", "coordinator_loaded"):
            more = (f", {ev.get('offsets')} offsets of groups {ev.get('groups')}"
                    if n == "coordinator_loaded" else "")
            return (f"{node}'s group coordinator {'loading' if n.endswith('load') else 'loaded'}"
                    f" __consumer_offsets-{ev.get('partition')} (epoch "
                    f"{ev.get('leader_epoch')}, log end {ev.get('log_end_offset')}{more})")
        if n == "coordinator_unload":
            return (f"{node}'s group coordinator unloaded __consumer_offsets-"
                    f"{ev.get('partition')} ({ev.get('reason')})")
        if n == "corrupt_record":
            return (f"{node} found a damaged record batch of {tp} at offset "
                    f"{ev.get('offset')} ({ev.get('where')}; copy of broker-{r})")
        if n == "segment_delete":
            end = _int(ev.get("next_offset"))
            return (f"broker-{r} deleted {tp}'s segment {ev.get('base_offset')}.."
                    f"{end - 1 if end is not None else '?'} ({ev.get('reason')})")
        if n == "log_start_offset_update":
            return (f"broker-{r}'s {tp} log start {ev.get('old')} -> {ev.get('new')} "
                    f"({ev.get('reason')})")
        if n == "delete_records":
            return f"DeleteRecords {tp} below offset {ev.get('offset')}"
        if n == "msg_drop":
            return f"{ev.get('msg')} {ev.get('src')} → {ev.get('dst')} dropped ({ev.get('reason')})"
        if n == "controller_elected":
            return f"controller elected (controller epoch {ev.get('controller_epoch')})"
        rest = {k: v for k, v in ev.items() if k not in ("seq", "ts_us", "event", "crc")}
        return f"{n} {orjson.dumps(rest).decode()}"

    def _step(self, ev: Event, text: str | None = None) -> Step:
        return Step(_int(ev.get("seq")) or 0, _int(ev.get("ts_us")) or 0,
                    text if text is not None else self._words(ev))

    def _held(self, nodes: set[str], lo: int, hi: int) -> list[Step]:
        """TCP's part (issue 55): frames between ``nodes`` held by a cut (``tcp_stall``)
        from ``lo`` to ``hi`` (µs), each with how long they were held and what became of
        them (``tcp_resume``, ``connection_failed``), and connections closed with frames."""
        out: list[Step] = []
        open_: dict[tuple[str, str, str], Event] = {}
        for ev in self.story.events:
            n = ev.get("event")
            if n not in ("tcp_stall", "tcp_resume", "connection_failed", "connection_close"):
                continue
            ts = _int(ev.get("ts_us")) or 0
            if ts > hi:
                break
            src, actor = str(ev.get("node")), str(ev.get("actor"))
            dst = str(ev.get("dst") if n != "connection_close" else ev.get("peer"))
            if src not in nodes or dst.split("/", 1)[0] not in nodes:
                continue
            conn = (src, actor, dst)
            if n == "tcp_stall":
                open_[conn] = ev
                continue
            stall = open_.pop(conn, None)
            if ts < lo:
                continue
            at = stall if stall is not None else ev
            since = f" ({stall.get('reason')})" if stall is not None else ""
            if n == "tcp_resume":
                out.append(self._step(at, (
                    f"{src}/{actor} → {dst}: frames held by TCP{since} for "
                    f"{ev.get('stalled_ms')} ms, then delivered ({ev.get('frames')} frames, "
                    f"{ev.get('retransmits')} retransmissions)")))
            elif n == "connection_failed":
                out.append(self._step(at, (
                    f"{src}/{actor} → {dst}: frames held by TCP{since}, never delivered: the "
                    f"connection failed ({ev.get('reason')}) at {ts / 1e6:.3f} s, "
                    f"{ev.get('discarded')} frames discarded")))
            elif _int(ev.get("discarded")):
                out.append(self._step(ev, (
                    f"{src}/{actor} closed its connection to {dst}: {ev.get('discarded')} "
                    "held frames discarded")))
        for conn, stall in open_.items():
            if lo <= (_int(stall.get("ts_us")) or 0) <= hi:
                out.append(self._step(stall, (
                    f"{conn[0]}/{conn[1]} → {conn[2]}: frames held by TCP "
                    f"({stall.get('reason')}), still held at {hi / 1e6:.3f} s")))
        return out

    def _active_faults(self, nodes: set[str], lo: int, hi: int) -> list[Step]:
        """The faults on ``nodes`` in force at some moment of ``[lo, hi]`` (µs)."""
        out: list[Step] = []
        started: dict[tuple[str, tuple[str, ...]], tuple[int, int, str, str,
                                                           tuple[str, ...]]] = {}
        for f in self.fold.faults:
            seq, ts, fault, phase, targets = f
            if not nodes & set(targets) or (ts > hi and phase == "start"):
                continue
            if phase == "start":
                started[(fault, targets)] = f
            else:
                st = started.pop((fault, targets), None)
                if st is not None and ts >= lo:
                    out.append(Step(st[0], st[1], f"fault {fault} on {', '.join(targets)} "
                                                  f"from {st[1] / 1e6:.3f} s to {ts / 1e6:.3f} s"))
        for seq, ts, fault, _phase, targets in started.values():
            out.append(Step(seq, ts, f"fault {fault} on {', '.join(targets)} from "
                                     f"{ts / 1e6:.3f} s"))
        return out

    def _between(self, evs: list[Event], lo: int, hi: int,
                 names: Iterable[str]) -> list[Event]:
        """The events of ``names`` with ``lo < seq < hi``."""
        want = set(names)
        return [e for e in evs if e.get("event") in want and lo < (_int(e.get("seq")) or 0) < hi]

    def _isr_walk(self, key: Key) -> list[tuple[Event, tuple[int, ...], tuple[int, ...]]]:
        """Each ISR event of the partition with the committed ISR before and after it."""
        out = []
        isr: tuple[int, ...] | None = None
        for ev in self.story.by_part.get(key, []):
            n = ev.get("event")
            if n == "isr_change":
                new = _ints(ev.get("new"))
                old = isr if isr is not None else _ints(ev.get("old"))
            elif n == "leader_elected" and isinstance(ev.get("isr"), list):
                new = _ints(ev.get("isr"))
                old = isr if isr is not None else new
            else:
                continue
            out.append((ev, old, new))
            isr = new
        return out

    def _broker_down(self, broker: int, lo: int, hi: int) -> list[Step]:
        """What took ``broker`` away between seqs ``lo`` and ``hi``: its crash, pause,
        fencing, controlled shutdown, and its return."""
        node = f"broker-{broker}"
        out = [self._step(e) for e in self._between(
            self.story.by_node.get(node, []), lo, hi,
            ("node_crash", "node_restart", "node_pause", "node_resume"))]
        back = [int(e["seq"]) for e in self._between(self.story.by_node.get(node, []), lo, hi,
                                                     ("node_restart",))]
        out += [self._step(e) for e in self._between(
            self.story.by_node.get("controller", []), lo, hi,
            ("broker_fenced", "broker_unfenced", "controlled_shutdown", "broker_registered"))
            if e.get("broker") == broker and (e.get("event") != "broker_registered" or any(
                b < int(e["seq"]) for b in back))]   # a registration: only a return
        return out

    def _lag_ms(self) -> int:
        return _int(self._cluster("replica.lag.time.max.ms")) or 30000

    def _lag_us(self) -> int:
        """replica.lag.time.max.ms and a second more, in µs: how far back the cause of a
        shrink is looked for."""
        return self._lag_ms() * 1000 + 1_000_000

    def churn_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``isr_churn``: the shrink, what behind it, and the expand."""
        r, seq = int(d["replica"]), int(d["seq"])
        shrink_ts, expand_ts = int(d["shrink_ts_us"]), int(d.get("expand_ts_us") or 0)
        walk = self._isr_walk(key)
        shrink = next(((e, o, n) for e, o, n in walk if e.get("ts_us") == shrink_ts
                       and r in o and r not in n), None)
        expand = next(((e, o, n) for e, o, n in walk if e.get("seq") == seq), None)
        steps: list[Step] = []
        reason = "shrink"
        lo_seq = 0
        leader: int | None = None
        if shrink is not None:
            sev = shrink[0]
            lo_seq = int(sev["seq"])
            reason = str(sev.get("reason") or f"{sev.get('election')} election")
            prior = [e for e in self.story.by_part.get(key, [])
                     if e.get("event") == "leader_elected" and int(e["seq"]) <= lo_seq]
            leader = _int(prior[-1].get("leader")) if prior else None
            asked = [e for e in self.story.by_part.get(key, [])
                     if e.get("event") == "alter_partition" and e.get("kind") == "shrink"
                     and int(e["seq"]) < lo_seq and r not in _ints(e.get("proposed_isr"))]
            if asked and reason == "shrink":
                steps.append(self._step(asked[-1], self._words(asked[-1]) + (
                    f": broker-{r} had not caught up for replica.lag.time.max.ms "
                    f"({self._lag_ms()} ms)")))
            steps.append(self._step(sev, f"broker-{r} out of the ISR: " + self._words(sev)))
        window = shrink_ts - self._lag_us()
        nodes = {f"broker-{r}"} | ({f"broker-{leader}"} if leader is not None else set())
        steps += self._active_faults({f"broker-{r}"} if reason != "shrink" else nodes,
                                     window, shrink_ts)
        steps += self._broker_down(r, self._seq_at(window), lo_seq or seq)
        fetcher = [e for e in self._between(self.story.by_node.get(f"broker-{r}", []),
                                            self._seq_at(window), lo_seq or seq,
                                            ("fetcher_stall", "request_failed"))
                   if leader is None or e.get("leader") in (None, leader)]
        steps += [self._step(e) for e in fetcher[:3]]
        steps += self._held(nodes, window, expand_ts or shrink_ts)
        fenced = reason == "fenced" or any("fenced broker" in s.text for s in steps)
        rule = ("controlled_shutdown_rejoined" if reason == "controlled_shutdown"
                else "broker_fenced_rejoined" if fenced else "follower_lagged")
        if expand is not None:
            eev = expand[0]
            state = self.story.state_at.get(seq, {})
            mine = state.get(r, (None, None))[0]
            lead = state.get(leader, (None, None))[0] if leader is not None else None
            caught = (f"; its LEO {mine}" + (f", the leader's {lead}" if lead is not None
                                              else "") if mine is not None else "")
            steps.append(self._step(eev, (
                f"broker-{r} back in the ISR {_set(expand[2])} ({eev.get('reason')}) "
                f"{(expand_ts - shrink_ts) / 1e6:.3f} s after it left ({reason}){caught}")))
        steps = _dedup(steps)
        return Chain("isr_churn", key[0], key[1], rule, steps, [],
                     key=("isr_churn", r, shrink_ts, rule))

    def _index(self) -> tuple[list[int], list[int]]:
        """The story's seqs and times, in order (built once)."""
        if self._seqs is None or len(self._seqs) != len(self.story.events):
            self._seqs = [_int(e.get("seq")) or 0 for e in self.story.events]
            self._tss = [_int(e.get("ts_us")) or 0 for e in self.story.events]
        return self._seqs, self._tss

    def _seq_at(self, ts: int) -> int:
        """The seq of the last story event before ``ts`` µs (0 before any)."""
        seqs, tss = self._index()
        i = bisect.bisect_left(tss, ts)
        return seqs[i - 1] if i > 0 else 0

    def min_isr_chain(self, key: Key, total_us: int) -> Chain:
        """``under_min_isr``: each stretch of the ISR below min.insync.replicas, why it
        shrank and when it grew back."""
        cfg = self._topic_cfg(key[0])
        if key[0] == "__consumer_offsets":
            rf = _int(self._cluster("offsets.topic.replication.factor")) or 3
            m = min(_int(cfg.get("min.insync.replicas")) or 1, rf)
        else:
            m = min(_int(cfg.get("min.insync.replicas")) or 1,
                    _int(cfg.get("replication.factor")) or 1 << 30)
        steps: list[Step] = []
        below: tuple[Event, tuple[int, ...], tuple[int, ...]] | None = None
        stretches = 0
        for ev, old, new in self._isr_walk(key):
            if len(new) < m and below is None:
                below = (ev, old, new)
                stretches += 1
                if stretches <= 3:
                    steps.append(self._step(ev, (
                        f"ISR {_set(new)} below min.insync.replicas={m}: " + self._words(ev))))
                    gone = set(old) - set(new)
                    for g in sorted(gone):
                        steps += self._broker_down(g, self._seq_at(
                            int(ev["ts_us"]) - self._lag_us()), int(ev["seq"]) + 1)
                    steps += self._active_faults({f"broker-{g}" for g in gone},
                                                 int(ev["ts_us"]) - self._lag_us(),
                                                 int(ev["ts_us"]))
            elif len(new) >= m and below is not None:
                if stretches <= 3:
                    took = (_int(ev.get("ts_us")) or 0) - (_int(below[0].get("ts_us")) or 0)
                    steps.append(self._step(ev, (
                        f"ISR {_set(new)} back at min.insync.replicas={m} after "
                        f"{took / 1e6:.3f} s: " + self._words(ev))))
                below = None
        if below is not None and stretches <= 3:
            steps.append(Step(1 << 62, self.story.end_ts,
                              f"ISR {_set(below[2])} still below min.insync.replicas={m} at "
                              "the end"))
        steps = _dedup(steps)
        steps.append(Step(1 << 62, self.story.end_ts, (
            f"{total_us // 1000} ms in all below min.insync.replicas={m}, in {stretches} "
            f"stretch{'es' if stretches != 1 else ''}")))
        return Chain("under_min_isr", key[0], key[1], "isr_below_min", steps, [],
                     key=("under_min_isr", key))

    def convergence_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``no_convergence``: offline (who could not be elected, and why), or what was
        still missing when the run ended (the convergence detail: a damaged batch a
        consumer is stuck on, a producer still retrying, a replica behind)."""
        evs = self.story.by_part.get(key, [])
        conv = [e for e in evs if e.get("event") == "convergence" and e.get("converged")
                is not True]
        detail = str(conv[-1].get("detail") or "") if conv else ""
        steps: list[Step] = []
        if d.get("offline"):
            off = [e for e in evs if e.get("event") == "partition_offline"]
            elected = [e for e in evs if e.get("event") == "leader_elected"
                       and (_int(e.get("leader")) or -1) >= 0]
            last = off[-1] if off else None
            lo = int(elected[-1]["seq"]) if elected else 0
            if elected:
                steps.append(self._step(elected[-1], "the last leader: "
                                        + self._words(elected[-1])))
            electable: set[int] = set()
            if last is not None:
                walk = [w for w in self._isr_walk(key) if int(w[0]["seq"]) <= int(last["seq"])]
                before = next((o for _e, o, n in reversed(walk) if o and not n), None)
                electable = set(before or ()) | set(_ints(last.get("elr"))) | set(
                    _ints(last.get("isr")))
                if elected:
                    electable |= set(_ints(elected[-1].get("isr")))
            for b in sorted(electable):
                steps += self._broker_down(b, lo, 1 << 62)
            steps += self._active_faults({f"broker-{b}" for b in electable}, int(
                elected[-1]["ts_us"]) if elected else 0, self.story.end_ts)
            steps += [self._step(e) for e in evs if e.get("event") == "isr_change"
                      and int(e["seq"]) > lo][:4]
            if last is not None:
                unclean = self._topic_cfg(key[0]).get("unclean.leader.election.enable")
                states = "; ".join(f"broker-{b} {self._status(key, b)}"
                                   for b in sorted(electable))
                steps.append(self._step(last, self._words(last) + (
                    (f"; electable {_set(sorted(electable))} — at the end {states}"
                     if electable else "; the trace names no replica it could elect")
                    + ("; unclean.leader.election.enable=false" if unclean is False else ""))))
            rule = "partition_offline"
        elif "damaged record batch" in detail:
            # the member named by the detail stopped at a damaged batch, maybe of another
            # of its partitions: it reads none of them any more
            member = detail.split(" ", 1)[0]
            bad = [e for e in self.story.by_node.get(member, [])
                   if e.get("event") == "corrupt_record" and e.get("where") == "poll"]
            for e in bad[-2:]:
                steps.append(self._step(e))
                steps += self._active_faults({f"broker-{e.get('replica')}"}, 0,
                                             int(e["ts_us"]))
            rule = "consumer_stuck_on_damaged_batch"
        elif "batches to deliver" in detail:
            producer = detail.split(" ", 1)[0]
            mine = self.story.by_node.get(producer, [])
            errs = [e for e in mine if e.get("event") in ("produce_error", "request_failed")]
            steps += [self._step(e) for e in errs[-3:]]
            lo_ts = (_int(errs[-3]["ts_us"]) or 0) if errs else 0
            steps += self._held({producer} | {f"broker-{r}" for r in self._replicas(key)},
                                lo_ts, self.story.end_ts)
            rule = "producer_retrying"
        elif detail.startswith("consumer-") or " < HW " in detail:
            rule = "consumer_behind"
        elif detail in ("no leader", "a replica is down"):
            for b in sorted(self._replicas(key)):
                steps += self._broker_down(b, self._seq_at(self.story.end_ts - 60_000_000),
                                           1 << 62)
            rule = "replica_down_at_end"
        else:
            steps += [self._step(e) for e in evs if e.get("event") in (
                "isr_change", "leader_elected")][-3:]
            rule = "not_caught_up"
        if conv:
            steps.append(self._step(conv[-1], f"when the run ended: {detail}"))
        else:
            steps.append(Step(1 << 62, self.story.end_ts, "the partition ended offline"))
        return Chain("no_convergence", key[0], key[1], rule, _dedup(steps), [],
                     key=("no_convergence", key))

    def _status(self, key: Key, broker: int) -> str:
        """A broker as the run left it, for the partition: not a replica, down, fenced
        or alive."""
        ar = self._replicas(key)
        if ar and broker not in ar:
            return f"not in the replica list {_set(sorted(ar))}"
        down = up = fenced = unfenced = -1
        for e in self.story.by_node.get(f"broker-{broker}", []):
            if e.get("event") == "node_crash":
                down = int(e["seq"])
            elif e.get("event") == "node_restart":
                up = int(e["seq"])
        for e in self.story.by_node.get("controller", []):
            if e.get("broker") == broker and e.get("event") == "broker_fenced":
                fenced = int(e["seq"])
            elif e.get("broker") == broker and e.get("event") == "broker_unfenced":
                unfenced = int(e["seq"])
        if down > up:
            return "down"
        if fenced > unfenced:
            return "fenced"
        return "alive"

    def _replicas(self, key: Key) -> set[int]:
        """The partition's replica list as the story last saw it."""
        out: set[int] = set()
        for ev in self.story.by_part.get(key, []):
            if ev.get("event") == "replicas_change" or (
                    ev.get("event") == "isr_change" and ev.get("reason") == "create"):
                out = set(_ints(ev.get("new")))
        return out

    def commit_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``lost_committed_offset``: the commit, its acknowledgement and where it was
        written, what the offsets partition lost after, the coordinator's fail-over and
        the read-back."""
        group, consumer = str(d.get("group")), str(d.get("consumer"))
        seq = int(d["seq"])
        sent_seq = _int(d.get("acknowledged_seq"))
        evs = self.story.commits.get((group, key[0], key[1]), [])
        commit = next((e for e in evs if e.get("seq") == sent_seq), None)
        ack = next((e for e in evs if e.get("event") == "offset_commit_ack" and commit
                    is not None and e.get("commit_id") == commit.get("commit_id")
                    and e.get("consumer") == commit.get("consumer")
                    and int(e["seq"]) > int(commit["seq"])), None)
        okey = self.story.offsets_key(group)
        oname = f"{okey[0]}-{okey[1]}"
        steps: list[Step] = []
        if commit is not None:
            steps.append(self._step(commit, (
                f"{commit.get('consumer')} committed offset {commit.get('offset')} of "
                f"{key[0]}-{key[1]} for group {group} (commit {commit.get('commit_id')})")))
        lo = int(ack["seq"]) if ack is not None else (sent_seq or 0)
        leo_at: int | None = None
        holders: tuple[int, ...] = ()
        if ack is not None:
            leader, epoch, isr, state = self.story.at_ack.get(lo, (None, None, (), {}))
            mine = state.get(leader) if leader is not None else None
            leo_at = mine[0] if mine is not None else None
            holders = isr
            rf = self._cluster("offsets.topic.replication.factor")
            steps.append(self._step(ack, (
                f"acknowledged: written to {oname} (offsets.topic.replication.factor={rf}), "
                f"leader broker-{leader} in epoch {epoch}, ISR {_set(isr)}"
                + (f", its LEO {mine[0]}, HW {mine[1]}" if mine is not None else ""))))
        oevs = self.story.by_part.get(okey, [])
        lost: list[Event] = []
        for e in self._between(oevs, lo, seq, (
                "log_recovery", "log_truncate", "leader_elected", "partition_offline",
                "become_leader", "coordinator_load", "coordinator_loaded",
                "coordinator_unload", "replica_deleted")):
            n = e.get("event")
            text = self._words(e)
            if n == "log_recovery" and leo_at is not None and (
                    _int(e.get("leo")) or 0) < leo_at:
                text += f": the commit's record (below {leo_at}) is gone from it"
                lost.append(e)
            elif n == "log_truncate" and leo_at is not None and (
                    _int(e.get("new_leo")) or 0) < leo_at:
                text += ": it cut the commit's record"
                lost.append(e)
            elif n == "leader_elected" and e.get("election") == "unclean":
                lost.append(e)
            steps.append(self._step(e, text))
        nodes = {f"broker-{b}" for b in holders}
        steps += self._active_faults(nodes, int(ack["ts_us"]) if ack is not None else 0,
                                     self._ts_of(seq))
        for b in sorted(holders):
            steps += self._broker_down(b, lo, seq)
        steps += self._held({f"consumer-{consumer}"} | nodes,
                            int(ack["ts_us"]) if ack is not None else 0, self._ts_of(seq))
        fetched = d.get("fetched")
        steps.append(Step(seq, self._ts_of(seq), (
            f"{consumer} read back {'no committed offset' if fetched == -1 else fetched} for "
            f"{key[0]}-{key[1]} from the coordinator, after {d.get('acknowledged')} had been "
            "acknowledged")))
        rule = "offsets_partition_loss" if lost else "commit_not_loaded"
        return Chain("lost_committed_offset", key[0], key[1], rule, _dedup(steps), [],
                     key=("lost_committed_offset", group, okey, rule,
                          int(lost[0]["seq"]) if lost else seq))

    def _ts_of(self, seq: int) -> int:
        """The time of the event at ``seq`` (the story's nearest at or before it)."""
        seqs, tss = self._index()
        i = bisect.bisect_right(seqs, seq)
        return tss[i - 1] if i > 0 else 0

    def _producer_cfg(self, producer: str) -> dict[str, Any]:
        prods = self._scenario_list("producers")
        i = _int(int(producer)) if producer.isdigit() else None
        return prods[i] if i is not None and 0 <= i < len(prods) else {}

    def _cuts(self, key: Key, lo: int, hi: int, below: int) -> list[Event]:
        """The events of the partition between seqs that took offsets at or below
        ``below`` from a log: truncations, recoveries, deletions, elections, offline."""
        out = []
        for e in self._between(self.story.by_part.get(key, []), lo, hi, (
                "log_truncate", "log_recovery", "replica_deleted", "leader_elected",
                "partition_offline")):
            n = e.get("event")
            if n == "log_truncate" and (_int(e.get("new_leo")) or 0) > below:
                continue
            if n == "log_recovery" and (_int(e.get("leo")) or 0) > below:
                continue
            out.append(e)
        return out

    def send_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``nonmonotonic_send``: the earlier send, what took its offset from the log or
        what made it retry, and the later send landing below it."""
        seq = int(d["seq"])
        value, prev = str(d.get("value")), str(d.get("previous_value"))
        producer = str(d.get("producer"))
        off, prev_off = int(d["offset"]), int(d["previous_offset"])
        sends = self.story.sends
        p_ack = next((e for e in sends.get(prev, []) if e.get("event") == "produce_ack"), None)
        p_send = next((e for e in sends.get(prev, []) if e.get("event") == "produce_send"),
                      None)
        steps: list[Step] = []
        if p_ack is not None:
            steps.append(self._step(p_ack, f"{prev} (producer {producer}) acknowledged at "
                                           f"offset {prev_off}"))
        lo = int(p_ack["seq"]) if p_ack is not None else 0
        cuts = self._cuts(key, lo, seq, prev_off)
        if cuts:
            rule = "offsets_reused"
            steps += [self._step(e) for e in cuts[:6]]
            nodes = {f"broker-{e.get('replica')}" for e in cuts if e.get("replica") is not None}
            steps += self._active_faults(nodes, int(p_ack["ts_us"]) if p_ack else 0,
                                         self._ts_of(seq))
        else:
            rule = "retry_reordered"
            cfg = self._producer_cfg(producer)
            lo_ts = int(p_send["ts_us"]) if p_send is not None else 0
            errs = [e for e in sends.get(prev, []) if e.get("event") == "produce_error"]
            steps += [self._step(e) for e in errs[:3]]
            node = f"producer-{producer}"
            fails = [e for e in self.story.by_node.get(node, []) if e.get("event") ==
                     "request_failed" and lo_ts <= (_int(e.get("ts_us")) or 0)
                     <= self._ts_of(seq)]
            steps += [self._step(e) for e in fails[:3]]
            steps += self._held({node} | {f"broker-{r}" for r in self._replicas(key)}, lo_ts,
                                self._ts_of(seq))
            if p_send is not None:
                steps.append(self._step(p_send, (
                    f"{prev} sent (max.in.flight.requests.per.connection="
                    f"{cfg.get('max.in.flight.requests.per.connection')}, enable.idempotence="
                    f"{cfg.get('enable.idempotence')})")))
        steps.append(Step(seq, self._ts_of(seq), (
            f"{value}, sent after {prev}, landed at offset {off}, below {prev_off}")))
        return Chain("nonmonotonic_send", key[0], key[1], rule, _dedup(steps), [],
                     key=("nonmonotonic_send", key, rule,
                          int(cuts[0]["seq"]) if cuts else seq))

    def duplicate_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``duplicate``: the sends of the value, what made the producer retry (an
        error, a dropped or held answer) and the offsets it landed at."""
        value = str(d.get("value"))
        evs = self.story.sends.get(value, [])
        sent = [e for e in evs if e.get("event") == "produce_send"]
        acks = [e for e in evs if e.get("event") == "produce_ack"]
        errs = [e for e in evs if e.get("event") == "produce_error"]
        producer = str(sent[0].get("producer")) if sent else "?"
        cfg = self._producer_cfg(producer)
        steps: list[Step] = []
        if sent:
            steps.append(self._step(sent[0], (
                f"producer {producer} sent {value} (enable.idempotence="
                f"{cfg.get('enable.idempotence')}, max.in.flight.requests.per.connection="
                f"{cfg.get('max.in.flight.requests.per.connection')})")))
        lo_ts = int(sent[0]["ts_us"]) if sent else 0
        hi_ts = int(acks[-1]["ts_us"]) if acks else self.story.end_ts
        node = f"producer-{producer}"
        steps += [self._step(e) for e in errs[:3]]
        failed = [e for e in self.story.by_node.get(node, [])
                  if e.get("event") in ("request_failed", "msg_drop")
                  and lo_ts <= (_int(e.get("ts_us")) or 0) <= hi_ts][:3]
        steps += [self._step(e) for e in failed]
        # what made the answers late or lost: the faults on the brokers asked
        peers = {str(e.get("peer") or str(e.get("dst")).split("/", 1)[0]) for e in failed}
        steps += self._active_faults(peers, lo_ts, hi_ts)
        steps += self._held({node} | {f"broker-{r}" for r in self._replicas(key)}, lo_ts, hi_ts)
        for e in sent[1:3]:
            steps.append(self._step(e, f"producer {producer} sent {value} again (a retry)"))
        lo = int(sent[0]["seq"]) if sent else 0
        cuts = self._cuts(key, lo, int(acks[-1]["seq"]) if acks else 1 << 62, 1 << 62)
        for e in acks[:1]:
            steps.append(self._step(e, f"{value} acknowledged at offset {e.get('offset')}"))
        offsets = [int(o) for o in d.get("offsets") or []]
        steps.append(Step(1 << 62, self.story.end_ts, (
            f"{value} is at offsets {', '.join(map(str, offsets))} (acknowledged, read or in "
            "the final log)")))
        retried = len(sent) > 1 or errs or cfg.get("enable.idempotence") is False
        rule = "retry_duplicate" if retried or not cuts else "duplicate_after_loss"
        return Chain("duplicate", key[0], key[1], rule, _dedup(steps), [],
                     key=("duplicate", key, rule))

    def poll_chain(self, anomaly: str, key: Key, d: dict[str, Any]) -> Chain:
        """``nonmonotonic_poll`` / ``poll_skip``: the read before, then what moved the
        consumer's position: an offset reset (and the truncation or retention behind
        it), a rebalance or restart that restored the committed offset, or a log
        rewritten under it."""
        seq = int(d["seq"])
        consumer = str(d.get("consumer"))
        prev = self.story.poll_prev.get(seq)
        lo = int(prev["seq"]) if prev is not None else 0
        steps: list[Step] = []
        if prev is not None:
            steps.append(self._step(prev, (
                f"{consumer} read {key[0]}-{key[1]} offset {prev.get('offset')} "
                f"({prev.get('value')}, HW {prev.get('hw')})")))
        mine = [e for e in self._between(self.story.by_node.get(f"consumer-{consumer}", []),
                                         lo, seq, ("offset_reset", "assignment", "offset_fetch",
                                                   "corrupt_record"))
                if e.get("event") == "assignment" or (e.get("topic"), e.get("partition")) == key]
        resets = [e for e in mine if e.get("event") == "offset_reset"]
        fetched = [e for e in mine if e.get("event") in ("offset_fetch", "assignment")]
        log = self._between(self.story.by_part.get(key, []), lo, seq, (
            "leader_elected", "log_truncate", "log_recovery", "partition_offline",
            "segment_delete", "log_start_offset_update"))
        steps += [self._step(e) for e in log[:5]]
        steps += [self._step(e) for e in mine[:4]]
        for r in resets[:1]:
            # what put the position out of the log: the log start moved above it, or the
            # log was cut below it
            pos = _int(r.get("old"))
            why = [e for e in self.story.by_part.get(key, []) if int(e["seq"]) < int(r["seq"])
                   and pos is not None and (
                       (e.get("event") == "log_start_offset_update"
                        and (_int(e.get("new")) or 0) > pos)
                       or (e.get("event") == "log_truncate"
                           and (_int(e.get("new_leo")) or 0) < pos))]
            for e in why[-2:]:
                steps.append(self._step(e, self._words(e) + f": position {pos} out of the log"))
        if log:
            steps += self._active_faults(
                {f"broker-{e.get('replica')}" for e in log if e.get("replica") is not None}
                | {f"broker-{e.get('leader')}" for e in log if e.get("leader") is not None},
                int(prev["ts_us"]) if prev is not None else 0, self._ts_of(seq))
        rule = ("offset_reset" if resets else "position_restored" if fetched
                else "read_rewritten_log" if log or prev is not None else "position_restored")
        off, before = d.get("offset"), d.get("previous_offset")
        what = (f"back from {before}" if anomaly == "nonmonotonic_poll"
                else f"skipping {int(off) - int(before) - 1} offsets after {before}"
                if isinstance(off, int) and isinstance(before, int) else "")
        steps.append(Step(seq, self._ts_of(seq), (
            f"{consumer} read {key[0]}-{key[1]} offset {off} ({d.get('value')}, HW "
            f"{d.get('hw')}): {what}")))
        return Chain(anomaly, key[0], key[1], rule, _dedup(steps), [],
                     key=(anomaly, key, consumer, rule,
                          int(resets[0]["seq"]) if resets else lo))

    def expired_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``expired``: the acknowledgement, and what moved the log start past it."""
        seq, offset = int(d["seq"]), int(d["offset"])
        steps = [Step(seq, self._ts_of(seq), (
            f"{d.get('value')} acknowledged at offset {offset} to producer "
            f"{d.get('producer')}"))]
        evs = self.story.by_part.get(key, [])
        dels = [e for e in evs if int(e["seq"]) > seq and (
            (e.get("event") == "segment_delete"
             and (_int(e.get("base_offset")) or 0) <= offset < (_int(e.get("next_offset")) or 0))
            or (e.get("event") == "delete_records" and (_int(e.get("offset")) or 0) > offset)
            or (e.get("event") == "log_start_offset_update"
                and (_int(e.get("old")) or 0) <= offset < (_int(e.get("new")) or 0)))]
        steps += [self._step(e) for e in dels[:4]]
        steps.append(Step(1 << 62, self.story.end_ts, (
            f"the final log starts at {d.get('log_start_offset')}, above offset {offset}")))
        by_client = any(e.get("event") == "delete_records" or e.get("reason") ==
                        "client_deletion" for e in dels)
        rule = "deleted_records" if by_client else "retention"
        return Chain("expired", key[0], key[1], rule, steps, [(offset, d.get("value"))],
                     key=("expired", key, rule))

    def outside_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``outside_assignment``: the replica-list change that left the replica out, and
        the ISR change or election that kept or put it back."""
        seq = int(d["seq"])
        outside = set(_ints(d.get("outside")))
        evs = self.story.by_part.get(key, [])
        steps = [self._step(e) for e in evs if int(e["seq"]) < seq and (
            e.get("event") in ("replicas_change", "reassignment")
            and outside & (set(_ints(e.get("old"))) | set(_ints(e.get("removing")))
                           | set(_ints(e.get("removed")))))][-3:]
        here = next((e for e in evs if e.get("seq") == seq), None)
        steps.append(Step(seq, self._ts_of(seq), (
            (self._words(here) + ": ") if here is not None else "") + (
            f"{_set(sorted(outside))} outside the replica list {_set(_ints(d.get('replicas')))}")))
        return Chain("outside_assignment", key[0], key[1], "outside_replica_list", steps, [],
                     key=("outside_assignment", key, tuple(sorted(outside))))

    def uncommitted_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``read_uncommitted``: the read, and the HW the serving leader had then."""
        seq, offset = int(d["seq"]), int(d["offset"])
        state = self.story.state_at.get(seq, {})
        leader = self.story.leader.get(key, (None, None))[0]
        hws = ", ".join(f"broker-{r} HW {hw}" for r, (_leo, hw) in sorted(state.items()))
        steps = [Step(seq, self._ts_of(seq), (
            f"{d.get('consumer')} (group {d.get('group')}) read offset {offset} "
            f"({d.get('value')}) served under HW {d.get('hw')}; the highest leader HW so far "
            f"{d.get('max_leader_hw')}" + (f"; then {hws}" if hws else "")
            + (f" (leader broker-{leader})" if leader is not None else "")))]
        return Chain("read_uncommitted", key[0], key[1], "read_above_hw", steps,
                     [(offset, d.get("value"))], key=("read_uncommitted", key))

    def truncation_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``possible_committed_truncation``: the leader change behind it, and the
        truncation line with the records between its target and the HW."""
        seq, r = int(d["seq"]), _int(d.get("replica"))
        evs = self.story.by_part.get(key, [])
        before = [e for e in evs if int(e["seq"]) < seq and e.get("event") in (
            "leader_elected", "partition_offline", "become_leader", "become_follower",
            "isr_change", "fetch_offset_reset", "fetch_error")
            and (e.get("event") not in ("become_leader", "become_follower")
                 or e.get("replica") == r or e.get("event") == "become_leader")]
        steps = [self._step(e) for e in before[-4:]]
        steps += self._broker_down(r, int(before[-4]["seq"]) if len(before) >= 4 else 0, seq) \
            if r is not None else []
        new, hw = _int(d.get("new_leo")), _int(d.get("hw"))
        span = (f"offsets {new}..{hw - 1} ({d.get('records')} records)"
                if new is not None and hw is not None else f"{d.get('records')} records")
        steps.append(Step(seq, self._ts_of(seq), (
            f"broker-{r} truncated {key[0]}-{key[1]} to {new}, below its high watermark "
            f"{hw}: {span} it had seen committed are gone from it")))
        return Chain("possible_committed_truncation", key[0], key[1], "truncation_below_hw",
                     _dedup(steps), [], key=("possible_committed_truncation", key, seq))

    def unclean_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``unclean_election``: the ISR before, what took each member away, and the
        replica elected outside it (its log end against the last leader's)."""
        seq = int(d["seq"])
        leader = _int(d.get("leader"))
        walk = [w for w in self._isr_walk(key) if int(w[0]["seq"]) < seq]
        # the last ISR: what the ISR held before it emptied (or, if it never did, before
        # it took the elected replica in as part of the election)
        emptied = [i for i, (_e, o, n) in enumerate(walk) if o and not n]
        if emptied:
            at = emptied[-1]
        else:
            at = next((i for i in range(len(walk) - 1, -1, -1)
                       if walk[i][1] and leader not in walk[i][1]), len(walk))
        isr = walk[at][1] if at < len(walk) else ()
        lo = int(walk[at - 1][0]["seq"]) if 0 < at <= len(walk) else 0
        steps: list[Step] = []
        if at > 0:
            steps.append(self._step(walk[at - 1][0], "the ISR: " + self._words(walk[at - 1][0])))
        steps += [self._step(e) for e, _o, _n in walk[at:at + 3]]
        for b in isr:
            steps += self._broker_down(b, lo, seq)
        steps += [self._step(e) for e in self._between(self.story.by_part.get(key, []), lo,
                                                       seq, ("partition_offline",))[:1]]
        if leader is not None and leader not in isr:
            steps += self._broker_down(leader, lo, seq)
        first = walk[at - 1][0] if at > 0 else None
        steps += self._active_faults({f"broker-{b}" for b in isr},
                                     int(first["ts_us"]) if first is not None else 0,
                                     self._ts_of(seq))
        state = self.story.state_at.get(seq, {})
        mine = state.get(leader, (None, None))[0] if leader is not None else None
        best = max((leo for r, (leo, _hw) in state.items() if r in isr), default=None)
        unclean = self._topic_cfg(key[0]).get("unclean.leader.election.enable")
        here = next((e for e in self.story.by_part.get(key, []) if e.get("seq") == seq), None)
        text = (self._words(here) if here is not None
                else f"broker-{leader} elected leader (unclean, epoch {d.get('leader_epoch')})")
        text += (f": outside the last ISR {_set(isr)}" if leader not in isr else
                 f": the last ISR {_set(isr)} had emptied, and it was elected without it")
        if mine is not None:
            text += f", its LEO {mine}" + (f" against {best} on the ISR's longest log"
                                            if best is not None else "")
        if unclean is not None:
            text += f" (unclean.leader.election.enable={str(unclean).lower()})"
        steps.append(Step(seq, self._ts_of(seq), text))
        return Chain("unclean_election", key[0], key[1], "unclean_leader_election",
                     _dedup(steps), [], key=("unclean_election", key, seq))

    def epoch_chain(self, key: Key, d: dict[str, Any]) -> Chain:
        """``leader_epoch_regression``: the earlier leader with the higher epoch, and the
        one that went back."""
        seq = int(d["seq"])
        prev_epoch = _int(d.get("previous_epoch"))
        evs = self.story.by_part.get(key, [])
        earlier = [e for e in evs if int(e["seq"]) < seq and e.get("event") in (
            "leader_elected", "become_leader") and _int(e.get("leader_epoch")) == prev_epoch]
        steps = [self._step(e, f"epoch {prev_epoch} first: " + self._words(e))
                 for e in earlier[:1]]
        lo = int(earlier[0]["seq"]) if earlier else 0
        steps += [self._step(e) for e in self._between(
            self.story.events, lo, seq, ("controller_elected", "broker_change"))[:3]]
        here = next((e for e in evs if e.get("seq") == seq), None)
        steps.append(Step(seq, self._ts_of(seq), (
            (self._words(here) if here is not None else f"broker-{d.get('leader')} leads")
            + f": leader epoch {d.get('leader_epoch')}, below {prev_epoch}")))
        return Chain("leader_epoch_regression", key[0], key[1], "stale_leader_epoch",
                     _dedup(steps), [], key=("leader_epoch_regression", key, seq))

    def story_chain(self, anomaly: str, key: Key, d: dict[str, Any]) -> Chain:
        """The chain of a partition- or client-level finding (the generic one for a kind
        the explainer does not know)."""
        name = STORY_KINDS.get(anomaly)
        if name == "poll_chain":
            return self.poll_chain(anomaly, key, d)
        if name == "metadata_chain" and self.fold.story is not None:
            return metadata_chain(self, anomaly, key, d)
        if name is None or self.fold.story is None:
            return self.generic_chain(anomaly, key, d)
        build: Callable[[Key, dict[str, Any]], Chain] = getattr(self, name)
        return build(key, d)

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
