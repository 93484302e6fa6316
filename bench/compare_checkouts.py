"""Cold `ptlint check` of a corpus folder by this checkout and another one, alternating, medians.

    python bench/compare_checkouts.py --other /tmp/old ~/.cache/ptlint-corpus/timm --rounds 5
    python bench/compare_checkouts.py --other /tmp/old FOLDER -- --config "project = false"

`--other` is the root of another checkout of ptlint (`git worktree add /tmp/old 6232b71`); each
run is `python -m ptlint check --no-cache .` in the folder with PYTHONPATH set to a checkout, so
both use this interpreter and its installed dependencies. Arguments after `--` go to this
checkout's runs only (the other may not know them). Alternating runs share the machine's noise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(root: str, folder: str, extra: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=root)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ptlint", "check", "--no-cache", *extra, "."], cwd=folder, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, help="root of the other checkout")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("folders", nargs="+")
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    for folder in args.folders:
        folder = os.path.expanduser(folder)
        runs: dict[str, list[float]] = {"this": [], "other": []}
        for _ in range(args.rounds):
            runs["other"].append(timed(args.other, folder, []))
            runs["this"].append(timed(HERE, folder, extra))
        this, other = statistics.median(runs["this"]), statistics.median(runs["other"])
        print(f"{os.path.basename(folder)}: this {this:.3f} s, other {other:.3f} s, ratio {this / other:.3f}"
              f" (medians of {args.rounds}{', ' + ' '.join(extra) if extra else ''})")


if __name__ == "__main__":
    main()
