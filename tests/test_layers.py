"""The house's layers (issue 48): imports run one way, from the command line down to the
sans-IO protocol, and never in a circle.

Every import counts — at module level, inside a function, under ``TYPE_CHECKING`` — since
each one is a dependency someone reading or moving the code must follow. A module may
import its own layer or any layer below; a higher one never. The layers, bottom first:

0. ``actors`` — Kafka's protocol as sans-IO state machines.
1. the runtime kernel and the trace format — the scheduler, network, clock, RNG, choice
   points, state digest, message descriptions; the trace's schema, seal, writer and block
   reader; the rule for files. It knows no scenario, no fault and no checker: the cluster
   is handed to it as a protocol, faults as functions.
2. what a run is made of — scenario loading and the fault definitions (what a fault does,
   the nemesis generators).
3. cluster assembly — a scenario's actors wired onto the kernel, its faults applied.
4. reading traces — the reader, the checker, ``explain``, ``show``, ``replay``, the log
   importer.
5. the drivers that run many executions — campaign, shrink, explore, compare, the
   regression suite.
6. analyses and pages — ``spark_analysis``, ``report``.
7. the command line, ``cli``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("actors", "emulator", "faults", "traces", "spark_analysis", "report", "cli")

#: module (or package prefix) -> layer; the longest matching prefix wins
LAYERS: dict[str, int] = {
    "actors": 0,
    "emulator": 1,          # the kernel, unless named below
    "traces.schema": 1, "traces.integrity": 1, "traces.writer": 1, "traces.blocks": 1,
    "emulator.scenario": 2, "faults.plan": 2, "faults.nemesis": 2,
    "emulator.cluster": 3,
    "traces": 4,            # readers and checkers, unless named above or below
    "faults": 5, "traces.regress": 5,
    "spark_analysis": 6, "report": 6,
    "cli": 7,
}


def layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports() -> dict[str, set[str]]:
    """Each module's imports of other modules of the house (``from a import b`` counts as
    ``a.b`` when that is a module, else ``a``)."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known
                           else node.module for a in node.names]
            else:
                continue
            found |= {t for t in targets if t in known and t != name}
        edges[name] = found
    return edges


def test_every_module_of_the_house_has_a_layer() -> None:
    assert all(layer(m) >= 0 for m in modules())


def test_no_module_imports_a_higher_layer() -> None:
    upward = sorted(f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
                    for m, targets in imports().items() for t in targets
                    if layer(t) > layer(m))
    assert upward == []


def test_no_import_circle() -> None:
    edges = imports()
    circles: list[list[str]] = []
    state: dict[str, int] = {}   # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                circles.append(path[path.index(t):] + [t])
            elif t not in state:
                visit(t)
        path.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert [" -> ".join(c) for c in circles] == []


def test_the_report_is_its_own_package_and_needs_no_spark() -> None:
    """Issue 23: the HTML report is a package of its own; it draws without Spark."""
    assert not list((ROOT / "spark_analysis").glob("report*.py"))
    for p in (ROOT / "report").glob("*.py"):
        text = p.read_text(encoding="utf-8")
        assert "pyspark" not in text and "spark_analysis" not in text, p.name


def test_no_module_is_over_a_thousand_lines() -> None:
    """A room over a thousand lines holds more than one concept: split it along its own
    seams (issue 48: replica.py, explain.py and load.py were)."""
    big = sorted(f"{m}: {n} lines" for m, p in modules().items()
                 if (n := len(p.read_text(encoding="utf-8").splitlines())) > 1000)
    assert big == []
