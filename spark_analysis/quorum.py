"""The controller quorum's anomalies in Spark SQL: ``traces.quorum_check``'s counts.

``metadata_divergence`` and ``uncommitted_metadata_applied`` (docs/anomalies.md, "The
controller quorum") read four events of a run with ``cluster.controller_quorum``:
``raft_append``, ``raft_truncate``, ``raft_hw`` and ``metadata_apply``. The load keeps none
of them (they are neither hot nor side lines, and most traces have none), so this family
reads them itself, from the traces whose ``run_start`` names a quorum only — a load without
one costs a single query over the side lines' ``run_start`` rows. Each such file is read
again with Spark's text source (gzip by its name, as the load reads it), its quorum lines
picked by their ``{"seq":N,"ts_us":M,"event":"...`` prefix and parsed with ``from_json``.
A trace the load skipped is not read; a line the load found damaged in a trace it kept is
read here as it is (the checker refuses such a file outright, so the two never have to
agree on one).

The definitions, as SQL (``quorum_counts``: one statement):

* ``entries``: each ``raft_append`` exploded to (voter, offset, epoch, seq); an entry is held
  until the voter's next append at that offset or its next ``raft_truncate`` at or below it;
* ``observations``: each ``raft_hw`` exploded to the offsets it passes (from the voter's
  previous HW, 0 before its first, to the new one), each with the entry the voter held there
  then (null: none);
* ``metadata_divergence``: per offset, the observations whose entry is not the first one's
  (null-safe); counted once per offset;
* ``uncommitted_metadata_applied``: each ``metadata_apply`` whose offset is at or above the
  running maximum of every voter's ``raft_hw`` before it (0 before any): the controllers'
  replay and the brokers' applies alike (a broker, a Raft observer, traces its own id as
  ``voter`` and ``observer``: true, and no ``raft_hw``).

Rows are (tid, topic, partition, anomaly, n) on ``__cluster_metadata``-0, as the checker
counts them, for the anomaly table (``analyses.Analysis.builders``' ``quorum`` family).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame, SparkSession

from spark_analysis.load import Loaded
from traces.quorum_check import MAX_SPAN, METADATA_PARTITION

QUORUM_EVENTS: Final = ("raft_append", "raft_truncate", "raft_hw", "metadata_apply")
ROW_SCHEMA: Final = "tid int, topic string, partition int, anomaly string, n bigint"
_LINE_SCHEMA: Final = ("seq bigint, event string, voter bigint, epoch bigint, `first` bigint, "
                       "`last` bigint, `offset` bigint, hw bigint")
#: the line's opening (its first character, the brace, as ``.``: a brace would be a
#: placeholder of PySpark's formatter)
_PREFIX: Final = ('^."seq":[0-9]+,"ts_us":[0-9]+,"event":"(' + "|".join(QUORUM_EVENTS)
                  + ')"')


def quorum_traces(data: Loaded) -> list[tuple[int, str]]:
    """(tid, path) of the loaded traces whose scenario has a controller quorum."""
    spark: SparkSession = data.side.sparkSession
    rows = spark.sql("""
        SELECT t.tid, t.trace FROM {traces} t JOIN (
            SELECT DISTINCT tid FROM {side} WHERE event = 'run_start' AND coalesce(try_cast(
                get_json_object(scenario, '$.cluster.controller_quorum') AS int), 0) > 0) q
        ON t.tid = q.tid ORDER BY t.tid""", None, traces=data.traces, side=data.side).collect()
    return [(int(r["tid"]), str(r["trace"])) for r in rows]


def quorum_lines(spark: SparkSession, traces: list[tuple[int, str]]) -> DataFrame:
    """The quorum lines of ``traces``, parsed: (tid, seq, event, voter, epoch, first, last,
    offset, hw)."""
    parts = [spark.sql(f"""
        SELECT {tid} AS tid, j.* FROM (
            SELECT from_json(value, '{_LINE_SCHEMA}') AS j FROM {{text}}
            WHERE value RLIKE '{_PREFIX}')""", None, text=spark.read.text(path))
        for tid, path in traces]
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


def quorum_counts(data: Loaded) -> DataFrame:
    """(tid, topic, partition, anomaly, n) of the quorum's anomalies (see the module note);
    no rows when no loaded trace has a controller quorum."""
    spark: SparkSession = data.side.sparkSession
    traces = quorum_traces(data)
    if not traces:
        return spark.createDataFrame([], ROW_SCHEMA)
    topic, partition = METADATA_PARTITION
    return spark.sql(f"""
        WITH q AS (SELECT * FROM {{lines}} WHERE voter IS NOT NULL),
        entries AS (
            SELECT tid, voter, seq AS a_seq, epoch, o FROM q
            LATERAL VIEW explode(sequence(`first`, `last`)) s AS o
            WHERE event = 'raft_append' AND epoch IS NOT NULL AND `first` >= 0
              AND `last` >= `first` AND `last` - `first` < {MAX_SPAN}),
        truncs AS (SELECT tid, voter, seq AS t_seq, `offset` AS t_off FROM q
                   WHERE event = 'raft_truncate' AND `offset` IS NOT NULL),
        held AS (
            SELECT e.tid, e.voter, e.o, e.epoch, e.a_seq,
                   least(min(e.next_append), min(t.t_seq)) AS end_seq
            FROM (SELECT *, lead(a_seq) OVER (PARTITION BY tid, voter, o ORDER BY a_seq)
                            AS next_append FROM entries) e
            LEFT JOIN truncs t ON t.tid = e.tid AND t.voter = e.voter AND t.t_seq > e.a_seq
                               AND t.t_off <= e.o
            GROUP BY e.tid, e.voter, e.o, e.epoch, e.a_seq),
        hws AS (
            SELECT tid, voter, seq AS h_seq, hw,
                   coalesce(lag(hw) OVER (PARTITION BY tid, voter ORDER BY seq), 0) AS prev
            FROM q WHERE event = 'raft_hw' AND hw IS NOT NULL),
        passes AS (
            SELECT tid, voter, h_seq, o FROM hws
            LATERAL VIEW explode(sequence(greatest(prev, 0), hw - 1)) s AS o
            WHERE hw > greatest(prev, 0) AND hw - prev < {MAX_SPAN}),
        observations AS (
            SELECT p.tid, p.o, p.h_seq, h.epoch FROM passes p
            LEFT JOIN held h ON h.tid = p.tid AND h.voter = p.voter AND h.o = p.o
                             AND h.a_seq < p.h_seq AND (h.end_seq IS NULL OR h.end_seq > p.h_seq)),
        ranked AS (
            SELECT *, first_value(epoch) OVER (PARTITION BY tid, o ORDER BY h_seq
                ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS committed
            FROM observations),
        diverged AS (
            SELECT tid, 'metadata_divergence' AS anomaly, count(DISTINCT o) AS n FROM ranked
            WHERE NOT (epoch <=> committed) GROUP BY tid),
        timeline AS (
            SELECT tid, seq, event, `offset`,
                   max(CASE WHEN event = 'raft_hw' THEN hw END) OVER (
                       PARTITION BY tid ORDER BY seq
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS quorum_hw
            FROM q WHERE (event = 'raft_hw' AND hw IS NOT NULL)
                      OR (event = 'metadata_apply' AND `offset` IS NOT NULL)),
        applied AS (
            SELECT tid, 'uncommitted_metadata_applied' AS anomaly, count(1) AS n FROM timeline
            WHERE event = 'metadata_apply' AND `offset` >= greatest(coalesce(quorum_hw, 0), 0)
            GROUP BY tid)
        SELECT CAST(tid AS int) AS tid, '{topic}' AS topic, {partition} AS `partition`,
               anomaly, CAST(n AS bigint) AS n
        FROM (SELECT * FROM diverged UNION ALL SELECT * FROM applied) WHERE n > 0""",
                     None, lines=quorum_lines(spark, traces))
