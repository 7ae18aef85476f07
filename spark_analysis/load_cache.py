"""``isrlab analyze --cache``: a load kept as zstd Parquet, so that a second analysis of the
same files skips the JSON.

``claim_cache`` takes the folder (new, empty, or one that carries ``CACHE_MARKER``: a cache
replaces what it cached before, so never a folder of the user's) and clears the scratch
folders a killed analysis left; ``_cache_path`` names a load's entry by the inputs' paths,
the SHA-256 of each local input's bytes (``_digest``; a URI by its name alone) and whether the
load was careful, so a file changed in place is another key; ``_store`` writes ``events/``,
``side/`` and ``meta.json`` (the problems and per-trace sizes) into a scratch folder renamed
into place once whole, ``meta.json`` last: an entry is there complete or not at all. Reading
an entry back is ``load.load_traces``'s, which builds its ``Loaded`` as from a parse.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

import orjson

from emulator.files import (
    FileRefused,
    claim_folder,
    remove_scratch,
    remove_stale_scratch,
    scratch_folder,
    write_text,
)
from spark_analysis.load_inputs import TraceInputError
from spark_analysis.load_rows import Loaded

_META: Final = "meta.json"
#: the marker of a folder ``--cache`` may write into (``emulator.files.claim_folder``)
CACHE_MARKER: Final = ".isrlab-cache"
#: the prefix of a cached load's folder inside the cache folder
_CACHE_PREFIX: Final = "traces-"


def claim_cache(cache_dir: str, inputs: Sequence[str] = ()) -> Path:
    """``cache_dir`` as the cache's folder: new, empty, or one that carries
    ``CACHE_MARKER`` (written here when missing); TraceInputError (one line) for any other
    folder — a cache replaces what it cached before, so never inside a folder of the
    user's. Scratch folders a killed analysis left in it are removed."""
    try:
        folder = claim_folder(cache_dir, "--cache", CACHE_MARKER,
                              "an isrlab analyze cache", [f for f in inputs if "://" not in f])
        if not (folder / CACHE_MARKER).exists():
            write_text(folder / CACHE_MARKER, "isrlab analyze --cache: parsed traces, keyed "
                       "by the inputs' paths and contents; safe to delete\n", "--cache")
    except FileRefused as exc:
        raise TraceInputError(str(exc)) from None
    remove_stale_scratch(folder, CACHE_MARKER)
    return folder


def _digest(path: str) -> str:
    """The SHA-256 of a local file's bytes (a URI: its name alone)."""
    if "://" in path:
        return "-"
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return "?"


def _cache_path(cache_dir: str | None, files: Sequence[str], *, careful: bool = False
                ) -> Path | None:
    """``cache_dir/traces-<key>/`` (``events/``, ``side/`` Parquet, ``meta.json``), keyed
    by the inputs' paths and the SHA-256 of each local input's bytes: a file changed in
    place — even to the same size and mtime — is another key, never a stale verdict (the
    digest costs one read of the bytes, far less than the parse it saves). A URI is keyed
    by its name alone."""
    if cache_dir is None:
        return None
    folder = claim_cache(cache_dir, files)
    h = hashlib.sha256()
    h.update(b"schema-v8\n")  # the cached columns and side lines: bump when they change
    h.update(b"careful\n" if careful else b"")
    for f in files:
        h.update(f"{f}\0{_digest(f)}\n".encode())
    return folder / f"{_CACHE_PREFIX}{h.hexdigest()[:16]}"


def _store(cached: Path, loaded: Loaded, sizes: list[list[Any]]) -> None:
    """The load into ``cached``, whole or not at all: written into a scratch folder beside
    it, renamed onto ``cached`` once complete (``meta.json`` last). A concurrent analysis
    that stored the same key first keeps its copy; a copy left without ``meta.json`` (an
    older isrlab killed while writing) is replaced."""
    scratch = scratch_folder(cached.parent)
    try:
        for name, df in (("events", loaded.events), ("side", loaded.side)):
            df.write.option("compression", "zstd").parquet(str(scratch / name))
        (scratch / _META).write_bytes(orjson.dumps(
            {"problems": [asdict(p) for p in loaded.problems], "traces": sizes}))
        if cached.is_dir() and not (cached / _META).exists():
            shutil.rmtree(cached, ignore_errors=True)
        with contextlib.suppress(OSError):   # another analysis stored it meanwhile
            os.rename(scratch, cached)
    finally:
        if scratch.exists():
            remove_scratch(scratch)
