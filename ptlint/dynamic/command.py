"""`ptlint explain TARGET...` and `ptlint explain --script train.py -- ARGS...`.

Exit codes (DESIGN.md): 0 no graph break or recompilation (nor host sync with --syncs), 1 some,
2 error (torch missing, a bad target, a target that failed to import, raised, crashed or timed out).
"""

from __future__ import annotations

import sys

import click

from ptlint.dynamic.runner import (
    DEFAULT_TIMEOUT,
    INSTALL_HINT,
    TargetError,
    parse_target,
    run_targets,
    script_target,
    torch_available,
)
from ptlint.report.formats import FORMATS


def _fail(message: str) -> None:
    click.echo(f"ptlint: error: {message}", err=True)
    sys.exit(2)


@click.command(context_settings={"ignore_unknown_options": False})
@click.argument("targets", nargs=-1)
@click.option("--script", "script", type=click.Path(dir_okay=False),
              help="Run this whole script (arguments after `--`), observing every region it compiles.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help=f"Seconds each target may run before it is killed (default {DEFAULT_TIMEOUT:g}, or the config's).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default=None,
              help="Passed to factories that take a `device` argument (auto: cuda when available).")
@click.option("--output-format", type=click.Choice(FORMATS), default="full", help="How findings are printed.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="Read [tool.ptlint.dynamic] from this pyproject.toml.")
@click.option("--syncs", is_flag=True, default=None,
              help="Also run each target eagerly under a sanitizer that reports host-device syncs (PTL452).")
@click.option("--quiet", "-q", is_flag=True, help="Print findings only, no summary.")
def explain(targets, script, timeout, device, output_format, config_file, syncs, quiet) -> None:
    """Run entry points under TorchDynamo and report graph breaks and recompilations.

    TARGET is path/to/file.py:factory or package.module:factory. The factory takes no arguments
    (or an optional `device`) and returns (fn_or_module, args) or (fn_or_module, [args, ...]).
    Without TARGETs, runs the targets of [tool.ptlint.dynamic].
    """
    from ptlint.dynamic.report import findings_from
    from ptlint.report.formats import emit
    from ptlint.run.config import ConfigError, build_settings

    try:
        settings = build_settings(["."], config_file=config_file)
    except ConfigError as exc:
        _fail(str(exc))
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
            _fail("give TARGETs (file.py:factory or package.module:factory), --script FILE, "
                  "or configure [tool.ptlint.dynamic] targets")
    except TargetError as exc:
        _fail(str(exc))
    if not torch_available():
        _fail(INSTALL_HINT)
    run = run_targets(parsed, timeout=timeout, device=device, sys_path=[settings.root] if not targets else [],
                      syncs=syncs)
    if run.fatal:
        _fail(f"dynamic pass: {run.fatal}")
    findings, summary = findings_from(run)
    emit(findings, output_format, False, False, quiet=True)
    if not quiet:
        click.echo(summary.line("explain"), err=True)
    if summary.failed:
        sys.exit(2)
    sys.exit(1 if findings else 0)
