"""PTL601 deprecated-cuda-amp: `torch.cuda.amp.autocast` / `GradScaler` / `custom_fwd` /
`custom_bwd` and `torch.cpu.amp.autocast`, deprecated for `torch.amp`."""

from __future__ import annotations

import ast

from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import FixExample, FixInput, Rule
from ptlint.rules.amp._helpers import (
    DEPRECATED,
    Deprecated,
    compatibility_import,
    version_choice,
)

# Three scaled optimizer steps of a small model on `device`, the second overflowing: the scale
# and the parameters after them.
SCALED_STEPS = """
scaler = {scaler}
model = torch.nn.Linear(4, 1).to("{device}")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    with torch.autocast("{device}", dtype=torch.bfloat16 if "{device}" == "cpu" else torch.float16):
        loss = model(torch.randn(2, 4, device="{device}")).float().pow(2).mean() * (1e30 if step == 1 else 1)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad()
result = (scaler.get_scale(), model)
"""

class DeprecatedCudaAmp(Rule):
    code = "PTL601"
    name = "deprecated-cuda-amp"
    message = "`{old}` is deprecated (torch 2.4 warns on every call): use `{new}`"
    help = ('Use `torch.amp.autocast("cuda", ...)`, `torch.amp.GradScaler("cuda", ...)` and '
            '`torch.amp.custom_fwd(device_type="cuda")` / `custom_bwd(device_type="cuda")`.')
    fixable = "sometimes"  # safe where offered; `*args` into autocast: no fix
    cold = False  # a fallback in `except ImportError:` / `except AttributeError:` is a compatibility path
    triggers = ("cuda.amp", "cpu.amp", "cuda import amp", "cpu import amp")

    def visit_Call(self, node: ast.Call) -> None:
        found = self._deprecated(node.func)
        if found is None:
            return
        qualname, api = found
        self.report(node, self._message(qualname, api), fix=self._call_fix(node, api))

    def visit_FunctionDef(self, node: ast.AST) -> None:
        for decorator in node.decorator_list:  # `@torch.cuda.amp.custom_fwd` without a call
            found = None if isinstance(decorator, ast.Call) else self._deprecated(decorator)
            if found is not None:
                qualname, api = found
                edits = self.ctx.edits
                reference = edits.reference(api.native, at=decorator)
                fix = None
                if reference is not None:
                    spelled, imports = reference
                    fix = Fix(SAFE, f"Use `{api.native}(device_type=\"{api.device}\")`",
                              (edits.replace(decorator, f'{spelled}(device_type="{api.device}")'), *imports))
                self.report(decorator, self._message(qualname, api), fix=fix)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _deprecated(self, callee: ast.AST) -> tuple[str, Deprecated] | None:
        qualname = self.ctx.qualname(callee)
        api = DEPRECATED.get(qualname or "")
        if api is None:
            return None
        if version_choice(self.ctx, self.ctx.stack, callee) or compatibility_import(self.ctx, callee):
            return None  # code that picks the old API only where torch lacks the new one
        return qualname, api

    @staticmethod
    def _message(qualname: str, api: Deprecated) -> str:
        argument = f'device_type="{api.device}"' if api.kind == "custom" else f'"{api.device}", ...'
        return DeprecatedCudaAmp.message.format(old=qualname, new=f"{api.native}({argument})")

    def _call_fix(self, call: ast.Call, api: Deprecated) -> Fix | None:
        """The native call with the device type added and every argument kept: autocast's
        positional arguments become keywords (the new one takes `dtype` second); GradScaler's
        keep their places after the device; custom_fwd / custom_bwd get `device_type=`."""
        edits = self.ctx.edits
        reference = edits.reference(api.native, at=call)
        if reference is None:
            return None
        spelled, imports = reference
        device = f'"{api.device}"'
        out = [edits.replace(call.func, spelled), *imports]
        if api.kind == "custom":
            keyword = f'device_type={device}'
            if call.args:
                out.append(edits.insert_at(edits.after(call.args[-1]), f", {keyword}"))
            elif call.keywords:
                out.append(edits.insert_at(edits.start(call.keywords[0]), f"{keyword}, "))
            else:
                out.append(edits.insert_at(edits.before_close(call), keyword))
            return Fix(SAFE, f"Use `{api.native}(..., device_type={device})`", tuple(out))
        if api.kind == "autocast":
            if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(api.positional):
                return None  # where *args lands in the new signature is unknown
            for index, argument in enumerate(call.args):
                prefix = f"{device}, " if index == 0 else ""
                out.append(edits.insert_at(edits.before(argument), f"{prefix}{api.positional[index]}="))
        parts = [*call.args, *call.keywords]
        if api.kind == "scaler" or not call.args:
            if parts:
                first = min(parts, key=lambda n: (n.lineno, n.col_offset))
                out.append(edits.insert_at(edits.before(first), f"{device}, "))
            else:
                out.append(edits.insert_at(edits.before_close(call), device))
        return Fix(SAFE, f"Use `{api.native}({device}, ...)`", tuple(out))

    docs = """
## What it does
Finds the `torch.cuda.amp` / `torch.cpu.amp` APIs that torch 2.4 deprecated for `torch.amp`. The
device-specific AMP APIs — `torch.cuda.amp.autocast(...)`,
`torch.cuda.amp.GradScaler(...)`, `torch.cuda.amp.custom_fwd` / `custom_bwd`,
`torch.cpu.amp.autocast(...)`, `torch.cpu.amp.GradScaler(...)` — in every import spelling
(`from torch.cuda.amp import autocast, GradScaler`, `from torch.cuda import amp`), as calls and as
decorators.

## Why is this bad?
Each call emits a `FutureWarning` ("`torch.cuda.amp.autocast(args...)` is deprecated. Please use
`torch.amp.autocast('cuda', args...)` instead"), once per process for a context manager entered
every step, and the old names are scheduled for removal. The `torch.amp` API is the same code
with the device type as an argument, so one code path serves CUDA, CPU, XPU and MPS.

Not reported: code that chooses between the two APIs by torch version — a call in one branch of
an `if` / conditional expression whose other branch uses `torch.amp` (or whose test names a torch
version), in an `except` block (`except AttributeError: torch.cuda.amp.GradScaler()`), or through
a name imported from `torch.amp` where available and from `torch.cuda.amp` otherwise
(`try: from torch.amp import GradScaler` / `except ImportError: ...`). Such code supports torch
releases older than 2.3, where the new API is missing. Type references that are not calls
(`isinstance(s, torch.cuda.amp.GradScaler)`) do not warn and are not reported.

## Where it reports
- **Reports** wherever the old API is called: per step, in once-code, and in a function whose
  callers the file does not show (it warns wherever it runs, and the names will go away).
- **Silent** on error paths (an `except` body, a branch that raises, or only warns or logs),
  where a fallback for old torch releases lives, and in test code.

## Example
```python
import torch
from torch.cuda.amp import GradScaler, autocast


def train(model, loader, optimizer, use_amp):
    scaler = GradScaler(enabled=use_amp)
    for x in loader:
        with autocast(dtype=torch.bfloat16):
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
```

## Use instead
```python
import torch


def train(model, loader, optimizer, use_amp):
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for x in loader:
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
```

## Fix safety
Safe: `torch.cuda.amp.autocast(...)` becomes `torch.amp.autocast("cuda", ...)` (`"cpu"` for
`torch.cpu.amp`), `GradScaler(...)` becomes `torch.amp.GradScaler("cuda", ...)`, and
`custom_fwd` / `custom_bwd` become `torch.amp.custom_fwd(..., device_type="cuda")` (a bare
decorator becomes a call). Every argument is kept: `enabled=`, `dtype=`, `cache_enabled=`,
`**kwargs`; autocast's positional arguments become keywords, because the new signature takes
`dtype` second (`autocast(True)` would otherwise pass `True` as the dtype); GradScaler's keep
their order after the device. The old classes are thin wrappers that call exactly these.
`torch.amp` is written in the module's spelling of `torch` (`import torch` is added when the
module has none); the old import is left for an import linter to remove, because other code may
still use the name. The replacement needs torch 2.3 (`GradScaler`) or 2.4 (`custom_fwd`), the
releases that deprecated the old names. One corner differs: constructed *inside* another autocast
region of the same device that set another dtype, `torch.amp.autocast("cuda")` without `dtype=`
inherits that region's dtype where the old class always used float16 (float32 weights, bfloat16
on CPU); pass `dtype=` there. Not fixed: `autocast(*args)`, where the positional meaning is unknown.

## References
- https://pytorch.org/docs/stable/amp.html
- https://pytorch.org/docs/stable/amp.html#torch.cuda.amp.autocast ("deprecated, use torch.amp.autocast")
"""

    bad_examples = [
        """
import torch

scaler = torch.cuda.amp.GradScaler()  # expect: PTL601

def train_step(model, x, opt):
    with torch.cuda.amp.autocast():  # expect: PTL601
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
""",
        """
import torch
from torch.cuda.amp import GradScaler, autocast

def fit(model, loader, opt, use_amp):
    scaler = GradScaler(enabled=use_amp)  # expect: PTL601
    for x, y in loader:
        with autocast(enabled=use_amp, dtype=torch.bfloat16):  # expect: PTL601
            loss = model(x, y)
        scaler.scale(loss).backward()
""",
        """
import torch
from torch.cuda import amp
from torch.cpu.amp import autocast as cpu_autocast

class F(torch.autograd.Function):
    @staticmethod
    @amp.custom_fwd(cast_inputs=torch.float32)  # expect: PTL601
    def forward(ctx, x):
        return x

    @staticmethod
    @amp.custom_bwd  # expect: PTL601
    def backward(ctx, g):
        return g

def on_cpu(model, x):
    with cpu_autocast():  # expect: PTL601
        return model(x)
""",
    ]

    good_examples = [
        """
import torch

scaler = torch.amp.GradScaler("cuda")
with torch.autocast("cuda", dtype=torch.bfloat16):
    pass
""",
        # picking the API by version: an if/else, a conditional expression, an except block
        """
import torch

TORCH_2_4 = True

def make_scaler(enabled):
    if TORCH_2_4:
        return torch.amp.GradScaler("cuda", enabled=enabled)
    else:
        return torch.cuda.amp.GradScaler(enabled=enabled)

def autocast(enabled):
    return torch.amp.autocast("cuda", enabled=enabled) if TORCH_2_4 else torch.cuda.amp.autocast(enabled)

class Scaler:
    def __init__(self):
        try:
            self.scaler = torch.amp.GradScaler(device="cuda")
        except (AttributeError, TypeError):
            self.scaler = torch.cuda.amp.GradScaler()
""",
        # an import shim: whichever the installed torch has
        """
import torch

try:
    from torch.amp import GradScaler
except ImportError:
    from torch.cuda.amp import GradScaler

scaler = GradScaler()
""",
        # a type reference does not warn
        """
import torch

def is_scaler(s):
    return isinstance(s, torch.cuda.amp.GradScaler)
""",
    ]

    fix_examples = [
        FixExample(
            before="""
import torch

scaler = torch.cuda.amp.GradScaler(2.0 ** 14, enabled=use_amp)
with torch.cuda.amp.autocast(dtype=torch.bfloat16, cache_enabled=False):
    pass
with torch.cuda.amp.autocast():
    pass
""",
            after="""
import torch

scaler = torch.amp.GradScaler("cuda", 2.0 ** 14, enabled=use_amp)
with torch.amp.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
    pass
with torch.amp.autocast("cuda"):
    pass
""",
        ),
        # positional arguments of autocast become keywords; the import stays (other code may use it)
        FixExample(
            before="""
from torch.cuda.amp import autocast, GradScaler

with autocast(False, torch.float16):
    pass
s = GradScaler(
    init_scale=1024,  # small start
)
""",
            after="""
from torch.cuda.amp import autocast, GradScaler
import torch

with torch.amp.autocast("cuda", enabled=False, dtype=torch.float16):
    pass
s = torch.amp.GradScaler(
    "cuda", init_scale=1024,  # small start
)
""",
        ),
        FixExample(
            before="""
import torch as T
from torch.cuda.amp import custom_fwd, custom_bwd

class F(T.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=T.float32)
    def forward(ctx, x):
        return x

    @staticmethod
    @custom_bwd
    def backward(ctx, g):
        return g

with T.cpu.amp.autocast(**options):
    pass
""",
            after="""
import torch as T
from torch.cuda.amp import custom_fwd, custom_bwd

class F(T.autograd.Function):
    @staticmethod
    @T.amp.custom_fwd(device_type="cuda", cast_inputs=T.float32)
    def forward(ctx, x):
        return x

    @staticmethod
    @T.amp.custom_bwd(device_type="cuda")
    def backward(ctx, g):
        return g

with T.amp.autocast("cpu", **options):
    pass
""",
        ),
        FixExample(  # every autocast setting kept: device, dtype, enabled, cache
            before="""
import torch


def made():
    return [
        torch.cuda.amp.autocast(),
        torch.cuda.amp.autocast(enabled=False),
        torch.cuda.amp.autocast(True, torch.bfloat16),
        torch.cuda.amp.autocast(False, torch.float16, False),
        torch.cuda.amp.autocast(dtype=torch.bfloat16, cache_enabled=False),
        torch.cuda.amp.autocast(**{'enabled': False}),
        torch.cpu.amp.autocast(),
        torch.cpu.amp.autocast(enabled=False),
        torch.cpu.amp.autocast(dtype=torch.float16),
        torch.cpu.amp.autocast(True, torch.bfloat16, False),
    ]
""",
            after="""
import torch


def made():
    return [
        torch.amp.autocast("cuda"),
        torch.amp.autocast("cuda", enabled=False),
        torch.amp.autocast("cuda", enabled=True, dtype=torch.bfloat16),
        torch.amp.autocast("cuda", enabled=False, dtype=torch.float16, cache_enabled=False),
        torch.amp.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False),
        torch.amp.autocast("cuda", **{'enabled': False}),
        torch.amp.autocast("cpu"),
        torch.amp.autocast("cpu", enabled=False),
        torch.amp.autocast("cpu", dtype=torch.float16),
        torch.amp.autocast("cpu", enabled=True, dtype=torch.bfloat16, cache_enabled=False),
    ]
""",
            inputs=(
                FixInput("the settings", "result = [(a.device, a.fast_dtype, a._enabled, a._cache_enabled) for a in made()]"),
            ),
        ),
        FixExample(  # a region computes the same: dtype and values
            before="""
import torch


def region0(a, b):
    with torch.cpu.amp.autocast():
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region1(a, b):
    with torch.cpu.amp.autocast(enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region2(a, b):
    with torch.cpu.amp.autocast(dtype=torch.float16):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region3(a, b):
    with torch.cpu.amp.autocast(True, torch.bfloat16, False):
        return a @ b, torch.is_autocast_enabled(a.device.type)
""",
            after="""
import torch


def region0(a, b):
    with torch.amp.autocast("cpu"):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region1(a, b):
    with torch.amp.autocast("cpu", enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region2(a, b):
    with torch.amp.autocast("cpu", dtype=torch.float16):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region3(a, b):
    with torch.amp.autocast("cpu", enabled=True, dtype=torch.bfloat16, cache_enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)
""",
            inputs=(
                FixInput("a matmul in each CPU region", "a, b = torch.randn(8, 16), torch.randn(16, 4)\n"
                                                        "result = [region(a, b) for region in (region0, region1, region2, region3)]"),
            ),
        ),
        FixExample(
            before="""
import torch


def region0(a, b):
    with torch.cuda.amp.autocast():
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region1(a, b):
    with torch.cuda.amp.autocast(enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region2(a, b):
    with torch.cuda.amp.autocast(True, torch.bfloat16):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region3(a, b):
    with torch.cuda.amp.autocast(False, torch.float16, False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region4(a, b):
    with torch.cuda.amp.autocast(dtype=torch.bfloat16, cache_enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region5(a, b):
    with torch.cuda.amp.autocast(**{'enabled': False}):
        return a @ b, torch.is_autocast_enabled(a.device.type)
""",
            after="""
import torch


def region0(a, b):
    with torch.amp.autocast("cuda"):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region1(a, b):
    with torch.amp.autocast("cuda", enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region2(a, b):
    with torch.amp.autocast("cuda", enabled=True, dtype=torch.bfloat16):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region3(a, b):
    with torch.amp.autocast("cuda", enabled=False, dtype=torch.float16, cache_enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region4(a, b):
    with torch.amp.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
        return a @ b, torch.is_autocast_enabled(a.device.type)


def region5(a, b):
    with torch.amp.autocast("cuda", **{'enabled': False}):
        return a @ b, torch.is_autocast_enabled(a.device.type)
""",
            inputs=(
                FixInput("a matmul in each CUDA region", "a, b = torch.randn(64, 64, device='cuda'), torch.randn(64, 64, device='cuda')\n"
                                                         "result = [region(a, b) for region in (region0, region1, region2, region3, region4, region5)]",
                         device="cuda"),
            ),
        ),
        FixExample(  # every scaler setting kept
            before="""
import torch


def made():
    return [
        torch.cuda.amp.GradScaler(),
        torch.cuda.amp.GradScaler(2.0 ** 10, enabled=True),
        torch.cuda.amp.GradScaler(init_scale=128.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7),
        torch.cuda.amp.GradScaler(enabled=False),
        torch.cpu.amp.GradScaler(1024.0, 4.0),
        torch.cpu.amp.GradScaler(enabled=False),
    ]
""",
            after="""
import torch


def made():
    return [
        torch.amp.GradScaler("cuda"),
        torch.amp.GradScaler("cuda", 2.0 ** 10, enabled=True),
        torch.amp.GradScaler("cuda", init_scale=128.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7),
        torch.amp.GradScaler("cuda", enabled=False),
        torch.amp.GradScaler("cpu", 1024.0, 4.0),
        torch.amp.GradScaler("cpu", enabled=False),
    ]
""",
            inputs=(
                FixInput("the settings", "result = [{k: v for k, v in vars(s).items() if k != '_per_optimizer_states'} "
                                         "for s in made()]"),
            ),
        ),
        FixExample(  # a scaler steps the same, through an overflowing step
            before="""
import torch


def make_scaler():
    return torch.cpu.amp.GradScaler(init_scale=2.0 ** 8, growth_interval=1)


def make_cuda_scaler():
    return torch.cuda.amp.GradScaler(init_scale=2.0 ** 8, growth_interval=1)
""",
            after="""
import torch


def make_scaler():
    return torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=1)


def make_cuda_scaler():
    return torch.amp.GradScaler("cuda", init_scale=2.0 ** 8, growth_interval=1)
""",
            inputs=(
                FixInput("three CPU steps, one overflowing", SCALED_STEPS.format(scaler="make_scaler()", device="cpu")),
                FixInput("three CUDA steps, one overflowing", SCALED_STEPS.format(scaler="make_cuda_scaler()", device="cuda"),
                         device="cuda"),
            ),
        ),
        FixExample(  # custom_fwd / custom_bwd: plain
            before="""
import torch
from torch.cuda.amp import custom_fwd, custom_bwd

class Square(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @custom_bwd
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
""",
            after="""
import torch
from torch.cuda.amp import custom_fwd, custom_bwd

class Square(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda")
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
""",
            inputs=(
                FixInput("forward and backward", "x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n"
                                                 "y = Square.apply(x)\ny.sum().backward()\nresult = (y, x.grad)"),
                FixInput("under CUDA autocast", "x = torch.randn(8, device='cuda', dtype=torch.float16)\n"
                                                "with torch.autocast('cuda'):\n    y = Square.apply(x)\nresult = y",
                         device="cuda"),
            ),
        ),
        FixExample(  # custom_fwd / custom_bwd: casting inputs to float32
            before="""
import torch
from torch.cuda.amp import custom_fwd, custom_bwd

class Square(torch.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @custom_bwd
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
""",
            after="""
import torch
from torch.cuda.amp import custom_fwd, custom_bwd

class Square(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g
""",
            inputs=(
                FixInput("forward and backward", "x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)\n"
                                                 "y = Square.apply(x)\ny.sum().backward()\nresult = (y, x.grad)"),
                FixInput("under CUDA autocast", "x = torch.randn(8, device='cuda', dtype=torch.float16)\n"
                                                "with torch.autocast('cuda'):\n    y = Square.apply(x)\nresult = y",
                         device="cuda"),
            ),
        ),
    ]

    unfixable_examples = [
        """
import torch

def f(args):
    with torch.cuda.amp.autocast(*args):  # expect: PTL601
        pass
""",
    ]
