"""What the mixed-precision rules PTL601-PTL606 share: the AMP APIs by name, old and new, and
where code picks between them. Not a rule module."""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Deprecated:
    """A `torch.cuda.amp` / `torch.cpu.amp` API and what replaces it."""

    native: str  # "torch.amp.autocast"
    device: str  # "cuda" or "cpu"
    kind: str  # "autocast", "scaler", "custom"
    # positional parameters of the old API after `self`, in order (autocast takes them as
    # keywords in the new one, whose second parameter is `dtype`)
    positional: tuple[str, ...] = ()


_AUTOCAST_ARGS = ("enabled", "dtype", "cache_enabled")
DEPRECATED: dict[str, Deprecated] = {}
for _device in ("cuda", "cpu"):
    for _path in (f"torch.{_device}.amp.autocast", f"torch.{_device}.amp.autocast_mode.autocast"):
        DEPRECATED[_path] = Deprecated("torch.amp.autocast", _device, "autocast", _AUTOCAST_ARGS)
    for _path in (f"torch.{_device}.amp.GradScaler", f"torch.{_device}.amp.grad_scaler.GradScaler"):
        DEPRECATED[_path] = Deprecated("torch.amp.GradScaler", _device, "scaler")
for _name in ("custom_fwd", "custom_bwd"):
    for _path in (f"torch.cuda.amp.{_name}", f"torch.cuda.amp.autocast_mode.{_name}"):
        DEPRECATED[_path] = Deprecated(f"torch.amp.{_name}", "cuda", "custom")

# The native API (and `torch.amp` itself): where code names one of these beside a deprecated
# call, it is choosing between the two by torch version.
NATIVE = {"torch.amp", "torch.autocast", "torch.GradScaler", "torch.amp.autocast", "torch.amp.GradScaler",
          "torch.amp.custom_fwd", "torch.amp.custom_bwd", "torch.amp.autocast_mode.autocast",
          "torch.amp.grad_scaler.GradScaler"}
# Words of a test that picks code by torch version.
VERSION_WORDS = ("version", "TORCH_1", "TORCH_2", "TORCH_GREATER", "TORCH_LESS", "_TORCH_", "torch_version")

APEX_CALLS = {"apex.amp.initialize", "apex.amp.scale_loss"}


def native_name(ctx, node: ast.AST) -> bool:
    qualname = ctx.qualname(node)
    return qualname is not None and (qualname in NATIVE or qualname.startswith("torch.amp."))


def mentions_native(ctx, nodes) -> bool:
    """Some name under `nodes` resolves to the native AMP API (`torch.amp.GradScaler`, `torch.autocast`)."""
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, (ast.Name, ast.Attribute)) and native_name(ctx, node):
                return True
    return False


def uses_any_amp(ctx) -> bool:
    """The module uses torch's AMP at all, old API or new (any name resolving under `torch.amp`,
    `torch.cuda.amp`, `torch.cpu.amp`, or `torch.autocast` / `torch.GradScaler`)."""
    key = "uses-amp"
    if key not in ctx.memo:
        found = False
        text = ctx.source.text
        if "amp" in text or "autocast" in text or "GradScaler" in text:
            for node in ast.walk(ctx.tree):
                if isinstance(node, (ast.Name, ast.Attribute)):
                    qualname = ctx.qualname(node) or ""
                    if qualname in NATIVE or qualname.startswith(("torch.amp", "torch.cuda.amp", "torch.cpu.amp")):
                        found = True
                        break
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                    if any(m.startswith(("torch.amp", "torch.cuda.amp", "torch.cpu.amp")) for m in modules):
                        found = True
                        break
        ctx.memo[key] = found
    return ctx.memo[key]


def version_choice(ctx, stack: list[ast.AST], node: ast.AST) -> bool:
    """`node` (with its ancestors `stack`) sits in one branch of an `if` / conditional expression
    that picks the API by torch version: the other branch names the native API, or the test
    names a version (`if TORCH_2_4:`, `if version.parse(torch.__version__) < ...`)."""
    path = [*stack, node]
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, ast.If):
            if any(s is child for s in parent.body):
                other = parent.orelse
            elif any(s is child for s in parent.orelse):
                other = parent.body
            else:
                continue
        elif isinstance(parent, ast.IfExp) and child is not parent.test:
            other = [parent.orelse if child is parent.body else parent.body]
        else:
            continue
        if mentions_native(ctx, other):
            return True
        test = ast.unparse(parent.test)
        if any(word.lower() in test.lower() for word in VERSION_WORDS):
            return True
    return False


def import_bindings(ctx, name: str) -> list[str]:
    """Every qualified name an import statement anywhere in the module binds to `name`
    (module level, in `try` / `if` blocks, and inside functions)."""
    key = ("import-bindings", name)
    if key not in ctx.memo:
        found = []
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        found.append(alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and not node.level:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        found.append(f"{node.module}.{alias.name}")
        ctx.memo[key] = found
    return ctx.memo[key]


def head_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def compatibility_import(ctx, callee: ast.AST) -> bool:
    """The name the call goes through is imported from the native API somewhere too:
    `try: from torch.amp import GradScaler` / `except ImportError: from torch.cuda.amp import
    GradScaler` — a shim that picks whichever this torch has."""
    name = head_name(callee)
    if name is None:
        return False
    targets = import_bindings(ctx, name)
    return len(targets) > 1 and any(t in NATIVE or t.startswith("torch.amp") for t in targets)
