"""The "Controller quorum" section of a trace's page: the KRaft metadata quorum over time.

Shown only for a trace with ``raft_*`` events (``reading.QuorumView.present``), above the
partition timelines and on their time axis (same clock, same range, same plot margins, so a
moment lines up from one figure to the next). One figure, two rows:

* the metadata high watermark of each voter (``raft_hw``) as a step line, broken while the
  voter's node is down (its HW restarts from 0 and is re-learnt), and the leader's appends
  (``raft_append``: a mark at the log end offset the append reached, its record kinds on
  hover);
* one lane per voter with its Raft state over time (``raft_transition``): each leadership
  is one solid band labelled with its epoch, from the move to leader to the voter's next
  state, or its node's crash. The states are Kafka's ``QuorumState`` ones (3.7.0: the class
  comment lists the moves between unattached, voted, candidate, follower, leader and
  resigned; ``initialize`` brings a former leader back *resigned* in its own epoch, which
  is why a restarted leader's lane resumes that way; 4.x adds *prospective*, KIP-996),
  the others drawn as lighter bands; a dotted line under the
  band while the node is down or paused (``node_crash``/``node_pause``: a paused leader
  still believes it leads, which is what the band shows); the votes it answered
  (``raft_vote``: granted ●, refused ✕), a ★ where the leader's claim as active controller
  committed (``controller_elected``), a mark where it renounced (``controller_renounced``);
* one lane per broker coloured by the controller it follows (``controller_followed``), with
  the metadata batches it applied when brokers trace ``metadata_apply``; then the faults
  lane, as on the partition timelines.

Epoch labels are laid out per lane with ``figures.place_labels`` (none covers another at
the nominal width; the page script hides what still collides on a narrower page). Below the
figure, a table of the leaderships. Pure functions of the collected view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from report.figures import (
    FAULT_COLORS,
    NOMINAL_PLOT_PX,
    PALETTE,
    _base_layout,
    _gapped,
    _interval_lane,
    _interval_shapes,
    downsample,
    place_labels,
    text_px,
)
from report.markup import Html, esc, figure, table
from report.reading import Clock, QuorumView, StepSeries, TraceView

#: The div id of the quorum's figure (moment links zoom it).
PLOT_ID: Final = "quorum-plot"
#: A voter's Raft state -> the colour of its band (the leader's is solid black).
STATE_COLORS: Final = {"leader": "#111111", "follower": "#a9c9e8", "voted": "#cdb8e8",
                       "candidate": "#f5b971", "prospective": "#f3dc8f",
                       "unattached": "#dcdcdc", "resigned": "#f2a9a9"}
#: States drawn, in legend order (anything else a trace names comes after, in grey).
STATES: Final[tuple[str, ...]] = ("leader", "candidate", "voted", "follower", "unattached",
                                  "resigned", "prospective")
BAND_PX: Final = 12
LANE_PX: Final = 36.0
HW_ROW_PX: Final = 190.0
#: At most ~this many change points per voter's HW line (M4, as the LEO/HW lines).
HW_POINTS: Final = 2000

Moment = Callable[[str, int | None], Html]


def voter_colors(q: QuorumView) -> dict[int, str]:
    """Each voter's colour: its HW line and the brokers following it."""
    return {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(q.voters())}


def _state_spans(changes: Sequence[tuple[int, str, int]], end: int
                 ) -> list[tuple[str, int, int, int]]:
    """(state, epoch, start, end) of each stretch in one state; "" (its node down) is left
    out; a leadership is always one span of its own, even next to another in the same
    state."""
    out: list[tuple[str, int, int, int]] = []
    for i, (ts, state, epoch) in enumerate(changes):
        until = max(ts, changes[i + 1][0] if i + 1 < len(changes) else end)
        if not state or state == "none":
            continue
        if (out and out[-1][0] == state and out[-1][3] == ts and state != "leader"):
            out[-1] = (state, epoch, out[-1][2], until)   # a new epoch, the same state
        else:
            out.append((state, epoch, ts, until))
    return out


def _hw_line(s: StepSeries, down: Sequence[tuple[int, int]], end: int, clock: Clock
             ) -> tuple[list[float | str | None], list[int | None]]:
    """A step line of one voter's HW, broken from each crash of its node to its restart
    (downsampled to :data:`HW_POINTS`, keeping each bucket's extremes)."""
    kept_ts, kept = downsample(s.ts, s.val, HW_POINTS)
    points: list[tuple[int, int, int | None]] = [(t, 1, v) for t, v in zip(kept_ts, kept,
                                                                          strict=True)]
    points += [(a, 0, None) for a, _ in down]
    xs: list[float | str | None] = []
    ys: list[int | None] = []
    prev: int | None = None
    for t, _, v in sorted(points, key=lambda p: (p[0], p[1])):
        if v is None:
            if prev is not None:
                xs += [clock.x(t), None]
                ys += [prev, None]
            prev = None
            continue
        xs.append(clock.x(t))
        ys.append(v)
        prev = v
    if prev is not None and xs:
        xs.append(clock.x(end))
        ys.append(prev)
    return xs, ys


def _crashes(view: TraceView, node: str) -> list[tuple[int, int]]:
    return [(iv.start_us, iv.end_us or view.end_us) for iv in view.node_down
            if node in iv.targets and iv.kind != "paused"]


def _epoch_labels(tenures: Sequence[tuple[int, int, int, int]], lane: dict[int, float],
                  end: int, clock: Clock) -> list[dict[str, Any]]:
    """``epoch N`` above each leadership band, starting where the band starts (right-aligned
    at the end of the axis), each lane laid out on its own so that no label covers
    another; a leadership too close to the previous one for its label has it on hover."""
    px = NOMINAL_PLOT_PX / max(1, end)
    out: list[dict[str, Any]] = []
    for voter in sorted({t[0] for t in tenures}):
        mine = [t for t in tenures if t[0] == voter]
        texts = [f"epoch {t[1]}" for t in mine]
        boxes, sides = [], []
        for (_, _, a, _), text in zip(mine, texts, strict=True):
            w = text_px(text, 10)
            left = a * px
            side = "right" if left + w > NOMINAL_PLOT_PX else "left"
            boxes.append((left + w / 2 if side == "left" else left - w / 2, w))
            sides.append(side)
        rows = place_labels(boxes, rows=1)
        out += [dict(x=clock.x(t[2]), y=lane[voter] + 0.27, xref="x2", yref="y2",
                     xanchor=side, yanchor="bottom", text=text, showarrow=False,
                     font=dict(size=10, color="#111"))
                for t, text, side, row in zip(mine, texts, sides, rows, strict=True)
                if row is not None]
    return out


def quorum_figure(view: TraceView) -> go.Figure:
    """The quorum's figure (module notes); ``view.quorum`` must be present."""
    q, clock, end = view.quorum, view.clock, view.end_us
    x = clock.x
    voters, brokers = q.voters(), q.brokers()
    color = voter_colors(q)
    node_color = {f"controller-{v}": c for v, c in color.items()}
    names = [f"controller-{v}" for v in voters] + [f"broker-{b}" for b in brokers]
    lane = {n: float(len(names) - i) for i, n in enumerate(names)}
    vlane = {v: lane[f"controller-{v}"] for v in voters}
    blane = {b: lane[f"broker-{b}"] for b in brokers}
    fault_y, bottom = -0.1, -0.85
    lanes_px = LANE_PX * (len(names) + 0.5 - bottom)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        row_heights=[HW_ROW_PX / (HW_ROW_PX + lanes_px),
                                     lanes_px / (HW_ROW_PX + lanes_px)])
    # row 1: each voter's metadata HW, the leader's appends
    for v in voters:
        xs, ys = _hw_line(q.hw.get(v, StepSeries()), _crashes(view, f"controller-{v}"), end,
                          clock)
        if xs:
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", line_shape="hv", line=dict(color=color[v], width=2),
                name=f"metadata HW controller-{v}", legendgroup=f"v{v}",
                hovertemplate=f"HW controller-{v}: %{{y}} at %{{x}}<extra></extra>"),
                row=1, col=1)
    if q.appends:
        fig.add_trace(go.Scatter(
            x=[x(a[0]) for a in q.appends], y=[a[4] + 1 for a in q.appends], mode="markers",
            marker=dict(symbol="circle-open", size=6,
                        color=[color.get(a[1], "#333") for a in q.appends]),
            name="leader's append (log end)",
            text=[f"controller-{a[1]} appended offsets {a[3]}..{a[4]} in epoch {a[2]} at "
                  f"{clock.text(a[0])}: {a[5]}" for a in q.appends],
            hovertemplate="%{text}<extra></extra>"), row=1, col=1)
    # row 2: voters' states, brokers' controllers, down time, marks
    spans_by_state: dict[str, tuple[list[float | str | None], list[Any], list[str]]] = {}
    for v in voters:
        for state, epoch, a, b in _state_spans(q.states.get(v, []), end):
            xs_s, ys_s, tx_s = spans_by_state.setdefault(state, ([], [], []))
            label = (f"controller-{v} {state}, epoch {epoch}: {clock.text(a)} → "
                     f"{clock.text(b)}")
            xs_s += [x(a), x(b), None]
            ys_s += [vlane[v], vlane[v], None]
            tx_s += [label, label, ""]
    order: list[str] = [s for s in STATES if s in spans_by_state]
    order += sorted(s for s in spans_by_state if s not in STATES)
    for state in order:
        xs_s, ys_s, tx_s = spans_by_state[state]
        fig.add_trace(go.Scatter(
            x=xs_s, y=ys_s, text=tx_s, mode="lines",
            line=dict(color=STATE_COLORS.get(state, "#cccccc"), width=BAND_PX),
            name="leader (epoch above)" if state == "leader" else state,
            legendgroup=f"state-{state}", hovertemplate="%{text}<extra></extra>"),
            row=2, col=1)
    followed: dict[str, tuple[list[float | str | None], list[Any], list[str]]] = {}
    for b in brokers:
        changes = q.followed.get(b, [])
        for i, (ts, node, reason) in enumerate(changes):
            until = changes[i + 1][0] if i + 1 < len(changes) else end
            xs_f, ys_f, tx_f = followed.setdefault(node, ([], [], []))
            label = (f"broker {b} follows {node} from {clock.text(ts)} ({reason}) to "
                     f"{clock.text(max(ts, until))}")
            xs_f += [x(ts), x(max(ts, until)), None]
            ys_f += [blane[b], blane[b], None]
            tx_f += [label, label, ""]
    for node in sorted(followed, key=lambda n: (n not in node_color, n)):
        xs_f, ys_f, tx_f = followed[node]
        fig.add_trace(go.Scatter(
            x=xs_f, y=ys_f, text=tx_f, mode="lines",
            line=dict(color=node_color.get(node, "#7f7f7f"), width=7), opacity=0.75,
            name=f"broker follows {node}", legendgroup=f"follows-{node}",
            hovertemplate="%{text}<extra></extra>"), row=2, col=1)
    dx: list[float | str | None] = []
    dy: list[Any] = []
    dt: list[str] = []
    for iv in view.node_down:
        for node in iv.targets:
            if node in lane:
                until = iv.end_us if iv.end_us is not None else end
                what = "paused" if iv.kind == "paused" else f"down ({iv.kind})"
                label = f"{node} {what}: {clock.text(iv.start_us)} → {clock.text(until)}"
                gx, gy = _gapped([(iv.start_us, until)], lane[node] - 0.3, clock)
                dx += gx
                dy += gy
                dt += [label, label, ""]
    if dx:
        fig.add_trace(go.Scatter(x=dx, y=dy, text=dt, mode="lines",
                                 line=dict(color="#555", width=3, dash="dot"),
                                 name="node down / paused",
                                 hovertemplate="%{text}<extra></extra>"), row=2, col=1)
    tenures = q.tenures(end)
    _marks(fig, view, vlane, blane, tenures)
    _interval_lane(fig, view.faults, clock, end, fault_y, "fault", FAULT_COLORS)
    shapes = _interval_shapes(view.faults, clock, end, FAULT_COLORS, 0.10)
    for _, _, a, _ in tenures:   # each leadership's start, across both rows
        shapes.append(dict(type="line", xref="x", yref="paper", x0=x(a), x1=x(a), y0=0, y1=1,
                           line=dict(color="#444", width=1, dash="dash")))
    for ts, _phase in view.phases:
        if 0 < ts < end:
            shapes.append(dict(type="line", xref="x", yref="paper", x0=x(ts), x1=x(ts), y0=0,
                               y1=1, line=dict(color="#1b7f3a", width=1.5)))
    phases = [dict(x=x(ts), y=1.0, xref="x", yref="paper", text=f"{phase} phase →",
                   showarrow=False, xanchor="left", yanchor="bottom",
                   font=dict(size=10, color="#1b7f3a"))
              for ts, phase in view.phases if 0 < ts < end]
    _base_layout(fig, int(100 + (HW_ROW_PX + lanes_px) / 0.95))
    fig.update_layout(shapes=shapes,
                      annotations=phases + _epoch_labels(tenures, vlane, end, clock),
                      margin=dict(t=40),
                      legend=dict(y=-70 / (HW_ROW_PX + lanes_px), yanchor="top"))
    fig.update_yaxes(title_text="metadata offset", row=1, col=1, rangemode="tozero")
    tickvals = [*lane.values(), fault_y - 0.3]
    ticktext = [f"voter {v}" for v in voters] + [f"broker {b}" for b in brokers] + ["faults"]
    fig.update_yaxes(tickmode="array", tickvals=tickvals, ticktext=ticktext, zeroline=False,
                     range=[bottom, len(names) + 0.6], showgrid=False, row=2, col=1)
    span = [x(0), x(end)]
    fig.update_xaxes(range=span, row=2, col=1, title_text=clock.axis_title)
    fig.update_xaxes(range=span, row=1, col=1)
    if clock.wall:
        fig.update_xaxes(type="date")
    return fig


def _marks(fig: go.Figure, view: TraceView, vlane: dict[int, float],
           blane: dict[int, float], tenures: Sequence[tuple[int, int, int, int]]) -> None:
    """Votes, active-controller claims, renounced leaderships, brokers' applies (row 2)."""
    q, clock = view.quorum, view.clock
    x = clock.x
    granted = [v for v in q.votes if v[4] and v[1] in vlane]
    refused = [v for v in q.votes if not v[4] and v[1] in vlane]
    for votes, name, marker in (
            (granted, "vote granted", dict(symbol="circle", size=8, color="#1b7f3a",
                                           line=dict(width=1, color="#fff"))),
            (refused, "vote refused", dict(symbol="x", size=9, color="#b00020",
                                           line=dict(width=1, color="#fff")))):
        if votes:
            fig.add_trace(go.Scatter(
                x=[x(v[0]) for v in votes], y=[vlane[v[1]] for v in votes], mode="markers",
                marker=marker, name=name,
                text=[f"controller-{v[1]} {'grants' if v[4] else 'refuses'} its vote to "
                      f"controller-{v[2]} for epoch {v[3]} at {clock.text(v[0])}"
                      for v in votes],
                hovertemplate="%{text}<extra></extra>"), row=2, col=1)
    leader_of = {epoch: voter for voter, epoch, _, _ in tenures}
    active = [(ts, ce, leader_of[ce]) for ts, ce in q.active if leader_of.get(ce) in vlane]
    if active:
        fig.add_trace(go.Scatter(
            x=[x(a[0]) for a in active], y=[vlane[a[2]] for a in active], mode="markers",
            marker=dict(symbol="star", size=11, color="#f1c40f",
                        line=dict(width=1, color="#111")),
            name="active controller (claim committed)",
            text=[f"controller-{a[2]} is the active controller of epoch {a[1]} from "
                  f"{clock.text(a[0])} (controller_elected committed)" for a in active],
            hovertemplate="%{text}<extra></extra>"), row=2, col=1)
    gone = [r for r in q.renounced if r[1] in vlane]
    if gone:
        fig.add_trace(go.Scatter(
            x=[x(r[0]) for r in gone], y=[vlane[r[1]] + 0.3 for r in gone], mode="markers",
            marker=dict(symbol="triangle-down", size=9, color="#b00020"),
            name="renounced (no longer active)",
            text=[f"controller-{r[1]} renounced epoch {r[2]} at {clock.text(r[0])}, dropping "
                  f"{r[3]} pending operation(s)" for r in gone],
            hovertemplate="%{text}<extra></extra>"), row=2, col=1)
    applied = [(ts, b, first, last) for b, rows in q.applied.items() if b in blane
               for ts, first, last in rows]
    if applied:
        fig.add_trace(go.Scatter(
            x=[x(a[0]) for a in applied], y=[blane[a[1]] for a in applied], mode="markers",
            marker=dict(symbol="line-ns-open", size=10, color="#333", line=dict(width=1.5)),
            name="broker applied metadata",
            text=[f"broker {a[1]} applied metadata offsets {a[2]}..{a[3]} at "
                  f"{clock.text(a[0])}" for a in applied],
            hovertemplate="%{text}<extra></extra>"), row=2, col=1)


def _tenure_rows(view: TraceView, moment: Moment) -> list[list[Any]]:
    q, end = view.quorum, view.end_us
    active = {ce: ts for ts, ce in reversed(q.active)}
    rows: list[list[Any]] = []
    for voter, epoch, a, b in q.tenures(end):
        states = q.states.get(voter, [])
        after = next((st for ts, st, _ in states if ts == b and st != "leader"), None)
        how = ("end of run" if b >= end and after is None
               else "node down" if after == "" else f"→ {after}" if after else "")
        claimed = active.get(epoch)
        rows.append([f"controller-{voter}", epoch, moment(PLOT_ID, a),
                     moment(PLOT_ID, b) if b < end else Html("end of run"),
                     f"{(b - a) / 1e6:,.3f} s", how,
                     moment(PLOT_ID, claimed) if claimed is not None and a <= claimed <= b
                     else "–"])
    return rows


def quorum_section(view: TraceView, moment: Moment) -> Html | None:
    """The "Controller quorum" section, or None for a trace without a quorum."""
    q = view.quorum
    if not q.present:
        return None
    tenures = q.tenures(view.end_us)
    note = (
        "The KRaft metadata quorum on the partitions' time axis. Above: each voter's "
        "metadata high watermark (step line, broken while its node is down) and the "
        "leader's appends (○, at the log end offset they reached; hover for the records). "
        "Below, one lane per voter: its Raft state — each leadership a black band labelled "
        "with its epoch (dashed vertical at its start), lighter bands for candidate, voted, "
        "follower, unattached and resigned; dotted beneath while its node is down or paused "
        "(a paused leader still believes it leads); ● a vote granted, ✕ refused, ★ where "
        "the leader's claim as active controller committed, ▼ a renounced leadership. Then "
        "one lane per broker, coloured by the controller it follows"
        + (" (| the metadata it applied)" if q.applied else "")
        + ", and the faults. Drag to zoom, double-click to reset; hover for details."
        + (f" {q.cut:,} votes, appends or applies past the first "
           "few thousand are not drawn." if q.cut else ""))
    return Html(
        '<section id="quorum"><h2>Controller quorum</h2>'
        f'<p class="note">{esc(note)}</p>'
        + figure(quorum_figure(view), PLOT_ID)
        + f"<h3>Leaderships ({len(tenures)})</h3>"
        + table(["leader", "epoch", "from", "to", "lasted", "ended by", "active from"],
                _tenure_rows(view, moment), id_="quorum-tenures")
        + "</section>")

