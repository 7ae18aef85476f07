"""An admin client: timed AdminClient calls from the scenario (``[[admin]]``).

Today one call: ``delete_records`` (KIP-107, ``AdminClient.deleteRecords``): the leader
moves its logStartOffset to the requested offset (``-1``: its HW) at once and answers only
when the *low watermark* — the minimum logStartOffset over the leader and every live
follower — has reached it, i.e. once the followers have fetched and copied the new
logStartOffset. Each request and its result are traced (``delete_records``,
``delete_records_result``).
"""

from __future__ import annotations

import random
from typing import Any

from actors.client import Client
from actors.messages import DeleteRecords, DeleteRecordsResponse, Tick


class Admin(Client):
    def __init__(self, node: str, actions: list[dict[str, Any]], *,
                 brokers: tuple[int, ...], request_timeout_ms: int = 30000,
                 rng: random.Random | None = None) -> None:
        super().__init__(node, "admin", brokers=brokers, request_timeout_ms=request_timeout_ms,
                         rng=rng)
        self.actions = actions
        self.inflight: dict[int, dict[str, Any]] = {}
        #: correlation -> (the action's index, the leader it was sent to)
        self._sent: dict[int, tuple[int, int]] = {}

    def start(self) -> None:
        self.refresh_metadata()
        for i, a in enumerate(self.actions):
            delay_ms = max(0.0, float(a["at_s"]) * 1000 - self.now_ms)
            self.timer(delay_ms, Tick("admin", i, 0))

    def _delete(self, i: int) -> None:
        a = self.actions[i]
        leader, _ = self.leader_of(a["topic"], a["partition"])
        if leader < 0:
            self.refresh_metadata()
            self.timer(self.retry_backoff_ms * 10, Tick("admin", i, 0))
            return
        corr = self.next_correlation()
        self.inflight[corr] = a
        self.emit("delete_records", topic=a["topic"], partition=a["partition"],
                  offset=a["offset"], leader=leader)
        self.send(self.replica_address(leader, a["topic"], a["partition"]),
                  DeleteRecords(a["topic"], a["partition"], a["offset"],
                                self.request_timeout_ms, corr))
        self._sent[corr] = (i, leader)
        # the client's own timeout, a little past the broker's (which answers
        # REQUEST_TIMED_OUT at request_timeout_ms): an answer that never comes
        self.timer(self.request_timeout_ms * 1.1, Tick("admin_timeout", corr, 0))

    def _retry(self, corr: int, peer: str, reason: str) -> None:
        """The request failed without an answer: KafkaAdminClient retries the call after
        ``retry.backoff.ms`` with fresh metadata (until its API timeout)."""
        i, _ = self._sent.pop(corr)
        a = self.inflight.pop(corr)
        self.emit("request_failed", topic=a["topic"], partition=a["partition"], peer=peer,
                  request="DeleteRecords", reason=reason)
        self.refresh_metadata()
        self.timer(self.retry_backoff_ms, Tick("admin", i, 0))

    def connection_reset(self, peer: str) -> None:
        super().connection_reset(peer)
        for corr in sorted(c for c, (_, b) in self._sent.items() if f"broker-{b}" == peer):
            self._retry(corr, peer, "disconnected")

    def handle(self, msg: Any, src: tuple[str, str]) -> None:
        if self.handle_metadata(msg, src):
            return
        if type(msg) is Tick and msg.kind == "admin":
            self._delete(msg.token)
        elif type(msg) is Tick and msg.kind == "admin_timeout":
            sent = self._sent.get(msg.token)
            if sent is not None:   # NetworkClient closes the connection of a timed-out call
                peer = f"broker-{sent[1]}"
                self._retry(msg.token, peer, "timeout")
                self.disconnect(peer)
                self.connection_reset(peer)
        elif type(msg) is DeleteRecordsResponse:
            self._sent.pop(msg.correlation, None)
            a = self.inflight.pop(msg.correlation, None)
            if a is not None:
                self.emit("delete_records_result", topic=msg.topic, partition=msg.partition,
                          error=msg.error, low_watermark=msg.low_watermark)
