"""``isrlab report PATH [-o OUT] [--max-points N] [--no-rerun]``: the command.

PATH is a trace (``.jsonl`` / ``.jsonl.gz``: ``trace_page``), a folder ``isrlab compare
--out`` wrote (``compare``), a campaign folder with ``results.jsonl`` or a plain folder of
traces (``campaign``). Failure modes are one line on stderr and exit 2 (missing path, a file
that is not a trace or fails verification, a folder with nothing to report, an unwritable
output, an output that is the input); a report written is exit 0, whatever the run's
verdict (``isrlab check`` gives verdict exit codes).
"""

from __future__ import annotations

import sys
from pathlib import Path

from emulator.args import Parser
from report import ReportError
from report.trace_page import MAX_POINTS, trace_report
from traces.reader import TraceError

# --------------------------------------------------------------------------- entry point


def _is_trace_name(p: Path) -> bool:
    return p.name.endswith(".jsonl.gz") or (p.name.endswith(".jsonl") and
                                            p.name != "results.jsonl")


def build(path: str, max_points: int = MAX_POINTS, *, rerun: bool = True) -> tuple[str, str]:
    """(HTML, summary line) for a trace or a folder; raises ReportError / TraceError."""
    p = Path(path)
    from faults.compare import RESULT_FILE
    if p.is_dir() and (p / RESULT_FILE).is_file():   # isrlab compare --out DIR
        from report.compare import CompareReportError, compare_report
        try:
            return compare_report(p, RESULT_FILE)
        except CompareReportError as exc:
            raise ReportError(str(exc)) from None
    if p.is_dir():
        from report.campaign import campaign_report
        return campaign_report(p)
    if not p.exists():
        raise ReportError(f"{path}: no such file or folder")
    return trace_report(path, max_points, rerun=rerun)


def _default_out(path: str) -> str:
    p = Path(path)
    if p.is_dir():
        return str(p / "report.html")
    name = p.name.removesuffix(".gz").removesuffix(".jsonl")
    return str(p.with_name(name + ".html"))


def _same_file(out: str, path: str) -> bool:
    """Whether writing ``out`` would overwrite ``path`` (the same file, however named)."""
    a, b = Path(out), Path(path)
    try:
        return a.exists() and b.exists() and a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def main(argv: list[str]) -> int:
    """``isrlab report PATH [-o OUT]``: 0 written, 2 bad input (one line on stderr)."""
    parser = Parser(prog="isrlab report", description=__doc__.splitlines()[0])
    parser.add_argument("path", help="a trace (.jsonl, .jsonl.gz) or a campaign folder")
    parser.add_argument("-o", "--out", help="the HTML file to write (default: next to PATH)")
    parser.add_argument("--max-points", type=int, default=MAX_POINTS,
                        help=f"LEO/HW points plotted over all timelines (default {MAX_POINTS})")
    parser.add_argument("--no-rerun", action="store_true",
                        help="do not re-run a trace without message lines to draw its messages")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    out = args.out or _default_out(args.path)
    if _same_file(out, args.path):
        print(f"isrlab report: {out}: -o: is the input itself; refusing to overwrite it",
              file=sys.stderr)
        return 2
    try:
        html, summary = build(args.path, max(100, args.max_points), rerun=not args.no_rerun)
    except (ReportError, TraceError) as exc:
        print(f"isrlab report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"isrlab report: {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(html, encoding="utf-8")
    except OSError as exc:
        print(f"isrlab report: {out}: -o: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"{summary}\nreport {out} ({len(html.encode()) / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
