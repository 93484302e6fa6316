"""Resolving names through imports, without importing anything.

`import torch as T` makes `T.cuda.synchronize` mean `torch.cuda.synchronize`;
`from torch.cuda import synchronize as sync` makes `sync` mean the same.
"""

from __future__ import annotations

import ast


class ImportMap:
    """Local name -> fully qualified name, for every import seen so far in a module."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.local_defs: set[str] = set()  # classes/functions defined in this file

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    self.names[top] = top
        else:
            if node.level:  # relative import: a project module, never torch
                for alias in node.names:
                    self.names.pop(alias.asname or alias.name, None)
                return
            module = node.module or ""
            for alias in node.names:
                if alias.name == "*":
                    continue
                self.names[alias.asname or alias.name] = f"{module}.{alias.name}"

    def imports_module(self, prefix: str) -> bool:
        """True when some import brings in `prefix` or something under it."""
        dotted = prefix + "."
        return any(q == prefix or q.startswith(dotted) for q in self.names.values())

    def qualname(self, node: ast.AST) -> str | None:
        """`T.nn.DataParallel` -> `torch.nn.DataParallel`; None when the head is not imported."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.names.get(node.id)
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
