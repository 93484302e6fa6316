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
        # what the rest of the project says of this file (ptlint.semantics.project.ProjectFacts); None
        # where no project is known (standard input, text without a place on disk)
        self.project = None
        self.stack: list[ast.AST] = []
        self.tree_index = TreeIndex(tree, self.stack)  # the one parent map of the file
        self.names = Names(tree, text, self.tree_index.parent)  # the one name resolver of the file
        self.loops: list[ast.AST] = []
        self.functions: list[ast.AST] = []
        self.classes: list[ast.ClassDef] = []
        self._assignments: dict[int, dict[str, list[ast.AST]]] = {}
        self.memo: dict = {}  # per-file answers analyses and rules share (e.g. "does this loop hold a loop?")

    # -- names -------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        """`F.relu` -> "torch.nn.functional.relu" under `import torch.nn.functional as F`, as the
        scopes the traversal is in resolve its head name (ptlint.semantics.names); None when no
        import binds it there."""
        # Several rules ask about the same call: one answer per node and innermost scope
        answers = self.names.qualnames_here
        key = id(node)
        if key in answers:
            return answers[key]
        answer = answers[key] = self.names.qualname(node)
        return answer

    def meaning(self, name: str, at: ast.AST | None = None) -> Meaning:
        """What `name` means at `at` (default: where the traversal is): ptlint.semantics.names."""
        return self.names.meaning(name, at)

    def imports_torch(self) -> bool:
        return self.names.imports_module("torch")

    # -- the tree's structure -----------------------------------------------------------------
    def parent(self, node: ast.AST, within: ast.AST | None = None) -> ast.AST | None:
        """The parent of any node of the tree (`TreeIndex`); `within`: a node that holds `node`
        (its function, say), which spares the walk of the whole tree while questions stay there."""
        return self.tree_index.parent(node, within)

    def function_defs(self) -> list[ast.AST]:
        """Every def of the file (methods and nested functions too)."""
        return self.tree_index.function_defs()

    def calls(self) -> list[ast.Call]:
        """Every call of the file."""
        return self.tree_index.calls()

    def assigns(self) -> list[ast.Assign]:
        """Every assignment statement of the file (`x = ...`, `self.x = ...`; not `+=` nor `x: T = ...`)."""
        return self.tree_index.assigns()

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

    def defs_called(self, func: ast.AST) -> list[ast.AST]:
        """The defs of this file that a call of `func` runs, as the file shows them: `self.name(...)`
        a method `name` of the class around the call, `name(...)` a function at the module's top
        level (every def of that name there, in source order); [] for anything else."""
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            owner = self.method_owner(func)
            body, name = (owner.body if owner is not None else []), func.attr
        elif isinstance(func, ast.Name):
            body, name = self.tree.body, func.id
        else:
            return []
        return [d for d in body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == name]

    def method_owner(self, node: ast.AST) -> ast.ClassDef | None:
        """The class of the innermost method around `node` (through nested defs: a closure in a
        method sees `self`), None outside methods."""
        function = self.enclosing_function(node)
        while function is not None and self.owner_class(function) is None:
            function = self.enclosing_function(function)
        return self.owner_class(function) if function is not None else None

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


class TreeIndex:
    """Parents, defs and calls of one tree, from one walk on first use. Until a question needs
    that walk, cheaper answers do: during the traversal, the parent of the node being visited,
    or of one of its ancestors, is on the traversal `stack`; a question about a node `within` a
    given subtree (a function) walks that subtree only. (It holds no reference to the
    `FileFacts`, so that nothing keeps a file's facts alive after its check.)"""

    def __init__(self, tree: ast.Module, stack: list[ast.AST]) -> None:
        self.tree = tree
        self.stack = stack
        self._parents: dict[int, ast.AST] | None = None
        self._defs: list[ast.AST] = []
        self._calls: list[ast.Call] = []
        self._assigns: list[ast.Assign] = []
        self._subtrees: dict[int, ast.AST] = {}  # parents of the nodes under `_walked` subtrees
        self._walked: set[int] = set()

    def parent(self, node: ast.AST, within: ast.AST | None = None) -> ast.AST | None:
        if self._parents is None:
            if within is not None and node is not within:
                if id(within) not in self._walked:
                    self._walked.add(id(within))
                    self._walk(within, self._subtrees, None, None, None)
                if id(node) in self._subtrees:
                    return self._subtrees[id(node)]
            stack = self.stack
            for index in range(len(stack) - 1, -1, -1):
                if stack[index] is node:
                    candidate = stack[index - 1] if index else None
                    break
            else:
                candidate = stack[-1] if stack else None
            # not so for the parts of a comprehension, which the traversal visits without it
            if candidate is not None and any(child is node for child in ast.iter_child_nodes(candidate)):
                return candidate
            self._index()
        return self._parents.get(id(node))

    def function_defs(self) -> list[ast.AST]:
        if self._parents is None:
            self._index()
        return self._defs

    def calls(self) -> list[ast.Call]:
        if self._parents is None:
            self._index()
        return self._calls

    def assigns(self) -> list[ast.Assign]:
        if self._parents is None:
            self._index()
        return self._assigns

    def _index(self) -> None:
        """One walk over the tree: parents, defs, calls and assignments."""
        parents: dict[int, ast.AST] = {}
        self._walk(self.tree, parents, self._defs, self._calls, self._assigns)
        self._parents = parents

    @staticmethod
    def _walk(root: ast.AST, parents: dict[int, ast.AST], defs: list | None, calls: list | None,
              assigns: list | None) -> None:
        pending: list[ast.AST] = [root]
        pop, append = pending.pop, pending.append
        node_type = ast.AST
        while pending:
            node = pop()
            kind = type(node)
            fields = _NODE_FIELDS.get(kind)
            if fields is None:  # (not `or`: `ast.Name` has no field worth walking, an empty tuple)
                fields = _node_fields(kind)
            for field in fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, node_type):
                            parents[id(item)] = node
                            append(item)
                elif isinstance(value, node_type):
                    parents[id(value)] = node
                    append(value)
            if calls is None:
                continue
            if kind is ast.Call:
                calls.append(node)
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                defs.append(node)
            elif kind is ast.Assign:
                assigns.append(node)


# Fields that never hold a node with a parent worth knowing: names and flags, and the operator
# and context singletons (`ast.Add`, `ast.Load`) shared by the whole tree.
_NOT_NODES = {"ctx", "op", "ops", "id", "attr", "arg", "kind", "type_comment", "level", "module", "asname",
              "is_async", "conversion", "simple", "tag", "kwd_attrs"}
_NODE_FIELDS: dict[type, tuple[str, ...]] = {}


def _node_fields(kind: type) -> tuple[str, ...]:
    fields = _NODE_FIELDS[kind] = tuple(f for f in kind._fields if f not in _NOT_NODES)
    return fields


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
