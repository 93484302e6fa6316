"""PTL110's fix run for real: the original and the fixed function give the same numbers, and the
fixed buffer lives on the device the function was given, which is why the fix is unsafe.

On the CPU both versions compute on the host; the `meta` device stands in for an accelerator: it
accepts the copies into the buffer and keeps every later op of the buffer on itself, as CUDA
would, and like CUDA it refuses `.numpy()`.
"""

from __future__ import annotations

import pytest
import torch  # pinned by the test extra: a broken install fails here, it never skips

from ptlint.front.api import check_text, fix_text

VALIDATE = '''
import torch

@torch.no_grad()
def validate(model, loader, device, max_iters):
    model.eval()
    losses = torch.zeros(min(len(loader), max_iters))
    for k, (x, y) in enumerate(loader):
        if k >= max_iters:
            break
        logits = model(x.to(device))
        losses[k] = torch.nn.functional.cross_entropy(logits, y.to(device))
    model.train()
    return losses.mean()
'''

FABRIC = '''
import torch
from torch import full

class Fabric:
    device = "cpu"

def evaluate(fabric, model, loader):
    scores = full((len(loader), 2), float("nan"), dtype=torch.float64)
    for i, (x, y) in enumerate(loader):
        out = model(x)
        scores[i, 0] = out.max()
        scores[i, 1].copy_(out.softmax(-1)[:, 0].mean())
    return scores
'''


def batches(n=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 3, generator=generator), torch.randint(0, 2, (4,), generator=generator)) for _ in range(n)]


def load(source: str):
    namespace: dict = {}
    exec(compile(source, "<case>", "exec"), namespace)
    return namespace


def test_validate_fix_keeps_the_numbers():
    [finding] = check_text(VALIDATE, ["PTL110"])
    assert finding.fix is not None and finding.fix.applicability == "unsafe"
    assert fix_text(VALIDATE, ["PTL110"]) == VALIDATE
    fixed = fix_text(VALIDATE, ["PTL110"], unsafe=True)
    assert "losses = torch.zeros(min(len(loader), max_iters), device=device)" in fixed
    assert check_text(fixed, ["PTL110"]) == []
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    loader = batches()
    before = load(VALIDATE)["validate"](model, loader, "cpu", 4)
    after = load(fixed)["validate"](model, loader, "cpu", 4)
    assert after.dtype == before.dtype and after.device == before.device
    assert torch.equal(after, before)


def test_fixed_buffer_moves_what_the_function_returns():
    # Why the fix is unsafe: with a model on a device, the caller now gets a tensor on that
    # device (the original returned a host tensor), and `.numpy()` of it raises.
    fixed = fix_text(VALIDATE, ["PTL110"], unsafe=True)
    model = torch.nn.Linear(3, 2, device="meta")
    on_device = load(fixed)["validate"](model, batches(), "meta", 3)
    assert on_device.device.type == "meta"
    with pytest.raises(TypeError):
        on_device.numpy()
    on_host = load(VALIDATE)["validate"](torch.nn.Linear(3, 2), batches(), "cpu", 3)
    assert on_host.device.type == "cpu"
    on_host.numpy()


def test_fabric_device_fix_keeps_the_numbers():
    findings = check_text(FABRIC, ["PTL110"])
    assert [f.line for f in findings] == [12, 13]
    fixed = fix_text(FABRIC, ["PTL110"], unsafe=True)
    assert 'full((len(loader), 2), float("nan"), dtype=torch.float64, device=fabric.device)' in fixed
    torch.manual_seed(1)
    model = torch.nn.Linear(3, 2)
    loader = batches(seed=1)
    before = load(FABRIC)["evaluate"](load(FABRIC)["Fabric"](), model, loader)
    namespace = load(fixed)
    after = namespace["evaluate"](namespace["Fabric"](), model, loader)
    assert after.dtype == before.dtype == torch.float64
    assert torch.equal(after, before)


def test_no_fix_where_the_buffer_goes_to_numpy():
    source = VALIDATE.replace("return losses.mean()", "return losses.numpy().mean()")
    [finding] = check_text(source, ["PTL110"])
    assert finding.fix is None
    assert fix_text(source, ["PTL110"], unsafe=True) == source
