"""Plotly figures for ``isrlab report``: partition timelines, the space-time diagram, charts.

Design notes.

* Size. plotly.js is inlined once per report (~4.8 MB), so the figures' data must stay
  small: every figure uses the empty ``"none"`` template (the default one adds ~10 kB of
  JSON per figure), times are seconds rounded to the microsecond or millisecond, and LEO/HW
  series are step functions given by their change points, downsampled per line with M4
  (first, min, max, last point per time bucket, so drops stay visible) under one point
  budget shared by all lines of the report (:func:`allocate`, water-filling: short lines keep
  every point).
* Honesty. The space-time diagram is built only from traced events; the trace does not log
  delivered messages, so each arrow joins two traced events the protocol links causally
  (a send and the leader's append, the append and a follower's LEO move, ...). Drops
  (``msg_drop``) are the only messages traced as such and are drawn as broken arrows;
  frames a TCP connection held through a cut (``tcp_stall`` to ``tcp_resume``, or to the
  ``connection_failed``/``connection_close`` that discarded them) are dotted arrows from
  the stall to the delivery, so a late request shows why it was late. The caption says so.
* Shapes with their real extent. Faults shade the time they were on; operations
  (``reading.OPERATIONS``) have a lane of their own and last as long as their events say
  (a reassignment until it completes, a controlled shutdown until the broker is back); an
  instantaneous step is a mark and a dotted vertical, never a band; a kind's overlapping
  intervals shade once (their union), so shading never stacks darker. A replica's LEO and HW
  lines end where its log was deleted (``reading.GONE``).
* Labels never overlap. Text placed along the time axis (election labels, fault labels, the
  message diagram's time ticks) is laid out by :func:`place_labels` for a plot area of
  :data:`NOMINAL_PLOT_PX` at least (the report's width on a 1280-pixel screen); on a
  narrower page the page script hides what would still collide (``markup``). Labels are
  horizontal, so what the browser measures is what the reader sees.
* The clock is the trace's (``reading.Clock``): simulated seconds, or the logs' wall clock
  (UTC) for a trace imported from Kafka's logs.
* Pure functions of the collected data: no I/O here, deterministic output for a trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from report.reading import GONE, Clock, Interval, PartitionView, StepSeries, TraceView

Event = dict[str, Any]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf")
FAULT_COLORS = {"crash": "#d62728", "power_loss": "#8c1a1a", "pause": "#ff7f0e",
                "isolate": "#9467bd", "partition": "#9467bd", "cut": "#9467bd",
                "delay": "#bcbd22", "drop": "#17becf", "partition_reject": "#9467bd"}
OPERATION_COLORS = {"reassign": "#138d75", "cancel_reassign": "#b9770e",
                    "controlled_shutdown": "#5d6d7e", "preferred_election": "#2e86c1",
                    "decommission": "#7d3c98", "add_broker": "#239b56",
                    "create_topic": "#7f8c8d", "add_partitions": "#7f8c8d"}
FONT = dict(family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size=12)
#: The narrowest plot area (pixels) labels are laid out for: the report's figures on a
#: 1280-pixel-wide screen; narrower, the page script hides what still collides.
NOMINAL_PLOT_PX = 1000.0
#: Horizontal room kept between two labels (pixels).
LABEL_PAD_PX = 6.0


def text_px(text: str, size: float = 12.0) -> float:
    """A generous estimate of a label's width in pixels (system-ui; digits are ~0.56 em)."""
    return len(text) * size * 0.62 + 4


def place_labels(labels: Sequence[tuple[float, float]], rows: int = 1,
                 pad: float = LABEL_PAD_PX) -> list[int | None]:
    """Greedy label layout along one axis: ``labels`` are (centre, width) in pixels, in
    order of priority; each is given the first of ``rows`` rows where it overlaps no label
    already placed, or None (left out)."""
    placed: list[list[tuple[float, float]]] = [[] for _ in range(rows)]
    out: list[int | None] = []
    for centre, width in labels:
        lo, hi = centre - width / 2, centre + width / 2
        row = next((r for r in range(rows)
                    if all(hi + pad <= a or b + pad <= lo for a, b in placed[r])), None)
        if row is not None:
            placed[row].append((lo, hi))
        out.append(row)
    return out


def _base_layout(fig: go.Figure, height: int) -> None:
    fig.update_layout(template="none", height=height, font=FONT, hovermode="closest",
                      margin=dict(l=70, r=20, t=36, b=40), plot_bgcolor="#ffffff",
                      legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0,
                                  font=dict(size=11)))


# --------------------------------------------------------------------------- downsampling


def allocate(sizes: Sequence[int], budget: int, floor: int = 8) -> list[int]:
    """Share ``budget`` points among lines of ``sizes`` points (water-filling)."""
    caps = [0] * len(sizes)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    left = max(budget, floor * len(sizes))
    for rank, i in enumerate(order):
        share = max(floor, left // (len(sizes) - rank))
        caps[i] = min(sizes[i], share)
        left -= caps[i]
    return caps


def downsample(ts: Sequence[int], val: Sequence[int], cap: int) -> tuple[list[int], list[int]]:
    """At most ~``cap`` change points of a step series, keeping each bucket's extremes (M4)."""
    n = len(ts)
    if n <= cap:
        return list(ts), list(val)
    buckets = max(1, cap // 4)
    t0, span = ts[0], max(1, ts[-1] - ts[0])
    keep: list[int] = []
    start = 0
    while start < n:
        b = min(buckets - 1, (ts[start] - t0) * buckets // span)
        end = start
        lo = hi = start
        while end < n and min(buckets - 1, (ts[end] - t0) * buckets // span) == b:
            if val[end] < val[lo]:
                lo = end
            if val[end] > val[hi]:
                hi = end
            end += 1
        gone = [i for i in range(start, end) if val[i] == GONE]   # a deleted log: kept
        keep.extend(sorted({start, lo, hi, end - 1, *gone}))
        start = end
    return [ts[i] for i in keep], [val[i] for i in keep]


# --------------------------------------------------------------------------- timelines


def _member_spans(changes: list[tuple[int, list[int]]], end_us: int
                  ) -> dict[int, list[tuple[int, int]]]:
    """Per member, the time spans it belongs to a set that ``changes`` (time, members after
    the change) define, each change lasting until the next one (the last: ``end_us``)."""
    out: dict[int, list[tuple[int, int]]] = {}
    changes = sorted(changes, key=lambda c: c[0])
    for i, (ts, members) in enumerate(changes):
        until = changes[i + 1][0] if i + 1 < len(changes) else end_us
        if until <= ts:
            continue
        for r in members:
            spans = out.setdefault(r, [])
            if spans and spans[-1][1] == ts:
                spans[-1] = (spans[-1][0], until)
            else:
                spans.append((ts, until))
    return out


def _isr_intervals(pv: PartitionView, end_us: int) -> dict[int, list[tuple[int, int]]]:
    return _member_spans([(ts, members) for ts, members, _ in pv.isr], end_us)


def _ar_intervals(pv: PartitionView, end_us: int
                  ) -> tuple[dict[int, list[tuple[int, int]]], ...]:
    """Per replica, when it was in the replica list (AR), being added, being removed."""
    return (_member_spans([(ts, ar) for ts, ar, _, _ in pv.ar], end_us),
            _member_spans([(ts, adding) for ts, _, adding, _ in pv.ar], end_us),
            _member_spans([(ts, removing) for ts, _, _, removing in pv.ar], end_us))


def _leader_intervals(pv: PartitionView, end_us: int) -> dict[int, list[tuple[int, int]]]:
    out: dict[int, list[tuple[int, int]]] = {}
    stops = sorted([(e.ts_us, e.leader) for e in pv.elections] + [(t, None) for t in pv.offline],
                   key=lambda x: x[0])
    for i, (ts, leader) in enumerate(stops):
        until = stops[i + 1][0] if i + 1 < len(stops) else end_us
        if leader is not None and until > ts:
            out.setdefault(leader, []).append((ts, until))
    return out


def _gapped(spans: list[tuple[int, int]], y: Any, clock: Clock | None = None
            ) -> tuple[list[float | str | None], list[Any]]:
    x = (clock or Clock()).x
    xs: list[float | str | None] = []
    ys: list[Any] = []
    for a, b in spans:
        xs += [x(a), x(b), None]
        ys += [y, y, None]
    return xs, ys


def series_sizes(view: TraceView) -> list[int]:
    """Point counts of every LEO/HW line, in the order :func:`timeline_figure` draws them."""
    sizes: list[int] = []
    for pv in view.partitions.values():
        for r in pv.replicas():
            sizes.append(len(pv.leo.get(r, StepSeries())))
            sizes.append(len(pv.hw.get(r, StepSeries())))
    return sizes


def _until_deleted(ts: Sequence[int], val: Sequence[int], end: int, clock: Clock
                   ) -> tuple[list[float | str | None], list[int | None]]:
    """A step line's points, each life of the log ending where it was deleted (``GONE``:
    the last value is carried to the deletion, then the line breaks) and the last one
    carried to ``end``."""
    xs: list[float | str | None] = []
    ys: list[int | None] = []
    prev: int | None = None
    for t, v in zip(ts, val, strict=True):
        if v == GONE:
            if prev is not None:
                xs += [clock.x(t), None]
                ys += [prev, None]
            prev = None
            continue
        xs.append(clock.x(t))
        ys.append(v)
        prev = v
    if prev is not None and ts:
        xs.append(clock.x(max(end, ts[-1])))
        ys.append(prev)
    return xs, ys


def _union(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans merged: a kind's shading is drawn once where its intervals meet."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _pack(intervals: Sequence[Interval], end: int, rows: int = 3) -> list[int]:
    """A sub-row per interval, so that intervals in one row do not overlap in time (with a
    1 % margin; the least busy row when every row is taken)."""
    margin = max(1, end // 100)
    last = [-(1 << 62)] * rows
    out: list[int] = []
    for iv in intervals:
        b = iv.end_us if iv.end_us is not None else end
        row = next((r for r in range(rows) if last[r] + margin <= iv.start_us),
                   min(range(rows), key=lambda r: last[r]))
        last[row] = max(last[row], b)
        out.append(row)
    return out


def interval_label(iv: Interval, clock: Clock, end: int) -> str:
    """``kind targets: from → to (duration); detail`` for a fault or an operation."""
    what = f"{iv.kind} {', '.join(iv.targets)}".strip()
    if iv.instant:
        when = f"at {clock.text(iv.start_us)}"
    elif iv.end_us is None:
        when = (f"{clock.text(iv.start_us)} → end of trace "
                f"({(end - iv.start_us) / 1e6:,.3f} s or more)")
    else:
        when = (f"{clock.text(iv.start_us)} → {clock.text(iv.end_us)} "
                f"({_duration(iv.end_us - iv.start_us)})")
    return f"{what}: {when}" + (f"; {iv.detail}" if iv.detail else "")


def _duration(us: int) -> str:
    return f"{us / 1e3:,.1f} ms" if us < 1_000_000 else f"{us / 1e6:,.3f} s"


def _interval_lane(fig: go.Figure, intervals: Sequence[Interval], clock: Clock, end: int,
                   y0: float, prefix: str, colors: Mapping[str, str]) -> None:
    """One lane of row 2 (faults, or operations): a bar per interval from its start to its
    end, a diamond for an instantaneous one; one legend entry per kind."""
    rows = _pack(intervals, end)
    by_kind: dict[str, tuple[list[float | str | None], list[float | None], list[str]]] = {}
    points: dict[str, tuple[list[float | str], list[float], list[str]]] = {}
    for iv, row in zip(intervals, rows, strict=True):
        yv = y0 - 0.3 * row
        label = interval_label(iv, clock, end)
        if iv.instant:
            px, py, pt = points.setdefault(iv.kind, ([], [], []))
            px.append(clock.x(iv.start_us))
            py.append(yv)
            pt.append(label)
            continue
        xs_k, ys_k, tx_k = by_kind.setdefault(iv.kind, ([], [], []))
        xs_k += [clock.x(iv.start_us), clock.x(iv.end_us if iv.end_us is not None else end),
                 None]
        ys_k += [yv, yv, None]
        tx_k += [label, label, ""]
    for kind in sorted(by_kind.keys() | points.keys()):
        color = colors.get(kind, "#7f7f7f")
        if kind in by_kind:
            xs_k, ys_k, tx_k = by_kind[kind]
            fig.add_trace(go.Scatter(x=xs_k, y=ys_k, mode="lines+markers", text=tx_k,
                                     line=dict(color=color, width=5), marker=dict(size=5),
                                     name=f"{prefix}: {kind}", legendgroup=f"{prefix}-{kind}",
                                     hovertemplate="%{text}<extra></extra>"), row=2, col=1)
        if kind in points:
            px, py, pt = points[kind]
            fig.add_trace(go.Scatter(x=px, y=py, mode="markers", text=pt,
                                     marker=dict(symbol="diamond", size=9, color=color),
                                     name=f"{prefix}: {kind}", legendgroup=f"{prefix}-{kind}",
                                     showlegend=kind not in by_kind,
                                     hovertemplate="%{text}<extra></extra>"), row=2, col=1)


def _interval_shapes(intervals: Sequence[Interval], clock: Clock, end: int,
                     colors: Mapping[str, str], opacity: float) -> list[dict[str, Any]]:
    """Shading over both rows: per kind, the union of its intervals; a dotted vertical at
    each instantaneous one."""
    shapes: list[dict[str, Any]] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    for iv in intervals:
        color = colors.get(iv.kind, "#7f7f7f")
        if iv.instant:
            x = clock.x(iv.start_us)
            shapes.append(dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
                               line=dict(color=color, width=1.2, dash="dot")))
        else:
            spans.setdefault(iv.kind, []).append(
                (iv.start_us, iv.end_us if iv.end_us is not None else end))
    for kind in sorted(spans):
        for a, b in _union(spans[kind]):
            shapes.append(dict(type="rect", xref="x", yref="paper", x0=clock.x(a),
                               x1=clock.x(b), y0=0, y1=1, fillcolor=colors.get(kind, "#7f7f7f"),
                               opacity=opacity, line=dict(width=0), layer="below"))
    return shapes


def timeline_figure(view: TraceView, pv: PartitionView, caps: Sequence[int],
                    anomalies: Sequence[dict[str, Any]]) -> go.Figure:
    """LEO/HW per replica over time (each ending where the replica's log was deleted), AR /
    ISR / OSR bands (with the replicas a reassignment adds and removes), leader epochs,
    faults, operations with their real durations, and anomaly marks."""
    end = view.end_us
    clock = view.clock
    x = clock.x
    replicas = pv.replicas()
    color = {r: PALETTE[i % len(PALETTE)] for i, r in enumerate(replicas)}
    lane = {r: float(len(replicas) - i) for i, r in enumerate(replicas)}
    ops = [op for op in view.operations if op.concerns(pv.name)]
    fault_y, op_y = -0.1, -1.1
    bottom = op_y - 0.75 if ops else -0.85
    # row 2 gets ~24 px per lane (brokers, faults, operations), row 1 280 px
    lanes_px = 24.0 * (len(replicas) + 0.5 - bottom)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True,
                        row_heights=[280.0 / (280 + lanes_px), lanes_px / (280 + lanes_px)],
                        vertical_spacing=0.05)
    k = 0
    for r in replicas:
        for what, table, dash in (("LEO", pv.leo, "solid"), ("HW", pv.hw, "dot")):
            s = table.get(r, StepSeries())
            kept_ts, kept = downsample(s.ts, s.val, caps[k] if k < len(caps) else 200)
            k += 1
            xs, ys = _until_deleted(kept_ts, kept, end, clock)
            if not xs:
                continue
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", line_shape="hv",
                line=dict(color=color[r], dash=dash, width=1.6 if what == "LEO" else 2.2),
                name=f"{what} broker {r}", legendgroup=f"r{r}",
                hovertemplate=f"{what} broker {r}: %{{y}} at %{{x}}<extra></extra>"),
                row=1, col=1)
    if pv.deleted:
        fig.add_trace(go.Scatter(
            x=[x(t) for t, _ in pv.deleted],
            y=[_last_before(pv.leo.get(b, StepSeries()), t) for t, b in pv.deleted],
            mode="markers", marker=dict(symbol="line-ns-open", size=12, line=dict(width=2),
                                        color=[color.get(b, "#333") for _, b in pv.deleted]),
            name="log deleted (replica removed)",
            text=[f"broker {b} deleted its log of {pv.name} at {clock.text(t)}"
                  for t, b in pv.deleted],
            hovertemplate="%{text}<extra></extra>"), row=1, col=1)
    if pv.truncations:
        fig.add_trace(go.Scatter(
            x=[x(t[0]) for t in pv.truncations], y=[t[3] for t in pv.truncations],
            mode="markers", marker=dict(symbol="triangle-down", size=9,
                                        color=[color.get(t[1], "#333") for t in pv.truncations]),
            name="log truncation",
            text=[f"broker {t[1]} truncated {t[2]} → {t[3]} ({t[4]}) at {clock.text(t[0])}"
                  for t in pv.truncations],
            hovertemplate="%{text}<extra></extra>"), row=1, col=1)
    marks = [a for a in anomalies if a.get("_ts_us") is not None]
    if marks:
        fig.add_trace(go.Scatter(
            x=[x(a["_ts_us"]) for a in marks],
            y=[a["offset"] if type(a.get("offset")) is int else 0 for a in marks],
            mode="markers", marker=dict(symbol="x", size=10, color="#b00020",
                                        line=dict(width=1, color="#b00020")),
            name="anomaly (example)", text=[a["_label"] for a in marks],
            hovertemplate="%{text}<extra></extra>"), row=1, col=1)
    # AR (a thin band: where it shows without the ISR band, the replica is in the OSR),
    # replicas being added (green) and removed (red) by a reassignment; ISR bands,
    # leadership and down time (row 2)
    in_ar, adding, removing = _ar_intervals(pv, end)
    for spans_of, name, colour, width, offset in (
            (in_ar, "in AR (OSR outside the ISR band)", "#9e9e9e", 3, 0.0),
            (adding, "being added (reassignment)", "#1b7f3a", 3, 0.22),
            (removing, "being removed (reassignment)", "#b00020", 3, -0.22)):
        bx: list[float | str | None] = []
        by: list[Any] = []
        for r in replicas:
            gx, gy = _gapped(spans_of.get(r, []), lane[r] + offset, clock)
            bx += gx
            by += gy
        if bx:
            fig.add_trace(go.Scatter(x=bx, y=by, mode="lines",
                                     line=dict(color=colour, width=width), name=name,
                                     hoverinfo="skip"), row=2, col=1)
    isr = _isr_intervals(pv, end)
    leaders = _leader_intervals(pv, end)
    for r in replicas:
        gx, gy = _gapped(isr.get(r, []), lane[r], clock)
        fig.add_trace(go.Scatter(x=gx, y=gy, mode="lines", line=dict(color=color[r], width=11),
                                 opacity=0.55, name=f"in ISR broker {r}", legendgroup=f"r{r}",
                                 showlegend=False, hoverinfo="skip"), row=2, col=1)
    lx: list[float | str | None] = []
    ly: list[Any] = []
    for r, spans in leaders.items():
        if r in lane:
            gx, gy = _gapped(spans, lane[r], clock)
            lx += gx
            ly += gy
    if lx:
        fig.add_trace(go.Scatter(x=lx, y=ly, mode="lines", line=dict(color="#111", width=3),
                                 name="leader", hoverinfo="skip"), row=2, col=1)
    dx: list[float | str | None] = []
    dy: list[Any] = []
    for iv in view.node_down:
        for node in iv.targets:
            if node.startswith("broker-") and node[7:].isdigit() and int(node[7:]) in lane:
                gx, gy = _gapped([(iv.start_us, iv.end_us or end)], lane[int(node[7:])], clock)
                dx += gx
                dy += gy
    if dx:
        fig.add_trace(go.Scatter(x=dx, y=dy, mode="lines",
                                 line=dict(color="#555", width=3, dash="dot"),
                                 name="broker down / paused", hoverinfo="skip"), row=2, col=1)
    elections = pv.elections[:400]
    if elections:   # every election can be hovered; the labels that fit are written on top
        fig.add_trace(go.Scatter(
            x=[x(e.ts_us) for e in elections], y=[len(replicas) + 0.3] * len(elections),
            mode="markers", name="leader election",
            marker=dict(symbol="triangle-down", size=7,
                        color=["#b00020" if e.kind == "unclean" else "#444" for e in elections]),
            text=[f"{e.kind} election at {clock.text(e.ts_us)}: epoch {e.epoch}, leader "
                  f"broker {e.leader}, ISR {e.isr}" for e in elections],
            hovertemplate="%{text}<extra></extra>"), row=2, col=1)
    _interval_lane(fig, view.faults, clock, end, fault_y, "fault", FAULT_COLORS)
    _interval_lane(fig, ops, clock, end, op_y, "operation", OPERATION_COLORS)
    shapes = _interval_shapes(view.faults, clock, end, FAULT_COLORS, 0.10)
    shapes += _interval_shapes(ops, clock, end, OPERATION_COLORS, 0.07)
    for e in elections[:200]:
        shapes.append(dict(type="line", xref="x", yref="paper", x0=x(e.ts_us), x1=x(e.ts_us),
                           y0=0, y1=1, line=dict(color="#b00020" if e.kind == "unclean"
                                                 else "#444", width=1, dash="dash")))
    phases = [(ts, phase) for ts, phase in view.phases if 0 < ts < end]
    for ts, _phase in phases:
        shapes.append(dict(type="line", xref="x", yref="paper", x0=x(ts), x1=x(ts), y0=0,
                           y1=1, line=dict(color="#1b7f3a", width=1.5)))
    fig.update_layout(shapes=shapes)
    annotations = [dict(x=x(ts), y=0.5, xref="x", yref="paper", text=f"{phase} phase →",
                        showarrow=False, xanchor="left", font=dict(size=10, color="#1b7f3a"))
                   for ts, phase in phases]
    annotations += _election_labels(elections, end, clock)
    _base_layout(fig, int(100 + (280 + lanes_px) / 0.95))
    fig.update_layout(annotations=annotations, margin=dict(t=60),
                      legend=dict(y=-70 / (280 + lanes_px), yanchor="top"))
    fig.update_yaxes(title_text="offset", row=1, col=1, rangemode="tozero")
    tickvals, ticktext = [*lane.values(), fault_y - 0.3], [f"broker {r}" for r in lane]
    ticktext.append("faults")
    if ops:
        tickvals.append(op_y - 0.3)
        ticktext.append("operations")
    fig.update_yaxes(tickmode="array", tickvals=tickvals, ticktext=ticktext, zeroline=False,
                     range=[bottom, len(replicas) + 0.5], showgrid=False, row=2, col=1)
    span = [x(0), x(end)]
    fig.update_xaxes(range=span, row=2, col=1, title_text=clock.axis_title)
    fig.update_xaxes(range=span, row=1, col=1)
    if clock.wall:
        fig.update_xaxes(type="date")
    return fig


def _last_before(s: StepSeries, ts: int) -> int:
    """The series' last value (not ``GONE``) at or before ``ts``."""
    out = 0
    for t, v in zip(s.ts, s.val, strict=True):
        if t > ts:
            break
        if v != GONE:
            out = v
    return out


def _election_labels(elections: Sequence[Any], end: int, clock: Clock
                     ) -> list[dict[str, Any]]:
    """``e<epoch>→b<leader>`` above the plot, horizontal, in two rows, only where a label
    fits (:func:`place_labels`); the marker below each election carries it all on hover."""
    px = NOMINAL_PLOT_PX / max(1, end)
    texts = [f"e{e.epoch}→b{e.leader}" + (f" {e.kind}" if e.kind not in ("clean", "preferred")
                                          else "") for e in elections]
    # centred on its election; at either end of the axis, kept inside the plot
    anchors = [_anchor(e.ts_us * px, text_px(t, 10)) for e, t in zip(elections, texts,
                                                                       strict=True)]
    rows = place_labels([(c, text_px(t, 10)) for (c, _), t in zip(anchors, texts, strict=True)],
                        rows=2)
    return [dict(x=clock.x(e.ts_us), y=1.0, xref="x", yref="paper", yanchor="bottom",
                 xanchor=side, yshift=13 * row, text=t, showarrow=False,
                 font=dict(size=10, color="#444"))
            for e, t, (_, side), row in zip(elections, texts, anchors, rows, strict=True)
            if row is not None]


def _anchor(at_px: float, width: float) -> tuple[float, str]:
    """(centre, xanchor) of a label at ``at_px`` that stays inside the nominal plot."""
    if at_px - width / 2 < 0:
        return at_px + width / 2, "left"
    if at_px + width / 2 > NOMINAL_PLOT_PX:
        return at_px - width / 2, "right"
    return at_px, "center"


# --------------------------------------------------------------------------- space-time


@dataclass
class SpaceTime:
    lanes: list[str]
    #: (x0_us, lane0, x1_us, lane1, label, style) style: "chain", "focus", "control", "read"
    arrows: list[tuple[int, str, int, str, str, str]] = field(default_factory=list)
    #: (ts_us, src, dst, label) for msg_drop
    drops: list[tuple[int, str, str, str]] = field(default_factory=list)
    #: (stall_us, src, end_us, dst, label): a connection held by TCP from its stall to its
    #: resumption (or its failure)
    held: list[tuple[int, str, int, str, str]] = field(default_factory=list)
    #: (ts_us, lane, symbol, label)
    marks: list[tuple[int, str, str, str]] = field(default_factory=list)
    #: (start_us, end_us, label) fault intervals overlapping the window
    faults: list[tuple[int, int, str]] = field(default_factory=list)
    start_us: int = 0
    end_us: int = 0
    topic: str = ""
    partition: int = -1


def _covers(ev: Event, o: int) -> bool:
    old, new = ev.get("old"), ev.get("new")
    return type(old) is int and type(new) is int and old <= o < new


def _lane_key(node: str) -> tuple[int, int, str]:
    kind = 0 if node.startswith("producer") else 1 if node.startswith("broker") else (
        2 if node == "controller" else 3)
    digits = "".join(ch for ch in node if ch.isdigit())
    return (kind, int(digits) if digits and kind == 1 else 0, node)


def build_spacetime(events: Sequence[Event], topic: str, partition: int, focus: dict[str, Any],
                    leader_at: Callable[[int], int | None], max_records: int = 5) -> SpaceTime:
    """Arrows between causally linked traced events of one partition around ``focus``."""
    t0 = int(focus["_ts_us"])
    mine = [e for e in events if e.get("topic") == topic and e.get("partition") == partition]
    sends: dict[str, Event] = {}
    acks: dict[str, Event] = {}
    for e in mine:
        v = e.get("value")
        if e.get("event") == "produce_send" and isinstance(v, str):
            sends.setdefault(v, e)
        elif e.get("event") == "produce_ack" and isinstance(v, str):
            acks.setdefault(v, e)
    records: list[tuple[str, int]] = []
    fv, fo = focus.get("value"), focus.get("offset")
    if isinstance(fv, str) and type(fo) is int:
        records.append((fv, fo))
    pool = sorted(((v, int(a["offset"])) for v, a in acks.items()
                   if type(a.get("offset")) is int and v != fv),
                  key=lambda r: (abs(r[1] - fo) if type(fo) is int
                                 else abs(int(acks[r[0]]["ts_us"]) - t0), r[1]))
    records += pool[: max(0, max_records - len(records))]
    st = SpaceTime(lanes=[], topic=topic, partition=partition)
    updates = [e for e in mine if e.get("event") in ("leo_update", "hw_update")]
    for v, o in records:
        style = "focus" if v == fv else "chain"
        send, ack = sends.get(v), acks.get(v)
        if ack is not None:  # the append that was acknowledged: the last one before the ack
            leader = leader_at(int(ack["ts_us"]))
            append = next((e for e in reversed(updates) if e["event"] == "leo_update"
                           and e["ts_us"] <= ack["ts_us"] and _covers(e, o)
                           and (leader is None or e.get("replica") == leader)), None)
        else:
            start = int(send["ts_us"]) if send else t0
            leader = leader_at(start)
            append = next((e for e in updates if e["event"] == "leo_update"
                           and e["ts_us"] >= start and _covers(e, o)
                           and (leader is None or e.get("replica") == leader)), None)
        if append is None and ack is not None:  # appended before the window: HW → ack only
            lhw = next((e for e in reversed(updates) if e["event"] == "hw_update"
                        and e["ts_us"] <= ack["ts_us"] and _covers(e, o)
                        and (leader is None or e.get("replica") == leader)), None)
            if lhw is not None:
                st.arrows.append((int(lhw["ts_us"]), str(lhw["node"]), int(ack["ts_us"]),
                                  str(ack["node"]), f"HW {lhw.get('old')} → {lhw.get('new')} "
                                  f"({lhw.get('reason')}): produce response {v} @ {o}", style))
                st.marks.append((int(lhw["ts_us"]), str(lhw["node"]), "diamond",
                                 f"{v} @ {o} was appended before this window; HW "
                                 f"{lhw.get('old')} → {lhw.get('new')} ({lhw.get('reason')})"))
            continue
        if append is None:
            continue
        if send is not None and send["ts_us"] > append["ts_us"]:
            send = None
        if send is None and ack is not None:
            st.marks.append((int(append["ts_us"]), str(ack["node"]), "triangle-right",
                             f"{v}: its produce_send is before this window (first sent "
                             f"earlier, appended after retries)"))
        lnode, lrep, ta = str(append["node"]), append.get("replica"), int(append["ts_us"])
        if send:
            st.arrows.append((int(send["ts_us"]), str(send["node"]), ta, lnode,
                              f"produce {v} → appended at {o}", style))
        follower_leo: list[Event] = []
        seen: set[Any] = {lrep}
        for e in updates:
            if (e["event"] == "leo_update" and e["ts_us"] >= ta and e.get("replica") not in seen
                    and _covers(e, o)):
                seen.add(e.get("replica"))
                follower_leo.append(e)
                st.arrows.append((ta, lnode, int(e["ts_us"]), str(e["node"]),
                                  f"fetch response carries offset {o}", style))
        lhw = next((e for e in updates if e["event"] == "hw_update" and e["ts_us"] >= ta
                    and e.get("replica") == lrep and _covers(e, o)), None)
        if lhw is not None:
            th = int(lhw["ts_us"])
            moved = [f for f in follower_leo if f["ts_us"] <= th]
            if moved and lhw.get("reason") == "follower_fetch":
                f = moved[-1]
                st.arrows.append((int(f["ts_us"]), str(f["node"]), th, lnode,
                                  f"next fetch reports LEO {f.get('new')}: HW → {lhw.get('new')}",
                                  style))
            seen = {lrep}
            for e in updates:
                if (e["event"] == "hw_update" and e["ts_us"] >= th and
                        e.get("replica") not in seen and _covers(e, o)):
                    seen.add(e.get("replica"))
                    st.arrows.append((th, lnode, int(e["ts_us"]), str(e["node"]),
                                      f"fetch response: HW {e.get('new')}", style))
        if ack is not None:
            src_t = int(lhw["ts_us"]) if lhw is not None and lhw["ts_us"] <= ack["ts_us"] else ta
            st.arrows.append((src_t, lnode, int(ack["ts_us"]), str(ack["node"]),
                              f"produce response {v} @ {o} (acks={ack.get('acks')})", style))
    times = [a[0] for a in st.arrows] + [a[2] for a in st.arrows] + [t0]
    lo, hi = min(times), max(times)
    pad = max(2_000, (hi - lo) // 8)
    st.start_us, st.end_us = max(0, lo - pad), hi + pad

    def inside(e: Event) -> bool:
        return st.start_us <= int(e["ts_us"]) <= st.end_us

    # consumes near the focus (the focus itself first when it is a read)
    consumes = [e for e in mine if e.get("event") == "consume"
                and (e.get("seq") == focus.get("seq") or inside(e))]
    consumes.sort(key=lambda e: (e.get("seq") != focus.get("seq"), abs(int(e["ts_us"]) - t0)))
    for e in consumes[:max_records]:
        tc, hw = int(e["ts_us"]), e.get("hw")
        leader = leader_at(tc)
        src = next((u for u in reversed(updates) if u["event"] == "hw_update"
                    and u["ts_us"] <= tc and u.get("new") == hw and u.get("role") == "leader"),
                   None)
        src_node = str(src["node"]) if src else f"broker-{leader}" if leader else "?"
        src_t = int(src["ts_us"]) if src else tc
        style = "focus" if e.get("seq") == focus.get("seq") else "read"
        st.arrows.append((src_t, src_node, tc, str(e["node"]),
                          f"read {e.get('value')} @ {e.get('offset')} under HW {hw}", style))
    # controller decisions reaching the replicas, truncations
    for e in mine:
        if e.get("event") == "leader_elected" and inside(e):
            ep = e.get("leader_epoch")
            for b in mine:
                if (b.get("event") in ("become_leader", "become_follower")
                        and b.get("leader_epoch") == ep and b["ts_us"] >= e["ts_us"]):
                    st.arrows.append((int(e["ts_us"]), str(e["node"]), int(b["ts_us"]),
                                      str(b["node"]),
                                      f"{e.get('election')} election: leader {e.get('leader')} "
                                      f"epoch {ep}", "control"))
        elif e.get("event") == "isr_change" and inside(e):
            st.marks.append((int(e["ts_us"]), str(e["node"]), "star",
                             f"ISR {e.get('old')} → {e.get('new')} ({e.get('reason')})"))
        elif e.get("event") == "log_truncate" and inside(e):
            st.marks.append((int(e["ts_us"]), str(e["node"]), "triangle-down",
                             f"truncate {e.get('old_leo')} → {e.get('new_leo')} "
                             f"({e.get('reason')})"))
    times = [a[0] for a in st.arrows] + [a[2] for a in st.arrows] + [t0]
    st.start_us = max(0, min(st.start_us, min(times) - pad))
    st.end_us = max(st.end_us, max(times) + pad)
    part_actor = f"{topic}-{partition}"
    stalls: dict[tuple[str, str], int] = {}
    for e in events:
        ts = int(e["ts_us"])
        name = e.get("event")
        if name in ("tcp_stall", "tcp_resume", "connection_failed"):
            key = (f"{e.get('node')}/{e.get('actor')}", str(e.get("dst", "?")))
            if name == "tcp_stall":
                stalls.setdefault(key, ts)
                continue
            t0 = stalls.pop(key, -1)
            if t0 < 0 or ts < st.start_us or t0 > st.end_us:
                continue
            if any(k in key[0] + key[1] for k in (part_actor, "producer", "controller")):
                what = (f"held {(ts - t0) // 1000} ms, {e.get('retransmits')} "
                        f"retransmission(s), {e.get('frames')} frame(s) delivered"
                        if name == "tcp_resume" else
                        f"connection failed ({e.get('reason')}) after {(ts - t0) // 1000} ms")
                st.held.append((t0, key[0].split("/")[0], ts, key[1].split("/")[0],
                                f"{what}: {key[0]} → {key[1]}"))
            continue
        if not st.start_us <= ts <= st.end_us:
            continue
        if name == "msg_drop":
            s_end, d_end = str(e.get("src", "?")), str(e.get("dst", "?"))
            if any(k in s_end + d_end for k in (part_actor, "producer", "controller")):
                st.drops.append((ts, s_end.split("/")[0], d_end.split("/")[0],
                                 f"{e.get('msg')} dropped ({e.get('reason')}): {s_end} → {d_end}"))
        elif name in ("node_crash", "node_restart", "node_pause", "node_resume"):
            sym = {"node_crash": "x", "node_restart": "circle", "node_pause": "square",
                   "node_resume": "square-open"}[name]
            st.marks.append((ts, str(e.get("node")), sym,
                             name.replace("_", " ") + (f" ({e.get('kind')})"
                                                       if e.get("kind") else "")))
    st.drops = st.drops[:60]
    st.held = st.held[:60]
    lanes = {a[1] for a in st.arrows} | {a[3] for a in st.arrows} | {m[1] for m in st.marks}
    lanes |= {d[1] for d in st.drops} | {d[2] for d in st.drops}
    lanes |= {h[1] for h in st.held} | {h[3] for h in st.held}
    lanes.discard("?")
    st.lanes = sorted(lanes, key=_lane_key)
    return st


STYLE = {"focus": ("#b00020", 2.2), "chain": ("#1f77b4", 1.3), "read": ("#2ca02c", 1.3),
         "control": ("#7f7f7f", 1.0)}


def spacetime_figure(st: SpaceTime, view: TraceView) -> go.Figure:
    """Lanes = nodes (rows), time left to right (ms), arrows = inferred causal links."""
    y = {lane: i for i, lane in enumerate(reversed(st.lanes))}
    base = st.start_us

    def ms(t: int) -> float:
        return round((t - base) / 1e3, 3)

    fig = go.Figure()
    annotations: list[dict[str, Any]] = []
    hover_x: list[float] = []
    hover_y: list[float] = []
    hover_t: list[str] = []
    for x0, l0, x1, l1, label, style in st.arrows:
        if l0 not in y or l1 not in y:
            continue
        color, width = STYLE[style]
        annotations.append(dict(x=ms(x1), y=y[l1], ax=ms(x0), ay=y[l0], xref="x", yref="y",
                                axref="x", ayref="y", showarrow=True, arrowhead=2,
                                arrowsize=1, arrowwidth=width, arrowcolor=color, text=""))
        hover_x.append((ms(x0) + ms(x1)) / 2)
        hover_y.append((y[l0] + y[l1]) / 2)
        hover_t.append(f"{label}<br>{l0} @ {ms(x0)} ms → {l1} @ {ms(x1)} ms")
    dxs: list[float | None] = []
    dys: list[float | None] = []
    ends_x: list[float] = []
    ends_y: list[float] = []
    drop_t: list[str] = []
    span = max(1.0, ms(st.end_us))
    for ts, src, dst, label in st.drops:
        if src not in y or dst not in y:
            continue
        fx0, fy0 = ms(ts), float(y[src])
        fy1 = fy0 + (y[dst] - fy0) * 0.45
        fx1 = fx0 + span * 0.012
        dxs += [fx0, fx1, None]
        dys += [fy0, fy1, None]
        ends_x.append(fx1)
        ends_y.append(fy1)
        drop_t.append(label)
    if dxs:
        fig.add_trace(go.Scatter(x=dxs, y=dys, mode="lines", hoverinfo="skip", showlegend=False,
                                 line=dict(color="#e377c2", width=1.4, dash="dash")))
        fig.add_trace(go.Scatter(x=ends_x, y=ends_y, mode="markers", text=drop_t,
                                 name="message dropped (msg_drop)",
                                 marker=dict(symbol="x-thin", size=11, color="#e377c2",
                                             line=dict(width=2.5, color="#e377c2")),
                                 hovertemplate="%{text}<extra></extra>"))
    hx: list[float | None] = []
    hy: list[float | None] = []
    held_x: list[float] = []
    held_y: list[float] = []
    held_t: list[str] = []
    for t0, src, t1, dst, label in st.held:
        if src not in y or dst not in y:
            continue
        hx += [ms(max(t0, st.start_us)), ms(min(t1, st.end_us)), None]
        hy += [float(y[src]), float(y[dst]), None]
        held_x.append(ms(min(t1, st.end_us)))
        held_y.append(float(y[dst]))
        held_t.append(label)
    if hx:
        fig.add_trace(go.Scatter(x=hx, y=hy, mode="lines", hoverinfo="skip", showlegend=False,
                                 line=dict(color="#9467bd", width=1.4, dash="dot")))
        fig.add_trace(go.Scatter(x=held_x, y=held_y, mode="markers", text=held_t,
                                 name="held by TCP through a cut (tcp_stall → tcp_resume)",
                                 marker=dict(symbol="triangle-right", size=9, color="#9467bd"),
                                 hovertemplate="%{text}<extra></extra>"))
    for style, label in (("focus", "the anomaly's record"), ("chain", "nearby records"),
                         ("read", "consumer reads"), ("control", "controller → replicas")):
        if any(a[5] == style for a in st.arrows):
            color, width = STYLE[style]
            fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=label,
                                     line=dict(color=color, width=width + 1)))
    if hover_x:
        fig.add_trace(go.Scatter(x=hover_x, y=hover_y, mode="markers", text=hover_t,
                                 marker=dict(size=7, color="rgba(0,0,0,0.12)"),
                                 showlegend=False, hovertemplate="%{text}<extra></extra>"))
    marks = [m for m in st.marks if m[1] in y]
    if marks:
        fig.add_trace(go.Scatter(x=[ms(m[0]) for m in marks], y=[y[m[1]] for m in marks],
                                 mode="markers", text=[m[3] for m in marks], name="node event",
                                 marker=dict(symbol=[m[2] for m in marks], size=11,
                                             color="#111"),
                                 hovertemplate="%{text}<extra></extra>"))
    shapes: list[dict[str, Any]] = []
    for i in y.values():
        shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=i, y1=i,
                           line=dict(color="#ccc", width=1), layer="below"))
    # faults and operations in the window, shaded for their real extent; their names above
    # the plot, laid out so that none overlaps another (an instant: a dotted vertical)
    names: list[tuple[float, str]] = []
    for iv in [*view.faults, *view.operations]:
        a, b = iv.start_us, iv.end_us if iv.end_us is not None else view.end_us
        if b < st.start_us or a > st.end_us or not iv.concerns(f"{st.topic}-{st.partition}"):
            continue
        colors = OPERATION_COLORS if iv.operation else FAULT_COLORS
        color = colors.get(iv.kind, "#7f7f7f")
        if iv.instant:
            shapes.append(dict(type="line", xref="x", yref="paper", x0=ms(a), x1=ms(a), y0=0,
                               y1=1, line=dict(color=color, width=1.2, dash="dot")))
        else:
            rows = [y[t] for t in iv.targets if t in y]
            y0, y1 = (min(rows) - 0.4, max(rows) + 0.4) if rows else (-0.5, len(y) - 0.5)
            shapes.append(dict(type="rect", xref="x", yref="y", x0=ms(max(a, st.start_us)),
                               x1=ms(min(b, st.end_us)), y0=y0, y1=y1, layer="below",
                               fillcolor=color, opacity=0.12, line=dict(width=0)))
        names.append((ms(max(a, st.start_us)), f"{iv.kind} {','.join(iv.targets)}"))
    px = NOMINAL_PLOT_PX / span
    rows_of = place_labels([(x0 * px + text_px(t, 10) / 2, text_px(t, 10)) for x0, t in names],
                           rows=2)
    annotations += [dict(x=x0, y=1.0, xref="x", yref="paper", xanchor="left",
                         yanchor="bottom", yshift=13 * row, text=t, showarrow=False,
                         font=dict(size=10, color="#555"))
                    for (x0, t), row in zip(names, rows_of, strict=True) if row is not None]
    _base_layout(fig, 190 + 62 * max(2, len(y)) + 13 * min(2, len(names)))
    fig.update_layout(annotations=annotations, shapes=shapes,
                      margin=dict(l=120, t=30 + 13 * min(2, len(names)), b=110),
                      legend=dict(yref="container", y=0.0, yanchor="bottom", x=0))
    fig.update_yaxes(tickmode="array", tickvals=list(y.values()), ticktext=list(y.keys()),
                     range=[-0.6, len(y) - 0.4], showgrid=False, zeroline=False)
    where = (view.clock.text(base) if view.clock.wall
             else f"{base / 1e6:.6f} s (simulated)")
    fig.update_xaxes(range=[0, span], title_text=f"ms after {where}", zeroline=False)
    return fig


# --------------------------------------------------------------------------- campaigns


def rate_chart(knob: str, values: Sequence[str], runs: Sequence[int],
               rates: Mapping[str, Sequence[float]]) -> go.Figure:
    """Grouped bars: % of runs with each anomaly, per value of one knob."""
    fig = go.Figure()
    labels = [f"{v} (n={n})" for v, n in zip(values, runs, strict=True)]
    for i, (name, ys) in enumerate(rates.items()):
        fig.add_trace(go.Bar(x=labels, y=[round(100 * r, 1) for r in ys], name=name,
                             marker_color=PALETTE[i % len(PALETTE)],
                             hovertemplate=f"{name}: %{{y}}% of runs<extra>%{{x}}</extra>"))
    _base_layout(fig, 320)
    fig.update_layout(barmode="group", title=dict(text=knob, font=dict(size=13)),
                      margin=dict(t=60))
    fig.update_yaxes(title_text="% of runs", rangemode="tozero")
    return fig
