"""Every file uses the nearest [tool.ptlint] above it (DESIGN.md): the order of the paths never
changes a result, in the CLI, pre-commit's way of passing files, the flake8 plugin and the
language server (tests/test_lsp.py); `--config FILE` applies one file to everything."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import KEPT_LOSS, run_ptlint

from ptlint.run.config import ConfigError, Resolver

# PTL101 on line 6 and PTL102 on line 8
TWO_RULES = textwrap.dedent("""\
    import torch

    def f(xs):
        total = 0.0
        for x in xs:
            total += net(x).sum().item()
        for y in xs:
            torch.cuda.synchronize()
        return total
""")


@pytest.fixture
def two_projects(tmp_path: Path) -> Path:
    """a/ ignores PTL101, b/ ignores PTL102 and excludes gen/; c/ has no config of its own (the
    root's, which selects PTL1 only); a/sub/ has a pyproject.toml without [tool.ptlint] (skipped)."""
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nselect = ["PTL1"]\n')
    for folder, config in (("a", 'ignore = ["PTL101"]'), ("b", 'ignore = ["PTL102"]\nexclude = ["gen"]')):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text(f"[tool.ptlint]\n{config}\n")
    for name in ("a/m.py", "a/sub/m.py", "b/m.py", "b/gen/m.py", "c/m.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(TWO_RULES)
    (tmp_path / "a" / "sub" / "pyproject.toml").write_text('[project]\nname = "sub"\n')
    return tmp_path


EXPECTED = {("a/m.py", "PTL102"), ("a/sub/m.py", "PTL102"), ("b/m.py", "PTL101"), ("c/m.py", "PTL101"),
            ("c/m.py", "PTL102")}


def spots(stdout: str) -> set[tuple[str, str]]:
    return {(f["path"], f["code"]) for f in json.loads(stdout)}


def check(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_ptlint("check", "--no-cache", "--output-format", "json", *args, cwd=cwd)


def test_each_folder_uses_its_nearest_config_in_any_order(two_projects: Path):
    for order in itertools.permutations(["a", "b", "c"]):
        result = check(two_projects, *order)
        assert result.returncode == 1, result.stderr
        assert spots(result.stdout) == EXPECTED, order


def test_files_named_one_by_one_in_any_order(two_projects: Path):
    """pre-commit passes files, in any order and in batches."""
    files = ["b/m.py", "a/sub/m.py", "c/m.py", "a/m.py"]
    results = {frozenset(spots(check(two_projects, *order).stdout)) for order in (files, files[::-1])}
    assert results == {frozenset(EXPECTED)}
    assert spots(check(two_projects, "b/m.py").stdout) == {("b/m.py", "PTL101")}
    assert spots(check(two_projects, "c/m.py", "a/m.py").stdout) == {("a/m.py", "PTL102"), ("c/m.py", "PTL101"),
                                                                   ("c/m.py", "PTL102")}


def test_from_a_subfolder_and_with_the_cache(two_projects: Path, tmp_path_factory):
    """The working folder does not matter either, nor the cache (keyed by each file's settings)."""
    cache = str(tmp_path_factory.mktemp("cache"))
    inside = run_ptlint("check", "--cache-dir", cache, "--output-format", "json", "m.py", "../b/m.py",
                        cwd=two_projects / "a")
    assert spots(inside.stdout) == {("m.py", "PTL102"), ("../b/m.py", "PTL101")}
    for order in (("a", "b"), ("b", "a")):
        warm = run_ptlint("check", "--cache-dir", cache, "--output-format", "json", *order, cwd=two_projects)
        assert spots(warm.stdout) == {s for s in EXPECTED if s[0][0] in "ab"}


def test_one_config_for_everything(two_projects: Path):
    (two_projects / "only.toml").write_text('[tool.ptlint]\nselect = ["PTL102"]\n')
    result = check(two_projects, "--config", "only.toml", "c", "a", "b")
    assert spots(result.stdout) == {(p, "PTL102") for p in ("a/m.py", "a/sub/m.py", "b/m.py", "b/gen/m.py", "c/m.py")}
    # its `exclude` is relative to its own folder: b/gen is not excluded by only.toml


def test_command_line_wins_over_every_config(two_projects: Path):
    result = check(two_projects, "--select", "PTL102", "b", "a", "c")
    assert spots(result.stdout) == {("a/m.py", "PTL102"), ("a/sub/m.py", "PTL102"), ("b/m.py", "PTL102"),
                                    ("c/m.py", "PTL102")}


def test_a_broken_config_costs_only_its_own_files(two_projects: Path):
    (two_projects / "b" / "pyproject.toml").write_text('[tool.ptlint]\nselect = "PTL1"\n')
    for order in (("a", "b"), ("b", "a")):
        result = check(two_projects, *order)
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "b/pyproject.toml" in lines[0] and "list of strings" in lines[0], lines
        assert spots(result.stdout) == {("a/m.py", "PTL102"), ("a/sub/m.py", "PTL102")}


def test_resolver_memoises_but_answers_by_path(two_projects: Path):
    resolver = Resolver()
    a = resolver.settings_for(str(two_projects / "a" / "sub" / "m.py"))
    b = resolver.settings_for(str(two_projects / "b" / "m.py"))
    assert a.config_path == str(two_projects / "a" / "pyproject.toml")
    assert b.config_path == str(two_projects / "b" / "pyproject.toml")
    assert resolver.settings_for(str(two_projects / "a" / "m.py")) is a
    assert "PTL101" not in a.enabled and "PTL102" not in b.enabled
    with pytest.raises(ConfigError, match="PTL999"):
        Resolver(select="PTL999")


def test_flake8_uses_each_files_nearest_config(two_projects: Path):
    for order in (["a/m.py", "b/m.py"], ["b/m.py", "a/m.py"]):
        result = subprocess.run([sys.executable, "-m", "flake8", "--select", "PTL", *order], cwd=two_projects,
                                capture_output=True, text=True, timeout=120)
        found = {(line.split(":")[0], line.split()[1]) for line in result.stdout.splitlines()}
        assert found == {("a/m.py", "PTL102"), ("b/m.py", "PTL101")}, result.stdout + result.stderr


def test_unsafe_fixes_of_each_config_mark_its_own_findings(tmp_path: Path):
    kept = KEPT_LOSS
    for folder, unsafe in (("a", "true"), ("b", "false")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text(f"[tool.ptlint]\nunsafe-fixes = {unsafe}\n")
        (tmp_path / folder / "m.py").write_text(kept)
    for order in (("a", "b"), ("b", "a")):
        result = run_ptlint("check", "--no-cache", "--output-format", "concise", *order, cwd=tmp_path)
        marks = {line.split(":")[0]: line.split()[2] for line in result.stdout.splitlines() if " PTL103 " in line}
        assert marks == {"a/m.py": "[*]", "b/m.py": "[-]"}, result.stdout
    applied = run_ptlint("fix", "--apply", "--no-cache", "b", "a", cwd=tmp_path)
    assert "losses.append(loss.detach())" in (tmp_path / "a" / "m.py").read_text(), applied.stderr
    assert (tmp_path / "b" / "m.py").read_text() == kept
