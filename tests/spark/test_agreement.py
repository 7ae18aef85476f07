"""Spark's anomaly counts equal the checker's, trace by trace (docs/anomalies.md).

One read of many small traces (plain, gzip, one without ``run_end``) through
``spark_analysis.load`` and ``analyses.anomaly_counts``, compared with ``traces.checker`` on
the same files. The catalogue makes every anomaly non-zero somewhere, so each DataFrame
expression is pinned by at least one trace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from tracebuild import Trace, catalogue

from spark_analysis import analyses as A
from spark_analysis.load import load_traces
from traces.checker import ANOMALIES, check_file

pytestmark = pytest.mark.spark


def write_catalogue(folder: Path) -> list[Path]:
    paths = []
    for i, (name, trace) in enumerate(sorted(catalogue().items())):
        suffix = ".jsonl.gz" if i % 3 == 1 else ".jsonl"
        sub = folder / ("a" if i % 2 else "b")
        sub.mkdir(exist_ok=True)
        paths.append(trace.write(sub / f"{name}{suffix}", end=name != "healthy"))
    return paths


def test_spark_counts_equal_checker_counts_on_every_catalogue_trace(
    spark: SparkSession, tmp_path: Path
) -> None:
    paths = write_catalogue(tmp_path)
    loaded = load_traces(spark, [str(tmp_path)])
    assert loaded.bad_lines == []
    assert sorted(loaded.files) == sorted(str(p.resolve()) for p in paths)
    got = A.anomaly_counts(loaded.events, loaded.files)
    want = {str(p.resolve()): check_file(p).anomalies for p in paths}
    assert got == want
    totals = {a: sum(c[a] for c in want.values()) for a in ANOMALIES}
    assert all(totals[a] > 0 for a in ANOMALIES), totals  # every expression exercised


def test_corrupt_lines_are_reported_with_file_and_line_not_dropped(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = catalogue()["lost_acks_all"].write(tmp_path / "damaged.jsonl")
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b"this is not json\n"
    lines[4] = lines[4].replace(b'"ts_us":', b'"ts_us": ')  # crc no longer matches
    path.write_bytes(b"".join(lines))
    Trace().write(tmp_path / "ok.jsonl")
    loaded = load_traces(spark, [str(path), str(tmp_path / "ok.jsonl")])
    assert [(b.trace, b.line) for b in loaded.bad_lines] == [(str(path), 3), (str(path), 5)]
    assert loaded.events.where(f"trace = '{path}'").count() == len(lines) - 2
