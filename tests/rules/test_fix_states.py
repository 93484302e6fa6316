"""Every fix, run side by side with the code it replaces, in the states real programs are in.

A fix keeps behaviour when, in each state, the original and the fixed code either give the same
results or raise the same kind of error. The only differences allowed are the ones a rule's
page names for its unsafe fix, and each of those is asserted here as exactly that difference.

States for the optimizer fixes (PTL501, PTL502): gradients on every parameter; no gradients yet
(before the first backward); frozen parameters; some gradients None; a model without
parameters; mixed float32/float16/bfloat16 parameters; sparse gradients; gradients that require
grad (`create_graph=True`). For the numerics fixes (PTL301-PTL303): float16 and bfloat16 inputs,
huge magnitudes, empty tensors. For PTL201: every dtype a move can carry, `requires_grad`.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from ptlint.front.api import check_text, fix_text


def _function(source: str, name: str):
    namespace: dict = {}
    exec(compile(source, "<case>", "exec"), namespace)
    return namespace[name]


# -- the optimizer fixes ---------------------------------------------------------------------

class Net(torch.nn.Module):
    def __init__(self, sparse: bool = False) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4, sparse=sparse)
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 3))
        self.unused = torch.nn.Parameter(torch.randn(3))  # never in forward: its grad stays None

    def forward(self, ids):
        return self.body(self.embed(ids).mean(1))


def _backward(model) -> None:
    model(torch.tensor([[1, 2, 3], [4, 5, 6]])).square().mean().backward()


def _state(name: str, seed: int = 0):
    """A model in one of the states a training program is in."""
    torch.manual_seed(seed)
    if name == "no-parameters":
        return torch.nn.ReLU()
    model = Net(sparse=name == "sparse-gradients")
    if name == "frozen-parameters":
        for p in model.body[0].parameters():
            p.requires_grad_(False)
    if name == "mixed-dtypes":
        model.body[0].half()
        model.body[2].bfloat16()

        def forward(ids):
            h = model.embed(ids).mean(1)
            return model.body[2](model.body[1](model.body[0](h.half()).float()).bfloat16()).float()

        model.forward = forward
    if name == "create-graph":
        model(torch.tensor([[1, 2, 3], [4, 5, 6]])).square().mean().backward(create_graph=True)
    elif name != "no-gradients-yet":
        _backward(model)
    return model


STATES = ["gradients", "no-gradients-yet", "frozen-parameters", "no-parameters", "mixed-dtypes",
          "sparse-gradients", "create-graph"]


def _outcome(source: str, function: str, state: str, *args):
    """(error type or None, parameters and gradients after the call)."""
    model = _state(state)
    error = None
    try:
        _function(source, function)(model, *args)
    except Exception as exc:  # the loop may raise on a missing gradient: compared below
        error = type(exc)
    snapshot = [(p.detach().clone(), None if p.grad is None else p.grad.detach().clone().to_dense())
                for p in model.parameters()]
    return error, snapshot


# one unit in the last place, relative: float16 has 10 mantissa bits, bfloat16 7
LAST_BIT = {torch.float16: 2 ** -10, torch.bfloat16: 2 ** -7}


def _same(a, b, half_rounding: bool = False) -> bool:
    """Bit for bit; with `half_rounding`, float16 and bfloat16 values may differ in their last bit."""
    def equal(x, y):
        if half_rounding and x.dtype in LAST_BIT:
            return torch.allclose(x.float(), y.float(), rtol=LAST_BIT[x.dtype], atol=0)
        return torch.equal(x, y)

    return len(a) == len(b) and all(
        equal(p, q) and (g is None) == (h is None) and (g is None or equal(g, h))
        for (p, g), (q, h) in zip(a, b))


OPTIMIZER_CASES = {
    # (code, function, source, args): guarded loops, which skip parameters without a gradient
    "sgd-guarded": ("PTL501", "step", """
        import torch

        def step(model, lr):
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-lr)
        """, (0.1,)),
    "sgd-continue-data": ("PTL501", "step", """
        def step(model, lr):
            for p in model.parameters():
                if p.grad is None:
                    continue
                p.data -= lr * p.grad
        """, (0.1,)),
    "weight-decay": ("PTL501", "step", """
        import torch

        @torch.no_grad()
        def step(model, lr):
            for name, p in model.named_parameters():
                if p.grad is not None:
                    p.mul_(1 - lr * 0.01)
                    p.add_(p.grad, alpha=-lr)
        """, (0.1,)),
    "scale-unguarded": ("PTL501", "step", """
        def step(model, factor):
            for p in model.parameters():
                p.data.mul_(factor)
        """, (0.5,)),
    "sgd-unguarded": ("PTL501", "step", """
        import torch

        @torch.no_grad()
        def step(model, lr):
            for p in model.parameters():
                p.add_(p.grad, alpha=-lr)
        """, (0.1,)),
    # gradient scaling (torchtune's `scale_grads`, hand-written unscaling), by a Python number and
    # by a 0-dim tensor
    "grad-scale-guarded": ("PTL501", "scale", """
        def scale(model, factor):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad *= factor
        """, (0.37,)),
    "grad-scale-by-tensor": ("PTL501", "scale", """
        def scale(model, factor):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad *= factor
        """, (torch.tensor(0.37),)),
    "grad-data-mul-unguarded": ("PTL501", "scale", """
        def scale(model, factor):
            for p in model.parameters():
                p.grad.data.mul_(factor)
        """, (0.37,)),
    "grad-div-continue": ("PTL501", "scale", """
        def scale(model, n):
            for name, p in model.named_parameters():
                if p.grad is None:
                    continue
                p.grad.div_(n)
        """, (3,)),
    "zero-guarded": ("PTL502", "zero", """
        def zero(model):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
        """, ()),
    "zero-continue-data": ("PTL502", "zero", """
        def zero(model):
            for p in list(model.parameters()):
                if p.grad is None:
                    continue
                p.grad.data.zero_()
        """, ()),
    "zero-unguarded": ("PTL502", "zero", """
        def zero(model):
            for p in model.parameters():
                p.grad.zero_()
        """, ()),
}


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("name", sorted(OPTIMIZER_CASES))
def test_optimizer_fix_in_every_state(name, state):
    code, function, source, args = OPTIMIZER_CASES[name]
    source = textwrap.dedent(source)
    [finding] = check_text(source, [code])
    fixed = fix_text(source, [code], unsafe=True)
    assert fixed != source and "_foreach_" in fixed
    before_error, before = _outcome(source, function, state, *args)
    after_error, after = _outcome(fixed, function, state, *args)
    guarded = "grad is not None" in source or "grad is None" in source
    reads_grad = ".grad" in source
    if before_error is not None and not guarded and reads_grad:
        # the one difference an unsafe fix may make: the loop raised on a missing gradient,
        # the fix skips that parameter. Nothing else may change.
        assert finding.fix.applicability == "unsafe"
        assert before_error in (TypeError, AttributeError) and after_error is None
        return
    assert after_error == before_error
    # the other difference PTL501's page names: on the CPU, `_foreach_mul_` of a float16 or
    # bfloat16 tensor by a Python number may round the last bit differently from `mul_` (torch 2.13)
    scalar_multiply = state == "mixed-dtypes" and code == "PTL501" and (".mul_(" in source or "*=" in source) \
        and not any(isinstance(a, torch.Tensor) for a in args)
    assert _same(before, after, half_rounding=scalar_multiply)
    assert not scalar_multiply or finding.fix.applicability == "unsafe"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_foreach_mul_of_half_floats_by_a_python_number_rounds_differently(dtype):
    """The rounding difference allowed above is real (so PTL501 stays unsafe), and only that; a
    0-dim tensor factor (torchtune's gradient scale) and division give the loop's bits."""
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


def test_the_states_are_the_ones_they_claim():
    """A state that did not hold would make the test above prove nothing."""
    assert all(p.grad is None for p in _state("no-gradients-yet").parameters())
    assert list(_state("no-parameters").parameters()) == []
    frozen = _state("frozen-parameters")
    assert frozen.body[0].weight.grad is None and frozen.body[2].weight.grad is not None
    assert {p.dtype for p in _state("mixed-dtypes").parameters()} == {torch.float32, torch.float16, torch.bfloat16}
    assert _state("sparse-gradients").embed.weight.grad.is_sparse
    assert _state("create-graph").body[0].weight.grad.requires_grad
    assert _state("gradients").unused.grad is None


def test_foreach_functions_refuse_an_empty_list():
    """Why the optimizer fixes guard their calls with `if <list>:`."""
    with pytest.raises(RuntimeError, match="at least one tensor"):
        torch._foreach_zero_([])


# Loops over two models' parameters at once: an EMA, a target network's Polyak update (trl's
# reference-model sync, with `zip(..., strict=True)`), called as update(source, target, weight).
PAIR_CASES = {
    "sync-strict-chain": """
        def update(model, target_model, alpha):
            for target_param, copy_param in zip(target_model.parameters(), model.parameters(), strict=True):
                target_param.data.mul_(1.0 - alpha).add_(copy_param.data, alpha=alpha)
        """,
    "polyak-add-out": """
        import torch as th

        def update(model, target_model, tau):
            with th.no_grad():
                for param, target_param in zip(model.parameters(), target_model.parameters(), strict=True):
                    target_param.data.mul_(1 - tau)
                    th.add(target_param.data, param.data, alpha=tau, out=target_param.data)
        """,
    "lerp": """
        import torch

        @torch.no_grad()
        def update(model, ema, weight):
            for ema_p, p in zip(ema.parameters(), model.parameters()):
                ema_p.lerp_(p, weight)
        """,
}
PAIR_STATES = ["two-models", "no-parameters", "mixed-dtypes", "float16-target", "frozen-parameters",
               "shared-parameter", "longer-target", "misaligned-target"]


def _pair_state(name: str):
    """(source, target) in one of the states an EMA or a target network is in."""
    torch.manual_seed(0)
    if name == "no-parameters":
        return torch.nn.ReLU(), torch.nn.ReLU()
    source, target = Net(), Net()
    if name == "mixed-dtypes":
        for model in (source, target):
            model.body[0].half()
            model.body[2].bfloat16()
    if name == "float16-target":  # a half-precision average of a float32 model
        target.half()
    if name == "frozen-parameters":
        for model in (source, target):
            model.body[0].requires_grad_(False)
    if name == "shared-parameter":  # the target shares a layer with the source
        target.body[0] = source.body[0]
    if name == "longer-target":  # one more layer at the end: the pairs before it match
        target.head = torch.nn.Linear(3, 2)
    if name == "misaligned-target":  # one more parameter first: the pairs' shapes differ
        target.extra = torch.nn.Parameter(torch.randn(2))
    return source, target


def _pair_outcome(source_code: str, state: str, weight: float):
    source, target = _pair_state(state)
    error = None
    try:
        _function(source_code, "update")(source, target, weight)
    except Exception as exc:
        error = type(exc)
    return error, [p.detach().clone() for p in [*source.parameters(), *target.parameters()]]


def _close_in_half(a, b) -> bool:
    """Equal, except that float16/bfloat16 values may differ by a last bit of the values' scale:
    one rounding of `mul_` by a Python number, carried through the add that follows."""
    return len(a) == len(b) and all(
        torch.equal(x, y) if x.dtype not in LAST_BIT else
        torch.allclose(x.float(), y.float(), rtol=LAST_BIT[x.dtype], atol=LAST_BIT[x.dtype] * x.abs().max().item())
        for x, y in zip(a, b))


@pytest.mark.parametrize("state", PAIR_STATES)
@pytest.mark.parametrize("name", sorted(PAIR_CASES))
def test_pair_update_fix_in_every_state(name, state):
    source = textwrap.dedent(PAIR_CASES[name])
    [finding] = check_text(source, ["PTL501"])
    fixed = fix_text(source, ["PTL501"], unsafe=True)
    assert fixed != source and "_foreach_" in fixed and finding.fix.applicability == "unsafe"
    untouched = _pair_outcome("def update(source, target, weight):\n    pass\n", state, 0.5)[1]
    # 0.5: `mul_` by 1 - 0.5 is exact in every dtype; 0.37 rounds
    for weight in (0.5, 0.37):
        before_error, before = _pair_outcome(source, state, weight)
        after_error, after = _pair_outcome(fixed, state, weight)
        if "strict=True" in source and state in ("longer-target", "misaligned-target"):
            # the difference the page names: the fix reads the lists first, so `strict=True` raises
            # before anything is updated; the loop updated the pairs before the shorter list
            # ended (or before a pair whose shapes differ, with a RuntimeError there)
            assert before_error is (ValueError if state == "longer-target" else RuntimeError)
            assert after_error is ValueError
            assert all(torch.equal(x, y) for x, y in zip(after, untouched))
            assert not all(torch.equal(x, y) for x, y in zip(before, untouched))
            continue
        assert after_error == before_error
        if weight == 0.5 or "mul_(" not in source:
            assert all(torch.equal(x, y) for x, y in zip(before, after))
        else:
            assert _close_in_half(before, after)
    if state == "two-models":  # the update did something
        assert before_error is None and not all(torch.equal(x, y) for x, y in zip(before, untouched))


def test_a_one_element_tensor_factor_works_in_the_loop_and_raises_in_the_fix():
    """The page's other named difference for gradient scaling: `_foreach_mul_` takes a tensor
    factor only with 0 dimensions; the loop broadcasts a one-element 1-D tensor."""
    code, function, source, _ = OPTIMIZER_CASES["grad-scale-by-tensor"]
    source = textwrap.dedent(source)
    fixed = fix_text(source, [code], unsafe=True)
    before_error, _ = _outcome(source, function, "gradients", torch.tensor([0.37]))
    after_error, _ = _outcome(fixed, function, "gradients", torch.tensor([0.37]))
    assert before_error is None and after_error is RuntimeError
    assert check_text(source, [code])[0].fix.applicability == "unsafe"


def test_a_list_that_may_repeat_a_tensor_gets_no_fix():
    """A loop over lists the function receives (SB3's `polyak_update(params, target_params,
    tau)`) meets a repeated tensor once per occurrence, each time through the whole body; the
    foreach calls apply one operation to every tensor before the next. On the CPU the results
    differ as soon as the body has two operations (and the fused CUDA kernel updates a repeated
    tensor once even for one)."""
    source = textwrap.dedent("""
        import torch as th

        def polyak_update(params, target_params, tau):
            with th.no_grad():
                for param, target_param in zip(params, target_params, strict=True):
                    target_param.data.mul_(1 - tau)
                    th.add(target_param.data, param.data, alpha=tau, out=target_param.data)
        """)
    [finding] = check_text(source, ["PTL501"])
    assert finding.fix is None and fix_text(source, ["PTL501"], unsafe=True) == source
    # what the fix would have done, on a target list that holds one tensor twice
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


def test_a_loop_variable_read_after_the_loop_or_a_comment_gets_no_fix():
    for source in ("def f(model):\n    for p in model.parameters():\n        p.data.mul_(0.5)\n    return p\n",
                   "def f(model):\n    for p in model.parameters():\n        p.data.mul_(0.5)  # halve\n"):
        [finding] = check_text(source, ["PTL501"])
        assert finding.fix is None and fix_text(source, ["PTL501"], unsafe=True) == source


# -- the numerics fixes ----------------------------------------------------------------------

NUMERICS = [
    ("PTL301", "import torch\n\ndef f(x):\n    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)\n"),
    ("PTL301", "import torch\n\ndef f(x):\n    return x.exp() / x.exp().sum(dim=0, keepdim=True)\n"),
    ("PTL302", "import torch\nimport torch.nn.functional as F\n\ndef f(x):\n    return torch.log(F.softmax(x, dim=-1))\n"),
    ("PTL302", "import torch\n\ndef f(x):\n    return x.softmax(0).log()\n"),
    ("PTL303", "import torch\n\ndef f(x):\n    return torch.log(torch.exp(x).sum(dim=-1))\n"),
    ("PTL303", "import torch\n\ndef f(x):\n    return x.exp().sum(0, keepdim=True).log()\n"),
]
REFERENCE = {
    "PTL301": lambda x, dim: torch.softmax(x.double(), dim),
    "PTL302": lambda x, dim: torch.log_softmax(x.double(), dim),
    "PTL303": lambda x, dim: torch.logsumexp(x.double(), dim, keepdim=True),
}
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def _dim(source: str) -> int:
    return 0 if "(0" in source.split("return")[1] or "dim=0" in source else -1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("code,source", NUMERICS)
def test_numerics_fix_in_low_precision_and_at_huge_magnitudes(code, source, dtype):
    fixed = fix_text(source, [code])
    assert fixed != source
    original, rewritten = _function(source, "f"), _function(fixed, "f")
    dim = _dim(source)
    torch.manual_seed(0)
    x = torch.randn(4, 6).to(dtype)
    before, after = original(x), rewritten(x)
    assert before.dtype == after.dtype == dtype
    reference = REFERENCE[code](x, dim)
    if code == "PTL303":
        reference = reference if "keepdim" in source else reference.squeeze(dim)
    tolerance = TOLERANCE[dtype]
    assert torch.allclose(after.double(), reference, rtol=tolerance, atol=tolerance)
    assert torch.allclose(before.double(), after.double(), rtol=tolerance, atol=tolerance)
    # huge logits: exp overflows (float16 past ~11, float32/bfloat16 past ~88); the fix stays finite
    big = (torch.randn(4, 6) * 50 + 300).to(dtype)
    assert not torch.isfinite(original(big)).all(), "the original must break here"
    assert torch.isfinite(rewritten(big)).all()


@pytest.mark.parametrize("code,source", NUMERICS)
def test_numerics_fix_on_an_empty_tensor(code, source):
    x = torch.randn(0, 5) if _dim(source) == -1 else torch.randn(5, 0)
    before, after = _function(source, "f")(x), _function(fix_text(source, [code]), "f")(x)
    assert before.shape == after.shape


# -- PTL503: fused optimizers ------------------------------------------------------------------

def fused_source(kind: str) -> str:
    return f"import torch\n\ndef make(model):\n    return torch.optim.{kind}(model.parameters(), lr=0.1)\n"


def _steps(make, model, inputs) -> list:
    optimizer = make(model)
    for _ in range(3):
        optimizer.zero_grad()
        model(inputs).float().square().sum().backward()
        optimizer.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("kind", ["Adam", "AdamW", "SGD"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_fused_optimizer_fix_gives_the_same_parameters(kind, dtype):
    source = fused_source(kind)
    fixed = fix_text(source, ["PTL503"], unsafe=True)
    assert "fused=True" in fixed
    results = []
    for make in (_function(source, "make"), _function(fixed, "make")):
        torch.manual_seed(0)
        model = torch.nn.Linear(4, 3).to(dtype)
        results.append(_steps(make, model, torch.randn(2, 4).to(dtype)))
    # the same step to within rounding, not bit for bit (one reason the fix is unsafe)
    tolerance = 1e-5 if dtype == torch.float32 else 2e-2
    assert all(torch.allclose(a.float(), b.float(), rtol=tolerance, atol=tolerance) for a, b in zip(*results))


def test_fused_sgd_refuses_sparse_gradients_where_plain_sgd_steps():
    source = fused_source("SGD")
    fixed = fix_text(source, ["PTL503"], unsafe=True)
    ids = torch.tensor([[1, 2, 3]])
    _steps(_function(source, "make"), torch.nn.Embedding(10, 4, sparse=True), ids)
    with pytest.raises(RuntimeError, match="sparse"):
        _steps(_function(fixed, "make"), torch.nn.Embedding(10, 4, sparse=True), ids)
    assert check_text(source, ["PTL503"])[0].fix.applicability == "unsafe"
