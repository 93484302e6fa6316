"""The pre-commit hooks, run by the real pre-commit with the README's configuration.

pre-commit clones the hook repository at the README's `rev` and pip-installs it into a fresh
environment, so that test needs the package index and takes a minute or two.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import REPO, SYNC_INLINE_ITEM

from ptlint.front.api import check_text

BAD = SYNC_INLINE_ITEM
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]  # pinned by the test extra: missing is a failure

# Run in the clone at the README's rev (the code the hooks run): a default rule's fix example
# that the safe fixes change, as JSON [code, before, after].
_SAFE_FIX_EXAMPLE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import ptlint
from ptlint.front.api import fix_text
from ptlint.engine.registry import all_rules
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


README_REPO = "https://github.com/ptlint/ptlint"


def readme_snippet() -> str:
    """The `.pre-commit-config.yaml` the README gives, exactly as written there."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("```yaml\n", readme.index("<!-- pre-commit-snippet")) + len("```yaml\n")
    return textwrap.dedent(readme[start:readme.index("```", start)])


def _is_git_checkout() -> bool:
    return subprocess.run(["git", "rev-parse", "--git-dir"], cwd=REPO, capture_output=True).returncode == 0


@pytest.mark.skipif(not _is_git_checkout(), reason="needs ptlint as a git checkout")
def test_readme_snippet_pins_a_commit_of_this_history():
    import yaml  # pre-commit's own dependency

    [repo] = yaml.safe_load(readme_snippet())["repos"]
    assert repo["repo"] == README_REPO
    rev = repo["rev"]
    assert re.fullmatch(r"[0-9a-f]{40}", rev), f"rev must be a commit sha (no release is tagged): {rev!r}"
    ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", rev, "HEAD"], cwd=REPO, capture_output=True)
    assert ancestor.returncode == 0, f"{rev} is not a commit of this history: pin the README's rev to one"
    hooks_then = subprocess.run(["git", "show", f"{rev}:.pre-commit-hooks.yaml"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout
    assert {hook["id"] for hook in repo["hooks"]} <= {hook["id"] for hook in yaml.safe_load(hooks_then)}


@pytest.mark.skipif(not _is_git_checkout(), reason="needs ptlint as a git checkout")
def test_hooks_through_pre_commit_as_the_readme_says(tmp_path: Path):
    """The README's .pre-commit-config.yaml, run by the real pre-commit. The one change: the
    repository's address is a clone of this one (there is no network), at the README's rev."""
    import yaml

    [readme_repo] = yaml.safe_load(readme_snippet())["repos"]
    source = tmp_path / "ptlint-src"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(source)], check=True, capture_output=True)
    _git("checkout", "--quiet", readme_repo["rev"], cwd=source)  # the code the hooks will run

    project = tmp_path / "project"
    (project / "generated").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "p"\nversion = "0"\n\n'
                                            '[tool.ptlint]\nexclude = ["generated"]\n')
    (project / "train.py").write_text(BAD)
    (project / "generated" / "ops.py").write_text(BAD)  # excluded, though pre-commit names it
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                "cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Notes"]},
                          {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
                           "source": BAD.splitlines(keepends=True)}]}
    (project / "explore.ipynb").write_text(json.dumps(notebook, indent=1))
    code, before, after = _safe_fix_example(source)
    (project / "fixme.py").write_text(before)
    config = readme_snippet()
    assert config.count(README_REPO) == 1
    (project / ".pre-commit-config.yaml").write_text(config.replace(README_REPO, str(source)))
    _git("init", "-q", cwd=project)
    _git("add", ".", cwd=project)

    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    for key in ("PTLINT_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(key, None)
    result = subprocess.run([*PRE_COMMIT, "run", "--all-files"], cwd=project, env=env, capture_output=True,
                            text=True, timeout=1200)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "- hook id: ptlint\n" in output and "- hook id: ptlint-fix\n" in output, output
    line = BAD.splitlines().index("        total += model(x).mean().item()") + 1
    assert re.search(rf"^train\.py:{line}:\d+: PTL101 ", output, re.M), output
    assert f"explore.ipynb:cell 2:{line}:" in output, output  # notebooks are passed and checked
    assert "generated/ops.py" not in output, output  # `exclude` holds for files passed by name
    assert (project / "generated" / "ops.py").read_text() == BAD
    assert (project / "fixme.py").read_text() == after, f"ptlint-fix did not apply the {code} fix"
    assert not any(f.fix and f.fix.applicability == "safe" for f in check_text((project / "fixme.py").read_text()))


def test_explicit_files_and_force_exclude(tmp_path: Path):
    """What the hooks rely on, without pre-commit: a file named on the command line is checked even
    when `exclude` matches it (ruff's rule), unless --force-exclude (which the hooks pass) or
    `force-exclude = true` is given; the default folder skips apply to folder walks only."""
    from helpers import run_ptlint

    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nexclude = ["generated", "legacy_*.py"]\n')
    (tmp_path / "generated").mkdir()
    for name in ("train.py", "generated/ops.py", "legacy_loop.py"):
        (tmp_path / name).write_text(BAD)
    named = ("train.py", "generated/ops.py", "legacy_loop.py")

    def checked(*args: str) -> list[str]:
        result = run_ptlint("check", "--no-cache", "--quiet", "--output-format", "concise", *args, cwd=tmp_path)
        assert result.returncode in (0, 1), result.stderr
        return sorted(line.split(":")[0] for line in result.stdout.splitlines())

    assert checked(*named) == ["generated/ops.py", "legacy_loop.py", "train.py"]
    assert checked("--force-exclude", *named) == ["train.py"]
    assert checked(".") == ["train.py"]  # a folder walk always honours exclude
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nexclude = ["generated", "legacy_*.py"]\n'
                                            'force-exclude = true\n')
    assert checked(*named) == ["train.py"]
    assert checked("--no-force-exclude", *named) == ["generated/ops.py", "legacy_loop.py", "train.py"]
    clean = run_ptlint("check", "--no-cache", "generated/ops.py", "legacy_loop.py", cwd=tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr


def test_hook_definitions_pass_force_exclude_and_notebooks():
    import yaml  # pre-commit's own dependency

    hooks = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["ptlint"]["entry"] == "ptlint check --force-exclude"
    assert hooks["ptlint-fix"]["entry"] == "ptlint fix --apply --force-exclude"
    assert all(hook["types_or"] == ["python", "jupyter"] for hook in hooks.values())


def _working_tree_as_repository(tmp_path: Path) -> tuple[Path, str]:
    """This checkout as it is now (uncommitted edits included) in a one-commit repository: the
    hook definition and the code that pre-commit will clone and install."""
    import shutil

    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    source = tmp_path / "ptlint-now"
    for name in filter(None, listed):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    _git("init", "-q", cwd=source)
    _git("add", ".", cwd=source)
    _git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "now", cwd=source)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True,
                         check=True).stdout.strip()
    return source, sha


@pytest.mark.skipif(not _is_git_checkout(), reason="needs ptlint as a git checkout")
def test_the_check_hook_takes_fix_as_ruffs_does(tmp_path: Path):
    """`args: [--fix]` on the `ptlint` hook, as ruff users write it, run by the real pre-commit
    against this repository's own .pre-commit-hooks.yaml: the fixes are written, the commit is
    refused while findings remain, and it passes once they are gone."""
    source, sha = _working_tree_as_repository(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    code, before, after = _safe_fix_example(source)
    (project / "fixme.py").write_text(before)
    (project / "train.py").write_text(BAD)
    (project / ".pre-commit-config.yaml").write_text(textwrap.dedent(f"""\
        repos:
          - repo: {source}
            rev: {sha}
            hooks:
              - id: ptlint
                args: [--fix]
    """))
    _git("init", "-q", cwd=project)
    _git("add", ".", cwd=project)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never")
    for key in ("PTLINT_CACHE_DIR", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(key, None)

    def pre_commit() -> subprocess.CompletedProcess:
        return subprocess.run([*PRE_COMMIT, "run", "--all-files"], cwd=project, env=env, capture_output=True,
                              text=True, timeout=1200)

    first = pre_commit()
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "- hook id: ptlint\n" in output and "- files were modified by this hook" in output, output
    assert (project / "fixme.py").read_text() == after, f"--fix did not apply the {code} fix"
    line = BAD.splitlines().index("        total += model(x).mean().item()") + 1
    assert re.search(rf"^train\.py:{line}:\d+: PTL101 ", output, re.M), output
    assert "(1 fixed, 1 remaining)" in output, output
    (project / "train.py").write_text("import torch\n")
    _git("add", ".", cwd=project)
    second = pre_commit()
    assert second.returncode == 0, second.stdout + second.stderr
