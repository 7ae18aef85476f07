"""``isrlab analyze --explain``: the causal chains computed by Spark's Python workers equal the
fast path's (``isrlab explain``) trace by trace, and the rule table adds them up."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pyspark.sql import SparkSession

from cli.analyze import main
from spark_analysis.explain import chain_rows, chains, rule_table
from traces.explain import explain

pytestmark = pytest.mark.spark

REGRESSIONS = Path(__file__).resolve().parent.parent / "regressions"
TRACES = [str(REGRESSIONS / f"{n}.jsonl.gz") for n in (
    "s1-kip101-hw-truncation", "s4-kafka7128-stale-hw-isr-expand",
    "s9-last-replica-standing", "s2-kip101-power-loss-divergence", "safe-acks-all")]


def _key(r: dict[str, object]) -> tuple[str, ...]:
    return tuple(str(r[k]) for k in ("trace", "anomaly", "topic", "partition", "first_offset",
                                     "rule", "steps"))


def test_spark_chains_equal_the_fast_paths_trace_by_trace(spark: SparkSession) -> None:
    got = sorted((r.asDict() for r in chains(spark, TRACES).collect()), key=_key)
    want = sorted((r for t in TRACES for r in chain_rows(t)), key=_key)
    assert got == want
    fast = {t: explain(t).chains for t in TRACES}
    assert sum(len(c) for c in fast.values()) == len(got)
    rules = {(r["anomaly"], r["rule"]): r for r in
             (x.asDict() for x in rule_table(chains(spark, TRACES)).collect())}
    lost = rules[("lost_acked_write", "truncation_to_hw")]
    assert lost["traces"] == 2   # S1, and S2's offset 99
    assert lost["findings"] == sum(c.count for t in TRACES for c in fast[t]
                                   if c.anomaly == "lost_acked_write"
                                   and c.rule == "truncation_to_hw")
    assert ("lost_acked_write", "leso_check") in rules
    assert ("log_divergence", "divergence_kept_hw") in rules
    assert not any(r["trace"] == TRACES[-1] for r in got if r["anomaly"] == "lost_acked_write")


def test_analyze_explain_json_carries_the_rules_and_each_traces_chains(
        spark: SparkSession, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "views"
    assert main([*TRACES[:2], "--explain", "--json", "--out", str(out)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    rules = {(r["anomaly"], r["rule"]) for r in doc["explain"]["rules"]}
    assert {("lost_acked_write", "truncation_to_hw"), ("lost_acked_write", "leso_check")} <= rules
    s1 = doc["explain"]["per_trace"][TRACES[0]]
    [lost] = [c for c in s1 if c["anomaly"] == "lost_acked_write"]
    assert lost["rule"] == "truncation_to_hw" and lost["steps"][0]["text"].startswith("acked")
    assert (out / "chains.parquet").is_dir()
