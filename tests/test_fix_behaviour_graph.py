"""PTL103's fix (`.detach()` on kept losses) keeps the values and frees the graphs."""

from __future__ import annotations

import textwrap

import torch  # pinned by the test extra: a broken install fails here, it never skips

from ptlint.api import fix_text

LOOP = textwrap.dedent("""\
    def train(model, batches, optimizer):
        history = []
        total = 0.0
        for x in batches:
            optimizer.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            optimizer.step()
            history.append(loss)
            total += loss
        return history, total
""")


def run(code: str):
    namespace: dict = {}
    exec(compile(code, "<train>", "exec"), namespace)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    batches = [torch.randn(8, 4) for _ in range(3)]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    history, total = namespace["train"](model, batches, optimizer)
    return model, history, total


def test_detach_fix_keeps_values_and_drops_graphs():
    fixed = fix_text(LOOP, ["PTL103"], unsafe=True)
    assert "history.append(loss.detach())" in fixed and "total += loss.detach()" in fixed
    model_a, history_a, total_a = run(LOOP)
    model_b, history_b, total_b = run(fixed)
    assert [h.item() for h in history_a] == [h.item() for h in history_b]
    assert total_a.item() == total_b.item()
    assert torch.equal(model_a.weight, model_b.weight)
    # the original keeps each step's autograd graph alive; the fixed code keeps none
    assert all(h.grad_fn is not None for h in history_a) and total_a.grad_fn is not None
    assert all(h.grad_fn is None for h in history_b) and total_b.grad_fn is None
