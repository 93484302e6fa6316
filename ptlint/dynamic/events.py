"""Reading Dynamo's own records: graph breaks, recompilations, graphs cut short (`step_unsupported`)
and traced lines, turned into event dicts placed at the innermost user frame.

Used by the worker of `ptlint explain` and by ptlint.testing in the test's own process. torch is
imported only by `listening()`, when a listener is installed. The events:
  break {file, line, function, origin, scope, gb_ids, types, explanation, hints, frames, duplicate,
         skips_frame}
  recompile {file, line, function, origin, scope, resumed_at, guards}
`origin` is {path, line, function} of the installed frame (site-packages, stdlib, torch) where it
really happened, or None when that frame is the user's own; `file`/`line` are then the innermost
user frame that led there ("" / 0 when there is none and no fallback).
"""

from __future__ import annotations

import contextlib
import json
import linecache
import logging
import os
import re
from typing import Any, Callable, Iterator

from ptlint.dynamic.paths import (
    RESUME,
    Frame,
    fold_name,
    frames_in,
    installed_label,
    live_frames,
    locate,
    origin_json,
    scope_of,
)

Sink = Callable[[dict[str, Any]], None]

_ARTIFACTS = ("graph_breaks", "recompiles")
_OUTPUT_GRAPH = "torch._dynamo.output_graph"  # logs "COMPILING GRAPH due to <reason>"
_GB_ID = re.compile(r"/gb/gb(\d{4})\.html")
_SUPPRESSED = re.compile(r"^Graph break \(user stack suppressed[^)]*\) in user code at (?P<file>.+):(?P<line>\d+)$",
                         re.M)
_RECOMPILE = re.compile(r"^Recompiling function (?P<func>\S+) in (?P<file>.+):(?P<line>\d+)$", re.M)
# One failed guard per cache entry: `- 0/1: len(G['history']) == 1   # history.append(...)  # f.py:17 in f`
_GUARD = re.compile(r"^\s*- (?:\d+/\d+: )?(?P<guard>\S.*)$")
_GUARD_COMMENT = re.compile(r"\s+#\s.*$")
_TRACE = re.compile(r"^TRACE starts_line (?P<file>.+):(?P<line>\d+) in ")
# Dynamo's follow-up to a break it could not handle: it gives up on the whole function
_SKIPS_FRAME = "Skipping the function and falling back to eager"


def _block(cut: Frame | None) -> str:
    """The `with` block at f.py:12 / the `try` block at ... / the statement at ...: what Dynamo
    could not resume inside, as its source line shows."""
    if cut is None:
        return "a block"
    source = linecache.getline(cut[0], cut[1]).strip()
    kind = "the `with` block" if source.startswith(("with ", "async with ")) else \
        "the `try` block" if source.startswith("try:") else "the statement"
    return f"{kind} at {installed_label(cut[0])}:{cut[1]}"


def gb_registry(torch: Any) -> dict[str, Any]:
    try:
        with open(os.path.join(os.path.dirname(torch.__file__), "_dynamo", "graph_break_registry.json")) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def guards_of(text: str) -> list[str]:
    """The failed guards of a recompile record, without Dynamo's source comments and without the
    `User stack trace:` lines it interleaves with them."""
    body = text.split("guard failure(s):", 1)[-1]
    out = []
    for line in body.splitlines():
        match = _GUARD.match(line)
        if not match or match.group("guard").startswith(("User stack trace:", "File ")):
            continue
        if line.lstrip().startswith("-   "):  # an indented stack line under `User stack trace:`
            continue
        out.append(_GUARD_COMMENT.sub("", match.group("guard")).strip())
    return out


class DynamoListener(logging.Handler):
    """A logging handler on Dynamo's graph-break, recompile and output-graph loggers."""

    def __init__(self, sink: Sink, is_user: Callable[[str], bool], registry: dict[str, Any],
                 trace_source: bool = False) -> None:
        super().__init__(logging.DEBUG)
        self.sink = sink
        self.is_user = is_user
        self.registry = registry
        self.trace_source = trace_source
        self.fallback: tuple[str, int] | None = None  # where a finding goes without a user frame
        # loggers `listening` detached from their parents: their records at or above the level
        # they had are handed on, so the user still sees Dynamo's own warnings
        self.hand_on: dict[str, int] = {}
        self.traced: dict[str, set[int]] = {}
        self._recent: list[list[Frame]] = []  # the stacks of the last breaks, to name what cut a graph short

    def emit(self, record: logging.LogRecord) -> None:  # noqa: A003 - logging's name
        level = self.hand_on.get(record.name)
        if level is not None and record.levelno >= level:
            parent = logging.getLogger(record.name).parent
            if parent is not None:
                parent.handle(record)
        try:
            name = record.name
            if name.endswith("__graph_breaks"):
                self._break(record)
            elif name.endswith("__recompiles"):
                self._recompile(record.getMessage())
            elif name == _OUTPUT_GRAPH:
                self._compiling(record)
            elif name.endswith("__trace_source") and self.trace_source:
                self._trace(record.getMessage())
        except Exception as exc:  # never let our parsing break the user's run
            self.sink({"event": "note", "message": f"could not read a Dynamo log record: {type(exc).__name__}: {exc}"})

    def take_traced(self) -> dict[str, list[int]]:
        out = {file: sorted(lines) for file, lines in self.traced.items()}
        self.traced = {}
        return out

    # -- records --------------------------------------------------------------------------------

    def _trace(self, text: str) -> None:
        match = _TRACE.match(text)
        if match and self.is_user(match.group("file")):
            self.traced.setdefault(os.path.realpath(match.group("file")), set()).add(int(match.group("line")))

    def _break(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None and not _GB_ID.search(text):
            text += "\n" + str(record.exc_info[1])  # convert_frame's "skip" record keeps the reason there
        ids = [f"GB{number}" for number in _GB_ID.findall(text)]
        types = [self._gb_type(gb) for gb in ids]
        if not ids:  # a record without a registry id: take the reason line
            reason = re.search(r"^Graph Break Reason: (.*)$", text, re.M)
            types = [reason.group(1).strip() if reason else "graph break"]
        explanation = re.search(r"^\s+Explanation: (.*)$", text, re.M)
        hints = [h.strip() for h in re.findall(r"^\s+Hint: (.*)$", text, re.M)]
        suppressed = _SUPPRESSED.search(text)
        if suppressed:  # a repeat printed without its stack: its own line, and the live callers
            frames = live_frames(2) + [(suppressed.group("file"), int(suppressed.group("line")), "")]
        else:
            for marker in ("User code traceback:", "The graph break occurred in the following user code:"):
                if marker in text:
                    frames = frames_in(text.split(marker, 1)[1])
                    break
            else:
                frames = live_frames(2)
        event = self._placed("break", frames)
        event.update(gb_ids=ids, types=types, explanation=explanation.group(1).strip() if explanation else "",
                     hints=hints, duplicate=bool(suppressed), skips_frame=_SKIPS_FRAME in text,
                     frames=[[f[0], f[1]] for f in frames if self.is_user(f[0])])
        self._recent = [*self._recent[-15:], frames]
        self.sink(event)

    def _recompile(self, text: str) -> None:
        match = _RECOMPILE.search(text)
        if not match:
            return
        raw = match.group("func")
        resumed = RESUME.match(raw)
        code_frame = (match.group("file"), int(match.group("line")), raw)
        # the recompiled code's callers are running: they are the user's way into it
        event = self._placed("recompile", live_frames(2) + [code_frame])
        event.update(guards=guards_of(text), resumed_at=int(resumed.group("line")) if resumed else None)
        event["function"] = fold_name(raw)
        self.sink(event)

    def _compiling(self, record: logging.LogRecord) -> None:
        """A graph compiled because Dynamo cannot go on from a break it cannot resume after (inside
        a `with` or `try` block, or in the middle of a statement): `torch._dynamo.explain` counts it
        (`step_unsupported`); Dynamo logs no graph break for it. The break that caused it is the
        latest one inside the function being cut short, possibly deep in another module."""
        reason = record.args[0] if isinstance(record.args, tuple) and record.args else None
        if getattr(reason, "reason", None) != "step_unsupported":
            return
        stack = [(fs.filename, fs.lineno, fs.name) for fs in getattr(reason, "user_stack", None) or []]
        event = self._placed("break", live_frames(2) + stack)
        cut = stack[-1] if stack else None
        function = fold_name(cut[2]) if cut else "the function"
        cause = self._cause(cut)
        event.update(gb_ids=[], types=["Dynamo cannot resume after a graph break (step_unsupported)"],
                     hints=[], duplicate=False, frames=[],
                     explanation=f"{cause} happened inside {_block(cut)}, where Dynamo cannot resume, so the "
                                 f"graph ends there and the rest of `{function}` runs eagerly")
        self.sink(event)

    def _cause(self, cut: Frame | None) -> str:
        """"The graph break at <innermost frame>" of the latest break inside the cut function."""
        for frames in reversed(self._recent):
            inside = cut is None or any(os.path.realpath(f[0]) == os.path.realpath(cut[0])
                                        and fold_name(f[2]) == fold_name(cut[2]) for f in frames)
            innermost = next((f for f in reversed(frames) if f[0] and not f[0].startswith("<")), None)
            if inside and innermost is not None:
                return f"The graph break at {installed_label(innermost[0])}:{innermost[1]} (`{innermost[2]}`)"
        return "A graph break"

    def _placed(self, kind: str, frames: list[Frame]) -> dict[str, Any]:
        location, origin = locate(frames, self.is_user)
        if location is not None:
            file, line, function = location
        else:
            (file, line), function = self.fallback or ("", 0), ""
        return {"event": kind, "file": file, "line": line, "function": fold_name(function),
                "origin": origin_json(origin), "scope": scope_of(frames)}

    def _gb_type(self, gb: str) -> str:
        entries = self.registry.get(gb) or [{}]
        return entries[0].get("Gb_type", gb)


@contextlib.contextmanager
def listening(listener: DynamoListener, trace_source: bool = False) -> Iterator[None]:
    """Turn on Dynamo's graph-break and recompile records (and the output graph's compile reasons)
    for `listener` only, and put back every logger level, `propagate` flag, artifact switch and
    Dynamo's duplicate-break memory as they were, also when the block raises."""
    import torch._dynamo  # noqa: F401 - creates the artifact loggers
    from torch._dynamo import utils as dynamo_utils
    from torch._logging import _internal

    artifacts = _ARTIFACTS + (("trace_source",) if trace_source else ())
    loggers = [logging.getLogger(q) for q in _internal.log_registry.get_artifact_log_qnames()
               if getattr(logging.getLogger(q), "artifact_name", None) in artifacts]
    loggers.append(logging.getLogger(_OUTPUT_GRAPH))
    saved = [(log, log.level, log.propagate) for log in loggers]
    state = _internal.log_state
    added = [name for name in artifacts if not state.is_artifact_enabled(name)]
    checker = dynamo_utils.graph_break_dup_warning_checker
    seen_breaks = checker.set
    try:
        for log in loggers:
            if not log.isEnabledFor(logging.DEBUG):  # off before us: keep our records off the user's stderr
                if log.propagate:
                    listener.hand_on[log.name] = log.getEffectiveLevel()
                log.setLevel(logging.DEBUG)
                log.propagate = False
            log.addHandler(listener)
        for name in added:
            state.enable_artifact(name)  # Dynamo asks for "recompiles" here before it formats a record
        checker.reset()  # a break seen before this block is still reported with its stack inside it
        yield
    finally:
        listener.hand_on = {}
        for log, level, propagate in saved:
            log.removeHandler(listener)
            log.setLevel(level)
            log.propagate = propagate
        for name in added:
            _internal.log_state.artifact_names.discard(name)
        checker.set = seen_breaks
