"""The roll-ups by knob and the datasets ``isrlab analyze --out`` writes.

``isrlab analyze`` computes the roll-ups from the per-trace rows it has already collected
(``analyses.rollup_rows``: its text and its ``--out`` datasets); the views' DataFrames
compute them with Spark (``analyses.campaign_rollup``). One definition, two
implementations: held equal here, on traces that differ in every knob (protocol, acks, min
ISR, unclean elections, faults), with an imported trace among them (its per-record anomalies
null, not zero). The datasets are written from the driver (``spark_analysis.dataset_out``)
and read back as their DataFrames."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType
from tracebuild import catalogue

from spark_analysis import analyses as A
from spark_analysis.dataset_out import PART_FILE, write_dataset, write_rows
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


@pytest.fixture(scope="module")
def analysis(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[A.Analysis]:
    loaded = load_traces(spark, _traces(tmp_path_factory.mktemp("rollups")))
    analysis = A.Analysis(loaded)
    yield analysis
    analysis.unpersist()
    loaded.unpersist()


def test_the_text_rollups_are_the_written_rollups_row_for_row(analysis: A.Analysis) -> None:
    wide = analysis.wide()
    per_trace = [r.asDict() for r in wide.collect()]
    assert analysis.wide_rows() == per_trace
    for knob in A.ROLLUP_KNOBS:
        written = [r.asDict() for r in A.campaign_rollup(wide, knob).collect()]
        assert A.rollup_rows(per_trace, knob) == written, knob
        assert len(written) > 1 or knob == "unclean", knob   # the knob varies here
    imported = [r for r in per_trace if r["imported"]]
    assert imported and imported[0]["lost_acked_write"] is None


def _columns(schema: StructType) -> list[tuple[str, str]]:
    """Names and types, not nullability: Spark reads every Parquet column back nullable."""
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


def test_every_view_written_from_the_driver_reads_back_as_its_dataframe(
    spark: SparkSession, analysis: A.Analysis, tmp_path: Path
) -> None:
    """``isrlab analyze --out`` writes the views with pyarrow (``dataset_out``): each dataset,
    read back by Spark, has the DataFrame's columns, types and rows — those the driver
    held (``local_views``) and those collected as Arrow alike — and the layout of Spark's
    own writer (one part file, ``_SUCCESS``). Written twice: the second replaces the first."""
    local = analysis.local_views()
    assert sorted(local) == sorted(["anomalies_per_partition", "anomalies_per_trace",
                                    *(f"rollup_{k}" for k in A.ROLLUP_KNOBS)])
    for _round in range(2):
        for name, df in analysis.views().items():
            path = str(tmp_path / f"{name}.parquet")
            if name in local:
                rows, schema = local[name]
                write_rows(rows, schema, path)
            else:
                table = write_dataset(df, path)
                assert table is not None and table.num_rows == df.count(), name
            back = spark.read.parquet(path)
            assert _columns(back.schema) == _columns(df.schema), name
            assert sorted(map(repr, back.collect())) == sorted(map(repr, df.collect())), name
            assert sorted(p.name for p in (tmp_path / f"{name}.parquet").iterdir()) == [
                "_SUCCESS", PART_FILE], name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{name}.parquet" for name in analysis.view_builders())   # no scratch left
    # a URI (a cluster's storage) is written by Spark's own writer, on the executors
    df = analysis.views()["partition_health"]
    assert write_dataset(df, f"file://{tmp_path}/uri/health.parquet") is None
    back = spark.read.parquet(str(tmp_path / "uri" / "health.parquet"))
    assert sorted(map(repr, back.collect())) == sorted(map(repr, df.collect()))


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
