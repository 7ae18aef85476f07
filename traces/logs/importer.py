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
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from emulator.progress import Progress
from traces.logs import kinds as K
from traces.logs.lines import FileStats, LogFileError, Record, read_records, zone_of
from traces.writer import TraceWriter

#: unparsed replication-looking records kept as samples in the header
SAMPLES: Final = 20


@dataclass
class ImportResult:
    out: str
    files: list[str]
    records: int = 0
    parsed: int = 0
    events: int = 0
    #: events recognised so far, while reading (the progress bar's status)
    events_read: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    unframed: int = 0
    continuation: int = 0
    unparsed_replication: int = 0
    samples: list[str] = field(default_factory=list)
    brokers: set[int] = field(default_factory=set)

    def header(self, origin_us: int) -> dict[str, Any]:
        return {
            "files": self.files, "records": self.records, "parsed": self.parsed,
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


def import_logs(paths: list[str], out: str, *, tz: str = "UTC", broker: int | None = None,
                cluster: str = "imported", progress: TextIO | None = None) -> ImportResult:
    """Read ``paths`` and write the trace ``out``; ImportError_ on bad input. ``progress``:
    a stream for the progress bars (reading, by the files' bytes; writing, by events), drawn
    only if it is a terminal."""
    try:
        zone = zone_of(tz)
    except (ValueError, KeyError) as exc:
        raise ImportError_(f"--tz {tz}: not a time zone ({exc})") from None
    files = _inputs(paths)
    target = Path(out)
    if target.exists():
        if any(target.resolve() == f.resolve() for f in files):
            raise ImportError_(f"{out}: --out: is one of the inputs; refusing to overwrite it")
        raise ImportError_(f"{out}: --out: exists; nothing is overwritten: choose another")
    result = ImportResult(out, [str(f) for f in files])
    rows: list[tuple[int, int, int, str, dict[str, Any]]] = []
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
            reading.advance(now - done, f"{name}, {result.events_read} events")
            done = now

        try:
            for rec in read_records(f, zone, stats, moved):
                result.records += 1
                hit = K.match(rec)
                if hit is None:
                    _unparsed(rec, result)
                    continue
                kind, events = hit
                result.parsed += 1
                result.by_kind[kind.name] += 1
                for ev in events:
                    rows.append((rec.ts_us, i, rec.line, kind.name, _placed(ev, broker)))
                result.events_read = len(rows)
        except LogFileError as exc:
            reading.finish()
            raise ImportError_(str(exc)) from None
        result.unframed += stats.unframed
        result.continuation += stats.continuation
    reading.finish()
    rows.sort(key=lambda r: (r[0], r[1], r[2]))
    origin = rows[0][0] if rows else 0
    writing = Progress(progress or sys.stderr, len(rows), "import: writing", "event",
                       quiet=progress is None, plain=False)
    writer = TraceWriter(out)
    try:
        writer.start(seed=None, scenario={"name": cluster, "imported": True}, fault_plan=[],
                     protocol="imported", imported=result.header(origin))
        for ts, _i, _line, kind_name, ev in rows:
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
    return result


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


def _unparsed(rec: Record, result: ImportResult) -> None:
    if K.REPLICATION_WORDS.search(rec.message):
        result.unparsed_replication += 1
        if len(result.samples) < SAMPLES:
            result.samples.append(f"{rec.file}:{rec.line}: {rec.message[:200]}")


def main(argv: list[str]) -> int:
    """``isrlab import``: 0 written, 2 bad input (one line on stderr)."""
    parser = argparse.ArgumentParser(prog="isrlab import",
                                     description="Kafka broker logs as an isrlab trace.")
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="log files (gzip too) or folders of them")
    parser.add_argument("--out", required=True, help="the trace to write (.jsonl, .jsonl.gz)")
    parser.add_argument("--tz", default="UTC",
                        help="the zone of the logs' timestamps (default UTC; e.g. Europe/Paris)")
    parser.add_argument("--broker", type=int,
                        help="the broker id of lines that do not name one ([Log ...] lines)")
    parser.add_argument("--cluster", default="imported", help="a name for the trace")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code in (0, None) else 2
    try:
        res = import_logs(args.logs, args.out, tz=args.tz, broker=args.broker,
                          cluster=args.cluster, progress=sys.stderr)
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
    print(f"brokers seen {sorted(res.brokers) or '-'}\ntrace {res.out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
