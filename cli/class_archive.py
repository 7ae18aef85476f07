"""``python -m cli.class_archive TRACE``: make the driver JVM's class archive
(:mod:`spark_analysis.class_archive`) once, by analysing TRACE in a child process that dumps
the classes its JVM loaded when it exits. ``make demo`` runs it after the demo.

Steps, each in a child ``isrlab analyze TRACE --json --out TMP``: the dump
(``DUMP_ENV``, into a temporary folder beside the cache), then the check (``CHECK_ENV``:
the same analysis mapping the new archive must exit 0 and print its JSON whole). Only a
checked archive is renamed into place (the archives no install maps any more are removed:
``stale_archives``; another checkout's good one stays), the install it serves and its size
recorded after it
(``size_record``, written to a temporary name and renamed): an analysis never maps half an
archive or an unchecked one, and one already there is kept. Prints a line when it starts
making one and a line at the end. Exit 0: made,
or already there; 2: TRACE is not a file; 1: not made (why, on stderr; analyses then start
as before).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from emulator.files import FileRefused, write_text
from spark_analysis.class_archive import (
    CHECK_ENV,
    DUMP_ENV,
    archive_path,
    checked,
    owner_record,
    ownership,
    size_record,
    stale_archives,
)
from spark_analysis.session import QUICK_JVM_OPTIONS


def _analysis(trace: str, out: str, env: dict[str, str]) -> str | None:
    """One analysis in a child; None when it exits 0 with its JSON whole, else why not."""
    child = subprocess.run([sys.executable, "-m", "cli", "analyze", trace, "--json", "--out",
                            out], env={**os.environ, **env}, capture_output=True, text=True,
                           check=False)
    if child.returncode != 0:
        lines = child.stderr.strip().splitlines() or [f"exit {child.returncode}"]
        return lines[-1]
    try:
        json.loads(child.stdout)
    except ValueError:
        return "its --json output was not JSON"
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m cli.class_archive TRACE", file=sys.stderr)
        return 2
    trace = argv[0]
    if not Path(trace).is_file():
        print(f"class archive: {trace}: not a file", file=sys.stderr)
        return 2
    path = archive_path(QUICK_JVM_OPTIONS)
    if path is None:
        print("class archive: no java or no PySpark found: analyses start without one",
              file=sys.stderr)
        return 1
    if checked(path):
        if not owner_record(path).exists():   # made before owner records: name its install
            with contextlib.suppress(FileRefused):   # another maker names it now
                write_text(owner_record(path), ownership())
        print(f"class archive: {path} (already made)")
        return 0
    print("class archive: making the driver JVM's class archive for faster analyses (once "
          "per JDK and Spark: two analyses of the trace, a few minutes)", flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".making-") as tmp:
        part = Path(tmp) / path.name
        why = _analysis(trace, f"{tmp}/dump", {DUMP_ENV: str(part)})
        if why is None and not part.is_file():
            why = "the JVM wrote no archive"
        if why is None:
            why = _analysis(trace, f"{tmp}/check", {CHECK_ENV: str(part)})
        if why is not None:
            print(f"class archive: not made ({why})", file=sys.stderr)
            return 1
        size = part.stat().st_size
        for stale in stale_archives(path):
            stale.unlink(missing_ok=True)   # nothing maps it again (another checkout's stays)
        os.replace(part, path)
        try:   # the size record last: until it is there, no analysis maps the archive
            write_text(owner_record(path), ownership())
            write_text(size_record(path), f"{size}\n")
        except FileRefused as exc:   # another maker is writing them now
            print(f"class archive: not made ({exc})", file=sys.stderr)
            return 1
    print(f"class archive: {path} ({size >> 20} MiB): analyses of small inputs now start "
          f"faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
