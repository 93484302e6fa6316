"""The PTL501/PTL502 fixes compute what the loops they replace computed: the original and the
fixed code run side by side on two identical models (one parameter without a gradient)."""

from __future__ import annotations

import copy
import textwrap

import pytest
import torch  # pinned by the test extra: a broken install fails here, it never skips

from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import lint_source
from ptlint.front.api import check_text, fix_text


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
        self.unused = torch.nn.Parameter(torch.randn(3))  # never in forward: its grad stays None

    def forward(self, x):
        return self.body(x)


def _model_with_grads(seed: int = 0) -> Net:
    """The same model with the same gradients for the same seed (deepcopy drops gradients)."""
    torch.manual_seed(seed)
    model = Net()
    model(torch.randn(8, 5)).square().mean().backward()
    return model


def _run(code: str, function: str, *args):
    namespace: dict = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    return namespace[function](*args)


def _fixed(code: str, codes: list[str]) -> str:
    fixed = fix_text(code, codes, unsafe=True)
    assert fixed != code, "the fix was not applied"
    assert not [f for f in check_text(fixed, codes)], fixed
    return fixed


def _assert_same_parameters(a: torch.nn.Module, b: torch.nn.Module) -> None:
    assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]
    for (name, x), (_, y) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(x, y), name
        if x.grad is None:
            assert y.grad is None, name
        else:
            assert torch.equal(x.grad, y.grad), name


STEP_CASES = {
    "add-alpha-guarded": """
        import torch

        def step(model, lr):
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-lr)
        """,
    "data-minus-equals-continue": """
        def step(model, lr):
            params = list(model.parameters())
            for p in params:
                if p.grad is None:
                    continue
                p.data -= lr * p.grad
        """,
    "named-parameters-data-add": """
        def step(model, lr):
            for name, param in model.named_parameters():
                if param.grad is not None:
                    param.data.add_(param.grad.data, alpha=-lr)
        """,
    "weight-decay-then-step": """
        import torch

        def step(model, lr):
            opt = torch.optim.SGD(model.parameters(), lr=lr, fused=True)
            opt.param_groups[0]["weight_decay"] = 0.01
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.data.mul_(1 - group["lr"] * group["weight_decay"])
                    p.data.add_(p.grad, alpha=-group["lr"])
        """,
}


@pytest.mark.parametrize("name", sorted(STEP_CASES))
def test_ptl501_step_fix_gives_the_same_parameters(name):
    code = textwrap.dedent(STEP_CASES[name])
    fixed = _fixed(code, ["PTL501"])
    assert "_foreach_" in fixed
    original_model = _model_with_grads()
    fixed_model = _model_with_grads()
    assert fixed_model.unused.grad is None
    before = [p.detach().clone() for p in original_model.parameters()]
    _run(code, "step", original_model, 0.1)
    _run(fixed, "step", fixed_model, 0.1)
    _assert_same_parameters(original_model, fixed_model)
    # the step did something, and left the parameter without a gradient alone
    changed = [not torch.equal(b, p) for b, p in zip(before, original_model.parameters())]
    assert changed == [False, True, True, True, True]  # `unused` comes first


EMA_CASES = {
    "lerp": """
        import torch

        @torch.no_grad()
        def update(ema, model, decay):
            for ema_p, p in zip(ema.parameters(), model.parameters()):
                ema_p.lerp_(p, 1 - decay)
        """,
    "mul-then-add": """
        import torch

        def update(ema, model, decay):
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.mul_(decay).add_(p, alpha=1 - decay)
        """,
}


@pytest.mark.parametrize("name", sorted(EMA_CASES))
def test_ptl501_ema_fix_gives_the_same_average(name):
    code = textwrap.dedent(EMA_CASES[name])
    fixed = _fixed(code, ["PTL501"])
    model = _model_with_grads(seed=1)
    torch.manual_seed(2)
    ema_original = Net()
    ema_fixed = copy.deepcopy(ema_original)
    for _ in range(3):
        _run(code, "update", ema_original, model, 0.9)
        _run(fixed, "update", ema_fixed, model, 0.9)
    for x, y in zip(ema_original.parameters(), ema_fixed.parameters()):
        torch.testing.assert_close(x, y, rtol=0, atol=1e-7)


ZERO_CASES = {
    "guarded": """
        def zero(model):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
        """,
    "param-groups-data": """
        import torch

        def zero(model):
            opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.grad.data.zero_()
        """,
}


@pytest.mark.parametrize("name", sorted(ZERO_CASES))
def test_ptl502_fix_zeroes_the_same_gradients(name):
    code = textwrap.dedent(ZERO_CASES[name])
    fixed = fix_text(code, ["PTL502"])  # a safe fix
    assert "_foreach_zero_" in fixed and not check_text(fixed, ["PTL502"])
    original_model = _model_with_grads()
    fixed_model = _model_with_grads()
    grads = [p.grad for p in fixed_model.parameters()]
    _run(code, "zero", original_model)
    _run(fixed, "zero", fixed_model)
    _assert_same_parameters(original_model, fixed_model)
    # zeroed in place (the same tensors), and the missing gradient is still missing
    assert all(p.grad is g for p, g in zip(list(fixed_model.parameters())[1:], grads[1:]))
    assert all(g is not None and not g.any() for g in grads[1:])
    assert fixed_model.unused.grad is None


def test_ptl501_fix_iterates_a_generator_once():
    code = textwrap.dedent("""
        import torch

        def step(model, lr):
            with torch.no_grad():
                for p in filter(lambda t: t.requires_grad, model.parameters()):
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-lr)
        """)
    fixed = _fixed(code, ["PTL501"])
    model = _model_with_grads()
    expected = _model_with_grads()
    _run(code, "step", expected, 0.5)
    calls = []

    class CountingModel:
        def parameters(self):
            calls.append(1)
            return model.parameters()  # a generator: a second pass over it would see nothing

    _run(fixed, "step", CountingModel(), 0.5)
    assert len(calls) == 1
    _assert_same_parameters(expected, model)


@pytest.mark.parametrize("index", range(len(all_rules()["PTL501"].bad_examples)))
def test_ptl501_is_silent_in_test_code(index):
    """Per-parameter loops in tests (checking an EMA, a gradient scale) cost nothing worth a finding."""
    rule = all_rules()["PTL501"]
    example = rule.bad_examples[index]
    assert check_text(example, ["PTL501"]), "the example must be a finding outside test code"
    assert lint_source(SourceFile("tests/test_updates.py", example), [rule], test_code=True) == []


def test_ptl501_says_whether_it_updates_parameters_or_gradients():
    grads = "def f(model, s):\n    for p in model.parameters():\n        p.grad.mul_(s)\n"
    both = "def f(model, s):\n    for p in model.parameters():\n        p.grad.mul_(s)\n        p.add_(p.grad)\n"
    [finding] = check_text(grads, ["PTL501"])
    assert finding.message.startswith("this loop scales or clips each gradient in place")
    assert finding.fix.message == "Update all gradients with `torch._foreach_*` calls"
    [finding] = check_text(both, ["PTL501"])
    assert finding.message.startswith("this loop updates each parameter in place")
    assert finding.fix.message == "Update all parameters with `torch._foreach_*` calls"
