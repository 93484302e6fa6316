"""What torch.compile traces in a project that compiles its model: not the loss modules."""

from __future__ import annotations

from ptlint.front.api import check_text

LOSSES = """
import torch
import torch.nn as nn

class MultiStepMasks(nn.Module):
    def forward(self, pred, gt):
        if pred.abs().max() > 10:
            pred = pred.clamp(-10, 10)
        return (pred - gt).abs().mean()

model = torch.compile(nn.Linear(4, 4))
"""


def test_module_classes_of_a_losses_file_are_not_traced():
    assert [f.line for f in check_text(LOSSES, ["PTL403"], path="training/loss_fns.py")] == []
    assert [f.line for f in check_text(LOSSES, ["PTL403"], path="training/losses.py")] == []


def test_module_classes_of_other_files_are_traced():
    assert [f.line for f in check_text(LOSSES, ["PTL403"], path="training/heads.py")] == [7]
    assert [f.line for f in check_text(LOSSES, ["PTL403"], path="training/glossary.py")] == [7]
