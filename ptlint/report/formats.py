"""Printing findings: full (source with a caret under the span), concise, json, sarif, github.

A finding in a notebook is printed `nb.ipynb:cell 3:7:15: PTL101 ...` (line and column in the
cell); under a finding with an evidence chain, `full` shows it on one line (`= runs per step:
train.py:88 for batch in loader -> train.py:90 calls train_step`). Colour is for terminals only:
`Style` decides it once, and the machine formats never use it.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import Callable, TextIO

from ptlint.engine.finding import SAFE, UNSAFE, Finding, applicable
from ptlint.engine.registry import help_for
from ptlint.report.sources import Sources

FORMATS = ("full", "concise", "json", "sarif", "github")
HUMAN_FORMATS = ("full", "concise")
STATISTICS_FORMATS = (*HUMAN_FORMATS, "json")  # --statistics as text, or as JSON (ruff's shape)
COLOR_CHOICES = ("auto", "always", "never")


class Style:
    """ANSI colours (ruff's palette), or none at all."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled

    def _wrap(self, text: str, codes: str) -> str:
        return f"\x1b[{codes}m{text}\x1b[0m" if self.enabled and text.strip() else text

    def path(self, text: str) -> str:
        return self._wrap(text, "1")

    def punct(self, text: str) -> str:
        return self._wrap(text, "36")

    def code(self, text: str) -> str:
        return self._wrap(text, "1;31")

    def marker(self, text: str) -> str:
        return self._wrap(text, "36")

    def gutter(self, text: str) -> str:
        return self._wrap(text, "1;34")

    def caret(self, text: str) -> str:
        return self._wrap(text, "1;31")

    def help(self, text: str) -> str:
        return self._wrap(text, "1;36")


PLAIN = Style(False)


def use_color(choice: str, stream) -> bool:
    """--color always/never win; auto: a terminal, unless NO_COLOR is set (no-color.org) or TERM=dumb."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def location(finding: Finding) -> str:
    """`path:line:column`, or `path:cell N:line:column` in a notebook."""
    cell = finding.cell
    where = f"cell {cell}:" if cell is not None else ""
    return f"{finding.path}:{where}{finding.line}:{finding.column}"


def fix_marker(finding: Finding, unsafe_fixes: bool | dict[str, bool]) -> str:
    if applicable(finding, unsafe_fixes):
        return "[*]"
    if finding.fix:
        return "[-]"  # fixable only with --unsafe-fixes
    return ""


def _headline(finding: Finding, unsafe_fixes: bool, style: Style) -> str:
    cell = finding.cell
    colon = style.punct(":")
    parts = [style.path(finding.path)]
    if cell is not None:
        parts.append(f"cell {cell}")
    parts += [str(finding.line), str(finding.column)]
    marker = fix_marker(finding, unsafe_fixes)
    marker = " " + style.marker(marker) if marker else ""
    return f"{colon.join(parts)}{colon} {style.code(finding.code)}{marker} {finding.message}\n"


def format_concise(findings: list[Finding], unsafe_fixes: bool = False, style: Style = PLAIN,
                   sources: Sources | None = None) -> str:
    return "".join(_headline(f, unsafe_fixes, style) for f in findings)


def format_full(findings: list[Finding], unsafe_fixes: bool = False, style: Style = PLAIN,
                sources: Sources | None = None) -> str:
    """ruff/rustc style: the location, the message, the source line and carets under the span,
    then the evidence chain of where it runs (when there is one), what to change (`help:`) and
    the fix, when there is one."""
    sources = sources or Sources()
    out: list[str] = []
    for finding in findings:
        out.append(_headline(finding, unsafe_fixes, style))
        lines = sources.lines(finding.path, finding.cell)
        if lines is None or not (1 <= finding.line <= len(lines)):
            out.append(_notes(finding, "", style) + "\n")
            continue
        text = lines[finding.line - 1].expandtabs(1)
        start = finding.column - 1
        end = finding.end_column - 1 if finding.end_line == finding.line else len(text)
        width = len(str(finding.line))
        gutter = " " * width
        bar = style.gutter("|")
        caret = " " * start + style.caret("^" * max(1, end - start) + " " + finding.code)
        out.append(f"{gutter} {bar}\n{style.gutter(str(finding.line))} {bar} {text}\n{gutter} {bar} {caret}\n")
        out.append(_notes(finding, gutter + " ", style) + "\n")
    return "".join(out)


def _notes(finding: Finding, indent: str, style: Style) -> str:
    """`= runs per step: <the evidence chain>` when the finding has one, `= help: what to change`,
    and `= fix: ... (Safe fix)` when the finding has a fix."""
    out = ""
    if finding.via:
        from ptlint.report.evidence import via_chain, via_label

        out += f"{indent}{style.gutter('=')} {style.help(via_label(finding))}: {via_chain(finding)}\n"
    help_text = help_for(finding)
    if help_text:
        out += f"{indent}{style.gutter('=')} {style.help('help')}: {help_text}\n"
    if finding.fix:
        label = "Safe fix" if finding.fix.applicability == SAFE else "Unsafe fix"
        out += f"{indent}{style.gutter('=')} {style.help('fix')}: {finding.fix.message} ({label})\n"
    return out


def format_json(findings: list[Finding], unsafe_fixes: bool = False, style: Style = PLAIN,
                sources: Sources | None = None) -> str:
    import json

    return json.dumps([{**f.to_json(), "help": help_for(f)} for f in findings], indent=2) + "\n"


def summary(findings: list[Finding], unsafe_fixes: bool, style: Style = PLAIN, fixed: int = 0) -> str:
    """`Found 3 findings. 1 fixable with `ptlint fix --apply` (1 more with --unsafe-fixes).`;
    after `check --fix`, `Found 3 findings (2 fixed, 1 remaining).`"""
    if not findings and not fixed:
        return "All checks passed!\n"
    safe = sum(1 for f in findings if applicable(f, unsafe_fixes))
    unsafe_only = sum(1 for f in findings if f.fix and f.fix.applicability == UNSAFE and not applicable(f, unsafe_fixes))
    total = len(findings) + fixed
    noun = "finding" if total == 1 else "findings"
    text = f"Found {total} {noun}" + (f" ({fixed} fixed, {len(findings)} remaining)." if fixed else ".")
    if safe:
        flag = " --unsafe-fixes" if unsafe_fixes is True else ""
        text += f"\n{style.marker('[*]')} {safe} fixable with `ptlint fix --apply{flag}`."
    if unsafe_only:
        text += f"\n{style.marker('[-]')} {unsafe_only} more fixable with `ptlint fix --apply --unsafe-fixes`."
    return text + "\n"


def fixes_summary(fixed: list[Finding], style: Style = PLAIN) -> str:
    """ruff's `--show-fixes`: what was fixed, per file and rule."""
    if not fixed:
        return ""
    counts: dict[str, Counter] = {}
    names = {}
    for finding in fixed:
        counts.setdefault(finding.path, Counter())[finding.code] += 1
        names[finding.code] = finding.name
    noun = "finding" if len(fixed) == 1 else "findings"
    lines = [f"\nFixed {len(fixed)} {noun}:"]
    for path in sorted(counts):
        lines.append(f"- {style.path(path)}:")
        for code, count in sorted(counts[path].items()):
            lines.append(f"    {count} × {style.code(code)} ({names[code]})")
    return "\n".join(lines) + "\n\n"


def statistics(findings: list[Finding], unsafe_fixes: bool = False, style: Style = PLAIN) -> str:
    """A count per rule, marked like the findings: [*] some fixable now, [-] only with --unsafe-fixes."""
    lines = []
    for code, name, count, marker, _ in _counts(findings, unsafe_fixes):
        lines.append(f"{count:>6}  {style.code(code)}  {style.marker(marker)} {name}\n")
    return "".join(lines)


def statistics_json(findings: list[Finding], unsafe_fixes: bool = False) -> str:
    """`--statistics --output-format json`, in ruff's shape."""
    import json

    return json.dumps([{"code": code, "name": name, "count": count, "fixable": fixable > 0, "fixable_count": fixable}
                       for code, name, count, _, fixable in _counts(findings, unsafe_fixes)], indent=2) + "\n"


def _counts(findings: list[Finding], unsafe_fixes: bool) -> list[tuple[str, str, int, str, int]]:
    """(code, name, count, marker, fixable count) per rule, the most frequent first."""
    counts = Counter((f.code, f.name) for f in findings)
    markers: dict[str, set[str]] = {}
    fixable: Counter = Counter()
    for finding in findings:
        markers.setdefault(finding.code, set()).add(fix_marker(finding, unsafe_fixes))
        fixable[finding.code] += applicable(finding, unsafe_fixes)
    rows = []
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        seen = markers[code]
        marker = "[*]" if "[*]" in seen else "[-]" if "[-]" in seen else "   "
        rows.append((code, name, count, marker, fixable[code]))
    return rows


def formatter(name: str) -> Callable[..., str]:
    if name == "sarif":
        from ptlint.report.sarif import format_sarif
        return format_sarif
    if name == "github":
        from ptlint.report.sarif import format_github
        return format_github
    return {"full": format_full, "concise": format_concise, "json": format_json}[name]


class OutputError(Exception):
    """The output file cannot be written."""


class Output:
    """Standard output or --output-file (written once, at the end), and whether to colour it;
    `silent`: nothing at all (`--silent`)."""

    def __init__(self, path: str | None, color: str, silent: bool = False) -> None:
        self.path = path
        self.silent = silent
        self.parts: list[str] = []
        self.style = Style(use_color(color, sys.stdout) if path is None else color == "always")

    def write(self, text: str) -> None:
        if not text or self.silent:
            return
        if self.path is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            self.parts.append(text)

    def close(self) -> None:
        if self.path is None or self.silent:
            return
        try:
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, exist_ok=True)
            with open(self.path, "w", encoding="utf-8") as handle:
                handle.write("".join(self.parts))
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot write the output file: {exc.strerror or exc}") from None


def emit(findings: list[Finding], output_format: str, show_statistics: bool, unsafe_fixes: bool | dict,
         quiet: bool = False, unchecked: int = 0, out: Output | TextIO | None = None, sources: Sources | None = None,
         fixed: list[Finding] | None = None, show_fixes: bool = False) -> None:
    """Print findings in the chosen format; the summary goes with the human formats only.
    `unsafe_fixes`: a bool, or per path (files under different configs may differ). `fixed`:
    what `check --fix` fixed (counted in the summary; listed with `show_fixes`)."""
    stream = out if out is not None else Output(None, "auto")
    style = getattr(stream, "style", PLAIN)
    unsafe = unsafe_fixes
    if show_statistics:
        if output_format not in STATISTICS_FORMATS:
            raise OutputError(f"--statistics prints text or JSON, not {output_format}")
        stream.write(statistics_json(findings, unsafe) if output_format == "json" else statistics(findings, unsafe, style))
        return
    stream.write(formatter(output_format)(findings, unsafe, style=style, sources=sources))
    if output_format not in HUMAN_FORMATS:
        return
    if show_fixes:
        stream.write(fixes_summary(fixed or [], style))
    if not quiet:
        if unchecked and not findings:
            stream.write(f"No findings in the files that were checked; {unchecked} path(s) could not be checked.\n")
        else:
            stream.write(summary(findings, unsafe, style, len(fixed or [])))
