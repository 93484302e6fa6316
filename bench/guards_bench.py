"""Overhead of the host-sync sanitizer and of ptlint.testing's guards (CPU, one process).

    python bench/guards_bench.py [--rounds 15] [--json]

Each block runs `--rounds` times bare and `--rounds` times guarded, alternating so that both
arms see the same machine load; the table shows medians and their ratio.

- sanitizer: an eager training step (MLP, cross_entropy, backward, gradient clipping, Adam, one
  `.item()`) bare and under the sanitizer that `ptlint explain --syncs` runs it under; also with
  a tiny MLP (width 8, batch 4), where each op costs microseconds and the sanitizer's one Python
  call per torch function weighs most;
- no_host_syncs: the same step inside `no_host_syncs(max=1)`;
- no_graph_breaks / no_recompiles: the block a test guards, compiling a model with
  backend="eager" and running batches; each round starts from empty Dynamo caches in both arms
  (no_graph_breaks clears them on entry anyway: Dynamo only reports a break while it traces).
"""

from __future__ import annotations

import argparse
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


def mlp(width: int = 256) -> nn.Module:
    return nn.Sequential(nn.Linear(width, 2 * width), nn.ReLU(), nn.Linear(2 * width, 2 * width), nn.ReLU(),
                         nn.Linear(2 * width, 10))


def make_step(width: int = 256, batch: int = 64):
    """A training step; a tiny width makes every op cost microseconds: the sanitizer's worst case."""
    torch.manual_seed(0)
    model = mlp(width)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(batch, width), torch.randint(0, 10, (batch,))

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


def sanitized(block):
    def run() -> None:
        counter = SyncCounter(lambda path: is_user_file(path, torch_dirs()))
        with sanitizing(counter, hypothetical=True):
            block()
    return run


def guarded(guard, block):
    def run() -> None:
        with guard:
            block()
    return run


def measure(label: str, bare, wrapped, rounds: int, fresh: bool = False) -> dict:
    times: dict[str, list[float]] = {"bare": [], "guarded": []}
    for arm, fn in (("bare", bare), ("guarded", wrapped)):  # warm-up: imports, first traces
        if fresh:
            torch._dynamo.reset()
        fn()
    for _ in range(rounds):
        for arm, fn in (("bare", bare), ("guarded", wrapped)):
            if fresh:
                torch._dynamo.reset()
            started = time.perf_counter()
            fn()
            times[arm].append(time.perf_counter() - started)
    bare_ms, guarded_ms = (statistics.median(times[a]) * 1000 for a in ("bare", "guarded"))
    return {"block": label, "bare_ms": round(bare_ms, 1), "guarded_ms": round(guarded_ms, 1),
            "ratio": round(guarded_ms / bare_ms, 2), "rounds": rounds}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a 2-core machine shared with others: less noise
    steps = eager_steps(make_step())
    tiny = eager_steps(make_step(width=8, batch=4))
    rows = [
        measure("eager step x20 under the sanitizer (explain --syncs)", steps, sanitized(steps), args.rounds),
        measure("tiny eager step x20 under the sanitizer (worst case)", tiny, sanitized(tiny), args.rounds),
        measure("eager step x20 in no_host_syncs(max=20)", steps,
                lambda: guarded(no_host_syncs(max=20), steps)(), args.rounds),
        measure("compile + 1 batch in no_graph_breaks()", compile_block((32,)),
                lambda: guarded(no_graph_breaks(), compile_block((32,)))(), args.rounds, fresh=True),
        measure("compile + 3 batch sizes in no_recompiles(max=1)", compile_block((8, 16, 32)),
                lambda: guarded(no_recompiles(max=1), compile_block((8, 16, 32)))(), args.rounds, fresh=True),
    ]
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {args.rounds} rounds, medians")
    print("| block | bare | guarded | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['block']} | {r['bare_ms']} ms | {r['guarded_ms']} ms | {r['ratio']}x |")
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
