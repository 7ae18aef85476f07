"""KRaft's Raft core (KIP-595) as Kafka 3.7.0 runs it, sans-IO: issue 52's first block.

The controller quorum replicates the ``__cluster_metadata`` log with Kafka's own Raft
(``raft/src/main/java/org/apache/kafka/raft/`` at tag 3.7.0). This package is that Raft and
nothing else: no Trio, no sockets, no clock (every entry point takes ``now_ms``), no global
randomness (a ``random.Random`` is passed in). The shell that wires it into isrlab's
controller actors feeds it messages and timers and carries out what it asks for.

One concept per module, each with its Kafka class and its design note:

* :mod:`.config` — ``RaftConfig`` (``quorum.*`` settings and their 3.7.0 defaults) and the
  era switches (:class:`RaftRules`: KAFKA-15489's check-quorum resignation);
* :mod:`.timer` — Kafka's ``Timer`` as a deadline on the caller's clock;
* :mod:`.election` — ``ElectionState``: the ``quorum-state`` file's value, and its store;
* :mod:`.log` — the ``ReplicatedLog`` view the core needs (``MockLog``'s semantics);
* :mod:`.states` — the epoch states unattached, voted, follower, resigned;
* :mod:`.candidate` — ``CandidateState`` (vote tally, election backoff);
* :mod:`.leader` — ``LeaderState`` (the majority high watermark, check quorum);
* :mod:`.quorum` — ``QuorumState``: the transitions and their guards;
* :mod:`.requests` — ``RequestManager``: one request in flight per peer, timeouts, backoff;
* :mod:`.messages` — Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and the LeaderChange
  control record, as plain value classes;
* :mod:`.client` — ``KafkaRaftClient``: the handlers and the poll loop.
"""
