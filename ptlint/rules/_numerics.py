"""Shared recognisers for the numerics rules PTL301-PTL303 (`exp`, `log`, `sum`, `softmax` in
every spelling, through at most one local variable). Not a rule module."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptlint.astutil import argument, keyword
from ptlint.rule import Rule

if TYPE_CHECKING:
    from ptlint.engine import FileContext

SOFTMAX_FUNCTIONS = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax"}
# Methods that bound their argument from above (or make it non-positive): exp cannot overflow.
BOUNDING_METHODS = {"clamp", "clip", "clamp_max", "sub", "neg", "log_softmax", "logsigmoid", "sigmoid", "tanh"}


@dataclass
class Call:
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


@dataclass
class SumCall(Call):
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


class DeferredRule(Rule):
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
            if all(len(self.ctx.assignments(name, scope)) == 1 for name in names):
                self.report(node, **kwargs)


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
