"""analyze's progress on a terminal (issue 23): a bar of the Spark tasks the session runs,
read from Spark's own StatusTracker."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from spark_analysis.progress import SparkProgress

pytestmark = pytest.mark.spark


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _blocked_job(spark: SparkSession, gate: Path, tasks: int) -> threading.Thread:
    """A job of ``tasks`` tasks that each wait until ``gate`` exists (at most a minute)."""
    where = str(gate)

    def wait(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import os
        import time as t
        deadline = t.monotonic() + 60
        while not os.path.exists(where) and t.monotonic() < deadline:
            t.sleep(0.05)
        yield from batches

    df = spark.range(0, tasks, numPartitions=tasks).mapInArrow(wait, "id long")
    job = threading.Thread(target=df.collect, daemon=True)
    job.start()
    return job


def test_on_a_terminal_the_bar_counts_the_tasks_of_every_stage_run(
        spark: SparkSession, tmp_path: Path) -> None:
    out = Terminal()
    gate = tmp_path / "go"
    # the bar's own thread never polls here: the test polls, so what it sees is certain
    with SparkProgress(spark, out, "analyze", poll_s=3600) as progress:
        job = _blocked_job(spark, gate, tasks=4)
        deadline = time.monotonic() + 60
        while not progress.stages and time.monotonic() < deadline:
            progress.poll()
            time.sleep(0.05)
        assert progress.bar is not None and progress.bar.total == 4
        assert progress.bar.done < 4          # every task is held at the gate
        gate.touch()
        job.join(60)
    text = out.getvalue()
    assert "analyze" in text and "4/4" in text and "100%" in text and "task" in text
    assert "1 jobs" in text


def test_off_a_terminal_nothing_is_drawn(spark: SparkSession) -> None:
    out = io.StringIO()
    with SparkProgress(spark, out, "analyze") as progress:
        spark.range(0, 100, numPartitions=2).count()
    assert progress.bar is None and out.getvalue() == ""
