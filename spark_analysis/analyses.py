"""Trace analytics with DataFrames: the checker's anomalies, and the campaign views around them.

Input is ``load.Loaded``: ``events`` (the bulk lines: sends, acks, consumes, HW updates,
narrow, hash-partitioned by K = (tid, topic, partition) and cached), ``side`` (the few
run-level, leadership, ISR and ``final_log`` lines parsed in full, partitioned the same way,
cached) and ``traces`` (per-trace id, path and sizes). Keys are always led by ``tid``, the
trace's small integer id in this load (a path in every row made every sort compare 60-byte
strings whose first bytes are all alike); every view shows the path again
(``Loaded.named``). Orders are by ``seq`` (the trace's total order; many events share a
``ts_us``).

The anomaly definitions are ``docs/anomalies.md``, the same text ``traces.checker`` follows;
``Analysis.table`` is the one place that turns them into counts and ``tests/spark`` holds it
equal to ``check_events`` on every trace the tests have. The mapping, definition by definition:

* final committed log — ``final_source`` (last ``leader_elected``/``partition_offline`` by
  ``seq``; offline: the replica a recovery would elect, committed up to its LEO; a leader
  that left no ``final_log``: the highest-HW replica) and
  ``committed_records``; from ``side`` only, collected (one row per partition) and broadcast;
* record anomalies — ``record_verdicts``, **one pass** over acks, sends, consumes and committed
  records: an aggregate keyed by (K, value, offset) (first ack there, committed or not,
  consumes there and how many of them are rewritten or retracted), a second keyed by
  (K, value) (the value's first ack and whether its offset is committed, its first send —
  the sends go straight there —, its offsets for ``duplicate``, its visible regressions),
  then one window per (K, producer) in send order for ``nonmonotonic_send``:
  ``lost_acked_write``/``lost_acked_uncommitted``/``expired``, ``duplicate``,
  ``nonmonotonic_send`` and ``hw_regression_visible``;
* order anomalies — ``order_findings``, **one pass** over ``hw_update`` and ``consume``: the
  running max of leader HWs by seq per K (``read_uncommitted``, and a leader going below the
  exposed HW), then one window for two ``lag``s: of the HW per replica
  (``hw_regression_replica``) and of the offset per consumer chain, split at each of the
  consumer's ``assignment`` events that ends it — every one under the eager protocol, those
  without the partition under the cooperative one, and at its process stopping
  (``poll_skip``/``nonmonotonic_poll``). Only the rows that are findings are kept
  (persisted: they also make the ``hw_regressions`` view);
* ``log_divergence`` — per (K, offset) over the final logs' records inside their replica's
  [lso, hw) (persisted: count and view);
* ``lost_committed_offset`` — ``lost_committed_offsets``: each ``offset_fetch`` against the
  latest ``offset_commit_ack`` before it was asked for (its commit found by ``commit_id``)
  and the commits sent after that one, from ``side`` (a few rows per commit interval);
* ``outside_assignment`` — ``outside_assignment``: per K by seq, the replica list in force
  (the creation ISR, then each ``replicas_change``) against each ISR and leader, from
  ``side``; a ``replica_deleted`` splits that replica's HW history (``order_findings``);
* ISR — ``isr_states`` (committed ISR after each ``isr_change``/``leader_elected``),
  ``isr_transitions`` (shrinks/expands by ``array_except``) and ``isr_intervals`` (time per
  state), from ``side``.

The families live in modules of their own (``final_logs``, ``passes``, ``side_families``,
``quorum``), over the statements of ``statements``; this module assembles them: the per-trace
meta, the anomaly table (``Analysis``) and the views ``isrlab analyze --out`` writes. Their
public names are importable from here, as before.

Views that are not anomaly counts (HW regressions per replica, churn per minute, time
under-replicated, top churning replicas, roll-ups by knob) are for reports and campaigns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_analysis.final_logs import (
    SOURCE_SCHEMA,
    committed_records,
    final_records,
    final_replicas,
    final_source,
    log_divergence,
)
from spark_analysis.load import Loaded
from spark_analysis.passes import (
    ORDER_ANOMALIES,
    RECORD_ANOMALIES,
    _record_counts,
    _record_verdicts,
    hw_regressions,
    order_counts,
    order_findings,
    record_counts,
    record_verdicts,
)
from spark_analysis.quorum import quorum_counts
from spark_analysis.side_by_side import JOBS_AT_ONCE, side_by_side
from spark_analysis.side_families import (
    SIDE_FAMILIES,
    isr_churn_per_minute,
    isr_intervals,
    isr_states,
    isr_transitions,
    lost_committed_offsets,
    outside_assignment,
    partition_health,
    possible_loss,
    scenario_topics,
    side_families,
    top_churning_replicas,
)
from spark_analysis.statements import _SCENARIO, K, _count, _long_counts, _query, _zero
from traces.checker import NOT_FROM_LOGS
from traces.schema import ANOMALIES

__all__ = [
    "ORDER_ANOMALIES", "RECORD_ANOMALIES", "ROLLUP_KNOBS", "SOURCE_SCHEMA", "TABLE_SCHEMA", "K",
    "Analysis", "anomaly_counts", "anomaly_table", "anomaly_wide", "campaign_rollup", "rollup_rows",
    "committed_records", "final_records", "final_replicas", "final_source", "hw_regressions",
    "isr_churn_per_minute", "isr_intervals", "isr_states", "isr_transitions",
    "log_divergence", "lost_committed_offsets", "order_counts", "order_findings",
    "outside_assignment", "partition_health", "possible_loss", "record_counts",
    "record_verdicts", "scenario_topics", "side_families", "top_churning_replicas",
    "trace_meta",
]

#: The schema of the anomaly table (``n`` is microseconds for ``under_min_isr``).
TABLE_SCHEMA: Final = "trace string, topic string, partition int, anomaly string, n long"


def trace_meta(data: Loaded) -> DataFrame:
    """One row per trace: scenario name, seed, protocol, knobs, status, events, end time."""
    ctes = [
        ("start", f"SELECT tid, seed, {_SCENARIO} AS sc, protocol AS run_protocol "
                  "FROM {side} WHERE event = 'run_start'"),
        ("run_end", "SELECT tid, status FROM {side} WHERE event = 'run_end'"),
        ("faults", "SELECT tid, array_sort(collect_set(fault)) AS fault_kinds FROM {side} "
                   "WHERE event = 'fault' AND fault IS NOT NULL GROUP BY tid"),
    ]
    return _query(data.side.sparkSession, ctes, """
        SELECT trace, events, end_us, seed, status, sc.name AS scenario,
               coalesce(run_protocol, sc.protocol) AS protocol,
               array_join(array_sort(array_distinct(transform(sc.producers, p -> p.acks))),
                          ',') AS acks,
               array_min(transform(sc.topics, t -> t.`min.insync.replicas`))
                   AS min_insync_replicas,
               exists(sc.topics, t -> coalesce(t.`unclean.leader.election.enable`, false))
                   AS unclean,
               coalesce(array_join(fault_kinds, ','), '') AS fault_kinds,
               sc.expect AS expect, coalesce(sc.imported, false) AS imported
        FROM {traces} LEFT JOIN start USING (tid) LEFT JOIN run_end USING (tid)
             LEFT JOIN faults USING (tid)""", side=data.side, traces=data.traces)


# --------------------------------------------------------------------------- all together


class Analysis:
    """Every analysis of one ``Loaded``, each large pass computed once.

    ``table()`` runs the passes (record verdicts, order findings, divergence, and the small
    ISR/source families), each collected on its own, two at a time (``side_by_side``: they
    share nothing), and keeps the small results (the order findings and divergent offsets
    are persisted; the final source and the table are local DataFrames), so the views built
    afterwards (``views()``, or ``view_builders()`` to build them in threads too) re-read
    none of the events except where a view needs them. ``unpersist()`` frees what it kept
    (not ``data``). Not for concurrent use by the caller: one thread drives an ``Analysis``,
    which starts its own.
    """

    def __init__(self, data: Loaded) -> None:
        self.data = data
        self._source: DataFrame | None = None
        self._source_lock = threading.Lock()  # two families' threads may ask for it at once
        self._findings: DataFrame | None = None
        self._divergence: DataFrame | None = None
        self._table: DataFrame | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._family_rows: list[tuple[str, list[tuple[Any, ...]]]] | None = None
        self._meta: DataFrame | None = None
        self._wide: DataFrame | None = None
        self._wide_rows: list[dict[str, Any]] = []

    @property
    def spark(self) -> Any:
        return self.data.events.sparkSession

    def source(self) -> DataFrame:
        """``final_source``, collected (one row per partition) and rebuilt as local data;
        once, whichever thread asks first (the others wait for it)."""
        with self._source_lock:
            if self._source is None:
                rows = [tuple(r) for r in final_source(self.data.side).collect()]
                self._source = self.spark.createDataFrame(rows, SOURCE_SCHEMA)
            return self._source

    def findings(self) -> DataFrame:
        if self._findings is None:
            self._findings = order_findings(self.data).persist()
        return self._findings

    def divergence(self) -> DataFrame:
        if self._divergence is None:
            self._divergence = log_divergence(self.data.side).persist()
        return self._divergence

    def builders(self) -> dict[str, Callable[[], DataFrame]]:
        """How to build each family's DataFrame of (tid, topic, partition, anomaly, n), by its
        name (``record`` and ``order`` give several anomalies each, the others one; ``side``
        is the six families of ``SIDE_FAMILIES`` in one statement, each row led by its
        family's index there, which ``families`` splits). Building
        is itself work (thousands of Py4J calls), so ``families`` does it in the thread that
        collects. The final source, which two of them read, is collected by the first of the
        two to start (``source``), in its thread: the other families need not wait for its
        small jobs (on 10M events the families' first jobs now start 1.6 s after the load
        instead of 5.8 s)."""
        data, spark = self.data, self.spark
        return {
            "record": lambda: _query(
                spark, [*_record_verdicts(), *_record_counts()],
                _long_counts("record_sums", RECORD_ANOMALIES), events=data.events,
                side=data.side, source=self.source()),
            "order": lambda: order_counts(self.findings()),
            "log_divergence": lambda: _query(
                spark, [], _count("{divergence}", "log_divergence"),
                divergence=self.divergence()),
            # the six small families of ``side``, one statement: ``families`` splits its rows
            "side": lambda: side_families(data, self.source()),
            "quorum": lambda: quorum_counts(data),   # spark_analysis.quorum
        }

    def families(self, on_start: Callable[[str], None] | None = None,
                 workers: int = JOBS_AT_ONCE) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        """Each family's name and rows (tid, topic, partition, anomaly, n), collected once,
        in ``builders``' order, ``side`` given as its six families (``SIDE_FAMILIES``, each
        with its rows in the order the statement gave them); the builders are built and
        collected ``workers`` at a time (``side_by_side``). ``on_start(name)`` just before a
        builder is built (``side`` for the six), in the thread
        that builds it (a caller may label its jobs; ``bench/spark.py --profile`` times them
        one at a time, ``workers=1``)."""
        if self._family_rows is None:
            def collect(name: str, build: Callable[[], DataFrame]) -> list[tuple[Any, ...]]:
                if on_start is not None:
                    on_start(name)
                return [tuple(r) for r in build().collect()]

            done = []
            tasks = [(name, partial(collect, name, build))
                     for name, build in self.builders().items()]
            for name, rows in side_by_side(self.spark, tasks, workers):
                split = ([(n, [r[1:] for r in rows if r[0] == i])
                          for i, n in enumerate(SIDE_FAMILIES)] if name == "side"
                         else [(name, rows)])
                for family in split:
                    done.append(family)
                    yield family
            self._family_rows = done
        else:
            yield from self._family_rows

    def table(self) -> DataFrame:
        """(trace, topic, partition, anomaly, n): the checker's counts per partition.

        ``n`` is a count, except ``under_min_isr`` where it is microseconds (convert the
        per-trace sum with // 1000, as the checker does). Each family is collected on its own
        (``families``: one union of all of them makes a plan whose code generation
        dominates) and the small result is rebuilt as a local DataFrame.
        """
        if self._table is None:
            paths = self.data.paths()
            rows = [(paths[r[0]], *r[1:]) for _, fam in self.families() for r in fam]
            self._rows = rows
            self._table = self.spark.createDataFrame(rows, TABLE_SCHEMA)
        return self._table

    def partition_counts(self) -> dict[str, dict[str, dict[str, int]]]:
        """trace -> partition name -> anomaly -> count, from the table's local rows (the
        verdict's "on orders-0"; no Spark job)."""
        self.table()
        out: dict[str, dict[str, dict[str, int]]] = {}
        for trace, topic, partition, anomaly, n in self._rows:
            part = out.setdefault(trace, {}).setdefault(f"{topic}-{partition}", {})
            part[anomaly] = part.get(anomaly, 0) + int(n or 0)
        return out

    def meta(self) -> DataFrame:
        if self._meta is None:
            df = trace_meta(self.data)
            self._meta = self.spark.createDataFrame(df.collect(), df.schema)
        return self._meta

    def wide(self) -> DataFrame:
        """``anomaly_wide`` of the table and the meta (local data)."""
        if self._wide is None:
            df = anomaly_wide(self.table(), self.meta())
            rows = df.collect()
            self._wide_rows = [r.asDict() for r in rows]
            self._wide = self.spark.createDataFrame(rows, df.schema)
        return self._wide

    def wide_rows(self) -> list[dict[str, Any]]:
        """``wide()``'s rows, kept in the driver when it was built (no Spark job)."""
        self.wide()
        return self._wide_rows

    def local_views(self) -> dict[str, tuple[list[dict[str, Any]], StructType]]:
        """The views whose rows the driver already holds once ``table()`` and ``wide()``
        are built — the anomaly table, the per-trace table and the roll-ups (``rollup_rows``,
        the same definition as ``campaign_rollup``) — each as (rows, Spark schema), so
        they are written without a Spark job (``dataset_out.write_rows``). Their
        ``view_builders`` give the same rows as DataFrames."""
        table, wide = self.table(), self.wide()
        names = table.schema.fieldNames()
        out = {
            "anomalies_per_partition": ([dict(zip(names, r, strict=True)) for r in self._rows],
                                        table.schema),
            "anomalies_per_trace": (self._wide_rows, wide.schema),
        }
        # one schema for every knob: (knob, value) as text, then the counts
        schema = campaign_rollup(wide, ROLLUP_KNOBS[0]).schema
        for knob in ROLLUP_KNOBS:
            out[f"rollup_{knob}"] = (rollup_rows(self._wide_rows, knob), schema)
        return out

    def view_builders(self) -> dict[str, Callable[[], DataFrame]]:
        """How to build every view ``isrlab analyze --out`` writes, by name. The anomaly
        table and the per-trace table, which several views read, are computed first (the
        families, side by side), so the builders share nothing that is still to compute and
        may run in threads (``side_by_side``)."""
        side, named = self.data.side, self.data.named
        table, wide, findings, divergence = (self.table(), self.wide(), self.findings(),
                                             self.divergence())
        out: dict[str, Callable[[], DataFrame]] = {
            "anomalies_per_partition": lambda: table,
            "anomalies_per_trace": lambda: wide,
            "hw_regressions": lambda: named(hw_regressions(findings)),
            "isr_churn_per_minute": lambda: named(isr_churn_per_minute(side)),
            "partition_health": lambda: named(partition_health(self.data)),
            "top_churning_replicas": lambda: top_churning_replicas(side),
            "log_divergence": lambda: named(divergence),
        }
        for knob in ROLLUP_KNOBS:
            out[f"rollup_{knob}"] = partial(campaign_rollup, wide, knob)
        return out

    def views(self) -> dict[str, DataFrame]:
        """Every view ``isrlab analyze --out`` writes, by name (``view_builders``, built)."""
        return {name: build() for name, build in self.view_builders().items()}

    def unpersist(self) -> None:
        for df in (self._findings, self._divergence):
            if df is not None:
                df.unpersist()
        self._findings = self._divergence = None


def anomaly_table(data: Loaded) -> DataFrame:
    """``Analysis(data).table()`` (see there)."""
    analysis = Analysis(data)
    try:
        return analysis.table()
    finally:
        analysis.unpersist()


def anomaly_counts(data: Loaded) -> dict[str, dict[str, int]]:
    """Per analysed trace: every anomaly name of ``ANOMALIES`` → count (zeros included)."""
    table = anomaly_table(data)
    rows = table.groupBy("trace", "anomaly").agg(F.sum("n").alias("n")).collect()
    names = [r["trace"] for r in data.traces.select("trace").collect()]
    out: dict[str, dict[str, int]] = {t: dict.fromkeys(ANOMALIES, 0) for t in sorted(names)}
    for r in rows:
        n = int(r["n"])
        out.setdefault(r["trace"], dict.fromkeys(ANOMALIES, 0))[r["anomaly"]] = (
            n // 1000 if r["anomaly"] == "under_min_isr" else n)
    return out


def anomaly_wide(table: DataFrame, meta: DataFrame) -> DataFrame:
    """One row per trace with a column per anomaly (under_min_isr in ms) and its knobs. A
    trace imported from Kafka's logs has no records: its per-record anomalies
    (``NOT_FROM_LOGS``) are null — not available — never zero, as ``isrlab check`` says."""
    sums = ", ".join(
        (f"CAST(floor(coalesce(sum(CASE WHEN anomaly = '{a}' THEN n END), 0) / 1000) "
         f"AS bigint) AS {a}") if a == "under_min_isr" else
        f"coalesce(sum(CASE WHEN anomaly = '{a}' THEN n END), 0) AS {a}" for a in ANOMALIES)
    cols = ", ".join(
        f"CASE WHEN imported THEN CAST(NULL AS bigint) ELSE {_zero(f'sums.{a}')} END AS {a}"
        if a in NOT_FROM_LOGS else f"{_zero(f'sums.{a}')} AS {a}" for a in ANOMALIES)
    return _query(table.sparkSession, [("sums", f"SELECT trace, {sums} FROM {{table}} "
                                                "GROUP BY trace")],
                  f"SELECT meta.*, {cols} FROM {{meta}} meta LEFT JOIN sums USING (trace)",
                  table=table, meta=meta)


ROLLUP_KNOBS: Final = ("protocol", "acks", "min_insync_replicas", "unclean", "fault_kinds")


def campaign_rollup(wide: DataFrame, knob: str) -> DataFrame:
    """Per value of one knob: traces, total of every anomaly, traces with any lost write."""
    if not knob.isidentifier():
        raise ValueError(f"not a column name: {knob!r}")
    sums = "".join(f", sum({a}) AS {a}" for a in ANOMALIES)
    return _query(wide.sparkSession, [], f"""
        SELECT '{knob}' AS knob, * FROM (
            SELECT CAST(`{knob}` AS string) AS value, count(1) AS traces{sums},
                   sum(CAST(lost_acked_write > 0 AS int)) AS traces_losing_acked
            FROM {{wide}} GROUP BY CAST(`{knob}` AS string))
        ORDER BY value""", wide=wide)


def rollup_rows(wide_rows: Sequence[dict[str, Any]], knob: str) -> list[dict[str, Any]]:
    """``campaign_rollup``'s rows, computed here from ``wide``'s rows already collected
    (``isrlab analyze``'s text output, which had collected the five roll-ups again: five
    more Spark executions for a few rows). The same definition as the SQL, which
    ``tests/spark/test_rollups.py`` holds equal: rows grouped by the knob's value as a
    string (Spark's cast: ``true``/``false``, decimal integers; null its own group), in
    ascending order of it, nulls first; ``traces`` counts them; each anomaly and
    ``traces_losing_acked`` (rows with ``lost_acked_write`` > 0) is a sum that skips nulls,
    null when every value is."""
    def text(v: Any) -> str | None:
        return None if v is None else ("true" if v else "false") if isinstance(v, bool) \
            else str(v)

    def total(values: list[Any]) -> int | None:
        known = [int(v) for v in values if v is not None]
        return sum(known) if known else None

    groups: dict[str | None, list[dict[str, Any]]] = {}
    for r in wide_rows:
        groups.setdefault(text(r[knob]), []).append(r)
    out = []
    for value in sorted(groups, key=lambda v: (v is not None, v or "")):
        rows = groups[value]
        out.append({"knob": knob, "value": value, "traces": len(rows),
                    **{a: total([r[a] for r in rows]) for a in ANOMALIES},
                    "traces_losing_acked": total([None if r["lost_acked_write"] is None
                                                  else int(r["lost_acked_write"] > 0)
                                                  for r in rows])})
    return out
