"""``isrlab shrink TRACE``: the smallest fault plan and workload that still fail the same way.

A failing campaign seed typically carries a dozen generated faults of which one or two
matter. This command reads the run's header (``run_start``: the resolved scenario, the seed
and the explicit ``fault_plan`` the nemesis generated), then searches, with
:func:`faults.shrink.shrink` (ddmin + item simplification), for a smaller plan that still
fails; then it simplifies the workload. It writes ``DIR/shrunk.toml`` — a scenario file any
``isrlab run`` loads, carrying the plan explicitly — and ``DIR/shrunk.jsonl``, its trace.

The folder (``emulator.files``). ``DIR`` (default ``TRACE``'s name with ``.shrunk``) must be
new, empty or a shrink folder (it holds ``shrink.json``, written first: the input and the
targets); any other non-empty folder is refused, exit 2, and so is a ``DIR`` that holds the
input trace (``isrlab shrink D/shrunk.jsonl --out D`` would replace its own input). The
candidates' traces go to a scratch folder of their own (``mkdtemp``) removed at the end;
``shrunk.toml`` and ``shrunk.jsonl`` are each written whole under a temporary name and
renamed, so an interrupted shrink leaves the previous ones as they were.

The oracle
----------
A candidate is the header scenario with ``faults.plan = candidate``, ``faults.nemesis = []``
and the same seed. Every candidate goes through the same path the written file will: it is
rendered to TOML, parsed and resolved by ``emulator.scenario.resolve``, so what the oracle
ran is exactly what ``shrunk.toml`` says. It *fails* when the checker finds every *target*
anomaly in its trace. The targets are, by default, the anomalies that made the original run
fail: the forbidden ones it found, else the expected ones it found (shrinking a bug
reproduction); ``--anomaly NAME`` names them instead (e.g. an allowed but interesting
``lost_acked_uncommitted``). The plan's RNG streams are split by name (``RngTree``), so
dropping the nemesis does not disturb the network's or the clients' randomness, and the
original plan replayed as an explicit plan reproduces the original run; the first oracle call
checks that (it fails when the code changed since the trace was recorded).

Simplification, after ddmin: each fault's ``duration_s`` (a quarter, then half), a delay's
``extra_ms`` and a drop's ``rate`` (half); then the workload: the scenario's ``duration_s``
(down to just after the last fault) and each producer's ``rate`` (a tenth, a quarter, half).
Smaller variants are tried first; each accepted one must still fail.

Cost. Every oracle call is a full emulator run. ``heal_s`` is left as recorded: a run ends at
its first converged check anyway, so a shorter bound would only save time on candidates that
do not converge — exactly those whose verdict (``no_convergence``, and the final logs the
write anomalies are judged on) it would change. ddmin's calls are sequential (each depends on
the previous answer), so there is no process pool; ``--budget`` bounds the calls.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TextIO

from emulator.files import (
    FileRefused,
    claim_folder,
    input_file,
    remove_scratch,
    replacing,
    scratch_folder,
    write_text,
)
from faults.shrink import InputDoesNotFail, shrink

__all__ = ["dumps_toml", "shrink_folder", "shrink_trace"]

EXIT_OK: Final = 0
EXIT_FAIL: Final = 1
EXIT_BAD_INPUT: Final = 2
DEFAULT_BUDGET: Final = 200
#: the shrink folder's own record: what was shrunk, for what (the folder's marker)
MARKER: Final = "shrink.json"


class ShrinkInputError(Exception):
    """Bad input: a one-line message (exit 2)."""


# --------------------------------------------------------------------------- TOML out

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a JSON string is a TOML basic string (\\uXXXX escapes)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, dict) for x in v)


def _table(lines: list[str], table: dict[str, Any], path: list[str]) -> None:
    for k, v in table.items():
        if not isinstance(v, dict) and not _is_table_array(v):
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in table.items():
        if isinstance(v, dict):
            lines.append("")
            lines.append("[" + ".".join(_key(p) for p in [*path, k]) + "]")
            _table(lines, v, [*path, k])
    for k, v in table.items():
        if _is_table_array(v):
            for item in v:
                lines.append("")
                lines.append("[[" + ".".join(_key(p) for p in [*path, k]) + "]]")
                _table(lines, item, [*path, k])


def dumps_toml(doc: dict[str, Any], comment: str = "") -> str:
    """A dict of TOML-able values (a resolved scenario) as TOML text."""
    lines = [f"# {c}" if c else "#" for c in comment.splitlines()]
    _table(lines, doc, [])
    return "\n".join(lines).lstrip("\n") + "\n"


# --------------------------------------------------------------------------- candidates


@dataclass
class _Workload:
    duration_s: float
    rates: list[float]


class _Scenario:
    """Builds candidate scenarios from the recorded one and runs the oracle on them."""

    def __init__(self, header: dict[str, Any], targets: list[str], work: Path,
                 progress: Callable[[str], None]) -> None:
        self.base: dict[str, Any] = header["scenario"]
        self.seed: int = int(header["seed"])
        self.targets = targets
        self.work = work
        self.progress = progress
        self.calls = 0

    def raw(self, plan: list[dict[str, Any]], wl: _Workload) -> dict[str, Any]:
        from emulator.scenario import recorded

        raw = recorded(self.base)
        raw["seed"] = self.seed
        raw["duration_s"] = wl.duration_s
        for p, rate in zip(raw["producers"], wl.rates, strict=True):
            p["rate"] = rate
        raw["faults"]["plan"] = [dict(f) for f in plan]
        raw["faults"]["nemesis"] = []
        return raw

    def resolved(self, plan: list[dict[str, Any]], wl: _Workload, comment: str = ""
                 ) -> tuple[str, dict[str, Any]]:
        from emulator.scenario import resolve

        text = dumps_toml(self.raw(plan, wl), comment)
        return text, resolve(tomllib.loads(text), "shrunk.toml", text)

    def run(self, sc: dict[str, Any], out: Path) -> dict[str, int]:
        from emulator.cluster import run
        from traces.checker import check_file

        run(sc, self.seed, str(out))
        return dict(check_file(out).anomalies)

    def fails(self, plan: list[dict[str, Any]], wl: _Workload) -> bool:
        from emulator.scenario import ScenarioError

        self.calls += 1
        try:
            _, sc = self.resolved(plan, wl)
        except ScenarioError as exc:
            # a candidate the loader refuses (a decommission left with nowhere to move
            # its replicas once the add_broker before it was dropped) cannot be run: it is
            # not a smaller failing plan
            self.progress(f"shrink: run {self.calls}: {len(plan)} faults: not a valid "
                          f"scenario ({exc.field}: {exc.message}): passes")
            return False
        anomalies = self.run(sc, self.work / "candidate.jsonl")
        verdict = all(anomalies.get(a, 0) > 0 for a in self.targets)
        self.progress(f"shrink: run {self.calls}: {len(plan)} faults, duration_s "
                      f"{wl.duration_s:g}, rate {'/'.join(f'{r:g}' for r in wl.rates)}: "
                      + ("fails" if verdict else "passes"))
        return verdict


def _simplify(f: dict[str, Any]) -> list[dict[str, Any]]:
    """Simpler variants of one fault, smallest first (well-founded: every value shrinks)."""
    out: list[dict[str, Any]] = []
    dur = float(f.get("duration_s", 0.0) or 0.0)
    for frac in (0.25, 0.5):
        d = round(dur * frac, 2)
        if 0.1 <= d < dur:
            out.append({**f, "duration_s": d})
    if f.get("fault") == "delay" and float(f.get("extra_ms", 0.0)) >= 20:
        out.append({**f, "extra_ms": round(float(f["extra_ms"]) / 2, 1)})
    if f.get("fault") == "drop" and float(f.get("rate", 0.0)) >= 0.05:
        out.append({**f, "rate": round(float(f["rate"]) / 2, 3)})
    return out


def _fault_seconds(plan: Sequence[dict[str, Any]]) -> float:
    return sum(float(f.get("duration_s", 0.0) or 0.0) for f in plan)


# --------------------------------------------------------------------------- the command


@dataclass
class ShrinkOutcome:
    code: int
    toml: Path | None = None
    trace: Path | None = None
    plan: list[dict[str, Any]] | None = None
    targets: list[str] | None = None
    calls: int = 0


def _read_header(trace: Path) -> dict[str, Any]:
    from traces.reader import TraceError, iter_events

    try:
        input_file(trace, "TRACE")
    except FileRefused as exc:
        raise ShrinkInputError(str(exc)) from None
    try:
        with iter_events(trace, verify=False) as events:
            header = next(events)
    except (TraceError, StopIteration) as exc:
        raise ShrinkInputError(f"{trace}: {exc or 'empty trace'}") from None
    except OSError as exc:
        raise ShrinkInputError(f"{trace}: cannot read: {exc.strerror or exc}") from None
    for key in ("scenario", "seed", "fault_plan"):
        if key not in header:
            raise ShrinkInputError(f"{trace}:1: {key}: missing from run_start")
    return header


def _targets(trace: Path, header: dict[str, Any], named: list[str]) -> list[str]:
    from traces.checker import check_file
    from traces.reader import TraceError
    from traces.schema import ANOMALIES

    for name in named:
        if name not in ANOMALIES:
            raise ShrinkInputError(f"--anomaly: unknown anomaly {name!r} "
                                   f"(known: {', '.join(ANOMALIES)})")
    try:
        result = check_file(trace)
    except TraceError as exc:
        raise ShrinkInputError(str(exc)) from None
    found = [a for a, n in result.anomalies.items() if n]
    if named:
        missing = [a for a in named if a not in found]
        if missing:
            raise ShrinkInputError(f"{trace}: --anomaly: {', '.join(missing)} not in this "
                                   f"trace (found: {', '.join(found) or 'none'})")
        return list(named)
    if result.forbidden_found:
        return list(result.forbidden_found)
    expected = [a for a in header["scenario"].get("expect", {}).get("anomalies", [])
                if a in found]
    if expected:
        return expected
    raise ShrinkInputError(f"{trace}: the run does not fail (no forbidden or expected anomaly; "
                           f"found: {', '.join(found) or 'none'}); name one with --anomaly")


def shrink_folder(trace: str | Path) -> Path:
    """Where a seed's shrunk schedule lives: beside its trace, named after it (a trace
    ``seed-7.jsonl.gz`` gives the folder ``seed-7.shrunk``, holding ``shrunk.toml`` and
    ``shrunk.jsonl``): ``isrlab shrink TRACE``'s default ``--out``, where
    ``isrlab campaign --shrink`` puts it and the campaign page finds it."""
    t = Path(trace)
    return t.with_name(t.name.removesuffix(".gz").removesuffix(".jsonl") + ".shrunk")


def shrink_trace(trace: Path, out: Path, *, budget: int = DEFAULT_BUDGET,
                 anomalies: Sequence[str] = (), stdout: TextIO | None = None,
                 stderr: TextIO | None = None) -> ShrinkOutcome:
    """Shrink the run recorded in ``trace``; writes ``out/shrunk.toml`` and its trace."""
    so = stdout or sys.stdout
    err = stderr or sys.stderr
    header = _read_header(trace)
    targets = _targets(trace, header, list(anomalies))
    try:
        claim_folder(out, "--out", MARKER, "a shrink folder", [trace])
        write_text(out / MARKER, json.dumps({"trace": str(trace), "targets": targets},
                                            indent=1) + "\n", inputs=[trace])
        work = scratch_folder(out)
    except FileRefused as exc:
        raise ShrinkInputError(str(exc)) from None
    except OSError as exc:
        raise ShrinkInputError(f"{out}: --out: cannot write: {exc.strerror or exc}") from None
    try:
        return _shrink_into(trace, out, work, header, targets, budget, so, err)
    finally:
        remove_scratch(work)


def _shrink_into(trace: Path, out: Path, work: Path, header: dict[str, Any],
                 targets: list[str], budget: int, so: TextIO, err: TextIO) -> ShrinkOutcome:
    tty = err.isatty()
    last = [0.0]

    def progress(line: str) -> None:
        now = time.monotonic()
        if tty:
            err.write("\r" + line[:110].ljust(110))
        elif now - last[0] >= 5.0:
            err.write(line + "\n")
            last[0] = now
        err.flush()

    cand = _Scenario(header, targets, work, progress)
    plan0: list[dict[str, Any]] = [dict(f) for f in header["fault_plan"]]
    base = cand.base
    wl0 = _Workload(float(base["duration_s"]), [float(p["rate"]) for p in base["producers"]])
    wl = _Workload(wl0.duration_s, list(wl0.rates))
    t0 = time.perf_counter()
    try:
        result = shrink(plan0, lambda c: cand.fails(c, wl), _simplify, budget=budget)
    except InputDoesNotFail:
        if tty:
            err.write("\n")
        err.write(f"isrlab shrink: {trace}: its fault plan, replayed as an explicit plan, no "
                  f"longer shows {', '.join(targets)} (the code changed since the trace was "
                  "recorded?)\n")
        return ShrinkOutcome(EXIT_FAIL, targets=targets, calls=cand.calls)
    plan = result.items
    left = budget - result.stats.calls

    def accept(trial: _Workload) -> bool:
        nonlocal left
        if left <= 0:
            return False
        left -= 1
        return cand.fails(plan, trial)

    last_at = max((float(f["at_s"]) for f in plan), default=0.0)
    for d in sorted({float(math.floor(last_at) + 1), round(wl.duration_s / 2, 1),
                     round(wl.duration_s * 0.75, 1)}):
        if last_at < d < wl.duration_s and d > 0 and accept(_Workload(d, list(wl.rates))):
            wl.duration_s = d
            break
    for i, rate in enumerate(list(wl.rates)):
        for frac in (0.1, 0.25, 0.5):
            r = round(rate * frac, 1)
            if 1.0 <= r < rate:
                rates = [*wl.rates[:i], r, *wl.rates[i + 1:]]
                if accept(_Workload(wl.duration_s, rates)):
                    wl.rates = rates
                    break
    if tty:
        err.write("\n")
    search_s = time.perf_counter() - t0

    # write the scenario file, then run it through the same path `isrlab run FILE` takes
    toml_path = out / "shrunk.toml"
    trace_path = out / "shrunk.jsonl"
    reproduce = f"isrlab run {toml_path} --seed {cand.seed} --out {trace_path}"
    comment = "\n".join([
        f"Shrunk by `isrlab shrink` from {trace}",
        f"(scenario {base.get('name')!r}, seed {cand.seed}, protocol {base.get('protocol')}).",
        f"Kept anomalies: {', '.join(targets)}.",
        f"Faults {len(plan0)} -> {len(plan)}; duration_s {wl0.duration_s:g} -> "
        f"{wl.duration_s:g}; producer rate {_rates(wl0.rates)} -> {_rates(wl.rates)}.",
        f"Reproduce: {reproduce}",
    ])
    text, _ = cand.resolved(plan, wl, comment)
    write_text(toml_path, text, "--out", [trace])
    from emulator.scenario import load

    with replacing(trace_path, "--out", [trace]) as part:
        anomalies_after = cand.run(load(str(toml_path)), part)
    still = all(anomalies_after.get(a, 0) > 0 for a in targets)
    so.write(f"shrunk {trace} (scenario {base.get('name')}, seed {cand.seed}); kept "
             f"{', '.join(targets)}\n")
    so.write(f"  faults       {len(plan0):>6} -> {len(plan)}   (fault-seconds "
             f"{_fault_seconds(plan0):.1f} -> {_fault_seconds(plan):.1f})\n")
    so.write(f"  duration_s   {wl0.duration_s:>6g} -> {wl.duration_s:g}\n")
    so.write(f"  rate         {_rates(wl0.rates):>6} -> {_rates(wl.rates)}\n")
    so.write(f"  {cand.calls} runs in {search_s:.1f} s (budget {budget}"
             + (", exhausted: the plan fails but may not be minimal" if result.stats.exhausted
                or left <= 0 else "") + ")\n")
    for f in plan:
        so.write("  " + ", ".join(f"{k}={f[k]!r}" for k in ("at_s", "fault", "target",
                                                             "duration_s") if k in f) + "\n")
    so.write(f"wrote {toml_path} and {trace_path}\n")
    so.write(f"reproduce: {reproduce}\n")
    if not still:
        err.write(f"isrlab shrink: {toml_path} does not reproduce {', '.join(targets)} when "
                  "run again (a nondeterministic run?)\n")
    return ShrinkOutcome(EXIT_OK if still else EXIT_FAIL, toml_path, trace_path, plan,
                         targets, cand.calls)


def _rates(rates: Sequence[float]) -> str:
    return "/".join(f"{r:g}" for r in rates) or "-"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's signature returns NoReturn
        raise ShrinkInputError(message)
