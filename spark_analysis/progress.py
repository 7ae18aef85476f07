"""Progress of a Spark analysis on a terminal: the tasks of every stage the session runs.

``isrlab analyze`` spends its time in Spark jobs it cannot count in advance (the native scan,
the audits, each analysis view, the Parquet writes). ``SparkProgress`` is a daemon thread that
polls the session's ``StatusTracker`` (the same source as Spark's own console bar) twice a
second and draws one ``emulator.progress`` bar: its total is the tasks of every stage seen so
far, its count the tasks completed, its status the number of jobs and the running stage. A
stage that leaves the active list between two polls counts as complete (the tracker drops
finished stages; a failed stage fails the job, and analyze says so itself). The total grows as
stages are submitted, so the ETA is that of the work known so far — tqdm's usual honesty for a
stream whose length it learns late.

Only on a terminal (``Progress(plain=False)``): off a terminal analyze's stderr carries only
its one-line problems, as before. Only for a classic session: under Spark Connect there is no
``sparkContext`` (and the analysis code never needs one), so nothing is drawn.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Final, TextIO

from pyspark.sql import SparkSession

from emulator.progress import Progress

#: how often the tracker is read, seconds
POLL_S: Final = 0.5


class SparkProgress:
    """``with SparkProgress(spark, sys.stderr, "analyze"):`` around the Spark work."""

    def __init__(self, spark: SparkSession, stream: TextIO, label: str, *,
                 poll_s: float = POLL_S) -> None:
        self.spark = spark
        self.poll_s = poll_s
        self.stream = stream
        self.label = label
        #: stage id -> (tasks, tasks completed), every stage seen
        self.stages: dict[int, tuple[int, int]] = {}
        self.jobs: set[int] = set()
        self.bar: Progress | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> SparkProgress:
        if self.stream.isatty() and _classic(self.spark):
            self.bar = Progress(self.stream, 0, self.label, "task", plain=False)
            self._thread = threading.Thread(target=self._run, name="isrlab-spark-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.bar is not None:
            if kind is None:
                self.poll(final=True)
            self.bar.finish()

    def _run(self) -> None:
        while not self._stop.wait(self.poll_s):
            try:
                self.poll()
            except Exception:   # the session is going away (Ctrl-C, a failed start): stop
                return

    def poll(self, *, final: bool = False) -> None:
        """Read the tracker once and move the bar (``final``: every stage seen is done)."""
        assert self.bar is not None
        tracker = self.spark.sparkContext.statusTracker()
        active: dict[int, Any] = {}
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                active[sid] = info
        for sid, (tasks, _done) in list(self.stages.items()):
            if sid not in active or final:
                self.stages[sid] = (tasks, tasks)
        running = ""
        for sid in sorted(active):
            info = active[sid]
            self.stages[sid] = (info.numTasks, info.numCompletedTasks)
            running = info.name.split(" at ")[0]
        self.jobs.update(tracker.getActiveJobsIds())
        total = sum(t for t, _ in self.stages.values())
        done = sum(d for _, d in self.stages.values())
        if total != self.bar.total:
            self.bar.set_total(total)
        status = f"{len(self.jobs)} jobs" + (f", {running}" if running and not final else "")
        self.bar.advance(done - self.bar.done, status)


def _classic(spark: SparkSession) -> bool:
    try:
        spark.sparkContext  # noqa: B018 (Connect raises here)
    except Exception:
        return False
    return True
