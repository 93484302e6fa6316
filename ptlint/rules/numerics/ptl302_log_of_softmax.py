"""PTL302 log-of-softmax: `log(softmax(x, d))` instead of `log_softmax(x, d)`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample
from ptlint.rules.numerics._helpers import (
    DeferredRule,
    log_call,
    reduction_inputs,
    resolve,
    softmax_call,
)


class LogOfSoftmax(DeferredRule):
    code = "PTL302"
    name = "log-of-softmax"
    message = "`log(softmax(x))` gives -inf where softmax underflows; use `log_softmax(x)`"
    help = "Use `F.log_softmax(x, dim=d)` (or `torch.log_softmax`) instead of the log of a softmax."
    fixable = SAFE  # the direct form only; through a local variable: reported without a fix
    triggers = ("softmax",)

    def visit_Call(self, node: ast.Call) -> None:
        log = log_call(self.ctx, node)
        if log is None:
            return
        names: set[str] = set()
        softmax, direct = resolve(self.ctx, log.operand, softmax_call, names)
        if softmax is None:
            return
        fix = None
        if direct:
            edits = self._edits(node, softmax.node)
            fix = Fix(SAFE, "Use `log_softmax`", edits) if edits else None
        self.defer(node, names, fix=fix)

    def _edits(self, log: ast.Call, softmax: ast.Call) -> tuple | None:
        """`log(softmax(x, d))` / `softmax(x, d).log()` -> `log_softmax(x, d)`, in the namespace
        (or as the method) the code used, with the softmax's own arguments."""
        edits = self.ctx.edits
        if edits.has_comment(log, softmax.func) or edits.has_comment_after(softmax, log):
            return None  # only the softmax's arguments are kept verbatim
        arguments = edits.text_between(softmax.func, softmax)  # "(x, dim=-1)"
        func = softmax.func
        if isinstance(func, ast.Attribute):  # F.softmax / torch.softmax / x.softmax: same receiver
            return (edits.replace(log, f"{edits.expression(func.value)}.log_softmax{arguments}"),)
        qualname = self.ctx.qualname(func)  # `from torch.nn.functional import softmax`
        found = edits.reference(qualname.rsplit(".", 1)[0] + ".log_softmax", at=log)
        if found is None:
            return None
        spelled, imports = found
        return (edits.replace(log, f"{spelled}{arguments}"), *imports)

    docs = """
## What it does
Finds the logarithm of a softmax — `torch.log(F.softmax(x, d))`, `F.softmax(x, d).log()`,
`torch.log(x.softmax(d))`, any import spelling, also through a local variable
(`p = torch.softmax(x, -1)` then `torch.log(p)`).

## Why is this bad?
A softmax probability below about 1e-38 (float32) or 6e-8 (float16) underflows to 0 and its log
is `-inf`; a loss built on it becomes `inf` or `nan` and its gradient `nan`. Computing the
softmax and then the log also rounds twice. `log_softmax` computes `x - logsumexp(x)` directly:
finite, more accurate, and one kernel instead of two.

Not reported: `log(softmax(x) + eps)` or `log(p.clamp(min=eps))` — a deliberate clamp that
stays finite.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: a formula that underflows is wrong wherever
  it runs, a test included.

## Example
```python
import torch
import torch.nn.functional as F


def log_probs(logits):
    return torch.log(F.softmax(logits, dim=-1))
```

## Use instead
```python
import torch
import torch.nn.functional as F


def log_probs(logits):
    return F.log_softmax(logits, dim=-1)
```

## Fix safety
Safe: `log_softmax(x, d)` is mathematically `log(softmax(x, d))`, in the same namespace the code
used (`torch.`, `F.`, or the method `x.log_softmax(d)`), with the same arguments. Only the
direct form is rewritten; through a local variable the probabilities may have other uses, so
it is reported without a fix.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html
"""

    bad_examples = [
        """
import torch
import torch.nn.functional as F

def nll(logits, target):
    logp = torch.log(F.softmax(logits, dim=-1))  # expect: PTL302
    return -logp.gather(1, target[:, None]).mean()
""",
        """
import torch

def entropy(logits):
    p = logits.softmax(-1)
    return -(p * p.log()).sum(-1)  # expect: PTL302
""",
        """
from torch.nn.functional import softmax

def f(x):
    return softmax(x, 1).log()  # expect: PTL302
""",
        """
import torch

def f(x):
    return torch.log(torch.softmax(x, dim=0))  # expect: PTL302
""",
    ]

    good_examples = [
        """
import torch
import torch.nn.functional as F

def f(logits):
    return F.log_softmax(logits, dim=-1)
""",
        # a deliberate clamp: finite, not the same function
        """
import torch

def f(logits, eps=1e-8):
    p = torch.softmax(logits, -1)
    return torch.log(p + eps), torch.log(p.clamp(min=eps))
""",
        # `self.softmax` is some module, not a method of a tensor we can see
        """
import torch

class Head(torch.nn.Module):
    def forward(self, x):
        return torch.log(self.softmax(x))
""",
        # p is reassigned after the log, in a loop: the second round logs another value
        """
import torch

def f(x, ws):
    p = torch.softmax(x, -1)
    out = []
    for w in ws:
        out.append(p.log())
        p = p * w
    return out
""",
        # p is reassigned: we do not know which value reaches the log
        """
import torch

def f(x, w):
    p = torch.softmax(x, -1)
    p = p * w
    return p.log()
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch
import torch.nn.functional as F

logp = torch.log(F.softmax(logits, dim=-1))
""",
            after="""
import torch
import torch.nn.functional as F

logp = F.log_softmax(logits, dim=-1)
""",
        ),
        FixExample(
            before="""
import torch

logp = logits.softmax(-1).log()
q = torch.log(torch.softmax(x, 1))
""",
            after="""
import torch

logp = logits.log_softmax(-1)
q = torch.log_softmax(x, 1)
""",
        ),
        FixExample(
            before="""
from torch.nn.functional import softmax

logp = softmax(x, 1).log()
""",
            after="""
from torch.nn.functional import softmax
import torch

logp = torch.nn.functional.log_softmax(x, 1)
""",
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log(F.softmax(x, dim=-1))
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.log_softmax(x, dim=-1)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), -1)", "(4, 9)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.softmax(1).log()
""",
            after="""
import torch

def f(x):
    return x.log_softmax(1)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), 1)", "(2, 8, 3)", "(2, 0, 3)"),
        ),
        FixExample(
            before="""
from torch.nn.functional import softmax

def f(x):
    return softmax(x, 0).log()
""",
            after="""
from torch.nn.functional import softmax
import torch

def f(x):
    return torch.nn.functional.log_softmax(x, 0)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), 0)", "(8, 2)", "(0, 2)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return torch.log(torch.softmax(x, dim=-1))
""",
            after="""
import torch

def f(x):
    return torch.log_softmax(x, dim=-1)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), -1)", "(5, 5)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.softmax(0).log()
""",
            after="""
import torch

def f(x):
    return x.log_softmax(0)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), 0)", "(6, 4)", "(6, 0)"),
        ),
    ]
    unfixable_examples = [
        # the softmax kept in a variable, used again: not rewritten
        """
import torch

def entropy(x):
    p = torch.softmax(x, -1)
    return (p * p.log()).sum()  # expect: PTL302
""",
    ]
