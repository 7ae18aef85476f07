"""Which files a load reads: the paths, folders and URIs it is given, expanded to trace files,
and every input that is not a regular file refused before Spark is asked anything.

``expand_paths`` runs on the driver: a folder is searched recursively for ``*.jsonl`` and
``*.jsonl.gz`` (each file resolved; the whole list sorted and de-duplicated), a URI with a
scheme (``hdfs://``, ``s3a://``) passes through for Spark to list (``file://`` is a local
path), and a FIFO, a device, a socket or a broken link, named or found in a folder, is refused
at once and never opened (``emulator.files.input_file``), as are a name that does not exist
and a folder with no trace in it. Each refusal is a ``TraceInputError`` with a one-line
message, which the command line turns into exit 2 (``load_cache.claim_cache`` raises it too).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from emulator.files import FileRefused, input_file

_PATTERNS: Final = ("*.jsonl", "*.jsonl.gz")


class TraceInputError(Exception):
    """A path that names no trace file."""


def expand_paths(paths: Iterable[str]) -> list[str]:
    """Files named, plus ``*.jsonl``/``*.jsonl.gz`` under folders; URIs pass through."""
    out: list[str] = []
    for p in paths:
        if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", p) and not p.startswith("file://"):
            out.append(p)
            continue
        path = Path(p[len("file://"):] if p.startswith("file://") else p)
        if path.is_dir():
            found = sorted({f for pat in _PATTERNS for f in path.rglob(pat)
                            if not f.is_dir()})
            if not found:
                raise TraceInputError(f"{p}: no *.jsonl or *.jsonl.gz files")
            out.extend(_regular(f) for f in found)
        elif path.exists() or path.is_symlink():
            out.append(_regular(path))
        else:
            raise TraceInputError(f"{p}: no such file or directory")
    return sorted(set(out))


def _regular(path: Path) -> str:
    """``path`` resolved, when it is a regular file; TraceInputError (one line) for a FIFO,
    a device, a socket, a broken link — named or found in a folder: reading one would
    block or never end (``emulator.files.input_file``)."""
    try:
        return str(input_file(path).resolve())
    except FileRefused as exc:
        raise TraceInputError(str(exc)) from None
