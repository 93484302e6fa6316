"""Applying fixes as edits of the libcst concrete syntax tree, so that every byte a fix does not
touch (comments, formatting, quotes, CRLF, BOM, encoding) stays as it was.

A pass lints the text, picks non-overlapping fixable findings, asks each rule to rewrite the
libcst node at its finding's span, and checks that the result parses. Passes repeat until
nothing changes (at most MAX_PASSES). Writes are atomic and skip files that changed meanwhile.
"""

from __future__ import annotations

import ast
import difflib
import os
import stat
import tempfile
import warnings
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from .config import Settings
from .engine import lint_source
from .names import ImportMap, collect_module_imports
from .registry import all_rules
from .rule import SAFE, Finding, Rule
from .source import SourceError, SourceFile, decode_source, encode_source

MAX_PASSES = 10


@dataclass
class FixContext:
    """What a rule's fix() may ask: how the module spells an imported name, and adding imports."""

    imports: ImportMap
    needed_imports: set[str] = field(default_factory=set)

    def local_name(self, qualified: str) -> str | None:
        """The expression this module uses for `qualified` (`torch.nn.functional` -> `F`), if any."""
        best: str | None = None
        for local, target in self.imports.names.items():
            if target == qualified:
                return local
            if qualified.startswith(target + ".") and best is None:
                best = local + qualified[len(target):]
        return best

    def reference(self, qualified: str) -> cst.BaseExpression:
        """An expression for `qualified`; adds `import <top>` when the module has no spelling for it."""
        spelled = self.local_name(qualified)
        if spelled is None:
            top = qualified.split(".")[0]
            self.needed_imports.add(top)
            spelled = qualified
        return cst.parse_expression(spelled)


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


def applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.applicability == SAFE or unsafe)


def _span(finding: Finding) -> tuple[int, int, int, int]:
    return (finding.line, finding.column - 1, finding.end_line, finding.end_column - 1)


def _non_overlapping(findings: list[Finding]) -> list[Finding]:
    chosen: list[Finding] = []
    last_end = (0, -1)
    for finding in sorted(findings, key=lambda f: (f.line, f.column, -f.end_line, -f.end_column)):
        start = (finding.line, finding.column)
        if start >= last_end:
            chosen.append(finding)
            last_end = (finding.end_line, finding.end_column)
    return chosen


class _Rewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, pending: dict[tuple, list[tuple[Rule, Finding]]], fixctx: FixContext) -> None:
        super().__init__()
        self.pending = pending
        self.fixctx = fixctx
        self.applied: list[Finding] = []

    def on_leave(self, original, updated):
        if not self.pending:
            return updated
        try:
            position = self.get_metadata(PositionProvider, original)
        except KeyError:
            return updated
        key = (position.start.line, position.start.column, position.end.line, position.end.column)
        candidates = self.pending.get(key)
        if not candidates:
            return updated
        for index, (rule, finding) in enumerate(candidates):
            replacement = rule.fix(updated, finding, self.fixctx)
            if replacement is not None:
                self.applied.append(finding)
                del candidates[index]
                if not candidates:
                    del self.pending[key]
                return replacement
        return updated


def _rewrite(text: str, chosen: list[Finding], imports: ImportMap) -> tuple[str, list[Finding]]:
    rules = all_rules()
    pending: dict[tuple, list[tuple[Rule, Finding]]] = {}
    for finding in chosen:
        pending.setdefault(_span(finding), []).append((rules[finding.code](None), finding))  # type: ignore[arg-type]
    module = cst.parse_module(text)
    # libcst drops a file's final lone "\r" (old Mac line endings): remember it to put it back
    lost = text[len(module.code):] if text != module.code and text.startswith(module.code) else ""
    fixctx = FixContext(imports)
    rewriter = _Rewriter(pending, fixctx)
    new_module = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter)
    if fixctx.needed_imports and rewriter.applied:
        new_module = _add_imports(new_module, sorted(fixctx.needed_imports))
    return new_module.code + lost, rewriter.applied


def _add_imports(module: cst.Module, names: list[str]) -> cst.Module:
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    context = CodemodContext()
    for name in names:
        AddImportsVisitor.add_needed_import(context, name)
    return AddImportsVisitor(context).transform_module(module)


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def fix_source(source: SourceFile, codes: tuple[str, ...], unsafe: bool, test_code: bool = False) -> FileFix:
    """Fix one file's text until stable; never returns text that does not parse."""
    rules = all_rules()
    rule_classes = [rules[code] for code in codes if code in rules]
    current = source.text
    result = FileFix(source.path, source.text, source.text)
    dropped: set[tuple] = set()  # (code, span) of fixes that broke the file: not tried again
    findings: list[Finding] = []
    for _ in range(MAX_PASSES):
        findings = lint_source(SourceFile(source.path, current, source.encoding, source.bom), rule_classes, test_code)
        fixable = [f for f in findings if applicable(f, unsafe) and (f.code, _span(f)) not in dropped]
        if not fixable:
            break
        try:
            tree = ast.parse(current)
        except SyntaxError:
            break
        imports = ImportMap()
        collect_module_imports(tree, imports)
        new_text, applied = _try_rewrite(current, _non_overlapping(fixable), imports, dropped, result.messages)
        if not applied or new_text == current:
            break
        result.applied.extend(applied)
        current = new_text
    else:
        findings = lint_source(SourceFile(source.path, current, source.encoding, source.bom), rule_classes, test_code)
        if any(applicable(f, unsafe) and (f.code, _span(f)) not in dropped for f in findings):
            result.messages.append(f"{source.path}: fixes did not converge after {MAX_PASSES} passes; "
                                   "the last parsing result is kept")
    result.fixed = current
    result.remaining = findings
    return result


def _try_rewrite(text: str, chosen: list[Finding], imports: ImportMap, dropped: set[tuple],
                 messages: list[str]) -> tuple[str, list[Finding]]:
    """Rewrite with all chosen fixes; if that fails or does not parse, keep only the rules whose
    fixes work on their own, and drop the others with a message naming the rule."""

    reasons: dict[str, str] = {}

    def attempt(group: list[Finding]) -> tuple[str, list[Finding]] | None:
        try:
            new_text, applied = _rewrite(text, group, imports)
        except Exception as exc:  # a rule's fix that libcst rejects must not cost the file
            reasons[group[0].code] = f"libcst could not apply it ({type(exc).__name__})"
            return None
        if _parses(new_text):
            return new_text, applied
        reasons[group[0].code] = "the result would not parse"
        return None

    everything = attempt(chosen)
    if everything is not None:
        return everything
    good: list[Finding] = []
    for code in sorted({f.code for f in chosen}):
        group = [f for f in chosen if f.code == code]
        if attempt(group) is not None:
            good.extend(group)
        else:
            dropped.update((f.code, _span(f)) for f in group)
            messages.append(f"{chosen[0].path}: dropped {len(group)} {code} fix(es): {reasons.get(code, 'failed')}")
    together = attempt(good) if good else None
    if together is not None:
        return together
    if good:
        dropped.update((f.code, _span(f)) for f in good)
        messages.append(f"{chosen[0].path}: dropped fixes that do not parse together")
    return text, []


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


@dataclass
class FixOutcome:
    diff: str = ""
    changed: list[str] = field(default_factory=list)
    fixed: int = 0
    remaining: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}")
    out = []
    for line in lines:
        out.append(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def fix_paths(findings: list[Finding], settings: Settings, write: bool) -> FixOutcome:
    """Fix every file that has an applicable finding; other findings pass through as remaining."""
    outcome = FixOutcome()
    unsafe = settings.unsafe_fixes
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path, file_findings in by_path.items():
        if not any(applicable(f, unsafe) for f in file_findings):
            outcome.remaining.extend(file_findings)
            continue
        try:
            with open(path, "rb") as handle:
                original_bytes = handle.read()
            source = decode_source(original_bytes, path)  # the very bytes the write will compare against
        except (OSError, SourceError) as exc:
            outcome.errors.append(f"{path}: cannot read: {exc}")
            outcome.remaining.extend(file_findings)
            continue
        result = fix_source(source, settings.codes_for(path), unsafe, settings.is_test_code(path))
        outcome.messages.extend(result.messages)
        if not result.changed:
            outcome.remaining.extend(result.remaining)
            continue
        if write:
            try:
                write_atomic(path, encode_source(source, result.fixed), expected=original_bytes)
            except ChangedOnDisk:
                outcome.errors.append(f"{path}: changed on disk while fixing; not written")
                outcome.remaining.extend(file_findings)
                continue
            except (OSError, UnicodeEncodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                outcome.errors.append(f"{path}: cannot write: {reason}")
                outcome.remaining.extend(file_findings)
                continue
        outcome.diff += unified_diff(path, result.original, result.fixed)
        outcome.fixed += len(result.applied)
        outcome.changed.append(path)
        outcome.remaining.extend(result.remaining)
    outcome.remaining.sort(key=Finding.sort_key)
    return outcome
