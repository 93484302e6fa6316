"""PTL606 no-mixed-precision (off by default): a CUDA training loop with no autocast at all."""

from __future__ import annotations

from ptlint.rules.amp._helpers import CUDA, MIXED_PRECISION, WHERE_SCRIPT_DOC, ProjectHint


class NoMixedPrecision(ProjectHint):
    code = "PTL606"
    name = "no-mixed-precision"
    message = ("this CUDA training loop runs entirely in float32: `torch.autocast(\"cuda\", dtype=torch.bfloat16)` "
               "around the forward pass (with `torch.amp.GradScaler` for float16) uses the tensor cores")
    help = ('Run the forward pass under `torch.autocast("cuda", dtype=torch.bfloat16)` (with float16, also a '
            '`torch.amp.GradScaler("cuda")`).')

    def applies(self, used: str, anywhere: str) -> bool:
        return bool(CUDA.search(used)) and not MIXED_PRECISION.search(anywhere)

    docs = """
## What it does
Finds a CUDA training loop without any mixed precision. A hint, off by default (select it with
`--select PTL606`): reports a CUDA training script — a file
with a loop that calls `.backward()`, and CUDA in use — with no mixed precision anywhere: no
autocast (`torch.autocast`, `torch.amp`, `torch.cuda.amp`), no `GradScaler`, no apex amp, no
half-precision model (`.half()`, `bfloat16`, `float16`), no mixed-precision option (`fp16`, `bf16`,
`mixed_precision`) — neither in the file nor in a project module it imports (read, never
imported). Reported once per script, at its training loop.

## Why is this bad?
On GPUs with tensor cores (Volta and newer), float16 / bfloat16 matmuls and convolutions run
several times faster than float32 and move half the bytes; autocast keeps the ops that need
float32 (reductions, softmax, losses) in float32. Mixed precision typically speeds training 1.5-3x
and halves activation memory, with the same accuracy.

Not reported: a script that uses any form of mixed or half precision, in the file or in project
modules it imports. Off by default: whether the model trains stably in reduced precision, and
whether the GPU has tensor cores, is not in the code; small models (the MLP policies of
reinforcement learning) gain little.

## Where it reports
""" + WHERE_SCRIPT_DOC + """
## Example
```python
import torch


def train(model, loader, criterion, optimizer):
    model = model.cuda()
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
```

## Use instead
```python
import torch


def train(model, loader, criterion, optimizer):
    model = model.cuda()
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
```

## Fix safety
No fix: the precision of training is the user's choice, and float16 also needs a `GradScaler`.

## References
- https://pytorch.org/docs/stable/amp.html
- https://pytorch.org/tutorials/recipes/recipes/amp_recipe.html
"""

    bad_examples = [
        """
import torch

def train(model, loader, optimizer):
    model.to("cuda")
    for x, y in loader:  # expect: PTL606
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ]

    good_examples = [
        """
import torch

def train(model, loader, optimizer, scaler):
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x.cuda(), y.cuda())
        scaler.scale(loss).backward()
""",
        # half precision chosen by an option
        """
import torch

def train(model, loader, optimizer, args):
    model = model.cuda()
    if args.fp16:
        model = model.half()
    for x in loader:
        model(x.cuda()).mean().backward()
""",
        # CPU training
        """
import torch

for x, y in loader:
    torch.nn.functional.mse_loss(model(x), y).backward()
""",
    ]
