"""The ``isrlab import`` door: Kafka broker logs as an isrlab trace.

``isrlab import LOG... --out TRACE|DIR [--tz ZONE] [--broker ID] [--cluster NAME]
[--format auto|zk|kraft] [--engine auto|spark|process] [--master URL]``. This door chooses
where the parse runs — in this process (``traces.logs.importer``) or as a Spark job
(``spark_analysis.import_job``) — so the importer knows nothing of Spark. What is bad input
and the exit codes: ``traces.logs.importer``'s note (0 written; 2 bad input or an output
that cannot be written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cli.args import Parser
from traces.logs import kinds as K
from traces.logs.importer import ImportError_, ImportResult, check_out, import_logs, zone


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
    parser.add_argument("--broker", type=int,
                        help="the broker id of lines that do not name one ([Log ...] lines): "
                             "0 to 2147483647, as Kafka's broker.id")
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
    if args.broker is not None and not 0 <= args.broker < 1 << 31:
        print(f"isrlab import: --broker {args.broker}: not a broker id (0 to 2147483647, "
              "Kafka's broker.id is a 32-bit integer)", file=sys.stderr)
        return 2
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
    eras = res.header(0)["eras_seen"]
    print(f"brokers seen {sorted(res.brokers) or '-'}; controllers' statements seen: "
          f"{', '.join(eras) or 'none'}\ntrace {res.out}")
    return 0


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
