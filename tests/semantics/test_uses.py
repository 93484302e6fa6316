"""Where a read's value goes, and whether a read adds a wait of its own (ptlint.semantics.uses);
tensor attributes of classes and reads hidden in GradScaler calls (ptlint.semantics.values)."""

from __future__ import annotations

import ast

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import Traversal
from ptlint.semantics.uses import (
    HOST,
    KEPT,
    LOG,
    METER,
    NONE,
    after_drain,
    avoidable,
    before_read,
    destination,
    elementwise_read,
    logged_tensor,
    masked_write_only,
    waits_anyway,
)
from ptlint.semantics.values import (
    STRONG,
    hidden_read,
    in_host_memory,
    tensor_attributes,
    tensor_kind,
)


class Probe:
    """Asks a question at every call of `probe(...)` (or at every `if`), where the traversal is."""

    def __init__(self, ctx: FileContext, question) -> None:
        self.ctx = ctx
        self.question = question
        self.seen: list = []

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            self.seen.append(self.question(node, self.ctx))

    def visit_If(self, node: ast.If) -> None:
        if isinstance(self.question, tuple):
            self.seen.append(self.question[0](node, self.ctx))


def probe(source: str, question) -> list:
    ctx = FileContext(SourceFile("m.py", source), ast.parse(source))
    found = Probe(ctx, question)
    Traversal(ctx, [found]).run()
    return found.seen


def goes(body: str, setup: str = "") -> int:
    """Where the value of the one `probe(x)` in a training loop's body goes."""
    source = f"import torch\nimport numpy as np\n{setup}\ndef f(model, loader, log, writer, tok):\n" \
             f"    for x in loader:\n" + "".join(f"        {line}\n" for line in body.strip().splitlines()) + \
             "    return 0\n"
    [answer] = probe(source, destination)
    return answer


@pytest.mark.parametrize("body,expected", [
    # logging, metrics, progress bars, meters, running totals
    ("print(probe(x))", LOG),
    ('writer.add_scalar("loss", probe(x), 0)', LOG),
    ('log.info("loss %.3f", probe(x))', LOG),
    ('pbar.set_postfix(loss=probe(x))', LOG),
    ("losses_m.update(probe(x), 4)", METER),  # a meter: logging for a scalar, host work for a whole tensor
    ("running_metrics.update(gt, probe(x))", METER),
    ('wandb.log({"loss": probe(x)})', LOG),
    ('self.log("loss", round(probe(x), 4))', LOG),
    ('v = probe(x)\nmsg = f"{v:.3f}"\nprint(msg)', LOG),  # through names
    ('stats = {}\nstats["loss"] = probe(x)\nwriter.log(stats)', LOG),  # a dict of stats that is logged
    ("total = 0.0\ntotal += probe(x)\nprint(total / 2)", LOG),  # a running total, printed
    ('vals = []\nvals.append(probe(x))\nprint(np.mean(vals))', LOG),  # NumPy carries the value on
    # the host needs it
    ("print(tok.decode(probe(x)))", HOST),
    ("ids = probe(x)\ntext = tok.batch_decode([ids])\nprint(text)", HOST),
    ("sys.stdout.write(str(probe(x)))", KEPT),  # sys.stdout: not visibly a file (below: `f.write`)
    ('f.write(f"{probe(x)}")', HOST),
    ("logfile.write(str(probe(x)))", LOG),  # a file named for logging
    ("coco_evaluator.update(probe(x))", HOST),
    ("metric.add_batch(predictions=probe(x))", HOST),
    ("names = ['a', 'b']\nprint(names[probe(x)])", HOST),  # an index into a Python container
    ("names = sorted(d)\nchosen = names[probe(x)]\nhelper(chosen)", HOST),
    ("helper(self.class_names[probe(x)])", HOST),  # a container named so
    ("helper(vocab[probe(x)])", HOST),
    ("helper(self.is_thing_map[probe(x)])", HOST),
    ("helper('abc'[probe(x)])", HOST),
    ("first = [1, 2]\nnames = first\nhelper(names[probe(x)])", HOST),  # through a name assigned one
    ("emb = model(x)\nhelper(emb[probe(x)])", KEPT),  # a tensor's row: indexed on the device
    ("helper(out.last_hidden_state[probe(x)])", KEPT),  # nothing shows a Python container
    ("helper(hidden[probe(x)])", KEPT),
    ("helper(pixels[probe(x):5])", HOST),  # a slice bound: Python slices need the number
    ("helper(pixels[:, probe(x)])", HOST),
    ("for i in range(probe(x)):\n    pass", HOST),
    ("helper(torch.zeros(probe(x), 4))", HOST),  # a size the host allocates with
    ("n = int(probe(x))\nhelper(torch.empty((n,)))", HOST),
    ("helper(torch.arange(probe(x)))", HOST),
    ("helper(x.view(probe(x), -1))", HOST),  # a shape
    ("helper(x.new_zeros(probe(x)))", HOST),
    ("helper(torch.full((2,), probe(x)))", KEPT),  # a fill value could have stayed a tensor
    ("helper(torch.exp(probe(x)))", KEPT),
    ("preds = []\npreds.append(probe(x))\nroc_auc_score(preds, preds)", HOST),
    # kept or passed on: the file does not show what becomes of it
    ("preds = []\npreds.append(probe(x))", NONE),  # the list is never read: nothing goes anywhere
    ("self.preds.append(probe(x))", KEPT),
    ("return probe(x)", KEPT),
    ("helper(probe(x))", KEPT),
    ("if probe(x) > 3:\n    pass", KEPT),
    ("v = probe(x)\nprint(v)\nhelper(v)", KEPT),  # the strongest use wins
    ("v = probe(x)\nprint(v)\ntok.decode(v)", HOST),
    ("q = torch.zeros(9)\nq[: probe(x)] = 1", KEPT),  # a tensor's slice bound could stay on the device
    # dropped
    ("probe(x)", NONE),
    ("v = probe(x)", NONE),
], ids=lambda value: value if isinstance(value, str) else None)
def test_destination(body, expected):
    setup = "import sys\nimport wandb\nfrom sklearn.metrics import roc_auc_score"
    assert goes(body, setup) == expected


def test_a_file_written_after_the_loop_needs_no_value_every_iteration():
    after = ("import numpy as np\ndef f(model, loader, path, out):\n    history = []\n    for x in loader:\n"
             "        history.append(probe(x))\n    np.savetxt(path, history)\n    out.write(str(history))\n")
    assert probe(after, destination) == [KEPT]
    inside = ("import numpy as np\ndef f(model, loader, path, out):\n    for x in loader:\n"
              "        np.savetxt(path, [probe(x)])\n")
    assert probe(inside, destination) == [HOST]
    written = "def f(model, loader, out):\n    for x in loader:\n        out.write(str(probe(x)))\n"
    assert probe(written, destination) == [HOST]
    straight = "import numpy as np\ndef f(model, x, path):\n    np.savetxt(path, [probe(x)])\n"
    assert probe(straight, destination) == [HOST]


def test_a_name_is_followed_a_few_hops_only():
    # v -> a -> b -> c -> print: three names followed, the fourth is too far to see
    assert goes("v = probe(x)\na = v\nb = a\nprint(b)") == LOG
    assert goes("v = probe(x)\na = v\nb = a\nc = b\nprint(c)") == KEPT


@pytest.mark.parametrize("body,scalar,expected", [
    ("print(probe(x))", True, True),
    ("print(probe(x))", False, True),  # a bulk copy that only feeds logging
    ("helper(probe(x))", True, True),  # a scalar read going somewhere unknown stays reported
    ("helper(probe(x))", False, False),  # a bulk copy kept or passed on is not reported
    ("preds = []\npreds.append(probe(x))", False, False),
    ("print(tok.decode(probe(x)))", True, False),
    ("if probe(x) == 2:\n    break", True, False),  # a stop test (needed_on_host)
])
def test_avoidable(body, scalar, expected):
    source = "def f(model, loader, tok):\n    for x in loader:\n" + \
             "".join(f"        {line}\n" for line in body.strip().splitlines())
    assert probe(source, lambda node, ctx: avoidable(node, ctx, scalar)) == [expected]


@pytest.mark.parametrize("body,scalar,expected", [
    ("running_metrics.update(gt, probe(x))", False, False),  # a whole tensor a meter computes with
    ("losses.update(probe(x), 4)", True, True),  # a scalar a meter shows
    ("helper(torch.zeros(probe(x)))", True, False),  # a size
])
def test_avoidable_meters_and_sizes(body, scalar, expected):
    source = "import torch\ndef f(model, loader, gt, losses, running_metrics):\n    for x in loader:\n" + \
             "".join(f"        {line}\n" for line in body.strip().splitlines())
    assert probe(source, lambda node, ctx: avoidable(node, ctx, scalar)) == [expected]


@pytest.mark.parametrize("name,expected", [("select_action", False), ("act", False), ("choose_action", False),
                                           ("evaluate", True), ("react", True)])
def test_an_action_returned_to_the_environment_is_needed(name, expected):
    source = f"import torch\ndef {name}(self, state):\n    q = self.q_net(state)\n    return probe(q.argmax())\n"
    assert probe(source, lambda node, ctx: avoidable(node, ctx, True)) == [expected]


def test_a_buffer_read_is_avoidable_whatever_its_value_is_for():
    source = ("import torch\nclass M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
              "        self.register_buffer('params', torch.tensor([4, 1]))\n    def forward(self, v):\n"
              "        k = int(probe(self.params[0]))\n        return v.view(k, -1)\n")
    assert probe(source, lambda node, ctx: avoidable(node, ctx, True)) == [True]
    assert probe(source.replace("self.params[0]", "v.sum()"), lambda node, ctx: avoidable(node, ctx, True)) == [False]


@pytest.mark.parametrize("body,expected", [
    # a guard on the step's value that skips the iteration, on every iteration's path (also in a try)
    ("loss = model(x)\nif not torch.isfinite(loss):\n    continue\nwriter.add_scalar('l', probe(loss), 0)", True),
    ("try:\n    loss = model(x)\n    if torch.isnan(loss).any():\n        continue\nexcept ValueError:\n    pass\nprobe(loss)", True),
    ("loss = model(x)\nwith ctx:\n    if torch.isnan(loss).any():\n        break\nprobe(loss)", True),
    # another read the host needs: a whole tensor a meter computes with, decoded tokens
    ("out = model(x)\nrunning_metrics.update(x, out.argmax(1).cpu().numpy())\nprobe(out)", True),
    ("out = model(x)\nprobe(out)\nprint(tok.decode(out.argmax(-1).tolist()))", True),
    ("out = model(x)\nprobe(out)\nif local_rank == 0:\n    print(tok.decode(out.tolist()))", True),  # main process
    # a whole tensor the host computes with in a function of its own, or collects
    ("out = model(x)\nprobe(out)\nacc = accuracy(out.cpu().numpy(), x.cpu().numpy())", True),
    ("out = model(x)\nprobe(out)\ncollected.append(out.cpu())\nhelper(collected)", True),
    # in each branch of an if/else; not in one branch only
    ("out = model(x)\nprobe(out)\nif flag:\n    s = helper(out.cpu().numpy())\nelse:\n    s = accuracy(out.cpu().numpy())", True),
    ("out = model(x)\nprobe(out)\nif flag:\n    s = helper(out.cpu().numpy())\nelse:\n    s = 0", False),
    ("out = model(x)\nprobe(out)\nif flag:\n    s = helper(out.cpu().numpy())", False),
    # not every iteration, or not a wait the host needs
    ("loss = model(x)\nif flag:\n    if not torch.isfinite(loss):\n        continue\nprobe(loss)", False),
    ("out = model(x)\nfor o in out:\n    tok.decode(o.tolist())\nprobe(out)", False),
    ("out = model(x)\nprint(out.mean().item())\nprobe(out)", False),  # a logged read: reported itself
    ("out = model(x)\nif out.sum() > 0:\n    helper()\nprobe(out)", False),  # a branch that stays
    ("out = model(x)\ncorrect += out.argmax(1).cpu().sum()\nprobe(out)", False),  # a running total
    ("out = model(x)\nprobe(out)", False),
    ("out = model(x)\ntotal += out.sum()\nprint(tok.decode(out.tolist()))\nprobe(out)", True),  # past a total
    ("out = model(x)\nkept = torch.zeros(3)\nrunning_metrics.update(x, kept.cpu().numpy())\nprobe(out)",
     False),  # a copy of host memory waits for nothing
    ("out = model(x)\nprint(tok.decode(scaler.get_scale()))\nprobe(out)", False),  # GradScaler's own read
    ("out = model(x)\nrunning_metrics.update(out[0].item())\nprobe(out)", False),  # a scalar a meter shows
    ("loss = model(x).mean()\nrunning_metrics.update(loss.cpu())\nprobe(loss)", False),  # one element
])
def test_waits_anyway(body, expected):
    source = "import torch\ndef f(model, loader, tok, writer, running_metrics, ctx, flag, correct, local_rank, total,\n" \
             "      scaler, accuracy, helper, collected):\n" \
             "    for x in loader:\n" + "".join(f"        {line}\n" for line in body.strip().splitlines())
    assert probe(source, waits_anyway) == [expected]


@pytest.mark.parametrize("call,expected", [
    ('writer.add_scalar("loss", loss, step)', "loss"),
    ('writer.add_scalar(tag="loss", scalar_value=loss, global_step=step)', "loss"),
    ('writer.add_scalar(tag="loss", global_step=step)', None),
    ('writer.add_scalar("lr", 0.1, step)', None),  # a number
    ('writer.add_scalars("parts", {"lr": 0.1, "mse": loss}, step)', "loss"),
    ('wandb.log({"loss": loss})', "loss"),
    ('wandb.log(data={"loss": loss})', "loss"),
    ('wandb.log(step=step)', None),
    ('logger.log({"loss": loss})', None),  # not wandb's
    ('writer.add_scalar("host", kept, step)', None),  # in host memory
    ('logger.log("train/loss", loss, step)', "loss"),  # a logger object's log(key, value)
    ('self.logger.log(f"train/{k}", loss)', "loss"),
    ('self.log("train/loss", loss)', None),  # Lightning keeps tensors until it writes
    ('model.log("train/loss", loss)', None),  # not a logger
    ('logger.log(level, loss)', None),  # no key
    ('logger.log("train/lr", 0.1, step)', None),  # a number
])
def test_logged_tensor(call, expected):
    source = ("import torch\nimport wandb\ndef f(model, x, y, writer, logger, step):\n"
              "    loss = torch.nn.functional.mse_loss(model(x), y)\n    kept = torch.zeros(2)\n"
              f"    probe({call})\n")
    found = probe(source, lambda node, ctx: logged_tensor(node.args[0], ctx))
    assert [ast.unparse(n) if n is not None else None for n in found] == [expected]


def test_a_logging_call_given_too_few_arguments_is_no_read():
    source = "import torch\ndef f(model, x, writer):\n    loss = torch.sum(model(x))\n    probe(writer.add_scalar(loss))\n"
    assert probe(source, lambda node, ctx: logged_tensor(node.args[0], ctx)) == [None]


DRAINS = """
import torch
import torch as T
from torch.cuda import synchronize
from torch.cuda import synchronize as wait_all

sync = torch.cuda.synchronize

def train(model, loader, opt, log, flag):
    for x in loader:
        loss = model(x)
        loss.backward()
        torch.cuda.synchronize()
        log.append(probe(loss))
        T.cuda.synchronize()
        probe(loss)
        synchronize()
        probe(loss)
        wait_all()
        probe(loss)
        sync()
        probe(loss)
        torch.cuda.current_stream().synchronize()
        probe(loss)
        opt.step()
        probe(loss)
        probe(loss).item()
        out = model(x)
        probe(out)
        if flag:
            torch.cuda.synchronize()
        probe(out)
        with torch.no_grad():
            torch.cuda.synchronize()
        probe(out)
        opt.step()
        if flag:
            probe(out)
        out = model(x)
        print(out.sum().item())
        acc = (out.argmax(-1) == x).float().mean()
        probe(acc)
        helper(model, x)
        probe(acc)
        log.append(model(x).mean() + probe(acc))
        out = model(x)
        if device_type == "cuda":
            torch.cuda.synchronize()
        probe(out)
        out = model(x)
        if args.device == "mps":
            torch.mps.synchronize()
        elif args.device.startswith("cuda"):
            torch.cuda.synchronize()
        probe(out)
        out = model(x)
        if device == "cuda":
            torch.cuda.synchronize()
        else:
            opt.step()
        probe(out)
        out = model(x)
        if device_type == "cuda":
            log.append(1)
        probe(out)
        out = model(x)
        if model(x).is_cuda:
            torch.cuda.synchronize()
        probe(out)
"""


def test_after_drain():
    assert probe(DRAINS, after_drain) == [
        True, True, True, True, True, True,  # every spelling of a full drain
        False,  # an optimizer step between
        False,  # the same statement: the read comes first (`probe(loss).item()`)
        False,  # a model call between
        False,  # a drain in a branch that may not have run
        True,  # a drain in a `with` body
        False,  # in a branch after device work: the scan goes up to the loop body
        True,  # after another read, with only small ops over results between
        False,  # a call of the project's code between
        False,  # device work in the read's own statement
        True,  # a drain in the accelerator's own branch: it runs where the finding matters
        True,  # ... in a chain of branches over devices
        True,  # ... whatever the branch for the other device does
        False,  # a branch on the device that does not drain
        False,  # a test that itself queues work
    ]


def test_after_drain_stops_at_the_loop_body_and_the_function():
    source = """
import torch

torch.cuda.synchronize()
probe(x)

def f(model, loader):
    torch.cuda.synchronize()
    for x in loader:
        probe(x)

def g(model, loader):
    torch.cuda.synchronize()
    for x in loader:
        print(x)
    probe(x)

def h(model, x):
    torch.cuda.synchronize()
    def inner():
        probe(x)
"""
    assert probe(source, after_drain) == [True, False, True, False]


def test_before_read():
    """`probe()` stands where a drain (`torch.cuda.synchronize()`) is."""
    source = """
import time
import torch

def f(model, loader, opt, meter, log, flag):
    for x in loader:
        loss = model(x)
        probe()
        meter.update(loss.item())
        probe()
        t = time.time()
        log.append(loss.tolist())
        probe()
        opt.step()
        print(loss.item())
        probe()
        if flag:
            print(loss.item())
        probe()
        torch.cuda.synchronize()
        print(loss.item())
        probe()
        with open("f") as handle:
            handle.write(str(loss.cpu()))
        probe()
        helper(model)
        probe(); value = loss.item()
        x = probe()
        print(loss.item())
        probe()
"""
    assert probe(source, before_read) == [
        True,  # a read right after
        True,  # host-only code between (a timer read), then a read
        False,  # an optimizer step between
        False,  # a read in a branch may not run, and nothing after it reads
        False,  # another drain follows: each is its own finding
        True,  # a `with` whose body reads
        False,  # a call of the project's code
        True,  # the read on the same line, as a statement of its own
        False,  # not a statement of its own
        False,  # nothing after it
    ]


def test_a_statement_drains_when_its_read_comes_after_its_work():
    source = """
import torch

def f(model, loader, log):
    for x in loader:
        out = model(x)
        log.append(model(x).sum().item())
        probe(out)
        out = model(x)
        log.append(model(x.cpu()))
        probe(out)
"""
    assert probe(source, after_drain) == [True, False]


@pytest.mark.parametrize("text,expected", [
    ("[probe(v) for v in torch.softmax(z, -1)]", True),
    ("[probe(v) for i, v in enumerate(torch.topk(z, 3).indices)]", True),
    ("[probe(v) for v in rows]", False),  # not visibly a tensor
    ("[probe(v) for v in torch.arange(3)]", False),  # in host memory
    ("[probe(z) for v in torch.softmax(z, -1)]", False),  # not the element
])
def test_elementwise_read(text, expected):
    source = f"import torch\ndef f(z, rows):\n    return {text}\n"
    assert probe(source, lambda node, ctx: elementwise_read(node.args[0], ctx)) == [expected]


def test_elementwise_read_in_a_statement_loop():
    source = """
import torch
def f(z):
    t = torch.sigmoid(z)
    total = 0.0
    for v in t:
        total += probe(v)
    for p in z.parameters():
        total += probe(p.grad)
    return total
"""
    assert probe(source, lambda node, ctx: elementwise_read(node.args[0], ctx)) == [True, False]


@pytest.mark.parametrize("text,expected", [
    ("if m.any():\n        x[m] = 0", True),
    ("if torch.any(m):\n        x[m] *= 2\n        y.masked_fill_(m, 0)", True),
    ("if m.any():\n        x[m] = self.head(x[m])", False),  # runs other code
    ("if m.any():\n        hits.append(x[m])", False),  # keeps Python state
    ("if m.any():\n        x[m] = 0\n    else:\n        x = x * 2", False),
    ("if m.all():\n        x[m] = 0", False),  # an empty mask passes `.all()`: not the same
    ("if m.any():\n        x[n] = 0", False),  # another mask
    ("if m.any():\n        continue", False),  # a guard
])
def test_masked_write_only(text, expected):
    source = f"import torch\ndef f(x, y, m, n, hits):\n    {text}\n"
    assert probe(source, (masked_write_only,)) == [expected]


TENSOR_CLASS = """
import torch
from torch import nn

class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

class Memory(Base):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.count = torch.zeros(())
        self.moved = torch.zeros(3)
        self.name = "memory"
        self.maybe = torch.zeros(3)
        self.lazy = None

    def reset(self, device):
        self.moved = self.moved.to(device)
        self.maybe = 0
        self.lazy = torch.ones(2, device=device)

    def step(self):
        probe(self.ptr, self.scale, self.count, self.moved, self.name, self.maybe, self.lazy, self.other)
"""


def test_tensor_attributes():
    def question(node, ctx):
        return [(tensor_kind(a, ctx) == STRONG, in_host_memory(a, ctx)) for a in node.args]

    [answers] = probe(TENSOR_CLASS, question)
    assert answers == [
        (True, False),  # a buffer of a base class in this file, moved with the module
        (True, False),  # a parameter
        (True, True),  # a factory without a device, never moved: host memory
        (True, False),  # moved elsewhere
        (False, False),  # a string
        (False, False),  # also bound to a number
        (True, False),  # None first, then a tensor on a device
        (False, False),  # never bound
    ]
    tree = ast.parse(TENSOR_CLASS)
    ctx = FileContext(SourceFile("m.py", TENSOR_CLASS), tree)
    memory = tree.body[-1]
    assert tensor_attributes(memory, ctx) is tensor_attributes(memory, ctx)  # memoised per class


def test_hidden_reads_of_a_grad_scaler():
    source = """
import torch
from sklearn.preprocessing import StandardScaler

def f(self, model):
    scaler = torch.amp.GradScaler("cuda")
    legacy = torch.cuda.amp.GradScaler()
    features = StandardScaler()
    probe(scaler.get_scale())
    probe(legacy.state_dict())
    probe(self.scaler.get_scale())
    probe(self.loss_scaler.state_dict())
    probe(self.grad_scaler.get_scale())
    probe(features.get_scale())
    probe(model.state_dict())
    probe(scaler.state_dict(destination=None))
"""
    assert probe(source, lambda node, ctx: hidden_read(node.args[0], ctx)) == [
        True, True, True, True, True, False, False, False]
