"""The code's shape (issue 23): the HTML report is a package of its own, and no module-level
import circle joins the project's modules."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("emulator", "actors", "faults", "traces", "spark_analysis", "report")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports when it is imported (module level only: a lazy
    import inside a function is not run then)."""
    out: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for n in names:
            while n and n not in known:
                n = n.rpartition(".")[0]
            if n:
                out.add(n)
    return out


def test_no_module_level_import_circle() -> None:
    files = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    known = {_module(p) for p in files}
    graph = {_module(p): _imports(p, known) - {_module(p)} for p in files}
    # a package's __init__ is imported before its modules: an edge to it is an edge to them
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                raise AssertionError("import circle: " + " -> ".join(
                    stack[stack.index(n):] + [n]))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_report_is_its_own_package_and_needs_no_spark() -> None:
    assert not list((ROOT / "spark_analysis").glob("report*.py"))
    for p in (ROOT / "report").glob("*.py"):
        text = p.read_text()
        assert "pyspark" not in text and "spark_analysis" not in text, p.name
