"""PTL305 log-exp-precision: `log(1 + x)`, `exp(x) - 1`, `log(1 + exp(x))` and log-cosh by hand."""

from __future__ import annotations

import ast

from ptlint.rule import SAFE, Edit, Fix, FixExample

from ._numerics import (Call, DeferredRule, exp_call, integer_valued, is_one, log1p_call, log_call, one_hop,
                        same, torch_call)

MESSAGES = {
    "log1p": "`log(1 + x)` rounds `1 + x` and loses `x` when it is small; use `log1p(x)`",
    "expm1": "`exp(x) - 1` cancels and loses precision when `x` is small; use `expm1(x)`",
    "softplus": "`log(1 + exp(x))` overflows to inf once `x` passes ~88 in float32 (~11 in float16); "
                "use `F.softplus(x)`",
    "logcosh": "log-cosh written with `cosh` / `exp` overflows to inf once |x| passes ~89 in float32; use "
               "`|x| + F.softplus(-2 * |x|) - log(2)`",
}


def _one_plus(node: ast.AST) -> ast.expr | None:
    """`1 + x` / `x + 1` / `1.0 + x` -> x."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        if is_one(node.left) and not is_one(node.right):
            return node.right
        if is_one(node.right) and not is_one(node.left):
            return node.left
    return None


def _negation(a: ast.AST, b: ast.AST) -> bool:
    """`b` is `-a` (or `a` is `-b`)."""
    return any(isinstance(y, ast.UnaryOp) and isinstance(y.op, ast.USub) and same(y.operand, x)
               for x, y in ((a, b), (b, a)))


def _halved(node: ast.AST) -> ast.AST:
    """`(s) / 2`, `s * 0.5`, `0.5 * s` -> s; anything else unchanged."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div) and isinstance(node.right, ast.Constant) and node.right.value == 2:
            return node.left
        if isinstance(node.op, ast.Mult):
            for half, other in ((node.left, node.right), (node.right, node.left)):
                if isinstance(half, ast.Constant) and half.value == 0.5:
                    return other
    return node


# Names of counts: `log(1 + count)`, `log(dur + 1)` compress a count, which is never small.
COUNT_WORDS = {"count", "counts", "cnt", "dur", "durs", "duration", "durations", "freq", "freqs", "frequency",
               "frequencies", "length", "lengths", "lens", "num"}


def _magnitude(ctx, node: ast.AST, depth: int = 0) -> bool:
    """`x.abs()`, `torch.abs(x)`, `|d| / s`, a local assigned one, or a count (`dur`,
    `num_tokens`): `log(1 + x)` then compresses a magnitude (a symlog, log-spaced coordinates,
    log-counts), a transform read at absolute, not relative, precision."""
    if depth > 3:
        return False
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "abs" and ctx.qualname(node.func) is None:
            return True
        return ctx.qualname(node.func) in ("torch.abs", "torch.absolute")
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mult)):
        return _magnitude(ctx, node.left, depth + 1)
    if isinstance(node, ast.Name):
        words = {node.id.lower(), *node.id.lower().split("_")}
        if words & COUNT_WORDS:
            return True
        value = one_hop(ctx, node)
        return value is not None and _magnitude(ctx, value, depth + 1)
    return False


ROUNDING_CALLS = {"round", "floor", "ceil", "trunc", "long", "int"}


def _precision_unused(ctx, stack: list[ast.AST], node: ast.AST) -> bool:
    """The result is rounded to an integer (`torch.round(torch.exp(d) - 1).long()`) or only
    compared (`(ratio - 1).abs() > clip`): the digits `log1p` / `expm1` would keep are thrown
    away."""
    for parent in reversed(stack):
        if isinstance(parent, ast.Compare):
            return True
        if isinstance(parent, ast.Call):
            name = parent.func.attr if isinstance(parent.func, ast.Attribute) else \
                parent.func.id if isinstance(parent.func, ast.Name) else ""
            if name in ROUNDING_CALLS:
                return True
            if name != "abs":
                return False
        elif isinstance(parent, ast.Attribute):
            if parent.attr in ROUNDING_CALLS:
                return True
            if parent.attr != "abs":
                return False
        elif not isinstance(parent, ast.UnaryOp):
            return False
    return False


def _replace_grouped(edits, start: ast.AST, end: ast.AST, text: str) -> Edit:
    """Replace `start`..`end` with `text` (a call), and the grouping parentheses right around
    it with it: `alpha * (torch.exp(h) - 1.0)` -> `alpha * torch.expm1(h)`. Parentheses of a
    call or a subscript (`f(torch.exp(h) - 1)`) stay."""
    source = edits.source.text
    first, last = edits.offset(edits.start(start)), edits.offset(edits.end(end))
    before = source[:first - 1].rstrip()
    if first >= 1 and source[first - 1] == "(" and source[last:last + 1] == ")" \
            and not (before and (before[-1].isalnum() or before[-1] in "_)]")):
        (line, column), (end_line, end_column) = edits.start(start), edits.end(end)
        return Edit(line, column - 1, end_line, end_column + 1, text)
    return edits.replace(start, text, end)


class LogExpPrecision(DeferredRule):
    code = "PTL305"
    name = "log-exp-precision"
    message = MESSAGES["log1p"]
    fixable = "sometimes"  # safe where offered; the log-cosh forms and forms through a local: no fix
    triggers = ("log(", "log1p(", "exp(")

    def visit_Call(self, node: ast.Call) -> None:
        ctx = self.ctx
        log = log_call(ctx, node)
        if log is not None:
            names: set[str] = set()
            operand = log.operand
            value = one_hop(ctx, operand)
            direct = True
            if value is not None and self._recognise_log_operand(value) is not None:
                names.add(operand.id)
                operand, direct = value, False
            found = self._recognise_log_operand(operand)
            if found is None:
                return
            kind, x = found
            if kind in ("log1p", "expm1") and _precision_unused(ctx, ctx.stack, node):
                return
            fix = self._fix(kind, node, log, x) if direct else None
            self.defer(node, names, message=MESSAGES[kind], fix=fix)
            return
        log1p = log1p_call(ctx, node)
        if log1p is not None:  # log1p(exp(x)): softplus
            exp = exp_call(ctx, log1p.operand)
            if exp is not None:
                fix = self._softplus_fix(node, exp.operand)
                self.report(node, MESSAGES["softplus"], fix=fix)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not (isinstance(node.op, ast.Sub) and is_one(node.right)):
            return
        ctx = self.ctx
        names: set[str] = set()
        left = node.left
        start: ast.AST = node  # where the reported span (and the rewrite) starts
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Add):
            left = start = left.right  # `a + exp(x) - 1` is `(a + exp(x)) - 1`: the exp(x) - 1 part
        exp = exp_call(ctx, left)
        direct = True
        if exp is None:
            if start is not node:
                return
            value = one_hop(ctx, node.left)
            exp = exp_call(ctx, value) if value is not None else None
            if exp is None:
                return
            names.add(node.left.id)
            direct = False
        if integer_valued(ctx, exp.operand) or not ctx.imports_torch():
            return
        if _precision_unused(ctx, ctx.stack, node):
            return
        fix = self._expm1_fix(start, node, exp) if direct else None
        self.defer(start, names, message=MESSAGES["expm1"], fix=fix, end_node=node)

    # -- recognising -----------------------------------------------------------------------
    def _recognise_log_operand(self, operand: ast.AST) -> tuple[str, ast.AST] | None:
        """("softplus", x) for `1 + exp(x)`, ("log1p", x) for `1 + x`, ("logcosh", x) for
        `cosh(x)` and `(exp(x) + exp(-x)) / 2`."""
        ctx = self.ctx
        x = _one_plus(operand)
        if x is not None:
            exp = exp_call(ctx, x)
            if exp is not None:
                return "softplus", exp.operand
            if integer_valued(ctx, x) or _magnitude(ctx, x):
                return None
            return "log1p", x
        cosh = torch_call(ctx, operand, {"torch.cosh"}, "cosh", False)
        if cosh is not None and (cosh.method or len(cosh.node.args) == 1):
            return "logcosh", cosh.operand
        total = _halved(operand)
        if isinstance(total, ast.BinOp) and isinstance(total.op, ast.Add):
            left, right = exp_call(ctx, total.left), exp_call(ctx, total.right)
            if left is not None and right is not None and _negation(left.operand, right.operand):
                return "logcosh", left.operand
        return None

    # -- fixes -----------------------------------------------------------------------------
    def _fix(self, kind: str, log: ast.Call, call: Call, x: ast.AST) -> Fix | None:
        if kind == "softplus":
            return self._softplus_fix(log, x)
        if kind != "log1p":
            return None
        edits = self.ctx.edits
        if edits.has_comment(log):
            return None
        if call.method:  # (1 + x).log() -> x.log1p()
            edit = edits.replace(log, f"{edits.expression(x)}.log1p()")
            return Fix(SAFE, "Use `log1p(x)`", (edit,))
        func = log.func
        if isinstance(func, ast.Attribute):  # torch.log(1 + x) -> torch.log1p(x), same namespace
            return Fix(SAFE, "Use `log1p(x)`", (edits.replace(log, f"{edits.text(func.value)}.log1p({edits.text(x)})"),))
        spelled, imports = edits.reference("torch.log1p")
        return Fix(SAFE, "Use `log1p(x)`", (edits.replace(log, f"{spelled}({edits.text(x)})"), *imports))

    def _softplus_fix(self, node: ast.AST, x: ast.AST) -> Fix | None:
        edits = self.ctx.edits
        if edits.has_comment(node) or integer_valued(self.ctx, x):
            return None  # softplus refuses integer tensors, which exp promotes to float
        spelled, imports = edits.reference("torch.nn.functional.softplus")
        return Fix(SAFE, "Use `F.softplus(x)`", (edits.replace(node, f"{spelled}({edits.text(x)})"), *imports))

    def _expm1_fix(self, start: ast.AST, node: ast.BinOp, exp: Call) -> Fix | None:
        """`exp(x) - 1` (from `start` to the end of `node`) -> `expm1(x)`."""
        edits = self.ctx.edits
        if edits.has_comment(start, node):
            return None
        imports: tuple = ()
        if exp.method:  # x.exp() - 1 -> x.expm1()
            text = f"{edits.expression(exp.operand)}.expm1()"
        elif isinstance(exp.node.func, ast.Attribute):
            text = f"{edits.text(exp.node.func.value)}.expm1({edits.text(exp.operand)})"
        else:
            spelled, imports = edits.reference("torch.expm1")
            text = f"{spelled}({edits.text(exp.operand)})"
        return Fix(SAFE, "Use `expm1(x)`", (_replace_grouped(edits, start, node, text), *imports))

    docs = """
## What it does
Finds `log(1 + x)`, `exp(x) - 1`, `log(1 + exp(x))` and a log-cosh written by hand, where `log1p`,
`expm1` and `F.softplus` are exact. Four formulas, in every spelling (`torch.log(...)`,
`x.log()`, `from torch import log`), also through a local variable (`d = 1 + x` then
`torch.log(d)`):
- `log(1 + x)` → `log1p(x)`;
- `exp(x) - 1` → `expm1(x)`;
- `log(1 + exp(x))`, `log1p(exp(x))` → `F.softplus(x)`;
- `log(cosh(x))` and `log((exp(x) + exp(-x)) / 2)`, a log-cosh (reported without a fix).

## Why is this bad?
`1 + x` rounds to 1 when |x| is below about 6e-8 in float32 (5e-4 in float16, 4e-3 in bfloat16), so
`log(1 + x)` returns 0 instead of about `x`, and it carries only the absolute error of `1 + x` well
above that; `exp(x) - 1` cancels the same way near 0 (a DPM-Solver step computes `exp(h) - 1` with
small `h`). `log1p` and `expm1` are exact there.

`exp(x)` overflows to inf once `x` passes about 88.7 in float32 and bfloat16 (about 11.1 in float16),
so `log(1 + exp(x))` becomes inf — and its gradient nan — although the answer is about `x`; for very
negative `x` it returns 0 where softplus returns `exp(x)`. `F.softplus` returns `x` past its threshold
(20) and `log1p(exp(x))` below it. The same overflow makes a log-cosh by hand inf for |x| above about
89 (about 12 in float16): `log(cosh(x)) = |x| + softplus(-2|x|) - log(2)` stays finite.

Not reported: an `x` that is visibly integer-valued (`torch.floor(...)`, `.long()`, `torch.arange(n)`,
an integer literal), where `1 + x` and `exp(x) - 1` round nothing away; a result that is rounded to
an integer or only compared (`torch.round(torch.exp(d) - 1)`, `(ratio - 1).abs() > clip`), which
throws the extra digits away; `log(1 + |x|)` (also `|d| / s`, through a local) and `log(1 + count)`
(names of counts, durations, lengths), a magnitude compressed for features or targets (symlog,
log-spaced coordinates, log-counts), read at absolute precision; `log1p(-exp(x))` (a correct
`log(1 - exp(x))`); NumPy and `math`.

## Example
```python
y = torch.log(1 + torch.exp(z))
r = torch.exp(h) - 1
d = torch.log(1 + p)
```

## Use instead
```python
y = F.softplus(z)
r = torch.expm1(h)
d = torch.log1p(p)
```

## Fix safety
Safe: the replacements are the same functions, computed exactly; the behaviour tests show equal
results on ordinary inputs (float32, float16, bfloat16) and finite results where the original gives
inf. `log1p` and `expm1` are written in the namespace (or as the method) the code used;
`F.softplus` in the module's spelling of `torch.nn.functional`, adding `import torch` when the module
has none. `F.softplus` returns `x` itself above its threshold of 20, where `log1p(exp(x))` differs
from `x` by less than 2e-9. Not fixed: forms through a local variable (the intermediate value may be
used elsewhere), a visibly integer input to softplus (it refuses integers, which `exp` promotes), the
log-cosh forms (the stable rewrite is a different expression), and a span holding a comment.

## References
- https://pytorch.org/docs/stable/generated/torch.log1p.html
- https://pytorch.org/docs/stable/generated/torch.expm1.html
- https://pytorch.org/docs/stable/generated/torch.nn.functional.softplus.html
"""

    bad_examples = [
        """
import torch
import torch.nn.functional as F

def losses(z, p, h):
    a = torch.log(1 + torch.exp(z))  # expect: PTL305
    b = torch.log(1.0 + p)  # expect: PTL305
    c = torch.exp(h) - 1  # expect: PTL305
    d = torch.log1p(torch.exp(-z))  # expect: PTL305
    return a, b, c, d
""",
        # method spellings, and the other operand order
        """
import torch

def f(x, y):
    a = (x + 1).log()  # expect: PTL305
    b = x.exp().log1p()  # expect: PTL305
    c = (y * 2).exp() - 1.0  # expect: PTL305
    return a, b, c
""",
        # from-imports
        """
from torch import exp, log

def g(x):
    return log(exp(x) + 1)  # expect: PTL305
""",
        # log-cosh, both forms (no fix)
        """
import torch

def log_cosh(pred, target):
    d = pred - target
    a = torch.log((torch.exp(d) + torch.exp(-d)) / 2)  # expect: PTL305
    b = torch.log(torch.cosh(d))  # expect: PTL305
    return a + d.cosh().log()  # expect: PTL305
""",
        # through a local variable
        """
import torch

def entropy_bonus(p):
    q = 1 + p
    return torch.log(q)  # expect: PTL305
""",
        # a softplus guarded by torch.where still computes the overflowing branch
        """
import torch

def gate(g):
    return torch.where(g > 20.0, g, torch.log(1.0 + torch.exp(g)))  # expect: PTL305
""",
        # test code is checked too
        """
import torch

def test_softplus():
    x = torch.randn(3)
    assert torch.log(1 + torch.exp(x)).shape == x.shape  # expect: PTL305
""",
    ]

    good_examples = [
        """
import torch
import torch.nn.functional as F

def f(z, p, h):
    return F.softplus(z), torch.log1p(p), torch.expm1(h), torch.log1p(-torch.exp(h))
""",
        # integer-valued: nothing to gain
        """
import torch

def scaling(positions, m, beta):
    return 1 + beta * torch.log(1 + torch.floor(positions / m)), torch.log(1 + torch.arange(5)), torch.exp(2) - 1
""",
        # the digits are thrown away: rounded, compared; a compressed magnitude
        """
import torch

def durations(log_dur, log_ratio, clip, coords):
    n = torch.round(torch.exp(log_dur) - 1).long()
    ratio = torch.exp(log_ratio)
    clipped = (torch.abs(ratio - 1) > clip).float().mean()
    table = torch.sign(coords) * torch.log(1.0 + coords.abs())
    gap = torch.abs(coords[:, None] - coords[None])
    relative = torch.log(gap / (coords + 1e-5) + 1.0)
    return n, clipped, table, (log_dur.exp() - 1).floor(), relative, torch.log(word_counts + 1)
""",
        # NumPy and math are not torch
        """
import math
import numpy as np

def f(x):
    return np.log(1 + x), math.log(1 + x), np.exp(x) - 1, math.exp(x) - 1
""",
        # other formulas
        """
import torch

def f(x):
    return torch.log(2 + x), torch.exp(x) - 2, torch.log(1 - x), torch.log(x * (1 + x)), torch.exp(x - 1)
""",
        # the local is reassigned: unknown value at the log
        """
import torch

def f(x, w):
    q = 1 + x
    q = q * w
    return torch.log(q)
""",
    ]

    fix_examples = [
        # grouping parentheses around the difference go with it; a call's own parentheses stay
        FixExample(
            before="""
import torch

x_t = ratio * sample - (alpha_t * (torch.exp(-h) - 1.0)) * d0
r = torch.sqrt(torch.exp(2 * h) - 1.0) * f(torch.exp(h) - 1)
""",
            after="""
import torch

x_t = ratio * sample - (alpha_t * torch.expm1(-h)) * d0
r = torch.sqrt(torch.expm1(2 * h)) * f(torch.expm1(h))
""",
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(z, p, h):
    return torch.log(1 + torch.exp(z)), torch.log(p + 1), torch.exp(h) - 1
""",
            after="""
import torch
import torch.nn.functional as F

def f(z, p, h):
    return F.softplus(z), torch.log1p(p), torch.expm1(h)
""",
        ),
        FixExample(
            before="""
import torch

y = (1 + x * x).log() + (x / 2).exp() - 1 + x.exp().log1p()
""",
            after="""
import torch

y = (x * x).log1p() + (x / 2).expm1() + torch.nn.functional.softplus(x)
""",
        ),
        FixExample(
            before="""
from torch import exp, log

y = log(1 + exp(-x)) + log(1 + x) + (exp(x) - 1)
""",
            after="""
from torch import exp, log
import torch

y = torch.nn.functional.softplus(-x) + torch.log1p(x) + torch.expm1(x)
""",
        ),
        FixExample(
            before="""
import torch as T
from torch.nn import functional as fn

y = T.where(g > 20.0, g, T.log(1.0 + T.exp(g)))
""",
            after="""
import torch as T
from torch.nn import functional as fn

y = T.where(g > 20.0, g, fn.softplus(g))
""",
        ),
    ]

    unfixable_examples = [
        """
import torch

def f(d, p):
    q = 1 + p
    e = torch.exp(d)
    a = torch.log(torch.cosh(d))  # expect: PTL305
    b = torch.log(q)  # expect: PTL305
    c = e - 1  # expect: PTL305
    return a, b, c, torch.log(1 + torch.exp(torch.arange(3)))  # expect: PTL305
""",
    ]
