"""Printing findings: full (source with a caret under the span), concise, json, sarif, github."""

from __future__ import annotations

import json
from collections import Counter
from typing import Callable

from .rule import SAFE, UNSAFE, Finding
from .source import SourceError, read_source

FORMATS = ("full", "concise", "json", "sarif", "github")


def fix_marker(finding: Finding, unsafe_fixes: bool) -> str:
    if finding.fix and (finding.fix.applicability == SAFE or unsafe_fixes):
        return " [*]"
    if finding.fix:
        return " [-]"  # fixable only with --unsafe-fixes
    return ""


def format_concise(findings: list[Finding], unsafe_fixes: bool = False) -> str:
    return "".join(
        f"{f.path}:{f.line}:{f.column}: {f.code}{fix_marker(f, unsafe_fixes)} {f.message}\n" for f in findings)


def format_full(findings: list[Finding], unsafe_fixes: bool = False) -> str:
    """ruff/rustc style: the location, the message, the source line and carets under the span."""
    out: list[str] = []
    sources: dict[str, list[str] | None] = {}
    for finding in findings:
        out.append(f"{finding.path}:{finding.line}:{finding.column}: {finding.code}"
                   f"{fix_marker(finding, unsafe_fixes)} {finding.message}\n")
        lines = _lines(finding.path, sources)
        if lines is None or not (1 <= finding.line <= len(lines)):
            out.append("\n")
            continue
        text = lines[finding.line - 1].expandtabs(1)
        start = finding.column - 1
        end = finding.end_column - 1 if finding.end_line == finding.line else len(text)
        width = len(str(finding.line))
        gutter = " " * width
        caret = " " * start + "^" * max(1, end - start)
        out.append(f"{gutter} |\n{finding.line} | {text}\n{gutter} | {caret} {finding.code}\n")
        if finding.fix:
            label = "Safe fix" if finding.fix.applicability == SAFE else "Unsafe fix"
            out.append(f"{gutter} = help: {finding.fix.message} ({label})\n")
        out.append("\n")
    return "".join(out)


def _lines(path: str, cache: dict[str, list[str] | None]) -> list[str] | None:
    if path not in cache:
        try:
            source = read_source(path)
            cache[path] = [source.line(n) for n in range(1, len(source.line_starts) + 1)]
        except SourceError:
            cache[path] = None
    return cache[path]


def format_json(findings: list[Finding], unsafe_fixes: bool = False) -> str:
    return json.dumps([f.to_json() for f in findings], indent=2) + "\n"


def summary(findings: list[Finding], unsafe_fixes: bool) -> str:
    """`Found 3 findings. 1 fixable with `ptlint fix --apply` (1 more with --unsafe-fixes).`"""
    if not findings:
        return "All checks passed!\n"
    safe = sum(1 for f in findings if f.fix and (f.fix.applicability == SAFE or unsafe_fixes))
    unsafe_only = sum(1 for f in findings if f.fix and f.fix.applicability == UNSAFE and not unsafe_fixes)
    noun = "finding" if len(findings) == 1 else "findings"
    text = f"Found {len(findings)} {noun}."
    if safe:
        flag = " --unsafe-fixes" if unsafe_fixes else ""
        text += f"\n[*] {safe} fixable with `ptlint fix --apply{flag}`."
    if unsafe_only:
        text += f"\n[-] {unsafe_only} more fixable with `ptlint fix --apply --unsafe-fixes`."
    return text + "\n"


def statistics(findings: list[Finding]) -> str:
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if f.fix)
    lines = []
    for (code, name), count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        marker = "[*]" if fixable[code] else "   "
        lines.append(f"{count:>6}  {code}  {marker} {name}\n")
    return "".join(lines)


def formatter(name: str) -> Callable[..., str]:
    if name == "sarif":
        from .sarif import format_sarif
        return format_sarif
    if name == "github":
        from .sarif import format_github
        return format_github
    return {"full": format_full, "concise": format_concise, "json": format_json}[name]
