"""The Raft client of one node, sans-IO: Kafka 3.7.0 ``KafkaRaftClient``.

The shell drives it with four calls, each given the current time:

* :meth:`KafkaRaftClient.handle_request` — an inbound Vote, BeginQuorumEpoch,
  EndQuorumEpoch or Fetch; the answer goes to the outbox at once, except an empty Fetch the
  leader *parks* (the fetch purgatory) until records arrive or ``maxWaitMs`` passes;
* :meth:`KafkaRaftClient.handle_response` — the answer to one of its requests (ignored
  unless it is the one in flight to that peer); :meth:`handle_send_failure` when the
  transport gave up on a request (the peer then backs off ``quorum.retry.backoff.ms``);
* :meth:`KafkaRaftClient.poll` — ``pollCurrentState``: timers fire (election, fetch,
  backoff, check quorum, request timeouts), requests are sent; returns the deadline by which
  ``poll`` must run again (``FOREVER`` when only a message can change anything);
* :meth:`KafkaRaftClient.schedule_append` and :meth:`resign` — the state machine's calls
  (``QuorumController`` in Kafka).

and takes :meth:`drain` (the :class:`Outbound` messages to send). The log
(:class:`actors.raft.log.RaftLog`) and the quorum-state store are the shell's: it keeps what
a crash keeps. Committed records are those below ``log.high_watermark``.

What each handler does (Kafka's ``handle*Request``/``handle*Response`` at 3.7.0):

* **Vote** (``handleVoteRequest``): an invalid last (offset, epoch) is INVALID_REQUEST; a
  lower epoch FENCED_LEADER_EPOCH; a non-voter INCONSISTENT_VOTER_SET; a higher epoch first
  makes this node unattached in it. The vote is granted when the epoch state allows
  (:mod:`actors.raft.states`) and the candidate's (last epoch, end offset) is at least this
  log's; an unattached voter that grants becomes *voted* (durably) before answering. A
  candidate counts the answers; a majority makes it leader, a lost majority starts its
  backoff at once (``handleVoteResponse``).
* **A new leader** (``onBecomeLeader``) caches its epoch at its LEO (the epoch start
  offset), appends the LeaderChange control record, and sends BeginQuorumEpoch to every
  voter that has not acknowledged it (answered, or fetched).
* **Fetch** (``handleFetchRequest``, ``tryCompleteFetchRequest``): only the leader of the
  request's epoch answers with data (a lower epoch is FENCED_LEADER_EPOCH, a higher one
  UNKNOWN_LEADER_EPOCH, a non-leader NOT_LEADER_OR_FOLLOWER — every answer names the
  answering node's epoch and leader, which is how observers find the leader). A fetch at
  (offset, lastFetchedEpoch) this log does not hold is answered at once with the
  DivergingEpoch (``validateOffsetAndEpoch``); otherwise the fetch offset is the replica's
  end offset for the high watermark (:mod:`actors.raft.leader`) and the records from there
  are sent with the leader's HW.
* **Fetch response** (``handleFetchResponse``): a DivergingEpoch makes the follower truncate
  (``truncateToEndOffset``; never below its HW: that raises) and fetch again; records are
  appended, and the follower's HW becomes min(its LEO, the leader's HW). Any successful
  answer restarts the fetch timer.
* **BeginQuorumEpoch / EndQuorumEpoch**: a voter learns the leader (or, from EndQuorumEpoch,
  that the leader resigned: a follower of it shortens its fetch timer to its rank in the
  preferred successors — 0 for the first — so the most caught-up voter stands first).
* **Common answer handling** (``maybeHandleCommonResponse``, ``maybeTransition``): an
  answer of a lower epoch is dropped; one of a higher epoch, or FENCED_LEADER_EPOCH /
  NOT_LEADER_OR_FOLLOWER, moves this node to that epoch (follower of the named leader, else
  unattached); one naming the leader of the current epoch makes this node its follower.

Differences from Kafka, by design of the core (docs/fidelity.md): appends are written at
once (no ``BatchAccumulator``, no ``quorum.append.linger.ms``); no snapshots
(``FetchSnapshot``), no graceful shutdown, no cluster id, no ``DescribeQuorum`` API, no
listeners (the shell reads the committed log); a Fetch answer carries every record from
the fetch offset (no ``maxBytes``). 4.1's pre-vote (KIP-996) and dynamic quorum (KIP-853)
are not modelled.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from actors.raft.candidate import CandidateState
from actors.raft.config import RETRY_BACKOFF_BASE_MS, QuorumConfig, RaftRules
from actors.raft.election import OffsetAndEpoch, QuorumStateStore
from actors.raft.errors import (
    IllegalArgumentError,
    IllegalStateError,
    NotLeaderError,
    RaftInvariantError,
)
from actors.raft.leader import LeaderState
from actors.raft.log import RaftLog
from actors.raft.messages import (
    BROKER_NOT_AVAILABLE,
    FENCED_LEADER_EPOCH,
    HWM_NOT_SENT,
    INCONSISTENT_VOTER_SET,
    INVALID_REQUEST,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_LEADER_EPOCH,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Outbound,
    RaftFetchRequest,
    RaftFetchResponse,
    VoteRequest,
    VoteResponse,
)
from actors.raft.quorum import QuorumState
from actors.raft.requests import RequestManager
from actors.raft.states import FollowerState, UnattachedState
from actors.raft.timer import FOREVER

#: how many zero-timeout state polls one :meth:`KafkaRaftClient.poll` runs back to back
#: (Kafka's poll loop runs them one per ``poll()`` with no wait in between)
_MAX_IMMEDIATE_POLLS = 8


@dataclass(slots=True)
class _ParkedFetch:
    """A Fetch in the purgatory: answered when the leader's LEO moves (``maybeComplete``
    completes every fetch whose fetch offset is at or below it), with the original answer
    at ``deadline_ms`` (``maxWaitMs``), or with NOT_LEADER_OR_FOLLOWER when the leader
    steps down to follower or resigned."""

    source: int
    correlation_id: int
    request: RaftFetchRequest
    deadline_ms: int
    response: RaftFetchResponse


class KafkaRaftClient:
    """One node's Raft (see the module note)."""

    def __init__(self, node_id: int | None, voters: Iterable[int], log: RaftLog,
                 store: QuorumStateStore, rng: random.Random,
                 config: QuorumConfig | None = None, rules: RaftRules | None = None) -> None:
        self.config = config or QuorumConfig()
        self.rules = rules or RaftRules(era="3.7", check_quorum=True)
        self.log = log
        self.rng = rng
        voter_set = frozenset(voters)
        self.quorum = QuorumState(node_id, voter_set, self.config.election_timeout_ms,
                                  self.config.fetch_timeout_ms, store, rng,
                                  self.config.check_quorum_timeout_ms, self.rules.check_quorum)
        self.requests = RequestManager(tuple(sorted(voter_set)), self.config.retry_backoff_ms,
                                       self.config.request_timeout_ms, rng)
        self._outbox: list[Outbound] = []
        self._next_correlation_id = 0
        self._parked: list[_ParkedFetch] = []

    # -- the shell's calls ---------------------------------------------------------------
    def initialize(self, now_ms: int) -> None:
        """``KafkaRaftClient.initialize``: the starting state from the store and the log; a
        lone voter stands for election at once (and wins)."""
        self.quorum.initialize(self.log.end_offset_and_epoch(), now_ms)
        if self.quorum.is_leader():
            raise IllegalStateError("a voter cannot initialize as leader")
        if self.quorum.is_candidate():
            self._on_become_candidate(now_ms)
        elif self.quorum.is_follower():
            self._on_become_follower(now_ms)
        if (self.quorum.is_voter() and not self.quorum.remote_voters()
                and not self.quorum.is_candidate()):
            self._transition_to_candidate(now_ms)

    def drain(self) -> list[Outbound]:
        """The messages to send, in the order the client produced them."""
        out, self._outbox = self._outbox, []
        return out

    @property
    def high_watermark(self) -> int | None:
        """``RaftClient.highWatermark``: the HW of the current epoch state (a new leader has
        none until it commits a record of its epoch)."""
        return self.quorum.high_watermark

    def leader_and_epoch(self) -> tuple[int | None, int]:
        return self.quorum.leader_id, self.quorum.epoch

    def handle_request(self, source: int, correlation_id: int, request: Any,
                       now_ms: int) -> None:
        if isinstance(request, VoteRequest):
            self._respond(source, correlation_id, self._handle_vote_request(request, now_ms))
        elif isinstance(request, BeginQuorumEpochRequest):
            self._respond(source, correlation_id,
                          self._handle_begin_quorum_epoch_request(request, now_ms))
        elif isinstance(request, EndQuorumEpochRequest):
            self._respond(source, correlation_id,
                          self._handle_end_quorum_epoch_request(request, now_ms))
        elif isinstance(request, RaftFetchRequest):
            self._handle_fetch_request(source, correlation_id, request, now_ms)
        else:
            raise IllegalArgumentError(f"unexpected request {request!r}")

    def handle_response(self, source: int, correlation_id: int, response: Any,
                        now_ms: int) -> None:
        """``handleInboundMessage`` for a response: dropped unless it is the one in flight
        to ``source``; a response not handled successfully backs the connection off."""
        conn = self.requests.get_or_create(source)
        if not conn.is_response_expected(correlation_id):
            return
        if isinstance(response, VoteResponse):
            ok = self._handle_vote_response(source, response, now_ms)
        elif isinstance(response, BeginQuorumEpochResponse):
            ok = self._handle_begin_quorum_epoch_response(source, response, now_ms)
        elif isinstance(response, EndQuorumEpochResponse):
            ok = self._handle_end_quorum_epoch_response(source, response, now_ms)
        elif isinstance(response, RaftFetchResponse):
            ok = self._handle_fetch_response(response, now_ms)
        else:
            raise IllegalArgumentError(f"unexpected response {response!r}")
        if ok:
            conn.on_response_received(correlation_id)
        else:
            conn.on_response_error(correlation_id, now_ms)

    def handle_send_failure(self, destination: int, correlation_id: int, now_ms: int) -> None:
        """The request never got an answer from the transport (a disconnect): Kafka
        completes it with an error response, which backs the connection off."""
        conn = self.requests.get_or_create(destination)
        if conn.is_response_expected(correlation_id):
            conn.on_response_error(correlation_id, now_ms)

    def poll(self, now_ms: int) -> int:
        """Run the current state's timers and sends; returns the absolute deadline of the
        next poll (``FOREVER``: none)."""
        self._expire_parked_fetches(now_ms)
        timeout = 0
        for _ in range(_MAX_IMMEDIATE_POLLS):
            timeout = self._poll_current_state(now_ms)
            if timeout > 0:
                break
        for parked in self._parked:
            timeout = min(timeout, parked.deadline_ms - now_ms)
        return FOREVER if timeout >= FOREVER - now_ms else now_ms + max(0, timeout)

    def schedule_append(self, epoch: int, records: Sequence[Any], now_ms: int) -> int:
        """``scheduleAppend``: the leader of ``epoch`` appends ``records``; returns the
        offset of the last. Written at once (no linger) and counted for the HW."""
        if not self.quorum.is_leader():
            raise NotLeaderError("append failed: this node is not the leader")
        state = self.quorum.leader_state()
        if epoch < state.epoch:
            raise NotLeaderError(f"append in epoch {epoch}, the leader's is {state.epoch}")
        if epoch > state.epoch:
            raise IllegalArgumentError(f"append in epoch {epoch} above the leader's "
                                       f"{state.epoch}")
        _, last = self.log.append_as_leader(records, state.epoch)
        self._update_leader_end_offset(state, now_ms)
        return last

    def resign(self, epoch: int) -> None:
        """``KafkaRaftClient.resign``: the leader of ``epoch`` steps down at the next poll."""
        if epoch < 0:
            raise IllegalArgumentError(f"attempt to resign from negative epoch {epoch}")
        if not self.quorum.is_voter():
            raise IllegalStateError("attempt to resign by a non-voter")
        leader, current = self.leader_and_epoch()
        if epoch > current:
            raise IllegalArgumentError(f"attempt to resign from epoch {epoch} above {current}")
        if epoch < current:
            return
        if leader != self.quorum.local_id:
            raise IllegalArgumentError(f"cannot resign from epoch {epoch}: not the leader")
        if self.quorum.is_leader():
            self.quorum.leader_state().request_resign()

    # -- transitions (KafkaRaftClient's wrappers of QuorumState) -------------------------
    def _reset_connections(self) -> None:
        self.requests.reset_all()

    def _on_become_leader(self, now_ms: int) -> None:
        state = self.quorum.transition_to_leader(self.log.end_offset, now_ms)
        self.log.initialize_leader_epoch(self.quorum.epoch)
        # the HW may only move once a record of this epoch commits: write one now
        self.log.append_as_leader([state.leader_change_message()], state.epoch)
        self._update_leader_end_offset(state, now_ms)
        self._reset_connections()

    def _maybe_transition_to_leader(self, state: CandidateState, now_ms: int) -> bool:
        if state.is_vote_granted():
            self._on_become_leader(now_ms)
            return True
        return False

    def _on_become_candidate(self, now_ms: int) -> None:
        if not self._maybe_transition_to_leader(self.quorum.candidate_state(), now_ms):
            self._reset_connections()

    def _transition_to_candidate(self, now_ms: int) -> None:
        self.quorum.transition_to_candidate(now_ms)
        self._on_become_candidate(now_ms)

    def _transition_to_unattached(self, epoch: int, now_ms: int) -> None:
        self.quorum.transition_to_unattached(epoch, now_ms)
        self._reset_connections()

    def _transition_to_resigned(self, preferred_successors: Sequence[int], now_ms: int) -> None:
        self._fail_parked_fetches(NOT_LEADER_OR_FOLLOWER)
        self.quorum.transition_to_resigned(preferred_successors, now_ms)
        self._reset_connections()

    def _transition_to_voted(self, candidate_id: int, epoch: int, now_ms: int) -> None:
        self.quorum.transition_to_voted(epoch, candidate_id, now_ms)
        self._reset_connections()

    def _on_become_follower(self, now_ms: int) -> None:
        self._reset_connections()
        self._fail_parked_fetches(NOT_LEADER_OR_FOLLOWER)

    def _transition_to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        self.quorum.transition_to_follower(epoch, leader_id, now_ms)
        self._on_become_follower(now_ms)

    # -- the leader's end offset and high watermark --------------------------------------
    def _update_leader_end_offset(self, state: LeaderState, now_ms: int) -> None:
        """``updateLeaderEndOffsetAndTimestamp``: the leader's LEO counts for the HW, and
        parked fetches at or below it are answered."""
        if state.update_local_state(self.log.end_offset):
            self._on_update_leader_high_watermark(state, now_ms)
        self._complete_parked_fetches(self.log.end_offset, now_ms)

    def _on_update_leader_high_watermark(self, state: LeaderState, now_ms: int) -> None:
        if state.high_watermark is not None:
            self.log.update_high_watermark(state.high_watermark)
            if self.rules.fast_hwm:
                # KAFKA-14145 (4.1.0): every parked Fetch was parked at a lower high
                # watermark; answer them all (``fetchPurgatory.completeAll``)
                self._complete_parked_fetches(None, now_ms)

    def _update_follower_high_watermark(self, state: FollowerState, hw: int | None) -> None:
        """``updateFollowerHighWatermark``: min(own LEO, the leader's HW), never back."""
        if hw is None:
            return
        new = min(self.log.end_offset, hw)
        if state.update_high_watermark(new):
            self.log.update_high_watermark(new)

    # -- backoffs ------------------------------------------------------------------------
    def _binary_exponential_election_backoff_ms(self, retries: int) -> int:
        if retries <= 0:
            raise IllegalArgumentError(f"retries {retries} should be above zero")
        draw = self.rng.randrange(2 << min(20, retries - 1))
        return min(RETRY_BACKOFF_BASE_MS * draw, self.config.election_backoff_max_ms)

    def _strict_exponential_election_backoff_ms(self, position: int, total: int) -> int:
        if position <= 0 or position >= total:
            raise IllegalArgumentError(f"position {position} outside (0, {total})")
        base = self.config.election_backoff_max_ms >> (total - 1)
        return min(self.config.election_backoff_max_ms, base << (position - 1))

    def _end_epoch_election_backoff(self, preferred_successors: Sequence[int]) -> int:
        local = self.quorum.local_id_or_throw()
        position = preferred_successors.index(local) if local in preferred_successors else -1
        if position <= 0:
            return 0
        return self._strict_exponential_election_backoff_ms(position, len(preferred_successors))

    # -- validation ----------------------------------------------------------------------
    def _validate_voter_only_request(self, remote_id: int, epoch: int) -> str | None:
        if epoch < self.quorum.epoch:
            return FENCED_LEADER_EPOCH
        if remote_id < 0:
            return INVALID_REQUEST
        if self.quorum.is_observer() or not self.quorum.is_voter(remote_id):
            return INCONSISTENT_VOTER_SET
        return None

    def _validate_leader_only_request(self, epoch: int) -> str | None:
        if epoch < self.quorum.epoch:
            return FENCED_LEADER_EPOCH
        if epoch > self.quorum.epoch:
            return UNKNOWN_LEADER_EPOCH
        if not self.quorum.is_leader():
            return NOT_LEADER_OR_FOLLOWER
        return None

    def _has_consistent_leader(self, epoch: int, leader_id: int | None) -> bool:
        if leader_id is not None and leader_id == self.quorum.local_id_or_sentinel():
            return self.quorum.is_leader()
        return (epoch != self.quorum.epoch or leader_id is None
                or not self.quorum.has_leader() or leader_id == self.quorum.leader_id)

    def _maybe_transition(self, leader_id: int | None, epoch: int, now_ms: int) -> None:
        if not self._has_consistent_leader(epoch, leader_id):
            raise IllegalStateError(
                f"leader {leader_id} in epoch {epoch} is inconsistent with the current "
                f"leader {self.quorum.leader_id} in epoch {self.quorum.epoch}")
        if epoch > self.quorum.epoch:
            if leader_id is not None:
                self._transition_to_follower(epoch, leader_id, now_ms)
            else:
                self._transition_to_unattached(epoch, now_ms)
        elif leader_id is not None and not self.quorum.has_leader():
            self._transition_to_follower(epoch, leader_id, now_ms)

    def _maybe_handle_common_response(self, error: str, leader_id: int, epoch: int,
                                      now_ms: int) -> bool | None:
        """None: the API's own handler goes on; True/False: handled here (successfully or
        to be retried). INCONSISTENT_VOTER_SET is not caught here: 3.7.0 compares with
        INCONSISTENT_GROUP_PROTOCOL, so the handlers treat it as unexpected (retry)."""
        leader = leader_id if leader_id >= 0 else None
        if epoch < self.quorum.epoch or error == UNKNOWN_LEADER_EPOCH:
            return True
        if (epoch > self.quorum.epoch or error == FENCED_LEADER_EPOCH
                or error == NOT_LEADER_OR_FOLLOWER):
            self._maybe_transition(leader, epoch, now_ms)
            return True
        if epoch == self.quorum.epoch and leader is not None and not self.quorum.has_leader():
            self._transition_to_follower(epoch, leader, now_ms)
            return None if error == NONE else True
        if error == BROKER_NOT_AVAILABLE:
            return False
        if error == INVALID_REQUEST:
            raise IllegalStateError("received an unexpected INVALID_REQUEST error")
        return None

    # -- Vote ----------------------------------------------------------------------------
    def _vote_response(self, error: str, granted: bool) -> VoteResponse:
        return VoteResponse(error, self.quorum.epoch, self.quorum.leader_id_or_sentinel(),
                            granted)

    def _handle_vote_request(self, request: VoteRequest, now_ms: int) -> VoteResponse:
        epoch = request.candidate_epoch
        if (request.last_offset < 0 or request.last_offset_epoch < 0
                or request.last_offset_epoch >= epoch):
            return self._vote_response(INVALID_REQUEST, False)
        error = self._validate_voter_only_request(request.candidate_id, epoch)
        if error is not None:
            return self._vote_response(error, False)
        if epoch > self.quorum.epoch:
            self._transition_to_unattached(epoch, now_ms)
        candidate_end = OffsetAndEpoch(epoch=request.last_offset_epoch,
                                       offset=request.last_offset)
        up_to_date = candidate_end >= self.log.end_offset_and_epoch()
        granted = self.quorum.can_grant_vote(request.candidate_id, up_to_date)
        if granted and self.quorum.is_unattached():
            self._transition_to_voted(request.candidate_id, epoch, now_ms)
        return self._vote_response(NONE, granted)

    def _handle_vote_response(self, source: int, response: VoteResponse, now_ms: int) -> bool:
        handled = self._maybe_handle_common_response(response.error, response.leader_id,
                                                     response.leader_epoch, now_ms)
        if handled is not None:
            return handled
        if response.error != NONE:
            return False
        if self.quorum.is_candidate():
            state = self.quorum.candidate_state()
            if response.vote_granted:
                state.record_granted_vote(source)
                self._maybe_transition_to_leader(state, now_ms)
            else:
                state.record_rejected_vote(source)
                # a lost election backs off at once instead of waiting for its timeout
                if state.is_vote_rejected() and not state.is_backing_off:
                    state.start_backing_off(
                        now_ms, self._binary_exponential_election_backoff_ms(state.retries))
        return True

    # -- BeginQuorumEpoch ----------------------------------------------------------------
    def _epoch_answer(self, error: str) -> tuple[str, int, int]:
        return error, self.quorum.epoch, self.quorum.leader_id_or_sentinel()

    def _handle_begin_quorum_epoch_request(self, request: BeginQuorumEpochRequest,
                                           now_ms: int) -> BeginQuorumEpochResponse:
        error = self._validate_voter_only_request(request.leader_id, request.leader_epoch)
        if error is None:
            self._maybe_transition(request.leader_id, request.leader_epoch, now_ms)
        return BeginQuorumEpochResponse(*self._epoch_answer(error or NONE))

    def _handle_begin_quorum_epoch_response(self, source: int,
                                            response: BeginQuorumEpochResponse,
                                            now_ms: int) -> bool:
        handled = self._maybe_handle_common_response(response.error, response.leader_id,
                                                     response.leader_epoch, now_ms)
        if handled is not None:
            return handled
        if response.error != NONE:
            return False
        if self.quorum.is_leader():
            self.quorum.leader_state().add_acknowledgement_from(source)
        return True

    # -- EndQuorumEpoch ------------------------------------------------------------------
    def _handle_end_quorum_epoch_request(self, request: EndQuorumEpochRequest,
                                         now_ms: int) -> EndQuorumEpochResponse:
        error = self._validate_voter_only_request(request.leader_id, request.leader_epoch)
        if error is not None:
            return EndQuorumEpochResponse(*self._epoch_answer(error))
        self._maybe_transition(request.leader_id, request.leader_epoch, now_ms)
        if self.quorum.is_follower():
            state = self.quorum.follower_state()
            if state.leader_id == request.leader_id:
                backoff = self._end_epoch_election_backoff(request.preferred_successors)
                state.override_fetch_timeout(now_ms, backoff)
        return EndQuorumEpochResponse(*self._epoch_answer(NONE))

    def _handle_end_quorum_epoch_response(self, source: int, response: EndQuorumEpochResponse,
                                          now_ms: int) -> bool:
        handled = self._maybe_handle_common_response(response.error, response.leader_id,
                                                     response.leader_epoch, now_ms)
        if handled is not None:
            return handled
        if response.error != NONE:
            return False
        self.quorum.resigned_state().acknowledge_resignation(source)
        return True

    # -- Fetch (leader side) -------------------------------------------------------------
    def _fetch_response(self, error: str, hw: int | None, records: tuple[Any, ...] = (),
                        diverging: OffsetAndEpoch | None = None) -> RaftFetchResponse:
        return RaftFetchResponse(
            error=error, leader_epoch=self.quorum.epoch,
            leader_id=self.quorum.leader_id_or_sentinel(),
            high_watermark=-1 if hw is None else hw, log_start_offset=self.log.start_offset,
            diverging_epoch=-1 if diverging is None else diverging.epoch,
            diverging_end_offset=-1 if diverging is None else diverging.offset,
            records=records)

    def _handle_fetch_request(self, source: int, correlation_id: int,
                              request: RaftFetchRequest, now_ms: int) -> None:
        if (request.max_wait_ms < 0 or request.fetch_offset < 0
                or request.last_fetched_epoch < 0
                or request.last_fetched_epoch > request.current_leader_epoch):
            self._respond(source, correlation_id, self._fetch_response(INVALID_REQUEST, None))
            return
        response = self._try_complete_fetch_request(request, now_ms)
        if (response.error != NONE or response.records or request.max_wait_ms == 0
                or response.diverging_epoch != -1 or response.diverging_end_offset != -1
                # KAFKA-14145 (4.1.0, ``isHighWatermarkUpdated``): the fetcher's high
                # watermark is behind (a 3.7 fetcher sends HWM_NOT_SENT: never)
                or request.high_watermark < response.high_watermark):
            self._respond(source, correlation_id, response)
            return
        self._parked.append(_ParkedFetch(source, correlation_id, request,
                                         now_ms + request.max_wait_ms, response))

    def _try_complete_fetch_request(self, request: RaftFetchRequest,
                                    now_ms: int) -> RaftFetchResponse:
        error = self._validate_leader_only_request(request.current_leader_epoch)
        if error is not None:
            return self._fetch_response(error, None)
        state = self.quorum.leader_state()
        valid = self.log.validate_offset_and_epoch(request.fetch_offset,
                                                   request.last_fetched_epoch)
        if valid.kind != "valid":
            return self._fetch_response(NONE, state.high_watermark,
                                        diverging=valid.offset_and_epoch)
        records = self.log.read(request.fetch_offset)
        if state.update_replica_state(request.replica_id, now_ms, request.fetch_offset):
            self._on_update_leader_high_watermark(state, now_ms)
        return self._fetch_response(NONE, state.high_watermark, records)

    def _complete_parked_fetches(self, end_offset: int | None, now_ms: int) -> None:
        """Answer the parked fetches at or below ``end_offset`` (``maybeComplete``), or all
        of them (``None``: ``completeAll``), each with what it reads now."""
        if end_offset is None:
            ready, self._parked = self._parked, []
        else:
            ready = [p for p in self._parked if p.request.fetch_offset <= end_offset]
            if not ready:
                return
            self._parked = [p for p in self._parked if p.request.fetch_offset > end_offset]
        for p in ready:
            self._respond(p.source, p.correlation_id,
                          self._try_complete_fetch_request(p.request, now_ms))

    def _expire_parked_fetches(self, now_ms: int) -> None:
        expired = [p for p in self._parked if p.deadline_ms <= now_ms]
        if not expired:
            return
        self._parked = [p for p in self._parked if p.deadline_ms > now_ms]
        for p in expired:
            self._respond(p.source, p.correlation_id, p.response)

    def _fail_parked_fetches(self, error: str) -> None:
        parked, self._parked = self._parked, []
        for p in parked:
            self._respond(p.source, p.correlation_id, self._fetch_response(error, None))

    # -- Fetch (follower side) -----------------------------------------------------------
    def _fetch_request(self) -> RaftFetchRequest:
        """``buildFetchRequest``: from the LEO, with the last fetched epoch."""
        return RaftFetchRequest(replica_id=self.quorum.local_id_or_sentinel(),
                                current_leader_epoch=self.quorum.epoch,
                                fetch_offset=self.log.end_offset,
                                last_fetched_epoch=self.log.last_fetched_epoch,
                                max_wait_ms=self.config.fetch_max_wait_ms,
                                high_watermark=self._known_high_watermark())

    def _known_high_watermark(self) -> int:
        """FetchRequest v18's ``HighWatermark`` (4.1.0 ``buildFetchRequest``): the quorum's
        high watermark as this node knows it, -1 for none; 3.7 does not send it."""
        if not self.rules.fast_hwm:
            return HWM_NOT_SENT
        hw = self.quorum.high_watermark
        return -1 if hw is None else hw

    def _handle_fetch_response(self, response: RaftFetchResponse, now_ms: int) -> bool:
        handled = self._maybe_handle_common_response(response.error, response.leader_id,
                                                     response.leader_epoch, now_ms)
        if handled is not None:
            return handled
        state = self.quorum.follower_state()
        if response.error != NONE:
            return False
        if response.diverging_epoch >= 0:
            hw = state.high_watermark
            if hw is not None and response.diverging_end_offset < hw:
                raise RaftInvariantError(
                    f"the leader requested truncation to {response.diverging_end_offset}, "
                    f"below the high watermark {hw}")
            self.log.truncate_to_end_offset(OffsetAndEpoch(
                epoch=response.diverging_epoch, offset=response.diverging_end_offset))
        else:
            if response.records:
                self.log.append_as_follower(response.records)
            hw = None if response.high_watermark < 0 else response.high_watermark
            self._update_follower_high_watermark(state, hw)
        state.reset_fetch_timeout(now_ms)
        return True

    # -- sending -------------------------------------------------------------------------
    def _respond(self, destination: int, correlation_id: int, message: Any) -> None:
        self._outbox.append(Outbound(destination, correlation_id, message, True))

    def _maybe_send_request(self, now_ms: int, destination: int,
                            build: Callable[[], Any]) -> int:
        """``maybeSendRequest``: the time to wait before this destination can be sent to
        again (``FOREVER`` once a request is in flight)."""
        conn = self.requests.get_or_create(destination)
        if conn.is_backing_off(now_ms):
            return conn.remaining_backoff_ms(now_ms)
        if conn.is_ready(now_ms):
            correlation_id = self._next_correlation_id
            self._next_correlation_id += 1
            self._outbox.append(Outbound(destination, correlation_id, build(), False))
            conn.on_request_sent(correlation_id, now_ms)
            return FOREVER
        return conn.remaining_request_time_ms(now_ms)

    def _maybe_send_requests(self, now_ms: int, destinations: Iterable[int],
                             build: Callable[[], Any]) -> int:
        wait = FOREVER
        for destination in sorted(destinations):
            wait = min(wait, self._maybe_send_request(now_ms, destination, build))
        return wait

    def _maybe_send_any_voter_fetch(self, now_ms: int) -> int:
        voter = self.requests.find_ready_voter(now_ms)
        if voter is not None:
            return self._maybe_send_request(now_ms, voter, self._fetch_request)
        return self.requests.backoff_before_available_voter(now_ms)

    def _vote_request(self) -> VoteRequest:
        end = self.log.end_offset_and_epoch()
        return VoteRequest(self.quorum.epoch, self.quorum.local_id_or_throw(), end.epoch,
                           end.offset)

    def _begin_quorum_epoch_request(self) -> BeginQuorumEpochRequest:
        return BeginQuorumEpochRequest(self.quorum.epoch, self.quorum.local_id_or_throw())

    # -- poll: one state's timers --------------------------------------------------------
    def _poll_current_state(self, now_ms: int) -> int:
        q = self.quorum
        if q.is_leader():
            return self._poll_leader(now_ms)
        if q.is_candidate():
            return self._poll_candidate(now_ms)
        if q.is_follower():
            if q.is_voter():
                return self._poll_follower_as_voter(now_ms)
            return self._poll_follower_as_observer(now_ms)
        if q.is_voted():
            voted = q.voted_state()
            if voted.has_election_timeout_expired(now_ms):
                self._transition_to_candidate(now_ms)
                return 0
            return voted.remaining_election_time_ms(now_ms)
        if q.is_unattached():
            return self._poll_unattached(q.unattached_state(), now_ms)
        if q.is_resigned():
            return self._poll_resigned(now_ms)
        raise IllegalStateError(f"unexpected quorum state {q.state}")

    def _poll_leader(self, now_ms: int) -> int:
        state = self.quorum.leader_state()
        until_check_quorum = state.time_until_check_quorum_expires(now_ms)
        if state.resign_requested or until_check_quorum == 0:
            self._transition_to_resigned(state.non_leader_voters_by_descending_fetch_offset(),
                                         now_ms)
            return 0
        until_send = self._maybe_send_requests(now_ms, state.non_acknowledging_voters(),
                                               self._begin_quorum_epoch_request)
        return min(until_send, until_check_quorum)

    def _poll_candidate(self, now_ms: int) -> int:
        state = self.quorum.candidate_state()
        if state.is_backing_off:
            if state.is_backoff_complete(now_ms):
                self._transition_to_candidate(now_ms)
                return 0
            return state.remaining_backoff_ms(now_ms)
        if state.has_election_timeout_expired(now_ms):
            backoff = self._binary_exponential_election_backoff_ms(state.retries)
            state.start_backing_off(now_ms, backoff)
            return backoff
        wait = FOREVER
        if not state.is_vote_rejected():
            wait = self._maybe_send_requests(now_ms, state.unrecorded_voters(),
                                             self._vote_request)
        return min(wait, state.remaining_election_time_ms(now_ms))

    def _poll_follower_as_voter(self, now_ms: int) -> int:
        state = self.quorum.follower_state()
        if state.has_fetch_timeout_expired(now_ms):
            self._transition_to_candidate(now_ms)
            return 0
        wait = self._maybe_send_request(now_ms, state.leader_id, self._fetch_request)
        return min(wait, state.remaining_fetch_time_ms(now_ms))

    def _poll_follower_as_observer(self, now_ms: int) -> int:
        """An observer whose leader stops answering asks any voter, to find out whether
        the leadership moved."""
        state = self.quorum.follower_state()
        if state.has_fetch_timeout_expired(now_ms):
            return self._maybe_send_any_voter_fetch(now_ms)
        conn = self.requests.get_or_create(state.leader_id)
        if conn.has_request_timed_out(now_ms):
            wait = self._maybe_send_any_voter_fetch(now_ms)
            conn.reset()
        elif conn.is_backing_off(now_ms):
            wait = self._maybe_send_any_voter_fetch(now_ms)
        else:
            wait = self._maybe_send_request(now_ms, state.leader_id, self._fetch_request)
        return min(wait, state.remaining_fetch_time_ms(now_ms))

    def _poll_unattached(self, state: UnattachedState, now_ms: int) -> int:
        if self.quorum.is_voter():
            if state.has_election_timeout_expired(now_ms):
                self._transition_to_candidate(now_ms)
                return 0
            return state.remaining_election_time_ms(now_ms)
        wait = self._maybe_send_any_voter_fetch(now_ms)
        return min(wait, state.remaining_election_time_ms(now_ms))

    def _poll_resigned(self, now_ms: int) -> int:
        state = self.quorum.resigned_state()
        epoch = self.quorum.epoch
        local = self.quorum.local_id_or_throw()
        successors = state.preferred_successors
        wait = self._maybe_send_requests(
            now_ms, state.unacked_voters,
            lambda: EndQuorumEpochRequest(epoch, local, successors))
        if state.has_election_timeout_expired(now_ms):
            self._transition_to_candidate(now_ms)
            return 0
        return min(wait, state.remaining_election_time_ms(now_ms))

