"""From the dynamic pass's events to findings: PTL450 graph-break, PTL451 recompilation, PTL452
host-sync and PTL459 dynamic-target-failed, with the graph-break ids mapped onto the static PTL4xx
rules. `event_findings` is shared by `ptlint explain` and ptlint.testing."""

from __future__ import annotations

import linecache
import os
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from ptlint.dynamic.paths import display_path, installed_label
from ptlint.dynamic.runner import RunResult
from ptlint.engine.finding import Finding

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
_NUMBER = r"-?(?:\d+(?:\.\d*)?(?:e[-+]?\d+)?|inf|nan)|True|False"
_STACK_CONSTANT = re.compile(rf"^___stack\d+ == (?P<value>{_NUMBER})$")
_ARG_CONSTANT = re.compile(rf"^(?:L\['(?P<name>\w+)'\]|(?P<bare>(?!___)[A-Za-z_]\w*)) == (?P<value>{_NUMBER})$")
_OBJ_ID = re.compile(r"^___check_obj_id\((?P<what>[^,]+), \d+\)(?:, type=<class '(?P<type>[^']+)'>)?$")
_SCOPED_NAME = re.compile(r"^[LG]\['(\w+)'\]$")  # L['x'] (a local), G['x'] (a global)
_READERS = ((".item()", "`.item()`"), (".tolist()", "`.tolist()`"), ("float(", "`float()`"), ("int(", "`int()`"),
            ("bool(", "`bool()`"))


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
    syncs: int | None = None  # PTL452 sites, when the sanitizer ran
    notes: list[str] = field(default_factory=list)  # lines printed under the summary

    def line(self, command: str) -> str:
        syncs = f"{self.syncs} host-sync site(s), " if self.syncs is not None else ""
        text = (f"ptlint {command}: {self.targets} target(s) run, {self.graphs} graph(s), "
                f"{self.breaks} graph break(s), {self.recompiles} recompilation(s), {syncs}"
                f"{self.failed} failed, {self.seconds:.1f} s" + (f" on {self.device}" if self.device else ""))
        return "\n".join([text, *(f"note: {note}" for note in self.notes)])


@dataclass
class Counts:
    """What `event_findings` counted: distinct breaks, Dynamo's recompilations, syncs."""
    breaks: int = 0
    recompiles: int = 0
    syncs: int = 0


def _finding(code: str, name: str, message: str, file: str | None, line: int | None, label: str,
             span: tuple[int | None, int | None, int | None] = (None, None, None), **extra: Any) -> Finding:
    column = end_column = 1
    end_line = None
    if file:
        path, line = display_path(file), max(1, int(line or 1))
        text = linecache.getline(file, line).rstrip()
        if span[0] and span[2]:  # the exact expression (the sanitizer knows it)
            column, end_line, end_column = span[0], span[1] or line, span[2]
        elif text.strip():  # span the statement's line, from its first character
            column, end_column = len(text) - len(text.lstrip()) + 1, len(text) + 1
    else:
        path, line = label, 1
    return Finding(code=code, name=name, message=message, path=path, line=line, column=column,
                   end_line=end_line or line, end_column=end_column,
                   severity="error" if code == "PTL459" else "warning", source="dynamic",
                   extra={k: v for k, v in extra.items() if v is not None})


def _where(event: dict[str, Any]) -> tuple:
    """What a finding is deduplicated on: the installed frame when there is one, else its line."""
    origin = event.get("origin")
    if origin:
        return _real(origin["path"]), origin["line"]
    return _real(event.get("file")), event.get("line")


def _in_library(origin: dict[str, Any] | None, called: str = "reached from this line") -> str:
    if not origin:
        return ""
    return f" in {installed_label(origin['path'])}:{origin['line']} (`{origin['function']}`), {called}"


def event_findings(events: list[dict[str, Any]], label_of: Callable[[dict[str, Any]], str],
                   per: Callable[[dict[str, Any]], str] = lambda event: "call") -> tuple[list[Finding], Counts]:
    """Findings for break, recompile and sync events: one per break (on its origin and type), one
    per recompiled function and place with Dynamo's count, one per sync site with its count."""
    counts = Counts()
    findings: list[Finding] = []
    seen: set[tuple] = set()
    breaks_at: dict[tuple, Finding] = {}  # the first break finding at each place
    recompiled: dict[tuple, tuple[dict[str, Any], int]] = {}
    synced: dict[tuple, list] = {}  # key -> [first event, total count, {index: calls}, events, {(index, call): ms}]
    wall = {}  # index -> seconds its timed eager runs took
    for event in events:
        if event["event"] == "timed":
            wall[event.get("index")] = wall.get(event.get("index"), 0.0) + event["seconds"]
    for event in events:
        kind = event["event"]
        if kind == "break":
            types = event.get("types") or ["graph break"]
            key = (_where(event), types[0])
            earlier = breaks_at.get(key[0])
            if event.get("skips_frame") and earlier is not None:  # Dynamo's follow-up to that break
                if SKIPPED not in earlier.message:
                    earlier.message = earlier.message[:-1] + skipped_note(event)
                continue
            if key in seen or (event.get("duplicate") and not event.get("file")):
                continue  # a repeat of a break already reported, or one without anywhere to go
            seen.add(key)
            counts.breaks += 1
            finding = _finding("PTL450", "graph-break", break_message(event), event.get("file") or None,
                               event.get("line"), label_of(event), origin=event.get("origin"))
            breaks_at.setdefault(key[0], finding)
            findings.append(finding)
        elif kind == "recompile":
            counts.recompiles += 1
            key = (_where(event), event.get("function"), event.get("resumed_at"))
            first, count = recompiled.get(key, (event, 0))
            recompiled[key] = (first, count + 1)
        elif kind == "sync":  # one finding per user line (and library line): all its syncs, counted
            counts.syncs += event.get("count", 1)
            key = (_real(event.get("file")), event.get("line"), _where(event) if event.get("origin") else None)
            entry = synced.setdefault(key, [event, 0, {}, [], {}])
            entry[1] += event.get("count", 1)
            entry[2][event.get("index")] = event.get("calls") or 1
            if event.get("wait_ms") is not None:
                run = (event.get("index"), event.get("call"))
                entry[4][run] = entry[4].get(run, 0.0) + event["wait_ms"]
            entry[3].append(event)
    for first, count in recompiled.values():
        findings.append(_finding("PTL451", "recompilation", recompile_message(first, count), first.get("file") or None,
                                 first.get("line"), label_of(first), origin=first.get("origin"), count=count))
    for first, total, calls, sites, waits in synced.values():
        per_call = total / sum(calls.values())
        whats = list(dict.fromkeys(site["what"] for site in sites))
        wait = sync_wait(waits, sum(calls.values()), sum(wall.get(index, 0.0) for index in calls) * 1000) \
            if waits else None
        message = sync_message(whats, first.get("origin"), total, sum(calls.values()), per(first), wait)
        findings.append(_finding("PTL452", "host-sync", message, first.get("file") or None, first.get("line"),
                                 label_of(first), _sync_span(sites), origin=first.get("origin"),
                                 count=int(per_call) if per_call == int(per_call) else round(per_call, 2),
                                 wait_ms=wait))
    return findings, counts


def sync_wait(waits: dict[tuple, float], calls: int, wall_ms: float) -> dict[str, float]:
    """How long the host waited at a site: the median over the calls (a call without a sync there
    waited 0 ms), the total over the run, and that total's share of the calls' wall time."""
    per_call = list(waits.values()) + [0.0] * max(0, calls - len(waits))
    total = sum(per_call)
    return {"median": round(statistics.median(per_call), 4), "total": round(total, 4),
            "share": round(total / wall_ms, 4) if wall_ms > 0 else None}


def findings_from(run: RunResult) -> tuple[list[Finding], Summary]:
    labels = {t["index"]: t["label"] for t in run.targets}
    kinds = {t["index"]: t["kind"] for t in run.targets}
    # A failure with no file to point at is reported at the target's own path as written.
    names = {t["index"]: display_path(t["path"]) if t["kind"] != "module" else t["label"] for t in run.targets}
    fallback = {t["index"]: _target_file(t) for t in run.targets}
    findings, counts = event_findings(
        run.events, lambda event: labels.get(event.get("index"), "?"),
        lambda event: "run" if kinds.get(event.get("index")) == "script" else "call")
    graphs = {index: 0 for index in labels}
    for event in run.events:
        if event["event"] == "graph":
            graphs[event.get("index")] = graphs.get(event.get("index"), 0) + 1
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
    findings.sort(key=Finding.sort_key)
    syncs = sum(f.code == "PTL452" for f in findings) if run.syncs else None
    failed = {failure.index for failure in run.failures}
    notes = [_compiled_nothing(t) for t in run.targets
             if t["index"] in ran and t["index"] not in failed and not graphs.get(t["index"])]
    if run.syncs and run.device != "cuda" and not any(e["event"] == "timed" for e in run.events):
        notes.append(f"host syncs are counted, not timed, on {run.device or 'this machine'}: with no accelerator "
                     "the host never waits, so there is no wait to measure; on a CUDA machine (--device cuda) "
                     "each site also shows how long the host waited there")
    return findings, Summary(len(ran), sum(graphs.values()), counts.breaks, counts.recompiles, len(run.failures),
                             run.seconds, run.device, syncs, notes)


def _compiled_nothing(target: dict[str, Any]) -> str:
    if target["kind"] == "script":
        return (f"{target['label']} compiled nothing: no `torch.compile`d function or module ran in it, "
                "so Dynamo had nothing to observe (is the torch.compile call behind a flag?)")
    return f"{target['label']}: Dynamo compiled no graph (it ran every frame of it eagerly)"


def break_message(event: dict[str, Any]) -> str:
    ids, types = event.get("gb_ids") or [], event.get("types") or ["graph break"]
    primary = [(gb, kind) for gb, kind in zip(ids, types) if gb != GB_LOOP] or list(zip(ids, types))
    if primary:
        gb, kind = primary[0]
        text = f"graph break: {kind} ({gb})"
    else:
        text = f"graph break: {types[0]}"
    text += _in_library(event.get("origin"))
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


SKIPPED = "Dynamo then gave up on the whole function"


def skipped_note(event: dict[str, Any]) -> str:
    """What a follow-up "skipping the function" record adds to the break it follows."""
    ids, types = event.get("gb_ids") or [], event.get("types") or []
    why = f" ({ids[0]}: {types[0]})" if ids and types else ""
    return f". {SKIPPED} and ran it eagerly{why}."


def recompile_message(event: dict[str, Any], count: int) -> str:
    origin = event.get("origin")
    text = f"recompilation of `{event.get('function')}`"
    if event.get("resumed_at"):
        text += f" (resumed after line {event['resumed_at']})"
    text += _in_library(origin, "called from here")
    if count > 1:
        text += f", {count} times"
    guards = event.get("guards") or []
    text += f": {describe_guard(event, guards[0] if guards else 'unknown guard')}"
    if len(guards) > 1:
        text += f" (and {len(guards) - 1} more)"
    return text


def describe_guard(event: dict[str, Any], guard: str) -> str:
    """A guard in words where Dynamo specialised a Python number, else the guard as Dynamo wrote it."""
    constant = _STACK_CONSTANT.match(guard)
    if constant and event.get("resumed_at"):
        line = event["resumed_at"]
        origin = event.get("origin")
        file = origin["path"] if origin else event.get("file") or ""
        where = f"{installed_label(file)}:{line}" if origin else f"line {line}"
        source = linecache.getline(file, line) if file else ""
        reader = next((name for needle, name in _READERS if needle in source), None)
        if reader:
            value = f"the value read by {reader} at {where}"
        else:
            value = f"the Python value computed at {where}" + (f" (`{source.strip()}`)" if source.strip() else "")
        return f"{value} was specialised as a constant ({constant.group('value')}); each new value recompiles"
    argument = _ARG_CONSTANT.match(guard)
    if argument:
        return (f"the argument `{argument.group('name') or argument.group('bare')}` was specialised as the constant "
                f"{argument.group('value')}; each new value recompiles")
    identity = _OBJ_ID.match(guard)
    if identity:
        kind = f" (a `{identity.group('type')}`)" if identity.group("type") else ""
        name = identity.group("what")
        if name.startswith("___stack") and event.get("resumed_at"):
            file = (event.get("origin") or {}).get("path") or event.get("file") or ""
            source = linecache.getline(file, event["resumed_at"]).strip() if file else ""
            name = f"the object in use at line {event['resumed_at']}" + (f" (`{source}`)" if source else "")
        else:
            name = "`" + _SCOPED_NAME.sub(r"\1", name) + "`"
        return f"Dynamo guards on the identity of {name}{kind}, and it is a new object on this call"
    return f"guard failed: {guard}"


def _sync_span(sites: list[dict[str, Any]]) -> tuple[int | None, int | None, int | None]:
    """From the first sync's expression to the last one's, when they are on one line."""
    if any(site.get("column") is None or site.get("end_line") != site.get("line") for site in sites):
        return None, None, None
    return min(s["column"] for s in sites), sites[0]["line"], max(s["end_column"] for s in sites)


def sync_message(whats: list[str], origin: dict[str, Any] | None, total: int, calls: int, per: str,
                 wait: dict[str, Any] | None = None) -> str:
    text = f"host sync: {'; '.join(whats)}"
    text += _in_library(origin)
    text += " — the host waits for the device"
    if per == "call":
        count = f"{total // calls} per call" if total % calls == 0 else f"{total} in {calls} calls"
    else:
        count = f"{total} time{'s' if total != 1 else ''} in the {per}"
    text += f" ({count})"
    if wait is not None:
        share = f", {wait['share'] * 100:.0f}% of the wall time" if wait.get("share") is not None else ""
        text += f": it waits {_ms(wait['median'])} ms per {per} (median; {_ms(wait['total'])} ms in all{share})"
    return text + "."


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


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
