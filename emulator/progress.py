"""Progress of long commands (campaign, compare, analyze, import): a real bar on a terminal,
plain lines otherwise.

On a TTY the bar is tqdm's (count, rate, elapsed and ETA, redrawn in place, sized to the
terminal), with the command's own status — failing seeds by anomaly, the row being run — as
its postfix. Off a TTY (CI logs, a pipe, a file) tqdm's redraws would be noise, so the same
status is written as one plain line every ``PLAIN_EVERY_S`` seconds and at the end, as the
commands always did; ``plain=False`` writes nothing off a terminal (``analyze`` and ``import``,
whose stderr off a terminal carries only their one-line problems, as it always did).
``quiet`` writes nothing. Progress goes to stderr; results to stdout. A unit of ``"B"``
counts bytes (tqdm scales them: kB, MB).
"""

from __future__ import annotations

import time
from typing import Any, Final, TextIO

from tqdm import tqdm

#: off a terminal, a status line at most this often
PLAIN_EVERY_S: Final = 5.0


class Progress:
    """``advance(n, status)`` after each unit of work; ``finish()`` at the end."""

    def __init__(self, stream: TextIO, total: int, label: str, unit: str, *,
                 quiet: bool = False, plain: bool = True) -> None:
        self.stream = stream
        self.total = total
        self.label = label
        self.unit = unit
        self.quiet = quiet or (not plain and not stream.isatty())
        self.done = 0
        self.status = ""
        self.t0 = time.monotonic()
        self.last = 0.0
        self._bar: tqdm[Any] | None = None
        if not self.quiet and stream.isatty():
            self._bar = tqdm(total=total, desc=label, unit=unit, file=stream,
                             dynamic_ncols=True, leave=True, mininterval=0.2,
                             unit_scale=unit == "B", unit_divisor=1024)

    def set_total(self, total: int) -> None:
        """The amount of work, once known."""
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def line(self) -> str:
        """The plain status line (also what a test or a log sees)."""
        elapsed = max(time.monotonic() - self.t0, 1e-9)
        rate = self.done / elapsed
        left = self.total - self.done
        eta = f"{left / rate:.0f} s" if rate > 0 else "?"
        return (f"{self.label}: {self.done}/{self.total} {self.unit}s, {rate:.2f} "
                f"{self.unit}s/s, ETA {eta}" + (f", {self.status}" if self.status else ""))

    def advance(self, n: int = 1, status: str | None = None) -> None:
        self.done += n
        if status is not None:
            self.status = status
        if self._bar is not None:
            self._bar.set_postfix_str(self.status, refresh=False)
            self._bar.update(n)
        else:
            self.tick()

    def tick(self, *, force: bool = False) -> None:
        """Between units of work: off a terminal, a line when one is due."""
        if self.quiet or self._bar is not None:
            return
        now = time.monotonic()
        if force or now - self.last >= PLAIN_EVERY_S:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self.last = now

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(self.status, refresh=True)
            self._bar.close()
        else:
            self.tick(force=True)
