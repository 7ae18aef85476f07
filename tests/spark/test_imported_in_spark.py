"""``isrlab analyze`` on a trace imported from Kafka's logs (issue 22): the ISR churn views
are computed, and the per-record anomalies are null (not available), never zero."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pyspark.sql import SparkSession

from cli.analyze import main
from traces.logs.importer import import_logs

pytestmark = pytest.mark.spark
LOGS = Path(__file__).resolve().parent.parent / "data" / "kafka_logs"


def test_analyze_an_imported_trace(spark: SparkSession, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "imported.jsonl"
    import_logs([str(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log"),
                 str(LOGS / "09-librdkafka1575-notleader-expanding-isr-zkversion-"
                            "controller.log")], str(trace))
    views = tmp_path / "views"
    assert main([str(trace), "--json", "--out", str(views)]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    row = doc["per_trace"][str(trace)]
    assert row["imported"] is True
    assert row["anomalies"]["lost_acked_write"] is None
    assert row["anomalies"]["isr_churn"] is not None
    churn = {(r["topic"], r["partition"]): r for r in (
        x.asDict() for x in spark.read.parquet(str(views / "isr_churn_per_minute.parquet"))
        .collect())}
    assert churn[("topic", 6)]["shrinks"] >= 1
    assert churn[("LIVETOPICOLD", 36)]["expands"] >= 1
    # the written view says the same as --json: null, not a zero a notebook would sum
    wide = spark.read.parquet(str(views / "anomalies_per_trace.parquet")).collect()
    assert [(r["imported"], r["lost_acked_write"], r["duplicate"]) for r in wide] == [
        (True, None, None)]
    assert wide[0]["isr_churn"] is not None


def test_analyze_says_a_truncation_below_the_hw_is_a_possible_loss(
        spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 54, point 3: ``analyze`` counts what ``check`` counts of an imported
    ``Truncating ... below high watermark`` and says the same verdict."""
    from test_import_loss_signals import BELOW_HW

    from traces.checker import check_file
    log = tmp_path / "server.log"
    log.write_text(BELOW_HW)
    trace = tmp_path / "imported.jsonl"
    import_logs([str(log)], str(trace))
    assert main([str(trace), "--json"]) == 0
    row = orjson.loads(capsys.readouterr().out)["per_trace"][str(trace)]
    assert row["anomalies"]["possible_committed_truncation"] == 1
    assert row["verdict"]["headline"] == check_file(trace).verdict().headline
    assert row["verdict"]["word"] == "POSSIBLE LOSS"
