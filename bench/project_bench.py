"""One file checked inside a large project, as pre-commit and editors check it: with the project's
index warm (a run over the project left it in the cache) and cold (no index: the whole project is
summarised first), against the interpreter alone.

    python bench/project_bench.py ~/.cache/ptlint-corpus/transformers transformers/models/bert/modeling_bert.py

Rounds alternate the commands, so a busy machine slows them alike; the table shows medians and
ranges of the wall time in ms. The cache lives in a temporary folder (`--cache-dir`); the project
is the folder given (it has no project marker, so the folder named is the project).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def wall(command: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    elapsed = time.perf_counter() - start
    if result.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr.decode(errors='replace')[-400:]}")
    return elapsed * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("file", help="a file of the project, relative to it")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--cold-rounds", type=int, default=1)
    args = parser.parse_args(argv)
    project = args.project.resolve()
    cache = tempfile.mkdtemp(prefix="ptlint-project-bench-")
    check = [sys.executable, "-m", "ptlint", "check", "--exit-zero", "-q", "--cache-dir"]
    try:
        fill = wall(check + [cache, "."], project)  # the run over the project that leaves the index
        wall(check + [cache, args.file], project)  # the file's own findings entry
        floor, warm = [], []
        for _ in range(args.rounds):
            floor.append(wall([sys.executable, "-c", "pass"], project))
            warm.append(wall(check + [cache, args.file], project))
        cold = []
        for _ in range(args.cold_rounds):
            fresh = tempfile.mkdtemp(prefix="ptlint-project-bench-cold-")
            try:
                cold.append(wall(check + [fresh, args.file], project))
            finally:
                shutil.rmtree(fresh, ignore_errors=True)
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    def row(name: str, values: list[float]) -> str:
        return f"  {name:<44}{statistics.median(values):>9.1f}  ({min(values):.1f}-{max(values):.1f})"

    print(f"{project.name}: {args.file}; {args.rounds} rounds, load {os.getloadavg()[0]:.2f}; wall ms, median (range)")
    print(row("python -c pass", floor))
    print(row("ptlint check FILE, project index warm", warm))
    print(row("ptlint check FILE, no index (cold)", cold))
    print(row("ptlint check . (the run that filled the index)", [fill]))
    print(f"  warm / python -c pass: {statistics.median(warm) / statistics.median(floor):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
