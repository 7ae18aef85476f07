"""A consumer group member: committed offsets, positions, fetches below the HW, resets.

The member owns the partitions the *range* or *round-robin* assignor gives its index in a
group of ``members`` (static membership: a restarted member keeps its index, so a crash
costs a restart, not a rebalance). On (re)start it reads the committed offset of each
partition from the group coordinator broker; with none committed, or on
OFFSET_OUT_OF_RANGE, it applies ``auto.offset.reset`` (earliest / latest / none) through
ListOffsets. It fetches from the leader only what is below the HW (the leader enforces
it) and traces each record as ``consume`` with the HW the fetch was served under.
Positions are committed every ``auto.commit.interval.ms`` (``offset_commit``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from actors.client import Client
from actors.messages import (
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    Fetch,
    FetchResponse,
    ListOffsets,
    ListOffsetsResponse,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    Tick,
)


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    group: str
    topic: str
    partitions: int
    member: int
    members: int
    assignor: str = "range"
    auto_offset_reset: str = "latest"
    auto_commit_interval_ms: int = 5000
    request_timeout_ms: int = 30000
    fetch_max_wait_ms: int = 500
    max_poll_records: int = 500
    retry_backoff_ms: int = 100


def assign(partitions: int, members: int, member: int, assignor: str) -> tuple[int, ...]:
    """Kafka's RangeAssignor / RoundRobinAssignor for one topic."""
    if assignor == "roundrobin":
        return tuple(p for p in range(partitions) if p % members == member)
    per, extra = divmod(partitions, members)
    start = member * per + min(member, extra)
    return tuple(range(start, start + per + (1 if member < extra else 0)))


def coordinator_for(group: str, brokers: tuple[int, ...]) -> int:
    """The group's coordinator: a stable function of the group id (crc32, not hash())."""
    return brokers[zlib.crc32(group.encode()) % len(brokers)]


class Consumer(Client):
    def __init__(self, node: str, cfg: ConsumerConfig, *, brokers: tuple[int, ...]) -> None:
        super().__init__(node, "consumer", brokers=brokers,
                         request_timeout_ms=cfg.request_timeout_ms,
                         retry_backoff_ms=cfg.retry_backoff_ms)
        self.cfg = cfg
        self.assigned = assign(cfg.partitions, cfg.members, cfg.member, cfg.assignor)
        self.coordinator = (f"broker-{coordinator_for(cfg.group, brokers)}", "broker")
        self.position: dict[int, int] = {}
        self.committed: dict[int, int] = {}
        self.outstanding: dict[int, int] = {}   # partition -> correlation in flight
        self.consumer_name = f"{cfg.group}-{cfg.member}"

    def start(self) -> None:
        self.emit("rebalance", group=self.cfg.group, generation=1,
                  assignment=list(self.assigned), member=self.cfg.member)
        self.refresh_metadata()
        for p in self.assigned:
            self._offset_fetch(p)
        self.timer(self.cfg.auto_commit_interval_ms, Tick("commit", 0, 0))

    def _offset_fetch(self, p: int) -> None:
        corr = self.next_correlation()
        self.outstanding[p] = corr
        self.send(self.coordinator, OffsetFetch(self.cfg.group, self.cfg.topic, p, corr))
        self.timer(self.cfg.request_timeout_ms, Tick("timeout", corr, p))

    def _reset(self, p: int, old: int) -> None:
        policy = self.cfg.auto_offset_reset
        if policy == "none":
            self.emit("consumer_error", group=self.cfg.group, consumer=self.consumer_name,
                      topic=self.cfg.topic, partition=p, error="NoOffsetForPartition")
            self.outstanding.pop(p, None)
            return
        leader, _ = self.leader_of(self.cfg.topic, p)
        if leader < 0:
            self._retry_later(p)
            return
        corr = self.next_correlation()
        self.outstanding[p] = corr
        self.send(self.replica_address(leader, self.cfg.topic, p),
                  ListOffsets(self.cfg.topic, p, -2 if policy == "earliest" else -1, corr))
        self.timer(self.cfg.request_timeout_ms, Tick("timeout", corr, p))
        self.position[p] = -1 - old if old >= 0 else -1   # remembers the old for tracing

    def _fetch(self, p: int) -> None:
        leader, epoch = self.leader_of(self.cfg.topic, p)
        if leader < 0:
            self._retry_later(p)
            self.refresh_metadata()
            return
        corr = self.next_correlation()
        self.outstanding[p] = corr
        self.send(self.replica_address(leader, self.cfg.topic, p), Fetch(
            self.cfg.topic, p, -1, -1, self.position[p], -1, epoch, 0,
            self.cfg.max_poll_records, corr))
        self.timer(self.cfg.fetch_max_wait_ms + self.cfg.request_timeout_ms,
                   Tick("timeout", corr, p))

    def _retry_later(self, p: int) -> None:
        self.outstanding.pop(p, None)
        self.timer(self.cfg.retry_backoff_ms * 10, Tick("retry", 0, p))

    def _resume(self, p: int) -> None:
        if p not in self.position:
            self._offset_fetch(p)
        elif self.position[p] < 0:
            self._reset(p, -1 - self.position[p] if self.position[p] < -1 else -1)
        else:
            self._fetch(p)

    def handle(self, msg: Any, src: tuple[str, str]) -> None:
        if self.handle_metadata(msg):
            return
        t = type(msg)
        cfg = self.cfg
        if t is FetchResponse:
            p = msg.partition
            if self.outstanding.get(p) != msg.correlation:
                return
            del self.outstanding[p]
            if msg.error == NONE:
                pos = self.position[p]
                for rec in msg.records:
                    if rec[0] < pos:
                        continue
                    self.emit("consume", group=cfg.group, consumer=self.consumer_name,
                              topic=cfg.topic, partition=p, offset=rec[0], value=rec[1],
                              hw=msg.high_watermark, leader_epoch=msg.leader_epoch)
                    pos = rec[0] + 1
                self.position[p] = pos
                self._fetch(p)
            elif msg.error == OFFSET_OUT_OF_RANGE:
                self._reset(p, self.position[p])
            else:
                if msg.error in (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH):
                    self.refresh_metadata()
                self._retry_later(p)
        elif t is OffsetFetchResponse:
            p = msg.partition
            if self.outstanding.get(p) != msg.correlation:
                return
            del self.outstanding[p]
            if msg.error != NONE:
                self._retry_later(p)
            elif msg.offset >= 0:
                self.position[p] = msg.offset
                self.committed[p] = msg.offset
                self._fetch(p)
            else:
                self._reset(p, -1)
        elif t is ListOffsetsResponse:
            p = msg.partition
            if self.outstanding.get(p) != msg.correlation:
                return
            del self.outstanding[p]
            if msg.error != NONE:
                self.refresh_metadata()
                self._retry_later(p)
                return
            old = self.position.get(p, -1)
            old = -1 - old if old < -1 else -1
            self.emit("offset_reset", group=cfg.group, consumer=self.consumer_name,
                      topic=cfg.topic, partition=p, old=old, new=msg.offset,
                      policy=cfg.auto_offset_reset)
            self.position[p] = msg.offset
            self._fetch(p)
        elif t is OffsetCommitResponse:
            pass
        elif t is Tick:
            k = msg.kind
            if k == "timeout":
                p = msg.arg
                if self.outstanding.get(p) == msg.token:
                    del self.outstanding[p]
                    self.refresh_metadata()
                    self._resume(p)
            elif k == "retry":
                if msg.arg not in self.outstanding:
                    self._resume(msg.arg)
            elif k == "commit":
                self._commit()
                self.timer(cfg.auto_commit_interval_ms, Tick("commit", 0, 0))

    def _commit(self) -> None:
        for p in self.assigned:
            pos = self.position.get(p, -1)
            if pos >= 0 and pos != self.committed.get(p):
                self.committed[p] = pos
                self.emit("offset_commit", group=self.cfg.group, consumer=self.consumer_name,
                          topic=self.cfg.topic, partition=p, offset=pos)
                self.send(self.coordinator, OffsetCommit(self.cfg.group, self.cfg.topic, p,
                                                         pos, self.next_correlation()))
