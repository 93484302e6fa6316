"""A slice of real code nobody here wrote (the pinned corpus of shared/tools/corpus.sh): check has
no internal errors, and fix round-trips — fixed files compile, a second fix changes nothing, files
without a fix keep every byte. Skips when the corpus cannot be had. bench/roundtrip.py does the
same on the whole corpus.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest
from helpers import REPO, run_ptlint

# Both tests unpack the corpus through corpus.sh, which empties a package's folder before filling it:
# on two xdist workers at once one would read a folder the other is emptying. One worker runs both.
pytestmark = pytest.mark.xdist_group("corpus_slice")

PACKAGES = ("timm", "transformers", "diffusers", "kornia", "pytorch_lightning", "torchmetrics")
PER_PACKAGE = 10
# Files likely to hold something the fixes rewrite (a factory then a move, an optimizer, a log of a
# softmax, a kept loss, a per-parameter loop), so the slice exercises the fixer.
FIXABLE_HINT = re.compile(r"torch\.(tensor|zeros|ones|empty|full|arange|linspace|eye|rand\w*)\(.*\)\.(to|cuda)\(|"
                          r"optim\.(SGD|Adam|AdamW)\(|log\(\s*\w*\.?softmax|\.append\(loss\)|grad\.zero_\(\)")


def corpus_root() -> Path | None:
    root = Path(os.environ.get("PTLINT_CORPUS") or Path.home() / ".cache" / "ptlint-corpus")
    if all((root / package).is_dir() for package in PACKAGES):
        return root
    for script in (REPO.parent / "shared" / "tools" / "corpus.sh", REPO / "shared" / "tools" / "corpus.sh"):
        if script.is_file():
            try:
                result = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
            except (OSError, subprocess.TimeoutExpired):
                return None
            if result.returncode == 0 and result.stdout.strip():
                root = Path(result.stdout.strip().splitlines()[-1])
                if all((root / package).is_dir() for package in PACKAGES):
                    return root
    return None


def pick(root: Path) -> list[Path]:
    """PER_PACKAGE files from each package, spread over it, half of them with a fix hint."""
    chosen: list[Path] = []
    for package in PACKAGES:
        files = sorted((root / package).rglob("*.py"))
        hinted = [p for p in files if FIXABLE_HINT.search(p.read_text("utf-8", "replace"))]
        picks: list[Path] = []
        for pool in (hinted, files):
            want = PER_PACKAGE // 2 if pool is hinted else PER_PACKAGE - len(picks)
            step = max(1, len(pool) // max(1, want))
            picks += [p for p in pool[::step] if p not in picks][:want]
        chosen += picks
    return chosen


def compiles(data: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<slice>", "exec", dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError):
        return False


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory):
    root = corpus_root()
    if root is None:
        pytest.skip("the corpus is not here and shared/tools/corpus.sh could not fetch it")
    target = tmp_path_factory.mktemp("corpus-slice")
    for path in pick(root):
        destination = target / path.relative_to(root)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
    return target


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_check_has_no_internal_errors(slice_dir):
    assert len(snapshot(slice_dir)) == PER_PACKAGE * len(PACKAGES)
    result = run_ptlint("check", "--no-cache", "--select", "PTL", "--output-format", "concise", ".", cwd=slice_dir)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.strip() == ""


def test_fix_round_trips(slice_dir):
    original = snapshot(slice_dir)
    fix = run_ptlint("fix", "--apply", "--unsafe-fixes", "--diff", "--no-cache", "--select", "PTL", ".",
                     cwd=slice_dir)
    assert fix.returncode in (0, 1) and "Traceback" not in fix.stderr, fix.stderr
    reported = {line[len("+++ b/"):].strip() for line in fix.stdout.splitlines() if line.startswith("+++ b/")}
    after = snapshot(slice_dir)
    assert set(after) == set(original), "no file appears or disappears (no temporary file left)"
    changed = {name for name in original if after[name] != original[name]}
    assert changed == {os.path.normpath(p) for p in reported}  # unchanged files keep every byte
    assert changed, "the slice should hold something to fix"
    for name in changed:
        assert compiles(after[name]) or not compiles(original[name]), name
    applied = re.search(r"Fixed (\d+) finding", fix.stderr)
    assert applied and int(applied.group(1)) >= len(changed)
    again = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", "--select", "PTL", ".", cwd=slice_dir)
    assert "Traceback" not in again.stderr
    assert snapshot(slice_dir) == after, "a second fix run changed files"
