"""The scenario file's keys: per section, each key's types, default and check.

The tables :mod:`emulator.scenario` validates a scenario file against (``[cluster]``,
``[[topics]]``, ``[network]``, the clients, ``[faults]``, ``[expect]``, ``[admin]``,
``[catalog]``, ``[explore]``), with Kafka's own config names and defaults; the era-dependent
defaults (``None`` here) are filled in by :func:`emulator.scenario.resolve`. Data and small
value checks only: no file is read here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.eras import ERAS
from actors.group import ASSIGNORS


@dataclass(frozen=True)
class Key:
    """A scenario key: its types, its default (``None`` without ``derived``: required) and
    its check. ``derived``: absent, it is ``None`` until :func:`emulator.scenario.resolve`
    fills it in from the era or other keys."""
    types: tuple[type, ...]
    default: Any
    check: Callable[[Any], str | None] | None = None
    derived: bool = False


def _nonneg(v: Any) -> str | None:
    return "must be >= 0" if v < 0 else None


def _strings(v: Any) -> str | None:
    """An array of strings (bug ids, fault kinds, anomaly names)."""
    bad = next((x for x in v if not isinstance(x, str)), None)
    return None if bad is None else f"every entry must be a string, not {bad!r}"


def _integers(v: Any) -> str | None:
    """An array of integers (broker ids)."""
    bad = next((x for x in v if isinstance(x, bool) or not isinstance(x, int)), None)
    return None if bad is None else f"every entry must be an integer, not {bad!r}"


def _overrides(v: Any) -> str | None:
    """``[catalog]`` variants: ``--set`` strings, or arrays of them."""
    for x in v:
        items = x if isinstance(x, list) else [x]
        if not all(isinstance(i, str) for i in items):
            return f"every entry must be a --set string or an array of them, not {x!r}"
    return None


def _pos(v: Any) -> str | None:
    return "must be > 0" if v <= 0 else None


def _between(lo: float, hi: float, why: str) -> Callable[[Any], str | None]:
    """A bound isrlab needs to answer in reasonable time and memory (``why`` says which)."""
    def check(v: Any) -> str | None:
        return None if lo <= v <= hi else f"must be within [{lo:g}, {hi:g}] ({why})"
    return check


#: the largest integer a Kafka config holds (a Java long) and a trace can carry
LONG_MAX_VALUE = 2**63 - 1
#: how much simulated time one run may cover (a campaign of days is a bench, not a run)
MAX_SIM_S = 1_000_000.0
#: voters of a KRaft-era cluster's controller quorum when the scenario does not say
#: (``cluster.controller_quorum``): three, as a KRaft cluster is deployed for fail-over
DEFAULT_QUORUM_VOTERS = 3


def _rate(v: Any) -> str | None:
    return "must be within [0, 1]" if not 0 <= v <= 1 else None


def _one_of(*options: Any) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in options else f"must be one of {', '.join(map(str, options))}"
    return check


INT = (int,)
NUM = (int, float)
BOOL = (bool,)
STR = (str,)

TOP: dict[str, Key] = {
    "name": Key(STR, ""),
    "description": Key(STR, ""),
    "protocol": Key(STR, "4.1", _one_of(*ERAS)),
    "bugs": Key((list,), [], _strings),
    "fixes": Key((list,), [], _strings),
    "seed": Key(INT, 1, _nonneg),
    "duration_s": Key(NUM, 20.0, _between(1e-6, MAX_SIM_S, "simulated seconds")),
    "heal_s": Key(NUM, 60.0, _between(1e-6, MAX_SIM_S, "simulated seconds")),
    "invariants": Key(BOOL, False),
}

CLUSTER: dict[str, Key] = {
    "brokers": Key(INT, 3, _between(1, 1000, "brokers an emulated cluster holds")),
    # brokers brokers+1 .. brokers+spare.brokers: not started with the cluster; an
    # add_broker step starts one (a new broker id registering mid-run)
    "spare.brokers": Key(INT, 0, _between(0, 1000, "spare brokers")),
    # KRaft eras: the controllers as a Raft quorum of this many voters (nodes
    # controller-3000, controller-3001, ...; actors.quorum_controller), DEFAULT_QUORUM_VOTERS
    # unless set. 0: the single controller node "controller", whose store survives
    # everything (the key is then left out of the resolved scenario: a trace header without
    # it is a single-controller run, and replays as one; emulator.scenario.recorded)
    "controller_quorum": Key(INT, None, _between(0, 9, "controller quorum voters"),
                             derived=True),
    "replica.lag.time.max.ms": Key(INT, None, _pos, derived=True),   # era default
    "replica.lag.max.messages": Key(INT, 0, _nonneg),
    "num.replica.fetchers": Key(INT, 1, _between(1, 1000, "fetcher threads per broker pair")),
    "replica.fetch.wait.max.ms": Key(INT, 500, _nonneg),
    "replica.fetch.min.bytes": Key(INT, 1, _nonneg),
    "replica.fetch.max.records": Key(INT, 2000, _pos),
    "replica.fetch.backoff.ms": Key(INT, 1000, _nonneg),
    "replica.socket.timeout.ms": Key(INT, 30000, _pos),
    "replica.high.watermark.checkpoint.interval.ms": Key(INT, 5000, _pos),
    "log.flush.interval.messages": Key(INT, LONG_MAX_VALUE, _pos),
    "log.flush.interval.ms": Key(INT, LONG_MAX_VALUE, _pos),
    "log.retention.check.interval.ms": Key(INT, 300000, _pos),
    "broker.heartbeat.interval.ms": Key(INT, 2000, _pos),
    "broker.session.timeout.ms": Key(INT, 9000, _pos),
    # the hosts' Linux page-cache writeback (0: no periodic writeback, so a power loss drops
    # everything Kafka did not flush)
    "vm.dirty_writeback_centisecs": Key(INT, 500, _nonneg),
    "vm.dirty_expire_centisecs": Key(INT, 3000, _nonneg),
    # the internal __consumer_offsets topic (Kafka's defaults; the replication factor is
    # at most the broker count unless given: see docs/fidelity.md)
    "offsets.topic.num.partitions": Key(INT, 50, _between(1, 10_000, "offsets partitions")),
    "offsets.topic.replication.factor": Key(INT, None, _pos, derived=True),
    "offsets.commit.timeout.ms": Key(INT, 5000, _pos),
    # preferred leaders (the controller's periodic rebalance)
    "auto.leader.rebalance.enable": Key(BOOL, True),
    "leader.imbalance.check.interval.seconds": Key(INT, 300, _pos),
    "leader.imbalance.per.broker.percentage": Key(INT, 10, _between(0, 100, "percent")),
    # the controlled_shutdown step (false: it is a plain clean stop, as `shutdown`)
    "controlled.shutdown.enable": Key(BOOL, True),
    "controlled.shutdown.max.retries": Key(INT, 3, _nonneg),
    "controlled.shutdown.retry.backoff.ms": Key(INT, 5000, _pos),
}

TOPIC: dict[str, Key] = {
    "name": Key(STR, "orders"),
    "partitions": Key(INT, 1, _between(1, 10_000, "partitions of one topic")),
    "replication.factor": Key(INT, 3, _pos),
    "min.insync.replicas": Key(INT, 1, _pos),
    "unclean.leader.election.enable": Key(BOOL, None, derived=True),  # era default
    "segment.bytes": Key(INT, 1073741824, _pos),
    "segment.ms": Key(INT, 604800000, _pos),
    "retention.ms": Key(INT, 604800000, lambda v: None if v >= -1 else "must be >= -1"),
    "retention.bytes": Key(INT, -1, lambda v: None if v >= -1 else "must be >= -1"),
    # false: the topic does not exist until a create_topic step creates it
    "create_at_start": Key(BOOL, True),
}

NETWORK: dict[str, Key] = {
    "delay": Key((dict,), {"dist": "uniform", "low_ms": 0.2, "high_ms": 2.0}),
    "drop_rate": Key(NUM, 0.0, _rate),
    "corrupt_rate": Key(NUM, 0.0, _rate),
    # TCP (emulator.tcp): Linux's defaults
    "tcp_rto_min_ms": Key(NUM, 200.0, _pos),
    "tcp_rto_max_ms": Key(NUM, 120_000.0, _pos),
    "tcp_retries2": Key(INT, 15, _between(1, 30, "retransmissions before a break")),
    "tcp_syn_retries": Key(INT, 6, _between(1, 30, "SYN retransmissions")),
    # KIP-601 (2.7+: 10 s doubling to 30 s; none before: the era's default; 0: off)
    "socket.connection.setup.timeout.ms": Key(NUM, None, _nonneg, derived=True),
    "socket.connection.setup.timeout.max.ms": Key(NUM, 30_000.0, _nonneg),
}
DELAY: dict[str, Key] = {
    "dist": Key(STR, "uniform", _one_of("constant", "uniform", "exponential", "lognormal")),
    "ms": Key(NUM, 1.0, _nonneg),
    "low_ms": Key(NUM, 0.2, _nonneg),
    "high_ms": Key(NUM, 2.0, _nonneg),
    "mean_ms": Key(NUM, 1.0, _nonneg),
    "mu": Key(NUM, 0.0),
    "sigma": Key(NUM, 0.5, _nonneg),
}

PRODUCER: dict[str, Key] = {
    "topic": Key(STR, None),
    "rate": Key(NUM, 100.0, _between(0, 1_000_000, "records per simulated second")),
    "keys": Key(INT, 16, _nonneg),
    "partitioner": Key(STR, "default", _one_of("default", "legacy")),
    "acks": Key(STR, "all", _one_of("0", "1", "all", "-1")),
    "enable.idempotence": Key(BOOL, True),
    "retries": Key(INT, 2147483647, _nonneg),
    "max.in.flight.requests.per.connection": Key(INT, 5, _pos),
    "linger.ms": Key(INT, 5, _nonneg),
    "batch.size": Key(INT, 16384, _pos),
    "request.timeout.ms": Key(INT, 30000, _pos),
    "delivery.timeout.ms": Key(INT, 120000, _pos),
    "retry.backoff.ms": Key(INT, 100, _nonneg),
    "metadata.max.age.ms": Key(INT, 300000, _pos),
    "reconnect.backoff.ms": Key(INT, 50, _pos),
    "reconnect.backoff.max.ms": Key(INT, 1000, _pos),
}

CONSUMER: dict[str, Key] = {
    "group": Key(STR, None),
    "topic": Key(STR, None),
    "members": Key(INT, 1, _between(1, 1000, "members of one consumer group")),
    "partition.assignment.strategy": Key(STR, "range", _one_of(*ASSIGNORS)),
    "auto.offset.reset": Key(STR, "latest", _one_of("earliest", "latest", "none")),
    "auto.commit.interval.ms": Key(INT, 5000, _pos),
    "session.timeout.ms": Key(INT, 45000, _pos),
    "heartbeat.interval.ms": Key(INT, 3000, _pos),
    "fetch.max.wait.ms": Key(INT, 500, _nonneg),
    "max.poll.records": Key(INT, 500, _pos),
    "metadata.max.age.ms": Key(INT, 300000, _pos),
    "reconnect.backoff.ms": Key(INT, 50, _pos),
    "reconnect.backoff.max.ms": Key(INT, 1000, _pos),
}

FAULTS: dict[str, Key] = {
    "plan": Key((list,), []),
    "nemesis": Key((list,), [], _strings),
    "interval_s": Key(NUM, 5.0, _pos),
    "fault_duration_s": Key(NUM, 4.0, _pos),
    "budget": Key(BOOL, True),
    "swarm": Key(BOOL, False),
}

FAULT: dict[str, Key] = {
    "at_s": Key(NUM, None, _nonneg),
    "fault": Key(STR, None),
    "target": Key((str, list), ""),
    "duration_s": Key(NUM, 0.0, _nonneg),
    "extra_ms": Key(NUM, 0.0, _nonneg),
    "rate": Key(NUM, 0.0, _rate),
    "source": Key((str, list), ""),
    "fetcher_id": Key(INT, -1, None),
    "replicas": Key((list,), [], _integers),
    "throttle": Key(INT, 0, _nonneg),
    "partitions": Key(INT, 0, _between(0, 10_000, "partitions of one topic")),
}
#: a corrupt_disk step: its own keys, in its entries only (other entries keep their shape)
CORRUPT_DISK: dict[str, Key] = {**FAULT, "topic_partition": Key(STR, None), "offset": Key(
    INT, -1, lambda v: None if v >= -1 else "must be >= -1 (-1: the last record)")}

#: an isolate_controller step: from the other voters only (the default) or from every node
ISOLATE_CONTROLLER: dict[str, Key] = {**FAULT, "scope": Key(STR, "voters",
                                                             _one_of("voters", "all"))}
#: a lose_quorum step: a majority of the voters crashed (the default) or cut from the others
LOSE_QUORUM: dict[str, Key] = {**FAULT, "how": Key(STR, "crash", _one_of("crash", "isolate"))}
#: the tables of the plan steps that have keys of their own (others: FAULT)
FAULT_TABLES: dict[str, dict[str, Key]] = {"corrupt_disk": CORRUPT_DISK,
                                           "isolate_controller": ISOLATE_CONTROLLER,
                                           "lose_quorum": LOSE_QUORUM}

EXPECT: dict[str, Key] = {
    "anomalies": Key((list,), [], _strings),
    "forbid": Key((list,), None, _strings, derived=True),
}

SECTIONS = ("cluster", "topics", "network", "producers", "consumers", "faults", "expect",
            "catalog", "admin", "explore")
#: a field path's section, as a regular expression group
_SECTION = "(" + "|".join(SECTIONS) + ")"

ADMIN: dict[str, Key] = {
    "at_s": Key(NUM, None, _nonneg),
    "op": Key(STR, None, _one_of("delete_records")),
    "topic": Key(STR, None),
    "partition": Key(INT, 0, _nonneg),
    "offset": Key(INT, -1, lambda v: None if v >= -1 else "must be >= -1 (-1: the HW)"),
}

CATALOG: dict[str, Key] = {
    "reference": Key(STR, ""),          # id in docs/historical-scenarios.md, e.g. "S1"
    "fixed": Key((list,), [], _overrides),   # --set overrides under which the bug is gone
    "random": Key((list,), [], _overrides),  # --set overrides for its random-fault mode
}

#: ``[explore]``: the bounds of ``isrlab explore`` on this scenario, and a schedule to run
#: (emulator.choice); present in the resolved scenario only when the file has the table
EXPLORE: dict[str, Key] = {
    "set": Key((list,), [], _overrides),    # --set overrides making the small variant
    "from_s": Key(NUM, 0.0, _nonneg),       # the window opens (simulated seconds)
    "depth": Key(INT, 20, _between(0, 100_000, "choice points")),
    "max_faults": Key(INT, 2, _between(0, 100, "faults")),
    "max_reorders": Key(INT, 1, _between(0, 100_000, "reorderings")),
    "horizon_ms": Key(NUM, 0.0, _nonneg),
    "slot_ms": Key(NUM, 0.0, _nonneg),       # faults once per slot (0: every instant)
    # candidate faults: "crash broker-2", "isolate broker-1 for 4s", ...
    "faults": Key((list,), [], _strings),
}
# and ``choices``, a schedule: [{point, option, label}, ...] (only when given: a scenario
# without one is not driven)
