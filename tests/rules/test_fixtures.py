"""The sample projects under fixtures/: ptlint reports exactly their `# expect:` markers, and the
before/after cases under fixtures/fixes/ are fixed byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import FIXTURES, expected_markers, run_json, run_ptlint

from ptlint.engine.registry import all_rules

PROJECTS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and p.name not in ("fixes", "dynamic", "notebooks"))
FIX_CASES = sorted(p for p in (FIXTURES / "fixes").iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def project_findings():
    cache = {}

    def get(project: Path):
        if project not in cache:
            _, findings = run_json("check", "--select", "PTL", ".", cwd=project)
            cache[project] = {(f["path"].removeprefix("./"), f["line"], f["code"]) for f in findings}
        return cache[project]

    return get


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
@pytest.mark.parametrize("code", sorted(all_rules()))
def test_project_findings_match_markers(project, code, project_findings):
    found = {item for item in project_findings(project) if item[2] == code}
    expected = {item for item in expected_markers(project) if item[2] == code}
    assert found == expected


@pytest.mark.parametrize("case", FIX_CASES, ids=lambda p: p.name)
def test_fix_case(case, tmp_path):
    options_file = case / "options.txt"
    options = options_file.read_text().split() if options_file.exists() else []
    target = tmp_path / "case.py"
    shutil.copyfile(case / "before.py", target)
    result = run_ptlint("fix", "--apply", "--no-cache", *options, str(target), cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert target.read_bytes() == (case / "after.py").read_bytes()
    again = run_ptlint("fix", "--no-cache", *options, str(target), cwd=tmp_path)
    assert again.returncode == 0, again.stdout  # nothing left to fix: fixes are stable
