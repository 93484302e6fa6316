"""PTL103 graph-kept-alive: a loss that was `.backward()`-ed kept across iterations."""

from __future__ import annotations

import ast

from ptlint.astutil import LOOP_NODES, SCOPE_NODES, body_nodes
from ptlint.rule import UNSAFE, Fix, FixExample, Rule
from ptlint.tensors import backward_name

DETACHING = {"item", "detach", "tolist", "cpu", "numpy"}


class GraphKeptAlive(Rule):
    code = "PTL103"
    name = "graph-kept-alive"
    message = "`{name}` was backpropagated and is kept across iterations: its autograd graph stays in memory"
    fixable = UNSAFE
    triggers = ("backward",)

    def visit_For(self, node: ast.AST) -> None:
        self._check_loop(node)

    visit_AsyncFor = visit_While = visit_For

    def _check_loop(self, loop: ast.AST) -> None:
        # nested loops are checked on their own visit
        nodes = body_nodes(loop.body, stop_at=SCOPE_NODES + LOOP_NODES)
        losses = {name for n in nodes if isinstance(n, ast.Call) and (name := backward_name(n))}
        if not losses:
            return
        assigned_in_loop: set[str] = set()
        for n in nodes:
            if isinstance(n, ast.Assign):
                for target in n.targets:
                    if isinstance(target, ast.Name):
                        assigned_in_loop.add(target.id)
                        # `loss = loss.item()` / `loss = loss.detach()` after backward: nothing kept
                        if target.id in losses and isinstance(n.value, ast.Call) and \
                                isinstance(n.value.func, ast.Attribute) and n.value.func.attr in DETACHING:
                            losses.discard(target.id)
        for n in nodes:
            kept = self._kept_value(n, losses, assigned_in_loop)
            if kept is not None:
                detach = self.ctx.edits.insert_at(self.ctx.edits.end(kept), ".detach()")
                self.report(kept, self.message.format(name=kept.id),
                            fix=Fix(UNSAFE, f"Keep `{kept.id}.detach()` instead", (detach,)))

    @staticmethod
    def _kept_value(node: ast.AST, losses: set[str], assigned_in_loop: set[str]) -> ast.Name | None:
        # losses.append(loss)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in losses:
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in assigned_in_loop:
                return None  # a list made fresh each iteration
            return node.args[0]
        # total += loss
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.value, ast.Name) \
                and node.value.id in losses:
            target = node.target
            if isinstance(target, ast.Name) and (target.id in losses or target.id in assigned_in_loop):
                return None
            return node.value
        # total = total + loss
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add):
            target = node.targets[0].id
            left, right = node.value.left, node.value.right
            if isinstance(left, ast.Name) and left.id == target and isinstance(right, ast.Name) \
                    and right.id in losses and target not in losses:
                return right
        return None

    docs = """
## What it does
Finds a loss that a loop backpropagates (`loss.backward()`, `scaler.scale(loss).backward()`,
`accelerator.backward(loss)`) and then keeps beyond the iteration: `losses.append(loss)`,
`total += loss`, `total = total + loss`.

## Why is this bad?
A tensor that requires grad holds on to the autograd graph that produced it, with every saved
activation. Keeping the loss keeps every iteration's graph alive: memory grows step after step
until the process runs out, and the accumulated sum builds an ever longer graph.

## Example
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss)
```

## Use instead
```python
losses = []
for x, y in loader:
    loss = criterion(model(x), y)
    loss.backward()
    losses.append(loss.detach())
```

## Fix safety
Unsafe: appends `.detach()`. Code that later differentiates through the kept values (rare)
would change behaviour.

## References
- https://pytorch.org/docs/stable/notes/faq.html#my-model-reports-cuda-runtime-error-2-out-of-memory
"""

    bad_examples = [
        """
def train(model, loader, opt, criterion):
    losses = []
    total = 0
    for x, y in loader:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)  # expect: PTL103
        total += loss  # expect: PTL103
    return losses, total
""",
        """
def train(loader, scaler, step):
    running = 0.0
    for batch in loader:
        loss = step(batch)
        scaler.scale(loss).backward()
        running = running + loss  # expect: PTL103
""",
        """
def train(accelerator, loader, model):
    history = []
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        history.append(loss)  # expect: PTL103
""",
    ]

    good_examples = [
        """
def train(model, loader, criterion):
    losses = []
    total = 0.0
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        losses.append(loss.detach())
        total += loss.item()
""",
        # no backward: evaluation code may keep outputs
        """
def evaluate(model, loader):
    outs = []
    for x in loader:
        outs.append(model(x))
""",
        # the loss is turned into a number before it is kept
        """
def train(model, loader):
    total = 0
    for x in loader:
        loss = model(x)
        loss.backward()
        loss = loss.item()
        total += loss
""",
        # the list lives one iteration only
        """
def train(model, loader):
    for x in loader:
        parts = []
        loss = model(x)
        loss.backward()
        parts.append(loss)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
for x in loader:
    loss = model(x)
    loss.backward()
    losses.append(loss)
""",
            after="""
for x in loader:
    loss = model(x)
    loss.backward()
    losses.append(loss.detach())
""",
            unsafe=True,
        ),
    ]
