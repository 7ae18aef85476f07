"""The ``isrlab explore`` door: flags, output and exit code around ``faults.explore_cli``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from cli.args import Parser
from emulator.files import FileRefused, claim_folder
from emulator.scenario import ScenarioError, find
from faults.explore import STRATEGIES, Explorer
from faults.explore_cli import (
    EXIT_BAD_INPUT,
    EXIT_FOUND,
    EXIT_NONE,
    EXIT_UNREPRODUCED,
    MARKER,
    format_summary,
    load_variant,
    parse_budget,
    write_witnesses,
)


def main(argv: Sequence[str]) -> int:
    p = Parser(prog="isrlab explore",
               description="Bounded exhaustive exploration of faults and delivery orders.")
    p.add_argument("scenario", help="a scenario with an [explore] table (file or catalog name)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--seed", type=int)
    p.add_argument("--max-faults", type=int, metavar="K")
    p.add_argument("--depth", type=int, metavar="N")
    p.add_argument("--max-reorders", type=int, metavar="R")
    p.add_argument("--horizon-ms", type=float, metavar="H")
    p.add_argument("--strategy", choices=STRATEGIES, default="bfs")
    p.add_argument("--budget", default="600s",
                   help="600s: seconds; 5000: executions (default 600s)")
    p.add_argument("--stop-when-found", action="store_true",
                   help="stop once each anomaly the scenario expects has a witness")
    p.add_argument("--no-cache", action="store_true", help="no state caching (to measure it)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes sharing the subtrees of each search (default 1)")
    p.add_argument("--out", help="witnesses and summary.json (default out/explore/<name>)")
    p.add_argument("--json", action="store_true")
    try:
        args = p.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else EXIT_BAD_INPUT
    try:
        executions, seconds = parse_budget(args.budget)
        sc = load_variant(args.scenario, args.set, {
            "max_faults": args.max_faults, "depth": args.depth,
            "max_reorders": args.max_reorders, "horizon_ms": args.horizon_ms})
    except (ValueError, ScenarioError) as exc:
        print(f"isrlab explore: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.seed is not None and args.seed < 0:
        print("isrlab explore: --seed: must be >= 0", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.jobs < 1:
        print(f"isrlab explore: --jobs: must be >= 1, got {args.jobs}", file=sys.stderr)
        return EXIT_BAD_INPUT
    seed = sc["seed"] if args.seed is None else args.seed
    out = Path(args.out) if args.out else Path("out") / "explore" / sc["name"]
    source = find(args.scenario)
    try:   # before the search, not after it
        claim_folder(out, "--out", MARKER, "an explore folder",
                     [source] if source.is_file() else [])
    except FileRefused as exc:
        print(f"isrlab explore: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    explorer = Explorer(sc, seed, strategy=args.strategy, max_executions=executions,
                        max_seconds=seconds, cache=not args.no_cache,
                        stop_when_found=args.stop_when_found, jobs=args.jobs,
                        progress=None if args.json else sys.stderr)
    interrupted = False
    try:
        summary = explorer.explore()
    except KeyboardInterrupt:   # what was found so far is still written
        interrupted = True
        summary = explorer.summary
        summary.complete = False
    problems = write_witnesses(explorer.sc, seed, summary, out)
    if args.json:
        print(orjson.dumps({**summary.to_json(), "out": str(out), "problems": problems},
                           option=orjson.OPT_INDENT_2).decode())
    else:
        print(format_summary(sc, summary, out if summary.witnesses else None))
    for problem in problems:
        print(f"isrlab explore: {problem}", file=sys.stderr)
    if interrupted:
        print("isrlab explore: interrupted; the search was not completed", file=sys.stderr)
        return 130
    if problems:
        return EXIT_UNREPRODUCED
    return EXIT_FOUND if summary.witnesses else EXIT_NONE

