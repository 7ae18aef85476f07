"""A Kafka producer: partitioner, accumulator, in-flight requests, retries, idempotence.

Records carry unique values ``"p<id>-<n>"`` so every loss and duplicate is attributable.
The workload (rate, keys) comes from the scenario; the settings are Kafka's:

* ``acks`` 0 (acked at send, offset -1), 1, all (-1);
* ``linger.ms`` / ``batch.size``: one open batch per partition, closed when full, or once
  lingered when it can be sent (nothing queued before it, a request slot free, a leader
  known); until then it keeps taking records, as the last batch of a partition's deque in
  ``RecordAccumulator`` does;
* ``max.in.flight.requests.per.connection`` batches in flight per partition;
* ``retries`` / ``retry.backoff.ms`` / ``delivery.timeout.ms`` / ``request.timeout.ms``:
  a retriable error puts the batch back at the head of its partition's queue, where it
  waits out ``retry.backoff.ms`` (the partition sends nothing meanwhile, as
  ``RecordAccumulator`` skips a backing-off batch), and with idempotence a retried batch
  goes only when no batch of another sequence is first in flight (one request at a time
  until the sequences line up); a batch older than the delivery
  timeout fails with its last error;
* ``enable.idempotence``: a producer id and per-partition sequence numbers (assigned when
  a batch is first sent); the leader de-duplicates retries and rejects gaps
  (OUT_OF_ORDER_SEQUENCE_NUMBER), which keeps per-partition order with up to 5 in flight.
  When the oldest unacknowledged batch itself is out of order, the leader lost what came
  before it (a lossy crash, an unclean election): as KIP-360 does, the producer bumps its
  epoch for that partition (here: a fresh producer id) and numbers its batches afresh.

Every send, ack and error is traced (``produce_send``, ``produce_ack``, ``produce_error``).

The workload clock: at a rate up to one record per ``WORKLOAD_STEP_MS`` each record is sent
at its own instant (``1/rate`` apart); faster, the clock ticks every ``WORKLOAD_STEP_MS``
and sends the records due by then (an application calling ``send()`` in a loop), and a
batch's ``linger.ms`` is checked at those ticks (it falls on one: batches open at ticks).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final

from actors.client import Client
from actors.core import US_PER_MS
from actors.messages import (
    DELIVERY_TIMEOUT,
    NETWORK_EXCEPTION,
    NONE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    RETRIABLE,
    Produce,
    ProduceResponse,
    Record,
    Tick,
)
from actors.partitioner import StickyPartitioner, default_partition, legacy_partition

ACKS = {"0": 0, "1": 1, "all": -1, "-1": -1}


@dataclass(frozen=True, slots=True)
class ProducerConfig:
    topic: str
    partitions: int
    acks: str = "all"
    rate: float = 100.0
    keys: int = 16
    partitioner: str = "default"
    stop_ms: int = 2**62
    enable_idempotence: bool = True
    retries: int = 2147483647
    max_in_flight: int = 5
    linger_ms: int = 5
    batch_size: int = 16384
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    record_bytes: int = 100
    metadata_max_age_ms: int = 300000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000


#: the workload clock's finest step (see the module note)
WORKLOAD_STEP_MS: Final = 1.0


@dataclass(slots=True)
class Batch:
    partition: int
    records: list[tuple[str, str | None, int]] = field(default_factory=list)  # value,key,n
    seq: int = -1            # first sequence number, assigned when first sent (idempotence)
    epoch: int = 0           # producer epoch the sequence belongs to
    created_ms: int = 0
    attempts: int = 0
    last_error: str = NONE
    #: a failed batch is not resent before this (``retry.backoff.ms`` after the failure)
    retry_at_us: int = 0


class Producer(Client):
    def __init__(self, node: str, producer_id: int, cfg: ProducerConfig,
                 rng: random.Random, *, brokers: tuple[int, ...],
                 connection_rng: random.Random | None = None) -> None:
        super().__init__(node, "producer", brokers=brokers,
                         request_timeout_ms=cfg.request_timeout_ms,
                         retry_backoff_ms=cfg.retry_backoff_ms,
                         metadata_max_age_ms=cfg.metadata_max_age_ms,
                         reconnect_backoff_ms=cfg.reconnect_backoff_ms,
                         reconnect_backoff_max_ms=cfg.reconnect_backoff_max_ms,
                         rng=connection_rng)
        self.producer_id = producer_id
        self.cfg = cfg
        self.rng = rng
        self.acks = ACKS[cfg.acks]
        self.pid = 1000 + producer_id if cfg.enable_idempotence else -1
        self.sent = 0
        #: the topic's partition count as the metadata shows it (0: the topic does not exist
        #: yet, and the application's send() blocks)
        self.partitions = cfg.partitions
        self.open: dict[int, Batch] = {}
        self.queues: dict[int, deque[Batch]] = {p: deque() for p in range(cfg.partitions)}
        self.inflight: dict[int, tuple[Batch, int]] = {}   # correlation -> (batch, broker)
        self.request_timers: dict[int, int] = {}   # correlation -> its timeout's handle
        self.inflight_per_partition: dict[int, int] = {p: 0 for p in range(cfg.partitions)}
        self.sequences: dict[int, int] = {p: 0 for p in range(cfg.partitions)}
        self.epochs: dict[int, int] = {p: 0 for p in range(cfg.partitions)}
        self.sticky = StickyPartitioner(max(1, cfg.partitions), rng)
        self.key_partitions: dict[str, int] = {}   # key -> partition (a pure function: cached)
        #: records come in steps of WORKLOAD_STEP_MS (several per step) above this rate
        self.stepped = cfg.rate * WORKLOAD_STEP_MS > 1000.0
        self._workload_start_us = 0
        #: records sent before the workload clock last (re)started
        self._sent_base = 0
        self._blocked = False
        #: a drain is due then, when a blacked-out leader's connection may be tried again
        self._wake_us = 0

    def start(self) -> None:
        self.refresh_metadata()
        self._workload_start_us = self.now_us
        self.timer(0, Tick("produce", 0, 0))

    # -- workload ----------------------------------------------------------------------------
    def _next_record(self) -> None:
        cfg = self.cfg
        value = f"p{self.producer_id}-{self.sent}"
        self.sent += 1
        if cfg.keys > 0:
            k = f"k{self.rng.randrange(cfg.keys)}"
            key: str | None = k
            cached = self.key_partitions.get(k)
            if cached is not None:
                partition = cached
            else:
                partition = self.key_partitions[k] = self._key_partition(k)
        else:
            key = None
            partition = self.sticky.partition()
        self.emit("produce_send", topic=cfg.topic, partition=partition, key=key, value=value,
                  producer=self.producer_id, acks=cfg.acks)
        if self.acks == 0:
            pass
        batch = self.open.get(partition)
        if batch is None:
            batch = self.open[partition] = Batch(partition, created_ms=self.now_ms)
            if not self.stepped:   # stepped: the workload ticks check linger.ms
                self.timer(cfg.linger_ms, Tick("linger", partition, 0))
        batch.records.append((value, key, self.sent - 1))
        if len(batch.records) * cfg.record_bytes >= cfg.batch_size:
            self._close(partition)

    def _step(self) -> None:
        """One tick of the stepped workload clock: close the batches that have lingered
        long enough (before any new record, as their linger timers would have fired first),
        then send every record due by now."""
        cfg = self.cfg
        if any(self.now_ms - b.created_ms >= cfg.linger_ms for b in self.open.values()):
            self._drain()
        due = self._sent_base + int(
            (self.now_us - self._workload_start_us) * cfg.rate / 1e6 + 1e-9) + 1
        while self.sent < due:
            self._next_record()
        self.timer(WORKLOAD_STEP_MS, Tick("produce", 0, 0))

    def _sendable(self, partition: int) -> bool:
        """Whether the partition's open batch would be drained now: nothing queued before
        it, a request slot free, and a known leader (``RecordAccumulator.ready``/``drain``).
        A lingered batch that cannot go keeps taking records until it is full, as Kafka's
        last batch in a partition's deque does (``tryAppend``), so a backlog built during an
        outage leaves in full batches."""
        leader = self.leader_of(self.cfg.topic, partition)[0]
        return (not self.queues[partition]
                and self.inflight_per_partition[partition] < self.cfg.max_in_flight
                and leader >= 0 and not self._blacked_out(leader))

    def _blacked_out(self, leader: int) -> bool:
        """Whether ``leader``'s connection is in its reconnect backoff (the Sender skips a
        node that is not ``ready``); if so, the accumulator is drained again once it ends."""
        wait_ms = self.connect_delay_ms(leader)
        if wait_ms <= 0:
            return False
        wake_us = self.now_us + int(wait_ms * US_PER_MS)
        if not self.now_us < self._wake_us <= wake_us:
            self._wake_us = wake_us
            self.timer(wait_ms, Tick("retry", 0, 0))
        return True

    def _seal(self, partition: int) -> None:
        batch = self.open.pop(partition, None)
        if batch is not None:
            self.queues[partition].append(batch)
            if batch.records and self.cfg.keys <= 0:
                self.sticky.on_new_batch()

    def _close(self, partition: int) -> None:
        self._seal(partition)
        self._drain()

    def _drain(self) -> None:
        cfg = self.cfg
        for partition in range(self.partitions):
            q = self.queues[partition]
            open_batch = self.open.get(partition)
            if (not q and open_batch is not None
                    and self.now_ms - open_batch.created_ms >= cfg.linger_ms):
                if self._sendable(partition):
                    self._seal(partition)   # a lingered batch that can go now
                elif self.leader_of(cfg.topic, partition)[0] < 0:
                    # a ready batch without a leader asks for metadata (Sender: the
                    # accumulator's unknownLeaderTopics -> metadata.requestUpdate)
                    self.refresh_metadata()
            while q and self.inflight_per_partition[partition] < cfg.max_in_flight:
                if q[0].retry_at_us > self.now_us:
                    break   # backing off: the partition waits (RecordAccumulator.drain)
                if self.pid >= 0 and q[0].seq >= 0 and q[0].epoch == self.epochs[partition]:
                    # an idempotent retry goes only when it is first in line: while a batch
                    # with another sequence is the first in flight, the partition waits
                    # (RecordAccumulator.shouldStopDrainBatchesForPartition), so that
                    # retries are one request at a time until the sequences line up again
                    first = min((b.seq for b, _ in self.inflight.values()
                                 if b.partition == partition and b.epoch == q[0].epoch),
                                default=q[0].seq)
                    if q[0].seq != first:
                        break
                leader, epoch = self.leader_of(cfg.topic, partition)
                if leader < 0:
                    self.refresh_metadata()
                    break
                if self._blacked_out(leader):
                    break
                batch = q.popleft()
                if self.now_ms - batch.created_ms > cfg.delivery_timeout_ms:
                    self._fail(batch, batch.last_error if batch.last_error != NONE
                               else DELIVERY_TIMEOUT)
                    continue
                self._send(batch, leader)

    def _send(self, batch: Batch, leader: int) -> None:
        corr = self.next_correlation()
        batch.attempts += 1
        p = batch.partition
        if batch.seq < 0 or batch.epoch != self.epochs[p]:
            # sequences are assigned on first send, and again after an epoch bump
            batch.seq = self.sequences[p]
            batch.epoch = self.epochs[p]
            self.sequences[p] = batch.seq + len(batch.records)
        pid = self.pid + 100_000 * batch.epoch if self.pid >= 0 else -1
        recs: tuple[Record, ...] = tuple((-1, v, -1, self.now_ms, pid, batch.seq + i, k)
                                         for i, (v, k, _n) in enumerate(batch.records))
        self.send(self.replica_address(leader, self.cfg.topic, batch.partition),
                  Produce(self.cfg.topic, batch.partition, self.acks, recs,
                          self.cfg.request_timeout_ms, corr))
        if self.acks == 0:
            for v, _k, _s in batch.records:
                self.emit("produce_ack", topic=self.cfg.topic, partition=batch.partition,
                          value=v, offset=-1, producer=self.producer_id, acks=self.cfg.acks)
            return
        self.inflight[corr] = (batch, leader)
        self.inflight_per_partition[batch.partition] += 1
        self.request_timers[corr] = self.timer(
            self.cfg.request_timeout_ms, Tick("request_timeout", corr, 0), cancellable=True)

    def _oldest_unacked(self, batch: Batch) -> bool:
        first = batch.records[0][2]
        p = batch.partition
        older_inflight = any(b.partition == p and b.records[0][2] < first
                             for b, _ in self.inflight.values())
        older_queued = any(b.records[0][2] < first for b in self.queues[p])
        return not older_inflight and not older_queued

    def _reenqueue(self, batch: Batch) -> None:
        """Put a failed batch back in sequence order (``RecordAccumulator.reenqueue``):
        several batches failing together must be resent oldest first."""
        q = self.queues[batch.partition]
        first = batch.records[0][2]
        i = 0
        while i < len(q) and q[i].records and q[i].records[0][2] < first:
            i += 1
        q.insert(i, batch)

    def _fail(self, batch: Batch, error: str) -> None:
        for v, _k, _s in batch.records:
            self.emit("produce_error", topic=self.cfg.topic, partition=batch.partition,
                      value=v, producer=self.producer_id, error=error)

    # -- responses -----------------------------------------------------------------------------
    def _complete(self, corr: int, error: str, base_offset: int) -> None:
        entry = self.inflight.pop(corr, None)
        if entry is None:
            return
        self.cancel_timer(self.request_timers.pop(corr, 0))
        batch, _ = entry
        self.inflight_per_partition[batch.partition] -= 1
        cfg = self.cfg
        if error == NONE:
            for i, (v, _k, _s) in enumerate(batch.records):
                self.emit("produce_ack", topic=cfg.topic, partition=batch.partition, value=v,
                          offset=base_offset + i, producer=self.producer_id, acks=cfg.acks)
        elif (error in RETRIABLE and batch.attempts <= cfg.retries
              and self.now_ms - batch.created_ms < cfg.delivery_timeout_ms):
            if error == OUT_OF_ORDER_SEQUENCE_NUMBER and self._oldest_unacked(batch):
                # the leader lost the batches before this one (a lossy crash, an unclean
                # election): KIP-360 bumps the producer epoch and numbers afresh
                self.epochs[batch.partition] += 1
                self.sequences[batch.partition] = 0
                self.emit("producer_epoch_bump", producer=self.producer_id,
                          topic=cfg.topic, partition=batch.partition,
                          epoch=self.epochs[batch.partition])
            batch.last_error = error
            backoff_us = max(0, int(cfg.retry_backoff_ms * US_PER_MS))
            batch.retry_at_us = self.now_us + backoff_us
            self._reenqueue(batch)
            self.refresh_metadata()
            self.timer(cfg.retry_backoff_ms, Tick("retry", 0, 0))
            return
        else:
            self._fail(batch, error)
        self._drain()

    def handle(self, msg: Any, src: tuple[str, str]) -> None:
        if self.handle_metadata(msg, src):
            return
        if type(msg) is ProduceResponse:
            self._complete(msg.correlation, msg.error, msg.base_offset)
        elif type(msg) is Tick:
            k = msg.kind
            if k == "produce":
                if self.partitions == 0 and self.now_ms < self.cfg.stop_ms:
                    self._wait_on_metadata()
                elif self.now_ms < self.cfg.stop_ms and self.cfg.rate > 0 and self.stepped:
                    self._step()
                elif self.now_ms < self.cfg.stop_ms and self.cfg.rate > 0:
                    self._next_record()
                    self.timer(1000.0 / self.cfg.rate, Tick("produce", 0, 0))
                else:
                    for p in sorted(self.open):
                        self._close(p)
            elif k == "linger":
                self._drain()
            elif k == "retry":
                self._drain()
            elif k == "request_timeout":
                self.request_timers.pop(msg.token, None)
                entry = self.inflight.get(msg.token)
                if entry is not None:
                    self.emit("request_failed", topic=self.cfg.topic,
                              partition=entry[0].partition, peer=f"broker-{entry[1]}",
                              request="Produce", reason="timeout")
                self._complete(msg.token, "REQUEST_TIMED_OUT", -1)
                if entry is not None:
                    # NetworkClient.handleTimedOutRequests: the connection is closed, and
                    # every other request in flight on it fails as disconnected
                    peer = f"broker-{entry[1]}"
                    self.disconnect(peer)
                    self.connection_reset(peer)

    def connection_reset(self, peer: str) -> None:
        """Every produce request in flight to ``peer`` fails with NETWORK_EXCEPTION now
        (``Sender.handleDisconnection``); a retriable error, so the batches are retried after
        ``retry.backoff.ms`` with fresh metadata — a batch the dead leader had appended may
        then be written twice unless the producer is idempotent, as in Kafka."""
        super().connection_reset(peer)
        for corr in sorted(c for c, (_, broker) in self.inflight.items()
                           if f"broker-{broker}" == peer):
            batch = self.inflight[corr][0]
            self.emit("request_failed", topic=self.cfg.topic, partition=batch.partition,
                      peer=peer, request="Produce", reason="disconnected")
            self._complete(corr, NETWORK_EXCEPTION, -1)

    # -- the topic's partitions (metadata) -------------------------------------------------------
    def _key_partition(self, key: str) -> int:
        """The partitioner's choice for a keyed record over the partitions known now."""
        if self.cfg.partitioner == "legacy":
            return legacy_partition(key, self.partitions)
        return default_partition(key.encode(), self.partitions)

    def _wait_on_metadata(self) -> None:
        """``KafkaProducer.waitOnMetadata``: the topic is not in the metadata (not created
        yet), so the application's ``send()`` blocks, asking for metadata every
        ``retry.backoff.ms``; no record is produced meanwhile (``max.block.ms`` is not
        modelled: docs/fidelity.md)."""
        if not self._blocked:
            self._blocked = True
            self.emit("produce_blocked", topic=self.cfg.topic, producer=self.producer_id,
                      reason="topic not in metadata")
        self.refresh_metadata()
        self.timer(max(1, self.cfg.retry_backoff_ms), Tick("produce", 0, 0))

    def on_metadata(self) -> None:
        n = self.partition_count(self.cfg.topic)
        if n > self.partitions:
            self._grow(n)
        self._drain()

    def _grow(self, n: int) -> None:
        """The metadata shows more partitions (the topic was created, or partitions were
        added: ``kafka-topics --alter --partitions``): the partitioner spreads over all of
        them from now on. A key's partition is ``murmur2(key) % count`` over the count the
        metadata has at ``send()`` (``BuiltInPartitioner.partitionForKey``), so keys move:
        traced as ``partitions_change`` with every key seen so far that now maps elsewhere
        (its records before and after are in different partitions; per-partition order
        still holds)."""
        old = self.partitions
        for p in range(old, n):
            self.queues[p] = deque()
            self.inflight_per_partition[p] = 0
            self.sequences[p] = 0
            self.epochs[p] = 0
        self.partitions = n
        self.sticky.set_num_partitions(n)
        moved: dict[str, list[int]] = {}
        for k in sorted(self.key_partitions):
            was = self.key_partitions[k]
            now = self.key_partitions[k] = self._key_partition(k)
            if now != was:
                moved[k] = [was, now]
        self.emit("partitions_change", topic=self.cfg.topic, old=old, new=n,
                  producer=self.producer_id, moved_keys=moved)
        if old == 0 and self._blocked:
            # send() returns: the application produces at its rate from now on
            self._blocked = False
            self._workload_start_us = self.now_us
            self._sent_base = self.sent
