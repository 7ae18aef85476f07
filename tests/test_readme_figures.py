"""The README's stated counts are the real ones (issue 50, point 6): when a count drifts —
a test added, a Kafka test method ported — this fails until the README says it again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
