"""PTL201 move-after-create: a tensor factory immediately followed by `.cuda()` / `.to(device)`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, UNSAFE, Fix
from ptlint.engine.rule import CALLED, PER_STEP, FixExample, FixInput, Rule
from ptlint.semantics.nodes import STATEMENT_LOOPS, block_of, body_nodes, keyword
from ptlint.semantics.values import (
    DEVICE_STRING,
    HOST_DATA_CONSTRUCTORS,
    NONE,
    STRONG,
    in_host_memory,
    is_cpu_device,
    is_device,
    tensor_kind,
)
from ptlint.semantics.where import iterable_is_data, runs_model

# torch factories that take `device=` and build their values from their arguments alone.
# Not `tensor` / `as_tensor`: they copy Python or NumPy data from the host whatever `device=` says
# (a pageable host-to-device copy either way, measured on an H100), so the fix would gain nothing.
DETERMINISTIC = {
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "empty_strided",
    "tril_indices", "triu_indices",
    "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
}
# Random factories: the CUDA generator draws other numbers than the CPU one for the same seed.
RANDOM = {"rand", "randn", "randint", "randperm", "normal"}
# Not the `*_like` factories: their template usually lives on the target device already, so the
# move is a no-op there (`torch.zeros_like(x).to(x.device)`), and nothing was built on the CPU.
# Casting to another dtype after creation gives the same values as creating in that dtype only
# where the values are exact (0 and 1); elsewhere (arange, linspace, random draws) it may differ.
EXACT_VALUES = {"zeros", "ones", "empty", "eye", "empty_strided"}

# Keywords of the factory that make moving it a deliberate choice: a CPU `generator=` draws
# reproducible numbers (and cannot serve a CUDA factory), `pin_memory=` makes a staging buffer.
FACTORY_BLOCKERS = {"device", "out", "pin_memory", "generator"}


def factory_name(call: ast.AST, ctx) -> str | None:
    """"zeros" for `torch.zeros(...)` in any import spelling; None for anything else."""
    if not isinstance(call, ast.Call):
        return None
    qual = ctx.qualname(call.func)
    if qual is None or not qual.startswith("torch.") or qual.count(".") != 1:
        return None
    name = qual[len("torch."):]
    if name not in DETERMINISTIC and name not in RANDOM:
        return None
    if name == "normal" and len(call.args) < 3 and keyword(call, "size") is None:
        return None  # normal(mean_tensor, std_tensor) has no `device=`: it follows its inputs
    if _empty(call, name):
        return None  # `torch.zeros((4, 0))`: no element to build or copy
    return name


# Factories whose positional arguments are the shape (`full`: its first argument only).
SHAPE_ARGUMENTS = {"zeros", "ones", "empty", "rand", "randn", "full"}


def _empty(call: ast.Call, name: str) -> bool:
    """A shape with a literal 0 in it: `torch.zeros((b, 0))`, `torch.empty(0, d)`, `size=(0,)`."""
    size = keyword(call, "size")
    if size is not None:
        dims = [size]
    elif name in SHAPE_ARGUMENTS:
        dims = call.args[:1] if name == "full" else call.args
    else:
        return False
    if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = dims[0].elts
    return any(isinstance(d, ast.Constant) and d.value == 0 and type(d.value) is int for d in dims)


# Functions of an expression computed from factories alone (a frequency table, an embedding's
# scales): elementwise maths and joins. `math.*` on numbers too.
EXPRESSION_FUNCTIONS = {"exp", "log", "sin", "cos", "sqrt", "rsqrt", "pow", "cat", "stack", "outer", "exp2", "log2",
                        "reciprocal", "neg", "abs", "sigmoid", "tanh", "floor", "ceil", "round", "meshgrid",
                        "tril", "triu", "diag", "flip", "cumsum", "clamp", "square", "log1p", "expm1", "erf"}
# Methods on such an expression (a cast, a change of shape) that keep it where it is.
EXPRESSION_METHODS = {"float", "double", "half", "bfloat16", "long", "int", "bool", "byte", "short", "unsqueeze",
                      "squeeze", "view", "reshape", "transpose", "permute", "contiguous", "exp", "log", "sin", "cos",
                      "sqrt", "pow", "neg", "abs", "reciprocal", "mul", "add", "sub", "div", "triu", "tril", "repeat",
                      "expand", "flatten", "outer", "type", "t", "fill_", "zero_", "clamp", "cumsum", "flip"}
# NumPy arrays drawn or filled on the host, and the torch factory that makes them on the device.
NUMPY_BUILDERS = {"numpy.random.normal": "randn", "numpy.random.randn": "randn", "numpy.random.standard_normal": "randn",
                  "numpy.random.rand": "rand", "numpy.random.random": "rand", "numpy.random.uniform": "rand",
                  "numpy.random.random_sample": "rand", "numpy.random.randint": "randint",
                  "numpy.ones": "ones", "numpy.zeros": "zeros", "numpy.full": "full"}
# Legacy constructors that copy host data to the GPU: `torch.cuda.FloatTensor(np_array)`.
CUDA_TENSOR_TYPES = {f"torch.cuda.{kind}Tensor" for kind in (
    "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Byte", "Bool", "Char")}


def _literal_int(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0


def _has_star(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)


def analyse_move(move: ast.Call, ctx) -> tuple[bool, bool, bool]:
    """For `<factory>.cuda(...)` / `.to(...)` / `.type_as(other)`: (is a move to a visible device,
    can be rewritten, carries a dtype). `.type_as(x)` takes `x`'s device and dtype: a copy to the
    device unless `x` is visibly in host memory (reported without a rewrite)."""
    method = move.func.attr
    if _has_star(move):
        return False, False, False
    if method == "type_as":
        return len(move.args) == 1 and not in_host_memory(move.args[0], ctx), False, True
    kwargs = {k.arg: k.value for k in move.keywords}
    if method == "cuda":
        if len(move.args) > 1 or set(kwargs) - {"device", "non_blocking", "memory_format"}:
            return False, False, False
        device = move.args[0] if move.args else kwargs.get("device")
        if "memory_format" in kwargs:
            return True, False, False
        # `.cuda()`, `.cuda(1)`, `.cuda("cuda:1")`; `.cuda(d)` may be given None or a rank: no rewrite
        fixable = device is None or _literal_int(device) or (
            isinstance(device, ast.Constant) and isinstance(device.value, str)
            and DEVICE_STRING.fullmatch(device.value) is not None and device.value.startswith("cuda"))
        return True, fixable, False
    # .to(device, dtype=None, non_blocking=False, copy=False, *, memory_format)
    if move.args:
        device = move.args[0]
        if "device" in kwargs:
            return False, False, False
    else:
        device = kwargs.get("device")
    if device is None or not (("device" in kwargs) or is_device(device, ctx)) or is_cpu_device(device, ctx):
        return False, False, False
    dtype = move.args[1] if len(move.args) > 1 else kwargs.get("dtype")
    fixable = len(move.args) <= 3 and not set(kwargs) - {"device", "dtype", "non_blocking"}
    return True, fixable, dtype is not None


def _in_pipeline_class(function: ast.AST, ctx) -> bool:
    """A method of an inference pipeline (`class FluxPipeline(DiffusionPipeline)`, modular
    pipeline blocks): set-up once per generation call, around a denoising loop elsewhere."""
    owner = ctx.owner_class(function)
    while owner is None and function is not None:
        function = ctx.enclosing_function(function)
        owner = ctx.owner_class(function) if function is not None else None
    if owner is None:
        return False
    names = [owner.name] + [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in owner.bases]
    return any(name.endswith("Pipeline") or "PipelineBlock" in name for name in names)


def _in_denoising_loop(node: ast.AST, function: ast.AST, ctx) -> bool:
    """Inside a loop over timesteps or one that steps a scheduler (`for t in timesteps:` ...
    `self.scheduler.step(...)`): per step of the generation, not its set-up."""
    current = ctx.parent(node)
    while current is not None and current is not function:
        if isinstance(current, STATEMENT_LOOPS):
            head = current.iter if isinstance(current, (ast.For, ast.AsyncFor)) else current.test
            names = [n.id if isinstance(n, ast.Name) else n.attr
                     for n in ast.walk(head) if isinstance(n, (ast.Name, ast.Attribute))]
            if any("timestep" in name for name in names):
                return True
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step"
                   for statement in current.body for n in ast.walk(statement)):
                return True
        current = ctx.parent(current)
    return False


def _registered(ctx) -> set[str]:
    """Names listed as values in a module-level dict literal (a registry of functions)."""
    key = "ptl201-registered"
    if key not in ctx.memo:
        names: set[str] = set()
        for statement in ctx.tree.body:
            value = getattr(statement, "value", None)
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(value, ast.Dict):
                names |= {v.id for v in value.values if isinstance(v, ast.Name)}
        ctx.memo[key] = names
    return ctx.memo[key]


def _runs_a_model_loop(function: ast.AST, ctx) -> bool:
    """The function holds a loop (not in a nested def) that runs a model every iteration."""
    return any(isinstance(node, STATEMENT_LOOPS) and runs_model(node, ctx)
               for node in body_nodes(function.body))


def _looks_up(index: ast.AST) -> bool:
    """An index that picks entries (`[t]`, `[timesteps]`, `[batch["t"]]`), not one that only adds
    dimensions or slices (`[None, :, None]`, `[0]`)."""
    return isinstance(index, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))


# Builders of a tensor from Python data: `torch.LongTensor(range(n))` is `torch.arange(n)` built on the host.
LEGACY_TYPES = {f"torch.{kind}Tensor" for kind in ("Long", "Int", "Float", "Double", "Short", "Half", "BFloat16",
                                                   "Byte", "Char", "Bool")} | {"torch.Tensor"}


def _python_number(node: ast.AST) -> bool:
    """A number worked out in Python: a numeric constant, or arithmetic of names, attributes and
    numbers (`i / self.n_T`, `1.0 - t`)."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Constant):
        return type(node.value) in (int, float)
    if not isinstance(node, ast.BinOp) or not isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)):
        return False
    return all(_python_number(leaf) or isinstance(leaf, (ast.Name, ast.Attribute)) for leaf in (node.left, node.right))


def _constant_list(node: ast.AST) -> bool:
    """`[0.0448, 0.2856, 0.3001]`, `(1, 2)`: a list or tuple of numbers written out (nested too)."""
    if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts:
        return False
    return all(_constant_list(e) if isinstance(e, (ast.List, ast.Tuple)) else
               isinstance(e.operand if isinstance(e, ast.UnaryOp) else e, ast.Constant) and _python_number(e)
               for e in node.elts)


def host_constant(node: ast.AST, ctx) -> ast.Call | None:
    """The constructor of a tensor of numbers written out, seen through views, casts and the
    legacy `Variable` wrapper: `Variable(torch.from_numpy(np.array([1, 0, 0, 1]).astype(np.float32)))
    .view(1, 4).repeat(b, 1)` (the identity a spatial transformer adds every forward),
    `torch.FloatTensor([0.5, 0.5])`. None for anything else."""
    while isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in EXPRESSION_METHODS:
            node = node.func.value
        elif ctx.qualname(node.func) == "torch.autograd.Variable" and len(node.args) == 1:
            node = node.args[0]
        else:
            break
    if not (isinstance(node, ast.Call) and len(node.args) == 1) or any(k.arg == "device" for k in node.keywords):
        return None
    qual, data = ctx.qualname(node.func), node.args[0]
    if qual == "torch.from_numpy":
        while isinstance(data, ast.Call) and isinstance(data.func, ast.Attribute) \
                and data.func.attr in ("astype", "flatten", "ravel", "reshape"):
            data = data.func.value
        if isinstance(data, ast.Call) and ctx.qualname(data.func) in ("numpy.eye", "numpy.identity"):
            return node  # `np.eye(self.k)`: the identity, the same numbers every call
        if isinstance(data, ast.Call) and ctx.qualname(data.func) in ("numpy.array", "numpy.asarray") and data.args:
            data = data.args[0]
        else:
            return None
    elif qual not in HOST_DATA_CONSTRUCTORS | LEGACY_TYPES:
        return None
    return node if _constant_list(data) else None


def _legacy_shape(call: ast.Call, ctx) -> bool:
    """`torch.Tensor(b, b)`, `torch.FloatTensor(3)`, `torch.LongTensor(x.size(0))`: a legacy
    constructor given a shape, which allocates uninitialised memory like `torch.empty` (not one
    given data: `torch.FloatTensor(array)`)."""
    if ctx.qualname(call.func) not in LEGACY_TYPES or call.keywords or _has_star(call) or not call.args:
        return False
    if _empty(call, "empty"):
        return False  # `torch.LongTensor(b, k, 0)`: no element to build or copy
    if len(call.args) >= 2:
        return all(not isinstance(a, (ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.Set)) for a in call.args)
    [arg] = call.args
    return _literal_int(arg) or isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) \
        and arg.func.attr == "size" and bool(arg.args)


def _python_range(node: ast.AST) -> ast.Call | None:
    """`range(...)`, or `list(range(...))`: the numbers `torch.arange` makes on the device."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "list" \
            and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" \
            and 1 <= len(node.args) <= 3 and not node.keywords and not _has_star(node):
        return node
    return None


def _repeated_list(node: ast.AST) -> tuple[ast.AST, ast.AST, int] | None:
    """`[x] * n`, `n * [x]`, `[[x]] * n`: one value repeated (not a literal list of values), as
    (the value, the count, how deep it sits in one-element lists); None for anything else."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    for side, count in ((node.left, node.right), (node.right, node.left)):
        if isinstance(count, (ast.List, ast.Tuple)):
            continue
        depth = 0
        while isinstance(side, ast.List) and len(side.elts) == 1:
            side, depth = side.elts[0], depth + 1
        if depth and not isinstance(side, (ast.Starred, ast.List, ast.Tuple, ast.ListComp, ast.Dict, ast.Set)):
            return side, count, depth
    return None


class MoveAfterCreate(Rule):
    code = "PTL201"
    needs_accelerator = True
    name = "move-after-create"
    message = "`{factory}(...)` builds the tensor on the CPU and then copies it: create it with `device=`"
    help = ("Create the tensor where it is used: pass `device=` to the factory (`torch.zeros(n, device=device)`) "
            "instead of `.to(device)` / `.cuda()` after it.")
    fixable = "sometimes"
    contexts = frozenset({PER_STEP, CALLED})  # a factory moved once at set-up costs nothing worth a change
    cold = False
    triggers = (".cuda(", ".to(", "device=")  # `torch.tensor([i] * n, device=device)`

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._random: dict[int, bool] = {}  # reported node -> the factory draws random numbers
        self._per_step_only: set[int] = set()  # repeated lists: reported where they visibly run per step

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if self.ctx.qualname(func) == "torch.tensor":
            self._repeated_list(node)
            return
        if len(node.args) == 1 and not node.keywords and self._is_cuda_tensor_type(func):
            self._numpy_copied(node, node.args[0])
            return
        if not isinstance(func, ast.Attribute) or func.attr not in ("cuda", "to", "type_as"):
            return
        factory = factory_name(func.value, self.ctx)
        if factory is None:
            if not self._moved_name(node):
                self._moved_expression(node)
            return
        self._random[id(node)] = factory in RANDOM
        inner = func.value
        if any(k.arg is None or k.arg in FACTORY_BLOCKERS for k in inner.keywords):
            return  # (`**kwargs` may hold `device=`; a shape spread in, `randn(n, *size)`, holds none)
        moves, fixable, has_dtype = analyse_move(node, self.ctx)
        if not moves:
            return
        fixable = fixable and not _has_star(inner)  # reported, not rewritten
        fix = None
        if fixable and has_dtype and keyword(inner, "dtype") is not None:
            fixable = False  # two dtypes: which one wins is for a person to decide
        if fixable:
            unsafe_reasons = []
            if factory in RANDOM:
                unsafe_reasons.append("the device's random generator draws other numbers")
            if has_dtype and factory not in EXACT_VALUES:
                unsafe_reasons.append("values computed in the new dtype may round differently")
            if keyword(inner, "requires_grad") is not None:
                unsafe_reasons.append("the result becomes a leaf tensor")
            edits = self._edits(node, inner)
            if edits is None:
                fix = None
            elif unsafe_reasons:
                fix = Fix(UNSAFE, f"Create it on the device with `device=` ({'; '.join(unsafe_reasons)})", edits)
            else:
                fix = Fix(SAFE, "Create it on the device with `device=`", edits)
        self.report(node, self.message.format(factory=f"torch.{factory}"), fix=fix)

    def _moved_expression(self, move: ast.Call) -> None:
        """Moves this rule reports without a fix: the value is not one factory's.

        - `torch.from_numpy(table).to(device)[t]`: a whole host array copied to the device to
          read a few entries of it (a schedule indexed by timesteps); the table belongs on the
          device, moved once at set-up.
        - `torch.exp(-math.log(p) * torch.arange(half) / half).to(device)`: an expression
          computed on the CPU from a factory, then copied; `device=` on the factory computes it
          where it is used.
        - `torch.tensor([i] * n).to(device)`: see `_repeated_list`."""
        inner = move.func.value
        if not analyse_move(move, self.ctx)[0]:
            return
        built = inner  # `torch.LongTensor(range(n)).unsqueeze(0).expand_as(x).to(device)`
        while isinstance(built, ast.Call) and isinstance(built.func, ast.Attribute) \
                and built.func.attr in EXPRESSION_METHODS | {"expand_as"}:
            built = built.func.value
        if isinstance(built, ast.Call) and len(built.args) == 1 and not built.keywords \
                and self.ctx.qualname(built.func) in HOST_DATA_CONSTRUCTORS | LEGACY_TYPES \
                and _python_range(built.args[0]):
            self._report_range(move, built)
            return
        constant = host_constant(inner, self.ctx)
        if constant is not None:
            self._report_constants(move, constant)
            return
        if isinstance(inner, ast.Call) and self.ctx.qualname(inner.func) in HOST_DATA_CONSTRUCTORS \
                and len(inner.args) == 1 and not _has_star(inner) and not any(k.arg == "device" for k in inner.keywords):
            if self._numpy_copied(move, inner.args[0]):
                return
            if self.ctx.qualname(inner.func) == "torch.tensor" and _repeated_list(inner.args[0]):
                self._report_repeated(move, inner.args[0])
                return
            if _python_number(inner.args[0]) or self._range_index(inner.args[0]):
                self._per_step_only.add(id(move))
                self.report(move, f"`{self.ctx.qualname(inner.func)}(<number>)` makes a tensor on the host and copies "
                                  "it to the device (a blocking copy) on every call: fill it there",
                            help="Make it on the device: `torch.full(shape, value, device=device)` (or "
                                 "`torch.tensor(value, device=device)`), or pass the Python number itself where the "
                                 "operation takes one.")
                return
            parent = self.ctx.parent(move)
            if isinstance(parent, ast.Subscript) and parent.value is move and _looks_up(parent.slice) \
                    and isinstance(inner.args[0], (ast.Name, ast.Attribute, ast.Subscript)):
                name = self.ctx.qualname(inner.func)
                self.report(move, f"`{name}(...)` copies the whole table to the device on every call to read a "
                                  "few entries of it: move it to the device once, at set-up",
                            end_node=parent,
                            help="Keep the table on the device: move it once at set-up (`register_buffer`, or "
                                 "`torch.as_tensor(table, device=device)` kept on `self`) and index it there.")
            return
        factories = self._factories_in(inner)
        if factories and factories[0] == "Tensor":  # a legacy constructor takes no `device=`
            self.report(move, "`torch.Tensor(...)` allocates on the CPU and this expression is computed there, then "
                              "copied: create it on the device and drop the move",
                        help="Replace the legacy constructor with `torch.empty(shape, device=device)` (or "
                             "`torch.full(shape, value, device=device)` for `.fill_(value)`) and drop the "
                             "`.to(device)` / `.cuda()` after it.")
        elif factories:
            self._random[id(move)] = any(f in RANDOM for f in factories)
            self.report(move, f"`torch.{factories[0]}(...)` is built on the CPU and this expression computed there, "
                              "then copied: create it with `device=` and drop the move",
                        help="Pass `device=` to the factory inside the expression (`torch.arange(n, device=device)`) "
                             "and drop the `.to(device)` / `.cuda()` after it: the whole expression then runs on the "
                             "device.")

    def _range_index(self, node: ast.AST) -> bool:
        """`i` of a loop around it over a range (`for i in reversed(range(T)):`, also through
        `tqdm`, `enumerate`'s count): a Python int, one a sampling loop turns into a tensor
        every step (`torch.as_tensor(i).to(device)`)."""
        if not isinstance(node, ast.Name):
            return False
        for loop in self.ctx.loops:
            if not isinstance(loop, (ast.For, ast.AsyncFor)):
                continue
            source, target = loop.iter, loop.target
            while isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.args \
                    and source.func.id in ("tqdm", "reversed", "enumerate", "list"):
                if source.func.id == "enumerate":  # the count is the first name of the target
                    if isinstance(target, ast.Tuple) and target.elts and isinstance(target.elts[0], ast.Name) \
                            and target.elts[0].id == node.id:
                        return True
                    target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else None
                source = source.args[0]
            if isinstance(target, ast.Name) and target.id == node.id and isinstance(source, ast.Call) \
                    and isinstance(source.func, ast.Name) and source.func.id == "range":
                return True
        return False

    def _moved_name(self, move: ast.Call) -> bool:
        """`targets = torch.ones(shape) * -1` ... `targets = targets.cuda()`: a name the function
        binds once, to a factory or an expression of factories, moved before anything else reads
        it, in the same loop iteration. Reported at the move, without a fix (two statements)."""
        name = move.func.value
        if not isinstance(name, ast.Name) or not analyse_move(move, self.ctx)[0]:
            return False
        values = [v for v in self.ctx.assignments(name.id) if v is not move]  # (`x = x.cuda()` may be bound first)
        if len(values) != 1 or not isinstance(values[0], ast.Call | ast.BinOp | ast.UnaryOp | ast.Subscript):
            return False
        value = values[0]
        constant = host_constant(value, self.ctx)
        if constant is not None and self._moved_before_read(name, value, move):
            self._report_constants(move, constant, value.lineno)
            return True
        factory = factory_name(value, self.ctx)
        factories = [factory] if factory is not None else self._factories_in(value)
        if not factories or factories[0] == "Tensor" or factory is not None and any(
                k.arg is None or k.arg in FACTORY_BLOCKERS for k in value.keywords):
            return False
        filled = self._filled(name, value, move)
        if filled is None:
            return False
        self._random[id(move)] = any(f in RANDOM for f in factories)
        built = f"built on the CPU (line {value.lineno}), filled there," if filled else \
            f"built on the CPU (line {value.lineno}) and"
        self.report(move, f"`torch.{factories[0]}(...)` is {built} copied here: "
                          "create it on the device with `device=` and drop the move",
                    help="Pass `device=` to the factory where the tensor is built and drop the `.to(device)` / "
                         "`.cuda()` here: it is then made where it is used.")
        return True

    def _filled(self, name: ast.Name, value: ast.AST, move: ast.Call) -> bool | None:
        """False: `value`, bound to `name`, is moved before anything reads it; True: only filled
        first, by statements beside its own that store a number or a device tensor into it
        (`x_pad[:, :, :n] = x` of a model's output: a copy to the host and back; `attr[:, 0] = 4`),
        which the device does as well; None otherwise (host data written into it, element by
        element in a loop: built on the host on purpose, then copied once)."""
        if self._moved_before_read(name, value, move):
            return False
        loop = self.ctx.loops[-1] if self.ctx.loops else None
        if loop is not None and not any(n is value for n in ast.walk(loop)):
            return None  # built once before the loop, moved each iteration: PTL105's
        statement, holder = value, self.ctx.parent(value)
        while holder is not None and not isinstance(statement, ast.stmt):
            statement, holder = holder, self.ctx.parent(holder)
        found = block_of(statement, holder)
        if found is None:
            return None
        block, index = found
        fills = 0
        for later in block[index + 1:]:
            if any(n is move for n in ast.walk(later)):
                return True if fills and self._moved_before_read(name, later, move) else None
            if not (isinstance(later, ast.Assign) and len(later.targets) == 1
                    and isinstance(later.targets[0], ast.Subscript) and isinstance(later.targets[0].value, ast.Name)
                    and later.targets[0].value.id == name.id and self._fill_value(later.value)):
                return None
            if any(isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(later.value)) \
                    or any(isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(later.targets[0].slice)):
                return None
            fills += 1
        return None

    def _fill_value(self, value: ast.AST) -> bool:
        """A number, or visibly a tensor not in host memory (a model's output), also a name
        rebound from itself by tensor ops (`x = x.transpose(-1, -2)` just above)."""
        if isinstance(value, ast.UnaryOp):
            value = value.operand
        if isinstance(value, ast.Constant):
            return type(value.value) in (int, float, bool)
        if in_host_memory(value, self.ctx):
            return False
        if tensor_kind(value, self.ctx) == STRONG:
            return True
        bound = [v for v in self.ctx.assignments(value.id) if v.lineno < value.lineno] \
            if isinstance(value, ast.Name) else []
        return bool(bound) and tensor_kind(bound[-1], self.ctx, {value.id: STRONG}) == STRONG

    def _moved_before_read(self, name: ast.Name, value: ast.AST, move: ast.Call) -> bool:
        """`value`, bound to `name`, is moved by `move` in the same loop iteration before anything
        else reads it."""
        loop = self.ctx.loops[-1] if self.ctx.loops else None
        scope = self.ctx.function or self.ctx.tree
        if loop is not None and not any(n is value for n in ast.walk(loop)):
            return False  # built once before the loop, moved each iteration: PTL105's
        start, end = (value.end_lineno, value.end_col_offset), (move.lineno, move.col_offset)
        return not any(isinstance(n, ast.Name) and n.id == name.id and isinstance(n.ctx, ast.Load) and n is not name
                       and start < (n.lineno, n.col_offset) < end for n in ast.walk(scope))  # filled on purpose

    def _report_constants(self, move: ast.Call, built: ast.Call, line: int | None = None) -> None:
        """`torch.tensor([0.0448, 0.2856]).to(device)`, `torch.FloatTensor([...]).cuda()` in code
        that runs every step: the same numbers copied from the host each time (a blocking copy),
        where one copy at set-up would do. Per step only, and without a fix (where to keep the
        tensor is the module's choice)."""
        self._per_step_only.add(id(move))
        name = self.ctx.qualname(built.func)
        built_at = f" (line {line})" if line is not None and line != move.lineno else ""
        what = "<NumPy constants>" if name == "torch.from_numpy" else "[...]"
        self.report(move, f"`{name}({what})`{built_at} copies the same constants from the host to the device (a "
                          "blocking copy) on every call: make it once and keep it on the device",
                    help="Build it once at set-up and keep it on the device (`self.register_buffer(\"weights\", "
                         "torch.tensor([...]))` moves with the module), or create it there with `device=`.")

    def _numpy_copied(self, node: ast.Call, data: ast.AST) -> bool:
        """`torch.from_numpy(np.random.normal(0, 1, shape)).to(device)`, `Tensor(np.ones(shape))`
        with `Tensor = torch.cuda.FloatTensor`: drawn or filled by NumPy on the host (in float64),
        then copied to the device. Reported without a fix: the device's generator draws other
        numbers."""
        if not (isinstance(data, ast.Call) and isinstance(data.func, (ast.Name, ast.Attribute))):
            return False
        builder = self.ctx.qualname(data.func)
        factory = NUMPY_BUILDERS.get(builder or "")
        if factory is None or _has_star(data):
            return False
        self._random[id(node)] = factory.startswith("rand")
        name = "np." + builder.partition(".")[2]
        self.report(node, f"`{name}(...)` is made on the host by NumPy and copied to the device: create it there "
                          f"with `torch.{factory}(..., device=...)`",
                    help=f"Create the tensor on the device (`torch.{factory}(shape, device=device)`), not with NumPy "
                         "on the host and a copy after it; the device's generator draws other numbers than NumPy's.")
        return True

    def _is_cuda_tensor_type(self, func: ast.AST) -> bool:
        """`torch.cuda.FloatTensor`, or a name every assignment of which may be one (`Tensor =
        torch.cuda.FloatTensor if cuda else torch.FloatTensor`)."""
        if self.ctx.qualname(func) in CUDA_TENSOR_TYPES:
            return True
        if not isinstance(func, ast.Name):
            return False
        values = self.ctx.assignments(func.id) or self.ctx.assignments(func.id, self.ctx.tree)
        return bool(values) and all(
            any(self.ctx.qualname(part) in CUDA_TENSOR_TYPES for part in (
                (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,)))
            for value in values)

    def _factories_in(self, expression: ast.AST) -> list[str]:
        """The torch factories an expression is computed from, when it is made of nothing else:
        arithmetic, elementwise torch functions and casts over factories without `device=`,
        numbers and names that are not visibly tensors (`half`, `max_period`). Empty for
        anything else (a tensor in the expression, a move inside it, a call of the project)."""
        if not isinstance(expression, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript)) \
                or factory_name(expression, self.ctx) is not None:
            return []
        found: list[str] = []
        pending = [expression]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.Call):
                factory = factory_name(node, self.ctx) or ("Tensor" if _legacy_shape(node, self.ctx) else None)
                if factory is not None:
                    if _has_star(node) or any(k.arg in FACTORY_BLOCKERS for k in node.keywords):
                        return []
                    found.append(factory)
                    continue
                qualname = self.ctx.qualname(node.func) or ""
                head, _, function = qualname.rpartition(".")
                method = node.func.attr if isinstance(node.func, ast.Attribute) and not qualname else None
                if not (head in ("torch", "math") and (function in EXPRESSION_FUNCTIONS or head == "math")
                        or method in EXPRESSION_METHODS) or _has_star(node):
                    return []
                pending += [*node.args, *(k.value for k in node.keywords)]
                if method is not None:
                    pending.append(node.func.value)
            elif isinstance(node, ast.BinOp):
                pending += [node.left, node.right]
            elif isinstance(node, ast.UnaryOp):
                pending.append(node.operand)
            elif isinstance(node, ast.Subscript):  # `freqs[None]`, `[:, None]`
                pending.append(node.value)
            elif isinstance(node, (ast.List, ast.Tuple)):
                if any(isinstance(e, (ast.Name, ast.Attribute, ast.Subscript)) for e in node.elts):
                    return []  # `torch.cat([sigmas, torch.zeros(1)])`: a tensor joined in
                pending += node.elts
            elif isinstance(node, (ast.Name, ast.Attribute)):
                if tensor_kind(node, self.ctx) != NONE:
                    return []
            elif not isinstance(node, ast.Constant):
                return []
        return found

    def _repeated_list(self, call: ast.Call) -> None:
        """`torch.tensor([i] * n, device=device)`: a Python list built and copied to the device on
        every call, where `torch.full((n,), i, device=device)` fills the tensor there; and
        `torch.tensor(range(n), device=device)`, which `torch.arange` makes there."""
        if len(call.args) != 1 or _has_star(call):
            return
        repeated, numbers = _repeated_list(call.args[0]), _python_range(call.args[0])
        if not repeated and not numbers:
            return
        device = keyword(call, "device")
        if device is None or is_cpu_device(device, self.ctx) \
                or not (is_device(device, self.ctx) or isinstance(device, (ast.Name, ast.Attribute))):
            return
        if numbers:
            self._report_range(call, call)
        else:
            self._report_repeated(call, call.args[0])

    def _report_range(self, move: ast.Call, built: ast.Call) -> None:
        """`torch.LongTensor(range(n)).to(device)`: a Python range turned into a host tensor and
        copied, on every call, where `torch.arange(n, device=...)` makes it on the device."""
        numbers = _python_range(built.args[0])
        bounds = ", ".join(self.ctx.edits.text(a) for a in numbers.args)
        arange = f"torch.arange({bounds}, device=...)"
        self._per_step_only.add(id(move))
        self.report(move, f"`{self.ctx.edits.text(built.func)}(range(...))` builds the numbers on the host and copies "
                          f"them to the device on every call: `{arange}` makes them there",
                    help=f"Make the numbers on the device: `{arange}` (with `dtype=` where the type matters), "
                         "instead of a Python range turned into a host tensor and copied.")

    def _report_repeated(self, node: ast.Call, data: ast.BinOp) -> None:
        element, count, depth = _repeated_list(data)
        if isinstance(element, ast.Name) and any(
                isinstance(v, (ast.List, ast.Tuple, ast.ListComp)) or isinstance(v, ast.Subscript)
                and isinstance(v.slice, ast.Slice) for v in self.ctx.assignments(element.id)):
            return  # `[tokens] * n` of a list: rows, not one value
        edits = self.ctx.edits
        shape = ", ".join([edits.text(count)] + ["1"] * (depth - 1)) + ("," if depth == 1 else "")
        fill = f"torch.full(({shape}), {edits.text(element)}, device=...)"
        self._per_step_only.add(id(node))
        self.report(node, f"`torch.tensor([...] * n)` builds a Python list and copies it to the device (a "
                          f"blocking copy from pageable memory) on every call: `{fill}` fills it there",
                    help=f"Fill the tensor on the device: `{fill}` (with `dtype=` where the list's type "
                         "matters; `x.expand(n)` where the value is already a tensor), instead of a repeated Python "
                         "list.")

    def keep(self, node: ast.AST, where) -> bool:
        """Not the set-up before a loop that runs the model (a pipeline's `__call__` preparing its
        denoising loop, `encode_prompt` called once before it): once per call of something far
        costlier. A `forward` is per step, set-up of its layer loop included. A repeated list
        (`torch.tensor([i] * n, device=d)`) counts per step only: in library code whose callers
        the file does not show it is mostly a generation call's set-up (language ids, a
        batch's first tokens), once per call."""
        if id(node) in self._per_step_only and (where.context != PER_STEP or where.loop is not None and not (
                runs_model(where.loop, self.ctx) or iterable_is_data(where.loop))):
            return False  # also not a loop over a few kinds of thing (`for kind in ["GT", "FP"]`)
        if where.function is not None and _in_pipeline_class(where.function, self.ctx) \
                and not _in_denoising_loop(node, where.function, self.ctx):
            return False  # an inference pipeline's set-up: once per generation call
        if where.context != CALLED or where.function is None:
            return True
        if self._random.get(id(node)):
            return False  # library code: a CPU draw moved on purpose (seeded noise), an inference pipeline
        model = self.ctx.model
        sites = model.callers(where.function)
        if not sites and where.function.name in _registered(self.ctx):
            return False  # `ROPE_INIT_FUNCTIONS = {"linear": _compute_linear, ...}`: an init registry
        if where.loop is not None:
            return True
        if _runs_a_model_loop(where.function, self.ctx):
            return False
        return not sites or not all(
            model.where(site).loop is None and model.where(site).function is not None
            and _runs_a_model_loop(model.where(site).function, self.ctx) for site in sites)

    def _edits(self, move: ast.Call, factory: ast.Call) -> tuple | None:
        """`torch.zeros(n).to(d, dtype)` -> `torch.zeros(n, dtype=dtype, device=d)`; `.cuda(1)` ->
        `device="cuda:1"`. `non_blocking=` goes: the factory fills the tensor where it lives."""
        edits = self.ctx.edits
        if edits.has_comment_after(factory, move):
            return None  # a comment inside `.to(...)` would be lost
        kwargs = {k.arg: k.value for k in move.keywords}
        device = move.args[0] if move.args else kwargs.get("device")
        dtype = None
        if move.func.attr == "cuda":
            if device is None:
                spelled_device = '"cuda"'
            elif isinstance(device, ast.Constant) and type(device.value) is int:
                spelled_device = f'"cuda:{device.value}"'
            elif isinstance(device, ast.Constant) and isinstance(device.value, str):
                spelled_device = edits.argument(device)
            else:
                return None
        else:
            if device is None:
                return None
            spelled_device = edits.argument(device)
            dtype = move.args[1] if len(move.args) > 1 else kwargs.get("dtype")
        arguments = ([f"dtype={edits.argument(dtype)}"] if dtype is not None else []) + [f"device={spelled_device}"]
        return (edits.replace(move, edits.call_with_keywords(factory, arguments)),)

    docs = """
## What it does
Finds a tensor made by a torch factory (`zeros`, `ones`, `empty`, `full`, `arange`,
`linspace`, `logspace`, `eye`, the window functions, `rand`, `randn`, `randint`, `randperm`,
`normal` with a size) and immediately moved with `.cuda()` or `.to(device)`.

Also, reported without a fix, other ways of building on the host what the device needs on every
call:
- an expression computed on the CPU from a factory, then moved: a causal mask
  (`torch.tril(torch.ones(n, n)).to(device)`), a timestep embedding's
  `torch.exp(-math.log(max_period) * torch.arange(0, half) / half).to(device=t.device)`, ViLT's
  `torch.stack(torch.meshgrid(torch.arange(h), torch.arange(w))).to(device)`, a reshaped or cast
  factory (`torch.arange(n).view(-1, 1).to(device)`) (arithmetic, elementwise torch functions,
  reshapes and casts over factories, numbers and names that are not visibly tensors); the
  remedy is `device=` on the factory, and no move;
- a whole host table copied to the device to read a few entries of it:
  `torch.from_numpy(schedule).to(device)[t]` (also `torch.tensor` / `torch.as_tensor` of a
  name); the remedy is to move the table once, at set-up;
- a repeated Python list copied to the device: `torch.tensor([i] * n, device=device)` (or
  followed by `.to(device)`), a blocking copy from pageable memory where `torch.full((n,), i,
  device=device)` (or `t.expand(n)` of a tensor `t`) fills it on the device. This one is
  reported where it visibly runs per step (a loop that runs a model or walks data, `forward`,
  a helper per-step code calls), not in code whose callers the file does not show (a
  generation call's set-up: once per call);
- a Python number made into a tensor and copied, `torch.tensor(i / n_T).to(device)`, which
  `torch.full(shape, value, device=device)` makes on the device; per step only;
- a factory (or an expression of factories) bound to a name and moved in a later statement
  before anything reads it, in the same loop iteration: `zeros = torch.zeros(mean.size())`
  ... `zeros = zeros.cuda()`, `noise = torch.randn(shape) * 0.1` ... `noise.to(device)`; also
  one only filled in between, by the statements right after it, with numbers or with device
  tensors (`attr = torch.zeros(n, 2); attr[:, 0] = 4; attr = attr.to(dev)`; `pad =
  torch.zeros(b, c, t); pad[:, :, :x.shape[-1]] = x` of a model's output, a copy to the host
  and back, then `pad.to(x.device)`); not a tensor filled from host data or element by element
  in a loop (`ids[i] = vocab[tok]`: built on the host on purpose), read in between, a name bound
  more than once, or one built before the loop that moves it (PTL105);
- the same constants copied from the host on every call, `torch.tensor([0.0448, 0.2856]).to(device)`
  or a legacy type (`torch.FloatTensor([...]).cuda()`): `.to(device)` of host memory without
  `non_blocking=True` waits for the device's queue before it copies, so each call is a sync as
  well as a copy; the remedy is to make the tensor once, at set-up (a buffer), and keep it on
  the device; per step only;
- a legacy constructor given a shape (`torch.Tensor(b, b).fill_(v).to(device)`,
  `torch.FloatTensor(n, d).zero_().cuda()`), memory allocated and filled on the CPU, which
  `torch.full((b, b), v, device=device)` or `torch.zeros(n, d, device=device)` makes on the
  device (a legacy constructor takes no `device=`, so no fix);
- a Python range turned into a tensor and copied, `torch.LongTensor(range(b)).to(device)` (any
  legacy type, `torch.tensor(list(range(n)), device=device)`), which `torch.arange(b,
  device=device)` makes on the device; reported where it runs per step, as repeated lists are;
- an array NumPy draws or fills on the host (`np.random.normal`, `np.random.randint`,
  `np.ones`, ...) turned into a device tensor: `torch.from_numpy(np.random.rand(n)).to(device)`,
  `torch.cuda.FloatTensor(np.random.normal(0, 1, shape))`, also through a name every assignment
  of which may be a CUDA tensor type (`Tensor = torch.cuda.FloatTensor if cuda else
  torch.FloatTensor`, then `Tensor(np.ones(shape))`); the remedy is the torch factory with
  `device=` (no fix: the device's generator draws other numbers).

## Why is this bad?
The factory builds the tensor in host memory, then the move allocates it again on the device
and copies it over: a host allocation, a fill on the CPU and a host-to-device transfer that
`device=` avoids entirely (the tensor is filled by a kernel where it lives). For
`torch.tensor(data)` the data start on the host anyway; `device=` still saves the intermediate
CPU tensor's round trip through Python and states where the tensor belongs.

Only a visible device counts: a string such as `"cuda:1"`, `torch.device(...)`, a name or
attribute called `device` / `dev` / `*_device` (`self.device`, `x.device`), or `device=`.
Not reported: `.to(torch.float16)`, `.to(other_tensor)`, `.cuda()` on an existing tensor,
`model.to(device)`, `torch.from_numpy(a).cuda()` (the data comes from NumPy: a batch is copied
every step, as it must be) unless the moved array is then indexed to read a few entries,
`torch.as_tensor(MEAN).to(device)[None, :, None, None]` (indexing that only adds dimensions),
`torch.tensor(data)` of data the code computes (it copies the data from the host whatever
`device=` says: a pageable host-to-device copy either way, 30 µs against 30 µs for a scalar on
an H100, so there is nothing to gain) unless it is one value repeated or constants written out, `torch.tensor([row] * n)` of a list (rows,
not one value), a factory followed only by casts or reshapes before the move
(`torch.zeros(3).float().to(device)`, `torch.arange(n).view(-1, 1).to(device)`), an
expression that also holds a tensor (`torch.cat([sigmas, torch.zeros(1)]).to(device)`: it is
moved for that tensor), a move to the CPU,
the set-up before a loop that runs the model in a function whose callers the file does not show
(a pipeline's `__call__`, or a helper such as `encode_prompt` that only such set-up calls: once
per call of something far costlier), functions listed in a module-level registry dict and called
from nowhere in the file (`ROPE_INIT_FUNCTIONS = {...}`: model initialisation), set-up by name
(`load_*`, `*_init_*`, `switch_to_deploy`, `reparameterize`, `fuse_*`, `export_*`), methods of
inference pipelines (a class named or derived from `*Pipeline`) outside their denoising loop (a
loop over `timesteps` or one that calls a scheduler's `.step`), random draws in code whose
callers the file does not show (library code draws on the CPU on purpose, for noise that is the
same on every device), a factory that
already has `device=`, `pin_memory=` or `generator=` (numbers drawn from a CPU generator on
purpose, for reproducibility), and the `*_like` factories (their template usually
lives on the target device already, so the move does nothing).

## Where it reports
- **Reports** in code that runs every step (a training loop, `forward`, a step hook and the
  helpers they call), and in a function whose callers the file does not show (a helper that
  builds inputs or masks: it may run every step).
- **Silent** in once-code (module top level, `__init__`, set-up that only `main()` calls: one
  copy at start-up costs nothing worth a change), once per epoch or every N steps, error paths
  (an `except` body, a branch that raises, or only warns or logs), and test code; also in a
  generation's set-up: before a loop that feeds a model's output back into it with gradients
  off (`h = torch.zeros(b, n).cuda()` before a vocoder's loop over its samples), which runs once
  per generation however often it is called.

## Example
```python
import torch


def make_inputs(n, device):
    ids = torch.arange(n).to(device)
    mask = torch.ones(n, n).cuda().tril().bool()
    return ids, mask
```

## Use instead
```python
import torch


def make_inputs(n, device):
    ids = torch.arange(n, device=device)
    mask = torch.ones(n, n, device="cuda").tril().bool()
    return ids, mask
```

## Fix safety
The fix moves the device (and a dtype given to `.to`) into the factory and drops
`non_blocking=`. It is safe for deterministic factories. It is unsafe for random ones
(`rand`, `randn`, `randint`, `randperm`, `normal`): the device's generator draws
other numbers than the CPU's for the same seed. It is also unsafe when a dtype moves into a
factory whose values may round differently when computed in that dtype (`arange`, `linspace`,
`full`, `tensor`; `torch.full((2,), 1e30).to(dev, torch.float16)` gives inf where
`torch.full((2,), 1e30, dtype=torch.float16)` raises), and when the factory has `requires_grad=`
(the result becomes a leaf).
`.cuda(d)` with a non-literal `d`, a factory that already has a dtype while `.to` gives another,
and `.to(..., copy=True)` / `memory_format=` are reported without a fix. So are the expressions,
tables and repeated lists above: computing an expression on the device rounds differently
(`exp` on a GPU is not the CPU's), a table belongs in set-up code the fix cannot see, and
`torch.full` infers its dtype from the value where `torch.tensor([])` of an empty repetition
gives float32.

## References
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device
"""

    bad_examples = [
        # `.type_as(x)` takes x's device as well as its dtype: a random draw copied every step
        """
import torch

def rand_segments(x, lengths, segment_size):
    len_diff = lengths - segment_size
    return (torch.rand([x.shape[0]]).type_as(x) * (len_diff + 1)).long()  # expect: PTL201

for x, lengths in loader:
    rand_segments(x.cuda(), lengths.cuda(), 32)
""",
        # the same cache rebuilt on every forward
        """
import torch

class Rotary(torch.nn.Module):
    def _build_cache(self, n, device):
        self.cached = n
        self.cos = torch.arange(n).float().cos().to(device)  # expect: PTL201

    def forward(self, x):
        n = x.shape[1]
        self._build_cache(n, x.device)
        return x * self.cos[:n]
""",
        # the same helper without the cache: every forward builds and copies the table
        """
import torch

def relative_positions(q, k, device):
    return (torch.arange(q)[:, None] - torch.arange(k)[None, :]).to(device)  # expect: PTL201

class Attention(torch.nn.Module):
    def forward(self, x):
        n = x.size(1)
        return x + relative_positions(n, n, x.device)
""",
        # the same script sampling a thousand times
        """
import torch

if __name__ == "__main__":
    generator = torch.load("g.pt").cuda()
    n_samples = 1000
    for i in range(n_samples):
        z = torch.randn(1, 512).cuda()  # expect: PTL201
        torch.save(generator(z), f"sample{i}.pt")
""",
        # built on the CPU, filled with a constant or a model's output, then copied, every forward
        """
import torch
import torch.nn as nn

class GINConv(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.mlp = nn.Linear(dim, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True)

    def forward(self, x, edge_attr, width):
        self_loop_attr = torch.zeros(x.size(0), 2)
        self_loop_attr[:, 0] = 4
        self_loop_attr = self_loop_attr.to(edge_attr.device)  # expect: PTL201
        h = self.mlp(x)
        padded = torch.zeros([h.shape[0], width])
        padded[:, :h.shape[1]] = h
        h = padded.to(h.device)  # expect: PTL201
        return torch.cat([edge_attr, self_loop_attr]), h

class Encoder(nn.Module):
    def forward(self, z, width):
        z = z.transpose(-1, -2)
        z_pad = torch.zeros([z.shape[0], z.shape[1], width])
        z_pad[:, :, :z.shape[-1]] = z
        return z_pad.to(z.device)  # expect: PTL201
""",
        # a sampling loop's timestep made a tensor on the host every step
        """
import torch
from tqdm import tqdm

@torch.no_grad()
def sample(model, scheduler, xt, steps, device):
    for i in tqdm(reversed(range(steps))):
        noise_pred = model(xt, torch.as_tensor(i).to(device))  # expect: PTL201
        xt = scheduler.step(xt, noise_pred, i)
    for n, x in enumerate(range(steps)):
        xt = model(xt, torch.tensor(n).cuda())  # expect: PTL201
        xt = model(xt, torch.tensor(x).cuda())  # expect: PTL201
    return xt
""",
        # the identity a spatial transformer adds every forward, built from NumPy constants (also
        # through the legacy `Variable`, a view and a repeat) and moved when the input is on the GPU
        """
import numpy as np
import torch
import numpy
from torch import nn
from torch.autograd import Variable

class STN(nn.Module):
    def __init__(self, k=64):
        super().__init__()
        self.k = k
        self.fc = nn.Linear(256, k * k)

    def forward(self, x):
        batchsize = x.size(0)
        x = self.fc(x)
        iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(batchsize, 1)
        if x.is_cuda:
            iden = iden.cuda()  # expect: PTL201
        eye = torch.from_numpy(numpy.eye(self.k).flatten().astype(numpy.float32)).view(1, -1).cuda()  # expect: PTL201
        weights = Variable(torch.FloatTensor([0.5, 2.0])).cuda()  # expect: PTL201
        return x + iden + eye, weights
""",
        # the same sampling in a loop of many iterations (or a count the script is given)
        """
import torch

@torch.no_grad()
def style_mixing(generator, n_source, device):
    source_code = torch.randn(n_source, 512).to(device)  # expect: PTL201
    return generator(source_code)

if __name__ == "__main__":
    generator = torch.load("g.pt").cuda()
    for j in range(1000):
        style_mixing(generator, 5, "cuda")
""",
        # a step function a framework calls every batch, or a loop of the script calls
        """
import torch
from ignite.engine import Engine

def update(engine, batch):
    noise = torch.randn(4, 8).cuda()  # expect: PTL201
    model(batch.cuda() + noise).mean().backward()

def step(batch):
    noise = torch.randn(4, 8).cuda()  # expect: PTL201
    model(batch.cuda() + noise).mean().backward()

def train_G():
    z = torch.randn(64, 100, 1, 1).to(device)  # expect: PTL201
    G_loss = g_loss_fn(D(G(z)))
    G_loss.backward()

def check(batch):
    noise = torch.randn(4, 8).cuda()  # expect: PTL201
    model(batch.cuda() + noise).mean().backward()

def run_all(loader):
    check(next(iter(loader)))

trainer = Engine(update)
if __name__ == "__main__":
    for it, batch in enumerate(loader):
        step(batch)
        if it % n_d == 0:
            train_G()
""",
        # an attack's start, per evaluation batch under `no_grad`: its loop takes gradients again,
        # it is no generation
        """
import torch

def perturb(net, x_nat, steps, step_size):
    x = x_nat.detach() + 0.001 * torch.randn(x_nat.shape).cuda()  # expect: PTL201
    for _ in range(steps):
        x.requires_grad_()
        with torch.enable_grad():
            loss = net(x).mean()
        grad = torch.autograd.grad(loss, [x])[0]
        x = x.detach() + step_size * torch.sign(grad)
    return x

def evaluate(net, loader):
    with torch.no_grad():
        for x, y in loader:
            x_adv = perturb(net, x.cuda(), 10, 0.01)
            print((net(x_adv).argmax(1) == y.cuda()).float().mean())
""",
        # a training forward that loops over time steps: its buffer is built every step
        """
import torch
from torch import nn

class Seq2Seq(nn.Module):
    def forward(self, src, trg):
        trg_len, batch_size = trg.shape
        outputs = torch.zeros(trg_len, batch_size, self.vocab).to(self.device)  # expect: PTL201
        hidden = self.encoder(src)
        for t in range(1, trg_len):
            output, hidden = self.decoder(trg[t - 1], hidden)
            outputs[t] = output
        return outputs
""",
        # the same nested helper, called every step, and one returned to the caller
        """
import torch

def main_function(decoder, loader, opt):
    def noise(n):
        return torch.randn(n, 8).cuda()  # expect: PTL201

    for x in loader:
        decoder(x.cuda() + noise(x.shape[0])).mean().backward()
        opt.step()

def make_sampler(n):
    def sample():
        return torch.ones(n).cuda()  # expect: PTL201
    return sample

def dispatch(kind, n):
    def zeros():
        return torch.zeros(n).cuda()  # expect: PTL201
    return locals()[kind]()
""",
        # a helper object built in every forward: its `__init__` runs every step
        """
import torch
from torch import nn

class CausalMask:
    def __init__(self, b, n, device="cpu"):
        self.mask = torch.triu(torch.ones(b, 1, n, n, dtype=torch.bool), diagonal=1).to(device)  # expect: PTL201

class Attention(nn.Module):
    def forward(self, q, k):
        mask = CausalMask(q.shape[0], q.shape[1], device=q.device)
        return (q @ k.transpose(-2, -1)).masked_fill(mask.mask, -1e9)
""",
        # a Python number made into a tensor and copied, every step of a denoising loop
        """
import torch

def sample(model, x, n_T, device):
    for i in range(n_T, 0, -1):
        t = torch.tensor(i / n_T).to(device).repeat(x.shape[0], 1)  # expect: PTL201
        x = model(x, t)
    return x
""",
        # a shape spread into the factory: a denoising loop's noise, every step
        """
import torch

def sample(model, n, size, steps, device):
    x = torch.randn(n, *size, device=device)
    for i in range(steps, 0, -1):
        z = torch.randn(n, *size).to(device) if i > 1 else 0  # expect: PTL201
        x = model(x, i) + z
    return x
""",
        # a Python range made into a host tensor and copied, in a forward and in a training loop
        """
import torch
from torch import nn

class StyleEncoder(nn.Module):
    def forward(self, x, y):
        h = self.shared(x)
        idx = torch.LongTensor(range(y.size(0))).to(y.device)  # expect: PTL201
        ranks = torch.LongTensor(range(h.size(1))).unsqueeze(0).expand_as(h).to(h.device)  # expect: PTL201
        return h[idx, y] * (ranks < 3)

def train(model, loader, opt, device):
    for x, y in loader:
        ids = torch.tensor(list(range(x.size(0))), device=device)  # expect: PTL201
        model(x.to(device), ids).sum().backward()
        opt.step()
""",
        # the same comprehension where it repeats: in a training loop, and in a helper
        """
import torch

def noise(n, device):
    return [torch.randn(4).to(device) for _ in range(n)]  # expect: PTL201

for batch in loader:
    extra = [torch.zeros(8).cuda() for _ in range(4)]  # expect: PTL201
    loss = model(batch, extra, noise(2, "cuda")).sum()
    loss.backward()
""",
        # a factory cast or reshaped on the CPU before the move: built and copied all the same
        """
import torch

def contrast_mask(features, device):
    n = features.shape[0]
    index = torch.arange(n).view(-1, 1).to(device)  # expect: PTL201
    keep = ~torch.eye(n).bool().to(device)  # expect: PTL201
    weights = torch.ones(n).float().cuda()  # expect: PTL201
    return torch.scatter(torch.ones(n, n, device=device), 1, index, 0) * weights * keep
""",
        # NumPy noise and targets copied to the GPU every step (an old GAN script's spelling)
        """
import numpy as np
import torch

cuda = torch.cuda.is_available()
Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor

for i, (imgs, _) in enumerate(dataloader):
    z = Tensor(np.random.normal(0, 1, (imgs.shape[0], 100)))  # expect: PTL201
    valid = Tensor(np.ones((imgs.size(0), 1)))  # expect: PTL201
    labels = torch.from_numpy(np.random.randint(0, 10, imgs.shape[0])).cuda()  # expect: PTL201
    loss = criterion(discriminator(generator(z), labels), valid)
    loss.backward()
    optimizer.step()
""",
        # an inference pipeline's denoising loop runs per step
        """
import torch
from diffusers import DiffusionPipeline

class ImagePipeline(DiffusionPipeline):
    def __call__(self, latents, device):
        for t in self.progress_bar(self.scheduler.timesteps):
            guidance = torch.full((1,), 7.5).to(device)  # expect: PTL201
            latents = self.unet(latents, t, guidance)
        while self.remaining:
            noise = torch.zeros(latents.shape).to(device)  # expect: PTL201
            latents = self.scheduler.step(self.unet(latents + noise), latents)
        return latents
""",
        """
import torch

def positions(n, device):
    return torch.arange(n).to(device)  # expect: PTL201
""",
        """
import torch as T
from torch import randn as rnd

class Noise(T.nn.Module):
    def forward(self, b, d):
        a = T.zeros(b, d).cuda()  # expect: PTL201
        b = rnd(b, d).to(self.device, non_blocking=True)  # expect: PTL201
        c = T.eye(d).to("cuda:1")  # expect: PTL201
        e = T.full((b,), 0.5).to(device=d)  # expect: PTL201
        return a, b, c, e
""",
        """
import torch

def make(x):
    dev = torch.device("cuda")
    device = dev
    m = torch.ones(3, 3).to(x.device)  # expect: PTL201
    return torch.arange(3).cuda(1), m.to(dev)  # expect: PTL201
""",
        """
from torch import linspace

def grid(steps):
    d = "cuda"
    return linspace(0, 1, steps).to(d, non_blocking=True)  # expect: PTL201
""",
    ]

    good_examples = [
        # `.type_as` only changing the dtype: the factory is on the device already, or the other
        # tensor is in host memory
        """
import torch

def positions(x, inv_freq):
    t = torch.arange(x.shape[1], device=x.device).type_as(inv_freq)
    counts = torch.zeros(3).type_as(torch.ones(3))
    return t, counts

inv_freq = torch.ones(4, device="cuda")
for x in loader:
    positions(x.cuda(), inv_freq)
""",
        # a cache grown on demand by a method of the class: built the first time, and again only
        # for a longer sequence
        """
import torch

class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.cached = 0

    def _build_cache(self, n, device):
        self.cached = n
        self.cos = torch.arange(n).float().cos().to(device)

    def forward(self, x):
        n = x.shape[1]
        if n > self.cached:
            self._build_cache(n, x.device)
        return x * self.cos[:n]
""",
        # a sampling script: ten samples, a count it names once, in code that runs once
        """
import torch

if __name__ == "__main__":
    generator = torch.load("g.pt").cuda()
    n_samples = 10
    for i in range(n_samples):
        z = torch.randn(1, 512).cuda()
        torch.save(generator(z), f"sample{i}.pt")
""",
        # a cached helper: its body runs once for each new sequence length, not every forward
        """
import torch
from functools import lru_cache

@lru_cache(maxsize=128)
def relative_positions(q, k, device):
    return (torch.arange(q)[:, None] - torch.arange(k)[None, :]).to(device)

class Attention(torch.nn.Module):
    def forward(self, x):
        n = x.size(1)
        return x + relative_positions(n, n, x.device)
""",
        # a mask built on the host from host data (lengths, NumPy, element by element), then copied
        # once: the device would do the same writes as many small kernels
        """
import numpy as np
import torch
import torch.nn as nn

class Tagger(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, lengths, weights):
        mask = torch.zeros(len(lengths), x.shape[1])
        for i, n in enumerate(lengths):
            mask[i, :n] = 1
        mask = mask.to(x.device)
        table = torch.zeros(3, 4)
        table[0] = torch.from_numpy(np.asarray(weights))
        table = table.to(x.device)
        scale = torch.ones(2)
        scale[0] = weights[0]
        scale = scale.to(x.device)
        return self.proj(x) * mask, table, scale

def run(model, steps, device):
    start = torch.zeros(1, 16)
    start[0, 0] = 1
    for step in range(steps):
        out = model(start.to(device))
    if steps:
        first = torch.zeros(4)
        first[0] = 1
    first = first.to(device)
    return out, first
""",
        # values a loader or a list gives, not a range's index
        """
import torch

def run(model, loader, scales, device):
    for x in loader:
        model(torch.tensor(x).to(device))
    for i, scale in enumerate(scales):
        model(torch.as_tensor(scale).to(device))
""",
        # NumPy data (not constants) copied once per call; the identity built once, at set-up
        """
import numpy as np
import torch
from torch import nn

class STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.iden = torch.from_numpy(np.array([1, 0, 0, 1]).astype(np.float32)).cuda()

    def forward(self, x, points):
        batch = torch.from_numpy(np.asarray(points).astype(np.float32))
        batch = batch.cuda()
        return x + self.iden + batch
""",
        # a sampling script: a constant loop of twenty samples in code that runs once
        """
import torch

@torch.no_grad()
def style_mixing(generator, n_source, device):
    source_code = torch.randn(n_source, 512).to(device)
    return generator(source_code)

if __name__ == "__main__":
    generator = torch.load("g.pt").cuda()
    for j in range(20):
        style_mixing(generator, 5, "cuda")
""",
        # a legacy constructor of an empty shape (a beam search's sequences before the first token)
        """
import torch

def beam_search(logprobs, beam_size, steps):
    for t in range(steps):
        device = logprobs.device
        seq = torch.LongTensor(logprobs.shape[0], beam_size, 0).to(device)
        seq_logprobs = torch.FloatTensor(logprobs.shape[0], beam_size, 0, 100).to(device)
        logprobs = logprobs + seq.numel() + seq_logprobs.numel()
    return logprobs
""",
        # a self-test that backpropagates once, run by the script's `__main__` block
        """
import torch

def example_dconv(layer):
    x = torch.randn(2, 4, 8, 8).cuda()
    x.requires_grad = True
    layer(x).mean().backward()

def check_gradients(layer):
    x = torch.randn(2, 4, 8, 8).cuda()
    layer(x).mean().backward()

def main():
    check_gradients(torch.nn.Conv2d(4, 4, 3).cuda())

if __name__ == "__main__":
    example_dconv(torch.nn.Conv2d(4, 4, 3).cuda())
    main()
""",
        # a generation's set-up with gradients off, before its loop over thousands of samples: once
        # per generation, however often `generate` is called
        """
import torch
from torch import nn

class Vocoder(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(hidden + 1, hidden)

    def generate(self, mels):
        with torch.no_grad():
            mels = mels.cuda()
            b_size, seq_len, _ = mels.size()
            if torch.cuda.is_available():
                h = torch.zeros(b_size, self.hidden).cuda()
                x = torch.zeros(b_size, 1).cuda()
            output = []
            for i in range(seq_len):
                x, h = self.cell(torch.cat([x, mels[:, i]], dim=1), h)
                output.append(x)
        return torch.stack(output)
""",
        # the same helper built once, at set-up
        """
import torch
from torch import nn

class CausalMask:
    def __init__(self, b, n, device="cpu"):
        self.mask = torch.triu(torch.ones(b, 1, n, n, dtype=torch.bool), diagonal=1).to(device)

class Attention(nn.Module):
    def __init__(self, b, n):
        super().__init__()
        self.causal = CausalMask(b, n, device="cuda")

    def forward(self, q, k):
        return (q @ k.transpose(-2, -1)).masked_fill(self.causal.mask, -1e9)
""",
        # an empty tensor (a dimension of literal 0): nothing is built or copied
        """
import torch

def sample(model, n, device):
    for _ in range(n):
        start = torch.zeros((4, 0)).long().to("cuda")
        none = torch.empty(0, 8).to(device)
        sized = torch.randn(size=(0,)).cuda()
        model(start, none, sized)
""",
        # a helper nested in the training function that the function never calls
        """
import torch

def main_function(decoder, loader, opt):
    def empirical_stat(latent_vecs, indices):
        lat_mat = torch.zeros(0).cuda()
        for ind in indices:
            lat_mat = torch.cat([lat_mat, latent_vecs[ind]], 0)
        return torch.mean(lat_mat, 0)

    for x in loader:
        decoder(x.cuda()).mean().backward()
        opt.step()
""",
        # a tensor filled on the host before its move, one built once before the loop (PTL105's),
        # and a name bound twice
        """
import torch

def encode(tokens, vocab, device):
    ids = torch.zeros(len(tokens), dtype=torch.long)
    for i, tok in enumerate(tokens):
        ids[i] = vocab[tok]
    ids = ids.to(device)
    return ids

def run(model, loader, device, big):
    mask = torch.ones(8, 8)
    for x in loader:
        model(x.to(device), mask.to(device)).sum().backward()
        pad = torch.zeros(4)
        if big:
            pad = torch.zeros(8)
        model(pad.to(device))
"""
,
        # constants made once at set-up, a legacy constructor given data (not a shape), and
        # constants copied in a loop that runs no model (results shown once)
        """
import torch
from torch import nn

class Loss(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.levels = torch.FloatTensor([0.0448, 0.2856, 0.3001]).to(device)
        self.mask = torch.tril(torch.ones(8, 8)).to(device)

    def forward(self, x, table):
        rows = torch.FloatTensor(table).to(x.device)
        return (x * self.levels.sum() * self.mask.sum() * rows.sum()).mean()

def report(results, device):
    for name, value in results.items():
        print(name, torch.tensor([value, 1.0]).to(device))
""",
        # a number made into a tensor and moved once, at set-up; a value that is no Python number
        """
import torch
from torch import nn

class Scaled(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.scale = torch.tensor(1.0 / 255).to(device)

    def forward(self, x, mean):
        return (x - torch.tensor(mean).to(x.device)) * self.scale
""",
        # a range kept on the host, made on the device, moved once at set-up; a literal list
        """
import torch
from torch import nn

class Picker(nn.Module):
    def __init__(self, n, device):
        super().__init__()
        self.order = torch.LongTensor(range(n)).to(device)

    def forward(self, x):
        host_ids = torch.LongTensor(range(x.size(0)))
        ids = torch.arange(x.size(0), device=x.device)
        weights = torch.tensor(self.table).to(x.device)
        return x[ids] * weights, host_ids
""",
        # a list of inputs built once, in a script's set-up (a comprehension over no data)
        """
import torch

device = torch.device("cuda")
model = load().to(device)
dummy_inputs = [(torch.randn(1, 3, 640, 640).to(device),) for _ in range(100)]
optimized = optimize(model, dummy_inputs)
""",
        # fixed noise drawn once; host data of another kind; a CPU tensor type; no move
        """
import numpy as np
import torch
from torch import FloatTensor

fixed_z = torch.cuda.FloatTensor(np.random.normal(0, 1, (64, 100)))
for i, (imgs, _) in enumerate(dataloader):
    targets = torch.cuda.FloatTensor(batch_targets(imgs))
    z = FloatTensor(np.random.normal(0, 1, (imgs.shape[0], 100)))
    weights = torch.from_numpy(np.ones(10))
    loss = criterion(model(imgs, z, weights), targets)
    loss.backward()
""",
        # a batch from NumPy moved every step (it must be), a table indexed only to add
        # dimensions, a list of rows repeated, literal data, an expression that holds a tensor
        """
import numpy as np
import torch

MEAN = [0.485, 0.456, 0.406]

def train(model, loader, opt, device, sigmas):
    for step, batch in enumerate(loader):
        x = torch.from_numpy(batch).to(device)[None]
        mean = torch.as_tensor(MEAN).to(device)[None, :, None, None]
        prefix = [1, 2, 3]
        prompt = torch.tensor([prefix] * 4, device=device)
        fixed = torch.tensor([1, 2, 3], device=device)
        table = torch.cat([sigmas, torch.zeros(1)]).to(device)
        loss = model((x - mean) / 2, prompt, fixed, table).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        # a repeated list where it does not run per step: a loop over a few kinds, a generation
        # call's set-up, once-code; an expression over a tensor; a list kept on the host
        """
import torch

def plot(matches, img):
    for i, kind in enumerate(["GT", "FP", "TP", "FN"]):
        conf = torch.tensor([1.0] * len(matches[kind]), device=img.device)

def generate(model, lang_id, batch_size, device):
    ids = torch.tensor([[lang_id]] * batch_size, device=device)
    return model.generate(ids)

def embed(x, t, device):
    feats = torch.relu(x)
    return (feats * torch.ones(3)).to(device), torch.tensor([t] * 3, device="cpu")

def main(n, device):
    first = torch.tensor([0] * n, device=device)
    scales = (torch.arange(n) * 2.0).to(device)
    return first, scales

if __name__ == "__main__":
    main(8, "cuda")
""",
        # dtype conversions, moves of existing tensors and modules
        """
import torch

def f(x, model, device, other):
    a = torch.zeros(3).to(torch.float16)
    b = torch.ones(3).to(other)
    c = x.cuda()
    model.to(device)
    d = torch.zeros_like(x).to(x.device)
    return a, b, c, d
""",
        # data from NumPy; a factory that already names its device or pins its memory
        """
import numpy as np
import torch

def f(a, device):
    t = torch.from_numpy(a).cuda()
    u = torch.zeros(3, device="cpu").to(device)
    staging = torch.empty(1024, pin_memory=True).cuda(non_blocking=True)
    g = torch.Generator().manual_seed(0)
    repeatable = torch.randn(4, generator=g).to(device)
    return t, u, staging, repeatable
""",
        # not torch's factory: a local `zeros`, NumPy, and a chained call
        """
import numpy as np
import torch

def zeros(n):
    return torch.zeros(n)

def f(device):
    a = zeros(3).to(device)
    b = np.zeros(3).to(device)
    return a, b
""",
        # data copied from the host either way (`torch.tensor`), and a move to the host
        """
import torch

def f(values, device):
    a = torch.tensor(values).to(device)
    b = torch.tensor([1.0, 2.0]).cuda()
    c = torch.zeros(3).to("cpu")
    d = torch.ones(3).to(torch.device("cpu"))
    return a, b, c, d
""",
        # set-up before a loop that runs the model, once per call of something far costlier
        """
import torch

class Pipeline:
    def encode_prompt(self, prompt, device):
        return self.text_encoder(prompt), torch.zeros(1, 77).to(device)

    def __call__(self, prompt, steps, device):
        embeds, mask = self.encode_prompt(prompt, device)
        latents = torch.randn(1, 4, 64, 64).to(device)
        for t in range(steps):
            latents = self.unet(latents, t, embeds)
        return latents
""",
        # an inference pipeline's set-up: once per generation call, loops over encoders included
        """
import torch
from diffusers import DiffusionPipeline

class AudioPipeline(DiffusionPipeline):
    def encode_prompt(self, prompts, device):
        masks = []
        for encoder in self.text_encoders:
            embeds = encoder(prompts)
            masks.append(torch.ones(len(prompts), 77).to(device))
        return embeds, masks
""",
        # normal with tensor mean/std follows its inputs' device; `.to` of something not a device
        """
import torch

def f(mean, std, kind, cfg):
    a = torch.normal(mean, std).cuda()
    b = torch.tensor([1.0]).to(kind)
    c = torch.tensor([1.0]).to(**cfg)
    return a, b, c
""",
        # a name that says device but is bound to a tensor: `.to` copies its dtype and device
        """
import torch

def cdf(values, reference):
    device = reference
    return torch.tensor([0.0]).to(device), torch.tensor([1.0]).to(device)
""",
    ]

    unfixable_examples = [
        # helpers the training loop calls every step: a schedule copied whole to read a few
        # entries, an embedding's frequencies computed on the CPU, a repeated list
        """
import math
import torch

def extract(schedule, t, shape):
    out = torch.from_numpy(schedule).to(device=t.device)[t].float()  # expect: PTL201
    return out.reshape(-1, *([1] * (len(shape) - 1)))

def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half).to(device=t.device)  # expect: PTL201
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

def sample_t(i, n, device):
    return torch.tensor([i] * n, device=device)  # expect: PTL201

def train(model, loader, betas, opt, device):
    for step, x in enumerate(loader):
        x = x.to(device)
        t = sample_t(step % 1000, x.shape[0], device)
        noise = torch.randn_like(x)
        xt = extract(betas, t, x.shape) * x + noise
        loss = (model(xt, timestep_embedding(t, 128)) - noise).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        # other spellings: imported functions, `torch as T`, `.cuda()`, a table on `self`, a
        # grid of positions, a nested repetition in a denoising loop
        """
import torch as T
from torch import arange, as_tensor, from_numpy, meshgrid, stack, tensor

class Embed(T.nn.Module):
    def forward(self, x, t, device):
        scale = as_tensor(self.alphas).cuda()[t]  # expect: PTL201
        grid = stack(meshgrid(arange(x.shape[-2]), arange(x.shape[-1]), indexing="ij"), dim=-1).to(device=x.device)  # expect: PTL201
        inv = (1.0 / (10000 ** (T.arange(0, 64, 2).float() / 64))).cuda()  # expect: PTL201
        return x * scale + grid.sum() + inv.sum()

def denoise(unet, latents, timesteps, device):
    for t in timesteps:
        t_in = tensor([t] * latents.shape[0]).to(device)  # expect: PTL201
        ids = T.tensor([[t]] * 2, device=device)  # expect: PTL201
        latents = unet(latents, t_in, ids)
    return latents
""",
        # every forward: a causal mask from a factory through `tril` and a cast, a legacy
        # constructor's buffer filled on the CPU, constant weights copied from the host
        """
import torch
from torch import nn

class Decoder(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        n, b = x.shape[1], x.shape[0]
        mask = torch.tril(torch.ones(n, n)).type(torch.ByteTensor).to(self.device)  # expect: PTL201
        weights = torch.Tensor(b, b).fill_(1 / (b - 1)).to(x.device)  # expect: PTL201
        levels = torch.FloatTensor([0.0448, 0.2856, 0.3001]).to(x.device)  # expect: PTL201
        scale = torch.tensor([[0.1, 0.1], [0.2, 0.2]]).cuda()  # expect: PTL201
        seen = torch.LongTensor(x.size(0)).zero_().cuda()  # expect: PTL201
        return self.proj(x) * mask.sum() * weights.sum() * levels.sum() * scale.sum() + seen.sum()

def train(model, loader, opt):
    for x in loader:
        model(x.cuda()).mean().backward()
        opt.step()
""",
        # built in one statement and moved in the next, every forward: no fix (two statements)
        """
import torch
from torch import nn

class DiagGaussian(nn.Module):
    def forward(self, x):
        mean = self.fc_mean(x)
        zeros = torch.zeros(mean.size())
        if x.is_cuda:
            zeros = zeros.cuda()  # expect: PTL201
        noise = torch.randn(mean.shape) * 0.1
        noise = noise.to(x.device)  # expect: PTL201
        return mean + self.logstd(zeros) + noise
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def make_inputs(n, device):
    ids = torch.arange(n).to(device, non_blocking=True)
    mask = torch.ones(n, n).cuda()
    one = torch.eye(n).cuda(1)
    half = torch.zeros(n).to(device, torch.float16)
    return ids, mask, one, half
""",
            after="""
import torch

def make_inputs(n, device):
    ids = torch.arange(n, device=device)
    mask = torch.ones(n, n, device="cuda")
    one = torch.eye(n, device="cuda:1")
    half = torch.zeros(n, dtype=torch.float16, device=device)
    return ids, mask, one, half
""",
        ),
        FixExample(
            before="""
import torch

def train(model, loader, d, device):
    for x in loader:
        x = x + torch.randn(x.shape[0], d).to(device=device)
        model(x).sum().backward()
""",
            after="""
import torch

def train(model, loader, d, device):
    for x in loader:
        x = x + torch.randn(x.shape[0], d, device=device)
        model(x).sum().backward()
""",
            unsafe=True,
        ),
        FixExample(  # every deterministic factory: the same tensor created in place
            before="""
import torch

def make(device="cpu"):
    for _ in range(2):
        a = torch.zeros(3, 4).to(device)
        b = torch.ones(2, 2).to(device=device, non_blocking=True)
        c = torch.arange(10).to(device)
        d = torch.linspace(0, 1, 7).to(device)
        e = torch.full((2, 3), 0.25).to(device)
        f = torch.eye(4).to(device, torch.float16)
        g = torch.ones(2, 3).to(device, dtype=torch.bfloat16)
        h = torch.zeros(5).to(device=device, dtype=torch.int32)
        i = torch.logspace(0, 2, 5).to(device)
        j = torch.hann_window(8).to(device)
        k = torch.tril_indices(4, 4).to(device)
    return a, b, c, d, e, f, g, h, i, j, k
""",
            after="""
import torch

def make(device="cpu"):
    for _ in range(2):
        a = torch.zeros(3, 4, device=device)
        b = torch.ones(2, 2, device=device)
        c = torch.arange(10, device=device)
        d = torch.linspace(0, 1, 7, device=device)
        e = torch.full((2, 3), 0.25, device=device)
        f = torch.eye(4, dtype=torch.float16, device=device)
        g = torch.ones(2, 3, dtype=torch.bfloat16, device=device)
        h = torch.zeros(5, dtype=torch.int32, device=device)
        i = torch.logspace(0, 2, 5, device=device)
        j = torch.hann_window(8, device=device)
        k = torch.tril_indices(4, 4, device=device)
    return a, b, c, d, e, f, g, h, i, j, k
""",
            inputs=(
                # on the CPU, where a real program passes "cuda": both draw from the same generator, so
                # even the random factories agree; the moved tensor and the created one are the same
                FixInput("created on the CPU", "made = make()\nresult = (made, [t.requires_grad for t in made])\n"),
            ),
        ),
        FixExample(  # the random factories, and what else may not give the same tensor on a device
            before="""
import torch
from torch import randn as rnd

def make(device="cpu"):
    for _ in range(2):
        a = torch.randn(4, 5).to(device)
        b = torch.rand(3).to(device=device)
        c = torch.randint(0, 10, (6,)).to(device)
        d = torch.randperm(9).to(device)
        e = torch.normal(0.0, 1.0, size=(4,)).to(device)
        f = rnd(2, 3).to(device, non_blocking=True)
        g = torch.zeros(3, requires_grad=True).to(device)
        h = torch.arange(0, 1, 0.25).to(device, torch.float64)
    return a, b, c, d, e, f, g, h
""",
            after="""
import torch
from torch import randn as rnd

def make(device="cpu"):
    for _ in range(2):
        a = torch.randn(4, 5, device=device)
        b = torch.rand(3, device=device)
        c = torch.randint(0, 10, (6,), device=device)
        d = torch.randperm(9, device=device)
        e = torch.normal(0.0, 1.0, size=(4,), device=device)
        f = rnd(2, 3, device=device)
        g = torch.zeros(3, requires_grad=True, device=device)
        h = torch.arange(0, 1, 0.25, dtype=torch.float64, device=device)
    return a, b, c, d, e, f, g, h
""",
            unsafe=True,
            inputs=(
                # on the CPU, where a real program passes "cuda": both draw from the same generator, so
                # even the random factories agree; the moved tensor and the created one are the same
                FixInput("created on the CPU", "made = make()\nresult = (made, [t.requires_grad for t in made])\n"),
            ),
        ),
        FixExample(  # a dtype moved into a value-computing factory: float16 cannot hold 1e30
            before="""
import torch

def make(device="cpu"):
    for _ in range(2):
        out = torch.full((2,), 1e30).to(device, torch.float16)
    return out
""",
            after="""
import torch

def make(device="cpu"):
    for _ in range(2):
        out = torch.full((2,), 1e30, dtype=torch.float16, device=device)
    return out
""",
            unsafe=True,
            inputs=(
                # casting gives inf, creating in float16 raises: why the fix is unsafe
                FixInput("a value past float16", "result = make()",
                         check="torch.isinf(before).all() and after_error == 'RuntimeError'"),
            ),
        ),
        FixExample(  # computing in half precision is not computing in float32 and casting
            before="""
import torch

def make(device="cpu"):
    for _ in range(2):
        out = torch.arange(0, 300, 0.7).to(device, torch.float16)
    return out
""",
            after="""
import torch

def make(device="cpu"):
    for _ in range(2):
        out = torch.arange(0, 300, 0.7, dtype=torch.float16, device=device)
    return out
""",
            unsafe=True,
            inputs=(
                FixInput("steps that round in float16", "result = make()",
                         check="before.shape != after.shape or not torch.equal(before, after)"),
            ),
        ),
    ]
