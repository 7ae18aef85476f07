"""``isrlab report`` draws the KRaft controller quorum beside the partitions (issue 52).

A real run of a 3-voter quorum under acks=all: the active controller is killed at 4 s (back
at 8 s), the next active controller is paused from 9 s to 13 s (it goes on believing it leads
while the others elect a third leadership), and a broker crashes at 11 s. Its page has a
"Controller quorum" section above the partition timelines, on their time axis: one lane per
voter with exactly one solid band per leadership (counted from the trace's
``raft_transition`` events), each labelled with its epoch, ending where the voter left the
leadership or its node crashed; the votes, the metadata high watermark per voter, the
controller each broker follows; a table of leaderships. A ZooKeeper-era trace has no such
section, the page of a quorum trace is the same bytes twice, and in a headless Chromium no
label of the quorum's figure covers another.
"""

from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from cli import report
from emulator.cluster import run
from emulator.scenario import load
from report.browser import INSTALL_HINT, Chromium, find_chromium
from report.quorum import PLOT_ID, STATE_COLORS
from traces.writer import TraceWriter

ROOT = Path(__file__).resolve().parent.parent
#: a ZooKeeper-era trace (Kafka 0.11 rules, one controller, no Raft)
ZK_TRACE = ROOT / "tests" / "regressions" / "s1-kip101-hw-truncation.jsonl.gz"
SEED = 3
SCENARIO = """
name = "kraft-quorum-report"
description = "3 voters: the active controller killed, the next one paused, then a broker"
protocol = "4.1"
duration_s = 16.0
heal_s = 30.0
invariants = true

[cluster]
brokers = 3
controller_quorum = 3

[[topics]]
name = "orders"
partitions = 2
"replication.factor" = 3
"min.insync.replicas" = 2

[[producers]]
topic = "orders"
rate = 80
keys = 16
acks = "all"

[faults]
plan = [
  { at_s = 4.0, fault = "crash", target = "controller", duration_s = 4.0 },
  { at_s = 9.0, fault = "pause", target = "controller", duration_s = 4.0 },
  { at_s = 11.0, fault = "crash", target = "broker-1", duration_s = 2.0 },
]
"""


@pytest.fixture(scope="module")
def quorum_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("quorum")
    toml = d / "quorum.toml"
    toml.write_text(SCENARIO)
    buf = io.BytesIO()
    res = run(load(str(toml), []), SEED, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    out = d / "quorum.jsonl"
    out.write_bytes(buf.getvalue())
    return out


@pytest.fixture(scope="module")
def quorum_html(quorum_trace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    page = tmp_path_factory.mktemp("quorum-page") / "quorum.html"
    assert report.main([str(quorum_trace), "-o", str(page), "--no-rerun"]) == 0
    return page


@pytest.fixture(scope="module")
def quorum_page(quorum_html: Path) -> str:
    return quorum_html.read_text(encoding="utf-8")


def _events(path: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in (orjson.loads(line) for line in path.read_bytes().splitlines())
            if e["event"] == name]


def _figure(page: str, div: str = PLOT_ID) -> dict[str, Any]:
    m = re.search(rf'<script type="application/json" id="{div}-fig">(.*?)</script>', page,
                  re.S)
    assert m is not None, f"no figure {div}"
    spec: dict[str, Any] = json.loads(m.group(1))
    return spec


def _trace(fig: dict[str, Any], name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [t for t in fig["data"] if t.get("name") == name]
    assert len(found) == 1, [t.get("name") for t in fig["data"]]
    return found[0]


def _segments(trace: dict[str, Any]) -> list[tuple[float, float, float]]:
    """(start, end, lane) of each band of a lane trace (x = a0, b0, None, a1, b1, None...)."""
    xs, ys = trace["x"], trace["y"]
    return [(xs[i], xs[i + 1], ys[i]) for i in range(0, len(xs), 3)]


def _lane(fig: dict[str, Any], label: str) -> float:
    axis = fig["layout"]["yaxis2"]
    return float(axis["tickvals"][axis["ticktext"].index(label)])


def test_the_quorum_section_draws_one_band_per_leadership_labelled_with_its_epoch(
        quorum_trace: Path, quorum_page: str) -> None:
    """Each move of a voter to leader (``raft_transition`` to "leader") is one black band on
    that voter's lane, starting at the move, and an ``epoch N`` label above it; the table
    lists the same leaderships."""
    moves = [e for e in _events(quorum_trace, "raft_transition") if e["to"] == "leader"]
    assert len(moves) >= 3   # the first election, one after the kill, one after the pause
    fig = _figure(quorum_page)
    bands = _segments(_trace(fig, "leader (epoch above)"))
    assert _trace(fig, "leader (epoch above)")["line"]["color"] == STATE_COLORS["leader"]
    assert sorted((a, lane) for a, _, lane in bands) == sorted(
        (round(e["ts_us"] / 1e6, 3), _lane(fig, f"voter {e['voter']}")) for e in moves)
    labels = sorted((a["x"], a["y"], a["text"]) for a in fig["layout"]["annotations"]
                    if a["text"].startswith("epoch "))
    assert [text for _, _, text in labels] == [f"epoch {e['epoch']}" for e in moves]
    for (x, y, _), e in zip(labels, moves, strict=True):
        assert x == round(e["ts_us"] / 1e6, 3)
        assert _lane(fig, f"voter {e['voter']}") < y < _lane(fig, f"voter {e['voter']}") + 0.5
    rows = re.search(r'<table class="" id="quorum-tenures">.*?<tbody>(.*?)</tbody>', quorum_page,
                     re.S)
    assert rows is not None and rows.group(1).count("<tr>") == len(moves)
    # above the partition timelines, and in the table of contents
    assert quorum_page.index('id="quorum"') < quorum_page.index('id="timelines"')
    assert '<a href="#quorum">controller quorum</a>' in quorum_page


def test_a_leadership_ends_where_its_node_crashed_and_a_paused_leader_still_leads(
        quorum_trace: Path, quorum_page: str) -> None:
    """The killed active controller's band ends at its ``node_crash`` (its state is unknown
    until it restarts); the paused one's band runs through the pause to its resignation
    when it resumes, with the pause drawn as a dotted line on its lane."""
    fig = _figure(quorum_page)
    bands = _segments(_trace(fig, "leader (epoch above)"))
    crash = next(e for e in _events(quorum_trace, "node_crash")
                 if e["node"].startswith("controller-"))
    killed = _lane(fig, crash["node"].replace("controller-", "voter "))
    assert [b for a, b, lane in bands if lane == killed and a < crash["ts_us"] / 1e6] == [
        round(crash["ts_us"] / 1e6, 3)]
    pause = next(e for e in _events(quorum_trace, "node_pause")
                 if e["node"].startswith("controller-"))
    resume = next(e for e in _events(quorum_trace, "node_resume") if e["node"] == pause["node"])
    paused = _lane(fig, pause["node"].replace("controller-", "voter "))
    through = [(a, b) for a, b, lane in bands if lane == paused
               and a < pause["ts_us"] / 1e6 < b]
    assert through == [(through[0][0], round(resume["ts_us"] / 1e6, 3))]
    down = _segments(_trace(fig, "node down / paused"))
    assert (pause["ts_us"] / 1e6, resume["ts_us"] / 1e6, paused - 0.3) in down


def test_votes_hw_and_the_controller_each_broker_follows_are_drawn(
        quorum_trace: Path, quorum_page: str) -> None:
    """A ● per vote granted on the voter's lane; each voter's HW step line ends at its last
    ``raft_hw``; each broker's lane is split at its ``controller_followed`` moves, coloured
    like the HW line of the controller it follows."""
    fig = _figure(quorum_page)
    votes = [e for e in _events(quorum_trace, "raft_vote") if e["granted"]]
    granted = _trace(fig, "vote granted")
    assert sorted(zip(granted["x"], granted["y"], strict=True)) == sorted(
        (round(e["ts_us"] / 1e6, 3), _lane(fig, f"voter {e['voter']}")) for e in votes)
    last_hw: dict[int, int] = {}
    for e in _events(quorum_trace, "raft_hw"):
        last_hw[e["voter"]] = e["hw"]
    for voter, hw in last_hw.items():
        assert _trace(fig, f"metadata HW controller-{voter}")["y"][-1] == hw
    follows = _events(quorum_trace, "controller_followed")
    for node in {e["controller"] for e in follows}:
        band = _trace(fig, f"broker follows {node}")
        starts = sorted((a, lane) for a, _, lane in _segments(band))
        assert starts == sorted((round(e["ts_us"] / 1e6, 3), _lane(fig, f"broker {e['broker']}"))
                                for e in follows if e["controller"] == node)
        assert band["line"]["color"] == _trace(fig, f"metadata HW {node}")["line"]["color"]


def test_a_zookeeper_era_trace_has_no_quorum_section(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "s1.html"
    assert report.main([str(ZK_TRACE), "-o", str(page), "--no-rerun"]) == 0
    capsys.readouterr()
    html = page.read_text(encoding="utf-8")
    assert 'id="timelines"' in html
    assert "Controller quorum" not in html and PLOT_ID not in html and "#quorum" not in html


def test_the_report_of_a_quorum_trace_is_the_same_bytes_twice(
        quorum_trace: Path, quorum_html: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    again = tmp_path / "again.html"
    assert report.main([str(quorum_trace), "-o", str(again), "--no-rerun"]) == 0
    capsys.readouterr()
    assert PLOT_ID in again.read_text(encoding="utf-8")
    assert again.read_bytes() == quorum_html.read_bytes()


LABELS_JS = """(function (id) {
  var el = document.getElementById(id);
  var sels = [".xaxislayer-above text", "g.annotation-text-g", "text.shape-label"];
  var out = [];
  sels.forEach(function (sel) {
    Array.prototype.forEach.call(el.querySelectorAll(sel), function (n) {
      if (!(n.textContent || "").trim()) { return; }
      var r = n.getBoundingClientRect();
      out.push([n.textContent, r.left, r.top, r.right, r.bottom,
                getComputedStyle(n).visibility === "hidden" ? 1 : 0]);
    });
  });
  return JSON.stringify(out);
})"""


def _shown_overlaps(labels: list[list[Any]]) -> list[tuple[str, str]]:
    shown = [lb for lb in labels if not lb[5] and lb[3] > lb[1]]
    return [(a[0], b[0]) for i, a in enumerate(shown) for b in shown[i + 1:]
            if a[1] < b[3] - 1 and b[1] < a[3] - 1 and a[2] < b[4] - 1 and b[2] < a[4] - 1]


def test_no_label_of_the_quorum_figure_covers_another_in_chromium(
        quorum_trace: Path, quorum_html: Path) -> None:
    """In a real browser at 1400 pixels every epoch label is shown and none covers another
    label; at 760 pixels the page hides what would collide."""
    if find_chromium() is None:
        pytest.skip(f"no Chromium found; {INSTALL_HINT}")
    page = quorum_html
    leaderships = sum(1 for e in _events(quorum_trace, "raft_transition") if e["to"] == "leader")
    for width in (1400, 760):
        with Chromium(width=width) as browser:
            res = browser.open(page)
            assert res.console_errors == []
            browser.evaluate("window.__renderAll().then(function () { return 1; }), 1")
            for _ in range(300):
                if browser.evaluate(f"document.querySelectorAll('#{PLOT_ID} .main-svg')"
                                    ".length") > 0:
                    break
                time.sleep(0.05)
            time.sleep(0.3)
            labels = json.loads(browser.evaluate(f"{LABELS_JS}({json.dumps(PLOT_ID)})"))
            assert _shown_overlaps(labels) == [], width
            epochs = [lb for lb in labels if lb[0].startswith("epoch ")]
            if width == 1400:
                assert len(epochs) == leaderships and not any(lb[5] for lb in epochs)


def test_a_brokers_metadata_applies_are_marked_on_its_lane(quorum_trace: Path) -> None:
    """Each batch a broker's metadata observer applied is a mark on its lane, at its time,
    with its offsets (here two applies put into the view of the run by hand)."""
    from report.quorum import quorum_figure
    from report.reading import read_view

    view = read_view(str(quorum_trace))
    view.quorum.applied = {2: [(2_500_000, 0, 14), (5_600_000, 15, 17)]}
    fig = quorum_figure(view)
    marks = [t for t in fig.data if t.name == "broker applied metadata"]
    assert len(marks) == 1
    lane = fig.layout.yaxis2.tickvals[list(fig.layout.yaxis2.ticktext).index("broker 2")]
    assert list(marks[0].x) == [2.5, 5.6] and list(marks[0].y) == [lane, lane]
    assert "offsets 15..17" in marks[0].text[1]


def test_a_preferred_election_is_marked_with_what_the_quorum_elected(tmp_path: Path) -> None:
    """broker-1 is down past its session, so its partitions are led elsewhere (no automatic
    rebalance); the preferred election moves
    them back. The quorum's active controller answers once that change has committed, a few
    ms after the request (the single controller at the same instant): the report's mark
    still names what it elected, from that answer."""
    from report.reading import read_view

    sc = load("default", ["cluster.controller_quorum=3", "duration_s=10", "heal_s=2",
                          "cluster.broker.session.timeout.ms=2000",
                          "cluster.broker.heartbeat.interval.ms=500",
                          "cluster.auto.leader.rebalance.enable=false",
                          'faults.plan=[{at_s=2.0, fault="crash", target="broker-1", '
                          'duration_s=3.0}, {at_s=8.0, fault="preferred_election"}]'])
    buf = io.BytesIO()
    assert run(sc, 1, None, writer=TraceWriter(None, buffer=buf)).status == "ok"
    path = tmp_path / "elect.jsonl"
    path.write_bytes(buf.getvalue())
    (answer,) = [e for e in _events(path, "elect_leaders") if e["trigger"] == "request"]
    assert answer["ts_us"] > 8_000_000
    (op,) = [o for o in read_view(str(path)).operations if o.kind == "preferred_election"]
    assert op.start_us == 8_000_000 and "elected: orders-" in op.detail
