"""Running the real `ptlint` command in tests, and reading `# expect:` markers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
# A PTL101 finding on line 8 (`loss.item()` in the loop), used by the editor tests.
SYNC_LOSS_ITEM = """import torch


def train(model, loader):
    total = 0.0
    for x in loader:
        loss = model(x).mean()
        total += loss.item()
    return total
"""
# A PTL101 finding on line 7, spanning `model(x).mean().item()`, used by the CI-output tests.
SYNC_INLINE_ITEM = """import torch


def train(model, loader):
    total = 0.0
    for x in loader:
        total += model(x).mean().item()
    return total
"""
# PTL302 (safe fix) on line 7, PTL103 (unsafe fix) on line 11, PTL101 (no fix) on line 12: one
# finding of each kind of fix, used by the command-line tests.
THREE_FINDINGS = """import torch
import torch.nn.functional as F


def train(model, loader):
    losses = []
    logp = torch.log(F.softmax(model.head, dim=-1))
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        losses.append(loss)
        print(loss.item())
    return losses, logp
"""
THREE_FINDINGS_SAFE_FIXED = THREE_FINDINGS.replace("torch.log(F.softmax(model.head, dim=-1))",
                                                   "F.log_softmax(model.head, dim=-1)")
# A PTL103 finding (an unsafe fix only) on line 8: the losses list keeps every graph.
KEPT_LOSS = """import torch

def train(model, loader):
    losses = []
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        losses.append(loss)
    return losses
"""
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>PTL\d{3}(?:\s*,\s*PTL\d{3})*)")


def run_ptlint(*args: str, cwd: str | os.PathLike | None = None, input: str | None = None,
               env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m ptlint ARGS` in a child process, as a user's shell would run it."""
    full_env = dict(os.environ)
    full_env.pop("PTLINT_CACHE_DIR", None)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "ptlint", *args], cwd=cwd, input=input, text=True,
                          capture_output=True, env=full_env, timeout=timeout)


def run_json(*args: str, cwd=None) -> tuple[int, list[dict]]:
    result = run_ptlint(*args, "--output-format", "json", "--no-cache", cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def expected_markers(root: Path) -> set[tuple[str, int, str]]:
    """(path relative to root, line, code) for every `# expect: CODE` marker under root."""
    out = set()
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = EXPECT.search(line)
            if match:
                for code in match.group("codes").split(","):
                    out.add((path.relative_to(root).as_posix(), number, code.strip()))
    return out
