"""Bad input: corrupt lines, a truncated gzip, a trace of another schema version (issue #6).

One ``isrlab analyze --json`` over a folder holding one good trace and one of each kind of
damage; each test checks one of them: the message on stderr names the file and line, the
JSON summary says what was skipped, and the valid part is analysed (counts equal to the
checker's over the lines ``traces.reader.iter_events_lenient`` accepts).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import Run
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from spark_analysis.load import HOT_EVENTS, load_traces
from traces.checker import ANOMALIES, check_events
from traces.reader import iter_events_lenient

pytestmark = pytest.mark.spark


def _lenient_counts(path: Path) -> dict[str, int]:
    return check_events(list(iter_events_lenient(path))).anomalies


def test_bad_input_exits_2_and_the_good_trace_is_analysed_as_the_checker_does(bad_run: Run) -> None:
    from traces.checker import check_file

    assert bad_run.code == 2
    ok = str(bad_run.paths["ok"])
    assert bad_run.report["per_trace"][ok]["anomalies"] == check_file(ok).anomalies


def test_corrupt_lines_are_named_by_file_and_line_and_the_rest_is_analysed(bad_run: Run) -> None:
    damaged = str(bad_run.paths["damaged"])
    assert f"{damaged}:3: not a schema-1 JSON object" in bad_run.stderr
    assert f"{damaged}:5: crc: missing or does not match the line" in bad_run.stderr
    bad = [(b["trace"], b["line"], b["action"]) for b in bad_run.report["bad_lines"]]
    assert (damaged, 3, "line skipped") in bad and (damaged, 5, "line skipped") in bad
    got = bad_run.report["per_trace"][damaged]["anomalies"]
    assert got == _lenient_counts(bad_run.paths["damaged"])


def test_truncated_gzip_is_named_and_the_lines_before_the_cut_are_analysed(bad_run: Run) -> None:
    cut = bad_run.paths["cut"]
    problems = [b for b in bad_run.report["bad_lines"] if b["trace"] == str(cut)]
    tail = [b for b in problems if b["action"] == "tail lost"]
    assert len(tail) == 1 and "gzip stream is cut off" in tail[0]["problem"]
    with gzip.open(cut, "rb") as fh:
        readable = []
        with pytest.raises(EOFError):
            for line in fh:
                readable.append(line)
    complete = sum(1 for line in readable if line.endswith(b"\n"))
    assert tail[0]["line"] == complete  # the last complete line before the cut
    assert f"{cut}:{complete}: the gzip stream is cut off" in bad_run.stderr
    assert bad_run.report["per_trace"][str(cut)]["events"] == complete
    assert bad_run.report["per_trace"][str(cut)]["anomalies"] == _lenient_counts(cut)


def test_other_schema_version_is_skipped_with_a_message_naming_file_and_line(bad_run: Run) -> None:
    schema2 = str(bad_run.paths["schema2"])
    assert f"{schema2}:1: trace schema 2, this isrlab reads schema 1" in bad_run.stderr
    skipped = [b for b in bad_run.report["bad_lines"] if b["trace"] == schema2]
    assert [(b["line"], b["action"]) for b in skipped] == [(1, "trace skipped")]
    assert schema2 not in bad_run.report["per_trace"]
    assert bad_run.report["skipped_traces"] == [schema2]


def test_load_reports_the_same_problems_and_keeps_only_good_rows(spark: SparkSession, bad_run: Run
                                                                 ) -> None:
    loaded = load_traces(spark, [str(bad_run.folder)])
    try:
        want = [(str(bad_run.paths["ok"]), len(bad_run.paths["ok"].read_bytes().splitlines())),
                (str(bad_run.paths["damaged"]),
                 len(bad_run.paths["damaged"].read_bytes().splitlines()) - 2),
                (str(bad_run.paths["cut"]),
                 bad_run.report["per_trace"][str(bad_run.paths["cut"])]["events"])]
        assertDataFrameEqual(loaded.traces.select("trace", "events"),
                             spark.createDataFrame(want, "trace string, events long"),
                             checkRowOrder=False)
        # the events kept are the good lines of the hot kinds, as the lenient reader sees them
        hot = [(str(bad_run.paths[k]), sum(1 for e in iter_events_lenient(bad_run.paths[k])
                                           if e["event"] in HOT_EVENTS))
               for k in ("ok", "damaged", "cut")]
        assertDataFrameEqual(loaded.named(loaded.events).groupBy("trace").count(),
                             spark.createDataFrame(hot, "trace string, count long"),
                             checkRowOrder=False)
        assert [str(p) for p in loaded.problems] == [
            f"{b['trace']}:{b['line']}: {b['problem']} ({b['action']})"
            for b in bad_run.report["bad_lines"]]
        assert set(ANOMALIES) == set(bad_run.report["anomalies"])
    finally:
        loaded.unpersist()


def test_a_misnamed_trace_read_by_the_jvm_is_skipped_saying_why(spark: SparkSession,
                                                                 bad_run: Run, tmp_path: Path
                                                                 ) -> None:
    """Issue 23, class 8: URIs (and files the careful path reads) go through Spark's text
    source, which decompresses by the file's name: gzip bytes named ``.jsonl`` and plain text
    named ``.gz`` are skipped with the reason and the fix, found by the first two bytes read
    through Hadoop's FileSystem (here its ``file://`` one)."""
    from spark_analysis.load import _misnamed
    text = bad_run.paths["ok"].read_bytes()
    gz_named_plain = tmp_path / "a.jsonl"
    gz_named_plain.write_bytes(gzip.compress(text))
    plain_named_gz = tmp_path / "b.jsonl.gz"
    plain_named_gz.write_bytes(text)
    loaded = load_traces(spark, [str(gz_named_plain), str(plain_named_gz),
                                 str(bad_run.paths["ok"])], native=False)
    try:
        problems = {p.trace: p.problem for p in loaded.problems}
        assert "bytes are gzip but its name does not end in .gz" in problems[
            str(gz_named_plain)]
        assert "name ends in .gz but its bytes are not gzip" in problems[str(plain_named_gz)]
        assert [r["trace"] for r in loaded.traces.collect()] == [str(bad_run.paths["ok"])]
    finally:
        loaded.unpersist()
    assert "rename it *.jsonl.gz" in (_misnamed(spark, gz_named_plain.as_uri()) or "")
    assert _misnamed(spark, bad_run.paths["ok"].as_uri()) is None


def _doctored(ok: Path, folder: Path) -> dict[str, tuple[Path, int]]:
    """Copies of a good trace with whole lines deleted, swapped, duplicated, appended after
    run_end or moved (every line keeps its own good crc), and the line each is wrong at."""
    lines = ok.read_bytes().splitlines(keepends=True)
    n = len(lines)
    variants = {
        "deleted": (lines[:10] + lines[11:], 11),
        "swapped": (lines[:10] + [lines[11], lines[10]] + lines[12:], 11),
        "duplicated": (lines[:11] + [lines[10]] + lines[11:], 12),
        "appended": (lines + [lines[10]], n + 1),
        "moved": (lines[:10] + lines[11:n - 2] + [lines[10]] + lines[n - 2:], 11),
    }
    folder.mkdir()
    out = {}
    for name, (body, at) in variants.items():
        path = folder / f"{name}.jsonl"
        path.write_bytes(b"".join(body))
        out[name] = (path, at)
    return out


@pytest.mark.parametrize("how", ["native", "careful", "jvm"])
def test_doctored_traces_are_refused_as_check_refuses_them(spark: SparkSession, bad_run: Run,
                                                           tmp_path: Path, how: str) -> None:
    """Issue 23, class 1: lines deleted, swapped, duplicated, appended or moved keep their
    crcs; check refuses such a file (seq, nothing after run_end) and so does every path of
    analyze's load — the native scan, ``--careful`` and the JVM's (URIs) — naming the line."""
    from traces.checker import check_file
    from traces.reader import TraceError
    doctored = _doctored(bad_run.paths["ok"], tmp_path / "doctored")
    for path, _at in doctored.values():
        with pytest.raises(TraceError):
            check_file(path)
    loaded = load_traces(spark, [str(tmp_path / "doctored"), str(bad_run.paths["ok"])],
                         careful=how == "careful", native=how != "jvm")
    try:
        skipped = {p.trace: p for p in loaded.problems if p.action == "trace skipped"}
        for name, (path, at) in doctored.items():
            problem = skipped[str(path.resolve())]
            assert problem.line == at, (name, problem)
        assert [r["trace"] for r in loaded.traces.collect()] == [str(bad_run.paths["ok"])]
    finally:
        loaded.unpersist()


def _converted(ok: Path, folder: Path) -> dict[str, tuple[Path, int, str]]:
    """Copies of a good trace as an editor or a transfer leaves them — a UTF-8 BOM before
    line 1, CR LF line endings (every line, or from line 3 on) — and one whose line 2 is
    damaged into 65 MiB (gzip, small on disk); with the line each is refused at and the
    words why."""
    text = ok.read_bytes()
    lines = text.splitlines(keepends=True)
    folder.mkdir()
    out = {}
    for name, data, at, words in (
            ("bom", b"\xef\xbb\xbf" + text, 1, "byte-order mark"),
            ("crlf", text.replace(b"\n", b"\r\n"), 1, "CR LF"),
            ("crlf-from-3", b"".join(lines[:2]) + b"".join(lines[2:]).replace(b"\n", b"\r\n"),
             3, "CR LF"),
            ("long", gzip.compress(lines[0] + b"x" * ((65 << 20) + 1) + b"\n"
                                   + b"".join(lines[2:]), compresslevel=1), 2, "64 MiB")):
        path = folder / (f"{name}.jsonl.gz" if name == "long" else f"{name}.jsonl")
        path.write_bytes(data)
        out[name] = (path, at, words)
    return out


@pytest.mark.parametrize("how", ["native", "careful", "jvm"])
def test_a_bom_crlf_or_overlong_line_is_refused_as_check_refuses_it(
        spark: SparkSession, bad_run: Run, tmp_path: Path, how: str) -> None:
    """Issue 47, class 4 (and 2): check refused a trace with a BOM or CR LF endings where
    analyze counted it. One rule now: both refuse the trace naming its line (analyze: trace
    skipped, so exit 2), and a line past 64 MiB is refused the same way, read in pieces —
    on the native scan, on ``--careful`` and on the JVM's path (URIs; there Spark's reader
    skips the overlong line, found as the line missing at its place, and Hadoop's line
    reader drops a BOM before Spark sees it: the one difference, URIs only)."""
    from traces.checker import check_file
    from traces.reader import TraceError
    converted = _converted(bad_run.paths["ok"], tmp_path / "converted")
    for path, at, words in converted.values():
        with pytest.raises(TraceError) as refused:
            check_file(path)
        assert refused.value.line == at and words in str(refused.value)
    loaded = load_traces(spark, [str(tmp_path / "converted"), str(bad_run.paths["ok"])],
                         careful=how == "careful", native=how != "jvm")
    try:
        skipped = {p.trace: p for p in loaded.problems if p.action == "trace skipped"}
        for name, (path, at, words) in converted.items():
            if how == "jvm" and name == "bom":
                continue   # Hadoop's line reader drops a BOM: a URI's is not seen (README)
            problem = skipped[str(path.resolve())]
            assert problem.line == at, (name, problem)
            if how != "jvm" or name != "long":
                assert words in problem.problem, (name, problem)
        analysed = [r["trace"] for r in loaded.traces.collect()]
        assert str(bad_run.paths["ok"]) in analysed
        assert len(analysed) == (2 if how == "jvm" else 1)
    finally:
        loaded.unpersist()


def test_the_cache_notices_a_trace_changed_in_place_to_the_same_size_and_mtime(
        spark: SparkSession, bad_run: Run, tmp_path: Path) -> None:
    """Issue 47, class 4: ``analyze --cache`` keyed its copy by the inputs' names, sizes and
    mtimes, so a trace edited in place to the same size and mtime got the old verdict. The
    key is now the content's SHA-256: the edited trace is read again (its altered line
    found), and the cache folder is the cache's own (``.isrlab-cache``)."""
    trace = tmp_path / "t.jsonl"
    trace.write_bytes(bad_run.paths["ok"].read_bytes())
    cache = tmp_path / "cache"
    first = load_traces(spark, [str(trace)], cache_dir=str(cache))
    first.unpersist()
    assert first.problems == [] and (cache / ".isrlab-cache").is_file()
    st = trace.stat()
    data = trace.read_bytes()
    at = data.index(b'"ts_us":', len(data) // 2) + len(b'"ts_us":')
    digit = data[at:at + 1]
    trace.write_bytes(data[:at] + (b"1" if digit != b"1" else b"2") + data[at + 1:])
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert trace.stat().st_size == st.st_size and trace.stat().st_mtime_ns == st.st_mtime_ns
    second = load_traces(spark, [str(trace)], cache_dir=str(cache))
    second.unpersist()
    assert [p.problem for p in second.problems] == [
        "crc: missing or does not match the line"]
    assert len(list(cache.glob("traces-*/meta.json"))) == 2


def test_analyze_out_takes_its_own_folder_again_and_nothing_else(bad_run: Run,
                                                                 tmp_path: Path) -> None:
    """Issue 47, class 6: ``--out`` is new, empty or an analysis folder (``analysis.json``,
    written by analyze): a second analysis into the first one's folder replaces its
    datasets; a folder of the user's is refused (tests/test_hostile_input_traces.py)."""
    from cli.analyze import main
    marker = json.loads((bad_run.out / "analysis.json").read_text())
    assert marker["complete"] is True and marker["exit"] == bad_run.code
    again = tmp_path / "analysis"
    shutil.copytree(bad_run.out, again)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(bad_run.paths["ok"]), "--json", "--out", str(again)])
    assert code == 0, err.getvalue()
    assert json.loads(out.getvalue())["traces"] == 1
    assert json.loads((again / "analysis.json").read_text())["inputs"] == [
        str(bad_run.paths["ok"])]
    assert not [p for p in again.iterdir() if p.name.startswith(".isrlab-")]
