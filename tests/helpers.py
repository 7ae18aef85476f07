"""Small real runs for tests."""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import orjson

from emulator.cluster import RunResult, run
from emulator.scenario import load
from traces.writer import TraceWriter

SMALL = [
    "duration_s=6.0", "heal_s=40.0", "invariants=true",
    "producers[0].rate=80", "topics[0].partitions=2",
]
FAULTY = SMALL + ['faults.nemesis=["kill","power_loss","partition","pause","isolate_leader"]',
                  "faults.interval_s=1.5", "faults.fault_duration_s=2.0"]


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
