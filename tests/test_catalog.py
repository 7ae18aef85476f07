"""The scenario catalog: each historical anomaly shows under its era or re-enabled bug, and
is gone under the era that fixed it (docs/historical-scenarios.md: each scenario, its Kafka
issue and its verdicts)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from helpers import catalog_trace

from emulator.scenario import SCENARIO_DIR, load
from traces.checker import CheckResult, check_events

CATALOG = sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))
BUGS = [n for n in CATALOG if load(n)["expect"]["anomalies"]]
FIXED = [(n, f if isinstance(f, list) else [f]) for n in BUGS
         for f in load(n)["catalog"]["fixed"]]


def _check(name: str, overrides: list[str] | None = None, seed: int | None = None
           ) -> CheckResult:
    data = catalog_trace(name, *(overrides or []), seed=seed)
    return check_events(orjson.loads(line) for line in data.splitlines())


@pytest.mark.parametrize("name", BUGS)
def test_catalog_bug_scenario_shows_its_documented_anomaly(name: str) -> None:
    result = _check(name)
    assert not result.missing_expected, f"{name}: expected {result.missing_expected}"
    assert result.expect_met


@pytest.mark.parametrize("name, fix", FIXED)
def test_catalog_bug_scenario_shows_nothing_under_the_fix(name: str, fix: list[str]) -> None:
    expected = load(name)["expect"]["anomalies"]
    result = _check(name, fix)
    found = {a: result.anomalies[a] for a in expected if result.anomalies[a]}
    assert not found, f"{name} with {fix}: {found}"


@pytest.mark.parametrize("name", [n for n in CATALOG if n not in BUGS])
def test_safe_scenarios_meet_their_expectations(name: str) -> None:
    for seed in (1, 2, 3) if name.startswith("safe-") else (1,):
        result = _check(name, seed=seed)
        assert result.expect_met, f"{name} seed {seed}: {result.forbidden_found}"


def test_every_catalog_entry_has_a_description() -> None:
    for name in CATALOG:
        assert load(name)["description"], name
    assert (Path(SCENARIO_DIR) / "default.toml").exists()
