"""Independent Spark jobs of one analysis, run side by side from threads.

An analysis is a dozen Spark jobs that need nothing from each other: the anomaly families,
then the views. Run one after another, the cores idle while the driver builds, analyses and
compiles each plan (through Py4J, a few thousand calls per family) and while each stage's
last tasks finish. Started from a few threads, one job's planning overlaps another's tasks
and Spark's scheduler (FIFO) gives the cores to whichever job has tasks ready.

Measured (2 cores, ``/tmp`` script: families and views of ``make demo``'s trace, warm, three
rounds): 20.1–20.5 s one after another, 14.2–19.5 s two at a time, 14.4–16.7 s four at a
time; on 10.24M events (the ``bench/spark.py`` corpus) 63.0 s against 58.3 s two at a time.

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
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final, TypeVar

from pyspark.sql import SparkSession
from pyspark.util import inheritable_thread_target

T = TypeVar("T")

#: Jobs at once: two kept both cores busy on this 2-core machine (four gained nothing more
#: on one trace, and three were slower than two on 10M events).
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
    futures: list[tuple[str, Future[T]]] = []
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
