"""Cost of `ptlint explain` against plain `torch._dynamo.explain` on the same models (CPU).

    python bench/dynamic_bench.py            # prints a markdown table (and JSON with --json)

Each measurement is a fresh process (both sides pay `import torch`); wall time and the peak
resident memory of the largest process in its tree (os.wait4's ru_maxrss) are taken by the
parent. The factories below are also ptlint targets: `bench/dynamic_bench.py:make_mlp`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.relpath(os.path.abspath(__file__), REPO)


def make_mlp():
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return model, (torch.randn(64, 256),)


def make_transformer():
    import torch
    from torch import nn

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=12)
    return model, (torch.randn(8, 64, 256),)


CASES = [  # (label, ptlint target, module to import for plain explain, factory)
    ("MLP (3 Linear)", f"{HERE}:make_mlp", "bench.dynamic_bench", "make_mlp"),
    ("TransformerEncoder x12", f"{HERE}:make_transformer", "bench.dynamic_bench", "make_transformer"),
    ("print on first line", "fixtures/dynamic/breaks.py:make_print", "fixtures.dynamic.breaks", "make_print"),
    ("data-dependent branch in a loop", "fixtures/dynamic/breaks.py:make_loop", "fixtures.dynamic.breaks",
     "make_loop"),
]

PLAIN = """
import importlib, json, sys, time
started = time.perf_counter()
import torch
module = importlib.import_module({module!r})
fn, args = getattr(module, {factory!r})()
explanation = torch._dynamo.explain(fn)(*args)
print(json.dumps({{"graphs": explanation.graph_count, "breaks": explanation.graph_break_count,
                  "reasons": len(explanation.break_reasons), "seconds": time.perf_counter() - started}}))
"""


def measure(argv: list[str]) -> tuple[float, int, str, int]:
    """(wall seconds, peak RSS in MiB of the largest process in the tree, stdout, exit status)."""
    import tempfile

    env = dict(os.environ)
    env.pop("TORCH_LOGS", None)
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage, its waited-for children folded in
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode()
    return wall, usage.ru_maxrss // 1024, text, process.returncode


def run_case(label: str, target: str, module: str, factory: str) -> dict:
    wall, rss, out, code = measure([sys.executable, "-m", "ptlint", "explain", "--output-format", "json",
                                    "--device", "cpu", target])
    findings = json.loads(out) if out.strip() else []
    plain_wall, plain_rss, plain_out, _ = measure([sys.executable, "-c", PLAIN.format(module=module,
                                                                                      factory=factory)])
    plain = json.loads(plain_out.strip().splitlines()[-1])
    return {
        "model": label, "ptlint_s": round(wall, 2), "ptlint_rss_mib": rss, "ptlint_exit": code,
        "ptlint_breaks": sum(f["code"] == "PTL450" for f in findings),
        "ptlint_recompiles": sum(f["code"] == "PTL451" for f in findings),
        "explain_s": round(plain_wall, 2), "explain_rss_mib": plain_rss,
        "explain_breaks": plain["breaks"], "explain_graphs": plain["graphs"],
        "ratio": round(wall / plain_wall, 2),
    }


def main() -> None:
    rows = [run_case(*case) for case in CASES]
    print("| model | ptlint explain | peak RSS | breaks | torch._dynamo.explain | peak RSS "
          "| breaks (graph_break_count) | time ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['ptlint_s']} s | {r['ptlint_rss_mib']} MiB | {r['ptlint_breaks']} | "
              f"{r['explain_s']} s | {r['explain_rss_mib']} MiB | {r['explain_breaks']} | {r['ratio']} |")
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
