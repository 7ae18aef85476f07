"""The test suite's Spark JVM: started with its own log file, and watched (issue 24).

Why. Every Spark test shares one session. When its JVM dies (it once did at random: the
C1-only JIT's 48 MiB code cache filled, the compiler stopped, and the next adapter allocation
threw ``VirtualMachineError``), every later Spark test failed with a py4j connection error
that named nothing, and the JVM's own words landed in whichever test pytest happened to be
capturing. Now:

* ``JvmWatch.start`` points file descriptors 1 and 2 at ``log`` while the JVM is launched, so
  the JVM and every Python worker it forks write there (pyspark's launcher inherits them).
* ``JvmWatch.check`` is run after each test that used the session: the JVM must still be
  running, its SparkContext not stopped, its log free of the fatal marks below, and its code
  cache's peak below ``HEADROOM`` of what is reserved (the wall is seen coming, not hit).
* ``guard`` turns the first bad check into one test error that quotes the JVM's reason and
  names the log; every later test that needs the session is skipped with a pointer to that
  error, instead of failing with the same noise again.

Nothing here retries anything: a dead session stays dead and the run stays red.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_analysis.session import CodeCache, build_session, code_cache

#: Lines of the JVM's output that mean the session is dead or about to be. The first two are
#: HotSpot's own words when the code cache fills (before and when it kills the session).
FATAL_MARKS = (
    "CodeCache is full",
    "Out of space in CodeCache",
    "VirtualMachineError",
    "OutOfMemoryError",
    "A fatal error has been detected by the Java Runtime Environment",
    "SparkContext was shut down",
)
#: The code cache's peak may use at most this share of what is reserved.
HEADROOM = 0.75
MIB = 1 << 20


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """File descriptors 1 and 2 write to ``log`` (appending) inside the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)


def fatal_line(text: str) -> str | None:
    """The first line of a JVM's output that carries one of ``FATAL_MARKS``."""
    for line in text.splitlines():
        if any(mark in line for mark in FATAL_MARKS):
            return line.strip()
    return None


def exit_words(code: int) -> str:
    """A process's return code in words (negative: killed by that signal)."""
    if code < 0:
        try:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


@dataclass
class JvmWatch:
    spark: SparkSession
    log: Path
    #: the first reason found, and the test after which it was found
    death: str | None = None
    victim: str | None = None
    last: CodeCache | None = field(default=None, repr=False)

    @classmethod
    def start(cls, log: Path, *, app_name: str, conf: Mapping[str, str]) -> JvmWatch:
        if SparkSession.getActiveSession() is not None:
            raise RuntimeError("a Spark session is already running in this process")
        with output_to(log):
            spark = build_session("local[2]", app_name=app_name, conf=conf)
        return cls(spark, log)

    def stop(self) -> None:
        """Stop the session; a dead JVM has nothing to stop (pyspark would raise)."""
        if self.death is None and self.check() is None:
            self.spark.stop()

    @property
    def pid(self) -> int:
        return int(self.spark.sparkContext._gateway.proc.pid)  # noqa: SLF001

    def check(self) -> str | None:
        """None while the session is healthy; else why not, in one line."""
        proc = self.spark.sparkContext._gateway.proc  # noqa: SLF001 - pyspark's launcher
        code = proc.poll()
        logged = fatal_line(self.log.read_text(errors="replace")) if self.log.exists() else None
        if code is not None:
            said = f"; it logged: {logged}" if logged else ""
            return f"the Spark JVM is gone: {exit_words(code)}{said}"
        try:
            stopped = bool(self.spark.sparkContext._jsc.sc().isStopped())  # noqa: SLF001
            self.last = code_cache(self.spark)
        except Exception as exc:  # noqa: BLE001 - any py4j failure means no session
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return f"the Spark JVM does not answer ({type(exc).__name__}: {first})" + (
                f"; it logged: {logged}" if logged else "")
        if logged:
            return f"the Spark JVM logged: {logged}"
        if stopped:
            return "the SparkContext was stopped by someone other than the fixture"
        if self.last.peak > HEADROOM * self.last.reserved:
            return (f"the JIT code cache peaked at {self.last.peak / MIB:.0f} MiB of "
                    f"{self.last.reserved / MIB:.0f} MiB reserved (over {HEADROOM:.0%}): "
                    "raise spark_analysis.session.CODE_CACHE_MIB")
        return None


def guard(request: pytest.FixtureRequest, watch_fixture: str = "jvm") -> Iterator[None]:
    """Body of an autouse fixture: skip a Spark test once the JVM is known dead, and report
    the death once, as an error of the test after which it was found."""
    if "spark" not in request.fixturenames:
        yield
        return
    watch: JvmWatch = request.getfixturevalue(watch_fixture)
    if watch.death is not None:
        pytest.skip(f"the Spark session died during {watch.victim} (see its error)")
    yield
    reason = watch.check()
    if reason is not None:
        watch.death, watch.victim = reason, request.node.nodeid
        pytest.fail(f"{reason} (JVM log: {watch.log})", pytrace=False)
