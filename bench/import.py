"""``isrlab import`` throughput: lines per second on a corpus built from real log lines.

The corpus expands the real excerpts of ``tests/data/kafka_logs`` (every line kept as it
was pasted, comments aside): copy ``k`` of the excerpts has its timestamps moved ``k``
minutes later and its partition numbers shifted by ``k``, so the importer sees many
partitions and a long time span, with the real mix of recognised and unrecognised lines.
Prints lines read, records, events, CPU seconds and lines per second. Run:
``python bench/import.py [LINES]`` (default 1,000,000).
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


def main() -> None:
    wanted = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
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
