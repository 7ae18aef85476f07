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

Views that are not anomaly counts (HW regressions per replica, churn per minute, time
under-replicated, top churning replicas, roll-ups by knob) are for reports and campaigns.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from spark_analysis.load import SCENARIO_SCHEMA, Loaded
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


def _ev(df: DataFrame, *names: str) -> DataFrame:
    return df.where(F.col("event").isin(*names))


def _valid_k(df: DataFrame) -> DataFrame:
    return df.where(F.col("topic").isNotNull() & F.col("partition").isNotNull())


def _value_n(col: str = "value") -> Column:
    """Record value with null as the MISSING sentinel (as the checker keys it)."""
    return F.coalesce(F.col(col), F.lit(MISSING))


def _acks_n() -> Column:
    """acks normalised: null and "-1" are "all" (Kafka's default since 3.0)."""
    return F.when(F.col("acks").isNull() | (F.col("acks") == "-1"), F.lit("all")).otherwise(
        F.col("acks"))


def _stable(sql: str) -> Column:
    """A SQL expression with higher-order functions whose lambda variables keep the names
    written in it. PySpark's own ``F.filter(col, lambda x: ...)`` names each variable afresh
    (``x_3``, then ``x_11`` in the next analysis: one counter per JVM), the name goes into
    the generated Java code, and so every analysis compiled those classes again (Janino,
    then the JIT from the interpreter up): 8 of the 10 new sources of a third pass over the
    same traces (2026-11-28, ``docs/performance.md``). Column names in backticks where SQL
    has a keyword of that name."""
    return F.expr(sql)


def _long_counts(df: DataFrame, names: tuple[str, ...]) -> DataFrame:
    """(K, one column per name) -> (K, anomaly, n) for the names with n > 0."""
    pairs = F.explode(F.map_from_arrays(F.array(*[F.lit(n) for n in names]),
                                        F.array(*[F.col(n).cast("long") for n in names])))
    return df.select(*K, pairs.alias("anomaly", "n")).where(F.col("n") > 0)


# --------------------------------------------------------------------------- per trace


def trace_meta(data: Loaded) -> DataFrame:
    """One row per trace: scenario name, seed, protocol, knobs, status, events, end time."""
    side = data.side
    start = _ev(side, "run_start").select(
        "tid", "seed", F.from_json("scenario", SCENARIO_SCHEMA).alias("sc"),
        F.col("protocol").alias("run_protocol"))
    end = _ev(side, "run_end").select("tid", F.col("status"))
    faults = (_ev(side, "fault").where(F.col("fault").isNotNull())
              .groupBy("tid").agg(F.array_sort(F.collect_set("fault")).alias("fault_kinds")))
    return (
        data.traces.join(start, "tid", "left").join(end, "tid", "left")
        .join(faults, "tid", "left")
        .select(
            "trace", "events", "end_us", "seed", "status",
            F.col("sc.name").alias("scenario"),
            F.coalesce("run_protocol", "sc.protocol").alias("protocol"),
            F.array_join(F.array_sort(F.array_distinct(
                _stable("transform(sc.producers, p -> p.acks)"))), ",").alias("acks"),
            F.array_min(_stable("transform(sc.topics, t -> t.`min.insync.replicas`)"))
            .alias("min_insync_replicas"),
            _stable("exists(sc.topics, t -> coalesce(t.`unclean.leader.election.enable`, "
                    "false))").alias("unclean"),
            F.coalesce(F.array_join("fault_kinds", ","), F.lit("")).alias("fault_kinds"),
            F.col("sc.expect").alias("expect"),
            F.coalesce(F.col("sc.imported"), F.lit(False)).alias("imported"),
        )
    )


def scenario_topics(side: DataFrame) -> DataFrame:
    """Per trace and topic: replication factor and effective min ISR (min(minISR, RF))."""
    topics = _ev(side, "run_start").select(
        "tid", F.explode(F.from_json("scenario", SCENARIO_SCHEMA)["topics"]).alias("t"))
    min_isr = F.coalesce(F.col("t")["min.insync.replicas"], F.lit(1))
    rf = F.col("t")["replication.factor"]
    return topics.where(F.col("t")["name"].isNotNull()).select(
        "tid", F.col("t")["name"].alias("topic"), rf.alias("rf"),
        F.when(rf.isNull(), min_isr).otherwise(F.least(min_isr, rf)).alias("eff_min_isr"),
    ).dropDuplicates(["tid", "topic"])


# --------------------------------------------------------------------------- final logs


def _final_logs(side: DataFrame) -> DataFrame:
    return _valid_k(_ev(side, "final_log")).where(F.col("replica").isNotNull())


def final_replicas(side: DataFrame, *, epochs: bool = True) -> DataFrame:
    """Per replica with a ``final_log``: HW, LEO, logStartOffset and (with ``epochs``)
    ``last_epoch`` (the largest epoch of its records, -1 when none), max over its events."""
    marks = [F.max(F.coalesce("hw", F.lit(0))).alias("hw"),
             F.max(F.coalesce("leo", F.lit(0))).alias("leo"),
             F.max(F.coalesce("log_start_offset", F.lit(0))).alias("lso")]
    if epochs:
        last = _stable("transform(filter(records, r -> size(r) >= 2), "
                       "r -> try_cast(try_element_at(r, 3) AS int))")
        marks.append(F.max(F.coalesce(F.array_max(last), F.lit(-1))).alias("last_epoch"))
    return _final_logs(side).groupBy(*K, "replica").agg(*marks)


def final_records(side: DataFrame, replicas: DataFrame | None = None) -> DataFrame:
    """Every ``[offset, value, epoch]`` of every ``final_log``: (K, replica, offset, value,
    then the columns of ``replicas``); with ``replicas`` (K, replica, ...: small, broadcast),
    only the logs of those replicas, chosen before their records are exploded."""
    logs = _final_logs(side).select(*K, "replica", "records")
    extra: list[str] = []
    if replicas is not None:
        logs = logs.join(F.broadcast(replicas), [*K, "replica"])
        extra = [c for c in replicas.columns if c not in (*K, "replica")]
    rec = logs.select(*K, "replica", *extra, F.explode("records").alias("r")).where(
        F.size("r") >= 2)
    return rec.select(
        *K, "replica", F.try_element_at("r", F.lit(1)).try_cast("bigint").alias("offset"),
        F.coalesce(F.try_element_at("r", F.lit(2)), F.lit(MISSING)).alias("value"), *extra,
    ).where(F.col("offset").isNotNull())


def final_source(side: DataFrame) -> DataFrame:
    """Per partition: the replica defining the final committed log, its HW/LSO, liveness.

    Columns: ``SOURCE_SCHEMA`` (source columns are null when no replica left a ``final_log``).
    """
    lead = (_valid_k(_ev(side, "leader_elected", "partition_offline"))
            .groupBy(*K).agg(F.max_by(F.struct("event", "leader"), "seq").alias("last")))
    lead = lead.select(*K, F.when(
        (F.col("last.event") == "leader_elected") & (F.col("last.leader") >= 0),
        F.col("last.leader")).alias("elected"), F.lit(True).alias("has_leadership"))
    conv = (_valid_k(_ev(side, "convergence")).groupBy(*K).agg(
        (~F.bool_and(F.coalesce("converged", F.lit(False)))).alias("not_converged")))
    reps = final_replicas(side)
    best = reps.withColumn("rk", F.row_number().over(
        Window.partitionBy(*K).orderBy(F.desc("hw"), F.asc("replica")))).where("rk = 1")
    # offline: the replica a recovery would elect (latest last epoch, then longest log)
    recovered = reps.withColumn("rk", F.row_number().over(
        Window.partitionBy(*K).orderBy(F.desc("last_epoch"), F.desc("leo"), F.asc("replica")))
    ).where("rk = 1")
    universe = (lead.select(*K).union(reps.select(*K)).union(conv.select(*K))).distinct()
    df = (universe.join(lead, K, "left").join(conv, K, "left")
          .join(best.select(*K, F.col("replica").alias("best")), K, "left")
          .join(recovered.select(*K, F.col("replica").alias("recovered")), K, "left")
          .join(reps.select(*K, F.col("replica").alias("elected"), F.lit(True).alias("el_log")),
                [*K, "elected"], "left"))
    has_logs = F.col("best").isNotNull()
    offline = F.col("elected").isNull() & (F.col("has_leadership").isNotNull() | has_logs)
    df = df.select(
        *K, "elected", offline.alias("offline"),
        F.coalesce("not_converged", F.lit(False)).alias("not_converged"),
        F.when(F.col("el_log").isNotNull(), F.col("elected"))
        .when(offline, F.col("recovered")).otherwise(F.col("best")).alias("source"),
    )
    # offline: its records are on disk, committed up to its LEO (its HW is a stale checkpoint)
    return df.join(
        reps.select(*K, F.col("replica").alias("source"), "hw", "leo",
                    F.col("lso").alias("src_lso")), [*K, "source"], "left"
    ).select(*K, "elected", "offline", "not_converged", "source",
             F.when(F.col("offline"), F.greatest("hw", "leo")).otherwise(F.col("hw"))
             .alias("src_hw"), "src_lso")


def committed_records(side: DataFrame, source: DataFrame) -> DataFrame:
    """The final committed log: (K, offset, value), source replica, lso <= offset < hw.
    (A value listed twice at one offset appears twice.)"""
    src = source.where(F.col("source").isNotNull()).select(
        *K, F.col("source").alias("replica"), "src_hw", "src_lso")
    return (final_records(side, src)
            .where((F.col("offset") >= F.col("src_lso")) & (F.col("offset") < F.col("src_hw")))
            .select(*K, "offset", "value"))


# --------------------------------------------------------------------------- records


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
    src = F.broadcast(source.where(F.col("source").isNotNull()).select(
        *K, "src_hw", "src_lso", F.lit(True).alias("has_src")))
    acks_code = (F.when(_acks_n() == "0", F.lit(0)).when(_acks_n() == "all", F.lit(2))
                 .otherwise(F.lit(1)))
    event, offset, value = F.col("event"), F.col("offset"), F.col("value")
    # acks and consumes in one scan of the cached events (one filtered scan per kind, unioned,
    # read the cache once per kind), each row keeping its own kind's columns, the others null
    is_ack = (event == "produce_ack") & offset.isNotNull() & (offset >= 0)
    is_cons = (event == "consume") & offset.isNotNull()
    events = _valid_k(data.events)
    ev = events.where(is_ack | is_cons).join(src, K, "left")
    retracted = F.coalesce(F.col("hw") > F.col("src_hw"), F.lit(False))
    has_src = is_cons & F.col("has_src")
    records = ev.select(
        *K, _value_n().alias("value"), "offset",
        F.when(is_ack & (acks_code != 0), F.col("seq")).alias("a_seq"),
        F.when(is_ack, acks_code).alias("a_acks"),
        F.when(is_ack, F.col("producer")).alias("a_prod"),
        value.isNotNull().alias("dup"),
        F.when(is_cons, offset).alias("coff"),
        F.when(has_src, retracted.cast("int")).alias("r1"),
        F.when(has_src, ((offset >= F.col("src_lso")) | retracted).cast("int")).alias("r2"))
    # ``side`` is partitioned as ``events``, so the union keeps it (no exchange below)
    comm = committed_records(data.side, source).select(
        *K, "value", "offset", F.lit(True).alias("committed"),
        (F.col("value") != MISSING).alias("dup"))
    rows = records.unionByName(comm, allowMissingColumns=True)
    # (K, value, offset): what happened at this offset to this value
    at = rows.groupBy("value", *K, "offset").agg(
        F.min("a_seq").alias("a_seq"), F.min_by("a_acks", "a_seq").alias("a_acks"),
        F.min_by("a_prod", "a_seq").alias("a_prod"),
        F.min("coff").alias("coff"),
        F.coalesce(F.max("committed"), F.lit(False)).alias("committed"),
        F.max("dup").alias("dup"),
        F.sum("r1").alias("r1"), F.sum("r2").alias("r2"))
    at = at.select(
        *K, "value", "offset", "a_seq", "a_acks", "a_prod", "coff", "committed",
        F.when(F.col("dup"), F.col("offset")).alias("doff"),
        F.coalesce(F.when(F.col("committed"), F.col("r1")).otherwise(F.col("r2")), F.lit(0))
        .alias("visible"))
    # the sends go straight to the per-value aggregate: a send has no offset, so at the
    # offset level it met nothing but the value's other sends (their own group, half of that
    # aggregate's groups); every aggregate below is a min, min_by or sum, the same over the
    # sends as over their groups' results
    sends = events.where((event == "produce_send") & value.isNotNull()).select(
        *K, "value", F.col("seq").alias("send_seq"), F.col("producer").alias("s_prod"),
        acks_code.alias("s_acks"), F.lit(0).cast("long").alias("visible"))
    at = at.unionByName(sends, allowMissingColumns=True)
    # (K, value): the value's first ack (the one of lowest seq over its offsets), offsets,
    # visible regressions
    per_value = at.groupBy("value", *K).agg(
        F.min("a_seq").alias("a_seq"), F.min_by("offset", "a_seq").alias("a_off"),
        F.min_by("a_acks", "a_seq").alias("a_acks"), F.min_by("a_prod", "a_seq").alias("a_prod"),
        F.min_by("committed", "a_seq").alias("a_comm"),
        F.min("send_seq").alias("send_seq"), F.min_by("s_prod", "send_seq").alias("s_prod"),
        F.min_by("s_acks", "send_seq").alias("s_acks"),
        F.min("coff").alias("cmin"), F.min("doff").alias("dmin"), F.max("doff").alias("dmax"),
        F.sum("visible").alias("visible"))
    per_value = per_value.join(src, K, "left")
    acked = F.col("a_seq").isNotNull()
    verdict = (
        F.when(~acked | F.col("has_src").isNull(), F.lit(None).cast("string"))
        .when(F.col("a_off") < F.col("src_lso"), F.lit("expired"))
        .when(~F.col("a_comm") & (F.col("a_acks") == 2), F.lit("lost_acked_write"))
        .when(~F.col("a_comm"), F.lit("lost_acked_uncommitted"))
    )
    # where a send landed: its ack, or — its ack lost — the lowest offset a read placed it at
    placed = ~acked & (F.col("s_acks") != 0) & F.col("cmin").isNotNull()
    position = F.when(acked, F.col("a_off")).when(placed, F.col("cmin"))
    per_value = per_value.select(
        "*", position.alias("pos"),
        F.when(acked, F.col("a_prod")).otherwise(F.col("s_prod")).alias("pos_producer"))
    w = (Window.partitionBy(*K, F.col("pos").isNull(), F.col("pos_producer"))
         .orderBy(F.coalesce("send_seq", "a_seq"), F.col("a_seq")))
    prev = F.lag("pos").over(w)
    return per_value.select(
        *K, "value", "visible", verdict.alias("verdict"),
        F.coalesce(F.col("dmin") < F.col("dmax"), F.lit(False)).alias("duplicate"),
        F.coalesce(F.col("pos") < prev, F.lit(False)).alias("nonmonotonic_send"))


def record_counts(verdicts: DataFrame) -> DataFrame:
    """(K, anomaly, n) of ``RECORD_ANOMALIES`` from ``record_verdicts``."""
    def n(cond: Column) -> Column:
        return F.sum(cond.cast("long"))

    sums = verdicts.groupBy(*K).agg(
        *[n(F.coalesce(F.col("verdict") == v, F.lit(False))).alias(v)
          for v in ("lost_acked_write", "lost_acked_uncommitted", "expired")],
        n(F.col("duplicate")).alias("duplicate"),
        n(F.col("nonmonotonic_send")).alias("nonmonotonic_send"),
        F.sum("visible").alias("hw_regression_visible"))
    return _long_counts(sums, RECORD_ANOMALIES)


# --------------------------------------------------------------------------- order


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
    # one scan of the cached events for both kinds (as in ``record_verdicts``); each row
    # keeps only its kind's columns, the others null, as two selects unioned would
    event = F.col("event")
    is_hw = (event == "hw_update") & F.col("replica").isNotNull() & F.col("new_n").isNotNull()
    is_cons = (event == "consume") & F.col("offset").isNotNull()
    rows = _valid_k(data.events).where(is_hw | is_cons).select(
        *K, "seq", "ts_us", is_hw.alias("is_hw"),
        *[F.when(is_hw, F.col(c)).alias(c) for c in ("replica", "reason", "role")],
        F.when(is_hw, F.col("old_n")).alias("old"), F.when(is_hw, F.col("new_n")).alias("new"),
        F.when(is_hw & (F.col("role") == "leader"), F.col("new_n")).alias("lhw"),
        *[F.when(~is_hw, F.col(c)).alias(c) for c in ("group", "consumer", "offset", "hw")],
        F.when(~is_hw, _value_n()).alias("value"))
    # a replica deleted from its broker (a reassignment removed it) starts a new HW history
    # if it is created there again: its hw rows are split by how many deletions precede
    # them (``gen``, as consumer chains are below; few rows: broadcast)
    dels = F.broadcast(
        _valid_k(_ev(data.side, "replica_deleted")).where(F.col("replica").isNotNull())
        .groupBy(*K, "replica").agg(F.collect_list("seq").alias("_dels"))
        .select(*[F.col(c).alias(f"_d{c}") for c in (*K, "replica")], "_dels"))
    rows = rows.join(dels, (rows["tid"] == dels["_dtid"]) & (rows["topic"] == dels["_dtopic"])
                     & (rows["partition"] == dels["_dpartition"])
                     & (rows["replica"] == dels["_dreplica"]), "left")
    # the ends of chains: a consumer's assignments, and its process stopping (a consumer's
    # node is "consumer-" + its name: traces.checker.CONSUMER_NODE_PREFIX)
    crashes = (_ev(data.side, "node_crash")
               .where(F.col("node").startswith(CONSUMER_NODE_PREFIX))
               .select("tid", F.expr(f"substring(node, {len(CONSUMER_NODE_PREFIX) + 1})")
                       .alias("consumer"),
                       F.struct(F.col("seq").alias("s"), F.lit(True).alias("e"),
                                F.lit(None).cast("array<int>").alias("ps")).alias("_a")))
    asg = F.broadcast(
        _ev(data.side, "assignment")
        .select("tid", "consumer",
                F.struct(F.col("seq").alias("s"),
                         (F.coalesce(F.col("protocol"), F.lit("eager")) == "eager").alias("e"),
                         F.col("partitions").alias("ps")).alias("_a"))
        .unionByName(crashes)
        .groupBy("tid", "consumer").agg(F.collect_list("_a").alias("_asgs"))
        .select(F.col("tid").alias("_at"), F.col("consumer").alias("_ac"), "_asgs"))
    rows = rows.join(asg, ~rows["is_hw"] & (rows["tid"] == asg["_at"])
                     & rows["consumer"].eqNullSafe(asg["_ac"]), "left")

    # the assignments (and crashes) before the row that end its chain (``_stable``)
    ends_chain = _stable("size(filter(_asgs, a -> a.s < seq AND (a.e OR NOT coalesce("
                         "array_contains(a.ps, `partition`), false))))")
    gen = (F.when(F.col("is_hw"), F.when(F.col("_dels").isNull(), F.lit(0)).otherwise(
               _stable("size(filter(_dels, d -> d < seq))")))
           .when(F.col("_asgs").isNull(), F.lit(0))
           .otherwise(ends_chain))
    rows = rows.select(*K, "seq", "ts_us", "replica", "reason", "role", "old", "new", "lhw",
                       "is_hw", "group", "consumer", "offset", "hw", "value", gen.alias("gen"))
    w_before = Window.partitionBy(*K).orderBy("seq").rowsBetween(Window.unboundedPreceding, -1)
    # one window for both lags: an hw_update row has no group/consumer/gen and a consume row
    # no replica, so (K, replica, group, consumer, gen) is (K, replica) for the first and the
    # consumer chain for the second (one sort instead of two)
    w_prev = Window.partitionBy(*K, "replica", "group", "consumer", "gen").orderBy("seq")
    df = rows.select("*", F.max("lhw").over(w_before).alias("max_leader_hw_before"),
                     F.lag("new").over(w_prev).alias("prev_new"),
                     F.lag("offset").over(w_prev).alias("prev_offset"))
    is_hw, is_c = F.col("is_hw"), ~F.col("is_hw")
    exposed = F.greatest(F.coalesce("max_leader_hw_before", F.lit(0)), F.lit(0))
    flags = {
        "read_uncommitted": is_c & ((F.col("offset") >= exposed)
                                    | (F.col("hw").isNotNull()
                                       & (F.col("offset") >= F.col("hw")))),
        "poll_skip": is_c & F.coalesce(F.col("offset") > F.col("prev_offset") + 1, F.lit(False)),
        "nonmonotonic_poll": is_c & F.coalesce(F.col("offset") <= F.col("prev_offset"),
                                               F.lit(False)),
        "regression": is_hw & F.coalesce(
            (F.col("old").isNotNull() & (F.col("new") < F.col("old")))
            | (F.col("prev_new").isNotNull() & (F.col("new") < F.col("prev_new"))),
            F.lit(False)),
    }
    any_flag = flags["read_uncommitted"] | flags["poll_skip"] | flags["nonmonotonic_poll"] | (
        flags["regression"])
    below = F.coalesce((F.col("role") == "leader") & (F.col("new") < F.col("max_leader_hw_before")),
                       F.lit(False))
    return df.where(any_flag).select(
        *K, "seq", "ts_us", "is_hw", "replica", "reason", "role", "old", "new", "prev_new",
        "max_leader_hw_before", below.alias("below_exposed"), "group", "consumer", "gen",
        "offset", "hw", "value", "prev_offset", *[c.alias(n) for n, c in flags.items()])


def order_counts(findings: DataFrame) -> DataFrame:
    """(K, anomaly, n) of ``ORDER_ANOMALIES`` from ``order_findings``."""
    names = {"read_uncommitted": "read_uncommitted", "poll_skip": "poll_skip",
             "nonmonotonic_poll": "nonmonotonic_poll", "hw_regression_replica": "regression"}
    sums = findings.groupBy(*K).agg(
        *[F.sum(F.col(flag).cast("long")).alias(name) for name, flag in names.items()])
    return _long_counts(sums, ORDER_ANOMALIES)


def hw_regressions(findings: DataFrame) -> DataFrame:
    """Every ``hw_update`` that lowers a replica's HW (below ``old`` or its previous ``new``),
    with reason, role, the max leader HW before it and ``below_exposed``."""
    return findings.where("regression").select(
        *K, "replica", "seq", "ts_us", "reason", "role", "old", "new", "prev_new",
        "max_leader_hw_before", "below_exposed")


# --------------------------------------------------------------------------- divergence


def log_divergence(side: DataFrame) -> DataFrame:
    """Offsets of a partition where two replicas' final logs differ below both HWs.

    Per (K, offset) over the records inside their replica's [lso, hw): the replicas holding a
    record there and the set of values; the replicas *covering* the offset are counted from
    the (broadcast, small) list of spans of the partition, and a covering replica without a
    record adds MISSING. Aggregates keyed by a superset of K: no exchange, no exploded ranges.
    """
    reps = final_replicas(side, epochs=False).where(F.col("hw") > F.col("lso"))
    spans = F.broadcast(reps.groupBy(*K).agg(
        F.collect_list(F.struct("lso", "hw")).alias("_spans")))
    recs = (final_records(side, reps.select(*K, "replica", "lso", "hw"))
            .where((F.col("offset") >= F.col("lso")) & (F.col("offset") < F.col("hw"))))
    per_offset = recs.groupBy(*K, "offset").agg(
        F.size(F.collect_set("replica")).alias("with_record"),
        F.collect_set("value").alias("held"))
    covering = _stable("size(filter(_spans, s -> s.lso <= `offset` AND `offset` < s.hw))")
    df = per_offset.join(spans, K).select(*K, "offset", covering.alias("replicas"),
                                          "with_record", "held")
    values = F.array_sort(F.when(F.col("with_record") < F.col("replicas"),
                                 F.array_union("held", F.array(F.lit(MISSING))))
                          .otherwise(F.col("held")))
    return (df.select(*K, "offset", "replicas", values.alias("values"))
            .where((F.col("replicas") >= 2) & (F.size("values") > 1)))


# --------------------------------------------------------------------------- ISR


def lost_committed_offsets(side: DataFrame) -> DataFrame:
    """One row per ``offset_fetch`` that read back neither the latest commit acknowledged
    before it was asked for nor one sent after that commit (``traces.checker``'s rule):
    K, group, consumer, seq, the offset fetched and the acknowledged one."""
    base = _valid_k(side)
    g = [*K, "group"]
    commits = _ev(base, "offset_commit").select(
        *g, "consumer", "commit_id", F.col("seq").alias("c_seq"), F.col("offset").alias("c_off"))
    acks = _ev(base, "offset_commit_ack").select(
        *g, "consumer", "commit_id", F.col("seq").alias("a_seq"), F.col("ts_us").alias("a_ts"))
    acked = (acks.join(commits, [*g, "consumer", "commit_id"])
             .where(F.col("c_seq") < F.col("a_seq"))
             .groupBy(*g, "a_seq", "a_ts")
             .agg(F.max_by(F.struct("c_seq", "c_off"), "c_seq").alias("c")))
    fetches = _ev(base, "offset_fetch").where(F.col("requested_us").isNotNull()).select(
        *g, "consumer", F.col("seq").alias("f_seq"), "requested_us",
        F.col("offset").alias("got"))
    latest = (fetches.join(acked, g)
              .where(F.col("a_ts") < F.col("requested_us"))
              .groupBy(*g, "consumer", "f_seq", "got")
              .agg(F.max_by("c", "a_seq").alias("l")))
    after = (F.col("c_seq") > F.col("l.c_seq")) & (F.col("c_seq") < F.col("f_seq"))
    later = (latest.join(commits.select(*g, "c_seq", "c_off"), g, "left")
             .groupBy(*g, "consumer", "f_seq", "got", "l")
             .agg(F.collect_set(F.when(after, F.col("c_off"))).alias("later")))
    return later.where(
        (F.col("got") != F.col("l.c_off")) & ~F.array_contains("later", F.col("got"))
    ).select(*g, "consumer", F.col("f_seq").alias("seq"), F.col("got").alias("fetched"),
             F.col("l.c_off").alias("acknowledged"))


def outside_assignment(side: DataFrame) -> DataFrame:
    """``isr_change`` / ``leader_elected`` rows whose ISR or leader is not in the replica
    list (AR) in force: the ISR a partition was created with (``isr_change`` reason
    ``create``), then each ``replicas_change``'s ``new`` (``traces.checker``'s rule)."""
    base = _valid_k(_ev(side, "isr_change", "leader_elected", "replicas_change"))
    is_change, is_elect = F.col("event") == "isr_change", F.col("event") == "leader_elected"
    new_list = F.from_json("new", "array<int>")
    ar_def = (F.when(F.col("event") == "replicas_change", new_list)
              .when(is_change & (F.col("reason") == "create"), new_list))
    rows = base.select(*K, "seq", "ts_us", "event", "leader", ar_def.alias("ar_def"),
                       F.when(is_change, new_list).when(is_elect, F.col("isr"))
                       .alias("checked"))
    w = (Window.partitionBy(*K).orderBy("seq")
         .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    df = rows.select("*", F.last("ar_def", ignorenulls=True).over(w).alias("ar"))
    bad_isr = F.size(F.array_except(F.coalesce("checked", F.array().cast("array<int>")),
                                    "ar")) > 0
    bad_leader = is_elect & (F.col("leader") >= 0) & ~F.array_contains("ar", F.col("leader"))
    return df.where(F.col("ar").isNotNull() & (F.col("event") != "replicas_change")
                    & F.coalesce(bad_isr | bad_leader, F.lit(False))
                    ).select(*K, "seq", "ts_us", "ar", "checked", "leader")


def possible_loss(side: DataFrame) -> DataFrame:
    """(K, anomaly, n): the signals of a possible loss a log shows (docs/anomalies.md §4d):
    ``possible_committed_truncation`` (a ``log_truncate`` below the HW it names),
    ``unclean_election`` (a ``leader_elected`` with ``election`` unclean) and
    ``leader_epoch_regression`` (a ``leader_elected`` / ``become_leader`` whose epoch is below
    the highest an earlier one of the partition carried)."""
    trunc = (_valid_k(_ev(side, "log_truncate")).where(F.col("new_leo") < F.col("hw"))
             .select(*K, F.lit("possible_committed_truncation").alias("anomaly")))
    unclean = (_valid_k(_ev(side, "leader_elected")).where(F.col("election") == "unclean")
               .select(*K, F.lit("unclean_election").alias("anomaly")))
    w = (Window.partitionBy(*K).orderBy("seq")
         .rowsBetween(Window.unboundedPreceding, -1))
    epochs = _valid_k(_ev(side, "leader_elected", "become_leader")).where(
        F.col("leader_epoch").isNotNull())
    back = (epochs.select(*K, "leader_epoch", F.max("leader_epoch").over(w).alias("before"))
            .where(F.col("leader_epoch") < F.col("before"))
            .select(*K, F.lit("leader_epoch_regression").alias("anomaly")))
    return (trunc.unionByName(unclean).unionByName(back).groupBy(*K, "anomaly")
            .agg(F.count(F.lit(1)).alias("n")).select(*K, "anomaly", "n"))


def isr_states(side: DataFrame) -> DataFrame:
    """The committed ISR after each ``isr_change`` / ``leader_elected`` (K, seq, ts_us,
    isr, prev_isr), prev_isr = the previous state, or ``isr_change.old`` for the first."""
    is_change = F.col("event") == "isr_change"
    rows = _valid_k(_ev(side, "isr_change", "leader_elected")).select(
        *K, "seq", "ts_us",
        F.array_distinct(F.when(is_change, F.from_json("new", "array<int>"))
                         .otherwise(F.col("isr"))).alias("isr"),
        F.array_distinct(F.when(is_change, F.from_json("old", "array<int>"))).alias("old_isr"),
    ).where(F.col("isr").isNotNull())
    w = Window.partitionBy(*K).orderBy("seq")
    return rows.select(*K, "seq", "ts_us", "isr",
                       F.coalesce(F.lag("isr").over(w), "old_isr").alias("prev_isr"))


def isr_transitions(side: DataFrame) -> DataFrame:
    """One row per replica leaving (shrink) or joining (expand) the ISR, with ``churn``:
    an expand whose previous transition was a shrink at most 60 s earlier."""
    st = isr_states(side)
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


def isr_intervals(data: Loaded) -> DataFrame:
    """How long each committed ISR state lasted (until the next state or the trace's end),
    with ``under_min_isr`` (size < effective min ISR) and ``under_replicated`` (< RF)."""
    st = isr_states(data.side)
    ends = data.traces.select("tid", "end_us")
    w = Window.partitionBy(*K).orderBy("seq")
    df = (st.join(F.broadcast(ends), "tid")
          .join(scenario_topics(data.side), ["tid", "topic"], "left")
          .withColumn("until", F.coalesce(F.lead("ts_us").over(w), F.col("end_us"))))
    dur = F.greatest(F.col("until") - F.col("ts_us"), F.lit(0))
    return df.select(
        *K, "seq", "ts_us", "until", "isr", dur.alias("duration_us"),
        (F.size("isr") < F.coalesce("eff_min_isr", F.lit(1))).alias("under_min_isr"),
        F.coalesce(F.size("isr") < F.col("rf"), F.lit(False)).alias("under_replicated"),
    )


def isr_churn_per_minute(side: DataFrame) -> DataFrame:
    """Per partition and minute of virtual time: shrinks, expands, churns (flaps)."""
    tr = isr_transitions(side).withColumn(
        "minute", F.floor(F.col("ts_us") / F.lit(60_000_000)).cast("long"))
    return tr.groupBy(*K, "minute").agg(
        F.sum(F.when(F.col("kind") == "shrink", 1).otherwise(0)).alias("shrinks"),
        F.sum(F.when(F.col("kind") == "expand", 1).otherwise(0)).alias("expands"),
        F.sum(F.col("churn").cast("int")).alias("churns"),
    )


def partition_health(data: Loaded) -> DataFrame:
    """Per partition: ms under min ISR, ms under-replicated, ISR churns, shrinks."""
    iv = isr_intervals(data).groupBy(*K).agg(
        F.sum(F.when(F.col("under_min_isr"), F.col("duration_us")).otherwise(0))
        .alias("under_min_isr_us"),
        F.sum(F.when(F.col("under_replicated"), F.col("duration_us")).otherwise(0))
        .alias("under_replicated_us"))
    tr = isr_transitions(data.side).groupBy(*K).agg(
        F.sum(F.col("churn").cast("int")).alias("churns"),
        F.sum(F.when(F.col("kind") == "shrink", 1).otherwise(0)).alias("shrinks"))
    return (iv.join(tr, K, "full").na.fill(0)
            .withColumn("under_min_isr_ms", F.floor(F.col("under_min_isr_us") / 1000))
            .withColumn("under_replicated_ms", F.floor(F.col("under_replicated_us") / 1000)))


def top_churning_replicas(side: DataFrame, n: int = 20) -> DataFrame:
    """Replicas with the most churns (over all traces read)."""
    return (isr_transitions(side).where("churn")
            .groupBy("topic", "partition", "replica").agg(F.count(F.lit(1)).alias("churns"),
                                                          F.count_distinct("tid").alias("traces"))
            .orderBy(F.desc("churns"), "topic", "partition", "replica").limit(n))


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
        side = self.data.side

        def count(df: DataFrame, name: str) -> DataFrame:
            return df.groupBy(*K).agg(F.count(F.lit(1)).alias("n")).select(
                *K, F.lit(name).alias("anomaly"), "n")

        return {
            "record": lambda: record_counts(record_verdicts(self.data, self.source())),
            "order": lambda: order_counts(self.findings()),
            "log_divergence": lambda: count(self.divergence(), "log_divergence"),
            "no_convergence": lambda: count(
                self.source().where(F.col("offline") | F.col("not_converged")),
                "no_convergence"),
            "isr_churn": lambda: count(isr_transitions(side).where("churn"), "isr_churn"),
            "under_min_isr": lambda: isr_intervals(self.data).where("under_min_isr")
            .groupBy(*K).agg(F.sum("duration_us").alias("n"))
            .select(*K, F.lit("under_min_isr").alias("anomaly"), "n"),
            "lost_committed_offset": lambda: count(lost_committed_offsets(side),
                                                   "lost_committed_offset"),
            "outside_assignment": lambda: count(outside_assignment(side), "outside_assignment"),
            "possible_loss": lambda: possible_loss(side),
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
    sums = table.groupBy("trace").pivot("anomaly", list(ANOMALIES)).agg(F.sum("n"))
    sums = sums.na.fill(0, list(ANOMALIES)).withColumn(
        "under_min_isr", F.floor(F.col("under_min_isr") / 1000).cast("long"))
    wide = meta.join(sums, "trace", "left").na.fill(0, list(ANOMALIES))
    return wide.select(*[
        F.when(F.col("imported"), F.lit(None).cast("long")).otherwise(F.col(c)).alias(c)
        if c in NOT_FROM_LOGS else F.col(c) for c in wide.columns])


ROLLUP_KNOBS: Final = ("protocol", "acks", "min_insync_replicas", "unclean", "fault_kinds")


def campaign_rollup(wide: DataFrame, knob: str) -> DataFrame:
    """Per value of one knob: traces, total of every anomaly, traces with any lost write."""
    aggs: list[Any] = [F.count(F.lit(1)).alias("traces")]
    aggs += [F.sum(a).alias(a) for a in ANOMALIES]
    aggs.append(F.sum((F.col("lost_acked_write") > 0).cast("int")).alias("traces_losing_acked"))
    return (wide.groupBy(F.col(knob).cast("string").alias("value")).agg(*aggs)
            .select(F.lit(knob).alias("knob"), "*").orderBy("value"))
