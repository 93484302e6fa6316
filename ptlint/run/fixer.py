"""Applying fixes: the text edits rules attached to their findings (see ptlint.engine.edits).

A pass takes the fixable findings, chooses those whose edits do not overlap (in file order),
applies them, and checks that the result parses; a rule whose edits break the file is dropped
with a message naming it. The next pass lints the new text, since one fix can reveal another.
Passes repeat until nothing changes (at most MAX_PASSES). The first pass uses the findings the
check already made (from the cache when it had them): a file is linted once per pass.
Writes are atomic and skip files that changed meanwhile.
"""

from __future__ import annotations

import ast
import os
import stat
import tempfile
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ptlint.engine.edits import apply_edits, overlaps
from ptlint.engine.finding import Edit, Finding, applicable
from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile, encode_source
from ptlint.engine.traversal import lint_source
from ptlint.run.cache import dependency_digest

if TYPE_CHECKING:
    from ptlint.run.cache import Cache

MAX_PASSES = 10


@dataclass
class FileFix:
    """The outcome for one file."""

    path: str
    original: str
    fixed: str
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def _key(finding: Finding) -> tuple:
    return (finding.code, finding.line, finding.column, finding.end_line, finding.end_column)


def choose(findings: list[Finding]) -> list[Finding]:
    """Fixes whose edits overlap no edit chosen before them, in file order."""
    chosen: list[Finding] = []
    taken: list[Edit] = []
    for finding in sorted(findings, key=Finding.sort_key):
        edits = finding.fix.edits
        if any(overlaps(edit, other) for edit in edits for other in taken):
            continue
        chosen.append(finding)
        taken.extend(edits)
    return chosen


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def apply_fixes(source: SourceFile, findings: list[Finding]) -> str | None:
    """The text with these findings' (non-overlapping) edits applied, or None if it would not parse."""
    text = apply_edits(source, [edit for finding in findings for edit in finding.fix.edits])
    return text if _parses(text) else None


def _one_pass(source: SourceFile, fixable: list[Finding], dropped: set[tuple],
              messages: list[str]) -> tuple[str, list[Finding]]:
    """Apply the chosen fixes; if the result does not parse, keep only the rules whose fixes
    parse on their own, and drop the others with a message naming the rule."""
    chosen = choose(fixable)
    text = apply_fixes(source, chosen)
    if text is not None:
        return text, chosen
    good: list[Finding] = []
    for code in sorted({f.code for f in chosen}):
        group = [f for f in chosen if f.code == code]
        if apply_fixes(source, group) is not None:
            good.extend(group)
        else:
            dropped.update(_key(f) for f in group)
            messages.append(f"{source.path}: dropped {len(group)} {code} fix(es): the result would not parse")
    text = apply_fixes(source, good) if good else None
    if text is not None:
        return text, good
    if good:
        dropped.update(_key(f) for f in good)
        messages.append(f"{source.path}: dropped fixes that do not parse together")
    return source.text, []


def fix_source(source: SourceFile, codes: tuple[str, ...], unsafe: bool, test_code: bool = False,
               findings: list[Finding] | None = None, cache: "Cache | None" = None,
               project_root: str | None = None) -> FileFix:
    """Fix one file's text until stable; never returns text that does not parse. `findings`:
    what a check of this very text found (saves the first lint)."""
    rules = all_rules()
    rule_classes = [rules[code] for code in codes if code in rules]

    def lint(current: SourceFile) -> list[Finding]:
        # keyed like the check's entries (runner.check_file): the file's bytes, the codes, test
        # code, and the project modules the findings depend on
        key = None
        if cache:
            dependencies = dependency_digest(current, rule_classes, project_root)
            key = cache.key(encode_source(current, current.text), codes + (("test-code",) if test_code else ()),
                            dependencies)
        cached = cache.get(key, current.path) if cache else None
        if cached is not None:
            return cached
        found = lint_source(current, rule_classes, test_code, project_root, codes)
        if cache:
            cache.put(key, found)
        return found

    current = source
    result = FileFix(source.path, source.text, source.text)
    dropped: set[tuple] = set()  # fixes that broke the file: not tried again
    for _ in range(MAX_PASSES):
        if findings is None:
            findings = lint(current)
        fixable = [f for f in findings if applicable(f, unsafe) and _key(f) not in dropped]
        if not fixable:
            break
        new_text, applied = _one_pass(current, fixable, dropped, result.messages)
        if not applied or new_text == current.text:
            break
        result.applied.extend(applied)
        current = SourceFile(source.path, new_text, source.encoding, source.bom)
        findings = None
    else:
        findings = lint(current)
        if any(applicable(f, unsafe) and _key(f) not in dropped for f in findings):
            result.messages.append(f"{source.path}: fixes did not converge after {MAX_PASSES} passes; "
                                   "the last parsing result is kept")
    result.fixed = current.text
    result.remaining = findings if findings is not None else lint(current)
    return result


# -- files -------------------------------------------------------------------------------------

class ChangedOnDisk(Exception):
    pass


def write_atomic(path: str, data: bytes, expected: bytes | None = None) -> None:
    """Write through a temporary file in the same folder and rename it into place, keeping the
    file's permissions. With `expected`, refuse when the file no longer holds those bytes."""
    if expected is not None:
        with open(path, "rb") as handle:
            if handle.read() != expected:
                raise ChangedOnDisk(path)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # a rename would replace it anyway (and root may write anything): respect the user's intent
        raise PermissionError(13, "file is read-only", path)
    directory = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".ptlint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, os.path.realpath(path))
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
