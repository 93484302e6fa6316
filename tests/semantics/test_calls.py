"""The file's call index (ptlint.semantics.calls) and its structure (FileFacts.parent & co.)."""

from __future__ import annotations

import ast

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import Traversal
from ptlint.semantics.calls import CallSites
from ptlint.semantics.where import execution_model

SOURCE = """
def helper(x):
    return helper(x - 1)

def outer():
    def helper():
        pass
    helper()

class Base:
    def step(self):
        self.log()

    def log(self):
        pass

    def __len__(self):
        return 0

class Child(Base):
    @classmethod
    def make(cls):
        cls.log()

    def run(self, xs):
        self.step()
        len(self)
        self.__len__()
        list(map(helper, xs))
        register(self.log)

class Other:
    def log(self):
        pass

def main():
    child = Child()
    child.step()
    other = factory()
    other.log()
    helper(1)
    log()
"""


def context(source: str = SOURCE) -> FileContext:
    return FileContext(SourceFile("m.py", source), ast.parse(source))


def defs(ctx: FileContext) -> dict[str, ast.AST]:
    """Qualified-ish names of the file's defs: `Base.log`, `outer.helper`, `helper`."""
    out = {}
    for function in ctx.function_defs():
        holder = ctx.owner_class(function) or ctx.enclosing_function(function)
        out[f"{holder.name}.{function.name}" if holder else function.name] = function
    return out


def lines(calls: list[ast.Call]) -> list[int]:
    return sorted(call.lineno for call in calls)


def test_callers_resolve_to_the_files_defs():
    ctx = context()
    Traversal(ctx, []).run()  # the assignments (`child = Child()`) are the traversal's
    sites = CallSites.of(ctx)
    found = {name: lines(sites.callers(function)) for name, function in defs(ctx).items()}
    assert found == {
        "helper": [29, 41],  # handed over to `map`, called in main; its own call is left out
        "outer": [],
        "outer.helper": [8],  # the innermost definition whose scope holds the call
        "Base.step": [26, 38],  # through self in a subclass, and `child = Child()`
        "Base.log": [12, 23, 30],  # self, cls, handed over as `self.log`
        "Base.__len__": [],  # dunders run through `len(...)`, not by name
        "Child.make": [],
        "Child.run": [],
        "Other.log": [],  # `other` is not visibly an Other
        "main": [],
    }
    assert CallSites.of(ctx) is sites  # one index per file


def test_named_calls_are_what_the_code_writes():
    ctx = context()
    sites = CallSites.of(ctx)
    assert lines(sites.named("helper")) == [3, 8, 41]
    assert lines(sites.named("log", method=True)) == [12, 23]  # self.log() and cls.log(), not other.log()
    assert lines(sites.named("log")) == [42]
    assert sites.named("missing") == []


def test_structure_of_the_tree():
    ctx = context()
    outer = defs(ctx)["outer"]
    inner = defs(ctx)["outer.helper"]
    call = next(n for n in ast.walk(outer) if isinstance(n, ast.Call))
    assert ctx.parent(call).__class__ is ast.Expr
    assert ctx.parent(ctx.tree) is None
    assert ctx.enclosing_function(call) is outer
    assert ctx.enclosing_function(inner) is outer
    assert ctx.enclosing_function(outer) is None
    assert ctx.owner_class(defs(ctx)["Base.log"]).name == "Base"
    assert ctx.owner_class(inner) is None
    assert len(ctx.calls()) == sum(isinstance(n, ast.Call) for n in ast.walk(ctx.tree))


def test_where_code_runs_is_decided_after_the_traversal():
    ctx = context("for x in loader:\n    x.item()\n")

    class Early:
        def visit_Call(self, node):
            execution_model(ctx)

    with pytest.raises(RuntimeError, match="after the traversal"):
        Traversal(ctx, [Early()]).run()
    ctx.stack.clear()
    assert execution_model(ctx) is execution_model(ctx)  # built once


def test_a_global_instance_is_resolved_where_the_function_does_not_bind_the_name():
    """`agent = Agent()` at module level, `agent.collect()` in a function: Python looks `agent`
    up in the module. A function whose parameter (or own assignment) is named `agent` calls
    whatever it was given."""
    source = """
class Agent:
    def collect(self):
        pass

agent = Agent()

def main_loop():
    for i in range(10):
        agent.collect()

def other(agent):
    agent.collect()

def rebinds():
    agent = make()
    agent.collect()
"""
    ctx = context(source)
    Traversal(ctx, []).run()
    assert lines(CallSites.of(ctx).callers(defs(ctx)["Agent.collect"])) == [10]


def test_a_function_stored_on_self_is_called_through_the_attribute():
    """`self.neg_loss = _neg_loss` in `__init__`, `self.neg_loss(out, target)` in `forward`: the
    module's function runs where the attribute is called. Not where the attribute is bound to
    two functions, nor a method of that name (it wins)."""
    source = """
from torch.nn.functional import relu

def _neg_loss(pred, gt):
    return pred

def _other(pred, gt):
    return gt

class FocalLoss:
    def __init__(self, fast):
        self.neg_loss = _neg_loss
        self.either = _neg_loss if fast else _other
        self.swapped = _other
        if fast:
            self.swapped = _neg_loss
        self.act = relu

    def forward(self, out, target):
        return self.act(self.neg_loss(out, target) + self.either(out, target) + self.swapped(out, target))
"""
    ctx = context(source)
    Traversal(ctx, []).run()
    found = {name: lines(CallSites.of(ctx).callers(function)) for name, function in defs(ctx).items()}
    assert found["_neg_loss"] == [20]
    assert found["_other"] == []
