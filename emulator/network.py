"""The simulated network: the one component that decides the fate of every frame.

Kafka runs on TCP, and so does this network (after TigerBeetle's packet simulator, with
Linux's retransmission rules in place of a lossy datagram model):

* **Links** are directed node pairs. Every link is FIFO: a frame's delivery time is
  ``max(now + delay, last delivery time on that link)``; equal times keep send order
  because the scheduler breaks ties by commit sequence.
* **Delay** is drawn per frame from one distribution (constant, uniform, exponential,
  lognormal), plus a per-link extra delay while a delay-spike fault is on.
* **Connections** (:mod:`emulator.tcp`) are the directed actor pairs that frames travel on:
  reliable, ordered streams. A frame is never lost on a live connection:
  - *a cut* (iptables DROP, a failed switch: ``partition``, ``isolate``, ``cut``…) holds
    the frames sent into it, and those in flight when it began, on their connection; the
    connection retransmits on Linux's schedule (RTO from the smoothed RTT, at least
    ``tcp_rto_min``, doubling per retry up to ``tcp_rto_max``) and delivers them, in
    order, at the first retransmission after the heal; what its actor sends meanwhile
    queues behind them (head-of-line blocking). After ``tcp_retries2`` failed
    retransmissions the kernel breaks the connection;
  - *packet loss* (``drop_rate``, the ``drop`` nemesis) and *corruption on the wire*
    (``corrupt_rate``: TCP's checksum discards the segment) hold the frame on its
    connection like a cut does, until a retransmission gets through: it, and its
    connection's later frames, arrive one or more RTOs late (and a close discards them,
    as the kernel discards a closed socket's unacknowledged data);
  - *a reject* (iptables REJECT with a TCP reset: ``partition_reject``) fails the frame's
    connection within a round trip: the sender hears a ``ConnectionReset``.
* **Closing** a connection is the application's act (Kafka's ``NetworkClient`` closes one
  whose request timed out): what it still held is discarded, both ways; the next frame
  opens a new connection whose handshake must cross the link (SYN retransmitted after 1 s,
  doubling, ``tcp_syn_retries`` times; Kafka gives up sooner after
  ``socket.connection.setup.timeout.ms`` from 2.7).
* Frames between actors of one node (loopback) are never delayed, held or lost.

Everything random comes from the one ``random.Random`` the network is given (a named child
of the run seed); draws happen in the scheduler's canonical commit order, so the same seed
gives the same delays whatever Trio does. Without faults, no draw is made but the delay's.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Final

from emulator.tcp import Address, Held, Stream, TcpConfig

Link = tuple[str, str]

#: fates of a frame that is not delivered at once
HELD: Final = "held"
REJECT: Final = "reject"
BROKEN: Final = "tcp_timeout"


@dataclass(frozen=True, slots=True)
class DelayDist:
    """A one-way delay distribution in milliseconds (sampled to integer microseconds)."""

    dist: str = "uniform"
    ms: float = 1.0          # constant
    low_ms: float = 0.2      # uniform
    high_ms: float = 2.0
    mean_ms: float = 1.0     # exponential
    mu: float = 0.0          # lognormal of milliseconds
    sigma: float = 0.5

    KINDS = ("constant", "uniform", "exponential", "lognormal")

    def sample_us(self, rng: random.Random) -> int:
        if self.dist == "uniform":
            # random.Random.uniform's own arithmetic (CPython 3.11), one call less
            low = self.low_ms
            ms = low + (self.high_ms - low) * rng.random()
        elif self.dist == "constant":
            ms = self.ms
        elif self.dist == "exponential":
            ms = rng.expovariate(1.0 / self.mean_ms) if self.mean_ms > 0 else 0.0
        elif self.dist == "lognormal":
            ms = math.exp(rng.gauss(self.mu, self.sigma))
        else:  # validated by the scenario loader
            raise ValueError(f"unknown delay distribution {self.dist!r}")
        return max(0, int(ms * 1000))


class Network:
    """Links (delay, cut, reject, loss) and the TCP connections over them.

    The scheduler calls :meth:`send` for every frame an actor sends, :meth:`arrive` when a
    frame's delivery time comes (only while some fault is on), :meth:`retransmit` when a
    held connection's timer fires, and :meth:`close` when an actor closes its connections
    to a node. What the network wants in return — a retransmission timer armed, a line in
    the trace — it leaves in :attr:`timers` and :attr:`notes` for the scheduler to take.
    """

    __slots__ = ("_rng", "delay", "drop_rate", "corrupt_rate", "tcp", "_cut", "_reject",
                 "_extra_us", "_link_drop", "_last_at", "_rtt", "_streams", "_closed",
                 "timers", "notes", "faulty")

    def __init__(self, rng: random.Random, delay: DelayDist, *, drop_rate: float = 0.0,
                 corrupt_rate: float = 0.0, tcp: TcpConfig | None = None) -> None:
        self._rng = rng
        self.delay = delay
        self.drop_rate = drop_rate
        self.corrupt_rate = corrupt_rate
        self.tcp = tcp or TcpConfig()
        self._cut: dict[Link, int] = {}        # link -> number of partitions cutting it
        self._reject: dict[Link, int] = {}     # link -> number of rejecting partitions
        self._extra_us: dict[Link, int] = {}
        self._link_drop: dict[Link, float] = {}
        self._last_at: dict[Link, int] = {}
        #: link -> [smoothed RTT, RTT variation] in microseconds (RFC 6298)
        self._rtt: dict[Link, list[int]] = {}
        #: connections with state: frames held, a retransmission's floor, a handshake
        self._streams: dict[tuple[Address, Address], Stream] = {}
        #: (actor, node) -> failed connection attempts since the application closed its
        #: connection to that node: the next frame must open a new one
        self._closed: dict[tuple[Address, str], int] = {}
        #: streams whose retransmission timer the scheduler must arm (at stream.timer_us)
        self.timers: list[Stream] = []
        #: (event, (node, actor), fields) for the scheduler to trace
        self.notes: list[tuple[str, Address, dict[str, Any]]] = []
        #: True while anything can hold or refuse a frame on arrival
        self.faulty = False

    # -- faults --------------------------------------------------------------------------
    def _refresh(self) -> None:
        self.faulty = bool(self._cut or self._reject or self._streams)

    def cut(self, src: str, dst: str) -> None:
        self._cut[(src, dst)] = self._cut.get((src, dst), 0) + 1
        self.faulty = True

    def heal(self, src: str, dst: str) -> None:
        _release(self._cut, (src, dst))
        self._refresh()

    def reject(self, src: str, dst: str) -> None:
        self._reject[(src, dst)] = self._reject.get((src, dst), 0) + 1
        self.faulty = True

    def unreject(self, src: str, dst: str) -> None:
        _release(self._reject, (src, dst))
        self._refresh()

    def heal_all(self) -> None:
        """Every cut, reject, delay spike and loss rate ends. Held frames still wait for
        their connection's next retransmission, as on a real network."""
        self._cut.clear()
        self._reject.clear()
        self._extra_us.clear()
        self._link_drop.clear()
        self._refresh()

    def is_cut(self, src: str, dst: str) -> bool:
        return (src, dst) in self._cut

    def set_extra_delay(self, src: str, dst: str, extra_ms: float) -> None:
        if extra_ms > 0:
            self._extra_us[(src, dst)] = int(extra_ms * 1000)
        else:
            self._extra_us.pop((src, dst), None)

    def set_link_drop(self, src: str, dst: str, rate: float) -> None:
        if rate > 0:
            self._link_drop[(src, dst)] = rate
        else:
            self._link_drop.pop((src, dst), None)

    # -- the round-trip estimate -----------------------------------------------------------
    def rto_us(self, link: Link) -> int:
        """The link's retransmission timeout: Linux's ``tcp_set_rto`` — the smoothed RTT
        plus the variation, the variation at least ``tcp_rto_min`` — 1 s before any
        sample (``TCP_TIMEOUT_INIT``), at most ``tcp_rto_max``."""
        est = self._rtt.get(link)
        cfg = self.tcp
        if est is None:
            return min(cfg.rto_initial_us, cfg.rto_max_us)
        return min(est[0] + max(cfg.rto_min_us, 4 * est[1]), cfg.rto_max_us)

    def rtt_us(self, link: Link) -> int:
        est = self._rtt.get(link)
        return est[0] if est is not None else 2 * self.delay.sample_us(self._rng)

    def _one_way(self, link: Link) -> int:
        """One one-way delay drawn for ``link``, and the RTT sample it makes (twice it:
        RFC 6298 section 2's estimator, kept per link)."""
        d = self.delay.sample_us(self._rng) + self._extra_us.get(link, 0)
        r = 2 * d
        est = self._rtt.get(link)
        if est is None:
            self._rtt[link] = [r, r // 2]
        else:
            est[1] += (abs(est[0] - r) - est[1]) // 4
            est[0] += (r - est[0]) // 8
        return d

    # -- delivery ------------------------------------------------------------------------
    def send(self, now_us: int, src: Address, dst: Address, frame: bytes
             ) -> tuple[int, bytes] | str:
        """One frame an actor sends: ``(deliver_at_us, frame)``, or :data:`HELD` (its
        connection holds it for a retransmission), :data:`REJECT` (the link answers with
        a reset) or :data:`BROKEN` (lost so often that the kernel broke the connection)."""
        if src[0] == dst[0]:
            return now_us, frame
        link = (src[0], dst[0])
        if self._reject and link in self._reject:
            return REJECT
        stream = None
        if self._streams or self._closed:
            stream = self._streams.get((src, dst))
            if stream is None and self._closed and (src, dst[0]) in self._closed:
                return self._connect(now_us, src, dst, frame)
            if stream is not None:
                if stream.held is not None:
                    stream.held.append((dst, src, frame))   # behind what it holds
                    return HELD
                if stream.last_us <= now_us:   # nothing late on it any more
                    del self._streams[(src, dst)]
                    stream = None
                    self._refresh()
        if self._cut and link in self._cut:
            self._hold(now_us, src, dst, (dst, src, frame), in_flight=False)
            return HELD
        if (self.drop_rate or self.corrupt_rate or self._link_drop) and self._lost(link):
            # lost on the wire, or damaged and discarded by the receiver's TCP checksum:
            # the connection holds it (and what follows) for a retransmission
            self._hold(now_us, src, dst, (dst, src, frame), in_flight=False, reason="loss")
            return HELD
        d = self._one_way(link)
        at = now_us + d
        last = self._last_at.get(link, 0)
        if at < last:
            at = last
        self._last_at[link] = at
        if stream is not None:
            if at < stream.last_us:
                at = stream.last_us
            stream.last_us = at
        return at, frame

    def _lost(self, link: Link) -> bool:
        """One transmission over ``link``: lost at the link's loss rate, or damaged at the
        corruption rate (each a draw, in that order, only when its rate is not 0)."""
        rate = self._link_drop.get(link, self.drop_rate)
        rng = self._rng
        return bool((rate and rng.random() < rate)
                    or (self.corrupt_rate and rng.random() < self.corrupt_rate))

    def arrive(self, now_us: int, dst: Address, src: Address, frame: bytes) -> str | None:
        """A frame's delivery time came while some fault is on: None to deliver it, or
        :data:`HELD` (lost to a cut in flight, or behind a frame that was: its connection
        retransmits it) or :data:`REJECT`."""
        link = (src[0], dst[0])
        if link in self._reject:
            return REJECT
        stream = self._streams.get((src, dst)) if self._streams else None
        if link in self._cut:
            self._hold(now_us, src, dst, (dst, src, frame), in_flight=True)
            return HELD
        if stream is not None and stream.held is not None and stream.lost_in_flight:
            stream.held.insert(stream.lost_in_flight, (dst, src, frame))
            stream.lost_in_flight += 1
            return HELD
        if stream is not None and stream.held is None and stream.last_us <= now_us:
            del self._streams[(src, dst)]   # nothing late on it any more
            self._refresh()
        return None

    def _hold(self, now_us: int, src: Address, dst: Address, item: Held, *,
              in_flight: bool, reason: str = "partition") -> None:
        stream = self._streams.get((src, dst))
        if stream is None:
            stream = self._streams[(src, dst)] = Stream(src, dst)
            self.faulty = True
        if stream.held is None:
            stream.held = []
            stream.since_us = now_us
            stream.retries = 0
            stream.timer_us = now_us + self.rto_us((src[0], dst[0]))
            self.timers.append(stream)
            self.notes.append(("tcp_stall", src, {"dst": f"{dst[0]}/{dst[1]}",
                                                  "reason": reason}))
        if in_flight:   # sent before everything held at send: it goes first
            stream.held.insert(stream.lost_in_flight, item)
            stream.lost_in_flight += 1
        else:
            stream.held.append(item)

    def retransmit(self, now_us: int, stream: Stream
                   ) -> tuple[str, list[tuple[int, Address, Address, bytes]], list[Held]]:
        """The retransmission timer of a held connection fired. Returns ``("wait", [],
        [])`` (still cut: the timer is re-armed at ``stream.timer_us``), ``("release",
        deliveries, [])`` with each held frame's delivery time, or ``(reason, [],
        discarded)`` when the connection failed (``reject``, ``tcp_timeout``,
        ``connect_timeout``): its actor hears a reset."""
        key = (stream.src, stream.dst)
        if self._streams.get(key) is not stream or stream.held is None:
            return "stale", [], []
        src, dst = stream.src, stream.dst
        link = (src[0], dst[0])
        back = (dst[0], src[0])
        cfg = self.tcp
        if link in self._reject or (stream.connecting and back in self._reject):
            return self._fail(stream, REJECT)
        if stream.connecting:
            if now_us >= stream.deadline_us:
                return self._fail(stream, "connect_timeout")
            if link in self._cut or back in self._cut:
                stream.retries += 1
                if stream.retries > cfg.syn_retries:
                    return self._fail(stream, "connect_timeout")
                stream.timer_us = min(now_us + (cfg.rto_initial_us << stream.retries),
                                      stream.deadline_us)
                self.timers.append(stream)
                return "wait", [], []
            self._closed.pop((src, dst[0]), None)
            extra = self.rtt_us(link)    # SYN, SYN-ACK: then the data
        else:
            if link in self._cut or self._lost(link):
                stream.retries += 1
                if stream.retries > cfg.retries2:
                    return self._fail(stream, BROKEN)
                stream.timer_us = now_us + min(self.rto_us(link) << stream.retries,
                                               cfg.rto_max_us)
                self.timers.append(stream)
                return "wait", [], []
            extra = 0
        held, stream.held = stream.held, None
        out = []
        last = max(self._last_at.get(link, 0), stream.last_us)
        for dst_, src_, frame in held:
            at = now_us + extra + self._one_way(link)
            if at < last:
                at = last
            last = at
            out.append((at, dst_, src_, frame))
        self._last_at[link] = max(self._last_at.get(link, 0), last)
        stream.last_us = last
        self.notes.append(("tcp_resume", src, {
            "dst": f"{dst[0]}/{dst[1]}", "frames": len(held), "retransmits": stream.retries,
            "stalled_ms": (now_us - stream.since_us) // 1000,
            **({"connect": True} if stream.connecting else {})}))
        stream.connecting = False
        stream.lost_in_flight = 0
        stream.retries = 0
        return "release", out, []

    def _fail(self, stream: Stream, reason: str
              ) -> tuple[str, list[tuple[int, Address, Address, bytes]], list[Held]]:
        held = stream.held or []
        del self._streams[(stream.src, stream.dst)]
        if stream.connecting:
            self._closed[(stream.src, stream.dst[0])] = (
                self._closed.get((stream.src, stream.dst[0]), 0) + 1)
        self.notes.append(("connection_failed", stream.src, {
            "dst": f"{stream.dst[0]}/{stream.dst[1]}", "reason": reason,
            "discarded": len(held), "stalled_ms": 0 if stream.held is None else
            max(0, (stream.timer_us - stream.since_us) // 1000)}))
        self._refresh()
        return reason, [], held

    # -- connections -----------------------------------------------------------------------
    def _connect(self, now_us: int, src: Address, dst: Address, frame: bytes
                 ) -> tuple[int, bytes] | str:
        """The first frame of ``src``'s new connection to ``dst``'s node: the handshake
        crosses the link both ways (one round trip more), or waits for it to heal."""
        link = (src[0], dst[0])
        back = (dst[0], src[0])
        if back in self._reject:
            return REJECT
        if not (self._cut and (link in self._cut or back in self._cut)):
            del self._closed[(src, dst[0])]
            d = self.rtt_us(link) + self._one_way(link)
            at = max(now_us + d, self._last_at.get(link, 0))
            self._last_at[link] = at
            return at, frame
        cfg = self.tcp
        failures = self._closed[(src, dst[0])]
        stream = self._streams[(src, dst)] = Stream(src, dst)
        stream.held = [(dst, src, frame)]
        stream.connecting = True
        stream.since_us = now_us
        limit = cfg.setup_timeout_us(failures)
        # without Kafka's own setup timeout the kernel's SYN retries decide
        stream.deadline_us = now_us + (limit if limit else cfg.syn_give_up_us())
        stream.timer_us = min(now_us + cfg.rto_initial_us, stream.deadline_us)
        self.timers.append(stream)
        self.faulty = True
        self.notes.append(("tcp_stall", src, {"dst": f"{dst[0]}/{dst[1]}",
                                              "reason": "connect"}))
        return HELD

    def close(self, actor: Address, peer: str) -> list[Held]:
        """``actor`` closes its connections to node ``peer`` (a request timed out): what
        they still hold, either way, is discarded; its next frame to ``peer`` opens a new
        connection."""
        discarded: list[Held] = []
        if actor[0] == peer:
            return discarded
        for key in [k for k, s in self._streams.items()
                    if (k[0] == actor and k[1][0] == peer)
                    or (k[1] == actor and k[0][0] == peer)]:
            stream = self._streams.pop(key)
            if stream.held:
                discarded.extend(stream.held)
        self._closed.setdefault((actor, peer), 0)
        self._refresh()
        return discarded

    def forget_node(self, node: str) -> list[Held]:
        """``node``'s process died: its connections, and what they held either way, are
        gone (its next incarnation opens new ones)."""
        discarded: list[Held] = []
        for key in [k for k in self._streams if k[0][0] == node or k[1][0] == node]:
            stream = self._streams.pop(key)
            if stream.held:
                discarded.extend(stream.held)
        for ckey in [k for k in self._closed if k[0][0] == node]:
            del self._closed[ckey]
        self._refresh()
        return discarded

    def transmit_reset(self, now_us: int, src: str, dst: str) -> int | None:
        """A TCP reset from ``src``'s kernel to ``dst``: its delivery time, or None when a
        cut or reject loses it (a reset is never retransmitted)."""
        link = (src, dst)
        if link in self._cut or link in self._reject:
            return None
        rate = self._link_drop.get(link, self.drop_rate)
        if rate and self._rng.random() < rate:
            return None
        at = max(now_us + self._one_way(link), self._last_at.get(link, 0))
        self._last_at[link] = at
        return at

    def state(self, rel: Any) -> tuple[Any, ...]:
        """The network's state for a run digest (times made relative by ``rel``)."""
        streams = sorted(
            (k, rel(s.last_us), len(s.held or ()), s.lost_in_flight, s.retries,
             s.connecting, rel(s.timer_us) if s.held is not None else 0)
            for k, s in self._streams.items())
        return (sorted(self._cut.items()), sorted(self._reject.items()),
                sorted(self._extra_us.items()), sorted(self._link_drop.items()),
                sorted((k, rel(v)) for k, v in self._last_at.items()),
                sorted((k, v[0], v[1]) for k, v in self._rtt.items()),
                streams, sorted(self._closed.items()))


def _release(counts: dict[Link, int], link: Link) -> None:
    n = counts.get(link, 0) - 1
    if n > 0:
        counts[link] = n
    else:
        counts.pop(link, None)
