"""The ``isrlab import`` door: Kafka broker logs as an isrlab trace.

``isrlab import LOG... --out TRACE|DIR [--tz ZONE] [--broker ID|FILE=ID ...]
[--broker-from-path REGEX] [--cluster NAME] [--format auto|zk|kraft]
[--engine auto|spark|process] [--master URL]``. This door chooses
where the parse runs — in this process (``traces.logs.importer``) or as a Spark job
(``spark_analysis.import_job``) — so the importer knows nothing of Spark. What is bad input
and the exit codes: ``traces.logs.importer``'s note (0 written; 2 bad input or an output
that cannot be written).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from cli.args import Parser
from traces.logs import kinds as K
from traces.logs.importer import (
    BrokerHint,
    ImportError_,
    ImportResult,
    check_out,
    import_logs,
    zone,
)


def main(argv: list[str]) -> int:
    """``isrlab import``: 0 written (a gzip log cut short or damaged is imported up to the
    break, with one warning line per such file on stderr saying how much was read), 2 bad
    input or an output that cannot be written (one line on stderr; nothing at ``--out``)."""
    parser = Parser(prog="isrlab import",
                                     description="Kafka broker logs as an isrlab trace.")
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="log files (gzip too) or folders of them")
    parser.add_argument("--out", required=True, help="the trace to write (.jsonl, .jsonl.gz)")
    parser.add_argument("--tz", default="UTC",
                        help="the zone of the logs' timestamps (default UTC; e.g. Europe/Paris)")
    parser.add_argument("--broker", action="append", default=[], metavar="ID|FILE=ID",
                        help="the broker of a file whose lines do not say it (a line's own "
                             "prefix, then the file's other lines, come first): ID for every "
                             "file, FILE=ID for one (repeat it); 0 to 2147483647, as Kafka's "
                             "broker.id")
    parser.add_argument("--broker-from-path", default=None, metavar="REGEX",
                        help="the broker of a file from its path: the first group of REGEX, "
                             "e.g. 'broker-([0-9]+)'")
    parser.add_argument("--cluster", default="imported", help="a name for the trace")
    parser.add_argument("--format", choices=K.FORMATS, default="auto",
                        help="whose controller statements to read: zk (ZooKeeper era), kraft, "
                             "or auto (both: a cluster's era is found from its lines)")
    parser.add_argument("--engine", choices=("auto", "spark", "process"), default="auto",
                        help="parse in Spark or in this process (auto: Spark for a URI "
                             "or --master)")
    parser.add_argument("--master", default=None,
                        help="the Spark master, as for analyze (default: local[*] or the "
                             "environment)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    hint = _broker_hint(args.broker, args.broker_from_path)
    if isinstance(hint, str):
        print(f"isrlab import: {hint}", file=sys.stderr)
        return 2
    args.broker = hint
    out = args.out
    if out.endswith("/") or Path(out).is_dir():
        out = str(Path(out) / f"{Path(args.cluster).name or 'imported'}.jsonl.gz")
    try:
        if _in_spark(args):
            res = _spark_import(args, out)
        else:
            res = import_logs(args.logs, out, tz=args.tz, broker=args.broker,
                              cluster=args.cluster, progress=sys.stderr, fmt=args.format)
    except ImportError_ as exc:
        print(f"isrlab import: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:   # writing the trace failed (a full disk): nothing was left at out
        print(f"isrlab import: {out}: --out: cannot write: {exc.strerror or exc}; nothing "
              "was written", file=sys.stderr)
        return 2
    for broken in res.broken:
        print(f"isrlab import: warning: {broken}", file=sys.stderr)
    print(f"imported {len(res.files)} file(s): {res.records} records, {res.parsed} parsed "
          f"into {res.events} events, {res.unframed} lines not a log record, "
          f"{res.unparsed_replication} replication-looking records not understood")
    for kind, n in sorted(res.by_kind.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {kind:<26}{n:>8}")
    for s in res.samples[:5]:
        print(f"  not understood: {s}")
    for f in res.per_file:
        broker = ("broker unknown" if f["broker"] is None
                  else f"broker {f['broker']} (from {f['broker_from']})")
        span = (f"{f['from']} to {f['to']}" if f["from"] is not None else "no record")
        print(f"file {f['file']}: {f['records']} records, {f['understood']} understood, "
              f"{f['replication_like_not_understood']} replication-looking not understood; "
              f"{broker}; {span}")
        for sample in f["samples"][:2]:
            print(f"  not understood: {sample}")
    if res.unknown_broker:
        print(f"{res.unknown_broker} events without a broker (node broker-unknown): give "
              "--broker FILE=ID or --broker-from-path REGEX")
    eras = res.header(0)["eras_seen"]
    print(f"brokers seen {sorted(res.brokers) or '-'}; controllers' statements seen: "
          f"{', '.join(eras) or 'none'}\ntrace {res.out}")
    return 0


def _broker_hint(given: list[str], from_path: str | None) -> BrokerHint | str:
    """``--broker`` and ``--broker-from-path`` as a :class:`BrokerHint`, or the one line
    saying what is wrong with them."""
    default: int | None = None
    by_file: list[tuple[str, int]] = []
    for value in given:
        name, eq, number = value.rpartition("=")
        try:
            broker = int(number)
        except ValueError:
            return f"--broker {value}: not ID or FILE=ID (an integer broker id)"
        if not 0 <= broker < 1 << 31:
            return (f"--broker {value}: not a broker id (0 to 2147483647, Kafka's broker.id "
                    "is a 32-bit integer)")
        if eq:
            by_file.append((name, broker))
        elif default is not None:
            return f"--broker {value}: a second default broker (use FILE=ID for one file)"
        else:
            default = broker
    if from_path is not None:
        try:
            groups = re.compile(from_path).groups
        except re.error as exc:
            return f"--broker-from-path {from_path}: not a regular expression ({exc})"
        if groups < 1:
            return f"--broker-from-path {from_path}: needs a group for the broker id"
    return BrokerHint(default, tuple(by_file), from_path)


def _in_spark(args: argparse.Namespace) -> bool:
    """Spark when asked, or for a URI or a master. Local files stay in process: on a small
    machine a local Spark session is no faster (``bench/import.py --spark``) and takes
    10-15 s to start."""
    if args.engine != "auto":
        return bool(args.engine == "spark")
    return args.master is not None or any("://" in p for p in args.logs)


def _spark_import(args: argparse.Namespace, out: str) -> ImportResult:
    from spark_analysis.import_job import import_with_spark
    from spark_analysis.session import master_problem, open_session
    zone(args.tz)
    check_out(out, args.logs)
    bad = master_problem(args.master)
    if bad:
        raise ImportError_(bad)
    spark = open_session(args.master)
    if isinstance(spark, str):
        raise ImportError_(spark)
    return import_with_spark(spark, args.logs, out, tz=args.tz, broker=args.broker,
                             cluster=args.cluster, progress=sys.stderr, fmt=args.format)
