"""``leader_epoch_regression`` (docs/anomalies.md §4d): an election below an epoch already
seen, or a broker taking over below an epoch another broker already took over with. A
broker behind the metadata log — acting on a leadership the controller has since moved,
before any broker took over at the new epoch — is KRaft's ordinary lag, not a regression
(a swarm campaign with a controller quorum, seed 8). Spark counts the same
(``tests/spark/test_agreement.py`` runs the catalogue)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "spark"))

from tracebuild import Trace, broker_behind_metadata  # noqa: E402

from traces.checker import check_events  # noqa: E402


def _regressions(t: Trace) -> int:
    return check_events(t.events).anomalies["leader_epoch_regression"]


def test_a_broker_behind_the_metadata_log_is_not_a_regression_until_a_later_take_over() -> None:
    assert _regressions(broker_behind_metadata()) == 1


def test_an_election_below_an_earlier_take_over_is_a_regression() -> None:
    t = Trace()
    t.elect(0, [0, 1], epoch=2)
    t.emit("become_leader", node="broker-0", topic="t", partition=0, replica=0,
           leader_epoch=3, isr=[0, 1], leo=0, hw=0)
    t.at(1).elect(1, [1], epoch=2)
    assert _regressions(t) == 1
