"""Connections (issue 18, item 2): a process that dies on a live host resets its connections,
so its peers' in-flight requests fail one network delay later; a host that loses power, a
cut link or a paused process say nothing, and the peers wait for their request timeouts.
A reset never fences a broker."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from emulator.cluster import run
from emulator.scenario import load
from traces.writer import TraceWriter

SCENARIO = """
name = "connections"
description = "the leader's process dies, loses power, or is cut off, for 0.5 s"
protocol = "4.1"
duration_s = 6.0
heal_s = 20.0

[cluster]
brokers = 3

[[topics]]
name = "orders"
partitions = 1
"replication.factor" = 3
"min.insync.replicas" = 2

[network]
delay = {{ dist = "constant", ms = 1.0 }}

[[producers]]
topic = "orders"
rate = 2000
acks = "all"

[[faults.plan]]
at_s = 3.0
fault = "{fault}"
target = "broker-1"
duration_s = 0.5
"""


def _run(tmp_path: Path, fault: str) -> list[dict[str, Any]]:
    f = tmp_path / f"{fault}.toml"
    f.write_text(SCENARIO.format(fault=fault))
    buf = io.BytesIO()
    res = run(load(str(f)), 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(x) for x in buf.getvalue().splitlines()]


def _fenced_only_on_reregistration(evs: list[dict[str, Any]]) -> bool:
    """No broker is fenced by the outage itself (the session outlives it); a restarted
    process registering again fences its old incarnation, as KRaft does."""
    return all(e["reason"] == "re-registered" for e in evs if e["event"] == "broker_fenced")


def test_a_killed_leaders_peers_fail_their_requests_one_network_delay_later(
        tmp_path: Path) -> None:
    """broker-1 leads orders-0 and its process is killed at 3.0 s (1 ms links): both
    followers fail their fetch and the producer its in-flight produce requests at 3.001 s
    — not 30 s later — and nobody is fenced (the 0.5 s outage is inside the session)."""
    evs = _run(tmp_path, "crash")
    (crash,) = [e for e in evs if e["event"] == "node_crash"]
    (restart,) = [e for e in evs if e["event"] == "node_restart"]
    failed = [e for e in evs if e["event"] == "request_failed" and e["peer"] == "broker-1"]
    at = {(e["node"], e["request"]) for e in failed if e["ts_us"] == crash["ts_us"] + 1000}
    assert {("broker-2", "Fetch"), ("broker-3", "Fetch"), ("producer-0", "Produce")} <= at
    # requests sent while the process is down are refused within a round trip (2 ms);
    # none fails after the restart
    later = [e for e in failed if e["ts_us"] > crash["ts_us"] + 1000]
    assert later and all(e["ts_us"] <= restart["ts_us"] + 2000 for e in later)
    assert _fenced_only_on_reregistration(evs)
    # the followers fetch again (after replica.fetch.backoff.ms) and the produce requests
    # are retried: acknowledgements resume soon after the restart at 3.5 s
    acks_after = [e["ts_us"] for e in evs if e["event"] == "produce_ack"
                  and e["ts_us"] > crash["ts_us"]]
    assert acks_after and min(acks_after) < 5_000_000


@pytest.mark.parametrize("fault", ["power_loss", "isolate", "pause"])
def test_a_leader_that_loses_power_is_cut_off_or_pauses_says_nothing(
        tmp_path: Path, fault: str) -> None:
    """The same half-second outage as a power loss, an isolation or a pause: no reset
    reaches anyone, so no request fails before its timeout."""
    evs = _run(tmp_path, fault)
    assert not [e for e in evs if e["event"] == "request_failed"]
    assert _fenced_only_on_reregistration(evs)
