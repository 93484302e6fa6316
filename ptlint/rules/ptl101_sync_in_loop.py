"""PTL101 sync-in-loop: `.item()`, `.cpu()`, `.numpy()`, `.tolist()` on a tensor in code that runs every step."""

from __future__ import annotations

import ast

from ptlint.astutil import NUMPY_MODULES, assigned_plain_python, comes_from_module, method_name
from ptlint.compiled import is_traced
from ptlint.rule import PER_STEP, Rule
from ptlint.tensors import STRONG, launches_device_work, loop_trains, tensor_kind, type_guarded, visibly_on_host

SYNC_METHODS = {"item": False, "numpy": False, "tolist": False, "cpu": True}  # name -> takes arguments
# Checkpoint conversion code reads tensors that were loaded into host memory.
CHECKPOINT_NAMES = ("state_dict", "checkpoint", "ckpt")
CHECKPOINT_TOKENS = {"sd", "ckpt", "weights"}  # `sds_sd`, `ckpt`: a loaded state dict


def is_sync_call(node: ast.AST) -> bool:
    name = method_name(node)
    if name not in SYNC_METHODS:
        return False
    return SYNC_METHODS[name] or not node.args


# Ops whose output size depends on data: they wait for the device themselves.
WAITING_OPS = {"nonzero", "where", "masked_select", "unique", "unique_consecutive", "argwhere"}
# Methods whose result is a NumPy array whatever they are called on.
NUMPY_ONLY = {"numpy", "astype"}
# Classes of the data pipeline: their methods work on host tensors.
HOST_CLASSES = {"Sampler", "BatchSampler", "Dataset", "IterableDataset", "DistributedSampler"}


# Folders and file names of input-pipeline code: datasets, samplers, collators, augmentation.
PIPELINE_FOLDERS = {"data", "datasets", "dataio", "dataloaders", "augment", "augmentation", "augmentations",
                    "transforms"}
PIPELINE_FILE_WORDS = ("collat", "augment", "dataset", "sampler", "dataloader", "transforms", "processing",
                       "processor")
# Tools whose job is to show values to a person: the host needs every one of them.
INSPECTION_FILE_WORDS = ("debug", "doctor", "diagnos", "plot", "visuali", "viz", "profil")
# ONNX Runtime pipelines compute in NumPy on the host.
HOST_RUNTIME_FILE_WORDS = ("onnx",)


def _data_pipeline_path(path: str) -> bool:
    parts = path.replace("\\", "/").lower().split("/")
    return bool(set(parts[:-1]) & PIPELINE_FOLDERS) or any(
        word in parts[-1] for word in PIPELINE_FILE_WORDS + INSPECTION_FILE_WORDS + HOST_RUNTIME_FILE_WORDS)


def _root(node: ast.AST) -> ast.Name | None:
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


def _leaves_loop(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.Break, ast.Return, ast.Continue, ast.Raise))
               for statement in body for n in ast.walk(statement))


def _is_checkpoint_value(node: ast.AST, ctx=None, hops: int = 1) -> bool:
    """Read from a state_dict or checkpoint, directly or through a name assigned from one."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    if not isinstance(node, ast.Name):
        return False
    if any(word in node.id.lower() for word in CHECKPOINT_NAMES) or set(node.id.lower().split("_")) & CHECKPOINT_TOKENS:
        return True
    values = ctx.assignments(node.id) if ctx is not None and hops else []
    return bool(values) and all(isinstance(v, ast.expr) and _is_checkpoint_value(v, ctx, hops - 1) for v in values)


class SyncInLoop(Rule):
    code = "PTL101"
    name = "sync-in-loop"
    message = "`.{method}()` in a loop waits for the GPU every iteration (device-to-host sync)"
    contexts = frozenset({PER_STEP})  # not once, not once per epoch, not on the error path
    cold = False
    triggers = (".item(", ".cpu(", ".numpy(", ".tolist(")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._stalls: dict[int, bool] = {}  # reported node -> a loop around it launches device work
        self._read_in_statement: set[tuple[int, str]] = set()  # (statement, tensor name) reported

    def visit_Call(self, node: ast.Call) -> None:
        if not is_sync_call(node):
            return
        value = node.func.value
        chain = value
        while isinstance(chain, (ast.Call, ast.Attribute, ast.Subscript)):
            if is_sync_call(chain):  # `x.cpu().numpy()`: one sync, reported at the first call
                return
            chain = chain.func if isinstance(chain, ast.Call) else chain.value
        if not self._holds_a_tensor(value):
            return
        if comes_from_module(value, self.ctx, NUMPY_MODULES) or assigned_plain_python(value, self.ctx) \
                or visibly_on_host(value, self.ctx) or self._type_guarded(value) or _is_checkpoint_value(value, self.ctx) \
                or self._numpy_array(value):
            return
        if is_traced(self.ctx, node):
            return  # in a forward or a compiled function PTL402 reports it (a graph break too)
        if not self.ctx.loops and node.func.attr != "item":
            return  # one bulk copy per step that the host needs (`ids.cpu()`): the form to aim for
        if self._host_side_code() or self._decides_control_flow(node) or self._already_waited(value):
            return
        if self._read_again(value):
            return
        self._stalls[id(node)] = any(launches_device_work(loop, self.ctx) for loop in self.ctx.loops)
        method = node.func.attr
        message = self.message.format(method=method) if self.ctx.loops else \
            f"`.{method}()` in code that runs every step waits for the GPU (device-to-host sync)"
        self.report(node, message)

    def keep(self, node: ast.AST, where) -> bool:
        """A sync stalls the device every time only where work is queued every time: in a loop
        that runs the model (calls it, a submodule or a loss module, backpropagates, steps an
        optimizer), or in a training step (a step hook such as `training_step` or
        `compute_loss`, a function that backpropagates, or what those call in this module).
        A loop that only reads results back (post-processing rows) waits once, at its first
        read; a helper that inference code calls per step needs its host values."""
        return self._stalls.get(id(node), False) or self.ctx.model.in_training_step(node)

    def _read_again(self, value: ast.AST) -> bool:
        """Another read of a tensor this statement already read (`t, h, w = g[0].item(),
        g[1].item(), g[2].item()`): the first read waited, one `.tolist()` fixes them all, so the
        statement is reported once."""
        root = _root(value)
        statement = next((n for n in reversed(self.ctx.stack) if isinstance(n, ast.stmt)), None)
        if root is None or statement is None:
            return False
        key = (id(statement), root.id)
        if key in self._read_in_statement:
            return True
        self._read_in_statement.add(key)
        return False

    def _host_side_code(self) -> bool:
        """The data pipeline runs on host tensors: classes deriving from a Sampler or Dataset,
        modules of data, augmentation or collation code, functions named for the CPU."""
        if _data_pipeline_path(self.ctx.path):
            return True
        for function in self.ctx.functions:
            if "cpu" in getattr(function, "name", "").lower().split("_"):
                return True
        for cls in self.ctx.classes:
            for base in cls.bases:
                base = base.value if isinstance(base, ast.Subscript) else base  # `Sampler[int]`
                qual = self.ctx.qualname(base) or ""
                name = qual or getattr(base, "id", getattr(base, "attr", ""))
                if name.startswith("torch.utils.data.") or name.rsplit(".", 1)[-1] in HOST_CLASSES:
                    return True
        return False

    def _already_waited(self, value: ast.AST, hops: int = 2) -> bool:
        """The value comes from an op whose output size depends on data (`nonzero`, one-argument
        `torch.where`, `masked_select`, `unique`): that op has already waited for the device."""
        node = value
        while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in WAITING_OPS and not (name == "where" and len(node.args) != 1):
                    return True
                node = node.func
            else:
                node = node.value
        if isinstance(node, ast.Name) and hops:
            values = [v for v in self.ctx.assignments(node.id) if isinstance(v, ast.expr)]
            return bool(values) and all(self._already_waited(v, hops - 1) for v in values)
        return False

    def _numpy_array(self, value: ast.AST, hops: int = 2) -> bool:
        """Made by a method only NumPy arrays have (`a.astype(f)`), or after `.numpy()`: the
        sync, if any, happened there; `.tolist()` of the array reads host memory."""
        node = value
        while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp, ast.IfExp)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NUMPY_ONLY:
                return True
            node = node.func if isinstance(node, ast.Call) else node.left if isinstance(node, ast.BinOp) \
                else node.body if isinstance(node, ast.IfExp) else node.value
        if isinstance(node, ast.Name) and hops:
            values = [v for v in self.ctx.assignments(node.id) if isinstance(v, ast.expr)]
            return bool(values) and self._numpy_array(values[-1], hops - 1)
        return False

    def _type_guarded(self, value: ast.AST) -> bool:
        """The code checked the value, or the value it was taken from, to be NumPy
        (`if isinstance(i, np.ndarray): ... for j in i.nonzero(): j.tolist()`)."""
        seen = 0
        while value is not None and seen < 3:
            seen += 1
            # NumPy checked, or `isinstance(x, torch.Tensor)` / duck typing: input normalisation
            # of a value whose origin the code does not know, not a step's result
            if type_guarded(value, self.ctx, NUMPY_MODULES + ("torch",)):
                return True
            root = _root(value)
            if root is None:
                return False
            if root is not value:
                value = root
                continue
            values = self.ctx.assignments(root.id)
            value = values[-1] if len(values) == 1 and isinstance(values[0], ast.expr) else None
        return False

    def _decides_control_flow(self, node: ast.Call) -> bool:
        """The value decides whether the loop goes on (`if token.item() == eos: break`, or a
        name assigned it and tested so): the loop needs it on the host, every iteration."""
        if self._indexes_a_container(node):
            return True
        loop = self.ctx.loops[-1] if self.ctx.loops else None
        if loop is not None and not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            return False
        names = set()
        for ancestor in reversed(self.ctx.stack):
            if ancestor is loop or isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            if isinstance(ancestor, (ast.If, ast.While)) and _leaves_loop(ancestor.body) \
                    and any(n is node for n in ast.walk(ancestor.test)):
                return True
            if isinstance(ancestor, ast.Assign):
                names = {t.id for t in ancestor.targets if isinstance(t, ast.Name)}
        if not names or loop is None:
            return False
        return any(isinstance(n, ast.If) and _leaves_loop(n.body) and
                   any(isinstance(m, ast.Name) and m.id in names for m in ast.walk(n.test))
                   for statement in loop.body for n in ast.walk(statement))

    def _indexes_a_container(self, node: ast.Call) -> bool:
        """`names[int(scores.argmax().item())]`: the number picks a Python object; the host needs it."""
        child = node
        for ancestor in reversed(self.ctx.stack):
            if isinstance(ancestor, ast.Call) and isinstance(ancestor.func, ast.Name) \
                    and ancestor.func.id in ("int", "float") and child in ancestor.args:
                child = ancestor
                continue
            return isinstance(ancestor, ast.Subscript) and ancestor.slice is child
        return False

    def _holds_a_tensor(self, value: ast.AST) -> bool:
        """Visibly a tensor (a torch op's or a submodule's result, a loss), or in a module that
        works with torch, or in a loop that backpropagates."""
        return tensor_kind(value, self.ctx) == STRONG or self.ctx.imports_torch() \
            or any(loop_trains(loop) for loop in self.ctx.loops)

    docs = """
## What it does
Finds `.item()`, `.cpu()`, `.numpy()` and `.tolist()` called on a tensor where it stalls the
device every step: inside a loop that runs the model (training, evaluation, a denoising or
generation loop), or in a training step — a framework step hook (`training_step`,
`*_batch_end`, `compute_loss`), a function that backpropagates, or a helper of the same module
that such code calls.

## Why is this bad?
CUDA runs asynchronously: the Python loop queues kernels and moves on. Reading a value back to
the host makes the CPU wait until every queued kernel has finished, so the GPU idles while
Python prepares the next step. Once per iteration, this can halve throughput.

Not reported:
- where the code does not run every step: once-code (module top level, `if __name__ ==
  "__main__":`, `__init__`, set-up only `main()` calls, and loops there over layers or settings
  rather than data), once per outer iteration (outside an inner batch loop, e.g. once per
  epoch, or under a periodic test such as `if step % 100 == 0` — but the optimizer step of
  gradient accumulation, `if (i + 1) % k == 0: opt.step()`, is the step itself), a branch that
  only raises, warns or logs, and test code;
- a value that is visibly a NumPy array or scalar (also one the code checked with
  `isinstance(v, np.generic)`, or duck-typed with `hasattr(v, "tolist")`), a plain Python value;
- a tensor in host memory: built by a torch factory without a device, from
  `torch.from_numpy`, already moved by `.cpu()` (also through names and loop variables, and
  names like `labels_cpu`), returned by a tokenizer or processor called with
  `return_tensors=`, or read from a `state_dict` / checkpoint;
- outside a loop, a bulk copy (`.cpu()`, `.numpy()`, `.tolist()`) in code that runs every step:
  one copy per step of data the host needs is the form to aim for; a scalar `.item()` there is
  reported (metrics read back every step);
- a value taken from an op whose output size depends on data (`torch.where(m)[0].tolist()`,
  `x.nonzero()`): that op has already waited for the device;
- a value whose type the code checks first (`if isinstance(x, torch.Tensor): x = x.tolist()`):
  input normalisation, not a step's result;
- a loop that does not run the model (no call of a model, submodule or loss module, no backward,
  optimizer step or `generate`) outside a training step: such a loop post-processes finished
  results, and only its first read waits for the device (`[t.item() for t in ts]`,
  `row.tolist()`);
- straight-line code that inference calls per step (a scheduler's index lookup, a model's
  size bookkeeping, generation post-processing): it needs its host values, and `forward` is
  PTL402's; straight-line reads are reported in training steps only;
- a read whose value decides what the code does next (`if tok.item() == eos: break`, `continue`,
  `return`, `raise`) or picks a Python object (`names[int(scores.argmax().item())]`): the host
  needs it;
- the data pipeline, which works on host tensors: methods of `Sampler` / `Dataset` subclasses,
  modules in `data/`, `datasets/`, `augment*/`, `transforms/` folders or named for collation,
  augmentation, datasets, samplers or pre-/post-processing (`processing_*.py`), and functions
  named `*_cpu*`; tools whose job is to show values to a person (modules named for debugging,
  diagnostics, plotting, visualisation or profiling); ONNX Runtime pipelines (`*onnx*` modules),
  which compute in NumPy on the host;
- in `forward` and compiled functions, where PTL402 reports it;
- a second read of the same tensor in one statement (`t, h, w = g[0].item(), g[1].item(),
  g[2].item()`): the statement is reported once, at its first read, and one `.tolist()` fixes it;
- modules that never import torch, unless the loop backpropagates or the value is visibly a
  tensor.

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
        # multi-task training: the next batch of the task's loader
        """
import torch

def train(model, loader_iters, tasks, opt):
    for task in tasks:
        x, y = next(loader_iters[task])
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(loss.item())  # expect: PTL101
""",
        # three reads of one tensor in one statement: one finding, at the first read
        """
import torch

def train(model, loader, opt):
    for x, grid in loader:
        t, h, w = (
            grid[0].item(),  # expect: PTL101
            grid[1].item(),
            grid[2].item(),
        )
        model(x, t, h, w).sum().backward()
        opt.step()
""",
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

def scores(net, xs):
    return [net(x).max().item() for x in xs]  # expect: PTL101
""",
        # an inner loop over parameter groups does not make the outer loop an epoch loop
        """
import torch

def train(model, loader, opt, lr_at):
    total = 0.0
    for step, (x, y) in enumerate(loader):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        total += loss.item()  # expect: PTL101
    return total
""",
        # a helper the batch loop calls runs every step too; so does a framework step hook
        """
import torch

def log_loss(loss, history):
    history.append(loss.item())  # expect: PTL101

def train(model, loader, history):
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        log_loss(loss, history)

class Lit:
    def training_step(self, batch, batch_idx):
        loss = self.model(batch).mean()
        self.log("loss", loss.item())  # expect: PTL101
        return loss
""",
        # the optimizer step of gradient accumulation is the training step, not a log interval
        """
import torch

def train(model, loader, opt, accum):
    for i, x in enumerate(loader):
        loss = model(x).mean() / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
            running = loss.item()  # expect: PTL101
""",
        # no torch import, but a loop that backpropagates holds tensors
        """
def train(model, loader, opt):
    for x, y in loader:
        loss = model.loss(x, y)
        loss.backward()
        opt.step()
        print(loss.item())  # expect: PTL101
""",
    ]

    good_examples = [
        # a model's position-id helper: `next()` walks image sizes, not batches, so the loop
        # is not a step loop and the helper's reads are its host bookkeeping
        """
import torch

class VisionModel(torch.nn.Module):
    def positions(self, grid, start):
        t, h = grid[0].item(), grid[1].item()
        return torch.arange(t * h) + start

    def rope_index(self, groups, image_grid):
        grid_iters = {1: iter(image_grid)}
        out, pos = [], 0
        for kind, start, end in groups:
            grid = next(grid_iters[kind])
            out.append(self.positions(grid, pos))
            pos += end - start
        return torch.cat(out)

    def forward(self, x, groups, image_grid):
        return x + self.rope_index(groups, image_grid)
""",
        # loops that only read results back: the first read waits, the others find nothing queued;
        # and a batch straight from a DataLoader is in host memory
        """
import torch

def values(ts):
    return [t.item() for t in ts]

def drain(q):
    while q:
        x = q.pop()
        print(x.detach().cpu().numpy())

for step, batch in enumerate(loader):
    ids = batch["ids"].tolist()
""",
        # the value decides whether the loop goes on: the host needs it every iteration
        """
import torch

def generate(model, tokens, eos, steps):
    for _ in range(steps):
        nxt = model(tokens)[:, -1].argmax(-1)
        tokens = torch.cat([tokens, nxt[:, None]], 1)
        if nxt.item() == eos:
            break
        token = nxt.item()
        if token == eos:
            return tokens
    return tokens
""",
        # the data pipeline works on host tensors: a Sampler, a Dataset, a CPU-only path
        """
import torch
from torch.utils.data import Sampler

class Balanced(Sampler):
    def __iter__(self):
        weights = torch.as_tensor(self.weights)
        for _ in range(len(self)):
            yield torch.multinomial(weights, 1).item()

def _pool_cpu(model, hists):
    return [model(h).sum().item() for h in hists]
""",
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
        # once: after training in __main__, a loop over layers in __init__, set-up main() calls
        """
import torch

class Net(torch.nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.scales = [b.weight.norm().item() for b in blocks]

def report(model):
    for name, p in model.named_parameters():
        print(name, p.norm().item())

def main():
    model = Net([])
    report(model)

if __name__ == "__main__":
    main()
    print(torch.ones(3).cuda().sum().item())
""",
        # cold: the error path, a warning branch
        """
import torch
import warnings

def train(model, loader):
    for x in loader:
        loss = model(x).mean()
        if torch.isnan(loss):
            raise FloatingPointError(f"nan loss after {loss.item()}")
        loss.backward()
""",
        # already in host memory: moved with .cpu() earlier, named so, or a processor's output
        """
import torch

def decode(labels, processor, images):
    labels_cpu = labels.detach().cpu()
    rows = []
    for row in labels_cpu:
        rows.append(row[row != -100].tolist())
    inputs = processor(images=images, return_tensors="pt")
    for key in inputs:
        print(inputs[key].tolist())
    return rows
""",
        # in a forward, PTL402 reports it (it is also a graph break)
        """
import torch

class Head(torch.nn.Module):
    def forward(self, x):
        for t in x:
            print(t.sum().item())
        return x
""",
    ]
