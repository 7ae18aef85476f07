"""The replication messages of Kafka's logs that ``isrlab import`` understands.

One :class:`Kind` per format string of Kafka's source — each cites the file, the method and
the releases whose wording it matches (read in ``apache/kafka`` at those tags) — with a
regular expression over the record's message and a builder that turns a match into trace
events of ``traces.schema``. Events carry only what the line says: a field the line does not
give is absent, never zero.

The message's own prefix (the ``logIdent`` of the class that logged it) names the broker and
the partition where it can: ``[Partition t-0 broker=1]`` (``Partition``, 1.0+), ``Partition
[t,0] on broker 1:`` (0.10, 0.11), ``[ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0]``
(fetcher threads from 1.0; ``[ReplicaFetcherThread-0-1],`` before), ``[Controller id=1
epoch=12]`` / ``[Controller 3]:`` (ZooKeeper controller), ``[Controller 0]`` /
``[QuorumController id=0]`` (KRaft), ``[Log partition=t-0, dir=...]`` / ``[UnifiedLog
partition=...]`` / ``[LocalLog partition=...]`` / ``[LogLoader partition=...]`` (the log: no
broker id — the importer's ``--broker`` or the file's context supply it; 0.10's ``Log`` has
no prefix and names its log, ``t-0``, in the message), ``[Broker id=1]`` (``ReplicaManager``'s
and 2.8+ ``Partition``'s state-change lines), ``[GroupCoordinator id=1]`` (the coordinator
runtime, 3.7+). Which release logs which wording of each kind: docs/import.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from traces.logs.lines import Record

Event = dict[str, Any]


@dataclass(frozen=True)
class Prefix:
    """What a message's logIdent says, and the message after it."""

    rest: str
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None
    controller: bool = False
    leader: int | None = None


_PREFIXES: Final = (
    # [Partition t-0 broker=1] (Partition.logIdent, 1.1+)
    (re.compile(r"^\[Partition (?P<tp>\S+) broker=(?P<b>\d+)\]\s*"), "tp"),
    # Partition [t,0] on broker 1: (Partition, 0.10-1.0)
    (re.compile(r"^Partition \[(?P<t>[^,\]]+),(?P<p>\d+)\] on broker (?P<b>\d+):\s*"), "t,p"),
    (re.compile(r"^\[ReplicaFetcher replicaId=(?P<b>\d+), leaderId=(?P<l>\d+), "
                r"fetcherId=\d+\]\s*"), "fetcher"),
    (re.compile(r"^\[ReplicaFetcherThread-\d+-(?P<l>\d+)\],?\s*"), "fetcher"),
    (re.compile(r"^\[(?:Log|UnifiedLog|LocalLog|LogLoader) partition=(?P<tp>[^,\]]+), "
                r"dir=[^\]]*\]\s*"), "tp"),
    (re.compile(r"^\[Controller id=(?P<b>\d+)(?: epoch=\d+)?\]:?\s*"), "controller"),
    (re.compile(r"^\[Controller (?P<b>\d+)\]:?\s*"), "controller"),
    (re.compile(r"^\[QuorumController id=(?P<b>\d+)\]\s*"), "controller"),
    (re.compile(r"^\[BrokerChangeListener on Controller (?P<b>\d+)\]:\s*"), "controller"),
    (re.compile(r"^\[Broker id=(?P<b>\d+)\]\s*"), ""),
    (re.compile(r"^\[ReplicaManager broker=(?P<b>\d+)\]\s*"), ""),
    (re.compile(r"^\[GroupMetadataManager brokerId=(?P<b>\d+)\]\s*"), ""),
    (re.compile(r"^\[Group Metadata Manager on Broker (?P<b>\d+)\]:\s*"), ""),   # 0.10, 0.11
    # CoordinatorRuntime's LogContext (GroupCoordinatorService, 3.7 opt-in, 4.x)
    (re.compile(r"^\[GroupCoordinator id=(?P<b>\d+)\]\s*"), ""),
    (re.compile(r"^\[ReplicaFetcherManager on broker (?P<b>\d+)\]\s*"), ""),
    (re.compile(r"^\[OfflinePartitionLeaderSelector\]:\s*"), "controller"),
)


def split_tp(text: str) -> tuple[str, int] | None:
    """``orders-0`` or ``[orders,0]`` as (topic, partition)."""
    m = re.fullmatch(r"\[([^,\]]+),(\d+)\]", text)
    if m:
        return m.group(1), int(m.group(2))
    topic, dash, p = text.rpartition("-")
    if dash and topic and p.isdigit():
        return topic, int(p)
    return None


def prefix_of(message: str) -> Prefix:
    for rx, how in _PREFIXES:
        m = rx.match(message)
        if m is None:
            continue
        g = m.groupdict()
        broker = int(g["b"]) if g.get("b") else None
        topic = partition = None
        if how == "tp":
            tp = split_tp(g["tp"])
            if tp:
                topic, partition = tp
        elif how == "t,p":
            topic, partition = g["t"], int(g["p"])
        return Prefix(message[m.end():], broker, topic, partition, how == "controller",
                      int(g["l"]) if g.get("l") else None)
    return Prefix(message)


def _ids(text: str | None) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text or "")]


@dataclass(frozen=True)
class Kind:
    """One format string of Kafka's source, recognised in a message (after its prefix)."""

    name: str
    #: file, method and the releases whose wording this matches
    source: str
    pattern: re.Pattern[str]
    #: (match, prefix, record) -> events without seq/ts/node (the importer adds them)
    build: Callable[[re.Match[str], Prefix, Record], list[Event]]
    #: the logger class names that may log it (None: any)
    loggers: tuple[str, ...] | None = None

    @property
    def era(self) -> str | None:
        """``"kraft"`` for the KRaft controller's statements (``metadata/``), ``"zk"`` for
        the ZooKeeper controller's and the ZooKeeper ISR writes', None for the brokers'
        statements both kinds of cluster log."""
        if self.source.startswith("metadata/"):
            return "kraft"
        if self.source.startswith("core/.../controller/") or self.name == "zk_version_stale":
            return "zk"
        return None


#: ``isrlab import --format``: which controllers' statements are recognised
FORMATS: Final = ("auto", "zk", "kraft")


def _tp(m: re.Match[str], pre: Prefix) -> tuple[str | None, int | None]:
    """The partition a message names (``tp``, or ``name``: the log's name, ``t-0``, in the
    0.10/0.11 wordings of ``Log``, which had no logIdent), else its prefix's."""
    g = m.groupdict()
    for group in ("tp", "name"):
        if g.get(group):
            tp = split_tp(g[group])
            if tp:
                return tp
    return pre.topic, pre.partition


def _isr_change(reason: str) -> Callable[[re.Match[str], Prefix, Record], list[Event]]:
    def build(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
        topic, partition = _tp(m, pre)
        ev: Event = {"event": "isr_change", "topic": topic, "partition": partition,
                     "old": _ids(m.group("old")), "new": _ids(m.group("new")),
                     "reason": reason, "replica": pre.broker}
        g = m.groupdict()
        if g.get("hw"):
            ev["hw"] = int(g["hw"])
        if g.get("leo"):
            ev["leo"] = int(g["leo"])
        return [ev]
    return build


def _isr_updated(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return [{"event": "isr_change", "topic": pre.topic, "partition": pre.partition,
             "new": _ids(m.group("isr")), "reason": "updated", "replica": pre.broker,
             "partition_epoch": int(m.group("v"))}]


def _zk_stale(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return [{"event": "isr_update_skipped", "topic": pre.topic, "partition": pre.partition,
             "replica": pre.broker, "partition_epoch": int(m.group("v")),
             "reason": "cached zkVersion not equal to ZooKeeper's"}]


def _become_leader(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    ev: Event = {"event": "become_leader", "topic": topic, "partition": partition,
                 "replica": pre.broker, "leader_epoch": int(m.group("e")),
                 "leso": int(m.group("o")), "previous_leader_epoch": int(m.group("prev"))}
    if m.group("hw"):
        ev["hw"] = int(m.group("hw"))
    if m.group("pe"):
        ev["partition_epoch"] = int(m.group("pe"))
    if m.group("isr") is not None:
        ev["isr"] = _ids(m.group("isr"))
    return [ev]


def _become_follower(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    ev: Event = {"event": "become_follower", "topic": topic, "partition": partition,
                 "replica": pre.broker, "leader_epoch": int(m.group("e")),
                 "leo": int(m.group("o")), "hw": int(m.group("hw"))}
    if m.group("pe"):
        ev["partition_epoch"] = int(m.group("pe"))
    if m.group("leader") is not None:
        ev["leader"] = int(m.group("leader"))
    return [ev]


def _state_change(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp"))
    if tp is None:
        return []
    frm, to = m.group("from"), m.group("to")
    ev: Event = {"event": "leader_elected", "topic": tp[0], "partition": tp[1],
                 "election": f"{frm}->{to}"}
    body = m.group("state") or ""
    leader = re.search(r"leader=(-?\d+)", body) or (
        re.match(r"(-?\d+)$", m.group("leader") or ""))
    epoch = re.search(r"leaderEpoch=(\d+)", body)
    # LeaderAndIsr.toString: isr=List(1, 2) (2.8.2), isrWithBrokerEpoch=List(BrokerState(
    # brokerId=1, brokerEpoch=-1), ...) (3.7.1)
    isr_list = re.search(r"isr=List\(([\d, ]*)\)", body)
    isr = (_ids(isr_list.group(1)) if isr_list else
           [int(x) for x in re.findall(r"brokerId=(\d+)", body)]
           if "isrWithBrokerEpoch=" in body else None)
    pe = re.search(r"(?:zkVersion|partitionEpoch)=(\d+)", body)
    if leader is None:
        return []
    ev["leader"] = int(leader.group(1))
    if epoch:
        ev["leader_epoch"] = int(epoch.group(1))
    if isr is not None:
        ev["isr"] = isr
    if pe:
        ev["partition_epoch"] = int(pe.group(1))
    return [ev]


def _unfenced(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    for group in ("b", "b2"):
        if m.group(group) is not None:
            return [{"event": "broker_unfenced", "broker": int(m.group(group))}]
    found = re.search(r"\bid=(\d+)", m.group("record") or "")
    return [{"event": "broker_unfenced", "broker": int(found.group(1))}] if found else []


def _fetch_reset(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    return [{"event": "log_truncate", "topic": topic, "partition": partition,
             "replica": int(m.group("r")) if m.group("r") else pre.broker,
             "old_leo": int(m.group("old")), "new_leo": int(m.group("new")),
             "reason": "offset_out_of_range", "to": m.group("to")}]


def _out_of_range(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    return [{"event": "fetch_offset_reset", "topic": topic, "partition": partition,
             "replica": pre.broker, "old": int(m.group("old")), "new": int(m.group("new"))}]


def _fetch_reset_any(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    """The wordings of a fetch offset reset (0.10's names the replica, later ones do not; 3.7's
    reset to the follower's own end offset truncates nothing)."""
    if m.group("tp3") is not None:
        tp = split_tp(m.group("tp3"))
        topic, partition = tp if tp else (pre.topic, pre.partition)
        return [{"event": "fetch_offset_reset", "topic": topic, "partition": partition,
                 "replica": pre.broker, "old": int(m.group("old3")),
                 "new": int(m.group("new3"))}]
    if m.group("tp2") is not None:
        tp = split_tp(m.group("tp2"))
        topic, partition = tp if tp else (pre.topic, pre.partition)
        return [{"event": "log_truncate", "topic": topic, "partition": partition,
                 "replica": pre.broker, "old_leo": int(m.group("old2")),
                 "new_leo": int(m.group("new2")), "reason": "offset_out_of_range",
                 "to": m.group("to2")}]
    return _fetch_reset(m, pre, rec)


def _log_loaded(g: dict[str, str | None], pre: Prefix) -> list[Event]:
    tp: tuple[str, int] | None = None
    if g.get("t") is not None and g.get("p") is not None:
        tp = (str(g["t"]), int(str(g["p"])))
    elif g.get("name") is not None:
        tp = split_tp(str(g["name"]))
    topic, partition = tp if tp else (pre.topic, pre.partition)
    ev: Event = {"event": "log_recovery", "topic": topic, "partition": partition,
                 "replica": pre.broker, "leo": int(g.get("leo") or g.get("leo2") or 0),
                 "segments": int(g.get("n") or g.get("n2") or 0)}
    start = g.get("start") or g.get("start2") or g.get("start3")
    if start is not None:
        ev["log_start_offset"] = int(start)
    if g.get("hw") is not None:
        ev["hw"] = int(str(g["hw"]))
    return [ev]


def _log_loaded_any(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    """The three wordings of a log's load, their groups renamed to one set."""
    g: dict[str, str | None] = dict(m.groupdict())
    if g.get("leo3") is not None:
        g["leo"], g["n"] = g["leo3"], g["n3"]
    return _log_loaded(g, pre)


def _partition_failed(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    return [{"event": "partition_failed", "topic": topic, "partition": partition,
             "replica": pre.broker}]


def _coordinator_loaded(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp") or m.group("tp2"))
    if tp is None:
        return []
    ms = (int(m.group("ms")) if m.group("ms") is not None else
          int(m.group("ms2")) if m.group("ms2") is not None else
          int(m.group("end")) - int(m.group("start")))
    ev: Event = {"event": "coordinator_loaded", "topic": tp[0], "partition": tp[1],
                 "replica": pre.broker, "load_ms": ms}
    epoch = m.group("e") or m.group("e2")
    if epoch is not None:
        ev["leader_epoch"] = int(epoch)
    return [ev]


def _controller_elected(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    ev: Event = {"event": "controller_elected", "broker": int(m.group("b"))}
    if m.group("e") is not None:
        ev["controller_epoch"] = int(m.group("e"))
    return [ev]


def _shutting_down(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return [{"event": "controlled_shutdown", "broker": int(m.group("b"))}]


def _truncate_epoch(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    return [{"event": "log_truncate", "topic": topic, "partition": partition,
             "replica": pre.broker, "new_leo": int(m.group("o")), "reason": "leader_epoch",
             "completed": m.group("done") == "true"}]


def _dir_recovery_any(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    ev: Event = {"event": "log_dir_recovery", "replica": pre.broker,
                 "dir": m.group("dir") or m.group("dir2") or m.group("dir3"),
                 "clean_shutdown": m.group("clean") is not None or m.group("dir3") is not None}
    n = m.group("n") or m.group("n2")
    if n is not None:
        ev["logs"] = int(n)
    return [ev]


def _invalid_messages(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    path = m.group("path")
    tp = split_tp(path.rstrip("/").split("/")[-2]) if "/" in path else None
    topic, partition = tp if tp else (pre.topic, pre.partition)
    return [{"event": "segment_corruption", "topic": topic, "partition": partition,
             "replica": pre.broker, "file": path, "byte_offset": int(m.group("pos"))}]


def _segments_deleted(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    """One event per ``LogSegment(baseOffset=...)`` a log-start-offset breach deletes."""
    return [{"event": "segment_delete", "topic": pre.topic, "partition": pre.partition,
             "replica": pre.broker, "base_offset": int(base),
             "reason": f"{m.group('lso_kind')}log start offset {m.group('lso')} breach"}
            for base in re.findall(r"LogSegment\(baseOffset=(\d+)", m.group("segs"))]


def _deletable(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return [{"event": "segment_delete", "topic": pre.topic, "partition": pre.partition,
             "replica": pre.broker, "base_offset": base, "reason": m.group("why").strip()}
            for base in _ids(m.group("bases"))]


def _offline_010(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    g = m.groupdict()
    tp = split_tp(g.get("tp") or g.get("tp2") or "")
    if tp is None:
        return []
    if g.get("state") is not None:
        state = g["state"]
        leader = re.search(r'"leader":(-?\d+)', state)
        epoch = re.search(r'"leader_epoch":(\d+)', state)
        isr = re.search(r'"isr":\[([\d,]*)\]', state)
        if leader is None:
            return []
        ev: Event = {"event": "leader_elected", "topic": tp[0], "partition": tp[1],
                     "leader": int(leader.group(1)), "election": "offline"}
        if epoch:
            ev["leader_epoch"] = int(epoch.group(1))
        if isr:
            ev["isr"] = _ids(isr.group(1))
        return [ev]
    return [{"event": "leader_elected", "topic": tp[0], "partition": tp[1],
             "leader": int(g["l"]), "election": "unclean", "live": _ids(g["live"])}]


#: a broker's toString: ``BrokerEndPoint(2,kafka-2,9092)`` (case class, 0.10-2.0) or
#: ``BrokerEndPoint(id=2, host=kafka-2:9092)`` (2.1+); its host is no partition
_END_POINT: Final = re.compile(r"BrokerEndPoint\((?:id=)?(-?\d+)[^)]*\)")


def _fetcher(change: str) -> Callable[[re.Match[str], Prefix, Record], list[Event]]:
    def build(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
        text = m.group("parts")
        leaders = {int(x) for x in _END_POINT.findall(text)}
        parts = re.findall(r"([\w.\-]+-\d+)(?: ->|,|\)|\]|$| initOffset)",
                           _END_POINT.sub("", text))
        names = sorted({p for p in parts if split_tp(p)})
        if not names:
            return []
        ev: Event = {"event": "fetcher_partitions", "replica": pre.broker, "change": change,
                     "topic_partitions": names}
        leader = m.groupdict().get("leader") or m.groupdict().get("leader_ep")
        if leader:
            ev["leader"] = int(leader)
        elif change == "add" and len(leaders) == 1:
            # 0.10-2.0: each "[t-0, initOffset 5 to broker BrokerEndPoint(2,...)] " names it
            ev["leader"] = min(leaders)
        return [ev]
    return build


def _fetch_error(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    err = m.groupdict().get("exc") or next(
        (x.strip().split(":")[0] for x in rec.extra[:1] if "Exception" in x), None)
    ev: Event = {"event": "fetch_error", "topic": topic, "partition": partition,
                 "replica": pre.broker}
    if err:
        ev["error"] = err.rsplit(".", 1)[-1]
    if m.groupdict().get("o"):
        ev["offset"] = int(m.group("o"))
    return [ev]


def _alter_rejected(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return [{"event": "alter_partition_result", "topic": m.group("t"),
             "partition": int(m.group("p")), "replica": int(m.group("b")),
             "error": "REJECTED", "detail": m.group("why").strip()}]


def _alter_failed(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return [{"event": "alter_partition_result", "topic": pre.topic, "partition": pre.partition,
             "replica": pre.broker, "error": m.group("err"),
             "detail": m.group("state")[:200]}]


def _preferred_done(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp"))
    if tp is None:
        return []
    ok = m.group("ok") is not None
    return [{"event": "leader_elected", "topic": tp[0], "partition": tp[1],
             "leader": int(m.group("l")), "election": "preferred" if ok else
             "preferred_failed"}]


def _coordinator_unloaded(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp") or m.group("tp2"))
    if tp is None:
        return []
    ev: Event = {"event": "coordinator_unload", "topic": tp[0], "partition": tp[1],
                 "replica": pre.broker}
    if m.group("o") is not None:   # the coordinator runtime (3.7 opt-in, 4.x) counts nothing
        ev["offsets_removed"] = int(m.group("o"))
        ev["groups_removed"] = int(m.group("g"))
    epoch = m.group("e") or m.group("e2")
    if epoch is not None:
        ev["leader_epoch"] = int(epoch)
    return [ev]


def _controller_ready(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    ev: Event = {"event": "controller_elected", "controller_epoch": int(m.group("e"))}
    b = m.group("b") or (str(pre.broker) if pre.broker is not None else None)
    if b is not None:
        ev["broker"] = int(b)
    return [ev]


def _below_hw(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    return [{"event": "log_truncate", "topic": topic, "partition": partition,
             "replica": pre.broker, "new_leo": int(m.group("o")), "hw": int(m.group("hw")),
             "reason": "below_high_watermark"}]


def _truncate(reason: str) -> Callable[[re.Match[str], Prefix, Record], list[Event]]:
    def build(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
        topic, partition = _tp(m, pre)
        g = m.groupdict()
        if g.get("o2") is not None:   # 3.x: the truncation state, then the local HW
            ev: Event = {"event": "log_truncate", "topic": topic, "partition": partition,
                         "replica": pre.broker, "new_leo": int(str(g["o2"])),
                         "reason": reason, "hw": int(str(g["hw"])),
                         "completed": g["done"] == "true"}
            return [ev]
        return [{"event": "log_truncate", "topic": topic, "partition": partition,
                 "replica": pre.broker, "new_leo": int(m.group("o")), "reason": reason}]
    return build


def _noop(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    return []


def _log_start(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    ev: Event = {"event": "log_start_offset_update", "topic": pre.topic,
                 "partition": pre.partition, "replica": pre.broker, "new": int(m.group("o"))}
    if m.group("why"):
        ev["reason"] = m.group("why")
    return [ev]


def _segment_delete(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    if m.group("segs") is not None:
        return _segments_deleted(m, pre, rec)
    topic, partition = _tp(m, pre)
    base = m.group("base") or m.group("base2")
    ev: Event = {"event": "segment_delete", "topic": topic, "partition": partition,
                 "replica": pre.broker, "base_offset": int(base)}
    if m.group("why") is not None:   # 0.10/0.11 say no reason
        ev["reason"] = m.group("why").strip()
    return [ev]


def _recovering(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    topic, partition = _tp(m, pre)
    return [{"event": "log_recovery", "topic": topic, "partition": partition,
             "replica": pre.broker, "unflushed_segment": int(m.group("base"))}]


def _broker_change(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    ev: Event = {"event": "broker_change", "added": _ids(m.group("added")),
                 "deleted": _ids(m.group("deleted")), "live": _ids(m.group("live"))}
    if m.group("bounced") is not None:
        ev["bounced"] = _ids(m.group("bounced"))
    out = [ev]
    out += [{"event": "broker_fenced", "broker": b, "reason": "zookeeper session gone"}
            for b in ev["deleted"]]
    return out


def _offline_failed(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp"))
    if tp is None:
        return []
    return [{"event": "partition_offline", "topic": tp[0], "partition": tp[1],
             "reason": "election failed"}]


def _fenced(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    ev: Event = {"event": "broker_fenced", "broker": int(m.group("b")),
                 "reason": "session_timeout"}
    if m.group("e") is not None:
        ev["broker_epoch"] = int(m.group("e"))
    return [ev]


def _registered(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    body = m.group("record")
    b = re.search(r"brokerId=(\d+)", body)
    ep = re.search(r"brokerEpoch=(\d+)", body)
    if b is None:
        return []
    ev: Event = {"event": "broker_registered", "broker": int(b.group(1))}
    if ep:
        ev["broker_epoch"] = int(ep.group(1))
    return [ev]


def _kraft_change(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp"))
    if tp is None:
        return []
    diff = m.group("diff")
    out: list[Event] = []
    isr = re.search(r"isr: \[([\d, ]*)\] -> \[([\d, ]*)\]", diff)
    leader = re.search(r"leader: (-?\d+) -> (-?\d+)", diff)
    epoch = re.search(r"leaderEpoch: (\d+) -> (\d+)", diff)
    pepoch = re.search(r"partitionEpoch: (\d+) -> (\d+)", diff)
    if isr:
        ev: Event = {"event": "isr_change", "topic": tp[0], "partition": tp[1],
                     "old": _ids(isr.group(1)), "new": _ids(isr.group(2)),
                     "reason": "unclean_election" if m.group("unclean") else "controller"}
        if pepoch:
            ev["partition_epoch"] = int(pepoch.group(2))
        out.append(ev)
    if leader:
        ev = {"event": "leader_elected", "topic": tp[0], "partition": tp[1],
              "leader": int(leader.group(2)),
              "election": "unclean" if m.group("unclean") else "controller"}
        if epoch:
            ev["leader_epoch"] = int(epoch.group(2))
        if isr:
            ev["isr"] = _ids(isr.group(2))
        out.append(ev)
    return out


def _not_enough(m: re.Match[str], pre: Prefix, rec: Record) -> list[Event]:
    tp = split_tp(m.group("tp") or m.group("tp2") or m.group("tp3"))
    if tp is None:
        return []
    ev: Event = {"event": "append_rejected", "topic": tp[0], "partition": tp[1],
                 "replica": pre.broker,
                 "min_isr": int(m.group("min") or m.group("min2") or m.group("min3")),
                 "error": "NOT_ENOUGH_REPLICAS"}
    isr = m.group("isr") if m.group("isr") is not None else m.group("isr3")
    if isr is not None:
        ev["isr"] = _ids(isr)
    n = m.group("n") or m.group("n3")
    if n is not None:
        ev["isr_size"] = int(n)
    return [ev]


_TP: Final = r"(?P<tp>\[[^,\]]+,\d+\]|\S+-\d+)"

#: Every kind, most specific first (the first whose pattern matches wins).
KINDS: Final[tuple[Kind, ...]] = (
    Kind("isr_shrink",
         "core/.../cluster/Partition.scala, maybeShrinkIsr: 0.10 names the partition; 0.11-2.0 "
         "'from %s to %s'; 2.4-4.1 add the leader's HW and LEO and the out-of-sync replicas",
         re.compile(r"^Shrinking ISR (?:for partition " + _TP + r" )?from (?P<old>[\d,]+) to "
                    r"(?P<new>[\d,]*)(?:\.\s+Leader: \(highWatermark: (?P<hw>\d+), endOffset: "
                    r"(?P<leo>\d+)\))?"),
         _isr_change("shrink")),
    Kind("isr_expand",
         "core/.../cluster/Partition.scala, maybeExpandIsr: 0.10 names the partition; 0.11-2.4 "
         "'Expanding ISR from ... to ...'; none from 2.8 (AlterIsr: 'ISR updated to')",
         re.compile(r"^Expanding ISR (?:for partition " + _TP + r" )?from (?P<old>[\d,]+) to "
                    r"(?P<new>[\d,]*)"),
         _isr_change("expand")),
    Kind("isr_updated",
         "core/.../cluster/Partition.scala, updateIsr (0.10-2.4: 'ISR updated to [%s] and "
         "zkVersion updated to [%d]', TRACE to 2.0, INFO 2.4) / handleAlterIsrResponse (2.8.2: "
         "'... and version updated to [%d]') / handleAlterPartitionUpdate (3.5-4.1: '... (under-"
         "min-isr) and version updated to %d')",
         re.compile(r"^ISR updated to \[?(?P<isr>[\d,]*)\]?\s*(?:\(under-min-isr\))?\s*and "
                    r"(?:zkVersion|version) updated to \[?(?P<v>\d+)\]?"),
         _isr_updated),
    Kind("zk_version_stale",
         "core/.../cluster/Partition.scala, updateIsr: 'Cached zkVersion [%d] not equal ...' "
         "(0.10-2.0), without brackets (2.4.1); none from 2.8 (AlterIsr)",
         re.compile(r"^Cached zkVersion \[?(?P<v>\d+)\]? not equal to that in zookeeper, skip "
                    r"updating ISR"),
         _zk_stale),
    Kind("become_leader",
         "core/.../cluster/Partition.scala, makeLeader: '%s starts at Leader Epoch %d from offset "
         "%d. Previous Leader Epoch was: %d' (0.11-2.0); '... with high watermark ...' (2.4.1); "
         "'Leader %s starts at ... ISR [..] ...' (2.8.2); 'Leader %s with topic id ... with "
         "partition epoch ..., high watermark ..., ISR [..] ...' (3.5-4.1); none in 0.10",
         re.compile(r"^(?:Leader )?" + _TP + r" (?:with topic id \S+ )?starts at [Ll]eader "
                    r"[Ee]poch (?P<e>\d+) from offset (?P<o>\d+)(?: with (?:partition epoch "
                    r"(?P<pe>\d+), )?high watermark (?P<hw>\d+))?(?:,? ISR \[(?P<isr>[\d,]*)\])?"
                    r".*?[Pp]revious [Ll]eader (?:\S+ and previous leader )?[Ee]poch was:? "
                    r"(?P<prev>-?\d+)"),
         _become_leader),
    Kind("become_follower",
         "core/.../cluster/Partition.scala, makeFollower (state-change.log): 'Follower %s starts "
         "at leader epoch ... with high watermark ...' (2.8.2); '... with partition epoch ... and "
         "high watermark ... Current leader is ...' (3.5-4.1); none before 2.8",
         re.compile(r"^Follower " + _TP + r" starts at leader epoch (?P<e>\d+) from offset "
                    r"(?P<o>\d+) with (?:partition epoch (?P<pe>\d+) and )?high watermark "
                    r"(?P<hw>\d+)\.(?: Current leader is (?P<leader>-?\d+)\.)?"),
         _become_follower),
    Kind("truncate_no_effect",
         "core/.../log/Log.scala, truncateTo: 'Truncating %s to %d has no effect ...' (0.10, "
         "0.11); 'Truncating to %d has no effect ...' (1.0-2.8; UnifiedLog.scala 3.x; "
         "storage/.../UnifiedLog.java 4.1)",
         re.compile(r"^Truncating (?:\S+ )?to (?P<o>\d+) has no effect as the largest offset "
                    r"in the log is (?P<max>-?\d+)"),
         _noop),
    Kind("truncate",
         "core/.../log/Log.scala, truncateTo: 'Truncating log %s to offset %d.' (0.10, 0.11); "
         "'Truncating to offset %d' (1.0-2.8; UnifiedLog.scala 3.x; storage/.../UnifiedLog.java "
         "4.1)",
         re.compile(r"^Truncating (?:log (?P<name>\S+) )?to offset (?P<o>\d+)"),
         _truncate("truncate")),
    Kind("truncate_to_hw",
         "core/.../server/AbstractFetcherThread.scala, truncateToHighWatermark: 'Truncating "
         "partition %s to local high watermark %d' (2.4-3.0); '... with TruncationState(offset=..,"
         " completed=..) due to local high watermark %d' (3.1-4.1); none before 2.4",
         re.compile(r"^Truncating partition " + _TP + r" (?:to local high watermark "
                    r"(?P<o>\d+)|with \w*TruncationState\(offset=(?P<o2>\d+), completed="
                    r"(?P<done>true|false)\) due to local high watermark (?P<hw>\d+))"),
         _truncate("high_watermark")),
    Kind("log_start_offset",
         "core/.../log/Log.scala, maybeIncrementLogStartOffset: 'Incrementing log start offset to "
         "%d' (1.0-2.4); 'Incremented log start offset to %d due to %s' (2.8; UnifiedLog.scala "
         "3.x; storage/.../UnifiedLog.java 4.1); none in 0.10, 0.11",
         re.compile(r"^Increment(?:ing|ed) log start offset to (?P<o>\d+)"
                    r"(?: due to (?P<why>.+?))?\.?$"),
         _log_start),
    Kind("segment_delete",
         "core/.../log/Log.scala, deleteSeg: 'Deleting segment %d from log %s.' (0.10, 0.11; no "
         "reason); Log.scala / UnifiedLog.scala (3.x) / storage/.../UnifiedLog.java (4.1) "
         "deleteOldSegments' reasons: 'Deleting segment LogSegment(..) due to [local] [log] "
         "retention time|size ...' and 'Deleting segments due to [local] log start offset %d "
         "breach: ...' (2.8-4.1); 1.x-2.4: found_deletable_segments",
         re.compile(r"^(?:Deleting segment LogSegment\(baseOffset=(?P<base>\d+)[^)]*\)\)? due to "
                    r"(?P<why>.+)$|Deleting segment (?P<base2>\d+) from log (?P<name>\S+?)\.?$|"
                    r"Deleting segments due to (?P<lso_kind>(?:local )?)log start offset "
                    r"(?P<lso>\d+) breach: (?P<segs>LogSegment\(.*)$)"),
         _segment_delete),
    Kind("recovering_segment",
         "core/.../log/Log.scala, recoverLog: 'Recovering unflushed segment %d in log %s.' (0.10, "
         "0.11); '... %d' (1.0-2.8); LogLoader.scala (3.x) / storage/.../LogLoader.java (4.1): "
         "'... %d. %d/%d recovered for %s.'",
         re.compile(r"^Recovering unflushed segment (?P<base>\d+)(?: in log (?P<name>\S+?)\.?$|\. "
                    r"\S+ recovered for (?P<tp>\S+-\d+)\.?$)?"),
         _recovering),
    Kind("broker_change",
         "core/.../controller/ReplicaStateMachine.scala, BrokerChangeListener (0.10) and "
         "KafkaController.scala BrokerChange (0.11-2.0): 'Newly added brokers: %s, deleted "
         "brokers: %s, all live brokers: %s'; processBrokerChange adds 'bounced brokers' "
         "(2.4-3.x); none in 4.x",
         re.compile(r"^Newly added brokers: (?P<added>[\d,]*), deleted brokers: "
                    r"(?P<deleted>[\d,]*), (?:bounced brokers: (?P<bounced>[\d,]*), )?all "
                    r"live brokers: (?P<live>[\d,]*)"),
         _broker_change),
    Kind("offline_election_failed",
         "core/.../controller/PartitionStateMachine.scala, handleStateChange: 'Controller %d epoch"
         " %d initiated state change for partition %s from %s to %s failed' (0.10, 0.11), "
         "'Initiated state change ...' (1.0.2); logFailedStateChange: 'Controller %d epoch %d "
         "failed to change state for partition %s from %s to %s' (1.1-3.x); none in 4.x",
         re.compile(r"^(?:Controller \d+ epoch \d+ (?:failed to change state|initiated "
                    r"state change)|Initiated state change) for partition " + _TP +
                    r" from OfflinePartition to OnlinePartition"),
         _offline_failed),
    Kind("broker_fenced",
         "metadata/.../controller/ReplicationControlManager.java, maybeFenceStaleBrokers / "
         "maybeFenceOneStaleBroker: 'Fencing broker {} because its session has timed out.' "
         "(2.8-3.7); '... {} at epoch {} because ...' (4.0, 4.1); none before 2.8",
         re.compile(r"^Fencing broker (?P<b>\d+) (?:at epoch (?P<e>\d+) )?because its session has "
                    r"timed out"),
         _fenced),
    Kind("broker_registered",
         "metadata/.../controller/ClusterControlManager.java, replay(RegisterBrokerRecord): "
         "'Registered new broker: {}' / 'Re-registered broker incarnation: {}' / 'Re-registered "
         "broker id {}: {}' (2.8-3.5); 'Replayed initial RegisterBrokerRecord for broker {}: {}' "
         "and two 'Replayed RegisterBrokerRecord ...' (3.7-4.1); none before 2.8",
         re.compile(r"^(?:Registered new broker|Re-registered broker (?:incarnation|id \d+)|"
                    r"Replayed (?:initial RegisterBrokerRecord for broker|RegisterBrokerRecord "
                    r"modifying the registration for broker|RegisterBrokerRecord establishing a "
                    r"new incarnation of broker) \d+): (?P<record>RegisterBrokerRecord\(.*)$"),
         _registered),
    Kind("kraft_partition_change",
         "metadata/.../metadata/PartitionRegistration.java, maybeLogPartitionChange: 'UNCLEAN "
         "partition change for {}: {}' (INFO) / 'partition change for {}: {}' (DEBUG) (3.5-4.1); "
         "none before",
         re.compile(r"^(?P<unclean>UNCLEAN )?partition change for (?P<tp>\S+-\d+)"
                    r"(?: with topic ID \S+)?: (?P<diff>.*)$"),
         _kraft_change),
    Kind("truncate_below_hw",
         "core/.../server/ReplicaFetcherThread.scala, maybeTruncate (2.0.1) / truncate (2.4-4.1): "
         "'Truncating %s to offset %d below high watermark %d' (WARN); none before 2.0",
         re.compile(r"^Truncating " + _TP + r" to offset (?P<o>\d+) below high watermark "
                    r"(?P<hw>\d+)"),
         _below_hw),
    Kind("fetch_offset_reset",
         "core/.../server/AbstractFetcherThread.scala, updatePartitionsWithError / "
         "processFetchRequest: 'Current offset %d for partition [%s,%d] out of range; reset offset"
         " to %d' (0.10, 0.11; 1.0.2 names t-0); handleOutOfRangeError: '... is out of range, "
         "which typically implies a leader change. Reset fetch offset to %d' (1.1-4.1)",
         re.compile(r"^Current offset (?P<old>\d+) for partition " + _TP + r" (?:is )?out of "
                    r"range(?:, which typically implies a leader change\. Reset fetch offset|; "
                    r"reset offset) to (?P<new>\d+)"),
         _out_of_range),
    Kind("fetch_offset_truncate",
         "core/.../server/ReplicaFetcherThread.scala, handleOffsetOutOfRange: 'Replica %d for "
         "partition %s reset its fetch offset from %d to current leader %d's latest|start offset "
         "%d' (0.10, 0.11); 'Reset fetch offset for partition %s from %d to current leader's "
         "latest|start offset %d' (1.0-2.0; AbstractFetcherThread.fetchOffsetAndTruncate 2.4-4.1);"
         " 'Truncate fully and reset fetch offset ... to the current leader's start offset ...' "
         "and '... to the current local replica's end offset %d' (3.7-4.1)",
         re.compile(r"^(?:Replica (?P<r>\d+) for partition " + _TP + r" reset its fetch offset "
                    r"from (?P<old>\d+) to current leader \d+'s (?P<to>latest|start) offset "
                    r"(?P<new>\d+)|(?:Truncate fully and r|R)eset fetch offset for partition "
                    r"(?P<tp2>\S+) from (?P<old2>\d+) to (?:the )?current leader's "
                    r"(?P<to2>latest|start) offset (?P<new2>\d+)|Reset fetch offset for partition "
                    r"(?P<tp3>\S+) from (?P<old3>\d+) to the current local replica's end offset "
                    r"(?P<new3>\d+))"),
         lambda m, pre, rec: _fetch_reset_any(m, pre, rec)),
    Kind("state_change_online",
         "core/.../controller/PartitionStateMachine.scala, handleStateChange: 'Controller %d epoch"
         " %d changed partition %s from %s to %s with leader %d' (0.10, 0.11), 'Changed partition "
         "... with leader %d' (1.0.2); doHandleStateChanges: 'Changed partition %s from %s to %s "
         "with state LeaderAndIsr(..)' (1.1-2.4 TRACE, 2.8-3.x INFO); none in 4.x",
         re.compile(r"^(?:Controller \d+ epoch \d+ changed|Changed) partition " + _TP +
                    r" from (?P<from>\w+) to (?P<to>\w+) with (?:leader (?P<leader>-?\d+)|state "
                    r"(?P<state>.*))$"),
         _state_change),
    Kind("broker_unfenced",
         "metadata/.../controller/ClusterControlManager.java, replay(UnfenceBrokerRecord): "
         "'Unfenced broker: {}' (2.8.2), replayRegistrationChange: 'Replayed "
         "UnfenceBrokerRecord|BrokerRegistrationChangeRecord modifying the registration for broker"
         " {}: {}' (3.7-4.1); BrokerHeartbeatManager.java, calculateNextBrokerState: 'The request "
         "from broker {} to unfence has been granted ...' (2.8-4.1); none before 2.8",
         re.compile(r"^(?:Unfenced broker: (?P<record>.*)|The request from broker (?P<b>\d+) "
                    r"to unfence has been granted|Replayed (?:UnfenceBrokerRecord|"
                    r"BrokerRegistrationChangeRecord) modifying the registration for broker "
                    r"(?P<b2>\d+): (?:UnfenceBrokerRecord\(|BrokerRegistrationChangeRecord\("
                    r"[^)]*\bfenced=-1\b))"),
         _unfenced),
    Kind("truncate_by_epoch",
         "core/.../server/AbstractFetcherThread.scala, truncateToEpochEndOffsets: 'Truncating "
         "partition %s with TruncationState(..) due to leader epoch and offset ...' (3.1-4.1); "
         "before, Log's 'Truncating to offset' alone",
         re.compile(r"^Truncating partition " + _TP + r" with \w*TruncationState\(offset="
                    r"(?P<o>\d+), completed=(?P<done>true|false)\) due to leader epoch and "
                    r"offset"),
         _truncate_epoch),
    Kind("log_loaded",
         "core/.../log/Log.scala, loadSegments: 'Completed load of log %s with %d log segments and"
         " log end offset %d in %d ms' (0.10), '..., log start offset %d and log end offset %d "
         "...' (0.11-1.0.1), 'Completed load of log with %d segments, log start offset %d and "
         "log end offset %d in %d ms' (1.0.2-2.4); LogManager.scala, loadLog(s): 'Completed load "
         "of Log(..) with %d segments in %dms ...' (2.8, 3.5), '..., local-log-start-offset %d "
         "and log-end-offset %d ...' (3.7-4.1)",
         re.compile(r"^Completed load of (?:log (?P<name>\S+) with (?P<n>\d+) log segments(?:, log "
                    r"start offset (?P<start3>\d+))? and log end offset (?P<leo>\d+)|log with "
                    r"(?P<n2>\d+) segments, log start offset (?P<start>\d+) and log end offset "
                    r"(?P<leo2>\d+)|(?:Unified)?Log\("
                    r"[^)]*?topic=(?P<t>[^,]+), partition=(?P<p>\d+), highWatermark=(?P<hw>\d+)"
                    r"[^)]*?logStartOffset=(?P<start2>\d+), logEndOffset=(?P<leo3>\d+)\) with "
                    r"(?P<n3>\d+) segments)"),
         lambda m, pre, rec: _log_loaded_any(m, pre, rec)),
    Kind("partition_failed",
         "core/.../server/AbstractFetcherThread.scala, markPartitionFailed: 'Partition %s marked "
         "as failed' (WARN; 2.4-4.1); none before 2.1",
         re.compile(r"^Partition " + _TP + r" marked as failed"),
         _partition_failed),
    Kind("coordinator_loaded",
         "core/.../coordinator/group/GroupMetadataManager.scala, loadGroupsAndOffsets: 'Finished "
         "loading offsets from %s in %d milliseconds.' (0.10), '... and group metadata from ...' "
         "(0.11-2.4), '... for epoch %d, of which %d milliseconds was spent in the scheduler.' "
         "(2.8-4.0); group-coordinator/.../CoordinatorRuntime.java: 'Finished loading of metadata "
         "from {} with epoch {} and LoadSummary={}.' (3.7, opt-in), coordinator-"
         "common/.../CoordinatorRuntime.java: '... in {}ms where {}ms was spent in the scheduler. "
         "...' (4.1)",
         re.compile(r"^(?:Finished loading offsets (?:and group metadata )?from " + _TP +
                    r" in (?P<ms>\d+) milliseconds(?: for epoch (?P<e>\d+))?|Finished loading of "
                    r"metadata from (?P<tp2>\S+-\d+) with epoch (?P<e2>\d+) (?:in (?P<ms2>\d+)ms|"
                    r"and LoadSummary=LoadSummary\(startTimeMs=(?P<start>\d+), endTimeMs="
                    r"(?P<end>\d+)))"),
         _coordinator_loaded),
    Kind("controller_elected",
         "core/.../controller/KafkaController.scala, elect: '%d successfully elected as the "
         "controller' (0.11-2.0), '... Epoch incremented to %d and epoch zk version is now %d' "
         "(2.4-3.x); core/.../server/ZookeeperLeaderElector.scala, elect: '%d successfully elected"
         " as leader' (0.10); none in 4.x",
         re.compile(r"^(?P<b>\d+) successfully elected as (?:the controller(?:\. Epoch incremented "
                    r"to (?P<e>\d+))?|leader$)"),
         _controller_elected),
    Kind("controlled_shutdown",
         "core/.../controller/KafkaController.scala, shutdownBroker (0.10) / doControlledShutdown "
         "(0.11-3.x): 'Shutting down broker %d'; none in 4.x",
         re.compile(r"^Shutting down broker (?P<b>\d+)$"),
         _shutting_down),
    Kind("log_dir_recovery",
         "core/.../log/LogManager.scala, loadLogs: 'Found clean shutdown file. Skipping recovery "
         "for all logs in data directory: %s' (DEBUG, 0.10-2.4; an unclean start says nothing "
         "here); 'Attempting|Skipping recovery for all logs in %s since [no] clean shutdown file "
         "was found' (2.8.2); 'Recovering %d logs from %s since no clean shutdown file was found' "
         "/ 'Skipping recovery of %d logs from %s since clean shutdown file was found' (3.5-4.1)",
         re.compile(r"^(?:(?:Attempting recovery for all logs in|Recovering (?P<n>\d+) logs "
                    r"from) (?P<dir>\S+) since no clean shutdown file was found|Skipping "
                    r"recovery (?:for all logs in|of (?P<n2>\d+) logs from) (?P<dir2>\S+) since "
                    r"(?P<clean>clean) shutdown file was found|Found clean shutdown file\. "
                    r"Skipping recovery for all logs in data directory: (?P<dir3>\S+))"),
         lambda m, pre, rec: _dir_recovery_any(m, pre, rec)),
    Kind("invalid_messages",
         "core/.../log/LogSegment.scala, recover: 'Found invalid messages in log segment %s at "
         "byte offset %d: %s.' (0.10-2.0), '...: %s. %s' (2.4-3.5); storage/.../LogSegment.java: "
         "'... at byte offset {}.' (3.7-4.1)",
         re.compile(r"^Found invalid messages in log segment (?P<path>\S+) at byte offset "
                    r"(?P<pos>\d+)"),
         _invalid_messages),
    Kind("found_deletable_segments",
         "core/.../log/Log.scala, deleteOldSegments: 'Found deletable segments with base offsets "
         "[%s] due to %s' (0.11-2.4); none in 0.10 or from 2.8 (segment_delete)",
         re.compile(r"^Found deletable segments with base offsets \[(?P<bases>[\d,]*)\] due to "
                    r"(?P<why>.+)$"),
         _deletable),
    Kind("offline_leader_selected_010",
         "core/.../controller/PartitionLeaderSelector.scala, "
         "OfflinePartitionLeaderSelector.selectLeader: 'No broker in ISR is alive for %s. Elect "
         "leader %d from live brokers %s. There's potential data loss.' (WARN) and 'Selected new "
         "leader and ISR %s for offline partition %s' (0.10-1.0); the selector is gone from 1.1",
         re.compile(r"^(?:No broker in ISR is alive for (?P<tp>\[[^,\]]+,\d+\]|\S+-\d+)\. "
                    r"Elect leader (?P<l>-?\d+) from live brokers (?P<live>[\d,]*)\. There's "
                    r"potential data loss|Selected new leader and ISR (?P<state>\{.*\}) for "
                    r"offline partition (?P<tp2>\[[^,\]]+,\d+\]|\S+-\d+))"),
         _offline_010),
    Kind("fetcher_added",
         "core/.../server/AbstractFetcherManager.scala, addFetcherForPartitions: 'Added fetcher "
         "for partitions %s' (0.10-2.0); 'Added fetcher to broker BrokerEndPoint(id=%d, "
         "host=%s:%d) for partitions %s' (2.1-2.4); 'Added fetcher to broker %d for partitions %s'"
         " (2.8-4.1, addPartitionsToFetcherThread)",
         re.compile(r"^Added fetcher (?:to broker (?:(?P<leader>\d+)|BrokerEndPoint\("
                    r"(?:id=)?(?P<leader_ep>\d+)[^)]*\)) )?for partitions (?P<parts>.*)$"),
         _fetcher("add")),
    Kind("fetcher_removed",
         "core/.../server/AbstractFetcherManager.scala, removeFetcherForPartitions: 'Removed "
         "fetcher for partitions %s' (0.10-4.1)",
         re.compile(r"^Removed fetcher for partitions (?P<parts>.*)$"),
         _fetcher("remove")),
    Kind("fetch_error",
         "core/.../server/AbstractFetcherThread.scala, updatePartitionsWithError / "
         "processFetchRequest: 'Error for partition [%s,%d] to broker %d:%s' (0.10, 0.11; 1.0.2 "
         "names t-0); 'Error for partition %s at offset %d' + the exception (1.1-4.1)",
         re.compile(r"^Error for partition " + _TP + r"(?: to broker \d+:(?P<exc>[\w.$]+)| at "
                    r"offset (?P<o>\d+))"),
         _fetch_error),
    Kind("alter_partition_rejected",
         "metadata/.../controller/ReplicationControlManager.java, validateAlterPartitionData: "
         "'Rejecting AlterPartition request from node {} for {}-{} because ...' (INFO/DEBUG; "
         "3.5-4.1; the ZooKeeper controller's KafkaController.tryProcessAlterPartition too, "
         "3.5-3.x); none before 3.2 (AlterIsr)",
         re.compile(r"^Rejecting AlterPartition request from node (?P<b>\d+) for "
                    r"(?P<t>\S+)-(?P<p>\d+) because (?P<why>.+)$"),
         _alter_rejected),
    Kind("alter_partition_failed",
         "core/.../cluster/Partition.scala, handleAlterIsrResponse: 'Failed to update ISR to %s "
         "due to unexpected %s. Retrying.' (WARN; 2.8.2), handleAlterPartitionError: the same and "
         "'Failed to alter partition to %s since the controller rejected the request with %s. ...'"
         " (3.5-4.1); none before 2.7",
         re.compile(r"^Failed to (?:update ISR|alter partition) to (?P<state>.+?) (?:due to "
                    r"unexpected|since the controller rejected the request with) "
                    r"(?P<err>[A-Z_]+)"),
         _alter_failed),
    Kind("preferred_election_done",
         "core/.../controller/KafkaController.scala, removePartitionsFromPreferredReplicaElection:"
         " 'Partition %s completed preferred replica leader election. New leader is %d' "
         "(0.10-3.x); 'Partition %s failed to complete preferred replica leader election. Leader "
         "is %d' (0.10-1.1), '... election to %d. Leader is still %d' (2.0-3.x); none in 4.x",
         re.compile(r"^Partition " + _TP + r" (?:(?P<ok>completed) preferred replica leader "
                    r"election\. New leader is|failed to complete preferred replica leader "
                    r"election(?: to \d+)?\. Leader is(?: still)?) (?P<l>-?\d+)"),
         _preferred_done),
    Kind("coordinator_unloaded",
         "core/.../coordinator/group/GroupMetadataManager.scala, removeGroupsAndOffsets: 'Finished"
         " unloading %s. Removed %d cached offsets and %d cached groups.' (0.11-2.4), '... for "
         "coordinator epoch %d. ...' (2.8-4.0); CoordinatorRuntime.java: 'Finished unloading "
         "metadata for {} with epoch {}.' (3.7 opt-in, 4.x); 0.10.2.2 logs only non-zero counts "
         "('Removed %d cached offsets for %s on follower transition.')",
         re.compile(r"^(?:Finished unloading " + _TP + r"(?: for coordinator epoch (?P<e>\d+))?\. "
                    r"Removed (?P<o>\d+) cached offsets and (?P<g>\d+) cached groups|Finished "
                    r"unloading metadata for (?P<tp2>\S+-\d+) with epoch (?P<e2>\d+))"),
         _coordinator_unloaded),
    Kind("controller_ready",
         "core/.../controller/KafkaController.scala, onControllerFailover: 'Broker %d is ready to "
         "serve as the new controller with epoch %d' (0.10, 0.11), 'Ready to serve as the new "
         "controller with epoch %d' (1.0-3.x); none in 4.x",
         re.compile(r"^(?:Broker (?P<b>\d+) is r|R)eady to serve as the new controller with "
                    r"epoch (?P<e>\d+)"),
         _controller_ready),
    Kind("not_enough_replicas",
         "core/.../cluster/Partition.scala, appendRecordsToLeader (NotEnoughReplicasException): "
         "'Number of insync replicas for partition %s is [%d], below required minimum [%d]' "
         "(0.10-2.0); 'The size of the current ISR %s is insufficient to satisfy the min.isr "
         "requirement of %d for partition %s' (2.4-4.0); 'The size of the current ISR : %d ... for"
         " partition %s, live replica(s) broker.id are : %s' (4.1)",
         re.compile(r"(?:The size of the current ISR : (?P<n3>\d+) is insufficient to satisfy the "
                    r"min\.isr requirement of (?P<min3>\d+) for partition (?P<tp3>\S+-\d+), live "
                    r"replica\(s\) broker\.id are : (?P<isr3>.*)"
                    r"|The size of the current ISR (?P<isr>.*?) is insufficient to satisfy "
                    r"the min\.isr requirement of (?P<min>\d+) for partition (?P<tp>\S+-\d+)"
                    r"|Number of insync replicas for partition (?P<tp2>\S+-\d+) is "
                    r"\[(?P<n>\d+)\], below required minimum \[(?P<min2>\d+)\])"),
         _not_enough),
)

#: Words that make an unparsed record look like a replication message (counted, sampled).
REPLICATION_WORDS: Final = re.compile(
    r"\bISR\b|[Ll]eader [Ee]poch|[Tt]runcat|high watermark|log start offset|[Ff]ence|"
    r"[Ee]lect|OnlinePartition|OfflinePartition|LeaderAndIsr|AlterPartition|zkVersion|"
    r"min\.isr|NotEnoughReplicas|[Rr]eplica")


def match(rec: Record, fmt: str = "auto") -> tuple[Kind, list[Event]] | None:
    """The kind of a record and its events, or None when no kind matches. ``fmt`` ``zk`` or
    ``kraft`` leaves out the other kind of controller's statements (a record only they
    match is then not understood, and counted as such)."""
    pre = prefix_of(rec.message)
    for kind in KINDS:
        if fmt != "auto" and kind.era not in (None, fmt):
            continue
        m = kind.pattern.search(pre.rest) if kind.name == "not_enough_replicas" else (
            kind.pattern.match(pre.rest))
        if m is None and kind.name == "not_enough_replicas":
            for line in rec.extra[:2]:   # the exception's message follows the ERROR line
                m = kind.pattern.search(line)
                if m:
                    break
        if m is not None:
            events = kind.build(m, pre, rec)
            if pre.controller:   # the controller's own decision, whatever broker it names
                for ev in events:
                    ev["_controller"] = True
            return kind, events
    return None
