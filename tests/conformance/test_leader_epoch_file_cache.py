"""The leader-epoch cache (isrlab's ``LeaderEpochCache``) held against Kafka's
``LeaderEpochFileCacheTest`` in its two generations (issue 17, divergences 1 and 7).

* 2.0.0 stands for the eras 0.11-2.0: ``assign`` refuses an epoch that is not above the
  latest or a start offset below the latest's; ``endOffsetFor`` of an epoch below the first
  cached one is undefined.
* 3.7.0 stands for the eras 2.1 and later (KAFKA-7415): ``assign`` takes the newest entry and
  drops every entry it conflicts with; an epoch below the first answers (that epoch, the first
  entry's start offset).

The cache is built from the era's rules (``Rules.epoch_cache_kafka7415``), as a replica
builds it, so these tests also pin which era gets which generation. Kafka's caches find the
log end offset through a callback (2.0.0) or take it as an argument (3.7.0); isrlab's
``end_offset_for`` takes it as an argument in both.

Every reading goes through :func:`entries`, which also asserts that the checkpoint file holds
what the cache holds: isrlab writes the checkpoint on every change (Kafka's 2.0.0 and 3.7.0
caches write it in ``assign``, ``truncateFromEnd``, ``truncateFromStart`` and
``clearAndFlush``).

Not ported from 3.7.0: ``testPreviousEpoch``, ``testFindPreviousEpoch``,
``testFindPreviousEntry``, ``testFindNextEpoch``, ``testGetEpochEntry`` and
``shouldFetchEpochForGivenOffset`` test lookups that only tiered storage (KIP-405) and
``ListOffsets`` by timestamp use; isrlab models neither (docs/fidelity.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from kafkacite import kafka

from actors.eras import rules_for
from actors.log import UNDEFINED, LeaderEpochCache

LEFC = "LeaderEpochFileCacheTest"
UNDEFINED_PAIR = (UNDEFINED, UNDEFINED)
#: the isrlab era each Kafka tag's cache stands for
BOTH_ERAS = pytest.mark.parametrize("era", ["2.0", "3.7"])


def cache(era: str, *entries: tuple[int, int]) -> LeaderEpochCache:
    """An empty cache of ``era``'s generation, then ``assign`` of each (epoch, start offset)."""
    c = LeaderEpochCache(kafka7415=rules_for(era).epoch_cache_kafka7415)
    for epoch, start_offset in entries:
        c.assign(epoch, start_offset)
    return c


def entries(c: LeaderEpochCache) -> list[tuple[int, int]]:
    """The cache's entries, after checking that its checkpoint file holds the same."""
    assert c.checkpoint == c.entries, "the leader-epoch checkpoint lags the cache"
    return c.entries


def three_epochs(era: str) -> LeaderEpochCache:
    """The fixture of Kafka's truncation tests: epochs 2, 3, 4 starting at 6, 8, 11."""
    return cache(era, (2, 6), (3, 8), (4, 11))


# --- assign and endOffsetFor: the rules both generations share ---------------------------

@kafka("2.0.0", LEFC, "shouldAddEpochAndMessageOffsetToCache")
@kafka("3.7.0", LEFC, "shouldAddEpochAndMessageOffsetToCache")
@BOTH_ERAS
def test_an_assigned_epoch_is_the_latest_and_ends_at_the_log_end(era: str) -> None:
    """assign(2, 10): latest epoch 2, one entry (2, 10), and epoch 2 ends at the LEO (11)."""
    c = cache(era, (2, 10))
    assert c.latest_epoch() == 2
    assert entries(c) == [(2, 10)]
    assert c.end_offset_for(2, 11) == (2, 11)


@kafka("2.0.0", LEFC, "shouldReturnLogEndOffsetIfLatestEpochRequested")
@kafka("3.7.0", LEFC, "shouldReturnLogEndOffsetIfLatestEpochRequested")
@BOTH_ERAS
def test_the_latest_epoch_ends_at_the_log_end_offset(era: str) -> None:
    """Two assigns of epoch 2 (11, then 12): epoch 2 ends at the LEO, 14."""
    assert cache(era, (2, 11), (2, 12)).end_offset_for(2, 14) == (2, 14)


@kafka("2.0.0", LEFC, "shouldReturnUndefinedOffsetIfUndefinedEpochRequested")
@kafka("3.7.0", LEFC, "shouldReturnUndefinedOffsetIfUndefinedEpochRequested")
@BOTH_ERAS
def test_a_request_for_the_undefined_epoch_is_undefined_on_a_filled_cache(era: str) -> None:
    """A bootstrapping follower asks for epoch -1: (-1, -1) although epochs 2 and 3 exist."""
    assert cache(era, (2, 11), (3, 12)).end_offset_for(UNDEFINED, 0) == UNDEFINED_PAIR


@kafka("2.0.0", LEFC,
       "shouldNotOverwriteLogEndOffsetForALeaderEpochOnceItHasBeenAssigned")
@kafka("3.7.0", LEFC,
       "shouldNotOverwriteLogEndOffsetForALeaderEpochOnceItHasBeenAssigned")
@BOTH_ERAS
def test_an_epoch_keeps_its_first_start_offset_when_assigned_again_at_the_next(era: str) -> None:
    """assign(2, 9) then assign(2, 10): the entry stays (2, 9)."""
    c = cache(era, (2, 9))
    assert c.assign(2, 10) is False
    assert entries(c) == [(2, 9)]


@kafka("2.0.0", LEFC,
       "shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned")
@kafka("3.7.0", LEFC,
       "shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned")
@BOTH_ERAS
def test_an_epoch_keeps_its_first_start_offset_when_assigned_again_later(era: str) -> None:
    """assign(2, 6) then assign(2, 10): epoch 2 still starts at 6."""
    c = cache(era, (2, 6), (2, 10))
    assert c.start_offset_of(2) == 6


@kafka("2.0.0", LEFC, "shouldNotUpdateEpochAndStartOffsetIfItDidNotChange")
@kafka("3.7.0", LEFC, "shouldNotUpdateEpochAndStartOffsetIfItDidNotChange")
@BOTH_ERAS
def test_appending_more_of_the_latest_epoch_adds_no_entry(era: str) -> None:
    """assign(2, 6), assign(2, 7): one entry, (2, 6)."""
    assert entries(cache(era, (2, 6), (2, 7))) == [(2, 6)]


@kafka("2.0.0", LEFC, "shouldReturnUnsupportedIfNoEpochRecorded")
@kafka("3.7.0", LEFC, "shouldReturnUnsupportedIfNoEpochRecorded")
@BOTH_ERAS
def test_an_empty_cache_answers_undefined_for_epoch_zero(era: str) -> None:
    """No entries: endOffsetFor(0) is (-1, -1)."""
    assert cache(era).end_offset_for(0, 0) == UNDEFINED_PAIR


@kafka("2.0.0", LEFC,
       "shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested")
@kafka("3.7.0", LEFC,
       "shouldReturnUnsupportedIfNoEpochRecordedAndUndefinedEpochRequested")
@BOTH_ERAS
def test_an_empty_cache_answers_undefined_for_the_undefined_epoch(era: str) -> None:
    """No entries, a follower on an old message format asks for epoch -1 with LEO 73:
    (-1, -1), not the LEO."""
    assert cache(era).end_offset_for(UNDEFINED, 73) == UNDEFINED_PAIR


@kafka("2.0.0", LEFC, "shouldFetchEndOffsetOfEmptyCache")
@kafka("3.7.0", LEFC, "shouldFetchEndOffsetOfEmptyCache")
@BOTH_ERAS
def test_an_empty_cache_answers_undefined_for_any_epoch(era: str) -> None:
    """No entries: endOffsetFor(7) is (-1, -1)."""
    assert cache(era).end_offset_for(7, 0) == UNDEFINED_PAIR


@kafka("2.0.0", LEFC, "shouldFetchLatestEpochOfEmptyCache")
@kafka("3.7.0", LEFC, "shouldFetchLatestEpochOfEmptyCache")
@BOTH_ERAS
def test_an_empty_cache_has_no_latest_epoch(era: str) -> None:
    """No entries: the latest epoch is undefined (-1; Kafka 3.7 says OptionalInt.empty)."""
    c = cache(era)
    assert c.latest_epoch() == UNDEFINED
    assert c.latest_entry() is None


@kafka("2.0.0", LEFC,
       "shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch")
@kafka("3.7.0", LEFC,
       "shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch")
@BOTH_ERAS
def test_an_earlier_epoch_ends_where_the_next_one_starts(era: str) -> None:
    """Epochs 1, 2, 3 each assigned twice (11/12, 13/14, 15/16), LEO 17: epoch 2 ends at 15."""
    c = cache(era, (1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert c.end_offset_for(2, 17) == (2, 15)


@kafka("2.0.0", LEFC,
       "shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested")
@kafka("3.7.0", LEFC,
       "shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested")
@BOTH_ERAS
def test_an_epoch_missing_from_the_cache_answers_for_the_largest_epoch_below_it(era: str) -> None:
    """Epochs 0@10, 2@13, 4@17: epoch 1 answers (0, 13); epochs 2 and 3 answer (2, 17)."""
    c = cache(era, (0, 10), (2, 13), (4, 17))
    assert c.end_offset_for(1, 0) == (0, 13)
    assert c.end_offset_for(2, 0) == (2, 17)
    assert c.end_offset_for(3, 0) == (2, 17)


@kafka("2.0.0", LEFC,
       "shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked")
@kafka("3.7.0", LEFC,
       "shouldReturnInvalidOffsetIfEpochIsRequestedWhichIsNotCurrentlyTracked")
@BOTH_ERAS
def test_an_epoch_above_every_cached_one_is_undefined(era: str) -> None:
    """Only (2, 100) cached: endOffsetFor(3) is (-1, -1), never the LEO; the leader turns it
    into OFFSET_OUT_OF_RANGE (see test_partition.py)."""
    assert cache(era, (2, 100)).end_offset_for(3, 100) == UNDEFINED_PAIR


@kafka("2.0.0", LEFC, "shouldSupportEpochsThatDoNotStartFromZero")
@kafka("3.7.0", LEFC, "shouldSupportEpochsThatDoNotStartFromZero")
@BOTH_ERAS
def test_a_cache_may_start_at_any_epoch(era: str) -> None:
    """assign(2, 6), LEO 7: epoch 2 ends at 7 and the cache holds (2, 6) alone."""
    c = cache(era, (2, 6))
    assert c.end_offset_for(2, 7) == (2, 7)
    assert entries(c) == [(2, 6)]


@kafka("2.0.0", LEFC, "shouldPersistEpochsBetweenInstances")
@kafka("3.7.0", LEFC, "shouldPersistEpochsBetweenInstances")
@BOTH_ERAS
def test_a_cache_read_back_from_its_checkpoint_holds_the_assigned_epochs(era: str) -> None:
    """assign(2, 6) is in the checkpoint file at once: a new cache on the same file (a
    restart, even after a power loss) reads (2, 6) back."""
    before = cache(era, (2, 6))
    after = cache(era)
    after.checkpoint = before.checkpoint
    after.reload()
    assert entries(after) == [(2, 6)]


@kafka("2.0.0", LEFC, "shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes")
@kafka("3.7.0", LEFC, "shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes")
@BOTH_ERAS
def test_leaders_changing_without_appends_keep_every_epoch_ending_where_the_next_starts(
        era: str) -> None:
    """Epochs 0 and 1 both start at 0: epoch 1 ends at the LEO (0, then 5 after five
    appends), epoch 0 at 0; epoch 2 at 5 with LEO 10: 2 ends at 10, 1 at 5, 0 at 0."""
    c = cache(era, (0, 0), (1, 0))
    assert c.latest_epoch() == 1
    assert c.end_offset_for(1, 0) == (1, 0)
    assert c.end_offset_for(0, 0) == (0, 0)
    assert c.end_offset_for(1, 5) == (1, 5)
    assert c.end_offset_for(0, 5) == (0, 0)
    c.assign(2, 5)
    assert [c.end_offset_for(e, 10) for e in (2, 1, 0)] == [(2, 10), (1, 5), (0, 0)]


@kafka("2.0.0", LEFC,
       "shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages")
@kafka("3.7.0", LEFC,
       "shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages")
@BOTH_ERAS
def test_a_follower_appending_record_by_record_keeps_one_entry_an_epoch(era: str) -> None:
    """Three records of each epoch 0, 1, 2 assigned one by one: the latest epoch follows the
    records, the latest ends at the LEO, epoch 0 ends at 3 and epoch 1 at 6."""
    c = cache(era)
    leo = 0
    for epoch in (0, 1, 2):
        for _ in range(3):
            c.assign(epoch, leo)
            leo += 1
        assert c.latest_epoch() == epoch
        assert c.end_offset_for(epoch, leo) == (epoch, leo)
    assert c.end_offset_for(0, leo) == (0, 3)
    assert c.end_offset_for(1, leo) == (1, 6)
    assert entries(c) == [(0, 0), (1, 3), (2, 6)]


# --- truncation from the end (log truncation) and from the start (log start offset) -----

ALL_THREE = [(2, 6), (3, 8), (4, 11)]
#: Kafka's cases on epochs 2, 3, 4 at 6, 8, 11: (offset, entries after, its 2.0.0 method,
#: its 3.7.0 method). 2.0.0 calls ``truncateFromEnd`` ``clearAndFlushLatest`` and
#: ``truncateFromStart`` ``clearAndFlushEarliest``, and swaps the two "undefined" names.
FROM_END = [
    (8, [(2, 6)], "shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries",
     "shouldDropEntriesOnEpochBoundaryWhenRemovingLatestEntries"),
    (9, [(2, 6), (3, 8)], "shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest",
     "shouldDropEntriesBetweenEpochBoundaryWhenRemovingNewest"),
    (UNDEFINED, ALL_THREE, "shouldNotResetEpochHistoryHeadIfUndefinedPassed",
     "shouldNotResetEpochHistoryTailIfUndefinedPassed"),
]
FROM_START = [
    (8, [(3, 8), (4, 11)], "shouldPreserveResetOffsetOnClearEarliestIfOneExists",
     "shouldPreserveResetOffsetOnClearEarliestIfOneExists"),
    (9, [(3, 9), (4, 11)], "shouldUpdateSavedOffsetWhenOffsetToClearToIsBetweenEpochs",
     "shouldUpdateSavedOffsetWhenOffsetToClearToIsBetweenEpochs"),
    (9, [(3, 9), (4, 11)], "shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest",
     "shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest"),
    (1, ALL_THREE, "shouldNotClearAnythingIfOffsetToEarly",
     "shouldNotClearAnythingIfOffsetToEarly"),
    (6, ALL_THREE, "shouldNotClearAnythingIfOffsetToFirstOffset",
     "shouldNotClearAnythingIfOffsetToFirstOffset"),
    (11, [(4, 11)], "shouldRetainLatestEpochOnClearAllEarliest",
     "shouldRetainLatestEpochOnClearAllEarliest"),
    (15, [(4, 15)], "shouldRetainLatestEpochOnClearAllEarliestAndUpdateItsOffset",
     "shouldRetainLatestEpochOnClearAllEarliestAndUpdateItsOffset"),
    (UNDEFINED, ALL_THREE, "shouldNotResetEpochHistoryTailIfUndefinedPassed",
     "shouldNotResetEpochHistoryHeadIfUndefinedPassed"),
]

F = TypeVar("F", bound=Callable[..., Any])


def _cite_cases(cases: list[tuple[int, list[tuple[int, int]], str, str]]
                ) -> Callable[[F], F]:
    """One ``@kafka`` mark per case and tag, and the cases as parameters (era × case)."""
    def mark(fn: F) -> F:
        for _, _, m20, m37 in cases:
            fn = kafka("3.7.0", LEFC, m37)(kafka("2.0.0", LEFC, m20)(fn))
        params = [(era, off, after) for era in ("2.0", "3.7") for off, after, _, _ in cases]
        return pytest.mark.parametrize("era, offset, after", params)(fn)  # type: ignore[no-any-return]
    return mark


@_cite_cases(FROM_END)
def test_truncating_the_end_drops_every_epoch_starting_at_or_after_the_offset(
        era: str, offset: int, after: list[tuple[int, int]]) -> None:
    """``truncateFromEnd`` (a log truncated to ``offset``): at an epoch's start that epoch
    goes too (inclusive), inside one it stays, at -1 nothing changes; the checkpoint
    follows."""
    c = three_epochs(era)
    c.truncate_from_end(offset)
    assert entries(c) == after
    assert c.latest_epoch() == after[-1][0]


@_cite_cases(FROM_START)
def test_moving_the_start_keeps_the_last_epoch_at_or_below_it_moved_there(
        era: str, offset: int, after: list[tuple[int, int]]) -> None:
    """``truncateFromStart`` (the log start offset moved to ``offset``): below or at the
    first epoch's start nothing changes; otherwise the epochs starting at or before it give
    way to the latest of them, starting at ``offset`` (never an empty cache); -1 changes
    nothing; the checkpoint follows."""
    c = three_epochs(era)
    c.truncate_from_start(offset)
    assert entries(c) == after


@kafka("2.0.0", LEFC, "shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest2")
@kafka("3.7.0", LEFC, "shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest2")
@BOTH_ERAS
def test_moving_the_start_inside_the_first_epoch_moves_only_its_start(era: str) -> None:
    """(0,0) (1,7) (2,10) truncated from the start at 5: (0,5) (1,7) (2,10)."""
    c = cache(era, (0, 0), (1, 7), (2, 10))
    c.truncate_from_start(5)
    assert entries(c) == [(0, 5), (1, 7), (2, 10)]


@kafka("2.0.0", LEFC, "shouldClearAllEntries")
@kafka("3.7.0", LEFC, "shouldClearAllEntries")
@BOTH_ERAS
def test_clearing_empties_the_cache_and_its_checkpoint(era: str) -> None:
    """clearAndFlush: no entries left, in memory or in the checkpoint."""
    c = three_epochs(era)
    c.clear()
    assert entries(c) == []


@kafka("2.0.0", LEFC, "shouldClearEarliestOnEmptyCache")
@kafka("3.7.0", LEFC, "shouldClearEarliestOnEmptyCache")
@BOTH_ERAS
def test_moving_the_start_of_an_empty_cache_is_harmless(era: str) -> None:
    """truncateFromStart(7) on an empty cache neither fails nor adds an entry."""
    c = cache(era)
    c.truncate_from_start(7)
    assert entries(c) == []


@kafka("2.0.0", LEFC, "shouldClearLatestOnEmptyCache")
@kafka("3.7.0", LEFC, "shouldClearLatestOnEmptyCache")
@BOTH_ERAS
def test_truncating_the_end_of_an_empty_cache_is_harmless(era: str) -> None:
    """truncateFromEnd(7) on an empty cache neither fails nor adds an entry."""
    c = cache(era)
    c.truncate_from_end(7)
    assert entries(c) == []


# --- where the generations differ: 0.11-2.0 refuse, 2.1+ trust the latest append --------

@kafka("2.0.0", LEFC, "shouldAllowLeaderEpochToChangeEvenIfOffsetDoesNot")
def test_before_2_1_a_new_epoch_at_the_same_offset_is_added_beside_the_old() -> None:
    """2.0: assign(2, 9), assign(3, 9) keeps both (2, 9) and (3, 9): epoch 2 is empty."""
    assert entries(cache("2.0", (2, 9), (3, 9))) == [(2, 9), (3, 9)]


@kafka("3.7.0", LEFC, "shouldEnforceMonotonicallyIncreasingStartOffsets")
def test_from_2_1_a_new_epoch_at_the_same_offset_replaces_the_empty_one() -> None:
    """3.7: assign(2, 9), assign(3, 9) leaves (3, 9) alone: an entry whose start offset is
    not below the new one conflicts with it."""
    assert entries(cache("3.7", (2, 9), (3, 9))) == [(3, 9)]


@kafka("2.0.0", LEFC, "shouldReturnUnsupportedIfRequestedEpochLessThanFirstEpoch")
def test_before_2_1_an_epoch_below_the_first_cached_is_undefined() -> None:
    """2.0: epochs 5@11, 6@12, 7@13; endOffsetFor(4) is (-1, -1), and the follower falls back
    to its high watermark."""
    c = cache("2.0", (5, 11), (6, 12), (7, 13))
    assert c.end_offset_for(4, 0) == UNDEFINED_PAIR


@kafka("3.7.0", LEFC, "shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch")
def test_from_2_1_an_epoch_below_the_first_cached_ends_where_the_first_starts() -> None:
    """3.7: epochs 5@11, 6@12, 7@13; endOffsetFor(4) is (4, 11): the requested epoch with the
    first entry's start offset."""
    c = cache("3.7", (5, 11), (6, 12), (7, 13))
    assert c.end_offset_for(4, 0) == (4, 11)


@kafka("2.0.0", LEFC, "shouldNotLetEpochGoBackwardsEvenIfMessageEpochsDo")
def test_before_2_1_an_older_epoch_appended_later_is_refused() -> None:
    """2.0: (1,5) (2,6), then a record of epoch 1 at 7 (LEO 8): refused; epoch 2 stays the
    latest and ends at the LEO, 8; epoch 1 still ends at 6."""
    c = cache("2.0", (1, 5), (2, 6))
    assert c.assign(1, 7) is False
    assert c.latest_epoch() == 2
    assert c.end_offset_for(1, 8) == (1, 6)
    assert c.end_offset_for(2, 8) == (2, 8)
    assert entries(c) == [(1, 5), (2, 6)]


@kafka("3.7.0", LEFC, "shouldEnforceMonotonicallyIncreasingEpochs")
def test_from_2_1_an_older_epoch_appended_later_drops_the_later_epochs() -> None:
    """3.7: (1,5) (2,6), then a record of epoch 1 at 7 (LEO 8): the latest append wins; the
    cache is (1, 7) alone, epoch 1 ends at the LEO and epoch 2 is undefined."""
    c = cache("3.7", (1, 5), (2, 6))
    assert c.assign(1, 7) is True
    assert c.latest_epoch() == 1
    assert c.end_offset_for(1, 8) == (1, 8)
    assert c.end_offset_for(2, 8) == UNDEFINED_PAIR
    assert entries(c) == [(1, 7)]


@kafka("2.0.0", LEFC, "shouldNotLetOffsetsGoBackwardsEvenIfEpochsProgress")
def test_before_2_1_a_later_epoch_at_an_earlier_offset_is_refused() -> None:
    """2.0: assign(2, 6) then assign(3, 5): the second is ignored, (2, 6) remains."""
    c = cache("2.0", (2, 6))
    assert c.assign(3, 5) is False
    assert entries(c) == [(2, 6)]


@kafka("3.7.0", LEFC, "shouldEnforceOffsetsIncreaseMonotonically")
def test_from_2_1_a_later_epoch_at_an_earlier_offset_replaces_the_conflicting_entry() -> None:
    """3.7: assign(2, 6) then assign(3, 5): the last assignment wins, (3, 5) alone."""
    c = cache("3.7", (2, 6))
    assert c.assign(3, 5) is True
    assert entries(c) == [(3, 5)]


@kafka("3.7.0", LEFC, "shouldTruncateIfMatchingEpochButEarlierStartingOffset")
def test_from_2_1_the_latest_epoch_at_an_earlier_offset_drops_what_started_after_it() -> None:
    """3.7: 5@11, 6@12, 7@13, then epoch 7 at 12: entries 6@12 and 7@13 go, (7, 12) comes;
    epochs 5 and 6 both end at 12."""
    c = cache("3.7", (5, 11), (6, 12), (7, 13))
    assert c.assign(7, 12) is True
    assert entries(c) == [(5, 11), (7, 12)]
    assert c.end_offset_for(5, 0) == (5, 12)
    assert c.end_offset_for(6, 0) == (5, 12)


@kafka("2.0.0", LEFC,
       "shouldNotOverwriteOffsetForALeaderEpochOnceItHasBeenAssigned")
def test_before_2_1_the_latest_epoch_at_an_earlier_offset_is_refused() -> None:
    """2.0, the same appends as 3.7.0's ``shouldTruncateIfMatchingEpochButEarlierStartingOffset``:
    ``assign`` only ever appends, so epoch 7 keeps its start at 13 and epoch 6 ends there."""
    c = cache("2.0", (5, 11), (6, 12), (7, 13))
    assert c.assign(7, 12) is False
    assert entries(c) == [(5, 11), (6, 12), (7, 13)]
    assert c.end_offset_for(6, 0) == (6, 13)

