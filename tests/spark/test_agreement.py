"""Spark's anomaly counts equal the checker's, trace by trace and in total (issue #6).

The corpus (``conftest.corpus``) is the recorded trace of every catalog scenario (the
regression suite's, which ``test_regress`` replays byte for byte), 220 random-seed emulator
runs and the hand-built catalogue, read by Spark in one load of one folder; the expected
counts are ``traces.checker.check_file`` on each file (``isrlab check``).
DataFrames are compared with ``pyspark.testing.assertDataFrameEqual``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RANDOM_RUNS, ROOT, Corpus
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from traces.checker import ANOMALIES

pytestmark = pytest.mark.spark


def test_the_corpus_is_the_whole_catalog_and_at_least_200_random_runs(corpus: Corpus) -> None:
    catalog = {corpus.scenario[t] for t, k in corpus.kind.items() if k == "catalog"}
    assert catalog == {p.stem for p in ROOT.glob("scenarios/*.toml")}
    assert sum(k == "random" for k in corpus.kind.values()) == RANDOM_RUNS >= 200
    assert sum(k == "messages" for k in corpus.kind.values()) == 1   # a --trace-messages run
    # only the hand-built "healthy" trace, written without run_end on purpose
    assert [(Path(p.trace).name.split(".")[0], p.action) for p in corpus.loaded.problems] == [
        ("healthy", "tail lost")]
    assert sorted(corpus.loaded.files) == sorted(corpus.expected)
    print(f"corpus: {len(corpus.expected)} traces generated+checked in {corpus.generate_s:.1f} s,"
          f" Spark load + anomaly table in {corpus.spark_s:.1f} s")


def test_spark_counts_equal_checker_counts_per_trace(spark: SparkSession, corpus: Corpus
                                                     ) -> None:
    expected = spark.createDataFrame(
        [(t, *[int(c[a]) for a in ANOMALIES]) for t, c in corpus.expected.items()],
        ", ".join(["trace string", *[f"{a} long" for a in ANOMALIES]]))
    got = corpus.wide.select("trace", *[corpus.wide[a].cast("long").alias(a) for a in ANOMALIES])
    assertDataFrameEqual(got, expected, checkRowOrder=False, ignoreNullable=True)


def test_spark_totals_equal_checker_totals_and_anomalies_occur(corpus: Corpus) -> None:
    rows = [r.asDict() for r in corpus.wide.collect()]
    for kind in ("catalog", "recorded", "random", "handmade"):
        traces = {t for t, k in corpus.kind.items() if k == kind}
        got = {a: sum(int(r[a]) for r in rows if r["trace"] in traces) for a in ANOMALIES}
        want = {a: sum(corpus.expected[t][a] for t in traces) for a in ANOMALIES}
        assert got == want, kind
        print(kind, {a: n for a, n in want.items() if n})
    random = [t for t, k in corpus.kind.items() if k == "random"]
    with_anomaly = [t for t in random if any(corpus.expected[t][a] for a in ANOMALIES)]
    assert len(with_anomaly) >= 20, "the random runs should produce anomalies"
    handmade = {t for t, k in corpus.kind.items() if k == "handmade"}
    assert all(sum(corpus.expected[t][a] for t in handmade) > 0 for a in ANOMALIES)


def test_anomaly_table_is_per_partition_and_sums_to_the_wide_table(corpus: Corpus) -> None:
    per_partition = corpus.table.groupBy("trace", "anomaly").sum("n").collect()
    assert {r["anomaly"] for r in per_partition} <= set(ANOMALIES)
    first = next(iter(sorted(corpus.expected)))
    got = {r["anomaly"]: int(r["sum(n)"]) for r in per_partition if r["trace"] == first}
    got = {a: (n // 1000 if a == "under_min_isr" else n) for a, n in got.items()}
    assert {a: n for a, n in corpus.expected[first].items() if n} == {
        a: n for a, n in got.items() if n}
    assert Path(first).exists()
