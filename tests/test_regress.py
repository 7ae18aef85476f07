"""The regression suite: every recorded trace replays byte for byte with its verdict, and a
change of digest or verdict fails until it is re-recorded on purpose
(``isrlab regress --record``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from cli import regress as regress_door
from emulator.scenario import catalog
from traces import regress

INDEX = regress.load_index(regress.DEFAULT_DIR)


@pytest.fixture(scope="module")
def verified() -> dict[str, list[str]]:
    """Every entry verified once, in a process pool (2 cores: half the wall time)."""
    results = regress.verify_all(regress.DEFAULT_DIR, INDEX, jobs=os.cpu_count() or 1)
    return {e["name"]: problems for e, problems in zip(INDEX, results, strict=True)}


@pytest.mark.parametrize("entry", INDEX, ids=[e["name"] for e in INDEX])
def test_recorded_run_replays_byte_identically_with_its_verdict(
    entry: dict[str, Any], verified: dict[str, list[str]],
) -> None:
    problems = verified[entry["name"]]
    assert not problems, (
        f"{entry['name']} changed:\n" + "\n".join(problems)
        + "\nIf the change is intended, re-record: isrlab regress --record")


def test_every_catalog_scenario_has_a_recorded_trace() -> None:
    recorded = {e["scenario"] for e in INDEX if e.get("kind") == "catalog"}
    missing = [name for name, _ in catalog() if name not in recorded]
    assert not missing, f"not recorded: {missing}; run isrlab regress --record"


def test_recorded_traces_are_small_gzip_files() -> None:
    for entry in INDEX:
        path = regress.DEFAULT_DIR / entry["file"]
        assert path.read_bytes()[:2] == b"\x1f\x8b", path
        assert path.stat().st_size < 200_000, path


# --- a tampered copy of the index ----------------------------------------------------------------


def smallest() -> dict[str, Any]:
    return min(INDEX, key=lambda e: (regress.DEFAULT_DIR / e["file"]).stat().st_size)


def suite_copy(tmp_path: Path, **changes: Any) -> tuple[Path, dict[str, Any]]:
    """A one-entry copy of the suite in tmp_path, the entry's index fields changed."""
    entry = smallest()
    shutil.copy(regress.DEFAULT_DIR / entry["file"], tmp_path / entry["file"])
    tampered = {**entry, **changes}
    (tmp_path / "index.json").write_text(json.dumps({"entries": [tampered]}))
    return tmp_path, tampered


def run_regress(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = regress_door.main(list(argv))
    return code, capsys.readouterr().out


def test_an_untampered_copy_of_the_suite_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    directory, entry = suite_copy(tmp_path)
    code, out = run_regress(capsys, "--dir", str(directory), "--only", entry["name"])
    assert code == 0, out
    assert f"ok       {entry['name']}" in out


def test_regress_fails_when_the_digest_changed_without_a_rerecord(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    directory, entry = suite_copy(tmp_path, digest="0" * 64)
    code, out = run_regress(capsys, "--dir", str(directory), "--only", entry["name"],
                            "--jobs", "1")
    assert code == 1
    assert f"CHANGED  {entry['name']}" in out
    assert "digest changed 000000000000… →" in out
    assert "isrlab regress --record" in out


def test_regress_fails_when_the_verdict_changed_without_a_rerecord(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    verdict = json.loads(json.dumps(smallest()["verdict"]))
    verdict["anomalies"]["lost_acked_write"] += 2
    verdict["expect_met"] = not verdict["expect_met"]
    directory, entry = suite_copy(tmp_path, verdict=verdict)
    code, out = run_regress(capsys, "--dir", str(directory), "--only", entry["name"])
    assert code == 1
    assert "verdict changed: lost_acked_write " in out
    assert "expect_met" in out
    assert "digest changed" not in out


def test_regress_fails_when_the_scenario_behind_an_entry_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    entry = smallest()
    directory, _ = suite_copy(tmp_path, overrides=[*entry["overrides"], "heal_s=55.5"])
    code, out = run_regress(capsys, "--dir", str(directory), "--only", entry["name"])
    assert code == 1
    assert "scenario definition changed since recording: heal_s" in out


def test_record_rewrites_the_index_and_prints_what_changed_then_verify_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    directory, entry = suite_copy(tmp_path, digest="0" * 64)
    code, out = run_regress(capsys, "--record", "--dir", str(directory), "--only",
                            entry["name"])
    assert code == 0
    assert f"CHANGED  {entry['name']}" in out and "digest 000000000000… →" in out
    rewritten = regress.load_index(directory)
    assert [e["digest"] for e in rewritten] == [smallest()["digest"]]
    code, out = run_regress(capsys, "--dir", str(directory), "--only", entry["name"])
    assert code == 0, out


def test_a_missing_index_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert regress_door.main(["--dir", str(tmp_path)]) == 2
    assert "regress --record" in capsys.readouterr().err


@pytest.mark.parametrize("jobs", ["-1", "-3"])
def test_a_negative_jobs_count_is_one_line_and_exit_2(
    jobs: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """It used to run the suite one entry at a time, as if asked for that."""
    assert regress_door.main(["--jobs", jobs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--jobs: must be >= 1, or 0 for all cores; got {jobs}" in err


def test_fit_keeps_scripted_faults_and_scales_rates_down() -> None:
    overrides = regress.fit("default")
    assert not any(o.startswith("duration_s=") for o in overrides)  # faults end at 17 s
    rate = next(o for o in overrides if o.startswith("producers[0].rate="))
    assert float(rate.split("=")[1]) < 200
    assert regress.fit("default", halvings=1) != overrides
