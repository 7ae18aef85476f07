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


def _install(tmp_path: Path, name: str) -> Path:
    """Another install's PySpark class path: a ``jars`` folder with one jar."""
    jars = tmp_path / name / "jars"
    jars.mkdir(parents=True)
    (jars / "spark-core.jar").write_bytes(b"\0" * 100)
    return jars


def _made_for(jars: Path | None, key: str) -> Path:
    """An archive of another key, owned by the install at ``jars`` (None: no owner record,
    as archives were made before owner records)."""
    path = C.cache_dir() / f"driver-classes-{key}.jsa"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * 4096)
    C.size_record(path).write_text("4096\n")
    if jars is not None:
        C.owner_record(path).write_text(C.ownership(jars))
    return path


def test_making_an_archive_removes_only_the_archives_no_install_maps_again(
        tmp_path: Path) -> None:
    """The cache is the user's, shared by every checkout: a second clone's ``make demo`` used
    to delete the first clone's good archive (its class path differs, so its key does),
    and each then made its own again in turn. Now only what nothing will map goes."""
    new = _made()
    here = _made(f"{OPTIONS} -Xmx2g")   # this install, other options: never mapped again
    C.owner_record(here).write_text(C.ownership())
    live = _made_for(_install(tmp_path, "clone"), "0" * 20)       # another checkout's
    gone = _made_for(tmp_path / "deleted" / "jars", "1" * 20)     # its install removed
    changed_jars = _install(tmp_path, "upgraded")
    changed = _made_for(changed_jars, "2" * 20)
    (changed_jars / "spark-core.jar").write_bytes(b"\0" * 200)    # Spark reinstalled there
    legacy = _made_for(None, "3" * 20)                            # names no install
    stale = set(C.stale_archives(new))
    for path in (here, gone, changed):
        assert {path, C.size_record(path), C.owner_record(path)} <= stale
    assert {legacy, C.size_record(legacy)} <= stale
    assert not {live, C.size_record(live), C.owner_record(live), new} & stale
    assert len(stale) == 11


def test_an_archive_made_before_owner_records_is_given_one_when_asked_for_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``make demo`` on a checkout whose archive is already there names its install, so
    that another checkout's maker keeps it."""
    from cli.class_archive import main
    from spark_analysis.session import QUICK_JVM_OPTIONS
    path = _made(QUICK_JVM_OPTIONS)
    trace = tmp_path / "trace.jsonl"
    trace.write_text("{}\n")
    assert main([str(trace)]) == 0
    assert "already made" in capsys.readouterr().out
    assert C.owner_record(path).read_text() == C.ownership()
    assert C.ownership().splitlines()[0].endswith("/pyspark/jars")
