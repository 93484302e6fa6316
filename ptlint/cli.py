"""The `ptlint` command: check, fix, explain, rule, lsp.

Exit codes (DESIGN.md): 0 clean, 1 findings (or something to fix), 2 usage, config or internal
error, or a path that does not exist.
"""

from __future__ import annotations

import sys
from typing import Callable

import click

from . import __version__
from .config import ConfigError, Settings, build_settings
from .output import FORMATS, formatter, statistics, summary
from .rule import Finding

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class Failure(click.ClickException):
    """A usage, config or internal error: one line on stderr, exit 2."""

    exit_code = EXIT_ERROR

    def show(self, file=None) -> None:
        click.echo(f"ptlint: error: {self.format_message()}", err=True)


class Group(click.Group):
    def main(self, *args, **kwargs):  # usage errors exit 2 (click's default), never a traceback
        try:
            return super().main(*args, **kwargs)
        except KeyboardInterrupt:  # pragma: no cover
            click.echo("ptlint: interrupted", err=True)
            sys.exit(130)


def common_options(function: Callable) -> Callable:
    options = [
        click.option("--select", help="Comma list of codes or prefixes to enable (PTL = all); replaces the config's."),
        click.option("--extend-select", help="Codes or prefixes to enable in addition."),
        click.option("--ignore", help="Comma list of codes or prefixes to disable."),
        click.option("--output-format", type=click.Choice(FORMATS), default=None,
                     help="How findings are printed (default: full; concise for fix --apply)."),
        click.option("--config", "config_file", type=click.Path(dir_okay=False),
                     help="Use this pyproject.toml instead of the nearest one."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
        click.option("--cache-dir", help="Cache folder (default .ptlint_cache/ beside the config; or $PTLINT_CACHE_DIR)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings."),
        click.option("--statistics", is_flag=True, help="Print a count per rule instead of each finding."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                     help="Worker processes (default: all cores)."),
        click.option("--quiet", "-q", is_flag=True, help="Print findings only, no summary."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def load_settings(paths: list[str], config_file: str | None, select: str | None, ignore: str | None,
                  extend_select: str | None, unsafe_fixes: bool | None = None) -> Settings:
    try:
        return build_settings(paths, config_file=config_file, select=select, ignore=ignore,
                              extend_select=extend_select, unsafe_fixes=unsafe_fixes)
    except ConfigError as exc:
        raise Failure(str(exc)) from None


def open_cache(settings: Settings, no_cache: bool, cache_dir: str | None):
    if no_cache:
        return None
    from .cache import Cache

    return Cache(Cache.location(cache_dir, settings.cache_dir, settings.root), settings.cache_key())


def emit(findings: list[Finding], output_format: str, show_statistics: bool, unsafe_fixes: bool,
         quiet: bool = False, unchecked: int = 0) -> None:
    """Print findings in the chosen format; the summary goes with the human formats only."""
    if show_statistics and output_format in ("full", "concise"):
        click.echo(statistics(findings), nl=False)
        return
    text = formatter(output_format)(findings, unsafe_fixes)
    if text:
        click.echo(text, nl=False)
    if output_format in ("full", "concise") and not quiet:
        if unchecked and not findings:
            click.echo(f"No findings in the files that were checked; {unchecked} path(s) could not be checked.")
        else:
            click.echo(summary(findings, unsafe_fixes), nl=False)


def report_errors(messages: list[str]) -> None:
    for message in messages:
        click.echo(f"ptlint: {message}", err=True)


def gather(paths: tuple[str, ...], settings: Settings, no_cache: bool, cache_dir: str | None,
           jobs: int | None) -> tuple[list[Finding], list[str], bool]:
    """Discover and check: (findings, one-line errors, whether any error should exit 2)."""
    from .runner import check_files, discover
    from .progress import Progress

    found = discover(list(paths), settings)
    errors = list(found.missing)
    errors += found.errors
    cache = open_cache(settings, no_cache, cache_dir)
    with Progress(len(found.files)) as progress:
        results = check_files(found.files, settings, cache=cache, jobs=jobs, progress=progress.update)
    findings: list[Finding] = []
    failed = bool(found.missing)
    for result in results:
        if result.error:
            errors.append(result.error)
            failed = True
        findings.extend(result.findings)
    findings.sort(key=Finding.sort_key)
    return findings, errors, failed


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ptlint")
def main() -> None:
    """ptlint: find PyTorch code that makes training slow or numerically unsafe, and fix it."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@common_options
@click.option("--dynamic", is_flag=True, help="Also run the dynamic targets of [tool.ptlint.dynamic].")
@click.option("--unsafe-fixes", is_flag=True, default=None, help="Count unsafe fixes as available.")
def check(paths, select, extend_select, ignore, output_format, config_file, no_cache, cache_dir, exit_zero,
          statistics, jobs, quiet, dynamic, unsafe_fixes) -> None:
    """Lint files and folders (folders recursively, *.py)."""
    paths = paths or (".",)
    settings = load_settings(list(paths), config_file, select, ignore, extend_select, unsafe_fixes)
    findings, errors, failed = gather(paths, settings, no_cache, cache_dir, jobs)
    if dynamic:
        from .dynamic.merge import run_configured_targets

        dynamic_findings, dynamic_errors = run_configured_targets(settings, findings)
        findings = sorted(findings + dynamic_findings, key=Finding.sort_key)
        errors += dynamic_errors
        failed = failed or bool(dynamic_errors)
    report_errors(errors)
    emit(findings, output_format or "full", statistics, settings.unsafe_fixes, quiet, unchecked=len(errors))
    if failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@common_options
@click.option("--apply", "apply_fixes", is_flag=True, help="Write the fixes (default: print the diff).")
@click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes that may change behaviour.")
@click.option("--diff", "show_diff", is_flag=True, help="With --apply, also print the diff.")
def fix(paths, select, extend_select, ignore, output_format, config_file, no_cache, cache_dir, exit_zero,
        statistics, jobs, quiet, apply_fixes, unsafe_fixes, show_diff) -> None:
    """Show (or with --apply, write) the fixes for the findings."""
    from .fixer import fix_paths

    paths = paths or (".",)
    settings = load_settings(list(paths), config_file, select, ignore, extend_select, unsafe_fixes)
    findings, errors, failed = gather(paths, settings, no_cache, cache_dir, jobs)
    outcome = fix_paths(findings, settings, write=apply_fixes, cache=open_cache(settings, no_cache, cache_dir))
    errors += outcome.errors
    failed = failed or bool(outcome.errors)
    report_errors(errors)
    if not apply_fixes or show_diff:
        click.echo(outcome.diff, nl=False)
    for message in outcome.messages:
        click.echo(f"ptlint: {message}", err=True)
    if apply_fixes:
        remaining = outcome.remaining
        if remaining and not quiet:
            emit(remaining, output_format or "concise", statistics, settings.unsafe_fixes, quiet=True)
        click.echo(f"Fixed {outcome.fixed} finding(s) in {len(outcome.changed)} file(s); "
                   f"{len(remaining)} remaining.", err=True)
        if failed:
            sys.exit(EXIT_ERROR)
        sys.exit(EXIT_FINDINGS if remaining and not exit_zero else EXIT_CLEAN)
    if not quiet:
        would = len(outcome.changed)
        click.echo(f"{outcome.fixed} fix(es) would change {would} file(s); run `ptlint fix --apply` to write them."
                   if would else "Nothing to fix.", err=True)
    if failed:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if outcome.changed and not exit_zero else EXIT_CLEAN)


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule(code, show_all, output_format) -> None:
    """Print a rule's documentation, or the catalogue with --all."""
    from .catalogue import catalogue_json, catalogue_table, rule_page

    if show_all:
        click.echo(catalogue_json() if output_format == "json" else catalogue_table(), nl=False)
        return
    if not code:
        raise Failure("give a rule code (e.g. `ptlint rule PTL101`) or --all")
    page = rule_page(code.upper())
    if page is None:
        raise Failure(f"unknown rule code {code!r} (see `ptlint rule --all`)")
    click.echo(page, nl=False)


@main.command()
def lsp() -> None:
    """Run the language server on stdio (needs `pip install "ptlint[lsp]"`)."""
    try:
        from .lsp import serve
    except ImportError as exc:
        raise Failure(f"the language server needs pygls: pip install \"ptlint[lsp]\" ({exc})") from None
    serve()


def _register_explain() -> None:
    from .dynamic.command import explain

    main.add_command(explain)


_register_explain()


if __name__ == "__main__":  # pragma: no cover
    main()
