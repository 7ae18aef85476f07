"""The operating system's page cache (issue 18, item 4): Linux writes dirty pages back on its
own — the flusher wakes every ``vm.dirty_writeback_centisecs`` and writes what has been dirty
longer than ``vm.dirty_expire_centisecs`` — so a power loss drops only the records younger
than about expiry + wake-up interval, not everything since Kafka's last flush. Kafka's
recovery (``LogLoader.recoverLog``) then keeps the valid records past the recovery point."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from actors.log import PartitionLog
from emulator.cluster import run
from emulator.scenario import load
from traces.writer import TraceWriter

SCENARIO = """
name = "page-cache"
description = "one broker, a record every 100 ms for 70 s, then a power loss"
protocol = "4.1"
duration_s = 70.0
heal_s = 20.0

[cluster]
brokers = 1
"vm.dirty_writeback_centisecs" = {writeback}
"vm.dirty_expire_centisecs" = 3000

[[topics]]
name = "orders"
partitions = 1
"replication.factor" = 1
"min.insync.replicas" = 1

[network]
delay = {{ dist = "constant", ms = 1.0 }}

[[producers]]
topic = "orders"
rate = 10
acks = "1"
"enable.idempotence" = false

[[faults.plan]]
at_s = 62.3
fault = "power_loss"
target = "broker-1"
duration_s = 1.0
"""


def _survivors(tmp_path: Path, writeback: int) -> tuple[int, int, list[dict[str, Any]]]:
    """(LEO before the power loss, LEO after it, the trace)."""
    f = tmp_path / f"wb{writeback}.toml"
    f.write_text(SCENARIO.format(writeback=writeback))
    buf = io.BytesIO()
    res = run(load(str(f)), 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    evs = [orjson.loads(x) for x in buf.getvalue().splitlines()]
    crash = next(e for e in evs if e["event"] == "node_crash")
    before = max(e["offset"] for e in evs if e["event"] == "produce_ack"
                 and e["ts_us"] <= crash["ts_us"]) + 1
    (recovery,) = [e for e in evs if e["event"] == "log_recovery"
                   and e["ts_us"] > crash["ts_us"]]
    return before, recovery["leo"], evs


def test_a_power_loss_drops_only_what_the_flusher_had_not_written_back(
        tmp_path: Path) -> None:
    """Defaults (wake every 5 s, write what is 30 s old): the power loss at 62.3 s comes
    after the flusher's wake-up at 60 s, which wrote what was appended up to 30 s; the
    records of the last 32.3 s (about 323 at 10/s) are lost, the older ones survive although
    Kafka never flushed."""
    before, after, evs = _survivors(tmp_path, 500)
    lost = before - after
    (recovery,) = [e for e in evs if e["event"] == "log_recovery"]
    assert (recovery["power_loss_leo"], recovery["kept_leo"]) == (before, after)
    assert 300 <= after <= 310           # appended by 30.0 s, 10 a second
    assert 315 <= lost <= 330
    assert not [e for e in evs if e["event"] == "log_flush"]


def test_with_writeback_disabled_a_power_loss_drops_everything_since_kafkas_flush(
        tmp_path: Path) -> None:
    """``vm.dirty_writeback_centisecs = 0`` (no periodic writeback): nothing Kafka did not
    flush survives — here, with no flush at all, the whole log."""
    before, after, _ = _survivors(tmp_path, 0)
    assert before > 600 and after == 0


@pytest.mark.parametrize("at_ms, survivors", [
    (34_999, 0),       # the wake-up at 30 s wrote what was appended by 0 s: nothing yet
    (35_000, 5),       # the wake-up at 35 s writes what was appended by 5 s
    (41_000, 10),      # ... at 40 s, by 10 s
])
def test_the_flusher_writes_what_is_older_than_expiry_at_each_wake_up(
        at_ms: int, survivors: int) -> None:
    """One record a second from 1 s; power lost at ``at_ms``: the records that survive are
    those appended by (last wake-up − 30 s)."""
    log = PartitionLog("t", 0, writeback_ms=5000, expire_ms=30_000)
    for i in range(at_ms // 1000):
        log.append((i, f"v{i}", 0, 0, -1, -1, None), 1 << 30, 1 << 40, 1000 * (i + 1))
    log.lose_page_cache(now_ms=at_ms)
    assert log.log_end_offset == survivors
