"""PTL204 tensor-from-tensor: `torch.tensor(t)` of something that is already a tensor."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import CALLED, PER_STEP, FixExample, FixInput, Rule
from ptlint.semantics.values import STRONG, tensor_kind

# A copy made of a tensor `make` builds, the warnings it printed, and what it means that the copy is
# the same tensor as `torch.tensor(t)` gave (dtype, shape, contiguity, not requiring grad), a copy
# and not a view, without the warning torch prints for the original.
COPY = """
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    source, copy = copy_of(lambda: {make})
warned = [str(w.message) for w in caught]
result = (source, copy)
"""
COPY_CHECK = ("same(before, after) and not after[1].requires_grad and after[1].grad_fn is None "
              "and after[1].is_contiguous() == before[1].is_contiguous() "
              "and (not after[1].numel() or after[1].data_ptr() != after[0].data_ptr()) and warned == []")

class TensorFromTensor(Rule):
    code = "PTL204"
    name = "tensor-from-tensor"
    message = "`torch.tensor()` of a tensor copies it through the legacy constructor (torch warns); " \
              "use `{name}.clone().detach()`, or `.to(...)` for another dtype or device"
    help = "Use `t.clone().detach()`, or `t.to(dtype=..., device=...)` for another dtype or device."
    fixable = SAFE
    contexts = frozenset({PER_STEP, CALLED})  # once, the copy costs nothing worth a change
    cold = False
    triggers = ("tensor(",)

    def visit_Call(self, node: ast.Call) -> None:
        if self.ctx.qualname(node.func) != "torch.tensor" or len(node.args) != 1 \
                or isinstance(node.args[0], ast.Starred) or any(k.arg is None for k in node.keywords):
            return
        data = node.args[0]
        if self._parameter(data) or tensor_kind(data, self.ctx) != STRONG:
            return
        edits = self.ctx.edits
        fix = None
        if not node.keywords and not edits.has_comment(node):
            fix = Fix(SAFE, "Copy it with `.clone().detach()`",
                      (edits.replace(node, f"{edits.expression(data)}.clone().detach()"),))
        name = edits.text(data) if isinstance(data, ast.Name) else "t"
        self.report(node, self.message.format(name=name), fix=fix)

    def _parameter(self, data: ast.AST) -> bool:
        """A parameter of the function: whatever the file assigns to it, or its annotation
        says, the caller's value may be a list or a float (diffusers annotates config lists
        `latents_mean: torch.Tensor`)."""
        function = self.ctx.function
        if not isinstance(data, ast.Name) or function is None or isinstance(function, ast.Lambda):
            return False
        args = function.args
        return data.id in {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}

    docs = """
## What it does
Finds `torch.tensor(t)` where `t` is visibly a tensor already — the result of a torch operation,
of a reduction or tensor method, of a submodule or a loss — in code that runs every step or is
called from elsewhere. Any import spelling (`torch.tensor`, `from torch import tensor`,
`import torch as T`) counts.

## Why is this bad?
`torch.tensor` is the constructor for Python data (lists, numbers, NumPy arrays). Handed a
tensor it still copies it, and PyTorch warns on every call ("To copy construct from a tensor,
it is recommended to use sourceTensor.detach().clone() ..."). The copy is cut from the autograd
graph, which is rarely obvious at the call site, and the warning machinery runs on every step.
`t.clone().detach()` says what happens; `t.to(dtype)` / `t.to(device)` convert without the
detour, and `torch.as_tensor(t)` returns `t` itself when nothing needs converting.

Not reported: `torch.tensor` of a list, a number, a NumPy array, or a name whose value the file
does not show to be a tensor — a function's parameter counts as unknown even where another
branch assigns it a tensor (`if w is None: w = torch.ones(n) else: w = torch.tensor(w)`: the
caller's `w` may well be a list), and even when it is annotated `torch.Tensor` (annotations
copied between functions are often wrong: pipelines pass config lists to parameters annotated
as tensors); `torch.as_tensor`. A Python list copied to the device every step
(`torch.tensor([i] * n, device=device)`, where `torch.full` fills it there) is data from the
host, not a tensor: PTL201 (move-after-create) reports it.

## Where it reports
- **Reports** in code that runs every step, and in a function whose callers the file does not
  show.
- **Silent** in once-code (module top level, `__init__`, set-up that only `main()` calls), once
  per epoch or every N steps, error paths (an `except` body, a branch that raises, or only warns
  or logs), and test code.

## Example
```python
import torch


def absmax(x):
    scale = torch.abs(x).amax()
    return torch.tensor(scale)
```

## Use instead
```python
import torch


def absmax(x):
    scale = torch.abs(x).amax()
    return scale.clone().detach()
```

## Fix safety
Safe when `torch.tensor` gets the tensor and nothing else: `t.clone().detach()` gives the same
values, dtype, device, and no gradient history, as `torch.tensor(t)` does (the behaviour test
checks float16, bfloat16, integer, boolean, zero-dimensional, empty, non-contiguous and
gradient-requiring tensors). With `dtype=`, `device=` or `requires_grad=` it is reported
without a fix: the replacement (`t.detach().to(dtype).clone()`, `.requires_grad_()`) depends on
which of them is given.

## References
- https://pytorch.org/docs/stable/generated/torch.tensor.html
"""

    bad_examples = [
        """
import torch

def normalise(x):
    scale = torch.abs(x).amax()
    return x / torch.tensor(scale)  # expect: PTL204
""",
        """
import torch as T
from torch import tensor
from torch import nn

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        a = tensor(y)  # expect: PTL204
        b = T.tensor(y.sum(), dtype=T.float32)  # expect: PTL204
        return a, b
""",
        # per step, in a loop of once-code
        """
import torch

def main(loader):
    for x in loader:
        m = torch.mean(x)
        print(torch.tensor(m))  # expect: PTL204

if __name__ == "__main__":
    main([])
""",
    ]

    good_examples = [
        """
import torch
import numpy as np

def make(values, arr, x):
    a = torch.tensor([1.0, 2.0])
    b = torch.tensor(np.zeros(3))
    c = torch.tensor(values)
    d = torch.tensor(x.tolist())
    e = torch.as_tensor(torch.zeros(3))
    return a, b, c, d, e

def normalize(latents: torch.Tensor, mean: torch.Tensor):
    return latents - torch.tensor(mean).view(1, -1, 1, 1)

def weights(n, w=None, sigmas=None):
    if w is None:
        w = torch.ones(n)
    else:
        w = torch.tensor(w)
    if sigmas is None:
        sigmas = torch.linspace(0, 1, n)
    elif isinstance(sigmas, float):
        sigmas = torch.tensor(sigmas, dtype=torch.float64)
    return w, sigmas
""",
        # once: module level, __init__, and the error path
        """
import torch

ONE = torch.tensor(torch.ones(()))

class Buffer:
    def __init__(self, x):
        self.x = torch.tensor(torch.zeros(3))

def check(x):
    m = x.abs().max()
    if m > 1:
        raise ValueError(f"too large: {torch.tensor(m)}")
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def f(x):
    return torch.tensor(torch.softmax(x, -1).amax())
""",
            after="""
import torch

def f(x):
    return torch.softmax(x, -1).amax().clone().detach()
""",
        ),
        FixExample(
            before="""
from torch import tensor, zeros

def f(n):
    z = zeros(n) + 1
    return tensor(z)
""",
            after="""
from torch import tensor, zeros

def f(n):
    z = zeros(n) + 1
    return z.clone().detach()
""",
        ),
        # an operator expression gets parentheses
        FixExample(
            before="""
import torch

def f(a, b):
    s = torch.sum(a)
    return torch.tensor(s * 2)
""",
            after="""
import torch

def f(a, b):
    s = torch.sum(a)
    return (s * 2).clone().detach()
""",
        ),
        FixExample(  # what torch.tensor(t) gives, for every kind of tensor the code may hold
            before="""
import torch

def copy_of(make):
    source = torch.clone(make())
    return source, torch.tensor(source)
""",
            after="""
import torch

def copy_of(make):
    source = torch.clone(make())
    return source, source.clone().detach()
""",
            inputs=(
                FixInput('float32', COPY.format(make="torch.randn(3, 4)"), check=COPY_CHECK),
                FixInput('float16', COPY.format(make="torch.randn(3, 4).half()"), check=COPY_CHECK),
                FixInput('bfloat16', COPY.format(make="torch.randn(3, 4).bfloat16()"), check=COPY_CHECK),
                FixInput('int64', COPY.format(make="torch.arange(6)"), check=COPY_CHECK),
                FixInput('uint8', COPY.format(make="torch.arange(6, dtype=torch.uint8)"), check=COPY_CHECK),
                FixInput('bool', COPY.format(make="torch.tensor([True, False])"), check=COPY_CHECK),
                FixInput('complex64', COPY.format(make="torch.randn(2, dtype=torch.complex64)"), check=COPY_CHECK),
                FixInput('a 0-dim tensor', COPY.format(make="torch.tensor(2.5)"), check=COPY_CHECK),
                FixInput('an empty tensor', COPY.format(make="torch.zeros(0, 3)"), check=COPY_CHECK),
                FixInput('a non-contiguous tensor', COPY.format(make="torch.randn(4, 3).t()"), check=COPY_CHECK),
                FixInput('a tensor that requires grad', COPY.format(make="torch.randn(3, requires_grad=True) * 2"), check=COPY_CHECK),
                FixInput('a leaf that requires grad', COPY.format(make="torch.randn(3, requires_grad=True)"), check=COPY_CHECK),
            ),
        ),
    ]

    unfixable_examples = [
        """
import torch

def f(x):
    m = torch.mean(x)
    return torch.tensor(m, dtype=torch.float64)  # expect: PTL204
""",
    ]
