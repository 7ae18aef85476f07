"""When the KRaft controller fences a broker whose session expired (isrlab's
``Controller``, ``Rules.stale_broker_check``), held against Kafka's heartbeat tests.

3.7.0 arms one deferred check for the moment the oldest unfenced broker's session ends
(``BrokerHeartbeatManager.nextCheckTimeNs``, re-armed by ``QuorumController
.rescheduleMaybeFenceStaleBrokers`` on every heartbeat, registration and check) and fences
one broker per check, the one heard from longest ago (``findOneStaleBroker``). 4.0.0
(KAFKA-17793) replaced it with a periodic task, every session timeout / 8, which fences one
expired broker per run and runs again 10 ms later when it fenced one
(``QuorumController.maybeFenceStaleBrokerPeriodNs``, ``PeriodicTaskControlManager``,
``BrokerHeartbeatTracker.maybeRemoveExpired``). In both a session is expired only once
last contact + timeout is strictly past (``isExpired``: ``timeNs + sessionTimeoutNs <
nowNs``). The time of a fencing decides how long a dead broker stays in the ISRs, and
whether its restarted incarnation is refused (DUPLICATE_BROKER_REGISTRATION) or taken.
"""

from __future__ import annotations

from typing import Any

from kafkacite import kafka

from actors.controller import Controller, ControllerStore, PartitionRecord
from actors.core import Emit, Timer
from actors.eras import rules_for
from actors.messages import BrokerHeartbeat, BrokerRegistration, Tick

SESSION_MS = 9000


class Ctx:
    """One controller over topic ``foo`` (one partition on every broker); the brokers
    register at the given times (ms). Every session-check timer the controller arms is
    kept with the time it is due."""

    def __init__(self, era: str, registrations: list[tuple[int, int]]) -> None:
        brokers = tuple(sorted(b for b, _ in registrations))
        store = ControllerStore()
        store.partitions[("foo", 0)] = PartitionRecord("foo", 0, brokers, 1, False)
        self.c = Controller(store, rules_for(era), brokers=brokers,
                            session_timeout_ms=SESSION_MS)
        self.armed: list[tuple[int, Tick]] = []   # (due ms, tick)
        self.fenced: list[tuple[int, int]] = []   # (ms, broker)
        self.c.start()
        self._drain()
        for b, at in registrations:
            self.at(at)
            self.c.handle(BrokerRegistration(b, 1, True), (f"broker-{b}", "broker"))
            self._drain()

    def at(self, ms: int) -> None:
        self.c.now_us = ms * 1000

    def _drain(self) -> None:
        now = self.c.now_ms
        for e in self.c.drain():
            if isinstance(e, Timer) and isinstance(e.msg, Tick) and e.msg.kind == "session_check":
                self.armed.append((now + e.delay_us // 1000, e.msg))
            elif isinstance(e, Emit) and e.event == "broker_fenced":
                self.fenced.append((now, int(e.fields["broker"])))

    def heartbeat(self, broker: int, ms: int) -> None:
        self.at(ms)
        rec = self.c.store.brokers[broker]
        self.c.handle(BrokerHeartbeat(broker, rec.epoch, 0), (f"broker-{broker}", "broker"))
        self._drain()

    def next_check(self) -> int:
        """When the check the controller armed last is due."""
        return self.armed[-1][0]

    def run_until(self, ms: int) -> None:
        """Deliver every armed check due by ``ms``, in time order (a stale token: a no-op,
        as in the runtime)."""
        while True:
            due = [a for a in self.armed if a[0] <= ms]
            if not due:
                return
            when, tick = min(due, key=lambda a: a[0])   # the first armed of the earliest
            self.armed.remove((when, tick))
            self.at(when)
            self.c.handle(tick, self.c.address)
            self._drain()


def _fenced_brokers(ctx: Ctx) -> list[int]:
    return [b for _, b in ctx.fenced]


@kafka("3.7.0", "BrokerHeartbeatManagerTest", "testNextCheckTimeNs")
def test_3_7_checks_when_the_oldest_session_ends_and_rearms_for_the_next() -> None:
    """Brokers heard from at 0, 2, 3 and 4 s: the check is armed for the first moment
    broker 0's session is past (9 s + 1 ms), fences broker 0 alone and is re-armed for
    broker 1's (11 s + 1 ms); the checks at the ends of 1's and 2's sessions fence one each,
    and the next is armed for 3's."""
    ctx = Ctx("3.7", [(0, 0), (1, 2000), (2, 3000), (3, 4000)])
    assert ctx.next_check() == SESSION_MS + 1
    ctx.run_until(SESSION_MS)
    assert ctx.fenced == []                      # exactly at the timeout: still valid
    ctx.run_until(SESSION_MS + 1)
    assert ctx.fenced == [(SESSION_MS + 1, 0)]
    assert ctx.next_check() == 2000 + SESSION_MS + 1
    ctx.run_until(3000 + SESSION_MS + 1)
    assert _fenced_brokers(ctx) == [0, 1, 2]
    assert ctx.next_check() == 4000 + SESSION_MS + 1


@kafka("3.7.0", "BrokerHeartbeatManagerTest", "testFindOneStaleBroker")
def test_3_7_fences_one_stale_broker_per_check_the_one_heard_from_longest_ago() -> None:
    """Brokers heard from at 0, 5 and 6 ms. Long after every session, the armed check
    fences broker 0 only; the deadline re-armed at once (every session is past) fences 1,
    then 2, each in its own check, and with every broker fenced nothing is armed."""
    ctx = Ctx("3.7", [(0, 0), (1, 5), (2, 6)])
    late = 40 + SESSION_MS
    ctx.at(late)
    _due, tick = ctx.armed[-1]
    ctx.armed.clear()
    ctx.c.handle(tick, ctx.c.address)
    ctx._drain()
    assert ctx.fenced == [(late, 0)]
    assert ctx.next_check() == late               # the next stale one: at once
    ctx.run_until(late)
    assert ctx.fenced == [(late, 0), (late, 1), (late, 2)]
    assert ctx.armed == []


@kafka("3.7.0", "BrokerHeartbeatManagerTest", "testHasValidSession")
def test_3_7_a_heartbeat_moves_the_check_to_the_next_oldest_session() -> None:
    """Brokers 0 and 1 heard from at 0 and 5 s: the check is due at 9 s + 1 ms. Broker 0
    beats at 6 s: its session is valid again, the check moves to broker 1's end (14 s +
    1 ms), and at 9 s + 1 ms nobody is fenced."""
    ctx = Ctx("3.7", [(0, 0), (1, 5000)])
    assert ctx.next_check() == SESSION_MS + 1
    ctx.heartbeat(0, 6000)
    assert ctx.next_check() == 5000 + SESSION_MS + 1
    ctx.run_until(SESSION_MS + 1)
    assert ctx.fenced == []
    ctx.run_until(5000 + SESSION_MS + 1)
    assert ctx.fenced == [(5000 + SESSION_MS + 1, 1)]


@kafka("4.1.0", "BrokerHeartbeatTrackerTest", "testMaybeRemoveExpiredWithAllExpired")
@kafka("4.1.0", "BrokerHeartbeatTrackerTest", "testIsExpiredIsTrueAfterExpirationTime")
def test_4_1_checks_every_eighth_of_a_session_and_fences_one_per_run() -> None:
    """4.1's periodic task: the first run a period (9 s / 8 = 1,125 ms) after the controller
    became active, then every period. Three brokers heard from at 0: the runs up to 9 s
    find nobody expired; the run at 9 s + 1,125 ms fences one, and runs 10 ms apart fence
    the other two (every broker expired is removed, one per run); a run that fenced one
    is followed 10 ms later by another, and one that fenced none by the period again."""
    ctx = Ctx("4.1", [(0, 0), (1, 0), (2, 0)])
    period = SESSION_MS // 8
    assert ctx.next_check() == period
    ctx.run_until(SESSION_MS)
    assert ctx.fenced == []
    first = 9 * period     # 10,125 ms: the first run past 9,000 ms
    ctx.run_until(first + 20)
    assert ctx.fenced == [(first, 0), (first + 10, 1), (first + 20, 2)]
    assert ctx.next_check() == first + 30      # a run that fenced one: again in 10 ms
    ctx.run_until(first + 30)
    assert len(ctx.fenced) == 3 and ctx.next_check() == first + 30 + period


@kafka("4.1.0", "BrokerHeartbeatTrackerTest", "testIsExpiredIsFalseForTheCurrentTime")
def test_4_1_a_session_is_not_expired_at_exactly_its_timeout() -> None:
    """A broker heard from at 0 with an 8,000 ms session is still valid at the run of
    8,000 ms (last contact + timeout is not yet past) and fenced at the next."""
    store = ControllerStore()
    c = Controller(store, rules_for("4.1"), brokers=(0,), session_timeout_ms=8000)
    c.start()
    c.drain()
    c.handle(BrokerRegistration(0, 1, True), ("broker-0", "broker"))
    c.drain()
    events: list[dict[str, Any]] = []
    for ms in (8000, 9000):   # period 1,000 ms: runs at 8,000 and 9,000 ms
        c.now_us = ms * 1000
        c.handle(c.armed_session_check, c.address)
        events += [{"ms": ms, **e.fields} for e in c.drain()
                   if isinstance(e, Emit) and e.event == "broker_fenced"]
    assert events == [{"ms": 9000, "broker": 0, "reason": "session_timeout"}]
