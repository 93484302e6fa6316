"""Code in a branch taken only without a GPU (`else:` of `if torch.cuda.is_available():`) waits
for no device and copies to none: the sync and transfer rules stay silent there, and only there."""

from __future__ import annotations

import textwrap

import pytest

from ptlint.front.api import check_text

STEP = """
import torch

def count_acc(logits, label, use_cuda):
    pred = torch.argmax(logits, dim=1)
    {branch}

def train(model, loader, opt, use_cuda):
    model.cuda()
    for x, y in loader:
        logits = model(x.cuda())
        loss = torch.nn.functional.cross_entropy(logits, y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
        meter.add(count_acc(logits, y, use_cuda))
"""


@pytest.mark.parametrize("branch, lines", [
    # the GPU branch reads, the CPU one does not wait
    ("if torch.cuda.is_available():\n        return (pred == label).float().mean().item()\n"
     "    else:\n        return (pred == label).float().mean().item()", [7]),
    ("if not torch.cuda.is_available():\n        return (pred == label).float().mean().item()\n"
     "    else:\n        return (pred == label).float().mean().item()", [9]),
    ("return (pred == label).float().mean().item() if use_cuda else (pred == label).float().mean().item()", [6]),
    ("if use_cuda:\n        return (pred == label).float().mean().item()\n"
     "    else:\n        return (pred == label).float().mean().item()", [7]),
    # a count of GPUs is no question of whether there is one
    ("if torch.cuda.device_count() > 1:\n        return (pred == label).float().mean().item()\n"
     "    else:\n        return (pred == label).float().mean().item()", [7, 9]),
])
def test_a_read_in_a_branch_taken_without_a_gpu_is_silent(branch, lines):
    found = [f.line for f in check_text(STEP.format(branch=branch), ["PTL101"])]
    assert found == lines


def test_a_copy_in_the_cpu_branch_is_silent_and_in_the_gpu_branch_reported():
    text = textwrap.dedent("""
        import torch

        def step(model, x, opt):
            if torch.cuda.is_available():
                noise = torch.randn(4).cuda()
            else:
                noise = torch.randn(4).cuda()
            model(x + noise).sum().backward()
            opt.step()

        def main(model, loader, opt):
            for x in loader:
                step(model, x.cuda(), opt)
    """)
    assert [(f.code, f.line) for f in check_text(text, ["PTL201"])] == [("PTL201", 6)]
