"""PTL403 data-dependent-branch: `if` / `while` / `a if c else b` on a tensor's value in traced code."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.compiled import WHERE_TRACED_DOC, is_traced, may_be_traced
from ptlint.semantics.values import value_test

RANDOM_FACTORIES = {"torch.rand", "torch.randn", "torch.randint", "torch.rand_like", "torch.bernoulli",
                    "torch.empty"}


def _dynamic_by_design(node: ast.AST, test: ast.AST, ctx) -> bool:
    """Branches whose only remedy is a redesign (JUDGING.md: debatable at best): a random draw
    deciding whether a layer runs (LayerDrop, stochastic depth: `if torch.rand([]) < p:`), or a
    test that skips optional work done by a submodule (`if mask.any(): x = self.block(x)`), where
    running it unconditionally would not be the same program."""
    if _random_draw(test, ctx):
        return True
    body = node.body if isinstance(node.body, list) else [node.body]
    from ptlint.semantics.values import is_module_call

    return any(isinstance(n, ast.Call) and is_module_call(n, ctx) for statement in body for n in ast.walk(statement))


def _random_draw(expr: ast.AST, ctx, hops: int = 2) -> bool:
    """The condition reads a random draw (`torch.rand([])`, or a name assigned one)."""
    for part in ast.walk(expr):
        if isinstance(part, ast.Call) and ctx.qualname(part.func) in RANDOM_FACTORIES:
            return True
        if isinstance(part, ast.Name) and hops:
            values = ctx.assignments(part.id)
            if values and all(isinstance(v, ast.expr) and _random_draw(v, ctx, hops - 1) for v in values):
                return True
    return False


class DataDependentBranch(Rule):
    code = "PTL403"
    needs_compile = True
    name = "data-dependent-branch"
    message = "branching on a tensor's value in code that torch.compile traces: a graph break"
    help = ("Select on the device with `torch.where(cond, a, b)` (or `torch.cond` for larger branches) instead of "
            "a Python `if` on a tensor.")
    cold = False  # not on the error path: a break there costs nothing
    triggers = ("if", "while")

    def visit_If(self, node: ast.AST) -> None:
        if not self.ctx.functions or not may_be_traced(self.ctx):
            return
        found = value_test(node.test, self.ctx, compiling=True)
        if found is not None and is_traced(self.ctx, node) and not _dynamic_by_design(node, found, self.ctx):
            self.report(found)

    visit_While = visit_IfExp = visit_If

    docs = """
## What it does
Finds `if`, `while` and conditional expressions (`a if c else b`) whose condition depends on
the value of a tensor, in code that `torch.compile` traces. The finding spans the part of the
condition that reads the value.

Only conditions that visibly read tensor data are reported: a reduction (`sum`, `max`, `any`,
`all`, `mean`, `norm`, ...) of an argument of the traced function or of a torch op's result,
compared or tested directly (`x.sum() > 0`, `(x > 0).any()`, `t.max() > 1`), a torch op used as
the condition (`torch.all(mask)`, `torch.isnan(x).any()`), and `torch.equal` /
`torch.allclose`.

## Why is this bad?
Dynamo records one straight-line graph; it cannot know which way a branch on data goes without
running it. In torch 2.13 such a branch is a graph break ("Data-dependent branching",
gb0170): the graph ends before the test, Python evaluates it (a device-to-host sync on GPU) and a
new graph starts in the chosen branch. In a loop condition that happens on every iteration.

Not data-dependent, and not reported: shape tests (`x.shape[0] > 1`, `x.size(0)`, `x.dim()`,
`x.ndim`, `x.numel()`, `len(x)`) and a bare name compared with one (`if frames != emb.size(1):`,
where `frames` came out of a submodule's tuple: a size), `x is None`, `self.training`, `isinstance(...)`, Python
configuration attributes (`self.use_bias`, `self.config.x`), `x.dtype == torch.float16`,
`torch.jit.is_scripting()`, `torch.compiler.is_compiling()`, and bare names (`if use_cache:`),
which are usually Python values. `assert torch.all(x >= 0)` compiles without a break in 2.13 and
is not reported either. A test that runs only after `not torch.compiler.is_compiling() and ...`
is never evaluated under Dynamo.

Nor branches whose only remedy is a redesign: a random draw that decides whether a layer runs
(LayerDrop, stochastic depth: `if torch.rand([]) < self.p:`), and a test that skips optional
work done by a submodule (`if mask.any(): x = self.block(x)`), where running the work
unconditionally would not be the same program. What stays is the kind with a fix: a branch whose
unconditional form is equivalent (`if not torch.isfinite(h).all(): h = h.clamp(...)`).

## Where it reports
""" + WHERE_TRACED_DOC + """
## Example
```python
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.abs().max() > 1:
            x = x / x.abs().max()
        return x


model = torch.compile(Gate())
```

## Use instead
```python
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        peak = x.abs().max()
        return torch.where(peak > 1, x / peak, x)


model = torch.compile(Gate())
```
`torch.where` computes both sides and selects on the device; for larger branches use
`torch.cond`.

## Fix safety
No automatic fix: the branch-free form computes both sides.

## References
- https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
- https://docs.pytorch.org/docs/stable/cond.html
- https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html
"""

    bad_examples = [
        """
import torch
from torch import nn

class FocalLoss(nn.Module):  # a loss module the file compiles itself
    def forward(self, logits, target):
        if logits.abs().max() > 50:  # expect: PTL403
            logits = logits.clamp(-50, 50)
        return (logits - target).pow(2).mean()

def build():
    criterion = FocalLoss()
    return torch.compile(criterion)

class DiceLoss(nn.Module):
    def forward(self, probs, target):
        if probs.sum() == 0:  # expect: PTL403
            return probs.sum()
        return 1 - (probs * target).sum() / probs.sum()

dice = torch.compile(DiceLoss())

class Glossary(nn.Module):  # (not a loss module: `Gloss` is one word)
    def forward(self, x):
        if x.abs().max() > 1:  # expect: PTL403
            x = x / 2
        return x

class Gate(nn.Module):
    def forward(self, x, mask=None):
        if x.abs().max() > 1:  # expect: PTL403
            x = x / 2
        if mask is not None and (mask == 0).all():  # expect: PTL403
            return x
        y = x * 2 if x.sum() > 0 else x  # expect: PTL403
        while torch.any(y > 10):  # expect: PTL403
            y = y / 2
        if x.sum() > x.size(0):  # expect: PTL403
            y = y / 2
        return y
""",
        """
import torch

@torch.compile
def safe_log(t):
    if torch.isnan(t).any():  # expect: PTL403
        raise ValueError("nan input")
    s = torch.softmax(t, -1)
    if not torch.allclose(s.sum(-1), torch.ones(())):  # expect: PTL403
        s = s / s.sum(-1, keepdim=True)
    peak = s.max()
    if peak > 0.5:  # expect: PTL403
        return s
    return torch.log(s)
""",
    ]

    good_examples = [
        # a loss module in a project that compiles its model: the loop calls it on the compiled
        # model's output, in eager mode
        """
import torch
import torch.nn as nn

class PixLoss(nn.Module):
    def forward(self, pred, gt):
        loss = (pred - gt).abs().mean()
        if loss > 10:
            loss = loss.clamp(max=10)
        return loss

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)

model = torch.compile(Net())
criterion = PixLoss()
""",
        # a name beside a size is a size: compared as Python ints
        """
import torch
from torch import nn

class Embed(nn.Module):
    def forward(self, pixels):
        tokens, frames = self.patches(pixels)
        if frames != self.time.size(1) or len(tokens) > tokens.shape[1]:
            tokens = tokens[:, :frames]
        return tokens
""",
        # dynamic by design: LayerDrop, and optional work done by a submodule
        """
import torch
from torch import nn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ffn = nn.Linear(8, 8)

    def forward(self, x, mask):
        if self.training and torch.rand([]) < 0.1:
            return x
        dropped = torch.rand(1)
        if dropped < 0.2:
            return x
        if mask.any():
            x = x + self.ffn(x)
        return x
""",
        # shapes, None tests, modes, configuration and Python arguments
        """
import torch
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x, mask=None, scale: float = 1.0, use_cache=False):
        if x.shape[0] > 1 and x.dim() == 4 and x.ndim > 2 and x.numel() and len(x) > 0:
            x = x + 1
        if mask is not None and self.training and isinstance(scale, float):
            x = x * mask
        if self.use_bias and self.config.residual and x.size(-1) == self.dim:
            x = x + self.bias
        if scale != 1.0 or use_cache or x.dtype == torch.float16:
            x = x * scale
        if torch.jit.is_scripting() or torch.compiler.is_compiling():
            pass
        assert torch.all(x >= 0)
        return x
""",
        # values of unknown origin (submodule outputs, attributes) are not assumed to be tensors
        """
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x):
        h = self.encoder(x)
        if self.threshold.max() > 0 and h.max() > 0:
            return h
        return x
""",
        # outside traced code
        """
import torch

def train_step(model, x):
    loss = model(x)
    if torch.isnan(loss).any():
        return None
    while loss.item() > 1:
        loss = loss / 2
    return loss
""",
        # the data test never runs under Dynamo
        """
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling() and torch.isnan(x).any():
            raise ValueError("nan")
        if not torch.compiler.is_compiling():
            if x.sum() > 0:
                print("positive")
        return x
""",
    ]
