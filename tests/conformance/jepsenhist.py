"""Jepsen's Kafka-checker histories written as isrlab trace events.

Jepsen's ``kafka_test.clj`` builds histories of operations by numbered processes: ``send``
operations whose completions say at which offset of a key each value landed (or nothing,
when the outcome is unknown — ``:info`` — or failed — ``:fail``), ``poll`` operations listing
the (offset, value) pairs read per key, and ``assign``/``subscribe`` operations replacing a
process's keys. isrlab's checker reads traces, so each history is replayed here as the
events isrlab's clients emit:

* a key is a partition of topic ``t`` (``x`` is 0, ``y`` 1);
* a send is a ``produce_send`` per value by producer ``process`` and, when the completion is
  ``:ok`` with an offset, a ``produce_ack`` at it; a failed one a ``produce_error``;
* a poll is a ``consume`` per (offset, value), by consumer ``p<process>`` of group ``g``;
* an ``assign`` is an ``assignment`` event with ``protocol`` "assign" (``KafkaConsumer
  .assign`` keeps the positions of partitions still assigned); a ``subscribe`` one with the
  group protocol the test says (Jepsen's history does not name the assignor).

Both partitions have a leader whose HW (``hw``) is above every offset read, so no read is
beyond the HW; there are no final logs (Jepsen's histories have none), so isrlab's
durability verdicts (lost writes, divergence) are silent unless a test adds them.
"""

from __future__ import annotations

from typing import Any

from spark.tracebuild import Trace, scenario

from traces.checker import check_events

KEYS = {"x": 0, "y": 1}
Mop = tuple[str, Any, int | None]   # (key, value, offset or None)


class History:
    def __init__(self, hw: int = 1000) -> None:
        self.hw = hw
        sc = scenario(min_isr=1, rf=1)
        sc["topics"][0]["partitions"] = len(KEYS)
        self.trace = Trace(sc)
        for partition in KEYS.values():
            self.trace.elect(0, [0], partition=partition)
            self.trace.hw(0, 0, hw, partition=partition)

    def send(self, process: int, outcome: str, *mops: Mop) -> History:
        """One send operation: its values in order; ``outcome`` is ok, info or fail."""
        for key, value, _ in mops:
            self.trace.send(str(value), producer=process, partition=KEYS[key])
        for key, value, offset in mops:
            if outcome == "ok" and offset is not None:
                self.trace.ack(str(value), offset, producer=process, partition=KEYS[key])
            elif outcome == "fail":
                self.trace.emit("produce_error", node=f"producer-{process}", actor="producer",
                                topic="t", partition=KEYS[key], value=str(value),
                                producer=process, error="REQUEST_TIMED_OUT")
        return self

    def poll(self, process: int, reads: dict[str, list[tuple[int, Any]]]) -> History:
        """One poll: for each key, the (offset, value) pairs it returned, in order."""
        for key, pairs in reads.items():
            for offset, value in pairs:
                self.trace.consume(offset, str(value), hw=self.hw, consumer=f"p{process}",
                                   partition=KEYS[key])
        return self

    def assign(self, process: int, keys: list[str], protocol: str = "assign") -> History:
        self.trace.assignment(sorted(KEYS[k] for k in keys), consumer=f"p{process}",
                              protocol=protocol)
        return self

    def anomalies(self) -> dict[str, int]:
        """isrlab's verdict: the anomalies found, with their counts (zeros left out)."""
        found = check_events(iter(self.trace.events)).anomalies
        return {name: n for name, n in found.items() if n}
