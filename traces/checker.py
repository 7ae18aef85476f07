"""The fast in-process anomaly checker: one pass over a trace, no Spark.

What it models. A trace (schema 1, ``traces.schema``) is the total order of everything the
emulated cluster did. The checker folds that order into per-partition state — the leader
named by the controller, the committed ISR, the largest HW any leader ever traced, every
acknowledged and every consumed record, the final logs — and, once ``final_log`` has been
seen, judges each anomaly (``traces.schema.ANOMALIES``) against the *final committed log*
of each partition. The precise definitions live in ``docs/anomalies.md``;
``spark_analysis.analyses`` computes the same numbers with DataFrames, and a test holds the
two to equal counts on every trace.

Design choices.

* Streaming. ``Checker.feed`` takes one event at a time and keeps only compact tuples
  (acks, consumes, final-log records), so a 1M-event trace is checked in seconds without
  holding a million dicts. ``check_events`` is ``feed`` over a list; ``check_file`` streams a
  file through ``traces.reader`` (the one trace contract of every door, see its doc).
* Order is the trace's order (``seq``); nothing depends on dict hashing of strings, sets are
  only used for membership, and every reported list is sorted. No wall clock, no randomness:
  the same trace gives byte-identical ``--json`` output.
* Values, producer/consumer/group ids and ``acks`` are normalised to the text Spark's JSON
  reader would give for a ``StringType`` column (``"0"`` for ``0``), so both implementations
  key records identically.

Left out: transactions (LSO, aborted reads), Jepsen's Elle cycle analysis, and "unseen"
(acked but never consumed) — the final committed log is the read-back here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import orjson

from traces.quorum_check import QuorumChecker
from traces.reader import iter_events, regular_file
from traces.schema import ANOMALIES
from traces.verdict import (
    DURATIONS,
    Verdict,
    anomaly_label,
    counts_text,
    expectations,
    judge,
    partition_state,
)

#: How many examples per anomaly ``CheckResult.details`` keeps (the first ones, by ``seq``).
MAX_DETAILS: Final = 10
#: A shrink of a replica followed by its expand within this window is one ``isr_churn``.
ISR_CHURN_WINDOW_US: Final = 60_000_000
#: Stand-in for a missing record value (a gap in a replica's log, or a JSON null).
MISSING: Final = "\x00"

Event = Mapping[str, Any]
PartitionKey = tuple[str, int]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class PartitionSummary:
    """What the checker concluded about one topic-partition."""

    topic: str
    partition: int
    #: Replica whose ``final_log`` defines the final committed log (None: no final_log).
    final_log_replica: int | None
    #: True when the partition ended with no leader (or never had one traced).
    offline: bool
    final_hw: int | None
    final_log_start_offset: int | None
    #: The ``converged`` flag of the partition's ``convergence`` event, None when absent.
    converged: bool | None
    acked_records: int
    consumed_records: int
    under_min_isr_us: int
    anomalies: dict[str, int]


def run_unfinished(truncated: bool, status: str | None) -> bool:
    """A trace without ``run_end``, or whose run was stopped or crashed (docs/anomalies.md
    §6): no verdict is given on it."""
    return truncated or status in ("aborted", "error")


#: anomalies a trace imported from Kafka's logs cannot show: they need every record sent,
#: acknowledged and read, and the final logs, which broker logs do not carry
NOT_FROM_LOGS: Final = ("lost_acked_write", "lost_acked_uncommitted", "expired",
                        "hw_regression_visible", "log_divergence", "read_uncommitted",
                        "nonmonotonic_send", "duplicate", "poll_skip", "nonmonotonic_poll",
                        "no_convergence", "lost_committed_offset")

#: ``isrlab check``'s exit code for a trace of a run that did not finish (docs/anomalies.md)
EXIT_INCOMPLETE: Final = 3

#: a consumer's node is this prefix and its consumer name (``emulator.scenario.consumer_node``)
CONSUMER_NODE_PREFIX: Final = "consumer-"


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one trace. ``anomalies`` holds every name of ``ANOMALIES``."""

    anomalies: dict[str, int]
    details: dict[str, list[dict[str, Any]]]
    forbidden_found: list[str]
    missing_expected: list[str]
    expect_met: bool
    partitions: dict[str, PartitionSummary]
    events: int
    scenario: str | None = None
    seed: int | None = None
    status: str | None = None
    truncated: bool = False
    #: read from Kafka's logs (``isrlab import``): no records, so the per-record anomalies
    #: (writes, reads, sends, duplicates, convergence) are not available — not zero
    imported: bool = False
    #: the anomalies the scenario's ``[expect]`` asks for
    expected: list[str] = field(default_factory=list)
    #: the scenario's ``protocol``, ``bugs`` and ``catalog`` (what it reproduces)
    about: dict[str, Any] = field(default_factory=dict)

    @property
    def incomplete(self) -> bool:
        """The run did not finish: the trace has no ``run_end`` (cut, or the writer was
        killed) or ends with status ``aborted`` (Ctrl-C, SIGTERM) or ``error`` (an actor
        raised). Its anomalies are real, but no verdict is given on it: never "met"."""
        return run_unfinished(self.truncated, self.status)

    def verdict(self) -> Verdict:
        """The verdict in words (:mod:`traces.verdict`), as every door prints it."""
        why = None
        if self.incomplete:
            why = "no run_end" if self.truncated else f"status {self.status}"
        return judge(self.anomalies, forbidden_found=self.forbidden_found,
                     missing_expected=self.missing_expected, expected=self.expected,
                     expect_met=self.expect_met, scenario=self.about,
                     per_partition=self.per_partition(), incomplete=why,
                     imported=self.imported)

    def per_partition(self) -> dict[str, dict[str, int]]:
        """Every partition's anomaly counts, by partition name."""
        return {p: s.anomalies for p, s in self.partitions.items()}

    def counts_text(self) -> str:
        """Every non-zero anomaly with its unit, as every door lists them."""
        return counts_text(self.anomalies, ANOMALIES,
                           not_available=NOT_FROM_LOGS if self.imported else ())

    def to_json_dict(self) -> dict[str, Any]:
        """The machine-readable part shared by ``isrlab check --json`` and reports."""
        return {
            "events": self.events,
            "scenario": self.scenario,
            "seed": self.seed,
            "status": self.status,
            "truncated": self.truncated,
            "anomalies": {a: (None if self.imported and a in NOT_FROM_LOGS else n)
                          for a, n in self.anomalies.items()},
            "imported": self.imported,
            "expect_met": None if self.imported else self.expect_met,
            "forbidden_found": list(self.forbidden_found),
            "missing_expected": list(self.missing_expected),
            "verdict": self.verdict().to_json_dict(),
        }


# --------------------------------------------------------------------------- normalising


def _text(v: Any) -> str | None:
    """The text Spark's JSON reader gives a ``StringType`` column for this JSON value."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return orjson.dumps(v).decode()


def _int(v: Any) -> int | None:
    """An integer field, or None when absent or not an integer."""
    return v if type(v) is int else None  # bool is not an offset


def _acks(v: Any) -> str:
    """``acks`` normalised: "all" (also -1 and absent: Kafka's default since 3.0), "1", "0"."""
    t = _text(v)
    if t is None or t == "-1":
        return "all"
    return t


def _isr(v: Any) -> frozenset[int] | None:
    if not isinstance(v, list):
        return None
    return frozenset(x for x in v if isinstance(x, int) and not isinstance(x, bool))


def _pkey(ev: Event) -> PartitionKey | None:
    topic, partition = ev.get("topic"), _int(ev.get("partition"))
    if not isinstance(topic, str) or partition is None:
        return None
    return (topic, partition)


# --------------------------------------------------------------------------- state


@dataclass
class _ReplicaLog:
    """One replica's ``final_log``: HW/LEO/logStartOffset and its records."""

    hw: int = 0
    leo: int = 0
    lso: int = 0
    #: The highest leader epoch of its records (-1: none): the log's last epoch.
    last_epoch: int = -1
    values: dict[int, str] = field(default_factory=dict)
    #: Extra values when one offset is listed more than once (a broken log).
    extra: dict[int, set[str]] = field(default_factory=dict)

    def add(self, offset: int, value: str) -> None:
        first = self.values.setdefault(offset, value)
        if first != value:
            self.extra.setdefault(offset, set()).add(value)

    def values_at(self, offset: int) -> set[str]:
        first = self.values.get(offset)
        if first is None:
            return {MISSING}
        more = self.extra.get(offset)
        return {first} | more if more else {first}

    def holds(self, offset: int, value: str) -> bool:
        if self.values.get(offset) == value:
            return True
        more = self.extra.get(offset)
        return more is not None and value in more


@dataclass
class _Partition:
    """Everything the checker keeps per topic-partition while streaming."""

    #: last leadership event: ("leader_elected", leader or None) / ("partition_offline", None)
    leadership: tuple[str, int | None] | None = None
    #: running max of ``hw_update.new`` with role "leader": the largest HW ever exposed.
    max_leader_hw: int = 0
    isr: frozenset[int] | None = None
    #: the replica list (AR): from the ISR the partition was created with, then every
    #: ``replicas_change``; None while unknown (a trace without the creation)
    ar: frozenset[int] | None = None
    isr_since_us: int = 0
    under_min_isr_us: int = 0
    converged: bool | None = None
    final_logs: dict[int, _ReplicaLog] = field(default_factory=dict)
    #: first ack per value: value -> (offset, acks, producer, ack seq, ts_us)
    acks: dict[str, tuple[int, str, str | None, int, int]] = field(default_factory=dict)
    #: every produce_ack (value, offset) with offset >= 0, for duplicates
    ack_offsets: list[tuple[str, int]] = field(default_factory=list)
    #: every consume: (offset, value-or-MISSING, hw or None, seq, ts_us, group, consumer)
    consumes: list[tuple[int, str, int | None, int, int, str | None, str | None]] = field(
        default_factory=list
    )
    #: first produce_send seq per value (send order for nonmonotonic_send)
    send_seq: dict[str, int] = field(default_factory=dict)
    #: the first send's producer and acks per value (a send a read places, without its ack)
    send_from: dict[str, tuple[str | None, str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ANOMALIES, 0))
    #: the highest leader epoch an election or take-over of the partition carried
    max_leader_epoch: int | None = None
    #: the highest leader epoch a broker of the partition took over with (``become_leader``)
    max_taken_epoch: int | None = None


class Checker:
    """Fold a trace one event at a time; ``result()`` gives the verdict.

    The definitions are those of ``docs/anomalies.md``; each ``_on_<event>`` method handles
    one event type and the deferred judgements run in ``result()`` once the final logs are in.
    """

    def __init__(self, max_details: int = MAX_DETAILS) -> None:
        #: examples kept per anomaly (``isrlab explain`` keeps every one)
        self.max_details = max_details
        self.events = 0
        self.scenario: dict[str, Any] = {}
        self.seed: int | None = None
        self.status: str | None = None
        self.truncated = False
        self.end_us = 0
        self._parts: dict[PartitionKey, _Partition] = {}
        self._last_hw: dict[tuple[str, int, int], int] = {}
        self._transitions: dict[tuple[str, int, int], tuple[str, int]] = {}
        #: poll chains: (group, consumer) -> (topic, partition) -> last offset read
        self._chains: dict[tuple[str | None, str | None], dict[tuple[str, int], int]] = {}
        self._details: dict[str, list[tuple[tuple[int, str, int], dict[str, Any]]]] = {
            a: [] for a in ANOMALIES
        }
        self._min_isr: dict[str, int] = {}
        #: committed offsets, per (group, topic, partition): every commit sent, as
        #: (seq, offset), and every acknowledged one, as (ts_us, send seq, offset), in order
        self._commit_sends: dict[tuple[str, str, int], list[tuple[int, int]]] = {}
        self._commit_by_id: dict[tuple[str, str, int], tuple[int, int]] = {}
        self._commit_acks: dict[tuple[str, str, int], list[tuple[int, int, int]]] = {}
        self._handlers = {
            "run_start": self._on_run_start,
            "run_end": self._on_run_end,
            "hw_update": self._on_hw_update,
            "isr_change": self._on_isr_change,
            "leader_elected": self._on_leader_elected,
            "partition_offline": self._on_partition_offline,
            "produce_send": self._on_produce_send,
            "produce_ack": self._on_produce_ack,
            "consume": self._on_consume,
            "assignment": self._on_assignment,
            "offset_commit": self._on_offset_commit,
            "offset_commit_ack": self._on_offset_commit_ack,
            "offset_fetch": self._on_offset_fetch,
            "node_crash": self._on_node_crash,
            "replicas_change": self._on_replicas_change,
            "replica_deleted": self._on_replica_deleted,
            "log_truncate": self._on_log_truncate,
            "become_leader": self._on_become_leader,
            "final_log": self._on_final_log,
            "convergence": self._on_convergence,
            # the controller quorum's metadata log (traces.quorum_check)
            **QuorumChecker(self._note).handlers(),
        }

    # ----------------------------------------------------------------- streaming

    def feed(self, ev: Event) -> None:
        self.events += 1
        ts = ev.get("ts_us")
        if type(ts) is int:
            if ts > self.end_us:
                self.end_us = ts
        else:
            ts = self.end_us
        handler = self._handlers.get(ev.get("event"))  # type: ignore[arg-type]
        if handler is not None:
            seq = ev.get("seq")
            handler(ev, seq if type(seq) is int else self.events - 1, ts)

    def _part(self, key: PartitionKey) -> _Partition:
        p = self._parts.get(key)
        if p is None:
            p = self._parts[key] = _Partition()
        return p

    def _note(
        self, anomaly: str, key: PartitionKey, seq: int | None, detail: dict[str, Any]
    ) -> None:
        """Count one occurrence and keep it as an example while there is room.

        ``seq`` is the witnessing event; None for partition-level findings (divergence,
        duplicates, convergence), which sort after event-level ones.
        """
        part = self._part(key)
        part.counts[anomaly] += 1
        if part.counts[anomaly] <= self.max_details:
            kept = self._details[anomaly]
            head: dict[str, Any] = {"topic": key[0], "partition": key[1]}
            if seq is not None:
                head["seq"] = seq
            kept.append(((seq if seq is not None else 1 << 62, key[0], key[1]), {**head, **detail}))

    def _on_run_start(self, ev: Event, seq: int, ts: int) -> None:
        scenario = ev.get("scenario")
        self.scenario = scenario if isinstance(scenario, dict) else {}
        self.seed = _int(ev.get("seed"))
        self._min_isr = effective_min_isr(self.scenario)

    def _on_run_end(self, ev: Event, seq: int, ts: int) -> None:
        status = ev.get("status")
        self.status = status if isinstance(status, str) else None

    def _on_hw_update(self, ev: Event, seq: int, ts: int) -> None:
        key, replica, new = _pkey(ev), _int(ev.get("replica")), _int(ev.get("new"))
        if key is None or replica is None or new is None:
            return
        old = _int(ev.get("old"))
        rkey = (key[0], key[1], replica)
        prev = self._last_hw.get(rkey)
        self._last_hw[rkey] = new
        if (old is not None and new < old) or (prev is not None and new < prev):
            self._note(
                "hw_regression_replica",
                key,
                seq,
                {"ts_us": ts, "replica": replica, "old": old if old is not None else prev,
                 "new": new, "reason": ev.get("reason"), "role": ev.get("role")},
            )
        if ev.get("role") == "leader":
            p = self._part(key)
            if new > p.max_leader_hw:
                p.max_leader_hw = new

    def _set_isr(
        self, key: PartitionKey, seq: int, ts: int, isr: frozenset[int], old: frozenset[int] | None
    ) -> None:
        p = self._part(key)
        prev = p.isr if p.isr is not None else old
        if p.isr is not None:
            self._close_isr_interval(key, p, ts)
        p.isr, p.isr_since_us = isr, ts
        if prev is None:
            return
        for replica, kind in sorted(
            [(r, "shrink") for r in prev - isr] + [(r, "expand") for r in isr - prev]
        ):
            rkey = (key[0], key[1], replica)
            last = self._transitions.get(rkey)
            self._transitions[rkey] = (kind, ts)
            if (
                kind == "expand"
                and last is not None
                and last[0] == "shrink"
                and ts - last[1] <= ISR_CHURN_WINDOW_US
            ):
                self._note(
                    "isr_churn", key, seq,
                    {"ts_us": ts, "replica": replica, "shrink_ts_us": last[1], "expand_ts_us": ts},
                )

    def _close_isr_interval(self, key: PartitionKey, p: _Partition, until: int) -> None:
        assert p.isr is not None
        if len(p.isr) < self._min_isr.get(key[0], 1) and until > p.isr_since_us:
            p.under_min_isr_us += until - p.isr_since_us

    def _on_isr_change(self, ev: Event, seq: int, ts: int) -> None:
        key, new = _pkey(ev), _isr(ev.get("new"))
        if key is not None and new is not None:
            if ev.get("reason") == "create":
                self._part(key).ar = new   # a new partition's ISR is all its replicas
            self._set_isr(key, seq, ts, new, _isr(ev.get("old")))
            self._check_assignment(key, seq, ts, new, None)

    def _on_log_truncate(self, ev: Event, seq: int, ts: int) -> None:
        """``possible_committed_truncation``: a replica cut its log below the HW the line
        names (``ReplicaFetcherThread``'s "Truncating ... below high watermark"): records it
        had seen committed are gone from it."""
        key, new, hw = _pkey(ev), _int(ev.get("new_leo")), _int(ev.get("hw"))
        if key is not None and new is not None and hw is not None and new < hw:
            self._note("possible_committed_truncation", key, seq,
                       {"ts_us": ts, "replica": _int(ev.get("replica")), "new_leo": new,
                        "hw": hw, "records": hw - new})

    def _on_become_leader(self, ev: Event, seq: int, ts: int) -> None:
        key = _pkey(ev)
        if key is not None:
            self._leader_epoch(key, seq, ts, _int(ev.get("leader_epoch")),
                               _int(ev.get("replica")), taken=True)

    def _leader_epoch(self, key: PartitionKey, seq: int, ts: int, epoch: int | None,
                      leader: int | None, *, taken: bool = False) -> None:
        """``leader_epoch_regression``: a leader elected with a lower epoch than one an
        earlier election or take-over of the partition carried, or a broker taking over
        (``taken``) with a lower epoch than an earlier take-over. A take-over below an
        election that no broker has acted on yet is a broker behind the controller, not a
        regression: KRaft brokers apply the metadata log in order after the controller
        committed it, and a lagging one may act on a leadership the controller has already
        moved (a swarm campaign's seed 8: the creation's epoch 0, then epoch 1)."""
        if epoch is None:
            return
        p = self._part(key)
        before = p.max_taken_epoch if taken else p.max_leader_epoch
        if before is not None and epoch < before:
            self._note("leader_epoch_regression", key, seq,
                       {"ts_us": ts, "leader": leader, "leader_epoch": epoch,
                        "previous_epoch": before})
        p.max_leader_epoch = epoch if p.max_leader_epoch is None else max(
            epoch, p.max_leader_epoch)
        if taken:
            p.max_taken_epoch = epoch if p.max_taken_epoch is None else max(
                epoch, p.max_taken_epoch)

    def _on_leader_elected(self, ev: Event, seq: int, ts: int) -> None:
        key = _pkey(ev)
        if key is None:
            return
        leader = _int(ev.get("leader"))
        if ev.get("election") == "unclean":
            self._note("unclean_election", key, seq,
                       {"ts_us": ts, "leader": leader,
                        "leader_epoch": _int(ev.get("leader_epoch"))})
        self._leader_epoch(key, seq, ts, _int(ev.get("leader_epoch")), leader)
        self._part(key).leadership = (
            "leader_elected", leader if leader is not None and leader >= 0 else None
        )
        isr = _isr(ev.get("isr"))
        if isr is not None:
            self._set_isr(key, seq, ts, isr, None)
        self._check_assignment(key, seq, ts, isr, leader)

    def _on_replicas_change(self, ev: Event, seq: int, ts: int) -> None:
        key, new = _pkey(ev), _isr(ev.get("new"))
        if key is not None and new is not None:
            self._part(key).ar = new

    def _check_assignment(self, key: PartitionKey, seq: int, ts: int,
                          isr: frozenset[int] | None, leader: int | None) -> None:
        """``outside_assignment``: a committed ISR member or an elected leader that is not in
        the partition's replica list (AR) — e.g. a replica a reassignment removed."""
        ar = self._part(key).ar
        if ar is None:
            return
        outside = sorted((isr or frozenset()) - ar)
        if leader is not None and leader >= 0 and leader not in ar:
            outside = sorted({*outside, leader})
        if outside:
            self._note("outside_assignment", key, seq,
                       {"ts_us": ts, "replicas": sorted(ar), "outside": outside,
                        "isr": sorted(isr) if isr is not None else None, "leader": leader})

    def _on_replica_deleted(self, ev: Event, seq: int, ts: int) -> None:
        """A replica removed from its broker is gone with its HW: one created there later
        starts again from 0, which is no HW regression."""
        key, replica = _pkey(ev), _int(ev.get("replica"))
        if key is not None and replica is not None:
            self._last_hw.pop((key[0], key[1], replica), None)

    def _on_partition_offline(self, ev: Event, seq: int, ts: int) -> None:
        key = _pkey(ev)
        if key is not None:
            self._part(key).leadership = ("partition_offline", None)

    def _on_produce_send(self, ev: Event, seq: int, ts: int) -> None:
        key, value = _pkey(ev), _text(ev.get("value"))
        if key is not None and value is not None:
            p = self._part(key)
            if value not in p.send_seq:
                p.send_seq[value] = seq
                p.send_from[value] = (_text(ev.get("producer")), _acks(ev.get("acks")))

    def _on_produce_ack(self, ev: Event, seq: int, ts: int) -> None:
        key, offset, value = _pkey(ev), _int(ev.get("offset")), _text(ev.get("value"))
        if key is None or offset is None or offset < 0:
            return
        p = self._part(key)
        v = value if value is not None else MISSING
        if value is not None:
            p.ack_offsets.append((value, offset))
        acks = _acks(ev.get("acks"))
        if acks != "0" and v not in p.acks:
            p.acks[v] = (offset, acks, _text(ev.get("producer")), seq, ts)

    def _on_consume(self, ev: Event, seq: int, ts: int) -> None:
        key, offset = _pkey(ev), _int(ev.get("offset"))
        if key is None or offset is None:
            return
        p = self._part(key)
        value = _text(ev.get("value"))
        v = value if value is not None else MISSING
        hw = _int(ev.get("hw"))
        group, consumer = _text(ev.get("group")), _text(ev.get("consumer"))
        p.consumes.append((offset, v, hw, seq, ts, group, consumer))
        detail = {"ts_us": ts, "offset": offset, "value": value, "hw": hw,
                  "group": group, "consumer": consumer}
        # read_uncommitted: beyond the HW it was served under, or beyond every leader HW so far.
        if offset >= p.max_leader_hw or (hw is not None and offset >= hw):
            self._note("read_uncommitted", key, seq,
                       {**detail, "max_leader_hw": p.max_leader_hw})
        # poll chains: consecutive reads of one consumer and one partition for as long as the
        # assignment protocol keeps the consumer's position (see _on_assignment)
        chains = self._chains.setdefault((group, consumer), {})
        previous = chains.get(key)
        chains[key] = offset
        if previous is not None:
            if offset <= previous:
                self._note("nonmonotonic_poll", key, seq, {**detail, "previous_offset": previous})
            elif offset > previous + 1:
                self._note("poll_skip", key, seq, {**detail, "previous_offset": previous})

    def _on_node_crash(self, ev: Event, seq: int, ts: int) -> None:
        """A consumer process that stops keeps no position: its chains end (the restarted
        process starts from the committed offsets; Jepsen gives it a new process id)."""
        node = _text(ev.get("node"))
        if node is not None and node.startswith(CONSUMER_NODE_PREFIX):
            name = node[len(CONSUMER_NODE_PREFIX):]
            for key in [k for k in self._chains if k[1] == name]:
                del self._chains[key]

    def _on_assignment(self, ev: Event, seq: int, ts: int) -> None:
        """A consumer's new assignment ends the poll chains whose position the protocol in
        force does not keep: every one under the eager protocol (the consumer starts each
        partition again from the committed offset), only those of partitions taken away under
        the cooperative one and for a manual ``assign`` (the position of a kept partition
        survives: a skip or a step back on it is still an anomaly). Traces without a
        ``protocol`` field come from eager consumers."""
        chains = self._chains.get((_text(ev.get("group")), _text(ev.get("consumer"))))
        if not chains:
            return
        parts = ev.get("partitions")
        kept = {p for p in parts if type(p) is int} if isinstance(parts, list) else set()
        if ev.get("protocol", "eager") == "eager":
            kept = set()
        for key in [k for k in chains if k[1] not in kept]:
            del chains[key]

    # ------------------------------------------------------- committed offsets

    def _commit_key(self, ev: Event) -> tuple[str, str, int] | None:
        group, topic, part = _text(ev.get("group")), _text(ev.get("topic")), _int(
            ev.get("partition"))
        if group is None or topic is None or part is None:
            return None
        return (group, topic, part)

    def _on_offset_commit(self, ev: Event, seq: int, ts: int) -> None:
        key, offset = self._commit_key(ev), _int(ev.get("offset"))
        if key is None or offset is None:
            return
        self._commit_sends.setdefault(key, []).append((seq, offset))
        cid = (str(ev.get("consumer")), str(ev.get("group")), _int(ev.get("commit_id")) or 0)
        self._commit_by_id[cid] = (seq, offset)

    def _on_offset_commit_ack(self, ev: Event, seq: int, ts: int) -> None:
        key = self._commit_key(ev)
        cid = (str(ev.get("consumer")), str(ev.get("group")), _int(ev.get("commit_id")) or 0)
        sent = self._commit_by_id.get(cid)
        if key is None or sent is None:
            return
        self._commit_acks.setdefault(key, []).append((ts, sent[0], sent[1]))

    def _on_offset_fetch(self, ev: Event, seq: int, ts: int) -> None:
        """``lost_committed_offset``: a committed offset read back (OffsetFetch) must be the
        latest commit acknowledged to the group before the read was asked for, or one sent
        after that commit (it may have been applied, its acknowledgement still on its way).
        Anything else — an older offset, or none — means the coordinator lost an
        acknowledged commit (an offsets partition that lost records, a coordinator that
        loaded less than was acknowledged)."""
        key, got, asked = self._commit_key(ev), _int(ev.get("offset")), _int(
            ev.get("requested_us"))
        if key is None or got is None or asked is None:
            return
        latest = None
        for ack in self._commit_acks.get(key, ()):
            if ack[0] < asked:
                latest = ack
        if latest is None:
            return
        allowed = {latest[2]} | {off for s, off in self._commit_sends.get(key, ())
                                 if latest[1] < s < seq}
        if got not in allowed:
            self._note("lost_committed_offset", (key[1], key[2]), seq, {
                "group": key[0], "consumer": ev.get("consumer"), "fetched": got,
                "acknowledged": latest[2], "acknowledged_seq": latest[1]})

    def _on_final_log(self, ev: Event, seq: int, ts: int) -> None:
        key, replica = _pkey(ev), _int(ev.get("replica"))
        if key is None or replica is None:
            return
        logs = self._part(key).final_logs
        log = logs.get(replica)
        if log is None:
            log = logs[replica] = _ReplicaLog()
        log.hw = max(log.hw, _int(ev.get("hw")) or 0)
        log.leo = max(log.leo, _int(ev.get("leo")) or 0)
        log.lso = max(log.lso, _int(ev.get("log_start_offset")) or 0)
        records = ev.get("records")
        if isinstance(records, list):
            for rec in records:
                if isinstance(rec, list) and len(rec) >= 2:
                    offset = _int(rec[0])
                    if offset is not None:
                        value = _text(rec[1])
                        log.add(offset, value if value is not None else MISSING)
                        epoch = _int(rec[2]) if len(rec) >= 3 else None
                        if epoch is not None and epoch > log.last_epoch:
                            log.last_epoch = epoch

    def _on_convergence(self, ev: Event, seq: int, ts: int) -> None:
        key = _pkey(ev)
        if key is None:
            return
        p = self._part(key)
        ok = ev.get("converged") is True
        p.converged = ok if p.converged is None else (p.converged and ok)

    # ----------------------------------------------------------------- verdict

    def result(self) -> CheckResult:
        summaries: dict[str, PartitionSummary] = {}
        for key in sorted(self._parts):
            summaries[f"{key[0]}-{key[1]}"] = self._judge_partition(key, self._parts[key])
        totals = dict.fromkeys(ANOMALIES, 0)
        under_us = 0
        for key in sorted(self._parts):
            p = self._parts[key]
            for name in ANOMALIES:
                if name != "under_min_isr":
                    totals[name] += p.counts[name]
            under_us += p.under_min_isr_us
        totals["under_min_isr"] = under_us // 1000
        details: dict[str, list[dict[str, Any]]] = {}
        for name in ANOMALIES:
            kept = sorted(self._details[name], key=lambda sd: sd[0])
            details[name] = [d for _, d in kept[:self.max_details]]
        must, forbid = expectations(self.scenario)
        forbidden: list[str] = [a for a in ANOMALIES if a in forbid and totals[a] > 0]
        missing = [a for a in must if totals.get(a, 0) == 0]
        return CheckResult(
            anomalies=totals,
            details=details,
            forbidden_found=forbidden,
            missing_expected=missing,
            expect_met=not forbidden and not missing
            and not run_unfinished(self.truncated, self.status),
            partitions=summaries,
            events=self.events,
            scenario=_text(self.scenario.get("name")),
            seed=self.seed,
            status=self.status,
            truncated=self.truncated,
            imported=self.scenario.get("imported") is True,
            expected=must,
            about={k: self.scenario[k] for k in ("protocol", "bugs", "catalog")
                   if k in self.scenario},
        )

    def _judge_partition(self, key: PartitionKey, p: _Partition) -> PartitionSummary:
        if p.isr is not None:
            self._close_isr_interval(key, p, self.end_us)
            p.isr_since_us = self.end_us
        c = p.counts
        c["under_min_isr"] = p.under_min_isr_us // 1000

        # Final leader and final committed log (docs/anomalies.md §1).
        elected = p.leadership[1] if p.leadership is not None else None
        offline = elected is None and (p.leadership is not None or bool(p.final_logs))
        logs = p.final_logs
        if elected is not None and elected in logs:
            source: int | None = elected
        elif offline and logs:
            # the replica a recovery would elect: latest last epoch, then longest log
            source = min(logs, key=lambda r: (-logs[r].last_epoch, -logs[r].leo, r))
        elif logs:
            source = min(logs, key=lambda r: (-logs[r].hw, r))
        else:
            source = None
        log = logs.get(source) if source is not None else None
        if offline and log is not None:
            # its records are on disk: committed up to its LEO, not its (stale) checkpoint HW
            log = replace(log, hw=max(log.hw, log.leo))
        if offline or p.converged is False:
            self._note("no_convergence", key, None,
                       {"offline": offline, "converged": p.converged})

        if log is not None:
            self._judge_writes(key, p, log)
            self._judge_divergence(key, p)
        self._judge_duplicates(key, p, log)
        self._judge_send_order(key, p)
        return PartitionSummary(
            topic=key[0],
            partition=key[1],
            final_log_replica=source,
            offline=offline,
            final_hw=log.hw if log is not None else None,
            final_log_start_offset=log.lso if log is not None else None,
            converged=p.converged,
            acked_records=len(p.acks),
            consumed_records=len(p.consumes),
            under_min_isr_us=p.under_min_isr_us,
            anomalies=dict(c),
        )

    def _judge_writes(self, key: PartitionKey, p: _Partition, log: _ReplicaLog) -> None:
        def committed(offset: int, value: str) -> bool:
            return log.lso <= offset < log.hw and log.holds(offset, value)

        for value, (offset, acks, producer, seq, ts) in p.acks.items():
            detail = {"ts_us": ts, "offset": offset, "value": None if value == MISSING else value,
                      "acks": acks, "producer": producer}
            if offset < log.lso:
                self._note("expired", key, seq, {**detail, "log_start_offset": log.lso})
            elif not committed(offset, value):
                name = "lost_acked_write" if acks == "all" else "lost_acked_uncommitted"
                self._note(name, key, seq, {**detail, "final_hw": log.hw})
        for offset, value, hw, seq, ts, group, consumer in p.consumes:
            rewritten = offset >= log.lso and not committed(offset, value)
            retracted = hw is not None and hw > log.hw
            if rewritten or retracted:
                self._note(
                    "hw_regression_visible", key, seq,
                    {"ts_us": ts, "offset": offset, "value": None if value == MISSING else value,
                     "hw": hw, "final_hw": log.hw, "group": group, "consumer": consumer,
                     "rewritten": rewritten, "retracted": retracted},
                )

    def _judge_divergence(self, key: PartitionKey, p: _Partition) -> None:
        logs = p.final_logs
        if len(logs) < 2:
            return
        bounds = sorted({b for r in logs.values() for b in (r.lso, r.hw)})
        for lo, hi in zip(bounds, bounds[1:], strict=False):
            covering = [r for _, r in sorted(logs.items()) if r.lso <= lo and hi <= r.hw]
            if len(covering) < 2:
                continue
            for offset in range(lo, hi):
                first = covering[0].values.get(offset, MISSING)
                if all(
                    r.values.get(offset, MISSING) == first and offset not in r.extra
                    for r in covering
                ):
                    continue
                seen: set[str] = set()
                for r in covering:
                    seen |= r.values_at(offset)
                if len(seen) > 1:
                    by_replica = {
                        str(rid): sorted(r.values_at(offset))
                        for rid, r in sorted(logs.items())
                        if r.lso <= offset < r.hw
                    }
                    self._note("log_divergence", key, None,
                               {"offset": offset, "values": by_replica})

    def _judge_duplicates(self, key: PartitionKey, p: _Partition, log: _ReplicaLog | None) -> None:
        offsets: dict[str, set[int]] = {}
        for value, offset in p.ack_offsets:
            offsets.setdefault(value, set()).add(offset)
        for offset, value, *_ in p.consumes:
            if value != MISSING:
                offsets.setdefault(value, set()).add(offset)
        if log is not None:
            for offset in log.values:
                if log.lso <= offset < log.hw:
                    for v in log.values_at(offset):
                        if v != MISSING:
                            offsets.setdefault(v, set()).add(offset)
        for value in sorted(v for v, offs in offsets.items() if len(offs) > 1):
            self._note("duplicate", key, None,
                       {"value": value, "offsets": sorted(offsets[value])})

    def _judge_send_order(self, key: PartitionKey, p: _Partition) -> None:
        """Each producer's sends in send order must land at increasing offsets. A send is
        placed by its acknowledgement or, when that was lost (an error, a timeout, the
        producer crashed), by the lowest offset a consumer read it at: the read is evidence
        of where it was written, as in Jepsen's version orders (``must-have-committed?``)."""
        by_producer: dict[str | None, list[tuple[int, int, int, str, int]]] = {}
        for value, (offset, _, producer, seq, ts) in p.acks.items():
            order = p.send_seq.get(value, seq)
            by_producer.setdefault(producer, []).append((order, seq, offset, value, ts))
        read_at: dict[str, tuple[int, int, int]] = {}
        for offset, value, _, seq, ts, _, _ in p.consumes:
            if value in p.send_from and value not in p.acks:
                read_at[value] = min(read_at.get(value, (offset, seq, ts)), (offset, seq, ts))
        for value, (offset, seq, ts) in read_at.items():
            producer, acks = p.send_from[value]
            if acks != "0":
                by_producer.setdefault(producer, []).append(
                    (p.send_seq[value], seq, offset, value, ts))
        for producer in sorted(by_producer, key=lambda x: (x is None, x or "")):
            sends = sorted(by_producer[producer])
            for (_, _, prev_offset, prev_value, _), (_, seq, offset, value, ts) in zip(
                sends, sends[1:], strict=False
            ):
                if offset < prev_offset:
                    self._note(
                        "nonmonotonic_send", key, seq,
                        {"ts_us": ts, "offset": offset, "value": value, "producer": producer,
                         "previous_offset": prev_offset, "previous_value": prev_value},
                    )


def effective_min_isr(scenario: Mapping[str, Any]) -> dict[str, int]:
    """Per topic: min(min.insync.replicas, replication.factor) (Kafka's effectiveMinIsr)."""
    out: dict[str, int] = {}
    topics = scenario.get("topics")
    if not isinstance(topics, list):
        return out
    for t in topics:
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            continue
        min_isr = _int(t.get("min.insync.replicas"))
        rf = _int(t.get("replication.factor"))
        eff = min_isr if min_isr is not None else 1
        if rf is not None:
            eff = min(eff, rf)
        out[t["name"]] = eff
    return out


# --------------------------------------------------------------------------- entry points


def check_events(events: Iterable[Event]) -> CheckResult:
    """Check a trace given as its events, in trace order."""
    checker = Checker()
    for ev in events:
        checker.feed(ev)
    return checker.result()


def check_file(path: str | Path, *, max_details: int = MAX_DETAILS) -> CheckResult:
    """Check a ``.jsonl`` / ``.jsonl.gz`` trace file by streaming it.

    The file is read by the shared reader (``traces.reader.iter_events(unfinished=True)``),
    so ``check`` holds a trace to the one contract every door applies: a regular file,
    line 1 a ``run_start`` of this schema with its ``isrlab_version``, every line's crc and
    ``seq``, no line past ``MAX_LINE_BYTES``, ``run_end``'s digest, count and a ``status``
    from ``RUN_STATUSES``, nothing after it — any of these is :class:`TraceError` (exit 2).
    A trace that ends early (no ``run_end``, a cut last line, a gzip stream cut off) is not
    bad input: its lines are checked and the result is ``truncated`` (INCOMPLETE).
    """
    checker = Checker(max_details)
    with iter_events(path, unfinished=True) as stream:
        for ev in stream:
            checker.feed(ev)
    checker.truncated = stream.footer is None
    return checker.result()


def file_digest(path: str | Path) -> str:
    """Hex SHA-256 of the file's bytes (compressed bytes for ``.gz``)."""
    h = hashlib.sha256()
    with open(regular_file(path), "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def format_table(result: CheckResult, trace: str) -> str:
    """The human view: the verdict in words first (:mod:`traces.verdict`), the run apart,
    the anomaly counts with their units; then one row per anomaly, the partitions and the
    first examples."""
    lines = [result.verdict().headline,
             f"run       {result.scenario}  seed {result.seed}  status "
             f"{result.status or 'no run_end'}  events {result.events}",
             f"anomalies {result.counts_text()}",
             f"trace     {trace}"]
    lines.append("")
    lines.append(f"{'anomaly':<24}{'count':>10}  verdict")
    for name in ANOMALIES:
        n = result.anomalies[name]
        if result.imported and name in NOT_FROM_LOGS:
            lines.append(f"{name:<24}{'n/a':>10}  not available for imported traces")
            continue
        mark, _ = anomaly_label(name, n, forbidden_found=result.forbidden_found,
                                missing_expected=result.missing_expected,
                                expected=result.expected)
        count = f"{n / 1000:,.1f} s" if name in DURATIONS else f"{n:,}"
        lines.append(f"{name:<24}{count:>10}  {mark}".rstrip())
    lines.append("")
    lines.append(f"{'partition':<20}{'leader':>7}{'hw':>9}{'lso':>7}{'acked':>8}  state")
    for pname, s in result.partitions.items():
        state = partition_state(s.offline, s.converged, s.anomalies)
        lines.append(
            f"{pname:<20}{_dash(s.final_log_replica):>7}{_dash(s.final_hw):>9}"
            f"{_dash(s.final_log_start_offset):>7}{s.acked_records:>8}  {state}"
        )
    for name in ANOMALIES:
        if result.imported and name in NOT_FROM_LOGS:
            continue
        for d in result.details[name][:3]:
            lines.append(f"  e.g. {name}: {orjson.dumps(d).decode()}")
    return "\n".join(lines)


def _dash(v: int | None) -> str:
    return "-" if v is None else str(v)
