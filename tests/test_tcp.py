"""The network is TCP: a cut delays frames and never loses them; a reject fails fast; packet
loss costs retransmissions; a request that times out closes its connection.

The numbers are Linux's (``tcp_rto_min`` 200 ms, doubling, ``TCP_TIMEOUT_INIT`` 1 s for a
SYN) and Kafka's (``replica.socket.timeout.ms`` and ``request.timeout.ms`` 30 s,
``socket.connection.setup.timeout.ms`` 10 s from 2.7).
"""

from __future__ import annotations

import random
from typing import Any

from emulator.network import HELD, REJECT, DelayDist, Network
from emulator.tcp import TcpConfig, tcp_config
from tests.helpers import events, run_to_bytes

A = ("a", "producer")
B = ("b", "orders-0")


def _net(**kw: Any) -> Network:
    return Network(random.Random(7), DelayDist(dist="constant", ms=1.0), **kw)


def test_a_frame_sent_into_a_cut_is_held_and_delivered_at_the_first_retransmission_after_the_heal(
        ) -> None:
    net = _net()
    assert net.send(0, A, B, b"warm") == (1000, b"warm")   # an RTT sample: RTO = 2 ms + 200 ms
    net.cut("a", "b")
    assert net.send(10_000, A, B, b"one") == HELD
    assert net.send(20_000, A, B, b"two") == HELD          # behind the first
    (stream,) = net.timers
    net.timers.clear()
    rto = net.rto_us(("a", "b"))
    assert rto == 2000 + 200_000
    assert stream.timer_us == 10_000 + rto
    # still cut: the next try is one doubled RTO later
    assert net.retransmit(stream.timer_us, stream)[0] == "wait"
    assert stream.timer_us == 10_000 + rto + 2 * rto
    net.heal("a", "b")
    outcome, deliveries, discarded = net.retransmit(stream.timer_us, stream)
    assert outcome == "release" and not discarded
    assert [d[3] for d in deliveries] == [b"one", b"two"]       # in order
    assert deliveries[0][0] == stream.last_us - 0 or deliveries[0][0] <= deliveries[1][0]
    assert all(at == 10_000 + 3 * rto + 1000 for at, *_ in deliveries)


def test_frames_in_flight_when_a_cut_begins_are_retransmitted_ahead_of_later_ones() -> None:
    net = _net()
    fate = net.send(0, A, B, b"in-flight")
    assert isinstance(fate, tuple)
    at = fate[0]
    net.cut("a", "b")
    assert net.send(500, A, B, b"later") == HELD
    assert net.arrive(at, B, A, b"in-flight") == HELD     # the cut took it on the wire
    stream = net.timers[0]
    net.heal("a", "b")
    _, deliveries, _ = net.retransmit(stream.timer_us, stream)
    assert [d[3] for d in deliveries] == [b"in-flight", b"later"]


def test_a_rejecting_link_answers_with_a_reset_and_delivers_nothing() -> None:
    net = _net()
    net.reject("a", "b")
    assert net.send(0, A, B, b"x") == REJECT
    net.unreject("a", "b")
    fate = net.send(10, A, B, b"x")
    assert isinstance(fate, tuple) and fate[0] > 10


def _drive(net: Network, sends: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """Send ``(time, frame)`` from A to B and fire the network's retransmission timers in
    time order (what the scheduler does); the deliveries, in delivery order."""
    import heapq
    events: list[tuple[int, int, Any]] = [(t, i, f) for i, (t, f) in enumerate(sends)]
    heapq.heapify(events)
    n = len(events)
    out: list[tuple[int, int, bytes]] = []
    while events:
        t, _, what = heapq.heappop(events)
        if isinstance(what, bytes):
            fate = net.send(t, A, B, what)
            if isinstance(fate, tuple):
                out.append((fate[0], len(out), fate[1]))
        else:
            outcome, deliveries, discarded = net.retransmit(t, what)
            assert not discarded, outcome
            out += [(at, len(out) + k, f) for k, (at, _d, _s, f) in enumerate(deliveries)]
        for stream in net.timers:
            n += 1
            heapq.heappush(events, (stream.timer_us, n, stream))
        net.timers.clear()
    return [(at, f) for at, _, f in sorted(out)]


def test_packet_loss_delays_frames_by_whole_rtos_and_never_loses_one() -> None:
    """Each lost transmission is retransmitted one RTO later, then two, four...: every frame
    arrives, in order, the lost ones (and those behind them on the connection) late."""
    net = _net(drop_rate=0.3)
    net.send(0, A, B, b"warm")
    frames = [(10_000 + i * 50_000, f"f{i}".encode()) for i in range(200)]
    got = _drive(net, frames)
    assert [f for _, f in got] == [f for _, f in frames]          # all, in order
    lost = [n for n in net.notes if n[0] == "tcp_stall"]
    assert 5 < len(lost) < 100 and all(n[2]["reason"] == "loss" for n in lost)
    late = [at - t for (at, _), (t, _) in zip(got, frames, strict=True) if at - t > 10_000]
    rto = net.rto_us(("a", "b"))
    assert late and max(late) >= rto
    resumed = [n[2] for n in net.notes if n[0] == "tcp_resume"]
    assert len(resumed) == len(lost)
    assert all(r["stalled_ms"] * 1000 >= rto - 1000 for r in resumed)   # at least one RTO


def test_closing_a_connection_discards_what_it_holds_both_ways_and_the_next_frame_must_connect(
        ) -> None:
    net = _net()
    net.send(0, A, B, b"warm")
    net.cut("a", "b")
    net.cut("b", "a")
    assert net.send(1000, A, B, b"request") == HELD
    assert net.send(1000, B, A, b"answer") == HELD
    net.timers.clear()
    dropped = net.close(A, "b")
    assert sorted(f for _, _, f in dropped) == [b"answer", b"request"]
    # the new connection's SYN cannot cross: held until the link heals or the setup times out
    assert net.send(2000, A, B, b"retry") == HELD
    (syn,) = net.timers
    assert syn.connecting and syn.timer_us == 2000 + 1_000_000     # TCP_TIMEOUT_INIT
    net.heal("a", "b")
    net.heal("b", "a")
    outcome, deliveries, _ = net.retransmit(syn.timer_us, syn)
    assert outcome == "release" and [d[3] for d in deliveries] == [b"retry"]


def test_a_connection_attempt_fails_at_kafkas_setup_timeout_from_2_7() -> None:
    net = _net(tcp=TcpConfig(setup_timeout_ms=10_000, setup_timeout_max_ms=30_000))
    net.close(A, "b")
    net.cut("a", "b")
    assert net.send(0, A, B, b"x") == HELD
    stream = net.timers.pop()
    while True:
        outcome, _, discarded = net.retransmit(stream.timer_us, stream)
        if outcome != "wait":
            break
        net.timers.pop()
    assert outcome == "connect_timeout" and discarded == [(B, A, b"x")]
    assert stream.timer_us == 10_000_000    # 1 s, 3 s, 7 s, then the 10 s deadline
    # the next attempt waits twice as long (ClusterConnectionStates, exponential)
    assert net.send(10_000_000, A, B, b"y") == HELD
    assert net.timers.pop().deadline_us == 10_000_000 + 20_000_000


def test_setup_timeout_is_the_eras_default_only_from_2_7() -> None:
    assert tcp_config({}, "3.7").setup_timeout_ms == 10_000
    assert tcp_config({}, "2.1").setup_timeout_ms == 0
    assert TcpConfig().syn_give_up_us() == 127_000_000    # tcp_syn_retries 6


def _window(evs: list[dict[str, Any]], lo_s: float, hi_s: float) -> list[dict[str, Any]]:
    return [e for e in evs if lo_s * 1e6 < e["ts_us"] <= hi_s * 1e6]


def test_after_the_default_isolation_heals_replicas_fetch_and_producers_complete_within_2_s(
        ) -> None:
    """The default scenario isolates broker-2 from 11 s to 17 s. Kafka resumes at the first
    retransmission after the heal: broker-2's replicas fetch again and the producer's
    requests to it complete within 2 s — nothing waits for the 30 s request timeout."""
    _, data = run_to_bytes("default", 1, [])
    evs = events(data)
    assert not [e for e in evs if e["event"] == "request_failed"
                and e.get("reason") == "timeout" and 17e6 < e["ts_us"] <= 47e6
                and e["node"] != "broker-2"], "a request waited for its timeout"
    after = _window(evs, 17.0, 19.0)
    fetched = {e["partition"] for e in after if e["event"] == "leo_update"
               and e["node"] == "broker-2" and e["topic"] == "orders"}
    assert fetched == {0, 1, 2}, "broker-2's replicas must fetch again within 2 s"
    stalled = {e["dst"] for e in _window(evs, 11.0, 17.0) if e["event"] == "tcp_stall"
               and e["node"] == "producer-0"}
    assert stalled, "the producer's requests to broker-2 were held by the cut"
    resumed = {e["dst"] for e in after if e["event"] == "tcp_resume"
               and e["node"] == "producer-0"}
    assert resumed == stalled
    acked = {e["partition"] for e in after if e["event"] == "produce_ack"}
    assert acked, "held produce requests complete after the heal"


def test_an_isolation_longer_than_the_socket_timeout_fails_requests_then_reconnects() -> None:
    """broker-2 isolated for 45 s: its fetchers' requests fail at replica.socket.timeout.ms,
    each closes its connection; after the heal a new connection is opened and the follower
    catches up (the run converges)."""
    res, data = run_to_bytes("default", 1, [
        "duration_s=70.0",
        'faults.plan=[{at_s=5.0, fault="isolate", target="broker-2", duration_s=45.0}]'])
    evs = events(data)
    timeouts = [e for e in evs if e["event"] == "request_failed" and e["node"] == "broker-2"
                and e.get("reason") == "timeout" and e["actor"].startswith("ReplicaFetcher")]
    assert timeouts and all(35e6 <= e["ts_us"] <= 50e6 for e in timeouts[:1])
    closes = [e for e in evs if e["event"] == "connection_close" and e["node"] == "broker-2"
              and e["actor"].startswith("ReplicaFetcher")]
    assert closes, "a timed-out fetch closes its connection"
    reconnected = [e for e in evs if e["event"] == "tcp_resume" and e.get("connect")
                   and e["ts_us"] > 50e6]
    caught_up = [e for e in _window(evs, 50.0, 53.0) if e["event"] == "leo_update"
                 and e["node"] == "broker-2"]
    assert caught_up, "the follower fetches again soon after the heal"
    assert reconnected, "its new connections' handshakes cross once the link is back"
    hb = [e for e in evs if e["event"] == "request_failed" and e["node"] == "broker-2"
          and e.get("request") == "BrokerHeartbeat"]
    assert hb, "an unanswered heartbeat closes the broker's connection to the controller"
    unfenced = [e for e in evs if e["event"] == "broker_unfenced" and e["broker"] == 2]
    assert unfenced and 50e6 < unfenced[0]["ts_us"] < 52e6
    rejoined = {e["partition"] for e in _window(evs, 50.0, 53.0) if e["event"] == "isr_change"
                and e["topic"] == "orders" and 2 in e["new"]}
    assert rejoined == {0, 1, 2}, "broker-2 is back in every ISR within 3 s of the heal"
    assert res.status == "ok"
    assert not [e for e in evs if e["event"] == "anomaly" and e.get("kind") == "no_convergence"]


def test_partition_reject_fails_requests_within_a_round_trip() -> None:
    _, data = run_to_bytes("default", 1, [
        'faults.plan=[{at_s=5.0, fault="partition_reject", target=["broker-2"], '
        'duration_s=4.0}]'])
    evs = events(data)
    window = [e for e in _window(evs, 5.0, 9.0) if e["event"] == "request_failed"]
    # broker-2's metadata fetch was already parked at the quorum leader when the reject
    # began: its answer is what is refused, and nothing reaches broker-2 to say so (an
    # iptables REJECT answers the sender's packets only), so it waits out
    # quorum.request.timeout.ms (2 s) from before 5 s; every other request fails at once
    waited = [e for e in window if e["reason"] == "timeout"]
    assert all(e["node"] == "broker-2" and e["actor"] == "raft"
               and e["ts_us"] - 2_000_000 < 5_000_000 for e in waited), waited
    fails = [e for e in window if e not in waited]
    assert fails and all(e["reason"] == "disconnected" for e in fails)
    assert not [e for e in _window(evs, 5.0, 9.0) if e["event"] == "tcp_stall"]
    first = min(e["ts_us"] for e in fails)
    assert first - 5_000_000 < 600_000, "a reset answers within a round trip of a request"


def test_the_space_time_diagram_draws_what_tcp_held_from_the_stall_to_the_delivery() -> None:
    """Around the heal of the default isolation, the producer's requests held by the cut
    are drawn from their stall (11 s) to their delivery after the heal (17 s): a late
    request shows why it was late."""
    from report.figures import build_spacetime
    _, data = run_to_bytes("default", 1, [])
    st = build_spacetime(events(data), "orders", 1, {"_ts_us": 17_000_000}, lambda t: 2)
    held = [h for h in st.held if h[1] == "producer-0" and h[3] == "broker-2"]
    assert held, st.held
    t0, _, t1, _, label = held[0]
    assert 11e6 <= t0 < 12e6 and 17e6 < t1 < 19e6
    assert "retransmission" in label


def test_a_producer_whose_answers_never_come_back_fails_at_its_timeout_and_reconnects() -> None:
    """broker-2 → producer cut one way for 40 s: the requests arrive, their answers are
    held. The producer's requests fail at request.timeout.ms (30 s), it closes its
    connection to broker-2 (the held answers are discarded), and once the cut heals it
    produces to broker-2 again."""
    _, data = run_to_bytes("default", 1, [
        "duration_s=60.0",
        'faults.plan=[{at_s=5.0, fault="cut", target=["broker-2", "producer-0"], '
        'duration_s=40.0}]'])
    evs = events(data)
    failed = [e for e in evs if e["event"] == "request_failed" and e["node"] == "producer-0"
              and e.get("reason") == "timeout"]
    assert failed and 34.9e6 <= failed[0]["ts_us"] <= 36e6   # 30 s after it was sent
    closes = [e for e in evs if e["event"] == "connection_close" and e["node"] == "producer-0"
              and e["peer"] == "broker-2"]
    assert closes and closes[0]["ts_us"] == failed[0]["ts_us"]
    assert [e for e in _window(evs, 45.0, 48.0) if e["event"] == "produce_ack"
            and e["partition"] == 1], "orders-1 (led by broker-2) acknowledges again"
