"""PTL305 log-exp-precision: `log(1 + x)`, `exp(x) - 1`, `log(1 + exp(x))` and log-cosh by hand."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample, FixInput
from ptlint.rules.numerics._helpers import (
    SOFTPLUS,
    Call,
    DeferredRule,
    exp_call,
    integer_valued,
    is_one,
    log1p_call,
    log_call,
    log_exp_inputs,
    one_hop,
    resolve,
    same,
    torch_call,
)
from ptlint.semantics.values import HOST_DATA_CONSTRUCTORS

MESSAGES = {
    "log1p": "`log(1 + x)` rounds `1 + x` and loses `x` when it is small; use `log1p(x)`",
    "expm1": "`exp(x) - 1` keeps only absolute precision when `x` is small, and this expression needs its "
             "relative digits (it subtracts `x` next, or divides by `x`, or divides by it); use `expm1(x)`",
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
               "frequencies", "length", "lengths", "lens", "num", "deg", "degs", "degree", "degrees"}
# Conversions of a stored value (`duration_targets.float()`): what the value is, is its source's
CONVERSIONS = {"float", "double", "half", "to", "type"}


def _magnitude(ctx, node: ast.AST, depth: int = 0) -> bool:
    """`x.abs()`, `torch.abs(x)`, `|d| / s`, a local assigned one, or a count (`dur`,
    `num_tokens`): `log(1 + x)` then compresses a magnitude (a symlog, log-spaced coordinates,
    log-counts), a transform read at absolute, not relative, precision."""
    if depth > 3:
        return False
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr == "abs" and ctx.qualname(node.func) is None:
            return True
        if isinstance(node.func, ast.Attribute) and node.func.attr in CONVERSIONS and ctx.qualname(node.func) is None:
            return _magnitude(ctx, node.func.value, depth + 1)  # `log(durations.float() + 1)`
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


# Host data made a tensor or an array (`torch.tensor(rows, dtype=torch.float)`, `np.array(rows)`):
# raw input features, in data preparation.
DATA_CONSTRUCTORS = HOST_DATA_CONSTRUCTORS | {"numpy.array", "numpy.asarray"}


def _converted_data(ctx, node: ast.AST) -> bool:
    """`torch.tensor(rows, dtype=torch.float)`, `batch.clone().type(torch.float)`: raw data
    converted to floating point where it is compressed. Features stored in another type are
    counts and sizes (`log(x + 1)` of a count is exact), read at absolute precision."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args \
            and node.func.attr in ("clone", "detach", "contiguous", "float", "double"):
        node = node.func.value
    if not isinstance(node, ast.Call):
        return False
    if ctx.qualname(node.func) in DATA_CONSTRUCTORS:
        return True
    return isinstance(node.func, ast.Attribute) and node.func.attr == "type" and len(node.args) == 1 \
        and ctx.qualname(node.func) is None


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


def _number(node: ast.AST) -> bool:
    """A numeric literal, `0.5` or `-1`."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _dotted(node: ast.AST) -> str | None:
    """`h`, `self.scale`: a name or a chain of attributes on one."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _variables(ctx, node: ast.AST) -> set[str]:
    """The names and attribute chains an expression reads, leaving out imported modules and
    functions (`torch.exp`) but keeping a method's receiver (`h.abs()` reads `h`)."""
    found: set[str] = set()
    todo = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, ast.Call):
            if isinstance(item.func, ast.Attribute) and ctx.qualname(item.func) is None:
                todo.append(item.func.value)
            todo.extend(item.args)
            todo.extend(argument.value for argument in item.keywords)
            continue
        dotted = _dotted(item)
        if dotted is not None:
            if ctx.qualname(item) is None:
                found.add(dotted)
            continue
        todo.extend(ast.iter_child_nodes(item))
    return found


def _cancels(parent: ast.BinOp, other: ast.AST, x: ast.AST, sign: int) -> bool:
    """`parent` combines a value close to `sign * x` (an unscaled `exp(x) - 1`) with `other` so
    that the two cancel: `exp(x) - 1 - x`, `exp(-h) - 1 + h`, `x - (exp(x) - 1)`."""
    if isinstance(parent.op, ast.Sub):
        return same(other, x) if sign > 0 else _negation(other, x)
    return _negation(other, x) if sign > 0 else same(other, x)


def _relative_digits_needed(ctx, stack: list[ast.AST], node: ast.AST, x: ast.AST, cancelled: bool) -> bool:
    """Whether the expression around `exp(x) - 1` (`node`; `cancelled` when it is already
    `exp(x) - x - 1`) needs the difference's relative digits, which only `expm1` keeps.

    Yes when, in the same expression, it cancels against its own argument (`exp(x) - 1 - x`, a k3
    KL estimate), is divided by a quantity that reads a variable of `x` (`(exp(h) - 1) / h`, the
    phi functions) or divides something (`x / (exp(x) - 1)`), and the result is not then a term
    of a sum with anything but a number: a term added to another one keeps only absolute
    precision, which `exp(x) - 1` already has (DPM-Solver's `r * x - a * (exp(-h) - 1) * D0`,
    measured in bench/expm1_accuracy.py). Unknown uses (the value assigned, passed on) count as
    no: without one of those signals, nothing shows that the relative digits matter."""
    signal, plain, sign = cancelled, not cancelled, 1
    child = node
    for index in range(len(stack) - 1, -1, -1):
        parent = stack[index]
        if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, (ast.USub, ast.UAdd)):
            sign = -sign if isinstance(parent.op, ast.USub) else sign
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Add, ast.Sub)):
            other = parent.right if parent.left is child else parent.left
            if plain and _cancels(parent, other, x, sign):
                signal, plain = True, False
            elif not (signal and _number(other)):  # `... + 1.0`, `- 0.5`: a further cancellation
                return False
        elif isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Mult, ast.Div)):
            if isinstance(parent.op, ast.Div) and (parent.right is child
                                                   or _variables(ctx, parent.right) & _variables(ctx, x)):
                signal = True
            plain = False
        else:
            return signal and not _precision_unused(ctx, stack[:index + 1], child)
        child = parent
    return signal


class LogExpPrecision(DeferredRule):
    code = "PTL305"
    name = "log-exp-precision"
    message = MESSAGES["log1p"]
    help = ("Use `torch.log1p(x)` for `log(1 + x)`, `torch.expm1(x)` for `exp(x) - 1`, `F.softplus(x)` for `log(1 "
            "+ exp(x))`, and `|x| + F.softplus(-2 * |x|) - log(2)` for a log-cosh.")
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
        left, subtracted = node.left, None
        if isinstance(left, ast.BinOp) and isinstance(left.op, ast.Sub):
            left, subtracted = left.left, left.right  # `exp(x) - x - 1`, as GRPO writes its KL
        exp, direct = resolve(ctx, left, exp_call, names)
        if exp is None or integer_valued(ctx, exp.operand) or not ctx.imports_torch():
            return
        cancelled = subtracted is not None
        if cancelled and not same(subtracted, exp.operand):
            return
        if not _relative_digits_needed(ctx, ctx.stack, node, exp.operand, cancelled):
            return
        fix = self._expm1_fix(node, exp, subtracted) if direct else None
        self.defer(node, names, message=MESSAGES["expm1"], fix=fix)

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
            if integer_valued(ctx, x) or _magnitude(ctx, x) or _converted_data(ctx, x):
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
            return Fix(SAFE, "Use `log1p(x)`", (edits.replace(log, f"{edits.text(func.value)}.log1p({edits.argument(x)})"),))
        found = edits.reference("torch.log1p", at=log)
        if found is None:
            return None
        spelled, imports = found
        return Fix(SAFE, "Use `log1p(x)`", (edits.replace(log, f"{spelled}({edits.argument(x)})"), *imports))

    def _softplus_fix(self, node: ast.AST, x: ast.AST) -> Fix | None:
        edits = self.ctx.edits
        if edits.has_comment(node) or integer_valued(self.ctx, x):
            return None  # softplus refuses integer tensors, which exp promotes to float
        found = edits.reference("torch.nn.functional.softplus", at=node)
        if found is None:
            return None
        spelled, imports = found
        return Fix(SAFE, "Use `F.softplus(x)`", (edits.replace(node, f"{spelled}({edits.argument(x)})"), *imports))

    def _expm1_fix(self, node: ast.BinOp, exp: Call, subtracted: ast.AST | None) -> Fix | None:
        """`exp(x) - 1` -> `expm1(x)`; `exp(x) - x - 1` -> `expm1(x) - x`."""
        edits = self.ctx.edits
        if edits.has_comment(node):
            return None
        imports: tuple = ()
        if exp.method:  # x.exp() - 1 -> x.expm1()
            text = f"{edits.expression(exp.operand)}.expm1()"
        elif isinstance(exp.node.func, ast.Attribute):
            text = f"{edits.text(exp.node.func.value)}.expm1({edits.argument(exp.operand)})"
        else:
            found = edits.reference("torch.expm1", at=node)
            if found is None:
                return None
            spelled, imports = found
            text = f"{spelled}({edits.argument(exp.operand)})"
        if subtracted is None:
            edit = edits.replace_grouped(node, text)  # `alpha * (exp(h) - 1)` -> `alpha * expm1(h)`
        else:  # a difference: the parentheses around it stay
            edit = edits.replace(node, f"{text} - {edits.expression(subtracted)}")
        return Fix(SAFE, "Use `expm1(x)`", (edit, *imports))

    docs = """
## What it does
Finds `log(1 + x)`, `exp(x) - 1` where its relative digits matter, `log(1 + exp(x))` and a
log-cosh written by hand, where `log1p`, `expm1` and `F.softplus` are exact. In every spelling
(`torch.log(...)`, `x.log()`, `from torch import log`), also through a local variable (`d = 1 + x`
then `torch.log(d)`, `ratio = torch.exp(r)` then `ratio - 1`):
- `log(1 + x)` → `log1p(x)`;
- `exp(x) - 1` → `expm1(x)` when the same expression then subtracts `x` (`exp(x) - 1 - x`,
  `exp(-h) - 1 + h`, a k3 KL estimate `(ratio - 1) - log_ratio`, also `exp(x) - x - 1` →
  `expm1(x) - x`), divides it by a quantity that reads a variable of `x` (`(exp(h) - 1) / h`, the
  φ functions of exponential integrators) or divides something by it (`x / (exp(x) - 1)`);
- `log(1 + exp(x))`, `log1p(exp(x))` → `F.softplus(x)`;
- `log(cosh(x))` and `log((exp(x) + exp(-x)) / 2)`, a log-cosh (reported without a fix).

## Why is this bad?
`1 + x` rounds to 1 when |x| is below about 6e-8 in float32 (5e-4 in float16, 4e-3 in bfloat16), so
`log(1 + x)` returns 0 instead of about `x`, and it carries only the absolute error of `1 + x` well
above that. `exp(x) - 1` likewise keeps only an absolute error of about one unit in the last place
of 1 (6e-8 in float32): for `x = 1e-3` a relative error of 6e-5. That is lost for good when the
expression then needs the relative digits: `exp(x) - 1 - x` is about `x**2 / 2`, so its relative
error is about 1e-7 / x²; `(exp(x) - 1) / x` is about 1 with a relative error of 6e-8 / |x|.
Measured (`python bench/expm1_accuracy.py --only other`, float32): the mean of `(exp(r) - 1) - r`
over log-ratios of standard deviation 1e-3 (PPO's and GRPO's KL estimate) is off by 3e-4, by 2e-7
with `expm1`; in bfloat16 its digits are all wrong; `y * (exp(x) - 1) / x` at |x| ≈ 1e-4 by 3e-4,
by 8e-8 with `expm1`. `log1p` and `expm1` are exact there.

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
log-spaced coordinates, log-counts), read at absolute precision; `log(1 + x)` of raw data made a
floating-point tensor in the expression (`torch.tensor(rows, dtype=torch.float) + 1`,
`batch.type(torch.float) + 1`): features stored in another type are counts, where `1 + x` is exact; `log1p(-exp(x))` (a correct
`log(1 - exp(x))`); NumPy and `math`.

`exp(x) - 1` is not reported without one of the signals above, nor when its result (scaled, after
the cancellation) is a term of a sum with anything but a number: a term added to another keeps
only absolute precision, which `exp(x) - 1` already has. That leaves the update steps of
diffusion samplers (`x_t = (sigma_t / sigma_s) * x - alpha_t * (exp(-h) - 1) * D0 + ...`), a soft
clip `-s * (exp(-o) - 1) + bound`, loss weights `(exp(b * d) - 1).clamp(...)`, a noise scale
`sqrt(exp(2 * h) - 1)`. `bench/expm1_accuracy.py` runs diffusers' DPM-Solver, DPM-Solver++, SDE,
DEIS and SA-Solver updates (10 to 1000 steps, float32 and float16 pipelines) with each such line
as written and with `expm1`: the step's error does not change (ratio 1.0), not even for most
2nd- and 3rd-order φ terms, which multiply differences of the model's outputs that are as small
as the step. The exceptions need hundreds of steps and a float32 pipeline: SDE-DPM-Solver's
2nd-order term (error halved from 200 steps on) and a 3rd-order term when the model's outputs
jitter between steps (3-4x at 200 steps, 50-90x at 1000). Two real losses this leaves unreported: an
exponential integrator whose φ term multiplies a quantity that is not small
(`u * exp(L*h) + (exp(L*h) - 1) / L * N`), and a small `exp(x) - 1` used on its own for its
relative value (a log-normal variance `(exp(s**2) - 1) * exp(2*mu + s**2)` with small `s`);
nothing in the code tells them apart from the lines above, so write `expm1` there anyway.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers
  the file does not show, on error paths, and in test code: a formula that loses its digits is
  wrong wherever it runs, a test included.

## Example
```python
import torch


def terms(z, r, h, p):
    y = torch.log(1 + torch.exp(z))
    kl = (torch.exp(r) - 1 - r).mean()
    phi = (torch.exp(h) - 1) / h
    d = torch.log(1 + p)
    return y, kl, phi, d
```

## Use instead
```python
import torch
import torch.nn.functional as F


def terms(z, r, h, p):
    y = F.softplus(z)
    kl = (torch.expm1(r) - r).mean()
    phi = torch.expm1(h) / h
    d = torch.log1p(p)
    return y, kl, phi, d
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
- http://joschu.net/blog/kl-approx.html (the k3 KL estimator)
"""

    bad_examples = [
        """
import torch
import torch.nn.functional as F

def losses(z, p, h):
    a = torch.log(1 + torch.exp(z))  # expect: PTL305
    b = torch.log(1.0 + p)  # expect: PTL305
    c = (torch.exp(h) - 1) / h  # expect: PTL305
    d = torch.log1p(torch.exp(-z))  # expect: PTL305
    e = torch.log(1 + p.float())  # expect: PTL305
    return a, b, c, d, e
""",
        # method spellings, and the other operand order
        """
import torch

def f(x, y):
    a = (x + 1).log()  # expect: PTL305
    b = x.exp().log1p()  # expect: PTL305
    c = (y * 2).exp() - 1.0 - y * 2  # expect: PTL305
    return a, b, c
""",
        # from-imports, and an alias
        """
from torch import exp, log
import torch as T

def g(x, r):
    kl = (exp(r) - 1) - r  # expect: PTL305
    bernoulli = x / (T.exp(x) - 1)  # expect: PTL305
    return log(exp(x) + 1), kl, bernoulli  # expect: PTL305
""",
        # k3 KL estimates, as PPO and GRPO write them (the second through a local)
        """
import torch

def approx_kl(log_prob, old_log_prob, ref, logps):
    log_ratio = log_prob - old_log_prob
    k3 = torch.mean((torch.exp(log_ratio) - 1) - log_ratio)  # expect: PTL305
    ratio = torch.exp(log_ratio)
    k3_sum = ((ratio - 1) - log_ratio).sum()  # expect: PTL305
    per_token = torch.exp(ref - logps) - (ref - logps) - 1  # expect: PTL305
    return k3, k3_sum, per_token
""",
        # phi functions of an exponential integrator, computed once; exp(-h) - 1 + h cancels too
        """
import torch

h = torch.tensor(1e-3)
phi_1 = (torch.exp(h) - 1.0) / h  # expect: PTL305
phi_2 = (torch.exp(-h) - 1.0 + h) / h**2  # expect: PTL305
remainder = -(torch.exp(h) - 1) + h  # expect: PTL305
""",
        # per step in a training loop, and in a cold branch
        """
import torch

def train(model, loader, opt, scale):
    for x, y in loader:
        rate = model(x)
        pred = (torch.exp(rate * scale) - 1) / scale  # expect: PTL305
        loss = (pred - y).pow(2).mean()
        if not torch.isfinite(loss):
            raise ValueError(f"bad loss {(torch.exp(rate) - 1 - rate).max()}")  # expect: PTL305
        loss.backward()
        opt.step()
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
    assert torch.allclose((torch.exp(x) - 1) / x, torch.expm1(x) / x)  # expect: PTL305
""",
    ]

    good_examples = [
        """
import torch
import torch.nn.functional as F

def f(z, p, h):
    return F.softplus(z), torch.log1p(p), torch.expm1(h), torch.log1p(-torch.exp(h)), torch.expm1(h) - h
""",
        # integer-valued: nothing to gain
        """
import torch

def scaling(positions, m, beta):
    return 1 + beta * torch.log(1 + torch.floor(positions / m)), torch.log(1 + torch.arange(5)), \
        (torch.exp(positions.long()) - 1) / positions, torch.exp(2) - 1 - 2
""",
        # the digits are thrown away: rounded, compared; a compressed magnitude
        """
import torch

def durations(log_dur, log_ratio, clip, coords):
    n = torch.round((torch.exp(log_dur) - 1) / log_dur).long()
    converged = (torch.exp(log_ratio) - 1 - log_ratio).abs() < 1e-6
    ratio = torch.exp(log_ratio)
    clipped = (torch.abs(ratio - 1) > clip).float().mean()
    table = torch.sign(coords) * torch.log(1.0 + coords.abs())
    gap = torch.abs(coords[:, None] - coords[None])
    relative = torch.log(gap / (coords + 1e-5) + 1.0)
    return n, clipped, table, (log_dur.exp() - 1).floor(), relative, torch.log(word_counts + 1)

def targets(duration_targets, in_degrees, lengths):
    return torch.log(duration_targets.float() + 1), torch.log(1 + in_degrees.to(torch.float32)), \
        torch.log(lengths.type(torch.float) + 1)
""",
        # a sampler's update: each exp(h) - 1 term is added to the sample, which keeps only
        # absolute precision (measured: no gain, bench/expm1_accuracy.py)
        """
import torch

def dpm_solver_step(sample, d0, d1, d2, alpha_t, sigma_t, sigma_s, h):
    first = (sigma_t / sigma_s) * sample - (alpha_t * (torch.exp(-h) - 1.0)) * d0
    return (
        first
        + (alpha_t * ((torch.exp(-h) - 1.0) / h + 1.0)) * d1
        - (alpha_t * ((torch.exp(-h) - 1.0 + h) / h**2 - 0.5)) * d2
        + sigma_t * torch.sqrt(torch.exp(2 * h) - 1.0) * torch.randn_like(sample)
    )
""",
        # no sign that the relative digits matter: used on its own, scaled, clamped, added to a bound
        """
import torch

def f(x, h, over, scale, bound, beta, d, w):
    a = torch.exp(h) - 1
    b = alpha * (torch.exp(-h) - 1.0)
    weights = ((beta * d).exp() - 1.0).clamp(max=w)
    clipped = -scale * (torch.exp(-over) - 1.0) + bound
    return a, b, weights, clipped, (torch.exp(x) - 1) / 2, (torch.exp(x) - 1 + x), torch.exp(x) - 1 - h
""",
        # raw data made a floating-point tensor where it is compressed: counts, exact in `1 + x`
        """
import torch

def collate(rows, dense):
    x = torch.log(torch.tensor(rows, dtype=torch.float) + 1)
    d = torch.log(dense.clone().detach().type(torch.float) + 1)
    a = torch.log(1 + torch.from_numpy(dense).float())
    return x, d, a
""",
        # NumPy and math are not torch
        """
import math
import numpy as np

def f(x):
    return np.log(1 + x), math.log(1 + x), (np.exp(x) - 1) / x, (math.exp(x) - 1) / x
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

def f(x, w, r):
    q = 1 + x
    q = q * w
    e = torch.exp(r)
    e = e * w
    return torch.log(q), (e - 1) - r
""",
    ]

    fix_examples = [
        # grouping parentheses around the difference go with it; a call's own parentheses stay
        FixExample(
            before="""
import torch

phi = (alpha_t * (torch.exp(-h) - 1.0)) / h
r = torch.sqrt(h / (torch.exp(2 * h) - 1.0)) * f((torch.exp(h) - 1) / h)
""",
            after="""
import torch

phi = (alpha_t * torch.expm1(-h)) / h
r = torch.sqrt(h / torch.expm1(2 * h)) * f(torch.expm1(h) / h)
""",
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(z, p, h):
    return torch.log(1 + torch.exp(z)), torch.log(p + 1), (torch.exp(h) - 1 - h) / h**2
""",
            after="""
import torch
import torch.nn.functional as F

def f(z, p, h):
    return F.softplus(z), torch.log1p(p), (torch.expm1(h) - h) / h**2
""",
        ),
        FixExample(
            before="""
import torch

y = (1 + x * x).log() + x.exp().log1p()
phi = ((x / 2).exp() - 1) / x
""",
            after="""
import torch

y = (x * x).log1p() + torch.nn.functional.softplus(x)
phi = (x / 2).expm1() / x
""",
        ),
        FixExample(
            before="""
from torch import exp, log

y = log(1 + exp(-x)) + log(1 + x) + ((exp(x) - 1) - x).mean()
""",
            after="""
from torch import exp, log
import torch

y = torch.nn.functional.softplus(-x) + torch.log1p(x) + (torch.expm1(x) - x).mean()
""",
        ),
        # GRPO's form: the subtracted argument stays, in its parentheses
        FixExample(
            before="""
import torch

kl = 0.1 * (torch.exp(ref - logps) - (ref - logps) - 1)
k = torch.exp(d) - d - 1
""",
            after="""
import torch

kl = 0.1 * (torch.expm1(ref - logps) - (ref - logps))
k = torch.expm1(d) - d
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
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log(1 + torch.exp(x))
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.softplus(x)
""",
            inputs=(
                *log_exp_inputs("softplus64(x)", SOFTPLUS),
                # the gradient: inf * 0 in the original where exp overflows; sigmoid(x) in the fix
                FixInput("the gradient where exp overflows", SOFTPLUS + """
x = torch.tensor([100.0, 0.0, -5.0], requires_grad=True)
f(x).sum().backward()
result = x.grad
reference = torch.sigmoid(x.detach())
""", check="not finite(before) and finite(after) and close(after, reference, 1e-6)"),
            ),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log1p(torch.exp(x))
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.softplus(x)
""",
            inputs=log_exp_inputs("softplus64(x)", SOFTPLUS),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return x.exp().log1p()
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.softplus(x)
""",
            inputs=log_exp_inputs("softplus64(x)", SOFTPLUS),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log(torch.exp(x) + 1.0)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.softplus(x)
""",
            inputs=log_exp_inputs("softplus64(x)", SOFTPLUS),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log(1 + torch.exp(-x))
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.softplus(-x)
""",
            inputs=log_exp_inputs("softplus64(-x)", SOFTPLUS, negate=True),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.where(x > 20.0, x, torch.log(1.0 + torch.exp(x)))
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.where(x > 20.0, x, F.softplus(x))
""",
            inputs=(
                # a transformers gate: the guard keeps float32 finite, but float16 overflows from 11.1 on
                FixInput("float16 below the guard's threshold", SOFTPLUS + """
x = torch.tensor([0.5, 12.0, 15.0, 25.0], dtype=torch.float16)
result = f(x)
reference = softplus64(x)
""", check="not finite(before) and close(after, reference, 2e-3)"),
            ),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log(1 + x)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log1p(x)
""",
            inputs=log_exp_inputs("torch.log1p(x.double())", kind="log1p"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return (x + 1).log()
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return x.log1p()
""",
            inputs=log_exp_inputs("torch.log1p(x.double())", kind="log1p"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return (torch.exp(x) - 1) / x
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.expm1(x) / x
""",
            inputs=log_exp_inputs("torch.expm1(x.double()) / x.double()", kind="expm1"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return x / (x.exp() - 1.0)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return x / x.expm1()
""",
            inputs=log_exp_inputs("x.double() / torch.expm1(x.double())", kind="expm1"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return (torch.exp(x) - 1 - x) / x
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return (torch.expm1(x) - x) / x
""",
            inputs=log_exp_inputs("(torch.expm1(x.double()) - x.double()) / x.double()", kind="expm1"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.exp(x) - x - 1
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.expm1(x) - x
""",
            inputs=log_exp_inputs("torch.expm1(x.double()) - x.double()", kind="expm1"),
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
    c = (e - 1) / d  # expect: PTL305
    return a, b, c, torch.log(1 + torch.exp(torch.arange(3)))  # expect: PTL305
""",
    ]
