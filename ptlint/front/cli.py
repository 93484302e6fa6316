"""The `ptlint` command: check, fix, explain, rule, lsp (or server), clean, version.

Exit codes (DESIGN.md): 0 clean, 1 findings (or something to fix), 2 usage, config or internal
error, or a path that does not exist.

The parser is argparse for every command, and each command imports only what it uses: a
one-file `ptlint check` (what pre-commit runs) must start fast. A usage error reads the same for
every command: its usage line, then `ptlint: error: ...`, exit 2. `check` also speaks ruff's
habits (`--fix`, `--diff`, `--add-noqa`, `--watch`, `--show-files`, ...; docs/ruff.md).
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
    STATISTICS_FORMATS,
    Sources,
    Style,
    OutputError,
    Output,
    emit,
    fixes_summary,
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
    "server": "Another name for `lsp` (ruff's).",
    "clean": "Remove ptlint's caches below the current folder (and the configured one).",
    "version": "Print ptlint's version.",
}


class Failure(Exception):
    """A usage, config or internal error: one line on stderr, exit 2."""


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        code = run(argv)
        if not sys.stdout.closed:  # the language server's stream may be
            sys.stdout.flush()  # here, not at exit, where a closed pipe could not be answered
    except (Failure, OutputError) as exc:
        print(f"ptlint: error: {exc}", file=sys.stderr)
        code = EXIT_ERROR
    except BrokenPipeError:
        code = _closed_pipe()
    except KeyboardInterrupt:
        print("ptlint: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)


def _closed_pipe() -> int:
    """The reader of standard output went away (`ptlint check | head`): stop quietly, as ruff
    does. Standard output goes to /dev/null, so that flushing it at exit cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_CLEAN


def run(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return EXIT_CLEAN if argv else EXIT_ERROR
    if argv[0] in ("--version", "-V"):
        return command_version([])
    command, rest = argv[0], argv[1:]
    handlers: dict[str, Callable[[list[str]], int]] = {
        "check": command_check, "fix": command_fix, "explain": command_explain, "rule": command_rule,
        "lsp": command_lsp, "server": lambda rest: command_lsp(rest, "server"), "clean": command_clean,
        "version": command_version}
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


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not more than 0")
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


class _Parser(argparse.ArgumentParser):
    """argparse with ptlint's error line: the usage, then `ptlint: error: ...`, exit 2 (every
    command alike)."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"ptlint: error: {message}\n")


def _new_parser(command: str, description: str | None = None) -> _Parser:
    return _Parser(prog=f"ptlint {command}", description=description or COMMANDS[command], allow_abbrev=False,
                   formatter_class=_Formatter)


def _switch(parser: argparse.ArgumentParser, name: str, help: str, short: str | None = None,
            negative_help: str | None = None) -> None:
    """`--name` / `--no-name` (the later wins), None when neither is given."""
    dest = name.replace("-", "_")
    flags = [f"--{name}"] + ([short] if short else [])
    parser.add_argument(*flags, dest=dest, action="store_true", default=None, help=help)
    parser.add_argument(f"--no-{name}", dest=dest, action="store_false", help=negative_help or argparse.SUPPRESS)


def _parser(command: str) -> _Parser:
    parser = _new_parser(command)
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="Files, folders or notebooks (default: the current folder); `-` reads standard input.")
    add = parser.add_argument
    add("--select", help="Comma list of codes or prefixes to enable (PTL = all); replaces the config's.")
    add("--extend-select", help="Codes or prefixes to enable in addition.")
    add("--ignore", help="Comma list of codes or prefixes to disable (other linters' codes are skipped).")
    add("--output-format", choices=FORMATS, default=None,
        help="How findings are printed (default: full; concise for fix --apply).")
    add("--output-file", "-o", metavar="FILE", help="Write the output to FILE instead of standard output.")
    add("--color", choices=COLOR_CHOICES, default="auto",
        help="Colour the text formats: auto (a terminal, unless NO_COLOR is set), always, never.")
    add("--config", action="append", default=[], metavar="FILE | KEY=VALUE",
        help="A pyproject.toml to use for every file instead of each file's nearest one, or a `key = value` "
             "of [tool.ptlint] that overrides the config (TOML; may repeat): --config \"select = ['PTL1']\".")
    add("--isolated", action="store_true", help="Ignore every configuration file.")
    add("--stdin-filename", metavar="PATH",
        help="Read the source from standard input and check it as if it were PATH (config, notebook or not).")
    _switch(parser, "force-exclude", "Apply `exclude` also to paths named on the command line (as pre-commit "
                                     "passes them).")
    _switch(parser, "respect-gitignore", "Skip what .gitignore, .git/info/exclude and the global git excludes "
                                         "ignore (the default).", negative_help="Walk what git ignores too.")
    add("--no-cache", "-n", action="store_true", help="Neither read nor write the cache.")
    add("--cache-dir", help="Cache folder (default .ptlint_cache/ beside the config; or $PTLINT_CACHE_DIR).")
    add("--exit-zero", "-e", action="store_true", help="Exit 0 even when there are findings.")
    add("--statistics", action="store_true", help="Print a count per rule instead of each finding (text or json).")
    add("--jobs", "-j", type=_positive, default=None, help="Worker processes (default: all cores).")
    add("--quiet", "-q", action="store_true", help="Print findings only, no summary.")
    add("--silent", "-s", action="store_true", help="Print nothing (errors excepted); only the exit code tells.")
    if command == "check":
        add("--dynamic", action="store_true", help="Also run the dynamic targets of [tool.ptlint.dynamic].")
        _switch(parser, "unsafe-fixes", "Count unsafe fixes as available (and apply them with --fix).")
        _switch(parser, "fix", "Apply the fixes, then report what remains.")
        _switch(parser, "fix-only", "Apply the fixes and report nothing else.")
        add("--diff", action="store_true", help="Print the diff of the fixes instead of writing them (exit 1 when "
                                                "something would change).")
        _switch(parser, "show-fixes", "With --fix or --fix-only, list what was fixed, per file and rule.")
        add("--exit-non-zero-on-fix", action="store_true", help="Exit 1 when something was fixed, even if no "
                                                                "finding remains.")
        add("--add-noqa", action="store_true", help="Add `# noqa: CODE` to every line with a finding.")
        add("--watch", "-w", action="store_true", help="Check again whenever a file changes.")
        add("--show-files", action="store_true", help="List the files that would be checked, and stop.")
        add("--show-settings", action="store_true", help="Print the settings of the first file, and stop.")
    else:
        add("--apply", action="store_true", help="Write the fixes (default: print the diff).")
        _switch(parser, "unsafe-fixes", "Also apply fixes that may change behaviour.")
        add("--diff", dest="show_diff", action="store_true", help="With --apply, also print the diff.")
    return parser


def _resolver(args: argparse.Namespace) -> Resolver:
    """The settings the options ask for: `--config` is a file (one at most) or a `key = value`."""
    from ptlint.run.config import parse_override

    files, overrides = [], []
    try:
        for value in args.config:
            if os.path.isfile(value):
                files.append(value)
            elif "=" in value:
                overrides.append(parse_override(value))
            else:
                raise Failure(f"--config {value!r}: no such file, and not a TOML `key = value` pair")
        if len(files) > 1:
            raise Failure(f"--config: one config file at most (got {', '.join(files)})")
        if files and args.isolated:
            raise Failure("--isolated ignores every config file: it cannot be combined with --config FILE")
        return Resolver(files[0] if files else None, select=args.select, ignore=args.ignore,
                        extend_select=args.extend_select, unsafe_fixes=args.unsafe_fixes,
                        force_exclude=args.force_exclude, respect_gitignore=args.respect_gitignore,
                        isolated=args.isolated, overrides=overrides)
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


def _output(args: argparse.Namespace) -> Output:
    if args.statistics and (args.output_format or "full") not in STATISTICS_FORMATS:
        raise Failure(f"--statistics prints text or JSON, not {args.output_format}")
    return Output(args.output_file, args.color, silent=args.silent)


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
        self.caches = None
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

    def warn(self) -> None:
        """Other linters' codes in the selectors: one line each, once."""
        report_errors([f"warning: {message}" for message in self.resolver.warnings])

    def check(self) -> list[Finding]:
        from ptlint.run.progress import Progress
        from ptlint.run.project import check_project

        if not self.args.no_cache and self.stdin_name is None:
            from ptlint.run.cache import Caches

            self.caches = Caches(self.args.cache_dir)  # fix reads the check's findings back from it
        with Progress(len(self.jobs)) as progress:
            results = check_project(self.jobs, self.caches, workers=self.args.jobs, progress=progress.update,
                                    given=list(self.args.paths or ["."]))
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
    exclusive = [name for name in ("add_noqa", "diff", "show_files", "show_settings") if getattr(args, name)]
    if len(exclusive) > 1 or (exclusive and (args.fix or args.fix_only) and exclusive != ["diff"]):
        chosen = exclusive + [name for name in ("fix", "fix_only") if getattr(args, name)]
        raise Failure(f"{' and '.join('--' + name.replace('_', '-') for name in chosen)} cannot be combined")
    if args.watch:
        if STDIN in args.paths or args.stdin_filename or exclusive:
            raise Failure("--watch checks files on disk: not with standard input, --add-noqa, --diff or --show-*")
        from ptlint.front.watch import watch

        return watch(args.paths or ["."], lambda: _check_watched(args))
    return _check_once(args)


def _check_watched(args: argparse.Namespace) -> None:
    """One check of `--watch`: an error is one line, and the watch goes on."""
    try:
        _check_once(args)
    except (Failure, OutputError) as exc:
        print(f"ptlint: error: {exc}", file=sys.stderr, flush=True)


def _check_once(args: argparse.Namespace) -> int:
    run = Run(args)
    if args.show_files:
        return _show_files(run)
    if args.show_settings:
        return _show_settings(run)
    out = _output(args)
    findings = run.check()
    if args.add_noqa:
        return _add_noqa(run, findings)
    if args.fix or args.fix_only or args.diff:
        return _check_and_fix(run, findings, out)
    if args.dynamic:
        dynamic_findings, dynamic_errors = _dynamic(run, findings)
        findings = sorted(findings + dynamic_findings, key=Finding.sort_key)
        run.errors += dynamic_errors
        run.failed = run.failed or bool(dynamic_errors)
    run.warn()
    report_errors(run.errors)
    emit(findings, args.output_format or "full", args.statistics, run.unsafe_fixes(), args.quiet,
         unchecked=len(run.errors), out=out, sources=run.sources)
    out.close()
    if run.failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _check_and_fix(run: Run, findings: list[Finding], out: Output) -> int:
    """ruff's `check --fix` (write, then report what remains), `--fix-only` (write, report
    nothing else) and `--diff` (write nothing: the diff, and what would be fixed)."""
    from ptlint.run.fix import fix_jobs

    args = run.args
    if run.stdin_name is not None and not args.diff:
        return _fix_stdin(run, findings, out)
    outcome = fix_jobs(run.jobs, findings, write=not args.diff, caches=run.caches)
    run.errors += outcome.errors
    failed = run.failed or bool(outcome.errors)
    run.warn()
    report_errors(run.errors)
    report_errors(outcome.messages)
    fixed = outcome.applied
    noun = "finding" if outcome.fixed == 1 else "findings"
    if args.diff:
        out.write(_color_diff(outcome.diff, out.style))
        if outcome.fixed and not args.quiet:
            out.write(f"\nWould fix {outcome.fixed} {noun}.\n")
        code = EXIT_FINDINGS if outcome.changed else EXIT_CLEAN
    elif args.fix_only:
        out.write(fixes_summary(fixed, out.style) if args.show_fixes else "")
        if outcome.fixed and not args.quiet:
            out.write(f"Fixed {outcome.fixed} {noun}.\n")
        code = EXIT_FINDINGS if args.exit_non_zero_on_fix and outcome.fixed else EXIT_CLEAN
    else:
        remaining = outcome.remaining
        emit(remaining, args.output_format or "full", args.statistics, run.unsafe_fixes(), args.quiet,
             unchecked=len(run.errors), out=out, sources=run.sources, fixed=fixed, show_fixes=bool(args.show_fixes))
        code = EXIT_FINDINGS if (remaining and not args.exit_zero) or (args.exit_non_zero_on_fix and fixed) \
            else EXIT_CLEAN
    out.close()
    return EXIT_ERROR if failed else code


def _show_files(run: Run) -> int:
    """`--show-files`: the files a check would read, sorted."""
    run.warn()
    report_errors(run.errors)
    for path in sorted(job.path for job in run.jobs):
        print(path)
    return EXIT_ERROR if run.failed else EXIT_CLEAN


def _show_settings(run: Run) -> int:
    """`--show-settings`: the settings of the first file (ruff's), as TOML-like lines."""
    import json

    report_errors(run.errors)
    if run.jobs:
        path, settings = run.jobs[0].path, run.jobs[0].settings
    else:
        path = (run.args.paths or ["."])[0]
        try:
            settings = run.resolver.settings_for(path)
        except ConfigError as exc:
            raise Failure(str(exc)) from None
    run.warn()
    values = {"config": settings.config_path, "root": settings.root, "enabled": list(settings.enabled),
              "exclude": list(settings.exclude), "per-file-ignores": dict(settings.per_file_ignores),
              "test-code": list(settings.test_code), "unsafe-fixes": settings.unsafe_fixes,
              "force-exclude": settings.force_exclude, "respect-gitignore": settings.respect_gitignore,
              "cache-dir": settings.cache_dir, "dynamic": settings.dynamic}
    print(f"Resolved settings for: {path}")
    for key, value in values.items():
        print(f"{key} = {json.dumps(value)}")
    return EXIT_ERROR if run.failed else EXIT_CLEAN


def _add_noqa(run: Run, findings: list[Finding]) -> int:
    """`--add-noqa`: `# noqa: CODE` on every line with a finding; exit 0 unless something failed."""
    from ptlint.run.noqa import add_noqa

    if run.stdin_name is not None:
        raise Failure("--add-noqa writes files: it cannot read standard input")
    outcome = add_noqa(run.jobs, findings)
    run.warn()
    report_errors(run.errors + outcome.errors + outcome.messages)
    if not run.args.silent:
        noun = "directive" if outcome.added == 1 else "directives"
        print(f"Added {outcome.added} noqa {noun}.", file=sys.stderr)
    return EXIT_ERROR if run.failed or outcome.errors else EXIT_CLEAN


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
    out = _output(args)
    findings = run.check()
    if run.stdin_name is not None:
        return _fix_stdin(run, findings, out)
    outcome = fix_jobs(run.jobs, findings, write=args.apply, caches=run.caches)
    run.errors += outcome.errors
    failed = run.failed or bool(outcome.errors)
    run.warn()
    report_errors(run.errors)
    if not args.apply or args.show_diff:
        out.write(_color_diff(outcome.diff, out.style))
    report_errors(outcome.messages)
    talk = not args.silent and (run.jobs or not failed)  # nothing was checked at all: the error said it
    if args.apply:
        remaining = outcome.remaining
        if remaining and not args.quiet:
            emit(remaining, args.output_format or "concise", args.statistics, run.unsafe_fixes(), quiet=True,
                 out=out, sources=run.sources)
        out.close()
        if talk:
            print(f"Fixed {outcome.fixed} finding(s) in {len(outcome.changed)} file(s); "
                  f"{len(remaining)} remaining.", file=sys.stderr)
        if failed:
            return EXIT_ERROR
        return EXIT_FINDINGS if remaining and not args.exit_zero else EXIT_CLEAN
    out.close()
    if talk and not args.quiet:
        would = len(outcome.changed)
        print(f"{outcome.fixed} fix(es) would change {would} file(s); run `{_apply_command(argv)}` to write them."
              if would else "Nothing to fix.", file=sys.stderr)
    if failed:
        return EXIT_ERROR
    return EXIT_FINDINGS if outcome.changed and not args.exit_zero else EXIT_CLEAN


def _apply_command(argv: list[str]) -> str:
    """The command that writes what this `ptlint fix` showed: the same arguments (paths, selection,
    --unsafe-fixes, config), with --apply."""
    import shlex

    return shlex.join(["ptlint", "fix", "--apply", *argv])


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
    run.warn()
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
    if remaining and not run.args.quiet and not run.args.silent:
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


# -- explain -----------------------------------------------------------------------------------

def command_explain(argv: list[str]) -> int:
    from ptlint.dynamic.runner import DEFAULT_TIMEOUT

    parser = _new_parser("explain", COMMANDS["explain"] + " TARGET is path/to/file.py:factory or "
                         "package.module:factory; the factory takes no arguments (or an optional `device`) and "
                         "returns (fn_or_module, args) or (fn_or_module, [args, ...]). Without TARGETs, the "
                         "targets of [tool.ptlint.dynamic] run.")
    add = parser.add_argument
    add("targets", nargs="*", metavar="TARGET", help="Entry points; with --script, the script's arguments (after `--`).")
    add("--script", metavar="FILE",
        help="Run this whole script (arguments after `--`), observing every region it compiles.")
    add("--timeout", type=_seconds, default=None,
        help=f"Seconds each target may run before it is killed (default {DEFAULT_TIMEOUT:g}, or the config's).")
    add("--device", choices=("auto", "cpu", "cuda"), default=None,
        help="Passed to factories that take a `device` argument (auto: cuda when available).")
    add("--output-format", choices=FORMATS, default="full", help="How findings are printed.")
    add("--config", dest="config_file", metavar="FILE", help="Read [tool.ptlint.dynamic] from this pyproject.toml.")
    add("--syncs", action="store_true", default=None,
        help="Also run each target eagerly under a sanitizer that reports host-device syncs (PTL452).")
    add("--quiet", "-q", action="store_true", help="Print findings only, no summary.")
    # options may come between targets; everything after `--` is a target (a script's arguments)
    rest = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_intermixed_args(argv[:rest])
    args.targets += argv[rest + 1:]
    if args.config_file is not None and not os.path.isfile(args.config_file):
        raise Failure(f"{args.config_file}: config file not found")
    if args.script is not None and not os.path.isfile(args.script):
        raise Failure(f"{args.script}: no such file")
    from ptlint.dynamic.command import ExplainError, explain

    try:
        return explain(args.targets, script=args.script, timeout=args.timeout, device=args.device,
                       output_format=args.output_format, config_file=args.config_file, syncs=args.syncs,
                       quiet=args.quiet)
    except ExplainError as exc:
        raise Failure(str(exc)) from None


# -- rule, lsp, clean, version -----------------------------------------------------------------

def command_rule(argv: list[str]) -> int:
    parser = _new_parser("rule")
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


def command_lsp(argv: list[str], name: str = "lsp") -> int:
    _new_parser(name).parse_args(argv)
    try:
        from ptlint.front.lsp import serve
    except ImportError as exc:
        raise Failure(f"the language server needs pygls: pip install \"ptlint[lsp]\" ({exc})") from None
    serve()
    return EXIT_CLEAN


def command_clean(argv: list[str]) -> int:
    parser = _new_parser("clean")
    parser.add_argument("--verbose", "-v", action="store_true", help="Name each cache folder removed.")
    args = parser.parse_args(argv)
    from ptlint.run.clean import clean

    removed, warnings = clean(".")
    if args.verbose:
        for folder in removed:
            print(f"Removing cache at: {os.path.relpath(folder)}", file=sys.stderr)
    report_errors([f"warning: {message}" for message in warnings])
    return EXIT_CLEAN


def command_version(argv: list[str]) -> int:
    _new_parser("version").parse_args(argv)
    print(f"ptlint {__version__}")
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    main()
