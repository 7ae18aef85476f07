"""The ``isrlab campaign`` door: one scenario over a range of seeds (``faults.campaign``).

``isrlab campaign SCENARIO --seeds A:B [--jobs N] [--out DIR] [--set K=V]... [--keep-all]
[--swarm] [--shrink [N]] [--check-determinism F] [--spark [MASTER]]``. ``--shrink`` shrinks
the first N failing seeds (5 without N) into ``traces/seed-S.shrunk`` as ``isrlab shrink``
would; the campaign page links each shrunk schedule. Exit codes: 0 no forbidden anomaly,
1 some (or nondeterminism, or a worker died), 2 bad input (one line), 130/143 interrupted
(SIGINT/SIGTERM; re-run to resume). ``--spark`` is checked here, before anything runs, as
``analyze --master`` is, and the driver is handed the way to start the session.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from faults.campaign import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    SHOW_FAILURES,
    CampaignConfig,
    CampaignError,
    parse_seeds,
    run_campaign,
)


def start_spark(master: str) -> Any:
    """A Spark session for the campaign's seeds on ``master``."""
    from spark_analysis.session import QUICK_JVM_OPTIONS, build_session

    # a local JVM only schedules tasks: the quick JIT and GC (with a code cache sized for it)
    conf = ({"spark.driver.extraJavaOptions": QUICK_JVM_OPTIONS}
            if master.startswith("local") else {})
    return build_session(master, app_name="isrlab-campaign", conf=conf)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> Any:  # argparse's signature returns NoReturn
        raise CampaignError(message)


def _fraction(text: str) -> float:
    try:
        f = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction, got {text!r}") from None
    if not 0 < f <= 1:
        raise argparse.ArgumentTypeError(f"must be within (0, 1], got {text}")
    return f


def _parser() -> _Parser:
    p = _Parser(prog="isrlab campaign",
                description="Run one scenario over a range of seeds on every core.")
    p.add_argument("scenario", help="a TOML file or the name of a catalog entry")
    p.add_argument("--seeds", required=True, help="A:B, both included")
    p.add_argument("--jobs", type=int, default=0,
                   help="worker processes (default, or 0: all cores)")
    p.add_argument("--out", help="campaign directory (default: out/campaigns/NAME-DIGEST)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="scenario override, as for isrlab run")
    p.add_argument("--keep-all", action="store_true", help="keep every trace, not only failing")
    p.add_argument("--check-determinism", type=_fraction, default=0.0, metavar="F",
                   help="re-run a fraction F of the seeds in fresh processes, compare digests")
    p.add_argument("--spark", nargs="?", const="local[*]", metavar="MASTER",
                   help="run the seeds as Spark tasks (default master: local[*])")
    p.add_argument("--swarm", action="store_true",
                   help="swarm testing: each seed uses its own subset of the nemesis kinds")
    p.add_argument("--shrink", nargs="?", type=int, const=SHOW_FAILURES, default=0,
                   metavar="N",
                   help="then shrink the first N failing seeds' fault plans (isrlab shrink; "
                        f"default N: {SHOW_FAILURES}) beside their traces")
    return p


def config_from_args(argv: Sequence[str]) -> CampaignConfig:
    args = _parser().parse_args(list(argv))
    if args.jobs < 0:
        raise CampaignError(f"--jobs: must be >= 1, or 0 for all cores; got {args.jobs}")
    if args.shrink < 0:
        raise CampaignError(f"--shrink: must be >= 1, got {args.shrink}")
    overrides = list(args.set)
    if args.swarm:
        overrides.append("faults.swarm=true")
    if args.spark is not None:
        from spark_analysis.session import master_problem
        why = master_problem(args.spark)
        if why:   # its words name --master, analyze's flag for the same thing
            raise CampaignError(why.replace("--master", "--spark", 1))
    return CampaignConfig(scenario=args.scenario, seeds=parse_seeds(args.seeds),
                          overrides=overrides, jobs=args.jobs, out=args.out,
                          keep_all=args.keep_all, check_determinism=args.check_determinism,
                          spark=args.spark, spark_session=start_spark, shrink=args.shrink)


def main(argv: Sequence[str]) -> int:
    """``isrlab campaign``: 0 no forbidden anomaly, 1 some (or nondeterminism), 2 bad input,
    130 interrupted."""
    try:
        cfg = config_from_args(argv)
        return run_campaign(cfg).code
    except CampaignError as exc:
        print(f"isrlab campaign: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # a second Ctrl-C
        print("isrlab campaign: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
