"""PTL201's fix run for real: the original and the fixed code give the same tensors on the CPU.

Each case binds `out`; both versions run with the same seed and must agree in values, dtype and
device. Random factories are unsafe only because CUDA's generator differs from the CPU's: on
the CPU, where both versions draw from the same generator, they must agree too.
"""

from __future__ import annotations

import pytest
import torch  # pinned by the test extra: a broken install fails here, it never skips

from ptlint.front.api import check_text, fix_text

CASES = [
    # (source, applicability of the fix)
    ('out = torch.zeros(3, 4).to(device)', "safe"),
    ('out = torch.ones(2, 2).to(device=device, non_blocking=True)', "safe"),
    ('out = torch.arange(10).to(device)', "safe"),
    ('out = torch.linspace(0, 1, 7).to(device)', "safe"),
    ('out = torch.full((2, 3), 0.25).to(device)', "safe"),
    ('out = torch.eye(4).to(device, torch.float16)', "safe"),
    ('out = torch.ones(2, 3).to(device, dtype=torch.bfloat16)', "safe"),
    ('out = torch.zeros(5).to(device=device, dtype=torch.int32)', "safe"),
    ('out = torch.logspace(0, 2, 5).to(device)', "safe"),
    ('out = torch.hann_window(8).to(device)', "safe"),
    ('out = torch.tril_indices(4, 4).to(device)', "safe"),
    ('out = torch.randn(4, 5).to(device)', "unsafe"),
    ('out = torch.rand(3).to(device=device)', "unsafe"),
    ('out = torch.randint(0, 10, (6,)).to(device)', "unsafe"),
    ('out = torch.randperm(9).to(device)', "unsafe"),
    ('out = torch.normal(0.0, 1.0, size=(4,)).to(device)', "unsafe"),
    ('from torch import randn as rnd\nout = rnd(2, 3).to(device, non_blocking=True)', "unsafe"),
    ('out = torch.zeros(3, requires_grad=True).to(device)', "unsafe"),
    ('out = torch.arange(0, 1, 0.25).to(device, torch.float64)', "unsafe"),
]


def run(source: str):
    namespace = {"torch": torch}
    torch.manual_seed(1234)
    exec(compile(source, "<case>", "exec"), namespace)
    return namespace["make"]()


def in_function(body: str) -> str:
    """The case as the body of a loop in a function (PTL201 does not report once-code at module
    level, nor random draws in a function whose callers the file does not show), whose `device`
    is the CPU here where a real program would pass "cuda"."""
    lines = "".join(f"        {line}\n" for line in body.splitlines())
    return f'import torch\n\ndef make(device="cpu"):\n    for _ in range(2):\n{lines}    return out\n'


@pytest.mark.parametrize("body,applicability", CASES, ids=[c[0] for c in CASES])
def test_fixed_code_computes_the_same_tensor(body, applicability):
    source = in_function(body)
    findings = check_text(source, ["PTL201"])
    assert [f.fix.applicability if f.fix else None for f in findings] == [applicability]
    fixed = fix_text(source, ["PTL201"], unsafe=True)
    assert fixed != source
    assert ".to(" not in fixed.splitlines()[-2]  # the move is gone: created in place
    assert check_text(fixed, ["PTL201"]) == []
    if applicability == "unsafe":
        assert fix_text(source, ["PTL201"], unsafe=False) == source
    before, after = run(source), run(fixed)
    assert after.dtype == before.dtype
    assert after.device == before.device
    assert after.shape == before.shape
    assert torch.equal(after, before)
    assert after.requires_grad == before.requires_grad


def test_dtype_moved_into_arange_can_round_differently():
    # Why a dtype moved into a non-constant factory is an unsafe fix: computing in half
    # precision is not the same as computing in float32 and casting.
    cast = torch.arange(0, 300, 0.7).to("cpu", torch.float16)
    direct = torch.arange(0, 300, 0.7, dtype=torch.float16, device="cpu")
    assert cast.shape != direct.shape or not torch.equal(cast, direct)
    source = in_function('out = torch.arange(0, 300, 0.7).to(device, torch.float16)')
    [finding] = check_text(source, ["PTL201"])
    assert finding.fix.applicability == "unsafe"


def test_dtype_moved_into_full_can_raise_where_the_cast_gave_inf():
    # Another reason a dtype moved into a value-computing factory is unsafe: float16 cannot
    # hold 1e30; casting gives inf, creating in float16 raises.
    source = in_function('out = torch.full((2,), 1e30).to(device, torch.float16)')
    [finding] = check_text(source, ["PTL201"])
    assert finding.fix.applicability == "unsafe"
    assert torch.isinf(run(source)).all()
    with pytest.raises(RuntimeError, match="overflow"):
        run(fix_text(source, ["PTL201"], unsafe=True))
