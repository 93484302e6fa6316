"""PTL401 print-in-compiled: `print` / `logging` / `warnings.warn` in code torch.compile traces."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.compiled import WHERE_TRACED_DOC, is_traced, may_be_traced
from ptlint.semantics.where import LOG_METHODS

LOGGER_FACTORIES = {"getLogger", "get_logger"}  # logging.getLogger; transformers/diffusers get_logger
WARN_FUNCTIONS = {"warnings.warn", "warnings.warn_explicit"}


def _is_logger(node: ast.AST, ctx) -> bool:
    """`logging.getLogger(...)` itself, or a name assigned one (in the function or the module)."""
    if isinstance(node, ast.Call):
        func = node.func
        last = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return ctx.qualname(func) == "logging.getLogger" or last in LOGGER_FACTORIES
    if isinstance(node, ast.Name):
        values = ctx.assignments(node.id) or ctx.assignments(node.id, ctx.tree)
        return bool(values) and all(isinstance(v, ast.Call) and _is_logger(v, ctx) for v in values)
    return False


def logging_call(node: ast.Call, ctx) -> str | None:
    """What the call is, in words, when it prints, logs or warns."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "print" and not ctx.names.is_local("print"):
        return "`print()`"
    qual = ctx.qualname(func)
    if qual in WARN_FUNCTIONS:
        return f"`{qual}()`"
    if qual is not None and qual.startswith("logging.") and qual.rsplit(".", 1)[1] in LOG_METHODS:
        return f"`{qual}()`"
    if isinstance(func, ast.Attribute) and func.attr in LOG_METHODS and qual is None and _is_logger(func.value, ctx):
        return f"`logger.{func.attr}()`"
    return None


class PrintInCompiled(Rule):
    code = "PTL401"
    needs_compile = True
    name = "print-in-compiled"
    message = "{what} in code that torch.compile traces breaks the graph here"
    help = ("Move the print or log call out of the compiled code (log what it returns instead), or guard it with "
            "`if not torch.compiler.is_compiling():`.")
    cold = False  # not on the error path: a break there costs nothing
    triggers = ("print", "logging", "logger", "warn")

    def visit_Call(self, node: ast.Call) -> None:
        if not self.ctx.functions or not may_be_traced(self.ctx):
            return
        what = logging_call(node, self.ctx)
        if what is not None and is_traced(self.ctx, node):
            self.report(node, self.message.format(what=what))

    docs = """
## What it does
Finds `print()`, `logging.*()`, logger methods (`logger.info(...)` where
`logger = logging.getLogger(...)` or a library's `get_logger(...)`) and `warnings.warn()` in code
that `torch.compile` traces.

## Why is this bad?
TorchDynamo cannot put a Python side effect such as printing into an FX graph. With default
settings (torch 2.13) each of these calls is a graph break: Dynamo compiles the code before it
as one graph, runs the call in Python, and starts a new graph after it. A break inside `forward`
splits the model, stops cross-op fusion at that point and adds guard and Python overhead on
every call; `fullgraph=True` turns it into an error. Probes under torch 2.13: `print`,
`logging.info`, `logger.info` / `logger.debug` / `logger.warning`, and `warnings.warn` each
produce one graph break (Dynamo: "logging.Logger methods are not supported",
"does not know how to trace builtin operator `print`").

Code under `if not torch.compiler.is_compiling():` (or transformers' `is_torchdynamo_compiling()`)
does not run under Dynamo. A branch that only warns or logs (and perhaps resets a setting), such
as `if unused_kwargs: logger.warning(...)`, or one that ends in `raise`, runs on misuse or a
deprecated argument, not on every step, so its break costs nothing in a working program.

## Where it reports
""" + WHERE_TRACED_DOC + """
## Example
```python
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        print("block input", x.shape)
        return self.proj(x)


model = torch.compile(Block(64))
```

## Use instead
```python
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        if not torch.compiler.is_compiling():
            print("block input", x.shape)
        return self.proj(x)


model = torch.compile(Block(64))
```
Or log outside the model, or list the function in
`torch._dynamo.config.reorderable_logging_functions` so Dynamo moves it after the graph.

## Fix safety
No automatic fix: whether the message is still wanted is the author's call.

## References
- https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
- https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html
"""

    bad_examples = [
        """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, x):
        print("in", x.shape)  # expect: PTL401
        return x * 2
""",
        """
import logging
import warnings
import torch

logger = logging.getLogger(__name__)

class Head(torch.nn.Module):
    def forward(self, x, mask=None):
        logger.info("head input %s", x.shape)  # expect: PTL401
        logging.debug("head")  # expect: PTL401
        if mask is not None:
            x = x * mask
            warnings.warn("masking is slow")  # expect: PTL401
        return x
""",
        # a base class in the same file makes the subclass a module
        """
from torch.nn import Module

class Base(Module):
    pass

class Net(Base):
    def forward(self, x):
        def inner(y):
            print(y)  # expect: PTL401
            return y
        return inner(x)
""",
        # decorated, and passed to torch.compile after the definition
        """
import torch

@torch.compile(mode="max-autotune")
def step(x):
    print("step")  # expect: PTL401
    return x + 1

def loss_fn(x):
    print("loss")  # expect: PTL401
    return x.mean()

compiled_loss = torch.compile(loss_fn)
""",
    ]

    good_examples = [
        # cold: a branch that only warns (and resets a setting) runs on misuse, not per step
        """
import torch.nn as nn
from ptlint.utils import logging

logger = logging.get_logger(__name__)

class Attention(nn.Module):
    def forward(self, hidden_states, use_cache=False):
        if use_cache and self.training:
            logger.warning_once("use_cache is not supported when training")
            use_cache = False
        if hidden_states.dim() != 3:
            print(hidden_states.shape)
            raise ValueError("expected (batch, seq, dim)")
        return hidden_states
""",
        # outside any traced code: training loops, __init__, helpers
        """
import logging
import torch
from torch import nn

logger = logging.getLogger(__name__)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        print("building")
        logger.info("built")

    def extra_repr(self):
        print("repr")
        return ""

def train(model, loader):
    for x in loader:
        print(model(x))
""",
        # a forward in a class that is not an nn.Module
        """
import torch

class Runner:
    def forward(self, x):
        print(x)
        return x

class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        print("autograd function")
        return x
""",
        # guarded so that it never runs under Dynamo
        """
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        if not torch.compiler.is_compiling():
            print("eager only")
        if torch.jit.is_scripting():
            print("scripted")
        return x
""",
        # a local print / logger that are not the builtin or a logging logger
        """
import torch.nn as nn

class Net(nn.Module):
    def forward(self, x, print=None):
        print(x)
        return x

class Other(nn.Module):
    def forward(self, x):
        logger = self.recorder
        logger.info(x)
        return x
""",
        # a disabled function is not traced
        """
import torch

class Net(torch.nn.Module):
    @torch.compiler.disable
    def forward(self, x):
        print("not traced")
        return x
""",
    ]
