"""``isrlab analyze`` of ``make demo``'s trace against a bare Spark read of it (issue 51).

    python bench/analyze.py [--rounds 3] [--trace PATH] [--json]

The trace is ``make demo``'s (``isrlab run default``, written to ``out/bench-analyze/`` and
reused). Each round runs, each in a fresh Python process (a new JVM: start-up included,
as a user waits for it), one after the other:

* ``floor``: a fresh local session (``build_session()``, the profile a local ``isrlab``
  session has when it knows nothing of its input) reading the trace with
  ``spark.read.json(trace).count()`` — what any Spark job over this file costs at least;
* ``analyze``: ``isrlab analyze TRACE --out DIR`` (``cli.analyze.main``, in-process in the
  fresh interpreter, the same code as the command).

For each: the wall seconds from starting the process to its end (the interpreter's start,
the imports, the JVM's start and stop included), and the CPU seconds of the process and of
the driver JVM with everything below it (Spark's Python workers), read from ``/proc`` just
before the JVM stops, and the Spark jobs and SQL executions the session ran (a temporary
view counts as an execution) (a shell's ``time`` sees only Python: the JVM is not its waited-for
child). Rounds alternate floor / analyze, so a machine whose speed wanders (this shared VM:
see ``bench/spark.py``) slows both alike; the medians and the ratio of the wall medians
are printed last. Issue 51's bar: the ratio at most 2.0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OUT = ROOT / "out" / "bench-analyze"
#: ``make demo``'s trace: ``isrlab run default`` (the Makefile's demo target)
DEMO_SCENARIO = "default"
#: Issue 51's bar: ``isrlab analyze`` within this many times the floor's wall time.
TARGET_RATIO = 2.0


def archive_state() -> str:
    """Whether ``analyze`` maps the driver JVM's class archive (``make demo`` makes it;
    ``ISRLAB_CLASS_ARCHIVE=off`` measures without it). The floor never does."""
    from spark_analysis.class_archive import USE_ENV, archive_path, checked
    from spark_analysis.session import QUICK_JVM_OPTIONS

    if os.environ.get(USE_ENV) == "off":
        return f"off ({USE_ENV}=off)"
    path = archive_path(QUICK_JVM_OPTIONS)
    if path is None or not checked(path):
        return "none (python -m cli.class_archive TRACE, or make demo, makes it)"
    return f"mapped ({path})"


def demo_trace() -> Path:
    """``make demo``'s trace, made once (the emulator is deterministic: the same bytes)."""
    path = OUT / "trace.jsonl"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "cli", "run", DEMO_SCENARIO, "--out", str(path)],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return path


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and every live process below it (``bench/spark.py``'s)."""
    from bench.spark import tree_cpu
    return tree_cpu(pid)


def one(kind: str, trace: str) -> dict[str, Any]:
    """One measurement in this process (run as ``--one KIND``): the command's exit and the
    CPU seconds of this process and of the driver JVM's tree, read before the JVM stops."""
    from pyspark import SparkContext
    code = 0
    if kind == "floor":
        from spark_analysis.session import build_session
        build_session().read.json(trace).count()
    else:
        import contextlib
        import io

        from cli import analyze
        out = tempfile.mkdtemp(prefix="isrlab-bench-analyze-")
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                code = analyze.main([trace, "--out", out])
        finally:
            shutil.rmtree(out, ignore_errors=True)
    sc = SparkContext._active_spark_context  # noqa: SLF001 - the driver JVM's process
    jvm = _tree_cpu(sc._gateway.proc.pid) if sc is not None and sc._gateway else 0.0  # noqa: SLF001
    me = resource.getrusage(resource.RUSAGE_SELF)
    jobs = executions = None
    # what the session ran: its Spark jobs, and its SQL executions (each one planned)
    if sc is not None and sc._jvm is not None:  # noqa: SLF001
        jobs = len(sc.statusTracker().getJobIdsForGroup(None))
        session = sc._jvm.org.apache.spark.sql.SparkSession.active()  # noqa: SLF001
        executions = int(session.sharedState().statusStore().executionsCount())
    return {"kind": kind, "exit": code, "cpu": jvm + me.ru_utime + me.ru_stime, "jobs": jobs,
            "executions": executions}


def measure(kind: str, trace: str) -> dict[str, Any]:
    """``one(kind)`` in a fresh interpreter, with its wall time seen from here."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--one", kind, "--trace", trace],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"bench/analyze.py: {kind} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    if result["exit"] != 0:
        raise SystemExit(f"bench/analyze.py: isrlab analyze exited {result['exit']}")
    return {**result, "wall": wall}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--trace", default=None, help="default: make demo's trace")
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    p.add_argument("--one", choices=("floor", "analyze"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    trace = str(Path(args.trace).resolve()) if args.trace else str(demo_trace())
    if args.one:
        print(json.dumps(one(args.one, trace)), flush=True)
        return 0
    print(f"trace {trace} ({os.path.getsize(trace) / 1e6:.1f} MB), {args.rounds} rounds, "
          f"each run a fresh process; the driver's class archive: {archive_state()}",
          flush=True)
    runs: dict[str, list[dict[str, Any]]] = {"floor": [], "analyze": []}
    for r in range(args.rounds):
        for kind in ("floor", "analyze"):
            m = measure(kind, trace)
            runs[kind].append(m)
            print(f"round {r + 1}  {kind:8s} {m['wall']:6.1f} s wall  {m['cpu']:6.1f} CPU s  "
                  f"{m['jobs']} jobs, {m['executions']} SQL executions", flush=True)
    med = {k: {"wall": statistics.median(m["wall"] for m in v),
               "cpu": statistics.median(m["cpu"] for m in v)} for k, v in runs.items()}
    ratio = med["analyze"]["wall"] / med["floor"]["wall"]
    cpu_ratio = med["analyze"]["cpu"] / med["floor"]["cpu"]
    for k in ("floor", "analyze"):
        print(f"median   {k:8s} {med[k]['wall']:6.1f} s wall  {med[k]['cpu']:6.1f} CPU s")
    verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
    print(f"ratio analyze/floor: {ratio:.2f} wall ({verdict} the {TARGET_RATIO} bar), "
          f"{cpu_ratio:.2f} CPU")
    if args.json:
        print(json.dumps({"trace": trace, "runs": runs, "median": med, "ratio_wall": ratio,
                          "ratio_cpu": cpu_ratio}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
