"""Why an anomaly happened: causal chains read from a trace (``isrlab explain``).

``isrlab check`` says *that* acknowledged writes were lost; this module says *why*, in the
seeds' terms (LEO, HW, ISR, truncation, election) and from the trace contract alone
(``traces.schema``): no model code is imported, so a chain is evidence, not a restatement of
what the emulator meant to do.

How
---
Two passes over the trace.

1. The checker (:mod:`traces.checker`), keeping every finding rather than the first ten.
2. A fold over the partitions that have findings, rebuilding what each replica's log held.
   A replica's log is a list of *runs*: offsets ``[start, end)`` tagged with the leader
   *term* that wrote them — one ``become_leader`` of one replica, shown by its leader
   epoch. A leader's append (``leo_update`` while it is leader) is its own term; a
   follower's append copies its leader's runs over the same offsets (the records a fetch
   carries are the leader's); ``log_truncate``, ``log_recovery`` (a power loss keeps only
   what the page cache had flushed), ``replica_deleted`` and ``replica_created`` cut or
   reset the log. A record is identified by ``(offset, term)``: in one term one leader
   writes each offset at most once. (Terms, not epochs: before KIP-380 a broker that
   bounced inside its ZooKeeper session resumed leadership in the *same* epoch with an
   emptied log and wrote the offsets again.) For every offset a finding names, the fold keeps
   each replica's history at that offset (which epoch it held, since when, and what changed
   it), and at each finding's witnessing event a snapshot of the partition (leader, epoch,
   committed ISR, the leader's HW, pending ISR expansions).

Each finding is then judged into a *chain*: the write and its acknowledgement, every event
that took the record from a replica, the ISR changes that let a replica without it in, the
election that made such a replica leader, and the append that overwrote the offset — plus the
faults that set these off — and named by the *rule at fault* (:data:`RULES`): the Kafka
mechanism, and the KIP or JIRA whose fix changes it. Findings of one partition whose chains
are made of the same trace events (the same truncation, the same election) are one chain
listing the offsets it covers: 500 lost writes of one truncation are one story, not 500.

The epoch a follower copies is its leader's *at the time of the append* in trace order; a
fetch response overtaken by the leader's own truncation is not modelled (the trace does not
carry the records a response held). The final logs (``final_log``, which carry each record's
epoch) check the reconstruction: a test holds the two equal on the catalog's traces.

Layout
------
This module is the door (:func:`main`, :func:`explain_with_messages`) and the names the
rest of the house imports; the work lives beside it, each module importing only those
listed before it: :mod:`traces.explain_fold` (pass 2: the replicas' logs and the partition's
history), :mod:`traces.explain_rules` (:data:`RULES` and which rule a chain names),
:mod:`traces.explain_output` (``Step``, ``Chain``, ``Explanation``, their JSON and
:func:`format_text`), :mod:`traces.explain_story` (the chains of every finding that is
not about one record: churn, offline partitions, stuck consumers, lost commits, TCP-held
requests, imported possible losses), :mod:`traces.explain_chains` (:func:`explain`: the
findings judged into chains, merged and ordered).
"""

from __future__ import annotations

from pathlib import Path

from traces.checker import EXIT_INCOMPLETE
from traces.explain_chains import RECORD_ANOMALIES, explain
from traces.explain_fold import MAX_RANGE, UNKNOWN, Key, replica_logs
from traces.explain_output import Chain, Explanation, Step, format_text
from traces.explain_rules import RULES, Rule
from traces.reader import iter_events

__all__ = ["EXIT_INCOMPLETE", "MAX_RANGE", "RECORD_ANOMALIES", "RULES", "UNKNOWN", "Chain",
           "ExplainError", "Explanation", "Key", "Rule", "Step", "explain",
           "explain_with_messages", "format_text", "only_record", "replica_logs"]


class ExplainError(Exception):
    """``--messages`` cannot be honoured: one line (exit 2)."""


def explain_with_messages(path: str, *, anomaly: str | None = None,
                          record: tuple[Key, int] | None = None) -> Explanation:
    """:func:`explain` with the messages behind each step. A trace recorded without message
    lines is re-run from its header with ``--trace-messages`` (``traces.replay``) and the
    re-run is explained — only when it is the same run event for event; otherwise (other
    code, another version) :class:`ExplainError` says so."""
    import tempfile

    from traces.replay import replay_trace

    with iter_events(path, verify=False) as events:
        header = next(events, {})
    if header.get("trace_messages") is True:
        return explain(path, anomaly=anomaly, record=record)
    with tempfile.TemporaryDirectory(prefix="isrlab-explain-") as tmp:
        out = str(Path(tmp) / "with-messages.jsonl")
        res = replay_trace(path, out, trace_messages=True)
        if not res.identical:
            where = res.divergence.seq if res.divergence is not None else "?"
            raise ExplainError(
                f"{path}: --messages: the trace has no message lines, and re-running it "
                f"with message tracing does not give the same run (it diverges at model event "
                f"{where}; recorded by isrlab {res.recorded_version}): explain it without "
                "--messages")
        ex = explain(out, anomaly=anomaly, record=record)
    ex.trace, ex.rerun = path, True
    return ex


def only_record(ex: Explanation, record: tuple[Key, int]) -> Explanation:
    """``--record``: ``ex`` (explained with ``record=``) narrowed to the one chain of that
    record — the first in explain's order (a lost write before a divergence) of the chains
    of its partition whose records hold its offset — with every other finding of the trace
    counted by anomaly in ``others`` instead of explained: the partition's churn, its HW
    regressions, other records' losses are other stories."""
    (topic, partition), offset = record
    mine = [c for c in ex.chains if (c.topic, c.partition) == (topic, partition)
            and any(o == offset for o, _ in c.records)][:1]
    others = dict(ex.result.anomalies)
    for c in mine:   # its own findings, and the rewritten reads folded into it
        others[c.anomaly] -= c.count
        if c.reads:
            others["hw_regression_visible"] -= c.reads
    ex.chains = mine
    ex.record = f"{topic}-{partition}@{offset}"
    ex.others = {k: n for k, n in others.items() if n > 0}
    return ex
