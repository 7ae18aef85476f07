"""The ``isrlab replay`` door: flags, output and exit code around ``traces.replay``."""

from __future__ import annotations

import contextlib
import os
import sys

from cli.args import Parser, count, sigterm_interrupts
from emulator.files import FileRefused
from traces.reader import TraceError
from traces.replay import (
    DEFAULT_CONTEXT,
    EXIT_INCOMPLETE,
    LINE_WIDTH,
    MAX_CONTEXT,
    _replay,
    format_result,
)


def main(argv: list[str]) -> int:
    """``isrlab replay TRACE [--out NEW] [--context N] [--full]``."""
    parser = Parser(
        prog="isrlab replay",
        description="Re-run a recorded trace from its header and compare event by event "
                    "(exit 0 identical, 1 diverged, 2 bad input, 3 interrupted).")
    parser.add_argument("trace", help="a .jsonl or .jsonl.gz trace")
    parser.add_argument("--out", help="keep the replayed trace here (default: a temp file)")
    parser.add_argument("--context", type=count(0, MAX_CONTEXT), default=DEFAULT_CONTEXT,
                        metavar="N", help=f"identical lines shown before the divergence "
                                          f"({DEFAULT_CONTEXT}; at most {MAX_CONTEXT})")
    parser.add_argument("--full", action="store_true", help="do not shorten long lines")
    parser.add_argument("--trace-messages", action="store_true",
                        help="replay with message tracing (keep it with --out)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    try:
        with sigterm_interrupts():
            res = _replay(args)
    except KeyboardInterrupt:
        print("isrlab: replay interrupted before it finished: nothing compared"
              + ("" if args.out is None else f", {args.out} not written")
              + f"; INCOMPLETE, exit {EXIT_INCOMPLETE}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except (TraceError, FileRefused) as exc:
        print(f"isrlab: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:   # writing --out failed (a full disk): nothing kept
        print(f"isrlab: {args.out}: --out: cannot write the replayed trace: "
              f"{exc.strerror or exc}; nothing written", file=sys.stderr)
        return 2
    for warning in res.warnings:
        print(f"isrlab: warning: {warning}", file=sys.stderr)
    if res.replay_status == "aborted":
        print("isrlab: replay interrupted: the comparison stops where the replay did"
              + ("" if res.replayed_trace is None else
                 f"; {res.replayed_trace} keeps what was written (run_end status aborted)")
              + f"; INCOMPLETE, exit {EXIT_INCOMPLETE}", file=sys.stderr)
        return EXIT_INCOMPLETE
    try:
        print(format_result(res, width=None if args.full else LINE_WIDTH))
        sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    return 0 if res.identical else 1

