"""``isrlab explore`` on the catalog's explore variants: what it finds, how fast, what it covers.

For every catalog scenario with an ``[explore]`` table:

* **find**: the bug's own era (or re-enabled bug), ``--strategy bfs`` until each expected
  anomaly has a witness: seconds, executions, the witness's choices;
* **cover**: each era of its ``[catalog] fixed`` list, ``--strategy dfs`` over the whole
  bounds: complete or not, executions, distinct states, executions/s, states/s per core,
  anything found;

* **pct**: the bug's own era again, ``--strategy pct --stop-when-found`` (PCTCP, random):
  how many executions until it is found (``--pct-budget`` seconds at most), beside bfs's
  systematic count;

and once, **reduction**: the S1 variant with reorderings (depth 6, one fault, two
reorderings) searched with and without state caching — the executions each needed and the
saving factor.

One process, one core per search (``--jobs`` 1): run it on a quiet machine. ``python
bench/explore.py [--only NAME] [--budget SECONDS] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from emulator.scenario import SCENARIO_DIR, load  # noqa: E402
from faults.explore import Explorer  # noqa: E402
from faults.explore_cli import load_variant  # noqa: E402


def variants() -> list[str]:
    names = []
    for path in sorted(SCENARIO_DIR.glob("*.toml")):
        if "[explore]" in path.read_text(encoding="utf-8"):
            names.append(path.stem)
    return names


def search(name: str, sets: list[str], strategy: str, budget_s: float, *,
           stop: bool, cache: bool = True, bounds: dict[str, Any] | None = None
           ) -> dict[str, Any]:
    sc = load_variant(name, sets, bounds or {})
    t0 = time.perf_counter()
    s = Explorer(sc, sc["seed"], strategy=strategy, max_seconds=budget_s, cache=cache,
                 stop_when_found=stop).explore()
    wall = time.perf_counter() - t0
    row = s.to_json()
    row["seconds"] = round(wall, 1)
    row["executions_per_s"] = round(s.executions / wall, 2) if wall else 0.0
    row["states_per_s"] = round(s.states / wall, 2) if wall else 0.0
    row["protocol"] = sc["protocol"]
    row["bugs"] = sc["bugs"]
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", action="append", default=[])
    p.add_argument("--budget", type=float, default=900.0, help="seconds per search")
    p.add_argument("--pct-budget", type=float, default=120.0,
                   help="seconds per pct search (random: it may not find within any budget)")
    p.add_argument("--json", help="write every row here")
    args = p.parse_args()
    rows: list[dict[str, Any]] = []
    names = [n for n in variants() if not args.only or n in args.only]
    print(f"{'scenario':44} {'mode':6} {'era':12} {'result':40} {'execs':>6} {'states':>6} "
          f"{'s':>6} {'ex/s':>5}")
    for name in names:
        fixed = load(name)["catalog"]["fixed"]
        plan = [("find", [], "bfs", True), ("pct", [], "pct", True)]
        plan += [("cover", [f], "dfs", False) for f in fixed]
        for mode, sets, strategy, stop in plan:
            row = search(name, sets, strategy,
                         args.pct_budget if strategy == "pct" else args.budget, stop=stop)
            row["mode"] = mode
            rows.append(row)
            if mode in ("find", "pct"):
                found = row["witnesses"]
                result = (", ".join(f"{k} ({len(w['choices'])} choices)"
                                    for k, w in sorted(found.items())) or "NOT FOUND")
            else:
                result = ("complete, " if row["complete"] else "INCOMPLETE, ") + (
                    ", ".join(sorted(row["witnesses"])) or "no anomaly")
            era = row["protocol"] + ("+" + ",".join(row["bugs"]) if row["bugs"] else "")
            row["era"] = era
            print(f"{name:44} {mode:6} {era:12} {result[:40]:40} {row['executions']:>6} "
                  f"{row['distinct_states']:>6} {row['seconds']:>6} "
                  f"{row['executions_per_s']:>5}", flush=True)
    if not args.only or "reduction" in args.only:
        bounds = {"depth": 6, "max_faults": 1, "max_reorders": 2}
        cached = search("s1-kip101-hw-truncation", [], "dfs", args.budget, stop=False,
                        bounds=bounds)
        plain = search("s1-kip101-hw-truncation", [], "dfs", args.budget, stop=False,
                       cache=False, bounds=bounds)
        factor = plain["executions"] / max(1, cached["executions"])
        rows.append({"mode": "reduction", "cached": cached, "uncached": plain,
                     "saving": round(factor, 2)})
        print(f"reduction (S1 variant, depth 6, 1 fault, 2 reorderings, dfs): "
              f"{cached['executions']} executions with state caching ({cached['pruned']} "
              f"pruned, {cached['distinct_states']} states, {cached['seconds']} s) against "
              f"{plain['executions']} without ({plain['seconds']} s): {factor:.2f}x fewer")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
