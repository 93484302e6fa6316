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
from ptlint.report.formats import Style, format_concise, format_full
from ptlint.report.sarif import format_github, format_sarif

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


# -- the evidence chain (Finding.via) in every format ------------------------------------------------

METRICS = "import torch\n\n\ndef reduce_metrics(loss):\n    return loss.item()\n"
MESSAGE = "`.item()` in a loop waits for the GPU every iteration (device-to-host sync)"
HELP = "Keep the value on the device and read it every N steps."


@pytest.fixture
def chain_repo(tmp_path: Path, monkeypatch) -> tuple[Path, str]:
    """A git work tree, the current folder its `src/`, and an absolute path outside it."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "metrics.py").write_text(METRICS)
    monkeypatch.chdir(repo / "src")
    return repo, str(tmp_path / "shared" / "engine.py")


def chained(outside: str, **changes) -> Finding:
    """A finding in pkg/metrics.py placed by a chain: two links in train.py (relative), one in a
    file outside the current folder (absolute)."""
    via = (("train.py", 88, "for batch in loader"), ("train.py", 90, "calls train_step"),
           (outside, 45, "calls reduce_metrics"))
    finding = Finding("PTL101", "sync-in-loop", MESSAGE, "pkg/metrics.py", 5, 12, 5, 23, context="per-step",
                      via=via, help=HELP)
    return Finding(**{**vars(finding), **changes})


def test_full_shows_the_chain_under_the_finding(chain_repo):
    _, outside = chain_repo
    source = ("pkg/metrics.py:5:12: PTL101 " + MESSAGE + "\n"
              "  |\n"
              "5 |     return loss.item()\n"
              "  |            ^^^^^^^^^^^ PTL101\n")
    chain = (f"  = runs per step: train.py:88 for batch in loader -> train.py:90 calls train_step -> "
             f"{outside}:45 calls reduce_metrics\n")
    assert format_full([chained(outside)]) == source + chain + f"  = help: {HELP}\n\n"
    # without a chain: exactly what it was before chains existed
    assert format_full([chained(outside, via=())]) == source + f"  = help: {HELP}\n\n"
    # coloured like the `= help:` line
    coloured = format_full([chained(outside)], style=Style(True))
    assert ("  \x1b[1;34m=\x1b[0m \x1b[1;36mruns per step\x1b[0m: train.py:88 for batch in loader -> train.py:90 "
            f"calls train_step -> {outside}:45 calls reduce_metrics\n") in coloured
    # the concise format stays one line a finding
    line = f"pkg/metrics.py:5:12: PTL101 {MESSAGE}\n"
    assert format_concise([chained(outside)]) == format_concise([chained(outside, via=())]) == line


@pytest.mark.parametrize("context, label", [
    ("per-step", "runs per step"),
    ("per-outer-iteration", "runs once per outer iteration"),
    ("once", "runs once"),
    ("called", "runs as often as its callers"),
    (None, "via"),
])
def test_the_chain_says_where_the_code_runs(tmp_path: Path, monkeypatch, context, label):
    monkeypatch.chdir(tmp_path)  # no source to show: the notes follow the headline
    finding = Finding("PTL201", "move-after-create", "created then moved", "gone.py", 3, 1, 3, 9, context=context,
                      via=(("gone.py", 1, "for epoch in range(n)"),), help=HELP)
    assert format_full([finding]) == (f"gone.py:3:1: PTL201 created then moved\n"
                                      f"= {label}: gone.py:1 for epoch in range(n)\n= help: {HELP}\n\n")


def test_sarif_related_locations_and_messages(chain_repo):
    repo, outside = chain_repo
    sarif = json.loads(format_sarif([chained(outside), chained(outside, via=(), line=4, end_line=4)]))
    with_chain, without = sarif["runs"][0]["results"]
    own = with_chain["locations"][0]["physicalLocation"]["artifactLocation"]
    assert own == {"uri": "src/pkg/metrics.py", "uriBaseId": "%SRCROOT%"}
    assert with_chain["relatedLocations"] == [
        {"id": 0, "physicalLocation": {"artifactLocation": {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"},
                                       "region": {"startLine": 88}},
         "message": {"text": "for batch in loader"}},
        {"id": 1, "physicalLocation": {"artifactLocation": {"uri": "src/train.py", "uriBaseId": "%SRCROOT%"},
                                       "region": {"startLine": 90}},
         "message": {"text": "calls train_step"}},
        {"id": 2, "physicalLocation": {"artifactLocation": {"uri": Path(outside).as_uri()},
                                       "region": {"startLine": 45}},
         "message": {"text": "calls reduce_metrics"}},
    ]
    # the chain in the message, each location an embedded link to its related location
    assert with_chain["message"] == {
        "text": f"{MESSAGE}\n\nruns per step: [src/train.py:88](0) for batch in loader -> "
                f"[src/train.py:90](1) calls train_step -> [{outside}:45](2) calls reduce_metrics",
        "markdown": f"{MESSAGE}\n\n**runs per step:** [src/train.py:88](0) for batch in loader -> "
                    f"[src/train.py:90](1) calls train\\_step -> [{outside}:45](2) calls reduce\\_metrics"
                    f"\n\n**help:** {HELP}"}
    # without a chain: no related locations, the message as before
    assert "relatedLocations" not in without
    assert without["message"] == {"text": MESSAGE, "markdown": f"{MESSAGE}\n\n**help:** {HELP}"}
    assert with_chain.keys() - {"relatedLocations"} == without.keys()


def test_github_annotation_ends_with_the_chain(chain_repo):
    _, outside = chain_repo
    finding = chained(outside, via=(("train.py", 88, "for batch in loader"), (outside, 45, "calls 100% of steps")))
    [line] = format_github([finding]).splitlines()
    assert line == ("::warning file=src/pkg/metrics.py,line=5,col=12,endLine=5,endColumn=23,title=PTL101 sync-in-loop"
                    f"::{MESSAGE}; runs per step: src/train.py:88 for batch in loader -> {outside}:45 calls 100%25 "
                    "of steps")
    [plain] = format_github([chained(outside, via=())]).splitlines()
    assert plain == ("::warning file=src/pkg/metrics.py,line=5,col=12,endLine=5,endColumn=23,"
                     f"title=PTL101 sync-in-loop::{MESSAGE}")


def test_a_link_in_the_findings_notebook_is_shown_in_its_cell(tmp_path: Path, monkeypatch):
    """A link into the notebook has a cell (ptlint.run.notebook.locate): `nb.ipynb:cell 4:1` in
    the text formats, the .ipynb text itself in SARIF, as the finding's own location."""
    import nbformat

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Training"), nbformat.v4.new_code_cell("import torch"),
                      nbformat.v4.new_markdown_cell("The loop:"),
                      nbformat.v4.new_code_cell("for x in loader:\n    y = x.item()")]
    text = nbformat.writes(notebook)
    (tmp_path / "nb.ipynb").write_text(text)
    finding = Finding("PTL101", "sync-in-loop", MESSAGE, "nb.ipynb", 2, 9, 2, 17, context="per-step",
                      via=(("nb.ipynb", 1, "for x in loader"), ("lib/helpers.py", 3, "calls step")),
                      extra={"cell": 4, "via_cells": [4, None]}, help=HELP)
    assert format_full([finding]) == (
        f"nb.ipynb:cell 4:2:9: PTL101 {MESSAGE}\n  |\n2 |     y = x.item()\n  |         ^^^^^^^^ PTL101\n"
        f"  = runs per step: nb.ipynb:cell 4:1 for x in loader -> lib/helpers.py:3 calls step\n  = help: {HELP}\n\n")
    raw = text.splitlines()
    raw_line = next(n for n, content in enumerate(raw, 1) if '"for x in loader:\\n"' in content)
    raw_column = raw[raw_line - 1].index("for x") + 1
    [result] = json.loads(format_sarif([finding]))["runs"][0]["results"]
    assert result["relatedLocations"] == [
        {"id": 0, "physicalLocation": {"artifactLocation": {"uri": "nb.ipynb", "uriBaseId": "%SRCROOT%"},
                                       "region": {"startLine": raw_line, "startColumn": raw_column}},
         "message": {"text": "for x in loader"}, "properties": {"cell": 4, "cellLine": 1}},
        {"id": 1, "physicalLocation": {"artifactLocation": {"uri": "lib/helpers.py", "uriBaseId": "%SRCROOT%"},
                                       "region": {"startLine": 3}},
         "message": {"text": "calls step"}},
    ]
    assert result["message"]["text"].endswith(
        "runs per step: [nb.ipynb:cell 4:1](0) for x in loader -> [lib/helpers.py:3](1) calls step")
    [line] = format_github([finding]).splitlines()
    assert line.endswith(f"::cell 4:2:9: {MESSAGE}; runs per step: nb.ipynb:cell 4:1 for x in loader -> "
                         "lib/helpers.py:3 calls step")
