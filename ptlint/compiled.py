"""Is this code traced by `torch.compile`? And is this expression visibly a tensor?

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
from typing import TYPE_CHECKING

from .astutil import NUMPY_MODULES, comes_from_module, is_plain_python_value

if TYPE_CHECKING:
    from .engine import FileContext

COMPILE = {"torch.compile", "torch._dynamo.optimize"}
DISABLE = {"torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo"}
# checks that are False while Dynamo traces: TorchScript, the JIT tracer, ONNX export
SCRIPTING_CHECKS = {"torch.jit.is_scripting", "torch.jit.is_tracing", "torch._C._get_tracing_state",
                    "torch.onnx.is_in_onnx_export"}
# `torch.compiler.is_compiling`, `torch._dynamo.is_compiling`, transformers' `is_torchdynamo_compiling`
COMPILING_CHECKS = {"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling"}
NOT_MODULES = {"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"}
FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


# -- where torch.compile traces ---------------------------------------------------------------
def traced_function(ctx: "FileContext", node: ast.AST | None = None) -> ast.AST | None:
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


def is_traced(ctx: "FileContext", node: ast.AST | None = None) -> bool:
    """Whether `node`, which the traversal is visiting, runs in code torch.compile traces."""
    return traced_function(ctx, node) is not None


def _stack_index(ctx: "FileContext", node: ast.AST) -> int | None:
    for index in range(len(ctx.stack) - 1, -1, -1):
        if ctx.stack[index] is node:
            return index
    return None


def _is_root(function: ast.AST, ctx: "FileContext") -> bool:
    key = ("compiled-root", id(function))
    if key not in ctx.memo:
        ctx.memo[key] = _compute_root(function, ctx)
    return ctx.memo[key]


def _compute_root(function: ast.AST, ctx: "FileContext") -> bool:
    if not isinstance(function, FUNCTION_DEFS):
        return False
    if any(_decorator_in(d, ctx, COMPILE) for d in function.decorator_list):
        return True
    index = _stack_index(ctx, function)
    owner = ctx.stack[index - 1] if index else None
    in_class = isinstance(owner, ast.ClassDef)
    if in_class and function.name == "forward" and is_module_class(owner, ctx) and not _image_pipeline(ctx):
        return True
    names, methods = _compile_targets(ctx)
    return function.name in (methods if in_class else names)


def _decorator_in(decorator: ast.AST, ctx: "FileContext", names: set[str]) -> bool:
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    return ctx.qualname(decorator) in names


def _disabled(function: ast.AST, ctx: "FileContext") -> bool:
    return isinstance(function, FUNCTION_DEFS) and any(_decorator_in(d, ctx, DISABLE) for d in function.decorator_list)


# Modules of data-augmentation code: their nn.Module "transforms" run on PIL images and CPU tensors
# in the data pipeline, where nothing is compiled (the only PTL405 hits on the corpus were these).
IMAGE_PIPELINE_MODULES = ("PIL", "torchvision.transforms", "cv2")


def _image_pipeline(ctx: "FileContext") -> bool:
    """The module imports PIL, OpenCV or torchvision.transforms: its `forward`s are not assumed
    to be compiled (an explicit `torch.compile` still counts)."""
    key = "image-pipeline"
    if key not in ctx.memo:
        ctx.memo[key] = any(ctx.imports.imports_module(m) for m in IMAGE_PIPELINE_MODULES)
    return ctx.memo[key]


def _compile_targets(ctx: "FileContext") -> tuple[set[str], set[str]]:
    """Names of functions (`torch.compile(fn)`) and methods (`torch.compile(self.fn)`) compiled
    anywhere in the module: the call may come after the definition, so look at the whole tree."""
    key = "compile-targets"
    if key not in ctx.memo:
        names: set[str] = set()
        methods: set[str] = set()
        if "compile(" in ctx.source.text:  # cheap test first: the walk costs as much as a parse
            for node in ast.walk(ctx.tree):
                if isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.compile":
                    target = node.args[0] if node.args else next(
                        (k.value for k in node.keywords if k.arg == "model"), None)
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id in ("self", "cls"):
                        methods.add(target.attr)
        ctx.memo[key] = (names, methods)
    return ctx.memo[key]


def is_module_class(cls: ast.ClassDef, ctx: "FileContext", seen: frozenset = frozenset()) -> bool:
    """A subclass of `torch.nn.Module` (or of a `torch.nn` layer), directly or through a class
    defined in the same file."""
    key = ("module-class", id(cls))
    if key in ctx.memo:
        return ctx.memo[key]
    result = False
    local = _local_classes(ctx)
    for base in cls.bases:
        qual = ctx.qualname(base)
        if qual is not None and _torch_module_name(qual):
            result = True
            break
        if isinstance(base, ast.Name) and base.id in local and base.id not in seen \
                and local[base.id] is not cls and is_module_class(local[base.id], ctx, seen | {cls.name}):
            result = True
            break
    ctx.memo[key] = result
    return result


def _torch_module_name(qual: str) -> bool:
    if qual in ("torch.nn.Module", "torch.nn.modules.module.Module"):
        return True
    parts = qual.split(".")
    # torch.nn.Linear, torch.nn.Sequential, torch.nn.modules.conv.Conv2d ...: all nn.Module subclasses
    return len(parts) >= 3 and parts[:2] == ["torch", "nn"] and parts[2] in (parts[-1], "modules") \
        and parts[-1].lstrip("_")[:1].isupper() and parts[-1] not in NOT_MODULES  # `_Loss` too


def _local_classes(ctx: "FileContext") -> dict[str, ast.ClassDef]:
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


def _guarded_out(ctx: "FileContext", path: list[ast.AST]) -> bool:
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


def _check_name(call: ast.AST, ctx: "FileContext") -> str | None:
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


def false_when_compiling(test: ast.AST, ctx: "FileContext") -> bool:
    """`not torch.compiler.is_compiling()`, `torch.jit.is_scripting()`, `... and not is_compiling()`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return true_when_compiling(test.operand, ctx)
    if isinstance(test, ast.BoolOp):
        check = any if isinstance(test.op, ast.And) else all
        return check(false_when_compiling(v, ctx) for v in test.values)
    return _check_name(test, ctx) == "scripting"


def true_when_compiling(test: ast.AST, ctx: "FileContext") -> bool:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return false_when_compiling(test.operand, ctx)
    if isinstance(test, ast.BoolOp):
        check = all if isinstance(test.op, ast.And) else any
        return check(true_when_compiling(v, ctx) for v in test.values)
    return _check_name(test, ctx) == "compiling"


# -- is this visibly a tensor? ----------------------------------------------------------------
# WEAK: may be a tensor (an argument of the traced function: `forward(self, x, scale=1.0)` takes
# tensors and Python numbers alike). STRONG: certainly a tensor (a torch op's result, a reduction).
NONE, WEAK, STRONG = 0, 1, 2

TORCH_OP_MODULES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")
# lower-case functions of those modules that return no tensor (capitalised names are classes)
NOT_TENSOR_FUNCTIONS = {
    "numel", "promote_types", "result_type", "can_cast", "broadcast_shapes", "finfo", "iinfo", "typename",
    "compile", "no_grad", "enable_grad", "inference_mode", "autocast", "manual_seed", "initial_seed", "seed",
    "load", "save", "use_deterministic_algorithms", "cond", "vmap", "equal", "allclose",
}
REDUCTIONS = {
    "any", "all", "sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "std", "var", "count_nonzero",
    "median", "nansum", "nanmean", "logsumexp",
}
# methods that return a tensor like their receiver
TENSOR_METHODS = {
    "abs", "float", "double", "half", "bfloat16", "bool", "long", "int", "to", "type", "clone", "detach", "view",
    "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "cpu", "cuda", "eq", "ne", "gt", "ge", "lt", "le",
    "isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or", "logical_xor", "sqrt", "exp",
    "log", "sigmoid", "softmax", "clamp", "transpose", "permute", "expand", "masked_fill", "argmax", "argmin",
    "cumsum", "diff", "round", "floor", "ceil", "neg", "sign", "square", "pow", "mul", "add", "sub", "div",
}
KEPT_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "real", "imag", "grad"}
SELF_NAMES = ("self", "cls")


def is_torch_op(qual: str | None) -> bool:
    """`torch.sum`, `torch.nn.functional.relu`, ... : a function returning a tensor."""
    if qual is None:
        return False
    module, _, name = qual.rpartition(".")
    return module in TORCH_OP_MODULES and name[:1].islower() and not name.startswith(("is_", "get_", "set_", "_")) \
        and name not in NOT_TENSOR_FUNCTIONS


def tensor_kind(node: ast.AST, ctx: "FileContext", _seen: dict | None = None) -> int:
    """NONE, WEAK or STRONG: how visibly `node` is a tensor in the traced function."""
    _seen = _seen or {}
    if len(_seen) > 8:
        return NONE
    if isinstance(node, ast.Name):
        return _name_kind(node.id, ctx, _seen)
    if isinstance(node, ast.Call):
        func = node.func
        if is_torch_op(ctx.qualname(func)):
            return STRONG
        if isinstance(func, ast.Attribute) and ctx.qualname(func) is None:
            if func.attr in REDUCTIONS or func.attr in TENSOR_METHODS:
                receiver = tensor_kind(func.value, ctx, _seen)
                if receiver == NONE:
                    return NONE
                return STRONG if func.attr in REDUCTIONS else receiver
        return NONE
    if isinstance(node, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return NONE
        return max(tensor_kind(side, ctx, _seen) for side in (node.left, *node.comparators))
    if isinstance(node, ast.BinOp):
        return max(tensor_kind(node.left, ctx, _seen), tensor_kind(node.right, ctx, _seen))
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return tensor_kind(node.operand, ctx, _seen)
    if isinstance(node, ast.Subscript):
        return tensor_kind(node.value, ctx, _seen)
    if isinstance(node, ast.Attribute) and node.attr in KEPT_ATTRIBUTES:
        return tensor_kind(node.value, ctx, _seen)
    return NONE


def _name_kind(name: str, ctx: "FileContext", seen: dict) -> int:
    """A parameter of the traced function is WEAK; a local is what all its assignments are
    (`s = s / s.sum()` keeps what `s` was)."""
    if name in seen:
        return seen[name]
    if name in SELF_NAMES:
        return NONE
    root = traced_function(ctx)
    if root is not None:
        for function in ctx.functions[ctx.functions.index(root):]:
            if name in _params(function):
                return WEAK
    values = [v for v in ctx.assignments(name) if not isinstance(v, ast.AugAssign)]
    fresh = [v for v in values if not _mentions(v, name)]
    if not fresh:
        return NONE
    kind = min(tensor_kind(v, ctx, {**seen, name: NONE}) for v in fresh)
    updates = [v for v in values if _mentions(v, name)]
    if kind and updates:
        kind = min([kind] + [tensor_kind(v, ctx, {**seen, name: kind}) for v in updates])
    return kind


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _params(function: ast.AST) -> set[str]:
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return names - set(SELF_NAMES)


def not_a_tensor(node: ast.AST, ctx: "FileContext") -> bool:
    """Visibly a NumPy value or a plain Python literal / display."""
    if is_plain_python_value(node):
        return True
    if isinstance(node, ast.Name):
        values = ctx.assignments(node.id)
        if values and all(is_plain_python_value(v) for v in values):
            return True
    return comes_from_module(node, ctx, NUMPY_MODULES)


def shadowed(name: str, ctx: "FileContext") -> bool:
    """A builtin or module name (`print`, `open`, `time`) rebound by a parameter or assignment in
    the enclosing functions, or by a definition in the file."""
    if name in ctx.imports.local_defs:
        return True
    for function in ctx.functions:
        args = function.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        if any(a is not None and a.arg == name for a in every) or ctx.assignments(name, function):
            return True
    return False
