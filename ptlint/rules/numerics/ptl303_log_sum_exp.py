"""PTL303 log-sum-exp: `log(sum(exp(x), d))` instead of `logsumexp(x, d)`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample, FixInput
from ptlint.rules.numerics._helpers import (
    DeferredRule,
    exp_call,
    is_true,
    log_call,
    reduction_inputs,
    resolve,
    stabilised,
    sum_call,
)


def _plain_dim(node: ast.AST | None) -> bool:
    """An explicit dim that `logsumexp` takes the same way: not None, not an empty tuple."""
    if node is None or (isinstance(node, ast.Constant) and node.value is None):
        return False
    return not (isinstance(node, (ast.Tuple, ast.List)) and not node.elts)


class LogSumExp(DeferredRule):
    code = "PTL303"
    name = "log-sum-exp"
    message = "`log(sum(exp(x)))` overflows for large inputs; use `logsumexp(x, dim)`"
    help = "Use `torch.logsumexp(x, dim=d)`."
    fixable = "sometimes"
    triggers = ("exp",)

    def visit_Call(self, node: ast.Call) -> None:
        log = log_call(self.ctx, node)
        if log is None or not self.ctx.imports_torch():
            return
        names: set[str] = set()
        total, sum_direct = resolve(self.ctx, log.operand, sum_call, names)
        if total is None:
            return
        exp, exp_direct = resolve(self.ctx, total.operand, exp_call, names)
        if exp is None or stabilised(self.ctx, exp.operand):
            return
        fix = None
        call = total.node
        positional = 1 if total.method else 2  # the tensor (for torch.sum) and dim
        keepdim_ok = total.keepdim is None or isinstance(total.keepdim, ast.Constant)
        if sum_direct and exp_direct and _plain_dim(total.dim) and keepdim_ok \
                and all(kw.arg in {"dim", "keepdim"} for kw in call.keywords) and len(call.args) <= positional:
            edits = self._edits(node, exp, total)
            fix = Fix(SAFE, "Use `logsumexp(x, dim)`", edits) if edits else None
        self.defer(node, names, fix=fix)

    def _edits(self, log: ast.Call, exp, total) -> tuple | None:
        """`log(sum(exp(x), d))` -> `torch.logsumexp(x, d)` (`x.logsumexp(d)` when the code wrote
        `x.exp()`), keeping `keepdim=True`."""
        edits = self.ctx.edits
        if edits.has_comment(log):
            return None
        arguments = edits.argument(total.dim) + (", keepdim=True" if is_true(total.keepdim) else "")
        if exp.method:
            return (edits.replace(log, f"{edits.expression(exp.operand)}.logsumexp({arguments})"),)
        found = edits.reference("torch.logsumexp", at=log)
        if found is None:
            return None
        spelled, imports = found
        return (edits.replace(log, f"{spelled}({edits.argument(exp.operand)}, {arguments})"), *imports)

    docs = """
## What it does
Finds a log-sum-exp written by hand — `torch.log(torch.sum(torch.exp(x), d))`,
`x.exp().sum(d).log()`, any mix of spellings, also through a local variable
(`s = torch.exp(x).sum(-1)` then `torch.log(s)`).

## Why is this bad?
`exp` overflows in float32 once its input passes about 88 (about 11 in float16), so the result is
`inf` although the true value is a moderate number near `max(x)`; very negative inputs underflow
to `log(0) = -inf`. `torch.logsumexp` subtracts the maximum first and is exact in both cases.

Not reported: a stabilised exponent (`exp(x - m)`, `x.clamp(max=...)`) or a visibly non-positive
one.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: a formula that overflows is wrong wherever
  it runs, a test included.

## Example
```python
import torch


def log_partition(scores):
    return torch.log(torch.exp(scores).sum(dim=-1))
```

## Use instead
```python
import torch


def log_partition(scores):
    return torch.logsumexp(scores, dim=-1)
```

## Fix safety
Safe where the rewrite keeps behaviour: the direct form with an explicit `dim` becomes
`torch.logsumexp(x, dim)` (or `x.logsumexp(dim)` for the method spelling), carrying `keepdim=True`
over when the sum had it. A sum without `dim` (over all elements), with a `dtype`, or through a
local variable is reported without a fix.

## References
- https://pytorch.org/docs/stable/generated/torch.logsumexp.html
"""

    bad_examples = [
        """
import torch

def lse(scores):
    return torch.log(torch.exp(scores).sum(dim=-1))  # expect: PTL303
""",
        """
import torch

def free_energy(logits):
    return -logits.exp().sum(1, keepdim=True).log()  # expect: PTL303
""",
        """
import torch as T

def partition(x):
    z = T.sum(T.exp(x), 0)
    return T.log(z)  # expect: PTL303
""",
        """
import torch

def total(x):
    return torch.log(torch.exp(x).sum())  # expect: PTL303
""",
    ]

    good_examples = [
        """
import torch

def lse(x):
    m = x.amax(-1, keepdim=True)
    return m.squeeze(-1) + torch.log(torch.exp(x - m).sum(-1))
""",
        """
import torch

def lse(x):
    return torch.logsumexp(x, dim=-1)
""",
        # NumPy and the math module are not torch
        """
import math
import numpy as np
import torch

def f(x, xs):
    return np.log(np.sum(np.exp(x))), math.log(sum(math.exp(v) for v in xs))
""",
        # a log of a sum of something else
        """
import torch

def f(x):
    return torch.log(x.sum(-1))
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

lse = torch.log(torch.exp(scores).sum(dim=-1))
""",
            after="""
import torch

lse = torch.logsumexp(scores, -1)
""",
        ),
        FixExample(
            before="""
import torch

lse = scores.exp().sum(1, keepdim=True).log()
other = torch.log(torch.sum(torch.exp(x), (1, 2)))
""",
            after="""
import torch

lse = scores.logsumexp(1, keepdim=True)
other = torch.logsumexp(x, (1, 2))
""",
        ),
        # no dim: the sum runs over all elements; reported, not rewritten
        FixExample(
            before="""
import torch

lse = torch.log(torch.exp(scores).sum())
""",
            after="""
import torch

lse = torch.log(torch.exp(scores).sum())
""",
        ),
        FixExample(
            before="""
import torch

def f(x):
    return torch.log(torch.exp(x).sum(dim=-1))
""",
            after="""
import torch

def f(x):
    return torch.logsumexp(x, -1)
""",
            inputs=(
                *reduction_inputs("f(x)", "torch.logsumexp(x.double(), -1)"),
                # `exp` promotes an integer tensor to float, and so does `logsumexp`
                FixInput("an integer tensor", "x = torch.arange(12).reshape(3, 4)\nresult = f(x)\n",
                         check="close(before, after, 1e-5)"),
            ),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.exp().sum(1, keepdim=True).log()
""",
            after="""
import torch

def f(x):
    return x.logsumexp(1, keepdim=True)
""",
            inputs=reduction_inputs("f(x)", "torch.logsumexp(x.double(), 1, keepdim=True)", "(3, 6, 2)", "(3, 0, 2)"),
        ),
        FixExample(
            before="""
from torch import exp, log, sum as tsum

def f(x):
    return log(tsum(exp(x), (1, 2)))
""",
            after="""
from torch import exp, log, sum as tsum
import torch

def f(x):
    return torch.logsumexp(x, (1, 2))
""",
            inputs=reduction_inputs("f(x)", "torch.logsumexp(x.double(), (1, 2))", "(2, 3, 4)", "(2, 0, 4)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.exp().sum(0, keepdim=True).log()
""",
            after="""
import torch

def f(x):
    return x.logsumexp(0, keepdim=True)
""",
            inputs=reduction_inputs("f(x)", "torch.logsumexp(x.double(), 0, keepdim=True)", "(6, 4)", "(6, 0)"),
        ),
    ]
    unfixable_examples = [
        # a sum with its own dtype: logsumexp has none
        """
import torch

def g(x):
    return torch.log(torch.exp(x).sum(-1, dtype=torch.float64))  # expect: PTL303
""",
    ]
