"""PTL501 per-parameter-update: a loop over parameters doing one in-place update per tensor.

Also holds what PTL502 shares with it: recognising a loop over parameters, and writing the
`torch._foreach_*` replacement of such a loop.
"""

from __future__ import annotations

import ast
import re

from ptlint.astutil import body_nodes
from ptlint.rule import UNSAFE, Fix, FixExample, Rule

# Names that clearly hold a list of parameters when nothing else tells us what they are.
PARAM_LIST_NAMES = {"params", "parameters", "param_list", "params_list", "parameter_list", "model_params",
                    "model_parameters", "trainable_params", "params_with_grad"}
# Calls that pass an iterable of parameters through unchanged (element for element).
PASS_THROUGH = {"list", "tuple", "filter", "reversed", "sorted"}
# In-place arithmetic on a parameter: an optimizer step, an EMA, weight clipping.
UPDATE_METHODS = {"add_", "sub_", "mul_", "div_", "lerp_", "addcdiv_", "addcmul_", "clamp_", "clamp_min_",
                  "clamp_max_"}
UPDATE_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


# -- which loops run over parameters --------------------------------------------------------------

def param_names(iterable: ast.AST, target: ast.AST, ctx, depth: int = 0) -> set[str]:
    """The names in a `for` target that are bound to parameter tensors; empty when the iterable
    is not visibly an iterable of parameters."""
    if depth > 4:
        return set()
    if isinstance(iterable, ast.Call):
        func = iterable.func
        if isinstance(func, ast.Attribute) and func.attr == "parameters" and not iterable.args:
            return {target.id} if isinstance(target, ast.Name) else set()
        if isinstance(func, ast.Attribute) and func.attr == "named_parameters":
            return _second_name(target)
        if isinstance(func, ast.Name) and func.id in PASS_THROUGH and iterable.args:
            source = iterable.args[1] if func.id == "filter" and len(iterable.args) == 2 else iterable.args[0]
            return param_names(source, target, ctx, depth + 1)
        if isinstance(func, ast.Name) and func.id == "enumerate" and iterable.args \
                and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            return param_names(iterable.args[0], target.elts[1], ctx, depth + 1)
        if isinstance(func, ast.Name) and func.id == "zip" and not iterable.keywords \
                and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(iterable.args):
            found: set[str] = set()
            for arg, element in zip(iterable.args, target.elts):
                found |= param_names(arg, element, ctx, depth + 1)
            return found
        return set()
    if isinstance(iterable, ast.Subscript) and _is_params_key(iterable.slice):  # group["params"]
        return {target.id} if isinstance(target, ast.Name) else set()
    if isinstance(iterable, ast.Attribute) and iterable.attr in PARAM_LIST_NAMES:  # self.params
        return {target.id} if isinstance(target, ast.Name) else set()
    if isinstance(iterable, ast.Name):
        if iterable.id in PARAM_LIST_NAMES:
            return {target.id} if isinstance(target, ast.Name) else set()
        values = ctx.assignments(iterable.id)
        if values and all(_is_param_list(v, ctx, depth + 1) for v in values):
            return {target.id} if isinstance(target, ast.Name) else set()
    return set()


def _is_param_list(value: ast.AST, ctx, depth: int) -> bool:
    """`params = list(model.parameters())`, `[p for p in model.parameters() if ...]`."""
    probe = ast.Name("p")
    if isinstance(value, ast.ListComp) and len(value.generators) == 1:
        generator = value.generators[0]
        return isinstance(value.elt, ast.Name) and value.elt.id in param_names(generator.iter, generator.target,
                                                                              ctx, depth)
    return bool(param_names(value, probe, ctx, depth))


def _is_params_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "params"


def _second_name(target: ast.AST) -> set[str]:
    if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
        return {target.elts[1].id}
    return set()


def tensor_kind(node: ast.AST, names: set[str]) -> tuple[str, str] | None:
    """("param", p) for `p` / `p.data`, ("grad", p) for `p.grad` / `p.grad.data`, where p is a
    parameter name of the loop."""
    if isinstance(node, ast.Name) and node.id in names:
        return ("param", node.id)
    if isinstance(node, ast.Attribute):
        inner = tensor_kind(node.value, names)
        if inner is None:
            return None
        if node.attr == "data":
            return inner
        if node.attr == "grad" and inner[0] == "param" and isinstance(node.value, ast.Name):
            return ("grad", inner[1])
    return None


def in_place_base(call: ast.Call) -> ast.AST:
    """`p.mul_(d).add_(x)` -> `p`: the tensor a chain of in-place calls writes to."""
    node: ast.AST = call
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_"):
        node = node.func.value
    return node


def in_one_off_code(ctx) -> bool:
    """Initialisation runs once: a per-parameter loop there costs nothing worth a finding.
    The `_single_tensor_*` fallbacks of foreach optimizers are per-tensor on purpose."""
    for function in ctx.functions:
        name = getattr(function, "name", "")
        if "init" in name or "single_tensor" in name:
            return True
    return False


# -- writing the replacement ----------------------------------------------------------------------

_LOOP_INVARIANT = (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.UnaryOp, ast.BinOp, ast.Load,
                   ast.unaryop, ast.operator, ast.Slice)


def loop_invariant(node: ast.AST, loop_names: set[str]) -> bool:
    """A side-effect-free expression that does not depend on the loop: evaluating it once gives
    the value every iteration saw."""
    for child in ast.walk(node):
        if not isinstance(child, _LOOP_INVARIANT):
            return False
        if isinstance(child, ast.Name) and child.id in loop_names:
            return False
    return True


def target_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


def _grad_none_test(test: ast.AST, op: type) -> str | None:
    """`p.grad is None` (op ast.Is) or `p.grad is not None` (ast.IsNot) -> "p"."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None \
            and isinstance(test.left, ast.Attribute) and test.left.attr == "grad" \
            and isinstance(test.left.value, ast.Name):
        return test.left.value.id
    return None


def grad_guard(stmt: ast.AST) -> str | None:
    """`if p.grad is not None:` with no else -> "p"."""
    if isinstance(stmt, ast.If) and not stmt.orelse:
        return _grad_none_test(stmt.test, ast.IsNot)
    return None


def skip_if_no_grad(stmt: ast.AST) -> str | None:
    """`if p.grad is None: continue` -> "p"."""
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 \
            and isinstance(stmt.body[0], ast.Continue):
        return _grad_none_test(stmt.test, ast.Is)
    return None


def unguarded_body(loop: ast.For) -> tuple[list[ast.stmt], set[str]]:
    """The loop's statements inside an optional `p.grad is not None` guard, and the guarded names."""
    body = list(loop.body)
    guarded: set[str] = set()
    if len(body) == 1 and (name := grad_guard(body[0])):
        guarded.add(name)
        body = list(body[0].body)
    elif len(body) >= 2 and (name := skip_if_no_grad(body[0])):
        guarded.add(name)
        body = body[1:]
    return body, guarded


def fixable_loop(loop: ast.For, ctx) -> bool:
    """A loop the fixes may replace: no `else`, no comment the rewrite would drop, and no code
    after it reading the loop variable (a comprehension does not leave it bound)."""
    lines = ctx.source.text.splitlines()[loop.lineno - 1:loop.end_lineno]  # whole lines: trailing comments too
    return not loop.orelse and not any("#" in line for line in lines) and not target_used_after(loop, ctx)


def target_used_after(loop: ast.For, ctx) -> bool:
    """Whether code after the loop may read a loop variable (a comprehension would not leave it
    bound): the first later mention of the name is a read."""
    names = target_names(loop.target)
    scope = ctx.function or ctx.tree
    end = (loop.end_lineno, loop.end_col_offset)
    first: dict[str, tuple[tuple[int, int], bool]] = {}
    pending: list[ast.AST] = list(scope.body) if isinstance(scope.body, list) else [scope.body]
    while pending:
        node = pending.pop()  # nested functions included: a closure may read the name later
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            bound = set().union(*(target_names(g.target) for g in node.generators))
            pending.extend(g.iter for g in node.generators[:1])
            if bound & names:
                continue  # its own scope
        if isinstance(node, ast.Name) and node.id in names:
            where = (node.lineno, node.col_offset)
            if where > end and (node.id not in first or where < first[node.id][0]):
                first[node.id] = (where, isinstance(node.ctx, ast.Load))
        pending.extend(ast.iter_child_nodes(node))
    return any(is_read for _, is_read in first.values())


class Unsupported(Exception):
    """A loop body the fix cannot translate exactly."""


MARK = "\x02"  # around a qualified torch name in fix data: fix() writes the module's spelling of it


class ForeachWriter:
    """Turns per-parameter statements into `torch._foreach_*` calls over lists built by one
    comprehension per tensor expression, e.g. `[p.grad for p in params_with_grad]`."""

    def __init__(self, loop: ast.For, text: str, guarded: set[str]) -> None:
        self.loop = loop
        self.text = text
        self.loop_names = target_names(loop.target)
        self.guarded = guarded
        self.calls: list[str] = []  # each with list placeholders \x00N\x00
        self.lists: list[str] = []  # the per-tensor expressions, e.g. "p.data"
        self.grad_names: set[str] = set()
        self.owners: set[str] = set(guarded)  # the loop names the lists are built from

    def code(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.text, node)
        if segment is None:
            raise Unsupported
        return segment if "\n" not in segment else f"({segment})"

    def tensor(self, node: ast.AST, names: set[str]) -> str:
        kind = tensor_kind(node, names)
        if kind is None:
            raise Unsupported
        self.owners.add(kind[1])
        if any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(node)):
            self.grad_names.add(kind[1])
        expression = self.code(node)
        if expression not in self.lists:
            self.lists.append(expression)
        return f"\x00{self.lists.index(expression)}\x00"

    def scalar(self, node: ast.AST) -> str:
        if not loop_invariant(node, self.loop_names):
            raise Unsupported
        return self.code(node)

    def add(self, function: str, *args: str) -> None:
        self.calls.append(f"{MARK}{function}{MARK}(" + ", ".join(args) + ")")

    def finish(self) -> dict:
        """The fix data: the statements to write, with the lists spelled out."""
        # the comprehensions keep the loop's own guard, and skip parameters without a gradient
        # where the body reads one (the loop would have raised there)
        condition = " and ".join(f"{n}.grad is not None" for n in sorted(self.grad_names | self.guarded))
        target = self.code(self.loop.target)
        iterable = self.code(self.loop.iter)
        uses = sum(call.count("\x00") // 2 for call in self.calls)
        statements: list[str] = []
        if uses == 1:  # one list: the comprehension can iterate the original iterable itself
            lists = [f"[{e} for {target} in {iterable}" + (f" if {condition}]" if condition else "]")
                     for e in self.lists]
        else:  # several lists: iterate the original once, into a list, in the same order
            # keep only the loop name the lists use (`param` of `name, param`), else the tuples
            single = isinstance(self.loop.target, ast.Name) or len(self.owners) == 1
            element = next(iter(self.owners)) if single else f"({target})"
            fresh = fresh_name(self.text, "params_with_grad" if condition else "param_list" if single
                               else "param_pairs")
            if condition or (single and element != target):
                statements.append(f"{fresh} = [{element} for {target} in {iterable}"
                                  + (f" if {condition}]" if condition else "]"))
            else:
                statements.append(f"{fresh} = list({iterable})")
            inner = element if single else target
            lists = [fresh if e == element else f"[{e} for {inner} in {fresh}]" for e in self.lists]
        for call in self.calls:
            statements.append(re.sub("\x00(\\d+)\x00", lambda m: lists[int(m.group(1))], call))
        return {"statements": statements}


def fresh_name(text: str, base: str) -> str:
    name, index = base, 1
    while re.search(rf"\b{name}\b", text):
        index += 1
        name = f"{base}_{index}"
    return name


def build_fix_statements(node, statements: list[str], fixctx):
    """The libcst replacement of a `for` node by the statements of ForeachWriter.finish."""
    import libcst as cst

    if not isinstance(node, cst.For) or node.asynchronous is not None or node.orelse is not None:
        return None
    empty = cst.Module([])
    if "#" in empty.code_for_node(node.body):  # a comment in or after the body would be lost
        return None
    out = []
    for statement in statements:
        parts = statement.split(MARK)  # odd parts are qualified torch names
        for index in range(1, len(parts), 2):
            parts[index] = empty.code_for_node(fixctx.reference(parts[index]))
        out.append(cst.parse_statement("".join(parts) + "\n"))
    out[0] = out[0].with_changes(leading_lines=node.leading_lines)
    return out[0] if len(out) == 1 else cst.FlattenSentinel(out)


# -- the rule ------------------------------------------------------------------------------------

class PerParameterUpdate(Rule):
    code = "PTL501"
    name = "per-parameter-update"
    message = "this loop updates each parameter in place, one kernel launch per tensor; use `torch._foreach_*`"
    fixable = UNSAFE
    triggers = ("parameters", "params")

    def visit_For(self, node: ast.For) -> None:
        names = param_names(node.iter, node.target, self.ctx)
        if not names or in_one_off_code(self.ctx):
            return
        if not any(self._is_update(n, names) for n in body_nodes(node.body)):
            return
        data = self._translate(node, names)
        fix = Fix(UNSAFE, "Update all parameters with one `torch._foreach_*` call", data) if data else None
        self.report(node, fix=fix)

    @staticmethod
    def _is_update(node: ast.AST, names: set[str]) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in UPDATE_METHODS:
            kind = tensor_kind(in_place_base(node), names)
            return kind is not None and kind[0] == "param"
        if isinstance(node, ast.AugAssign) and isinstance(node.op, UPDATE_OPS):
            kind = tensor_kind(node.target, names)
            return kind is not None and kind[0] == "param"
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.BinOp):
            target = node.targets[0]  # p.data = p.data - lr * p.grad
            kind = tensor_kind(target, names)
            return isinstance(target, ast.Attribute) and target.attr == "data" and kind is not None \
                and kind[0] == "param"
        return False

    def _translate(self, loop: ast.For, names: set[str]) -> dict | None:
        if not fixable_loop(loop, self.ctx):
            return None
        body, guarded = unguarded_body(loop)
        writer = ForeachWriter(loop, self.ctx.source.text, guarded)
        try:
            for stmt in body:
                self._statement(stmt, names, writer)
            return writer.finish() if writer.calls else None
        except Unsupported:
            return None

    @staticmethod
    def _statement(stmt: ast.stmt, names: set[str], w: ForeachWriter) -> None:
        """One foreach call per in-place operation, in the loop body's order."""
        if isinstance(stmt, ast.AugAssign):
            value = stmt.value
            if isinstance(stmt.op, (ast.Mult, ast.Div)):  # p.data *= s
                function = "torch._foreach_mul_" if isinstance(stmt.op, ast.Mult) else "torch._foreach_div_"
                w.add(function, w.tensor(stmt.target, names), w.scalar(value))
                return
            if not isinstance(stmt.op, (ast.Add, ast.Sub)):
                raise Unsupported
            function = "torch._foreach_add_" if isinstance(stmt.op, ast.Add) else "torch._foreach_sub_"
            if tensor_kind(value, names):  # p.data -= p.grad
                w.add(function, w.tensor(stmt.target, names), w.tensor(value, names))
                return
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult):  # p.data -= lr * p.grad
                scale, tensor = value.left, value.right
                if tensor_kind(scale, names):
                    scale, tensor = tensor, scale
                # the product first, as the loop computes it, then the in-place subtraction
                product = f"{MARK}torch._foreach_mul{MARK}({w.tensor(tensor, names)}, {w.scalar(scale)})"
                w.add(function, w.tensor(stmt.target, names), product)
                return
            raise Unsupported
        if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call):
            raise Unsupported
        chain: list[ast.Call] = []  # p.mul_(d).add_(x): mul_ first
        node: ast.AST = stmt.value
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            chain.append(node)
            node = node.func.value
        base = w.tensor(node, names)
        for call in reversed(chain):
            method = call.func.attr
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                raise Unsupported
            keywords = {k.arg: k.value for k in call.keywords}
            if method in ("add_", "sub_") and len(call.args) == 1 and set(keywords) <= {"alpha"}:
                other = call.args[0]
                function = f"torch._foreach_{method}"
                if tensor_kind(other, names):  # p.add_(p.grad, alpha=-lr)
                    args = [base, w.tensor(other, names)]
                    if "alpha" in keywords:
                        args.append(f"alpha={w.scalar(keywords['alpha'])}")
                    w.add(function, *args)
                elif not keywords:  # p.add_(1e-3)
                    w.add(function, base, w.scalar(other))
                else:
                    raise Unsupported
            elif method in ("mul_", "div_") and len(call.args) == 1 and not keywords \
                    and not tensor_kind(call.args[0], names):
                w.add(f"torch._foreach_{method}", base, w.scalar(call.args[0]))
            elif method == "lerp_" and len(call.args) + len(keywords) == 2 and set(keywords) <= {"end", "weight"}:
                positional = list(call.args)
                end = positional.pop(0) if positional else keywords.get("end")
                weight = positional.pop(0) if positional else keywords.get("weight")
                if end is None or weight is None:
                    raise Unsupported
                w.add("torch._foreach_lerp_", base, w.tensor(end, names), w.scalar(weight))
            else:
                raise Unsupported

    def fix(self, node, finding, fixctx):
        statements = finding.fix.data.get("statements") if finding.fix else None
        return build_fix_statements(node, statements, fixctx) if statements else None

    docs = """
## What it does
Finds a loop over a model's parameters (`model.parameters()`, `named_parameters()`,
`group["params"]`, a list built from them, or `zip` of two such, as in an EMA) whose body updates
each parameter in place: `p.add_(...)`, `p.data -= ...`, `p.data = p.data - ...`, `p.mul_(...)`,
`ema_p.lerp_(p, w)`, `p.clamp_(...)`.

Not reported: loops that only read parameters (counting `numel()`), set flags
(`requires_grad_(False)`), copy or initialise weights (`copy_`, `normal_`: usually done once), or
reset gradients with `p.grad = None`; loops in initialisation code
(functions whose name contains `init`) and in `_single_tensor_*` optimizer fallbacks.

## Why is this bad?
Each in-place operation is a separate kernel launch. A model with hundreds of parameter tensors
pays hundreds of launches (and Python dispatches) per step, which often costs more than the
arithmetic itself. The `torch._foreach_*` functions apply the same operation to a whole list of
tensors in a few fused launches; `torch.optim` uses them for exactly this reason.

## Example
```python
with torch.no_grad():
    for p in model.parameters():
        if p.grad is not None:
            p.add_(p.grad, alpha=-lr)
```

## Use instead
```python
with torch.no_grad():
    torch._foreach_add_([p for p in model.parameters() if p.grad is not None],
                        [p.grad for p in model.parameters() if p.grad is not None], alpha=-lr)
```
(the fix builds the list of parameters once, so that a generator is iterated only once), or use
a `torch.optim` optimizer.

## Fix safety
Unsafe: `torch._foreach_*` is a private API, and parameters without a gradient are skipped
where the loop would have raised. The fix is offered only for bodies it can translate
operation for operation: `add_`/`sub_` (with `alpha=`), `mul_`/`div_` by a loop-invariant
value, `lerp_`, chains of these, and `+=`/`-=`/`*=` of a gradient (times a loop-invariant value),
optionally guarded by `if p.grad is not None:`.

## References
- https://pytorch.org/docs/stable/optim.html#algorithms (foreach and fused implementations)
"""

    bad_examples = [
        """
import torch

def sgd_step(model, lr):
    with torch.no_grad():
        for p in model.parameters():  # expect: PTL501
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
""",
        """
import torch

@torch.no_grad()
def update_ema(ema, model, decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):  # expect: PTL501
        ema_p.lerp_(p, 1 - decay)
""",
        """
def step(optimizer):
    for group in optimizer.param_groups:
        for p in group["params"]:  # expect: PTL501
            if p.grad is None:
                continue
            state = optimizer.state[p]
            p.data.mul_(1 - group["lr"] * group["weight_decay"])
            p.data.add_(p.grad, alpha=-group["lr"])
""",
        """
def clip_critic(critic, c):
    for name, w in critic.named_parameters():  # expect: PTL501
        w.data.clamp_(-c, c)
""",
        """
def descend(model, lr):
    for p in model.parameters():  # expect: PTL501
        p.data = p.data - lr * p.grad
""",
        """
def manual_step(model, lr):
    params = list(model.parameters())
    for p in params:  # expect: PTL501
        p.data -= lr * p.grad
""",
    ]

    good_examples = [
        # reading only
        """
def count(model):
    total = 0
    for p in model.parameters():
        total += p.numel()
    return total
""",
        # flags and gradient resets
        """
def freeze(model):
    for p in model.parameters():
        p.requires_grad_(False)
        p.grad = None
""",
        # initialisation runs once
        """
class Net:
    def _init_weights(self):
        for p in self.parameters():
            p.data.mul_(0.5)
""",
        # the loop variable is not a parameter
        """
def accumulate(model, totals):
    for name, p in model.named_parameters():
        totals[name].add_(p.detach())
""",
        # a loop over something else; a parameter moved or copied, not updated
        """
def scale(tensors):
    for t in tensors:
        t.mul_(2)
""",
        """
def to_half(model, source):
    for p, q in zip(model.parameters(), source.parameters()):
        p.data = p.data.half()
        p.data.copy_(q.data)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

def sgd_step(model, lr):
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.add_(p.grad, alpha=-lr)
""",
            after="""
import torch

def sgd_step(model, lr):
    with torch.no_grad():
        params_with_grad = [p for p in model.parameters() if p.grad is not None]
        torch._foreach_add_(params_with_grad, [p.grad for p in params_with_grad], alpha=-lr)
""",
            unsafe=True,
        ),
        FixExample(
            before="""
import torch as T

@T.no_grad()
def update_ema(ema, model, decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):
        ema_p.lerp_(p, 1 - decay)
""",
            after="""
import torch as T

@T.no_grad()
def update_ema(ema, model, decay):
    param_pairs = list(zip(ema.parameters(), model.parameters()))
    T._foreach_lerp_([ema_p for ema_p, p in param_pairs], [p for ema_p, p in param_pairs], 1 - decay)
""",
            unsafe=True,
        ),
        FixExample(
            before="""
def scale_down(model, factor):
    for p in model.parameters():
        p.data.mul_(factor)
""",
            after="""
import torch

def scale_down(model, factor):
    torch._foreach_mul_([p.data for p in model.parameters()], factor)
""",
            unsafe=True,
        ),
        # no fix where the rewrite would lose something: a comment, or the loop variable a
        # closure reads after the loop
        FixExample(
            before="""
def sgd(model, lr):
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)  # plain SGD
""",
            after="""
def sgd(model, lr):
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)  # plain SGD
""",
            unsafe=True,
        ),
        FixExample(
            before="""
def sgd(model, lr):
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)
    return lambda: p.shape
""",
            after="""
def sgd(model, lr):
    for p in model.parameters():
        p.add_(p.grad, alpha=-lr)
    return lambda: p.shape
""",
            unsafe=True,
        ),
    ]
