"""Speed benchmark: ptlint cold and warm against ruff (and TorchFix when installed), on corpus folders.

    python bench/bench.py /root/.cache/ptlint-corpus/timm /root/.cache/ptlint-corpus/transformers
    python bench/bench.py --scaling /root/.cache/ptlint-corpus/transformers

It downloads nothing: give it folders (../shared/tools/corpus.sh unpacks the pinned corpus).
Commands run alternately, `--repeat` times each (default 3), and the table shows medians, so a
noisy machine slows every tool alike. Peak memory is the largest sum of RSS over the process
tree (ptlint's workers included), sampled every 20 ms.
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


def tree_rss_kb(root_pid: int) -> int:
    """Sum of VmRSS of a process and all its descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            ppid = int(fields[1])
            with open(f"/proc/{entry}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        rss[int(entry)] = int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, pending = 0, [root_pid]
    while pending:
        pid = pending.pop()
        total += rss.get(pid, 0)
        pending.extend(children.get(pid, []))
    return total


# Byte-code caching on, as on a user's machine: PYTHONDONTWRITEBYTECODE in the calling shell would
# make every run (and every worker) compile ptlint's sources again.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], env: dict | None = None) -> tuple[float, int, int]:
    """(seconds, peak tree RSS in MB, exit code)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or ENV)
    peak = 0
    while process.poll() is None:
        peak = max(peak, tree_rss_kb(process.pid))
        time.sleep(0.02)
    return time.perf_counter() - start, peak // 1024, process.returncode


def count(folder: Path) -> tuple[int, int]:
    files = lines = 0
    for path in folder.rglob("*.py"):
        files += 1
        with open(path, "rb") as handle:
            lines += handle.read().count(b"\n")
    return files, lines


def ptlint_command(folder: Path, cache: str | None, jobs: int | None) -> list[str]:
    command = [sys.executable, "-m", "ptlint", "check", "--exit-zero", "--output-format", "concise", "-q"]
    command += ["--cache-dir", cache] if cache else ["--no-cache"]
    if jobs:
        command += ["--jobs", str(jobs)]
    return command + [str(folder)]


def bench_folder(folder: Path, repeat: int, torchfix: str | None, jobs: int | None) -> dict:
    ruff = shutil.which("ruff")
    runs: dict[str, list[tuple[float, int]]] = {"cold": [], "warm": [], "ruff": [], "torchfix": []}
    for _ in range(repeat):
        cache = tempfile.mkdtemp(prefix="ptlint-bench-cache-")
        try:
            seconds, peak, code = timed(ptlint_command(folder, None, jobs))
            assert code in (0,), f"ptlint failed on {folder} (exit {code})"
            runs["cold"].append((seconds, peak))
            timed(ptlint_command(folder, cache, jobs))  # fill the cache
            runs["warm"].append(timed(ptlint_command(folder, cache, jobs))[:2])
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        if ruff:
            runs["ruff"].append(timed([ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q",
                                       str(folder)])[:2])
    if torchfix:  # minutes per run: once is enough to show the order of magnitude
        runs["torchfix"].append(timed([torchfix, "--select", "ALL", str(folder)])[:2])
    files, lines = count(folder)
    row = {"folder": folder.name, "files": files, "lines": lines}
    for name, values in runs.items():
        if values:
            row[name] = statistics.median(v[0] for v in values)
            row[name + "_mb"] = max(v[1] for v in values)
    return row


def print_table(rows: list[dict]) -> None:
    def number(value, spec: str) -> str:
        return format(value, spec) if value is not None else "-"

    print(f"{'corpus':<14}{'files':>7}{'lines':>10}{'cold s':>9}{'warm s':>9}{'ruff s':>9}{'torchfix s':>12}"
          f"{'cold/ruff':>11}{'cold/warm':>11}{'torchfix/cold':>15}{'peak MB':>9}")
    for row in rows:
        cold, warm, ruff, torchfix = row["cold"], row["warm"], row.get("ruff"), row.get("torchfix")
        print(f"{row['folder']:<14}{row['files']:>7}{row['lines']:>10}{cold:>9.2f}{warm:>9.2f}"
              f"{number(ruff, '.2f'):>9}{number(torchfix, '.1f'):>12}"
              f"{number(cold / ruff if ruff else None, '.2f'):>10}x{cold / warm:>10.1f}x"
              f"{number(torchfix / cold if torchfix else None, '.0f'):>14}x{row['cold_mb']:>9}")


def scaling(folder: Path, sizes: list[int], repeat: int, jobs: int | None) -> None:
    files = sorted(folder.rglob("*.py"))
    print(f"{'files':>7}{'lines':>10}{'cold s':>9}{'us/line':>9}")
    for size in sorted({min(size, len(files)) for size in sizes}):
        with tempfile.TemporaryDirectory(prefix="ptlint-scaling-") as temporary:
            for index, path in enumerate(files[:size]):
                shutil.copyfile(path, Path(temporary) / f"f{index}.py")
            _, lines = count(Path(temporary))
            seconds = statistics.median(timed(ptlint_command(Path(temporary), None, jobs))[0] for _ in range(repeat))
            print(f"{size:>7}{lines:>10}{seconds:>9.2f}{seconds / lines * 1e6:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--torchfix", action="store_true", help="also time TorchFix (slow: minutes per corpus)")
    parser.add_argument("--scaling", action="store_true", help="time per line for 100..3000 files of a folder")
    args = parser.parse_args()
    for folder in args.folders:
        if not folder.is_dir():
            parser.error(f"{folder}: not a folder (run ../shared/tools/corpus.sh to unpack the corpus)")
    if args.scaling:
        for folder in args.folders:
            scaling(folder, [100, 300, 1000, 3000], args.repeat, args.jobs)
        return
    torchfix = shutil.which("torchfix") if args.torchfix else None
    if args.torchfix and not torchfix:
        print("torchfix is not installed: its column stays empty", file=sys.stderr)
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}; medians of {args.repeat}")
    print_table([bench_folder(folder, args.repeat, torchfix, args.jobs) for folder in args.folders])


if __name__ == "__main__":
    main()
