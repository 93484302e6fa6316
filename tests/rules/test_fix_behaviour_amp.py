"""The PTL601 fix keeps behaviour: the deprecated `torch.cuda.amp` / `torch.cpu.amp` objects and
their `torch.amp` replacements, built by the original and the fixed code side by side, hold the
same settings (device, dtype, enabled, cache, scaler parameters), and do the same work: on the
CPU an autocast region and a scaler really run; on CUDA (when present) the CUDA ones too."""

from __future__ import annotations

import warnings

import pytest
import torch

from ptlint.front.api import check_text, fix_text

CUDA = torch.cuda.is_available()


def _build(source: str):
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation warnings, and "CUDA is not available"
        exec(compile(source, "<case>", "exec"), namespace)
    return namespace["made"]


def _pair(source: str):
    fixed = fix_text(source, ["PTL601"])
    assert fixed != source, "the fix must apply"
    assert not check_text(fixed, ["PTL601"]), "the fixed code must not be reported again"
    return _build(source), _build(fixed), fixed


AUTOCASTS = [
    "torch.cuda.amp.autocast()",
    "torch.cuda.amp.autocast(enabled=False)",
    "torch.cuda.amp.autocast(True, torch.bfloat16)",
    "torch.cuda.amp.autocast(False, torch.float16, False)",
    "torch.cuda.amp.autocast(dtype=torch.bfloat16, cache_enabled=False)",
    "torch.cuda.amp.autocast(**{'enabled': False})",
    "torch.cpu.amp.autocast()",
    "torch.cpu.amp.autocast(enabled=False)",
    "torch.cpu.amp.autocast(dtype=torch.float16)",
    "torch.cpu.amp.autocast(True, torch.bfloat16, False)",
]
SETTINGS = ("device", "fast_dtype", "_enabled", "_cache_enabled")


@pytest.mark.parametrize("call", AUTOCASTS)
def test_autocast_keeps_every_setting(call):
    original, fixed, text = _pair(f"import torch\n\nmade = {call}\n")
    assert "torch.amp.autocast(" in text
    for name in SETTINGS:
        assert getattr(original, name) == getattr(fixed, name), name


@pytest.mark.parametrize("call", [c for c in AUTOCASTS if "cpu" in c])
def test_cpu_autocast_region_computes_the_same(call):
    """Run a matmul inside each region: the same dtype and the same values."""
    source = f"import torch\n\ndef made(a, b):\n    with {call}:\n        return a @ b\n"
    original, fixed, _ = _pair(source)
    torch.manual_seed(0)
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the original's deprecation warning
        before, after = original(a, b), fixed(a, b)
    assert before.dtype == after.dtype
    assert torch.equal(before, after)


SCALERS = [
    "torch.cuda.amp.GradScaler()",
    "torch.cuda.amp.GradScaler(2.0 ** 10, enabled=True)",
    "torch.cuda.amp.GradScaler(init_scale=128.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7)",
    "torch.cuda.amp.GradScaler(enabled=False)",
    "torch.cpu.amp.GradScaler(1024.0, 4.0)",
    "torch.cpu.amp.GradScaler(enabled=False)",
]


@pytest.mark.parametrize("call", SCALERS)
def test_grad_scaler_keeps_every_setting(call):
    original, fixed, text = _pair(f"import torch\n\nmade = {call}\n")
    assert "torch.amp.GradScaler(" in text
    assert vars(original).keys() == vars(fixed).keys()
    for name, value in vars(original).items():
        if name != "_per_optimizer_states":
            assert value == getattr(fixed, name), name


def test_cpu_grad_scaler_steps_the_same():
    source = "import torch\n\nmade = torch.cpu.amp.GradScaler(init_scale=2.0 ** 8, growth_interval=1)\n"
    states = []
    for scaler in _pair(source)[:2]:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            loss = model(torch.randn(2, 4)).pow(2).mean() * (1e30 if step == 1 else 1)  # one overflowing step
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        states.append((scaler.get_scale(), [p.detach().clone() for p in model.parameters()]))
    (scale_a, params_a), (scale_b, params_b) = states
    assert scale_a == scale_b
    assert all(torch.equal(a, b) for a, b in zip(params_a, params_b))


CUSTOM = """import torch
from torch.cuda.amp import custom_fwd, custom_bwd

class Square(torch.autograd.Function):
    @staticmethod
    @custom_fwd{cast}
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    @custom_bwd
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

made = Square.apply
"""


@pytest.mark.parametrize("cast", ["", "(cast_inputs=torch.float32)"])
def test_custom_fwd_bwd_compute_the_same(cast):
    original, fixed, text = _pair(CUSTOM.format(cast=cast))
    assert '@torch.amp.custom_fwd(device_type="cuda"' in text and '@torch.amp.custom_bwd(device_type="cuda")' in text
    results = []
    for function in (original, fixed):
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = function(x)
        y.sum().backward()
        results.append((y.detach(), x.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device: the CPU build disables CUDA autocast")
@pytest.mark.parametrize("call", [c for c in AUTOCASTS if "cuda" in c])
def test_cuda_autocast_region_computes_the_same(call):
    source = f"import torch\n\ndef made(a, b):\n    with {call}:\n        return a @ b, torch.is_autocast_enabled('cuda')\n"
    original, fixed, _ = _pair(source)
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (before, on_before), (after, on_after) = original(a, b), fixed(a, b)
    assert on_before == on_after
    assert before.dtype == after.dtype
    assert torch.equal(before, after)


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
@pytest.mark.parametrize("cast", ["", "(cast_inputs=torch.float32)"])
def test_cuda_custom_fwd_under_autocast(cast):
    source = CUSTOM.format(cast=cast).replace("made = Square.apply", "def made(x):\n    with torch.autocast('cuda'):\n"
                                              "        y = Square.apply(x)\n    return y")
    original, fixed, _ = _pair(source)
    x = torch.randn(8, device="cuda", dtype=torch.float16)
    assert original(x).dtype == fixed(x).dtype
    assert torch.equal(original(x), fixed(x))


@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_cuda_grad_scaler_steps_the_same():
    source = "import torch\n\nmade = torch.cuda.amp.GradScaler(init_scale=2.0 ** 8, growth_interval=1)\n"
    states = []
    for scaler in _pair(source)[:2]:
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 1).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(3):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(torch.randn(2, 4, device="cuda")).float().pow(2).mean() * (1e30 if step == 1 else 1)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
        states.append((scaler.get_scale(), [p.detach().clone() for p in model.parameters()]))
    (scale_a, params_a), (scale_b, params_b) = states
    assert scale_a == scale_b
    assert all(torch.equal(a, b) for a, b in zip(params_a, params_b))
