"""PTL101 sync-in-loop: `.item()`, `.cpu()`, `.numpy()`, `.tolist()` on a tensor in a loop."""

from __future__ import annotations

import ast

from ptlint.astutil import (NUMPY_MODULES, assigned_plain_python, comes_from_module, hot_loop, method_name,
                            type_guarded, visibly_on_cpu)
from ptlint.rule import Rule

SYNC_METHODS = {"item": False, "numpy": False, "tolist": False, "cpu": True}  # name -> takes arguments
# Checkpoint conversion code reads tensors that were loaded into host memory.
CHECKPOINT_NAMES = ("state_dict", "checkpoint", "ckpt")


def is_sync_call(node: ast.AST) -> bool:
    name = method_name(node)
    if name not in SYNC_METHODS:
        return False
    return SYNC_METHODS[name] or not node.args


def _is_checkpoint_value(node: ast.AST) -> bool:
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and any(word in node.id.lower() for word in CHECKPOINT_NAMES)


class SyncInLoop(Rule):
    code = "PTL101"
    name = "sync-in-loop"
    message = "`.{method}()` in a loop waits for the GPU every iteration (device-to-host sync)"
    triggers = (".item(", ".cpu(", ".numpy(", ".tolist(")

    def visit_Call(self, node: ast.Call) -> None:
        if not is_sync_call(node) or not self.ctx.loops:
            return
        value = node.func.value
        chain = value
        while isinstance(chain, (ast.Call, ast.Attribute, ast.Subscript)):
            if is_sync_call(chain):  # `x.cpu().numpy()`: one sync, reported at the first call
                return
            chain = chain.func if isinstance(chain, ast.Call) else chain.value
        if not self.ctx.imports_torch():
            return  # a module that never imports torch rarely holds tensors: precision first
        if comes_from_module(value, self.ctx, NUMPY_MODULES) or assigned_plain_python(value, self.ctx) \
                or visibly_on_cpu(value, self.ctx) or type_guarded(value, self.ctx, NUMPY_MODULES) \
                or _is_checkpoint_value(value):
            return
        if hot_loop(self.ctx) is None:
            return
        self.report(node, self.message.format(method=node.func.attr))

    docs = """
## What it does
Finds `.item()`, `.cpu()`, `.numpy()` and `.tolist()` called on a tensor inside a loop or a
comprehension.

## Why is this bad?
CUDA runs asynchronously: the Python loop queues kernels and moves on. Reading a value back to
the host makes the CPU wait until every queued kernel has finished, so the GPU idles while
Python prepares the next step. Once per iteration, this can halve throughput.

Not reported: a value that is visibly a NumPy array or scalar (also one the code checked with
`isinstance(v, np.generic)`, or duck-typed with `hasattr(v, "tolist")`), a plain Python value, or a tensor in host memory (built by a torch
factory without a device, from `torch.from_numpy`, or already moved by `.cpu()`), or read from
a `state_dict` / checkpoint (conversion code that runs on loaded, host-memory tensors); a call that runs
once per outer iteration (after an inner batch loop, e.g. once per epoch) or is guarded by a
periodic test such as `if step % 100 == 0`; modules that never import torch.

## Example
```python
for batch in loader:
    loss = model(batch).mean()
    loss.backward()
    running += loss.item()
```

## Use instead
```python
running = torch.zeros((), device=device)
for batch in loader:
    loss = model(batch).mean()
    loss.backward()
    running += loss.detach()
print(running.item())  # one sync, after the loop
```

## Fix safety
No automatic fix: where to accumulate depends on the code.

## References
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
"""

    bad_examples = [
        """
import torch

def train(model, loader, opt):
    total = 0.0
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()  # expect: PTL101
    return total
""",
        """
import torch as T

def predictions(model, batches):
    out = []
    for batch in batches:
        out.append(model(batch).argmax(-1).cpu())  # expect: PTL101
    return out
""",
        """
import torch

def values(ts):
    return [t.item() for t in ts]  # expect: PTL101
""",
        """
import torch

def drain(q):
    while q:
        x = q.pop()
        arr = x.detach().cpu().numpy()  # expect: PTL101
        print(arr)
""",
        """
import torch

for step, batch in enumerate(loader):
    ids = batch["ids"].tolist()  # expect: PTL101
""",
    ]

    good_examples = [
        # once per epoch: the .item() runs after the inner batch loop
        """
import torch

def fit(model, loader, opt, epochs):
    for epoch in range(epochs):
        epoch_loss = torch.zeros(())
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            epoch_loss += loss.detach()
        print(epoch, epoch_loss.item())
""",
        # visibly NumPy, or plain Python
        """
import numpy as np
import torch

def f(n):
    for i in range(n):
        a = np.arange(i)
        b = [1, 2, 3]
        print(a.tolist(), np.zeros(3).tolist(), b)
""",
        # outside any loop; the iterable of a loop is evaluated once
        """
import torch

def f(t):
    v = t.item()
    for x in t.tolist():
        print(x)
    return [y for y in t.cpu().numpy()]
""",
        # periodic logging
        """
import torch

def train(loader, model):
    for step, x in enumerate(loader):
        loss = model(x)
        if step % 100 == 0:
            print(loss.item())
""",
        # no torch in this module
        """
def f(rows):
    for row in rows:
        print(row.tolist())
""",
        # visibly in host memory: reading it back is no device sync
        """
import numpy as np
import torch

def scheduler_steps(step, arrays, n):
    rates = [r.item() for r in torch.linspace(0, 0.1, n, device="cpu")]
    for a in arrays:
        latents = step(torch.from_numpy(a)).prev_sample
        latents = latents.numpy()
    host = torch.ones(3).cpu()
    for i in range(3):
        print(host.tolist())
""",
        # NumPy scalars the code has type-checked; checkpoint tensors loaded in host memory;
        # a factory without device= builds in host memory
        """
import numpy as np
import torch

def clean(params, state_dict):
    for k in params:
        if isinstance(params[k], (np.integer, np.floating)):
            params[k] = params[k].item()
    for key in list(state_dict):
        alpha = state_dict.pop(key).item()
    for row in params["ids"]:
        if hasattr(row, "tolist"):
            row = row.tolist()
    rates = [x.item() for x in torch.linspace(0, 0.1, 12)]
""",
        # a function defined in a loop body is not run per iteration by the loop
        """
import torch

for name in ["a", "b"]:
    def read(t):
        return t.item()
""",
    ]
