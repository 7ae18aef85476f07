"""``isrlab explore``: choice points in the runtime, the cluster digest, the search, witnesses.

The searches here run on the catalog's explore variants with small bounds (seconds each);
bench/explore.py runs the full bounds and measures them.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from cli.explore import main
from emulator.choice import ChoiceError, Option, ScriptedOracle, parse_fault
from emulator.cluster import run
from emulator.scenario import ScenarioError, load
from faults.explore import Explorer, StateCache
from faults.explore_cli import load_variant, parse_budget
from traces.checker import check_events, check_file
from traces.writer import TraceWriter

S1 = "s1-kip101-hw-truncation"
S12 = "s12-kafka14704-follower-hw-before-truncate"
ROOT = Path(__file__).resolve().parent.parent


def _variant(name: str, **bounds: Any) -> dict[str, Any]:
    return load_variant(name, [], bounds)


def _lines(sc: dict[str, Any], oracle: Any = None) -> list[bytes]:
    buf = io.BytesIO()
    run(sc, sc["seed"], None, writer=TraceWriter(None, buffer=buf), oracle=oracle)
    return buf.getvalue().splitlines()


def _body(lines: list[bytes]) -> list[dict[str, Any]]:
    """The events after the header, without the members a header change moves."""
    out = []
    for line in lines[1:]:
        ev = orjson.loads(line)
        for k in ("crc", "sha256"):
            ev.pop(k, None)
        out.append(ev)
    return out


class _Recorder:
    """An oracle that takes option 0 everywhere and remembers what it was offered."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []

    def pick(self, point: int, options: list[Option], state: Any, left: Any) -> int:
        self.offered.append([o.label for o in options])
        return 0


def test_the_default_schedule_is_the_ordinary_run() -> None:
    """Taking option 0 at every point delivers what a batch would, in the same order: the
    trace is the ordinary run's, event for event (only the header, which records the
    [explore] table, differs)."""
    sc = _variant(S1)
    ordinary = {k: v for k, v in sc.items() if k != "explore"}
    rec = _Recorder()
    explored = _lines(sc, rec)
    assert len(rec.offered) == sc["explore"]["depth"]
    assert _body(explored) == _body(_lines(ordinary))


def test_points_offer_faults_where_they_act_and_reverts_while_they_hold() -> None:
    sc = _variant(S1)
    picks = {0: "crash broker-2"}

    class Oracle(_Recorder):
        def pick(self, point: int, options: list[Option], state: Any, left: Any) -> int:
            super().pick(point, options, state, left)
            labels = [o.label for o in options]
            return labels.index(picks[point]) if point in picks else 0

    oracle = Oracle()
    _lines(sc, oracle)
    first, second = oracle.offered[0], oracle.offered[1]
    assert first[1:] == ["crash broker-1", "crash broker-2"]
    # broker-2 is down: it cannot be crashed again, and its restart is offered
    assert "crash broker-2" not in second and "restart broker-2" in second


def test_a_schedule_replays_and_a_stale_one_is_refused() -> None:
    sc = _variant(S1)
    choices = [{"point": 0, "option": 2, "label": "crash broker-2"}]
    sc["explore"]["choices"] = choices
    a, b = _lines(sc), _lines(sc)
    assert a == b
    assert any(b'"event":"choice"' in line and b"crash broker-2" in line for line in a)
    with pytest.raises(ChoiceError, match="point 0 option 2"):
        ScriptedOracle([{"point": 0, "option": 2, "label": "pause broker-9"}]).pick(
            0, [Option("deliver", "x"), Option("fault", "a"), Option("fault", "b")],
            lambda: b"", (1, 0))


def test_candidate_faults_and_choices_are_validated_at_load() -> None:
    assert parse_fault("isolate broker-1 for 4s") == ("isolate", ["broker-1"], 4.0)
    with pytest.raises(ScenarioError, match="explore.faults\\[0\\]"):
        load(S1, ['explore.faults=["explode broker-1"]'])
    with pytest.raises(ScenarioError, match="unknown target 'broker-7'"):
        load(S1, ['explore.faults=["crash broker-7"]'])
    # a controller quorum's voters are targets too, and only the scenario's
    quorum = load("kraft-controller-failover", ['explore.faults=["crash controller-3001 for 2s"]'])
    assert quorum["explore"]["faults"] == ["crash controller-3001 for 2s"]
    with pytest.raises(ScenarioError, match="unknown target 'controller-3003'"):
        load("kraft-controller-failover", ['explore.faults=["crash controller-3003"]'])
    with pytest.raises(ScenarioError, match="unknown target 'controller-3000'"):
        load(S1, ['explore.faults=["crash controller-3000"]'])
    with pytest.raises(ScenarioError, match="explore.choices\\[0\\]"):
        load(S1, ['explore.choices=[{point=0, option=0}]'])
    with pytest.raises(ValueError, match="--budget"):
        parse_budget("ten minutes")
    assert parse_budget("90s") == (0, 90.0) and parse_budget("500") == (500, 0.0)


def test_digest_is_the_same_in_any_process_and_tells_states_apart() -> None:
    """The digest never depends on PYTHONHASHSEED (no hash() of str, no set order)."""
    code = (
        "import sys; from faults.explore_cli import load_variant\n"
        "from emulator.cluster import run\n"
        "class O:\n"
        "    d = []\n"
        "    def pick(self, point, options, state, left):\n"
        "        O.d.append(state().hex()); return 1 if point == 2 else 0\n"
        f"sc = load_variant({S1!r}, [], {{}})\n"
        "run(sc, 1, None, writer=__import__('traces.writer').writer.TraceWriter(None, "
        "buffer=__import__('io').BytesIO()), oracle=O())\n"
        "print(' '.join(O.d))\n")
    outs = []
    for seed in ("0", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT,
                                   capture_output=True, text=True, check=True).stdout.split())
    assert outs[0] == outs[1]
    assert len(set(outs[0])) == len(outs[0])   # every point of this run is a new state


def test_state_cache_prunes_only_dominated_budgets() -> None:
    cache = StateCache()
    assert cache.visit(b"s", (5, 1, 0, 3))
    assert not cache.visit(b"s", (4, 1, 0, 3))   # less left: explored already
    assert cache.visit(b"s", (4, 2, 0, 3))       # one more fault left: not covered
    assert cache.visit(b"t", (1, 0, 0, 0))


def test_explore_finds_s1_with_a_witness_that_replays(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """S1 (KIP-101) under 0.10: the explorer places the crashes itself; the witness is a
    scenario file whose trace replays byte for byte and shows the lost acked writes."""
    out = tmp_path / "s1"
    code = main([S1, "--stop-when-found", "--out", str(out), "--json"])
    assert code == 1
    summary = json.loads(capsys.readouterr().out)
    assert "lost_acked_write" in summary["witnesses"]
    w = summary["witnesses"]["lost_acked_write"]["choices"]
    assert len(w) == 3 and all(c["label"].split()[0] in ("crash", "restart") for c in w)
    trace = out / "lost_acked_write.jsonl"
    assert check_file(trace).anomalies["lost_acked_write"] > 0
    from cli.replay import main as replay
    assert replay([str(trace)]) == 0


def test_fixed_era_covers_the_bounds_and_finds_nothing(tmp_path: Path) -> None:
    """The same S1 variant under 0.11 (KIP-101's leader epochs): every schedule within the
    (small) bounds runs, and none loses data."""
    sc = load_variant(S1, ['protocol="0.11"'], {"depth": 4})
    s = Explorer(sc, sc["seed"], strategy="dfs").explore()
    assert s.complete and not s.witnesses
    assert s.states > 0 and s.executions == s.leaves + s.pruned
    assert "no anomaly within 2 faults" in s.statement()


def test_reduced_and_unreduced_searches_find_the_same_anomalies() -> None:
    """State caching prunes schedules that reach a state seen before (independent
    deliveries in either order); it must not lose an anomaly."""
    found = []
    for cache in (True, False):
        sc = load_variant(S1, ["explore.from_s=1.35"], {"depth": 4, "max_reorders": 1})
        s = Explorer(sc, sc["seed"], strategy="dfs", cache=cache).explore()
        assert s.complete
        found.append((sorted(s.witnesses), s.executions, s.pruned))
    (with_cache, n_cached, pruned), (without, n_plain, _) = found
    assert with_cache == without and "lost_acked_write" in with_cache
    assert pruned > 0 and n_cached < n_plain


def test_the_same_command_gives_the_same_search(tmp_path: Path) -> None:
    runs = []
    for _ in range(2):
        sc = _variant(S12)
        s = Explorer(sc, sc["seed"], strategy="bfs", max_executions=25).explore()
        runs.append({k: v for k, v in s.to_json().items() if k != "seconds"})
    assert runs[0] == runs[1]
    assert runs[0]["executions"] == 25
    # no execution failed: a fault whose stop kept a bound method of the cluster once led
    # the state digest into the Trio runtime (14 GB, no end); the digest now refuses it
    assert "run_error" not in runs[0]["witnesses"]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["safe-acks-all"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no [explore] table" in err[0]
    assert main([S1, "--budget", "soon"]) == 2
    assert main([S1, "--set", 'explore.faults=["crash"]']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "names no target" in err[1]
    taken = tmp_path / "a-file"
    taken.write_text("mine\n")
    assert main([S1, "--out", str(taken)]) == 2   # refused before the search starts
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(taken) in err[0] and taken.read_text() == "mine\n"


def test_jobs_split_the_search_without_changing_it() -> None:
    """Two workers search the subtrees of the first deviations and the results are merged in
    their order: the same executions, states and witnesses as one process."""
    out = []
    for jobs in (1, 2):
        sc = load_variant(S1, ["explore.from_s=1.35"], {"depth": 4, "max_reorders": 1})
        s = Explorer(sc, sc["seed"], strategy="dfs", jobs=jobs).explore()
        out.append({k: v for k, v in s.to_json().items() if k != "seconds"})
    assert out[0] == out[1] and out[0]["complete"]


def test_a_reordering_is_a_choice_a_schedule_can_replay() -> None:
    """Delivering another channel's entry first is an option like a fault; its witness
    schedule replays to the same trace, and the trace says where the run left the ordinary
    schedule."""
    sc = load_variant(S1, [], {"max_reorders": 1, "horizon_ms": 1.0})
    rec = _Recorder()
    _lines(sc, rec)
    point, option = next((p, i) for p, labels in enumerate(rec.offered)
                         for i, label in enumerate(labels)
                         if i > 0 and label.startswith(("deliver", "timer")))
    label = rec.offered[point][option]
    sc["explore"]["choices"] = [{"point": point, "option": option, "label": label}]
    a, b = _lines(sc), _lines(sc)
    assert a == b
    choice = [orjson.loads(line) for line in a if b'"event":"choice"' in line]
    assert [(c["point"], c["label"]) for c in choice] == [(point, label)]


def test_pct_samples_the_same_schedules_for_the_same_seed() -> None:
    runs = []
    for _ in range(2):
        sc = _variant(S1)
        s = Explorer(sc, sc["seed"], strategy="pct", max_executions=12).explore()
        runs.append({k: v for k, v in s.to_json().items() if k != "seconds"})
    assert runs[0] == runs[1] and runs[0]["executions"] == 12 and not runs[0]["complete"]


def test_pct_serves_the_highest_priority_chain_and_lowers_it_at_a_change_point() -> None:
    """PCTCP: a chain (a channel) keeps the random priority it got when first seen, so the
    same channel wins point after point; at a change point the chain about to be served
    drops below every other (to priority 1), and the next chain in priority order wins."""
    from faults.explore import _PctExecution

    def offered(*chains: str) -> list[Option]:
        return [Option("deliver", f"deliver {c}", i, chain=c) for i, c in enumerate(chains)]

    chains = ("a->b", "b->a", "timer c/x")
    ex = _PctExecution(depth=8, seed=5, change_points=[2], fault_points={})
    first = ex.pick(0, offered(*chains), bytes, (0, 8))
    assert ex.pick(1, offered(*reversed(chains)), bytes, (0, 8)) == 2 - first
    winner = chains[first]
    ranked = sorted(chains, key=lambda c: -ex.priority[c])
    assert ranked[0] == winner and all(ex.priority[c] > 1 for c in chains)
    after = ex.pick(2, offered(*chains), bytes, (0, 8))
    assert chains[after] == ranked[1] and ex.priority[winner] == 1
    assert ex.pick(3, offered(*chains), bytes, (0, 8)) == after
    # a fault point takes a fault option when there is one
    ex2 = _PctExecution(depth=8, seed=5, change_points=[], fault_points={0: 0.99})
    opts = [*offered(*chains), Option("fault", "crash broker-1", counts=True),
            Option("fault", "crash broker-2", counts=True)]
    assert ex2.pick(0, opts, bytes, (2, 8)) == 4


def test_pct_finds_s1_and_states_its_bound(tmp_path: Path) -> None:
    """pct on S1 under 0.10 (its bounds place faults only) finds the lost acked writes with a
    witness that replays; under 0.11 with one reordering in the bounds (a bug of depth 2) it
    finds nothing and says how unlikely a miss is: p_miss = (1 - p_hit) ** executions,
    with p_hit from PCTCP's bound over the chains it ranked and the fault draw."""
    sc = _variant(S1)
    explorer = Explorer(sc, sc["seed"], strategy="pct", max_executions=40,
                        stop_when_found=True)
    s = explorer.explore()
    assert "lost_acked_write" in s.witnesses and s.chains == 0   # nothing reordered
    w = dict(explorer.sc, explore={**explorer.sc["explore"],
                                   "choices": s.witnesses["lost_acked_write"].choices})
    assert check_events(orjson.loads(x) for x in _lines(w)).anomalies["lost_acked_write"]
    fixed = load_variant(S1, ['protocol="0.11"'], {"max_reorders": 1})
    f = Explorer(fixed, fixed["seed"], strategy="pct", max_executions=10).explore().to_json()
    assert not f["witnesses"] and not f["complete"]
    pct = f["pct"]
    assert pct["chains"] > 1 and pct["fault_points"] == 4 and pct["fault_options"] >= 1
    assert 0 < pct["p_hit"] < 1 and pct["p_miss"] == pytest.approx((1 - pct["p_hit"]) ** 10)
    assert "missed by all with probability" in f["statement"]
