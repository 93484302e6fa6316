"""PTL503 optimizer-not-fused: a `torch.optim` optimizer built with `foreach=False` or without `fused=`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import UNSAFE, Fix
from ptlint.engine.rule import FixExample, FixInput, Rule
from ptlint.semantics.nodes import keyword

# torch 2.13: the optimizers that take `fused=` ...
FUSED = {"Adam", "AdamW", "SGD", "Adagrad"}
# ... and those that take only `foreach=`
FOREACH_ONLY = {"Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "ASGD", "Adadelta"}


def optimizer_class(qualname: str | None) -> str | None:
    """`torch.optim.AdamW` / `torch.optim.adamw.AdamW` -> "AdamW"."""
    if not qualname or not qualname.startswith("torch.optim."):
        return None
    parts = qualname.split(".")
    if len(parts) not in (3, 4):
        return None
    name = parts[-1]
    return name if name in FUSED or name in FOREACH_ONLY else None


def steps_in_each_dtype(build: str) -> tuple[FixInput, ...]:
    """FixInputs taking three optimizer steps with the optimizer `build(model)` makes, on a model
    in float32, float16 and bfloat16. The fused kernels round differently: the same step to within
    rounding, not bit for bit (one reason the fix is unsafe)."""
    return tuple(FixInput(dtype, f"""
model = torch.nn.Linear(4, 3).to(torch.{dtype})
optimizer = {build}(model)
inputs = torch.randn(2, 4).to(torch.{dtype})
for _ in range(3):
    optimizer.zero_grad()
    model(inputs).float().square().sum().backward()
    optimizer.step()
result = model
""", tolerance={"float32": 1e-5, "float16": 2e-2, "bfloat16": 2e-2}) for dtype in ("float32", "float16", "bfloat16"))


class OptimizerNotFused(Rule):
    code = "PTL503"
    name = "optimizer-not-fused"
    message = "`{name}` is built without `fused=True`: its step launches several kernels per parameter"
    help = "Build the optimizer with `fused=True` (parameters on CUDA), and without `foreach=False`."
    default = False
    fixable = UNSAFE
    triggers = ("optim",)

    def visit_Call(self, node: ast.Call) -> None:
        name = optimizer_class(self.ctx.qualname(node.func))
        if name is None or any(k.arg is None for k in node.keywords):  # **kwargs may hold fused=
            return
        if keyword(node, "fused") is not None:
            return
        first = node.args[0] if node.args else keyword(node, "params")
        if isinstance(first, (ast.List, ast.Tuple)) and len(first.elts) == 1 \
                and not isinstance(first.elts[0], (ast.Dict, ast.Starred)):
            return  # one tensor (optimising an input or a latent): nothing to fuse
        foreach = keyword(node, "foreach")
        if isinstance(foreach, ast.Constant) and foreach.value is False:
            message = f"`{name}` is built with `foreach=False`: its step loops over the parameters one by one"
        elif foreach is None and name in FUSED:
            message = self.message.format(name=name)
        else:
            return  # an explicit foreach choice (True or computed) is deliberate
        fix = Fix(UNSAFE, "Build it with `fused=True`", self._edits(node, foreach)) if name in FUSED else None
        self.report(node, message, fix=fix)

    def _edits(self, call: ast.Call, foreach: ast.AST | None) -> tuple:
        """`foreach=False` becomes `fused=True` where it stands; else `fused=True` goes last."""
        edits = self.ctx.edits
        if foreach is not None:
            keyword_node = next(k for k in call.keywords if k.arg == "foreach")
            return (edits.replace(keyword_node, "fused=True"),)
        return (edits.add_keyword(call, "fused=True"),)

    docs = """
## What it does
Finds a `torch.optim` optimizer (`Adam`, `AdamW`, `SGD`, `Adagrad`, resolved through the
module's imports) built without `fused=`, and any `torch.optim` optimizer built with
`foreach=False`. Off by default: select it with `--select PTL503`.

Not reported: an explicit `fused=` (either value), an explicit `foreach=True` or computed
`foreach=`, a call passing `**kwargs`, an optimizer of one tensor (`SGD([x], ...)`), and optimizers from other libraries with the same names.

## Why is this bad?
The default (`foreach`) implementation groups the parameters but still launches several
kernels per step per operation; `foreach=False` launches several per parameter. `fused=True`
does the whole update in one kernel per group of tensors, which is the fastest step on CUDA
(and supported on CPU for these optimizers).

## Where it reports
- **Reports** wherever the optimizer is built: in once-code (the usual place), per step, in a
  function whose callers the file does not show, and on error paths. It steps every step after,
  wherever it was built.
- **Silent** in test code.

## Example
```python
import torch


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4)
```

## Use instead
```python
import torch


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
```

## Fix safety
Unsafe: `fused=True` requires every parameter to be a floating-point tensor on a supported
device, refuses sparse gradients (`SGD(..., fused=True)` raises where plain SGD steps an
`nn.Embedding(sparse=True)`), and rounds differently: after three steps on the CPU (torch
2.13) float32 parameters agree to about 1e-5 and half-precision ones to about 1e-2, not bit for
bit. A `foreach=False` argument is replaced. States checked by the behaviour tests: float32,
float16 and bfloat16 models with Adam, AdamW and SGD, and sparse gradients.

## References
- https://pytorch.org/docs/stable/optim.html#algorithms
"""

    bad_examples = [
        """
import torch

def build(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4)  # expect: PTL503
""",
        """
from torch import optim

def build(model):
    sgd = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=False)  # expect: PTL503
    rms = optim.RMSprop(model.parameters(), foreach=False)  # expect: PTL503
    return sgd, rms
""",
    ]

    good_examples = [
        """
import torch

def build(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
""",
        # a library's own AdamW is not torch's
        """
from transformers import AdamW

def build(model):
    return AdamW(model.parameters(), lr=3e-4)
""",
        # explicit choices and forwarded options are the author's decision
        """
import torch

def build(model, **options):
    a = torch.optim.Adam(model.parameters(), foreach=True)
    b = torch.optim.SGD(model.parameters(), **options)
    c = torch.optim.RMSprop(model.parameters())
    return a, b, c
""",
        # a single tensor: nothing to fuse
        """
import torch

def invert(latent):
    return torch.optim.SGD([latent], lr=0.1)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def build(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4)
""",
            after="""
import torch

def build(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
""",
            unsafe=True,
            inputs=steps_in_each_dtype("build"),
        ),
        FixExample(
            before="""
from torch.optim import SGD

opt = SGD(
    params,
    lr=0.1,
    foreach=False,
)
""",
            after="""
from torch.optim import SGD

opt = SGD(
    params,
    lr=0.1,
    fused=True,
)
""",
            unsafe=True,
        ),
        FixExample(
            before="""
import torch

def build_adam(model):
    return torch.optim.Adam(model.parameters(), lr=0.1)
""",
            after="""
import torch

def build_adam(model):
    return torch.optim.Adam(model.parameters(), lr=0.1, fused=True)
""",
            unsafe=True,
            inputs=steps_in_each_dtype("build_adam"),
        ),
        FixExample(
            before="""
import torch

def build_sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)
""",
            after="""
import torch

def build_sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
""",
            unsafe=True,
            inputs=(
                *steps_in_each_dtype("build_sgd"),
                # fused SGD refuses sparse gradients, where plain SGD steps (a difference the page names)
                FixInput("sparse gradients", """
model = torch.nn.Embedding(10, 4, sparse=True)
optimizer = build_sgd(model)
for _ in range(3):
    optimizer.zero_grad()
    model(torch.tensor([[1, 2, 3]])).square().sum().backward()
    optimizer.step()
result = model
""", check="before_error is None and after_error == 'RuntimeError'"),
            ),
        ),
    ]
