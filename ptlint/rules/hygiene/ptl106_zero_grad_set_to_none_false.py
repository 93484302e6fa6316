"""PTL106 zero-grad-set-to-none-false: `zero_grad(set_to_none=False)` fills every gradient with zeros."""

from __future__ import annotations

import ast

from ptlint.engine.finding import UNSAFE, Fix
from ptlint.engine.rule import CALLED, PER_OUTER, PER_STEP, FixExample, FixInput, Rule
from ptlint.semantics.nodes import is_constant


def _set_to_none_false(call: ast.Call) -> bool:
    """`.zero_grad(set_to_none=False)` or `.zero_grad(False)`, and no other argument."""
    if len(call.args) + len(call.keywords) != 1:
        return False
    if call.args:
        return is_constant(call.args[0], False)
    keyword = call.keywords[0]
    return keyword.arg == "set_to_none" and is_constant(keyword.value, False)


# A training run of `train(model, batches, optimizer, use_head)`, the model a body and a head: the
# model and the gradients after the final zero_grad.
ZERO_TRAIN = """
model = torch.nn.Module()
model.body = torch.nn.Linear(4, 4).to(torch.{dtype})
model.head = torch.nn.Linear(4, 4).to(torch.{dtype})
if {frozen}:
    model.body.bias.requires_grad_(False)
optimizer = {optimizer}([p for p in model.parameters() if p.requires_grad], lr=0.1{options})
batches = [torch.randn(2, 4).to(torch.{dtype}) for _ in range({steps})]
grads = train(model, batches, optimizer, {use_head})
result = (model, grads)
"""
# The same parameters; after the final zero_grad, zeros in the original and None in the fixed code
# (a frozen parameter never had a gradient: None in both).
SAME_PARAMETERS = ("[n for n, _, _ in before[0]['parameters']] == [n for n, _, _ in after[0]['parameters']] "
                   "and same([p for _, p, _ in before[0]['parameters']], [p for _, p, _ in after[0]['parameters']]) "
                   "and all(a is None or not a.any() for a in before[1]) and all(b is None for b in after[1])")

class ZeroGradSetToNoneFalse(Rule):
    code = "PTL106"
    name = "zero-grad-set-to-none-false"
    message = "`zero_grad(set_to_none=False)` writes zeros into every gradient each step; " \
              "the default (`set_to_none=True`) frees them instead"
    help = ("Call `zero_grad()` (its default, `set_to_none=True`, frees the gradients) instead of "
            "`zero_grad(set_to_none=False)`.")
    fixable = UNSAFE
    contexts = frozenset({PER_STEP, PER_OUTER, CALLED})  # once, at set-up, it costs one memset
    cold = False
    triggers = ("set_to_none", "zero_grad(False")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "zero_grad" and _set_to_none_false(node)):
            return
        fix = None
        edits = self.ctx.edits
        if not edits.has_comment_after(func, node):
            fix = Fix(UNSAFE, "Drop `set_to_none=False` (gradients become None instead of zeros)",
                      (edits.replace(node, edits.text(func) + "()"),))
        self.report(node, fix=fix)

    docs = """
## What it does
Finds `optimizer.zero_grad(set_to_none=False)` and `model.zero_grad(set_to_none=False)` (also the
positional `zero_grad(False)`) in code that runs every step or is called from elsewhere.

## Why is this bad?
With `set_to_none=False` every gradient tensor is overwritten with zeros: one memset kernel per
parameter each step (a write of the model's full size), and the next backward then reads those
zeros back to add the new gradient to them. With the default `set_to_none=True` (PyTorch 2.0 and
later) the gradients are dropped: the next backward writes them fresh, with no memset and no
read, and the memory is free in between. The optimizers skip parameters whose gradient is None,
which is also what a frozen parameter looks like.

Not reported: `zero_grad()` and `zero_grad(set_to_none=True)`; a call whose argument is not the
literal `False` (`set_to_none=args.flag`, the user's choice).

## Where it reports
- **Reports** in code that runs every step, once per epoch, or in a function whose callers the
  file does not show (a `train_step(...)` helper).
- **Silent** in once-code (`__init__`, set-up, the module's top level outside loops: one memset
  there costs nothing), error paths (an `except` body, a branch that raises, or only warns or
  logs), and test code.

## Example
```python
import torch


def train(model, loader, optimizer, loss_fn):
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)
        loss_fn(model(x), y).backward()
        optimizer.step()
```

## Use instead
```python
import torch


def train(model, loader, optimizer, loss_fn):
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
```

## Fix safety
Unsafe: the fix drops the argument, so after `zero_grad()` each `.grad` is None instead of a
zero tensor. A training loop whose every parameter gets a gradient each step ends with the same
parameters. Two things change:
- a parameter that a step does not use (an unused branch, a frozen part) keeps a zero gradient
  with `set_to_none=False`, and an optimizer with momentum or weight decay still moves it; with
  None the optimizer skips it;
- code that reads `p.grad` after `zero_grad()` (`p.grad.add_(...)`, clipping by hand, a hook that
  logs gradient norms) now meets None and must check for it.

## References
- https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-parameter-grad-none-instead-of-model-zero-grad-or-optimizer-zero-grad
"""

    bad_examples = [
        """
import torch

def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad(set_to_none=False)  # expect: PTL106
        criterion(model(x), y).backward()
        optimizer.step()
""",
        # a module's zero_grad, positional False, through a local name, in a step hook
        """
from torch import nn

class Lit:
    def training_step(self, batch, batch_idx):
        net = self.model
        net.zero_grad(False)  # expect: PTL106
        return net(batch).sum()
""",
        # a helper of unknown callers runs as often as they call it
        """
import torch.optim as optim

def step(opt, loss):
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)  # expect: PTL106
""",
    ]

    good_examples = [
        """
import torch

def train(model, loader, optimizer, criterion, flag):
    for x, y in loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        model.zero_grad(set_to_none=flag)
""",
        # once: at set-up, at module level
        """
import torch

class Trainer:
    def __init__(self, model):
        self.model = model
        self.model.zero_grad(set_to_none=False)

model = torch.nn.Linear(2, 2)
model.zero_grad(set_to_none=False)
""",
        # the error path
        """
def train(model, loader, opt):
    for x in loader:
        loss = model(x)
        if not loss.isfinite():
            opt.zero_grad(set_to_none=False)
            raise FloatingPointError("non-finite loss")
        loss.backward()
""",
        # a definition, not a call
        """
class MyOptimizer:
    def zero_grad(self, set_to_none=False):
        pass
""",
    ]

    fix_examples = [
        FixExample(
            before="""
def train(model, loader, optimizer):
    for x in loader:
        optimizer.zero_grad(set_to_none=False)
        model(x).sum().backward()
        optimizer.step()
""",
            after="""
def train(model, loader, optimizer):
    for x in loader:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
""",
            unsafe=True,
        ),
        FixExample(
            before="""
def step(model, batch):
    model.zero_grad(False)
    model(batch).sum().backward()
""",
            after="""
def step(model, batch):
    model.zero_grad()
    model(batch).sum().backward()
""",
            unsafe=True,
        ),
        FixExample(  # every parameter used every step: the same training
            before="""
def train(model, batches, optimizer, use_head):
    for i, x in enumerate(batches):
        optimizer.zero_grad(set_to_none=False)
        out = model.body(x)
        if use_head(i):
            out = model.head(out)
        out.float().pow(2).mean().backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]
""",
            after="""
def train(model, batches, optimizer, use_head):
    for i, x in enumerate(batches):
        optimizer.zero_grad()
        out = model.body(x)
        if use_head(i):
            out = model.head(out)
        out.float().pow(2).mean().backward()
        optimizer.step()
    optimizer.zero_grad()
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]
""",
            unsafe=True,
            inputs=(
                FixInput("SGD, float32", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options="", dtype="float32", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("SGD, float64", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options="", dtype="float64", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("SGD, bfloat16", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options="", dtype="bfloat16", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("SGD with momentum, float32", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options=", momentum=0.9, weight_decay=0.01", dtype="float32", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("SGD with momentum, float64", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options=", momentum=0.9, weight_decay=0.01", dtype="float64", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("SGD with momentum, bfloat16", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options=", momentum=0.9, weight_decay=0.01", dtype="bfloat16", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("Adam, float32", ZERO_TRAIN.format(optimizer="torch.optim.Adam", options="", dtype="float32", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("Adam, float64", ZERO_TRAIN.format(optimizer="torch.optim.Adam", options="", dtype="float64", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("Adam, bfloat16", ZERO_TRAIN.format(optimizer="torch.optim.Adam", options="", dtype="bfloat16", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("AdamW, float32", ZERO_TRAIN.format(optimizer="torch.optim.AdamW", options=", weight_decay=0.1", dtype="float32", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("AdamW, float64", ZERO_TRAIN.format(optimizer="torch.optim.AdamW", options=", weight_decay=0.1", dtype="float64", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("AdamW, bfloat16", ZERO_TRAIN.format(optimizer="torch.optim.AdamW", options=", weight_decay=0.1", dtype="bfloat16", steps=3, use_head="lambda i: True", frozen=False), check=SAME_PARAMETERS),
                FixInput("frozen parameters", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options=", momentum=0.9",
                                                                dtype="float32", steps=3, use_head="lambda i: True",
                                                                frozen=True), check=SAME_PARAMETERS),
                # no backward yet: zero_grad leaves None either way
                FixInput("no steps at all", ZERO_TRAIN.format(optimizer="torch.optim.SGD", options="", dtype="float32",
                                                              steps=0, use_head="lambda i: True", frozen=False)),
                # a parameter unused in a step: its zero gradient keeps feeding momentum and weight decay
                # in the original; with None the optimizer skips it (the difference the page names)
                FixInput("the head used on the first step only, with momentum",
                         ZERO_TRAIN.format(optimizer="torch.optim.SGD", options=", momentum=0.9, weight_decay=0.01",
                                           dtype="float32", steps=3, use_head="lambda i: i == 0", frozen=False),
                         check="torch.equal(before[0]['parameters'][0][1], after[0]['parameters'][0][1]) and not "
                               "torch.equal(before[0]['parameters'][2][1], after[0]['parameters'][2][1])"),
                # plain SGD: a zero step is no step
                FixInput("the head used on the first step only, plain SGD",
                         ZERO_TRAIN.format(optimizer="torch.optim.SGD", options="", dtype="float32", steps=3,
                                           use_head="lambda i: i == 0", frozen=False), check=SAME_PARAMETERS),
            ),
        ),
        FixExample(  # code reading `.grad` after zeroing meets None (the difference the page names)
            before="""
def train(model, batches, optimizer, use_head):
    for i, x in enumerate(batches):
        optimizer.zero_grad(set_to_none=False)
        out = model.body(x)
        if use_head(i):
            out = model.head(out)
        out.float().pow(2).mean().backward()
        optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    total = sum(p.grad.sum() for p in model.parameters())
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]
""",
            after="""
def train(model, batches, optimizer, use_head):
    for i, x in enumerate(batches):
        optimizer.zero_grad()
        out = model.body(x)
        if use_head(i):
            out = model.head(out)
        out.float().pow(2).mean().backward()
        optimizer.step()
    optimizer.zero_grad()
    total = sum(p.grad.sum() for p in model.parameters())
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]
""",
            unsafe=True,
            inputs=(
                FixInput("reading the gradients after zeroing", ZERO_TRAIN.format(
                    optimizer="torch.optim.SGD", options="", dtype="float32", steps=3, use_head="lambda i: True",
                    frozen=False), check="before_error is None and after_error == 'AttributeError'"),
            ),
        ),
    ]

    unfixable_examples = [
        """
def step(optimizer, loss):
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(  # expect: PTL106
        set_to_none=False,  # keep the buffers: a hook reads them
    )
""",
    ]
