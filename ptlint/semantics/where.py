"""Where code runs: the execution-context model of DESIGN.md ("Where code runs").

One analysis per file, shared by every rule, answers for any node:

- **per-step**: it runs again and again — in the body of a loop or comprehension, in `forward`
  of an `nn.Module`, in a function `torch.compile` traces, in a framework step hook
  (`training_step`, `*_batch_end`, an Ignite `ITERATION_COMPLETED` handler), or in a function of
  this module that per-step code calls (transitively);
- **per-outer-iteration**: in a loop, but visibly less often than its steps — outside an inner
  loop over a data source (once per epoch), or under a periodic test (`if step % 100 == 0`);
- **once**: module top level outside loops, `__init__` and other set-up (`setup`,
  `configure_*`, `init_weights`: loops there too), and functions that only once-code of this
  module calls (`main()`); a loop over a literal list of settings repeats no step either, nor
  does one over a model's parts or a mapping (`.named_parameters()`, `.items()`) in once-code;
- **called**: any other function body: it runs as often as callers this file does not show.

Independently, a node is **cold** when it sits in a branch that only runs on misuse: an `except`
body, a branch that ends in `raise`, a branch that only warns or logs (and perhaps resets a
setting), the message of an `assert` or the expression of a `raise`.

The model is built lazily, once per file, and only for files where some rule reported something
(most files have no finding and never pay for it): one walk records parents, functions, loops and
call sites; a small fixpoint over the module's own call graph then gives each function its base
context. No analysis crosses files.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ptlint.semantics.nodes import class_family

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

# Where a statement runs (DESIGN.md, "Where code runs").
PER_STEP = "per-step"
PER_OUTER = "per-outer-iteration"
ONCE = "once"
CALLED = "called"
EVERYWHERE = frozenset({PER_STEP, PER_OUTER, ONCE, CALLED})
RANK = {ONCE: 0, PER_OUTER: 1, CALLED: 2, PER_STEP: 3}
FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
STATEMENT_LOOPS = (ast.For, ast.AsyncFor, ast.While)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)

# Framework hooks that run once per batch (Lightning and friends).
STEP_HOOKS = {"training_step", "validation_step", "test_step", "predict_step", "training_step_end",
              "validation_step_end", "test_step_end", "on_before_backward", "on_after_backward",
              "on_before_optimizer_step", "on_before_zero_grad", "optimizer_step", "train_step", "eval_step",
              "compute_loss", "prediction_step"}  # the last two: Hugging Face Trainer overrides
STEP_HOOK_SUFFIXES = ("_batch_end", "_batch_start")
# Text without any of these holds no training step (`in_training_step` is False everywhere): no
# backward, zero_grad, optimizer or environment step, `next(it)`, step hook or Ignite event.
TRAINING_TEXT = re.compile(r"backward|zero_grad|step\s*\(|_step_end|next\s*\(|compute_loss|_batch_(end|start)"
                           r"|ITERATION_|GET_BATCH_")


def may_hold_training_step(text: str) -> bool:
    return TRAINING_TEXT.search(text) is not None


# Set-up that runs once per run (unless a per-step caller in this module says otherwise).
ONCE_NAMES = {"__init__", "__post_init__", "__new__", "__init_subclass__", "__set_name__", "main", "setup",
              "prepare_data", "reset_parameters", "setUp", "setUpClass"}
ONCE_NAME = re.compile(r"(^|_)(init|initiali[sz]e|configure|load|deploy|reparam\w*|fuse|export|convert)(_|$)")

# Words in a loop's iterable that say it walks over data (one step per element).
DATA_WORDS = {"loader", "dataloader", "dl", "batches", "batch", "dataset", "ds", "data", "iterator", "iter",
              "stream", "episodes", "episode", "rollout", "rollouts", "steps", "iters", "iterations", "samples",
              "minibatches", "microbatches", "queue", "prefetcher", "tqdm", "timesteps"}
# An inner loop over these splits one step into parts: the outer loop is still the step loop.
SUB_STEP_WORDS = {"accum", "accumulation", "micro", "microbatch", "microbatches", "micro_step", "chunks",
                  "grad_accum", "gradient_accumulation_steps", "accumulate"}
# Iterating these walks a model's structure or a mapping, not data.
STRUCTURE_METHODS = {"items", "keys", "values", "parameters", "named_parameters", "modules", "named_modules",
                     "children", "named_children", "buffers", "named_buffers", "state_dict", "param_groups"}
LOG_METHODS = {"warn", "warning", "warning_once", "warn_once", "info", "info_once", "debug", "error", "exception",
               "critical", "log", "print", "fatal"}


@dataclass(frozen=True)
class Where:
    context: str  # PER_STEP, PER_OUTER, ONCE or CALLED
    cold: bool  # in a branch that only runs on misuse
    loop: ast.AST | None  # the innermost loop (or comprehension) around the node in its function
    function: ast.AST | None  # the innermost def around the node (lambdas are transparent)


def _words(node: ast.AST) -> set[str]:
    """Lower-case words of the names and attributes in an expression (`train_loader` ->
    {"train_loader", "train", "loader"})."""
    out: set[str] = set()
    for child in ast.walk(node):
        name = child.id if isinstance(child, ast.Name) else child.attr if isinstance(child, ast.Attribute) else None
        if name:
            lower = name.lower()
            out.add(lower)
            out.update(part for part in lower.split("_") if part)
    return out


def _data_words(words: set[str]) -> bool:
    return bool(words & DATA_WORDS) or any("loader" in word for word in words)


def iterable_is_data(loop: ast.AST) -> bool:
    """The loop's iterable names a data source: `train_loader`, `enumerate(tqdm(batches))`,
    `range(max_steps)`; not `model.parameters()` or `d.items()`. A `while` loop's test names
    its step counter (`while step < max_steps:`)."""
    if isinstance(loop, ast.While):
        return _data_words(_words(loop.test))
    if isinstance(loop, COMPREHENSIONS):
        source = loop.generators[0].iter
    else:
        source = loop.iter
    for child in ast.walk(source):
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                and child.func.attr in STRUCTURE_METHODS:
            return False
    return _data_words(_words(source))


def _set_up_name(name: str) -> bool:
    return name in ONCE_NAMES and name != "main" or bool(ONCE_NAME.search(name))


def _over_literal(loop: ast.AST) -> bool:
    """`for name in ("train", "val"):`: a loop over a literal display of constants."""
    source = loop.generators[0].iter if isinstance(loop, COMPREHENSIONS) else getattr(loop, "iter", None)
    return isinstance(source, (ast.List, ast.Tuple, ast.Set)) and all(
        isinstance(element, ast.Constant) for element in source.elts)


def _over_structure(loop: ast.AST) -> bool:
    """`for name, p in model.named_parameters():`, `for k, v in d.items():`,
    `for conv, bn in zip(self.convs, self.bns):`: a loop over a model's parts or a mapping."""
    source = loop.generators[0].iter if isinstance(loop, COMPREHENSIONS) else getattr(loop, "iter", None)
    if source is None:
        return False
    if any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STRUCTURE_METHODS
           for node in ast.walk(source)):
        return True
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id in ("zip", "enumerate") \
            and source.args:
        parts = source.args
    else:
        parts = [source]
    return all(isinstance(p, ast.Attribute) and isinstance(p.value, ast.Name) and p.value.id == "self" for p in parts)


def is_sub_step_loop(loop: ast.AST) -> bool:
    source = loop.test if isinstance(loop, ast.While) else getattr(loop, "iter", None)
    return source is not None and bool(_words(source) & SUB_STEP_WORDS)


def _body_trains(loop: ast.AST) -> bool:
    """The loop body runs a training or environment step: `.backward()`, `zero_grad()`,
    `optimizer.step()`, `env.step(a)`, `next(it)`."""
    return _trains(list(loop.body) if isinstance(loop, STATEMENT_LOOPS) else [])


def _steps_optimizer(block: list[ast.stmt]) -> bool:
    """`if (i + 1) % accumulation == 0: optimizer.step(); ...`: a modulo test that marks the
    optimizer step of gradient accumulation, which is the training step itself, not a logging
    interval."""
    for statement in block:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    node.func.attr in ("backward", "zero_grad") or node.func.attr == "step"
                    and _words(node.func.value) & {"optimizer", "optim", "opt", "scaler"}):
                return True
    return False


def _trains(statements: list[ast.AST]) -> bool:
    pending = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                if func.attr in ("backward", "manual_backward", "zero_grad"):
                    return True
                if func.attr == "step" and _words(func.value) & {"optimizer", "optim", "opt", "scaler", "env",
                                                                  "envs", "trainer", "scheduler"}:
                    return True
            elif isinstance(func, ast.Name) and func.id == "next" and _next_batch(node):
                return True
        pending.extend(ast.iter_child_nodes(node))
    return False


GENERIC_ITERATOR_WORDS = {"iter", "iters", "iterator", "iterators", "it"}


def _next_batch(call: ast.Call) -> bool:
    """`next(it)`, `next(self.train_iter)`, `next(iter(loader))`: the next batch of a step loop.
    An iterator picked out of a container must name data (`next(loader_iters[task])`), not only
    be an iterator (`next(grid_iters[kind])` walks image sizes in a position-id helper)."""
    if not call.args:
        return False
    source = call.args[0]
    if isinstance(source, ast.Name) or isinstance(source, ast.Attribute) and not isinstance(source.value, ast.Subscript):
        return True
    words = _words(source) - GENERIC_ITERATOR_WORDS
    return _data_words(words) or "train" in words


# Settings that say a branch runs on some steps only: `if self.control.should_log:`,
# `if step >= next_eval_step:` with `eval_interval`, `log_every`, `print_freq`.
PERIODIC_WORDS = {"interval", "every", "freq", "frequency", "period", "periodic"}
PERIODIC_FLAGS = {"should_log", "should_evaluate", "should_save", "do_log", "log_now", "is_log_step",
                  "should_print", "should_checkpoint"}


def is_periodic_test(test: ast.AST, loop: ast.AST | None) -> bool:
    """`step % 100 == 0`, `i == 0`, `batch_idx == len(loader) - 1`, `if self.control.should_log:`,
    `if step % cfg.log_interval`: a test that holds on a few of the loop's iterations."""
    words = _words(test)
    if words & PERIODIC_FLAGS or any(part in PERIODIC_WORDS for word in words for part in word.split("_")):
        return True
    names = set()
    target = getattr(loop, "target", None)
    if target is not None:
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Name) and side.id in names for side in sides):
                return True
    return False


def _off_period(test: ast.AST, loop: ast.AST | None) -> bool:
    """A test that holds on the steps a periodic test leaves out: `not should_log`,
    `step % k != 0`, `step % k`. Not the steps between optimizer steps (`(i + 1) % accum != 0`):
    what follows runs on every optimizer step, the training step itself."""
    if _words(test) & SUB_STEP_WORDS:
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return is_periodic_test(test.operand, loop)
    if isinstance(test, ast.Compare) and all(isinstance(op, ast.NotEq) for op in test.ops):
        return any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(test))
    return isinstance(test, ast.BinOp) and isinstance(test.op, ast.Mod)


def is_log_call(node: ast.AST) -> bool:
    """`warnings.warn(...)`, `logger.warning(...)`, `logging.info(...)`, `print(...)`."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in ("print", "warn")
    if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS:
        words = _words(func.value)
        return any("log" in word or "warn" in word for word in words)
    return False


_SETTING_NODES = (ast.Constant, ast.Name, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Dict, ast.keyword,
                  ast.Call, ast.UnaryOp, ast.unaryop, ast.expr_context, ast.Slice)


def _quiet(statement: ast.stmt) -> bool:
    """A statement a warning branch may hold besides the warning: resetting a setting or
    choosing a fallback (`use_cache = False`, `fn = FUNCTIONS["sdpa"]`, `x = torch.tensor(1.0)`),
    returning, `pass` — no arithmetic, which would be the branch's real work."""
    if isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)):
        return True
    if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Return)):
        value = statement.value
        return value is None or all(isinstance(node, _SETTING_NODES) for node in ast.walk(value))
    return False


def is_cold_branch(body: list[ast.stmt]) -> bool:
    """A branch that ends in `raise`, or whose business is a warning: it warns or logs, and
    otherwise only resets a setting, picks a fallback or returns."""
    if not body:
        return False
    if isinstance(body[-1], ast.Raise):
        return True
    logs = [s for s in body if isinstance(s, ast.Expr) and is_log_call(s.value)]
    return bool(logs) and all(s in logs or _quiet(s) for s in body)


def _contains(block: list[ast.stmt], child: ast.AST) -> bool:
    return any(statement is child for statement in block)


_MODEL_KEY = "execution-model"


def execution_model(facts: "FileFacts") -> "ExecutionModel":
    """The file's execution model, built once, on first use (kept in `facts.memo`)."""
    model = facts.memo.get(_MODEL_KEY)
    if model is None:
        model = facts.memo[_MODEL_KEY] = ExecutionModel(facts)
    return model


def forget_execution_model(facts: "FileFacts") -> None:
    """Drop a model built during the walk: it saw only the assignments made so far."""
    facts.memo.pop(_MODEL_KEY, None)


class ExecutionModel:
    def __init__(self, ctx: "FileFacts") -> None:
        self.ctx = ctx
        self.parents: dict[int, ast.AST] = {}
        self.functions: list[ast.AST] = []
        self._calls: list[tuple[ast.Call, ast.AST]] = []  # (call, the callee expression or a callback name)
        self._defs: dict[str, list[ast.AST]] = {}
        self._methods: dict[str, list[ast.AST]] = {}  # method name -> defs in local classes
        self._sites: dict[int, list[ast.Call]] = {}
        self._training: dict[int, bool] = {}
        self._walk(ctx.tree)
        self.base = self._solve()

    # -- one walk ----------------------------------------------------------------------------
    def _walk(self, tree: ast.Module) -> None:
        parents = self.parents
        pending: list[ast.AST] = [tree]
        while pending:
            node = pending.pop()
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
                pending.append(child)
            if isinstance(node, FUNCTION_DEFS):
                self.functions.append(node)
                owner = parents.get(id(node))
                if isinstance(owner, ast.ClassDef):
                    self._methods.setdefault(node.name, []).append(node)
                else:
                    self._defs.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Call):
                self._calls.append((node, node.func))
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Name) or (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name)
                                                     and arg.value.id in ("self", "cls")):
                        self._calls.append((node, arg))  # a function handed over to be called

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        parent = self.parent(node)
        while parent is not None and not isinstance(parent, FUNCTION_DEFS):
            parent = self.parent(parent)
        return parent

    def owner_class(self, function: ast.AST) -> ast.ClassDef | None:
        parent = self.parent(function)
        return parent if isinstance(parent, ast.ClassDef) else None

    # -- function base contexts --------------------------------------------------------------
    def _intrinsic(self, function: ast.AST) -> str | None:
        from ptlint.semantics.compiled import (
            COMPILE,
            compile_targets,
            decorator_in,
            is_module_class,
        )

        name = function.name
        owner = self.owner_class(function)
        if owner is not None and name in ("forward", "backward") and (is_module_class(owner, self.ctx)
                                                                    or _is_autograd_function(owner, self.ctx)
                                                                    or _derived_elsewhere(owner, self.ctx)):
            return PER_STEP
        if any(decorator_in(d, self.ctx, COMPILE) for d in function.decorator_list):
            return PER_STEP
        names, methods = compile_targets(self.ctx)
        if name in (methods if owner is not None else names):
            return PER_STEP
        if name in STEP_HOOKS or name.endswith(STEP_HOOK_SUFFIXES) or _is_step_function(function):
            return PER_STEP
        for decorator in function.decorator_list:
            event = _event_context(decorator)
            if event is not None:
                return event
        return None

    def _solve(self) -> dict[int, str]:
        sites: dict[int, list[ast.Call]] = {}
        for call, callee in self._calls:
            for target in self._resolve(callee, call):
                if self.enclosing_function(call) is not target:  # recursion says nothing of callers
                    sites.setdefault(id(target), []).append(call)
        self._sites = sites
        base: dict[int, str] = {}
        fixed: set[int] = set()
        for function in self.functions:
            intrinsic = self._intrinsic(function)
            if intrinsic is not None:
                base[id(function)] = intrinsic
                fixed.add(id(function))
            elif sites.get(id(function)):
                base[id(function)] = ONCE  # the least context; callers raise it below
            else:
                once = function.name in ONCE_NAMES or ONCE_NAME.search(function.name)
                base[id(function)] = ONCE if once else CALLED
        self.base = base
        for _ in range(len(self.functions) + 1):  # contexts only rise: this ends
            changed = False
            for function in self.functions:
                key = id(function)
                if key in fixed or not sites.get(key):
                    continue
                rank = max(RANK[self._site_context(call, function)] for call in sites[key])
                if rank > RANK[base[key]]:
                    base[key] = next(c for c, r in RANK.items() if r == rank)
                    changed = True
            if not changed:
                break
        return base

    def _site_context(self, call: ast.Call, callee: ast.AST) -> str:
        where = self.where(call)
        return ONCE if where.cold else where.context

    def _resolve(self, callee: ast.AST, call: ast.Call) -> list[ast.AST]:
        """The functions of this module that `callee` (at `call`) may name."""
        if isinstance(callee, ast.Name):
            candidates = self._defs.get(callee.id, [])
            if len(candidates) <= 1:
                return candidates
            # the innermost definition whose scope holds the call
            scopes = []
            parent = self.parent(call)
            while parent is not None:
                scopes.append(parent)
                parent = self.parent(parent)
            for scope in scopes:
                for candidate in candidates:
                    if self.parent(candidate) is scope:
                        return [candidate]
            return []
        if isinstance(callee, ast.Attribute):
            methods = self._methods.get(callee.attr, [])
            if not methods or callee.attr.startswith("__"):
                return []
            if isinstance(callee.value, ast.Name) and callee.value.id in ("self", "cls"):
                function = self.enclosing_function(call)
                while function is not None and self.owner_class(function) is None:
                    function = self.enclosing_function(function)
                owner = self.owner_class(function) if function is not None else None
                if owner is None:
                    return []
                family = self._class_family(owner)
                return [m for m in methods if self.owner_class(m) in family]
            # `model.init_hidden(n)` where `model = Net(...)`, a class of this module
            if isinstance(callee.value, ast.Name):
                scope = self.enclosing_function(call) or self.ctx.tree
                classes = {v.func.id for v in self.ctx.assignments(callee.value.id, scope)
                           if isinstance(v, ast.Call) and isinstance(v.func, ast.Name)}
                return [m for m in methods if self.owner_class(m) is not None and any(
                    self.owner_class(m) in self._class_family(cls) for cls in self.local_classes(classes))]
        return []

    def local_classes(self, names: set[str]) -> list[ast.ClassDef]:
        from ptlint.semantics.compiled import local_classes

        local = local_classes(self.ctx)
        return [local[name] for name in names if name in local]

    def _class_family(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its bases defined in this file."""
        from ptlint.semantics.compiled import local_classes

        return class_family(cls, local_classes(self.ctx))

    # -- where a node runs -------------------------------------------------------------------
    def where(self, node: ast.AST) -> Where:
        cold = False
        loops: list[ast.AST] = []
        periodic = False
        gated = False  # under a periodic test, loop or not
        child, parent = node, self.parent(node)
        first_iter_of: ast.AST | None = None  # a comprehension whose first iterable holds the node
        function = None
        while parent is not None:
            if not loops and self._after_periodic_exit(child, parent):
                # `if not should_log: return` above: what follows runs on the logging steps only
                periodic = True
                gated = True
            if isinstance(parent, FUNCTION_DEFS):
                function = parent
                break
            if isinstance(parent, ast.ClassDef) and not _contains(parent.decorator_list, child) \
                    and not _contains(parent.bases, child):
                break  # a class body runs once, where the class is defined
            if isinstance(parent, ast.ExceptHandler) and _contains(parent.body, child):
                cold = True
            elif isinstance(parent, ast.If):
                branch = parent.body if _contains(parent.body, child) else \
                    parent.orelse if _contains(parent.orelse, child) else None
                if branch is not None:
                    cold = cold or is_cold_branch(branch)
                    if not loops and is_periodic_test(parent.test, self._innermost_loop(parent)) \
                            and not _steps_optimizer(branch):
                        periodic = True
                        gated = True
            elif isinstance(parent, ast.IfExp) and child is not parent.test:
                if not loops and is_periodic_test(parent.test, self._innermost_loop(parent)):
                    periodic = True
            elif isinstance(parent, ast.Raise) or (isinstance(parent, ast.Assert) and child is parent.msg):
                cold = True
            elif isinstance(parent, (ast.For, ast.AsyncFor)) and _contains(parent.body, child):
                loops.append(parent)
            elif isinstance(parent, ast.While) and (_contains(parent.body, child) or child is parent.test):
                loops.append(parent)
            elif isinstance(parent, ast.comprehension):
                if child is parent.iter:
                    first_iter_of = parent
            elif isinstance(parent, COMPREHENSIONS):
                if not (first_iter_of is not None and parent.generators[0] is first_iter_of):
                    loops.append(parent)
                first_iter_of = None
            child, parent = parent, self.parent(parent)
        base = self.base.get(id(function), ONCE) if function is not None else ONCE
        if not loops:
            # `if self.control.should_log:` in a per-step function runs on some steps only
            context = PER_OUTER if gated and base == PER_STEP else base
        elif base == PER_STEP:
            context = PER_STEP
        elif (base == ONCE and function is not None and _set_up_name(function.name)) \
                or all(_over_literal(loop) or (base in (ONCE, PER_OUTER) and _over_structure(loop)) for loop in loops):
            context = base  # a loop in `__init__`, over literal settings, or over a model's parts in set-up
        elif periodic or self._per_outer(loops[0]):
            context = PER_OUTER
        else:
            context = PER_STEP
        return Where(context, cold, loops[0] if loops else None, function)

    def _after_periodic_exit(self, child: ast.AST, parent: ast.AST) -> bool:
        """`child` follows, in its block, an early exit on the steps a periodic test leaves out
        (`if not should_log: return`, `if step % k != 0: continue`): it runs on the other steps
        only, like the body of `if should_log:`. Not when what follows steps the optimizer (`if
        (i + 1) % accum != 0: continue` then `opt.step()`: the training step itself)."""
        if not isinstance(child, ast.stmt):
            return False
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if not isinstance(block, list) or not _contains(block, child):
                continue
            index = next(i for i, statement in enumerate(block) if statement is child)
            for statement in block[:index]:
                if isinstance(statement, ast.If) and not statement.orelse \
                        and isinstance(statement.body[-1], (ast.Return, ast.Continue)) \
                        and _off_period(statement.test, self._innermost_loop(statement)):
                    return not _steps_optimizer(block[index:])
        return False

    def in_training_step(self, node: ast.AST) -> bool:
        """`node` runs as part of a training or evaluation step, visibly: in a loop (of its
        function) that backpropagates or steps an optimizer, or in a function that is a training
        step hook (`training_step`, `compute_loss`, a function that backpropagates, an Ignite
        iteration handler), or that such code calls (transitively, within this module)."""
        where = self.where(node)
        if where.cold or where.context != PER_STEP:
            return False
        parent = self.parent(node)
        while parent is not None and not isinstance(parent, FUNCTION_DEFS):
            if isinstance(parent, STATEMENT_LOOPS) and _body_trains(parent):
                return True
            parent = self.parent(parent)
        return parent is not None and self._training_function(parent, set())

    def _training_function(self, function: ast.AST, visiting: set[int]) -> bool:
        key = id(function)
        if key in self._training:
            return self._training[key]
        if key in visiting:
            return False
        visiting.add(key)
        name = function.name
        owner = self.owner_class(function)
        hook = (name in STEP_HOOKS or name.endswith(STEP_HOOK_SUFFIXES) or _is_step_function(function)
                or any(_event_context(d) == PER_STEP for d in function.decorator_list)) \
            and not (owner is not None and name == "forward")
        result = hook or any(self.in_training_step_site(call, visiting) for call in self._sites.get(key, []))
        self._training[key] = result
        return result

    def in_training_step_site(self, call: ast.Call, visiting: set[int]) -> bool:
        where = self.where(call)
        if where.cold or where.context != PER_STEP:
            return False
        parent = self.parent(call)
        while parent is not None and not isinstance(parent, FUNCTION_DEFS):
            if isinstance(parent, STATEMENT_LOOPS) and _body_trains(parent):
                return True
            parent = self.parent(parent)
        return parent is not None and self._training_function(parent, visiting)

    def _innermost_loop(self, node: ast.AST) -> ast.AST | None:
        parent = self.parent(node)
        while parent is not None and not isinstance(parent, (*STATEMENT_LOOPS, *FUNCTION_DEFS)):
            parent = self.parent(parent)
        return parent if isinstance(parent, STATEMENT_LOOPS) else None

    def _per_outer(self, loop: ast.AST) -> bool:
        """Code in `loop` outside its inner loops runs once per outer iteration: the loop is not
        itself over data, and holds an inner loop over data (a batch loop, not a loop over
        parameter groups or gradient-accumulation micro-steps)."""
        if not isinstance(loop, STATEMENT_LOOPS):
            return False
        if iterable_is_data(loop):
            return False  # `while step < max_steps:`, `for batch in loader:`: the step loop itself
        key = ("per-outer", id(loop))
        memo = self.ctx.memo
        if key not in memo:
            found = False
            pending = list(loop.body)
            while pending and not found:
                node = pending.pop()
                if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef, ast.Lambda)) or isinstance(node, ast.expr):
                    continue
                if isinstance(node, STATEMENT_LOOPS) and not is_sub_step_loop(node) \
                        and (iterable_is_data(node) or _body_trains(node)):
                    found = True
                pending.extend(ast.iter_child_nodes(node))
            memo[key] = found
        return memo[key]


def _is_step_function(function: ast.AST) -> bool:
    """A function that backpropagates outside any loop of its own is one training step, whatever
    its name (Ignite's `update(engine, batch)`, a `train_step` closure)."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef, ast.Lambda, *STATEMENT_LOOPS, *COMPREHENSIONS)):
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in ("backward", "manual_backward"):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def _derived_elsewhere(cls: ast.ClassDef, ctx: "FileFacts") -> bool:
    """A class derived from a class of another module (`class Encoder(PreTrainedModel)`,
    `GradientCheckpointingLayer`, `LightningModule`): its `forward` is a module's forward. A base
    defined in this file counts only if it is itself derived elsewhere; a plain local class does not."""
    from ptlint.semantics.compiled import local_classes
    local = local_classes(ctx)
    pending, seen = [cls], set()
    while pending:
        current = pending.pop()
        seen.add(current.name)
        for base in current.bases:
            if isinstance(base, ast.Name) and base.id in local:
                if base.id not in seen:
                    pending.append(local[base.id])
            elif (ctx.qualname(base) or getattr(base, "id", "")) not in _PLAIN_BASES:
                return True
    return False


_PLAIN_BASES = {"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol",
                "Exception", "NamedTuple", "typing.NamedTuple", "Enum", "enum.Enum"}


def _is_autograd_function(cls: ast.ClassDef, ctx: "FileFacts") -> bool:
    return any((ctx.qualname(base) or "").startswith("torch.autograd.") for base in cls.bases)


def _event_context(decorator: ast.AST) -> str | None:
    """Ignite's `@trainer.on(Events.ITERATION_COMPLETED)`: per step (every N: per outer
    iteration); `EPOCH_*`: per outer iteration; `STARTED` / `COMPLETED`: once."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "on" and decorator.args):
        return None
    event = decorator.args[0]
    every = isinstance(event, ast.Call) and bool(event.keywords)
    if isinstance(event, ast.Call):
        event = event.func
    name = event.attr if isinstance(event, ast.Attribute) else ""
    if name.startswith("ITERATION_") or name.startswith("GET_BATCH_"):
        return PER_OUTER if every else PER_STEP
    if name.startswith("EPOCH_"):
        return PER_OUTER
    if name in ("STARTED", "COMPLETED", "TERMINATE", "EXCEPTION_RAISED"):
        return ONCE
    return None
