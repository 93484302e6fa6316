"""PTL103 graph-kept-alive: a loss, or a differentiable expression of it, kept beyond its iteration."""

from __future__ import annotations

import ast
import re

from ptlint.engine.finding import UNSAFE, Fix
from ptlint.engine.rule import FixExample, FixInput, Rule
from ptlint.semantics.autograd import (
    GradRegions,
    graph_wanted,
    is_loss_call,
    is_model_call,
    statements_of,
)
from ptlint.semantics.nodes import (
    DEFINITIONS,
    SELF_NAMES,
    STATEMENT_LOOPS,
    body_nodes,
    dotted,
    name_words,
)
from ptlint.semantics.values import backward_name, is_torch_op
from ptlint.semantics.where import iterable_is_data

# Calls and attributes whose result holds no autograd graph.
DETACHING = {"item", "detach", "tolist", "cpu", "numpy"}
NOT_DIFFERENTIABLE = {"argmax", "argmin", "eq", "ne", "gt", "ge", "lt", "le", "isnan", "isinf", "isfinite",
                      "long", "int", "bool", "sign", "size", "dim", "numel", "nonzero", "any", "all", "equal",
                      "allclose", "data_ptr", "element_size", "__len__"}
DETACHED_ATTRIBUTES = {"data", "grad", "shape", "dtype", "device", "requires_grad", "is_cuda", "ndim"}
PLAIN_CONVERSIONS = {"float", "int", "bool", "str", "round", "repr", "len", "format"}
APPENDING = {"append", "add", "appendleft", "extend", "insert"}
# Functions that evaluate: their loops record a graph for nothing.
EVALUATING = re.compile(r"(^|_)(eval|evaluate|evaluation|val|valid|validate|validation|test|predict|prediction|"
                        r"inference|infer|score|scoring)(_|$)")
EVAL_DATA_WORDS = {"val", "valid", "validation", "eval", "test", "dev"}
STEP_HOOKS_KEEPING = {"training_step"}  # Lightning backpropagates what it returns

BACKWARD, EVALUATION, STEP = "backward", "evaluation", "step"


# A run of a training or evaluation function that keeps losses: its results, and for each tensor
# in them whether it still holds an autograd graph (`graphs`). The fix keeps the values and drops
# the graphs: DETACHED_ONLY says exactly that.
KEPT = """
model = torch.nn.Linear(4, 2).to(torch.{dtype})
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = [torch.randn(8, 4).to(torch.{dtype}) for _ in range({batches})]
returned = {call}
tensors = [t for part in returned for t in (part if isinstance(part, list) else [part]) if isinstance(t, torch.Tensor)]
result = (returned, model, [t.grad_fn is not None for t in tensors])
"""
EVALUATE = """
model = torch.nn.Linear(4, 2)
model.requires_grad_(not {frozen})
loader = [(torch.randn(5, 4), torch.randn(5, 2)) for _ in range(3)]
losses, total = evaluate(model, loader)
result = ((losses, total), [t.grad_fn is not None for t in [*losses, total]])
"""
DETACHED_ONLY = "same(before[:-1], after[:-1]) and all(before[-1]) and not any(after[-1])"

class GraphKeptAlive(Rule):
    code = "PTL103"
    name = "graph-kept-alive"
    message = "`{name}` was backpropagated and is kept across iterations: its autograd graph stays in memory"
    help = "Keep `loss.detach()` (or `loss.item()` where a Python number is needed) instead of the loss itself."
    fixable = UNSAFE
    triggers = ("backward", "loss", "criterion", "cross_entropy", "kl_div", "training_step")

    def visit_For(self, node: ast.AST) -> None:
        self._check_loop(node)

    visit_AsyncFor = visit_While = visit_For

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in STEP_HOOKS_KEEPING and self.ctx.classes:
            self._check_step_hook(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    # -- the two places a graph can outlive its step -------------------------------------------
    def _check_loop(self, loop: ast.AST) -> None:
        # nested loops are checked on their own visit
        nodes = body_nodes(loop.body, stop_at=DEFINITIONS + STATEMENT_LOOPS)
        backpropagated = {name for n in nodes if isinstance(n, ast.Call) for name in _backpropagated(n)}
        trains = bool(backpropagated) or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                             and n.func.attr in ("backward", "manual_backward") for n in nodes)
        evaluates = not trains and self._evaluation_loop(loop)
        if not trains and not evaluates:
            return
        # names the loop binds afresh (not `total = total + x`, which accumulates)
        fresh = {t.id for n in nodes if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
                 for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)
                 and not any(isinstance(r, ast.Name) and r.id == t.id for r in ast.walk(n.value))}
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            fresh |= {t.id for t in ast.walk(loop.target) if isinstance(t, ast.Name)}
        changing = fresh | {n.target.id for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
        _Scan(self, nodes, backpropagated, EVALUATION if evaluates else BACKWARD, changing).run(
            lambda owner: owner.split(".")[0] not in fresh)

    def _check_step_hook(self, function: ast.AST) -> None:
        """Lightning's `training_step` returns its loss; keeping it (or anything computed from
        it) in an attribute of `self` keeps every step's graph."""
        nodes = body_nodes(function.body)
        losses = {name for n in nodes if isinstance(n, ast.Call) for name in _backpropagated(n)}
        for n in nodes:
            if isinstance(n, ast.Return) and n.value is not None:
                value = n.value
                if isinstance(value, ast.Dict):
                    value = next((v for k, v in zip(value.keys, value.values)
                                  if isinstance(k, ast.Constant) and k.value == "loss"), None)
                elif isinstance(value, ast.Tuple) and value.elts:
                    value = value.elts[0]
                if isinstance(value, ast.Name):
                    losses.add(value.id)
        _Scan(self, nodes, losses, STEP, None).run(lambda owner: owner.split(".")[0] == "self")

    def _evaluation_loop(self, loop: ast.AST) -> bool:
        """A loop over data in evaluation code that records gradients for nothing: the function
        evaluates (its name, a `.eval()` call, a validation loader, or a file that never
        backpropagates anywhere), wants no graph after the loop, and no `no_grad` /
        `inference_mode` covers the loop."""
        if not iterable_is_data(loop):
            return False
        function = self.ctx.function
        source = loop.test if isinstance(loop, ast.While) else loop.iter
        words = name_words(source)
        # the cheap tests first: `graph_wanted` needs the file's execution model
        evaluating = (function is not None and EVALUATING.search(function.name.lower()) is not None) \
            or bool(words & EVAL_DATA_WORDS) or "backward" not in self.ctx.source.text \
            or any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "eval"
                   and not n.args for n in body_nodes(statements_of(function or self.ctx.tree)))
        if not evaluating or graph_wanted(loop, self.ctx):
            return False  # summed up for a backward after the loop, or a training loop of its own
        return not GradRegions.of(self.ctx).off(loop)

    # -- reporting -------------------------------------------------------------------------------
    def report_kept(self, node: ast.AST, origin: str, owner: str, direct: bool) -> None:
        edits = self.ctx.edits
        text = edits.text(node)
        if "\n" in text or len(text) > 40:
            text = text.split("\n")[0][:37] + "..."
        if origin == BACKWARD:
            message = self.message.format(name=text) if direct else \
                f"`{text}` is computed from a backpropagated loss and kept across iterations: " \
                "its autograd graph stays in memory"
        elif origin == EVALUATION:
            message = f"`{text}` is a loss computed while gradients are recorded (no `torch.no_grad()`) and kept " \
                      "across iterations: the autograd graph of every batch stays in memory"
        else:
            message = f"`{text}` holds the graph of the loss `training_step` returns, and `{owner}` keeps it " \
                      "across steps: every step's autograd graph stays in memory"
        fix = None
        if not edits.has_comment(node):
            if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
                edit = edits.insert_at(edits.end(node), ".detach()")
            else:
                edit = edits.replace(node, f"{edits.expression(node)}.detach()")
            fix = Fix(UNSAFE, f"Keep `{text}.detach()` instead" if isinstance(node, ast.Name)
                      else "Keep it `.detach()`ed", (edit,))
        self.report(node, message, fix=fix)

    docs = """
## What it does
Finds a loss, or a differentiable expression of it, kept beyond its iteration (`losses.append(loss)`,
`hist[i] = loss`, `total += loss * 2`), so that every step's autograd graph stays alive. Where:
- in a loop that backpropagates it (`loss.backward()`, `scaler.scale(loss).backward()`,
  `accelerator.backward(loss)`): `losses.append(loss)`, `hist[i] = loss`, `total += loss`,
  `total = total + loss`, also a differentiable expression of it (`losses.append(loss.mean())`,
  `total += loss * 2`), a value assigned from one, or the result of a loss function computed in
  that loop;
- in an evaluation loop that records gradients for nothing — a loop over data in a function
  that evaluates (named `evaluate`/`validate`/`test`..., calling `model.eval()`, looping over
  a validation loader, or in a file that never calls `.backward()`), that runs without
  `torch.no_grad()`, with no `.backward()` in it or after
  it in the function (a training loop before it, the other half of an epoch, does not count):
  the result of a loss function (`criterion(model(x), y)`, `F.cross_entropy(...)`,
  `outputs.loss`) kept the same ways;
- in Lightning's `training_step`: the loss it returns (or any expression of it) appended to, or
  accumulated in, an attribute of `self` (`self.outputs.append(loss)`).

## Why is this bad?
A tensor that requires grad holds on to the autograd graph that produced it, with every saved
activation. Keeping the loss keeps every iteration's graph alive: memory grows step after step
until the process runs out, and an accumulated sum builds an ever longer graph. An expression
of the loss (`loss.mean()`, `loss * 2`) points back to the same graph.

Not reported: `.detach()`, `.item()`, `.tolist()`, `.cpu()`, `float(loss)`, `loss.data`, and
what is computed from them; a value computed under `torch.no_grad()` / `inference_mode()`;
a container or accumulator that the loop itself creates afresh each iteration; accumulating
into the loss itself (`loss += aux_loss` before `loss.backward()`); a loss summed up over a loop
and backpropagated after it (the function calls `.backward()`: the graph is wanted); an
evaluation loop under `torch.no_grad()` (also through a decorator or every caller in the file).

## Where it reports
- **Reports** wherever such a loop runs: per step, in once-code (a loop in `main()` or at a
  script's top level), in a function whose callers the file does not show, and on error paths:
  memory grows with every iteration of the loop, wherever the loop is.
- **Silent** in test code.

## Example
```python
import torch


def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses
```

## Use instead
```python
import torch


def train(model, loader, optimizer, criterion):
    losses = []
    for x, y in loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses
```

## Fix safety
Unsafe: appends `.detach()` to the kept value (parenthesising an expression:
`(loss * 2).detach()`). The kept values are the same numbers, but code that later
differentiates through them (rare) would change behaviour.

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
        # by subscript, as an expression of the loss, through a name, in a tuple, a while loop
        """
import torch

def train(model, loader, opt, n):
    hist = torch.zeros(n)
    means = []
    log = {}
    i = 0
    while i < n:
        x = next(loader)
        loss = model(x).pow(2)
        loss.mean().backward()
        hist[i] = loss.mean()  # expect: PTL103
        means.append(loss.mean())  # expect: PTL103
        scaled = loss * 2
        means.append(scaled)  # expect: PTL103
        log[i] = (loss, i)  # expect: PTL103
        opt.step()
        i += 1
""",
        # an evaluation loop without no_grad keeps every batch's graph
        """
import torch
import torch.nn.functional as F

def evaluate(model, val_loader, criterion):
    model.eval()
    losses = []
    total = 0.0
    for x, y in val_loader:
        losses.append(criterion(model(x), y))  # expect: PTL103
        out = model(x)
        total += F.cross_entropy(out, y)  # expect: PTL103
        outputs = model(x, labels=y)
        losses.append(outputs.loss)  # expect: PTL103
    return losses, total
""",
        # a file that never backpropagates: its loops over data only evaluate
        """
def losses_per_batch(model, loader, loss_fn):
    out = []
    for batch in loader:
        out.append(loss_fn(model(batch["x"]), batch["y"]))  # expect: PTL103
    return out
""",
        # Lightning: the returned loss kept in an attribute of self
        """
import lightning as L

class Lit(L.LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss_fn(self(x), y)
        self.outputs.append(loss)  # expect: PTL103
        self.running += loss * 0.1  # expect: PTL103
        return loss

class Manual(L.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.model(batch).sum()
        self.manual_backward(loss)
        self.history.append({"loss": loss})  # expect: PTL103
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
        losses.append(loss.detach().mean())
        losses.append(float(loss) * 2)
        losses.append(loss.data)
        losses.append(loss.argmax())
""",
        # no backward, no evaluation: outputs kept on purpose
        """
def collect(model, loader):
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
        # the list lives one iteration only; accumulating into the loss itself
        """
def train(model, loader, aux):
    for x in loader:
        parts = []
        loss = model(x)
        loss += aux(x)
        loss.backward()
        parts.append(loss)
""",
        # evaluation under no_grad, by a with block, a decorator, or the caller
        """
import torch

def evaluate(model, val_loader, criterion):
    model.eval()
    losses = []
    with torch.no_grad():
        for x, y in val_loader:
            losses.append(criterion(model(x), y))
    return losses

@torch.inference_mode()
def validate(model, loader, criterion):
    return [criterion(model(x), y) for x, y in loader]

def test_loop(model, loader, criterion):
    total = 0
    for x, y in loader:
        total += criterion(model(x), y)
    return total

def run(model, loader, criterion):
    with torch.no_grad():
        return test_loop(model, loader, criterion)
""",
        # losses summed over micro-batches and backpropagated after the loop: the graph is wanted;
        # a helper in a training file whose caller may backpropagate what it returns
        """
def batch_losses(model, batches, criterion):
    return [criterion(model(x), y) for x, y in batches]

def collect(model, loader, criterion):
    out = []
    for x, y in loader:
        out.append(criterion(model(x), y))
    return out

def train_step(model, chunks, criterion, opt):
    total = 0
    for x, y in chunks:
        total += criterion(model(x), y)
    total.backward()
    opt.step()

def multi_task_loss(outputs, targets, criterion):
    total = 0
    for key in outputs:
        total += criterion(outputs[key], targets[key])
    return total
""",
        # the model's output computed under no_grad records nothing
        """
import torch

def evaluate(model, val_loader, criterion):
    model.eval()
    losses = []
    for x, y in val_loader:
        with torch.no_grad():
            out = model(x)
        losses.append(criterion(out, y))
    return losses
""",
        # kept under no_grad: a detached copy is made by the arithmetic; a local dict for logging
        """
import torch

def train(model, loader, history):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        with torch.no_grad():
            history.append(loss * 1.0)
        logs = {}
        logs["loss"] = loss
""",
        # Lightning: a detached or itemised copy; validation steps run under no_grad
        """
import lightning as L

class Lit(L.LightningModule):
    def training_step(self, batch, batch_idx):
        loss = self.model(batch).mean()
        self.outputs.append(loss.detach())
        self.total += loss.item()
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self.model(batch).mean()
        self.val_outputs.append(loss)
        return loss
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
        FixExample(
            before="""
def train(model, loader, hist, means):
    for i, x in enumerate(loader):
        loss = model(x)
        loss.backward()
        hist[i] = loss
        means.append(loss.mean())
        means.append(loss * 2)
""",
            after="""
def train(model, loader, hist, means):
    for i, x in enumerate(loader):
        loss = model(x)
        loss.backward()
        hist[i] = loss.detach()
        means.append(loss.mean().detach())
        means.append((loss * 2).detach())
""",
            unsafe=True,
        ),
        FixExample(
            before="""
def evaluate(model, val_loader, criterion):
    model.eval()
    losses = []
    for x, y in val_loader:
        losses.append(criterion(model(x), y))
    return losses
""",
            after="""
def evaluate(model, val_loader, criterion):
    model.eval()
    losses = []
    for x, y in val_loader:
        losses.append(criterion(model(x), y).detach())
    return losses
""",
            unsafe=True,
        ),
        FixExample(
            before="""
class Lit:
    def training_step(self, batch, batch_idx):
        loss = self.model(batch).mean()
        self.outputs.append(loss)
        return loss
""",
            after="""
class Lit:
    def training_step(self, batch, batch_idx):
        loss = self.model(batch).mean()
        self.outputs.append(loss.detach())
        return loss
""",
            unsafe=True,
        ),
        FixExample(  # a training loop keeps its losses: the same values, without their graphs
            before="""
def train(model, batches, optimizer):
    history = []
    total = 0.0
    for x in batches:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        history.append(loss)
        total += loss
    return history, total
""",
            after="""
def train(model, batches, optimizer):
    history = []
    total = 0.0
    for x in batches:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()
        history.append(loss.detach())
        total += loss.detach()
    return history, total
""",
            unsafe=True,
            inputs=(
                FixInput("three batches", KEPT.format(dtype="float32", batches=3, call="train(model, data, optimizer)"),
                         check=DETACHED_ONLY),
            ),
        ),
        FixExample(  # subscripts and expressions of the loss
            before="""
import torch

def train(model, batches, optimizer):
    hist = torch.zeros(len(batches))
    means, doubled = [], []
    for i, x in enumerate(batches):
        optimizer.zero_grad()
        loss = model(x).float().pow(2)
        loss.mean().backward()
        optimizer.step()
        hist[i] = loss.mean()
        means.append(loss.mean())
        doubled.append(loss * 2)
    return hist, means, doubled
""",
            after="""
import torch

def train(model, batches, optimizer):
    hist = torch.zeros(len(batches))
    means, doubled = [], []
    for i, x in enumerate(batches):
        optimizer.zero_grad()
        loss = model(x).float().pow(2)
        loss.mean().backward()
        optimizer.step()
        hist[i] = loss.mean().detach()
        means.append(loss.mean().detach())
        doubled.append((loss * 2).detach())
    return hist, means, doubled
""",
            unsafe=True,
            inputs=(
                FixInput("three batches, float32", KEPT.format(dtype="float32", batches=3, call="train(model, data, optimizer)"),
                         check=DETACHED_ONLY),
                FixInput("no batches, float32", KEPT.format(dtype="float32", batches=0, call="train(model, data, optimizer)"),
                         check="same(before[:-1], after[:-1]) and not any(after[-1])"),
                FixInput("three batches, float16", KEPT.format(dtype="float16", batches=3, call="train(model, data, optimizer)"),
                         check=DETACHED_ONLY),
                FixInput("no batches, float16", KEPT.format(dtype="float16", batches=0, call="train(model, data, optimizer)"),
                         check="same(before[:-1], after[:-1]) and not any(after[-1])"),
                FixInput("three batches, bfloat16", KEPT.format(dtype="bfloat16", batches=3, call="train(model, data, optimizer)"),
                         check=DETACHED_ONLY),
                FixInput("no batches, bfloat16", KEPT.format(dtype="bfloat16", batches=0, call="train(model, data, optimizer)"),
                         check="same(before[:-1], after[:-1]) and not any(after[-1])"),
            ),
        ),
        FixExample(  # an evaluation loop without no_grad
            before="""
import torch.nn.functional as F

def evaluate(model, val_loader):
    model.eval()
    losses = []
    total = 0.0
    for x, y in val_loader:
        out = model(x)
        losses.append(F.mse_loss(out, y))
        total += F.mse_loss(out, y, reduction="sum")
    return losses, total
""",
            after="""
import torch.nn.functional as F

def evaluate(model, val_loader):
    model.eval()
    losses = []
    total = 0.0
    for x, y in val_loader:
        out = model(x)
        losses.append(F.mse_loss(out, y).detach())
        total += F.mse_loss(out, y, reduction="sum").detach()
    return losses, total
""",
            unsafe=True,
            inputs=(
                FixInput("a trainable model", EVALUATE.format(frozen=False), check=DETACHED_ONLY),
                # a frozen model records nothing: the original keeps no graph either; .detach() is harmless
                FixInput("a frozen model", EVALUATE.format(frozen=True), check="same(before, after)"),
            ),
        ),
        FixExample(  # a Lightning-style step hook keeps its outputs; the returned loss stays differentiable
            before="""
class Lit:
    def __init__(self, model):
        self.model = model
        self.outputs = []

    def training_step(self, batch, batch_idx):
        loss = self.model(batch).float().pow(2).mean()
        self.outputs.append(loss)
        return loss
""",
            after="""
class Lit:
    def __init__(self, model):
        self.model = model
        self.outputs = []

    def training_step(self, batch, batch_idx):
        loss = self.model(batch).float().pow(2).mean()
        self.outputs.append(loss.detach())
        return loss
""",
            unsafe=True,
            inputs=(
                FixInput("three steps", """
module = Lit(torch.nn.Linear(4, 2))
returned = [module.training_step(torch.randn(6, 4), i) for i in range(3)]
assert all(r.grad_fn is not None for r in returned)
result = (module.outputs, [t.grad_fn is not None for t in module.outputs])
""", check=DETACHED_ONLY),
            ),
        ),
    ]


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


class _Scan:
    """One pass over a loop body (or a step hook) in source order: which names hold a graph,
    and which statements keep one beyond the iteration."""

    def __init__(self, rule: GraphKeptAlive, nodes: list[ast.AST], losses: set[str], origin: str,
                 changing: set[str] | None) -> None:
        self.rule = rule
        self.changing = changing  # names that change every iteration (None: every call is a new step)
        self.ctx = rule.ctx
        self.nodes = nodes
        self.origin = origin
        self.backpropagated = set(losses)
        self.graph: dict[str, str] = {name: BACKWARD if origin != STEP else STEP for name in losses}
        self.model_outputs: set[str] = set()
        self.regions = GradRegions.of(self.ctx)

    def run(self, persistent) -> None:
        """`persistent(owner)`: whether a container or accumulator named `owner` (a dotted name)
        outlives the iteration."""
        statements = sorted((n for n in self.nodes if isinstance(n, ast.stmt)), key=_position)
        for statement in statements:
            off = self.regions.off(statement)
            for kept, owner in self._kept(statement, off):
                if owner is not None and persistent(owner):
                    direct = isinstance(kept, ast.Name) and kept.id in self.backpropagated
                    self.rule.report_kept(kept, self._origin_of(kept), owner, direct)
            self._bind(statement, off)

    # -- which names hold a graph ----------------------------------------------------------------
    def _bind(self, statement: ast.stmt, off: bool) -> None:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            return
        names = [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]
        single = len(targets) == 1 and isinstance(targets[0], ast.Name)
        part = self.part(value, off) if single else None
        model_output = not off and is_model_call(_strip(value), self.ctx)  # under no_grad: no graph
        for name in names:
            if model_output:
                self.model_outputs.add(name)
            else:
                self.model_outputs.discard(name)
            if part is not None:
                origin = self.graph.get(part.id) if isinstance(part, ast.Name) else None
                self.graph[name] = origin or self._origin_of(part)
            elif name in self.backpropagated and not _detached(value):
                self.graph[name] = BACKWARD if self.origin != STEP else STEP
            else:
                self.graph.pop(name, None)

    def _origin_of(self, node: ast.AST) -> str:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and child.id in self.graph:
                return self.graph[child.id]
        return self.origin

    def part(self, node: ast.AST, off: bool) -> ast.AST | None:
        """The part of `node` that holds a graph (`node` itself, or an element of a display),
        or None. Under `no_grad` only an existing graph can be kept, by the name itself."""
        if isinstance(node, ast.Name):
            return node if node.id in self.graph else None
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return next((p for e in node.elts if (p := self.part(e, off)) is not None), None)
        if isinstance(node, ast.Dict):
            return next((p for v in node.values if (p := self.part(v, off)) is not None), None)
        if isinstance(node, ast.Starred):
            return self.part(node.value, off)
        if off:
            return None  # arithmetic under no_grad makes a tensor without a graph
        if isinstance(node, ast.Call):
            return node if self._differentiable_call(node) else None
        if isinstance(node, ast.BinOp):
            return node if self.part(node.left, off) or self.part(node.right, off) else None
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            return node if self.part(node.operand, off) else None
        if isinstance(node, ast.Subscript):
            if _is_loss_key(node.slice) and self._model_output(node.value) and self.origin == EVALUATION:
                return node
            return node if self.part(node.value, off) else None
        if isinstance(node, ast.Attribute):
            if node.attr in DETACHED_ATTRIBUTES:
                return None
            if node.attr == "loss" and self._model_output(node.value) and self.origin == EVALUATION:
                return node  # `outputs.loss` of a Hugging Face model
            return node if self.part(node.value, off) else None
        if isinstance(node, ast.IfExp):
            return node if self.part(node.body, off) or self.part(node.orelse, off) else None
        return None

    def _differentiable_call(self, call: ast.Call) -> bool:
        func = call.func
        if is_loss_call(call, self.ctx):
            return self._loss_recorded(call)
        if isinstance(func, ast.Attribute) and self.ctx.qualname(func) is None:
            if func.attr in DETACHING or func.attr in NOT_DIFFERENTIABLE:
                return False
            return self.part(func.value, False) is not None
        if is_torch_op(self.ctx.qualname(func)):
            return any(self.part(a, False) is not None for a in [*call.args, *(k.value for k in call.keywords)])
        return False

    def _loss_recorded(self, call: ast.Call) -> bool:
        """A loss function's result holds a graph: in a training loop unless its inputs are
        detached; in an evaluation loop when it is computed on a model's output."""
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if self.origin == EVALUATION:
            return any(self._model_output(a) for a in arguments)
        return any(not _detached(a) for a in arguments)

    def _model_output(self, node: ast.AST) -> bool:
        """A model's output, not detached: `model(x)`, `out`, `out[0]`, `out.logits`."""
        while isinstance(node, (ast.Subscript, ast.Attribute)) and not (
                isinstance(node, ast.Attribute) and node.attr in DETACHED_ATTRIBUTES):
            node = node.value
        if isinstance(node, ast.Name):
            return node.id in self.model_outputs
        return is_model_call(node, self.ctx)

    def _varying(self, key: ast.AST) -> bool:
        """A key that changes from one iteration to the next (`hist[i]`, `hist[step]`)."""
        if self.changing is None:
            return not isinstance(key, ast.Constant)
        return any(isinstance(n, ast.Name) and n.id in self.changing for n in ast.walk(key))

    # -- which statements keep a graph -----------------------------------------------------------
    def _kept(self, statement: ast.stmt, off: bool) -> list[tuple[ast.AST, str | None]]:
        """(the kept node, the dotted name of what keeps it) for `C.append(E)`, `C[k] = E`,
        `A += E`, `A = A + E`."""
        out = []
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            func = call.func
            if isinstance(func, ast.Attribute) and func.attr in APPENDING and call.args:
                part = self.part(call.args[-1], off)
                if part is not None:
                    out.append((part, _owner(func.value)))
        elif isinstance(statement, ast.Assign):
            value = statement.value
            for target in statement.targets:
                if isinstance(target, ast.Subscript):
                    if not self._varying(target.slice):
                        continue  # `log["loss"] = loss`: each step replaces the last one
                    part = self.part(value, off)
                    if part is not None:
                        out.append((part, _owner(target.value)))
                elif isinstance(target, (ast.Name, ast.Attribute)) and isinstance(value, ast.BinOp) \
                        and isinstance(value.op, (ast.Add, ast.Sub)):
                    owner = dotted(target)
                    if owner is None or (isinstance(target, ast.Name) and target.id in self.graph):
                        continue
                    for side, other in ((value.right, value.left), (value.left, value.right)):
                        if dotted(other) == owner:
                            part = self.part(side, off)
                            if part is not None:
                                out.append((part, owner))
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.op, (ast.Add, ast.Sub)):
            target = statement.target
            owner = _owner(target)
            if owner is not None and not (isinstance(target, ast.Name) and target.id in self.graph):
                part = self.part(statement.value, off)
                if part is not None:
                    out.append((part, owner))
        return out


def _backpropagated(call: ast.Call) -> set[str]:
    """Names whose graph a backward call walks: `loss.backward()`, `accelerator.backward(loss)`,
    `loss.mean().backward()`, `(loss_a + loss_b).backward()`."""
    name = backward_name(call)
    if name:
        return {name}
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "backward" and not call.args):
        return set()
    out: set[str] = set()
    pending = [func.value]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            if node.id not in SELF_NAMES:
                out.add(node.id)
        elif isinstance(node, ast.BinOp):
            pending += [node.left, node.right]
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            pending.append(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr != "scale":
            pending.append(node.func.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            pending.append(node.args[0])  # scaler.scale(loss)
    return out


def _owner(node: ast.AST) -> str | None:
    """The dotted name of the container that keeps a value: `history` of `history["train"]`,
    `self.outputs` of `self.outputs[k]`."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return dotted(node)


def _strip(node: ast.AST) -> ast.AST:
    """`model(x)[0]` / `model(x).logits` -> `model(x)`."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node


def _is_loss_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "loss"


def _detached(node: ast.AST) -> bool:
    """Visibly a plain number or a detached tensor: `x.detach()`, `x.item()`, `float(x)`,
    `x.data`, a literal."""
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(node, ast.Attribute) and node.attr in DETACHED_ATTRIBUTES:
        return True
    if isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr in DETACHING:
            return True
        if isinstance(node.func, ast.Name) and node.func.id in PLAIN_CONVERSIONS:
            return True
    return False
