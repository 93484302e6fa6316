"""The library interface, for the language server, the flake8 plugin and tests."""

from __future__ import annotations

from typing import Iterable

from ptlint.engine.finding import Finding
from ptlint.engine.registry import all_rules, default_codes
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import lint_source


__all__ = ["check_text", "default_codes", "fix_text"]


def check_text(text: str, codes: Iterable[str] | None = None, path: str = "<string>") -> list[Finding]:
    """Findings for source text; `codes` defaults to the rules that are on by default."""
    rules = all_rules()
    selected = default_codes() if codes is None else tuple(codes)
    return lint_source(SourceFile(path, text), [rules[c] for c in selected if c in rules], enabled=selected)


def fix_text(text: str, codes: Iterable[str] | None = None, unsafe: bool = False, path: str = "<string>") -> str:
    """The text with every applicable fix applied until stable."""
    from ptlint.run.fix import fix_source

    selected = default_codes() if codes is None else tuple(codes)
    return fix_source(SourceFile(path, text), selected, unsafe).fixed
