"""PTL502 per-parameter-zero-grad: a loop calling `p.grad.zero_()` once per parameter."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, UNSAFE, Fix
from ptlint.engine.rule import CALLED, PER_OUTER, PER_STEP, FixExample, FixInput, Rule
from ptlint.rules.optim._helpers import (
    MODEL_CODE,
    MODEL_STATES,
    ForeachWriter,
    body_nodes,
    fixable_loop,
    model_inputs,
    param_names,
    tensor_kind,
    unguarded_body,
)


def _zeroed_grad(node: ast.AST, names: set[str]) -> ast.AST | None:
    """`p.grad.zero_()` / `p.grad.data.zero_()` -> the zeroed expression, for a parameter name p."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "zero_" \
            and not node.args and not node.keywords:
        kind = tensor_kind(node.func.value, names)
        if kind is not None and kind[0] == "grad":
            return node.func.value
    return None


class PerParameterZeroGrad(Rule):
    code = "PTL502"
    needs_accelerator = True  # a launch per tensor on the CPU costs microseconds; foreach saves little
    name = "per-parameter-zero-grad"
    message = "this loop zeroes each gradient separately, one kernel launch per tensor; " \
              "use `optimizer.zero_grad()` or `model.zero_grad()` (they set them to None)"
    help = "Call `optimizer.zero_grad()` or `model.zero_grad()`: they set every gradient to `None` at once."
    fixable = "sometimes"
    contexts = frozenset({PER_STEP, PER_OUTER, CALLED})
    cold = False
    triggers = ("zero_(",)

    def visit_For(self, node: ast.For) -> None:
        names = param_names(node.iter, node.target, self.ctx)
        if not names or not any(_zeroed_grad(n, names) is not None for n in body_nodes(node.body)):
            return
        self.report(node, fix=self._fix(node, names))

    def _fix(self, loop: ast.For, names: set[str]) -> Fix | None:
        """Only a body that is exactly the zeroing, optionally under a `p.grad` None test."""
        if not fixable_loop(loop, self.ctx):
            return None
        body, guarded = unguarded_body(loop)
        if len(body) != 1 or not isinstance(body[0], ast.Expr):
            return None
        zeroed = _zeroed_grad(body[0].value, names)
        if zeroed is None:
            return None
        owner = tensor_kind(zeroed, names)[1]
        if guarded - {owner}:
            return None
        writer = ForeachWriter(loop, self.ctx, guarded)
        writer.add("torch._foreach_zero_", writer.tensor(zeroed, names))
        edits = writer.fix_edits()
        if edits is None:
            return None
        if guarded:
            return Fix(SAFE, "Zero all gradients with one `torch._foreach_zero_` call", edits)
        # the loop raises on a parameter without a gradient; the fix skips it
        return Fix(UNSAFE, "Zero all gradients with one `torch._foreach_zero_` call (parameters without a "
                           "gradient are skipped, where the loop raised)", edits)

    docs = """
## What it does
Finds a loop over parameters (`model.parameters()`, `named_parameters()`, `group["params"]`, a
list of parameters) that calls `p.grad.zero_()` (or `p.grad.data.zero_()`) for each one.

Not reported: `p.grad = None` per parameter, which frees the gradient without launching
anything and is what `optimizer.zero_grad()` does by default.

## Why is this bad?
Every `zero_()` is one kernel launch; a model with hundreds of parameter tensors launches
hundreds of tiny kernels each step. `torch._foreach_zero_` zeroes the whole list in a few
launches, and setting gradients to `None` (`optimizer.zero_grad(set_to_none=True)`, the default)
launches none and saves the memory until the next backward.

## Where it reports
- **Reports** in code that runs every step, once per epoch, and in a function whose callers the
  file does not show (a `reset_grads(model)` helper).
- **Silent** in once-code (`__init__`, set-up that only `main()` calls), error paths (an
  `except` body, a branch that raises, or only warns or logs), test code, and programs
  that never place a tensor on an accelerator (on the CPU a per-tensor op costs a few
  microseconds, and `foreach` saves little).

## Example
```python
import torch


def reset_grads(model):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
```

## Use instead
```python
import torch


def reset_grads(model):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_zero_([p.grad for p in params_with_grad])
```
or `model.zero_grad()` / `optimizer.zero_grad()`, which set the gradients to `None`.

## Fix safety
Safe when the loop skips parameters without a gradient (`if p.grad is not None:` around the
zeroing, or `if p.grad is None: continue` before it): the fix zeroes exactly the same gradient
tensors, in place, iterating the loop's iterable once. Unsafe without that guard: the loop
raises on the first parameter without a gradient, the fix skips it. Offered only when the body
is the zeroing alone, the loop has no comment, and the loop variable is not read afterwards.

`optimizer.zero_grad(set_to_none=False)` would be the natural rewrite of a loop over
`optimizer.param_groups`, but the object is not visibly a `torch.optim` optimizer (a subclass
may override `zero_grad`), and `model.zero_grad(set_to_none=False)` is itself a loop of
`zero_()` calls; so the fix writes the foreach call.

States checked by the behaviour tests (original and fixed code side by side): gradients on every
parameter; no gradients yet (the list is empty: the call sits under `if params_with_grad:`,
because `torch._foreach_zero_` raises on an empty list); frozen parameters; some gradients
`None`; a model with no parameters; mixed float32/float16/bfloat16 gradients; sparse
gradients; gradients that require grad (`backward(create_graph=True)`).

## References
- https://pytorch.org/docs/stable/generated/torch.optim.Optimizer.zero_grad.html
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#use-parameter-grad-none-instead-of-model-zero-grad-or-optimizer-zero-grad
"""

    bad_examples = [
        """
def zero_grads(model):
    for p in model.parameters():  # expect: PTL502
        if p.grad is not None:
            p.grad.zero_()
""",
        """
def zero_grad(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:  # expect: PTL502
            if p.grad is not None:
                p.grad.detach_()
                p.grad.zero_()
""",
        """
def reset(model):
    for name, param in model.named_parameters():  # expect: PTL502
        param.grad.data.zero_()
""",
    ]

    good_examples = [
        # the recommended practice: no kernel at all
        """
def zero_grads(model):
    for p in model.parameters():
        p.grad = None
""",
        # zeroing something that is not a gradient of the loop's parameter
        """
def reset(buffers):
    for b in buffers:
        b.grad.zero_()
""",
        """
def reset_state(model, state):
    for p in model.parameters():
        state[p].zero_()
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def zero_grads(model):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
""",
            after="""
import torch

def zero_grads(model):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_zero_([p.grad for p in params_with_grad])
""",
            inputs=(
                *model_inputs("zero_grads(model)"),
                # zeroed in place: the same gradient tensors, and a missing one stays missing
                FixInput("gradients zeroed in place", MODEL_CODE + MODEL_STATES["gradients"] + """
grads = [p.grad for p in model.parameters()]
zero_grads(model)
assert all(p.grad is g for p, g in zip(model.parameters(), grads))
assert model.unused.grad is None and not model.body[0].weight.grad.any()
result = model
"""),
            ),
        ),
        FixExample(
            before="""
def zero_grad(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad.data.zero_()
""",
            after="""import torch

def zero_grad(optimizer):
    for group in optimizer.param_groups:
        params_with_grad = [p for p in group["params"] if p.grad is not None]
        if params_with_grad:
            torch._foreach_zero_([p.grad.data for p in params_with_grad])
""",
            unsafe=True,
            inputs=model_inputs("zero_grad(torch.optim.SGD(model.parameters(), lr=0.1))", skips_missing_grads=False),
        ),
        FixExample(  # `if p.grad is None: continue` guards it too: safe
            before="""
import torch as T

def zero_grad(params):
    for p in params:
        if p.grad is None:
            continue
        p.grad.zero_()
""",
            after="""
import torch as T

def zero_grad(params):
    params_with_grad = [p for p in params if p.grad is not None]
    if params_with_grad:
        T._foreach_zero_([p.grad for p in params_with_grad])
""",
            inputs=model_inputs("zero_grad(list(model.parameters()))"),
        ),
        FixExample(
            before="""
def zero_data(model):
    for p in list(model.parameters()):
        if p.grad is None:
            continue
        p.grad.data.zero_()
""",
            after="""import torch

def zero_data(model):
    params_with_grad = [p for p in list(model.parameters()) if p.grad is not None]
    if params_with_grad:
        torch._foreach_zero_([p.grad.data for p in params_with_grad])
""",
            inputs=model_inputs("zero_data(model)"),
        ),
        FixExample(  # unguarded: the loop raises on a parameter without a gradient, the fix skips it
            before="""
def zero_all(model):
    for p in model.parameters():
        p.grad.zero_()
""",
            after="""import torch

def zero_all(model):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_zero_([p.grad for p in params_with_grad])
""",
            unsafe=True,
            inputs=model_inputs("zero_all(model)", skips_missing_grads=False),
        ),
        FixExample(
            before="""
import torch

def zero_groups(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for group in opt.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            p.grad.data.zero_()
""",
            after="""
import torch

def zero_groups(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
    for group in opt.param_groups:
        params_with_grad = [p for p in group["params"] if p.grad is not None]
        if params_with_grad:
            torch._foreach_zero_([p.grad.data for p in params_with_grad])
""",
            inputs=model_inputs("zero_groups(model)"),
        ),
    ]

    unfixable_examples = [
        # the loop variable is read after the loop; a comment would be lost
        """
import torch

def zero_grad(model):
    for p in model.parameters():  # expect: PTL502
        if p.grad is not None:
            p.grad.zero_()  # reset
    for q in model.parameters():  # expect: PTL502
        if q.grad is not None:
            q.grad.zero_()
    return q
""",
        # more than the zeroing in the body
        """
def zero_grad(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:  # expect: PTL502
            if p.grad is not None:
                p.grad.detach_()
                p.grad.zero_()
""",
    ]
