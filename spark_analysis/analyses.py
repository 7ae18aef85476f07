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
* write anomalies — ``write_verdicts``: first ack per value, anti-joined with the committed
  records; ``expired`` below the source replica's logStartOffset;
* read anomalies — ``consume_verdicts``: running max of leader HWs (``read_uncommitted``),
  join with the committed records (``hw_regression_visible``), ``lag`` per consumer chain
  split at each ``rebalance`` of its group (``poll_skip``/``nonmonotonic_poll``);
* ISR — ``isr_states`` (committed ISR after each ``isr_change``/``leader_elected``),
  ``isr_transitions`` (shrinks/expands by ``array_except`` with the previous state) and
  ``isr_intervals`` (time per state, ``lead`` of the next state's ``ts_us``).

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
        F.col("protocol").alias("run_protocol"), "fault_plan")
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
    src = source.where(F.col("source").isNotNull()).select(
        *K, F.col("source").alias("replica"), "src_hw", "src_lso")
    return (final_records(events).join(src, [*K, "replica"])
            .where((F.col("offset") >= F.col("src_lso")) & (F.col("offset") < F.col("src_hw")))
            .select(*K, "offset", "value").distinct())


# --------------------------------------------------------------------------- writes


def first_acks(events: DataFrame) -> DataFrame:
    """The first ``produce_ack`` (by seq) of every value, acks != "0", offset >= 0."""
    acks = (_valid_k(_ev(events, "produce_ack"))
            .where(F.col("offset").isNotNull() & (F.col("offset") >= 0))
            .select(*K, _value_n().alias("value"), "offset", _acks_n().alias("acks"),
                    "producer", "seq", "ts_us")
            .where(F.col("acks") != "0"))
    w = Window.partitionBy(*K, "value").orderBy("seq")
    return acks.withColumn("rk", F.row_number().over(w)).where("rk = 1").drop("rk")


def write_verdicts(events: DataFrame, source: DataFrame, committed: DataFrame) -> DataFrame:
    """Per acked record: verdict ``lost_acked_write``/``lost_acked_uncommitted``/``expired``
    or null (present in the final committed log). Partitions without final logs are left out.
    """
    src = source.where(F.col("source").isNotNull()).select(*K, "src_hw", "src_lso")
    present = committed.select(*K, "offset", "value", F.lit(True).alias("present"))
    df = first_acks(events).join(src, K).join(present, [*K, "offset", "value"], "left")
    verdict = (
        F.when(F.col("offset") < F.col("src_lso"), F.lit("expired"))
        .when(F.col("present").isNull() & (F.col("acks") == "all"), F.lit("lost_acked_write"))
        .when(F.col("present").isNull(), F.lit("lost_acked_uncommitted"))
    )
    return df.select(*K, "value", "offset", "acks", "producer", "seq", "ts_us", "src_hw",
                     "src_lso", verdict.alias("verdict"))


def nonmonotonic_sends(events: DataFrame) -> DataFrame:
    """Acked sends of one producer to one partition, in send order, landing lower than the
    previous one. Send order = first ``produce_send`` seq of the value, else the ack's seq."""
    sends = (_valid_k(_ev(events, "produce_send")).where(F.col("value").isNotNull())
             .groupBy(*K, "value").agg(F.min("seq").alias("send_seq")))
    acks = first_acks(events).join(sends, [*K, "value"], "left").withColumn(
        "order_key", F.coalesce("send_seq", "seq"))
    w = Window.partitionBy(*K, "producer").orderBy("order_key", "seq")
    return (acks.withColumn("prev_offset", F.lag("offset").over(w))
            .where(F.col("offset") < F.col("prev_offset")))


def duplicates(events: DataFrame, committed: DataFrame) -> DataFrame:
    """Values seen at more than one offset of a partition (acks, consumes, committed log)."""
    seen = (
        _valid_k(_ev(events, "produce_ack", "consume"))
        .where(F.col("value").isNotNull() & F.col("offset").isNotNull())
        .where((F.col("event") == "consume") | (F.col("offset") >= 0))
        .select(*K, "value", "offset")
        .union(committed.where(F.col("value") != MISSING).select(*K, "value", "offset"))
    )
    return (seen.groupBy(*K, "value").agg(F.array_sort(F.collect_set("offset")).alias("offsets"))
            .where(F.size("offsets") > 1))


# --------------------------------------------------------------------------- reads


def consume_verdicts(events: DataFrame, source: DataFrame, committed: DataFrame) -> DataFrame:
    """Per ``consume``: flags read_uncommitted, hw_regression_visible, poll_skip,
    nonmonotonic_poll (see docs/anomalies.md for each)."""
    ev = typed(events)
    leader_hw = (_valid_k(_ev(ev, "hw_update"))
                 .where(F.col("replica").isNotNull() & F.col("new_n").isNotNull()
                        & (F.col("role") == "leader"))
                 .select(*K, "seq", F.col("new_n").alias("lhw"),
                         F.lit(None).cast("bigint").alias("offset")))
    cons = (_valid_k(_ev(ev, "consume")).where(F.col("offset").isNotNull())
            .select(*K, "seq", "ts_us", "group", "consumer", "offset", "hw",
                    _value_n().alias("value")))
    both = cons.select(*K, "seq", F.lit(None).cast("bigint").alias("lhw"), "offset").union(
        leader_hw)
    w_max = Window.partitionBy(*K).orderBy("seq").rowsBetween(Window.unboundedPreceding, 0)
    maxhw = (both.withColumn("max_leader_hw",
                             F.greatest(F.coalesce(F.max("lhw").over(w_max), F.lit(0)), F.lit(0)))
             .where(F.col("lhw").isNull()).select(*K, "seq", "max_leader_hw"))

    reb = (_ev(events, "rebalance").select("trace", "group", "seq", F.lit(1).alias("is_reb")))
    chain = cons.select("trace", "group", "seq", F.lit(0).alias("is_reb")).union(reb)
    w_gen = Window.partitionBy("trace", "group").orderBy("seq").rowsBetween(
        Window.unboundedPreceding, 0)
    gens = (chain.withColumn("gen", F.sum("is_reb").over(w_gen)).where("is_reb = 0")
            .select("trace", "seq", "gen"))

    src = source.where(F.col("source").isNotNull()).select(*K, "src_hw", "src_lso")
    present = committed.select(*K, "offset", "value", F.lit(True).alias("present"))
    df = (cons.join(maxhw, [*K, "seq"]).join(gens, ["trace", "seq"])
          .join(src, K, "left").join(present, [*K, "offset", "value"], "left"))
    w_chain = Window.partitionBy("trace", "group", "consumer", "topic", "partition", "gen"
                                 ).orderBy("seq")
    df = df.withColumn("prev_offset", F.lag("offset").over(w_chain))
    has_src = F.col("src_hw").isNotNull()
    rewritten = has_src & (F.col("offset") >= F.col("src_lso")) & F.col("present").isNull()
    retracted = has_src & F.col("hw").isNotNull() & (F.col("hw") > F.col("src_hw"))
    return df.select(
        *K, "seq", "ts_us", "group", "consumer", "offset", "value", "hw", "max_leader_hw",
        "prev_offset", "src_hw",
        ((F.col("offset") >= F.col("max_leader_hw"))
         | (F.col("hw").isNotNull() & (F.col("offset") >= F.col("hw")))).alias(
            "read_uncommitted"),
        (rewritten | retracted).alias("hw_regression_visible"),
        F.coalesce(F.col("offset") <= F.col("prev_offset"), F.lit(False)).alias(
            "nonmonotonic_poll"),
        F.coalesce(F.col("offset") > F.col("prev_offset") + 1, F.lit(False)).alias("poll_skip"),
    )


# --------------------------------------------------------------------------- replicas


def hw_regressions(events: DataFrame) -> DataFrame:
    """Every ``hw_update`` that lowers a replica's HW (below ``old`` or its previous ``new``),
    with reason, role, and ``below_exposed`` (a leader going below the max leader HW so far)."""
    ev = typed(events)
    upd = (_valid_k(_ev(ev, "hw_update"))
           .where(F.col("replica").isNotNull() & F.col("new_n").isNotNull()))
    w = Window.partitionBy(*K, "replica").orderBy("seq")
    w_max = Window.partitionBy(*K).orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    lhw = F.when(F.col("role") == "leader", F.col("new_n"))
    df = upd.select(*K, "replica", "seq", "ts_us", "reason", "role",
                    F.col("old_n").alias("old"), F.col("new_n").alias("new"),
                    F.lag("new_n").over(w).alias("prev_new"),
                    F.max(lhw).over(w_max).alias("max_leader_hw_before"))
    return df.where(
        (F.col("old").isNotNull() & (F.col("new") < F.col("old")))
        | (F.col("prev_new").isNotNull() & (F.col("new") < F.col("prev_new")))
    ).withColumn("below_exposed", F.coalesce(
        (F.col("role") == "leader") & (F.col("new") < F.col("max_leader_hw_before")),
        F.lit(False)))


def log_divergence(events: DataFrame) -> DataFrame:
    """Offsets of a partition where two replicas' final logs differ below both HWs."""
    reps = final_replicas(events).where(F.col("hw") > F.col("lso"))
    cover = reps.select(*K, "replica",
                        F.explode(F.sequence("lso", F.col("hw") - 1)).alias("offset"))
    vals = cover.join(final_records(events), [*K, "replica", "offset"], "left").select(
        *K, "replica", "offset", F.coalesce("value", F.lit(MISSING)).alias("value"))
    return (vals.groupBy(*K, "offset").agg(
        F.count_distinct("replica").alias("replicas"),
        F.array_sort(F.collect_set("value")).alias("values"))
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


def anomaly_parts(events: DataFrame) -> list[DataFrame]:
    """DataFrames of (trace, topic, partition, anomaly, n), one per anomaly family (see
    ``anomaly_table``). The final source and committed log are persisted: every write and read
    verdict joins them (they are small: one row per partition, one per committed record).
    """
    source = final_source(events).persist()
    committed = committed_records(events, source).persist()

    def count(df: DataFrame, name: str) -> DataFrame:
        return df.groupBy(*K).agg(F.count(F.lit(1)).alias("n")).select(
            *K, F.lit(name).alias("anomaly"), "n")

    wv = write_verdicts(events, source, committed)
    cv = consume_verdicts(events, source, committed)
    flags = ("hw_regression_visible", "read_uncommitted", "poll_skip", "nonmonotonic_poll")
    parts = [
        # one job per family: the verdict column names the anomaly
        wv.where(F.col("verdict").isNotNull()).groupBy(*K, F.col("verdict").alias("anomaly"))
        .agg(F.count(F.lit(1)).alias("n")),
        cv.select(*K, F.explode(F.array(*[F.when(F.col(n), F.lit(n)) for n in flags]))
                  .alias("anomaly")).where(F.col("anomaly").isNotNull())
        .groupBy(*K, "anomaly").agg(F.count(F.lit(1)).alias("n")),
    ]
    parts += [
        count(hw_regressions(events), "hw_regression_replica"),
        count(log_divergence(events), "log_divergence"),
        count(nonmonotonic_sends(events), "nonmonotonic_send"),
        count(duplicates(events, committed), "duplicate"),
        count(source.where(F.col("offline") | F.col("not_converged")), "no_convergence"),
        count(isr_transitions(events).where("churn"), "isr_churn"),
        isr_intervals(events).where("under_min_isr").groupBy(*K)
        .agg(F.sum("duration_us").alias("n"))
        .select(*K, F.lit("under_min_isr").alias("anomaly"), "n"),
    ]
    return parts


TABLE_SCHEMA: Final = "trace string, topic string, partition int, anomaly string, n long"


def anomaly_table(events: DataFrame, *, lazy: bool = False) -> DataFrame:
    """(trace, topic, partition, anomaly, n): the checker's counts per partition.

    ``n`` is a count, except ``under_min_isr`` where it is microseconds (convert the per-trace
    sum with // 1000, as the checker does). By default each anomaly is computed as its own job
    and the (small) result rebuilt as a DataFrame; ``lazy=True`` returns the plain union,
    whose plan is large enough that code generation dominates on small inputs.
    """
    parts = anomaly_parts(events)
    if lazy:
        return reduce(DataFrame.unionByName, parts)
    rows = [tuple(r) for part in parts for r in part.collect()]
    return events.sparkSession.createDataFrame(rows, TABLE_SCHEMA)


def anomaly_counts(events: DataFrame, traces: list[str] | None = None
                   ) -> dict[str, dict[str, int]]:
    """Per trace: every anomaly name of ``ANOMALIES`` → count (zeros included).

    Each anomaly is collected on its own: one union of all of them makes a plan so large that
    code generation dominates (measured: 78 s against 12 s for ten short traces).
    """
    events = events.persist()
    try:
        rows = []
        for part in anomaly_parts(events):
            rows += part.groupBy("trace", "anomaly").agg(F.sum("n").alias("n")).collect()
        names = traces if traces is not None else [
            r["trace"] for r in events.select("trace").distinct().collect()]
    finally:
        events.unpersist()
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
