"""The ``isrlab analyze`` door: ``isrlab analyze PATH... [--master URL] [--out DIR] [--json]
[--cache DIR] [--explain]``, the jobs of ``spark_analysis`` on a session of ``--master``.

Reads any number of traces (files or folders), computes the checker's anomaly counts per trace
with Spark (``analyses.anomaly_table``) plus the campaign views, and prints either readable
tables or, with ``--json``, exactly one JSON object on stdout::

    {"traces": N, "events": E,
     "bad_lines": [{"trace", "line", "problem", "action"}...], "skipped_traces": [trace...],
     "anomalies": {name: total...},
     "per_trace": {trace: {"scenario", "seed", "status", "events", "anomalies"}}}

Anomaly names are the checker's (``traces.schema.ANOMALIES``), every name present, zeros
included; ``under_min_isr`` is in milliseconds. ``--out DIR`` writes one Parquet dataset per
analysis. ``--explain`` adds each trace's causal chains (``spark_analysis.explain``: the
fast path's ``traces.explain`` run in Spark's Python workers) and a table of the rules at
fault across the traces: ``"explain": {"rules": [...], "per_trace": {trace: [chain...]}}``
in JSON, ``chains.parquet`` with ``--out``. Exit codes: 0 done; 2 bad input (no trace
found, or bad lines — each named on stderr as ``file:line: problem (action)``, action being
"line skipped", "trace skipped" or "tail lost"; the analysis of what could be read is still
printed, see ``load``).

Bad input before Spark starts, one line and exit 2: a ``--master`` that is no master URL or
does not answer; an input that is missing, names no trace, or is not a regular file (a FIFO,
a device, a socket: named or found in a folder, refused unopened); an ``--out`` or
``--cache`` that is a file or a device (``/dev/null``, ``/dev/full``), an input, holds an
input, or is a non-empty folder without its marker — ``--out`` takes a new or empty folder
or one with ``analysis.json`` (the marker this command writes: a previous analysis, which is
replaced dataset by dataset), ``--cache`` one with ``.isrlab-cache``; a folder of the user's
is never written into, so replacing a dataset never deletes their files.
While it runs, ``--out`` is held: a second analysis writing the same folder at once is
refused (exit 2). A write to ``--out`` that fails on a full disk is one line, exit 2.
A trace whose line is longer than 64 MiB, starts with a BOM or ends in CR LF is skipped,
named by its line, and the exit is 2: ``isrlab check`` refuses the same files.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Final

import orjson
from pyspark.sql import DataFrame

from cli.args import Parser
from emulator.files import (
    FileRefused,
    claim_folder,
    kind_of,
    remove_stale_scratch,
    replacing,
)
from spark_analysis import analyses as A
from spark_analysis.dataset_out import write_dataset, write_rows
from spark_analysis.load import TraceInputError, claim_cache, expand_paths, load_traces
from spark_analysis.progress import SparkProgress
from spark_analysis.session import java_reason, master_problem, open_session
from spark_analysis.side_by_side import side_by_side
from traces.reader import TraceError, iter_events
from traces.schema import ANOMALIES
from traces.verdict import Verdict, verdict_for


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="isrlab analyze",
                                description="Spark analytics over isrlab traces")
    p.add_argument("paths", nargs="+", metavar="PATH", help="trace files or folders")
    p.add_argument("--master", default=None,
                   help="local[N], spark://..., sc://... (default: local[*] or the environment)")
    p.add_argument("--out", default=None, help="write one Parquet dataset per analysis here")
    p.add_argument("--cache", default=None, help="keep a Parquet copy of parsed events here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--explain", action="store_true",
                   help="also each trace's causal chains (isrlab explain, run by Spark) and "
                        "the rules at fault across the traces")
    p.add_argument("--careful", action="store_true",
                   help="parse every line on its own, also in files whose crcs all match "
                        "(slower; for traces written by another tool)")
    return p


def _table(title: str, rows: list[dict[str, Any]], cols: list[str]) -> str:
    if not rows:
        return f"{title}: none"
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    out = [title, "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    out += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(out)


def _verdicts(per_trace: list[dict[str, Any]],
              partitions: dict[str, dict[str, dict[str, int]]]) -> dict[str, Verdict]:
    """Each trace's verdict in the words every door uses, from Spark's counts and the
    trace's own scenario (its first line), judged as the checker judges it."""
    out: dict[str, Verdict] = {}
    for r in per_trace:
        counts = {a: None if r[a] is None else int(r[a] or 0) for a in ANOMALIES}
        status = r.get("status")
        why = ("no run_end" if status is None else f"status {status}"
               if status in ("aborted", "error") else None)
        out[r["trace"]] = verdict_for(counts, _scenario_of(r["trace"]),
                                      per_partition=partitions.get(r["trace"]),
                                      incomplete=why, imported=bool(r["imported"]))
    return out


def _scenario_of(trace: str) -> dict[str, Any]:
    """The scenario in a local trace's ``run_start``; empty for a remote one or when the
    first line cannot be read (its expectations are then unknown)."""
    if "://" in trace and not trace.startswith("file:"):
        return {}
    path = trace.removeprefix("file://").removeprefix("file:")
    try:
        stream = iter_events(path, verify=False)
        with stream:
            next(stream, None)
            sc = (stream.header or {}).get("scenario")
    except (TraceError, OSError):
        return {}
    return sc if isinstance(sc, dict) else {}


def _check_outputs(args: argparse.Namespace) -> str | None:
    """What is wrong with ``--master``, ``--out`` or ``--cache``, checked before Spark starts
    (an unwritable ``--out`` used to fail after the whole analysis, in pages of Java)."""
    bad_master = master_problem(args.master)
    if bad_master:
        return bad_master
    inputs = [p for p in args.paths if "://" not in p]
    resolved = {Path(p).resolve() for p in inputs}
    for flag, value in (("--out", args.out), ("--cache", args.cache)):
        if value is None or "://" in value:
            continue
        d = Path(value)
        if d.resolve() in resolved:
            return f"{flag} {value}: is one of the inputs; it would be overwritten"
        if d.exists() and not d.is_dir():
            return (f"{flag} {value}: exists and is not a directory (it is "
                    f"{kind_of(d.stat().st_mode)}): give a folder")
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return f"{flag} {value}: cannot write there ({exc.strerror or exc})"
    try:
        if args.out is not None and "://" not in args.out:
            claim_folder(args.out, "--out", OUT_MARKER, "an isrlab analysis folder", inputs)
        if args.cache is not None:
            claim_cache(args.cache, inputs)
        expand_paths(args.paths)   # inputs that are no trace, a FIFO: before Spark starts
    except (FileRefused, TraceInputError) as exc:
        return str(exc)
    return None


def _disk_ok(folder: str) -> bool:
    """Whether a byte can still be written in ``folder`` (a Spark write that failed there
    on a full disk is ``--out``'s problem, one line; any other failure is a defect)."""
    try:
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError:
        return False
    return True


#: the marker of a folder ``--out`` writes into: new, empty, or carrying it (a previous
#: analysis), never a folder of the user's (``emulator.files.claim_folder``)
OUT_MARKER: Final = "analysis.json"


class _WriteFailed(Exception):
    """Writing ``--out`` failed (a full disk): one line."""


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    problem = _check_outputs(args)
    if problem:
        print(f"isrlab analyze: {problem}", file=sys.stderr)
        return 2
    try:
        with _holding_out(args) as finish:
            code = _analyze(args)
            finish(code)
    except FileRefused as exc:   # another analysis writes this --out now
        print(f"isrlab analyze: {exc}", file=sys.stderr)
        return 2
    except _WriteFailed as exc:
        print(f"isrlab analyze: {args.out}: --out: cannot write: {exc}", file=sys.stderr)
        return 2
    return code


@contextlib.contextmanager
def _holding_out(args: argparse.Namespace) -> Iterator[Callable[[int], None]]:
    """While the analysis runs, ``--out``'s marker is held (``emulator.files.replacing``'s
    lock: a second analysis writing the same folder at once is refused) and present (a run
    killed midway leaves a folder the next run may take again). ``finish(code)`` writes the
    marker's final content, renamed into place when the analysis ends."""
    if args.out is None or "://" in args.out:
        yield lambda code: None
        return
    marker = Path(args.out) / OUT_MARKER
    with replacing(marker, "--out") as part:
        record = {"isrlab": "analyze", "inputs": list(args.paths), "complete": False}
        try:
            if not marker.exists():
                marker.write_bytes(orjson.dumps(record) + b"\n")
        except OSError as exc:
            raise _WriteFailed(exc.strerror or str(exc)) from None
        # what a killed analysis of this folder left half-written (its datasets' scratch
        # folders; not the marker's part file, which this run is writing through now)
        remove_stale_scratch(args.out, OUT_MARKER, parts=False)

        def finish(code: int) -> None:
            try:
                part.write_bytes(orjson.dumps({**record, "complete": True, "exit": code})
                                 + b"\n")
            except OSError as exc:
                raise _WriteFailed(exc.strerror or str(exc)) from None

        yield finish


def _input_bytes(paths: list[str]) -> int | None:
    """The bytes of the local files ``paths`` name (a URI's are not known here: None), for
    the session's small-input profile (``session.SMALL_INPUT``)."""
    try:
        files = expand_paths(paths)
        if any("://" in f for f in files):
            return None
        return sum(os.stat(f).st_size for f in files)
    except (TraceInputError, OSError):
        return None


def _analyze(args: argparse.Namespace) -> int:
    spark = open_session(args.master, _input_bytes(args.paths))
    if isinstance(spark, str):
        print(f"isrlab analyze: {spark}", file=sys.stderr)
        return 2
    # on a terminal, a bar of the Spark tasks while the analysis runs (its problems are
    # printed after it, so the bar is not torn by them)
    try:
        with SparkProgress(spark, sys.stderr, "analyze"):
            loaded = load_traces(spark, args.paths, cache_dir=args.cache,
                                 careful=args.careful)
            analysis = A.Analysis(loaded)
            # the top churning replicas as written (a local --out: collected to write them)
            churning_table: Any = None
            if args.out:
                out = args.out.rstrip("/")

                def write(writing: Callable[[], Any]) -> Any:
                    try:   # a dataset of this analysis folder (claimed: --out's marker)
                        return writing()
                    except Exception as exc:
                        if "://" in out or _disk_ok(out):
                            raise
                        raise _WriteFailed(java_reason(exc)) from None

                def path(name: str) -> str:
                    return f"{out}/{name}.parquet"

                # the views whose rows the driver holds are written from them, the others
                # collected as Arrow and written here (a URI's by Spark: dataset_out)
                local = {} if "://" in out else analysis.local_views()
                for name, (rows, schema) in local.items():
                    write(partial(write_rows, rows, schema, path(name)))
                def view(name: str, build: Callable[[], DataFrame]) -> Any:
                    return write_dataset(build(), path(name))   # built in the task's thread

                tasks = [(name, partial(write, partial(view, name, build)))
                         for name, build in analysis.view_builders().items()
                         if name not in local]
                churning_table = dict(side_by_side(spark, tasks)).get("top_churning_replicas")

            per_trace = sorted(analysis.wide_rows(), key=lambda r: r["trace"])
            # traces imported from Kafka's logs (isrlab import) have no records: their per-record
            # anomalies are null in the views (not available, as isrlab check says), never zero
            imported = {r["trace"] for r in per_trace if r["imported"]}
            verdicts = _verdicts(per_trace, analysis.partition_counts())
            explained: dict[str, Any] = {}
            if args.explain:
                from spark_analysis import explain as X
                chain_df = X.chains(spark, [r["trace"] for r in per_trace]).persist()
                if args.out:
                    write(partial(write_dataset, chain_df, path("chains")))
                explained = {
                    "rules": [r.asDict() for r in X.rule_table(chain_df).collect()],
                    "per_trace": {},
                }
                for chain_row in chain_df.orderBy("trace", "anomaly", "topic", "partition",
                                                  "first_offset").collect():
                    row = chain_row.asDict()
                    row["steps"] = orjson.loads(row["steps"])
                    explained["per_trace"].setdefault(row.pop("trace"), []).append(row)
                chain_df.unpersist()
    except TraceInputError as exc:
        print(f"isrlab analyze: {exc}", file=sys.stderr)
        return 2
    for bad in loaded.problems:
        print(f"isrlab analyze: {bad}", file=sys.stderr)
    totals = {a: sum(int(r[a] or 0) for r in per_trace) for a in ANOMALIES}
    n_events = sum(int(r["events"] or 0) for r in per_trace)
    if args.json:
        out = {
            "traces": len(per_trace),
            "events": n_events,
            "bad_lines": [{"trace": b.trace, "line": b.line, "problem": b.problem,
                           "action": b.action} for b in loaded.problems],
            "skipped_traces": loaded.skipped_traces,
            "anomalies": totals,
            "per_trace": {
                r["trace"]: {"scenario": r["scenario"], "seed": r["seed"],
                             "status": r["status"], "events": int(r["events"] or 0),
                             "imported": r["trace"] in imported,
                             "anomalies": {a: None if r[a] is None else int(r[a] or 0)
                                           for a in ANOMALIES},
                             "verdict": verdicts[r["trace"]].to_json_dict()}
                for r in per_trace
            },
        }
        if args.explain:
            out["explain"] = explained
        sys.stdout.write(orjson.dumps(out).decode() + "\n")
    else:
        if len(per_trace) == 1:   # one trace: its verdict first, as run and check say it
            print(verdicts[per_trace[0]["trace"]].headline)
        print(f"{len(per_trace)} traces, {n_events} events, "
              f"{len(loaded.bad_lines)} bad lines skipped, "
              f"{len(loaded.skipped_traces)} traces skipped")
        print(_table("anomalies (total)", [{"anomaly": a, "count": totals[a]} for a in ANOMALIES],
                     ["anomaly", "count"]))
        print()
        short = ["trace", "scenario", "seed", "verdict", *[a for a in ANOMALIES if totals[a]]]
        print(_table("per trace", [{**r, "verdict": verdicts[r["trace"]].word}
                                   for r in per_trace], short))
        # the roll-ups from the per-trace rows collected above (no Spark job); the top
        # churning replicas, read from the side lines, as written with --out (else collected)
        churning = (churning_table.to_pylist() if churning_table is not None else
                    [r.asDict() for r in
                     analysis.view_builders()["top_churning_replicas"]().collect()])
        for knob in A.ROLLUP_KNOBS:
            rows = A.rollup_rows(per_trace, knob)
            print()
            print(_table(f"by {knob}", rows,
                         ["value", "traces", "traces_losing_acked",
                          *[a for a in ANOMALIES if totals[a]]]))
        print()
        print(_table("top churning replicas",
                     churning,
                     ["topic", "partition", "replica", "churns", "traces"]))
        if args.explain:
            print()
            print(_table("why (isrlab explain): rules at fault", explained["rules"],
                         ["anomaly", "rule", "traces", "findings", "example"]))
    analysis.unpersist()
    loaded.unpersist()
    return 2 if loaded.problems else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
