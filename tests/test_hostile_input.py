"""Hostile input (issues 23 and 47): every door answers bad input with one line and exit 2,
never a traceback, never an overwritten input, never a hang. The suite is three files:

* this one: flags, scenario values, and the doors that write folders (campaign, shrink,
  explore, compare, regress ``--record``): a foreign folder survives them, shrink never
  writes over its input, a campaign killed by SIGKILL leaves no process behind;
* ``test_hostile_input_runs.py``: the doors that run and write files (run, replay, report,
  the scenario loader): whole-or-nothing outputs, /dev/null, /dev/full, a full disk, two
  writers at once, signals (INCOMPLETE, exit 3), Kafka's topic-name rules, decommissions;
* ``test_hostile_input_traces.py``: the doors that read traces and logs (check, show,
  explain, regress, import, analyze before Spark): FIFOs and devices, line-length bounds,
  the one trace contract, BOM and CR LF, values no field holds, truncated gzip logs.

Each test names its class of the issue. The classes whose doors are Spark's (analyze on
doctored, misnamed or unreachable inputs) are tested in tests/spark/test_bad_input.py, the
campaign folder's in tests/test_campaign.py, the checker's incomplete traces in
tests/test_checker.py."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import isrlab, one_line_exit_2

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "regressions" / "s2-kip101-power-loss-divergence.jsonl.gz"


def test_a_reader_that_goes_away_ends_the_command_quietly() -> None:
    """Class 8: ``isrlab check T | head -1`` — the pipe closes after one line; no
    BrokenPipeError traceback."""
    proc = subprocess.run(f"{shlex.quote(sys.executable)} -m cli check "
                          f"{shlex.quote(str(TRACE))} | head -1", shell=True, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout.count("\n") == 1   # the verdict's line, in words
    assert proc.stdout.split()[0].rstrip(":") in ("LOST", "DIVERGED", "UNSAFE", "SAFE")
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_show_refuses_a_window_that_ends_before_it_starts() -> None:
    """Class 8: ``show --from 10 --to 5`` printed nothing and exited 0."""
    one_line_exit_2(isrlab("show", str(TRACE), "--from", "10", "--to", "5"), "--from",
                     "after --to")


@pytest.mark.parametrize("flag, value", [("--to", "inf"), ("--from", "nan"),
                                         ("--to", "-inf")])
def test_show_refuses_a_time_that_is_not_a_finite_number(flag: str, value: str) -> None:
    """Class 2/8: ``show --to inf`` raised OverflowError; now one line and exit 2."""
    one_line_exit_2(isrlab("show", str(TRACE), f"{flag}={value}"), flag, "finite")


def test_run_refuses_to_write_its_trace_over_its_scenario(tmp_path: Path) -> None:
    """Class 5: ``run X.toml --out X.toml`` replaced the scenario with a trace."""
    scenario = tmp_path / "x.toml"
    shutil.copy(ROOT / "scenarios" / "default.toml", scenario)
    before = scenario.read_bytes()
    one_line_exit_2(isrlab("run", str(scenario), "--out", str(scenario)), "--out",
                     "refusing to overwrite")
    assert scenario.read_bytes() == before


def test_report_refuses_to_write_over_its_input(tmp_path: Path) -> None:
    """Class 5: ``report T.jsonl.gz -o T.jsonl.gz`` replaced the trace with HTML."""
    trace = tmp_path / "t.jsonl.gz"
    shutil.copy(TRACE, trace)
    before = trace.read_bytes()
    one_line_exit_2(isrlab("report", str(trace), "-o", str(trace)), "-o",
                     "refusing to overwrite")
    assert trace.read_bytes() == before


def test_a_scenario_name_cannot_write_outside_out(tmp_path: Path) -> None:
    """Class 5: ``name = "../../x"`` made the default trace path escape ``out/``."""
    scenario = tmp_path / "evil.toml"
    scenario.write_text('name = "../../evil"\n')
    proc = isrlab("run", str(scenario), cwd=tmp_path)
    one_line_exit_2(proc, "name", "--out")
    assert not list(tmp_path.parent.glob("evil*")) and not (tmp_path / "out").exists()


def test_the_printed_replay_line_works_when_pasted(tmp_path: Path) -> None:
    """Class 6: the "replay with:" line quotes what the shell would otherwise eat
    (``acks="1"`` became the TOML integer 1): pasted into a shell it runs the same run."""
    sets = ['producers[0].acks="1"', "producers[0].enable.idempotence=false",
            "duration_s=2.0", "heal_s=5.0", "faults.plan=[]"]
    first = isrlab("run", "default", *[x for s in sets for x in ("--set", s)], "--out",
                    str(tmp_path / "a.jsonl"))
    assert first.returncode in (0, 1), first.stderr
    line = next(x for x in first.stdout.splitlines() if x.startswith("replay with: "))
    argv = shlex.split(line[len("replay with: "):])
    assert argv[:2] == ["isrlab", "run"]
    again = isrlab(*argv[1:], "--out", str(tmp_path / "b.jsonl"))
    assert again.returncode == first.returncode, again.stderr
    digest = [x for x in first.stdout.splitlines() if x.startswith("digest")]
    assert digest and digest == [x for x in again.stdout.splitlines()
                                 if x.startswith("digest")]


@pytest.mark.parametrize("override, field, words", [
    ("duration_s=inf", "duration_s", "finite"),
    ("heal_s=nan", "heal_s", "finite"),
    ("producers[0].rate=inf", "producers[0].rate", "finite"),
    ("network.delay.low_ms=inf", "network.delay.low_ms", "finite"),
    ("cluster.brokers=100000000", "cluster.brokers", "within"),
    ("topics[0].partitions=100000000", "topics[0].partitions", "within"),
    ("producers[0].rate=1e12", "producers[0].rate", "within"),
    ("seed=1180591620717411303424", "seed", "64-bit"),
    ("duration_s=1e12", "duration_s", "within"),
    ("consumers[0].members=1000000000", "consumers[0].members", "within"),
    ("cluster.num.replica.fetchers=1000000000", "cluster.num.replica.fetchers", "within"),
])
def test_non_finite_and_absurd_numbers_are_refused_at_load(override: str, field: str,
                                                          words: str) -> None:
    """Class 2: ``nan``/``inf`` and sizes no emulated run can finish (``rate=inf`` never
    ended and wrote gigabytes) are bad input: one line naming the field, exit 2, before the
    run starts."""
    from emulator.scenario import ScenarioError, load
    with pytest.raises(ScenarioError) as err:
        load("default", [override])
    assert field in str(err.value) and words in str(err.value)


def test_a_seed_beyond_64_bits_on_the_command_line_is_refused(tmp_path: Path) -> None:
    """Class 2: ``--seed 2^70`` is bad input (a trace carries a 64-bit seed)."""
    one_line_exit_2(isrlab("run", "default", "--seed", str(2**70), "--out",
                             str(tmp_path / "t.jsonl")), "--seed")
    assert not (tmp_path / "t.jsonl").exists()


def test_a_bad_set_value_is_blamed_on_the_set_not_on_a_line_of_the_file() -> None:
    """Class 3: default.toml's line 21 says ``rate = 200``; ``--set producers[0].rate=inf``
    used to be reported as ``default.toml:21``, a line that is fine."""
    from emulator.scenario import ScenarioError, load
    with pytest.raises(ScenarioError) as err:
        load("default", ["producers[0].rate=inf"])
    assert str(err.value).startswith("--set producers[0].rate=inf: producers[0].rate: ")
    assert "default.toml" not in str(err.value)


@pytest.mark.parametrize("overrides, words", [
    (['bugs=[["x"]]'], "bugs: every entry must be a string"),
    (["faults.nemesis=[1]"], "faults.nemesis: every entry must be a string"),
    (["expect.forbid=[true]"], "expect.forbid: every entry must be a string"),
    (["producers=5"], "producers: must be an array of tables"),
    (["admin=3"], "admin: must be an array of tables"),
    (["consumers={a=1}"], "consumers: must be an array of tables"),
    (["cluster=1", "cluster.brokers=3"], "cluster is not a table"),
    (["network.delay=5", "network.delay.ms=1"], "network.delay is not a table"),
    (["x=" + "[" * 3000 + "]" * 3000], "nested too deeply"),
    # a whole array set on the command line: its errors are the --set's, not a file line's
    (['faults.plan=[{at_s=1.0,fault="crash",target="broker-99"}]'],
     "faults.plan[0].target: unknown node 'broker-99'"),
    (["producers=[{}]"], "producers[0].topic"),
    (["producers=[5]"], "producers[0]: must be a table"),
    # one key of one scripted fault
    (["faults.plan[0].at_s=nan"], "faults.plan[0].at_s: must be a finite number"),
    (["faults.plan[9].at_s=1"], "faults.plan has no step 9"),
])
def test_type_confusion_in_set_values_isone_line(overrides: list[str], words: str) -> None:
    """Class 3: ``bugs=[["x"]]`` (unhashable), ``producers=5`` (not iterable), a section set
    to a number and then written into — tracebacks before; now the --set is named."""
    from emulator.scenario import ScenarioError, load
    with pytest.raises(ScenarioError) as err:
        load("default", overrides)
    assert words in str(err.value) and str(err.value).startswith("--set")
    assert "\n" not in str(err.value) and "default.toml:" not in str(err.value)
    assert len(str(err.value)) < 400   # a huge --set value is not echoed whole


@pytest.mark.parametrize("content, words", [
    (bytes(range(128, 256)) * 8, "not UTF-8 text"),
    (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
    (b'name = "t"\n[topics]\nname = "orders"\n', "topics"),
])
def test_a_binary_deeply_nested_or_wrongly_shaped_scenario_file_isone_line(
        tmp_path: Path, content: bytes, words: str) -> None:
    """Class 3: a binary file (UnicodeDecodeError), deeply nested arrays (RecursionError),
    a ``[topics]`` table where ``[[topics]]`` is meant — through the whole CLI."""
    f = tmp_path / "bad.toml"
    f.write_bytes(content)
    one_line_exit_2(isrlab("run", str(f), "--out", str(tmp_path / "t.jsonl")), words)
    extra = isrlab("run", str(f), "--set", "topics.partitions=3", "--out",
                    str(tmp_path / "u.jsonl"))
    one_line_exit_2(extra)
    assert f.read_bytes() == content


def test_an_error_in_the_second_topic_points_at_the_second_topic(tmp_path: Path) -> None:
    """Class 3: ``topics[1]`` errors named the first line that sets a key of that name —
    in ``topics[0]``."""
    from emulator.scenario import ScenarioError, load
    f = tmp_path / "two.toml"
    f.write_text('name = "two"\n\n[[topics]]\nname = "orders"\npartitions = 3\n\n'
                 '[[topics]]\nname = "audit"\npartitions = 0\n')
    with pytest.raises(ScenarioError) as err:
        load(str(f))
    assert str(err.value).startswith(f"{f}:9: topics[1].partitions: ")


@pytest.mark.parametrize("overrides, field, words", [
    # class 4: faults checked against the run
    (['faults.plan=[{at_s=145.0, fault="crash", target="broker-1", duration_s=1.0}]'],
     "faults.plan[0].at_s", "after the end of the run"),
    (['faults.plan=[{at_s=1.0, fault="cut", target=["broker-1"], duration_s=1.0}]'],
     "faults.plan[0].target", "two nodes"),
    (['faults.plan=[{at_s=1.0, fault="cut", target=["broker-1", "broker-1"], '
      'duration_s=1.0}]'], "faults.plan[0].target", "cuts nothing"),
    (['faults.plan=[{at_s=1.0, fault="crash", target="broker-99", duration_s=1.0}]'],
     "faults.plan[0].target", "unknown node"),
    (['faults.plan=[{at_s=1.0, fault="crash", target="coordinator:nosuch", duration_s=1.0}]'],
     "faults.plan[0].target", "unknown node"),
    # class 4: Kafka's own configuration checks
    (["consumers[0].heartbeat.interval.ms=45000"], "consumers[0].heartbeat.interval.ms",
     "lower than session.timeout.ms"),
    (["cluster.replica.fetch.wait.max.ms=40000"], "cluster.replica.fetch.wait.max.ms",
     "replica.socket.timeout.ms"),
    (["cluster.replica.lag.time.max.ms=400"], "cluster.replica.fetch.wait.max.ms",
     "replica.lag.time.max.ms"),
    (["producers[0].delivery.timeout.ms=1000"], "producers[0].delivery.timeout.ms",
     "linger.ms + request.timeout.ms"),
    (["cluster.offsets.topic.replication.factor=4"], "cluster.offsets.topic.replication.factor",
     "broker count"),
])
def test_faults_and_kafka_settings_are_checked_against_the_cluster_at_load(
        overrides: list[str], field: str, words: str) -> None:
    """Class 4: a fault after the workload phase, a cut with one side, a node or group that
    does not exist were traced as applied or skipped silently; Kafka's own validation
    (``KafkaConfig`` for the fetch wait against the socket timeout and the lag time, the
    consumer's ``Heartbeat``, ``KafkaProducer.configureDeliveryTimeout`` for an explicit
    delivery timeout) refuses what Kafka refuses. One line naming the field, before any run."""
    from emulator.scenario import ScenarioError, load
    with pytest.raises(ScenarioError) as err:
        load("default", overrides)
    assert field in str(err.value) and words in str(err.value), str(err.value)


def test_a_default_delivery_timeout_below_linger_plus_request_timeout_is_raised_to_it() -> None:
    """``KafkaProducer.configureDeliveryTimeout``: not set explicitly, the default is raised
    to ``linger.ms + request.timeout.ms`` (with a warning in Kafka) instead of refused."""
    from emulator.scenario import load
    sc = load("default", ["producers[0].request.timeout.ms=200000"])
    p = sc["producers"][0]
    assert p["delivery.timeout.ms"] == p["linger.ms"] + 200000


def test_a_scripted_fault_after_the_workload_phase_is_traced_as_skipped() -> None:
    """Class 4: default.toml's faults at 4 s and 11 s with ``duration_s=6``: the second never
    acts (faults stop at the heal) and the trace says so, instead of nothing."""
    from helpers import SMALL, events, run_to_bytes
    res, data = run_to_bytes("default", 1, SMALL)
    assert res.status == "ok"
    skipped = [e for e in events(data) if e["event"] == "fault" and e["phase"] == "skipped"]
    assert [(e["fault"], e["at_s"]) for e in skipped] == [("isolate", 11.0)]
    assert skipped[0]["reason"] == "after the workload phase"


@pytest.mark.parametrize("misnamed", ["gzip named .jsonl", "plain text named .jsonl.gz"])
def test_a_trace_is_read_by_its_bytes_not_by_its_name(tmp_path: Path, misnamed: str) -> None:
    """Class 8: ``check`` decided gzip by the file name (a gzip named ``.jsonl`` was "crc:
    missing", a plain file named ``.gz`` "Not a gzipped file"); every reader now goes by the
    magic bytes, as ``show`` and ``replay`` did."""
    import gzip

    from helpers import SMALL, run_to_bytes
    res, data = run_to_bytes("default", 1, SMALL)
    assert res.status == "ok"
    if misnamed.startswith("gzip"):
        f = tmp_path / "t.jsonl"
        f.write_bytes(gzip.compress(data))
    else:
        f = tmp_path / "t.jsonl.gz"
        f.write_bytes(data)
    for args in (("check", str(f)), ("show", str(f)), ("replay", str(f)), ("explain", str(f))):
        proc = isrlab(*args)
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert "identical" in isrlab("replay", str(f)).stdout


@pytest.mark.parametrize("flag, value, words", [
    ("--master", "bogus", "not a Spark master URL"),
    ("--master", "local[x]", "not a Spark master URL"),
    ("--out", "/proc/isrlab-nope", "cannot write there"),
    ("--cache", "FILE", "exists and is not a directory"),
    ("--out", "INPUT", "is one of the inputs"),
])
def test_analyze_checks_its_master_and_output_folders_before_spark_starts(
        tmp_path: Path, flag: str, value: str, words: str) -> None:
    """Class 8: a bogus ``--master`` and an unwritable ``--out``/``--cache`` failed after the
    whole analysis (or in the JVM) with pages of Java; now one line, exit 2, before Spark
    starts, and the input is never the output."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("{}\n")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    value = {"FILE": str(blocker), "INPUT": str(trace)}.get(value, value)
    one_line_exit_2(isrlab("analyze", str(trace), flag, value), flag, words)
    assert trace.read_text() == "{}\n" and blocker.read_text() == "x"


def _closed_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_spark_master_is_one_line_and_exit_2_at_once(tmp_path: Path) -> None:
    """Class 8: a ``spark://`` master nobody listens on used to cost a minute of JVM retries
    and end in a Python traceback; ``analyze --master`` and ``campaign --spark`` now probe it
    first (a TCP connect to each listed host) and say so in one line, exit 2."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("{}\n")
    master = f"spark://127.0.0.1:{_closed_port()}"
    one_line_exit_2(isrlab("analyze", str(trace), "--master", master), "--master",
                     "cannot reach the master")
    one_line_exit_2(isrlab("campaign", "default", "--seeds", "1:2", "--spark", master,
                             "--out", str(tmp_path / "c")), "--spark", "cannot reach the master")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("door", ["run", "campaign", "check", "show", "replay", "shrink",
                                  "analyze", "report", "explain", "compare", "import",
                                  "regress", "scenarios"])
def test_an_unknown_flag_is_one_line_naming_it_at_every_door(door: str) -> None:
    """Class 3/8: argparse printed its whole usage block before the error (several lines);
    every command now says ``isrlab DOOR: unrecognized arguments: --no-such-flag``."""
    needed = {"campaign": ["--seeds", "1:2"], "import": ["--out", "never-written.jsonl"]}
    one_line_exit_2(isrlab(door, str(TRACE), *needed.get(door, []), "--no-such-flag", "1"),
                     "--no-such-flag")


def test_a_missing_required_flag_and_a_bad_choice_areone_line() -> None:
    one_line_exit_2(isrlab("import", str(TRACE)), "--out")
    one_line_exit_2(isrlab("import", str(TRACE), "--out", "x.jsonl", "--engine", "jvm"),
                     "--engine", "jvm")
    one_line_exit_2(isrlab("no-such-command"), "no-such-command")


def test_a_campaign_refuses_a_name_that_leaves_out_and_a_seed_range_beyond_64_bits(
        tmp_path: Path) -> None:
    """Classes 2 and 5: a scenario ``name = "../../x"`` made the campaign write outside
    out/campaigns; ``--seeds 0:10^23`` hung; ``--seeds 0:999999999`` built a list of a
    billion seeds before its first run."""
    scenario = tmp_path / "n.toml"
    scenario.write_text((ROOT / "scenarios" / "default.toml").read_text()
                        .replace('name = "default"', 'name = "../../x"'))
    assert 'name = "../../x"' in scenario.read_text()
    one_line_exit_2(isrlab("campaign", str(scenario), "--seeds", "1:1", cwd=tmp_path),
                     "name", "--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.toml"]
    one_line_exit_2(isrlab("campaign", "default", "--seeds", "0:99999999999999999999999"),
                     "--seeds", "2^63-1")
    one_line_exit_2(isrlab("compare", "default", "--seeds", "0:99999999999999999999"),
                     "--seeds")
    one_line_exit_2(isrlab("compare", "default", "--seeds", "0:999999999"),
                     "--seeds", "at most")


def test_a_billion_seed_campaign_is_never_a_list() -> None:
    from faults.campaign import _Todo, parse_seeds
    todo = _Todo(parse_seeds("0:999999999"), {3: {}, 10**10: {}})
    assert len(todo) == 10**9 - 1
    it = iter(todo)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 4, 5]


# --------------------------------------------------------------------------- issue 47


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path below ``root`` with its bytes (None for a folder): what must survive."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def _foreign_folder(root: Path) -> Path:
    """A user's folder: files, a ``tmp/`` with a file and a subfolder (a campaign once
    deleted every file of ``DIR/tmp`` and died on the subfolder)."""
    (root / "tmp" / "sub").mkdir(parents=True)
    (root / "tmp" / "notes.txt").write_text("the user's notes\n")
    (root / "tmp" / "sub" / "keep.bin").write_bytes(b"\x00\x01")
    (root / "results.jsonl").write_text('{"mine": true}\n')
    (root / "thesis.tex").write_text("\\documentclass{article}\n")
    return root


@pytest.mark.parametrize("door, args, flag", [
    ("campaign", ["default", "--seeds", "1:1", "--set", "duration_s=2", "--set", "heal_s=3",
                  "--set", "faults.plan=[]"], "--out"),
    ("compare", ["s1-kip101-hw-truncation", "--eras", "0.10", "--bugs", "none"], "--out"),
    ("explore", ["s1-kip101-hw-truncation", "--budget", "1"], "--out"),
    ("shrink", [str(TRACE), "--budget", "1"], "--out"),
    ("regress", ["--record", "--jobs", "1"], "--dir"),
])
def test_a_foreign_folder_survives_every_door_that_writes_a_folder(
        tmp_path: Path, door: str, args: list[str], flag: str) -> None:
    """Issue 47, class 1: ``campaign --out DIR`` over a folder that was not a campaign
    deleted every file in ``DIR/tmp`` (``--out ~``: the user's ``~/tmp``). Every door that
    writes a folder now takes only a new, empty or marked one: the user's folder is refused
    in one line, exit 2, and every file and subfolder in it is as it was."""
    folder = _foreign_folder(tmp_path / "mine")
    before = _tree(folder)
    one_line_exit_2(isrlab(door, *args, flag, str(folder)), str(folder), flag, "not empty")
    assert _tree(folder) == before


def test_shrink_never_writes_over_its_own_input(tmp_path: Path) -> None:
    """Issue 47, class 1: ``isrlab shrink D/shrunk.jsonl --out D`` (shrinking an earlier
    shrink's result) overwrote its own input. A shrink folder holding the input is refused,
    and the earlier shrink is byte-identical afterwards; its default folder is a new one."""
    src = tmp_path / "src"
    src.mkdir()
    trace = src / TRACE.name
    shutil.copy(TRACE, trace)
    first = isrlab("shrink", str(trace), "--out", str(tmp_path / "d"), "--budget", "2")
    assert first.returncode == 0, first.stderr
    d = tmp_path / "d"
    assert {p.name for p in d.iterdir()} == {"shrink.json", "shrunk.toml", "shrunk.jsonl"}
    before = _tree(tmp_path)
    one_line_exit_2(isrlab("shrink", str(d / "shrunk.jsonl"), "--out", str(d),
                             "--budget", "2"), "--out", "holds the input")
    assert _tree(tmp_path) == before
    again = isrlab("shrink", str(d / "shrunk.jsonl"), "--budget", "2")
    assert again.returncode == 0, again.stderr
    assert (d / "shrunk.shrunk" / "shrunk.jsonl").is_file()   # beside its input
    assert {k: v for k, v in _tree(tmp_path).items() if k in before} == before


def test_a_campaign_resumed_after_sigkill_removes_only_its_own_scratch(tmp_path: Path
                                                                       ) -> None:
    """Issue 47, classes 1 and 8: a campaign driver killed by SIGKILL leaves no worker or
    forkserver behind (the workers watch the driver and leave within a second); its
    scratch folder is a ``mkdtemp`` of its own, which the resume removes — and nothing
    else: a ``tmp/`` folder of the user's inside the campaign folder is not touched."""
    out = tmp_path / "c"
    args = ["campaign", "default", "--seeds", "1:200", "--jobs", "2", "--out", str(out),
            "--set", "duration_s=20", "--set", "heal_s=3", "--set", "faults.plan=[]"]
    proc = subprocess.Popen([sys.executable, "-m", "cli", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    pgid = proc.pid
    try:
        deadline = time.monotonic() + 60
        while not list(out.glob(".isrlab-scratch-*/seed-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(out.glob(".isrlab-scratch-*")), "no seed started within 60 s"
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _group_alive(pgid), "a worker or the forkserver outlived the driver"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    stale = list(out.glob(".isrlab-scratch-*"))
    assert stale   # SIGKILL: no finally ran
    (out / "tmp").mkdir()
    (out / "tmp" / "mine.txt").write_text("not the campaign's")
    resumed = isrlab(*args[:3], "1:1", *args[4:])
    assert resumed.returncode == 0, resumed.stderr
    assert not any(p.exists() for p in stale) and not list(out.glob(".isrlab-scratch-*"))
    assert (out / "tmp" / "mine.txt").read_text() == "not the campaign's"


def _group_alive(pgid: int) -> bool:
    """Some process of the group is still running (zombies are not: they only wait to be
    reaped by their parent)."""
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat_file.read_text().rsplit(")", 1)[-1].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


@pytest.mark.parametrize("flag, value", [("--eras", ""), ("--eras", " , "),
                                         ("--bugs", ","), ("--catalog", ",")])
def test_compare_refuses_a_list_that_names_nothing(flag: str, value: str) -> None:
    """Issue 47, class 5: ``compare --eras ''`` was a traceback; an empty list where one
    item is needed is one line naming the flag, exit 2."""
    args = [flag, value] if flag == "--catalog" else ["default", flag, value]
    one_line_exit_2(isrlab("compare", *args), flag, "names nothing")


def test_campaign_spark_with_a_bad_master_url_isone_line() -> None:
    """Issue 47, class 8: ``campaign --spark BADURL`` reached Spark and ended in a Java
    traceback; it is now checked as ``analyze --master`` is: one line, exit 2."""
    one_line_exit_2(isrlab("campaign", "default", "--seeds", "1:1", "--spark", "BADURL"),
                     "--spark", "BADURL", "not a Spark master URL")
