"""What the rules rely on that their examples cannot show: facts about torch that decide whether a
fix is safe (checked on this torch, so that a change in torch shows up here), a property of the
numerics fixes over any shape and dimension, and what PTL501 says and where it is silent. The
fixes themselves run side by side in their own examples' inputs (test_fix_examples_run.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import lint_source
from ptlint.front.api import check_text, fix_text

LAST_BIT = {torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}


def _function(source: str, name: str = "f"):
    namespace: dict = {}
    exec(compile(source, "<case>", "exec"), namespace)
    return namespace[name]


# -- the optimizer fixes (PTL501, PTL502) ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_foreach_mul_of_half_floats_by_a_python_number_rounds_differently(dtype):
    """The rounding difference PTL501's inputs allow is real (so the fix stays unsafe), and only
    that; a 0-dim tensor factor and division give the loop's bits."""
    torch.manual_seed(0)
    p = torch.randn(1000).to(dtype)
    loop, foreach = p.clone(), p.clone()
    loop.mul_(0.37)
    torch._foreach_mul_([foreach], 0.37)
    assert not torch.equal(loop, foreach)
    assert torch.allclose(loop.float(), foreach.float(), rtol=LAST_BIT[dtype], atol=0)
    for loop_op, foreach_op, factor in [(torch.Tensor.mul_, torch._foreach_mul_, torch.tensor(0.37)),
                                        (torch.Tensor.div_, torch._foreach_div_, 0.37)]:
        loop, foreach = p.clone(), p.clone()
        loop_op(loop, factor)
        foreach_op([foreach], factor)
        assert torch.equal(loop, foreach)


def test_foreach_functions_refuse_an_empty_list():
    """Why the optimizer fixes guard their calls with `if <list>:`."""
    with pytest.raises(RuntimeError, match="at least one tensor"):
        torch._foreach_zero_([])


def test_a_repeated_tensor_is_updated_otherwise_by_foreach_calls():
    """Why a loop over lists a function receives (SB3's `polyak_update`) gets no fix: the loop
    meets a repeated tensor once per occurrence, each time through the whole body; the foreach
    calls apply one operation to every tensor before the next."""
    torch.manual_seed(0)
    shared, other = torch.randn(4), torch.randn(4)
    loop_target = [shared.clone()] * 2
    foreach_target = [shared.clone()] * 2
    sources = [other, other]
    for param, target_param in zip(sources, loop_target, strict=True):
        target_param.mul_(1 - 0.37)
        torch.add(target_param, param, alpha=0.37, out=target_param)
    torch._foreach_mul_(foreach_target, 1 - 0.37)
    torch._foreach_add_(foreach_target, sources, alpha=0.37)
    assert not torch.equal(loop_target[0], foreach_target[0])
    unfixed = [e for e in all_rules()["PTL501"].unfixable_examples if "polyak_update(params, target_params" in e]
    assert unfixed, "PTL501 must keep its unfixable polyak_update example"


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


# -- the numerics fixes (PTL301-PTL305) ----------------------------------------------------------

def test_softmax_without_keepdim_is_another_function():
    """Why PTL301 needs keepdim=True: without it the division broadcasts along another axis."""
    x = torch.randn(3, 3)
    assert not torch.allclose(torch.exp(x) / torch.exp(x).sum(1), torch.softmax(x, dim=1))


def test_integer_tensors():
    """`exp` promotes integer tensors to float; `softmax` and `softplus` refuse them, so PTL301
    and PTL305 leave visibly integer inputs alone (their declined examples)."""
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.softmax(torch.arange(12).reshape(3, 4), dim=-1)
    with pytest.raises(RuntimeError):
        F.softplus(torch.arange(3))


SPELLINGS = {
    "PTL301": ["torch.exp(x) / torch.exp(x).sum({d}, keepdim=True)",
               "x.exp() / x.exp().sum(dim={d}, keepdim=True)",
               "torch.exp(x) / torch.sum(torch.exp(x), {d}, keepdim=True)"],
    "PTL302": ["torch.log(F.softmax(x, {d}))", "x.softmax({d}).log()", "torch.log(torch.softmax(x, dim={d}))",
               "F.softmax(x, dim={d}).log()"],
    "PTL303": ["torch.log(torch.exp(x).sum({d}{k}))", "x.exp().sum({d}{k}).log()",
               "torch.log(torch.sum(torch.exp(x), dim={d}{k}))"],
}


@settings(max_examples=60, deadline=None)
@given(code=st.sampled_from(sorted(SPELLINGS)), data=st.data())
def test_numerics_fixes_keep_behaviour_for_any_shape_and_dim(code, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4), label="shape"))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    keepdim = data.draw(st.sampled_from(["", ", keepdim=True", ", keepdim=False"]), label="keepdim")
    expression = data.draw(st.sampled_from(SPELLINGS[code]), label="spelling").format(d=dim, k=keepdim)
    source = f"import torch\nimport torch.nn.functional as F\n\ndef f(x):\n    return {expression}\n"
    fixed_source = fix_text(source, [code])
    assert fixed_source != source
    x = torch.randn(shape)
    before, after = _function(source)(x), _function(fixed_source)(x)
    assert before.shape == after.shape
    assert torch.allclose(before, after, rtol=1e-5, atol=1e-6)


def test_ptl304_pattern_really_broadcasts_to_a_matrix():
    """The PTL304 premise: `(N, 1) - (N,)` silently gives `(N, N)`, and the mean is a different
    number from the residual mean the code meant; the good example's shapes do not."""
    source = "import torch\n\ndef f(pred, target):\n    return (pred.view(-1, 1) - target.view(-1)).pow(2).mean()\n"
    assert [f.code for f in check_text(source, ["PTL304"])] == ["PTL304"]
    pred, target = torch.randn(5, 1), torch.randn(5)
    assert (pred.view(-1, 1) - target.view(-1)).shape == (5, 5)
    assert not torch.allclose(_function(source)(pred, target), (pred.view(-1) - target).pow(2).mean())
    quiet = "import torch\n\ndef f(x):\n    return (x - x.mean(0)).pow(2).mean()\n"
    assert check_text(quiet, ["PTL304"]) == []
    x = torch.randn(4, 3)
    assert (x - x.mean(0)).shape == x.shape


# -- the transfer fixes (PTL104) -----------------------------------------------------------------

def test_a_non_blocking_copy_gives_the_same_tensor():
    """PTL104's premise: `non_blocking=True` changes when a copy completes, not what it holds."""
    batch = torch.arange(12, dtype=torch.float16).reshape(3, 4).t()  # non-contiguous
    blocking = batch.to("cpu")
    queued = batch.to("cpu", non_blocking=True)
    assert torch.equal(blocking, queued) and blocking.dtype == queued.dtype and blocking.stride() == queued.stride()
