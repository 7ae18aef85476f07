"""``Analysis.families``: each anomaly family is collected once, and the table is built from
what was collected (``bench/spark.py --profile`` times the families one by one and then
builds the table; before, the table collected every family a second time).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tracebuild import catalogue

from spark_analysis import analyses as A
from spark_analysis.load import load_traces
from traces.checker import check_file

pytestmark = pytest.mark.spark


def test_the_table_is_built_from_the_families_collected_without_another_job(
        spark: SparkSession, tmp_path: Path) -> None:
    trace = catalogue()["lost_acks_all"].write(tmp_path / "lost.jsonl")
    loaded = load_traces(spark, [str(trace)])
    sc = spark.sparkContext

    def jobs(group: str, analysis: A.Analysis) -> tuple[list[Any], int]:
        sc.setJobGroup(group, "isrlab test")
        try:
            table = analysis.table().collect()
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        return table, len(sc.statusTracker().getJobIdsForGroup(group))

    fresh, kept = A.Analysis(loaded), A.Analysis(loaded)
    try:
        started: list[str] = []
        families = list(kept.families(on_start=started.append))
        # two at a time (side_by_side): the hook fires once per builder, in whichever order
        # the threads take them, and the rows come in the builders' order, the six small
        # families of ``side`` (one statement) each on its own
        assert list(kept.builders()) == ["record", "order", "log_divergence", "side", "quorum"]
        assert [name for name, _ in families] == [
            "record", "order", "log_divergence", "no_convergence", "isr_churn",
            "under_min_isr", "lost_committed_offset", "outside_assignment", "possible_loss",
            "quorum"]
        assert sorted(started) == sorted(kept.builders())
        table, after = jobs("isrlab-table-after-families", kept)
        assert list(kept.families(on_start=started.append)) == families  # kept,
        assert len(started) == len(kept.builders())  # not collected again
        cold_table, cold = jobs("isrlab-table-cold", fresh)
    finally:
        for analysis in (fresh, kept):
            analysis.unpersist()
        loaded.unpersist()
    # the table of a fresh analysis collects every family; after ``families``, none: only
    # the small jobs of building the table itself (the same in both) remain
    assert after < len(kept.builders()) <= cold - after
    assert sorted(map(tuple, table)) == sorted(map(tuple, cold_table))
    rows = sorted((r["anomaly"], r["n"]) for r in table if r["n"])
    assert rows == sorted((f[3], f[4]) for _, fam in families for f in fam if f[4])
    assert all(r["trace"] == str(trace) for r in table)
    # the families' counts are the checker's (the agreement tests hold every family so)
    expected = {k: v for k, v in check_file(trace).anomalies.items() if v}
    assert expected["lost_acked_write"] > 0
    got = {r["anomaly"]: r["n"] for r in table if r["n"]}
    assert got["lost_acked_write"] == expected["lost_acked_write"]


def test_the_final_source_is_collected_once_when_two_families_ask_at_once(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``record`` and ``no_convergence`` read the final source; each asks for it in its own
    thread (the other families do not wait for it), and it is collected once."""
    import threading
    import time

    trace = catalogue()["lost_acks_all"].write(tmp_path / "lost.jsonl")
    loaded = load_traces(spark, [str(trace)])
    built: list[int] = []
    real = A.final_source

    def slow_final_source(side: Any) -> Any:
        built.append(1)
        time.sleep(0.5)  # both threads are inside ``source`` before the first one is done
        return real(side)

    monkeypatch.setattr(A, "final_source", slow_final_source)
    analysis = A.Analysis(loaded)
    try:
        got: list[Any] = []
        threads = [threading.Thread(target=lambda: got.append(analysis.source()))
                   for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert built == [1] and len(got) == 2 and got[0] is got[1]
        assert analysis.builders() and built == [1]  # building the builders collects nothing
    finally:
        analysis.unpersist()
        loaded.unpersist()


def _events_plan(df: Any) -> tuple[int, list[str]]:
    """How many times the plan of ``df`` scans the native scan's cache (the events), and the
    shuffles in it, leaving out what is broadcast (the small side tables) and what is inside
    a cache."""
    scans = 0
    shuffles: list[str] = []

    def walk(node: Any) -> None:
        nonlocal scans
        name = str(node.getClass().getSimpleName())
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name == "BroadcastExchangeExec":
            return
        if name == "InMemoryTableScanExec":
            output = node.relation().output()
            names = {str(output.apply(i).name()) for i in range(output.size())}
            scans += "_kind" in names
            return
        if name == "ShuffleExchangeExec":
            shuffles.append(str(node.toString()).splitlines()[0])
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(df._jdf.queryExecution().executedPlan())  # noqa: SLF001 - py4j's plan
    return scans, shuffles


def test_the_record_and_order_passes_scan_the_cached_events_once_per_branch_without_a_shuffle(
        spark: SparkSession, tmp_path: Path) -> None:
    """Each pass reads the cache once per branch of its plan, every row keeping its own
    kind's columns (a union of one filtered scan per kind read the cache three times in the
    record pass: 4.9 against 2.2 CPU s on 10M events): the order pass once, the record pass
    twice — its acks and consumes for the offset-level aggregate, its sends straight into the
    per-value one (a send has no offset, so at the offset level it met only the value's
    other sends: half of that aggregate's groups). Nothing above a scan is shuffled: every
    aggregate and window is keyed by a superset of the cache's partitioning, and the small
    tables are broadcast."""
    trace = catalogue()["lost_acks_all"].write(tmp_path / "lost.jsonl")
    loaded = load_traces(spark, [str(trace)])
    analysis = A.Analysis(loaded)
    try:
        record = A.record_verdicts(loaded, analysis.source())
        order = A.order_findings(loaded)
        assert _events_plan(record) == (2, [])
        assert _events_plan(order) == (1, [])
    finally:
        analysis.unpersist()
        loaded.unpersist()


def test_building_a_family_takes_a_handful_of_jvm_calls_not_thousands(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each family is one SQL statement over temporary views of the loaded rows
    (``analyses._query``): building its DataFrame is a few Py4J calls — the statement, a view
    per DataFrame it reads and the view's drop — where the DataFrame API made one or more per
    column, function and operator (5,004 for the record family, 3,017 for the order family,
    about 28,000 for a whole analysis of ``make demo``'s trace; each 0.6–1.4 ms here).

    Py4J's release of a Java object whose Python proxy was collected (the ``m``/``d``
    command, sent from the proxy's finalizer) is not counted: which build a garbage
    collection falls in depends on what ran before in the process, and one cycle's release
    of an earlier test's proxies made this count 264 (CI, 2026-11-29)."""
    import gc

    import py4j.java_gateway  # type: ignore[import-untyped]
    from py4j.protocol import MEMORY_COMMAND_NAME  # type: ignore[import-untyped]

    trace = catalogue()["lost_acks_all"].write(tmp_path / "lost.jsonl")
    loaded = load_traces(spark, [str(trace)])
    analysis = A.Analysis(loaded)
    calls = [0]
    send = py4j.java_gateway.GatewayClient.send_command

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls[0] += not str(args[0]).startswith(MEMORY_COMMAND_NAME)
        return send(self, *args, **kwargs)

    try:
        # what the families share is computed once, before (collected or persisted)
        analysis.source(), analysis.findings(), analysis.divergence()
        gc.collect()
        monkeypatch.setattr(py4j.java_gateway.GatewayClient, "send_command", counted)
        per_family = {}
        for name, build in analysis.builders().items():
            before = calls[0]
            build()
            per_family[name] = calls[0] - before
        monkeypatch.undo()
    finally:
        analysis.unpersist()
        loaded.unpersist()
    # the quorum family (``spark_analysis.quorum``) first asks which traces have a
    # controller quorum: a query collected while it is built
    assert max(n for name, n in per_family.items() if name != "quorum") <= 30, per_family


def test_an_analysis_leaves_no_temporary_view_behind(spark: SparkSession,
                                                       tmp_path: Path) -> None:
    """The statements' views (PySpark's formatter names them ``_pyspark_<uuid>``) are dropped
    once each statement is analysed: a long session (a notebook, ``campaign --spark``) does
    not collect them."""
    def views() -> set[str]:
        return {t.name for t in spark.catalog.listTables() if t.isTemporary}

    before = views()
    trace = catalogue()["lost_acks_all"].write(tmp_path / "lost.jsonl")
    loaded = load_traces(spark, [str(trace)])
    analysis = A.Analysis(loaded)
    try:
        for _ in analysis.families():
            pass
        for view in analysis.views().values():
            view.collect()
    finally:
        analysis.unpersist()
        loaded.unpersist()
    assert views() == before


def test_the_six_side_families_in_one_statement_give_each_familys_own_rows(
        spark: SparkSession, tmp_path: Path) -> None:
    """``side_families`` is the six small families of ``side`` as one ``UNION ALL`` (one
    Catalyst planning and one set of jobs instead of six): split by its ``family`` column,
    each family's rows are those its own statement gives, in the same order."""
    from spark_analysis.side_families import SIDE_FAMILIES, _side_family_selects
    from spark_analysis.statements import _query

    traces = [str(t.write(tmp_path / f"{name}.jsonl")) for name, t in catalogue().items()]
    loaded = load_traces(spark, traces)
    analysis = A.Analysis(loaded)
    try:
        source = analysis.source()
        together = [tuple(r) for r in A.side_families(loaded, source).collect()]
        alone = [[tuple(r) for r in _query(spark, ctes, select, side=loaded.side,
                                           traces=loaded.traces, source=source).collect()]
                 for ctes, select in _side_family_selects()]
    finally:
        analysis.unpersist()
        loaded.unpersist()
    assert len(alone) == len(SIDE_FAMILIES)
    for i, rows in enumerate(alone):
        assert [r[1:] for r in together if r[0] == i] == rows, SIDE_FAMILIES[i]
    assert all(alone), [f for f, rows in zip(SIDE_FAMILIES, alone, strict=True) if not rows]
