"""The README's stated counts are the real ones (issue 50, point 6): when a count drifts —
a test added, a Kafka test method ported — this fails until the README says it again."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _number(pattern: str) -> list[int]:
    return [int(m.replace(",", "")) for m in re.findall(pattern, README)]


def test_the_conformance_count_is_the_manifests_total() -> None:
    manifest = (ROOT / "tests" / "conformance" / "MANIFEST.md").read_text()
    total = int(re.search(r"\| \*\*total\*\* \| \*\*(\d+)\*\* \|", manifest).group(1))  # type: ignore[union-attr]
    stated = _number(r"— ([\d,]+) Kafka test methods")
    assert stated == [total], f"README says {stated}, MANIFEST.md counts {total}"


def test_the_test_count_is_what_pytest_collects() -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-p",
                           "no:xdist", "-p", "no:cacheprovider"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    m = re.search(r"(\d+) tests? collected", proc.stdout)
    assert m, proc.stdout[-2000:] + proc.stderr[-2000:]
    collected = int(m.group(1))
    stated = _number(r"make test +# the whole test suite: ([\d,]+) tests")
    assert stated == [collected], f"README says {stated}, pytest collects {collected}"


def test_the_explore_example_ends_as_explore_ends(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The README's second ``isrlab explore`` example (S1's variant under 0.11, dfs over the
    whole bounds) ends with the very line explore prints: the count of distinct states moves
    whenever a protocol rule does, and the README must move with it."""
    from cli.explore import main

    block = re.search(r"\$ isrlab explore (s1-kip101-hw-truncation --set 'protocol=\"0\.11\"' "
                      r"--strategy dfs)\n\.\.\.\n(no anomaly [^\n]+)\n", README)
    assert block, "the README's explore example is not where this test looks for it"
    argv = [*shlex.split(block.group(1)), "--out", str(tmp_path / "explore")]
    assert main(argv) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] == block.group(2)


def test_the_explain_example_is_what_explain_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's S1 ``isrlab explain`` block is explain's output on the recorded S1 trace,
    line for line: a rule or a message change shows here first."""
    from cli.explain import main

    m = re.search(r"\(`isrlab explain (tests/regressions/s1-kip101-hw-truncation\.jsonl\.gz "
                  r"--anomaly lost_acked_write)`\):\n\n```\n(.*?)\n```", README, re.S)
    assert m, "the README's explain example is not where this test looks for it"
    main(shlex.split(m.group(1)))
    printed = capsys.readouterr().out.splitlines()
    stated = m.group(2).splitlines()
    assert printed[:len(stated)] == stated
