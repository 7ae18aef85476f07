"""The campaign page (``isrlab report CAMPAIGN_DIR``) is trustworthy (issue 50, point 3).

A new user saw every seed whose trace was not kept bucketed as ``?`` in each knob chart
(although ``campaign.json`` held the settings), reproduce lines without the ``--set`` values
(following one ran a different, passing run) and an empty shrunk-schedule column. Here a
tiny real campaign — ``safe-acks-all`` put back to era 0.10 (unclean election on, truncation
to the HW), where some seeds lose or diverge — is run once with ``--shrink 1`` and its page
read as a user reads it: every seed in the bucket of its campaign's settings, each failing
seed's printed line run again giving the same run, the shrunk schedule linked, the rules at
fault those of ``isrlab explain``. A swarm campaign checks that each seed is counted under
its own fault kinds.
"""

from __future__ import annotations

import json
import shlex
import shutil
import tomllib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers import isrlab

from cli import report
from cli.campaign import main as campaign
from faults.campaign import read_results, reproduce_command, shrink_folder
from report.campaign import KNOBS, load_campaign
from traces.explain import explain

TINY = ["--set", "duration_s=4", "--set", "heal_s=20", "--set", "producers[0].rate=50"]
#: the safe configuration in the 0.10 era: some seeds fail (lost or divergent writes)
ERA_010 = [*TINY, "--set", 'protocol="0.10"']
SEEDS = "1:10"


# --------------------------------------------------------------------------- reading pages


class _Tables(HTMLParser):
    """Every ``<table>`` of a page: its id and rows; a cell's text, links and ``<code>``
    texts include those of tables nested in it (a shrunk plan inside a failing row)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict[str, Any]] = []
        self._open: list[dict[str, Any]] = []   # tables being read, innermost last
        self._code: list[str] | None = None

    def _cells(self) -> list[dict[str, Any]]:
        return [t["rows"][-1][-1] for t in self._open if t["rows"] and t["rows"][-1]]

    def handle_starttag(self, name: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if name == "table":
            t: dict[str, Any] = {"id": a.get("id"), "rows": []}
            for cell in self._cells()[-1:]:
                cell["tables"].append(t)
            self.tables.append(t)
            self._open.append(t)
        elif name == "tr" and self._open:
            self._open[-1]["rows"].append([])
        elif name in ("td", "th") and self._open and self._open[-1]["rows"]:
            self._open[-1]["rows"][-1].append({"text": "", "hrefs": [], "codes": [],
                                               "tables": []})
        elif name == "a" and a.get("href"):
            for cell in self._cells():
                cell["hrefs"].append(a["href"])
        elif name == "code":
            self._code = []

    def handle_endtag(self, name: str) -> None:
        if name == "table" and self._open:
            self._open.pop()
        elif name == "code" and self._code is not None:
            for cell in self._cells():
                cell["codes"].append("".join(self._code))
            self._code = None

    def handle_data(self, data: str) -> None:
        if self._code is not None:
            self._code.append(data)
        for cell in self._cells():
            cell["text"] += data


def tables_of(html: str) -> list[dict[str, Any]]:
    p = _Tables()
    p.feed(html)
    return p.tables


def table(html: str, id_: str) -> list[list[dict[str, Any]]]:
    """The body rows of the table ``id_`` (its header row left out)."""
    found = [t for t in tables_of(html) if t["id"] == id_]
    assert len(found) == 1, f"no table {id_!r} on the page"
    body: list[list[dict[str, Any]]] = found[0]["rows"][1:]
    return body


def knob_table(html: str, knob: str) -> dict[str, int]:
    """The knob's table under 'Anomaly rates by knob': runs by value."""
    section = html[html.index('<section id="rates">'):]
    section = section[:section.index("</section>")]
    for t in tables_of(section):
        if t["rows"] and t["rows"][0][0]["text"] == knob:
            return {r[0]["text"]: int(r[1]["text"]) for r in t["rows"][1:]}
    raise AssertionError(f"no table for knob {knob!r}")


def page_of(folder: Path, capsys: pytest.CaptureFixture[str], out: Path | None = None) -> str:
    target = out or folder / "report.html"
    assert report.main([str(folder), "-o", str(target)]) == 0
    capsys.readouterr()
    return target.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the campaign


@pytest.fixture(scope="module")
def camp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The 0.10-era campaign (seeds 1-10, the first failing seed shrunk) and what the
    campaign printed."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("campaign") / "c"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = campaign(["safe-acks-all", "--seeds", SEEDS, "--jobs", "2", "--out", str(out),
                         "--shrink", "1", *ERA_010])
    assert code == 1, buf.getvalue()   # some seeds fail: the page has failing seeds to show
    return out, buf.getvalue()


def rows(out: Path) -> dict[int, dict[str, Any]]:
    return read_results(out / "results.jsonl")[0]


def test_the_campaign_has_failing_seeds_and_seeds_whose_trace_was_not_kept(
        camp: tuple[Path, str]) -> None:
    """What the other tests rely on: failing seeds, and passing ones without a trace."""
    out, _ = camp
    r = rows(out)
    assert sorted(r) == list(range(1, 11))
    assert any(x["verdict"] == "fail" for x in r.values())
    assert any(x["trace"] is None for x in r.values())


def test_every_seed_is_counted_under_the_campaigns_own_settings_never_a_question_mark(
        camp: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """All ten seeds ran 0.10 (campaign.json holds the --set values): the era table has one
    bucket of ten, the seeds whose traces were not kept included, and no knob has a ``?``."""
    out, _ = camp
    html = page_of(out, capsys)
    assert knob_table(html, "era (protocol)") == {"0.10": 10}
    assert knob_table(html, "acks") == {"all": 10}
    assert knob_table(html, "min.insync.replicas") == {"2": 10}
    assert knob_table(html, "unclean.leader.election.enable") == {"true": 10}   # 0.10's default
    assert knob_table(html, "bugs") == {"none": 10}
    for knob in KNOBS:
        assert "?" not in knob_table(html, knob), knob
    # a seed without a kept trace is counted under the fault kinds its row records
    kinds = Counter(k for x in rows(out).values() for k in (x["fault_kinds"] or ["none"]))
    assert knob_table(html, "fault kinds") == dict(kinds)
    assert "scenario <b>safe-acks-all</b>" in html


def test_an_older_campaign_folder_reads_its_settings_from_a_kept_trace_or_its_scenario(
        camp: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder written before campaign.json kept the resolved scenario: the settings come
    from a kept trace whose scenario has the recorded digest, else from the recorded
    scenario and --set values resolved again. A record whose digest they no longer match is
    not trusted: those seeds are ``?`` and the page says why."""
    out, _ = camp
    old = tmp_path / "old"
    shutil.copytree(out, old)
    results = old / "results.jsonl"   # as if the campaign had been run in this folder
    results.write_text(results.read_text().replace(str(out), str(old)))
    record = json.loads((old / "campaign.json").read_text())
    assert "resolved" in record
    del record["resolved"]
    (old / "campaign.json").write_text(json.dumps(record))
    assert knob_table(page_of(old, capsys), "era (protocol)") == {"0.10": 10}   # traces
    shutil.rmtree(old / "traces")
    html = page_of(old, capsys)
    assert knob_table(html, "era (protocol)") == {"0.10": 10}   # the scenario resolved again
    record["scenario_sha256"] = "0" * 64   # another campaign's record
    (old / "campaign.json").write_text(json.dumps(record))
    html = page_of(old, capsys)
    assert knob_table(html, "era (protocol)") == {"?": 10}
    assert "no longer resolves to the scenario the campaign ran" in html


def test_each_failing_seeds_reproduce_line_has_every_set_and_reruns_the_same_run(
        camp: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The page prints the campaign's own line (faults.campaign.reproduce_command, as the
    summary does), every --set included; running it gives the row's digest and verdict."""
    out, printed = camp
    record = json.loads((out / "campaign.json").read_text())
    html = page_of(out, capsys)
    failing = {int(r[0]["text"]): r for r in table(html, "failing-table")}
    by_seed = rows(out)
    assert sorted(failing) == sorted(s for s, x in by_seed.items() if x["verdict"] == "fail")
    for seed, cells in failing.items():
        line = reproduce_command("safe-acks-all", seed, record["overrides"])
        assert line in cells[5]["codes"], cells[5]
        for o in record["overrides"]:
            assert f"--set {shlex.quote(o)}" in line
    shown = min(failing)
    assert reproduce_command("safe-acks-all", shown, record["overrides"]) in printed
    for seed in sorted(failing)[:2]:
        argv = shlex.split(failing[seed][5]["codes"][0])
        assert argv[:2] == ["isrlab", "run"]
        proc = isrlab(*argv[1:], "--out", str(tmp_path / f"again-{seed}.jsonl"), "--json")
        assert proc.returncode == 1, proc.stderr   # fails again: a forbidden anomaly
        again = json.loads(proc.stdout)
        assert again["digest"] == by_seed[seed]["digest"]
        assert again["anomalies"] == by_seed[seed]["anomalies"]


def test_the_shrunk_schedule_column_links_what_campaign_shrink_wrote(
        camp: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """``--shrink 1`` shrank the first failing seed beside its trace (where ``isrlab shrink
    TRACE`` puts it); the page links its ``shrunk.toml`` and shows its plan and run line;
    the other failing seeds show none. A resume does not shrink it again."""
    out, printed = camp
    by_seed = rows(out)
    first = min(s for s, x in by_seed.items() if x["verdict"] == "fail")
    folder = shrink_folder(by_seed[first]["trace"])
    toml = folder / "shrunk.toml"
    assert toml.is_file() and folder.parent == out / "traces"
    assert f"seed {first}: shrunk from" in printed and str(toml) in printed
    plan = tomllib.loads(toml.read_text())["faults"]["plan"]
    html = page_of(out, capsys)
    for row in table(html, "failing-table"):
        seed, cell = int(row[0]["text"]), row[6]
        if seed != first:
            assert cell["text"].strip() == "–" and not cell["hrefs"]
            continue
        assert f"traces/{folder.name}/shrunk.toml" in cell["hrefs"]
        assert f"isrlab run {toml} --seed {first}" in cell["codes"]
        shown = [[c["text"] for c in r] for r in cell["tables"][0]["rows"][1:]]
        assert shown == [[f"{f['at_s']:g}", f["fault"], str(f["target"]), f"{f['duration_s']:g}"]
                         for f in plan]
    before = toml.stat().st_mtime_ns
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert campaign(["safe-acks-all", "--seeds", SEEDS, "--jobs", "2", "--out", str(out),
                         "--shrink", "1", *ERA_010]) == 1
    assert f"seed {first}: shrunk earlier: {toml}" in buf.getvalue()
    assert toml.stat().st_mtime_ns == before


def test_the_rules_at_fault_are_explains_chains_over_the_kept_failing_traces(
        camp: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    """Per anomaly and rule, the failing seeds whose kept traces ``isrlab explain`` blames on
    it and the findings it covers — as analyze --explain counts them."""
    out, _ = camp
    seeds: dict[tuple[str, str], set[int]] = {}
    findings: Counter[tuple[str, str]] = Counter()
    for seed, row in rows(out).items():
        if row["verdict"] != "fail":
            continue
        for c in explain(row["trace"]).chains:
            seeds.setdefault((c.anomaly, c.rule), set()).add(seed)
            findings[(c.anomaly, c.rule)] += c.count
    assert seeds, "the failing seeds have causal chains"
    html = page_of(out, capsys)
    shown = {(r[0]["text"], r[1]["text"]): (int(r[2]["text"]), int(r[3]["text"]), r[4]["text"])
             for r in table(html, "rules-table")}
    assert shown == {k: (len(v), findings[k], f"seed {min(v)}") for k, v in seeds.items()}
    for cells in table(html, "failing-table"):   # each seed's own rules beside it
        seed = int(cells[0]["text"])
        for (anomaly, rule), which in seeds.items():
            assert (f"{anomaly}: {rule}" in cells[3]["text"]) == (seed in which)


def test_a_swarm_campaign_counts_each_seed_under_its_own_fault_kinds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--swarm``: each seed draws its own nemesis kinds; its row records the kinds its
    plan used, and the page counts it there, kept trace or not."""
    out = tmp_path / "swarm"
    kinds = '["kill","pause","partition","delay"]'
    assert campaign(["default", "--seeds", "1:8", "--jobs", "2", "--out", str(out), "--swarm",
                     *TINY, "--set", f"faults.nemesis={kinds}", "--set", "faults.interval_s=1",
                     "--set", "expect.forbid=[]"]) == 0
    by_seed = rows(out)
    assert all(x["trace"] is None for x in by_seed.values())   # nothing failed: none kept
    assert len({tuple(x["fault_kinds"]) for x in by_seed.values()}) > 1   # swarm: they differ
    runs, problems, _ = load_campaign(out)
    assert not problems
    for run in runs:
        assert run.knobs["fault kinds"] == (by_seed[run.seed]["fault_kinds"] or ["none"])
    html = page_of(out, capsys)
    counted = Counter(k for x in by_seed.values() for k in (x["fault_kinds"] or ["none"]))
    assert knob_table(html, "fault kinds") == dict(counted)
    assert "?" not in knob_table(html, "era (protocol)")
