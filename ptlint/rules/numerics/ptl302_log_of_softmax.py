"""PTL302 log-of-softmax: `log(softmax(x, d))` instead of `log_softmax(x, d)`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample
from ptlint.rules.numerics._helpers import (
    KEEPS_VALUES,
    Call,
    DeferredRule,
    log_call,
    one_hop,
    reduction_inputs,
    reshaped_in_place,
    resolve,
    softmax_call,
)
from ptlint.semantics.compiled import local_classes
from ptlint.semantics.nodes import DEFINITIONS, walk


def _probabilities(ctx, node: ast.AST, names: set[str], hops: int = 6) -> Call | None:
    """The softmax whose probabilities `node` holds, picked or passed on: `pi.gather(1, a)`,
    `probs[:, a]`, a local name assigned one once (added to `names`), the result of a method of
    the class or a function of the module that returns a softmax (`self.pi(s, softmax_dim=1)`)."""
    call = softmax_call(ctx, node)
    if call is not None or hops == 0:
        return call
    if isinstance(node, ast.Subscript):
        return _probabilities(ctx, node.value, names, hops - 1)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and (func.attr == "gather" and not node.keywords
                                                or func.attr in KEEPS_VALUES or func.attr in PICK_METHODS):
            return _probabilities(ctx, func.value, names, hops - 1)
        if ctx.qualname(func) == "torch.gather" and node.args:
            return _probabilities(ctx, node.args[0], names, hops - 1)
        function = _defined_here(ctx, func)
        return _returned_softmax(ctx, function) if function is not None else None
    value = one_hop(ctx, node) or _reshaped_once(ctx, node)
    if value is None:
        return None
    names.add(node.id)
    return _probabilities(ctx, value, names, hops - 1)


def _reshaped_once(ctx, node: ast.AST) -> ast.AST | None:
    """The first value of a name assigned once and then only reshaped in place (`p = probs.topk(k)`
    ... `p = p.view(-1, 1)`): what it holds is still the first value's."""
    if not isinstance(node, ast.Name):
        return None
    values = ctx.assignments(node.id)
    if len(values) < 2 or not all(reshaped_in_place(v, node.id) for v in values[1:]):
        return None
    return values[0] if isinstance(values[0], ast.expr) else None


# Methods that pick some of the probabilities (their values first, when they return indices too;
# KEEPS_VALUES keep them all):
# `probs.index_select(1, ids)`, `top_p, top_i = probs.topk(k)`, `probs.max(dim=1)[0]`.
PICK_METHODS = {"index_select", "topk", "sort", "max", "min", "kthvalue", "masked_select", "take", "narrow", "clone"}


def _defined_here(ctx, func: ast.AST) -> ast.AST | None:
    """The def a call runs, where the file shows it: `self.pi(...)` in a method of the class that
    defines `pi`, `model.pi(...)` where `model = ActorCritic()` (a class of the module), `pi(...)`
    for a function of the module."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id != "self":
        owner = _instance_class(ctx, func.value.id)
        body = owner.body if owner is not None else []
        return next((d for d in body if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name == func.attr),
                    None)
    return next(iter(ctx.defs_called(func)), None)


def _instance_class(ctx, name: str) -> ast.ClassDef | None:
    """The class of the module that `name` is an instance of: every value assigned to it (in the
    function, else at the top of the module) is a call of that class."""
    values = ctx.assignments(name) or ctx.assignments(name, ctx.tree)
    classes = {value.func.id for value in values if isinstance(value, ast.Call) and isinstance(value.func, ast.Name)}
    if len(classes) != 1 or len(values) != sum(isinstance(value, ast.Call) for value in values):
        return None
    return local_classes(ctx).get(classes.pop())


def _returned_softmax(ctx, function: ast.AST) -> Call | None:
    """The softmax every `return` of `function` gives: `return F.softmax(x, dim=d)`, or a name
    the function assigns once, from a softmax (`prob = F.softmax(x, dim=d)` ... `return prob`)."""
    assigned: dict[str, list[ast.AST]] = {}
    returns = []
    for node in walk(function, DEFINITIONS):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            assigned.setdefault(node.target.id, []).append(node)
        elif isinstance(node, ast.Return):
            returns.append(node.value)
    found = None
    for value in returns:
        if isinstance(value, ast.Name) and len(assigned.get(value.id, ())) == 1:
            value = assigned[value.id][0]
        found = softmax_call(ctx, value) if value is not None else None
        if found is None:
            return None
    return found


class LogOfSoftmax(DeferredRule):
    code = "PTL302"
    name = "log-of-softmax"
    message = "`log(softmax(x))` gives -inf where softmax underflows; use `log_softmax(x)`"
    help = "Use `F.log_softmax(x, dim=d)` (or `torch.log_softmax`) instead of the log of a softmax."
    fixable = SAFE  # the direct form only; through a local variable: reported without a fix
    triggers = ("softmax",)

    def visit_Call(self, node: ast.Call) -> None:
        log = log_call(self.ctx, node)
        if log is None:
            return
        names: set[str] = set()
        softmax, direct = resolve(self.ctx, log.operand, softmax_call, names)
        if softmax is None:
            names = set()
            softmax, direct = _probabilities(self.ctx, log.operand, names), False
        if softmax is None:
            return
        fix = None
        if direct:
            edits = self._edits(node, softmax.node)
            fix = Fix(SAFE, "Use `log_softmax`", edits) if edits else None
        self.defer(node, names, fix=fix)

    def _edits(self, log: ast.Call, softmax: ast.Call) -> tuple | None:
        """`log(softmax(x, d))` / `softmax(x, d).log()` -> `log_softmax(x, d)`, in the namespace
        (or as the method) the code used, with the softmax's own arguments."""
        edits = self.ctx.edits
        if edits.has_comment(log, softmax.func) or edits.has_comment_after(softmax, log):
            return None  # only the softmax's arguments are kept verbatim
        arguments = edits.text_between(softmax.func, softmax)  # "(x, dim=-1)"
        func = softmax.func
        if isinstance(func, ast.Attribute):  # F.softmax / torch.softmax / x.softmax: same receiver
            return (edits.replace(log, f"{edits.expression(func.value)}.log_softmax{arguments}"),)
        qualname = self.ctx.qualname(func)  # `from torch.nn.functional import softmax`
        found = edits.reference(qualname.rsplit(".", 1)[0] + ".log_softmax", at=log)
        if found is None:
            return None
        spelled, imports = found
        return (edits.replace(log, f"{spelled}{arguments}"), *imports)

    docs = """
## What it does
Finds the logarithm of a softmax — `torch.log(F.softmax(x, d))`, `F.softmax(x, d).log()`,
`torch.log(x.softmax(d))`, any import spelling, also through a local variable
(`p = torch.softmax(x, -1)` then `torch.log(p)`), of probabilities picked from it
(`torch.log(pi.gather(1, a))`, `torch.log(probs[:, 0])`, `probs.index_select(1, ids)`, the values of
`probs.topk(k)` or `probs.max(dim=1)`, also after `p = p.view(-1, 1)`), and of the result of a method of the
class or a function of the module that returns a softmax (`pi = self.pi(s, softmax_dim=1)`, an
actor-critic's policy head).

## Why is this bad?
A softmax probability below about 1e-38 (float32) or 6e-8 (float16) underflows to 0 and its log
is `-inf`; a loss built on it becomes `inf` or `nan` and its gradient `nan`. Computing the
softmax and then the log also rounds twice. `log_softmax` computes `x - logsumexp(x)` directly:
finite, more accurate, and one kernel instead of two.

Not reported: `log(softmax(x) + eps)` or `log(p.clamp(min=eps))` — a deliberate clamp that
stays finite.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: a formula that underflows is wrong wherever
  it runs, a test included.

## Example
```python
import torch
import torch.nn.functional as F


def log_probs(logits):
    return torch.log(F.softmax(logits, dim=-1))
```

## Use instead
```python
import torch
import torch.nn.functional as F


def log_probs(logits):
    return F.log_softmax(logits, dim=-1)
```

## Fix safety
Safe: `log_softmax(x, d)` is mathematically `log(softmax(x, d))`, in the same namespace the code
used (`torch.`, `F.`, or the method `x.log_softmax(d)`), with the same arguments. Only the
direct form is rewritten; through a local variable the probabilities may have other uses, so
it is reported without a fix.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.functional.log_softmax.html
"""

    bad_examples = [
        # probabilities picked from a softmax a method of the class returns (an actor-critic's
        # policy head), through names
        """
import torch
import torch.nn.functional as F
from torch import nn

class ActorCritic(nn.Module):
    def pi(self, x, softmax_dim=0):
        x = F.relu(self.fc1(x))
        prob = F.softmax(self.fc_pi(x), dim=softmax_dim)
        return prob

    def train_net(self, s, a, delta):
        pi = self.pi(s, softmax_dim=1)
        pi_a = pi.gather(1, a)
        loss = -torch.log(pi_a) * delta.detach()  # expect: PTL302
        ratio = torch.exp(torch.log(pi[:, 0]) - torch.log(self.old))  # expect: PTL302
        return loss.mean() + ratio.mean()

def train(s_vec, a_vec, advantage):
    model = ActorCritic()
    pi = model.pi(s_vec, softmax_dim=1)
    pi_a = pi.gather(1, a_vec).reshape(-1)
    return -(torch.log(pi_a) * advantage.detach()).mean()  # expect: PTL302
""",
        """
import torch
import torch.nn.functional as F

def nll(logits, target):
    logp = torch.log(F.softmax(logits, dim=-1))  # expect: PTL302
    return -logp.gather(1, target[:, None]).mean()
""",
        """
import torch

def entropy(logits):
    p = logits.softmax(-1)
    return -(p * p.log()).sum(-1)  # expect: PTL302
""",
        """
from torch.nn.functional import softmax

def f(x):
    return softmax(x, 1).log()  # expect: PTL302
""",
        # probabilities picked by index and by rank, then reshaped in place (an answer ranker)
        """
import torch
import torch.nn.functional as F

def rank(logits, first_ids, k, answer_loss):
    prob_first = F.softmax(logits, dim=1).index_select(dim=1, index=first_ids)
    topk_probs, topk_ids = prob_first.topk(k, dim=1)
    topk_probs = topk_probs.view(-1, 1)
    best = torch.log(prob_first.max(dim=1)[0])  # expect: PTL302
    return torch.cat([topk_probs.log(), -answer_loss], dim=1), best  # expect: PTL302
""",
        """
import torch

def f(x):
    return torch.log(torch.softmax(x, dim=0))  # expect: PTL302
""",
    ]

    good_examples = [
        """
import torch
import torch.nn.functional as F

def f(logits):
    return F.log_softmax(logits, dim=-1)
""",
        # a method that returns a softmax on one path only, a log of a stored probability, a
        # gathered value clamped first
        """
import torch
import torch.nn.functional as F

class Policy(torch.nn.Module):
    def pi(self, x, greedy):
        if greedy:
            return self.head(x)
        return F.softmax(self.head(x), dim=-1)

    def rank(self, logits, k, eps=1e-8):
        top_p, top_i = F.softmax(logits, dim=-1).topk(k)
        top_p = top_p.clamp(min=eps)
        return top_p.log()

    def train_net(self, s, a, prob_a, eps=1e-8):
        pi = self.pi(s, False)
        ratio = torch.exp(torch.log(pi.gather(1, a).clamp(min=eps)) - torch.log(prob_a))
        return torch.log(self.pi(s, True)[:, 0]), ratio
""",
        # a deliberate clamp: finite, not the same function
        """
import torch

def f(logits, eps=1e-8):
    p = torch.softmax(logits, -1)
    return torch.log(p + eps), torch.log(p.clamp(min=eps))
""",
        # `self.softmax` is some module, not a method of a tensor we can see
        """
import torch

class Head(torch.nn.Module):
    def forward(self, x):
        return torch.log(self.softmax(x))
""",
        # p is reassigned after the log, in a loop: the second round logs another value
        """
import torch

def f(x, ws):
    p = torch.softmax(x, -1)
    out = []
    for w in ws:
        out.append(p.log())
        p = p * w
    return out
""",
        # p is reassigned: we do not know which value reaches the log
        """
import torch

def f(x, w):
    p = torch.softmax(x, -1)
    p = p * w
    return p.log()
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch
import torch.nn.functional as F

logp = torch.log(F.softmax(logits, dim=-1))
""",
            after="""
import torch
import torch.nn.functional as F

logp = F.log_softmax(logits, dim=-1)
""",
        ),
        FixExample(
            before="""
import torch

logp = logits.softmax(-1).log()
q = torch.log(torch.softmax(x, 1))
""",
            after="""
import torch

logp = logits.log_softmax(-1)
q = torch.log_softmax(x, 1)
""",
        ),
        FixExample(
            before="""
from torch.nn.functional import softmax

logp = softmax(x, 1).log()
""",
            after="""
from torch.nn.functional import softmax
import torch

logp = torch.nn.functional.log_softmax(x, 1)
""",
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x):
    return torch.log(F.softmax(x, dim=-1))
""",
            after="""
import torch
import torch.nn.functional as F

def f(x):
    return F.log_softmax(x, dim=-1)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), -1)", "(4, 9)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.softmax(1).log()
""",
            after="""
import torch

def f(x):
    return x.log_softmax(1)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), 1)", "(2, 8, 3)", "(2, 0, 3)"),
        ),
        FixExample(
            before="""
from torch.nn.functional import softmax

def f(x):
    return softmax(x, 0).log()
""",
            after="""
from torch.nn.functional import softmax
import torch

def f(x):
    return torch.nn.functional.log_softmax(x, 0)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), 0)", "(8, 2)", "(0, 2)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return torch.log(torch.softmax(x, dim=-1))
""",
            after="""
import torch

def f(x):
    return torch.log_softmax(x, dim=-1)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), -1)", "(5, 5)"),
        ),
        FixExample(
            before="""
import torch

def f(x):
    return x.softmax(0).log()
""",
            after="""
import torch

def f(x):
    return x.log_softmax(0)
""",
            inputs=reduction_inputs("f(x)", "torch.log_softmax(x.double(), 0)", "(6, 4)", "(6, 0)"),
        ),
    ]
    unfixable_examples = [
        # the softmax kept in a variable, used again: not rewritten
        """
import torch

def entropy(x):
    p = torch.softmax(x, -1)
    return (p * p.log()).sum()  # expect: PTL302
""",
    ]
