"""PTL404 dynamic-shape-op: ops whose output shape depends on tensor data, in traced code."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.compiled import WHERE_TRACED_DOC, is_traced, may_be_traced
from ptlint.semantics.values import not_a_tensor

# torch functions and tensor methods whose output size depends on the input's values
DYNAMIC_FUNCTIONS = {"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select", "bincount"}
DYNAMIC_METHODS = {"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select"}
BOOL_FUNCTIONS = {"isnan", "isinf", "isfinite", "isneginf", "isposinf", "isin", "isclose", "logical_not",
                  "logical_and", "logical_or", "logical_xor", "eq", "ne", "gt", "ge", "lt", "le", "greater",
                  "less", "greater_equal", "less_equal", "not_equal"}
BOOL_METHODS = BOOL_FUNCTIONS | {"bool"}
NOT_VALUE_COMPARISONS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def is_boolean_mask(node: ast.AST, ctx, depth: int = 0) -> bool:
    """Visibly a boolean tensor: a comparison, `.bool()`, `torch.isnan(...)`, `~m`, `a & b`, or a
    local name assigned only such values. A name alone (`mask`) says nothing about its dtype."""
    if depth > 4:
        return False
    if isinstance(node, ast.Compare):
        return not any(isinstance(op, NOT_VALUE_COMPARISONS) for op in node.ops) and len(node.ops) == 1
    if isinstance(node, ast.Call):
        func = node.func
        qual = ctx.qualname(func)
        if qual is not None:
            return qual.startswith("torch.") and qual.rsplit(".", 1)[1] in BOOL_FUNCTIONS
        if isinstance(func, ast.Attribute):
            if func.attr in BOOL_METHODS and not node.keywords:
                return True
            if func.attr == "to" and node.args and ctx.qualname(node.args[0]) == "torch.bool":
                return True
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return is_boolean_mask(node.operand, ctx, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return is_boolean_mask(node.left, ctx, depth + 1) or is_boolean_mask(node.right, ctx, depth + 1)
    if isinstance(node, ast.Name):
        values = ctx.assignments(node.id)
        return bool(values) and all(
            not isinstance(v, ast.AugAssign) and is_boolean_mask(v, ctx, depth + 1) for v in values)
    return False


class DynamicShapeOp(Rule):
    code = "PTL404"
    needs_compile = True
    name = "dynamic-shape-op"
    message = "{what} in code that torch.compile traces has a data-dependent output shape: a graph break"
    help = ("Keep shapes static: masked arithmetic, `torch.where(cond, a, b)` or `masked_fill` instead of "
            "`nonzero` or boolean indexing.")
    default = False  # its usual remedy is a redesign (see the page): select it where compiling matters
    cold = False  # not on the error path: a break there costs nothing
    triggers = ("nonzero", "argwhere", "unique", "masked_select", "bincount", "where", "[")

    def visit_Call(self, node: ast.Call) -> None:
        if not self.ctx.functions or not may_be_traced(self.ctx):
            return
        func = node.func
        qual = self.ctx.qualname(func)
        what = None
        if qual is not None:
            module, _, name = qual.rpartition(".")
            if module == "torch" and name in DYNAMIC_FUNCTIONS:
                what = f"`{qual}()`"
            elif qual == "torch.where" and len(node.args) + len(node.keywords) == 1 \
                    and not isinstance(node.args[0] if node.args else None, ast.Starred):
                what = "`torch.where(condition)` with one argument"
        elif isinstance(func, ast.Attribute) and func.attr in DYNAMIC_METHODS \
                and not not_a_tensor(func.value, self.ctx):
            what = f"`.{func.attr}()`"
        if what is not None and is_traced(self.ctx, node):
            self.report(node, self.message.format(what=what))

    def visit_Subscript(self, node: ast.Subscript) -> None:
        # reads only: `x[mask] = 0` (index_put) traces fine, `x[mask] += 1` reads first
        if not self.ctx.functions or not isinstance(node.ctx, ast.Load) and not self._augmented(node) \
                or not may_be_traced(self.ctx):
            return
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not any(is_boolean_mask(part, self.ctx) for part in parts):
            return
        if not_a_tensor(node.value, self.ctx) or not is_traced(self.ctx, node):
            return
        self.report(node, self.message.format(what="boolean-mask indexing"))

    def _augmented(self, node: ast.Subscript) -> bool:
        parent = self.ctx.parent(node)
        return isinstance(parent, ast.AugAssign) and parent.target is node

    docs = """
## What it does
Finds operations whose output shape depends on the values in a tensor — `nonzero`, `argwhere`,
`unique`, `unique_consecutive`, `masked_select`, `bincount`, `torch.where(condition)` with one
argument, and indexing with a visibly boolean mask (`x[x > 0]`, `x[m.bool()]`,
`x[torch.isfinite(x)]`, or a local assigned only such masks) — in code that `torch.compile`
traces.

## Why is this bad?
Dynamo needs every output shape while tracing. With default settings (torch 2.13,
`capture_dynamic_output_shape_ops=False`) an op whose output size depends on data is a graph
break ("Operator `aten.nonzero.default`'s output shape depends on input Tensor data", gb0036):
the graph ends, the op runs eagerly and a new graph starts. Probes under torch 2.13 confirmed a
break for each op listed above and for a boolean-mask read, including `x[m] += 1`.

Not reported, because they compile without a break in 2.13: boolean-mask assignment
`x[mask] = 0`, `torch.where(cond, a, b)` with three arguments, `masked_fill`, indexing with an
integer index tensor, and `torch.nonzero_static(x, size=n)`. A mask known only by its name
(`x[mask]` where `mask` is an argument) may hold indices rather than booleans and is not reported.

Off by default: in model code most of these ops are there on purpose — a mixture-of-experts
dispatch (`expert_mask.nonzero()`, `torch.where(expert_mask[i])`) in the eager fallback behind a
grouped-matmul default, a variable number of keypoints or detections that *is* the output, a
masked loss over variable-length sequences — and their only remedy is a redesign (a static-size
formulation, padding, `nonzero_static`). Select it (`--select PTL404`) in a model you compile
with `fullgraph=True`, where every break matters; `ptlint explain` shows the ones that really
happen.

## Where it reports
""" + WHERE_TRACED_DOC + """
## Example
```python
import torch
from torch import nn


class Pool(nn.Module):
    def forward(self, x, scores):
        keep = scores > 0.5
        return x[keep].mean(0)


model = torch.compile(Pool())
```

## Use instead
```python
import torch
from torch import nn


class Pool(nn.Module):
    def forward(self, x, scores):
        keep = (scores > 0.5).unsqueeze(-1)
        return (x * keep).sum(0) / keep.sum(0).clamp(min=1)


model = torch.compile(Pool())
```
Masked arithmetic, `torch.where(cond, a, b)`, `masked_fill` and `nonzero_static` keep shapes
static. Setting `torch._dynamo.config.capture_dynamic_output_shape_ops = True` lets Dynamo trace
these ops with unbacked sizes.

## Fix safety
No automatic fix: the static-shape form changes what the code computes downstream.

## References
- https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
- https://docs.pytorch.org/docs/stable/generated/torch.nonzero_static.html
"""

    bad_examples = [
        """
import torch
from torch import nn

class Pool(nn.Module):
    def forward(self, x, scores):
        keep = scores > 0.5
        idx = torch.nonzero(keep)  # expect: PTL404
        labels = scores.unique()  # expect: PTL404
        picked = torch.masked_select(x, keep)  # expect: PTL404
        rows = torch.where(keep)  # expect: PTL404
        return x[keep], idx, labels, picked, rows  # expect: PTL404
""",
        """
import torch

def clean(x):
    finite = torch.isfinite(x)
    x[~finite] += 1  # expect: PTL404
    small = x[x.abs() > 1e-3]  # expect: PTL404
    return small, x[:, finite.any(0).bool()]  # expect: PTL404

clean_fast = torch.compile(clean, fullgraph=False)
""",
    ]

    good_examples = [
        # static-shape alternatives
        """
import torch
from torch import nn

class Pool(nn.Module):
    def forward(self, x, scores, index):
        keep = scores > 0.5
        x[keep] = 0
        y = torch.where(keep, x, torch.zeros_like(x))
        z = x.masked_fill(~keep, 0.0)
        w = x[index] + x[0] + x[:, 1:]
        return y, z, w, torch.nonzero_static(keep, size=4)
""",
        # a mask known only by name, NumPy arrays, and code outside traced functions
        """
import numpy as np
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x, mask):
        table = np.arange(10)
        return x[mask], table[table > 3], np.unique(table)

def postprocess(boxes, scores):
    keep = scores > 0.5
    return boxes[keep], torch.nonzero(keep)
""",
    ]
