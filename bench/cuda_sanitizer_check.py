"""Exercise the host-sync sanitizer on CUDA: `ptlint explain --syncs --device cuda` and
`ptlint.testing.no_host_syncs`, against lines marked in a target written to a temporary folder.

    python bench/cuda_sanitizer_check.py              # on a machine with a GPU (needs torch with CUDA)
    python bench/cuda_sanitizer_check.py --device cpu  # the same checks on the CPU (what would sync)

On CUDA the sanitizer uses the real devices and also `torch.cuda.set_sync_debug_mode("warn")`, so
the lines marked `cuda-only` (`.to("cpu")`, a sync the sanitizer's table does not name and
only the debug mode catches, and torch.cuda.synchronize()) must be reported too, and the
`cpu-only` one (an `.item()` of the host copy) must not. Prints each check and what was found;
exits 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

TARGET = textwrap.dedent('''\
    import torch
    import torch.nn.functional as F
    from torch import nn


    def step(model, opt, x, y, log):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.append(f"{loss:.3f}")  # sync
        hits = (out.argmax(1) == y).sum().item()  # sync
        host = out.detach().to("cpu")  # sync: cuda-only
        host.sum().item()  # sync: cpu-only
        kept = out[out > 0]  # sync
        counts = torch.bincount(y)  # sync: cuda-only
        if torch.cuda.is_available():
            torch.cuda.synchronize()  # sync: cuda-only
        return loss.detach(), hits, kept, counts


    def make_step(device="cpu"):
        torch.manual_seed(0)
        model = nn.Linear(8, 4).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        log = []
        batches = [(torch.randn(16, 8, device=device), torch.randint(0, 4, (16,), device=device)) for _ in range(2)]

        def run(x, y):
            return step(model, opt, x, y, log)

        return run, batches
''')


def expected(on_cuda: bool) -> set[int]:
    """The marked lines. On the CPU, `.to("cpu")` cannot be told from a move to the device (both
    are the CPU), so it is no sync there and what is computed from its result is taken to be on
    the device; CUDA knows better."""
    lines = set()
    for number, line in enumerate(TARGET.splitlines(), 1):
        if "# sync" in line and not ("cuda-only" in line and not on_cuda) and not ("cpu-only" in line and on_cuda):
            lines.add(number)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    args = parser.parse_args()
    import torch

    on_cuda = args.device == "cuda"
    if on_cuda and not torch.cuda.is_available():
        print("no CUDA device: run with --device cpu, or on a GPU machine")
        return 2
    print(f"torch {torch.__version__}, device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if on_cuda else ""))
    failures = 0

    def check(name: str, ok: bool, detail: str = "") -> None:
        nonlocal failures
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"\n      {detail}" if detail else ""))

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "cuda_target.py")
        with open(path, "w") as handle:
            handle.write(TARGET)
        result = subprocess.run([sys.executable, "-m", "ptlint", "explain", "--syncs", "--device", args.device,
                                 "--output-format", "json", f"{path}:make_step"], cwd=REPO, capture_output=True,
                                text=True, timeout=600)
        findings = json.loads(result.stdout) if result.stdout.strip() else []
        syncs = [f for f in findings if f["code"] == "PTL452"]
        print(result.stderr.strip())
        for finding in syncs:
            print(f"      {finding['line']}: {finding['message']}")
        found = {f["line"] for f in syncs}
        check("explain --syncs: PTL452 exactly at the marked lines", found == expected(on_cuda),
              f"found {sorted(found)}, expected {sorted(expected(on_cuda))}")
        # one finding per line; once per call, except where only the CUDA debug mode sees the
        # sync: it counts each synchronizing operation (bincount makes two on an H100, torch 2.11)
        check("explain --syncs: one finding per line, 1 per call (debug-mode lines: at least 1)",
              len(syncs) == len(found) and all(f["count"] == 1 or ("set_sync_debug_mode" in f["message"]
                                                                   and f["count"] >= 1) for f in syncs))
        if on_cuda:
            debug = [f for f in syncs if "set_sync_debug_mode" in f["message"]]
            check("the CUDA sync debug mode caught the sync the table does not name (bincount)",
                  [f["line"] for f in debug] == [TARGET.splitlines().index(
                      "    counts = torch.bincount(y)  # sync: cuda-only") + 1])

        # the same target in-process, under ptlint.testing.no_host_syncs
        sys.path.insert(0, folder)
        import cuda_target

        from ptlint.testing import GuardFailure, no_host_syncs

        run, batches = cuda_target.make_step(args.device)
        filters, showwarning = list(warnings.filters), warnings.showwarning
        mode_before = torch.cuda.get_sync_debug_mode() if on_cuda else None
        try:
            with no_host_syncs():
                run(*batches[0])
            check("no_host_syncs fails on a step that syncs", False)
        except GuardFailure as failure:
            lines = {f.line for f in failure.findings}
            check("no_host_syncs lists exactly the marked lines", lines == expected(on_cuda),
                  f"found {sorted(lines)}, expected {sorted(expected(on_cuda))}")
            print(textwrap.indent(str(failure).rstrip(), "      "))
        check("warning filters and showwarning restored",
              warnings.filters == filters and warnings.showwarning is showwarning)
        if on_cuda:
            check("sync debug mode restored", torch.cuda.get_sync_debug_mode() == mode_before,
                  f"{torch.cuda.get_sync_debug_mode()} != {mode_before}")
            host = torch.ones(3)
            with no_host_syncs() as guard:
                host.sum().item()  # a CPU tensor on a CUDA machine: no sync
            check("a CPU tensor's .item() on a CUDA machine is no sync", guard.count == 0)
        check("torch.cuda.synchronize restored", torch.cuda.synchronize.__module__ == "torch.cuda"
              and not re.search(r"ptlint", torch.cuda.synchronize.__code__.co_filename))
    print("all checks passed" if not failures else f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
