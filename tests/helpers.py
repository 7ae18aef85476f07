"""Small real runs for tests, and the real command line in a subprocess."""

from __future__ import annotations

import atexit
import hashlib
import io
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from emulator.cluster import RunResult, run
from emulator.scenario import load
from traces.writer import TraceWriter

ROOT = Path(__file__).resolve().parent.parent

SMALL = [
    "duration_s=6.0", "heal_s=40.0", "invariants=true",
    "producers[0].rate=80", "topics[0].partitions=2",
]
FAULTY = SMALL + ['faults.nemesis=["kill","power_loss","partition","pause","isolate_leader"]',
                  "faults.interval_s=1.5", "faults.fault_duration_s=2.0"]


_SCRATCH: list[Path] = []


def scenario_file(text: str, stem: str = "scenario") -> Path:
    """``text`` written as a scenario file named by its digest (so one text is one file), in
    this process's scratch folder, removed when the process ends: the tests that build a
    scenario in code and need it as a file (``load``, or the command line) leave nothing
    behind in the system's temporary folder."""
    if not _SCRATCH:
        _SCRATCH.append(Path(tempfile.mkdtemp(prefix="isrlab-tests-")))
        atexit.register(shutil.rmtree, _SCRATCH[0], ignore_errors=True)
    path = _SCRATCH[0] / f"{stem}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.toml"
    if not path.exists():
        path.write_text(text)
    return path


def run_to_bytes(scenario: str, seed: int, overrides: list[str] | None = None
                 ) -> tuple[RunResult, bytes]:
    sc = load(scenario, overrides if overrides is not None else SMALL)
    buf = io.BytesIO()
    res = run(sc, seed, None, writer=TraceWriter(None, buffer=buf))
    return res, buf.getvalue()


def catalog_trace(name: str, *overrides: str, seed: int | None = None) -> bytes:
    """The trace of catalog scenario ``name`` run with its own seed (or ``seed``) and
    ``overrides``, kept for the session as bytes: the catalog's tests, the reassignment and
    scenario tests read the same runs, and each is run once."""
    return _run_once(name, overrides, load(name, list(overrides))["seed"] if seed is None
                     else seed)


@cache
def _run_once(name: str, overrides: tuple[str, ...], seed: int) -> bytes:
    buf = io.BytesIO()
    res = run(load(name, list(overrides)), seed, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return buf.getvalue()


@cache
def catalog_events(name: str, *overrides: str, seed: int | None = None
                   ) -> tuple[dict[str, Any], ...]:
    """Every event of :func:`catalog_trace` (several tests read one run)."""
    return tuple(orjson.loads(line)
                 for line in catalog_trace(name, *overrides, seed=seed).splitlines())


def events(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines()]


def data_topics_only(evs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events of a run minus those of the internal ``__consumer_offsets`` topic, for
    tests that reason about the data topic's partitions alone (the offsets partitions have
    their own leaders, ISR changes and logs: ``tests/test_offsets_topic.py``)."""
    return [e for e in evs if not str(e.get("topic") or "").startswith("__")]


def isrlab(*args: str, cwd: Path = ROOT, timeout: float = 300,
           preexec_fn: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    """``isrlab ARGS`` as a user runs it, in a subprocess; the timeout guards against a
    hang (a command that hangs fails the test instead of stalling the suite)."""
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec_fn)


def one_line(proc: subprocess.CompletedProcess[str], code: int, *words: str) -> str:
    """Exit ``code``, exactly one stderr line holding every word, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


def one_line_exit_2(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """Bad input: one line naming what is wrong, exit 2."""
    return one_line(proc, 2, *words)
