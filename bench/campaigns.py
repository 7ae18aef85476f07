"""Campaign throughput and bug-finding power.

(a) Scaling: seeds/s of ``isrlab campaign`` with ``--jobs 1`` and ``--jobs 2`` on a safe
    scenario (``default`` with random kills, pauses and leader isolation, 10 simulated s of
    workload at 100 records/s), timed end to end (pool start-up included). Target: >= 1.7x
    with 2 jobs on 2 cores.
(b) Detection: for each bug-reproduction scenario of the catalog (``scenarios/*.toml`` whose
    ``[expect] anomalies`` is non-empty), how many seeds of *random* faults it takes until a
    seed shows every expected anomaly: the scripted plan is dropped and the nemesis draws the
    same kinds of faults the script used (``kill`` for a crash, ``isolate_leader`` for an
    isolated leader, ...), or a broad mix when the scenario has no script. The catalog is
    discovered when the bench runs, so new entries are measured without editing this file.
    The wall-time cap (``--max-seconds``) is per 50 simulated seconds of one seed (20 s of
    workload and 30 s of healing, the catalog's usual run): a random mode that simulates a
    longer run to give its interleaving room gets a proportionally longer cap. With
    ``--fixed``, each ``[catalog] fixed`` variant then runs in the same random mode over the
    same seeds (up to the first detection, at least ``--fixed-seeds``), and must not show
    the anomaly: a sanity check that the detection is the bug's and not the faults'.

Run: ``.venv/bin/python bench/campaigns.py [--seeds N] [--max-seeds M] [--catalog DIR]
[--only NAME ...] [--fixed]``
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from emulator.scenario import SCENARIO_DIR, ScenarioError, load  # noqa: E402
from faults.campaign import (  # noqa: E402
    CampaignConfig,
    Job,
    _context,
    process_pool,
    run_campaign,
    run_seed,
)

SAFE = "default"
SAFE_SET = ["duration_s=10", "heal_s=30", "producers[0].rate=100",
            'faults.nemesis=["kill","pause","isolate_leader"]', "faults.interval_s=2"]
#: scripted fault kind -> the nemesis that draws it at random
NEMESIS_FOR = {"crash": "kill", "power_loss": "power_loss", "pause": "pause",
               "isolate": "isolate", "partition": "partition", "cut": "partition",
               "delay": "delay", "drop": "drop"}
BROAD = ["kill", "power_loss", "pause", "partition", "isolate_leader"]


def _spin(n: int) -> float:
    t0 = time.perf_counter()
    x = 0
    for i in range(n):
        x += i
    return time.perf_counter() - t0


def machine_ceiling(n: int = 5_000_000) -> float:
    """Throughput of 2 concurrent CPU-bound processes relative to 1: the speed-up a
    campaign could reach right now (2.0 on two idle cores; less when others load the box)."""
    with cf.ProcessPoolExecutor(2, mp_context=_context("forkserver")) as pool:
        pool.submit(_spin, 1000).result()
        one = pool.submit(_spin, n).result()
        t0 = time.perf_counter()
        list(pool.map(_spin, [n, n]))
        two = time.perf_counter() - t0
    return 2 * one / two


def scaling(seeds: int, repeat: int) -> tuple[float, float]:
    """Best seeds/s of ``repeat`` alternating runs per job count (other load only slows)."""
    best = {1: 0.0, 2: 0.0}
    ceiling = machine_ceiling()
    print(f"(a) load average before: {' '.join(f'{x:.1f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} cores; 2 CPU-bound processes run {ceiling:.2f}x "
          "as fast as 1 right now (the ceiling; 2.0 on an idle machine)", flush=True)
    for _ in range(repeat):
        for jobs in (1, 2):
            with tempfile.TemporaryDirectory() as tmp:
                cfg = CampaignConfig(SAFE, range(1, seeds + 1),
                                     [*SAFE_SET, "expect.forbid=[]"], jobs=jobs, out=tmp,
                                     quiet=True)
                t0 = time.perf_counter()
                outcome = run_campaign(cfg, stdout=io.StringIO())
                wall = time.perf_counter() - t0
            assert len(outcome.rows) == seeds, outcome
            best[jobs] = max(best[jobs], seeds / wall)
            busy = sum(r["wall_seconds"] for r in outcome.rows.values())
            print(f"(a) --jobs {jobs}: {seeds} seeds in {wall:.1f} s = {seeds / wall:.2f} "
                  f"seeds/s (mean {busy / seeds:.2f} s per seed in the worker)", flush=True)
    return best[1], best[2]


def random_mode(sc: dict[str, Any]) -> list[str]:
    """Overrides turning a scripted reproduction into random faults: the scenario's own
    ``[catalog] random`` when it has one, else random faults of the scripted kinds."""
    if sc["catalog"]["random"]:
        return ["faults.plan=[]", *sc["catalog"]["random"]]
    kinds: list[str] = list(sc["faults"]["nemesis"])
    for f in sc["faults"]["plan"]:
        kind = NEMESIS_FOR.get(f["fault"])
        if kind == "isolate" and str(f.get("target", "")).startswith("leader:"):
            kind = "isolate_leader"
        if kind is not None and kind not in kinds:
            kinds.append(kind)
    nemesis = ", ".join(f'"{k}"' for k in (kinds or BROAD))
    return ["faults.plan=[]", f"faults.nemesis=[{nemesis}]"]


#: simulated seconds of one seed that ``--max-seconds`` is quoted for (20 s + 30 s heal)
CAP_SIM_S = 50.0


def wall_cap(sc: dict[str, Any], max_s: float) -> float:
    """The wall-time cap for a scenario: ``max_s`` per ``CAP_SIM_S`` simulated seconds."""
    return max_s * max(1.0, (float(sc["duration_s"]) + float(sc["heal_s"])) / CAP_SIM_S)


def first_detection(path: Path, overrides: list[str], max_seeds: int, max_s: float,
                    jobs: int) -> tuple[int | None, int, float, int]:
    """(first detecting seed or None, seeds run, wall s, runs that errored), seeds tried in
    order 1, 2, ...; ``max_s`` is the wall-time cap as given (see :func:`wall_cap`)."""
    sc = load(str(path), overrides)
    max_s = wall_cap(sc, max_s)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        job = Job(sc, tmp)
        pool = process_pool(jobs)
        done: dict[int, bool] = {}
        inflight: dict[cf.Future[dict[str, Any]], int] = {}
        nxt = 1
        errors = 0
        try:
            while True:
                hits = [s for s, hit in done.items() if hit]
                first = min(hits) if hits else None
                if first is not None and all(s in done for s in range(1, first)):
                    return first, len(done), time.perf_counter() - t0, errors
                out_of_time = time.perf_counter() - t0 > max_s
                while (first is None and not out_of_time and nxt <= max_seeds
                       and len(inflight) < 2 * jobs):
                    inflight[pool.submit(run_seed, job, nxt)] = nxt
                    nxt += 1
                if not inflight:
                    return None, len(done), time.perf_counter() - t0, errors
                finished, _ = cf.wait(inflight, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    row = fut.result()
                    errors += row.get("status") == "error"
                    done[inflight.pop(fut)] = bool(row.get("digest")) and not row[
                        "missing_expected"]
        finally:
            for fut in inflight:
                fut.cancel()
            pool.shutdown(wait=True, cancel_futures=True)


def fixed_hits(path: Path, overrides: list[str], fixed: list[str], seeds: int,
               jobs: int) -> tuple[list[int], int]:
    """Seeds 1..``seeds`` of a fixed variant in random mode: (seeds showing every expected
    anomaly of the bug, runs that errored)."""
    sc = load(str(path), [*overrides, *fixed])
    expected = sc["expect"]["anomalies"]
    hits: list[int] = []
    errors = 0
    with tempfile.TemporaryDirectory() as tmp:
        job = Job(sc, tmp)
        pool = process_pool(jobs)
        try:
            futures = {pool.submit(run_seed, job, s): s for s in range(1, seeds + 1)}
            for fut in cf.as_completed(futures):
                row = fut.result()
                errors += row.get("status") == "error"
                if row.get("digest") and all(row["anomalies"].get(a) for a in expected):
                    hits.append(futures[fut])
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return sorted(hits), errors


def detection(catalog: Path, max_seeds: int, max_s: float, jobs: int, *,
              only: list[str] | None = None, fixed_seeds: int = 0) -> None:
    bugs = []
    for path in sorted(catalog.glob("*.toml")):
        if only and not any(path.stem == n or path.stem.startswith(f"{n}-") for n in only):
            continue
        try:
            sc = load(str(path))
        except ScenarioError as exc:
            print(f"(b) skipped {path.name}: {exc}")
            continue
        if sc["expect"]["anomalies"]:
            bugs.append((path, sc))
    if not bugs:
        print(f"(b) no bug scenario in {catalog} yet ([expect] anomalies = [...])")
        return
    table: list[tuple[str, str, str, int, float, str]] = []
    for path, sc in bugs:
        overrides = random_mode(sc)
        seed, ran, wall, errors = first_detection(path, overrides, max_seeds, max_s, jobs)
        what = ", ".join(sc["expect"]["anomalies"])
        nemesis = " ".join(o for o in overrides[1:])
        if errors:
            nemesis += f"; {errors} runs ERRORED (an actor raised)"
        if seed is None:
            print(f"(b) {path.stem}: {what} not found in {ran} seeds ({wall:.0f} s; "
                  f"nemesis {nemesis})", flush=True)
        else:
            print(f"(b) {path.stem}: {what} first at seed {seed} ({seed} seeds to first "
                  f"detection, {wall:.0f} s; nemesis {nemesis})", flush=True)
        fixed_note = ""
        if fixed_seeds:
            upto = max(fixed_seeds, seed or 0)
            notes = []
            for fix in sc["catalog"]["fixed"]:
                fix_list = fix if isinstance(fix, list) else [fix]
                if any(o.startswith("faults.plan") for o in fix_list):
                    continue   # fixed by a smaller script (S10), which random mode drops
                hits, ferr = fixed_hits(path, overrides, fix_list, upto, jobs)
                label = " ".join(fix_list)
                verdict = f"FOUND at seeds {hits}" if hits else "none"
                print(f"(b)   fixed {label}: {what} in seeds 1..{upto}: {verdict}"
                      + (f"; {ferr} runs ERRORED" if ferr else ""), flush=True)
                notes.append(f"{label}: {len(hits)}/{upto}")
            fixed_note = "; ".join(notes)
        table.append((path.stem, what, "-" if seed is None else str(seed), ran, wall,
                      fixed_note))
    print("(b) seeds to first detection (random faults, no script):")
    width = max(len(name) for name, *_ in table)
    print(f"    {'scenario':<{width}}  {'anomaly':<22} {'first':>5} {'seeds':>5} {'wall s':>7}"
          + ("  fixed variants showing it" if fixed_seeds else ""))
    for name, what, first, ran, wall, fixed_note in table:
        print(f"    {name:<{width}}  {what:<22} {first:>5} {ran:>5} {wall:>7.0f}"
              + (f"  {fixed_note}" if fixed_seeds else ""), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=24, help="seeds per scaling measurement")
    p.add_argument("--max-seeds", type=int, default=200, help="detection: seeds at most")
    p.add_argument("--repeat", type=int, default=2, help="scaling: best of N runs")
    p.add_argument("--max-seconds", type=float, default=60.0,
                   help="detection: wall seconds at most per scenario, per 50 simulated "
                        "seconds of its random mode (see wall_cap)")
    p.add_argument("--jobs", type=int, default=2, help="detection: worker processes")
    p.add_argument("--catalog", type=Path, default=SCENARIO_DIR)
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="detection: only these catalog entries (a name, or its first "
                        "dash-separated part: s2)")
    p.add_argument("--fixed", action="store_true",
                   help="detection: also run each fixed variant in the same random mode")
    p.add_argument("--fixed-seeds", type=int, default=30,
                   help="with --fixed: seeds per fixed variant at least (default 30)")
    p.add_argument("--skip-scaling", action="store_true")
    args = p.parse_args()
    if not args.skip_scaling:
        one, two = scaling(args.seeds, args.repeat)
        verdict = "meets" if two / one >= 1.7 else "BELOW"
        print(f"(a) best: {one:.2f} vs {two:.2f} seeds/s: speed-up with 2 jobs {two / one:.2f}x "
              f"({verdict} the 1.7x target)",
              flush=True)
    detection(args.catalog, args.max_seeds, args.max_seconds, args.jobs, only=args.only,
              fixed_seeds=args.fixed_seeds if args.fixed else 0)


if __name__ == "__main__":
    main()
