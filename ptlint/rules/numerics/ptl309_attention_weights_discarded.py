"""PTL309 attention-weights-discarded: `nn.MultiheadAttention` asked for weights nobody reads."""

from __future__ import annotations

import ast

from ptlint.engine.rule import CALLED, PER_STEP
from ptlint.rules.numerics._helpers import NumericsRule
from ptlint.semantics.nodes import FUNCTION_DEFS, SELF_NAMES

MULTIHEAD_ATTENTION = {"torch.nn.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention"}
MODULE_LISTS = {"torch.nn.ModuleList", "torch.nn.modules.container.ModuleList"}
MOVES = {"to", "cuda", "float", "half", "bfloat16", "double", "train", "eval"}  # they return the module
NEED_WEIGHTS_POSITION = 4  # query, key, value, key_padding_mask, need_weights


class AttentionWeightsDiscarded(NumericsRule):  # (the attention family reports in test code too, as PTL308)
    code = "PTL309"
    name = "attention-weights-discarded"
    message = "`{call}` computes attention weights that are thrown away: with `need_weights=True` (the default) " \
              "`nn.MultiheadAttention` writes softmax(QKᵀ) out in full instead of calling the fused " \
              "`scaled_dot_product_attention`; pass `need_weights=False`"
    help = "Pass `need_weights=False`: the module then runs `F.scaled_dot_product_attention` and returns `None` " \
           "for the weights."
    contexts = frozenset({PER_STEP, CALLED})
    triggers = ("MultiheadAttention",)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Subscript):  # `self.attentions[i](x, x, x)`: one of a ModuleList
            func = func.value
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in SELF_NAMES:
            owner = self.ctx.method_owner(node)
            if owner is None or func.attr not in self._attributes(owner):
                return
        elif isinstance(func, ast.Name):
            if func.id not in self._names():
                return
        else:
            return
        if len(node.args) > NEED_WEIGHTS_POSITION or any(k.arg in ("need_weights", None) for k in node.keywords):
            return  # the caller decides (a `**kwargs` may hold it)
        if self._weights_dropped(node):
            self.report(node, self.message.format(call=f"{ast.unparse(node.func)}(...)"))

    def _attributes(self, owner: ast.ClassDef) -> set[str]:
        """`self.<name> = nn.MultiheadAttention(...)` in the class's methods."""
        key = ("ptl309-attributes", id(owner))
        found = self.ctx.memo.get(key)
        if found is None:
            found = self.ctx.memo[key] = {
                target.attr for node in ast.walk(owner) if isinstance(node, ast.Assign) and self._built(node.value)
                for target in node.targets if isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name) and target.value.id in SELF_NAMES}
        return found

    def _names(self) -> set[str]:
        """Names the file binds to `nn.MultiheadAttention(...)` (and to nothing else)."""
        key = "ptl309-names"
        found = self.ctx.memo.get(key)
        if found is None:
            built: set[str] = set()
            other: set[str] = set()
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            (built if self._built(node.value) else other).add(target.id)
            found = self.ctx.memo[key] = built - other
        return found

    def _built(self, value: ast.AST) -> bool:
        """`nn.MultiheadAttention(...)`, also moved or cast (`.cuda()`, `.to(device)`, `.half()`), or
        a `nn.ModuleList` of nothing else (`[nn.MultiheadAttention(c, 4) for _ in range(n)]`)."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MOVES:
            value = value.func.value
        if not isinstance(value, ast.Call):
            return False
        qual = self.ctx.qualname(value.func)
        if qual in MODULE_LISTS and len(value.args) == 1:
            items = value.args[0]
            items = [items.elt] if isinstance(items, ast.ListComp) else getattr(items, "elts", None) or [None]
            return all(self._built(item) for item in items)
        return qual in MULTIHEAD_ATTENTION

    def _weights_dropped(self, call: ast.Call) -> bool:
        """`out, _ = mha(q, k, v)`, `out = mha(q, k, v)[0]`, or `out, w = ...` with `w` never read."""
        parent = self.ctx.parent(call)
        if isinstance(parent, ast.Subscript) and parent.value is call:
            return isinstance(parent.slice, ast.Constant) and parent.slice.value == 0
        if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1):
            return False
        target = parent.targets[0]
        if not (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
                and isinstance(target.elts[1], ast.Name)):
            return False
        weights = target.elts[1].id
        if weights == "_":
            return True
        scope = self.ctx.enclosing_function(call) or self.ctx.tree
        body = scope.body if isinstance(scope, (*FUNCTION_DEFS, ast.Module)) else []
        return not any(isinstance(n, ast.Name) and n.id == weights and isinstance(n.ctx, ast.Load)
                       for statement in body for n in ast.walk(statement))

    docs = """
## What it does
Finds a call of an `nn.MultiheadAttention` module (held on `self`, also one of an
`nn.ModuleList` of them, or bound to a name in the file, any import spelling) whose attention
weights, its second result, nobody reads (`out, _ = self.mha(x, x, x)`, `self.mha(x, x, x)[0]`,
a name never read), with `need_weights` left at its default, `True`.

## Why is this bad?
`nn.MultiheadAttention` returns the attention weights only if asked, and `need_weights=True`
is the default. To return them it computes attention by hand: `bmm(q, kᵀ)`, a softmax and
`bmm(weights, v)`, writing the whole (batch × heads × L × L) matrix to memory and averaging it
over the heads, and it keeps that matrix for backward. With `need_weights=False` the module
calls `F.scaled_dot_product_attention`, which on a GPU runs a fused (Flash or memory-efficient)
kernel that never writes the matrix out (on the CPU, a flash kernel too): at L = 4,096 tokens
that is gigabytes of activations per layer and batch saved, and the time to write and read them.

## Where it reports
- **Reports** in code that runs every step (a module's `forward`) and in functions whose callers
  the file does not show; in test code too, as the other attention rule (PTL308) does.
- **Silent** in once-code and code that runs once per epoch, where the weights are read (returned,
  stored, plotted), where the call passes `need_weights` itself (or `**kwargs` that may hold it),
  and for a name the file also binds to something else.

## Example
```python
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.mha = nn.MultiheadAttention(channels, 4, batch_first=True)

    def forward(self, x):
        attention_value, _ = self.mha(x, x, x)
        return attention_value + x
```

## Use instead
```python
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.mha = nn.MultiheadAttention(channels, 4, batch_first=True)

    def forward(self, x):
        attention_value, _ = self.mha(x, x, x, need_weights=False)
        return attention_value + x
```

## Fix safety
No automatic fix yet. Adding `need_weights=False` keeps what the code uses, up to rounding:
the fused kernel sums in another order, and with dropout it draws other masks.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.MultiheadAttention.html (`need_weights`)
- https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html
"""

    bad_examples = [
        """
import torch
from torch import nn
from torch.nn import MultiheadAttention as MHA


class SelfAttention(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.mha = nn.MultiheadAttention(channels, 4, batch_first=True)
        self.cross = MHA(channels, 4)
        self.third = torch.nn.MultiheadAttention(channels, 4)
        self.blocks = nn.ModuleList([nn.MultiheadAttention(channels, 4, batch_first=True) for _ in range(3)])
        self.mixed = nn.ModuleList([nn.MultiheadAttention(channels, 4), nn.Linear(channels, channels)])

    def forward(self, x, memory):
        for i in range(3):
            x, _ = self.blocks[i](x, x, x)  # expect: PTL309
        y, _ = self.mixed[0](x, x, x)
        attention_value, _ = self.mha(x, x, x)  # expect: PTL309
        y = self.cross(x, memory, memory, key_padding_mask=None)[0]  # expect: PTL309
        z, weights = self.third(y, y, y)  # expect: PTL309
        return attention_value + y + z.cuda()
""",
        # a name bound to the module, called in a training loop
        """
import torch

attention = torch.nn.MultiheadAttention(64, 8).cuda()
for x in loader:
    out, _ = attention(x.cuda(), x.cuda(), x.cuda())  # expect: PTL309
    out.sum().backward()
""",
    ]

    good_examples = [
        # once: a script that runs the module a single time
        """
import torch

attention = torch.nn.MultiheadAttention(64, 8).cuda()
x = torch.randn(16, 2, 64, device="cuda")
out, _ = attention(x, x, x)
print(out.shape)
""",
        # weights asked for and read, turned off, passed on by the caller; another class's module
        """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels, need):
        super().__init__()
        self.mha = nn.MultiheadAttention(channels, 4)
        self.need = need
        self.proj = nn.Linear(channels, channels)

    def forward(self, x, **kwargs):
        a, _ = self.mha(x, x, x, need_weights=False)
        b, w = self.mha(x, x, x)
        self.last_weights = w
        c, _ = self.mha(x, x, x, None, self.need)
        d = self.mha(x, x, x, **kwargs)[0]
        e, _ = self.proj(x), None
        self.last_weights = self.mha(x, x, x)[1]
        return (a + b + c + d + e).cuda()


class Other(nn.Module):
    def forward(self, x):
        out, _ = self.mha(x, x, x)
        return out


def visualise(block, x):
    out, weights = block.mha(x, x, x)
    return weights
""",
        # a name bound to something else as well
        """
import torch

attention = torch.nn.MultiheadAttention(64, 8).cuda()
attention = wrap(attention)
for x in loader:
    out, _ = attention(x.cuda(), x.cuda(), x.cuda())
    out.sum().backward()
""",
    ]
