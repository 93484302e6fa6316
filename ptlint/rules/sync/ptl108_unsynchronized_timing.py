"""PTL108 unsynchronized-timing: a wall-clock duration around CUDA work that never waits for the GPU."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.autograd import is_model_call, is_optimizer_step, statements_of
from ptlint.semantics.nodes import DEFINITIONS, FUNCTION_DEFS, body_nodes, dotted
from ptlint.semantics.values import STRONG, is_torch_op, not_a_tensor, tensor_kind

CLOCKS = {"time.time", "time.perf_counter", "time.monotonic", "time.time_ns", "time.perf_counter_ns",
          "time.monotonic_ns", "timeit.default_timer"}
# Calls that wait for the device (or may: a barrier, a sync helper, a read-back).
SYNC_METHODS = {"synchronize", "item", "cpu", "numpy", "tolist", "wait", "barrier", "wait_for_everyone",
                "block_until_ready", "mark_step", "elapsed_time", "query", "wait_stream", "all_reduce",
                "all_gather", "gather", "reduce", "broadcast"}
SYNC_WORDS = ("sync", "barrier", "wait")
# Methods that record a value somewhere (TensorBoard, loggers, meters): many read it back.
LOGGING_METHODS = {"add_scalar", "add_scalars", "add_image", "add_images", "add_histogram", "log", "log_dict",
                   "log_metrics", "save", "write", "update", "record"}
PLAIN_CONVERSIONS = {"float", "int", "bool", "print", "repr", "str", "format"}
# Tensor factories: filling a fresh tensor is not the work a timer is about.
FACTORIES = {f"torch.{name}" for name in (
    "tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "arange", "linspace", "eye", "rand",
    "randn", "randint", "randperm", "zeros_like", "ones_like", "empty_like", "full_like", "rand_like",
    "randn_like", "manual_seed")}


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset


class UnsynchronizedTiming(Rule):
    code = "PTL108"
    # Off: on training code nobody here tuned it to, blind judges found 1 of 7 true (heldout sets
    # of 2026-11-25/26: a data-loading time after a drain, a total since start for a log line) —
    # DESIGN.md keeps it on only if its precision holds.
    default = False
    needs_accelerator = True
    name = "unsynchronized-timing"
    message = "this duration is read without waiting for the GPU: it times the kernel launches, not the work; " \
              "call `torch.cuda.synchronize()` before reading the clock, or use CUDA events / " \
              "`torch.utils.benchmark.Timer`"
    help = ("Call `torch.cuda.synchronize()` before reading the clock, or time with "
            "`torch.cuda.Event(enable_timing=True)` or `torch.utils.benchmark.Timer`.")
    cold = False
    triggers = ("time", "timer")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.readings: set[int] = set()  # clock calls seen so far
        self.reported: set[int] = set()

    def visit_Call(self, node: ast.Call) -> None:
        if self.ctx.qualname(node.func) in CLOCKS and not node.args:
            self.readings.add(id(node))

    def leave_BinOp(self, node: ast.BinOp) -> None:
        # checked when the subtraction is left, so that the readings in it have been seen, and
        # while the function's own imports are in scope (the region's names resolve through them)
        text = self.ctx.source.text
        if not isinstance(node.op, ast.Sub) or len(self.readings) < 2 or ("cuda" not in text and "device" not in text):
            return
        if isinstance(self.ctx.parent(node), ast.Compare):
            return  # `if now - start > budget:` checks a time limit, it measures nothing
        scope = self.ctx.function or self.ctx.tree
        second = self._reading(node.left, scope, node)
        if second is None or id(second) in self.reported:
            return
        first = self._reading(node.right, scope, second)
        if first is None or _position(first) >= _position(second):
            return
        region = self._region(scope, first, second)
        if self._launches_work(region, scope) and not self._waits(region, scope, set()):
            self.reported.add(id(second))
            self.report(second)

    # -- the two readings ------------------------------------------------------------------------
    def _reading(self, expr: ast.AST, scope: ast.AST, before: ast.AST) -> ast.Call | None:
        """The clock call `expr` is (`time.perf_counter()`), or the one assigned last, before
        `before`, to the name or attribute `expr` is (`t0`, `self.start`)."""
        if isinstance(expr, ast.Call):
            return expr if id(expr) in self.readings else None
        name = dotted(expr)
        if name is None:
            return None
        best = None
        for node in body_nodes(statements_of(scope), stop_at=DEFINITIONS):
            if not isinstance(node, ast.Assign) or _position(node) >= _position(before):
                continue
            if any(dotted(t) == name for t in node.targets):
                value = node.value
                if isinstance(value, ast.Call) and id(value) in self.readings:
                    candidate = value
                elif isinstance(value, (ast.Name, ast.Attribute)) and dotted(value) != name:
                    candidate = self._reading(value, scope, node)  # `t0 = t1`
                else:
                    candidate = None
                if best is None or _position(node) > best[0]:
                    best = (_position(node), candidate)
        return best[1] if best else None

    def _region(self, scope: ast.AST, first: ast.Call, second: ast.Call) -> list[ast.AST]:
        """The nodes of `scope` that run between the two readings: after the first reading's
        statement and before the second reading, in the source."""
        statement = first
        while statement is not None and not isinstance(statement, ast.stmt):
            statement = self.ctx.parent(statement)
        start = _end(statement or first)
        stop = _position(second)
        return [n for n in body_nodes(statements_of(scope), stop_at=DEFINITIONS)
                if hasattr(n, "lineno") and start <= _position(n) and _end(n) <= stop]

    # -- what happens in between -----------------------------------------------------------------
    def _launches_work(self, region: list[ast.AST], scope: ast.AST) -> bool:
        """A model call, a torch operation, a backward pass, an optimizer step, a copy to the
        device: work the GPU runs asynchronously."""
        for node in region:
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            qual = self.ctx.qualname(func)
            if is_torch_op(qual) and qual not in FACTORIES:
                return True
            if is_model_call(node, self.ctx) and not self._fed_host_data(node):
                return True
            if isinstance(func, ast.Attribute):
                if func.attr in ("backward", "cuda") or (func.attr == "to" and node.args):
                    return True
                if is_optimizer_step(node):
                    return True
        return False

    def _fed_host_data(self, call: ast.Call) -> bool:
        """A model called on NumPy arrays, file names or lists is a high-level predictor (YOLO,
        a pipeline): it hands back host objects, which waits for the device."""
        return any(not_a_tensor(a, self.ctx) for a in call.args)

    def _waits(self, region: list[ast.AST], scope: ast.AST, seen: set[int]) -> bool:
        """Something in between waits for the device: `torch.cuda.synchronize()`, an event's or a
        stream's `synchronize()`, `.item()` / `.cpu()` / `.tolist()`, `float(t)`, `print`,
        a formatted tensor, a barrier or collective, a function of this module that does, or a
        function of another library (or a logger) handed a result of the timed work."""
        produced = {t.id for n in region if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                    for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    for t in ast.walk(target) if isinstance(t, ast.Name)}
        for node in region:
            if isinstance(node, ast.Call) and self._hands_over(node, produced):
                return True
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                lower = name.lower()
                if name in SYNC_METHODS or any(word in lower for word in SYNC_WORDS):
                    return True
                if isinstance(func, ast.Name) and name in PLAIN_CONVERSIONS and node.args \
                        and not all(isinstance(a, ast.Constant) for a in node.args):
                    return True
                if any(self._waits(body_nodes(f.body, stop_at=DEFINITIONS), f, seen)
                       for f in self._local_functions(node, seen)):
                    return True
            elif isinstance(node, ast.FormattedValue) and tensor_kind(node.value, self.ctx) == STRONG:
                return True
        return False

    def _hands_over(self, call: ast.Call, produced: set[str]) -> bool:
        """`save_image(out, path)`, `np.asarray(out)`, `writer.add_scalar("loss", loss)`: a
        function outside torch, or a logging method, receives a value the timed work produced;
        it may well read it back to the host (which waits for the device)."""
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if not any(isinstance(n, ast.Name) and n.id in produced for a in arguments for n in ast.walk(a)):
            return False
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in LOGGING_METHODS:
            return True
        qual = self.ctx.qualname(func)
        return qual is not None and not qual.startswith("torch.")

    def _local_functions(self, call: ast.Call, seen: set[int]) -> list[ast.AST]:
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) \
            and isinstance(func.value, ast.Name) and func.value.id == "self" else None
        if name is None:
            return []
        out = []
        for node in ast.walk(self.ctx.tree):
            if isinstance(node, FUNCTION_DEFS) and node.name == name \
                    and id(node) not in seen:
                seen.add(id(node))
                out.append(node)
        return out

    docs = """
## What it does
Finds a duration measured with `time.time()`, `time.perf_counter()` or `time.monotonic()`
(any import spelling) around CUDA work — a model call, a torch operation, `.backward()`, an
optimizer step, a copy to the device — with nothing between the two readings that waits for
the GPU. Reported at the second reading. Only files that mention CUDA or a device are checked.
Off by default: select it with `--select PTL108` where you time GPU work by hand (benchmarks).

## Why is this bad?
CUDA kernels run asynchronously: a forward pass returns as soon as its kernels are queued. The
clock read right after measures how long Python took to launch the work, not how long the GPU
took to do it — often a small fraction — and the missing time shows up later, wherever
something next waits for the device. Benchmarks and per-step timings built this way report
numbers that are wrong by a large factor and move when unrelated code changes.

Not reported: a region that waits for the device before the second reading —
`torch.cuda.synchronize()`, an event's or stream's `synchronize()`, `.item()`, `.cpu()`,
`.tolist()`, `.numpy()`, `float(t)`, `print(...)`, a formatted tensor, a barrier or collective,
a helper of the same module that does one of these, or a function of another library or a
logging method (`save_image(out)`, `np.asarray(out)`, `writer.add_scalar("loss", loss)`) handed
a result of the timed work, which may read it back; a region without visible CUDA work
(loading files, tokenising, a call into another module, which may synchronise itself); a model
fed NumPy arrays, file names or lists (a high-level predictor such as a YOLO or pipeline object
hands back host objects, which waits for the device); a difference compared with a limit
(`if time.time() - start > budget:` checks a time budget, it measures nothing); files that
mention neither CUDA nor a device.

## Where it reports
- **Reports** wherever the two readings are: per step, in once-code (a benchmark at a script's
  top level or in `main()`), and in a function whose callers the file does not show. One wrong
  measurement is wrong, however often it runs.
- **Silent** on error paths (an `except` body, a branch that raises, or only warns or logs) and
  in test code.

## Example
```python
import time

import torch


def benchmark(model, batch):
    x = batch.to("cuda")
    start = time.perf_counter()
    out = model(x)
    elapsed = time.perf_counter() - start
    return out, elapsed
```

## Use instead
```python
import time

import torch


def benchmark(model, batch):
    x = batch.to("cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    out = model(x)
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return out, elapsed
```
or let PyTorch do it:
```python
from torch.utils.benchmark import Timer

elapsed = Timer("model(x)", globals={"model": model, "x": x}).blocked_autorange().median
```
or CUDA events, which time on the device:
```python
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
out = model(x)
end.record()
end.synchronize()
elapsed_ms = start.elapsed_time(end)
```

## Fix safety
No automatic fix: where to synchronise (and whether the code may run without CUDA) is for a
person to decide.

## References
- https://pytorch.org/tutorials/recipes/recipes/benchmark.html
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
"""

    bad_examples = [
        """
import time
import torch

def bench(model, x):
    x = x.cuda()
    start = time.perf_counter()
    out = model(x)
    elapsed = time.perf_counter() - start  # expect: PTL108
    return out, elapsed
""",
        # another spelling, a name for the second reading, a torch op, self attributes
        """
from time import time as now
import torch as T

class Bench:
    def run(self, a, b):
        self.t0 = now()
        c = T.matmul(a.cuda(), b.cuda())
        t1 = now()  # expect: PTL108
        return c, t1 - self.t0
""",
        # a training loop timing its steps, the readings carried over the iterations
        """
import time
import torch

def train(model, loader, opt):
    t0 = time.time()
    for x in loader:
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        t1 = time.time()  # expect: PTL108
        dt = t1 - t0
        t0 = t1
""",
    ]

    good_examples = [
        # synchronised before the second reading, in several ways
        """
import time
import torch

def sync_first(model, x):
    start = time.perf_counter()
    out = model(x.cuda())
    torch.cuda.synchronize()
    return time.perf_counter() - start

def item_first(model, x):
    start = time.perf_counter()
    loss = model(x.cuda()).sum()
    value = loss.item()
    return time.perf_counter() - start

def event_first(model, x, done):
    start = time.perf_counter()
    model(x.cuda())
    done.synchronize()
    return time.perf_counter() - start

def helper_syncs(model, x):
    start = time.perf_counter()
    model(x.cuda())
    wait_for_gpu()
    return time.perf_counter() - start

def wait_for_gpu():
    torch.cuda.synchronize()

def saved(model, x, writer):
    from torchvision.utils import save_image
    start = time.perf_counter()
    out = model(x.cuda())
    save_image(out, "out.png")
    first = time.perf_counter() - start
    start = time.perf_counter()
    loss = model(x.cuda()).mean()
    writer.add_scalar("loss", loss)
    return first, time.perf_counter() - start

def printed(model, x):
    start = time.perf_counter()
    loss = torch.sum(model(x.cuda()))
    print(f"loss {loss}")
    return time.perf_counter() - start
""",
        # no visible CUDA work: file reading, a call into another module
        """
import time
import torch
from mylib import generate

def load(path):
    start = time.time()
    state = open(path).read()
    return time.time() - start

def timed_generate(model, prompt):
    t0 = time.perf_counter()
    y = generate(model, prompt)
    t = time.perf_counter() - t0
    return y, t

def predictor(model):
    import numpy as np
    frame = np.zeros((640, 640, 3))
    start = time.perf_counter()
    model(frame)
    model("image.jpg")
    return time.perf_counter() - start

def budget(model, loader, limit):
    start = time.time()
    for x in loader:
        model(x.cuda())
        if time.time() - start > limit:
            break
""",
        # a file that mentions neither CUDA nor a device
        """
import time
import torch

def bench(model, x):
    start = time.perf_counter()
    model(x)
    return time.perf_counter() - start
""",
    ]
