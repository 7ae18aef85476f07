"""The roll-ups by knob: ``isrlab analyze``'s text prints them from the per-trace rows it
has already collected (``analyses.rollup_rows``), ``--out`` writes them with Spark
(``analyses.campaign_rollup``). One definition, two implementations: held equal here, on
traces that differ in every knob (protocol, acks, min ISR, unclean elections, faults), with
an imported trace among them (its per-record anomalies null, not zero)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tracebuild import catalogue

from spark_analysis import analyses as A
from spark_analysis.load import load_traces
from traces.logs.importer import import_logs
from traces.schema import ANOMALIES

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "data" / "kafka_logs"


def _traces(folder: Path) -> list[str]:
    paths = [str(t.write(folder / f"{name}.jsonl")) for name, t in catalogue().items()]
    for gz in sorted((ROOT / "tests" / "regressions").glob("*.jsonl.gz")):
        plain = folder / gz.name.removesuffix(".gz")
        with gzip.open(gz, "rb") as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        paths.append(str(plain))
    imported = folder / "imported.jsonl"
    import_logs([str(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log")], str(imported))
    return [*paths, str(imported)]


def test_the_text_rollups_are_the_written_rollups_row_for_row(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    loaded = load_traces(spark, _traces(tmp_path))
    analysis = A.Analysis(loaded)
    try:
        wide = analysis.wide()
        per_trace = [r.asDict() for r in wide.collect()]
        for knob in A.ROLLUP_KNOBS:
            written = [r.asDict() for r in A.campaign_rollup(wide, knob).collect()]
            assert A.rollup_rows(per_trace, knob) == written, knob
            assert len(written) > 1 or knob == "unclean", knob   # the knob varies here
        imported = [r for r in per_trace if r["imported"]]
        assert imported and imported[0]["lost_acked_write"] is None
    finally:
        analysis.unpersist()
        loaded.unpersist()


def test_a_rollup_sums_skip_nulls_and_a_group_of_nulls_sums_to_null() -> None:
    rows: list[dict[str, Any]] = [
            {"acks": "all", "imported": True, **dict.fromkeys(ANOMALIES, None)},
            {"acks": None, **dict.fromkeys(ANOMALIES, 0), "lost_acked_write": 3},
            {"acks": "all", **dict.fromkeys(ANOMALIES, 1)},
            {"acks": "1", **dict.fromkeys(ANOMALIES, 0)}]
    got = A.rollup_rows(rows, "acks")
    assert [(r["value"], r["traces"], r["lost_acked_write"], r["traces_losing_acked"])
            for r in got] == [(None, 1, 3, 1), ("1", 1, 0, 0), ("all", 2, 1, 1)]
    assert A.rollup_rows([{"unclean": True, **dict.fromkeys(ANOMALIES, None)}],
                         "unclean")[0]["value"] == "true"
