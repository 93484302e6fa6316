"""The static engine: one `ast` parse and one traversal per file, every enabled rule at once.

Detection runs on the stdlib `ast` (about ten times cheaper to build than a libcst tree). Fixes
are text edits that rules compute where they find the problem (ptlint.edits); where code runs
(per step, once, ...) is decided after the traversal, for reported nodes only (ptlint.context).
"""

from __future__ import annotations

import ast
import bisect
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .names import ImportMap, collect_module_imports
from .registry import BUILTIN_CODES
from .rule import Finding, Fix, Rule, triggered
from .source import SourceFile
from .suppress import Suppressions


# Deeply nested expressions: ast.parse itself copes with a few thousand levels; so must we.
_RECURSION_LIMIT = 20000


class FileContext:
    """What rules see of the file being checked, and where they report.

    The engine keeps `stack` (ancestors of the node being visited), `loops` (loops and
    comprehensions around it in the current function: a nested def starts afresh) and
    `functions` / `classes` (enclosing definitions) up to date during the traversal.
    """

    def __init__(self, source: SourceFile, tree: ast.Module, test_code: bool = False,
                 project_root: str | None = None) -> None:
        self.source = source
        self.test_code = test_code  # the file matches `test-code`: performance rules stay silent
        self.project_root = project_root  # where the project's own imports resolve (ptlint.project)
        self.path = source.path
        self.tree = tree
        self.imports = ImportMap()
        collect_module_imports(tree, self.imports)
        self.stack: list[ast.AST] = []
        self.loops: list[ast.AST] = []
        self.functions: list[ast.AST] = []
        self.classes: list[ast.ClassDef] = []
        self.findings: list[Finding] = []
        self._reported: list[tuple[Finding, Rule, ast.AST]] = []  # kept by `finish` if in context
        self._edits = None
        self._model = None
        self._assignments: dict[int, dict[str, list[ast.AST]]] = {}
        self._qualnames: dict[int, str | None] = {}
        self.memo: dict = {}  # per-file answers rules share (e.g. "does this loop hold a loop?")

    # -- names -------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        # Several rules ask about the same call; imports seen later in a function do not change
        # what an earlier node meant, so one answer per node is enough.
        key = id(node)
        if key in self._qualnames:
            return self._qualnames[key]
        answer = self._qualnames[key] = self.imports.qualname(node)
        return answer

    # -- shared analyses, built on first use ---------------------------------------------------
    @property
    def edits(self):
        """Fix building for this file (ptlint.edits.Edits)."""
        if self._edits is None:
            from .edits import Edits

            self._edits = Edits(self.source, self.tree, self.imports)
        return self._edits

    @property
    def model(self):
        """Where code runs (ptlint.context.ExecutionModel), built once, on first use."""
        if self._model is None:
            from .context import ExecutionModel

            self._model = ExecutionModel(self)
        return self._model

    def where(self, node: ast.AST):
        """Where `node` runs: context, cold, innermost loop and function (ptlint.context.Where)."""
        return self.model.where(node)

    def imports_torch(self) -> bool:
        return self.imports.imports_module("torch")

    @property
    def parent(self) -> ast.AST | None:
        return self.stack[-1] if self.stack else None

    @property
    def function(self) -> ast.AST | None:
        return self.functions[-1] if self.functions else None

    def assignments(self, name: str, scope: ast.AST | None = None) -> list[ast.AST]:
        """Values assigned to `name` so far (in source order) in a function — default: the
        current one, else the module — not counting nested functions or classes. Targets of
        `for` loops, comprehensions and `with ... as` map to their iterable / context expression;
        an augmented assignment maps to the AugAssign node itself.

        The traversal records bindings as it meets them, so during the traversal this is what
        was assigned before the node being visited; in `end_file` it is the whole scope."""
        table = self._assignments.get(id(scope or self.function or self.tree))
        return table.get(name, []) if table else []

    def bind(self, target: ast.AST, value: ast.AST) -> None:
        table = self._assignments.setdefault(id(self.function or self.tree), {})
        if isinstance(target, ast.Name):
            table.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = _unpacked(target, value)
            for element, part in zip(target.elts, parts):  # else we only know it came from `value`
                self.bind(element.value if isinstance(element, ast.Starred) else element, part)

    # -- reporting ---------------------------------------------------------------------------
    def add_finding(self, rule: Rule, node: ast.AST, end_node: ast.AST, message: str, fix: Fix | None) -> None:
        line = node.lineno
        end_line = end_node.end_lineno or line
        column = self.source.char_column(line, node.col_offset)
        end_column = self.source.char_column(end_line, end_node.end_col_offset or 0)
        finding = Finding(
            code=rule.code, name=rule.name, message=message, path=self.path,
            line=line, column=column + 1, end_line=end_line, end_column=end_column + 1,
            severity=rule.severity, fix=fix,
        )
        self._reported.append((finding, rule, node))

    def finish(self) -> list[Finding]:
        """The reported findings whose code runs where their rule looks, each with its context."""
        for finding, rule, node in self._reported:
            where = self.where(node)
            if where.context in rule.contexts and (rule.cold or not where.cold) and rule.keep(node, where):
                finding.context = where.context
                self.findings.append(finding)
        self._reported = []
        return self.findings


def _unpacked(target: ast.Tuple | ast.List, value: ast.AST) -> list[ast.AST]:
    """What each name of an unpacking target gets, where the value shows it: `a, b = x, y`;
    `for a, b in zip(x, y)` (a loop target is bound to its iterable); `for i, a in enumerate(x)`.
    Otherwise every name gets the whole value."""
    elements = target.elts
    if any(isinstance(e, ast.Starred) for e in elements):
        return [value] * len(elements)
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(elements) \
            and not any(isinstance(e, ast.Starred) for e in value.elts):
        return list(value.elts)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and all(k.arg == "strict" for k in value.keywords) \
            and not any(isinstance(a, ast.Starred) for a in value.args):
        if value.func.id == "zip" and len(value.args) == len(elements):
            return [_element_of(arg) for arg in value.args]
        if value.func.id == "enumerate" and len(value.args) == 1 and len(elements) == 2:
            return [value, _element_of(value.args[0])]
    return [value] * len(elements)


def _element_of(iterable: ast.AST) -> ast.AST:
    """An element of `iterable` stands for it (`row` of `rows`: what lives where `rows` lives);
    the engine binds loop targets to their iterable the same way."""
    return iterable


@dataclass
class FileResult:
    """Everything one file produced: findings, or a one-line error when it could not be checked."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None


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
        for name in _CHILD_FIELDS.get(type(node)) or _child_fields(type(node)):
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
        if isinstance(node, ast.Lambda):
            self.visit(node.body)
        else:
            ctx.imports.push()  # imports inside a function bind names of that function only
            self.visit_all(node.body)
            ctx.imports.pop()
        ctx.functions.pop()
        ctx.loops = saved_loops

    def _class(self, node: ast.ClassDef) -> None:
        self.visit_all(node.decorator_list)
        self.visit_all(node.bases)
        self.visit_all(node.keywords)
        self.ctx.classes.append(node)
        self.visit_all(node.body)
        self.ctx.classes.pop()

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.ctx.imports.add(node)  # function-level imports count from here on


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
    ast.Import: Traversal._import,
    ast.ImportFrom: Traversal._import,
}


def parse(source: SourceFile) -> ast.Module:
    with warnings.catch_warnings():  # invalid escape sequences etc. are not ours to report
        warnings.simplefilter("ignore")
        return ast.parse(source.text, filename=source.path, type_comments=False)


def syntax_error_finding(source: SourceFile, exc: SyntaxError) -> Finding:
    line = exc.lineno or 1
    column = exc.offset or 1
    end_line = getattr(exc, "end_lineno", None) or line
    end_column = getattr(exc, "end_offset", None) or column
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    name, _ = BUILTIN_CODES["PTL001"]
    message = f"SyntaxError: {exc.msg}"
    return Finding("PTL001", name, message, source.path, line, column, end_line, end_column, severity="error")


# Rule families that stay silent in test code (DESIGN.md): performance and compile rules.
# Numerics rules (PTL3) still report there: a wrong formula is wrong in a test too.
SILENT_IN_TESTS = ("PTL1", "PTL2", "PTL4", "PTL5", "PTL6")


def lint_source(source: SourceFile, rule_classes: Iterable[type[Rule]], test_code: bool = False,
                project_root: str | None = None) -> list[Finding]:
    """All findings for one decoded file: suppressions applied, sorted, deduplicated.
    `test_code`: the file is test code (Settings.is_test_code); `project_root`: the folder of
    the configuration, where rules that read imported project modules resolve them."""
    text = source.text
    active = [cls for cls in rule_classes if triggered(cls.triggers, text)
              and not (test_code and cls.code.startswith(SILENT_IN_TESTS))]
    try:
        tree = parse(source)
    except SyntaxError as exc:
        return [syntax_error_finding(source, exc)]
    except (RecursionError, MemoryError):
        return [Finding("PTL001", "syntax-error", "the expression nesting is too deep for Python's parser",
                        source.path, 1, 1, 1, 2, severity="error")]
    except UnicodeEncodeError as exc:  # a lone surrogate (an editor can send one; no file decodes to it)
        line = bisect.bisect_right(source.line_starts, exc.start)
        column = exc.start - source.line_starts[line - 1] + 1
        return [Finding("PTL001", "syntax-error", f"a character Python cannot read ({exc.reason})",
                        source.path, line, column, line, column + 1, severity="error")]
    if not active:
        return []
    ctx = FileContext(source, tree, test_code, project_root)
    rules = [cls(ctx) for cls in active]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))
    try:
        Traversal(ctx, rules).run()
        # a model a rule built during the walk saw the assignments made so far only: where code
        # runs is decided on the whole file, so build it again (parents do not change; callers do)
        ctx._model = None
        for rule in rules:
            rule.end_file()
        findings = ctx.finish()
    finally:
        sys.setrecursionlimit(limit)
    return finalize(source, findings)


def finalize(source: SourceFile, findings: list[Finding]) -> list[Finding]:
    """Drop suppressed and duplicate findings; sort by position."""
    if not findings:
        return findings
    suppressions = Suppressions.scan(source.text)
    seen: set[tuple] = set()
    out: list[Finding] = []
    for finding in sorted(findings, key=Finding.sort_key):
        key = (finding.code, finding.line, finding.message)  # the same finding once per line (JUDGING.md)
        if key in seen or suppressions.suppresses(finding):
            continue
        seen.add(key)
        out.append(finding)
    return out
