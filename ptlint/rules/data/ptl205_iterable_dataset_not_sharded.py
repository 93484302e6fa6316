"""PTL205 iterable-dataset-not-sharded: an `IterableDataset` whose `__iter__` ignores the worker it runs in."""

from __future__ import annotations

import ast

from ptlint.engine.rule import Rule
from ptlint.semantics.nodes import FUNCTION_DEFS, class_family, is_placeholder

ITERABLE_DATASETS = {"torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset"}
# Attributes whose iteration hands the stream over to another dataset (which shards itself) or to a
# shared queue (which hands each item to one consumer): a wrapper, not a source.
DELEGATE_WORDS = {"dataset", "datasets", "ds", "reader", "readers", "loader", "dataloader", "source", "sources",
                  "iterable", "iterables", "datapipe", "pipe", "pipeline", "queue", "inner", "wrapped", "base",
                  "parent", "child", "children", "generator", "iterator", "iterators"}


def _words(name: str) -> set[str]:
    lower = name.lower().lstrip("_")
    return {lower, *(part for part in lower.split("_") if part)}


def _self_assignments(family: list[ast.ClassDef], attr: str) -> list[ast.AST]:
    """Values the class (or a base in the file) assigns to `self.<attr>`."""
    out = []
    for cls in family:
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name)
                    and t.value.id == "self" for t in node.targets):
                out.append(node.value)
    return out


def _yields_nothing(function: ast.AST) -> bool:
    """A placeholder: `__iter__` returns `iter([])` and yields nothing."""
    if any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(function)):
        return False
    returns = [n.value for n in ast.walk(function) if isinstance(n, ast.Return)]
    return bool(returns) and all(
        isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "iter" and len(v.args) == 1
        and isinstance(v.args[0], (ast.List, ast.Tuple, ast.Set, ast.Dict)) and not getattr(v.args[0], "elts", None)
        and not getattr(v.args[0], "keys", None) for v in returns)


class IterableDatasetNotSharded(Rule):
    code = "PTL205"
    name = "iterable-dataset-not-sharded"
    message = "`{name}.__iter__` never calls `torch.utils.data.get_worker_info()`: with `num_workers > 0` " \
              "every DataLoader worker yields the whole stream"
    help = ("In `__iter__`, call `torch.utils.data.get_worker_info()` and yield only this worker's share "
            "(`info.id` of `info.num_workers`).")
    triggers = ("IterableDataset",)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if not self._is_iterable_dataset(node, set()):
            return
        own_iter = next((f for f in node.body if isinstance(f, FUNCTION_DEFS)
                         and f.name == "__iter__"), None)
        if own_iter is None:
            return  # inherited: reported (or not) where it is defined
        if any(self._consults_workers(cls) for cls in self._family(node)):
            return
        if self._delegates(own_iter, node) or _yields_nothing(own_iter) or is_placeholder(own_iter) \
                or self._synthetic(own_iter, node):
            return
        self.report(node, self.message.format(name=node.name), end_node=self._header_end(node))

    def _header_end(self, cls: ast.ClassDef) -> ast.AST:
        """A span ending after `class Name` on the class line (the finding covers no more)."""
        line = self.ctx.source.line(cls.lineno).encode("utf-8")  # ast columns count UTF-8 bytes
        name = cls.name.encode("utf-8")
        start = line.find(name, cls.col_offset)
        end = ast.Name(id=cls.name)
        end.end_lineno = cls.lineno
        end.end_col_offset = start + len(name) if start >= 0 else cls.col_offset + len(b"class")
        return end

    # -- which classes ---------------------------------------------------------------------------
    def local_classes(self) -> dict[str, ast.ClassDef]:
        key = "ptl205-classes"
        if key not in self.ctx.memo:
            self.ctx.memo[key] = {n.name: n for n in ast.walk(self.ctx.tree) if isinstance(n, ast.ClassDef)}
        return self.ctx.memo[key]

    def _is_iterable_dataset(self, cls: ast.ClassDef, seen: set[str]) -> bool:
        seen.add(cls.name)
        local = self.local_classes()
        for base in cls.bases:
            if self.ctx.qualname(base) in ITERABLE_DATASETS:
                return True
            if isinstance(base, ast.Name) and base.id in local and base.id not in seen \
                    and self._is_iterable_dataset(local[base.id], seen):
                return True
        return False

    def _family(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """The class and its bases defined in this file: a base's helper may do the sharding."""
        return class_family(cls, self.local_classes())

    def _consults_workers(self, cls: ast.ClassDef) -> bool:
        """The class mentions `get_worker_info` or a worker's id, count or seed anywhere, or calls a
        function of this module that does."""
        called: set[str] = set()
        for node in ast.walk(cls):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) \
                else node.arg if isinstance(node, ast.arg) else None
            if name is not None and ("worker" in name.lower() or "get_worker_info" == name):
                return True
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                called.add(node.func.id)
        for function in self.ctx.tree.body:
            if isinstance(function, FUNCTION_DEFS) and function.name in called:
                if any(isinstance(n, (ast.Name, ast.Attribute)) and "worker" in
                       (n.id if isinstance(n, ast.Name) else n.attr).lower() for n in ast.walk(function)):
                    return True
        return False

    def _delegates(self, function: ast.AST, cls: ast.ClassDef) -> bool:
        """`__iter__` (or a method of the class it calls) iterates another dataset, a reader or a
        queue — `for x in self.dataset`, `iter(self.source)`, `self.queue.get()`, returns an
        iterator built over one (`return Combined(self.datasets, seed)`), or an attribute
        assigned from one (`self._data = split_dataset_by_node(ds, rank, world)`): that object
        decides what each worker reads."""
        family = self._family(cls)
        iterated: list[ast.AST] = []
        for body in self._bodies(function, cls):
            for node in ast.walk(body):
                if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    iterated.append(node.iter)
                elif isinstance(node, ast.YieldFrom):
                    iterated.append(node.value)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id in ("iter", "next") and node.args:
                    iterated.append(node.args[0])
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                    iterated.append(node.func.value)  # queue.get()
                elif isinstance(node, ast.Return) and isinstance(node.value, ast.Call):
                    # `return CombinedIterator(self._datasets, ...)`: the iterator it builds walks them
                    iterated.extend(a for a in node.value.args if isinstance(a, ast.Attribute)
                                    and isinstance(a.value, ast.Name) and a.value.id == "self")
        return any(self._delegating(expression, family, 0) for expression in iterated)

    def _bodies(self, function: ast.AST, cls: ast.ClassDef) -> list[ast.AST]:
        """`__iter__` and the methods of the class it calls through `self.helper()`, transitively."""
        methods = {m.name: m for c in self._family(cls) for m in c.body
                   if isinstance(m, FUNCTION_DEFS)}
        bodies, pending = [], [function]
        while pending:
            current = pending.pop()
            if current in bodies:
                continue
            bodies.append(current)
            for node in ast.walk(current):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "self" \
                        and node.func.attr in methods:
                    pending.append(methods[node.func.attr])
        return bodies

    def _synthetic(self, function: ast.AST, cls: ast.ClassDef) -> bool:
        """`__iter__` draws random samples and reads no data: `for _ in range(n): yield
        torch.randn(size)`. Each worker draws its own numbers; nothing is repeated."""
        bodies = self._bodies(function, cls)
        random = False
        for body in bodies:
            for node in ast.walk(body):
                if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension, ast.YieldFrom)):
                    source = node.iter if not isinstance(node, ast.YieldFrom) else node.value
                    if not (isinstance(source, ast.Call) and isinstance(source.func, ast.Name)
                            and source.func.id == "range"):
                        return False
                elif isinstance(node, ast.Call):
                    qual = self.ctx.qualname(node.func) or ""
                    if qual.startswith(("torch.rand", "random.", "numpy.random.")) or qual in ("torch.normal",):
                        random = True
        return random

    def _delegating(self, expression: ast.AST, family: list[ast.ClassDef], depth: int) -> bool:
        for part in ast.walk(expression):
            name = part.attr if isinstance(part, ast.Attribute) else part.id if isinstance(part, ast.Name) else None
            if name and _words(name) & DELEGATE_WORDS:
                return True
            if depth < 2 and isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) \
                    and part.value.id == "self":
                for value in _self_assignments(family, part.attr):
                    if self._delegating(value, family, depth + 1):
                        return True
        return False

    docs = """
## What it does
Finds a subclass of `torch.utils.data.IterableDataset` (any import spelling, also through a
local base class) whose `__iter__` never asks `torch.utils.data.get_worker_info()` which
DataLoader worker it runs in. Reported at the `class` line.

## Why is this bad?
With `DataLoader(dataset, num_workers=n)` each of the `n` worker processes gets its own copy
of the dataset and calls `__iter__` on it. A map-style dataset is split by the sampler; an
iterable one is not split by anyone: unless `__iter__` reads only its share
(`info = get_worker_info()`, then every `info.num_workers`-th item from `info.id`), every
worker yields the whole stream. An epoch then holds every sample `n` times, and adding workers
to speed up loading multiplies the data instead.

Not reported:
- a class that consults its worker anywhere (a helper method, a base class in the file, a
  function of the module it calls), or uses a worker's id, count or seed (`worker_info`,
  `num_workers`, `worker_seed`): it shards or reseeds per worker;
- a wrapper whose `__iter__` (or a method of the class it calls) iterates another dataset, a
  reader, a loader or a queue (`for x in self.dataset`, `iter(self.source)`, `self.queue.get()`,
  `return MixedIterator(self.datasets, seed)`, an attribute assigned from
  `split_dataset_by_node(ds, ...)`): the wrapped object decides what
  each worker reads (a Hugging Face streaming dataset splits its shards across workers itself),
  and a shared queue hands each item to one worker;
- a placeholder whose `__iter__` returns `iter([])`, an interface whose `__iter__` is abstract
  (`@abstractmethod`, `pass`, `raise NotImplementedError`: the subclasses that implement it are
  checked), and a generator of random samples that
  reads no data (`for _ in range(n): yield torch.randn(size)`): each worker draws its own;
- a subclass that inherits `__iter__` (it is reported where `__iter__` is defined).

## Where it reports
- **Reports** at the class, wherever it is defined (a dataset class is set-up code; the cost is
  paid in every epoch that iterates it).
- **Silent** in test code.

## Example
```python
import torch
from torch.utils.data import IterableDataset


class Lines(IterableDataset):
    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        for path in self.paths:
            with open(path) as f:
                yield from f
```

## Use instead
```python
import torch
from torch.utils.data import IterableDataset


class Lines(IterableDataset):
    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        paths = self.paths if info is None else self.paths[info.id::info.num_workers]
        for path in paths:
            with open(path) as f:
                yield from f
```

## Fix safety
No automatic fix: how to split the stream (by file, by line, by shard) is the dataset's
design.

## References
- https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset
- https://pytorch.org/docs/stable/data.html#torch.utils.data.get_worker_info
"""

    bad_examples = [
        """
import torch
from torch.utils.data import IterableDataset

class Lines(IterableDataset):  # expect: PTL205
    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        for path in self.paths:
            with open(path) as f:
                yield from f
""",
        """
import torch.utils.data as tud
import torch as T

class Counter(tud.IterableDataset):  # expect: PTL205
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

class Rows(tud.IterableDataset):  # expect: PTL205
    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        return RowIterator(self.paths)

class Base(T.utils.data.IterableDataset):
    pass

class Squares(Base):  # expect: PTL205
    def __iter__(self):
        for i in range(10):
            yield T.tensor(i * i)
""",
        # a class in a function's body counts too
        """
from torch.utils import data

def make(items):
    class Stream(data.IterableDataset):  # expect: PTL205
        def __iter__(self):
            yield from items
    return Stream()
""",
    ]

    good_examples = [
        # the worker is consulted, directly, in a helper, or in a base class
        """
import torch
from torch.utils.data import IterableDataset, get_worker_info

class Sharded(IterableDataset):
    def __init__(self, paths):
        self.paths = paths

    def __iter__(self):
        info = get_worker_info()
        paths = self.paths if info is None else self.paths[info.id::info.num_workers]
        for path in paths:
            yield path

class Base(IterableDataset):
    def shard(self, items):
        info = torch.utils.data.get_worker_info()
        return items[info.id::info.num_workers] if info else items

class Child(Base):
    def __iter__(self):
        yield from self.shard(list(range(10)))

def my_share(items):
    worker = torch.utils.data.get_worker_info()
    return items if worker is None else items[worker.id::worker.num_workers]

class Helped(IterableDataset):
    def __iter__(self):
        yield from my_share(list(range(10)))
""",
        # wrappers hand the stream to what they wrap; a shared queue splits it by itself
        """
from abc import abstractmethod

import torch
from torch.utils.data import IterableDataset

class Batcher(IterableDataset):
    def __init__(self, dataset, size):
        self.dataset = dataset
        self.size = size

    def __iter__(self):
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.size:
                yield batch
                batch = []

class FromQueue(IterableDataset):
    def __init__(self, q):
        self.queue = q

    def __iter__(self):
        while True:
            yield self.queue.get()

class HFWrapper(IterableDataset):
    def __init__(self, ds, rank, world):
        self._data = split_dataset_by_node(ds, rank, world)

    def _data_iter(self):
        return iter(self._data)

    def __iter__(self):
        for sample in self._data_iter():
            yield sample

class Mixed(IterableDataset):
    def __init__(self, datasets, seed):
        self._datasets, self._seed = datasets, seed

    def __iter__(self):
        return MixedIterator(self._datasets, self._seed)

class Noise(IterableDataset):
    def __init__(self, size, count):
        self.size, self.count = size, count

    def __iter__(self):
        for _ in range(self.count):
            yield torch.randn(self.size)

class Empty(IterableDataset):
    def __iter__(self):
        return iter([])

class ChainableBase(IterableDataset):
    def __len__(self):
        return self.num_records

    @abstractmethod
    def __iter__(self):
        pass

class Interface(IterableDataset):
    def __iter__(self):
        raise NotImplementedError

class Reseeded(IterableDataset):
    def __init__(self, seed_fn):
        self.worker_seed = seed_fn

    def __iter__(self):
        import random
        rng = random.Random(self.worker_seed())
        while True:
            yield rng.random()
""",
        # not an IterableDataset: a map-style dataset, a local class of the same name
        """
from torch.utils.data import Dataset

class IterableDataset:
    pass

class Mine(IterableDataset):
    def __iter__(self):
        yield 1

class Items(Dataset):
    def __iter__(self):
        yield 1
""",
    ]
