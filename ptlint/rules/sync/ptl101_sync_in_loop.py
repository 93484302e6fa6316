"""PTL101 sync-in-loop: `.item()`, `.cpu()`, `.numpy()`, `.tolist()` on a tensor in code that runs every step."""

from __future__ import annotations

import ast

from ptlint.engine.rule import PER_STEP, Rule
from ptlint.semantics.compiled import is_traced
from ptlint.semantics.nodes import SELF_NAMES, block_of, built_string, chain_head, name_words
from ptlint.semantics.pipeline import in_host_code
from ptlint.semantics.uses import (
    adds_no_wait,
    amortised,
    avoidable,
    elementwise_read,
    slice_bound_reads,
    is_read_call,
    legacy_read,
    logged_tensor,
    masked_write_only,
    read_elsewhere,
)
from ptlint.semantics.values import (
    DEVICE_STEP_METHODS,
    SCALAR_CONVERSIONS,
    STRONG,
    already_waited,
    hidden_read,
    in_host_memory,
    is_module_call,
    is_scalar_tensor,
    is_torch_op,
    masked_reduction,
    reads_module_state,
    step_counter,
    size_read,
    tensor_kind,
    tested_tensor,
    value_test,
)
from ptlint.semantics.where import backpropagates, in_model_loop, is_log_call, may_be_step

# `float(t)`, `int(t)`: a number for logging or bookkeeping, like `.item()`. `bool(t)` (and `not t`,
# `t and x`) is a decision the host acts on, like the guards this rule leaves alone.
NUMBER_CONVERSIONS = SCALAR_CONVERSIONS - {"bool"}
SIZE_HELP = "Take the size from the host (`len(graphs)`, a count the loader gives), or keep the sizing on the device."
ELEMENTWISE_HELP = "Read the whole tensor once with `.tolist()` (one sync) instead of one element at a time."
MASKED_REDUCTION_HELP = ("Reduce with the mask on the device, at a fixed shape: `(x * m).sum() / m.sum()` for "
                         "`x[m].mean()`, `torch.where(m, x, 0).sum()` for `x[m].sum()`.")
MASKED_HELP = "Drop the `if`: a write through an empty mask changes nothing, and the test waits for the GPU."
WARN_HELP = ("Test it every N steps or once after the loop (keep a device flag such as `bad |= y.min() < -1`): "
             "a warning does not need a wait every step.")
COUNTER_HELP = ("Count in a Python int (`self.update_count = 0` ... `+= 1`): the host knows the count without "
                "asking the GPU; keep a tensor copy only where it must be saved with the model.")
def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _checks_type_first(test: ast.AST, found: ast.AST, ctx) -> bool:
    """`isinstance(x, torch.Tensor) and torch.isnan(x)`, `torch.is_tensor(x) and x.any()`: the code
    does not know it holds a tensor; it normalises an input."""
    if not (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)):
        return False
    checked = {ast.dump(value.args[0]) for value in test.values
               if isinstance(value, ast.Call) and value.args and (
                   isinstance(value.func, ast.Name) and value.func.id == "isinstance"
                   or ctx.qualname(value.func) == "torch.is_tensor")}
    return bool(checked) and any(ast.dump(node) in checked for node in ast.walk(found))


class SyncInLoop(Rule):
    code = "PTL101"
    needs_accelerator = True
    name = "sync-in-loop"
    message = "{what} in a loop waits for the GPU every iteration (device-to-host sync)"
    help = ("Keep the value on the device (`total += loss.detach()`) and read it with `.item()` once, every N "
            "steps or after the loop.")
    step_message = "{what} in code that runs every step waits for the GPU (device-to-host sync)"
    contexts = frozenset({PER_STEP})  # not once, not once per epoch, not on the error path
    cold = False
    # the method reads, GradScaler's hidden ones, and what the implicit conversions need: a call, a
    # condition, a format
    triggers = (".item(", ".cpu(", ".numpy(", ".tolist(", "float(", "int(", "bool(", "print(", "if", "not", "and",
                "or", "%", "format(", "{", "get_scale(", "state_dict(", ".data[0]")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._stalls: dict[int, bool] = {}  # reported node -> a loop around it launches device work
        self._read_in_statement: set[int] = set()  # statements with a reported read

    # -- explicit reads: `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, GradScaler's ----------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func  # `.item()`, `int()` or `float()` of a step counter kept in a tensor first
        if isinstance(func, ast.Attribute) and func.attr == "item" and self._counter_read(node, func.value, "`.item()` of") \
                or isinstance(func, ast.Name) and func.id in NUMBER_CONVERSIONS and node.args \
                and self._counter_read(node, node.args[0], f"`{func.id}()` of"):
            return
        if is_read_call(node) or hidden_read(node, self.ctx):
            if self.ctx.loops or may_be_step(self.ctx):
                self._method_read(node)
            return
        masked = masked_reduction(node, self.ctx)
        if masked is not None and self._worth_asking(node) and self._holds_a_tensor(masked.value):
            self._read(node, masked.value, "a reduction over a boolean-mask selection (`x[mask]` counts the mask)",
                       help=MASKED_REDUCTION_HELP)
        size = size_read(node, self.ctx) if self._worth_asking(node) and may_be_step(self.ctx) else None
        if size is not None and not adds_no_wait(node, self.ctx):  # (what the host does with it next: no matter)
            self._report_read(size, f"a tensor as a size of `{ast.unparse(func)}()` (it reads the value back)",
                              in_model_loop(self.ctx), SIZE_HELP)
        logged = logged_tensor(node, self.ctx)
        if not (isinstance(func, ast.Name) and (func.id in NUMBER_CONVERSIONS or func.id == "print")
                or isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant)
                or logged is not None) or not self._worth_asking(node):
            return
        if logged is not None:
            self._read(logged, logged, f"`{ast.unparse(func)}()` of a tensor (it reads the value back)")
        if isinstance(func, ast.Name) and func.id in NUMBER_CONVERSIONS:
            if len(node.args) == 1 and not node.keywords and self._strong(node.args[0]) \
                    and not self.ctx.names.is_local(func.id):
                self._read(node, node.args[0], f"`{func.id}()` of a tensor", each=True)
        elif isinstance(func, ast.Name) and func.id == "print":
            arg = next((a for a in node.args if self._strong(a)), None)
            if arg is not None and not self.ctx.names.is_local("print"):
                self._read(arg, arg, "`print()` of a tensor")
        elif isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str):
            arg = next((a for a in [*node.args, *(k.value for k in node.keywords)] if self._strong(a)), None)
            if arg is not None:
                self._read(arg, arg, "`.format()` of a tensor")

    def _method_read(self, node: ast.Call) -> None:
        value = node.func.value
        chain = value
        while isinstance(chain, (ast.Call, ast.Attribute, ast.Subscript)):
            if is_read_call(chain):  # `x.cpu().numpy()`: one sync, reported at the first call
                return
            chain = chain.func if isinstance(chain, ast.Call) else chain.value
        if not self._holds_a_tensor(value):
            return
        method = node.func.attr
        if not is_read_call(node):  # `scaler.get_scale()`: an `.item()` inside
            self._read(node, node, f"`{ast.unparse(node)}` (GradScaler calls `.item()`)")
            return
        scalar = method == "item" or is_scalar_tensor(value, self.ctx)
        what = f"`.{method}()`" if method == "item" or self.ctx.loops else f"`.{method}()` of a one-element tensor"
        if self.ctx.loops or scalar:
            # outside a loop, one bulk copy per step that the host needs (`ids.cpu()`) is the form to
            # aim for; a copy of one element (`loss.detach().cpu()`) is an `.item()`
            self._read(node, value, what, scalar=scalar, each=method == "item")

    # -- the legacy read: `loss.data[0]` ---------------------------------------------------------
    def visit_Subscript(self, node: ast.Subscript) -> None:
        owner = legacy_read(node)  # one element: visibly, or named for a loss (a helper's `loss`)
        if owner is not None and (is_scalar_tensor(owner, self.ctx) or isinstance(owner, ast.Name)
                                  and "loss" in name_words(owner)) \
                and self._worth_asking(node) and self._holds_a_tensor(owner):
            self._read(node, owner, "`.data[0]` (the `.item()` of PyTorch before 0.4)", each=True)
        for bound in slice_bound_reads(node, self.ctx) if self._worth_asking(node) else ():  # `x[p, :n[p]]`
            self._read(bound, bound, "a tensor's element as a slice bound")

    # -- a step counter kept in a tensor -----------------------------------------------------------
    def _counter_read(self, node: ast.AST, value: ast.AST, what: str) -> bool:
        """A read of a step counter kept in a tensor (`value`), whatever it is for: the host could
        count itself. Whether `value` is one."""
        counter = step_counter(value, self.ctx)
        if counter is not None and self._worth_asking(node) and not in_host_code(self.ctx) and not self._read_again():
            self._report_read(node, f"{what} `self.{counter}`, a step counter kept in a tensor,",
                              in_model_loop(self.ctx), COUNTER_HELP)
        return counter is not None

    # -- implicit reads: conversions, conditions, formatting ---------------------------------------
    def visit_If(self, node: ast.If | ast.IfExp) -> None:
        """`if loss < best: best = loss`, `a if t > 0 else b`: the test calls `bool()` on a
        tensor to choose between tensor values, which `torch.where` does on the device. Only
        branches of tensor assignments are reported (`_tensor_work_only`), and `if m.any():`
        before writes through the mask `m` (`masked_write_only`); a `while` test decides
        whether the loop goes on and is never reported."""
        tested = node.test.left if isinstance(node.test, ast.Compare) else node.test
        if self._counter_read(tested, tested, "a test of"):
            return
        # cheap first: only a branch of tensor assignments, or tensor or number arms, are reported
        arms = (node.body, node.orelse) if isinstance(node, ast.IfExp) else ()
        masked = isinstance(node, ast.If) and masked_write_only(node, self.ctx)
        # `if torch.min(y) < -1: print(...)`: a wait every step only to warn
        warns = isinstance(node, ast.If) and not node.orelse and all(
            isinstance(s, ast.Expr) and is_log_call(s.value) for s in node.body)
        returns = isinstance(node, ast.If) and self._returns_tensors(node)
        if isinstance(node, ast.If) and not masked and not warns and not returns and not all(
                isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Pass)) for s in node.body + node.orelse):
            return
        if any(isinstance(arm, ast.Constant) and not _is_number(arm) for arm in arms) or not self._worth_asking(node):
            return
        if not all(self._strong(arm) or _is_number(arm) for arm in arms):
            return
        found = value_test(node.test, self.ctx)
        if found is None:
            return
        operand = tested_tensor(found, self.ctx)
        if _checks_type_first(node.test, found, self.ctx):
            return  # `isinstance(x, Tensor) and torch.isnan(x)`: normalising an input
        if read_elsewhere(operand, self.ctx):
            return
        if isinstance(node, ast.If):
            if masked and in_model_loop(self.ctx):
                self._read(found, operand, "`if m.any():` before a masked write", statement=node, help=MASKED_HELP)
            elif warns:
                self._read(found, operand, "`if` on a tensor's value only to warn", statement=node, help=WARN_HELP)
            elif returns or self._tensor_work_only(node.body + node.orelse):
                self._read(found, operand, "`if` on a tensor's value", statement=node)
        else:
            self._read(found, operand, "a conditional expression on a tensor's value")

    visit_IfExp = visit_If

    def _tensor_op(self, call: ast.Call) -> bool:
        """A torch function or a tensor method (`torch.where(...)`, `x.clamp(0)`); not a model, a
        helper of this code (`self.update(x)`, `refine(x)`) or a step."""
        qual = self.ctx.qualname(call.func)
        if qual is not None:
            return is_torch_op(qual)
        head = chain_head(call.func)
        return isinstance(call.func, ast.Attribute) and call.func.attr not in DEVICE_STEP_METHODS \
            and head is not None and head.id not in SELF_NAMES and not is_module_call(call, self.ctx)

    def _returns_tensors(self, node: ast.If) -> bool:
        """`if num_pos == 0: return -neg_loss` ... `return -(pos_loss + neg_loss) / num_pos`: each
        way returns a tensor that torch ops compute, which `torch.where` (or a clamped divisor)
        returns on the device without the wait. The other way is the `else` or the statement
        after the `if`."""
        found = block_of(node, self.ctx.parent(node))
        other = node.orelse or (found[0][found[1] + 1:found[1] + 2] if found else [])
        return all(len(arm) == 1 and isinstance(arm[0], ast.Return) and self._tensor_value(arm[0].value)
                   for arm in (node.body, other))

    def _tensor_value(self, value: ast.AST | None) -> bool:
        """Visibly a tensor, and computed with torch ops only (`-(pos + neg) / num_pos`)."""
        return value is not None and self._strong(value) and all(
            self._tensor_op(n) for n in ast.walk(value) if isinstance(n, ast.Call))

    def _tensor_work_only(self, statements: list[ast.stmt]) -> bool:
        """The branches only compute tensors (`pred = pred * scale`, `best = loss`,
        `x[m] = torch.where(...)`): `torch.where` / `torch.clamp` / `torch.minimum` do the same on
        the device without waiting. A branch that leaves the loop, raises, warns, runs a model,
        calls other code or keeps Python state (`hyps.append(...)`, `count += 1`) needs the answer
        on the host: a guard or the algorithm's own bookkeeping, not a stray sync."""
        for statement in statements:
            if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                if not self._tensor_value(statement.value):
                    return False
            elif not isinstance(statement, ast.Pass):
                return False
        return bool(statements)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        """`f"{loss:.3f}"`, `f"{t}"`: `Tensor.__format__` calls `.item()` on a 0-dim tensor and
        formats the values of any other."""
        if self._worth_asking(node) and self._strong(node.value):
            self._read(node.value, node.value, "formatting a tensor (f-string)")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        """`"%g" % t`, `"%s %.3f" % (name, t)`, also a format built from strings (`("%11s" * 2 +
        "%11.4g" * 5) % (...)`) and a tensor's elements spread into the values (`*mloss`: one
        read per element)."""
        if not (isinstance(node.op, ast.Mod) and built_string(node.left)):
            return
        if not self._worth_asking(node):
            return
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        values = [v.value if isinstance(v, ast.Starred) else v for v in values]
        value = next((v for v in values if self._strong(v)), None)
        if value is not None:
            self._read(value, value, "`%` formatting of a tensor")

    def _worth_asking(self, node: ast.AST) -> bool:
        """Not in traced code (PTL402 / PTL403 report there), and where a read could stall: the
        cheap questions, before any about tensors."""
        return not is_traced(self.ctx, node) and (may_be_step(self.ctx) or bool(self.ctx.loops))

    def _strong(self, node: ast.AST) -> bool:
        return tensor_kind(node, self.ctx) == STRONG

    def _read(self, node: ast.AST, value: ast.AST, what: str, scalar: bool = True, each: bool = False,
              statement: ast.stmt | None = None, help: str | None = None) -> None:
        """Report a read of `value` (visibly a tensor) at `node`, unless it waits for nothing (host
        memory, host code, after a drain) or the host needs the value (`avoidable`). A read of
        each element of a tensor is reported wherever it runs: one `.tolist()` does it all."""
        ctx = self.ctx
        if in_host_memory(value, ctx) or is_traced(ctx, node) or in_host_code(ctx):
            return  # in a forward or a compiled function PTL402 / PTL403 report it
        if each and elementwise_read(value, ctx):  # `[x.item() for x in t]`
            what = what.removesuffix(" of a tensor")
            return self._report_read(node, f"{what} on each element of a tensor", True, ELEMENTWISE_HELP)
        if not may_be_step(ctx) or already_waited(value, ctx) or not avoidable(node, ctx, scalar) \
                or adds_no_wait(node, ctx) or self._read_again(statement):
            return
        self._report_read(node, what, in_model_loop(ctx), help)

    def _report_read(self, node: ast.AST, what: str, stalls: bool, help: str | None = None) -> None:
        self._stalls[id(node)] = stalls
        self.report(node, (self.message if self.ctx.loops else self.step_message).format(what=what), help=help)


    def keep(self, node: ast.AST, where) -> bool:
        """A sync stalls the device every time only where work is queued every time: in a loop
        that runs the model (calls it, a submodule or a loss module, backpropagates, steps an
        optimizer), or in a training step (a step hook such as `training_step` or
        `compute_loss`, a function that backpropagates, or what those call in this module).
        A loop that only reads results back (post-processing rows) waits once, at its first
        read; a helper that inference code calls per step needs its host values. In a project
        that trains, a read in a module's `forward` waits every step, and so does a read of the
        module's own state (a buffer: `int(self.queue_ptr)`) in a method forward calls."""
        model = self.ctx.model  # (an update between two environment steps, a read per batch of 1,000)
        return (self._stalls.get(id(node), False) or model.in_training_step(node)
                or model.in_trained_forward(node, helpers=reads_module_state(node))) \
            and not amortised(node, self.ctx)

    def _read_again(self, statement: ast.stmt | None = None) -> bool:
        """Another read in a statement that already has a finding (`t, h, w = g[0].item(),
        g[1].item(), g[2].item()`, `f"{loss:.3f} {acc:.3f}"`): the first read waited, and one
        `.tolist()` (or one stacked tensor) fixes them all, so the statement is reported once."""
        statement = statement or next((n for n in reversed(self.ctx.stack) if isinstance(n, ast.stmt)), None)
        if statement is None or id(statement) in self._read_in_statement:
            return statement is not None
        self._read_in_statement.add(id(statement))
        return False

    def _holds_a_tensor(self, value: ast.AST) -> bool:
        """Visibly a tensor (a torch op's or a submodule's result, a loss), or in a module that
        works with torch, or in a loop that backpropagates, or in a module whose functions
        training steps elsewhere in the project call (a `log_metrics(loss)` helper)."""
        project = self.ctx.project
        return tensor_kind(value, self.ctx) == STRONG or self.ctx.imports_torch() \
            or any(backpropagates(loop) for loop in self.ctx.loops) \
            or (project is not None and bool(project.training))

    docs = """
## What it does
Finds reads of a tensor's value back to the host where they stall the device every step: inside
a loop that runs the model (training, evaluation, a denoising or generation loop), or in a
training step — a framework step hook (`training_step`, `*_batch_end`, `compute_loss`), a
function that backpropagates, or a helper of the same module that such code calls. It reports
a read whose value only feeds logging, metrics, progress bars or accumulators (a `print`, a
logger, a writer's `add_scalar`, `wandb.log`, `self.log`, a progress bar's `set_postfix`, a
meter's `update()`, a running total, a dict or list of stats that is logged), or goes where the
file does not show: keep it on the device and read it every N steps or once per epoch. A read
whose value the host needs every iteration is not reported (see below).

The reads it finds:
- the methods `.item()`, `.cpu()`, `.numpy()` and `.tolist()` of a tensor, also of a tensor
  attribute (`int(self.queue_ptr)` where `__init__` calls `self.register_buffer("queue_ptr",
  ...)`; `nn.Parameter` and `self.x = torch.zeros(...)` too) and of a gradient
  (`float(p.grad.norm())` per parameter in a gradient-norm logger: hundreds of syncs a step);
- reads hidden in a call (not the scale compared across `scaler.update()` to tell a skipped
  step, which decides whether the scheduler steps): `scaler.get_scale()` and `scaler.state_dict()` of a
  `torch.amp.GradScaler` (assigned one, or named `scaler`, `grad_scaler`, `loss_scaler`) call
  `.item()` on the scale and the growth tracker;
- `.item()`, `float()` or `int()` on each element of one tensor (`[x.item() for x in t]`,
  `for v in t: total += float(v)`), wherever it runs, also in a loop that does not run the
  model: one `.tolist()` reads them all with one sync;
- implicit conversions of a value that is visibly a tensor (a torch op's or a reduction's result,
  a submodule's or loss module's output, a value `.backward()` is called on) to a number or text:
  `float(t)`, `int(t)`, formatting it (`f"{loss:.3f}"`, `"%g" % loss`, `("%10s" + "%10.4g" * 3) %
  (name, *mloss)`, `"{}".format(loss)`)
  and `print(t)` — `Tensor.__format__` calls `.item()` on a 0-dim tensor, and `print` / `str`
  format every value of any other; and a tensor handed to a logger that reads it back:
  TensorBoard's `writer.add_scalar(tag, loss, step)` and `writer.add_scalars(tag, {"a": loss})`,
  `wandb.log({"loss": loss})`, a logger object's `logger.log("train/loss", loss, step)` (not
  Lightning's `self.log`, which keeps tensors until it writes);
- a reduction over a boolean-mask selection (`d[d > 0].mean()`, `torch.sum(x[mask])`, `mask` a
  comparison of tensors): the selection's size depends on the data, so the host counts the mask
  (`nonzero`) before it can select; `(d * (d > 0)).sum() / (d > 0).sum()` or `torch.where`
  reduce at a fixed shape. A selection whose size is the result (`boxes = out[keep]`) is not
  reported;
- a one-element tensor given as a size (`torch.zeros(batch.max().int() + 1, d)`, `x.new_zeros(n)`
  where `n = index.max() + 1`, `torch.arange(lengths.max())`, also `ones`, `empty`, `full`,
  `rand`, `randn`, `eye`, `new_ones`, `new_empty`, `new_full`): the factory turns it into a
  Python int, an `.item()` nobody wrote; reported at its first use as a size in a function.
  The host needs the size only because it is a tensor: take it from the host (`len(graphs)`),
  or size the result so the device can. Not a size computed from sequence lengths
  (`torch.arange(lengths.max())`): lengths are host tensors by convention (`pack_padded_sequence`
  wants them there);
- an element of a tensor visibly on the device as a slice bound (`target[p, :durations[p]] = 1`
  in a loop over the samples of a batch): Python turns each into an int, one read per sample;
  read the bounds once with `.tolist()`, or build the result with a comparison against an
  `arange` on the device;
- a step counter kept in a tensor (`self.register_buffer("update_count", torch.tensor([0]))`
  only ever increased by a number, `self.update_count += 1`): every test of it (`if
  self.update_count >= warmup:`), `.item()`, `int()` or `float()` of it in a training step waits
  for the GPU, whatever the value is for, since the host can count itself;
- an `if` or conditional expression whose test reads a tensor's value and whose branches only
  choose between tensor values (`if loss < best: best = loss`, `x = a if t > 0 else b`, a loss
  that returns one tensor or another: `if num_pos == 0: return -neg_loss` then `return
  -(pos_loss + neg_loss) / num_pos`), which `torch.where`, `torch.minimum` or `torch.clamp` (of
  the divisor) do on the device; and `if m.any():` in a loop
  that runs the model, before branches that only write through the mask (`x[m] = 0`,
  `x.masked_fill_(m, 0)`), which change nothing when the mask is empty; and an `if` on a
  tensor's value whose branch only warns, logs or prints (`if torch.min(y) < -1: print(...)`):
  a wait every step just to warn;
- outside a loop, in a training step, a `.cpu()` (or `.numpy()`, `.tolist()`) of a one-element
  tensor: a loss (a value `.backward()` is called on, or one it is computed from by arithmetic or
  loss scaling, as in `scaler.scale(loss / k).backward()`), or a reduction over all elements
  (`x.sum()`, `x.mean()`, `torch.max(x)`, no `dim`) — it waits exactly like `.item()`.

## Why is this bad?
CUDA runs asynchronously: the Python loop queues kernels and moves on. Reading a value back to
the host makes the CPU wait until every queued kernel has finished, so the GPU idles while
Python prepares the next step. Once per iteration, this can halve throughput. An implicit
conversion waits the same way as `.item()`; it is only harder to see.

Not reported, wherever the code runs:
- a value that is visibly a NumPy array or scalar (also one the code checked with
  `isinstance(v, np.generic)`, or duck-typed with `hasattr(v, "tolist")`), a plain Python value;
  for the implicit conversions, anything not visibly a tensor (`float(x.shape[0])`,
  `float(self.scale)`, `f"{step}"`, `print(model)`);
- a tensor in host memory: built by a torch factory without a device, from
  `torch.from_numpy`, already moved by `.cpu()` (also through names and loop variables, and
  names like `labels_cpu`), returned by a tokenizer or processor called with
  `return_tensors=`, or read from a `state_dict` / checkpoint;
- a bulk copy (`.cpu()`, `.numpy()`, `.tolist()` of a tensor that is not visibly one element)
  whose value is kept or passed on (`preds.append(out.argmax(1).cpu())`,
  `feats.append(f.cpu())`, `labels.extend(y.tolist())`, a value returned or handed to other
  code): collecting results on the host keeps device memory bounded and is the form to aim for;
  outside a loop it is reported only for a one-element tensor (a loss, `x.sum()`), which waits
  like `.item()`. A bulk copy whose value only feeds logging (`print(probs.tolist())`) is
  reported; one a meter's `update()` computes with (`running_metrics.update(gt, pred)`, a NumPy
  confusion matrix) is not: a scalar there is logging, a whole tensor is host work. A scalar
  read (`.item()`, `float(t)`, formatting) whose destination the file does not show is reported;
- a read whose value the host needs every iteration, followed through the names it is assigned
  to (three hops): decoded (`tokenizer.decode(ids.tolist())`, a sampled token kept and decoded
  later), returned from a function that picks an agent's action (`return q.argmax().item()` in
  `select_action` or `act`: the environment steps with it), written to a file or stream in the same iteration (`f.write(...)`, also of `json.dumps(row)`, `json.dump`,
  `torch.save`; not a history written once the loop ends, `losses.append(loss.item())` then
  `np.savetxt(path, losses)` after it, which is reported), handed to a
  host-side evaluator (`coco_evaluator.update(...)`, `metric.add_batch(...)`, `evaluator.process`)
  or to scikit-learn, SciPy, pycocotools, used as an index into a Python container, as a loop
  count (`range(n.item())`) or as a size the host allocates or reshapes with (`torch.zeros(n)`,
  `torch.empty((biggest,))`, `x.view(n, -1)`, `x.split(sizes)`): moving the read saves nothing.
  A read of the module's own state (`int(self.params[0].item())` of a buffer) is reported
  whatever its value is for: the host could keep that number itself;
- a read in a loop whose every iteration waits for the device anyway, by design: on the path
  each iteration takes (not inside an `if` or an inner loop; `with` and `try` bodies count, and
  the body of an `if` on the main process, `if local_rank == 0:`), a
  test of a tensor's value that skips or ends the iteration (`if loss == 0 or not
  torch.isfinite(loss): continue`), or another read the host needs (decoded, evaluated, a
  whole tensor a meter or a function computes with: `accuracy(out.cpu().numpy(),
  y.cpu().numpy())`), also one in each branch of an `if`/`else`; or a barrier across processes
  (`dist.barrier()`, `self.barrier()`, `accelerator.wait_for_everyone()`), also one in the body
  of a loop around the read's loop (the step loop around a loop over a dict of losses). Reading
  this value every N steps would save no wait;
  a running total (`correct += (p == y).cpu().sum()`) is not such a read, since it could be
  summed on the device;
- a read right after a full drain, which adds no new wait: earlier in the same loop body (or
  function body), unconditionally, `torch.cuda.synchronize()` in any spelling (`from torch.cuda
  import synchronize`, an alias `sync = torch.cuda.synchronize`,
  `torch.cuda.current_stream().synchronize()`, an event's `synchronize()`) or another read (the
  first read waited; a second read of the same step's results finds the queue empty, so only the
  first is reported), with no device work between: no model or module call, backward,
  optimizer step, torch op other than small ones over results (`(out.argmax(-1) == y).float()
  .mean()`), or call of code the file does not show. A drain in an `if` may not have run and
  does not count;
- a value taken from an op whose output size depends on data (`torch.where(m)[0].tolist()`,
  `x.nonzero()`): that op has already waited for the device;
- a value whose type the code checks first (`if isinstance(x, torch.Tensor): x = x.tolist()`,
  `if isinstance(x, Tensor) and torch.isnan(x):`): input normalisation, not a step's result;
- a loop that does not run the model (no call of a model, submodule or loss module, no backward,
  optimizer step or `generate`) outside a training step: such a loop post-processes finished
  results, and only its first read waits for the device (`[t.item() for t in ts]` where `ts`
  is not visibly one tensor, `row.tolist()`); a read of each element of one tensor is the
  exception, reported wherever it runs;
- straight-line code that inference calls per step (a scheduler's index lookup, a model's
  size bookkeeping, generation post-processing): it needs its host values, and `forward` is
  PTL402's; straight-line reads are reported in training steps only;
- a read whose value decides what the code does next (`if tok.item() == eos: break`, `continue`,
  `return`, `raise`, also in a nested branch) or picks a Python object
  (`names[int(scores.argmax().item())]`), an `assert`, and a value handed to an environment's
  `step` (`actions = policy(obs).cpu().numpy()` ... `env.step(actions)`: the simulator runs on
  the host), also one an agent's action-selection function returns (`def act(self, state):
  return q.argmax(1).item()`, `select_action`), directly or through the name it assigns and
  returns (`actions = qs.argmax().item()` ... `return actions`, also in a `predict` when the
  name says it holds actions): the host needs it;
- one read per batch of an evaluation loop (no backward, no optimizer step) over a DataLoader
  of a thousand examples a batch or more, its `batch_size` a constant or an option's default
  (`--test-batch-size 1000`, ten batches of MNIST's test set): negligible beside each batch;
- a read in an update that runs once between two environment steps (a DQN's `update_model`,
  which every caller in the file calls right in the loop that picks an action each iteration):
  the next action waits for the update's kernels anyway. An update that loops over gradient
  steps (`for _ in range(iterations)`) is reported: each of its reads is a wait of its own;
- conditions that are guards or the algorithm's own logic: a `while` test, an `if` whose
  branch leaves the loop or the function, raises, runs a model or other code, or keeps
  Python state (`if not torch.isfinite(loss): continue`, `if torch.isnan(loss): raise`,
  `if mask.any(): out = self.block(x)`, `if tok == blank: hyps.append(h)`), and a condition on
  a tensor that the loop reads back anyway (`best = s[0] if ids[0] != blank else s[1]` beside
  `ids[j].item()`: host-driven search code, where a choice on the device saves no wait). A NaN
  guard that counts non-finite steps and raises once its patience runs out (speechbrain's
  `check_loss_isfinite`) is such a guard, and is not reported either, though checking the host
  copy of the loss that the step takes anyway would save its sync;
- `bool(t)`, and `not t` / `t and ...` outside a condition: a decision the host acts on (passed
  to a collective such as `reduce_boolean_decision`, tested later), like the guards above;
- the data pipeline, which works on host tensors: methods of `Sampler` / `Dataset` subclasses,
  modules in `data/`, `datasets/`, `augment*/`, `transforms/` folders or named for collation,
  augmentation, datasets, samplers or pre-/post-processing (`processing_*.py`), and functions
  named `*_cpu*`; tools whose job is to show values to a person (modules named for debugging,
  diagnostics, plotting, visualisation or profiling); ONNX Runtime pipelines (`*onnx*` modules),
  which compute in NumPy on the host;
- a second read in one statement (`t, h, w = g[0].item(), g[1].item(), g[2].item()`,
  `f"{loss:.3f} {acc:.3f}"`): the statement is reported once, at its first read, and one
  `.tolist()` (or one stacked tensor) fixes it;
- modules that never import torch, unless the loop backpropagates or the value is visibly a
  tensor.

## Where it reports
- **Reports** in code that runs every step: the body of a loop that runs the model (training,
  evaluation, denoising, generation; also in `main()` or at a script's top level), and a
  training step without a loop of its own — a framework step hook (`training_step`,
  `*_batch_end`, `compute_loss`), a function that calls `.backward()`, and the helpers of the
  same file that these call (a gradient-norm logger, a queue update). The optimizer step of
  gradient accumulation (`if (i + 1) % k == 0: opt.step()`, `if (i + 1) % accum != 0:
  continue`) is the step itself. A read of each element of one tensor (`[x.item() for x in t]`)
  is reported in any loop or comprehension, also one that does not run the model and one in a
  function whose callers the file does not show.
- **Silent** in once-code (module top level outside loops, `if __name__ == "__main__":`,
  `__init__`, set-up that only `main()` calls, and loops there over layers or settings rather
  than data), once per epoch or every N steps (outside an inner batch loop, under
  `if step % 100 == 0`, after an early exit on the other steps such as
  `if not should_log: return`; a full-batch training step that only a loop over epochs calls,
  `for epoch in range(n): loss = train(model, data)`), a function whose callers the file does not show
  (`def accuracy(x): return x.sum().item()` on its own), error paths (an `except` body, a branch
  that raises, or only warns or logs), test code, and compiled code (`forward`, functions given
  to `torch.compile`), where PTL402 and PTL403 report instead.

## Example
```python
import torch


def train(model, loader, optimizer, pbar):
    running = 0.0
    for batch in loader:
        optimizer.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        running += loss.item()
        pbar.set_description(f"loss {loss:.3f}")
    return running
```

## Use instead
```python
import torch


def train(model, loader, optimizer, pbar, device):
    running = torch.zeros((), device=device)
    for step, batch in enumerate(loader):
        optimizer.zero_grad()
        loss = model(batch).mean()
        loss.backward()
        optimizer.step()
        running += loss.detach()
        if step % 100 == 0:
            pbar.set_description(f"loss {loss:.3f}")  # one sync per 100 steps
    return running.item()  # one sync, after the loop
```

## Fix safety
No automatic fix: where to accumulate depends on the code.

## References
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
"""

    bad_examples = [
        # the same scores left on the device: one wait per row
        """
import torch
import torch.nn.functional as F

def loglikelihoods(model, batches, device):
    scores = []
    for batch in batches:
        multi_logits = F.log_softmax(model(batch.to(device)), dim=-1)
        for logits, targets in zip(multi_logits, batch):
            logits = torch.gather(logits, 1, targets.unsqueeze(-1))
            scores.append(float(logits.sum()))  # expect: PTL101
    return scores

loglikelihoods(torch.nn.Linear(4, 4).cuda(), [], "cuda")
""",
        # a barrier only on some steps (or only in a branch) drains nothing the other steps
        """
import torch
import torch.distributed as dist

def train(model, loader, optimizer, writer, step):
    model.cuda()
    for i, batch in enumerate(loader):
        output = model(batch.cuda())
        losses = {k: v.mean() for k, v in output.items()}
        for name, value in losses.items():
            writer.add_scalar(name, value.item(), step)  # expect: PTL101
        if i % 100 == 0:
            dist.barrier()
        sum(losses.values()).backward()
        optimizer.step()

def fit(model, loader, optimizer, writer, epochs):
    model.cuda()
    for epoch in range(epochs):
        for batch in loader:
            loss = model(batch.cuda()).mean()
            loss.backward()
            optimizer.step()
            writer.add_scalar("loss", loss.item(), epoch)  # expect: PTL101
        dist.barrier()
""",
        # a duration target built phoneme by phoneme, each slice bound an element of a device tensor
        """
import torch

def train(model, loader, optimizer):
    model.cuda()
    for texts, durations in loader:
        texts, durations = texts.cuda(), durations.cuda()
        pred = model(texts)
        target = torch.zeros_like(pred)
        lengths = durations.long()
        for p in range(target.shape[0]):
            target[p, :lengths[p]] = 1  # expect: PTL101
        loss = (pred - target).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # a script's loop logs the Python number its step function returned: the step's own
        # `loss` (reported there) is not the script's
        """
import torch

def train_step(model, batch, optimizer):
    optimizer.zero_grad()
    loss = model(batch.cuda()).mean()
    loss.backward()
    optimizer.step()
    return loss.item()  # expect: PTL101

model = torch.nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, batch in enumerate(loader):
    loss = train_step(model, batch, optimizer)
    print(f"step {step} loss {loss:.4f}")
""",
        # ... but a greedy action kept for statistics, not returned, is read for nothing
        """
import torch

class Agent:
    def predict(self, states):
        qs = self.network(states)
        actions_seen = qs.argmax().item()  # expect: PTL101
        self.history.append(actions_seen)
        return qs

    def learn(self, loader, optimizer):
        for states, targets in loader:
            loss = (self.predict(states.cuda()) - targets.cuda()).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
        # a tensor used as a size every step (GNN pooling sized by the batch vector), once per name
        """
import torch

def pool(H, batch):
    dim_size = batch.max().int() + 1
    out = torch.zeros(dim_size, H.shape[1], device=H.device)  # expect: PTL101
    norm = torch.zeros(dim_size, 1, device=H.device)
    return out.index_add_(0, batch, H), norm

def segments(x, counts):
    return x.new_zeros(counts.sum(), x.shape[-1])  # expect: PTL101

def train(model, loader, opt):
    for H, batch, counts in loader:
        out, _ = pool(model(H.cuda()), batch.cuda())
        loss = out.sum() + segments(out, counts.cuda()).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        # ... and one it moved to the device
        """
import torch

class Sampler:
    def sample(self, model, x, sigmas):
        self.sigmas = sigmas.to(x.device)
        for i in range(len(self.sigmas) - 1):
            x = model(x, self.sigmas[i].item())  # expect: PTL101
        return x
""",
        # a one-element copy of the loss (through `.data`) kept for the epoch's mean
        """
import numpy as np
import torch

def train(network, loss_fn, train_loader, optimizer):
    network.cuda()
    batch_losses = []
    for imgs, label_imgs in train_loader:
        outputs = network(imgs.cuda())
        loss = loss_fn(outputs, label_imgs.cuda())
        loss_value = loss.data.cpu().numpy()  # expect: PTL101
        batch_losses.append(loss_value)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return np.mean(batch_losses)
""",
        # a running total the loop reads nowhere else: a device sum read once per epoch would do,
        # whatever the host does with it then (plots it, indexes with it)
        """
import numpy as np
import matplotlib.pyplot as plt

def fit(model, loader, optimizer, epochs):
    model.cuda()
    history = []
    for epoch in range(epochs):
        epoch_loss, n = 0, 0
        for x, y in loader:
            loss = model(x.cuda(), y.cuda())
            epoch_loss += x.shape[0] * x.shape[1] * loss.item()  # expect: PTL101
            n += x.shape[0] * x.shape[1]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        history.append(epoch_loss / n)
    plt.plot(np.arange(len(history)), history[int(history[-1]):])
""",
        # the `.item()` of PyTorch before 0.4, in a training loop and in a helper it calls
        """
import torch

def record(meter, loss):
    meter.update(loss.data[0])  # expect: PTL101

def train(model, loader, crit, optimizer, losses):
    model.cuda()
    for x, y in loader:
        loss = crit(model(x.cuda()), y.cuda())
        losses.update(loss.data[0], x.size(0))  # expect: PTL101
        total = loss.data[0] + 1  # expect: PTL101
        record(losses, loss)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # batches of fewer examples, and training steps over big batches, read every step
        """
import torch

def run(model, opt, test_set):
    model.cuda()
    small = torch.utils.data.DataLoader(test_set, batch_size=256)
    for data, target in small:
        print(model(data.cuda()).sum().item())  # expect: PTL101
    train_loader = torch.utils.data.DataLoader(test_set, batch_size=4096)
    for data, target in train_loader:
        loss = model(data.cuda()).sum()
        loss.backward()
        opt.step()
        print(loss.item())  # expect: PTL101
""",
        # a selection by an index, not a mask: no wait of its own
        """
import torch

def learn(model, optimizer, batches, logger):
    model.cuda()
    for batch in batches:
        out = model(batch)
        out["loss"].backward()
        optimizer.step()
        picked = out["value"][batch["index"]]
        logger.log({"values": picked.cpu().numpy()})  # expect: PTL101
""",
        # a name that also holds a model's output
        """
import torch

def evaluate(env, model, loader):
    model.cuda()
    for x in loader:
        stats = env.step(0)
        stats = model(x.cuda())
        print(stats["loss"].item())  # expect: PTL101
""",
        # updates that loop over gradient steps, or run where no action is picked each iteration
        """
import torch

class Agent:
    def select_action(self, state):
        return self.actor(torch.as_tensor(state, device="cuda")).argmax().cpu().numpy()

    def update(self, iterations):
        for it in range(iterations):
            loss = self.loss(self.memory.sample())
            loss.backward()
            self.optimizer.step()
            self.writer.add_scalar("loss", loss.item(), it)  # expect: PTL101

    def update_once(self):
        loss = self.loss(self.memory.sample())
        loss.backward()
        self.optimizer.step()
        return loss.item()  # expect: PTL101

    def learn(self):
        loss = self.loss(self.memory.sample())
        loss.backward()
        self.optimizer.step()
        return loss.item()  # expect: PTL101

    def one_frame(self, state):
        action = self.select_action(state)
        return action, self.learn()

    def train(self, env, frames):
        state = env.reset()
        for frame in range(frames):
            action = self.select_action(state)
            state, reward, done, _ = env.step(action)
            self.update(10)
            self.update_once()
        for epoch in range(100):
            print(self.update_once())
""",
        # a loss that tests its positives' count to choose what it returns, every step: both ways
        # return a tensor, which a clamped divisor (or `torch.where`) returns without the wait
        """
import torch

def focal_loss(pred, gt):
    pos = gt.eq(1).float()
    num_pos = pos.sum()
    pos_loss = (torch.log(pred) * pos).sum()
    neg_loss = (torch.log(1 - pred) * (1 - pos)).sum()
    if num_pos == 0:  # expect: PTL101
        return -neg_loss
    return -(pos_loss + neg_loss) / num_pos

def train(model, loader, optimizer):
    model.cuda()
    for x, y in loader:
        loss = focal_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # a step per batch, called from the batch loop inside the epoch loop
        """
import torch

def one_step(model, batch, optimizer):
    optimizer.zero_grad()
    loss = model(batch.cuda()).mean()
    loss.backward()
    optimizer.step()
    return loss.item()  # expect: PTL101

def batch_step(batch):
    loss = MODEL(batch.cuda()).mean()
    loss.backward()
    return loss.item()  # expect: PTL101

def main(model, loader, optimizer, epochs):
    for epoch in range(epochs):
        for batch in loader:
            print(one_step(model, batch, optimizer))
    for epoch in range(epochs):
        print(sum(map(batch_step, loader)))
""",
        # a running mean kept on the device, its elements spread into a built format every step
        """
import torch

def train(model, loader, opt, pbar, device):
    mloss = torch.zeros(3, device=device)
    for i, (x, y) in enumerate(loader):
        loss, items = model(x.to(device), y.to(device))
        loss.backward()
        opt.step()
        mloss = (mloss * i + items) / (i + 1)
        pbar.set_description(("%10s" + "%10.4g" * 3) % (f"{i}", *mloss))  # expect: PTL101
""",
        # an assertion on the read's type needs no value: the read is a log's
        """
import torch

def train(model, loader, opt, meters):
    for x in loader:
        losses = model(x)
        sum(losses.values()).backward()
        opt.step()
        for k, v in losses.items():
            v = v.item()  # expect: PTL101
            assert isinstance(v, (float, int))
            meters[k].append(v)
""",
        # a step counter kept in a tensor, tested and read in a training step
        """
import torch
from torch import nn

class IRM(nn.Module):
    def __init__(self, network, hparams):
        super().__init__()
        self.network, self.hparams = network, hparams
        self.optimizer = torch.optim.Adam(network.parameters())
        self.register_buffer("update_count", torch.tensor([0]))

    def update(self, x):
        weight = 10.0 if self.update_count >= self.hparams["anneal"] else 1.0  # expect: PTL101
        loss = self.network(x).mean() * weight
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.update_count += 1
        if int(self.update_count) % 2 == 0:  # expect: PTL101
            self.optimizer.param_groups[0]["lr"] *= 0.99
""",
        """
import logging
import torch

logger = logging.getLogger(__name__)

def train(model, loader, opt):
    for x in loader:
        loss = model(x).mean()
        if torch.isinf(loss):  # expect: PTL101
            logger.warning("inf loss")
        y = model(x)
        if torch.min(y) < -1.0:  # expect: PTL101
            print("min value is", torch.min(y))
        loss.backward()
        opt.step()
""",
        # multi-task training: the next batch of the task's loader
        """
import torch

def train(model, loader_iters, tasks, opt):
    for task in tasks:
        x, y = next(loader_iters[task])
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(loss.item())  # expect: PTL101
""",
        # three reads of one tensor in one statement: one finding, at the first read
        """
import torch

def train(model, loader, opt):
    for x, grid in loader:
        t, h, w = (
            grid[0].item(),  # expect: PTL101
            grid[1].item(),
            grid[2].item(),
        )
        model(x, t, h, w).sum().backward()
        opt.step()
""",
        """
import torch

def train(model, loader, opt):
    total = 0.0
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item()  # expect: PTL101
    return total
""",
        # a scalar read whose value is kept: reported (a bulk copy kept for later is not)
        """
import torch as T

def scores(net, xs):
    return [net(x).max().item() for x in xs]  # expect: PTL101
""",
        # an inner loop over parameter groups does not make the outer loop an epoch loop
        """
import torch

def train(model, loader, opt, lr_at):
    total = 0.0
    for step, (x, y) in enumerate(loader):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        loss = model(x).sum()
        loss.backward()
        opt.step()
        total += loss.item()  # expect: PTL101
    return total
""",
        # a helper the batch loop calls runs every step too; so does a framework step hook
        """
import torch

def log_loss(loss, history):
    history.append(loss.item())  # expect: PTL101

def train(model, loader, history):
    for batch in loader:
        loss = model(batch).mean()
        loss.backward()
        log_loss(loss, history)

class Lit:
    def training_step(self, batch, batch_idx):
        loss = self.model(batch).mean()
        self.log("loss", loss.item())  # expect: PTL101
        return loss
""",
        # the optimizer step of gradient accumulation is the training step, not a log interval
        """
import torch

def train(model, loader, opt, accum):
    for i, x in enumerate(loader):
        loss = model(x).mean() / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad()
            running = loss.item()  # expect: PTL101
""",
        # no torch import, but a loop that backpropagates holds tensors
        """
def train(model, loader, opt):
    for x, y in loader:
        loss = model.loss(x, y)
        loss.backward()
        opt.step()
        print(loss.item())  # expect: PTL101
""",
        # implicit conversions of a visibly-tensor value to a number: `float()`, `int()`
        """
import torch
import torch.nn.functional as F

def train(model, loader, opt, history):
    for x, y in loader:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        history.append(float(loss))  # expect: PTL101

def count(model, loader, counts):
    for x, y in loader:
        counts.append(int(torch.count_nonzero(y)))  # expect: PTL101
        model(x).sum().backward()
""",
        # formatting a tensor, in any spelling of the torch import; print() of a tensor
        """
import torch as T
from torch.nn import functional

def train(model, loader, opt, pbar, logger):
    for x, y in loader:
        loss = functional.mse_loss(model(x), y)
        pbar.set_description(f"loss {loss:.4f} lr {opt.lr}")  # expect: PTL101
        loss.backward()
        logger.info("loss %g" % loss)  # expect: PTL101
        opt.step()
        logger.info("norm {}".format(T.linalg.norm(x)))  # expect: PTL101
        opt.zero_grad()
        print(loss)  # expect: PTL101
""",
        # a condition that only chooses between tensor values: torch.where / torch.minimum would do
        """
import torch

def train(model, loader, opt):
    best = torch.tensor(float("inf"))
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()
        if loss < best:  # expect: PTL101
            best = loss.detach()
        scale = loss if loss > 1 else 1.0  # expect: PTL101
""",
        # a training step (no loop): `.cpu()` of a one-element tensor is an `.item()`, as is a
        # conversion; a loss is also the value its scaled form was computed from
        """
from torch import nn
import torch.nn.functional as F

class Brain:
    def fit_batch(self, batch):
        loss = self.compute_objectives(self.modules(batch), batch)
        scaled = self.scaler.scale(loss / self.accumulation)
        scaled.backward()
        return loss.detach().cpu()  # expect: PTL101

class Lit:
    def training_step(self, batch, idx):
        out = self.model(batch)
        self.log("mean", out.mean().cpu())  # expect: PTL101
        loss = F.cross_entropy(out, batch["y"])
        self.log("loss", float(loss))  # expect: PTL101
        return loss
""",
        # no torch import: a loop that backpropagates holds tensors, and its loss is visibly one
        """
def train(model, loader, opt):
    for x, y in loader:
        loss = model.loss(x, y)
        loss.backward()
        opt.step()
        print(f"{loss:.3f}")  # expect: PTL101
""",
        # `torch.where(c, a, b)` chooses on the device and has not waited, unlike `torch.where(c)`;
        # a read kept in a name is reported where it is made, in a loop or in a step hook
        """
import torch

def train(model, loader, opt, max_steps, history):
    for step, x in enumerate(loader):
        out = model(x)
        loss = torch.where(out > 1, 1.0, out).mean()
        loss.backward()
        opt.step()
        value = loss.item()  # expect: PTL101
        history.append(value)
        if step >= max_steps:
            break

class Lit:
    def training_step(self, batch, idx):
        loss = self.model(batch).mean()
        value = loss.item()  # expect: PTL101
        self.log("loss", value)
        return loss
""",
        # a loss logged every step: its value only feeds a writer, a meter, a running total
        """
import torch

def train(model, loader, opt, writer, meter):
    running = 0.0
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        writer.add_scalar("train/loss", loss.item(), step)  # expect: PTL101
        loss.backward()
        opt.step()
        meter.update(loss.item(), x.size(0))  # expect: PTL101
""",
        # one read after another, with no device work between: the first waits, the second finds
        # the queue drained and is not reported (one `.tolist()` or one stack would fix both)
        """
import torch

def train(model, loader, opt, log):
    for x, y in loader:
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        acc = (out.argmax(-1) == y).float().mean()
        log.append(loss.item())  # expect: PTL101
        log.append(acc.item())
        print(f"acc {acc:.3f}")
""",
        # a gradient-norm logger the training step calls: one `.item()` / `float()` per parameter,
        # hundreds of syncs per step (`torch.nn.utils.get_total_norm` and one read would do)
        """
import torch

def grad_norms(model):
    norms = {}
    for name, p in model.named_parameters():
        if p.grad is not None:
            norms[name] = float(p.grad.norm())  # expect: PTL101
    return norms

def total_norm(model):
    total = 0.0
    for p in model.parameters():
        total += p.grad.detach().norm().item() ** 2  # expect: PTL101
    return total ** 0.5

def train(model, loader, opt, history):
    for x, y in loader:
        model(x, y).backward()
        history.append((grad_norms(model), total_norm(model)))
        opt.step()
""",
        # GradScaler's state_dict() and get_scale() call `.item()` inside: reading the scale every
        # step to log it is a sync
        """
import torch

def train(model, loader, opt, wandb_run):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        wandb_run.log({"scale": scaler.state_dict()["scale"]})  # expect: PTL101

class Trainer:
    def training_step(self, batch):
        loss = self.model(batch)
        self.grad_scaler.scale(loss).backward()
        self.grad_scaler.step(self.opt)
        self.grad_scaler.update()
        self.log("scale", self.grad_scaler.get_scale())  # expect: PTL101
""",
        # a registered buffer is a tensor in every method of its class: `int(self.queue_ptr)` in a
        # helper the training step calls is a read
        """
import torch

class Memory(torch.nn.Module):
    def __init__(self, dim, size):
        super().__init__()
        self.register_buffer("queue", torch.randn(dim, size))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    def enqueue(self, keys):
        ptr = int(self.queue_ptr)  # expect: PTL101
        self.queue[:, ptr:ptr + keys.shape[0]] = keys.T
        self.queue_ptr[0] = (ptr + keys.shape[0]) % self.queue.shape[1]

    def training_step(self, batch, idx):
        keys = self.encoder(batch)
        loss = self.criterion(keys, self.queue)
        self.enqueue(keys.detach())
        return loss
""",
        # a reduction over a boolean-mask selection in a loss: the host counts the mask first
        """
import torch
import torch.nn.functional as F

def rkd_loss(f_s, f_t):
    with torch.no_grad():
        t_d = torch.cdist(f_t, f_t)
        t_d = t_d / t_d[t_d > 0].mean()  # expect: PTL101
    d = torch.cdist(f_s, f_s)
    positive = d > 0
    d = d / torch.mean(d[positive])  # expect: PTL101
    return F.smooth_l1_loss(d, t_d)

def train(model, loader, opt):
    for x, labels in loader:
        scores = model(x.cuda())
        loss = -torch.sum(F.log_softmax(scores, dim=-1), dim=-1)
        loss = loss[labels.cuda() != -100].mean()  # expect: PTL101
        (loss + rkd_loss(scores, scores.detach())).backward()
        opt.step()
""",
        # the total gradient norm `clip_grad_norm_` returns is a tensor: formatting it reads it
        """
import torch

def train(model, loader, opt):
    for x in loader:
        model(x.cuda()).mean().backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print("grad norm {:.4f}".format(grad_norm))  # expect: PTL101
""",
        # a tensor handed to TensorBoard or wandb, which read it back to log it
        """
import torch
import wandb
from torch.utils.tensorboard import SummaryWriter

def train(model, loader, opt):
    writer = SummaryWriter()
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        loss.backward()
        opt.step()
        writer.add_scalars("parts", {"mse": loss.detach()}, step)  # expect: PTL101
        writer.add_scalar("loss", loss, step)

def finetune(model, loader, opt):
    for x in loader:
        loss = model(x.cuda()).mean()
        loss.backward()
        opt.step()
        wandb.log({"loss": loss, "lr": opt.param_groups[0]["lr"]})  # expect: PTL101

def make_train(G, D, config):
    def train(x, y):  # one step: it backpropagates in a loop over micro-batches only
        G.optim.zero_grad()
        for accumulation_index in range(config["num_G_accumulations"]):
            G_loss = D(G(x.cuda())).mean()
            G_loss.backward()
        G.optim.step()
        return {"G_loss": float(G_loss.item())}  # expect: PTL101
    return train

class Agent:
    def update(self, batch, logger, step):
        critic_loss = torch.nn.functional.mse_loss(self.critic(batch.cuda()), batch.cuda())
        logger.log("train_critic/loss", critic_loss, step)  # expect: PTL101
        self.log("train_critic/loss", critic_loss)
        self.opt.zero_grad()
        critic_loss.backward()
        self.opt.step()

def run(agent, loader, logger):
    for step, batch in enumerate(loader):
        agent.update(batch, logger, step)
""",
        # constants kept in a buffer, read every forward for sizes: the host could keep them itself
        """
import torch

class ContrastModel(torch.nn.Module):
    def __init__(self, encoder, k, t):
        super().__init__()
        self.encoder = encoder
        self.register_buffer("params", torch.tensor([k, t]))

    def contrast(self, v):
        k = int(self.params[0].item())  # expect: PTL101
        return v.view(v.size(0), k + 1, -1).sum(1) / self.params[1]

    def training_step(self, batch, idx):
        return self.contrast(self.encoder(batch)).mean()
""",
        # a running total of a bulk copy is no wait the host needs: the copy, shown only, is reported
        """
import torch

def train(net, loader, opt, criterion):
    correct = 0
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        out = net(x)
        loss = criterion(out, y)
        loss.backward()
        opt.step()
        correct += out.argmax(1).eq(y).cpu().sum()  # expect: PTL101
        print(f"loss {loss.item():.3f} acc {100. * correct / len(loader)}")
""",
        # a running total saved after the loop is no read the host needs every iteration: it could
        # be summed on the device, so the loop's other read is still a wait of its own
        """
import torch

def test(net, loader, criterion, epoch):
    correct, total_loss = 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            out = net(x)
            total_loss += criterion(out, y).item()  # expect: PTL101
            correct += out.argmax(1).eq(y).cpu().sum()
    print(f"test loss {total_loss / len(loader):.3f}")
    torch.save({"acc": correct / len(loader.dataset), "epoch": epoch}, "best.pth")
""",
        # the skip test sits in a branch that not every iteration takes: the logged read is its own wait
        """
import torch

def train(model, loader, opt, writer, check):
    for step, (x, y) in enumerate(loader):
        loss = model(x.cuda(), y.cuda())
        if check:
            if not torch.isfinite(loss):
                continue
        loss.backward()
        opt.step()
        writer.add_scalar("loss", loss.item(), step)  # expect: PTL101
""",
        # `.item()` on each element of one tensor: one `.tolist()` reads them all with one sync,
        # even in a loop that does not run the model
        """
import torch

def report(logits, k):
    top = torch.topk(torch.softmax(logits, -1), k).indices[0]
    return [i.item() for i in top]  # expect: PTL101

def total(losses):
    stacked = torch.stack(losses)
    s = 0.0
    for v in stacked:
        s += float(v)  # expect: PTL101
    return s
""",
        # near misses of a drain: a model call between the drain and the read, a drain in a branch
        # that may not run, a drain in the previous statement of another loop
        """
import torch

def train(model, loader, opt, log, timing):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        torch.cuda.synchronize()
        opt.step()
        log.append(loss.item())  # expect: PTL101
        if timing:
            torch.cuda.synchronize()
        log.append(model(x, y).item())  # expect: PTL101

def evaluate(model, loader, log):
    torch.cuda.synchronize()
    for x in loader:
        log.append(model(x).sum().item())  # expect: PTL101
""",
        # a bulk copy whose value only goes to logging; `if m.any():` before a write through the
        # mask, which changes nothing when the mask is empty
        """
import torch

def evaluate(model, loader, logger):
    with torch.no_grad():
        for x in loader:
            probs = torch.softmax(model(x), -1)
            logger.info("probs %s", probs.cpu().numpy())  # expect: PTL101

def train(model, loader, opt):
    for x, y in loader:
        err = torch.abs(model(x) - y)
        big = err > 1
        if big.any():  # expect: PTL101
            err[big] = err[big].sqrt()
        err.mean().backward()
        opt.step()
""",
    ]

    good_examples = [
        # scores read from a batch moved back to the host after the model ran (a loop over the
        # rows, each gathered and summed there)
        """
import torch
import torch.nn.functional as F

def loglikelihoods(model, batches, device):
    scores = []
    for batch in batches:
        multi_logits = F.log_softmax(model(batch.to(device)), dim=-1).cpu()
        for logits, targets in zip(multi_logits, batch):
            logits = torch.gather(logits, 1, targets.unsqueeze(-1)).squeeze(-1)
            scores.append(float(logits.sum()))
    return scores

loglikelihoods(torch.nn.Linear(4, 4).cuda(), [], "cuda")
""",
        # a barrier across processes every step drains the queue: the reads before it wait for
        # nothing the barrier would not
        """
import torch
import torch.distributed as dist

def train(model, loader, optimizer, writer, step):
    model.cuda()
    for batch in loader:
        output = model(batch.cuda())
        losses = {k: v.mean() for k, v in output.items()}
        for name, value in losses.items():
            writer.add_scalar(name, value.item(), step)
        dist.barrier()
        sum(losses.values()).backward()
        optimizer.step()
""",
        # each file's score written to a JSON-lines file as it is computed: the host needs it
        """
import json
import torch

def score_files(predictor, paths, load, out_path):
    predictor.cuda()
    with open(out_path, "w") as f:
        for path in paths:
            score = predictor(torch.from_numpy(load(path)).cuda())
            line = {}
            line["wav"], line["score"] = str(path), score.item()
            f.write(json.dumps(line) + "\\n")
""",
        # slice bounds from host values: a list of lengths, one `.tolist()` first, a size
        """
import torch

def train(model, loader, optimizer):
    model.cuda()
    for texts, durations, sizes in loader:
        texts, durations = texts.cuda(), durations.cuda()
        pred = model(texts)
        target = torch.zeros_like(pred)
        lengths = durations.long().tolist()
        host_lengths = torch.tensor(sizes)
        for p in range(target.shape[0]):
            target[p, :lengths[p]] = 1
            target[p, :host_lengths[p]] -= 1
            target[p, :sizes[p]] *= 2
            target[p, :pred.shape[1]] += 1
        loss = (pred - target).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # a lambda that formats its own parameter: not the loop's loss
        """
import torch

def train(model, loader, optimizer):
    model.cuda()
    for batch in loader:
        loss = model(batch.cuda()).mean()
        loss.backward()
        optimizer.step()
        show = lambda t: print(f"{t:.3f}")
""",
        # an agent's `predict` returns the greedy action through a name: `act` hands it on, and the
        # environment steps with it
        """
import random

import torch

class Agent:
    @torch.no_grad()
    def predict(self, states):
        qs = self.network(states)
        actions = qs.argmax().item()
        return actions

    def act(self, state):
        if random.random() > self.epsilon:
            action = self.predict(state)
        else:
            action = random.randrange(self.n_actions)
        return action

    def learn(self, env, steps, optimizer):
        state = env.reset()
        for _ in range(steps):
            action = self.act(torch.as_tensor(state).cuda())
            self.memory.push(state, action)
            loss = self.loss(self.memory.sample())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""",
        # the scale compared across `scaler.update()`: whether the optimizer step was skipped decides
        # whether the scheduler steps (the host acts on it)
        """
import torch

def fit(model, loader, optimizer, scheduler, scaler):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x.cuda(), y.cuda())
        scale_before_step = scaler.get_scale()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        skip_scheduler = scaler.get_scale() != scale_before_step
        if not skip_scheduler:
            scheduler.step()
""",
        # sizes the host has: a length, a shape, a host tensor's maximum; and a size read once
        """
import torch

def pool(H, batch, graphs):
    out = torch.zeros(len(graphs), H.shape[1], device=H.device)
    counts = torch.tensor([g.num_nodes for g in graphs])
    offsets = torch.zeros(counts.max() + 1, dtype=torch.long)
    return out.index_add_(0, batch, H), offsets

def train(model, loader, opt, graphs):
    for H, batch in loader:
        out, offsets = pool(model(H.cuda()), batch.cuda(), graphs)
        loss = out.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()

def build(index):
    return torch.zeros(index.max() + 1)

table = build(torch.load("index.pt").cuda())
""",
        # sequence lengths: host tensors by convention (`pack_padded_sequence` wants them there)
        """
import torch

def masks(model, batches, opt):
    for batch in batches:
        x, lengths = batch.round(8)
        alen = torch.arange(lengths.max(), dtype=torch.long, device=lengths.device)
        longest = lengths.max()
        pad = torch.zeros(longest, x.size(1))
        loss = model(x.cuda(), alen[:, None] < lengths[None] - 1, pad).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""",
        # an attribute the method moved to the host on the lines above (a sampler's sigma table)
        """
import torch

class Sampler:
    def sample(self, model, x, sigmas):
        self.sigmas = sigmas.to("cpu")
        for i in range(len(self.sigmas) - 1):
            x = model(x, self.sigmas[i].item())
        return x
""",
        # a length the host sizes a generation with, every back-translation step
        """
import torch

def bt_step(encoder, decoder, batches, optimizer):
    for x1, len1 in batches:
        x1, len1 = x1.cuda(), len1.cuda()
        with torch.no_grad():
            enc1 = encoder(x1, len1)
            x2, len2 = decoder.generate(enc1, len1, max_len=int(1.3 * len1.max().item() + 5))
        loss = decoder(encoder(x2, len2), x1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # a running total the loop itself uses on the host every step (to pick a stage by name)
        """
def fit(model, loader, optimizer, stage_names):
    model.cuda()
    spent = 0.0
    for x, y in loader:
        loss = model(x.cuda(), y.cuda())
        spent += loss.item()
        stage = stage_names[int(spent) % 3]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
        # `.data[0]` of a batch is its first row (a tensor, no read); a loss read once after
        # training; a write through `.data[0]`
        """
import torch

def train(model, loader, crit, optimizer, losses):
    model.cuda()
    for x, y in loader:
        out = model(x.cuda())
        first = out.data[0]
        loss = crit(out, y.cuda())
        loss.data[0] = 0.0
        dim_name = loss.names[0]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(loss.data[0])

def main():
    train(model, loader, crit, optimizer, losses)
""",
        # a guard that returns a Python value on one way: the host needs the answer
        """
import torch

def focal_loss(pred, gt):
    pos = gt.eq(1).float()
    num_pos = pos.sum()
    if num_pos == 0:
        return None
    return -(torch.log(pred) * pos).sum() / num_pos

def train(model, loader, optimizer):
    model.cuda()
    for x, y in loader:
        loss = focal_loss(model(x.cuda()), y.cuda())
        if loss is None:
            continue
        loss.backward()
        optimizer.step()
""",
        # full-batch training: the step is the whole graph, once per epoch
        """
import torch

def train(model, data, train_idx, optimizer):
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.adj_t)[train_idx]
    loss = torch.nn.functional.nll_loss(out, data.y[train_idx])
    loss.backward()
    optimizer.step()
    return loss.item()

def main(model, data, train_idx, optimizer, epochs):
    data = data.to("cuda")
    for epoch in range(1, 1 + epochs):
        loss = train(model, data, train_idx, optimizer)
        print(epoch, loss)
""",
        # selections whose size is the result (boxes kept by a threshold), reductions along a
        # dimension, NumPy arrays, and a masked mean kept at a fixed shape
        """
import numpy as np
import torch

def train(model, loader, opt, history):
    for x, y in loader:
        out = model(x.cuda())
        keep = out[:, 0] > 0.5
        boxes = out[keep]
        rows = out[keep].sum(0)
        mask = (y.cuda() != -100).float()
        loss = (out.mean(-1) * mask).sum() / mask.sum() + boxes.sum() + rows.sum()
        loss.backward()
        opt.step()
        arr = np.asarray(history)
        history.append(arr[arr > 0].mean())
""",
        # host numbers handed to the loggers, and a tensor logged every N steps
        """
import torch
import wandb
from torch.utils.tensorboard import SummaryWriter

def train(model, loader, opt, writer: SummaryWriter):
    for step, (x, y) in enumerate(loader):
        loss = model(x.cuda(), y.cuda())
        loss.backward()
        opt.step()
        writer.add_scalar("lr", opt.param_groups[0]["lr"], step)
        wandb.log({"step": step})
        if step % 100 == 0:
            writer.add_scalar("loss", loss, step)
""",
        # every iteration already waits by design, at a test that skips bad steps or at a copy
        # a NumPy metric computes with: the logged reads add no wait the loop could save
        """
import torch
import torch.nn.functional as F

def train(model, loader, opt, writer):
    for step, (x, y) in enumerate(loader):
        try:
            loss = model(x.cuda(), y.cuda())
            if loss == 0 or not torch.isfinite(loss):
                continue
            loss.backward()
            opt.step()
            writer.add_scalar("loss", loss.item(), step)
        except RuntimeError:
            continue

def validate(model, loader, running_metrics, loss_meter):
    with torch.no_grad():
        for x, y in loader:
            out = model(x.cuda())
            loss_meter.update(F.cross_entropy(out, y.cuda()).item())
            pred = out.argmax(1).cpu().numpy()
            running_metrics.update(y.numpy(), pred)

def train_heatmaps(model, loader, criterion, optimizer, losses, acc, accuracy):
    for x, y in loader:
        output = model(x.cuda())
        loss = criterion(output, y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
        _, avg_acc, cnt = accuracy(output.detach().cpu().numpy(), y.numpy())
        acc.update(avg_acc, cnt)
""",
        # sizes the host allocates with: a count of rows, a view's shape
        """
import torch

def train(model, loader, opt, sink):
    for x, y in loader:
        scores = model(x.cuda())
        n = int((scores > 0).sum().item())
        sink(torch.zeros(n, 4, device="cuda"))
        scores.mean().backward()
        opt.step()

def regroup(model, loader, opt):
    for x, groups in loader:
        out = model(x.cuda())
        out.view(int(groups.cuda().max().item()), -1).sum().backward()
        opt.step()
""",
        # host numbers spread into a built format
        """
def train(model, loader, opt, pbar):
    history = [0.0, 0.0]
    for i, (x, y) in enumerate(loader):
        model(x, y).backward()
        opt.step()
        pbar.set_description(("%10s" + "%10.4g" * 2) % (f"{i}", *history))
""",
        # a counter in a Python int; a buffer the device computes (not a counter); a read at set-up
        """
import torch
from torch import nn

class Trainer(nn.Module):
    def __init__(self, network):
        super().__init__()
        self.network = network
        self.optimizer = torch.optim.Adam(network.parameters())
        self.step = 0
        self.register_buffer("seen", torch.tensor([0]))
        self.register_buffer("ema", torch.zeros(1))

    def load(self, state):
        self.load_state_dict(state)
        self.step = int(self.seen)

    def update(self, x):
        loss = self.network(x).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.step += 1
        self.seen += x.shape[0] if self.step > 10 else 0
        self.ema += 0.1 * (loss.detach() - self.ema)
        if self.step >= 100:
            self.optimizer.param_groups[0]["lr"] *= 0.5
""",
        # a sampled token the host needs every step: decoded and written out, or kept to decode
        """
import sys
import torch

def stream(model, tokenizer, ids, steps):
    for _ in range(steps):
        nxt = torch.argmax(model(ids)[:, -1], -1)
        ids = torch.cat([ids, nxt[:, None]], 1)
        sys.stdout.write(tokenizer.decode(nxt.tolist()))

def chat(model, tokenizer, ids, steps):
    for _ in range(steps):
        nxt = torch.argmax(model(ids)[:, -1], -1)
        ids = torch.cat([ids, nxt[:, None]], 1)
        token = nxt.item()
        print(tokenizer.decode([token]), end="", flush=True)

def sample(model, tokenizer, ids, steps):
    out = []
    for _ in range(steps):
        nxt = torch.argmax(model(ids)[:, -1], -1)
        ids = torch.cat([ids, nxt[:, None]], 1)
        out.append(nxt.item())
    return tokenizer.decode(out)
""",
        # after a full drain, in any spelling, a read adds no new wait
        """
import torch
from torch.cuda import synchronize

sync = torch.cuda.synchronize

def train(model, loader, opt, meter):
    for x, y in loader:
        loss = model(x, y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        meter.update(loss.item())

def imported(model, loader, log):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        synchronize()
        log.append(float(loss))

def aliased(model, loader, log):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        sync()
        log.append(f"{loss:.3f}")

def on_the_stream(model, loader, log):
    for x in loader:
        out = model(x)
        torch.cuda.current_stream().synchronize()
        with torch.no_grad():
            log.append(out.sum().item())

def timed(model, loader, log):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for x in loader:
        start.record()
        out = model(x)
        end.record()
        end.synchronize()
        log.append((start.elapsed_time(end), out.sum().item()))
""",
        # evaluation outputs collected on the host, or handed to a host-side evaluator: bounding
        # device memory is the point of the copy
        """
import torch
from sklearn.metrics import roc_auc_score

def predictions(model, loader):
    preds = []
    with torch.no_grad():
        for x in loader:
            preds.append(model(x).argmax(1).cpu())
    return torch.cat(preds)

def features(model, loader):
    feats = []
    for x in loader:
        f = model.backbone(x)
        feats.append(f.cpu())
    return feats

def auc(model, loader):
    labels, scores = [], []
    for x, y in loader:
        labels += y.tolist()
        scores.extend(torch.sigmoid(model(x)).tolist())
    return roc_auc_score(labels, scores)

def detect(model, loader, coco_evaluator):
    for images, targets in loader:
        out = model(images)
        res = {t["image_id"].item(): o for t, o in zip(targets, out)}
        coco_evaluator.update(res)
""",
        # written to a file every step: the host needs the values
        """
import torch

def dump(model, loader, path):
    with open(path, "w") as f:
        for x in loader:
            scores = torch.sigmoid(model(x))
            f.write(f"{scores.max().item()}\\n")
""",
        # tensor attributes built in host memory (a factory without a device, never moved)
        """
import torch

class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = torch.zeros(())

    def training_step(self, batch, idx):
        loss = self.model(batch)
        self.seen += len(batch)
        self.log("seen", int(self.seen))
        return loss
""",
        # guards: the host needs the answer to skip, stop or warn; an assertion; a NaN guard that
        # counts bad steps and raises once its patience is gone
        """
import logging
import torch

logger = logging.getLogger(__name__)

def train(model, loader, opt):
    for x in loader:
        loss = model(x).mean()
        if not torch.isfinite(loss):
            continue
        if torch.isnan(loss):
            raise FloatingPointError("nan loss")
        assert torch.isfinite(loss).all()
        assert float(loss) >= 0
        loss.backward()
        opt.step()

class Brain:
    def fit_batch(self, batch):
        loss = self.compute_objectives(batch)
        self.check_loss_isfinite(loss)
        loss.backward()

    def check_loss_isfinite(self, loss):
        if not torch.isfinite(loss):
            self.nonfinite_count += 1
            if self.nonfinite_count > self.patience:
                raise ValueError("patience exhausted")
            else:
                logger.warning("patience not yet exhausted")
""",
        # a part of each batch the loop leaves in host memory: the loader yields host tensors and
        # the loop moves only the parts it computes with
        """
import torch

def evaluate(model, data_loader, device, results):
    model.eval()
    with torch.no_grad():
        for i, (image, caption, image_id) in enumerate(data_loader):
            image = image.to(device, non_blocking=True)
            captions = model.generate(image)
            for text, img_id in zip(captions, image_id):
                results.append({"image_id": img_id.item(), "caption": text})

def train(model, loader, opt, seen):
    for samples, targets, index in loader:
        samples = samples.cuda(non_blocking=True)
        loss = model(samples, targets.cuda()).mean()
        loss.backward()
        opt.step()
        print("batch", int(index[0]))
""",
        # reads on a few steps: the first one, those a set of logging iterations names
        """
import torch

class Trainer:
    def train_step(self, it, batch, metric_lg):
        loss = self.model(batch)
        loss.backward()
        self.opt.step()
        if it == 0 or it in metric_lg.log_iters:
            metric_lg.update(loss=loss.item())

    def training_step(self, batch, batch_idx):
        loss = self.model(batch)
        if self.global_step == 0 and batch_idx == 0:
            print("first loss", loss.item())
        return loss

def train(model, loader, opt, checkpoints):
    for step, x in enumerate(loader):
        loss = model(x)
        loss.backward()
        opt.step()
        if step in checkpoints:
            print(step, loss.item())
""",
        # evaluation over batches of a thousand examples or more: a read per batch is negligible
        """
import argparse
import torch
from tqdm import tqdm

parser = argparse.ArgumentParser()
parser.add_argument("--test-batch-size", type=int, default=1000)
args = parser.parse_args()
test_loader = torch.utils.data.DataLoader(test_set, batch_size=args.test_batch_size)

def test(model):
    model.cuda().eval()
    correct = 0
    for data, target in test_loader:
        pred = model(data.cuda()).argmax(1)
        correct += pred.eq(target.cuda()).sum().item()
    big = torch.utils.data.DataLoader(test_set, batch_size=4096)
    for i, (data, target) in enumerate(tqdm(big)):
        print(model(data.cuda()).sum().item())
    return correct
""",
        # a selection by a boolean mask waited for the device itself (its size is data)
        """
import torch

def learn(model, optimizer, batches, logger):
    model.cuda()
    for batch in batches:
        out = model(batch)
        loss = out["loss"]
        loss.backward()
        optimizer.step()
        episode_returns = batch["episode_return"][batch["done"]]
        logger.log({"returns": tuple(episode_returns.cpu().numpy())})

def learn_values(model, optimizer, batches, logger):
    model.cuda()
    for batch in batches:
        out = model(batch)
        out["loss"].backward()
        optimizer.step()
        finished = out["value"][batch.valid_mask]
        logger.log({"values": finished.cpu().numpy()})
""",
        # what an environment returns comes from the host (a test loop over episodes)
        """
import torch

def test(env, model, num_episodes):
    model.cuda()
    returns = []
    observation = env.initial()
    while len(returns) < num_episodes:
        outputs = model(observation)
        observation = env.step(outputs["action"])
        if observation["done"].item():
            returns.append(observation["episode_return"].item())
    return returns
""",
        # an update run once between two environment steps: the next action waits for it anyway
        """
import torch

class DQNAgent:
    def select_action(self, state):
        return self.dqn(torch.as_tensor(state, device="cuda")).argmax().cpu().numpy()

    def step(self, action):
        return self.env.step(action)

    def update_model(self):
        loss = self.loss(self.memory.sample())
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train(self, num_frames):
        state = self.env.reset()
        for frame_idx in range(num_frames):
            action = self.select_action(state)
            state, reward, done = self.step(action)
            if len(self.memory) >= 32:
                self.losses.append(self.update_model())


def update(net, opt, batch):
    loss = net(batch).mean()
    loss.backward()
    opt.step()
    return loss.item()


def run(env, net, opt, memory):
    obs = env.reset()
    for t in range(1000):
        obs, reward, done, _ = env.step(net(obs).argmax().item())
        print(update(net, opt, memory.sample()))
""",
        # an agent's action selection returns its action to the environment loop
        """
import torch

class Agent:
    def act(self, state):
        with torch.no_grad():
            return (self.online_net(state.unsqueeze(0)) * self.support).sum(2).argmax(1).item()

    def select_action(self, state):
        return self.actor(state).cpu().numpy()

def run(env, memory, steps):
    agent = Agent()
    state = env.reset()
    for t in range(steps):
        action = agent.act(state)
        agent.select_action(state)
        state, reward, done = env.step(action)
        loss = agent.learn(memory)
        loss.backward()
""",
        # a read whose value a non-finite abort tests every step: an assertion in the branch, a
        # dict of reads summed and tested, an assertion on the name
        """
import math
import sys
import torch

def train(model, loader, opt, log):
    for x, y in loader:
        loss = model(x, y)
        loss_value = loss.item()
        if not math.isfinite(loss_value):
            print("Loss is {}, stopping training".format(loss_value))
            assert math.isfinite(loss_value)
        loss.backward()
        opt.step()
        log(loss=loss_value)

def train_ssl(model, loader, opt, logger):
    for batch in loader:
        loss_dict = model(batch)
        sum(loss_dict.values()).backward()
        opt.step()
        reduced = {k: v.item() for k, v in loss_dict.items()}
        if math.isnan(sum(reduced.values())):
            logger.info("NaN detected")
            raise AssertionError
        logger.log(**reduced)

def train_plain(model, loader, opt):
    for x in loader:
        loss = model(x).mean()
        value = float(loss)
        assert not math.isnan(value), "loss is nan"
        loss.backward()
        opt.step()
        print(value)
""",
        # conditions that are the algorithm's own logic: a `while` test, a branch that runs a
        # model or keeps Python state, a choice on values the loop reads back anyway; and a
        # bool() or `not` of a tensor, a decision the host acts on
        """
import torch

def decode(model, tokens, blank, hyps):
    done = torch.zeros(1, dtype=torch.bool, device="cuda")
    while not done.all():
        nxt = torch.argmax(model(tokens), -1)
        if (nxt == blank).all():
            hyps.append(nxt)
        if nxt.any():
            tokens = model.extend(tokens, nxt)
        done = nxt == 0

def beam(model, x, blank, width, hyps):
    for frame in x:
        scores, ids = torch.topk(model(frame), width)
        best = scores[0] if ids[0] != blank else scores[1]
        for j in range(width):
            if ids[j].item() == blank:
                continue
            hyps.append((j, best))

def train(model, loader, opt, flags):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        bad = bool(torch.isnan(loss))
        flags.append((not torch.isfinite(loss), loss.detach().isfinite() and bad))
""",
        # not visibly tensors: sizes, attributes, counters, a model object
        """
import torch

def train(model, loader, opt, step):
    for x in loader:
        loss = model(x).sum()
        loss.backward()
        n = float(x.shape[0]) * int(len(x)) * float(model.scale)
        print(f"step {step}", "%d" % step, "{}".format(n), model)
        flag = not model.training and n
""",
        # in host memory: a factory without a device, a tokenizer's tensors, a type-checked value
        """
import torch

def train(model, loader, tokenizer, metrics):
    for text in loader:
        a = tokenizer(text, return_tensors="pt")
        b = tokenizer(text, padding="longest", return_tensors="pt")
        if torch.equal(a.input_ids, b.input_ids):
            ids = torch.where(a.input_ids > 0, a.input_ids, 0)
        model(ids).sum().backward()
        print(float(torch.tensor(3.0)), f"{torch.arange(3)}")
        for value in metrics:
            if isinstance(value, torch.Tensor) and torch.isnan(value):
                value = torch.zeros(())

def step(model, x, y, opt):
    count = torch.tensor(0)
    count += (y != -100).sum()
    model(x).sum().backward()
    return int(count)
""",
        # once per epoch, periodic, after an early exit on the other steps, and once in __main__
        """
import torch

def fit(model, loader, opt, epochs):
    for epoch in range(epochs):
        for step, x in enumerate(loader):
            loss = model(x).mean()
            loss.backward()
            opt.step()
            if step % 100 == 0:
                print(f"{loss:.3f}")
        print(f"epoch {epoch}: {loss:.3f}", float(loss))

class Trainer:
    def train_step(self, batch, should_log):
        loss = self.model(batch).mean()
        loss.backward()
        if not should_log:
            return
        self.logger.log(float(loss), loss.detach().cpu())

if __name__ == "__main__":
    print(float(torch.ones(3).cuda().sum()))
""",
        # cold: the message of an error, a warning-only branch
        """
import warnings
import torch

def train(model, loader):
    for x in loader:
        loss = model(x).mean()
        if loss.detach().abs() > 1e6:
            raise FloatingPointError(f"loss exploded: {loss:.3g}")
        if x.dim() != 2:
            warnings.warn(f"unexpected input, loss {float(loss)}")
        loss.backward()
""",
        # the environment needs the actions on the host, every step
        """
import numpy as np
import torch

def collect(policy, env, obs, steps):
    for _ in range(steps):
        actions = policy(torch.as_tensor(obs, device="cuda")).cpu().numpy()
        clipped = np.clip(actions, -1, 1)
        obs, reward, done, info = env.step(clipped)
        obs, reward, done, info = env.step(int(torch.argmax(policy(obs))))
""",
        # outside a loop: a bulk copy the host needs in a training step, and a one-element
        # `.cpu()` in straight-line code that is not a training step (an evaluation helper)
        """
import torch

class Lit:
    def training_step(self, batch, idx):
        logits = self.model(batch)
        self.preds.append(logits.argmax(-1).cpu())
        return logits.sum()

def record(out):
    return out.mean().cpu(), float(out.sum())

def evaluate(model, loader):
    with torch.no_grad():
        for x in loader:
            record(model(x))
""",
        # in a forward or a compiled function, PTL402 / PTL403 report it
        """
import torch

class Gate(torch.nn.Module):
    def forward(self, x):
        for t in x:
            if t.sum() > 0:
                t = t * 2
            print(f"{t.sum():.3f}", float(t.mean()))
        return x
""",
        # a model's position-id helper: `next()` walks image sizes, not batches, so the loop
        # is not a step loop and the helper's reads are its host bookkeeping
        """
import torch

class VisionModel(torch.nn.Module):
    def positions(self, grid, start):
        t, h = grid[0].item(), grid[1].item()
        return torch.arange(t * h) + start

    def rope_index(self, groups, image_grid):
        grid_iters = {1: iter(image_grid)}
        out, pos = [], 0
        for kind, start, end in groups:
            grid = next(grid_iters[kind])
            out.append(self.positions(grid, pos))
            pos += end - start
        return torch.cat(out)

    def forward(self, x, groups, image_grid):
        return x + self.rope_index(groups, image_grid)
""",
        # loops that only read results back: the first read waits, the others find nothing queued;
        # and a batch straight from a DataLoader is in host memory
        """
import torch

def values(ts):
    return [t.item() for t in ts]

def drain(q):
    while q:
        x = q.pop()
        print(x.detach().cpu().numpy())

for step, batch in enumerate(loader):
    ids = batch["ids"].tolist()
""",
        # the value decides whether the loop goes on: the host needs it every iteration
        """
import torch

def generate(model, tokens, eos, steps):
    for _ in range(steps):
        nxt = model(tokens)[:, -1].argmax(-1)
        tokens = torch.cat([tokens, nxt[:, None]], 1)
        if nxt.item() == eos:
            break
        token = nxt.item()
        if token == eos:
            return tokens
    return tokens
""",
        # the data pipeline works on host tensors: a Sampler, a Dataset, a CPU-only path
        """
import torch
from torch.utils.data import Sampler

class Balanced(Sampler):
    def __iter__(self):
        weights = torch.as_tensor(self.weights)
        for _ in range(len(self)):
            yield torch.multinomial(weights, 1).item()

def _pool_cpu(model, hists):
    return [model(h).sum().item() for h in hists]
""",
        # once per epoch: the .item() runs after the inner batch loop
        """
import torch

def fit(model, loader, opt, epochs):
    for epoch in range(epochs):
        epoch_loss = torch.zeros(())
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            epoch_loss += loss.detach()
        print(epoch, epoch_loss.item())
""",
        # visibly NumPy, or plain Python
        """
import numpy as np
import torch

def f(n):
    for i in range(n):
        a = np.arange(i)
        b = [1, 2, 3]
        print(a.tolist(), np.zeros(3).tolist(), b)
""",
        # outside any loop; the iterable of a loop is evaluated once
        """
import torch

def f(t):
    v = t.item()
    for x in t.tolist():
        print(x)
    return [y for y in t.cpu().numpy()]
""",
        # periodic logging
        """
import torch

def train(loader, model):
    for step, x in enumerate(loader):
        loss = model(x)
        if step % 100 == 0:
            print(loss.item())
""",
        # no torch in this module
        """
def f(rows):
    for row in rows:
        print(row.tolist())
""",
        # visibly in host memory: reading it back is no device sync
        """
import numpy as np
import torch

def scheduler_steps(step, arrays, n):
    rates = [r.item() for r in torch.linspace(0, 0.1, n, device="cpu")]
    for a in arrays:
        latents = step(torch.from_numpy(a)).prev_sample
        latents = latents.numpy()
    host = torch.ones(3).cpu()
    for i in range(3):
        print(host.tolist())
""",
        # NumPy scalars the code has type-checked; checkpoint tensors loaded in host memory;
        # a factory without device= builds in host memory
        """
import numpy as np
import torch

def clean(params, state_dict):
    for k in params:
        if isinstance(params[k], (np.integer, np.floating)):
            params[k] = params[k].item()
    for key in list(state_dict):
        alpha = state_dict.pop(key).item()
    for row in params["ids"]:
        if hasattr(row, "tolist"):
            row = row.tolist()
    rates = [x.item() for x in torch.linspace(0, 0.1, 12)]
""",
        # a function defined in a loop body is not run per iteration by the loop
        """
import torch

for name in ["a", "b"]:
    def read(t):
        return t.item()
""",
        # once: after training in __main__, a loop over layers in __init__, set-up main() calls
        """
import torch

class Net(torch.nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.scales = [b.weight.norm().item() for b in blocks]

def report(model):
    for name, p in model.named_parameters():
        print(name, p.norm().item())

def main():
    model = Net([])
    report(model)

if __name__ == "__main__":
    main()
    print(torch.ones(3).cuda().sum().item())
""",
        # cold: the error path, a warning branch
        """
import torch
import warnings

def train(model, loader):
    for x in loader:
        loss = model(x).mean()
        if torch.isnan(loss):
            raise FloatingPointError(f"nan loss after {loss.item()}")
        loss.backward()
""",
        # already in host memory: moved with .cpu() earlier, named so, or a processor's output
        """
import torch

def decode(labels, processor, images):
    labels_cpu = labels.detach().cpu()
    rows = []
    for row in labels_cpu:
        rows.append(row[row != -100].tolist())
    inputs = processor(images=images, return_tensors="pt")
    for key in inputs:
        print(inputs[key].tolist())
    return rows
""",
        # in a forward, PTL402 reports it (it is also a graph break)
        """
import torch

class Head(torch.nn.Module):
    def forward(self, x):
        for t in x:
            print(t.sum().item())
        return x
""",
        # ops whose output size depends on data (`unique`, one-argument `torch.where`, `nonzero`)
        # have waited already; a number that picks a Python object is needed on the host
        """
import torch

def predict(model, loader, classes, log):
    for x in loader:
        out = model(x)
        log.append(out.argmax(-1).unique().tolist())
        hits = torch.where(out.argmax(-1) == 0)[0]
        log.append(hits.tolist())
        picked = torch.nonzero(out)
        log.append(picked[:, 0].tolist())
        log.append(classes[int(out[0].argmax().item())])
""",
        # NumPy values: made by a method only arrays have (`astype`), also through names and
        # conditional expressions, or checked with isinstance (the value or what it is taken from)
        """
import numpy as np
import torch

def train(model, loader, opt, featurize, metric, log):
    for x, y in loader:
        out = model(x)
        out.sum().backward()
        opt.step()
        feats = featurize(x)
        log.append(feats.astype("float16").tolist())
        arr = feats.astype(np.float32)
        row = arr[0] if arr.ndim == 2 else arr
        log.append((row * 2).tolist())
        score = metric(out, y)
        if isinstance(score, np.ndarray):
            log.append(score.max().item())
            top = score[0]
            log.append(top.tolist())
""",
        # checkpoint tensors are loaded into host memory (names with `checkpoint`, `_sd`, or
        # assigned from one)
        """
import torch

def evaluate_checkpoints(model, paths, batch, scores):
    for path in paths:
        checkpoint = torch.load(path, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        meta = checkpoint["meta"]
        epoch = meta["epoch"].item()
        teacher_sd = checkpoint["teacher"]
        scale = teacher_sd["scale"].item()
        scores.append((epoch, scale, model(batch)))
""",
        # data-pipeline classes work on host tensors: Dataset and Sampler subclasses, however
        # the base is spelled (imported, unresolved, an attribute, subscripted)
        """
import torch
from torch.utils.data import Dataset, WeightedRandomSampler

class Embedded(Dataset):
    def __getitem__(self, i):
        return [self.encoder(crop).mean().item() for crop in self.crops(i)]

class Hard(WeightedRandomSampler):
    def __iter__(self):
        for x in self.pool:
            yield self.model(x).argmax().item()

class Buckets(BatchSampler):
    def __iter__(self):
        for x in self.pool:
            yield self.model(x).argmax().item()

class Shards(data.IterableDataset):
    def __iter__(self):
        for x in self.pool:
            yield self.model(x).argmax().item()

class Typed(Dataset[int]):
    def __iter__(self):
        for x in self.pool:
            yield self.model(x).argmax().item()
""",
    ]

