"""PTL203 dataloader-settings: a `DataLoader` built without `num_workers` or `pin_memory`."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule

DATALOADER = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, pin_memory, ...)
POSITION = {"num_workers": 5, "pin_memory": 7}


class DataLoaderSettings(Rule):
    code = "PTL203"
    name = "dataloader-settings"
    message = "`DataLoader` without {missing}: {why}"
    help = "Pass `num_workers=` (a few per GPU) and `pin_memory=True` to the `DataLoader`."
    default = False
    triggers = ("DataLoader",)

    def visit_Call(self, node: ast.Call) -> None:
        if self.ctx.qualname(node.func) not in DATALOADER:
            return
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            return  # `**kwargs` / `*args` may well carry the settings: we cannot see them
        given = {k.arg for k in node.keywords}
        missing = [name for name, position in POSITION.items()
                   if name not in given and len(node.args) <= position]
        if not missing:
            return
        why = []
        if "num_workers" in missing:
            why.append("batches are loaded in the training process, between steps")
        if "pin_memory" in missing:
            why.append("pageable memory makes host-to-device copies slower and synchronous")
        self.report(node, self.message.format(missing=" or ".join(f"`{m}`" for m in missing),
                                              why="; ".join(why)), end_node=node.func)

    docs = """
## What it does
Finds `torch.utils.data.DataLoader(...)` (in any import spelling) constructed without
`num_workers` or without `pin_memory`. Off by default: select it with `--select PTL203`.

## Why is this bad?
With the default `num_workers=0` every batch is read, decoded and collated in the training
process itself, so the GPU waits while the CPU prepares the next batch. With the default
`pin_memory=False` batches live in pageable memory: `.to(device, non_blocking=True)` cannot
overlap the copy with compute, and every copy goes through an extra staging buffer.
Both defaults are fine for small in-memory data sets or CPU-only code, which is why the rule
is off unless selected; writing the values explicitly documents the choice.

Not reported: a call that passes `**kwargs` or `*args` (the settings may be in there).

## Where it reports
- **Reports** wherever a loader is built: in once-code (the usual place), per step, in a
  function whose callers the file does not show, and on error paths.
- **Silent** in test code.

## Example
```python
import torch
from torch.utils.data import DataLoader


def make_loader(dataset):
    return DataLoader(dataset, batch_size=64, shuffle=True)
```

## Use instead
```python
import torch
from torch.utils.data import DataLoader


def make_loader(dataset):
    return DataLoader(dataset, batch_size=64, shuffle=True,
                      num_workers=4, pin_memory=torch.cuda.is_available())
```

## Fix safety
No automatic fix: the right number of workers depends on the machine and the data set.

## References
- https://pytorch.org/docs/stable/data.html#multi-process-data-loading
- https://pytorch.org/docs/stable/data.html#memory-pinning
"""

    bad_examples = [
        """
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32, shuffle=True)  # expect: PTL203
""",
        """
import torch

def loaders(train, val, workers):
    a = torch.utils.data.DataLoader(train, batch_size=8, num_workers=workers)  # expect: PTL203
    b = torch.utils.data.DataLoader(val, batch_size=8, pin_memory=True)  # expect: PTL203
    return a, b
""",
        """
from torch.utils.data import DataLoader as DL

loader = DL(  # expect: PTL203
    dataset,
    batch_size=4,
)
""",
    ]

    good_examples = [
        """
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
""",
        # the settings may come through **kwargs
        """
import torch

def build(dataset, **loader_kwargs):
    return torch.utils.data.DataLoader(dataset, **loader_kwargs)
""",
        # all given positionally; and a project's own DataLoader
        """
from torch.utils.data import DataLoader
from ptlint.rules.data import DataLoader as OwnLoader

a = DataLoader(ds, 8, True, None, None, 2, None, True)
b = OwnLoader(ds)
""",
    ]
