"""isrlab compare (issue 20, item 4): one fault schedule under every era and re-enabled bug.

The catalog's table (README) says which era shows which loss; compare shows it from runs,
with the rule at fault of each row's chains (``isrlab explain``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.compare import main
from emulator.cluster import run
from emulator.scenario import load
from faults.compare import compare, format_table
from traces.checker import check_file
from traces.reader import iter_events


def test_s1_loses_acknowledged_writes_under_0_10_only() -> None:
    """Issue 20's acceptance: ``isrlab compare s1-kip101-hw-truncation --eras all``."""
    c = compare("s1-kip101-hw-truncation")
    table = format_table(c)
    by = {r.label: r for r in c.rows}
    assert list(by) == ["0.10", "0.11", "2.0", "2.1", "2.8", "3.7", "4.1"], table
    assert by["0.10"].counts["lost_acked_write"] > 0, table
    assert by["0.10"].why == "truncation_to_hw", table
    for era in ("0.11", "2.0", "2.1", "2.8", "3.7", "4.1"):
        assert by[era].counts["lost_acked_write"] == 0, table
        assert by[era].why is None
    assert "lost_acked_write" in c.columns


def test_a_bug_row_runs_the_scenario_era_with_that_bug_re_enabled() -> None:
    c = compare("s4-kafka7128-stale-hw-isr-expand", eras=["4.1"])
    by = {r.label: r for r in c.rows}
    assert list(by) == ["4.1", "4.1 + KAFKA-7128"]
    assert by["4.1"].counts["lost_acked_write"] == 0
    assert by["4.1 + KAFKA-7128"].counts["lost_acked_write"] > 0
    assert by["4.1 + KAFKA-7128"].why == "leso_check"


def _plan(path: Path) -> list[dict[str, object]]:
    with iter_events(path) as events:
        plan: list[dict[str, object]] = next(events)["fault_plan"]
    return plan


def test_a_random_schedule_is_drawn_once_and_its_own_era_row_is_the_plain_run(
        tmp_path: Path) -> None:
    """The nemesis plan is generated from the seed with the run's own RNG stream and
    replayed explicitly: under the scenario's era it is the plan ``isrlab run`` draws, and
    the verdict is the same."""
    sets = ["duration_s=8", "heal_s=20", "producers[0].rate=40",
            'faults.nemesis=["kill","partition","pause"]', "faults.interval_s=1.5"]
    c = compare("default", sets=sets, eras=["4.1"], bugs=[], seeds=[3], out=tmp_path)
    plain = tmp_path / "plain.jsonl"
    run(load("default", sets), 3, str(plain))
    replayed = tmp_path / "4.1" / "seed-3.jsonl.gz"
    assert len(_plan(plain)) >= 3
    drawn, fixed = _plan(plain), _plan(replayed)
    assert len(fixed) == len(drawn)
    for d, f in zip(drawn, fixed, strict=True):   # the explicit plan adds step defaults
        assert {k: f[k] for k in d} == d
    assert check_file(replayed).anomalies == check_file(plain).anomalies
    assert c.rows[0].counts == check_file(plain).anomalies


def test_a_schedule_an_era_cannot_run_is_shown_as_not_applicable() -> None:
    c = compare("reassign-cancel-unclean", eras=["2.1"], bugs=[])
    [row] = c.rows
    assert row.error is not None and "cannot cancel a reassignment" in row.error
    assert "n/a: faults.plan[" in format_table(c)


@pytest.mark.parametrize("args, words", [
    (["s1-kip101-hw-truncation", "--eras", "9.9"], "--eras: unknown 9.9"),
    (["s1-kip101-hw-truncation", "--bugs", "KAFKA-1"], "--bugs: unknown KAFKA-1"),
    (["s1-kip101-hw-truncation", "--seeds", "3:1"], "--seeds"),
    (["no-such-scenario"], "no such scenario"),
    (["s1-kip101-hw-truncation", "--set", "producers[0].rate=-1"], "producers[0].rate"),
])
def test_bad_input_exits_2_with_one_line(
        capsys: pytest.CaptureFixture[str], args: list[str], words: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_the_report_of_a_compare_folder_is_the_era_matrix_with_each_rows_chain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli import report
    out = tmp_path / "cmp"
    compare("s1-kip101-hw-truncation", eras=["0.10", "0.11"], out=out)
    page = tmp_path / "cmp.html"
    assert report.main([str(out), "-o", str(page)]) == 0
    assert "found under 0.10" in capsys.readouterr().out
    html = page.read_text()
    for words in ('id="era-matrix"', "found under 0.10", "truncation_to_hw",
                  "broker-2 truncated", "KIP-101"):
        assert words in html, words
    assert "found under 0.11" not in html
    (out / "compare.json").write_text('{"rows": 3}')
    assert report.main([str(out), "-o", str(page)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compare.json" in err[0]


def test_the_catalog_table_comes_from_runs() -> None:
    """``isrlab compare --catalog``: each bug scenario as written shows its anomaly, and each
    ``[catalog] fixed`` variant is in its "gone under" column — the README's table, from
    runs (three rows here; ``isrlab compare --catalog`` gives all of them in ~25 s)."""
    from faults.compare import catalog, catalog_markdown
    entries = {e.scenario: e for e in catalog(["s1-kip101-hw-truncation",
                                               "s3-kip279-fast-failover-divergence",
                                               "s6-acks1-leader-failover", "safe-acks-all"])}
    assert "safe-acks-all" not in entries   # no [expect] anomalies: not a bug scenario
    s1 = entries["s1-kip101-hw-truncation"]
    assert s1.under == "0.10" and s1.shows["lost_acked_write"] > 0
    assert s1.gone_under == ['protocol="0.11"', 'protocol="2.8"', 'protocol="4.1"']
    assert s1.still_under == [] and s1.why == "truncation_to_hw"
    assert entries["s3-kip279-fast-failover-divergence"].why == "epoch_end_answer"
    assert entries["s6-acks1-leader-failover"].gone_under == ['producers[0].acks="all"']
    table = catalog_markdown(list(entries.values()))
    assert "| `s1-kip101-hw-truncation` | lost_acked_write ×" in table
    assert "STILL UNDER" not in table and "NOT SHOWN" not in table
