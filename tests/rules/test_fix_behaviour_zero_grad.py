"""PTL106's fix (drop `set_to_none=False`) run side by side with the original, with torch on CPU:
the same parameters when every parameter gets a gradient each step (also before the first
backward, with frozen parameters, mixed dtypes); the differences its page names when a step leaves
a parameter unused (momentum still moves a zero gradient, a None one is skipped) and when code
reads `.grad` after zeroing."""

from __future__ import annotations

import textwrap

import pytest
import torch

from ptlint.front.api import fix_text

LOOP = textwrap.dedent("""\
    def train(model, batches, optimizer, use_head):
        for i, x in enumerate(batches):
            optimizer.zero_grad(set_to_none=False)
            out = model.body(x)
            if use_head(i):
                out = model.head(out)
            out.float().pow(2).mean().backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=False)
        return [None if p.grad is None else p.grad.clone() for p in model.parameters()]
""")
FIXED = fix_text(LOOP, ["PTL106"], unsafe=True)


def make_model(dtype=torch.float32, frozen=False):
    torch.manual_seed(0)
    model = torch.nn.Module()
    model.body = torch.nn.Linear(4, 4).to(dtype)
    model.head = torch.nn.Linear(4, 4).to(dtype)
    if frozen:
        model.body.bias.requires_grad_(False)
    return model


def run(code, optimizer_class, use_head, dtype=torch.float32, frozen=False, steps=3, **options):
    namespace: dict = {}
    exec(compile(code, "<train>", "exec"), namespace)
    model = make_model(dtype, frozen)
    optimizer = optimizer_class([p for p in model.parameters() if p.requires_grad], lr=0.1, **options)
    torch.manual_seed(1)
    batches = [torch.randn(2, 4).to(dtype) for _ in range(steps)]
    grads = namespace["train"](model, batches, optimizer, use_head)
    return model, grads


def parameters(model):
    return [p.detach().clone() for p in model.parameters()]


def test_the_fix_drops_the_argument():
    assert "optimizer.zero_grad()" in FIXED and "set_to_none" not in FIXED


@pytest.mark.parametrize("optimizer_class,options", [
    (torch.optim.SGD, {}), (torch.optim.SGD, {"momentum": 0.9, "weight_decay": 0.01}), (torch.optim.Adam, {}),
    (torch.optim.AdamW, {"weight_decay": 0.1}),
], ids=["sgd", "sgd-momentum", "adam", "adamw"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_every_parameter_used_every_step_trains_the_same(optimizer_class, options, dtype):
    model_a, grads_a = run(LOOP, optimizer_class, lambda i: True, dtype, **options)
    model_b, grads_b = run(FIXED, optimizer_class, lambda i: True, dtype, **options)
    for a, b in zip(parameters(model_a), parameters(model_b)):
        assert torch.equal(a, b)
    # after the final zero_grad: zeros in the original, None in the fixed code
    assert all(g is not None and not g.any() for g in grads_a)
    assert all(g is None for g in grads_b)


def test_frozen_parameters_and_no_steps_at_all():
    model_a, grads_a = run(LOOP, torch.optim.SGD, lambda i: True, frozen=True, momentum=0.9)
    model_b, grads_b = run(FIXED, torch.optim.SGD, lambda i: True, frozen=True, momentum=0.9)
    assert all(torch.equal(a, b) for a, b in zip(parameters(model_a), parameters(model_b)))
    frozen_index = [name for name, _ in model_a.named_parameters()].index("body.bias")
    assert grads_a[frozen_index] is None and grads_b[frozen_index] is None  # never had a gradient
    # no gradients yet: zero_grad before any backward leaves None either way
    model_a, grads_a = run(LOOP, torch.optim.SGD, lambda i: True, steps=0)
    model_b, grads_b = run(FIXED, torch.optim.SGD, lambda i: True, steps=0)
    assert grads_a == grads_b == [None] * 4


def test_a_parameter_unused_in_a_step_moves_only_in_the_original():
    # the head is used on the first step only: with set_to_none=False its zero gradient keeps
    # feeding momentum and weight decay; with None the optimizer skips it
    use_head = lambda i: i == 0  # noqa: E731
    model_a, _ = run(LOOP, torch.optim.SGD, use_head, momentum=0.9, weight_decay=0.01)
    model_b, _ = run(FIXED, torch.optim.SGD, use_head, momentum=0.9, weight_decay=0.01)
    assert torch.equal(model_a.body.weight, model_b.body.weight)  # used every step: identical
    assert not torch.equal(model_a.head.weight, model_b.head.weight)  # the documented difference
    model_c, _ = run(LOOP, torch.optim.SGD, use_head)
    model_d, _ = run(FIXED, torch.optim.SGD, use_head)
    assert torch.equal(model_c.head.weight, model_d.head.weight)  # plain SGD: a zero step is no step


def test_code_reading_grad_after_zeroing_meets_none():
    reader = LOOP.replace("    return [", "    total = sum(p.grad.sum() for p in model.parameters())\n    return [")
    assert reader != LOOP
    run(reader, torch.optim.SGD, lambda i: True)
    with pytest.raises(AttributeError):
        run(fix_text(reader, ["PTL106"], unsafe=True), torch.optim.SGD, lambda i: True)
