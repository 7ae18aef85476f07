"""The ``isrlab`` command line: every door in this package, one module each.

The layers below (``actors`` → the runtime in ``emulator`` → ``faults`` → ``traces``,
``spark_analysis``, ``report``) are libraries; a door parses its flags, calls them, prints,
and turns what happened into the exit code. Exit codes everywhere: 0 the command succeeded
(a run met its ``[expect]``), 1 it did not, 2 bad input (one line on stderr naming the
file, the line where known, and the field), 3 incomplete; each door's module says its own.

``DOORS`` names each door's module; it is the one place that lists them.
"""

from __future__ import annotations

import importlib
import os
import sys

from cli.args import Parser
from emulator.scenario import catalog

#: Every door: the module whose ``main(argv) -> int`` answers it, and its one-line help.
DOORS: dict[str, tuple[str, str]] = {
    "run": ("cli.run", "run one scenario with one seed: isrlab run SCENARIO [--seed N] "
            "[--set KEY=VALUE]... [--out TRACE] [--json]"),
    "check": ("cli.check", "check one trace fast: isrlab check TRACE [--json]"),
    "explain": ("cli.explain", "why each anomaly happened: isrlab explain TRACE "
                "[--anomaly KIND] [--record TOPIC-P@OFFSET] [--json]"),
    "import": ("cli.import_logs", "Kafka broker logs as a trace: isrlab import LOG... "
               "--out TRACE [--tz ZONE] [--broker ID] [--cluster NAME]"),
    "analyze": ("cli.analyze",
                "Spark analytics: isrlab analyze PATH... [--master URL] [--out DIR] [--json]"),
    "campaign": ("cli.campaign",
                 "fault campaign: isrlab campaign SCENARIO --seeds A:B [--jobs N] [--out DIR] "
                 "[--keep-all] [--swarm] [--shrink [N]] [--check-determinism F] "
                 "[--spark [MASTER]]"),
    "shrink": ("cli.shrink", "shrink a failing run: isrlab shrink TRACE [--out DIR] "
               "[--budget N] [--anomaly NAME]"),
    "explore": ("cli.explore",
                "bounded exhaustive exploration: isrlab explore SCENARIO [--max-faults K] "
                "[--depth N] [--strategy bfs|dfs|pct] [--budget 600s|5000] [--out DIR] [--json]"),
    "compare": ("cli.compare", "one fault schedule under every era and bug: isrlab compare "
                "SCENARIO [--eras all|E,..] [--bugs own|all|none|B,..] [--seeds A:B] [--json]"),
    "replay": ("cli.replay", "re-run a trace and compare: isrlab replay TRACE [--out NEW]"),
    "show": ("cli.show", "read a trace as a timeline: isrlab show TRACE [filters]"),
    "regress": ("cli.regress", "the regression suite: isrlab regress [--record]"),
    "report": ("cli.report", "HTML report: isrlab report PATH -o report.html"),
}


def _scenarios(argv: list[str]) -> int:
    parser = Parser(prog="isrlab scenarios", description="List the scenario catalog.")
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
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
    if argv and argv[0] in DOORS:
        module = importlib.import_module(DOORS[argv[0]][0])
        return int(module.main(argv[1:]))
    if argv and argv[0] == "scenarios":
        return _scenarios(argv[1:])
    parser = Parser(prog="isrlab", description="isrlab: Kafka's partition replication under "
                    "faults, emulated deterministically")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name, (_module, help_text) in DOORS.items():
        sub.add_parser(name, help=help_text)
    sub.add_parser("scenarios", help="list the scenario catalog")
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if exc.code in (0, None) else 2
    return 2   # not reached: every command is a door above


if __name__ == "__main__":
    sys.exit(main())
