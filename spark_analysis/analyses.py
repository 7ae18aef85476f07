"""Trace analytics with DataFrames: the checker's anomalies, and the campaign views around them.

Every function takes the flat events of ``load.load_traces`` (any number of traces; the column
``trace`` tells them apart) and returns a DataFrame. Keys are always led by ``trace`` and
windows are ordered by ``seq`` (the trace's total order; many events share a ``ts_us``).

The anomaly definitions are ``docs/anomalies.md``, the same text ``traces.checker`` follows;
``anomaly_table`` is the one place that turns them into counts and ``tests/spark`` holds it
equal to ``check_events`` on every trace the tests have. The mapping, definition by definition:

* final committed log — ``final_source`` (last ``leader_elected``/``partition_offline`` by
  ``seq``; highest-HW replica when there is no leader or the leader left no ``final_log``)
  and ``committed_records``;
* write anomalies — ``write_verdicts``: first ack per value (``first_acks``, one aggregate
  with the first send), presence in the committed records (``_presence``); ``expired`` below
  the source replica's logStartOffset;
* read anomalies — ``read_uncommitted`` (running max of leader HWs), ``visible_regressions``
  (presence in the committed records, retracted HW), ``poll_chains`` (``lag`` per consumer
  chain split at each ``rebalance`` of its group: ``poll_skip``/``nonmonotonic_poll``);
  ``consume_verdicts`` joins the three for reports;
* ISR — ``isr_states`` (committed ISR after each ``isr_change``/``leader_elected``),
  ``isr_transitions`` (shrinks/expands by ``array_except`` with the previous state) and
  ``isr_intervals`` (time per state, ``lead`` of the next state's ``ts_us``).

Performance shape: ``load`` hash-partitions the events by K = (trace, topic, partition) and
caches them. Every family here is keyed by a superset of K (windows over (K, replica),
(K, offset, value), (K, group, consumer, gen)...; aggregates over (K, value)...), and membership
in the committed log is a window over (K, offset, value) rather than a join, so on that input
no family exchanges the large tables; the small per-partition tables (final source, spans,
rebalances) are broadcast.

Views that are not anomaly counts (HW regressions per replica, churn per minute, time
under-replicated, top churning replicas, roll-ups by knob) are for reports and campaigns.
"""

from __future__ import annotations

from functools import reduce
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.load import SCENARIO_SCHEMA
from traces.checker import ISR_CHURN_WINDOW_US, MISSING
from traces.schema import ANOMALIES

K: Final = ["trace", "topic", "partition"]
_INT_OLD_NEW: Final = ("hw_update", "leo_update", "log_start_offset_update")


def _ev(events: DataFrame, *names: str) -> DataFrame:
    return events.where(F.col("event").isin(*names))


def _valid_k(df: DataFrame) -> DataFrame:
    return df.where(F.col("topic").isNotNull() & F.col("partition").isNotNull())


def _value_n(col: str = "value") -> Column:
    """Record value with null as the MISSING sentinel (as the checker keys it)."""
    return F.coalesce(F.col(col), F.lit(MISSING))


def _acks_n() -> Column:
    """acks normalised: null and "-1" are "all" (Kafka's default since 3.0)."""
    return F.when(F.col("acks").isNull() | (F.col("acks") == "-1"), F.lit("all")).otherwise(
        F.col("acks"))


def typed(events: DataFrame) -> DataFrame:
    """Adds ``old_n``/``new_n`` (integers) and ``old_isr``/``new_isr`` (broker lists)."""
    ints = F.col("event").isin(*_INT_OLD_NEW)
    return events.select(
        "*",
        F.when(ints, F.col("old").try_cast("bigint")).alias("old_n"),
        F.when(ints, F.col("new").try_cast("bigint")).alias("new_n"),
        F.when(F.col("event") == "isr_change", F.from_json("old", "array<int>")).alias("old_isr"),
        F.when(F.col("event") == "isr_change", F.from_json("new", "array<int>")).alias("new_isr"),
    )


# --------------------------------------------------------------------------- per trace


def trace_meta(events: DataFrame) -> DataFrame:
    """One row per trace: scenario name, seed, protocol, knobs, status, events, end time."""
    start = _ev(events, "run_start").select(
        "trace", "seed", F.from_json("scenario", SCENARIO_SCHEMA).alias("sc"),
        F.col("protocol").alias("run_protocol"))
    end = _ev(events, "run_end").select("trace", F.col("status"))
    sizes = events.groupBy("trace").agg(
        F.count(F.lit(1)).alias("events"), F.max("ts_us").alias("end_us"))
    faults = (_ev(events, "fault").where(F.col("fault").isNotNull())
              .groupBy("trace").agg(F.array_sort(F.collect_set("fault")).alias("fault_kinds")))
    return (
        sizes.join(start, "trace", "left").join(end, "trace", "left")
        .join(faults, "trace", "left")
        .select(
            "trace", "events", "end_us", "seed", "status",
            F.col("sc.name").alias("scenario"),
            F.coalesce("run_protocol", "sc.protocol").alias("protocol"),
            F.array_join(F.array_sort(F.array_distinct(
                F.transform("sc.producers", lambda p: p["acks"]))), ",").alias("acks"),
            F.array_min(F.transform(
                "sc.topics", lambda t: t["min.insync.replicas"])).alias("min_insync_replicas"),
            F.exists("sc.topics", lambda t: F.coalesce(
                t["unclean.leader.election.enable"], F.lit(False))).alias("unclean"),
            F.coalesce(F.array_join("fault_kinds", ","), F.lit("")).alias("fault_kinds"),
            F.col("sc.expect").alias("expect"),
        )
    )


def scenario_topics(events: DataFrame) -> DataFrame:
    """Per trace and topic: replication factor and effective min ISR (min(minISR, RF))."""
    topics = _ev(events, "run_start").select(
        "trace", F.explode(F.from_json("scenario", SCENARIO_SCHEMA)["topics"]).alias("t"))
    min_isr = F.coalesce(F.col("t")["min.insync.replicas"], F.lit(1))
    rf = F.col("t")["replication.factor"]
    return topics.where(F.col("t")["name"].isNotNull()).select(
        "trace", F.col("t")["name"].alias("topic"), rf.alias("rf"),
        F.when(rf.isNull(), min_isr).otherwise(F.least(min_isr, rf)).alias("eff_min_isr"),
    ).dropDuplicates(["trace", "topic"])


# --------------------------------------------------------------------------- final logs


def final_replicas(events: DataFrame) -> DataFrame:
    """Per replica with a ``final_log``: HW, LEO, logStartOffset (max over its events)."""
    return (_valid_k(_ev(events, "final_log")).where(F.col("replica").isNotNull())
            .groupBy(*K, "replica").agg(
                F.max(F.coalesce("hw", F.lit(0))).alias("hw"),
                F.max(F.coalesce("leo", F.lit(0))).alias("leo"),
                F.max(F.coalesce("log_start_offset", F.lit(0))).alias("lso")))


def final_records(events: DataFrame) -> DataFrame:
    """Every ``[offset, value, epoch]`` of every ``final_log``: (K, replica, offset, value)."""
    rec = (_valid_k(_ev(events, "final_log")).where(F.col("replica").isNotNull())
           .select(*K, "replica", F.explode("records").alias("r"))
           .where(F.size("r") >= 2))
    return rec.select(
        *K, "replica", F.try_element_at("r", F.lit(1)).try_cast("bigint").alias("offset"),
        F.coalesce(F.try_element_at("r", F.lit(2)), F.lit(MISSING)).alias("value"),
    ).where(F.col("offset").isNotNull())


def final_source(events: DataFrame) -> DataFrame:
    """Per partition: the replica defining the final committed log, its HW/LSO, liveness.

    Columns: K, elected, offline, not_converged, source, src_hw, src_lso (source columns are
    null when no replica left a ``final_log``).
    """
    lead = (_valid_k(_ev(events, "leader_elected", "partition_offline"))
            .groupBy(*K).agg(F.max_by(F.struct("event", "leader"), "seq").alias("last")))
    lead = lead.select(*K, F.when(
        (F.col("last.event") == "leader_elected") & (F.col("last.leader") >= 0),
        F.col("last.leader")).alias("elected"), F.lit(True).alias("has_leadership"))
    conv = (_valid_k(_ev(events, "convergence")).groupBy(*K).agg(
        (~F.bool_and(F.coalesce("converged", F.lit(False)))).alias("not_converged")))
    reps = final_replicas(events)
    best = reps.withColumn("rk", F.row_number().over(
        Window.partitionBy(*K).orderBy(F.desc("hw"), F.asc("replica")))).where("rk = 1")
    universe = (lead.select(*K).union(reps.select(*K)).union(conv.select(*K))).distinct()
    df = (universe.join(lead, K, "left").join(conv, K, "left")
          .join(best.select(*K, F.col("replica").alias("best")), K, "left")
          .join(reps.select(*K, F.col("replica").alias("elected"), F.lit(True).alias("el_log")),
                [*K, "elected"], "left"))
    has_logs = F.col("best").isNotNull()
    df = df.select(
        *K, "elected",
        (F.col("elected").isNull() & (F.col("has_leadership").isNotNull() | has_logs))
        .alias("offline"),
        F.coalesce("not_converged", F.lit(False)).alias("not_converged"),
        F.when(F.col("el_log").isNotNull(), F.col("elected")).otherwise(F.col("best"))
        .alias("source"),
    )
    return df.join(
        reps.select(*K, F.col("replica").alias("source"), F.col("hw").alias("src_hw"),
                    F.col("lso").alias("src_lso")), [*K, "source"], "left")


def committed_records(events: DataFrame, source: DataFrame) -> DataFrame:
    """The final committed log: (K, offset, value), source replica, lso <= offset < hw."""
    src = F.broadcast(source.where(F.col("source").isNotNull()).select(
        *K, F.col("source").alias("replica"), "src_hw", "src_lso"))
    return (final_records(events).join(src, [*K, "replica"])
            .where((F.col("offset") >= F.col("src_lso")) & (F.col("offset") < F.col("src_hw")))
            .select(*K, "offset", "value").distinct())


# --------------------------------------------------------------------------- writes


def first_acks(events: DataFrame) -> DataFrame:
    """Per acked value: its first ``produce_ack`` (by seq) with acks != "0", offset >= 0, and
    ``send_seq``, the seq of the value's first ``produce_send`` (null when none).

    One aggregate keyed by (K, value): no exchange on input partitioned by K.
    """
    acks = (_valid_k(_ev(events, "produce_ack"))
            .where(F.col("offset").isNotNull() & (F.col("offset") >= 0))
            .select(*K, _value_n().alias("value"),
                    F.struct("offset", _acks_n().alias("acks"), "producer", "seq", "ts_us")
                    .alias("a"))
            .where(F.col("a.acks") != "0"))
    sends = (_valid_k(_ev(events, "produce_send")).where(F.col("value").isNotNull())
             .select(*K, "value", F.col("seq").alias("send_seq")))
    both = acks.unionByName(sends, allowMissingColumns=True)
    return (both.groupBy(*K, "value")
            .agg(F.min_by("a", "a.seq").alias("a"), F.min("send_seq").alias("send_seq"))
            .where(F.col("a").isNotNull())
            .select(*K, "value", "a.offset", "a.acks", "a.producer", "a.seq", "a.ts_us",
                    "send_seq"))


def _presence(rows: DataFrame, committed: DataFrame) -> DataFrame:
    """``rows`` (K, offset, value, ...) with ``present``: (offset, value) is in the final
    committed log. A window over (K, offset, value), not a join: the input stays partitioned
    by K, so this sorts but does not exchange."""
    marks = committed.select(*K, "offset", "value", F.lit(True).alias("_committed"))
    w = Window.partitionBy(*K, "offset", "value")
    both = rows.withColumn("_committed", F.lit(None).cast("boolean")).unionByName(
        marks, allowMissingColumns=True)
    return (both.withColumn("present", F.coalesce(F.max("_committed").over(w), F.lit(False)))
            .where(F.col("_committed").isNull()).drop("_committed"))


def _sources(source: DataFrame) -> DataFrame:
    """Per partition with a final log: src_hw, src_lso (small: broadcast)."""
    return F.broadcast(source.where(F.col("source").isNotNull()).select(*K, "src_hw", "src_lso"))


def write_verdicts(events: DataFrame, source: DataFrame, committed: DataFrame,
                   acked: DataFrame | None = None) -> DataFrame:
    """Per acked record: verdict ``lost_acked_write``/``lost_acked_uncommitted``/``expired``
    or null (present in the final committed log). Partitions without final logs are left out.
    """
    fa = acked if acked is not None else first_acks(events)
    df = _presence(fa.join(_sources(source), K), committed)
    verdict = (
        F.when(F.col("offset") < F.col("src_lso"), F.lit("expired"))
        .when(~F.col("present") & (F.col("acks") == "all"), F.lit("lost_acked_write"))
        .when(~F.col("present"), F.lit("lost_acked_uncommitted"))
    )
    return df.select(*K, "value", "offset", "acks", "producer", "seq", "ts_us", "src_hw",
                     "src_lso", verdict.alias("verdict"))


def nonmonotonic_sends(events: DataFrame, acked: DataFrame | None = None) -> DataFrame:
    """Acked sends of one producer to one partition, in send order, landing lower than the
    previous one. Send order = first ``produce_send`` seq of the value, else the ack's seq."""
    fa = acked if acked is not None else first_acks(events)
    w = Window.partitionBy(*K, "producer").orderBy("order_key", "seq")
    return (fa.withColumn("order_key", F.coalesce("send_seq", "seq"))
            .withColumn("prev_offset", F.lag("offset").over(w))
            .where(F.col("offset") < F.col("prev_offset")))


def duplicates(events: DataFrame, committed: DataFrame) -> DataFrame:
    """Values seen at more than one offset of a partition (acks, consumes, committed log)."""
    seen = (
        _valid_k(_ev(events, "produce_ack", "consume"))
        .where(F.col("value").isNotNull() & F.col("offset").isNotNull())
        .where((F.col("event") == "consume") | (F.col("offset") >= 0))
        .select(*K, "value", "offset")
        .unionByName(committed.where(F.col("value") != MISSING).select(*K, "value", "offset"))
    )
    return (seen.groupBy(*K, "value")
            .agg(F.min("offset").alias("min_offset"), F.max("offset").alias("max_offset"))
            .where(F.col("min_offset") < F.col("max_offset")))


# --------------------------------------------------------------------------- reads


def _consumes(events: DataFrame) -> DataFrame:
    return (_valid_k(_ev(events, "consume")).where(F.col("offset").isNotNull())
            .select(*K, "seq", "ts_us", "group", "consumer", "offset", "hw",
                    _value_n().alias("value")))


def read_uncommitted(events: DataFrame) -> DataFrame:
    """Per ``consume``: ``max_leader_hw`` (largest leader HW traced before it, at least 0)
    and ``read_uncommitted``. One window over K ordered by seq."""
    ev = typed(events)
    leader_hw = (_valid_k(_ev(ev, "hw_update"))
                 .where(F.col("replica").isNotNull() & F.col("new_n").isNotNull()
                        & (F.col("role") == "leader"))
                 .select(*K, "seq", F.col("new_n").alias("lhw")))
    cons = _consumes(events)
    w = Window.partitionBy(*K).orderBy("seq").rowsBetween(Window.unboundedPreceding, 0)
    df = (cons.withColumn("lhw", F.lit(None).cast("bigint"))
          .unionByName(leader_hw, allowMissingColumns=True)
          .withColumn("max_leader_hw",
                      F.greatest(F.coalesce(F.max("lhw").over(w), F.lit(0)), F.lit(0)))
          .where(F.col("lhw").isNull()).drop("lhw"))
    return df.withColumn("read_uncommitted", (F.col("offset") >= F.col("max_leader_hw"))
                         | (F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw"))))


def poll_chains(events: DataFrame) -> DataFrame:
    """Per ``consume``: ``gen`` (rebalances of its group before it), ``prev_offset`` in its
    chain (group, consumer, partition, gen), ``poll_skip`` and ``nonmonotonic_poll``.
    The rebalances are few: collected per (trace, group) and broadcast, no exchange."""
    reb = F.broadcast(_ev(events, "rebalance").groupBy("trace", "group")
                      .agg(F.collect_list("seq").alias("_rebs"))
                      .select(F.col("trace").alias("_rt"), F.col("group").alias("_rg"), "_rebs"))
    cons = _consumes(events)
    cons = cons.join(reb, (cons["trace"] == reb["_rt"]) & cons["group"].eqNullSafe(reb["_rg"]),
                     "left")
    gen = F.coalesce(F.size(F.filter("_rebs", lambda s: s < F.col("seq"))), F.lit(0))
    cons = cons.select(*[c for c in cons.columns if not c.startswith("_r")], gen.alias("gen"))
    w = Window.partitionBy(*K, "group", "consumer", "gen").orderBy("seq")
    df = cons.withColumn("prev_offset", F.lag("offset").over(w))
    return df.select(
        "*",
        F.coalesce(F.col("offset") <= F.col("prev_offset"), F.lit(False)).alias(
            "nonmonotonic_poll"),
        F.coalesce(F.col("offset") > F.col("prev_offset") + 1, F.lit(False)).alias("poll_skip"),
    )


def visible_regressions(events: DataFrame, source: DataFrame, committed: DataFrame
                        ) -> DataFrame:
    """Per ``consume`` of a partition with a final log: ``rewritten``, ``retracted`` and
    ``hw_regression_visible`` (either)."""
    df = _presence(_consumes(events).join(_sources(source), K), committed)
    rewritten = (F.col("offset") >= F.col("src_lso")) & ~F.col("present")
    retracted = F.coalesce(F.col("hw") > F.col("src_hw"), F.lit(False))
    return df.select("*", rewritten.alias("rewritten"), retracted.alias("retracted"),
                     (rewritten | retracted).alias("hw_regression_visible"))


def consume_verdicts(events: DataFrame, source: DataFrame, committed: DataFrame) -> DataFrame:
    """Per ``consume``: flags read_uncommitted, hw_regression_visible, poll_skip,
    nonmonotonic_poll (see docs/anomalies.md for each). A view for reports: it joins the
    three per-consume analyses on (K, seq); the counts use them one by one."""
    ru = read_uncommitted(events).select(*K, "seq", "max_leader_hw", "read_uncommitted")
    pc = poll_chains(events).select(*K, "seq", "prev_offset", "poll_skip", "nonmonotonic_poll")
    vr = visible_regressions(events, source, committed).select(
        *K, "seq", "src_hw", "hw_regression_visible")
    return (_consumes(events).join(ru, [*K, "seq"]).join(pc, [*K, "seq"])
            .join(vr, [*K, "seq"], "left")
            .withColumn("hw_regression_visible",
                        F.coalesce("hw_regression_visible", F.lit(False))))


# --------------------------------------------------------------------------- replicas


def hw_regressions(events: DataFrame, *, exposure: bool = True) -> DataFrame:
    """Every ``hw_update`` that lowers a replica's HW (below ``old`` or its previous ``new``),
    with reason, role, and ``below_exposed`` (a leader going below the max leader HW so far;
    ``exposure=False`` leaves that column, and the second window it costs, out)."""
    ev = typed(events)
    upd = (_valid_k(_ev(ev, "hw_update"))
           .where(F.col("replica").isNotNull() & F.col("new_n").isNotNull()))
    w = Window.partitionBy(*K, "replica").orderBy("seq")
    w_max = Window.partitionBy(*K).orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    lhw = F.when(F.col("role") == "leader", F.col("new_n"))
    df = upd.select(*K, "replica", "seq", "ts_us", "reason", "role",
                    F.col("old_n").alias("old"), F.col("new_n").alias("new"),
                    F.lag("new_n").over(w).alias("prev_new"),
                    *([F.max(lhw).over(w_max).alias("max_leader_hw_before")] if exposure else []))
    df = df.where(
        (F.col("old").isNotNull() & (F.col("new") < F.col("old")))
        | (F.col("prev_new").isNotNull() & (F.col("new") < F.col("prev_new"))))
    if not exposure:
        return df
    return df.withColumn("below_exposed", F.coalesce(
        (F.col("role") == "leader") & (F.col("new") < F.col("max_leader_hw_before")),
        F.lit(False)))


def log_divergence(events: DataFrame) -> DataFrame:
    """Offsets of a partition where two replicas' final logs differ below both HWs.

    Per (K, offset) over the records inside their replica's [lso, hw): the replicas holding a
    record there and the set of values; the replicas *covering* the offset are counted from
    the (broadcast, small) list of spans of the partition, and a covering replica without a
    record adds MISSING. Aggregates keyed by a superset of K: no exchange, no exploded ranges.
    """
    reps = final_replicas(events).where(F.col("hw") > F.col("lso"))
    spans = F.broadcast(reps.groupBy(*K).agg(
        F.collect_list(F.struct("lso", "hw")).alias("_spans")))
    recs = (final_records(events)
            .join(F.broadcast(reps.select(*K, "replica", "lso", "hw")), [*K, "replica"])
            .where((F.col("offset") >= F.col("lso")) & (F.col("offset") < F.col("hw"))))
    per_offset = recs.groupBy(*K, "offset").agg(
        F.size(F.collect_set("replica")).alias("with_record"),
        F.collect_set("value").alias("held"))
    covering = F.size(F.filter(
        "_spans", lambda s: (s["lso"] <= F.col("offset")) & (F.col("offset") < s["hw"])))
    df = per_offset.join(spans, K).select(*K, "offset", covering.alias("replicas"),
                                          "with_record", "held")
    values = F.array_sort(F.when(F.col("with_record") < F.col("replicas"),
                                 F.array_union("held", F.array(F.lit(MISSING))))
                          .otherwise(F.col("held")))
    return (df.select(*K, "offset", "replicas", values.alias("values"))
            .where((F.col("replicas") >= 2) & (F.size("values") > 1)))


# --------------------------------------------------------------------------- ISR


def isr_states(events: DataFrame) -> DataFrame:
    """The committed ISR after each ``isr_change`` / ``leader_elected`` (K, seq, ts_us,
    isr, prev_isr), prev_isr = the previous state, or ``isr_change.old`` for the first."""
    ev = typed(events)
    rows = _valid_k(_ev(ev, "isr_change", "leader_elected")).select(
        *K, "seq", "ts_us",
        F.array_distinct(F.when(F.col("event") == "isr_change", F.col("new_isr"))
                         .otherwise(F.col("isr"))).alias("isr"),
        F.array_distinct("old_isr").alias("old_isr"),
    ).where(F.col("isr").isNotNull())
    w = Window.partitionBy(*K).orderBy("seq")
    return rows.select(*K, "seq", "ts_us", "isr",
                       F.coalesce(F.lag("isr").over(w), "old_isr").alias("prev_isr"))


def isr_transitions(events: DataFrame) -> DataFrame:
    """One row per replica leaving (shrink) or joining (expand) the ISR, with ``churn``:
    an expand whose previous transition was a shrink at most 60 s earlier."""
    st = isr_states(events)
    shrinks = st.select(*K, "seq", "ts_us", F.explode(F.array_except("prev_isr", "isr"))
                        .alias("replica"), F.lit("shrink").alias("kind"))
    expands = st.select(*K, "seq", "ts_us", F.explode(F.array_except("isr", "prev_isr"))
                        .alias("replica"), F.lit("expand").alias("kind"))
    w = Window.partitionBy(*K, "replica").orderBy("seq")
    df = shrinks.union(expands).select(
        "*", F.lag("kind").over(w).alias("prev_kind"), F.lag("ts_us").over(w).alias("prev_ts"))
    return df.withColumn("churn", F.coalesce(
        (F.col("kind") == "expand") & (F.col("prev_kind") == "shrink")
        & (F.col("ts_us") - F.col("prev_ts") <= ISR_CHURN_WINDOW_US), F.lit(False)))


def isr_intervals(events: DataFrame) -> DataFrame:
    """How long each committed ISR state lasted (until the next state or the trace's end),
    with ``under_min_isr`` (size < effective min ISR) and ``under_replicated`` (< RF)."""
    st = isr_states(events)
    ends = events.groupBy("trace").agg(F.max("ts_us").alias("end_us"))
    w = Window.partitionBy(*K).orderBy("seq")
    df = (st.join(ends, "trace").join(scenario_topics(events), ["trace", "topic"], "left")
          .withColumn("until", F.coalesce(F.lead("ts_us").over(w), F.col("end_us"))))
    dur = F.greatest(F.col("until") - F.col("ts_us"), F.lit(0))
    return df.select(
        *K, "seq", "ts_us", "until", "isr", dur.alias("duration_us"),
        (F.size("isr") < F.coalesce("eff_min_isr", F.lit(1))).alias("under_min_isr"),
        F.coalesce(F.size("isr") < F.col("rf"), F.lit(False)).alias("under_replicated"),
    )


def isr_churn_per_minute(events: DataFrame) -> DataFrame:
    """Per partition and minute of virtual time: shrinks, expands, churns (flaps)."""
    tr = isr_transitions(events).withColumn(
        "minute", F.floor(F.col("ts_us") / F.lit(60_000_000)).cast("long"))
    return tr.groupBy(*K, "minute").agg(
        F.sum(F.when(F.col("kind") == "shrink", 1).otherwise(0)).alias("shrinks"),
        F.sum(F.when(F.col("kind") == "expand", 1).otherwise(0)).alias("expands"),
        F.sum(F.col("churn").cast("int")).alias("churns"),
    )


def partition_health(events: DataFrame) -> DataFrame:
    """Per partition: ms under min ISR, ms under-replicated, ISR churns, shrinks."""
    iv = isr_intervals(events).groupBy(*K).agg(
        F.sum(F.when(F.col("under_min_isr"), F.col("duration_us")).otherwise(0))
        .alias("under_min_isr_us"),
        F.sum(F.when(F.col("under_replicated"), F.col("duration_us")).otherwise(0))
        .alias("under_replicated_us"))
    tr = isr_transitions(events).groupBy(*K).agg(
        F.sum(F.col("churn").cast("int")).alias("churns"),
        F.sum(F.when(F.col("kind") == "shrink", 1).otherwise(0)).alias("shrinks"))
    return (iv.join(tr, K, "full").na.fill(0)
            .withColumn("under_min_isr_ms", F.floor(F.col("under_min_isr_us") / 1000))
            .withColumn("under_replicated_ms", F.floor(F.col("under_replicated_us") / 1000)))


def top_churning_replicas(events: DataFrame, n: int = 20) -> DataFrame:
    """Replicas with the most churns (over all traces read)."""
    return (isr_transitions(events).where("churn")
            .groupBy("topic", "partition", "replica").agg(F.count(F.lit(1)).alias("churns"),
                                                          F.count_distinct("trace").alias("traces"))
            .orderBy(F.desc("churns"), "topic", "partition", "replica").limit(n))


# --------------------------------------------------------------------------- counts


def anomaly_parts(events: DataFrame, keep: list[DataFrame] | None = None
                  ) -> list[DataFrame]:
    """DataFrames of (trace, topic, partition, anomaly, n), one per anomaly family (see
    ``anomaly_table``). Three intermediates are persisted, each read by two families: the final
    source (one row per partition), the committed log and the first ack per value; they are
    appended to ``keep`` so the caller can unpersist them when done.

    On events partitioned by K (``load.partition_events``) every family is one scan of the
    cached events plus sorts/aggregates within partitions: none exchanges the large tables.
    """
    source = final_source(events).persist()
    committed = committed_records(events, source).persist()
    acked = first_acks(events).persist()
    if keep is not None:
        keep += [source, committed, acked]

    def count(df: DataFrame, name: str) -> DataFrame:
        return df.groupBy(*K).agg(F.count(F.lit(1)).alias("n")).select(
            *K, F.lit(name).alias("anomaly"), "n")

    polls = poll_chains(events)
    return [
        write_verdicts(events, source, committed, acked).where(F.col("verdict").isNotNull())
        .groupBy(*K, F.col("verdict").alias("anomaly")).agg(F.count(F.lit(1)).alias("n")),
        count(visible_regressions(events, source, committed).where("hw_regression_visible"),
              "hw_regression_visible"),
        count(read_uncommitted(events).where("read_uncommitted"), "read_uncommitted"),
        polls.groupBy(*K).agg(F.sum(F.col("poll_skip").cast("long")).alias("poll_skip"),
                              F.sum(F.col("nonmonotonic_poll").cast("long"))
                              .alias("nonmonotonic_poll"))
        .select(*K, F.explode(F.map_from_arrays(
            F.array(F.lit("poll_skip"), F.lit("nonmonotonic_poll")),
            F.array("poll_skip", "nonmonotonic_poll"))).alias("anomaly", "n"))
        .where(F.col("n") > 0),
        count(hw_regressions(events, exposure=False), "hw_regression_replica"),
        count(log_divergence(events), "log_divergence"),
        count(nonmonotonic_sends(events, acked), "nonmonotonic_send"),
        count(duplicates(events, committed), "duplicate"),
        count(source.where(F.col("offline") | F.col("not_converged")), "no_convergence"),
        count(isr_transitions(events).where("churn"), "isr_churn"),
        isr_intervals(events).where("under_min_isr").groupBy(*K)
        .agg(F.sum("duration_us").alias("n"))
        .select(*K, F.lit("under_min_isr").alias("anomaly"), "n"),
    ]


TABLE_SCHEMA: Final = "trace string, topic string, partition int, anomaly string, n long"


def anomaly_table(events: DataFrame, *, lazy: bool = False) -> DataFrame:
    """(trace, topic, partition, anomaly, n): the checker's counts per partition.

    ``n`` is a count, except ``under_min_isr`` where it is microseconds (convert the per-trace
    sum with // 1000, as the checker does). By default each family is computed as its own job
    and the (small) result rebuilt as a DataFrame; ``lazy=True`` returns the plain union (and
    leaves the intermediates persisted), whose plan is large enough that code generation
    dominates on small inputs.
    """
    if lazy:
        return reduce(DataFrame.unionByName, anomaly_parts(events))
    keep: list[DataFrame] = []
    try:
        rows = [tuple(r) for part in anomaly_parts(events, keep) for r in part.collect()]
    finally:
        for df in keep:
            df.unpersist()
    return events.sparkSession.createDataFrame(rows, TABLE_SCHEMA)


def anomaly_counts(events: DataFrame, traces: list[str] | None = None
                   ) -> dict[str, dict[str, int]]:
    """Per trace: every anomaly name of ``ANOMALIES`` → count (zeros included).

    Each family is collected on its own: one union of all of them makes a plan so large that
    code generation dominates (measured: 78 s against 12 s for ten short traces). ``events``
    should be persisted by the caller (``load_traces`` does it).
    """
    keep: list[DataFrame] = []
    try:
        rows = []
        for part in anomaly_parts(events, keep):
            rows += part.groupBy("trace", "anomaly").agg(F.sum("n").alias("n")).collect()
        names = traces if traces is not None else [
            r["trace"] for r in events.select("trace").distinct().collect()]
    finally:
        for df in keep:
            df.unpersist()
    out: dict[str, dict[str, int]] = {t: dict.fromkeys(ANOMALIES, 0) for t in sorted(names)}
    for r in rows:
        n = int(r["n"])
        out.setdefault(r["trace"], dict.fromkeys(ANOMALIES, 0))[r["anomaly"]] = (
            n // 1000 if r["anomaly"] == "under_min_isr" else n)
    return out


def anomaly_wide(table: DataFrame, meta: DataFrame) -> DataFrame:
    """One row per trace with a column per anomaly (under_min_isr in ms) and its knobs."""
    sums = table.groupBy("trace").pivot("anomaly", list(ANOMALIES)).agg(F.sum("n"))
    sums = sums.na.fill(0, list(ANOMALIES)).withColumn(
        "under_min_isr", F.floor(F.col("under_min_isr") / 1000).cast("long"))
    return meta.join(sums, "trace", "left").na.fill(0, list(ANOMALIES))


ROLLUP_KNOBS: Final = ("protocol", "acks", "min_insync_replicas", "unclean", "fault_kinds")


def campaign_rollup(wide: DataFrame, knob: str) -> DataFrame:
    """Per value of one knob: traces, total of every anomaly, traces with any lost write."""
    aggs: list[Any] = [F.count(F.lit(1)).alias("traces")]
    aggs += [F.sum(a).alias(a) for a in ANOMALIES]
    aggs.append(F.sum((F.col("lost_acked_write") > 0).cast("int")).alias("traces_losing_acked"))
    return (wide.groupBy(F.col(knob).cast("string").alias("value")).agg(*aggs)
            .select(F.lit(knob).alias("knob"), "*").orderBy("value"))
