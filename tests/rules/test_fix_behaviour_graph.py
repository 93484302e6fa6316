"""PTL103's fix (`.detach()` on kept losses and their differentiable expressions) keeps the values
and frees the graphs: the original and the fixed code run side by side with torch on CPU, in a
training loop, with subscripts and expressions of the loss, in an evaluation loop without
`no_grad`, and in a Lightning-style `training_step`; also with no batches at all, a frozen model,
and float16 / bfloat16 losses."""

from __future__ import annotations

import textwrap

import pytest
import torch

from ptlint.front.api import check_text, fix_text

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


EXPRESSIONS = textwrap.dedent("""\
    import torch

    def train(model, batches, optimizer):
        hist = torch.zeros(len(batches))
        means, doubled = [], []
        for i, x in enumerate(batches):
            optimizer.zero_grad()
            loss = model(x).float().pow(2)
            loss.mean().backward()
            optimizer.step()
            hist[i] = loss.mean()
            means.append(loss.mean())
            doubled.append(loss * 2)
        return hist, means, doubled
""")

EVALUATION = textwrap.dedent("""\
    import torch.nn.functional as F

    def evaluate(model, val_loader):
        model.eval()
        losses = []
        total = 0.0
        for x, y in val_loader:
            out = model(x)
            losses.append(F.mse_loss(out, y))
            total += F.mse_loss(out, y, reduction="sum")
        return losses, total
""")

STEP_HOOK = textwrap.dedent("""\
    class Lit:
        def __init__(self, model):
            self.model = model
            self.outputs = []

        def training_step(self, batch, batch_idx):
            loss = self.model(batch).float().pow(2).mean()
            self.outputs.append(loss)
            return loss
""")


def execute(code):
    namespace: dict = {}
    exec(compile(code, "<code>", "exec"), namespace)
    return namespace


def make_model(dtype=torch.float32, frozen=False):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to(dtype)
    if frozen:
        model.requires_grad_(False)
    return model


def test_every_kept_expression_is_reported_and_fixed():
    assert sorted(f.line for f in check_text(EXPRESSIONS, ["PTL103"])) == [11, 12, 13]
    fixed = fix_text(EXPRESSIONS, ["PTL103"], unsafe=True)
    assert "hist[i] = loss.mean().detach()" in fixed
    assert "means.append(loss.mean().detach())" in fixed and "doubled.append((loss * 2).detach())" in fixed


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("batches", [3, 0], ids=["three-batches", "no-batches"])
def test_expressions_keep_values_and_drop_graphs(dtype, batches):
    results = []
    for code in (EXPRESSIONS, fix_text(EXPRESSIONS, ["PTL103"], unsafe=True)):
        model = make_model(dtype)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        torch.manual_seed(1)
        data = [torch.randn(8, 4).to(dtype) for _ in range(batches)]
        results.append((model, *execute(code)["train"](model, data, optimizer)))
    (model_a, hist_a, means_a, doubled_a), (model_b, hist_b, means_b, doubled_b) = results
    assert torch.equal(hist_a, hist_b) and torch.equal(model_a.weight, model_b.weight)
    assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(means_a + doubled_a, means_b + doubled_b))
    assert len(means_a) == len(means_b) == batches
    if batches:
        # `hist[i] = loss.mean()` made the preallocated tensor part of every step's graph
        assert hist_a.grad_fn is not None and all(m.grad_fn is not None for m in means_a + doubled_a)
    assert hist_b.grad_fn is None and all(m.grad_fn is None for m in means_b + doubled_b)


@pytest.mark.parametrize("frozen", [False, True], ids=["trainable", "frozen"])
def test_evaluation_loop_keeps_values_and_drops_graphs(frozen):
    fixed = fix_text(EVALUATION, ["PTL103"], unsafe=True)
    assert "losses.append(F.mse_loss(out, y).detach())" in fixed
    assert 'total += F.mse_loss(out, y, reduction="sum").detach()' in fixed
    torch.manual_seed(2)
    loader = [(torch.randn(5, 4), torch.randn(5, 2)) for _ in range(3)]
    losses_a, total_a = execute(EVALUATION)["evaluate"](make_model(frozen=frozen), loader)
    losses_b, total_b = execute(fixed)["evaluate"](make_model(frozen=frozen), loader)
    assert [a.item() for a in losses_a] == [b.item() for b in losses_b] and total_a.item() == total_b.item()
    # a frozen model records nothing: the original keeps no graph either, and .detach() is harmless
    assert all((a.grad_fn is None) is frozen for a in losses_a) and (total_a.grad_fn is None) is frozen
    assert all(b.grad_fn is None for b in losses_b) and total_b.grad_fn is None


def test_step_hook_keeps_values_and_drops_graphs():
    fixed = fix_text(STEP_HOOK, ["PTL103"], unsafe=True)
    assert "self.outputs.append(loss.detach())" in fixed
    runs = []
    for code in (STEP_HOOK, fixed):
        module = execute(code)["Lit"](make_model())
        torch.manual_seed(3)
        returned = [module.training_step(torch.randn(6, 4), i) for i in range(3)]
        runs.append((module.outputs, returned))
    (kept_a, returned_a), (kept_b, returned_b) = runs
    assert [a.item() for a in kept_a] == [b.item() for b in kept_b]
    # the returned loss is still differentiable: only the kept copy lost its graph
    assert all(r.grad_fn is not None for r in returned_a + returned_b)
    assert all(a.grad_fn is not None for a in kept_a) and all(b.grad_fn is None for b in kept_b)
