"""PTL304 broadcast-reduction: a reduction over everything of an expression that broadcasts two
operands of visibly different rank, e.g. `(pred.view(-1, 1) - target).pow(2).mean()`."""

from __future__ import annotations

import ast
from typing import NamedTuple

from ptlint.rules.numerics._helpers import DeferredRule
from ptlint.semantics.nodes import argument, keyword

REDUCTIONS = {"sum", "mean", "nansum", "nanmean", "std", "var"}
# Calls that keep their first operand's shape: looked through on the way to the binary op, and
# when computing a rank.
ELEMENTWISE = {
    "pow", "abs", "square", "sqrt", "rsqrt", "exp", "log", "log1p", "neg", "clamp", "clip", "clamp_min",
    "clamp_max", "relu", "sigmoid", "tanh", "float", "double", "half", "bfloat16", "to", "type", "detach",
    "clone", "contiguous", "sign", "softplus", "mul", "div", "add", "sub", "masked_fill", "nan_to_num",
}
FACTORIES = {"zeros", "ones", "empty", "rand", "randn", "full"}


class Rank(NamedTuple):
    """A rank known absolutely (`base` None) or relative to the rank of the expression `base`."""

    base: str | None
    value: int
    trailing_one: bool = False  # the last dimension was visibly made of size 1 (`[..., None]`, `view(-1, 1)`)
    # every dim it gained is leading (`unsqueeze(0)`, `x[None]`): broadcasting aligns from the
    # right, so leading size-1 dims change nothing
    leading: bool = False

    def shifted(self, by: int, trailing_one: bool = False, leading: bool = False) -> "Rank":
        return Rank(self.base, self.value + by, trailing_one, leading and (self.leading or self.value == 0))


def _literal_rank(node: ast.AST) -> Rank | None:
    """`[[1.0], [2.0]]` -> rank 2 whose last dimension has size 1."""
    depth, last_len = 0, 0
    while isinstance(node, (ast.List, ast.Tuple)):
        depth, last_len = depth + 1, len(node.elts)
        if not node.elts:
            return Rank(None, depth)
        node = node.elts[0]
    if not (isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool))):
        return None
    return Rank(None, depth, depth >= 2 and last_len == 1)


def _shape_length(call: ast.Call) -> int | None:
    """`view(-1, 1)` / `reshape((-1, 1))` / `zeros(3, 4)` -> 2, when every size is an int literal."""
    sizes = call.args
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = sizes[0].elts
    if not sizes:
        return None
    for size in sizes:
        if isinstance(size, ast.UnaryOp) and isinstance(size.op, ast.USub):
            size = size.operand
        if not (isinstance(size, ast.Constant) and type(size.value) is int):
            return None
    return len(sizes)


def _ends_with_one(call: ast.Call) -> bool:
    sizes = call.args
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = sizes[0].elts
    return bool(sizes) and isinstance(sizes[-1], ast.Constant) and sizes[-1].value == 1


class BroadcastReduction(DeferredRule):
    code = "PTL304"
    name = "broadcast-reduction"
    message = ("`.{method}()` over all elements of a broadcast between operands of rank {left} and {right}: "
               "the shapes may have silently broadcast to a larger tensor")
    help = ("Give the reduction an explicit `dim=`, and make the operands' shapes match first (`a.squeeze(-1)` or "
            "`b.unsqueeze(-1)`).")
    triggers = ("sum", "mean", "std", "var")

    def visit_Call(self, node: ast.Call) -> None:
        operand, method = self._reduction(node)
        if operand is None or not self.ctx.imports_torch():
            return
        self._names: set[str] = set()  # local names whose single assignment the answer used
        binop = self._broadcast(operand)
        if binop is None:
            return
        left, right = self.rank(binop.left), self.rank(binop.right)
        if left is None or right is None or not _blows_up(left, right):
            return
        self.defer(node, self._names,
                   message=self.message.format(method=method, left=_describe(left), right=_describe(right)))

    def _reduction(self, node: ast.Call) -> tuple[ast.AST | None, str]:
        func = node.func
        qualname = self.ctx.qualname(func)
        if qualname is not None:
            name = qualname.rsplit(".", 1)[-1]
            if qualname == f"torch.{name}" and name in REDUCTIONS and len(node.args) == 1 \
                    and not any(kw.arg in ("dim", "axis") for kw in node.keywords):
                return node.args[0], name
            return None, ""
        if isinstance(func, ast.Attribute) and func.attr in REDUCTIONS and not node.args \
                and not any(kw.arg in ("dim", "axis") for kw in node.keywords):
            return func.value, func.attr
        return None, ""

    def _broadcast(self, node: ast.AST, hops: int = 0) -> ast.BinOp | None:
        """The binary op between two tensors under elementwise calls, scalar arithmetic and up to
        two local names."""
        for _ in range(12):
            if isinstance(node, ast.BinOp):
                if _scalar(node.right):
                    node = node.left
                elif _scalar(node.left):
                    node = node.right
                else:
                    return node
            elif isinstance(node, ast.UnaryOp):
                node = node.operand
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ELEMENTWISE and self.ctx.qualname(node.func) is None:
                node = node.func.value
            elif isinstance(node, ast.Call) and self._torch_elementwise(node):
                node = node.args[0]
            elif isinstance(node, ast.Name) and hops < 2:
                values = self.ctx.assignments(node.id)
                if len(values) != 1 or not isinstance(values[0], ast.expr):
                    return None
                self._names.add(node.id)
                node, hops = values[0], hops + 1
            else:
                return None
        return None

    def _torch_elementwise(self, node: ast.Call) -> bool:
        qualname = self.ctx.qualname(node.func) or ""
        return qualname.startswith("torch.") and qualname.rsplit(".", 1)[-1] in ELEMENTWISE and bool(node.args)

    def rank(self, node: ast.AST, depth: int = 0) -> Rank | None:
        """The rank of `node` as far as it is visible in this function."""
        if depth > 6:
            return None
        if isinstance(node, ast.Name):
            values = self.ctx.assignments(node.id)
            if len(values) == 1 and isinstance(values[0], ast.expr):
                known = self.rank(values[0], depth + 1)
                if known is not None:
                    self._names.add(node.id)
                    return known
            return Rank(node.id, 0) if not values or len(values) == 1 else None
        if isinstance(node, ast.Attribute):
            return Rank(ast.dump(node), 0) if self.ctx.qualname(node) is None else None
        if isinstance(node, ast.Subscript):
            return self._subscript_rank(node, depth)
        if isinstance(node, ast.Call):
            return self._call_rank(node, depth)
        if isinstance(node, ast.BinOp):
            left, right = self.rank(node.left, depth + 1), self.rank(node.right, depth + 1)
            if _scalar(node.right):
                return left
            if _scalar(node.left):
                return right
            if left is not None and right is not None and left.base == right.base:
                return max(left, right, key=lambda r: r.value)
            return None
        return None

    def _subscript_rank(self, node: ast.Subscript, depth: int) -> Rank | None:
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        change = 0
        for item in items:
            if isinstance(item, ast.Constant) and item.value is None:
                change += 1
            elif isinstance(item, ast.Constant) and type(item.value) is int:
                change -= 1
            elif isinstance(item, ast.Slice) or (isinstance(item, ast.Constant) and item.value is Ellipsis):
                continue
            else:
                return None  # a tensor or name index: advanced indexing, unknown
        if change <= 0:
            return None  # plain slicing keeps the rank; int indexing of unknown tensors is too vague
        base = self.rank(node.value, depth + 1)
        if base is None:
            return None
        last = items[-1]
        trailing = isinstance(last, ast.Constant) and last.value is None and \
            (any(isinstance(i, ast.Constant) and i.value is Ellipsis for i in items) or
             (base.base is None and len(items) == base.value + change))
        # `x[:, None]` on a name of unknown rank: the extra dim is trailing only if x is 1-D;
        # one index plus a None is the idiom for that (`t[:, None]`), so count it.
        if not trailing and len(items) == 2 and isinstance(items[0], ast.Slice) and change == 1 \
                and items[0].lower is None and items[0].upper is None:
            trailing = True
        leading = isinstance(items[0], ast.Constant) and items[0].value is None and change == 1 and not trailing
        return base.shifted(change, trailing, leading)

    def _call_rank(self, node: ast.Call, depth: int) -> Rank | None:
        qualname = self.ctx.qualname(node.func)
        if qualname is not None:
            name = qualname.rsplit(".", 1)[-1]
            if qualname in ("torch.tensor", "torch.as_tensor") and node.args:
                return _literal_rank(node.args[0])
            if qualname == f"torch.{name}" and name in FACTORIES:
                length = _shape_length(node) if name != "full" else None
                return Rank(None, length, _ends_with_one(node)) if length is not None else None
            if qualname == f"torch.{name}" and name in ELEMENTWISE and node.args:
                return self.rank(node.args[0], depth + 1)
            return None
        if not isinstance(node.func, ast.Attribute):
            return None
        method, owner = node.func.attr, node.func.value
        if method == "unsqueeze" and len(node.args) == 1:
            base = self.rank(owner, depth + 1)
            dim = node.args[0]
            trailing = isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and \
                isinstance(dim.operand, ast.Constant) and dim.operand.value == 1
            leading = isinstance(dim, ast.Constant) and dim.value == 0
            return base.shifted(1, trailing, leading) if base is not None else None
        if method in ("view", "reshape"):
            length = _shape_length(node)
            return Rank(None, length, _ends_with_one(node)) if length is not None else None
        if method == "flatten" and not node.args and not node.keywords:
            return Rank(None, 1)
        if method in REDUCTIONS | {"amax", "amin", "logsumexp"}:
            base = self.rank(owner, depth + 1)
            keepdim = argument(node, 1, "keepdim")
            dim = argument(node, 0, "dim")
            if base is None or not _int(dim):
                return None
            if isinstance(keepdim, ast.Constant) and keepdim.value is True:
                last = isinstance(dim, ast.UnaryOp) and isinstance(dim.operand, ast.Constant) and dim.operand.value == 1
                return base.shifted(0, last or base.trailing_one)
            return base.shifted(-1) if keepdim is None else None
        if method in ("max", "min") and len(node.args) == 1 and _int(node.args[0]) and not node.keywords:
            return None  # a (values, indices) pair
        if method in ELEMENTWISE and keyword(node, "dim") is None:
            return self.rank(owner, depth + 1)
        return None


def _blows_up(left: Rank, right: Rank) -> bool:
    """Visibly different ranks, the higher one with a trailing size-1 dim. Right-aligned
    broadcasting of a lower-rank operand without it (a bias, per-feature statistics) is the
    everyday intended kind; the silent blow-up comes from the extra trailing size-1 dim."""
    if left.base == right.base:
        if left.value == right.value:
            return False
        low, high = sorted((left, right), key=lambda r: r.value)
        return high.trailing_one and not (low.base is None and low.value == 0)
    # different bases: a visibly 1-D operand against one whose last dim was made 1 on top of
    # at least one other dim, `(N,) - (..., M, 1)`
    for low, high in ((left, right), (right, left)):
        if low.base is None and low.value == 1 and high.trailing_one and high.value >= 1 \
                and not (high.base is None and high.value < 2):
            return True
        # one side visibly gained a dim that is not leading (`a.unsqueeze(1)`, `a[:, None]`)
        # against an operand of unknown rank: `(N,)` and `(N,)` become `(N, N)`
        if high.base is not None and high.value > 0 and not high.leading \
                and low.base is not None and low.value == 0:
            return True
    return False


def _int(node: ast.AST | None) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _scalar(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))


def _describe(rank: Rank) -> str:
    if rank.base is None:
        return str(rank.value)
    return "r" if rank.value == 0 else f"r{rank.value:+d}"


BroadcastReduction.docs = """
## What it does
Finds a reduction over all elements — `.sum()`, `.mean()`, `.std()`, `.var()`, `torch.sum(...)`,
`torch.mean(...)` with no `dim` — of an expression that broadcasts two tensors whose ranks
visibly differ, where the higher-rank side visibly gained a trailing size-1 dimension
(`unsqueeze(-1)`, `[:, None]`, `[..., None]`, `view(-1, 1)`, `reshape(-1, 1)`, a reduction over
the last dim with `keepdim=True`, or literal tensors of different rank in the same function).

## Why is this bad?
`(N, 1) - (N,)` broadcasts to `(N, N)`: no error, no warning. A loss such as
`(pred.view(-1, 1) - target).pow(2).mean()` then averages N² pairwise differences instead of N
residuals — the model trains, badly, and nothing points at the line. Reducing to a scalar hides
the shape that would have given it away.

Also reported: one side visibly gains a dimension that is not leading (`a.unsqueeze(1) - b`,
`a[:, None] * b`) against an operand whose rank is not visible: if `b` has `a`'s old rank, the
result is the outer product. Where that is the intended shape fix (`pred` already `(N, 1)`), make
it visible (`pred.view(-1, 1) - target.unsqueeze(1)`) or reduce over a named `dim`.

Not reported: operands whose ranks are not visible (`(a - b).pow(2).mean()`), operands of the
same visible rank (`x[:, None] - x[None, :]`), leading dims (`p.unsqueeze(0) * q`, `x[None]`),
which broadcasting adds anyway, right-aligned broadcasting of a lower-rank operand without a
trailing size-1 dimension (`x - x.mean(0)`, adding a bias), and scalars.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: a silent broadcast is wrong wherever it
  runs, a test included.

## Example
```python
import torch


def mse(pred, target):  # pred: (N,), target: (N,)
    return (pred.unsqueeze(-1) - target).pow(2).mean()  # (N, 1) - (N,) is (N, N)
```

## Use instead
```python
import torch


def mse(pred, target):  # pred: (N,), target: (N,)
    return (pred - target).pow(2).mean()
```

## Fix safety
No automatic fix: which shape was intended is not visible.

## References
- https://pytorch.org/docs/stable/notes/broadcasting.html
"""

BroadcastReduction.bad_examples = [
    # one side visibly gains a non-leading dim against an operand of unknown rank
    """
import torch

def f(pred, target, a, b):
    first = (pred - target.unsqueeze(1)).pow(2).mean()  # expect: PTL304
    return first + (a[:, None] * b).sum()  # expect: PTL304
""",
    """
import torch

def mse(pred, target):
    return (pred.view(-1, 1) - target.view(-1)).pow(2).mean()  # expect: PTL304
""",
    """
import torch

def loss(scores, labels):
    diff = scores.flatten() - labels.unsqueeze(-1)
    return (diff ** 2).sum() / len(labels)  # expect: PTL304
""",
    """
import torch

def f():
    a = torch.tensor([1.0, 2.0, 3.0])
    b = torch.tensor([[1.0], [2.0], [3.0]])
    return torch.mean((a - b) ** 2)  # expect: PTL304
""",
    """
import torch

def centred(x):
    return (x.sum(-1) - x.sum(-1, keepdim=True)).abs().mean()  # expect: PTL304
""",
]

BroadcastReduction.good_examples = [
    # shapes not visible
    """
import torch

def mse(a, b):
    return (a - b).pow(2).mean()
""",
    # same visible rank on both sides: an intended pairwise matrix
    """
import torch

def pairwise(x):
    return (x[:, None] - x[None, :]).abs().sum()
""",
    # right-aligned broadcasting of per-feature statistics; keepdim keeps the rank
    """
import torch

def standardised(x):
    return ((x - x.mean(0)) ** 2).mean(), (x - x.mean(-1, keepdim=True)).pow(2).mean()
""",
    # the reduction names a dim
    """
import torch

def per_row(p, t):
    return (p.view(-1, 1) - t).pow(2).mean(dim=1)
""",
    # a leading size-1 dim changes nothing: broadcasting aligns shapes from the right
    # (an MoE load-balancing loss: counts per expert times mean probability per expert)
    """
import torch

def balance_loss(tokens_per_expert, prob_per_expert, probs):
    return torch.sum(tokens_per_expert * prob_per_expert.unsqueeze(0)) + (probs * probs[None]).mean()
""",
]
