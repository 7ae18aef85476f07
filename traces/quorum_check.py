"""The controller quorum's anomalies, for the fast checker (``traces.checker``).

A run with ``cluster.controller_quorum`` traces each voter's metadata log (``raft_append``:
entries of one epoch at ``first..last``; ``raft_truncate``: the log cut to ``offset``), its
high watermark (``raft_hw``) and what each controller replayed and each broker applied
(``metadata_apply``; a broker's, a Raft observer's, carries ``observer``: true and its id as
``voter``). From them, in trace order (docs/anomalies.md, "The controller quorum"):

* ``metadata_divergence`` — an offset of the metadata log where two voters held different
  entries below their high watermarks. An entry is known by its (offset, epoch): Raft's Log
  Matching property makes the pair identify it, so the logs are rebuilt as epochs. Each time
  a voter's ``raft_hw`` passes an offset (from its previous HW, 0 before its first, up to
  the new one), the entry it holds there (none: a gap) is one *observation*; the first
  observation of an offset fixes its committed entry and every later one that differs makes
  that offset diverge. Counted once per offset. (A voter's log cannot change below its HW,
  ``MockLog.truncateTo`` refuses it, so checking as the HW passes sees every entry a voter
  ever held there.)
* ``uncommitted_metadata_applied`` — a ``metadata_apply`` whose last offset is at or above
  the quorum's high watermark when it happens: the largest HW any voter had traced before
  it (a majority holds everything below it; nothing above it is committed yet). Counted
  per event, a controller's replay and a broker's apply alike (the finding names the node
  that applied, and says whether it is an observer). Observers trace no ``raft_hw``: only
  the voters' high watermarks make the quorum's.

Both are counted on the metadata log's own partition, ``__cluster_metadata-0`` (Kafka's
name for it), which appears in the per-partition results only when one of them is found.
``spark_analysis.quorum`` computes the same counts in SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

#: the partition the quorum's anomalies are counted on (Kafka's metadata log)
METADATA_PARTITION: Final = ("__cluster_metadata", 0)
QUORUM_ANOMALIES: Final = ("metadata_divergence", "uncommitted_metadata_applied")
#: a ``raft_append`` / ``raft_hw`` spanning more offsets than this is not believed (a damaged
#: or foreign trace must not make the checker loop for ever)
MAX_SPAN: Final = 10_000_000

Note = Callable[[str, tuple[str, int], "int | None", dict[str, Any]], None]
Event = Mapping[str, Any]


def _int(v: Any) -> int | None:
    return v if type(v) is int else None


class QuorumChecker:
    """The quorum's part of :class:`traces.checker.Checker`: ``handlers`` maps event names
    to its methods; findings go to ``note`` (the checker's ``_note``)."""

    def __init__(self, note: Note) -> None:
        self._note = note
        #: voter -> offset -> epoch of the entry it holds there
        self._logs: dict[int, dict[int, int]] = {}
        self._hw: dict[int, int] = {}
        self.quorum_hw = 0
        #: offset -> (epoch or None, voter) of its first observation below a HW
        self._committed: dict[int, tuple[int | None, int]] = {}
        self._diverged: set[int] = set()

    def handlers(self) -> dict[str, Callable[[Event, int, int], None]]:
        return {"raft_append": self._on_append, "raft_truncate": self._on_truncate,
                "raft_hw": self._on_hw, "metadata_apply": self._on_apply}

    def _on_append(self, ev: Event, seq: int, ts: int) -> None:
        voter, epoch = _int(ev.get("voter")), _int(ev.get("epoch"))
        first, last = _int(ev.get("first")), _int(ev.get("last"))
        if (voter is None or epoch is None or first is None or last is None or first < 0
                or not 0 <= last - first < MAX_SPAN):
            return
        log = self._logs.setdefault(voter, {})
        for o in range(first, last + 1):
            log[o] = epoch

    def _on_truncate(self, ev: Event, seq: int, ts: int) -> None:
        voter, offset = _int(ev.get("voter")), _int(ev.get("offset"))
        log = self._logs.get(voter) if voter is not None else None
        if log is None or offset is None:
            return
        for o in [o for o in log if o >= offset]:
            del log[o]

    def _on_hw(self, ev: Event, seq: int, ts: int) -> None:
        voter, hw = _int(ev.get("voter")), _int(ev.get("hw"))
        if voter is None or hw is None:
            return
        prev = self._hw.get(voter, 0)
        self._hw[voter] = hw
        self.quorum_hw = max(self.quorum_hw, hw)
        if not 0 <= hw - prev < MAX_SPAN:
            return
        log = self._logs.get(voter, {})
        for o in range(max(prev, 0), hw):
            epoch = log.get(o)
            first = self._committed.setdefault(o, (epoch, voter))
            if first[0] != epoch and o not in self._diverged:
                self._diverged.add(o)
                self._note("metadata_divergence", METADATA_PARTITION, seq, {
                    "ts_us": ts, "offset": o, "voter": voter, "epoch": epoch,
                    "committed_epoch": first[0], "committed_by": first[1]})

    def _on_apply(self, ev: Event, seq: int, ts: int) -> None:
        voter, offset = _int(ev.get("voter")), _int(ev.get("offset"))
        if voter is None or offset is None or offset < self.quorum_hw:
            return
        self._note("uncommitted_metadata_applied", METADATA_PARTITION, seq, {
            "ts_us": ts, "voter": voter, "first": _int(ev.get("first")), "offset": offset,
            "quorum_hw": self.quorum_hw, "node": ev.get("node"),
            "observer": ev.get("observer") is True})
