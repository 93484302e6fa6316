"""PTL307 sigmoid-then-bce: `binary_cross_entropy(sigmoid(x), y)` instead of the logits form."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample
from ptlint.rules.numerics._helpers import (
    LossInputRule,
    bce_inputs,
    producers,
    saturated_bce_inputs,
    sigmoid_call,
    sigmoid_output,
)

BCE_FUNCTIONS = {"torch.nn.functional.binary_cross_entropy"}
BCE_CLASSES = {"torch.nn.BCELoss"}


class SigmoidThenBCE(LossInputRule):
    code = "PTL307"
    name = "sigmoid-then-bce"
    message = ("`{loss}` of a `sigmoid` output: use `binary_cross_entropy_with_logits` on the logits "
               "(exact where the sigmoid saturates, and allowed under autocast)")
    help = ("Use `F.binary_cross_entropy_with_logits(logits, target)` (or `nn.BCEWithLogitsLoss`) on the input of "
            "the sigmoid.")
    fixable = "sometimes"  # safe where offered; a loss module or a sigmoid held in a local: no fix
    triggers = ("binary_cross_entropy", "BCELoss")

    loss_functions = BCE_FUNCTIONS
    loss_classes = BCE_CLASSES

    def end_file(self) -> None:
        ctx = self.ctx
        for node, loss, scope in self.loss_calls():
            if not producers(ctx, loss.input, scope, sigmoid_output):
                continue
            spelled = ast.unparse(node.func)
            fix = None
            sigmoid = sigmoid_call(ctx, loss.input)
            if sigmoid is not None and loss.form in ("function", "inline"):
                edits = self._edits(node, loss.form, sigmoid)
                if edits:
                    fix = Fix(SAFE, "Use `binary_cross_entropy_with_logits` on the logits", edits)
            self.report(node, self.message.format(loss=spelled if len(spelled) <= 40 else spelled[:37] + "..."),
                        fix=fix)

    def _edits(self, call: ast.Call, form: str, sigmoid) -> tuple | None:
        """`F.binary_cross_entropy(torch.sigmoid(x), y, w, reduction=r)` ->
        `F.binary_cross_entropy_with_logits(x, y, w, reduction=r)`; `nn.BCELoss(...)(sigmoid(x), y)`
        -> `nn.BCEWithLogitsLoss(...)(x, y)`. Both take `weight`, `size_average`, `reduce` and
        `reduction` at the same positions and with the same meaning."""
        edits = self.ctx.edits
        if edits.has_comment(sigmoid.node):
            return None  # the sigmoid call is replaced by its argument: a comment in it would go
        target = call.func if form == "function" else call.func.func
        new_name = "binary_cross_entropy_with_logits" if form == "function" else "BCEWithLogitsLoss"
        imports: tuple = ()
        if isinstance(target, ast.Attribute):
            renamed = f"{edits.text(target.value)}.{new_name}"
        else:  # `from torch.nn.functional import binary_cross_entropy`
            module = "torch.nn.functional" if form == "function" else "torch.nn"
            found = edits.reference(f"{module}.{new_name}", at=target)
            if found is None:
                return None
            renamed, imports = found
        operand = sigmoid.operand
        inner = edits.argument(operand)
        return (edits.replace(target, renamed), edits.replace(sigmoid.node, inner), *imports)

    docs = """
## What it does
Finds `binary_cross_entropy` / `BCELoss` of a sigmoid's output instead of
`binary_cross_entropy_with_logits` of the logits. `F.binary_cross_entropy` or `nn.BCELoss` applied
to the output of a sigmoid —
`torch.sigmoid(x)`, `F.sigmoid(x)`, `torch.special.expit(x)`, `x.sigmoid()`, an `nn.Sigmoid`
module, a model whose last layer is one — directly, through local variables, and through a loss
module held in a local or on `self` (`self.bce = nn.BCELoss()`). Reported at the loss call.

## Why is this bad?
`sigmoid` rounds to exactly 1.0 in float32 once `x` passes 16.64 (8.32 in float16, 6.24 in
bfloat16), and to 0.0 below -88.7, where `exp(-x)` overflows. `BCELoss` then takes `log(0) = -inf`,
which it clamps at -100: the loss of such an example is 100 whatever `x` is, and its gradient is 0,
so confidently wrong examples stop learning. Before that, `1 - sigmoid(x)` loses precision.
`binary_cross_entropy_with_logits` computes `max(x, 0) - x*y + log1p(exp(-|x|))` from the logits:
exact everywhere, one kernel. `F.binary_cross_entropy` also refuses to run under CUDA autocast
("unsafe to autocast"); the logits form is allowed there.

Measured (torch 2.13, CPU; target 0, positive x, against a float64 reference):

| x | float32 sigmoid + BCE | float32 logits form | bfloat16 sigmoid + BCE |
|---|---|---|---|
| 4 | 4.018148 | 4.018150 | 3.9375 |
| 8 | 8.000379 | 8.000336 | 100 (clamped) |
| 12 | 11.99114 | 12.00001 | 100 |
| 16.5 | 15.94238 | 16.5 | 100 |
| 20 | 100 (clamped), gradient 0 | 20, gradient 1 | 100 |

In float16 the clamped examples get a nan gradient instead of 0 (the backward's 1e-12 epsilon
underflows), which poisons the whole step.

Not reported: a sigmoid whose output feeds another loss, a loss module or model defined in
another file, which the check cannot see.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: a loss that saturates is wrong wherever it
  runs, a test included.

## Example
```python
import torch
import torch.nn.functional as F


def bce(logits, targets, w):
    probs = torch.sigmoid(logits)
    return F.binary_cross_entropy(probs, targets, weight=w)
```

## Use instead
```python
import torch
import torch.nn.functional as F


def bce(logits, targets, w):
    return F.binary_cross_entropy_with_logits(logits, targets, weight=w)
```

## Fix safety
Offered where the rewrite keeps behaviour: the sigmoid sits directly in the call to
`F.binary_cross_entropy` (any spelling) or to an `nn.BCELoss(...)` built in place. The call becomes
`binary_cross_entropy_with_logits` / `nn.BCEWithLogitsLoss` with the sigmoid's argument and every
other argument unchanged: `weight`, `size_average`, `reduce` and `reduction` sit at the same
positions and mean the same (the weight rescales each element's loss in both). The results agree (1e-5
relative) where the sigmoid form is accurate, |x| up to about 8 in float32; beyond, the original
drifts (0.07% at x = 12) and, once `sigmoid` saturates, returns the clamped 100 with no gradient,
where the rewrite returns the true loss — the behaviour tests show both. The only behaviour that
changes is the clamp's: a run whose outputs saturate will see the true, finite loss and a gradient. A loss module held in a local or on `self`, or a sigmoid
stored in a variable, is reported without a fix: the module or the probabilities may serve
elsewhere.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.BCEWithLogitsLoss.html
- https://pytorch.org/docs/stable/amp.html#ops-that-can-autocast-to-float32 ("binary_cross_entropy ... unsafe to autocast")
"""

    bad_examples = [
        """
import torch
import torch.nn.functional as F

def loss_of(logits, y):
    return F.binary_cross_entropy(torch.sigmoid(logits), y)  # expect: PTL307
""",
        """
import torch
from torch.nn import functional

def loss_of(logits, y, w):
    p = logits.sigmoid()
    return functional.binary_cross_entropy(p, y, weight=w, reduction="sum")  # expect: PTL307
""",
        """
import torch
import torch.nn as nn

class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 1)
        self.act = nn.Sigmoid()
        self.bce = nn.BCELoss()

    def loss(self, x, y):
        return self.bce(self.act(self.head(x)), y)  # expect: PTL307
""",
        """
import torch
from torch.nn import BCELoss
from torch.nn.functional import sigmoid

criterion = BCELoss(reduction="none")

def train(model, loader):
    for x, y in loader:
        out = sigmoid(model(x)).squeeze(-1)
        loss = criterion(out, y).mean()  # expect: PTL307
        loss.backward()
""",
        """
import torch
import torch.nn as nn

def test_bce():
    x = torch.randn(4)
    assert nn.BCELoss()(torch.special.expit(x), torch.ones(4)) > 0  # expect: PTL307
""",
    ]

    good_examples = [
        """
import torch
import torch.nn.functional as F

def loss_of(logits, y):
    return F.binary_cross_entropy_with_logits(logits, y)
""",
        # probabilities that come from elsewhere (a softmax over two classes, a model we cannot see)
        """
import torch
import torch.nn.functional as F

def loss_of(model, x, y):
    p = model(x)
    q = torch.softmax(x, -1)[:, 1]
    return F.binary_cross_entropy(p, y) + F.binary_cross_entropy(q, y)
""",
        # the sigmoid is the target
        """
import torch
import torch.nn.functional as F

def distill(student_probs, teacher_logits):
    return F.binary_cross_entropy(student_probs, torch.sigmoid(teacher_logits))
""",
        # a sigmoid clamped on purpose
        """
import torch
import torch.nn.functional as F

def loss_of(x, y):
    return F.binary_cross_entropy(torch.sigmoid(x).clamp(1e-4, 1 - 1e-4), y)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch
import torch.nn.functional as F

loss = F.binary_cross_entropy(torch.sigmoid(logits), y, w, reduction="sum")
""",
            after="""
import torch
import torch.nn.functional as F

loss = F.binary_cross_entropy_with_logits(logits, y, w, reduction="sum")
""",
        ),
        FixExample(
            before="""
import torch

loss = torch.nn.functional.binary_cross_entropy((a + b).sigmoid(), y, weight=mask)
""",
            after="""
import torch

loss = torch.nn.functional.binary_cross_entropy_with_logits(a + b, y, weight=mask)
""",
        ),
        FixExample(
            before="""
from torch.nn.functional import binary_cross_entropy, sigmoid

loss = binary_cross_entropy(sigmoid(z), t)
""",
            after="""
from torch.nn.functional import binary_cross_entropy, sigmoid
import torch

loss = torch.nn.functional.binary_cross_entropy_with_logits(z, t)
""",
        ),
        FixExample(
            before="""
import torch.nn as nn
import torch

loss = nn.BCELoss(reduction="none")(torch.special.expit(z), t)
""",
            after="""
import torch.nn as nn
import torch

loss = nn.BCEWithLogitsLoss(reduction="none")(z, t)
""",
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy(torch.sigmoid(x), y)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy_with_logits(x, y)
""",
            inputs=bce_inputs(),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy(x.sigmoid(), y, w)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy_with_logits(x, y, w)
""",
            inputs=bce_inputs(weight=True),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy(torch.special.expit(x), y, weight=w, reduction='sum')
""",
            after="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy_with_logits(x, y, weight=w, reduction='sum')
""",
            inputs=bce_inputs(weight=True, reduction="sum"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return torch.nn.BCELoss(reduction='none')(torch.sigmoid(x), y)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return torch.nn.BCEWithLogitsLoss(reduction='none')(x, y)
""",
            inputs=bce_inputs(reduction="none"),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return torch.nn.BCELoss(w)(F.sigmoid(x), y)
""",
            after="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return torch.nn.BCEWithLogitsLoss(w)(x, y)
""",
            inputs=bce_inputs(weight=True),
        ),
        FixExample(
            before="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy(torch.sigmoid(x), y, reduction='none')
""",
            after="""
import torch
import torch.nn.functional as F

def f(x, y, w):
    return F.binary_cross_entropy_with_logits(x, y, reduction='none')
""",
            inputs=(*bce_inputs(reduction="none"), *saturated_bce_inputs()),
        ),
    ]

    unfixable_examples = [
        # the sigmoid kept in a variable (used again), a loss module on self: not rewritten
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.bce = nn.BCELoss()

    def forward(self, x, y):
        p = torch.sigmoid(x)
        a = F.binary_cross_entropy(p, y)  # expect: PTL307
        b = self.bce(torch.sigmoid(x), y)  # expect: PTL307
        return a + b, p
""",
        # the probabilities are kept in a variable (used again), the module lives on self
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = nn.BCELoss()

    def forward(self, x, y):
        p = torch.sigmoid(x)
        a = F.binary_cross_entropy(p, y)  # expect: PTL307
        b = self.loss(torch.sigmoid(x), y)  # expect: PTL307
        return a + b, p
""",
    ]
