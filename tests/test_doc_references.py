"""The repository is self-contained: every document, file and link it cites is in it.

Scanned: the ``*.py``, ``*.md``, ``*.toml`` and ``*.ipynb`` files under the repository root,
except hidden folders (``.git``, ``.venv``, caches), folders ``.gitignore`` names (``out/``,
``__pycache__/``, ``*.egg-info/``, ...) and ``tests/regressions`` (recorded traces).

* No citation of the team's background notes, which are not in the repository (their names
  are listed in ``OUTSIDE``; this file is the one place allowed to spell them).
* Every repository path mentioned — ``docs/<name>.md``, ``scenarios/<name>.toml``, or any
  file under a top-level folder of the repository (``tests/...py``, ``bench/...py``) — exists.
* Every relative markdown link (``[text](path)``) of a ``.md`` file or of a notebook's
  markdown cells resolves to an existing file (web links and in-page anchors are skipped).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve()
EXTENSIONS = (".py", ".md", ".toml", ".ipynb")
SKIPPED = ("tests/regressions",)

#: Documents that live outside the repository (the team's background notes): a citation of
#: one is a reference no reader of the repository can follow.
#: (their names are spelt in parts, so that this file does not cite them either)
_DOC_A, _DOC_B, _DOC_C, _DOC_D = ("DES" + "IGN", "KAFKA_" + "REFERENCE",
                                       "STACK_" + "NOTES", "STY" + "LE.md")
OUTSIDE = {name: re.compile(rf"\b{re.escape(name)}\b")
           for name in (_DOC_A, _DOC_B, _DOC_C, _DOC_D, "shared/docs")}

#: A repository-relative path: starts a word (not the tail of another path) and ends in a
#: file extension the repository uses.
_PATH_TAIL = r"/[\w./-]*[\w-]\.(?:py|md|toml|ipynb|json|txt|log|jsonl(?:\.gz)?)\b"
#: ``[text](target)``; a target with spaces or nested parentheses is not a link to a file.
_LINK = re.compile(r"\[[^\]\n]*\]\(([^()\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


def _ignored_dir_patterns() -> list[str]:
    """The folder patterns of ``.gitignore`` (lines ending in ``/``): generated, untracked."""
    gitignore = ROOT / ".gitignore"
    if not gitignore.is_file():
        return []
    return [line.strip().rstrip("/") for line in gitignore.read_text().splitlines()
            if line.strip().endswith("/") and not line.startswith("#")]


@cache
def _files() -> tuple[Path, ...]:
    ignored = _ignored_dir_patterns()
    found = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = Path(dirpath).relative_to(ROOT)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".")
            and not any(fnmatch.fnmatch(d, pat) for pat in ignored)
            and (rel / d).as_posix() not in SKIPPED)
        found += [Path(dirpath) / f for f in sorted(filenames) if f.endswith(EXTENSIONS)]
    return tuple(found)


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _lines(path: Path) -> tuple[str, ...]:
    return tuple(_text(path).splitlines())


def _where(path: Path, lineno: int) -> str:
    return f"{path.relative_to(ROOT).as_posix()}:{lineno}"


@cache
def _top_level_folders() -> tuple[str, ...]:
    return tuple(sorted({p.relative_to(ROOT).parts[0] for p in _files()
                         if len(p.relative_to(ROOT).parts) > 1}))


_ANY_OUTSIDE = re.compile("|".join(p.pattern for p in OUTSIDE.values()))


def outside_citations(text: str) -> list[str]:
    """The names of :data:`OUTSIDE` that ``text`` cites."""
    if not _ANY_OUTSIDE.search(text):
        return []
    return [name for name, pattern in OUTSIDE.items() if pattern.search(text)]


@cache
def _path_pattern(folders: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w./-])(?:" + "|".join(map(re.escape, folders)) + r")"
                      + _PATH_TAIL)


def repository_paths(text: str, folders: tuple[str, ...]) -> list[str]:
    """The repository-relative paths under ``folders`` that ``text`` mentions."""
    if not folders:
        return []
    return [m.group(0) for m in _path_pattern(folders).finditer(text)]


def file_links(markdown: str) -> list[str]:
    """The relative file targets of the markdown links in ``markdown`` (code spans, web
    links, mail links and in-page anchors left out; a target's own anchor dropped)."""
    targets = []
    for target in _LINK.findall(_CODE_SPAN.sub("", markdown)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#", 1)[0])
    return targets


def _markdown_lines(path: Path) -> Iterator[tuple[str, str]]:
    """(where, line) of a ``.md`` file's lines outside fenced code, or of a notebook's
    markdown cells."""
    rel = path.relative_to(ROOT).as_posix()
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        for i, cell in enumerate(cells):
            if cell.get("cell_type") != "markdown":
                continue
            source = cell.get("source", [])
            text = "".join(source) if isinstance(source, list) else source
            for n, line in enumerate(text.splitlines(), 1):
                yield f"{rel} cell {i} line {n}", line
        return
    fenced = False
    for n, line in enumerate(_lines(path), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            yield f"{rel}:{n}", line


# --------------------------------------------------------------------------- the checks


def test_the_scan_covers_the_code_the_tests_and_the_docs() -> None:
    rel = {p.relative_to(ROOT).as_posix() for p in _files()}
    assert {"README.md", "docs/anomalies.md", "actors/replica.py", "pyproject.toml",
            "scenarios/default.toml", "docs/notebook.ipynb",
            "tests/test_doc_references.py"} <= rel
    assert not any(r.startswith((".venv/", ".git/", "tests/regressions/")) for r in rel)
    assert {"actors", "docs", "scenarios", "tests"} <= set(_top_level_folders())


def test_the_checks_flag_what_they_should() -> None:
    """Each matcher, on text it must flag and on text it must leave alone."""
    assert outside_citations(f"anomaly names ({_DOC_A} §5)") == [_DOC_A]
    assert outside_citations(f"see {_DOC_B} section 2") == [_DOC_B]
    assert outside_citations(f"measured ({_DOC_C} §3.8), {_DOC_D}") == [_DOC_C, _DOC_D]
    assert outside_citations("Design note. STYLE = {...}; a designed behaviour") == []
    assert repository_paths("see `docs/x.md`, scenarios/s1-a.toml and kafka/docs/y.md",
                            ("docs", "scenarios")) == ["docs/x.md", "scenarios/s1-a.toml"]
    assert repository_paths("scenarios/*.toml, DIR/traces/a.jsonl, docs/design.html",
                            ("docs", "scenarios", "traces")) == []
    assert file_links("[a](docs/a.md) [b](https://x.org/y.md) [c](#top) `[d](e.md)` "
                      "[f](g.md#sec)") == ["docs/a.md", "g.md"]


def test_nothing_cites_documents_outside_the_repository() -> None:
    found = [f"{_where(path, n)}: {', '.join(names)}: {line.strip()[:120]}"
             for path in _files() if path != SELF and outside_citations(_text(path))
             for n, line in enumerate(_lines(path), 1)
             if (names := outside_citations(line))]
    assert not found, (
        "cites a document that is not in the repository (point it at a file in docs/ "
        "instead):\n" + "\n".join(found))


def test_every_repository_path_mentioned_exists() -> None:
    folders = _top_level_folders()
    found = [f"{_where(path, n)}: {p}"
             for path in _files()
             if path != SELF and not all((ROOT / p).exists()
                                         for p in repository_paths(_text(path), folders))
             for n, line in enumerate(_lines(path), 1)
             for p in repository_paths(line, folders)
             if not (ROOT / p).exists()]
    assert not found, "mentions a repository file that does not exist:\n" + "\n".join(found)


def test_every_relative_markdown_link_resolves() -> None:
    found = [f"{where}: {target}"
             for path in _files() if path.suffix in (".md", ".ipynb")
             for where, line in _markdown_lines(path)
             for target in file_links(line)
             if not (path.parent / target).exists()]
    assert not found, "a markdown link points nowhere:\n" + "\n".join(found)
