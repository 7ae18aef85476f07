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


def test_each_bug_lists_the_eras_that_ship_it_and_those_with_its_fix() -> None:
    """BUG_ERAS against the era rules: re-enabling a bug changes the rules of every era
    that has its fix and of no era that ships it; the eras that never had it (0.10 before
    leader epochs for KAFKA-7128, the ZooKeeper controller for KAFKA-15665) are neither."""
    from actors.eras import BUGS, ERAS, rules_for
    from faults.compare import BUG_ERAS
    assert sorted(BUG_ERAS) == sorted(BUGS)
    for bug, (has, fixed) in BUG_ERAS.items():
        assert fixed and not set(has) & set(fixed), bug
        assert list(has) + list(fixed) == [e for e in ERAS if e in has or e in fixed], bug
        for era in fixed:
            assert rules_for(era, [bug]) != rules_for(era), (bug, era)
        for era in has:
            assert rules_for(era, [bug]) == rules_for(era), (bug, era)
    assert BUG_ERAS["KAFKA-15665"] == (("3.7",), ("4.1",))


def test_a_bug_runs_on_the_scenario_era_only_when_that_era_has_its_fix() -> None:
    from faults.compare import bug_era
    assert bug_era("KAFKA-7128", "4.1") == ("4.1", None)
    era, note = bug_era("KAFKA-15665", "0.10")
    assert era == "4.1" and note == ("KAFKA-15665: 0.10 never had it (released with it: "
                                     "3.7); re-enabled on 4.1 instead, which has the fix")
    era, note = bug_era("KAFKA-13141", "2.8")
    assert era == "3.7" and note is not None and "2.8 has it as released" in note
    assert bug_era("KAFKA-7128", "0.10")[0] == "2.1"   # the nearest era with the fix


def test_compare_s1_bugs_all_runs_each_bug_in_its_own_era_and_no_chain_twice(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 50, point 5: ``isrlab compare s1-kip101-hw-truncation --bugs all`` added every
    bug to 0.10 (``0.10 + KAFKA-15665``, a KRaft bug) and printed the 0.10 chain seven
    times. Each bug now runs on an era with its fix, a note says why not on 0.10, and the
    one chain is printed once."""
    from actors.eras import BUGS
    from faults.compare import BUG_ERAS
    assert main(["s1-kip101-hw-truncation", "--eras", "0.10", "--bugs", "all"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    notes = [ln.strip() for ln in lines[1:1 + len(BUGS)]]
    assert [n.split(":")[0] for n in notes] == list(BUGS), text
    assert all("0.10" in n and "re-enabled on" in n for n in notes), text
    rows = [ln.split("  ")[0] for ln in lines[2 + len(BUGS):] if ln and ln[0].isdigit()]
    assert rows[0] == "0.10" and len(rows) == 1 + len(BUGS), text
    for row, bug in zip(rows[1:], BUGS, strict=True):
        era, _, named = row.partition(" + ")
        assert named == bug and era in BUG_ERAS[bug][1], row
    assert "0.10 + " not in text
    assert text.count("rule  truncation_to_hw") == 1 and "[1] the row 0.10" in text, text
    assert "\n[2] " not in text, text


def test_a_chain_several_rows_share_is_printed_once_with_the_rows_it_covers() -> None:
    """S9 under 0.10 and 0.11 loses the same records the same way (no broker epochs: the
    bounce goes unnoticed): one chain for both rows, in the text and in the JSON."""
    c = compare("s9-last-replica-standing", eras=["0.10", "0.11", "4.1"], bugs=[])
    text = format_table(c)
    assert [(chain.rule, labels) for chain, labels in c.chains()] == [
        ("bounce_unnoticed", ["0.10", "0.11"])], text
    assert text.count("rule  bounce_unnoticed") == 1, text
    assert "[1] 2 rows, the same chain: 0.10, 0.11" in text, text
    assert [ln.endswith("bounce_unnoticed [1]") for ln in text.splitlines()[2:5]] == [
        True, True, False], text
    doc = c.to_json()
    assert [r["chain"] for r in doc["rows"]] == [0, 0, None]
    assert [g["rows"] for g in doc["chains"]] == [["0.10", "0.11"]]
    assert doc["chains"][0]["chain"]["rule"] == "bounce_unnoticed"


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


def test_the_report_of_a_compare_folder_draws_a_shared_chain_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli import report
    out = tmp_path / "cmp"
    compare("s9-last-replica-standing", eras=["0.10", "0.11"], bugs=[], out=out)
    page = tmp_path / "cmp.html"
    assert report.main([str(out), "-o", str(page)]) == 0
    capsys.readouterr()
    chains = page.read_text().split('id="row-chains"')[1]
    assert chains.count('<div class="chain">') == 1, chains
    assert "2 rows, the same chain: 0.10, 0.11" in chains and "bounce_unnoticed" in chains


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
