"""isrlab shrink: a failing run's fault plan shrinks to a few faults that still fail.

The failing run is found, not hard-coded: era 0.10 with acks=1 and leader kills loses acked
writes on most seeds, and the test takes the first seed with at least ten faults, so it
survives changes to the protocol and to the nemesis.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from cli.shrink import main
from emulator.cluster import run
from emulator.scenario import load
from faults.shrink_cli import dumps_toml
from traces.checker import check_file
from traces.explain import explain, format_text
from traces.reader import iter_events

TARGETS = ("lost_acked_uncommitted", "lost_acked_write")
LOSSY = ["duration_s=12", "heal_s=20", "producers[0].rate=50", 'protocol="0.10"',
         'producers[0].acks="1"', "producers[0].enable.idempotence=false",
         'faults.nemesis=["kill","isolate_leader"]', "faults.interval_s=1",
         f"expect.forbid={list(TARGETS)!r}".replace("'", '"')]


def fault_plan(trace: Path) -> list[dict[str, object]]:
    with iter_events(trace) as events:
        plan: list[dict[str, object]] = next(events)["fault_plan"]
    return plan


def failing_trace(directory: Path) -> tuple[Path, list[str]]:
    """The first seed's trace with >= 10 faults that loses acked writes, and its targets."""
    sc = load("default", LOSSY)
    path = directory / "orig.jsonl"
    for seed in range(1, 41):
        run(sc, seed, str(path))
        found = check_file(path)
        if len(fault_plan(path)) >= 10 and found.forbidden_found:
            return path, list(found.forbidden_found)
    pytest.fail("no seed in 1..40 fails with >= 10 faults")


def test_toml_writer_round_trips_a_resolved_scenario() -> None:
    sc = load("default", LOSSY)
    text = dumps_toml(sc, "a comment\nover two lines")
    assert text.startswith("# a comment\n# over two lines\n")
    assert tomllib.loads(text) == sc


def test_shrink_cuts_a_ten_fault_failing_run_to_at_most_five_faults_that_still_fail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace, targets = failing_trace(tmp_path)
    before = len(fault_plan(trace))
    out = tmp_path / "shrunk"
    assert main([str(trace), "--out", str(out), "--budget", "120"]) == 0
    printed = capsys.readouterr().out
    assert f"faults       {before:>6} -> " in printed
    assert f"reproduce: isrlab run {out / 'shrunk.toml'}" in printed

    text = (out / "shrunk.toml").read_text()
    assert text.startswith(f"# Shrunk by `isrlab shrink` from {trace}")
    sc = load(str(out / "shrunk.toml"))  # what `isrlab run shrunk.toml` loads
    assert sc["faults"]["nemesis"] == []
    assert 1 <= len(sc["faults"]["plan"]) <= 5
    assert sc["duration_s"] <= 12
    again = tmp_path / "again.jsonl"
    run(sc, sc["seed"], str(again))
    result = check_file(again)
    assert all(result.anomalies[a] > 0 for a in targets)
    assert not result.expect_met
    recorded = check_file(out / "shrunk.jsonl")
    assert recorded.anomalies == result.anomalies


def test_shrink_refuses_a_run_that_does_not_fail(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sc = load("default", ["duration_s=4", "heal_s=20", "producers[0].rate=50",
                          "expect.forbid=[]"])
    trace = tmp_path / "ok.jsonl"
    run(sc, 1, str(trace))
    assert main([str(trace), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "does not fail" in err


@pytest.mark.parametrize("content, args, words", [
    ("not a trace\n", [], "not an isrlab trace"),
    (None, ["--anomaly", "meteor_strike"], "unknown anomaly"),
    (None, ["--budget", "0"], "--budget"),
])
def test_shrink_bad_input_exits_2_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None,
        args: list[str], words: str) -> None:
    trace = tmp_path / "t.jsonl"
    if content is None:
        run(load("default", ["duration_s=2", "heal_s=10"]), 1, str(trace))
    else:
        trace.write_text(content)
    assert main([str(trace), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert words in err


@pytest.mark.parametrize("scenario, overrides, anomaly", [
    # S1's two essential crashes buried in ~30 random short faults
    ("s1-kip101-hw-truncation",
     ['faults.nemesis=["delay","pause","kill"]', "faults.budget=false",
      "faults.interval_s=0.5", "faults.fault_duration_s=0.3"],
     "lost_acked_write"),
    # S6's partition (the leader with the producer, away from its followers and the
    # active controller) among ~35 random splits and link delays (with the three-voter
    # controller quorum and pauses in the mix, no seed of 1-60 lost a write; without the
    # pauses seed 4 does)
    ("s6-acks1-leader-failover",
     ["faults.plan=[]", 'faults.nemesis=["split","delay"]',
      "faults.budget=false", "faults.interval_s=1.0", "faults.fault_duration_s=10.0",
      "duration_s=40.0"],
     "lost_acked_uncommitted"),
])
def test_shrink_takes_a_30_fault_catalog_run_down_to_at_most_five_faults(
        tmp_path: Path, scenario: str, overrides: list[str], anomaly: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 5: S1 and S6 in random-fault mode with >= 30 faults shrink to <= 5 faults
    and the shrunk scenario still fails the same way when run again."""
    sc = load(scenario, overrides)
    trace = tmp_path / "orig.jsonl"
    for seed in range(1, 31):
        run(sc, seed, str(trace))
        if len(fault_plan(trace)) >= 30 and check_file(trace).anomalies[anomaly]:
            break
    else:
        pytest.fail(f"no seed of {scenario} shows {anomaly} with >= 30 faults")
    out = tmp_path / "shrunk"
    assert main([str(trace), "--out", str(out), "--anomaly", anomaly, "--budget", "150"]) == 0
    capsys.readouterr()
    shrunk = load(str(out / "shrunk.toml"))
    assert 1 <= len(shrunk["faults"]["plan"]) <= 5
    again = tmp_path / "again.jsonl"
    run(shrunk, shrunk["seed"], str(again))
    assert check_file(again).anomalies[anomaly] > 0
    # Issue 20: the shrunk failure's explanation fits on a screen (at most 30 lines: S6's
    # shrunk run loses its acks=1 writes in up to three stretches, a chain of 5-8 lines
    # each, beside a line per informational anomaly) and names a rule for the anomaly it
    # was shrunk for
    ex = explain(str(out / "shrunk.jsonl"))
    text = format_text(ex)
    assert len(text.splitlines()) <= 30, text
    assert any(c.anomaly == anomaly and c.rule != "unexplained" for c in ex.chains), text
