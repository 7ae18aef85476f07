"""Writing a trace: structlog in front, a sealed JSON line per event behind it.

As measured (docs/stack-notes.md, section 1): no global ``structlog.configure`` (tests run
many seeds in one process), one ``wrap_logger`` per run, no wall-clock stamper, no lock and
no flush per event, orjson rendering. :meth:`TraceWriter.emit` builds the event dict in the
contract's member order — ``seq``, ``ts_us``, ``event``, ``node``, ``actor``, then the
event's fields — and a small custom wrapper class (:class:`_TraceLogger`) passes it through
structlog's processor chain, which is one processor, ``_render``: orjson, then the line's
crc appended as :func:`traces.integrity.seal` does (inlined: one call per event). The hot
path is about one trace line per message, so it is kept to one dict and one processor call;
:meth:`TraceWriter.emit` calls the bound logger's ``_process_event`` (bound once) and the
sink's ``msg`` itself.

The sink hashes every byte it writes so ``run_end`` can carry the SHA-256 of all lines
before it. Events reach the writer already in the run's total order (the scheduler commits
effects in a canonical order), so the writer never sorts.

A trace written under a temporary name (``emulator.files.replacing``: written whole, then
renamed) is byte for byte the trace written under its final name: a ``.gz`` trace's gzip
header records the final name (``emulator.files.final_name``), never the temporary one.

A run that dies — an exception in an actor, SIGINT, SIGTERM — still ends with a ``run_end``
line (status ``error`` or ``aborted``) because :meth:`TraceWriter.close` is called from a
``finally`` and the buffered file is flushed there.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import signal
import threading
import zlib
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import IO, Any, Final

import orjson
import structlog

from emulator.files import final_name
from traces.integrity import CRC_MARK
from traces.schema import SCHEMA_VERSION

ISRLAB_VERSION = "0.1.0"


_INTERRUPTS: Final = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive inside the block have their handlers run after it.

    Blocking them in this thread (``pthread_sigmask``) is not enough: the kernel hands a
    process-directed signal to any thread that does not block it (a progress bar's monitor
    thread, py4j's), and Python then runs the handler in the main thread at its next
    bytecode, inside the block. So the Python handlers themselves are swapped, for the
    block, for one that only notes the signal; once the old ones are back, each noted
    signal is raised again in this thread. No Python handler runs outside the main thread
    (nor can one be installed there), so there the block needs nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []

    def note(signum: int, _frame: Any) -> None:
        noted.append(signum)

    old = [(s, h) for s in _INTERRUPTS if (h := signal.getsignal(s)) is not None]
    for s, _ in old:
        signal.signal(s, note)
    try:
        yield
    finally:
        for s, h in old:
            signal.signal(s, h)
        for signum in noted:
            signal.raise_signal(signum)


class _Sink:
    """structlog's "logger": writes rendered bytes, keeps the running digest. No lock.

    Lines are gathered and written (and hashed: SHA-256 of the concatenation does not
    depend on the chunking) ``BATCH`` at a time; the file object buffers further.
    """

    __slots__ = ("_file", "_sha", "_lines", "_flushed")
    BATCH = 256

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file
        self._sha = hashlib.sha256()
        self._lines: list[bytes] = []
        self._flushed = 0

    # A run stopped by SIGINT or SIGTERM gets KeyboardInterrupt at whatever bytecode it is
    # running, and then seals the trace with run_end: a line is counted by being in
    # ``_lines`` (one append, nothing to keep in step with it), and a flush runs with those
    # signals deferred, so that no interrupt lands between taking the batch and counting it
    # as written (it did: 256 lines lost, or written twice when another thread took the
    # signal; either way the trace did not verify).
    @property
    def count(self) -> int:
        return self._flushed + len(self._lines)

    def msg(self, line: bytes) -> None:
        lines = self._lines
        lines.append(line)
        if len(lines) >= self.BATCH:
            self.flush()

    info = msg

    def flush(self) -> None:
        if not self._lines:
            return
        with _interrupts_deferred():
            chunk = b"".join(self._lines)
            self._file.write(chunk)
            self._sha.update(chunk)
            self._flushed += len(self._lines)
            self._lines.clear()

    def hexdigest(self) -> str:
        self.flush()
        return self._sha.hexdigest()


class _TraceLogger(structlog.BoundLoggerBase):
    """structlog's bound logger for traces: one method, taking the line in contract order.

    A custom wrapper class (structlog's documented extension point): it hands the event
    dict straight to the processor chain with ``_process_event`` and the rendered bytes to
    the sink, skipping the level filter and the keyword-argument re-packing of the general
    ``info(event, **kw)`` path — a trace line is written for nearly every message.
    """

    def line(self, event_dict: dict[str, Any]) -> None:
        args, _ = self._process_event("info", None, event_dict)
        self._logger.msg(*args)


class TraceWriter:
    """One trace file. ``emit`` is the only hot-path call."""

    def __init__(self, path: str | os.PathLike[str] | None, *, buffer: IO[bytes] | None = None
                 ) -> None:
        self.path = Path(path) if path is not None else None
        self._file: IO[bytes]
        self._raw: IO[bytes] | None = None   # under a GzipFile: the file it writes to
        if buffer is not None:
            self._file = buffer
        else:
            assert self.path is not None
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.suffix == ".gz":
                self._raw = open(self.path, "wb")  # noqa: SIM115  # closed in close()
                # the gzip header names the file: the final name, never a temporary one
                self._file = gzip.GzipFile(  # type: ignore[assignment]  # GzipFile is IO[bytes]
                    filename=final_name(self.path), mode="wb", compresslevel=6,
                    fileobj=self._raw, mtime=0)
            else:
                self._file = open(self.path, "wb", buffering=1 << 20)  # noqa: SIM115
        self._sink = _Sink(self._file)
        self._log: _TraceLogger = structlog.wrap_logger(
            self._sink,
            processors=[self._render],
            wrapper_class=_TraceLogger,
            cache_logger_on_first_use=True,
        ).bind()
        # the hot path's two calls, bound once: structlog's processing, the sink's write
        self._process = self._log._process_event
        self._write = self._sink.msg
        self.closed = False
        self.last_ts_us = 0
        #: sees every event as it is written (``isrlab explore`` keeps the history it
        #: digests this way: emulator.digest.History)
        self.tap: Callable[[str, dict[str, Any], str], None] | None = None

    # -- structlog processor ----------------------------------------------------------------
    @staticmethod
    def _render(_logger: Any, _name: str, ev: MutableMapping[str, Any],
                _dumps: Callable[[Any], bytes] = orjson.dumps,
                _crc32: Callable[[bytes], int] = zlib.crc32) -> bytes:
        """The one processor: orjson, then the line's crc — the bytes of
        ``traces.integrity.seal(orjson.dumps(ev))``, in one call."""
        body = _dumps(ev)
        return b"%s%s%d}\n" % (body[:-1], CRC_MARK, _crc32(body))

    # -- API -------------------------------------------------------------------------------
    @property
    def events(self) -> int:
        return self._sink.count

    def emit(self, ts_us: int, node: str, actor: str, event: str, fields: dict[str, Any]
             ) -> None:
        self.last_ts_us = ts_us
        if self.tap is not None:
            self.tap(event, fields, node)
        # _TraceLogger.line, inlined: structlog's chain renders, the sink takes the bytes
        self._write(self._process("info", None, {
            "seq": self._sink.count, "ts_us": ts_us, "event": event, "node": node,
            "actor": actor, **fields})[0][0])

    def start(self, *, seed: int | None, scenario: dict[str, Any], fault_plan: list[dict[str, Any]],
              protocol: str, **extra: Any) -> None:
        self.emit(0, "sim", "sim", "run_start", {
            "schema": SCHEMA_VERSION, "isrlab_version": ISRLAB_VERSION, "seed": seed,
            "protocol": protocol, "scenario": scenario, "fault_plan": fault_plan, **extra})

    def close(self, status: str, **fields: Any) -> str:
        """Write ``run_end`` (status, event count, sha256 of all prior lines), flush, close.

        Returns the sha256 of the whole file as written (the run's digest).
        """
        if self.closed:
            raise RuntimeError("trace already closed")
        prior = self._sink.hexdigest()
        self.emit(self.last_ts_us, "sim", "sim", "run_end",
                  {"status": status, "events": self._sink.count, "sha256": prior, **fields})
        self.closed = True
        digest = self._sink.hexdigest()   # writes what the sink still holds
        try:
            self._file.flush()
            if not isinstance(self._file, io.BytesIO):
                self._file.close()
        finally:
            if self._raw is not None:
                self._raw.close()
        return digest
