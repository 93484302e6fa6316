"""Where code runs: the execution-context model of DESIGN.md ("Where code runs").

One analysis per file, shared by every rule, answers for any node:

- **per-step**: it runs again and again — in the body of a loop or comprehension, in `forward`
  of an `nn.Module`, in a function `torch.compile` traces, in a framework step hook
  (`training_step`, `*_batch_end`, an Ignite `ITERATION_COMPLETED` handler), or in a function of
  this module that per-step code calls (transitively);
- **per-outer-iteration**: in a loop, but visibly less often than its steps — outside an inner
  loop over a data source (once per epoch), or under a periodic test (`if step % 100 == 0`);
- **once**: module top level outside loops, `__init__` and other set-up (`setup`,
  `configure_*`, `init_weights`: loops there too; a call of the class reaches its `__init__`,
  which runs as often as those calls), and functions that only once-code of this module calls
  (`main()`); a loop over a literal list of settings repeats no step either, nor
  does one over a model's parts or a mapping (`.named_parameters()`, `.items()`) in once-code;
- **called**: any other function body: it runs as often as callers this file does not show.

Independently, a node is **cold** when it sits in a branch that only runs on misuse: an `except`
body, a branch that ends in `raise`, a branch that only warns or logs (and perhaps resets a
setting), the message of an `assert` or the expression of a `raise`.

The model is built lazily, once per file, after the traversal, and only for files where some rule
reported something (most files have no finding and never pay for it). It reads the file's parent
links and defs (`FileFacts.parent`, `function_defs`) and its call graph (ptlint.semantics.calls);
a small fixpoint then gives each function its base context: what it is (`intrinsic`: a
`forward`, a step hook, a compiled function, set-up), or else the most frequent context of the
calls that run it.

How often a function runs comes from one place, `ExecutionModel.caller_contexts(function)`: the
contexts of the calls known to run it. Today those are the calls of this file. This is the seam
for whole-program facts: a project model with callers in other files (each placed by its own
file's model) adds their contexts there, and every rule's notion of "per step" follows
(`in_training_step` walks up the same calls, through `callers`).

Also here, the questions about training code that the model and the rules share ("does this loop
train?", "does it run a model?"): see the section `does this code train?`.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
from typing import TYPE_CHECKING, Callable, NamedTuple

from ptlint.semantics.autograd import GradRegions
from ptlint.semantics.calls import CallSites
from ptlint.semantics.compiled import (
    COMPILE,
    compile_targets,
    decorator_in,
    is_module_class,
    local_classes,
)
from ptlint.semantics.names import IMPORTED
from ptlint.semantics.nodes import (  # noqa: F401 - def_key: where code runs names defs so
    COMPREHENSIONS,
    def_key,
    DEFINITIONS,
    FUNCTION_DEFS,
    STATEMENT_LOOPS,
    SELF_NAMES,
    block_of,
    body_nodes,
    callee_name,
    calls_in,
    dotted,
    name_words,
    own_attribute,
    walk,
)
from ptlint.semantics.values import (
    BACKWARD_METHODS,
    DEVICE_STEP_METHODS,
    MODEL_WORDS,
    TRAINING_CALLS,
    backward_name,
    is_module_call,
    steps_environment,
)

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

# Where a statement runs (DESIGN.md, "Where code runs").
PER_STEP = "per-step"
PER_OUTER = "per-outer-iteration"
ONCE = "once"
CALLED = "called"
EVERYWHERE = frozenset({PER_STEP, PER_OUTER, ONCE, CALLED})
RANK = {ONCE: 0, PER_OUTER: 1, CALLED: 2, PER_STEP: 3}

# Framework hooks that run once per batch (Lightning and friends).
STEP_HOOKS = {"training_step", "validation_step", "test_step", "predict_step", "training_step_end",
              "validation_step_end", "test_step_end", "on_before_backward", "on_after_backward",
              "on_before_optimizer_step", "on_before_zero_grad", "optimizer_step", "train_step", "eval_step",
              "compute_loss", "prediction_step"}  # the last two: Hugging Face Trainer overrides
STEP_HOOK_SUFFIXES = ("_batch_end", "_batch_start")
# Set-up that runs once per run (unless a per-step caller in this module says otherwise).
ONCE_NAMES = {"__init__", "__post_init__", "__new__", "__init_subclass__", "__set_name__", "main", "setup",
              "prepare_data", "reset_parameters", "setUp", "setUpClass"}
ONCE_NAME = re.compile(r"(^|_)(init|initiali[sz]e|configure|load|deploy|reparam\w*|fuse|export|convert)(_|$)")

# Words in a loop's iterable that say it walks over data (one step per element).
DATA_WORDS = {"loader", "dataloader", "dl", "batches", "batch", "dataset", "ds", "data", "iterator", "iter",
              "stream", "episodes", "episode", "rollout", "rollouts", "steps", "iters", "iterations", "samples",
              "minibatches", "microbatches", "queue", "prefetcher", "tqdm", "timesteps"}
# An inner loop over these splits one step into parts: the outer loop is still the step loop.
SUB_STEP_WORDS = {"accum", "accumulation", "accumulations", "micro", "microbatch", "microbatches", "micro_step",
                  "chunks", "grad_accum", "gradient_accumulation_steps", "accumulate"}
# Iterating these walks a model's structure or a mapping, not data.
STRUCTURE_METHODS = {"items", "keys", "values", "parameters", "named_parameters", "modules", "named_modules",
                     "children", "named_children", "buffers", "named_buffers", "state_dict", "param_groups"}
# Methods of a logger (`logger.warning(...)`, `logging.info(...)`).
LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log",
               "warning_once", "info_once"}
# What a warning branch calls on something named like a logger or a warner.
WARNING_METHODS = LOG_METHODS | {"warn_once", "print"}


class Via(NamedTuple):
    """One link of the evidence that places code: a line and why it runs where it runs
    ("for batch in loader", "calls reduce_metrics")."""

    path: str
    line: int
    why: str


class Where(NamedTuple):
    context: str  # PER_STEP, PER_OUTER, ONCE or CALLED
    cold: bool  # in a branch that only runs on misuse
    loop: ast.AST | None  # the innermost loop (or comprehension) around the node in its function
    function: ast.AST | None  # the innermost def around the node (lambdas are transparent)
    # The evidence for `context`, outermost first: the loop or entry that repeats (or runs once),
    # then each call on the way to the node's function ([] where the node's own lines say it all).
    via: tuple[Via, ...] = ()


class Placement(NamedTuple):
    """Where a node stands in its function, before the function's own context is known: what
    `context_for` needs to place it for any base context of its function (the project model
    stores this for every call that crosses files)."""

    cold: bool
    loops: tuple  # the loops and comprehensions around the node in its function, innermost first
    gated: bool  # under a periodic test (or after an early exit on the other steps), no loop between
    periodic: bool
    function: ast.AST | None
    per_outer: bool  # the innermost loop runs once per outer iteration (an epoch loop's own code)
    set_up: bool  # the function is named for set-up (`init_weights`, `load_state`)
    literal: bool  # every loop walks a literal display of constants (or a task's classes)
    structure: bool  # every loop walks a literal, a model's parts or a mapping
    after_model_loop: bool = False  # no loop around it, after a loop of its function that runs a model
    # no loop around it, before a loop that runs a model with gradients off (a generation's set-up)
    before_generation_loop: bool = False
    # under a lazy set-up guard: `if self.norm < 0: self.norm = ...` runs until the attribute is set
    first_only: bool = False
    # every loop around it is a comprehension that builds a collection, over no data and running no
    # model (`[torch.randn(1, 3, 640, 640).to(device) for i in range(100)]`)
    builds: bool = False
    # the outermost loop around it is one pass over data that trains nothing, after a training loop
    # of the same code (a script's test pass after training): in once-code, it runs once
    final_pass: bool = False
    # the outermost loop around it is one pass over data that trains nothing (an evaluation pass) in
    # a program that trains: in once-code (a script's test pass, an `evaluate()` only `main()`
    # calls), it runs once per run of the program
    data_pass: bool = False
    # every loop around it walks a literal, a task's classes or a constant range of a few dozen
    # iterations (`for j in range(20):`): in once-code, a fixed handful of runs
    few: bool = False


def context_for(placement: Placement, base: str) -> str:
    """Where a node placed so runs when its function runs at `base`."""
    if placement.first_only:
        return ONCE  # the first call sets what the guard tests
    if not placement.loops:
        # `if self.control.should_log:` in a per-step function runs on some steps only, and so
        # does what follows a loop of many model calls (a sampling loop) in one call of it; what a
        # generation sets up before its loop runs once per generation, however often it is called
        if ((placement.gated or placement.after_model_loop) and base == PER_STEP) \
                or (placement.before_generation_loop and base in (PER_STEP, CALLED)):
            return PER_OUTER
        return base
    if base == PER_STEP:
        # the loops below a periodic test are small (over a dict of losses): on some steps only
        return PER_OUTER if placement.gated else PER_STEP
    if (base == ONCE and (placement.set_up or placement.builds or placement.final_pass or placement.data_pass
                          or placement.few)) \
            or placement.literal \
            or (base in (ONCE, PER_OUTER) and placement.structure):
        return base  # a loop in `__init__`, over literal settings, or over a model's parts in set-up
    if placement.periodic or placement.per_outer:
        return PER_OUTER
    return PER_STEP


CONTEXTS = (ONCE, PER_OUTER, CALLED, PER_STEP)  # the order of `transfer`'s answers
MAX_VIA = 8  # links of evidence kept, the innermost: enough to follow, short enough to read


def transfer(placement: Placement) -> str:
    """`context_for` for each base of CONTEXTS, as one letter each ("o", "e", "c", "s"): what a
    call placed so passes on to the function it calls."""
    return "".join(LETTER[context_for(placement, base)] for base in CONTEXTS)


LETTER = {ONCE: "o", PER_OUTER: "e", CALLED: "c", PER_STEP: "s"}
FROM_LETTER = {letter: context for context, letter in LETTER.items()}


def _clip(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _target(target: ast.AST) -> str:
    """A loop's target as it is usually written: `x, y`, not `(x, y)`."""
    if isinstance(target, ast.Tuple) and target.elts:
        return ", ".join(ast.unparse(element) for element in target.elts)
    return ast.unparse(target)


def loop_why(loop: ast.AST) -> str:
    """The header of a loop, as evidence that what is in it repeats: `for x, y in loader`."""
    try:
        if isinstance(loop, (ast.For, ast.AsyncFor)):
            return _clip(f"for {_target(loop.target)} in {ast.unparse(loop.iter)}")
        if isinstance(loop, ast.While):
            return _clip(f"while {ast.unparse(loop.test)}")
        if isinstance(loop, COMPREHENSIONS):
            generator = loop.generators[0]
            return _clip(f"for {_target(generator.target)} in {ast.unparse(generator.iter)} (comprehension)")
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a tree ast.parse made
        pass
    return "a loop"


def step_loop(loops: tuple) -> ast.AST:
    """The loop to cite as the one that repeats a node: the innermost that walks data or runs a
    training step, else the innermost."""
    for loop in loops:
        if (iterable_is_data(loop) or runs_training_step(loop)) and not is_sub_step_loop(loop):
            return loop
    for loop in loops:
        if iterable_is_data(loop) or runs_training_step(loop):
            return loop
    return loops[0]


def _data_words(words: set[str]) -> bool:
    return bool(words & DATA_WORDS) or any("loader" in word for word in words)


def iterable_is_data(loop: ast.AST) -> bool:
    """The loop's iterable names a data source: `train_loader`, `enumerate(tqdm(batches))`,
    `range(max_steps)`; not `model.parameters()` or `d.items()`. A `while` loop's test names
    its step counter (`while step < max_steps:`)."""
    if isinstance(loop, ast.While):
        return _data_words(name_words(loop.test))
    if isinstance(loop, COMPREHENSIONS):
        source = loop.generators[0].iter
    else:
        source = loop.iter
    for child in ast.walk(source):
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                and child.func.attr in STRUCTURE_METHODS:
            return False
    return _data_words(name_words(source))


def _walks_a_dataset(loop: ast.AST) -> bool:
    """A `for` over a data source itself (`test_loader`, `enumerate(tqdm(val_batches))`), not over
    a step count (`range(steps)`: a rollout or a sampling loop, steps of the run itself)."""
    return isinstance(loop, (ast.For, ast.AsyncFor)) and iterable_is_data(loop) and not any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
        for node in ast.walk(loop.iter))


def is_set_up_name(name: str) -> bool:
    return name in ONCE_NAMES and name != "main" or bool(ONCE_NAME.search(name))


def _lazy_set_up(branch: ast.If | ast.While, values: Callable[[str], list] | None,
                 set_by: Callable[[str], set[str]]) -> bool:
    """`if self.z < 0: self.z = ...`, `if self.cache is None: self.cache = ...`, `if not self.ready:`,
    `if not len(self.queue): self.queue = ...`, `z = self.params[2].item(); if z < 0:
    self.params[2] = ...`, `if not isinstance(self.net, Wrapper): self.net = Wrapper(self.net)`:
    the branch sets an attribute of `self` (or `cls`), or an element of one, that its test compares
    with a sentinel constant or asks the type, length or presence of, so it runs until the first
    time it has (not a running best, `if loss < self.best:`); and `if key not in cache:
    cache[key] = ...`, once per key. `values(name)`: what a local name of the function was
    assigned.
    Also a branch (or a `while` loop) that hands the work to a method of its own class setting
    what the test asks (`set_by(name)`: the attributes the method `name` sets): `if
    self.l_kernel.item() == 0: self._setup_C(L)`, and a cache grown on demand, `if seq_len >
    self.max_cached: self._build_cache(seq_len)`, `while L > self.l_kernel: self._setup_C(L)`:
    it runs the first time, and again only when the need grows."""
    targets = [target for statement in branch.body for target in (
        statement.targets if isinstance(statement, ast.Assign) else
        [statement.target] if isinstance(statement, ast.AnnAssign) else [])]
    if _fills_a_cache(branch.test, targets):
        return True
    assigned = {_held_attribute(target) for target in targets} - {None}
    names = {target.id for target in targets if isinstance(target, ast.Name)}
    delegated = _set_by_own_methods(branch.body, set_by) - assigned - {None}
    if not assigned and not names and not delegated:  # the usual branch: the test's locals need not be looked up
        return False
    if delegated and any(_tested_attribute(part, values) in delegated
                         for part in _sentinel_tests(branch.test) + _size_tests(branch.test)):
        return True
    return isinstance(branch, ast.If) and any(
        _tested_attribute(part, values) in assigned or isinstance(part, ast.Name) and part.id in names
        and _first_value_only(part.id, branch, values) for part in _sentinel_tests(branch.test))


def _attributes_set(method: ast.AST) -> set[str]:
    """The attributes of `self` a method's own code sets: `self.x = ...`, `self.x += ...`,
    `self.register_buffer("x", ...)`."""
    out = set()
    for node in body_nodes(method.body):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id in SELF_NAMES:
            out.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "register_buffer" and node.args and isinstance(node.args[0], ast.Constant):
            out.add(node.args[0].value)
    return out


def _set_by_own_methods(body: list[ast.stmt], set_by: Callable[[str], set[str]]) -> set[str]:
    """The attributes the statements `self.method(...)` of `body` set through those methods."""
    out: set[str] = set()
    for statement in body:
        call = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                and isinstance(call.func.value, ast.Name) and call.func.value.id in SELF_NAMES:
            out |= set_by(call.func.attr)
    return out


def _size_tests(test: ast.AST) -> list[ast.AST]:
    """Both sides of the order comparisons in a test (`seq_len > self.max_cached`), through `and` /
    `or`: a size the test holds against what is needed."""
    if isinstance(test, ast.BoolOp):
        return [part for value in test.values for part in _size_tests(value)]
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Gt, ast.GtE, ast.Lt, ast.LtE)):
        return [test.left, test.comparators[0]]
    return []


def _fills_a_cache(test: ast.AST, targets: list[ast.AST]) -> bool:
    """`if key not in cache: cache[key] = torch.hann_window(n).to(device)`: the branch fills a
    cache, so it runs once for each key."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn)):
        return False
    key, cache = ast.dump(test.left), ast.dump(test.comparators[0])
    return any(isinstance(target, ast.Subscript) and ast.dump(target.value) == cache and ast.dump(target.slice) == key
               for target in targets)


def _first_value_only(name: str, branch: ast.If, values: Callable[[str], list] | None) -> bool:
    """The local `name` is given a constant once, before `branch` (`loss_ema = None` before the
    loop, then `if loss_ema is None: loss_ema = loss.item()`): the branch that sets it runs the
    first time only."""
    constants = [v for v in values(name) if isinstance(v, ast.Constant)] if values is not None else []
    return len(constants) == 1 and constants[0].lineno < branch.lineno


def _sentinel_tests(test: ast.AST) -> list[ast.AST]:
    """The operands a test compares with a constant (`x is None`, `x < 0`, `x == -1`) or negates
    (`not x`), through `and` / `or`."""
    if isinstance(test, ast.BoolOp):
        return [part for value in test.values for part in _sentinel_tests(value)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return [test.operand]
    if isinstance(test, ast.Compare) and len(test.comparators) == 1:
        other = test.comparators[0]
        if isinstance(other, ast.UnaryOp):  # `-1`
            other = other.operand
        if isinstance(other, ast.Constant):
            left = test.left
            if isinstance(left, ast.Call) and isinstance(left.func, ast.Name) and left.func.id == "len" \
                    and not _empty_test(test.ops[0], other.value):
                return []  # `len(self.queue) > 0`: runs whenever it holds something
            return [left]
    return []


def _empty_test(op: ast.cmpop, value: object) -> bool:
    """`== 0`, `< 1`, `<= 0`: a length compared so that only an empty container passes."""
    return isinstance(op, ast.Eq) and value == 0 or isinstance(op, ast.Lt) and value == 1 \
        or isinstance(op, ast.LtE) and value == 0


def _tested_attribute(node: ast.AST, values: Callable[[str], list] | None = None) -> str | None:
    """`self.x` -> "x"; also what `isinstance(self.x, ...)`, `len(self.x)` and `hasattr(self, "x")`
    ask about (`if not isinstance(self.net, nn.DataParallel): self.net = nn.DataParallel(self.net)`),
    and a local name every assignment of which reads one (`z = self.params[2].item()`)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id == "len" and len(node.args) == 1:
            node = node.args[0]
        elif node.func.id == "isinstance" and len(node.args) == 2:
            node = node.args[0]
        elif node.func.id == "hasattr" and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in SELF_NAMES:
            return node.args[1].value if isinstance(node.args[1].value, str) else None
    if isinstance(node, ast.Name) and values is not None:
        held = {_held_attribute(value) for value in values(node.id)}
        return held.pop() if len(held) == 1 else None  # every value of the name reads one attribute
    return _held_attribute(node)


def _assigned(scope: ast.AST, name: str) -> list[ast.expr]:
    """The values `name = ...` assigns in the body of `scope` (not in nested definitions)."""
    body = scope.body if isinstance(scope, (*FUNCTION_DEFS, ast.Module)) else []
    return [statement.value for statement in body_nodes(body) if isinstance(statement, ast.Assign)
            and any(isinstance(target, ast.Name) and target.id == name for target in statement.targets)]


# methods that read or copy a value (`self.x[2].clone().item()` is an element of `self.x`)
VALUE_READS = {"item", "tolist", "clone", "detach", "cpu", "float"}


def _held_attribute(node: ast.AST) -> str | None:
    """The attribute of `self` that `node` is or reads one element or scalar of: "x" for `self.x`,
    `self.x[2]`, `self.x[2].clone().item()`."""
    while isinstance(node, ast.Subscript) or isinstance(node, ast.Call) and not node.args and not node.keywords \
            and isinstance(node.func, ast.Attribute) and node.func.attr in VALUE_READS:
        node = node.value if isinstance(node, ast.Subscript) else node.func.value
    return own_attribute(node)


def _over_literal(loop: ast.AST) -> bool:
    """`for name in ("train", "val"):`: a loop over a literal display of constants."""
    source = loop.generators[0].iter if isinstance(loop, COMPREHENSIONS) else getattr(loop, "iter", None)
    return isinstance(source, (ast.List, ast.Tuple, ast.Set)) and all(
        isinstance(element, ast.Constant) for element in source.elts)


# Iterations of a loop over a constant range that, in code run once, add up to a few runs of its
# body: `for j in range(20): img = sample(generator)` in a sampling script (not a step loop)
FEW_CONSTANT_ITERATIONS = 32


def _range_walked(loop: ast.AST) -> ast.Call | None:
    """The `range(...)` call a `for` loop walks (`for i in range(n):`), None for any other iterable."""
    source = getattr(loop, "iter", None)
    return source if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) \
        and source.func.id == "range" else None


def _few_iterations(loop: ast.AST, scope: ast.AST) -> bool:
    """`for i in range(10):`, `for j in range(1, 21):`, `steps = 10` then `for step in
    range(steps):`: a loop over a constant range of a few dozen iterations at most (its bounds
    literals, or names `scope` binds once, to an integer) that runs no training step; what runs
    in it runs as often as the code around it, a fixed handful of times more. Not a loop of epochs
    (`for epoch in range(10):`)."""
    known = getattr(loop, "_ptlint_few", None)  # asked for every node placed in the loop: once per loop
    if known is None:
        known = loop._ptlint_few = _constant_range_of_few(loop, scope)
    return known


def _constant_range_of_few(loop: ast.AST, scope: ast.AST) -> bool:
    source = _range_walked(loop)
    if source is None or not 1 <= len(source.args) <= 3 or source.keywords:
        return False
    bounds = [_constant_int(argument, scope) for argument in source.args]
    if None in bounds:
        return False
    try:
        count = len(range(*bounds))
    except ValueError:  # a zero step
        return False
    # (`range(steps)` names no data where `steps` is 10); a loop that trains stays a loop of steps,
    # however short: what a training loop does each step is what the run does
    return count <= FEW_CONSTANT_ITERATIONS and not counts_epochs(loop) and not runs_training_step(loop)


def _constant_int(node: ast.expr, scope: ast.AST) -> int | None:
    """The integer `node` is: a literal, or a name `scope` binds once, to a literal (`steps = 10`)."""
    if isinstance(node, ast.Name):
        node = _only_value(scope, node.id)
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _only_value(scope: ast.AST, name: str) -> ast.expr | None:
    """The value `name = ...` gives `name` where that is the one binding of `name` in `scope`'s
    own code (no other assignment, loop target or `+=`); None otherwise."""
    body = scope.body if isinstance(scope, (*FUNCTION_DEFS, ast.Module)) else []
    stores, value = 0, None
    for node in body_nodes(body):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            stores += 1
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value
    return value if stores == 1 else None


# The size of one batch: `range(batch_size)` walks the samples of one batch, not the data.
BATCH_SIZE_WORDS = {"batch_size", "batchsize", "bs"}


def _over_one_batch(loop: ast.AST) -> bool:
    """`for i in range(batch_size):` (`range(args.bs)`): a loop over the samples of one batch (a
    per-image clip of boxes), which a step runs; a def holding it is no pass over the data."""
    source = _range_walked(loop)
    return source is not None and bool(source.args) and bool(
        name_words(source.args[-1] if len(source.args) < 3 else source.args[1]) & BATCH_SIZE_WORDS)


def _stops_after_few(loop: ast.AST) -> bool:
    """`for bib in range(len(d_en)): ... if bib >= 5: break`: a `for` whose own statements leave
    it once its counter (the target, or `enumerate`'s index) reaches a small constant. Its body
    runs a few times per run of the code around it, however long the iterable."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    target, source = loop.target, loop.iter
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "enumerate" \
            and isinstance(target, ast.Tuple) and target.elts:
        target = target.elts[0]
    if not isinstance(target, ast.Name):
        return False
    for statement in body_nodes(loop.body, stop_at=(*DEFINITIONS, *STATEMENT_LOOPS, *COMPREHENSIONS)):
        if isinstance(statement, ast.If) and statement.body and isinstance(statement.body[-1], ast.Break):
            test = statement.test  # (a `break` of this loop: no loop between them is entered)
            if isinstance(test, ast.Compare) and len(test.ops) == 1 \
                    and isinstance(test.ops[0], (ast.Gt, ast.GtE, ast.Eq)) \
                    and isinstance(test.left, ast.Name) and test.left.id == target.id \
                    and isinstance(test.comparators[0], ast.Constant) and type(test.comparators[0].value) is int \
                    and test.comparators[0].value <= FEW_ITERATIONS:
                return True
    return False


# Words of a count or a list of a task's classes: `range(n_classes)`, `enumerate(class_names)`.
CLASS_WORDS = {"classes", "class", "categories", "category"}


def _over_classes(loop: ast.AST) -> bool:
    """`for c in range(1, n_classes):`, `for i, name in enumerate(class_names):`: a loop over a
    task's classes (a per-class metric), a few dozen iterations that repeat no step: what runs
    in it runs as often as the code around it."""
    source = getattr(loop, "iter", None)
    return isinstance(source, ast.Call) and isinstance(source.func, ast.Name) \
        and source.func.id in ("range", "enumerate") and bool(name_words(source) & CLASS_WORDS) \
        and not iterable_is_data(loop)


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


def _past_structure(loops: list[ast.AST]) -> ast.AST:
    """The innermost of `loops` (innermost first) that is not over a mapping, a model's parts or a
    literal: `[(v / n).item() for v in results.values()]` after an epoch's data loops runs once
    per epoch for each of a few metrics, as the epoch loop's own code does."""
    index = 0
    while index < len(loops) - 1 and (_over_structure(loops[index]) and not iterable_is_data(loops[index])
                                      or _over_literal(loops[index])):
        index += 1
    return loops[index]


def is_sub_step_loop(loop: ast.AST) -> bool:
    """A loop over the parts of one step, by the words of its iterable (`range(accum_steps)`,
    `range(config["num_accumulations"])`) or of its target (`for micro_step in ...`)."""
    source = loop.test if isinstance(loop, ast.While) else getattr(loop, "iter", None)
    if source is None:
        return False
    words = set(name_words(source))
    target = getattr(loop, "target", None)
    if isinstance(target, ast.Name):
        words.update(target.id.lower().split("_"))
    words.update(part for node in ast.walk(source) if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 for part in node.value.lower().split("_"))
    return bool(words & SUB_STEP_WORDS)


# -- does this code train? -----------------------------------------------------------------------
# Questions that sound alike and are not, each answered here once:
# - `backpropagates(loop)`: the loop's body calls `.backward()` on a loss it names;
# - `runs_training_step(loop)`: the loop's body runs a step of training or of an environment;
# - `is_step_function(function)`: the function backpropagates outside any loop of its own;
# - `steps_optimizer(block)`: a branch steps the optimizer (gradient accumulation's step);
# - `runs_model(node, ctx)`: the code under a loop visibly runs a model every time;
# - `may_hold_training_step(text)`: a file's text could hold a training step at all;
# - `in_model_loop(ctx)`, `may_be_step(ctx)`: the same, where the traversal is.

OPTIMIZER_NAMES = {"optimizer", "optim", "opt", "scaler"}  # words of a receiver whose `.step()` steps one
# receivers whose `.step()` is a step of training or of an environment
# (not a scheduler's: an epoch loop steps one once per epoch)
STEPPER_NAMES = OPTIMIZER_NAMES | {"env", "envs", "trainer"}
GENERIC_ITERATOR_WORDS = {"iter", "iters", "iterator", "iterators", "it"}
# Text without any of these holds no training step (`in_training_step` is False everywhere): no
# backward, zero_grad, optimizer or environment step, `next(it)`, step hook or Ignite event.
TRAINING_TEXT = re.compile(r"backward|zero_grad|step\s*\(|_step_end|next\s*\(|compute_loss|_batch_(end|start)"
                           r"|ITERATION_|GET_BATCH_")


def may_hold_training_step(text: str) -> bool:
    return TRAINING_TEXT.search(text) is not None


def in_model_loop(ctx: "FileFacts") -> bool:
    """A loop around where the traversal is, in its function, runs a model every iteration."""
    return any(runs_model(loop, ctx) for loop in ctx.loops)


def may_be_step(ctx: "FileFacts") -> bool:
    """Where the traversal is may run once per step with device work queued: in a loop that runs
    a model (`in_model_loop`), or in a file that may hold a training step at all, which
    `ExecutionModel.in_training_step` decides after the traversal. A cheap first question."""
    key = "may-hold-training-step"
    if key not in ctx.memo:
        project = getattr(ctx, "project", None)  # defs of this file that steps elsewhere call
        ctx.memo[key] = may_hold_training_step(ctx.text) or (project is not None and bool(
            project.training or project.step_loops or (project.program_trains and "forward" in ctx.text)))
    return ctx.memo[key] or in_model_loop(ctx)


def backpropagates(loop: ast.AST) -> bool:
    """The loop's body calls `.backward()` on a loss it names: `loss.backward()`,
    `scaler.scale(loss).backward()`, `accelerator.backward(loss)` (ptlint.semantics.values.backward_name)."""
    body = getattr(loop, "body", None)
    return isinstance(body, list) and any(backward_name(call) is not None for call in calls_in(body, stop_at=()))


def runs_training_step(loop: ast.AST) -> bool:
    """The loop's body runs a training or environment step: `.backward()`, `zero_grad()`,
    `optimizer.step()`, `env.step(a)`, `next(it)`, a method named for a whole step
    (`model.optimize_parameters()`, `STEP_METHODS`) (not in functions defined there)."""
    if not isinstance(loop, STATEMENT_LOOPS):
        return False
    known = getattr(loop, "_ptlint_trains", None)  # asked of every call in the loop: once per loop
    if known is None:
        known = loop._ptlint_trains = _runs_training_step(loop)
    return known


# Methods that run a whole training step by their name (`model.optimize_parameters()` of the
# pix2pix / CycleGAN family, `agent.update_parameters(memory, batch_size, updates)`,
# `trainer.train_step(batch)`): a loop that calls one trains, whatever the callee's file shows.
STEP_METHODS = {"optimize_parameters", "update_parameters", "train_step", "training_step", "train_on_batch"}


def _runs_training_step(loop: ast.AST) -> bool:
    for call in calls_in(loop.body):
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in TRAINING_CALLS or func.attr in STEP_METHODS:
                return True
            if func.attr == "step" and name_words(func.value) & STEPPER_NAMES:
                return True
        elif isinstance(func, ast.Name) and func.id == "next" and _next_batch(call):
            return True
    return False


def is_training_hook(function: ast.AST, ctx: "FileFacts") -> bool:
    """A def that is a training step by itself: a step hook (`training_step`, `*_batch_end`), a
    function that backpropagates outside any loop of its own, an Ignite iteration handler; not a
    module's `forward`."""
    name = function.name
    owner = ctx.owner_class(function)
    return (name in STEP_HOOKS or name.endswith(STEP_HOOK_SUFFIXES)
            or "backward" in ctx.text and is_step_function(function)  # (`manual_backward` holds it too)
            or any(event_context(d) == PER_STEP for d in function.decorator_list)) \
        and not (owner is not None and name == "forward")


EPOCH_WORDS = {"epoch", "ep", "epochs"}  # a loop target that counts epochs


def innermost_loop(node: ast.AST, ctx: "FileFacts", scope: tuple[type, ...] = FUNCTION_DEFS) -> ast.AST | None:
    """The innermost statement loop around `node` in its function (`scope`: the definitions it
    does not look past), None where there is none."""
    parent = ctx.parent(node)
    while parent is not None and not isinstance(parent, (*STATEMENT_LOOPS, *scope)):
        parent = ctx.parent(parent)
    return parent if isinstance(parent, STATEMENT_LOOPS) else None


def counts_epochs(loop: ast.AST | None) -> bool:
    """`for epoch in range(args.epochs):`, `for ep in tqdm(...)`: a loop whose target counts epochs."""
    target = getattr(loop, "target", None)
    return isinstance(target, ast.Name) and bool(set(target.id.lower().split("_")) & EPOCH_WORDS)


# A loop's own statements: not those of loops, comprehensions or definitions inside it.
_OWN_STATEMENTS = (*DEFINITIONS, *STATEMENT_LOOPS, *COMPREHENSIONS)


def steps_environment_itself(loop: ast.AST) -> bool:
    """The loop's own statements step an environment (`env.step(a)`): it is the loop of
    environment steps, whatever else it calls (an evaluation rollout every 5,000 steps)."""
    if not isinstance(loop, STATEMENT_LOOPS):
        return False
    known = getattr(loop, "_ptlint_steps_env", None)  # asked for every call in the loop: once per loop
    if known is None:
        known = loop._ptlint_steps_env = any(
            steps_environment(call) for call in calls_in(loop.body, stop_at=_OWN_STATEMENTS))
    return known


def calls_every_iteration(loop: ast.AST) -> list[ast.Call]:
    """The calls the loop makes on each iteration: not under an `if` (a periodic evaluation), in
    an inner loop or in a definition."""
    return list(calls_in(loop.body, stop_at=(*_OWN_STATEMENTS, ast.If)))


def trains_directly(loop: ast.AST) -> bool:
    """The loop's own statements (not those of loops inside it) backpropagate, zero gradients or
    step an optimizer: it is the training step's loop."""
    for call in calls_in(loop.body, stop_at=_OWN_STATEMENTS):
        func = call.func
        if isinstance(func, ast.Attribute) and (func.attr in TRAINING_CALLS or (
                func.attr == "step" and name_words(func.value) & OPTIMIZER_NAMES)):
            return True
        if isinstance(call.func, ast.Attribute) and backward_name(call) is not None:
            return True
    return False


def is_step_function(function: ast.AST) -> bool:
    """A function that backpropagates outside any loop of its own (or only in a loop over
    micro-batches: `for i in range(num_accumulations): loss.backward()`) is one training step,
    whatever its name (Ignite's `update(engine, batch)`, a `train_step` closure)."""
    known = getattr(function, "_ptlint_step", None)  # asked by the model and the summary: once per def
    if known is None:
        known = function._ptlint_step = _backpropagates_in(function.body)
    return known


def _backpropagates_in(block: list[ast.stmt]) -> bool:
    """`.backward()` in `block`, outside its loops but those over micro-batches."""
    for node in body_nodes(block, stop_at=(*DEFINITIONS, *STATEMENT_LOOPS, *COMPREHENSIONS)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in BACKWARD_METHODS:
            return True
        if isinstance(node, STATEMENT_LOOPS) and is_sub_step_loop(node) and _backpropagates_in(node.body):
            return True
    return False


def steps_optimizer(block: list[ast.stmt]) -> bool:
    """`if (i + 1) % accumulation == 0: optimizer.step(); ...`: a branch that backpropagates,
    zeroes gradients or steps the optimizer is the training step itself (gradient accumulation),
    not a logging interval."""
    return any(isinstance(call.func, ast.Attribute) and (
        call.func.attr in ("backward", "zero_grad")
        or call.func.attr == "step" and name_words(call.func.value) & OPTIMIZER_NAMES)
        for call in calls_in(block, stop_at=()))


# Callees whose names say they run a model or a loss module: `model(x)`, `self.net(x)`, `policy(obs)`.
# Words of a test that holds on the main process only (`if self.local_rank == 0:`, `if
# is_main_process():`): what it guards runs every iteration there.
MAIN_PROCESS_WORDS = {"master", "main", "rank", "is_main_process", "is_master", "local_rank"}
RUNS_MODEL_WORDS = MODEL_WORDS | {"head", "agent", "predictor", "ema_model", "forward", "criterion", "loss_fn",
                                  "loss_func", "lossfn"}


def _generates(statement: ast.AST, ctx: "FileFacts") -> bool:
    """A statement loop that runs a model many times without training (sampling, decoding)."""
    return isinstance(statement, STATEMENT_LOOPS) and runs_model(statement, ctx) \
        and not backpropagates(statement) and not runs_training_step(statement)


def _takes_gradients(loop: ast.AST) -> bool:
    """The loop computes gradients with autograd on again (`with torch.enable_grad():`,
    `torch.autograd.grad(loss, [x])`): an adversarial attack's steps, not a generation."""
    return any((dotted(call.func) or "").endswith(("autograd.grad", "enable_grad")) for call in calls_in(loop.body))


def _feeds_back(loop: ast.AST, ctx: "FileFacts") -> bool:
    """The loop feeds a model's output into its next iteration (`x, h = cell(x, h)`, `x =
    model(x, t)`): a name read in the body before the body binds it, and bound there to what a
    model call returns. One sample or denoising step after another, not a pass over a few inputs
    (`for clip in clips: keys.append(encoder(clip))`)."""
    nodes = body_nodes(loop.body, stop_at=DEFINITIONS)
    bound_per_iteration = {n.id for node in [loop, *nodes] if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension))
                           for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    outputs: set[str] = set()
    first: dict[str, tuple[tuple[int, int], bool]] = {}  # name -> (position, read there)
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                isinstance(call, ast.Call) and _runs_model_call(call, ctx) for call in ast.walk(node.value)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            outputs.update(n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
        if isinstance(node, ast.Name) and node.id not in bound_per_iteration:
            read = isinstance(node.ctx, ast.Load)
            statement = node
            while not read and statement is not None and not isinstance(statement, ast.stmt):
                statement = ctx.parent(statement)
            at = (node.lineno, node.col_offset) if read or statement is None else \
                (statement.end_lineno, statement.end_col_offset)  # a binding takes effect after its value
            if node.id not in first or at < first[node.id][0]:
                first[node.id] = (at, read)
    return any(first.get(name, ((0, 0), False))[1] for name in outputs)


def runs_model(node: ast.AST, ctx: "FileFacts") -> bool:
    """The code under `node` (a loop, a comprehension) visibly runs a model each time: it calls a
    model, a submodule or a loss module, backpropagates, steps an optimizer, or generates. A loop
    that only reads results back pays for the wait once, at its first read; one that runs the
    model queues a step's kernels each time, and a read there stalls the device every time."""
    key = ("device-work", id(node))
    if key not in ctx.memo:
        if isinstance(node, COMPREHENSIONS):  # what runs per element: not the first iterable
            parts = [part for part in (getattr(node, "elt", None), getattr(node, "key", None),
                                       getattr(node, "value", None)) if part is not None]
            parts += [c for g in node.generators for c in g.ifs] + [g.iter for g in node.generators[1:]]
        else:  # a loop's body (and a `while` loop's test): its iterable is evaluated once
            parts = list(getattr(node, "body", [])) + ([node.test] if isinstance(node, ast.While) else [])
        ctx.memo[key] = any(_runs_model_call(call, ctx) for call in calls_in(parts))
    return ctx.memo[key]


def _runs_model_call(call: ast.Call, ctx: "FileFacts") -> bool:
    word = callee_name(call.func)
    return word in RUNS_MODEL_WORDS or any(part in RUNS_MODEL_WORDS for part in word.split("_")) \
        or (isinstance(call.func, ast.Attribute) and word in DEVICE_STEP_METHODS) or is_module_call(call, ctx)


def _next_batch(call: ast.Call) -> bool:
    """`next(it)`, `next(self.train_iter)`, `next(iter(loader))`: the next batch of a step loop.
    An iterator picked out of a container must name data (`next(loader_iters[task])`), not only
    be an iterator (`next(grid_iters[kind])` walks image sizes in a position-id helper)."""
    if not call.args:
        return False
    source = call.args[0]
    if isinstance(source, ast.Name) or isinstance(source, ast.Attribute) and not isinstance(source.value, ast.Subscript):
        return True
    words = name_words(source) - GENERIC_ITERATOR_WORDS
    return _data_words(words) or "train" in words


# Settings that say a branch runs on some steps only: `if self.control.should_log:`,
# `if step >= next_eval_step:` with `eval_interval`, `log_every`, `print_freq`.
PERIODIC_WORDS = {"interval", "every", "freq", "frequency", "period", "periodic"}
PERIODIC_FLAGS = {"should_log", "should_evaluate", "should_save", "do_log", "log_now", "is_log_step",
                  "should_print", "should_checkpoint"}
PERIODIC_FLAG_PREFIXES = tuple(f"{flag}_" for flag in PERIODIC_FLAGS)


def is_periodic_test(test: ast.AST, loop: ast.AST | None) -> bool:
    """`step % 100 == 0`, `i == 0`, `batch_idx == len(loader) - 1`, `if self.control.should_log:`,
    `if step % cfg.log_interval`, `if shown < 10:`: a test that holds on a few of the loop's
    iterations."""
    words = name_words(test)
    if any(word in PERIODIC_FLAGS or word.startswith(PERIODIC_FLAG_PREFIXES) for word in words) \
            or any(part in PERIODIC_WORDS for word in words for part in word.split("_")):
        return True  # (`should_log_optim_metrics_this_step`: a flag of the same kind, spelled out)
    names = set()
    target = getattr(loop, "target", None)
    if target is not None:
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    for node in ast.walk(test):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return True
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(isinstance(op, ast.Eq) for op in node.ops) and (
                any(isinstance(side, ast.Name) and side.id in names for side in sides)
                or (any(isinstance(side, ast.Constant) and type(side.value) is int for side in sides)
                    and any(name_words(side) & STEP_COUNTER_WORDS for side in sides))):
            return True  # `i == 0`, `batch_idx == 0`, `self.global_step == 0`
        if any(isinstance(op, ast.Eq) for op in node.ops) and len(sides) == 2 and any(
                (isinstance(a, ast.Name) and a.id in names or name_words(a) & STEP_COUNTER_WORDS)
                and name_words(b) & START_WORDS for a, b in (sides, sides[::-1])):
            return True  # `self.iteration_step == self.initial_iter_step`: the first step of a run or a resume
        if isinstance(node.ops[0], ast.In) and isinstance(node.left, ast.Name) \
                and (node.left.id in names or name_words(node.left) & STEP_COUNTER_WORDS):
            return True  # `it in log_iters`: the iterations a set names
        if _first_few(node, names, loop):
            return True
    return False


FEW_ITERATIONS = 100  # `if i < 10:` holds on the first few iterations; `if step < warmup_steps:` may not


def _first_few(compare: ast.Compare, names: set[str], loop: ast.AST | None) -> bool:
    """`i < 10`, `num_shown <= 8`, `3 > batch_idx`: a counter of the loop (its target, a step
    counter, or a name the loop adds to) below a small constant: the first iterations only."""
    if len(compare.ops) != 1:
        return False
    left, right, op = compare.left, compare.comparators[0], compare.ops[0]
    if isinstance(op, (ast.Gt, ast.GtE)):
        left, right = right, left
    elif not isinstance(op, (ast.Lt, ast.LtE)):
        return False
    if not (isinstance(right, ast.Constant) and type(right.value) is int and right.value <= FEW_ITERATIONS):
        return False
    if isinstance(left, ast.Name) and left.id in names or name_words(left) & STEP_COUNTER_WORDS:
        return True
    return isinstance(left, ast.Name) and loop is not None and any(
        isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and isinstance(n.target, ast.Name)
        and n.target.id == left.id for statement in getattr(loop, "body", ()) for n in ast.walk(statement))


# Names of a step counter: `batch_idx == 0` or `global_step == 0` holds on one step (not `epoch == 0`,
# a whole epoch of steps).
STEP_COUNTER_WORDS = {"step", "iter", "iteration", "it", "idx", "batch_idx", "global_step", "itr"}
START_WORDS = {"start", "initial", "init", "first", "begin", "resume", "resumed", "starting"}  # `start_step`


def _off_period(test: ast.AST, loop: ast.AST | None) -> bool:
    """A test that holds on the steps a periodic test leaves out: `not should_log`,
    `step % k != 0`, `step % k`. Not the steps between optimizer steps (`(i + 1) % accum != 0`):
    what follows runs on every optimizer step, the training step itself."""
    if name_words(test) & SUB_STEP_WORDS:
        return False
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):  # `period == 0 or i % period != 0`
        return any(_off_period(value, loop) for value in test.values)
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
    if isinstance(func, ast.Attribute) and func.attr in WARNING_METHODS:
        words = name_words(func.value)
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


def _aborts(body: list[ast.stmt], returns: bool = False) -> bool:
    """`body` ends in `raise`, or in an `if` whose every arm aborts, one of them by raising
    (`returns`: an arm may give up with a bare `return` instead; one that returns a value is
    the function's result, not an abort)."""
    last = body[-1] if body else None
    if isinstance(last, ast.Raise) or _exits(last) or returns and isinstance(last, ast.Return) and (
            last.value is None or isinstance(last.value, ast.Constant) and last.value.value is None):
        return True
    return isinstance(last, ast.If) and bool(last.orelse) and _aborts(last.body, True) \
        and _aborts(last.orelse, True) and (_aborts(last.body) or _aborts(last.orelse))


# Calls that end the program: a branch ending in one is an error path, like one that raises.
EXIT_CALLS = {"sys.exit", "exit", "quit", "os._exit"}


def _exits(statement: ast.stmt | None) -> bool:
    """`sys.exit(1)`, `exit()`, `os._exit(1)` as a statement (by their spelling: the model reads no
    imports here)."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
        and dotted(statement.value.func) in EXIT_CALLS


def is_cold_branch(body: list[ast.stmt]) -> bool:
    """A branch that ends in `raise` or `sys.exit(...)` (or in an `if` that raises or gives up:
    `if raise_on_error: raise ... else: return`), or whose business is a warning: it warns or logs, and otherwise
    only resets a setting, picks a fallback or returns."""
    if not body:
        return False
    if _aborts(body):
        return True
    logs = [s for s in body if isinstance(s, ast.Expr) and is_log_call(s.value)]
    return bool(logs) and all(s in logs or _quiet(s) for s in body)


def _leaving(block: list[ast.stmt], leaves: type | None) -> type | None:
    """What a block that ends in `break` or `return` leaves (ast.Break: the loop around it;
    ast.Return: the function), kept from an inner block that already left more."""
    if leaves is ast.Return or not block:
        return leaves
    last = type(block[-1])
    return ast.Return if last is ast.Return else ast.Break if last is ast.Break or leaves is ast.Break else leaves


def _contains(block: list[ast.stmt], child: ast.AST) -> bool:
    return any(statement is child for statement in block)


_UNFIXED = object()  # an attribute no constant fixes (ExecutionModel._fixed_attributes)
_MODEL_KEY = "execution-model"


def execution_model(facts: "FileFacts") -> "ExecutionModel":
    """The file's execution model, built once, on first use (kept in `facts.memo`), after the
    traversal: it reads the assignments of the whole file."""
    model = facts.memo.get(_MODEL_KEY)
    if model is None:
        if facts.stack:
            raise RuntimeError("where code runs is decided after the traversal (ask in `keep` or `end_file`)")
        model = facts.memo[_MODEL_KEY] = ExecutionModel(facts)
    return model


# Decorators that run a function's body once per new argument (or once per instance): what it
# builds is reused on later calls (a relative-position table keyed by sequence length)
CACHED = {"functools.lru_cache", "functools.cache", "functools.cached_property"}


class ExecutionModel:
    """Where each node of one file runs (`where`), whether it is part of a training step
    (`in_training_step`), and each function's base context (`base`, from `caller_contexts`).

    `ctx.project` (ptlint.semantics.project.ProjectFacts, or None where no project is known)
    brings what the rest of the project says of this file's functions: the contexts of their
    callers in other files, with the evidence chain of each, and which of them a training step
    elsewhere calls."""

    def __init__(self, ctx: "FileFacts") -> None:
        self.ctx = ctx
        self.calls = CallSites.of(ctx)
        self.project = getattr(ctx, "project", None)
        self._training: dict[int, bool] = {}
        self._keys: dict[int, str] = {}
        self.intrinsic_why: dict[int, str] = {}
        self._intrinsic: dict[int, str | None] = {}
        self._via: dict[int, tuple[Via, ...]] = {}
        self._placements: dict[int, Placement] = {}
        self.base = self._solve()

    def callers(self, function: ast.AST) -> list[ast.Call]:
        """The calls in this file that may run `function` (ptlint.semantics.calls)."""
        return self.calls.callers(function)

    def key(self, function: ast.AST) -> str:
        """The def's name in its module (`def_key`), as the project model knows it."""
        found = self._keys.get(id(function))
        if found is None:
            found = self._keys[id(function)] = def_key(function, self.ctx.parent)
        return found

    def _external(self, function: ast.AST) -> list[tuple[str, tuple[Via, ...]]]:
        """(context, evidence) of each call of `function` in other files of the project."""
        if self.project is None:
            return []
        return self.project.callers_of(self.key(function))

    # -- function base contexts --------------------------------------------------------------
    def intrinsic(self, function: ast.AST) -> str | None:
        """What the def is, when that alone says how often it runs (a `forward`, a step hook, a
        compiled function): its context, else None (the reason is kept in `intrinsic_why`)."""
        key = id(function)
        if key not in self._intrinsic:
            self._intrinsic[key] = self._compute_intrinsic(function)
        return self._intrinsic[key]

    def _compute_intrinsic(self, function: ast.AST) -> str | None:
        name = function.name
        owner = self.ctx.owner_class(function)
        why = None
        context = None
        if owner is not None and name in ("forward", "backward") and (is_module_class(owner, self.ctx)
                                                                    or _is_autograd_function(owner, self.ctx)
                                                                    or _derived_elsewhere(owner, self.ctx)):
            context, why = PER_STEP, f"`{name}` of the module `{owner.name}` runs every call of the model"
        elif any(decorator_in(d, self.ctx, COMPILE) for d in function.decorator_list):
            context, why = PER_STEP, f"`{name}` is compiled with `@torch.compile`"
        elif name in (compile_targets(self.ctx)[1] if owner is not None else compile_targets(self.ctx)[0]):
            context, why = PER_STEP, f"`{name}` is passed to `torch.compile`"
        elif any(decorator_in(d, self.ctx, CACHED) for d in function.decorator_list):
            context, why = ONCE, f"`{name}` is cached: its body runs once for each new argument"
        elif name in STEP_HOOKS or name.endswith(STEP_HOOK_SUFFIXES):
            context, why = PER_STEP, f"`{name}` is a framework hook that runs every batch"
        elif "backward" in self.ctx.text and is_step_function(function) and not self._run_once_by_name(function):
            epoch_call = self._full_batch_epoch_call(function)
            if epoch_call is not None:
                context, why = PER_OUTER, f"`{name}` trains on the whole data once per epoch ({epoch_call})"
            else:
                context, why = PER_STEP, f"`{name}` calls `.backward()`: one training step"
        else:
            for decorator in function.decorator_list:
                event = event_context(decorator)
                if event is not None:
                    context, why = event, f"`{name}` is an event handler (line {decorator.lineno})"
                    break
        if why is not None:
            self.intrinsic_why[id(function)] = why
        return context

    def _run_once_by_name(self, function: ast.AST) -> bool:
        """A def the file calls only by name, and only where the call runs once: outside any loop,
        at module level or in `main()` (`example_dconv()` in a `__main__` self-test,
        `check_gradients()` from `main()`): it backpropagates once per run of the script, not
        once per step. Not a def handed to a framework (`Engine(update)`), which calls it every
        batch, nor one a loop calls (a GAN's `train_G()` every `n_d` steps is a training step)."""
        ctx = self.ctx
        sites = self._calls_by_name(function)
        if not sites:
            return False
        for site in sites:
            scope = ctx.parent(site)
            while scope is not None and not isinstance(scope, FUNCTION_DEFS):
                if isinstance(scope, (*STATEMENT_LOOPS, *COMPREHENSIONS)):
                    return False
                scope = ctx.parent(scope)
            if scope is not None and not (scope.name in ONCE_NAMES or ONCE_NAME.search(scope.name)):
                return False
        return True

    def _full_batch_epoch_call(self, function: ast.AST) -> str | None:
        """Where the loop over epochs that alone calls `function`, a training step, lies (`for epoch
        in range(1, args.epochs + 1): loss = train(model, data, optimizer)` of a full-graph GNN):
        its step is the whole epoch, and what it reads back, once per epoch. The loop of this file
        ("line 12"), or, where no code of this file calls it, one of another file's, where every
        call in the project sits right in a loop over epochs (ProjectFacts.epoch_steps)."""
        if not self.calls.callers(function):
            key = self.key(function)
            if self.project is None or key not in self.project.epoch_steps:
                return None
            via = next((via for _, via in self._external(function) if via), ())
            return f"{via[-1].path}:{via[-1].line}" if via else "in another file"
        loops = {self._innermost_loop(site) for site in self._calls_by_name(function)}
        if len(loops) != 1:
            return None
        [loop] = loops
        return f"line {loop.lineno}" if counts_epochs(loop) else None

    def _calls_by_name(self, function: ast.AST) -> list[ast.Call]:
        """The file's calls of `function` where every one calls it by name (`train(model, data)`);
        none where one hands it on (`Engine(update)`, `map(step, batches)`) or calls it as a method."""
        sites = self.calls.callers(function)
        return sites if all(isinstance(site.func, ast.Name) and site.func.id == function.name for site in sites) else []

    def _solve(self) -> dict[int, str]:
        """Each function's base context: what it is (a forward, a step hook, set-up), or else the
        most frequent context among its callers (in this file, and in the project's other files),
        to a fixpoint."""
        functions = self.ctx.function_defs()
        base: dict[int, str] = {}
        fixed: set[int] = set()
        for function in functions:
            intrinsic = self.intrinsic(function)
            if intrinsic is not None:
                base[id(function)] = intrinsic
                fixed.add(id(function))
            elif self.callers(function) or self._external(function):
                base[id(function)] = ONCE  # the least context; callers raise it below
            else:
                once = function.name in ONCE_NAMES or ONCE_NAME.search(function.name)
                base[id(function)] = ONCE if once else CALLED
        self.base = base
        for _ in range(len(functions) + 1):  # contexts only rise: this ends
            changed = False
            for function in functions:
                key = id(function)
                if key in fixed:
                    continue
                contexts = self.caller_contexts(function)
                if not contexts:
                    continue
                rank = max(RANK[context] for context in contexts)
                if rank > RANK[base[key]]:
                    base[key] = next(c for c, r in RANK.items() if r == rank)
                    changed = True
            if not changed:
                break
        return base

    def caller_contexts(self, function: ast.AST) -> list[str]:
        """How often each known call of `function` runs (a cold call: once), in this file and in
        the project's other files. The one place the model learns how often a function runs from
        its callers."""
        contexts = []
        for call in self.callers(function):
            where = self._context_of(call)
            contexts.append(where)
        contexts += [context for context, _ in self._external(function)]
        return contexts

    def _context_of(self, node: ast.AST) -> str:
        placement = self.placement(node)
        if placement.cold:
            return ONCE
        return context_for(placement, self.base_of(placement.function))

    def base_of(self, function: ast.AST | None) -> str:
        return self.base.get(id(function), ONCE) if function is not None else ONCE

    # -- the evidence ---------------------------------------------------------------------------
    def function_via(self, function: ast.AST, _visiting: frozenset = frozenset()) -> tuple[Via, ...]:
        """Why `function` runs at its base context, outermost first: what it is (`forward` of a
        module), or the call that runs it most often, and why that call runs so."""
        key = id(function)
        if key in self._via:
            return self._via[key]
        if key in _visiting:
            return ()
        path = self.ctx.path
        why = self.intrinsic_why.get(key)
        if why is not None:
            via: tuple[Via, ...] = (Via(path, function.lineno, why),)
        else:
            via = ()
            want = self.base.get(key)
            for call in self.callers(function):
                placement = self.placement(call)
                if not placement.cold and context_for(placement, self.base_of(placement.function)) == want:
                    via = self._site_via(call, placement, _visiting | {key}) \
                        + (Via(path, call.lineno, f"calls `{function.name}`"),)
                    break
            else:
                for context, external in self._external(function):
                    if context == want:
                        via = tuple(external)
                        break
        via = via[-MAX_VIA:]
        self._via[key] = via
        return via

    def _site_via(self, node: ast.AST, placement: Placement, visiting: frozenset = frozenset()) -> tuple[Via, ...]:
        """Why `node` runs where it does: the loop that repeats it, or its function's evidence."""
        base = self.base_of(placement.function)
        context = context_for(placement, base)
        if placement.loops and context != base:
            loop = step_loop(placement.loops)
            return (Via(self.ctx.path, loop.lineno, loop_why(loop)),)
        if placement.function is None:
            return ()
        return self.function_via(placement.function, visiting)

    # -- where a node runs -------------------------------------------------------------------
    def where(self, node: ast.AST) -> Where:
        placement = self.placement(node)
        context = context_for(placement, self.base_of(placement.function))
        return Where(context, placement.cold, placement.loops[0] if placement.loops else None, placement.function,
                     self._site_via(node, placement))

    def placement(self, node: ast.AST) -> Placement:
        """Where `node` stands in its function, with what the project adds: a loop that calls a
        function of another file holding the step loop is an epoch loop (`outer_loops`)."""
        placement = self.local_placement(node)
        project = self.project
        if project is not None and project.outer_loops and placement.loops and not placement.per_outer \
                and placement.loops[0].lineno in project.outer_loops:
            placement = placement._replace(per_outer=True)
        return placement

    def local_placement(self, node: ast.AST) -> Placement:
        """Where `node` stands in its function, from this file alone (what its summary records);
        asked of every call twice (the solve, the summary's edges), so kept per node."""
        found = self._placements.get(id(node))
        if found is None:
            found = self._placements[id(node)] = self._local_placement(node)
        return found

    def _local_placement(self, node: ast.AST) -> Placement:
        cold = False
        loops: list[ast.AST] = []
        periodic = False
        gated = False  # under a periodic test, loop or not
        guards: list[ast.If] = []  # the `if`s whose body holds the node: lazy set-up guards?
        child, parent = node, self.ctx.parent(node)
        first_iter_of: ast.AST | None = None  # a comprehension whose first iterable holds the node
        function = None
        # the node sits in a block that ends by leaving the loop around it (`break`) or the
        # function (`return`): it runs once per run of that loop, not once per iteration
        leaves: type | None = None
        while parent is not None:
            small = all(self._small_loop(loop) for loop in loops)  # loops between the node and here
            if small and self._after_periodic_exit(child, parent):
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
                    cold = cold or is_cold_branch(branch) or self._never_taken(parent, branch is parent.body)
                    leaves = _leaving(branch, leaves)
                    if branch is parent.body:
                        guards.append(parent)
                    if small and is_periodic_test(self._test_of(parent), self._innermost_loop(parent)) \
                            and not steps_optimizer(branch):
                        periodic = True
                        gated = True
            elif isinstance(parent, ast.IfExp) and child is not parent.test:
                if small and is_periodic_test(parent.test, self._innermost_loop(parent)):
                    periodic = True
            elif isinstance(parent, ast.Raise) or (isinstance(parent, ast.Assert) and child is parent.msg):
                cold = True
            elif isinstance(parent, (ast.Try, ast.With, ast.AsyncWith)) and _contains(parent.body, child):
                leaves = _leaving(parent.body, leaves)  # `try: return validate(args)` in a retry loop
            elif isinstance(parent, ast.While) and _contains(parent.body, child) and leaves is None \
                    and _lazy_set_up(parent, None, self._setters(parent)):
                guards.append(parent)  # `while L > self.l_kernel: self._setup_C(L)`: grown on demand
            elif isinstance(parent, STATEMENT_LOOPS) and (_contains(parent.body, child)
                                                          or isinstance(parent, ast.While) and child is parent.test):
                leaves = _leaving(parent.body, leaves) if child is not getattr(parent, "test", None) else leaves
                if leaves is None:
                    if not _stops_after_few(parent):  # (a few runs per run of the code around it)
                        loops.append(parent)
                elif leaves is ast.Break:
                    leaves = None  # the `break` leaves this loop only
            elif isinstance(parent, ast.comprehension):
                if child is parent.iter:
                    first_iter_of = parent
            elif isinstance(parent, COMPREHENSIONS):
                if not (first_iter_of is not None and parent.generators[0] is first_iter_of):
                    loops.append(parent)
                first_iter_of = None
            child, parent = parent, self.ctx.parent(parent)
        literal = all(_over_literal(loop) or _over_classes(loop) for loop in loops)
        scope = function or self.ctx.tree
        first_only = any(_lazy_set_up(guard, lambda name: _assigned(scope, name), self._setters(guard)) for guard in guards)
        return Placement(
            cold=cold, loops=tuple(loops), gated=gated, periodic=periodic, function=function,
            per_outer=bool(loops) and self._per_outer(_past_structure(loops)),
            set_up=function is not None and is_set_up_name(function.name),
            literal=literal, structure=all(_over_literal(loop) or _over_structure(loop) for loop in loops),
            after_model_loop=not loops and function is not None and self._after_model_loop(node, function),
            before_generation_loop=not loops and function is not None and self._before_generation_loop(node, function),
            first_only=first_only,
            builds=bool(loops) and all(isinstance(loop, COMPREHENSIONS) and not iterable_is_data(loop)
                                       and not runs_model(loop, self.ctx) for loop in loops),
            final_pass=bool(loops) and self._after_training(loops),
            data_pass=bool(loops) and _walks_a_dataset(loops[-1])
            and not any(self.loop_trains(loop) for loop in loops if isinstance(loop, STATEMENT_LOOPS))
            and self._program_trains(),
            few=all(_over_literal(loop) or _over_classes(loop) or _few_iterations(loop, scope) for loop in loops))

    def _program_trains(self) -> bool:
        """The program this file belongs to trains a model (the project says so, and not every
        program holding the file trains nothing; without a project, a loop of the file trains): an
        evaluation pass there is a small part of the run. In an inference program the pass over
        the data is the run, and each of its steps counts."""
        project = self.project
        if project is not None:
            return project.program_trains and not project.inference_only
        key = "file-trains"
        if key not in self.ctx.memo:
            self.ctx.memo[key] = may_hold_training_step(self.ctx.text) and any(
                runs_training_step(node) for node in walk(self.ctx.tree) if type(node) in STATEMENT_LOOPS)
        return self.ctx.memo[key]

    def _after_training(self, loops: list[ast.AST]) -> bool:
        """The outermost of `loops` walks data and trains nothing (an evaluation pass), and a
        statement before it, in its block or in a block around it in the same code, holds a loop
        that runs a training step: `for x, y in test_loader:` after the script's training loop."""
        outer = loops[-1]
        if not isinstance(outer, (ast.For, ast.AsyncFor)) or not iterable_is_data(outer) \
                or any(runs_training_step(loop) for loop in loops):
            return False
        child, parent = outer, self.ctx.parent(outer)
        while parent is not None:
            place = block_of(child, parent)
            if place is not None:
                block, index = place
                if any(type(n) in STATEMENT_LOOPS and runs_training_step(n)
                       for statement in block[:index] for n in walk(statement, DEFINITIONS)):
                    return True
            if isinstance(parent, DEFINITIONS):
                return False
            child, parent = parent, self.ctx.parent(parent)
        return False

    def _test_of(self, branch: ast.If) -> ast.AST:
        """An `if`'s test, or what its one name was assigned (`is_metric_step = i % every == 0`
        ... `if is_metric_step:`)."""
        test = branch.test
        if isinstance(test, ast.Name):
            scope = self.ctx.enclosing_function(branch) or self.ctx.tree
            values = self.ctx.assignments(test.id, scope)
            if len(values) == 1 and isinstance(values[0], ast.expr):
                return values[0]
        return test

    def _small_loop(self, loop: ast.AST) -> bool:
        """A loop that repeats no step: over literal settings, a model's parts or a mapping (the
        losses of this step), or over anything that is not data and runs no model."""
        if _over_literal(loop) or _over_structure(loop):
            return True
        return not iterable_is_data(loop) and not runs_training_step(loop) and not runs_model(loop, self.ctx)

    def _after_model_loop(self, node: ast.AST, function: ast.AST) -> bool:
        """`node` follows, in its function's own statements, a loop that runs a model many times
        without training (a sampling or denoising loop: `for t in timesteps: x = model(x, t)`):
        it runs once per such run, not once per model call. Not after a loop that trains
        (gradient accumulation's micro-steps: what follows is the step itself)."""
        statement = node
        while statement is not None and self.ctx.parent(statement) is not function:
            statement = self.ctx.parent(statement)
        if statement is None or not isinstance(statement, ast.stmt):
            return False
        for earlier in function.body:
            if earlier is statement:
                return False
            if _generates(earlier, self.ctx):
                return True
        return False

    def _before_generation_loop(self, node: ast.AST, function: ast.AST) -> bool:
        """`node` precedes, in its block or one around it, a loop that runs a model many times
        without training, and gradients are off there (`with torch.no_grad():` ... `h =
        torch.zeros(b, n).cuda()` ... `for i in range(seq_len):` in a vocoder's `generate`): a
        generation's set-up, once per generation: the loop feeds each output to its next call. Not
        in a training forward (a decoder's `outputs = torch.zeros(...)` before its loop over time
        steps runs every training step), nor before a loop over a few inputs (a momentum encoder's
        update before it encodes each view, every step)."""
        child = node
        while child is not None and not isinstance(child, ast.stmt):
            child = self.ctx.parent(child)
        while child is not None and child is not function:
            parent = self.ctx.parent(child)
            for field in ("body", "orelse", "finalbody"):
                block = getattr(parent, field, None)
                if not isinstance(block, list):
                    continue
                index = self._positions(block).get(id(child))
                if index is not None and index < self._last_generation_loop(block):
                    return GradRegions.of(self.ctx).off(child)
            child = parent
        return False

    def _last_generation_loop(self, block: list) -> int:
        """The position of the block's last generation loop, -1 if none, once per block: every
        statement of a long module asks."""
        key = ("generation-loops", id(block))
        found = self.ctx.memo.get(key)
        if found is None:
            found = self.ctx.memo[key] = max((i for i, statement in enumerate(block) if _generates(statement, self.ctx)
                                              and not _takes_gradients(statement)
                                              and _feeds_back(statement, self.ctx)), default=-1)
        return found

    def _positions(self, block: list) -> dict[int, int]:
        """Each statement's position in its block, once per block (the generation loops and the
        periodic exits above ask it of every statement)."""
        key = ("block-positions", id(block))
        found = self.ctx.memo.get(key)
        if found is None:
            found = self.ctx.memo[key] = {id(statement): i for i, statement in enumerate(block)}
        return found

    def _after_periodic_exit(self, child: ast.AST, parent: ast.AST) -> bool:
        """`child` follows, in its block, an early exit on the steps a periodic test leaves out
        (`if not should_log: return`, `if step % k != 0: continue`): it runs on the other steps
        only, like the body of `if should_log:`. Not when what follows steps the optimizer (`if
        (i + 1) % accum != 0: continue` then `opt.step()`: the training step itself)."""
        if not isinstance(child, ast.stmt):
            return False
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if not isinstance(block, list):
                continue
            first_exit = self._first_periodic_exit(block)
            index = self._positions(block).get(id(child))
            if index is None:
                continue
            if first_exit is not None and first_exit < index:
                return not steps_optimizer(block[index:])
        return False

    def _first_periodic_exit(self, block: list) -> int | None:
        """The position of the block's first early exit on an off-period test, once per block: a
        module of 60,000 statements asks about every one."""
        key = ("periodic-exit", id(block))
        if key not in self.ctx.memo:
            self.ctx.memo[key] = next((i for i, statement in enumerate(block)
                                       if isinstance(statement, ast.If) and not statement.orelse
                                       and isinstance(statement.body[-1], (ast.Return, ast.Continue))
                                       and _off_period(statement.test, self._innermost_loop(statement))), None)
        return self.ctx.memo[key]

    def in_training_step(self, node: ast.AST) -> bool:
        """`node` runs as part of a training or evaluation step, visibly: in a loop (of its
        function) that backpropagates or steps an optimizer, or in a function that is a training
        step hook (`training_step`, `compute_loss`, a function that backpropagates, an Ignite
        iteration handler), or that such code calls (transitively, within this module)."""
        where = self.where(node)
        if where.cold or where.context != PER_STEP:
            return False
        parent = self.ctx.parent(node)
        while parent is not None and not isinstance(parent, FUNCTION_DEFS):
            if isinstance(parent, STATEMENT_LOOPS) and self.loop_trains(parent):
                return True
            parent = self.ctx.parent(parent)
        return parent is not None and self._training_function(parent, set())

    def in_trained_forward(self, node: ast.AST, helpers: bool = False) -> bool:
        """`node` is in the `forward` of a module (not compiled: traced code is the compile rules')
        of a project that trains models (`helpers`: or in a method that forward calls): each
        training step runs it (`int(self.queue_ptr)` in a momentum encoder's forward or its
        enqueue helper)."""
        project = self.project
        if project is None or not project.program_trains:
            return False
        where = self.where(node)
        function = where.function
        if where.cold or function is None or self.base.get(id(function)) != PER_STEP:
            return False
        if not helpers:
            return function.name == "forward" and id(function) in self.intrinsic_why
        return self._forward_runs(function, set())

    def _forward_runs(self, function: ast.AST, seen: set) -> bool:
        """`function` is a module's `forward`, or a method of its class that it calls (through
        other such methods): `self._dequeue_and_enqueue(k)` in a momentum encoder's forward. Not a
        function nested in forward (post-processing that reads its own host values)."""
        if function.name == "forward":
            return id(function) in self.intrinsic_why
        if self.ctx.owner_class(function) is None:
            return False
        seen.add(id(function))
        for call in self.callers(function):
            caller = self.placement(call).function
            if caller is not None and id(caller) not in seen and len(seen) < 8 and self._forward_runs(caller, seen):
                return True
        return False

    def loop_trains(self, loop: ast.AST) -> bool:
        """The loop runs a training step every iteration: in its own body (`runs_training_step`),
        or by calling a function that is one (`loss = train_step(model, batch)`), of this file or,
        as the project says (`step_loops`), of another."""
        if runs_training_step(loop):
            return True
        project = self.project
        if project is not None and loop.lineno in project.step_loops:
            return True
        key = ("loop-calls-a-step", id(loop))
        memo = self.ctx.memo
        if key not in memo:
            memo[key] = any(is_training_hook(function, self.ctx) for call in calls_in(loop.body)
                            for function in self.calls.callees(call))
        return memo[key]

    def _training_function(self, function: ast.AST, visiting: set[int]) -> bool:
        key = id(function)
        if key in self._training:
            return self._training[key]
        if key in visiting:
            return False
        visiting.add(key)
        hook = is_training_hook(function, self.ctx) or self._delegates_backward(function)
        result = hook or any(self.in_training_step_site(call, visiting) for call in self.callers(function)) \
            or (self.project is not None and self.project.trains(self.key(function)))
        self._training[key] = result
        return result

    def _delegates_backward(self, function: ast.AST) -> bool:
        """A step that hands its loss to a helper of this file which backpropagates
        (`self.optimizer_backward(self.cri_optimizer, obj_critic)`, outside any loop of its own):
        the caller is the training step, and what it reads per call waits every step."""
        if "backward" not in self.ctx.text or self.ctx.owner_class(function) is not None and function.name == "forward":
            return False
        return any(callee is not function and is_step_function(callee)
                   for node in body_nodes(function.body, stop_at=(*DEFINITIONS, *STATEMENT_LOOPS, *COMPREHENSIONS))
                   if isinstance(node, ast.Call) for callee in self.calls.callees(node))

    def in_training_step_site(self, call: ast.Call, visiting: set[int]) -> bool:
        where = self.where(call)
        if where.cold or where.context != PER_STEP:
            return False
        parent = self.ctx.parent(call)
        while parent is not None and not isinstance(parent, FUNCTION_DEFS):
            if isinstance(parent, STATEMENT_LOOPS) and self.loop_trains(parent):
                return True
            parent = self.ctx.parent(parent)
        return parent is not None and self._training_function(parent, visiting)

    def _never_taken(self, branch: ast.If, body: bool) -> bool:
        """The branch (the body, or else the `else`) of `if self.flag:` / `if not self.flag:` that a
        fixed setting rules out: `__init__` sets `self.flag = False` (a constant) and nothing in the
        file assigns the attribute again, on any object, or sets attributes by name. Or a test of
        the function's parameters that every call in the project decides the same way
        (`if reduction == "mean":` where both calls pass `reduction="none"`)."""
        decided = self._decided_by_callers(branch)
        if decided is None:
            decided = self._decided_by_torch_version(branch)
        if decided is not None:
            return decided != body
        test, negated = branch.test, False
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, negated = test.operand, True
        if not (isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self"):
            return False
        if not re.search(rf"self\.{re.escape(test.attr)}\s*=\s*(True|False|None|[-\d.]+|'[^'\n]*'|\"[^\"\n]*\")\s*(#|$)",
                         self.ctx.text, re.M):
            return False  # (the cheap question first: no `self.flag = <constant>` line anywhere)
        value = self._fixed_attributes().get(test.attr, _UNFIXED)
        if value is _UNFIXED:
            return False
        return bool(value) != negated if not body else bool(value) == negated

    def _decided_by_callers(self, branch: ast.If) -> bool | None:
        """The value of the branch's test for every call of its function in the project (the
        project's `fixed_arguments`), where the test reads only parameters the function never
        rebinds and constants; None where it is not the same for all, or cannot be told."""
        fixed = self.project.fixed_arguments if self.project is not None else None
        if not fixed:
            return None
        function = self.ctx.enclosing_function(branch)
        received = fixed.get(self.key(function)) if function is not None else None
        if not received:
            return None
        names = {node.id for node in ast.walk(branch.test) if isinstance(node, ast.Name)}
        if not names or not names <= received.keys() or not _decidable(branch.test) or any(
                isinstance(node, ast.Name) and node.id in names and not isinstance(node.ctx, ast.Load)
                for node in ast.walk(function)):
            return None
        ordered = sorted(names)
        outcomes = set()
        for values in itertools.islice(itertools.product(*(received[name] for name in ordered)), 64):
            outcomes.add(bool(_evaluate(branch.test, dict(zip(ordered, values)))))
        return outcomes.pop() if len(outcomes) == 1 else None

    def _decided_by_torch_version(self, branch: ast.If) -> bool | None:
        """The value of a test of torch's version (`if int(version[0]) > 0 or int(version[2]) > 3:`
        after `version = torch.__version__`, `if torch.__version__ < "1.0":`) that is the same for
        every torch 2 release: the branch for torch 0.x or 1.x never runs today."""
        if "__version__" not in self.ctx.text:
            return None
        called = {id(node.func) for node in ast.walk(branch.test) if isinstance(node, ast.Call)}
        called |= {id(node.value) for node in ast.walk(branch.test) if isinstance(node, ast.Attribute)
                   and id(node) in called and self.ctx.names.meaning(getattr(node.value, "id", ""), at=node).kind
                   == IMPORTED}  # `version.parse(...)`: a module, not a value (`version.split(".")` is one)
        called |= {id(node) for node in ast.walk(branch.test) if isinstance(node, ast.Name) and node.id in ("int", "str")}
        versions = [node for node in ast.walk(branch.test) if isinstance(node, ast.Attribute) and node.attr == "__version__"]
        called |= {id(node.value) for node in versions}  # `torch` of `torch.__version__`
        names = {node.id for node in ast.walk(branch.test) if isinstance(node, ast.Name) and id(node) not in called}
        if any(self.ctx.qualname(node) != "torch.__version__" for node in versions):
            return None  # numpy's, a package's own
        if not versions:
            scope = self.ctx.enclosing_function(branch) or self.ctx.tree
            if not names or not all(self._holds_torch_version(name, scope) for name in names):
                return None
        elif names:
            return None
        outcomes = set()
        for version in TORCH_VERSIONS:
            try:
                outcomes.add(bool(_version_value(branch.test, version, self.ctx)))
            except (_Undecided, IndexError, KeyError, TypeError, ValueError, AttributeError):
                return None  # (`version[9]`, `version.major`: what the code would do is not read here)
        return outcomes.pop() if len(outcomes) == 1 else None

    def _holds_torch_version(self, name: str, scope: ast.AST) -> bool:
        """`name` is assigned `torch.__version__` once at module level, and not in `scope`."""
        if scope is not self.ctx.tree and _assigned(scope, name):
            return False
        values = _assigned(self.ctx.tree, name)
        return len(values) == 1 and isinstance(values[0], ast.Attribute) \
            and self.ctx.names.qualname(values[0], at=values[0]) == "torch.__version__"

    def _setters(self, node: ast.AST) -> Callable[[str], set[str]]:
        """For the class whose method holds `node`: method name -> the attributes of `self` that
        method's own code sets (`self.x = ...`, `self.register_buffer("x", ...)`); nothing for a
        name it does not define."""
        function = self.ctx.enclosing_function(node)
        owner = self.ctx.owner_class(function) if function is not None else None
        if owner is None:
            return lambda name: set()
        key = ("setters", id(owner))
        table = self.ctx.memo.get(key)
        if table is None:
            table = self.ctx.memo[key] = {}
            for method in owner.body:
                if isinstance(method, FUNCTION_DEFS):
                    table[method.name] = _attributes_set(method)
        return lambda name: table.get(name, set())

    def _fixed_attributes(self) -> dict[str, object]:
        """Attribute name -> the constant an `__init__` of the file gives it, for the attributes
        assigned once in the whole file (a switch hard-coded off: `self.stratified = False`)."""
        key = "fixed-attributes"
        if key not in self.ctx.memo:
            stores: dict[str, list] = {}
            by_name = False
            for node in walk(self.ctx.tree):
                kind = type(node)
                if kind is ast.Attribute and type(node.ctx) is not ast.Load:
                    stores.setdefault(node.attr, []).append(node)
                elif kind is ast.Call and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                        or kind is ast.Attribute and node.attr in ("__dict__", "__setattr__"):
                    by_name = True
            fixed: dict[str, object] = {}
            for name, targets in stores.items():
                if by_name or len(targets) != 1:
                    continue
                statement = self.ctx.parent(targets[0])
                function = self.ctx.enclosing_function(targets[0])
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                        and isinstance(statement.value, ast.Constant) \
                        and isinstance(targets[0].value, ast.Name) and targets[0].value.id == "self" \
                        and function is not None and function.name == "__init__" \
                        and self.ctx.parent(statement) is function:
                    fixed[name] = statement.value.value
            self.ctx.memo[key] = fixed
        return self.ctx.memo[key]

    def _innermost_loop(self, node: ast.AST) -> ast.AST | None:
        return innermost_loop(node, self.ctx)

    def _per_outer(self, loop: ast.AST) -> bool:
        """Code in `loop` outside its inner loops runs once per outer iteration: the loop does not
        itself train (no backward or optimizer step among its own statements), and it holds an
        inner loop over data or one that trains (a batch loop, not a loop over parameter groups or
        gradient-accumulation micro-steps), or calls a function that holds one (`for epoch in
        range(n): train_one_epoch(...)`, in this file or, as the project says, in another). A loop
        that names data (`for iteration in range(num_iterations)`) is an outer loop only around an
        inner loop that trains (PPO's update epochs). A loop that calls a rollout (a function whose
        loop steps an environment: `batch = collect(env, 2048)`) is an outer loop, even where it
        also updates the model: each iteration is many environment steps and one update."""
        if not isinstance(loop, STATEMENT_LOOPS):
            return False
        key = ("per-outer", id(loop))
        memo = self.ctx.memo
        if key not in memo:
            memo[key] = self._compute_per_outer(loop)
        return memo[key]

    def _compute_per_outer(self, loop: ast.AST) -> bool:
        if not steps_environment_itself(loop) and any(
                self.holds_rollout(function) for call in calls_every_iteration(loop)
                for function in self.calls.callees(call)):
            return True  # `for i_iter in range(n): batch = collect(env, 2048); update(batch)`
        if trains_directly(loop):
            return False  # the training step's own loop
        inner = list(_step_loops_in(loop.body))
        inner_training = any(runs_training_step(node) for node in inner)
        inner_data = any(iterable_is_data(node) for node in inner)
        if iterable_is_data(loop):
            return inner_training
        if inner_data or inner_training:
            return True
        return any(self.holds_step_loop(function) for call in calls_in(loop.body)
                   for function in self.calls.callees(call))

    def holds_step_loop(self, function: ast.AST) -> bool:
        """The def holds, among its own statements, a loop over data or one that trains (not a
        gradient-accumulation loop): called from a loop, it is a pass over the data (an epoch)."""
        key = ("holds-step-loop", id(function))
        memo = self.ctx.memo
        if key not in memo:
            memo[key] = any(iterable_is_data(node) and not _over_one_batch(node) or runs_training_step(node)
                            for node in _step_loops_in(function.body))
        return memo[key]

    def holds_rollout(self, function: ast.AST) -> bool:
        """The def holds, among its own statements, a loop that steps an environment (a rollout:
        `for t in range(horizon): env.step(a)`): called from a loop, even one that names its steps
        (`for i_iter in range(max_iter_num)`), each call is a pass of many environment steps. (Not
        any loop that trains: an adversarial attack's inner loop is part of one training step.)"""
        key = ("holds-rollout", id(function))
        memo = self.ctx.memo
        if key not in memo:
            memo[key] = any(steps_environment(call) for node in _step_loops_in(function.body)
                            for call in calls_in(node.body))
        return memo[key]


# Python's comparisons, for the two evaluators of tests below: `_evaluate` takes the equality and
# membership ones (a parameter's value), `_version_value` the equality and ordering ones (a version).
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
            ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
_EQUALITY = frozenset({ast.Eq, ast.NotEq, ast.Is, ast.IsNot, ast.In, ast.NotIn})
_ORDERING = frozenset({ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE})


# Releases a version test is read for: where it answers the same for each, it answers so today.
TORCH_VERSIONS = ("2.0.1", "2.4.0", "2.13.0+cu130")


class _Undecided(Exception):
    """A version test made of something `_version_value` does not compute."""


def _version_value(node: ast.AST, version: str, ctx: "FileFacts") -> object:
    """`node` computed with torch's version `version`: `torch.__version__` or a name holding it,
    constants, `int()`, `str()`, indexing and slicing, `.split(...)`, `tuple(map(int, ...))`,
    `version.parse(...)` / `LooseVersion(...)` (compared as tuples of numbers), comparisons,
    `not`, `and`, `or`."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == "__version__" or isinstance(node, ast.Name):
        return version  # (names are checked to hold torch.__version__)
    if isinstance(node, ast.Subscript):
        index = node.slice
        value = _version_value(node.value, version, ctx)
        if isinstance(index, ast.Slice):
            parts = [None if part is None else _version_value(part, version, ctx)
                     for part in (index.lower, index.upper, index.step)]
            return value[slice(*parts)]
        return value[_version_value(index, version, ctx)]
    if isinstance(node, ast.Tuple):
        return tuple(_version_value(element, version, ctx) for element in node.elts)
    if isinstance(node, ast.UnaryOp):
        operand = _version_value(node.operand, version, ctx)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
    if isinstance(node, ast.BoolOp):
        values = [_version_value(value, version, ctx) for value in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _ORDERING:
        left, right = (_version_value(side, version, ctx) for side in (node.left, node.comparators[0]))
        try:
            return _COMPARE[type(node.ops[0])](left, right)
        except TypeError:
            raise _Undecided from None
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "split" and isinstance(func, ast.Attribute) and len(node.args) <= 1:
            separator = _version_value(node.args[0], version, ctx) if node.args else None
            return _version_value(func.value, version, ctx).split(separator)
        if len(node.args) == 1:
            value = _version_value(node.args[0], version, ctx) if name != "tuple" else node.args[0]
            if name == "int":
                try:
                    return int(value)
                except (TypeError, ValueError):
                    raise _Undecided from None
            if name == "str":
                return str(value)
            if name in ("parse", "LooseVersion", "StrictVersion", "Version"):
                return tuple(int(part) for part in re.findall(r"\d+", str(value).split("+")[0])[:3])
            if name == "tuple" and isinstance(value, ast.Call) and getattr(value.func, "id", None) == "map" \
                    and len(value.args) == 2 and getattr(value.args[0], "id", None) == "int":
                try:
                    return tuple(int(part) for part in _version_value(value.args[1], version, ctx))
                except (TypeError, ValueError):
                    raise _Undecided from None
    raise _Undecided



def _decidable(node: ast.AST) -> bool:
    """A test `_evaluate` computes: names, constants, tuples or lists of constants, one `==`,
    `!=`, `is`, `in` or their negations, `not`, `and`, `or`."""
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(isinstance(e, ast.Constant) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.Not) and _decidable(node.operand)
    if isinstance(node, ast.BoolOp):
        return all(_decidable(v) for v in node.values)
    if isinstance(node, ast.Compare):
        return len(node.ops) == 1 and type(node.ops[0]) in _EQUALITY and _decidable(node.left) \
            and _decidable(node.comparators[0])
    return False


def _evaluate(node: ast.AST, env: dict[str, object]) -> object:
    """The value of a `_decidable` test with the names of `env`; None where Python would raise."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(e.value for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return not _evaluate(node.operand, env)
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    try:
        return _COMPARE[type(node.ops[0])](_evaluate(node.left, env), _evaluate(node.comparators[0], env))
    except TypeError:  # `"a" in 3`
        return None


def _step_loops_in(statements: list[ast.stmt]):
    """The statement loops among `statements` and inside them, gradient-accumulation loops left
    out (not entering defs, classes or expressions): the loops that may walk data or train."""
    pending = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, DEFINITIONS) or isinstance(node, ast.expr):
            continue
        if isinstance(node, STATEMENT_LOOPS) and not is_sub_step_loop(node):
            yield node
        pending.extend(ast.iter_child_nodes(node))


def _derived_elsewhere(cls: ast.ClassDef, ctx: "FileFacts") -> bool:
    """A class derived from a class of another module (`class Encoder(PreTrainedModel)`,
    `GradientCheckpointingLayer`, `LightningModule`): its `forward` is a module's forward. A base
    defined in this file counts only if it is itself derived elsewhere; a plain local class does not."""
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


def event_context(decorator: ast.AST) -> str | None:
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
