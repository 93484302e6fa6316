"""Shared recognisers for the numerics rules PTL301-PTL308: `exp`, `log`, `sum`, `softmax`,
`sigmoid` in every spelling; what a local name holds where it is read (`reaching_values`); what a
callee was built from (`nn.CrossEntropyLoss()` in a local, on `self`, inline); loss calls and
their input. Not a rule module."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, NamedTuple

from ptlint.engine.rule import FixInput, Rule
from ptlint.semantics.nodes import (
    FUNCTION_DEFS,
    argument,
    body_nodes,
    keyword,
    parameter_names,
)

if TYPE_CHECKING:
    from ptlint.engine.file_context import FileContext

SOFTMAX_FUNCTIONS = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
# Methods that bound their argument from above (or make it non-positive): exp cannot overflow.
BOUNDING_METHODS = {"clamp", "clip", "clamp_max", "sub", "neg", "log_softmax", "logsigmoid", "sigmoid", "tanh"}


class Call(NamedTuple):
    """A recognised call: `operand` is the tensor it works on; `method` when spelt `x.f(...)`."""

    node: ast.Call
    operand: ast.expr
    method: bool


def torch_call(ctx: "FileContext", node: ast.AST, functions: set[str], method: str,
               method_args: bool) -> Call | None:
    """`torch.f(x, ...)` (any import spelling of one of `functions`) or `x.f(...)`.

    A method call only counts when its head is not an imported name (`np.exp` is NumPy's), and,
    unless `method_args`, when it has no arguments (`x.exp()`, `x.log()`)."""
    if not isinstance(node, ast.Call):
        return None
    qualname = ctx.qualname(node.func)
    if qualname in functions:
        if not node.args or isinstance(node.args[0], ast.Starred):
            return None
        return Call(node, node.args[0], False)
    if qualname is None and isinstance(node.func, ast.Attribute) and node.func.attr == method:
        if not method_args and (node.args or node.keywords):
            return None
        return Call(node, node.func.value, True)
    return None


def exp_call(ctx, node) -> Call | None:
    call = torch_call(ctx, node, {"torch.exp"}, "exp", False)
    if call and not call.method and (len(call.node.args) != 1 or call.node.keywords):
        return None  # torch.exp(x, out=...)
    return call


def log_call(ctx, node) -> Call | None:
    call = torch_call(ctx, node, {"torch.log"}, "log", False)
    if call and not call.method and (len(call.node.args) != 1 or call.node.keywords):
        return None
    return call


class SumCall(NamedTuple):
    """A `sum` call (a Call with its `dim` and `keepdim` arguments)."""

    node: ast.Call
    operand: ast.expr
    method: bool
    dim: ast.expr | None
    keepdim: ast.expr | None


def sum_call(ctx, node) -> SumCall | None:
    call = torch_call(ctx, node, {"torch.sum"}, "sum", True)
    if call is None:
        return None
    offset = 0 if call.method else 1  # positions of dim / keepdim after the tensor
    dim = argument(call.node, offset, "dim")
    if dim is None:
        dim = keyword(call.node, "axis")
    keepdim = argument(call.node, offset + 1, "keepdim")
    return SumCall(call.node, call.operand, call.method, dim, keepdim)


def softmax_call(ctx, node) -> Call | None:
    """`F.softmax(x, d)`, `torch.softmax(x, d)`, `x.softmax(d)`. The method spelling needs a
    dim-like argument, so that `self.softmax(x)` (an `nn.Softmax` module, unknown here) is not
    mistaken for a method of `self`."""
    call = torch_call(ctx, node, SOFTMAX_FUNCTIONS, "softmax", True)
    if call is None or not call.method:
        return call
    dim = argument(call.node, 0, "dim")
    if dim is None or len(call.node.args) > 2 or not looks_like_dim(dim):
        return None
    return call


def looks_like_dim(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return "dim" in name.lower() or "axis" in name.lower()


def one_hop(ctx, node: ast.AST) -> ast.AST | None:
    """The value of a local name assigned exactly once so far in the current function."""
    if isinstance(node, ast.Name):
        values = ctx.assignments(node.id)
        if len(values) == 1 and isinstance(values[0], ast.expr):
            return values[0]
    return None


def resolve(ctx, node: ast.AST, recogniser, names: set[str]) -> tuple[Call | None, bool]:
    """The call `recogniser` finds at `node`, or in the one value of the local name `node`
    (added to `names`); and whether it was found directly (a fix may rewrite only a direct form)."""
    call = recogniser(ctx, node)
    if call is not None:
        return call, True
    value = one_hop(ctx, node)
    if value is not None:
        call = recogniser(ctx, value)
        if call is not None:
            names.add(node.id)
        return call, False
    return None, False


class NumericsRule(Rule):
    """A rule of the numerics family: a wrong formula is wrong in test code too."""

    reports_in_tests = True


class DeferredRule(NumericsRule):
    """A rule whose findings through local names wait for the end of the file: the traversal
    knows only the assignments made so far, and a name reassigned later in the function (in a
    loop, say) may reach the use with another value. Reported only when every name it went
    through is assigned exactly once in its whole scope."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._pending: list[tuple] = []

    def defer(self, node: ast.AST, names: set[str], **kwargs) -> None:
        if not names:
            self.report(node, **kwargs)
        else:
            self._pending.append((node, self.ctx.function, names, kwargs))

    def end_file(self) -> None:
        for node, scope, names, kwargs in self._pending:
            if all(len([v for v in self.ctx.assignments(name, scope) if not reshaped_in_place(v, name)]) == 1
                   for name in names):
                self.report(node, **kwargs)


# Methods that keep a tensor's values as they are: `p.view(-1, 1)`, `p.detach()`.
KEEPS_VALUES = {"reshape", "view", "squeeze", "unsqueeze", "flatten", "contiguous", "detach"}


def reshaped_in_place(value: ast.AST, name: str) -> bool:
    """`p = p.view(-1, 1)`: the name keeps the values it had."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in KEEPS_VALUES \
        and isinstance(value.func.value, ast.Name) and value.func.value.id == name


def _bounded(node: ast.AST) -> bool:
    """`x - m`, `-x`, `-d / t`, `x.clamp(max=...)`: a stabilised or non-positive exponent."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Sub):
            return True
        if isinstance(node.op, (ast.Mult, ast.Div)):
            return _bounded(node.left) or _bounded(node.right)
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value < 0
    if isinstance(node, ast.Call):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else \
            node.func.id if isinstance(node.func, ast.Name) else ""
        return name in BOUNDING_METHODS or name.startswith(("log_softmax", "logsigmoid"))
    return False


def stabilised(ctx, exponent: ast.AST) -> bool:
    """True when the exponent is visibly shifted or bounded, directly or in the assignments of
    the local name it is (`z = x - x.amax(-1, keepdim=True)` / `x -= x.max()`)."""
    if _bounded(exponent):
        return True
    if isinstance(exponent, ast.Name):
        for value in ctx.assignments(exponent.id):
            if isinstance(value, ast.AugAssign):
                if isinstance(value.op, ast.Sub):
                    return True
            elif _bounded(value):
                return True
    return False


INTEGER_FACTORIES = {"torch.arange", "torch.randint", "torch.randperm", "torch.tensor", "torch.as_tensor"}


def visibly_integer(ctx, node: ast.AST) -> bool:
    """`torch.arange(5)`, `torch.tensor([1, 2])`, `x.long()`: `exp` promotes an integer tensor to
    float, `softmax` refuses it, so a rewrite there would raise."""
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("long", "int", "short", "byte"):
        return True
    if ctx.qualname(node.func) not in INTEGER_FACTORIES or keyword(node, "dtype") is not None:
        return False
    return not any(isinstance(n, ast.Constant) and isinstance(n.value, float) for n in ast.walk(node))


def same(a: ast.AST, b: ast.AST) -> bool:
    return ast.dump(a) == ast.dump(b)


def int_literal(node: ast.AST | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_one(node: ast.AST | None) -> bool:
    """The literal `1` or `1.0` (not `True`)."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 1


ROUNDING = {"floor", "ceil", "round", "trunc", "long", "int", "short", "byte"}


def integer_valued(ctx, node: ast.AST) -> bool:
    """`torch.floor(t)`, `t.round()`, `t.long()`, `torch.arange(n)`, `len(x)`, an integer literal:
    a value with no fraction, where `log(1 + x)` and `exp(x) - 1` lose nothing to rounding."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if visibly_integer(ctx, node):
        return True
    if isinstance(node, ast.Call):
        qualname = ctx.qualname(node.func) or ""
        if qualname.startswith("torch.") and qualname.rsplit(".", 1)[1] in ROUNDING:
            return True
        if qualname == "" and isinstance(node.func, ast.Attribute) and node.func.attr in ROUNDING:
            return True
        return isinstance(node.func, ast.Name) and node.func.id == "len"
    return False


def log1p_call(ctx, node) -> Call | None:
    call = torch_call(ctx, node, {"torch.log1p", "torch.special.log1p"}, "log1p", False)
    if call and not call.method and (len(call.node.args) != 1 or call.node.keywords):
        return None
    return call


SIGMOID_FUNCTIONS = {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit"}


def sigmoid_call(ctx, node) -> Call | None:
    """`torch.sigmoid(x)`, `F.sigmoid(x)`, `torch.special.expit(x)`, `x.sigmoid()`."""
    call = torch_call(ctx, node, SIGMOID_FUNCTIONS, "sigmoid", False)
    if call and not call.method and (len(call.node.args) != 1 or call.node.keywords):
        return None
    return call


# -- what a local name holds where it is read ------------------------------------------------



class Scope(NamedTuple):
    """Where a node sits: its enclosing functions (outermost first) and innermost class. Taken
    during the traversal, so that a rule can finish its check in `end_file`."""

    functions: tuple
    cls: ast.ClassDef | None


def scope_here(ctx) -> Scope:
    return Scope(tuple(ctx.functions), ctx.classes[-1] if ctx.classes else None)


def statement_of(ctx, node: ast.AST, root: ast.AST | None = None) -> ast.AST | None:
    """The statement that holds `node` (under `root`, its function, when given)."""
    while node is not None and not isinstance(node, ast.stmt):
        node = ctx.parent(node, root)
    return node


def _ends_before(a: ast.AST, b: ast.AST) -> bool:
    return (a.end_lineno, a.end_col_offset) <= (b.lineno, b.col_offset)


def _dominates(ctx, statement: ast.AST, use: ast.AST, root: ast.AST | None) -> bool:
    """`statement` runs before `use` whenever `use` runs: it sits earlier in a block that holds
    the use (directly or in a nested statement). Both lie under `root` (a function, or the
    module when None)."""
    holder = ctx.parent(statement, root)
    node = use
    while node is not None and node is not root:
        parent = ctx.parent(node, root)
        if parent is holder:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(parent, field, None)
                if isinstance(block, list) and any(s is statement for s in block) and any(s is node for s in block):
                    return next(i for i, s in enumerate(block) if s is statement) < \
                        next(i for i, s in enumerate(block) if s is node)
            return False
        node = parent
    return False


def _plain_binding(ctx, value: ast.AST, name: str, root: ast.AST | None) -> bool:
    """`name = value` / `name: T = value` / `(name := value)`: not a loop target, not unpacking."""
    parent = ctx.parent(value, root)
    if isinstance(parent, ast.Assign) and parent.value is value:
        return any(isinstance(t, ast.Name) and t.id == name for t in parent.targets)
    if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)) and parent.value is value:
        return isinstance(parent.target, ast.Name) and parent.target.id == name
    return False


def _last_reaching(ctx, values: list, name: str, use: ast.AST, root: ast.AST | None) -> list | None:
    """From the assignments before `use` (in source order): the last, and the earlier ones while
    the later sit in branches that do not enclose the use; None when a path is unknown. An
    assignment that a later one in its own block overwrites does not reach the use, and an `if`
    whose branches all assign the name hides the assignments above it (Swin's `if mask is not
    None: ...; attn = self.softmax(attn)` / `else: attn = self.softmax(attn)`)."""
    found: list = []
    statements: list = []
    hiding: ast.AST | None = None  # an `if` above the use whose every branch assigns the name
    for value in reversed(values):
        if isinstance(value, ast.AugAssign) or not _plain_binding(ctx, value, name, root):
            return None
        statement = statement_of(ctx, value, root)
        if hiding is not None and not _inside(ctx, statement, hiding, root):
            return found
        if _other_branch(ctx, statement, use, root):
            continue  # `if ...: x = a` / `else: ... x ...`: the read's branch never sees it
        if not any(_overwritten(ctx, statement, later, root) for later in statements):
            found.append(value)
        statements.append(statement)
        if _dominates(ctx, statement, use, root):
            return found
        if hiding is None:
            hiding = _assigning_if(ctx, statement, name, use, root)
    return None


def _inside(ctx, node: ast.AST, ancestor: ast.AST, root: ast.AST | None) -> bool:
    while node is not None and node is not root:
        if node is ancestor:
            return True
        node = ctx.parent(node, root)
    return False


def _other_branch(ctx, statement: ast.AST, use: ast.AST, root: ast.AST | None) -> bool:
    """`statement` sits in one branch of an `if` and `use` in the other."""
    child, node = statement, ctx.parent(statement, root)
    while node is not None and node is not root:
        if isinstance(node, ast.If) and any(s is child for s in node.body):
            return any(_inside(ctx, use, s, root) for s in node.orelse)
        child, node = node, ctx.parent(node, root)
    return False


def _overwritten(ctx, statement: ast.AST, later: ast.AST, root: ast.AST | None) -> bool:
    """`later` follows `statement` in the same block, with no `break` or `continue` between that
    could skip it: what `statement` assigned never gets past `later`."""
    holder = ctx.parent(statement, root)
    if holder is not ctx.parent(later, root):
        return False
    for field in ("body", "orelse", "finalbody"):
        block = getattr(holder, field, None) if holder is not None else getattr(root or ctx.tree, field, None)
        if not isinstance(block, list):
            continue
        indices = [i for i, s in enumerate(block) if s is statement or s is later]
        if len(indices) == 2:
            between = block[indices[0] + 1:indices[1]]
            return not any(isinstance(n, (ast.Break, ast.Continue)) for s in between for n in ast.walk(s))
    return False


def _assigning_if(ctx, statement: ast.AST, name: str, use: ast.AST, root: ast.AST | None) -> ast.AST | None:
    """The `if` holding `statement` that runs before `use` whenever it runs and assigns `name` in
    every branch; None if there is none."""
    node = ctx.parent(statement, root)
    while node is not None and node is not root and not isinstance(node, (*FUNCTION_DEFS, ast.ClassDef)):
        if isinstance(node, ast.If) and _dominates(ctx, node, use, root):
            return node if _assigns_on_every_path(node.body, name) and _assigns_on_every_path(node.orelse, name) \
                else None
        node = ctx.parent(node, root)
    return None


def _assigns_on_every_path(block: list, name: str) -> bool:
    for statement in block:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name
                                                     for t in statement.targets):
            return True
        if isinstance(statement, ast.AnnAssign) and statement.value is not None \
                and isinstance(statement.target, ast.Name) and statement.target.id == name:
            return True
        if isinstance(statement, ast.If) and _assigns_on_every_path(statement.body, name) \
                and _assigns_on_every_path(statement.orelse, name):
            return True
        if isinstance(statement, (ast.With, ast.AsyncWith)) and _assigns_on_every_path(statement.body, name):
            return True
        if isinstance(statement, (ast.Return, ast.Raise)):
            return True  # the path never reaches the read
        if isinstance(statement, (ast.Break, ast.Continue)):
            return False  # a path that leaves the block before any assignment, and may reach the read
    return False


def reaching_values(ctx, name: ast.Name, scope: Scope) -> list[ast.expr] | None:
    """The values a local name may hold where `name` reads it, in straight-line code: the last
    assignment before the read, and the ones before it while the last sits in a branch that does
    not enclose the read (`if mask is not None: att = att.masked_fill(...)`). A name the
    function does not assign comes from an enclosing function or the module (there: every
    assignment, since the function runs after the module). None when some path gives a value
    that cannot be seen: a parameter, a loop target, unpacking, an augmented assignment."""
    use: ast.AST = name
    for function in reversed(scope.functions):
        assigned = ctx.assignments(name.id, function)
        values = [v for v in assigned if _ends_before(v, use)]
        if values:
            return _last_reaching(ctx, values, name.id, use, function)
        if assigned or name.id in parameter_names(function.args):
            return None  # a parameter, or assigned only after the read (a loop's previous round)
        use = function
    values = ctx.assignments(name.id, ctx.tree)
    if not values:
        return None
    if scope.functions:
        values = [v for v in values if not isinstance(v, ast.AugAssign)]
        return list(values) if values and all(_plain_binding(ctx, v, name.id, None) for v in values) else None
    return _last_reaching(ctx, [v for v in values if _ends_before(v, use)], name.id, use, None)


# Methods that keep a tensor's values (a new view, another dtype or device).
VIEW_METHODS = {"view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze", "permute", "transpose",
                "float", "double", "half", "bfloat16", "to", "type", "type_as", "view_as", "reshape_as", "cuda",
                "cpu", "clone", "detach"}
# Methods of a module that return the module itself.
MODULE_METHODS = {"to", "cuda", "cpu", "train", "eval", "float", "double", "half", "bfloat16", "requires_grad_"}


def producers(ctx, expr: ast.AST, scope: Scope, recognise, through: set[str] = VIEW_METHODS,
              depth: int = 0) -> list | None:
    """What `expr` was computed by: the results of `recognise(ctx, node, scope)` at the end of
    every path back from `expr` through local names (`reaching_values`), indexing and the
    `through` methods; None when some path ends in anything else."""
    if depth > 8:
        return None
    found = recognise(ctx, expr, scope)
    if found is not None:
        return [found]
    if isinstance(expr, ast.Subscript):
        return producers(ctx, expr.value, scope, recognise, through, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in through \
            and ctx.qualname(expr.func) is None:
        return producers(ctx, expr.func.value, scope, recognise, through, depth + 1)
    if isinstance(expr, ast.Name):
        values = reaching_values(ctx, expr, scope)
        if not values:
            return None
        out = []
        for value in values:
            result = producers(ctx, value, scope, recognise, through, depth + 1)
            if result is None:
                return None
            out += result
        return out
    return None


# -- what a callee was built from ------------------------------------------------------------

def attribute_values(ctx, cls: ast.ClassDef, attr: str) -> list[ast.expr]:
    """Values assigned to `self.<attr>` in the methods of `cls` (memoised per class)."""
    key = ("self-attributes", id(cls))
    if key not in ctx.memo:
        table: dict[str, list[ast.expr]] = {}
        for method in cls.body:
            if not isinstance(method, FUNCTION_DEFS):
                continue
            for node in ast.walk(method):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                                and target.value.id == "self":
                            table.setdefault(target.attr, []).append(node.value)
        ctx.memo[key] = table
    return ctx.memo[key].get(attr, [])


def _unwrap_module(node: ast.AST) -> ast.AST:
    """`Net().to(device)` -> `Net()`: module methods that return the module."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MODULE_METHODS:
        node = node.func.value
    return node


def built_from(ctx, callee: ast.AST, scope: Scope, depth: int = 0) -> list[ast.AST] | None:
    """What a called name holds: `criterion` after `criterion = nn.CrossEntropyLoss()`,
    `self.loss_fn` after `self.loss_fn = nn.BCELoss()` in any method of the class, `loss_fn`
    after `loss_fn = F.cross_entropy`. Each value comes back with module methods (`.to(d)`)
    stripped; None when a path is unknown."""
    if depth > 4:
        return None
    if isinstance(callee, ast.Name):
        values = reaching_values(ctx, callee, scope)
    elif isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name) and callee.value.id == "self" \
            and scope.cls is not None:
        values = attribute_values(ctx, scope.cls, callee.attr)
    else:
        return None
    if not values:
        return None
    out: list[ast.AST] = []
    for value in values:
        value = _unwrap_module(value)
        if isinstance(value, ast.Name) or (isinstance(value, ast.Attribute) and ctx.qualname(value) is None):
            inner = built_from(ctx, value, scope, depth + 1)
            if inner is None:
                if ctx.qualname(value) is None:
                    return None
                inner = [value]
            out += inner
        else:
            out.append(value)
    return out


def nn_name(qualname: str | None) -> str | None:
    """`torch.nn.modules.loss.BCELoss` -> `torch.nn.BCELoss`."""
    if qualname and qualname.startswith("torch.nn.modules."):
        return "torch.nn." + qualname.rsplit(".", 1)[1]
    return qualname


def constructs(ctx, node: ast.AST, classes: set[str]) -> bool:
    """`node` is `nn.X(...)` for one of `classes` (any spelling)."""
    return isinstance(node, ast.Call) and nn_name(ctx.qualname(node.func)) in classes


def module_calls(ctx, call: ast.AST, scope: Scope, classes: set[str]) -> bool:
    """`call` runs a module of one of `classes`: `nn.Softmax(1)(x)`, `sm(x)` after
    `sm = nn.Softmax(1)`, `self.act(x)` after `self.act = nn.Sigmoid()`."""
    if not isinstance(call, ast.Call):
        return False
    if constructs(ctx, call.func, classes):
        return True
    values = built_from(ctx, call.func, scope)
    return bool(values) and all(constructs(ctx, v, classes) for v in values)


# -- tensors a rule follows back to what made them -------------------------------------------

def model_ends_in(ctx, call: ast.AST, scope: Scope, recognise, depth: int = 0) -> bool:
    """`call` runs a model whose output `recognise` accepts: an `nn.Sequential(..., last)` whose
    last layer it accepts, or an instance of a module class of this file whose `forward`
    returns only such values (`return F.softmax(x, dim=1)`)."""
    from ptlint.semantics.compiled import is_module_class, local_classes

    if depth > 2 or not isinstance(call, ast.Call):
        return False
    values = [call.func] if isinstance(call.func, ast.Call) else built_from(ctx, call.func, scope)
    if not values:
        return False
    for value in values:
        if not isinstance(value, ast.Call):
            return False
        qualname = nn_name(ctx.qualname(value.func))
        if qualname == "torch.nn.Sequential":
            if not value.args or value.keywords or isinstance(value.args[-1], ast.Starred):
                return False
            last = value.args[-1]
            probe = ast.Call(func=last, args=[ast.Name(id="_", ctx=ast.Load())], keywords=[])
            if recognise(ctx, probe, scope, depth + 1) is None:
                return False
            continue
        cls = local_classes(ctx).get(value.func.id) if isinstance(value.func, ast.Name) else None
        if cls is None or not is_module_class(cls, ctx):
            return False
        forward = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "forward"), None)
        if forward is None:
            return False
        returns = [n for n in body_nodes(forward.body) if isinstance(n, ast.Return)]
        inner = Scope((forward,), cls)
        if not returns or not all(r.value is not None and producers(
                ctx, r.value, inner, lambda c, n, s: recognise(c, n, s, depth + 1)) for r in returns):
            return False
    return True


def softmax_output(ctx, node: ast.AST, scope: Scope, depth: int = 0):
    """`F.softmax(x, d)` (every spelling), an `nn.Softmax` module's call, a model ending in one."""
    call = softmax_call(ctx, node)
    if call is not None:
        return call.node
    if module_calls(ctx, node, scope, {"torch.nn.Softmax"}) or model_ends_in(ctx, node, scope, softmax_output, depth):
        return node
    return None


def sigmoid_output(ctx, node: ast.AST, scope: Scope, depth: int = 0):
    """`torch.sigmoid(x)` (every spelling), an `nn.Sigmoid` module's call, a model ending in one."""
    call = sigmoid_call(ctx, node)
    if call is not None:
        return call.node
    if module_calls(ctx, node, scope, {"torch.nn.Sigmoid"}) or model_ends_in(ctx, node, scope, sigmoid_output, depth):
        return node
    return None


# -- loss calls ----------------------------------------------------------------------------

class LossCall(NamedTuple):
    """A loss call and its input (the prediction). `form`: "function" (`F.cross_entropy(...)`),
    "inline" (`nn.CrossEntropyLoss()(...)`) or "module" (a loss module held by a name or on
    `self`)."""

    node: ast.Call
    input: ast.expr
    form: str
    loss: str  # the loss function or class, qualified: "torch.nn.NLLLoss"


def loss_call(ctx, node: ast.AST, scope: Scope, functions: set[str], classes: set[str],
              holders: set[str]) -> LossCall | None:
    """`F.cross_entropy(p, y)`, `nn.CrossEntropyLoss()(p, y)`, `criterion(p, y)` after
    `criterion = nn.CrossEntropyLoss()`, `self.criterion(p, y)` after `self.criterion = ...`
    in any method, `loss_fn(p, y)` after `loss_fn = F.cross_entropy`. `holders`: the names
    assigned such a loss anywhere in the module (note_loss_holder)."""
    if not isinstance(node, ast.Call):
        return None
    qualname = ctx.qualname(node.func)
    if qualname in functions:
        first = argument(node, 0, "input")
        return LossCall(node, first, "function", qualname) if first is not None else None
    if not node.args or isinstance(node.args[0], ast.Starred):
        return None
    if constructs(ctx, node.func, classes):
        return LossCall(node, node.args[0], "inline", nn_name(ctx.qualname(node.func.func)))
    if qualname is not None:
        return None
    func = node.func
    held = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    if held not in holders:
        return None  # nothing of that name is ever assigned such a loss: skip the flow analysis
    values = built_from(ctx, node.func, scope)
    if values and all(constructs(ctx, v, classes) or ctx.qualname(v) in functions for v in values):
        first = values[0]
        return LossCall(node, node.args[0], "module",
                        nn_name(ctx.qualname(first.func if isinstance(first, ast.Call) else first)))
    return None


def note_loss_holder(ctx, node: ast.AST, functions: set[str], classes: set[str], holders: set[str]) -> None:
    """Called on each assignment during the traversal: adds the names and `self` attributes
    assigned one of the losses (`criterion = nn.CrossEntropyLoss()`, `self.loss_fn = F.nll_loss`)
    to `holders`. Only calls through these can be calls of such a loss module."""
    value = getattr(node, "value", None)
    if value is None:
        return
    value = _unwrap_module(value)
    if constructs(ctx, value, classes) or (isinstance(value, (ast.Name, ast.Attribute))
                                           and ctx.qualname(value) in functions):
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
            if isinstance(target, ast.Name):
                holders.add(target.id)
            elif isinstance(target, ast.Attribute):
                holders.add(target.attr)


class LossInputRule(NumericsRule):
    """A rule about what a loss is fed (PTL306, PTL307). Every call may be a loss module's, and a
    module-level `criterion = ...` can come after the function that uses it, so the calls are
    checked at the end of the file: `loss_calls()` gives each call of one of `loss_functions` /
    `loss_classes` (directly or through a holder) with its loss and scope."""

    loss_functions: set[str] = set()
    loss_classes: set[str] = set()

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._calls: list[tuple] = []
        self._holders: set[str] = set()

    def visit_Assign(self, node: ast.AST) -> None:
        note_loss_holder(self.ctx, node, self.loss_functions, self.loss_classes, self._holders)

    visit_AnnAssign = visit_Assign

    def visit_Call(self, node: ast.Call) -> None:
        self._calls.append((node, scope_here(self.ctx)))

    def loss_calls(self):
        if not self.ctx.imports_torch():
            return
        for node, scope in self._calls:
            loss = loss_call(self.ctx, node, scope, self.loss_functions, self.loss_classes, self._holders)
            if loss is not None:
                yield node, loss, scope


# -- the states the fixes run in, side by side (FixInput code, ptlint.engine.rule) ----------------

# How far a result may be from the original's and from a float64 reference, by dtype: the fixed
# functions round differently (and better) than the hand-written ones.
TOLERANCE = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 5e-2}
# Inputs where `exp` overflows the dtype (float32 and bfloat16 past ~88, float16 past ~11).
HUGE = {"float32": "torch.randn({shape}) * 300 + 200", "float16": "(torch.randn({shape}) * 50 + 300).half()",
        "bfloat16": "(torch.randn({shape}) * 50 + 300).bfloat16()"}


def reduction_inputs(call: str, reference: str, shape: str = "(4, 6)", empty: str = "(0, 6)") -> tuple:
    """FixInputs for a softmax / log-softmax / log-sum-exp rewrite, `call` on `x` (`"f(x)"`),
    `reference` its float64 value (`"torch.softmax(x.double(), -1)"`): ordinary inputs in float32,
    float16 and bfloat16 (the same values to each dtype's rounding, and the reference's); huge
    magnitudes, where the original overflows (checked: else the input proves nothing) and the fix
    stays finite (and, in float32, right); an empty tensor (the same shape)."""
    out = []
    for dtype, tolerance in TOLERANCE.items():
        out.append(FixInput(dtype, f"x = torch.randn{shape}.to(torch.{dtype})\nresult = {call}\n"
                                   f"reference = {reference}\n",
                            check=f"before.dtype == after.dtype == torch.{dtype} and close(before, after, {tolerance}) "
                                  f"and close(after, reference, {tolerance})"))
    for dtype, huge in HUGE.items():
        right = " and close(after, reference, 1e-4)" if dtype == "float32" else ""
        out.append(FixInput(f"huge magnitudes, {dtype}", f"x = {huge.format(shape=shape)}\nresult = {call}\n"
                                                        f"reference = {reference}\n",
                            check=f"not finite(before) and finite(after) and after.shape == before.shape{right}"))
    out.append(FixInput("an empty tensor", f"x = torch.randn{empty}\nresult = {call}\n",
                        check="before.shape == after.shape"))
    return tuple(out)


# float64 references for the log/exp rewrites (PTL305), defined in the inputs' code
SOFTPLUS = """
def softplus64(x):
    x = x.double()
    return torch.where(x > 30, x, torch.log1p(torch.exp(x.clamp(max=30))))
"""
# where `exp` overflows, by dtype: (low, high) of the inputs
OVERFLOW = {"float32": (89.0, 400.0), "bfloat16": (89.0, 400.0), "float16": (11.5, 60.0)}
LOG_EXP_TOLERANCE = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def log_exp_inputs(reference: str, setup: str = "", *, kind: str = "softplus", negate: bool = False) -> tuple:
    """FixInputs for a PTL305 rewrite of `f(x)`, `reference` its float64 value: in float32,
    float16 and bfloat16, ordinary inputs (the same values to each dtype's rounding, and the
    reference's) and the inputs where the original breaks, checked first so that the comparison
    means something — `exp` overflowing (softplus: the fix stays finite and right), `1 + x`
    rounding a small `x` away (log1p: the fix keeps its relative precision), `exp(x) - 1`
    cancelling (expm1: the fix's error is ten times smaller at least)."""
    out = []
    for dtype, tolerance in LOG_EXP_TOLERANCE.items():
        if kind == "softplus":
            ordinary, scale = "torch.randn(64) * 3", tolerance
            low, high = OVERFLOW[dtype]
            broken = f"{'-' if negate else ''}torch.linspace({low}, {high}, 32).to(torch.{dtype})"
            breaks = "torch.isinf(before).all() and finite(after) and close(after, reference, {t})"
        elif kind == "log1p":
            ordinary, scale = "torch.rand(64) * 3 - 0.5", 4 * tolerance
            broken = "torch.logspace(-9, -6, 16)" if dtype == "float32" else "torch.logspace(-5, -4, 16)"
            broken += f".to(torch.{dtype})"
            breaks = ("((before.double() - reference) / reference).abs().max() > 0.05 and "
                      "((after.double() - reference) / reference).abs().max() < {t}")
        else:
            ordinary, scale = "torch.rand(64) * 2 + 0.5", 8 * tolerance
            size = "1e-5" if dtype == "float32" else "3e-2"
            broken = f"(torch.linspace(-1, 1, 33) * {size}).to(torch.{dtype})\nx = x[x != 0]"
            breaks = ("((after.double() - reference) / reference).abs().max() * 10 < "
                      "((before.double() - reference) / reference).abs().max() and "
                      "((before.double() - reference) / reference).abs().max() > 0.02")
        out.append(FixInput(dtype, f"{setup}\nx = ({ordinary}).to(torch.{dtype})\nresult = f(x)\n"
                                   f"reference = {reference}\n",
                            check=f"before.dtype == after.dtype == torch.{dtype} and close(before, after, {scale}) "
                                  f"and close(after, reference, {scale})"))
        out.append(FixInput(f"where the original breaks, {dtype}",
                            f"{setup}\nx = {broken}\nresult = f(x)\nreference = {reference}\n",
                            check=breaks.format(t=tolerance)))
    return tuple(out)


# the float64 reference of binary cross-entropy on logits
BCE = """
import torch.nn.functional as F

def bce64(x, y, w=None, reduction="mean"):
    return F.binary_cross_entropy_with_logits(x.double(), y.double(), None if w is None else w.double(),
                                              reduction=reduction)
"""
BCE_TOLERANCE = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 5e-2}


def bce_inputs(weight: bool = False, reduction: str = "mean") -> tuple:
    """FixInputs for a PTL307 rewrite of `f(x, y, w)`: logits where the sigmoid is accurate, in
    float32, float16 and bfloat16: the same loss to each dtype's rounding, and the reference's."""
    reference = f"bce64(x, y, {'w' if weight else 'None'}, {reduction!r})"
    return tuple(FixInput(dtype, f"""{BCE}
x = (torch.randn(4, 16) * 2).clamp(-4, 4).to(torch.{dtype})
y = torch.randint(0, 2, (4, 16)).to(torch.{dtype})
w = torch.rand(4, 16).to(torch.{dtype}) + 0.5
result = f(x, y, w)
reference = {reference}
""", check=f"before.shape == after.shape and before.dtype == after.dtype == torch.{dtype} and "
           f"close(before, after, {tolerance}) and close(after, reference, {tolerance})")
        for dtype, tolerance in BCE_TOLERANCE.items())


def saturated_bce_inputs() -> tuple:
    """For `f(x, y, w)` with `reduction='none'`, where the sigmoid rounds to 1 (target 0):
    BCELoss clamps `log(1 - p)` at -100, so the original gives 100 whatever x is, with a zero
    gradient (float32, bfloat16) or a NaN one (float16: the backward's 1e-12 underflows); the fix
    gives the true loss, about x, and the gradient 1."""
    out = []
    for dtype, saturates in (("float32", 16.7), ("float16", 8.4), ("bfloat16", 6.3)):
        broken_grad = "torch.isnan(before[1]).all()" if dtype == "float16" else \
            "torch.equal(before[1], torch.zeros_like(before[1]))"
        out.append(FixInput(f"a saturated sigmoid, {dtype}", f"""
x = torch.tensor([{saturates}, 20.0, 40.0], dtype=torch.{dtype}, requires_grad=True)
y = torch.zeros(3, dtype=torch.{dtype})
loss = f(x, y, None)
loss.sum().backward()
result = (loss.detach(), x.grad)
""", check=f"torch.equal(before[0].float(), torch.full((3,), 100.0)) and {broken_grad} and "
           "close(after[0], x.detach(), 1e-2) and close(after[1], torch.ones(3), 1e-5)"))
    return tuple(out)
