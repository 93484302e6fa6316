"""PTL301 unstable-softmax: `exp(x) / exp(x).sum(d)` written by hand."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample
from ptlint.rules.numerics._helpers import (
    Call,
    DeferredRule,
    exp_call,
    int_literal,
    is_true,
    reduction_inputs,
    resolve,
    same,
    stabilised,
    sum_call,
    visibly_integer,
)


def masked_exp(ctx, node: ast.AST) -> Call | None:
    """`exp(x) * mask` (either order): a masked softmax's numerator. No fix is offered for it."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            call = exp_call(ctx, side)
            if call is not None and exp_call(ctx, other) is None:
                return Call(node, call.operand, call.method)
    return None


def _denominator(node: ast.AST) -> tuple[ast.AST, bool]:
    """`s + eps`, `s.clamp_min(eps)` -> (s, True); anything else -> (node, False)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return node.left, True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("clamp", "clamp_min", "clip"):
        return node.func.value, True
    return node, False


class UnstableSoftmax(DeferredRule):
    code = "PTL301"
    name = "unstable-softmax"
    message = "softmax written as `exp(x) / exp(x).sum()` overflows for large inputs; use `softmax`"
    help = "Use `torch.softmax(x, dim=d)` (or `F.softmax`), which subtracts the maximum before `exp`."
    fixable = "sometimes"
    triggers = ("exp",)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not isinstance(node.op, ast.Div) or not self.ctx.imports_torch():
            return
        names: set[str] = set()
        numerator, num_direct = resolve(self.ctx, node.left, exp_call, names)
        recogniser = exp_call
        if numerator is None:  # a masked softmax: `e = x.exp() * mask`
            recogniser = masked_exp
            numerator, num_direct = resolve(self.ctx, node.left, masked_exp, names)
            if numerator is None:
                return
        denominator, eps = _denominator(node.right)
        total, sum_direct = resolve(self.ctx, denominator, sum_call, names)
        if total is None:
            return
        summed, exp_direct = resolve(self.ctx, total.operand, recogniser, names)
        if summed is None or not same(numerator.node, summed.node):
            return
        if stabilised(self.ctx, numerator.operand):
            return
        fix = None
        if recogniser is exp_call and num_direct and sum_direct and exp_direct and not eps and int_literal(total.dim) \
                and is_true(total.keepdim) and _only(total.node, {"dim", "keepdim"}) \
                and not visibly_integer(self.ctx, numerator.operand):
            edits = self._edits(node, numerator, total.dim)
            fix = Fix(SAFE, "Use `softmax(x, dim=d)`", edits) if edits else None
        self.defer(node, names, fix=fix)

    def _edits(self, quotient: ast.BinOp, exp: Call, dim: ast.AST) -> tuple | None:
        """`exp(x) / exp(x).sum(d, keepdim=True)` -> `torch.softmax(x, dim=d)` (`x.softmax(dim=d)`
        when the code wrote `x.exp()`)."""
        edits = self.ctx.edits
        if edits.has_comment(quotient):
            return None
        x, d = edits.argument(exp.operand), edits.argument(dim)
        if exp.method:
            return (edits.replace(quotient, f"{edits.expression(exp.operand)}.softmax(dim={d})"),)
        found = edits.reference("torch.softmax", at=quotient)
        if found is None:
            return None
        spelled, imports = found
        return (edits.replace(quotient, f"{spelled}({x}, dim={d})"), *imports)

    docs = """
## What it does
Finds a softmax written by hand as `exp(x) / exp(x).sum(d)` — any spelling of `torch.exp`,
`x.exp()`, `torch.sum`, `x.sum()`, also through a local variable
(`e = torch.exp(x)` then `e / e.sum(-1, keepdim=True)`), and the masked form
(`e = x.exp() * mask` then `e / e.sum(-1, keepdim=True)`).

## Why is this bad?
`exp` overflows in float32 once its input passes about 88 (about 11 in float16): the quotient
becomes `inf / inf = nan`, and very negative inputs underflow to `0 / 0 = nan`. Logits of that
size are ordinary in attention scores and classifiers late in training. `torch.softmax`
subtracts the maximum first, which leaves the result unchanged and keeps every `exp` in range.

Not reported: a stabilised exponent (`exp(x - x.max(...))`, `exp(x - x.amax(...))`,
`exp(x - logsumexp)`, a name assigned such a difference, `x.clamp(max=...)`), and a visibly
non-positive exponent (`exp(-d / t)`, Gaussian kernels), which cannot overflow.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: a formula that overflows is wrong wherever
  it runs, a test included.

## Example
```python
import torch


def attention_weights(scores):
    e = torch.exp(scores)
    return e / e.sum(-1, keepdim=True)
```

## Use instead
```python
import torch


def attention_weights(scores):
    return torch.softmax(scores, dim=-1)
```

## Fix safety
Safe, and offered only where the rewrite keeps behaviour: the direct form
`exp(x) / exp(x).sum(d, keepdim=True)` with `d` an integer literal. Without `keepdim=True` the
division broadcasts differently from a softmax over `d`; with no `d` the sum runs over all
elements; through a local variable `x` might change between the two lines; `e / (e.sum() + eps)`
is a different function. Those are reported without a fix. `softmax` refuses integer tensors,
which `exp` silently promotes to float: no fix where the input is visibly integer
(`torch.arange(n)`, `x.long()`); logits are floating-point in practice.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.functional.softmax.html
"""

    bad_examples = [
        """
import torch

def attention(q, k, v):
    scores = q @ k.transpose(-2, -1)
    weights = torch.exp(scores) / torch.exp(scores).sum(-1, keepdim=True)  # expect: PTL301
    return weights @ v
""",
        """
import torch

def probs(logits):
    e = logits.exp()
    return e / e.sum(dim=1, keepdim=True)  # expect: PTL301
""",
        """
import torch as T

def normalise(x, eps=1e-8):
    e = T.exp(x)
    return e / (T.sum(e, -1, keepdim=True) + eps)  # expect: PTL301
""",
        """
from torch import exp

def flat(x):
    return exp(x) / exp(x).sum()  # expect: PTL301
""",
        """
import torch

def masked_softmax(scores, mask):
    e = scores.exp() * mask
    safe_div = e / e.sum(-1, keepdim=True).clamp_min(1e-9)  # expect: PTL301
    return safe_div, e / (e.sum(-1, keepdim=True) + 1e-9)  # expect: PTL301
""",
    ]

    good_examples = [
        # stabilised: the maximum is subtracted first
        """
import torch

def softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(-1, keepdim=True)
""",
        """
import torch

def softmax(x):
    z = x - x.amax(-1, keepdim=True)
    e = z.exp()
    return e / e.sum(-1, keepdim=True)
""",
        # a Gaussian kernel: the exponent is never positive
        """
import torch

def gaussian(size, sigma):
    r = torch.arange(size, dtype=torch.float32) - size // 2
    g = torch.exp(-(r ** 2) / (2 * sigma ** 2))
    return g / g.sum()
""",
        # NumPy is not our business
        """
import numpy as np
import torch

def np_softmax(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)
""",
        # a different tensor in the denominator
        """
import torch

def ratio(a, b):
    return torch.exp(a) / torch.exp(b).sum(-1, keepdim=True)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def attn(scores):
    return torch.exp(scores) / torch.exp(scores).sum(-1, keepdim=True)
""",
            after="""
import torch

def attn(scores):
    return torch.softmax(scores, dim=-1)
""",
        ),
        FixExample(
            before="""
import torch

def attn(scores):
    return scores.exp() / scores.exp().sum(dim=1, keepdim=True)
""",
            after="""
import torch

def attn(scores):
    return scores.softmax(dim=1)
""",
        ),
        # an integer input: `exp` promotes it, `softmax` would raise; reported, not rewritten
        FixExample(
            before="""
import torch

w = torch.exp(torch.arange(4)) / torch.exp(torch.arange(4)).sum(0, keepdim=True)
""",
            after="""
import torch

w = torch.exp(torch.arange(4)) / torch.exp(torch.arange(4)).sum(0, keepdim=True)
""",
        ),
        # through a local variable: reported, not rewritten
        FixExample(
            before="""
import torch

def attn(scores):
    e = torch.exp(scores)
    return e / e.sum(-1, keepdim=True)
""",
            after="""
import torch

def attn(scores):
    e = torch.exp(scores)
    return e / e.sum(-1, keepdim=True)
""",
        ),
        FixExample(
            before="""
import torch

def f(x):
    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
""",
            after="""
import torch

def f(x):
    return torch.softmax(x, dim=-1)
""",
            inputs=reduction_inputs("f(x)", "torch.softmax(x.double(), -1)"),
        ),
        FixExample(
            before="""
import torch as T

def f(x):
    return (x * 2).exp() / (x * 2).exp().sum(dim=1, keepdim=True)
""",
            after="""
import torch as T

def f(x):
    return (x * 2).softmax(dim=1)
""",
            inputs=reduction_inputs("f(x)", "torch.softmax((x * 2).double(), 1)", "(3, 5, 2)", "(3, 0, 2)"),
        ),
        FixExample(
            before="""
from torch import exp, sum

def f(x):
    return exp(x) / sum(exp(x), 0, keepdim=True)
""",
            after="""
from torch import exp, sum
import torch

def f(x):
    return torch.softmax(x, dim=0)
""",
            inputs=reduction_inputs("f(x)", "torch.softmax(x.double(), 0)", "(6, 3)", "(0, 3)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.exp() / x.exp().sum(dim=0, keepdim=True)
""",
            after="""
import torch

def f(x):
    return x.softmax(dim=0)
""",
            inputs=reduction_inputs("f(x)", "torch.softmax(x.double(), 0)", "(6, 4)", "(6, 0)"),
        ),
    ]
    unfixable_examples = [
        # without keepdim=True the division broadcasts along another axis: softmax is another function
        """
import torch

def g(x):
    return torch.exp(x) / torch.exp(x).sum(-1)  # expect: PTL301
""",
    ]


def _only(call: ast.Call, allowed: set[str]) -> bool:
    return all(kw.arg in allowed for kw in call.keywords)
