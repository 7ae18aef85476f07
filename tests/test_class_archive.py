"""The driver JVM's class archive (``spark_analysis.class_archive``): which archive a JVM
maps, and when none. Making one takes two analyses (``cli.class_archive``; ``make demo``);
these hold the choice, with files standing in for archives."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_analysis import class_archive as C

OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for env in (C.DUMP_ENV, C.USE_ENV, C.CHECK_ENV):
        monkeypatch.delenv(env, raising=False)


def _made(options: str = OPTIONS, size: int = 4096) -> Path:
    path = C.archive_path(options)
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * size)
    C.size_record(path).write_text(f"{size}\n")
    return path


def test_without_an_archive_the_jvm_options_are_unchanged() -> None:
    assert C.with_archive(OPTIONS) == OPTIONS


def test_a_checked_archive_is_mapped_with_the_jvm_output_kept_off_stdout() -> None:
    path = _made()
    options = C.with_archive(OPTIONS)
    assert options.startswith(OPTIONS)
    assert f"-XX:SharedArchiveFile={path}" in options
    assert "-Xshare:auto" in options and "-Xlog:all=warning:stderr" in options
    assert "-XX:+DisplayVMOutputToStderr" in options


def test_an_archive_cut_short_or_never_checked_is_not_mapped() -> None:
    path = _made()
    with path.open("r+b") as f:
        f.truncate(1000)   # a JDK 17 JVM crashes on it (SIGBUS) rather than falling back
    assert C.with_archive(OPTIONS) == OPTIONS
    C.size_record(path).unlink()
    path.write_bytes(b"\0" * 4096)
    assert C.with_archive(OPTIONS) == OPTIONS


def test_other_jvm_options_look_for_another_archive() -> None:
    _made()
    other = f"{OPTIONS} -Xmx2g"
    assert C.archive_path(other) != C.archive_path(OPTIONS)
    assert C.with_archive(other) == other


def test_a_baseline_without_the_archive_and_the_makers_dump_and_check(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _made()
    monkeypatch.setenv(C.USE_ENV, "off")
    assert C.with_archive(OPTIONS) == OPTIONS
    monkeypatch.setenv(C.DUMP_ENV, str(tmp_path / "my dir" / "new.jsa"))
    assert f'-XX:ArchiveClassesAtExit="{tmp_path}/my dir/new.jsa"' in C.with_archive(OPTIONS)
    monkeypatch.delenv(C.DUMP_ENV)
    monkeypatch.setenv(C.CHECK_ENV, str(tmp_path / "new.jsa"))
    assert f"-XX:SharedArchiveFile={tmp_path}/new.jsa" in C.with_archive(OPTIONS)


def test_the_archive_lives_in_the_users_cache(tmp_path: Path) -> None:
    path = C.archive_path(OPTIONS)
    assert path is not None and path.parent == tmp_path / "cache" / "isrlab"
    assert path.name.startswith("driver-classes-") and path.suffix == ".jsa"
