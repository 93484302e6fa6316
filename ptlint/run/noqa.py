"""`ptlint check --add-noqa`: `# noqa: CODE` on every line that has a finding (ruff's habit for
adopting a linter on an old code base), extending a `# noqa: ...` already there and keeping any
other comment. Files and notebook cells are rewritten like fixes: atomically, only when their
bytes are still those that were checked."""

from __future__ import annotations

from dataclasses import dataclass, field

from ptlint.engine.edits import apply_edits
from ptlint.engine.finding import Finding
from ptlint.engine.source import SourceError, SourceFile, decode_source, encode_source, is_notebook, read_bytes
from ptlint.engine.suppress import noqa_edit
from ptlint.run.discover import Job

NEVER = ("PTL001", "PTL002")  # a syntax error cannot be waved through; a stale noqa wants removing


@dataclass
class NoqaOutcome:
    added: int = 0  # lines that gained a directive or a code
    files: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # lines a comment cannot go on
    errors: list[str] = field(default_factory=list)


def add_noqa(jobs: list[Job], findings: list[Finding]) -> NoqaOutcome:
    from ptlint.run.fix import ChangedOnDisk, write_atomic

    outcome = NoqaOutcome()
    wanted: dict[str, dict[int | None, dict[int, set[str]]]] = {}  # path -> cell -> line -> codes
    for finding in findings:
        if finding.code not in NEVER and finding.source == "static":
            wanted.setdefault(finding.path, {}).setdefault(finding.cell, {}).setdefault(finding.line, set()).add(
                finding.code)
    for job in jobs:
        if job.path not in wanted or job.data is not None:
            continue
        try:
            data = read_bytes(job.path)
            new, added = _with_noqa(job.path, data, wanted[job.path], outcome.messages)
            if added:
                write_atomic(job.path, new, expected=data)
        except ChangedOnDisk:
            outcome.errors.append(f"{job.path}: changed on disk meanwhile; not written")
            continue
        except (OSError, SourceError, UnicodeEncodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            outcome.errors.append(f"{job.path}: cannot add noqa: {reason}")
            continue
        if added:
            outcome.added += added
            outcome.files.append(job.path)
    return outcome


def _with_noqa(path: str, data: bytes, cells: dict[int | None, dict[int, set[str]]],
               messages: list[str]) -> tuple[bytes, int]:
    """The file's new bytes, and how many lines changed."""
    if not is_notebook(path):
        source = decode_source(data, path)
        text, added = _text_with_noqa(source, cells.get(None, {}), path, messages)
        return encode_source(source, text), added
    from ptlint.run.notebook import read_notebook

    notebook = read_notebook(data, path)
    sources, added = {}, 0
    for number, lines in sorted((cell, lines) for cell, lines in cells.items() if cell is not None):
        cell = notebook.cell(number)
        if cell is None:
            continue
        text, count = _text_with_noqa(SourceFile(path, cell.source), lines, f"{path}:cell {number}", messages)
        if count:
            sources[number], added = text, added + count
    return (notebook.encoded(notebook.with_sources(sources)) if sources else data), added


def _text_with_noqa(source: SourceFile, lines: dict[int, set[str]], where: str,
                    messages: list[str]) -> tuple[str, int]:
    edits = []
    for line, codes in sorted(lines.items()):
        edit = noqa_edit(source, line, codes)
        if edit is not None:
            edits.append(edit)
        elif source.can_end_with_comment(line):
            continue  # a noqa there already covers the codes
        else:
            messages.append(f"{where}:{line}: no `# noqa` added: the line ends inside a string or continues "
                            f"with `\\`")
    return (apply_edits(source, edits) if edits else source.text), len(edits)
