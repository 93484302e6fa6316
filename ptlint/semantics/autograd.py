"""What the autograd rules PTL103 and PTL107 share: is autograd recording here, which calls run
a model, which compute a loss. Not a rule module.

Gradients are visibly *not* recorded at a node when:
- a `with torch.no_grad():` / `torch.inference_mode()` / `torch.set_grad_enabled(False)` block
  (any import spelling, also `torch.autograd.no_grad`) encloses it in its function; also
  `torch.set_grad_enabled(is_train)` with a flag, which is off in the evaluation mode it selects;
- one of its enclosing functions is decorated with `@torch.no_grad()` / `@torch.inference_mode()`
  (called or bare), or with a project's own wrapper named so (`@smart_inference_mode()`);
- its function is called in this module, and every call site is itself in such a region (the
  caller already disables gradients), a few callers deep;
- the function or the module switches recording off before it: `torch.set_grad_enabled(False)`
  as a statement;
- it is a framework hook that Lightning runs under `no_grad` (`validation_step`, `test_step`,
  `predict_step`, and the `on_validation_*` / `on_test_*` / `on_predict_*` hooks).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ptlint.semantics.calls import CallSites
from ptlint.semantics.nodes import (
    COMPREHENSIONS,
    DEFINITIONS,
    FUNCTION_DEFS,
    STATEMENT_LOOPS,
    body_nodes,
    callee_name,
    dotted,
    is_constant,
)
from ptlint.semantics.values import (
    MODEL_WORDS,
    TRAINING_CALLS,
    is_module_call,
    module_class,
)

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

NO_GRAD = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
           "torch.autograd.inference_mode", "torch.autograd.grad_mode.inference_mode"}
SET_GRAD = {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"}
NO_GRAD_HOOKS = {"validation_step", "test_step", "predict_step"}
NO_GRAD_HOOK_PREFIXES = ("on_validation_", "on_test_", "on_predict_")
# A name starting with one of these makes, loads or handles a model; calling it runs none.
MODEL_VERBS = {"build", "create", "make", "load", "get", "init", "initialize", "setup", "set", "save", "prepare",
               "wrap", "unwrap", "compile", "to", "from", "register", "configure", "freeze", "unfreeze", "update",
               "reset", "copy", "clone", "export", "convert", "instantiate", "new", "print", "log", "summarize"}
# torch.nn.functional losses whose names do not end in `_loss`.
FUNCTIONAL_LOSSES = {"cross_entropy", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
                     "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "ctc_loss",
                     "poisson_nll_loss", "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss",
                     "hinge_embedding_loss", "multilabel_margin_loss", "soft_margin_loss",
                     "multilabel_soft_margin_loss", "multi_margin_loss", "triplet_margin_loss",
                     "triplet_margin_with_distance_loss"}
LOSS_CALLEES = {"criterion", "crit", "loss_fn", "loss_func", "loss_function", "lossfn", "loss_fcn", "compute_loss",
                "loss_module", "objective"}


def disables_grad(expr: ast.AST, ctx: "FileFacts") -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(False)`, or the bare
    decorators `@torch.no_grad` / `@torch.inference_mode`."""
    call = expr if isinstance(expr, ast.Call) else None
    qual = ctx.qualname(call.func if call else expr)
    if qual is None or not qual.startswith("torch."):
        # a project's own wrapper: ultralytics' `@smart_inference_mode()`, `maybe_no_grad()`, `@nograd`
        name = dotted(call.func if call else expr) or ""
        last = name.rsplit(".", 1)[-1].lower().replace("_", "")
        if "nograd" in last or "inferencemode" in last:
            qual = "torch.no_grad"
    if qual in NO_GRAD:
        # inference_mode(False) / no_grad has no argument; inference_mode(mode=False) re-enables
        mode = call.args[0] if call and call.args else next((k.value for k in call.keywords if k.arg == "mode"),
                                                             None) if call else None
        return not is_constant(mode, False)
    if qual in SET_GRAD and call is not None and call.args:
        # `set_grad_enabled(is_train)`: the code switches recording by a flag; in its
        # evaluation mode it is off, so it counts as off (only a literal True keeps it on)
        return not is_constant(call.args[0], True)
    return False


def _switches_off(statement: ast.AST, ctx: "FileFacts") -> bool:
    """`torch.set_grad_enabled(False)` as a statement of its own."""
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
        and ctx.qualname(statement.value.func) in SET_GRAD and disables_grad(statement.value, ctx)


class GradRegions:
    """Answers "are gradients visibly off at this node?" for any node of the file, after or during
    the traversal (it uses the file's parent links, not the traversal stack)."""

    def __init__(self, ctx: "FileFacts") -> None:
        self.ctx = ctx
        self._function_off: dict[int, bool] = {}
        self._module_off = any(_switches_off(s, ctx) for s in ctx.tree.body)

    @classmethod
    def of(cls, ctx: "FileFacts") -> "GradRegions":
        key = "grad-regions"
        if key not in ctx.memo:
            ctx.memo[key] = cls(ctx)
        return ctx.memo[key]

    def off(self, node: ast.AST, depth: int = 0) -> bool:
        """Gradients are visibly not recorded where `node` runs."""
        if self._module_off:
            return True
        child, parent = node, self.ctx.parent(node)
        while parent is not None:
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(child is s for s in parent.body) \
                    and any(disables_grad(item.context_expr, self.ctx) for item in parent.items):
                return True
            if isinstance(parent, FUNCTION_DEFS):
                if self._function_is_off(parent, child, depth):
                    return True
            child, parent = parent, self.ctx.parent(parent)
        return False

    def _function_is_off(self, function: ast.AST, child: ast.AST, depth: int) -> bool:
        if any(disables_grad(d, self.ctx) for d in function.decorator_list):
            return True
        if function.name in NO_GRAD_HOOKS or function.name.startswith(NO_GRAD_HOOK_PREFIXES):
            return True
        # `torch.set_grad_enabled(False)` earlier in the function body
        for statement in function.body:
            if statement is child or getattr(statement, "lineno", 0) > getattr(child, "lineno", 0):
                break
            if _switches_off(statement, self.ctx):
                return True
        key = id(function)
        if key not in self._function_off:
            self._function_off[key] = False  # recursion: assume on while deciding
            sites = self._call_sites(function)
            self._function_off[key] = bool(sites) and depth < 4 and all(self.off(site, depth + 1) for site in sites)
        return self._function_off[key]

    def _call_sites(self, function: ast.AST) -> list[ast.Call]:
        """Calls of `function` in this module: by name for a plain function, `self.name(...)` for
        a method."""
        sites = CallSites.of(self.ctx).named(function.name, method=self.ctx.owner_class(function) is not None)
        return [site for site in sites if not _inside(site, function, self.ctx)]


GRAD_FUNCTIONS = {"torch.autograd.grad", "torch.autograd.backward", "torch.autograd.functional.jacobian",
                  "torch.autograd.functional.vjp", "torch.func.grad", "torch.func.vjp"}
OPTIMIZER_WORDS = ("optim", "opt", "scaler")  # in the name of a receiver whose `.step()` steps an optimizer


def is_optimizer_step(call: ast.AST) -> bool:
    """`opt.step()`, `self.optimizer.step()`, `scaler.step(opt)`: an optimizer's (or gradient
    scaler's) step, by the receiver's name."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step" \
        and any(word in (dotted(call.func.value) or "").lower() for word in OPTIMIZER_WORDS)


def gradient_users(scope: ast.AST, ctx: "FileFacts") -> list[ast.AST]:
    """Nodes of a function (or the module) that want the autograd graph: `.backward()`,
    `zero_grad()`, an optimizer's `step()`, `torch.autograd.grad`, `requires_grad_()`,
    `p.requires_grad = True`."""
    key = ("gradient-users", id(scope))
    if key not in ctx.memo:
        found = []
        for node in body_nodes(statements_of(scope), stop_at=DEFINITIONS):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr == "requires_grad_":
                    if not (node.args and is_constant(node.args[0], False)):
                        found.append(node)
                elif isinstance(func, ast.Attribute) and func.attr in TRAINING_CALLS or is_optimizer_step(node):
                    found.append(node)
                elif ctx.qualname(func) in GRAD_FUNCTIONS:
                    found.append(node)
            elif isinstance(node, ast.Assign) and not is_constant(node.value, False) and any(
                    isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets):
                found.append(node)
        ctx.memo[key] = found
    return ctx.memo[key]


def graph_wanted(loop: ast.AST, ctx: "FileFacts") -> bool:
    """Something in the loop, or in the function around it outside a loop of its own, wants the
    graph (see `gradient_users`). A sibling loop that trains — the training half of an epoch,
    before its validation loop — says nothing about this one."""
    scope = ctx.function or ctx.tree
    for node in gradient_users(scope, ctx):
        parent = ctx.parent(node)
        sibling = False
        while parent is not None and parent is not scope:
            if parent is loop:
                return True  # inside this loop
            if isinstance(parent, STATEMENT_LOOPS + COMPREHENSIONS):
                sibling = not any(n is loop for n in ast.walk(parent))
                break
            parent = ctx.parent(parent)
        if not sibling:
            return True
    return False


def statements_of(scope: ast.AST) -> list[ast.AST]:
    """The body of a module or function as a list (a lambda's body is one expression)."""
    body = getattr(scope, "body", [])
    return body if isinstance(body, list) else [body]


def _inside(node: ast.AST, scope: ast.AST, ctx: "FileFacts") -> bool:
    parent = ctx.parent(node)
    while parent is not None:
        if parent is scope:
            return True
        parent = ctx.parent(parent)
    return False


def looks_like_model(func: ast.AST) -> bool:
    """A callee named like a model: `model`, `self.net`, `policy`, `text_encoder`, `resnet` —
    not a function that makes or handles one (`build_model`, `fabric.init_module`)."""
    word = callee_name(func)
    parts = [part for part in word.split("_") if part]
    if not parts or parts[0] in MODEL_VERBS:
        return False
    return word in MODEL_WORDS or parts[-1] in MODEL_WORDS or word.endswith(("model", "net"))


def is_model_call(call: ast.AST, ctx: "FileFacts", models: set[str] = frozenset()) -> bool:
    """Running a model: a call of a module built in this file, of something named like a model,
    or of one of `models` (dotted names the code switched with `.eval()` / `.train()`)."""
    if not isinstance(call, ast.Call) or not isinstance(call.func, (ast.Name, ast.Attribute)):
        return False
    if ctx.qualname(call.func) is not None:
        return False  # an imported function, not a model object
    name = dotted(call.func)
    if name is not None and name in models:
        return True
    if looks_like_model(call.func) or is_module_call(call, ctx):
        return True
    if isinstance(call.func, ast.Name):  # `net = Net().to(device)`, `f = torch.compile(model)`
        values = ctx.assignments(call.func.id)
        return bool(values) and all(model_value(v, ctx) for v in values)
    return False


# Methods that hand back the module they are called on.
MODULE_METHODS = {"to", "cuda", "cpu", "eval", "train", "half", "float", "bfloat16", "double", "requires_grad_",
                  "to_empty"}
MODEL_FACTORIES = ("torch.compile", "timm.create_model", "torchvision.models.", "torch.hub.load")


def model_value(value: ast.AST, ctx: "FileFacts") -> bool:
    """A value that is a model: a module built from an `nn` class (or a local subclass), a
    model factory's result (`torchvision.models.resnet50()`, `timm.create_model(...)`,
    `AutoModel.from_pretrained(...)`, `torch.compile(model)`), through `.to(device)` / `.eval()`."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MODULE_METHODS:
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    if module_class(value, ctx):
        return True
    qual = ctx.qualname(value.func) or ""
    if qual.startswith(MODEL_FACTORIES):
        return True
    return isinstance(value.func, ast.Attribute) and value.func.attr == "from_pretrained"


def is_loss_call(call: ast.AST, ctx: "FileFacts") -> bool:
    """`F.cross_entropy(...)`, `torch.nn.functional.mse_loss(...)`, `criterion(out, y)`,
    `self.loss_fn(...)`, a loss module built here (`ce = nn.CrossEntropyLoss()`; `ce(out, y)`)."""
    if not isinstance(call, ast.Call):
        return False
    qual = ctx.qualname(call.func)
    if qual is not None:
        module, _, name = qual.rpartition(".")
        return module in ("torch.nn.functional", "torch") and (name in FUNCTIONAL_LOSSES or name.endswith("_loss"))
    word = callee_name(call.func)
    if word in LOSS_CALLEES or word.endswith("_loss") or word.startswith("loss_") or word == "loss" \
            or word.endswith("criterion"):
        return True
    if isinstance(call.func, ast.Name):
        values = ctx.assignments(call.func.id)
        return bool(values) and all(isinstance(v, ast.Call) and (ctx.qualname(v.func) or "").endswith("Loss")
                                    for v in values)
    return False
