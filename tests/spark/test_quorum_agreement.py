"""The controller quorum's anomalies: Spark's counts (``spark_analysis.quorum``) equal the
checker's (``traces.quorum_check``), trace by trace and per partition, on small quorum
traces — hand-built ones that show each anomaly (a divergence, a truncation, a restarted
voter's HW, a replay above the quorum's HW) and real runs of the two quorum scenarios —
and a load without a quorum trace reads no file again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from emulator.cluster import run
from emulator.scenario import load
from spark_analysis.analyses import Analysis, anomaly_counts
from spark_analysis.load import load_traces
from spark_analysis.quorum import quorum_counts, quorum_traces
from tests.test_quorum_anomalies import (
    append,
    applied,
    diverged_quorum,
    healthy_quorum,
    hw,
    truncate,
)
from traces.checker import check_file
from traces.writer import TraceWriter

pytestmark = pytest.mark.spark

QUORUM = ("metadata_divergence", "uncommitted_metadata_applied")


def _traces(where: Path) -> list[str]:
    out = [str(healthy_quorum().write(where / "healthy.jsonl")),
           str(diverged_quorum().write(where / "diverged.jsonl.gz"))]
    t = diverged_quorum()             # a restarted voter: its HW passes the offsets again
    hw(t, 3, 0)
    hw(t, 3, 3)
    truncate(t, 2, 0, 3)             # and voter 2 replaces offset 0 too
    append(t, 2, 2, 0, 2)
    hw(t, 2, 0)
    hw(t, 2, 3, epoch=2)
    applied(t, 1, 0, 2)
    applied(t, 2, 3, 5)               # above: the quorum's HW is 3
    out.append(str(t.write(where / "restarted.jsonl")))
    for name, overrides in (("kraft-controller-failover", ["duration_s=14"]),
                            ("kafka15489-partitioned-controller", [])):
        buf = io.BytesIO()
        res = run(load(name, overrides), 1, None, writer=TraceWriter(None, buffer=buf))
        assert res.status == "ok", res.error
        path = where / f"{name}.jsonl"
        path.write_bytes(buf.getvalue())
        out.append(str(path))
    return out


def test_spark_quorum_counts_equal_the_checkers(spark: SparkSession, tmp_path: Path) -> None:
    paths = _traces(tmp_path)
    want = {p: check_file(p).anomalies for p in paths}
    assert want[paths[1]]["metadata_divergence"] == 2
    assert want[paths[2]]["metadata_divergence"] == 3
    assert want[paths[2]]["uncommitted_metadata_applied"] == 2
    loaded = load_traces(spark, paths)
    try:
        got = anomaly_counts(loaded)
        for p in paths:
            assert {a: got[p][a] for a in QUORUM} == {a: want[p][a] for a in QUORUM}, p
            assert got[p] == want[p], p
        per = Analysis(loaded).partition_counts()
        assert per[paths[1]]["__cluster_metadata-0"] == {"metadata_divergence": 2,
                                                         "uncommitted_metadata_applied": 1}
    finally:
        loaded.unpersist()


def test_a_load_without_a_quorum_trace_has_no_quorum_rows(spark: SparkSession,
                                                          tmp_path: Path) -> None:
    from tracebuild import healthy
    path = str(healthy().write(tmp_path / "plain.jsonl"))
    loaded = load_traces(spark, [path])
    try:
        assert quorum_traces(loaded) == []
        assert quorum_counts(loaded).collect() == []
    finally:
        loaded.unpersist()
