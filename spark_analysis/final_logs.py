"""The final logs: per replica, the final committed log's source, its records, divergence.

Design note (split out of ``analyses``): everything here reads the ``final_log`` lines of
``side`` (and the leadership and convergence lines that choose among them) and nothing of
the events: ``final_source`` (which replica defines a partition's final committed log),
``committed_records`` (that log), ``final_replicas``/``final_records`` (every replica's) and
``log_divergence`` (offsets where two replicas' logs differ below both HWs). The record pass
(``passes``) joins the committed log; the ``no_convergence`` and ``log_divergence`` families
count from here (``analyses.Analysis``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pyspark.sql import DataFrame

from spark_analysis.statements import Cte, K, _query

SOURCE_SCHEMA: Final = ("tid int, topic string, partition int, elected int, "
                        "offline boolean, not_converged boolean, source int, src_hw long, "
                        "src_lso long")


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
