"""Where a value read back to the host goes, and whether the read adds a wait of its own.

DESIGN.md, "Where a read's value goes (PTL101)". A device-to-host read (`.item()`, `.cpu()`,
`.numpy()`, `.tolist()`, `float(t)`, formatting a tensor) makes the host wait for the device.
Whether that wait can be avoided depends on what the host does with the value, and on whether
the queue was already drained. The questions, each answered here once:

- `destination(node, ctx)`: where the value read at `node` goes, followed through the
  expressions around it and through the names it is bound to in its function (three hops):
  - LOG: only logging, metrics, progress bars and accumulators — `print`, a logger, a writer's
    `add_scalar`, `wandb.log`, `self.log`, a progress bar's `set_postfix`, a dict or list of
    stats that goes there. Keep it on the device; read it every N steps;
  - HOST: the host needs it — decoded (`tokenizer.decode(ids.tolist())`), written to a file or
    a stream, given to an environment's `step` (also returned from a function that picks an
    agent's action, `select_action`, `act`), to a host-side evaluator (`evaluator.update`,
    `metric.add_batch`, scikit-learn, pycocotools), used as an index into a Python container
    or as a loop count (`range(n.item())`), or a size the host allocates with (`torch.zeros(n)`,
    `x.view(n, -1)`, a keyword that names a size: `generate(x, max_len=n)`); a file written only
    after the loop that reads the value is KEPT, not HOST;
  - KEPT: kept or passed on where the file does not show what becomes of it — kept in a
    container that is not logged, returned, handed to other code, tested by an `if`;
  - METER: given to a meter's or tracker's `update()` (`losses.update(v)`,
    `running_metrics.update(gt, pred)`): a scalar there is logging; a whole tensor there is
    computed with on the host (a NumPy confusion matrix), not shown;
  - NONE: dropped.
  Where a name has several uses, the strongest wins: HOST over KEPT over METER over LOG over NONE;
- `needed_on_host(node, ctx)`: the value decides the control flow (`if tok.item() == eos:
  break`, also through a name), is asserted, picks a Python object, or steps an environment;
- `avoidable(node, ctx, scalar)`: whether the read is worth reporting for where its value goes.
  A scalar read (`.item()`, `float(t)`, formatting, a copy of a one-element tensor) is, unless
  the host needs its value (HOST, `needed_on_host`; a read of the module's own state is, even
  then: the host could keep that number); a bulk copy (`.cpu()`, `.numpy()`,
  `.tolist()` of a tensor not visibly one element) only when its value feeds logging alone:
  collecting results on the host keeps device memory bounded and is the intended form;
- `adds_no_wait(node, ctx)`: `after_drain` or `waits_anyway`, below;
- `waits_anyway(node, ctx)`: the iteration around the read waits for the device elsewhere, by
  design: unconditionally in the loop body (or in its main process's branch), a guard on a
  tensor's value that leaves the iteration (`if not torch.isfinite(loss): continue`), or another
  read the host needs (a whole tensor a meter or a function computes with, a value decoded,
  evaluated or written in the iteration; also one in each branch of an `if`/`else`). Moving this read saves no wait; a running total is no such read;
- `amortised(node, ctx)`: the wait is small beside the work around it: `waits_for_an_action`
  (the read runs once per call of a function that every caller in the file calls right in a
  loop that picks an agent's action, or steps an environment, each iteration: the next action
  waits for the same kernels), or one read per batch of an evaluation loop over a DataLoader
  of a thousand examples a batch or more;
- `after_drain(node, ctx)`: the read adds no new wait — earlier in the same loop body (or
  function body), unconditionally, a full drain (`torch.cuda.synchronize()` in any spelling,
  `torch.cuda.current_stream().synchronize()`, an event's `synchronize()`) or another read,
  with no device work (a model call, backward, an optimizer step, a torch op, a call of code
  the file does not show) between it and the read;
- `before_read(node, ctx)`: the drain at `node` adds no wait of its own — right after it in the
  same block, before any device work, a read of the step's results waits for the same queue
  (`torch.cuda.synchronize(); loss_value = loss.item()`);
- `elementwise_read(value, ctx)`: the value is an element of a tensor a loop walks
  (`[x.item() for x in t]`, `for v in t: total += v.item()`): one `.tolist()` reads them all
  with one sync;
- `masked_write_only(node, ctx)`: `if m.any(): x[m] = v` — the branch only writes through the
  mask, which does nothing when the mask is empty: the test saves nothing and costs a sync;
- `read_elsewhere(operand, ctx)`: the loop reads the tensor a condition tests back anyway
  (host-driven search code);
- `logged_tensor(call, ctx)`: the device tensor a logging call reads back to log it
  (`writer.add_scalar("loss", loss, step)`, `wandb.log({"loss": loss})`).

Answers read the traversal's state (`ctx.loops`, `ctx.functions`, `ctx.assignments`), so they
are asked during the traversal, at the node being visited.
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING

from ptlint.semantics.calls import CallSites
from ptlint.semantics.nodes import (
    COMPREHENSIONS,
    DEFINITIONS,
    FUNCTION_DEFS,
    SELF_NAMES,
    STATEMENT_LOOPS,
    block_of,
    body_nodes,
    callee_name,
    calls_in,
    chain_head,
    name_words,
    walk,
)
from ptlint.semantics.values import (
    DEVICE_STEP_METHODS,
    MODEL_WORDS,
    REDUCTIONS,
    SCALAR_CONVERSIONS,
    SHAPE_METHODS,
    STRONG,
    TENSOR_METHODS,
    hidden_read,
    in_host_memory,
    is_module_call,
    is_scalar_tensor,
    is_torch_op,
    reads_module_state,
    steps_environment,
    tensor_kind,
    value_test,
)
from ptlint.semantics.options import option_defaults
from ptlint.semantics.where import (
    MAIN_PROCESS_WORDS,
    RUNS_MODEL_WORDS,
    calls_every_iteration,
    innermost_loop,
    is_log_call,
    iterable_is_data,
    runs_training_step,
)

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

# Where a read's value goes, weakest first: a name with several uses goes where the strongest does.
NONE, LOG, METER, KEPT, HOST = 0, 1, 2, 3, 4
HOPS = 3  # names followed from the read: `v = x.item()`, `row = [v]`, `stats.append(row)`

# The methods that read a tensor back: name -> whether it takes arguments (`.cpu()` may).
READ_METHODS = {"item": False, "numpy": False, "tolist": False, "cpu": True}


def is_read_call(node: ast.AST) -> bool:
    """`x.item()`, `x.numpy()`, `x.tolist()`, `x.cpu(...)`: a method that reads a tensor back."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    takes = READ_METHODS.get(node.func.attr)
    return takes is not None and (takes or not node.args)


def legacy_read(node: ast.AST) -> ast.expr | None:
    """`loss.data[0]` (read, not written): how `.item()` was written before PyTorch 0.4, the first
    element of a one-element tensor as a Python number (a zero-dimensional tensor refuses the index
    since, so the code runs only where it reads). The tensor read (`loss`), None where it is not
    this form; whether the tensor has one element is the caller's question."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Attribute) \
            and node.value.attr == "data" and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int \
            and node.slice.value == 0:
        return node.value.value
    return None


# -- where the value goes ----------------------------------------------------------------------

# Calls that show values to a person: the functions and methods of logging, tracking and progress bars.
LOG_MODULES = ("wandb.", "mlflow.", "logging.", "warnings.", "neptune.", "comet_ml.", "clearml.", "aim.",
               "tensorboardX.", "torch.utils.tensorboard.")
LOG_SINK_METHODS = {"add_scalar", "add_scalars", "add_histogram", "add_text", "add_summary", "log", "log_dict",
                    "log_metrics", "log_metric", "log_scalar", "log_scalars", "set_postfix", "set_postfix_str",
                    "set_description", "set_description_str", "print"}
# `.update(v)` on these is a meter or a progress bar (`losses_m.update(loss.item(), n)`)
METER_WORDS = {"meter", "meters", "avg", "average", "averager", "tracker", "monitor", "stats", "stat", "losses",
               "loss", "pbar", "bar", "progress", "running", "smooth", "smoothed", "timer", "recorder", "logger",
               "history", "logs", "summary"}
# Code that needs the values on the host: evaluation, files, plots, host-side libraries.
HOST_MODULES = ("sklearn.", "scipy.", "pycocotools.", "cv2.", "PIL.", "imageio.", "evaluate.", "sacrebleu.",
                "nltk.", "jiwer.", "matplotlib.", "pandas.", "soundfile.")
HOST_FUNCTIONS = {"json.dump", "pickle.dump", "numpy.save", "numpy.savez", "numpy.savetxt", "torch.save",
                  "torchvision.utils.save_image", "torchaudio.save", "torchvision.io.write_video"}
DECODE_METHODS = {"decode", "batch_decode", "convert_ids_to_tokens", "detokenize", "decode_ids", "id_to_piece",
                  "IdToPiece", "DecodeIds", "convert_tokens_to_string"}
# Functions whose result is a string of their argument: where the string goes, the value goes.
STRING_FUNCTIONS = {"json.dumps", "pprint.pformat", "yaml.dump", "yaml.safe_dump"}
WRITE_METHODS = {"write", "writelines", "writerow", "writerows", "dump", "tofile", "savefig"}
EVALUATOR_WORDS = {"evaluator", "evaluators", "coco", "cocoeval", "coco_eval", "scorer", "confusion", "confmat",
                   "validator", "lvis", "bleu", "rouge", "wer", "cer", "voc"}
EVALUATOR_METHODS = {"add_batch", "process", "process_batch", "add_result", "add_results"}
# Methods that put the value in a container: where the value goes is where the container goes.
CONTAINER_METHODS = {"append", "extend", "insert", "add", "appendleft", "update", "setdefault", "put"}
# Builtins whose result carries the value on (`round(v, 4)`, `str(v)`); `range(n)` needs it.
CARRYING_BUILTINS = {"float", "int", "round", "abs", "str", "repr", "format", "sum", "max", "min", "list", "tuple",
                     "dict", "set", "sorted", "bool", "zip", "enumerate", "map", "reversed", "divmod", "pow"}
HOST_BUILTINS = {"range", "chr"}
# words of a keyword argument that takes a size or a count (`max_len=`, `num_samples=`, `k=`)
SIZE_WORDS = {"len", "length", "size", "num", "count", "n", "k", "steps", "tokens"}
# torch functions and tensor methods whose arguments are sizes, counts or ranges the host needs
SIZED_FACTORIES = {"empty", "zeros", "ones", "rand", "randn", "randint", "randperm", "arange", "linspace", "logspace",
                   "eye", "Tensor", "ByteTensor", "CharTensor", "IntTensor", "LongTensor", "FloatTensor",
                   "DoubleTensor", "HalfTensor", "BoolTensor", "split", "narrow", "tensor_split"}
SIZING_METHODS = {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty", "split", "narrow",
                  "tensor_split", "split_with_sizes", "unflatten"}
# Nodes whose value carries the read's value on: arithmetic, comparisons, formatting, displays.
CARRYING = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.FormattedValue, ast.JoinedStr, ast.Tuple,
            ast.List, ast.Set, ast.Dict, ast.Starred, ast.keyword, ast.Slice, ast.IfExp, *COMPREHENSIONS)


def destination(node: ast.AST, ctx: "FileFacts") -> int:
    """Where the value read at `node` goes: NONE, LOG, METER, KEPT or HOST (see the module docstring)."""
    return _climb(node, ctx, _scope(ctx), HOPS)


def avoidable(node: ast.AST, ctx: "FileFacts", scalar: bool) -> bool:
    """The read at `node` waits for a value the host could do without, every time: a scalar read
    unless the host needs the value; a bulk copy only when its value feeds logging alone."""
    if needed_on_host(node, ctx):
        return False
    if scalar and reads_module_state(node):
        return True  # a number kept in a buffer (`int(self.params[0].item())`): the host could keep it itself
    goes = destination(node, ctx)
    return goes != HOST if scalar else goes == LOG


def _needed_read(call: ast.Call, ctx: "FileFacts") -> bool:
    """`call` reads a device tensor back, and the host needs what it reads: it goes where the host
    needs it (HOST), or it is a whole tensor the host computes with or collects (a NumPy
    confusion matrix, `accuracy(out.cpu().numpy(), y)`, `preds.append(out.cpu())`): the bulk
    copies `avoidable` leaves alone as the intended form."""
    if not _reads(call, ctx) or hidden_read(call, ctx):
        return False
    goes = destination(call, ctx)
    if goes == HOST:
        return True
    return goes in (METER, KEPT) and is_read_call(call) and call.func.attr != "item" \
        and not is_scalar_tensor(call.func.value, ctx)


def adds_no_wait(node: ast.AST, ctx: "FileFacts") -> bool:
    """The read adds no wait the loop could save: the queue was just drained (`after_drain`), or
    every iteration waits elsewhere by design (`waits_anyway`)."""
    return after_drain(node, ctx) or waits_anyway(node, ctx)


def waits_anyway(node: ast.AST, ctx: "FileFacts") -> bool:
    """In the body of the statement loop around the read, on the path every iteration takes
    (not inside an `if`, a loop or a def; `with` and `try` bodies count), a guard on a tensor's
    value that leaves the iteration, another read the host needs, or a barrier across processes:
    the iteration waits for the device there by design, so reading this value later or keeping
    it on the device saves none."""
    loop = _statement_loop(ctx)
    if loop is not None and _waits_in(loop.body, node, {id(n) for n in ast.walk(node)}, ctx):
        return True
    # a barrier in the body of a loop around the read, up to the step loop (the step loop around
    # a loop over a dict of losses; not an epoch loop's barrier), drains the queue every step
    function = _scope(ctx)
    for outer in reversed(ctx.loops):
        if not isinstance(outer, STATEMENT_LOOPS) or (ctx.enclosing_function(outer) or ctx.tree) is not function:
            continue
        if any(_barrier(call) for call in calls_every_iteration(outer)):
            return True
        if runs_training_step(outer) or iterable_is_data(outer):
            break  # the step loop: a barrier further out runs once per epoch
    return False


def _waits_in(block: list[ast.stmt], node: ast.AST, own: set[int], ctx: "FileFacts") -> bool:
    """`block`, run whole, waits by design somewhere other than at `node` (see `waits_anyway`):
    also where each branch of an `if`/`else` does (`if args.log: s = z.cpu().numpy() ... else:
    s = z.cpu().numpy()`)."""
    for statement in _every_iteration(block):
        if isinstance(statement, ast.AugAssign):
            continue  # a running total (`correct += (p == y).cpu().sum()`) could be summed on the device
        if isinstance(statement, (ast.If, ast.While)):
            if isinstance(statement, ast.If) and _leaves_loop(statement.body) \
                    and value_test(statement.test, ctx) is not None:
                return True
            if isinstance(statement, ast.If) and statement.orelse and _waits_in(statement.body, node, own, ctx) \
                    and _waits_in(statement.orelse, node, own, ctx):
                return True
            parts = [statement.test]
        else:
            parts = [statement]
        if any(id(call) not in own and node not in ast.walk(call) and (_needed_read(call, ctx) or _barrier(call))
               for call in calls_in(parts)):
            return True
    return False


# Methods that block every process until all arrive (`dist.barrier()`, Fabric's and Lite's
# `self.barrier()`, `accelerator.wait_for_everyone()`): with NCCL the host waits for the device.
BARRIER_METHODS = {"barrier", "wait_for_everyone"}


def _barrier(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in BARRIER_METHODS
            or isinstance(func, ast.Name) and func.id == "barrier") and not call.args


def _every_iteration(block: list[ast.stmt]):
    """The statements of a loop body that run on every iteration (an `if` or `while` for its test;
    the body of an `if` that holds on the main process, where it runs every iteration)."""
    for statement in block:
        if isinstance(statement, (ast.With, ast.AsyncWith, ast.Try)):
            yield from _every_iteration(statement.body)
        elif isinstance(statement, (ast.If, ast.While)):
            yield statement
            if isinstance(statement, ast.If) and name_words(statement.test) & MAIN_PROCESS_WORDS:
                yield from _every_iteration(statement.body)  # every iteration of the main process
        elif not isinstance(statement, (ast.For, ast.AsyncFor, *DEFINITIONS)):
            yield statement


def _statement_loop(ctx: "FileFacts") -> ast.AST | None:
    """The innermost statement loop around the traversal (a comprehension's value goes to the
    statement that holds it)."""
    return next((loop for loop in reversed(ctx.loops) if isinstance(loop, STATEMENT_LOOPS)), None)


def _scope(ctx: "FileFacts") -> ast.AST:
    return next((f for f in reversed(ctx.functions) if isinstance(f, FUNCTION_DEFS)), ctx.tree)


def _climb(node: ast.AST, ctx: "FileFacts", scope: ast.AST, hops: int) -> int:
    """Follow the value of `node` up through the expressions that carry it, to where it stops."""
    child = node
    while True:
        parent = ctx.parent(child, within=scope)
        if parent is None or parent is scope:
            return KEPT
        if isinstance(parent, ast.Call):
            if child is parent.func:
                return KEPT
            goes = _call_destination(parent, ctx, scope, hops)
            if goes is not None:
                return goes
        elif isinstance(parent, ast.Attribute):  # a method of the value: `.numpy()`, `.astype(...)`, `.mean()`
            call = ctx.parent(parent, within=scope)
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr in WRITE_METHODS:
                    return HOST
                parent = call
        elif isinstance(parent, ast.Subscript):
            if child is parent.slice and not isinstance(child, (ast.Slice, ast.Tuple)):
                # an index into a Python container picks an object; a tensor's row picked by a
                # sampled index (`embeds[neg_idx]`) could have been picked on the device
                return HOST if _python_container(parent.value, ctx, scope) else KEPT
            if child is parent.slice:
                # a slice bound: Python slices take numbers, so the host needs them, but a visible
                # tensor's (`queue[:, ptr:ptr + n]`) could have been a count kept on the host
                return KEPT if tensor_kind(parent.value, ctx) == STRONG else HOST
        elif isinstance(parent, (ast.If, ast.While, ast.Assert, ast.comprehension)):
            return KEPT  # a test (it decides something), or iterated
        elif isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            if child is not parent.value:
                return NONE
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            goes = max((_bound(t, parent, ctx, scope, hops) for t in targets), default=NONE)
            # what the host does with a running total once the loop ends needs no read per step
            return METER if goes == HOST and _running_total(parent, ctx, scope) else goes
        elif isinstance(parent, ast.Expr):
            return NONE
        elif isinstance(parent, ast.keyword) and parent.arg and set(parent.arg.lower().split("_")) & SIZE_WORDS:
            return HOST  # `generate(enc, max_len=int(1.3 * lengths.max().item()))`: a size the callee needs
        elif isinstance(parent, ast.Return) and _picks_an_action(scope):
            return HOST  # `return q.argmax().item()` in `select_action`: the environment steps with it
        elif not isinstance(parent, CARRYING):
            return KEPT  # returned, yielded, iterated, a context manager ...
        child = parent


# Names of Python containers a number indexes (`vocab[i]`, `class_names[i]`, `dataset[i]`)
PYTHON_CONTAINER_WORDS = {"names", "vocab", "vocabulary", "words", "dictionary", "itos", "idx2word", "id2label",
                          "idx2label", "classes", "categories", "dataset", "buffer", "memory", "items", "list",
                          "paths", "files", "strings", "texts", "captions", "sentences", "prompts", "map", "mapping",
                          "lookup", "table"}
CONTAINER_DISPLAYS = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp, ast.Constant,
                      ast.JoinedStr)
CONTAINER_BUILDERS = {"list", "dict", "tuple", "sorted", "set", "str", "range", "enumerate", "zip"}


def _python_container(value: ast.AST, ctx: "FileFacts", scope: ast.AST, hops: int = 2) -> bool:
    """`names[...]` where `names = ['a', 'b']` (a display, a comprehension, `list(...)`), a string,
    or a container named so (`vocab`, `class_names`, `self.dataset`): indexing it needs a host
    number. Not a tensor, and not a value nothing shows (a model's output indexed by a sampled
    row, `embeds[idx]`, could have been indexed on the device)."""
    if isinstance(value, CONTAINER_DISPLAYS):
        return True
    if isinstance(value, ast.Call):
        return isinstance(value.func, ast.Name) and value.func.id in CONTAINER_BUILDERS
    if tensor_kind(value, ctx) == STRONG:
        return False
    if name_words(value) & PYTHON_CONTAINER_WORDS:
        return True
    if isinstance(value, ast.Name) and hops:
        values = [v for v in ctx.assignments(value.id, scope) if not isinstance(v, ast.AugAssign)]
        return bool(values) and all(isinstance(v, ast.expr) and _python_container(v, ctx, scope, hops - 1)
                                    for v in values)
    return False


def _call_destination(call: ast.Call, ctx: "FileFacts", scope: ast.AST, hops: int) -> int | None:
    """Where a value passed to `call` goes; None when the call's result carries it on."""
    func = call.func
    qual = ctx.qualname(func)
    if qual is not None:
        if qual in HOST_FUNCTIONS:
            return HOST if _every_time(call, ctx, scope) else KEPT
        if qual.startswith(HOST_MODULES):
            return HOST
        if qual.startswith(LOG_MODULES):
            return LOG
        if qual.startswith("torch.") and qual.rpartition(".")[2] in SIZED_FACTORIES:
            return HOST  # a size or a range: the host allocates with it (`torch.empty((n,))`)
        if qual.startswith(("numpy.", "math.", "statistics.", "torch.")) or qual in STRING_FUNCTIONS:
            return None
        return KEPT
    if isinstance(func, ast.Name):
        if not ctx.names.is_local(func.id):
            if func.id == "print":
                return LOG
            if func.id in HOST_BUILTINS:
                return HOST
            if func.id in CARRYING_BUILTINS:
                return None
        return HOST if name_words(func) & EVALUATOR_WORDS else KEPT
    if not isinstance(func, ast.Attribute):
        return KEPT
    method, words = func.attr, name_words(func.value)
    if method in DECODE_METHODS or method.startswith("post_process") or steps_environment(call):
        return HOST
    if is_log_call(call) or method in LOG_SINK_METHODS:
        return LOG
    if method == "update" and words & METER_WORDS:
        return METER
    if method in WRITE_METHODS:
        return LOG if any("log" in word for word in words) else HOST if _every_time(call, ctx, scope) else KEPT
    if method in EVALUATOR_METHODS or words & EVALUATOR_WORDS:
        return HOST
    if method in SIZING_METHODS:
        return HOST  # `x.view(n, -1)`, `x.new_zeros(n)`, `x.split(sizes)`: a size the host needs
    if method in ("join", "format") and isinstance(func.value, ast.Constant):
        return None  # `", ".join(...)`, `"{}".format(v)`: a string of the value
    if method in CONTAINER_METHODS:
        head = chain_head(func.value)
        if head is None or head.id in SELF_NAMES:
            return KEPT  # `self.preds.append(p)`: kept on the object
        return _name_destination(head.id, None, ctx, scope, hops)
    return KEPT


def _every_time(call: ast.Call, ctx: "FileFacts", scope: ast.AST) -> bool:
    """`call` (a write to a file) runs in the statement loop around the read, not after it: a
    loss history saved once the loop ends (`train_losses.append(loss.item())`, then
    `np.savetxt(path, train_losses)`) needs no value on the host every iteration."""
    loop = _statement_loop(ctx)
    node = call
    while loop is not None and node is not None and node is not scope:
        if node is loop:
            return True
        node = ctx.parent(node, within=scope)
    return loop is None


def _running_total(statement: ast.stmt, ctx: "FileFacts", scope: ast.AST) -> bool:
    """`epoch_loss += n * loss.item()` in a loop that reads the total nowhere else: a sum the device
    could keep, read once after the loop, whatever the host does with it then (a plot, a file)."""
    if not (isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name)):
        return False
    loop = innermost_loop(statement, ctx, DEFINITIONS)
    if loop is None:
        return False
    inside = {id(node) for node in ast.walk(loop)}  # (the `+=` itself stores, it loads nothing)
    return not any(id(use) in inside for use in _loads(scope, ctx).get(statement.target.id, []))


def _bound(target: ast.AST, statement: ast.stmt, ctx: "FileFacts", scope: ast.AST, hops: int) -> int:
    """Where a value assigned to `target` goes: through the names it binds, or the container
    (`stats["loss"] = v`) it is stored in."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return max((_bound(t, statement, ctx, scope, hops) for t in target.elts), default=NONE)
    if isinstance(target, ast.Starred):
        target = target.value
    if isinstance(target, ast.Name):
        return _name_destination(target.id, statement, ctx, scope, hops)
    head = chain_head(target)
    if head is None or head.id in SELF_NAMES:
        return KEPT
    return _name_destination(head.id, statement, ctx, scope, hops)


def _name_destination(name: str, statement: ast.stmt | None, ctx: "FileFacts", scope: ast.AST, hops: int) -> int:
    """Where the uses of `name` in the scope (outside the statement that binds it) take it."""
    if hops <= 0:
        return KEPT
    inside = {id(n) for n in ast.walk(statement)} if statement is not None else set()
    goes = NONE
    for use in _loads(scope, ctx).get(name, []):
        if id(use) in inside:
            continue
        parent = ctx.parent(use, within=scope)
        if isinstance(parent, ast.Attribute) and parent.attr in CONTAINER_METHODS:
            call = ctx.parent(parent, within=scope)
            if isinstance(call, ast.Call) and call.func is parent:
                continue  # `stats.append(...)`: the container grows, its value goes nowhere yet
        if isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store):
            continue  # `stats["loss"] = ...`
        goes = max(goes, _climb(use, ctx, scope, hops - 1))
        if goes == HOST:
            break
    return goes


def _loads(scope: ast.AST, ctx: "FileFacts") -> dict[str, list[ast.Name]]:
    """The names read in a function (or the module), not in the functions defined in it."""
    key = ("name-loads", id(scope))
    if key not in ctx.memo:
        table: dict[str, list[ast.Name]] = {}
        for node in body_nodes(scope.body, stop_at=DEFINITIONS):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                table.setdefault(node.id, []).append(node)
        ctx.memo[key] = table
    return ctx.memo[key]


# -- values the host needs ---------------------------------------------------------------------
# Words of a function that picks an agent's action (`select_action`, `act`, `choose_action`): what
# it returns goes to the environment's `step`, on the host.
ACTION_WORDS = {"action", "actions", "act"}


def _names_an_action(name: str) -> bool:
    """`select_action`, `act`, `get_actions`: the name of a function that picks an agent's action."""
    return bool(set(name.lower().split("_")) & ACTION_WORDS)


def _picks_an_action(scope: ast.AST) -> bool:
    return isinstance(scope, FUNCTION_DEFS) and _names_an_action(scope.name)


def needed_on_host(node: ast.AST, ctx: "FileFacts") -> bool:
    """The value read back at `node` (where the traversal is) is what the host needs, every
    iteration: it decides whether the loop goes on (`if token.item() == eos: break`, or a name
    assigned it and tested so), is asserted (a guard that raises), picks a Python object
    (`names[int(scores.argmax())]`), or goes to an environment's `step` (a simulator on the
    host: `actions = policy(obs).cpu().numpy()`, then `env.step(actions)`)."""
    return _decides_control_flow(node, ctx) or _feeds_environment(ctx) or _returns_an_action(ctx)


def _returns_an_action(ctx: "FileFacts") -> bool:
    """The read is returned by an agent's action-selection function (`def act(self, state): return
    q(state).argmax(1).item()`), directly or through the name it is assigned and returned
    (`actions = qs.argmax().item()` ... `return actions`, also in a `predict` method when the
    name says it holds actions): its caller hands the action to the environment, on the host."""
    function = ctx.function
    if not isinstance(function, FUNCTION_DEFS):
        return False
    for ancestor in reversed(ctx.stack):
        if isinstance(ancestor, ast.Return):
            return _picks_an_action(function)
        if isinstance(ancestor, ast.Assign):
            names = {t.id for t in ancestor.targets if isinstance(t, ast.Name)}
            returned = {n.value.id for n in walk(function, FUNCTION_DEFS + (ast.Lambda, ast.ClassDef))
                        if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)}
            return bool(names & returned) and (_picks_an_action(function) or any(_names_an_action(n) for n in names))
        if isinstance(ancestor, ast.stmt):
            return False
    return False


def amortised(node: ast.AST, ctx: "FileFacts") -> bool:
    """The read's wait is small beside the work around it, asked once the traversal is over: an
    update between two environment steps (`waits_for_an_action`), or one read per batch of an
    evaluation loop over batches of a thousand examples or more (`for x, y in test_loader:` with
    `--test-batch-size` 1000: ten reads per epoch on MNIST)."""
    return waits_for_an_action(node, ctx) or _per_big_batch(node, ctx)


BIG_BATCH = 1000  # examples per batch from which one read per batch is negligible


def _per_big_batch(node: ast.AST, ctx: "FileFacts") -> bool:
    loop = innermost_loop(node, ctx, DEFINITIONS)
    if not isinstance(loop, (ast.For, ast.AsyncFor)) or runs_training_step(loop):
        return False
    size = _batch_size(loop.iter, ctx, ctx.enclosing_function(loop))
    return isinstance(size, int) and not isinstance(size, bool) and size >= BIG_BATCH


def _batch_size(node: ast.AST, ctx: "FileFacts", function: ast.AST | None, hops: int = 2) -> object:
    """The batch size of the DataLoader a loop walks (`enumerate(test_loader)`, `tqdm(loader)`, a
    name assigned one in the function or the module), a constant or an option's default."""
    while isinstance(node, ast.Call) and callee_name(node.func) in ("enumerate", "tqdm", "iter") and node.args:
        node = node.args[0]
    if isinstance(node, ast.Name) and hops:
        values = (ctx.assignments(node.id, function) if function is not None else []) or \
            ctx.assignments(node.id, ctx.tree)
        return _batch_size(values[-1], ctx, function, hops - 1) if len(values) == 1 else None
    if not (isinstance(node, ast.Call) and callee_name(node.func) == "dataloader"):
        return None
    size = next((k.value for k in node.keywords if k.arg == "batch_size"), None)
    if isinstance(size, ast.Constant):
        return size.value
    if isinstance(size, ast.Attribute) and isinstance(size.value, ast.Name):
        return option_defaults(ctx).get(size.attr)
    return None


def waits_for_an_action(node: ast.AST, ctx: "FileFacts") -> bool:
    """The read at `node` runs once per call of its function (no loop of its own around it), and
    every call of that function in the file sits right in a loop that, each iteration, picks an
    agent's action (`action = self.select_action(state)`) or steps an environment: a DQN's update
    between two environment steps. The next action waits for this update's kernels anyway (the
    host hands it to the environment), so the read adds no wait of its own. Asked once the
    traversal is over: the file's calls are resolved with all its bindings."""
    function = ctx.enclosing_function(node)
    if function is None or innermost_loop(node, ctx, DEFINITIONS) is not None:
        return False
    sites = CallSites.of(ctx).callers(function)
    return bool(sites) and all(_acts_every_iteration(innermost_loop(site, ctx, DEFINITIONS)) for site in sites)


def _acts_every_iteration(loop: ast.AST | None) -> bool:
    if loop is None:
        return False
    return any(steps_environment(call) or _names_an_action(callee_name(call.func)) for call in calls_every_iteration(loop))


def _decides_control_flow(node: ast.AST, ctx: "FileFacts") -> bool:
    if _indexes_a_container(node, ctx):
        return True
    if any(isinstance(ancestor, ast.Assert) and ancestor.msg is not node for ancestor in ctx.stack):
        return True
    # the statement loop around the read: a comprehension's value (`{k: v.item() for ...}`) goes
    # to the statement that holds it
    loop = _statement_loop(ctx)
    names = set()
    for ancestor in reversed(ctx.stack):
        if ancestor is loop or isinstance(ancestor, FUNCTION_DEFS):
            break
        if isinstance(ancestor, (ast.If, ast.While)) and _leaves_loop(ancestor.body) \
                and any(n is node for n in ast.walk(ancestor.test)):
            return True
        if isinstance(ancestor, ast.Assign):
            names = {t.id for t in ancestor.targets if isinstance(t, ast.Name)}
    if not names or loop is None:
        return False
    # tested where a failed test leaves the loop (`if not math.isfinite(loss_value): sys.exit(1)`,
    # `if math.isnan(sum(losses.values())): raise`) or asserted (`assert math.isfinite(loss_value)`)
    return any(isinstance(n, (ast.If, ast.Assert)) and (isinstance(n, ast.Assert) or _leaves_loop(n.body)) and
               _tests_value(n.test, names) for statement in loop.body for n in ast.walk(statement))


TYPE_TESTS = {"isinstance", "hasattr", "type", "callable"}


def _tests_value(test: ast.AST, names: set[str]) -> bool:
    """`test` reads the value of one of `names`, not only its type (`assert isinstance(v, float)`
    needs no value)."""
    if isinstance(test, ast.Name):
        return test.id in names
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in TYPE_TESTS:
        return False
    return any(_tests_value(child, names) for child in ast.iter_child_nodes(test))


# calls that end the program: `if not math.isfinite(loss_value): sys.exit(1)` is a stop test
EXITS = {"exit", "quit", "_exit", "abort"}


def _leaves_loop(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.Break, ast.Return, ast.Continue, ast.Raise, ast.Assert))
               or (isinstance(n, ast.Call) and _ends_program(n))
               for statement in body for n in ast.walk(statement))


def _ends_program(call: ast.Call) -> bool:
    """`sys.exit(1)`, `exit()`, `quit()`, `os._exit(1)`, `os.abort()`."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in ("exit", "quit")
    return isinstance(func, ast.Attribute) and func.attr in EXITS and isinstance(func.value, ast.Name) \
        and func.value.id in ("sys", "os")


def _indexes_a_container(node: ast.AST, ctx: "FileFacts") -> bool:
    """`names[int(scores.argmax().item())]`: the number picks a Python object."""
    child = node
    for ancestor in reversed(ctx.stack):
        if isinstance(ancestor, ast.Call) and isinstance(ancestor.func, ast.Name) \
                and ancestor.func.id in ("int", "float") and child in ancestor.args:
            child = ancestor
            continue
        return isinstance(ancestor, ast.Subscript) and ancestor.slice is child
    return False


def _feeds_environment(ctx: "FileFacts") -> bool:
    """The statement being visited steps an environment with the value, or assigns it to names
    (and names derived from them) that an environment's `step` gets in the same loop or function."""
    names: set[str] = set()
    for ancestor in reversed(ctx.stack):
        if isinstance(ancestor, ast.Call) and steps_environment(ancestor):
            return True
        if isinstance(ancestor, ast.Assign):
            names = {t.id for target in ancestor.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
            break
        if isinstance(ancestor, ast.stmt):
            break
    scope = ctx.loops[0] if ctx.loops else ctx.function
    if not names or scope is None or not isinstance(scope, (*STATEMENT_LOOPS, *FUNCTION_DEFS)):
        return False
    nodes = [n for statement in scope.body for n in ast.walk(statement)]
    for _ in range(2):  # `clipped = np.clip(actions, lo, hi)`: a name derived from it
        for n in nodes:
            if isinstance(n, ast.Assign) and _mentions_any(n.value, names):
                names |= {t.id for target in n.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
    return any(isinstance(n, ast.Call) and steps_environment(n) and
               any(_mentions_any(a, names) for a in [*n.args, *(k.value for k in n.keywords)]) for n in nodes)




def _mentions_any(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


# -- reads after a drain -----------------------------------------------------------------------

# Modules whose functions queue no device work.
HOST_ONLY_MODULES = ("time.", "logging.", "math.", "numpy.", "os.", "sys.", "json.", "wandb.", "warnings.",
                     "random.", "datetime.", "tqdm.", "mlflow.", "statistics.", "torch.cuda.", "torch.backends.")
# Methods that queue no device work, or only a small one over the step's results (`.float().mean()`).
HOST_ONLY_METHODS = {
    "append", "extend", "insert", "pop", "items", "keys", "values", "get", "setdefault", "format", "join", "split",
    "strip", "replace", "startswith", "endswith", "lower", "upper", "update", "reset", "record", "elapsed_time",
    "write", "flush", "set_postfix", "set_postfix_str", "set_description", "set_description_str", "add_scalar",
    "add_scalars", "add_histogram", "add_text", "log", "log_dict", "log_metrics", "log_metric", "detach",
} | set(READ_METHODS) | SHAPE_METHODS | ((TENSOR_METHODS | REDUCTIONS) - {"to", "cuda"})
DEVICE_OWNER_WORDS = {"optimizer", "optim", "opt", "scaler", "accelerator", "fabric", "engine", "dist"}
DRAIN_MODULES = ("torch.cuda.", "torch.mps.", "torch.xpu.", "torch.accelerator.", "torch.npu.")


def is_drain(call: ast.Call, ctx: "FileFacts") -> bool:
    """A call that waits for all queued device work: `torch.cuda.synchronize()` however it is
    imported or aliased (`sync = torch.cuda.synchronize`), `torch.cuda.current_stream()
    .synchronize()`, a stream's or an event's `synchronize()`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "synchronize":
        return True  # torch.cuda.synchronize(), stream.synchronize(), event.synchronize()
    if isinstance(func, ast.Name):
        qual = ctx.qualname(func)
        if qual is None:  # `sync = torch.cuda.synchronize`, here or at the module's top level
            values = ctx.assignments(func.id) or ctx.assignments(func.id, ctx.tree)
            qual = ctx.qualname(values[-1]) if values and isinstance(values[-1], ast.expr) else None
        return qual is not None and qual.startswith(DRAIN_MODULES) and qual.endswith(".synchronize")
    return False


def _reads(call: ast.Call, ctx: "FileFacts") -> bool:
    """A read that drains the queue: `.item()`, `.cpu()`, `.tolist()` of a device tensor, `float(t)`,
    `scaler.get_scale()`."""
    if hidden_read(call, ctx) or logged_tensor(call, ctx) is not None:
        return True
    if is_read_call(call):
        return not in_host_memory(call.func.value, ctx)
    return isinstance(call.func, ast.Name) and call.func.id in ("float", "int") and len(call.args) == 1 \
        and tensor_kind(call.args[0], ctx) == STRONG and not in_host_memory(call.args[0], ctx)


def device_work(node: ast.AST, ctx: "FileFacts") -> bool:
    """Code under `node` may queue device work: a model or module call, a backward or optimizer
    step, a torch op (not a small one over results: a reduction, an elementwise method), a call
    of the project's code or of a library the file does not show."""
    return any(_queues_work(call, ctx) for call in calls_in([node]))


def _queues_work(call: ast.Call, ctx: "FileFacts") -> bool:
    if is_drain(call, ctx) or _reads(call, ctx) or is_log_call(call):
        return False
    func = call.func
    qual = ctx.qualname(func)
    if qual is not None:
        if is_torch_op(qual):
            return qual.rpartition(".")[2] not in HOST_ONLY_METHODS
        return not qual.startswith(HOST_ONLY_MODULES)
    if isinstance(func, ast.Name):  # a builtin queues nothing; a function of the project may
        return ctx.names.is_local(func.id) or not hasattr(builtins, func.id)
    if not isinstance(func, ast.Attribute) or is_module_call(call, ctx) or func.attr in DEVICE_STEP_METHODS:
        return True
    word = callee_name(func)
    if word in RUNS_MODEL_WORDS or any(part in RUNS_MODEL_WORDS for part in word.split("_")) \
            or name_words(func.value) & DEVICE_OWNER_WORDS:
        return True
    if any(isinstance(a, ast.Name) and set(a.id.lower().split("_")) & MODEL_WORDS for a in call.args):
        return True  # `ema.update(model)`
    return func.attr not in HOST_ONLY_METHODS or (isinstance(func.value, ast.Name) and func.value.id in SELF_NAMES
                                                  and func.attr not in LOG_SINK_METHODS)


def after_drain(node: ast.AST, ctx: "FileFacts") -> bool:
    """The read at `node` adds no new wait: before it, in its loop body or function body and
    unconditionally, a full drain (`is_drain`) or another read, with no device work between. A
    drain inside an `if`, a loop or a `try` may not have run; one in a `with` body has."""
    scope = _scope(ctx)
    stop = _statement_loop(ctx) or scope
    child, statement = node, ctx.parent(node, within=scope)
    while statement is not None and not isinstance(statement, ast.stmt):
        child, statement = statement, ctx.parent(statement, within=scope)
    if statement is None or any(_queues_work(call, ctx) for call in calls_in([child]) if call is not node):
        return False  # the read's own statement queues work: `model(x).item()`
    while statement is not stop:
        holder = ctx.parent(statement, within=scope)
        place = block_of(statement, holder)
        if place is None:
            return False
        block, index = place
        drained = _drained(block[:index], ctx)
        if drained is not None:
            return drained
        if holder is stop or not isinstance(holder, ast.stmt) \
                or isinstance(holder, (ast.If, ast.While)) and device_work(holder.test, ctx):
            return False
        statement = holder
    return False


def before_read(node: ast.Call, ctx: "FileFacts") -> bool:
    """The drain `node`, a statement of its own, is followed in its block by a read with no device
    work between: the read would wait for the same queue without it. A
    read inside an `if`, a loop or a `try` may not run, and does not count."""
    statement = ctx.parent(node)
    holder = ctx.parent(statement) if isinstance(statement, ast.Expr) and statement.value is node else None
    place = block_of(statement, holder)
    if place is None:
        return False
    block, index = place
    for following in block[index + 1:]:
        if isinstance(following, MAY_NOT_RUN):
            if device_work(following, ctx):
                return False
            continue
        if any(is_drain(call, ctx) for call in calls_in([following])):
            return False  # another drain: each is its own finding
        drained = _drains(following, ctx)  # a read with no other work (True), or work (False)
        if drained is not None:
            return drained
    return False


# Statements whose parts may not run (or run later): what they hold neither drains nor reads for sure.
MAY_NOT_RUN = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, *DEFINITIONS)


def _drained(block: list[ast.stmt], ctx: "FileFacts") -> bool | None:
    """Scanning back from the end of `block`: True at a drain, False at device work, None when
    neither occurs."""
    for statement in reversed(block):
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            inner = _drained(statement.body, ctx)
            if inner is not None:
                return inner
            if any(device_work(item, ctx) for item in statement.items):
                return False
            continue
        if not isinstance(statement, MAY_NOT_RUN):
            drained = _drains(statement, ctx)
            if drained is not None:
                return drained
        elif isinstance(statement, ast.If) and device_branch_drains(statement, ctx):
            return True
        elif device_work(statement, ctx):
            return False
    return None


# Words of a test that picks the accelerator (`if device_type == "cuda":`, `elif device == "mps":`).
DEVICE_TEST_WORDS = {"cuda", "mps", "xpu", "device", "device_type", "is_cuda", "accelerator", "gpu"}


def device_branch_drains(branch: ast.If, ctx: "FileFacts") -> bool:
    """`if device_type == "cuda": torch.cuda.synchronize()`, or an `elif` chain of such branches:
    on the accelerator a finding is about, the branch for it runs, and drains."""
    words = name_words(branch.test) | {node.value.lower() for node in ast.walk(branch.test)
                                       if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    if not words & DEVICE_TEST_WORDS or device_work(branch.test, ctx):
        return False
    if _drained(branch.body, ctx):
        return True
    orelse = branch.orelse
    return len(orelse) == 1 and isinstance(orelse[0], ast.If) and device_branch_drains(orelse[0], ctx)


def _drains(statement: ast.stmt, ctx: "FileFacts") -> bool | None:
    """A simple statement drains the queue when it holds a drain or a read and queues no device
    work outside what that read reads (`v = model(x).sum().item()` drains; `model(x.cpu())` does
    not); None when it holds neither work nor a drain."""
    calls = list(calls_in([statement]))
    drains = [call for call in calls if is_drain(call, ctx) or _reads(call, ctx)]
    read = {id(n) for call in drains for n in ast.walk(call)}
    work = [call for call in calls if _queues_work(call, ctx)]
    if drains and all(id(call) in read for call in work):
        return True
    return False if work else None


def read_elsewhere(operand: ast.AST, ctx: "FileFacts") -> bool:
    """The loop (or the function) around the traversal reads `operand`'s tensor back to the host
    elsewhere (`if pos[0] != blank` ... `pos[j].item()`): host-driven code such as a beam
    search, where choosing on the device would save no wait."""
    root = chain_head(operand)
    scope = ctx.loops[-1] if ctx.loops else ctx.function
    if root is None or not isinstance(getattr(scope, "body", None), list):
        return False
    for statement in scope.body:
        for n in ast.walk(statement):
            if not isinstance(n, ast.Call):
                continue
            if is_read_call(n) and isinstance(n.func, ast.Attribute):
                read = n.func.value
            elif isinstance(n.func, ast.Name) and n.func.id in SCALAR_CONVERSIONS and n.args:
                read = n.args[0]
            else:
                continue
            if getattr(chain_head(read), "id", None) == root.id:
                return True
    return False


# Logging calls that read the tensors they are given: TensorBoard's `add_scalar(tag, value)` and
# `add_scalars(tag, {name: value})` copy each value to the host (`make_np`), `wandb.log({...})`
# converts tensors to numbers. (The position of the value, or of the dict of values.)
TENSOR_SINK_METHODS = {"add_scalar": (1, "scalar_value"), "add_scalars": (1, "tag_scalar_dict")}


def logged_tensor(call: ast.Call, ctx: "FileFacts") -> ast.AST | None:
    """The value, visibly a device tensor, that a logging call reads back: `writer.add_scalar(
    "loss", loss, step)`, `writer.add_scalars("loss", {"train": loss}, step)`, `wandb.log({"loss":
    loss})`."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in TENSOR_SINK_METHODS:
        index, keyword = TENSOR_SINK_METHODS[func.attr]
    elif isinstance(func, ast.Attribute) and func.attr == "log" and ctx.qualname(func) == "wandb.log":
        index, keyword = 0, "data"
    elif _logger_log(call, ctx):
        index, keyword = 1, "value"
    else:
        return None
    value = call.args[index] if len(call.args) > index else \
        next((k.value for k in call.keywords if k.arg == keyword), None)
    values = value.values if isinstance(value, ast.Dict) else [value] if value is not None else []
    return next((v for v in values if v is not None and tensor_kind(v, ctx) == STRONG
                 and not in_host_memory(v, ctx)), None)


# The names of objects whose `log(key, value, ...)` writes a value out (a project's logger, a
# tracker): to print or write it, they read a tensor back.
LOGGER_WORDS = {"logger", "writer", "tracker", "tb", "tensorboard"}


def _logger_log(call: ast.Call, ctx: "FileFacts") -> bool:
    """`logger.log("train/loss", loss, step)`, `self.logger.log(f"{k}", v)`: a logger object's
    `log` given a key and a value (not `self.log(...)`: Lightning keeps tensors until it logs)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "log" and len(call.args) >= 2) \
            or ctx.qualname(func) is not None:
        return False
    key = call.args[0]
    return (isinstance(key, ast.JoinedStr) or isinstance(key, ast.Constant) and isinstance(key.value, str)) \
        and bool(set(name_words(func.value)) & LOGGER_WORDS)


# -- reads of each element, masked writes -------------------------------------------------------

def elementwise_read(value: ast.AST, ctx: "FileFacts") -> bool:
    """`value` (what `.item()` or `float()` reads) is an element of a tensor that a loop around
    walks (`[x.item() for x in t]`, `for i, v in enumerate(t): total += float(v)`), a tensor
    visibly on the device: one `.tolist()` reads them all with one sync."""
    head = chain_head(value)
    if head is None:
        return False
    bound = ctx.assignments(head.id)
    if not bound or not isinstance(bound[-1], ast.expr):
        return False
    source = bound[-1]
    for loop in reversed(ctx.loops):
        iterables = [g.iter for g in loop.generators] if isinstance(loop, COMPREHENSIONS) \
            else [getattr(loop, "iter", None)]
        if any(n is source for iterable in iterables if iterable is not None for n in ast.walk(iterable)):
            return tensor_kind(source, ctx) == STRONG and not in_host_memory(source, ctx)
    return False


def slice_bound_reads(node: ast.Subscript, ctx: "FileFacts") -> list[ast.Subscript]:
    """The bounds of `node`'s slices that are elements of a tensor (`x[p, :lengths[p]]`): a 0-d
    tensor there is turned into an int, a read back to the host (in a loop over samples, one per
    sample). Not sizes (`x.shape[-1]`)."""
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return [bound for part in parts if isinstance(part, ast.Slice)
            for bound in (part.lower, part.upper, part.step) if isinstance(bound, ast.Subscript)
            and tensor_kind(bound.value, ctx) == STRONG]


MASKED_WRITE_METHODS = {"masked_fill_", "masked_scatter_", "index_put_", "index_add_", "index_copy_", "index_fill_"}


def masked_write_only(node: ast.If, ctx: "FileFacts") -> bool:
    """`if m.any(): x[m] = v` (or `torch.any(m)`, `x.masked_fill_(m, 0)`), no `else`: the branch
    only writes through the mask, which does nothing where the mask is empty, so the test saves
    no work and costs a sync. Not when a branch runs a model or other code, or keeps Python state."""
    test = node.test
    if isinstance(test, ast.Call) and not test.args and isinstance(test.func, ast.Attribute) \
            and test.func.attr == "any":
        mask = test.func.value
    elif isinstance(test, ast.Call) and len(test.args) == 1 and ctx.qualname(test.func) == "torch.any":
        mask = test.args[0]
    else:
        return False
    if node.orelse or not node.body:
        return False
    wanted = ast.dump(mask)
    for statement in node.body:
        if isinstance(statement, (ast.Assign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            writes = all(isinstance(t, ast.Subscript) and any(ast.dump(n) == wanted for n in ast.walk(t.slice))
                         for t in targets)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = statement.value
            writes = isinstance(call.func, ast.Attribute) and call.func.attr in MASKED_WRITE_METHODS \
                and any(ast.dump(n) == wanted for a in call.args for n in ast.walk(a))
        else:
            return False
        if not writes or any(_runs_code(call, ctx) for call in calls_in([statement])):
            return False
    return True


def _runs_code(call: ast.Call, ctx: "FileFacts") -> bool:
    """A call that is not a torch op or a tensor method: a model, a helper, a function of a library."""
    qual = ctx.qualname(call.func)
    if qual is not None:
        return not is_torch_op(qual)
    func = call.func
    return not isinstance(func, ast.Attribute) or is_module_call(call, ctx) or func.attr in DEVICE_STEP_METHODS \
        or callee_name(func) in RUNS_MODEL_WORDS or (isinstance(func.value, ast.Name) and func.value.id in SELF_NAMES)
