"""The ``quorum-state`` file: Kafka 3.7.0 ``ElectionState`` and ``QuorumStateStore``.

Every durable transition of :class:`actors.raft.quorum.QuorumState` writes the new epoch
state's :class:`ElectionState` — (epoch, leader or none, voted-for or none, the voters) —
before the node acts in it (``QuorumState.durableTransitionTo`` writes the store, then
switches state). That is what makes a vote binding across a crash: a restarted voter reads
it back and cannot vote twice in an epoch, and a restarted leader comes back *resigned* in
its epoch (``QuorumState.initialize``). Only the move to *resigned* is not written
(``memoryTransitionTo``): a leader always restarts resigned anyway.

:class:`ElectionState` is the value the shell persists; :class:`QuorumStateStore` is the
interface it implements (``FileBasedStateStore`` in Kafka), :class:`MemoryQuorumStateStore`
the one the tests use (``MockQuorumStateStore``). Equality ignores the voters, as Kafka's
``ElectionState.equals`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from actors.raft.errors import IllegalArgumentError, IllegalStateError


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """Kafka's ``OffsetAndEpoch``; ordered by epoch, then offset (``compareTo``): the order
    in which a candidate's log is "at least as up to date" as a voter's."""

    epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What the ``quorum-state`` file holds (leader and voted are -1 when absent)."""

    epoch: int
    leader_id: int = -1
    voted_id: int = -1
    voters: frozenset[int] = field(default=frozenset(), compare=False)

    @staticmethod
    def with_voted_candidate(epoch: int, voted_id: int, voters: frozenset[int]) -> ElectionState:
        if voted_id < 0:
            raise IllegalArgumentError(f"illegal voted id {voted_id}")
        if voted_id not in voters:
            raise IllegalArgumentError(f"voted candidate {voted_id} is not a voter")
        return ElectionState(epoch, -1, voted_id, voters)

    @staticmethod
    def with_elected_leader(epoch: int, leader_id: int, voters: frozenset[int]) -> ElectionState:
        if leader_id < 0:
            raise IllegalArgumentError(f"illegal leader id {leader_id}")
        if leader_id not in voters:
            raise IllegalArgumentError(f"leader {leader_id} is not a voter")
        return ElectionState(epoch, leader_id, -1, voters)

    @staticmethod
    def with_unknown_leader(epoch: int, voters: frozenset[int]) -> ElectionState:
        return ElectionState(epoch, -1, -1, voters)

    @property
    def has_leader(self) -> bool:
        return self.leader_id >= 0

    @property
    def has_voted(self) -> bool:
        return self.voted_id >= 0

    def is_leader(self, node_id: int) -> bool:
        return self.leader_id == node_id

    def is_voted_candidate(self, node_id: int) -> bool:
        return self.voted_id == node_id


class QuorumStateStore(Protocol):
    """Where the shell keeps the ``quorum-state`` file (Kafka ``QuorumStateStore``)."""

    def read_election_state(self) -> ElectionState | None:
        """The last state written, or None for a new node. A store that cannot be read
        raises :class:`IllegalStateError`: ``QuorumState.initialize`` then starts over."""
        ...

    def write_election_state(self, state: ElectionState) -> None: ...

    def clear(self) -> None: ...


@dataclass(slots=True)
class MemoryQuorumStateStore:
    """A store in memory (Kafka's ``MockQuorumStateStore``); ``corrupt`` makes reads fail
    as a damaged file does (``UncheckedIOException``), ``writes`` counts durable writes."""

    state: ElectionState | None = None
    corrupt: bool = False
    writes: int = 0

    def read_election_state(self) -> ElectionState | None:
        if self.corrupt:
            raise IllegalStateError("quorum-state file cannot be read")
        return self.state

    def write_election_state(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1

    def clear(self) -> None:
        self.state = None
        self.corrupt = False
