"""The native scan: a local trace file read once, in a Spark Python worker, with pyarrow.

The fast path of ``load`` for *local* files (URIs keep the JVM path). One task per group of
files runs ``scan_files`` (``DataFrame.mapInArrow``); for each file it

* reads the bytes (gzip or plain), a block at a time, and makes the block's whole lines an
  Arrow array over those bytes (no copy),
* matches every line's fixed prefix ``{"seq":N,"ts_us":M,"event":"E"`` with one RE2 call
  (``pc.extract_regex``), checks that each ``seq`` is its line's place (no line deleted,
  duplicated or moved) and picks the hot and side lines by ``event`` (``pc.is_in``),
* parses the ``HOT_EVENTS`` lines into the writer's own types (``hot_parse``: DuckDB's
  JSON reader cuts them, Arrow's strict casts type them, pyarrow's JSON reader where that
  cannot vouch for a line): a line of other types fails the file, which then goes to the
  careful path,
* keeps the ``SIDE_EVENTS`` lines as text, with their line number and their ``topic`` and
  ``partition`` (``side_key``, so that Spark's partitioning puts each where the load
  parses it),
* hashes the bytes before the last line as they stream (SHA-256) and, at the end, requires
  the last line to be a sealed ``run_end`` whose ``sha256`` is that digest and whose
  ``events`` is the number of lines before it (the writer's whole-file seal,
  ``traces.integrity``). Then every byte is the writer's, and so is every line's crc: no
  line's crc is computed here, and nothing is done line by line in Python.

It yields Arrow batches of ``SCAN_SCHEMA`` as it reads, a block of lines at a time (a
file's rows never all sit in memory), each row carrying the file's ``tid`` (the integer
``load`` gave the trace, not its path): the hot rows (``_kind`` 0), the side lines (1), and
last one summary row per file (2, ``_raw`` = JSON: lines, bad, end_us, first, has_end, ok,
error; ``bad`` is 0 here: the careful path counts the lines whose crc fails).
Rows are sent while the file still looks *clean* (line 1 a schema-1 ``run_start``, every
prefix and seq as the writer's, every hot line of the writer's types); the summary says
whether it was (``ok``: also the digest and ``run_end``). ``load`` sends a file whose
summary is not clean to the careful path, which finds and places each problem (each line's
crc there), and drops the rows the scan sent for it before it knew. A cut or damaged gzip
stream, or an unreadable file, is not clean either.

Why: one pass over the bytes instead of three (the JVM path reads each file for the crc
audit, again for the side lines, again for the JSON source), and the hot lines are parsed
several times faster than by Jackson. A per-line loop in Python (crc, prefix, event)
had cost more than the parse: 4.1 s of CPU per 560k-line file against 2.5 s then, of which
pyarrow's JSON reader was about 1.0-1.2 s (DuckDB and Arrow's casts now 0.55-0.75 s,
``hot_parse``) and gunzip 0.4 s — 0.15 s with zlib-ng's inflate (``INFLATE``;
``docs/performance.md`` has the figures).
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Final

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from emulator.files import FileRefused, input_file
from spark_analysis.hot_parse import parse_hot
from traces.blocks import inflated_blocks
from traces.integrity import unseal
from traces.reader import MAX_LINE_BYTES as READER_MAX_LINE_BYTES
from traces.schema import SCHEMA_VERSION


def _inflater() -> ModuleType:
    """zlib-ng's inflate where it is installed (a dependency of isrlab; a cluster's Python
    workers may lack it), else the standard library's: the same API and the same bytes out,
    2.6 times as fast here (one 12 MB trace: 0.149 against 0.385 s of CPU, about a fifth of
    the scan's Python time per file)."""
    try:
        from zlib_ng import zlib_ng
    except ImportError:
        return zlib
    return zlib_ng


#: The module whose ``decompressobj`` and ``error`` ``iter_text`` uses.
INFLATE: ModuleType = _inflater()

#: The bulk event types: the only ones whose fields ``load.Loaded.events`` keeps.
HOT_EVENTS: Final = ("hw_update", "consume", "produce_ack", "produce_send")
#: The few lines the small analyses read, parsed in full into ``load.Loaded.side``.
SIDE_EVENTS: Final = ("run_start", "run_end", "fault", "leader_elected", "partition_offline",
                      "isr_change", "convergence", "assignment", "node_crash",
                      "final_log", "offset_commit", "offset_commit_ack", "offset_fetch",
                      "replicas_change", "replica_deleted", "log_truncate", "become_leader")
#: ``load.EVENT_COLUMNS`` with their Arrow types, then the scan's own columns.
SCAN_SCHEMA: Final = pa.schema([
    ("tid", pa.int32()), ("topic", pa.string()), ("partition", pa.int32()),
    ("seq", pa.int64()), ("ts_us", pa.int64()), ("event", pa.string()),
    ("replica", pa.int32()), ("old_n", pa.int64()), ("new_n", pa.int64()),
    ("role", pa.string()), ("reason", pa.string()), ("value", pa.string()),
    ("producer", pa.int64()), ("acks", pa.string()), ("offset", pa.int64()),
    ("hw", pa.int64()), ("group", pa.string()), ("consumer", pa.string()),
    ("_kind", pa.int8()), ("_line", pa.int64()), ("_raw", pa.string()),
])
#: ``SCAN_SCHEMA`` as Spark DDL (for ``mapInArrow``).
SCAN_DDL: Final = (
    "tid int, topic string, partition int, seq bigint, ts_us bigint, event string, "
    "replica int, old_n bigint, new_n bigint, role string, reason string, value string, "
    "producer bigint, acks string, offset bigint, hw bigint, group string, consumer string, "
    "_kind tinyint, _line bigint, _raw string")
HOT, SIDE, SUMMARY = 0, 1, 2


def is_clean(bad: int, has_end: bool, first: str | bytes | None) -> bool:
    """A file whose every line is the writer's own: no crc failure, a ``run_end``, and line 1
    a schema-``SCHEMA_VERSION`` ``run_start`` (the rule of both fast paths)."""
    if bad or not has_end or first is None:
        return False
    try:
        line1 = orjson.loads(first)
    except orjson.JSONDecodeError:
        return False
    return (isinstance(line1, dict) and line1.get("event") == "run_start"
            and str(line1.get("schema")) == str(SCHEMA_VERSION))


#: Bytes read from a file at a time (a gzip block of this size is ≈ 10 × as much text).
_BLOCK: Final = 1 << 22
#: At most this much text is inflated from a gzip block at a time.
_INFLATED: Final = 1 << 25
#: A line longer than this refuses its file, named by its line (``traces.reader``'s bound,
#: the one ``isrlab check`` applies): read in pieces, never joined whole.
MAX_LINE_BYTES: Final = READER_MAX_LINE_BYTES
#: UTF-8's byte-order mark: an editor's, never the writer's
BOM: Final = b"\xef\xbb\xbf"


class LineTooLong(Exception):
    """A line longer than ``MAX_LINE_BYTES`` follows the regions yielded so far."""


def refusal_of_line1(first: bytes) -> str | None:
    """Why line 1 refuses its file before anything is parsed (a BOM), or None."""
    if first.startswith(BOM):
        return ("line 1 starts with a UTF-8 byte-order mark (BOM): the file was re-saved by "
                "an editor; isrlab traces have none (the writer's bytes are sealed)")
    return None


def crlf_refusal(line: int) -> str:
    """Why a line ending in CR LF refuses its file (``traces.reader``'s words)."""
    return (f"line {line} ends with CR LF: the file's line endings were converted; isrlab "
            "traces end lines with LF only (the writer's bytes are sealed)")


def too_long_refusal(line: int) -> str:
    return f"line {line} is longer than {MAX_LINE_BYTES >> 20} MiB"


def iter_text(path: str, broke: list[str]) -> Iterator[bytes]:
    """The file's bytes, decompressed if gzip (by its magic number, every member), a block
    at a time. A damaged or cut gzip stream ends the bytes where it breaks and appends what
    broke to ``broke``. OSError if the file cannot be read."""
    with open(path, "rb") as f:
        yield from inflated_blocks(lambda: f.read(_BLOCK), _INFLATED, broke.append, INFLATE)


def _regions(path: str, broke: list[str]) -> Iterator[memoryview]:
    """The file's bytes (``iter_text``) as regions of whole lines, each ending in its
    newline, without copying a block: the whole lines of a block are a view of it, and a
    line that a block's end cuts becomes, joined with its rest, a region of its own. (Joining
    the cut line to the next block, then slicing the whole lines off, copied every byte of
    the file twice: 0.15 s of CPU per 12 MB trace, 2026-11-27.) A last line without its
    newline (the writer always ends one) gets one. :class:`LineTooLong` when the next line
    is longer than ``MAX_LINE_BYTES`` (found before it is joined: pieces of it are kept
    until then, never more than the bound)."""
    carry = b""     # the start of a line that a block's end cut
    pieces: list[bytes] = []   # a line longer than a block, in its pieces
    held = 0
    for block in iter_text(path, broke):
        start = 0
        if carry or pieces:
            head = block.find(b"\n") + 1
            if not head:    # a line longer than the block
                pieces.append(block)
                held += len(block)
                if len(carry) + held > MAX_LINE_BYTES:
                    raise LineTooLong
                continue
            if len(carry) + held + head - 1 > MAX_LINE_BYTES:
                raise LineTooLong
            yield memoryview(b"".join([carry, *pieces, block[:head]]))
            pieces, held = [], 0
            start = head
        cut = block.rfind(b"\n") + 1
        if cut > start:
            yield memoryview(block)[start:cut]
        carry = block[max(cut, start):]
        if len(carry) > MAX_LINE_BYTES:
            raise LineTooLong
    if carry or pieces:
        if len(carry) + held > MAX_LINE_BYTES:
            raise LineTooLong
        yield memoryview(b"".join([carry, *pieces, b"\n"]))


def iter_lines(path: str, broke: list[str]) -> Iterator[list[bytes]]:
    """The file's lines (without their newline), a region at a time (``_regions``)."""
    for region in _regions(path, broke):
        yield bytes(region).split(b"\n")[:-1]


def read_lines(path: str) -> tuple[list[bytes], str | None]:
    """Every line of the file and what broke the read, if anything."""
    broke: list[str] = []
    lines = [ln for block in iter_lines(path, broke) for ln in block]
    return lines, (broke[0] if broke else None)


def _summary(tid: int, **facts: Any) -> pa.RecordBatch:
    return _batch(tid, SUMMARY, None, [orjson.dumps(facts).decode()], 1)


def _batch(tid: int, kind: int, line_no: list[int] | None, raw: list[str] | None,
           n: int, hot: pa.RecordBatch | None = None,
           keys: list[tuple[str | None, int | None]] | None = None) -> pa.RecordBatch:
    cols: dict[str, Any] = {"tid": pa.repeat(pa.scalar(tid, pa.int32()), n),
                            "_kind": pa.repeat(pa.scalar(kind, pa.int8()), n)}
    if line_no is not None:
        cols["_line"] = pa.array(line_no, pa.int64())
    if raw is not None:
        cols["_raw"] = pa.array(raw, pa.string())
    if keys is not None:
        cols["topic"] = pa.array([k[0] for k in keys], pa.string())
        cols["partition"] = pa.array([k[1] for k in keys], pa.int32())
    if hot is not None:
        is_hw = pc.equal(hot["event"], "hw_update")
        for name in ("topic", "partition", "seq", "ts_us", "event", "replica", "role",
                     "reason", "value", "producer", "acks", "offset", "hw", "group",
                     "consumer"):
            cols[name] = hot[name]
        cols["old_n"] = pc.if_else(is_hw, hot["old"], pa.scalar(None, pa.int64()))
        cols["new_n"] = pc.if_else(is_hw, hot["new"], pa.scalar(None, pa.int64()))
    return pa.RecordBatch.from_arrays(
        [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in SCAN_SCHEMA],
        schema=SCAN_SCHEMA)


#: A side line's top-level ``topic`` / ``partition``: reached over members of scalar values
#: only, so a match is a member of the line's own object, never of a nested one.
_SCALARS: Final = rb'^\{(?:"[^"\\]*":(?:"[^"\\]*"|-?[0-9]+|true|false|null),)*?'
_TOPIC: Final = re.compile(_SCALARS + rb'"topic":"([^"\\]*)"[,}]')
_PARTITION: Final = re.compile(_SCALARS + rb'"partition":(-?[0-9]{1,10})[,}]')


def side_key(line: bytes) -> tuple[str | None, int | None]:
    """A side line's top-level ``topic`` and ``partition`` where the writer puts them, before
    any nested value (None where they are not found so, or out of range): the scan sends the
    line with them, so Spark's hash partitioning by ``PARTITION_KEY`` puts it where its
    parsed fields belong and the load parses it there without a shuffle of its own
    (``load.side_lines``, which checks them against its own parse and partitions the parsed
    lines itself where one differs). A match on the line's first members, not a parse: a
    trace's final logs are 7.4 MB of JSON, 0.23 s for orjson."""
    topic, partition = _TOPIC.match(line), _PARTITION.match(line)
    number = int(partition.group(1)) if partition else None
    try:
        name = topic.group(1).decode("utf-8") if topic else None
    except UnicodeDecodeError:
        name = None
    return name, number if number is not None and -(1 << 31) <= number < 1 << 31 else None


#: The writer's fixed prefix of every line (``traces.writer.TraceWriter.emit``).
_PREFIX: Final = r'^\{"seq":(?P<seq>[0-9]+),"ts_us":(?P<ts>-?[0-9]+),"event":"(?P<event>[^"\\]*)"'
_HOT_SET: Final = pa.array([e.encode() for e in HOT_EVENTS], pa.large_binary())
_SIDE_SET: Final = pa.array([e.encode() for e in SIDE_EVENTS], pa.large_binary())


class _Unclean(Exception):
    """The file is not the writer's own as written: the careful path reads it."""


class _Block:
    """One block of whole lines, each ending in its newline (line ``start`` first, 0-based;
    ``nl``: where its newlines are): the lines as an Arrow array over the block's bytes (no
    copy), their prefix matched by
    RE2 in one call. ``_Unclean`` when a line lacks the writer's prefix or its ``seq`` is not
    its place (a line deleted, duplicated or moved)."""

    __slots__ = ("lines", "event", "top")

    def __init__(self, region: bytes | memoryview, start: int, nl: np.ndarray) -> None:
        n = len(nl)
        offsets = np.empty(n + 1, np.int64)   # 64-bit: a gzip block may inflate past 2 GiB
        offsets[0] = 0
        offsets[1:] = nl + 1
        self.lines: pa.LargeBinaryArray = pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(region)])
        prefix = pc.extract_regex(self.lines, _PREFIX)
        if prefix.null_count:
            raise _Unclean("a line without the writer's prefix {\"seq\":..,\"ts_us\":..,"
                           "\"event\":..")
        seq = pc.cast(prefix.field("seq"), pa.int64()).to_numpy()
        if not np.array_equal(seq, np.arange(start, start + n, dtype=np.int64)):
            raise _Unclean("a line whose seq is not its place")
        self.event = prefix.field("event")
        self.top = int(pc.max(pc.cast(prefix.field("ts"), pa.int64())).as_py())

    def hot(self) -> pa.Table | None:
        hot = pc.is_in(self.event, value_set=_HOT_SET)
        return parse_hot(self.lines, hot) if hot.true_count else None

    def side(self, with_first: bool) -> tuple[list[int], list[bytes]]:
        """The side lines (numbers within the block, 0-based) and their bytes (newline
        dropped); ``with_first``: the block's first line too (a file's line 1)."""
        mask = pc.is_in(self.event, value_set=_SIDE_SET)
        if with_first:
            mask = pc.or_(mask, pa.array(np.arange(len(self.lines)) == 0))
        at = pc.indices_nonzero(mask)
        return at.to_pylist(), [ln[:-1] for ln in self.lines.take(at).to_pylist()]


def _check_end(last: bytes, prior: str, lines_n: int) -> None:
    """The file's last line (no newline) is a sealed ``run_end`` whose ``sha256`` is
    ``prior``, the digest of every byte before it, and whose ``events`` is the number of
    lines before it."""
    body = unseal(last)
    if body is None:
        raise _Unclean("the last line's crc does not match")
    try:
        end = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise _Unclean("the last line is not JSON") from exc
    if not isinstance(end, dict) or end.get("event") != "run_end":
        raise _Unclean("no run_end")
    if end.get("sha256") != prior or end.get("events") != lines_n - 1:
        raise _Unclean("run_end's sha256 or events do not match the lines before it")


def scan_file(path: str, tid: int, *, careful: bool = False) -> Iterator[pa.RecordBatch]:
    """The batches of one file, a block of lines at a time, then its summary (see the module
    notes). Rows go out as they are read, so a file's rows never all sit in memory; a file
    found not clean later (a digest that does not match, no ``run_end``) has rows out
    already, and ``load`` drops every row of a file whose summary is not clean.

    Nothing is done line by line in Python: each block's lines are an Arrow array over its
    bytes, matched, checked and picked by Arrow's kernels (``_Block``). No line's crc is
    computed: the bytes before the last line are hashed as they stream (SHA-256, in C) and
    must be the digest the writer put in ``run_end`` — then they are the writer's bytes, and
    so are their crcs. Any edit, cut or damage fails the digest (or the prefix, seq or
    ``run_end`` checks on the way, which stop the parse early), and the careful path then
    finds and places each line's problem as ``isrlab check`` does.

    What refuses the file whatever the path (``refused`` and ``refused_line`` in the
    summary; ``load`` reports it, trace skipped, and does not send the file to the careful
    path), as ``isrlab check`` refuses it: a path that is not a regular file (a FIFO, a
    device: never opened), a line longer than ``MAX_LINE_BYTES``, a BOM on line 1, a line
    ending in CR LF. ``careful``: only these are looked for (no row is sent; the file goes
    to the careful path, ``isrlab analyze --careful``)."""
    broke: list[str] = []
    digest = hashlib.sha256()
    lines_n = 0
    end_us = -1
    first: bytes | None = None
    pending = b""   # the last line seen (with its newline): not hashed yet, it may be run_end
    error: str | None = "careful" if careful else None
    refused: str | None = None
    refused_line = 1

    try:
        input_file(path)
    except FileRefused as exc:
        yield _summary(tid, lines=0, bad=0, end_us=None, first=None, has_end=False, ok=False,
                       error=str(exc), refused=_without_path(str(exc), path), refused_line=1)
        return
    try:
        for region in _regions(path, broke):
            array = np.frombuffer(region, np.uint8)
            nl = np.flatnonzero(array == 10)
            if first is None:
                first = bytes(region[:nl[0]])
                refused = refusal_of_line1(first)
                if refused is not None:
                    break
            cr = np.flatnonzero(array[nl[nl > 0] - 1] == 13)
            if len(cr):
                refused_line = lines_n + int(cr[0]) + 1 + int(nl[0] == 0)
                refused = crlf_refusal(refused_line)
                break
            last_start = int(nl[-2]) + 1 if len(nl) > 1 else 0
            if error is None:
                try:
                    block = _Block(region, lines_n, nl)
                    if lines_n == 0 and not is_clean(0, True, first):
                        raise _Unclean("line 1 is not a run_start of this schema")
                    side_at, side = block.side(lines_n == 0)
                    hot = block.hot()
                    raw = [s.decode("utf-8") for s in side]
                except (_Unclean, pa.ArrowInvalid, UnicodeDecodeError) as exc:
                    error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                else:
                    digest.update(pending)
                    digest.update(region[:last_start])
                    end_us = max(end_us, block.top)
                    if raw:
                        yield _batch(tid, SIDE, [lines_n + 1 + i for i in side_at], raw,
                                     len(raw), keys=[side_key(s) for s in side])
                    # one batch per block the reader parsed (4 MiB): a string column of a
                    # batch stays far below Arrow's 2 GiB, however large the trace
                    for chunk in hot.to_batches() if hot is not None else ():
                        yield _batch(tid, HOT, None, None, chunk.num_rows, chunk)
            pending = bytes(region[last_start:])
            lines_n += len(nl)
    except LineTooLong:
        refused_line = lines_n + 1
        refused = too_long_refusal(refused_line)
    except OSError as exc:  # unreadable: no line (load reports it as such)
        yield _summary(tid, lines=0, bad=0, end_us=None, first=None, has_end=False,
                       ok=False, error=str(exc))
        return
    if refused is not None:
        yield _summary(tid, lines=max(lines_n, refused_line), bad=0, end_us=None,
                       first=None, has_end=False, ok=False, error=refused, refused=refused,
                       refused_line=refused_line)
        return
    last = pending[:-1]
    has_end = unseal(last) is not None and b'"event":"run_end"' in last
    if error is None:
        try:
            if broke:
                raise _Unclean(broke[0])
            _check_end(last, digest.hexdigest(), lines_n)
        except _Unclean as exc:
            error = str(exc)
    yield _summary(tid, lines=lines_n, bad=0, end_us=end_us if end_us >= 0 else None,
                   first=first.decode("utf-8", "replace") if first is not None else None,
                   has_end=has_end, ok=error is None, error=error)


def _without_path(text: str, path: str) -> str:
    return text[len(path) + 2:] if text.startswith(f"{path}: ") else text


def scan_files(batches: Iterator[pa.RecordBatch], *, careful: bool = False
               ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: rows (path, tid: the trace's id in ``load``) in,
    ``SCAN_SCHEMA`` batches out (``careful``: summaries only, see ``scan_file``)."""
    for batch in batches:
        for path, tid in zip(batch.column("path").to_pylist(),
                             batch.column("tid").to_pylist(), strict=True):
            yield from scan_file(path, tid, careful=careful)


def scan_files_carefully(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``scan_files`` with ``careful`` (a module-level function: Spark pickles it)."""
    return scan_files(batches, careful=True)
