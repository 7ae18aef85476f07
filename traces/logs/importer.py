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

Events carry only what a line said, and the broker that wrote it. That broker is found,
in this order (:class:`BrokerHint`): from the line itself where Kafka puts it there
(``[ReplicaFetcher replicaId=1, ...]``, ``[Partition orders-0 broker=1]``, ``[Broker id=1]``
...: ``kinds.prefix_of``); else from the file's other lines — a ``server.log`` names its
broker at start-up (``broker.id = 1``, ``[KafkaServer id=1]``) and in most prefixes, and
the id named by nearly all of them (:data:`FILE_BROKER_SHARE`) is the file's; else from the
user: ``--broker FILE=ID``, a path pattern (``--broker-from-path 'broker-([0-9]+)'``) or one
``--broker ID`` for every file. A line whose broker stays unknown is on node
``broker-unknown`` without a ``replica``, and counted (``unknown_broker_events`` in the
header, per file in ``per_file``).

Exit codes: 0 written; 2 bad input or an output that cannot be written, one line on
stderr and nothing at ``--out``:

* inputs: a missing file; one that is not a regular file, named or found in a folder (a
  FIFO, a device such as ``/dev/zero``, a socket: refused before it is opened,
  ``emulator.files.input_file``); a binary file (a NUL among its first bytes); a line longer
  than 16 MiB (``lines.MAX_LINE_BYTES``, named ``file:line``: logs are read and inflated a
  block at a time, so a gzip bomb of one endless line is refused, never held whole);
* flags: an unknown ``--tz``, a ``--broker`` outside Kafka's 32-bit ``broker.id``;
* ``--out``: one that exists (nothing already written is overwritten), is one of the
  inputs, or is not a regular file's name (``/dev/null``, ``/dev/full``, a FIFO:
  ``emulator.files.output_file``); a second import writing the same ``--out`` at once (the
  trace is written whole or not at all under a lock, ``emulator.files.replacing``); a
  write that fails (a full disk);
* a record with a value no Kafka field holds — a time no calendar holds once its zone is
  applied (``0001-01-01`` with ``--tz +02:00``) or a number beyond what Kafka's field holds
  (a 20-digit broker id): no broker writes one, the log is damaged or forged; the line
  names ``file:line`` and the value.

Not errors, counted and said (the importer's contract for what it cannot use, never
dropped silently): a file without any log record; lines that frame no record; records no
kind understood. A gzip log that is cut short or damaged is imported up to the break, and one
warning line on stderr (and ``broken_files`` in the header) says how much of it was read,
in lines and bytes; the exit is still 0.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from emulator.files import FileRefused, input_file, output_file, replacing
from emulator.progress import Progress
from traces.logs import kinds as K
from traces.logs.lines import FileStats, LogFileError, Record, read_records, zone_of
from traces.writer import TraceWriter

#: unparsed replication-looking records kept as samples in the header
SAMPLES: Final = 20


#: one event to write: (ts_us, file index, line, kind, event with its ``_node``); the rows
#: of one file are in file order, so a stable sort by the first three merges the files
Row = tuple[int, int, int, str, dict[str, Any]]


#: the prefixes and start-up lines that name the broker writing a file (every release
#: family's wording: ``KafkaServer.logIdent`` "[KafkaServer id=%d] " 0.10-3.x, ``BrokerServer``
#: "[BrokerServer id=%d] " 2.8+, ``KafkaConfig`` values at start-up "broker.id = %d" and
#: "node.id = %d" (KRaft), ``ReplicaFetcherManager`` "[ReplicaFetcherManager on broker %d] ",
#: ``ReplicaManager`` "[ReplicaManager broker=%d] " 1.1+, ``Partition`` "[Partition %s
#: broker=%d] " 1.1+ / "Partition [%s,%d] on broker %d: " 0.10-1.0, ``ReplicaFetcherThread``
#: "[ReplicaFetcher replicaId=%d, ...]" 1.1+, state-change "[Broker id=%d] ",
#: ``GroupMetadataManager`` "[GroupMetadataManager brokerId=%d] ", ``GroupCoordinator``
#: "[GroupCoordinator %d]: ", ``TransactionCoordinator`` "[TransactionCoordinator id=%d] ",
#: ``BrokerLifecycleManager`` "[BrokerLifecycleManager id=%d] " 2.8+; a ZooKeeper-era
#: controller runs inside a broker: "[Controller id=%d] ")
FILE_BROKER: Final = re.compile(
    r"\[(?:KafkaServer|BrokerServer|Broker|TransactionCoordinator|BrokerLifecycleManager"
    r"|Controller) id=(\d+)[\],]|\bbroker\.id = (\d+)\b|^\s*node\.id = (\d+)\b"
    r"|\[ReplicaFetcherManager on broker (\d+)\]|\[ReplicaManager broker=(\d+)\]"
    r"|\[Partition \S+ broker=(\d+)\]|^Partition \[[^\]]+\] on broker (\d+):"
    r"|\[ReplicaFetcher replicaId=(\d+),|\[GroupMetadataManager brokerId=(\d+)\]"
    r"|\[GroupCoordinator (\d+)\]")

#: the share of a file's broker-naming lines one id must have to be the file's broker (a
#: merged log of several brokers names several ids, and then no line is guessed)
FILE_BROKER_SHARE: Final = 0.9


@dataclass(frozen=True)
class BrokerHint:
    """What the user says about the brokers of files whose lines do not name one:
    ``--broker ID`` (every file), ``--broker FILE=ID`` (a file, by its path or name) and
    ``--broker-from-path REGEX`` (the first group of a match in the file's path)."""

    default: int | None = None
    by_file: tuple[tuple[str, int], ...] = ()
    from_path: str | None = None

    def for_file(self, path: str) -> tuple[int | None, str]:
        """(broker, how it was given) for a file, None when the user said nothing."""
        for name, broker in self.by_file:
            if path == name or Path(path).name == name or path.endswith("/" + name):
                return broker, "--broker FILE=ID"
        if self.from_path is not None:
            m = re.search(self.from_path, path)
            if m is not None and m.groups() and (m.group(1) or "").isdigit():
                return int(m.group(1)), "--broker-from-path"
        if self.default is not None:
            return self.default, "--broker"
        return None, ""


def file_broker(ids: Counter[int]) -> int | None:
    """The broker a file's broker-naming lines name (``FILE_BROKER_SHARE`` of them)."""
    if not ids:
        return None
    (top, n), = ids.most_common(1)
    return top if n >= FILE_BROKER_SHARE * sum(ids.values()) else None


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
    #: how the file's gzip stream broke, with how much was read (None: it did not)
    broken: str | None = None
    #: the file's name as shown, its broker for lines that name none and how it was found
    #: ("lines", "--broker FILE=ID", "--broker-from-path", "--broker" or "" when unknown)
    name: str = ""
    broker: int | None = None
    broker_from: str = ""
    #: events left without a broker
    unknown_broker: int = 0
    #: the first and last record's time (µs since the epoch, None: no record)
    first_us: int | None = None
    last_us: int | None = None

    def facts(self) -> dict[str, Any]:
        """The file's line in the header's ``per_file``."""
        def iso(us: int | None) -> str | None:
            return None if us is None else dt.datetime.fromtimestamp(us / 1e6, dt.UTC).isoformat()
        return {"file": self.name, "records": self.records, "understood": self.parsed,
                "replication_like_not_understood": self.unparsed_replication,
                "samples": self.samples[:3], "broker": self.broker,
                "broker_from": self.broker_from or "unknown",
                "unknown_broker_events": self.unknown_broker,
                "from": iso(self.first_us), "to": iso(self.last_us)}


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
    #: the files whose gzip stream broke, each with how much was read
    broken: list[str] = field(default_factory=list)
    #: each file's figures (``FileImport.facts``), in input order
    per_file: list[dict[str, Any]] = field(default_factory=list)
    unknown_broker: int = 0

    def add(self, f: FileImport) -> None:
        """Count one file's figures in (files in their order: the samples are the first)."""
        self.records += f.records
        self.parsed += f.parsed
        self.by_kind.update(f.by_kind)
        self.unframed += f.unframed
        self.continuation += f.continuation
        self.unparsed_replication += f.unparsed_replication
        self.samples += f.samples[:SAMPLES - len(self.samples)]
        if f.broken:
            self.broken.append(f.broken)
        self.per_file.append(f.facts())
        self.unknown_broker += f.unknown_broker

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
            "broken_files": self.broken,
            "unknown_broker_events": self.unknown_broker,
            "per_file": self.per_file,
            "time_origin": dt.datetime.fromtimestamp(origin_us / 1e6, dt.UTC).isoformat(),
        }


class ImportError_(Exception):
    """Bad input: one line (exit 2)."""


def _inputs(paths: list[str]) -> list[Path]:
    """The log files named, and those found in folders (names containing ``.log``): each a
    regular file, refused at once otherwise (a FIFO would block, ``/dev/zero`` never
    ends), whether named or found."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(q for q in p.rglob("*") if ".log" in q.name and not q.is_dir())
        elif p.exists() or p.is_symlink():
            found = [p]
        else:
            raise ImportError_(f"{p}: no such file or folder")
        for q in found:
            try:
                files.append(input_file(q))
            except FileRefused as exc:
                raise ImportError_(str(exc)) from None
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
    """``--out`` must be new: nothing already written is overwritten, no input either, and
    it must be a file name isrlab may write (``emulator.files.output_file``: not
    ``/dev/null``, ``/dev/full``, a FIFO or a folder)."""
    target = Path(out)
    try:
        output_file(target, "--out", [f for f in inputs if "://" not in f])
    except FileRefused as exc:
        raise ImportError_(str(exc)) from None
    if target.exists() or target.is_symlink():
        raise ImportError_(f"{out}: --out: exists; nothing is overwritten: choose another")


#: fields Kafka holds in 32 bits (broker ids, partitions, epochs); every list of integers
#: in an imported event is one of broker ids. Other integers (offsets, sizes, times) are
#: Kafka's 64-bit longs.
INT32_FIELDS: Final = frozenset({
    "broker", "replica", "leader", "partition", "leader_epoch", "partition_epoch",
    "controller_epoch", "previous_leader_epoch", "min_isr"})


def out_of_range(ev: dict[str, Any]) -> str | None:
    """What number of an event is beyond what its Kafka field holds (a 20-digit broker id
    is no broker of Kafka's: a damaged or forged line), as words; None when none is."""
    for key, value in ev.items():
        bits = 32 if key in INT32_FIELDS or isinstance(value, list) else 64
        for x in value if isinstance(value, list) else (value,):
            if type(x) is int and not -(1 << (bits - 1)) <= x < 1 << (bits - 1):
                return f"{key} {x}: beyond a {bits}-bit integer, what Kafka's field holds"
    return None


def import_file(records: Iterator[Record], stats: FileStats, index: int,
                hint: BrokerHint | int | None, fmt: str = "auto", name: str = "") -> FileImport:
    """One file's records (``index``: its place among the inputs; ``name``: its path as
    given, for ``hint``) as events and counts: the one parse both the in-process import and
    the Spark job (``spark_analysis.import_job``) run, so they write the same events."""
    if not isinstance(hint, BrokerHint):
        hint = BrokerHint(default=hint)
    f = FileImport(name=name)
    found: list[tuple[int, int, int, str, dict[str, Any]]] = []
    named: Counter[int] = Counter()
    for rec in records:
        f.records += 1
        if f.first_us is None:
            f.first_us = rec.ts_us
        f.last_us = rec.ts_us
        said = FILE_BROKER.search(rec.message)
        if said is not None:
            named[int(next(g for g in said.groups() if g is not None))] += 1
        try:
            hit = K.match(rec, fmt)
        except ValueError as exc:   # int() of a number of thousands of digits
            stats.reject(rec.file, rec.line, f"a number out of range ({exc})")
            continue
        beyond = None if hit is None else next(
            (b for ev in hit[1] if (b := out_of_range(ev)) is not None), None)
        if beyond is not None:
            stats.reject(rec.file, rec.line, beyond)
            continue
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
            found.append((rec.ts_us, index, rec.line, kind.name, ev))
    f.broker = file_broker(named)
    f.broker_from = "lines" if f.broker is not None else ""
    if f.broker is None:
        f.broker, f.broker_from = hint.for_file(name)
    for ts, i, line, kind_name, ev in found:
        placed = _placed(ev, f.broker)
        if placed["_node"] == "broker-unknown":
            f.unknown_broker += 1
        f.rows.append((ts, i, line, kind_name, placed))
    f.unframed, f.continuation = stats.unframed, stats.continuation
    f.broken = stats.broken
    return f


def import_logs(paths: list[str], out: str, *, tz: str = "UTC",
                broker: BrokerHint | int | None = None,
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
            one = import_file(read_records(f, tzinfo, stats, moved), stats, i, broker, fmt,
                              name=str(f))
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
    row's time. Whole or nothing (``emulator.files.replacing``): the trace is written under
    a temporary name beside ``out`` and renamed onto it once closed, so a failure (a full
    disk: ``OSError``) leaves nothing at ``out``; a second import writing the same ``out``
    at once is refused (:class:`ImportError_`), as is an ``out`` that appeared meanwhile."""
    try:
        with replacing(result.out, "--out", [f for f in result.files if "://" not in f]
                       ) as part:
            if Path(result.out).exists():
                raise ImportError_(f"{result.out}: --out: exists; nothing is overwritten: "
                                   "choose another")
            _write(result, part, rows, n_rows, cluster=cluster, progress=progress)
    except FileRefused as exc:
        raise ImportError_(str(exc)) from None


def _write(result: ImportResult, path: Path, rows: Iterator[Row], n_rows: int, *,
           cluster: str, progress: TextIO | None) -> None:
    first = next(rows, None)
    origin = first[0] if first is not None else 0
    writing = Progress(progress or sys.stderr, n_rows, "import: writing", "event",
                       quiet=progress is None, plain=False)
    writer = TraceWriter(path)
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
