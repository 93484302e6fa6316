"""Start-up: wall time of `ptlint check` on one small file, as pre-commit and editors run it.

    python bench/startup.py                 # 30 rounds
    python bench/startup.py --rounds 50 --importtime

Each round runs every command once, in turn (so a busy machine slows them alike); the table
shows medians and the spread of the wall time, and the median CPU time (user + system: on a
machine busy with other work, what the command itself cost), in ms. Commands: the interpreter
alone (`python -c pass`, the floor), the standard-library modules a check needs, `import
ptlint.front.cli`, `ptlint check` with and without the cache, and ruff on the same file when it is
installed. With --importtime, the modules a one-file check imports, by self time. With --grow N,
also a copy of ptlint whose catalogue has N more rule modules (clones of the existing ones),
checked with its rule index and without (every rule module imported).
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

SMALL = """\
import torch
import torch.nn.functional as F


def train(model, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(loss.item())
"""


def ptlint_command() -> list[str]:
    script = Path(sys.executable).with_name("ptlint")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ptlint"]


# Byte-code caching on, as on a user's machine (pip compiles a regular install's modules; the warm-up
# run writes them for an editable one): PYTHONDONTWRITEBYTECODE in the calling shell would make every
# run compile ptlint's sources again and time the compiler.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def time_once(command: list[str], cwd: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run. On a busy machine the CPU time is
    what the command itself cost; the wall time adds the wait for a core."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, _, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = 0  # reaped by wait4
    return wall, usage.ru_utime + usage.ru_stime


def grown_catalogue(folder: Path, copies: int) -> Path:
    """A copy of the ptlint package with `copies` more rule modules (clones of the existing ones
    under new codes), its rule index regenerated: the catalogue as it will grow."""
    import ptlint

    root = folder / "grown"
    shutil.copytree(Path(ptlint.__file__).parent, root / "ptlint",
                    ignore=shutil.ignore_patterns("__pycache__", "_index.py"))
    rules = root / "ptlint" / "rules"
    originals = sorted(rules.glob("ptl[0-9]*.py"))
    for index in range(min(copies, 100)):  # codes PTL900-PTL999
        original = originals[index % len(originals)]
        text = original.read_text().replace(f'"PTL{original.name[3:6]}"', f'"PTL9{index:02d}"')
        (rules / f"ptl9{index:02d}_{original.stem[7:]}_copy.py").write_text(text)
    subprocess.run([sys.executable, "-c", "from ptlint.engine.catalogue import rule_index_module; "
                    f"open({str(rules / '_index.py')!r}, 'w').write(rule_index_module())"],
                   env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root)], check=True)
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--importtime", action="store_true", help="also list the imports of one check")
    parser.add_argument("--grow", type=int, default=0, metavar="N",
                        help="also time a catalogue grown by N rule modules, with and without the rule index")
    parser.add_argument("--other", metavar="EXE", help="also time another ptlint executable (e.g. an older install)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "train.py").write_text(SMALL)
        ptlint = ptlint_command()
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            # the standard library a check cannot do without: the floor under ptlint's own imports
            "stdlib it needs": [sys.executable, "-c", "import argparse, dataclasses, typing, ast, tokenize, fnmatch"],
            "import ptlint.front.cli": [sys.executable, "-c", "import ptlint.front.cli"],
            "ptlint check --no-cache": [*ptlint, "check", "--no-cache", "train.py"],
            "ptlint check (warm cache)": [*ptlint, "check", "train.py"],
        }
        if args.other:
            commands["other ptlint --no-cache"] = [args.other, "check", "--no-cache", "train.py"]
        if args.grow:
            grown = grown_catalogue(Path(folder), args.grow)
            check = [sys.executable, "-c", "import sys; from ptlint.front.cli import main; main()", "check", "--no-cache",
                     "train.py"]
            commands[f"+{args.grow} rules, with index"] = ["env", f"PYTHONPATH={grown}", *check]
            stale = Path(folder) / "stale"
            shutil.copytree(grown, stale)
            (stale / "ptlint" / "rules" / "_index.py").unlink()
            commands[f"+{args.grow} rules, no index"] = ["env", f"PYTHONPATH={stale}", *check]
        ruff = shutil.which("ruff") or (str(Path(sys.executable).with_name("ruff"))
                                        if Path(sys.executable).with_name("ruff").exists() else None)
        if ruff:
            commands["ruff check --no-cache"] = [ruff, "check", "--no-cache", "train.py"]
        for command in commands.values():  # warm the OS file cache, fill ptlint's cache
            time_once(command, folder)
        timings: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            for name, command in commands.items():
                wall, used = time_once(command, folder)
                timings[name].append(wall * 1000)
                cpu[name].append(used * 1000)
        load = (load + os.getloadavg()[0]) / 2
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        print(f"one {SMALL.count(chr(10))}-line file, {args.rounds} rounds, {cpus} cores, load {load:.2f}, "
              f"Python {sys.version.split()[0]}; medians (min-max), ms")
        print(f"  {'':<28} {'wall':>7}  {'':<13} {'CPU':>7}")
        for name, values in timings.items():
            print(f"  {name:<28} {statistics.median(values):7.1f}  {f'({min(values):.1f}-{max(values):.1f})':<13} "
                  f"{statistics.median(cpu[name]):7.1f}")
        if ruff:
            ratio = statistics.median(timings["ptlint check --no-cache"]) / statistics.median(
                timings["ruff check --no-cache"])
            print(f"  ptlint / ruff, wall (no cache) {ratio:5.1f}x")
        if args.importtime:
            result = subprocess.run([sys.executable, "-X", "importtime", "-m", "ptlint", "check", "--no-cache",
                                     "train.py"], cwd=folder, capture_output=True, text=True)
            rows = []
            for line in result.stderr.splitlines():
                if line.startswith("import time:") and "|" in line and "self" not in line:
                    self_us, _, name = line[len("import time:"):].split("|")
                    rows.append((int(self_us), name.strip()))
            print(f"imports of one check: {len(rows)} modules, {sum(r[0] for r in rows) / 1000:.1f} ms self in all;"
                  " the largest:")
            for self_us, name in sorted(rows, reverse=True)[:15]:
                print(f"  {self_us / 1000:6.1f}  {name}")


if __name__ == "__main__":
    main()
