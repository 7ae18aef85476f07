"""``isrlab import LOG... --out TRACE [--tz ZONE] [--broker ID] [--cluster NAME]``: Kafka
broker and controller logs as an isrlab trace.

The records of every file (``lines``) are recognised (``kinds``), merged by time (a stable
sort: records of one instant keep their file order) and written through ``TraceWriter`` as
a schema-1 trace that says it is imported — ``run_start`` carries ``imported``: the source
files, the Kafka message kinds found and how many lines of each, the records read, parsed,
skipped, the replication-looking lines no kind understood (counted, with samples: never
dropped silently), and ``time_origin``, the wall-clock time ``ts_us`` 0 stands for (UTC).
There is no seed and no fault plan; ``isrlab replay`` refuses such a trace, ``isrlab check``
says that per-record anomalies (lost writes, reads) are not available for it.

Events carry only what a line said: a broker id comes from the message's prefix or, for
lines without one (``[Log partition=...]``), from ``--broker``; without either the event's
node is ``broker-unknown`` and it has no ``replica``.

Bad input is one line and exit 2: no readable file, a binary file, an output that exists
(nothing already written is overwritten) or is one of the inputs, an unknown ``--tz``. A
file without any log record is not an error: it is counted and said.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from emulator.args import Parser
from emulator.progress import Progress
from traces.logs import kinds as K
from traces.logs.lines import FileStats, LogFileError, Record, read_records, zone_of
from traces.writer import TraceWriter

#: unparsed replication-looking records kept as samples in the header
SAMPLES: Final = 20


#: one event to write: (ts_us, file index, line, kind, event with its ``_node``); the rows
#: of one file are in file order, so a stable sort by the first three merges the files
Row = tuple[int, int, int, str, dict[str, Any]]


@dataclass
class FileImport:
    """What one log file yields: its events as rows, and its counts."""

    rows: list[Row] = field(default_factory=list)
    records: int = 0
    parsed: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    unframed: int = 0
    continuation: int = 0
    unparsed_replication: int = 0
    samples: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    out: str
    files: list[str]
    #: ``--format``: auto, zk or kraft
    fmt: str = "auto"
    records: int = 0
    parsed: int = 0
    events: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    unframed: int = 0
    continuation: int = 0
    unparsed_replication: int = 0
    samples: list[str] = field(default_factory=list)
    brokers: set[int] = field(default_factory=set)

    def add(self, f: FileImport) -> None:
        """Count one file's figures in (files in their order: the samples are the first)."""
        self.records += f.records
        self.parsed += f.parsed
        self.by_kind.update(f.by_kind)
        self.unframed += f.unframed
        self.continuation += f.continuation
        self.unparsed_replication += f.unparsed_replication
        self.samples += f.samples[:SAMPLES - len(self.samples)]

    def header(self, origin_us: int) -> dict[str, Any]:
        era = {k.name: k.era for k in K.KINDS}
        return {
            "files": self.files, "format": self.fmt,
            # the kinds of controller whose statements were found (zk, kraft): a cluster's
            # era, or a migration's two
            "eras_seen": sorted({e for k in self.by_kind if (e := era.get(k)) is not None}),
            "records": self.records, "parsed": self.parsed,
            "kinds": dict(sorted(self.by_kind.items())), "unframed_lines": self.unframed,
            "continuation_lines": self.continuation,
            "unparsed_replication_like": self.unparsed_replication,
            "samples": self.samples,
            "time_origin": dt.datetime.fromtimestamp(origin_us / 1e6, dt.UTC).isoformat(),
        }


class ImportError_(Exception):
    """Bad input: one line (exit 2)."""


def _inputs(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(q for q in p.rglob("*") if q.is_file() and ".log" in q.name)
        elif p.exists():
            files.append(p)
        else:
            raise ImportError_(f"{p}: no such file or folder")
    if not files:
        raise ImportError_(f"{' '.join(paths)}: no log file found (names containing .log)")
    return files


def zone(tz: str) -> dt.tzinfo:
    """``--tz``'s zone; ImportError_ when it is none."""
    try:
        return zone_of(tz)
    except (ValueError, KeyError) as exc:
        raise ImportError_(f"--tz {tz}: not a time zone ({exc})") from None


def check_out(out: str, inputs: list[str]) -> None:
    """``--out`` must be new: nothing already written is overwritten, no input either."""
    target = Path(out)
    if target.exists():
        if any(target.resolve() == Path(f).resolve() for f in inputs if "://" not in f):
            raise ImportError_(f"{out}: --out: is one of the inputs; refusing to overwrite it")
        raise ImportError_(f"{out}: --out: exists; nothing is overwritten: choose another")


def import_file(records: Iterator[Record], stats: FileStats, index: int,
                broker: int | None, fmt: str = "auto") -> FileImport:
    """One file's records (``index``: its place among the inputs) as events and counts: the
    one parse both the in-process import and the Spark job (``spark_analysis.import_job``)
    run, so they write the same events."""
    f = FileImport()
    for rec in records:
        f.records += 1
        hit = K.match(rec, fmt)
        if hit is None:
            # not understood: counted when it reads as replication, or when only the other
            # --format's kinds would have read it
            if K.REPLICATION_WORDS.search(rec.message) or (
                    fmt != "auto" and K.match(rec) is not None):
                f.unparsed_replication += 1
                if len(f.samples) < SAMPLES:
                    f.samples.append(f"{rec.file}:{rec.line}: {rec.message[:200]}")
            continue
        kind, events = hit
        f.parsed += 1
        f.by_kind[kind.name] += 1
        for ev in events:
            f.rows.append((rec.ts_us, index, rec.line, kind.name, _placed(ev, broker)))
    f.unframed, f.continuation = stats.unframed, stats.continuation
    return f


def import_logs(paths: list[str], out: str, *, tz: str = "UTC", broker: int | None = None,
                cluster: str = "imported", progress: TextIO | None = None,
                fmt: str = "auto") -> ImportResult:
    """Read ``paths`` in this process and write the trace ``out``; ImportError_ on bad
    input. ``progress``: a stream for the progress bars (reading, by the files' bytes;
    writing, by events), drawn only if it is a terminal."""
    tzinfo = zone(tz)
    files = _inputs(paths)
    check_out(out, [str(f) for f in files])
    result = ImportResult(out, [str(f) for f in files], fmt)
    rows: list[Row] = []
    sizes = [_size(f) for f in files]
    reading = Progress(progress or sys.stderr, sum(sizes), "import: reading", "B",
                       quiet=progress is None, plain=False)
    for i, f in enumerate(files):
        stats = FileStats()
        base, done = sum(sizes[:i]), sum(sizes[:i])

        def moved(fraction: float, size: int = sizes[i], base: int = base,
                  name: str = f.name) -> None:
            nonlocal done
            now = base + int(size * fraction)
            reading.advance(now - done, name)
            done = now

        try:
            one = import_file(read_records(f, tzinfo, stats, moved), stats, i, broker, fmt)
        except LogFileError as exc:
            reading.finish()
            raise ImportError_(str(exc)) from None
        result.add(one)
        rows += one.rows
    reading.finish()
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    write_trace(result, iter(rows), len(rows), cluster=cluster, progress=progress)
    return result


def write_trace(result: ImportResult, rows: Iterator[Row], n_rows: int, *, cluster: str,
                progress: TextIO | None) -> None:
    """Write ``rows`` (merged by time) as the trace ``result.out``; ``ts_us`` 0 is the first
    row's time. A failure leaves the trace closed with status ``error``."""
    first = next(rows, None)
    origin = first[0] if first is not None else 0
    writing = Progress(progress or sys.stderr, n_rows, "import: writing", "event",
                       quiet=progress is None, plain=False)
    writer = TraceWriter(result.out)
    try:
        writer.start(seed=None, scenario={"name": cluster, "imported": True}, fault_plan=[],
                     protocol="imported", imported=result.header(origin))
        for ts, _i, _line, kind_name, ev in itertools.chain([first] if first else [], rows):
            node = ev.pop("_node")
            name = ev.pop("event")
            for b in (ev.get("replica"), ev.get("broker")):
                if isinstance(b, int):
                    result.brokers.add(b)
            writer.emit(ts - origin, node, "log", name, {**ev, "kind": kind_name})
            result.events += 1
            if result.events % 4096 == 0:
                writing.advance(4096)
        writing.advance(result.events % 4096)
        writer.close("ok")
        writing.finish()
    except BaseException:
        writing.finish()
        if not writer.closed:
            writer.close("error")
        raise


def _size(f: Path) -> int:
    try:
        return f.stat().st_size
    except OSError:
        return 0   # read_records says why it cannot be read


def _placed(ev: dict[str, Any], broker: int | None) -> dict[str, Any]:
    """The event's node, and its unknown fields dropped."""
    out = {k: v for k, v in ev.items() if v is not None}
    if out.get("replica") is None and broker is not None and out["event"] in (
            "isr_change", "become_leader", "log_truncate", "log_start_offset_update",
            "segment_delete", "log_recovery", "isr_update_skipped", "append_rejected",
            "become_follower", "fetch_offset_reset", "partition_failed",
            "coordinator_loaded", "log_dir_recovery", "segment_corruption", "fetch_error",
            "fetcher_partitions", "coordinator_unload"):
        out["replica"] = broker
    if out.pop("_controller", False) or out["event"] in (
            "broker_change", "broker_fenced", "broker_registered", "broker_unfenced",
            "partition_offline", "leader_elected", "controller_elected", "controlled_shutdown"):
        out["_node"] = "controller"
    elif isinstance(out.get("replica"), int):
        out["_node"] = f"broker-{out['replica']}"
    else:
        out["_node"] = "broker-unknown"
    return out


def main(argv: list[str]) -> int:
    """``isrlab import``: 0 written, 2 bad input (one line on stderr)."""
    parser = Parser(prog="isrlab import",
                                     description="Kafka broker logs as an isrlab trace.")
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="log files (gzip too) or folders of them")
    parser.add_argument("--out", required=True, help="the trace to write (.jsonl, .jsonl.gz)")
    parser.add_argument("--tz", default="UTC",
                        help="the zone of the logs' timestamps (default UTC; e.g. Europe/Paris)")
    parser.add_argument("--broker", type=int,
                        help="the broker id of lines that do not name one ([Log ...] lines)")
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
    from spark_analysis.cli import master_problem, open_session
    from spark_analysis.import_job import import_with_spark
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
