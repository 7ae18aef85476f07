"""``isrlab import`` throughput: lines per second on a corpus built from real log lines.

The corpus expands the real excerpts of ``tests/data/kafka_logs`` (every line kept as it
was pasted, comments aside): copy ``k`` of the excerpts has its timestamps moved ``k``
minutes later and its partition numbers shifted by ``k``, so the importer sees many
partitions and a long time span, with the real mix of recognised and unrecognised lines.
Prints lines read, records, events, CPU seconds and lines per second. Run:
``python bench/import.py [LINES]`` (default 1,000,000).

``python bench/import.py [LINES] --spark`` writes the corpus as 8 files (Spark parses one
file per task) and times the in-process import and the Spark job (``local[*]``) on them, the
session's start reported apart.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from traces.logs.importer import import_logs  # noqa: E402

LOGS = Path(__file__).resolve().parent.parent / "tests" / "data" / "kafka_logs"
TS = re.compile(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}),(\d{3})")
PART = re.compile(r"(\b[A-Za-z_][\w.]*-)(\d+)\b")   # topic-partition, not a date


def corpus(lines_wanted: int, out: Path) -> int:
    base = [line for f in sorted(LOGS.glob("*.log"))
            for line in f.read_text(errors="replace").splitlines()
            if not line.startswith("#")]
    written = 0
    with out.open("w") as fh:
        k = 0
        while written < lines_wanted:
            shift = dt.timedelta(minutes=k)

            def moved(m: re.Match[str], shift: dt.timedelta = shift) -> str:
                t = dt.datetime.fromisoformat(f"{m.group(1)} {m.group(2)}") + shift
                return f"{t:%Y-%m-%d %H:%M:%S},{m.group(3)}"

            def part(m: re.Match[str], k: int = k) -> str:
                return f"{m.group(1)}{int(m.group(2)) + k % 50}"

            for line in base:
                fh.write(PART.sub(part, TS.sub(moved, line)) + "\n")
                written += 1
                if written >= lines_wanted:
                    break
            k += 1
    return written


def spark_bench(wanted: int) -> None:
    from spark_analysis.import_job import import_with_spark
    from spark_analysis.session import build_session
    with tempfile.TemporaryDirectory(prefix="isrlab-import-bench-") as tmp:
        folder = Path(tmp) / "logs"
        folder.mkdir()
        whole = Path(tmp) / "all.log"
        n = corpus(wanted, whole)
        lines = whole.read_text().splitlines(keepends=True)
        per = -(-len(lines) // 8)
        for i in range(8):
            (folder / f"server.log.{i}").write_text("".join(lines[i * per:(i + 1) * per]))
        size = whole.stat().st_size
        whole.unlink()
        t0 = time.perf_counter()
        here = import_logs([str(folder)], str(Path(tmp) / "here.jsonl.gz"), broker=1)
        wall_here = time.perf_counter() - t0
        t0 = time.perf_counter()
        spark = build_session()
        start = time.perf_counter() - t0
        t0 = time.perf_counter()
        there = import_with_spark(spark, [str(folder)], str(Path(tmp) / "there.jsonl.gz"),
                                  broker=1)
        wall_there = time.perf_counter() - t0
        spark.stop()
    assert there.events == here.events
    print(f"corpus: {n:,} lines ({size / 1e6:.1f} MB) in 8 files, {here.events:,} events")
    print(f"in process: {wall_here:.1f} s, {n / wall_here:,.0f} lines/s")
    print(f"Spark local[*]: {wall_there:.1f} s, {n / wall_there:,.0f} lines/s "
          f"(session start {start:.1f} s apart)")


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    wanted = int(args[0]) if args else 1_000_000
    if "--spark" in sys.argv:
        spark_bench(wanted)
        return
    with tempfile.TemporaryDirectory(prefix="isrlab-import-bench-") as tmp:
        log = Path(tmp) / "server.log"
        n = corpus(wanted, log)
        size = log.stat().st_size
        c0, t0 = time.process_time(), time.perf_counter()
        res = import_logs([str(log)], str(Path(tmp) / "t.jsonl.gz"), broker=1)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    print(f"corpus: {n:,} lines ({size / 1e6:.1f} MB) expanded from the real excerpts of "
          f"tests/data/kafka_logs")
    print(f"import: {res.records:,} records, {res.parsed:,} recognised, {res.events:,} events, "
          f"{res.unparsed_replication:,} replication-looking records not understood")
    print(f"{cpu:.1f} CPU s, {wall:.1f} wall s: {n / wall:,.0f} lines/s "
          f"({size / 1e6 / wall:.1f} MB/s)")


if __name__ == "__main__":
    main()
