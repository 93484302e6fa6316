"""The structural check of a fix: the code around its edits must mean what it meant.

A fix's edits are applied to the text; the result must parse, and compared with the original:

- every node that encloses an edit (the edited statement, the expressions around the edit) is
  still there, over the same code, of the same kind: `return(torch.exp(h) - 1) / h` rewritten
  to `returntorch.expm1(h) / h` turns a `return` into an expression, `a * b` with `b` replaced
  by `c + d` unparenthesised turns a product into a sum;
- every name outside the edits (variables, attributes, parameters, keywords, imported names) is
  still there, and no new one appears outside them (two tokens glued into one: `not(x)` to
  `notx`);
- every name outside the edits keeps its binding: the fix neither adds a binding that takes it
  over (a variable of the fix named like one of the user's) nor removes one it used (a loop
  variable read after the loop the fix replaces);
- a name the fix brings in (`torch` in `torch._foreach_mul_`) means a module the file imports, or
  a builtin, there: not a parameter or local that shadows it (`def step(model, torch=None)`).
  Names the fix carries over from the code it replaces keep their meaning; names it binds itself
  are its own.

Only the top-level statements the edits touch are parsed again, so a fix in a 50,000-line file is
checked in milliseconds (the module's other bindings come from the original tree).
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable

from ptlint.engine.edits import apply_edits
from ptlint.semantics.nodes import parse_python

if TYPE_CHECKING:
    from ptlint.engine.finding import Edit
    from ptlint.engine.source import SourceFile

_BUILTINS = frozenset(dir(builtins))
# Scope kinds, binding flags and meanings (tags compared with each other, never shown).
MODULE, FUNCTION, CLASS, LAMBDA, COMPREHENSION = "module", "function", "class", "lambda", "comprehension"
INSIDE, OUTSIDE, IMPORT = "inside", "outside", "import"  # bound inside an edit / outside them / by an import
BUILTIN, FIX = "builtin", "fix"  # a name no scope binds; a scope the fix's own text makes
_LINE_END = re.compile(r"\r\n|\r|\n")  # as Python's tokenizer ends lines


class FixRejected(Exception):
    """A fix whose result would not parse or would change the code around it; the message says
    why in one line."""


def checked_text(source: "SourceFile", edits: Iterable["Edit"], tree: ast.Module | None = None) -> str:
    """The text with `edits` applied (non-overlapping; identical ones count once), after the
    structural check. FixRejected when it fails. `tree`: the original text's tree, if at hand."""
    text = source.text
    edits = list(edits)
    spans = sorted({(source.offset(e.line, e.column - 1), source.offset(e.end_line, e.end_column - 1), e.content)
                    for e in edits})
    if not spans:
        return text
    for (_, end, _), (start, _, _) in zip(spans, spans[1:]):
        if start < end:
            raise FixRejected("its edits overlap")
    new_text = apply_edits(source, edits)
    if tree is None:
        try:
            tree = parse_text(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise FixRejected("the original does not parse") from None
    _Check(text, tree, spans).run()
    return new_text


def parse_text(text: str) -> ast.Module:
    """`ast.parse` as the checks parse (quietly, legacy `async=` read: `parse_python`)."""
    return parse_python(text)


# -- positions ---------------------------------------------------------------------------------

class _Positions:
    """Character offsets of `ast` positions (UTF-8 byte columns) in one text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [match.end() for match in _LINE_END.finditer(text)]

    def offset(self, line: int, byte_column: int) -> int:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        content = self.text[start:end]
        if content.isascii():
            return start + byte_column
        return start + len(content.encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int] | None:
        if getattr(node, "end_lineno", None) is None:
            return None
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)

    def line(self, offset: int) -> int:
        low, high = 0, len(self.starts) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.starts[middle] <= offset:
                low = middle
            else:
                high = middle - 1
        return low + 1


# -- what a node is, in words ----------------------------------------------------------------------

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.MatMult: "@", ast.Div: "/", ast.Mod: "%",
              ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^",
              ast.BitAnd: "&", ast.FloorDiv: "//", ast.And: "and", ast.Or: "or", ast.Not: "not",
              ast.Invert: "~", ast.UAdd: "+", ast.USub: "-", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<",
              ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
              ast.NotIn: "not in"}


def _kind(node: ast.AST) -> tuple:
    """What must stay the same of a node that encloses an edit: its type, and its operator."""
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.AugAssign)):
        return type(node), type(node.op)
    if isinstance(node, ast.Compare):
        return type(node), tuple(map(type, node.ops))
    if isinstance(node, ast.Attribute):
        return type(node), node.attr
    return (type(node),)


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.stmt):
        keyword = {ast.Expr: "an expression statement", ast.Assign: "an assignment",
                   ast.AugAssign: "an augmented assignment", ast.AnnAssign: "an annotated assignment",
                   ast.FunctionDef: "a `def`", ast.AsyncFunctionDef: "an `async def`", ast.ClassDef: "a `class`",
                   ast.ImportFrom: "a `from ... import`"}.get(type(node))
        return keyword or f"a `{type(node).__name__.lower()}` statement"
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)):
        return f"a `{_OPERATORS.get(type(node.op), '?')}` expression"
    if isinstance(node, ast.Compare):
        return f"a `{' '.join(_OPERATORS.get(type(op), '?') for op in node.ops)}` comparison"
    return {ast.Call: "a call", ast.Attribute: "an attribute", ast.Subscript: "a subscript", ast.Name: "a name",
            ast.Tuple: "a tuple", ast.IfExp: "a conditional expression", ast.Lambda: "a lambda",
            ast.keyword: "a keyword argument"}.get(type(node), f"a {type(node).__name__}")


def _name_of(node: ast.AST) -> str | None:
    """The name a node spells (variables, attributes, parameters, keywords, imported names)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return "." + node.attr
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.keyword):
        return (node.arg or "**") + "="
    if isinstance(node, ast.alias):
        return f"{node.name} as {node.asname}" if node.asname else node.name
    return None


# -- scopes ------------------------------------------------------------------------------------

@dataclass(eq=False)
class _Scope:
    kind: str  # MODULE, FUNCTION, CLASS, LAMBDA, COMPREHENSION
    node: ast.AST | None
    parent: "_Scope | None"
    bindings: dict[str, set[str]] = field(default_factory=dict)  # name -> {INSIDE/OUTSIDE, IMPORT, "module=..."}
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _Bindings:
    """The scopes of one tree (of a region: whole top-level statements) and, for every name read
    in it, the scope it is read in. `inside(start, end)`: whether a span lies inside an edit."""

    def __init__(self, module: _Scope, inside, shallow: bool = False) -> None:
        self.module = module
        self.inside = inside
        self.shallow = shallow  # module-level bindings only: skip the bodies of functions and classes
        self.positions: _Positions | None = None
        self.loads: list[tuple[ast.Name, _Scope]] = []

    def bind(self, scope: _Scope, name: str, node: ast.AST, module: str | None = None) -> None:
        """Record a binding of `name` in `scope`; `module`: the module an import binds it to."""
        span = self.positions.span(node) if self.positions else None
        flags = scope.bindings.setdefault(name, set())
        flags.add(INSIDE if span is not None and self.inside(*span) else OUTSIDE)
        if module is not None:
            flags.update((IMPORT, f"module={module}"))

    def walk(self, nodes: Iterable[ast.AST], scope: _Scope) -> None:
        pending = [(node, scope) for node in reversed(list(nodes))]
        while pending:
            node, scope = pending.pop()
            for child, child_scope in reversed(self.visit(node, scope)):
                pending.append((child, child_scope))

    def visit(self, node: ast.AST, scope: _Scope) -> list[tuple[ast.AST, _Scope]]:
        """Record what `node` binds or reads; return its children with the scope each runs in."""
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                self.loads.append((node, scope))
            else:
                self.bind(scope, node.id, node)
            return []
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            (scope.declared_global if isinstance(node, ast.Global) else scope.declared_nonlocal).update(node.names)
            return []
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                # `from m import *` binds names unknown here: "*" stands for them
                if isinstance(node, ast.Import):
                    module = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    module = "." * node.level + f"{node.module or ''}.{alias.name}"
                self.bind(scope, alias.asname or alias.name.split(".")[0], alias, module)
            return []
        if isinstance(node, _FUNCTIONS + (ast.Lambda,)):
            return self._function(node, scope)
        if isinstance(node, ast.ClassDef):
            self.bind(scope, node.name, node)
            outside = [*node.decorator_list, *node.bases, *node.keywords]
            if self.shallow:
                return [(n, scope) for n in outside]
            inner = self._open(CLASS, node, scope)
            return [(n, scope) for n in outside] + [(n, inner) for n in node.body]
        if isinstance(node, _COMPREHENSIONS):
            inner = self._open(COMPREHENSION, node, scope)
            first, *rest = node.generators
            out = [(first.iter, scope), (first.target, inner), *[(c, inner) for c in first.ifs]]
            for generator in rest:
                out += [(generator.iter, inner), (generator.target, inner), *[(c, inner) for c in generator.ifs]]
            elements = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            return out + [(e, inner) for e in elements]
        if isinstance(node, ast.NamedExpr):  # binds in the nearest scope that is not a comprehension
            target = scope
            while target.kind == COMPREHENSION and target.parent is not None:
                target = target.parent
            self.bind(target, node.target.id, node.target)
            return [(node.value, scope)]
        if isinstance(node, ast.ExceptHandler) and node.name:
            self.bind(scope, node.name, node)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self.bind(scope, node.name, node)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            self.bind(scope, node.rest, node)
        return [(child, scope) for child in ast.iter_child_nodes(node)]

    def _open(self, kind: str, node: ast.AST, parent: _Scope) -> _Scope:
        return _Scope(kind, node, parent)

    def _function(self, node, scope: _Scope) -> list[tuple[ast.AST, _Scope]]:
        arguments = node.args
        outside: list[ast.AST] = [*arguments.defaults, *[d for d in arguments.kw_defaults if d is not None]]
        if not isinstance(node, ast.Lambda):
            self.bind(scope, node.name, node)
            outside += node.decorator_list
            outside += [a.annotation for a in _parameters(arguments) if a.annotation is not None]
            if node.returns is not None:
                outside.append(node.returns)
        if self.shallow:
            return [(n, scope) for n in outside]
        inner = self._open(LAMBDA if isinstance(node, ast.Lambda) else FUNCTION, node, scope)
        for parameter in _parameters(arguments):
            self.bind(inner, parameter.arg, parameter)
        body = [node.body] if isinstance(node, ast.Lambda) else node.body
        return [(n, scope) for n in outside] + [(n, inner) for n in body]


def _parameters(arguments: ast.arguments) -> list[ast.arg]:
    return [*arguments.posonlyargs, *arguments.args, *([arguments.vararg] if arguments.vararg else []),
            *arguments.kwonlyargs, *([arguments.kwarg] if arguments.kwarg else [])]


def _resolve(scope: _Scope, name: str) -> tuple[_Scope | None, frozenset[str]]:
    """The scope whose binding `name` means when read in `scope` (None: a builtin or nothing),
    with that binding's flags."""
    current: _Scope | None = scope
    while current is not None:
        if current.kind == MODULE or name in current.declared_global:
            module = current
            while module.parent is not None:
                module = module.parent
            flags = module.bindings.get(name)
            return (module, frozenset(flags)) if flags else (None, frozenset())
        visible = current is scope or current.kind != CLASS  # a class body is not seen by its methods
        if visible and name in current.bindings and name not in current.declared_nonlocal:
            return current, frozenset(current.bindings[name])
        current = current.parent
    return None, frozenset()


def _other_module(scope: _Scope | None, name: str, flags: frozenset[str], module: _Scope) -> bool:
    """Whether `name`, imported in a function or class, names another module there than the
    module-level import of that name (`import numpy as torch` inside a function)."""
    if scope is None or scope.kind == MODULE:
        return False
    at_module = {f for f in module.bindings.get(name, ()) if f.startswith("module=")}
    return bool(at_module) and not {f for f in flags if f.startswith("module=")} <= at_module


def _imported_further_out(scope: _Scope, name: str) -> bool:
    """Whether a scope enclosing `scope` imports `name`: a binding in `scope` hides that import."""
    outer = scope.parent
    while outer is not None:
        if IMPORT in outer.bindings.get(name, ()):
            return True
        outer = outer.parent
    return False


def module_bindings(statements: Iterable[ast.stmt]) -> dict[str, set[str]]:
    """Names the statements bind at module level, each with IMPORT when an import binds it."""
    scope = _Scope(MODULE, None, None)
    _Bindings(scope, lambda start, end: False, shallow=True).walk(statements, scope)
    return {name: {OUTSIDE} | {f for f in flags if f == IMPORT or f.startswith("module=")}
            for name, flags in scope.bindings.items()}


# -- the check ---------------------------------------------------------------------------------

@dataclass
class _Region:
    start: int  # offsets in the original text: whole lines of whole top-level statements
    end: int
    statements: list[int]  # indexes into the module body
    edits: list[tuple[int, int, str]]  # offsets relative to `start`


class _Check:
    def __init__(self, text: str, tree: ast.Module, spans: list[tuple[int, int, str]]) -> None:
        self.text = text
        self.tree = tree
        self.spans = spans
        self.positions = _Positions(text)

    def run(self) -> None:
        regions = self.regions()
        touched = {index for region in regions for index in region.statements}
        others = module_bindings(s for index, s in enumerate(self.tree.body) if index not in touched)
        compared, line_shift = [], 0
        for region in regions:
            compare = self.region(region, line_shift)
            line_shift += compare.new.text.count("\n") - compare.old.text.count("\n")
            compared.append(compare)
        # the module's bindings before and after: the untouched statements', and every region's
        old_module, new_module = _merged(others), _merged(others)
        for compare in compared:
            for name, flags in compare.module_bindings(old=True).items():
                old_module.setdefault(name, set()).update(flags)
            for name, flags in compare.module_bindings(old=False).items():
                new_module.setdefault(name, set()).update(flags)
        for compare in compared:
            compare.run(old_module, new_module)

    def regions(self) -> list[_Region]:
        """The edits grouped by the top-level statements they touch (or touch the edges of)."""
        extents = []  # (start, end) of each top-level statement, as whole lines
        for statement in self.tree.body:
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
            start = self.positions.starts[first - 1]
            end_line = statement.end_lineno
            end = self.positions.starts[end_line] if end_line < len(self.positions.starts) else len(self.text)
            extents.append((start, end))
        regions: list[_Region] = []
        for start, end, content in self.spans:
            touched = [index for index, (s, e) in enumerate(extents) if s <= end and start <= e]
            if touched:
                low, high = extents[touched[0]][0], extents[touched[-1]][1]
            else:  # only blank lines and comments around: the edit's own lines
                low = self.positions.starts[self.positions.line(start) - 1]
                line = self.positions.line(end)
                high = self.positions.starts[line] if line < len(self.positions.starts) else len(self.text)
            if regions and low <= regions[-1].end:
                region = regions[-1]
                region.end = max(region.end, high)
                region.statements = sorted(set(region.statements) | set(touched))
            else:
                region = _Region(low, high, touched, [])
                regions.append(region)
            region.edits.append((start, end, content))
        for region in regions:
            region.edits = [(s - region.start, e - region.start, c) for s, e, c in region.edits]
        return regions

    def region(self, region: _Region, line_shift: int) -> "_Compare":
        old_text = self.text[region.start:region.end]
        pieces, last = [], 0
        for start, end, content in region.edits:
            pieces += [old_text[last:start], content]
            last = end
        new_text = "".join(pieces) + old_text[last:]
        first_line = self.positions.line(region.start)
        new_first_line = first_line + line_shift
        try:
            old_tree = parse_text(old_text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            old_tree = None  # e.g. a `from __future__` import, which must come first in a file
        try:
            new_tree = parse_text(new_text)
        except SyntaxError as exc:
            line = new_first_line + (exc.lineno or 1) - 1
            raise FixRejected(f"the result would not parse ({exc.msg} at line {line})") from None
        except (ValueError, RecursionError, MemoryError):
            raise FixRejected("the result would not parse") from None
        if old_tree is None:
            raise FixRejected("the code it edits cannot be checked on its own")
        return _Compare(old_text, old_tree, new_text, new_tree, region.edits, first_line, new_first_line)


def _merged(bindings: dict[str, set[str]]) -> dict[str, set[str]]:
    return {name: set(flags) for name, flags in bindings.items()}


class _Compare:
    """One region: the original code and the fixed code, with the edits between them."""

    def __init__(self, old_text: str, old_tree: ast.Module, new_text: str, new_tree: ast.Module,
                 edits: list[tuple[int, int, str]], first_line: int, new_first_line: int) -> None:
        self.old = _Positions(old_text)
        self.new = _Positions(new_text)
        self.old_tree, self.new_tree = old_tree, new_tree
        self.edits = edits
        self.first_line, self.new_first_line = first_line, new_first_line
        self.new_spans = []  # where each edit's content lies in the new text
        shift = 0
        for start, end, content in edits:
            self.new_spans.append((start + shift, start + shift + len(content)))
            shift += len(content) - (end - start)

    # positions ---------------------------------------------------------------------------------
    def old_inside(self, start: int, end: int) -> bool:
        return any(s <= start and end <= e and s < e for s, e, _ in self.edits)

    def new_inside(self, start: int, end: int) -> bool:
        return any(s <= start and end <= e and s < e for s, e in self.new_spans)

    def old_outside(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e, _ in self.edits)

    def new_outside(self, start: int, end: int) -> bool:
        return all(end <= s or start >= e for s, e in self.new_spans)

    def mapped(self, offset: int, start_side: bool) -> int | None:
        """Where an original offset is in the new text: the start or the end of a node there
        (an insertion at a node's start lies before it, one at its end after it); None inside
        an edit."""
        shift = 0
        for start, end, content in self.edits:
            if start < offset < end:
                return None
            if end < offset or (end == offset and (start_side or start < end)):
                shift += len(content) - (end - start)
            if start < end and start_side and offset == start:
                shift += len(content) - len(content.lstrip(" \t"))  # the space that pads it
            if start < end and not start_side and offset == end:
                shift -= len(content) - len(content.rstrip(" \t"))
        return offset + shift

    def old_line(self, offset: int) -> int:
        return self.first_line + self.old.line(offset) - 1

    def new_line(self, offset: int) -> int:
        return self.new_first_line + self.new.line(offset) - 1

    # the checks ------------------------------------------------------------------------------
    def module_bindings(self, old: bool) -> dict[str, set[str]]:
        """What this region's statements bind at module level, before or after the fix."""
        scope = _Scope(MODULE, None, None)
        walker = _Bindings(scope, self.old_inside if old else self.new_inside, shallow=True)
        walker.positions = self.old if old else self.new
        walker.walk((self.old_tree if old else self.new_tree).body, scope)
        return scope.bindings

    def run(self, old_module: dict[str, set[str]], new_module: dict[str, set[str]]) -> None:
        new_nodes: dict[tuple[int, int], list[ast.AST]] = {}
        new_names = []
        for node in ast.walk(self.new_tree):
            span = self.new.span(node)
            if span is None:
                continue
            new_nodes.setdefault(span, []).append(node)
            if self.new_inside(*span):
                continue
            if not self.new_outside(*span) and isinstance(node, (ast.Name, ast.Constant)):
                # one token across an edit's edge: the edit's text and the code beside it run together
                token = ast.get_source_segment(self.new.text, node) or ""
                if "\n" in token:  # a string over several lines: the message stays one line
                    token = token.splitlines()[0] + " ..."
                raise FixRejected(f"it would glue two tokens into `{token}` at line {self.new_line(span[0])}")
            name = _name_of(node)
            if name is not None and self.new_outside(*span):
                new_names.append((span, name, node))
        old_names = []
        for node in ast.walk(self.old_tree):
            span = self.old.span(node)
            if span is None:
                continue
            name = _name_of(node)
            if name is not None and self.old_outside(*span):
                old_names.append((span, name, node))
            self.check_enclosing(node, span, new_nodes)
        self.check_names(old_names, new_names)
        self.check_bindings(old_module, new_module)

    def check_enclosing(self, node: ast.AST, span: tuple[int, int], new_nodes) -> None:
        """A node that encloses an edit keeps its kind, over the same code."""
        start, end = span
        if not any(start <= s and e <= end and (start < s or e < end) and (s < e or start < s < end)
                   for s, e, _ in self.edits):
            return
        new_start, new_end = self.mapped(start, True), self.mapped(end, False)
        if new_start is None or new_end is None:
            return  # it begins or ends inside another edit: nothing to compare it with
        kinds = [_kind(n) for n in new_nodes.get((new_start, new_end), [])]
        if _kind(node) not in kinds:
            found = new_nodes.get((new_start, new_end))
            raise FixRejected(f"it would change {_describe(node)} at line {self.old_line(start)} into "
                              f"{_describe(found[0]) if found else 'something else'}")

    def check_names(self, old_names, new_names) -> None:
        """Every name outside the edits is still there, and no new one appears outside them."""
        expected: dict[tuple, list] = {}
        for (start, end), name, node in old_names:
            key = (self.mapped(start, True), self.mapped(end, False), name)
            expected.setdefault(key, []).append(node)
        for (start, end), name, node in new_names:
            found = expected.get((start, end, name))
            if not found:
                raise FixRejected(f"it would make a new `{name.lstrip('.')}` at line {self.new_line(start)} out of "
                                  "the code around the edit")
            found.pop()
        for (start, _, name), nodes in expected.items():
            if nodes:
                raise FixRejected(f"it would lose `{name.lstrip('.')}` near line {self.new_line(start or 0)}")

    def check_bindings(self, old_module: dict[str, set[str]], new_module: dict[str, set[str]]) -> None:
        old = self.bindings(self.old_tree, self.old, self.old_inside, old_module)
        new = self.bindings(self.new_tree, self.new, self.new_inside, new_module)

        def key(scope: _Scope | None, positions: _Positions, inside, mapped: bool):
            if scope is None:
                return BUILTIN
            if scope.kind == MODULE:
                return MODULE
            start, end = positions.span(scope.node)
            if inside(start, end):
                return FIX
            return scope.kind, self.mapped(start, True) if mapped else start

        old_reads: dict[tuple, tuple] = {}  # mapped position -> (name, meaning)
        carried: set[tuple] = set()  # (name, meaning) read inside the edits
        for node, scope in old.loads:
            start, end = self.old.span(node)
            target, flags = _resolve(scope, node.id)
            meaning = (key(target, self.old, self.old_inside, True), flags)
            if self.old_outside(start, end):
                old_reads[(self.mapped(start, True), node.id)] = meaning
            else:
                carried.add((node.id, meaning))
        for node, scope in new.loads:
            start, end = self.new.span(node)
            target, flags = _resolve(scope, node.id)
            meaning = (key(target, self.new, self.new_inside, False), flags)
            if self.new_outside(start, end):
                before = old_reads.get((start, node.id), meaning)
                if before == (BUILTIN, frozenset()) and node.id not in _BUILTINS and IMPORT in flags:
                    continue  # undefined before (a NameError); now the module an import the fix adds names
                if before != meaning:
                    raise FixRejected(f"`{node.id}` at line {self.new_line(start)} would no longer mean what it "
                                      "meant (the fix adds or removes a binding of that name)")
                continue
            if meaning[0] == FIX or meaning[1] == {INSIDE} or (node.id, meaning) in carried:
                continue  # the fix's own name, or one it carries over unchanged
            if IMPORT in flags and not _other_module(target, node.id, flags, new.module):
                continue  # a module the file imports
            if target is None and (node.id in _BUILTINS or "*" in new.module.bindings):
                continue  # a builtin, or a name a star import may bring
            if target is not None and not _imported_further_out(target, node.id):
                continue  # a variable of the user's code the fix uses (`device=fabric.device`)
            what = "is not defined there" if target is None else \
                "is a local, parameter or other binding there, which hides the module the fix means"
            raise FixRejected(f"`{node.id}` at line {self.new_line(start)} {what}")

    def bindings(self, tree: ast.Module, positions: _Positions, inside, module_bindings) -> _Bindings:
        module = _Scope(MODULE, None, None)
        for name, flags in module_bindings.items():
            module.bindings[name] = set(flags)
        walker = _Bindings(module, inside)
        walker.positions = positions
        walker.walk(tree.body, module)
        return walker
