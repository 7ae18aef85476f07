"""A crashed broker that restarts inside its session, end to end.

KRaft (3.7, 4.1): the restarted broker's registration is refused with
DUPLICATE_BROKER_REGISTRATION while the previous incarnation's session is valid
(``ClusterControlManager.registerBroker``); the broker tries again every
``broker.heartbeat.interval.ms`` (``BrokerLifecycleManager
.scheduleNextCommunicationAfterFailure``); the old incarnation keeps its ISRs and
leaderships until its session ends: fenced by the controller's session check (3.7's check
armed for that moment), or by the new incarnation's registration when that lands first
(4.1's periodic check). The ZooKeeper eras from 2.2 (KIP-380) fail the old incarnation
when the new one registers (isrlab's model; docs/fidelity.md says what it leaves out).
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


def _kraft_restart(protocol: str) -> tuple[list[dict[str, Any]], dict[str, Any],
                                            dict[str, Any], int]:
    """The restarted broker's refusals, fencing and registration, and its crash time."""
    ev = _events(protocol)
    node, restart_us = _restart(ev)
    broker = int(node.split("-")[1])
    mine = [e for e in ev if e.get("broker") == broker and e["ts_us"] >= restart_us]
    refused = [e for e in mine if e["event"] == "broker_registration_refused"]
    fenced = next(e for e in mine if e["event"] == "broker_fenced")
    registered = next(e for e in mine if e["event"] == "broker_registered")
    assert refused and all(e["error"] == "DUPLICATE_BROKER_REGISTRATION" for e in refused)
    assert all(e["ts_us"] < fenced["ts_us"] for e in refused)
    # the broker retries a heartbeat interval (2 s) apart, never at the 1 s registration
    # retry (a gap is longer when the controller was away in between)
    gaps = [b["ts_us"] - a["ts_us"] for a, b in zip(refused, refused[1:], strict=False)]
    assert gaps and min(gaps) >= 1_900_000 and 1_900_000 <= gaps[0] <= 2_200_000, gaps
    crash = max(e["ts_us"] for e in ev if e["event"] == "node_crash" and e["node"] == node
                and e["ts_us"] < restart_us)
    return refused, fenced, registered, crash


def test_kraft_37_refuses_the_new_incarnation_until_the_check_fences_the_old_session() -> None:
    """3.7.0: the check is armed for the moment the oldest session ends
    (``QuorumController.rescheduleMaybeFenceStaleBrokers``), so the old incarnation is fenced
    for its session before the next retry can register."""
    refused, fenced, registered, crash = _kraft_restart("3.7")
    assert fenced["reason"] == "session_timeout"
    assert refused[0]["ts_us"] < fenced["ts_us"] < registered["ts_us"]
    # the session outlives the crash: it ends a session after the last heartbeat the
    # controller had (the dead broker's last, or the controller's own start, which gives
    # every unfenced broker a fresh session, as ClusterControlManager.activate does)
    assert fenced["ts_us"] - crash >= SESSION_US - 2_000_000


def test_kraft_41_takes_a_registration_that_lands_after_the_session_before_the_check(
        ) -> None:
    """4.1.0 looks for expired sessions every session/8 = 1,125 ms (KAFKA-17793,
    ``QuorumController.maybeFenceStaleBrokerPeriodNs``): here the retry lands after the old
    session ended but before the next check, and ``ClusterControlManager.registerBroker``
    takes it (``BrokerHeartbeatTracker``: no valid session), fencing the old incarnation as
    re-registered at that instant. Every earlier retry, inside the session, was refused."""
    refused, fenced, registered, crash = _kraft_restart("4.1")
    assert fenced["reason"] == "re-registered"
    assert fenced["ts_us"] == registered["ts_us"] > refused[-1]["ts_us"]
    assert registered["ts_us"] - crash >= SESSION_US - 2_000_000


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
