"""What runs on the host and what lives there: input-pipeline code (ptlint.semantics.pipeline),
devices, and values whose read-back waits for nothing (ptlint.semantics.values)."""

from __future__ import annotations

import ast

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import Traversal
from ptlint.semantics.pipeline import in_host_code, pipeline_path
from ptlint.semantics.uses import needed_on_host
from ptlint.semantics.values import (
    already_waited,
    in_host_memory,
    is_cpu_device,
    is_device,
    may_be_device,
)


@pytest.mark.parametrize("path,expected", [
    ("pkg/data/loader.py", True),
    ("pkg/Datasets/coco.py", True),  # any case
    ("speechbrain/augment/noise.py", True),
    ("pkg\\transforms\\resize.py", True),
    ("pkg/collate.py", True),
    ("pkg/my_dataset.py", True),
    ("models/image_processing_vit.py", True),
    ("tools/plot_losses.py", True),
    ("export/onnx_runtime.py", True),
    ("pkg/models/resnet.py", False),
    ("data.py", False),  # a file named like a folder is not in one
    ("pkg/metadata/x.py", False),
])
def test_pipeline_path(path, expected):
    assert pipeline_path(path) is expected


class Probe:
    """Asks a question at every call of `probe(...)`, where the traversal is."""

    def __init__(self, ctx: FileContext, question) -> None:
        self.ctx = ctx
        self.question = question
        self.seen: list[bool] = []

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            self.seen.append(self.question(node, self.ctx))


def probe(source: str, question, path: str = "m.py") -> list[bool]:
    ctx = FileContext(SourceFile(path, source), ast.parse(source))
    found = Probe(ctx, question)
    Traversal(ctx, [found]).run()
    return found.seen


def test_in_host_code():
    source = """
import torch.utils.data as tud
from torch.utils.data import Sampler

probe()
def pool_cpu(x):
    probe()
class Rows(Sampler[int]):
    def __iter__(self):
        probe()
class Frames(tud.IterableDataset):
    def __iter__(self):
        probe()
class Shards(BatchSampler):
    def __iter__(self):
        probe()
class Net(Module):
    def forward(self):
        probe()
def gpu_pool(x):
    probe()
"""
    assert probe(source, lambda node, ctx: in_host_code(ctx)) == [False, True, True, True, True, False, False]
    assert probe(source, lambda node, ctx: in_host_code(ctx), path="pkg/data/rows.py") == [True] * 7


def expression(text: str) -> tuple[ast.expr, FileContext]:
    source = f"import numpy as np\nimport torch\nvalue = {text}\n"
    ctx = FileContext(SourceFile("m.py", source), ast.parse(source))
    Traversal(ctx, []).run()
    return ctx.tree.body[-1].value, ctx


@pytest.mark.parametrize("text,cpu,device,maybe", [
    ('"cpu"', True, True, True),
    ('"cpu:0"', True, True, True),
    ('"cuda:1"', False, True, True),
    ('"mps"', False, True, True),
    ('"gpu"', False, False, True),
    ('torch.device("cpu")', True, True, True),
    ('torch.device("cuda", 0)', False, True, True),
    ("torch.device(name)", False, True, True),
    ("device", False, True, True),
    ("self.local_device", False, True, True),
    ("x.device", False, True, True),
    ("torch.float16", False, False, False),
    ("x.dtype", False, False, False),
    ("other", False, False, True),
    ("1", False, False, False),
])
def test_device_questions(text, cpu, device, maybe):
    node, ctx = expression(text)
    assert (is_cpu_device(node, ctx), is_device(node, ctx), may_be_device(node, ctx)) == (cpu, device, maybe)


def test_a_name_is_a_device_by_what_it_is_bound_to():
    source = 'import torch\nd = torch.device("cuda")\ndevice = some_tensor\nvalue = (d, device)\n'
    ctx = FileContext(SourceFile("m.py", source), ast.parse(source))
    Traversal(ctx, []).run()
    d, device = ctx.tree.body[-1].value.elts
    assert is_device(d, ctx)
    assert not is_device(device, ctx)  # `.to(device)` would mean "like that tensor"
    assert is_cpu_device(None, ctx) is False


@pytest.mark.parametrize("setup,value,expected", [
    ("", "np.zeros(3)", True),  # NumPy
    ("", "[1, 2]", True),  # plain Python
    ("", "torch.ones(3)", True),  # a factory without a device
    ("", "torch.ones(3, device='cuda')", False),
    ("", "model(x).cpu()", True),
    ("labels_cpu = f(x)\n", "labels_cpu", True),  # named so
    ("state_dict = torch.load(p)\n", "state_dict['w']", True),  # a checkpoint
    ("sd = load(p)\nrow = sd['w']\n", "row", True),  # assigned from one
    ("a = f(x).astype('float32')\n", "a[0]", True),  # a NumPy array's method
    ("", "model(x)", False),
    ("out = model(x)\n", "out.sum()", False),
    # the last move decides: the input's copy to the device does not put the result there
    ("", "F.log_softmax(model(x.to(device)), -1).cpu()", True),
    ("", "F.log_softmax(model(x.cpu()), -1).to(device)", False),
    ("", "model(x.to(device)).to('cpu')", True),
    # a name rebuilt from itself by torch ops stays where its other values put it
    ("logits = model(x).cpu()\nlogits = torch.gather(logits, 1, index)\n", "logits.sum()", True),
    ("logits = model(x)\nlogits = torch.gather(logits, 1, index)\n", "logits.sum()", False),
    ("logits = model(x).cpu()\nlogits = torch.gather(model(x), 1, index)\n", "logits.sum()", False),
    ("logits = model(x).cpu()\nlogits = torch.zeros_like(logits, device='cuda')\n", "logits.sum()", False),
    ("logits = model(x).cpu()\nlogits = torch.gather(logits, 1, index).squeeze(-1)\n", "logits.sum()", True),
    # a tensor built on the host, then moved: on the device whatever it was
    ("x = torch.zeros(3)\nx = x.cuda()\n", "x.sum()", False),
    ("x = torch.zeros(3)\nx = torch.gather(x, 0, i).to(device)\n", "x.sum()", False),
    ("x = torch.zeros(3)\nx = x.float()\n", "x.sum()", True),
])
def test_in_host_memory(setup, value, expected):
    node, ctx = expression(f"0\n{setup}value = {value}")
    assert in_host_memory(node, ctx) is expected


def test_in_host_memory_when_the_code_checks_the_type():
    source = """
import numpy as np
import torch
for i in items:
    if isinstance(i, np.ndarray):
        probe(i.nonzero()[0])
    if torch.is_tensor(i):
        probe(i)
    if hasattr(i, "tolist"):
        probe(i)
    probe(i)
"""
    assert probe(source, lambda node, ctx: in_host_memory(node.args[0], ctx)) == [True, True, True, False]


@pytest.mark.parametrize("setup,value,expected", [
    ("", "torch.nonzero(m)", True),
    ("", "m.nonzero()[:, 0]", True),
    ("", "torch.where(m)[0]", True),  # one argument: the indices
    ("", "torch.where(m, a, b)", False),
    ("", "x.unique()", True),
    ("hits = x.masked_select(m)\n", "hits", True),
    ("hits = x.sum()\n", "hits", False),
    ("", "x.sum()", False),
])
def test_already_waited(setup, value, expected):
    node, ctx = expression(f"0\n{setup}value = {value}")
    assert already_waited(node, ctx) is expected


def test_needed_on_host():
    source = """
for x in xs:
    if probe(x) == eos:
        break
    token = probe(x)
    if token == eos:
        return
    assert probe(x) > 0, probe(x)
    names[int(probe(x))]
    actions = probe(x)
    clipped = np.clip(actions, -1, 1)
    env.step(clipped)
    self.envs.step(probe(x))
    total += probe(x)
    if probe(x) > best:
        best = x
"""
    assert probe(source, lambda node, ctx: needed_on_host(node, ctx)) == [
        True,  # decides whether the loop goes on
        True,  # through a name tested so
        True, False,  # an assertion's test, not its message
        True,  # picks a Python object
        True,  # goes to an environment's step, through a derived name
        True,  # straight into one
        False,
        False,  # an `if` that does not leave the loop
    ]


def test_a_batch_part_the_loop_never_moves_is_in_host_memory():
    """The loop moves the parts it computes with (`.to(device)`, `.cuda()`); the part it leaves is
    the loader's host tensor. Not when nothing is moved, when only a move to the CPU happens, when
    the part itself is moved, or when the name is also bound elsewhere."""
    source = """
import torch
for image, caption, image_id in loader:
    image = image.to(device, non_blocking=True)
    probe(image_id)
    probe(image)
for i, (x, ids) in enumerate(loader):
    x = x.cuda()
    for text, one in zip(captions, ids):
        probe(one)
for x, ids in loader:
    probe(ids)
for x, ids in loader:
    x = x.to("cpu")
    probe(ids)
for x, ids in loader:
    x, ids = x.cuda(), ids.cuda()
    probe(ids)
for x, ids in loader:
    x = x.cuda()
    ids = remap(ids)
    probe(ids)
for x, ids in loader:
    y = other.cuda()
    probe(ids)
for x, y in loader:
    x = x.float().to(device)
    y = y.float()
    probe(y)
    probe(y)
for x, y in loader:
    x = x.float().to(device)
    y = y.float().cuda()
    probe(y)
for x, y in loader:
    x = x.float().to(device)
    y = torch.cat([y, y]).to(device)
    probe(y)
"""
    assert probe(source, lambda node, ctx: in_host_memory(node.args[0], ctx)) == \
        [True, False, True, False, False, False, False, False, True, True, False, False]


def test_the_device_of_a_batch_part_left_on_the_host_is_the_cpu():
    """`.to(y.device)` of a part the loop leaves on the host copies nothing; of a part it moves,
    or of any other tensor, it may."""
    source = """
import torch
for x, y in loader:
    x = x.float().to(device)
    y = y.float()
    probe(y.device)
    probe(x.device)
    probe(z.device)
for x, y in loader:
    x = x.to(y.device)
    y = y.to(x.device)
    probe(y.device)
"""
    assert probe(source, lambda node, ctx: is_cpu_device(node.args[0], ctx)) == [True, False, False, False]


def test_needed_on_host_through_asserts_comprehensions_and_actions():
    source = """
import math

class Agent:
    def select_action(self, state):
        return probe(state)
    def act(self, state):
        value = probe(state)
        return value
    def get_action(self, state):
        value = probe(state)
        return state
    def actor_loss(self, state):
        return probe(state)

for x in xs:
    value = probe(x)
    assert math.isfinite(value)
    kind = probe(x)
    assert isinstance(kind, float)
    reduced = {k: probe(v) for k, v in x.items()}
    if math.isnan(sum(reduced.values())):
        raise FloatingPointError
    loss_value = probe(x)
    if not math.isfinite(loss_value):
        print(loss_value)
        assert math.isfinite(loss_value)
"""
    assert probe(source, lambda node, ctx: needed_on_host(node, ctx)) == [
        True,  # returned by an action selection
        True,  # assigned, and the name returned there
        False,  # assigned, and something else returned
        False,  # `actor_loss` is not an action selection
        True,  # asserted through its name
        False,  # only its type is asserted
        True,  # a comprehension of reads tested after it
        True,  # tested where an assertion in the branch stops the program
    ]
