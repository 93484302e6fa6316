"""`ptlint check --dynamic`: run the configured targets and mark the static findings that the
dynamic pass confirmed (a break, or with `syncs = true` a host sync, on their line) or ran through
without a break."""

from __future__ import annotations

import os
import sys
from typing import Any

from ptlint.dynamic.report import findings_from
from ptlint.dynamic.runner import (
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    TargetError,
    parse_target,
    run_targets,
    torch_available,
)
from ptlint.engine.finding import Finding
from ptlint.run.config import Settings

COMPILE_RULES = ("PTL401", "PTL402", "PTL403", "PTL404", "PTL405")
SYNC_RULES = ("PTL101", "PTL402", "PTL403")  # a PTL452 host sync on their line confirms them


def run_configured_targets(settings: Settings, static_findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """(dynamic findings, one-line errors); marks `static_findings` in place."""
    table = settings.dynamic or {}
    texts = table.get("targets") or []
    if not texts:
        where = settings.config_path or "pyproject.toml"
        return [], [f"--dynamic: no targets configured ([tool.ptlint.dynamic] targets in {where})"]
    if not torch_available():
        return [], [INSTALL_HINT]
    try:
        targets = [parse_target(text, settings.root) for text in texts]
    except TargetError as exc:
        return [], [f"[tool.ptlint.dynamic] {exc}"]
    run = run_targets(targets, timeout=float(table.get("timeout", DEFAULT_TIMEOUT)),
                      device=table.get("device", "auto"), sys_path=[settings.root], syncs=bool(table.get("syncs")))
    if run.fatal:
        return [], [f"dynamic pass: {run.fatal}"]
    findings, summary = findings_from(run)
    findings = [f for f in findings if f.code in settings.enabled]  # --select / --ignore apply here too
    mark_static(static_findings, run.events)
    print(summary.line("check --dynamic"), file=sys.stderr)
    errors = [f"dynamic pass: {summary.failed} target(s) failed (PTL459)"] if summary.failed else []
    return findings, errors


def mark_static(static_findings: list[Finding], events: list[dict[str, Any]]) -> None:
    """`extra["dynamic"]`: "confirmed" when a break (compile rules) or a host sync (sync rules) was
    seen on the finding's lines, "not-observed" when Dynamo traced one of its lines and no break
    happened there or in anything it called."""
    synced: dict[str, set[int]] = {}  # the user line of each host sync
    confirmed: dict[str, set[int]] = {}  # the innermost user frame of each break
    involved: dict[str, set[int]] = {}  # every user frame on each break's stack
    traced: dict[str, set[int]] = {}
    for event in events:
        if event["event"] == "break" and event.get("file"):
            confirmed.setdefault(os.path.realpath(event["file"]), set()).add(event["line"])
            for file, line in event.get("frames") or [[event["file"], event["line"]]]:
                involved.setdefault(os.path.realpath(file), set()).add(line)
        elif event["event"] == "sync" and event.get("file"):
            synced.setdefault(os.path.realpath(event["file"]), set()).add(event["line"])
        elif event["event"] == "traced":
            for file, lines in event["lines"].items():
                traced.setdefault(os.path.realpath(file), set()).update(lines)
    for finding in static_findings:
        if finding.source != "static" or finding.code not in COMPILE_RULES + SYNC_RULES:
            continue
        real = os.path.realpath(finding.path)
        span = set(range(finding.line, finding.end_line + 1))
        if finding.code in SYNC_RULES and span & synced.get(real, set()):
            finding.extra["dynamic"] = "confirmed"
        elif finding.code not in COMPILE_RULES:
            continue
        elif span & confirmed.get(real, set()):
            finding.extra["dynamic"] = "confirmed"
        elif span & traced.get(real, set()) and not span & involved.get(real, set()):
            finding.extra["dynamic"] = "not-observed"
