"""`# noqa`, `# noqa: PTL101,PTL102` on the reported line, and file-wide `# ptlint: noqa`.

A code may be a prefix, as in flake8: `# noqa: PTL2` silences PTL201 and PTL202 (the flake8
plugin and `ptlint check` count the same findings).

Only real comments count: `"# noqa"` inside a string suppresses nothing. Comments are found
with the tokenizer, but only in files whose text mentions `noqa` at all.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from ptlint.engine.finding import Finding

LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^#\s*ptlint\s*:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$",
                        re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
ALL = None  # a bare noqa: every code


@dataclass
class Suppressions:
    lines: dict[int, set[str] | None] = field(default_factory=dict)  # line -> codes, or ALL
    file_codes: set[str] | None = field(default_factory=set)  # ALL for a bare `# ptlint: noqa`

    @classmethod
    def scan(cls, text: str) -> "Suppressions":
        found = cls()
        if "noqa" not in text and "NOQA" not in text.upper():
            return found
        for line, comment in _comments(text):
            file_match = _FILE_NOQA.match(comment)
            if file_match:
                found.file_codes = _merge(found.file_codes, file_match.group("codes"))
                continue
            match = LINE_NOQA.search(comment)
            if match:
                found.lines[line] = _merge(found.lines.get(line, set()), match.group("codes"))
        return found

    def suppresses(self, finding: Finding) -> bool:
        if finding.code == "PTL001":  # a file that does not parse cannot be waved through
            return False
        if _covers(self.file_codes, finding.code):
            return True
        return finding.line in self.lines and _covers(self.lines[finding.line], finding.code)


def _covers(codes: set[str] | None, code: str) -> bool:
    return codes is ALL or any(code.startswith(prefix) for prefix in codes)


def _merge(existing: set[str] | None, codes: str | None) -> set[str] | None:
    if existing is ALL or codes is None:
        return ALL
    return existing | {code.upper() for code in _CODE.findall(codes)}


def _comments(text: str) -> list[tuple[int, str]]:
    try:
        return [(tok.start[0], tok.string) for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # Unreachable for parsed files in practice; fall back to a plain scan of each line.
        return [(number, line[line.index("#"):]) for number, line in enumerate(text.splitlines(), 1) if "#" in line]
