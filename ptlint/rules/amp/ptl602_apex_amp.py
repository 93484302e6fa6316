"""PTL602 apex-amp: NVIDIA apex's `amp` (`amp.initialize`, `amp.scale_loss`), which native AMP
replaced."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.rules.amp._helpers import APEX_CALLS, uses_any_amp


class ApexAmp(Rule):
    code = "PTL602"
    name = "apex-amp"
    message = ("`{what}`: apex's amp is deprecated in favour of native AMP; use `torch.amp.autocast` "
               "with `torch.amp.GradScaler`")
    help = ('Use `torch.autocast("cuda")` around the forward pass and `torch.amp.GradScaler("cuda")` where '
            "`amp.scale_loss` was (no scaler with bfloat16).")
    triggers = ("apex",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._found: list[tuple[ast.AST, str]] = []
        self._imports: list[tuple[ast.AST, str, set[str]]] = []  # (node, what, the names it binds)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "apex.amp" or alias.name.startswith("apex.amp."):
                bound = alias.asname or alias.name.partition(".")[0]
                self._imports.append((node, f"import {alias.name}", {bound}))
                return

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            return
        module = node.module or ""
        if module == "apex" and any(alias.name == "amp" for alias in node.names):
            bound = {alias.asname or alias.name for alias in node.names if alias.name == "amp"}
            self._imports.append((node, "from apex import amp", bound))
        elif module == "apex.amp" or module.startswith("apex.amp."):
            self._imports.append((node, f"from {module} import ...", {alias.asname or alias.name
                                                                        for alias in node.names}))

    def visit_Call(self, node: ast.Call) -> None:
        qualname = self.ctx.qualname(node.func)
        if qualname in APEX_CALLS:
            self._found.append((node, f"amp.{qualname.rsplit('.', 1)[1]}"))

    def end_file(self) -> None:
        # A module that also uses torch's own AMP offers apex as one backend among others
        # (`--amp-impl apex`): the user chose it, and the native path is already there.
        if not (self._found or self._imports) or uses_any_amp(self.ctx):
            return
        # An import nothing uses (`try: from apex import amp` kept from a template) runs no apex code.
        loaded = {n.id for n in ast.walk(self.ctx.tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        used = [(node, what) for node, what, bound in self._imports if bound & loaded]
        for node, what in sorted(used + self._found, key=lambda found: (found[0].lineno, found[0].col_offset)):
            end = node.func if isinstance(node, ast.Call) else node
            self.report(node, self.message.format(what=what), end_node=end)

    docs = """
## What it does
Finds NVIDIA apex's mixed precision (`amp.initialize`, `amp.scale_loss`), which native AMP replaced.
Reported at the import (`from apex import amp`,
`import apex.amp as amp`, `from apex.amp import ...`) and at each call of `amp.initialize` and
`amp.scale_loss`, through any import spelling.

## Why is this bad?
`apex.amp` predates PyTorch's native AMP (torch 1.6), which replaced it: apex's own README marks
`apex.amp` "Deprecated. Use PyTorch AMP", it has had no development for years, and the code needs
apex built from source against the installed torch and CUDA. `amp.initialize` patches the model's functions and keeps
fp32 master weights by `opt_level`; native autocast instead picks a precision per op, composes with
`torch.compile`, FSDP and DDP, and needs no extension build. `amp.scale_loss` is what
`torch.amp.GradScaler` does.

Not reported: an import nothing in the module uses (`try: from apex import amp` kept from a
template, with no `amp.` anywhere): no apex code runs. Nor a module that also uses torch's own AMP (`torch.amp`, `torch.autocast`, the older
`torch.cuda.amp`): there apex is one backend a user can pick (timm's `--amp-impl apex`, Ignite's
`amp_mode="apex"`), beside the native one; and the rest of apex (`apex.optimizers.FusedAdam`,
`apex.normalization`, `apex.parallel`), which are separate features.

## Where it reports
- **Reports** at the import and the calls wherever they are: in once-code (`amp.initialize` at
  set-up), per step (`amp.scale_loss`), in a function whose callers the file does not show, and
  on error paths.
- **Silent** in test code.

## Example
A complete apex training loop:
```python
import torch
from apex import amp


def train(model, optimizer, loader, criterion):
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x.cuda()), y.cuda())
        with amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        torch.nn.utils.clip_grad_norm_(amp.master_params(optimizer), 1.0)
        optimizer.step()
```

## Use instead
The same loop with native AMP (`opt_level="O1"` is autocast; the scaler replaces `scale_loss`):
```python
import torch


def train(model, optimizer, loader, criterion):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad(set_to_none=True)
        with torch.amp.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x.cuda()), y.cuda())
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # so that clipping sees true gradients
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)  # skips the step when gradients overflowed
        scaler.update()
```
With bfloat16 (`dtype=torch.bfloat16`, Ampere and newer) no scaler is needed. Checkpoints save
`scaler.state_dict()` where they saved `amp.state_dict()`.

## Fix safety
No fix: `amp.initialize` returns patched objects and the step changes shape (a context manager
around the forward pass, a scaler around backward and step).

## References
- https://pytorch.org/docs/stable/amp.html
- https://pytorch.org/docs/stable/notes/amp_examples.html
- https://github.com/NVIDIA/apex#1-amp-automatic-mixed-precision
"""

    bad_examples = [
        """
import torch
from apex import amp  # expect: PTL602

def train(model, optimizer, loader, criterion):
    model, optimizer = amp.initialize(model, optimizer, opt_level="O1")  # expect: PTL602
    for x, y in loader:
        loss = criterion(model(x), y)
        with amp.scale_loss(loss, optimizer) as scaled_loss:  # expect: PTL602
            scaled_loss.backward()
        optimizer.step()
""",
        # an optional dependency, imported under another name
        """
import torch

try:
    import apex.amp as apex_amp  # expect: PTL602
except ImportError:
    apex_amp = None

def step(loss, optimizer):
    with apex_amp.scale_loss(loss, optimizer) as scaled:  # expect: PTL602
        scaled.backward()
""",
        """
import apex

def setup(model, opt):
    return apex.amp.initialize(model, opt, opt_level="O2")  # expect: PTL602
""",
        # every import spelling whose name the module uses
        """
import apex.amp  # expect: PTL602
from apex import amp as mixed, parallel  # expect: PTL602
from apex.amp import master_params  # expect: PTL602

def clip(optimizer, loss):
    with apex.amp.scale_loss(loss, optimizer) as scaled:  # expect: PTL602
        scaled.backward()
    torch.nn.utils.clip_grad_norm_(master_params(optimizer), 1.0)
    return mixed.state_dict(), parallel
""",
    ]

    good_examples = [
        # imported but never used: a template's optional import, no apex AMP code runs
        """
import torch

try:
    from apex import amp, optimizers
    from apex.parallel import convert_syncbn_model
except ImportError:
    pass

def main(model, args):
    if args.syncBN:
        model = convert_syncbn_model(model)
    return model
""",
        # imports whose names nothing uses, in every spelling
        """
import apex.amp as unused_amp
from apex import amp as mixed, parallel
from apex.amp import master_params
from .apex import amp

model = parallel.convert_syncbn_model(build())
""",
        # other apex features
        """
from apex.optimizers import FusedAdam
from apex.parallel import DistributedDataParallel as DDP
from apex.normalization import FusedLayerNorm
""",
        # apex as one backend beside native AMP
        """
import torch

try:
    from apex import amp
    has_apex = True
except ImportError:
    has_apex = False

def backward(loss, optimizer, impl, scaler):
    if impl == "apex":
        with amp.scale_loss(loss, optimizer) as scaled:
            scaled.backward()
    else:
        scaler.scale(loss).backward()

def make_scaler():
    return torch.amp.GradScaler("cuda")
""",
        # a project module named amp is not apex's
        """
from ptlint.rules.amp import initialize

model = initialize(model)
""",
    ]
