"""Resolving names through imports, without importing anything.

`import torch as T` makes `T.cuda.synchronize` mean `torch.cuda.synchronize`;
`from torch.cuda import synchronize as sync` makes `sync` mean the same.
"""

from __future__ import annotations

import ast

_SHADOWED = ""  # in a function scope: a relative import hides a module-level name


class ImportMap:
    """Local name -> fully qualified name, for the imports in scope.

    Module-level imports live in `names`. An import inside a function binds a local name of that
    function only, so the engine opens a scope when it enters a function (`push`) and drops it
    when it leaves (`pop`): `import numpy as torch` in one function changes nothing elsewhere.
    """

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.local_defs: set[str] = set()  # classes/functions defined in this file
        self.scopes: list[dict[str, str]] = []

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        table = self.scopes[-1] if self.scopes else self.names
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    table[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    table[top] = top
        else:
            if node.level:  # relative import: a project module, never torch
                for alias in node.names:
                    if self.scopes:
                        table[alias.asname or alias.name] = _SHADOWED
                    else:
                        table.pop(alias.asname or alias.name, None)
                return
            module = node.module or ""
            for alias in node.names:
                if alias.name == "*":
                    continue
                table[alias.asname or alias.name] = f"{module}.{alias.name}"

    def lookup(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name] or None
        return self.names.get(name)

    def visible(self) -> dict[str, str]:
        """Every imported name in scope here, inner scopes winning."""
        out = dict(self.names)
        for scope in self.scopes:
            out.update(scope)
        return {name: target for name, target in out.items() if target}

    def imports_module(self, prefix: str) -> bool:
        """True when some import in scope brings in `prefix` or something under it."""
        dotted = prefix + "."
        return any(q == prefix or q.startswith(dotted)
                   for table in (self.names, *self.scopes) for q in table.values())

    def qualname(self, node: ast.AST) -> str | None:
        """`T.nn.DataParallel` -> `torch.nn.DataParallel`; None when the head is not imported."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.lookup(node.id)
        if head is None:
            return None
        parts.append(head)
        return ".".join(reversed(parts))


def collect_module_imports(tree: ast.Module, imports: ImportMap) -> None:
    """Imports at module level (including inside top-level if/try blocks) and local definitions.

    Function-level imports are added by the engine as the traversal meets them.
    """
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.add(stmt)
        elif isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            imports.local_defs.add(stmt.name)
            imports.names.pop(stmt.name, None)  # a local definition shadows an earlier import
        elif isinstance(stmt, ast.If):
            pending.extend(stmt.body)
            pending.extend(stmt.orelse)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            pending.extend(stmt.body)
            for handler in stmt.handlers:
                pending.extend(handler.body)
            pending.extend(stmt.orelse)
            pending.extend(stmt.finalbody)
