"""isrlab campaign: result rows, resume, Ctrl-C, bad input, determinism check, Spark.

Real runs of tiny scenarios (4 simulated s of workload, 50 records/s) in real worker pools.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cli.campaign import config_from_args, main
from faults.campaign import parse_seeds, read_results
from traces.checker import check_file

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--set", "duration_s=4", "--set", "heal_s=20", "--set", "producers[0].rate=50"]
#: broker kills every second: replicas leave and rejoin the ISR on every seed
KILLS = TINY + ["--set", 'faults.nemesis=["kill"]', "--set", "faults.interval_s=1"]
NOTHING_FORBIDDEN = ["--set", "expect.forbid=[]"]
ROW_KEYS = {"seed", "digest", "verdict", "expect_met", "status", "anomalies", "forbidden_found",
            "missing_expected", "events", "sim_seconds", "wall_seconds", "trace", "faults",
            "fault_kinds"}


def rows_of(out: Path) -> list[dict[str, Any]]:
    lines = (out / "results.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"", "results.jsonl must end with a newline"
    return [json.loads(line) for line in lines[:-1]]


def test_parse_seeds_includes_both_ends_and_refuses_an_empty_range() -> None:
    assert list(parse_seeds("3:5")) == [3, 4, 5]
    assert list(parse_seeds("7")) == [7]
    for bad in ("9:3", "a:b", "-1:2", "1:"):
        with pytest.raises(Exception, match="--seeds"):
            parse_seeds(bad)


def test_swarm_flag_becomes_the_faults_swarm_override() -> None:
    cfg = config_from_args(["default", "--seeds", "1:2", "--swarm"])
    assert cfg.overrides[-1] == "faults.swarm=true"


def test_read_results_ignores_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    good = (b'{"seed":1,"verdict":"ok","anomalies":{}}\n'
            b'{"seed":2,"verdict":"ok","anomalies":{}}\n')
    path.write_bytes(good + b'{"seed":3,"ver')
    rows, valid = read_results(path)
    assert sorted(rows) == [1, 2]
    assert valid == len(good)


def test_campaign_writes_a_row_per_seed_then_resumes_only_the_missing_seeds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c"
    assert main(["default", "--seeds", "1:4", "--jobs", "2", "--out", str(out),
                 *TINY, *NOTHING_FORBIDDEN]) == 0
    first = rows_of(out)
    assert sorted(r["seed"] for r in first) == [1, 2, 3, 4]
    for r in first:
        assert ROW_KEYS <= set(r)
        assert (r["trace"] is None) == (r["verdict"] == "ok")  # passing traces are not kept
        assert len(r["digest"]) == 64 and r["sim_seconds"] > 0
        assert "lost_acked_write" in r["anomalies"]
    assert not list(out.glob(".isrlab-scratch-*"))   # its scratch folder removed
    prefix = (out / "results.jsonl").read_bytes()
    with (out / "results.jsonl").open("ab") as fh:  # a driver killed while writing seed 5
        fh.write(b'{"seed":5,"dige')
    capsys.readouterr()

    assert main(["default", "--seeds", "1:6", "--jobs", "2", "--out", str(out),
                 *TINY, *NOTHING_FORBIDDEN]) == 0
    assert "4 of 6 seeds already done" in capsys.readouterr().err
    assert (out / "results.jsonl").read_bytes().startswith(prefix)
    rows = rows_of(out)
    assert [r["seed"] for r in rows[:4]] == [r["seed"] for r in first]
    assert sorted(r["seed"] for r in rows[4:]) == [5, 6]


def test_campaign_exits_1_keeps_only_failing_traces_and_prints_the_reproduce_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c"
    forbid = ["--set", 'expect.forbid=["isr_churn"]']  # forbidden here, to force failures
    assert main(["default", "--seeds", "1:4", "--out", str(out), *KILLS, *forbid]) == 1
    rows = rows_of(out)
    failing = [r for r in rows if r["verdict"] == "fail"]
    assert failing
    for r in rows:
        if r["verdict"] == "fail":
            assert r["forbidden_found"] == ["isr_churn"]
            assert r["trace"].endswith(".jsonl.gz") and Path(r["trace"]).exists()
            assert check_file(r["trace"]).anomalies["isr_churn"] == r["anomalies"]["isr_churn"]
        else:
            assert r["trace"] is None
    assert "crash" in failing[0]["fault_kinds"]
    summary = capsys.readouterr().out
    seed = min(r["seed"] for r in failing)
    assert f"isrlab run default --seed {seed} --set duration_s=4" in summary
    assert "isr_churn" in summary


@pytest.mark.parametrize("args, field", [
    (["--seeds", "9:3"], "--seeds"),
    (["--seeds", "1:2", "--set", 'faults.nemesis=["meteor"]'], "faults.nemesis"),
    (["--seeds", "1:2", "--jobs", "-3"], "--jobs"),
    (["--seeds", "1:2", "--check-determinism", "2"], "--check-determinism"),
])
def test_campaign_bad_input_exits_2_with_one_line(
        args: list[str], field: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["default", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert field in err


def test_campaign_refuses_an_out_dir_below_a_regular_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["default", "--seeds", "1:2", "--out", str(blocker / "dir"), *TINY]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--out" in err


def test_campaign_refuses_to_resume_with_other_settings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c"
    out.mkdir()
    (out / "campaign.json").write_text('{"scenario": "default", "scenario_sha256": "0"}')
    assert main(["default", "--seeds", "1:2", "--out", str(out), *TINY]) == 2
    assert "another scenario or other --set values" in capsys.readouterr().err


def test_campaign_determinism_check_passes_on_a_normal_campaign(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["default", "--seeds", "1:4", "--jobs", "2", "--out", str(tmp_path / "c"),
                 "--check-determinism", "0.5", *TINY, *NOTHING_FORBIDDEN])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "determinism: re-ran 2 of 4 seeds" in err and "every digest equal" in err


@pytest.mark.parametrize("record, words", [
    ("{", "damaged"), ('["not", "a", "record"]', "damaged"), (None, "no campaign.json"),
])
def test_a_damaged_or_missing_campaign_record_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], record: str | None,
        words: str) -> None:
    """Issue 23, class 7: a corrupt or missing campaign.json let a resume with other
    settings mix two campaigns in one folder."""
    out = tmp_path / "c"
    out.mkdir()
    (out / "results.jsonl").write_text('{"seed": 1, "verdict": "ok", "anomalies": {}}\n')
    if record is not None:
        (out / "campaign.json").write_text(record)
    assert main(["default", "--seeds", "1:2", "--out", str(out), *TINY]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_malformed_rows_run_again_and_the_report_survives_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Class 7: a malformed row of results.jsonl gave a traceback on every resume and in
    the report; now its seed runs again and the report names the unreadable lines."""
    from cli import report
    out = tmp_path / "c"
    args = ["default", "--seeds", "1:3", "--jobs", "1", "--out", str(out), *TINY,
            *NOTHING_FORBIDDEN]
    assert main(args) == 0
    with (out / "results.jsonl").open("a") as fh:
        fh.write('{"seed": 2, "verdict": "ok", "anomalies": "many"}\n[1, 2]\nnot json\n'
                 '{"seed": "x"}\n')
    assert set(read_results(out / "results.jsonl")[0]) == {1, 3}
    capsys.readouterr()
    assert main(args) == 0
    said = capsys.readouterr().err
    for line in (4, 5, 6, 7):   # each unusable row is named on resume
        assert f"results.jsonl:{line}: not a result row" in said, said
    rows, _ = read_results(out / "results.jsonl")
    assert sorted(rows) == [1, 2, 3]
    assert report.main([str(out), "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "not JSON" in html and "Traceback" not in html
    assert "seed &#x27;x&#x27; is not a seed" in html or "seed 'x' is not a seed" in html
    from report.campaign import load_campaign
    runs, _problems, _ = load_campaign(out)
    assert sorted(r.seed for r in runs) == [1, 2, 3]   # the bogus row is not a run


def test_an_infrastructure_error_is_said_plainly_and_retried_on_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Class 7: a full disk was recorded as failing seeds that a resume never retried. Here
    the traces folder cannot be created (a file is in its way): the seeds are not done, the
    summary says so, and once the way is clear a resume runs them."""
    out = tmp_path / "c"
    # a campaign folder (seed 3 run, its trace not kept), then the file in the way
    assert main(["default", "--seeds", "3:3", "--jobs", "1", "--out", str(out), *TINY,
                 *NOTHING_FORBIDDEN]) == 0
    capsys.readouterr()
    (out / "traces").write_text("in the way")
    args = ["default", "--seeds", "1:2", "--jobs", "1", "--out", str(out), "--keep-all",
            *TINY, *NOTHING_FORBIDDEN]
    assert main(args) == 1
    said = capsys.readouterr().out
    assert "INFRASTRUCTURE ERRORS: 2 seeds" in said and "0/2 done" in said
    assert sorted(read_results(out / "results.jsonl")[0]) == [3]
    (out / "traces").unlink()
    assert main(args) == 0
    rows, _ = read_results(out / "results.jsonl")
    assert sorted(rows) == [1, 2, 3]
    assert all(Path(rows[s]["trace"]).is_file() for s in (1, 2))


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_campaign_stops_cleanly_on_a_signal_with_valid_results(
        tmp_path: Path, sig: signal.Signals, code: int) -> None:
    """Ctrl-C, and SIGTERM alike (class 7): the summary, valid files, the workers gone."""
    out = tmp_path / "c"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "campaign", "default", "--seeds", "1:500",
         "--jobs", "2", "--out", str(out), *TINY],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        results = out / "results.jsonl"
        while not (results.exists() and results.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert results.exists(), "no row within 60 s"
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert "interrupted" in stdout
    rows = rows_of(out)
    seeds = [r["seed"] for r in rows]
    assert 1 <= len(seeds) < 500 and len(set(seeds)) == len(seeds)
    assert not list(out.glob(".isrlab-scratch-*"))   # its scratch folder removed
