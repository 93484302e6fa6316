"""PTL605 cudnn-benchmark-off (off by default): a convolutional training script on fixed-size
inputs that never turns on cuDNN's autotuner."""

from __future__ import annotations

from ptlint.rules.amp._helpers import (
    CONVOLUTION,
    CUDA,
    CUDNN_CHOICE,
    FIXED_SIZE,
    WHERE_SCRIPT_DOC,
    ProjectHint,
)


class CudnnBenchmarkOff(ProjectHint):
    code = "PTL605"
    name = "cudnn-benchmark-off"
    message = ("a convolutional training loop on fixed-size inputs that never sets "
               "`torch.backends.cudnn.benchmark = True`: cuDNN keeps its heuristic kernel choice")
    help = "Set `torch.backends.cudnn.benchmark = True` once at start-up."

    def applies(self, used: str, anywhere: str) -> bool:
        return bool(CONVOLUTION.search(used)) and bool(FIXED_SIZE.search(used)) and bool(CUDA.search(used)) \
            and not CUDNN_CHOICE.search(anywhere)

    docs = """
## What it does
Finds a convolutional training script on fixed-size inputs that never turns on `cudnn.benchmark`.
A hint, off by default (select it with `--select PTL605`): reports a CUDA training script — a file
with a loop that calls `.backward()` and CUDA in use — that trains a convolutional model (`Conv2d`,
a torchvision / timm convolutional network) on inputs of a fixed size (a resize or crop transform,
`RandomResizedCrop`, `CenterCrop`, `RandomCrop`, `Resize`, or a fixed-size dataset: MNIST, CIFAR,
SVHN, STL10, ImageNet, ImageFolder) and never sets `torch.backends.cudnn.benchmark` — neither in
the file nor in a project module it imports (read, never imported). Reported once per script, at
its training loop.

## Why is this bad?
With `cudnn.benchmark = False` (the default) cuDNN picks a convolution algorithm by heuristics.
With `True`, it times the available algorithms for each new input shape once and keeps the
fastest: when shapes do not change from step to step, every later step runs the best kernel —
often 10-20% faster for convolutional networks, at the cost of a slower first iteration.

Not reported: a script that sets `cudnn.benchmark` either way, or asks for determinism
(`cudnn.deterministic`, `torch.use_deterministic_algorithms`), where benchmarking is deliberately
off; inputs of varying size (detection, segmentation at several scales, text), where each new
shape would be benchmarked again. Off by default: the fixed input size is inferred from the
transforms and datasets in sight, and the gain depends on the GPU and the network.

## Where it reports
""" + WHERE_SCRIPT_DOC + """
## Example
```python
import torch
import torchvision
from torchvision import transforms

transform = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])


def train(loader, criterion):
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        optimizer.zero_grad()
        criterion(model(images.cuda()), labels.cuda()).backward()
        optimizer.step()
```

## Use instead
```python
import torch
import torchvision
from torchvision import transforms

torch.backends.cudnn.benchmark = True
transform = transforms.Compose([transforms.RandomResizedCrop(224), transforms.ToTensor()])


def train(loader, criterion):
    model = torchvision.models.resnet50().cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        optimizer.zero_grad()
        criterion(model(images.cuda()), labels.cuda()).backward()
        optimizer.step()
```

## Fix safety
No fix: benchmarking makes kernel selection non-deterministic, a choice that belongs to the user.

## References
- https://pytorch.org/docs/stable/backends.html#torch.backends.cudnn.benchmark
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#enable-cudnn-auto-tuner
"""

    bad_examples = [
        """
import torch
import torch.nn as nn
from torchvision import datasets, transforms

train_set = datasets.CIFAR10("data", train=True, transform=transforms.ToTensor())
model = nn.Sequential(nn.Conv2d(3, 32, 3), nn.Flatten(), nn.LazyLinear(10)).cuda()

def train(loader, opt):
    for images, labels in loader:  # expect: PTL605
        loss = nn.functional.cross_entropy(model(images.cuda()), labels.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
    ]

    good_examples = [
        """
import torch
import torch.nn as nn
from torchvision import datasets

torch.backends.cudnn.benchmark = True
model = nn.Conv2d(1, 8, 3).cuda()
for x, y in torch.utils.data.DataLoader(datasets.MNIST("data")):
    model(x.cuda()).mean().backward()
""",
        # determinism asked for: benchmarking stays off on purpose
        """
import torch
import torch.nn as nn
from torchvision import datasets

torch.backends.cudnn.deterministic = True
model = nn.Conv2d(1, 8, 3).cuda()
for x, y in torch.utils.data.DataLoader(datasets.MNIST("data")):
    model(x.cuda()).mean().backward()
""",
        # no fixed-size evidence: a text model
        """
import torch
import torch.nn as nn

conv = nn.Conv1d(64, 64, 3).cuda()
for tokens in loader:
    conv(embed(tokens.cuda())).mean().backward()
""",
    ]
