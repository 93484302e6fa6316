"""The PTL301-PTL303 fixes keep behaviour: original and fixed code run side by side on the CPU.

On ordinary inputs both agree; on inputs where the original overflows or underflows (float32
logits of a few hundred) the original gives inf/nan — checked, so that the comparison means
something — and the fixed code gives the finite value a float64 reference computes."""

from __future__ import annotations

import pytest
import torch  # pinned by the test extra: a broken install fails here, it never skips
from hypothesis import given, settings
from hypothesis import strategies as st

from ptlint.front.api import check_text, fix_text


def _function(source: str):
    namespace: dict = {}
    exec(compile(source, "<case>", "exec"), namespace)
    return namespace["f"]


def softmax64(x, dim):
    return torch.softmax(x.double(), dim)


def log_softmax64(x, dim):
    x = x.double()
    return x - torch.logsumexp(x, dim, keepdim=True)


def lse64(x, dim, keepdim=False):
    return torch.logsumexp(x.double(), dim, keepdim=keepdim)


# (code, source defining f(x), reference in float64, dims of the input)
CASES = [
    ("PTL301", "import torch\n\ndef f(x):\n    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)\n",
     lambda x: softmax64(x, -1), (4, 7)),
    ("PTL301", "import torch as T\n\ndef f(x):\n    return (x * 2).exp() / (x * 2).exp().sum(dim=1, keepdim=True)\n",
     lambda x: softmax64(x * 2, 1), (3, 5, 2)),
    ("PTL301", "from torch import exp, sum\n\ndef f(x):\n    return exp(x) / sum(exp(x), 0, keepdim=True)\n",
     lambda x: softmax64(x, 0), (6, 3)),
    ("PTL302",
     "import torch\nimport torch.nn.functional as F\n\ndef f(x):\n    return torch.log(F.softmax(x, dim=-1))\n",
     lambda x: log_softmax64(x, -1), (4, 9)),
    ("PTL302", "import torch\n\ndef f(x):\n    return x.softmax(1).log()\n",
     lambda x: log_softmax64(x, 1), (2, 8, 3)),
    ("PTL302", "from torch.nn.functional import softmax\n\ndef f(x):\n    return softmax(x, 0).log()\n",
     lambda x: log_softmax64(x, 0), (8, 2)),
    ("PTL302", "import torch\n\ndef f(x):\n    return torch.log(torch.softmax(x, dim=-1))\n",
     lambda x: log_softmax64(x, -1), (5, 5)),
    ("PTL303", "import torch\n\ndef f(x):\n    return torch.log(torch.exp(x).sum(dim=-1))\n",
     lambda x: lse64(x, -1), (4, 7)),
    ("PTL303", "import torch\n\ndef f(x):\n    return x.exp().sum(1, keepdim=True).log()\n",
     lambda x: lse64(x, 1, keepdim=True), (3, 6, 2)),
    ("PTL303", "from torch import exp, log, sum as tsum\n\ndef f(x):\n    return log(tsum(exp(x), (1, 2)))\n",
     lambda x: lse64(x, (1, 2)), (2, 3, 4)),
]


@pytest.fixture(params=CASES, ids=lambda c: f"{c[0]}-{c[1].splitlines()[-1].strip()[7:40]}")
def case(request):
    code, source, reference, shape = request.param
    fixed = fix_text(source, [code])
    assert fixed != source, "the fix must apply"
    assert not check_text(fixed, [code]), "the fixed code must not be reported again"
    return _function(source), _function(fixed), reference, shape


def test_fix_agrees_on_ordinary_inputs(case):
    original, fixed, reference, shape = case
    torch.manual_seed(0)
    for _ in range(5):
        x = torch.randn(shape)
        assert original(x).shape == fixed(x).shape  # allclose alone would broadcast
        assert torch.allclose(original(x), fixed(x), rtol=1e-5, atol=1e-6)
        assert torch.allclose(fixed(x).double(), reference(x), rtol=1e-5, atol=1e-6)


def test_fix_is_finite_where_original_overflows(case):
    original, fixed, reference, shape = case
    torch.manual_seed(1)
    # logits of a few hundred, with a wide spread: exp overflows float32 (above ~88) and the
    # small entries underflow in a softmax
    x = torch.randn(shape) * 300 + 200
    before = original(x)
    assert not torch.isfinite(before).all(), "the original must break here, or this test proves nothing"
    after = fixed(x)
    assert after.shape == before.shape
    assert torch.isfinite(after).all()
    assert torch.allclose(after.double(), reference(x), rtol=1e-4, atol=1e-4)


def test_reported_but_unfixed_forms_stay_unchanged():
    """Where a rewrite could change behaviour, the finding stays and the text is untouched."""
    sources = {
        "PTL301": "import torch\n\ndef f(x):\n    e = torch.exp(x)\n    return e / e.sum(-1, keepdim=True)\n"
                  "\ndef g(x):\n    return torch.exp(x) / torch.exp(x).sum(-1)\n",
        "PTL302": "import torch\n\ndef f(x):\n    p = torch.softmax(x, -1)\n    return (p * p.log()).sum()\n",
        "PTL303": "import torch\n\ndef f(x):\n    return torch.log(torch.exp(x).sum())\n"
                  "\ndef g(x):\n    return torch.log(torch.exp(x).sum(-1, dtype=torch.float64))\n",
    }
    for code, source in sources.items():
        assert check_text(source, [code]), code
        assert fix_text(source, [code]) == source, code


def test_no_keepdim_softmax_would_have_been_wrong():
    """Why PTL301 needs keepdim=True: without it the division broadcasts along another axis, so
    `softmax(x, dim=d)` would not be the same function."""
    x = torch.randn(3, 3)
    hand = torch.exp(x) / torch.exp(x).sum(1)
    assert not torch.allclose(hand, torch.softmax(x, dim=1))


def test_integer_inputs():
    """`exp` promotes integer tensors to float. `logsumexp` does too, so PTL303's fix holds there;
    `softmax` raises on them, so PTL301 leaves visibly integer inputs alone."""
    source = "import torch\n\ndef f(x):\n    return torch.log(torch.exp(x).sum(-1))\n"
    x = torch.arange(12).reshape(3, 4)
    assert torch.allclose(_function(source)(x), _function(fix_text(source, ["PTL303"]))(x))
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.softmax(x, dim=-1)
    integer = "import torch\n\nw = torch.exp(torch.arange(4)) / torch.exp(torch.arange(4)).sum(0, keepdim=True)\n"
    assert check_text(integer, ["PTL301"]) and fix_text(integer, ["PTL301"]) == integer


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
def test_fixes_keep_behaviour_for_any_shape_and_dim(code, data):
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
