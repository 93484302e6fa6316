"""What the semantic analyses know of the file being walked: its tree and text, what its names
mean (`names`), the parent of every node (`parent`), the assignments seen so far, and where the
traversal is (enclosing loops, functions, classes). The engine keeps the traversal state up to
date (ptlint.engine.traversal); every analysis in this layer takes a `FileFacts`.
"""

from __future__ import annotations

import ast

from ptlint.semantics.names import Meaning, Names
from ptlint.semantics.nodes import FUNCTION_DEFS


class FileFacts:
    """The file being checked, as the analyses see it.

    The engine keeps `stack` (ancestors of the node being visited), `loops` (loops and
    comprehensions around it in the current function: a nested def starts afresh) and
    `functions` / `classes` (enclosing definitions) up to date during the traversal.
    """

    def __init__(self, path: str, text: str, tree: ast.Module, project_root: str | None = None) -> None:
        self.path = path
        self.text = text
        self.tree = tree
        self.project_root = project_root  # where the project's own imports resolve (ptlint.semantics.project)
        self.names = Names(tree, text, self.parent)  # the one name resolver of the file
        self._parents: dict[int, ast.AST] | None = None
        self._defs: list[ast.AST] = []
        self._calls: list[ast.Call] = []
        self.stack: list[ast.AST] = []
        self.loops: list[ast.AST] = []
        self.functions: list[ast.AST] = []
        self.classes: list[ast.ClassDef] = []
        self._assignments: dict[int, dict[str, list[ast.AST]]] = {}
        self._qualnames: dict[tuple[int, int], str | None] = {}
        self.memo: dict = {}  # per-file answers analyses and rules share (e.g. "does this loop hold a loop?")

    # -- names -------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        """`F.relu` -> "torch.nn.functional.relu" under `import torch.nn.functional as F`, as the
        scopes the traversal is in resolve its head name (ptlint.semantics.names); None when no
        import binds it there."""
        # Several rules ask about the same call: one answer per node and innermost scope
        scopes = self.names.scopes
        key = (id(node), id(scopes[-1]) if scopes else 0)
        answer = self._qualnames.get(key, self)
        if answer is self:
            answer = self._qualnames[key] = self.names.qualname(node)
        return answer

    def meaning(self, name: str, at: ast.AST | None = None) -> Meaning:
        """What `name` means at `at` (default: where the traversal is): ptlint.semantics.names."""
        return self.names.meaning(name, at)

    def imports_torch(self) -> bool:
        return self.names.imports_module("torch")

    # -- the tree's structure -----------------------------------------------------------------
    def parent(self, node: ast.AST) -> ast.AST | None:
        """The parent of any node of the tree: the file's one parent map, built on first use."""
        if self._parents is None:
            self._index()
        return self._parents.get(id(node))

    def function_defs(self) -> list[ast.AST]:
        """Every def of the file (methods and nested functions too)."""
        if self._parents is None:
            self._index()
        return self._defs

    def calls(self) -> list[ast.Call]:
        """Every call of the file."""
        if self._parents is None:
            self._index()
        return self._calls

    def _index(self) -> None:
        """One walk over the tree: parents, defs and calls."""
        parents: dict[int, ast.AST] = {}
        defs, calls = self._defs, self._calls
        pending: list[ast.AST] = [self.tree]
        while pending:
            node = pending.pop()
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
                pending.append(child)
            if isinstance(node, ast.Call):
                calls.append(node)
            elif isinstance(node, FUNCTION_DEFS):
                defs.append(node)
        self._parents = parents

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        """The innermost def around `node` (lambdas are transparent)."""
        parent = self.parent(node)
        while parent is not None and not isinstance(parent, FUNCTION_DEFS):
            parent = self.parent(parent)
        return parent

    def owner_class(self, function: ast.AST) -> ast.ClassDef | None:
        """The class a def is a method of."""
        parent = self.parent(function)
        return parent if isinstance(parent, ast.ClassDef) else None

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
            return list(value.args)  # an element of an iterable stands for it
        if value.func.id == "enumerate" and len(value.args) == 1 and len(elements) == 2:
            return [value, value.args[0]]
    return [value] * len(elements)
