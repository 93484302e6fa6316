"""From the worker's events to findings: PTL450 graph-break, PTL451 recompilation, PTL459
dynamic-target-failed, with the graph-break ids mapped onto the static PTL4xx rules."""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from typing import Any

from ..rule import Finding
from .paths import display_path
from .runner import RunResult

# Graph-break registry ids (torch/_dynamo/graph_break_registry.json) -> the static rule that
# predicts them. A builtin Dynamo cannot trace (GB0059) or skips (GB0007) is PTL401's when it is
# print or warnings.warn.
GB_RULES = {
    "GB0124": "PTL402",  # Tensor.item() without capture_scalar_outputs
    "GB0105": "PTL402",  # Tensor.numpy() without trace_numpy
    "GB0109": "PTL402",  # Tensor.tolist() of a non-integer tensor
    "GB0170": "PTL403",  # data-dependent branching
    "GB0036": "PTL404",  # an operator whose output shape depends on the data
    "GB0007": "PTL405",  # a call Dynamo skips (time.*, C functions)
    "GB0291": "PTL401",  # a logging.Logger method
}
_LOGGING = {"print", "_warnings.warn", "warnings.warn"}  # builtins that are PTL401's, not PTL405's
_BUILTIN = re.compile(r"trace (?:the )?(?:Python )?builtin (?:operator )?`(?P<name>[^`]+?)\.?`")
GB_LOOP = "GB7000"  # a break inside a loop: Dynamo gives up on the whole frame


def related_rule(gb_ids: list[str], explanation: str) -> str | None:
    for gb in gb_ids:
        builtin = _BUILTIN.search(explanation)
        if gb in ("GB0059", "GB0007") and builtin and builtin.group("name") in _LOGGING:
            return "PTL401"
        if gb == "GB0033" and "_local_scalar_dense" in explanation:  # a value read back (.tolist())
            return "PTL402"
        if gb in GB_RULES:
            return GB_RULES[gb]
    return None


@dataclass
class Summary:
    targets: int
    graphs: int
    breaks: int
    recompiles: int
    failed: int
    seconds: float
    device: str | None

    def line(self, command: str) -> str:
        return (f"ptlint {command}: {self.targets} target(s) run, {self.graphs} graph(s), "
                f"{self.breaks} graph break(s), {self.recompiles} recompilation(s), "
                f"{self.failed} failed, {self.seconds:.1f} s" + (f" on {self.device}" if self.device else ""))


def _finding(code: str, name: str, message: str, file: str | None, line: int | None, label: str) -> Finding:
    column = end_column = 1
    if file:
        path, line = display_path(file), max(1, int(line or 1))
        text = linecache.getline(file, line).rstrip()
        if text.strip():  # span the statement's line, from its first character
            column, end_column = len(text) - len(text.lstrip()) + 1, len(text) + 1
    else:
        path, line = label, 1
    return Finding(code=code, name=name, message=message, path=path, line=line, column=column, end_line=line,
                   end_column=end_column, severity="error" if code == "PTL459" else "warning",
                   source="dynamic")


def findings_from(run: RunResult) -> tuple[list[Finding], Summary]:
    labels = {t["index"]: t["label"] for t in run.targets}
    # A failure with no file to point at is reported at the target's own path as written.
    names = {t["index"]: display_path(t["path"]) if t["kind"] != "module" else t["label"] for t in run.targets}
    fallback = {t["index"]: _target_file(t) for t in run.targets}
    findings: list[Finding] = []
    seen: set[tuple] = set()
    breaks = recompiles = graphs = 0
    for event in run.events:
        kind = event["event"]
        if kind == "end":
            graphs += event.get("graphs", 0)
        elif kind == "break":
            types = event.get("types") or ["graph break"]
            key = (_real(event.get("file")), event.get("line"), types[0])
            if key in seen:
                continue
            seen.add(key)
            breaks += 1
            findings.append(_finding("PTL450", "graph-break", break_message(event), event.get("file") or None,
                                     event.get("line"), labels.get(event["index"], "?")))
        elif kind == "recompile":
            guard = (event.get("guards") or ["unknown guard"])[0]
            key = (_real(event.get("file")), event.get("line"), guard)
            if key in seen:
                continue
            seen.add(key)
            recompiles += 1
            message = f"recompilation of `{event.get('function')}`: guard failed: {guard}"
            if len(event.get("guards") or []) > 1:
                message += f" (and {len(event['guards']) - 1} more)"
            findings.append(_finding("PTL451", "recompilation", message, event.get("file") or None,
                                     event.get("line"), labels.get(event["index"], "?")))
    starts = {e["index"]: e["location"] for e in run.events if e["event"] == "start" and e.get("location")}
    for failure in run.failures:
        # The user's frame; else the factory's definition; else line 1 of the target's file.
        file, line = failure.file, failure.line
        if not file and failure.index in starts:
            file, line = starts[failure.index]
        if not file:
            file, line = fallback.get(failure.index), 1
        findings.append(_finding("PTL459", "dynamic-target-failed", failure.message, file, line,
                                 names.get(failure.index, "?")))
    ran = {e["index"] for e in run.events if e["event"] in ("start", "end")} | {f.index for f in run.failures}
    run_count = len(ran)
    findings.sort(key=Finding.sort_key)
    return findings, Summary(run_count, graphs, breaks, recompiles, len(run.failures), run.seconds, run.device)


def break_message(event: dict[str, Any]) -> str:
    ids, types = event.get("gb_ids") or [], event.get("types") or ["graph break"]
    primary = [(gb, kind) for gb, kind in zip(ids, types) if gb != GB_LOOP] or list(zip(ids, types))
    if primary:
        gb, kind = primary[0]
        text = f"graph break: {kind} ({gb})"
    else:
        text = f"graph break: {types[0]}"
    if GB_LOOP in ids and primary and primary[0][0] != GB_LOOP:
        text += f", inside a loop, so Dynamo skipped the whole frame ({GB_LOOP})"
    rule = related_rule(ids, event.get("explanation", ""))
    if rule:
        text += f" — see {rule}"
    if event.get("explanation"):
        text += f". {event['explanation'].rstrip('.')}"
    hints = [h for h in event.get("hints") or [] if "issue" not in h.lower()]
    if hints:
        text += f". Hint: {hints[0].rstrip('. ')}"
    return text + "."


def _real(path: str | None) -> str | None:
    return os.path.realpath(path) if path else None


def _target_file(target: dict[str, Any]) -> str | None:
    """The file a target names (line 1 of it is where a failure without a user frame goes)."""
    if target["kind"] in ("file", "script"):
        return target["path"] if os.path.isfile(target["path"]) else None
    relative = target["module"].replace(".", os.sep)
    for candidate in (relative + ".py", os.path.join(relative, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None
