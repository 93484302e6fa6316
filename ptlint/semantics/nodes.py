"""Small questions rules ask of `ast` nodes, answered the same way everywhere."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

NUMPY_MODULES = ("numpy", "pandas", "jax.numpy")


def method_name(node: ast.AST) -> str | None:
    """`x.item()` -> "item"; None when `node` is not a call of an attribute."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


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


def comes_from_module(node: ast.AST, ctx: "FileFacts", modules: tuple[str, ...]) -> bool:
    """True when `node` is visibly a value of one of `modules` (e.g. numpy): a call or attribute
    resolving there, a chain of method calls on such a value, arithmetic on one, or a local name
    assigned one. Follows at most eight steps."""
    pending = [node]
    for _ in range(8):
        if not pending:
            return False
        node = pending.pop()
        if isinstance(node, ast.Call):
            qual = ctx.qualname(node.func)
            if qual is not None:
                if any(qual == m or qual.startswith(m + ".") for m in modules):
                    return True
            elif isinstance(node.func, ast.Attribute):  # a method of a numpy value returns numpy
                pending.append(node.func.value)
        elif isinstance(node, ast.Attribute) and ctx.qualname(node) is not None:
            qual = ctx.qualname(node)
            if any(qual == m or qual.startswith(m + ".") for m in modules):
                return True
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            pending.append(node.value)
        elif isinstance(node, ast.Name):
            # the last value that does not derive from the name itself (`s = s / s.sum()`)
            values = [v for v in ctx.assignments(node.id) if root_name(v) != node.id]
            if values:
                pending.append(values[-1])
        elif isinstance(node, ast.IfExp):  # `k.cpu().numpy() if is_tensor(k) else k`
            pending.append(node.body)
        elif isinstance(node, ast.BinOp):  # `a * b` of a NumPy value stays NumPy
            pending += [node.right, node.left]
        elif isinstance(node, ast.UnaryOp):
            pending.append(node.operand)
    return False


def root_name(node: ast.AST) -> str | None:
    """The name a value derives from: `x` of `x.a[0].f()`, of `x * 2`."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp)):
        node = node.func if isinstance(node, ast.Call) else node.left if isinstance(node, ast.BinOp) else node.value
    return node.id if isinstance(node, ast.Name) else None


def assigned_plain_python(node: ast.AST, ctx: "FileFacts") -> bool:
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


def class_family(cls: ast.ClassDef, local: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The class and its bases found in `local` (name -> class of this file), transitively."""
    family, pending = [], [cls]
    while pending:
        current = pending.pop()
        if current in family:
            continue
        family.append(current)
        pending.extend(local[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in local)
    return family


def parent_map(ctx: "FileFacts", root: ast.AST | None = None) -> dict[int, ast.AST]:
    """Parent of every node under `root` (a function, or the module by default), one walk on
    first use: the questions below stay inside one function, and most files never ask them."""
    root = root or ctx.tree
    key = ("parent-map", id(root))
    table = ctx.memo.get(key)
    if table is None:
        table = {}
        pending = [root]
        while pending:
            node = pending.pop()
            for child in ast.iter_child_nodes(node):
                table[id(child)] = node
                pending.append(child)
        ctx.memo[key] = table
    return table
