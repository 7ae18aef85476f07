"""``isrlab explain``'s output: what an explanation is, as JSON and as text for humans.

Design. This module owns the shape of an explanation: :class:`Step` (one event of a
chain), :class:`Chain` (one cause: the anomaly, the partition, the records it covers, its
steps and the rule at fault) and :class:`Explanation` (a trace's chains, with the checker's
result), each with its JSON (``to_json``: what ``--json`` prints and Spark's chain rows are
made of), and :func:`format_text`, the text ``isrlab explain`` prints. It holds no judgement:
the chains (:mod:`traces.explain_chains`) fill these in, and the rules' texts come from
:data:`traces.explain_rules.RULES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from traces.checker import CheckResult
from traces.explain_rules import RULES


@dataclass
class Step:
    seq: int
    ts_us: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "ts_us": self.ts_us, "text": self.text}


@dataclass
class Chain:
    """One cause: the anomaly, the partition, the findings it covers and the steps."""

    anomaly: str
    topic: str
    partition: int
    rule: str
    steps: list[Step]
    #: (offset, value) of each record the chain covers (empty for partition findings)
    records: list[tuple[int, str | None]] = field(default_factory=list)
    count: int = 1
    #: reads of the chain's records that consumers saw rewritten (hw_regression_visible)
    reads: int = 0
    key: tuple[Any, ...] = ()
    #: further partitions one cause reached (a broker's restart regresses each of its HWs)
    more: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        offsets = [o for o, _ in self.records]
        return {
            "anomaly": self.anomaly, "topic": self.topic, "partition": self.partition,
            "count": self.count, "rule": self.rule, "what": RULES[self.rule].what,
            "fix": RULES[self.rule].fix,
            "offsets": [min(offsets), max(offsets)] if offsets else None,
            "values": [self.records[0][1], self.records[-1][1]] if self.records else None,
            "reads_rewritten": self.reads, "more_partitions": self.more,
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass
class Explanation:
    trace: str
    result: CheckResult
    protocol: str
    bugs: list[str]
    chains: list[Chain]
    #: the message lines came from re-running the trace with --trace-messages
    rerun: bool = False
    #: ``--record``: the record asked for (``orders-0@5``) and, per anomaly, the trace's
    #: findings its chain does not cover (:func:`traces.explain.only_record`)
    record: str | None = None
    others: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {"trace": self.trace, "rerun_with_messages": self.rerun,
               "scenario": self.result.scenario,
               "seed": self.result.seed, "protocol": self.protocol, "bugs": self.bugs,
               "incomplete": self.result.incomplete,
               "chains": [c.to_json() for c in self.chains]}
        if self.record is not None:
            doc["record"] = self.record
            doc["other_findings"] = self.others or {}
        return doc


def _s(ts: int) -> str:
    return f"{ts / 1e6:8.3f} s"


def format_text(ex: Explanation) -> str:
    r = ex.result
    lines = [f"trace {ex.trace}  scenario {r.scenario}  seed {r.seed}  protocol {ex.protocol}"
             + (f"  bugs {','.join(ex.bugs)}" if ex.bugs else "")]
    if ex.rerun:
        lines.append("(messages from a re-run with --trace-messages: the same run, event for "
                     "event)")
    if r.incomplete:
        lines.append("INCOMPLETE: the run did not finish; the chains cover what the trace has")
    if not ex.chains:
        lines.append(f"nothing to explain: no finding names {ex.record}" if ex.record
                     else "nothing to explain: no anomaly found")
    for c in ex.chains:
        lines += chain_lines(c)
    if ex.record is not None and ex.others:
        n = sum(ex.others.values())
        kinds = ", ".join(f"{k} {v:,}" for k, v in ex.others.items())
        lines.append(f"(the trace has {n:,} other finding{'s' if n > 1 else ''}: {kinds}; "
                     f"all of them: isrlab explain {ex.trace})")
    return "\n".join(lines)


def chain_lines(c: Chain) -> list[str]:
    """One chain as ``isrlab explain`` prints it: a head line, then (for a chain with a rule
    of its own) the rule, its fix and the steps, indented."""
    lines: list[str] = []
    head = f"{c.anomaly} {', '.join([f'{c.topic}-{c.partition}', *c.more])}"
    rule = RULES[c.rule]
    if rule.expected:
        st = c.steps[-1]
        times = f"{c.count} times" if c.count > 1 else "once"
        return [f"{head}: {times}, expected ({c.rule}): {rule.what}; the last at "
                f"{_s(st.ts_us).strip()}: {st.text}"]
    if c.rule == "unexplained" and not c.records:
        # a finding with no rule of its own: one line, its first occurrence
        st = c.steps[0]
        when = "at the end" if st.seq == 1 << 62 else f"at {_s(st.ts_us).strip()}"
        times = f"{c.count} times, first " if c.count > 1 else ""
        return [f"{head}: {times}{when}: {st.text}"]
    if c.records and c.records[0][1] is not None:
        offs = sorted(o for o, _ in c.records)
        vals = [v for _, v in sorted(c.records)]
        span = (f"offset {offs[0]}" if len(offs) == 1
                else f"{len(offs)} records, offsets {offs[0]}..{offs[-1]}")
        head += f": {span} ({vals[0]}" + (f" .. {vals[-1]})" if len(vals) > 1 else ")")
    elif c.records:
        offs = sorted(o for o, _ in c.records)
        head += (f": offset {offs[0]}" if len(offs) == 1
                 else f": {len(offs)} offsets, {offs[0]}..{offs[-1]}")
    elif c.count > 1:
        head += f": {c.count} times, the last:"
    if c.reads:
        head += f"; {c.reads} read{'s' if c.reads > 1 else ''} of them rewritten"
    lines.append(head)
    lines.append(f"  rule  {c.rule}: {rule.what}")
    lines.append(f"  fix   {rule.fix}")
    for st in c.steps:
        when = "  at end" if st.seq < 0 or st.seq >= 1 << 62 else _s(st.ts_us)
        lines.append(f"  {when}  {st.text}")
    return lines
