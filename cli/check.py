"""The ``isrlab check`` door: flags, output and exit code around ``traces.checker``."""

from __future__ import annotations

import sys

import orjson

from cli.args import Parser
from traces.checker import EXIT_INCOMPLETE, check_file, file_digest, format_table
from traces.reader import TraceError


def main(argv: list[str]) -> int:
    """``isrlab check TRACE [--json]``: 0 expect met (or an imported trace read whole: no
    verdict), 1 not met, 2 bad input (one line on stderr naming the file, the line and the
    member: not a regular file, a line past the length bound, a BOM or CR LF, a crc, seq,
    schema, ``isrlab_version``, ``run_end`` status or digest that breaks the trace contract,
    a line after ``run_end``), 3 incomplete (the run did not finish, or the trace was cut:
    no verdict, imported traces included)."""
    parser = Parser(prog="isrlab check", description="Check one trace fast.")
    parser.add_argument("trace", help="a .jsonl or .jsonl.gz trace")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        result = check_file(args.trace)
        digest = file_digest(args.trace)
    except TraceError as exc:
        print(f"isrlab check: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"isrlab check: {args.trace}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = {"trace": args.trace, "digest": digest, **result.to_json_dict(),
               "incomplete": result.incomplete}
        sys.stdout.write(orjson.dumps(out).decode() + "\n")
    else:
        print(format_table(result, args.trace))
    if result.incomplete:
        return EXIT_INCOMPLETE   # imported or not: a trace cut short or aborted
    if result.imported:
        return 0   # no verdict: the views are informational
    return 0 if result.expect_met else 1

