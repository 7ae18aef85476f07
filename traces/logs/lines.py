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

A file is read a block at a time (:class:`LogText`: gzip inflated at most a block per
step), never whole: a line is bounded by ``MAX_LINE_BYTES`` (a longer one is bad input
naming the file and the line), only regular files are opened (``open_text``), and a gzip
stream that breaks ends the lines where it broke, saying how much was read.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final
from zoneinfo import ZoneInfo

from emulator.files import FileRefused, input_file
from traces.blocks import inflated_blocks

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
    #: how the file's gzip stream broke, with how much was read (``LogText.broken``)
    broken: str | None = None

    @staticmethod
    def reject(name: str, line: int, why: str) -> None:
        """A record with a value no Kafka field holds: a time no calendar holds once its zone
        is applied (``0001-01-01`` ahead of UTC), a number beyond its field (a 20-digit
        broker id). No broker writes one — the log is damaged or forged — so it is bad
        input, one line naming the file, the line and the value (:class:`LogFileError`):
        never a traceback, never a record quietly left out."""
        raise LogFileError(f"{name}:{line}: {why}")


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
    try:   # an instant of the calendar in UTC too (year 1 ahead of UTC is not)
        when.astimezone(dt.UTC)
        return int(when.timestamp() * 1_000_000)
    except (OverflowError, OSError) as exc:
        raise TimeOutOfRange(f"time {text} in {zone}: out of range ({exc})") from None


class TimeOutOfRange(ValueError):
    """A log time that parses but that no instant holds (``0001-01-01 00:00`` at +02:00 is
    before year 1 in UTC)."""


#: a log line longer than this is refused (bad input naming the file and the line): no
#: Kafka record comes close, a binary or corrupted file (one endless line) would
MAX_LINE_BYTES: Final = 16 << 20
#: bytes read (and, for gzip, inflated) at a time
_BLOCK: Final = 1 << 20
#: the first bytes of a log's text searched for a NUL (a binary file)
_PROBE: Final = 4096


class LogText:
    """The lines of one log file's bytes, read and decoded a block at a time: never the
    whole file in memory, never a line longer than ``MAX_LINE_BYTES``.

    Gzip is recognised by its magic bytes (every member is read). Lines end at ``\n`` (a
    ``\r`` before it is dropped) and at the other line boundaries of ``str.splitlines``, so
    the lines are those of ``text.splitlines()`` of the whole decoded file. Raises
    :class:`LogFileError` (``file: why`` or ``file:line: why``, one line) for binary data (a
    NUL among the first bytes), a line past the bound, a gzip stream broken before its first
    byte, or a file that cannot be read. A gzip stream that is cut off or damaged later ends
    the lines where it breaks, the torn last line included, and ``broken`` says so with
    how much was read (lines and bytes): the importer reports it.
    """

    def __init__(self, name: str, stream: BinaryIO, size: int = 0) -> None:
        self.name = name
        self.size = size            #: the stored bytes (for ``fraction``), 0 when unknown
        self.read = 0               #: stored bytes read so far
        self.text = 0               #: decoded (inflated) bytes so far
        self.lines = 0              #: lines yielded so far
        self.broken: str | None = None
        self._stream = stream

    def fraction(self) -> float:
        """How much of the stored bytes has been read (0 when the size is unknown)."""
        return min(1.0, self.read / self.size) if self.size else 0.0

    def _chunks(self) -> Iterator[bytes]:
        """The file's text, a block at a time (inflated at most ``_BLOCK`` per step)."""
        return inflated_blocks(self._read, _BLOCK,
                               lambda how: self._break(f"the gzip stream is {how}"))

    def _read(self) -> bytes:
        try:
            data = self._stream.read(_BLOCK)
        except OSError as exc:
            raise LogFileError(f"{self.name}: cannot read: {exc.strerror or exc}") from None
        self.read += len(data)
        return data

    def _break(self, how: str) -> None:
        if not self.text:
            raise LogFileError(f"{self.name}: gzip: {how} before its first byte")
        self.broken = (f"{self.name}: {how}: read {self.lines} lines ({self.text} bytes of "
                       f"text from {self.read} bytes of the file) before the break; the "
                       "records before it were imported")

    def __iter__(self) -> Iterator[str]:
        try:
            yield from self._lines()
        finally:
            self._stream.close()

    def _lines(self) -> Iterator[str]:
        carry = b""
        probed = b""
        for chunk in self._chunks():
            self.text += len(chunk)
            if len(probed) < _PROBE:
                probed += chunk[:_PROBE - len(probed)]
                if b"\x00" in probed:
                    raise LogFileError(f"{self.name}: binary data (a NUL byte): not a text log")
            cut = chunk.rfind(b"\n") + 1
            if not cut:
                carry += chunk
                self._bound(len(carry))
                continue
            head = chunk.find(b"\n")
            self._bound(len(carry) + head)
            region, carry = carry + chunk[:cut], chunk[cut:]
            yield from self._split(region)
            self._bound(len(carry))
        if carry:
            yield from self._split(carry)

    def _split(self, region: bytes) -> Iterator[str]:
        for line in region.decode("utf-8", errors="replace").splitlines():
            self.lines += 1
            yield line

    def _bound(self, n: int) -> None:
        if n > MAX_LINE_BYTES:
            raise LogFileError(f"{self.name}:{self.lines + 1}: a line longer than "
                               f"{MAX_LINE_BYTES >> 20} MiB: not a text log (a binary or "
                               "damaged file?)")


def open_text(path: Path) -> LogText:
    """The lines of a (possibly gzip) log file (:class:`LogText`); LogFileError when it is
    not a regular file (a FIFO, a device such as ``/dev/zero``, a socket, a folder: refused
    before it is opened, ``emulator.files.input_file``), cannot be opened, or as
    :class:`LogText` says. The file is closed when its lines have been read."""
    try:
        input_file(path)
        stream = path.open("rb")
        size = os.fstat(stream.fileno()).st_size
    except FileRefused as exc:
        raise LogFileError(str(exc)) from None
    except OSError as exc:
        raise LogFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return LogText(str(path), stream, size)


def decode_text(data: bytes, name: str) -> LogText:
    """The lines of a log file's bytes (gzip by its magic bytes, not its name): what a Spark
    task holding a whole file has too (:class:`LogText`, naming ``name``)."""
    return LogText(name, io.BytesIO(data), len(data))


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
    """The records of one file, in file order (see ``records_of``); ``progress(fraction of
    the file's bytes read)``. LogFileError (from ``open_text`` at once, or from
    :class:`LogText` as the lines are read) on a file that is not a text log."""
    return records_of(str(path), open_text(path), zone, stats, progress)


def records_of(name: str, lines: Iterable[str], zone: dt.tzinfo, stats: FileStats,
               progress: Callable[[float], None] | None = None) -> Iterator[Record]:
    """The records of one file's ``lines``, in file order; ``progress(fraction read)`` now
    and then (every ``PROGRESS_LINES`` lines) and at the end (the fraction of a
    :class:`LogText`'s bytes, or of a list's lines). A record whose time is out of range is
    :class:`LogFileError` naming its line (``FileStats.reject``), never a traceback;
    a :class:`LogText`'s broken gzip stream lands in ``stats.broken``."""
    current: Record | None = None
    text = lines if isinstance(lines, LogText) else None
    total = len(lines) if isinstance(lines, list) else 0
    for n, raw in enumerate(lines, 1):
        if progress is not None and n % PROGRESS_LINES == 0:
            progress(text.fraction() if text is not None else n / max(total, n))
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
        except TimeOutOfRange as exc:
            stats.reject(name, n, str(exc))
            current = None
            continue
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
    if text is not None:
        stats.broken = text.broken
    if progress is not None:
        progress(1.0)
