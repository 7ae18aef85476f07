"""The ``isrlab`` command line (DESIGN section 1).

Exit codes everywhere: 0 the run met its ``[expect]`` (or the command succeeded), 1 it did
not, 2 bad input (one line on stderr naming the file, the line where known, and the
field). ``--json`` prints exactly one JSON object on stdout and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from emulator.args import Parser
from emulator.scenario import SAFE_NAME, ScenarioError, catalog, find, load


def _run(args: argparse.Namespace) -> int:
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
    if scenario_file.exists() and Path(out).exists() and Path(out).samefile(scenario_file):
        print(f"isrlab: {out}: --out: is the scenario file itself; refusing to overwrite it",
              file=sys.stderr)
        return 2
    try:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "ab"):
            pass
    except OSError as exc:
        print(f"isrlab: {out}: --out: cannot write: {exc.strerror}", file=sys.stderr)
        return 2
    res = run(sc, seed, out, clock=args.clock, trace_messages=args.trace_messages)
    verdict: dict[str, Any] = {}
    code = 0 if res.status == "ok" else 1
    try:
        from traces.checker import check_file
        result = check_file(out)
        verdict = {"anomalies": result.anomalies, "expect_met": result.expect_met,
                   "forbidden_found": result.forbidden_found,
                   "missing_expected": result.missing_expected}
        if not result.expect_met:
            code = 1
    except ImportError:
        pass
    if args.json:
        print(json.dumps({"trace": out, "digest": res.digest, "events": res.events,
                          "status": res.status, "seed": seed, "scenario": sc["name"],
                          "sim_seconds": res.sim_seconds,
                          "wall_seconds": round(res.wall_seconds, 3),
                          "delivered": res.delivered, **verdict,
                          **({"error": res.error} if res.error else {})}))
    else:
        print(f"{sc['name']} seed {seed} (protocol {sc['protocol']}): {res.status}, "
              f"{res.events} events, {res.delivered} messages delivered, "
              f"{res.sim_seconds:.1f} simulated s in {res.wall_seconds:.1f} wall s")
        print(f"trace  {out}\ndigest {res.digest}")
        if res.error:
            print(f"error  {res.error}")
        from traces.show import reassignment_steps, topic_changes
        for kinds, title, empty, lines in (
                (("reassign", "cancel_reassign", "decommission"), "reassignments", " none",
                 reassignment_steps),
                (("create_topic", "add_partitions"), "topics", " unchanged", topic_changes)):
            if any(f["fault"] in kinds for f in sc["faults"]["plan"]) or any(
                    k in kinds for k in sc["faults"]["nemesis"]):
                steps = lines(out)
                print(title + ("" if steps else empty))
                for line in steps:
                    print(f"  {line}")
        if verdict:
            found = {k: v for k, v in verdict["anomalies"].items() if v}
            print("anomalies " + (", ".join(f"{k}={v}" for k, v in sorted(found.items()))
                                  or "none"))
            print("expect   " + ("met" if verdict["expect_met"] else
                                 f"NOT met (forbidden found: {verdict['forbidden_found']}, "
                                 f"expected missing: {verdict['missing_expected']})"))
        # a name that cannot be a folder needs the --out it was given to run at all
        print(f"replay with: isrlab run {shlex.quote(args.scenario)} --seed {seed}"
              + "".join(f" --set {shlex.quote(s)}" for s in (args.set or []))
              + ("" if SAFE_NAME.fullmatch(sc["name"]) else f" --out {shlex.quote(out)}"))
    return code


#: Subcommands implemented in their own modules, each with ``main(argv) -> int``.
DELEGATED: dict[str, tuple[str, str]] = {
    "check": ("traces.checker", "check one trace fast: isrlab check TRACE [--json]"),
    "explain": ("traces.explain", "why each anomaly happened: isrlab explain TRACE "
                "[--anomaly KIND] [--record TOPIC-P@OFFSET] [--json]"),
    "import": ("traces.logs.importer", "Kafka broker logs as a trace: isrlab import LOG... "
               "--out TRACE [--tz ZONE] [--broker ID] [--cluster NAME]"),
    "analyze": ("spark_analysis.cli",
                "Spark analytics: isrlab analyze PATH... [--master URL] [--out DIR] [--json]"),
    "campaign": ("faults.campaign",
                 "fault campaign: isrlab campaign SCENARIO --seeds A:B [--jobs N] [--out DIR] "
                 "[--keep-all] [--swarm] [--check-determinism F] [--spark [MASTER]]"),
    "shrink": ("faults.shrink_cli", "shrink a failing run: isrlab shrink TRACE [--out DIR] "
               "[--budget N] [--anomaly NAME]"),
    "explore": ("faults.explore_cli",
                "bounded exhaustive exploration: isrlab explore SCENARIO [--max-faults K] "
                "[--depth N] [--strategy bfs|dfs|pct] [--budget 600s|5000] [--out DIR] [--json]"),
    "compare": ("faults.compare", "one fault schedule under every era and bug: isrlab compare "
                "SCENARIO [--eras all|E,..] [--bugs own|all|none|B,..] [--seeds A:B] [--json]"),
    "replay": ("traces.replay", "re-run a trace and compare: isrlab replay TRACE [--out NEW]"),
    "show": ("traces.show", "read a trace as a timeline: isrlab show TRACE [filters]"),
    "regress": ("traces.regress", "the regression suite: isrlab regress [--record]"),
    "report": ("report.cli", "HTML report: isrlab report PATH -o report.html"),
}


def _scenarios(args: argparse.Namespace) -> int:
    for name, desc in catalog():
        print(f"{name:32} {desc}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command; a reader that goes away (``isrlab check T | head``) ends it quietly."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # the documented way (Python's signal docs): stdout is gone, so point it at
        # /dev/null, or the interpreter's final flush raises again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Spark's local Python workers must run this interpreter (the one with isrlab and its
    # dependencies); on a cluster, set PYSPARK_PYTHON to the executors' Python yourself.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if argv and argv[0] in DELEGATED:
        import importlib
        module = importlib.import_module(DELEGATED[argv[0]][0])
        return int(module.main(argv[1:]))
    parser = Parser(prog="isrlab", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run one scenario with one seed")
    p.add_argument("scenario", help="a TOML file or the name of a catalog entry")
    p.add_argument("--seed", type=int)
    p.add_argument("--set", action="append", metavar="KEY=VALUE")
    p.add_argument("--out", help="trace path (.jsonl or .jsonl.gz)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--clock", choices=("virtual", "real"), default="virtual")
    p.add_argument("--trace-messages", action="store_true",
                   help="also trace every message sent and received (msg_send, msg_recv)")
    p.set_defaults(fn=_run)
    for name, (_module, help_text) in DELEGATED.items():
        sub.add_parser(name, help=help_text)
    s = sub.add_parser("scenarios", help="list the scenario catalog")
    s.set_defaults(fn=_scenarios)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
