"""PTL202 data-parallel: `torch.nn.DataParallel` in any import spelling."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ptlint.engine.rule import ONCE, Rule
from ptlint.semantics.autograd import NO_GRAD, SET_GRAD
from ptlint.semantics.nodes import dotted, name_words
from ptlint.semantics.options import holds_by_default
from ptlint.semantics.values import TRAINING_CALLS, asks_for_an_accelerator
from ptlint.semantics.where import OPTIMIZER_NAMES

# Words of a function, class or condition whose business is to offer data parallelism as an
# option (`_wrap_model`, `DataParallelStrategy`, `if self.data_parallel_backend:`): DataParallel
# there is the mode a user chose, not a mistake in the user's training code.
OPTION_WORDS = ("wrap", "parallel", "distributed", "strategy", "backend")

# Words of a called function that start or run training (`train_one_epoch(...)`, `trainer.fit()`,
# `model.train()`): a file that calls one trains the model it wraps.
TRAINING_WORDS = {"train", "fit", "finetune", "pretrain"}

DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}


def _holding(test: ast.AST, holds: bool) -> list[ast.AST]:
    """The parts of `test` that hold where it is `holds`: `c` for `c` true, both sides of `a and
    b` true; `c` for `not c` false, both sides of `not a or not b` false. Nothing of a negated
    part (`if not args.distributed:` holds where the option is off)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _holding(test.operand, not holds)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if holds else ast.Or):
        return [part for value in test.values for part in _holding(value, holds)]
    if not holds:
        return []  # `a and b` false, `c` false: nothing known to hold
    if isinstance(test, ast.Compare) and any(
            isinstance(op, (ast.Eq, ast.Is)) and isinstance(c, ast.Constant) and c.value in (False, None, 0)
            for op, c in zip(test.ops, test.comparators)):
        return []  # `args.distributed is False`, `== 0`: the option is off
    return [test]  # `c`, `a or b` (one of them holds), `strategy == "dp"`


# What a wrap used only to load or save a checkpoint is asked (each as a statement of its own)
WEIGHT_METHODS = {"load_state_dict", "state_dict", "cuda", "cpu", "to", "eval"}


def _starts_training(call: ast.Call, ctx) -> bool:
    """`loss.backward()`, `optimizer.step()`, `zero_grad()`, `model.train()`, `train_one_epoch(...)`,
    `trainer.fit()`, an optimizer built (`torch.optim.SGD(...)`)."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in TRAINING_CALLS or (name == "step" and isinstance(func, ast.Attribute)
                                  and name_words(func.value) & OPTIMIZER_NAMES):
        return True
    if set(name.lower().split("_")) & TRAINING_WORDS:
        return True
    return (ctx.qualname(func) or "").startswith("torch.optim.")


def _runs_inference(call: ast.Call, ctx) -> bool:
    """`model.eval()`, `torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`."""
    qual = ctx.qualname(call.func)
    if qual in NO_GRAD:
        return True
    if qual in SET_GRAD:  # only a literal False: `set_grad_enabled(is_train)` also trains
        return bool(call.args) and isinstance(call.args[0], ast.Constant) and call.args[0].value is False
    return isinstance(call.func, ast.Attribute) and call.func.attr == "eval" and not call.args


def _holds_model(expr: ast.AST, names: set[str]) -> bool:
    """`expr` is the model named by one of `names` (`model`, `model.cuda()`, `model.module`, a
    tuple holding it), not a result computed with it (`model(x)`, `[model(x) for x in xs]`)."""
    if isinstance(expr, (ast.Tuple, ast.List)):
        return any(_holds_model(element, names) for element in expr.elts)
    while isinstance(expr, (ast.Attribute, ast.Call)):
        if isinstance(expr, ast.Call):
            if not isinstance(expr.func, ast.Attribute):
                return False
            expr = expr.func
        expr = expr.value
    return isinstance(expr, ast.Name) and expr.id in names


class UsesDataParallel(Rule):
    code = "PTL202"
    name = "data-parallel"
    message = "`{name}` is torch.nn.DataParallel: use DistributedDataParallel (one process per GPU)"
    help = "Use `torch.nn.parallel.DistributedDataParallel`, one process per GPU (launched with `torchrun`)."
    triggers = ("DataParallel",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._inference: bool | None = None  # the file runs its model only for inference (_inference_only)
        # a wrap (its call's id) in a function that trains nothing itself and keeps the model:
        # (function, its calls, the wrapped names), asked after the traversal (`keep`)
        self._handed: dict[int, tuple] = {}

    def _is_data_parallel(self, node: ast.AST) -> bool:
        """DataParallel, or a subclass of it the file defines (`class DataParallelWithCallback(
        DataParallel)`, then `DataParallelWithCallback(model)`): where it is constructed."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        subclass = isinstance(node, ast.Name) and node.id in self._subclasses() and self.ctx.qualname(node) is None
        return (subclass or self.ctx.qualname(node) in DATA_PARALLEL) \
            and not self._offered_as_an_option() and not self._without_a_gpu() and not self._off_by_default()

    def _subclasses(self) -> set[str]:
        """The classes at the top of the module that subclass DataParallel."""
        if "ptl202-subclasses" not in self.ctx.memo:
            self.ctx.memo["ptl202-subclasses"] = {
                node.name for node in self.ctx.tree.body if isinstance(node, ast.ClassDef)
                and any(self.ctx.qualname(base) in DATA_PARALLEL for base in node.bases)}
        return self.ctx.memo["ptl202-subclasses"]

    def _without_a_gpu(self) -> bool:
        """In the branch taken when no GPU is there (`else:` of `if torch.cuda.is_available():`,
        of `if use_gpu:` / `if args.cuda:`, or under `if not ...`): DataParallel over no GPU
        calls the model, and costs nothing."""
        for branch, taken in self._branches():
            if not isinstance(branch, ast.If):
                continue
            test = branch.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                test, taken = test.operand, not taken
            if not taken and asks_for_an_accelerator(test, self.ctx):
                return True
        return False

    def _off_by_default(self) -> bool:
        """In the fallback of a distributed switch that is on by default: the other branch, the
        one the program takes while every command-line option keeps its default, builds
        DistributedDataParallel (`elif args.distributed:` where `--multiprocessing-distributed`
        defaults to true); DataParallel runs only where the user turns that off. An opt-in (`if
        args.multi_gpu:`, off by default, and nothing distributed beside it) is the program's
        multi-GPU path, and reported."""
        for branch, first in self._branches():
            if isinstance(branch, ast.If) and holds_by_default(branch.test, self.ctx) is (not first):
                default_path = branch.orelse if first else branch.body
                if any(isinstance(node, ast.Call) and (self.ctx.qualname(node.func) or "").endswith(
                        "DistributedDataParallel") for statement in default_path for node in ast.walk(statement)):
                    return True
        return False

    def _branches(self) -> Iterator[tuple[ast.If | ast.IfExp, bool]]:
        """Each `if` (or `x if c else y`) holding where the traversal is in one of its branches
        (not in its test), with whether that is its first branch."""
        stack = self.ctx.stack
        for index, ancestor in enumerate(stack[:-1]):
            if not isinstance(ancestor, (ast.If, ast.IfExp)):
                continue
            child = stack[index + 1]
            if isinstance(ancestor, ast.If):
                first = any(statement is child for statement in ancestor.body)
                other = any(statement is child for statement in ancestor.orelse)
            else:
                first, other = child is ancestor.body, child is ancestor.orelse
            if first or other:
                yield ancestor, first

    def _offered_as_an_option(self) -> bool:
        """In a class (or a method) that implements a parallelism option, or in the branch taken
        when a condition naming one holds: a library offering DataParallel as a mode, not a
        training script."""
        classes = self.ctx.classes
        methods = [f for f in self.ctx.functions if classes and f.lineno > classes[0].lineno]
        names = [getattr(scope, "name", "") for scope in (*methods, *classes)]
        words = " ".join(names + self._chosen_options()).lower()
        return any(word in words for word in OPTION_WORDS) or "dp" in words.replace(".", " ").replace("_", " ").split()

    def _chosen_options(self) -> list[str]:
        """The conditions that hold where the traversal is: the test of each `if` (or `x if c else
        y`) whose first branch holds it, and `c` of `if not c:` whose `else` does. The `else` of
        `if args.distributed:` (or an `elif torch.cuda.device_count() > 1:` there) is the path
        taken when the option is off: a training script's own choice of DataParallel."""
        return [ast.unparse(part) for branch, first in self._branches() for part in _holding(branch.test, first)]

    def keep(self, node: ast.AST, where) -> bool:
        """Not in a program that trains nothing: DataParallel's cost is paid per training step.
        With the project model, a file every program of which is seen and trains nothing (an
        evaluation, export or demo program, and the modules only they import). Without it, once-code
        of a file that runs its model for evaluation (`model.eval()`, `torch.no_grad()`) and trains
        nothing — an evaluation, demo or feature extraction script wrapping the model to run it,
        or to load a checkpoint saved with `module.` names; code other files call is kept there
        (the caller may train)."""
        project = self.ctx.project
        if project is not None and project.inference_only:
            return False
        handed = self._handed.get(id(node))
        if handed is not None and not self._trains_after(handed[0]) and self._handed_to_evaluation(*handed):
            return False
        return where.context != ONCE or not self._inference_only()

    def _inference_only(self) -> bool:
        known = self._inference
        if known is None:
            project = self.ctx.project
            calls = self.ctx.calls()
            trains = bool(project is not None and (project.step_loops or project.outer_loops or project.training)) \
                or any(_starts_training(call, self.ctx) for call in calls)
            known = self._inference = not trains and any(_runs_inference(call, self.ctx) for call in calls)
        return known

    def _wrapped_for_inference(self, call: ast.Call) -> bool:
        """The function that wraps the model (`model = nn.DataParallel(model)`, the call being
        visited) trains nothing, keeps the wrapped model to itself (no `return model`, no
        `self.model = model`), and puts it in eval mode, runs under `no_grad`, or hands it only to
        defs of this file that train nothing: a sampling or evaluation method of a class that
        also trains, a test command, whose wrap pays for no gradient reduction."""
        function, stack = self.ctx.function, self.ctx.stack
        if function is None:
            return False
        index = len(stack)  # the stack holds the call's ancestors
        while index > 0 and isinstance(stack[index - 1], (ast.Attribute, ast.Call)):
            index -= 1  # `nn.DataParallel(model).cuda()`
        assign = stack[index - 1] if index > 0 else None
        if not isinstance(assign, ast.Assign):
            return False
        names = {t.id for t in assign.targets if isinstance(t, ast.Name)}
        if not names:
            return False
        nodes = list(ast.walk(function))
        after = self._from(assign, function, nodes)
        calls = [n for n in after if isinstance(n, ast.Call)]
        if self._starts_training_itself(after):
            return False
        for n in nodes:
            leaves = (isinstance(n, (ast.Return, ast.Yield)) and n.value is not None and n.value) or \
                (isinstance(n, ast.Assign) and any(not isinstance(t, ast.Name) for t in n.targets) and n.value)
            if leaves and _holds_model(leaves, names):
                return False
        return any(self.ctx.qualname(d.func if isinstance(d, ast.Call) else d) in NO_GRAD
                   for d in function.decorator_list) or \
            any(_runs_inference(call, self.ctx) and (self.ctx.qualname(call.func) in NO_GRAD or any(
                isinstance(m, ast.Name) and m.id in names for m in ast.walk(call.func))) for call in calls) \
            or self._hand_over_later(call, function, calls, names)

    def _from(self, assign: ast.stmt, function: ast.AST, nodes: list[ast.AST]) -> list[ast.AST]:
        """The nodes of `function` that run after the wrap: those from its line on, and the whole
        of each loop around it (an iteration after the wrap runs the body again). A wrap after
        the training (`model.load_state_dict(best)`, `model = nn.DataParallel(model)`, then one
        final `test(model)`) hands the training no wrapped model."""
        loops = [n for n in self.ctx.stack if isinstance(n, (ast.For, ast.AsyncFor, ast.While))
                 and any(n is m for m in nodes)]
        around = {id(m) for loop in loops for m in ast.walk(loop)}
        return [n for n in nodes if id(n) in around or getattr(n, "lineno", 0) >= assign.lineno]

    def _hand_over_later(self, call: ast.Call, function: ast.AST, calls: list[ast.Call], names: set[str]) -> bool:
        """Keep the wrap for `keep`, where the defs of this file its calls run are known (only
        after the traversal): the wrap is still reported for now."""
        self._handed[id(call)] = ([c for c in calls if c is not call], names)  # (not the wrap itself)
        return False

    def _trains_after(self, calls: list[ast.Call]) -> bool:  # (asked in `keep`)
        """A call that runs after the wrap runs a def of this file that trains."""
        return any(self._trains_in(callee, 1) for call in calls for callee in self.ctx.model.calls.callees(call))

    def _starts_training_itself(self, nodes: list[ast.AST]) -> bool:
        """The nodes of a function start training (`loss.backward()`, an optimizer built) or hold a
        loop that runs another file's training step (the project's `step_loops`/`outer_loops`)."""
        project = self.ctx.project
        loops = project.step_loops | project.outer_loops if project is not None else frozenset()
        return any(isinstance(n, ast.Call) and _starts_training(n, self.ctx) for n in nodes) or any(
            isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and n.lineno in loops for n in nodes)

    def _trains_in(self, function: ast.AST, depth: int = 0) -> bool:  # (asked in `keep`)
        """`function` trains: it starts training itself, holds a loop that runs another file's
        training step, or calls a def of this file that trains (a few calls deep; deeper is taken
        as training)."""
        if depth > 4:
            return True
        nodes = list(ast.walk(function))
        if self._starts_training_itself(nodes):
            return True
        return any(callee is not function and self._trains_in(callee, depth + 1)
                   for n in nodes if isinstance(n, ast.Call) for callee in self.ctx.model.calls.callees(n))

    def _handed_to_evaluation(self, calls: list[ast.Call], names: set[str]) -> bool:
        """Each call the wrapped model is handed to runs defs of this file (`validate(args,
        val_loader, model, criterion)` in a test command, the wrap there to load a `module.`
        checkpoint; whether they train, `_trains_in` asks of the wrapping function); a call of
        anything else may train it, and a model handed to nothing runs for an unknown use."""
        handed = [call for call in calls if any(
            isinstance(a, ast.Name) and a.id in names for a in (*call.args, *(k.value for k in call.keywords)))]
        return bool(handed) and all(self.ctx.model.calls.callees(call) for call in handed)

    def _wrapped_for_weights(self) -> bool:
        """`pmodel = nn.DataParallel(model)`, then only `pmodel.load_state_dict(state)` (or
        `.state_dict()`, `.cuda()`, `.eval()`) in the same function, never called, handed on,
        returned or stored: a wrap to load or save a checkpoint with `module.` names, and nothing
        runs through it."""
        function, stack = self.ctx.function, self.ctx.stack
        assign = next((n for n in reversed(stack) if isinstance(n, ast.stmt)), None)
        if function is None or not isinstance(assign, ast.Assign) or len(assign.targets) != 1 \
                or not isinstance(assign.targets[0], ast.Name):
            return False
        name = assign.targets[0].id
        uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name and n is not assign.targets[0]]
        for use in uses:
            parent = self.ctx.parent(use)
            call = self.ctx.parent(parent) if isinstance(parent, ast.Attribute) else None
            if not (isinstance(call, ast.Call) and call.func is parent and parent.attr in WEIGHT_METHODS
                    and isinstance(self.ctx.parent(call), ast.Expr)):
                return False
        return True  # (a wrap nothing uses runs nothing either)

    def _unwrapped_again(self) -> bool:
        """`decoder = nn.DataParallel(decoder)`, `decoder.load_state_dict(state)`, then `decoder =
        decoder.module.cuda()` in the same function: a wrap only to load a checkpoint saved with
        `module.` names, taken off before the model runs."""
        function, stack = self.ctx.function or self.ctx.tree, self.ctx.stack
        assign = next((n for n in reversed(stack) if isinstance(n, ast.stmt)), None)
        if not isinstance(assign, ast.Assign) or len(assign.targets) != 1:
            return False
        wrapped = dotted(assign.targets[0])
        for node in ast.walk(function):
            if wrapped is not None and isinstance(node, ast.Assign) and node.lineno > assign.lineno \
                    and len(node.targets) == 1 and dotted(node.targets[0]) == wrapped:
                value = node.value
                while isinstance(value, (ast.Call, ast.Attribute)) and not (
                        isinstance(value, ast.Attribute) and value.attr == "module"):
                    value = value.func if isinstance(value, ast.Call) else value.value
                return isinstance(value, ast.Attribute) and dotted(value.value) == wrapped
        return False

    def visit_Call(self, node: ast.Call) -> None:
        if self._is_data_parallel(node.func) and not self._wrapped_for_inference(node) and not self._unwrapped_again() \
                and not self._wrapped_for_weights():
            self.report(node, self.message.format(name=ast.unparse(node.func)), end_node=node.func)

    def visit_Assign(self, node: ast.Assign) -> None:
        # `wrap = nn.DataParallel if multi_gpu else nn.Identity`: the class is chosen here and
        # called later under a local name we cannot follow. A tuple of classes (for isinstance)
        # is not reported.
        for value in (node.value.body, node.value.orelse) if isinstance(node.value, ast.IfExp) else (node.value,):
            if self._is_data_parallel(value):
                self.report(value, self.message.format(name=ast.unparse(value)))

    docs = """
## What it does
Finds `torch.nn.DataParallel` — however it is imported (`nn.DataParallel`,
`from torch.nn.parallel import DataParallel as DP`) — being constructed, chosen as the wrapper
class, or a subclass of it the file defines being constructed.

## Why is this bad?
`DataParallel` runs one Python process that drives every GPU from threads: each step it
scatters the batch from GPU 0, copies the whole model to every GPU, gathers the outputs back
to GPU 0 and reduces gradients there. The GIL, the per-step replication and the load on GPU 0
make it slower than `DistributedDataParallel` even on a single machine; PyTorch's
documentation recommends DDP instead.

Not reported: a subclass's definition (`class DataParallelWithCallback(DataParallel):` in a
vendored synchronized-BatchNorm package): a definition runs nothing, and such packages ship
classes their project never constructs; the subclass is reported where the file that defines
it constructs it. A project's own class that happens to be called `DataParallel` (defined in the
file or imported from a non-torch module), `isinstance(m, nn.DataParallel)` checks used to
unwrap a model, and a library offering DataParallel as a mode the user chooses —
inside a class or method whose name says it wraps or parallelises (`Trainer._wrap_model`,
`DataParallelStrategy`, `Brain._wrap_distributed`) or under a condition naming such an option
(`if self.data_parallel_backend:`, `if strategy == "dp":`), in the branch where it holds. In
those places DataParallel is the user's explicit choice. The other branch of such a condition is
reported: DataParallel in the `else:` of `if args.distributed:` (or of `if
args.multiprocessing_distributed:`, or an `elif torch.cuda.device_count() > 1:` there, or under
`if not args.distributed:`) is the training script's own multi-GPU path whenever the option is
off, which is how it usually runs, unless the file's own argparse options say the switch is on
by default: then the branch the default run takes builds DistributedDataParallel, and
DataParallel is a fallback only a user who turns the option off reaches (`else:` of `elif
args.distributed:` where `args.distributed = args.world_size > 1 or
args.multiprocessing_distributed` and `--multiprocessing-distributed` defaults to true): not
reported. An opt-in off by default (`if args.mGPUs:` with `action="store_true"`) is the
program's multi-GPU path and is reported. Where the options are defined in another file or
their defaults are computed, nothing is known and the fallback is reported. Nor the branch taken without a GPU (`else:` of `if
torch.cuda.is_available():`, of `if use_gpu:` or `if args.cuda:`, or under `if not ...`), where
DataParallel over no device only calls the model. Nor a wrap taken off again in the same
function (`decoder = nn.DataParallel(decoder)`, `decoder.load_state_dict(...)`, `decoder =
decoder.module.cuda()`): it only matches a checkpoint's `module.` names.

## Where it reports
- **Reports** wherever DataParallel is used: in once-code (the usual place: the model is wrapped
  once, at set-up), per step, in a function whose callers the file does not show, and on error
  paths. The cost is paid on every step that follows, wherever the wrapping happens.
- **Silent** in test code, and in the once-code of an inference program: a file that runs its
  model for evaluation (`model.eval()`, `torch.no_grad()`, `torch.inference_mode()`) and trains
  nothing (no `.backward()`, optimizer, `model.train()`, `train_one_epoch(...)`, `trainer.fit()`,
  no loop that runs another file's training step). An evaluation, demo or feature-extraction
  script often wraps the model to load a checkpoint saved with `module.` names; with no training
  step there is no gradient reduction to pay for, and DDP would not be the remedy. A function
  other files call is reported all the same (its callers may train), unless the project model
  sees every program that holds the file (each script, a `__main__` block or a top-level loop,
  with what it imports) and none of
  them trains: then the file is silent wherever the wrap runs. Also silent: a function that wraps
  the model, puts it in eval mode (`model.eval()`) or runs under `no_grad`, trains nothing and
  keeps the wrapped model to itself (no `return`, no `self.model = model`): the sampling or
  evaluation method of a class whose other methods train.

## Example
```python
import torch


def build(model):
    return torch.nn.DataParallel(model).cuda()
```

## Use instead
```python
# launched with `torchrun --nproc-per-node=N train.py`
import os

import torch


def build(model):
    torch.distributed.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    return torch.nn.parallel.DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])
```

## Fix safety
No automatic fix: DDP needs a launcher, a process group and a distributed sampler.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#use-nn-parallel-distributeddataparallel-instead-of-multiprocessing-or-nn-dataparallel
- https://pytorch.org/docs/stable/generated/torch.nn.DataParallel.html
"""

    bad_examples = [
        # wrapped before the training, and in a loop whose next iteration trains the wrap
        """
import torch
from torch import nn


def train(model, loader, optimizer):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test(model, loader):
    model.eval()
    with torch.no_grad():
        return [model(x.cuda()) for x, _ in loader]


def main(args, model, train_loader, test_loader):
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)  # expect: PTL202
    for epoch in range(args.epochs):
        train(model, train_loader, optimizer)
    test(model, test_loader)


def stages(args, model, loaders, test_loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for loader in loaders:
        train(model, loader, optimizer)
        model = nn.DataParallel(model)  # expect: PTL202
        test(model, test_loader)
""",
        # the same wrap, then run, or kept
        """
import torch
from torch import nn

class Segmenter(nn.Module):
    def __init__(self, backbone, state=None):
        super().__init__()
        wrapped = nn.DataParallel(backbone)  # expect: PTL202
        wrapped.load_state_dict(state)
        self.base = wrapped

def features(backbone, state, x):
    wrapped = nn.DataParallel(backbone)  # expect: PTL202
    wrapped.load_state_dict(state)
    return wrapped(x)
""",
        # the same wrap handed to this file's `train`, or to a function of another module
        """
import torch
from engine import run_epoch

def train(loader, model, criterion, optimizer):
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

def step(model, x, y):
    loss = model(x.cuda(), y.cuda())
    loss.backward()

def epoch(loader, model):
    for x, y in loader:
        step(model, x, y)

def fit(args, optimizer):
    model = torch.nn.DataParallel(build(args.arch)).cuda()  # expect: PTL202
    train(make_loader(args), model, torch.nn.CrossEntropyLoss(), optimizer)

def fit_through_a_helper(args):
    model = torch.nn.DataParallel(build(args.arch)).cuda()  # expect: PTL202
    epoch(make_loader(args), model)

def fit_elsewhere(args):
    model = torch.nn.DataParallel(build(args.arch)).cuda()  # expect: PTL202
    run_epoch(make_loader(args), model)

if __name__ == "__main__":
    fit(parse(), optimizer)
    fit_through_a_helper(parse())
    fit_elsewhere(parse())
""",
        # the wrapped model trains; its `.module` is only read to save it, and the name is given
        # another model's `.module` after training
        """
import torch

def train(model, ema, loader, opt):
    model = torch.nn.DataParallel(model).cuda()  # expect: PTL202
    for x in loader:
        model(x.cuda()).mean().backward()
        opt.step()
    inner = model.module
    torch.save(inner.state_dict(), "model.pt")
    model = ema.module
    return model
""",
        # the branch taken with a GPU
        """
import torch

def build(model, use_gpu):
    if torch.cuda.is_available():
        model = torch.nn.DataParallel(model).cuda()  # expect: PTL202
    if use_gpu:
        model = torch.nn.DataParallel(model)  # expect: PTL202
    return model
""",
        """
import torch

model = torch.nn.DataParallel(model)  # expect: PTL202
""",
        """
import torch.nn as nn
from torch.nn.parallel import DataParallel as DP

def wrap(model, ids):
    if len(ids) > 1:
        return DP(model, device_ids=ids)  # expect: PTL202
    return nn.DataParallel(model)  # expect: PTL202
""",
        """
import torch
from torch import nn

wrapper = nn.DataParallel if torch.cuda.device_count() > 1 else nn.Identity  # expect: PTL202

class Parallel(nn.DataParallel):
    pass

def wrap(model):
    return Parallel(model)  # expect: PTL202
""",
        # the default path when the distributed option is off by default (or not known here),
        # and a multi-GPU opt-in off by default with nothing distributed beside it
        """
import argparse
import torch

def main_worker(args, opt):
    model = build()
    if args.mGPUs:
        model = torch.nn.DataParallel(model)  # expect: PTL202
    else:
        model = model.cuda()
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model)
    else:
        model = torch.nn.DataParallel(model)  # expect: PTL202
    if opt.distributed:
        return model
    if args.dist_url == "env://":
        model = torch.nn.DataParallel(model)  # expect: PTL202
    else:
        model = torch.nn.parallel.DistributedDataParallel(model)
    return model

class Trainer:
    def build_model(self, model):
        if self.sharded:  # an object's attribute, not the option of that name
            model = torch.nn.parallel.DistributedDataParallel(model)
        else:
            model = torch.nn.DataParallel(model)  # expect: PTL202
        return model

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", default=1, type=int)
    parser.add_argument("--dist-url", default=default_url(), type=str)
    parser.add_argument("--multiprocessing-distributed", action="store_true")
    parser.add_argument("--sharded", default=True)
    parser.add_argument("--mGPUs", action="store_true")
    args = parser.parse_args()
    args.distributed = args.world_size > 1 or args.multiprocessing_distributed
    main_worker(args, args)
""",
        # the path a training script takes when the distributed option is off
        """
import torch

def main_worker(gpu, ngpus_per_node, args):
    model = build()
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    else:
        model = torch.nn.DataParallel(model).cuda()  # expect: PTL202
    return model
""",
        """
import torch
import torch.nn as nn
from torch.nn.parallel import DataParallel

def main(args, distributed):
    model = build()
    if args.multiprocessing_distributed:
        model = nn.parallel.DistributedDataParallel(model)
    elif torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)  # expect: PTL202
    if not distributed and torch.cuda.device_count() > 1:
        model = DataParallel(model)  # expect: PTL202
    wrapped = nn.parallel.DistributedDataParallel(model) if distributed else nn.DataParallel(model)  # expect: PTL202
    return wrapped
""",
        """
from torch import nn

distributed = False
model = nn.Linear(2, 2)
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
else:
    model = nn.DataParallel(model)  # expect: PTL202
""",
        # a file that evaluates and trains: the wrapped model is trained
        """
import torch
from torch import nn

def main(args):
    model = nn.DataParallel(build()).cuda()  # expect: PTL202
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_one_epoch(model, optimizer)
        model.eval()
        with torch.no_grad():
            validate(model)

if __name__ == "__main__":
    main(parse())
""",
        # a wrap in a method that also trains, and one that hands the wrapped model on
        """
import torch

class Runner:
    def train(self):
        model = torch.nn.DataParallel(build()).cuda()  # expect: PTL202
        opt = torch.optim.Adam(model.parameters())
        model.eval()
        for x in self.loader:
            model(x).mean().backward()
            opt.step()

    def build(self):
        model = torch.nn.DataParallel(build())  # expect: PTL202
        model.eval()
        self.model = model

    def loaded(self):
        model = torch.nn.DataParallel(build())  # expect: PTL202
        model.eval()
        return model
""",
        # an inference helper nothing in the file calls: its callers may train
        """
import torch
from torch import nn

def evaluator(path):
    model = nn.DataParallel(build())  # expect: PTL202
    model.load_state_dict(torch.load(path))
    return model.eval()
""",
    ]

    good_examples = [
        # wrapped after the training, for the one final test
        """
import torch
from torch import nn


def train(model, loader, optimizer):
    model.train()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def test(model, loader):
    model.eval()
    with torch.no_grad():
        return sum((model(x.cuda()).argmax(1) == y.cuda()).sum().item() for x, y in loader)


def main(args, model, train_loader, test_loader):
    model = model.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train(model, train_loader, optimizer)
    model.load_state_dict(torch.load("best.pt"))
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    print(test(model, test_loader))
""",
        # a wrap only to load weights saved with `module.` names into the unwrapped model
        """
import torch
from torch import nn

class Segmenter(nn.Module):
    def __init__(self, backbone, state=None):
        super().__init__()
        wrapped = nn.DataParallel(backbone)
        if state is not None:
            wrapped.load_state_dict(state)
        self.base = nn.Sequential(*list(backbone.children())[:-2])
""",
        # a test command: the wrap loads a checkpoint saved with `module.` names, and the model
        # goes only to this file's `validate`, which trains nothing
        """
import torch

def validate(loader, model, criterion):
    model.eval()
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
    return loss

def train(loader, model, criterion, optimizer):
    for x, y in loader:
        loss = criterion(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

def test_model(args):
    model = build(args.arch)
    model = torch.nn.DataParallel(model).cuda()
    model.load_state_dict(torch.load(args.resume)["state_dict"])
    validate(make_loader(args), model, torch.nn.CrossEntropyLoss())

def main(args):
    if args.cmd == "train":
        train_model(args)
    else:
        test_model(args)
""",
        # a fallback the user must ask for: the distributed option is on by default (directly, or
        # through an option derived from it), or a multi-GPU option is off by default
        """
import argparse
import torch

def main_worker(gpu, ngpus_per_node, args):
    model = build()
    if not torch.cuda.is_available():
        raise Exception("only GPU training is supported")
    elif args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    elif args.gpu is not None:
        model = model.cuda(args.gpu)
    else:
        model = torch.nn.DataParallel(model).cuda()
    return model

def wrap(model, args):
    if args.ddp:  # (`--single-process` stores false into `ddp`)
        model = torch.nn.parallel.DistributedDataParallel(model)
    else:
        model = torch.nn.DataParallel(model)
    return model

def wrap_devices(model, args):
    if args.devices is None:  # no devices named: all of them, through DDP
        return torch.nn.parallel.DistributedDataParallel(model)
    else:
        return torch.nn.DataParallel(model, device_ids=args.devices)

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--world-size", default=1, type=int)
    parser.add_argument("--gpu", default=None, type=int)
    parser.add_argument("--multiprocessing-distributed", type=str2bool, default=True)
    parser.add_argument("--single-process", dest="ddp", action="store_false")
    parser.add_argument("--devices", nargs="+", type=int)
    args = parser.parse_args()
    args.distributed = args.world_size > 1 or args.multiprocessing_distributed
    main_worker(args.gpu, 1, args)
""",
        # a vendored subclass the file defines and never constructs
        """
from torch.nn.parallel.data_parallel import DataParallel

class DataParallelWithCallback(DataParallel):
    def replicate(self, module, device_ids):
        modules = super().replicate(module, device_ids)
        return modules
""",
        # a wrap only to load a checkpoint saved with `module.` names, taken off at once
        """
import torch

def load_decoder(arch, path):
    decoder = torch.nn.DataParallel(arch.Decoder())
    decoder.load_state_dict(torch.load(path)["model_state_dict"])
    decoder = decoder.module.cuda()
    return decoder

if __name__ == "__main__":
    net = torch.nn.DataParallel(torch.nn.Linear(4, 4))
    net.load_state_dict(torch.load("net.pt"))
    net = net.module
""",
        # the branch taken without a GPU: DataParallel over no device calls the model
        """
import torch

def build(model, args):
    if torch.cuda.is_available():
        model = model.cuda()
    else:
        model = torch.nn.DataParallel(model)
    if not args.cuda:
        model = torch.nn.DataParallel(model)
    return model
""",
        # a sampling method of a runner that also trains: wrapped, put in eval mode, kept local
        """
import torch

class Runner:
    def train(self):
        opt = torch.optim.Adam(self.model.parameters())
        for x in self.loader:
            self.model(x).mean().backward()
            opt.step()

    def sample(self):
        model = build().to(self.device)
        model = torch.nn.DataParallel(model)
        model.load_state_dict(torch.load(self.ckpt)[0], strict=True)
        model.eval()
        if self.args.fid:
            self.sample_fid(model)

    @torch.no_grad()
    def features(self, images):
        extractor = torch.nn.DataParallel(load_inception()).cuda()
        return [extractor(x) for x in images]
""",
        # an evaluation script: the model is wrapped to load a checkpoint and run, never trained
        """
import torch
import torch.nn as nn

def evaluate(opt):
    model = nn.DataParallel(build(opt)).cuda()
    model.load_state_dict(torch.load(opt.checkpoint))
    model.eval()
    with torch.no_grad():
        for images, labels in loader:
            print(model(images.cuda()).argmax(1))

if __name__ == "__main__":
    evaluate(parse())
""",
        """
import torch
from torch.nn import DataParallel

@torch.inference_mode()
def extract(loader, model):
    return [model(x) for x in loader]

inception = DataParallel(load_inception()).cuda()
features = extract(loader, inception)
""",
        # a project's own class of that name
        """
import torch

class DataParallel:
    def __init__(self, module):
        self.module = module

model = DataParallel(torch.nn.Linear(2, 2))
""",
        """
from ptlint.rules.parallel import DataParallel
from mylib.dist import DataParallel as DP

a = DataParallel(model)
b = DP(model)
""",
        # a library offering DataParallel as a mode the user chose
        """
import torch
from torch.nn.parallel import DataParallel as DP

class DataParallelStrategy:
    def setup_module(self, module):
        return torch.nn.DataParallel(module, device_ids=self.devices)

class Trainer:
    def _wrap_model(self, model):
        if self.args.n_gpu > 1:
            model = torch.nn.DataParallel(model)
        return model

class Brain:
    def prepare(self, module):
        if self.data_parallel_backend:
            module = DP(module)
        return module
""",
        # the branch where the user chose the dp option, negated or not
        """
from torch import nn

def setup(model, args):
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model)
    elif args.strategy == "dp" and args.n_gpu > 1:
        model = nn.DataParallel(model)
    if not args.data_parallel:
        return model
    else:
        return nn.DataParallel(model)
""",
        # unwrapping a model that may have been wrapped elsewhere
        """
import torch.nn as nn

WRAPPERS = (nn.DataParallel, nn.parallel.DistributedDataParallel)

def unwrap(model):
    if isinstance(model, nn.DataParallel):
        model = model.module
    return model
""",
    ]
