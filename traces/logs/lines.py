"""Framing log4j records out of Kafka log files.

Kafka's stock ``config/log4j.properties`` lays a record out as ``[%d] %p %m (%c)%n``::

    [2018-07-14 04:38:25,954] INFO [Partition t-0 broker=1] Shrinking ISR from 1,3 to 1
        (kafka.cluster.Partition)                                  <- one line in the file

— a timestamp in the broker's local time without a zone (``yyyy-MM-dd HH:mm:ss,SSS``), the
level, the message, and the logger in parentheses. A record may be followed by continuation
lines (a stack trace) that belong to it. Deployments change the pattern, so the frame is
read leniently: an optional bracket, an ISO-8601 ``T`` and a zone or ``Z`` are accepted,
leading whitespace (pasted logs) is ignored, and the logger suffix is optional. A line that
starts no record and follows none is counted as unframed, never dropped silently.

Files may be gzip (by their magic bytes, not their name) and rotated
(``server.log.2024-05-01-10``): :func:`read_records` takes any number of files and yields
their records in file order; the importer merges files by time.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from zoneinfo import ZoneInfo

#: ``read_records`` reports its progress every this many lines
PROGRESS_LINES: Final = 8192

LEVELS: Final = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")

_RECORD: Final = re.compile(
    r"^\s*\[?(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,9})?"
    r"(?:Z|[+-]\d{2}:?\d{2})?)\]?\s+(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+"
    r"(?P<msg>.*?)\s*$")
_LOGGER: Final = re.compile(r"^(?P<msg>.*)\s\((?P<logger>[A-Za-z_$][\w.$]*)\)$")
#: log4j2 / Strimzi layouts put the thread and the logger before the message:
#: ``[kafka-scheduler-0] UnifiedLog:66 - [UnifiedLog partition=...] Deleting ...``
_THREAD_LOGGER: Final = re.compile(r"^\[[^\]]*\]\s+(?P<logger>[\w.$]+)(?::\d+)?\s+-\s+")
#: what containers put before a record: a compose service column (``kafka    | ``), a
#: runtime timestamp (``2019-04-11T12:32:24.676797004Z ``), a stray backtick from a paste
_CONTAINER: Final = re.compile(
    r"^(?:`|\S+\s+\|\s|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z\s+(?=\[))")


@dataclass
class Record:
    """One log4j record: where it came from, when, how loud, what it said."""

    file: str
    line: int                 #: 1-based line of the record's first line in its file
    ts_us: int                #: microseconds since the Unix epoch (UTC)
    level: str
    message: str
    logger: str | None
    #: continuation lines (a stack trace), kept for counting, not parsed
    extra: list[str] = field(default_factory=list)


@dataclass
class FileStats:
    records: int = 0
    unframed: int = 0         #: lines that neither start a record nor follow one
    continuation: int = 0     #: lines attached to the record above them (stack traces)


class LogFileError(Exception):
    """A file that cannot be read as a text log: ``file: why`` (one line)."""


def parse_time(text: str, zone: dt.tzinfo) -> int:
    """A log timestamp as microseconds since the epoch; ``zone`` when the text has none."""
    t = text.replace(",", ".").replace("T", " ")
    if t.endswith("Z"):
        t = t[:-1] + "+00:00"
    m = re.match(r"^(.*\.\d{1,6})\d*(.*)$", t)   # datetime takes at most microseconds
    if m:
        t = m.group(1) + m.group(2)
    when = dt.datetime.fromisoformat(t)
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone)
    return int(when.timestamp() * 1_000_000)


def open_text(path: Path) -> list[str]:
    """The lines of a (possibly gzip) log file; LogFileError on binary or unreadable input."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LogFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return decode_text(data, str(path))


def decode_text(data: bytes, name: str) -> list[str]:
    """The lines of a log file's bytes (gzip by its magic bytes, not its name): what a Spark
    task holding a whole file has too; LogFileError (naming ``name``) on binary data."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            # a cut gzip: keep what decompresses (the stream up to the break)
            data = _gzip_prefix(data)
            if not data:
                raise LogFileError(f"{name}: gzip: {exc}") from None
    if b"\x00" in data[:4096]:
        raise LogFileError(f"{name}: binary data (a NUL byte): not a text log")
    return data.decode("utf-8", errors="replace").splitlines()


def _gzip_prefix(data: bytes) -> bytes:
    import zlib
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        return d.decompress(data)
    except zlib.error:
        return b""


def zone_of(name: str) -> dt.tzinfo:
    """``UTC``, an IANA zone name (``Europe/Paris``) or an offset (``+02:00``)."""
    if re.fullmatch(r"[+-]\d{2}:?\d{2}", name):
        sign = -1 if name[0] == "-" else 1
        hh, mm = int(name[1:3]), int(name[-2:])
        return dt.timezone(sign * dt.timedelta(hours=hh, minutes=mm))
    return ZoneInfo(name)


def unwrap(raw: str) -> str:
    """A log line out of what carried it: Docker's JSON log driver (``{"log": "...\\n"}``),
    a compose prefix, a container runtime's timestamp, a pasted backtick."""
    if raw.startswith('{"log":'):
        try:
            obj = json.loads(raw)
        except ValueError:
            return raw
        if isinstance(obj, dict) and isinstance(obj.get("log"), str):
            raw = obj["log"].rstrip("\n")
    for _ in range(2):   # a compose column before a runtime timestamp, say
        m = _CONTAINER.match(raw)
        if m is None:
            break
        raw = raw[m.end():]
    return raw


def read_records(path: Path, zone: dt.tzinfo, stats: FileStats,
                 progress: Callable[[float], None] | None = None) -> Iterator[Record]:
    """The records of one file, in file order (see ``records_of``)."""
    return records_of(str(path), open_text(path), zone, stats, progress)


def records_of(name: str, lines: Sequence[str], zone: dt.tzinfo, stats: FileStats,
               progress: Callable[[float], None] | None = None) -> Iterator[Record]:
    """The records of one file's ``lines``, in file order; ``progress(fraction of the lines
    read)`` now and then (every ``PROGRESS_LINES`` lines) and at the end."""
    current: Record | None = None
    for n, raw in enumerate(lines, 1):
        if progress is not None and n % PROGRESS_LINES == 0:
            progress(n / len(lines))
        raw = unwrap(raw)
        m = _RECORD.match(raw)
        if m is None:
            if current is not None and raw.strip():
                current.extra.append(raw)
                stats.continuation += 1
            elif raw.strip():
                stats.unframed += 1
            continue
        if current is not None:
            yield current
        try:
            ts = parse_time(m.group("ts"), zone)
        except ValueError:
            stats.unframed += 1
            current = None
            continue
        msg, logger = m.group("msg"), None
        tm = _THREAD_LOGGER.match(msg)
        if tm is not None:
            msg, logger = msg[tm.end():], tm.group("logger")
        lm = _LOGGER.match(msg)
        if lm is not None:
            msg, logger = lm.group("msg").rstrip(), lm.group("logger")
        level = "WARN" if m.group("level") == "WARNING" else m.group("level")
        current = Record(name, n, ts, level, msg, logger)
        stats.records += 1
    if current is not None:
        yield current
    if progress is not None:
        progress(1.0)
