"""`ptlint fix --apply` killed midway loses nothing: every file is either exactly as it was or
exactly as a complete run leaves it, never anything in between, and a second run finishes the job.

Writes go through a temporary file in the same folder, fsync, then os.replace (fixer.write_atomic):
a SIGKILL between mkstemp and the rename can leave a `.ptlint-*.tmp` file behind. That is the only
debris allowed; it does not end in `.py`, so no later run checks or fixes it. ptlint does not delete
such files itself: another ptlint run may be writing through one at that moment.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import run_ptlint

from ptlint.engine.registry import all_rules

FILES = 300


def fix_befores() -> list[str]:
    return [example.before for rule in all_rules().values() for example in rule.fix_examples]


def make_tree(root: Path, seed: int = 8) -> dict[str, bytes]:
    """FILES modules, each several rules' fix examples one after another, in varied order and
    spelling (a header comment, CRLF in some), in a few nested packages."""
    rng = random.Random(seed)
    befores = fix_befores()
    assert len(befores) >= 5, "the rules should offer fix examples"
    tree: dict[str, bytes] = {}
    for index in range(FILES):
        chosen = rng.sample(befores, k=min(4, len(befores)))
        text = f"# generated module {index}\n" + "\n".join(chosen)
        if index % 5 == 0:
            text = text.replace("\n", "\r\n")
        relative = f"pkg{index % 6}/sub{index % 3}/mod_{index:03d}.py"
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        tree[relative] = data
    return tree


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


FIX = ("fix", "--apply", "--unsafe-fixes", "--no-cache", "--quiet", ".")


def _kill_when(root: Path, tree: dict[str, bytes], target: int, deadline: float) -> tuple[int, int]:
    """Run the fix, SIGKILL its whole process group once `target` files differ from `tree`.
    Returns (files rewritten when killed, exit status)."""
    process = subprocess.Popen([sys.executable, "-m", "ptlint", *FIX], cwd=root, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rewritten = 0
    try:
        while process.poll() is None and time.monotonic() < deadline:
            rewritten = sum(1 for name, data in tree.items() if (root / name).read_bytes() != data)
            if rewritten >= target:
                break
            time.sleep(0.005)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        status = process.wait()
    return rewritten, status


def _check_old_or_fixed(root: Path, tree: dict[str, bytes], fixed: dict[str, bytes]) -> list[str]:
    """Every file is exactly as it was or exactly as a complete run leaves it; returns the debris."""
    after = snapshot(root)
    debris = sorted(set(after) - set(tree))
    assert all(Path(name).name.startswith(".ptlint-") and name.endswith(".tmp") for name in debris), debris
    half_done = [name for name in tree if after[name] not in (tree[name], fixed[name])]
    assert half_done == [], f"files neither original nor fully fixed: {half_done[:5]}"
    return debris


def test_sigkill_midway_leaves_each_file_old_or_fully_fixed(tmp_path):
    """One complete run for reference, then one tree killed three times in a row (early, midway,
    late), each time resumed by the next run, and finished by a last one."""
    original = tmp_path / "original"
    tree = make_tree(original)
    full = tmp_path / "full"
    shutil.copytree(original, full)
    result = run_ptlint(*FIX, cwd=full, timeout=600)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr, result.stderr
    fixed = snapshot(full)
    assert set(fixed) == set(tree)
    changed = [name for name in tree if fixed[name] != tree[name]]
    assert len(changed) > FILES * 0.9, "most generated files should have something to fix"

    root = tmp_path / "killed"
    shutil.copytree(original, root)
    done = 0
    for fraction in (0.05, 0.5, 0.95):
        target = max(done + 1, int(len(changed) * fraction))
        rewritten, status = _kill_when(root, tree, target, time.monotonic() + 300)
        assert status == -signal.SIGKILL, f"the run finished before {fraction:.0%}: make the tree larger"
        _check_old_or_fixed(root, tree, fixed)
        now = sum(1 for name in tree if (root / name).read_bytes() != tree[name])
        assert now >= rewritten and done < now < len(changed), (done, now, rewritten)
        done = now
    # a last run finishes the job exactly as one complete run would, and ignores the debris
    debris = _check_old_or_fixed(root, tree, fixed)
    result = run_ptlint(*FIX, cwd=root, timeout=600)
    assert "Traceback" not in result.stderr and ".tmp" not in result.stdout + result.stderr
    final = snapshot(root)
    assert {name: final[name] for name in tree} == fixed
    assert set(final) - set(tree) == set(debris)


def test_debris_is_never_checked(tmp_path):
    """A `.ptlint-*.tmp` left by a killed run holds Python; no later run may treat it as source."""
    (tmp_path / ".ptlint-abc123.tmp").write_text("import torch\nfor x in xs:\n    x.item()\n")
    (tmp_path / "a.py").write_text("import torch\n")
    result = run_ptlint("check", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 0 and ".tmp" not in result.stdout
