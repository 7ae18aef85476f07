"""``isrlab explore SCENARIO``: the command around faults/explore.py.

::

    isrlab explore SCENARIO [--set KEY=VALUE]... [--seed N] [--max-faults K] [--depth N]
                   [--max-reorders R] [--horizon-ms H] [--strategy bfs|dfs|pct]
                   [--budget 600s|5000] [--stop-when-found] [--no-cache] [--jobs N]
                   [--out DIR] [--json]

The scenario's ``[explore]`` table gives the bounds and ``set``, the overrides that make the
small variant (two or three brokers, one partition, a few records); flags override both.
For each anomaly found it writes ``DIR/<anomaly>.toml`` — the variant with the witness's
``[explore] choices`` — and ``DIR/<anomaly>.jsonl``, the trace of running that file, which
``isrlab replay`` reproduces byte for byte; and ``DIR/summary.json``. It re-checks each
written trace: a witness that does not reproduce is an error, never a silent success.

``DIR`` (``emulator.files``) must be new, empty or an earlier explore folder (it holds
``summary.json``); any other non-empty folder, and one holding the scenario file, is refused
before the search (exit 2). Each witness file is written whole under a temporary name and
renamed.

Exit codes: 0 nothing found, 1 an anomaly found (its witnesses written), 2 bad input, 3 a
witness that did not reproduce.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from emulator.cluster import run
from emulator.files import replacing, write_bytes, write_text
from emulator.scenario import ScenarioError, load, load_raw
from faults.explore import ERROR_KIND, Summary
from faults.shrink_cli import dumps_toml
from traces.checker import check_file

EXIT_NONE = 0
EXIT_FOUND = 1
EXIT_BAD_INPUT = 2
#: a witness that did not show its anomaly when its scenario file ran again (a bug in
#: isrlab's determinism, never the user's input)
EXIT_UNREPRODUCED = 3
#: the explore folder's marker: the summary, written last
MARKER = "summary.json"
BUDGET = re.compile(r"^(\d+(?:\.\d+)?)(s?)$")


def parse_budget(text: str) -> tuple[int, float]:
    """``600s`` -> (0, 600.0) seconds; ``5000`` -> (5000, 0.0) executions."""
    m = BUDGET.match(text.strip())
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"--budget: {text!r} is neither seconds (600s) nor executions (5000)")
    if m.group(2):
        return 0, float(m.group(1))
    if "." in m.group(1):
        raise ValueError(f"--budget: {text!r}: executions are a whole number")
    return int(m.group(1)), 0.0


def load_variant(scenario: str, sets: Sequence[str], flags: dict[str, Any]) -> dict[str, Any]:
    """The scenario with its ``[explore] set`` overrides, then ``--set``, then the bound
    flags applied; raises ScenarioError."""
    raw, file, _text, _given = load_raw(scenario, list(sets))
    table = raw.get("explore")
    if not isinstance(table, dict):
        raise ScenarioError(file, "explore", "the scenario has no [explore] table (the bounds "
                                             "of a small variant): see docs/explore.md")
    variant = [str(s) for s in table.get("set", [])] if isinstance(table.get("set"), list) else []
    bounds = [f"explore.{k}={v}" for k, v in flags.items() if v is not None]
    return load(scenario, [*variant, *sets, *bounds])


def write_witnesses(sc: dict[str, Any], seed: int, summary: Summary, out: Path) -> list[str]:
    """Each witness as a scenario file and its trace; returns the problems (a witness that
    did not reproduce)."""
    out.mkdir(parents=True, exist_ok=True)
    problems = []
    for kind, w in sorted(summary.witnesses.items()):
        doc = {k: v for k, v in sc.items() if k != "explore"}
        doc["name"] = f"{sc['name']}.explore.{kind}"
        doc["seed"] = seed
        doc["explore"] = {**sc["explore"], "choices": w.choices}
        steps = "; ".join(f"point {c['point']}: {c['label']}" for c in w.choices) or "none"
        text = dumps_toml(doc, f"isrlab explore witness of {kind}: {len(w.choices)} choices "
                               f"({steps})\nreproduce: isrlab run {out / (kind + '.toml')} "
                               f"--out {out / (kind + '.jsonl')}")
        toml_path = out / f"{kind}.toml"
        write_text(toml_path, text, "--out")
        with replacing(out / f"{kind}.jsonl", "--out") as trace:
            res = run(load(str(toml_path)), seed, str(trace))
            shows = res.status == "error" if kind == ERROR_KIND else bool(
                check_file(trace).anomalies.get(kind))
        if not shows:
            problems.append(f"{toml_path}: the witness ran without error" if kind == ERROR_KIND
                            else f"{toml_path}: the witness does not show {kind} when run "
                            "again")
    write_bytes(out / MARKER, orjson.dumps(summary.to_json(), option=orjson.OPT_INDENT_2)
                + b"\n", "--out")
    return problems


def format_summary(sc: dict[str, Any], s: Summary, out: Path | None) -> str:
    rate = s.executions / s.seconds if s.seconds > 0 else 0.0
    srate = s.states / s.seconds if s.seconds > 0 else 0.0
    lines = [
        f"explore {s.scenario}: protocol {sc['protocol']}, strategy {s.strategy}, depth "
        f"{s.depth}, at most {s.max_faults} faults and {s.max_reorders} reorderings, horizon "
        f"{s.horizon_ms:g} ms",
        f"{s.executions} executions ({s.leaves} run to the end, {s.pruned} pruned at a state "
        f"seen before), {s.states} distinct states, {s.points} choice points in "
        f"{s.seconds:.1f} s ({rate:.1f} executions/s, {srate:.0f} states/s)",
    ]
    if s.strategy != "pct":
        lines.append("choice bound covered completely: "
                     + (str(s.bound_choices) if s.bound_choices >= 0 else "none")
                     + (" (the whole space)" if s.complete else ""))
    for kind, w in sorted(s.witnesses.items()):
        steps = "; ".join(f"point {c['point']}: {c['label']}" for c in w.choices)
        where = f" -> {out / (kind + '.toml')}" if out is not None else ""
        lines.append(f"found {kind} with {len(w.choices)} choices ({steps}){where}")
    lines.append(s.statement())
    return "\n".join(lines)
