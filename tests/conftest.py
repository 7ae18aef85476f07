"""Shared fixtures: small scenarios run for real (no fakes of the emulator)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Spark's local Python workers must be this interpreter (it has msgpack, trio, isrlab).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# A suite started as a background job of a non-interactive shell (``make test &``, a CI
# runner's ``cmd &``) inherits SIGINT ignored, and then Python installs no handler for it:
# the tests that stop a run with SIGINT (tests/test_hostile_input_runs.py, and
# tests/test_trace_writer_interrupts.py's interrupt in a flush) would wait for a
# KeyboardInterrupt that never comes. Python's own handler, as in a terminal; a run this
# suite starts gets the default disposition again on exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


_WORKER_LINES: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """What a worker hands back for the end of the run (the Spark worker: its JVM's line)."""
    _WORKER_LINES.extend(getattr(node, "workeroutput", {}).get("spark_jvm", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _WORKER_LINES:
        terminalreporter.write_line(line)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``make test`` runs two pytest-xdist workers. The units of work, the long ones given out
    first:

    * every test under ``tests/spark``: the test JVM and the corpus are session fixtures, one
      of each, not one per worker (the longest unit);
    * the modules that read whole catalog runs (``helpers.catalog_trace``), together: the
      runs are cached for the session, so one worker runs each catalog scenario once;
    * every other module (its module fixtures stay with it).

    xdist's own ``--dist loadgroup`` would do the first, but it renames node ids through an
    attribute pytest 9.2 no longer reads (``Item._nodeid``)."""
    from xdist.scheduler import LoadScopeScheduling

    class LongFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(SPARK):
                return SPARK
            module = super()._split_scope(nodeid).split("::")[0]
            return CATALOG_RUNS if module in CATALOG_READERS else module

        def _assign_work_unit(self, node: Any) -> None:
            for scope in (CATALOG_RUNS, SPARK):
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return LongFirst(config, log)


SPARK = "tests/spark/"
CATALOG_RUNS = "catalog runs"
CATALOG_READERS = frozenset(f"tests/{m}.py" for m in (
    "test_catalog", "test_reassignment", "test_catalog_scenarios", "test_topic_changes",
    "test_report_drawing"))
