"""The ``isrlab show`` door: flags, output and exit code around ``traces.show``."""

from __future__ import annotations

import contextlib
import os
import sys

from cli.args import Parser
from traces.reader import TraceError, iter_events
from traces.show import Seen, _use_colour, _watched, parse_filter, show, unknown_names


def main(argv: list[str]) -> int:
    """``isrlab show TRACE [--partition P] [--node N] [--from T] [--to T] [--events K,..]``."""
    parser = Parser(
        prog="isrlab show", description="Show a trace as a timeline, one line per event.")
    parser.add_argument("trace", help="a .jsonl or .jsonl.gz trace")
    parser.add_argument("--partition", metavar="P", help="orders-0, or 0 for every topic")
    parser.add_argument("--node", metavar="N",
                        help="broker-2, or 2; controller (with a quorum: every voter), "
                        "controller-3001, producer-0…")
    parser.add_argument("--from", dest="from_s", metavar="T", help="from T seconds")
    parser.add_argument("--to", dest="to_s", metavar="T", help="up to T seconds (inclusive)")
    parser.add_argument("--events", metavar="KIND,...", help="only these event kinds")
    parser.add_argument("--no-verify", action="store_true",
                        help="read an aborted or damaged trace as far as it parses")
    parser.add_argument("--color", "--colour", choices=("auto", "always", "never"),
                        default="auto")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    try:
        keep = parse_filter(args)
    except ValueError as exc:
        print(f"isrlab: {exc}", file=sys.stderr)
        return 2
    out = sys.stdout
    colour = _use_colour(args.color, out)
    stream = iter_events(args.trace, verify=not args.no_verify)
    seen = Seen(set(), set())
    try:
        with stream:
            show(_watched(stream, seen), keep, out, colour=colour)
            out.flush()
    except TraceError as exc:
        with contextlib.suppress(BrokenPipeError):
            out.flush()
        print(f"isrlab: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, and keep Python's exit-time
        # flush of stdout from raising again
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    if args.no_verify:
        for problem in stream.problems:
            print(f"isrlab: warning: {problem}", file=sys.stderr)
    unknown = unknown_names(keep, seen)
    if unknown:
        print(f"isrlab: {unknown}", file=sys.stderr)
        return 2
    return 0

