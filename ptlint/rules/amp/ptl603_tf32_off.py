"""PTL603 tf32-off (off by default): a CUDA training script that never enables TF32 matmuls."""

from __future__ import annotations

from ptlint.rules.amp._helpers import CUDA, MIXED_PRECISION, TF32, WHERE_SCRIPT_DOC, ProjectHint


class Tf32Off(ProjectHint):
    code = "PTL603"
    name = "tf32-off"
    message = ("this CUDA training loop runs float32 matmuls without TF32: set "
               "`torch.backends.cuda.matmul.allow_tf32 = True` or `torch.set_float32_matmul_precision(\"high\")` "
               "(Ampere and newer)")
    help = ("Set `torch.backends.cuda.matmul.allow_tf32 = True`, or call "
            '`torch.set_float32_matmul_precision("high")`, once at start-up.')

    def applies(self, used: str, anywhere: str) -> bool:
        return bool(CUDA.search(used)) and not MIXED_PRECISION.search(anywhere) and not TF32.search(anywhere)

    docs = """
## What it does
Finds a CUDA training script that never enables TF32 for its float32 matmuls. A hint, off by
default (select it with `--select PTL603`): reports a CUDA training script — a
file with a loop that calls `.backward()`, and CUDA in use (`.cuda()`, `"cuda"`,
`torch.cuda.is_available()`) — that runs without autocast and never sets
`torch.backends.cuda.matmul.allow_tf32` or calls `torch.set_float32_matmul_precision` (nor sets
`fp32_precision`), neither in the file nor in a module of the same project that it imports
(directly or through other project modules; they are read, never imported). Reported once per
script, at its training loop: the innermost loop around the first `.backward()`.

## Why is this bad?
Since torch 1.12, float32 matrix multiplications on CUDA do not use TF32 by default. On Ampere
and newer GPUs, TF32 tensor cores run them several times faster (A100: 156 against 19.5 TFLOPS),
keeping float32's range with a 10-bit mantissa — precision most training tolerates, and the
default cuDNN convolutions already use it.

Not reported: a script that uses autocast (its matmuls run in float16 / bfloat16) or sets one of
the settings anywhere, in the file or in project modules it imports. Off by default because it
depends on the hardware (no gain before Ampere) and on whether the model tolerates TF32's
precision, which a reader of the code cannot know; small models (the MLP policies of
reinforcement learning) gain little.

## Where it reports
""" + WHERE_SCRIPT_DOC + """
## Example
```python
import torch


def train(model, loader, criterion):
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
```

## Use instead
```python
import torch

torch.backends.cuda.matmul.allow_tf32 = True  # or torch.set_float32_matmul_precision("high")


def train(model, loader, criterion):
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x.cuda()), y.cuda())
        loss.backward()
        optimizer.step()
```

## Fix safety
No fix: the choice trades precision for speed and belongs to the user.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices
- https://pytorch.org/docs/stable/generated/torch.set_float32_matmul_precision.html
"""

    bad_examples = [
        """
import torch

def train(model, loader, optimizer, criterion):
    model = model.cuda()
    for epoch in range(10):
        for x, y in loader:  # expect: PTL603
            loss = criterion(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
        """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
step = 0
while step < 1000:  # expect: PTL603
    loss = model(batch.to(device)).mean()
    loss.backward()
    step += 1
""",
        # a loop over the chunks of one step is not the training loop: the loop around it is
        """
import torch

def train(model, batches):
    model.cuda()
    for batch in batches:  # expect: PTL603
        micro_batches = batch.cuda().chunk(4)
        for micro in micro_batches:
            model(micro).mean().backward()
""",
    ]

    good_examples = [
        # a library's chunked backward: no training loop
        """
import torch

def chunked_loss(head, hidden_chunks, label_chunks):
    for h, y in zip(hidden_chunks, label_chunks):
        torch.nn.functional.cross_entropy(head(h.cuda()), y).backward()
""",
        # the model trains in bfloat16: no float32 matmuls to speed up
        """
import torch

model = model.to("cuda", dtype=torch.bfloat16)
for x in loader:
    model(x.cuda()).mean().backward()
""",
        # TF32 is on
        """
import torch

torch.backends.cuda.matmul.allow_tf32 = True

def train(model, loader):
    for x in loader:
        model(x.cuda()).mean().backward()
""",
        """
import torch

torch.set_float32_matmul_precision("high")
for x in loader:
    model(x.to("cuda")).sum().backward()
""",
        # under autocast the matmuls run in half precision anyway
        """
import torch

for x in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).mean()
    loss.backward()
""",
        # no CUDA in sight
        """
import torch

for x in loader:
    model(x).mean().backward()
""",
        # no training loop
        """
import torch

def evaluate(model, loader):
    return [model(x.cuda()) for x in loader]
""",
    ]
