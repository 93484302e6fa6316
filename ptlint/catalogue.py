"""Rule documentation pages, the catalogue listing, and the README's rule table."""

from __future__ import annotations

import json

from .registry import BUILTIN_CODES, DYNAMIC_CODES, all_rules

DOCS_URL = "https://github.com/ptlint/ptlint/blob/main/README.md#{code}"


def rule_page(code: str) -> str | None:
    rules = all_rules()
    if code in rules:
        cls = rules[code]
        fix = {None: "no", "safe": "safe", "unsafe": "unsafe", "sometimes": "safe or unsafe"}[cls.fixable]
        head = (f"# {cls.code} {cls.name}\n\n"
                f"Default: {'on' if cls.default else 'off'} · Fix: {fix}\n\n")
        return head + cls.docs.strip() + "\n"
    for table, kind in ((BUILTIN_CODES, "reported by the engine"), (DYNAMIC_CODES, "reported by the dynamic pass")):
        if code in table:
            name, what = table[code]
            extra = ""
            if code in DYNAMIC_CODES:
                extra = ("\nRun `ptlint explain file.py:factory` or `ptlint check --dynamic` "
                         "(needs `pip install \"ptlint[dynamic]\"`).\n")
            return f"# {code} {name}\n\nDefault: on · Fix: no · {kind}\n\n## What it does\n{what}\n{extra}"
    return None


def catalogue_rows() -> list[tuple[str, str, str, str, str]]:
    """(code, name, default, fix, summary) for every code, static rules and the built-in ones."""
    rows = []
    for code, (name, what) in BUILTIN_CODES.items():
        rows.append((code, name, "always", "—", what))
    for code, cls in all_rules().items():
        rows.append((code, cls.name, "on" if cls.default else "off", cls.fixable or "—", cls.summary()))
    for code, (name, what) in DYNAMIC_CODES.items():
        rows.append((code, name, "on", "—", what))
    return sorted(rows)


def catalogue_table() -> str:
    rows = catalogue_rows()
    width = max(len(row[1]) for row in rows)
    lines = [f"{'code':<7} {'name':<{width}} {'default':<7} {'fix':<9} summary"]
    for code, name, default, fix, what in rows:
        lines.append(f"{code:<7} {name:<{width}} {default:<7} {fix:<9} {what}")
    return "\n".join(lines) + "\n"


def catalogue_json() -> str:
    return json.dumps([dict(zip(("code", "name", "default", "fix", "summary"), row)) for row in catalogue_rows()],
                      indent=2) + "\n"


def readme_table() -> str:
    """The markdown rule table in the README (a test fails when the README drifts from it)."""
    lines = ["| code | name | default | fix | what it finds |", "|---|---|---|---|---|"]
    for code, name, default, fix, what in catalogue_rows():
        escaped = what.replace("|", "\\|")
        lines.append(f"| {code} | {name} | {default} | {fix} | {escaped} |")
    return "\n".join(lines) + "\n"
