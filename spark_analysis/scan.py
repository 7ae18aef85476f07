"""The native scan: a local trace file read once, in a Spark Python worker, with pyarrow.

The fast path of ``load`` for *local* files (URIs keep the JVM path). One task per group of
files runs ``scan_files`` (``DataFrame.mapInArrow``); for each file it

* reads the bytes (gzip or plain) and splits them into lines,
* checks every line's crc (CRC-32 of the line without its ``,"crc":N`` member, as
  ``traces.integrity`` and ``load._crc_ok`` do) and that its ``seq`` is its line's (no line
  deleted, duplicated or moved) and none follows ``run_end``, and takes each line's ``event`` and
  ``ts_us`` from the writer's fixed prefix ``{"seq":N,"ts_us":M,"event":"E"``,
* parses the ``HOT_EVENTS`` lines with pyarrow's JSON reader (C++, typed by the writer's
  own types: a line of other types fails the file, which then goes to the careful path),
* keeps the ``SIDE_EVENTS`` lines as text, with their line number.

It yields Arrow batches of ``SCAN_SCHEMA`` as it reads, a block of lines at a time (a
file's rows never all sit in memory): the hot rows (``_kind`` 0), the side lines (1), and
last one summary row per file (2, ``_raw`` = JSON: lines, bad, end_us, first, has_end, ok).
Rows are sent while the file still looks *clean* (``is_clean``: every crc matches, line 1
is a schema-1 ``run_start``, ``run_end`` present; and pyarrow read every hot line); ``load``
sends a file whose summary is not clean to the careful path, which finds and places each
problem, and drops the rows the scan sent for it before it knew. A cut or damaged gzip
stream, or an unreadable file, is not clean either.

Why: one pass over the bytes instead of three (the JVM path reads each file for the crc
audit, again for the side lines, again for the JSON source), and pyarrow's reader parses the
hot lines several times faster than Jackson; the per-line crc loop is the remaining Python
cost (``bench/spark.py`` has the figures).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from traces.integrity import CRC_MARK
from traces.schema import SCHEMA_VERSION

#: The bulk event types: the only ones whose fields ``load.Loaded.events`` keeps.
HOT_EVENTS: Final = ("hw_update", "consume", "produce_ack", "produce_send")
#: The few lines the small analyses read, parsed in full into ``load.Loaded.side``.
SIDE_EVENTS: Final = ("run_start", "run_end", "fault", "leader_elected", "partition_offline",
                      "isr_change", "convergence", "assignment", "node_crash",
                      "final_log", "offset_commit", "offset_commit_ack", "offset_fetch",
                      "replicas_change", "replica_deleted")
_HOT: Final = frozenset(e.encode() for e in HOT_EVENTS)
_SIDE: Final = frozenset(e.encode() for e in SIDE_EVENTS)
#: The writer's types of the hot fields (pyarrow rejects a line of another JSON type).
_HOT_ARROW: Final = pa.schema([
    ("seq", pa.int64()), ("ts_us", pa.int64()), ("event", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("replica", pa.int32()),
    ("old", pa.int64()), ("new", pa.int64()), ("role", pa.string()), ("reason", pa.string()),
    ("value", pa.string()), ("producer", pa.int64()), ("acks", pa.string()),
    ("offset", pa.int64()), ("hw", pa.int64()), ("group", pa.string()),
    ("consumer", pa.string()),
])
#: ``load.EVENT_COLUMNS`` with their Arrow types, then the scan's own columns.
SCAN_SCHEMA: Final = pa.schema([
    ("trace", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("seq", pa.int64()), ("ts_us", pa.int64()), ("event", pa.string()),
    ("replica", pa.int32()), ("old_n", pa.int64()), ("new_n", pa.int64()),
    ("role", pa.string()), ("reason", pa.string()), ("value", pa.string()),
    ("producer", pa.string()), ("acks", pa.string()), ("offset", pa.int64()),
    ("hw", pa.int64()), ("group", pa.string()), ("consumer", pa.string()),
    ("_kind", pa.int8()), ("_line", pa.int64()), ("_raw", pa.string()),
])
#: ``SCAN_SCHEMA`` as Spark DDL (for ``mapInArrow``).
SCAN_DDL: Final = (
    "trace string, topic string, partition int, seq bigint, ts_us bigint, event string, "
    "replica int, old_n bigint, new_n bigint, role string, reason string, value string, "
    "producer string, acks string, offset bigint, hw bigint, group string, consumer string, "
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


def iter_text(path: str, broke: list[str]) -> Iterator[bytes]:
    """The file's bytes, decompressed if gzip (by its magic number, every member), a block
    at a time. A damaged or cut gzip stream ends the bytes where it breaks and appends what
    broke to ``broke``. OSError if the file cannot be read."""
    with open(path, "rb") as f:
        data = f.read(_BLOCK)
        if data[:2] != b"\x1f\x8b":
            while data:
                yield data
                data = f.read(_BLOCK)
            return
        d = zlib.decompressobj(wbits=31)
        while data:
            while data:
                try:
                    out = d.decompress(data)
                except zlib.error as exc:
                    broke.append(f"damaged ({exc})")
                    return
                if out:
                    yield out
                data = b""
                if d.eof and d.unused_data:  # the next gzip member
                    data, d = d.unused_data, zlib.decompressobj(wbits=31)
            data = f.read(_BLOCK)
        if not d.eof:
            broke.append("cut off (truncated file)")


def iter_lines(path: str, broke: list[str]) -> Iterator[list[bytes]]:
    """The file's lines (without their newline), a block at a time (see ``iter_text``)."""
    carry = b""
    for block in iter_text(path, broke):
        lines = (carry + block).split(b"\n")
        carry = lines.pop()
        yield lines
    if carry:
        yield [carry]


def read_lines(path: str) -> tuple[list[bytes], str | None]:
    """Every line of the file and what broke the read, if anything."""
    broke: list[str] = []
    lines = [ln for block in iter_lines(path, broke) for ln in block]
    return lines, (broke[0] if broke else None)


def _summary(trace: str, **facts: Any) -> pa.RecordBatch:
    return _batch(trace, SUMMARY, None, [orjson.dumps(facts).decode()], 1)


def _batch(trace: str, kind: int, line_no: list[int] | None, raw: list[str] | None,
           n: int, hot: pa.RecordBatch | None = None) -> pa.RecordBatch:
    cols: dict[str, Any] = {"trace": pa.repeat(pa.scalar(trace, pa.string()), n),
                            "_kind": pa.repeat(pa.scalar(kind, pa.int8()), n)}
    if line_no is not None:
        cols["_line"] = pa.array(line_no, pa.int64())
    if raw is not None:
        cols["_raw"] = pa.array(raw, pa.string())
    if hot is not None:
        is_hw = pc.equal(hot["event"], "hw_update")
        for name in ("topic", "partition", "seq", "ts_us", "event", "replica", "role",
                     "reason", "value", "acks", "offset", "hw", "group", "consumer"):
            cols[name] = hot[name]
        cols["producer"] = pc.cast(hot["producer"], pa.string())
        cols["old_n"] = pc.if_else(is_hw, hot["old"], pa.scalar(None, pa.int64()))
        cols["new_n"] = pc.if_else(is_hw, hot["new"], pa.scalar(None, pa.int64()))
    return pa.RecordBatch.from_arrays(
        [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in SCAN_SCHEMA],
        schema=SCAN_SCHEMA)


def _parse_hot(lines: list[bytes]) -> pa.Table:
    """The hot lines as a table of the writer's types (ArrowInvalid on another type)."""
    return pj.read_json(
        pa.BufferReader(pa.py_buffer(b"\n".join(lines))),
        read_options=pj.ReadOptions(use_threads=False, block_size=1 << 24),
        parse_options=pj.ParseOptions(explicit_schema=_HOT_ARROW,
                                      unexpected_field_behavior="ignore"))


def scan_file(path: str, trace: str) -> Iterator[pa.RecordBatch]:
    """The batches of one file, a block of lines at a time, then its summary (see the module
    notes). Rows go out as they are read, so a file's rows never all sit in memory; a file
    found not clean later (a bad crc further on, no ``run_end``) has rows out already, and
    ``load`` drops every row of a file whose summary is not clean."""
    broke: list[str] = []
    crc32 = zlib.crc32
    lines_n = bad = odd = 0
    end_us = -1
    has_end = False
    first: bytes | None = None
    error: str | None = None
    try:
        for block in iter_lines(path, broke):
            hot: list[bytes] = []
            side_no: list[int] = []
            side: list[bytes] = []
            for i, ln in enumerate(block, lines_n):
                k = ln.rfind(CRC_MARK, -32)
                try:
                    ok = (k > 0 and ln[-1] == 125
                          and crc32(b"}", crc32(ln[:k])) == int(ln[k + 7:-1]))
                except ValueError:
                    ok = False
                if not ok:
                    bad += 1
                    continue
                parts = ln.split(b'"', 8)
                if (len(parts) < 9 or parts[5] != b"event" or parts[3] != b"ts_us"
                        or has_end or parts[2] != b":%d," % i):
                    # a crc-valid line of another shape, a seq that is not its line's (a
                    # line deleted, duplicated or moved), a line after run_end: the careful
                    # path decides and says where
                    odd += 1
                    continue
                try:
                    ts = int(parts[4][1:-1])
                except ValueError:
                    ts = -1
                if ts > end_us:
                    end_us = ts
                event = parts[7]
                if event in _HOT:
                    hot.append(ln)
                elif event in _SIDE or i == 0:
                    if event == b"run_end":
                        has_end = True
                    if i == 0:
                        first = ln
                    side_no.append(i + 1)
                    side.append(ln)
            lines_n += len(block)
            if error is not None or bad or odd or not is_clean(0, True, first):
                continue  # not clean whatever follows: nothing more to parse
            try:
                table = _parse_hot(hot) if hot else None
                raw = [s.decode("utf-8") for s in side]
            except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
                error = str(exc).splitlines()[0]
                continue
            if raw:
                yield _batch(trace, SIDE, side_no, raw, len(raw))
            # one batch per block the reader parsed (a few MB): a string column of a batch
            # stays far below Arrow's 2 GiB, however large the trace
            for chunk in table.to_batches() if table is not None else ():
                yield _batch(trace, HOT, None, None, chunk.num_rows, chunk)
    except OSError as exc:  # unreadable: no line (load reports it as such)
        yield _summary(trace, lines=0, bad=0, end_us=None, first=None, has_end=False,
                       ok=False, error=str(exc))
        return
    yield _summary(trace, lines=lines_n, bad=bad, end_us=end_us if end_us >= 0 else None,
                   first=first.decode("utf-8", "replace") if first is not None else None,
                   has_end=has_end, ok=not odd and not broke and error is None,
                   error=error or (broke[0] if broke else None))


def scan_files(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function: rows (path, trace) in, ``SCAN_SCHEMA`` batches out."""
    for batch in batches:
        for path, trace in zip(batch.column("path").to_pylist(),
                               batch.column("trace").to_pylist(), strict=True):
            yield from scan_file(path, trace)
