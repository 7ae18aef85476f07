"""Reading and verifying isrlab traces.

Everything that consumes a trace (checker, replay, shrink, reports, the Spark analyses)
reads it through here, so that a damaged or foreign file is refused in one way, naming the
first bad line, rather than half-analysed.

The contract (``traces.schema``, ``traces.integrity``)
------------------------------------------------------
JSON lines, UTF-8, optionally gzip. Line ``k`` (0-based) is an object whose first member is
``"seq": k`` and whose last member is ``crc``, the CRC-32 of the line rendered without it.
Line 0 is ``run_start`` carrying ``schema`` and ``isrlab_version``; the last line is
``run_end`` carrying ``events`` (the number of lines before it) and ``sha256`` (the hex
SHA-256 of every byte before it, newlines included).

What verification finds, and where
----------------------------------
Checks run line by line in file order and the first failure is reported as a
:class:`TraceError` naming the file, the 1-based line and the member at fault:

* a line that is not JSON, or not an object, or has no newline (cut off while written);
* ``crc`` mismatch: the line was edited or rotted, found on the line itself;
* ``seq`` differs from the line index: a line was removed ("a line is missing before this
  one"), two lines were swapped (one line of lookahead tells the two apart), or a line was
  repeated;
* ``run_end`` whose ``events`` or ``sha256`` disagree with what precedes it, lines after
  ``run_end``, or no ``run_end`` at all (the run was killed or the file cut);
* a first line that is not a ``run_start`` object ("not an isrlab trace": binary data, some
  other JSON), or a ``schema`` this code does not read;
* a gzip stream that ends early or fails its own CRC (named with the last good line);
* a line 1 that starts with a UTF-8 byte-order mark, or a line that ends with CR LF: an
  editor or a transfer converted the file, so it is not the writer's sealed bytes any more
  (refused naming the line, as ``isrlab analyze`` refuses the trace: one rule for both);
* a line longer than ``MAX_LINE_BYTES`` (64 MiB; no event comes close): read in pieces,
  never whole, and refused naming its line.

Before anything is opened, the path must be a regular file: a FIFO (which would block the
reader), a device (``/dev/zero`` never ends), a socket or a folder is refused as a
``TraceError`` of the whole file (``emulator.files.input_file``'s rule), so every door
that reads a trace through here (check, show, explain, replay, report, regress) refuses
it at once with exit 2.

Gzip is recognised by its magic bytes, not by the file name.

Three ways to read
------------------
* ``iter_events(path)`` / ``read_trace(path)``: verify everything, raise on the first
  problem. ``iter_events`` streams (constant memory, for multi-GB traces) and so raises only
  when it reaches the problem: a consumer that must not act on a bad trace either drains it
  first or uses ``read_trace``. The whole-file checks (``run_end``, ``sha256``) come last.
  ``iter_events(path, unfinished=True)`` verifies as strictly, but a trace that ends early
  (no ``run_end``, a cut last line, a gzip stream cut off; not a damaged one) is recorded
  in ``problems`` with ``footer`` left None: how ``isrlab check`` and ``explain`` tell an
  unfinished run (INCOMPLETE, exit 3) from bad input (exit 2).
* ``verify=False``: for tools that must read an aborted or partial trace. Lines are not
  checked for ``crc`` or ``seq`` and the digest is not compared, but an unparseable line
  still raises and the first line must still be a ``run_start`` of a readable schema. A
  missing ``run_end``, a cut-off last line (dropped) and a truncated gzip stream are
  tolerated and recorded in ``problems``.
* ``iter_events_lenient(path)``: for analyses that prefer partial answers to none. It yields
  every line that parses and passes its crc, and records each problem (with its line) in
  ``problems`` instead of raising; after a missing or swapped line it resynchronises so the
  lines after it are not all reported too (the ``run_end`` digest, which covers the damaged
  line, is still reported). Only a file that is not a trace at all (or an unreadable schema)
  still raises.

Yielded events are the lines' objects without their ``crc`` member (it belongs to the file,
not to the event). ``iter_events`` yields every line, ``run_start`` and ``run_end``
included; :class:`Trace` splits them into ``header``, ``events`` and ``footer``.

Digests
-------
``digest`` is the SHA-256 of the trace's decompressed bytes, ``run_end`` included: the same
for ``trace.jsonl`` and ``trace.jsonl.gz`` at any compression level, equal to
``sha256sum trace.jsonl`` or ``zcat trace.jsonl.gz | sha256sum``, so it names a run's
content (replay compares it). ``raw_digest`` is the SHA-256 of the file as stored, equal to
``digest`` for an uncompressed trace. Both cover the bytes read, which is the whole file
once iteration has finished.
"""

from __future__ import annotations

import enum
import gzip
import hashlib
import io
import os
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Final

import orjson

from emulator.files import FileRefused, input_file
from traces.integrity import CRC_MARK, unseal
from traces.schema import RUN_STATUSES, SCHEMA_VERSION

if TYPE_CHECKING:
    from hashlib import _Hash as Sha256

__all__ = [
    "MAX_LINE_BYTES",
    "Event",
    "Trace",
    "TraceError",
    "TraceEvents",
    "iter_events",
    "iter_events_lenient",
    "read_trace",
]

#: One trace line as read: the line's object without its ``crc`` member.
Event = dict[str, Any]
StrPath = str | os.PathLike[str]

GZIP_MAGIC: Final = b"\x1f\x8b"


#: A line longer than this is refused (no event comes close; a binary file might).
MAX_LINE_BYTES: Final = 64 * 1024 * 1024
_CHUNK: Final = 1024 * 1024
#: UTF-8's byte-order mark: an editor's, never the writer's
BOM: Final = b"\xef\xbb\xbf"


def regular_file(path: StrPath) -> str:
    """``path`` when it is a regular file to read; :class:`TraceError` (the whole file, one
    line) for a FIFO, a device, a socket, a folder or a missing file — found before it is
    opened, so a FIFO never blocks the reader (``emulator.files.input_file``)."""
    try:
        input_file(path)
    except FileRefused as e:
        raise TraceError(os.fspath(path), None,
                         f"cannot open the trace: {_refusal(path, e)}") from None
    return os.fspath(path)


def _refusal(path: StrPath, e: FileRefused) -> str:
    """``FileRefused``'s text without its leading path (``TraceError`` puts it first)."""
    text, lead = str(e), f"{os.fspath(path)}: "
    return text[len(lead):] if text.startswith(lead) else text


def is_gzip(path: StrPath) -> bool:
    """Whether the file starts with gzip's magic bytes (whatever its name says)."""
    with open(regular_file(path), "rb") as probe:
        return probe.read(2) == GZIP_MAGIC


def open_bytes(path: StrPath) -> BinaryIO:
    """A trace file's bytes, decompressed when it is gzip by its magic bytes — a gzip
    named ``.jsonl`` and a plain file named ``.jsonl.gz`` both read right. Unbounded
    lines: read through :func:`iter_events` first (it bounds them), or use this only on a
    file that verified. :class:`TraceError` when ``path`` is not a regular file."""
    if is_gzip(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb", buffering=1 << 20)  # noqa: SIM115


class TraceError(Exception):
    """A trace that cannot be read or does not verify, located to the line and member.

    ``str()`` is one line, ``"<path>:<line>: <message>"`` (no line part when the problem is
    the file as a whole), ready for the CLI's exit-2 message.
    """

    def __init__(self, path: str, line: int | None, message: str, field: str | None = None):
        super().__init__(path, line, message, field)  # all args: pickles across processes
        self.path = path
        self.line = line  #: 1-based line number, or None for the whole file
        self.message = message
        self.field = field  #: the member at fault (``crc``, ``seq``, ``schema``...), or None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class Trace:
    """A whole trace in memory: ``header`` (run_start), ``events`` between, ``footer``."""

    path: str
    header: Event
    events: list[Event]
    footer: Event | None  #: run_end, or None for an aborted trace read with verify=False
    digest: str  #: SHA-256 of the decompressed trace (see module notes)
    raw_digest: str  #: SHA-256 of the file as stored
    problems: list[TraceError] = field(default_factory=list)  #: tolerated (verify=False)


class _Mode(enum.Enum):
    STRICT = "strict"
    #: strict, but a trace that ends early (no ``run_end``, a cut last line, a gzip stream
    #: cut off) is recorded in ``problems``, not raised: ``isrlab check``'s INCOMPLETE
    UNFINISHED = "unfinished"
    LOOSE = "loose"
    LENIENT = "lenient"


# --- raw lines ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Line:
    index: int  #: 0-based
    raw: bytes  #: without the newline
    complete: bool  #: ended with a newline


class _StreamBroken(Exception):
    """The (gzip) byte stream failed while reading; ``args[0]`` says how, ``args[1]``
    whether it was cut off (the file ends early) rather than damaged."""


class _LineTooLong(Exception):
    pass


class _HashingReader:
    """A read-only file wrapper that hashes every byte read (the stored, compressed bytes)."""

    def __init__(self, raw: BinaryIO, sha: Sha256) -> None:
        self._raw = raw
        self._sha = sha

    def read(self, n: int = -1, /) -> bytes:
        data = self._raw.read(n)
        self._sha.update(data)
        return data

    def seek(self, n: int, /) -> object:
        raise io.UnsupportedOperation("trace streams are read once, front to back")


class _Source:
    """The lines of one trace file, with one line of lookahead."""

    def __init__(self, path: str) -> None:
        self.raw_sha = hashlib.sha256()  # of the stored bytes; only kept for gzip files
        self._file: BinaryIO = open(path, "rb", buffering=_CHUNK)  # closed by close()
        self.compressed = self._file.read(2) == GZIP_MAGIC
        self._file.seek(0)
        self._stream: BinaryIO | gzip.GzipFile = self._file
        if self.compressed:
            self._stream = gzip.GzipFile(fileobj=_HashingReader(self._file, self.raw_sha))
        self._next_index = 0
        self._ahead: list[_Line | None] = []
        self._pending_error: Exception | None = None

    def __enter__(self) -> _Source:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            self._file.close()

    def _read(self) -> _Line | None:
        try:
            data = self._stream.readline(MAX_LINE_BYTES + 1)
        except EOFError as e:
            raise _StreamBroken(f"the gzip stream is cut off ({e})", True) from e
        except (OSError, zlib.error) as e:
            raise _StreamBroken(f"the gzip stream is damaged ({e})", False) from e
        if not data:
            return None
        complete = data.endswith(b"\n")
        if complete:
            data = data[:-1]
        elif len(data) > MAX_LINE_BYTES:
            raise _LineTooLong
        line = _Line(self._next_index, data, complete)
        self._next_index += 1
        return line

    def next(self) -> _Line | None:
        if self._ahead:
            return self._ahead.pop()
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error
        return self._read()

    def peek(self) -> _Line | None:
        """The next line without consuming it; None at the end or if reading it fails."""
        if not self._ahead and self._pending_error is None:
            try:
                self._ahead.append(self._read())
            except (_StreamBroken, _LineTooLong) as e:
                self._pending_error = e
        return self._ahead[0] if self._ahead else None


# --- the scan -------------------------------------------------------------------------------


def _seq_of(line: _Line | None) -> int | None:
    if line is None:
        return None
    try:
        obj = orjson.loads(line.raw)
    except orjson.JSONDecodeError:
        return None
    seq = obj.get("seq") if isinstance(obj, dict) else None
    return seq if type(seq) is int else None


def _looks_binary(raw: bytes) -> bool:
    if b"\x00" in raw:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


class TraceEvents(Iterator[Event]):
    """The events of one trace, streamed; the attributes fill in as iteration proceeds.

    ``header`` is set once the first line is read, ``footer`` when ``run_end`` is, and
    ``digest`` / ``raw_digest`` when the iteration has finished. ``problems`` holds what was
    tolerated (``verify=False``) or collected (lenient) instead of raised.
    """

    def __init__(self, path: StrPath, mode: _Mode) -> None:
        self.path = os.fspath(path)
        self.header: Event | None = None
        self.footer: Event | None = None
        self.problems: list[TraceError] = []
        self.lines = 0  #: lines read so far
        self.digest: str | None = None
        self.raw_digest: str | None = None
        self._mode = mode
        self._last_event = ""
        self._expected_seq = 0
        self._excused_seq: int | None = None
        self._footer_line = 0
        self._stream_broke = False
        self._gen = self._scan()

    def __iter__(self) -> TraceEvents:
        return self

    def __next__(self) -> Event:
        return next(self._gen)

    def close(self) -> None:
        """Stop early and close the file (also done when the iterator is dropped)."""
        self._gen.close()

    def __enter__(self) -> TraceEvents:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- reporting --

    def _error(self, line: int | None, message: str, field: str | None = None) -> TraceError:
        return TraceError(self.path, line, message, field)

    def _problem(self, error: TraceError, *, tolerated_when_loose: bool = False,
                 unfinished: bool | None = None) -> None:
        """Raise, or record when lenient (or when loose and the problem is tolerated, or
        when the mode is ``UNFINISHED`` and the problem is the trace ending early:
        ``unfinished`` defaults to ``tolerated_when_loose``)."""
        if unfinished is None:
            unfinished = tolerated_when_loose
        if (self._mode is _Mode.LENIENT
                or (self._mode is _Mode.LOOSE and tolerated_when_loose)
                or (self._mode is _Mode.UNFINISHED and unfinished)):
            self.problems.append(error)
        else:
            raise error

    # -- the scan --

    def _scan(self) -> Generator[Event, None, None]:
        regular_file(self.path)
        try:
            source = _Source(self.path)
        except OSError as e:
            raise self._error(None, f"cannot open the trace: {e.strerror or e}") from e
        with source:
            content_sha = hashlib.sha256()
            while True:
                try:
                    line = source.next()
                except _StreamBroken as e:
                    self._stream_broken(str(e.args[0]), cut=bool(e.args[1]))
                    break
                except _LineTooLong:
                    n = self.lines + 1
                    lead = "not an isrlab trace: " if n == 1 else ""
                    raise self._error(
                        n, f"{lead}line {n} is longer than {MAX_LINE_BYTES >> 20} MiB"
                    ) from None
                if line is None:
                    break
                self.lines += 1
                event = self._check(line, source, content_sha)
                content_sha.update(line.raw)
                if line.complete:
                    content_sha.update(b"\n")
                if event is not None:
                    yield event
            self._check_end(source)
            self.digest = content_sha.hexdigest()
            self.raw_digest = self.digest if not source.compressed else source.raw_sha.hexdigest()

    def _stream_broken(self, how: str, *, cut: bool) -> None:
        self._stream_broke = True
        n = self.lines
        if n == 0:
            raise self._error(None, f"{how} before the first line")
        self._problem(
            self._error(n, f"{how} after line {n}; line {n} is the last good line", "gzip"),
            tolerated_when_loose=True, unfinished=cut,
        )

    def _check_end(self, source: _Source) -> None:
        if self.lines == 0:
            what = "empty file (after gzip decompression)" if source.compressed else "empty file"
            raise self._error(None, f"{what}: not an isrlab trace")
        if self.footer is None and not self._stream_broke:  # a broken stream said it
            n = self.lines
            self._problem(
                self._error(
                    n,
                    f"the trace ends without run_end: line {n} ({self._last_event or '?'}) is "
                    "the last; the run was cut off or the file truncated",
                    "run_end",
                ),
                tolerated_when_loose=True,
            )

    def _check(self, line: _Line, source: _Source, content_sha: Sha256) -> Event | None:
        """Verify one line; return its event, or None when it is skipped."""
        n = line.index + 1
        checking = self._mode is not _Mode.LOOSE
        if self.footer is not None and checking:
            self._problem(
                self._error(
                    n,
                    f"line after run_end (line {self._footer_line}): "
                    "data was appended to a finished trace",
                )
            )
            return None
        if line.index == 0 and line.raw.startswith(BOM):
            raise self._error(
                1, "line 1 starts with a UTF-8 byte-order mark (BOM): the file was re-saved "
                "by an editor; isrlab traces have none (the writer's bytes are sealed)")
        try:
            obj = orjson.loads(line.raw)
        except orjson.JSONDecodeError:
            obj = None
        if line.index == 0 and not isinstance(obj, dict):
            kind = (
                "binary data, not JSON"
                if _looks_binary(line.raw)
                else ("not a JSON object" if obj is not None else "not JSON")
            )
            raise self._error(1, f"not an isrlab trace: line 1 is {kind}")
        if checking and line.complete and line.raw.endswith(b"\r"):
            self._problem(self._error(
                n, f"line {n} ends with CR LF: the file's line endings were converted; "
                "isrlab traces end lines with LF only (the writer's bytes are sealed)"))
            self._advance_seq()
            return None
        if not line.complete:
            self._problem(
                self._error(
                    n,
                    f"line {n} is cut off (no newline at the end): "
                    "the trace was truncated while being written",
                ),
                tolerated_when_loose=True,
            )
            if checking or not isinstance(obj, dict):
                return None
        if not isinstance(obj, dict):
            what = "not a JSON object" if obj is not None else "not valid JSON"
            self._problem(self._error(n, f"{what}: the line is damaged"))
            self._advance_seq()
            return None
        if line.index == 0:
            self._check_header(obj, line)
        if checking and not self._check_crc(obj, line):
            self._advance_seq()
            return None
        if checking:
            self._check_seq(obj, line, source)
        obj.pop("crc", None)
        event = obj.get("event")
        self._last_event = event if isinstance(event, str) else "?"
        if event == "run_start" and line.index > 0 and checking:
            self._problem(
                self._error(n, "a second run_start: two traces were concatenated", "event")
            )
            return None
        if event == "run_end":
            self.footer = obj
            self._footer_line = n
            if checking:
                self._check_footer(obj, line, content_sha)
        return obj

    def _check_header(self, obj: Event, line: _Line) -> None:
        """Line 1 must be a run_start of a schema we read; fatal in every mode."""
        if obj.get("event") != "run_start":
            seq = obj.get("seq")
            if type(seq) is int and seq > 0 and unseal(line.raw) is not None:
                missing = "the first line is" if seq == 1 else f"the first {seq} lines are"
                raise self._error(
                    1, f"expected seq 0, found {seq}: {missing} missing (run_start)", "seq"
                )
            raise self._error(1, "not an isrlab trace: line 1 is not a run_start event", "event")
        schema = obj.get("schema")
        if type(schema) is not int or schema != SCHEMA_VERSION:
            shown = "missing" if schema is None else orjson.dumps(schema).decode()
            raise self._error(
                1, f"trace schema {shown}, this isrlab reads schema {SCHEMA_VERSION}", "schema"
            )
        if not isinstance(obj.get("isrlab_version"), str):
            raise self._error(1, "run_start has no isrlab_version", "isrlab_version")
        self.header = obj

    def _check_crc(self, obj: Event, line: _Line) -> bool:
        if unseal(line.raw) is not None:
            return True
        n = line.index + 1
        if CRC_MARK in line.raw:
            message = "crc mismatch: the line was altered"
        else:
            message = "no crc member: the line was not written by isrlab or was edited"
        self._problem(self._error(n, message, "crc"))
        return False

    def _advance_seq(self) -> None:
        """A skipped line (lenient) still took one seq."""
        self._expected_seq += 1

    def _check_seq(self, obj: Event, line: _Line, source: _Source) -> None:
        n = line.index + 1
        seq = obj.get("seq")
        expected = self._expected_seq
        if type(seq) is not int:
            self._problem(self._error(n, "no integer seq member", "seq"))
            self._expected_seq += 1
            return
        if seq == self._excused_seq:  # the second half of a swap already reported
            self._excused_seq = None
            return
        if seq != expected:
            self._problem(self._error(n, self._seq_message(expected, seq, line, source), "seq"))
            if seq == expected + 1 and _seq_of(source.peek()) == expected:
                self._excused_seq = expected
            self._expected_seq = seq + 1
            return
        if next(iter(obj)) != "seq":
            self._problem(self._error(n, "seq is not the first member", "seq"))
        self._expected_seq = seq + 1

    @staticmethod
    def _seq_message(expected: int, found: int, line: _Line, source: _Source) -> str:
        n = line.index + 1
        head = f"expected seq {expected}, found {found}"
        if found > expected:
            if _seq_of(source.peek()) == expected:
                if found == expected + 1:
                    return f"{head}: lines {n} and {n + 1} are swapped"
                return f"{head}: the next line has seq {expected}; lines are out of order"
            missing = found - expected
            if missing == 1:
                return f"{head}: a line is missing before this one"
            return f"{head}: {missing} lines are missing before this one"
        return f"{head}: this line is repeated or out of order"

    def _check_footer(self, obj: Event, line: _Line, content_sha: Sha256) -> None:
        n = line.index + 1
        events = obj.get("events")
        if events != line.index or type(events) is not int:
            self._problem(
                self._error(
                    n,
                    f"run_end says events={events!r} but {line.index} lines precede it",
                    "events",
                )
            )
        sha = obj.get("sha256")
        actual = content_sha.hexdigest()
        if sha != actual:
            self._problem(
                self._error(
                    n,
                    f"sha256 mismatch: run_end says {sha!r}, the lines before it hash to "
                    f"{actual!r}",
                    "sha256",
                )
            )
        status = obj.get("status")
        if status not in RUN_STATUSES:
            self._problem(self._error(n, f"unknown run_end status {status!r}", "status"))


# --- public API -----------------------------------------------------------------------------


def iter_events(path: StrPath, *, verify: bool = True, unfinished: bool = False
                ) -> TraceEvents:
    """Stream the events of a trace, verifying as it goes (see module notes).
    ``unfinished`` (with ``verify``): a trace that ends early — no ``run_end``, a cut last
    line, a gzip stream cut off — is not an error; it is recorded in ``problems`` and
    ``footer`` stays None (``isrlab check``'s INCOMPLETE). Everything else is verified as
    strictly as without it."""
    if not verify:
        return TraceEvents(path, _Mode.LOOSE)
    return TraceEvents(path, _Mode.UNFINISHED if unfinished else _Mode.STRICT)


def iter_events_lenient(path: StrPath) -> TraceEvents:
    """Stream the good lines of a trace; ``.problems`` collects what was wrong."""
    return TraceEvents(path, _Mode.LENIENT)


def read_trace(path: StrPath, *, verify: bool = True) -> Trace:
    """Read and verify a whole trace into memory."""
    stream = iter_events(path, verify=verify)
    events = list(stream)
    header = stream.header
    assert header is not None and stream.digest is not None and stream.raw_digest is not None
    body = [e for e in events if e is not header and e is not stream.footer]
    return Trace(
        path=stream.path,
        header=header,
        events=body,
        footer=stream.footer,
        digest=stream.digest,
        raw_digest=stream.raw_digest,
        problems=stream.problems,
    )
