"""Printing findings: full (source with a caret under the span), concise, json, sarif, github.

A finding in a notebook is printed `nb.ipynb:cell 3:7:15: PTL101 ...` (line and column in the
cell). Colour is for terminals only: `Style` decides it once, and the machine formats never use it.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Callable

from .rule import SAFE, UNSAFE, Finding
from .source import SourceError, decode_source, is_notebook, read_bytes

FORMATS = ("full", "concise", "json", "sarif", "github")
HUMAN_FORMATS = ("full", "concise")
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


class Sources:
    """The text of the files findings point into, read once each; standard input is given."""

    def __init__(self, given: dict[str, bytes] | None = None) -> None:
        self.given = dict(given or {})
        self._lines: dict[tuple[str, int | None], list[str] | None] = {}
        self._notebooks: dict[str, object] = {}

    def data(self, path: str) -> bytes | None:
        if path in self.given:
            return self.given[path]
        try:
            return read_bytes(path)
        except SourceError:
            return None

    def notebook(self, path: str):
        """The parsed notebook at `path`, or None."""
        if path not in self._notebooks:
            from .notebook import read_notebook

            data = self.data(path)
            try:
                self._notebooks[path] = read_notebook(data, path) if data is not None else None
            except SourceError:
                self._notebooks[path] = None
        return self._notebooks[path]

    def lines(self, path: str, cell: int | None) -> list[str] | None:
        key = (path, cell)
        if key not in self._lines:
            text = None
            if cell is not None:
                notebook = self.notebook(path)
                found = notebook.cell(cell) if notebook is not None else None
                text = found.source if found is not None else None
            elif not is_notebook(path):
                data = self.data(path)
                try:
                    text = decode_source(data, path).text if data is not None else None
                except SourceError:
                    text = None
            self._lines[key] = _split(text) if text is not None else None
        return self._lines[key]


def _split(text: str) -> list[str]:
    from .source import SourceFile

    source = SourceFile("", text)
    return [source.line(number) for number in range(1, len(source.line_starts) + 1)]


def cell_of(finding: Finding) -> int | None:
    """The notebook cell a finding is in (1-based among all cells), or None outside notebooks."""
    cell = finding.extra.get("cell")
    return cell if isinstance(cell, int) else None


def location(finding: Finding) -> str:
    """`path:line:column`, or `path:cell N:line:column` in a notebook."""
    cell = cell_of(finding)
    where = f"cell {cell}:" if cell is not None else ""
    return f"{finding.path}:{where}{finding.line}:{finding.column}"


def sort_key(finding: Finding) -> tuple:
    return (finding.path, cell_of(finding) or 0, finding.line, finding.column, finding.code)


# `unsafe_fixes` below: one answer for the run (--unsafe-fixes), or one per file path (each
# file's config may say `unsafe-fixes = true`).

def unsafe_for(unsafe_fixes: bool | dict[str, bool], finding: Finding) -> bool:
    if isinstance(unsafe_fixes, dict):
        return unsafe_fixes.get(finding.path, False)
    return bool(unsafe_fixes)


def applicable(finding: Finding, unsafe_fixes: bool | dict[str, bool]) -> bool:
    """True when `ptlint fix --apply` (with --unsafe-fixes when given) would fix it."""
    return finding.fix is not None and (finding.fix.applicability == SAFE or unsafe_for(unsafe_fixes, finding))


def fix_marker(finding: Finding, unsafe_fixes: bool | dict[str, bool]) -> str:
    if applicable(finding, unsafe_fixes):
        return "[*]"
    if finding.fix:
        return "[-]"  # fixable only with --unsafe-fixes
    return ""


def _headline(finding: Finding, unsafe_fixes: bool, style: Style) -> str:
    cell = cell_of(finding)
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
    """ruff/rustc style: the location, the message, the source line and carets under the span."""
    sources = sources or Sources()
    out: list[str] = []
    for finding in findings:
        out.append(_headline(finding, unsafe_fixes, style))
        lines = sources.lines(finding.path, cell_of(finding))
        if lines is None or not (1 <= finding.line <= len(lines)):
            out.append("\n")
            continue
        text = lines[finding.line - 1].expandtabs(1)
        start = finding.column - 1
        end = finding.end_column - 1 if finding.end_line == finding.line else len(text)
        width = len(str(finding.line))
        gutter = " " * width
        bar = style.gutter("|")
        caret = " " * start + style.caret("^" * max(1, end - start) + " " + finding.code)
        out.append(f"{gutter} {bar}\n{style.gutter(str(finding.line))} {bar} {text}\n{gutter} {bar} {caret}\n")
        if finding.fix:
            label = "Safe fix" if finding.fix.applicability == SAFE else "Unsafe fix"
            out.append(f"{gutter} {style.gutter('=')} {style.help('help')}: {finding.fix.message} ({label})\n")
        out.append("\n")
    return "".join(out)


def format_json(findings: list[Finding], unsafe_fixes: bool = False, style: Style = PLAIN,
                sources: Sources | None = None) -> str:
    import json

    return json.dumps([f.to_json() for f in findings], indent=2) + "\n"


def summary(findings: list[Finding], unsafe_fixes: bool, style: Style = PLAIN) -> str:
    """`Found 3 findings. 1 fixable with `ptlint fix --apply` (1 more with --unsafe-fixes).`"""
    if not findings:
        return "All checks passed!\n"
    safe = sum(1 for f in findings if applicable(f, unsafe_fixes))
    unsafe_only = sum(1 for f in findings if f.fix and f.fix.applicability == UNSAFE and not applicable(f, unsafe_fixes))
    noun = "finding" if len(findings) == 1 else "findings"
    text = f"Found {len(findings)} {noun}."
    if safe:
        flag = " --unsafe-fixes" if unsafe_fixes is True else ""
        text += f"\n{style.marker('[*]')} {safe} fixable with `ptlint fix --apply{flag}`."
    if unsafe_only:
        text += f"\n{style.marker('[-]')} {unsafe_only} more fixable with `ptlint fix --apply --unsafe-fixes`."
    return text + "\n"


def statistics(findings: list[Finding], unsafe_fixes: bool = False, style: Style = PLAIN) -> str:
    """A count per rule, marked like the findings: [*] some fixable now, [-] only with --unsafe-fixes."""
    counts = Counter((f.code, f.name) for f in findings)
    markers: dict[str, set[str]] = {}
    for finding in findings:
        markers.setdefault(finding.code, set()).add(fix_marker(finding, unsafe_fixes))
    lines = []
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        seen = markers[code]
        marker = "[*]" if "[*]" in seen else "[-]" if "[-]" in seen else "   "
        lines.append(f"{count:>6}  {style.code(code)}  {style.marker(marker)} {name}\n")
    return "".join(lines)


def formatter(name: str) -> Callable[..., str]:
    if name == "sarif":
        from .sarif import format_sarif
        return format_sarif
    if name == "github":
        from .sarif import format_github
        return format_github
    return {"full": format_full, "concise": format_concise, "json": format_json}[name]
