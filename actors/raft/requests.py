"""One request in flight per peer: Kafka 3.7.0 ``RequestManager`` and its ``ConnectionState``.

Each destination is *ready* (may be sent a request), *awaiting* a response (since
``lastSendTimeMs``; after ``quorum.request.timeout.ms`` it is ready again and a late answer
is ignored: only the in-flight correlation id is expected) or *backing off* after a failed
answer (for ``quorum.retry.backoff.ms``). Every state change of the quorum resets all
connections (``resetConnections``): requests of the old state are obsolete.

An observer that does not know the leader asks any voter: ``findReadyVoter`` starts at a
random voter and walks the (sorted) voters for a ready one, giving up when one already has a
request in flight.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from actors.raft.timer import FOREVER

READY, AWAITING, BACKING_OFF = "ready", "awaiting_request", "backing_off"


@dataclass(slots=True)
class ConnectionState:
    node_id: int
    retry_backoff_ms: int
    request_timeout_ms: int
    state: str = READY
    last_send_time_ms: int = 0
    last_fail_time_ms: int = 0
    in_flight: int | None = None     # the correlation id awaited

    def _backoff_complete(self, now_ms: int) -> bool:
        return (self.state == BACKING_OFF
                and now_ms >= self.last_fail_time_ms + self.retry_backoff_ms)

    def has_request_timed_out(self, now_ms: int) -> bool:
        return (self.state == AWAITING
                and now_ms >= self.last_send_time_ms + self.request_timeout_ms)

    def is_ready(self, now_ms: int) -> bool:
        if self._backoff_complete(now_ms) or self.has_request_timed_out(now_ms):
            self.state = READY
        return self.state == READY

    def is_backing_off(self, now_ms: int) -> bool:
        return self.state == BACKING_OFF and not self._backoff_complete(now_ms)

    def has_inflight_request(self, now_ms: int) -> bool:
        return self.state == AWAITING and not self.has_request_timed_out(now_ms)

    def remaining_request_time_ms(self, now_ms: int) -> int:
        if self.has_inflight_request(now_ms):
            return self.last_send_time_ms + self.request_timeout_ms - now_ms
        return 0

    def remaining_backoff_ms(self, now_ms: int) -> int:
        if self.is_backing_off(now_ms):
            return self.last_fail_time_ms + self.retry_backoff_ms - now_ms
        return 0

    def is_response_expected(self, correlation_id: int) -> bool:
        return self.in_flight == correlation_id

    def on_response_error(self, correlation_id: int, now_ms: int) -> None:
        if self.in_flight == correlation_id:
            self.last_fail_time_ms = now_ms
            self.state = BACKING_OFF
            self.in_flight = None

    def on_response_received(self, correlation_id: int) -> None:
        if self.in_flight == correlation_id:
            self.state = READY
            self.in_flight = None

    def on_request_sent(self, correlation_id: int, now_ms: int) -> None:
        self.last_send_time_ms = now_ms
        self.in_flight = correlation_id
        self.state = AWAITING

    def reset(self) -> None:
        self.state = READY
        self.in_flight = None


@dataclass(slots=True)
class RequestManager:
    voters: tuple[int, ...]
    retry_backoff_ms: int
    request_timeout_ms: int
    rng: random.Random
    connections: dict[int, ConnectionState] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for v in self.voters:
            self.get_or_create(v)

    def get_or_create(self, node_id: int) -> ConnectionState:
        conn = self.connections.get(node_id)
        if conn is None:
            conn = ConnectionState(node_id, self.retry_backoff_ms, self.request_timeout_ms)
            self.connections[node_id] = conn
        return conn

    def find_ready_voter(self, now_ms: int) -> int | None:
        """``RequestManager.findReadyVoter``."""
        n = len(self.voters)
        start = self.rng.randrange(n)
        found: int | None = None
        for i in range(n):
            voter = self.voters[(start + i) % n]
            conn = self.connections[voter]
            if conn.is_ready(now_ms):
                found = voter
            elif conn.in_flight is not None:
                return None
        return found

    def backoff_before_available_voter(self, now_ms: int) -> int:
        best = FOREVER
        for voter in self.voters:
            conn = self.connections[voter]
            if conn.is_ready(now_ms):
                return 0
            if conn.is_backing_off(now_ms):
                best = min(best, conn.remaining_backoff_ms(now_ms))
            else:
                best = min(best, conn.remaining_request_time_ms(now_ms))
        return best

    def reset_all(self) -> None:
        for conn in self.connections.values():
            conn.reset()
