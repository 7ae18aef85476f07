"""Runtime cost: the floor (Trio hop + msgpack) against the emulator per delivered message.

(a) floor: one Trio memory-channel hop between two tasks with msgpack encode and decode of
    a 10-field message; (b) the emulator on scenarios/reference.toml (3 brokers, 6
    partitions, RF 3, 2,000 records/s, one consumer group, 60 simulated s, random faults).
Prints both, their ratio, and simulated seconds per wall second; then (c) the same run
with message tracing (``--trace-messages``) and its slowdown factor (skip it with
``--no-messages``; ``--set KEY=VALUE`` changes the reference as ``isrlab run`` does).
Run: make bench

A delivered message is one item taken from an actor's inbox (a Trio memory-channel hop):
a network frame (msgpack, checksummed) or a timer message (in-process, no msgpack; every
request's timeout, fetch backoff, linger and the producer's workload clock are timers).
The split is printed, and the cost per network frame alone too.

Costs are CPU seconds of this process (``time.process_time``), so a busy machine (other
jobs on the two cores) does not distort the ratio; wall time is printed beside them.
"""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import msgpack
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from emulator.cluster import run  # noqa: E402
from emulator.scenario import load  # noqa: E402
from traces.writer import TraceWriter  # noqa: E402

N = 200_000


async def floor_hops(n: int) -> None:
    """The floor: ``n`` hops of a 10-field msgpack message between two Trio tasks."""
    send, recv = trio.open_memory_channel[bytes](0)
    packer = msgpack.Packer()
    msg = {"topic": "orders", "partition": 3, "replica": 2, "offset": 12345, "epoch": 7,
           "hw": 12000, "leo": 12400, "lso": 0, "corr": 99, "error": "NONE"}
    done = trio.Event()

    async def consumer() -> None:
        for _ in range(n):
            msgpack.unpackb(await recv.receive())
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer)
        for _ in range(n):
            await send.send(packer.pack(msg))
        await done.wait()


def _overrides(argv: list[str]) -> list[str]:
    """``--set KEY=VALUE`` (repeatable), as ``isrlab run`` takes them: e.g.
    ``--set cluster.controller_quorum=0`` for the reference with the single controller."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--set"]


async def _floor() -> float:
    t0 = time.process_time()
    await floor_hops(N)
    return (time.process_time() - t0) / N


def main() -> None:
    floor = min(trio.run(_floor) for _ in range(3))
    print(f"(a) floor: Trio hop + msgpack encode/decode: {floor * 1e6:.2f} us/message "
          f"({1 / floor:,.0f} msg/s)")
    sc = load("reference", _overrides(sys.argv[1:]))
    buf = io.BytesIO()
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = run(sc, 1, None, writer=TraceWriter(None, buffer=buf))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    per = cpu / max(1, res.delivered)
    timers = res.delivered - res.frames
    per_frame = cpu / max(1, res.frames)
    print(f"(b) emulator on reference: {res.delivered:,} messages delivered ({res.frames:,} "
          f"network frames, {timers:,} timer messages), {res.events:,} trace events, "
          f"{res.sim_seconds:.1f} simulated s in {wall:.1f} wall s ({cpu:.1f} CPU s)")
    print(f"    {per * 1e6:.2f} us per delivered message ({res.delivered / wall:,.0f} msg/s), "
          f"all costs included (protocol, tracing)")
    print(f"ratio emulator/floor: {per / floor:.2f}x (issue 51's target: <= 3.0x, CPU time)")
    print(f"    counting network frames only (timers' cost charged to them): "
          f"{per_frame * 1e6:.2f} us per frame, {per_frame / floor:.2f}x the floor")
    print(f"simulated seconds per wall second: {res.sim_seconds / wall:.2f} (CPU: "
          f"{res.sim_seconds / cpu:.2f}; issue 18's >= 10 is retired: the floor bounds it)")
    # What a campaign's seeds per hour follow: CPU per simulated second at the reference's
    # fixed traffic, and the same in floors (so the machine's speed cancels)
    print(f"    {cpu / res.sim_seconds:.2f} CPU s per simulated s = "
          f"{cpu / res.sim_seconds / floor:,.0f} floors")
    # How fast the reference could run: each delivered message costs at least the floor,
    # and at most 3x it under issue 51's ratio.
    rate = res.delivered / max(res.sim_seconds, 1e-9)
    print(f"    {rate:,.0f} messages per simulated second ({res.frames / res.sim_seconds:,.0f} "
          f"frames): at the floor's cost this machine could run at most "
          f"{1 / (rate * floor):.1f} simulated s/s, at 3x the floor "
          f"{1 / (rate * floor * 3):.1f}")
    print(f"trace: {len(buf.getvalue()) / 1e6:.1f} MB, status {res.status}")
    if "--no-messages" in sys.argv:
        return
    # (c) the same run with message tracing (isrlab run --trace-messages)
    mbuf = io.BytesIO()
    c0 = time.process_time()
    mres = run(sc, 1, None, writer=TraceWriter(None, buffer=mbuf), trace_messages=True)
    mcpu = time.process_time() - c0
    print(f"(c) with --trace-messages: {mres.events:,} trace events, {mcpu:.1f} CPU s: "
          f"{mcpu / cpu:.2f}x the run without ({len(mbuf.getvalue()) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
