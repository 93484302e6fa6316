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


def hot_loop(ctx: "FileContext") -> ast.AST | None:
    """The innermost loop (or comprehension) that runs the current node once per iteration.

    None when the node is not in a loop, and also when it visibly runs less often than the loop
    beats, which is how training code reports once per epoch or every N steps:
    - the innermost loop's body holds another loop (the node runs after the inner batch loop);
    - an `if` between loop and node tests `step % N` or compares the loop index for equality.
    """
    if not ctx.loops:
        return None
    loop = ctx.loops[-1]
    if isinstance(loop, LOOP_NODES) and _has_nested_loop(loop, ctx):
        return None
    try:
        start = ctx.stack.index(loop)
    except ValueError:
        return loop
    targets = _loop_names(loop)
    for ancestor in ctx.stack[start + 1:]:
        if isinstance(ancestor, (ast.If, ast.IfExp)) and _is_periodic_test(ancestor.test, targets):
            return None
    return loop


def _has_nested_loop(loop: ast.AST, ctx: "FileContext") -> bool:
    key = ("nested-loop", id(loop))
    if key not in ctx.memo:
        # comprehensions inside expressions do not count: only statement loops make an outer loop
        nodes = body_nodes(loop.body, stop_at=SCOPE_NODES + LOOP_NODES + (ast.expr,))
        ctx.memo[key] = any(isinstance(node, LOOP_NODES) for node in nodes)
    return ctx.memo[key]


def _loop_names(loop: ast.AST) -> set[str]:
    target = getattr(loop, "target", None)
    if target is None:
        return set()
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _is_periodic_test(test: ast.AST, loop_names: set[str]) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Name) and side.id in loop_names for side in sides):
                return True
    return False


def _is_cpu_device(node: ast.AST, ctx: "FileContext") -> bool:
    if isinstance(node, ast.Constant) and node.value == "cpu":
        return True
    return isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.device" and bool(node.args) \
        and isinstance(node.args[0], ast.Constant) and node.args[0].value == "cpu"


# torch factories: without `device=` they build the tensor in host memory
HOST_FACTORIES = {f"torch.{name}" for name in (
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace",
    "eye", "rand", "randn", "randint", "randperm")}


def _mentions_cpu(expr: ast.AST, ctx: "FileContext") -> bool:
    """The expression visibly makes or moves a tensor to host memory and never to a device."""
    on_cpu = False
    for node in ast.walk(expr):
        if not isinstance(node, ast.Call):
            continue
        name = method_name(node)
        if name == "cuda" or (name == "to" and node.args and not _is_cpu_device(node.args[0], ctx)):
            return False
        if ctx.qualname(node.func) in HOST_FACTORIES or name == "cpu" or \
                (name == "to" and node.args and _is_cpu_device(node.args[0], ctx)):
            on_cpu = True
        for kw in node.keywords:
            if kw.arg == "device":
                if not _is_cpu_device(kw.value, ctx):
                    return False
                on_cpu = True
    return on_cpu


def visibly_on_cpu(node: ast.AST, ctx: "FileContext") -> bool:
    """True when a tensor visibly lives in host memory: built by a torch factory without a
    device (or with `device="cpu"`), from `torch.from_numpy`, or moved with `.cpu()` — directly, or through the local name (or loop
    target) it was assigned to. Reading such a tensor back costs no device sync."""
    while isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node, ast.Name):
        node = node.value
    if isinstance(node, ast.Name):
        # `x = x.numpy()` derives x from itself: it neither proves nor disproves where x lives
        values = [v for v in ctx.assignments(node.id) if _root_name(v) != node.id]
        return bool(values) and all(_mentions_cpu(v, ctx) for v in values)
    return _mentions_cpu(node, ctx)


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def type_guarded(node: ast.AST, ctx: "FileContext", modules: tuple[str, ...]) -> bool:
    """True inside `if isinstance(<node>, <types of one of modules>):` — a value the code itself
    has checked to be, say, a NumPy scalar — or `if hasattr(<node>, ...):` (duck typing)."""
    wanted = ast.dump(node)
    for ancestor in reversed(ctx.stack):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if not isinstance(ancestor, ast.If):
            continue
        for test in ast.walk(ancestor.test):
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" \
                    and len(test.args) == 2 and ast.dump(test.args[0]) == wanted:
                return True  # duck typing: the code itself does not know it holds a tensor
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
                    and len(test.args) == 2 and ast.dump(test.args[0]) == wanted:
                types = [t for t in ast.walk(test.args[1]) if isinstance(t, ast.Attribute)]
                if any((ctx.qualname(t) or "").startswith(tuple(m + "." for m in modules)) for t in types):
                    return True
    return False
