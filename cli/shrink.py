"""The ``isrlab shrink`` door: flags, output and exit code around ``faults.shrink_cli``."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from faults.shrink_cli import (
    DEFAULT_BUDGET,
    EXIT_BAD_INPUT,
    ShrinkInputError,
    _Parser,
    shrink_folder,
    shrink_trace,
)


def main(argv: Sequence[str]) -> int:
    """``isrlab shrink TRACE [--out DIR] [--budget N] [--anomaly NAME ...]``: 0 shrunk, 1 the
    plan no longer fails, 2 bad input."""
    p = _Parser(prog="isrlab shrink", description="Shrink a failing run's fault plan.")
    p.add_argument("trace", help="a failing run's trace (.jsonl or .jsonl.gz)")
    p.add_argument("--out", help="output directory (default: next to the trace)")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help=f"emulator runs allowed (default {DEFAULT_BUDGET})")
    p.add_argument("--anomaly", action="append", default=[], metavar="NAME",
                   help="the anomaly to keep (default: the forbidden ones the trace shows)")
    try:
        args = p.parse_args(list(argv))
        if args.budget < 1:
            raise ShrinkInputError(f"--budget: must be >= 1, got {args.budget}")
        trace = Path(args.trace)
        out = Path(args.out) if args.out else shrink_folder(trace)
        return shrink_trace(trace, out, budget=args.budget, anomalies=args.anomaly).code
    except ShrinkInputError as exc:
        print(f"isrlab shrink: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT

