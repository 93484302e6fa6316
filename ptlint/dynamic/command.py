"""`ptlint explain TARGET...` and `ptlint explain --script train.py -- ARGS...`: the dynamic pass
behind the command line (ptlint.front.cli parses the options and calls `explain`).

Exit codes (DESIGN.md): 0 no graph break or recompilation (nor host sync with --syncs), 1 some,
2 error (torch missing, a bad target, a target that failed to import, raised, crashed or timed out).
"""

from __future__ import annotations

import sys

from ptlint.dynamic.runner import (
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    TargetError,
    parse_target,
    run_targets,
    script_target,
    torch_available,
)

class ExplainError(Exception):
    """A usage, config or target error: one line for the user, exit 2."""


def explain(targets: list[str], script: str | None = None, timeout: float | None = None, device: str | None = None,
            output_format: str = "full", config_file: str | None = None, syncs: bool | None = None,
            quiet: bool = False) -> int:
    """Run the targets (or the script, with `targets` as its arguments) under TorchDynamo, print
    the findings and a summary; the exit code."""
    from ptlint.dynamic.report import findings_from
    from ptlint.report.formats import emit
    from ptlint.run.config import ConfigError, build_settings

    try:
        settings = build_settings(["."], config_file=config_file)
    except ConfigError as exc:
        raise ExplainError(str(exc)) from None
    table = settings.dynamic
    timeout = timeout or float(table.get("timeout", DEFAULT_TIMEOUT))
    device = device or table.get("device", "auto")
    syncs = bool(syncs or table.get("syncs", False))
    try:
        if script:
            parsed = [script_target(script, list(targets))]
        elif targets:
            parsed = [parse_target(text) for text in targets]
        elif table.get("targets"):
            parsed = [parse_target(text, settings.root) for text in table["targets"]]
        else:
            raise ExplainError("give TARGETs (file.py:factory or package.module:factory), --script FILE, "
                               "or configure [tool.ptlint.dynamic] targets")
    except TargetError as exc:
        raise ExplainError(str(exc)) from None
    if not torch_available():
        raise ExplainError(INSTALL_HINT)
    run = run_targets(parsed, timeout=timeout, device=device, sys_path=[settings.root] if not targets else [],
                      syncs=syncs)
    if run.fatal:
        raise ExplainError(f"dynamic pass: {run.fatal}")
    findings, summary = findings_from(run)
    emit(findings, output_format, False, False, quiet=True)
    if not quiet:
        print(summary.line("explain"), file=sys.stderr)
    if summary.failed:
        return 2
    return 1 if findings else 0
