"""Independent Spark jobs of one analysis, run side by side from threads.

An analysis is a dozen Spark jobs that need nothing from each other: the anomaly families,
then the views. Run one after another, the cores idle while the driver builds, analyses and
compiles each plan (through Py4J, a few thousand calls per family) and while each stage's
last tasks finish. Started from a few threads, one job's planning overlaps another's tasks
and Spark's scheduler (FIFO) gives the cores to whichever job has tasks ready.

Measured on 2026-11-27 (2 cores; a ``/tmp`` script timing the families and views after one
load, rounds alternating): on ``make demo``'s trace, warm, 20.1–20.5 s one job at a time,
14.2–19.5 s two at a time, 14.4–16.7 s four at a time; on the 10.24M events of
``bench/spark.py``, 63.0 s one at a time (98.5 s in the session's first round), 58.3 and
71.4 s two at a time, 61.8 and 66.0 s three at a time. End to end, ``isrlab analyze
--out`` of ``make demo``'s trace took 68.4 and 77.1 s against 82.3 and 83.7 s, with the
same views row for row.

Rules that keep it an implementation detail:

* results come back in the order of the tasks, never of completion, so no output depends on
  which job finished first;
* each task runs with the caller's local properties (job group, description, scheduler pool)
  and tags: a PySpark thread is pinned to a JVM thread of its own, which would otherwise start
  with none (``pyspark.inheritable_thread_target``);
* the first failure is raised as it would have been one job at a time, once the jobs already
  running end; jobs not started yet are dropped; an interrupt cancels the session's jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

from pyspark.sql import SparkSession
from pyspark.util import inheritable_thread_target

T = TypeVar("T")

#: Jobs at once: two keep both cores of this machine busy; more gained nothing measurable
#: (see the module note) and would hold more execution memory at once.
JOBS_AT_ONCE: Final = 2


def side_by_side(spark: SparkSession, tasks: Sequence[tuple[str, Callable[[], T]]],
                 workers: int = JOBS_AT_ONCE) -> Iterator[tuple[str, T]]:
    """Each task's name and result, in the order of ``tasks``, the tasks run ``workers`` at
    a time (``workers`` <= 1: one after another, in this thread)."""
    if workers <= 1 or len(tasks) <= 1:
        for name, task in tasks:
            yield name, task()
        return
    inherit = inheritable_thread_target(spark)
    pool = ThreadPoolExecutor(workers, thread_name_prefix="isrlab-spark")
    try:
        futures = [(name, pool.submit(inherit(task))) for name, task in tasks]
        for name, future in futures:
            yield name, future.result()
    except KeyboardInterrupt:
        _cancel_jobs(spark)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _cancel_jobs(spark: SparkSession) -> None:
    try:
        spark.sparkContext.cancelAllJobs()
    except Exception:  # noqa: BLE001 - under Spark Connect there is no sparkContext
        spark.interruptAll()
