"""A follower whose fetch answer cannot be processed stops fetching that partition until a
new leader epoch (2.8.0 ``AbstractFetcherThread.processFetchRequest``: an unexpected error
while processing partition data marks the partition failed). The case isrlab meets: a 2.8
leader answers a diverging fetch below its log start offset with the diverging epoch (no
KAFKA-12996 check before ``Partition.readRecords``' divergence), and the 2.8 follower,
which processes the data before the divergence (no KAFKA-14704), fails at
``Log.maybeIncrementLogStartOffset`` because the leader's log start offset is above its
high watermark. 3.7's leader answers OFFSET_OUT_OF_RANGE instead, and its follower
truncates first (tests/conformance/test_partition_fetch.py covers the leader side)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "conformance"))

from harness import batches, follow, replica, sent  # noqa: E402

from actors.core import Timer  # noqa: E402
from actors.messages import NONE, Fetch, FetchResponse, Tick  # noqa: E402
from actors.replica import Replica  # noqa: E402

LEADER = ("broker-1", "t-0")


def _diverging_answer(f: Replica, req: Fetch, *, hw: int, log_start: int,
                      epoch: int, end: int) -> list[Any]:
    f.handle(FetchResponse("t", 0, NONE, hw, hw, log_start, (), epoch, end,
                           f.leader_epoch, req.correlation), LEADER)
    return f.drain()


def _first_fetch(f: Replica) -> Fetch:
    (req,) = sent(follow(f, 1, 3), Fetch)
    return req  # type: ignore[no-any-return]


def test_a_2_8_follower_fails_the_partition_when_the_leaders_log_start_is_above_its_hw(
        ) -> None:
    """The follower (LEO 4, HW 2, epochs 1 and 2) fetches in epoch 3; the leader has
    deleted its log up to offset 6 and answers the divergence of epoch 2 at offset 3. The
    follower sets its HW (min of the leader's 8 and its LEO 4: 4), cannot raise its log
    start to 6 (above that HW) and parks the partition: no truncation, nothing sent, no
    backoff timer."""
    f = replica(2, batches((1, 2), (2, 2)), era="2.8", hw=2)
    effects = _diverging_answer(f, _first_fetch(f), hw=8, log_start=6, epoch=2, end=3)
    assert f.fetch_state == "failed"
    assert f.leo == 4 and f.hw == 4
    assert not sent(effects)
    assert not [e for e in effects if isinstance(e, Timer) and isinstance(e.msg, Tick)
                and e.msg.kind == "fetch_backoff"]


def test_a_2_8_follower_truncates_on_a_divergence_when_the_leaders_log_start_is_below() -> None:
    """The same answer with the leader's log start offset 0: processed, then truncated to
    the diverging epoch's end offset, and fetching again."""
    f = replica(2, batches((1, 2), (2, 2)), era="2.8", hw=2)
    effects = _diverging_answer(f, _first_fetch(f), hw=8, log_start=0, epoch=2, end=3)
    assert f.fetch_state == "fetching" and f.leo == 3
    assert sent(effects, Fetch)


def test_a_3_7_follower_truncates_before_it_looks_at_the_leaders_log_start() -> None:
    """3.7 (KAFKA-14704): a diverging answer is not processed before the truncation, so the
    same answer truncates instead of failing the partition."""
    f = replica(2, batches((1, 2), (2, 2)), era="3.7", hw=2)
    _diverging_answer(f, _first_fetch(f), hw=8, log_start=6, epoch=2, end=3)
    assert f.fetch_state != "failed" and f.leo == 3
