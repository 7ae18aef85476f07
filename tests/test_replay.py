"""``isrlab replay``: fresh traces replay byte for byte; damage is refused at the right line;
a changed model is reported at its first divergent event."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

import emulator.cluster
from cli import replay as replay_door
from emulator.cluster import run
from emulator.scenario import load
from traces import integrity, replay
from traces.writer import ISRLAB_VERSION, TraceWriter

SHORT = ["duration_s=5.0", "heal_s=30.0", "producers[0].rate=40", "faults.plan=[]"]
FAULTS_ON = [*SHORT, 'faults.nemesis=["kill","partition","pause"]', "faults.interval_s=1.5",
             "faults.fault_duration_s=1.5"]


def record(path: Path, seed: int = 1, overrides: list[str] | None = None,
           scenario: str = "default") -> Path:
    run(load(scenario, SHORT if overrides is None else overrides), seed, str(path))
    return path


def lines_of(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.splitlines(keepends=True)


def reseal(lines: list[bytes], edit: dict[int, dict[str, Any]]) -> list[bytes]:
    """Apply member edits to some lines and re-seal the whole trace validly."""
    out: list[bytes] = []
    sha = hashlib.sha256()
    for i, raw in enumerate(lines):
        if i in edit or i == len(lines) - 1:
            obj = orjson.loads(raw)
            obj.pop("crc")
            obj.update(edit.get(i, {}))
            if obj["event"] == "run_end":
                obj["sha256"] = sha.hexdigest()
            raw = integrity.seal(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS))
        out.append(raw)
        sha.update(raw)
    return out


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One plain-text trace of a faulty run, shared by the damage tests (copied per test)."""
    return record(tmp_path_factory.mktemp("rec") / "t.jsonl", seed=3, overrides=FAULTS_ON)


def stderr_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("isrlab: "), err
    return err.strip()


# --- identical ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seed", "overrides", "name"),
    [
        (1, SHORT, "t.jsonl"),
        (5, FAULTS_ON, "t.jsonl.gz"),
        (6, [*FAULTS_ON, 'protocol="2.8"'], "t.jsonl"),
        (7, [*SHORT, 'faults.nemesis=["power_loss","isolate_leader"]', "faults.interval_s=2.0"],
         "t.jsonl.gz"),
    ],
)
def test_replay_of_a_trace_this_version_wrote_is_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int, overrides: list[str],
    name: str,
) -> None:
    trace = record(tmp_path / name, seed, overrides)
    assert replay_door.main([str(trace)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith(f"identical: {trace}")
    assert out.err == ""


def test_replay_keeps_the_new_trace_with_out_and_it_equals_the_recorded_one(
    tmp_path: Path,
) -> None:
    trace = record(tmp_path / "t.jsonl.gz", 2, FAULTS_ON)
    new = tmp_path / "sub" / "new.jsonl"
    assert replay_door.main([str(trace), "--out", str(new)]) == 0
    assert lines_of(new) == lines_of(trace)


def test_replay_of_a_trace_from_another_version_warns_naming_both_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    trace = record(tmp_path / "t.jsonl", 4, FAULTS_ON)
    trace.write_bytes(b"".join(reseal(lines_of(trace), {0: {"isrlab_version": "0.0.9"}})))
    assert replay_door.main([str(trace)]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "0.0.9" in err and ISRLAB_VERSION in err


# --- damaged traces: exit 2, the first bad line named, nothing run -----------------------------


@pytest.fixture
def no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("a damaged trace must be refused before anything runs")

    monkeypatch.setattr(emulator.cluster, "run", refuse)


def test_a_trace_with_one_altered_value_is_refused_naming_that_line(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    lines = lines_of(recorded)
    k = next(i for i, ln in enumerate(lines) if b'"event":"hw_update"' in ln and i > 200)
    old = orjson.loads(lines[k])["new"]
    lines[k] = lines[k].replace(b'"new":%d' % old, b'"new":%d' % (old + 1), 1)
    bad = tmp_path / "altered.jsonl"
    bad.write_bytes(b"".join(lines))
    assert replay_door.main([str(bad)]) == 2
    assert stderr_line(capsys) == f"isrlab: {bad}:{k + 1}: crc mismatch: the line was altered"


def test_a_trace_with_one_removed_line_is_refused_naming_the_line_after_the_gap(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    lines = lines_of(recorded)
    del lines[300]
    bad = tmp_path / "removed.jsonl.gz"
    bad.write_bytes(gzip.compress(b"".join(lines)))
    assert replay_door.main([str(bad)]) == 2
    line = stderr_line(capsys)
    assert line.startswith(f"isrlab: {bad}:301: expected seq 300, found 301")
    assert "a line is missing" in line


def test_a_trace_with_two_swapped_lines_is_refused_naming_both(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    lines = lines_of(recorded)
    lines[400], lines[401] = lines[401], lines[400]
    bad = tmp_path / "swapped.jsonl"
    bad.write_bytes(b"".join(lines))
    assert replay_door.main([str(bad)]) == 2
    line = stderr_line(capsys)
    assert line.startswith(f"isrlab: {bad}:401: expected seq 400, found 401")
    assert "lines 401 and 402 are swapped" in line


def test_a_cut_off_trace_is_refused_naming_its_last_line(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    data = b"".join(lines_of(recorded))
    n = data.count(b"\n")
    bad = tmp_path / "cut.jsonl"
    bad.write_bytes(data[: len(data) - 150])  # into the middle of a final_log or run_end
    assert replay_door.main([str(bad)]) == 2
    assert stderr_line(capsys).startswith(f"isrlab: {bad}:{n}: line {n} is cut off")
    whole = tmp_path / "no-end.jsonl"
    whole.write_bytes(b"".join(lines_of(recorded)[:-1]))  # cut at a line boundary
    assert replay_door.main([str(whole)]) == 2
    assert f"ends without run_end: line {n - 1}" in stderr_line(capsys)


def test_a_trace_of_another_schema_is_refused_naming_both_versions(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    bad = tmp_path / "schema2.jsonl"
    bad.write_bytes(b"".join(reseal(lines_of(recorded), {0: {"schema": 2}})))
    assert replay_door.main([str(bad)]) == 2
    assert stderr_line(capsys) == (
        f"isrlab: {bad}:1: trace schema 2, this isrlab reads schema 1")


def test_a_file_that_is_not_a_trace_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": "world"}\n')
    assert replay_door.main([str(bad)]) == 2
    assert "not an isrlab trace" in stderr_line(capsys)
    binary = tmp_path / "blob.jsonl.gz"
    binary.write_bytes(bytes(range(256)))
    assert replay_door.main([str(binary)]) == 2
    assert "not an isrlab trace" in stderr_line(capsys)


def test_a_header_whose_scenario_no_longer_validates_is_bad_input(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    header = orjson.loads(lines_of(recorded)[0])
    sc = dict(header["scenario"], cluster={**header["scenario"]["cluster"], "bogus.key": 1})
    bad = tmp_path / "bogus.jsonl"
    bad.write_bytes(b"".join(reseal(lines_of(recorded), {0: {"scenario": sc}})))
    assert replay_door.main([str(bad)]) == 2
    line = stderr_line(capsys)
    assert line.startswith(f"isrlab: {bad}:1: the recorded scenario no longer validates")
    assert "cluster.bogus.key" in line


# --- divergence ---------------------------------------------------------------------------------


def _run_bytes(sc: dict[str, Any], seed: int) -> list[bytes]:
    buf = io.BytesIO()
    run(sc, seed, None, writer=TraceWriter(None, buffer=buf))
    return buf.getvalue().splitlines(keepends=True)


def test_a_changed_model_is_reported_at_its_first_divergent_event_with_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    trace = record(tmp_path / "t.jsonl.gz", 3, FAULTS_ON)
    recorded_lines = lines_of(trace)
    # the deliberate model change: a follower 20 ms behind leaves the ISR, against the
    # replica.lag.time.max.ms the scenario (and the trace header) says
    original = emulator.cluster.Cluster._replica_cfg

    def patched(self: emulator.cluster.Cluster, topic: dict[str, Any]) -> Any:
        return dataclasses.replace(original(self, topic), replica_lag_time_max_ms=20)

    monkeypatch.setattr(emulator.cluster.Cluster, "_replica_cfg", patched)
    changed = _run_bytes(load("default", FAULTS_ON), 3)
    k = next(i for i, (a, b) in enumerate(zip(recorded_lines, changed, strict=False)) if a != b)
    assert k > 10  # the header is the same: the divergence is in the run itself

    assert replay_door.main([str(trace), "--full"]) == 1
    out = capsys.readouterr().out
    assert f"first divergent event: seq {k} (line {k + 1})" in out
    assert f"- recorded seq {k:>8}  {recorded_lines[k].decode().rstrip()}" in out
    assert f"+ replayed seq {k:>8}  {changed[k].decode().rstrip()}" in out
    for seq in range(k - 3, k):  # context: the identical lines before it
        assert f"seq {seq:>8}  {recorded_lines[seq].decode().rstrip()}" in out
    assert "differs in: " in out


def test_a_header_fault_plan_that_the_seed_does_not_regenerate_is_a_divergence_at_seq_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    trace = record(tmp_path / "t.jsonl", 3, FAULTS_ON)
    lines = lines_of(trace)
    plan = orjson.loads(lines[0])["fault_plan"]
    assert plan, "the nemesis planned faults"
    plan[0] = dict(plan[0], at_s=plan[0]["at_s"] + 0.25)
    trace.write_bytes(b"".join(reseal(lines, {0: {"fault_plan": plan}})))
    assert replay_door.main([str(trace)]) == 1
    out = capsys.readouterr().out
    assert "first divergent event: seq 0 (line 1)" in out
    assert "fault plan regenerated from the seed differs" in out
    assert "fault_plan[0].at_s" in out


def test_first_divergence_reports_a_trace_that_ends_early() -> None:
    a = [b"x0", b"x1", b"x2"]
    b = [b"x0", b"x1"]
    d, _n = replay.first_divergence(iter(a), iter(b), context=1)
    assert d is not None and d.seq == 2 and d.replayed is None and d.context == [(1, b"x1")]
    assert replay.first_divergence(iter(a), iter(a)) == (None, 3)


def test_out_may_not_overwrite_the_trace_being_replayed(
    recorded: Path, capsys: pytest.CaptureFixture[str], no_run: None,
) -> None:
    before = recorded.read_bytes()
    assert replay_door.main([str(recorded), "--out", str(recorded)]) == 2
    said = stderr_line(capsys)
    assert "--out" in said and "refusing to overwrite" in said
    assert recorded.read_bytes() == before
