"""``isrlab campaign --spark``: the seeds run as Spark tasks write the rows the process pool
writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_campaign import NOTHING_FORBIDDEN, TINY, rows_of

from cli.campaign import main

pytestmark = pytest.mark.spark


def test_campaign_on_spark_writes_the_same_rows_as_the_process_pool(tmp_path: Path) -> None:
    common = ["default", "--seeds", "1:3", *TINY, *NOTHING_FORBIDDEN]
    assert main([*common, "--out", str(tmp_path / "pool"), "--jobs", "2"]) == 0
    assert main([*common, "--out", str(tmp_path / "spark"), "--spark", "local[2]"]) == 0
    pool = {r["seed"]: r for r in rows_of(tmp_path / "pool")}
    spark = {r["seed"]: r for r in rows_of(tmp_path / "spark")}
    assert sorted(spark) == [1, 2, 3]
    for seed, row in spark.items():
        assert set(row) == set(pool[seed])
        assert row["digest"] == pool[seed]["digest"]
