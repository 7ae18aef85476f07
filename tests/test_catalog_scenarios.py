"""Targeted checks of the catalog scenarios S2-S5, S12 and S13 (docs/historical-scenarios.md).

``tests/test_catalog.py`` only counts anomalies: the bug shows, the fix hides it. These
tests pin down *how* each anomaly comes about in the trace, so a scenario cannot keep
passing through some other path (a different election, a retry artefact...) after the
model or the schedule changes.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from helpers import catalog_events, data_topics_only

from traces.checker import check_events

Event = dict[str, Any]

S2 = "s2-kip101-power-loss-divergence"
S3 = "s3-kip279-fast-failover-divergence"
S4 = "s4-kafka7128-stale-hw-isr-expand"
S5 = "s5-kip497-maximal-isr-race"
S12 = "s12-kafka14704-follower-hw-before-truncate"
S13 = "s13-kafka13141-diverging-fetch-hw"


@cache
def _events(name: str, *overrides: str) -> tuple[Event, ...]:
    return tuple(data_topics_only(list(catalog_events(name, *overrides))))


def _of(evs: tuple[Event, ...], event: str, /, **match: Any) -> list[Event]:
    return [e for e in evs if e["event"] == event
            and all(e.get(k) == v for k, v in match.items())]


def _workload(evs: tuple[Event, ...]) -> list[Event]:
    """Events before the heal phase (the scripted faults all happen there)."""
    out = []
    for e in evs:
        if e["event"] == "phase" and e.get("phase") == "heal":
            break
        out.append(e)
    return out


def _final(evs: tuple[Event, ...]) -> dict[int, dict[int, tuple[str, int]]]:
    """replica -> offset -> (value, leader epoch), below that replica's final HW."""
    out: dict[int, dict[int, tuple[str, int]]] = {}
    for e in _of(evs, "final_log"):
        recs = out.setdefault(e["replica"], {})
        for off, value, epoch in e["records"]:
            if e["log_start_offset"] <= off < e["hw"]:
                recs[off] = (value, epoch)
    return out


def _diverging(evs: tuple[Event, ...], a: int, b: int) -> list[int]:
    fa, fb = _final(evs)[a], _final(evs)[b]
    return sorted(o for o in set(fa) & set(fb) if fa[o][0] != fb[o][0])


def _lost(evs: tuple[Event, ...]) -> list[dict[str, Any]]:
    return check_events(iter(evs)).details["lost_acked_write"]


# -- S2: KIP-101 scenario 2 ------------------------------------------------------------------

def test_s2_divergence_is_the_old_leaders_flushed_suffix_against_the_new_epoch() -> None:
    evs = _events(S2)
    assert [e["kind"] for e in _of(evs, "node_crash")] == ["power_loss", "power_loss"]
    elected = _of(evs, "become_leader", replica=2, leader_epoch=1)[0]
    follower = [e for e in _of(evs, "become_follower", replica=1) if e["leader_epoch"] == 1][0]
    # broker-2 lost its unflushed tail and was elected with the shorter log
    assert elected["leo"] < follower["leo"]
    # legacy truncation to the HW kept broker-1's epoch-0 records above broker-2's LEO
    assert not [e for e in _of(evs, "log_truncate", replica=1)
                if e["new_leo"] <= elected["leo"]]
    div = _diverging(evs, 1, 2)
    assert div == list(range(elected["leo"], follower["leo"]))
    final = _final(evs)
    assert {final[1][o][1] for o in div} == {0}
    assert {final[2][o][1] for o in div} == {1}


@pytest.mark.parametrize("era", ["0.11", "2.0"])
def test_s2_epoch_truncation_cuts_the_orphaned_suffix(era: str) -> None:
    evs = _events(S2, f'protocol="{era}"')
    elected = _of(evs, "become_leader", replica=2, leader_epoch=1)[0]
    cuts = [e for e in _of(evs, "log_truncate", replica=1) if e["reason"] == "leader_epoch"]
    assert cuts and cuts[0]["new_leo"] == elected["leso"]
    assert _diverging(evs, 1, 2) == []


# -- S3: KIP-279 -----------------------------------------------------------------------------

def test_s3_two_fast_elections_then_divergence_under_kip101() -> None:
    evs = _events(S3)
    elections = [(e["leader"], e["leader_epoch"], e["election"])
                 for e in _of(evs, "leader_elected")]
    assert elections[1:3] == [(2, 1, "clean"), (1, 2, "unclean")]
    # broker-1 never truncated its epoch-0 suffix before it led epoch 2
    lead1 = _of(evs, "become_leader", replica=1, leader_epoch=2)[0]
    lead2 = _of(evs, "become_leader", replica=2, leader_epoch=1)[0]
    assert not _of(evs, "log_truncate", replica=1)
    div = _diverging(evs, 1, 2)
    # broker-2's epoch-1 records (a prefix of broker-1's epoch-0 suffix [leso2, leso1): as
    # many as the producer got to it before it was isolated) differ from broker-1's
    assert div and div == list(range(lead2["leso"], lead2["leso"] + len(div)))
    assert div[-1] < lead1["leso"]
    final = _final(evs)
    assert {final[1][o][1] for o in div} == {0}
    assert {final[2][o][1] for o in div} == {1}


@pytest.mark.parametrize("era", ["2.0", "2.1", "2.8", "4.1"])
def test_s3_kip279_truncates_to_the_common_prefix(era: str) -> None:
    evs = _events(S3, f'protocol="{era}"')
    lead2 = _of(evs, "become_leader", replica=2, leader_epoch=1)[0]
    cuts = _of(evs, "log_truncate", replica=2)
    assert cuts and cuts[0]["new_leo"] == lead2["leso"]   # the end of epoch 0 on both
    assert _diverging(evs, 1, 2) == []


# -- S4: KAFKA-7128 --------------------------------------------------------------------------

def _s4_path(evs: tuple[Event, ...]) -> tuple[Event, Event, list[Event]]:
    lead = _of(evs, "become_leader", replica=2, leader_epoch=1)[0]
    follower3 = [e for e in _of(evs, "become_follower", replica=3) if e["leader"] == 2][0]
    adds = [e for e in _workload(evs) if e["event"] == "isr_change"
            and 3 in e["new"] and 3 not in e["old"] and e["seq"] > lead["seq"]]
    return lead, follower3, adds


def test_s4_follower_behind_the_leso_joins_the_isr_and_is_elected() -> None:
    evs = _events(S4)
    lead, follower3, adds = _s4_path(evs)
    # the new leader's HW is stale: below its leader-epoch start offset
    assert lead["hw"] < lead["leso"]
    # C (LEO = the stale HW, below the LESO) is added to the ISR ...
    assert follower3["leo"] >= lead["hw"] and follower3["leo"] < lead["leso"]
    assert [e["reason"] for e in adds] == ["expand"]
    # ... and elected cleanly from it, with the LEO it had
    elected3 = [e for e in _of(evs, "leader_elected", leader=3) if e["seq"] > adds[0]["seq"]][0]
    assert elected3["election"] == "clean" and 3 in elected3["isr"]
    assert _of(evs, "become_leader", replica=3)[0]["leo"] == follower3["leo"]
    lost = sorted(d["offset"] for d in _lost(evs))
    assert lost and lost == list(range(follower3["leo"], lead["leso"]))


def test_s4_leso_check_keeps_the_follower_out() -> None:
    evs = _events(S4, "bugs=[]")
    _lead, _follower3, adds = _s4_path(evs)
    assert adds == []
    assert _lost(evs) == []


# -- S5: KIP-497 -----------------------------------------------------------------------------

def _s5(evs: tuple[Event, ...]) -> tuple[int, int, Event]:
    """(broker-1's highest leader HW, broker-3's LEO when elected, the expansion)."""
    expand = [e for e in _of(evs, "isr_change", reason="expand") if e["new"] == [1, 2, 3]][0]
    hw1 = max(e["new"] for e in _of(evs, "hw_update", replica=1, role="leader")
              if e["seq"] < expand["seq"])
    leo3 = _of(evs, "become_leader", replica=3)[0]["leo"]
    return hw1, leo3, expand


@pytest.mark.parametrize("overrides", [(), ('protocol="2.1"', "bugs=[]")])
def test_s5_hw_passes_the_joining_replica_while_the_expansion_is_in_flight(
        overrides: tuple[str, ...]) -> None:
    evs = _events(S5, *overrides)
    hw1, leo3, expand = _s5(evs)
    proposed = _of(evs, "alter_partition", replica=1, kind="expand")[0]
    assert proposed["proposed_isr"] == [1, 2, 3]
    # the paused active controller committed [1,2,3] well over a second after the
    # proposal (its 1.5 s pause), during which broker-1 advanced its HW past broker-3's
    # LEO (without the maximal ISR nothing held it)
    assert expand["ts_us"] - proposed["ts_us"] > 1_000_000
    assert hw1 > leo3
    elected3 = _of(evs, "leader_elected", leader=3)[0]
    assert elected3["election"] == "clean"
    lost = sorted(d["offset"] for d in _lost(evs))
    assert lost and lost[0] >= leo3 and lost[-1] < hw1


@pytest.mark.parametrize("overrides", [("bugs=[]",), ('protocol="2.8"', "bugs=[]")])
def test_s5_maximal_isr_holds_the_hw_at_the_joining_replica(
        overrides: tuple[str, ...]) -> None:
    evs = _events(S5, *overrides)
    hw1, leo3, _expand = _s5(evs)
    assert hw1 <= leo3
    assert _lost(evs) == []


# -- S12: KAFKA-14704 ------------------------------------------------------------------------

def _hw_over_divergent_suffix(evs: tuple[Event, ...], replica: int) -> list[tuple[Event, Event]]:
    """(hw_update, log_truncate) pairs: a follower raised its HW from a fetch response and
    the truncation right after it (same instant) cut below that HW."""
    seq = [e for e in evs if e.get("replica") == replica
           and e["event"] in ("hw_update", "log_truncate")]
    out = []
    for a, b in zip(seq, seq[1:], strict=False):
        if (a["event"] == "hw_update" and a["reason"] == "fetch_response"
                and a["new"] > a["old"] and b["event"] == "log_truncate"
                and b["ts_us"] == a["ts_us"] and b["new_leo"] < a["new"]):
            out.append((a, b))
    return out


@pytest.mark.parametrize("overrides", [(), ('protocol="4.1"', 'bugs=["KAFKA-14704"]')])
def test_s12_follower_hw_covers_its_divergent_suffix_before_truncation(
        overrides: tuple[str, ...]) -> None:
    evs = _events(S12, *overrides)
    pairs = _hw_over_divergent_suffix(evs, 1)
    assert len(pairs) == 1
    hw, cut = pairs[0]
    # the HW went up (to the new leader's HW, at most broker-1's LEO), over records of
    # epoch 0 that broker-2 (epoch 1) does not have, and came back down to the truncation
    # point
    assert cut["new_leo"] == hw["old"] < hw["new"] <= cut["old_leo"]
    assert cut["reason"] == "leader_epoch"
    # nothing a consumer can see: consumers read from leaders only, and the model applies
    # the HW and truncates in one step
    res = check_events(iter(evs))
    assert res.anomalies["read_uncommitted"] == 0
    assert res.anomalies["hw_regression_visible"] == 0
    assert res.anomalies["hw_regression_replica"] == 1


@pytest.mark.parametrize("era", ["3.7", "4.1"])
def test_s12_fixed_follower_truncates_before_taking_the_hw(era: str) -> None:
    evs = _events(S12, f'protocol="{era}"')
    assert _hw_over_divergent_suffix(evs, 1) == []
    cuts = _of(evs, "log_truncate", replica=1)
    assert cuts and cuts[0]["reason"] == "leader_epoch"


# -- S13: KAFKA-13141 ------------------------------------------------------------------------

def _s13_expand_before_truncation(evs: tuple[Event, ...]) -> list[Event]:
    follow = [e for e in _of(evs, "become_follower", replica=1) if e["leader"] == 2][0]
    first_cut = next((e["seq"] for e in _of(evs, "log_truncate", replica=1)), 1 << 62)
    return [e for e in _of(evs, "isr_change") if 1 in e["new"] and 1 not in e["old"]
            and follow["seq"] < e["seq"] < first_cut]


@pytest.mark.parametrize("overrides", [(), ('protocol="4.1"', 'bugs=["KAFKA-13141"]')])
def test_s13_diverging_fetch_puts_the_stale_follower_in_the_isr(
        overrides: tuple[str, ...]) -> None:
    evs = _events(S13, *overrides)
    follow = [e for e in _of(evs, "become_follower", replica=1) if e["leader"] == 2][0]
    lead2 = _of(evs, "become_leader", replica=2, leader_epoch=1)[0]
    # broker-1 returns with an epoch-0 suffix past broker-2's epoch start: a diverging fetch
    assert follow["leo"] > lead2["leso"]
    assert len(_s13_expand_before_truncation(evs)) == 1
    # ... and is elected without ever having truncated it
    lead1 = [e for e in _of(evs, "become_leader", replica=1) if e["leader_epoch"] == 2][0]
    assert lead1["leo"] == follow["leo"]
    lost = sorted(d["offset"] for d in _lost(evs))
    assert lost == list(range(lead2["leso"], follow["leo"]))
    final = _final(evs)
    assert {final[1][o][1] for o in lost} == {0}   # the old epoch's records won


@pytest.mark.parametrize("era", ["3.7", "4.1"])
def test_s13_fixed_leader_ignores_the_diverging_fetch(era: str) -> None:
    evs = _events(S13, f'protocol="{era}"')
    assert _s13_expand_before_truncation(evs) == []
    assert _lost(evs) == []
