"""PTL306 softmax-into-cross-entropy: probabilities given to a loss that expects logits."""

from __future__ import annotations

import ast

from ptlint.rules.numerics._helpers import LossInputRule, producers, softmax_output

CROSS_ENTROPY_FUNCTIONS = {"torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss"}
CROSS_ENTROPY_CLASSES = {"torch.nn.CrossEntropyLoss", "torch.nn.NLLLoss"}


class SoftmaxIntoCrossEntropy(LossInputRule):
    code = "PTL306"
    name = "softmax-into-cross-entropy"
    message = ("`{loss}` gets the output of `softmax`: it takes logits and applies `log_softmax` itself; "
               "pass the logits")
    help = ("Pass the logits (the input of `softmax`) to the loss: `F.cross_entropy` applies `log_softmax` itself "
            "(`F.nll_loss` takes `F.log_softmax(logits, dim)`).")
    nll_message = ("`{loss}` gets the output of `softmax`: it takes log-probabilities, so this is `-p[y]`, "
                   "not `-log p[y]`; pass `log_softmax(x)`")
    triggers = ("cross_entropy", "CrossEntropyLoss", "nll_loss", "NLLLoss")

    loss_functions = CROSS_ENTROPY_FUNCTIONS
    loss_classes = CROSS_ENTROPY_CLASSES

    def end_file(self) -> None:
        for node, loss, scope in self.loss_calls():
            if not producers(self.ctx, loss.input, scope, softmax_output):
                continue
            spelled = ast.unparse(node.func)
            template = self.nll_message if "nll" in loss.loss.lower() else self.message
            self.report(node, template.format(loss=spelled if len(spelled) <= 40 else spelled[:37] + "..."))

    docs = """
## What it does
Finds softmax output passed as the prediction to a loss that expects logits or log-probabilities.
The output of a softmax passed as the prediction to `F.cross_entropy`,
`nn.CrossEntropyLoss`, `F.nll_loss` or `nn.NLLLoss`: directly, through local variables, through a
view or a dtype cast (`probs.view(-1, C)`), through a loss module held in a local or on `self`
(`self.criterion = nn.CrossEntropyLoss()` then `self.criterion(F.softmax(x, 1), y)`), and from a
model whose output is a softmax (`nn.Sequential(..., nn.Softmax(dim=1))`, or a module class of the
same file whose `forward` returns `F.softmax(...)`). Reported at the loss call.

## Why is this bad?
`cross_entropy` applies `log_softmax` to its input itself. Given probabilities, it computes
`log_softmax(softmax(x))`: every probability lies in [0, 1], so the "logits" it sees differ by at
most 1, the loss can never fall much below `log(C) - 1`, and the gradient shrinks towards zero as the
model grows confident — training stalls while the loss curve looks merely slow. `nll_loss`
expects log-probabilities: given probabilities it returns `-p[y]`, a different loss altogether.

Not reported: a softmax used as the *target* (`F.cross_entropy(student, F.softmax(teacher / T, -1))`,
soft labels are probabilities); `log_softmax` output (idempotent under `cross_entropy`);
`torch.log(softmax(x))` into `nll_loss` (correct, though PTL302 asks for `log_softmax`); a loss module
or model defined in another file, which the check cannot see.

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code: the wrong loss is wrong wherever it runs, a
  test included.

## Example
```python
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.head = nn.Linear(dim, classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        probs = F.softmax(self.head(x), dim=-1)
        return self.criterion(probs, labels)
```

## Use instead
```python
import torch.nn as nn
import torch.nn.functional as F


class Classifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.head = nn.Linear(dim, classes)
        self.criterion = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        logits = self.head(x)
        loss = self.criterion(logits, labels)
        probs = logits.softmax(dim=-1)  # where probabilities are needed, e.g. for metrics
        return loss, probs
```

## Fix safety
No fix: the rewrite depends on the code around it (the probabilities are often needed elsewhere,
and the model's `forward` may have to return logits instead).

## References
- https://pytorch.org/docs/stable/generated/torch.nn.CrossEntropyLoss.html
- https://pytorch.org/docs/stable/generated/torch.nn.functional.nll_loss.html
"""

    bad_examples = [
        """
import torch
import torch.nn.functional as F

def loss_of(logits, target):
    return F.cross_entropy(F.softmax(logits, dim=-1), target)  # expect: PTL306
""",
        # a local, reassigned, and a view on the way
        """
import torch
from torch.nn import functional

def step(model, x, y):
    out = model(x)
    out = functional.softmax(out, dim=-1)
    return functional.cross_entropy(out.view(-1, out.size(-1)), y.view(-1))  # expect: PTL306
""",
        # a loss module on self, the softmax as a method
        """
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 3)
        self.criterion = nn.CrossEntropyLoss()

    def loss(self, x, y):
        return self.criterion(self.head(x).softmax(-1), y)  # expect: PTL306
""",
        # a loss module in a module-level name, defined after the function
        """
from torch.nn import CrossEntropyLoss, Softmax
import torch

def train_step(logits, y):
    probs = Softmax(dim=1)(logits)
    return criterion(probs, y)  # expect: PTL306

criterion = CrossEntropyLoss(label_smoothing=0.1)
""",
        # nll_loss wants log-probabilities
        """
import torch
import torch.nn.functional as F

def nll(x, y):
    p = torch.softmax(x, 1)
    return F.nll_loss(p, y)  # expect: PTL306
""",
        # a model whose last layer is a softmax
        """
import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
criterion = nn.CrossEntropyLoss()

def fit(loader, opt):
    for x, y in loader:
        loss = criterion(model(x), y)  # expect: PTL306
        loss.backward()
        opt.step()
""",
        # a model class of this file that returns a softmax; a softmax module on self
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 2)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        return self.softmax(self.fc(x))

def train(loader, device):
    net = Net().to(device)
    loss_fn = F.cross_entropy
    for x, y in loader:
        out = net(x)
        loss = loss_fn(out, y)  # expect: PTL306
        loss.backward()
""",
        # in test code too: a wrong formula is wrong there as well
        """
import torch
import torch.nn.functional as F

def test_loss():
    x = torch.randn(4, 3)
    assert F.cross_entropy(x.softmax(dim=1), torch.tensor([0, 1, 2, 0])) > 0  # expect: PTL306
""",
    ]

    good_examples = [
        # logits go in; probabilities are computed beside the loss
        """
import torch
import torch.nn.functional as F

def step(model, x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    probs = F.softmax(logits, dim=-1)
    return loss, probs
""",
        # soft targets: a softmax as the target is right
        """
import torch
import torch.nn.functional as F

def distill(student, teacher, T=2.0):
    return F.cross_entropy(student / T, F.softmax(teacher / T, dim=-1))
""",
        # log-probabilities into nll_loss
        """
import torch
import torch.nn.functional as F

def nll(x, y):
    return F.nll_loss(F.log_softmax(x, dim=1), y), F.nll_loss(torch.log(F.softmax(x, 1)), y)
""",
        # the name holds a softmax on one path only
        """
import torch
import torch.nn.functional as F

def f(x, y, normalise):
    out = x
    if normalise:
        out = F.softmax(x, dim=-1)
    return F.cross_entropy(x, y)
""",
        # a criterion passed in: unknown
        """
import torch
import torch.nn.functional as F

def f(x, y, criterion):
    return criterion(F.softmax(x, -1), y)
""",
        # self.softmax is some module we cannot see; the loss is another one
        """
import torch
import torch.nn as nn

class Head(nn.Module):
    def __init__(self, loss):
        super().__init__()
        self.loss = loss
        self.mse = nn.MSELoss()

    def forward(self, x, y):
        p = torch.softmax(x, -1)
        return self.loss(p, y) + self.mse(p, y)
""",
        # a model whose forward returns logits in training
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def forward(self, x):
        if self.training:
            return x
        return F.softmax(x, dim=1)

def train(loader):
    net = Net()
    for x, y in loader:
        F.cross_entropy(net(x), y).backward()
""",
    ]
