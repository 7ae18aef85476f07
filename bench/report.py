"""Report cost on the reference run: build time, HTML size, time to open in headless Chromium.

Runs scenarios/reference.toml (60 simulated s + healing, ~470k events; or takes an existing
trace with --trace), writes its report, and prints: the time to build it, its size (target
< 5 MB), and the time from navigation to every visible plot drawn in headless Chromium
(target < 3 s; fresh browser each time, median of --opens), next to the same figure for a
page holding only plotly.js (the floor) and the machine's load average (the figures are
wall-clock and move with a busy machine).   Run: .venv/bin/python bench/report.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report.browser import INSTALL_HINT, Chromium, find_chromium  # noqa: E402
from report.markup import Html, page  # noqa: E402
from report.trace_page import trace_report  # noqa: E402

SIZE_TARGET = 5_000_000
OPEN_TARGET_S = 3.0


def _open_times(path: Path, n: int) -> list[float]:
    times = []
    for _ in range(n):
        with Chromium() as browser:
            res = browser.open(path)
            if res.console_errors:
                print(f"    console errors: {res.console_errors}")
            times.append(res.load_seconds)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", help="an existing reference trace (default: run one now)")
    ap.add_argument("--opens", type=int, default=5, help="browser openings to time")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="isrlab-bench-report-"))
    trace = Path(args.trace) if args.trace else work / "reference.jsonl"
    if not args.trace:
        from emulator.cluster import run
        from emulator.scenario import load
        t0 = time.perf_counter()
        res = run(load("reference"), 1, str(trace))
        print(f"reference run: {res.events:,} events, {res.sim_seconds:.1f} simulated s, "
              f"{trace.stat().st_size / 1e6:.1f} MB trace, {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    html, summary = trace_report(str(trace))
    build = time.perf_counter() - t0
    out = work / "reference.html"
    out.write_text(html, encoding="utf-8")
    size = out.stat().st_size
    print(f"report: {summary}")
    print(f"build: {build:.1f} s   size: {size:,} bytes ({size / 1e6:.2f} MB; target < 5 MB: "
          f"{'ok' if size < SIZE_TARGET else 'OVER'})")
    if find_chromium() is None:
        print(f"open time: skipped, {INSTALL_HINT}")
        return 0 if size < SIZE_TARGET else 1
    floor = work / "plotly-only.html"
    floor.write_text(page("floor", Html("<header></header>"), []), encoding="utf-8")
    load1 = os.getloadavg()[0]
    opens = _open_times(out, args.opens)
    floor_opens = _open_times(floor, max(1, args.opens // 2))
    med = statistics.median(opens)
    print(f"open (navigation → visible plots drawn), {len(opens)} fresh browsers: median "
          f"{med:.2f} s, min {min(opens):.2f} s, max {max(opens):.2f} s (target < 3 s: "
          f"{'ok' if med < OPEN_TARGET_S else 'OVER'})")
    print(f"floor (a page with only plotly.js): median {statistics.median(floor_opens):.2f} s")
    print(f"load average during the measurement: {load1:.1f} / {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    print(f"files: {out}")
    return 0 if size < SIZE_TARGET and med < OPEN_TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
