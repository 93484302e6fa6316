"""PTL104 blocking-transfer: a batch from a pinned-memory DataLoader copied to the device without `non_blocking=True`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import PER_STEP, FixExample, FixInput, Rule
from ptlint.rules.transfer._helpers import has_non_blocking, transfer_device
from ptlint.semantics.calls import CallSites
from ptlint.semantics.nodes import (
    DEFINITIONS,
    FUNCTION_DEFS,
    STATEMENT_LOOPS,
    is_constant,
)
from ptlint.semantics.uses import is_read_call
from ptlint.semantics.values import is_cpu_device

# Calls that iterate what they are given, element for element.
ITERATING = {"enumerate", "iter", "zip", "islice", "cycle", "tqdm", "trange", "chain", "repeat_loader"}
OFF = (False, None, 0)


def _last_name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _root(node: ast.AST) -> ast.AST:
    """`batch["x"].float()` -> `batch`: the value an expression reads its data from."""
    while True:
        if isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("to", "cuda"):
                return node  # moved already: not a host batch any more
            node = node.func.value
        else:
            return node


# A training run of `train(model, inputs, targets, device, batch_size)`: the losses and the model.
# On the CPU the fix changes nothing, but float32 training in one long process may differ in its
# last bit from run to run (the vector path a kernel takes depends on the memory it gets): 1e-6.
TRAIN = """
model = torch.nn.Linear(5, 3)
losses = train(model, {inputs}, {targets}, torch.device("cpu"), 4)
result = (losses, model)
"""


def _own_nodes(loop: ast.AST):
    """The nodes of the loop's own statements: what runs on every iteration (not in a branch, a
    nested loop or a function defined there)."""
    pending = list(getattr(loop, "body", []))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.Try, *DEFINITIONS)):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def _drains_every_iteration(loop: ast.AST) -> bool:
    """The loop's own statements read a tensor back: every iteration ends with the device's queue
    empty."""
    return any(is_read_call(node) for node in _own_nodes(loop))


# Host tensors built in the step (`torch.IntTensor([n] * b)`, `torch.from_numpy(a)`,
# `torch.tensor(lengths)`): pageable memory, so copying one to the device blocks until the
# device's queue is empty, whatever the batch's copy does.
HOST_BUILDERS = {"tensor", "as_tensor", "from_numpy", "Tensor", "FloatTensor", "LongTensor", "IntTensor",
                 "BoolTensor", "ByteTensor", "DoubleTensor", "HalfTensor", "zeros", "ones", "full", "arange",
                 "empty", "randn", "rand", "randint", "stack", "cat"}


def _built_on_host(node: ast.AST) -> bool:
    """`torch.IntTensor(...)`, `torch.tensor(x).long()`: a torch constructor's fresh CPU tensor,
    through the methods called on it."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        if func.attr in HOST_BUILDERS and isinstance(func.value, ast.Name) and func.value.id in ("torch", "th"):
            return not any(k.arg == "device" for k in node.keywords)
        node = func.value
    return False


class BlockingTransfer(Rule):
    code = "PTL104"
    needs_accelerator = True
    name = "blocking-transfer"
    message = "this batch comes from a DataLoader with `pin_memory=True`, but the copy blocks: " \
              "pass `non_blocking=True` so it overlaps with the GPU's work"
    help = "Pass `non_blocking=True` to `.to(device)` / `.cuda()` for batches from a `pin_memory=True` DataLoader."
    fixable = SAFE
    contexts = frozenset({PER_STEP})
    cold = False
    triggers = ("pin_memory", "non_blocking")
    # the loader is not in view, but the loop copies another part of the same batch with
    # `non_blocking=True`: the code itself counts on pinned memory
    sibling_message = "another part of this batch is copied with `non_blocking=True`, but this copy blocks: " \
                      "pass `non_blocking=True` here too"

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.loaders: set[int] = set()  # DataLoader(...) calls
        self.moves: list[tuple[ast.Call, ast.AST | None, ast.AST]] = []  # (transfer, its function, its loop)
        self.host_copies: dict[int, bool] = {}  # id(loop) -> _copies_host_tensor, asked per transfer

    def visit_Call(self, node: ast.Call) -> None:
        name = _last_name(node.func)
        if name.endswith(("DataLoader", "Dataloader")):
            qual = self.ctx.qualname(node.func)  # asked now: function-level imports are in scope
            if qual is None or qual.endswith(("DataLoader", "Dataloader")):
                self.loaders.add(id(node))
            return
        if not self.ctx.loops:
            return
        device = transfer_device(node, self.ctx)
        if device is not None and not has_non_blocking(node) and (device is node or not is_cpu_device(device, self.ctx)) \
                and not _drains_every_iteration(self.ctx.loops[-1]) \
                and not self._copies_host_tensor(self.ctx.loops[-1]):
            self.moves.append((node, self.ctx.function, self.ctx.loops[-1]))

    def _copies_host_tensor(self, loop: ast.AST) -> bool:
        """The loop's own statements also copy a tensor built on the host to the device, without
        `non_blocking` (`torch.IntTensor([length] * n).to(device)`): that copy of pageable memory
        waits for the device's queue every iteration, so the batch's copy has nothing to overlap
        with until it goes (a fix this rule does not offer)."""
        known = self.host_copies.get(id(loop))
        if known is None:
            scope = self.ctx.function or self.ctx.tree
            known = self.host_copies[id(loop)] = any(self._host_copy(node, scope) for node in _own_nodes(loop))
        return known

    def _host_copy(self, node: ast.AST, scope: ast.AST) -> bool:
        """A blocking copy of a tensor built on the host: the builder itself, or a name it was
        bound to (`data = torch.cat((x_in, x_out))`, then `data.cuda()`: a concatenation of pinned
        batches is a new tensor in pageable memory)."""
        device = transfer_device(node, self.ctx) if isinstance(node, ast.Call) else None
        if device is None or has_non_blocking(node) or (device is not node and is_cpu_device(device, self.ctx)):
            return False
        value = node.func.value
        if isinstance(value, ast.Name):
            value = self._reaching(value.id, scope, node) or value
        return _built_on_host(value)

    def end_file(self) -> None:
        if not self.moves:
            return
        by_line: dict[int, list[ast.Call]] = {}
        sibling: set[int] = set()  # lines reported on the sibling copies' evidence
        for move, function, loop in self.moves:
            if self.loaders and self._is_batch(move.func.value, function, move, set()):
                by_line.setdefault(move.lineno, []).append(move)
            elif self._sibling_copied_non_blocking(move, loop):
                by_line.setdefault(move.lineno, []).append(move)
                sibling.add(move.lineno)
        for line, moves in by_line.items():  # one finding per line: `x, y = x.to(d), y.to(d)`
            edits = tuple(self.ctx.edits.add_keyword(move, "non_blocking=True") for move in moves)
            self.report(moves[0], self.sibling_message if line in sibling else None,
                        fix=Fix(SAFE, "Pass `non_blocking=True`", edits), end_node=moves[-1])

    def keep(self, node: ast.AST, where) -> bool:
        """Only in a training step (a loop that backpropagates or steps an optimizer, a step hook,
        or what they call): an evaluation or inference loop reads its results back to the host
        every batch (metrics, decoding, post-processing, in this file or a helper elsewhere), so
        the next batch's copy starts on an idle device and has nothing to overlap with."""
        return self.ctx.model.in_training_step(node)

    def _sibling_copied_non_blocking(self, move: ast.Call, loop: ast.AST) -> bool:
        """`for inputs, labels in loader:` ... `inputs.cuda()`, `labels.cuda(non_blocking=True)`:
        the move copies one part of the loop's batch, and the loop's own statements copy another
        part with `non_blocking=True` (the code counts on pinned memory where the loader is not in
        view)."""
        parts = {n.id for n in ast.walk(getattr(loop, "target", ast.Pass())) if isinstance(n, ast.Name)}
        root = _root(move.func.value)
        if not (isinstance(root, ast.Name) and root.id in parts):
            return False
        statement = move  # the move's own statement counts too, in a branch or not
        while statement is not None and not isinstance(statement, ast.stmt):
            statement = self.ctx.parent(statement)
        for node in [*_own_nodes(loop), *(ast.walk(statement) if statement is not None else ())]:
            if isinstance(node, ast.Call) and node is not move and transfer_device(node, self.ctx) is not None \
                    and any(k.arg == "non_blocking" and is_constant(k.value, True) for k in node.keywords):
                other = _root(node.func.value)
                if isinstance(other, ast.Name) and other.id in parts and other.id != root.id:
                    return True
        return False

    # -- is this expression a pinned DataLoader? -------------------------------------------------
    def _scope_of(self, node: ast.AST) -> ast.AST:
        return self.ctx.enclosing_function(node) or self.ctx.tree

    def _pinned(self, expr: ast.AST, scope: ast.AST, seen: set) -> bool:
        """`expr`, evaluated in `scope`, is (an iteration wrapper of) a DataLoader built with
        pinned memory, directly or through names, attributes of `self`, parameters whose callers
        pass one, and functions of this module that return one."""
        key = ("pinned", id(expr))
        if key in seen or len(seen) > 40:
            return False
        seen.add(key)
        if isinstance(expr, ast.Call):
            if id(expr) in self.loaders:
                return self._pins_memory(expr, scope)
            name = _last_name(expr.func)
            if name in ITERATING:
                return any(self._pinned(arg, scope, seen) for arg in expr.args)
            return any(self._pinned(value, function, seen) for function in self._callees(expr, scope)
                       for value in self._returns(function))
        if isinstance(expr, ast.Name):
            return any(self._pinned(value, where, seen) for value, where in self._values(expr, scope))
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return any(self._pinned(value, method, seen) for value, method in self._self_values(expr.attr, scope))
        if isinstance(expr, (ast.Tuple, ast.List)):  # `return train_loader, val_loader`
            return any(self._pinned(element, scope, seen) for element in expr.elts)
        if isinstance(expr, ast.Dict):  # `loaders = {"train": DataLoader(...)}`
            return any(self._pinned(value, scope, seen) for value in expr.values)
        if isinstance(expr, ast.Subscript):  # `loaders["train"]`
            return self._pinned(expr.value, scope, seen)
        return False

    def _pins_memory(self, loader: ast.Call, scope: ast.AST) -> bool:
        for keyword in loader.keywords:
            if keyword.arg == "pin_memory":
                return not (isinstance(keyword.value, ast.Constant) and keyword.value.value in OFF)
        if not any(k.arg is None for k in loader.keywords):
            return False
        # DataLoader(ds, **kwargs): a `pin_memory` entry set in the same function
        for node in ast.walk(scope):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if is_constant(key, "pin_memory") and not (isinstance(value, ast.Constant) and value.value in OFF):
                        return True
            elif isinstance(node, ast.Call) and _last_name(node.func) in ("dict", "update"):
                if any(k.arg == "pin_memory" and not (isinstance(k.value, ast.Constant) and k.value.value in OFF)
                       for k in node.keywords):
                    return True
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and is_constant(t.slice, "pin_memory")
                                                      for t in node.targets):
                if not (isinstance(node.value, ast.Constant) and node.value.value in OFF):
                    return True
        return False

    def _values(self, name: ast.Name, scope: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
        """(value, scope) pairs the name may hold where it is read: the assignment that reaches
        it in `scope` (`loader = fabric.setup_dataloaders(loader)` replaces the plain loader);
        with none, the arguments the function's callers in this module pass for a parameter,
        or the module's own assignments. A loop binds an element of its iterable: a loader
        taken from a list of loaders (`for loader in (train, val):`) is one of them."""
        value = self._reaching(name.id, scope, name)
        if value is not None:
            if self._is_iterable_of_loop(value):
                return [(e, scope) for e in value.elts] if isinstance(value, (ast.List, ast.Tuple)) else []
            return [(value, scope)]
        if isinstance(scope, FUNCTION_DEFS):
            index = self._parameter_index(scope, name.id)
            if index is not None:
                return self._arguments(scope, name.id, index)
            if self.ctx.assignments(name.id, scope):
                return []
        return [(v, self.ctx.tree) for v in self.ctx.assignments(name.id, self.ctx.tree)
                if not self._is_iterable_of_loop(v)]

    def _is_iterable_of_loop(self, value: ast.AST) -> bool:
        return self._binding_loop(value) is not None or isinstance(self.ctx.parent(value), ast.withitem)

    def _binding_loop(self, value: ast.AST) -> ast.AST | None:
        """The loop (`for` statement or comprehension) whose target `value` was bound from: its
        iterable, or an argument of `enumerate(...)` / `zip(...)` there (the engine may bind
        `batch` of `for i, batch in enumerate(loader)` to `loader` itself)."""
        node, parent = value, self.ctx.parent(value)
        while isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
                and parent.func.id in ("enumerate", "zip") and any(a is node for a in parent.args):
            node, parent = parent, self.ctx.parent(parent)
        if isinstance(parent, (ast.For, ast.AsyncFor)) and parent.iter is node:
            return parent
        if isinstance(parent, ast.comprehension) and parent.iter is node:
            return self.ctx.parent(parent)  # the ListComp / GeneratorExp / ...
        return None

    @staticmethod
    def _parameter_index(function: ast.AST, name: str) -> int | None:
        args = function.args
        positional = [a.arg for a in (*args.posonlyargs, *args.args)]
        if name in positional:
            return positional.index(name)
        if any(a.arg == name for a in args.kwonlyargs):
            return -1
        return None

    def _arguments(self, function: ast.AST, name: str, index: int) -> list[tuple[ast.AST, ast.AST]]:
        """What the calls of `function` in this module pass for its parameter `name`."""
        method = self.ctx.owner_class(function) is not None
        out = []
        for call in CallSites.of(self.ctx).named(function.name, method):
            offset = 1 if method else 0  # `self.f(a)` passes `a` for the second parameter
            passed = next((k.value for k in call.keywords if k.arg == name), None)
            if passed is None and index >= offset and index - offset < len(call.args) \
                    and not any(isinstance(a, ast.Starred) for a in call.args[:index - offset + 1]):
                passed = call.args[index - offset]
            if passed is not None:
                out.append((passed, self._scope_of(call)))
        return out

    def _callees(self, call: ast.Call, scope: ast.AST) -> list[ast.AST]:
        """Functions of this module a call may run: `make_loader(...)`, `self.train_dataloader()`."""
        func = call.func
        if isinstance(func, ast.Name):
            return [f for f in self.ctx.tree.body if isinstance(f, FUNCTION_DEFS) and f.name == func.id]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self.ctx.parent(scope) if isinstance(scope, FUNCTION_DEFS) else None
            if isinstance(cls, ast.ClassDef):
                return [f for f in cls.body if isinstance(f, FUNCTION_DEFS) and f.name == func.attr]
        return []

    @staticmethod
    def _returns(function: ast.AST) -> list[ast.AST]:
        out = []
        pending = list(function.body)
        while pending:
            node = pending.pop()
            if isinstance(node, DEFINITIONS):
                continue
            if isinstance(node, ast.Return) and node.value is not None:
                out.append(node.value)
            pending.extend(ast.iter_child_nodes(node))
        return out

    def _self_values(self, attr: str, scope: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
        """Values assigned to `self.<attr>` in the methods of the class around `scope`."""
        cls = self.ctx.parent(scope) if isinstance(scope, FUNCTION_DEFS) else None
        if not isinstance(cls, ast.ClassDef):
            return []
        out = []
        for method in cls.body:
            if not isinstance(method, FUNCTION_DEFS):
                continue
            for node in ast.walk(method):
                if isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                        and t.value.id == "self" for t in node.targets):
                    out.append((node.value, method))
        return out

    # -- is this expression a batch of such a loader? --------------------------------------------
    def _is_batch(self, expr: ast.AST, scope: ast.AST | None, anchor: ast.AST, seen: set) -> bool:
        """`expr`, read at `anchor`, holds a batch that a pinned DataLoader produced in this
        iteration: the target of a loop over the loader around `anchor` (`for x, y in loader`),
        `next(iter(loader))` in a loop around it, anything taken from those (`batch["image"]`,
        `data, target = batch`, `[t for t in batch]`), or a parameter of a helper whose callers
        in this module pass one. The assignment that reaches `anchor` is the one that counts
        (`x = x.to(device, non_blocking=True)` makes `x` a device tensor from there on)."""
        scope = scope or self.ctx.tree
        root = _root(expr)
        if isinstance(root, ast.Call) and _last_name(root.func) == "next" and root.args:
            return self._pinned(root.args[0], scope, set())  # `next(self.dl).to(device)` in the loop
        if not isinstance(root, ast.Name):
            return False
        key = ("batch", root.id, id(scope), id(anchor))
        if key in seen or len(seen) > 40:
            return False
        seen.add(key)
        value = self._reaching(root.id, scope, anchor)
        if value is None:
            index = self._parameter_index(scope, root.id) if isinstance(scope, FUNCTION_DEFS) else None
            if index is None:
                return False
            return any(self._is_batch(passed, where, passed, seen)
                       for passed, where in self._arguments(scope, root.id, index))
        if self._is_iterable_of_loop(value):
            loop = self._binding_loop(value)
            if loop is not None and not self._encloses(loop, anchor):
                return False
            return self._pinned(value, scope, set()) or self._is_batch(value, scope, anchor, seen)
        if isinstance(value, ast.Call) and _last_name(value.func) == "next" and value.args:
            loop = self._loop_of(value)
            return loop is not None and self._encloses(loop, anchor) and self._pinned(value.args[0], scope, set())
        if isinstance(value, ast.AugAssign):
            return False
        return self._is_batch(value, scope, anchor, seen)

    def _reaching(self, name: str, scope: ast.AST, anchor: ast.AST) -> ast.AST | None:
        """The last value bound to `name` in `scope` before `anchor` in the source (a loop
        binds its target at the start of its body; an assignment after its value)."""
        position = (anchor.lineno, anchor.col_offset)
        best, best_at = None, None
        for value in self.ctx.assignments(name, scope):
            at = self._binding_position(value)
            if at is not None and at <= position and (best_at is None or at >= best_at):
                best, best_at = value, at
        return best

    def _binding_position(self, value: ast.AST) -> tuple[int, int] | None:
        loop = self._binding_loop(value)
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            return loop.target.lineno, loop.target.col_offset
        if loop is not None:  # `[t.to(d) for t in batch]` binds `t` before the element
            return loop.lineno, loop.col_offset
        parent = self.ctx.parent(value)
        while parent is not None and not isinstance(parent, (ast.stmt, ast.NamedExpr, ast.withitem)):
            parent = self.ctx.parent(parent)
        if parent is None:
            return None
        if isinstance(parent, ast.withitem):
            return parent.context_expr.end_lineno, parent.context_expr.end_col_offset
        return parent.end_lineno, parent.end_col_offset

    def _encloses(self, outer: ast.AST | None, node: ast.AST) -> bool:
        while node is not None:
            if node is outer:
                return True
            node = self.ctx.parent(node)
        return False

    def _loop_of(self, node: ast.AST) -> ast.AST | None:
        parent = self.ctx.parent(node)
        while parent is not None and not isinstance(parent, (*STATEMENT_LOOPS, *FUNCTION_DEFS)):
            parent = self.ctx.parent(parent)
        return parent if isinstance(parent, STATEMENT_LOOPS) else None

    docs = """
## What it does
Finds `.to(device)` / `.cuda()` without `non_blocking=True` applied to a batch that a
`DataLoader(..., pin_memory=True)` produced, in the loop over that loader. The loader must be in
view in the same file: built in the same function, stored on `self`, returned by a function of
the module (alone or in a tuple), kept in a dict or a tuple of loaders, wrapped in a generator
(`cycle(loader)`), or passed as an argument by a caller in the module (`pin_memory=True` also counts through `**kwargs` with a `"pin_memory": True` entry, and
`pin_memory=` given any value but `False`: `pin_memory=args.pin_mem` pins when the user asks). The batch is the loop target, or
`next(iter(loader))`, or anything taken from those (`batch["image"]`,
`[t.to(device) for t in batch]`). The loader that reaches the loop counts: one handed to a
framework that moves batches itself (`loader = fabric.setup_dataloaders(loader)`,
`accelerator.prepare(loader)`) is not the pinned loader any more. Reported at the call.

## Why is this bad?
`pin_memory=True` asks the loader to put each batch in page-locked host memory, at a cost,
for one reason: from pinned memory the copy to the GPU can be asynchronous. A plain
`.to(device)` still waits for the copy to finish before Python goes on, so the GPU sits idle
during the transfer and the pinning buys nothing. With `non_blocking=True` the copy is queued
on the stream and overlaps with the work already queued; kernels that use the batch run after
it on the same stream, so nothing else changes.

Also reported where the loader is not in view but the loop copies another part of the same batch
with `non_blocking=True` (`inputs.cuda()` beside `labels.cuda(non_blocking=True)`): the code
itself counts on pinned memory, and the blocking copy is the one left out.

Not reported: a loader whose `pin_memory` is missing, `False` or not in this file, unless a
sibling copy says otherwise (without pinned memory `non_blocking` does little); a copy that already passes `non_blocking=`; a copy
to the CPU (a device-to-host copy with `non_blocking=True` may be read before it lands); a
tensor that is not from the batch (see PTL105 for values that never change in the loop); a loop
that reads a tensor back every iteration anyway (`loss.item()`, `.cpu()`, `.tolist()` outside
any branch): the queue is empty when the next copy starts, so a non-blocking copy has nothing to
overlap with until those reads go (PTL101 reports them); a loop that also copies a tensor built
on the host to the device without `non_blocking` (`torch.IntTensor([n] * b).to(device)`, or a
name bound to one: `data = torch.cat((batch_in[0], batch_out[0]))` then `data.cuda()`, a join of
pinned batches being new pageable memory): that copy waits for the queue every iteration all the
same, and making the labels' copy beside it non-blocking gains nothing.

## Where it reports
- **Reports** in the loop over the pinned loader when it is a training loop (it backpropagates
  or steps an optimizer, or calls a step hook that does), which runs every step (in a function,
  in `main()` or at a script's top level).
- **Silent** in an evaluation or inference loop: its results go back to the host every batch
  (metrics, decoding, post-processing, often in a helper of another file), so the device is
  idle when the next copy starts; `non_blocking` has nothing to overlap with.
- **Silent** in once-code (one batch taken at set-up, `next(iter(loader)).to(device)` in
  `main()`), once per epoch or every N steps, a function whose callers the file does not show,
  error paths (an `except` body, a branch that raises, or only warns or logs), and test code.

## Example
```python
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
```

## Use instead
```python
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
```

## Fix safety
Safe: it adds `non_blocking=True` to host-to-device copies only. The copy runs on the current
stream, in order with the kernels that read the result, so every value computed from it is the
same; the pinned source stays alive until the copy is done (the caching host allocator tracks
it). On a machine without a GPU the argument changes nothing (the behaviour test runs both
versions on the CPU). Only code that writes into the host batch in place after the copy has
been queued could see a difference, and a batch fresh from the loader is not written to.

## References
- https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html
- https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers
"""

    bad_examples = [
        # the loader is built in another module, but the loop copies the labels without waiting:
        # it counts on pinned memory, and the inputs' copy is the one left blocking
        """
import torch
from data import construct_train_loader

def train_epoch(model, loss_fun, optimizer, cfg):
    loader = construct_train_loader()
    for cur_iter, (inputs, labels) in enumerate(loader):
        if cfg.mode != "ffcv":
            inputs, labels = inputs.cuda(), labels.cuda(non_blocking=True)  # expect: PTL104
        loss = loss_fun(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # host-built tensors copied without waiting (`device=`, `non_blocking`) or on some steps only
        """
import torch
from torch.utils.data import DataLoader

def train(model, dataset, device, opt, step):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    for x, y in loader:
        x = x.to(device)  # expect: PTL104
        y = y.cuda(non_blocking=True)
        mask = torch.ones(x.size(0), device=device)
        weights = torch.tensor([1.0, 2.0]).to(device, non_blocking=True)
        if step % 100 == 0:
            scale = torch.tensor(step).to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y, weight=weights) * mask.mean()
        loss.backward()
        opt.step()
""",
        """
import torch
from torch.utils.data import DataLoader

def train(model, dataset, device, opt):
    loader = DataLoader(dataset, batch_size=32, num_workers=4, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # expect: PTL104
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
""",
        # `import torch.utils.data as tud`, a loader on self, `.cuda()`, enumerate/tqdm, dict batches
        """
import torch.utils.data as tud
from tqdm import tqdm

class Trainer:
    def __init__(self, dataset):
        self.train_loader = tud.DataLoader(dataset, batch_size=8, pin_memory=True)

    def fit(self, model):
        for step, batch in enumerate(tqdm(self.train_loader)):
            images = batch["image"].cuda()  # expect: PTL104
            labels = batch["label"].to(self.device)  # expect: PTL104
            model(images, labels).backward()
""",
        # minGPT style: next(iter(loader)) in a while loop, a list of tensors
        """
import torch
from torch.utils.data.dataloader import DataLoader

def run(model, dataset, device):
    train_loader = DataLoader(dataset, shuffle=False, pin_memory=True, batch_size=4)
    data_iter = iter(train_loader)
    while True:
        batch = next(data_iter)
        batch = [t.to(device) for t in batch]  # expect: PTL104
        x, y = batch
        model(x, y)
""",
        # pytorch/examples style: **kwargs with a pin_memory entry, the loader passed to train()
        """
import torch

def train(model, device, train_loader, optimizer):
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)  # expect: PTL104
        optimizer.zero_grad()

def main(dataset, model, optimizer, device):
    train_kwargs = {"batch_size": 64}
    cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
    train_kwargs.update(cuda_kwargs)
    train_loader = torch.utils.data.DataLoader(dataset, **train_kwargs)
    for epoch in range(3):
        train(model, device, train_loader, optimizer)
""",
        # a loader returned by a function of the module; a helper that moves each batch
        """
from torch.utils.data import DataLoader

def make_loader(ds):
    return DataLoader(ds, batch_size=16, pin_memory=True)

def to_device(batch, device):
    return {k: v.to(device) for k, v in batch.items()}  # expect: PTL104

def train(model, ds, device, optimizer):
    for batch in make_loader(ds):
        batch = to_device(batch, device)
        model(**batch).loss.backward()
        optimizer.step()
""",
        # a diffusion trainer: an endless generator over the loader, on self; loaders in a tuple
        """
from torch.utils.data import DataLoader

def cycle(dl):
    while True:
        for data in dl:
            yield data

class Trainer:
    def __init__(self, ds, device):
        dl = DataLoader(ds, batch_size=16, shuffle=True, pin_memory=True, num_workers=4)
        self.dl = cycle(dl)
        self.device = device

    def train(self, model, steps):
        for step in range(steps):
            data = next(self.dl).to(self.device)  # expect: PTL104
            model(data).mean().backward()

def fit(model, train_ds, extra_ds, device):
    loaders = (DataLoader(train_ds, pin_memory=True), DataLoader(extra_ds, pin_memory=True))
    for loader in loaders:
        for x in loader:
            model(x.cuda()).mean().backward()  # expect: PTL104

def evaluate(model, val_ds, device, scores):
    # an evaluation loop: its results go back to the host every batch (here in a helper), so
    # the next copy starts on an idle device either way
    for x in DataLoader(val_ds, pin_memory=True):
        scores.update(model(x.cuda()))
""",
    ]

    good_examples = [
        # the batch is joined with another on the host: the joined tensor is pageable memory, its
        # copy blocks whatever the labels' copy does
        """
import torch
from torch.utils.data import DataLoader

def train(model, in_set, out_set, optimizer):
    loader_in = DataLoader(in_set, batch_size=128, pin_memory=True)
    loader_out = DataLoader(out_set, batch_size=256, pin_memory=True)
    for batch_in, batch_out in zip(loader_in, loader_out):
        data = torch.cat((batch_in[0], batch_out[0]), 0)
        target = batch_in[1]
        data, target = data.cuda(), target.cuda()
        loss = model(data)[: len(target)].sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # no loader in view and no part of the batch copied without waiting; a host-built tensor's
        # non-blocking copy says nothing of the batch
        """
import torch
from data import construct_train_loader

def train_epoch(model, optimizer, device, n):
    for inputs, labels in construct_train_loader():
        inputs, labels = inputs.to(device), labels.to(device)
        weights = torch.ones(n).to(device, non_blocking=True)
        loss = (model(inputs) - labels).pow(2).mul(weights).mean()
        loss.backward()
        optimizer.step()
""",
        # a tensor built on the host copied in the same step: that copy waits for the queue anyway
        """
import torch
from torch.utils.data import DataLoader


def evaluate(model, dataset, device, converter):
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    with torch.no_grad():
        for images, labels in loader:
            images = images.to(device)
            lengths = torch.IntTensor([25] * images.size(0)).to(device)
            converter.decode(model(images, lengths), lengths)
""",
        """
import torch
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device, log):
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.to(device)  # the loop reads the loss back anyway: nothing to overlap
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.append(loss.item())
""",
        # the loader handed to a framework that moves batches itself
        """
from torch.utils.data import DataLoader

def train(fabric, model, ds, device):
    loader = DataLoader(ds, batch_size=8, pin_memory=True)
    loader = fabric.setup_dataloaders(loader)
    for x in loader:
        model(x.to(device))
""",
        # non_blocking already, no pinned memory, a copy to the CPU
        """
import torch
from torch.utils.data import DataLoader

def train(model, dataset, device, flag):
    pinned = DataLoader(dataset, pin_memory=True)
    for x, y in pinned:
        x = x.to(device, non_blocking=True)
        y = y.cuda(non_blocking=True)
        z = x.to(device, torch.float16, False)
        back = x.to("cpu")
    plain = DataLoader(dataset, batch_size=8)
    for x, y in plain:
        x = x.to(device)
    off = DataLoader(dataset, pin_memory=False)
    for x, y in off:
        x = x.to(device)
""",
        # not the batch: the model, a constant, a value moved already, dtype conversions
        """
import torch
from torch.utils.data import DataLoader

def train(model, dataset, device, weights):
    loader = DataLoader(dataset, pin_memory=True)
    for x, y in loader:
        model.to(device)
        w = weights.to(device)
        x = x.to(device, non_blocking=True)
        x2 = x.to(device)
        y = y.to(torch.long)
""",
        # the loader is not in view: built in another file
        """
import torch

def train(model, loader, device):
    for x, y in loader:
        x = x.to(device)
""",
        # once: outside the loop (one batch), and at module level
        """
import torch
from torch.utils.data import DataLoader

loader = DataLoader([], pin_memory=True)
first = next(iter(loader)).to("cuda")
""",
    ]

    fix_examples = [
        FixExample(
            before="""
from torch.utils.data import DataLoader

def train(model, ds, device):
    loader = DataLoader(ds, batch_size=8, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device), y.cuda()
        model(x, y).backward()
""",
            after="""
from torch.utils.data import DataLoader

def train(model, ds, device):
    loader = DataLoader(ds, batch_size=8, pin_memory=True)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.cuda(non_blocking=True)
        model(x, y).backward()
""",
        ),
        FixExample(
            before="""
from torch.utils.data import DataLoader

def train(model, ds, device):
    for batch in DataLoader(ds, pin_memory=True):
        x = batch["x"].to(
            device,
            dtype=torch.float16,  # half on the device
        )
        model(x).sum().backward()
""",
            after="""
from torch.utils.data import DataLoader

def train(model, ds, device):
    for batch in DataLoader(ds, pin_memory=True):
        x = batch["x"].to(
            device,
            dtype=torch.float16, non_blocking=True,  # half on the device
        )
        model(x).sum().backward()
""",
        ),
        FixExample(  # on the CPU, non_blocking is a no-op and pin_memory falls back to ordinary memory
            before="""
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, inputs, targets, device, batch_size):
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=batch_size, pin_memory=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        out = model(x.float())
        loss = torch.nn.functional.cross_entropy(out, y.long())
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses
""",
            after="""
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(model, inputs, targets, device, batch_size):
    loader = DataLoader(TensorDataset(inputs, targets), batch_size=batch_size, pin_memory=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        out = model(x.float())
        loss = torch.nn.functional.cross_entropy(out, y.long())
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return losses
""",
            inputs=(
                FixInput("batches of float32", TRAIN.format(inputs="(torch.rand(10, 5) * 4).to(torch.float32)", targets="torch.randint(0, 3, (10,), dtype=torch.int32)"), tolerance=1e-6),
                FixInput("batches of float16", TRAIN.format(inputs="(torch.rand(10, 5) * 4).to(torch.float16)", targets="torch.randint(0, 3, (10,), dtype=torch.int32)"), tolerance=1e-6),
                FixInput("batches of bfloat16", TRAIN.format(inputs="(torch.rand(10, 5) * 4).to(torch.bfloat16)", targets="torch.randint(0, 3, (10,), dtype=torch.int32)"), tolerance=1e-6),
                FixInput("batches of float64", TRAIN.format(inputs="(torch.rand(10, 5) * 4).to(torch.float64)", targets="torch.randint(0, 3, (10,), dtype=torch.int32)"), tolerance=1e-6),
                FixInput("batches of uint8", TRAIN.format(inputs="(torch.rand(10, 5) * 4).to(torch.uint8)", targets="torch.randint(0, 3, (10,), dtype=torch.int32)"), tolerance=1e-6),
                FixInput("no batches", TRAIN.format(inputs="torch.zeros(0, 5)", targets="torch.zeros(0, dtype=torch.long)")),
            ),
        ),
    ]
