"""``isrlab analyze``: one JSON object with the checker's names; Parquet views with ``--out``.

The analysed run is the bad-input one (``conftest.bad_run``): one CLI pass serves both files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Run
from pyspark.sql import SparkSession

from cli.analyze import main
from traces.checker import ANOMALIES

pytestmark = pytest.mark.spark


def test_analyze_json_uses_checker_names_and_writes_one_parquet_per_view(
    spark: SparkSession, bad_run: Run
) -> None:
    assert list(bad_run.report["anomalies"]) == list(ANOMALIES)
    assert bad_run.report["traces"] == 3  # ok, damaged, cut; schema2 skipped, notes ignored
    for view in ("anomalies_per_trace", "anomalies_per_partition", "hw_regressions",
                 "isr_churn_per_minute", "partition_health", "log_divergence"):
        assert (bad_run.out / f"{view}.parquet").is_dir(), view
    assert spark.read.parquet(str(bad_run.out / "rollup_protocol.parquet")).count() == 1
    # a killed analysis's half-written dataset in the same --out is swept, nothing else
    assert not list(bad_run.out.glob(".isrlab-*"))
    assert (bad_run.out / "analysis.json").is_file()


def test_analyze_of_a_missing_path_exits_2(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
