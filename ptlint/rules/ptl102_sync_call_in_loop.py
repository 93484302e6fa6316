"""PTL102 sync-call-in-loop: `torch.cuda.synchronize()` / `torch.cuda.empty_cache()` in a loop."""

from __future__ import annotations

import ast

from ptlint.rule import PER_STEP, Rule

SYNC_FUNCTIONS = {
    f"torch.{backend}.{function}"
    for backend in ("cuda", "mps", "xpu", "accelerator")
    for function in ("synchronize", "empty_cache")
}


class SyncCallInLoop(Rule):
    code = "PTL102"
    name = "sync-call-in-loop"
    message = "`{call}()` in a loop stalls the host every iteration"
    contexts = frozenset({PER_STEP})
    cold = False
    triggers = ("synchronize", "empty_cache")

    def visit_Call(self, node: ast.Call) -> None:
        qualname = self.ctx.qualname(node.func)
        if qualname not in SYNC_FUNCTIONS:
            return
        message = self.message.format(call=qualname) if self.ctx.loops else \
            f"`{qualname}()` in code that runs every step stalls the host every step"
        self.report(node, message)

    docs = """
## What it does
Finds `torch.cuda.synchronize()` and `torch.cuda.empty_cache()` (and their `mps`, `xpu` and
`torch.accelerator` twins) called inside a loop, resolving every import spelling
(`from torch.cuda import synchronize as sync`).

## Why is this bad?
`synchronize()` blocks the CPU until the GPU has drained its queue, so the next step cannot be
queued while the current one runs. `empty_cache()` also synchronizes, and hands cached blocks
back to the driver only for the allocator to request them again on the next step, which is slow
and fragments memory. Either one per iteration costs throughput for no benefit.

Also in code that runs every step without a loop of its own: a helper the step loop of the
same module calls, a framework step hook.

Not reported: a call that runs once per outer iteration (outside an inner batch loop) or every
N steps, once-code (set-up, the end of a script, loops over settings there), the error path
(`except` blocks, branches that raise), and test code.

## Example
```python
for batch in loader:
    loss = step(batch)
    torch.cuda.synchronize()
```

## Use instead
```python
for batch in loader:
    loss = step(batch)
torch.cuda.synchronize()  # once, when you need the timing or the memory
```
To time GPU work per step, use `torch.cuda.Event(enable_timing=True)` pairs.

## Fix safety
No automatic fix: benchmark code may need the sync where it is.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
"""

    bad_examples = [
        """
import torch

for batch in loader:
    out = model(batch)
    torch.cuda.synchronize()  # expect: PTL102
""",
        """
from torch.cuda import synchronize as sync, empty_cache

def run(loader, model):
    for batch in loader:
        model(batch)
        sync()  # expect: PTL102
        empty_cache()  # expect: PTL102
""",
        """
from torch import cuda

while True:
    cuda.synchronize()  # expect: PTL102
""",
        # an inner loop over parameter groups; a helper the step loop calls
        """
import torch

def release():
    torch.cuda.empty_cache()  # expect: PTL102

def train(model, loader, opt):
    for x in loader:
        for g in opt.param_groups:
            g["lr"] *= 0.99
        model(x).sum().backward()
        opt.step()
        torch.cuda.synchronize()  # expect: PTL102
        release()
""",
    ]

    good_examples = [
        """
import torch

def bench(model, x):
    for _ in range(10):
        model(x)
    torch.cuda.synchronize()
""",
        """
import torch

for epoch in range(3):
    for batch in loader:
        model(batch)
    torch.cuda.empty_cache()
""",
        """
def synchronize():
    pass

for i in range(3):
    synchronize()
    stream.synchronize()
""",
        # once: set-up, the end of a script, a loop over settings, the error path; test code is
        # silent too (tests/test_engine.py)
        """
import torch

def main(model, loader):
    for name in ("warmup", "run"):
        torch.cuda.synchronize()
    for x in loader:
        try:
            model(x)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            raise

if __name__ == "__main__":
    main(None, [])
    torch.cuda.synchronize()
""",
    ]
