"""The group coordinator's heartbeat rule (isrlab's ``GroupCoordinator``), held against
Kafka 3.7.0's ``GroupCoordinatorTest``: a member whose heartbeat names a generation above
the group's (one a coordinator fail-over lost) is told ILLEGAL_GENERATION. The consumer's
side (it loses its partitions and rejoins) is in ``tests/test_offsets_topic.py``."""

from __future__ import annotations

import sys
from pathlib import Path

from kafkacite import kafka

from actors.core import Send
from actors.messages import (
    ILLEGAL_GENERATION,
    NONE,
    GroupHeartbeat,
    GroupHeartbeatResponse,
    JoinGroup,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_offsets_topic import _coordinator, _load_tick  # noqa: E402


@kafka("3.7.0", "GroupCoordinatorTest", "testHeartbeatIllegalGeneration")
def test_a_heartbeat_naming_a_later_generation_is_illegal_generation() -> None:
    """One member joins (generation 1); its heartbeat with generation 1 is answered NONE,
    one with generation 2 ILLEGAL_GENERATION."""
    c, _ = _coordinator()
    c.handle(_load_tick(c), ("broker-1", "group-coordinator"))
    c.drain()
    c.handle(JoinGroup("g0", "g0-0", 1, "orders", 2, "range", 45000, 1),
             ("consumer-g0-0", "consumer"))
    c.drain()
    assert c.groups["g0"].generation == 1
    for generation, error in ((1, NONE), (2, ILLEGAL_GENERATION)):
        c.handle(GroupHeartbeat("g0", "g0-0", 1, generation), ("consumer-g0-0", "consumer"))
        (ans,) = [e.msg for e in c.drain() if isinstance(e, Send)]
        assert isinstance(ans, GroupHeartbeatResponse) and ans.error == error
