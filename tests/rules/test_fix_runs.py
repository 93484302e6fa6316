"""The side-by-side runner (tests/fix_runs.py) tells a fix that keeps behaviour from one that does
not: a runner that agreed with everything would make every fix example's inputs prove nothing."""

from __future__ import annotations

import pytest
import torch
from fix_runs import InputClaimFailed, close, same, side_by_side, snapshot

from ptlint.engine.rule import FixInput

BEFORE = "import torch\n\ndef f(x):\n    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)\n"
AFTER = "import torch\n\ndef f(x):\n    return torch.softmax(x, dim=-1)\n"


def test_a_fix_that_keeps_behaviour_agrees_and_one_that_does_not_disagrees():
    ordinary = FixInput("ordinary", "result = f(torch.randn(4, 6))", tolerance=1e-6)
    assert side_by_side(BEFORE, AFTER, ordinary)[0]
    wrong = AFTER.replace("dim=-1", "dim=0")
    assert not side_by_side(BEFORE, wrong, ordinary)[0]


def test_an_exception_on_one_side_only_disagrees():
    raising = "def f(x):\n    raise ValueError('no')\n"
    agree, described = side_by_side(BEFORE, raising, FixInput("x", "result = f(torch.randn(3))"))
    assert not agree and "ValueError" in described
    both = FixInput("x", "result = f(None)")
    assert side_by_side(raising, raising, both)[0]
    assert not side_by_side(raising, "def f(x):\n    raise TypeError\n", both)[0]


def test_a_fix_that_forgot_an_import_fails_though_the_input_has_torch():
    forgot = "def f(x):\n    return torch.softmax(x, dim=-1)\n"
    agree, described = side_by_side(BEFORE, forgot, FixInput("x", "result = f(torch.randn(2, 3))", tolerance=1e-6))
    assert not agree and "NameError" in described


def test_a_check_replaces_the_comparison_and_sees_both_runs():
    huge = FixInput("huge", "x = torch.randn(4, 6) * 300 + 200\nresult = f(x)",
                    check="not finite(before) and finite(after) and after.shape == x.shape")
    assert side_by_side(BEFORE, AFTER, huge)[0]
    assert not side_by_side(AFTER, BEFORE, huge)[0]
    errors = FixInput("e", "result = f(None)", check="before_error == 'TypeError' and after_error is None")
    assert side_by_side("def f(x):\n    return x + 1\n", "def f(x):\n    return x\n", errors)[0]


def test_an_inputs_own_failing_claim_fails_the_test_in_either_run():
    with pytest.raises(InputClaimFailed):
        side_by_side(BEFORE, AFTER, FixInput("claims", "x = torch.zeros(3)\nassert x.sum() > 0\nresult = f(x)"))


def test_same_compares_values_dtypes_shapes_and_models():
    a = torch.tensor([1.0, float("nan"), 3.0])
    assert same(a, a.clone()) and not same(a, a.double()) and not same(a, a[:2]) and not same(a, [1.0])
    assert not same(a, torch.tensor([1.0, float("nan"), 3.0001]))
    assert same(a, torch.tensor([1.0, float("nan"), 3.0001]), 1e-3)
    half = torch.tensor([1.0, 2.0], dtype=torch.float16)
    nudged = torch.tensor([1.0, 2.001953125], dtype=torch.float16)
    assert same(half, nudged, {"float16": 2 ** -10}) and not same(half, nudged, {"bfloat16": 2 ** -7})
    assert same(torch.arange(3), torch.arange(3), 0.5) and not same(torch.arange(3), torch.arange(1, 4), 0.5)
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 2)
    model(torch.ones(1, 2)).sum().backward()
    first = snapshot(model)
    model.weight.grad.mul_(2)
    assert not same(first, snapshot(model)) and same(first, first)
    assert same({"a": [1, (2.0, None)]}, {"a": [1, (2.0, None)]}) and not same([1], (1,))
    assert same(float("nan"), float("nan")) and not same(1.0, 1.1) and same(1.0, 1.05, 0.1)


def test_close_is_relative_to_the_largest_magnitude_and_keeps_infinities_in_place():
    assert close(torch.tensor([1000.0, 0.0]), torch.tensor([1000.0, 0.5]), 1e-3)
    assert not close(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 0.5]), 1e-3)
    inf = float("inf")
    assert close(torch.tensor([inf, 1.0]), torch.tensor([inf, 1.0]), 0.0)
    assert not close(torch.tensor([inf, 1.0]), torch.tensor([-inf, 1.0]), 1.0)
    assert not close(torch.tensor([inf]), torch.tensor([1.0]), 1.0)
    assert not close(torch.zeros(2), torch.zeros(3), 1.0)
    assert close([torch.ones(1)], [torch.ones(1)], 0.0) and not close([torch.ones(1)], torch.ones(1), 0.0)


def test_a_snapshot_is_taken_right_after_the_run():
    t = torch.ones(2, requires_grad=True)
    copy = snapshot(t * 1)
    assert not copy.requires_grad
    sparse = snapshot(torch.eye(2).to_sparse())
    assert sparse.layout == torch.strided and torch.equal(sparse, torch.eye(2))
