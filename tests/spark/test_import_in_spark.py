"""``isrlab import`` as a Spark job (issue 22 item 4): the same parse in Spark's workers, the
same events written, byte for byte, as the in-process import of the same files."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from spark_analysis.import_job import import_with_spark
from traces.checker import check_file
from traces.logs.importer import ImportError_, import_logs

pytestmark = pytest.mark.spark

LOGS = Path(__file__).resolve().parents[1] / "data" / "kafka_logs"


def _corpus(tmp_path: Path) -> Path:
    """The real excerpts, some gzip, some under rotated names, in nested folders, plus a
    file that is not a log (no ``.log`` in its name)."""
    root = tmp_path / "logs"
    for i, f in enumerate(sorted(LOGS.glob("*.log"))):
        sub = root / f"broker-{i % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        if i % 4 == 1:
            (sub / f"{f.name}.gz").write_bytes(gzip.compress(f.read_bytes(), mtime=0))
        elif i % 4 == 2:
            shutil.copy(f, sub / f"{f.stem}.log.2024-05-01-10")
        else:
            shutil.copy(f, sub / f.name)
    (root / "README.txt").write_text("not a log\n")
    return root


def test_spark_import_writes_the_in_process_import_events_byte_for_byte(
        spark: SparkSession, tmp_path: Path) -> None:
    root = _corpus(tmp_path)
    here = import_logs([str(root)], str(tmp_path / "here.jsonl"))
    there = import_with_spark(spark, [str(root)], str(tmp_path / "there.jsonl.gz"))
    a = (tmp_path / "here.jsonl").read_bytes().splitlines()
    with gzip.open(tmp_path / "there.jsonl.gz") as fh:
        b = fh.read().splitlines()
    assert len(a) == len(b) > 40
    assert a[1:-1] == b[1:-1]        # every event, its seq, time, fields and crc
    assert (there.records, there.parsed, there.events, there.unframed, there.continuation,
            there.unparsed_replication) == (here.records, here.parsed, here.events,
                                            here.unframed, here.continuation,
                                            here.unparsed_replication)
    assert there.by_kind == here.by_kind and len(there.samples) == len(here.samples)
    assert len(there.files) == len(here.files) == len(list(LOGS.glob("*.log")))
    assert all(not f.startswith("file:") and Path(f).is_absolute() for f in there.files)
    assert check_file(str(tmp_path / "there.jsonl.gz")).status == "ok"


def test_spark_import_bad_input_is_one_line_and_nothing_is_overwritten(
        spark: SparkSession, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(LOGS / "22-librdkafka948-isr-shrink-zkversion-0102.log", logs / "a.log")
    (logs / "b.log").write_bytes(b"\x00\x01\x02" * 100)
    kept = tmp_path / "kept.jsonl"
    kept.write_text("precious")
    for paths, out, words in (([str(logs)], tmp_path / "x.jsonl", "binary"),
                              ([str(tmp_path / "nope")], tmp_path / "y.jsonl", "nope"),
                              ([str(logs / "a.log")], kept, "exists")):
        with pytest.raises(ImportError_) as err:
            import_with_spark(spark, paths, str(out))
        assert words in str(err.value) and "\n" not in str(err.value)
    assert kept.read_text() == "precious"


def test_the_cli_runs_the_spark_job_and_writes_into_an_out_folder(
        spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cli.import_logs import main
    root = _corpus(tmp_path)
    folder = tmp_path / "traces"
    folder.mkdir()
    assert main([str(root), "--engine", "spark", "--cluster", "prod", "--out", str(folder)]) == 0
    assert f"imported {len(list(LOGS.glob('*.log')))} file(s)" in capsys.readouterr().out
    assert check_file(str(folder / "prod.jsonl.gz")).status == "ok"
    # written once: a second import into the same folder refuses to overwrite it
    assert main([str(root), "--engine", "spark", "--cluster", "prod", "--out", str(folder)]) == 2
    assert "exists" in capsys.readouterr().err
