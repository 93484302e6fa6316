"""Is this expression visibly a tensor, and does it visibly live in host memory?

The facts every rule needs about values, answered one way for all of them:

- `tensor_kind`: NONE, WEAK (may be a tensor: an argument of a traced function) or STRONG
  (certainly a tensor: a torch op's result, a reduction, the output of a submodule built in
  `__init__`, a loss function's result, a value `.backward()` is called on);
- `visibly_on_host`: built by a torch factory without a device, from NumPy, moved with `.cpu()`,
  returned by a processor with `return_tensors=`, or named `*_cpu`: reading it back costs no
  device sync;
- `not_a_tensor`: a NumPy value or a plain Python literal;
- `tensor_attributes`: the attributes a class binds to a tensor (`register_buffer`,
  `nn.Parameter`, `self.x = torch.zeros(...)`), a tensor in every method of the class;
- `hidden_read`: a call that reads a tensor back inside (`GradScaler.get_scale()`, its
  `state_dict()`).

Answers use the assignments the traversal has seen so far (`ctx.assignments`), so they are
asked during the traversal, at the node being visited.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from ptlint.semantics.nodes import (
    FUNCTION_DEFS,
    FUNCTIONS,
    SELF_NAMES,
    body_nodes,
    chain_head,
    class_family,
    def_key,
    dotted,
    is_plain_python_value,
    method_name,
    name_words,
    own_attribute,
    root_name,
    walk,
)

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

NONE, WEAK, STRONG = 0, 1, 2

NUMPY_MODULES = ("numpy", "pandas", "jax.numpy")

TORCH_OP_MODULES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "torch.fft")
# functions of other torch modules that return a tensor: the total norm of the gradients
TENSOR_RESULTS = {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad.clip_grad_norm_",
                  "torch.nn.utils.get_total_norm", "torch.nn.utils.clip_grad_norm"}
# lower-case functions of those modules that return no tensor (capitalised names are classes)
NOT_TENSOR_FUNCTIONS = {
    "numel", "promote_types", "result_type", "can_cast", "broadcast_shapes", "finfo", "iinfo", "typename",
    "compile", "no_grad", "enable_grad", "inference_mode", "autocast", "manual_seed", "initial_seed", "seed",
    "load", "save", "use_deterministic_algorithms", "cond", "vmap", "equal", "allclose", "device", "dtype",
    "set_grad_enabled", "set_default_dtype", "set_printoptions", "typename",
}
REDUCTIONS = {
    "any", "all", "sum", "mean", "max", "min", "amax", "amin", "prod", "norm", "std", "var", "count_nonzero",
    "median", "nansum", "nanmean", "logsumexp",
}
# methods only a torch tensor has (not a NumPy array, a pandas object or a Python number), so
# whatever the receiver, the result is a tensor: `gt.eq(1).float()`, `x.detach()`
TORCH_ONLY_METHODS = {"float", "half", "bfloat16", "long", "detach", "cuda", "unsqueeze", "masked_fill"}
# methods that return a tensor like their receiver
TENSOR_METHODS = {
    "abs", "float", "double", "half", "bfloat16", "bool", "long", "int", "to", "type", "clone", "detach", "view",
    "reshape", "flatten", "squeeze", "unsqueeze", "contiguous", "cpu", "cuda", "eq", "ne", "gt", "ge", "lt", "le",
    "isnan", "isinf", "isfinite", "logical_not", "logical_and", "logical_or", "logical_xor", "sqrt", "exp",
    "log", "sigmoid", "softmax", "clamp", "transpose", "permute", "expand", "masked_fill", "argmax", "argmin",
    "cumsum", "diff", "round", "floor", "ceil", "neg", "sign", "square", "pow", "mul", "add", "sub", "div",
}
KEPT_ATTRIBUTES = {"T", "mT", "H", "mH", "data", "real", "imag", "values", "indices"}  # `torch.max(x, 1).values`
# constructors of a tensor from host data: `torch.tensor(rows)`, `torch.from_numpy(array)`
HOST_DATA_CONSTRUCTORS = {"torch.tensor", "torch.as_tensor", "torch.from_numpy"}
BACKWARD_METHODS = {"backward", "manual_backward"}  # accelerator.backward(loss), self.manual_backward(loss)
TRAINING_CALLS = BACKWARD_METHODS | {"zero_grad"}  # methods that only training code calls


def is_torch_op(qual: str | None) -> bool:
    """`torch.sum`, `torch.nn.functional.relu`, ... : a function returning a tensor."""
    if qual is None:
        return False
    module, _, name = qual.rpartition(".")
    return module in TORCH_OP_MODULES and name[:1].islower() and not name.startswith(("is_", "get_", "set_", "_")) \
        and name not in NOT_TENSOR_FUNCTIONS


def tensor_kind(node: ast.AST, ctx: "FileFacts", _seen: dict | None = None) -> int:
    """NONE, WEAK or STRONG: how visibly `node` is a tensor."""
    _seen = _seen or {}
    if len(_seen) > 8:
        return NONE
    if isinstance(node, ast.Name):
        return _name_kind(node.id, ctx, _seen)
    if isinstance(node, ast.Call):
        func = node.func
        qual = ctx.qualname(func)
        if is_torch_op(qual) or qual in TENSOR_RESULTS:
            return STRONG
        if is_module_call(node, ctx):
            return STRONG
        if isinstance(func, ast.Attribute) and ctx.qualname(func) is None:
            if func.attr in ("cuda",):
                return STRONG
            if func.attr in REDUCTIONS or func.attr in TENSOR_METHODS:
                receiver = tensor_kind(func.value, ctx, _seen)
                if receiver == NONE:
                    return STRONG if func.attr in TORCH_ONLY_METHODS else NONE
                return STRONG if func.attr in REDUCTIONS else receiver
        return NONE
    if isinstance(node, ast.Compare):
        if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
            return NONE
        return max(tensor_kind(side, ctx, _seen) for side in (node.left, *node.comparators))
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)):
            return NONE  # `"%g" % t`: a string
        return max(tensor_kind(node.left, ctx, _seen), tensor_kind(node.right, ctx, _seen))
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return tensor_kind(node.operand, ctx, _seen)
    if isinstance(node, ast.Subscript):
        return tensor_kind(node.value, ctx, _seen)
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in SELF_NAMES:
            return STRONG if ctx.classes and node.attr in tensor_attributes(ctx.classes[-1], ctx) else NONE
        if node.attr == "grad":  # `p.grad`: a gradient (or None, which no code reads back)
            return STRONG
        if node.attr in KEPT_ATTRIBUTES:
            return tensor_kind(node.value, ctx, _seen)
    return NONE


def _name_kind(name: str, ctx: "FileFacts", seen: dict) -> int:
    """A parameter of the traced function is WEAK; a local is what all its assignments are
    (`s = s / s.sum()` keeps what `s` was); a name `.backward()` is called on is a loss."""
    from ptlint.semantics.compiled import traced_function

    if name in seen:
        return seen[name]
    if name in SELF_NAMES:
        return NONE
    if name in backward_names(ctx.function, ctx):
        return STRONG
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


# Calls that make a tensor attribute of a module: a parameter or a buffer (it moves with the module).
PARAMETER_CALLS = {"torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Buffer",
                   "torch.nn.parameter.Buffer"}


def tensor_attributes(cls: ast.ClassDef, ctx: "FileFacts") -> dict[str, bool]:
    """The attributes that hold a tensor in every method of `cls`, each with whether it visibly
    stays in host memory. A method of the class (or of a base class in this file) binds it with
    `self.register_buffer("x", ...)`, `self.x = nn.Parameter(...)` / `nn.Buffer(...)` (those move
    with the module: not host memory) or `self.x = torch.<op>(...)` (host memory when every binding
    is a factory without a device: `torch.zeros(3)`, never moved). An attribute also bound to a
    plain Python value (`self.x = 0`, `self.x = [...]`) is not counted."""
    from ptlint.semantics.compiled import local_classes

    key = ("tensor-attributes", id(cls))
    if key in ctx.memo:
        return ctx.memo[key]
    found: dict[str, bool] = {}
    plain: set[str] = set()
    moved: set[str] = set()
    for owner in class_family(cls, local_classes(ctx)):  # a base class's bindings count in each subclass
        owner_found, owner_plain, owner_moved = _own_tensor_attributes(owner, ctx)
        for name, host in owner_found.items():
            found[name] = found.get(name, True) and host
        plain |= owner_plain
        moved |= owner_moved
    result = ctx.memo[key] = {name: host and name not in moved for name, host in found.items() if name not in plain}
    return result


def _own_tensor_attributes(cls: ast.ClassDef, ctx: "FileFacts") -> tuple[dict[str, bool], set[str], set[str]]:
    """What the methods of `cls` itself bind to `self` attributes: (tensor attributes, each with
    whether every binding is a host factory; attributes bound to plain Python values; attributes
    bound to something else), once per class."""
    key = ("own-tensor-attributes", id(cls))
    known = ctx.memo.get(key)
    if known is not None:
        return known
    found: dict[str, bool] = {}
    plain: set[str] = set()
    moved: set[str] = set()
    for method in cls.body:
        if not isinstance(method, FUNCTION_DEFS):
            continue
        for node in walk(method):
            kind = type(node)
            if kind is ast.Call:
                if method_name(node) == "register_buffer" and node.args and isinstance(node.args[0], ast.Constant) \
                        and isinstance(node.args[0].value, str):
                    found[node.args[0].value] = False
                continue
            if kind is not ast.Assign:
                continue
            for target in node.targets:
                if not (type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self"):
                    continue
                value, name = node.value, target.attr
                qual = ctx.qualname(value.func) if isinstance(value, ast.Call) else None
                if qual in PARAMETER_CALLS:
                    found[name] = False
                elif is_torch_op(qual):
                    host = qual in HOST_FACTORIES and not any(k.arg == "device" for k in value.keywords)
                    found[name] = found.get(name, True) and host
                elif is_plain_python_value(value) and not (isinstance(value, ast.Constant) and value.value is None):
                    plain.add(name)
                else:
                    moved.add(name)  # `self.x = self.x.to(device)`: where it lives is unknown
    known = ctx.memo[key] = (found, plain, moved)
    return known


def _host_attribute(node: ast.AST, ctx: "FileFacts") -> bool:
    """`self.x` (or `self.x[i]`) where the class only ever binds `x` to a host tensor."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
        and bool(ctx.classes) and tensor_attributes(ctx.classes[-1], ctx).get(node.attr, False)


def _params(function: ast.AST) -> set[str]:
    args = function.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return names - set(SELF_NAMES)


# -- modules and losses -----------------------------------------------------------------------

def module_class(call: ast.AST, ctx: "FileFacts") -> bool:
    """`nn.Linear(...)`, `nn.CrossEntropyLoss()`, `MyBlock(...)` (a local nn.Module subclass)."""
    from ptlint.semantics.compiled import (
        is_module_class,
        local_classes,
        torch_module_name,
    )

    if not isinstance(call, ast.Call):
        return False
    qual = ctx.qualname(call.func)
    if qual is not None:
        return torch_module_name(qual)
    if isinstance(call.func, ast.Name):
        local = local_classes(ctx).get(call.func.id)
        return local is not None and is_module_class(local, ctx)
    return False


def submodules(cls: ast.ClassDef, ctx: "FileFacts") -> set[str]:
    """Attributes a module class assigns a module to (`self.proj = nn.Linear(...)`); in a
    `torch.nn.Module` subclass also any `self.x = Capitalised(...)` of its `__init__`, which
    builds a submodule from another file."""
    from ptlint.semantics.compiled import is_module_class

    key = ("submodules", id(cls))
    if key not in ctx.memo:
        found: set[str] = set()
        in_module_class = is_module_class(cls, ctx)
        for method in cls.body:
            if not isinstance(method, FUNCTION_DEFS):
                continue
            for node in walk(method):
                if type(node) is not ast.Assign or type(node.value) is not ast.Call:
                    continue
                for target in node.targets:
                    if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
                        func = node.value.func
                        head = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                        if module_class(node.value, ctx) or (in_module_class and method.name == "__init__"
                                                              and head[:1].isupper()):
                            found.add(target.attr)
        ctx.memo[key] = found
    return ctx.memo[key]


def is_module_call(call: ast.Call, ctx: "FileFacts") -> bool:
    """Calling a module: `self.proj(x)` (a submodule), `criterion(out, y)` where
    `criterion = nn.CrossEntropyLoss()`, `model(x)` where `model = Net()`."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        # the class on the traversal's stack, or after the traversal the one the call's method is in
        owner = ctx.classes[-1] if ctx.classes else ctx.method_owner(call)
        return owner is not None and func.attr in submodules(owner, ctx)
    if isinstance(func, ast.Name):
        values = ctx.assignments(func.id)
        return bool(values) and all(module_class(v, ctx) for v in values)
    return False


def backward_name(call: ast.Call) -> str | None:
    """The name whose graph a `.backward()` call walks: `loss.backward()`, `scaler.scale(loss)
    .backward()`, `(loss / k).backward()`, `accelerator.backward(loss)`."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in BACKWARD_METHODS:
        return None
    if call.args:  # accelerator.backward(loss) / self.manual_backward(loss)
        first = call.args[0]
        return first.id if isinstance(first, ast.Name) else None
    value = func.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "scale" \
            and value.args:
        value = value.args[0]
    if isinstance(value, ast.BinOp):
        value = value.left
    return value.id if isinstance(value, ast.Name) else None


def backward_names(scope: ast.AST | None, ctx: "FileFacts") -> set[str]:
    """Names `.backward()` is called on anywhere in a function (or the module's own code): not in
    the defs nested in it, whose names are their own (a script's `loss` is not its
    `train_step`'s)."""
    scope = scope or ctx.tree
    key = ("backward-names", id(scope))
    if key not in ctx.memo:
        names = set()
        if "backward" in ctx.text:
            body = scope.body
            for node in body_nodes(body if isinstance(body, list) else [body]):  # (a lambda's is one expression)
                if type(node) is ast.Call:
                    name = backward_name(node)
                    if name:
                        names.add(name)
        ctx.memo[key] = names
    return ctx.memo[key]


# Names of callables that are models (a parameter `model` says so; nothing else would).
MODEL_WORDS = {"model", "net", "network", "module", "encoder", "decoder", "policy", "classifier", "generator",
               "discriminator", "critic", "actor", "backbone", "teacher", "student", "transformer", "unet", "vae"}
# Methods that run a step on the device: backpropagating, stepping, running or generating.
DEVICE_STEP_METHODS = {"backward", "manual_backward", "zero_grad", "step", "forward", "generate"}


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


def assigned_plain_python(node: ast.AST, ctx: "FileFacts") -> bool:
    """A local name whose every assignment is a literal or display."""
    if is_plain_python_value(node):
        return True
    if isinstance(node, ast.Name):
        values = ctx.assignments(node.id)
        return bool(values) and all(is_plain_python_value(v) for v in values)
    return False


def not_a_tensor(node: ast.AST, ctx: "FileFacts") -> bool:
    """Visibly a NumPy value or a plain Python literal / display."""
    return assigned_plain_python(node, ctx) or comes_from_module(node, ctx, NUMPY_MODULES)


# -- values read back to Python ---------------------------------------------------------------

# `float(t)`, `int(t)`, `bool(t)`: each turns a tensor's value into a Python number
SCALAR_CONVERSIONS = {"float", "int", "bool"}
# torch functions that return a Python bool computed from tensor data
DATA_PREDICATES = {"torch.equal", "torch.allclose", "torch.is_nonzero"}


def tested_tensor(expr: ast.AST, ctx: "FileFacts") -> ast.AST:
    """The tensor a condition reads (`loss` of `loss > best`, of `not torch.isfinite(loss)`): the
    host-memory and NumPy questions are asked of it."""
    while True:
        if isinstance(expr, ast.Compare):
            expr = next((side for side in (expr.left, *expr.comparators) if tensor_kind(side, ctx) == STRONG),
                        expr.left)
        elif isinstance(expr, ast.BinOp):
            expr = expr.left if tensor_kind(expr.left, ctx) == STRONG else expr.right
        elif isinstance(expr, ast.UnaryOp):
            expr = expr.operand
        elif isinstance(expr, ast.Call) and expr.args and ctx.qualname(expr.func) in DATA_PREDICATES:
            expr = expr.args[0]  # `torch.equal(a, b)`
        else:
            return expr
SHAPE_METHODS = {"size", "dim", "numel", "ndimension", "nelement"}


def value_test(test: ast.AST, ctx: "FileFacts", compiling: bool = False) -> ast.AST | None:
    """The part of a condition that depends on a tensor's value, or None.

    Only what is visibly a tensor counts: a reduction of an argument or of a torch op's result
    (`x.sum() > 0`, `(x > 0).any()`, `torch.all(mask)`), never shapes, `None` tests, attributes
    or bare names, which are usually Python values. With `compiling`, the operands of an `and`
    after one that is False under Dynamo (`not is_compiling() and x.sum() > 0`) are never
    evaluated there and do not count."""
    from ptlint.semantics.compiled import false_when_compiling

    if isinstance(test, ast.BoolOp):
        for value in test.values:
            if compiling and isinstance(test.op, ast.And) and false_when_compiling(value, ctx):
                return None
            found = value_test(value, ctx, compiling)
            if found is not None:
                return found
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return value_test(test.operand, ctx, compiling)
    if isinstance(test, ast.Call) and ctx.qualname(test.func) in DATA_PREDICATES:
        return test
    if isinstance(test, ast.Compare) and any(_shape_number(side) for side in (test.left, *test.comparators)):
        # `if num_frames != self.emb.size(1):` compares sizes: a bare name beside a size is an int
        sides = [side for side in (test.left, *test.comparators) if not isinstance(side, ast.Name)]
        return test if any(tensor_kind(side, ctx) == STRONG for side in sides) else None
    return test if tensor_kind(test, ctx) == STRONG else None  # includes `if torch.any(mask):`


def _shape_number(expr: ast.AST) -> bool:
    """`x.size(1)`, `x.shape[0]`, `x.ndim`, `len(x)`: a Python int, never a tensor's value."""
    if isinstance(expr, ast.Subscript):
        expr = expr.value
    if isinstance(expr, ast.Attribute):
        return expr.attr in ("shape", "ndim")
    if isinstance(expr, ast.Call):
        func = expr.func
        return (isinstance(func, ast.Attribute) and func.attr in SHAPE_METHODS) or \
            (isinstance(func, ast.Name) and func.id == "len")
    return False


# reductions whose result has one element when no dimension is given (`x.sum()`, `x.max()`)
FULL_REDUCTIONS = REDUCTIONS - {"logsumexp"}
# methods that keep a tensor's shape: a scalar stays a scalar
SHAPE_KEEPING = {"detach", "float", "double", "half", "bfloat16", "int", "long", "clone", "contiguous", "to", "type",
                 "cpu", "cuda", "abs", "sqrt", "exp", "log", "neg", "squeeze"}


def loss_names(scope: ast.AST | None, ctx: "FileFacts") -> set[str]:
    """Names of the losses of a function: those `.backward()` is called on (`backward_names`),
    and the names they are computed from by arithmetic or loss scaling (`scaled =
    scaler.scale(loss / k)`). `.backward()` without a gradient needs a one-element tensor, and
    broadcasting never shrinks an operand, so those names hold one element too."""
    scope = scope or ctx.tree
    key = ("loss-names", id(scope))
    if key not in ctx.memo:
        names = set(backward_names(scope, ctx))
        assigned: dict[str, list[ast.AST]] = {}
        if names:  # the whole scope's assignments, wherever the traversal is
            for node in ast.walk(scope):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            assigned.setdefault(target.id, []).append(node.value)
        pending = list(names)
        while pending:
            name = pending.pop()
            for value in assigned.get(name, []):
                for source in _elementwise_sources(value):
                    if source not in names:
                        names.add(source)
                        pending.append(source)
        ctx.memo[key] = names
    return ctx.memo[key]


def _elementwise_sources(value: ast.AST) -> list[str]:
    """Names a value is computed from elementwise: `loss / k` -> [loss, k], `scaler.scale(loss)`
    -> [loss], `loss.float()` -> [loss]."""
    if isinstance(value, ast.Name):
        return [value.id]
    if isinstance(value, ast.BinOp) and not isinstance(value.op, ast.MatMult):
        return _elementwise_sources(value.left) + _elementwise_sources(value.right)
    if isinstance(value, ast.UnaryOp):
        return _elementwise_sources(value.operand)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr == "scale" and len(value.args) == 1:
            return _elementwise_sources(value.args[0])
        if value.func.attr in SHAPE_KEEPING and not value.args:
            return _elementwise_sources(value.func.value)
    return []


def is_scalar_tensor(node: ast.AST, ctx: "FileFacts", hops: int = 2) -> bool:
    """Visibly a one-element tensor: a loss (`loss_names`), a reduction over all elements
    (`x.sum()`, `x.mean()`, `torch.max(x)`, no `dim`), or a shape-keeping method or arithmetic
    with a plain number of one (`loss.detach()`, `loss.data`, `total / n`), also through a local
    name."""
    if isinstance(node, ast.Name):
        if node.id in loss_names(ctx.function, ctx):
            return True
        values = [v for v in ctx.assignments(node.id) if isinstance(v, ast.expr)]
        return bool(hops) and bool(values) and all(is_scalar_tensor(v, ctx, hops - 1) for v in values)
    if isinstance(node, ast.Attribute) and node.attr == "data":  # `loss.data`: the same tensor
        return is_scalar_tensor(node.value, ctx, hops)
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        sides = (node.left, node.right)
        return any(is_scalar_tensor(side, ctx, hops) for side in sides) and all(
            is_scalar_tensor(side, ctx, hops) or isinstance(side, ast.Constant) for side in sides)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    dims = node.args or any(k.arg in ("dim", "axis") for k in node.keywords)
    qual = ctx.qualname(func)
    if qual is not None:  # `torch.sum(x)`: the tensor is the only positional argument
        module, _, name = qual.rpartition(".")
        return module == "torch" and name in FULL_REDUCTIONS and len(node.args) == 1 \
            and not any(k.arg in ("dim", "axis") for k in node.keywords)
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in FULL_REDUCTIONS and not dims:
        return True
    return func.attr in SHAPE_KEEPING and is_scalar_tensor(func.value, ctx, hops)


# factories and methods whose positional arguments are sizes: a tensor there is read back
SIZED_FACTORIES = {"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.rand", "torch.randn",
                   "torch.arange", "torch.eye"}
SIZED_METHODS = {"new_zeros", "new_ones", "new_empty", "new_full"}
LENGTH_WORDS = {"len", "lens", "length", "lengths", "seqlen", "seqlens"}


def size_read(node: ast.Call, ctx: "FileFacts") -> ast.AST | None:
    """The tensor `node` reads back as a size (`tensor_given_as_size`), unless it is in host memory
    or already read, or the function read a size from that name before (`dim_size` given to two
    factories: the second read waits for nothing new)."""
    size = tensor_given_as_size(node, ctx)
    if size is None or in_host_memory(size, ctx) or already_waited(size, ctx):
        return None
    if isinstance(size, ast.Name):
        key = ("size-read", id(ctx.function), size.id)
        if key in ctx.memo:
            return None
        ctx.memo[key] = True
    return size


def tensor_given_as_size(node: ast.Call, ctx: "FileFacts") -> ast.AST | None:
    """A one-element tensor given as a size (`torch.zeros(batch.max().int() + 1, d)`,
    `x.new_zeros(n)` where `n = index.max() + 1`): the factory turns it into a Python int, an
    `.item()` nobody wrote. Not one computed from sequence lengths (`_of_lengths`)."""
    func = node.func
    qualname = ctx.qualname(func)
    if qualname in SIZED_FACTORIES:
        sizes = node.args[:1] if qualname == "torch.full" else node.args
    elif isinstance(func, ast.Attribute) and func.attr in SIZED_METHODS and qualname is None:
        sizes = node.args[:1] if func.attr == "new_full" else node.args
    else:
        return None
    sizes = [e for a in sizes for e in (a.elts if isinstance(a, (ast.Tuple, ast.List)) else [a])]
    return next((size for size in sizes if is_scalar_tensor(size, ctx) and not _of_lengths(size, ctx)), None)


def _of_lengths(size: ast.AST, ctx: "FileFacts", hops: int = 2) -> bool:
    """Computed from sequence lengths (`lengths.max()`, `len2.max()`, `longest` assigned
    `seq_lengths.max()`): kept on the host by convention, as `pack_padded_sequence` wants them,
    where nothing here shows otherwise."""
    words = {re.sub(r"\d+$", "", word) for word in name_words(size)}
    if words & LENGTH_WORDS:
        return True
    return bool(hops) and isinstance(size, ast.Name) and any(
        _of_lengths(value, ctx, hops - 1) for value in ctx.assignments(size.id) if isinstance(value, ast.expr))


# -- reads hidden in other calls ----------------------------------------------------------------

GRAD_SCALERS = {"torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.GradScaler",
                "torch.cuda.amp.grad_scaler.GradScaler"}
SCALER_NAMES = {"scaler", "grad_scaler", "loss_scaler", "amp_scaler", "gradscaler"}
# GradScaler methods that call `.item()` inside: `get_scale()` reads the scale; `state_dict()`
# reads the scale and the growth tracker.
SCALER_READS = {"get_scale", "state_dict"}


def is_grad_scaler(node: ast.AST, ctx: "FileFacts") -> bool:
    """Visibly a `torch.amp.GradScaler` / `torch.cuda.amp.GradScaler`: assigned one, or named
    `scaler`, `grad_scaler`, `loss_scaler` (also as an attribute: `self.scaler`) and not
    visibly assigned anything else."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    if name is None:
        return False
    values = [v for v in ctx.assignments(name) if isinstance(v, ast.Call)] if isinstance(node, ast.Name) else []
    quals = {ctx.qualname(v.func) for v in values}
    if quals & GRAD_SCALERS:
        return True
    return name.lower().lstrip("_") in SCALER_NAMES and not (quals - {None})


def hidden_read(call: ast.AST, ctx: "FileFacts") -> bool:
    """A call that reads a tensor back to the host inside: `scaler.get_scale()` and
    `scaler.state_dict()` of a GradScaler (`is_grad_scaler`) call `.item()`. Not the scale a
    function compares before and after `scaler.update()` to tell whether the optimizer step was
    skipped (`skip_scheduler = scaler.get_scale() != scale_before_step`): the host acts on it."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in SCALER_READS \
        and not call.args and not call.keywords and is_grad_scaler(call.func.value, ctx) \
        and not (call.func.attr == "get_scale" and _scales_compared(ctx.enclosing_function(call) or ctx.tree))


def _scales_compared(scope: ast.AST) -> bool:
    """`scope` compares a `get_scale()` with something: the skipped-step test of mixed precision."""
    return any(isinstance(node, ast.Compare) and any(
        isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute) and part.func.attr == "get_scale"
        for side in (node.left, *node.comparators) for part in walk(side)) for node in walk(scope))


# -- host memory ------------------------------------------------------------------------------

# torch factories: without `device=` they build the tensor in host memory
HOST_FACTORIES = {f"torch.{name}" for name in (
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace",
    "eye", "rand", "randn", "randint", "randperm", "from_file", "frombuffer")}


# a device string, and names that say they hold a device (`device`, `dev`, `local_device`)
DEVICE_STRING = re.compile(r"(cpu|cuda|mps|xpu|meta|hpu|xla|npu)(:\d+)?")


def asks_for_an_accelerator(test: ast.AST, ctx: "FileFacts") -> bool:
    """`torch.cuda.is_available()`, `use_gpu`, `args.cuda`, `self.use_cuda`: whether there is (or
    the user wants) a GPU; not a count (`device_count() > 1` asks for several)."""
    if isinstance(test, ast.Call):
        return (ctx.qualname(test.func) or "").endswith("cuda.is_available")
    return isinstance(test, (ast.Name, ast.Attribute)) and bool(name_words(test) & {"cuda", "gpu", "use_cuda", "use_gpu"})


def without_an_accelerator(node: ast.AST, ctx: "FileFacts") -> bool:
    """`node` stands in a branch taken only where there is no GPU (or the user wants none): the
    `else` of `if torch.cuda.is_available():` (of `x if use_cuda else y`), the body of `if not
    args.cuda:`. Nothing there waits for a device or copies to one."""
    child, parent = node, ctx.parent(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(parent, (ast.If, ast.IfExp)) and child is not parent.test:
            taken = child is parent.body if isinstance(parent, ast.IfExp) else any(s is child for s in parent.body)
            test = parent.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, taken = test.operand, not taken
            if not taken and asks_for_an_accelerator(test, ctx):
                return True
        child, parent = parent, ctx.parent(parent)
    return False
DEVICE_NAME = re.compile(r"(\w*_)?(device|dev)")


def is_device(node: ast.AST, ctx: "FileFacts") -> bool:
    """Visibly a device: "cuda:1", `torch.device(...)`, `device`, `self.device`, `x.device`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return DEVICE_STRING.fullmatch(node.value) is not None
    if isinstance(node, ast.Call):
        return ctx.qualname(node.func) == "torch.device"
    name = dotted(node)
    if name is None:
        return False
    values = ctx.assignments(node.id) if isinstance(node, ast.Name) else []
    if DEVICE_NAME.fullmatch(name.rsplit(".", 1)[-1]):
        # trust the name unless it is visibly bound to something else: `device = some_tensor`
        # makes `.to(device)` mean "like that tensor" (dtype too), which `device=` rejects
        return not any(isinstance(v, ast.Name) and not DEVICE_NAME.fullmatch(v.id) for v in values)
    # d = torch.device("cuda") / d = "cuda"
    return bool(values) and all(not isinstance(v, ast.Name) and is_device(v, ctx) for v in values)


def may_be_device(node: ast.AST, ctx: "FileFacts") -> bool:
    """`.to(x)` moves between devices only for a device argument (`"cuda"`, `torch.device(...)`,
    `device`, `x.device`), not for a dtype (`.to(torch.float16)`, `.to(t.dtype)`): the argument
    is not visibly a dtype."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.Call):
        return ctx.qualname(node.func) == "torch.device"
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    qual = ctx.qualname(node) or ""
    return not qual.startswith("torch.") and "dtype" not in name.lower()


def is_cpu_device(node: ast.AST | None, ctx: "FileFacts") -> bool:
    """`"cpu"`, `"cpu:0"`, `torch.device("cpu")`: host memory; also `y.device` of a loader's batch
    part the loop leaves on the host (`_batch_part_left_on_host`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.split(":")[0] == "cpu"
    if isinstance(node, ast.Attribute) and node.attr == "device" and isinstance(node.value, ast.Name):
        return _batch_part_left_on_host(node.value.id, ctx)
    return isinstance(node, ast.Call) and ctx.qualname(node.func) == "torch.device" and bool(node.args) \
        and is_cpu_device(node.args[0], ctx)


def _host_name(name: str) -> bool:
    lower = name.lower()
    return lower.endswith("_cpu") or lower.startswith("cpu_") or lower in ("cpu", "host")


def _mentions_cpu(expr: ast.AST, ctx: "FileFacts", depth: int) -> bool:
    """The expression visibly makes or moves a tensor to host memory and never to a device."""
    if isinstance(expr, ast.Call) and (method_name(expr) == "cpu" and not expr.args
                                       or method_name(expr) == "to" and expr.args and is_cpu_device(expr.args[0], ctx)):
        return True  # `log_softmax(model(x.to(device))).cpu()`: the last move decides
    if isinstance(expr, ast.BinOp):  # arithmetic of host tensors stays on the host
        return _mentions_cpu(expr.left, ctx, depth) or _mentions_cpu(expr.right, ctx, depth)
    if isinstance(expr, ast.Call) and is_torch_op(ctx.qualname(expr.func)) and expr.args \
            and ctx.qualname(expr.func) not in HOST_FACTORIES and not any(k.arg == "device" for k in expr.keywords):
        return _mentions_cpu(expr.args[0], ctx, depth)  # `torch.split(host, n)`: pieces of a host tensor
    root = root_name(expr)  # the value the expression derives from: `labels_cpu` of `labels_cpu[i]`
    on_cpu = root is not None and (_host_name(root) or (depth < 3 and (
        _host_value(root, ctx, depth + 1) or _batch_part_left_on_host(root, ctx))))
    for node in ast.walk(expr):
        if not isinstance(node, ast.Call):
            continue
        name = method_name(node)
        if moves_to_device(node, ctx):
            return False
        if ctx.qualname(node.func) in HOST_FACTORIES or name == "cpu" or \
                (name == "to" and node.args and is_cpu_device(node.args[0], ctx)):
            on_cpu = True
        for kw in node.keywords:
            if kw.arg == "device":
                if not is_cpu_device(kw.value, ctx):
                    return False
                on_cpu = True
            elif kw.arg == "return_tensors":  # a tokenizer / image processor: host tensors
                on_cpu = True
    return on_cpu


def _host_value(name: str, ctx: "FileFacts", depth: int) -> bool:
    # `x = x.numpy()` derives x from itself: it neither proves nor disproves where x lives; nor
    # does `x += y`, which updates x in place, where it is
    # a branch that builds it from NumPy (`torch.from_numpy` of an earlier NumPy `x`) keeps it there
    own, values = [], []  # the bindings that derive the name from itself, and the others
    for v in ctx.assignments(name):
        if not isinstance(v, ast.AugAssign):
            (own if _derived_from(v, ctx) == name else values).append(v)
    if any(isinstance(node, ast.Call) and moves_to_device(node, ctx) for v in own for node in ast.walk(v)):
        return False  # `x = x.cuda()`: wherever it was built, it is on the device now
    numpy = [_numpy_expression(v, ctx) for v in values]
    return bool(values) and not all(numpy) and all(n or _mentions_cpu(v, ctx, depth) for n, v in zip(numpy, values))


def _derived_from(expr: ast.AST, ctx: "FileFacts") -> str | None:
    """The name a value derives from where it stays where that name's tensor is: `x[i]`,
    `x.unsqueeze(0)`, and through torch ops on it and methods of their results
    (`torch.gather(x, 2, index).squeeze(-1)`), as `_mentions_cpu` follows them."""
    while True:
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif not isinstance(expr, ast.Call):
            break
        elif expr.args and is_torch_op(ctx.qualname(expr.func)):
            if ctx.qualname(expr.func) in HOST_FACTORIES or any(k.arg == "device" for k in expr.keywords):
                break
            expr = expr.args[0]
        elif isinstance(expr.func, ast.Attribute) and not is_torch_op(ctx.qualname(expr.func)):
            expr = expr.func.value  # a method of the value (`.squeeze(-1)`, `.float()`)
        else:
            break
    return root_name(expr)


def _numpy_expression(expr: ast.AST, ctx: "FileFacts") -> bool:
    """Visibly NumPy: `np.random.rand(n) < p`, `np.zeros(n) + 1`, `labels.numpy()`."""
    if isinstance(expr, ast.Compare):
        expr = expr.left
    elif isinstance(expr, ast.BinOp):
        return _numpy_expression(expr.left, ctx) or _numpy_expression(expr.right, ctx)
    return not_a_tensor(expr, ctx) and not isinstance(expr, (ast.Constant, ast.Name))


def visibly_on_host(node: ast.AST, ctx: "FileFacts") -> bool:
    """True when a tensor visibly lives in host memory: built by a torch factory without a
    device (or with `device="cpu"`), from `torch.from_numpy`, moved with `.cpu()`, returned by
    a tokenizer or processor called with `return_tensors=`, or named `*_cpu` — directly, or
    through the local names (and loop targets) it was assigned from. Reading such a tensor
    back costs no device sync."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        if isinstance(node, ast.Attribute) and (_host_name(node.attr) or _own_attribute_set_on_host(node, ctx)):
            return True
        node = node.value
    if isinstance(node, ast.Name):
        return _host_name(node.id) or _host_value(node.id, ctx, 0) or _batch_part_left_on_host(node.id, ctx)
    return _mentions_cpu(node, ctx, 0)


def _own_attribute_set_on_host(node: ast.Attribute, ctx: "FileFacts") -> bool:
    """`self.sigmas[-1].item()` where the same function set `self.sigmas = sigmas.to("cpu")` on
    the lines above, and every assignment of `self.sigmas` there before the read puts it on the host."""
    if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
        return False
    function = ctx.enclosing_function(node)
    if function is None:
        return False
    values = [statement.value for statement in walk(function) if isinstance(statement, ast.Assign)
              and statement.lineno < node.lineno and any(
                  isinstance(t, ast.Attribute) and t.attr == node.attr and isinstance(t.value, ast.Name)
                  and t.value.id == node.value.id for t in statement.targets)]
    return bool(values) and all(_mentions_cpu(value, ctx, 1) for value in values)


def _batch_part_left_on_host(name: str, ctx: "FileFacts") -> bool:
    """`for image, caption, image_id in loader:` whose body moves `image` to the device
    (`image = image.to(device)`) and never `image_id`: a loader yields host tensors, and the loop
    moves the parts it computes with, so the part it leaves (an id, an index) is in host memory."""
    loop = next((loop for loop in reversed(ctx.loops) if isinstance(loop, (ast.For, ast.AsyncFor))
                 and isinstance(loop.target, (ast.Tuple, ast.List))
                 and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(loop.target))), None)
    if loop is None:
        return False
    # the loop rebinds the name: what other code binds it, before or after, is not what it reads
    values = [value for value in ctx.assignments(name) if loop.lineno <= value.lineno <= loop.end_lineno]
    if not values:  # (the first is the loop's own binding: its iterable)
        return False
    key = ("host-batch-part", name, id(loop), len(values))  # (what is bound so far, mid-traversal)
    if key in ctx.memo:  # (asked again while deciding it: `a = a.to(b.device)`, `b = b.to(a.device)`)
        return ctx.memo[key] or False
    ctx.memo[key] = None
    ctx.memo[key] = found = _left_on_host(name, values, loop, ctx)
    return found


def _left_on_host(name: str, values: list[ast.AST], loop: ast.AST, ctx: "FileFacts") -> bool:
    # later values may only convert the part (`y = y.float()`); the scan below finds its moves
    if any(_derived_from(value, ctx) != name for value in values[1:]):
        return False
    parts = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    moved = False
    for statement in loop.body:
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and method_name(node) in ("to", "cuda")
                    and isinstance(node.func, ast.Attribute)):
                continue
            root = root_name(node.func.value)
            if root == name:
                return False
            if root in parts and moves_to_device(node, ctx):
                moved = True
    return moved


def moves_to_device(call: ast.Call, ctx: "FileFacts") -> bool:
    """`x.cuda()`, `x.to(device)`: a move to an accelerator (not `.to("cpu")`, not `.to(dtype)`)."""
    name = method_name(call)
    return name == "cuda" or (name == "to" and bool(call.args) and may_be_device(call.args[0], ctx)
                              and not is_cpu_device(call.args[0], ctx))


# Checkpoint conversion code reads tensors that were loaded into host memory.
CHECKPOINT_NAMES = ("state_dict", "checkpoint", "ckpt")
CHECKPOINT_TOKENS = {"sd", "ckpt", "weights"}  # `sds_sd`, `ckpt`: a loaded state dict
# Methods whose result is a NumPy array whatever they are called on.
NUMPY_ONLY = {"numpy", "astype"}
# Ops whose output size depends on data: they wait for the device themselves.
WAITING_OPS = {"nonzero", "where", "masked_select", "unique", "unique_consecutive", "argwhere"}
# Words of a boolean mask (`returns[done]`, `x[batch.mask]`): indexing with one waits too.
MASK_WORDS = {"mask", "masks", "done", "dones", "keep", "valid"}


def in_host_memory(value: ast.AST, ctx: "FileFacts") -> bool:
    """Reading `value` back costs no device sync: visibly NumPy or plain Python (`not_a_tensor`),
    a tensor in host memory (`visibly_on_host`), a value the code type-checks as NumPy or a
    tensor of unknown origin (`isinstance`, `hasattr`), read from a checkpoint, a NumPy
    array's method's result, or what an environment returned."""
    return not_a_tensor(value, ctx) or visibly_on_host(value, ctx) or _checked_type(value, ctx) \
        or _checkpoint_value(value, ctx) or _numpy_array(value, ctx) or _host_attribute(value, ctx) \
        or _environment_output(value, ctx)


ENVIRONMENT_WORDS = {"env", "envs", "environment", "environments", "venv"}


def steps_environment(call: ast.Call, methods: tuple[str, ...] = ("step",)) -> bool:
    """`env.step(a)`, `self.envs.step(a)`, `train_env.step(a)`: a simulator's step, on the host
    (with `methods`, also its `reset()` or `initial()`)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in methods):
        return False
    receiver = func.value
    name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return bool(set(name.lower().split("_")) & ENVIRONMENT_WORDS)


def _environment_output(value: ast.AST, ctx: "FileFacts") -> bool:
    """`observation["done"]` where every value of `observation` is what an environment returned
    (`env.step(action)`, `env.reset()`, `env.initial()`): a simulator's output comes from the host,
    and the step already waited for the action it was given, so reading it waits for no model work
    (also where a wrapper copies it to the device)."""
    head = chain_head(value)
    values = [v for v in ctx.assignments(head.id) if isinstance(v, ast.expr)] if head is not None else []
    return bool(values) and all(isinstance(v, ast.Call) and steps_environment(v, ("step", "reset", "initial"))
                                for v in values)


def already_waited(value: ast.AST, ctx: "FileFacts", hops: int = 2) -> bool:
    """The value comes from an op whose output size depends on data (`nonzero`, one-argument
    `torch.where`, `masked_select`, `unique`, an index by a boolean mask: `returns[done]`): that
    op has already waited for the device."""
    node = value
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in WAITING_OPS and not (name == "where" and len(node.args) != 1):
                return True
            node = node.func
        else:
            if isinstance(node, ast.Subscript) and isinstance(node.slice, (ast.Name, ast.Attribute, ast.Subscript)) \
                    and _mask_words(node.slice) & MASK_WORDS:
                return True
            node = node.value
    if isinstance(node, ast.Name) and hops:
        values = [v for v in ctx.assignments(node.id) if isinstance(v, ast.expr)]
        return bool(values) and all(already_waited(v, ctx, hops - 1) for v in values)
    return False


def _mask_words(node: ast.AST) -> set[str]:
    """The words of an index's last name: `done` of `batch["done"]`, of `env_outputs.done`, `valid_mask`."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        name = node.slice.value
    else:
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return set(name.lower().split("_"))


def _checkpoint_value(node: ast.AST, ctx: "FileFacts", hops: int = 1) -> bool:
    """Read from a state_dict or checkpoint, directly or through a name assigned from one."""
    node = chain_head(node)
    if node is None:
        return False
    if any(word in node.id.lower() for word in CHECKPOINT_NAMES) or set(node.id.lower().split("_")) & CHECKPOINT_TOKENS:
        return True
    values = ctx.assignments(node.id) if hops else []
    return bool(values) and all(isinstance(v, ast.expr) and _checkpoint_value(v, ctx, hops - 1) for v in values)


def _numpy_array(value: ast.AST, ctx: "FileFacts", hops: int = 2) -> bool:
    """Made by a method only NumPy arrays have (`a.astype(f)`), or after `.numpy()`: the sync, if
    any, happened there; `.tolist()` of the array reads host memory."""
    node = value
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp, ast.IfExp)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NUMPY_ONLY:
            return True
        node = node.func if isinstance(node, ast.Call) else node.left if isinstance(node, ast.BinOp) \
            else node.body if isinstance(node, ast.IfExp) else node.value
    if isinstance(node, ast.Name) and hops:
        values = [v for v in ctx.assignments(node.id) if isinstance(v, ast.expr)]
        return bool(values) and _numpy_array(values[-1], ctx, hops - 1)
    return False


def _checked_type(value: ast.AST, ctx: "FileFacts") -> bool:
    """The code checked the value, or the value it was taken from, to be NumPy
    (`if isinstance(i, np.ndarray): ... for j in i.nonzero(): j.tolist()`), or checks a tensor
    or duck-types it: input normalisation of a value whose origin the code does not know."""
    seen = 0
    while value is not None and seen < 3:
        seen += 1
        if type_guarded(value, ctx, NUMPY_MODULES):
            return True
        if type_guarded(value, ctx, ("torch",)):
            # a meter's `update(**values)` that a training step elsewhere calls with its losses:
            # the origin is known, and it is the step's tensors
            return not _called_by_training_steps(ctx)
        root = chain_head(value)
        if root is None:
            return False
        if root is not value:
            value = root
            continue
        values = ctx.assignments(root.id)
        value = values[-1] if len(values) == 1 and isinstance(values[0], ast.expr) else None
    return False


def _called_by_training_steps(ctx: "FileFacts") -> bool:
    """The function the traversal is in is called by training steps in other files of the
    project (ptlint.semantics.project)."""
    project = getattr(ctx, "project", None)
    function = ctx.function
    if project is None or function is None or isinstance(function, ast.Lambda):
        return False
    key = def_key(function, ctx.parent)  # and not only with host values (`meter.update(loss=loss.item())`)
    return project.trains(key) and key not in project.host_arguments


def type_guarded(node: ast.AST, ctx: "FileFacts", modules: tuple[str, ...]) -> bool:
    """True inside `if isinstance(<node>, <types of one of modules>):` — a value the code itself
    has checked to be, say, a NumPy scalar — or `if hasattr(<node>, ...):` (duck typing)."""
    wanted = ast.dump(node)
    for ancestor in reversed(ctx.stack):
        if isinstance(ancestor, FUNCTIONS):
            return False
        if not isinstance(ancestor, (ast.If, ast.IfExp)):
            continue
        for test in ast.walk(ancestor.test):
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" \
                    and len(test.args) == 2 and ast.dump(test.args[0]) == wanted:
                return True  # duck typing: the code itself does not know it holds a tensor
            if "torch" in modules and isinstance(test, ast.Call) and len(test.args) == 1 \
                    and ctx.qualname(test.func) == "torch.is_tensor" and ast.dump(test.args[0]) == wanted:
                return True  # `if torch.is_tensor(x): x = x.item()`: normalising an input
            if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" \
                    and len(test.args) == 2 and ast.dump(test.args[0]) == wanted:
                types = [t for t in ast.walk(test.args[1]) if isinstance(t, ast.Attribute)]
                if any((ctx.qualname(t) or "").startswith(tuple(m + "." for m in modules)) for t in types):
                    return True
    return False


# -- module state ---------------------------------------------------------------------------------
def masked_reduction(call: ast.Call, ctx: "FileFacts") -> ast.Subscript | None:
    """`d[d > 0].mean()`, `torch.sum(x[mask])`: a reduction over a boolean-mask selection, whose
    size the host must count (`nonzero`) before it can select: a wait, where a masked reduction
    on the device (`(d * (d > 0)).sum() / (d > 0).sum()`) has a fixed shape. The selection, or None."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in FULL_REDUCTIONS and not call.args and not call.keywords:
        selected = func.value
    elif len(call.args) == 1 and not call.keywords:
        module, _, name = (ctx.qualname(func) or "").rpartition(".")
        if module != "torch" or name not in FULL_REDUCTIONS:
            return None
        selected = call.args[0]
    else:
        return None
    return selected if isinstance(selected, ast.Subscript) and _boolean_mask(selected.slice, ctx) else None


def _boolean_mask(node: ast.AST, ctx: "FileFacts", hops: int = 1) -> bool:
    """A comparison (`d > 0`, `x != x`), its negation, or a local assigned one: of tensors where
    what it selects from is one."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
        node = node.operand
    if isinstance(node, ast.Compare):  # (a value that is not a tensor is the caller's question)
        return not any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops) \
            and not all(isinstance(side, ast.Constant) for side in (node.left, *node.comparators))
    if isinstance(node, ast.Name) and hops:
        values = [v for v in ctx.assignments(node.id) if isinstance(v, ast.expr)]
        return bool(values) and all(_boolean_mask(v, ctx, hops - 1) for v in values)
    return False


def reads_module_state(node: ast.AST) -> bool:
    """`int(self.queue_ptr)`, `self.count.item()`, `self.params[0].item()`: a read of an attribute
    of `self` (or of an element of one)."""
    if not isinstance(node, ast.Call):
        return False
    target = node.args[0] if isinstance(node.func, ast.Name) and node.args else \
        node.func.value if isinstance(node.func, ast.Attribute) else None
    while isinstance(target, ast.Subscript):
        target = target.value
    return own_attribute(target) is not None


# Constructors of a counter's first value: `torch.tensor([0])`, `torch.zeros(1, dtype=torch.long)`.
COUNTER_STARTS = {"torch.tensor", "torch.zeros", "torch.LongTensor", "torch.IntTensor", "torch.as_tensor"}
INTEGER_DTYPES = {"long", "int", "int64", "int32"}


def _counter_start(value: ast.AST, ctx: "FileFacts") -> bool:
    """A fresh integer tensor of one element: `torch.tensor([0])`, `torch.tensor(0)`,
    `torch.zeros(1, dtype=torch.long)`, `torch.LongTensor([0])`."""
    if not (isinstance(value, ast.Call) and ctx.qualname(value.func) in COUNTER_STARTS and len(value.args) == 1):
        return False
    arg = value.args[0]
    if isinstance(arg, ast.List) and len(arg.elts) == 1:
        arg = arg.elts[0]
    if not (isinstance(arg, ast.Constant) and type(arg.value) is int):
        return False
    dtype = next((k.value for k in value.keywords if k.arg == "dtype"), None)
    if dtype is None:  # `zeros(1)` is a float tensor
        return ctx.qualname(value.func) != "torch.zeros"
    return ast.unparse(dtype).split(".")[-1] in INTEGER_DTYPES


def step_counter(node: ast.AST, ctx: "FileFacts") -> str | None:
    """`self.update_count` where the class of the function being checked keeps a step counter in
    a tensor: registered or assigned as a one-element integer tensor and only ever increased by a
    number (`self.update_count += 1`). The attribute's name, else None."""
    attribute = own_attribute(node)
    if attribute is None or not _increased_in_text(attribute, ctx):
        return None
    function = ctx.function
    owner = ctx.owner_class(function) if function is not None else None
    if owner is None:
        return None
    key = ("step-counters", id(owner))
    counters = ctx.memo.get(key)
    if counters is None:
        counters = ctx.memo[key] = _step_counters(owner, ctx)
    return attribute if attribute in counters else None


def _increased_in_text(attribute: str, ctx: "FileFacts") -> bool:
    """`<attribute> +=` occurs in the file: without it no class of the file keeps that counter, and
    the class need not be walked (most attribute reads of most files)."""
    text = ctx.text  # two substring tests: a regular expression over a large file costs more than the walk
    return f"{attribute} +=" in text or f"{attribute}+=" in text


def _step_counters(owner: ast.ClassDef, ctx: "FileFacts") -> set[str]:
    started: set[str] = set()
    increased: set[str] = set()
    other: set[str] = set()  # written some other way: a tensor the device computes
    for node in ast.walk(owner):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer" \
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            (started if _counter_start(node.args[1], ctx) else other).add(node.args[0].value)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                attribute = own_attribute(target)
                if attribute is None:
                    continue
                if isinstance(node, ast.AugAssign):
                    counts = isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant) \
                        and type(node.value.value) is int
                    (increased if counts else other).add(attribute)
                else:
                    (started if _counter_start(node.value, ctx) else other).add(attribute)
    return (started & increased) - other
