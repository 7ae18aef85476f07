"""``isrlab analyze --json``: one JSON object, the checker's names, totals and per trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from tracebuild import catalogue

from spark_analysis.cli import main
from traces.checker import ANOMALIES, check_file

pytestmark = pytest.mark.spark


def test_analyze_json_reports_checker_names_per_trace_and_writes_parquet(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat = catalogue()
    traces = tmp_path / "traces"
    traces.mkdir()
    paths = [cat[n].write(traces / f"{n}.jsonl") for n in ("s8_unclean", "churn_offline")]
    (traces / "notes.txt").write_text("not a trace")  # ignored: not *.jsonl
    out = tmp_path / "out"
    assert main([str(traces), "--json", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["anomalies"]) == list(ANOMALIES)
    per = {t: v["anomalies"] for t, v in report["per_trace"].items()}
    assert per == {str(p.resolve()): check_file(p).anomalies for p in paths}
    assert report["traces"] == 2 and report["bad_lines"] == []
    assert (out / "anomalies_per_trace.parquet").is_dir()
    assert spark.read.parquet(str(out / "rollup_protocol.parquet")).count() == 1


def test_analyze_of_a_missing_path_exits_2(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
