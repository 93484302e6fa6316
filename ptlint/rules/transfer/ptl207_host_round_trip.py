"""PTL207 host-round-trip: a device tensor copied to the host, worked on there, and copied back."""

from __future__ import annotations

import ast

from ptlint.engine.rule import CALLED, PER_STEP, Rule
from ptlint.semantics.nodes import FUNCTION_DEFS, chain_head, walk
from ptlint.semantics.values import in_host_memory, is_cpu_device, moves_to_device
from ptlint.semantics.where import iterable_is_data

HOST_READS = {"cpu", "numpy"}  # bulk copies to the host (`.item()` and `.tolist()` are PTL101's)
HOPS = 4  # names followed back from the copy to the device
# libraries whose work on a value read back has no torch counterpart on the device (clustering,
# graph algorithms, data frames): the host needed the value
HOST_LIBRARIES = {"scipy", "sklearn", "networkx", "pandas"}
# factories whose `device=` copies their data to the device
DEVICE_FACTORIES = {"torch.tensor", "torch.as_tensor", "torch.asarray"}


class HostRoundTrip(Rule):
    code = "PTL207"
    name = "host-round-trip"
    message = "`{read}` (line {line}) copies a device tensor to the host and this copies what was made from it " \
              "back: every run waits for the device and pays two copies; do the work on the device"
    help = ("Keep it on the device: `torch.flip(x, dims=...)` for `np.flip`, `F.one_hot(y, n)` or `scatter_` on a "
            "device tensor for a one-hot built on the host, tensor indexing for NumPy indexing.")
    contexts = frozenset({PER_STEP, CALLED})
    default = False  # 4 of 28 decided findings true on code never used to tune it (see the page)
    needs_accelerator = True
    triggers = (".cpu(", ".numpy(", ".tolist(")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._lines: set[int] = set()

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("cuda", "to") and moves_to_device(node, self.ctx):
            copied = func.value
        elif self.ctx.qualname(func) in DEVICE_FACTORIES and node.args and any(
                k.arg == "device" and not is_cpu_device(k.value, self.ctx) for k in node.keywords):
            copied = node.args[0]  # `torch.tensor(data, device=device)`: a copy of `data` to the device
        else:
            return
        read = self._read_in(copied, HOPS) or self._returned_read(copied)
        if read is not None and node.lineno not in self._lines:  # a line once (`a, b = a.cuda(), b.cuda()`)
            self._lines.add(node.lineno)
            self.report(node, self.message.format(read=_short(read), line=read.lineno))

    def _returned_read(self, expression: ast.AST) -> ast.Call | None:
        """`torch.tensor(self.mask(ids), device=d)` where the method `mask` of this class (or a
        function `mask` of this module) returns what it made on the host from a read of its
        parameter (`[[t != pad for t in row] for row in ids.cpu().tolist()]`), and the argument
        passed for it is not in host memory here (ColBERT's query mask, every forward)."""
        if not isinstance(expression, ast.Call):
            return None
        found = self.ctx.defs_called(expression.func)
        if len(found) != 1:
            return None  # not a def of this file, or one of several by that name
        function = found[0]
        parameters = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if parameters and isinstance(expression.func, ast.Attribute):
            parameters = parameters[1:]  # `self`
        for parameter, read in _host_copies_returned(function).items():
            given = next((k.value for k in expression.keywords if k.arg == parameter), None)
            if given is None and parameter in parameters and parameters.index(parameter) < len(expression.args):
                given = expression.args[parameters.index(parameter)]
            if given is not None and not isinstance(given, ast.Starred) and not self._on_host(given, expression):
                return read
        return None

    def _read_in(self, expression: ast.AST, hops: int) -> ast.Call | None:
        """The read of a device tensor back to the host that `expression` is computed from: in it,
        or through the last value each name it uses was given before it (NumPy work, arithmetic,
        indexing, the value's own methods and functions called by name carry it; other objects'
        methods do not: `env.step(a.cpu().numpy())` returns what the environment made)."""
        for node in _carried(expression, self.ctx):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in HOST_READS \
                    and not node.args and not self._on_host(node.func.value, node):
                return node
            if isinstance(node, ast.Name) and hops:
                value = self._value_before(node, expression)
                found = self._read_in(value, hops - 1) if value is not None else None
                if found is not None:
                    return found
        return None

    def _value_before(self, name: ast.Name, expression: ast.AST) -> ast.AST | None:
        """The value `name` holds at `expression`: a comprehension's iterable where one around it
        binds the name (`tuple(t.to(device) for t in batch)`), else the last value assigned it
        that ends before `expression` (not the one it is part of; each one looked at stands before
        the last)."""
        parent = self.ctx.parent(name)
        while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            if isinstance(parent, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                for generator in parent.generators:
                    if any(isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(generator.target)):
                        return generator.iter
            parent = self.ctx.parent(parent)
        values = [v for v in self.ctx.assignments(name.id) if isinstance(v, ast.expr)
                  and (v.end_lineno, v.end_col_offset) <= (expression.lineno, expression.col_offset)]
        return values[-1] if values else None

    def _on_host(self, value: ast.AST, read: ast.Call) -> bool:
        """What `read` copies is in host memory already, as its name holds it there: a value the
        host made (a factory without `device=`, NumPy), or a batch a loop over data gave before the
        loop moves it (`points.data.numpy()`, `lengths.long().numpy()`). A parameter, or a name
        not bound before, may hold a device tensor."""
        head = chain_head(value)
        if head is None:
            return in_host_memory(value, self.ctx)
        given = self._value_before(head, read)
        if given is None:
            return False
        part, loop = given, self.ctx.parent(given)  # (a loop target maps to the iterable, or a part of it)
        while isinstance(loop, ast.expr):
            part, loop = loop, self.ctx.parent(loop)
        if isinstance(loop, (ast.For, ast.AsyncFor)) and loop.iter is part:
            return iterable_is_data(loop)
        return in_host_memory(given, self.ctx)


def _host_copies_returned(function: ast.AST) -> dict[str, ast.Call]:
    """The parameters of `function` whose copy to the host (`x.cpu()`, `.numpy()`, `.tolist()`) its
    every `return` hands back, or something made from it (through the local names assigned from it,
    comprehensions over it, NumPy), each with that read."""
    parameters = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    local: dict[str, list[ast.AST]] = {}
    returns: list[ast.AST] = []
    for node in walk(function, FUNCTION_DEFS + (ast.ClassDef, ast.Lambda)):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            local.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.Return):
            returns.append(node.value)
    found: dict[str, ast.Call] = {}
    for value in returns:
        reads = _reads_of_parameters(value, parameters, local, 2) if value is not None else {}
        if not reads:
            return {}  # a return of something else: the caller may get a device tensor
        for parameter, read in reads.items():
            found.setdefault(parameter, read)
    return found


def _reads_of_parameters(expression: ast.AST, parameters: set[str], local: dict, hops: int) -> dict[str, ast.Call]:
    found: dict[str, ast.Call] = {}
    for node in walk(expression):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in (*HOST_READS, "tolist") and not node.args:
            head = chain_head(node.func.value)
            if head is not None and head.id in parameters:
                found.setdefault(head.id, node)
        elif isinstance(node, ast.Name) and hops and node.id in local and node.id not in parameters:
            for value in local[node.id]:
                for parameter, read in _reads_of_parameters(value, parameters, local, hops - 1).items():
                    found.setdefault(parameter, read)
    return found


def _carried(expression: ast.AST, ctx):
    """The nodes of `expression` whose values its value is made from: not the arguments of a call
    of another object's method (`tokenizer.decode(ids.cpu())`, `env.step(...)`), whose result is
    that object's, nor of a function of a library whose work has no device counterpart
    (`fcluster(linkage(d))` of SciPy, HOST_LIBRARIES)."""
    pending = [expression]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                pending.append(func.value)  # `x.cpu()`, `arr.copy()`: the value's own method
                head = chain_head(func.value)  # `np.flip(...)`, `torch.zeros(n).scatter_(1, y.cpu(), 1)`
                if head is None or head.id not in ("np", "numpy", "torch"):
                    continue  # another object's method: its arguments do not carry on
            else:
                if (ctx.qualname(func) or "").split(".")[0] in HOST_LIBRARIES:
                    continue  # `from scipy.cluster.hierarchy import fcluster`
            pending.extend(node.args)
            pending.extend(k.value for k in node.keywords)
        elif isinstance(node, (ast.Lambda, ast.comprehension)) or isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            continue
        else:
            pending.extend(ast.iter_child_nodes(node))


def _short(read: ast.Call) -> str:
    text = ast.unparse(read)
    return text if len(text) <= 40 else text[:37] + "..."


HostRoundTrip.docs = """
## What it does
Finds a copy to an accelerator (`.cuda()`, `.to(device)`, `torch.tensor(data, device=device)`)
of a value made on the host from a device tensor that the same function copied to the host
(`.cpu()`, `.numpy()`): directly, or through the local names, NumPy functions, arithmetic and
indexing in between; or of what a method of the same class (or a function of the same module)
returns when every `return` of it hands back a host copy of its argument (`.cpu()`,
`.numpy()`, `.tolist()`, or what it made from one), given a tensor not in host memory
(`torch.tensor(self.mask(input_ids), device=...)` where `mask` walks `input_ids.cpu().tolist()`).
Reported at the copy back, naming the read.

Off by default: on training repositories never used to tune it (blind sets 27ze to 28b), 4 of
its 28 decided findings were true. Most false ones were host work the program needs on the host:
ids read back to index a SciPy matrix, a Python set or dict the model keeps there, tensors the
data loader had left on the CPU, code that runs once per sample. Select it (`--select PTL207`)
to look for round trips in code you know runs on the device.

## Why is this bad?
The read makes the host wait until the device has computed the tensor, then copies it over; the
work done with NumPy runs on one CPU core; and the copy back is a blocking copy from pageable
memory. A flip test that flips the network's output with NumPy and copies it back, a one-hot
filled on the host from labels read back from the GPU, a mask computed with NumPy: each is
one or two lines of torch on the device, with no wait and no copy.

## Where it reports
- **Reports** in code that runs every step (a training step, an evaluation loop over batches)
  and in functions whose callers the file does not show.
- **Silent** in once-code and code that runs once per epoch, test code, programs that never place
  a tensor on an accelerator, values the host had anyway (a tensor built on the CPU, a batch the
  loader gave), and what another object returns for the value read (`env.step(action.cpu())`
  returns the environment's next state; `tokenizer.decode(...)` a string): only the value's own
  methods, NumPy and torch functions, arithmetic and indexing carry it. Nor what SciPy,
  scikit-learn, NetworkX or pandas make of it (clustering, graph algorithms): that host work has
  no torch counterpart on the device.

## Example
```python
import numpy as np
import torch


def validate(model, loader):
    model.cuda().eval()
    with torch.no_grad():
        for images, _ in loader:
            images = images.cuda()
            output = model(images)
            flipped = np.flip(model(images.flip(3)).cpu().numpy(), 3).copy()
            output = (output + torch.from_numpy(flipped).cuda()) / 2
```

## Use instead
```python
import torch


def validate(model, loader):
    model.cuda().eval()
    with torch.no_grad():
        for images, _ in loader:
            images = images.cuda()
            output = model(images)
            flipped = torch.flip(model(images.flip(3)), dims=(3,))
            output = (output + flipped) / 2
```

## Fix safety
No automatic fix: the host-side work has to be rewritten with torch operations.

## References
- https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution
- https://pytorch.org/docs/stable/generated/torch.flip.html
"""

HostRoundTrip.bad_examples = [
    # a mask a method builds on the host from its argument's tokens, copied back every forward;
    # a label map built with NumPy from predictions read back, copied by `torch.tensor(device=)`
    """
import numpy as np
import torch
from torch import nn


class Retriever(nn.Module):
    def query(self, input_ids):
        input_ids = input_ids.to(self.device)
        q = self.linear(self.bert(input_ids)[0])
        mask = torch.tensor(self.mask(input_ids, skiplist=[]), device=self.device)  # expect: PTL207
        return q * mask.unsqueeze(2)

    def mask(self, input_ids, skiplist):
        mask = [[(x not in skiplist) and (x != 0) for x in d] for d in input_ids.cpu().tolist()]
        return mask


def relabel(logits, device):
    labels = np.where(logits.argmax(1).cpu().numpy() > 3, 1, 0)
    return torch.tensor(labels, device=device)  # expect: PTL207
""",
    # a flip test through NumPy; a one-hot filled on the host from labels read back, per step
    """
import numpy as np
import torch
from torch.autograd import Variable


def validate(model, loader):
    model.cuda().eval()
    with torch.no_grad():
        for images, _ in loader:
            images = images.cuda()
            output = model(images)
            flipped = np.flip(model(images.flip(3)).cpu().numpy(), 3).copy()
            output = (output + torch.from_numpy(flipped).cuda()) / 2  # expect: PTL207


def rotate(net, x, y):
    bx, by = x.cuda(), y.cuda()
    bx, by = bx.cpu().numpy(), by.cpu().numpy()
    bx = np.concatenate((bx, np.rot90(bx, 1, axes=(2, 3))), 0)
    bx, by = torch.FloatTensor(bx).cuda(), torch.LongTensor(by).cuda()  # expect: PTL207
    return net(bx), by


def flip_back(heatmaps, pairs):
    return heatmaps[:, :, :, ::-1]


class FocalLoss(torch.nn.Module):
    def forward(self, x, y):
        t = one_hot_embedding(y.data.cpu(), 21)
        t = t[:, 1:]
        t = Variable(t).cuda()  # expect: PTL207
        y = torch.zeros(x.size()).scatter_(1, y.unsqueeze(1).data.cpu(), 1)
        y = y.cuda()  # expect: PTL207
        return (x.sigmoid() - t).abs().sum() + y.sum()


def test_pass(model, loader, pairs, device):
    for x in loader:
        out = model(x.to(device))
        out_flipped = flip_back(out.cpu().numpy(), pairs)
        out = out + torch.from_numpy(out_flipped.copy()).to(device)  # expect: PTL207
""",
]

HostRoundTrip.good_examples = [
    # the method gets host ids (a tokenizer's), or returns what it does not make from them; the
    # clustering is SciPy's, with no device counterpart
    """
import torch
from scipy.cluster.hierarchy import fcluster, linkage
from torch import nn


class Retriever(nn.Module):
    def query(self, texts):
        input_ids = self.tokenizer(texts, return_tensors="pt")["input_ids"]
        mask = torch.tensor(self.mask(input_ids), device=self.device)
        ids = torch.tensor(self.pad(self.prefix_ids), device=self.device)
        return self.bert(input_ids.to(self.device))[0] * mask.unsqueeze(2), ids

    def mask(self, input_ids):
        return [[x != 0 for x in d] for d in input_ids.cpu().tolist()]

    def pad(self, input_ids):
        if input_ids.size(1) > 4:
            return input_ids[:, :4].cpu().tolist()
        return [0] * 4


def pool(embeddings, device, k):
    distances = 1 - (embeddings @ embeddings.t()).cpu().numpy()
    labels = fcluster(linkage(distances, method="ward"), t=k, criterion="maxclust")
    return torch.tensor(labels == 1, device=device)
""",
    # once, at the end of a script: one flip through NumPy costs one wait
    """
import numpy as np
import torch

model = torch.load("model.pt").cuda().eval()
with torch.no_grad():
    output = model(batch.cuda())
    flipped = np.flip(model(batch.flip(3).cuda()).cpu().numpy(), 3).copy()
    output = (output + torch.from_numpy(flipped).cuda()) / 2
""",
    # a batch the loader gave, augmented with NumPy before it is moved; a comprehension's own name
    """
import torch


def train(model, loader, optimizer, augment):
    model.cuda()
    for batch_idx, (data, labels) in enumerate(loader):
        data, labels = data.numpy(), labels.numpy()
        gold = data[labels > 3]
        gold = torch.FloatTensor(gold).cuda()
    for points, target in loader:
        t = model.summary().cpu().numpy()
        points = points.data.numpy()
        points = augment(points)
        points = torch.Tensor(points).cuda()
        batch = tuple(t.cuda() for t in (points, target))
        scale = torch.ones(3)
        scale = torch.from_numpy(scale.cpu().numpy() * 2).cuda()
        loss = model(*batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""",
    # an environment's next state; host data moved; a read for the host only; a decoded string
    """
import numpy as np
import torch


def rollout(env, policy, state, steps):
    policy.cuda()
    for _ in range(steps):
        action = policy(torch.from_numpy(state).float().cuda())
        next_state, reward, done, _ = env.step(action.cpu().numpy())
        state = torch.from_numpy(next_state).float().cuda()


def evaluate(model, loader, tokenizer, metric):
    model.cuda()
    for batch, labels in loader:
        ids = model.generate(batch.cuda())
        text = tokenizer.decode(ids.cpu())
        prompt = tokenizer(text, return_tensors="pt")["input_ids"].cuda()
        labels_np = labels.numpy()
        weights = torch.from_numpy(np.log(labels_np + 1)).cuda()
        metric.add(ids.cpu().numpy(), labels_np)
        model(prompt, weights)
""",
]
