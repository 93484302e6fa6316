"""Overhead of the host-sync sanitizer and of ptlint.testing's guards (CPU, one process).

    python bench/guards_bench.py [--rounds 15] [--json] [--baseline /path/to/older/checkout]

Each block runs `--rounds` times bare and `--rounds` times guarded, alternating so that every arm
sees the same machine load; the table shows medians and their ratio. With `--baseline`, the
ptlint of that checkout (imported as `ptlint_baseline`) is a third arm of each guarded block, so
that before and after are measured in the same run.

- no_host_syncs on small eager training steps (the guard's own policy, every tensor taken to be
  on the device): an MLP step (cross_entropy, backward, gradient clipping, Adam, one `.item()`)
  x20; a nanoGPT-sized step (4 heads, 2 layers, width 48, AdamW) x5; a tiny step (width 8, batch
  4, where each op costs microseconds and anything paid per torch call weighs most) x3;
- the sanitizer that `ptlint explain --syncs` runs a program under (its placements followed
  through every torch call): the MLP step with its model moved to `device`, x20;
- no_graph_breaks / no_recompiles: the block a test guards, compiling a model with
  backend="eager" and running batches; each round starts from empty Dynamo caches in both arms
  (no_graph_breaks clears them on entry anyway: Dynamo only reports a break while it traces).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from ptlint.dynamic.paths import is_user_file, torch_dirs  # noqa: E402
from ptlint.dynamic.syncs import SyncCounter, sanitizing  # noqa: E402
from ptlint.testing import no_graph_breaks, no_host_syncs, no_recompiles  # noqa: E402


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab: int = 128, width: int = 48, layers: int = 2, heads: int = 4, context: int = 32) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def make_gpt_step(batch: int = 8, context: int = 32):
    """A nanoGPT-sized training step (about 2.5 ms eager on one core of this machine)."""
    torch.manual_seed(0)
    model = GPT(context=context)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx, targets = torch.randint(0, 128, (batch, context)), torch.randint(0, 128, (batch, context))

    def step() -> float:
        loss = model(idx, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    return step


def mlp(width: int = 256) -> nn.Module:
    return nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, 2 * width), nn.ReLU(),
                         nn.Linear(2 * width, 10))


def make_step(width: int = 256, batch: int = 64, device: str = ""):
    """A training step; a tiny width makes every op cost microseconds: the sanitizer's worst case.
    With `device`, the model and batch are moved there as a program does (`.to(device)`)."""
    torch.manual_seed(0)
    model = mlp(width)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))
    if device:
        model.to(device)
        x, y = x.to(device), y.to(device)

    def step() -> float:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    return step


def eager_steps(step, n: int = 20):
    def block() -> None:
        for _ in range(n):
            step()
    return block


def compile_block(sizes: tuple[int, ...]):
    model = mlp()

    def block() -> None:
        compiled = torch.compile(model, backend="eager")
        for n in sizes:
            compiled(torch.randn(n, 256))
    return block


def explained(make_block):
    """A program under explain's sanitizer: set up inside it (so its placements are seen), then run."""
    def run() -> None:
        counter = SyncCounter(lambda path: is_user_file(path, torch_dirs()))
        with sanitizing(counter, hypothetical=True, assume_device=False):
            make_block()()
    return run


def explained_baseline(syncs, make_block):
    def run() -> None:
        counter = syncs.SyncCounter(lambda path: is_user_file(path, torch_dirs()))
        with syncs.sanitizing(counter, hypothetical=True):
            make_block()()
    return run


def guarded(guard, block):
    def run() -> None:
        with guard:
            block()
    return run


def measure(label: str, bare, wrapped, rounds: int, fresh: bool = False, baseline=None) -> dict:
    arms = [("bare", bare), ("guarded", wrapped)] + ([("baseline", baseline)] if baseline else [])
    times: dict[str, list[float]] = {arm: [] for arm, _ in arms}
    for arm, fn in arms:  # warm-up: imports, first traces
        if fresh:
            torch._dynamo.reset()
        fn()
    for _ in range(rounds):
        for arm, fn in arms:
            if fresh:
                torch._dynamo.reset()
            started = time.perf_counter()
            fn()
            times[arm].append(time.perf_counter() - started)
    ms = {arm: statistics.median(values) * 1000 for arm, values in times.items()}
    row = {"block": label, "bare_ms": round(ms["bare"], 2), "guarded_ms": round(ms["guarded"], 2),
           "ratio": round(ms["guarded"] / ms["bare"], 2), "rounds": rounds}
    if baseline:
        row.update(baseline_ms=round(ms["baseline"], 2), baseline_ratio=round(ms["baseline"] / ms["bare"], 2))
    return row


def load_baseline(folder: str):
    """The `ptlint` package of another checkout, imported as `ptlint_baseline`."""
    package = os.path.join(os.path.abspath(folder), "ptlint")
    spec = importlib.util.spec_from_file_location("ptlint_baseline", os.path.join(package, "__init__.py"),
                                                  submodule_search_locations=[package])
    module = importlib.util.module_from_spec(spec)
    sys.modules["ptlint_baseline"] = module
    spec.loader.exec_module(module)
    return importlib.import_module("ptlint_baseline.testing"), importlib.import_module("ptlint_baseline.dynamic.syncs")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline", help="a checkout whose ptlint is measured as a third arm")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a 2-core machine shared with others: less noise
    old_testing, old_syncs = load_baseline(args.baseline) if args.baseline else (None, None)

    def syncs_row(label: str, block, budget: int) -> dict:
        return measure(label, block, lambda: guarded(no_host_syncs(max=budget), block)(), args.rounds,
                       baseline=(lambda: guarded(old_testing.no_host_syncs(max=budget), block)()) if old_testing
                       else None)

    def placed_step():
        return eager_steps(make_step(device="cpu" if not torch.cuda.is_available() else "cuda"))

    rows = [
        syncs_row("MLP step x20 in no_host_syncs", eager_steps(make_step()), 20),
        syncs_row("nanoGPT-sized step x5 in no_host_syncs", eager_steps(make_gpt_step(), 5), 5),
        syncs_row("tiny step x3 in no_host_syncs", eager_steps(make_step(width=8, batch=4), 3), 3),
        measure("MLP step x20 set up and run under explain --syncs's sanitizer", lambda: placed_step()(),
                explained(placed_step), args.rounds,
                baseline=explained_baseline(old_syncs, placed_step) if old_syncs else None),
        measure("compile + 1 batch in no_graph_breaks()", compile_block((32,)),
                lambda: guarded(no_graph_breaks(), compile_block((32,)))(), args.rounds, fresh=True),
        measure("compile + 3 batch sizes in no_recompiles(max=1)", compile_block((8, 16, 32)),
                lambda: guarded(no_recompiles(max=1), compile_block((8, 16, 32)))(), args.rounds, fresh=True),
    ]
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {args.rounds} rounds, medians")
    if args.baseline:
        print(f"baseline: {args.baseline}")
        print("| block | bare | baseline | ratio | this checkout | ratio |")
        print("|---|---|---|---|---|---|")
    else:
        print("| block | bare | guarded | ratio |")
        print("|---|---|---|---|")
    for r in rows:
        if "baseline_ms" in r:
            print(f"| {r['block']} | {r['bare_ms']} ms | {r['baseline_ms']} ms | {r['baseline_ratio']}x "
                  f"| {r['guarded_ms']} ms | {r['ratio']}x |")
        elif args.baseline:
            print(f"| {r['block']} | {r['bare_ms']} ms | | | {r['guarded_ms']} ms | {r['ratio']}x |")
        else:
            print(f"| {r['block']} | {r['bare_ms']} ms | {r['guarded_ms']} ms | {r['ratio']}x |")
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
