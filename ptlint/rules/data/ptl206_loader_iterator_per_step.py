"""PTL206 loader-iterator-per-step: `next(iter(loader))` in a step, a new DataLoader iterator for one batch."""

from __future__ import annotations

import ast

from ptlint.engine.rule import PER_OUTER, PER_STEP, Rule

DATALOADERS = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
# Names that say they hold a DataLoader (`train_loader`, `testdataloader`, `self.val_loader`).
LOADER_WORD = "loader"


class LoaderIteratorPerStep(Rule):
    code = "PTL206"
    name = "loader-iterator-per-step"
    message = "`{call}` makes a new DataLoader iterator for one batch every step: it starts the loader's workers " \
              "again, prefetches batches it throws away, and reshuffles the whole dataset"
    help = ("Make the iterator once (`batches = iter(loader)`) and call `next(batches)` each step; make a new one "
            "only when it runs out (`except StopIteration: batches = iter(loader)`).")
    # per step, or every N steps of a step loop (`keep`): a batch taken once at set-up
    # (`next(iter(loader))` to see its shape) costs one start, one per epoch what the epoch costs anyway
    contexts = frozenset({PER_STEP, PER_OUTER})
    triggers = ("next",)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Name) and func.id == "next" and len(node.args) == 1 and not node.keywords):
            return
        made = node.args[0]
        if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id in ("iter", "enumerate")
                and made.args and not any(isinstance(a, ast.Starred) for a in made.args)):
            return
        names = self.ctx.names
        if names.is_local("next") or names.is_local(made.func.id):
            return  # a function of the user's own of that name
        if self._holds_a_loader(made.args[0]):
            self.report(node, self.message.format(call=ast.unparse(node)))

    def keep(self, node: ast.AST, where) -> bool:
        return where.context == PER_STEP or self.ctx.model.placement(node).gated

    def _holds_a_loader(self, value: ast.AST) -> bool:
        """`DataLoader(...)` itself, a name or attribute that says it holds a loader, or one the file
        assigns a `DataLoader(...)` anywhere (`valid_queue = torch.utils.data.DataLoader(...)` in
        `main`, passed on to the training function)."""
        if isinstance(value, ast.Call):
            return self.ctx.qualname(value.func) in DATALOADERS
        if not isinstance(value, (ast.Name, ast.Attribute)):
            return False
        name = value.id if isinstance(value, ast.Name) else value.attr
        return LOADER_WORD in name.lower() or name in self._loader_names()

    def _loader_names(self) -> set[str]:
        key = "ptl206-loader-names"
        found = self.ctx.memo.get(key)
        if found is None:
            found = set()
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                        and self.ctx.qualname(node.value.func) in DATALOADERS:
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            found.add(target.id)
                        elif isinstance(target, ast.Attribute):
                            found.add(target.attr)
            self.ctx.memo[key] = found
        return found

    docs = """
## What it does
Finds `next(iter(loader))` and `next(enumerate(loader))` on a `torch.utils.data.DataLoader` in
code that runs every step (or every few steps): each call makes a new iterator over the loader
to take one batch from it. The loader is one built with `DataLoader(...)` in the file (any import
spelling, also under another name it is passed on as), or a name or attribute that says it holds
one (`train_loader`, `testdataloader`, `self.val_loader`).

## Why is this bad?
A DataLoader's iterator is heavy to make: with `num_workers > 0` it starts that many worker
processes (or wakes persistent ones and resets them), and each of them prefetches
`prefetch_factor` batches, all but one of which are thrown away; with a shuffling sampler it draws
a permutation of the whole dataset. Made every step, this costs far more than the batch, and
the GPU waits for it. The sampler also starts over each time, so which batches a run sees is not
one pass over the data.

## Where it reports
- **Reports** in code that runs every step: a training or evaluation loop, a step function, or
  an every-N-steps branch inside the loop (an iterator and its workers made every ten steps
  still cost more than the ten steps' batches), also one that only logs, and an error path in the
  loop (`except StopIteration: batch = next(iter(loader))` makes one on every later step).
- **Silent** once per epoch (an iterator each epoch is what iterating the loader costs anyway), in
  once-code (a batch taken at set-up to see its shape, sample batches shown after training), in
  test code, in a function whose callers the file does not show (a library's `get_batch()`), and
  where the iterator is kept and only remade when it runs out (`batches = iter(loader)` in an
  `except StopIteration:`).

## Example
```python
import torch


def train(model, optimizer, train_loader, valid_loader, architect):
    for x, y in train_loader:
        x_val, y_val = next(iter(valid_loader))
        architect.step(x_val.cuda(), y_val.cuda())
        loss = model(x.cuda(), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
```

## Use instead
```python
import torch


def train(model, optimizer, train_loader, valid_loader, architect):
    valid_batches = iter(valid_loader)
    for x, y in train_loader:
        try:
            x_val, y_val = next(valid_batches)
        except StopIteration:
            valid_batches = iter(valid_loader)
            x_val, y_val = next(valid_batches)
        architect.step(x_val.cuda(), y_val.cuda())
        loss = model(x.cuda(), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
```

## Fix safety
No automatic fix: where to keep the iterator, and what to do when it runs out (start a new
epoch of the second loader, or stop), is the training loop's choice.

## References
- https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading
- https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader (`persistent_workers`, `prefetch_factor`)
"""

    bad_examples = [
        # a program that never leaves the CPU: the workers start again all the same
        """
from torch.utils.data import DataLoader


def fit(model, dataset, optimizer, steps):
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=4)
    for step in range(steps):
        x, y = next(iter(loader))  # expect: PTL206
        loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # a search step that takes one validation batch every training step; the loader is built in
        # `main` under another name spelling of DataLoader and handed to `train`
        """
import torch
import torch.utils.data as tud


def train(train_queue, valid_queue, model, architect, optimizer):
    for step, (x, y) in enumerate(train_queue):
        x_search, y_search = next(iter(valid_queue))  # expect: PTL206
        architect.step(x_search.cuda(), y_search.cuda())
        loss = model(x.cuda(), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main(train_data, model, architect, optimizer, epochs):
    train_queue = tud.DataLoader(train_data, batch_size=64, num_workers=2)
    valid_queue = tud.DataLoader(train_data, batch_size=64, num_workers=2)
    for epoch in range(epochs):
        train(train_queue, valid_queue, model, architect, optimizer)
""",
        # a test batch every ten steps of a training script, and a batch per step of a loop over
        # updates, with the loader imported by name
        """
import torch
from torch.utils.data import DataLoader as DL

dataloader = DL(train_set, batch_size=32, shuffle=True, num_workers=4)
testdataloader = DL(test_set, batch_size=32, shuffle=True, num_workers=4)
classifier = build().cuda()
for epoch in range(250):
    for i, (points, target) in enumerate(dataloader, 0):
        loss = classifier(points.cuda(), target.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % 10 == 0:
            j, (points, target) = next(enumerate(testdataloader, 0))  # expect: PTL206
            print(classifier(points.cuda()).shape)

for update in range(15000):
    data, _ = next(iter(training_loader))  # expect: PTL206
    loss = classifier(data.cuda()).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
""",
        # a step method that reads a batch from a loader kept on the object
        """
import torch


class Trainer:
    def step(self):
        images, labels = next(iter(self.val_loader))  # expect: PTL206
        loss = self.model(images.cuda(), labels.cuda())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()


def fit(model, optimizer, train_loader, steps):
    batches = iter(train_loader)
    for step in range(steps):
        try:
            x, y = next(batches)
        except StopIteration:
            x, y = next(iter(train_loader))  # expect: PTL206
        loss = model(x.cuda(), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ]

    good_examples = [
        # one batch at set-up, an iterator kept and remade when it runs out, a few batches after
        # training, and `next(iter(...))` of things that are not loaders
        """
import torch
from torch.utils.data import DataLoader

loader = DataLoader(dataset, batch_size=32, num_workers=4)
sample, _ = next(iter(loader))
model = build(sample.shape).cuda()
batches = iter(loader)
for step in range(10000):
    try:
        x, y = next(batches)
    except StopIteration:
        batches = iter(loader)
        x, y = next(batches)
    loss = model(x.cuda(), y.cuda())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    first_key = next(iter(stats))
    group = next(iter(optimizer.param_groups))


def show_samples(model, loader):
    images, _ = next(iter(loader))
    save_grid(model(images.cuda()))


show_samples(model, loader)

for epoch in range(10):
    probe, _ = next(iter(loader))
    for x, y in loader:
        loss = model(x.cuda(), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(model(probe.cuda()).mean().item())
""",
        # the user's own `iter` and `next`
        """
import torch


def next(batches):
    return batches.pop()


def train(model, optimizer, train_loader, batches):
    for x, y in train_loader:
        extra = next(iter(train_loader))
        loss = model(x.cuda(), y.cuda()) + model(*extra)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    ]
