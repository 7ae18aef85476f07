"""``python -m cli.class_archive TRACE``: make the driver JVM's class archive
(:mod:`spark_analysis.class_archive`) once, by analysing TRACE in a child process that dumps
the classes its JVM loaded when it exits. ``make demo`` runs it after the demo.

The child is ``isrlab analyze TRACE --json --out TMP``, with
``spark_analysis.class_archive.DUMP_ENV`` naming a file in a temporary folder beside the
cache; only a complete dump is renamed into place, so an analysis never maps half an
archive, and one already there is kept. Prints one line. Exit 0: made, or already there;
2: TRACE is not a file; 1: the child failed (its last line of stderr is shown).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from spark_analysis.class_archive import DUMP_ENV, archive_path
from spark_analysis.session import QUICK_JVM_OPTIONS


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
    if path.is_file():
        print(f"class archive: {path} (already made)")
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".making-") as tmp:
        part = Path(tmp) / path.name
        child = subprocess.run(
            [sys.executable, "-m", "cli", "analyze", trace, "--json", "--out", f"{tmp}/out"],
            env={**os.environ, DUMP_ENV: str(part)}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True, check=False)
        if child.returncode != 0 or not part.is_file():
            last = (child.stderr.strip().splitlines() or ["no archive written"])[-1]
            print(f"class archive: not made ({last})", file=sys.stderr)
            return 1
        os.replace(part, path)
    print(f"class archive: {path} ({path.stat().st_size >> 20} MiB): analyses of small "
          f"inputs now start faster")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
