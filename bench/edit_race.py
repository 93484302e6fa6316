"""The edit race of `ptlint fix --apply`: a user's edit saved while ptlint writes the file.

    python bench/edit_race.py [--trials 60] [--root DIR]

Each trial makes a project with one fixable file and runs the real `ptlint fix --apply` in a
child process. The user's edit (the file's text plus a marker line) is saved at a chosen moment:

- timed trials: from inside the write itself, when ptlint calls `os.fsync` on its temporary
  file, or `os.chmod` on it (the moments between the first comparison and the rename, where the
  edit used to be overwritten every time), cycling through both;
- random trials: by this process, after a random delay within one run's duration (what an editor
  does; it seldom lands inside the write).

An edit is lost when the file ends without the marker. The same trials are also run with the
edit saved inside `os.replace`, after the last comparison: the window that remains (README,
"Fixes"); those are counted apart, not in the total.

`--root DIR` runs another checkout's ptlint (e.g. an export of 6232b71, before the re-comparison)
for the comparison. Exit status 1 when a timed or random trial lost an edit, or a run crashed.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = "import torch\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, -1))\n"
MARKER = "# the user's edit {trial}\n"

# Runs ptlint's CLI with one os function wrapped: on its first call, the user's edit is saved.
HOOK = """
import os, runpy, sys
call, target, edit = sys.argv[1], sys.argv[2], sys.argv[3]
real = getattr(os, call)
done = []
def hooked(*args, **kwargs):
    if not done:
        done.append(1)
        with open(target, "w") as handle:
            handle.write(edit)
    return real(*args, **kwargs)
setattr(os, call, hooked)
sys.argv = ["ptlint", "fix", "--apply", "--no-cache", target]
runpy.run_module("ptlint", run_name="__main__")
"""


def trial(index: int, moment: str, root: str | None, delay: float = 0.0) -> tuple[bool, bool]:
    """Whether the user's edit was lost in one run, and whether ptlint crashed (a traceback): a
    run that crashes before it writes keeps every edit, which must not count as a pass."""
    with tempfile.TemporaryDirectory(prefix="ptlint-race-") as folder:
        target = Path(folder) / "train.py"
        target.write_text(SOURCE)
        edit = SOURCE + MARKER.format(trial=index)
        env = dict(os.environ)
        if root:
            env["PYTHONPATH"] = root
        if moment == "random":
            child = subprocess.Popen([sys.executable, "-m", "ptlint", "fix", "--apply", "--no-cache", str(target)],
                                     cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(delay)
            target.write_text(edit)
            stderr = child.communicate()[1]
        else:
            stderr = subprocess.run([sys.executable, "-c", HOOK, moment, str(target), edit], cwd=folder, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).stderr
        final = target.read_text()
        return MARKER.format(trial=index) not in final, b"Traceback" in stderr


def plain_run(root: str | None) -> float:
    """Seconds one `ptlint fix --apply` of the trial's file takes."""
    with tempfile.TemporaryDirectory(prefix="ptlint-race-") as folder:
        target = Path(folder) / "train.py"
        target.write_text(SOURCE)
        env = dict(os.environ, **({"PYTHONPATH": root} if root else {}))
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "ptlint", "fix", "--apply", "--no-cache", str(target)], cwd=folder,
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = time.monotonic() - start
        assert "log_softmax" in target.read_text(), "the trial's file must get a fix"
        return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=60, help="timed trials (as many random ones)")
    parser.add_argument("--root", help="the checkout whose ptlint runs (default: the installed one)")
    args = parser.parse_args()
    rng = random.Random(0)

    duration = plain_run(args.root)

    lost = {"fsync": 0, "chmod": 0, "random": 0, "replace": 0}
    crashed = 0
    runs = {name: 0 for name in lost}
    for index in range(args.trials):
        for moment in (("fsync", "chmod")[index % 2], "random"):
            delay = rng.uniform(0, duration) if moment == "random" else 0.0
            was_lost, crash = trial(index, moment, args.root, delay)
            crashed += crash
            runs[moment] += 1
            lost[moment] += was_lost
    for index in range(max(5, args.trials // 10)):
        was_lost, crash = trial(index, "replace", args.root)
        crashed += crash
        runs["replace"] += 1
        lost["replace"] += was_lost

    timed = runs["fsync"] + runs["chmod"]
    print(f"ptlint from {args.root or 'the installed package'}; one run takes {duration:.2f} s")
    print(f"timed trials (edit saved while the temporary is written): {lost['fsync'] + lost['chmod']} "
          f"lost of {timed} (fsync {lost['fsync']}/{runs['fsync']}, chmod {lost['chmod']}/{runs['chmod']})")
    print(f"random trials (edit saved at a random moment of the run): {lost['random']} lost of {runs['random']}")
    print(f"edit saved after the last comparison, inside os.replace (the documented remaining window): "
          f"{lost['replace']} lost of {runs['replace']}")
    print(f"runs that crashed (a traceback): {crashed}")
    return 1 if lost["fsync"] + lost["chmod"] + lost["random"] or crashed else 0


if __name__ == "__main__":
    sys.exit(main())
