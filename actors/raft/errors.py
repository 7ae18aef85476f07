"""The two exceptions Kafka's Raft throws on a broken invariant or a bad call.

``QuorumState``'s guards throw ``IllegalStateException`` (a transition the state machine
forbids), ``CandidateState`` and ``LeaderState`` ``IllegalArgumentException`` (a vote from a
non-voter, a vote recorded both ways). isrlab raises these two, so a conformance test can
assert exactly what Kafka's asserts, and so the shell can tell a protocol invariant broken
(a bug, or a fault the protocol does not survive) from an ordinary answer.
"""

from __future__ import annotations


class IllegalStateError(Exception):
    """Kafka's ``IllegalStateException`` in the Raft module."""


class IllegalArgumentError(ValueError):
    """Kafka's ``IllegalArgumentException`` in the Raft module."""


class NotLeaderError(Exception):
    """Kafka's ``NotLeaderException``: an append to a node that is not the leader of the
    epoch asked for."""


class RaftInvariantError(Exception):
    """Kafka's ``KafkaException`` from the fetch path: the leader asked this follower to
    truncate below its high watermark (committed data would be lost)."""
