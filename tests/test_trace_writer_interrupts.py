"""A run stopped by a signal seals its trace whole (tests/test_hostile_input_runs.py stops a
whole run; this pins the instant that run hit about one time in thirty on a busy machine).

The writer hands the file 256 lines at a time. KeyboardInterrupt, raised by the SIGINT
handler at whatever bytecode is running, once landed between the batch being taken and
being written: 256 lines were lost, ``run_end`` was numbered past the gap, and the run's
own trace did not verify. A flush now defers SIGINT and SIGTERM until it is done — by
swapping their Python handlers, since blocking them in the writing thread did not stop
another thread from taking the signal (the second test).
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from traces.reader import read_trace
from traces.writer import TraceWriter


class _InterruptedWhileWriting(io.BytesIO):
    """A file that gets SIGINT (to this process) in the middle of its first write."""

    def __init__(self) -> None:
        super().__init__()
        self.signalled = False

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if not self.signalled:
            self.signalled = True
            os.kill(os.getpid(), signal.SIGINT)
        return super().write(data)


def test_an_interrupt_during_a_flush_loses_no_line_and_the_sealed_trace_verifies(
        tmp_path: Path) -> None:
    _interrupted_run_verifies(_InterruptedWhileWriting(), tmp_path)


def _interrupted_run_verifies(buf: _InterruptedWhileWriting | _InterruptedThroughAnotherThread,
                              tmp_path: Path) -> None:
    """Lines written through ``buf`` until the interrupt, then sealed as an aborted run: the
    trace verifies whole (every seq in order, every crc, run_end's count and sha256)."""
    w = TraceWriter(None, buffer=buf)
    w.start(seed=1, scenario={}, fault_plan=[], protocol="4.1")
    with pytest.raises(KeyboardInterrupt):
        for i in range(1_000):
            w.emit(i, "broker-1", "broker", "tick", {"i": i})
    assert buf.signalled
    written = w.events
    w.close("aborted", error_type="KeyboardInterrupt", error_message="interrupted")
    path = tmp_path / "t.jsonl"
    path.write_bytes(buf.getvalue())
    trace = read_trace(path)
    assert len(trace.events) + 1 == written
    assert trace.footer is not None and trace.footer["status"] == "aborted"
    assert trace.footer["events"] == written


class _InterruptedThroughAnotherThread(io.BytesIO):
    """A file whose first write sends SIGINT to another thread of this process: the kernel
    hands a process-directed signal to any thread that does not block it (tqdm's monitor
    thread, py4j's), and Python then runs the handler in the main thread at its next
    bytecode — inside the flush."""

    def __init__(self, thread: threading.Thread) -> None:
        super().__init__()
        self.thread = thread
        self.signalled = False

    def write(self, data: bytes) -> int:  # type: ignore[override]
        n = super().write(data)
        if not self.signalled:
            self.signalled = True
            assert self.thread.ident is not None
            signal.pthread_kill(self.thread.ident, signal.SIGINT)
            time.sleep(0.05)   # the other thread's C handler has run: the handler is due
        return n


def test_an_interrupt_that_another_thread_receives_during_a_flush_loses_no_line(
        tmp_path: Path) -> None:
    """Blocking the signals in the writing thread (``pthread_sigmask``) did not cover this:
    under the Spark worker of ``make test`` (py4j's threads) the batch was written, the
    interrupt landed before the sink counted it, and ``run_end`` wrote it a second time
    (seq 0 again after 255: the trace did not verify)."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        _interrupted_run_verifies(_InterruptedThroughAnotherThread(other), tmp_path)
    finally:
        stop.set()
        other.join()
