"""The hot lines of a clean trace as a typed table: DuckDB tokenizes, Arrow types, strictly.

The native scan (``scan.py``) hands over the ``HOT_EVENTS`` lines of a block as one Arrow
array over the file's bytes; ``parse_hot`` returns them as ``HOT_ARROW`` columns, the
writer's types. A line whose field has another JSON type must not come back as a row: it
raises ``pa.ArrowInvalid``, and the scan sends the file to the careful path.

Two parsers, one result:

* *Fast* (``_tokenized``): DuckDB's JSON reader (yyjson, C++) cuts each line into the
  hot fields' raw JSON text (``json_transform`` with every field typed ``JSON``), and Arrow
  gives them their types with its strict casts: an integer field's text must be an integer
  literal in range (``"3"``, ``3.5``, ``1e3``, ``true`` fail), a string field's must be a
  JSON string (it starts with ``"``) and is then the text between the quotes — which is the
  string itself because the lines hold no backslash (the query leaves out a line with one,
  and fewer rows than hot lines send the block to the reader: no escapes to undo, no member
  name spelt with an escape). DuckDB alone would not do: its typed
  extraction converts what it can (``"3"`` and ``true`` into integers, ``3.5`` into 4, a
  number into a string), which the writer never writes and the scan must refuse.
* *Strict reader* (``_read``): pyarrow's JSON reader with the writer's schema, which
  refuses another type itself. The fast parser falls back to it for any block it cannot
  vouch for (a backslash in the lines, a field of another type, JSON DuckDB refuses, bytes
  that are not UTF-8, or no DuckDB installed), so a doubtful block gets exactly the
  reader's verdict: the reader's rows, or its ``ArrowInvalid``.

Why: on a reference trace's hot lines (383k of its 560k lines, 79 MiB) picking them and
pyarrow's reader took 0.78-1.0 s of CPU, the fast parser 0.48-0.51 s (DuckDB about 0.39 s
of it): 8-10 s of the Python workers' CPU per 10M-event pass, out of 35-42 s (2026-11-27,
``docs/performance.md``; the same tables for all 21 traces of that corpus).
``tests/spark/test_hot_parse.py`` holds the two to the same rows over every recorded
regression trace and catalogue trace, and to the same refusals.

One member twice in a line: the reader refuses the line, DuckDB takes the first. The writer
writes a dict (no member twice), and a file edited and sealed again — the only way to get
one past the scan's digest — is what no check of the writer's seal can tell from the
writer's own.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

#: The writer's types of the hot fields.
HOT_ARROW: Final = pa.schema([
    ("seq", pa.int64()), ("ts_us", pa.int64()), ("event", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("replica", pa.int32()),
    ("old", pa.int64()), ("new", pa.int64()), ("role", pa.string()), ("reason", pa.string()),
    ("value", pa.string()), ("producer", pa.int64()), ("acks", pa.string()),
    ("offset", pa.int64()), ("hw", pa.int64()), ("group", pa.string()),
    ("consumer", pa.string()),
])
#: Bytes of lines the strict reader parses at a time: faster here than larger blocks (its
#: working set stays in cache).
_READ_BLOCK: Final = 1 << 22
#: At most this many bytes of lines go to one DuckDB query, so that no column it returns
#: nears Arrow's 2 GiB. Larger is faster: a query has a fixed cost (one trace's hot lines
#: in 16 MiB queries: 0.95-1.0 s; in one query per scan block: 0.66-0.75 s).
_TOKENIZE_BLOCK: Final = 1 << 28
#: Every hot field of the hot lines without a backslash, as its raw JSON text (a field the
#: line lacks, or ``null``: NULL), in the lines' order (one thread).
_TOKENS: Final = ("select unnest(json_transform(line, '{"
                  + ",".join(f'"{f.name}":"JSON"' for f in HOT_ARROW) + "}')) from hot_lines"
                  " where hot and not contains(line, '\\')")


def _duckdb() -> ModuleType | None:
    """DuckDB where it is installed (a dependency of isrlab; a cluster's Python workers may
    lack it): then the fast parser, else the strict reader alone."""
    try:
        import duckdb
    except ImportError:
        return None
    return duckdb


DUCKDB: ModuleType | None = _duckdb()
_local = threading.local()


def _connection() -> Any:
    """This thread's DuckDB connection, one thread, no extension loading (``json`` is built
    in): made anew in a forked worker (a connection is not shared across processes)."""
    assert DUCKDB is not None
    if getattr(_local, "pid", None) != os.getpid():
        _local.con = DUCKDB.connect(config={"threads": 1,
                                            "autoload_known_extensions": False,
                                            "autoinstall_known_extensions": False})
        _local.pid = os.getpid()
    return _local.con


def _bytes(lines: pa.LargeBinaryArray) -> tuple[pa.Buffer, np.ndarray]:
    """The lines' bytes (contiguous in the array's data buffer) and their offsets."""
    offsets = np.frombuffer(lines.buffers()[1], np.int64)[lines.offset:lines.offset + len(lines)
                                                          + 1]
    first, last = int(offsets[0]), int(offsets[-1])
    return lines.buffers()[2].slice(first, last - first), offsets - first


def _read(lines: pa.LargeBinaryArray) -> pa.Table:
    """The strict reader: pyarrow's JSON reader with the writer's schema (ArrowInvalid on a
    line of another type). It takes one buffer: the lines' bytes, contiguous in ``lines``."""
    data, _ = _bytes(lines)
    return pj.read_json(
        pa.BufferReader(data),
        read_options=pj.ReadOptions(use_threads=False, block_size=_READ_BLOCK),
        parse_options=pj.ParseOptions(explicit_schema=HOT_ARROW,
                                      unexpected_field_behavior="ignore"))


def _typed(tokens: pa.Table) -> pa.Table | None:
    """``tokens`` (each field's JSON text) with the writer's types, or None where a field
    has another JSON type."""
    columns = []
    for field in HOT_ARROW:
        text = tokens.column(field.name)
        if pa.types.is_string(field.type):
            if pc.all(pc.starts_with(text, '"')).as_py() is False:
                return None
            # no backslash in the lines: the text between the quotes is the string
            columns.append(pc.utf8_slice_codeunits(text, 1, -1).cast(field.type))
        else:
            try:
                columns.append(text.cast(field.type))  # safe: an integer literal, in range
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
    return pa.Table.from_arrays(columns, schema=HOT_ARROW)


def _tokenized(lines: pa.LargeBinaryArray, hot: pa.BooleanArray) -> pa.Table | None:
    """The fast parser (see the module notes) of the ``hot`` ones of ``lines``, or None
    where it cannot vouch for one. DuckDB reads the lines where they are and picks the hot
    ones itself (no copy of them), and leaves out those with a backslash: fewer rows than
    hot lines mean one had."""
    if DUCKDB is None:
        return None
    try:
        text = lines.cast(pa.large_string())  # UTF-8 checked
    except pa.ArrowInvalid:
        return None
    _, offsets = _bytes(lines)
    cuts = [0, *np.searchsorted(offsets, np.arange(_TOKENIZE_BLOCK, int(offsets[-1]),
                                                   _TOKENIZE_BLOCK)).tolist(), len(lines)]
    con = _connection()
    parts = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        if hi <= lo:
            continue
        picked = hot.slice(lo, hi - lo)
        con.register("hot_lines", pa.table({"line": text.slice(lo, hi - lo), "hot": picked}))
        try:
            tokens = con.sql(_TOKENS).to_arrow_table()
        except DUCKDB.Error:
            return None
        finally:
            con.unregister("hot_lines")
        typed = _typed(tokens) if tokens.num_rows == picked.true_count else None
        if typed is None:
            return None
        parts.append(typed)
    return pa.concat_tables(parts)


def parse_hot(lines: pa.LargeBinaryArray, hot: pa.BooleanArray) -> pa.Table:
    """The ``hot`` ones of ``lines`` (each ending in its newline; at least one) as
    ``HOT_ARROW`` columns; ``pa.ArrowInvalid`` where one is not JSON of the writer's types."""
    fast = _tokenized(lines, hot)
    return fast if fast is not None else _read(lines.filter(hot))
