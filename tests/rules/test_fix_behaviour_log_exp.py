"""The PTL305 and PTL307 fixes keep behaviour: original and fixed code run side by side with torch
on the CPU.

On ordinary inputs both agree, in float32, float16 and bfloat16. Where the original breaks —
`exp` overflowing to inf, `1 + x` rounding `x` away, a saturated sigmoid that `BCELoss` clamps at
100 — the breakage is checked first (so that the comparison means something), and the fixed code
gives the value a float64 reference computes."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

from ptlint.front.api import check_text, fix_text


def _function(source: str):
    namespace: dict = {}
    exec(compile(source, "<case>", "exec"), namespace)
    return namespace["f"]


def _pair(code: str, source: str):
    fixed = fix_text(source, [code])
    assert fixed != source, "the fix must apply"
    assert not check_text(fixed, [code]), "the fixed code must not be reported again"
    return _function(source), _function(fixed)


def softplus64(x):
    x = x.double()
    return torch.where(x > 30, x, torch.log1p(torch.exp(x.clamp(max=30))))


HEADER = "import torch\nimport torch.nn.functional as F\n\ndef f(x):\n    return "
SOFTPLUS = [
    ("torch.log(1 + torch.exp(x))", softplus64),
    ("torch.log1p(torch.exp(x))", softplus64),
    ("x.exp().log1p()", softplus64),
    ("torch.log(torch.exp(x) + 1.0)", softplus64),
    ("torch.log(1 + torch.exp(-x))", lambda x: softplus64(-x)),
]
# where exp overflows: float32 and bfloat16 above 88.7, float16 above 11.1
OVERFLOW = {torch.float32: (89.0, 400.0), torch.bfloat16: (89.0, 400.0), torch.float16: (11.5, 60.0)}
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
DTYPES = sorted(OVERFLOW, key=str)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("expression,reference", SOFTPLUS, ids=[e for e, _ in SOFTPLUS])
def test_softplus_fix(expression, reference, dtype):
    original, fixed = _pair("PTL305", HEADER + expression + "\n")
    torch.manual_seed(0)
    # ordinary inputs: the same values (each rounded to the dtype)
    x = (torch.randn(64) * 3).to(dtype)
    tolerance = TOLERANCE[dtype]
    assert fixed(x).dtype == original(x).dtype == dtype
    assert torch.allclose(fixed(x).double(), original(x).double(), rtol=tolerance, atol=tolerance)
    assert torch.allclose(fixed(x).double(), reference(x), rtol=tolerance, atol=tolerance)
    # large magnitudes: the original overflows, the fix stays finite and right
    low, high = OVERFLOW[dtype]
    big = torch.linspace(low, high, 32).to(dtype)
    big = -big if "-x" in expression else big
    assert torch.isinf(original(big)).all(), "the original must overflow here, or this test proves nothing"
    assert torch.isfinite(fixed(big)).all()
    assert torch.allclose(fixed(big).double(), reference(big), rtol=tolerance, atol=tolerance)


def test_softplus_fix_keeps_the_gradient_finite():
    original, fixed = _pair("PTL305", HEADER + "torch.log(1 + torch.exp(x))\n")
    for function, expected_finite in ((original, False), (fixed, True)):
        x = torch.tensor([100.0, 0.0, -5.0], requires_grad=True)
        function(x).sum().backward()
        assert bool(torch.isfinite(x.grad).all()) == expected_finite
    x = torch.tensor([100.0, 0.0, -5.0], requires_grad=True)
    fixed(x).sum().backward()
    assert torch.allclose(x.grad, torch.sigmoid(x.detach()), atol=1e-6)


def test_guarded_softplus_in_where_breaks_in_float16_and_the_fix_does_not():
    """`torch.where(g > 20, g, log(1 + exp(g)))` (a transformers gate): the guard keeps float32
    finite, but in float16 exp overflows from 11.1 on, below the guard's threshold."""
    source = HEADER + "torch.where(x > 20.0, x, torch.log(1.0 + torch.exp(x)))\n"
    original, fixed = _pair("PTL305", source)
    g = torch.tensor([0.5, 12.0, 15.0, 25.0], dtype=torch.float16)
    assert torch.isinf(original(g)).any()
    assert torch.allclose(fixed(g).double(), softplus64(g), rtol=2e-3)


SMALL = [
    ("torch.log(1 + x)", lambda x: torch.log1p(x.double())),
    ("(x + 1).log()", lambda x: torch.log1p(x.double())),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("expression,reference", SMALL, ids=[e for e, _ in SMALL])
def test_log1p_fixes(expression, reference, dtype):
    original, fixed = _pair("PTL305", HEADER + expression + "\n")
    torch.manual_seed(0)
    tolerance = TOLERANCE[dtype]
    x = (torch.rand(64) * 3 - 0.5).to(dtype)  # ordinary inputs in (-0.5, 2.5)
    assert fixed(x).dtype == original(x).dtype == dtype
    assert torch.allclose(fixed(x).double(), original(x).double(), rtol=4 * tolerance, atol=4 * tolerance)
    assert torch.allclose(fixed(x).double(), reference(x), rtol=4 * tolerance, atol=4 * tolerance)
    # small inputs: `1 + x` rounds x away in the original; the fix keeps its relative precision
    tiny = torch.logspace(-9, -6, 16).to(dtype) if dtype == torch.float32 else torch.logspace(-5, -4, 16).to(dtype)
    expected = reference(tiny)
    error_before = ((original(tiny).double() - expected) / expected).abs().max()
    error_after = ((fixed(tiny).double() - expected) / expected).abs().max()
    assert error_before > 0.05, "the original must lose precision here, or this test proves nothing"
    assert error_after < tolerance


def _expm1_64(x):
    return torch.expm1(x.double())


# the forms PTL305 reports: exp(x) - 1 followed by a cancellation or a division
EXPM1 = [
    ("(torch.exp(x) - 1) / x", lambda x: _expm1_64(x) / x.double()),
    ("x / (x.exp() - 1.0)", lambda x: x.double() / _expm1_64(x)),
    ("(torch.exp(x) - 1 - x) / x", lambda x: (_expm1_64(x) - x.double()) / x.double()),
    ("torch.exp(x) - x - 1", lambda x: _expm1_64(x) - x.double()),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("expression,reference", EXPM1, ids=[e for e, _ in EXPM1])
def test_expm1_fixes(expression, reference, dtype):
    original, fixed = _pair("PTL305", HEADER + expression + "\n")
    torch.manual_seed(0)
    tolerance = TOLERANCE[dtype]
    x = (torch.rand(64) * 2 + 0.5).to(dtype)  # ordinary inputs in (0.5, 2.5): the same values
    assert fixed(x).dtype == original(x).dtype == dtype
    assert torch.allclose(fixed(x).double(), original(x).double(), rtol=8 * tolerance)
    assert torch.allclose(fixed(x).double(), reference(x), rtol=8 * tolerance)
    # small inputs (|x| up to 1e-5 in float32, 3e-2 in float16 and bfloat16): the original loses
    # several per cent or all of its digits, the fix ten times fewer at least (`expm1(x) - x`
    # still cancels, less: its relative error is about eps / |x| where the original's is eps / x**2)
    scale = 1e-5 if dtype == torch.float32 else 3e-2
    small = (torch.linspace(-1, 1, 33) * scale).to(dtype)
    small = small[small != 0]
    expected = reference(small)
    error_before = ((original(small).double() - expected) / expected).abs().max()
    error_after = ((fixed(small).double() - expected) / expected).abs().max()
    assert error_before > 0.02, "the original must lose precision here, or this test proves nothing"
    assert error_after < error_before / 10


def test_integer_input_is_reported_but_not_rewritten_to_softplus():
    """`exp` promotes an integer tensor to float; `softplus` refuses it: no fix there."""
    source = HEADER + "torch.log(1 + torch.exp(torch.arange(3)))\n"
    assert check_text(source, ["PTL305"])
    assert fix_text(source, ["PTL305"]) == source
    with pytest.raises(RuntimeError):
        F.softplus(torch.arange(3))


# -- PTL307 ---------------------------------------------------------------------------------

def bce64(x, y, weight=None, reduction="mean"):
    return F.binary_cross_entropy_with_logits(x.double(), y.double(), None if weight is None else weight.double(),
                                              reduction=reduction)


BCE = [
    ("F.binary_cross_entropy(torch.sigmoid(x), y)", {}),
    ("F.binary_cross_entropy(x.sigmoid(), y, w)", {"weight": True}),
    ("F.binary_cross_entropy(torch.special.expit(x), y, weight=w, reduction='sum')", {"weight": True, "reduction": "sum"}),
    ("torch.nn.BCELoss(reduction='none')(torch.sigmoid(x), y)", {"reduction": "none"}),
    ("torch.nn.BCELoss(w)(F.sigmoid(x), y)", {"weight": True}),
]


def _bce_function(expression: str):
    source = f"import torch\nimport torch.nn.functional as F\n\ndef f(x, y, w):\n    return {expression}\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # F.sigmoid is deprecated
        return _pair("PTL307", source)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("expression,options", BCE, ids=[e for e, _ in BCE])
def test_bce_fix_agrees_where_the_sigmoid_is_accurate(expression, options, dtype):
    original, fixed = _bce_function(expression)
    torch.manual_seed(0)
    x = (torch.randn(4, 16) * 2).clamp(-4, 4).to(dtype)
    y = torch.randint(0, 2, (4, 16)).to(dtype)
    w = torch.rand(4, 16).to(dtype) + 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before, after = original(x, y, w), fixed(x, y, w)
    assert before.shape == after.shape and before.dtype == after.dtype == dtype
    tolerance = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 5e-2}[dtype]
    assert torch.allclose(before.double(), after.double(), rtol=tolerance, atol=tolerance)
    reference = bce64(x, y, w if options.get("weight") else None, options.get("reduction", "mean"))
    assert torch.allclose(after.double(), reference, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype,saturates_at", [(torch.float32, 16.7), (torch.float16, 8.4), (torch.bfloat16, 6.3)],
                         ids=str)
def test_bce_clamp_where_the_sigmoid_saturates(dtype, saturates_at):
    """What BCELoss's clamp does: once sigmoid(x) rounds to 1 (target 0), `log(1 - p)` is -inf,
    clamped at -100: the original reports 100 whatever x is, with a zero gradient (float32,
    bfloat16) or a nan one (float16: the backward's 1e-12 epsilon underflows); the fixed code gives
    the true loss, x, and the gradient 1."""
    original, fixed = _bce_function("F.binary_cross_entropy(torch.sigmoid(x), y, reduction='none')")
    x = torch.tensor([saturates_at, 20.0, 40.0], dtype=dtype, requires_grad=True)
    y = torch.zeros(3, dtype=dtype)
    before = original(x, y, None)
    assert torch.equal(before.detach().float(), torch.full((3,), 100.0))  # the clamp, not the loss
    before.sum().backward()
    expected = torch.full_like(x.grad, float("nan") if dtype == torch.float16 else 0.0)
    assert torch.equal(x.grad, expected) or (dtype == torch.float16 and torch.isnan(x.grad).all())
    x.grad = None
    after = fixed(x, y, None)
    assert torch.allclose(after.detach().double(), x.detach().double(), rtol=1e-2)
    after.sum().backward()
    assert torch.allclose(x.grad.float(), torch.ones(3))


def test_bce_kept_in_a_variable_or_a_module_on_self_is_not_rewritten():
    source = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"
              "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.bce = nn.BCELoss()\n\n    def forward(self, x, y):\n"
              "        p = torch.sigmoid(x)\n        return F.binary_cross_entropy(p, y) + self.bce(torch.sigmoid(x), y), p\n")
    assert len(check_text(source, ["PTL307"])) == 2
    assert fix_text(source, ["PTL307"]) == source
