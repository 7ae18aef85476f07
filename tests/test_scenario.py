"""Scenario input: Kafka defaults in the header, and one clear line for every bad input."""

from __future__ import annotations

import pickle
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from emulator.scenario import ScenarioError, load, recorded, resolve

ROOT = Path(__file__).resolve().parent.parent


def test_defaults_are_kafkas_and_depend_on_the_era() -> None:
    sc = load("default")
    assert sc["cluster"]["replica.lag.time.max.ms"] == 30000
    assert sc["cluster"]["replica.high.watermark.checkpoint.interval.ms"] == 5000
    assert sc["topics"][0]["unclean.leader.election.enable"] is False
    old = load("default", ['protocol="0.10"'])
    assert old["cluster"]["replica.lag.time.max.ms"] == 10000
    assert old["topics"][0]["unclean.leader.election.enable"] is True


def test_kraft_eras_default_to_a_three_voter_controller_quorum_and_zookeeper_eras_to_none(
        ) -> None:
    """KRaft (3.7, 4.1) runs its controllers as a Raft quorum: three voters unless a scenario
    says otherwise (1 to 9); 0 keeps the single controller node and is left out of the
    resolved scenario. ZooKeeper's eras have no quorum and refuse one."""
    assert load("default")["cluster"]["controller_quorum"] == 3
    assert load("default", ['protocol="3.7"'])["cluster"]["controller_quorum"] == 3
    assert load("default", ['protocol="3.7"', "cluster.controller_quorum=1"]
                )["cluster"]["controller_quorum"] == 1
    assert "controller_quorum" not in load("default", ["cluster.controller_quorum=0"])["cluster"]
    assert "controller_quorum" not in load("default", ['protocol="2.8"'])["cluster"]
    with pytest.raises(ScenarioError, match="ZooKeeper"):
        load("default", ['protocol="2.8"', "cluster.controller_quorum=3"])


def test_a_header_without_the_quorum_key_replays_as_the_single_controller() -> None:
    """Traces recorded before the quorum was KRaft's default (or with controller_quorum = 0)
    carry no key; re-resolving such a header must not give it three voters."""
    single = load("default", ["cluster.controller_quorum=0"])
    assert resolve(recorded(single), "header") == single
    three = load("default")
    assert resolve(recorded(three), "header") == three
    assert "controller_quorum" not in single["cluster"]   # recorded() copied, not edited


def test_a_scenario_error_crosses_a_process_boundary_whole() -> None:
    """regress and campaigns resolve scenarios in worker processes; the error must unpickle
    (it did not: the pool broke with a traceback instead of the one-line message)."""
    err = ScenarioError("s.toml", "cluster.brokers", "must be >= 1", 4)
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == "s.toml:4: cluster.brokers: must be >= 1" == str(err)
    assert (back.file, back.field, back.line) == ("s.toml", "cluster.brokers", 4)


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
    # the value came from the command line: the error blames that --set, not a line of the
    # file that says something else (issue 23, class 3)
    assert msg.startswith(f"--set {override}: "), msg
    if field:
        assert field in msg
    if words:
        assert words in msg


def _with_target(tmp_path: Path, target: str) -> Path:
    """default.toml with its first fault aimed at ``target`` (TOML text)."""
    text = (ROOT / "scenarios" / "default.toml").read_text()
    f = tmp_path / "targets.toml"
    f.write_text(text.replace('target = "leader:orders-0"', f"target = {target}", 1))
    return f


@pytest.mark.parametrize("target", ['"controller"', '"producer-0"', '"consumer-g0-1"',
                                    '"follower:orders-2"',
                                    '["leader:orders-0", "follower:orders-0/1"]'])
def test_fault_targets_name_nodes_roles_and_followers_of_existing_partitions(
        tmp_path: Path, target: str) -> None:
    """Every form a plan target may take loads: nodes, ``leader:``, ``follower:`` with and
    without a replica index, as a string or in a list."""
    sc = load(str(_with_target(tmp_path, target)))
    assert sc["faults"]["plan"][0]["target"] == tomllib.loads(f"t = {target}")["t"]


@pytest.mark.parametrize("target, words", [
    ('"broker-9"', "unknown node 'broker-9'"),
    ('["broker-1", "brokr-2"]', "unknown node 'brokr-2'"),
    ('"leader:orders-7"', "no partition 'orders-7'"),
    ('"leader:orders-0/1"', "replica index"),
    ('"follower:orders-0/x"', "replica index"),
    ('""', "needs a target"),
    ("[]", "needs a target"),
])
def test_a_fault_aimed_at_nothing_is_refused_at_load(tmp_path: Path, target: str,
                                                     words: str) -> None:
    """A fault on a node or partition that does not exist would silently do nothing (or,
    for a malformed ``follower:``, crash the run): one line naming the file, line, field."""
    f = _with_target(tmp_path, target)
    with pytest.raises(ScenarioError) as err:
        load(str(f))
    assert str(err.value).startswith(f"{f}:")
    assert "faults.plan[0].target" in str(err.value) and words in str(err.value)


def test_bad_file_reports_its_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\n\n[cluster]\nbrokers = 3\n"replica.lag.time.max.ms" = -5\n')
    with pytest.raises(ScenarioError) as err:
        load(str(f))
    assert str(err.value).startswith(f"{f}:5: cluster.replica.lag.time.max.ms")


def test_cli_exits_2_with_one_line_and_writes_no_successful_trace(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    proc = subprocess.run([sys.executable, "-m", "cli", "run", "default", "--set",
                           "topics[0].replication.factor=7", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "replication.factor" in proc.stderr
    assert not out.exists()
