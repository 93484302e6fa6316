"""`ptlint fix` over files: each file or notebook that has a fixable finding is fixed with its own
settings, then shown as a diff or written atomically (fixer.write_atomic). The rewriting itself is
fixer.fix_source (and notebook.fix_notebook for the code cells of a notebook)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from ptlint.engine.finding import Finding
from ptlint.engine.source import (
    SourceError,
    decode_source,
    encode_source,
    is_notebook,
    read_bytes,
    split_lines,
)
from ptlint.engine.finding import applicable
from ptlint.run.discover import Job


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
    from ptlint.run.fixer import fix_source

    path, settings = job.path, job.settings
    codes = settings.codes_for(path)
    unsafe = settings.unsafe_fixes
    test_code = settings.is_test_code(path)
    if is_notebook(path):
        from ptlint.run.notebook import fix_notebook, read_notebook

        notebook = read_notebook(data, path)
        result = fix_notebook(notebook, codes, unsafe, test_code)
        fixed = notebook.encoded(result.fixed) if result.changed else data
        # a cell has no "end of file": compare whole lines so the diff does not flag its last one
        diff = "".join(unified_diff(f"{path}:cell {number}", _ended(before), _ended(after))
                       for number, (before, after) in sorted(result.changed_cells.items()))
    else:
        source = decode_source(data, path)
        result = fix_source(source, codes, unsafe, test_code, cache=cache, project_root=settings.root)
        fixed = encode_source(source, result.fixed) if result.changed else data
        diff = unified_diff(path, result.original, result.fixed) if result.changed else ""
    return FileOutcome(path, data, fixed, diff, list(result.applied), list(result.remaining), list(result.messages))


def fix_jobs(jobs: list[Job], findings: list[Finding], write: bool, caches=None) -> FixOutcome:
    """Fix every file that has an applicable finding; other findings pass through as remaining."""
    from ptlint.run.fixer import ChangedOnDisk, write_atomic

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
