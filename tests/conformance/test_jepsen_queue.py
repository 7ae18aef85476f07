"""isrlab's checker held against Jepsen's Kafka queue checker (issue 17, "the checker too").

Each test replays one history of Jepsen's ``kafka_test.clj`` (``kafkacite.JEPSEN_COMMIT``)
as isrlab trace events (:mod:`jepsenhist`) and compares isrlab's verdict with the one the
Jepsen test asserts. Where they differ the test says why, and ``docs/anomalies.md`` lists
every difference. The rule behind most of them: Jepsen sees only clients (it has no final
logs and no knowledge of the assignment protocol a ``subscribe`` ran), isrlab sees clients
*and* replicas, and follows the protocol in force.

Not ported: the transaction cases (``txn abort`` of ``poll-skip-test``, ``g0-test``,
``g1c-*``, ``precommitted-read-test``; isrlab models no transactions), ``realtime-lag-test``
(a measure, not an anomaly), ``unseen-test`` and ``inconsistent-offsets-test`` (isrlab
judges what was acknowledged against every replica's final log instead: ``lost_acked_write``,
``log_divergence``), the helper tests (``op->max-offsets``, ``log->…``, ``version-orders``)
and the generator test ``gen-poll-unseen-test``.
"""

from __future__ import annotations

import pytest
from jepsenhist import History
from kafkacite import jepsen


def _poll_skip_history(between: tuple[str, list[str], str] | None = None,
                       later: tuple[str, list[str], str] | None = None) -> History:
    """poll-skip-test: process 0 reads offsets 1, 2, then 4, then 7; process 1 reads 3 and
    process 2 writes 6, so 3 and 6 existed. ``between``/``later``: an assignment of process
    0 (kind, keys, protocol) before the read of 4 / the read of 7."""
    h = History()
    h.poll(0, {"x": [(1, "a"), (2, "b")]})
    h.poll(1, {"x": [(3, "c")]})
    if between:
        h.assign(0, between[1], between[2])
    h.poll(0, {"x": [(4, "d")]})
    if later:
        h.assign(0, later[1], later[2])
    h.send(2, "ok", ("x", "f", 6))
    h.poll(0, {"x": [(7, "g")]})
    h.send(3, "info", *[("x", v, None) for v in "abcdg"])
    return h


@jepsen("poll-skip-test")
def test_a_consumer_jumping_over_offsets_others_saw_skips_twice() -> None:
    """Jepsen: two poll skips (2 -> 4 skips c; 4 -> 7 skips f). isrlab: the same two. (isrlab
    compares offsets, Jepsen positions in its version order; isrlab's logs have no holes —
    no transaction markers — so an offset missed is a record missed.)"""
    assert _poll_skip_history().anomalies() == {"poll_skip": 2}


@jepsen("poll-skip-test", "with intermediate subscribe")
@pytest.mark.parametrize("kind, protocol, jepsen_skips, isrlab_skips", [
    ("subscribe", "eager", 0, 0),        # keys [y]: x's chain ends
    ("assign", "assign", 0, 0),
])
def test_an_assignment_without_the_partition_ends_its_chain(
        kind: str, protocol: str, jepsen_skips: int, isrlab_skips: int) -> None:
    """Process 0 is given [y] before it reads 4 and again before 7: x is not kept, so its
    next read starts a new chain. Jepsen: no skip; isrlab: none, whatever the protocol."""
    h = _poll_skip_history((kind, ["y"], protocol), (kind, ["y"], protocol))
    assert h.anomalies().get("poll_skip", 0) == isrlab_skips == jepsen_skips


@jepsen("poll-skip-test", "with intermediate subscribe")
@pytest.mark.parametrize("kind, protocol, isrlab_skips", [
    ("assign", "assign", 2),             # manual assignment keeps positions: agrees
    ("subscribe", "cooperative", 2),     # cooperative: kept partitions keep positions: agrees
    ("subscribe", "eager", 0),           # eager: positions restart at the committed offset
])
def test_an_assignment_keeping_the_partition_keeps_its_chain_unless_eager(
        kind: str, protocol: str, isrlab_skips: int) -> None:
    """Process 0 is given [x, y] before each read. Jepsen keeps x's position for both assign
    and subscribe and reports the two skips (in subscribe mode it reports them but does not
    fail the test: "our consumer might be rebalanced between transactions"). isrlab follows
    the protocol: a manual assign or a cooperative rebalance keeps the position — two skips;
    an eager rebalance gives every partition up and starts it again from the committed
    offset (Kafka's ``onJoinPrepare``), so what comes next is not a skip of this chain."""
    h = _poll_skip_history((kind, ["x", "y"], protocol), (kind, ["x", "y"], protocol))
    assert h.anomalies().get("poll_skip", 0) == isrlab_skips


def _nonmonotonic_poll_history(between: tuple[str, list[str], str] | None = None) -> History:
    """nonmonotonic-poll-test: process 0 reads 1 2 3, then 2 3 4."""
    h = History()
    h.send(0, "ok", *[("x", v, None) for v in "abcd"])
    h.poll(0, {"x": [(1, "a"), (2, "b"), (3, "c")]})
    if between:
        h.assign(0, between[1], between[2])
    h.poll(0, {"x": [(2, "b"), (3, "c"), (4, "d")]})
    return h


@jepsen("nonmonotonic-poll-test", "together")
def test_a_consumer_going_back_to_an_offset_it_read_is_nonmonotonic() -> None:
    """Jepsen: one nonmonotonic poll (c then b). isrlab: the same one."""
    assert _nonmonotonic_poll_history().anomalies() == {"nonmonotonic_poll": 1}


@jepsen("nonmonotonic-poll-test", "with intermediate subscribe")
@pytest.mark.parametrize("kind, keys, protocol, jepsen_n, isrlab_n", [
    ("subscribe", ["y"], "eager", 0, 0),
    ("assign", ["y"], "assign", 0, 0),
    ("assign", ["x", "y"], "assign", 1, 1),
    ("subscribe", ["x", "y"], "cooperative", 1, 1),
    ("subscribe", ["x", "y"], "eager", 1, 0),     # eager: re-reading after it is at-least-once
])
def test_going_back_after_a_reassignment_follows_the_protocol(
        kind: str, keys: list[str], protocol: str, jepsen_n: int, isrlab_n: int) -> None:
    """Between the two reads process 0 is given ``keys``. Without x the chain ends (both
    agree: none). With x: a manual assign or a cooperative rebalance keeps the position, so
    going back is nonmonotonic (both agree: one); after an eager rebalance Kafka restarts x
    from the committed offset, and reading again what was read after the last commit is
    Kafka's at-least-once delivery, not an anomaly (Jepsen reports one, tolerated in its
    subscribe mode; isrlab none)."""
    got = _nonmonotonic_poll_history((kind, keys, protocol)).anomalies()
    assert got.get("nonmonotonic_poll", 0) == isrlab_n
    assert (isrlab_n == jepsen_n) == (protocol != "eager" or keys == ["y"])


def _nonmonotonic_send_history(between: tuple[str, list[str], str] | None = None
                               ) -> History:
    """nonmonotonic-send-test: process 0 sends c, d (acknowledged at 3, 4), then a, b (at
    1, 2)."""
    h = History()
    h.send(0, "ok", ("x", "c", 3), ("x", "d", 4))
    if between:
        h.assign(0, between[1], between[2])
    h.send(0, "ok", ("x", "a", 1), ("x", "b", 2))
    return h


@jepsen("nonmonotonic-send-test")
def test_later_sends_acknowledged_at_lower_offsets_are_a_nonmonotonic_send() -> None:
    """Jepsen: one (d, then a at a lower offset). isrlab: the same one."""
    assert _nonmonotonic_send_history().anomalies() == {"nonmonotonic_send": 1}


@jepsen("nonmonotonic-send-test", "with intermediate subscribe")
@pytest.mark.parametrize("kind, keys, protocol, jepsen_n", [
    ("subscribe", ["y"], "eager", 0),
    ("assign", ["y"], "assign", 0),
    ("subscribe", ["x", "y"], "eager", 1),
    ("assign", ["x", "y"], "assign", 1),
])
def test_a_consumer_assignment_does_not_excuse_a_producer_reordering(
        kind: str, keys: list[str], protocol: str, jepsen_n: int) -> None:
    """Jepsen's process is producer and consumer at once, and it also forgets the send order
    of a key its consumer side stops reading. isrlab's producers are not consumers: a
    producer's records must land in send order whatever any consumer is assigned, so it
    reports the reordering in every case (Jepsen: only where x stays assigned)."""
    got = _nonmonotonic_send_history((kind, keys, protocol)).anomalies()
    assert got == {"nonmonotonic_send": 1}
    assert jepsen_n in (0, 1)


@jepsen("int-poll-skip-test")
def test_skips_inside_one_poll_and_between_polls_are_the_same_skip() -> None:
    """Process 0 reads a@1, d@4 in one poll, then a@1 and d@4 in two, then b@2 (process 1's
    sends place b between a and d). Jepsen: two internal poll skips (and two nonmonotonic
    polls across the operations, not asserted). isrlab has no operations — a chain is the
    sequence of records a consumer read — so it finds the same four: two skips, two steps
    back."""
    h = History()
    h.send(1, "info", ("x", "a", None), ("x", "b", None), ("x", "d", None))
    h.poll(0, {"x": [(1, "a"), (4, "d")]})
    h.poll(0, {"x": [(1, "a")]}).poll(0, {"x": [(4, "d")]})
    h.poll(0, {"x": [(2, "b")]})
    assert h.anomalies() == {"poll_skip": 2, "nonmonotonic_poll": 2}


@jepsen("int-nonmonotonic-poll-test")
def test_going_back_inside_one_poll_and_rereading_a_record_are_nonmonotonic() -> None:
    """Process 0 reads c@3 then a@1 in one poll, then b@2, c@3 and c@3 again. Jepsen: two
    internal nonmonotonic polls (c -> a, c -> c). isrlab: the same two."""
    h = History()
    h.send(0, "info", ("x", "a", None), ("x", "b", None), ("x", "c", None))
    h.poll(0, {"x": [(3, "c"), (1, "a")]})
    h.poll(0, {"x": [(2, "b"), (3, "c")]}).poll(0, {"x": [(3, "c")]})
    assert h.anomalies() == {"nonmonotonic_poll": 2}


@jepsen("int-nonmonotonic-send-test")
def test_a_send_whose_outcome_is_unknown_is_ordered_by_the_read_that_placed_it() -> None:
    """On x, one send's c is acknowledged at 3 and its later a at 1. On y, a send of d then
    b has no outcome (``:info``: no acknowledgement), but a poll reads b@2, c@3, d@4: the
    read places both, in the wrong order. Jepsen: both (two internal nonmonotonic sends).
    isrlab: both — before issue 17 it ordered only acknowledged sends and missed y's."""
    h = History()
    h.send(0, "ok", ("x", "c", 3), ("x", "a", 1))
    h.send(0, "info", ("y", "d", None), ("y", "b", None))
    h.send(1, "info", ("y", "c", None))
    h.poll(0, {"y": [(2, "b"), (3, "c"), (4, "d")]})
    assert h.anomalies() == {"nonmonotonic_send": 2}


@jepsen("duplicate-test", "basic")
def test_a_value_acknowledged_at_one_offset_and_read_at_another_is_a_duplicate() -> None:
    """a is acknowledged at 1 and read at 3. Jepsen: one duplicate (a at 1 and 3). isrlab:
    the same."""
    h = History()
    h.send(0, "ok", ("x", "a", 1))
    h.send(1, "info", ("x", "b", None))
    h.poll(2, {"x": [(2, "b"), (3, "a")]})
    assert h.anomalies() == {"duplicate": 1}


@jepsen("duplicate-test", "hash-insensitive")
def test_every_value_at_two_offsets_is_a_duplicate() -> None:
    """Ten values each acknowledged at 0 and read at 1. Jepsen: all ten are duplicates
    (whatever its hash order). isrlab: the ten, and — reading offset 1 ten times — nine
    nonmonotonic polls, which Jepsen's version order (one value per offset) cannot see."""
    h = History()
    for value in range(10):
        h.send(0, "ok", ("x", value, 0))
        h.poll(1, {"x": [(1, value)]})
    assert h.anomalies() == {"duplicate": 10, "nonmonotonic_poll": 9}


@jepsen("duplicate-test", "aborted txns")
def test_a_read_of_a_record_is_evidence_even_if_the_read_was_not_kept() -> None:
    """0 is acknowledged at 1; the send of 1 fails; a poll (that Jepsen's transaction then
    aborts) returns 0@11 and 1@12. Jepsen: 0 is a duplicate, 1 is not (its send failed, so
    it has no other offset). isrlab (no transactions: a returned record is a read record):
    the same single duplicate."""
    h = History()
    h.send(0, "ok", ("x", 0, 1))
    h.send(0, "fail", ("x", 1, None))
    h.poll(1, {"x": [(11, 0), (12, 1)]})
    assert h.anomalies() == {"duplicate": 1}


@jepsen("g1a-test")
def test_reading_a_record_whose_send_failed_is_not_an_anomaly_in_kafka() -> None:
    """A send of x=2, y=3 fails; a poll reads 2 at x@0. Jepsen: G1a (aborted read) — its
    ``:fail`` means the write certainly did not happen. isrlab: nothing — outside
    transactions a Kafka producer error does not mean the record was not written
    (``NOT_ENOUGH_REPLICAS_AFTER_APPEND`` and request timeouts come after the append), so a
    read of it is no evidence of anything wrong."""
    h = History()
    h.send(0, "fail", ("x", 2, None), ("y", 3, None))
    h.poll(1, {"x": [(0, 2)]})
    assert h.anomalies() == {}


@jepsen("lost-write-test", "consistent")
def test_a_write_is_lost_when_no_replica_holds_it_not_when_a_reader_missed_it() -> None:
    """a, b, d are acknowledged at 0, 1, 3 and a reader's first read is c@2. Jepsen: a and b
    are lost writes (read-side inference: a later record was read, so the earlier ones should
    have been). isrlab judges durability on every replica's final log: with all four there,
    nothing is lost — the reader simply started at 2 (a committed offset, or ``latest``);
    with a and b gone from the log, exactly those two are lost."""
    h = History(hw=4)
    h.send(0, "ok", ("x", "a", 0))
    h.send(0, "ok", ("x", "b", 1), ("x", "d", 3))
    h.send(1, "info", ("x", "c", None))
    h.poll(0, {"x": [(2, "c")]})
    h.trace.converged(True)
    kept = [(0, "a"), (1, "b"), (2, "c"), (3, "d")]
    whole = History(hw=4)
    whole.trace.events = list(h.trace.events)
    whole.trace.final_log(0, kept, hw=4)
    assert whole.anomalies() == {}
    h.trace.final_log(0, [(0, "e"), (1, "f"), (2, "c"), (3, "d")], hw=4)
    assert h.anomalies().get("lost_acked_write") == 2
