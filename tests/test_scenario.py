"""Scenario input: Kafka defaults in the header, and one clear line for every bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from emulator.scenario import ScenarioError, load

ROOT = Path(__file__).resolve().parent.parent


def test_defaults_are_kafkas_and_depend_on_the_era() -> None:
    sc = load("default")
    assert sc["cluster"]["replica.lag.time.max.ms"] == 30000
    assert sc["cluster"]["replica.high.watermark.checkpoint.interval.ms"] == 5000
    assert sc["topics"][0]["unclean.leader.election.enable"] is False
    old = load("default", ['protocol="0.10"'])
    assert old["cluster"]["replica.lag.time.max.ms"] == 10000
    assert old["topics"][0]["unclean.leader.election.enable"] is True


@pytest.mark.parametrize("override, field, words", [
    ("cluster.no.such.key=1", "cluster.no.such.key", "unknown key"),
    ('topics[0].replication.factor=4', "topics[0].replication.factor", "above the broker"),
    ('topics[0].min.insync.replicas=3', "topics[0].min.insync.replicas", None),
    ('network.delay.low_ms=-1', "network.delay.low_ms", "must be >= 0"),
    ('producers[0].acks="2"', "producers[0].acks", "must be one of"),
    ('protocol="9.9"', "protocol", "must be one of"),
    ('bugs=["KAFKA-0"]', "bugs", "unknown bug"),
    ('cluster.brokers="three"', "cluster.brokers", "expected an integer"),
    ('producers[0].enable.idempotence=true', None, None),
])
def test_bad_input_names_file_and_field(override: str, field: str | None,
                                        words: str | None) -> None:
    extra = ['producers[0].acks="1"'] if "idempotence" in override else []
    if override.startswith("topics[0].min.insync"):
        extra = ["topics[0].replication.factor=2"]
    with pytest.raises(ScenarioError) as err:
        load("default", [*extra, override])
    msg = str(err.value)
    assert msg.startswith(str(ROOT / "scenarios" / "default.toml"))
    if field:
        assert field in msg
    if words:
        assert words in msg


def test_bad_file_reports_its_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\n\n[cluster]\nbrokers = 3\n"replica.lag.time.max.ms" = -5\n')
    with pytest.raises(ScenarioError) as err:
        load(str(f))
    assert str(err.value).startswith(f"{f}:5: cluster.replica.lag.time.max.ms")


def test_cli_exits_2_with_one_line_and_writes_no_successful_trace(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "emulator.cli", "run", "default", "--set",
                           "topics[0].replication.factor=7", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "replication.factor" in proc.stderr
    assert not out.exists()
