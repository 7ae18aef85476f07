"""``isrlab report PATH [-o OUT] [--max-points N] [--no-rerun]``: the command.

PATH is a trace (``.jsonl`` / ``.jsonl.gz``: ``trace_page``), a folder ``isrlab compare
--out`` wrote (``compare``), a campaign folder with ``results.jsonl`` or a plain folder of
traces (``campaign``).

Exit codes:

* **0** the report is written, whatever the run's verdict (``isrlab check`` gives verdict
  exit codes).
* **1** the report of a folder is written, but some of its traces are damaged (unreadable,
  or failing verification): they are left out of the page and named on stderr, one line
  each (``isrlab report: damaged trace: FILE:LINE: problem``).
* **2** bad input, one line on stderr: a missing path, a PATH that is neither a folder nor
  a regular file (a FIFO, a device, a socket), a file that is not a trace or fails
  verification, a folder with nothing to report, a count out of range (``--max-points``),
  or an output that cannot be written: ``-o`` is an input (the trace, or a file the report
  of a folder read), is not a regular file (``/dev/null``, ``/dev/full``, a folder), is
  being written by another isrlab command now, or the write failed (a full disk).
* **3** interrupted (SIGINT, SIGTERM): nothing written.

The page is written whole under a temporary name beside ``-o`` and renamed onto it
(:func:`emulator.files.replacing`): a failure leaves nothing half-written and whatever
``-o`` held before untouched.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

from cli.args import Parser, count, sigterm_interrupts
from emulator.files import FileRefused, input_file, output_file, replacing
from report import ReportError
from report.trace_page import MAX_POINTS, trace_report
from traces.reader import TraceError

#: the largest ``--max-points`` budget (points plotted over all timelines)
MAX_POINTS_LIMIT = 10_000_000
#: exit codes besides 0 written and 2 bad input
EXIT_DAMAGED = 1
EXIT_INTERRUPTED = 3

# --------------------------------------------------------------------------- entry point


def _is_trace_name(p: Path) -> bool:
    return p.name.endswith(".jsonl.gz") or (p.name.endswith(".jsonl") and
                                            p.name != "results.jsonl")


def build(path: str, max_points: int = MAX_POINTS, *, rerun: bool = True
          ) -> tuple[str, str, list[str], list[Path]]:
    """(HTML, summary line, damaged traces, files read) for a trace or a folder; raises
    ReportError / TraceError / FileRefused. The damaged traces (one line each) are those
    of a folder left out of its page."""
    p = Path(path)
    from faults.compare import RESULT_FILE
    if p.is_dir() and (p / RESULT_FILE).is_file():   # isrlab compare --out DIR
        from report.compare import CompareReportError, compare_report
        try:
            html, summary = compare_report(p, RESULT_FILE)
        except CompareReportError as exc:
            raise ReportError(str(exc)) from None
        return html, summary, [], [p / RESULT_FILE]
    if p.is_dir():
        from report.campaign import campaign_page
        return campaign_page(p)
    if not p.exists():
        raise ReportError(f"{path}: no such file or folder")
    input_file(p)   # a FIFO, a device, a socket: refused before anything is read
    html, summary = trace_report(path, max_points, rerun=rerun)
    return html, summary, [], [p]


def _default_out(path: str) -> str:
    p = Path(path)
    if p.is_dir():
        return str(p / "report.html")
    name = p.name.removesuffix(".gz").removesuffix(".jsonl")
    return str(p.with_name(name + ".html"))




def _report(args: Namespace) -> int:
    out = args.out or _default_out(args.path)
    try:
        output_file(out, "-o", [args.path])   # refused before the (long) build
        html, summary, damaged, read = build(args.path, max(100, args.max_points),
                                             rerun=not args.no_rerun)
    except (ReportError, TraceError, FileRefused) as exc:
        print(f"isrlab report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"isrlab report: {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    data = html.encode("utf-8")
    try:
        with replacing(out, "-o", [args.path, *read]) as part:
            part.write_bytes(data)
    except FileRefused as exc:
        print(f"isrlab report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"isrlab report: {out}: -o: cannot write: {exc.strerror or exc}; nothing "
              "written", file=sys.stderr)
        return 2
    print(f"{summary}\nreport {out} ({len(data) / 1e6:.2f} MB)")
    for line in damaged:
        print(f"isrlab report: damaged trace: {line}", file=sys.stderr)
    return EXIT_DAMAGED if damaged else 0


def main(argv: list[str]) -> int:
    """``isrlab report PATH [-o OUT]``: 0 written, 1 written with damaged traces left out,
    2 bad input (one line on stderr), 3 interrupted."""
    parser = Parser(prog="isrlab report",
                    description="An HTML report of a trace, a campaign or a comparison.")
    parser.add_argument("path", help="a trace (.jsonl, .jsonl.gz) or a campaign folder")
    parser.add_argument("-o", "--out", help="the HTML file to write (default: next to PATH)")
    parser.add_argument("--max-points", type=count(1, MAX_POINTS_LIMIT), default=MAX_POINTS,
                        help=f"LEO/HW points plotted over all timelines (default {MAX_POINTS}; "
                             f"at least 100 are drawn)")
    parser.add_argument("--no-rerun", action="store_true",
                        help="do not re-run a trace without message lines to draw its messages")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    try:
        with sigterm_interrupts():
            return _report(args)
    except KeyboardInterrupt:
        print(f"isrlab report: interrupted: nothing written, exit {EXIT_INTERRUPTED}",
              file=sys.stderr)
        return EXIT_INTERRUPTED

