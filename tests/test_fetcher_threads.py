"""Replica fetcher threads (issue 18, item 1): a follower broker fetches with
``num.replica.fetchers`` threads per leader broker, each partition on thread
``Utils.abs(31 * topic.hashCode + partition) % num.replica.fetchers``
(``AbstractFetcherManager.getFetcherId``), one request per thread carrying all its
partitions; a stalled thread starves all of them at once."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from actors.fetcher import fetcher_id, java_string_hash, thread_name
from emulator.cluster import run
from emulator.scenario import load
from traces.writer import TraceWriter

SCENARIO = """
name = "fetchers"
description = "3 brokers; 'orders' written to on every partition, 'idle' never"
protocol = "{protocol}"
duration_s = 40.0
heal_s = 30.0

[cluster]
brokers = 3
"num.replica.fetchers" = {fetchers}
"replica.lag.time.max.ms" = 4000

[[topics]]
name = "orders"
partitions = 6
"replication.factor" = 3
"min.insync.replicas" = 2

[[topics]]
name = "idle"
partitions = 3
"replication.factor" = 3
"min.insync.replicas" = 2

[network]
delay = {{ dist = "constant", ms = 1.0 }}

[[producers]]
topic = "orders"
rate = 300
keys = 64
acks = "all"
{faults}
"""

STALL = """
[[faults.plan]]
at_s = 10.0
fault = "stall_fetcher"
target = "broker-2"
source = "broker-1"
duration_s = 12.0
"""


def _run(tmp_path: Path, *, fetchers: int = 1, faults: str = "", protocol: str = "3.7"
         ) -> list[dict[str, Any]]:
    f = tmp_path / "fetchers.toml"
    f.write_text(SCENARIO.format(fetchers=fetchers, faults=faults, protocol=protocol))
    buf = io.BytesIO()
    res = run(load(str(f)), 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(line) for line in buf.getvalue().splitlines()]


def _leaders(events: list[dict[str, Any]], at_us: int) -> dict[str, int]:
    """partition -> its leader broker at time ``at_us``."""
    out: dict[str, int] = {}
    for e in events:
        if e["event"] == "become_leader" and e["ts_us"] <= at_us:
            out[f"{e['topic']}-{e['partition']}"] = e["replica"]
    return out


def test_java_string_hash_is_javas_over_utf16_code_units() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("abc") == 96354
    assert java_string_hash("hello world") == 1794106052
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112   # Java's classic clash
    # a character outside the BMP is two UTF-16 code units (0xD83D, 0xDE00)
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00
    # 32-bit overflow wraps to a negative int, as in Java
    assert java_string_hash("polygenelubricants") == -(2**31)


def test_fetcher_id_is_getFetcherId_with_java_int_arithmetic() -> None:
    assert all(fetcher_id("orders", p, 1) == 0 for p in range(50))
    # Utils.abs(31 * 96354 + 5) % 4 for "abc"
    assert fetcher_id("abc", 5, 4) == (31 * 96354 + 5) % 4
    # 31 * h wraps: h = "hello world".hashCode()
    wrapped = (31 * 1794106052 + 7) & 0xFFFFFFFF
    wrapped = wrapped - 2**32 if wrapped >= 2**31 else wrapped
    assert fetcher_id("hello world", 7, 5) == abs(wrapped) % 5
    # Utils.abs(Integer.MIN_VALUE) is 0, not MIN_VALUE: "polygenelubricants".hashCode() is
    # MIN_VALUE, and 31 * MIN_VALUE wraps to MIN_VALUE again in int arithmetic
    assert fetcher_id("polygenelubricants", 0, 3) == 0


def test_each_thread_carries_the_partitions_of_its_leader_and_fetcher_id(tmp_path: Path
                                                                         ) -> None:
    events = _run(tmp_path, fetchers=2)
    threads: dict[tuple[str, str], list[str]] = {}
    for e in events:
        if e["event"] == "fetcher_partitions":
            assert e["actor"] == thread_name(e["fetcher_id"], e["leader"])
            threads[(e["node"], e["actor"])] = e["topic_partitions"]
            topic, _, p = e["topic_partition"].rpartition("-")
            assert e["fetcher_id"] == fetcher_id(topic, int(p), 2)
    leaders = _leaders(events, events[-1]["ts_us"])
    expected: dict[tuple[str, str], list[str]] = {}
    for tp, leader in sorted(leaders.items()):
        topic, _, p = tp.rpartition("-")
        for b in (1, 2, 3):
            if b != leader:
                key = (f"broker-{b}", thread_name(fetcher_id(topic, int(p), 2), leader))
                expected.setdefault(key, []).append(tp)
    got = {k: sorted(v) for k, v in threads.items() if v}
    assert got == {k: sorted(v) for k, v in expected.items()}
    assert len({k[1] for k in got}) > 2   # both fetcher ids are in use


def test_a_stalled_fetcher_takes_all_its_written_partitions_out_of_the_isr_together(
        tmp_path: Path) -> None:
    events = _run(tmp_path, faults=STALL)
    stall = next(e for e in events if e["event"] == "fetcher_stall")
    assert (stall["node"], stall["leader"]) == ("broker-2", 1)
    leaders = _leaders(events, stall["ts_us"])
    carried = sorted(stall["topic_partitions"])
    assert carried == sorted(tp for tp, b in leaders.items() if b == 1)
    written = [tp for tp in carried if tp.startswith("orders-")]
    idle = [tp for tp in carried if tp.startswith("idle-")]
    assert written and idle
    start, end = stall["ts_us"], stall["ts_us"] + 12_000_000
    shrinks = {f"{e['topic']}-{e['partition']}": e["ts_us"] for e in events
               if e["event"] == "isr_change" and start < e["ts_us"] <= end
               and 2 not in e["new"]}
    # every written partition of the thread lost broker 2, within one expiry scan period of
    # each other (replica.lag.time.max.ms / 2), after the lag had passed
    assert sorted(shrinks) == sorted(written)
    assert max(shrinks.values()) - min(shrinks.values()) <= 2_000_000
    assert min(shrinks.values()) - start >= 4_000_000
    # the idle partitions' follower was at the leader's LEO: it stays caught up
    assert not any(tp in shrinks for tp in idle)
    # partitions of the other leaders' threads were untouched
    other = {f"{e['topic']}-{e['partition']}" for e in events
             if e["event"] == "isr_change" and start < e["ts_us"] <= end}
    assert other <= set(written)
    resume = next(e for e in events if e["event"] == "fetcher_resume")
    assert resume["ts_us"] == end
    # and back in after the stall
    back = {f"{e['topic']}-{e['partition']}" for e in events
            if e["event"] == "isr_change" and e["ts_us"] > end and 2 in e["new"]}
    assert set(written) <= back


@pytest.mark.parametrize("protocol", ["0.10", "2.0", "2.8", "4.1"])
def test_every_era_converges_through_its_fetcher_threads(tmp_path: Path, protocol: str
                                                         ) -> None:
    events = _run(tmp_path, fetchers=2, faults=STALL, protocol=protocol)
    conv = [e for e in events if e["event"] == "convergence"]
    assert conv and all(e["converged"] for e in conv)
