"""PTL202 data-parallel: `torch.nn.DataParallel` in any import spelling."""

from __future__ import annotations

import ast

from ptlint.rule import Rule

DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}


class UsesDataParallel(Rule):
    code = "PTL202"
    name = "data-parallel"
    message = "`{name}` is torch.nn.DataParallel: use DistributedDataParallel (one process per GPU)"
    triggers = ("DataParallel",)

    def _is_data_parallel(self, node: ast.AST) -> bool:
        return isinstance(node, (ast.Name, ast.Attribute)) and self.ctx.qualname(node) in DATA_PARALLEL

    def visit_Call(self, node: ast.Call) -> None:
        if self._is_data_parallel(node.func):
            self.report(node, self.message.format(name=ast.unparse(node.func)), end_node=node.func)

    def visit_Assign(self, node: ast.Assign) -> None:
        # `wrap = nn.DataParallel if multi_gpu else nn.Identity`: the class is chosen here and
        # called later under a local name we cannot follow. A tuple of classes (for isinstance)
        # is not reported.
        for value in (node.value.body, node.value.orelse) if isinstance(node.value, ast.IfExp) else (node.value,):
            if self._is_data_parallel(value):
                self.report(value, self.message.format(name=ast.unparse(value)))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:  # a subclass is DataParallel all the same
            if self._is_data_parallel(base):
                self.report(base, self.message.format(name=ast.unparse(base)))

    docs = """
## What it does
Finds `torch.nn.DataParallel` — however it is imported (`nn.DataParallel`,
`from torch.nn.parallel import DataParallel as DP`) — being constructed, chosen as the wrapper
class, or subclassed.

## Why is this bad?
`DataParallel` runs one Python process that drives every GPU from threads: each step it
scatters the batch from GPU 0, copies the whole model to every GPU, gathers the outputs back
to GPU 0 and reduces gradients there. The GIL, the per-step replication and the load on GPU 0
make it slower than `DistributedDataParallel` even on a single machine; PyTorch's
documentation recommends DDP instead.

Not reported: a project's own class that happens to be called `DataParallel` (defined in the
file or imported from a non-torch module), and `isinstance(m, nn.DataParallel)` checks used to
unwrap a model.

## Example
```python
model = torch.nn.DataParallel(model).cuda()
```

## Use instead
```python
# launched with `torchrun --nproc-per-node=N train.py`
torch.distributed.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
model = torch.nn.parallel.DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])
```

## Fix safety
No automatic fix: DDP needs a launcher, a process group and a distributed sampler.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel
- https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html
"""

    bad_examples = [
        """
import torch

model = torch.nn.DataParallel(model)  # expect: PTL202
""",
        """
import torch.nn as nn
from torch.nn.parallel import DataParallel as DP

def wrap(model, ids):
    if len(ids) > 1:
        return DP(model, device_ids=ids)  # expect: PTL202
    return nn.DataParallel(model)  # expect: PTL202
""",
        """
import torch
from torch import nn

wrapper = nn.DataParallel if torch.cuda.device_count() > 1 else nn.Identity  # expect: PTL202

class Parallel(nn.DataParallel):  # expect: PTL202
    pass
""",
    ]

    good_examples = [
        # a project's own class of that name
        """
import torch

class DataParallel:
    def __init__(self, module):
        self.module = module

model = DataParallel(torch.nn.Linear(2, 2))
""",
        """
from .parallel import DataParallel
from mylib.dist import DataParallel as DP

a = DataParallel(model)
b = DP(model)
""",
        # unwrapping a model that may have been wrapped elsewhere
        """
import torch.nn as nn

WRAPPERS = (nn.DataParallel, nn.parallel.DistributedDataParallel)

def unwrap(model):
    if isinstance(model, nn.DataParallel):
        model = model.module
    return model
""",
    ]
