"""isrlab from Python — for notebooks: run a scenario, import logs, check, explain, and get
the Spark analyses as DataFrames.

Each function is a thin door to the same code the command line uses (nothing here computes
anything of its own), so a notebook and ``isrlab`` never disagree::

    from spark_analysis import api
    trace = api.run_scenario("s1-kip101-hw-truncation", seed=1, out="s1.jsonl")
    api.check(trace).anomalies["lost_acked_write"]          # the fast checker
    print(api.explain_text(trace))                           # why (isrlab explain)
    df = api.events(trace, ["isr_change", "leader_elected"]) # pandas, for a small trace
    spark = api.spark()                                      # local[*], or api.spark(url)
    views = api.analyses(spark, [trace])                     # Spark DataFrames by name
    views["anomalies_per_trace"].show()

``docs/notebook.ipynb`` runs these top to bottom on ``make demo``'s trace (executed by the
test suite).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
from pyspark.sql import DataFrame, SparkSession

from traces.checker import CheckResult, check_file
from traces.explain import Explanation, explain, format_text
from traces.logs.importer import ImportResult
from traces.logs.importer import import_logs as _import
from traces.reader import iter_events

__all__ = ["analyses", "check", "events", "explain_chains", "explain_text", "import_logs",
           "run_scenario", "spark"]


def run_scenario(scenario: str, seed: int | None = None, *, out: str, sets: Sequence[str] = (),
                 trace_messages: bool = False) -> str:
    """Run a catalog scenario (or a TOML file) with ``--set`` overrides; the trace's path."""
    from emulator.cluster import run
    from emulator.scenario import load

    sc = load(scenario, list(sets))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    run(sc, sc["seed"] if seed is None else seed, out, trace_messages=trace_messages)
    return out


def import_logs(logs: Sequence[str], out: str, **options: Any) -> ImportResult:
    """Kafka broker logs as a trace at ``out`` (``isrlab import``; ``tz``, ``broker``,
    ``cluster`` as its flags); what was read, parsed and skipped, by kind."""
    return _import(list(logs), out, **options)


def check(trace: str) -> CheckResult:
    """The fast checker's verdict (``isrlab check``)."""
    return check_file(trace)


def explain_chains(trace: str, **options: Any) -> Explanation:
    """Every anomaly's causal chain (``isrlab explain``)."""
    return explain(trace, **options)


def explain_text(trace: str, **options: Any) -> str:
    """``isrlab explain``'s text."""
    return format_text(explain(trace, **options))


def events(trace: str, kinds: Iterable[str] | None = None) -> pd.DataFrame:
    """A (small) trace's events as a pandas DataFrame, one row per event, the trace's fields
    as columns (nested values as JSON text); ``kinds`` keeps only those events."""
    wanted = set(kinds) if kinds is not None else None
    rows = []
    with iter_events(trace) as stream:
        for ev in stream:
            if wanted is not None and ev.get("event") not in wanted:
                continue
            rows.append({k: orjson.dumps(v).decode() if isinstance(v, dict | list) else v
                         for k, v in ev.items()})
    return pd.DataFrame(rows)


def spark(master: str | None = None) -> SparkSession:
    """A Spark session as ``isrlab analyze`` builds it (``local[*]`` by default)."""
    from spark_analysis.session import build_session

    return build_session(master)


def analyses(session: SparkSession, paths: Sequence[str]) -> dict[str, DataFrame]:
    """``isrlab analyze``'s views of the traces at ``paths`` (files or folders) as Spark
    DataFrames, by name — ``anomalies_per_trace``, ``anomalies_per_partition``,
    ``hw_regressions``, ``isr_churn_per_minute``, ``partition_health``, ...; plus
    ``events`` and ``side``, the loaded lines themselves."""
    from spark_analysis.analyses import Analysis
    from spark_analysis.load import load_traces

    loaded = load_traces(session, list(paths))
    views = dict(Analysis(loaded).views())
    views["events"] = loaded.named(loaded.events)
    views["side"] = loaded.named(loaded.side)
    return views
