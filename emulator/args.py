"""Command-line parsing for every ``isrlab`` command: argparse, with bad flags as bad input.

argparse answers a usage error with the whole usage block and then the error: several lines
on stderr. isrlab's contract for bad input is one line naming what is wrong, and exit 2
(DESIGN, "bad input"); so ``Parser.error`` writes ``PROG: MESSAGE`` alone — argparse's
message names the flag and the value — and leaves the usage to ``-h``. Sub-commands'
parsers (``add_subparsers``) are of the same class.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (-h for usage)\n")
