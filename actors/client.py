"""What producers and consumers share: bootstrap brokers, the metadata cache, correlation ids.

A client asks one broker at a time for metadata (round-robin over the bootstrap list, so a
dead broker costs one timeout, as Kafka's ``NetworkClient`` least-loaded-node choice does),
and refreshes on NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH and on a timeout, and
``metadata.max.age.ms`` after the last answer (Kafka's ``Metadata.timeToNextUpdate``: how a
client learns of partitions added to a topic when nothing fails).
"""

from __future__ import annotations

from typing import Any

from actors.core import Address, Machine
from actors.messages import MetadataRequest, MetadataResponse, Tick


class Client(Machine):
    def __init__(self, node: str, name: str, *, brokers: tuple[int, ...],
                 request_timeout_ms: int, retry_backoff_ms: int = 100,
                 metadata_max_age_ms: int = 300_000) -> None:
        super().__init__(node, name)
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

    def refresh_metadata(self) -> None:
        if self._metadata_corr >= 0:
            return   # one metadata request at a time
        corr = self.next_correlation()
        self._metadata_corr = corr
        broker = self.brokers[self._bootstrap_i % len(self.brokers)]
        self._bootstrap_i += 1
        self._metadata_broker = broker
        self.send((f"broker-{broker}", "broker"), MetadataRequest(corr))
        self.timer(self.request_timeout_ms, Tick("metadata_timeout", corr, 0))

    def handle_metadata(self, msg: Any) -> bool:
        """Consume metadata traffic; True when ``msg`` was a metadata message."""
        if type(msg) is MetadataResponse:
            if msg.correlation != self._metadata_corr:
                return True
            self._metadata_corr = -1
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
                self._metadata_corr = -1
                self.refresh_metadata()
            return True
        if type(msg) is Tick and msg.kind == "metadata_retry":
            self.refresh_metadata()
            return True
        return False

    def connection_reset(self, peer: str) -> None:
        """A metadata request in flight to ``peer`` fails now: ask the next broker."""
        if self._metadata_corr >= 0 and peer == f"broker-{self._metadata_broker}":
            self._metadata_corr = -1
            self.refresh_metadata()

    def on_metadata(self) -> None:
        """Called after every metadata response."""
