"""Progress of long commands (issue 23): tqdm's bar on a terminal, plain lines elsewhere."""

from __future__ import annotations

import io

from emulator.progress import Progress


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr does in one."""

    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_shows_count_rate_eta_and_the_status() -> None:
    out = Terminal()
    bar = Progress(out, 4, "campaign default", "seed")
    for i in range(4):
        bar.advance(1, f"{i} failing (lost_acked_write {i})")
    bar.finish()
    text = out.getvalue()
    assert "campaign default" in text and "4/4" in text and "100%" in text
    assert "seed/s" in text or "s/seed" in text
    assert "3 failing (lost_acked_write 3)" in text
    assert "\r" in text   # redrawn in place


def test_off_a_terminal_plain_lines_and_the_total_learnt_late() -> None:
    out = io.StringIO()
    bar = Progress(out, 0, "compare s1", "run")
    bar.set_total(3)
    for _ in range(3):
        bar.advance(1, "0.10, seed 1")
    bar.finish()
    lines = out.getvalue().splitlines()
    assert lines and all("\r" not in line for line in lines)
    assert lines[-1].startswith("compare s1: 3/3 runs") and lines[-1].endswith("0.10, seed 1")


def test_quiet_writes_nothing() -> None:
    out = Terminal()
    bar = Progress(out, 2, "campaign default", "seed", quiet=True)
    bar.advance(2)
    bar.finish()
    assert out.getvalue() == ""
