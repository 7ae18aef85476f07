"""The report's space-time diagram drawn from real messages, around an anomaly's causal chain.

Design. ``isrlab explain`` (``traces.explain``) gives the chain of an anomaly as steps with
their times: the acknowledgement, the truncation, the election, the overwriting append.
This module reads the message lines (``msg_send`` / ``msg_recv``, written by ``isrlab run
--trace-messages``) in a short window around each step and draws them as a space-time
diagram: one lane per node, an arrow per message from its send to its receipt (dashed and
ending in ✕ when it was dropped or never arrived), and marks for the replica events that
matter to the chain — truncations, HW and LEO moves of the partition, elections, crashes.

Only messages about the chain's partition are drawn (those naming it, a fetcher thread's
requests and responses carrying it among their parts, the controller's ``PartitionState``
for it, produce requests and responses to it); one Plotly trace per message kind, so the
legend filters by kind. Two links are worked out and written on the arrow: the fetch
response whose receipt raised a follower's HW (the ``hw_update`` with reason
``fetch_response`` at the receipt), and the ``PartitionState`` that carried an election's
leader epoch to a broker.

Windows are drawn side by side on one axis (``Windows``): a chain spans seconds, its steps
milliseconds, so the gaps between windows are cut out and marked. Tick labels carry the
simulated time in seconds, horizontal and laid out so that none overlaps another
(``report.figures.place_labels``: each window's first instant first, then its last, then
instants inside it where there is room); the legend sits under the plot, so the plot
keeps the page's width.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import plotly.graph_objects as go

from traces.explain import Chain
from traces.reader import Event, iter_events

#: half-width of the window drawn around each step of a chain
HALF_WINDOW_US: Final = 25_000
#: the gap between two windows on the drawn axis (slots)
GAP_SLOTS: Final = 3.0
#: at most this many messages are drawn (the rest are counted in the caption)
MAX_MESSAGES: Final = 600

#: replica and controller events marked on the lanes: event -> plotly symbol
MARKS: Final = {
    "log_truncate": "triangle-down", "leader_elected": "star", "become_leader": "diamond",
    "become_follower": "diamond-open", "node_crash": "x", "node_restart": "circle",
    "node_pause": "square", "node_resume": "square-open", "log_recovery": "circle-open",
    "hw_update": "line-ns-open", "leo_update": "line-ns",
}


@dataclass
class Windows:
    """Time windows ``[a, b]`` (µs) around a chain's steps, drawn side by side on one axis.

    The axis counts *instants*, not microseconds: every distinct time at which something
    drawn happens gets one slot, in order (as ShiViz and Jepsen's timelines order events
    rather than scale them), so a 1 ms network hop is as visible as a 20 ms wait, and the
    windows follow each other with a gap of ``GAP_SLOTS``. Tick labels give the simulated
    time of the first and last instant of each window.
    """

    spans: list[tuple[int, int]]
    instants: list[int] = field(default_factory=list)
    _slot: dict[int, float] = field(default_factory=dict)

    @classmethod
    def around(cls, times: Iterable[int], half: int = HALF_WINDOW_US) -> Windows:
        spans: list[tuple[int, int]] = []
        for t in sorted(set(times)):
            a, b = max(0, t - half), t + half
            if spans and a <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], b))
            else:
                spans.append((a, b))
        return cls(spans)

    def index(self, t: int) -> int | None:
        for i, (a, b) in enumerate(self.spans):
            if a <= t <= b:
                return i
        return None

    def fit(self, times: Iterable[int]) -> None:
        """Give each distinct drawn time its slot."""
        self.instants = sorted({t for t in times if self.index(t) is not None})
        self._slot = {}
        at, last = 0.0, None
        for t in self.instants:
            w = self.index(t)
            if last is not None and w != last:
                at += GAP_SLOTS
            self._slot[t] = at
            at += 1.0
            last = w

    def x(self, t: int) -> float | None:
        """The slot of ``t`` (a time the diagram was fitted to), None outside the windows."""
        return self._slot.get(t)

    @property
    def slots(self) -> float:
        """The axis's extent in slots: every instant, and a slot's margin at each end."""
        return (max(self._slot.values()) if self._slot else 0.0) + 2.0

    def ticks(self, plot_px: float | None = None) -> tuple[list[float], list[str]]:
        """Tick positions and labels that do not overlap on a plot ``plot_px`` wide
        (default ``figures.NOMINAL_PLOT_PX``): the first instant of each window first, then
        each window's last, then instants inside the windows where there is room."""
        from report.figures import NOMINAL_PLOT_PX, place_labels, text_px

        px = (plot_px or NOMINAL_PLOT_PX) / self.slots
        firsts: list[int] = []
        lasts: list[int] = []
        inner: list[int] = []
        for a, b in self.spans:
            inside = [t for t in self.instants if a <= t <= b]
            if not inside:
                continue
            firsts.append(inside[0])
            lasts.append(inside[-1])
            step = max(1, round(text_px("00.000 s") * 1.6 / px))
            inner += inside[step:-1:step]
        seen: set[str] = set()
        candidates: list[tuple[float, str]] = []
        for t in [*firsts, *lasts, *inner]:
            label = f"{t / 1e6:.3f} s"
            if label not in seen:   # the same millisecond: one label
                seen.add(label)
                candidates.append((self._slot[t], label))
        rows = place_labels([((x + 1.0) * px, text_px(label)) for x, label in candidates])
        chosen = sorted(c for c, row in zip(candidates, rows, strict=True) if row is not None)
        return [x for x, _ in chosen], [label for _, label in chosen]

    def gaps(self) -> list[tuple[float, float]]:
        """The cut time between windows, as slot ranges."""
        out: list[tuple[float, float]] = []
        for prev, nxt in zip(self.instants, self.instants[1:], strict=False):
            if self.index(prev) != self.index(nxt):
                out.append((self._slot[prev] + 0.5, self._slot[nxt] - 0.5))
        return out


@dataclass
class Arrow:
    msg_id: int
    kind: str
    src: str
    dst: str
    sent_us: int
    recv_us: int | None      # None: never received (dropped or lost)
    label: str


@dataclass
class MessageDiagram:
    topic: str
    partition: int
    windows: Windows
    lanes: list[str] = field(default_factory=list)
    arrows: list[Arrow] = field(default_factory=list)
    #: (ts_us, node, symbol, label)
    marks: list[tuple[int, str, str, str]] = field(default_factory=list)
    #: messages about the partition in the windows beyond MAX_MESSAGES
    skipped: int = 0


def has_messages(path: str) -> bool:
    """True when the trace was written with message tracing (its run_start says so)."""
    with iter_events(path, verify=False) as events:
        header = next(events, {})
    return header.get("trace_messages") is True


def _names(ev: Event, tp: str, topic: str, partition: int) -> bool:
    """Does this message line concern the partition?"""
    if ev.get("topic") == topic and ev.get("partition") == partition:
        return True
    parts = ev.get("parts")
    if isinstance(parts, list):
        return any(isinstance(p, dict) and p.get("topic") == topic
                   and p.get("partition") == partition for p in parts)
    tps = ev.get("topic_partitions")
    return isinstance(tps, list) and tp in tps


def build(path: str, chain: Chain) -> MessageDiagram:
    """The messages and replica events of ``chain``'s partition around its steps."""
    topic, partition = chain.topic, chain.partition
    tp = f"{topic}-{partition}"
    times = [s.ts_us for s in chain.steps if s.seq != 1 << 62]
    windows = Windows.around(times)
    d = MessageDiagram(topic, partition, windows)
    sends: dict[int, Event] = {}
    recvs: dict[int, int] = {}
    recv_node_last: dict[str, tuple[int, int]] = {}   # node -> (ts, msg_id) of a fetch reply
    raised: dict[int, str] = {}
    epochs: dict[int, int] = {}                      # leader epoch -> election ts
    # the chain's steps are those of its latest record: mark the appends over that offset,
    # and name the truncations and the overwriting append the chain names
    offsets = {max(o for o, _ in chain.records)} if chain.records else set()
    # (a re-run with messages has other seqs: steps are matched by time and broker)
    named = {(s.ts_us, s.text.split(" ", 1)[0]): s.text for s in chain.steps}
    end = windows.spans[-1][1] if windows.spans else 0
    with iter_events(path, verify=False) as events:
        for ev in events:
            ts = ev.get("ts_us")
            if type(ts) is not int:
                continue
            if ts > end:
                break
            if windows.index(ts) is None:
                continue
            name = ev.get("event")
            node = str(ev.get("node"))
            if name == "msg_send" and _names(ev, tp, topic, partition):
                sends[int(ev["msg_id"])] = ev
            elif name == "msg_recv" and int(ev["msg_id"]) in sends:
                recvs[int(ev["msg_id"])] = ts
                if ev.get("msg") == "ReplicaFetchResponse":
                    recv_node_last[node] = (ts, int(ev["msg_id"]))
            elif name in MARKS and (ev.get("topic") == topic and ev.get("partition") == partition
                                    or name.startswith("node_")):
                label = _mark_label(ev, offsets)
                if label is None:
                    continue
                said = (named.get((ts, node)) if name in ("leo_update", "log_truncate",
                                                          "log_recovery") else None)
                if said is not None:
                    label = ("the overwriting append: " if "overwritten by" in said else
                             "a step of the chain: ") + said
                if name == "hw_update" and ev.get("reason") == "fetch_response":
                    last = recv_node_last.get(node)
                    if last is not None and last[0] == ts:
                        raised[last[1]] = (f"raised broker-{ev.get('replica')}'s HW "
                                           f"{ev.get('old')} → {ev.get('new')}")
                if name == "leader_elected" and type(ev.get("leader_epoch")) is int:
                    epochs[int(ev["leader_epoch"])] = ts
                d.marks.append((ts, node, MARKS[str(name)], label))
    for mid, ev in sorted(sends.items()):
        if str(ev.get("src")).split("/")[0] == str(ev.get("dst")).split("/")[0]:
            continue   # between two actors of one process: not on the wire
        if len(d.arrows) >= MAX_MESSAGES:
            d.skipped += 1
            continue
        kind = str(ev.get("msg"))
        label = f"#{mid} {kind} {ev.get('src')} → {ev.get('dst')}"
        if mid in raised:
            label += f": {raised[mid]}"
        if kind == "PartitionState" and type(ev.get("leader_epoch")) is int:
            label += (f": leader broker-{ev.get('leader')}, epoch {ev.get('leader_epoch')}, "
                      f"ISR {ev.get('isr')}")
            if int(ev["leader_epoch"]) in epochs:
                label += " (the election's)"
        if ev.get("fate") != "deliver":
            label += f" — dropped ({ev.get('fate')})"
        elif mid not in recvs:
            label += " — never received"
        d.arrows.append(Arrow(mid, kind, str(ev.get("src")).split("/")[0],
                              str(ev.get("dst")).split("/")[0], int(ev["ts_us"]),
                              recvs.get(mid), label))
    lanes = {a.src for a in d.arrows} | {a.dst for a in d.arrows} | {m[1] for m in d.marks}
    d.lanes = sorted(lanes, key=_lane_key)
    windows.fit([a.sent_us for a in d.arrows] + [a.recv_us for a in d.arrows
                                                  if a.recv_us is not None]
                + [m[0] for m in d.marks])
    return d


def _mark_label(ev: Event, offsets: set[int]) -> str | None:
    name = ev.get("event")
    r = ev.get("replica")
    if name == "leo_update":
        old, new = ev.get("old"), ev.get("new")
        if type(old) is int and type(new) is int and any(old <= o < new for o in offsets):
            return f"broker-{r} appends over offset(s) of the chain: LEO {old} → {new}"
        return None
    if name == "hw_update":
        return f"broker-{r} HW {ev.get('old')} → {ev.get('new')} ({ev.get('reason')})"
    if name == "log_truncate":
        return (f"broker-{r} truncate {ev.get('old_leo')} → {ev.get('new_leo')} "
                f"({ev.get('reason')})")
    if name == "leader_elected":
        return (f"{ev.get('election')} election: leader broker-{ev.get('leader')}, epoch "
                f"{ev.get('leader_epoch')}, ISR {ev.get('isr')}")
    if name in ("become_leader", "become_follower"):
        return f"broker-{r} {str(name).replace('_', ' ')} epoch {ev.get('leader_epoch')}"
    if name == "log_recovery":
        return f"broker-{r} log recovered to LEO {ev.get('leo')}, HW {ev.get('hw')}"
    return str(name).replace("_", " ") + (f" ({ev.get('kind')})" if ev.get("kind") else "")


def _lane_key(node: str) -> tuple[int, int, str]:
    kind = 0 if node.startswith("producer") else 1 if node.startswith("broker") else (
        2 if node == "controller" else 3)
    digits = "".join(ch for ch in node if ch.isdigit())
    return (kind, int(digits) if digits and kind == 1 else 0, node)


PALETTE: Final = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22",
                  "#ff7f0e", "#7f7f7f", "#e377c2", "#d62728")


def figure(d: MessageDiagram) -> go.Figure:
    """Lanes = nodes, time left to right over the windows, an arrow per message."""
    y = {lane: i for i, lane in enumerate(reversed(d.lanes))}
    w = d.windows
    fig = go.Figure()
    kinds = sorted({a.kind for a in d.arrows})
    for k, kind in enumerate(kinds):
        xs: list[float | None] = []
        ys: list[float | None] = []
        heads_x: list[float] = []
        heads_y: list[float] = []
        text: list[str] = []
        lost_x: list[float | None] = []
        lost_y: list[float | None] = []
        for a in d.arrows:
            if a.kind != kind or a.src not in y or a.dst not in y:
                continue
            x0 = w.x(a.sent_us)
            if x0 is None:
                continue
            x1 = w.x(a.recv_us) if a.recv_us is not None else None
            if x1 is not None and w.index(a.recv_us or 0) == w.index(a.sent_us):
                xs += [x0, x1, None]
                ys += [y[a.src], y[a.dst], None]
                heads_x.append(x1)
                heads_y.append(y[a.dst])
                text.append(a.label)
            else:   # never received, or received after its window: a broken arrow
                yl = y[a.src] + (y[a.dst] - y[a.src]) * 0.45
                lost_x += [x0, x0 + 0.6, None]
                lost_y += [y[a.src], yl, None]
                heads_x.append(x0 + 0.6)
                heads_y.append(yl)
                text.append(a.label if a.recv_us is None else
                            f"{a.label} (received at {a.recv_us / 1e6:.6f} s)")
        color = PALETTE[k % len(PALETTE)]
        group = f"msg-{kind}"
        if xs:
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=kind, legendgroup=group,
                                     line=dict(color=color, width=1.3), hoverinfo="skip"))
        if lost_x:
            fig.add_trace(go.Scatter(x=lost_x, y=lost_y, mode="lines", legendgroup=group,
                                     showlegend=not xs, name=kind, hoverinfo="skip",
                                     line=dict(color=color, width=1.3, dash="dash")))
        fig.add_trace(go.Scatter(x=heads_x, y=heads_y, mode="markers", legendgroup=group,
                                 showlegend=False, name=kind, text=text,
                                 marker=dict(symbol="arrow-right", size=9, color=color,
                                             angleref="previous"),
                                 hovertemplate="%{text}<extra></extra>"))
    marks = [m for m in d.marks if m[1] in y and w.x(m[0]) is not None]
    if marks:
        fig.add_trace(go.Scatter(
            x=[w.x(m[0]) for m in marks], y=[y[m[1]] for m in marks], mode="markers",
            name="replica / node events", text=[m[3] for m in marks],
            marker=dict(symbol=[m[2] for m in marks], size=11, color="#b00020"),
            hovertemplate="%{text}<extra></extra>"))
    shapes: list[dict[str, Any]] = [
        dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=i, y1=i,
             line=dict(color="#ddd", width=1), layer="below") for i in y.values()]
    for g0, g1 in w.gaps():
        shapes.append(dict(type="rect", xref="x", yref="paper", x0=g0, x1=g1, y0=0, y1=1,
                           fillcolor="#eee", line=dict(width=0), layer="below"))
    vals, text = w.ticks()
    fig.update_layout(height=220 + 58 * max(2, len(y)), shapes=shapes,
                      margin=dict(l=120, r=20, t=30, b=150), plot_bgcolor="#fff",
                      legend=dict(title=dict(text="message kind (click to hide)",
                                             side="top"),
                                  orientation="h", yref="container", y=0.0, yanchor="bottom",
                                  x=0, xanchor="left"))
    fig.update_yaxes(tickmode="array", tickvals=list(y.values()), ticktext=list(y.keys()),
                     range=[-0.6, len(y) - 0.4], showgrid=False, zeroline=False)
    fig.update_xaxes(tickmode="array", tickvals=vals, ticktext=text, tickangle=0,
                     range=[-1.0, w.slots - 1.0], zeroline=False, showgrid=False,
                     title_text="instants in order (windows around the chain's steps; grey "
                     "bands are cut time)")
    return fig
