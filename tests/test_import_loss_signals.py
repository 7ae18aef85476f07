"""What a log shows of a possible loss (issue 54, point 3; docs/anomalies.md §4d): a
truncation below the high watermark, an unclean election and a leader epoch going back,
read from Kafka's own wording, are counted by ``check`` and make the imported trace's
verdict ``POSSIBLE LOSS`` — never ``LOST``: a log does not prove an acknowledgement."""

from __future__ import annotations

from pathlib import Path

from cli.check import main as check_main
from traces.checker import check_file
from traces.logs.importer import import_logs

#: ReplicaFetcherThread.truncate (warn; 2.0.1 - trunk), behind its fetcher's logIdent
BELOW_HW = ("[2024-03-01 10:01:00,000] WARN [ReplicaFetcher replicaId=1, leaderId=2, "
            "fetcherId=0] Truncating orders-0 to offset 1610 below high watermark 1620 "
            "(kafka.server.ReplicaFetcherThread)\n")


def test_a_truncation_below_the_high_watermark_is_a_possible_loss(
        tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "server.log"
    log.write_text(BELOW_HW)
    out = tmp_path / "t.jsonl"
    import_logs([str(log)], str(out))
    result = check_file(out)
    assert result.anomalies["possible_committed_truncation"] == 1
    [d] = result.details["possible_committed_truncation"]
    assert (d["replica"], d["new_leo"], d["hw"], d["records"]) == (1, 1610, 1620, 10)
    v = result.verdict()
    assert v.word == "POSSIBLE LOSS" and v.tone == "bad"
    assert v.headline.startswith(
        "POSSIBLE LOSS 1 truncation below the high watermark on orders-0 — from Kafka's logs")
    assert check_main([str(out)]) == 0     # imported: no expectation to meet
    text = capsys.readouterr().out
    assert text.splitlines()[0] == v.headline and "LOST " not in text


def test_in_an_emulators_trace_the_signals_are_informational() -> None:
    """S8's unclean election is counted, and its verdict is chosen by the records it lost."""
    from traces import regress
    result = check_file(regress.DEFAULT_DIR / "s8-unclean-election.jsonl.gz")
    assert result.anomalies["unclean_election"] >= 1
    assert result.verdict().word == "LOST"
    assert "unclean_election" not in result.forbidden_found
