"""A class-data-sharing archive of the local driver JVM's classes, for small analyses.

An ``isrlab analyze`` of one trace is mostly start-up: the driver JVM loads and verifies
some 20,000 classes of Spark, Scala and their libraries before and while the first queries
run. JDK 13+ can dump the classes a run loaded into a *dynamic archive*
(``-XX:ArchiveClassesAtExit``, JEP 350) that a later JVM maps instead of loading them
(``-XX:SharedArchiveFile``). Measured on ``make demo``'s trace (2026-11-29, two rounds
alternating, ``docs/performance.md``): 34.8 / 36.6 s and 34.2 / 33.9 CPU s without, 33.8 /
30.6 s and 30.1 / 29.1 CPU s with — 10-13 %.

* **Only the small-input profile** (``session.SMALL_INPUT``) uses it: its JVM options are
  fixed (``QUICK_JVM_OPTIONS``), and its runs are short enough for start-up to matter.
* **Made on purpose, never inside a user's analysis**: dumping at exit added about a minute
  to the run that did it. ``make demo`` makes it once, after the demo
  (``python -m cli.class_archive TRACE``: an analysis of TRACE in a child process with
  ``DUMP_ENV`` naming where to dump; the file is then renamed into place, so a reader never
  sees half an archive).
* **Keyed** by what the archive depends on: the ``java`` Spark will start (``JAVA_HOME`` or
  the one on ``PATH``, as ``spark-class`` picks it; its path, size and time), the JVM
  library, PySpark's version and every jar of its class path (name, size, time: the JVM
  checks the class path's jars by size and time, and refuses the archive when one
  differs), and the JVM options. Another JDK, another Spark or other options look for
  another file; a stale archive is never used.
* **Checked before use**: JDK 17 does not survive every damaged archive — one cut short
  crashed the JVM (SIGBUS in ``FileMapInfo::relocate_pointers_in_core_regions``, tried
  2026-11-29) instead of falling back. So the maker runs one more analysis with the new
  archive (``CHECK_ENV``) and keeps it only if that exits 0 with its ``--json`` intact;
  then it writes ``<archive>.size`` beside it, and an analysis maps the archive only
  while its size is that one (a file cut short later is not used).
* **One cache, several installs**: ``<archive>.owner`` names the PySpark install the archive
  serves. Making an archive removes only the archives no install will map again
  (:func:`stale_archives`) — never another checkout's that is still good.
* **Nothing on stdout**: the JVM shares the process's stdout (``--json`` prints there), and
  its unified logging writes warnings to stdout by default. With the archive, the options
  turn logging off, send warnings and the VM's own output to stderr, and ``-Xshare:auto``
  lets a JVM that refuses the archive (another class path) start without it, silently.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Final

#: When set, the small-input session dumps its loaded classes to this path at exit.
DUMP_ENV: Final = "ISRLAB_CLASS_ARCHIVE_DUMP"
#: ``off``: never use an archive (a measurement's baseline).
USE_ENV: Final = "ISRLAB_CLASS_ARCHIVE"
#: An archive to map whatever its record says (the maker's check of a new archive).
CHECK_ENV: Final = "ISRLAB_CLASS_ARCHIVE_CHECK"
#: JVM logging off, warnings to stderr (see the module note), the archive optional.
_QUIET: Final = ("-Xshare:auto -Xlog:disable -Xlog:all=warning:stderr "
                 "-XX:+DisplayVMOutputToStderr")


def cache_dir() -> Path:
    """Where archives are kept: ``$XDG_CACHE_HOME/isrlab`` (default ``~/.cache/isrlab``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "isrlab"


def _java() -> Path | None:
    """The ``java`` Spark's launcher runs (``spark-class``: ``$JAVA_HOME/bin/java``, else
    the one on ``PATH``), resolved; None when there is none."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found or not Path(found).exists():
        return None
    return Path(found).resolve()


def _fingerprint(path: Path) -> str:
    st = path.stat()
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _jars() -> Path:
    """PySpark's class path: the ``jars`` folder of the PySpark this process imports."""
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _jars_digest(jars: Path) -> str:
    """The class path's jars by name, size and time (what the JVM checks an archive by)."""
    digest = hashlib.sha256()
    for part in sorted(_fingerprint(p) for p in jars.glob("*.jar")):
        digest.update(part.encode() + b"\n")
    return digest.hexdigest()


def archive_path(jvm_options: str) -> Path | None:
    """The archive for a driver JVM started with ``jvm_options`` here (it may not exist);
    None when no ``java`` or no PySpark install is found."""
    import pyspark

    java = _java()
    jars = _jars()
    if java is None or not jars.is_dir():
        return None
    digest = hashlib.sha256()
    parts = [_fingerprint(java), pyspark.__version__, jvm_options,
             *sorted(_fingerprint(p) for p in java.parent.parent.glob("lib/server/libjvm.*")),
             *sorted(_fingerprint(p) for p in jars.glob("*.jar"))]
    for part in parts:
        digest.update(part.encode() + b"\n")
    return cache_dir() / f"driver-classes-{digest.hexdigest()[:20]}.jsa"


def owner_record(path: Path) -> Path:
    """Where the install an archive serves is named: its PySpark ``jars`` folder and the
    digest of its jars, a line each (see :func:`stale_archives`)."""
    return path.with_name(path.name + ".owner")


def ownership(jars: Path | None = None) -> str:
    """The text of the owner record of the install whose class path is ``jars`` (default:
    this one)."""
    jars = jars if jars is not None else _jars()
    return f"{jars}\n{_jars_digest(jars)}\n"


def stale_archives(path: Path) -> list[Path]:
    """The files of the archives beside ``path`` that no install will map again, which the
    maker of ``path`` removes (each archive with its size and owner records).

    The cache is shared by every isrlab install of the user (a second checkout, a clone made
    to chase a bug, each with its own ``.venv``), and an archive serves one class path: so
    another install's archive is kept while that install is there as it was. Stale are:
    this install's other archives (another JDK, Spark or JVM options here); an archive
    whose install is gone or whose jars changed since; and one made before owner records
    existed, which names no install."""
    here = str(_jars())
    stale: list[Path] = []
    for other in sorted(path.parent.glob("driver-classes-*.jsa")):
        if other == path:
            continue
        try:
            owner, digest = owner_record(other).read_text().splitlines()[:2]
        except (OSError, ValueError):
            owner = digest = ""
        jars = Path(owner) if owner else None
        if (jars is None or owner == here or not jars.is_dir()
                or _jars_digest(jars) != digest):
            stale += [p for p in (other, size_record(other), owner_record(other))
                      if p.exists()]
    return stale


def with_archive(jvm_options: str) -> str:
    """``jvm_options`` plus the archive's options: dump to ``DUMP_ENV``'s path when it is
    set, else map the archive when it exists (and ``USE_ENV`` is not ``off``)."""
    dump = os.environ.get(DUMP_ENV)
    if dump:
        return f"{jvm_options} -XX:ArchiveClassesAtExit={_quoted(dump)} {_QUIET}"
    check = os.environ.get(CHECK_ENV)
    if check:
        return f"{jvm_options} -XX:SharedArchiveFile={_quoted(check)} {_QUIET}"
    if os.environ.get(USE_ENV) == "off":
        return jvm_options
    path = archive_path(jvm_options)
    if path is None or not checked(path):
        return jvm_options
    return f"{jvm_options} -XX:SharedArchiveFile={_quoted(path)} {_QUIET}"


def size_record(path: Path) -> Path:
    """Where the size of a checked archive is kept (see the module note)."""
    return path.with_name(path.name + ".size")


def checked(path: Path) -> bool:
    """Whether ``path`` is an archive the maker checked, still of the size it had then."""
    try:
        return int(size_record(path).read_text().strip()) == path.stat().st_size
    except (OSError, ValueError):
        return False


def _quoted(path: Path | str) -> str:
    """A path as Spark splits ``extraJavaOptions`` (``Utils.splitCommandString``: double
    quotes keep a space)."""
    text = str(path)
    return f'"{text}"' if " " in text else text


__all__ = ["CHECK_ENV", "DUMP_ENV", "USE_ENV", "archive_path", "cache_dir", "checked",
           "owner_record", "ownership", "size_record", "stale_archives", "with_archive"]
