"""The ``isrlab regress`` door: flags, output and exit code around ``traces.regress``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from cli.args import Parser
from emulator.files import FileRefused, claim_folder
from traces.reader import TraceError
from traces.regress import DEFAULT_DIR, INDEX, record, unknown_only, verify


def main(argv: list[str]) -> int:
    """``isrlab regress [--record] [--dir DIR] [--only NAME,...] [--jobs N]``: 0 every run
    reproduces (or recorded), 1 a change, 2 bad input (one line: ``--only`` naming no entry
    of the index, or none; an index or a trace that is unreadable, not a regular file or
    breaks the trace contract)."""
    parser = Parser(
        prog="isrlab regress",
        description="Verify the recorded regression traces (exit 1 on any change), or "
                    "re-record them on purpose with --record.")
    parser.add_argument("--record", action="store_true",
                        help="re-run every entry, add new catalog scenarios, rewrite the index")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR,
                        help="the suite's folder (default: tests/regressions)")
    parser.add_argument("--only", metavar="NAME,...",
                        help="only these entries (no catalog discovery)")
    parser.add_argument("--jobs", type=int, default=0, metavar="N",
                        help="runs at a time (default, or 0: all cores)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    if args.jobs < 0:
        print(f"isrlab regress: --jobs: must be >= 1, or 0 for all cores; got {args.jobs}",
              file=sys.stderr)
        return 2
    jobs = args.jobs or os.cpu_count() or 1
    from emulator.scenario import ScenarioError

    only = ([n.strip() for n in args.only.split(",") if n.strip()]
            if args.only is not None else None)
    index = args.dir / INDEX
    try:
        bad_only = unknown_only(args.dir, only) if only is not None else None
        if bad_only:
            print(f"isrlab: {bad_only}", file=sys.stderr)
            return 2
        if args.record:
            # it replaces the traces and the index it finds there: only in a folder that is
            # new, empty or a regression suite's own (it holds index.json)
            claim_folder(args.dir, "--dir", INDEX, "a regression folder")
            changed = record(args.dir, only=only, jobs=jobs)
            print(f"recorded {index}: {changed} change(s); commit the traces and the index")
            return 0
        if not index.exists():
            print(f"isrlab: {index}: no regression index: record one with "
                  "`isrlab regress --record`", file=sys.stderr)
            return 2
        outcome = verify(args.dir, only=only, jobs=jobs)
    except (TraceError, ScenarioError, FileRefused) as exc:
        print(f"isrlab: {exc}", file=sys.stderr)
        return 2
    if outcome.changed:
        n = sum(1 for p in outcome.problems.values() if p) + len(outcome.missing)
        n += len(outcome.gone)
        print(f"{n} change(s) against {index}. If the change is intended, re-record: "
              "isrlab regress --record")
        return 1
    print(f"all {len(outcome.problems)} recorded runs reproduce with their verdicts")
    return 0

