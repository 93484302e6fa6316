"""`# noqa`, `# noqa: PTL101,PTL102` on the reported line, and file-wide `# ptlint: noqa`.

A code may be a prefix, as in flake8: `# noqa: PTL2` silences PTL201 and PTL202 (the flake8
plugin and `ptlint check` count the same findings). A file-wide comment may also be ruff's
(`# ruff: noqa`, `# ruff: noqa: PTL101`) or flake8's (`# flake8: noqa` on a line of its own, which
flake8 reads as "skip this file" whatever follows it): one comment keeps every linter of a project
out of a generated file, in `ptlint check` and in the flake8 plugin alike.

Only real comments count: `"# noqa"` inside a string suppresses nothing. Comments are found
with the tokenizer, but only in files whose text mentions `noqa` at all.

PTL002 unused-noqa: a `# noqa: PTL...` code that suppressed nothing on its line (or names no
ptlint rule) is reported, with a safe fix that removes the code, or the directive when no code
is left. Only ptlint's own codes are looked at: a bare `# noqa` and other linters' codes may be
there for flake8 or ruff, which ptlint cannot see.
"""

from __future__ import annotations

import re
from typing import Collection

from ptlint.engine.finding import SAFE, Edit, Finding, Fix
from ptlint.engine.registry import BUILTIN_CODES, CODE_HELP
from ptlint.engine.source import SourceFile

LINE_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_FILE_NOQA = re.compile(r"^#\s*(?:ptlint|ruff)\s*:\s*noqa"
                        r"(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?\s*$", re.IGNORECASE)
# flake8's own test (defaults.NOQA_FILE, matched at the start of a line): it skips the whole file,
# whatever follows, codes included; `ptlint check` does the same, so both count alike.
_FLAKE8_FILE = re.compile(r"# flake8[:=]\s*noqa", re.IGNORECASE)
_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
_MENTIONED = re.compile("noqa", re.IGNORECASE)  # files that never say it are not tokenized
OWN_PREFIX = "PTL"  # the codes this linter owns; any other code belongs to another linter
ALL = None  # a bare noqa: every code
UNUSED_NOQA = "PTL002"
_NEVER_SUPPRESSED = ("PTL001",)  # a file that does not parse cannot be waved through

# PTL002's page (docs/rules/PTL002.md, `ptlint rule PTL002`).
UNUSED_NOQA_DOCS = """
## What it does
Finds `# noqa` comments whose ptlint codes suppress nothing on their line: the finding they were
written for is gone (the code changed, or a rule grew more precise), or the code names no ptlint
rule at all (`# noqa: PTL999`, a typo). Like ruff's RUF100.

## Why is this bad?
A stale `# noqa` hides the next real finding on that line: when the line changes again, nothing
reports it.

## Example
```python
for batch in loader:
    loss = step(batch)  # noqa: PTL101
```

## Use instead
```python
for batch in loader:
    loss = step(batch)
```

## Fix safety
Safe: it removes only the stale codes (`# noqa: PTL101, E501` becomes `# noqa: E501`), or the
directive when no code is left; other words of the comment stay (`# noqa: PTL101 # why` becomes
`# why`).

## Which codes it looks at
- Only ptlint's own codes (`PTL...`). Codes of other linters (`E501`, `RUF100`) are theirs to
  check, and a bare `# noqa` may be there for flake8 or ruff, which ptlint cannot see: neither is
  ever reported (ruff, which runs the other rules itself, reports both).
- A code is reported when its rule ran on the file (it is enabled there) and suppressed nothing on
  that line, or when no ptlint code starts with it. A code of a rule that is off for the file
  (not selected, `ignore`, `per-file-ignores`) is left alone: another configuration (the flake8
  plugin with `--select`, a colleague's) may need it. Codes of the dynamic pass (PTL45x) are left
  alone too: the static pass cannot know whether they fire.
- A code counts as used when it suppressed any finding on its line, a prefix (`# noqa: PTL1`) when
  it suppressed any of its rules' findings. File-wide `# ptlint: noqa` comments are not looked at.
- `# noqa: PTL002` on the line keeps its stale codes; `ptlint check --select PTL002` finds only
  these; `--ignore PTL002` (or `ignore = ["PTL002"]`) turns it off.
- `ptlint check`, `ptlint fix` and `check --fix` report and fix it; the flake8 plugin does not
  (there flake8 itself owns `# noqa`).
"""


class Directive:
    """One `# noqa` comment: where it is, and which of its codes suppressed something."""

    def __init__(self, line: int, column: int, comment: str, match: re.Match, space_before: int = 0) -> None:
        self.line = line
        self.column = column  # 0-based character column of the comment
        self.comment = comment  # the whole comment, from its `#`
        self.match = match  # LINE_NOQA in `comment`
        self.space_before = space_before  # blanks between the code and the comment
        self.used: set[str] = set()  # its codes (upper case) that suppressed a finding

    @property
    def codes(self) -> list[re.Match]:
        """Each code of the directive, as a match in `comment` (none for a bare noqa)."""
        if self.match.group("codes") is None:
            return []
        return list(_CODE.finditer(self.comment, self.match.start("codes"), self.match.end("codes")))


class Suppressions:
    def __init__(self) -> None:
        self.lines: dict[int, set[str] | None] = {}  # line -> codes, or ALL
        self.file_codes: set[str] | None = set()  # ALL for a bare `# ptlint: noqa`
        self.directives: dict[int, Directive] = {}  # line -> its noqa comment

    @classmethod
    def scan(cls, source: SourceFile | str) -> "Suppressions":
        found = cls()
        source = source if isinstance(source, SourceFile) else SourceFile("", source)
        if not _MENTIONED.search(source.text):
            return found
        for line, column, comment in source.comments:
            if _FLAKE8_FILE.match(comment) and not source.line(line)[:column].strip():
                found.file_codes = ALL
                continue
            file_match = _FILE_NOQA.match(comment)
            if file_match:
                found.file_codes = _merge(found.file_codes, file_match.group("codes"))
                continue
            match = LINE_NOQA.search(comment)
            if match:
                found.lines[line] = _merge(set(), match.group("codes"))  # one comment a line
                before = source.line(line)[:column]
                found.directives[line] = Directive(line, column, comment, match, len(before) - len(before.rstrip()))
        return found

    def suppresses(self, finding: Finding) -> bool:
        """Whether a comment silences `finding`; a line comment that does is marked used."""
        if finding.code in _NEVER_SUPPRESSED:
            return False
        if _covers(self.file_codes, finding.code):
            return True
        codes = self.lines.get(finding.line, set())
        if not _covers(codes, finding.code):
            return False
        directive = self.directives.get(finding.line)
        if directive is not None and codes is not ALL:
            directive.used.update(code for code in codes if finding.code.startswith(code))
        return True

    def unused(self, path: str, enabled: Collection[str], known: Collection[str]) -> list[Finding]:
        """PTL002 for each directive with a ptlint code that suppressed nothing although its rule
        ran (`enabled`: the codes the static pass ran on this file), or that names no ptlint code
        at all (`known`: every code). Call after `suppresses` has seen every finding."""
        out = []
        for directive in self.directives.values():
            stale, notes = [], []
            for code in directive.codes:
                name = code.group(0).upper()
                if not name.startswith(OWN_PREFIX) or name in directive.used:
                    continue
                if not any(k.startswith(name) for k in known):
                    stale.append(code)
                    notes.append(f"unknown: `{name}`")
                elif any(k.startswith(name) for k in enabled):
                    stale.append(code)
                    notes.append(f"unused: `{name}`")
                # a code of a rule that did not run here (off, per-file-ignored): left alone
            if stale:
                finding = _unused_finding(path, directive, stale, "; ".join(notes))
                if not self.suppresses(finding):
                    out.append(finding)
        return out


def _unused_finding(path: str, directive: Directive, stale: list[re.Match], notes: str) -> Finding:
    start = directive.column + directive.match.start()
    end = directive.column + directive.match.end()
    return Finding(UNUSED_NOQA, BUILTIN_CODES[UNUSED_NOQA][0], f"unused `noqa` directive ({notes})", path,
                   directive.line, start + 1, directive.line, end + 1,
                   fix=Fix(SAFE, "Remove the unused code" if len(stale) == 1 else "Remove the unused codes",
                           (_removal(directive, stale),)),
                   help=CODE_HELP[UNUSED_NOQA])


def _removal(directive: Directive, stale: list[re.Match]) -> Edit:
    """The edit that drops the `stale` codes from the directive, or the directive itself (and
    the whitespace before it) when no code would be left. Other words of the comment stay."""
    comment, match, line = directive.comment, directive.match, directive.line
    dropped = {code.span() for code in stale}
    kept = [code.group(0) for code in directive.codes if code.span() not in dropped]
    if kept:
        start, end = match.start("codes"), match.end("codes")
        return Edit(line, directive.column + start + 1, line, directive.column + end + 1, ", ".join(kept))
    before, after = comment[:match.start()].rstrip(), comment[match.end():].strip()
    if before:  # words before the directive stay, those after it follow them
        replacement = before + (" " + after if after else "")
    elif after:  # only words after it: they become the comment
        replacement = after if after.startswith("#") else "# " + after
    else:  # the comment is the directive: it goes with the blanks before it
        start = directive.column - directive.space_before
        return Edit(line, start + 1, line, directive.column + len(comment) + 1, "")
    return Edit(line, directive.column + 1, line, directive.column + len(comment) + 1, replacement)


def _covers(codes: set[str] | None, code: str) -> bool:
    return codes is ALL or any(code.startswith(prefix) for prefix in codes)


def _merge(existing: set[str] | None, codes: str | None) -> set[str] | None:
    if existing is ALL or codes is None:
        return ALL
    return existing | {code.upper() for code in _CODE.findall(codes)}


def noqa_edit(source: SourceFile, line: int, codes: Collection[str]) -> Edit | None:
    """The edit that makes a 1-based `line` carry `# noqa` for `codes`: the missing codes added to
    its `# noqa: ...` comment (sorted, as ruff writes them), or `  # noqa: CODES` after the end of
    the line, after any comment already there. None when nothing is needed (a bare `# noqa`, or
    the codes are there) or possible (the line ends inside a string, or continues with `\\`)."""
    text = source.line(line)
    comment = next(((column, body) for number, column, body in source.comments if number == line), None)
    match = LINE_NOQA.search(comment[1]) if comment is not None else None
    if match is not None:
        if match.group("codes") is None:
            return None  # a bare noqa covers every code
        present = {code.upper() for code in _CODE.findall(match.group("codes"))}
        missing = sorted({code for code in codes if not _covers(present, code)})
        if not missing:
            return None
        at = comment[0] + match.end("codes") + 1
        return Edit(line, at, line, at, ", " + ", ".join(missing))
    if not source.can_end_with_comment(line):
        return None
    end = len(text.rstrip()) + 1
    return Edit(line, end, line, len(text) + 1, "  # noqa: " + ", ".join(sorted(set(codes))))
