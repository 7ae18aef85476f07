"""Command-line parsing for every ``isrlab`` command: argparse, with bad flags as bad input.

argparse answers a usage error with the whole usage block and then the error: several lines
on stderr. isrlab's contract for bad input is one line naming what is wrong, and exit 2
(README.md, *Commands*: "2 bad input"); so ``Parser.error`` writes ``PROG: MESSAGE`` alone —
argparse's message names the flag and the value — and leaves the usage to ``-h``. Sub-commands'
parsers (``add_subparsers``) are of the same class.

:func:`count` is the type of a flag that takes a count (``replay --context N``): an integer
within bounds, so a negative count or one beyond what the field holds
(``--context 99999999999999999999``) is a usage error (one line, exit 2), not an
``OverflowError`` deep inside the command. :func:`sigterm_interrupts` makes SIGTERM end a
command as Ctrl-C does (a ``KeyboardInterrupt``), so a ``finally`` — the removal of a
half-written temporary output — runs for both.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (-h for usage)\n")


def count(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse ``type``: a decimal integer within ``[lo, hi]``; anything else is an
    ``ArgumentTypeError`` argparse reports as one line naming the flag and the value."""
    def parse(text: str) -> int:
        s = text.strip()
        digits = s[1:] if s[:1] in "+-" else s
        # int() would take "1_000" and huge digit strings; a count is plain decimal digits
        if not digits.isascii() or not digits.isdigit():
            raise argparse.ArgumentTypeError(f"expected an integer within [{lo}, {hi}], "
                                             f"got {_cut(text)!r}")
        if len(digits.lstrip("0")) > len(str(max(abs(lo), abs(hi)))):
            raise argparse.ArgumentTypeError(f"must be within [{lo}, {hi}] "
                                             f"(got {_cut(s)})")
        value = int(s)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be within [{lo}, {hi}] (got {value})")
        return value
    parse.__name__ = "count"   # argparse names the type in some messages
    return parse


def _cut(text: str, most: int = 40) -> str:
    """A value as an error line shows it: control characters escaped, a long one cut."""
    shown = text.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= most else f"{shown[:most]}... ({len(text)} characters)"


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """While inside: SIGTERM raises ``KeyboardInterrupt`` as SIGINT does (main thread only,
    and only when SIGTERM still has its default action); restored afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
