"""``log_divergence``: the Spark view lists the offsets and values the checker finds.

Spark aggregates per offset the replicas holding a record and the values held, and counts
the covering replicas from their spans (``analyses.log_divergence``); the checker walks each
offset of the covered ranges (``Checker._judge_divergence``). The agreement tests compare
their counts; the view's rows are compared here, on cases built by hand: two values at one
offset; one value and a covering replica without a record (MISSING); no covering replica
holding a record (MISSING alone is no divergence); a replica listing an offset twice; a
record above one replica's HW.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from tracebuild import Trace

from spark_analysis.analyses import log_divergence
from spark_analysis.load import load_traces
from traces.checker import MISSING, check_file

pytestmark = pytest.mark.spark


def _trace() -> Trace:
    t = Trace()
    t.elect(0, [0, 1, 2])
    t.at(1).final_log(0, [(0, "a"), (1, "b"), (3, "d"), (4, "e"), (4, "e2"), (6, "g")], hw=7)
    t.final_log(1, [(0, "a"), (1, "x"), (4, "e"), (5, "f"), (6, "g")], hw=6)
    t.final_log(2, [(0, "a"), (1, "b"), (4, "e"), (5, "f")], hw=6, log_start_offset=1)
    return t


def test_spark_divergence_rows_are_the_checkers_offsets_and_values(
        spark: SparkSession, tmp_path: Path) -> None:
    path = _trace().write(tmp_path / "div.jsonl")
    result = check_file(path, max_details=1000)
    want = {d["offset"]: sorted({v for vs in d["values"].values() for v in vs})
            for d in result.details["log_divergence"]}
    # 1: b/x; 2: nobody holds it (no divergence); 3: d and two replicas without it;
    # 4: e and e2 on replica 0; 5: f on 1 and 2, missing on 0; 6: above replica 1 and 2's HW
    assert want == {1: ["b", "x"], 3: [MISSING, "d"], 4: ["e", "e2"], 5: [MISSING, "f"]}
    loaded = load_traces(spark, [str(path)])
    try:
        rows = log_divergence(loaded.side).collect()
        got = {r["offset"]: list(r["values"]) for r in rows}
        assert got == want
        assert {r["offset"]: r["replicas"] for r in rows} == {1: 3, 3: 3, 4: 3, 5: 3}
    finally:
        loaded.unpersist()
