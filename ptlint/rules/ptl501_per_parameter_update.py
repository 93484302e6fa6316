"""PTL501 per-parameter-update: a loop over parameters doing one in-place update per tensor."""

from __future__ import annotations

import ast

from ptlint.rule import CALLED, PER_OUTER, PER_STEP, UNSAFE, Fix, FixExample, Rule

from ._optim import (Call, ForeachWriter, Unsupported, body_nodes, fixable_loop, in_place_base, param_names,
                     tensor_kind, unguarded_body)

# In-place arithmetic on a parameter: an optimizer step, an EMA, weight clipping.
UPDATE_METHODS = {"add_", "sub_", "mul_", "div_", "lerp_", "addcdiv_", "addcmul_", "clamp_", "clamp_min_",
                  "clamp_max_"}
UPDATE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def _optimizer_implementation(ctx) -> bool:
    """The `step()` of an optimizer class, or the `_single_tensor_*` fallback of a foreach
    optimizer: a reference implementation, per tensor on purpose."""
    if any("single_tensor" in getattr(function, "name", "") for function in ctx.functions):
        return True
    return bool(ctx.classes) and any(getattr(f, "name", "") == "step" for f in ctx.functions)


class PerParameterUpdate(Rule):
    code = "PTL501"
    name = "per-parameter-update"
    message = "this loop updates each parameter in place, one kernel launch per tensor; use `torch._foreach_*`"
    fixable = UNSAFE
    contexts = frozenset({PER_STEP, PER_OUTER, CALLED})  # not set-up code: it runs once
    cold = False
    triggers = ("parameters", "params")

    def visit_For(self, node: ast.For) -> None:
        names = param_names(node.iter, node.target, self.ctx)
        if not names or not any(self._is_update(n, names) for n in body_nodes(node.body)):
            return
        edits = self._translate(node, names)
        if edits is None and _optimizer_implementation(self.ctx):
            return  # a reference optimizer: its foreach form is a rewrite, not a fix
        fix = Fix(UNSAFE, "Update all parameters with `torch._foreach_*` calls", edits) if edits else None
        self.report(node, fix=fix)

    @staticmethod
    def _is_update(node: ast.AST, names: set[str]) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in UPDATE_METHODS:
            kind = tensor_kind(in_place_base(node), names)
            return kind is not None and kind[0] == "param"
        if isinstance(node, ast.AugAssign) and isinstance(node.op, UPDATE_OPS):
            kind = tensor_kind(node.target, names)
            return kind is not None and kind[0] == "param"
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp):
            target = node.targets[0]  # p.data = p.data - lr * p.grad
            kind = tensor_kind(target, names)
            return isinstance(target, ast.Attribute) and target.attr == "data" and kind is not None \
                and kind[0] == "param"
        return False

    def _translate(self, loop: ast.For, names: set[str]) -> tuple | None:
        if not fixable_loop(loop, self.ctx):
            return None
        body, guarded = unguarded_body(loop)
        writer = ForeachWriter(loop, self.ctx, guarded)
        try:
            for stmt in body:
                self._statement(stmt, names, writer)
        except Unsupported:
            return None
        return writer.fix_edits() if writer.calls else None

    @staticmethod
    def _statement(stmt: ast.stmt, names: set[str], w: ForeachWriter) -> None:
        """One foreach call per in-place operation, in the loop body's order."""
        if isinstance(stmt, ast.AugAssign):
            value = stmt.value
            if isinstance(stmt.op, (ast.Mult, ast.Div)):  # p.data *= s
                function = "torch._foreach_mul_" if isinstance(stmt.op, ast.Mult) else "torch._foreach_div_"
                w.add(function, w.tensor(stmt.target, names), w.scalar(value))
                return
            if not isinstance(stmt.op, (ast.Add, ast.Sub)):
                raise Unsupported
            function = "torch._foreach_add_" if isinstance(stmt.op, ast.Add) else "torch._foreach_sub_"
            if tensor_kind(value, names):  # p.data -= p.grad
                w.add(function, w.tensor(stmt.target, names), w.tensor(value, names))
                return
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):  # p.data -= lr * p.grad
                scale, tensor = value.left, value.right
                if tensor_kind(scale, names):
                    scale, tensor = tensor, scale
                # the product first, as the loop computes it, then the in-place subtraction
                product = Call("torch._foreach_mul", [w.tensor(tensor, names), w.scalar(scale)])
                w.add(function, w.tensor(stmt.target, names), product)
                return
            raise Unsupported
        if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
            raise Unsupported
        chain: list[ast.Call] = []  # p.mul_(d).add_(x): mul_ first
        node: ast.AST = stmt.value
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            chain.append(node)
            node = node.func.value
        base = w.tensor(node, names)
        for call in reversed(chain):
            method = call.func.attr
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                raise Unsupported
            keywords = {k.arg: k.value for k in call.keywords}
            if method in ("add_", "sub_") and len(call.args) == 1 and set(keywords) <= {"alpha"}:
                other = call.args[0]
                function = f"torch._foreach_{method}"
                if tensor_kind(other, names):  # p.add_(p.grad, alpha=-lr)
                    args = [base, w.tensor(other, names)]
                    if "alpha" in keywords:
                        args.append(f"alpha={w.scalar(keywords['alpha'])}")
                    w.add(function, *args)
                elif not keywords:  # p.add_(1e-3)
                    w.add(function, base, w.scalar(other))
                else:
                    raise Unsupported
            elif method in ("mul_", "div_") and len(call.args) == 1 and not keywords \
                    and not tensor_kind(call.args[0], names):
                w.add(f"torch._foreach_{method}", base, w.scalar(call.args[0]))
            elif method == "lerp_" and len(call.args) + len(keywords) == 2 and set(keywords) <= {"end", "weight"}:
                positional = list(call.args)
                end = positional.pop(0) if positional else keywords.get("end")
                weight = positional.pop(0) if positional else keywords.get("weight")
                if end is None or weight is None:
                    raise Unsupported
                w.add("torch._foreach_lerp_", base, w.tensor(end, names), w.scalar(weight))
            else:
                raise Unsupported

    docs = """
## What it does
Finds a loop over a model's parameters (`model.parameters()`, `named_parameters()`,
`group["params"]`, a list built from them, or `zip` of two such, as in an EMA) whose body updates
each parameter in place: `p.add_(...)`, `p.data -= ...`, `p.data = p.data - ...`, `p.mul_(...)`,
`ema_p.lerp_(p, w)`, `p.clamp_(...)`.

Not reported: loops that only read parameters (counting `numel()`), set flags
(`requires_grad_(False)`), copy or initialise weights (`copy_`, `normal_`: usually done once), or
reset gradients with `p.grad = None`; set-up code that runs once (`__init__`, `init_weights`,
code only `main()` calls); test code; and optimizer implementations — the `step()` method of an
optimizer class and `_single_tensor_*` fallbacks — whose loop the fix cannot translate: a
reference implementation is per tensor on purpose, and its foreach form is a rewrite of the
algorithm, not a fix (judged debatable at best on timm's optimizers). A hand-written `step()`
simple enough for the fix is reported, with the fix.

## Why is this bad?
Each in-place operation is a separate kernel launch. A model with hundreds of parameter tensors
pays hundreds of launches (and Python dispatches) per step, which often costs more than the
arithmetic itself. The `torch._foreach_*` functions apply the same operation to a whole list of
tensors in a few fused launches; `torch.optim` uses them for exactly this reason.

## Example
```python
with torch.no_grad():
    for p in model.parameters():
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)
```

## Use instead
```python
with torch.no_grad():
    torch._foreach_add_([p for p in model.parameters() if p.grad is not None],
                        [p.grad for p in model.parameters() if p.grad is not None], alpha=-lr)
```
(the fix builds the list of parameters once, so that a generator is iterated only once), or use
a `torch.optim` optimizer.

## Fix safety
Unsafe: `torch._foreach_*` is a private API; parameters without a gradient are skipped where
an unguarded loop would have raised; and a hand-made list holding one tensor twice is updated
twice by the loop but once by the fused CUDA kernel (measured on an H100, torch 2.11;
`model.parameters()` never repeats a tensor). On CUDA, lists mixing devices or dtypes give the
loop's results bit for bit (`bench/cuda_fix_check.py`). The fix is offered only for bodies it can translate operation for operation:
`add_`/`sub_` (with `alpha=`), `mul_`/`div_` by a loop-invariant value, `lerp_`, chains of
these, and `+=`/`-=`/`*=` of a gradient (times a loop-invariant value), optionally guarded by
`if p.grad is not None:` or `if p.grad is None: continue`. On the CPU, `torch._foreach_mul_` of a
float16 parameter by a Python number may round the last bit differently from `mul_`
(torch 2.13); float32 and bfloat16 results are bit-identical.

States checked by the behaviour tests (original and fixed code side by side): gradients on every
parameter; no gradients yet (the list is empty: the calls sit under `if params_with_grad:`,
because foreach functions raise on an empty list); frozen parameters; some gradients `None`; a
model with no parameters; mixed float32/float16/bfloat16 parameters; sparse gradients; a
generator as the iterable (read once). No fix where the loop variable is read after the loop,
or where a comment in the loop would be lost.

## References
- https://pytorch.org/docs/stable/optim.html#algorithms (foreach and fused implementations)
"""

    bad_examples = [
        """
import torch

def sgd_step(model, lr):
    with torch.no_grad():
        for p in model.parameters():  # expect: PTL501
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
""",
        """
import torch

@torch.no_grad()
def update_ema(ema, model, decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):  # expect: PTL501
        ema_p.lerp_(p, 1 - decay)
""",
        """
def step(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:  # expect: PTL501
            if p.grad is None:
                continue
            state = optimizer.state[p]
            p.data.mul_(1 - group["lr"] * group["weight_decay"])
            p.data.add_(p.grad, alpha=-group["lr"])
""",
        """
def clip_critic(critic, c):
    for name, w in critic.named_parameters():  # expect: PTL501
        w.data.clamp_(-c, c)
""",
        """
def descend(model, lr):
    for p in model.parameters():  # expect: PTL501
        p.data = p.data - lr * p.grad
""",
        """
def manual_step(model, lr):
    params = list(model.parameters())
    for p in params:  # expect: PTL501
        p.data -= lr * p.grad
""",
    ]

    good_examples = [
        # an optimizer's own step(): a reference implementation the fix cannot translate
        """
import torch

class SignSGD(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    state = self.state[p]
                    p.add_(p.grad.sign(), alpha=-group["lr"])
""",
        # reading only
        """
def count(model):
    total = 0
    for p in model.parameters():
        total += p.numel()
    return total
""",
        # flags and gradient resets
        """
def freeze(model):
    for p in model.parameters():
        p.requires_grad_(False)
        p.grad = None
""",
        # initialisation runs once
        """
class Net:
    def _init_weights(self):
        for p in self.parameters():
            p.data.mul_(0.5)
""",
        # the loop variable is not a parameter
        """
def accumulate(model, totals):
    for name, p in model.named_parameters():
        totals[name].add_(p.detach())
""",
        # a loop over something else; a parameter moved or copied, not updated
        """
def scale(tensors):
    for t in tensors:
        t.mul_(2)
""",
        """
def to_half(model, source):
    for p, q in zip(model.parameters(), source.parameters()):
        p.data = p.data.half()
        p.data.copy_(q.data)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def sgd_step(model, lr):
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
""",
            after="""
import torch

def sgd_step(model, lr):
    with torch.no_grad():
        params_with_grad = [p for p in model.parameters() if p.grad is not None]
        if params_with_grad:
            torch._foreach_add_(params_with_grad, [p.grad for p in params_with_grad], alpha=-lr)
""",
            unsafe=True,
        ),
        FixExample(
            before="""
import torch as T

@T.no_grad()
def update_ema(ema, model, decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):
        ema_p.lerp_(p, 1 - decay)
""",
            after="""
import torch as T

@T.no_grad()
def update_ema(ema, model, decay):
    param_pairs = list(zip(ema.parameters(), model.parameters()))
    if param_pairs:
        T._foreach_lerp_([ema_p for ema_p, p in param_pairs], [p for ema_p, p in param_pairs], 1 - decay)
""",
            unsafe=True,
        ),
        FixExample(
            before="""
def scale_down(model, factor):
    for p in model.parameters():
        p.data.mul_(factor)
""",
            after="""import torch

def scale_down(model, factor):
    param_list = list(model.parameters())
    if param_list:
        torch._foreach_mul_([p.data for p in param_list], factor)
""",
            unsafe=True,
        ),
    ]

    unfixable_examples = [
        # a comment would be lost
        """
def sgd(model, lr):
    for p in model.parameters():  # expect: PTL501
        p.add_(p.grad, alpha=-lr)  # plain SGD
""",
        # a closure reads the loop variable after the loop
        """
def sgd(model, lr):
    for p in model.parameters():  # expect: PTL501
        p.add_(p.grad, alpha=-lr)
    return lambda: p.shape
""",
        # the scalar changes per parameter: no foreach call takes it
        """
def sgd(model, lrs):
    for i, p in enumerate(model.parameters()):  # expect: PTL501
        p.add_(p.grad, alpha=-lrs[i])
""",
    ]
