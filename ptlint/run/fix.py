"""Fixing: applying the text edits rules attached to their findings (ptlint.engine.edits), to a
file's text, to a notebook's code cells, and to files on disk.

A pass takes the fixable findings, chooses those whose edits do not overlap (in file order),
applies them, and checks the result (ptlint.engine.structure: it parses, and the code around the
edits keeps its structure and its names' meanings); a fix that fails the check is dropped with a
message naming the rule, the line and the reason, and is never written. The next pass lints the new text, since one fix can reveal another.
Passes repeat until nothing changes (at most MAX_PASSES). The first pass uses the findings the
check already made (from the cache when it had them): a file is linted once per pass.

`ptlint fix` over files: each file or notebook that has a fixable finding is fixed with its own
settings, then shown as a diff or written atomically (write_atomic), never over a file that
changed meanwhile.
"""

from __future__ import annotations

import ast
import difflib
import os
import stat
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ptlint.engine.edits import overlaps
from ptlint.engine.finding import Edit, Finding, applicable
from ptlint.engine.notebook import Notebook
from ptlint.engine.registry import all_rules
from ptlint.engine.source import (
    SourceError,
    SourceFile,
    decode_source,
    encode_source,
    is_notebook,
    read_bytes,
    split_lines,
)
from ptlint.engine.structure import FixRejected, checked_text, parse_text
from ptlint.engine.traversal import lint_source
from ptlint.run.cache import dependency_digest
from ptlint.run.discover import Job

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
    passes: list[tuple[str, list[Edit]]] = field(default_factory=list)  # each pass: its text, its edits

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


def apply_fixes(source: SourceFile, findings: list[Finding], tree: ast.Module | None = None) -> str:
    """The text with these findings' (non-overlapping) edits applied, after the structural check
    (ptlint.engine.structure); FixRejected, saying why, when the result would not parse or would
    change the code around the edits. `tree`: the text's tree, when the caller has it."""
    return checked_text(source, [edit for finding in findings for edit in finding.fix.edits], tree)


def _one_pass(source: SourceFile, fixable: list[Finding], dropped: set[tuple],
              messages: list[str]) -> tuple[str, list[Finding]]:
    """Apply the chosen fixes. When the result fails the structural check, each fix is checked on
    its own: those that fail are dropped with a message naming the rule, the line and the reason,
    and the others are applied together (or, failing that too, one at a time)."""
    chosen = choose(fixable)
    try:
        tree = parse_text(source.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source.text, []
    try:
        return apply_fixes(source, chosen, tree), chosen
    except FixRejected:
        pass
    good: list[Finding] = []
    for finding in chosen:
        try:
            apply_fixes(source, [finding], tree)
        except FixRejected as exc:
            dropped.add(_key(finding))
            messages.append(f"{source.path}:{finding.line}: dropped the {finding.code} fix: {exc}")
        else:
            good.append(finding)
    try:
        return (apply_fixes(source, good, tree), good) if good else (source.text, [])
    except FixRejected:  # each is fine alone, not all together: the first one now, the rest next pass
        return apply_fixes(source, good[:1], tree), good[:1]


def fix_source(source: SourceFile, codes: tuple[str, ...], unsafe: bool, test_code: bool = False,
               findings: list[Finding] | None = None, cache: "Cache | None" = None,
               project_root: str | None = None, project=None) -> FileFix:
    """Fix one file's text until stable; never returns text that does not parse. `findings`:
    what a check of this very text found (saves the first lint); `project`: what the rest of the
    project says of the file (ptlint.semantics.project.ProjectFacts), as the check had it."""
    rules = all_rules()
    rule_classes = [rules[code] for code in codes if code in rules]

    def lint(current: SourceFile) -> list[Finding]:
        # keyed like the check's entries (runner.check_file): the file's bytes, the codes, test
        # code, and the project modules the findings depend on
        key = None
        if cache:
            dependencies = dependency_digest(current, rule_classes, project_root)
            if project is not None:
                dependencies += "project:" + project.digest()
            key = cache.key(encode_source(current, current.text), codes + (("test-code",) if test_code else ()),
                            dependencies)
        cached = cache.get(key, current.path) if cache else None
        if cached is not None:
            return cached
        found = lint_source(current, rule_classes, test_code, project_root, codes, project=project)
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
        result.passes.append((current.text, [edit for finding in applied for edit in finding.fix.edits]))
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


# -- notebooks -------------------------------------------------------------------------------------

@dataclass
class NotebookFix:
    path: str
    original: str  # the notebook's text
    fixed: str
    changed_cells: dict[int, tuple[str, str]] = field(default_factory=dict)  # cell -> (before, after)
    applied: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


def fix_notebook(notebook: Notebook, codes: tuple[str, ...], unsafe: bool, test_code: bool,
                 project=None) -> NotebookFix:
    """Fix the code cells; only the `source` of changed cells is rewritten in the file. `project`:
    what is known of the notebook's program (ProjectFacts), as the check had it."""
    from ptlint.engine.registry import rule_classes_for
    from ptlint.run.notebook import (
        build_module,
        check_cells,
        locate,
        restore_endings,
        split_module,
    )

    rule_classes = rule_classes_for(codes)
    findings, broken = check_cells(notebook, rule_classes, test_code, codes, project)
    outcome = NotebookFix(notebook.path, notebook.text, notebook.text, remaining=findings)
    if not any(applicable(f, unsafe) for f in findings):
        return outcome
    module = build_module(notebook, broken)
    result = fix_source(SourceFile(notebook.path, module.text), codes, unsafe, test_code, project=project)
    sources = split_module(module, result.fixed)
    if sources is None:  # a fix rewrote code around a magic or shell line: keep the notebook as it is
        outcome.messages.append(f"{notebook.path}: fixes not applied: they would rewrite code around an "
                                "IPython magic or shell line")
        return outcome
    outcome.messages.extend(result.messages)
    sources = restore_endings(notebook, sources)
    changed = {number: source for number, source in sources.items()
               if number not in broken and source != notebook.cells[number - 1].source}
    outcome.changed_cells = {number: (notebook.cells[number - 1].source, source) for number, source in changed.items()}
    outcome.fixed = notebook.with_sources(changed)
    outcome.applied = list(result.applied)
    remaining = locate(result.fixed, notebook.path, result.remaining)
    outcome.remaining = sorted([f for f in remaining if f.code != "PTL001"]
                               + [f for f in findings if f.code == "PTL001"], key=Finding.sort_key)
    return outcome


# -- files -------------------------------------------------------------------------------------

class ChangedOnDisk(Exception):
    pass


def _same_file(before: os.stat_result, after: os.stat_result) -> bool:
    """The same file, not modified: an editor that saves by renaming a new file over it changes
    the inode, one that writes in place changes the size or the modification time."""
    return (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns) == \
        (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns)


def _unchanged(path: str, before: os.stat_result, expected: bytes | None) -> None:
    """Raise ChangedOnDisk unless `path` is still the file `before` describes (and holds
    `expected`, when given)."""
    try:
        if expected is None:
            now = os.stat(path)
            if not _same_file(before, now):
                raise ChangedOnDisk(path)
            return
        with open(path, "rb") as handle:
            if not _same_file(before, os.fstat(handle.fileno())) or handle.read() != expected:
                raise ChangedOnDisk(path)
    except FileNotFoundError:
        raise ChangedOnDisk(path) from None


def write_atomic(path: str, data: bytes, expected: bytes | None = None) -> None:
    """Write `data` over the file at `path` (through a symlink, to its target), keeping its
    permissions, owner and hard links. With `expected`, refuse (ChangedOnDisk) when the file no
    longer holds those bytes; the content and the file's identity are compared again right before
    the new content takes its place, so an edit saved meanwhile is never overwritten.

    Normally: a temporary file in the same folder, fsync, then a rename over the file, so a crash
    leaves the old file or the new one, never half of each. A rename would give a file with other
    hard links a new inode of its own (splitting it from them), and one owned by another user
    (ptlint run as root) a new owner when it cannot be given back: such a file is written in place
    instead, after a copy of the old bytes is kept beside it until the write is on disk."""
    real = os.path.realpath(path)
    before = os.stat(real)
    mode = stat.S_IMODE(before.st_mode)
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        # a rename would replace it anyway (and root may write anything): respect the user's intent
        raise PermissionError(13, "file is read-only", path)
    _unchanged(real, before, expected)
    if before.st_nlink > 1:
        _write_in_place(real, data, before, expected)
        return
    fd, temporary = tempfile.mkstemp(dir=os.path.dirname(real), prefix=".ptlint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        if not _give_owner(temporary, before):
            os.unlink(temporary)
            _write_in_place(real, data, before, expected)
            return
        _unchanged(real, before, expected)  # the last moment before the rename
        os.replace(temporary, real)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _give_owner(path: str, original: os.stat_result) -> bool:
    """Give the new file the original's owner and group; False when that is not allowed."""
    created = os.stat(path)
    if (created.st_uid, created.st_gid) == (original.st_uid, original.st_gid):
        return True
    if not hasattr(os, "chown"):  # pragma: no cover - Windows: files have no POSIX owner
        return True
    try:
        os.chown(path, original.st_uid, original.st_gid)
    except OSError:
        return False
    return True


def _write_in_place(path: str, data: bytes, before: os.stat_result, expected: bytes | None) -> None:
    """Overwrite the file's own inode (its owner and other links stay). A copy of the old bytes
    waits beside it (`.ptlint-*.orig`) until the new content is on disk, so a crash midway loses
    nothing: the copy is what the file held."""
    with open(path, "r+b") as handle:
        old = handle.read()
        if not _same_file(before, os.fstat(handle.fileno())) or (expected is not None and old != expected):
            raise ChangedOnDisk(path)
        fd, backup = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".ptlint-", suffix=".orig")
        with os.fdopen(fd, "wb") as copy:
            copy.write(old)
            copy.flush()
            os.fsync(copy.fileno())
        handle.seek(0)
        handle.write(data)
        handle.truncate()
        handle.flush()
        os.fsync(handle.fileno())
    os.unlink(backup)


@dataclass
class FileOutcome:
    """One file's fix: its bytes before and after, the diff, what was applied and what remains."""

    path: str
    original: bytes
    fixed: bytes
    diff: str
    applied: list[Finding]  # the findings whose fixes it holds
    remaining: list[Finding]
    messages: list[str]

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


@dataclass
class FixOutcome:
    diff: str = ""
    changed: list[str] = field(default_factory=list)
    fixed: int = 0
    applied: list[Finding] = field(default_factory=list)  # the fixed findings (`--show-fixes`)
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def unified_diff(label: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(split_lines(before), split_lines(after),
                                 fromfile=f"a/{label}", tofile=f"b/{label}")
    out = []
    for line in lines:
        if line.endswith("\r"):  # a line that ends in a lone carriage return: the next starts below it
            line += "\n"
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _ended(text: str) -> str:
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


def fix_file(job: Job, data: bytes, cache=None) -> FileOutcome:
    """Fix one file's (or notebook's) bytes until stable; SourceError when they cannot be read.
    With the check's `cache`, the first pass reads the check's findings back instead of linting."""
    path, settings = job.path, job.settings
    codes = settings.codes_for(path)
    unsafe = settings.unsafe_fixes
    test_code = settings.is_test_code(path)
    if is_notebook(path):
        from ptlint.run.notebook import read_notebook

        notebook = read_notebook(data, path)
        result = fix_notebook(notebook, codes, unsafe, test_code, project=job.facts)
        fixed = notebook.encoded(result.fixed) if result.changed else data
        # a cell has no "end of file": compare whole lines so the diff does not flag its last one
        diff = "".join(unified_diff(f"{path}:cell {number}", _ended(before), _ended(after))
                       for number, (before, after) in sorted(result.changed_cells.items()))
    else:
        source = decode_source(data, path)
        result = fix_source(source, codes, unsafe, test_code, cache=cache, project_root=settings.root,
                            project=job.facts)
        fixed = encode_source(source, result.fixed) if result.changed else data
        diff = unified_diff(path, result.original, result.fixed) if result.changed else ""
    return FileOutcome(path, data, fixed, diff, list(result.applied), list(result.remaining), list(result.messages))


def fix_jobs(jobs: list[Job], findings: list[Finding], write: bool, caches=None) -> FixOutcome:
    """Fix every file that has an applicable finding; other findings pass through as remaining."""
    outcome = FixOutcome()
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    for job in jobs:
        file_findings = by_path.pop(job.path, [])
        if not any(applicable(f, job.settings.unsafe_fixes) for f in file_findings):
            outcome.remaining.extend(file_findings)
            continue
        try:
            data = job.data if job.data is not None else read_bytes(job.path)  # the bytes a write compares
            result = fix_file(job, data, caches.for_settings(job.settings) if caches is not None else None)
        except (OSError, SourceError) as exc:
            outcome.errors.append(f"{job.path}: cannot read: {exc}")
            outcome.remaining.extend(file_findings)
            continue
        except UnicodeEncodeError as exc:  # the fixed text does not fit the file's declared encoding
            outcome.errors.append(f"{job.path}: cannot write: {exc}")
            outcome.remaining.extend(file_findings)
            continue
        outcome.messages.extend(result.messages)
        if not result.changed:
            outcome.remaining.extend(result.remaining)
            continue
        if write:
            try:
                write_atomic(job.path, result.fixed, expected=data)
            except ChangedOnDisk:
                outcome.errors.append(f"{job.path}: changed on disk while fixing; not written")
                outcome.remaining.extend(file_findings)
                continue
            except (OSError, UnicodeEncodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                outcome.errors.append(f"{job.path}: cannot write: {reason}")
                outcome.remaining.extend(file_findings)
                continue
        outcome.diff += result.diff
        outcome.fixed += len(result.applied)
        outcome.applied.extend(result.applied)
        outcome.changed.append(job.path)
        outcome.remaining.extend(result.remaining)
    for rest in by_path.values():  # findings of no job (the dynamic pass's): passed through
        outcome.remaining.extend(rest)
    outcome.remaining.sort(key=Finding.sort_key)
    return outcome
