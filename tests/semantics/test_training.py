"""Does this code train, or run a model? (ptlint.semantics.where, `does this code train?`): the
questions that sound alike, each with its own answer."""

from __future__ import annotations

import ast

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import Traversal
from ptlint.semantics.where import (
    backpropagates,
    in_model_loop,
    is_step_function,
    may_be_step,
    may_hold_training_step,
    runs_model,
    runs_training_step,
    steps_optimizer,
)


def first(source: str, kind: type) -> ast.AST:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, kind))


def loop(body: str) -> ast.AST:
    return first(f"for x in loader:\n    {body}\n", ast.For)


@pytest.mark.parametrize("body,expected", [
    ("loss.backward()", True),
    ("(loss / k).backward()", True),
    ("scaler.scale(loss).backward()", True),
    ("accelerator.backward(loss)", True),
    ("self.manual_backward(loss)", True),
    ("model(x).sum().backward()", False),  # no loss it names
    ("loss.item()", False),
    ("opt.step()", False),
])
def test_backpropagates(body, expected):
    assert backpropagates(loop(body)) is expected


def test_backpropagates_needs_a_loop_body():
    assert backpropagates(first("[loss.backward() for x in y]", ast.ListComp)) is False
    assert backpropagates(first("while go:\n    loss.backward()\n", ast.While)) is True


@pytest.mark.parametrize("body,expected", [
    ("model(x).sum().backward()", True),
    ("self.manual_backward(loss)", True),
    ("opt.zero_grad()", True),
    ("optimizer.step()", True),
    ("self.scaler.step(opt)", True),
    ("env.step(action)", True),
    ("train_envs.step(action)", True),
    ("trainer.step()", True),
    ("lr_scheduler.step()", False),  # an epoch loop steps a scheduler once per epoch
    ("sched.step()", False),  # not a name that says it steps training
    ("step()", False),
    ("batch = next(it)", True),
    ("batch = next(self.train_iter)", True),
    ("batch = next(iter(loader))", True),
    ("batch = next(loader_iters[task])", True),
    ("batch = next(train_iters[task])", True),
    ("size = next(grid_iters[kind])", False),  # an iterator of something else
    ("size = next()", False),
    ("def hook():\n        loss.backward()", False),  # defined here, run elsewhere
    ("model(x)", False),
])
def test_runs_training_step(body, expected):
    assert runs_training_step(loop(body)) is expected


def test_runs_training_step_is_about_statement_loops():
    assert runs_training_step(first("[opt.step() for x in y]", ast.ListComp)) is False
    assert runs_training_step(first("while go:\n    opt.zero_grad()\n", ast.While)) is True


@pytest.mark.parametrize("body,expected", [
    ("loss.backward()", True),
    ("model(x).sum().backward()", True),
    ("self.manual_backward(loss)", True),
    ("if ok:\n        loss.backward()", True),
    ("for x in xs:\n        loss.backward()", False),  # its own loop: a training loop, not a step
    ("while go:\n        loss.backward()", False),
    ("[l.backward() for l in losses]", False),
    ("def closure():\n        loss.backward()", False),
    ("opt.step()", False),
    # a loop over the micro-batches of one step: the function is still one step
    ("for i in range(config['num_G_accumulations']):\n        loss.backward()", True),
    ("for accumulation_index in range(n):\n        loss.backward()", True),
    ("with ctx:\n        for micro_step in range(k):\n            loss.backward()", True),
    ("for i in range(n):\n        for micro_step in range(k):\n            loss.backward()", False),
    ("for batch in loader:\n        for micro_step in range(k):\n            loss.backward()", False),
])
def test_is_step_function(body, expected):
    assert is_step_function(first(f"def update(engine, batch):\n    {body}\n", ast.FunctionDef)) is expected


@pytest.mark.parametrize("block,expected", [
    ("opt.step()", True),
    ("self.optimizer.step()", True),
    ("scaler.step(optim)", True),
    ("loss.backward()", True),
    ("model.zero_grad()", True),
    ("self.optimizers.step()", False),  # the words of the receiver, not a part of one
    ("env.step(a)", False),
    ("self.manual_backward(loss)", False),
    ("print(loss)", False),
    ("def later():\n    opt.step()", True),  # anywhere in the block
])
def test_steps_optimizer(block, expected):
    assert steps_optimizer(ast.parse(block).body) is expected


def context(source: str) -> FileContext:
    return FileContext(SourceFile("m.py", source), ast.parse(source))


@pytest.mark.parametrize("source,expected", [
    ("for x in xs:\n    model(x)\n", True),
    ("for x in xs:\n    self.text_encoder(x)\n", True),  # a word of the name
    ("for x in xs:\n    loss = criterion(out, x)\n", True),
    ("for x in xs:\n    self.head(x)\n", True),
    ("for x in xs:\n    opt.step()\n", True),
    ("for x in xs:\n    pipe.generate(x)\n", True),
    ("for x in xs:\n    step(x)\n", False),  # a function, not a method that steps
    ("for x in xs:\n    print(x.item())\n", False),
    ("for x in model(xs):\n    print(x)\n", False),  # the iterable runs once
    ("while model(x).any():\n    pass\n", True),  # a while loop's test runs every time
    ("for x in xs:\n    def f():\n        model(x)\n", False),
    ("[model(x) for x in xs]", True),
    ("[x for x in model(xs)]", False),  # the first iterable runs once
    ("[y for x in xs for y in model(x)]", True),
    ("[x for x in xs if net(x)]", True),
    ("{x: model(x) for x in xs}", True),
    ("{k: v for k, v in model(xs)}", False),
    ("layer = nn.Linear(2, 2)\nfor x in xs:\n    layer(x)\n", True),  # a module built here
])
def test_runs_model(source, expected):
    ctx = context("import torch.nn as nn\n" + source)
    Traversal(ctx, []).run()
    node = next(n for n in ast.walk(ctx.tree) if isinstance(n, (ast.For, ast.While, ast.ListComp, ast.DictComp)))
    assert runs_model(node, ctx) is expected
    assert runs_model(node, ctx) is expected  # remembered


class Probe:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.seen: dict[str, tuple[bool, bool]] = {}

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            self.seen[node.args[0].value] = (in_model_loop(self.ctx), may_be_step(self.ctx))


def test_in_model_loop_and_may_be_step_where_the_traversal_is():
    source = """
probe("top")
for x in xs:
    model(x)
    probe("model loop")
    for y in x:
        probe("inner loop of a model loop")
for x in xs:
    probe("plain loop")
    def f():
        probe("function in a model loop")
"""
    ctx = context(source)
    probe = Probe(ctx)
    Traversal(ctx, [probe]).run()
    assert probe.seen == {
        "top": (False, False),
        "model loop": (True, True),
        "inner loop of a model loop": (True, True),
        "plain loop": (False, False),
        "function in a model loop": (False, False),  # a def starts afresh
    }
    ctx = context(source + "loss.backward()\n")
    probe = Probe(ctx)
    Traversal(ctx, [probe]).run()
    assert probe.seen["top"] == (False, True)  # the file may hold a training step


@pytest.mark.parametrize("text,expected", [
    ("loss.backward()", True), ("opt.zero_grad()", True), ("opt.step ()", True), ("next(it)", True),
    ("def compute_loss(self):", True), ("def on_train_batch_end(self):", True),
    ("Events.ITERATION_COMPLETED", True), ("def training_step_end(self):", True),
    ("x = model(y)", False), ("stepper = 1", False),
])
def test_may_hold_training_step(text, expected):
    assert may_hold_training_step(text) is expected
