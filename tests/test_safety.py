"""Safety under random faults (issue 3): era 4.1, acks=all, min.insync.replicas 2, RF 3,
unclean election off, crashes / power loss within the fault budget, partitions, delays,
pauses: no seed may lose an acknowledged write or let two replicas' logs diverge."""

from __future__ import annotations

import io
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import orjson

SEEDS = range(1, 201)
OVERRIDES = ["duration_s=8.0", "heal_s=40.0", "invariants=true", "producers[0].rate=60"]


def _verdict(seed: int) -> tuple[int, str, dict[str, int]]:
    from emulator.cluster import run
    from emulator.scenario import load
    from traces.checker import check_events
    from traces.writer import TraceWriter

    buf = io.BytesIO()
    res = run(load("safe-acks-all", OVERRIDES), seed, None, writer=TraceWriter(None, buffer=buf))
    result = check_events(orjson.loads(x) for x in buf.getvalue().splitlines())
    return seed, res.status if res.error is None else f"{res.status}: {res.error}", \
        result.anomalies


def test_no_seed_loses_an_acked_write_or_diverges_within_the_fault_budget() -> None:
    ctx = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        verdicts = list(pool.map(_verdict, SEEDS, chunksize=10))
    bad = [(seed, status, {k: v for k, v in a.items()
                           if k in ("lost_acked_write", "log_divergence") and v})
           for seed, status, a in verdicts]
    bad = [b for b in bad if b[1] != "ok" or b[2]]
    assert not bad, "reproduce with: isrlab run safe-acks-all --seed N " + " ".join(
        f"--set {o}" for o in OVERRIDES) + f"\n{bad[:10]}"
    assert len(verdicts) == 200
