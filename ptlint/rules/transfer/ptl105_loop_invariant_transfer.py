"""PTL105 loop-invariant-transfer: a value the loop never changes, copied to the device every iteration."""

from __future__ import annotations

import ast

from ptlint.engine.rule import PER_STEP, Rule
from ptlint.rules.transfer._helpers import transfer_device
from ptlint.semantics.autograd import looks_like_model, model_value
from ptlint.semantics.nodes import DEFINITIONS, dotted
from ptlint.semantics.values import is_cpu_device, visibly_on_host
from ptlint.semantics.where import backpropagates, iterable_is_data

# Methods that change their receiver in place (besides the `*_` tensor methods): after one of them
# in the loop, the value is not the same from one iteration to the next.
MUTATING_METHODS = {"load_state_dict", "apply", "update", "append", "extend", "insert", "pop", "clear",
                    "register_buffer", "reset_parameters", "set_", "copy_", "share_memory_"}


def _store_names(target: ast.AST, out: set[str]) -> None:
    """The dotted names a store to `target` changes: `x` for `x = ...`, `self.w` for
    `self.w = ...`, `buf` for `buf[i] = ...` (the container changes)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            _store_names(element, out)
    elif isinstance(target, ast.Starred):
        _store_names(target.value, out)
    elif isinstance(target, (ast.Name, ast.Attribute)):
        name = dotted(target)
        if name:
            out.add(name)
    elif isinstance(target, ast.Subscript):
        name = dotted(target.value)
        if name:
            out.add(name)


def changed_in(loop: ast.AST, ctx) -> set[str]:
    """Dotted names the loop rebinds or changes in place, its own targets included, and those it
    hands to a function outside torch (which may change them)."""
    out: set[str] = set()
    pending: list[ast.AST] = [loop]
    while pending:
        node = pending.pop()
        if node is not loop and isinstance(node, DEFINITIONS):
            continue
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            _store_names(node.target, out)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                _store_names(target, out)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            _store_names(node.target, out)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                _store_names(target, out)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            _store_names(node.optional_vars, out)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                method = func.attr
                if method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_")):
                    name = dotted(func.value)
                    if name:
                        out.add(name)
            if not (isinstance(func, ast.Attribute) and func.attr in ("to", "cuda")) \
                    and not (ctx.qualname(func) or "").startswith("torch."):
                # handed to a function that may change it in place: `refresh(stats)`
                out.update(name for a in [*node.args, *(k.value for k in node.keywords)]
                           if isinstance(a, (ast.Name, ast.Attribute)) and (name := dotted(a)))
        pending.extend(ast.iter_child_nodes(node))
    return out


def _self_assignments(cls: ast.ClassDef, attr: str) -> list[ast.AST]:
    out = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == attr
                                                and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                for t in node.targets):
            out.append(node.value)
    return out


def _conflicts(name: str, changed: set[str]) -> bool:
    """`name` (or a part or a whole of it) changes: `x` vs `x`, `x.data` vs `x`, `self.w` vs `self.w.data`."""
    return any(name == c or name.startswith(c + ".") or c.startswith(name + ".") for c in changed)


def _chains(expression: ast.AST) -> list[str]:
    """The maximal dotted names read in an expression (`x.device` of `x.device`, `dev` of `dev`)."""
    out = []
    pending = [expression]
    while pending:
        node = pending.pop()
        name = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if name is not None:
            out.append(name)
            continue
        pending.extend(ast.iter_child_nodes(node))
    return out


class LoopInvariantTransfer(Rule):
    code = "PTL105"
    needs_accelerator = True
    name = "loop-invariant-transfer"
    message = "`{name}` does not change in this loop, yet it is copied to the device on every iteration: " \
              "move it once, before the loop"
    help = "Move the value to the device once, before the loop, and use that copy inside it."
    contexts = frozenset({PER_STEP})  # once per epoch, a copy costs little
    cold = False
    triggers = (".cuda(", ".to(")

    def visit_Call(self, node: ast.Call) -> None:
        if not self.ctx.loops:
            return
        device = transfer_device(node, self.ctx)
        if device is None or (device is not node and is_cpu_device(device, self.ctx)):
            return
        receiver = node.func.value
        name = dotted(receiver)
        if name is None or name == "self":
            return
        loop = self.ctx.loops[-1]
        key = ("ptl105-changed", id(loop))
        if key not in self.ctx.memo:
            self.ctx.memo[key] = changed_in(loop, self.ctx)
        changed = self.ctx.memo[key]
        if _conflicts(name, changed):
            return
        if device is not node and any(_conflicts(chain, changed) for chain in _chains(device)):
            return  # moved to another device each time (`for dev in devices: w.to(dev)`)
        if any(_conflicts(chain, changed) for arg in [*node.args[1:], *(k.value for k in node.keywords)]
               for chain in _chains(arg)):
            return
        module = self._module(receiver)
        if not module and isinstance(receiver, ast.Name) and self._on_device(receiver.id):
            return  # a tensor moved already: `.to()` returns it unchanged (a module's walks every parameter)
        if device is not node and any(chain.startswith(name + ".") for chain in _chains(device)):
            return  # `x.to(device=x.device, dtype=d)`: a cast where it already lives, no copy
        if not (self._on_host_or_module(receiver) or self._step_loop(loop)):
            return  # a value of unknown place, in a loop over layers or states: often there already
        self.report(node, self.message.format(name=name))

    def _on_host_or_module(self, receiver: ast.AST) -> bool:
        """The value visibly lives in host memory (a factory without `device=`, NumPy, `.cpu()`),
        or is a module."""
        if self._module(receiver) or visibly_on_host(receiver, self.ctx):
            return True
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) \
                and receiver.value.id == "self" and self.ctx.classes:
            values = _self_assignments(self.ctx.classes[-1], receiver.attr)
            return bool(values) and all(visibly_on_host(v, self.ctx) for v in values)
        return False

    def _module(self, receiver: ast.AST) -> bool:
        """Named like a model, or built from an `nn` class (or a model factory) in this file."""
        if looks_like_model(receiver):
            return True
        if isinstance(receiver, ast.Name):
            values = self.ctx.assignments(receiver.id)
            return bool(values) and all(model_value(v, self.ctx) for v in values)
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) \
                and receiver.value.id == "self" and self.ctx.classes:
            values = _self_assignments(self.ctx.classes[-1], receiver.attr)
            return bool(values) and all(model_value(v, self.ctx) for v in values)
        return False

    @staticmethod
    def _step_loop(loop: ast.AST) -> bool:
        """A loop over data or one that trains: moving anything there each step is waste."""
        return iterable_is_data(loop) or isinstance(loop, ast.While) or backpropagates(loop)

    def _on_device(self, name: str) -> bool:
        """Every value assigned to `name` is visibly built on, or moved to, a device."""
        values = self.ctx.assignments(name)
        return bool(values) and all(self._device_value(v) for v in values)

    def _device_value(self, value: ast.AST) -> bool:
        if not isinstance(value, ast.Call):
            return False
        device = transfer_device(value, self.ctx)
        if device is not None:
            return device is value or not is_cpu_device(device, self.ctx)
        placed = next((k.value for k in value.keywords if k.arg == "device"), None)
        return placed is not None and not is_cpu_device(placed, self.ctx)

    docs = """
## What it does
Finds `.to(device)` / `.cuda()` in a loop that runs every step, of a value the loop never
changes (`class_weights.to(device)`, `model.to(device)`). Such a value is a name or attribute
that no statement of the loop rebinds, stores into or changes in place (`w.add_(...)`,
`model.load_state_dict(...)`), moved to a device the loop does not change either. Reported at
the call.

## Why is this bad?
A tensor in host memory is copied to the device again on every iteration: the same bytes cross
the PCIe bus each step, and the copy synchronises with the host unless it is non-blocking. A
module's `.to(device)` walks every parameter and buffer each time, even when they are already
there. Moving the value once, before the loop, costs the copy once.

Not reported:
- a value the loop changes: its targets (`for x in batch: x.cuda()`), anything it assigns,
  stores into, or changes in place, anything it hands to a function outside torch (which may
  change it: `refresh(stats)`), and `x = x.to(device)` (the later iterations do nothing);
- a move to a device that changes in the loop (`for dev in devices: w.to(dev)`, pipeline
  stages);
- a tensor visibly created on, or already moved to, the device (`.to()` returns it
  unchanged; a module's `.to()` still walks every parameter, so a module is reported), and
  `x.to(x.device, dtype)` (a cast in place, no copy);
- in a loop that neither walks data nor trains (a loop over layers, cache states or beams), a
  value the file does not show to be in host memory or a module (an argument, an attribute of
  another object): it usually lives on the device already, and `.to()` then does nothing;
- `.to(torch.float16)` and other dtype conversions, `.to("cpu")`, `.cpu()`.

## Where it reports
- **Reports** in a loop that runs every step (over data, or one that trains), in a function,
  in `main()` or at a script's top level.
- **Silent** in once-code (loops over settings or model parts at set-up), once per epoch or
  every N steps (after an inner batch loop), a function whose callers the file does not show
  (a move without a loop of its own), error paths (an `except` body, a branch that raises, or
  only warns or logs), and test code.

## Example
```python
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, device):
    class_weights = torch.tensor([1.0, 5.0])
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y, weight=class_weights.to(device))
        loss.backward()
        optimizer.step()
```

## Use instead
```python
import torch
import torch.nn.functional as F


def train(model, loader, optimizer, device):
    class_weights = torch.tensor([1.0, 5.0]).to(device)
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y, weight=class_weights)
        loss.backward()
        optimizer.step()
```

## Fix safety
No automatic fix: the copy has to move above the loop, and whether the original host tensor is
still needed there is for a person to decide.

## References
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
"""

    bad_examples = [
        """
import torch
import torch.nn.functional as F

def train(model, loader, opt, device):
    class_weights = torch.tensor([1.0, 5.0])
    for x, y in loader:
        x = x.to(device)
        model.to(device)  # expect: PTL105
        loss = F.cross_entropy(model(x), y, weight=class_weights.to(device))  # expect: PTL105
        loss.backward()
        opt.step()
""",
        # attributes, `.cuda()`, a comprehension, a while loop, a helper of unknown callers
        """
import torch as T

class Trainer:
    def step_all(self, batches):
        outs = [self.net(b) * self.scale.cuda() for b in batches]  # expect: PTL105
        i = 0
        while i < len(batches):
            mask = self.mask.to(self.device, non_blocking=True)  # expect: PTL105
            i += 1
        return outs
""",
        # a loop over segments: the value is visibly in host memory, copied once per segment
        """
import torch

class Detector:
    def __init__(self, n):
        self.sampler = torch.linspace(0, 1, n)

    def refine(self, segments, device):
        out = []
        for idx in range(len(segments)):
            s = self.sampler.to(device)[None]  # expect: PTL105
            out.append(segments[idx] * s)
        return out
""",
        # a module moved at build time and again in the loop
        """
import torch
from torch import nn

net = nn.Sequential(nn.Linear(4, 4)).cuda()
for x in loader:
    net.cuda()  # expect: PTL105
    net(x)
""",
        # a loop in once-code still runs every step
        """
import torch

def main(loader, model):
    mean = torch.tensor([0.485, 0.456, 0.406])
    dev = torch.device("cuda")
    for images in loader:
        images = images.to(dev) - mean.to(dev)  # expect: PTL105
        model(images)

if __name__ == "__main__":
    main([], None)
""",
    ]

    good_examples = [
        # the loop changes the value: targets, assignments, in-place updates, loaded weights
        """
import torch

def train(models, loader, device, ckpts, model):
    for m in models:
        m.to(device)
    for x, y in loader:
        x = x.to(device)
        y.cuda()
    acc = torch.zeros(3)
    for x in loader:
        acc.add_(x)
        acc.to(device)
    for ckpt in ckpts:
        model.load_state_dict(torch.load(ckpt))
        model.to(device)
    buf = torch.zeros(3)
    for x in loader:
        buf[0] = x
        buf.cuda()
    stats = torch.zeros(3)
    for x in loader:
        refresh(stats, x)
        stats.cuda()
""",
        # the device changes; the value is on the device already; dtype and host moves
        """
import torch

def spread(weights, devices, loader, device):
    for dev in devices:
        weights.to(dev)
    for i, block in enumerate(devices):
        weights.to(block.device)
    w = weights.to(device)
    z = torch.zeros(3, device=device)
    for x in loader:
        w.to(device)
        z.to(device)
        weights.to(device=weights.device, dtype=torch.float16)
        weights.to(torch.float16)
        weights.to("cpu")
""",
        # a loop over cache layers: an argument of unknown place is usually on the device already
        """
class Cache:
    def reorder(self, beam_idx):
        for i in range(self.num_layers):
            self.states[i] = self.states[i].index_select(0, beam_idx.to(self.device))
""",
        # once: outside loops, set-up loops over settings, once per epoch, the error path
        """
import torch

class Model(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.w = torch.ones(3)
        for name in ["a", "b"]:
            self.w.to(device)

def fit(model, loader, device, epochs, opt):
    model.to(device)
    for epoch in range(epochs):
        model.to(device)
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()

def check(model, loader, device, stats):
    for x in loader:
        if x is None:
            raise ValueError(f"bad batch on {stats.to(device)}")
""",
    ]
