"""A crashed broker that restarts inside its session, end to end.

KRaft (3.7, 4.1): the restarted broker's registration is refused with
DUPLICATE_BROKER_REGISTRATION while the previous incarnation's session is valid
(``ClusterControlManager.registerBroker``); the broker tries again every
``broker.heartbeat.interval.ms`` (``BrokerLifecycleManager
.scheduleNextCommunicationAfterFailure``); the old incarnation keeps its ISRs and
leaderships until the controller fences it for its session, and only then does the new one
register. The ZooKeeper eras from 2.2 (KIP-380) fail the old incarnation when the new one
registers (isrlab's model; docs/fidelity.md says what it leaves out).
"""

from __future__ import annotations

import io
from typing import Any

import orjson

from emulator.cluster import run
from emulator.scenario import load
from tests.helpers import ROOT
from traces.writer import TraceWriter

SESSION_US = 9_000_000


def _events(protocol: str) -> list[dict[str, Any]]:
    sc = load(str(ROOT / "scenarios" / "safe-acks-all.toml"),
              overrides=[f"protocol=\"{protocol}\""])
    buf = io.BytesIO()
    res = run(sc, 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(line) for line in buf.getvalue().splitlines()]


def _restart(ev: list[dict[str, Any]]) -> tuple[str, int]:
    """The first broker restarted by the plan, and when."""
    e = next(e for e in ev if e["event"] == "node_restart" and e["node"].startswith("broker-"))
    return e["node"], e["ts_us"]


def test_kraft_refuses_the_new_incarnation_until_the_old_session_expires() -> None:
    ev = _events("4.1")
    node, restart_us = _restart(ev)
    broker = int(node.split("-")[1])
    mine = [e for e in ev if e.get("broker") == broker and e["ts_us"] >= restart_us]
    refused = [e for e in mine if e["event"] == "broker_registration_refused"]
    fenced = next(e for e in mine if e["event"] == "broker_fenced")
    registered = next(e for e in mine if e["event"] == "broker_registered")
    assert refused and all(e["error"] == "DUPLICATE_BROKER_REGISTRATION" for e in refused)
    # the old incarnation is fenced for its session, not because a new one registered
    assert fenced["reason"] == "session_timeout"
    assert refused[0]["ts_us"] < fenced["ts_us"] < registered["ts_us"]
    assert all(e["ts_us"] < fenced["ts_us"] for e in refused)
    # the broker retries a heartbeat interval (2 s) apart, never at the 1 s registration
    # retry (a gap is longer when the controller was away in between)
    gaps = [b["ts_us"] - a["ts_us"] for a, b in zip(refused, refused[1:], strict=False)]
    assert gaps and min(gaps) >= 1_900_000 and 1_900_000 <= gaps[0] <= 2_200_000, gaps
    # the session outlives the crash: it ends a session after the last heartbeat the
    # controller had (the dead broker's last, or the controller's own start, which gives
    # every unfenced broker a fresh session, as ClusterControlManager.activate does)
    crash = max(e["ts_us"] for e in ev if e["event"] == "node_crash" and e["node"] == node
                and e["ts_us"] < restart_us)
    assert fenced["ts_us"] - crash >= SESSION_US - 2_000_000

def test_zookeeper_eras_since_kip_380_fail_the_old_incarnation_when_the_new_registers() -> None:
    ev = _events("2.8")
    node, restart_us = _restart(ev)
    broker = int(node.split("-")[1])
    mine = [e for e in ev if e.get("broker") == broker and e["ts_us"] >= restart_us]
    assert not any(e["event"] == "broker_registration_refused" for e in mine)
    fenced = next(e for e in mine if e["event"] == "broker_fenced")
    registered = next(e for e in mine if e["event"] == "broker_registered")
    assert fenced["reason"] == "re-registered"
    assert fenced["ts_us"] <= registered["ts_us"]
