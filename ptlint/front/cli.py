"""The `ptlint` command: check, fix, explain, rule, lsp.

Exit codes (DESIGN.md): 0 clean, 1 findings (or something to fix), 2 usage, config or internal
error, or a path that does not exist.

The parser is argparse, and each command imports only what it uses: a one-file `ptlint check`
(what pre-commit runs) must start fast. `explain` is the dynamic pass's own command, loaded only
when it is asked for.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from ptlint import __version__
from ptlint.engine.finding import Finding
from ptlint.report.formats import (
    COLOR_CHOICES,
    FORMATS,
    Sources,
    Style,
    OutputError,
    Output,
    emit,
    formatter,
)
from ptlint.run.config import ConfigError, Resolver

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN = "-"
COMMANDS = {
    "check": "Lint files, folders and notebooks (folders recursively: *.py, *.ipynb).",
    "fix": "Show (or with --apply, write) the fixes for the findings.",
    "explain": "Run entry points under TorchDynamo; report graph breaks and recompilations.",
    "rule": "Print a rule's documentation, or the catalogue with --all.",
    "lsp": 'Run the language server on stdio (needs `pip install "ptlint[lsp]"`).',
}


class Failure(Exception):
    """A usage, config or internal error: one line on stderr, exit 2."""


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        code = run(argv)
    except (Failure, OutputError) as exc:
        print(f"ptlint: error: {exc}", file=sys.stderr)
        code = EXIT_ERROR
    except KeyboardInterrupt:  # pragma: no cover
        print("ptlint: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


def run(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return EXIT_CLEAN if argv else EXIT_ERROR
    if argv[0] == "--version":
        print(f"ptlint, version {__version__}")
        return EXIT_CLEAN
    command, rest = argv[0], argv[1:]
    if command == "explain":
        from ptlint.dynamic.command import explain

        explain.main(args=rest, prog_name="ptlint explain")  # click exits with the command's code
        return EXIT_CLEAN
    handlers: dict[str, Callable[[list[str]], int]] = {
        "check": command_check, "fix": command_fix, "rule": command_rule, "lsp": command_lsp}
    if command not in handlers:
        print(_usage(), file=sys.stderr)
        print(f"ptlint: error: unknown command {command!r}", file=sys.stderr)
        return EXIT_ERROR
    return handlers[command](rest)


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: ptlint [--version] [-h] COMMAND [ARGS]...", "",
             "ptlint: find PyTorch code that makes training slow or numerically unsafe, and fix it.", "",
             "commands:"]
    lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    lines += ["", "`ptlint COMMAND --help` describes a command's options."]
    return "\n".join(lines)


# -- arguments ---------------------------------------------------------------------------------

def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is smaller than 1")
    return value


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter, told the width up front: left to itself it imports shutil (and with it
    bz2 and lzma) on every add_argument, which a one-file check pays for at start-up."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        if width is None:
            try:
                width = int(os.environ.get("COLUMNS", "")) - 2
            except ValueError:
                try:
                    width = os.get_terminal_size(sys.stdout.fileno()).columns - 2
                except (OSError, ValueError, AttributeError):
                    width = 78
        super().__init__(prog, indent_increment, max_help_position, width)


def _parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"ptlint {command}", description=COMMANDS[command], allow_abbrev=False,
                                     formatter_class=_Formatter)
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="Files, folders or notebooks (default: the current folder); `-` reads standard input.")
    add = parser.add_argument
    add("--select", help="Comma list of codes or prefixes to enable (PTL = all); replaces the config's.")
    add("--extend-select", help="Codes or prefixes to enable in addition.")
    add("--ignore", help="Comma list of codes or prefixes to disable.")
    add("--output-format", choices=FORMATS, default=None,
        help="How findings are printed (default: full; concise for fix --apply).")
    add("--output-file", metavar="FILE", help="Write the output to FILE instead of standard output.")
    add("--color", choices=COLOR_CHOICES, default="auto",
        help="Colour the text formats: auto (a terminal, unless NO_COLOR is set), always, never.")
    add("--config", dest="config_file", metavar="FILE",
        help="Use this pyproject.toml for every file instead of each file's nearest one.")
    add("--stdin-filename", metavar="PATH",
        help="Read the source from standard input and check it as if it were PATH (config, notebook or not).")
    force = parser.add_mutually_exclusive_group()
    force.add_argument("--force-exclude", dest="force_exclude", action="store_true", default=None,
                       help="Apply `exclude` also to paths named on the command line (as pre-commit passes them).")
    force.add_argument("--no-force-exclude", dest="force_exclude", action="store_false")
    add("--no-cache", action="store_true", help="Neither read nor write the cache.")
    add("--cache-dir", help="Cache folder (default .ptlint_cache/ beside the config; or $PTLINT_CACHE_DIR).")
    add("--exit-zero", action="store_true", help="Exit 0 even when there are findings.")
    add("--statistics", action="store_true", help="Print a count per rule instead of each finding.")
    add("--jobs", "-j", type=_positive, default=None, help="Worker processes (default: all cores).")
    add("--quiet", "-q", action="store_true", help="Print findings only, no summary.")
    if command == "check":
        add("--dynamic", action="store_true", help="Also run the dynamic targets of [tool.ptlint.dynamic].")
        add("--unsafe-fixes", action="store_true", default=None, help="Count unsafe fixes as available.")
    else:
        add("--apply", action="store_true", help="Write the fixes (default: print the diff).")
        add("--unsafe-fixes", action="store_true", default=None, help="Also apply fixes that may change behaviour.")
        add("--diff", dest="show_diff", action="store_true", help="With --apply, also print the diff.")
    return parser


def _resolver(args: argparse.Namespace) -> Resolver:
    try:
        return Resolver(args.config_file, select=args.select, ignore=args.ignore, extend_select=args.extend_select,
                        unsafe_fixes=args.unsafe_fixes, force_exclude=args.force_exclude)
    except ConfigError as exc:
        raise Failure(str(exc)) from None


def _stdin_name(args: argparse.Namespace) -> str | None:
    """The name standard input is checked under, or None when the paths are files."""
    if STDIN in args.paths:
        if len(args.paths) > 1:
            raise Failure("`-` (standard input) cannot be combined with other paths")
        return args.stdin_filename or STDIN
    if args.stdin_filename and not args.paths:
        return args.stdin_filename
    if args.stdin_filename:
        raise Failure("--stdin-filename names standard input: give `-` as the only path")
    return None


# -- output ------------------------------------------------------------------------------------

def report_errors(messages: list[str]) -> None:
    for message in messages:
        print(f"ptlint: {message}", file=sys.stderr)


# -- check and fix -----------------------------------------------------------------------------

class Run:
    """What `check` and `fix` share: the files with their settings, their findings, the errors."""

    def __init__(self, args: argparse.Namespace) -> None:
        from ptlint.run.discover import Job, discover

        self.args = args
        self.resolver = _resolver(args)
        self.stdin_name = _stdin_name(args)
        self.errors: list[str] = []
        self.failed = False
        self.sources = Sources()
        if self.stdin_name is not None:
            data = sys.stdin.buffer.read()
            self.sources.given[self.stdin_name] = data
            try:
                settings = self.resolver.settings_for(self.stdin_name)
            except ConfigError as exc:
                raise Failure(str(exc)) from None
            excluded = settings.force_exclude and settings.matches_exclude(self.stdin_name)
            self.jobs = [] if excluded else [Job(self.stdin_name, settings, data)]
            self.stdin_data: bytes | None = data
        else:
            found = discover(list(args.paths or ["."]), self.resolver)
            self.jobs = found.jobs
            self.errors += found.failures + found.warnings
            self.failed = bool(found.failures)
            self.stdin_data = None

    def check(self) -> list[Finding]:
        from ptlint.run.check import check_files
        from ptlint.run.progress import Progress

        caches = None
        if not self.args.no_cache and self.stdin_name is None:
            from ptlint.run.cache import Caches

            caches = Caches(self.args.cache_dir)
        self.caches = caches  # fix reads the check's findings back from it
        with Progress(len(self.jobs)) as progress:
            results = check_files(self.jobs, caches, workers=self.args.jobs, progress=progress.update)
        findings: list[Finding] = []
        for result in results:
            if result.error:
                self.errors.append(result.error)
                self.failed = True
            findings.extend(result.findings)
        return sorted(findings, key=Finding.sort_key)

    def unsafe_fixes(self) -> bool | dict[str, bool]:
        if self.args.unsafe_fixes is not None:
            return self.args.unsafe_fixes
        return {job.path: job.settings.unsafe_fixes for job in self.jobs}


def command_check(argv: list[str]) -> int:
    args = _parser("check").parse_intermixed_args(argv)
    run = Run(args)
    findings = run.check()
    if args.dynamic:
        dynamic_findings, dynamic_errors = _dynamic(run, findings)
        findings = sorted(findings + dynamic_findings, key=Finding.sort_key)
        run.errors += dynamic_errors
        run.failed = run.failed or bool(dynamic_errors)
    report_errors(run.errors)
    out = Output(args.output_file, args.color)
    emit(findings, args.output_format or "full", args.statistics, run.unsafe_fixes(), args.quiet,
         unchecked=len(run.errors), out=out, sources=run.sources)
    out.close()
    if run.failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _dynamic(run: Run, findings: list[Finding]) -> tuple[list[Finding], list[str]]:
    """The configured dynamic targets of the named paths' configs (each config once, in a fixed order)."""
    from ptlint.dynamic.merge import run_configured_targets

    configs = {}
    for path in run.args.paths or ["."]:
        try:
            settings = run.resolver.settings_for(path if path != STDIN else (run.stdin_name or "."))
        except ConfigError:
            continue  # already reported by discovery
        configs.setdefault(settings.config_path or "", settings)
    chosen = [settings for _, settings in sorted(configs.items()) if settings.dynamic.get("targets")]
    chosen = chosen or [settings for _, settings in sorted(configs.items())][:1]
    found: list[Finding] = []
    errors: list[str] = []
    for settings in chosen:
        more, problems = run_configured_targets(settings, findings)
        found += more
        errors += problems
    return found, errors


def command_fix(argv: list[str]) -> int:
    from ptlint.run.fix import fix_jobs

    args = _parser("fix").parse_intermixed_args(argv)
    run = Run(args)
    findings = run.check()
    out = Output(args.output_file, args.color)
    if run.stdin_name is not None:
        return _fix_stdin(run, findings, out)
    outcome = fix_jobs(run.jobs, findings, write=args.apply, caches=run.caches)
    run.errors += outcome.errors
    failed = run.failed or bool(outcome.errors)
    report_errors(run.errors)
    if not args.apply or args.show_diff:
        out.write(_color_diff(outcome.diff, out.style))
    report_errors(outcome.messages)
    if args.apply:
        remaining = outcome.remaining
        if remaining and not args.quiet:
            emit(remaining, args.output_format or "concise", args.statistics, run.unsafe_fixes(), quiet=True,
                 out=out, sources=run.sources)
        out.close()
        if run.jobs or not failed:  # nothing was checked at all: the error said it
            print(f"Fixed {outcome.fixed} finding(s) in {len(outcome.changed)} file(s); "
                  f"{len(remaining)} remaining.", file=sys.stderr)
        if failed:
            return EXIT_ERROR
        return EXIT_FINDINGS if remaining and not args.exit_zero else EXIT_CLEAN
    out.close()
    if not args.quiet and (run.jobs or not failed):
        would = len(outcome.changed)
        print(f"{outcome.fixed} fix(es) would change {would} file(s); run `ptlint fix --apply` to write them."
              if would else "Nothing to fix.", file=sys.stderr)
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if outcome.changed and not args.exit_zero else EXIT_CLEAN


def _fix_stdin(run: Run, findings: list[Finding], out: Output) -> int:
    """`fix -`: the fixed source on standard output (unchanged when nothing applies), the findings
    that remain on standard error."""
    from ptlint.engine.source import SourceError
    from ptlint.run.fix import fix_file

    assert run.stdin_data is not None
    fixed, remaining = run.stdin_data, findings
    if run.jobs and any(f.fix for f in findings):
        try:
            result = fix_file(run.jobs[0], run.stdin_data)
            fixed, remaining = result.fixed, result.remaining
            report_errors(result.messages)
        except (SourceError, UnicodeEncodeError) as exc:
            run.errors.append(f"{run.stdin_name}: {exc}")
            run.failed = True
    report_errors(run.errors)
    if out.path is None:
        sys.stdout.buffer.write(fixed)
        sys.stdout.buffer.flush()
    else:
        try:
            with open(out.path, "wb") as handle:
                handle.write(fixed)
        except OSError as exc:
            raise Failure(f"{out.path}: cannot write the output file: {exc.strerror or exc}") from None
    if remaining and not run.args.quiet:
        text = formatter("concise")(sorted(remaining, key=Finding.sort_key), run.unsafe_fixes())
        sys.stderr.write(text)
    if run.failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if remaining and not run.args.exit_zero else EXIT_CLEAN


def _color_diff(diff: str, style: Style) -> str:
    if not style.enabled or not diff:
        return diff
    out = []
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            out.append(style.path(line.rstrip("\n")) + "\n")
        elif line.startswith("+"):
            out.append(f"\x1b[32m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("-"):
            out.append(f"\x1b[31m{line.rstrip(chr(10))}\x1b[0m\n")
        elif line.startswith("@@"):
            out.append(style.punct(line.rstrip("\n")) + "\n")
        else:
            out.append(line)
    return "".join(out)


# -- rule and lsp ------------------------------------------------------------------------------

def command_rule(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ptlint rule", description=COMMANDS["rule"], allow_abbrev=False,
                                     formatter_class=_Formatter)
    parser.add_argument("code", nargs="?", help="A rule code, e.g. PTL101.")
    parser.add_argument("--all", dest="show_all", action="store_true", help="List every rule.")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    args = parser.parse_args(argv)
    from ptlint.engine.catalogue import catalogue_json, catalogue_table, rule_page

    if args.show_all:
        sys.stdout.write(catalogue_json() if args.output_format == "json" else catalogue_table())
        return EXIT_CLEAN
    if not args.code:
        raise Failure("give a rule code (e.g. `ptlint rule PTL101`) or --all")
    page = rule_page(args.code.upper())
    if page is None:
        raise Failure(f"unknown rule code {args.code!r} (see `ptlint rule --all`)")
    sys.stdout.write(page)
    return EXIT_CLEAN


def command_lsp(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="ptlint lsp", description=COMMANDS["lsp"]).parse_args(argv)
    try:
        from ptlint.front.lsp import serve
    except ImportError as exc:
        raise Failure(f"the language server needs pygls: pip install \"ptlint[lsp]\" ({exc})") from None
    serve()
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    main()
