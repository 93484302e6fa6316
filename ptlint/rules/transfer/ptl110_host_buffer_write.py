"""PTL110 host-buffer-write: a model's or a loss's result stored, every step, into a tensor that a
torch factory made in host memory (no `device=`)."""

from __future__ import annotations

import ast

from ptlint.engine.finding import UNSAFE, Fix
from ptlint.engine.rule import PER_STEP, FixExample, FixInput, Rule
from ptlint.rules.transfer._helpers import transfer_device
from ptlint.semantics.autograd import is_loss_call, is_model_call, statements_of
from ptlint.semantics.nodes import (
    FUNCTION_DEFS,
    body_nodes,
    dotted,
    method_name,
    root_name,
)
from ptlint.semantics.values import (
    HOST_FACTORIES,
    KEPT_ATTRIBUTES,
    NUMPY_MODULES,
    REDUCTIONS,
    TENSOR_METHODS,
    backward_names,
    is_cpu_device,
    is_torch_op,
)
from ptlint.semantics.where import in_model_loop

# Factories that allocate a buffer of a given size: without `device=` it lives in host memory.
BUFFER_FACTORIES = {"torch.zeros", "torch.ones", "torch.empty", "torch.full"}
# Keywords that make the buffer's place a deliberate choice, or hide it (`**kwargs` has arg None).
FACTORY_BLOCKERS = {"device", "pin_memory", "out", None}
# Methods whose result lives where their receiver does (`model(x).mean()`, `loss.detach()`);
# `.cpu()` and `.to("cpu")` are the host copies themselves (`.item()`, `.tolist()`: host values).
SAME_PLACE_METHODS = (REDUCTIONS | TENSOR_METHODS | {"detach", "squeeze", "sum", "mean"}) - {"cpu"}
# How visibly a value is a device result (`_device_result`): a loss or a reduction is small, and
# the host needs it only once, after the loop; a whole model output may be what the host needs
# every step (and a device buffer of every batch's output costs device memory): not reported.
NOT, OUTPUT, SMALL = 0, 1, 2
SMALLER_METHODS = REDUCTIONS | {"argmax", "argmin"}
# Callee names of a loss computed by a project's own function (`chunked_cross_entropy(...)`).
LOSS_SUFFIXES = ("cross_entropy", "_loss")
# Context managers that give factories a default device (`with torch.device("cuda"):`,
# Lightning Fabric's `with fabric.init_tensor():`), and calls that set one for the whole process.
DEFAULT_DEVICE_CONTEXTS = {"init_tensor", "init_module"}
DEFAULT_DEVICE_CALLS = ("set_default_device", "set_default_tensor_type")
# Words without which nothing in a file visibly runs on an accelerator (Lightning Fabric and
# Hugging Face Accelerate place the model themselves).
DEVICE_WORDS = ("device", "cuda", ".to(", "fabric", "accelerator")
# Objects whose `.device` is the device the training runs on.
RUNNERS = ("fabric", "accelerator")


# `evaluate_model(...)`, `run_net(...)`: a function that runs a model returns what it likes (a
# float score as often as a tensor); only the model itself visibly returns a device tensor.
RUNNER_VERBS = {"run", "eval", "evaluate", "train", "test", "fit", "validate", "score", "predict", "call", "apply",
                "benchmark", "profile", "time"}


def _runs_a_model(func: ast.AST) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    parts = name.lower().split("_")
    return len(parts) > 1 and parts[0] in RUNNER_VERBS


# Batches of (inputs, labels), the same for the same seed.
BATCHES = """
def batches(n=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 3, generator=generator), torch.randint(0, 2, (4,), generator=generator))
            for _ in range(n)]
"""

class HostBufferWrite(Rule):
    code = "PTL110"
    needs_accelerator = True
    name = "host-buffer-write"
    message = "`{target}` copies a device result into `{buffer}`, a host tensor (`{factory}` without `device=`, " \
              "line {line}): a blocking device-to-host copy every iteration"
    help = ("Create the buffer on the device (`torch.zeros(..., device=device)`) and copy it to the host once, "
            "after the loop.")
    fixable = UNSAFE
    contexts = frozenset({PER_STEP})
    cold = False
    triggers = ("zeros(", "ones(", "empty(", "full(")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        text = ctx.source.text
        self._silent = not any(word in text for word in DEVICE_WORDS) \
            or any(call in text for call in DEFAULT_DEVICE_CALLS)
        self._pending: dict[int, tuple[str, ast.AST]] = {}  # reported node -> (buffer, its scope)

    # -- the writes ----------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        if self._silent or not self.ctx.loops or len(node.targets) != 1:
            return
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            self._check(node, target, node.value)

    def visit_Call(self, node: ast.Call) -> None:
        """`buf[k].copy_(loss)`: the same copy. `non_blocking=True` does not help: a copy from the
        device into pageable (not pinned) host memory returns only once it is done."""
        if self._silent or not self.ctx.loops or method_name(node) != "copy_" or len(node.args) != 1:
            return
        self._check(node, node.func.value, node.args[0])

    def _check(self, node: ast.AST, target: ast.AST, value: ast.AST) -> None:
        buffer = target
        while isinstance(buffer, ast.Subscript):
            buffer = buffer.value
        if not isinstance(buffer, ast.Name):
            return
        factory = self._host_buffer(buffer.id)
        if factory is None or self._device_result(value, set()) != SMALL:
            return
        if not in_model_loop(self.ctx):
            return  # a loop that only copies finished results waits once, at its first copy
        scope = self.ctx.function or self.ctx.tree
        devices = self._devices(scope)
        if devices and all(self._host_device(d, scope) for d in devices) and "cuda" not in self.ctx.source.text:
            return  # the function works on the CPU: `model.to("cpu")`, `device = "cpu"`
        fix = self._fix(factory, buffer.id, scope, devices)
        qual = self.ctx.qualname(factory.func) or "torch.zeros"
        text = self.ctx.edits.text(target) if target.end_lineno == target.lineno else buffer.id
        message = self.message.format(target=text, buffer=buffer.id, factory=qual, line=factory.lineno)
        self._pending[id(node)] = (buffer.id, scope)
        self.report(node, message, fix=fix)

    def keep(self, node: ast.AST, where) -> bool:
        """After the traversal every binding of the buffer in its function is known: a buffer
        moved (`buf = buf.to(device)`) or rebound to anything but a host factory is not one."""
        name, scope = self._pending[id(node)]
        values = self.ctx.assignments(name, scope)
        return all(self._factory(v) is not None for v in values)

    def _host_buffer(self, name: str) -> ast.Call | None:
        """The factory call that made `name` in host memory (its last binding so far in this
        function; `keep` checks the others), with no `device=`, not pinned, not under a
        default-device context."""
        values = self.ctx.assignments(name)
        factory = self._factory(values[-1]) if values else None
        if factory is None or self._under_default_device(factory):
            return None
        return factory

    def _factory(self, value: ast.AST) -> ast.Call | None:
        if not isinstance(value, ast.Call) or self.ctx.qualname(value.func) not in BUFFER_FACTORIES:
            return None
        if any(k.arg in FACTORY_BLOCKERS for k in value.keywords):
            return None
        return value

    def _under_default_device(self, node: ast.AST) -> bool:
        child, parent = node, self.ctx.parent(node)
        while parent is not None:
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(child is s for s in parent.body):
                for item in parent.items:
                    expr = item.context_expr
                    if isinstance(expr, ast.Call) and (self.ctx.qualname(expr.func) == "torch.device"
                                                       or method_name(expr) in DEFAULT_DEVICE_CONTEXTS):
                        return True
            child, parent = parent, self.ctx.parent(parent)
        return False

    # -- the value -----------------------------------------------------------------------------
    def _device_result(self, node: ast.AST, seen: set[str]) -> int:
        """How visibly `node` is a result computed on the model's device: SMALL for a loss (a loss
        module's or function's result, a value `.backward()` is called on) or a reduction of a
        device result (`model(x).mean()`, `out.argmax(-1)`), OUTPUT for a model's or submodule's
        output as it is (`model(x)`, `F.softmax(model(x))`, `model(x)[0]`), NOT otherwise: not
        `.item()` / `.cpu()` / `.tolist()` / `float(...)`, host values."""
        ctx = self.ctx
        if isinstance(node, ast.Call):
            func = node.func
            qual = ctx.qualname(func)
            if isinstance(func, ast.Attribute) and qual is None and func.attr in SAME_PLACE_METHODS:
                if func.attr == "to" and any(is_cpu_device(a, ctx) for a in [*node.args, *(k.value for k in node.keywords)]):
                    return NOT
                kind = self._device_result(func.value, seen)
                if kind:
                    return SMALL if func.attr in SMALLER_METHODS else kind
            if is_loss_call(node, ctx) or self._loss_function(func, qual):
                return SMALL
            if is_model_call(node, ctx) and not _runs_a_model(func):
                return OUTPUT
            if is_torch_op(qual) and qual not in HOST_FACTORIES:  # `torch.stack(...)`, `F.softmax(...)`
                kind = max((self._device_result(a, seen) for a in node.args), default=NOT)
                return SMALL if kind and qual.rsplit(".", 1)[-1] in SMALLER_METHODS else kind
            return NOT
        if isinstance(node, ast.Subscript) or isinstance(node, ast.Attribute) and node.attr in KEPT_ATTRIBUTES:
            return self._device_result(node.value, seen)
        if isinstance(node, ast.BinOp):
            return max(self._device_result(node.left, seen), self._device_result(node.right, seen))
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            return self._device_result(node.operand, seen)
        if isinstance(node, ast.Name) and node.id not in seen and len(seen) < 6:
            if node.id in backward_names(ctx.function, ctx):
                return SMALL
            values = [v for v in ctx.assignments(node.id) if isinstance(v, ast.expr) and root_name(v) != node.id]
            return min((self._device_result(v, seen | {node.id}) for v in values), default=NOT)
        return NOT

    @staticmethod
    def _loss_function(func: ast.AST, qual: str | None) -> bool:
        """A project's own loss function: `chunked_cross_entropy(...)`, `utils.masked_loss(...)`."""
        name = (qual or dotted(func) or "").rsplit(".", 1)[-1].lower()
        return name.endswith(LOSS_SUFFIXES)

    # -- the fix -------------------------------------------------------------------------------
    def _devices(self, scope: ast.AST) -> list[ast.AST]:
        """The devices the function names: targets of its `.to(...)` / `.cuda(...)` (with a
        device argument) and its `device=` keywords, in source order."""
        key = ("ptl110-devices", id(scope))
        if key not in self.ctx.memo:
            found = []
            for node in body_nodes(statements_of(scope)):
                if isinstance(node, ast.Call):
                    device = transfer_device(node, self.ctx)
                    if device is not None and device is not node:
                        found.append(device)
                    found += [k.value for k in node.keywords if k.arg == "device"]
            self.ctx.memo[key] = sorted(found, key=lambda n: (n.lineno, n.col_offset))
        return self.ctx.memo[key]

    def _host_device(self, device: ast.AST, scope: ast.AST) -> bool:
        """`"cpu"`, `torch.device("cpu")`, or a name only ever bound to one of those."""
        if is_cpu_device(device, self.ctx):
            return True
        if isinstance(device, ast.Name):
            values = self.ctx.assignments(device.id, scope)
            return bool(values) and all(is_cpu_device(v, self.ctx) for v in values)
        return False

    def _fix(self, factory: ast.Call, buffer: str, scope: ast.AST, devices: list[ast.AST]) -> Fix | None:
        device = self._known_device(factory, scope, devices)
        if device is None or self._read_on_host(buffer, scope):
            return None
        edits = self.ctx.edits  # one argument per line stays one per line
        edit = edits.replace(factory, edits.call_with_keywords(factory, [f"device={device}"]))
        return Fix(UNSAFE, f"Create `{buffer}` on the device: `device={device}` (later uses of `{buffer}` then run "
                           f"there too)", (edit,))

    def _known_device(self, factory: ast.Call, scope: ast.AST, devices: list[ast.AST]) -> str | None:
        """The device this function visibly works on, spelled so that it is defined where the
        factory runs: the one target of its `.to(...)` / `.cuda(...)` / `device=`, or
        `fabric.device` / `accelerator.device`. None when there is none, or more than one."""
        found = {self.ctx.edits.argument(d) for d in devices
                 if not self._host_device(d, scope) and self._defined_before(d, factory, scope)}
        if len(found) == 1:
            return found.pop()
        if found:
            return None
        for runner in RUNNERS:
            if self._defined_before(ast.Name(id=runner), factory, scope):
                return f"{runner}.device"
        return None

    def _defined_before(self, device: ast.AST, factory: ast.Call, scope: ast.AST) -> bool:
        """A device expression that can be evaluated where `factory` is: a string, a parameter of
        the function, `self.device`, or a name (and its attributes) bound above the factory."""
        if isinstance(device, ast.Constant):
            return isinstance(device.value, str)
        name = dotted(device)
        if name is None:
            return False
        root = name.split(".")[0]
        params = set()
        if isinstance(scope, FUNCTION_DEFS):
            args = scope.args
            params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        if root in params:
            return True
        return any(getattr(v, "lineno", factory.lineno) < factory.lineno for v in self.ctx.assignments(root, scope))

    def _read_on_host(self, buffer: str, scope: ast.AST) -> bool:
        """The function hands the buffer to NumPy (`buf.numpy()`, `np.mean(buf)`): on a CUDA
        tensor `.numpy()` raises, so moving the buffer would break that code."""
        for node in body_nodes(statements_of(scope)):
            if not isinstance(node, ast.Call):
                continue
            if method_name(node) == "numpy" and root_name(node.func.value) == buffer:
                return True
            qual = self.ctx.qualname(node.func) or ""
            numpy = qual.startswith(tuple(m + "." for m in NUMPY_MODULES))
            if numpy and any(root_name(a) == buffer for a in node.args):
                return True
        return False

    docs = """
## What it does
Finds a loop that runs the model and stores its results, element by element, into a tensor that
a torch factory made without `device=`, so in host memory. The factory is `torch.zeros`,
`torch.empty`, `torch.ones` or `torch.full` (any import spelling) in the same function; a result
is a loss (the result of a loss module or loss function: `criterion(...)`,
`F.cross_entropy(...)`, a project's own `chunked_cross_entropy(...)`; a value `.backward()` is
called on) or a reduction of a model's or submodule's output (`model(x).mean()`,
`out.argmax(-1)`), and what indexing, tensor methods and arithmetic make of those. Reported at
the assignment (or the `.copy_(...)`, with or without `non_blocking=True`: into pageable memory
it waits all the same); the message names the factory's line.

This rule is ptlint's own addition; it is not in the original design catalogue.

## Why is this bad?
`losses[k] = loss` with `losses` in host memory and `loss` on the GPU is a device-to-host copy,
and a blocking one: the CPU waits until every kernel queued so far has finished before it can
copy the value, exactly like `loss.item()` (PTL101). Once per batch, the GPU idles while Python
prepares the next one. Torch's CUDA sync debug mode (`torch.cuda.set_sync_debug_mode("warn")`)
reports the copy; `ptlint explain --syncs` on the CPU cannot (there, every tensor is on the
host). Made on the device, the buffer receives device-to-device copies that queue like any other
kernel, and the code reads it back once, after the loop (`losses.mean().item()`).

Not reported:
- a buffer made with `device=` (also `device="cpu"`: a deliberate host buffer), with
  `pin_memory=True` (a staging buffer: `buf[k].copy_(x, non_blocking=True)` fills it without
  waiting; a plain assignment into it does wait, but `device=` is not the remedy there),
  or with `**kwargs` that may carry a device; a buffer moved or rebound anywhere in its function
  (`losses = losses.to(device)`); a buffer made under `with torch.device(...)` or Lightning
  Fabric's `with fabric.init_tensor():`, or in a file that calls `torch.set_default_device`;
- a buffer made in another function or stored on `self` (where it lives is not visible);
- a value already on the host: `.item()`, `.cpu()`, `.tolist()`, `float(...)`, NumPy values
  (PTL101 reports the `.item()` itself where it stalls);
- a whole model output, as it is or elementwise transformed (`logits[i] = model(x)`,
  `probs[i] = F.softmax(model(x), -1)`): the host may need every value, and a device buffer of
  every batch's output costs device memory; the remedy there is a pinned buffer filled with
  `non_blocking=True` copies, a redesign rather than a one-keyword fix. Losses and reductions
  (`.mean()`, `.max()`, `.argmax(-1)`, `torch.sum(...)`) are small and are reported;
- a value that is not visibly a device result: a batch from a data loader, a host computation,
  what a function named for running a model returns (`evaluate_model(...)`, `run_net(...)`: a
  float score as often as a tensor);
- a loop that does not run the model (it only copies finished results: the first copy waits,
  the others find nothing queued);
- a function that visibly works on the CPU (every device it names is `"cpu"`, and the file
  never says `cuda`);
- files that mention no device (`device`, `cuda`, `.to(`) and no Lightning `fabric` or
  Accelerate `accelerator`, where nothing visibly runs on an accelerator.

## Where it reports
- **Reports** in a loop that runs the model every step: training, evaluation, in a function,
  in `main()` or at a script's top level.
- **Silent** in once-code, once per epoch or every N steps, a function whose callers the file
  does not show (a store without a loop of its own), error paths (an `except` body, a branch
  that raises, or only warns or logs), and test code.

## Example
```python
import torch
from torch.nn.functional import cross_entropy


@torch.no_grad()
def validate(fabric, model, val_loader, max_iters):
    losses = torch.zeros(max_iters)
    for k, batch in enumerate(val_loader):
        logits = model(batch["input_ids"])
        losses[k] = cross_entropy(logits, batch["labels"])  # a sync per batch
    return losses.mean()
```

## Use instead
```python
import torch
from torch.nn.functional import cross_entropy


@torch.no_grad()
def validate(fabric, model, val_loader, max_iters):
    losses = torch.zeros(max_iters, device=fabric.device)
    for k, batch in enumerate(val_loader):
        logits = model(batch["input_ids"])
        losses[k] = cross_entropy(logits, batch["labels"])  # queued on the device
    return losses.mean()  # read it back once, where the caller needs the number
```

## Fix safety
The fix adds `device=<the device>` to the factory, and only where the function visibly names one
device that is defined where the factory runs: the one target of its `.to(...)` / `.cuda(...)`
/ `device=` (a parameter, `self.device`, a name bound above the factory), or else
`fabric.device` / `accelerator.device` for a `fabric` / `accelerator` it holds. It is unsafe:
everything the code later does with the buffer moves to the device too. `.mean()` and friends
then return a device tensor (what the caller gets changes device), `.tolist()` and `.item()` on
it become the one sync after the loop, and `.numpy()` on a CUDA tensor raises, so no fix is
offered where the function hands the buffer to NumPy. Where no device is visible (the model was
moved elsewhere), the finding comes without a fix: pass the device in, or use the device of the
first result (`torch.zeros(n, device=loss.device)` when the buffer is made after it). On the
CPU (`device="cpu"`) the fixed code computes the same numbers, bit for bit.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
- https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html
"""

    bad_examples = [
        # litgpt's shape: a loss function of the project, `fabric` passed in, under no_grad
        """
import torch

@torch.no_grad()
def validate(fabric, model, val_dataloader, max_iters):
    model.eval()
    losses = torch.zeros(min(len(val_dataloader), max_iters))
    for k, batch in enumerate(val_dataloader):
        if k >= max_iters:
            break
        logits = model(batch["input_ids"])
        losses[k] = chunked_cross_entropy(logits[..., :-1, :], batch["labels"][..., 1:])  # expect: PTL110
    val_loss = losses.mean()
    model.train()
    return val_loss
""",
        # other import spellings; a criterion, a model output reduced, a value .backward() ran on
        """
import torch as T
from torch import empty, full

def train(model, loader, optimizer, criterion, device, epochs):
    history = T.zeros(epochs, len(loader))
    scores = empty(len(loader))
    norms = full((len(loader),), float("nan"))
    energy = T.zeros(len(loader))
    for epoch in range(epochs):
        for i, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out, y)
            loss.backward()
            optimizer.step()
            history[epoch, i] = loss.detach()  # expect: PTL110
            scores[i] = out.softmax(-1).max()  # expect: PTL110
            norms[i:i + 1] = -loss * 2  # expect: PTL110
            energy[i] = T.sum(out ** 2)  # expect: PTL110
    return history, scores, norms, energy
""",
        # a value `.backward()` is called on is a loss, whatever computed it
        """
import torch

def train(step_fn, loader, optimizer, device, n):
    losses = torch.zeros(n)
    for i, batch in enumerate(loader):
        loss = step_fn(batch.to(device))
        loss.backward()
        optimizer.step()
        losses[i] = loss.detach()  # expect: PTL110
    return losses
""",
        # a module-level script, and a `.copy_` into a host buffer
        """
import torch
import torch.nn.functional as F

model = Net().cuda()
confidence = torch.zeros(len(loader), 64)
top = torch.empty(len(loader))
for i, (x, y) in enumerate(loader):
    logits = model(x.cuda())
    confidence[i].copy_(F.softmax(logits, dim=-1).amax(-1))  # expect: PTL110
    top[i:i + 1].copy_(logits.argmax().view(1), non_blocking=True)  # expect: PTL110
""",
    ]

    good_examples = [
        # made on the device, moved after creation, pinned and filled without blocking, host values
        """
import torch

def validate(model, loader, device, n):
    on_device = torch.zeros(n, device=device)
    moved = torch.zeros(n)
    moved = moved.to(device)
    staging = torch.empty(n, pin_memory=True)
    floats = torch.zeros(n)
    later = torch.zeros(n)
    for k, (x, y) in enumerate(loader):
        loss = model(x.to(device)).mean()
        on_device[k] = loss
        moved[k] = loss
        staging[k:k + 1].copy_(loss.view(1), non_blocking=True)
        staging[k] = loss
        floats[k] = loss.item()
        floats[k] = model(x).mean().cpu()
        floats[k] = loss.to("cpu")
        later[k] = loss
    later = later.to(device)
    return on_device, moved, staging, floats, later
""",
        # not visibly a device result: a batch from the loader, host arithmetic, what a function
        # that runs the model chose to return
        """
import torch

def collect(model, loader, device, n):
    lengths = torch.zeros(n)
    labels = torch.empty(n, dtype=torch.long)
    scores = torch.zeros(n)
    maybe = torch.zeros(n)
    for i, batch in enumerate(loader):
        lengths[i] = len(batch["ids"])
        labels[i] = batch["label"]
        scores[i] = evaluate_model(model, batch, device)
        value = batch["prior"]
        if batch["run"]:
            value = model(batch["x"].to(device)).mean()
        maybe[i] = value
    return lengths.to(device), labels, scores, maybe
""",
        # once: module top level after training; once per epoch, after the batch loop
        """
import torch

def fit(model, loader, optimizer, criterion, device, epochs):
    epoch_losses = torch.zeros(epochs)
    for epoch in range(epochs):
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
        epoch_losses[epoch] = loss
    return epoch_losses

class Calibrated(torch.nn.Module):
    def __init__(self, model, loader, device):
        super().__init__()
        scales = torch.zeros(len(loader))
        for i, x in enumerate(loader):
            scales[i] = model(x.to(device)).abs().amax()
        self.scale = scales.mean()

final = torch.zeros(1)
final[0] = model(sample.cuda()).mean()
""",
        # cold: only on the error path
        """
import torch

def train(model, loader, optimizer, device):
    bad = torch.zeros(4)
    for x in loader:
        loss = model(x.to(device)).mean()
        if not torch.isfinite(loss):
            bad[0] = loss
            raise FloatingPointError(bad)
        loss.backward()
        optimizer.step()
""",
        # whole outputs: the host may need every value, and keeping every batch's output on the
        # device costs its memory
        """
import torch
import torch.nn.functional as F

@torch.no_grad()
def predict(model, loader, device, n, classes):
    logits = torch.empty(n, 32, classes)
    probs = torch.empty(n, 32, classes)
    for i, x in enumerate(loader):
        out = model(x.to(device))
        logits[i] = out
        probs[i].copy_(F.softmax(out, dim=-1))
    return logits.numpy(), probs
""",
        # a default device for the factories; a file where nothing names a device
        """
import torch

def validate(fabric, model, loader, n):
    with fabric.init_tensor():
        losses = torch.zeros(n)
    with torch.device("cuda"):
        scores = torch.zeros(n)
    for k, x in enumerate(loader):
        losses[k] = model(x).mean()
        scores[k] = model(x).max()
    return losses, scores
""",
        """
import torch

def evaluate(model, loader, n):
    losses = torch.zeros(n)
    for k, (x, y) in enumerate(loader):
        losses[k] = torch.nn.functional.mse_loss(model(x), y)
    return losses.mean()
""",
        """
import torch

torch.set_default_device("cuda")

def evaluate(model, loader, n):
    losses = torch.zeros(n)
    for k, (x, y) in enumerate(loader):
        losses[k] = torch.nn.functional.mse_loss(model(x), y)
    return losses.mean()
""",
        # a function that works on the CPU
        """
import torch

def evaluate(model, loader, n):
    device = torch.device("cpu")
    model.to("cpu")
    losses = torch.zeros(n)
    for k, (x, y) in enumerate(loader):
        losses[k] = torch.nn.functional.mse_loss(model(x.to(device)), y)
    return losses.mean()
""",
        # a buffer made in another function or kept on self; a loop that only copies finished results
        """
import torch

class Tracker:
    def __init__(self, n):
        self.losses = torch.zeros(n)

    def update(self, model, loader, device):
        for k, x in enumerate(loader):
            self.losses[k] = model(x.to(device)).mean()

def unpack(model, x, device):
    out = model(x.to(device))
    rows = torch.zeros(len(out))
    for i in range(len(out)):
        rows[i] = out[i].sum()
    return rows
""",
    ]

    fix_examples = [
        FixExample(
            """
import torch

@torch.no_grad()
def validate(fabric, model, val_dataloader, max_iters):
    losses = torch.zeros(max_iters)
    for k, batch in enumerate(val_dataloader):
        losses[k] = chunked_cross_entropy(model(batch["input_ids"]), batch["labels"])
    return losses.mean()
""",
            """
import torch

@torch.no_grad()
def validate(fabric, model, val_dataloader, max_iters):
    losses = torch.zeros(max_iters, device=fabric.device)
    for k, batch in enumerate(val_dataloader):
        losses[k] = chunked_cross_entropy(model(batch["input_ids"]), batch["labels"])
    return losses.mean()
""",
            unsafe=True,
        ),
        FixExample(
            """
from torch import empty, no_grad

@no_grad()
def evaluate(model, loader, criterion, device, n):
    losses = empty(n, dtype=float)
    for k, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        losses[k] = criterion(model(x), y)
    return losses.mean()
""",
            """
from torch import empty, no_grad

@no_grad()
def evaluate(model, loader, criterion, device, n):
    losses = empty(n, dtype=float, device=device)
    for k, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        losses[k] = criterion(model(x), y)
    return losses.mean()
""",
            unsafe=True,
        ),
        FixExample(
            """
import torch

def evaluate(model, loader, n, use_gpu):
    device = "cpu"
    if use_gpu:
        device = "cuda"
    model.to(device)
    losses = torch.zeros(n)
    for k, x in enumerate(loader):
        losses[k] = model(x.to(device)).mean()
    return losses.mean().item()
""",
            """
import torch

def evaluate(model, loader, n, use_gpu):
    device = "cpu"
    if use_gpu:
        device = "cuda"
    model.to(device)
    losses = torch.zeros(n, device=device)
    for k, x in enumerate(loader):
        losses[k] = model(x.to(device)).mean()
    return losses.mean().item()
""",
            unsafe=True,
        ),
        FixExample(
            before="""
import torch

@torch.no_grad()
def validate(model, loader, device, max_iters):
    model.eval()
    losses = torch.zeros(min(len(loader), max_iters))
    for k, (x, y) in enumerate(loader):
        if k >= max_iters:
            break
        logits = model(x.to(device))
        losses[k] = torch.nn.functional.cross_entropy(logits, y.to(device))
    model.train()
    return losses.mean()
""",
            after="""
import torch

@torch.no_grad()
def validate(model, loader, device, max_iters):
    model.eval()
    losses = torch.zeros(min(len(loader), max_iters), device=device)
    for k, (x, y) in enumerate(loader):
        if k >= max_iters:
            break
        logits = model(x.to(device))
        losses[k] = torch.nn.functional.cross_entropy(logits, y.to(device))
    model.train()
    return losses.mean()
""",
            unsafe=True,
            inputs=(
                FixInput("on the CPU", BATCHES + "result = validate(torch.nn.Linear(3, 2), batches(), 'cpu', 4)\n"),
                # with the model on a device (`meta` stands in for an accelerator: it keeps the buffer's
                # later ops on itself, and refuses `.numpy()`, like CUDA), the caller gets a tensor on
                # that device where the original returned a host tensor: why the fix is unsafe (the
                # original cannot run there: a meta value has no data to copy to the host, where
                # CUDA's would sync)
                FixInput("the model on a device", BATCHES + "result = validate(torch.nn.Linear(3, 2, device='meta'), "
                                                           "batches(), 'meta', 3)\n",
                         check="after.device.type == 'meta' and after_error is None"),
            ),
        ),
        FixExample(
            before="""
import torch
from torch import full

class Fabric:
    device = "cpu"

def evaluate(fabric, model, loader):
    scores = full((len(loader), 2), float("nan"), dtype=torch.float64)
    for i, (x, y) in enumerate(loader):
        out = model(x)
        scores[i, 0] = out.max()
        scores[i, 1].copy_(out.softmax(-1)[:, 0].mean())
    return scores
""",
            after="""
import torch
from torch import full

class Fabric:
    device = "cpu"

def evaluate(fabric, model, loader):
    scores = full((len(loader), 2), float("nan"), dtype=torch.float64, device=fabric.device)
    for i, (x, y) in enumerate(loader):
        out = model(x)
        scores[i, 0] = out.max()
        scores[i, 1].copy_(out.softmax(-1)[:, 0].mean())
    return scores
""",
            unsafe=True,
            inputs=(
                FixInput("on the CPU", BATCHES + "result = evaluate(Fabric(), torch.nn.Linear(3, 2), batches(seed=1))\n"),
            ),
        ),
    ]

    unfixable_examples = [
        # no device visible in the function; two different devices; the buffer goes to NumPy
        """
import torch
import numpy as np

def evaluate(model, loader, n):
    losses = torch.zeros(n)
    for k, x in enumerate(loader):
        losses[k] = model(x).mean()  # expect: PTL110
    return losses

def evaluate_pair(student, teacher, loader, n):
    gaps = torch.zeros(n)
    for k, x in enumerate(loader):
        gap = student(x.to("cuda:0")).mean() - teacher(x.to("cuda:1")).mean().to("cuda:0")
        gaps[k] = gap  # expect: PTL110
    return gaps

def scores(model, loader, device, n):
    out = torch.zeros(n)
    for k, x in enumerate(loader):
        out[k] = model(x.to(device)).max()  # expect: PTL110
    return out.numpy()

def percentile(model, loader, device, n):
    out = torch.zeros(n)
    for k, x in enumerate(loader):
        out[k] = model(x.to(device)).max()  # expect: PTL110
    return np.percentile(out, 90)

def late(model, loader, n):
    losses = torch.zeros(n)
    device = next(model.parameters()).device
    for k, x in enumerate(loader):
        losses[k] = model(x.to(device)).mean()  # expect: PTL110
    return losses
""",
    ]
