"""The execution-context model (ptlint/context.py): where each marked statement runs.

A line ending in `# ctx: <context>` (and `cold` when it only runs on misuse) must be placed so;
the statement starting on that line is asked about."""

from __future__ import annotations

import ast
import re

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.rule import CALLED, PER_OUTER, PER_STEP
from ptlint.engine.source import SourceFile
from ptlint.semantics.where import ExecutionModel, Via, Where

MARK = re.compile(r"#\s*ctx:\s*(?P<context>[a-z-]+)(?P<cold>,\s*cold)?")


def placements(source: str) -> tuple[list, list]:
    """(expected, found) as (line, context, cold) for every marked line."""
    tree = ast.parse(source)
    model = ExecutionModel(FileContext(SourceFile("t.py", source), tree))
    statements = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            statements.setdefault(node.lineno, node)
    expected, found = [], []
    for number, line in enumerate(source.splitlines(), 1):
        match = MARK.search(line)
        if match:
            expected.append((number, match.group("context"), bool(match.group("cold"))))
            where = model.where(statements[number])
            found.append((number, where.context, where.cold))
    assert expected, "no markers"
    return expected, found


CASES = {
    "training loop with an inner loop over parameter groups": """
import torch

def train(model, loader, opt, lr_at):
    for step, (x, y) in enumerate(loader):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)  # ctx: per-step
        loss = model(x).sum()  # ctx: per-step
        loss.backward()
        opt.step()
        total = loss.item()  # ctx: per-step
    return total  # ctx: called
""",
    "epoch loop: after the inner batch loop, once per epoch": """
def fit(model, loader, epochs):
    for epoch in range(epochs):
        model.train()  # ctx: per-outer-iteration
        for x in loader:
            model(x).sum().backward()  # ctx: per-step
        print(epoch)  # ctx: per-outer-iteration
""",
    "periodic logging, and the optimizer step of gradient accumulation": """
def validate_each_epoch(model, train_loader, val_loader, opt, writer):
    for epoch in range(100):
        for x in train_loader:
            model(x).sum().backward()
            opt.step()
            for name, value in model.losses.items():
                print(value.item())  # ctx: per-step
        results = {"d1": torch.zeros(1).cuda(), "rmse": torch.zeros(1).cuda()}
        for x in val_loader:
            results["d1"] += model(x).mean()
        print([(v / 2).item() for v in results.values()])  # ctx: per-outer-iteration
        for name, metric in results.items():
            writer.add_scalar(name, metric.item(), epoch)  # ctx: per-outer-iteration
        for name in ("d1", "rmse"):
            print(results[name].item())  # ctx: per-outer-iteration
        for split, table in results.items():
            for name, metric in table.items():
                print(metric.item())  # ctx: per-outer-iteration
        for k in range(100):
            print(results["d1"].item())  # ctx: per-step
    for x in train_loader:
        for name, value in model(x).items():
            print(value.item())  # ctx: per-step


class Epochs:
    def train(self, epochs):
        for epoch in range(epochs):
            for i, data in enumerate(self._train_loader):
                loss = self.model(data).sum()
                loss.backward()
                self.running += loss.item()  # ctx: per-step

class Resumable:
    def training_step(self, batch):
        loss = self.model(batch).sum()
        loss.backward()  # ctx: per-step
        if self.resumed and self.iteration_step == self.initial_iter_step:
            move_states(self.optimizer, "cuda")  # ctx: per-outer-iteration
        if self.iteration_step == self.ema_step:
            self.ema.update(self.model)  # ctx: per-step

def epochs(model, loader, start_epoch, n):
    for epoch in range(start_epoch, n):
        if epoch == start_epoch:
            model.warm_up()  # ctx: per-outer-iteration
        fit(model, loader, None, 1)

def fit(model, loader, opt, accum):
    for i, x in enumerate(loader):
        loss = model(x)
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            running = loss.item()  # ctx: per-step
        if i % 100 == 0:
            print(loss.item())  # ctx: per-outer-iteration, cold
        if i == 0:
            first = loss.item()  # ctx: per-outer-iteration
""",
    "helpers called from the training loop, transitively": """
def log_metrics(loss):
    return loss.item()  # ctx: per-step

def step(model, batch):
    loss = model(batch)
    loss.backward()
    return log_metrics(loss)  # ctx: per-step

def train(model, loader):
    for batch in loader:
        step(model, batch)  # ctx: per-step

def main():
    train(None, [])  # ctx: once

if __name__ == "__main__":
    main()  # ctx: once
""",
    "set-up: __init__, a loop over layers, set-up only main() calls, module top level": """
import torch

DEVICE = torch.device("cuda")  # ctx: once

class Net(torch.nn.Module):
    scale = 2  # ctx: once

    def __init__(self, n):
        super().__init__()
        for i in range(n):
            self.register_buffer(f"b{i}", torch.zeros(3))  # ctx: once

    def forward(self, x):
        return self.helper(x)  # ctx: per-step

    def helper(self, x):
        return x * 2  # ctx: per-step

def build(n):
    return Net(n)  # ctx: once

def report(model):
    for name, p in model.named_parameters():
        print(name, p.norm())  # ctx: once

def main():
    model = build(3)  # ctx: once
    report(model)
    for name in ["a", "b"]:
        print(name)  # ctx: once
    for i in range(1000):
        model(i)  # ctx: per-step

main()
""",
    "a constant range of a few dozen iterations in once-code runs a fixed handful of times": """
import torch

def sample(generator, n, device):
    z = torch.randn(n, 512).to(device)  # ctx: once
    return generator(z)

def mean_style(generator, device):
    for i in range(10):
        style = generator(torch.randn(1024, 512).to(device))  # ctx: once
    return style

def fit(model, batches):
    for x in batches:
        model(x).sum().backward()  # ctx: per-step

def main():
    mean_style(generator, device)
    for j in range(20):
        sample(generator, 5, device)  # ctx: once
    for j in range(1, 33, 2):
        print(model(j).item())  # ctx: once
    for j in range(40):
        print(model(j).item())  # ctx: per-step
    for j in range(32):
        print(model(j).item())  # ctx: once
    for j in range(33):
        print(model(j).item())  # ctx: per-step
    for step in range(10):
        loss = model(x)
        loss.backward()  # ctx: per-step
    for epoch in range(10):
        fit(model, batches)  # ctx: per-outer-iteration
    for j in range(n):
        print(model(j).item())  # ctx: per-step

main()
""",
    "a range bound named once for a small constant is a few iterations; bound twice, unknown": """
import torch

total = 20
for step in range(total):
    print(model(x).item())  # ctx: per-step
total = 1000

for i in range(num_steps):
    print(model(x).item())  # ctx: per-step

def main(n):
    few = 4
    for i in range(few):
        print(model(x).item())  # ctx: once
    for i in range(n):
        print(model(x).item())  # ctx: per-step
    counted = len(x)
    for i in range(counted):
        print(model(x).item())  # ctx: per-step
    many = 500
    for i in range(many):
        print(model(x).item())  # ctx: per-step
    grown = 4
    grown += 500
    for i in range(grown):
        print(model(x).item())  # ctx: per-step
    for last in range(3):
        pass
    last = 2
    for i in range(last):
        print(model(x).item())  # ctx: per-step

main(5)

steps = 10
for step in range(steps):  # ten samples
    x = torch.randn(2, 3).cuda()  # ctx: once
    print(model(x).mean().item())
for step in range(steps):  # ten training steps: a loop that trains stays a loop of steps
    x = torch.randn(2, 3).cuda()  # ctx: per-step
    model(x).sum().backward()
""",
    "set-up a branch hands to a method of its class that sets what the test asks runs when the need grows": """
import torch


class Kernel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("l_kernel", torch.tensor(0))
        self.best = float("inf")

    def _setup(self, L):
        if self.l_kernel.item() == 0:
            self.C = torch.zeros(L).cuda()  # ctx: once
        self.l_kernel = self.l_kernel + L

    def _build_cache(self, n, device):
        self.cached = n
        self.cos = torch.arange(n).float().to(device)  # ctx: once

    def _report(self, n):
        print(n)  # ctx: per-step

    def _make_mask(self, n):
        self.register_buffer("mask", torch.ones(n, n).tril().cuda(), persistent=False)  # ctx: once

    def _build(self):
        self.built = True

    def _grow(self, n):
        self.other = n

    def _rebuild(self, n):
        self.seen = n

    def forward(self, x, L):
        if self.l_kernel.item() == 0:
            self._setup(L)  # ctx: once
        while L > self.l_kernel.item():
            self._setup(L)  # ctx: once
        n = x.shape[1]
        if n > self.cached:
            self._build_cache(n, x.device)  # ctx: once
            self._report(n)
        if n > self.longest:
            self._report(n)  # ctx: per-step
        if self.mask is None or n > self.mask.size(0):
            self._make_mask(n)  # ctx: once
        while n > self.longest:
            n = self._report(n // 2)  # ctx: per-step
        while not self.finished:
            self.finished = self._report(n)  # ctx: per-step
        if n > self.longest:
            self._grow(n)  # ctx: per-step
            self._report(n)
        if self.ready and n > self.cached:
            self._build_cache(n, x.device)  # ctx: once
        if not self.built:
            self._build()  # ctx: once
        if n != self.seen:  # (rebuilt whenever the length changes: as often as lengths vary)
            self._rebuild(n)  # ctx: per-step
        z = self.l_kernel.item()
        if z == 0:
            self._setup(L)  # ctx: once
        if self.table is None:
            self.table: torch.Tensor = torch.ones(4).cuda()  # ctx: once
        if self.cache is None:
            self.reset_cache()  # ctx: per-step
        loss = x.sum()
        if loss < self.best:
            self.best = loss  # ctx: per-step
        return x


def prepare(self, x):
    if self.ready is None:
        self._prepare(x)  # ctx: called
""",
    "a cached function's body runs once for each new argument, however often it is called": """
import functools
import torch
from functools import lru_cache, cached_property

@lru_cache(maxsize=128)
def relative_positions(q, k, device):
    return torch.arange(q).to(device)  # ctx: once

@functools.cache
def causal_mask(n):
    return torch.ones(n, n).tril()  # ctx: once

def table(n):
    return torch.arange(n).cuda()  # ctx: per-step

class Attention(torch.nn.Module):
    @cached_property
    def scale(self):
        return torch.tensor(self.dim).cuda()  # ctx: once

    def forward(self, x):
        n = x.size(1)
        return x + relative_positions(n, n, x.device) + causal_mask(n) + table(n) + self.scale  # ctx: per-step
""",
    "a function whose callers the file does not show": """
def gather(tensors):
    out = []
    for t in tensors:
        out.append(t.item())  # ctx: per-step
    return out  # ctx: called
""",
    "cold branches: raise, warn-only, except, assert messages": """
import warnings

def check(x, logger, unused):
    if x.dim() != 3:
        print(x.shape)  # ctx: called, cold
        raise ValueError("bad")
    if unused:
        warnings.warn("unused kwargs")  # ctx: called, cold
        unused = None
    if x.sum() > 0:  # ctx: called
        x = x + 1  # ctx: called
    try:
        x = x.cuda()  # ctx: called
    except RuntimeError:
        logger.info("no gpu")  # ctx: called, cold
    return x
""",
    "framework step hooks and compiled functions are per step": """
import torch

class Lit:
    def training_step(self, batch, idx):
        self.log("loss", batch.item())  # ctx: per-step

    def on_train_batch_end(self, out, batch, idx):
        print(out)  # ctx: per-step

    def configure_optimizers(self):
        return torch.optim.SGD([], lr=1)  # ctx: once

@torch.compile
def fused(x):
    return x.sin()  # ctx: per-step

def plain(x):
    return x.cos()  # ctx: per-step

compiled = torch.compile(plain)
""",
    "a top-level script: while loops are step loops, loops over config are not": """
import torch

for name in ("a", "b"):
    print(name)  # ctx: once
while True:
    torch.cuda.synchronize()  # ctx: per-step
for x, y in train_loader:
    loss = model(x)  # ctx: per-step
    loss.backward()
for x, y in test_loader:
    correct = model(x).sum().item()  # ctx: once
""",
    "a function that backpropagates outside a loop of its own is a step": """
def create_trainer(model, optimizer, loss_fn):
    def update(engine, batch):
        optimizer.zero_grad()
        loss = loss_fn(model(batch[0]), batch[1])
        loss.backward()  # ctx: per-step
        optimizer.step()
        return loss.item()  # ctx: per-step
    return Engine(update)  # ctx: called

def fit(model, loader):
    for x in loader:
        model(x).sum().backward()
    return model  # ctx: called
""",
    "forward of a class derived from another module's class runs per step": """
from transformers import PreTrainedModel

class Base:
    def forward(self, x):
        return x  # ctx: called

class Plain(Base):
    def forward(self, x):
        return x  # ctx: called

class Encoder(PreTrainedModel):
    def forward(self, x):
        return x  # ctx: per-step

class Layer(Encoder):
    def forward(self, x):
        return x  # ctx: per-step

class Tool(object):
    def forward(self, x):
        return x  # ctx: called
""",
    "a local given a constant once before the loop and set under its sentinel test: the first step only": """
def train(model, loader, opt):
    loss_ema = None
    best = 0
    count = None
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        if loss_ema is None:
            loss_ema = loss.item()  # ctx: once
        else:
            loss_ema = 0.9 * loss_ema + 0.1 * loss.item()  # ctx: per-step
        if not best:
            best = loss.item()  # ctx: once
        if count is None:
            count = loss.item()  # ctx: per-step
        count = None
        if loss > best:
            best = loss.item()  # ctx: per-step
""",
    "a branch that fills a cache under its key runs once per key": """
import torch

windows = {}

def spectrogram(model, loader, n):
    for y in loader:
        key = str(n) + str(y.device)
        if key not in windows:
            windows[key] = torch.hann_window(n).to(y.device)  # ctx: once
        if key not in windows:
            other = torch.hann_window(n).to(y.device)  # ctx: per-step
        if n not in windows:
            windows[key] = torch.hann_window(n).to(y.device)  # ctx: per-step
        model(torch.stft(y, n, window=windows[key])).sum().backward()
""",
    "a branch for a torch release older than 2 never runs": """
import numpy as np
import torch
from packaging import version as pv

version = torch.__version__

def train(model, loader):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        if int(version[0]) > 0 or int(version[2]) > 3:
            value = loss.item()  # ctx: per-step
        else:
            value = loss.data[0]  # ctx: per-step, cold
        if torch.__version__ < "1.0":
            value = loss.data[0]  # ctx: per-step, cold
        if pv.parse(torch.__version__) >= pv.parse("1.6"):
            value = loss.item()  # ctx: per-step
        if tuple(map(int, version.split(".")[:2])) < (1, 8):
            value = loss.data[0]  # ctx: per-step, cold
        if pv.parse(torch.__version__) >= pv.parse("2.4"):
            value = loss.item()  # ctx: per-step
        if np.__version__ < "1.0":
            value = loss.item()  # ctx: per-step
        if int(version[9]) > 1 or version.major > 1 or version[None] == 2:
            value = loss.item()  # ctx: per-step
""",
    "a lazy set-up guard on an attribute runs once; a running best does not": """
import torch

class Memory(torch.nn.Module):
    def forward(self, x):
        out = x * 2  # ctx: per-step
        if self.norm < 0:
            self.norm = out.mean().item()  # ctx: once
        if self.cache is None or not self.ready:
            self.cache = out.detach()  # ctx: once
        if out.sum() < self.best:
            self.best = out.sum()  # ctx: per-step
        if self.count == 0:
            self.total = out  # ctx: per-step
        if not isinstance(self.head, torch.nn.DataParallel):
            self.head = torch.nn.DataParallel(self.head)  # ctx: once
        if not hasattr(self, "mask"):
            self.mask = torch.ones_like(out)  # ctx: once
        if isinstance(self.head, torch.nn.Linear):
            self.head = self.head.half()  # ctx: per-step
        keys = out
        if not len(self.queue):
            self.queue = keys.clone()  # ctx: once
        if len(self.bank) == 0:
            self.bank = [keys]  # ctx: once
        z = self.params[2].item()
        if z < 0:
            self.params[2] = keys.sum()  # ctx: once
            z = self.params[2].clone().detach().item()  # ctx: once
        y = self.params[4].item()
        if y < 0:
            y = keys.sum().item()  # ctx: per-step
        if len(keys) == 0:
            self.queue = keys  # ctx: per-step
        w = self.params[3].item()
        if w < 0:
            self.other[3] = keys.sum().item()  # ctx: per-step
        if len(self.queue) > 0:
            self.queue = keys  # ctx: per-step
        return out / self.norm
""",
    "a few steps: the first, those a set names, an early exit on `period == 0 or i % period`": """
def ema_step(model, ema, cur_iter, period):
    x = model.weight.sum()  # ctx: per-step
    if period == 0 or cur_iter % period != 0:
        return
    ema.update(model)  # ctx: per-outer-iteration

def late_exit(model, ema, done):
    if done or not model.training:
        return
    ema.update(model)  # ctx: per-step

def run(model, ema, loader, period):
    for i, x in enumerate(loader):
        model(x).sum().backward()
        ema_step(model, ema, i, period)
        late_exit(model, ema, False)

class Trainer:
    def training_step(self, batch, batch_idx):
        loss = self.model(batch)
        if self.global_step == 0 and batch_idx == 0:
            self.seen.append(loss.item())  # ctx: per-outer-iteration
        if batch_idx == self.n:
            self.seen.append(loss.item())  # ctx: per-step
        if batch_idx in self.log_iters:
            self.seen.append(loss.item())  # ctx: per-outer-iteration
        if "loss" in self.logs:
            self.seen.append(loss.item())  # ctx: per-step
        if self.limit > batch_idx:
            self.seen.append(loss.item())  # ctx: per-step
        if self.stage == 0:
            self.seen.append(loss.item())  # ctx: per-step
        return loss

def fit(model, loader, opt, checkpoints):
    for step, x in enumerate(loader):
        loss = model(x).sum()
        loss.backward()
        if step in checkpoints:
            seen.append(loss.item())  # ctx: per-outer-iteration
        if x in checkpoints:
            seen.append(loss.item())  # ctx: per-outer-iteration
        if step < 10:
            seen.append(loss.item())  # ctx: per-outer-iteration
        if 3 >= step:
            seen.append(loss.item())  # ctx: per-outer-iteration
        if step < 1000:
            seen.append(loss.item())  # ctx: per-step
        if step < warmup_steps:
            seen.append(loss.item())  # ctx: per-step
        if step <= 10 or loss > 0:
            seen.append(loss.item())  # ctx: per-outer-iteration

def shown_first(model, loader, limit):
    shown = 0
    other = 0
    for x in loader:
        loss = model(x).sum()
        shown += 1
        if shown < 10:
            seen.append(loss.item())  # ctx: per-outer-iteration
        if other < 10:
            seen.append(loss.item())  # ctx: per-step
        if shown < limit:
            seen.append(loss.item())  # ctx: per-step
""",
    "after an early exit on the steps a periodic test leaves out": """
def train_step(self, batch, should_log):
    loss = self.model(batch).sum()
    loss.backward()  # ctx: per-step
    self.optimizer.step()
    if not should_log:
        return
    total = loss.item()  # ctx: per-outer-iteration
    if total < self.best:
        self.best = total  # ctx: per-outer-iteration

def train_batch(self, batch, should_log_optim_metrics_this_step, should_logits_be_kept):
    loss = self.model(batch).sum()
    loss.backward()  # ctx: per-step
    if should_log_optim_metrics_this_step:
        for key, value in self.optim.metrics().items():
            self.metrics[key] = value.item()  # ctx: per-outer-iteration
    if should_logits_be_kept:
        self.kept = loss.item()  # ctx: per-step

def fit(model, loader, opt, accum):
    for i, x in enumerate(loader):
        loss = model(x).sum()
        loss.backward()  # ctx: per-step
        if i % 100 != 0:
            continue
        print(loss.item())  # ctx: per-outer-iteration

def accumulate(model, loader, opt, accum):
    for i, x in enumerate(loader):
        model(x).sum().backward()
        if (i + 1) % accum != 0:
            continue
        opt.step()  # ctx: per-step

class Finder:
    def on_train_batch_end(self, trainer, outputs, batch, batch_idx):
        if (batch_idx + 1) % trainer.accumulate_grad_batches != 0:
            return
        self.losses.append(outputs["loss"].item())  # ctx: per-step

def guarded(model, loader, ready):
    for x in loader:
        if not ready:
            continue
        loss = model(x).sum()  # ctx: per-step
        if step % 100 == 0:
            continue
        loss.backward()  # ctx: per-step
""",
    "Ignite event handlers": """
from ignite.engine import Events

@trainer.on(Events.ITERATION_COMPLETED)
def log_loss(engine):
    print(engine.state.output)  # ctx: per-step

@trainer.on(Events.ITERATION_COMPLETED(every=100))
def log_often(engine):
    print(engine.state.output)  # ctx: per-outer-iteration

@trainer.on(Events.EPOCH_COMPLETED)
def evaluate(engine):
    print(engine.state.metrics)  # ctx: per-outer-iteration

@trainer.on(Events.COMPLETED)
def done(engine):
    print("done")  # ctx: once
""",
    "Ignite events: getting a batch, once-events, events that are not Ignite's": """
from ignite.engine import Events

@trainer.on(Events.GET_BATCH_COMPLETED)
def on_batch(engine):
    print(engine.state.batch)  # ctx: per-step

@trainer.on(Events.STARTED)
def started(engine):
    print("started")  # ctx: once

@trainer.on(Events.TERMINATE)
def stopped(engine):
    print("stopped")  # ctx: once

@trainer.on(Events.EXCEPTION_RAISED)
def failed(engine, e):
    print(e)  # ctx: once

@trainer.on(custom_event)
def custom(engine):
    print("custom")  # ctx: called
""",
    "every spelling of the optimizer step under a modulo test is the step, other steps are not": """
def fit(model, loader, optimizer, optim, scaler, lr_scheduler, accum):
    for i, x in enumerate(loader):
        loss = model(x)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            a = loss.item()  # ctx: per-step
        if (i + 1) % accum == 0:
            optimizer.step()
            b = loss.item()  # ctx: per-step
        if (i + 1) % accum == 0:
            optim.step()
            c = loss.item()  # ctx: per-step
        if (i + 1) % accum == 0:
            model.zero_grad()
            d = loss.item()  # ctx: per-step
        if (i + 1) % accum != 0:
            loss.backward()
            e = loss.item()  # ctx: per-step
        if i % 100 == 0:
            lr_scheduler.step()
            f = loss.item()  # ctx: per-outer-iteration
        g = loss.item() if i % 10 == 0 else None  # ctx: per-step
""",
    "an early exit in an else branch; sub-step and training inner loops": """
def fit(model, loader, warmup):
    for i, x in enumerate(loader):
        loss = model(x)
        if i < warmup:
            loss.backward()
        else:
            if i % 10 != 0:
                continue
            print(loss.item())  # ctx: per-outer-iteration

def accumulate(model, get_batch, opt, accum):
    while True:
        for micro in range(accum):
            model(get_batch()).sum().backward()
        opt.step()  # ctx: per-step

def gan(critic, gen, get_batch, opt, n_critic):
    while True:
        for _ in range(n_critic):
            critic(get_batch()).mean().backward()
        gen.step()  # ctx: per-outer-iteration
""",
    "calls resolve to the innermost definition and to methods of the class family": """
def train(model, loader):
    def step(x):
        return model(x).sum()  # ctx: per-step
    for x in loader:
        step(x)

def export(model):
    def step(x):
        return model(x)  # ctx: once
    return step(None)

class Base:
    def log_step(self, x):
        return x.item()  # ctx: per-step

class Lit(Base):
    def training_step(self, batch, idx):
        def run(x):
            return self.log_step(x)
        return run(batch)

class Unrelated:
    def log_step(self, x):
        return x  # ctx: called

def walk(node):
    for child in node.children:
        walk(child)
    return node  # ctx: called
""",
    "a script's test pass after its training loop runs once": """
import torch

for epoch in range(10):
    for x, y in train_loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
with torch.no_grad():
    for x, y in test_loader:
        correct += (model(x).argmax(1) == y).sum().item()  # ctx: once

def main():
    for x, y in train_loader:
        model(x).sum().backward()
        opt.step()
    if args.evaluate:
        for x, y in test_loader:
            correct += model(x).sum().item()  # ctx: once

def evaluate_only():
    for x, y in val_loader:
        correct += model(x).sum().item()  # ctx: per-step

def evaluate_first():
    for x, y in val_loader:
        correct += model(x).sum().item()  # ctx: per-step
    for x, y in train_loader:
        model(x).sum().backward()

def per_epoch():
    for epoch in range(10):
        for x, y in train_loader:
            model(x).sum().backward()
        for x, y in val_loader:
            correct += model(x).sum().item()  # ctx: per-step

def trains_again():
    for x, y in train_loader:
        model(x).sum().backward()
    for x, y in finetune_loader:
        model(x).sum().backward()  # ctx: per-step
""",
    "a pass over data that trains nothing, in code that runs once, runs once": """
import torch

def evaluate(model, loader):
    for x, y in loader:
        correct = (model(x).argmax(1) == y).sum().item()  # ctx: once
    for step in range(100):
        sample = model.sample().item()  # ctx: per-step

def validate(model, loader):
    for x, y in loader:
        correct = (model(x).argmax(1) == y).sum().item()  # ctx: per-step

def tune(model, loader):
    for x, y in loader:
        model(x).sum().backward()  # ctx: per-step

def main():
    for epoch in range(10):
        validate(model, val_loader)
    evaluate(model, test_loader)
    tune(model, train_loader)
    for x, y in test_loader:
        correct = model(x).sum().item()  # ctx: once

if __name__ == "__main__":
    main()
""",
    "an inference program's pass over data is its run: each batch is a step": """
import torch

def evaluate(model, loader):
    for x, y in loader:
        correct = (model(x).argmax(1) == y).sum().item()  # ctx: per-step

def main():
    evaluate(model, test_loader)
    for x, y in test_loader:
        correct = model(x).sum().item()  # ctx: per-step

if __name__ == "__main__":
    main()
""",
    "a block that leaves the loop runs once per run of the loop": """
def decode(model, seq, steps, eos):
    for step in range(steps):
        out = model(seq)  # ctx: per-step
        if (out == eos).all():
            best = out.argmax().item()  # ctx: called
            break
        seq = out
    for x in seq:
        for y in x:
            if y > 0:
                found = y.item()  # ctx: per-step
                break
        other = x.sum()  # ctx: per-step
    for x in seq:
        for y in x:
            if y > 0:
                z = y.item()  # ctx: called
                return z
    while True:
        first = model(seq).item()  # ctx: called
        break
    for x in seq:
        if x is None:
            continue
        kept = x.item()  # ctx: per-step
    return best
""",
    "a branch a switch hard-coded in __init__ rules out never runs": """
import torch

class RF(torch.nn.Module):
    def __init__(self, model, ln=True):
        super().__init__()
        self.ln = ln
        self.stratified = False
        self.fused = True
        self.tuned = False
        self.shown = None
        if model is None:
            self.conditional = False

    def forward(self, x):
        if self.stratified:
            t = torch.rand(4).to(x.device)  # ctx: per-step, cold
        else:
            t = torch.randn(4, device=x.device)  # ctx: per-step
        if not self.stratified:
            t = t * 2  # ctx: per-step
        else:
            t = t / 2  # ctx: per-step, cold
        if self.fused:
            t = t + 1  # ctx: per-step
        else:
            t = t - 1  # ctx: per-step, cold
        if self.ln:
            t = t.sigmoid()  # ctx: per-step
        if self.tuned:
            t = t.exp()  # ctx: per-step
        if self.conditional:
            t = t.exp()  # ctx: per-step
        if self.shown is None:
            self.shown = t  # ctx: once
        return t

    def tune(self):
        self.tuned = True
""",
    "a loop over a task's classes in once-code and in per-step code": """
import torch

def calculate_map(det_boxes, det_labels, n_classes, device):
    for c in range(1, n_classes):
        hits = torch.zeros(5).to(device)  # ctx: once
    for i, name in enumerate(class_names):
        print(name)  # ctx: once
    for i in range(n_items):
        x = torch.zeros(5).to(device)  # ctx: per-step

def main(model, loader, n_classes):
    calculate_map(None, None, n_classes, "cuda")
    for x, y in loader:
        model(x).sum().backward()
        for c in range(n_classes):
            w = torch.ones(3).to(x.device)  # ctx: per-step
""",
    "loops over a model's parts in once-code": """
class Net:
    def __init__(self, convs, bns, blocks):
        self.convs, self.bns, self.blocks = convs, bns, blocks
        self.summary()

    def summary(self):
        for conv, bn in zip(self.convs, self.bns):
            print(conv, bn)  # ctx: once
        for i, block in enumerate(self.blocks):
            print(i, block)  # ctx: once
""",
    "a loop left once its counter reaches a small constant runs a few times per run around it": """
def fit(model, loader, writer, epochs):
    for epoch in range(epochs):
        for x in loader:
            model(x).sum().backward()  # ctx: per-step
        for i in range(len(samples)):
            writer.add_audio(model(samples[i]))  # ctx: per-outer-iteration
            if i >= 5:
                break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-outer-iteration
            if i == 3:
                break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-step
            if i >= limit:
                break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-step
            if i >= 100000:
                break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-step
            if epoch >= 5:
                break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-step
            for j in range(3):
                if i >= 5:
                    break  # (leaves the inner loop only)
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-outer-iteration
            with torch.no_grad():
                if i >= 5:
                    break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-outer-iteration
            if i >= 100:
                break
        for i, x in enumerate(samples):
            writer.add_audio(model(x))  # ctx: per-step
            if i >= 101:
                break
        for score, x in pairs:
            writer.add_audio(model(x))  # ctx: per-step
            if score >= 5:  # (a value of the data, not a counter)
                break
""",
    "a retry loop runs its body once unless the attempt fails": """
import torch

def run(args, batch_size):
    while batch_size:
        try:
            torch.cuda.empty_cache()  # ctx: once
            results = validate(args, batch_size)
            return results
        except RuntimeError:
            batch_size //= 2
    for attempt in range(100):
        with lock:
            torch.cuda.empty_cache()  # ctx: once
            break
    for x in loader:
        try:
            torch.cuda.empty_cache()  # ctx: per-step
            step(x)
        except RuntimeError:
            continue

run(args, 64)
""",
    "a branch that logs the error, then raises or gives up the step, is cold": """
import math

def step(model, batch, raise_on_error):
    loss = model(batch)
    if not math.isfinite(loss.item()):
        message = f"Loss is {loss.item()}"  # ctx: called, cold
        if raise_on_error:
            raise FloatingPointError(message)
        else:
            return
    if loss.item() > 10:
        message = f"Loss is {loss.item()}"  # ctx: called
        if raise_on_error:
            print(message)
        else:
            return
    if loss.item() > 20:
        message = f"Loss is {loss.item()}"  # ctx: called
        if raise_on_error:
            return None
        else:
            return
    if loss.item() > 30:
        message = f"Loss is {loss.item()}"  # ctx: called
        if raise_on_error:
            return loss
        else:
            raise ValueError(message)
    if not math.isfinite(loss.item()):
        print(f"Loss is {loss}, stopping training!")  # ctx: called, cold
        sys.exit(-1)
    if loss.item() > 40:
        print(f"Loss is {loss}, stopping training!")  # ctx: called, cold
        exit(1)
    if loss.item() > 50:
        print(f"Loss is {loss}")  # ctx: called
        loss = loss.clamp(max=50)
        sys.stdout.flush()
    return loss
""",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_statements_run_where_the_markers_say(name):
    expected, found = placements(CASES[name])
    assert found == expected


TRAINING_MARK = re.compile(r"#\s*training-step:\s*(?P<answer>yes|no)")

TRAINING_STEPS = """
import torch
from ignite.engine import Events

def train(model, loader, opt):
    for x in loader:
        loss = model(x).sum()  # training-step: yes
        loss.backward()

def manual(self, loader):
    for x in loader:
        loss = self.model(x).sum()  # training-step: yes
        self.manual_backward(loss)

def zero_first(model, loader, opt):
    for x in loader:
        opt.zero_grad()
        out = model(x)  # training-step: yes

def rollout(policy, env, envs, obs, n):
    for _ in range(n):
        obs = env.step(policy(obs))  # training-step: yes
    for _ in range(n):
        obs = envs.step(policy(obs))  # training-step: yes

def schedule(trainer, scheduler, n):
    for _ in range(n):
        trainer.step()  # training-step: yes
    for _ in range(n):
        scheduler.step()  # training-step: no (an epoch loop steps a scheduler once per epoch)

def multitask(model, iters, loader_iters, train_iters, grid_iters, tasks):
    for task in tasks:
        x = next(iters)  # training-step: yes
    for task in tasks:
        x = next(loader_iters[task])  # training-step: yes
    for task in tasks:
        x = next(train_iters[task])  # training-step: yes
    for kind in tasks:
        grid = next(grid_iters[kind])  # training-step: no

def predict(model, loader):
    for x in loader:
        model(x)  # training-step: no
        evaluate_step(model, x)

@torch.no_grad()
def evaluate_step(model, x):
    return model(x)  # training-step: no

@trainer.on(Events.ITERATION_COMPLETED)
def log_loss(engine):
    print(engine.state.output)  # training-step: yes

def log_metrics(loss):
    return loss.item()  # training-step: yes

class Lit:
    def on_train_batch_end(self, outputs, batch, idx):
        log_metrics(outputs["loss"])  # training-step: yes

class Agent:
    def optimizer_backward(self, optimizer, objective):
        optimizer.zero_grad()
        objective.backward()
        optimizer.step()

    def update_net(self, buffer, n):
        for _ in range(n):
            critic, actor = self.update_objectives(buffer)

    def update_objectives(self, buffer):
        loss = self.cri(buffer.sample()).mean()
        self.optimizer_backward(self.cri_optimizer, loss)
        return loss.item()  # training-step: yes

    def evaluate(self, buffer, n):
        for _ in range(n):
            value = self.score(buffer)

    def score(self, buffer):
        return self.cri(buffer.sample()).mean().item()  # training-step: no
"""


def test_training_step_placements():
    tree = ast.parse(TRAINING_STEPS)
    model = ExecutionModel(FileContext(SourceFile("t.py", TRAINING_STEPS), tree))
    statements = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            statements.setdefault(node.lineno, node)
    expected, found = [], []
    for number, line in enumerate(TRAINING_STEPS.splitlines(), 1):
        match = TRAINING_MARK.search(line)
        if match:
            expected.append((number, match.group("answer") == "yes"))
            found.append((number, model.in_training_step(statements[number])))
    assert found == expected


def test_where_names_the_innermost_loop_and_function():
    source = """
def fit(model, loader, epochs):
    for epoch in range(epochs):
        for x in loader:
            model(x)
    return model
"""
    tree = ast.parse(source)
    model = ExecutionModel(FileContext(SourceFile("t.py", source), tree))
    function = tree.body[0]
    outer = function.body[0]
    inner = outer.body[0]
    step = inner.body[0]
    assert model.where(step) == Where(PER_STEP, False, inner, function, (Via("t.py", 4, "for x in loader"),))
    assert model.where(inner) == Where(PER_OUTER, False, outer, function,
                                       (Via("t.py", 3, "for epoch in range(epochs)"),))
    assert model.where(function.body[1]) == Where(CALLED, False, None, function, ())


@pytest.mark.parametrize("expression, value", [
    ('torch.__version__', "2.13.0+cu130"),
    ('version[0]', "2"),
    ('version[:3]', "2.1"),
    ('version[::2]', "21.+u3"),
    ('version[-1]', "0"),
    ('int(version.split(".")[1])', 13),
    ('version.split()', ["2.13.0+cu130"]),
    ('str(int(version[0]))', "2"),
    ('tuple(map(int, version.split("+")[0].split(".")))', (2, 13, 0)),
    ('pv.parse(version) >= pv.parse("2.4")', True),
    ('LooseVersion(torch.__version__) < LooseVersion("1.10")', False),
    ('not version < "1"', True),
    ('-int(version[0]) == -2 and version != "1.0"', True),
    ('(int(version[0]), 1) > (1, 9)', True),
])
def test_a_version_test_is_computed_as_python_would(expression, value):
    from ptlint.semantics.where import _version_value

    assert _version_value(ast.parse(expression, mode="eval").body, "2.13.0+cu130", None) == value


@pytest.mark.parametrize("expression", ["version.major", "len(version)", "version[0] + 1", "f(version)",
                                        "version.split('.', 1)", "int(version[2]) > int(version)"])
def test_a_version_test_made_of_anything_else_is_undecided(expression):
    from ptlint.semantics.where import _Undecided, _version_value

    with pytest.raises((_Undecided, TypeError, ValueError, AttributeError)):
        _version_value(ast.parse(expression, mode="eval").body, "2.13.0+cu130", None)
