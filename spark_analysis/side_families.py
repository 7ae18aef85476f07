"""The families and views of the side lines: ISR, offset commits, assignment, possible loss.

Design note (split out of ``analyses``): everything here reads ``Loaded.side`` only (the few
run-level, leadership, ISR and consumer-group lines, parsed in full), never the events:
the committed ISR's states, transitions and intervals (the ``isr_churn`` and
``under_min_isr`` families, and the views of churn per minute, partition health and the
top churning replicas), ``lost_committed_offsets``, ``outside_assignment`` and
``possible_loss``. Each is small: a few rows per partition.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame

from spark_analysis.load import Loaded
from spark_analysis.statements import _SCENARIO, Cte, _count, _query


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


def _possible_loss() -> tuple[list[Cte], str]:
    """``possible_loss``'s expressions and ``SELECT`` over ``{side}``."""
    return [("epochs", """
        SELECT $K, leader_epoch,
               CASE WHEN event = 'become_leader' THEN
                   max(CASE WHEN event = 'become_leader' THEN leader_epoch END)
                       OVER (PARTITION BY $K ORDER BY seq
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
               ELSE
                   max(leader_epoch) OVER (PARTITION BY $K ORDER BY seq
                                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
               END AS before
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
        GROUP BY $K, anomaly"""


def possible_loss(side: DataFrame) -> DataFrame:
    """(K, anomaly, n): the signals of a possible loss a log shows (docs/anomalies.md §4d):
    ``possible_committed_truncation`` (a ``log_truncate`` below the HW it names),
    ``unclean_election`` (a ``leader_elected`` with ``election`` unclean) and
    ``leader_epoch_regression`` (a ``leader_elected`` whose epoch is below the highest an
    earlier ``leader_elected`` or ``become_leader`` of the partition carried, a
    ``become_leader`` below the highest earlier ``become_leader``: ``traces.checker``)."""
    ctes, select = _possible_loss()
    return _query(side.sparkSession, ctes, select, side=side)


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


# --------------------------------------------------------------------------- one statement


#: The small families read from ``side`` (and the final source, collected), in the order
#: their rows join the anomaly table: ``side_families`` computes them in one statement.
SIDE_FAMILIES: Final = ("no_convergence", "isr_churn", "under_min_isr",
                        "lost_committed_offset", "outside_assignment", "possible_loss")


def _side_family_selects() -> list[tuple[list[Cte], str]]:
    """Each of ``SIDE_FAMILIES``' expressions and ``SELECT`` of (K, anomaly, n)."""
    return [
        ([], _count("(SELECT * FROM {source} WHERE offline OR not_converged)",
                    "no_convergence")),
        (_isr_transitions(), _count("(SELECT * FROM transitions WHERE churn)", "isr_churn")),
        (_isr_intervals(), """
            SELECT $K, 'under_min_isr' AS anomaly, sum(duration_us) AS n FROM intervals
            WHERE under_min_isr GROUP BY $K"""),
        (_lost_committed_offsets(), _count("lost_commits", "lost_committed_offset")),
        (_outside_assignment(), _count("outside", "outside_assignment")),
        _possible_loss(),
    ]


def side_families(data: Loaded, source: DataFrame) -> DataFrame:
    """(family, K, anomaly, n): the rows of every family of ``SIDE_FAMILIES``, ``family``
    being its index there, in one statement (``UNION ALL`` of the families' ``SELECT``s,
    their expressions shared where they are the same: the ISR states).

    One statement rather than six: each is a few thousand rows at most, so each cost the
    analysis a Catalyst analysis, optimisation and planning of its own, its jobs and their
    stages' scheduling — the run of ``make demo``'s trace is mostly such fixed costs
    (``docs/performance.md``). Each branch is planned as it was alone (the same aggregates
    and windows over the same scans of ``side``) and ``UNION ALL`` concatenates the
    branches' partitions in order, so splitting the rows by ``family`` gives each family's
    rows as its own statement gave them."""
    parts = _side_family_selects()
    ctes = [c for part_ctes, _ in parts for c in part_ctes]
    select = "\nUNION ALL\n".join(f"SELECT {i} AS family, * FROM ({select})"
                                  for i, (_, select) in enumerate(parts))
    return _query(data.side.sparkSession, ctes, select, side=data.side, traces=data.traces,
                  source=source)
