"""PTL502 per-parameter-zero-grad: a loop calling `p.grad.zero_()` once per parameter."""

from __future__ import annotations

import ast

from ptlint.rule import SAFE, Fix, FixExample, Rule
from ptlint.rules.ptl501_per_parameter_update import (
    MARK, body_nodes, build_fix_statements, fixable_loop, param_names, tensor_kind, unguarded_body,
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
    name = "per-parameter-zero-grad"
    message = "this loop zeroes each gradient separately, one kernel launch per tensor; " \
              "use `optimizer.zero_grad()` (sets them to None) or one `torch._foreach_zero_`"
    fixable = SAFE
    triggers = ("zero_(",)

    def visit_For(self, node: ast.For) -> None:
        names = param_names(node.iter, node.target, self.ctx)
        if not names or not any(_zeroed_grad(n, names) is not None for n in body_nodes(node.body)):
            return
        data = self._translate(node, names)
        fix = Fix(SAFE, "Zero all gradients with one `torch._foreach_zero_` call", data) if data else None
        self.report(node, fix=fix)

    def _translate(self, loop: ast.For, names: set[str]) -> dict | None:
        """Only a body that is exactly the zeroing, inside an optional `p.grad is not None` guard."""
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
        text = self.ctx.source.text
        segments = [ast.get_source_segment(text, n) for n in (zeroed, loop.target, loop.iter)]
        if any(s is None for s in segments):
            return None
        expression, target, iterable = [s if "\n" not in s else f"({s})" for s in segments]
        statement = f"{MARK}torch._foreach_zero_{MARK}([{expression} for {target} in {iterable} " \
                    f"if {owner}.grad is not None])"
        return {"statements": [statement]}

    def fix(self, node, finding, fixctx):
        statements = finding.fix.data.get("statements") if finding.fix else None
        return build_fix_statements(node, statements, fixctx) if statements else None

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

## Example
```python
for p in model.parameters():
    if p.grad is not None:
        p.grad.zero_()
```

## Use instead
```python
torch._foreach_zero_([p.grad for p in model.parameters() if p.grad is not None])
```
or `model.zero_grad()` / `optimizer.zero_grad()`, which set the gradients to `None`.

## Fix safety
Safe: the fix zeroes exactly the same gradient tensors, in one call, iterating the loop's
iterable once. It is offered only when the loop body is the zeroing alone (with an optional
`if p.grad is not None:` guard); parameters without a gradient are skipped.

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
    torch._foreach_zero_([p.grad for p in model.parameters() if p.grad is not None])
""",
        ),
        FixExample(
            before="""
def zero_grad(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:
            p.grad.data.zero_()
""",
            after="""
import torch

def zero_grad(optimizer):
    for group in optimizer.param_groups:
        torch._foreach_zero_([p.grad.data for p in group["params"] if p.grad is not None])
""",
        ),
    ]
