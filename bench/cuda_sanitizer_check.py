"""Exercise the host-sync sanitizer on CUDA: `ptlint explain --syncs --device cuda` and
`ptlint.testing.no_host_syncs`, against lines marked in a target written to a temporary folder;
and check the waits it reports against the GPU's own clock.

    python bench/cuda_sanitizer_check.py              # on a machine with a GPU (needs torch with CUDA)
    python bench/cuda_sanitizer_check.py --device cpu  # the same checks on the CPU (the device shadow)

On CUDA the sanitizer uses the real devices and also `torch.cuda.set_sync_debug_mode("warn")`, so
the lines marked `cuda-only` (a sync the sanitizer's table does not name and only the debug mode
catches, and torch.cuda.synchronize()) must be reported too. On the CPU the device shadow stands
in: `.to(device)` with the factory's `device` is the device, `.to("cpu")` the host. Prints each
check and what was found; exits 1 if a check fails.

The timing checks (CUDA only): (1) a step that queues a known amount of GPU work (timed with CUDA
events) and then reads one value: the wait ptlint reports at that line must be that work's time,
within 25% (the host queues it in well under a millisecond, then waits); (2) the waits of the
marked step add up to less than its wall time, and that wall time is within 50% of the same
calls timed by hand as explain makes them (torch.cuda.synchronize() before and after, no ptlint); (3) per line, the
syncs ptlint counts equal what torch.cuda.set_sync_debug_mode reports for that line in a run
without ptlint. Every number is printed: copy them into the issue's closing note.
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
        host = out.detach().to("cpu")  # sync
        host.sum().item()  # the host copy: no sync
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


# the target's calls as explain's sanitized pass runs them (after a first pass, set up afresh), timed
# by hand, without ptlint
COLD_CALLS = textwrap.dedent('''\
    import sys
    import time

    import torch

    sys.path.insert(0, sys.argv[1])
    import cuda_target

    warm_up, warm_batches = cuda_target.make_step("cuda")  # explain first runs the target compiled: CUDA's
    for batch in warm_batches:                              # libraries are started when its eager runs begin
        warm_up(*batch)
    run, batches = cuda_target.make_step("cuda")  # then sets the target up afresh (a new model and optimizer)
    torch.cuda.synchronize()
    started = time.perf_counter()
    for batch in batches:
        run(*batch)
    torch.cuda.synchronize()
    print((time.perf_counter() - started) * 1000)
''')


SLOW = textwrap.dedent('''\
    import torch


    def wait_for(x, repeats):
        y = x
        for _ in range(repeats):
            y = torch.tanh(y @ x)
        return y.sum().item()  # sync: the host waits for every matmul queued above


    def make_slow(device="cuda"):
        torch.manual_seed(0)
        x = torch.randn(2048, 2048, device=device) / 64
        return wait_for, [(x, REPEATS) for _ in range(5)]
''')


def expected(on_cuda: bool) -> set[int]:
    """The marked lines (`cuda-only`: only the CUDA sync debug mode or a real device sees them)."""
    lines = set()
    for number, line in enumerate(TARGET.splitlines(), 1):
        if "# sync" in line and not ("cuda-only" in line and not on_cuda):
            lines.add(number)
    return lines


def explain_json(path: str, factory: str, device: str) -> tuple[list[dict], str]:
    result = subprocess.run([sys.executable, "-m", "ptlint", "explain", "--syncs", "--device", device,
                             "--output-format", "json", f"{path}:{factory}"], cwd=REPO, capture_output=True,
                            text=True, timeout=600)
    return (json.loads(result.stdout) if result.stdout.strip() else []), result.stderr


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
        findings, stderr = explain_json(path, "make_step", args.device)
        syncs = [f for f in findings if f["code"] == "PTL452"]
        print(stderr.strip())
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
        if on_cuda:
            timing_checks(torch, folder, path, syncs, run, batches, check)
    print("all checks passed" if not failures else f"{failures} check(s) failed")
    return 1 if failures else 0


def timing_checks(torch, folder: str, path: str, syncs: list[dict], run, batches, check) -> None:
    """The waits ptlint reports on CUDA, against CUDA events, a hand-timed step and the sync debug mode."""
    import statistics
    import time

    # (1) a known amount of queued work, then one read: the wait is that work
    x = torch.randn(2048, 2048, device="cuda") / 64
    repeats = 1
    while True:  # about 20 ms of matmuls
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y = x
        for _ in range(repeats):
            y = torch.tanh(y @ x)
        end.record()
        torch.cuda.synchronize()
        gpu_ms = start.elapsed_time(end)
        if gpu_ms > 20 or repeats > 4096:
            break
        repeats *= 2
    gpu_times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y = x
        for _ in range(repeats):
            y = torch.tanh(y @ x)
        end.record()
        torch.cuda.synchronize()
        gpu_times.append(start.elapsed_time(end))
    gpu_ms = statistics.median(gpu_times)
    slow_path = os.path.join(folder, "slow_target.py")
    with open(slow_path, "w") as handle:
        handle.write(SLOW.replace("REPEATS", str(repeats)))
    slow, stderr = explain_json(slow_path, "make_slow", "cuda")
    waits = [f.get("wait_ms") for f in slow if f["code"] == "PTL452"]
    print(f"      {repeats} matmuls: {gpu_ms:.2f} ms on the GPU's clock (CUDA events, median of 5)")
    for finding in slow:
        print(f"      {finding['line']}: {finding['message']}")
    check("the wait at the read after queued work is that work's time (within 25%)",
          len(waits) == 1 and waits[0] is not None and abs(waits[0]["median"] - gpu_ms) <= 0.25 * gpu_ms,
          f"ptlint {waits}, CUDA events {gpu_ms:.2f} ms")

    # (2) the marked step: waits within its wall time; that wall time near the same calls timed by
    # hand as explain makes them (after a first pass, on a new model and optimizer: Adam makes its
    # state in the first call, so one warm step is no measure of them)
    cold = []
    for _ in range(3):
        timed_run = subprocess.run([sys.executable, "-c", COLD_CALLS, folder], capture_output=True, text=True,
                                   timeout=600)
        cold.append(float(timed_run.stdout.strip().splitlines()[-1]))
    cold_ms = statistics.median(cold)
    warm = []
    for _ in range(5):
        torch.cuda.synchronize()
        started = time.perf_counter()
        run(*batches[0])
        torch.cuda.synchronize()
        warm.append((time.perf_counter() - started) * 1000)
    timed = [f["wait_ms"] for f in syncs if f.get("wait_ms")]
    total_wait = sum(w["total"] for w in timed)
    shares = [w["share"] for w in timed if w.get("share") is not None]
    wall_ms = total_wait / sum(shares) if shares and sum(shares) else None
    print(f"      the {len(batches)} calls timed by hand in a fresh process: {cold_ms:.2f} ms (median of 3); one warm "
          f"call: {statistics.median(warm):.2f} ms; ptlint: {total_wait:.2f} ms of waits in all, run wall time "
          f"{wall_ms if wall_ms is None else round(wall_ms, 2)} ms")
    check("every named sync on CUDA has a measured wait", all(f.get("wait_ms") for f in syncs
                                                              if "set_sync_debug_mode" not in f["message"]))
    check("the waits add up to less than the run's wall time", bool(shares) and sum(shares) < 1.0,
          f"shares {shares}")
    check("the sanitized run's wall time is within 50% of the same calls timed by hand",
          wall_ms is not None and abs(wall_ms - cold_ms) <= 0.5 * cold_ms, f"{wall_ms} ms vs {cold_ms:.2f} ms")

    # (3) the sync debug mode, without ptlint: the same count per line
    seen: dict[int, int] = {}
    target_file = os.path.realpath(path)
    previous = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            run(*batches[1])
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    for warning in caught:  # the debug mode's warning names the Python line that called the operation
        if "synchronizing CUDA operation" in str(warning.message) and os.path.realpath(warning.filename) == target_file:
            seen[warning.lineno] = seen.get(warning.lineno, 0) + 1
    counted = {f["line"]: f["count"] for f in syncs}
    print(f"      set_sync_debug_mode per line: {dict(sorted(seen.items()))}; ptlint per call: "
          f"{dict(sorted(counted.items()))}")
    check("on every line the debug mode flags, ptlint counts at least as many syncs per call",
          all(counted.get(line, 0) >= n for line, n in seen.items()), f"{seen} vs {counted}")


if __name__ == "__main__":
    sys.exit(main())
