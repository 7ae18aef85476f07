"""The ordered scheduler: virtual time, delivery order and node lifecycle.

Design (docs/determinism.md; the measurements behind it: docs/stack-notes.md, section 3):

* One heap of entries keyed ``(time_us, seq)``. ``seq`` is assigned when an entry is pushed,
  and entries are only pushed from this scheduler's own loop in a canonical order, so the
  key is a pure function of the run — never of Trio's run queue. The heap holds the key
  packed into one int, ``time_us << SEQ_BITS | seq`` (int comparisons are ~2x cheaper
  than tuple ones, and the heap is large: every request carries a timeout timer), and the
  entries live in a dict by ``seq``.
* The loop takes every delivery due at the earliest instant ``t`` (up to the first control
  entry) and puts each frame into its actor's inbox (a Trio memory channel). Actors hand
  back their effects tagged with the index of the delivery that caused them; the actor
  that finishes the batch last (a pending counter) passes the baton: it calls
  :meth:`Scheduler._advance`, which *commits* the effects in delivery order — trace events
  are written, frames go to the network (which draws delays from its seeded RNG), timers
  are pushed — and only then jumps time to the next entry and delivers it. No sleeping,
  no ``MockClock`` autojump, and no wake-up of a separate scheduler task per instant: one
  Trio scheduling round per instant.
* Control entries (faults, phase changes, the end of the run) run alone between batches.
* A cancelled timer (:class:`actors.core.CancelTimer`) keeps its heap key; its entry is
  marked and skipped when its time comes, so no other entry's key or order changes.
* A node is a Trio nursery under its own cancel scope. Crash = cancel the scope (volatile
  state — the machines — is gone) and tell the node's durable storage what kind of crash it
  was (power loss drops the page cache). Restart builds fresh machines from durable state.
  Pause holds every delivery to the node (timers included) until resume.
* ``clock="real"`` paces the same loop against Trio's clock (for demos); the trace is the
  same as in virtual time.

Trio guarantees used: memory channels wake receivers FIFO; a cancelled scope unwinds its
tasks. Nothing else about Trio's scheduling reaches the trace.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any, Final, Protocol

import trio

from actors.core import CancelTimer, Disconnect, Emit, Machine, Send, Timer
from actors.messages import ConnectionReset
from actors.wire import Codec, FrameError, decode
from emulator.choice import Driver
from emulator.msgtrace import describe
from emulator.network import HELD, REJECT, Network
from emulator.tcp import Held, Stream
from traces.writer import TraceWriter

DELIVER: Final = 0
CONTROL: Final = 1
CANCELLED: Final = 2
SEQ_BITS: Final = 40
#: a busy actor task yields to Trio at least this often
YIELD_EVERY: Final = 64
#: the actor name a connection reset comes from: the dead process's kernel, not an actor
TCP: Final = "tcp"
SEQ_MASK: Final = (1 << SEQ_BITS) - 1

# A task's inbox item: (cause index in the batch, src address, msgpack frame bytes — or,
# for a timer, the timer message itself: timers are in-process and never cross the wire —
# and the machine it is for).
Inbound = tuple[int, tuple[str, str], Any, Machine]
# Effects after encoding by the sending actor: a Send becomes (dst, frame); Timer,
# CancelTimer, Disconnect and Emit are committed as they are
Outbound = tuple[tuple[str, str], bytes] | Timer | CancelTimer | Disconnect | Emit


class Storage(Protocol):
    def crash(self, power_loss: bool, now_ms: int = 0) -> None: ...


class Node:
    """One simulated process: a broker, the controller, or a client."""

    __slots__ = ("name", "storage", "factory", "state", "machines", "inboxes", "scope",
                 "held", "incarnation", "power_off")

    def __init__(self, name: str, storage: Storage,
                 factory: Callable[[Node], list[Machine]]) -> None:
        self.name = name
        self.storage = storage
        self.factory = factory
        self.state = "down"
        self.machines: dict[str, Machine] = {}
        self.inboxes: dict[str, trio.MemorySendChannel[Inbound]] = {}
        self.scope: trio.CancelScope | None = None
        self.held: list[tuple[Any, ...]] = []
        self.incarnation = 0
        #: down because its host lost power (nothing answers) rather than its process died
        #: on a live host (the kernel refuses connections)
        self.power_off = False


class Scheduler:
    def __init__(self, network: Network, writer: TraceWriter, *, clock: str = "virtual",
                 speed: float = 1.0, trace_messages: bool = False) -> None:
        self.network = network
        self.writer = writer
        self.clock = clock
        self.speed = speed
        self.now = 0
        self.nodes: dict[str, Node] = {}
        self.delivered = 0          # inbox deliveries: network frames and timer messages
        self.delivered_frames = 0   # of which network frames
        self._heap: list[int] = []                       # time_us << SEQ_BITS | seq
        self._entries: dict[int, tuple[Any, ...]] = {}   # seq -> (kind, dst, src, frame)
        self._seq = 0
        #: cancelled timers still in the heap (dropped in bulk: see _cancel)
        self._dead = 0
        self._pending = 0
        self._done = trio.Event()
        self._wakeup = trio.Event()
        self._t0 = 0.0
        self._sleep_to = 0
        self._paced = 0
        self._results: list[list[tuple[Machine, list[Outbound]]] | None] = []
        self._nursery: trio.Nursery | None = None
        self._stop = False
        self._system_codec = Codec()   # frames of the simulated TCP stack (resets)
        #: (node, actor, handle) -> seq of a cancellable timer not yet delivered (or held)
        self._cancellable: dict[tuple[str, str, int], int] = {}
        #: message tracing (emulator.msgtrace): the id of each frame in flight, by heap seq
        #: (and, while its node is paused, by the held entry)
        self.trace_messages = trace_messages
        self._msg_count = 0
        self._msg_ids: dict[int, int] = {}
        self._held_ids: dict[int, int] = {}
        #: message tracing: the id of each frame a TCP connection holds, by the frame's
        #: identity (the network keeps the very bytes object until it delivers or drops it)
        self._tcp_ids: dict[int, int] = {}
        #: the choice points of an explored run (emulator.choice.Driver), or None
        self.chooser: Driver | None = None
        #: with a controller quorum: where a frame to the node "controller" (or a
        #: disconnect from it) goes — the controller its sender's node believes active
        self.route: Callable[[Machine, str], str] | None = None

    # -- building --------------------------------------------------------------------------
    def add_node(self, node: Node) -> None:
        self.nodes[node.name] = node

    def at(self, time_us: int, fn: Callable[[], None]) -> None:
        """Run ``fn`` alone at ``time_us`` (after every delivery pushed before it)."""
        self._push(time_us, CONTROL, fn, None, b"")

    def stop(self) -> None:
        self._stop = True

    def _push(self, t: int, kind: int, dst: Any, src: Any, frame: Any, handle: int = 0
              ) -> int:
        """``frame``: a network frame's bytes, or a timer's message (never encoded)."""
        seq = self._seq = self._seq + 1
        self._entries[seq] = (kind, dst, src, frame, handle)
        if handle:
            self._cancellable[(dst[0], dst[1], handle)] = seq
        heapq.heappush(self._heap, t << SEQ_BITS | seq)
        return seq

    def emit(self, node: str, actor: str, event: str, **fields: Any) -> None:
        self.writer.emit(self.now, node, actor, event, fields)

    # -- node lifecycle (called from control entries or before the loop) -----------------
    def start_node(self, name: str) -> None:
        node = self.nodes[name]
        assert self._nursery is not None
        node.state = "up"
        node.incarnation += 1
        machines = node.factory(node)
        node.machines = {m.name: m for m in machines}
        node.inboxes = {}
        node.scope = trio.CancelScope()
        receivers = []
        tasks: dict[str, trio.MemorySendChannel[Inbound]] = {}
        for m in machines:
            send = tasks.get(m.task)
            if send is None:
                send, recv = trio.open_memory_channel[Inbound](math.inf)
                tasks[m.task] = send
                receivers.append(recv)
            node.inboxes[m.name] = send
        self._nursery.start_soon(self._node_task, node, node.scope, receivers)
        codec = Codec()
        for m in machines:
            m.now_us = self.now
            m.start()
            for owner, effects in self._drain(codec, m):
                self._commit(owner, effects)

    def add_machine(self, name: str, machine: Machine, host: str) -> bool:
        """Start ``machine`` on the running node ``name`` in the task of its machine
        ``host``, which has adopted it already (a replica of a partition created after the
        node started). False when the node is down: its next incarnation's factory builds
        the machine."""
        node = self.nodes[name]
        if node.state == "down":
            return False
        node.machines[machine.name] = machine
        node.inboxes[machine.name] = node.inboxes[host]
        machine.now_us = self.now
        machine.start()
        for owner, effects in self._drain(Codec(), machine):
            self._commit(owner, effects)
        return True

    def crash_node(self, name: str, *, power_loss: bool, kind: str = "") -> None:
        node = self.nodes[name]
        if node.state == "down":
            return
        assert node.scope is not None
        node.scope.cancel()
        node.state = "down"
        node.machines = {}
        node.inboxes = {}
        for entry in node.held:
            self._held_ids.pop(id(entry), None)  # nondeterminism-ok: identity lookup only
        node.held = []
        node.power_off = power_loss
        node.storage.crash(power_loss, now_ms=self.now // 1000)
        self.emit(name, "sim", "node_crash",
                  kind=kind or ("power_loss" if power_loss else "process"))
        # Volatile state dies with the process: its pending timers, and frames on the wire
        # to it (their connections are reset), never reach the next incarnation.
        entries = self._entries
        self._cancellable = {k: v for k, v in self._cancellable.items() if k[0] != name}
        kept: list[int] = []
        lost: list[int] = []
        for key in self._heap:
            entry = entries[key & SEQ_MASK]
            (lost if entry[0] == DELIVER and entry[1][0] == name else kept).append(key)
        if lost:
            self._heap[:] = kept
            heapq.heapify(self._heap)
            for key in sorted(lost):
                _, dst, src, frame, _h = entries.pop(key & SEQ_MASK)
                self._msg_ids.pop(key & SEQ_MASK, None)
                self._drop(src, dst, frame, "node_down")
        for dst, src, frame in self.network.forget_node(name):
            self._drop(src, dst, frame, "node_down")
        if not power_loss:
            self._reset_connections(name)

    def _refuse(self, name: str, src: tuple[str, str]) -> None:
        """A frame reached ``name`` while its process is down on a live host: the kernel
        refuses the connection, and the sender hears it one network delay later."""
        sender = self.nodes.get(src[0])
        if src[0] == name or src[1] == TCP or sender is None or sender.state == "down":
            return
        self._send_reset(name, src[0], [src[1]])

    def _reset_connections(self, name: str) -> None:
        """A process died on a live host: its kernel resets the process's connections. Each
        other live node hears of it one network delay later (through the network, so a cut
        link stays silent), every actor there by a ``ConnectionReset`` frame."""
        for peer in sorted(self.nodes):
            node = self.nodes[peer]
            if peer != name and node.state != "down":
                self._send_reset(name, peer, sorted(node.machines))

    def _send_reset(self, dead: str, peer: str, actors: list[str]) -> None:
        """One ``ConnectionReset`` for ``dead`` over the link to ``peer`` (one delay drawn),
        delivered to each of ``actors`` there; nothing when the link loses it."""
        at = self.network.transmit_reset(self.now, dead, peer)
        if at is None:
            return
        frame = self._system_codec.encode(ConnectionReset(dead))
        for actor in actors:
            self._push(at, DELIVER, (peer, actor), (dead, TCP), frame)

    def _reset_actor(self, actor: tuple[str, str], peer: str, delay_us: int = 0) -> None:
        """``actor``'s own kernel tells it that its connection to ``peer`` failed (a reset
        answered, a connect or the retransmissions given up): a ``ConnectionReset`` that
        never crosses the network."""
        node = self.nodes.get(actor[0])
        if node is None or node.state == "down":
            return
        # from its own node's kernel: the reset names the peer, and crosses no link
        self._push(self.now + delay_us, DELIVER, actor, (actor[0], TCP),
                   self._system_codec.encode(ConnectionReset(peer)))

    # -- TCP: retransmission timers, notes, closes -------------------------------------------
    def _network_io(self) -> None:
        """Arm the retransmission timers the network asked for; trace its notes."""
        net = self.network
        if net.timers:
            timers, net.timers = net.timers, []
            for stream in timers:
                self.at(stream.timer_us, self._retransmitter(stream))
        if net.notes:
            notes, net.notes = net.notes, []
            for event, (node, actor), fields in notes:
                self.writer.emit(self.now, node, actor, event, fields)

    def _retransmitter(self, stream: Stream) -> Callable[[], None]:
        def fire() -> None:
            outcome, deliveries, discarded = self.network.retransmit(self.now, stream)
            for at, dst, src, frame in deliveries:
                seq = self._push(at, DELIVER, dst, src, frame)
                if self._tcp_ids:
                    mid = self._tcp_ids.pop(id(frame), None)   # nondeterminism-ok: lookup
                    if mid is not None:
                        self._msg_ids[seq] = mid
            if discarded or outcome not in ("wait", "release", "stale"):
                self._discard(discarded, outcome)
                self._reset_actor(stream.src, stream.dst[0])
            self._network_io()
        return fire

    def _discard(self, held: list[Held], reason: str) -> None:
        for dst, src, frame in held:
            self._tcp_ids.pop(id(frame), None)   # nondeterminism-ok: identity lookup
            self._drop(src, dst, frame, reason)

    def inject(self, dst: tuple[str, str], msg: Any) -> None:
        """Deliver ``msg`` to actor ``dst`` now, from the runtime of its own node (a fault
        acting inside a process, such as a stalled thread): never crosses the network."""
        self._push(self.now, DELIVER, dst, (dst[0], "sim"), self._system_codec.encode(msg))

    def restart_node(self, name: str) -> None:
        if self.nodes[name].state != "down":
            return
        self.emit(name, "sim", "node_restart")
        self.start_node(name)

    def pause_node(self, name: str) -> None:
        node = self.nodes[name]
        if node.state == "up":
            node.state = "paused"
            self.emit(name, "sim", "node_pause")

    def resume_node(self, name: str) -> None:
        node = self.nodes[name]
        if node.state != "paused":
            return
        node.state = "up"
        self.emit(name, "sim", "node_resume")
        held, node.held = node.held, []
        for entry in held:
            seq = self._push(self.now, DELIVER, entry[1], entry[2], entry[3], entry[4])
            mid = self._held_ids.pop(id(entry), None)   # nondeterminism-ok: identity lookup
            if mid is not None:
                self._msg_ids[seq] = mid

    # -- the actor shell -------------------------------------------------------------------
    async def _node_task(self, node: Node, scope: trio.CancelScope,
                         receivers: list[trio.MemoryReceiveChannel[Inbound]]) -> None:
        with scope:
            async with trio.open_nursery() as nursery:
                for recv in receivers:
                    nursery.start_soon(self._actor_loop, recv)

    async def _actor_loop(self, inbox: trio.MemoryReceiveChannel[Inbound]) -> None:
        """One Trio task: usually one actor; the machines of a task that hosts several
        (:attr:`actors.core.Machine.task`) run one message at a time, in batch order."""
        codec = Codec()
        receive = inbox.receive
        receive_nowait = inbox.receive_nowait
        ready = 0
        while True:   # the inbox is never closed: the node's cancel scope ends this loop
            # Items already in the inbox are taken without a Trio scheduling round each;
            # the task yields when it is empty, and every YIELD_EVERY items regardless (so
            # that cancellation and signals are seen in a run where it is always busy).
            try:
                cause, src, frame, m = receive_nowait()
                ready += 1
                if ready >= YIELD_EVERY:
                    ready = 0
                    await trio.lowlevel.checkpoint()
            except trio.WouldBlock:
                ready = 0
                cause, src, frame, m = await receive()
            m.now_us = self.now
            if type(frame) is bytes:
                try:
                    msg = decode(frame)
                except FrameError as exc:
                    m.frame_rejected(src, str(exc))
                else:
                    if type(msg) is ConnectionReset:
                        m.connection_reset(msg.peer)
                    else:
                        m.handle(msg, src)
            else:
                m.handle(frame, src)   # a timer: in-process, never on the wire
            self._results[cause] = self._drain(codec, m)
            self._pending -= 1
            if self._pending == 0:
                self._advance()

    def _drain(self, codec: Codec, m: Machine) -> list[tuple[Machine, list[Outbound]]]:
        """The effects of ``m`` and, after them, of every machine of its task it called
        into (:meth:`actors.core.Machine.touch`), in the order first touched."""
        encode = codec.encode
        out: list[tuple[Machine, list[Outbound]]] = []
        touched = m.touched
        for t in (m, *touched) if touched else (m,):
            effects: list[Any] = t._out
            if effects:   # a machine touched twice is drained the first time
                t._out = []   # Machine.drain, inlined: the list is handed over
                # each Send encoded now, in the sender's task, to a (dst, frame) pair, in
                # place; the other effects stay as they are
                for i, e in enumerate(effects):
                    if type(e) is Send:
                        effects[i] = (e.dst, encode(e.msg))
                out.append((t, effects))
        if touched:
            touched.clear()
        return out

    def _commit(self, m: Machine, effects: list[Outbound]) -> None:
        now = self.now
        for e in effects:
            t = type(e)
            if t is Emit:
                self.writer.emit(now, m.node, m.name, e.event, e.fields)  # type: ignore[union-attr]
            elif t is tuple:
                dst, frame = e  # type: ignore[misc]
                if self.route is not None and dst[0] == "controller":
                    dst = (self.route(m, dst[0]), dst[1])
                net = self.network
                fate = net.send(now, m.address, dst, frame)
                mid = self._trace_send(m, dst, frame, fate) if self.trace_messages else 0
                if isinstance(fate, str):
                    if fate != HELD:
                        self.writer.emit(now, m.node, m.name, "msg_drop", {
                            "src": f"{m.node}/{m.name}", "dst": f"{dst[0]}/{dst[1]}",
                            "msg": _msg_name(frame), "reason": fate, **_msg_detail(frame)})
                        # a reset answers within a round trip; a broken connection at once
                        self._reset_actor(m.address, dst[0], net.rtt_us((m.node, dst[0]))
                                          if fate == REJECT else 0)
                else:
                    seq = self._push(fate[0], DELIVER, dst, m.address, fate[1])
                    if mid:
                        self._msg_ids[seq] = mid
                if mid and fate == HELD:
                    self._tcp_ids[id(frame)] = mid   # nondeterminism-ok: identity lookup
                if net.timers or net.notes:
                    self._network_io()
            elif t is Timer:
                self._push(now + e.delay_us, DELIVER, m.address, m.address,  # type: ignore[union-attr]
                           e.msg, e.handle)  # type: ignore[union-attr]
            elif t is CancelTimer:
                self._cancel(self._cancellable.pop((m.node, m.name, e.handle), 0))  # type: ignore[union-attr]
            else:
                peer = e.peer  # type: ignore[union-attr]
                if self.route is not None and peer == "controller":
                    peer = self.route(m, peer)
                discarded = self.network.close(m.address, peer)
                self.writer.emit(now, m.node, m.name, "connection_close",
                                 {"peer": peer, "discarded": len(discarded)})
                self._discard(discarded, "connection_closed")

    def _cancel(self, seq: int) -> None:
        """Mark the timer ``seq`` cancelled: it keeps its key, and is skipped when due.

        Nearly every request's timeout is cancelled by its answer, so most of the heap is
        dead timers (about 70,000 of 75,000 entries on the reference scenario). When the dead
        are more than half of it, the live entries are kept and the heap rebuilt (linear
        time): pops and pushes on a heap of live entries cost less, and the dead are never
        popped one by one. Keys are unique, so the order of the live ones is unchanged. Not
        in an explored run, whose state digest (emulator.digest) walks the heap as it is.
        """
        entries = self._entries
        entry = entries.get(seq)
        if entry is None or entry[0] != DELIVER:
            return
        entries[seq] = (CANCELLED, *entry[1:])
        self._dead += 1
        heap = self._heap
        if self._dead > 2048 and self._dead * 2 > len(heap) and self.chooser is None:
            live = [k for k in heap if entries[k & SEQ_MASK][0] != CANCELLED]
            for k in heap:
                if entries[k & SEQ_MASK][0] == CANCELLED:
                    del entries[k & SEQ_MASK]
            heap[:] = live
            heapq.heapify(heap)
            self._dead = 0

    def _trace_send(self, m: Machine, dst: tuple[str, str], frame: bytes, fate: Any) -> int:
        """A ``msg_send`` line for a frame ``m`` sends (message tracing); its id."""
        self._msg_count += 1
        kind, keys = describe(frame)
        where: dict[str, Any] = ({"fate": fate} if isinstance(fate, str) else
                                 {"fate": "deliver", "deliver_us": fate[0]})
        self.writer.emit(self.now, m.node, m.name, "msg_send", {
            "msg_id": self._msg_count, "src": f"{m.node}/{m.name}",
            "dst": f"{dst[0]}/{dst[1]}", "msg": kind, **where, **keys})
        return self._msg_count

    def _trace_recv(self, seq: int, dst: tuple[str, str], src: tuple[str, str],
                    frame: bytes) -> None:
        """A ``msg_recv`` line for a traced frame put into its receiver's inbox."""
        mid = self._msg_ids.pop(seq, None)
        if mid is not None:
            self.writer.emit(self.now, dst[0], dst[1], "msg_recv", {
                "msg_id": mid, "src": f"{src[0]}/{src[1]}", "msg": _msg_name(frame)})

    # -- the loop --------------------------------------------------------------------------
    async def run(self, boot: Callable[[], None]) -> None:
        """Start every node via ``boot`` and run until :meth:`stop` or an empty heap."""
        self._done = trio.Event()
        self._wakeup = trio.Event()
        self._t0 = trio.current_time()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            boot()
            self._advance()
            while not self._done.is_set():
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                if self._done.is_set():
                    break
                await trio.sleep_until(self._t0 + self._sleep_to / 1e6 / self.speed)
                self._paced = self._sleep_to
                self._advance()
            nursery.cancel_scope.cancel()

    def _advance(self) -> None:
        """Commit the finished batch, then run the loop up to the next batch of deliveries.

        Called synchronously by whichever actor finishes a batch last (baton passing), so
        one Trio scheduling round serves one instant: the scheduler never waits on an
        event of its own in virtual time. In real-clock mode it hands over to the run()
        task to sleep when the next instant is still in the future.
        """
        for result in self._results:
            if result is not None:
                for owner, effects in result:
                    self._commit(owner, effects)
        self._results = []
        heap = self._heap
        entries = self._entries
        nodes = self.nodes
        network = self.network
        heappop = heapq.heappop
        tracing = self.trace_messages
        while True:
            if not heap or self._stop:
                self._done.set()
                self._wakeup.set()
                return
            if entries[heap[0] & SEQ_MASK][0] == CANCELLED:
                del entries[heappop(heap) & SEQ_MASK]
                self._dead -= 1
                continue
            # an explored run may have delivered a later entry first (emulator.choice):
            # the earlier ones are late, and the clock never goes back
            t = max(heap[0] >> SEQ_BITS, self.now)
            if self.clock == "real" and t > self._paced:
                self._sleep_to = t
                self._wakeup.set()
                return
            self.now = t
            if entries[heap[0] & SEQ_MASK][0] == CONTROL:
                entries.pop(heappop(heap) & SEQ_MASK)[1]()
                continue
            batch: list[tuple[Any, ...]] = []
            seqs: list[int] = []   # the heap seq of each delivery (message tracing only)
            if self.chooser is not None and self.chooser.active(t):
                key = self._choose()
                if key < 0:
                    continue   # a fault started, or the run was pruned: look again
                self.now = max(t, key >> SEQ_BITS)
                seq = key & SEQ_MASK
                batch.append(entries.pop(seq))
                seqs.append(seq)
            else:
                end = (t + 1) << SEQ_BITS
                while heap and heap[0] < end:
                    kind = entries[heap[0] & SEQ_MASK][0]
                    if kind == CONTROL:
                        break
                    seq = heappop(heap) & SEQ_MASK
                    entry = entries.pop(seq)
                    if kind == DELIVER:
                        batch.append(entry)
                        if tracing:
                            seqs.append(seq)
                    elif tracing:
                        self._msg_ids.pop(seq, None)
            results: list[list[tuple[Machine, list[Outbound]]] | None] = [None] * len(batch)
            self._results = results
            pending = 0
            for i, entry in enumerate(batch):
                _, dst, src, frame, handle = entry
                if handle:
                    self._cancellable.pop((dst[0], dst[1], handle), None)
                node = nodes.get(dst[0])
                if node is None or node.state == "down":
                    if tracing:
                        self._msg_ids.pop(seqs[i], None)
                    self._drop(src, dst, frame, "node_down")
                    if node is not None and not node.power_off:
                        self._refuse(dst[0], src)
                    continue
                if network.faulty and src[0] != dst[0]:
                    fate = (("partition" if network.is_cut(src[0], dst[0]) else None)
                            if src[1] == TCP else network.arrive(self.now, dst, src, frame))
                    if fate is not None:
                        if tracing:
                            mid = self._msg_ids.pop(seqs[i], None)
                            if mid is not None and fate == HELD:
                                self._tcp_ids[id(frame)] = mid  # nondeterminism-ok: lookup only
                        if fate == HELD:
                            self._network_io()
                        else:   # a reset is never retransmitted; a reject answers one
                            self._drop(src, dst, frame, fate)
                            if fate == REJECT:
                                self._reset_actor(src, dst[0],
                                                  network.rtt_us((dst[0], src[0])))
                        continue
                if node.state == "paused":
                    node.held.append(entry)
                    if tracing and seqs[i] in self._msg_ids:
                        mid = self._msg_ids.pop(seqs[i])
                        self._held_ids[id(entry)] = mid  # nondeterminism-ok: lookup only
                    continue
                inbox = node.inboxes.get(dst[1])
                if inbox is None:
                    if tracing:
                        self._msg_ids.pop(seqs[i], None)
                    self._drop(src, dst, frame, "no_such_actor")
                    continue
                if tracing:
                    self._trace_recv(seqs[i], dst, src, frame)
                inbox.send_nowait((i, src, frame, node.machines[dst[1]]))
                pending += 1
                if type(frame) is bytes:
                    self.delivered_frames += 1
            if pending:
                self.delivered += pending
                self._pending = pending
                return
            del results

    def candidates(self) -> list[int]:
        """The heap keys an explored run may deliver next (emulator.choice): the first
        entry of each channel — a directed node pair, or one actor's timers — due within
        the horizon of the earliest, and before the next control entry; earliest first."""
        assert self.chooser is not None
        heap = self._heap
        entries = self._entries
        limit = (max(heap[0] >> SEQ_BITS, self.now) + self.chooser.window.horizon_us + 1
                 ) << SEQ_BITS
        out: list[int] = []
        channels: set[tuple[str, ...]] = set()
        for key in sorted(k for k in heap if k < limit):
            kind, dst, src = entries[key & SEQ_MASK][:3]
            if kind == CONTROL:
                break
            if kind == CANCELLED:
                continue
            channel = ("timer", *dst) if src == dst else (src[0], dst[0])
            if channel not in channels:
                channels.add(channel)
                out.append(key)
        return out

    def _choose(self) -> int:
        """Ask the driver which candidate goes next; take it off the heap. -1 when the
        driver started a fault or pruned the run instead."""
        assert self.chooser is not None
        keys = self.candidates()
        entries = self._entries
        described = []
        for key in keys:
            _, dst, src, frame, _h = entries[key & SEQ_MASK]
            described.append((f"{src[0]}/{src[1]}", f"{dst[0]}/{dst[1]}", frame))
        i = self.chooser.decide(described)
        if i < 0:
            return -1
        key = keys[i]
        if key == self._heap[0]:
            heapq.heappop(self._heap)
        else:
            self._heap.remove(key)
            heapq.heapify(self._heap)
        return key

    def _drop(self, src: tuple[str, str], dst: tuple[str, str], frame: Any, reason: str
              ) -> None:
        """``frame``: bytes, or the message of a timer of a crashed actor (never traced)."""
        if src == dst:  # a timer of a crashed actor: not a network event
            return
        self.writer.emit(self.now, src[0], src[1], "msg_drop", {
            "src": f"{src[0]}/{src[1]}", "dst": f"{dst[0]}/{dst[1]}",
            "msg": _msg_name(frame), "reason": reason, **_msg_detail(frame)})


def _msg_name(frame: Any) -> str:
    if type(frame) is not bytes:
        return type(frame).__name__
    try:
        return type(decode(frame)).__name__
    except FrameError:
        return "corrupt"


def _msg_detail(frame: Any) -> dict[str, Any]:
    """For a dropped multi-partition request or response (a fetcher thread's): the
    partitions it named, so a trace shows which fetches were lost together."""
    if type(frame) is not bytes:
        return {}
    try:
        msg = decode(frame)
    except FrameError:
        return {}
    parts = getattr(msg, "parts", None)
    if not isinstance(parts, tuple):
        return {}
    return {"topic_partitions": [f"{p[0]}-{p[1]}" for p in parts]}
