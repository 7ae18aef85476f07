"""What producers and consumers share: bootstrap brokers, the metadata cache, correlation ids.

A client asks one broker at a time for metadata (round-robin over the bootstrap list, so a
dead broker costs one timeout, as Kafka's ``NetworkClient`` least-loaded-node choice does),
and refreshes on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH and on a timeout, and
``metadata.max.age.ms`` after the last answer (Kafka's ``Metadata.timeToNextUpdate``: how a
client learns of partitions added to a topic when nothing fails).

Connections (Kafka's ``ClusterConnectionStates``): a connection to a broker that is reset or
refused is *blacked out* for ``reconnect.backoff.ms`` (50 ms), doubling with each failed
attempt up to ``reconnect.backoff.max.ms`` (1 s) before jitter of ±20 %
(``updateReconnectBackoff`` through ``ExponentialBackoff``); any answer from the broker makes
the connection ready again and resets the count (``ready``). Nothing is sent to a blacked-out
broker: the metadata request goes to the next bootstrap broker that can be connected to
(``leastLoadedNode`` skips blacked-out nodes), and when none can, it waits until the first
one can (``DefaultMetadataUpdater.maybeUpdate``); the producer's batches for a blacked-out
leader stay in the accumulator (``Sender.sendProducerData`` drops nodes that are not
``ready``) and the consumer does not fetch from it. So a client whose brokers are all down
tries again about once a second, not once per round trip. The jitter comes from the client's
own random stream, so a run stays a function of its seed. Era: the exponential growth and
``reconnect.backoff.max.ms`` are KIP-144 (0.11.0; 0.10 clients waited a constant 50 ms),
the constant metadata backoff is every release before KIP-580 (3.7); isrlab's clients
behave as 2.x-3.6 clients in every protocol era (docs/fidelity.md).
"""

from __future__ import annotations

import math
import random
from typing import Any

from actors.core import US_PER_MS, Address, Machine
from actors.messages import MetadataRequest, MetadataResponse, Tick


class ConnectionStates:
    """The client's view of its connections to brokers (``ClusterConnectionStates``): only
    the broker nodes whose last connection failed are tracked — a node absent is connected
    or connectable."""

    __slots__ = ("_blackout", "_exp_max", "_failed", "_rng", "backoff_ms")

    JITTER = 0.2

    def __init__(self, backoff_ms: int, backoff_max_ms: int, rng: random.Random) -> None:
        self.backoff_ms = backoff_ms
        #: ``ExponentialBackoff.expMax``: the exponent at which the delay reaches the maximum
        #: (0: a constant delay, without jitter, when the maximum is not above the start)
        self._exp_max = (math.log(backoff_max_ms / backoff_ms, 2)
                         if backoff_max_ms > backoff_ms > 0 else 0.0)
        self._rng = rng
        self._failed: dict[str, int] = {}      # node -> failed attempts in a row
        self._blackout: dict[str, int] = {}    # node -> connectable again at (us)

    def _backoff_us(self, attempts: int) -> int:
        if self._exp_max == 0.0:
            return self.backoff_ms * US_PER_MS
        term = self.backoff_ms * 2.0 ** min(attempts, self._exp_max)
        factor = self._rng.uniform(1 - self.JITTER, 1 + self.JITTER)
        return int(term * factor) * US_PER_MS

    def disconnected(self, node: str, now_us: int) -> None:
        """The connection to ``node`` was reset or refused at ``now_us``."""
        attempts = self._failed.get(node, 0)
        self._blackout[node] = now_us + self._backoff_us(attempts)
        self._failed[node] = attempts + 1

    def ready(self, node: str) -> None:
        """An answer came from ``node``: its connection works."""
        if node in self._failed:
            del self._failed[node]
            del self._blackout[node]

    def delay_us(self, node: str, now_us: int) -> int:
        """How long until a connection to ``node`` may be attempted (0: now)."""
        until = self._blackout.get(node)
        return 0 if until is None or until <= now_us else until - now_us


class Client(Machine):
    def __init__(self, node: str, name: str, *, brokers: tuple[int, ...],
                 request_timeout_ms: int, retry_backoff_ms: int = 100,
                 metadata_max_age_ms: int = 300_000, reconnect_backoff_ms: int = 50,
                 reconnect_backoff_max_ms: int = 1000,
                 rng: random.Random | None = None) -> None:
        super().__init__(node, name)
        self.connections = ConnectionStates(
            reconnect_backoff_ms, reconnect_backoff_max_ms,
            rng if rng is not None else random.Random(0))
        #: a metadata request waits for its backoff or a connectable broker until then
        self._metadata_wait_us = 0
        #: the last metadata answer or failure (``Metadata.lastRefreshMs``)
        self._last_refresh_us = -(1 << 62)
        self.metadata_max_age_ms = metadata_max_age_ms
        self._metadata_age_timer = 0
        self._metadata_age_corr = -1
        self.brokers = brokers
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.leaders: dict[tuple[str, int], tuple[int, int]] = {}
        self._corr = 0
        self._metadata_corr = -1
        self._metadata_broker = -1
        self._bootstrap_i = 0

    def next_correlation(self) -> int:
        self._corr += 1
        return self._corr

    def partition_count(self, topic: str) -> int:
        """How many partitions ``topic`` has as far as the metadata has shown (0: none)."""
        return 1 + max((p for t, p in self.leaders if t == topic), default=-1)

    def leader_of(self, topic: str, partition: int) -> tuple[int, int]:
        return self.leaders.get((topic, partition), (-1, -1))

    def replica_address(self, broker: int, topic: str, partition: int) -> Address:
        return (f"broker-{broker}", f"{topic}-{partition}")

    def connect_delay_ms(self, broker: int) -> float:
        """How long until ``broker`` may be sent to (0: now; ``connectionDelay``)."""
        return self.connections.delay_us(f"broker-{broker}", self.now_us) / US_PER_MS

    def refresh_metadata(self) -> None:
        """Ask for metadata (``Metadata.requestUpdate``): at once, unless one request is in
        flight, the last answer or failure is less than ``retry.backoff.ms`` old
        (``Metadata.timeToAllowUpdate`` before KIP-580), or every broker is blacked out."""
        if self._metadata_corr >= 0 or self._metadata_wait_us > self.now_us:
            return
        n = len(self.brokers)
        now = self.now_us
        delays = [self.connections.delay_us(f"broker-{self.brokers[(self._bootstrap_i + i) % n]}",
                                            now) for i in range(n)]
        wait_us = max(min(delays),
                      self._last_refresh_us + self.retry_backoff_ms * US_PER_MS - now)
        if wait_us > 0:
            self._metadata_wait_us = now + wait_us
            self.timer(wait_us / US_PER_MS, Tick("metadata_wait", 0, 0))
            return
        self._metadata_wait_us = 0
        self._bootstrap_i += delays.index(0)
        corr = self.next_correlation()
        self._metadata_corr = corr
        broker = self.brokers[self._bootstrap_i % n]
        self._bootstrap_i += 1
        self._metadata_broker = broker
        self.send((f"broker-{broker}", "broker"), MetadataRequest(corr))
        self.timer(self.request_timeout_ms, Tick("metadata_timeout", corr, 0))

    def handle_metadata(self, msg: Any, src: Address) -> bool:
        """Consume metadata traffic; True when ``msg`` was a metadata message. Any message
        from a broker shows that the connection to it works."""
        self.connections.ready(src[0])
        if type(msg) is MetadataResponse:
            if msg.correlation != self._metadata_corr:
                return True
            self._metadata_corr = -1
            self._last_refresh_us = self.now_us
            for topic, partition, leader, epoch in msg.partitions:
                old = self.leaders.get((topic, partition))
                if old is None or epoch >= old[1]:
                    self.leaders[(topic, partition)] = (leader, epoch)
            if any(leader < 0 for leader, _ in self.leaders.values()) or not self.leaders:
                self.timer(self.retry_backoff_ms * 5, Tick("metadata_retry", 0, 0))
            self.cancel_timer(self._metadata_age_timer)
            self._metadata_age_corr = msg.correlation
            self._metadata_age_timer = self.timer(
                self.metadata_max_age_ms, Tick("metadata_age", msg.correlation, 0),
                cancellable=True)
            self.on_metadata()
            return True
        if type(msg) is Tick and msg.kind == "metadata_age":
            if msg.token == self._metadata_age_corr:   # else a stale timer
                self._metadata_age_timer = 0
                self.refresh_metadata()
            return True
        if type(msg) is Tick and msg.kind == "metadata_timeout":
            if msg.token == self._metadata_corr:
                # NetworkClient.handleTimedOutRequests: the connection to that broker is
                # closed; its requests in flight fail, the metadata request among them
                peer = f"broker-{self._metadata_broker}"
                self.disconnect(peer)
                self.connection_reset(peer)
                if self._metadata_corr == msg.token:   # a subclass kept it: fail it here
                    self._metadata_corr = -1
                    self._last_refresh_us = self.now_us   # Metadata.failedUpdate
                    self.refresh_metadata()
            return True
        if type(msg) is Tick and msg.kind == "metadata_retry":
            self.refresh_metadata()
            return True
        if type(msg) is Tick and msg.kind == "metadata_wait":
            self._metadata_wait_us = 0
            self.refresh_metadata()
            return True
        return False

    def connection_reset(self, peer: str) -> None:
        """The connection to ``peer`` is down (``NetworkClient.handleDisconnections``): it is
        blacked out for the reconnect backoff, and a metadata request in flight to it fails
        now: the next broker is asked."""
        self.connections.disconnected(peer, self.now_us)
        if self._metadata_corr >= 0 and peer == f"broker-{self._metadata_broker}":
            self._metadata_corr = -1
            self._last_refresh_us = self.now_us   # Metadata.failedUpdate
            self.refresh_metadata()

    def on_metadata(self) -> None:
        """Called after every metadata response."""
