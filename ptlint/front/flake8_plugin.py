"""ptlint's static rules as a flake8 plugin: `flake8 --select PTL`.

flake8 finds the class through the `flake8.extension` entry point `PTL`. The rules that run are
the ones ptlint itself would run on the file: the defaults, or `[tool.ptlint]` select/ignore and
per-file-ignores when the project configures them. An off-by-default rule also runs when flake8's
own `--select`/`--extend-select` names its full code (e.g. `--select PTL503`). flake8 handles
`# noqa` and `# flake8: noqa` itself; ptlint's `# ptlint: noqa` and ruff's `# ruff: noqa` still
apply, as in `ptlint check` (engine/suppress.py).
"""

from __future__ import annotations

import ast
import sys
from typing import Any, Iterator

from ptlint import __version__
from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import lint_source
from ptlint.run.config import ConfigError, Settings, build_settings


class Flake8Plugin:
    name = "ptlint"
    version = __version__

    # full codes of off-by-default rules named in flake8's --select / --extend-select
    _explicit: frozenset[str] = frozenset()
    _warned: set[str] = set()

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, manager: Any) -> None:  # flake8 calls it; nothing of our own to add
        pass

    @classmethod
    def parse_options(cls, options: Any) -> None:
        rules = all_rules()
        named: set[str] = set()
        for attribute in ("select", "extend_select"):
            for code in getattr(options, attribute, None) or ():
                code = code.strip().upper()
                if code in rules and not rules[code].default:
                    named.add(code)
        cls._explicit = frozenset(named)

    def _settings(self) -> Settings | None:
        path = self.filename if self.filename not in ("stdin", "-", None) else "."
        try:
            return build_settings([path])
        except ConfigError as exc:
            message = str(exc)
            if message not in self._warned:  # once per run, not once per file
                self._warned.add(message)
                print(f"ptlint (flake8 plugin): {message}; using the default rules", file=sys.stderr)
            return None

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        rules = all_rules()
        settings = self._settings()
        if settings is None:
            codes = {code for code, cls in rules.items() if cls.default}
        elif settings.matches_exclude(self.filename):
            return
        else:
            codes = set(settings.codes_for(self.filename))
        codes |= self._explicit
        source = SourceFile(self.filename, "".join(self.lines))
        test_code = (settings or Settings(enabled=())).is_test_code(self.filename)
        for finding in lint_source(source, [rules[code] for code in sorted(codes) if code in rules], test_code):
            if finding.code == "PTL001":  # flake8 reports syntax errors itself (E999)
                continue
            # flake8 columns are 0-based; ours are 1-based characters
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)
