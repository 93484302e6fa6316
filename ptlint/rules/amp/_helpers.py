"""What the mixed-precision rules PTL601-PTL606 share: the AMP APIs by name, old and new, and
where code picks between them. Not a rule module."""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from ptlint.engine.rule import Rule
from ptlint.semantics.nodes import STATEMENT_LOOPS
from ptlint.semantics.project import imported_sources
from ptlint.semantics.values import BACKWARD_METHODS


class Deprecated(NamedTuple):
    """A `torch.cuda.amp` / `torch.cpu.amp` API and what replaces it."""

    native: str  # "torch.amp.autocast"
    device: str  # "cuda" or "cpu"
    kind: str  # "autocast", "scaler", "custom"
    # positional parameters of the old API after `self`, in order (autocast takes them as
    # keywords in the new one, whose second parameter is `dtype`)
    positional: tuple[str, ...] = ()


_AUTOCAST_ARGS = ("enabled", "dtype", "cache_enabled")
DEPRECATED: dict[str, Deprecated] = {}
for _device in ("cuda", "cpu"):
    for _path in (f"torch.{_device}.amp.autocast", f"torch.{_device}.amp.autocast_mode.autocast"):
        DEPRECATED[_path] = Deprecated("torch.amp.autocast", _device, "autocast", _AUTOCAST_ARGS)
    for _path in (f"torch.{_device}.amp.GradScaler", f"torch.{_device}.amp.grad_scaler.GradScaler"):
        DEPRECATED[_path] = Deprecated("torch.amp.GradScaler", _device, "scaler")
for _name in ("custom_fwd", "custom_bwd"):
    for _path in (f"torch.cuda.amp.{_name}", f"torch.cuda.amp.autocast_mode.{_name}"):
        DEPRECATED[_path] = Deprecated(f"torch.amp.{_name}", "cuda", "custom")

# The native API (and `torch.amp` itself): where code names one of these beside a deprecated
# call, it is choosing between the two by torch version.
NATIVE = {"torch.amp", "torch.autocast", "torch.GradScaler", "torch.amp.autocast", "torch.amp.GradScaler",
          "torch.amp.custom_fwd", "torch.amp.custom_bwd", "torch.amp.autocast_mode.autocast",
          "torch.amp.grad_scaler.GradScaler"}
# Words of a test that picks code by torch version.
VERSION_WORDS = ("version", "TORCH_1", "TORCH_2", "TORCH_GREATER", "TORCH_LESS", "_TORCH_", "torch_version")

APEX_CALLS = {"apex.amp.initialize", "apex.amp.scale_loss"}


def native_name(ctx, node: ast.AST) -> bool:
    qualname = ctx.qualname(node)
    return qualname is not None and (qualname in NATIVE or qualname.startswith("torch.amp."))


def mentions_native(ctx, nodes) -> bool:
    """Some name under `nodes` resolves to the native AMP API (`torch.amp.GradScaler`, `torch.autocast`)."""
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, (ast.Name, ast.Attribute)) and native_name(ctx, node):
                return True
    return False


def uses_any_amp(ctx) -> bool:
    """The module uses torch's AMP at all, old API or new (any name resolving under `torch.amp`,
    `torch.cuda.amp`, `torch.cpu.amp`, or `torch.autocast` / `torch.GradScaler`)."""
    key = "uses-amp"
    if key not in ctx.memo:
        found = False
        text = ctx.source.text
        if "amp" in text or "autocast" in text or "GradScaler" in text:
            for node in ast.walk(ctx.tree):
                if isinstance(node, (ast.Name, ast.Attribute)):
                    qualname = ctx.qualname(node) or ""
                    if qualname in NATIVE or qualname.startswith(("torch.amp", "torch.cuda.amp", "torch.cpu.amp")):
                        found = True
                        break
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                    if any(m.startswith(("torch.amp", "torch.cuda.amp", "torch.cpu.amp")) for m in modules):
                        found = True
                        break
        ctx.memo[key] = found
    return ctx.memo[key]


def version_choice(ctx, stack: list[ast.AST], node: ast.AST) -> bool:
    """`node` (with its ancestors `stack`) sits in one branch of an `if` / conditional expression
    that picks the API by torch version: the other branch names the native API, or the test
    names a version (`if TORCH_2_4:`, `if version.parse(torch.__version__) < ...`)."""
    path = [*stack, node]
    for parent, child in zip(path, path[1:]):
        if isinstance(parent, ast.If):
            if any(s is child for s in parent.body):
                other = parent.orelse
            elif any(s is child for s in parent.orelse):
                other = parent.body
            else:
                continue
        elif isinstance(parent, ast.IfExp) and child is not parent.test:
            other = [parent.orelse if child is parent.body else parent.body]
        else:
            continue
        if mentions_native(ctx, other):
            return True
        test = ast.unparse(parent.test)
        if any(word.lower() in test.lower() for word in VERSION_WORDS):
            return True
    return False


def import_bindings(ctx, name: str) -> list[str]:
    """Every qualified name an import statement anywhere in the module binds to `name`
    (module level, in `try` / `if` blocks, and inside functions)."""
    key = ("import-bindings", name)
    if key not in ctx.memo:
        found = []
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if (alias.asname or alias.name.split(".")[0]) == name:
                        found.append(alias.name if alias.asname else alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and not node.level:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        found.append(f"{node.module}.{alias.name}")
        ctx.memo[key] = found
    return ctx.memo[key]


def head_name(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def compatibility_import(ctx, callee: ast.AST) -> bool:
    """The name the call goes through is imported from the native API somewhere too:
    `try: from torch.amp import GradScaler` / `except ImportError: from torch.cuda.amp import
    GradScaler` — a shim that picks whichever this torch has."""
    name = head_name(callee)
    if name is None:
        return False
    targets = import_bindings(ctx, name)
    return len(targets) > 1 and any(t in NATIVE or t.startswith("torch.amp") for t in targets)


# -- project-level hints (PTL603-PTL606) -------------------------------------------------------

# What the hints look for in the text of the training script and the project modules it imports.
CUDA = re.compile(r"""\.cuda\(|["']cuda["':]|torch\.cuda\.(is_available|device_count|set_device)""")
AUTOCAST = re.compile(r"autocast|GradScaler|amp\.initialize|apex import amp|torch\.amp\b|cuda\.amp")
MIXED_PRECISION = re.compile(AUTOCAST.pattern + r"|\.half\(\)|bfloat16|float16|mixed_precision|\bfp16\b|\bbf16\b")
TF32 = re.compile(r"allow_tf32|set_float32_matmul_precision|fp32_precision")
CHANNELS_LAST = re.compile(r"channels_last")
CONVOLUTION = re.compile(r"Conv2d|torchvision\.models|from torchvision import models|timm\.create_model|"
                         r"\b(resnet|resnext|wide_resnet|vgg|densenet|efficientnet|mobilenet|convnext|regnet|"
                         r"mnasnet|shufflenet|squeezenet)\w*\(")
FIXED_SIZE = re.compile(r"RandomResizedCrop|CenterCrop|RandomCrop|Resize\(|"
                        r"\b(MNIST|FashionMNIST|KMNIST|EMNIST|CIFAR10|CIFAR100|SVHN|STL10|ImageNet|ImageFolder)\b")
CUDNN_CHOICE = re.compile(r"cudnn\.benchmark|cudnn\.deterministic|use_deterministic_algorithms")


def training_loop(ctx) -> ast.AST | None:
    """The file's first training loop: around the first `.backward()` call in source order
    (`loss.backward()`, `scaler.scale(loss).backward()`, `accelerator.backward(loss)`), the
    innermost enclosing loop of the same function that is not a loop over the parts of one step
    (`for chunk in chunks`, gradient-accumulation micro-steps); None when the file has none — a
    library's chunked backward, a model definition."""
    from ptlint.semantics.where import is_sub_step_loop

    key = "training-loop"
    if key not in ctx.memo:
        calls = sorted((n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Attribute) and n.func.attr in BACKWARD_METHODS),
                       key=lambda n: (n.lineno, n.col_offset))
        found = None
        for call in calls:
            node = ctx.parent(call)
            while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                               ast.ClassDef)):
                if isinstance(node, STATEMENT_LOOPS) and not is_sub_step_loop(node):
                    found = node
                    break
                node = ctx.parent(node)
            if found is not None:
                break
        ctx.memo[key] = found
    return ctx.memo[key]


def script_text(ctx, everything: bool) -> str:
    """The file's text and that of the project modules it imports (ptlint.semantics.project): directly
    only — what the script itself uses, the evidence a hint needs — or through other project
    modules too, where a setting that silences a hint may hide."""
    key = ("script-text", everything)
    if key not in ctx.memo:
        ctx.memo[key] = "\n".join([ctx.source.text, *(f.text for f in imported_sources(ctx)
                                                     if everything or f.depth == 1)])
    return ctx.memo[key]


# What the pages of the ProjectHint rules (PTL603-PTL606) say under "Where it reports", beside the
# code that decides it (ProjectHint.end_file).
WHERE_SCRIPT_DOC = """\
- **Reports** once per training script, at its training loop (the innermost loop around the
  first `.backward()`), wherever that loop is: in `main()`, at the script's top level, or in a
  function whose callers the file does not show.
- **Silent** in a file without a training loop (a library, a model definition) and in test
  code.
"""


class ProjectHint(Rule):
    """A hint about how a training script is set up, reported once, at its training loop, and
    only when the setting is made nowhere in the file or in the project modules it imports."""

    default = False
    reads_imports = True
    triggers = ("backward",)

    def applies(self, used: str, anywhere: str) -> bool:
        """`used`: the script and the project modules it imports itself (what it visibly does);
        `anywhere`: those and every project module they import in turn (where a setting counts)."""
        raise NotImplementedError

    def end_file(self) -> None:
        loop = training_loop(self.ctx)
        if loop is None or not self.applies(script_text(self.ctx, False), script_text(self.ctx, True)):
            return
        header_end = loop.test if isinstance(loop, ast.While) else loop.iter
        self.report(loop, end_node=header_end)
