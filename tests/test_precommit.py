"""The pre-commit hooks, run by the real pre-commit against this repository's committed state.

`pre-commit try-repo` clones the hook repository and pip-installs it into a fresh environment,
so this test needs the package index and takes a minute or two.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, SYNC_INLINE_ITEM

BAD = SYNC_INLINE_ITEM
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]  # pinned by the test extra: missing is a failure

# Run in the committed clone (the code the hooks run): a default rule's fix example that the safe
# fixes change, as JSON [code, before, after].
_SAFE_FIX_EXAMPLE = """
import json, sys
import ptlint
from ptlint.api import fix_text
from ptlint.registry import all_rules
assert ptlint.__file__.startswith(sys.argv[1]), ptlint.__file__
for code, cls in all_rules().items():
    for example in cls.fix_examples:
        after = fix_text(example.before)
        if cls.default and not example.unsafe and after != example.before:
            print(json.dumps([code, example.before, after]))
            sys.exit(0)
"""


def _safe_fix_example(source: Path) -> tuple[str, str, str]:
    result = subprocess.run([sys.executable, "-c", _SAFE_FIX_EXAMPLE, str(source)], cwd=source,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip(), result.stderr
    code, before, after = json.loads(result.stdout)
    return code, before, after


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs ptlint as a git checkout for try-repo")
def test_hooks_through_pre_commit_try_repo(tmp_path: Path):
    # The hook repository as committed (try-repo would otherwise mix in uncommitted edits).
    source = tmp_path / "ptlint-src"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(source)], check=True, capture_output=True)

    project = tmp_path / "project"
    (project / "generated").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n\n'
                                            '[tool.ptlint]\nexclude = ["generated"]\n')
    (project / "train.py").write_text(BAD)
    (project / "generated" / "ops.py").write_text(BAD)  # excluded, though passed explicitly
    code, before, after = _safe_fix_example(source)
    (project / "fixme.py").write_text(before)
    _git("init", "-q", cwd=project)
    _git("add", ".", cwd=project)

    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for key in ("PTLINT_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(key, None)
    files = ["train.py", "generated/ops.py", "fixme.py"]
    result = subprocess.run([*PRE_COMMIT, "try-repo", str(source), "--files", *files],
                            cwd=project, env=env, capture_output=True, text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "- hook id: ptlint\n" in output and "- hook id: ptlint-fix\n" in output, output
    line = BAD.splitlines().index("        total += model(x).mean().item()") + 1
    assert re.search(rf"^train\.py:{line}:\d+: PTL101 ", output, re.M), output
    assert "generated/ops.py" not in output, output  # `exclude` holds for files passed by name
    assert (project / "generated" / "ops.py").read_text() == BAD
    assert (project / "fixme.py").read_text() == after, f"ptlint-fix did not apply the {code} fix"
    assert "fixme.py" in output and "files were modified by this hook" in output, output


def test_explicit_files_honour_the_configured_exclude(tmp_path: Path):
    """What the hook relies on, without pre-commit: files named on the command line are still
    matched against `exclude` (the default folder skips apply to folder walks only)."""
    from helpers import run_ptlint

    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nexclude = ["generated", "legacy_*.py"]\n')
    (tmp_path / "generated").mkdir()
    for name in ("train.py", "generated/ops.py", "legacy_loop.py"):
        (tmp_path / name).write_text(BAD)
    result = run_ptlint("check", "--no-cache", "--quiet", "--output-format", "concise",
                        "train.py", "generated/ops.py", "legacy_loop.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["train.py"]
    clean = run_ptlint("check", "--no-cache", "generated/ops.py", "legacy_loop.py", cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
