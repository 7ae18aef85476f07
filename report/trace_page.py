"""The page of one trace: verdict, anomalies, the causal chains, timelines, the space-time
diagram, the scenario.

* Sources of truth. The trace is folded once through ``traces.reader`` (verified) into
  ``traces.checker.Checker`` for the verdict and into compact plot state (``reading``).
  Nothing is recomputed differently from ``isrlab check`` and ``isrlab explain``: the counts
  and examples on the page are the checker's, the "why" section lists ``traces.explain``'s
  chains.
* The space-time diagram is centred on the first loss (a ``LOST`` anomaly of
  ``traces.verdict``), else on the first forbidden anomaly (:func:`_focus_tier`), never on an
  informational finding: with neither, it says there is nothing to centre on. It draws real
  messages (``messages``) around the steps of that anomaly's chain: the trace's own message
  lines, or — for a trace without them — those of a re-run of its scenario and seed with
  ``--trace-messages`` (``traces.replay``), used only when the re-run is the same run event
  for event (``--no-rerun`` skips it). Without messages it falls back to arrows inferred
  between traced events (``figures``).
* A trace of a KRaft controller quorum (``raft_*`` events) gets a "Controller quorum"
  section just above the partition timelines, on their time axis (``quorum``).
* Times are written on the trace's clock (``reading.Clock``): simulated seconds, or the
  logs' wall clock (UTC) for a trace imported from Kafka's logs.
"""


from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from report.markup import Html, badge, esc, figure, page, table, tag
from report.reading import PartitionView, TraceView, read_view, read_window
from traces.reader import TraceError
from traces.schema import ANOMALIES
from traces.verdict import (
    DURATIONS,
    INFORMATIONAL,
    WORDS,
    anomaly_label,
    judge,
    partition_state,
)

#: Default budget of plotted LEO/HW change points over all timelines of a report.
MAX_POINTS = 9_000
#: Half-width of the space-time diagram's search window around the focus.
WINDOW_US = 1_000_000
#: The anomalies that lose data (the verdict's ``LOST``): the space-time diagram's first pick.
LOSSES = dict(WORDS)["LOST"]


# --------------------------------------------------------------------------- trace page


def _knobs(sc: dict[str, Any]) -> list[tuple[str, str]]:
    topics = [t for t in sc.get("topics", []) if isinstance(t, dict)]
    producers = [p for p in sc.get("producers", []) if isinstance(p, dict)]
    faults = sc.get("faults") if isinstance(sc.get("faults"), dict) else {}
    assert isinstance(faults, dict)

    def each(items: list[dict[str, Any]], key: str) -> str:
        vals = sorted({str(i.get(key)) for i in items if key in i})
        return ", ".join(vals) if vals else "–"

    cluster = sc.get("cluster") if isinstance(sc.get("cluster"), dict) else {}
    assert isinstance(cluster, dict)
    return [
        ("brokers", str(cluster.get("brokers", "–"))),
        ("topics", ", ".join(f"{t.get('name')}×{t.get('partitions')} "
                             f"RF{t.get('replication.factor')}" for t in topics) or "–"),
        ("acks", each(producers, "acks")),
        ("enable.idempotence", each(producers, "enable.idempotence")),
        ("min.insync.replicas", each(topics, "min.insync.replicas")),
        ("unclean.leader.election.enable", each(topics, "unclean.leader.election.enable")),
        ("nemesis", ", ".join(map(str, faults.get("nemesis") or [])) or "–"),
        ("bugs", ", ".join(map(str, sc.get("bugs") or [])) or "none"),
    ]


def _anomaly_tag(view: TraceView, name: str, count: int) -> tuple[str, str]:
    r = view.result
    return anomaly_label(name, count, forbidden_found=r.forbidden_found,
                         missing_expected=r.missing_expected, expected=r.expected)


def _examples(view: TraceView) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in ANOMALIES:
        for d in view.result.details.get(name, []):
            ex = dict(d)
            ts = d.get("ts_us") if type(d.get("ts_us")) is int else view.ts_of(d.get("seq"))
            ex["_ts_us"], ex["_anomaly"] = ts, name
            ex["_pname"] = f"{d.get('topic')}-{d.get('partition')}"
            extra = {k: v for k, v in d.items() if k not in ("topic", "partition", "seq", "ts_us")}
            ex["_label"] = f"{name} {ex['_pname']}: " + ", ".join(
                f"{k}={v}" for k, v in extra.items())
            out.append(ex)
    return out


def _focus_tier(anomaly: str, forbidden: Sequence[str]) -> int | None:
    """What the space-time diagram centres on: 0 a loss, 1 a forbidden anomaly (one of
    ``forbidden``, the checker's ``forbidden_found``), None anything else (informational
    findings, allowed anomalies)."""
    if anomaly in LOSSES:
        return 0
    if anomaly in forbidden and anomaly not in INFORMATIONAL:
        return 1
    return None


def _focus(view: TraceView, examples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The checker's example to centre the inferred diagram on: the first loss, else the
    first forbidden anomaly; None when the trace has neither."""
    timed = [(tier, int(e["_ts_us"]), int(e.get("seq") or 0), i)
             for i, e in enumerate(examples)
             if e["_ts_us"] is not None and e["_pname"] in view.partitions
             and (tier := _focus_tier(e["_anomaly"], view.result.forbidden_found))
             is not None]
    return examples[min(timed)[3]] if timed else None


def _focus_chain(chains: Sequence[Any], forbidden: Sequence[str]) -> Any:
    """The chain the message diagram draws: the first loss's, else the first forbidden
    anomaly's (first: by its earliest step); None when no chain is either."""
    ranked = []
    for i, c in enumerate(chains):
        tier = _focus_tier(c.anomaly, forbidden)
        times = [st.ts_us for st in c.steps if st.seq != 1 << 62]
        if tier is not None and times:
            ranked.append((tier, min(times), i))
    return chains[min(ranked)[2]] if ranked else None


def _leader_at(pv: PartitionView) -> Any:
    marks = sorted([(e.ts_us, e.leader) for e in pv.elections] + [(t, None) for t in pv.offline],
                   key=lambda m: m[0])

    def leader_at(ts: int) -> int | None:
        cur: int | None = None
        for t, leader in marks:
            if t > ts:
                break
            cur = leader
        return cur

    return leader_at


def _moment(view: TraceView, div: str, ts_us: int | None) -> Html:
    """A time that zooms its partition's timeline there when clicked (on the trace's clock:
    seconds, or ms since the Unix epoch for the logs' wall clock)."""
    if ts_us is None:
        return Html("end of run")
    clock = view.clock
    w = max(0.25, view.end_us / 1e6 / 40) * (1000 if clock.wall else 1)
    return tag("a", clock.text(ts_us), class_="moment", href=f"#{div}", data_plot=div,
               data_t=f"{clock.js(ts_us):.6f}", data_w=f"{w:.3f}",
               data_clock="wall" if clock.wall else None)


def _plot_id(pname: str) -> str:
    return "tl-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in pname)


def trace_report(path: str, max_points: int = MAX_POINTS, *, rerun: bool = True
                 ) -> tuple[str, str]:
    """(HTML, one-line summary) for one trace; raises TraceError on bad input. ``rerun``:
    a trace without message lines is re-run with message tracing for the space-time
    diagram (only when it replays identically)."""
    from report import figures as rf
    from report.quorum import quorum_section
    from traces.explain import RULES, explain

    view = read_view(path)
    chains = [c for c in explain(path).chains if not RULES[c.rule].expected]
    r, sc, hdr = view.result, view.scenario, view.header
    examples = _examples(view)
    status = (view.footer or {}).get("status", "no run_end")
    title = f"isrlab report — {sc.get('name', '?')} seed {hdr.get('seed')}"
    # a run that did not finish gets no verdict, as isrlab check says (exit 3): never "met"
    unfinished = r.incomplete or view.footer is None
    v = (judge({}, incomplete=status if view.footer is None else f"status {status}")
         if unfinished and not r.imported
         else r.verdict())
    verdict = [badge(v.headline.split(" — ")[0], v.tone)]
    if v.expectation:
        verdict.append(badge(v.expectation, v.expectation_tone))
    clock = view.clock
    kv = [("seed", hdr.get("seed")), ("era (protocol)", hdr.get("protocol", sc.get("protocol"))),
          ("run status", status), ("events", f"{view.events:,}"),
          ("logs' wall clock", f"{clock.text(0)} to {clock.text(view.end_us)}")
          if clock.wall else ("simulated", f"{view.end_us / 1e6:.1f} s"),
          ("isrlab", hdr.get("isrlab_version")), ("trace", os.path.basename(path))]
    header = Html(
        f"<header><h1>{esc(sc.get('name', 'trace'))} · seed {esc(hdr.get('seed'))} · "
        f"Kafka {esc(hdr.get('protocol', '?'))} rules</h1>"
        f"<div class=\"sub\">{esc(sc.get('description', ''))}</div>"
        "<div class=\"kv\">" + "".join(f"<span>{esc(k)} <b>{esc(v)}</b></span>" for k, v in kv)
        + "</div><div class=\"verdict\">" + "".join(verdict) + "</div></header>")
    body: list[Html] = []
    for w in view.warnings:
        body.append(Html(f'<div class="warnbox">{esc(w)}</div>'))
    quorum = quorum_section(view, lambda div, ts: _moment(view, div, ts))
    body.append(Html('<nav class="toc"><a href="#anomalies">anomalies</a>'
                     '<a href="#why">why (causal chains)</a>'
                     + ('<a href="#quorum">controller quorum</a>' if quorum else "")
                     + '<a href="#timelines">partition timelines</a>'
                     '<a href="#spacetime">space-time diagram</a><a href="#config">scenario</a>'
                     "</nav>"))
    # anomalies: counts, then examples linking to their moment
    rows, classes = [], []
    for name in ANOMALIES:
        n = r.anomalies.get(name, 0)
        label, cls = _anomaly_tag(view, name, n)
        rows.append([name, f"{n / 1000:,.1f} s" if name in DURATIONS else f"{n:,}", label])
        classes.append(cls)
    ex_rows, ex_classes = [], []
    for e in sorted(examples, key=lambda e: (e["_ts_us"] is None, e["_ts_us"] or 0)):
        extra = {k: v for k, v in e.items() if not k.startswith("_") and k not in (
            "topic", "partition", "seq", "ts_us", "offset", "value")}
        ex_rows.append([e["_anomaly"], e["_pname"], _moment(view, _plot_id(e["_pname"]),
                                                            e["_ts_us"]),
                        e.get("seq"), e.get("offset"), e.get("value"),
                        ", ".join(f"{k}={v}" for k, v in extra.items())])
        ex_classes.append("bad" if e["_anomaly"] in r.forbidden_found else "")
    shown = sum(len(v) for v in r.details.values())
    total = sum(r.anomalies.get(n, 0) for n in ANOMALIES if n != "under_min_isr")
    body.append(Html(
        '<section id="anomalies"><h2>Anomalies</h2><div class="cols"><div>'
        + table(["anomaly (docs/anomalies.md)", "count", "verdict"], rows, id_="anomaly-counts",
                row_classes=classes)
        + "</div><div style=\"flex:1;min-width:600px\">"
        + (table(["anomaly", "partition", "moment", "seq", "offset", "value", "detail"], ex_rows,
                 id_="anomaly-table", row_classes=ex_classes)
           + f'<p class="note">The checker keeps the first examples of each anomaly ({shown} '
           f"shown of {total:,} counted). Click a moment to zoom its partition timeline.</p>"
           if ex_rows else
           '<p id="anomaly-table" class="note">No anomaly example: the checker found '
           "nothing to point at in this trace.</p>")
        + "</div></div></section>"))
    body.append(_why_section(view, chains))
    if quorum is not None:   # the KRaft quorum, on the partition timelines' time axis
        body.append(quorum)
    # per-partition timelines
    sizes = rf.series_sizes(view)
    caps = rf.allocate(sizes, max_points)
    tl: list[Html] = [Html(
        '<section id="timelines"><h2>Partition timelines</h2><p class="note">LEO (solid) and HW '
        "(dotted) of every replica as step lines, ending where a removed replica's log was "
        "deleted (|); below, ISR membership as bands with the leader's tenure in black and "
        "broker down/paused time dotted; dashed verticals mark leader elections (epoch → "
        "leader; hover ▼ for each); shaded spans are faults, and the operations lane shows "
        "each operation for as long as it lasted (a reassignment until it completed, a "
        "controlled shutdown until the broker was back; ◆ and a dotted vertical: done at "
        "once); ✕ marks the anomaly examples, ▼ log truncations. "
        + ("Times are the logs' wall clock (UTC). " if clock.wall else "")
        + f"Lines are downsampled (per time bucket: first, min, max, last) to {sum(caps):,} of "
        f"{sum(sizes):,} change points; drag to zoom, double-click to reset.</p>")]
    k = 0
    by_part: dict[str, list[dict[str, Any]]] = {}
    for e in examples:
        by_part.setdefault(e["_pname"], []).append(e)
    for pname, pv in view.partitions.items():
        n = 2 * len(pv.replicas())
        fig = rf.timeline_figure(view, pv, caps[k:k + n], by_part.get(pname, []))
        k += n
        s = r.partitions.get(pname)
        state = "" if s is None else (
            f" — final leader {s.final_log_replica if s.final_log_replica is not None else '–'}, "
            f"HW {s.final_hw if s.final_hw is not None else '–'}, {s.acked_records:,} acked, "
            + partition_state(s.offline, s.converged, s.anomalies))
        tl.append(Html(f"<h3>{esc(pname)}{esc(state)}</h3>"))
        tl.append(figure(fig, _plot_id(pname)))
    if not view.partitions:
        tl.append(Html('<p class="note">No partition events in this trace.</p>'))
    tl.append(Html("</section>"))
    body += tl
    # space-time diagram: real messages around the first chain, else inferred arrows
    drawn, why_not = _message_section(view, chains, rerun)
    body.append(drawn or _spacetime_section(view, _focus(view, examples), why_not))
    # scenario
    plan = hdr.get("fault_plan") if isinstance(hdr.get("fault_plan"), list) else []
    assert isinstance(plan, list)
    plan_rows = [[f.get("at_s"), f.get("fault"), f.get("target"), f.get("duration_s")]
                 for f in plan if isinstance(f, dict)]
    parts = [[p, "–" if s.final_log_replica is None else s.final_log_replica, s.final_hw,
              f"{s.acked_records:,}", f"{s.consumed_records:,}", f"{s.under_min_isr_us / 1e6:.2f}",
              partition_state(s.offline, s.converged, s.anomalies)]
             for p, s in r.partitions.items()]
    body.append(Html(
        '<section id="config"><h2>Scenario and faults</h2><div class="cols"><div>'
        + table(["knob", "value"], _knobs(sc))
        + "</div><div><h3>fault plan</h3>"
        + (table(["at (s)", "fault", "target", "duration (s)"], plan_rows) if plan_rows
           else Html('<p class="note">no faults</p>'))
        + "</div><div><h3>partitions at end of run</h3>"
        + table(["partition", "final leader", "HW", "acked", "consumed", "under min ISR (s)",
                 "state"], parts)
        + "</div></div></section>"))
    summary = (f"{sc.get('name', '?')} seed {hdr.get('seed')}: {v.headline}; anomalies "
               + r.counts_text())
    return page(title, header, body), summary


#: at most this many chains are listed in the "why" section
MAX_CHAINS = 8


def _why_section(view: TraceView, chains: list[Any]) -> Html:
    """Each anomaly's causal chain (``isrlab explain``) as an annotated timeline."""
    from traces.explain import RULES

    head = ('<section id="why"><h2>Why: causal chains (<code>isrlab explain</code>)</h2>')
    if not chains:
        return Html(head + '<p class="note">No loss, divergence or other anomaly with a '
                    "rule to explain in this trace.</p></section>")
    parts = [head, '<p class="note">Each chain is read off the trace alone: the write and its '
             "acknowledgement, what took the record from each replica, who joined the ISR "
             "without it, the election, the overwriting append, the faults — and the rule at "
             "fault. Click a time to zoom the partition timeline there.</p>"]
    minor = [c for c in chains if not c.records and c.rule == "unexplained"]
    chains = [c for c in chains if c not in minor]
    for i, c in enumerate(chains[:MAX_CHAINS]):
        offs = sorted(o for o, _ in c.records)
        what = (f"{len(offs)} record(s), offsets {offs[0]}..{offs[-1]}" if offs
                else f"{c.count} occurrence(s)")
        rule = RULES[c.rule]
        steps = "".join(
            f"<li>{_moment(view, _plot_id(f'{c.topic}-{c.partition}'), st.ts_us)} "
            f"{esc(st.text)}</li>" for st in c.steps if st.seq != 1 << 62) + "".join(
            f"<li><i>{esc(st.text)}</i></li>" for st in c.steps if st.seq == 1 << 62)
        parts.append(
            f'<div class="chain" id="chain-{i}"><h3>{esc(c.anomaly)} · '
            f"{esc(c.topic)}-{esc(c.partition)} · {esc(what)}</h3>"
            f'<p><b>rule</b> <code class="rule">{esc(c.rule)}</code>: {esc(rule.what)}<br>'
            f"<b>changed by</b> {esc(rule.fix)}</p><ol class=\"steps\">{steps}</ol></div>")
    if len(chains) > MAX_CHAINS:
        parts.append(f'<p class="note">{len(chains) - MAX_CHAINS} more chain(s): '
                     "<code>isrlab explain</code> lists them all.</p>")
    if minor:
        parts.append('<h3>Other findings (no rule of their own)</h3><ul class="minor">' + "".join(
            f"<li><b>{esc(c.anomaly)}</b> {esc(c.topic)}-{esc(c.partition)}"
            + (f" ×{c.count}" if c.count > 1 else "") + ": "
            + (_moment(view, _plot_id(f"{c.topic}-{c.partition}"), c.steps[0].ts_us)
               if c.steps[0].seq != 1 << 62 else "at the end")
            + f" {esc(c.steps[0].text)}</li>" for c in minor[:3 * MAX_CHAINS]) + "</ul>")
    parts.append("</section>")
    return Html("".join(parts))


def _message_section(view: TraceView, chains: list[Any], rerun: bool
                     ) -> tuple[Html | None, str]:
    """The space-time diagram of the first chain from message lines: the trace's own, or
    a re-run's with ``--trace-messages`` when the re-run is identical. (None, why): no
    chain, or no messages to be had — the inferred diagram is drawn instead."""
    import tempfile

    from report import messages as rm
    from traces.replay import replay_trace

    chain = _focus_chain(chains, view.result.forbidden_found)
    if chain is None:
        return None, ""
    head = '<section id="spacetime"><h2>Space-time diagram</h2>'
    note = ""
    with tempfile.TemporaryDirectory(prefix="isrlab-report-") as tmp:
        source = view.path
        if not rm.has_messages(view.path):
            if not rerun:
                return None, "The trace has no message lines (--no-rerun). "
            out = str(Path(tmp) / "with-messages.jsonl")
            try:
                res = replay_trace(view.path, out, trace_messages=True)
            except TraceError as exc:
                return None, f"The trace has no message lines and cannot be re-run ({exc}). "
            except OSError as exc:   # no room for the re-run's trace: draw without it
                return None, ("The trace has no message lines and could not be re-run here "
                              f"({exc.strerror or exc}). ")
            if res.replay_status == "aborted":   # Ctrl-C / SIGTERM during the re-run
                raise KeyboardInterrupt
            if not res.identical:
                return None, (
                    "The trace has no message lines, and re-running it with message tracing "
                    "does not give the same run (isrlab "
                    f"{res.recorded_version} recorded it; the code changed since?), so no "
                    "messages are drawn. ")
            source = out
            note = ("The trace has no message lines: this diagram comes from re-running its "
                    "scenario and seed with <code>--trace-messages</code>, which gave the same "
                    "run event for event. ")
        d = rm.build(source, chain)
    if not d.arrows and not d.marks:
        return None, "No message about the chain's partition around its steps. "
    fig = rm.figure(d)
    caption = (
        f"{note}The messages about <b>{esc(d.topic)}-{esc(d.partition)}</b> around each step "
        + ("of the first loss" if chain.anomaly in LOSSES else "of the first forbidden anomaly")
        + f" ({esc(chain.anomaly)}, rule <code>{esc(chain.rule)}</code>): "
        "one lane per node, an arrow per message from its send to its receipt (dashed: "
        "dropped or never received), red marks for truncations, HW/LEO moves, elections and "
        "crashes. Each window spans "
        f"±{rm.HALF_WINDOW_US / 1e3:g} ms around a step; grey bands are cut time. Click a "
        "message kind in the legend to hide it; hover for ids and key fields."
        + (f" {d.skipped} more messages in the windows are not drawn." if d.skipped else ""))
    return Html(head + figure(fig, "spacetime-plot") + f'<p class="caption">{caption}</p>'
                "</section>"), ""


def _spacetime_section(view: TraceView, focus: dict[str, Any] | None, why_not: str = ""
                       ) -> Html:
    from report import figures as rf

    head = '<section id="spacetime"><h2>Space-time diagram</h2>'
    if focus is None:
        return Html(head + '<p class="note">No loss and no forbidden anomaly with a moment in '
                    "this trace, so there is nothing to centre a space-time diagram on "
                    "(informational findings are listed above).</p></section>")
    pv = view.partitions[focus["_pname"]]
    t0 = int(focus["_ts_us"])
    events = read_window(view.path, t0 - WINDOW_US, t0 + WINDOW_US)
    st = rf.build_spacetime(events, pv.topic, pv.partition, focus, _leader_at(pv))
    if not st.arrows and not st.drops and not st.marks:
        return Html(head + f'<p class="note">Around {esc(focus["_label"])} at '
                    f"{t0 / 1e6:.3f} s the trace holds no causal events to draw.</p></section>")
    fig = rf.spacetime_figure(st, view)
    caption = (
        esc(why_not)
        + ("Around the first loss" if focus["_anomaly"] in LOSSES
           else "Around the first forbidden anomaly")
        + f": <b>{esc(focus['_label'])}</b> at {esc(view.clock.text(t0))} "
        f"(seq {esc(focus.get('seq'))}), partition {esc(pv.name)}. Lanes are nodes; time runs "
        "left to right. <b>The trace does not log delivered messages</b>, only dropped ones "
        "(<code>msg_drop</code>), so each arrow joins two traced events that the replication "
        "protocol links causally: <code>produce_send</code> → the leader's "
        "<code>leo_update</code> covering the offset → each follower's <code>leo_update</code> "
        "(a fetch response) → the leader's <code>hw_update</code> (the next fetch reported the "
        "follower's LEO) → <code>produce_ack</code> and the followers' "
        "<code>hw_update</code>; consumer reads are drawn from the leader HW update they were "
        "served under; grey arrows join <code>leader_elected</code> to "
        "<code>become_leader</code>/<code>become_follower</code>. An arrow's ends are the "
        "traced events' times, not a message's send and receive times. Dropped messages are "
        "broken pink arrows ending in ✕ (the drop time; the receiver never saw them). "
        "Frames a TCP connection held through a cut are dotted purple arrows from the "
        "connection's stall (<code>tcp_stall</code>) to their delivery at the first "
        "retransmission after the heal (<code>tcp_resume</code>, ▶), or to the failure that "
        "discarded them. "
        f"Events searched: ±{WINDOW_US / 1e6:g} s around the anomaly."
    )
    return Html(head + figure(fig, "spacetime-plot") + f'<p class="caption">{caption}</p>'
                "</section>")


