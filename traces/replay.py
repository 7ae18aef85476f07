"""``isrlab replay TRACE [--out NEW]``: re-run a recorded trace and compare it line by line.

Design note
-----------
A run is a function of (resolved scenario, seed, code version) (docs/determinism.md), and the
trace header (``run_start``) carries the first two in full: the resolved scenario (protocol
era included) and the seed. The fault plan is *not* an input: it is regenerated from the
seed by the nemesis, and the header's ``fault_plan`` must equal the regenerated one, which is
checked (and named when it is the difference).

Steps, each failing in its own way:

1. **Verify** the recorded trace with :func:`traces.reader.iter_events`, draining it before
   anything runs: a tampered, truncated, reordered, foreign-schema or non-trace file is
   refused with the reader's :class:`TraceError` (exit 2), naming the first bad line.
2. **Rebuild** the run from the header: the scenario goes through
   :func:`emulator.scenario.resolve` again (a header that no longer validates is bad input;
   one that gains defaults added since it was recorded is replayed with a warning). A trace
   from another isrlab version replays with a warning naming both versions.
3. **Re-run** with :func:`emulator.cluster.run` into ``--out`` or a temporary file (same
   compression as the recorded trace), deleted afterwards.
4. **Compare** both files as raw lines, streaming (constant memory, a few lines of context
   kept in a deque), so a 100 MB trace costs one pass. The first line that differs is the
   divergence: its ``seq`` (= 0-based line index), the recorded and the replayed line, the
   members that differ, and the lines before it. Across isrlab versions the version stamp
   in ``run_start`` and the ``sha256`` of ``run_end`` (which covers ``run_start``) are the
   only differences allowed.

Exit codes: 0 identical, 1 diverged, 2 bad input, one line on stderr (``isrlab:
<TraceError>``; a flag out of range, e.g. ``--context`` negative or above
``MAX_CONTEXT``; an ``--out`` that is the trace itself, is not a regular file —
``/dev/null``, ``/dev/full``, a folder —, is being written by another isrlab command now,
or whose write failed, e.g. a full disk), 3 INCOMPLETE: the replay was interrupted
(SIGINT, SIGTERM), so no comparison is claimed. ``--out`` is written whole under a
temporary name beside it and renamed onto it at the end (an interrupted replay's trace is
kept too, sealed with ``run_end`` status ``aborted``): a failure leaves nothing
half-written and whatever ``--out`` held before untouched (:func:`emulator.files.replacing`).
:func:`replay_trace` is the programmatic entry point (used by ``traces.regress``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any, Final

import orjson

from emulator.files import input_file, replacing
from traces.integrity import unseal
from traces.reader import Event, TraceError, is_gzip, iter_events, open_bytes
from traces.writer import ISRLAB_VERSION

__all__ = [
    "Divergence",
    "ReplayResult",
    "first_divergence",
    "format_result",
    "raw_lines",
    "replay_trace",
    "verify_trace",
]

DEFAULT_CONTEXT: Final = 3
#: the most identical lines ``--context`` shows before a divergence (they are kept in memory)
MAX_CONTEXT: Final = 10_000
#: exit code of a replay that was interrupted (as ``isrlab check`` says of such a trace)
EXIT_INCOMPLETE: Final = 3
#: Printed lines are cut to this many characters unless ``--full``.
LINE_WIDTH: Final = 600
#: Members that may differ between versions (``run_start`` / ``run_end`` only).
_VERSION_MEMBERS: Final = frozenset({"isrlab_version", "sha256", "crc"})


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first line where the recorded and the replayed trace differ."""

    seq: int  #: 0-based line index (= the ``seq`` member of both lines)
    recorded: bytes | None  #: None: the recorded trace ended before this line
    replayed: bytes | None  #: None: the replay ended before this line
    context: list[tuple[int, bytes]]  #: (seq, line) of the identical lines before it
    differences: list[str]  #: ``member: recorded → replayed``, most useful first


@dataclass(slots=True)
class ReplayResult:
    trace: str
    replayed_trace: str | None  #: the new trace when kept (``--out``), else None
    recorded_version: str
    recorded_digest: str
    replayed_digest: str
    lines: int  #: lines compared (identical up to the divergence)
    divergence: Divergence | None
    plan_matches: bool  #: the header's fault_plan equals the one regenerated from the seed
    warnings: list[str] = field(default_factory=list)
    #: "raw": byte for byte; "events": one side traces messages and the other does not, so
    #: the model events are compared without their seq and crc (``model_lines``)
    mode: str = "raw"
    #: the replay's own run status: "aborted" when SIGINT or SIGTERM stopped it
    replay_status: str = "ok"

    @property
    def identical(self) -> bool:
        return self.divergence is None


# --- reading ---------------------------------------------------------------------------------


def verify_trace(path: str) -> tuple[Event, Event | None, str]:
    """Verify a whole trace (streaming); return (run_start, run_end, content digest).

    Raises :class:`TraceError` naming the first bad line.
    """
    stream = iter_events(path)
    with stream:
        for _ in stream:
            pass
    assert stream.header is not None and stream.digest is not None
    return stream.header, stream.footer, stream.digest


def raw_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """The lines of a trace file as stored (decompressed), without newlines.

    No verification: call it on a file :func:`verify_trace` accepted or that this process
    just wrote.
    """
    with open_bytes(path) as fh:
        for line in fh:
            yield line[:-1] if line.endswith(b"\n") else line


# --- comparing -------------------------------------------------------------------------------


#: message-tracing lines (emulator.msgtrace.MESSAGE_EVENTS): no part of the model's story
_MESSAGE_EVENTS: Final = (b'"event":"msg_send"', b'"event":"msg_recv"')


def model_lines(path: str | os.PathLike[str]) -> Iterator[bytes]:
    """A trace's lines without its message lines, each without ``seq`` and ``crc`` (and
    ``run_start``'s ``trace_messages``, ``run_end``'s ``events`` and ``sha256``, which
    count or cover them): what a run with message tracing must share with one without."""
    for line in raw_lines(path):
        if any(m in line for m in _MESSAGE_EVENTS):
            continue
        ev = _parse(line)
        if ev is None:
            yield line
            continue
        ev.pop("seq", None)
        if ev.get("event") == "run_start":
            ev.pop("trace_messages", None)
        elif ev.get("event") == "run_end":
            ev.pop("events", None)
            ev.pop("sha256", None)
        yield orjson.dumps(ev)


def _parse(line: bytes) -> dict[str, Any] | None:
    body = unseal(line)
    try:
        obj = orjson.loads(body if body is not None else line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    obj.pop("crc", None)
    return obj


def _same_but_version(a: bytes, b: bytes) -> bool:
    """True when two run_start (or run_end) lines differ only in version-bound members."""
    pa, pb = _parse(a), _parse(b)
    if pa is None or pb is None or pa.get("event") not in ("run_start", "run_end"):
        return False
    for key in _VERSION_MEMBERS:
        pa.pop(key, None)
        pb.pop(key, None)
    return pa == pb


def _short(value: Any, width: int = 80) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= width else text[: width - 1] + "…"


def member_differences(a: Any, b: Any, prefix: str = "", limit: int = 8) -> list[str]:
    """``path: a → b`` for the members where two JSON values differ (depth first)."""
    out: list[str] = []

    def walk(x: Any, y: Any, path: str) -> None:
        if len(out) >= limit or x == y:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for key in list(x) + [k for k in y if k not in x]:
                sub = f"{path}.{key}" if path else str(key)
                if key not in y:
                    out.append(f"{sub}: {_short(x[key])} → (absent)")
                elif key not in x:
                    out.append(f"{sub}: (absent) → {_short(y[key])}")
                else:
                    walk(x[key], y[key], sub)
                if len(out) >= limit:
                    return
            return
        if (isinstance(x, list) and isinstance(y, list) and len(x) == len(y)
                and any(isinstance(v, (dict, list)) for v in x)):
            for i, (u, v) in enumerate(zip(x, y, strict=True)):
                walk(u, v, f"{path}[{i}]")
            return
        out.append(f"{path or '(line)'}: {_short(x)} → {_short(y)}")

    walk(a, b, prefix)
    return out


def first_divergence(recorded: Iterator[bytes], replayed: Iterator[bytes], *,
                     context: int = DEFAULT_CONTEXT, across_versions: bool = False,
                     ) -> tuple[Divergence | None, int]:
    """Stream two line sequences; return (first divergence or None, lines compared)."""
    before: deque[tuple[int, bytes]] = deque(maxlen=max(context, 1))
    seq = -1
    for seq, (a, b) in enumerate(zip_longest(recorded, replayed)):
        if a == b or (across_versions and a is not None and b is not None
                      and _same_but_version(a, b)):
            if context > 0:
                assert a is not None
                before.append((seq, a))
            continue
        differences: list[str] = []
        if a is not None and b is not None:
            pa, pb = _parse(a), _parse(b)
            if pa is not None and pb is not None:
                if across_versions:
                    for key in ("isrlab_version", "sha256"):
                        pa.pop(key, None)
                        pb.pop(key, None)
                differences = member_differences(pa, pb)
            else:
                differences = ["(a line does not parse)"]
        elif a is None:
            differences = ["the recorded trace ends here; the replay goes on"]
        else:
            differences = ["the replay ends here; the recorded trace goes on"]
        return Divergence(seq, a, b, list(before) if context > 0 else [], differences), seq
    return None, seq + 1


# --- the replay ------------------------------------------------------------------------------


def _header_inputs(path: str, header: Event) -> tuple[dict[str, Any], int, list[str]]:
    """The resolved scenario and seed to re-run, and warnings; TraceError when unusable."""
    from emulator.scenario import ScenarioError, recorded, resolve

    warnings: list[str] = []
    scenario = header.get("scenario")
    seed = header.get("seed")
    if not isinstance(scenario, dict):
        raise TraceError(path, 1, "run_start has no scenario object: cannot replay", "scenario")
    if type(seed) is not int:
        raise TraceError(path, 1, "run_start has no integer seed: cannot replay", "seed")
    protocol = header.get("protocol")
    if protocol != scenario.get("protocol"):
        raise TraceError(path, 1, f"run_start protocol {protocol!r} disagrees with the "
                         f"scenario's protocol {scenario.get('protocol')!r}", "protocol")
    try:
        resolved = resolve(recorded(scenario), f"{path}:1 (run_start scenario)")
    except ScenarioError as exc:
        raise TraceError(path, 1, f"the recorded scenario no longer validates: {exc}",
                         "scenario") from None
    if resolved != scenario:
        changes = member_differences(scenario, resolved, limit=4)
        warnings.append("the recorded scenario resolves differently today (defaults added or "
                        "changed since it was recorded): " + "; ".join(changes))
    return resolved, seed, warnings


def replay_trace(path: str | os.PathLike[str], out: str | os.PathLike[str] | None = None, *,
                 context: int = DEFAULT_CONTEXT, trace_messages: bool = False) -> ReplayResult:
    """Verify, re-run and compare one trace. Raises TraceError on bad input.

    A trace recorded with message tracing is replayed with it. ``trace_messages`` adds it
    to a replay of a trace without: the two then share every model event (compared without
    ``seq`` and ``crc``, :func:`model_lines`), and the replay has the messages too."""
    from emulator.cluster import run

    trace = os.fspath(path)
    header, footer, recorded_digest = verify_trace(trace)
    version = str(header["isrlab_version"])
    scenario, seed, warnings = _header_inputs(trace, header)
    across_versions = version != ISRLAB_VERSION
    if across_versions:
        warnings.insert(0, f"{trace} was recorded by isrlab {version}; this is isrlab "
                        f"{ISRLAB_VERSION}: a divergence may come from the version change")
    status = footer.get("status") if footer is not None else None
    if status not in (None, "ok", "anomalies"):
        warnings.append(f"the recorded run ended with status {status!r}; the replay runs "
                        "to the end")

    with contextlib.ExitStack() as stack:
        if out is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="isrlab-replay-"))
            suffix = ".jsonl.gz" if is_gzip(trace) else ".jsonl"
            new = str(Path(tmp) / f"replay{suffix}")
        else:
            new = os.fspath(out)
            Path(new).parent.mkdir(parents=True, exist_ok=True)
        recorded_messages = header.get("trace_messages") is True
        with_messages = trace_messages or recorded_messages
        result = run(scenario, seed, new, trace_messages=with_messages)
        new_header = next(raw_lines(new), b"")
        parsed = _parse(new_header) or {}
        plan_matches = parsed.get("fault_plan") == header.get("fault_plan")
        mode = "raw" if with_messages == recorded_messages else "events"
        read = raw_lines if mode == "raw" else model_lines
        divergence, lines = first_divergence(read(trace), read(new),
                                             context=context, across_versions=across_versions)
    return ReplayResult(
        trace=trace, replayed_trace=None if out is None else new, recorded_version=version,
        recorded_digest=recorded_digest, replayed_digest=result.digest, lines=lines,
        divergence=divergence, plan_matches=plan_matches, warnings=warnings, mode=mode,
        replay_status=result.status)


# --- output ----------------------------------------------------------------------------------


def _show(line: bytes | None, width: int | None) -> str:
    if line is None:
        return "(end of trace)"
    text = line.decode("utf-8", errors="replace")
    if width is not None and len(text) > width:
        return f"{text[:width]}… (+{len(text) - width} chars)"
    return text


def format_result(res: ReplayResult, *, width: int | None = LINE_WIDTH) -> str:
    """The human report of a replay (stdout)."""
    lines: list[str] = []
    if res.divergence is None and res.mode == "events":
        lines.append(f"identical: {res.trace} replays event for event ({res.lines} events; "
                     "message lines aside, and the seq and crc they shift)")
    elif res.divergence is None:
        lines.append(f"identical: {res.trace} replays byte for byte ({res.lines} lines, "
                     f"digest {res.replayed_digest})")
    else:
        d = res.divergence
        same = (f"replays identically up to seq {d.seq - 1}" if d.seq > 0
                else "differs from its first line")
        where = (f"seq {d.seq} (line {d.seq + 1})" if res.mode == "raw"
                 else f"model event {d.seq} (message lines aside)")
        lines.append(f"DIVERGED: {res.trace} {same}; first divergent event: {where}")
        if d.seq == 0 and not res.plan_matches:
            lines.append("  the fault plan regenerated from the seed differs from the "
                         "recorded fault_plan")
        for seq, raw in d.context:
            lines.append(f"    seq {seq:>8}  {_show(raw, width)}")
        lines.append(f"  - recorded seq {d.seq:>8}  {_show(d.recorded, width)}")
        lines.append(f"  + replayed seq {d.seq:>8}  {_show(d.replayed, width)}")
        if d.differences:
            lines.append("  differs in: " + "; ".join(d.differences))
        lines.append(f"  digest recorded {res.recorded_digest}")
        lines.append(f"  digest replayed {res.replayed_digest}")
    if res.replayed_trace is not None:
        lines.append(f"replayed trace: {res.replayed_trace}")
    return "\n".join(lines)




def _replay(args: argparse.Namespace) -> ReplayResult:
    """Replay ``args.trace``, into ``--out`` written whole (temporary name, then renamed)."""
    if args.out is None:
        return replay_trace(args.trace, None, context=args.context,
                            trace_messages=args.trace_messages)
    input_file(args.trace)   # refused as bad input before --out is even touched
    with replacing(args.out, "--out", [args.trace]) as part:
        res = replay_trace(args.trace, part, context=args.context,
                           trace_messages=args.trace_messages)
    res.replayed_trace = args.out
    return res
