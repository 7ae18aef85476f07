"""The bench scripts are not run by the tests (their figures are measurements, not
assertions), but each must still import against today's code: a renamed function once left
``bench/campaigns.py`` failing at its first line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_each_bench_script_imports_against_the_current_code(script: str) -> None:
    spec = importlib.util.spec_from_file_location(f"bench_{script[:-3]}", BENCH / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)   # module level only: main() runs under __main__
    assert callable(getattr(module, "main", None)), f"{script} has no main()"
