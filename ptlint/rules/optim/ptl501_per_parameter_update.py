"""PTL501 per-parameter-update: a loop over parameters doing one in-place update per tensor."""

from __future__ import annotations

import ast

from ptlint.engine.finding import UNSAFE, Fix
from ptlint.engine.rule import CALLED, PER_STEP, FixExample, FixInput, Rule
from ptlint.semantics.calls import CallSites
from ptlint.semantics.where import is_set_up_name
from ptlint.rules.optim._helpers import (
    MODEL_CODE,
    MODEL_STATES,
    Call,
    ForeachWriter,
    Unsupported,
    body_nodes,
    fixable_loop,
    in_place_base,
    mapping_keys,
    may_repeat,
    model_inputs,
    pair_inputs,
    param_mapping,
    param_names,
    tensor_kind,
    unguarded_body,
)

# In-place arithmetic on a parameter: an optimizer step, an EMA, weight clipping.
UPDATE_METHODS = {"add_", "sub_", "mul_", "div_", "lerp_", "addcdiv_", "addcmul_", "clamp_", "clamp_min_",
                  "clamp_max_"}
UPDATE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
# torch functions whose result, assigned to `p.data`, is an update of the parameter when it reads
# the parameter's own values (`ema.data = torch.lerp(p.data, ema.data, beta)`); not a cast or a copy.
VALUE_FUNCTIONS = {"lerp", "add", "sub", "mul", "div", "addcmul", "addcdiv", "clamp", "where"}
# ... and on a gradient: scaling (`p.grad *= s`, `p.grad.div_(n)`) and clipping by value. Not
# `p.grad += g`: accumulating into a gradient per parameter is what autograd itself does.
GRAD_UPDATE_METHODS = {"mul_", "div_", "clamp_", "clamp_min_", "clamp_max_"}
GRAD_UPDATE_OPS = (ast.Mult, ast.Div)


def _out_call(node: ast.AST, ctx) -> tuple[str, ast.AST] | None:
    """`torch.add(x, y, out=x)` -> ("add_", x): the in-place method it amounts to, and its tensor.
    Not `torch.add(y, z, out=x)`, which overwrites x (a copy, not an update)."""
    if isinstance(node, ast.Call) and node.args and (name := ctx.qualname(node.func)) \
            and name.startswith("torch.") and f"{name[6:]}_" in UPDATE_METHODS:
        for keyword in node.keywords:
            if keyword.arg == "out" and ast.dump(keyword.value) == ast.dump(node.args[0]):
                return f"{name[6:]}_", keyword.value
    return None


def _updated(kind: tuple[str, str] | None, method: str | None = None, op: ast.operator | None = None) -> str | None:
    """What an in-place `method` (or augmented `op`) on a tensor of `kind` updates: "param",
    "grad" or None."""
    if kind is None:
        return None
    if kind[0] == "param" or (method in GRAD_UPDATE_METHODS if method else isinstance(op, GRAD_UPDATE_OPS)):
        return kind[0]
    return None


def _optimizer_implementation(ctx, loop: ast.For) -> bool:
    """The `step()` of an optimizer class (one derived from an `...Optimizer`, or stepping its
    `group["params"]`), or the `_single_tensor_*` fallback of a foreach optimizer: a reference
    implementation, per tensor on purpose. Not an EMA class's `step()`."""
    if any("single_tensor" in getattr(function, "name", "") for function in ctx.functions):
        return True
    if not ctx.classes or not any(getattr(f, "name", "") == "step" for f in ctx.functions):
        return False
    bases = [ast.unparse(base) for base in ctx.classes[-1].bases]
    steps_groups = any(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant) and n.slice.value == "params"
                       for n in ast.walk(loop.iter))
    return steps_groups or any(base.endswith("Optimizer") for base in bases)


def _reference_implementation(ctx) -> bool:
    """An optimizer whose per-tensor loop is one of its paths: a `_single_tensor_*` function, or
    a class or module that also has a `foreach` path (`torch._foreach_*`, a `foreach` flag)."""
    if any("single_tensor" in getattr(function, "name", "") for function in ctx.functions):
        return True
    key = "ptl501-foreach-path"
    if key not in ctx.memo:
        ctx.memo[key] = "foreach" in ctx.text.lower()
    return ctx.memo[key]


LOSS_WORDS = {"criterion", "crit", "loss", "losses"}


def _aliases(body: list[ast.stmt], names: set[str]) -> dict[str, tuple[str, str]]:
    """Names the loop body binds to a parameter of the loop, its data or its gradient
    (`old_weight, up_weight = ma_params.data, current_params.data`): name -> its tensor_kind."""
    found: dict[str, tuple[str, str]] = {}
    for statement in body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            continue
        target, value = statement.targets[0], statement.value
        pairs = zip(target.elts, value.elts) if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) \
            and len(target.elts) == len(value.elts) else [(target, value)]
        for name, part in pairs:
            kind = tensor_kind(part, names)
            if isinstance(name, ast.Name) and kind is not None:
                found[name.id] = kind
    return found


# Words of a single layer's name (`duration_proj`, `lstm`, `fc`): it holds a few tensors.
LAYER_WORDS = {"lstm", "gru", "rnn", "proj", "projection", "linear", "fc", "conv", "norm", "bn", "ln",
               "embedding", "embeddings", "emb"}


def _of_a_small_module(iterable: ast.AST) -> bool:
    """`criterion_cent.parameters()`, `self.center_loss.parameters()`,
    `model.predictor.duration_proj.parameters()`: a loss module holds a parameter or two (a center
    loss's centers, a learned temperature), one layer a weight and a bias (an LSTM eight), so the
    loop is a few launches per step, nothing a fused update would save."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr in ("parameters", "named_parameters")):
        return False
    owner = iterable.func.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return bool(set(name.lower().split("_")) & (LOSS_WORDS | LAYER_WORDS))


class PerParameterUpdate(Rule):
    code = "PTL501"
    needs_accelerator = True  # a launch per tensor on the CPU costs microseconds; foreach saves little
    name = "per-parameter-update"
    message = "this loop updates each parameter in place, one kernel launch per tensor; a `torch.optim` " \
              "optimizer with `foreach=True` or `fused=True` updates them all in a few"
    help = ("Let a `torch.optim` optimizer built with `foreach=True` or `fused=True` do the update (an EMA: "
            "`torch.optim.swa_utils.AveragedModel` with `get_ema_multi_avg_fn`); `torch._foreach_*` belongs only "
            "inside a custom optimizer's `step`.")
    grad_message = "this loop scales or clips each gradient in place, one kernel launch per tensor; " \
                   "scaling the loss, or `torch.nn.utils.clip_grad_norm_` / `clip_grad_value_`, does it once"
    optimizer_message = "this optimizer's `step` updates each parameter with its own kernels, one launch per " \
                        "operation and tensor; a step over each group's whole list does them all in a few"
    optimizer_help = ("In a custom optimizer, write the step over each param group's tensors with `torch._foreach_*` "
                      "(`_foreach_mul_`, `_foreach_add_`, `_foreach_norm`), as torch.optim's `foreach` implementations "
                      "do, or use a `torch.optim` optimizer.")
    grad_help = ("Scale the loss before `backward()` instead of each gradient, and clip with "
                 "`torch.nn.utils.clip_grad_norm_(params, max_norm)` or `clip_grad_value_(params, value)`.")
    fixable = UNSAFE
    # not set-up code (it runs once), nor once per epoch or every N steps (a target network copied
    # every 500 steps): one launch per tensor costs little there
    contexts = frozenset({PER_STEP, CALLED})
    cold = False
    triggers = ("parameters", "params", "state_dict")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._optimizer_steps: set[int] = set()  # custom optimizers' loops: kept in a training step only
        self._aliases: dict[str, tuple[str, str]] = {}  # the loop's names for its parameters (`_aliases`)

    def visit_For(self, node: ast.For) -> None:
        if _of_a_small_module(node.iter):
            return
        names = param_names(node.iter, node.target, self.ctx)
        keys = mapping_keys(node.iter, node.target, self.ctx)
        self._aliases = _aliases(node.body, names)
        updated = {self._update(n, names, keys) for n in body_nodes(node.body)} - {None} \
            if names or keys else set()
        if not updated:
            return
        edits = self._translate(node, names) if names else None
        optimizer = edits is None and _optimizer_implementation(self.ctx, node)
        if optimizer and _reference_implementation(self.ctx):
            return  # the per-tensor fallback of an optimizer that has a foreach path
        if may_repeat(node.iter, self.ctx):
            # the loop applies its body to a repeated tensor once per occurrence, in order; the
            # foreach calls apply each operation to the whole list before the next one
            edits = None
        what = "parameters" if "param" in updated else "gradients"
        fix = Fix(UNSAFE, f"Update all {what} with `torch._foreach_*` calls", edits) if edits else None
        if optimizer:
            self._optimizer_steps.add(id(node))
            self.report(node, self.optimizer_message, help=self.optimizer_help)
        elif "param" in updated:
            self.report(node, fix=fix)
        else:
            self.report(node, self.grad_message, fix=fix, help=self.grad_help)

    def keep(self, node: ast.AST, where) -> bool:
        """A custom optimizer's `step()` counts where a training loop of the project steps it
        (`optimizer = LARS(...)`, then `optimizer.step()` every step): a library's collection of
        optimizers, which nothing here steps, is a set of reference implementations whose
        foreach form is a rewrite of each. Never in set-up code: a loop that scales the parameters
        in `__init__` runs once per model built, however often the code around it runs."""
        if where.function is not None and is_set_up_name(where.function.name):
            return False  # `__init__`, `reset_parameters`: a scaling at set-up, once, whoever builds it
        return id(node) not in self._optimizer_steps or self.ctx.model.in_training_step(node)

    def _update(self, node: ast.AST, names: set[str], keys: set[str]) -> str | None:
        """ "param" or "grad" when `node` updates a parameter of the loop or its gradient in place."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in UPDATE_METHODS:
            return _updated(self._kind(in_place_base(node), names, keys), method=node.func.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "copy_" \
                and len(node.args) == 1:
            # `e.copy_(e * d + p * (1 - d))`: a copy of a value computed from the tensor itself
            kind = self._kind(node.func.value, names, keys)
            return "param" if kind is not None and kind[0] == "param" \
                and self._reads_value(node.args[0], kind, names, keys) else None
        if (out := _out_call(node, self.ctx)) is not None:
            return _updated(self._kind(out[1], names, keys), method=out[0])
        if isinstance(node, ast.AugAssign) and isinstance(node.op, UPDATE_OPS):
            return _updated(self._kind(node.target, names, keys), op=node.op)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, (ast.BinOp, ast.Call)):
            target = node.targets[0]  # p.data = p.data - lr * p.grad
            kind = self._kind(target, names, keys)
            updates = isinstance(target, ast.Attribute) and target.attr == "data" and kind is not None \
                and kind[0] == "param"
            if updates and isinstance(node.value, ast.Call):  # ema.data = torch.lerp(p.data, ema.data, beta)
                qualname = self.ctx.qualname(node.value.func) or ""
                updates = (qualname.startswith("torch.") and qualname.rpartition(".")[2] in VALUE_FUNCTIONS
                           or self._blends(node.value)) and self._reads_value(node.value, kind, names, keys)
            return "param" if updates else None
        return None

    def _reads_value(self, expression: ast.AST, kind: tuple[str, str], names: set[str], keys: set[str]) -> bool:
        """`expression` reads the values of the tensor of `kind` (`e * d`, `f(e, m)`), not only
        its metadata (`m.to(e.device)`)."""
        pending = [expression]
        while pending:
            node = pending.pop()
            if isinstance(node, ast.expr) and self._kind(node, names, keys) == kind:
                return True
            if isinstance(node, ast.Name) and self._aliases.get(node.id) == kind:
                return True  # `old = ema_p.data` earlier in the body
            if isinstance(node, ast.Attribute) and node.attr not in ("data", "detach"):
                continue  # `e.device`, `e.dtype`, `e.shape`: not its values
            pending.extend(ast.iter_child_nodes(node))
        return False

    def _blends(self, call: ast.Call) -> bool:
        """`self.update_average(old, new)` where the def this file runs for it returns arithmetic of
        its arguments (`old * self.beta + (1 - self.beta) * new`), or one of them."""
        defs = CallSites.of(self.ctx).callees(call)
        if len(defs) != 1:
            return False
        function = defs[0]
        parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args)}
        returned = [n.value for n in body_nodes(function.body) if isinstance(n, ast.Return)]
        return any(isinstance(v, ast.BinOp) for v in returned) and all(
            isinstance(v, ast.BinOp) and {n.id for n in ast.walk(v) if isinstance(n, ast.Name)} & parameters
            or isinstance(v, ast.Name) and v.id in parameters for v in returned)

    def _kind(self, node: ast.AST, names: set[str], keys: set[str]) -> tuple[str, str] | None:
        """("param", p) / ("grad", p) as `tensor_kind` says, also through `.detach()` (a view of
        the same memory: `targ.detach().mul_(rate)`) and for `other[k]`, the parameter of the
        loop's key `k` in a mapping of parameters (`ema_params[name].mul_(d)`)."""
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach" \
                and not node.args and not node.keywords:
            node = node.func.value
        kind = tensor_kind(node, names)
        if kind is not None or not keys:
            return kind
        while isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id in keys \
                and param_mapping(node.value, self.ctx):
            return ("param", ast.unparse(node))
        return None

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

    def _statement(self, stmt: ast.stmt, names: set[str], w: ForeachWriter) -> None:
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
        if (out := _out_call(stmt.value, self.ctx)) is not None:
            self._out_statement(stmt.value, out, names, w)
            return
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

    def _out_statement(self, call: ast.Call, out: tuple[str, ast.AST], names: set[str], w: ForeachWriter) -> None:
        """`torch.add(t, p, alpha=a, out=t)` is `t.add_(p, alpha=a)`: the output is the first operand."""
        method, target = out
        keywords = {k.arg: k.value for k in call.keywords}
        if method not in ("add_", "sub_") or len(call.args) != 2 or any(isinstance(a, ast.Starred) for a in call.args) \
                or not set(keywords) <= {"alpha", "out"} or None in keywords \
                or not tensor_kind(call.args[1], names):
            raise Unsupported
        args = [w.tensor(target, names), w.tensor(call.args[1], names)]
        if "alpha" in keywords:
            args.append(f"alpha={w.scalar(keywords['alpha'])}")
        w.add(f"torch._foreach_{method}", *args)

    docs = """
## What it does
Finds a loop over a model's parameters (or two models' parameters, as in an EMA) whose body
updates each parameter, or each gradient, in place: `p.add_(...)`, `ema_p.lerp_(p, w)`,
`p.grad *= scale`.

The updates: `p.add_(...)`, `p.data -= ...`, `p.data = p.data - ...`, `ema.data =
torch.lerp(p.data, ema.data, beta)` (a torch function of the tensor's own values), `p.mul_(...)`,
`ema_p.lerp_(p, w)`, `p.clamp_(...)`, `torch.add(t, p, alpha=tau, out=t)`; on gradients, scaling
and clipping by value: `p.grad *= scale`, `p.grad /= n`, `p.grad.mul_(...)`, `p.grad.div_(...)`,
`p.grad.data.clamp_(-c, c)`. The loops: over `model.parameters()`, `named_parameters()`,
`group["params"]`, a list built from them, a list the function receives under a name that says
it holds parameters (`params`, `parameters`, `target_params`, `source_parameters`,
`params_a`...), an attribute `self.params` / `self.parameters`, or a `zip` of such (with or
without `strict=True`), as in a target network's Polyak update; and loops over a mapping of
parameters by name (`model.state_dict().items()`, `dict(model.named_parameters())`,
`OrderedDict(...)`: `ema_params[name].mul_(d)`, `par1[k].data.mul_(d)`). An update through
`.detach()` (`targ.detach().mul_(rate)`) and a copy computed from the tensor itself
(`e.copy_(e * d + p * (1 - d))`) count as in-place updates.

Not reported: loops over a loss module's parameters (`criterion_cent.parameters()`: a center
loss holds one tensor, so the loop is one launch) or one layer's, named so
(`model.predictor.duration_proj.parameters()`, `self.lstm.parameters()`: a few tensors), loops that only read parameters (counting `numel()`), set flags
(`requires_grad_(False)`), copy or initialise weights (`copy_`, `normal_`,
`torch.add(a, b, out=p)`: usually done once), reset gradients with `p.grad = None`, or add into
gradients (`p.grad += g`: autograd accumulates per parameter too); names that hold something
else (`hparams`, `param_groups`, `params_before`, `parameter_names`), names the function
assigns from something other than parameters, and other attributes (`self.ema_params`: often
host copies updated every few hundred steps); a copy that is not an average (`v.copy_(src[k])`,
`t.copy_(p.to(t.device))`); and optimizer implementations whose loop the fix cannot
translate where the loop is a reference path: `_single_tensor_*` fallbacks, an optimizer whose
module also has a `foreach` path, and the `step()` of an optimizer class that no training loop of
the file steps (a library's collection of optimizers: its foreach form is a rewrite of each
algorithm, not a fix). A custom optimizer that the training loop steps every step (a LARS
written for the project, `optimizer = LARS(...)` then `optimizer.step()`) is reported without a
fix: rewriting its `step()` with `torch._foreach_*` over each group's list is the remedy. A
hand-written `step()` simple enough for the fix is reported, with the fix.

## Why is this bad?
Each in-place operation is a separate kernel launch. A model with hundreds of parameter tensors
pays hundreds of launches (and Python dispatches) per step, which often costs more than the
arithmetic itself. The `torch._foreach_*` functions apply the same operation to a whole list of
tensors in a few fused launches; `torch.optim` uses them for exactly this reason (and
`torch.nn.utils.clip_grad_value_` for clipping).

## Where it reports
- **Reports** in code that runs every step, and in a function whose callers the project does not
  show (an `sgd_step(model, lr)` or `ema_update(...)` helper of a library).
- **Silent** in once-code (`__init__`, `init_weights`, set-up that only `main()` calls), once per
  epoch or every N steps (`if step % target_update_every == 0:` copying a target network: a
  launch per tensor every N steps costs little), error paths (an `except` body, a branch that
  raises, or only warns or logs), test code, and programs
  that never place a tensor on an accelerator (on the CPU a per-tensor op costs a few
  microseconds, and `foreach` saves little).

## Example
```python
import torch


def sgd_step(model, lr, num_micro_batches):
    for p in model.parameters():  # gradient accumulation: average over micro-batches
        if p.grad is not None:
            p.grad *= 1 / num_micro_batches
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
```

## Use instead
```python
import torch


def sgd_step(model, lr, num_micro_batches):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_mul_([p.grad for p in params_with_grad], 1 / num_micro_batches)
    with torch.no_grad():
        params_with_grad = [p for p in model.parameters() if p.grad is not None]
        if params_with_grad:
            torch._foreach_add_(params_with_grad, [p.grad for p in params_with_grad], alpha=-lr)
```
(the fix builds the list of parameters once, so that a generator is iterated only once, and
calls nothing on an empty list), or use a `torch.optim` optimizer.

## Fix safety
Unsafe. The fix is offered only for bodies it can translate operation for operation:
`add_`/`sub_` (with `alpha=`), `mul_`/`div_` by a loop-invariant value, `lerp_`, chains of
these, `torch.add(t, x, alpha=a, out=t)`, and `+=`/`-=`/`*=`/`/=` (of a gradient times a
loop-invariant value), on parameters or their gradients, optionally guarded by
`if p.grad is not None:` or `if p.grad is None: continue`. What it changes:
- `torch._foreach_*` is a private API.
- Parameters without a gradient are skipped where an unguarded loop would have raised.
- On the CPU, `torch._foreach_mul_` of a float16 or bfloat16 tensor by a Python number may round
  the last bit differently from `mul_` (torch 2.13); float32 results, division, and
  multiplication by a 0-dim tensor are bit-identical.
- A tensor factor must have 0 dimensions: `torch._foreach_mul_` raises on a one-element 1-D
  tensor (`torch.tensor([0.5])`) that the loop broadcasts.
- With `zip(..., strict=True)` over lists of different lengths, the fix raises zip's
  `ValueError` when it reads the lists, before updating anything; the loop updated the pairs
  before the shorter list ended, then raised (a `RuntimeError` instead, when a misaligned pair's
  shapes differ first). Without `strict=True` both update the common pairs.

No fix where the loop may meet one tensor twice: the loop applies its whole body to each
occurrence in turn, while the foreach calls apply each operation to every tensor before the next
(different results on the CPU as soon as the body has two operations, and the fused CUDA kernel
updates a repeated tensor once even for one: measured on an H100, torch 2.11). So the fix is
offered for `parameters()` / `named_parameters()` (which never repeat a tensor), lists a function
builds from them, zips of these, and torch.optim's `group["params"]` (torch.optim warns that a
repeated parameter there will become an error),
not for a list received as an argument or read from an attribute (`polyak_update(params,
target_params, tau)`), nor for a mapping of parameters or a state dict (tied weights appear
under two names; buffers, integer ones included, are in a state dict): the rule reports those
without a fix. Nor for updates through `.detach()`, a `copy_` of an average, or a custom
optimizer's step beyond the forms below. Also no fix where the loop variable
is read after the loop, where a comment in the loop would be lost, or where the body does
anything else (a device move, a branch, a clamp).

States checked by the behaviour tests (original and fixed code side by side): gradients on every
parameter; no gradients yet (the list is empty: the calls sit under `if params_with_grad:`,
because foreach functions raise on an empty list); frozen parameters; some gradients `None`; a
model with no parameters; mixed float32/float16/bfloat16 parameters; sparse gradients; gradients
that require grad; a gradient scale given as a Python number and as a 0-dim tensor; a generator
as the iterable (read once); for pairs of models: a float16 average of a float32 model, a layer
shared by both, and targets one parameter longer at the end or misaligned. On CUDA, lists mixing
devices or dtypes give the loop's results bit for bit (`bench/cuda_fix_check.py`, run on an H200
with torch 2.11): `add_` with `alpha` and `mul_` by a Python number in float32, float16 and
bfloat16, `mul_` by a 0-dim tensor on the GPU or the CPU, `torch.add(out=)`, `zero_` over a list
holding both devices. A tensor listed twice is updated twice by the loop and once by
`_foreach_add_` on the GPU, which is why there is no fix where that can happen.

## References
- https://pytorch.org/docs/stable/optim.html#algorithms (foreach and fused implementations)
"""

    bad_examples = [
        # an EMA whose shadow copies are cloned from the parameters, updated after each step
        """
import torch

class ExponentialMovingAverage:
    def __init__(self, parameters, decay):
        self.decay = decay
        self.shadow_params = [p.clone().detach() for p in parameters if p.requires_grad]

    def move_shadow_params_to_device(self, device):
        self.shadow_params = [s.to(device) for s in self.shadow_params]

    def load_state_dict(self, state_dict):
        self.shadow_params = state_dict["shadow_params"]

    def update(self, parameters):
        with torch.no_grad():
            parameters = [p for p in parameters if p.requires_grad]
            for s_param, param in zip(self.shadow_params, parameters):  # expect: PTL501
                s_param.sub_((1.0 - self.decay) * (s_param - param))

def train(model, loader, optimizer, ema):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.update(model.parameters())
""",
        # an EMA whose blend is a method of its own class, through names for the two tensors
        """
class EMA:
    def __init__(self, beta):
        self.beta = beta

    def update_model_average(self, ma_model, current_model):
        for current_params, ma_params in zip(current_model.parameters(), ma_model.parameters()):  # expect: PTL501
            old_weight, up_weight = ma_params.data, current_params.data
            ma_params.data = self.update_average(old_weight, up_weight)

    def update_average(self, old, new):
        if old is None:
            return new
        return old * self.beta + (1 - self.beta) * new


def train(model, ema_model, loader, optimizer, ema):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.update_model_average(ema_model, model)
""",
        # a momentum encoder updated before it encodes each view, in a no_grad method the forward
        # calls every step: the loop over views is no generation, the update runs every step
        """
import torch
from torch import nn

class Contrastive(nn.Module):
    def __init__(self, backbone, backbone_hist):
        super().__init__()
        self.backbone = backbone
        self.backbone_hist = backbone_hist

    @torch.no_grad()
    def _update_history(self, m):
        for p, q in zip(self.backbone.parameters(), self.backbone_hist.parameters()):  # expect: PTL501
            q.data = q.data * m + p.data * (1.0 - m)

    @torch.no_grad()
    def compute_key_feat(self, clips):
        self._update_history(0.99)
        keys = []
        for k in range(len(clips)):
            clip = clips[k]
            keys.append(self.backbone_hist(clip))
        return keys

    def forward(self, clips_q, clips_k):
        keys = self.compute_key_feat(clips_k)
        return self.backbone(clips_q[0]), keys
""",
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
        # an EMA that rebinds each average to a new tensor computed from it
        """
import torch as T

def moving_average(model, model_test, beta=0.999):
    for param, param_test in zip(model.parameters(), model_test.parameters()):  # expect: PTL501
        param_test.data = T.lerp(param.data, param_test.data, beta)
""",
        """
def manual_step(model, lr):
    params = list(model.parameters())
    for p in params:  # expect: PTL501
        p.data -= lr * p.grad
""",
        # gradients scaled every optimizer step (torchtune's `scale_grads`)
        """
import torch

def scale_grads(model, scaler):
    for p in model.parameters():  # expect: PTL501
        if p.grad is not None:
            p.grad *= scaler
""",
        # in a training loop, with no torch import in sight
        """
def train(model, loader, optimizer, accumulation_steps):
    for step, batch in enumerate(loader):
        model(batch).mean().backward()
        if (step + 1) % accumulation_steps == 0:
            for name, p in model.named_parameters():  # expect: PTL501
                p.grad.data.div_(accumulation_steps)
            optimizer.step()
            optimizer.zero_grad()
""",
        """
def unscale(params, inv_scale):
    for p in params:  # expect: PTL501
        if p.grad is not None:
            p.grad.mul_(inv_scale)
            p.grad /= 2
""",
        # clipping by value, as in the classic DQN loop
        """
def optimize(policy_net, optimizer, loss):
    optimizer.zero_grad()
    loss.backward()
    for param in policy_net.parameters():  # expect: PTL501
        param.grad.data.clamp_(-1, 1)
    optimizer.step()
""",
        # a target network's Polyak update: lists passed in, zip with strict=True, add with out=
        """
import torch as th

def polyak_update(params, target_params, tau):
    with th.no_grad():
        for param, target_param in zip(params, target_params, strict=True):  # expect: PTL501
            target_param.data.mul_(1 - tau)
            th.add(target_param.data, param.data, alpha=tau, out=target_param.data)
""",
        """
import torch

def sync_target_model(model, target_model, alpha):
    for target_param, copy_param in zip(target_model.parameters(), model.parameters(), strict=True):  # expect: PTL501
        target_param.data.mul_(1.0 - alpha).add_(copy_param.data, alpha=alpha)
""",
        """
from torch import add, no_grad

@no_grad()
def follow(online, target, tau):
    for t, p in zip(target.parameters(), online.parameters()):  # expect: PTL501
        add(t, p, alpha=tau, out=t)
""",
        # names that say they hold parameters: arguments and attributes
        """
def interpolate(params_a, params_b, weight):
    for a, b in zip(params_a, params_b):  # expect: PTL501
        a.lerp_(b, weight)
""",
        # an EMA class's step() is not an optimizer's
        """
class EMAModel:
    def step(self, ema_parameters, model, decay):
        for s_param, param in zip(ema_parameters, model.parameters()):  # expect: PTL501
            s_param.sub_((1 - decay) * (s_param - param))
""",
        """
def soft_update(source_parameters, target_parameters, tau):
    for src, tgt in zip(source_parameters, target_parameters):  # expect: PTL501
        tgt.mul_(1 - tau).add_(src, alpha=tau)
""",
    ]

    good_examples = [
        # parameters scaled once when the model is built, by a factory nothing here calls
        """
import torch
import torch.nn as nn

class Wrapper(nn.Module):
    def __init__(self, net, scale):
        super().__init__()
        self.net = net
        with torch.no_grad():
            for p in self.net.parameters():
                p.mul_(scale)

def create_from_config(config):
    return Wrapper(nn.Linear(4, 4), config["scale"])
""",
        # host copies of the parameters (kept off the device), or a list the class also fills
        # with something else
        """
import torch

class HostAverage:
    def __init__(self, model):
        self.shadow_params = [p.detach().clone().cpu() for p in model.parameters()]
        self.history = [p.clone() for p in model.parameters()]
        self.saved_params = [p.detach().to("cpu") for p in model.parameters()]
        init = torch.zeros(())
        self.start_params = [init.clone() for p in model.parameters()]

    def reset(self, values):
        self.history = values

    def update(self, model, decay):
        with torch.no_grad():
            for s, p in zip(self.shadow_params, model.parameters()):
                s.mul_(decay).add_(p.cpu(), alpha=1 - decay)
            for h, p in zip(self.history, model.parameters()):
                h.mul_(decay).add_(p, alpha=1 - decay)
            for s, p in zip(self.saved_params, model.parameters()):
                s.mul_(decay).add_(p.cpu(), alpha=1 - decay)
            for s in self.start_params:
                s.mul_(decay)

def train(model, loader, optimizer, average):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        average.update(model, 0.99)
""",
        # a method that returns no blend of its arguments; a name for something else than the
        # parameter the loop writes
        """
class Quantizer:
    def quantize_model(self, model, scales):
        for p, s in zip(model.parameters(), scales):
            w = p.data
            p.data = self.quantize(w, s)
            other = s.data
            p.data = self.scale(other, 2.0)

    def quantize(self, w, s):
        return quantize_per_tensor(w, s)

    def scale(self, x, k):
        return x * k


def train(model, loader, optimizer, quantizer, scales):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        quantizer.quantize_model(model, scales)
""",
        # one layer's weight and bias (an LSTM's eight tensors) rescaled every step: a few launches
        """
import torch

def train(model, loader, optimizer, scale):
    model.cuda()
    for batch in loader:
        loss = model(batch.cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        for p in model.predictor.duration_proj.parameters():
            if p.grad is not None:
                p.grad *= scale
        for p in model.predictor.lstm.parameters():
            p.grad.mul_(scale)
        optimizer.step()
""",
        # a center loss's one parameter (its centers) rescaled every step: one launch
        """
import torch

def train(model, criterion_xent, criterion_cent, loader, optimizer, optimizer_centloss, weight_cent):
    model.cuda()
    for data, labels in loader:
        data, labels = data.cuda(), labels.cuda()
        features, outputs = model(data)
        loss = criterion_xent(outputs, labels) + criterion_cent(features, labels) * weight_cent
        optimizer.zero_grad()
        optimizer_centloss.zero_grad()
        loss.backward()
        optimizer.step()
        for param in criterion_cent.parameters():
            param.grad.data *= (1. / weight_cent)
        optimizer_centloss.step()

class Trainer:
    def step(self, batch):
        loss = self.center_loss(self.model(batch.cuda()))
        loss.backward()
        for p in self.center_loss.parameters():
            p.grad.mul_(0.5)
        self.optimizer.step()
""",
        # copies that are not averages: loading a state dict, a hard update, a copy that reads
        # only the target's device; a mapping that holds something else than parameters
        """
import torch

def load(model, pretrained, scales):
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(pretrained[k])
        for k, v in scales.items():
            v.mul_(2)
        for name, p in dict(model.named_parameters()).items():
            scales[name].add_(p)

def hard_update(target, online):
    for t, p in zip(target.parameters(), online.parameters()):
        t.data.copy_(p.data)
        t.detach().copy_(p.to(t.device))
""",
        # an EMA the step calls every step that leaves early on the steps between updates
        """
import torch

def update_ema(model, ema, cur_iter, period):
    if period == 0 or cur_iter % period != 0:
        return
    params = model.state_dict()
    for name, param in ema.state_dict().items():
        param.copy_(param * 0.99 + params[name] * 0.01)

def train(model, ema, loader, opt, period):
    model.cuda()
    for cur_iter, (x, y) in enumerate(loader):
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        update_ema(model, ema, cur_iter, period)
""",
        # an optimizer with a foreach path: the loop is its per-tensor fallback
        """
import torch

class FusedLARS(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            if group["foreach"]:
                grads = [p.grad for p in group["params"]]
                torch._foreach_add_(group["params"], grads, alpha=-group["lr"])
                continue
            for p in group["params"]:
                trust = p.norm() / p.grad.norm()
                p.add_(p.grad * trust, alpha=-group["lr"])

def train(model, loader):
    optimizer = FusedLARS(model.parameters(), {"lr": 0.1, "foreach": True})
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
""",
        # an optimizer's own step() that nothing here steps (a library's collection of
        # optimizers): a reference implementation the fix cannot translate
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
        # a copy of the other model's values, or a new tensor of the same shape: no update
        """
import torch

def load_from(model, source):
    for p, q in zip(model.parameters(), source.parameters()):
        p.data = torch.clone(q.data)
        p.data = torch.zeros_like(p.data)
        p.data = torch.add(q.data, 1.0)
""",
        # adding into gradients: accumulation, as autograd does per parameter
        """
def accumulate(params, grads):
    for param, grad in zip(params, grads, strict=True):
        if param.grad is None:
            param.grad = grad
        else:
            param.grad += grad
""",
        # names that hold settings, copies or names, not parameters; a local list of copies
        """
def rescale(hparams, params_before, parameter_names, model):
    for h in hparams:
        h.mul_(2)
    for t in params_before:
        t.mul_(0.5)
    for n in parameter_names:
        n.add_(1)
    target_params = [p.detach().clone() for p in model.parameters()]
    for t in target_params:
        t.mul_(0.5)
""",
        # an attribute counts under the usual names only (`self.params`): in the corpus,
        # `self.ema_params` held host copies updated every few hundred steps
        """
class BEMA:
    def update(self, beta):
        for ema, param in zip(self.ema_params, self.model_params_on_host, strict=True):
            ema.mul_(1 - beta).add_(param, alpha=beta)
""",
        # zip with strict=True of things that are not parameters
        """
def add_all(xs, ys):
    for x, y in zip(xs, ys, strict=True):
        x.add_(y)
""",
        # a parameter overwritten through out=, not updated; a gradient copied
        """
import torch

def overwrite(model, a, b):
    for p in model.parameters():
        torch.add(a, b, out=p.data)
        p.grad.copy_(a)
""",
        # a hard copy into the target network, once, when it is built
        """
class Agent:
    def __init__(self, online, target_net):
        self.online, self.target = online, target_net
        for target_param, param in zip(target_net.parameters(), online.parameters(), strict=True):
            target_param.data.mul_(0.0).add_(param.data)
""",
        # gradient scaling in code that runs once: only main() calls it
        """
def halve_grads(model):
    for p in model.parameters():
        if p.grad is not None:
            p.grad *= 0.5

def main(model):
    halve_grads(model)

if __name__ == "__main__":
    main(None)
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
            inputs=model_inputs("sgd_step(model, 0.1)"),
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
            inputs=pair_inputs("update_ema(target, source, 1 - weight)"),
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
            inputs=model_inputs("scale_down(model, 0.5)", scalar_multiply=True),
        ),
        FixExample(
            before="""
import torch

def scale_grads(model, scale):
    for p in model.parameters():
        if p.grad is not None:
            p.grad *= scale
""",
            after="""
import torch

def scale_grads(model, scale):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_mul_([p.grad for p in params_with_grad], scale)
""",
            unsafe=True,
            inputs=(
                *model_inputs("scale_grads(model, 0.37)", scalar_multiply=True),
                *model_inputs("scale_grads(model, torch.tensor(0.37))",
                              states={f"{name}, a 0-dim tensor factor": state for name, state in MODEL_STATES.items()}),
                # `_foreach_mul_` takes a tensor factor only with 0 dimensions; the loop broadcasts a
                # one-element 1-D tensor (a difference the page names)
                FixInput("a one-element 1-D tensor factor", MODEL_CODE + MODEL_STATES["gradients"]
                         + "scale_grads(model, torch.tensor([0.37]))\nresult = model\n",
                         check="before_error is None and after_error == 'RuntimeError'"),
            ),
        ),
        FixExample(
            before="""
import torch

def unscale(model, inv_scale):
    trainable = [p for p in model.parameters() if p.requires_grad]
    for p in trainable:
        if p.grad is not None:
            p.grad.mul_(inv_scale)
""",
            after="""
import torch

def unscale(model, inv_scale):
    trainable = [p for p in model.parameters() if p.requires_grad]
    params_with_grad = [p for p in trainable if p.grad is not None]
    if params_with_grad:
        torch._foreach_mul_([p.grad for p in params_with_grad], inv_scale)
""",
            unsafe=True,
            inputs=model_inputs("unscale(model, 0.5)", scalar_multiply=True),
        ),
        FixExample(
            before="""
import torch as T

def average_grads(model, accumulation_steps):
    for name, param in model.named_parameters():
        if param.grad is None:
            continue
        param.grad.data.div_(accumulation_steps)
""",
            after="""
import torch as T

def average_grads(model, accumulation_steps):
    params_with_grad = [param for name, param in model.named_parameters() if param.grad is not None]
    if params_with_grad:
        T._foreach_div_([param.grad.data for param in params_with_grad], accumulation_steps)
""",
            unsafe=True,
            inputs=model_inputs("average_grads(model, 3)"),
        ),
        FixExample(
            before="""
def sync_target_model(model, target_model, alpha):
    for target_param, copy_param in zip(target_model.parameters(), model.parameters(), strict=True):
        target_param.data.mul_(1.0 - alpha).add_(copy_param.data, alpha=alpha)
""",
            after="""import torch

def sync_target_model(model, target_model, alpha):
    param_pairs = list(zip(target_model.parameters(), model.parameters(), strict=True))
    if param_pairs:
        torch._foreach_mul_([target_param.data for target_param, copy_param in param_pairs], 1.0 - alpha)
        torch._foreach_add_([target_param.data for target_param, copy_param in param_pairs], [copy_param.data for target_param, copy_param in param_pairs], alpha=alpha)
""",
            unsafe=True,
            inputs=pair_inputs("sync_target_model(source, target, weight)", strict=True, multiplies=True),
        ),
        FixExample(
            before="""
import torch as th

def soft_update(critic, critic_target, tau):
    with th.no_grad():
        for param, target_param in zip(critic.parameters(), critic_target.parameters(), strict=True):
            target_param.data.mul_(1 - tau)
            th.add(target_param.data, param.data, alpha=tau, out=target_param.data)
""",
            after="""
import torch as th

def soft_update(critic, critic_target, tau):
    with th.no_grad():
        param_pairs = list(zip(critic.parameters(), critic_target.parameters(), strict=True))
        if param_pairs:
            th._foreach_mul_([target_param.data for param, target_param in param_pairs], 1 - tau)
            th._foreach_add_([target_param.data for param, target_param in param_pairs], [param.data for param, target_param in param_pairs], alpha=tau)
""",
            unsafe=True,
            inputs=pair_inputs("soft_update(source, target, weight)", strict=True, multiplies=True),
        ),
        FixExample(
            before="""
from torch import add, no_grad

@no_grad()
def follow(online, target, tau):
    for t, p in zip(target.parameters(), online.parameters()):
        add(t, p, alpha=tau, out=t)
""",
            after="""
from torch import add, no_grad
import torch

@no_grad()
def follow(online, target, tau):
    param_pairs = list(zip(target.parameters(), online.parameters()))
    if param_pairs:
        torch._foreach_add_([t for t, p in param_pairs], [p for t, p in param_pairs], alpha=tau)
""",
            unsafe=True,
            inputs=pair_inputs("follow(source, target, weight)"),
        ),
        FixExample(  # `continue` guards the gradient too; `p.data -= ...` is an in-place update
            before="""
def sgd_continue(model, lr):
    for p in model.parameters():
        if p.grad is None:
            continue
        p.data -= lr * p.grad
""",
            after="""import torch

def sgd_continue(model, lr):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_sub_([p.data for p in params_with_grad], torch._foreach_mul([p.grad for p in params_with_grad], lr))
""",
            unsafe=True,
            inputs=model_inputs("sgd_continue(model, 0.1)"),
        ),
        FixExample(  # the list built once before the loop
            before="""
def sgd_list(model, lr):
    params = list(model.parameters())
    for p in params:
        if p.grad is None:
            continue
        p.data -= lr * p.grad
""",
            after="""import torch

def sgd_list(model, lr):
    params = list(model.parameters())
    params_with_grad = [p for p in params if p.grad is not None]
    if params_with_grad:
        torch._foreach_sub_([p.data for p in params_with_grad], torch._foreach_mul([p.grad for p in params_with_grad], lr))
""",
            unsafe=True,
            inputs=model_inputs("sgd_list(model, 0.1)"),
        ),
        FixExample(  # weight decay then the step, over named parameters
            before="""
import torch

@torch.no_grad()
def decay_and_step(model, lr):
    for name, p in model.named_parameters():
        if p.grad is not None:
            p.mul_(1 - lr * 0.01)
            p.add_(p.grad, alpha=-lr)
""",
            after="""
import torch

@torch.no_grad()
def decay_and_step(model, lr):
    params_with_grad = [p for name, p in model.named_parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_mul_(params_with_grad, 1 - lr * 0.01)
        torch._foreach_add_(params_with_grad, [p.grad for p in params_with_grad], alpha=-lr)
""",
            unsafe=True,
            inputs=model_inputs("decay_and_step(model, 0.1)", scalar_multiply=True),
        ),
        FixExample(
            before="""
def named_step(model, lr):
    for name, param in model.named_parameters():
        if param.grad is not None:
            param.data.add_(param.grad.data, alpha=-lr)
""",
            after="""import torch

def named_step(model, lr):
    params_with_grad = [param for name, param in model.named_parameters() if param.grad is not None]
    if params_with_grad:
        torch._foreach_add_([param.data for param in params_with_grad], [param.grad.data for param in params_with_grad], alpha=-lr)
""",
            unsafe=True,
            inputs=model_inputs("named_step(model, 0.1)"),
        ),
        FixExample(  # the groups of an optimizer: one fix per group's loop
            before="""
import torch

def group_step(model, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    opt.param_groups[0]["weight_decay"] = 0.01
    for group in opt.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            p.data.mul_(1 - group["lr"] * group["weight_decay"])
            p.data.add_(p.grad, alpha=-group["lr"])
""",
            after="""
import torch

def group_step(model, lr):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    opt.param_groups[0]["weight_decay"] = 0.01
    for group in opt.param_groups:
        params_with_grad = [p for p in group["params"] if p.grad is not None]
        if params_with_grad:
            torch._foreach_mul_([p.data for p in params_with_grad], 1 - group["lr"] * group["weight_decay"])
            torch._foreach_add_([p.data for p in params_with_grad], [p.grad for p in params_with_grad], alpha=-group["lr"])
""",
            unsafe=True,
            inputs=model_inputs("group_step(model, 0.1)", scalar_multiply=True),
        ),
        FixExample(  # unguarded: the loop raises on a parameter without a gradient, the fix skips it
            before="""
import torch

@torch.no_grad()
def plain_step(model, lr):
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)
""",
            after="""
import torch

@torch.no_grad()
def plain_step(model, lr):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_add_(params_with_grad, [p.grad for p in params_with_grad], alpha=-lr)
""",
            unsafe=True,
            inputs=model_inputs("plain_step(model, 0.1)", skips_missing_grads=False),
        ),
        FixExample(
            before="""
def scale_all_grads(model, factor):
    for p in model.parameters():
        p.grad.data.mul_(factor)
""",
            after="""import torch

def scale_all_grads(model, factor):
    params_with_grad = [p for p in model.parameters() if p.grad is not None]
    if params_with_grad:
        torch._foreach_mul_([p.grad.data for p in params_with_grad], factor)
""",
            unsafe=True,
            inputs=model_inputs("scale_all_grads(model, 0.37)", skips_missing_grads=False, scalar_multiply=True),
        ),
        FixExample(  # a generator of parameters: the fix reads it once, as the loop did
            before="""
import torch

def step_trainable(model, lr):
    with torch.no_grad():
        for p in filter(lambda t: t.requires_grad, model.parameters()):
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
""",
            after="""
import torch

def step_trainable(model, lr):
    with torch.no_grad():
        params_with_grad = [p for p in filter(lambda t: t.requires_grad, model.parameters()) if p.grad is not None]
        if params_with_grad:
            torch._foreach_add_(params_with_grad, [p.grad for p in params_with_grad], alpha=-lr)
""",
            unsafe=True,
            inputs=(
                *model_inputs("step_trainable(model, 0.5)"),
                FixInput("parameters() counted", MODEL_CODE + MODEL_STATES["gradients"] + """
calls = []

class Counting:
    def parameters(self):
        calls.append(1)
        return model.parameters()

step_trainable(Counting(), 0.5)
result = (model, len(calls))
"""),
            ),
        ),
        FixExample(  # an average kept with `mul_` then `add_`, updated three times
            before="""
import torch

def update_average(ema, model, decay):
    with torch.no_grad():
        for e, p in zip(ema.parameters(), model.parameters()):
            e.mul_(decay).add_(p, alpha=1 - decay)
""",
            after="""
import torch

def update_average(ema, model, decay):
    with torch.no_grad():
        param_pairs = list(zip(ema.parameters(), model.parameters()))
        if param_pairs:
            torch._foreach_mul_([e for e, p in param_pairs], decay)
            torch._foreach_add_([e for e, p in param_pairs], [p for e, p in param_pairs], alpha=1 - decay)
""",
            unsafe=True,
            inputs=pair_inputs("for _ in range(3):\n    update_average(target, source, 1 - weight)", multiplies=True),
        ),
    ]

    unfixable_examples = [
        # EMAs the fix does not translate: lists received as arguments updated through
        # `.detach()`, a copy computed from the average itself, a mapping of parameters by name
        # (DiT's `ema_params[name]`, StyleGAN's `par1[k]`), a state dict (buffers included,
        # tied weights met twice)
        """
import torch

def update_ema(target_params, source_params, rate=0.99):
    for targ, src in zip(target_params, source_params):  # expect: PTL501
        targ.detach().mul_(rate).add_(src, alpha=1 - rate)

def update_ema_args(ema_params, params, decay):
    for e, p in zip(ema_params, params):  # expect: PTL501
        e.mul_(decay).add_(p, alpha=1 - decay)

@torch.no_grad()
def ema(model, ema_model, decay):
    for p, ema_p in zip(model.parameters(), ema_model.parameters()):  # expect: PTL501
        ema_p.copy_(ema_p * decay + (1 - decay) * p)
""",
        """
from collections import OrderedDict
import torch

@torch.no_grad()
def update_ema(ema_model, model, decay=0.9999):
    ema_params = OrderedDict(ema_model.named_parameters())
    model_params = OrderedDict(model.named_parameters())
    for name, param in model_params.items():  # expect: PTL501
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)

def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():  # expect: PTL501
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)
""",
        """
import torch as T

def ema_update(ema_model, model, d):
    model_state = model.state_dict()
    with T.no_grad():
        for k, v in ema_model.state_dict().items():  # expect: PTL501
            v.copy_(v * d + model_state[k] * (1 - d))
        for k, v in ema_model.state_dict().items():  # expect: PTL501
            if v.dtype.is_floating_point:
                v *= d
                v += (1 - d) * model_state[k].detach()
""",
        # a custom optimizer (LARS) that the training loop steps: its foreach form is a rewrite
        """
import torch
from torch.optim import Optimizer

class LARS(Optimizer):
    def __init__(self, params, lr, momentum=0.9, eta=0.001, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, eta=eta, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:  # expect: PTL501
                if p.grad is None:
                    continue
                dp = p.grad.add(p, alpha=group["weight_decay"])
                trust = group["eta"] * p.norm() / dp.norm()
                buf = self.state[p].setdefault("mu", torch.zeros_like(p))
                buf.mul_(group["momentum"]).add_(dp.mul(trust))
                p.add_(buf, alpha=-group["lr"])

def train(model, loader, epochs):
    optimizer = LARS(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
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
        # lists received as arguments may hold one tensor twice (see Fix safety)
        """
import torch as th

def polyak_update(params, target_params, tau):
    with th.no_grad():
        for param, target_param in zip(params, target_params, strict=True):  # expect: PTL501
            target_param.data.mul_(1 - tau)
            th.add(target_param.data, param.data, alpha=tau, out=target_param.data)
""",
        """
def scale(params, factor):
    for p in params:  # expect: PTL501
        if p.grad is not None:
            p.grad *= factor
""",
        # the body moves the scale to the device first (torchtune's `scale_grads`)
        """
def scale_grads(model, scaler):
    device = None
    for p in model.parameters():  # expect: PTL501
        if not device:
            device = p.device
            scaler = scaler.to(device)
        if p.grad is not None:
            p.grad *= scaler
""",
        # clipping by value: `torch.nn.utils.clip_grad_value_` is the remedy, not a translation
        """
def clip(model):
    for p in model.parameters():  # expect: PTL501
        p.grad.data.clamp_(-1, 1)
""",
        # a comment in the loop; the loop variable read after it
        """
def sync(model, target_model, alpha):
    for t, c in zip(target_model.parameters(), model.parameters(), strict=True):  # expect: PTL501
        t.data.mul_(1.0 - alpha).add_(c.data, alpha=alpha)  # EMA
""",
        """
def scale(model, factor):
    for p in model.parameters():  # expect: PTL501
        p.grad.mul_(factor)
    return p
""",
    ]
