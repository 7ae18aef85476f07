"""The ``isrlab run`` door: one scenario, one seed, one trace, and its verdict.

``isrlab run SCENARIO [--seed N] [--set KEY=VALUE]... [--out TRACE] [--json]
[--clock virtual|real] [--trace-messages]``. ``--json`` prints exactly one JSON object on
stdout and nothing else. Exit codes:

* **0** the run met its ``[expect]``; **1** it did not.
* **2** bad input, one line on stderr: the scenario (not a regular file — a FIFO, a device,
  a socket, a folder —, bad TOML, a field out of range, a ``--set`` with a line break, a
  topic name Kafka refuses, a decommission with nowhere to move replicas...), or an
  output that cannot be written: ``--out`` is the scenario file, is not a regular file
  (``/dev/null``, ``/dev/full``, a folder), is being written by another isrlab command
  now, or the write failed (a full disk). The trace is written whole under a temporary
  name beside ``--out`` and renamed onto it only once written and checked, so a failure
  leaves nothing half-written and whatever ``--out`` held before untouched.
* **3** INCOMPLETE: the run was interrupted (SIGINT, SIGTERM) or an actor raised; the trace
  keeps what was written, sealed with ``run_end`` status ``aborted`` (or ``error``), no
  verdict is given, and stderr says so in one line. Interrupted before the trace was
  written: nothing is written. (Also when the run's own trace fails to verify: an isrlab
  bug, the trace is kept to look at.)
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from cli.args import Parser, sigterm_interrupts
from emulator.files import FileRefused, replacing
from emulator.scenario import SAFE_NAME, ScenarioError, find, load
from traces.reader import TraceError

#: a run that did not finish (interrupted by SIGINT or SIGTERM, or an actor raised): its
#: trace is kept, sealed with run_end status aborted or error, and no verdict is given
#: (``traces.checker.EXIT_INCOMPLETE``, as ``isrlab check`` says of that trace)
EXIT_INCOMPLETE = 3


def _run(args: argparse.Namespace) -> int:
    """``isrlab run``: 0 met, 1 not met, 2 bad input or an output that cannot be written,
    3 incomplete (interrupted). Ctrl-C or SIGTERM at any moment is exit 3, never a
    traceback (:func:`cli.args.sigterm_interrupts`)."""
    written: list[str] = []
    try:
        with sigterm_interrupts():
            return _run_scenario(args, written)
    except KeyboardInterrupt as exc:
        how = "SIGTERM" if exc.args == ("SIGTERM",) else "SIGINT"
        what = (f"after its trace was written ({written[0]})" if written else
                "before its trace was written: nothing written")
        print(f"isrlab: run interrupted ({how}) {what}; INCOMPLETE, exit {EXIT_INCOMPLETE}",
              file=sys.stderr)
        return EXIT_INCOMPLETE


def _run_scenario(args: argparse.Namespace, written: list[str]) -> int:
    """The run door; ``written`` gets the trace's name once it is in place."""
    from emulator.cluster import run
    try:
        sc = load(args.scenario, args.set or [])
    except ScenarioError as exc:
        print(f"isrlab: {exc}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else sc["seed"]
    if not 0 <= seed <= 2**63 - 1:
        print(f"isrlab: --seed: must be within [0, 2^63-1] (got {seed})", file=sys.stderr)
        return 2
    if args.out is None and not SAFE_NAME.fullmatch(sc["name"]):
        print(f"isrlab: {args.scenario}: name: {sc['name']!r} cannot name a folder under out/ "
              "(letters, digits, '.', '_', '-'; not starting with '.'): give --out",
              file=sys.stderr)
        return 2
    out = args.out or f"out/{sc['name']}/seed-{seed}.jsonl"
    scenario_file = find(args.scenario)
    interrupted: str | None = None
    try:
        # written whole under a temporary name, checked there (what a concurrent writer
        # cannot touch: the output is locked meanwhile), then renamed onto --out; an
        # interrupted run's trace is kept too: it is sealed, with run_end status aborted
        with replacing(out, "--out", [scenario_file]) as part:
            res = run(sc, seed, str(part), clock=args.clock, trace_messages=args.trace_messages)
            interrupted = res.interrupted_by
            try:
                verdict, steps = _judge(str(part), sc)
            except KeyboardInterrupt as exc:
                interrupted = "SIGTERM" if exc.args == ("SIGTERM",) else "SIGINT"
                verdict, steps = None, []
            except TraceError as exc:   # the run's own trace: an isrlab bug, kept to look at
                print(f"isrlab: {out}: the trace this run wrote does not verify ({exc}); "
                      "no verdict", file=sys.stderr)
                verdict, steps = None, []
    except FileRefused as exc:
        print(f"isrlab: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:   # the disk filled up, the folder went away...: nothing kept
        print(f"isrlab: {out}: --out: cannot write the trace: {exc.strerror or exc}; nothing "
              "written", file=sys.stderr)
        return 2
    written.append(out)
    incomplete = (interrupted is not None or res.status in ("aborted", "error")
                  or verdict is None or verdict["incomplete"])
    code = EXIT_INCOMPLETE if incomplete else 0 if verdict and verdict["expect_met"] else 1
    if args.json:
        print(json.dumps({"trace": out, "digest": res.digest, "events": res.events,
                          "status": res.status, "seed": seed, "scenario": sc["name"],
                          "sim_seconds": res.sim_seconds,
                          "wall_seconds": round(res.wall_seconds, 3),
                          "delivered": res.delivered,
                          **({k: v for k, v in verdict.items()
                              if k not in ("incomplete", "counts")}
                             if verdict else {}),
                          "incomplete": incomplete,
                          **({"interrupted": interrupted} if interrupted else {}),
                          **({"error": res.error} if res.error else {})}))
    else:
        if incomplete:
            why = (f"interrupted by {interrupted}" if interrupted else
                   f"status {res.status}" if res.status != "ok" else "no verdict")
            print(f"INCOMPLETE: the run did not finish ({why}), so no verdict")
        elif verdict:
            print(verdict["verdict"]["headline"])
        print(f"run       {sc['name']} seed {seed} (protocol {sc['protocol']}): {res.status}, "
              f"{res.events} events, {res.delivered} messages delivered, "
              f"{res.sim_seconds:.1f} simulated s in {res.wall_seconds:.1f} wall s")
        if verdict:
            print(f"anomalies {verdict['counts']}")
        print(f"trace     {out}\ndigest    {res.digest}")
        if res.error:
            print(f"error     {res.error}")
        for line in steps:
            print(line)
        # a name that cannot be a folder needs the --out it was given to run at all
        print(f"replay with: isrlab run {shlex.quote(args.scenario)} --seed {seed}"
              + "".join(f" --set {shlex.quote(s)}" for s in (args.set or []))
              + ("" if SAFE_NAME.fullmatch(sc["name"]) else f" --out {shlex.quote(out)}"))
    if interrupted:
        sys.stdout.flush()
        print(f"isrlab: run interrupted ({interrupted}) at {res.sim_seconds:.1f} simulated s: "
              f"{out} keeps what was written (run_end status aborted); INCOMPLETE, exit "
              f"{EXIT_INCOMPLETE}", file=sys.stderr)
    return code


def _judge(trace: str, sc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The checker's verdict on the run's own trace (the temporary file, before it is
    renamed), and the reassignment and topic lines to print."""
    from traces.checker import check_file
    from traces.show import reassignment_steps, topic_changes

    result = check_file(trace)
    verdict: dict[str, Any] = {"anomalies": result.anomalies, "expect_met": result.expect_met,
                               "forbidden_found": result.forbidden_found,
                               "missing_expected": result.missing_expected,
                               "incomplete": result.incomplete,
                               "verdict": result.verdict().to_json_dict(),
                               "counts": result.counts_text()}
    steps: list[str] = []
    for kinds, title, empty, lines in (
            (("reassign", "cancel_reassign", "decommission"), "reassignments", " none",
             reassignment_steps),
            (("create_topic", "add_partitions"), "topics", " unchanged", topic_changes)):
        if any(f["fault"] in kinds for f in sc["faults"]["plan"]) or any(
                k in kinds for k in sc["faults"]["nemesis"]):
            found = lines(trace) + (_rejected_decommissions(trace) if title == "reassignments"
                                    else [])
            steps.append(title + ("" if found else empty))
            steps += [f"  {line}" for line in found]
    return verdict, steps


def _rejected_decommissions(trace: str) -> list[str]:
    """A decommission refused for want of brokers, one line each (emulator.cluster)."""
    from traces.reader import iter_events

    out = []
    with iter_events(trace) as stream:
        for ev in stream:
            if ev.get("event") == "decommission" and ev.get("phase") == "rejected":
                out.append(f"{ev['ts_us'] / 1e6:9.3f} s  decommission of broker-{ev['broker']} "
                           f"rejected ({ev.get('error')}): nowhere to move "
                           f"{', '.join(map(str, ev.get('partitions') or []))} (brokers "
                           f"available: {ev.get('available')})")
    return out


def main(argv: list[str]) -> int:
    """``isrlab run``: see the module's note for the exit codes."""
    parser = Parser(prog="isrlab run", description="Run one scenario with one seed.")
    parser.add_argument("scenario", help="a TOML file or the name of a catalog entry")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--set", action="append", metavar="KEY=VALUE")
    parser.add_argument("--out", help="trace path (.jsonl or .jsonl.gz)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--clock", choices=("virtual", "real"), default="virtual")
    parser.add_argument("--trace-messages", action="store_true",
                        help="also trace every message sent and received (msg_send, "
                             "msg_recv)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    return _run(args)
