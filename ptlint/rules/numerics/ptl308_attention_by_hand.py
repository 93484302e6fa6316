"""PTL308 attention-by-hand: `softmax(q @ k.transpose(-2, -1) * scale) @ v` instead of
`F.scaled_dot_product_attention`."""

from __future__ import annotations

import ast

from ptlint.rules.numerics._helpers import (
    NumericsRule,
    Scope,
    built_from,
    module_calls,
    reaching_values,
    scope_here,
    softmax_call,
    softmax_output,
)
from ptlint.semantics.nodes import FUNCTION_DEFS, argument

PRODUCTS = {"torch.matmul", "torch.bmm"}
TRANSPOSES = {"transpose", "permute", "swapaxes", "swapdims", "t"}


# Calls whose result has their operand's shape (`F.normalize(k, dim=-1)`, `k.contiguous()`).
SHAPE_KEEPING = {"normalize", "contiguous", "float", "half", "bfloat16", "to", "type", "dropout", "clone", "detach"}


def _last_two_swap(call: ast.Call) -> bool:
    """`x.transpose(-2, -1)` / `x.transpose(-1, -2)` (also `swapaxes`, `swapdims`)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("transpose", "swapaxes", "swapdims")
            and len(call.args) == 2 and not call.keywords):
        return False
    dims = set()
    for arg in call.args:
        if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub) and isinstance(arg.operand, ast.Constant):
            dims.add(-arg.operand.value)
    return dims == {-1, -2}
# between the softmax and the product: dropout, a dtype cast, a change of layout
AFTER_SOFTMAX = {"to", "type", "type_as", "float", "half", "bfloat16", "double", "view", "reshape", "permute",
                 "transpose", "contiguous", "flatten", "squeeze", "unsqueeze"}
# between the scores and the softmax: masking, a dtype cast, a layout change
BEFORE_SOFTMAX = {"masked_fill", "masked_fill_", "to", "type", "type_as", "float", "half", "bfloat16", "double",
                  "view", "reshape", "contiguous", "squeeze", "unsqueeze", "add", "add_", "mul", "mul_", "div",
                  "div_"}
# Code that also offers a fused kernel: the hand-written path is its fallback (TorchScript, an
# old torch, a backend without the kernel), chosen on purpose.
# Matched in lower case: `self.flash`, `FlashAttention`, `use_sdpa`, `ALL_ATTENTION_FUNCTIONS`.
FUSED_MARKERS = ("scaled_dot_product_attention", "flash", "memory_efficient_attention", "flex_attention",
                 "fused_attn", "attn_implementation", "all_attention_functions", "sdpa", "xformers")
# layout changes that may change the rank of the scores
RESHAPES = {"view", "reshape", "flatten", "squeeze", "unsqueeze"}
# layout changes that move the axes of the probabilities
LAYOUTS = RESHAPES | {"permute", "transpose"}
# reductions that pool tokens into a few (landmarks, a pooled query)
POOLING = {"mean", "amax", "amin", "max", "sum", "logsumexp"}
# reading these does not need the attention matrix itself
HARMLESS_ATTRIBUTES = {"shape", "dtype", "device", "ndim", "size", "dim", "numel", "is_cuda"}


class AttentionByHand(NumericsRule):
    code = "PTL308"
    name = "attention-by-hand"
    message = ("attention written by hand (`softmax(q @ kᵀ) @ v`) materialises the full score matrix; "
               "use `F.scaled_dot_product_attention`")
    help = ("Use `F.scaled_dot_product_attention(q, k, v, attn_mask=..., scale=...)`: fused kernels that never "
            "materialise the score matrix.")
    triggers = ("softmax", "Softmax")  # every form needs one (einsum alone is no attention)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._products: list[tuple] = []

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self._products.append((node, (node.left, node.right), scope_here(self.ctx)))

    def visit_Call(self, node: ast.Call) -> None:
        operands = self._product_operands(node)
        if operands is not None:
            self._products.append((node, operands, scope_here(self.ctx)))

    def _product_operands(self, node: ast.Call) -> tuple | None:
        """The two operands of `torch.matmul(a, b)`, `torch.bmm(a, b)`, `a.matmul(b)`,
        `torch.einsum("...", a, b)`."""
        qualname = self.ctx.qualname(node.func)
        if qualname in PRODUCTS and len(node.args) == 2:
            return tuple(node.args)
        if qualname == "torch.einsum" and len(node.args) == 3 and isinstance(node.args[0], ast.Constant):
            return tuple(node.args[1:])
        if qualname is None and isinstance(node.func, ast.Attribute) and node.func.attr in ("matmul", "bmm") \
                and len(node.args) == 1:
            return node.func.value, node.args[0]
        return None

    def end_file(self) -> None:
        if not self.ctx.imports_torch():
            return
        for node, operands, scope in self._products:
            for position, operand in enumerate(operands):
                names: list[ast.Name] = []
                softmaxes: list[ast.AST] = []
                moved: list[ast.AST] = []  # layout changes between the softmax and the product
                scores = self._probabilities(operand, scope, names, softmaxes, 0, moved)
                if scores is None:
                    continue
                reshaped: list[ast.AST] = []  # changes of rank between the product and the softmax
                product = self._scores(scores, scope, 0, reshaped)
                if product is None:
                    continue
                keys, rank = _score_axes(self.ctx, product)
                if not self._over_keys(softmaxes, keys, rank, bool(reshaped), scope) \
                        or not _attends(node, position, None if moved else keys, self.ctx):
                    continue
                if self._weights_escape(names, node, scope) or self._fused_alternative(scope):
                    break
                self.report(node)
                break

    # -- the chain: product <- (dropout, casts) <- softmax <- (scale, mask, bias) <- q @ kᵀ -------
    def _probabilities(self, node: ast.AST, scope: Scope, names: list, softmaxes: list,
                       depth: int, moved: list) -> ast.AST | None:
        """The scores whose softmax `node` is (after dropout, casts, layout changes); the names
        the probabilities passed through go to `names`, the softmax calls to `softmaxes`, the
        layout changes to `moved`."""
        if depth > 10:
            return None
        ctx = self.ctx
        call = softmax_call(ctx, node)
        if call is not None:
            softmaxes.append(call.node)
            return call.operand
        if softmax_output(ctx, node, scope) is not None and isinstance(node, ast.Call) and node.args:
            softmaxes.append(node)
            return node.args[0]  # an nn.Softmax module
        if isinstance(node, ast.Name):
            values = reaching_values(ctx, node, scope)
            if not values:
                return None
            names.append(node)
            found = [self._probabilities(v, scope, names, softmaxes, depth + 1, moved) for v in values]
            return found[0] if all(f is not None for f in found) else None
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in AFTER_SOFTMAX and ctx.qualname(func) is None:
            if func.attr in LAYOUTS:
                moved.append(node)
            return self._probabilities(func.value, scope, names, softmaxes, depth + 1, moved)
        if node.args and self._is_dropout(node, scope):
            return self._probabilities(node.args[0], scope, names, softmaxes, depth + 1, moved)
        return None

    def _over_keys(self, softmaxes: list[ast.AST], keys: int, rank: int | None, reshaped: bool,
                   scope: Scope) -> bool:
        """Every softmax on the way normalises over the keys, axis `keys` (from the end) of the
        scores: `dim=-1` for `q @ kᵀ`, or the keys' axis of an einsum ("nlhd,nshd->nlsh":
        `dim=2` or `-2`), counted from the start where the scores' `rank` is known (`torch.bmm`:
        3). After a change of rank (`view`, `reshape`), only `dim=-1` over keys kept last. A
        softmax over the queries (`dim=1` of `b i j`, `dim=-2` of `q @ kᵀ`) is not what the fused
        kernel computes, nor is one whose dimension is not visible."""
        for softmax in softmaxes:
            dim = self._softmax_dim(softmax, scope)
            if isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) and isinstance(dim.operand, ast.Constant) \
                    and type(dim.operand.value) is int:
                if -dim.operand.value != keys or (reshaped and keys != -1):
                    return False
            elif not (isinstance(dim, ast.Constant) and type(dim.value) is int and rank is not None
                      and not reshaped and dim.value - rank == keys):
                return False
        return bool(softmaxes)

    def _softmax_dim(self, softmax: ast.Call, scope: Scope) -> ast.AST | None:
        """The `dim` of `F.softmax(x, dim)`, `x.softmax(dim)`, or of the `nn.Softmax(dim)` module
        called (on `self`, in a local)."""
        call = softmax_call(self.ctx, softmax)
        if call is not None:
            return argument(softmax, 0, "dim") if call.method else argument(softmax, 1, "dim")
        modules = built_from(self.ctx, softmax.func, scope) if not isinstance(softmax.func, ast.Call) \
            else [softmax.func]
        dims = [argument(m, 0, "dim") for m in modules or [] if isinstance(m, ast.Call)]
        if not dims or len(dims) != len(modules) or any(d is None for d in dims):
            return None
        first = ast.dump(dims[0])
        return dims[0] if all(ast.dump(d) == first for d in dims) else None

    def _is_dropout(self, call: ast.Call, scope: Scope) -> bool:
        """`F.dropout(p, ...)`, an `nn.Dropout` module, `self.attn_drop(p)` or `dropout(p)` (a
        module built elsewhere or passed in, named for what it does)."""
        ctx = self.ctx
        if (ctx.qualname(call.func) or "").startswith("torch.nn.functional.dropout"):
            return True
        if module_calls(ctx, call, scope, {"torch.nn.Dropout", "torch.nn.Dropout1d", "torch.nn.Dropout2d"}):
            return True
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id == "self" else func.id if isinstance(func, ast.Name) else ""
        return "drop" in name.lower() and ctx.qualname(func) is None and built_from(ctx, func, scope) is None

    def _scores(self, node: ast.AST, scope: Scope, depth: int, reshaped: list | None = None) -> ast.AST | None:
        """The product `q @ kᵀ` that `node` is, scaled, masked, biased or cast (any mix, through
        locals); None if it is not. A change of rank on the way (`view`, `reshape`, ...) is noted
        in `reshaped`."""
        if depth > 12:
            return None
        ctx = self.ctx
        if self._score_product(node, scope):
            return node
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            return self._scores(node.left, scope, depth + 1, reshaped) \
                or self._scores(node.right, scope, depth + 1, reshaped)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            # scores plus a mask or a bias; two score products summed (LiLT's text + layout scores)
            # are not one attention the fused kernel computes
            left = self._scores(node.left, scope, depth + 1, reshaped)
            right = self._scores(node.right, scope, depth + 1, reshaped)
            return None if (left is None) == (right is None) else left or right
        if isinstance(node, ast.Name):
            values = reaching_values(ctx, node, scope)
            found = [self._scores(v, scope, depth + 1, reshaped) for v in values or []]
            return found[0] if found and all(f is not None for f in found) else None
        if isinstance(node, ast.Call):
            func = node.func
            qualname = ctx.qualname(func)
            if isinstance(func, ast.Attribute) and func.attr in BEFORE_SOFTMAX and qualname is None:
                if func.attr in RESHAPES and reshaped is not None:
                    reshaped.append(node)
                return self._scores(func.value, scope, depth + 1, reshaped)
            if qualname == "torch.where" and len(node.args) == 3:
                return self._scores(node.args[1], scope, depth + 1, reshaped) \
                    or self._scores(node.args[2], scope, depth + 1, reshaped)
            if qualname in ("torch.masked_fill", "torch.add", "torch.mul", "torch.div") and node.args:
                return self._scores(node.args[0], scope, depth + 1, reshaped)
            if isinstance(func, ast.Name) and qualname is None and node.args:
                # a helper of this project: add_mask(s, m)
                return self._scores(node.args[0], scope, depth + 1, reshaped)
        return None

    def _score_product(self, node: ast.AST, scope: Scope) -> bool:
        """`q @ k.transpose(-2, -1)`, `torch.matmul(q, k.mT)`, `torch.bmm(q, k.permute(0, 2, 1))`,
        `torch.baddbmm(b, q, kᵀ)`, `torch.einsum("bhid,bhjd->bhij", q, k)`."""
        ctx = self.ctx
        operands = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            operands = node.left, node.right
        elif isinstance(node, ast.Call):
            qualname = ctx.qualname(node.func)
            if qualname in PRODUCTS and len(node.args) == 2:
                operands = node.args[0], node.args[1]
            elif qualname == "torch.baddbmm" and len(node.args) >= 3:
                operands = node.args[1], node.args[2]
            elif qualname is None and isinstance(node.func, ast.Attribute) and node.func.attr in ("matmul", "bmm") \
                    and len(node.args) == 1:
                operands = node.func.value, node.args[0]
            elif qualname == "torch.einsum" and len(node.args) == 3:
                found = _score_einsum(node.args[0])
                if found is None or (found[2] and not self._transposed(node.args[2], scope)):
                    return False
                return not any(self._few_tokens(a, scope, 0) for a in node.args[1:])
        if operands is None or not self._transposed(operands[1], scope):
            return False
        if self._swapped_back(operands[1], scope):
            return False  # cross-covariance attention: a channels × channels matrix, not tokens × tokens
        return not any(self._few_tokens(a, scope, 0) for a in operands)

    def _swapped_back(self, key: ast.AST, scope: Scope) -> bool:
        """`k.transpose(-2, -1)` where `k = k.transpose(-2, -1)` already (XCiT's cross-covariance
        attention, `q` and `k` turned to channels × tokens first): the product sums over tokens."""
        if not (isinstance(key, ast.Call) and _last_two_swap(key) and isinstance(key.func, ast.Attribute)
                and isinstance(key.func.value, ast.Name)):
            return False
        return self._channels_first(key.func.value, scope, 0)

    def _channels_first(self, node: ast.AST, scope: Scope, depth: int) -> bool:
        """`node` was turned to channels × tokens (`k = k.transpose(-2, -1)`), perhaps through
        calls that keep the shape since (`k = F.normalize(k, dim=-1)`, `k.contiguous()`)."""
        if depth > 4:
            return False
        if isinstance(node, ast.Name):
            values = reaching_values(self.ctx, node, scope)
            return bool(values) and all(self._channels_first(v, scope, depth + 1) for v in values)
        if not isinstance(node, ast.Call):
            return False
        if _last_two_swap(node):
            return True
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in SHAPE_KEEPING:
            return False
        if isinstance(func, ast.Attribute) and self.ctx.qualname(func) is None:
            operand = func.value  # `k.contiguous()`
        else:
            operand = node.args[0] if node.args else None  # `F.normalize(k, dim=-1)`
        return operand is not None and self._channels_first(operand, scope, depth + 1)

    def _few_tokens(self, node: ast.AST, scope: Scope, depth: int) -> bool:
        """The queries or keys are a handful of tokens: one token sliced out (`x[:, 0:1]`, class
        attention), or tokens pooled (`.mean(dim=-2)` landmarks, `adaptive_avg_pool`). The score
        matrix is then a thin strip, not the L × L the fused kernel saves."""
        if depth > 16:
            return False
        ctx = self.ctx
        if isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Tuple) and len(index.elts) >= 2 and _full_slice(index.elts[0]) \
                    and _one_position(index.elts[1]):
                return True
            return self._few_tokens(node.value, scope, depth + 1)
        if isinstance(node, ast.Name):
            values = reaching_values(ctx, node, scope)
            return bool(values) and all(self._few_tokens(v, scope, depth + 1) for v in values)
        if isinstance(node, ast.BinOp):
            return self._few_tokens(node.left, scope, depth + 1) or self._few_tokens(node.right, scope, depth + 1)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):  # `torch.cat([pool(f) for f in feats])`
            return self._few_tokens(node.elt, scope, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            return any(self._few_tokens(e, scope, depth + 1) for e in node.elts)
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in POOLING or "pool" in name.lower():
                return True
            parts = [func.value] if isinstance(func, ast.Attribute) else []
            return any(self._few_tokens(p, scope, depth + 1) for p in [*parts, *node.args])
        return False

    def _transposed(self, node: ast.AST, scope: Scope, depth: int = 0) -> bool:
        ctx = self.ctx
        if isinstance(node, ast.Attribute) and node.attr in ("T", "mT", "mH"):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in TRANSPOSES and ctx.qualname(func) is None:
                return True
            if ctx.qualname(func) in ("torch.transpose", "torch.permute", "torch.swapaxes"):
                return True
        if isinstance(node, ast.Name) and depth < 4:
            values = reaching_values(ctx, node, scope)
            return bool(values) and all(self._transposed(v, scope, depth + 1) for v in values)
        return False

    # -- where a fused kernel cannot or does not replace it -------------------------------------
    def _weights_escape(self, names: list[ast.Name], product: ast.AST, scope: Scope) -> bool:
        """The attention probabilities are used besides the product (returned, stored, logged):
        `scaled_dot_product_attention` does not give them."""
        if not names or not scope.functions:
            return False
        function = scope.functions[-1]
        chain = {id(n) for n in names}
        start = min((n.lineno, n.col_offset) for n in names)
        inside_product = {id(n) for n in ast.walk(product)}
        wanted = {n.id for n in names}
        values = [v for n in names for v in (reaching_values(self.ctx, n, scope) or [])]
        in_values = {id(n) for v in values for n in ast.walk(v)}
        for node in ast.walk(function):
            if not (isinstance(node, ast.Name) and node.id in wanted and isinstance(node.ctx, ast.Load)):
                continue
            if id(node) in chain or id(node) in inside_product or id(node) in in_values:
                continue
            if (node.lineno, node.col_offset) < start:
                continue
            parent = self.ctx.parent(node, function)
            if isinstance(parent, ast.Attribute) and parent.attr in HARMLESS_ATTRIBUTES:
                continue
            if self._returned_and_dropped(node, parent, function, scope):
                continue
            return True
        return False

    def _returned_and_dropped(self, name: ast.Name, parent: ast.AST, function: ast.AST, scope: Scope) -> bool:
        """`return out, weights`, where every call of the function in this file drops the
        weights (`out, _ = self.attention(q, k, v)`, `out = attend(q, k, v)[0]`) or keeps them
        only in a branch (`if self.log_weights: self.weights = weights`): the product is all
        the usual path needs. Unknown (no call in the file) counts as needed."""
        returned = self.ctx.parent(parent, function) if isinstance(parent, ast.Tuple) else None
        if not (isinstance(returned, ast.Return) and returned.value is parent):
            return False
        index = next(i for i, element in enumerate(parent.elts) if element is name)
        calls = self._calls_of(function, scope)
        return bool(calls) and all(self._drops(call, index, len(parent.elts)) for call in calls)

    def _calls_of(self, function: ast.AST, scope: Scope) -> list[ast.Call]:
        """The calls of `function` in this file: `self.name(...)` of a method, `name(...)` of a
        function, and for a module's `forward`, calls of the attributes its class is assigned to
        (`self.attention = Attention(...)` ... `self.attention(q, k, v)`)."""
        name, cls = function.name, scope.cls
        if cls is not None and function in cls.body and name == "forward":
            holders = {target.attr for node in ast.walk(self.ctx.tree) if isinstance(node, ast.Assign)
                       and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                       and node.value.func.id == cls.name
                       for target in node.targets if isinstance(target, ast.Attribute)}
            return [call for call in self.ctx.calls() if isinstance(call.func, ast.Attribute)
                    and call.func.attr in holders and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self"]
        if cls is not None and function in cls.body:
            return [call for call in self.ctx.calls() if isinstance(call.func, ast.Attribute)
                    and call.func.attr == name and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "self"]
        return [call for call in self.ctx.calls() if isinstance(call.func, ast.Name) and call.func.id == name]

    def _drops(self, call: ast.Call, index: int, width: int) -> bool:
        """The call's result at `index` of `width` is dropped, or only kept in a branch."""
        parent = self.ctx.parent(call)
        if isinstance(parent, ast.Subscript) and parent.value is call:
            key = parent.slice
            return isinstance(key, ast.Constant) and type(key.value) is int and key.value % width != index
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0], (ast.Tuple, ast.List)) and len(parent.targets[0].elts) == width):
            return False
        target = parent.targets[0].elts[index]
        if not isinstance(target, ast.Name):
            return False
        holder = self.ctx.enclosing_function(call)
        if holder is None:
            return False
        return all(any(isinstance(a, ast.If) and use not in ast.walk(a.test) for a in self._ancestors(use, holder))
                   for use in ast.walk(holder) if isinstance(use, ast.Name) and use.id == target.id
                   and isinstance(use.ctx, ast.Load))

    def _ancestors(self, node: ast.AST, root: ast.AST) -> list[ast.AST]:
        out = []
        node = self.ctx.parent(node, root)
        while node is not None and node is not root:
            out.append(node)
            node = self.ctx.parent(node, root)
        return out

    def _fused_alternative(self, scope: Scope) -> bool:
        """The function, its class, or a function of this file that refers to it, also names a
        fused attention kernel: the code by hand is a fallback."""
        ctx = self.ctx
        holders = [f for f in scope.functions if not isinstance(f, ast.Lambda)]
        texts = [ctx.edits.text(scope.cls).lower()] if scope.cls is not None else []
        texts += [ctx.edits.text(f).lower() for f in holders[:1]]
        if any(marker in text for text in texts for marker in FUSED_MARKERS):
            return True
        if not holders:
            return False
        name = holders[0].name
        return any(node is not holders[0] and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))
                   for node in self._naming_fused_kernels())

    def _naming_fused_kernels(self) -> list[ast.AST]:
        """The functions and classes of this file whose text names a fused attention kernel
        (found once per file: a string search, before any walk)."""
        key = "ptl308-fused-holders"
        if key not in self.ctx.memo:
            source = self.ctx.source.text.lower()
            found = []
            if any(marker in source for marker in FUSED_MARKERS):
                for node in ast.walk(self.ctx.tree):
                    if isinstance(node, (*FUNCTION_DEFS, ast.ClassDef)):
                        text = self.ctx.edits.text(node).lower()
                        if any(marker in text for marker in FUSED_MARKERS):
                            found.append(node)
            self.ctx.memo[key] = found
        return self.ctx.memo[key]

    docs = """
## What it does
Finds scaled dot-product attention written out by hand instead of
`F.scaled_dot_product_attention`. `softmax(q @ k.transpose(-2, -1) * scale) @ v`, in any spelling — `@`, `torch.matmul`, `torch.bmm`, `.matmul()`, `torch.baddbmm`, and
`torch.einsum` with any letters that sum over the features of queries and keys
(`"bhid,bhjd->bhij"`, `"bnqd,bnkd->bnqk"`, `"...id,...jd->...ij"`, channels first
`"bct,bcs->bts"`) then over the keys with the values (`"bhij,bhjd->bhid"`) for the scores;
`F.softmax`, `torch.softmax`, `.softmax(dim)`, an `nn.Softmax` module (`self.softmax`,
`self.attend`) over the keys — with a scale (on the scores or on `q` before), an additive mask
or bias, `masked_fill` or `torch.where` before the softmax, and dropout (`F.dropout`, an
`nn.Dropout` module, `self.attn_drop`) or a dtype cast after it, across statements, branches
(a softmax in both branches of `if mask is not None:`) and local variables (minGPT's `att =
...; att = att.masked_fill(...); att = F.softmax(att, dim=-1); att = self.attn_drop(att); y =
att @ v`). Reported on the line of the final product with `v`.

## Why is this bad?
The hand-written form materialises the whole `L × L` score matrix per head, in memory and in
memory bandwidth, for the scores, the softmax and the dropout mask, and runs four or five kernels.
`F.scaled_dot_product_attention` (torch ≥ 2.0) dispatches to FlashAttention or the memory-efficient
kernel where it can: one kernel, memory linear in `L`, and a softmax computed in float32 blocks, so
long sequences fit and training runs several times faster. It takes the same ingredients:
`attn_mask` (a boolean mask or an additive float bias), `dropout_p`, `is_causal`, `scale`.

Not reported: code whose function or class also calls a fused kernel
(`scaled_dot_product_attention`, FlashAttention, xformers, an `attn_implementation` switch) — the
hand-written path is then a deliberate fallback; attention whose probabilities are used besides
the product (returned, stored, logged: the fused kernel does not give them) — except
probabilities returned beside the product where every call of the function in the file drops
them (`out, _ = self.attention(q, k, v)`, `attend(q, k, v)[0]`, a module's `forward` called
through the attribute it is assigned to) or keeps them only in a branch (`if
self.log_attention_weights: self.weights = weights`, `if return_attention: return attn`): the
usual path needs the product alone, and these are reported; anything between
the softmax and the product other than dropout, a cast or a layout change (re-normalisation,
talking heads), which the fused kernel cannot express; two score products summed under one
softmax (LiLT's text and layout scores); queries or keys that are a handful of tokens — one token
sliced out (`x[:, 0:1]`, class attention) or tokens pooled (`.mean(dim)`, Nyström landmarks,
pooling) — where the score matrix is a thin strip, not `L × L`; cross-covariance attention
(XCiT: `q` and `k` already turned to channels × tokens by `.transpose(-2, -1)`, so `q @
k.transpose(-2, -1)` is channels × channels); scores without a visible transpose of the keys; a softmax over another dimension than the keys (`dim=1` of a `bmm`'s
`b × i × j` scores, `dim=-2`: a normalisation over the queries) or over a dimension the code
does not show (`nn.Softmax()` without `dim`); einsums that are not `q · kᵀ` then `· v` (a sum
over the queries, a projection by a weight shared by the batch, `"bnd,ed->bne"`); linear
attention (no softmax of the scores).

## Where it reports
- **Reports** everywhere the expression is: per step, in once-code, in a function whose callers the
  file does not show, on error paths, and in test code, like every PTL3xx rule (an attention
  layer is set up once and runs every step; the place of the code says little).

## Example
```python
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, block_size, dropout):
        super().__init__()
        self.attn_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, q, k, v):
        T = q.size(-2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        return y
```

## Use instead
```python
import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, dropout):
        super().__init__()
        self.dropout = dropout

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
```

## Fix safety
No fix: the mask has to be expressed as `attn_mask` or `is_causal`, dropout as `dropout_p` (off in
evaluation), and the result differs from the hand-written one by float rounding.

## References
- https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html
- https://pytorch.org/tutorials/intermediate/scaled_dot_product_attention_tutorial.html
"""

    bad_examples = [
        # the weights are returned, but every call in the file drops them or keeps them only
        # when a flag asks: a method of the layer, and a module's forward called through `self`
        """
import math
import torch
from torch import nn

class MultiHeadedAttention(nn.Module):
    def __init__(self, d, log_weights=False):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.log_weights = log_weights
        self.weights = None

    def attention(self, query, key, value, mask):
        scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
        scores.masked_fill_(mask == 0, float("-inf"))
        weights = self.softmax(scores)
        return torch.matmul(weights, value), weights  # expect: PTL308

    def forward(self, q, k, v, mask):
        out, weights = self.attention(q, k, v, mask)
        if self.log_weights:
            self.weights = weights
        return out

class ScaleDotProductAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, q, k, v):
        score = self.softmax((q @ k.transpose(2, 3)) / math.sqrt(k.size(-1)))
        return score @ v, score  # expect: PTL308

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = ScaleDotProductAttention()

    def forward(self, x):
        out, _ = self.attn(x, x, x)
        first = self.attn(x, x, x)[0]
        return out + first
""",
        # another function of the file uses the fused kernel, but nothing routes this one there
        """
import torch
import torch.nn.functional as F

def fast(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)

def slow(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v  # expect: PTL308
""",
        # minGPT: one name reassigned step by step
        """
import math
import torch
import torch.nn as nn
from torch.nn import functional as F

class CausalSelfAttention(nn.Module):
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v  # expect: PTL308
        return self.resid_drop(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))
""",
        # one expression; torch.matmul; a scale divided in
        """
import torch

def attention(q, k, v, scale):
    return torch.matmul(torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / scale, dim=-1), v)  # expect: PTL308
""",
        # einsum both ways, a float upcast
        """
import torch
import torch.nn.functional as F

def attend(q, k, v, mask):
    s = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
    s = s + mask
    p = F.softmax(s.float(), dim=-1).to(q.dtype)
    return torch.einsum("bhij,bhjd->bhid", p, v)  # expect: PTL308
""",
        # bmm with a permuted key, an nn.Softmax module on self, dropout module on self
        """
import torch
from torch import nn

class SelfAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.dropout = nn.Dropout(0.1)

    def forward(self, q, k, v):
        energy = torch.bmm(q, k.permute(0, 2, 1))
        attention = self.dropout(self.softmax(energy))
        return attention.bmm(v)  # expect: PTL308
""",
        # a dropout passed in, a mask applied on one path only
        """
import math
import torch

def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value)  # expect: PTL308
""",
        # a transposed key held in a local; q scaled first
        """
import torch

def attn(q, k, v, scale):
    kt = k.mT
    q = q * scale
    a = (q @ kt).softmax(-1)
    return a @ v  # expect: PTL308
""",
        # einsum with the scale after the scores, the softmax as a method
        """
import torch

def attend(q, k, v, scale):
    attn = torch.einsum("bhid,bhjd->bhij", q, k) * scale
    attn = attn.softmax(dim=-1)
    out = torch.einsum("bhij,bhjd->bhid", attn, v)  # expect: PTL308
    return out
""",
        # `from torch import einsum`, other letters, q scaled before, F.softmax
        """
from torch import einsum
import torch.nn.functional as F

def attend(q, k, v, scale):
    q = q * scale
    sim = einsum("bnqd,bnkd->bnqk", q, k)
    attn = F.softmax(sim, dim=-1)
    return einsum("bnqk,bnkd->bnqd", attn, v)  # expect: PTL308
""",
        # an ellipsis for the batch dimensions, torch.softmax; spaces in the equation, a stable
        # softmax by hand, an nn.Softmax held as `self.attend`
        """
import torch as T
from torch import nn

def attend(q, k, v, scale):
    sim = T.einsum("...id,...jd->...ij", q, k) * scale
    return T.einsum("...ij,...jd->...id", T.softmax(sim, dim=-1), v)  # expect: PTL308

class Attention(nn.Module):
    def __init__(self, dim_head):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.attend = nn.Softmax(dim=-1)

    def forward(self, q, k, v):
        sim = T.einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        sim = sim - sim.amax(dim=-1, keepdim=True).detach()
        attn = self.attend(sim)
        return T.einsum("b h i j, b h j d -> b h i d", attn, v)  # expect: PTL308
""",
        # the keys on another axis than the last (LoFTR), softmax over them by position; queries
        # and keys channels first (a diffusion U-Net)
        """
import torch
import torch.nn.functional as F

def full_attention(queries, keys, values):
    QK = torch.einsum("nlhd,nshd->nlsh", queries, keys)
    A = F.softmax(QK / queries.size(3) ** 0.5, dim=2)
    return torch.einsum("nlsh,nshd->nlhd", A, values)  # expect: PTL308

def qkv_attention(q, k, v):
    weight = torch.einsum("bct,bcs->bts", q, k)
    weight = torch.softmax(weight.float(), dim=-1).type(weight.dtype)
    return torch.einsum("bts,bcs->bct", weight, v)  # expect: PTL308
""",
        # an nn.Softmax module on self, applied to the scaled scores in one call, then dropout
        """
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.scale = (dim // heads) ** -0.5
        self.softmax = nn.Softmax(dim=-1)
        self.attn_drop = nn.Dropout(0.1)

    def forward(self, q, k, v):
        attn = self.softmax(q @ k.transpose(-2, -1) * self.scale)
        attn = self.attn_drop(attn)
        return attn @ v  # expect: PTL308
""",
        # Swin: the softmax in both branches of a mask test; a bmm with softmax over dim 2 (its last)
        """
import torch
from torch import nn

class WindowAttention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.softmax = nn.Softmax(dim=-1)
        self.attn_drop = nn.Dropout(0.0)

    def forward(self, q, k, v, bias, mask=None):
        B_, _, N, C = q.shape
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = attn + bias.unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, N, N)
            attn = self.softmax(attn)
        else:
            attn = self.softmax(attn)
        attn = self.attn_drop(attn)
        return (attn @ v).transpose(1, 2).reshape(B_, N, C)  # expect: PTL308

def sagan(query, key, value):
    energy = torch.bmm(query, key.permute(0, 2, 1))
    return torch.bmm(torch.softmax(energy, 2), value)  # expect: PTL308
""",
    ]

    good_examples = [
        # the weights are returned and a caller uses them (attention maps kept every call), or
        # no call in the file shows what becomes of them (a library's layer)
        """
import torch
from torch import nn

class Attention(nn.Module):
    def forward(self, q, k, v):
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        return attn @ v, attn

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.maps = []

    def forward(self, x):
        out, attn = self.attn(x, x, x)
        self.maps.append(attn)
        return out

def attend(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return w @ v, w
""",
        # cross-covariance attention (XCiT): q and k turned to channels × tokens first, so the
        # score matrix is channels × channels
        """
import torch
from torch import nn

class XCA(nn.Module):
    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q.transpose(-2, -1)
        k = k.transpose(-2, -1)
        v = v.transpose(-2, -1)
        q = torch.nn.functional.normalize(q, dim=-1)
        k = torch.nn.functional.normalize(k, dim=-1).contiguous()
        attn = (q @ k.transpose(-2, -1)) * self.temperature
        attn = attn.softmax(dim=-1)
        return (attn @ v).permute(0, 3, 1, 2).reshape(B, N, C)
""",
        # the math path of a dispatcher that picks the fused kernel: a fallback
        """
import torch
import torch.nn.functional as F

def attention_math(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

def attention(q, k, v, fused=True):
    if fused:
        return F.scaled_dot_product_attention(q, k, v)
    return attention_math(q, k, v)
""",
        """
import torch.nn.functional as F

def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
""",
        # a fallback beside the fused kernel (timm, nanoGPT)
        """
import torch
import torch.nn.functional as F

class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v)
        else:
            attn = (q * self.scale) @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            x = attn @ v
        return x
""",
        # the probabilities are returned: the fused kernel does not give them
        """
import torch

def eager_attention(q, k, v, mask):
    w = torch.matmul(q, k.transpose(2, 3)) + mask
    w = torch.softmax(w, dim=-1)
    out = torch.matmul(w, v)
    return out, w
""",
        # not attention: no transposed keys, a softmax over a projection
        """
import torch

def mixture(x, w, experts):
    gates = torch.softmax(x @ w, dim=-1)
    return gates @ experts
""",
        # class attention: one query token, a 1 × L strip of scores; landmark (Nyström) queries
        """
import torch

class ClassAttention(torch.nn.Module):
    def forward(self, x):
        q = self.q(x[:, 0:1]).reshape(x.shape[0], 1, 8, -1).transpose(1, 2)
        k = self.k(x).reshape(x.shape[0], -1, 8, 32).transpose(1, 2)
        v = self.v(x).reshape(x.shape[0], -1, 8, 32).transpose(1, 2)
        attn = (q @ k.transpose(-2, -1)).softmax(dim=-1)
        landmarks = k.reshape(k.shape[0], 8, 16, -1, 32).mean(dim=-2)
        kernel = torch.softmax(q @ landmarks.transpose(-1, -2), dim=-1)
        return attn @ v, kernel @ self.project(landmarks)
""",
        # two score products summed (text and layout), one softmax: not one fused attention
        """
import torch

def bi_attention(q, k, ql, kl, v):
    scores = q @ k.transpose(-1, -2) + ql @ kl.transpose(-1, -2)
    return torch.softmax(scores, dim=-1) @ v
""",
        # something the kernel cannot do between the softmax and the product
        """
import torch

def renormalised(q, k, v, keep):
    p = torch.softmax(q @ k.transpose(-2, -1), dim=-1) * keep
    p = p / p.sum(-1, keepdim=True)
    return p @ v
""",
        # einsums that are not q·kᵀ then ·v: a sum over the queries, a projection shared by the
        # batch, a plain matrix product without transposed keys
        """
import torch
from torch import einsum

def not_attention(q, k, v, x, w_gate, experts, a, b, c):
    attn = torch.einsum("bhid,bhjd->bhij", q, k).softmax(dim=-1)
    out = torch.einsum("bhij,bhid->bhjd", attn, v)
    gates = einsum("bnd,ed->bne", x, w_gate).softmax(dim=-1)
    mixed = einsum("bne,bed->bnd", gates, experts)
    p = torch.einsum("bij,bjk->bik", a, b).softmax(dim=-1)
    return out, mixed, torch.einsum("bik,bkd->bid", p, c)
""",
        # a softmax over the queries, or over a dimension it does not show: not what the fused
        # kernel computes
        """
import torch
import torch.nn as nn
import torch.nn.functional as F

def over_queries(q, k, v):
    scores = torch.bmm(q, k.transpose(1, 2))
    sim = torch.einsum("bhid,bhjd->bhij", q, k)
    return torch.bmm(F.softmax(scores, dim=1), v), torch.einsum("bhij,bhjd->bhid", sim.softmax(dim=-2), v)

class Pooling(nn.Module):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(dim=1)
        self.implicit = nn.Softmax()

    def forward(self, q, k, v):
        return self.softmax(q @ k.transpose(-2, -1)) @ v, self.implicit(q @ k.transpose(-2, -1)) @ v
""",
        # linear attention: no softmax of the scores (feature maps, or softmax of q and k apart)
        """
import torch
import torch.nn.functional as F

def linear_attention(q, k, v):
    q = F.elu(q) + 1
    k = F.elu(k) + 1
    kv = torch.einsum("bhnd,bhne->bhde", k, v)
    z = 1 / torch.einsum("bhnd,bhd->bhn", q, k.sum(dim=2))
    return torch.einsum("bhnd,bhde,bhn->bhne", q, kv, z)

def efficient_attention(q, k, v):
    q = q.softmax(dim=-1)
    k = k.softmax(dim=-2)
    context = torch.einsum("bhnd,bhne->bhde", k, v)
    return torch.einsum("bhde,bhnd->bhne", context, q)
""",
    ]


def _full_slice(node: ast.AST) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def _one_position(node: ast.AST) -> bool:
    """`0`, `-1`, `0:1`, `:1`: one position along an axis."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Slice) and node.step is None:
        lower = 0 if node.lower is None else node.lower.value if isinstance(node.lower, ast.Constant) else None
        upper = node.upper.value if isinstance(node.upper, ast.Constant) else None
        return isinstance(lower, int) and isinstance(upper, int) and upper - lower == 1
    return False


def _einsum_parts(equation: ast.AST) -> tuple[list[str], str] | None:
    """The operands' index letters and the output's of an explicit two-operand einsum:
    "bhid,bhjd->bhij" -> (["bhid", "bhjd"], "bhij"); an ellipsis is left out ("...id" -> "id");
    None for anything else."""
    if not (isinstance(equation, ast.Constant) and isinstance(equation.value, str)):
        return None
    text = equation.value.replace(" ", "")
    if "->" not in text:
        return None
    inputs, output = text.split("->", 1)
    parts = [p.replace("...", "") for p in inputs.split(",")]
    output = output.replace("...", "")
    if len(parts) != 2 or not all(p.isalpha() for p in parts) or (output and not output.isalpha()):
        return None
    return parts, output


def _matrix_product(first: str, second: str, output: str, batched: bool = False) -> tuple[str, str] | None:
    """The letters of a two-operand einsum that make it a batch of matrix products, like the
    scores of attention: the one letter summed (in both operands, not in the output) and the
    one letter of the second operand only (the keys, or the values' features), kept; the first
    operand's own letters (the queries, perhaps heads) are kept too, and so is every letter of
    both (batch, heads), of which there is one at least (`batched`: an ellipsis in both) — a
    weight shared by the batch (`"bnd,ed->bne"`) is a projection, not attention. None for
    anything else."""
    summed = [c for c in first if c in second and c not in output]
    own_first = [c for c in first if c not in second]
    own_second = [c for c in second if c not in first]
    shared = [c for c in first if c in second and c in output]
    if len(summed) != 1 or not own_first or len(own_second) != 1 or not (shared or batched) \
            or len(set(first)) != len(first) or len(set(second)) != len(second) \
            or sorted(output) != sorted(shared + own_first + own_second):
        return None
    return summed[0], own_second[0]


def _score_einsum(equation: ast.AST) -> tuple[int, int | None, bool] | None:
    """An einsum of queries and keys that sums over their features: "bhid,bhjd->bhij",
    "bnqd,bnkd->bnqk", "...id,...jd->...ij", LoFTR's "nlhd,nshd->nlsh", channels first
    "bct,bcs->bts", multi-query "bnhk,bmk->bnhm": the axis of the keys in the scores (counted
    from the end), the scores' rank (None with an ellipsis), and whether the keys must be seen
    transposed (a plain matrix product, "bij,bjk->bik", like `@`). None for another
    contraction."""
    parsed = _einsum_parts(equation)
    if parsed is None:
        return None
    (first, second), output = parsed
    ellipsis = equation.value.replace(" ", "").split("->")[0].split(",")
    letters = _matrix_product(first, second, output, all(part.startswith("...") for part in ellipsis))
    if letters is None:
        return None
    summed, keys = letters
    rank = None if "..." in equation.value else len(output)
    plain = first[-1] == summed and len(second) >= 2 and second[-2] == summed
    return output.index(keys) - len(output), rank, plain


def _attends(product: ast.AST, position: int, keys: int | None, ctx) -> bool:
    """The product with `v` weighs the values by the probabilities (the operand at `position`,
    their keys on axis `keys` from the end; None if a layout change hides it): an einsum sums
    over the keys and keeps the queries and the values' features ("bhij,bhjd->bhid",
    "nlsh,nshd->nlhd"). Not a sum over the queries ("bhij,bhid->bhjd") nor any other
    contraction. `@`, `matmul`, `bmm`: as written."""
    if not (isinstance(product, ast.Call) and ctx.qualname(product.func) == "torch.einsum"):
        return True
    parsed = _einsum_parts(product.args[0])
    if parsed is None or keys is None:
        return False
    parts, output = parsed
    probabilities, values = parts[position], parts[1 - position]
    ellipsis = product.args[0].value.replace(" ", "").split("->")[0].split(",")
    letters = _matrix_product(probabilities, values, output, all(part.startswith("...") for part in ellipsis))
    return letters is not None and -keys <= len(probabilities) and letters[0] == probabilities[keys]


def _score_axes(ctx, product: ast.AST) -> tuple[int, int | None]:
    """Where the keys are in the scores `product` makes (an axis counted from the end), and the
    scores' rank where the product says it: `torch.bmm` and `torch.baddbmm` give 3, an einsum as
    many as its output has letters (unknown with an ellipsis), `@` and `matmul` do not say."""
    func = product.func if isinstance(product, ast.Call) else None
    qualname = ctx.qualname(func) if func is not None else None
    if qualname == "torch.einsum":
        found = _score_einsum(product.args[0])
        return found[:2] if found is not None else (-1, None)
    if qualname in ("torch.bmm", "torch.baddbmm") or (
            qualname is None and isinstance(func, ast.Attribute) and func.attr == "bmm"):
        return -1, 3
    return -1, None
