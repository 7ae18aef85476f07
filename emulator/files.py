"""The files a command reads and writes: one rule that every ``isrlab`` door uses.

isrlab is pointed at people's own folders (``--out ~``, ``--out .``, the folder a trace came
from), so what a command may delete or replace is decided here, once, not per command:

* **Inputs are regular files.** A FIFO, a device (``/dev/zero``), a socket or a folder where
  a file is expected is refused before anything is read (:func:`input_file`): reading one
  hangs, never ends, or fails deep inside a parser.
* **An output is never an input.** :func:`output_file` refuses an output path that is, or
  resolves to, one of the command's inputs (the same file through another name, a link or
  ``..``), and an output path that already exists as something other than a regular file
  (``/dev/null``, ``/dev/full``, a FIFO, a folder): isrlab writes regular files only.
* **A file is replaced whole or not at all.** :func:`replacing` yields a fresh temporary name
  beside the final one (``tempfile.mkstemp`` in the same folder, so the final rename is
  atomic); the final name is only ever renamed onto, after the writing finished. A failure
  (a full disk, an exception, a signal) removes the temporary file and leaves whatever was
  at the final name untouched. While it writes, it holds an exclusive ``flock`` on a lock
  file beside the output, so two commands writing one output at once do not race: the
  second is refused at once (:class:`FileRefused`), it does not wait.
* **A folder is written only when it is new, empty or its own.** :func:`claim_folder` takes
  an output folder that does not exist yet, is empty, or carries the command's marker file
  (a campaign folder has ``campaign.json``, a shrink folder ``shrink.json``, ...). A non-empty
  folder without the marker is the user's: refused, with nothing inside it read or removed.
* **Scratch space is a fresh folder of its own** (:func:`scratch_folder`: ``mkdtemp`` inside
  the output folder, never a fixed name like ``tmp``), removed by the command that made it.
  Scratch folders that a killed command left behind are removed only inside a folder that
  carries its marker (:func:`remove_stale_scratch`), and only those with the scratch prefix.

Every refusal is a :class:`FileRefused` whose text is one line naming the path and the flag;
the doors print it and exit 2 (bad input). An error while *writing* (the disk filling up
mid-run) is an ``OSError`` the doors report as one line too (see each door's exit codes).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

#: the prefix of every scratch folder a command makes inside its output folder
SCRATCH_PREFIX: Final = ".isrlab-scratch-"
#: the prefix of a temporary file being written before it is renamed onto its final name
PART_PREFIX: Final = ".isrlab-part-"
#: the prefix of the lock file held beside an output while a command writes it
LOCK_PREFIX: Final = ".isrlab-lock-"

#: the names of the files and folders isrlab makes for its own bookkeeping
OWN_PREFIXES: Final = (SCRATCH_PREFIX, PART_PREFIX, LOCK_PREFIX)

StrPath = str | os.PathLike[str]


class FileRefused(Exception):
    """A path a command will not read or write: the text is one line naming it."""


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words (``a FIFO``, ``a folder``...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _label(path: StrPath, flag: str | None) -> str:
    return f"{path}: {flag}" if flag else f"{path}"


def input_file(path: StrPath, flag: str | None = None) -> Path:
    """``path`` as a regular file to read; raises :class:`FileRefused` otherwise.

    Follows links (a link to a regular file is fine). Does not open the file, so a FIFO is
    refused without blocking on it.
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise FileRefused(f"{_label(path, flag)}: no such file") from None
    except OSError as exc:
        raise FileRefused(f"{_label(path, flag)}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{_label(path, flag)}: is {kind_of(st.st_mode)}, not a regular "
                          "file; give a file")
    return p


def _same(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file (through links, ``..`` or hard links)."""
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def refuse_inputs(out: StrPath, inputs: Iterable[StrPath], flag: str | None) -> None:
    """Raise when ``out`` is one of ``inputs``."""
    target = Path(out)
    for source in inputs:
        if _same(target, Path(source)):
            raise FileRefused(f"{_label(out, flag)}: is the input {source} itself; refusing "
                              "to overwrite it")


def _stat(p: Path, flag: str | None, cannot: str) -> os.stat_result | None:
    """``p``'s status, None when nothing is there; refused (``cannot`` why) when it cannot
    be looked at."""
    try:
        return p.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileRefused(f"{_label(p, flag)}: {cannot}: {exc.strerror or exc}") from None


def output_file(path: StrPath, flag: str | None = None, inputs: Iterable[StrPath] = ()
                ) -> Path:
    """``path`` as a regular file to (re)write; raises :class:`FileRefused` when it is an
    input, or exists as anything but a regular file, or its folder cannot be made."""
    p = Path(path)
    refuse_inputs(p, inputs, flag)
    st = _stat(p, flag, "cannot write")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FileRefused(f"{_label(path, flag)}: is {kind_of(st.st_mode)}; isrlab writes "
                          "regular files only: give a file name")
    parent = p.parent
    if parent.exists() and not parent.is_dir():
        raise FileRefused(f"{_label(path, flag)}: {parent} is not a folder")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FileRefused(f"{_label(path, flag)}: cannot create its folder: "
                          f"{exc.strerror or exc}") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise FileRefused(f"{_label(path, flag)}: cannot write: the folder {parent} is not "
                          "writable")
    return p


@contextlib.contextmanager
def _held_lock(path: Path, flag: str | None) -> Iterator[None]:
    """An exclusive, non-blocking ``flock`` on a lock file beside ``path``, removed after.

    The lock file is checked to be the one at its name after locking (a command that
    finished may have removed the file between our open and our lock).
    """
    lock = path.with_name(f"{LOCK_PREFIX}{path.name}")
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise FileRefused(f"{_label(path, flag)}: another isrlab command is writing "
                                  f"this file now (it holds {lock}); wait for it or choose "
                                  "another name") from None
            raise
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def final_name(path: StrPath) -> str:
    """The name a file is written for: ``path``'s own or, for a temporary file of
    :func:`replacing` (``.isrlab-part-XXXXXXXX-seed-1.jsonl.gz``), the final name it ends
    with (``mkstemp``'s random part has no ``-``). A writer that records its file's name (a
    gzip header does) records this one, so the bytes do not depend on the random name."""
    name = Path(path).name
    if name.startswith(PART_PREFIX):
        _random, dash, rest = name[len(PART_PREFIX):].partition("-")
        if dash and rest:
            return rest
    return name


def current_umask() -> int:
    """The process's umask (read by setting it and back: no other way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def replacing(path: StrPath, flag: str | None = None, inputs: Iterable[StrPath] = ()
              ) -> Iterator[Path]:
    """Write ``path`` whole or not at all: yields a temporary path in the same folder to
    write; on a normal exit it is renamed onto ``path``; on an exception it is removed and
    ``path`` is left as it was. Raises :class:`FileRefused` (before anything is written)
    when ``path`` may not be written, or another command is writing it now."""
    final = output_file(path, flag, inputs)
    with _held_lock(final, flag):
        # the final name ends the temporary one, so its suffixes (``.jsonl.gz``) still say
        # what the file is to a writer that looks at them
        fd, name = tempfile.mkstemp(prefix=PART_PREFIX, suffix=f"-{final.name}",
                                    dir=final.parent)
        os.fchmod(fd, 0o666 & ~current_umask())   # as open() would have made it, not mkstemp's 0600
        os.close(fd)
        part = Path(name)
        try:
            yield part
            os.replace(part, final)
        except BaseException:
            with contextlib.suppress(OSError):
                part.unlink()
            raise


def write_bytes(path: StrPath, data: bytes, flag: str | None = None,
                inputs: Iterable[StrPath] = ()) -> None:
    """``path`` replaced whole by ``data`` (see :func:`replacing`)."""
    with replacing(path, flag, inputs) as part:
        part.write_bytes(data)


def write_text(path: StrPath, text: str, flag: str | None = None,
               inputs: Iterable[StrPath] = ()) -> None:
    write_bytes(path, text.encode("utf-8"), flag, inputs)


def claim_folder(path: StrPath, flag: str | None, marker: str, what: str,
                 inputs: Iterable[StrPath] = ()) -> Path:
    """``path`` as a folder this command may write into; raises :class:`FileRefused`.

    Taken when it does not exist (it is made), is empty (but for isrlab's own scratch, part
    and lock entries), or holds ``marker`` (the command's
    own record, which the caller writes when it is missing). ``what`` names the folder's
    kind in the refusal ("a campaign folder"). A folder that *is* an input, or holds one
    of the ``inputs`` directly, is refused too: the command would write over it.
    """
    p = Path(path)
    st = _stat(p, flag, "cannot read")
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise FileRefused(f"{_label(path, flag)}: is {kind_of(st.st_mode)}, not a folder")
    if st is not None:
        try:
            entries = [e.name for e in os.scandir(p)]
        except OSError as exc:
            raise FileRefused(f"{_label(path, flag)}: cannot read: {exc.strerror or exc}"
                              ) from None
        # isrlab's own scratch, part and lock files do not make a folder the user's (a
        # second command may see only the first one's lock before its marker is written)
        foreign = [e for e in entries if not e.startswith(OWN_PREFIXES)]
        if foreign and marker not in entries:
            raise FileRefused(f"{_label(path, flag)}: is a folder that is not empty and is "
                              f"not {what} (it has no {marker}); isrlab will not write into "
                              "it: choose a new or empty folder")
    for source in inputs:
        src = Path(source)
        if _same(p, src) or _same(p, src.parent):
            raise FileRefused(f"{_label(path, flag)}: holds the input {source}; writing "
                              "here could overwrite it: choose another folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
        probe = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=p))
        probe.rmdir()
    except OSError as exc:
        raise FileRefused(f"{_label(path, flag)}: cannot create or write: "
                          f"{exc.strerror or exc}") from None
    return p


def scratch_folder(parent: StrPath) -> Path:
    """A new, empty scratch folder inside ``parent`` (``mkdtemp``: a name nobody else has)."""
    return Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=parent))


def remove_scratch(folder: StrPath) -> None:
    """Remove a scratch folder this command made (and only one: its name has the prefix)."""
    p = Path(folder)
    if not p.name.startswith(SCRATCH_PREFIX):
        raise ValueError(f"{p}: not a scratch folder")
    shutil.rmtree(p, ignore_errors=True)


def remove_stale_scratch(parent: StrPath, marker: str, *, parts: bool = True) -> None:
    """Remove the scratch folders a killed command left in ``parent``: only when ``parent``
    carries ``marker`` (it is the command's own folder), only entries with the prefix; with
    ``parts`` its half-written files too (not while a write of the caller's own is under
    way in ``parent``: :func:`replacing` writes through such a file)."""
    p = Path(parent)
    if not (p / marker).is_file():
        return
    for entry in os.scandir(p):
        if entry.name.startswith(SCRATCH_PREFIX) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        elif (parts and entry.name.startswith(PART_PREFIX)
              and entry.is_file(follow_symlinks=False)):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
