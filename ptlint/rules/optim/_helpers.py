"""What the optimizer rules PTL501/PTL502 share: recognising a loop over parameters, and
building its `torch._foreach_*` replacement. Not a rule module.

The replacement keeps behaviour in the states a training program is really in:
- the list it builds may be empty (no gradients yet, every parameter frozen, a model with no
  parameters): `torch._foreach_*` raises on an empty list, so the calls sit under `if <list>:`;
- the loop's iterable is iterated once, into a list, as the loop did (a generator stays valid);
- mixed dtypes and sparse gradients: the foreach functions fall back to one kernel per tensor
  where they cannot fuse, with the same results;
- the loop variable is not read after the loop (a comprehension does not leave it bound);
- no comment in the loop (it would be lost), no `else:`, no statement it cannot translate.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from ptlint.engine.rule import FixInput
from ptlint.semantics.nodes import COMPREHENSIONS, body_nodes

# Names that clearly hold a list of parameters when nothing else tells us what they are.
PARAM_LIST_NAMES = {"params", "parameters", "param_list", "params_list", "parameter_list", "model_params",
                    "model_parameters", "trainable_params", "params_with_grad"}
# A name whose last word is `params` / `parameters` (`target_params`, `ema_parameters`), optionally
# numbered (`params_a`, `params2`), for lists a function receives. Not `hparams`, `param_groups`,
# `params_before` or `parameter_names`: in the corpus those hold settings, groups, copies or names.
# Not other attributes, unless their class binds them only to device copies of parameters
# (`_held_parameter_copies`): the corpus' `self.ema_params` / `self.shadow_params` held host copies
# updated every few hundred steps, or an EMA with its own foreach path.
PARAM_LIST_NAME = re.compile(r"_*(?:[a-z0-9]+_)*(?:params|parameters)(?:_?[a-z0-9])?", re.IGNORECASE)
# Calls that pass an iterable of parameters through unchanged (element for element).
PASS_THROUGH = {"list", "tuple", "filter", "reversed", "sorted"}

__all__ = ["param_names", "param_mapping", "mapping_keys", "tensor_kind", "in_place_base", "fixable_loop", "unguarded_body", "may_repeat",
           "ForeachWriter", "Unsupported", "body_nodes", "MODEL_CODE", "MODEL_STATES", "model_inputs", "pair_inputs"]


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
        if isinstance(func, ast.Attribute) and func.attr in ("items", "values") and not iterable.args \
                and param_mapping(func.value, ctx, depth + 1):
            # `ema.state_dict().items()`, `OrderedDict(model.named_parameters()).values()`
            if func.attr == "items":
                return _second_name(target)
            return {target.id} if isinstance(target, ast.Name) else set()
        if isinstance(func, ast.Name) and func.id in PASS_THROUGH and iterable.args:
            source = iterable.args[1] if func.id == "filter" and len(iterable.args) == 2 else iterable.args[0]
            return param_names(source, target, ctx, depth + 1)
        if isinstance(func, ast.Name) and func.id == "enumerate" and iterable.args \
                and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            return param_names(iterable.args[0], target.elts[1], ctx, depth + 1)
        if isinstance(func, ast.Name) and func.id == "zip" \
                and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(iterable.args):
            # `strict=True` changes only what happens when the lengths differ: the pairs are the same
            found: set[str] = set()
            for arg, element in zip(iterable.args, target.elts):
                found |= param_names(arg, element, ctx, depth + 1)
            return found
        return set()
    if isinstance(iterable, ast.Subscript) and _is_params_key(iterable.slice):  # group["params"]
        return {target.id} if isinstance(target, ast.Name) else set()
    if isinstance(iterable, ast.Attribute) and (iterable.attr in PARAM_LIST_NAMES  # self.params
                                                or _held_parameter_copies(iterable, ctx, depth)):
        return {target.id} if isinstance(target, ast.Name) else set()
    if isinstance(iterable, ast.Name):
        if iterable.id in PARAM_LIST_NAMES:
            return {target.id} if isinstance(target, ast.Name) else set()
        values = ctx.assignments(iterable.id)
        # a name the function assigns is what it was assigned; one it does not (an argument:
        # `polyak_update(params, target_params, tau)`) is what its name says
        if (all(_is_param_list(v, ctx, depth + 1) for v in values) if values else names_parameters(iterable.id)):
            return {target.id} if isinstance(target, ast.Name) else set()
    return set()


# Calls that build a mapping from an iterable of (name, tensor) pairs.
MAPPING_BUILDERS = {"dict", "OrderedDict", "collections.OrderedDict"}


def param_mapping(value: ast.AST, ctx, depth: int = 0) -> bool:
    """A mapping from names to a model's parameters (or its state): `model.state_dict()`,
    `dict(model.named_parameters())`, `OrderedDict(model.named_parameters())`, `{n: p for n, p
    in model.named_parameters()}`, or a name the function assigned only such a mapping."""
    if depth > 4:
        return False
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Attribute) and func.attr == "state_dict" and not value.args:
            return True
        builder = ctx.qualname(func) or (func.id if isinstance(func, ast.Name) and not ctx.names.is_local(func.id)
                                         else None)
        return builder in MAPPING_BUILDERS and len(value.args) == 1 and not value.keywords \
            and isinstance(value.args[0], ast.Call) and isinstance(value.args[0].func, ast.Attribute) \
            and value.args[0].func.attr == "named_parameters"
    if isinstance(value, ast.DictComp) and len(value.generators) == 1 and isinstance(value.value, ast.Name):
        generator = value.generators[0]
        return value.value.id in param_names(generator.iter, generator.target, ctx, depth + 1)
    if isinstance(value, ast.Name):
        values = ctx.assignments(value.id)
        return bool(values) and all(param_mapping(v, ctx, depth + 1) for v in values)
    return False


def mapping_keys(iterable: ast.AST, target: ast.AST, ctx) -> set[str]:
    """The names in a `for` target bound to the keys of a mapping of parameters (`param_mapping`):
    `k` in `for k in par.keys()`, `for k in par`, `for k, v in ema.state_dict().items()`; what
    `other[k]` then names is the parameter of that name in another such mapping."""
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and not iterable.args \
            and iterable.func.attr in ("keys", "items") and param_mapping(iterable.func.value, ctx):
        if iterable.func.attr == "keys":
            return {target.id} if isinstance(target, ast.Name) else set()
        if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2 and isinstance(target.elts[0], ast.Name):
            return {target.elts[0].id}
        return set()
    if isinstance(iterable, ast.Name) and isinstance(target, ast.Name) and param_mapping(iterable, ctx):
        return {target.id}
    return set()


def names_parameters(name: str) -> bool:
    """Whether a name says it holds parameters: `params`, `target_params`, `params_a`."""
    return name in PARAM_LIST_NAMES or PARAM_LIST_NAME.fullmatch(name) is not None


def may_repeat(iterable: ast.AST, ctx, depth: int = 0) -> bool:
    """Whether the loop may meet one tensor twice. `parameters()` / `named_parameters()` never
    repeat one (and a list a function builds from them, or a zip of those, keeps that);
    `group["params"]` is torch.optim's own list, which warns on a repeat. A list the function
    receives (an argument, a global) or reads from an attribute is whatever its caller made."""
    if depth > 4:
        return True
    if isinstance(iterable, ast.Call):
        func = iterable.func
        if isinstance(func, ast.Attribute) and func.attr in ("parameters", "named_parameters"):
            return any(k.arg in ("remove_duplicate", None) for k in iterable.keywords)
        if isinstance(func, ast.Name) and func.id in PASS_THROUGH | {"enumerate", "zip"} and iterable.args:
            sources = iterable.args if func.id == "zip" else \
                iterable.args[1:2] if func.id == "filter" and len(iterable.args) == 2 else iterable.args[:1]
            return any(may_repeat(source, ctx, depth + 1) for source in sources)
        return True
    if isinstance(iterable, ast.Subscript) and _is_params_key(iterable.slice):
        return False
    if isinstance(iterable, ast.ListComp) and len(iterable.generators) == 1:
        return may_repeat(iterable.generators[0].iter, ctx, depth + 1)
    if isinstance(iterable, ast.Name):
        values = ctx.assignments(iterable.id)
        return not values or any(may_repeat(v, ctx, depth + 1) for v in values)
    return True


# What an element of a copy of parameters may go through on the device: `p.clone().detach()`,
# `p.data.clone()`, `s.to(device)`, `p.detach().float()`.
COPY_STEPS = {"clone", "detach", "to", "float", "contiguous", "data"}


def _held_parameter_copies(attribute: ast.Attribute, ctx, depth: int) -> bool:
    """`self.shadow_params` where every binding of it in its class is a list of device copies of
    parameters: `[p.clone().detach() for p in parameters if p.requires_grad]`, also `[s.to(device)
    for s in self.shadow_params]` (an EMA's shadow copies, updated after each optimizer step), or
    restored from its own entry of a state dict. Not a copy moved to the host (`.cpu()`,
    `.to("cpu")`)."""
    if not (isinstance(attribute.value, ast.Name) and attribute.value.id == "self"):
        return False
    owner = ctx.method_owner(attribute)
    if owner is None:
        return False
    values = _self_bindings(owner, ctx).get(attribute.attr, [])
    return bool(values) and all(_parameter_copies(v, attribute.attr, ctx, depth) for v in values)


def _self_bindings(cls: ast.ClassDef, ctx) -> dict[str, list[ast.AST]]:
    """attribute -> the values `self.attribute = ...` binds anywhere in the class (once per class)."""
    key = ("self-bindings", id(cls))
    if key not in ctx.memo:
        found: dict[str, list[ast.AST]] = {}
        for node in ctx.assigns():  # (the file's assignments, indexed once: those inside the class)
            if cls.lineno <= node.lineno <= cls.end_lineno:
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self":
                        found.setdefault(target.attr, []).append(node.value)
        ctx.memo[key] = found
    return ctx.memo[key]


def _parameter_copies(value: ast.AST, attribute: str, ctx, depth: int) -> bool:
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and value.slice.value == attribute:
        return True  # restored from its own state dict (`state_dict["shadow_params"]`)
    if not (isinstance(value, ast.ListComp) and len(value.generators) == 1
            and isinstance(value.generators[0].target, ast.Name)):
        return False
    generator = value.generators[0]
    element = value.elt
    while not isinstance(element, ast.Name):
        if isinstance(element, ast.Call) and isinstance(element.func, ast.Attribute) \
                and element.func.attr in COPY_STEPS and not any(
                    isinstance(a, ast.Constant) and a.value == "cpu" for a in (*element.args, *(
                        k.value for k in element.keywords))):
            element = element.func.value
        elif isinstance(element, ast.Attribute) and element.attr == "data":
            element = element.value
        else:
            return False
    if element.id != generator.target.id:
        return False
    source = generator.iter
    if isinstance(source, ast.Attribute) and isinstance(source.value, ast.Name) and source.value.id == "self" \
            and source.attr == attribute:
        return True
    return bool(param_names(source, generator.target, ctx, depth + 1))


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


# -- what the replacement may change --------------------------------------------------------------

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


def unguarded_body(loop: ast.For) -> tuple[list[ast.stmt], set[str]]:
    """The loop's statements inside an optional `if p.grad is not None:` (without `else`) or
    after a leading `if p.grad is None: continue`, and the names so guarded."""
    body = list(loop.body)
    first = body[0]
    if len(body) == 1 and isinstance(first, ast.If) and not first.orelse \
            and (name := _grad_none_test(first.test, ast.IsNot)):
        return list(first.body), {name}
    if len(body) >= 2 and isinstance(first, ast.If) and not first.orelse and len(first.body) == 1 \
            and isinstance(first.body[0], ast.Continue) and (name := _grad_none_test(first.test, ast.Is)):
        return body[1:], {name}
    return body, set()


def fixable_loop(loop: ast.For, ctx) -> bool:
    """A loop the fixes may replace: a plain `for` (not async, no `else`), no comment on its
    lines (the rewrite would drop it), and no code after it reading the loop variable."""
    return isinstance(loop, ast.For) and not loop.orelse \
        and not ctx.edits.line_has_comment(loop.lineno, loop.end_lineno) and not target_used_after(loop, ctx)


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
        if isinstance(node, COMPREHENSIONS):
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


# -- building the replacement ---------------------------------------------------------------------

class Unsupported(Exception):
    """A loop body the fix cannot translate exactly."""


class TensorList(NamedTuple):
    """A list of per-parameter tensors, e.g. `p.grad` over the loop's parameters."""

    expression: str  # the per-parameter expression, as the loop spells it


class Call(NamedTuple):
    """One `torch._foreach_*` call: its qualified name and arguments (lists, nested calls or the
    source of a loop-invariant scalar)."""

    function: str
    args: list


class ForeachWriter:
    """Translates per-parameter statements into `torch._foreach_*` calls over lists, and renders
    the replacement of the whole loop.

    The loop's iterable is read once into a list of the elements the lists are built from; the
    calls then run under `if <that list>:`, since foreach functions refuse an empty list."""

    def __init__(self, loop: ast.For, ctx: object, guarded: set[str]) -> None:
        self.loop = loop
        self.ctx = ctx  # the FileContext: source segments, the module's spelling of torch
        self.guarded = guarded  # parameter names the loop already skips when their gradient is None
        self.calls: list[Call] = []
        self.lists: list[TensorList] = []
        self.grad_names: set[str] = set()  # parameters whose gradient the body reads
        self.owners: set[str] = set(guarded)  # the loop names the lists are built from
        self.loop_names = target_names(loop.target)

    # -- the body's pieces --------------------------------------------------------------------
    def tensor(self, node: ast.AST, names: set[str]) -> TensorList:
        kind = tensor_kind(node, names)
        if kind is None:
            raise Unsupported
        self.owners.add(kind[1])
        if any(isinstance(n, ast.Attribute) and n.attr == "grad" for n in ast.walk(node)):
            self.grad_names.add(kind[1])
        expression = self.ctx.edits.expression(node)
        for existing in self.lists:
            if existing.expression == expression:
                return existing
        self.lists.append(TensorList(expression))
        return self.lists[-1]

    def scalar(self, node: ast.AST) -> str:
        if not loop_invariant(node, self.loop_names):
            raise Unsupported
        return self.ctx.edits.argument(node)  # it goes where an argument goes

    def add(self, function: str, *args) -> None:
        self.calls.append(Call(function, list(args)))

    # -- the replacement ----------------------------------------------------------------------
    def fix_edits(self) -> tuple | None:
        """The edits replacing the loop: (edit of the loop, import edits...); None when `torch`
        cannot be named there."""
        edits = self.ctx.edits
        target = edits.text(self.loop.target)
        iterable = edits.expression(self.loop.iter)
        condition = " and ".join(f"{n}.grad is not None" for n in sorted(self.grad_names | self.guarded))
        single = isinstance(self.loop.target, ast.Name) or len(self.owners) == 1
        element = next(iter(sorted(self.owners))) if single else f"({target})"
        elements = fresh_name(edits.source.text, "params_with_grad" if condition else "param_list" if single
                              else "param_pairs")
        if condition or (single and element != target):
            read = f"[{element} for {target} in {iterable}" + (f" if {condition}]" if condition else "]")
        else:
            read = f"list({iterable})"
        inner = element if single else target
        spelled: dict[str, str] = {}
        imports: list = []
        for call in self.calls:
            for function in _functions(call):
                if function not in spelled:
                    found = edits.reference(function, at=self.loop)
                    if found is None:
                        return None
                    spelled[function], needed = found
                    imports.extend(needed)

        def render(argument) -> str:
            if isinstance(argument, TensorList):
                if argument.expression == element:
                    return elements
                return f"[{argument.expression} for {inner} in {elements}]"
            if isinstance(argument, Call):
                return f"{spelled[argument.function]}({', '.join(render(a) for a in argument.args)})"
            return argument  # a scalar's source, or `alpha=...`

        indent = edits.indentation(self.loop)
        body_indent = edits.indentation(self.loop.body[0]) if self.loop.body[0].lineno != self.loop.lineno else ""
        unit = body_indent[len(indent):] if body_indent.startswith(indent) and len(body_indent) > len(indent) \
            else "    "
        newline = edits.newline
        lines = [f"{elements} = {read}", f"{indent}if {elements}:"]
        lines += [f"{indent}{unit}{render(call)}" for call in self.calls]
        return (edits.replace(self.loop, newline.join(lines)), *imports)


def _functions(call: Call):
    yield call.function
    for argument in call.args:
        if isinstance(argument, Call):
            yield from _functions(argument)


def fresh_name(text: str, base: str) -> str:
    """`base`, or `base_2`, ...: a name the file does not use yet."""
    name, index = base, 1
    while re.search(rf"\b{name}\b", text):
        index += 1
        name = f"{base}_{index}"
    return name


# -- the states the fixes run in, side by side (FixInput code, ptlint.engine.rule) ----------------

# A model with an embedding (sparse gradients when asked), two linear layers and a parameter that
# forward never uses (its gradient stays None), and a backward pass through it.
MODEL_CODE = '''import torch


class Net(torch.nn.Module):
    def __init__(self, sparse=False):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4, sparse=sparse)
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
        self.unused = torch.nn.Parameter(torch.randn(3))

    def forward(self, ids):
        return self.body(self.embed(ids).mean(1))


def backward(model, **options):
    model(torch.tensor([[1, 2, 3], [4, 5, 6]])).square().mean().backward(**options)


def half_and_bfloat16(model):
    model.body[0].half()
    model.body[2].bfloat16()

    def forward(ids):
        h = model.embed(ids).mean(1)
        return model.body[2](model.body[1](model.body[0](h.half()).float()).bfloat16()).float()

    model.forward = forward
'''

# The states a training program's model is in when an update or zeroing loop runs; each binds
# `model` and asserts what it claims.
MODEL_STATES = {
    "gradients": "model = Net()\nbackward(model)\nassert model.unused.grad is None and model.body[0].bias.grad is not None\n",
    "no gradients yet": "model = Net()\nassert all(p.grad is None for p in model.parameters())\n",
    "frozen parameters": "model = Net()\nmodel.body[0].requires_grad_(False)\nbackward(model)\n"
                         "assert model.body[0].weight.grad is None and model.body[2].weight.grad is not None\n",
    "no parameters": "model = torch.nn.ReLU()\nassert list(model.parameters()) == []\n",
    "float32, float16 and bfloat16 parameters": "model = Net()\nhalf_and_bfloat16(model)\nbackward(model)\n"
                                                "assert {p.dtype for p in model.parameters()} == "
                                                "{torch.float32, torch.float16, torch.bfloat16}\n",
    "sparse gradients": "model = Net(sparse=True)\nbackward(model)\nassert model.embed.weight.grad.is_sparse\n",
    "gradients that require grad": "model = Net()\nbackward(model, create_graph=True)\n"
                                   "assert model.body[0].weight.grad.requires_grad\n",
}

# On the CPU, `_foreach_mul_` of a float16 or bfloat16 tensor by a Python number may round the last
# bit differently from `mul_` (torch 2.13): one unit in the last place, relative.
LAST_BIT = {"float16": 2 ** -10, "bfloat16": 2 ** -7}


def model_inputs(call: str, *, skips_missing_grads: bool = True, scalar_multiply: bool = False,
                 states: dict[str, str] = MODEL_STATES):
    """FixInputs running `call` (`"step(model, 0.1)"`) on a model in each state; the result is
    the model (parameters and gradients). `skips_missing_grads=False`: the loop reads `p.grad`
    without testing it, so it raises on a parameter without one, where the fix skips it — the
    difference the unsafe fix's page names, and nothing else may differ. `scalar_multiply`: the
    half-precision parameters may round their last bit differently (LAST_BIT)."""
    out = []
    for name, state in states.items():
        tolerance = LAST_BIT if scalar_multiply and "float16" in name else 0.0
        check = None
        if not skips_missing_grads:
            check = ("after_error is None if before_error in ('TypeError', 'AttributeError') else "
                     f"after_error == before_error and same(before, after, {tolerance!r})")
        out.append(FixInput(name, f"{MODEL_CODE}\n{state}{call}\nresult = model\n", tolerance, check))
    return tuple(out)


# Two models, an online one (`source`) and the average or target network updated from it (`target`),
# in the states an EMA or a Polyak update meets; `untouched` is what they held before the update.
PAIR_STATES = {
    "two models": "",
    "no parameters": "source, target = torch.nn.ReLU(), torch.nn.ReLU()\n",
    "float32, float16 and bfloat16 parameters": "half_and_bfloat16(source)\nhalf_and_bfloat16(target)\n",
    "a float16 average of a float32 model": "target.half()\n",
    "frozen parameters": "source.body[0].requires_grad_(False)\ntarget.body[0].requires_grad_(False)\n",
    "a layer shared by both": "target.body[0] = source.body[0]\n",
    "a longer target": "target.head = torch.nn.Linear(3, 2)\n",
    "a target with another parameter first": "target.extra = torch.nn.Parameter(torch.randn(2))\n",
}


def pair_inputs(call: str, *, strict: bool = False, multiplies: bool = False):
    """FixInputs running `call` (`"update(source, target, weight)"`) in each pair state, with a
    weight whose product with a float16 value is exact (0.5) and one that rounds (0.37); the
    result is both models. `strict`: the loop zips with `strict=True`, so where the target is
    longer the fix (which reads the lists first) raises before updating anything, where the
    loop updated the pairs before the shorter list ended — the difference its page names.
    `multiplies`: `mul_` by a Python number, which may round the last bit of half-precision
    values differently (LAST_BIT, relative to the values' scale)."""
    out = []
    for name, state in PAIR_STATES.items():
        for weight in (0.5, 0.37):
            code = (f"{MODEL_CODE}\nsource, target = Net(), Net()\n{state}"
                    "untouched = [p.detach().clone() for p in [*source.parameters(), *target.parameters()]]\n"
                    f"weight = {weight}\n{call}\nresult = (source, target)\n")
            tolerance = LAST_BIT if multiplies and weight != 0.5 else 0.0
            check = None
            if strict and name in ("a longer target", "a target with another parameter first"):
                check = (f"before_error == {'ValueError' if name == 'a longer target' else 'RuntimeError'!r} "
                         "and after_error == 'ValueError' and all(torch.equal(p, q) for p, q in "
                         "zip([*source.parameters(), *target.parameters()], untouched))")
            elif name == "two models":
                check = (f"before_error is None and same(before, after, {tolerance!r}) and not all("
                         "torch.equal(p, q) for p, q in zip([*source.parameters(), *target.parameters()], untouched))")
            out.append(FixInput(f"{name}, weight {weight}", code, tolerance, check))
    return tuple(out)
