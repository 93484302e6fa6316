"""PTL202 in an inference program: once-code of a file that runs its model for evaluation and
trains nothing is silent; every spelling of "runs for inference" and of "trains" decides it."""

from __future__ import annotations

import pytest

from ptlint.front.api import check_text

SCRIPT = """
import torch
from torch import nn

def main(opt):
    model = nn.DataParallel(build(opt)).cuda()
    model.load_state_dict(torch.load(opt.checkpoint))
    {marker}
    for batch in loader:
        outputs.append(model(batch.cuda()))
    {extra}

if __name__ == "__main__":
    main(parse())
"""


def lines(marker: str, extra: str = "pass") -> list[int]:
    return [f.line for f in check_text(SCRIPT.format(marker=marker, extra=extra), ["PTL202"])]


@pytest.mark.parametrize("marker", [
    "model.eval()",
    "torch.set_grad_enabled(False)",
    "with torch.no_grad(): pass",
    "with torch.inference_mode(): pass",
    "with torch.autograd.no_grad(): pass",
])
def test_a_file_that_runs_its_model_for_inference_is_silent(marker):
    assert lines(marker) == []


@pytest.mark.parametrize("marker", [
    "pass",                              # nothing says inference: a script whose use is unknown
    "torch.set_grad_enabled(True)",      # recording on
    "torch.set_grad_enabled(mode)",      # a flag
    "torch.set_grad_enabled()",          # no argument
    "with torch.enable_grad(): pass",    # recording on
    "model.eval(mode)",                  # not a module's eval()
])
def test_without_a_visible_inference_mode_it_is_reported(marker):
    assert lines(marker) == [6]


@pytest.mark.parametrize("extra", [
    "loss.backward()",
    "optimizer.zero_grad()",
    "optimizer.step()",
    "opt.step()",
    "model.train()",
    "train_one_epoch(model, loader)",
    "trainer.fit(model)",
    "finetune(model)",
    "pretrain_encoder(model)",
    "optim = torch.optim.SGD(model.parameters(), lr=0.1)",
])
def test_a_file_that_also_trains_is_reported(extra):
    assert lines("model.eval()", extra) == [6]


@pytest.mark.parametrize("extra", ["scheduler.step()", "env.step(action)", "step(batch)", "evaluate(model)",
                                   "trainset = load()", "callbacks[0]()"])
def test_steps_that_train_nothing_keep_it_silent(extra):
    assert lines("model.eval()", extra) == []


def test_a_helper_other_code_calls_is_reported_even_in_an_inference_file():
    text = """
import torch
from torch import nn

def wrap_for_eval(model):
    return nn.DataParallel(model).eval()
"""
    # no caller in the file: its callers (elsewhere) may train; "wrap" is not an option word here
    assert [f.line for f in check_text(text.replace("wrap_for_eval", "evaluator"), ["PTL202"])] == [6]


@pytest.mark.parametrize("text, spans", [
    ("import torch\nm = torch.nn.DataParallel(net)\n", [(2, 5, 2, 26, "torch.nn.DataParallel")]),
    ("from torch import nn\nwrap = nn.DataParallel if many else nn.Identity\n", [(2, 8, 2, 23, "nn.DataParallel")]),
    ("from torch.nn import DataParallel as DP\nclass P(DP):\n    pass\nm = P(net)\n", [(4, 5, 4, 6, "P")]),
])
def test_the_finding_names_the_spelling_and_spans_the_class(text, spans):
    found = [(f.line, f.column, f.end_line, f.end_column, f.message) for f in check_text(text, ["PTL202"])]
    assert found == [(line, column, end_line, end_column,
                      f"`{name}` is torch.nn.DataParallel: use DistributedDataParallel (one process per GPU)")
                     for line, column, end_line, end_column, name in spans]
