"""``isrlab analyze --explain``: every trace's causal chains, computed by Spark, and the rules
at fault across a campaign.

Design. A chain is a fold over one trace in order (``traces.explain``: the replicas' logs
rebuilt as epoch-tagged runs, the election and truncation history of each partition), and
it needs the lines the analyses do not keep (every ``leo_update``). So, as the native scan
does (``load.native_scan``), the traces are handed to Spark's Python workers, one file per
task, with ``mapInArrow``: each worker runs ``traces.explain.explain`` on its files — the same
code as ``isrlab explain``, from the trace contract — and yields one row per chain
(``CHAIN_DDL``). Spark then does what it is for across a campaign: ``rule_table`` groups the
chains of every trace by anomaly and rule (how many traces, how many findings, an example
trace), so a thousand failing seeds read as "30 truncation_to_hw, 7 unclean_election". The
rows are held equal to the fast path's chains trace by trace (``tests/spark``).

Local files only, like the native scan (a worker opens the path); a trace that cannot be
read gives one row of anomaly ``unreadable`` naming the problem instead of failing the job.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

import orjson
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

#: One chain of one trace (``traces.explain.Chain.to_json`` flattened; ``steps`` as JSON).
CHAIN_DDL: Final = ("trace string, anomaly string, topic string, partition int, rule string, "
                    "findings long, first_offset long, last_offset long, reads long, "
                    "steps string")
_FIELDS: Final = ("trace", "anomaly", "topic", "partition", "rule", "findings", "first_offset",
                  "last_offset", "reads", "steps")
_TYPES: Final = (pa.string(), pa.string(), pa.string(), pa.int32(), pa.string(), pa.int64(),
                 pa.int64(), pa.int64(), pa.int64(), pa.string())
ARROW_SCHEMA: Final = pa.schema(list(zip(_FIELDS, _TYPES, strict=True)))


def chain_rows(trace: str) -> list[dict[str, Any]]:
    """The chains of one trace as rows (what a worker yields; the tests compare these)."""
    from traces.explain import explain
    from traces.reader import TraceError

    try:
        ex = explain(trace)
    except (TraceError, OSError) as exc:
        return [{"trace": trace, "anomaly": "unreadable", "topic": None, "partition": None,
                 "rule": None, "findings": 0, "first_offset": None, "last_offset": None,
                 "reads": 0, "steps": orjson.dumps([{"text": str(exc)}]).decode()}]
    rows = []
    for c in ex.chains:
        j = c.to_json()
        offsets = j["offsets"] or [None, None]
        rows.append({"trace": trace, "anomaly": c.anomaly, "topic": c.topic,
                     "partition": c.partition, "rule": c.rule, "findings": c.count,
                     "first_offset": offsets[0], "last_offset": offsets[1],
                     "reads": c.reads, "steps": orjson.dumps(j["steps"]).decode()})
    return rows


def explain_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: rows (trace) in, one row per chain out."""
    for batch in batches:
        for trace in batch.column("trace").to_pylist():
            rows = chain_rows(str(trace))
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=ARROW_SCHEMA)


def chains(spark: SparkSession, traces: Sequence[str]) -> DataFrame:
    """Every chain of every trace (``CHAIN_DDL``), one file per Python task."""
    files = sorted(set(traces))
    paths = spark.createDataFrame([(f,) for f in files], "trace string")
    tasks = max(1, min(len(files), 2 * spark.sparkContext.defaultParallelism
                       if hasattr(spark, "sparkContext") else 8))
    return paths.repartition(tasks).mapInArrow(explain_files, CHAIN_DDL)


def rule_table(df: DataFrame) -> DataFrame:
    """Per anomaly and rule: traces showing it, findings it covers, the first such trace;
    anomalies in the checker's order (losses first), then the most widespread rule."""
    from traces.schema import ANOMALIES

    rank = F.array_position(F.array(*[F.lit(a) for a in ANOMALIES]), F.col("anomaly"))
    return (df.where(F.col("anomaly") != "unreadable")
            .groupBy("anomaly", "rule")
            .agg(F.countDistinct("trace").alias("traces"), F.sum("findings").alias("findings"),
                 F.min("trace").alias("example"))
            .orderBy(rank, F.desc("traces"), F.desc("findings"), "rule"))
