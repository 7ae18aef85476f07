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


def _fenced_only_when_a_restart_outlives_the_session(evs: list[dict[str, Any]]) -> bool:
    """No broker is fenced by the outage itself (the session outlives it). A restarted
    process is refused (DUPLICATE_BROKER_REGISTRATION) while its old incarnation's session
    lasts; the controller then fences the old one for its session, as KRaft does
    (``ClusterControlManager.registerBroker``)."""
    restarts = [e["ts_us"] for e in evs if e["event"] == "node_restart"]
    fenced = [e for e in evs if e["event"] == "broker_fenced"]
    if not restarts:
        return not fenced
    return all(e["reason"] == "session_timeout" and e["broker"] == 1
               and e["ts_us"] > restarts[0] for e in fenced) and any(
        e["event"] == "broker_registration_refused" for e in evs)


def test_a_killed_leaders_peers_fail_their_requests_one_network_delay_later(
        tmp_path: Path) -> None:
    """broker-1 leads orders-0 and its process is killed at 3.0 s (1 ms links): both
    followers fail their fetch and the producer its in-flight produce requests at 3.001 s
    — not 30 s later. The restart at 3.5 s is inside the old session: the new process is
    refused until the session expires, then the old incarnation is fenced."""
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
    assert _fenced_only_when_a_restart_outlives_the_session(evs)
    # the restarted broker is not registered again until its old session expires (9 s
    # after its last heartbeat), so the partition has no working leader until the
    # controller fences the old incarnation and elects another replica; acknowledgements
    # resume soon after that
    fenced = next(e["ts_us"] for e in evs if e["event"] == "broker_fenced")
    assert fenced - crash["ts_us"] > 6_000_000
    acks_after = [e["ts_us"] for e in evs if e["event"] == "produce_ack"
                  and e["ts_us"] > crash["ts_us"]]
    assert acks_after and fenced < min(acks_after) < fenced + 2_000_000


@pytest.mark.parametrize("fault", ["power_loss", "isolate", "pause"])
def test_a_leader_that_loses_power_is_cut_off_or_pauses_says_nothing(
        tmp_path: Path, fault: str) -> None:
    """The same half-second outage as a power loss, an isolation or a pause: no reset
    reaches anyone, so no request fails before its timeout."""
    evs = _run(tmp_path, fault)
    assert not [e for e in evs if e["event"] == "request_failed"]
    assert _fenced_only_when_a_restart_outlives_the_session(evs)


def test_reconnect_backoff_doubles_from_50_ms_to_1_s_with_jitter_and_resets_on_an_answer(
        ) -> None:
    """``ClusterConnectionStates.updateReconnectBackoff``: the n-th failed attempt in a row
    blacks the broker out for ``reconnect.backoff.ms`` × 2^(n-1), at most
    ``reconnect.backoff.max.ms`` before a ±20 % jitter; ``ready`` (any answer) resets it."""
    import random

    from actors.client import ConnectionStates

    states = ConnectionStates(50, 1000, random.Random(7))
    now = 0
    waits = []
    for _ in range(8):
        states.disconnected("broker-1", now)
        waits.append(states.delay_us("broker-1", now) // 1000)
        now += waits[-1] * 1000
    for n, wait in enumerate(waits):
        term = min(50 * 2 ** n, 1000)
        assert 0.8 * term <= wait <= 1.2 * term, (n, waits)
    assert states.delay_us("broker-2", now) == 0
    states.ready("broker-1")
    states.disconnected("broker-1", now)
    assert states.delay_us("broker-1", now) <= 60_000
    # without a maximum above the start, the delay is constant and has no jitter
    flat = ConnectionStates(50, 50, random.Random(7))
    for _ in range(3):
        flat.disconnected("broker-1", 0)
        assert flat.delay_us("broker-1", 0) == 50_000


def test_a_client_whose_brokers_are_all_down_asks_for_metadata_about_once_a_second(
        tmp_path: Path) -> None:
    """Every broker's process is killed for 5 s: each metadata request is refused within a
    round trip, and the producer asks the next broker only once one is out of its reconnect
    backoff (``DefaultMetadataUpdater.maybeUpdate`` waits when ``leastLoadedNode`` finds
    none) and ``retry.backoff.ms`` after the last failed update (``Metadata.failedUpdate``,
    ``timeToAllowUpdate``) — dozens of requests, not one per 2 ms round trip (2,500) as
    without them; after the restart its requests are answered again."""
    f = tmp_path / "all-down.toml"
    f.write_text(SCENARIO.format(fault="crash").replace(
        'target = "broker-1"\nduration_s = 0.5',
        'target = ["broker-1", "broker-2", "broker-3"]\nduration_s = 5.0'))
    buf = io.BytesIO()
    res = run(load(str(f)), 1, None, writer=TraceWriter(None, buffer=buf), trace_messages=True)
    assert res.status == "ok", res.error
    evs = [orjson.loads(x) for x in buf.getvalue().splitlines()]
    crash = min(e["ts_us"] for e in evs if e["event"] == "node_crash")
    restart = min(e["ts_us"] for e in evs if e["event"] == "node_restart")
    asked = [e for e in evs if e["event"] == "msg_send" and e["msg"] == "MetadataRequest"
             and e["src"] == "producer-0/producer" and crash < e["ts_us"] < restart]
    assert 5 <= len(asked) <= 60, len(asked)
    # each refused request is a failed update: the next waits retry.backoff.ms (100 ms)
    times = [e["ts_us"] for e in asked]
    assert all(b - a >= 100_000 for a, b in zip(times, times[1:], strict=False)), times
    # and each broker's reconnect backoff grows towards its 1 s ceiling (less jitter)
    gaps = [b["ts_us"] - a["ts_us"] for a in asked for b in asked
            if b["dst"] == a["dst"] and b["ts_us"] > a["ts_us"]
            and not any(a["ts_us"] < c["ts_us"] < b["ts_us"] and c["dst"] == a["dst"]
                        for c in asked)]
    assert max(gaps) >= 800_000, gaps
    assert any(e["event"] == "msg_recv" and e["msg"] == "MetadataResponse"
               and e["node"] == "producer-0" and e["ts_us"] > restart for e in evs)
