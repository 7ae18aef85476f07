"""The ``isrlab compare`` door: flags, output and exit code around ``faults.compare``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import orjson

from actors.eras import BUGS, ERAS
from cli.args import Parser
from emulator.progress import Progress
from faults.compare import (
    EXIT_BAD_INPUT,
    MAX_SEEDS,
    CompareError,
    _parse_list,
    catalog,
    catalog_markdown,
    compare,
    format_table,
)


def main(argv: Sequence[str]) -> int:
    """``isrlab compare SCENARIO [--eras all|E,..] [--bugs own|all|none|B,..] [--seeds A:B]
    [--set K=V]... [--out DIR] [--json]``: 0, or 2 on bad input (one line)."""
    from faults.campaign import CampaignError, parse_seeds

    parser = Parser(
        prog="isrlab compare",
        description="One fault schedule under every protocol era and re-enabled bug.")
    parser.add_argument("scenario", nargs="?",
                        help="a TOML file or the name of a catalog entry")
    parser.add_argument("--catalog", nargs="?", const="all", metavar="NAME,...",
                        help="instead: the catalog's table from runs (each bug scenario as "
                             "written and under each [catalog] fixed variant)")
    parser.add_argument("--eras", default="all", help="all, or a comma list (0.10,2.8,...)")
    parser.add_argument("--bugs", default="own",
                        help="own (the scenario's), all, none, or a comma list; each bug "
                             "is re-enabled on the scenario's era if it has the bug's fix, "
                             "else on the nearest era that has it (a note says so)")
    parser.add_argument("--seeds", help="A:B, both included (default: the scenario's seed)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", help="keep the traces here (DIR/<row>/seed-N.jsonl.gz)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else EXIT_BAD_INPUT
    if (args.scenario is None) == (args.catalog is None):
        print("isrlab compare: give a SCENARIO or --catalog, not both and not neither",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.catalog is not None:
        names = None if args.catalog == "all" else [
            n.strip() for n in args.catalog.split(",") if n.strip()]
        if names == []:
            print(f"isrlab compare: --catalog: {args.catalog!r} names nothing; give all or "
                  "catalog names", file=sys.stderr)
            return EXIT_BAD_INPUT
        bar = Progress(sys.stderr, 0, "compare --catalog", "run")
        try:
            entries = catalog(names, progress=bar)
        except CompareError as exc:
            print(f"isrlab compare: --catalog: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        bar.finish()
        if args.json:
            sys.stdout.write(orjson.dumps([e.__dict__ for e in entries]).decode() + "\n")
        else:
            print(catalog_markdown(entries))
        return 0
    try:
        eras = list(ERAS) if args.eras == "all" else _parse_list(args.eras, ERAS, "--eras")
        bugs: list[str] | None
        if args.bugs == "own":
            bugs = None
        elif args.bugs == "all":
            bugs = list(BUGS)
        elif args.bugs == "none":
            bugs = []
        else:
            bugs = _parse_list(args.bugs, list(BUGS), "--bugs")
        chosen = parse_seeds(args.seeds) if args.seeds is not None else None
        if chosen is not None and len(chosen) > MAX_SEEDS:
            # every seed's plan is kept and each is run once per row: a campaign's job
            raise CompareError(f"--seeds: {args.seeds!r} is {len(chosen)} seeds; compare "
                               f"takes at most {MAX_SEEDS:,} (a campaign takes more)")
        seeds = list(chosen) if chosen is not None else None
        out = Path(args.out) if args.out is not None else None
        bar = Progress(sys.stderr, 0, f"compare {args.scenario}", "run")
        result = compare(args.scenario, sets=args.set, eras=eras, bugs=bugs, seeds=seeds,
                         out=out, progress=bar)
        bar.finish()
    except (CompareError, CampaignError) as exc:
        print(f"isrlab compare: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        sys.stdout.write(orjson.dumps(result.to_json()).decode() + "\n")
    else:
        print(format_table(result))
    return 0

