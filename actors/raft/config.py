"""The quorum's settings (Kafka 3.7.0 ``RaftConfig``) and the era switches of its rules.

Defaults are 3.7.0's ``RaftConfig.DEFAULT_QUORUM_*`` (4.1.0's ``QuorumConfig`` keeps the
same values): ``quorum.election.timeout.ms`` 1000, ``quorum.election.backoff.max.ms`` 1000,
``quorum.fetch.timeout.ms`` 2000, ``quorum.request.timeout.ms`` 2000,
``quorum.retry.backoff.ms`` 20. Two constants of ``KafkaRaftClient`` are not settings:
``RETRY_BACKOFF_BASE_MS`` (100, the unit of the candidate's binary exponential backoff) and
``MAX_FETCH_WAIT_MS`` (500, a Fetch's ``maxWaitMs``). ``quorum.append.linger.ms`` (25) is
not modelled: the core appends a leader's records at once (see :mod:`.client`).

Era switches (:class:`RaftRules`): KAFKA-15489 (a leader partitioned from the majority of
the voters never resigns, and keeps answering as leader) was fixed in 3.7.0
(commit 37416e1a, "resign leadership when no fetch or fetch snapshot from majority voters";
3.6.2's ``LeaderState`` has no check-quorum timer): ``LeaderState`` resigns when no majority
of voters fetched within 1.5 x ``quorum.fetch.timeout.ms``. The bug flag ``KAFKA-15489``
turns the check off, as the 3.6 releases ran.

Not modelled, 4.1.0 only: KIP-996 pre-vote (``ProspectiveState``, Vote's ``PreVote``
flag) and KIP-853 dynamic quorums (``VoterSet`` read from the log, directory ids,
AddVoter/RemoveVoter/UpdateVoter); see ``docs/fidelity.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from actors.eras import KRAFT_ERAS

#: ``KafkaRaftClient.RETRY_BACKOFF_BASE_MS`` (3.7.0): the candidate's backoff unit.
RETRY_BACKOFF_BASE_MS: Final = 100
#: ``KafkaRaftClient.MAX_FETCH_WAIT_MS`` (3.7.0): how long a leader parks an empty Fetch.
MAX_FETCH_WAIT_MS: Final = 500
#: ``LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR`` (3.7.0): check quorum runs at 1.5 x the
#: fetch timeout, "to tolerate some network transition time or other IO time".
CHECK_QUORUM_TIMEOUT_FACTOR: Final = 1.5


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    """The ``controller.quorum.*`` settings (3.7.0 ``RaftConfig``), in milliseconds."""

    election_timeout_ms: int = 1_000
    election_backoff_max_ms: int = 1_000
    fetch_timeout_ms: int = 2_000
    request_timeout_ms: int = 2_000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = MAX_FETCH_WAIT_MS

    @property
    def check_quorum_timeout_ms(self) -> int:
        """``LeaderState.checkQuorumTimeoutMs``: ``(int) (fetchTimeoutMs * 1.5)``."""
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)


@dataclass(frozen=True, slots=True)
class RaftRules:
    """Which of KRaft's rules an era runs."""

    era: str
    check_quorum: bool   # KAFKA-15489 fixed (3.7.0): a leader without a fetching majority
                         # resigns after 1.5 x quorum.fetch.timeout.ms
    # KAFKA-14145 (KIP-1166, 4.1.0): a Fetch carries the high watermark its sender knows; the
    # leader answers at once when its own is higher and, when its high watermark moves,
    # answers every parked Fetch (``KafkaRaftClient.handleFetchRequest``,
    # ``isHighWatermarkUpdated``, ``onUpdateLeaderHighWatermark``). Before it, a voter or
    # observer learnt a new high watermark only with the next record or after maxWaitMs.
    fast_hwm: bool = False


#: KRaft bugs a scenario may re-enable (the lead adds them to ``actors.eras.BUGS``).
RAFT_BUGS: Final = {
    "KAFKA-15489": "a leader that no majority of voters fetches from never resigns "
                   "(check quorum absent, as before 3.7.0)",
}


def raft_rules_for(era: str, bugs: tuple[str, ...] = ()) -> RaftRules:
    """The Raft rules of a KRaft era (3.7, 4.1), with ``bugs`` re-enabled."""
    if era not in KRAFT_ERAS:
        raise ValueError(f"era {era!r} has no KRaft controller quorum")
    unknown = [b for b in bugs if b not in RAFT_BUGS]
    if unknown:
        raise ValueError(f"unknown KRaft bugs {unknown}")
    return RaftRules(era=era, check_quorum="KAFKA-15489" not in bugs, fast_hwm=era != "3.7")
