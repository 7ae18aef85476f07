"""A small sans-IO bench for conformance tests: replicas with prepared logs, driven directly.

Kafka's own unit tests build a ``Partition`` or a ``MockFetcherThread`` around a log of
batches ``(base offset, leader epoch)`` and call one method at a time. Here the same shapes
are built on isrlab's machines: :func:`replica` gives a ``Replica`` whose log holds the given
records (each appended through ``PartitionLog.append``, so the epoch cache is built the way a
follower's append builds it), :func:`lead` and :func:`follow` hand it a PartitionState, and
:class:`Wire` delivers messages between machines in virtual time (1 ms a hop, timers at their
due time, ties in the order they were queued) until a condition holds.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Any

from actors.controller import Controller
from actors.core import Emit, Send, Timer
from actors.eras import rules_for
from actors.log import PartitionLog
from actors.messages import FetchResponse, PartitionState, Record
from actors.replica import Replica, ReplicaConfig

TOPIC = "t"
NAME = f"{TOPIC}-0"
HOP_US = 1000


def rec(offset: int, epoch: int, value: str | None = None) -> Record:
    """One record at ``offset`` written in leader epoch ``epoch``."""
    return (offset, value if value is not None else f"e{epoch}-o{offset}", epoch, 0, -1, -1,
            None)


def batches(*spec: tuple[int, int]) -> list[Record]:
    """Records from ``(leader epoch, count)`` pairs, at consecutive offsets from 0."""
    out: list[Record] = []
    for epoch, count in spec:
        for _ in range(count):
            out.append(rec(len(out), epoch))
    return out


def replica(broker: int, records: Iterable[Record] = (), *, era: str = "4.1",
            hw: int = 0, log_start_offset: int | None = None,
            cfg: ReplicaConfig | None = None) -> Replica:
    """A started replica on ``broker-N`` whose log holds ``records`` (and the HW checkpoint
    ``hw``), not yet told its role. Segments roll at ``cfg.segment_bytes``."""
    log = PartitionLog(TOPIC, 0)
    recs = list(records)
    if recs and recs[0][0] > 0:
        log.truncate_fully_and_start_at(recs[0][0])
    r = Replica(f"broker-{broker}", broker, log, rules_for(era),
                cfg or ReplicaConfig(replica_fetch_wait_max_ms=0), clean_start=True)
    for x in recs:
        log.append(x, r.cfg.segment_bytes, 1 << 40, 0)
    if log_start_offset is not None:
        log.log_start_offset = log_start_offset
        log.epochs.truncate_from_start(log_start_offset)
    log.hw_checkpoint = hw
    r.start()
    r.drain()
    return r


def state(leader: int, epoch: int, replicas: tuple[int, ...] = (1, 2),
          isr: tuple[int, ...] | None = None) -> PartitionState:
    return PartitionState(1, TOPIC, 0, replicas, leader, epoch,
                          isr if isr is not None else replicas, (), epoch, False)


def lead(r: Replica, epoch: int, replicas: tuple[int, ...] = (1, 2),
         isr: tuple[int, ...] | None = None) -> list[Any]:
    r.handle(state(r.broker_id, epoch, replicas, isr), ("controller", "controller"))
    return r.drain()


def follow(r: Replica, leader: int, epoch: int, replicas: tuple[int, ...] = (1, 2),
           isr: tuple[int, ...] | None = None) -> list[Any]:
    """Make ``r`` a follower of ``leader``; returns its effects (its first request)."""
    r.handle(state(leader, epoch, replicas, isr), ("controller", "controller"))
    return r.drain()


def sent(effects: list[Any], kind: type | None = None) -> list[Any]:
    return [e.msg for e in effects
            if isinstance(e, Send) and (kind is None or isinstance(e.msg, kind))]


def events(effects: list[Any], name: str) -> list[dict[str, Any]]:
    return [e.fields for e in effects if isinstance(e, Emit) and e.event == name]


def fetch_response(effects: list[Any]) -> FetchResponse:
    (resp,) = sent(effects, FetchResponse)
    return resp  # type: ignore[no-any-return]


def values(r: Replica) -> list[tuple[int, str, int]]:
    """The log as (offset, value, epoch)."""
    return [(x[0], x[1], x[2]) for x in r.log.records]


class Wire:
    """Delivers every machine's effects in virtual time; keeps every effect for asserts."""

    def __init__(self, *machines: Replica, hop_us: int = HOP_US) -> None:
        self.machines = {m.address: m for m in machines}
        self.hop_us = hop_us
        self.now_us = max(m.now_us for m in machines)
        self._queue: list[tuple[int, int, tuple[str, str], Any, tuple[str, str]]] = []
        self._seq = 0
        self.log: list[tuple[tuple[str, str], Any]] = []   # (machine, effect) in order

    def take(self, m: Replica, effects: list[Any]) -> None:
        """Queue effects a test drained from ``m`` by hand."""
        for e in effects:
            self.log.append((m.address, e))
            if isinstance(e, Send) and e.dst in self.machines:
                self._push(self.now_us + self.hop_us, e.dst, e.msg, m.address)
            elif isinstance(e, Timer):
                self._push(self.now_us + e.delay_us, m.address, e.msg, m.address)

    def _push(self, at: int, dst: tuple[str, str], msg: Any, src: tuple[str, str]) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, self._seq, dst, msg, src))

    def run(self, until: Callable[[], bool], *, max_steps: int = 10_000,
            max_us: int = 600_000_000) -> bool:
        """Deliver one message at a time until ``until()`` holds (True) or the step or time
        bound is reached (False)."""
        for _ in range(max_steps):
            if until():
                return True
            if not self._queue or self._queue[0][0] > max_us:
                return until()
            at, _, dst, msg, src = heapq.heappop(self._queue)
            self.now_us = at
            m = self.machines[dst]
            m.now_us = at
            m.handle(msg, src)
            self.take(m, m.drain())
        return until()

    def emitted(self, name: str, machine: Replica | None = None) -> list[dict[str, Any]]:
        return [e.fields for a, e in self.log if isinstance(e, Emit) and e.event == name
                and (machine is None or a == machine.address)]


def session_checks(c: Controller) -> list[Any]:
    """Deliver the controller's armed session check now, again as long as it fences a
    broker (a KRaft check fences one: the next comes 10 ms later in 4.1, at once in 3.7;
    a ZooKeeper-era check fences every expired broker), as its timers would; the effects."""
    out: list[Any] = []
    while True:
        fenced = sum(r.fenced for r in c.store.brokers.values())
        c.handle(c.armed_session_check, c.address)
        out += c.drain()
        if sum(r.fenced for r in c.store.brokers.values()) == fenced:
            return out
