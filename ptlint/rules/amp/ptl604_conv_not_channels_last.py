"""PTL604 conv-not-channels-last (off by default): a convolutional model trained under autocast in
the default NCHW memory format."""

from __future__ import annotations

from ptlint.rules.amp._helpers import AUTOCAST, CHANNELS_LAST, CONVOLUTION, WHERE_SCRIPT_DOC, ProjectHint


class ConvNotChannelsLast(ProjectHint):
    code = "PTL604"
    name = "conv-not-channels-last"
    message = ("a model with `Conv2d` trained under autocast in the NCHW layout: "
               "`model.to(memory_format=torch.channels_last)` (and the inputs) lets cuDNN run tensor-core "
               "kernels without transposes")
    help = "Convert the model and its inputs with `.to(memory_format=torch.channels_last)`."

    def applies(self, used: str, anywhere: str) -> bool:
        return bool(CONVOLUTION.search(used)) and bool(AUTOCAST.search(used)) and not CHANNELS_LAST.search(anywhere)

    docs = """
## What it does
Finds a convolutional model trained under autocast in the default NCHW memory format. A hint, off
by default (select it with `--select PTL604`): reports a training script — a file with
a loop that calls `.backward()` — that uses autocast and trains a convolutional model (`Conv2d`
in the file or in a project module it imports, or a torchvision / timm convolutional network),
where `memory_format=torch.channels_last` appears nowhere: neither in the file nor in the project
modules it imports (read, never imported). Reported once per script, at its training loop.

## Why is this bad?
Tensor cores compute convolutions in float16 / bfloat16 in the NHWC layout. With NCHW tensors,
cuDNN transposes inputs and outputs around every convolution, or picks slower kernels: converting
the model and the input batch to `torch.channels_last` typically speeds mixed-precision training
of convolutional networks by 10-30% (NVIDIA's and PyTorch's performance guides).

Not reported: a script that mentions `channels_last` anywhere (in the file or its project
imports), one without autocast, a model without convolutions in sight. Off by default: the gain
depends on the network (depthwise-heavy and 3-D models gain less, some lose) and on the GPU,
which the code does not show.

## Where it reports
""" + WHERE_SCRIPT_DOC + """
## Example
```python
import torch
import torchvision


def train(loader, criterion):
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x.cuda()), y.cuda())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
```

## Use instead
```python
import torch
import torchvision


def train(loader, criterion):
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        x = x.cuda(non_blocking=True).to(memory_format=torch.channels_last)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), y.cuda())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
```

## Fix safety
No fix: the inputs must be converted too, and the gain has to be measured.

## References
- https://pytorch.org/tutorials/intermediate/memory_format_tutorial.html
- https://docs.nvidia.com/deeplearning/performance/dl-performance-convolutional/index.html#tensor-layout
"""

    bad_examples = [
        """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)

def train(loader, opt, scaler):
    model = Net().cuda()
    for x, y in loader:  # expect: PTL604
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x.cuda()).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
""",
        """
import torch
import torchvision

model = torchvision.models.resnet18().cuda()
scaler = torch.cuda.amp.GradScaler()
for images, labels in train_loader:  # expect: PTL604
    with torch.cuda.amp.autocast():
        loss = model(images.cuda()).logsumexp(-1).mean()
    scaler.scale(loss).backward()
""",
    ]

    good_examples = [
        """
import torch
import torchvision

model = torchvision.models.resnet18().cuda().to(memory_format=torch.channels_last)
for images, labels in train_loader:
    with torch.autocast("cuda"):
        loss = model(images.cuda().to(memory_format=torch.channels_last)).mean()
    loss.backward()
""",
        # no autocast: a question for PTL606, not this one
        """
import torch
import torch.nn as nn

model = nn.Sequential(nn.Conv2d(3, 8, 3)).cuda()
for x in loader:
    model(x.cuda()).mean().backward()
""",
        # a transformer without convolutions
        """
import torch

for x in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = gpt(x.cuda()).mean()
    loss.backward()
""",
    ]
