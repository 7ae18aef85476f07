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

Performance shape: ``events`` and ``side`` are partitioned by K alike (a union of their
rows keeps it), every aggregate and window of the two passes is keyed by a superset of K, and
the small tables (final source, assignments) are broadcast, so neither pass exchanges the
large rows (``explain()`` shows no Exchange above the cached scans); the two record
aggregates have fixed-width buffers only, so they are hash aggregates in generated code (no
sort); the rows of each pass are a few narrow columns of ``events``, read in one scan of the
cache per branch of the pass (each row keeps its own kind's columns: one filtered scan per
kind, unioned, read the cache once per kind, which cost the record pass 4.9 CPU s on 10M
events against 2.2 s for one scan); the record pass's sends skip its offset-level aggregate
(half of its groups). No Python UDFs anywhere. ``Analysis`` computes each pass once and keeps
its small result for every view that needs it.

Each family and view is one SQL statement (``_query``: common table expressions, one per
step, then a ``SELECT``) over the DataFrames it reads, passed as PySpark's formatter passes
them (a temporary view for the statement, dropped once it is analysed; under Spark Connect
the plan itself). Building one is a handful of Py4J calls: through the DataFrame API it was
one or more per column, function and operator (about 27,000 for one analysis of ``make
demo``'s trace, 0.6–1.4 ms each) and every ``select``/``where`` analysed eagerly. The
statements keep the DataFrame API's plans (``tests/spark/test_analysis_families.py`` holds
the two passes to their scans and no shuffle) and its columns, types and nullability, so
the Parquet outputs are unchanged. Lambda variables keep the names written in the text, so
an analysis built again generates the same Java source (PySpark's own lambdas were named
afresh, ``x_3`` then ``x_11``, which made every analysis compile those classes again).

Views that are not anomaly counts (HW regressions per replica, churn per minute, time
under-replicated, top churning replicas, roll-ups by knob) are for reports and campaigns.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark_analysis.load import SCENARIO_SCHEMA, Loaded
from spark_analysis.quorum import quorum_counts
from spark_analysis.side_by_side import JOBS_AT_ONCE, side_by_side
from traces.checker import CONSUMER_NODE_PREFIX, ISR_CHURN_WINDOW_US, MISSING, NOT_FROM_LOGS
from traces.schema import ANOMALIES

#: The partition key: ``tid`` is the trace's id in the load (``Loaded.named`` turns it back
#: into the path in every view).
K: Final = ["tid", "topic", "partition"]
#: The schema of the anomaly table (``n`` is microseconds for ``under_min_isr``).
TABLE_SCHEMA: Final = "trace string, topic string, partition int, anomaly string, n long"
SOURCE_SCHEMA: Final = ("tid int, topic string, partition int, elected int, "
                        "offline boolean, not_converged boolean, source int, src_hw long, "
                        "src_lso long")
#: Families of ``record_verdicts`` and ``order_findings``, in the order they are counted.
RECORD_ANOMALIES: Final = ("lost_acked_write", "lost_acked_uncommitted", "expired",
                           "duplicate", "nonmonotonic_send", "hw_regression_visible")
ORDER_ANOMALIES: Final = ("read_uncommitted", "poll_skip", "nonmonotonic_poll",
                          "hw_regression_replica")


# --------------------------------------------------------------------------- SQL


#: One common table expression: (name, body). A statement is a list of them and a final
#: ``SELECT`` (``_query``); the helpers below return the expressions a view needs, so a view
#: is one ``spark.sql`` call whichever others it builds on.
Cte = tuple[str, str]

#: Tokens the SQL texts use for the constants they share (``_expand``).
_TOKENS: Final = {
    "$K": "tid, topic, `partition`",
    "$VALID": "topic IS NOT NULL AND `partition` IS NOT NULL",
    # null is the MISSING sentinel (as the checker keys a record value); SQL's \\u escape
    "$MISSING": "'" + "".join(f"\\u{ord(c):04x}" for c in MISSING) + "'",
    # acks as a code: 0 for "0", 2 for "all" (null and "-1" are "all": Kafka's default since
    # 3.0), 1 otherwise
    "$ACKS_CODE": ("CASE WHEN acks = '0' THEN 0 WHEN acks IS NULL OR acks IN ('-1', 'all') "
                   "THEN 2 ELSE 1 END"),
    "$CONSUMER_PREFIX": "'" + CONSUMER_NODE_PREFIX + "'",
    "$CONSUMER_NAME_AT": str(len(CONSUMER_NODE_PREFIX) + 1),
    "$CHURN_WINDOW_US": str(ISR_CHURN_WINDOW_US),
}
#: ``$ZERO(column, type)``: ``_zero``.
_ZERO_RE: Final = re.compile(r"\$ZERO\(([^(),]+), ([a-z]+)\)")
_TOKEN_RE: Final = re.compile("|".join(re.escape(t) for t in sorted(_TOKENS, key=len,
                                                                    reverse=True)))


def _expand(text: str) -> str:
    text = _ZERO_RE.sub(lambda m: _zero(m.group(1), m.group(2)), text)
    return _TOKEN_RE.sub(lambda m: _TOKENS[m.group(0)], text)


def _query(spark: SparkSession, ctes: Sequence[Cte], select: str,
           **frames: DataFrame) -> DataFrame:
    """One ``spark.sql`` statement: ``WITH`` the expressions (each once, in order of first
    appearance), then ``select``. ``{name}`` in the text is the DataFrame ``frames[name]``
    (PySpark's formatter: a temporary view for the statement, dropped after it is analysed;
    under Spark Connect the plan itself). A handful of Py4J calls, against one or more per
    column, function and operator built through the DataFrame API (about 1 ms each here, and
    each ``select``/``where`` analysed eagerly: ``docs/performance.md``)."""
    seen: dict[str, str] = {}
    for name, body in ctes:
        if seen.setdefault(name, body) != body:
            raise ValueError(f"two common table expressions named {name}")
    text = ",\n".join(f"{name} AS ({body})" for name, body in seen.items())
    return spark.sql(_expand((f"WITH {text}\n" if text else "") + select), None, **frames)


def _long_counts(source: str, names: Sequence[str]) -> str:
    """A ``SELECT`` of (K, anomaly, n) from ``source`` (K, one column per name), for the names
    with n > 0."""
    keys = ", ".join(f"'{n}'" for n in names)
    counts = ", ".join(f"CAST({n} AS bigint)" for n in names)
    return (f"SELECT * FROM (SELECT $K, explode(map_from_arrays(array({keys}), "
            f"array({counts}))) AS (anomaly, n) FROM {source}) WHERE n > 0")


def _zero(column: str, sql_type: str = "bigint") -> str:
    """``column`` with 0 where null, as ``DataFrame.na.fill(0)`` writes it: nullable in the
    DataFrame's schema (a ``try_cast`` from text may be null) and required in a Parquet file written
    from it (the optimizer folds the cast into a literal), so the outputs keep their
    schemas."""
    return f"coalesce({column}, try_cast('0' AS {sql_type}))"


def _count(source: str, name: str) -> str:
    """A ``SELECT`` of (K, anomaly, n): ``source``'s rows per partition."""
    return f"SELECT $K, '{name}' AS anomaly, count(1) AS n FROM {source} GROUP BY $K"


# --------------------------------------------------------------------------- per trace


def _ddl(t: T.DataType) -> str:
    """A type as SQL writes it, field names quoted (``min.insync.replicas``)."""
    if isinstance(t, T.StructType):
        return "struct<" + ", ".join(f"`{f.name}`: {_ddl(f.dataType)}" for f in t.fields) + ">"
    if isinstance(t, T.ArrayType):
        return f"array<{_ddl(t.elementType)}>"
    if isinstance(t, T.MapType):
        return f"map<{_ddl(t.keyType)}, {_ddl(t.valueType)}>"
    return t.simpleString()


_SCENARIO: Final = f"from_json(scenario, '{_ddl(SCENARIO_SCHEMA)}')"


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


def _scenario_topics() -> list[Cte]:
    """``topics``: per trace and topic, replication factor and effective min ISR
    (min(minISR, RF)); the first a trace names (as ``dropDuplicates`` keeps)."""
    return [("topics", f"""
        SELECT tid, topic, first(rf) AS rf, coalesce(first(eff_min_isr), 1) AS eff_min_isr FROM (
            SELECT tid, t.name AS topic, t.`replication.factor` AS rf,
                   CASE WHEN t.`replication.factor` IS NULL
                        THEN coalesce(t.`min.insync.replicas`, 1)
                        ELSE least(coalesce(t.`min.insync.replicas`, 1),
                                   t.`replication.factor`) END AS eff_min_isr
            FROM (SELECT tid, explode({_SCENARIO}.topics) AS t FROM {{side}}
                  WHERE event = 'run_start')
            WHERE t.name IS NOT NULL)
        GROUP BY tid, topic""")]


def scenario_topics(side: DataFrame) -> DataFrame:
    """Per trace and topic: replication factor and effective min ISR (min(minISR, RF))."""
    return _query(side.sparkSession, _scenario_topics(), "SELECT * FROM topics", side=side)


# --------------------------------------------------------------------------- final logs


_FINAL_LOGS: Final = ("SELECT * FROM {side} WHERE event = 'final_log' AND $VALID "
                      "AND replica IS NOT NULL")


def _final_replicas(name: str = "reps", *, epochs: bool = True) -> list[Cte]:
    last_epoch = (", max(coalesce(array_max(transform(filter(records, r -> size(r) >= 2), "
                  "r -> try_cast(try_element_at(r, 3) AS int))), -1)) AS last_epoch"
                  if epochs else "")
    return [(name, f"""
        SELECT $K, replica, max(coalesce(hw, 0)) AS hw, max(coalesce(leo, 0)) AS leo,
               max(coalesce(log_start_offset, 0)) AS lso{last_epoch}
        FROM ({_FINAL_LOGS}) GROUP BY $K, replica""")]


def final_replicas(side: DataFrame, *, epochs: bool = True) -> DataFrame:
    """Per replica with a ``final_log``: HW, LEO, logStartOffset and (with ``epochs``)
    ``last_epoch`` (the largest epoch of its records, -1 when none), max over its events."""
    return _query(side.sparkSession, _final_replicas(epochs=epochs), "SELECT * FROM reps",
                  side=side)


def _final_records(name: str, replicas: str | None = None,
                   extra: Sequence[str] = ()) -> list[Cte]:
    """``name``: every ``[offset, value, epoch]`` of every ``final_log`` (K, replica, offset,
    value, then ``extra``, columns of ``replicas``); with ``replicas`` (the name of a small
    table keyed by K and replica, broadcast), only the logs of those replicas, chosen before
    their records are exploded."""
    more = "".join(f", {c}" for c in extra)
    logs = f"SELECT $K, replica, records FROM ({_FINAL_LOGS})"
    if replicas:
        logs = (f"SELECT /*+ BROADCAST({replicas}) */ $K, replica, records{more} "
                f"FROM ({logs}) JOIN {replicas} USING ($K, replica)")
    return [(name, f"""
        SELECT * FROM (
            SELECT $K, replica, try_cast(try_element_at(r, 1) AS bigint) AS `offset`,
                   coalesce(try_element_at(r, 2), $MISSING) AS value{more}
            FROM (SELECT $K, replica{more}, explode(records) AS r FROM ({logs}))
            WHERE size(r) >= 2)
        WHERE `offset` IS NOT NULL""")]


def final_records(side: DataFrame, replicas: DataFrame | None = None) -> DataFrame:
    """Every ``[offset, value, epoch]`` of every ``final_log``: (K, replica, offset, value,
    then the columns of ``replicas``); with ``replicas`` (K, replica, ...: small, broadcast),
    only the logs of those replicas, chosen before their records are exploded."""
    if replicas is None:
        return _query(side.sparkSession, _final_records("recs"), "SELECT * FROM recs",
                      side=side)
    extra = [c for c in replicas.columns if c not in (*K, "replica")]
    return _query(side.sparkSession, [("chosen", "SELECT * FROM {replicas}"),
                                      *_final_records("recs", "chosen", extra)],
                  "SELECT * FROM recs", side=side, replicas=replicas)


def final_source(side: DataFrame) -> DataFrame:
    """Per partition: the replica defining the final committed log, its HW/LSO, liveness.

    Columns: ``SOURCE_SCHEMA`` (source columns are null when no replica left a ``final_log``).
    """
    ctes = [
        ("lead", """
            SELECT $K, CASE WHEN last.event = 'leader_elected' AND last.leader >= 0
                            THEN last.leader END AS elected, true AS has_leadership
            FROM (SELECT $K, max_by(struct(event, leader), seq) AS last FROM {side}
                  WHERE event IN ('leader_elected', 'partition_offline') AND $VALID
                  GROUP BY $K)"""),
        ("conv", """
            SELECT $K, NOT bool_and(coalesce(converged, false)) AS not_converged FROM {side}
            WHERE event = 'convergence' AND $VALID GROUP BY $K"""),
        *_final_replicas(),
        ("best", """
            SELECT $K, replica AS best FROM (
                SELECT *, row_number() OVER (PARTITION BY $K ORDER BY hw DESC, replica ASC)
                    AS rk FROM reps) WHERE rk = 1"""),
        # offline: the replica a recovery would elect (latest last epoch, then longest log)
        ("recovered", """
            SELECT $K, replica AS recovered FROM (
                SELECT *, row_number() OVER (PARTITION BY $K
                    ORDER BY last_epoch DESC, leo DESC, replica ASC) AS rk FROM reps)
            WHERE rk = 1"""),
        ("universe", "SELECT $K FROM lead UNION SELECT $K FROM reps UNION SELECT $K FROM conv"),
        ("joined", """
            SELECT * FROM universe LEFT JOIN lead USING ($K) LEFT JOIN conv USING ($K)
                LEFT JOIN best USING ($K) LEFT JOIN recovered USING ($K)
                LEFT JOIN (SELECT $K, replica AS elected, true AS el_log FROM reps) el
                    USING ($K, elected)"""),
        ("chosen", """
            SELECT $K, elected, offline, coalesce(not_converged, false) AS not_converged,
                   CASE WHEN el_log IS NOT NULL THEN elected WHEN offline THEN recovered
                        ELSE best END AS source
            FROM (SELECT *, elected IS NULL AND (has_leadership IS NOT NULL
                                                 OR best IS NOT NULL) AS offline
                  FROM joined)"""),
    ]
    # offline: its records are on disk, committed up to its LEO (its HW is a stale checkpoint)
    return _query(side.sparkSession, ctes, """
        SELECT $K, elected, offline, not_converged, source,
               CASE WHEN offline THEN greatest(hw, leo) ELSE hw END AS src_hw, src_lso
        FROM chosen LEFT JOIN (SELECT $K, replica AS source, hw, leo, lso AS src_lso
                               FROM reps) src USING ($K, source)""", side=side)


def _committed_records() -> list[Cte]:
    """``committed``: the final committed log (K, offset, value): the source replica's
    records, lso <= offset < hw, from ``{source}`` (``final_source``: small, broadcast)."""
    return [
        ("src_logs", "SELECT $K, source AS replica, src_hw, src_lso FROM {source} "
                     "WHERE source IS NOT NULL"),
        *_final_records("src_records", "src_logs", ["src_hw", "src_lso"]),
        ("committed", "SELECT $K, `offset`, value FROM src_records "
                      "WHERE `offset` >= src_lso AND `offset` < src_hw"),
    ]


def committed_records(side: DataFrame, source: DataFrame) -> DataFrame:
    """The final committed log: (K, offset, value), source replica, lso <= offset < hw.
    (A value listed twice at one offset appears twice.)"""
    return _query(side.sparkSession, _committed_records(), "SELECT * FROM committed",
                  side=side, source=source)


# --------------------------------------------------------------------------- records


def _record_verdicts() -> list[Cte]:
    """``verdicts``: ``record_verdicts`` over ``{events}``, ``{side}`` and ``{source}``."""
    return [
        ("src", "SELECT $K, src_hw, src_lso, true AS has_src FROM {source} "
                "WHERE source IS NOT NULL"),
        # acks and consumes in one scan of the cached events (one filtered scan per kind,
        # unioned, read the cache once per kind), each row keeping its own kind's columns,
        # the others null
        ("ev", """
            SELECT *, coalesce(hw > src_hw, false) AS retracted, is_cons AND has_src AS c_src
            FROM (SELECT /*+ BROADCAST(src) */ *,
                         event = 'produce_ack' AND `offset` IS NOT NULL AND `offset` >= 0
                             AS is_ack,
                         event = 'consume' AND `offset` IS NOT NULL AS is_cons,
                         $ACKS_CODE AS acks_code
                  FROM {events} LEFT JOIN src USING ($K)
                  WHERE $VALID AND ((event = 'produce_ack' AND `offset` IS NOT NULL
                                     AND `offset` >= 0)
                                    OR (event = 'consume' AND `offset` IS NOT NULL)))"""),
        ("records", """
            SELECT $K, coalesce(value, $MISSING) AS value, `offset`,
                   CASE WHEN is_ack AND acks_code != 0 THEN seq END AS a_seq,
                   CASE WHEN is_ack THEN acks_code END AS a_acks,
                   CASE WHEN is_ack THEN producer END AS a_prod,
                   value IS NOT NULL AS dup,
                   CASE WHEN is_cons THEN `offset` END AS coff,
                   CASE WHEN c_src THEN CAST(retracted AS int) END AS r1,
                   CASE WHEN c_src THEN CAST(`offset` >= src_lso OR retracted AS int) END AS r2,
                   CAST(NULL AS boolean) AS committed
            FROM ev"""),
        *_committed_records(),
        # ``side`` is partitioned as ``events``, so the union keeps it (no exchange below)
        ("rows", """
            SELECT * FROM records UNION ALL
            SELECT $K, value, `offset`, NULL, NULL, NULL, value != $MISSING, NULL, NULL, NULL,
                   true FROM committed"""),
        # (K, value, offset): what happened at this offset to this value
        ("at_offset", """
            SELECT $K, value, `offset`, a_seq, a_acks, a_prod, coff, committed,
                   CASE WHEN dup THEN `offset` END AS doff,
                   coalesce(CASE WHEN committed THEN r1 ELSE r2 END, 0) AS visible,
                   CAST(NULL AS bigint) AS send_seq, CAST(NULL AS bigint) AS s_prod,
                   CAST(NULL AS int) AS s_acks
            FROM (SELECT value, $K, `offset`, min(a_seq) AS a_seq,
                         min_by(a_acks, a_seq) AS a_acks, min_by(a_prod, a_seq) AS a_prod,
                         min(coff) AS coff, coalesce(max(committed), false) AS committed,
                         max(dup) AS dup, sum(r1) AS r1, sum(r2) AS r2
                  FROM rows GROUP BY value, $K, `offset`)"""),
        # the sends go straight to the per-value aggregate: a send has no offset, so at the
        # offset level it met nothing but the value's other sends (their own group, half of
        # that aggregate's groups); every aggregate below is a min, min_by or sum, the same
        # over the sends as over their groups' results
        ("at", """
            SELECT * FROM at_offset UNION ALL
            SELECT $K, value, NULL, NULL, NULL, NULL, NULL, NULL, NULL, CAST(0 AS bigint),
                   seq, producer, $ACKS_CODE
            FROM {events}
            WHERE $VALID AND event = 'produce_send' AND value IS NOT NULL"""),
        # (K, value): the value's first ack (the one of lowest seq over its offsets),
        # offsets, visible regressions
        ("per_value", """
            SELECT /*+ BROADCAST(src) */ * FROM (
                SELECT value, $K, min(a_seq) AS a_seq, min_by(`offset`, a_seq) AS a_off,
                       min_by(a_acks, a_seq) AS a_acks, min_by(a_prod, a_seq) AS a_prod,
                       min_by(committed, a_seq) AS a_comm, min(send_seq) AS send_seq,
                       min_by(s_prod, send_seq) AS s_prod, min_by(s_acks, send_seq) AS s_acks,
                       min(coff) AS cmin, min(doff) AS dmin, max(doff) AS dmax,
                       sum(visible) AS visible
                FROM at GROUP BY value, $K) LEFT JOIN src USING ($K)"""),
        # where a send landed: its ack, or — its ack lost — the lowest offset a read placed
        # it at
        ("placed", """
            SELECT *,
                   CASE WHEN a_seq IS NOT NULL THEN a_off
                        WHEN a_seq IS NULL AND s_acks != 0 AND cmin IS NOT NULL THEN cmin
                   END AS pos,
                   CASE WHEN a_seq IS NOT NULL THEN a_prod ELSE s_prod END AS pos_producer
            FROM per_value"""),
        ("verdicts", """
            SELECT $K, value, visible,
                   CASE WHEN a_seq IS NULL OR has_src IS NULL THEN CAST(NULL AS string)
                        WHEN a_off < src_lso THEN 'expired'
                        WHEN NOT a_comm AND a_acks = 2 THEN 'lost_acked_write'
                        WHEN NOT a_comm THEN 'lost_acked_uncommitted' END AS verdict,
                   coalesce(dmin < dmax, false) AS duplicate,
                   coalesce(pos < lag(pos) OVER (
                       PARTITION BY $K, pos IS NULL, pos_producer
                       ORDER BY coalesce(send_seq, a_seq), a_seq), false) AS nonmonotonic_send
            FROM placed"""),
    ]


def record_verdicts(data: Loaded, source: DataFrame) -> DataFrame:
    """Per (K, value): ``verdict`` (``lost_acked_write``/``lost_acked_uncommitted``/
    ``expired`` or null), ``duplicate`` and ``nonmonotonic_send`` (booleans) and ``visible``
    (the value's consumes that are visible HW regressions), from the value's first ack (its
    seq, offset, acks, producer and whether its offset is committed), its first send (seq,
    producer, acks), the lowest offset a consume read it at and its lowest and highest offset
    (acks, consumes, the committed log). Partitions without a final log get no
    write/visible verdicts (as in the checker). One pass (a scan of the acks and consumes, one
    of the sends): no exchange of the events on K-partitioned input.

    Every aggregate buffer is fixed-width — the first ack and send are ``min_by`` of
    numbers by seq (acks as a code: 0 for "0", 2 for "all", 1 otherwise; producers are
    integers) rather than of a struct — so Spark hash-aggregates both levels in generated
    code instead of sorting the rows (a struct buffer forces a sort-based aggregate: half of
    this family's time).
    """
    return _query(data.events.sparkSession, _record_verdicts(), "SELECT * FROM verdicts",
                  events=data.events, side=data.side, source=source)


def _record_counts() -> list[Cte]:
    return [("record_sums", """
        SELECT $K,
               sum(CAST(coalesce(verdict = 'lost_acked_write', false) AS bigint))
                   AS lost_acked_write,
               sum(CAST(coalesce(verdict = 'lost_acked_uncommitted', false) AS bigint))
                   AS lost_acked_uncommitted,
               sum(CAST(coalesce(verdict = 'expired', false) AS bigint)) AS expired,
               sum(CAST(duplicate AS bigint)) AS duplicate,
               sum(CAST(nonmonotonic_send AS bigint)) AS nonmonotonic_send,
               sum(visible) AS hw_regression_visible
        FROM verdicts GROUP BY $K""")]


def record_counts(verdicts: DataFrame) -> DataFrame:
    """(K, anomaly, n) of ``RECORD_ANOMALIES`` from ``record_verdicts``."""
    return _query(verdicts.sparkSession, [("verdicts", "SELECT * FROM {verdicts}"),
                                          *_record_counts()],
                  _long_counts("record_sums", RECORD_ANOMALIES), verdicts=verdicts)


# --------------------------------------------------------------------------- order


def _order_findings() -> list[Cte]:
    """``findings``: ``order_findings`` over ``{events}`` and ``{side}``."""
    return [
        # one scan of the cached events for both kinds (as in ``record_verdicts``); each row
        # keeps only its kind's columns, the others null, as two selects unioned would
        ("order_rows", """
            SELECT $K, seq, ts_us, is_hw,
                   CASE WHEN is_hw THEN replica END AS replica,
                   CASE WHEN is_hw THEN reason END AS reason,
                   CASE WHEN is_hw THEN role END AS role,
                   CASE WHEN is_hw THEN old_n END AS old,
                   CASE WHEN is_hw THEN new_n END AS new,
                   CASE WHEN is_hw AND role = 'leader' THEN new_n END AS lhw,
                   CASE WHEN NOT is_hw THEN `group` END AS `group`,
                   CASE WHEN NOT is_hw THEN consumer END AS consumer,
                   CASE WHEN NOT is_hw THEN `offset` END AS `offset`,
                   CASE WHEN NOT is_hw THEN hw END AS hw,
                   CASE WHEN NOT is_hw THEN coalesce(value, $MISSING) END AS value
            FROM (SELECT *, event = 'hw_update' AND replica IS NOT NULL AND new_n IS NOT NULL
                                AS is_hw,
                            event = 'consume' AND `offset` IS NOT NULL AS is_cons
                  FROM {events} WHERE $VALID)
            WHERE is_hw OR is_cons"""),
        # a replica deleted from its broker (a reassignment removed it) starts a new HW
        # history if it is created there again: its hw rows are split by how many deletions
        # precede them (``gen``, as consumer chains are below; few rows: broadcast)
        ("dels", """
            SELECT tid AS _dtid, topic AS _dtopic, `partition` AS _dpartition,
                   replica AS _dreplica, collect_list(seq) AS _dels
            FROM {side} WHERE event = 'replica_deleted' AND $VALID AND replica IS NOT NULL
            GROUP BY $K, replica"""),
        # the ends of chains: a consumer's assignments, and its process stopping (a
        # consumer's node is "consumer-" + its name: traces.checker.CONSUMER_NODE_PREFIX)
        ("asg", """
            SELECT tid AS _at, consumer AS _ac, collect_list(_a) AS _asgs FROM (
                SELECT tid, consumer,
                       named_struct('s', seq, 'e', coalesce(protocol, 'eager') = 'eager',
                                    'ps', partitions) AS _a
                FROM {side} WHERE event = 'assignment'
                UNION ALL
                SELECT tid, substring(node, $CONSUMER_NAME_AT) AS consumer,
                       named_struct('s', seq, 'e', true, 'ps', CAST(NULL AS array<int>)) AS _a
                FROM {side}
                WHERE event = 'node_crash' AND startswith(node, $CONSUMER_PREFIX))
            GROUP BY tid, consumer"""),
        # the assignments (and crashes) before the row that end its chain
        ("chained", """
            SELECT $K, seq, ts_us, replica, reason, role, old, new, lhw, is_hw, `group`,
                   consumer, `offset`, hw, value,
                   CASE WHEN is_hw THEN (CASE WHEN _dels IS NULL THEN 0
                                              ELSE size(filter(_dels, d -> d < seq)) END)
                        WHEN _asgs IS NULL THEN 0
                        ELSE size(filter(_asgs, a -> a.s < seq AND (a.e OR NOT coalesce(
                            array_contains(a.ps, `partition`), false)))) END AS gen
            FROM (SELECT /*+ BROADCAST(dels, asg) */ * FROM order_rows
                  LEFT JOIN dels ON tid = _dtid AND topic = _dtopic
                                    AND `partition` = _dpartition AND replica = _dreplica
                  LEFT JOIN asg ON NOT is_hw AND tid = _at AND consumer <=> _ac)"""),
        # one window for both lags: an hw_update row has no group/consumer/gen and a consume
        # row no replica, so (K, replica, group, consumer, gen) is (K, replica) for the first
        # and the consumer chain for the second (one sort instead of two)
        ("lagged", """
            SELECT *,
                   max(lhw) OVER (PARTITION BY $K ORDER BY seq
                                  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                       AS max_leader_hw_before,
                   lag(new) OVER w_prev AS prev_new, lag(`offset`) OVER w_prev AS prev_offset
            FROM chained
            WINDOW w_prev AS (PARTITION BY $K, replica, `group`, consumer, gen ORDER BY seq)"""),
        ("flagged", """
            SELECT *,
                   NOT is_hw AND (`offset` >= greatest(coalesce(max_leader_hw_before, 0), 0)
                                  OR (hw IS NOT NULL AND `offset` >= hw)) AS read_uncommitted,
                   NOT is_hw AND coalesce(`offset` > prev_offset + 1, false) AS poll_skip,
                   NOT is_hw AND coalesce(`offset` <= prev_offset, false) AS nonmonotonic_poll,
                   is_hw AND coalesce((old IS NOT NULL AND new < old)
                                      OR (prev_new IS NOT NULL AND new < prev_new), false)
                       AS regression
            FROM lagged"""),
        ("findings", """
            SELECT $K, seq, ts_us, is_hw, replica, reason, role, old, new, prev_new,
                   max_leader_hw_before,
                   coalesce(role = 'leader' AND new < max_leader_hw_before, false)
                       AS below_exposed,
                   `group`, consumer, gen, `offset`, hw, value, prev_offset, read_uncommitted,
                   poll_skip, nonmonotonic_poll, regression
            FROM flagged
            WHERE read_uncommitted OR poll_skip OR nonmonotonic_poll OR regression"""),
    ]


def order_findings(data: Loaded) -> DataFrame:
    """The ``hw_update`` and ``consume`` rows that are findings, with flags
    ``read_uncommitted``, ``poll_skip``, ``nonmonotonic_poll`` (consumes) and ``regression``
    (an ``hw_update`` lowering its replica's HW below ``old`` or its previous ``new``) plus
    ``below_exposed`` (a leader going below the max leader HW so far).

    One pass: a window per K by seq (running max of leader HWs before the row), one per
    (K, replica) (previous HW) and one per consumer chain (K, group, consumer, gen), ``gen``
    being the consumer's assignments before the consume that end the partition's chain
    (eager: all; cooperative: those without the partition; few: broadcast per consumer).
    """
    return _query(data.events.sparkSession, _order_findings(), "SELECT * FROM findings",
                  events=data.events, side=data.side)


def order_counts(findings: DataFrame) -> DataFrame:
    """(K, anomaly, n) of ``ORDER_ANOMALIES`` from ``order_findings``."""
    return _query(findings.sparkSession, [("order_sums", """
        SELECT $K, sum(CAST(read_uncommitted AS bigint)) AS read_uncommitted,
               sum(CAST(poll_skip AS bigint)) AS poll_skip,
               sum(CAST(nonmonotonic_poll AS bigint)) AS nonmonotonic_poll,
               sum(CAST(regression AS bigint)) AS hw_regression_replica
        FROM {findings} GROUP BY $K""")], _long_counts("order_sums", ORDER_ANOMALIES),
                  findings=findings)


def hw_regressions(findings: DataFrame) -> DataFrame:
    """Every ``hw_update`` that lowers a replica's HW (below ``old`` or its previous ``new``),
    with reason, role, the max leader HW before it and ``below_exposed``."""
    return _query(findings.sparkSession, [], """
        SELECT $K, replica, seq, ts_us, reason, role, old, new, prev_new, max_leader_hw_before,
               below_exposed
        FROM {findings} WHERE regression""", findings=findings)


# --------------------------------------------------------------------------- divergence


def _log_divergence() -> list[Cte]:
    """``divergence``: ``log_divergence`` over ``{side}``."""
    return [
        *_final_replicas("div_all", epochs=False),
        ("div_reps", "SELECT * FROM div_all WHERE hw > lso"),
        ("spans", "SELECT $K, collect_list(struct(lso, hw)) AS _spans FROM div_reps "
                  "GROUP BY $K"),
        ("div_chosen", "SELECT $K, replica, lso, hw FROM div_reps"),
        *_final_records("div_records", "div_chosen", ["lso", "hw"]),
        ("per_offset", """
            SELECT $K, `offset`, size(collect_set(replica)) AS with_record,
                   collect_set(value) AS held
            FROM div_records WHERE `offset` >= lso AND `offset` < hw
            GROUP BY $K, `offset`"""),
        ("covered", """
            SELECT /*+ BROADCAST(spans) */ $K, `offset`,
                   size(filter(_spans, s -> s.lso <= `offset` AND `offset` < s.hw))
                       AS replicas,
                   with_record, held
            FROM per_offset JOIN spans USING ($K)"""),
        ("divergence", """
            SELECT * FROM (
                SELECT $K, `offset`, replicas,
                       array_sort(CASE WHEN with_record < replicas
                                       THEN array_union(held, array($MISSING))
                                       ELSE held END) AS `values`
                FROM covered)
            WHERE replicas >= 2 AND size(`values`) > 1"""),
    ]


def log_divergence(side: DataFrame) -> DataFrame:
    """Offsets of a partition where two replicas' final logs differ below both HWs.

    Per (K, offset) over the records inside their replica's [lso, hw): the replicas holding a
    record there and the set of values; the replicas *covering* the offset are counted from
    the (broadcast, small) list of spans of the partition, and a covering replica without a
    record adds MISSING. Aggregates keyed by a superset of K: no exchange, no exploded ranges.
    """
    return _query(side.sparkSession, _log_divergence(), "SELECT * FROM divergence", side=side)


# --------------------------------------------------------------------------- ISR


def _lost_committed_offsets() -> list[Cte]:
    return [
        ("commits", """
            SELECT $K, `group`, consumer, commit_id, seq AS c_seq, `offset` AS c_off
            FROM {side} WHERE event = 'offset_commit' AND $VALID"""),
        ("commit_acks", """
            SELECT $K, `group`, consumer, commit_id, seq AS a_seq, ts_us AS a_ts
            FROM {side} WHERE event = 'offset_commit_ack' AND $VALID"""),
        ("acked", """
            SELECT $K, `group`, a_seq, a_ts,
                   max_by(struct(c_seq, c_off), c_seq) AS c
            FROM commit_acks JOIN commits USING ($K, `group`, consumer, commit_id)
            WHERE c_seq < a_seq GROUP BY $K, `group`, a_seq, a_ts"""),
        ("fetches", """
            SELECT $K, `group`, consumer, seq AS f_seq, requested_us, `offset` AS got
            FROM {side}
            WHERE event = 'offset_fetch' AND $VALID AND requested_us IS NOT NULL"""),
        ("latest", """
            SELECT $K, `group`, consumer, f_seq, got, max_by(c, a_seq) AS l
            FROM fetches JOIN acked USING ($K, `group`)
            WHERE a_ts < requested_us GROUP BY $K, `group`, consumer, f_seq, got"""),
        ("later", """
            SELECT $K, `group`, consumer, f_seq, got, l,
                   collect_set(CASE WHEN c_seq > l.c_seq AND c_seq < f_seq THEN c_off END)
                       AS later
            FROM latest LEFT JOIN (SELECT $K, `group`, c_seq, c_off FROM commits) cm
                USING ($K, `group`)
            GROUP BY $K, `group`, consumer, f_seq, got, l"""),
        ("lost_commits", """
            SELECT $K, `group`, consumer, f_seq AS seq, got AS fetched,
                   l.c_off AS acknowledged
            FROM later WHERE got != l.c_off AND NOT array_contains(later, got)"""),
    ]


def lost_committed_offsets(side: DataFrame) -> DataFrame:
    """One row per ``offset_fetch`` that read back neither the latest commit acknowledged
    before it was asked for nor one sent after that commit (``traces.checker``'s rule):
    K, group, consumer, seq, the offset fetched and the acknowledged one."""
    return _query(side.sparkSession, _lost_committed_offsets(), "SELECT * FROM lost_commits",
                  side=side)


def _outside_assignment() -> list[Cte]:
    return [
        ("ar_rows", """
            SELECT $K, seq, ts_us, event, leader,
                   CASE WHEN event = 'replicas_change'
                             OR (event = 'isr_change' AND reason = 'create')
                        THEN from_json(new, 'array<int>') END AS ar_def,
                   CASE WHEN event = 'isr_change' THEN from_json(new, 'array<int>')
                        WHEN event = 'leader_elected' THEN isr END AS checked
            FROM {side}
            WHERE event IN ('isr_change', 'leader_elected', 'replicas_change') AND $VALID"""),
        ("ar_known", """
            SELECT *, last(ar_def, true) OVER (PARTITION BY $K ORDER BY seq
                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ar
            FROM ar_rows"""),
        ("outside", """
            SELECT $K, seq, ts_us, ar, checked, leader FROM ar_known
            WHERE ar IS NOT NULL AND event != 'replicas_change'
              AND coalesce(size(array_except(coalesce(checked, CAST(array() AS array<int>)),
                                             ar)) > 0
                           OR (event = 'leader_elected' AND leader >= 0
                               AND NOT array_contains(ar, leader)), false)"""),
    ]


def outside_assignment(side: DataFrame) -> DataFrame:
    """``isr_change`` / ``leader_elected`` rows whose ISR or leader is not in the replica
    list (AR) in force: the ISR a partition was created with (``isr_change`` reason
    ``create``), then each ``replicas_change``'s ``new`` (``traces.checker``'s rule)."""
    return _query(side.sparkSession, _outside_assignment(), "SELECT * FROM outside", side=side)


def possible_loss(side: DataFrame) -> DataFrame:
    """(K, anomaly, n): the signals of a possible loss a log shows (docs/anomalies.md §4d):
    ``possible_committed_truncation`` (a ``log_truncate`` below the HW it names),
    ``unclean_election`` (a ``leader_elected`` with ``election`` unclean) and
    ``leader_epoch_regression`` (a ``leader_elected`` / ``become_leader`` whose epoch is below
    the highest an earlier one of the partition carried)."""
    return _query(side.sparkSession, [("epochs", """
        SELECT $K, leader_epoch,
               max(leader_epoch) OVER (PARTITION BY $K ORDER BY seq
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
                   AS before
        FROM {side}
        WHERE event IN ('leader_elected', 'become_leader') AND $VALID
          AND leader_epoch IS NOT NULL""")], """
        SELECT $K, anomaly, count(1) AS n FROM (
            SELECT $K, 'possible_committed_truncation' AS anomaly FROM {side}
            WHERE event = 'log_truncate' AND $VALID AND new_leo < hw
            UNION ALL
            SELECT $K, 'unclean_election' AS anomaly FROM {side}
            WHERE event = 'leader_elected' AND $VALID AND election = 'unclean'
            UNION ALL
            SELECT $K, 'leader_epoch_regression' AS anomaly FROM epochs
            WHERE leader_epoch < before)
        GROUP BY $K, anomaly""", side=side)


def _isr_states() -> list[Cte]:
    return [
        ("isr_rows", """
            SELECT * FROM (
                SELECT $K, seq, ts_us,
                       array_distinct(CASE WHEN event = 'isr_change'
                                           THEN from_json(new, 'array<int>') ELSE isr END)
                           AS isr,
                       array_distinct(CASE WHEN event = 'isr_change'
                                           THEN from_json(old, 'array<int>') END) AS old_isr
                FROM {side} WHERE event IN ('isr_change', 'leader_elected') AND $VALID)
            WHERE isr IS NOT NULL"""),
        ("states", """
            SELECT $K, seq, ts_us, isr,
                   coalesce(lag(isr) OVER (PARTITION BY $K ORDER BY seq), old_isr) AS prev_isr
            FROM isr_rows"""),
    ]


def isr_states(side: DataFrame) -> DataFrame:
    """The committed ISR after each ``isr_change`` / ``leader_elected`` (K, seq, ts_us,
    isr, prev_isr), prev_isr = the previous state, or ``isr_change.old`` for the first."""
    return _query(side.sparkSession, _isr_states(), "SELECT * FROM states", side=side)


def _isr_transitions() -> list[Cte]:
    return [
        *_isr_states(),
        ("moves", """
            SELECT $K, seq, ts_us, explode(array_except(prev_isr, isr)) AS replica,
                   'shrink' AS kind FROM states
            UNION ALL
            SELECT $K, seq, ts_us, explode(array_except(isr, prev_isr)) AS replica,
                   'expand' AS kind FROM states"""),
        ("transitions", """
            SELECT *, coalesce(kind = 'expand' AND prev_kind = 'shrink'
                               AND ts_us - prev_ts <= $CHURN_WINDOW_US, false) AS churn
            FROM (SELECT *, lag(kind) OVER w AS prev_kind, lag(ts_us) OVER w AS prev_ts
                  FROM moves WINDOW w AS (PARTITION BY $K, replica ORDER BY seq))"""),
    ]


def isr_transitions(side: DataFrame) -> DataFrame:
    """One row per replica leaving (shrink) or joining (expand) the ISR, with ``churn``:
    an expand whose previous transition was a shrink at most 60 s earlier."""
    return _query(side.sparkSession, _isr_transitions(), "SELECT * FROM transitions",
                  side=side)


def _isr_intervals() -> list[Cte]:
    return [
        *_isr_states(),
        *_scenario_topics(),
        ("ends", "SELECT tid, end_us FROM {traces}"),
        ("intervals", """
            SELECT $K, seq, ts_us, `until`, isr,
                   greatest(`until` - ts_us, 0) AS duration_us,
                   size(isr) < coalesce(eff_min_isr, 1) AS under_min_isr,
                   coalesce(size(isr) < rf, false) AS under_replicated
            FROM (SELECT *, coalesce(lead(ts_us) OVER (PARTITION BY $K ORDER BY seq), end_us)
                                AS `until`
                  FROM (SELECT /*+ BROADCAST(ends) */ * FROM states JOIN ends USING (tid)
                        LEFT JOIN topics USING (tid, topic)))"""),
    ]


def isr_intervals(data: Loaded) -> DataFrame:
    """How long each committed ISR state lasted (until the next state or the trace's end),
    with ``under_min_isr`` (size < effective min ISR) and ``under_replicated`` (< RF)."""
    return _query(data.side.sparkSession, _isr_intervals(), "SELECT * FROM intervals",
                  side=data.side, traces=data.traces)


_CHURN_PER_MINUTE: Final = """
    SELECT $K, minute, sum(CASE WHEN kind = 'shrink' THEN 1 ELSE 0 END) AS shrinks,
           sum(CASE WHEN kind = 'expand' THEN 1 ELSE 0 END) AS expands,
           sum(CAST(churn AS int)) AS churns
    FROM (SELECT *, CAST(floor(ts_us / 60000000) AS bigint) AS minute FROM transitions)
    GROUP BY $K, minute"""


def isr_churn_per_minute(side: DataFrame) -> DataFrame:
    """Per partition and minute of virtual time: shrinks, expands, churns (flaps)."""
    return _query(side.sparkSession, _isr_transitions(), _CHURN_PER_MINUTE, side=side)


_PARTITION_HEALTH: Final = """
    SELECT *, floor(under_min_isr_us / 1000) AS under_min_isr_ms,
           floor(under_replicated_us / 1000) AS under_replicated_ms
    FROM (SELECT $ZERO(tid, int) AS tid, topic, $ZERO(`partition`, int) AS `partition`,
                 $ZERO(under_min_isr_us, bigint) AS under_min_isr_us,
                 $ZERO(under_replicated_us, bigint) AS under_replicated_us,
                 $ZERO(churns, bigint) AS churns, $ZERO(shrinks, bigint) AS shrinks
          FROM (SELECT $K,
                       sum(CASE WHEN under_min_isr THEN duration_us ELSE 0 END)
                           AS under_min_isr_us,
                       sum(CASE WHEN under_replicated THEN duration_us ELSE 0 END)
                           AS under_replicated_us
                FROM intervals GROUP BY $K)
          FULL JOIN (SELECT $K, sum(CAST(churn AS int)) AS churns,
                            sum(CASE WHEN kind = 'shrink' THEN 1 ELSE 0 END) AS shrinks
                     FROM transitions GROUP BY $K) USING ($K))"""


def partition_health(data: Loaded) -> DataFrame:
    """Per partition: ms under min ISR, ms under-replicated, ISR churns, shrinks."""
    return _query(data.side.sparkSession, [*_isr_intervals(), *_isr_transitions()],
                  _PARTITION_HEALTH, side=data.side, traces=data.traces)


def top_churning_replicas(side: DataFrame, n: int = 20) -> DataFrame:
    """Replicas with the most churns (over all traces read)."""
    return _query(side.sparkSession, _isr_transitions(), f"""
        SELECT topic, `partition`, replica, count(1) AS churns, count(DISTINCT tid) AS traces
        FROM transitions WHERE churn GROUP BY topic, `partition`, replica
        ORDER BY churns DESC, topic, `partition`, replica LIMIT {int(n)}""", side=side)


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
        name (``record`` and ``order`` give several anomalies each, the others one). Building
        is itself work (thousands of Py4J calls), so ``families`` does it in the thread that
        collects. The final source, which two of them read, is collected by the first of the
        two to start (``source``), in its thread: the other families need not wait for its
        small jobs (on 10M events the families' first jobs now start 1.6 s after the load
        instead of 5.8 s)."""
        data, spark = self.data, self.spark
        side = {"side": data.side}

        def sql(ctes: Sequence[Cte], select: str,
                **frames: DataFrame) -> Callable[[], DataFrame]:
            return lambda: _query(spark, ctes, select, **frames)

        return {
            "record": lambda: _query(
                spark, [*_record_verdicts(), *_record_counts()],
                _long_counts("record_sums", RECORD_ANOMALIES), events=data.events,
                side=data.side, source=self.source()),
            "order": lambda: order_counts(self.findings()),
            "log_divergence": lambda: _query(
                spark, [], _count("{divergence}", "log_divergence"),
                divergence=self.divergence()),
            "no_convergence": lambda: _query(
                spark, [], _count("(SELECT * FROM {source} WHERE offline OR not_converged)",
                                  "no_convergence"), source=self.source()),
            "isr_churn": sql(_isr_transitions(),
                             _count("(SELECT * FROM transitions WHERE churn)", "isr_churn"),
                             **side),
            "under_min_isr": sql(_isr_intervals(), """
                SELECT $K, 'under_min_isr' AS anomaly, sum(duration_us) AS n FROM intervals
                WHERE under_min_isr GROUP BY $K""", **side, traces=data.traces),
            "lost_committed_offset": sql(_lost_committed_offsets(),
                                         _count("lost_commits", "lost_committed_offset"),
                                         **side),
            "outside_assignment": sql(_outside_assignment(),
                                      _count("outside", "outside_assignment"), **side),
            "possible_loss": lambda: possible_loss(data.side),
            "quorum": lambda: quorum_counts(data),   # spark_analysis.quorum
        }

    def families(self, on_start: Callable[[str], None] | None = None,
                 workers: int = JOBS_AT_ONCE) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        """Each family's name and rows (tid, topic, partition, anomaly, n), collected once,
        in ``builders``' order; the families are built and collected ``workers`` at a time
        (``side_by_side``). ``on_start(name)`` just before a family is built, in the thread
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
            for family in side_by_side(self.spark, tasks, workers):
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
            self._wide = self.spark.createDataFrame(df.collect(), df.schema)
        return self._wide

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
