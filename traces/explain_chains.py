"""``isrlab explain``'s chains: each finding judged into a causal chain, and alike ones merged.

Design. This module owns the chain-building: :func:`explain` runs the checker (pass 1,
every finding kept), folds the partitions with findings (:mod:`traces.explain_fold`, pass
2), and :class:`_Judge` turns each finding into a :class:`~traces.explain_output.Chain` —
the write and its acknowledgement (or read), every event that took the record from a
replica, the ISR joins that let a replica without it in, the election that made such a
replica leader, the overwrite, the faults that set these off and, in a trace with message
lines, the messages behind them — naming the rule at fault through
:mod:`traces.explain_rules`. Findings of one partition whose chains are made of the same
trace events are merged into one chain listing the records it covers, and the chains are
ordered for the reader. It builds the output's types and formats no text of its own
beyond the steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from traces.checker import CheckResult, Event, check_file, effective_min_isr
from traces.explain_fold import UNKNOWN, Key, _Change, _Fold, _int, _ints, _Story
from traces.explain_output import Chain, Explanation, Step
from traces.explain_rules import divergence_rule, hw_rule, record_rule
from traces.explain_story import _Teller
from traces.reader import iter_events

#: findings whose chain the fold rebuilds offset by offset; the others get a generic chain
RECORD_ANOMALIES: Final = ("lost_acked_write", "lost_acked_uncommitted", "hw_regression_visible")


def _set(v: Iterable[int]) -> str:
    return "[" + ",".join(str(x) for x in v) + "]"


class _Judge(_Teller):
    """Turn the checker's findings and the fold into chains (the partition- and
    client-level ones: :class:`~traces.explain_story._Teller`)."""

    def __init__(self, result: CheckResult, fold: _Fold) -> None:
        self.result = result
        self.fold = fold
        scenario = fold.header.get("scenario")
        self.scenario: Mapping[str, Any] = scenario if isinstance(scenario, dict) else {}
        self.protocol = str(fold.header.get("protocol") or self.scenario.get("protocol") or "")
        bugs = self.scenario.get("bugs")
        self.bugs = [b for b in bugs if isinstance(b, str)] if isinstance(bugs, list) else []
        #: per topic, Kafka's effectiveMinIsr (the checker's reading of the scenario)
        self.min_isr = effective_min_isr(self.scenario)
        self._seqs: list[int] | None = None
        self._tss: list[int] = []

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
        rule = record_rule(anomaly, snap, epoch, had, lost, joins, decisive, anchor,
                           era=self.era(), min_isr=self.min_isr.get(key[0]))
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
        held = ev.get("fate") == "held"   # sent into a cut: TCP retransmitted it
        fate = (f"{'held by TCP, ' if held else ''}received at {got / 1e6:.3f} s"
                if got is not None else
                "held by TCP, never received (its connection was closed or failed)" if held
                else "never received" if ev.get("fate") == "deliver"
                else f"dropped ({ev.get('fate')})")
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
            rule = divergence_rule(reason, rule, era=self.era())
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
        rule = hw_rule(reason, raised, recovered)
        since = 0
        if raised is not None:
            rs, rt, old, new, why, divergent = raised
            text = f"broker-{replica} HW {old} -> {new} ({why})"
            if divergent is not None:
                text += (f", while its own record at {divergent} differs from its leader's: "
                         "the HW covers its divergent suffix")
            steps.append(Step(rs, rt, text))
            since = rs
        if recovered is not None and recovered[0] > since:
            steps.append(Step(recovered[0], recovered[1], recovered[2]))
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


def _matches(d: Mapping[str, Any], record: tuple[Key, int] | None) -> bool:
    if record is None:
        return True
    (topic, partition), offset = record
    return (d.get("topic") == topic and d.get("partition") == partition
            and d.get("offset") == offset)


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
    # the partition- and client-level findings are told from the story, folded in the
    # same pass: the sends, commits and reads they name, and the moments they need a
    # partition's state at
    story_kinds = [n for n in findings if n not in (
        *RECORD_ANOMALIES, "log_divergence", "hw_regression_replica")]
    below = {(s.topic, s.partition): s.under_min_isr_us for s in result.partitions.values()
             if s.under_min_isr_us > 0 and anomaly in (None, "under_min_isr") and (
                 record is None or (s.topic, s.partition) == record[0])}
    story: _Story | None = None
    if story_kinds or below:
        told = [(n, d) for n in story_kinds for d in findings[n]]
        story = _Story(
            values=[str(d[f]) for n, d in told if n in ("nonmonotonic_send", "duplicate")
                    for f in ("value", "previous_value") if d.get(f) is not None],
            commits=[(str(d.get("group")), str(d["topic"]), int(d["partition"]))
                     for n, d in told if n == "lost_committed_offset"],
            polls=[int(d["seq"]) for n, d in told if n in ("nonmonotonic_poll", "poll_skip")],
            snaps=[int(d["seq"]) for n, d in told if n in (
                "isr_churn", "read_uncommitted", "unclean_election")])
    fold = _Fold(watch, snaps, hw_wanted, story=story)
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
            add(judge.story_chain(name, (str(d["topic"]), int(d["partition"])), d))
    for key, us in sorted(below.items()):
        add(judge.min_isr_chain(key, us))
    ordered = sorted(chains.values(), key=lambda c: (
        _ORDER.get(c.anomaly, 99), c.topic, c.partition,
        min((o for o, _ in c.records), default=0)))
    return Explanation(path, result, judge.protocol, judge.bugs, ordered)


_ORDER = {"lost_acked_write": 0, "lost_acked_uncommitted": 1, "log_divergence": 2,
          "hw_regression_visible": 3, "hw_regression_replica": 4}
