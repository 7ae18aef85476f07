"""One SparkSession for the whole test run (STACK_NOTES §3.8).

``local[1]``, one shuffle partition, UI off, UTC, loopback, and the C1-only JIT with the
serial GC for the test JVM (about half the start-up and first-query time). Every test in this
folder is marked ``spark``; run them with ``pytest tests/spark`` or skip with ``-m "not spark"``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_analysis.session import build_session

TEST_CONF = {
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[1]", app_name="isrlab-tests", conf=TEST_CONF)
    yield session
    session.stop()
