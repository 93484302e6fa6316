"""CI output (SARIF for code scanning, GitHub workflow commands) and the flake8 plugin, run as
users' tools run them: the real command in a child process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SYNC_INLINE_ITEM, run_ptlint

from ptlint.engine.finding import Finding
from ptlint.engine.registry import BUILTIN_CODES, DYNAMIC_CODES, all_rules
from ptlint.report.sarif import format_github

BAD = SYNC_INLINE_ITEM
LINE = 7
COLUMN = BAD.splitlines()[LINE - 1].index("model(x)") + 1
END_COLUMN = BAD.splitlines()[LINE - 1].index(".item()") + len(".item()") + 1


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git work tree with the finding in a subfolder, and a syntax error."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "train.py").write_text(BAD)
    (tmp_path / "src" / "broken.py").write_text("def f(:\n")
    return tmp_path


def test_sarif_has_what_code_scanning_requires(repo: Path):
    # run from a subfolder: uris are still relative to the repository root
    result = run_ptlint("check", "--no-cache", "--output-format", "sarif", ".", cwd=repo / "src")
    assert result.returncode == 1, result.stderr
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    assert sarif["$schema"].endswith("sarif-2.1.0.json")
    [run] = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ptlint" and driver["version"] and driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    ids = [rule["id"] for rule in rules]
    assert set(ids) == set(all_rules()) | set(BUILTIN_CODES) | set(DYNAMIC_CODES)
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"], rule["id"]
        assert rule["help"]["text"] and rule["help"]["markdown"], rule["id"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        assert rule["name"]
    ptl101 = rules[ids.index("PTL101")]
    assert ptl101["name"] == "sync-in-loop"
    assert "## Why is this bad?" in ptl101["help"]["markdown"]

    by_rule = {result["ruleId"]: result for result in run["results"]}
    assert set(by_rule) == {"PTL001", "PTL101"}
    finding = by_rule["PTL101"]
    assert ids[finding["ruleIndex"]] == "PTL101"
    assert finding["level"] == "warning"
    assert "loop" in finding["message"]["text"]
    location = finding["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/pkg/train.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": LINE, "startColumn": COLUMN, "endLine": LINE, "endColumn": END_COLUMN}
    assert by_rule["PTL001"]["level"] == "error"
    assert by_rule["PTL001"]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/broken.py"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"


def test_sarif_with_no_findings_is_still_a_valid_log(tmp_path: Path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(3)\n")
    result = run_ptlint("check", "--no-cache", "--output-format", "sarif", "ok.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sarif = json.loads(result.stdout)
    assert sarif["runs"][0]["results"] == [] and sarif["runs"][0]["tool"]["driver"]["rules"]


def test_github_annotations(repo: Path):
    result = run_ptlint("check", "--no-cache", "--output-format", "github", ".", cwd=repo / "src")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert (f"::warning file=src/pkg/train.py,line={LINE},col={COLUMN},endLine={LINE},"
            f"endColumn={END_COLUMN},title=PTL101 sync-in-loop::") in "\n".join(lines)
    [error] = [line for line in lines if line.startswith("::error ")]
    assert error.startswith("::error file=src/broken.py,line=1,") and "title=PTL001 syntax-error::" in error
    assert "Found" not in result.stdout  # no human summary mixed into the commands


def test_github_escaping(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finding = Finding("PTL101", "sync-in-loop", "100% slower:\nsee a,b\r", "dir,1/a:b.py",
                      3, 5, 4, 2, severity="error")
    [line] = format_github([finding]).splitlines()
    assert line == ("::error file=dir%2C1/a%3Ab.py,line=3,col=5,endLine=4,title=PTL101 sync-in-loop"
                    "::100%25 slower:%0Asee a,b%0D")


def test_flake8_runs_the_static_rules(tmp_path: Path):
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "quiet.py").write_text(BAD.replace(".item()", ".item()  # noqa: PTL101"))
    result = subprocess.run([sys.executable, "-m", "flake8", "--select", "PTL", "train.py", "quiet.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == [f"train.py:{LINE}:{COLUMN}: PTL101 "
                                          "`.item()` in a loop waits for the GPU every iteration "
                                          "(device-to-host sync)"]


def test_flake8_honours_defaults_and_config(tmp_path: Path):
    off = sorted(code for code, cls in all_rules().items() if not cls.default and cls.bad_examples)
    assert off, "no off-by-default rule is registered: this test would prove nothing"
    code = off[0]
    example = next(e for e in all_rules()[code].bad_examples if f"expect: {code}" in e).lstrip("\n")
    expected = [number for number, line in enumerate(example.splitlines(), 1) if f"expect: {code}" in line]
    (tmp_path / "off.py").write_text(example)
    flake8 = [sys.executable, "-m", "flake8"]

    def reported(*args: str) -> list[int]:
        """Lines flake8 reports `code` on."""
        result = subprocess.run([*flake8, *args, "off.py"], cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode == (1 if result.stdout else 0) and not result.stderr, result.stderr
        return [int(line.split(":")[1]) for line in result.stdout.splitlines() if line.split()[1] == code]

    assert reported("--select", "PTL") == []  # off by default: not run through flake8 either
    assert reported("--select", code) == expected
    (tmp_path / "pyproject.toml").write_text(f'[tool.ptlint]\nextend-select = ["{code}"]\n')
    assert reported("--select", "PTL") == expected
