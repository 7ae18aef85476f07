"""``docs/notebook.ipynb`` — the notebook API's example (issue 22, item 5) — executes top to
bottom on ``make demo``'s trace (``isrlab run default``) in a real Jupyter kernel (nbclient,
the project's interpreter), and its cells show what they claim: the checker's verdict, the
explanation, the pandas rows, the Spark views, and an imported excerpt whose per-record
anomalies are null."""

from __future__ import annotations

import sys
from pathlib import Path

import nbclient
import nbformat
import pytest

from cli.main import main as isrlab
from spark_analysis.session import QUICK_JVM_OPTIONS

pytestmark = pytest.mark.spark
NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "notebook.ipynb"


def _text(cell: nbformat.NotebookNode) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text") or o.get("data", {}).get("text/plain", ""))
    return "".join(out)


def test_the_example_notebook_runs_top_to_bottom_on_the_demo_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "trace.jsonl"
    assert isrlab(["run", "default", "--out", str(trace)]) == 0       # make demo's first step
    monkeypatch.setenv("ISRLAB_TRACE", str(trace))
    monkeypatch.setenv("ISRLAB_WORK", str(tmp_path))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    # the kernel's own JVM starts as the test JVM does (C1 only, serial GC, 2 GiB), the
    # notebook's code left as it is: when PYSPARK_SUBMIT_ARGS names the master, isrlab's
    # session takes spark-submit's settings as they are (a spark-defaults.conf would not do:
    # the local profile's own driver options override it)
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", (
        f'--master local[2] --driver-memory 2g --driver-java-options "{QUICK_JVM_OPTIONS}" '
        "--conf spark.ui.enabled=false --conf spark.sql.shuffle.partitions=4 pyspark-shell"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(c.get("outputs") for c in nb.cells if c.cell_type == "code"), \
        "commit the notebook without outputs"
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.get("outputs", []) if o["output_type"] == "error"]
    shown = "\n".join(_text(c) for c in code)
    assert "default seed 1 status ok | expect met: True" in shown
    assert "SAFE: no write lost, no safety anomaly" in shown   # the verdict in words
    assert "hw_regression_replica" in shown            # the demo's expected anomaly, explained
    assert "isr_churn_per_minute" in shown and "anomalies_per_trace" in shown
    assert "records parsed into" in shown
    assert (tmp_path / "imported.jsonl").is_file()
