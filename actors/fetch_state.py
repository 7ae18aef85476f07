"""A replica's follower side: Kafka's ``PartitionFetchState`` and ``AbstractFetcherThread`` steps.

:class:`PartitionFetchState` is what a follower does for its own partition: it builds its
part of a Fetch (fetch offset, lastFetchedEpoch, currentLeaderEpoch, logStartOffset) or of
an OffsetsForLeaderEpoch request, awaits one answer at a time (alone, in the conformance
harness, it sends the request itself with a timeout), backs off by
``replica.fetch.backoff.ms`` after an error in the state it was in (a damaged record batch
in the answer is one: nothing of that answer is appended, and the same offset is fetched
again), stops fetching when fenced (FENCED_LEADER_EPOCH) until a new leader epoch, and
processes the answer: appends, the follower HW (docs/eras.md 1.6), the leader's
logStartOffset (``processPartitionData``), and truncation by era (1.7: to the HW, KIP-101,
KIP-279's ``getOffsetTruncationState``, truncate-on-fetch on a diverging epoch,
``fetchOffsetAndTruncate`` on OFFSET_OUT_OF_RANGE, at once). Its fields (``fetch_state``:
truncating, fetching or failed; ``fetch_delay_until_us``, ``fetch_offset``,
``last_fetched_epoch``, the correlation it awaits) are declared with the rest of the state
in :class:`actors.local_replica.LocalReplica`; for a replica run by a replica manager, the
fetcher thread (:mod:`actors.fetcher`) decides when requests go.
"""

from __future__ import annotations

from typing import Any

from actors.local_replica import LocalReplica
from actors.log import UNDEFINED
from actors.messages import (
    FENCED_LEADER_EPOCH,
    NONE,
    OFFSET_OUT_OF_RANGE,
    Fetch,
    FetchResponse,
    OffsetsForLeaderEpoch,
    OffsetsForLeaderEpochResponse,
    Tick,
)


class PartitionFetchState(LocalReplica):
    """The follower side of a partition replica (see the module note)."""

    # -- follower --------------------------------------------------------------------------
    def start_following(self) -> None:
        """The partition's fetch state as the fetcher builds it when the replica becomes a
        follower (``AbstractFetcherThread.addPartitions``), and its first request:

        * 0.10 (no leader epochs): truncate to the HW, then fetch from there;
        * 0.11-2.1 (OffsetsForLeaderEpoch): *truncating* at the HW
          (``ReplicaManager.makeFollowers``: the initial fetch offset is the HW) — the first
          request asks for the end offset of the cache's latest epoch
          (``ReplicaFetcherThread.buildLeaderEpochRequest``, 0.11.0.0, 2.0.0;
          ``AbstractFetcherThread.buildLeaderEpochRequest``, 2.1.0). With an empty cache
          0.11 and 2.0 ask for epoch -1, which the leader answers undefined, and truncate
          to the HW; 2.1 does not ask (:meth:`_send_offsets_for_leader_epoch`);
        * 2.8+ (truncate on fetch; ``AbstractFetcherThread.partitionFetchState``,
          ``ReplicaManager.initialFetchOffset``, 2.8.0 and 3.7.0): *fetching* from the LEO
          with the cache's latest epoch as lastFetchedEpoch; with no epoch in the cache
          (``latestEpoch`` empty) *truncating* at the HW instead, which ``maybeTruncate``
          does locally, without asking the leader (``partitionsWithoutEpochs`` →
          ``truncateToHighWatermark``), then fetching from the HW."""
        self._outstanding = -1
        self.fetch_delay_until_us = 0
        trunc = self.rules.truncation
        if trunc == "hw":
            self._truncate(self.hw, "high_watermark")
            self._fetch_from_here()
        elif trunc in ("kip101", "kip279"):
            self.fetch_offset = self.hw
            self._send_offsets_for_leader_epoch()
        elif self.log.epochs.latest_epoch() == UNDEFINED:
            self._truncate(self.hw, "high_watermark")
            self._fetch_from_here()
        else:
            self._fetch_from_here()

    def _fetch_from_here(self) -> None:
        """Fetching from the LEO, with the cache's latest epoch as lastFetchedEpoch (how
        Kafka builds the state after a truncation, an out-of-range reset or on becoming a
        follower: ``lastFetchedEpoch = latestEpoch(tp)``)."""
        self.last_fetched_epoch = self.log.epochs.latest_epoch()
        self._send_fetch()

    def _send_fetch(self) -> None:
        if self.role != "follower" or self.leader < 0:
            return
        self.fetch_state = "fetching"
        if self.host is not None:   # the fetcher thread sends it, with its siblings
            self._outstanding = -1
            self.touch(self.host).wake(self)
            return
        corr = self._next_correlation()
        self.send(self._addr(self.leader), Fetch(*self.fetch_part(corr)))
        self._fetch_timer = self.timer(
            self.cfg.replica_fetch_wait_max_ms + self.cfg.replica_socket_timeout_ms,
            Tick("fetch_timeout", corr, self._fetch_gen), cancellable=True)

    def fetch_part(self, corr: int) -> tuple[Any, ...]:
        """This partition's part of a fetch request with correlation ``corr`` (the fields
        of a :class:`Fetch`): from the LEO, with the era's epochs; awaits its answer."""
        self._outstanding = corr
        self._outstanding_is_epoch = False
        # lastFetchedEpoch (2.8+): PartitionFetchState.lastFetchedEpoch, kept as Kafka keeps
        # it (see last_fetched_epoch). Not the last record's epoch: a replica that led an
        # epoch without appending offers that epoch, so that the leader answers with a
        # diverging epoch and the truncation trims the stale entry (KAFKA-7415).
        last_epoch = self.last_fetched_epoch if self.rules.truncation == "fetch" else -1
        own_epoch = self.broker_epochs.get(self.broker_id, (-1, False))[0]
        return (self.topic, self.partition, self.broker_id, own_epoch, self.leo, last_epoch,
                self.leader_epoch if self.rules.epoch_fencing else -1,
                self.log.log_start_offset, self.cfg.replica_fetch_max_records, corr)

    def _send_offsets_for_leader_epoch(self) -> None:
        if self.role != "follower" or self.leader < 0:
            return
        if (self.rules.epochless_truncation_is_local
                and self.log.epochs.latest_epoch() == UNDEFINED):
            # 2.1.0 ReplicaFetcherThread.fetchEpochsFromLeader: a partition whose latest
            # epoch is undefined is left out of the request and answered (NONE, undefined)
            # locally: getOffsetTruncationState truncates it to its fetch offset (the HW)
            self._truncate(self.fetch_offset, "high_watermark")
            self._fetch_from_here()
            return
        self.fetch_state = "truncating"
        if self.host is not None:   # the fetcher thread asks, for all it is truncating
            self._outstanding = -1
            self.touch(self.host).wake(self)
            return
        corr = self._next_correlation()
        self.send(self._addr(self.leader), OffsetsForLeaderEpoch(*self.epoch_part(corr)))
        self._fetch_timer = self.timer(self.cfg.replica_socket_timeout_ms,
                                       Tick("fetch_timeout", corr, self._fetch_gen),
                                       cancellable=True)

    def epoch_part(self, corr: int) -> tuple[Any, ...]:
        """This partition's part of an OffsetsForLeaderEpoch request (the fields of an
        :class:`OffsetsForLeaderEpoch`): the epoch cache's latest epoch
        (``LeaderEpochFileCache.latestEpoch``, -1 when empty — not the last record's epoch,
        which differs after leading an epoch without appending); awaits the answer."""
        self._outstanding = corr
        self._outstanding_is_epoch = True
        return (self.topic, self.partition, self.broker_id, self.log.epochs.latest_epoch(),
                self.leader_epoch if self.rules.epoch_fencing else -1, corr)

    def awaits(self, corr: int) -> bool:
        """Whether this follower awaits its part of the fetcher's request ``corr``."""
        return self.role == "follower" and self._outstanding == corr

    def fetch_failed(self, corr: int, peer: str, reason: str) -> None:
        """The fetcher thread's request ``corr`` failed as a whole (a disconnect, a timeout,
        an error for the request): if this partition was in it, it is delayed by
        ``replica.fetch.backoff.ms`` (``AbstractFetcherThread.processFetchRequest``: every
        partition of the thread is marked with an error)."""
        if self.role == "follower" and self._outstanding == corr:
            self._backoff()

    def end_backoff(self) -> None:
        """The delay after an error is over: the partition goes on in the state it was
        delayed in. ``AbstractFetcherThread.delayPartitions`` (0.11.0.0, 2.0.0, 2.1.0,
        2.8.0, 3.7.0) keeps the fetch offset and the truncating/fetching state and only sets
        a ``DelayedItem``: a partition that was fetching fetches again from its LEO, one
        that was truncating asks for its epoch's end offset again. A delay never puts a
        fetching partition back into truncation — only a new LeaderAndIsr (a new fetch
        state) does; asking again after every backoff would repair a divergence that Kafka
        keeps."""
        self.fetch_delay_until_us = 0
        if self.role != "follower" or self.fetch_state == "failed":
            return
        if self.fetch_state == "truncating":
            self._send_offsets_for_leader_epoch()
        else:
            self._send_fetch()

    def _backoff(self) -> None:
        self._outstanding = -1
        if self.host is not None:   # the thread leaves it out until the delay is over
            self.fetch_delay_until_us = self.now_us + int(
                self.cfg.replica_fetch_backoff_ms * 1000)
            self.touch(self.host).wake(self)
            return
        self.timer(self.cfg.replica_fetch_backoff_ms, Tick("fetch_backoff", 0, self._fetch_gen))

    def _fenced(self) -> None:
        """FENCED_LEADER_EPOCH: the leader is in a newer epoch than this follower knows. The
        fetcher stops fetching the partition until new leader information arrives: 2.1.0
        ``AbstractFetcherThread.onPartitionFenced`` removes it from the thread's partition
        states ("Will await the new LeaderAndIsr state before resuming fetching"); 2.8.0 and
        3.7.0 ``markPartitionFailed`` (``failedPartitions`` + ``removePartitions``) when the
        request carried the fetch state's current epoch — always so here, as an answer to an
        older fetch state is ignored. No retry after ``replica.fetch.backoff.ms``: the next
        LeaderAndIsr (or metadata delta) with a new leader epoch re-adds it
        (``addFetcherForPartitions``, which also clears ``failedPartitions``)."""
        self._outstanding = -1
        self.fetch_delay_until_us = 0
        self.fetch_state = "failed"
        if self.host is not None:
            self.touch(self.host).unfollow(self)

    def on_epoch_answer(self, r: OffsetsForLeaderEpochResponse) -> None:
        if self.role != "follower" or r.correlation != self._outstanding:
            return
        self._outstanding = -1
        self.cancel_timer(self._fetch_timer)
        if r.error == FENCED_LEADER_EPOCH:
            self._fenced()
            return
        if r.error != NONE:
            self._backoff()   # "Retrying leaderEpoch request": still truncating
            return
        if r.end_offset == UNDEFINED:
            # the leader has no epoch information for the asked epoch: 0.11.0.0 truncates
            # to the HW (ReplicaFetcherThread.maybeTruncate); 2.0.0-2.1.0 to the fetch
            # state's offset (getOffsetTruncationState: the initial fetch offset — the HW
            # when the partition was added — or the last intermediate truncation's offset)
            target = self.hw if self.rules.truncation == "kip101" else self.fetch_offset
            self._truncate(target, "high_watermark")
            self._fetch_from_here()
            return
        if self.rules.truncation == "kip101":
            self._truncate(min(r.end_offset, self.leo), "leader_epoch")
            self._fetch_from_here()
            return
        done = self._truncate_to_epoch_end(r.leader_epoch, r.end_offset)
        if done:
            self._fetch_from_here()
        else:
            self.fetch_offset = self.leo   # updateFetchOffsetAndMaybeMarkTruncationComplete
            self._send_offsets_for_leader_epoch()

    def _truncate_to_epoch_end(self, leader_epoch: int, leader_end: int) -> bool:
        """``AbstractFetcherThread.getOffsetTruncationState`` (KIP-279; tags 2.0.0, 2.8.0).
        True when done."""
        local_epoch, local_end = self.log.epochs.end_offset_for(leader_epoch, self.leo)
        if local_end == UNDEFINED:
            # no local epoch at or below the leader's answer: "the leader's offset only will
            # be used for truncation" (the same as KIP-101 before KIP-279)
            self._truncate(min(leader_end, self.leo), "leader_epoch")
            return True
        if local_epoch != leader_epoch:
            # we don't know the leader's epoch: cut to the end of our largest smaller one
            self._truncate(min(local_end, self.leo), "leader_epoch")
            return False
        self._truncate(min(leader_end, local_end, self.leo), "leader_epoch")
        return True

    def on_fetch_answer(self, r: FetchResponse) -> None:
        if self.role != "follower" or r.correlation != self._outstanding:
            return
        self._outstanding = -1
        self.cancel_timer(self._fetch_timer)
        if r.error == OFFSET_OUT_OF_RANGE:
            # AbstractFetcherThread.fetchOffsetAndTruncate (the unclean-election path). The
            # partition goes on fetching at once, with no delay: handleOutOfRangeError puts
            # a new Fetching state without a DelayedItem (0.11.0.0 processFetchRequest: a
            # new PartitionFetchState(newOffset); 2.1.0, 2.8.0, 3.7.0 the same), only a
            # failed offset lookup is delayed — isrlab reads the leader's offsets from the
            # answer, so its lookup cannot fail
            if r.log_end_offset < self.leo:
                self._truncate(r.log_end_offset, "offset_out_of_range")
            elif r.log_start_offset > self.leo:
                old_leo = self.leo
                self.log.truncate_fully_and_start_at(r.log_start_offset)
                self.emit("log_truncate", **self._tp(), old_leo=old_leo,
                          new_leo=r.log_start_offset, reason="offset_out_of_range")
                self._set_hw(r.log_start_offset, "truncate")
            self._fetch_from_here()
            return
        if r.error == FENCED_LEADER_EPOCH:
            self._fenced()
            return
        if r.error != NONE:
            self._backoff()   # partitionsWithError: delayed, still fetching
            return
        if r.diverging_epoch >= 0:
            if not self.rules.truncate_before_hw:   # KAFKA-14704: HW applied first
                self._follower_apply_hw(r.high_watermark)
                if r.log_start_offset > self.hw:
                    # 2.8.0 processFetchRequest hands the answer to processPartitionData
                    # before it looks at the diverging epoch; ReplicaFetcherThread there
                    # sets the HW, then Log.maybeIncrementLogStartOffset(the leader's log
                    # start offset) throws OffsetOutOfRangeException when that is above
                    # the follower's HW, and the "unexpected error" handler marks the
                    # partition failed: no truncation, no retry until a new leader epoch.
                    # A 2.8 leader answers a diverging fetch below its log start offset
                    # this way (no KAFKA-12996 yet: Partition.readRecords).
                    self._fenced()
                    return
            self._truncate_to_epoch_end(r.diverging_epoch, r.diverging_end_offset)
            # truncateOnFetchResponse → updateFetchOffsetAndMaybeMarkTruncationComplete:
            # fetching, lastFetchedEpoch = latestEpoch(tp)
            self._fetch_from_here()
            return
        if r.records:
            old = self.leo
            if r.records[0][0] != old:
                self._backoff()      # not contiguous (stale response): refetch
                return
            if r.damaged:
                # UnifiedLog.appendAsFollower validates every batch of the partition's data
                # before it appends any (analyzeAndValidateRecords: a batch whose CRC does
                # not match raises CorruptRecordException), so nothing of this answer is
                # appended and processPartitionData stops before the HW and the log start
                # offset. AbstractFetcherThread.processFetchRequest logs it, adds the
                # partition to partitionsWithError and delays it by replica.fetch.backoff.ms
                # at the same fetch offset ("it does not bring the fetcher thread down"):
                # the next fetches meet the same batch, and the follower stays behind it
                self.emit("corrupt_record", **self._tp(), offset=r.damaged[0], where="fetch",
                          leader=self.leader, fetch_offset=old)
                self._backoff()
                return
            self._append(r.records)
            # processFetchRequest: the new fetch state's lastFetchedEpoch is the appended
            # data's last batch epoch (LogAppendInfo.lastLeaderEpoch; 2.8.0, 3.7.0)
            self.last_fetched_epoch = r.records[-1][2]
            self.emit("leo_update", **self._tp(), old=old, new=self.leo)
        self._follower_apply_hw(r.high_watermark)
        if r.log_start_offset > self.log.log_start_offset:
            self._increment_log_start_offset(min(r.log_start_offset, self.hw), "leader")
        self._send_fetch()

    def _follower_apply_hw(self, leader_hw: int) -> None:
        self.leader_hw = leader_hw
        new = min(self.leo, leader_hw)
        new = max(new, self.log.log_start_offset)
        self._set_hw(new, "fetch_response")
