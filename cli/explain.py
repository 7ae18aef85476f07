"""The ``isrlab explain`` door: flags, output and exit code around ``traces.explain``."""

from __future__ import annotations

import sys

import orjson

from cli.args import Parser
from traces.checker import EXIT_INCOMPLETE
from traces.explain import ExplainError, explain_with_messages, only_record
from traces.explain_chains import explain
from traces.explain_fold import Key
from traces.explain_output import format_text
from traces.reader import TraceError


def main(argv: list[str]) -> int:
    """``isrlab explain TRACE [--anomaly KIND] [--record TOPIC-P@OFFSET] [--json]``: 0, 2
    bad input, 3 the run did not finish (chains are still printed). ``--record`` prints
    that record's chain only, and one line counting the trace's other findings."""
    from traces.schema import ANOMALIES
    parser = Parser(
        prog="isrlab explain",
        description="Explain each anomaly of a trace: its causal chain and the rule at fault.")
    parser.add_argument("trace", help="a .jsonl or .jsonl.gz trace")
    parser.add_argument("--anomaly", metavar="KIND", help="only this anomaly")
    parser.add_argument("--record", metavar="TOPIC-P@OFFSET",
                        help="only this record's chain (the trace's other findings are "
                             "counted in one line)")
    parser.add_argument("--json", action="store_true", help="one JSON object")
    parser.add_argument("--messages", action="store_true",
                        help="add the messages behind the steps (a trace without message "
                             "lines is re-run with --trace-messages when it replays "
                             "identically)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    if args.anomaly is not None and args.anomaly not in ANOMALIES:
        print(f"isrlab explain: --anomaly: {args.anomaly!r} is not one of "
              f"{', '.join(ANOMALIES)}", file=sys.stderr)
        return 2
    try:
        record = _record_arg(args.record) if args.record is not None else None
    except ValueError as exc:
        print(f"isrlab explain: {exc}", file=sys.stderr)
        return 2
    try:
        how = explain_with_messages if args.messages else explain
        ex = how(args.trace, anomaly=args.anomaly, record=record)
        if record is not None:   # that record's chain; the rest counted in one line
            ex = only_record(ex, record)
    except (TraceError, ExplainError) as exc:
        print(f"isrlab explain: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"isrlab explain: {args.trace}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.write(orjson.dumps(ex.to_json()).decode() + "\n")
    else:
        print(format_text(ex))
    return EXIT_INCOMPLETE if ex.result.incomplete else 0


def _record_arg(text: str) -> tuple[Key, int]:
    """``orders-0@1234`` -> ((orders, 0), 1234)."""
    tp, sep, off = text.rpartition("@")
    topic, dash, part = tp.rpartition("-")
    if not sep or not dash or not topic or not part.isdigit() or not off.isdigit():
        raise ValueError(f"--record: {text!r} is not TOPIC-PARTITION@OFFSET (orders-0@1234)")
    return (topic, int(part)), int(off)

