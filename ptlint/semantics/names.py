"""What a name means where it is used: the one name resolver of a file, without importing anything.

`import torch as T` makes `T.cuda.synchronize` mean `torch.cuda.synchronize`; `from torch.cuda
import synchronize as sync` makes `sync` mean the same; `def f(torch): torch.sum(x)` calls a
parameter, not torch. `Names` knows every binding of every scope of a file and resolves a name
the way Python does:

- scopes: the module, each class body, function, lambda and comprehension. A name is looked up
  in the innermost scope that binds it; a class body's names are not seen by the functions in
  it; `global x` sends `x` to the module, `nonlocal x` to the enclosing functions;
- bindings: imports, parameters, assignments (also `for` / `with` / `except` targets, walrus,
  `match` captures, comprehension variables), `def` and `class`, and `del`;
- where a scope binds a name by an import, the import decides: an assignment beside it (`except
  ImportError: apex = None`, `np = np.asarray(x)`) does not make the name a local; a `def` or
  `class` of the same name after the import does (the last of them wins). A relative import
  (`from . import utils`) binds a module of the project: a local, never torch;
- a name no scope binds is free (a builtin, or undefined); where a star import could bind it, or
  a `del` could have unbound it, it is unknown.

Bindings are found without regard to order inside a scope (Python decides at compile time that a
name bound anywhere in a function is local to all of it). The tables are built on first use, by
one walk over the file's statements.

Where the question is asked: `meaning(name)` and `qualname(node)` answer in the scopes the
traversal is in (the engine keeps them with `enter` / `leave`); `meaning(name, at=node)` answers
at any node of the tree, through its parent links.
"""

from __future__ import annotations

import ast
import re
from typing import Callable, NamedTuple

from ptlint.semantics.nodes import COMPREHENSIONS, FUNCTION_DEFS, parameter_names, walk

# What a name means (`Meaning.kind`).
IMPORTED = "imported"  # an import binds it: `Meaning.target` is what it names ("torch.nn.functional")
LOCAL = "local"  # a parameter, assignment, def, class or relative import: code of the project
FREE = "free"  # no scope binds it: a builtin (`print`, `open`) or an undefined name
UNKNOWN = "unknown"  # a star import could bind it, or a `del` unbinds it somewhere

# Kinds of binding in a scope's table.
_IMPORT, _RELATIVE, _DEF, _OTHER, _DEL = "import", "relative", "def", "other", "del"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# statements that bind no name and hold no block
_BINDS_NOTHING = {ast.Expr, ast.Return, ast.Pass, ast.Raise, ast.Assert, ast.Break, ast.Continue}


class Meaning(NamedTuple):
    """What a name means at one place: `kind` is IMPORTED (then `target` is the qualified name the
    import binds: `import torch.nn.functional as F` -> "torch.nn.functional"), LOCAL, FREE or
    UNKNOWN."""

    kind: str
    target: str | None = None


_NONE: frozenset[str] = frozenset()
_FREE = Meaning(FREE)
_LOCAL = Meaning(LOCAL)
_UNKNOWN = Meaning(UNKNOWN)

_WALRUS_STOPS = (ast.Lambda, *(kind for kind in vars(ast).values()
                                if isinstance(kind, type) and issubclass(kind, ast.stmt)))
_NAME_BEFORE = re.compile(r"(\w+)\s*$")
# Modules code takes from a star import by their conventional names (`from utils import *`, where
# utils imports torch): the name, then what it names.
STAR_MODULES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "np": "numpy"}


def _walrus_targets(text: str) -> set[str]:
    """The names before each `:=` of the text (a regex over the whole text tries every word)."""
    names: set[str] = set()
    at = text.find(":=")
    while at >= 0:
        found = _NAME_BEFORE.search(text, max(0, at - 200), at)
        if found:
            names.add(found.group(1))
        at = text.find(":=", at + 2)
    return names


class _Table:
    """The bindings of one scope, kept as what each name means so far (later bindings update it,
    see `bind`), and the names its imports bind, in source order."""

    __slots__ = ("meanings", "imports", "globals", "nonlocals", "star")

    def __init__(self) -> None:
        self.meanings: dict[str, Meaning] = {}
        self.imports: list[tuple[str, str]] = []  # (name, what it names)
        self.globals: frozenset[str] | set[str] = _NONE  # a set of its own once a scope declares one
        self.nonlocals: frozenset[str] | set[str] = _NONE
        self.star = False

    def bind(self, name: str, kind: str, target: str | None = None) -> None:
        """Where the scope binds a name by an import, the import decides: another assignment
        does not make it a local, a later def or class does; a `del` makes it unknown."""
        meanings = self.meanings
        if meanings.get(name) is _UNKNOWN:
            return
        if kind == _IMPORT:
            meanings[name] = Meaning(IMPORTED, target)
            self.imports.append((name, target))
        elif kind == _DEL:
            meanings[name] = _UNKNOWN
        elif kind == _DEF or kind == _RELATIVE:
            meanings[name] = _LOCAL
        else:  # a parameter, an assignment, a loop or `with` target ...
            meanings.setdefault(name, _LOCAL)


def _target_names(target: ast.AST) -> list[str]:
    """Names an assignment target binds: `a`, `a, (b, *c)`; not `x.a` or `x[0]`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _target_names(element)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


class Names:
    """The one name resolver of a file: see the module docstring.

    `parent_of` gives the parent of a node (the file's parent map), for questions asked at a node
    rather than where the traversal is."""

    def __init__(self, tree: ast.Module, text: str, parent_of: Callable[[ast.AST], ast.AST | None]) -> None:
        self.tree = tree
        # names a walrus may bind (`(n := len(x))`): the tables look for walrus bindings, which
        # means walking every expression, only once one of these is asked about
        self._walrus_names = _walrus_targets(text)
        self._walrus = False
        self._text = text
        self._parent_of = parent_of
        self._tables: dict[int, _Table] | None = None
        self.scopes: list[ast.AST] = []  # scopes the traversal is in, outermost first (not the module)
        # answers where the traversal is, kept per innermost scope: name -> meaning, node -> qualname
        self._answers: dict[int, tuple[dict[str, Meaning], dict[int, str | None]]] = {}
        self.meanings_here, self.qualnames_here = self._answers_for(None)

    # -- where the traversal is --------------------------------------------------------------
    def enter(self, scope: ast.AST) -> None:
        """The traversal enters the body of a function, lambda, class or comprehension."""
        self.scopes.append(scope)
        self.meanings_here, self.qualnames_here = self._answers_for(scope)

    def leave(self) -> None:
        self.scopes.pop()
        self.meanings_here, self.qualnames_here = self._answers_for(self.scopes[-1] if self.scopes else None)

    def _answers_for(self, scope: ast.AST | None) -> tuple[dict[str, Meaning], dict[int, str | None]]:
        answers = self._answers.get(id(scope))
        if answers is None:
            answers = self._answers[id(scope)] = ({}, {})
        return answers

    # -- questions ---------------------------------------------------------------------------
    def meaning(self, name: str, at: ast.AST | None = None) -> Meaning:
        """What `name` means at the node `at` (by default: where the traversal is): the module an
        import binds it to (IMPORTED, with `target`), a local of the project (LOCAL: a parameter,
        local variable, def, class or relative import of an enclosing scope), nothing (FREE: a
        builtin or undefined name) or UNKNOWN (a star import or a `del`).

        A fix that writes `torch.xxx(...)` at `at` may rely on `torch` only when this is
        `Meaning(IMPORTED, "torch")`; FREE means an `import torch` must be added first, LOCAL or
        UNKNOWN that the name cannot be used there."""
        if at is not None:
            return self._resolve(name, self._chain(at))
        meaning = self.meanings_here.get(name)
        if meaning is None:
            meaning = self.meanings_here[name] = self._resolve(name, self._here())
        return meaning

    def qualname(self, node: ast.AST, at: ast.AST | None = None) -> str | None:
        """`T.nn.DataParallel` -> `torch.nn.DataParallel` under `import torch as T`; None when
        the head name is not bound by an import (a local, a builtin, unknown)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        meaning = self.meaning(node.id, at)
        if meaning.kind != IMPORTED:
            return None
        parts.append(meaning.target)
        return ".".join(reversed(parts))

    def binding_scope(self, name: str, at: ast.AST) -> ast.AST | None:
        """The scope (a def, a class, a lambda, a comprehension or the module) whose binding of
        `name` is the one seen at the node `at`; None where no scope binds it."""
        chain = self._chain(at)
        for index, scope in enumerate(chain):
            if index and isinstance(scope, ast.ClassDef):
                continue
            table = self._table(scope)
            if name in table.globals and scope is not self.tree:
                return self.tree if name in self._table(self.tree).meanings else None
            if name in table.nonlocals:
                continue
            if name in table.meanings:
                return scope
        return None

    def is_local(self, name: str, at: ast.AST | None = None) -> bool:
        """`name` is rebound by the project's code here (a builtin such as `print` or `open`
        given another value, a module name `time` used for a parameter)."""
        return self.meaning(name, at).kind == LOCAL

    def visible(self, at: ast.AST | None = None) -> dict[str, str]:
        """Every name that an import binds at the node `at` (by default: where the traversal is)
        and that means that import there -> what it names (module imports first, in source
        order). A name a local shadows there is left out."""
        chain = self._chain(at) if at is not None else self._here()
        names = [name for scope in reversed(chain) for name, _ in self._table(scope).imports]
        out = {}
        for name in dict.fromkeys(names):
            meaning = self._resolve(name, chain)
            if meaning.kind == IMPORTED:
                out[name] = meaning.target
        return out

    def imports_module(self, prefix: str) -> bool:
        """Some import of the module, or of a scope the traversal is in, brings in `prefix` or
        something under it."""
        dotted = prefix + "."
        return any(target == prefix or target.startswith(dotted)
                   for scope in self._here() for _, target in self._table(scope).imports)

    # -- scope chains ------------------------------------------------------------------------
    def _here(self) -> list[ast.AST]:
        return [*reversed(self.scopes), self.tree]

    def _chain(self, node: ast.AST) -> list[ast.AST]:
        """The scopes `node` is evaluated in, innermost first, ending with the module. A def's
        decorators, defaults and annotations, a class's bases and a comprehension's first
        iterable are evaluated in the scope around them."""
        chain: list[ast.AST] = []
        child, parent = node, self._parent_of(node)
        while parent is not None:
            if isinstance(parent, (*FUNCTION_DEFS, ast.ClassDef)):
                if any(child is statement for statement in parent.body):
                    chain.append(parent)
            elif isinstance(parent, ast.Lambda):
                if child is parent.body:
                    chain.append(parent)
            elif isinstance(parent, COMPREHENSIONS):
                chain.append(parent)
            elif isinstance(parent, ast.comprehension) and child is parent.iter:
                comprehension = self._parent_of(parent)
                if parent is comprehension.generators[0]:  # evaluated outside the comprehension
                    child, parent = comprehension, self._parent_of(comprehension)
                    continue
            child, parent = parent, self._parent_of(parent)
        chain.append(self.tree)
        return chain

    def _resolve(self, name: str, chain: list[ast.AST]) -> Meaning:
        if name in self._walrus_names and not self._walrus:
            self._walrus = True
            self._tables = None  # built again, with walrus bindings
        for index, scope in enumerate(chain):
            if index and isinstance(scope, ast.ClassDef):
                continue  # a class body's names are not seen by the functions in it
            table = self._table(scope)
            if name in table.globals and scope is not self.tree:
                return self._resolve(name, [self.tree])
            if name in table.nonlocals:
                continue
            meaning = table.meanings.get(name)
            if meaning is not None:
                return meaning
        return self._through_star(name) if self._table(self.tree).star else _FREE

    def _through_star(self, name: str) -> Meaning:
        """A name no scope binds, in a file with a star import: unknown, unless it is a module's
        conventional name (`torch`, `nn`, `F`, `np`) that the file itself uses as that module
        (`torch.` in its text): `from utils import *` where utils does `import torch`."""
        target = STAR_MODULES.get(name)
        if target is None or not re.search(rf"(?<![\w.]){name}\.", self._text):
            return _UNKNOWN
        return Meaning(IMPORTED, target)

    # -- tables ------------------------------------------------------------------------------
    def _table(self, scope: ast.AST) -> _Table:
        if self._tables is None:
            self._tables = {}
            self._collect(self.tree.body, self._new_table(self.tree))
        table = self._tables.get(id(scope))
        if table is None:  # a lambda or comprehension: bindings of its own header only
            table = self._new_table(scope)
            if isinstance(scope, ast.Lambda):
                for name in parameter_names(scope.args):
                    table.bind(name, _OTHER)
            elif isinstance(scope, COMPREHENSIONS):
                for generator in scope.generators:
                    for name in _target_names(generator.target):
                        table.bind(name, _OTHER)
        return table

    def _new_table(self, scope: ast.AST) -> _Table:
        self._tables[id(scope)] = _Table()
        return self._tables[id(scope)]

    def _collect(self, statements: list[ast.stmt], table: _Table) -> None:
        """Record the bindings `statements` make in the scope of `table`; open a table for each
        def and class among them."""
        module = self._tables[id(self.tree)]
        for statement in statements:
            if self._walrus:
                self._collect_walrus(statement, table)
            kind = type(statement)
            if kind in _BINDS_NOTHING:
                continue
            if kind is ast.Assign:
                for target in statement.targets:
                    for name in _target_names(target):
                        self._bind(table, module, name, _OTHER)
            elif kind in _DEFS:
                self._bind(table, module, statement.name, _DEF)
                inner = self._new_table(statement)
                if kind is not ast.ClassDef:
                    for name in parameter_names(statement.args):
                        inner.bind(name, _OTHER)
                self._collect(statement.body, inner)
            elif kind is ast.Import or kind is ast.ImportFrom:
                self._collect_import(statement, table, module)
            elif kind is ast.Global:
                table.globals = {*table.globals, *statement.names}
            elif kind is ast.Nonlocal:
                table.nonlocals = {*table.nonlocals, *statement.names}
            else:
                self._collect_compound(statement, table, module)

    def _collect_compound(self, statement: ast.stmt, table: _Table, module: _Table) -> None:
        """The other statements: augmented and annotated assignments, `del`, and the blocks of
        `for`, `while`, `if`, `with`, `try` and `match` with the names they bind."""
        if isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            names = _target_names(statement.target)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            names = [name for item in statement.items if item.optional_vars is not None
                     for name in _target_names(item.optional_vars)]
        elif isinstance(statement, ast.Delete):
            for target in statement.targets:
                for name in _target_names(target):
                    self._bind(table, module, name, _DEL)
            return
        else:
            names = []
        for name in names:
            self._bind(table, module, name, _OTHER)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if block:
                self._collect(block, table)
        for handler in getattr(statement, "handlers", ()):
            if handler.name:
                self._bind(table, module, handler.name, _OTHER)
            self._collect(handler.body, table)
        for case in getattr(statement, "cases", ()):
            for pattern in ast.walk(case.pattern):
                name = getattr(pattern, "name", None) or getattr(pattern, "rest", None)
                if name:
                    self._bind(table, module, name, _OTHER)
            self._collect(case.body, table)

    @staticmethod
    def _bind(table: _Table, module: _Table, name: str, kind: str, target: str | None = None) -> None:
        (module if name in table.globals else table).bind(name, kind, target)

    def _collect_import(self, node: ast.Import | ast.ImportFrom, table: _Table, module: _Table) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._bind(table, module, alias.asname, _IMPORT, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self._bind(table, module, top, _IMPORT, top)
            return
        for alias in node.names:
            if alias.name == "*":
                table.star = True
            elif node.level:  # relative: a module of the project, never torch
                self._bind(table, module, alias.asname or alias.name, _RELATIVE)
            else:
                self._bind(table, module, alias.asname or alias.name, _IMPORT, f"{node.module}.{alias.name}")

    def _collect_walrus(self, statement: ast.stmt, table: _Table) -> None:
        """`(n := len(x))` in the statement's own expressions binds `n` in this scope (also from
        inside a comprehension; not from inside a lambda, which is a scope of its own)."""
        module = self._tables[id(self.tree)]
        # not into a lambda (a scope of its own) or a statement of a block (collected on its own)
        for node in walk(statement, _WALRUS_STOPS):
            if type(node) is ast.NamedExpr and type(node.target) is ast.Name:
                self._bind(table, module, node.target.id, _OTHER)
