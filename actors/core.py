"""The shape every protocol actor has: a sans-IO state machine fed messages, returning effects.

After h11: an actor never touches a socket, a clock, a file or a task. The runtime
(``emulator/``) sets ``now_us``, calls :meth:`Machine.handle` with one decoded message, then
takes the effects the machine queued with :meth:`Machine.drain`:

* ``Send(dst, msg)``   — a message to another actor; the runtime encodes it to msgpack
  bytes and hands it to the simulated network;
* ``Timer(delay_us, msg, handle)`` — a message to itself after a delay; timers go through the
  same ordered scheduler as network messages, never through Trio's deadline heap;
* ``CancelTimer(handle)`` — the timer with that handle will not be delivered;
* ``Emit(event, fields)`` — a trace event (the runtime adds ``ts_us``, node and actor);
* ``Disconnect(peer)`` — close this actor's connections to node ``peer`` (a request to it
  timed out): what they still hold is discarded, and the next message opens a new one.

A machine that no longer wants a timer ignores it when it fires (a token in the timer
message, as Kafka's purgatory does with stale delayed operations), so every decision stays a
pure function of (state, message, time), which is what makes a run replayable bit for bit.
A timer asked for with ``cancellable=True`` may also be cancelled: a request's timeout once
its response is in, a parked fetch's wait once it is answered. That is only a saving (most
timeouts never fire, and a stale timer costs a whole delivery), never a change of meaning:
the machine still ignores a stale timer that reaches it, and cancelling one changes no
other entry's place in the scheduler's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeVar, dataclass_transform

T = TypeVar("T")
M = TypeVar("M")


@dataclass_transform(frozen_default=True)
def value(cls: type[T]) -> type[T]:
    """A value class: a slotted, hashable dataclass that type checkers treat as frozen.

    At run time it is not frozen: a frozen dataclass's ``__init__`` goes through
    ``object.__setattr__`` field by field, ~1 us for six fields against ~0.2 us, and the
    runtime creates a few of these per delivered message (the message itself, its effects).
    Immutability is checked statically instead: ``mypy --strict`` rejects an assignment to a
    field (PEP 681 ``frozen_default``).
    """
    return dataclass(slots=True, unsafe_hash=True)(cls)


Address = tuple[str, str]
"""``(node, actor)``: e.g. ``("broker-1", "orders-0")``, ``("controller", "controller")``."""


@value
class Send:
    dst: Address
    msg: Any


@value
class Timer:
    delay_us: int
    msg: Any
    handle: int = 0          # > 0: may be cancelled by CancelTimer(handle)


@value
class CancelTimer:
    handle: int


@value
class Emit:
    event: str
    fields: dict[str, Any]


@value
class Disconnect:
    peer: str


Effect = Send | Timer | CancelTimer | Emit | Disconnect

US_PER_MS: Final = 1000


class Machine:
    """Base of every sans-IO actor state machine."""

    node: str
    name: str
    now_us: int

    def __init__(self, node: str, name: str) -> None:
        self.node = node
        self.name = name
        self.address: Address = (node, name)
        self.now_us = 0
        self._out: list[Effect] = []
        self._timer_handles = 0
        #: the Trio task (and inbox) this machine runs in: its own, unless a host machine
        #: adopted it (:meth:`adopt`); machines of one task run one message at a time
        self.task = name
        #: machines of this task that the message being handled called into: their effects
        #: are committed after this machine's (shared by every machine of the task)
        self.touched: list[Machine] = []

    @property
    def now_ms(self) -> int:
        return self.now_us // US_PER_MS

    # -- machines that share a task -------------------------------------------------------
    def adopt(self, other: Machine) -> None:
        """Run ``other`` in this machine's task, so that either may call the other's
        methods: one message at a time, in the scheduler's batch order — never two tasks
        reaching into one machine, whose order would be Trio's scheduling order."""
        other.task = self.task
        other.touched = self.touched

    def touch(self, other: M) -> M:
        """Before calling into ``other`` (a machine of this task): bring its clock to now
        and have its effects committed with this message's."""
        m: Any = other   # a Machine, or a Protocol of one (no typing.cast call: hot path)
        m.now_us = self.now_us
        self.touched.append(m)
        return other

    # -- effects -------------------------------------------------------------------------
    def send(self, dst: Address, msg: Any) -> None:
        self._out.append(Send(dst, msg))

    def timer(self, delay_ms: float, msg: Any, *, cancellable: bool = False) -> int:
        """A timer; with ``cancellable`` its handle (> 0) for :meth:`cancel_timer`."""
        handle = 0
        if cancellable:
            handle = self._timer_handles = self._timer_handles + 1
        self._out.append(Timer(max(0, int(delay_ms * US_PER_MS)), msg, handle))
        return handle

    def cancel_timer(self, handle: int) -> None:
        """Do not deliver the timer ``handle`` (0 is a no-op). The machine must still
        ignore it should it fire: cancelling is a saving, never part of the protocol."""
        if handle > 0:
            self._out.append(CancelTimer(handle))

    def emit(self, event: str, **fields: Any) -> None:
        self._out.append(Emit(event, fields))

    def disconnect(self, peer: str) -> None:
        """Close this actor's connections to node ``peer``, as Kafka's ``NetworkClient``
        does when a request to it times out (``handleTimedOutRequests`` →
        ``processTimeoutDisconnection``; the replica fetcher's ``ReplicaFetcherBlockingSend``
        closes its connection on any failure): requests and answers the connections still
        hold are discarded, and the next message to ``peer`` opens a new connection."""
        if peer != self.node:
            self._out.append(Disconnect(peer))

    def drain(self) -> list[Effect]:
        out = self._out
        self._out = []
        return out

    # -- the runtime calls these ---------------------------------------------------------
    def start(self) -> None:
        """Called once when the actor (re)starts, before any message."""

    def handle(self, msg: Any, src: Address) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def connection_reset(self, peer: str) -> None:
        """The connection to node ``peer`` was reset (its process died on a live host): the
        requests in flight to it fail now, as Kafka's ``NetworkClient`` fails them on a
        disconnect, instead of at their timeout. A reset never fences anyone."""

    def frame_rejected(self, src: Address, error: str) -> None:
        """A frame addressed to this actor failed its checksum or did not decode."""
        self.emit("frame_rejected", src=f"{src[0]}/{src[1]}",
                  dst=f"{self.node}/{self.name}", error=error)
