"""Which broker wrote each imported line (issue 54, point 2), the file summary (point 4) and
the 2.1-2.3 wording of "Added fetcher" (point 1): a three-broker set of ``server.log``
files in Kafka 2.x's real format, imported without ``--broker``."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from cli.import_logs import main as import_main
from cli.show import main as show_main
from traces.logs.importer import BrokerHint, import_logs
from traces.reader import iter_events

#: what each broker's server.log says: its start-up line names it, then a log truncation
#: (a [Log ...] prefix names no broker) and, on broker 1, a fetcher added in 2.1-2.3 wording
START = "[{ts}] INFO [KafkaServer id={b}] started (kafka.server.KafkaServer)\n"
TRUNCATE = ("[{ts}] INFO [Log partition=orders-0, dir=/var/lib/kafka/data] Truncating to "
            "offset {o} (kafka.log.Log)\n")
FETCHER = ("[{ts}] INFO [ReplicaFetcherManager on broker 1] Added fetcher to broker "
           "BrokerEndPoint(id=2, host=kafka-2:9092) for partitions Map(orders-0 -> "
           "(offset=1630, leaderEpoch=6)) (kafka.server.ReplicaFetcherManager)\n")


def _logs(folder: Path, *, startup: bool = True) -> list[Path]:
    out = []
    for b in (1, 2, 3):
        d = folder / f"broker-{b}"
        d.mkdir(parents=True)
        text = START.format(ts=f"2024-03-01 10:00:0{b},000", b=b) if startup else ""
        text += TRUNCATE.format(ts=f"2024-03-01 10:01:0{b},000", o=1600 + b)
        if b == 1:
            text += FETCHER.format(ts="2024-03-01 10:02:00,000")
        (d / "server.log").write_text(text)
        out.append(d / "server.log")
    return out


def _events(trace: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    with iter_events(trace) as stream:
        evs = list(stream)
    return evs[0], evs[1:-1]


def test_every_file_gets_its_broker_from_its_own_lines(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    import_logs([str(p) for p in _logs(tmp_path / "logs")], str(out))
    header, evs = _events(out)
    cuts = sorted((e["new_leo"], e["replica"], e["node"]) for e in evs
                  if e["event"] == "log_truncate")
    assert cuts == [(1601, 1, "broker-1"), (1602, 2, "broker-2"), (1603, 3, "broker-3")]
    imported = header["imported"]
    assert isinstance(imported, dict) and imported["unknown_broker_events"] == 0
    assert [(f["broker"], f["broker_from"]) for f in imported["per_file"]] == [
        (1, "lines"), (2, "lines"), (3, "lines")]


def test_the_2_1_fetcher_wording_names_its_leader_by_broker_end_point(tmp_path: Path) -> None:
    """2.1-2.3 ``AbstractFetcherManager.addFetcherForPartitions`` prints the leader's
    ``BrokerEndPoint`` (``BrokerEndPoint(id=2, host=kafka-2:9092)``), not its id."""
    out = tmp_path / "t.jsonl"
    import_logs([str(p) for p in _logs(tmp_path / "logs")], str(out))
    _, evs = _events(out)
    [added] = [e for e in evs if e["event"] == "fetcher_partitions"]
    assert (added["change"], added["replica"], added["leader"], added["topic_partitions"]) == (
        "add", 1, 2, ["orders-0"])


def test_without_startup_lines_the_user_maps_files_or_paths(tmp_path: Path) -> None:
    logs = _logs(tmp_path / "logs", startup=False)
    out = tmp_path / "unknown.jsonl"
    import_logs([str(p) for p in logs], str(out))
    header, evs = _events(out)
    unknown = [e for e in evs if e["event"] == "log_truncate" and e["node"] == "broker-unknown"]
    assert len(unknown) == 2 and all("replica" not in e for e in unknown)   # 2 and 3
    assert header["imported"]["unknown_broker_events"] == 2  # type: ignore[index]
    by_path = tmp_path / "by-path.jsonl"
    import_logs([str(p) for p in logs], str(by_path),
                broker=BrokerHint(from_path=r"broker-([0-9]+)/server\.log$"))
    _, evs = _events(by_path)
    assert sorted((e["new_leo"], e["replica"]) for e in evs if e["event"] == "log_truncate") \
        == [(1601, 1), (1602, 2), (1603, 3)]
    by_file = tmp_path / "by-file.jsonl"
    import_logs([str(logs[1])], str(by_file), broker=BrokerHint(
        default=9, by_file=((str(logs[1]), 7),)))
    _, evs = _events(by_file)
    assert [e["replica"] for e in evs if e["event"] == "log_truncate"] == [7]


def test_the_summary_is_per_file_and_show_never_prints_none(tmp_path: Path) -> None:
    logs = _logs(tmp_path / "logs", startup=False)
    out = tmp_path / "t.jsonl"
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert import_main([*map(str, logs), "--out", str(out)]) == 0
    text = printed.getvalue()
    assert f"file {logs[0]}: 2 records, 2 understood" in text
    assert "broker 1 (from lines)" in text and text.count("broker unknown") == 2
    assert "2 events without a broker" in text and "None" not in text
    shown = io.StringIO()
    with redirect_stdout(shown):
        assert show_main([str(out)]) == 0
    assert "None" not in shown.getvalue()
    assert "broker-unknown   log        log_truncate           orders-0 r? leo ?→1602" in \
        shown.getvalue()   # a field the line did not give reads "?"


def test_bad_broker_flags_are_one_line_and_exit_2(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    log = _logs(tmp_path / "logs")[0]
    for flags in (["--broker", "x"], ["--broker", "a=-1"], ["--broker", "1", "--broker", "2"],
                  ["--broker-from-path", "("], ["--broker-from-path", "broker"]):
        assert import_main([str(log), "--out", str(tmp_path / "o.jsonl"), *flags]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("isrlab import: --broker"), (flags, err)
