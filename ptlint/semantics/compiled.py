"""Is this code traced by `torch.compile`?

Shared by the torch.compile rules PTL401-PTL405 so that they agree on where they look:

- the `forward` method of an `nn.Module` subclass (the class derives from `torch.nn.Module` or
  another `torch.nn` module class through any import spelling, or from a class in the same file
  that does);
- a function decorated with `@torch.compile` / `@torch.compile(...)`;
- a function passed to `torch.compile(fn)` (or a method passed as `torch.compile(self.m)`)
  anywhere in the same module, before or after its definition.

Functions and lambdas nested in such a function count too: Dynamo inlines them when they are
called from it. Not counted: a function decorated with `torch.compiler.disable`, a class body
inside the traced function, the expression of a `raise` (the error path), and the branch of an
`if` that cannot run under Dynamo (`if not torch.compiler.is_compiling():`,
`if torch.jit.is_scripting():`, `if torch.onnx.is_in_onnx_export():`, and the `else` of
`if is_torchdynamo_compiling():`).
"""

from __future__ import annotations

import ast
import os
import re
from typing import TYPE_CHECKING

from ptlint.semantics.nodes import FUNCTION_DEFS, SELF_NAMES, walk
from ptlint.semantics.pipeline import pipeline_path

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

# What the pages of PTL401-PTL405 say under "Where it reports": kept beside the code that decides
# it (traced_function), so that a change of one is a change of the other.
WHERE_TRACED_DOC = """\
- **Reports** in code that `torch.compile` traces: a function decorated with `@torch.compile`, a
  function or method passed to `torch.compile(...)` anywhere in the same file, and, in a project
  that compiles code (some file calls `torch.compile` or `torch._dynamo`, or `compile = true` in
  `[tool.ptlint]` says its users will, as for a library), the `forward` of an `nn.Module`
  in a file some program of which compiles (not a script whose own program compiles nothing,
  nor a module only such scripts import, unless the project can be installed: then its users'
  programs may compile it)
  subclass, not a loss module's (`class PixLoss(nn.Module)`, or any module class of a
  `losses.py` / `loss_fns.py`: the training loop calls it on the compiled model's output) unless
  the file compiles it itself; also functions nested in those. A `forward` in a module that imports PIL, OpenCV or
  `torchvision.transforms`, or that sits in an `augment*/` or `transforms/` folder, is
  data-pipeline code and does not count (an explicit `torch.compile` there still does).
- **Silent** in a project where nothing compiles code (the rule reports nothing there), and in
  code that is not traced: a training loop, once-code, a helper defined outside
  the traced function (even one that it calls), a function decorated with
  `torch.compiler.disable`, and a branch that cannot run under Dynamo
  (`if not torch.compiler.is_compiling():`, `if torch.jit.is_scripting():`); on error paths (an
  `except` body, a branch that raises, or only warns or logs, the message of a `raise`); and in
  test code.
"""

COMPILE = {"torch.compile", "torch._dynamo.optimize"}
DISABLE = {"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"}
# checks that are False while Dynamo traces: TorchScript, the JIT tracer, ONNX export
SCRIPTING_CHECKS = {"torch.jit.is_scripting", "torch.jit.is_tracing", "torch._C._get_tracing_state",
                    "torch.onnx.is_in_onnx_export"}
# `torch.compiler.is_compiling`, `torch._dynamo.is_compiling`, transformers' `is_torchdynamo_compiling`
COMPILING_CHECKS = {"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"}
NOT_MODULES = {"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}


# -- where torch.compile traces ---------------------------------------------------------------
def traced_function(ctx: "FileFacts", node: ast.AST | None = None) -> ast.AST | None:
    """The outermost function that torch.compile traces and `node` (default: the parent of the
    node being visited) runs in — its `forward`, compiled function, ... — or None when that
    node is not traced."""
    functions = ctx.functions
    if not functions:
        return None
    root_index = next((i for i, f in enumerate(functions) if _is_root(f, ctx)), None)
    if root_index is None:
        return None
    root = functions[root_index]
    if any(_disabled(f, ctx) for f in functions[root_index:]):
        return None
    start = _stack_index(ctx, root)
    if start is None:
        return None
    if ctx.classes and (_stack_index(ctx, ctx.classes[-1]) or -1) > start:
        return None  # a class body inside the traced function
    path = ctx.stack[start:] + ([node] if node is not None else [])
    if _guarded_out(ctx, path):
        return None
    if any(isinstance(n, ast.Raise) for n in path):
        return None  # building an exception's message: the error path, where a break costs nothing
    return root


def may_be_traced(ctx: "FileFacts") -> bool:
    """A cheap first test: some enclosing function is one torch.compile traces (the guards
    `is_traced` also weighs are left out)."""
    return any(_is_root(function, ctx) for function in ctx.functions)


def is_traced(ctx: "FileFacts", node: ast.AST | None = None) -> bool:
    """Whether `node`, which the traversal is visiting, runs in code torch.compile traces."""
    return traced_function(ctx, node) is not None


def _stack_index(ctx: "FileFacts", node: ast.AST) -> int | None:
    for index in range(len(ctx.stack) - 1, -1, -1):
        if ctx.stack[index] is node:
            return index
    return None


def _is_root(function: ast.AST, ctx: "FileFacts") -> bool:
    key = ("compiled-root", id(function))
    if key not in ctx.memo:
        ctx.memo[key] = _compute_root(function, ctx)
    return ctx.memo[key]


def _compute_root(function: ast.AST, ctx: "FileFacts") -> bool:
    if not isinstance(function, FUNCTION_DEFS):
        return False
    if any(decorator_in(d, ctx, COMPILE) for d in function.decorator_list):
        return True
    index = _stack_index(ctx, function)
    owner = ctx.stack[index - 1] if index else None
    in_class = isinstance(owner, ast.ClassDef)
    names, methods = compile_targets(ctx)
    if in_class and function.name == "forward" and is_module_class(owner, ctx) and not _image_pipeline(ctx) \
            and (not _loss_class(owner, ctx) or owner.name in names) and project_compiles(ctx):
        return True
    return function.name in (methods if in_class else names)


# Words of a loss module's class name (`PixLoss`, `MultiStepMultiMasksAndIous` is not one).
LOSS_CLASS_WORDS = {"loss", "losses", "criterion"}


def _loss_class(cls: ast.ClassDef, ctx: "FileFacts") -> bool:
    """`class PixLoss(nn.Module)`, `class ContrastiveCriterion(nn.Module)`, any module class of
    `losses.py` or `loss_fns.py`: a loss module, which a training loop calls on the compiled
    model's output; `torch.compile(model)` does not trace it (an explicit `torch.compile` of it
    still counts)."""
    words = {word.lower() for word in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", cls.name)}
    words.update(os.path.basename(ctx.path).lower().removesuffix(".py").split("_"))
    return bool(words & LOSS_CLASS_WORDS)


def project_compiles(ctx: "FileFacts") -> bool:
    """Something in the project compiles code (ptlint.semantics.project), or `compile = true` in
    the configuration says its users will; True where no project is known (a text on its own)."""
    project = getattr(ctx, "project", None)
    return project is None or project.compiles


def decorator_in(decorator: ast.AST, ctx: "FileFacts", names: set[str]) -> bool:
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    return ctx.qualname(decorator) in names


def _disabled(function: ast.AST, ctx: "FileFacts") -> bool:
    return isinstance(function, FUNCTION_DEFS) and any(decorator_in(d, ctx, DISABLE) for d in function.decorator_list)


# Modules of data-augmentation code: their nn.Module "transforms" run on PIL images and CPU tensors
# in the data pipeline, where nothing is compiled (the only PTL405 hits on the corpus were these).
IMAGE_PIPELINE_MODULES = ("PIL", "torchvision.transforms", "cv2")


def _image_pipeline(ctx: "FileFacts") -> bool:
    """The module imports PIL, OpenCV or torchvision.transforms, or is input-pipeline code
    (ptlint.semantics.pipeline): its `forward`s are not assumed to be compiled (an explicit
    `torch.compile` still counts)."""
    key = "image-pipeline"
    if key not in ctx.memo:
        ctx.memo[key] = any(ctx.names.imports_module(m) for m in IMAGE_PIPELINE_MODULES) \
            or pipeline_path(ctx.path)
    return ctx.memo[key]


def compile_targets(ctx: "FileFacts") -> tuple[set[str], set[str]]:
    """Names of functions (`torch.compile(fn)`) and methods (`torch.compile(self.fn)`) compiled
    anywhere in the module, and of the classes whose instances are (`torch.compile(PixLoss())`,
    `criterion = PixLoss()` then `torch.compile(criterion)`): the call may come after the
    definition, so look at the whole tree."""
    key = "compile-targets"
    if key not in ctx.memo:
        names: set[str] = set()
        methods: set[str] = set()
        if "compile(" in ctx.text:  # cheap test first: the walk costs as much as a parse
            for node in walk(ctx.tree):
                if type(node) is ast.Call and (type(node.func) is ast.Name or getattr(node.func, "attr", "") == "compile") \
                        and ctx.qualname(node.func) == "torch.compile":
                    target = node.args[0] if node.args else next(
                        (k.value for k in node.keywords if k.arg == "model"), None)
                    if isinstance(target, ast.Call) and isinstance(target.func, ast.Name):
                        names.add(target.func.id)  # `torch.compile(PixLoss())`: the class
                    elif isinstance(target, ast.Name):
                        names.add(target.id)
                        names.update(v.func.id for v in _bound_anywhere(target.id, ctx)
                                     if isinstance(v, ast.Call) and isinstance(v.func, ast.Name))
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id in SELF_NAMES:
                        methods.add(target.attr)
        ctx.memo[key] = (names, methods)
    return ctx.memo[key]


def _bound_anywhere(name: str, ctx: "FileFacts") -> list[ast.AST]:
    """The values `name = ...` binds anywhere in the module (any function's local of that name)."""
    return [node.value for node in ctx.assigns() if any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]


def is_module_class(cls: ast.ClassDef, ctx: "FileFacts", seen: frozenset = frozenset()) -> bool:
    """A subclass of `torch.nn.Module` (or of a `torch.nn` layer), directly or through a class
    defined in the same file."""
    key = ("module-class", id(cls))
    if key in ctx.memo:
        return ctx.memo[key]
    result = False
    local = local_classes(ctx)
    for base in cls.bases:
        qual = ctx.qualname(base)
        if qual is not None and torch_module_name(qual):
            result = True
            break
        if isinstance(base, ast.Name) and base.id in local and base.id not in seen \
                and local[base.id] is not cls and is_module_class(local[base.id], ctx, seen | {cls.name}):
            result = True
            break
    ctx.memo[key] = result
    return result


def torch_module_name(qual: str) -> bool:
    if qual in ("torch.nn.Module", "torch.nn.modules.module.Module"):
        return True
    parts = qual.split(".")
    # torch.nn.Linear, torch.nn.Sequential, torch.nn.modules.conv.Conv2d ...: all nn.Module subclasses
    return len(parts) >= 3 and parts[:2] == ["torch", "nn"] and parts[2] in (parts[-1], "modules") \
        and parts[-1].lstrip("_")[:1].isupper() and parts[-1] not in NOT_MODULES  # `_Loss` too


def local_classes(ctx: "FileFacts") -> dict[str, ast.ClassDef]:
    key = "local-classes"
    if key not in ctx.memo:
        table: dict[str, ast.ClassDef] = {}
        pending: list[ast.stmt] = list(ctx.tree.body)
        while pending:
            stmt = pending.pop(0)
            if isinstance(stmt, ast.ClassDef):
                table.setdefault(stmt.name, stmt)
            elif isinstance(stmt, (ast.If, ast.Try)):
                pending.extend(stmt.body)
                pending.extend(stmt.orelse)
                for handler in getattr(stmt, "handlers", []):
                    pending.extend(handler.body)
        ctx.memo[key] = table
    return ctx.memo[key]


def _guarded_out(ctx: "FileFacts", path: list[ast.AST]) -> bool:
    """True when an `if` on the path from the traced function to the node picks a branch that
    cannot run under Dynamo."""
    for ancestor, child in zip(path, path[1:]):
        if not isinstance(ancestor, (ast.If, ast.IfExp)):
            continue
        if _holds(ancestor.body, child) and false_when_compiling(ancestor.test, ctx):
            return True
        if _holds(ancestor.orelse, child) and true_when_compiling(ancestor.test, ctx):
            return True
    return False


def _holds(branch: ast.AST | list, child: ast.AST) -> bool:
    return branch is child or (isinstance(branch, list) and any(s is child for s in branch))


def _check_name(call: ast.AST, ctx: "FileFacts") -> str | None:
    """"compiling" for an is-compiling check, "scripting" for a TorchScript / tracing check."""
    if not isinstance(call, ast.Call):
        return None
    qual = ctx.qualname(call.func)
    if qual in SCRIPTING_CHECKS:
        return "scripting"
    last = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
    if last in COMPILING_CHECKS:
        return "compiling"
    return None


def false_when_compiling(test: ast.AST, ctx: "FileFacts") -> bool:
    """`not torch.compiler.is_compiling()`, `torch.jit.is_scripting()`, `... and not is_compiling()`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return true_when_compiling(test.operand, ctx)
    if isinstance(test, ast.BoolOp):
        check = any if isinstance(test.op, ast.And) else all
        return check(false_when_compiling(v, ctx) for v in test.values)
    return _check_name(test, ctx) == "scripting"


def true_when_compiling(test: ast.AST, ctx: "FileFacts") -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return false_when_compiling(test.operand, ctx)
    if isinstance(test, ast.BoolOp):
        check = all if isinstance(test.op, ast.And) else any
        return check(true_when_compiling(v, ctx) for v in test.values)
    return _check_name(test, ctx) == "compiling"
