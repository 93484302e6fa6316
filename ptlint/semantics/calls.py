"""Who calls what in this file: one index of the file's calls, for every question about callers.

- `named(name, method=...)`: the calls written `name(...)` — or `self.name(...)` / `cls.name(...)`
  for a method — whatever the name is bound to: what the code says;
- `callers(function)`: the calls that may run `function`, a def of this file: by its name in a
  scope that holds the call, as a method of the calling method's class (or a base defined here),
  as `model.method(...)` where `model = LocalClass(...)`, or handed over to be called
  (`map(f, xs)`, `register(self.hook)`). A function's calls of itself are left out: recursion says
  nothing of how often it runs.

Callers are resolved on first use, after the traversal (they read the file's assignments). This is
the file's call graph; where code runs (ptlint.semantics.where) takes each function's callers
from here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ptlint.semantics.compiled import local_classes
from ptlint.semantics.names import LOCAL
from ptlint.semantics.nodes import SELF_NAMES, class_family

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts


class CallSites:
    """The calls of one file (see the module docstring); `of(facts)` builds it once per file."""

    def __init__(self, ctx: "FileFacts") -> None:
        self.ctx = ctx
        self._named: dict[str, list[ast.Call]] | None = None
        self._callers: dict[int, list[ast.Call]] | None = None
        self._callees: dict[int, list[ast.AST]] | None = None

    @classmethod
    def of(cls, ctx: "FileFacts") -> "CallSites":
        key = "call-sites"
        if key not in ctx.memo:
            ctx.memo[key] = cls(ctx)
        return ctx.memo[key]

    def named(self, name: str, method: bool = False) -> list[ast.Call]:
        """Calls written `name(...)`, or for a method `self.name(...)` / `cls.name(...)`."""
        if self._named is None:
            self._named = {}
            for call in self.ctx.calls():
                func = call.func
                if isinstance(func, ast.Name):
                    self._named.setdefault(func.id, []).append(call)
                elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                        and func.value.id in SELF_NAMES:
                    self._named.setdefault("." + func.attr, []).append(call)
        return self._named.get(("." if method else "") + name, [])

    def callees(self, call: ast.Call) -> list[ast.AST]:
        """The defs of this file that `call` may run (the reverse of `callers`)."""
        if self._callers is None:
            self._callers = self._resolve_all()
        if self._callees is None:
            self._callees = {}
            for function in self.ctx.function_defs():
                for site in self._callers.get(id(function), ()):
                    self._callees.setdefault(id(site), []).append(function)
        return self._callees.get(id(call), [])

    def callers(self, function: ast.AST) -> list[ast.Call]:
        """The calls in this file that may run `function` (a def of this file)."""
        if self._callers is None:
            self._callers = self._resolve_all()
        return self._callers.get(id(function), [])

    # -- resolving calls to the file's defs ------------------------------------------------------
    def _resolve_all(self) -> dict[int, list[ast.Call]]:
        ctx = self.ctx
        self._defs: dict[str, list[ast.AST]] = {}
        self._methods: dict[str, list[ast.AST]] = {}  # method name -> defs in the file's classes
        for function in ctx.function_defs():
            table = self._methods if ctx.owner_class(function) is not None else self._defs
            table.setdefault(function.name, []).append(function)
        sites: dict[int, list[ast.Call]] = {}
        for call in ctx.calls():
            callees = [call.func]
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(arg, ast.Name) or (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)
                                                 and arg.value.id in SELF_NAMES):
                    callees.append(arg)  # a function handed over to be called
            for callee in callees:
                for target in self._resolve(callee, call):
                    if ctx.enclosing_function(call) is not target:
                        sites.setdefault(id(target), []).append(call)
        return sites

    def _constructor(self, name: str, call: ast.Call) -> list[ast.AST]:
        """`Mask(b, n)` of a class of the file runs its `__init__` each time it is called: a helper
        object built every step builds what its `__init__` builds every step."""
        owner = local_classes(self.ctx).get(name)
        if owner is None or self.ctx.names.meaning(name, call).kind != LOCAL:
            return []
        return [d for d in owner.body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == "__init__"]

    def _resolve(self, callee: ast.AST, call: ast.Call) -> list[ast.AST]:
        """The defs of this file that `callee` (at `call`) may name."""
        ctx = self.ctx
        if isinstance(callee, ast.Name):
            candidates = self._defs.get(callee.id, [])
            if not candidates and callee is call.func:
                return self._constructor(callee.id, call)
            if len(candidates) <= 1:
                return candidates
            # the innermost definition whose scope holds the call
            scopes = []
            parent = ctx.parent(call)
            while parent is not None:
                scopes.append(parent)
                parent = ctx.parent(parent)
            for scope in scopes:
                for candidate in candidates:
                    if ctx.parent(candidate) is scope:
                        return [candidate]
            return []
        if isinstance(callee, ast.Attribute):
            methods = self._methods.get(callee.attr, [])
            if not methods and isinstance(callee.value, ast.Name) and callee.value.id in SELF_NAMES:
                return self._stored_function(callee.attr, call)
            if not methods or callee.attr.startswith("__"):
                return []
            if isinstance(callee.value, ast.Name) and callee.value.id in SELF_NAMES:
                owner = ctx.method_owner(call)
                if owner is None:
                    return []
                family = self._class_family(owner)
                return [m for m in methods if ctx.owner_class(m) in family]
            # `model.init_hidden(n)` where `model = Net(...)`, a class of this module, in the scope
            # that binds `model` (the function's, or the module's for a global instance)
            if isinstance(callee.value, ast.Name):
                scope = ctx.names.binding_scope(callee.value.id, call)
                if scope is None:
                    return []
                classes = {v.func.id for v in ctx.assignments(callee.value.id, scope)
                           if isinstance(v, ast.Call) and isinstance(v.func, ast.Name)}
                local = local_classes(ctx)
                named = [local[name] for name in classes if name in local]
                return [m for m in methods if ctx.owner_class(m) is not None and any(
                    ctx.owner_class(m) in self._class_family(cls) for cls in named)]
        return []

    def _stored_function(self, attribute: str, call: ast.Call) -> list[ast.AST]:
        """`self.neg_loss(out, target)` where the class stores a function of this module on itself
        (`self.neg_loss = _neg_loss` in `__init__`): every such assignment names the same def."""
        ctx = self.ctx
        function = ctx.enclosing_function(call)
        owner = ctx.owner_class(function) if function is not None else None
        if owner is None:
            return []
        values = self._stored_values(owner).get(attribute)
        if not values or not all(isinstance(v, ast.Name) and v.id == values[0].id for v in values):
            return []
        return [d for d in self._defs.get(values[0].id, []) if ctx.parent(d) is ctx.tree]

    def _stored_values(self, owner: ast.ClassDef) -> dict[str, list[ast.AST]]:
        """`self.<name> = value` in the class's methods (also in what they nest), by name; one
        table for the file, from its assignments (a model calls `self.dropout(x)` and its other
        submodules thousands of times)."""
        tables = self.ctx.memo.get("stored-values")
        if tables is None:
            tables = self.ctx.memo["stored-values"] = {}
            ctx = self.ctx
            for node in ctx.assigns():
                target = node.targets[0] if len(node.targets) == 1 else None
                if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id in SELF_NAMES):
                    continue
                child, parent = node, ctx.parent(node)
                while parent is not None:  # every class the assignment lies in a method of
                    if isinstance(parent, ast.ClassDef) and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        tables.setdefault(id(parent), {}).setdefault(target.attr, []).append(node.value)
                    child, parent = parent, ctx.parent(parent)
        return tables.get(id(owner), {})

    def _class_family(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its bases defined in this file."""
        return class_family(cls, local_classes(self.ctx))
