"""The static engine: one `ast` parse and one traversal per file, every enabled rule at once.

Detection runs on the stdlib `ast` (about ten times cheaper to build than a libcst tree). Fixes
are text edits that rules compute where they find the problem (ptlint.engine.edits); where code runs
(per step, once, ...) is decided after the traversal, for reported nodes only (ptlint.semantics.where).
"""

from __future__ import annotations

import ast
import bisect
import sys
from typing import Callable, Collection, Iterable

from ptlint.engine.file_context import FileContext
from ptlint.engine.finding import Finding
from ptlint.engine.registry import BUILTIN_CODES, CODE_HELP, DYNAMIC_CODES, known_codes
from ptlint.engine.rule import Rule, triggered
from ptlint.engine.source import SourceFile
from ptlint.engine.suppress import UNUSED_NOQA, Suppressions
from ptlint.semantics.nodes import parse_python

# Deeply nested expressions: ast.parse itself copes with a few thousand levels; so must we.
_RECURSION_LIMIT = 20000


# Fields that never hold a node worth visiting: names and flags, and the operator and context
# singletons (`ast.Add`, `ast.Load`), which no rule asks about.
_NOT_CHILDREN = {"ctx", "op", "ops", "id", "attr", "arg", "name", "kind", "type_comment", "n", "s", "level",
                 "module", "asname", "is_async", "conversion", "simple", "tag",
                 "names", "kwd_attrs", "rest"}  # names: Global/Nonlocal hold str; Import is special
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        if kind is ast.Constant:
            fields = ()
        else:
            fields = tuple(f for f in kind._fields if f not in _NOT_CHILDREN)
        _CHILD_FIELDS[kind] = fields
    return fields


_DISPATCH: dict[type, list[tuple[type, str, str]]] = {}


def _handlers_of(rule_class: type) -> list[tuple[type, str, str]]:
    """(node type, "visit"/"leave", method name) for every visit_X / leave_X of a rule class."""
    if rule_class not in _DISPATCH:
        found = []
        for attr in dir(rule_class):
            if attr.startswith(("visit_", "leave_")):
                node_type = getattr(ast, attr[6:], None)
                if isinstance(node_type, type):
                    found.append((node_type, attr[:5], attr))
        _DISPATCH[rule_class] = found
    return _DISPATCH[rule_class]


class Traversal:
    """Walks a module once and dispatches each node to the rules that handle its type."""

    def __init__(self, ctx: FileContext, rules: list[Rule]) -> None:
        self.ctx = ctx
        self.enter: dict[type, list[Callable]] = {}
        self.leave: dict[type, list[Callable]] = {}
        for rule in rules:
            for node_type, when, attr in _handlers_of(type(rule)):
                table = self.enter if when == "visit" else self.leave
                table.setdefault(node_type, []).append(getattr(rule, attr))
        # Leaves (names, constants) are only worth a call when some rule asks for them.
        self.skip = {kind for kind in (ast.Name, ast.Constant) if kind not in self.enter and kind not in self.leave}

    def run(self) -> None:
        self.visit(self.ctx.tree)

    def visit(self, node: ast.AST) -> None:
        ctx = self.ctx
        kind = type(node)
        handlers = self.enter.get(kind)
        if handlers:
            for handler in handlers:
                handler(node)
        ctx.stack.append(node)
        special = _SPECIAL.get(kind)
        if special is not None:
            special(self, node)
        else:
            self.visit_children(node)
        ctx.stack.pop()
        handlers = self.leave.get(kind)
        if handlers:
            for handler in handlers:
                handler(node)

    def visit_children(self, node: ast.AST) -> None:
        visit = self.visit
        skip = self.skip
        fields = _CHILD_FIELDS.get(type(node))
        if fields is None:  # (not `or`: an operator node has no fields, an empty tuple)
            fields = _child_fields(type(node))
        for name in fields:
            value = getattr(node, name, None)
            if value is None:
                continue
            if type(value) is list:
                for item in value:
                    if item is not None and type(item) not in skip:
                        visit(item)
            elif type(value) not in skip and isinstance(value, ast.AST):
                visit(value)

    def visit_all(self, nodes: Iterable[ast.AST | None]) -> None:
        for node in nodes:
            if node is not None:
                self.visit(node)

    # -- nodes whose parts run in different contexts, or that bind names ---------------------
    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)  # evaluated once, before the loop
        self.ctx.bind(node.target, node.iter)
        self.ctx.loops.append(node)
        self.visit(node.target)
        self.visit_all(node.body)
        self.ctx.loops.pop()
        self.visit_all(node.orelse)  # runs once, after the loop

    def _while(self, node: ast.While) -> None:
        self.ctx.loops.append(node)
        self.visit(node.test)
        self.visit_all(node.body)
        self.ctx.loops.pop()
        self.visit_all(node.orelse)

    def _comprehension(self, node: ast.AST) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # the first iterable is evaluated once, outside
        self.ctx.loops.append(node)
        self.ctx.names.enter(node)
        for index, generator in enumerate(generators):
            if index:
                self.visit(generator.iter)
            self.ctx.bind(generator.target, generator.iter)
            self.visit(generator.target)
            self.visit_all(generator.ifs)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self.ctx.names.leave()
        self.ctx.loops.pop()

    def _assign(self, node: ast.Assign) -> None:
        self.visit_children(node)  # the value is evaluated before the names are bound
        for target in node.targets:
            self.ctx.bind(target, node.value)

    def _ann_assign(self, node: ast.AnnAssign) -> None:
        self.visit_children(node)
        if node.value is not None:
            self.ctx.bind(node.target, node.value)

    def _aug_assign(self, node: ast.AugAssign) -> None:
        self.visit_children(node)
        self.ctx.bind(node.target, node)

    def _named_expr(self, node: ast.NamedExpr) -> None:
        self.visit_children(node)
        self.ctx.bind(node.target, node.value)

    def _withitem(self, node: ast.withitem) -> None:
        self.visit_children(node)
        if node.optional_vars is not None:
            self.ctx.bind(node.optional_vars, node.context_expr)

    def _function(self, node: ast.AST) -> None:
        ctx = self.ctx
        # decorators, defaults and annotations run where the def is, not in the new function
        if not isinstance(node, ast.Lambda):
            self.visit_all(node.decorator_list)
            self.visit_all([node.returns])
        self.visit(node.args)
        saved_loops, ctx.loops = ctx.loops, []
        ctx.functions.append(node)
        ctx.names.enter(node)
        if isinstance(node, ast.Lambda):
            self.visit(node.body)
        else:
            self.visit_all(node.body)
        ctx.names.leave()
        ctx.functions.pop()
        ctx.loops = saved_loops

    def _class(self, node: ast.ClassDef) -> None:
        self.visit_all(node.decorator_list)
        self.visit_all(node.bases)
        self.visit_all(node.keywords)
        self.ctx.classes.append(node)
        self.ctx.names.enter(node)
        self.visit_all(node.body)
        self.ctx.names.leave()
        self.ctx.classes.pop()


_SPECIAL: dict[type, Callable[[Traversal, ast.AST], None]] = {
    ast.For: Traversal._for,
    ast.AsyncFor: Traversal._for,
    ast.While: Traversal._while,
    ast.ListComp: Traversal._comprehension,
    ast.SetComp: Traversal._comprehension,
    ast.DictComp: Traversal._comprehension,
    ast.GeneratorExp: Traversal._comprehension,
    ast.Assign: Traversal._assign,
    ast.AnnAssign: Traversal._ann_assign,
    ast.AugAssign: Traversal._aug_assign,
    ast.NamedExpr: Traversal._named_expr,
    ast.withitem: Traversal._withitem,
    ast.FunctionDef: Traversal._function,
    ast.AsyncFunctionDef: Traversal._function,
    ast.Lambda: Traversal._function,
    ast.ClassDef: Traversal._class,
}


def parse(source: SourceFile) -> ast.Module:
    return parse_python(source.text, source.path)


def syntax_error_finding(source: SourceFile, exc: SyntaxError) -> Finding:
    line = exc.lineno or 1
    column = exc.offset or 1
    end_line = getattr(exc, "end_lineno", None) or line
    end_column = getattr(exc, "end_offset", None) or column
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    name, _ = BUILTIN_CODES["PTL001"]
    message = f"SyntaxError: {exc.msg}"
    return Finding("PTL001", name, message, source.path, line, column, end_line, end_column, severity="error",
                   help=CODE_HELP["PTL001"])


def lint_source(source: SourceFile, rule_classes: Iterable[type[Rule]], test_code: bool = False,
                project_root: str | None = None, enabled: Collection[str] | None = None,
                tree: ast.Module | None = None, project=None) -> list[Finding]:
    """All findings for one decoded file: suppressions applied, sorted, deduplicated.
    `test_code`: the file is test code (Settings.is_test_code); `project_root`: the folder of
    the configuration, where rules that read imported project modules resolve them; `enabled`:
    every code enabled for the file (also rules whose triggers are absent), for PTL002
    unused-noqa, which runs only when it is among them; `tree`: the text's tree, when the caller
    parsed it already (the language server keeps it for its fixes); `project`: what the rest of
    the project says of this file (ptlint.semantics.project.ProjectFacts), None where none is known."""
    return lint_and_summarize(source, rule_classes, test_code, project_root, enabled, tree, project)[0]


def lint_and_summarize(source: SourceFile, rule_classes: Iterable[type[Rule]], test_code: bool = False,
                       project_root: str | None = None, enabled: Collection[str] | None = None,
                       tree: ast.Module | None = None, project=None,
                       summarize: bool = False) -> tuple[list[Finding], dict | None]:
    """`lint_source`, and with `summarize` the file's summary for the project model
    (ptlint.semantics.summary), from the same parse and traversal; None when it does not parse."""
    text = source.text
    active = [cls for cls in rule_classes
              if triggered(cls.triggers, text) and (cls.reports_in_tests or not test_code)]
    try:
        tree = tree if tree is not None else parse(source)
    except SyntaxError as exc:
        return [syntax_error_finding(source, exc)], None
    except (RecursionError, MemoryError):
        return [Finding("PTL001", "syntax-error", "the expression nesting is too deep for Python's parser",
                        source.path, 1, 1, 1, 2, severity="error", help=CODE_HELP["PTL001"])], None
    except UnicodeEncodeError as exc:  # a lone surrogate (an editor can send one; no file decodes to it)
        line = bisect.bisect_right(source.line_starts, exc.start)
        column = exc.start - source.line_starts[line - 1] + 1
        return [Finding("PTL001", "syntax-error", f"a character Python cannot read ({exc.reason})",
                        source.path, line, column, line, column + 1, severity="error", help=CODE_HELP["PTL001"])], None
    if not active and not summarize:
        return finalize(source, [], enabled), None
    ctx = FileContext(source, tree, test_code, project_root)
    ctx.project = project
    rules = [cls(ctx) for cls in active]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    summary = None
    try:
        if rules:
            Traversal(ctx, rules).run()  # where code runs is decided after it, on the whole file
        for rule in rules:
            rule.end_file()
        findings = ctx.finish()
        if summarize:
            from ptlint.semantics.summary import summarize as summary_of

            summary = summary_of(ctx)
        ctx.memo.clear()  # analyses kept there refer back to the file: let it go now, not at the next collection
    finally:
        sys.setrecursionlimit(limit)
    return finalize(source, findings, enabled), summary


def finalize(source: SourceFile, findings: list[Finding], enabled: Collection[str] | None = None) -> list[Finding]:
    """Drop suppressed and duplicate findings, add PTL002 for the `noqa` codes that suppressed
    nothing (when enabled); sort by position."""
    unused_noqa = enabled is not None and UNUSED_NOQA in enabled
    if not findings and not unused_noqa:
        return findings
    suppressions = Suppressions.scan(source)
    seen: set[tuple] = set()
    out: list[Finding] = []
    for finding in sorted(findings, key=Finding.sort_key):
        key = (finding.code, finding.line, finding.message)  # the same finding once per line (JUDGING.md)
        if key in seen or suppressions.suppresses(finding):
            continue
        seen.add(key)
        out.append(finding)
    if unused_noqa and suppressions.directives:
        static = [code for code in enabled if code not in DYNAMIC_CODES]  # the dynamic pass is not here to judge
        out = sorted(out + suppressions.unused(source.path, static, known_codes()), key=Finding.sort_key)
    return out
