"""``isrlab explain``'s chains of the controller quorum's findings (``traces.quorum_check``).

``metadata_divergence`` and ``uncommitted_metadata_applied`` are counted on the metadata
log, ``__cluster_metadata-0``. Their chains are told from the quorum's events the story
keeps (``raft_transition``, ``raft_append``, ``raft_truncate``, ``raft_hw``,
``metadata_apply``, ``controller_renounced``: :data:`traces.explain_fold.STORY_EVENTS`):

* a divergence: the elections of the two epochs whose entries differ at the offset, the
  appends that put each entry in its voter's log, any truncation of those voters, and the
  high watermark that passed the offset on the second voter — rule
  ``metadata_log_diverged``;
* an apply above the quorum's HW: the largest HW traced before it (and by which voter),
  the append that put the offset in the applying voter's log, and the apply — rule
  ``applied_above_quorum_hw``.
"""

from __future__ import annotations

from typing import Any, Protocol

from traces.checker import Event
from traces.explain_fold import Key, _int, _Story
from traces.explain_output import Chain, Step

#: the events of the quorum a chain may show
QUORUM_STORY: frozenset[str] = frozenset({
    "raft_transition", "raft_append", "raft_truncate", "raft_hw", "metadata_apply",
    "controller_renounced"})


class _Teller(Protocol):
    @property
    def story(self) -> _Story: ...
    def _ts_of(self, seq: int) -> int: ...


def _who(node_id: Any, observer: bool) -> str:
    """A voter is ``controller-N``; a broker's observer (``observer: true``) ``broker-N``."""
    return f"broker-{node_id}" if observer else f"controller-{node_id}"


def _words(ev: Event) -> str:
    n, v = ev.get("event"), ev.get("voter")
    who = _who(v, bool(ev.get("observer")))
    if n == "raft_transition":
        return (f"{who} {ev.get('from')} -> {ev.get('to')} in epoch {ev.get('epoch')} "
                f"(leader {ev.get('leader')})")
    if n == "raft_append":
        return (f"{who} appended metadata offsets {ev.get('first')}..{ev.get('last')} of "
                f"epoch {ev.get('epoch')} as {ev.get('role', 'leader')} "
                f"({', '.join(str(r) for r in ev.get('records') or [])})")
    if n == "raft_truncate":
        return f"{who} truncated its metadata log to {ev.get('offset')} (from {ev.get('old')})"
    if n == "raft_hw":
        return (f"{who}'s metadata high watermark {ev.get('hw')} (log end {ev.get('leo')}, "
                f"epoch {ev.get('epoch')})")
    if n == "metadata_apply":
        verb = "applied" if ev.get("observer") else "replayed"
        return f"{who} {verb} metadata offsets {ev.get('first')}..{ev.get('offset')}"
    if n == "controller_renounced":
        return f"{who} renounced the active controller role of epoch {ev.get('epoch')}"
    return str(n)


def _step(ev: Event, text: str | None = None) -> Step:
    return Step(_int(ev.get("seq")) or 0, _int(ev.get("ts_us")) or 0,
                text if text is not None else _words(ev))


def _holds(ev: Event, voter: int | None, offset: int) -> bool:
    """``ev`` is a ``raft_append`` of ``voter`` covering ``offset``."""
    first, last = _int(ev.get("first")), _int(ev.get("last"))
    return (ev.get("event") == "raft_append" and _int(ev.get("voter")) == voter
            and first is not None and last is not None and first <= offset <= last)


def metadata_chain(teller: _Teller, anomaly: str, key: Key, d: dict[str, Any]) -> Chain:
    """The chain of a quorum finding (see the module note)."""
    seq = _int(d.get("seq")) or 0
    offset = _int(d.get("offset")) or 0
    voter = _int(d.get("voter"))
    before = [e for e in teller.story.events if e.get("event") in QUORUM_STORY
              and (_int(e.get("seq")) or 0) < seq]
    steps: list[Step] = []
    group: tuple[Any, ...]
    if anomaly == "metadata_divergence":
        first_voter, epochs = _int(d.get("committed_by")), {
            _int(d.get("committed_epoch")), _int(d.get("epoch"))}
        steps += [_step(e) for e in before if e.get("event") == "raft_transition"
                  and e.get("to") == "leader" and _int(e.get("epoch")) in epochs]
        for v in (first_voter, voter):
            held = [e for e in before if _holds(e, v, offset)]
            steps += [_step(e) for e in held[-1:]]
            steps += [_step(e) for e in before if e.get("event") == "raft_truncate"
                      and _int(e.get("voter")) == v][-1:]
        steps.append(Step(seq, teller._ts_of(seq), (
            f"controller-{voter}'s high watermark passed metadata offset {offset}, where it "
            f"holds epoch {d.get('epoch')}'s entry; controller-{first_voter} had committed "
            f"epoch {d.get('committed_epoch')}'s there")))
        rule, group = "metadata_log_diverged", (anomaly, first_voter, voter,
                                                d.get("committed_epoch"), d.get("epoch"))
    else:
        hws = [e for e in before if e.get("event") == "raft_hw"]
        top = max(hws, key=lambda e: (_int(e.get("hw")) or 0), default=None)
        if top is not None:
            steps.append(_step(top, "the quorum's high watermark: " + _words(top)))
        steps += [_step(e) for e in before if _holds(e, voter, offset)][-1:]
        observer = bool(d.get("observer"))
        steps.append(Step(seq, teller._ts_of(seq), (
            f"{_who(voter, observer)} {'applied' if observer else 'replayed'} metadata "
            f"offsets {d.get('first')}..{offset}, at or "
            f"above the quorum's high watermark {d.get('quorum_hw')}: not committed yet")))
        rule, group = "applied_above_quorum_hw", (anomaly, voter)
    steps.sort(key=lambda s: s.seq)
    return Chain(anomaly, key[0], key[1], rule, steps, [], key=group)
