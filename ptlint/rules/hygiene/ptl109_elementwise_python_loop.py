"""PTL109 elementwise-python-loop: a Python loop over a tensor's rows doing what one vectorised op would."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.nodes import dotted
from ptlint.semantics.values import (
    NUMPY_MODULES,
    STRONG,
    comes_from_module,
    tensor_kind,
)

# Elementwise functions of torch (and torch.nn.functional) and tensor methods: applying them row by
# row gives what applying them once to the whole tensor gives.
ELEMENTWISE = {
    "abs", "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
    "sinh", "cosh", "asin", "acos", "atan", "atan2", "sigmoid", "relu", "gelu", "silu", "elu", "leaky_relu",
    "softplus", "clamp", "clip", "clamp_min", "clamp_max", "pow", "square", "neg", "reciprocal", "sign", "floor",
    "ceil", "round", "trunc", "frac", "maximum", "minimum", "where", "mul", "add", "sub", "div", "true_divide",
    "lerp", "addcmul", "addcdiv", "erf", "erfc", "logit", "hypot", "fmod", "remainder", "nan_to_num", "float",
    "double", "half", "bfloat16",
}


def _indexed_by(node: ast.Subscript, index: str) -> bool:
    """`x[i]`, `x[i, :]`, `x[i, 0]`: row `i` of `x`, nothing computed from `i`."""
    key = node.slice
    if isinstance(key, ast.Tuple) and key.elts:
        rest = key.elts[1:]
        if not all(isinstance(e, ast.Constant) or (isinstance(e, ast.Slice) and e.lower is None and e.upper is None
                                                   and e.step is None) for e in rest):
            return False
        key = key.elts[0]
    return isinstance(key, ast.Name) and key.id == index


class ElementwisePythonLoop(Rule):
    code = "PTL109"
    name = "elementwise-python-loop"
    message = "this loop runs `{tensor}` through elementwise arithmetic one row at a time: one kernel launch " \
              "per row where a single vectorised expression would do"
    help = ("Replace the loop with one expression on whole tensors (`out = a * x + b`), broadcasting instead of "
            "indexing rows with `x[i]`.")
    default = False
    cold = False
    triggers = ("range(",)

    def visit_For(self, node: ast.For) -> None:
        if node.orelse or not isinstance(node.target, ast.Name) or not self.ctx.imports_torch():
            return
        tensor = self._leading_dimension(node.iter)
        if tensor is None:
            return
        index = node.target.id
        if comes_from_module(tensor, self.ctx, NUMPY_MODULES):
            return
        if self._by_length(node.iter) and tensor_kind(tensor, self.ctx) != STRONG:
            return  # `len(xs)` of a list of tensors of different shapes cannot be vectorised
        stored = False
        temporaries: set[str] = set()
        assigned = {t.id for s in node.body if isinstance(s, ast.Assign) for t in s.targets if isinstance(t, ast.Name)}
        for statement in node.body:
            if isinstance(statement, (ast.Assign, ast.AugAssign)):
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                if len(targets) != 1:
                    return
                target = targets[0]
                if not self._elementwise(statement.value, index, temporaries):
                    return
                read = {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}
                if read & (assigned - temporaries):
                    return  # a value carried over from the previous row: a recurrence
                if isinstance(target, ast.Subscript) and _indexed_by(target, index) \
                        and isinstance(target.value, (ast.Name, ast.Attribute)):
                    stored = True
                elif isinstance(target, ast.Name) and target.id != index and isinstance(statement, ast.Assign):
                    temporaries.add(target.id)
                else:
                    return
            elif isinstance(statement, ast.Pass) or (isinstance(statement, ast.Expr)
                                                     and isinstance(statement.value, ast.Constant)):
                continue
            else:
                return
        if not stored or not self._reads_row(node.body, dotted(tensor), index):
            return
        self.report(node, self.message.format(tensor=dotted(tensor)), end_node=node.iter)

    @staticmethod
    def _by_length(iterable: ast.Call) -> bool:
        bound = iterable.args[-1]
        return isinstance(bound, ast.Call) and isinstance(bound.func, ast.Name) and bound.func.id == "len"

    @staticmethod
    def _leading_dimension(iterable: ast.AST) -> ast.AST | None:
        """`range(x.shape[0])`, `range(x.size(0))`, `range(len(x))`, `range(0, len(x))` -> `x`."""
        if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
                and not iterable.keywords and 1 <= len(iterable.args) <= 2):
            return None
        if len(iterable.args) == 2 and not (isinstance(iterable.args[0], ast.Constant) and iterable.args[0].value == 0):
            return None
        bound = iterable.args[-1]
        tensor = None
        if isinstance(bound, ast.Call) and isinstance(bound.func, ast.Name) and bound.func.id == "len" \
                and len(bound.args) == 1:
            tensor = bound.args[0]
        elif isinstance(bound, ast.Subscript) and isinstance(bound.value, ast.Attribute) \
                and bound.value.attr == "shape" and isinstance(bound.slice, ast.Constant) and bound.slice.value == 0:
            tensor = bound.value.value
        elif isinstance(bound, ast.Call) and isinstance(bound.func, ast.Attribute) and bound.func.attr == "size" \
                and len(bound.args) == 1 and isinstance(bound.args[0], ast.Constant) and bound.args[0].value == 0:
            tensor = bound.func.value
        return tensor if tensor is not None and dotted(tensor) is not None else None

    def _elementwise(self, node: ast.AST, index: str, temporaries: set[str]) -> bool:
        """Only arithmetic, comparisons, constants, names, rows `y[i]` and elementwise functions."""
        if isinstance(node, ast.Constant):
            return isinstance(node.value, (int, float, bool))
        if isinstance(node, ast.Name):
            return node.id != index
        if isinstance(node, ast.Attribute):
            return dotted(node) is not None and node.attr != "shape"
        if isinstance(node, ast.Subscript):
            return _indexed_by(node, index) and dotted(node.value) is not None
        if isinstance(node, ast.BinOp):
            return not isinstance(node.op, ast.MatMult) and self._elementwise(node.left, index, temporaries) \
                and self._elementwise(node.right, index, temporaries)
        if isinstance(node, ast.UnaryOp):
            return self._elementwise(node.operand, index, temporaries)
        if isinstance(node, ast.Compare):
            return all(self._elementwise(n, index, temporaries) for n in (node.left, *node.comparators))
        if isinstance(node, ast.Call):
            func = node.func
            qual = self.ctx.qualname(func)
            if qual is not None:
                module, _, name = qual.rpartition(".")
                if module not in ("torch", "torch.nn.functional", "torch.special") or name not in ELEMENTWISE:
                    return False
                arguments = node.args
            elif isinstance(func, ast.Attribute) and func.attr in ELEMENTWISE:
                if not self._elementwise(func.value, index, temporaries):
                    return False
                arguments = node.args
            else:
                return False
            return all(self._elementwise(a, index, temporaries) for a in arguments) \
                and all(isinstance(k.value, ast.Constant) for k in node.keywords)
        return False

    @staticmethod
    def _reads_row(body: list[ast.stmt], tensor: str | None, index: str) -> bool:
        return any(isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load) and dotted(n.value) == tensor
                   and _indexed_by(n, index) for statement in body for n in ast.walk(statement))

    docs = """
## What it does
Finds a Python `for` loop over a tensor's leading dimension — `for i in range(x.shape[0])`,
`range(x.size(0))`, `range(len(x))` — whose body only does elementwise arithmetic on rows
(`x[i]`, `y[i]`, elementwise torch functions and methods, scalars) and stores the result row
by row (`out[i] = ...`). Reported at the `for`. Off by default.

## Why is this bad?
Every statement of the body launches at least one kernel per row. For a tensor of a thousand
rows that is thousands of tiny launches, each costing microseconds of Python and driver time,
where one vectorised expression on the whole tensor launches a handful and runs at the
device's bandwidth. On the GPU the loop is often a hundred times slower.

Not reported: a body that does anything else (a call of a function that is not elementwise, a
reduction, a matrix product, a branch, a read of another row such as `x[i - 1]`, a
recurrence `h = f(h, x[i])`); a loop with `else:` or without an `out[i] = ...` store; a NumPy
array; a module that never imports torch.

Why off by default: the rewrite is usually easy but not always obviously equivalent
(broadcasting of per-row scalars, in-place aliasing of `out` and `x`), the loops are often
over a handful of rows where the cost does not matter, and nothing in the file says how many
rows there are.

## Where it reports
- **Reports** wherever the loop is: per step, in once-code, and in a function whose callers the
  file does not show (the usual place: a helper that transforms a batch); how often it runs is
  not in sight, so it is reported at each loop it finds.
- **Silent** on error paths (an `except` body, a branch that raises, or only warns or logs) and
  in test code.

## Example
```python
import torch


def gate(x, bias, scale):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = torch.sigmoid(x[i]) * scale + bias[i]
    return out
```

## Use instead
```python
import torch


def gate(x, bias, scale):
    return torch.sigmoid(x) * scale + bias
```

## Fix safety
No automatic fix: the vectorised form needs the shapes of the row operands (`bias[i]` must
broadcast along the leading dimension), which the source does not show.

## References
- https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html
"""

    bad_examples = [
        """
import torch

def scale_rows(x, scale, bias):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):  # expect: PTL109
        out[i] = torch.sigmoid(x[i]) * scale + bias[i]
    return out
""",
        """
import torch as T
import torch.nn.functional as F

def gate(x, y):
    z = T.tanh(x)
    out = T.zeros_like(x)
    for i in range(len(z)):  # expect: PTL109
        h = F.relu(z[i]) + y[i].clamp(min=0)
        out[i] += h * 2
    for j in range(0, x.size(0)):  # expect: PTL109
        out[j] = x[j].exp() - 1
    return out
""",
    ]

    good_examples = [
        # reductions, matrix products, other rows, recurrences, branches, calls
        """
import torch

def f(x, w, model):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i].sum()
    for i in range(x.shape[0]):
        out[i] = x[i] @ w
    for i in range(1, x.shape[0]):
        out[i] = x[i] - x[i - 1]
    h = x[0]
    for i in range(x.shape[0]):
        h = torch.tanh(h + x[i])
        out[i] = h
    for i in range(len(x)):
        if x[i].any():
            out[i] = x[i]
    for i in range(len(x)):
        out[i] = model(x[i])
    return out
""",
        # NumPy arrays, a module without torch
        """
import numpy as np
import torch

def g(n):
    a = np.zeros((n, 3))
    out = np.empty_like(a)
    for i in range(a.shape[0]):
        out[i] = np.exp(a[i])
""",
        """
def h(x, out):
    for i in range(len(x)):
        out[i] = x[i] * 2
""",
        # a list of tensors of different shapes
        """
import torch

def mix(features, w):
    for i in range(len(features)):
        features[i] = w * features[i]
""",
    ]
