"""PTL102 sync-call-in-loop: `torch.cuda.synchronize()` / `torch.cuda.empty_cache()` in a loop."""

from __future__ import annotations

import ast
import os

from ptlint.engine.rule import PER_STEP, Rule
from ptlint.semantics.nodes import FUNCTION_DEFS, block_of, name_words, parameter_names
from ptlint.semantics.uses import before_read, waits_anyway
from ptlint.semantics.where import MAIN_PROCESS_WORDS

TIMERS = {"time.time", "time.perf_counter", "time.monotonic", "time.perf_counter_ns", "time.time_ns",
          "time.monotonic_ns", "timeit.default_timer"}

# CUDA's memory statistics: a sync beside one makes a memory measurement (peak memory per run)
MEMORY_STATS = {f"torch.cuda.{function}" for function in (
    "max_memory_allocated", "memory_allocated", "max_memory_reserved", "memory_reserved", "memory_stats",
    "reset_peak_memory_stats", "reset_max_memory_allocated", "mem_get_info")}

SYNC_FUNCTIONS = {
    f"torch.{backend}.{function}"
    for backend in ("cuda", "mps", "xpu", "accelerator")
    for function in ("synchronize", "empty_cache")
}


# Words of a condition that makes `empty_cache()` a choice: a memory setting or measure, a size
# check, a user's option (`if args.empty_cache_every_step:`, `if x.numel() > limit:`); not a branch
# of the step's own data (`if num_gt == 0: ... else: ... empty_cache()`).
MEMORY_CONDITION_WORDS = {"memory", "mem", "cache", "oom", "empty", "free", "allocated", "reserved", "clear",
                          "release", "limit", "budget", "numel", "size", "large", "args", "opt", "opts", "config",
                          "cfg", "conf", "hparams", "settings", "flags", "options",
                          # which device's cache to empty (`if is_xpu_available(): torch.xpu.empty_cache()`)
                          "device", "available", "backend", "cuda", "mps", "xpu", "npu", "mlu", "hpu"}


# Words of a file or function whose job is to measure speed: a sync beside its timer is the measurement.
BENCHMARK_WORDS = {"benchmark", "benchmarks", "speed", "throughput", "latency", "timing", "profile", "time"}
TIMER_METHODS = {"tic", "toc"}
TIMER_STARTS_AND_STOPS = {"start", "stop", "end", "lap", "tick", "tock", "record"}


def _timer_method(call: ast.Call) -> bool:
    """`timer.tic()`, `fw_timer.toc()`, `self.timer.stop()`: a timer object's start or stop."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    return func.attr in TIMER_METHODS or (func.attr in TIMER_STARTS_AND_STOPS and any(
        word.endswith("timer") or word in ("stopwatch", "clock") for word in name_words(func.value)))


# Words of a test that picks the main process (`if master_process:`, `if rank == 0:`).
SHOW_METHODS = {"write", "add_scalar", "add_scalars", "set_postfix", "set_description", "info",
                "set_value", "set_text", "setText"}  # (a GUI's label, set every frame)


def _shows(statements: list[ast.stmt], names: set[str]) -> bool:
    """Some statement of `statements` that runs every time (or on the main process only) prints or
    logs a value computed from `names` (`dt = t1 - t0`, then `print(f"{dt * 1000:.1f} ms")`)."""
    for statement in statements:
        if isinstance(statement, ast.If):
            if name_words(statement.test) & MAIN_PROCESS_WORDS and _shows(statement.body, names):
                return True
            continue
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            if _shows(statement.body, names):
                return True
            continue
        if not isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
            continue  # a loop, a `try`, a definition: may not run
        value = statement.value
        if value is None:
            continue
        mentioned = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} & names
        if mentioned and isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names = names | {t.id for t in targets if isinstance(t, ast.Name)}
        for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)):
            words = name_words(call.func)
            shown = any(word.startswith(("print", "log")) for word in words) or \
                (isinstance(call.func, ast.Attribute) and call.func.attr in SHOW_METHODS)
            if shown and {n.id for n in ast.walk(call) if isinstance(n, ast.Name)} & names:
                return True
    return False


class SyncCallInLoop(Rule):
    code = "PTL102"
    needs_accelerator = True
    name = "sync-call-in-loop"
    message = "`{call}()` in a loop stalls the host every iteration"
    help = ("Take the call out of the loop: time GPU work with `torch.cuda.Event(enable_timing=True)` pairs, and "
            "leave memory to the caching allocator rather than `empty_cache()`.")
    contexts = frozenset({PER_STEP})
    cold = False
    triggers = ("synchronize", "empty_cache")  # an alias is assigned from one of them

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._timing: set[int] = set()  # syncs beside a timer read, kept only in a training step

    def visit_Call(self, node: ast.Call) -> None:
        qualname = self._sync_function(node.func)
        if qualname is None or self._twin_of_cuda(qualname):
            return
        if qualname.endswith("synchronize") and (before_read(node, self.ctx) or waits_anyway(node, self.ctx)):
            return  # `.item()` right after, or a read the host needs in every iteration, waits for
            # the same queue: dropping this saves nothing
        if qualname.endswith("synchronize") and self._timing_shown_each_step(node):
            return
        if qualname.endswith("synchronize") and self._beside_timer(node):
            if self._in_benchmark():
                return
            self._timing.add(id(node))
        elif self._deliberate(node, qualname):
            return
        message = self.message.format(call=qualname) if self.ctx.loops else \
            f"`{qualname}()` in code that runs every step stalls the host every step"
        self.report(node, message)

    def keep(self, node: ast.AST, where) -> bool:
        """A sync beside a timer read is how GPU work is timed (PTL108 asks for it): a benchmark
        loop needs it. In a training step (a loop that backpropagates or steps an optimizer, a
        step hook, or a helper they call: `def timed(): torch.cuda.synchronize(); return
        time.time()`) it stalls every step of training to time it; CUDA events time it without."""
        return id(node) not in self._timing or self.ctx.model.in_training_step(node)

    def _in_benchmark(self) -> bool:
        """A file or function named for measuring speed (`benchmark.py`, `speed_test.py`,
        `compute_time_train`, `time_model`): its backward pass is timed, not trained. Only the
        functions around the loop count: a timing helper's own name (`def time_wrap(): sync;
        return time.time()`) says what it does, not what its caller's loop is for."""
        loop = self.ctx.loops[-1] if self.ctx.loops else None
        around = [f for f in self.ctx.functions if loop is not None and f.lineno <= loop.lineno
                  and getattr(f, "end_lineno", 0) >= getattr(loop, "end_lineno", 0)]
        words = {word for function in around for word in getattr(function, "name", "").lower().split("_")}
        words |= set(os.path.basename(self.ctx.path).lower()[:-3].split("_"))
        return bool(words & BENCHMARK_WORDS) or any(word.startswith("bench") for word in words)

    def _sync_function(self, func: ast.AST) -> str | None:
        """The sync function called: in any import spelling (`from torch.cuda import synchronize
        as sync`), or through a local alias (`sync = torch.cuda.synchronize` in the function or
        at the top of the module, every assignment of the name)."""
        qualname = self.ctx.qualname(func)
        if qualname in SYNC_FUNCTIONS:
            return qualname
        if qualname is not None or not isinstance(func, ast.Name):
            return None
        function = self.ctx.function
        if function is not None and func.id in parameter_names(function.args):
            return None
        values = self.ctx.assignments(func.id) or (self.ctx.assignments(func.id, self.ctx.tree) if function else [])
        aliases = {self.ctx.qualname(v) if isinstance(v, (ast.Name, ast.Attribute)) else None for v in values}
        alias = aliases.pop() if len(aliases) == 1 else None
        return alias if alias in SYNC_FUNCTIONS else None

    def _twin_of_cuda(self, qualname: str) -> bool:
        """`torch.xpu.synchronize()` or `torch.mps.empty_cache()` in a function (or module) that
        also calls the CUDA one: branches of a dispatch on the device's type (`if device.type ==
        "cuda": ... elif device.type == "xpu": ...`), one decision, reported once, at the CUDA call."""
        backend, _, function = qualname.removeprefix("torch.").partition(".")
        if backend not in ("xpu", "mps"):
            return False
        cuda = f"torch.cuda.{function}"
        return any(isinstance(n, ast.Call) and self.ctx.qualname(n.func) == cuda
                   for n in ast.walk(self.ctx.function or self.ctx.tree))

    def _beside_timer(self, node: ast.Call) -> bool:
        """A timer read within three lines of the call, at any depth of its function: a clock
        (`time.perf_counter()`), a timer object's (`timer.toc()`, `fw_timer.tic()`), two CUDA
        events' `start.elapsed_time(end)`, or a read or reset of CUDA's memory statistics
        (`torch.cuda.max_memory_allocated()`)."""
        scope = self.ctx.function or self.ctx.tree
        return any(isinstance(n, ast.Call) and abs(n.lineno - node.lineno) <= 3
                   and (self._reads_a_clock(n) or _timer_method(n) or self.ctx.qualname(n.func) in MEMORY_STATS)
                   for n in ast.walk(scope))

    def _timing_shown_each_step(self, node: ast.Call) -> bool:
        """The time the sync measures (a clock read, or a CUDA event's `elapsed_time`, within three
        statements of the sync's statement, in its own block or in the loop body (outside a loop,
        the function body) that holds it: `if device == "mps": ... elif device == "cuda": ...`) is
        printed, logged or put on a GUI's label by every iteration of its loop, or by its main
        process only: the user reads each step's time, which needs the wait. Reported when the
        step only gathers it and shows it every N steps (`batch_time.update(...)`, then `if i %
        print_freq == 0:`)."""
        outer = self.ctx.loops[-1] if self.ctx.loops else self.ctx.function
        statement, holder = node, self.ctx.parent(node)
        while not isinstance(statement, ast.stmt) and holder is not None:
            statement, holder = holder, self.ctx.parent(holder)
        places = [block_of(statement, holder)]
        while holder is not None and holder is not outer:
            statement, holder = holder, self.ctx.parent(holder)
        places.append(block_of(statement, outer))
        for place in filter(None, places):
            body, index = place
            names: set[str] = set()
            for nearby in body[max(0, index - 3):index + 4]:
                if isinstance(nearby, ast.Assign) and any(isinstance(n, ast.Call) and self._reads_a_clock(n)
                                                          for n in ast.walk(nearby.value)):
                    names.update(t.id for t in nearby.targets if isinstance(t, ast.Name))
            if names and _shows(body[index + 1:], names):
                return True
        return False

    def _reads_a_clock(self, call: ast.Call) -> bool:
        """`time.perf_counter()` (any clock of `TIMERS`), or `start.elapsed_time(end)` of two CUDA
        events, which needs the end event done."""
        return self.ctx.qualname(call.func) in TIMERS or \
            isinstance(call.func, ast.Attribute) and call.func.attr == "elapsed_time" and len(call.args) == 1

    def _deliberate(self, node: ast.Call, qualname: str) -> bool:
        """An `empty_cache()` placed on purpose: after `del` or `gc.collect()` (freeing memory
        for what comes next), or under a condition that makes it a choice (a memory setting, a
        size check, which device's cache)."""
        if qualname.endswith("synchronize"):
            return False
        statement, block = self._statement(node)
        if statement is None:
            return False
        index = next(i for i, s in enumerate(block) if s is statement)
        before = block[max(0, index - 2):index]
        if any(isinstance(s, ast.Delete) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                                             and self.ctx.qualname(s.value.func) == "gc.collect") for s in before):
            return True
        loop = self.ctx.loops[-1] if self.ctx.loops else None
        for ancestor in reversed(self.ctx.stack):
            if ancestor is loop or isinstance(ancestor, FUNCTION_DEFS):
                break
            if isinstance(ancestor, ast.If) and name_words(ancestor.test) & MEMORY_CONDITION_WORDS:
                return True
        return False

    def _statement(self, node: ast.AST):
        """The statement holding `node`, and the list of statements it sits in."""
        child = node
        for ancestor in reversed(self.ctx.stack):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(ancestor, field, None)
                if isinstance(block, list) and any(s is child for s in block):
                    return child, block
            child = ancestor
        return None, []

    docs = """
## What it does
Finds `torch.cuda.synchronize()` and `torch.cuda.empty_cache()` (and their `mps`, `xpu` and
`torch.accelerator` twins) called inside a loop, resolving every import spelling
(`from torch.cuda import synchronize as sync`) and local aliases (`sync =
torch.cuda.synchronize`, then `sync()`), with or without a device argument.

## Why is this bad?
`synchronize()` blocks the CPU until the GPU has drained its queue, so the next step cannot be
queued while the current one runs. `empty_cache()` also synchronizes, and hands cached blocks
back to the driver only for the allocator to request them again on the next step, which is slow
and fragments memory. Either one per iteration costs throughput for no benefit.

Not reported: a `synchronize()` that a read of the step's results follows before any new
device work (`torch.cuda.synchronize()` then `loss_value = loss.item()`): the read waits for the
same queue, so removing the call saves nothing (PTL101 reports the read, where it is avoidable);
nor one in a loop whose every iteration reads back a value the host needs (`s =
out.cpu().numpy()` for a NumPy metric, in the loop body or in each branch of an `if`/`else`):
the iteration waits there anyway.
Nor calls placed on purpose: `synchronize()` next to a timer read (a clock, or a timer object's
`tic()` / `toc()`: how GPU work is timed, see PTL108) or to a read or reset of CUDA's memory
statistics (`torch.cuda.max_memory_allocated()`, `reset_peak_memory_stats()`: a peak-memory
measurement) in a loop that does not train, or in a file
or function named for measuring speed (`benchmark.py`, `speed_test.py`, `compute_time_train`:
its backward pass is timed, not trained), or whose measured time every step prints, logs or
puts on a GUI's label (`t1 = time.time()` after it, then `print(f"... {(t1 - t0) * 1000:.1f}
ms")`; `t = start.elapsed_time(end)` of two CUDA events, then `gui.set_value("time", f"{t}ms")`;
also on the main process only: the user reads each step's time, and that figure needs the
wait), and
`empty_cache()` right after
`del` or `gc.collect()` (handing memory back before a big allocation) or under a condition that
makes it a choice (a memory setting or measure, a size check, a user's option: `if
args.empty_cache_every_step:`, or which device's cache: `if is_xpu_available():`). Under a branch of the step's own data (`if num_gt == 0: ...
else: ... torch.cuda.empty_cache()`) it runs every step all the same, and is reported. A timer's `synchronize()` in a training step whose time is
only gathered each step and shown every N steps (`batch_time.update(...)`, printed under `if i %
print_freq == 0:`) is reported, and so is one in a helper such as `def timed():
torch.cuda.synchronize(); return time.time()` called around every step (its caller is not
followed): they stall every step of training for a figure read now and then, where
`torch.cuda.Event(enable_timing=True)` pairs measure it without a stall.

## Where it reports
- **Reports** in code that runs every step: the body of a loop (over data or anything else that
  repeats per step), and code that runs every step without a loop of its own — `forward`, a
  framework step hook (`training_step`, `*_batch_end`), a function that calls `.backward()`,
  and the helpers of the same file that these call (a timing helper the training loop calls
  every step).
- **Silent** in once-code (set-up, the end of a script, loops over settings there), once per
  epoch or every N steps (outside an inner batch loop, under `if step % 100 == 0`), once per
  iteration of a loop that collects a rollout of many environment steps every iteration (`batch =
  agent.collect_samples(2048)`, in this file or another; not the loop that steps the environment
  itself, nor one that collects only now and then), a function
  whose callers the file does not show, error paths (an `except` body, a branch that raises,
  or only warns or logs), and test code.
- **Once per dispatch**: a function that syncs whichever device it is given (`if device.type ==
  "cuda": torch.cuda.synchronize() elif device.type == "xpu": torch.xpu.synchronize() ...`) is
  reported at the CUDA call only.

## Example
```python
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        torch.cuda.synchronize()
```

## Use instead
```python
import torch


def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    torch.cuda.synchronize()  # once, when you need the timing or the memory
```
To time GPU work per step, use `torch.cuda.Event(enable_timing=True)` pairs.

## Fix safety
No automatic fix: benchmark code may need the sync where it is.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
"""

    bad_examples = [
        # peak memory measured in every training step: the sync stalls each step to measure it
        """
import torch

def train(model, loader, optimizer, log):
    model.cuda()
    for x in loader:
        loss = model(x.cuda()).mean()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()  # expect: PTL102
        log.append(torch.cuda.max_memory_allocated())
""",
        # a helper syncing whichever device it is given, every step: one finding, at the CUDA call
        """
import torch

def synchronize_device(device):
    if device.type == "cuda":
        torch.cuda.synchronize()  # expect: PTL102
    elif device.type == "xpu":
        torch.xpu.synchronize()
    elif device.type == "mps":
        torch.mps.synchronize()

def train(model, loader, optimizer, device):
    for x, y in loader:
        loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
        synchronize_device(device)
""",
        # ... and a helper for one other device only
        """
import torch

def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x.to("mps"), y.to("mps"))
        loss.backward()
        optimizer.step()
        torch.mps.empty_cache()  # expect: PTL102
""",
        # the loop of environment steps: an evaluation rollout every N steps, or a planning
        # rollout before each real step, leaves it the step loop
        """
import torch

def evaluate(env, policy, episodes=10):
    for _ in range(episodes):
        state, done = env.reset(), False
        while not done:
            state, reward, done, _ = env.step(policy(torch.as_tensor(state).cuda()).argmax().item())

def plan(model_env, policy, horizon=20):
    state = model_env.reset()
    for _ in range(horizon):
        state, reward, done, _ = model_env.step(policy(state).argmax().item())

def main(env, model_env, policy, max_timesteps):
    state = env.reset()
    for t in range(int(max_timesteps)):
        state, reward, done, _ = env.step(policy(torch.as_tensor(state).cuda()).argmax().item())
        torch.cuda.empty_cache()  # expect: PTL102
        if (t + 1) % 5000 == 0:
            evaluate(env, policy)
    for t in range(int(max_timesteps)):
        plan(model_env, policy)
        state, reward, done, _ = env.step(policy(torch.as_tensor(state).cuda()).argmax().item())
        torch.cuda.empty_cache()  # expect: PTL102
    for i_iter in range(int(max_timesteps)):
        policy(torch.zeros(4).cuda()).sum().backward()
        torch.cuda.empty_cache()  # expect: PTL102
        if i_iter % 100 == 0:
            evaluate(env, policy)
""",
        # a timing sync in a loop whose step is a method named for it (the pix2pix family's
        # `optimize_parameters()`), the time averaged and shown every N steps
        """
import time
import torch

def train(model, dataset, opt):
    optimize_time = 0.1
    for i, data in enumerate(dataset):
        torch.cuda.synchronize()  # expect: PTL102
        start = time.time()
        model.set_input(data)
        model.optimize_parameters()
        torch.cuda.synchronize()  # expect: PTL102
        optimize_time = (time.time() - start) * 0.005 + 0.995 * optimize_time
        if i % opt.print_freq == 0:
            print(optimize_time)
""",
        # CUDA events read every step only to be averaged and shown every 100 steps
        """
import torch

def train(model, loader, opt):
    times = []
    for step, x in enumerate(loader):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(x.cuda()).mean().backward()
        opt.step()
        end.record()
        torch.cuda.synchronize()  # expect: PTL102
        times.append(start.elapsed_time(end))
        if step % 100 == 0:
            print(sum(times) / len(times))
""",
        # device work between the drain and the read, or a read that may not run: the drain waits
        # on its own
        """
import torch
from torch.cuda import synchronize as sync

def train(model, loader, optimizer, args):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        sync()  # expect: PTL102
        optimizer.zero_grad()
        value = loss.item()
        torch.cuda.synchronize()  # expect: PTL102
        if step % args.log_every == 0:
            print(loss.item())
""",
        # in a branch of the step's own data: it runs on every image of every step
        """
import torch

class Head(torch.nn.Module):
    def forward(self, outputs, labels, num_targets):
        losses = []
        for i in range(outputs.shape[0]):
            if num_targets[i] == 0:
                losses.append(outputs.new_zeros(()))
            else:
                losses.append(assign(outputs[i], labels[i]))
                torch.cuda.empty_cache()  # expect: PTL102
        return torch.stack(losses).sum()
""",
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
        # aliases: imported under its own name, assigned to a local (in the function or the
        # module), with a device argument
        """
import torch
from torch.cuda import synchronize

wait = torch.cuda.synchronize

def train(model, loader, opt, device):
    sync = torch.cuda.synchronize
    for x in loader:
        model(x.to(device)).sum().backward()
        opt.step()
        synchronize()  # expect: PTL102
        sync()  # expect: PTL102
        wait()  # expect: PTL102
        torch.cuda.synchronize(device)  # expect: PTL102
""",
        # a timing helper that the training loop calls every step: a sync to time each step
        """
import time
import torch

def timed():
    torch.cuda.synchronize()  # expect: PTL102
    return time.time()

def time_wrap(use_gpu):  # a helper named for timing: its caller's loop trains
    if use_gpu:
        torch.cuda.synchronize()  # expect: PTL102
    return time.time()

def train(model, loader, opt, device):
    for step, x in enumerate(loader):
        begin = time_wrap(True)
        start = timed()
        loss = model(x.to(device)).sum()
        loss.backward()
        opt.step()
        elapsed = timed() - start
        if step % 100 == 0:
            print(f"step: {elapsed:.3f}s")
""",
        # the time shown only every N steps (what every step prints is not the time); a clock read
        # four statements away is no reading of this sync's time; a time shown before the sync
        """
import time
import torch

def train(model, loader, opt, device):
    t0 = time.time()
    for step, (x, y) in enumerate(loader):
        loss = model(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        torch.cuda.synchronize()  # expect: PTL102
        t1 = time.time()
        print(f"step {step} loss {loss}")
        if step % 100 == 0:
            print(f"{(t1 - t0) * 1000:.1f} ms")

def far(model, loader, opt, device):
    for step, (x, y) in enumerate(loader):
        t0 = time.time()
        loss = model(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        torch.cuda.synchronize()  # expect: PTL102
        opt.zero_grad()
        lr = opt.param_groups[0]["lr"]
        step += 1
        t1 = time.time()
        print(f"{t1 - t0:.3f} s")

def before(model, loader, opt, device):
    for step, (x, y) in enumerate(loader):
        t0 = time.time()
        model(x.to(device), y.to(device)).backward()
        print(f"{time.time() - t0:.3f} s")
        torch.cuda.synchronize()  # expect: PTL102
        opt.step()
""",
        # a step's time gathered every step and shown every N steps: the sync stalls every step
        # for a figure read once in a hundred
        """
import time
import torch

def train(model, loader, opt, batch_time, print_freq):
    end = time.time()
    for i, (x, y) in enumerate(loader):
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        opt.step()
        torch.cuda.synchronize()  # expect: PTL102
        batch_time.update(time.time() - end)
        end = time.time()
        if i % print_freq == 0:
            print(f"time {batch_time.avg:.3f}")
""",
    ]

    good_examples = [
        # a retry loop: the attempt returns, and the loop runs again only after an out-of-memory error
        """
import torch

def run(model, loader, batch_size):
    while batch_size:
        try:
            torch.cuda.empty_cache()
            return evaluate(model, loader, batch_size)
        except RuntimeError:
            batch_size //= 2

run(torch.nn.Linear(2, 2).cuda(), [], 64)
""",
        # a function that times another with CUDA events: the sync before `elapsed_time` is needed
        """
import torch

def time_function(func, *inputs, num_repeats=1000):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(num_repeats):
        start.record()
        func(*inputs)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sum(times) / len(times)
""",
        # a benchmark's peak memory per run: the sync makes the measurement (behind an option in
        # a generation loop, or beside the reset of the statistics)
        """
import torch

def benchmark_memory(model, batch, num_runs, device):
    peaks = []
    for _ in range(num_runs):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
        model(batch.to(device))
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated(device))
    return peaks

def main(model, tokens, args):
    model.cuda()
    for i in range(args.generations):
        out = model.generate(tokens.cuda())
        if args.measure_vram:
            torch.cuda.synchronize()
            print(torch.cuda.max_memory_allocated() / 2 ** 20)
""",
        # each iteration collects a rollout of many environment steps, then updates once: the
        # cache is emptied once per rollout
        """
import torch

def collect(env, policy, n):
    memory, obs = [], env.reset()
    for t in range(n):
        obs, reward, done, _ = env.step(policy(torch.as_tensor(obs).cuda()).argmax().item())
        memory.append((obs, reward))
    return memory

def main(env, policy, optimizer, max_iter_num):
    for i_iter in range(max_iter_num):
        batch = collect(env, policy, 2048)
        loss = policy(torch.tensor(batch).cuda()).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
""",
        # every evaluation batch reads its outputs back for a NumPy metric, in either branch: the
        # iteration waits there anyway
        """
import numpy as np
import torch

def evaluate(model, loader, args):
    correct = 0
    for x, y in loader:
        z = model(x.cuda())
        torch.cuda.synchronize()
        if args.keep_scores:
            scores = z.detach().cpu().numpy()
        else:
            scores = z.detach().cpu().numpy()
            correct += np.sum(np.round(scores) == y.numpy())
    return correct
""",
        # a GUI's step timed with CUDA events: the frame time is put on a label and steers the
        # work of the next frame, every frame
        """
import time
import torch

class GUI:
    def train_step(self):
        starter, ender = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        starter.record()
        outputs = self.trainer.train_gui(self.loader, step=self.train_steps)
        ender.record()
        torch.cuda.synchronize()
        t = starter.elapsed_time(ender)
        self.gui.set_value("train_time", f"{t:.4f}ms ({int(1000 / t)} FPS)")
        self.train_steps = max(4, int(16 * 500 / t))

    def test_step(self):
        if self.need_update:
            starter, ender = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            starter.record()
            self.buffer = self.trainer.test_gui(self.pose)
            ender.record()
            torch.cuda.synchronize()
            t = starter.elapsed_time(ender)
            self.gui.set_value("render_time", f"{t:.4f}ms")

    def eval_step(self):
        t0 = time.perf_counter()
        self.buffer = self.trainer.test_gui(self.pose)
        if self.device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter() - t0
        self.gui.set_value("eval_time", f"{t:.3f}s")

    def render(self):
        while self.running:
            self.train_step()
            self.test_step()
            self.eval_step()
""",
        # a benchmark that times forward and backward with a timer object: the sync is the measurement
        """
import torch

def compute_time_train(model, loss_fun, inputs, labels, iters):
    fw_timer, bw_timer = Timer(), Timer()
    for cur_iter in range(iters):
        fw_timer.tic()
        loss = loss_fun(model(inputs), labels)
        torch.cuda.synchronize()
        fw_timer.toc()
        bw_timer.tic()
        loss.backward()
        torch.cuda.synchronize()
        bw_timer.toc()
    return fw_timer.average_time, bw_timer.average_time
""",
        # a read of the step's results right after: it waits for the same queue (also through an
        # alias, with host-only code between, or a `with` that reads)
        """
import time
import torch
import torch.cuda as tc

def train(model, loader, optimizer, meter):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        elapsed = time.time()
        meter.update(loss.item(), x.size(0))
        tc.synchronize()
        with open("log.txt", "a") as f:
            f.write(str(loss.cpu()))
""",
        # a timing helper in a benchmark loop (no training step); names that only look like the
        # alias (a parameter, a name bound to something else)
        """
import time
import torch
import torch.distributed as dist

def timed():
    torch.cuda.synchronize()
    return time.perf_counter()

def benchmark(model, x, sync):
    wait = dist.barrier
    for _ in range(100):
        start = timed()
        model(x)
        print(timed() - start)
        sync()
        wait()
""",
        # a step's time printed by every step (on the main process): the figure the user reads
        # each step needs the wait; the read after the device's own branch waits for nothing new
        """
import time
import torch

def train(model, loader, optimizer, device, master_process):
    for step, (x, y) in enumerate(loader):
        t0 = time.time()
        loss = model(x.to(device), y.to(device))
        loss.backward()
        optimizer.step()
        if device == "mps":
            torch.mps.synchronize()
        elif device == "cuda":
            torch.cuda.synchronize()
        t1 = time.time()
        tokens_per_sec = x.numel() / (t1 - t0)
        if master_process:
            print(f"step {step} | loss {loss.item():.4f} | {tokens_per_sec:.0f} tok/s")
""",
        # the time read right before the sync, shown every step past other statements; written to a
        # file, logged, kept in an annotated local
        """
import time
import torch
import wandb

def train(model, loader, opt, device, log_file):
    for step, (x, y) in enumerate(loader):
        t0 = time.time()
        model(x.to(device), y.to(device)).backward()
        torch.cuda.synchronize()
        print(f"{(time.time() - t0) * 1000:.1f} ms")

def logged(model, loader, opt, device, log_file):
    for step, (x, y) in enumerate(loader):
        t0 = time.time()
        model(x.to(device), y.to(device)).backward()
        opt.step()
        torch.cuda.synchronize()
        dt: float = time.time() - t0
        for group in opt.param_groups:
            lr = group["lr"]
        if step % 100 == 0:
            opt.zero_grad()
        wandb.log({"step_time": dt})

def written(model, loader, opt, device, log_file):
    for step, (x, y) in enumerate(loader):
        t0 = time.time()
        model(x.to(device), y.to(device)).backward()
        opt.step()
        torch.cuda.synchronize()
        t1 = time.time()
        with open(log_file, "a") as f:
            f.write(f"{t1 - t0} ")
""",
        # placed on purpose: timing GPU work, freeing memory, a memory setting
        """
import gc
import time
import torch

def bench(model, loader, args):
    for x in loader:
        start = time.perf_counter()
        model(x)
        if x.is_cuda:
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        out = model(x)
        del out
        torch.cuda.empty_cache()
        gc.collect()
        torch.cuda.empty_cache()
        if args.empty_cache_every_step:
            torch.cuda.empty_cache()
""",
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
