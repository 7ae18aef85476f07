"""A replica fetcher thread: Kafka's ``AbstractFetcherThread`` / ``ReplicaFetcherThread``.

A follower broker does not fetch partition by partition. ``ReplicaFetcherManager`` runs
``num.replica.fetchers`` threads per leader broker and gives each follower partition to
thread ``Utils.abs(31 * topic.hashCode + partition) % num.replica.fetchers``
(``AbstractFetcherManager.getFetcherId``, with Java's ``String.hashCode``: see
:func:`fetcher_id`). A thread works in a loop (``doWork``), one request in flight:

1. ``maybeTruncate``: the partitions in the *truncating* state go in one
   OffsetsForLeaderEpoch request (:class:`~actors.messages.ReplicaEpochs`); each truncates
   by the answer and goes on fetching (or asks again, KIP-279);
2. ``maybeFetch``: every partition in the *fetching* state that is not *delayed* goes in
   one FetchRequest (:class:`~actors.messages.ReplicaFetch`) with its own fetch offset,
   lastFetchedEpoch, currentLeaderEpoch and logStartOffset; the answer is handed to each
   partition (``processPartitionData``: append, follower HW, truncation on a diverging
   epoch), and the loop goes round again.

So partitions share their thread's fate: one truncating partition holds its siblings'
fetches for a round trip, a failed request (a timeout, a disconnect) delays *every*
partition of the thread by ``replica.fetch.backoff.ms`` (``processFetchRequest`` marks
``partitionStates.partitionSet`` with an error), and a stalled thread (the
``stall_fetcher`` fault: a thread stuck on a lock, a slow disk, a long GC) starves all of
them at once — the leader then drops from the ISR every one that is being written to,
while a follower already at the leader's LEO of an idle partition stays caught up.

The per-partition state (Kafka's ``PartitionFetchState``) lives on the partition replica
(:class:`actors.replica.Replica`: ``fetch_state``, ``fetch_delay_until_us``, the
correlation it awaits, declared in :mod:`actors.local_replica`), which also does the
per-partition work (:mod:`actors.fetch_state`); the thread decides when
requests go and what they carry. Both run in the broker's replica-manager task
(:mod:`actors.replica_manager`), one message at a time, so the thread reads and drives its
partitions directly, as Kafka's thread calls into ``Partition``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from actors.core import Machine
from actors.log import records_bytes
from actors.messages import (
    NONE,
    FetcherStall,
    FetchResponse,
    OffsetsForLeaderEpochResponse,
    ReplicaEpochs,
    ReplicaEpochsResponse,
    ReplicaFetch,
    ReplicaFetchResponse,
    Tick,
)
from actors.quota import ReplicationQuota

if TYPE_CHECKING:
    from actors.replica import Replica

#: the actor that answers fetcher threads on a leader broker (``ReplicaManager``)
REPLICA_MANAGER = "replica-manager"


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units,
    in 32-bit two's complement. Never Python's ``hash()``, which is salted per process."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = 31 * h + (data[i] << 8 | data[i + 1])
    return _int32(h)


def _int32(n: int) -> int:
    """``n`` wrapped to Java's 32-bit two's complement ``int``."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def java_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs``, except that Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def fetcher_id(topic: str, partition: int, num_fetchers: int) -> int:
    """``AbstractFetcherManager.getFetcherId``: ``Utils.abs(31 * topic.hashCode +
    partition) % num.replica.fetchers`` with Java int arithmetic (``Utils.abs`` maps
    Integer.MIN_VALUE to 0)."""
    return java_abs(_int32(31 * java_string_hash(topic) + partition)) % num_fetchers


def thread_name(fetcher: int, leader: int) -> str:
    """Kafka's thread name: ``ReplicaFetcherThread-<fetcher id>-<leader broker id>``."""
    return f"ReplicaFetcherThread-{fetcher}-{leader}"


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    num_replica_fetchers: int = 1
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_socket_timeout_ms: int = 30_000
    replica_fetch_backoff_ms: int = 1000


class ReplicaFetcherThread(Machine):
    """One fetcher thread of follower broker ``broker_id`` for leader broker ``leader``."""

    def __init__(self, node: str, broker_id: int, leader: int, fetcher: int,
                 cfg: FetcherConfig, correlations: Iterator[int]) -> None:
        super().__init__(node, thread_name(fetcher, leader))
        self.broker_id = broker_id
        self.leader = leader
        self.fetcher = fetcher
        self.cfg = cfg
        self.partitions: dict[tuple[str, int], Replica] = {}
        self._in_flight = -1                 # correlation of the request in flight
        self._in_flight_kind = ""
        self._in_flight_parts: list[Replica] = []
        self._timeout = 0                    # its timeout timer
        #: shared by the broker's threads: a partition moving between threads can never
        #: take another thread's late answer for its own
        self._correlations = correlations
        self._busy = False                   # handing an answer to its partitions
        self._delay_token = 0
        self._stalled_until_us = 0
        self._stall_token = 0
        self._held: list[Callable[[], None]] = []
        self._adding = False                 # partitions added this instant: send after
        #: the broker's follower-side replication throttle (set by the replica manager)
        self.quota: ReplicationQuota | None = None

    def _fields(self) -> dict[str, Any]:
        return {"leader": self.leader, "fetcher_id": self.fetcher}

    def _names(self) -> list[str]:
        return [f"{t}-{p}" for t, p in self.partitions]

    # -- partitions joining and leaving (ReplicaFetcherManager) ------------------------------
    def add(self, r: Replica) -> None:
        """``addFetcherForPartitions``: the partition starts in the state its replica chose
        when it became a follower (truncating or fetching). Kafka adds every partition of
        one LeaderAndIsr (or metadata delta) in one call and the thread's next request
        carries them all: an idle thread waits until the end of the instant (a zero-delay
        timer) before it sends, so that partitions made followers together fetch together."""
        self.partitions[(r.topic, r.partition)] = r
        if not self._adding and self._in_flight < 0:
            self._adding = True
            self.timer(0, Tick("partitions_added", 0, 0))
        self.emit("fetcher_partitions", **self._fields(), change="add",
                  topic_partition=f"{r.topic}-{r.partition}", topic_partitions=self._names())

    def remove(self, r: Replica) -> None:
        """``removeFetcherForPartitions``: leadership moved, the replica became the leader
        or left the assignment; an answer for it still in flight is ignored. A fenced
        partition (FENCED_LEADER_EPOCH, its fetch state "failed") leaves the thread too
        (``onPartitionFenced``: 2.1.0 ``partitionStates.remove``, 2.8.0/3.7.0
        ``markPartitionFailed``), traced with ``failed: true``, until a new leader epoch
        adds it back."""
        if self.partitions.pop((r.topic, r.partition), None) is not None:
            extra = {"failed": True} if r.fetch_state == "failed" else {}
            self.emit("fetcher_partitions", **self._fields(), change="remove",
                      topic_partition=f"{r.topic}-{r.partition}",
                      topic_partitions=self._names(), **extra)

    # -- doWork ----------------------------------------------------------------------------
    def pump(self) -> None:
        """Send the next request if none is in flight: truncation first, then a fetch of
        every partition ready for it; with nothing to send and partitions delayed, wake
        when the first delay ends."""
        if (self._busy or self._adding or self._in_flight >= 0
                or self.now_us < self._stalled_until_us):
            return
        now = self.now_us
        self._busy = True
        try:
            for r in list(self.partitions.values()):
                if 0 < r.fetch_delay_until_us <= now:
                    self.touch(r).end_backoff()
        finally:
            self._busy = False
        ready = [r for r in self.partitions.values()
                 if r.role == "follower" and r.fetch_delay_until_us == 0
                 and r.fetch_state in ("truncating", "fetching")]
        truncating = [r for r in ready if r.fetch_state == "truncating"]
        if truncating:
            self._send_epochs(truncating)
            return
        q = self.quota
        if ready and q is not None and q.rate >= 0 and q.is_exceeded(now // 1000):
            # shouldFollowerThrottle: a throttled partition behind the leader's HW is left
            # out of the request while the follower quota is exceeded
            kept = [r for r in ready
                    if not q.is_throttled((r.topic, r.partition)) or r.leo >= r.leader_hw]
            if not kept:   # an empty request is not sent: the thread backs off
                self._delay_token += 1
                self.timer(self.cfg.replica_fetch_backoff_ms,
                           Tick("fetch_backoff", self._delay_token, 0))
                return
            ready = kept
        if ready:
            self._send_fetch(ready)
            return
        delays = [r.fetch_delay_until_us for r in self.partitions.values()
                  if r.fetch_delay_until_us > now]
        if delays:
            self._delay_token += 1
            self.timer((min(delays) - now) / 1000, Tick("fetch_backoff", self._delay_token, 0))

    def _next_correlation(self) -> int:
        return next(self._correlations)

    def _send_fetch(self, parts: list[Replica]) -> None:
        corr = self._next_correlation()
        own_epoch = parts[0].broker_epochs.get(self.broker_id, (-1, False))[0]
        req = ReplicaFetch(self.broker_id, own_epoch, self.name,
                           self.cfg.replica_fetch_wait_max_ms, self.cfg.replica_fetch_min_bytes,
                           tuple(self.touch(r).fetch_part(corr) for r in parts), corr)
        self._launch(req, corr, "Fetch", parts,
                     self.cfg.replica_fetch_wait_max_ms + self.cfg.replica_socket_timeout_ms)

    def _send_epochs(self, parts: list[Replica]) -> None:
        corr = self._next_correlation()
        req = ReplicaEpochs(self.broker_id, self.name,
                            tuple(self.touch(r).epoch_part(corr) for r in parts), corr)
        self._launch(req, corr, "OffsetsForLeaderEpoch", parts,
                     self.cfg.replica_socket_timeout_ms)

    def _launch(self, req: Any, corr: int, kind: str, parts: list[Replica],
                timeout_ms: float) -> None:
        self._in_flight = corr
        self._in_flight_kind = kind
        self._in_flight_parts = parts
        self.send((f"broker-{self.leader}", REPLICA_MANAGER), req)
        self._timeout = self.timer(timeout_ms, Tick("request_timeout", corr, 0),
                                   cancellable=True)

    # -- answers ---------------------------------------------------------------------------
    def handle(self, msg: Any, src: tuple[str, str]) -> None:
        t = type(msg)
        if t is FetcherStall:
            self._stall(msg.duration_ms)
            return
        if self.now_us < self._stalled_until_us:
            self._held.append(lambda: self.handle(msg, src))   # a stuck thread reads later
            return
        if t is ReplicaFetchResponse:
            if msg.correlation == self._in_flight:
                self._answered(msg.error, [FetchResponse(*p) for p in msg.parts])
        elif t is ReplicaEpochsResponse:
            if msg.correlation == self._in_flight:
                self._answered(msg.error, [OffsetsForLeaderEpochResponse(*p)
                                           for p in msg.parts])
        elif t is Tick:
            if msg.kind == "request_timeout" and msg.token == self._in_flight:
                # ReplicaFetcherBlockingSend.sendRequest closes the connection on failure
                self.disconnect(f"broker-{self.leader}")
                self._failed("timeout")
            elif msg.kind == "fetch_backoff" and msg.token == self._delay_token:
                self.pump()
            elif msg.kind == "partitions_added":
                self._adding = False
                self.pump()
            elif msg.kind == "stall_end" and msg.token == self._stall_token:
                self._stall(0)

    def _answered(self, error: str, answers: list[FetchResponse]
                  | list[OffsetsForLeaderEpochResponse]) -> None:
        if error != NONE:
            self._failed(error)
            return
        corr = self._in_flight
        self.cancel_timer(self._timeout)
        self._in_flight = -1
        q = self.quota
        if q is not None and q.rate >= 0:
            q.record(sum(records_bytes(a.records) for a in answers
                         if isinstance(a, FetchResponse)
                         and q.is_throttled((a.topic, a.partition))), self.now_us // 1000)
        self._busy = True
        try:
            for a in answers:
                r = self.partitions.get((a.topic, a.partition))
                if r is not None and r.awaits(corr):
                    if isinstance(a, FetchResponse):
                        self.touch(r).on_fetch_answer(a)
                    else:
                        self.touch(r).on_epoch_answer(a)
            for r in self._in_flight_parts:   # a partition the answer left out
                if r.awaits(corr):
                    self.touch(r).fetch_failed(corr, self.name, "no answer")
        finally:
            self._busy = False
        self._in_flight_parts = []
        self.pump()

    def _failed(self, reason: str) -> None:
        """The whole request failed: every partition in it is delayed."""
        corr = self._in_flight
        self.cancel_timer(self._timeout)
        self._in_flight = -1
        self.emit("request_failed", peer=f"broker-{self.leader}", **self._fields(),
                  request=self._in_flight_kind, reason=reason,
                  topic_partitions=[f"{r.topic}-{r.partition}" for r in self._in_flight_parts])
        self._busy = True
        try:
            for r in self._in_flight_parts:
                self.touch(r).fetch_failed(corr, f"broker-{self.leader}", reason)
        finally:
            self._busy = False
        self._in_flight_parts = []
        self.pump()

    def connection_reset(self, peer: str) -> None:
        """The leader's process died: the request in flight fails now (``NetworkClient``
        disconnects), and the thread's partitions back off."""
        if self.now_us < self._stalled_until_us:
            self._held.append(lambda: self.connection_reset(peer))
            return
        if self._in_flight >= 0 and peer == f"broker-{self.leader}":
            self._failed("disconnected")

    # -- the stall_fetcher fault -----------------------------------------------------------
    def _stall(self, duration_ms: int) -> None:
        if duration_ms > 0:
            self._stalled_until_us = self.now_us + duration_ms * 1000
            self._stall_token += 1
            self.emit("fetcher_stall", **self._fields(), duration_ms=duration_ms,
                      topic_partitions=self._names())
            self.timer(duration_ms, Tick("stall_end", self._stall_token, 0))
            return
        if self._stalled_until_us == 0:
            return
        self._stalled_until_us = 0
        self._stall_token += 1
        self.emit("fetcher_resume", **self._fields(), topic_partitions=self._names())
        held, self._held = self._held, []
        for fn in held:
            fn()
        self.pump()
