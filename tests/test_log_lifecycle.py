"""The log's lifecycle (issue 4, docs/eras.md 1.11): retention, DeleteRecords, the low watermark,
and records removed before anyone read them reported as expired, never as lost."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson

from emulator.cluster import run
from emulator.scenario import load
from traces.checker import check_events
from traces.writer import TraceWriter

BASE = """
name = "lifecycle"
description = "retention and DeleteRecords"
duration_s = 20.0
heal_s = 60.0

[cluster]
brokers = 3
"log.retention.check.interval.ms" = 2000

[[topics]]
name = "orders"
partitions = 1
"replication.factor" = 3
"min.insync.replicas" = 2
"segment.bytes" = 4000
{topic_extra}

[[producers]]
topic = "orders"
rate = 50
keys = 0

{extra}
"""


def _run(tmp_path: Path, topic_extra: str = "", extra: str = "") -> list[dict[str, Any]]:
    f = tmp_path / "s.toml"
    f.write_text(BASE.format(topic_extra=topic_extra, extra=extra))
    buf = io.BytesIO()
    res = run(load(str(f), ["invariants=true"]), 1, None, writer=TraceWriter(None, buffer=buf))
    assert res.status == "ok", res.error
    return [orjson.loads(x) for x in buf.getvalue().splitlines()]


def test_retention_deletes_only_whole_segments_below_the_hw_on_every_replica(
        tmp_path: Path) -> None:
    evs = _run(tmp_path, topic_extra='"retention.ms" = 5000')
    deletes = [e for e in evs if e["event"] == "segment_delete"]
    assert {e["replica"] for e in deletes} == {1, 2, 3}     # every replica, independently
    hw: dict[int, int] = {}
    for e in evs:
        if e["event"] == "hw_update":
            hw[e["replica"]] = e["new"]
        if e["event"] == "segment_delete":
            assert e["next_offset"] <= hw[e["replica"]]      # never at or beyond the HW
    finals = [e for e in evs if e["event"] == "final_log"]
    assert all(0 < f["log_start_offset"] <= f["hw"] for f in finals)


def test_records_removed_by_retention_before_being_read_are_expired_not_lost(
        tmp_path: Path) -> None:
    evs = _run(tmp_path, topic_extra='"retention.ms" = 5000')
    result = check_events(evs)
    assert result.anomalies["expired"] > 0
    assert result.anomalies["lost_acked_write"] == 0


def test_delete_records_completes_when_the_low_watermark_reaches_the_offset(
        tmp_path: Path) -> None:
    evs = _run(tmp_path, extra="""
[[admin]]
at_s = 8.0
op = "delete_records"
topic = "orders"
offset = 100
""")
    req = next(e for e in evs if e["event"] == "delete_records")
    res = next(e for e in evs if e["event"] == "delete_records_result")
    assert res["error"] == "NONE" and res["low_watermark"] >= 100
    # the leader moved first; the answer waited for the followers to copy it
    moves = [e for e in evs if e["event"] == "log_start_offset_update"
             and req["seq"] < e["seq"] <= res["seq"]]
    assert {e["replica"] for e in moves} == {1, 2, 3}
    assert [e["reason"] for e in moves if e["replica"] == req["leader"]] == ["client_deletion"]
    assert moves[-1]["seq"] < res["seq"]
    result = check_events(evs)
    assert result.anomalies["expired"] == 100 and result.anomalies["lost_acked_write"] == 0


def test_delete_records_above_the_hw_is_offset_out_of_range(tmp_path: Path) -> None:
    evs = _run(tmp_path, extra="""
[[admin]]
at_s = 2.0
op = "delete_records"
topic = "orders"
offset = 100000
""")
    res = next(e for e in evs if e["event"] == "delete_records_result")
    assert res["error"] == "OFFSET_OUT_OF_RANGE"
