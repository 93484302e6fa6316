"""PTL104's fix (`non_blocking=True` on host-to-device copies of pinned batches) changes nothing
observable: the original and the fixed training loop, run side by side with torch on the CPU (where
`non_blocking` is a no-op and `pin_memory` falls back to ordinary memory), end with the same
parameters and the same losses, for batches of every dtype the loader may yield."""

from __future__ import annotations

import textwrap
import warnings

import pytest
import torch

from ptlint.front.api import check_text, fix_text

LOOP = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader, TensorDataset


    def train(model, inputs, targets, device, batch_size):
        loader = DataLoader(TensorDataset(inputs, targets), batch_size=batch_size, pin_memory=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses = []
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            out = model(x.float())
            loss = torch.nn.functional.cross_entropy(out, y.long())
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses
""")


def run(code: str, inputs, targets, batch_size=4):
    namespace: dict = {}
    exec(compile(code, "<train>", "exec"), namespace)
    torch.manual_seed(0)
    model = torch.nn.Linear(inputs.shape[1], 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator warns and does nothing
        losses = namespace["train"](model, inputs, targets, torch.device("cpu"), batch_size)
    return model, losses


def test_the_fix_is_what_the_rule_offers():
    fixed = fix_text(LOOP, ["PTL104"])
    assert "x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)" in fixed
    assert check_text(fixed, ["PTL104"]) == []


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.uint8],
                         ids=str)
def test_fixed_loop_trains_identically(dtype):
    torch.manual_seed(1)
    inputs = (torch.rand(10, 5) * 4).to(dtype)
    targets = torch.randint(0, 3, (10,), dtype=torch.int32)  # mixed: float data, integer labels
    fixed = fix_text(LOOP, ["PTL104"])
    model_a, losses_a = run(LOOP, inputs, targets)
    model_b, losses_b = run(fixed, inputs, targets)
    assert losses_a == losses_b and len(losses_a) == 3  # batches of 4, 4 and 2
    assert torch.equal(model_a.weight, model_b.weight) and torch.equal(model_a.bias, model_b.bias)


def test_empty_loader_does_nothing_either_way():
    inputs, targets = torch.zeros(0, 5), torch.zeros(0, dtype=torch.long)
    model_a, losses_a = run(LOOP, inputs, targets)
    model_b, losses_b = run(fix_text(LOOP, ["PTL104"]), inputs, targets)
    assert losses_a == losses_b == []
    assert torch.equal(model_a.weight, model_b.weight)


def test_non_blocking_copy_gives_the_same_tensor():
    batch = torch.arange(12, dtype=torch.float16).reshape(3, 4).t()  # non-contiguous
    blocking = batch.to("cpu")
    queued = batch.to("cpu", non_blocking=True)
    assert torch.equal(blocking, queued) and blocking.dtype == queued.dtype and blocking.stride() == queued.stride()
