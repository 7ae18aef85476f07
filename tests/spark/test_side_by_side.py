"""``side_by_side``: an analysis's independent Spark jobs run from threads, and nothing a
caller sees depends on it — the results come in the tasks' order, the jobs carry the caller's
job group, a failure is raised as it would be one job at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from spark_analysis.side_by_side import side_by_side

pytestmark = pytest.mark.spark


def _job(spark: SparkSession, n: int, threads: list[str],
         wait_s: float = 0.0) -> Callable[[], int]:
    def task() -> int:
        threads.append(threading.current_thread().name)
        time.sleep(wait_s)
        return int(spark.range(n).count())
    return task


def test_results_come_in_the_tasks_order_though_the_first_finishes_last(
        spark: SparkSession) -> None:
    threads: list[str] = []
    tasks = [("slow", _job(spark, 3, threads, wait_s=1.5)), ("quick", _job(spark, 5, threads)),
             ("third", _job(spark, 7, threads))]
    finished: list[str] = []
    for name, n in side_by_side(spark, tasks, workers=2):
        finished.append(name)
        assert n == {"slow": 3, "quick": 5, "third": 7}[name]
    assert finished == ["slow", "quick", "third"]
    # run in the pool's threads while the slow one waited: quick started right away
    assert len(threads) == 3 and all(t.startswith("isrlab-spark") for t in threads)


def test_one_worker_runs_the_tasks_in_the_callers_thread_in_order(spark: SparkSession) -> None:
    threads: list[str] = []
    tasks = [(str(n), _job(spark, n, threads)) for n in (4, 2, 9)]
    assert list(side_by_side(spark, tasks, workers=1)) == [("4", 4), ("2", 2), ("9", 9)]
    assert threads == [threading.current_thread().name] * 3


def test_the_jobs_run_in_threads_carry_the_callers_job_group(spark: SparkSession) -> None:
    """A PySpark thread is pinned to a JVM thread of its own, which starts without the
    caller's local properties: without ``inheritable_thread_target`` the group has no job."""
    sc = spark.sparkContext
    group = "isrlab-side-by-side-group"
    sc.setJobGroup(group, "isrlab test")
    try:
        threads: list[str] = []
        done = list(side_by_side(spark, [(str(n), _job(spark, n, threads))
                                         for n in (1, 2, 3)], workers=2))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert [n for _, n in done] == [1, 2, 3]
    assert len(sc.statusTracker().getJobIdsForGroup(group)) >= 3


def test_a_failing_task_is_raised_to_the_caller(spark: SparkSession) -> None:
    def bad() -> int:
        raise ValueError("no such column")

    threads: list[str] = []
    seen: list[str] = []
    with pytest.raises(ValueError, match="no such column"):
        for name, _ in side_by_side(spark, [("ok", _job(spark, 2, threads)), ("bad", bad),
                                            ("later", _job(spark, 3, threads))], workers=2):
            seen.append(name)
    assert seen == ["ok"]
