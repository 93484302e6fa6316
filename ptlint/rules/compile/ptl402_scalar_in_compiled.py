"""PTL402 scalar-in-compiled: `.item()`, `.tolist()`, `.numpy()`, `float(t)` / `int(t)` / `bool(t)` in traced code."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.compiled import WHERE_TRACED_DOC, is_traced, may_be_traced
from ptlint.semantics.values import (
    HOST_DATA_CONSTRUCTORS,
    SCALAR_CONVERSIONS,
    STRONG,
    not_a_tensor,
    tensor_kind,
)

SCALAR_METHODS = {"item", "tolist", "numpy"}
# Calls whose arguments are sizes, counts or positions.
SIZE_TAKERS = {"split", "split_with_sizes", "narrow", "view", "reshape", "expand", "repeat", "repeat_interleave",
               "range", "arange", "zeros", "ones", "empty", "full", "randn", "rand", "new_zeros", "new_ones",
               "new_empty", "new_full", "tensor_split", "chunk", "unflatten", "interpolate", "pad"}


class ScalarInCompiled(Rule):
    code = "PTL402"
    needs_compile = True
    name = "scalar-in-compiled"
    message = "{what} in code that torch.compile traces reads a tensor value back to Python: a graph break"
    help = "Keep the value a tensor (`x / x.max()`), or read it outside the compiled function."
    default = False  # most reads on real code are values the code needs (see the page); select it to use it
    cold = False  # not on the error path: a break there costs nothing
    triggers = (".item(", ".tolist(", ".numpy(", "float(", "int(", "bool(")

    def visit_Call(self, node: ast.Call) -> None:
        if not self.ctx.functions or not may_be_traced(self.ctx):
            return
        func = node.func
        what = None
        if isinstance(func, ast.Attribute) and func.attr in SCALAR_METHODS and not node.args and not node.keywords:
            if not not_a_tensor(func.value, self.ctx) and not self._straight_back_to_torch(node):
                what = f"`.{func.attr}()`"
        elif isinstance(func, ast.Name) and func.id in SCALAR_CONVERSIONS and len(node.args) == 1 and not node.keywords \
                and not self.ctx.names.is_local(func.id):
            # only on what is visibly a tensor: `int(x.shape[0])`, `float(self.scale)` are fine
            if tensor_kind(node.args[0], self.ctx) == STRONG:
                what = f"`{func.id}()` of a tensor"
        if what is not None and is_traced(self.ctx, node) and not self._checked_scalars() \
                and not self._used_as_size_or_key(node):
            self.report(node, self.message.format(what=what))

    def _used_as_size_or_key(self, node: ast.Call) -> bool:
        """The number sizes something (`x.split(lengths.tolist())`, `x[: n.item()]`,
        `range(k.item())`) or picks a Python object (`names[int(i.item())]`): the code needs it
        on the host, and the only remedy is a redesign (PTL404's territory), not this line."""
        child = node
        for ancestor in reversed(self.ctx.stack):
            if isinstance(ancestor, ast.Call) and isinstance(ancestor.func, ast.Name) \
                    and ancestor.func.id in ("int", "float", "list", "tuple") and child in ancestor.args:
                child = ancestor
                continue
            if isinstance(ancestor, (ast.Slice, ast.Tuple, ast.List)):
                child = ancestor
                continue
            if isinstance(ancestor, ast.Subscript):
                return ancestor.slice is child
            if isinstance(ancestor, ast.Call) and child is not ancestor.func:
                name = ancestor.func.attr if isinstance(ancestor.func, ast.Attribute) else \
                    getattr(ancestor.func, "id", "")
                return name in SIZE_TAKERS
            return False
        return False

    def _checked_scalars(self) -> bool:
        """The function states facts about its scalars with `torch._check(...)`: the idiom for
        data-dependent values under `torch.export` / `capture_scalar_outputs`, written on purpose."""
        function = self.ctx.function
        key = ("torch-check", id(function))
        if key not in self.ctx.memo:
            self.ctx.memo[key] = "_check" in self.ctx.source.text and any(
                isinstance(n, ast.Call) and (self.ctx.qualname(n.func) or "").startswith("torch._check")
                for n in ast.walk(function))
        return self.ctx.memo[key]

    def _straight_back_to_torch(self, node: ast.Call) -> bool:
        """For `.numpy()`: True unless its array visibly leaves what Dynamo can trace — passed to
        a function that is neither NumPy nor torch (SciPy, PIL, a resize helper), or iterated
        over in Python. NumPy code and a round trip back to torch trace without a break."""
        if node.func.attr != "numpy":
            return False
        parent = self.ctx.parent(node)
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            return False
        if isinstance(parent, ast.Call) and node in parent.args:
            target = self.ctx.qualname(parent.func) or ""
            return target in HOST_DATA_CONSTRUCTORS or target.startswith("numpy.")
        return True

    docs = """
## What it does
Finds `.item()`, `.tolist()` and `.numpy()`, and `float()` / `int()` / `bool()` applied to something that is
visibly a tensor (the result of a torch op or a reduction such as `x.sum()`), in code that
`torch.compile` traces.

Off by default: many reads inside `forward` are values the code needs on the host — sizes and
positions built per image, a read kept on purpose to pick a code path for every layer,
configurations that only some users choose — or sit in wrappers and export-only modules that are
never compiled. Select it (`--select PTL402`) for a model you compile with `fullgraph=True`;
`ptlint explain` shows which reads really break the graph.

## Why is this bad?
These turn a tensor's value into a Python number. Dynamo traces shapes, not values: with default
settings (torch 2.13, `capture_scalar_outputs=False`) it cannot keep the number symbolic, so it
ends the graph, runs the read in Python (a device-to-host sync on GPU) and starts a new graph.
Probes under torch 2.13: `.item()`, `.tolist()` (on float and integer tensors), `float(t.sum())`,
`int(t.sum())` and `bool(t.sum())` each break the graph.

Not reported: conversions of shapes and sizes (`int(x.shape[0])`, `float(x.size(-1))`,
`len(x)`), of attributes and arguments that may be plain Python numbers (`float(self.scale)`),
and of values that are visibly NumPy arrays or literals. `.numpy()` is reported because what
follows it in real code (SciPy, OpenCV, a Python loop over the array, `.tolist()`) leaves the
graph. Dynamo does trace NumPy code since torch 2.1, so `.numpy()` is reported only where its
array visibly leaves that: passed to a function that is neither NumPy nor torch, or iterated over
in Python (`torch.from_numpy(np.clip(t.numpy(), 0, 1))` is not reported). Nor is a number the
code uses as a size, a count or a position (`x.split(lengths.tolist())`, `x[: n.item()]`,
`range(k.item())`, `torch.zeros(n.item())`) or to pick a Python object
(`names[int(i.item())]`): the code needs it on the host, and the only remedy is a redesign
(`ptlint explain` shows the break). Nor a read in a function that states its scalars' ranges
with `torch._check(...)` / `torch._check_is_size(...)`: the deliberate idiom for data-dependent
values under `torch.export` and `capture_scalar_outputs=True`.

## Where it reports
""" + WHERE_TRACED_DOC + """
## Example
```python
import torch
import torch.nn as nn


class Router(nn.Module):
    def forward(self, x):
        return x[: x.size(0) // 2] * x.max().item()


model = torch.compile(Router())
```

## Use instead
```python
import torch
import torch.nn as nn


class Router(nn.Module):
    def forward(self, x):
        return x[: x.size(0) // 2] * x.max()


model = torch.compile(Router())
```
Keep values as tensors, or read them outside the compiled region. Where a
Python scalar is unavoidable, `torch._dynamo.config.capture_scalar_outputs = True` lets Dynamo
trace `.item()` as an unbacked symbol.

## Fix safety
No automatic fix: keeping the value on the device changes the types downstream.

## References
- https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
- https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
"""

    bad_examples = [
        """
import torch
import torch.nn as nn

class Router(nn.Module):
    def forward(self, x):
        scale = x.abs().max().item()  # expect: PTL402
        k = int(x.sum())  # expect: PTL402
        flag = bool(torch.any(x > 0))  # expect: PTL402
        ids = x.argmax(-1).tolist()  # expect: PTL402
        return x / scale, k, flag, ids
""",
        """
import torch

@torch.compile
def norm_ratio(a, b):
    ratio = float(torch.linalg.norm(a) / torch.linalg.norm(b))  # expect: PTL402
    return a * ratio

def head(x):
    return x.cpu().numpy().tolist()  # expect: PTL402

fast_head = torch.compile(head)
""",
        # a method compiled through `torch.compile(self.method)`
        """
import torch

class Stepper:
    def __init__(self):
        self._fast = torch.compile(self._step)

    def _step(self, x):
        return x.sum().item()  # expect: PTL402

    def report(self, x):
        return x.sum().item()
""",
        # NumPy leaves the graph as soon as non-NumPy code uses it
        """
import torch.nn as nn
from scipy.optimize import linear_sum_assignment

class Matcher(nn.Module):
    def forward(self, cost):
        rows, cols = linear_sum_assignment(cost.detach().numpy())  # expect: PTL402
        return rows, cols
""",
        """
import torch.nn as nn

class Buckets(nn.Module):
    def forward(self, lengths):
        for n in lengths.cpu().numpy():  # expect: PTL402
            print(n)
""",
    ]

    good_examples = [
        # a number used as a size or a position, or to pick a Python object
        """
import torch
from torch import nn

class Vision(nn.Module):
    def forward(self, x, lengths, names, k):
        parts = x.split(lengths.tolist(), dim=0)
        head = x[: k.item()]
        label = names[int(x.argmax().item())]
        return parts, head, label
""",
        # the torch.export idiom: the scalar is read on purpose and its range stated
        """
import torch

class Tiles(torch.nn.Module):
    def forward(self, x, n):
        count = n.item()
        torch._check(count > 0)
        torch._check_is_size(count)
        return x[:count]
""",
        # a NumPy round trip straight back to torch traces without a break
        """
import torch
import torch.nn as nn

class Clip(nn.Module):
    def forward(self, x):
        return torch.from_numpy(x.numpy())
""",
        # shapes, sizes, Python attributes, NumPy arrays: not tensor values
        """
import numpy as np
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x, scale: float = 1.0):
        n = int(x.shape[0])
        d = float(x.size(-1))
        s = float(scale) * float(self.temperature)
        m = int(len(x))
        table = np.arange(4)
        return x * n * d * s * m, table.tolist(), [1, 2].copy()
""",
        # outside traced code: a metrics helper and the training loop
        """
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        return x.mean()

    def summary(self, x):
        return self.forward(x).item()

def evaluate(model, x):
    return float(model(x).sum())
""",
        # `.numpy()` into NumPy code and back to torch is traced by Dynamo (NumPy interop)
        """
import numpy as np
import torch

@torch.compile
def clip(x):
    return torch.from_numpy(np.clip(x.numpy(), 0, 1))
""",
    ]
