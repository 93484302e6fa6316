"""What a rule sees of the file being checked (the semantic facts, plus the source, fix building
and where findings go), and how the engine keeps only findings whose code runs where their
rule looks."""

from __future__ import annotations

import ast

from ptlint.engine.finding import Finding, Fix
from ptlint.engine.source import SourceFile
from ptlint.semantics.facts import FileFacts
from ptlint.semantics.nodes import def_key, is_main_test
from ptlint.semantics.project import MAIN_BLOCK, WHOLE_MODULE
from ptlint.semantics.values import without_an_accelerator
from ptlint.semantics.where import CALLED, ExecutionModel, Where, execution_model

# Builtins that read a function's locals by name: a nested def may be reached through them.
LOCALS_BY_NAME = {"locals", "vars", "eval", "exec"}


def _joined(kept: Fix | None, other: Fix | None) -> Fix | None:
    """`kept` with `other`'s edits too, where both are fixes of the same safety whose edits touch
    different text; else `kept` (the fixer's next pass fixes the rest)."""
    if kept is None or other is None or kept.applicability != other.applicability:
        return kept
    spans = [((e.line, e.column), (e.end_line, e.end_column)) for e in kept.edits]
    added = []
    for edit in other.edits:
        if edit in kept.edits:
            continue  # the same edit (an `import torch` both need)
        start, end = (edit.line, edit.column), (edit.end_line, edit.end_column)
        if any(start < b and a < end or start == a or end == b for a, b in spans):
            return kept
        added.append(edit)
    return Fix(kept.applicability, kept.message, (*kept.edits, *added))


class FileContext(FileFacts):
    """The file being checked, for rules: `FileFacts` (names, assignments, traversal state) and
    the decoded source, fix building (`edits`), where code runs (`model`, `where`) and reporting."""

    def __init__(self, source: SourceFile, tree: ast.Module, test_code: bool = False,
                 project_root: str | None = None) -> None:
        super().__init__(source.path, source.text, tree, project_root)
        self.source = source
        self.test_code = test_code  # the file matches `test-code`: rules silent in tests stay silent
        self.findings: list[Finding] = []
        self._reported: list[tuple[Finding, object, ast.AST]] = []  # kept by `finish` if in context
        self._edits = None

    @property
    def edits(self):
        """Fix building for this file (ptlint.engine.edits.Edits)."""
        if self._edits is None:
            from ptlint.engine.edits import Edits

            self._edits = Edits(self.source, self.tree, self.names, self.parent)
        return self._edits

    @property
    def model(self) -> ExecutionModel:
        """Where code runs (ptlint.semantics.where.ExecutionModel), built once, on first use."""
        return execution_model(self)

    def where(self, node: ast.AST) -> Where:
        """Where `node` runs: context, cold, innermost loop and function."""
        return self.model.where(node)

    # -- reporting ---------------------------------------------------------------------------
    def add_finding(self, rule, node: ast.AST, end_node: ast.AST, message: str, fix: Fix | None,
                    help: str | None = None) -> None:
        line = node.lineno
        end_line = end_node.end_lineno or line
        column = self.source.char_column(line, node.col_offset)
        end_column = self.source.char_column(end_line, end_node.end_col_offset or 0)
        finding = Finding(
            code=rule.code, name=rule.name, message=message, path=self.path,
            line=line, column=column + 1, end_line=end_line, end_column=end_column + 1,
            severity=rule.severity, fix=fix, help=help,
        )
        self._reported.append((finding, rule, node))

    def _top_level_name(self, node: ast.AST) -> str | None:
        """The name of the outermost def or class around `node` (None at module level)."""
        name = None
        current = self.parent(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = current.name
            current = self.parent(current)
        return name

    def _in_dead_code(self, node: ast.AST, dead) -> bool:
        """`node` sits in a top-level def or class, or in a method (`Class.method`), that `dead` names,
        or in the module's `if __name__ == "__main__":` block, where `dead` names that (MAIN_BLOCK),
        or anywhere in a module none of whose code runs (WHOLE_MODULE)."""
        if WHOLE_MODULE in dead or self._top_level_name(node) in dead:
            return True
        if MAIN_BLOCK in dead and self._in_main_block(node):
            return True
        current = self.parent(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and isinstance(self.parent(current), ast.ClassDef) and def_key(current, self.parent) in dead:
                return True
            current = self.parent(current)
        return False

    def _in_main_block(self, node: ast.AST) -> bool:
        current, parent = node, self.parent(node)
        while parent is not None and not isinstance(parent, ast.Module):
            current, parent = parent, self.parent(parent)
        return isinstance(current, ast.If) and is_main_test(current.test) and current is not node

    def _in_unused_local_def(self, node: ast.AST) -> bool:
        """`node` sits in a def nested in a function that never names it (`def empirical_stat(...)`
        inside `main()`, never called, returned or passed on): it never runs. Not a decorated def
        (a decorator may register it), nor one whose function reads its locals by name."""
        current = self.parent(node)
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and not current.decorator_list:
                outer = self.parent(current)
                while outer is not None and not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                   ast.ClassDef, ast.Module)):
                    outer = self.parent(outer)
                if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef)) and not any(
                        isinstance(n, ast.Name) and (n.id == current.name and isinstance(n.ctx, ast.Load)
                                                     or n.id in LOCALS_BY_NAME) for n in ast.walk(outer)):
                    return True
            current = self.parent(current)
        return False

    def finish(self) -> list[Finding]:
        """The reported findings whose code runs where their rule looks, each with its context; a
        line once per rule (`a, b = torch.zeros(n).cuda(), torch.ones(n).cuda()`: one finding, the
        first, whose fix takes the others' edits where they are as safe and touch other text)."""
        project = self.project
        lines = {(finding.code, finding.line): finding for finding in self.findings}
        for finding, rule, node in self._reported:
            kept = lines.get((finding.code, finding.line))
            if kept is not None:
                kept.fix = _joined(kept.fix, finding.fix)
                continue
            if project is not None and rule.needs_compile and not project.compiles:
                continue  # nothing in the project compiles code: no graph to break
            if project is not None and project.dead and self._in_dead_code(node, project.dead):
                continue  # a def or a method nothing in the training project uses: it never runs
            if self._in_unused_local_def(node):
                continue  # a nested def its function never names: it never runs
            where = self.where(node)
            if project is not None and rule.needs_accelerator and project.cpu_only \
                    and self.model.base_of(where.function) != CALLED:
                continue  # every program this code runs in stays on the CPU: nothing to wait for
                # (code nobody in the project calls runs in programs ptlint does not see)
            if rule.needs_accelerator and without_an_accelerator(node, self):
                continue  # the `else` of `if torch.cuda.is_available():`: it runs on the CPU
            if where.context in rule.contexts and (rule.cold or not where.cold) and rule.keep(node, where):
                finding.context = where.context
                finding.via = where.via
                self.findings.append(finding)
                lines[(finding.code, finding.line)] = finding
        self._reported = []
        return self.findings
