"""One verdict at every door (issue 50, points 1 and 2): ``run``, ``check``, ``report``,
``regress`` and the campaign summary say the same words for the same trace, computed by the
same code (``traces.verdict``); ``tests/spark/test_one_verdict_spark.py`` holds ``analyze``
to it. The words follow the data, the expectation is the label beside them."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.check import main as check_main
from cli.run import main as run_main
from report.trace_page import trace_report
from traces import regress
from traces.checker import check_file
from traces.verdict import counts_text, data_word, judge, verdict_for

CATALOG = sorted(regress.DEFAULT_DIR.glob("*.jsonl.gz"))


@pytest.mark.parametrize("trace", CATALOG, ids=lambda p: p.name.split(".")[0])
def test_check_and_report_say_the_same_verdict_and_counts(trace: Path) -> None:
    result = check_file(trace)
    _, summary = trace_report(str(trace), rerun=False)
    assert f": {result.verdict().headline}; anomalies {result.counts_text()}" in summary


def test_every_catalog_trace_meets_its_expectation_in_words() -> None:
    """The recorded catalog: each verdict's label says expected (or allowed), none says
    UNEXPECTED or NOT REPRODUCED; the scenarios that reproduce a loss read LOST."""
    for trace in CATALOG:
        v = check_file(trace).verdict()
        assert v.expect_met, (trace.name, v.headline)
        assert "UNEXPECTED" not in v.headline and "NOT REPRODUCED" not in v.headline
    s1 = check_file(regress.DEFAULT_DIR / "s1-kip101-hw-truncation.jsonl.gz").verdict()
    assert s1.word == "LOST" and s1.tone == "bad"        # red although expected
    assert s1.expectation == "expected: this scenario reproduces S1 under 0.10"
    assert s1.what.endswith("acknowledged writes on orders-0")


@pytest.mark.parametrize("scenario, sets", [
    ("s1-kip101-hw-truncation", []),
    ("safe-acks-all", ['protocol="0.10"', "duration_s=12"]),
    ("default", ["duration_s=10"]),
])
def test_run_prints_the_verdict_first_and_check_agrees(
        scenario: str, sets: list[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.jsonl"
    argv = [scenario, "--seed", "1", "--out", str(out)]
    for s in sets:
        argv += ["--set", s]
    code = run_main(argv)
    lines = capsys.readouterr().out.splitlines()
    result = check_file(out)
    assert lines[0] == result.verdict().headline
    assert lines[1].startswith(f"run       {scenario} seed 1")    # the status, apart
    assert lines[2] == f"anomalies {result.counts_text()}"
    assert check_main([str(out)]) == code
    assert capsys.readouterr().out.splitlines()[0] == lines[0]


def test_the_word_follows_the_data_and_the_label_the_expectation() -> None:
    lost = {"lost_acked_write": 3, "isr_churn": 2}
    v = judge(lost, forbidden_found=["lost_acked_write"], per_partition={
        "orders-0": {"lost_acked_write": 3}, "orders-1": {}})
    assert v.headline == ("LOST 3 acknowledged writes on orders-0 — UNEXPECTED: "
                          "lost_acked_write is forbidden here")
    assert judge(lost, expected=["lost_acked_write"], expect_met=True).tone == "bad"
    assert judge({"isr_churn": 9, "under_min_isr": 6500}).headline == \
        "SAFE: no write lost, no safety anomaly"
    assert judge({}, missing_expected=["lost_acked_write"]).headline == \
        ("SAFE: no write lost, no safety anomaly — NOT REPRODUCED: expected "
         "lost_acked_write, not found")
    assert data_word({"log_divergence": 1, "duplicate": 4})[0] == "DIVERGED"
    assert data_word({"duplicate": 4})[0] == "ANOMALOUS"
    assert judge({}, incomplete="status aborted").headline.startswith(
        "INCOMPLETE: the run did not finish (status aborted)")


def test_durations_are_in_seconds_and_only_non_zero_counts_are_listed() -> None:
    order = ["lost_acked_write", "isr_churn", "under_min_isr"]
    assert counts_text({"lost_acked_write": 0, "isr_churn": 4, "under_min_isr": 6509},
                       order) == "isr_churn 4, under_min_isr 6.5 s"
    assert counts_text({}, order) == "none"


def test_a_door_with_only_counts_and_the_scenario_judges_as_the_checker() -> None:
    """``verdict_for`` (what ``analyze`` uses with Spark's counts) gives the checker's
    verdict from the same counts and the trace's own scenario."""
    import orjson

    from traces.reader import iter_events
    for name in ("s1-kip101-hw-truncation", "safe-acks-all", "s6-acks1-leader-failover"):
        trace = regress.DEFAULT_DIR / f"{name}.jsonl.gz"
        result = check_file(trace)
        stream = iter_events(trace, verify=False)
        with stream:
            next(stream, None)
            scenario = (stream.header or {})["scenario"]
        got = verdict_for(result.anomalies, scenario, per_partition=result.per_partition())
        assert got == result.verdict(), orjson.dumps(scenario["expect"])


def test_the_readme_verdict_lines_are_what_run_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's example lines come from real runs; when a run's output drifts (a rule
    changes a count), this fails until the README shows it again (wall seconds aside)."""
    import re
    import shlex
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = readme.split("$ isrlab run default\n", 1)[1].split("```", 1)[0]
    shown: list[tuple[list[str], list[str]]] = []
    for chunk in ("$ isrlab run default\n" + block).split("$ ")[1:]:
        command, *lines = [x for x in chunk.splitlines() if x]
        shown.append((shlex.split(command)[2:], lines))
    assert len(shown) == 3
    wall = re.compile(r" in [0-9.]+ wall s$")
    for i, (argv, lines) in enumerate(shown):
        run_main([*argv, "--out", str(tmp_path / f"{i}.jsonl")])
        printed = capsys.readouterr().out.splitlines()
        assert [wall.sub("", x) for x in printed[:len(lines)]] == \
            [wall.sub("", x) for x in lines], argv
