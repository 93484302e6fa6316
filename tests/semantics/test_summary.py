"""Facts a file's summary reads from its text alone."""

from __future__ import annotations

import textwrap

import pytest

from ptlint.semantics.summary import names_accelerator


@pytest.mark.parametrize("text", [
    "x = x.cuda()", "torch.device('xpu')", "import torch_xla.core.xla_model as xm", "from accelerate import Accelerator",
    "import lightning.pytorch as pl", "import deepspeed", "fabric = Fabric()", "import colossalai",
    "nn.DataParallel(model)", "backend='nccl'", "torch.cuda.get_device_name()", "DistributedDataParallel(m, device_ids=[0])",
    "import ray.train", "torch.backends.mps.is_available()", "device = 'npu'", "x.to('hpu')", "# on a tpu",
    "x = y.to(batch.device)", "inputs.device\n",
])
def test_text_that_names_an_accelerator(text):
    assert names_accelerator(text)


@pytest.mark.parametrize("text", [
    "x = x.float()", "dumps = 1", "inputs.devices", "mpsx = 1", "tpus = 2", "npu_count", "self.device_map = {}",
    "cpu = 'cpu'", "",
])
def test_text_that_does_not(text):
    assert not names_accelerator(text)


def summary_of(text: str) -> dict:
    from ptlint.engine.source import SourceFile
    from ptlint.engine.traversal import lint_and_summarize

    _, summary = lint_and_summarize(SourceFile("m.py", textwrap.dedent(text)), [], summarize=True)
    return summary


@pytest.mark.parametrize("code,expected", [
    ("getattr(self, name)", True),  # any method of the object
    ("getattr(cls, name)", True),
    ("getattr(obj, name)(1)", True),  # a method called by its computed name
    ("getattr(obj, name)", False),  # a submodule read by name (model surgery): calls nothing
    ("getattr(self, 'step')", False),  # a name spelled out is a word the solve sees
    ("getattr(obj, 'step')(1)", False),
    ("operator.methodcaller(name)", True),
    ("methodcaller('step')", False),
    ("attrgetter(name)", True),
    ("setattr(obj, name, 1)", False),
    ("hasattr(obj, name)", False),
    ("vars(args)", False),
    ("getattr()", True),
])
def test_a_method_may_be_reached_by_a_computed_name(code, expected):
    assert summary_of(f"import operator\n\ndef f(self, obj, cls, name, args):\n    return {code}\n")[
        "attribute_lookup"] is expected


@pytest.mark.parametrize("code,expected", [
    ("getattr(self, name)(x)", ["Net"]),  # only what the instance holds: its class's methods
    ("getattr(self, 'layer' + str(i))(x)", ["Net"]),
    ("getattr(obj, name)(x)", True),  # another object's method: any class's
    ("getattr(self, 'head')(x)", False),
])
def test_a_lookup_on_self_reaches_only_its_own_class(code, expected):
    assert summary_of(f"class Net:\n    def forward(self, obj, name, x, i):\n        return {code}\n")[
        "attribute_lookup"] == expected


def test_methods_only_the_project_can_call():
    methods = summary_of("""
        import torch
        from torch import nn
        from elsewhere import Foreign, register


        class Plain:
            def run(self): ...
            def _helper(self): ...
            def __len__(self): ...
            @staticmethod
            def make(): ...
            @classmethod
            def build(cls): ...
            @property
            def size(self): ...
            @size.setter
            def size(self, value): ...
            @register
            def hook(self): ...


        class Old(object):
            def run(self): ...


        class Net(nn.Module):
            def forward(self, x): ...
            def extra_repr(self): ...
            def reset_parameters(self): ...
            def encode(self, x): ...


        class Deep(torch.nn.Module):
            def encode(self, x): ...


        class Child(Plain):
            def more(self): ...


        class Framework(Foreign):
            def on_step(self): ...


        class Meta(nn.Module, metaclass=type):
            def encode(self, x): ...


        class Empty(nn.Module):
            pass


        @register
        class Hook(object):
            def before_train_epoch(self, runner): ...
    """)["methods"]
    assert methods == {"Plain": ["run", "_helper", "make", "build", "size", "size"], "Old": ["run"],
                       "Net": ["encode"], "Deep": ["encode"], "Child": ["more"], "Empty": []}


def test_every_attribute_name_the_file_uses():
    assert summary_of("x = a.b.c\na.d = 1\ndef f(self):\n    self.e()\n")["attributes"] == "b c d e"


def callees(text: str) -> list:
    return [edge[1] for edge in summary_of(text)["edges"] if edge[1][0] == "i"]


def test_instances_of_a_class_in_their_own_scope():
    found = callees("""
        class Meter:
            def update(self, v): ...


        def setup():
            meter = Meter()
            meter.update(1)
            return meter


        def other(meter):
            meter.update(2)


        meter = setup()
        meter.update(3)
        logger = Meter()
        logger.update(4)
    """)
    # `setup`'s own instance, and the module's `logger`; not `other`'s parameter, nor the module's
    # `meter` (assigned what `setup()` returns, not a `Meter(...)` call of its own)
    assert found == [["i", ["l", "Meter"], "update"], ["i", ["l", "Meter"], "update"]]


def test_instances_held_on_self_in_any_method():
    found = callees("""
        class Meter:
            def update(self, v): ...


        class Other:
            def update(self, v): ...


        class Trainer:
            def __init__(self):
                self.meter = Meter()
                self.mixed = Meter()

            def reset(self):
                self.mixed = Other()

            def step(self):
                self.meter.update(1)
                self.mixed.update(2)

            class Inner:
                def go(self):
                    self.meter.update(3)

            def log(self):
                self.unknown = make_meter()
                self.unknown.update(4)
                self.meter.update(5)
                self.moved = Other().to("cuda").eval()
                self.moved.update(6)
                self.copied = Meter().clone()
                self.copied.update(7)
    """)
    # `self.mixed` may hold either class (one per method): the call may run either `update`;
    # `self.unknown` holds what a function returns: nothing is known of it; `.to(...)` and
    # `.eval()` return the module they are called on, `.clone()` may not
    assert sorted(map(str, found)) == sorted(map(str, [
        ["i", ["l", "Meter"], "update"], ["i", ["l", "Meter"], "update"], ["i", ["l", "Other"], "update"],
        ["i", ["l", "Meter"], "update"], ["i", ["l", "Other"], "update"]]))


@pytest.mark.parametrize("binding", [
    "import os as x", "from os import path as x", "x = 1", "def x(): pass", "class x: pass",
    "try:\n    pass\nexcept Exception as x:\n    pass", "def f():\n    global x\n    x = 1",
    "for x in []:\n    pass", "with open('f') as x:\n    pass", "match 1:\n    case [*x]:\n        pass",
    "match 1:\n    case {**x}:\n        pass", "match 1:\n    case int() as x:\n        pass",
    "def f(x):\n    return x", "(x := 1)",
])
def test_every_way_of_binding_a_name_counts(binding):
    """A file that uses only names it binds is whole (`unbound` False); one that uses a name bound
    nowhere (an exercise with blanks) is not."""
    assert summary_of(f"{binding}\nprint(x)\n")["unbound"] is False
    assert summary_of(f"{binding}\nprint(y)\n")["unbound"] is True


def test_the_loops_and_classes_the_scan_finds():
    found = summary_of("""
        import torch


        class A:
            class B:
                pass


        for x in loader:
            loss = model(x)
            loss.backward()
    """)
    assert found["trains"] is True
    assert sorted(found["classes"]) == ["A", "A.B"]


def test_instances_of_a_class_through_a_module_level_alias():
    """`Exp = Exp_Main` then `exp = Exp(args)`: the experiment loop of a script (LTSF-Linear's,
    Informer's) calls the training method of the aliased class. An alias bound twice, or an alias
    of an alias, names no class."""
    found = callees("""
        class Exp_Main:
            def train(self, i): ...


        class Other:
            def train(self, i): ...


        Exp = Exp_Main
        Twice = Exp_Main
        Twice = Other
        Again = Exp

        for ii in range(3):
            exp = Exp(args)
            exp.train(ii)
        twice = Twice(args)
        twice.train(0)
        again = Again(args)
        again.train(0)
    """)
    assert found == [["i", ["l", "Exp_Main"], "train"]]


def test_module_level_assignments_and_loops_are_scanned_once():
    """Each assignment and loop once (an alias assigned once is one value, not two)."""
    import ast

    from ptlint.engine.file_context import FileContext
    from ptlint.engine.source import SourceFile
    from ptlint.semantics import summary

    text = "x = 1\nfor i in range(3):\n    y = i\nwhile x:\n    x = 0\n\ndef f():\n    z = 2\n"
    ctx = FileContext(SourceFile("m.py", text), ast.parse(text))
    summary.summarize(ctx)
    module = summary._assignment_tables(ctx)[0][id(ctx.tree)]
    assert {name: len(values) for name, values in module.items()} == {"x": 2, "y": 1}
    scan = summary._Scan(ctx.tree)
    assert len(scan.loops) == 2 and len(scan.assignments) == 4


def test_eval_of_a_text_reaches_the_files_globals_only():
    """`eval(opt.model)` may name any global of the file: its own defs, the modules it imports and
    the names it imports from them (a def, or a submodule: the solve tells which); a text spelled
    out names only what it spells (words the file already uses)."""
    assert summary_of("import sys\nimport torch\n\nmodel = eval('torch.nn.Linear')\n")["names"]["lookups"] == []
    names = summary_of("import sys\nimport torch\nfrom . import models\n\nm = eval(sys.argv[1])\n")["names"]
    assert names["lookups"] == [".", ["n", 1, "", ["models"]]]  # torch and sys are not the project's
    assert "models" in names["roots"].split()
    names = summary_of("import sys\nfrom .nets import *\n\nm = eval(sys.argv[1])\n")["names"]
    assert names["lookups"] == [".", ["m", 1, "nets", []]]  # a star import: the whole module
    assert summary_of("exec(compile(src, 'f', 'exec'))\n")["names"]["lookups"] == ["."]
