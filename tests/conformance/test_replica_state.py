"""What a leader knows of each follower (isrlab's ``FollowerState``), held against Kafka's
``ReplicaTest`` at 3.7.0 (issue 17, divergence 7).

Kafka's times start at 0 on a mock clock and use 0 for "never"; isrlab's virtual clock also
starts at 0, so its "never" is ``NEVER_MS`` (far in the past): where Kafka's test expects
0 for a time that was never set, these tests expect ``NEVER_MS``.
"""

from __future__ import annotations

import pytest
from kafkacite import kafka

from actors.replica import NEVER_MS, UNKNOWN_OFFSET, FollowerState, StaleFetch

LAG_MS = 30000
T0 = 1_000


def _state(st: FollowerState) -> tuple[int, int, int, int, int, int]:
    return (st.log_start_offset, st.log_end_offset, st.last_caught_up_time_ms,
            st.last_fetch_leader_leo, st.last_fetch_time_ms, st.broker_epoch)


def _fetched(at_ms: int = T0) -> FollowerState:
    st = FollowerState()
    st.update_fetch_state(10, 1, at_ms, 10, 1)
    return st


@kafka("3.7.0", "ReplicaTest", "testInitialState")
def test_a_new_follower_state_knows_no_offsets_no_times_and_no_broker_epoch() -> None:
    """LSO and LEO unknown, last caught-up time never, leader LEO at the last fetch 0, last
    fetch never, no broker epoch."""
    assert _state(FollowerState()) == (UNKNOWN_OFFSET, UNKNOWN_OFFSET, NEVER_MS, 0, NEVER_MS,
                                       -1)


@kafka("3.7.0", "ReplicaTest", "testUpdateFetchState")
def test_a_fetch_is_caught_up_now_at_the_leo_or_as_of_the_previous_fetch() -> None:
    """A fetch at 5 with the leader at 10 is not caught up; a fetch at 10 with the leader at
    15 reached the leader LEO of the previous fetch, so it counts as caught up at that
    fetch's time; a fetch at 15 with the leader at 15 is caught up now. The LSO, LEO, leader
    LEO seen and last fetch time follow each fetch."""
    st = FollowerState()
    st.update_fetch_state(5, 1, 100, 10, 1)
    assert _state(st) == (1, 5, NEVER_MS, 10, 100, 1)
    st.update_fetch_state(10, 2, 200, 15, 1)
    assert _state(st) == (2, 10, 100, 15, 200, 1)
    st.update_fetch_state(15, 3, 300, 15, 1)
    assert _state(st) == (3, 15, 300, 15, 300, 1)


@kafka("3.7.0", "ReplicaTest", "testResetReplicaStateWhenLeaderIsReelectedAndReplicaIsInSync")
def test_a_reelected_leader_keeps_an_in_sync_followers_offsets_and_restarts_its_clock(
) -> None:
    """Re-elected, follower in the ISR: LSO 1 and LEO 10 kept, caught up and last fetch at
    the reset time, the leader LEO seen is the leader's now (11), the broker epoch kept."""
    st = _fetched()
    st.reset(5_000, 11, new_leader=False, in_sync=True)
    assert _state(st) == (1, 10, 5_000, 11, 5_000, 1)


@kafka("3.7.0", "ReplicaTest",
       "testResetReplicaStateWhenLeaderIsReelectedAndReplicaIsNotInSync")
def test_a_reelected_leader_keeps_an_out_of_sync_followers_offsets_but_not_its_times(
) -> None:
    """Re-elected, follower not in the ISR: offsets kept, leader LEO seen 11, but caught up
    and last fetch never (it must fetch before it can rejoin)."""
    st = _fetched()
    st.reset(5_000, 11, new_leader=False, in_sync=False)
    assert _state(st) == (1, 10, NEVER_MS, 11, NEVER_MS, 1)


@kafka("3.7.0", "ReplicaTest", "testResetReplicaStateWhenNewLeaderIsElectedAndReplicaIsInSync")
def test_a_new_leader_forgets_an_in_sync_followers_offsets_but_counts_it_caught_up_now(
) -> None:
    """New leader, follower in the ISR: offsets, leader LEO seen and broker epoch unknown,
    last fetch never, caught up at the reset time."""
    st = _fetched()
    st.reset(5_000, 11, new_leader=True, in_sync=True)
    assert _state(st) == (UNKNOWN_OFFSET, UNKNOWN_OFFSET, 5_000, UNKNOWN_OFFSET, NEVER_MS, -1)


@kafka("3.7.0", "ReplicaTest",
       "testResetReplicaStateWhenNewLeaderIsElectedAndReplicaIsNotInSync")
def test_a_new_leader_forgets_an_out_of_sync_follower_entirely() -> None:
    """New leader, follower not in the ISR: everything unknown or never."""
    st = _fetched()
    st.reset(5_000, 11, new_leader=True, in_sync=False)
    assert _state(st) == (UNKNOWN_OFFSET, UNKNOWN_OFFSET, NEVER_MS, UNKNOWN_OFFSET, NEVER_MS,
                          -1)


@kafka("3.7.0", "ReplicaTest", "testIsCaughtUpWhenReplicaIsCaughtUpToLogEnd")
def test_a_follower_at_the_leaders_leo_stays_caught_up_however_long_ago_it_fetched() -> None:
    """Not caught up before any fetch; caught up after fetching to the LEO (10), and still
    after the lag time passes, as long as the leader's LEO is still 10."""
    st = FollowerState()
    assert not st.is_caught_up(10, T0, LAG_MS)
    st.update_fetch_state(10, 1, T0, 10, 1)
    assert st.is_caught_up(10, T0, LAG_MS)
    assert st.is_caught_up(10, T0 + LAG_MS + 1, LAG_MS)


@kafka("3.7.0", "ReplicaTest", "testIsCaughtUpWhenReplicaIsNotCaughtUpToLogEnd")
def test_a_follower_behind_the_leo_is_caught_up_only_within_the_lag() -> None:
    """A fetch at 5 (leader 10) is not caught up; a fetch at 10 (leader 15) made it caught up
    as of the previous fetch, so it counts against a leader at 16 — until the lag passes."""
    st = FollowerState()
    assert not st.is_caught_up(10, T0, LAG_MS)
    st.update_fetch_state(5, 1, T0, 10, 1)
    assert not st.is_caught_up(10, T0, LAG_MS)
    st.update_fetch_state(10, 1, T0, 15, 1)
    assert st.is_caught_up(16, T0, LAG_MS)
    assert not st.is_caught_up(16, T0 + LAG_MS + 1, LAG_MS)


@kafka("3.7.0", "ReplicaTest", "testFenceStaleUpdates")
def test_a_fetch_from_an_older_incarnation_is_refused_under_kraft_only() -> None:
    """3.5+ (KIP-903): with the leader's metadata saying broker epoch 2, a fetch state update
    carrying epoch 1 is refused (NOT_LEADER_OR_FOLLOWER; the state unchanged); without the
    check (ZooKeeper mode: no alive epoch known, -1) it is applied."""
    kraft = FollowerState()
    kraft.update_fetch_state(5, 1, 1, 10, 2, alive_broker_epoch=2)
    before = _state(kraft)
    with pytest.raises(StaleFetch):
        kraft.update_fetch_state(5, 2, 3, 10, 1, alive_broker_epoch=2)
    assert _state(kraft) == before
    zk = FollowerState()
    zk.update_fetch_state(5, 1, 1, 10, 2)
    zk.update_fetch_state(5, 2, 3, 10, 1)
    assert (zk.log_start_offset, zk.broker_epoch) == (2, 1)
