"""PTL405 untraceable-call: `time.*`, Python `random.*`, `copy.deepcopy`, `open()` in traced code."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.compiled import WHERE_TRACED_DOC, is_traced, may_be_traced
from ptlint.semantics.values import not_a_tensor

# Python `random` functions that Dynamo traces in 2.13 (it replays their values as graph inputs)
TRACED_RANDOM = {"uniform", "randint", "randrange", "Random"}


def untraceable(node: ast.Call, ctx) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id == "open" and not ctx.names.is_local("open"):
        return "`open()`"
    qual = ctx.qualname(func)
    if qual is None:
        return None
    module, _, name = qual.rpartition(".")  # None for a parameter or local called `time` / `random`
    if module == "time":
        return f"`{qual}()`"
    if module == "random" and name not in TRACED_RANDOM:
        return f"`{qual}()` (Python's random module)"
    if qual == "copy.deepcopy" and node.args and not not_a_tensor(node.args[0], ctx):
        return "`copy.deepcopy()`"
    return None


class UntraceableCall(Rule):
    code = "PTL405"
    needs_compile = True
    name = "untraceable-call"
    message = "{what} cannot be traced by torch.compile: a graph break"
    help = ("Make the call outside the compiled code: time it from outside, draw random numbers with torch "
            "(`torch.rand`), copy modules and read files before compiling.")
    cold = False  # not on the error path: a break there costs nothing
    triggers = ("time", "random", "deepcopy", "open(")

    def visit_Call(self, node: ast.Call) -> None:
        if not self.ctx.functions or not may_be_traced(self.ctx):
            return
        what = untraceable(node, self.ctx)
        if what is not None and is_traced(self.ctx, node):
            self.report(node, self.message.format(what=what))

    docs = """
## What it does
Finds calls that TorchDynamo cannot trace — `time.*` (`time.time`, `time.perf_counter`,
`time.monotonic`, `time.sleep`, ...), Python's `random` module (`random.random`,
`random.choice`, `random.shuffle`, `random.gauss`, `random.seed`, ...), `copy.deepcopy(...)` and
`open(...)` — in code that `torch.compile` traces.

## Why is this bad?
These are C builtins or functions Dynamo deliberately skips, so each call is a graph break: the
graph ends, Python runs the call, and a new graph starts. Inside `forward` this splits the model
and re-enters Python on every step; with `fullgraph=True` it is an error. Timing code measures
nothing useful in a compiled region anyway (the graph runs asynchronously), and randomness drawn
in Python is invisible to the graph.

Measured under torch 2.13 (one break each): every `time` function tried (`time`, `perf_counter`,
`monotonic`, `time_ns`, `process_time`, `sleep`, `strftime`); `random.random`, `choice`,
`choices`, `sample`, `shuffle`, `gauss`, `normalvariate`, `betavariate`, `expovariate`,
`gammavariate`, `lognormvariate`, `paretovariate`, `weibullvariate`, `triangular`,
`getrandbits`, `seed` and `getstate`; `copy.deepcopy` of a tensor, a list of tensors or a
module; `open()` (and entering the file as a context manager).

Not reported, because they trace without a break in 2.13: `random.uniform`, `random.randint`,
`random.randrange` and `random.Random(seed)` (Dynamo draws the values and passes them into the
graph, so they still change from call to call; in one probe such a value carried across a later
graph break made Dynamo run the rest of the function eagerly), `copy.deepcopy` of a literal, and `torch.rand*`
(traced ops). `copy.deepcopy` of plain Python objects without tensors (a dict of numbers, a
dataclass) also traces; it is reported unless the argument is visibly a literal, since in a
`forward` it almost always copies tensors or modules.

## Where it reports
""" + WHERE_TRACED_DOC + """
## Example
```python
import random
import time

import torch
from torch import nn


class Dropin(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
    def forward(self, x):
        start = time.perf_counter()
        if random.random() < self.p:
            x = x.flip(-1)
        self.last_ms = (time.perf_counter() - start) * 1e3
        return x


model = torch.compile(Dropin(0.1))
```

## Use instead
```python
import torch
from torch import nn


class Dropin(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
    def forward(self, x):
        flip = torch.rand((), device=x.device) < self.p
        return torch.where(flip, x.flip(-1), x)


model = torch.compile(Dropin(0.1))
```
Time the compiled call from outside (with `torch.cuda.synchronize()` or CUDA events), draw
randomness with torch ops, copy modules and read files before compiling.

## Fix safety
No automatic fix: the replacements change behaviour (random streams, timing scope).

## References
- https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
- https://docs.pytorch.org/docs/stable/torch.compiler_fine_grain_apis.html
"""

    bad_examples = [
        """
import copy
import random
import time
import torch
from torch import nn

class Dropin(nn.Module):
    def forward(self, x):
        start = time.perf_counter()  # expect: PTL405
        if random.random() < self.p:  # expect: PTL405
            x = x.flip(-1)
        ema = copy.deepcopy(self.teacher)  # expect: PTL405
        with open("trace.txt", "a") as f:  # expect: PTL405
            f.write("step")
        return ema(x)
""",
        """
import torch
from random import shuffle
from time import sleep

@torch.compile
def permute_rows(x):
    order = list(range(x.shape[0]))
    shuffle(order)  # expect: PTL405
    sleep(0.01)  # expect: PTL405
    return x[order]
""",
    ]

    good_examples = [
        # an image-augmentation transform: an nn.Module that runs in the data pipeline on PIL
        # images, never under torch.compile (modules importing PIL/torchvision.transforms/cv2)
        """
import random

import torch
from PIL import Image


class RandomInterpolationResize(torch.nn.Module):
    def __init__(self, size, modes):
        super().__init__()
        self.size, self.modes = size, modes

    def forward(self, img):
        mode = random.choice(self.modes)
        return img.resize(self.size, mode)
""",
        # traced alternatives, and random functions Dynamo traces
        """
import copy
import random
import torch
from torch import nn

class Jitter(nn.Module):
    def forward(self, x):
        noise = torch.rand_like(x) * random.uniform(0.0, 0.1)
        k = random.randint(0, 3)
        cfg = copy.deepcopy({"k": k})
        return torch.roll(x + noise, cfg["k"], -1)
""",
        # outside traced code: timing and data loading around the model
        """
import random
import time
import torch

def benchmark(model, x):
    start = time.time()
    model(x)
    random.shuffle(x)
    with open("log.txt", "w") as f:
        f.write(str(time.time() - start))
""",
        # a parameter named like the module is not the module
        """
import time
import torch.nn as nn

class Embed(nn.Module):
    def forward(self, x, time):
        return x + time.float()
""",
    ]
