"""The name resolver (ptlint.semantics.names): what a name means where it is used.

A line ending in `# <name>: <kind> [target]` says what every use of <name> on it must mean; it
is checked twice: asked at the node (`meaning(name, at=node)`, through parent links) and asked
by the traversal while it visits the node (`meaning(name)`, through the scopes it is in)."""

from __future__ import annotations

import ast
import re

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import Traversal
from ptlint.semantics.names import FREE, IMPORTED, LOCAL, UNKNOWN, Meaning

MARK = re.compile(r"#\s*(?P<name>\w+):\s*(?P<kind>imported|local|free|unknown)\s*(?P<target>[\w.]+)?\s*$")


class Probe:
    """Records what the traversal says each name means as it visits it."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.seen: dict[int, Meaning] = {}

    def visit_Name(self, node: ast.Name) -> None:
        self.seen[id(node)] = self.ctx.meaning(node.id)


def context(source: str) -> FileContext:
    return FileContext(SourceFile("t.py", source), ast.parse(source))


def check(source: str) -> None:
    ctx = context(source)
    probe = Probe(ctx)
    Traversal(ctx, [probe]).run()
    uses: dict[tuple[int, str], list[ast.Name]] = {}
    for node in ast.walk(ctx.tree):
        if isinstance(node, ast.Name):
            uses.setdefault((node.lineno, node.id), []).append(node)
    marked = 0
    for number, line in enumerate(source.splitlines(), 1):
        match = MARK.search(line)
        if not match:
            continue
        marked += 1
        expected = Meaning(match.group("kind"), match.group("target"))
        nodes = uses.get((number, match.group("name")))
        assert nodes, f"line {number}: no use of {match.group('name')}"
        for node in nodes:
            assert ctx.meaning(node.id, at=node) == expected, f"line {number} (asked at the node)"
            assert probe.seen[id(node)] == expected, f"line {number} (asked by the traversal)"
    assert marked


CASES = {
    "imports at module level, in every spelling": """
import torch
import torch.nn.functional as F
import numpy as np, os.path
from torch import nn as tnn
from torch.cuda import synchronize
torch.sum  # torch: imported torch
F.relu  # F: imported torch.nn.functional
np.zeros  # np: imported numpy
os.path.join  # os: imported os
tnn.Linear  # tnn: imported torch.nn
synchronize()  # synchronize: imported torch.cuda.synchronize
print(len([]))  # print: free
""",
    "an import in a function binds a local of that function and of functions inside it": """
def f():
    import numpy as torch
    torch.zeros  # torch: imported numpy
    def g():
        torch.ones  # torch: imported numpy
    return torch

def h():
    torch.zeros  # torch: free
""",
    "parameters, local variables, defs and classes shadow an import": """
import torch
import torch.nn.functional as F

def f(torch, *args, F=None, **kw):
    torch.sum  # torch: local
    F.relu  # F: local

def g(x):
    F = x.shape[0]
    return F + 1  # F: local

def h(x):
    def torch():
        pass
    class F:
        pass
    torch()  # torch: local
    F()  # F: local

def k():
    torch.sum  # torch: imported torch

square = lambda torch: torch * torch  # torch: local
""",
    "a def or class after an import replaces it; an import after a def replaces the def": """
import torch

def torch():
    pass

torch()  # torch: local

class np:
    pass

import numpy as np

np.zeros  # np: imported numpy
""",
    "an assignment beside an import does not unbind it (an import fallback, an alias)": """
try:
    import apex
except ImportError:
    apex = None

def f(x):
    import numpy as np
    np = np.asarray(x)  # np: imported numpy
    return apex.amp  # apex: imported apex
""",
    "a class body's names are not seen by its methods": """
import torch

class Config:
    torch = None
    field = torch  # torch: local

    def method(self):
        return torch.ones(1)  # torch: imported torch
""",
    "comprehension variables are locals of the comprehension; the first iterable is outside": """
import torch

def f(xs):
    doubled = [torch * 2 for torch in xs]  # torch: local
    pairs = [t for torch in (
        torch.chunk(xs, 2)  # torch: imported torch
    ) for t in (
        torch  # torch: local
    )]
    total = {k: v for k, v in xs}
    return torch.stack(doubled)  # torch: imported torch
""",
    "decorators, defaults and annotations are evaluated outside the function": """
import torch

def f(torch=torch.zeros(1)):  # torch: imported torch
    return torch  # torch: local

@torch.no_grad()  # torch: imported torch
def g(x: torch.Tensor, torch: int = 0):  # torch: imported torch
    return torch  # torch: local
""",
    "`global` sends a name to the module, `nonlocal` to the enclosing function": """
def setup():
    global np
    import numpy as np

def use():
    return np.zeros(3)  # np: imported numpy

def outer():
    import torch
    def inner():
        nonlocal torch
        return torch.ones(1)  # torch: imported torch
    def other():
        global torch
        return torch.ones(1)  # torch: free
""",
    "del makes a name unknown; a star import makes every unbound name unknown": """
from helpers import *
import numpy as np

def f():
    return mystery(np.zeros(1))  # mystery: unknown

def g(x):
    import torch
    del torch
    return torch  # torch: unknown
""",
    "a star import binds the conventional module names the file uses as modules (utils imports torch)": """
from utils import *

def f(x):
    y = torch.zeros(3)  # torch: imported torch
    z = F.relu(x)  # F: imported torch.nn.functional
    return nn.Linear(3, 3)  # nn: imported torch.nn
""",
    "... and only those: a name the file never uses as a module stays unknown": """
from utils import *

def f(x):
    return np  # np: unknown
""",
    "a relative import binds a module of the project": """
from . import torch
from .utils import F

torch.ones(1)  # torch: local
F.relu  # F: local
""",
    "other bindings: for, with, except, walrus, match": """
import torch
import numpy as np

def f(xs, path):
    for torch in xs:
        pass
    return torch  # torch: local

def g(path):
    with open(path) as np:
        return np.read()  # np: local

def h():
    try:
        pass
    except ValueError as torch:
        return torch  # torch: local

def k(xs):
    if (np := len(xs)) > 0:
        return np  # np: local

def m(command):
    match command:
        case [torch, *np]:
            return torch  # torch: local
""",
    "a global name is bound in the module, by any statement in any function": """
import numpy as np

def setup(items, path):
    global F, helper, counter, err, cfg, torch, mods, rel, np
    F = make()
    def helper():
        pass
    for counter in items:
        pass
    try:
        pass
    except ValueError as err:
        pass
    with open(path) as cfg:
        pass
    import torch.nn
    from os import path as mods
    from . import rel
    return np.zeros(1)  # np: imported numpy

def more(command):
    global cache, found, hit, picked
    del cache
    match command:
        case [found]:
            pass
        case _:
            picked = 1
    if (hit := command):
        pass

def use():
    cache  # cache: unknown
    found  # found: local
    hit  # hit: local
    picked  # picked: local
    F()  # F: local
    helper()  # helper: local
    counter, err, cfg = 1, 2, 3
    torch.nn  # torch: imported torch
    mods.join  # mods: imported os.path
    rel.x  # rel: local
""",
    "a global declaration of a module import": """
import numpy as np

def f():
    global np
    return np.zeros(1)  # np: imported numpy
""",
    "else and finally blocks bind too; the import decides over a loop, except or match target": """
try:
    pass
finally:
    import numpy as np
if ready:
    pass
else:
    import torch
np.zeros  # np: imported numpy

def f(xs, command):
    import numpy as np
    for np in xs:
        pass
    try:
        pass
    except ValueError as np:
        pass
    match command:
        case {"np": np, **rest}:
            return rest  # rest: local
        case [*np]:
            pass
    return np  # np: imported numpy

torch.ones(1)  # torch: imported torch

def g(xs):
    for x in xs:
        pass
    else:
        torch = 1
    return torch  # torch: local
""",
    "a relative import after an import replaces it; a del stays, whatever comes after": """
import torch
from . import torch

torch.ones(1)  # torch: local

import numpy as np

def f():
    del np
    import numpy as np
    return np  # np: unknown
""",
    "a del in a function says nothing of the module's name elsewhere": """
import torch

def f():
    del torch
    return torch  # torch: unknown

def g():
    return torch  # torch: imported torch
""",
    "answers after a nested function are the enclosing function's": """
import torch
torch.ones  # torch: imported torch

def f(torch):
    def g():
        pass
    return torch  # torch: local
""",
    "walrus: nested, in an except clause and a match guard; the import still decides": """
def f(xs, command):
    import numpy as np
    if (a := (b := len(xs))):
        return a, b  # b: local
    try:
        pass
    except (err := ValueError):
        return err  # err: local
    match command:
        case x if (guard := x):
            return guard  # guard: local
    if (np := 3):
        return np  # np: imported numpy
""",
}


@pytest.mark.parametrize("name", CASES)
def test_meaning(name):
    check(CASES[name])


def test_qualname_resolves_the_head_name_where_the_traversal_is():
    source = """
import torch as T

def f(T):
    return T.nn.Linear
"""
    ctx = context(source)
    attribute = next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Attribute) and n.attr == "Linear")
    assert ctx.qualname(attribute) == "torch.nn.Linear"  # at module level: the import
    function = ctx.tree.body[1]
    ctx.names.enter(function)
    assert ctx.qualname(attribute) is None  # in f: its parameter
    ctx.names.leave()
    assert ctx.names.qualname(attribute, at=attribute) is None
    assert ctx.names.qualname(ast.parse("f().x").body[0].value) is None  # no name at its head


def test_visible_lists_the_imports_in_scope_inner_ones_winning():
    source = """
import torch
import numpy as np
import torch.nn.functional as F
from . import utils

def f(np):
    import math as F
"""
    ctx = context(source)
    assert ctx.names.visible() == {"torch": "torch", "np": "numpy", "F": "torch.nn.functional"}
    assert list(ctx.names.visible()) == ["torch", "np", "F"]  # source order
    ctx.names.enter(ctx.tree.body[-1])
    assert ctx.names.visible() == {"torch": "torch", "F": "math"}


def test_visible_at_a_node_leaves_out_what_a_local_shadows_there():
    source = "import torch\nimport torch.nn.functional as F\n\ndef step(model, torch=None):\n    return model\n" \
             "\ndef other(F):\n    import numpy as torch\n    return F\n"
    ctx = context(source)
    step, other = ctx.tree.body[2], ctx.tree.body[3]
    assert ctx.names.visible(at=step.body[0].value) == {"F": "torch.nn.functional"}
    assert ctx.names.visible(at=other.body[1].value) == {"torch": "numpy"}
    assert ctx.names.visible(at=ctx.tree) == {"torch": "torch", "F": "torch.nn.functional"}
    assert ctx.names.visible() == ctx.names.visible(at=ctx.tree)  # the traversal is at the module


def test_imports_module_sees_the_module_and_the_scopes_the_traversal_is_in():
    ctx = context("import os\n\ndef f():\n    import torch.nn as nn\n")
    assert not ctx.names.imports_module("torch")
    assert ctx.names.imports_module("os")
    assert not ctx.names.imports_module("o")  # a prefix of a module's name is not the module
    ctx.names.enter(ctx.tree.body[-1])
    assert ctx.names.imports_module("torch")
    assert ctx.names.imports_module("torch.nn")
    assert not ctx.names.imports_module("torch.nn.functional")


def test_is_local_is_true_only_for_the_projects_own_bindings():
    ctx = context("import time\nfrom x import *\nprint = log\n\ndef f(open):\n    pass\n")
    assert ctx.names.is_local("print")
    assert not ctx.names.is_local("time")  # the module
    assert not ctx.names.is_local("len")  # unknown: the star import may bind it
    assert ctx.meaning("len") == Meaning(UNKNOWN)
    ctx.names.enter(ctx.tree.body[-1])
    assert ctx.names.is_local("open")
    assert ctx.meaning("time") == Meaning(IMPORTED, "time")
    assert ctx.meaning("open", at=ctx.tree.body[0]) == Meaning(UNKNOWN)
    assert context("x = 1\n").meaning("open") == Meaning(FREE)


def test_a_walrus_name_asked_about_first():
    ctx = context("import numpy as np\n\ndef f(xs):\n    if (np := len(xs)):\n        return np\n")
    use = ctx.tree.body[1].body[0].body[0].value
    assert ctx.meaning("np", at=use) == Meaning(LOCAL)  # the first question: the walrus is found
    assert ctx.meaning("np") == Meaning(IMPORTED, "numpy")


def test_a_comprehensions_first_iterable_is_resolved_in_the_enclosing_function():
    ctx = context("import torch\n\ndef g(torch):\n    return [x for x in torch.chunk(2)]\n")
    head = next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id == "torch")
    assert ctx.meaning("torch", at=head) == Meaning(LOCAL)
    assert ctx.names.is_local("torch", at=head)
    assert not ctx.names.is_local("torch")  # at module level: the import


def test_a_lambda_and_a_comprehension_asked_about_directly():
    ctx = context("f = lambda a, *b, c=1, **d: a\ng = [x for x, (y, *z) in w if y]\n")
    lam = ctx.tree.body[0].value
    comp = ctx.tree.body[1].value
    for name in "abcd":
        assert ctx.meaning(name, at=lam.body) == Meaning(LOCAL)
    for name in "xyz":
        assert ctx.meaning(name, at=comp.elt) == Meaning(LOCAL)
    assert ctx.meaning("w", at=comp.elt) == Meaning(FREE)
