"""The runtime ratio of bench/runtime.py in instructions instead of CPU seconds.

    python bench/runtime_instructions.py        (needs valgrind; about 3 minutes)

CPU time on a shared two-core VM wobbles by 20 % and more with whatever else runs; an
instruction count from ``valgrind --tool=callgrind`` is the same whatever the machine is
doing. Each side runs twice in a child process under callgrind, at two sizes, and the
difference of the totals divided by the difference of the messages is the steady-state
cost per message (start-up and imports cancel out):

* floor: the same Trio memory-channel hop with msgpack encode and decode of a 10-field
  message as bench/runtime.py, 10,000 and 60,000 messages;
* emulator: scenarios/reference.toml for 1 and 4 simulated seconds (seed 1), per delivered
  message (network frames and timer messages), and per network frame.

Instructions are not seconds: what the kernel does (Trio's epoll call every scheduling
round) counts zero here, and the instructions per cycle differ between a tight loop and
the emulator. The figure is a stable companion to bench/runtime.py, not a replacement.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

FLOOR_SIZES = (10_000, 60_000)
EMULATOR_SECONDS = (1.0, 4.0)


def _child_floor(n: int) -> None:
    import trio
    from runtime import floor_hops  # bench/runtime.py: the same floor

    trio.run(floor_hops, n)
    print(f"messages {n} frames {n}")


def _child_emulator(seconds: float) -> None:
    from emulator.cluster import run
    from emulator.scenario import load
    from traces.writer import TraceWriter

    sc = load("reference", [f"duration_s={seconds}"])
    res = run(sc, 1, None, writer=TraceWriter(None, buffer=io.BytesIO()))
    print(f"messages {res.delivered} frames {res.frames}")


def _measure(kind: str, size: str) -> tuple[int, int, int]:
    """(instructions, messages, frames) of one child run under callgrind."""
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
           sys.executable, __file__, "--child", kind, size]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    ir = re.search(r"Collected : (\d+)", out.stderr)
    counts = re.search(r"messages (\d+) frames (\d+)", out.stdout)
    if ir is None or counts is None:
        raise SystemExit(f"callgrind run {kind} {size} printed no totals:\n{out.stderr[-2000:]}")
    return int(ir.group(1)), int(counts.group(1)), int(counts.group(2))


def _steady(kind: str, sizes: tuple[float, ...]) -> tuple[float, float, int]:
    (i0, m0, f0), (i1, m1, f1) = (_measure(kind, str(s)) for s in sizes)
    return (i1 - i0) / (m1 - m0), (i1 - i0) / max(1, f1 - f0), m1 - m0


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        if sys.argv[2] == "floor":
            _child_floor(int(sys.argv[3]))
        else:
            _child_emulator(float(sys.argv[3]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("bench/runtime_instructions.py: valgrind is not installed "
                         "(apt-get install valgrind)")
    floor, _, n = _steady("floor", FLOOR_SIZES)
    print(f"(a) floor: {floor:,.0f} instructions per message (over {n:,} messages)")
    per, per_frame, n = _steady("emulator", EMULATOR_SECONDS)
    print(f"(b) emulator on reference: {per:,.0f} instructions per delivered message, "
          f"{per_frame:,.0f} per network frame (over {n:,} deliveries)")
    print(f"ratio emulator/floor: {per / floor:.2f}x per delivered message, "
          f"{per_frame / floor:.2f}x per network frame")


if __name__ == "__main__":
    main()
