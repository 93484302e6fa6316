"""PTL204's fix (`torch.tensor(t)` -> `t.clone().detach()`) gives the same tensor as the original,
run side by side with torch on CPU, for every kind of tensor the code may hold — and without the
warning torch prints for the original."""

from __future__ import annotations

import textwrap
import warnings

import pytest
import torch

from ptlint.front.api import fix_text

CODE = textwrap.dedent("""\
    import torch

    def copy(make):
        source = torch.clone(make())
        return source, torch.tensor(source)
""")
FIXED = fix_text(CODE, ["PTL204"])

CASES = {
    "float32": lambda: torch.randn(3, 4),
    "float16": lambda: torch.randn(3, 4).half(),
    "bfloat16": lambda: torch.randn(3, 4).bfloat16(),
    "int64": lambda: torch.arange(6),
    "uint8": lambda: torch.arange(6, dtype=torch.uint8),
    "bool": lambda: torch.tensor([True, False]),
    "complex": lambda: torch.randn(2, dtype=torch.complex64),
    "zero-dim": lambda: torch.tensor(2.5),
    "empty": lambda: torch.zeros(0, 3),
    "non-contiguous": lambda: torch.randn(4, 3).t(),
    "requires-grad": lambda: torch.randn(3, requires_grad=True) * 2,
    "leaf-requires-grad": lambda: torch.randn(3, requires_grad=True),
}


def run(code, make):
    namespace: dict = {}
    exec(compile(code, "<copy>", "exec"), namespace)
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        source, copy = namespace["copy"](make)
    return source, copy, [str(w.message) for w in caught]


def test_the_fix_is_clone_detach():
    assert "return source, source.clone().detach()" in FIXED


@pytest.mark.parametrize("case", CASES)
def test_same_tensor_without_the_warning(case):
    source_a, a, warned_a = run(CODE, CASES[case])
    source_b, b, warned_b = run(FIXED, CASES[case])
    assert torch.equal(a, b) and torch.equal(source_a, source_b)
    assert a.dtype == b.dtype and a.device == b.device and a.shape == b.shape
    assert a.requires_grad is b.requires_grad is False and a.grad_fn is None and b.grad_fn is None
    assert a.is_contiguous() == b.is_contiguous()
    if a.numel():  # both are copies, not views of the source
        assert a.data_ptr() != source_a.data_ptr() and b.data_ptr() != source_b.data_ptr()
    assert any("To copy construct from a tensor" in message for message in warned_a)
    assert warned_b == []
