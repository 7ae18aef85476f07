"""Spark and the checker agree on traces the emulator really writes.

Generates ten short runs of the ``reference`` scenario (random nemesis faults, two
partitions, 10 s of workload) across seeds and protocol/config knobs into ``tmp_path`` —
generated traces are never committed — then compares ``analyses.anomaly_counts`` with
``check_file`` trace by trace. Skipped while the emulator is not importable.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_analysis import analyses as A
from spark_analysis.load import load_traces
from traces.checker import check_file

pytestmark = pytest.mark.spark

SMALL = ["--set", "duration_s=10", "--set", "heal_s=30", "--set", "producers.rate=100",
         "--set", "topics.partitions=2"]
KNOBS = ['protocol="4.1"', 'protocol="0.10"', 'protocol="0.11"',
         "topics.unclean.leader.election.enable=true", "topics.min.insync.replicas=1"]
SEEDS = (1, 2)


def generate(folder: Path) -> list[Path]:
    """Run the emulator CLI, two processes at a time (2-core machine)."""
    jobs = [(knob, seed, folder / f"run-{i}-{seed}.jsonl{'.gz' if seed == 2 else ''}")
            for i, knob in enumerate(KNOBS) for seed in SEEDS]
    running: list[subprocess.Popen[bytes]] = []
    for knob, seed, out in jobs:
        if len(running) >= 2:
            running.pop(0).wait(timeout=120)
        running.append(subprocess.Popen(
            [sys.executable, "-m", "emulator.cli", "run", "reference", "--seed", str(seed),
             *SMALL, "--set", knob, "--out", str(out), "--json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for p in running:
        p.wait(timeout=120)
    return [out for _, _, out in jobs if out.exists() and out.stat().st_size > 0]


def test_spark_counts_equal_checker_counts_on_emulator_traces(
    spark: SparkSession, tmp_path: Path
) -> None:
    pytest.importorskip("emulator.cluster")
    paths = generate(tmp_path)
    if len(paths) < len(KNOBS):
        pytest.skip(f"the emulator wrote only {len(paths)} traces")
    loaded = load_traces(spark, [str(tmp_path)])
    assert loaded.bad_lines == []
    got = A.anomaly_counts(loaded.events, loaded.files)
    want = {str(p.resolve()): check_file(p).anomalies for p in paths}
    assert got == want
