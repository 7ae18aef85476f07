"""One verdict in words, the same at every door (docs/anomalies.md, "The verdict").

``run``, ``check``, ``regress``, ``report``, the campaign page and every ``--json`` say
what a trace shows in one order:

1. *What happened to the data*, as a word and a phrase: ``LOST 500 acknowledged writes on
   orders-0``. The word follows the data alone, most serious first: ``LOST`` (an
   acknowledged write or a committed offset is gone), ``DIVERGED`` (replicas, or the controller
   quorum's voters, disagree below their HWs), ``UNSAFE`` (a read of what was not
   committed, a replica outside its assignment, a controller acting on metadata not yet
   committed), ``STUCK`` (a partition did not converge), ``ANOMALOUS`` (client-visible
   order: duplicates, reordered sends, skipped or repeated polls), ``SAFE``. A loss is
   LOST and red even when the scenario exists to show it.
2. *Whether the scenario expected it*, beside the word: ``expected: this scenario
   reproduces S1 under 0.10``, ``UNEXPECTED: log_divergence is forbidden here``,
   ``NOT REPRODUCED: expected lost_acked_write``. This is what exit codes follow.
3. The run's status (``ok``, ``aborted``…), printed apart: a run that did not finish gets
   no verdict (``INCOMPLETE``), nor does an import of Kafka's logs (``IMPORTED``).
4. The anomaly counts, every non-zero one in the order of ``ANOMALIES``, with units: time
   anomalies in seconds.

Informational anomalies (``expired``, ``hw_regression_replica``, ``isr_churn``,
``under_min_isr``) never choose the word; they are counted in step 4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from traces.schema import ANOMALIES, DEFAULT_FORBID, POSSIBLE_LOSS

#: the words, most serious first, and the anomalies that choose each
WORDS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("LOST", ("lost_acked_write", "lost_committed_offset", "lost_acked_uncommitted")),
    ("DIVERGED", ("log_divergence", "metadata_divergence")),
    ("UNSAFE", ("hw_regression_visible", "read_uncommitted", "outside_assignment",
                "uncommitted_metadata_applied")),
    ("STUCK", ("no_convergence",)),
    ("ANOMALOUS", ("duplicate", "nonmonotonic_send", "poll_skip", "nonmonotonic_poll")),
)

#: counted, never the verdict's word (the possible-loss signals choose it only in a trace
#: imported from Kafka's logs, where no record-level anomaly can: ``POSSIBLE_LOSS``)
INFORMATIONAL: Final = ("expired", "hw_regression_replica", "isr_churn", "under_min_isr",
                        *POSSIBLE_LOSS)

#: anomalies counted in milliseconds by the checkers, shown in seconds
DURATIONS: Final = ("under_min_isr",)

#: the colour of each word: red for the data's harm, amber for order, green for safe
TONE: Final = {"LOST": "bad", "DIVERGED": "bad", "UNSAFE": "bad", "STUCK": "bad",
               "ANOMALOUS": "warn", "SAFE": "ok", "INCOMPLETE": "warn", "IMPORTED": "warn",
               "POSSIBLE LOSS": "bad"}

_PHRASES: Final = {
    "lost_acked_write": ("acknowledged write", "acknowledged writes"),
    "lost_acked_uncommitted": ("acks=1 write", "acks=1 writes"),
    "lost_committed_offset": ("committed offset", "committed offsets"),
    "log_divergence": ("offset where replicas hold different records",
                       "offsets where replicas hold different records"),
    "hw_regression_visible": ("read of a record later rewritten or never committed",
                              "reads of records later rewritten or never committed"),
    "read_uncommitted": ("read above the high watermark", "reads above the high watermark"),
    "outside_assignment": ("ISR member or leader outside the replica list",
                           "ISR members or leaders outside the replica list"),
    "no_convergence": ("partition that did not converge", "partitions that did not converge"),
    "duplicate": ("value written twice", "values written twice"),
    "nonmonotonic_send": ("send that landed below an earlier one",
                          "sends that landed below an earlier one"),
    "poll_skip": ("poll that skipped offsets", "polls that skipped offsets"),
    "possible_committed_truncation": ("truncation below the high watermark",
                                      "truncations below the high watermark"),
    "unclean_election": ("unclean election", "unclean elections"),
    "leader_epoch_regression": ("leader epoch that went backwards",
                                "leader epochs that went backwards"),
    "nonmonotonic_poll": ("poll that stepped back", "polls that stepped back"),
    "metadata_divergence": ("metadata offset where voters committed different entries",
                            "metadata offsets where voters committed different entries"),
    "uncommitted_metadata_applied": ("metadata replay above the quorum's high watermark",
                                     "metadata replays above the quorum's high watermark"),
}

SAFE_PHRASE: Final = "no write lost, no safety anomaly"


@dataclass(frozen=True)
class Verdict:
    """A trace's verdict: ``word`` and ``what`` (the data), ``expectation`` (the scenario's
    view of it, empty when there is nothing to say), ``expect_met`` (None: no verdict)."""

    word: str
    what: str
    expectation: str
    expect_met: bool | None

    @property
    def tone(self) -> str:
        """``bad``, ``warn`` or ``ok``: the data's colour, not the expectation's."""
        return TONE[self.word]

    @property
    def expectation_tone(self) -> str:
        """The colour of the label beside the word."""
        return "info" if self.expect_met else "warn" if self.expect_met is None else "bad"

    @property
    def headline(self) -> str:
        """``WORD what — expectation``: the first line every door prints."""
        head = f"{self.word}: {self.what}" if self.word in ("SAFE", "INCOMPLETE", "IMPORTED") \
            else f"{self.word} {self.what}"
        return f"{head} — {self.expectation}" if self.expectation else head

    def to_json_dict(self) -> dict[str, Any]:
        return {"word": self.word, "what": self.what, "expectation": self.expectation,
                "headline": self.headline, "tone": self.tone}


def _count(n: int, kind: str) -> str:
    one, many = _PHRASES[kind]
    return f"{n:,} {one if n == 1 else many}"


def _where(per_partition: Mapping[str, int] | None) -> str:
    if not per_partition:
        return ""
    hit = [p for p, n in per_partition.items() if n]
    if len(hit) == 1:
        return f" on {hit[0]}"
    return f" on {len(hit)} partitions" if hit else ""


def data_word(anomalies: Mapping[str, int | None]) -> tuple[str, tuple[str, ...]]:
    """The word the data chooses and the anomalies behind it (none for SAFE)."""
    for word, kinds in WORDS:
        hit = tuple(k for k in kinds if anomalies.get(k))
        if hit:
            return word, hit
    return "SAFE", ()


def reproduces(scenario: Mapping[str, Any] | None) -> str:
    """What a scenario reproduces, from its ``[catalog] reference`` and ``bugs``:
    ``S4 (KAFKA-7128) under 4.1``; empty when it names neither."""
    if not scenario:
        return ""
    catalog = scenario.get("catalog")
    ref = catalog.get("reference") if isinstance(catalog, dict) else None
    bugs = [str(b) for b in scenario.get("bugs") or [] if isinstance(b, str)]
    names = " ".join(x for x in ([ref] if isinstance(ref, str) and ref else [])
                     + ([f"({', '.join(bugs)})"] if bugs and ref else bugs))
    protocol = scenario.get("protocol")
    if not names:
        return ""
    return f"{names} under {protocol}" if isinstance(protocol, str) else names


def judge(anomalies: Mapping[str, int | None], *, forbidden_found: Sequence[str] = (),
          missing_expected: Sequence[str] = (), expected: Sequence[str] = (),
          expect_met: bool | None = None, scenario: Mapping[str, Any] | None = None,
          per_partition: Mapping[str, Mapping[str, int]] | None = None,
          incomplete: str | None = None, imported: bool = False) -> Verdict:
    """The verdict from what any door has: the counts, the expectation's outcome and, when
    known, the scenario (for what it reproduces) and the counts per partition (for where).
    ``incomplete``: why the run did not finish (no verdict); ``expect_met`` None with no
    lists means the door only knows met / not met."""
    if incomplete is not None:
        return Verdict("INCOMPLETE", f"the run did not finish ({incomplete}), so no verdict",
                       "", None)
    if imported:
        signals = [k for k in POSSIBLE_LOSS if anomalies.get(k)]
        if signals:   # what a log shows of a loss, without proving an acknowledgement
            return Verdict("POSSIBLE LOSS", " and ".join(
                _count(anomalies.get(k) or 0, k) + _where(
                    {p: c.get(k, 0) for p, c in per_partition.items()} if per_partition
                    else None) for k in signals),
                "from Kafka's logs: a log does not prove an acknowledgement, and per-record "
                "anomalies are not available", None)
        return Verdict("IMPORTED", "read from Kafka's logs: the ISR, HW, truncation and "
                       "election views stand; per-record anomalies are not available, so no "
                       "verdict", "", None)
    word, kinds = data_word(anomalies)
    if word == "SAFE":
        what = SAFE_PHRASE
    else:
        parts = []
        for k in kinds:
            n = anomalies.get(k) or 0
            where = _where({p: c.get(k, 0) for p, c in per_partition.items()}
                           if per_partition else None)
            parts.append(_count(n, k) + where)
        what = " and ".join(parts)
    met = expect_met if expect_met is not None else not forbidden_found and not missing_expected
    if not met:
        bits = []
        if forbidden_found:
            bits.append(f"{', '.join(forbidden_found)} "
                        f"{'is' if len(forbidden_found) == 1 else 'are'} forbidden here")
        if missing_expected:
            bits.append(f"expected {', '.join(missing_expected)}, not found")
        label = ("UNEXPECTED: " if forbidden_found else "NOT REPRODUCED: ") if bits \
            else "NOT AS EXPECTED"
        expectation = label + "; ".join(bits)
    elif expected:
        ref = reproduces(scenario)
        expectation = (f"expected: this scenario reproduces {ref}" if ref
                       else f"expected: the scenario expects {', '.join(expected)}")
    elif word != "SAFE":
        expectation = "allowed by this scenario"
    else:
        expectation = ""
    return Verdict(word, what, expectation, met)


def counts_text(anomalies: Mapping[str, int | None], order: Iterable[str], *,
                not_available: Iterable[str] = (), sep: str = ", ") -> str:
    """Every non-zero anomaly in ``order`` with its unit (``under_min_isr 6.5 s``);
    ``none`` when there is none. Anomalies in ``not_available`` read ``n/a``."""
    na = set(not_available)
    out = []
    for name in order:
        if name in na:
            continue
        n = anomalies.get(name) or 0
        if n:
            out.append(f"{name} {n / 1000:,.1f} s" if name in DURATIONS else f"{name} {n:,}")
    text = sep.join(out) or "none"
    return text + (f" ({', '.join(sorted(na))}: n/a)" if na else "")


def anomaly_label(name: str, count: int, *, forbidden_found: Sequence[str],
                  missing_expected: Sequence[str], expected: Sequence[str]) -> tuple[str, str]:
    """(label, tone) of one anomaly's row in a table: ``FORBIDDEN``, ``expected, missing``,
    ``expected``, ``informational``, ``allowed here`` or nothing for a zero."""
    if name in forbidden_found:
        return "FORBIDDEN", "bad"
    if name in missing_expected:
        return "expected, missing", "warn"
    if count and name in expected:
        return "expected", "info"
    if count and name in INFORMATIONAL:
        return "informational", ""
    if count:
        return "allowed here", "warn"
    return "", "zero"


def partition_state(offline: bool, converged: bool | None,
                    anomalies: Mapping[str, int]) -> str:
    """A partition's state at the end of a run, as tables print it: where it stands
    (``offline``, ``not converged``, ``up``) and, when its data was harmed, the word and
    phrase of its verdict (``up, LOST 500 acknowledged writes``)."""
    where = "offline" if offline else "not converged" if converged is False else "up"
    word, kinds = data_word(anomalies)
    if word in ("SAFE", "STUCK"):   # STUCK is what "not converged" says
        return where
    return f"{where}, {word} " + " and ".join(_count(anomalies.get(k) or 0, k) for k in kinds)


def expectations(scenario: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(must appear, must not appear) from a scenario's ``expect`` table; without ``forbid``
    the default list (docs/anomalies.md section 6)."""
    expect = scenario.get("expect")
    if not isinstance(expect, dict):
        expect = {}
    must = expect.get("anomalies")
    forbid = expect.get("forbid")
    must_l = [a for a in must if isinstance(a, str)] if isinstance(must, list) else []
    if isinstance(forbid, list):
        forbid_l = [a for a in forbid if isinstance(a, str)]
    else:
        forbid_l = list(DEFAULT_FORBID)
    return must_l, forbid_l


def verdict_for(anomalies: Mapping[str, int | None], scenario: Mapping[str, Any] | None, *,
                per_partition: Mapping[str, Mapping[str, int]] | None = None,
                incomplete: str | None = None, imported: bool = False) -> Verdict:
    """The verdict of a door that has the counts and the trace's scenario (``run_start``),
    judged against the scenario's ``[expect]`` exactly as the checker judges it."""
    sc = scenario or {}
    must, forbid = expectations(sc)
    forbidden = [a for a in ANOMALIES if a in forbid and (anomalies.get(a) or 0) > 0]
    missing = [a for a in must if not anomalies.get(a)]
    return judge(anomalies, forbidden_found=forbidden, missing_expected=missing,
                 expected=must, scenario=sc, per_partition=per_partition,
                 incomplete=incomplete, imported=imported)
