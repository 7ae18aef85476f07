"""The two passes over the events: record verdicts and order findings.

Design note (split out of ``analyses``): the only analyses that read the bulk lines
(``Loaded.events``: sends, acks, consumes, HW updates), each in one pass — ``record_verdicts``
(per value: lost, expired, duplicate, non-monotonic sends, visible HW regressions, against
the final committed log of ``final_logs``) and ``order_findings`` (per HW update and consume:
reads of uncommitted data, poll skips, non-monotonic polls, HW regressions). Their counts
(``record_counts``, ``order_counts``) are two families of ``analyses.Analysis``; the findings
also make the ``hw_regressions`` view.

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
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame

from spark_analysis.final_logs import _committed_records
from spark_analysis.load import Loaded
from spark_analysis.statements import Cte, _long_counts, _query

#: Families of ``record_verdicts`` and ``order_findings``, in the order they are counted.
RECORD_ANOMALIES: Final = ("lost_acked_write", "lost_acked_uncommitted", "expired",
                           "duplicate", "nonmonotonic_send", "hw_regression_visible")
ORDER_ANOMALIES: Final = ("read_uncommitted", "poll_skip", "nonmonotonic_poll",
                          "hw_regression_replica")



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
