"""Small questions rules ask of `ast` nodes, answered the same way everywhere."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import FileContext

NUMPY_MODULES = ("numpy", "pandas", "jax.numpy")


def method_name(node: ast.AST) -> str | None:
    """`x.item()` -> "item"; None when `node` is not a call of an attribute."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def receiver(call: ast.Call) -> ast.AST:
    """`a.b.c()` -> `a.b`."""
    assert isinstance(call.func, ast.Attribute)
    return call.func.value


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    """The argument passed at `position` or as `name=`."""
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return keyword(call, name)


def is_constant(node: ast.AST, value: object) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is type(value) and node.value == value


def dotted(node: ast.AST) -> str | None:
    """`self.model.device` -> "self.model.device"; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def is_plain_python_value(node: ast.AST) -> bool:
    """Literals and displays: never a tensor."""
    return isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr,
                             ast.ListComp, ast.DictComp, ast.SetComp))


def comes_from_module(node: ast.AST, ctx: "FileContext", modules: tuple[str, ...]) -> bool:
    """True when `node` is visibly a value of one of `modules` (e.g. numpy): a call or attribute
    resolving there, a chain of method calls on such a value, or a local name assigned one."""
    seen = 0
    while seen < 8:
        seen += 1
        if isinstance(node, ast.Call):
            qual = ctx.qualname(node.func)
            if qual is not None:
                return any(qual == m or qual.startswith(m + ".") for m in modules)
            if isinstance(node.func, ast.Attribute):  # a method of a numpy value returns numpy
                node = node.func.value
                continue
            return False
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            if isinstance(node, ast.Attribute):
                qual = ctx.qualname(node)
                if qual is not None:
                    return any(qual == m or qual.startswith(m + ".") for m in modules)
            node = node.value
            continue
        if isinstance(node, ast.Name):
            values = ctx.assignments(node.id)
            if not values:
                return False
            node = values[-1]
            continue
        return False
    return False


def assigned_plain_python(node: ast.AST, ctx: "FileContext") -> bool:
    """A local name whose every assignment is a literal or display."""
    if is_plain_python_value(node):
        return True
    if isinstance(node, ast.Name):
        values = ctx.assignments(node.id)
        return bool(values) and all(is_plain_python_value(v) for v in values)
    return False


LOOP_NODES = (ast.For, ast.AsyncFor, ast.While)
SCOPE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def body_nodes(statements: list[ast.stmt], stop_at: tuple[type, ...] = SCOPE_NODES) -> list[ast.AST]:
    """Every node under `statements`; nodes of the `stop_at` types are listed but not entered
    (by default nested functions and classes, whose bodies do not run here)."""
    out: list[ast.AST] = []
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        out.append(node)
        if not isinstance(node, stop_at):
            pending.extend(ast.iter_child_nodes(node))
    return out
