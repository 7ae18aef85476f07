"""``isrlab analyze`` says each trace's verdict in the same words as ``run``, ``check`` and
``report`` (issue 50, point 2): from Spark's counts, per partition, and the trace's own
scenario, for every recorded catalog trace of the corpus."""

from __future__ import annotations

import pytest
from conftest import Corpus

from cli.analyze import _verdicts
from traces.checker import check_file

pytestmark = pytest.mark.spark


def test_analyze_verdicts_equal_the_checkers_on_the_catalog(corpus: Corpus) -> None:
    catalog = {t for t, k in corpus.kind.items() if k in ("catalog", "recorded")}
    per_trace = [r.asDict() for r in corpus.wide.collect() if r["trace"] in catalog]
    partitions: dict[str, dict[str, dict[str, int]]] = {}
    for r in corpus.table.collect():
        if r["trace"] in catalog:
            part = partitions.setdefault(r["trace"], {}).setdefault(
                f"{r['topic']}-{r['partition']}", {})
            part[r["anomaly"]] = part.get(r["anomaly"], 0) + int(r["n"] or 0)
    verdicts = _verdicts(per_trace, partitions)
    assert len(verdicts) == len(catalog) >= 30
    words = set()
    for trace, got in verdicts.items():
        want = check_file(trace).verdict()
        assert got.headline == want.headline, trace
        words.add(got.word)
    assert {"LOST", "SAFE"} <= words
