"""PTL104's silence where the step copies a tensor built on the host anyway, and PTL107's silence
in a loop that counts something other than data: each spelling that decides it."""

from __future__ import annotations

import pytest

from ptlint.front.api import check_text

LOOP = """
import torch
import torch as th
import numpy as np
from torch.utils.data import DataLoader

def train(model, dataset, device, opt, helper, n):
    loader = DataLoader(dataset, batch_size=32, pin_memory=True)
    for x, y in loader:
        x = x.to(device)
        {other}
        loss = model(x, y).sum()
        loss.backward()
        opt.step()
"""


def ptl104_lines(other: str) -> list[int]:
    return [f.line for f in check_text(LOOP.format(other=other), ["PTL104"])]


@pytest.mark.parametrize("other", [
    "lengths = torch.IntTensor([n] * x.size(0)).to(device)",
    "lengths = torch.tensor(n).long().to(device)",
    "noise = torch.from_numpy(np.ones(3)).cuda()",
    "mask = th.zeros(3).to(device)",
    "ids = torch.LongTensor(y).cuda(device)",
    "ids = torch.LongTensor(y).cuda()\n        if n > 3:\n            pass",  # a branch after it is passed over
])
def test_a_host_built_tensor_copied_in_the_same_step_keeps_the_batch_copy_silent(other):
    assert ptl104_lines(other) == []


@pytest.mark.parametrize("other", [
    "pass",
    "mask = torch.ones(3, device=device).to(device)",           # made on the device
    "mask = torch.ones(3).to(device, non_blocking=True)",       # does not wait
    "mask = np.zeros(3)",                                       # not a tensor copy
    "mask = helper.tensor(n).to(device)",                       # not torch's
    "if n > 3:\n            mask = torch.ones(3).to(device)",   # on some steps only
    "for _ in range(2):\n            mask = torch.ones(3).to(device)",  # a loop of its own
    "mask = torch.ones(3).to('cpu')",                           # a copy to the CPU
])
def test_otherwise_the_blocking_batch_copy_is_reported(other):
    assert ptl104_lines(other) == [10]


EVAL = """
import torch

def sample(generator, test_x, n_classes, max_steps, xs, val_loader):
    generator.eval()
    for {target} in {iterable}:
        out = generator(test_x)
    generator.train()
"""


@pytest.mark.parametrize("target, iterable", [("i", "range(n_classes)"), ("i, c", "enumerate(range(10))")])
def test_an_eval_loop_that_counts_something_else_is_silent(target, iterable):
    assert check_text(EVAL.format(target=target, iterable=iterable), ["PTL107"]) == []


@pytest.mark.parametrize("target, iterable", [
    ("step", "range(max_steps)"), ("i", "range(len(val_loader))"), ("x", "xs"), ("i, batch", "enumerate(val_loader)"),
])
def test_an_eval_loop_over_data_or_steps_is_reported(target, iterable):
    assert [f.line for f in check_text(EVAL.format(target=target, iterable=iterable), ["PTL107"])] == [7]
