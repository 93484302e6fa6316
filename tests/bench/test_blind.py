"""bench/blind.py: a measurement names its sources, verdicts are kept as given (once per finding),
tuning-corpus verdicts are refused as claims, and recall counts listed lines a finding starts on.
One end-to-end export runs the real ptlint on a tiny repository built in tmp_path."""

from __future__ import annotations

import csv
import importlib.util
import json
import sys

import pytest
from helpers import REPO

_spec = importlib.util.spec_from_file_location("blind", REPO / "bench" / "blind.py")
blind = importlib.util.module_from_spec(_spec)
sys.modules["blind"] = blind
_spec.loader.exec_module(blind)

TRAIN = """import torch


def train(model, loader, optimizer):
    model.cuda()
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"loss {loss.item():.3f}")
"""


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    sources = tmp_path / "sources.jsonl"
    sources.write_text(json.dumps({"name": "toy", "source": "github:x/toy", "commit": "abc", "set": "heldout-x"}) + "\n"
                       + json.dumps({"name": "lib", "source": "pypi:lib", "version": "1.0", "set": "tuning"}) + "\n")
    monkeypatch.setattr(blind, "SOURCES", sources)
    monkeypatch.setattr(blind, "VERDICTS_FILE", tmp_path / "verdicts.jsonl")
    return tmp_path


def write_csv(path, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "repo", "path", "line", "code", "verdict", "reason"])
        writer.writeheader()
        writer.writerows(rows)


def row(line, verdict, repo="toy", code="PTL101"):
    return {"id": f"{repo}-{line}", "repo": repo, "path": "train.py", "line": line, "code": code,
            "verdict": verdict, "reason": "because"}


def test_export_then_record_then_report(workspace, capsys):
    repo = workspace / "toy"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    out = workspace / "out"
    assert blind.main(["export", f"toy={repo}", "--out", str(out)]) == 0
    findings = json.loads((out / "toy.findings.json").read_text())
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("train.py", 11, "PTL101")]
    page = (out / "toy.md").read_text()
    assert "## toy-1: `train.py:11` PTL101" in page and '    11>>        print(f"loss {loss.item():.3f}")' in page
    assert "runs: " in page
    with open(out / "toy.csv") as handle:
        assert list(csv.reader(handle))[1] == ["toy-1", "toy", "train.py", "11", "PTL101", "", ""]

    verdicts = workspace / "v.csv"
    write_csv(verdicts, [row(11, "TRUE"), row(12, "false"), row(13, "debatable"), row(11, "false")])
    assert blind.main(["record", str(verdicts), "--judge", "j1", "--measurement", "m1"]) == 0
    kept = [json.loads(line) for line in (workspace / "verdicts.jsonl").read_text().splitlines()]
    # two rows of one line and rule: two findings there (a duplicate counts against precision)
    assert [(k["line"], k["verdict"]) for k in kept] == [(11, "true"), (12, "false"), (13, "debatable"), (11, "false")]
    assert kept[0]["commit"] == "abc" and kept[0]["set"] == "heldout-x" and kept[0]["judge"] == "j1"
    assert kept[0]["measurement"] == "m1"
    assert blind.main(["record", str(verdicts), "--measurement", "m1"]) == 0  # the same again: nothing new
    assert len((workspace / "verdicts.jsonl").read_text().splitlines()) == 4
    # another measurement of the same lines keeps its own verdicts, and reports apart
    write_csv(verdicts, [row(11, "false")])
    assert blind.main(["record", str(verdicts), "--measurement", "m2"]) == 0
    assert len((workspace / "verdicts.jsonl").read_text().splitlines()) == 5
    capsys.readouterr()
    assert blind.main(["report", "--measurement", "m2"]) == 0
    assert "all         0 true    1 false    0 debatable  0%" in capsys.readouterr().out

    recall = workspace / "recall.csv"
    recall.write_text("repo,path,line,category,severity,why\ntoy,train.py,11,sync,major,x\n"
                      "toy,train.py,7,h2d,major,y\ntoy,train.py,10,sync,minor,z\n")
    capsys.readouterr()
    assert blind.main(["report", "--measurement", "m1", "--recall", str(recall), "--findings", str(out)]) == 0
    text = capsys.readouterr().out
    assert "PTL101      1 true    2 false    1 debatable  33%" in text
    assert "all         1 true    2 false    1 debatable  33%" in text
    assert "major): 1 of 2 listed lines reported (50%)" in text
    assert "minor): 0 of 1 listed lines reported (0%)" in text


def test_unknown_source_and_bad_verdicts_are_refused(workspace, capsys):
    verdicts = workspace / "v.csv"
    write_csv(verdicts, [row(11, "true", repo="stranger")])
    assert blind.main(["record", str(verdicts), "--measurement", "m"]) == 2
    write_csv(verdicts, [row(11, "maybe")])
    assert blind.main(["record", str(verdicts), "--measurement", "m"]) == 2
    assert "verdict must be one of" in capsys.readouterr().err
    assert not (workspace / "verdicts.jsonl").exists() or (workspace / "verdicts.jsonl").read_text() == ""


def test_tuning_sources_are_never_a_claim(workspace, capsys):
    verdicts = workspace / "v.csv"
    write_csv(verdicts, [row(11, "true", repo="lib")])
    assert blind.main(["record", str(verdicts), "--measurement", "m"]) == 0
    assert blind.main(["report"]) == 2
    assert "not claims" in capsys.readouterr().err
    assert blind.main(["report", "--set", "heldout-x"]) == 0


def test_the_sources_file_of_the_repository_is_well_formed():
    sources = blind.load_sources()
    assert all(row["set"] for row in sources.values())
    assert all(("commit" in row) != ("version" in row) for row in sources.values())
    assert {row["name"] for row in sources.values() if row["set"] == "tuning"} >= {"timm", "transformers", "trl"}


def test_the_chain_is_shown_outermost_first_with_each_line_of_code(tmp_path):
    (tmp_path / "train.py").write_text("import engine\nfor batch in loader:\n    engine.step(batch)\n")
    finding = {"context": {"where": "per-step", "via": [{"path": "train.py", "line": 2, "why": "a loop over data"},
                                                        {"path": "train.py", "line": 3, "why": "calls step"}]}}
    assert blind.chain_text(finding, tmp_path).splitlines() == [
        "runs: per-step, because:", "- `train.py:2` a loop over data: `for batch in loader:`",
        "- `train.py:3` calls step: `engine.step(batch)`"]
    assert blind.chain_text({"context": {"where": "once", "via": []}}) == "runs: once"
    assert blind.chain_text({"context": "per-step"}) == "runs: per-step"
    assert blind.chain_text({}) == "runs: (no evidence given)"


def test_a_listed_problem_spanning_lines_counts_a_finding_on_any_of_them():
    """The reviewer cites the scores line of hand-written attention and names its span in `why`;
    a finding on the product's line reports it. A range not holding the listed line, or one too
    long to be one problem, does not widen it."""
    row = {"line": "62", "why": "`softmax(q @ k^T * scale) @ v` (lines 62-66) materialises B x T x T"}
    assert blind.listed_lines(row) == [62, 63, 64, 65, 66]
    assert blind.listed_lines({"line": "62", "why": "like lines 10-12 above"}) == [62]
    assert blind.listed_lines({"line": "62", "why": "lines 1-100 of the file"}) == [62]
    assert blind.listed_lines({"line": "7", "why": "no range"}) == [7]
    assert blind.listed_lines({"line": "30", "why": "built on line 28–30 and moved"}) == [28, 29, 30]


def test_a_finding_points_at_its_line_and_the_line_its_message_names_as_the_start():
    built = {"line": 43, "message": "`torch.arange(...)` is built on the CPU (line 42) and copied here: ..."}
    assert blind.finding_lines(built) == [43, 42]
    assert blind.finding_lines({"line": 7, "message": "`.item()` in a loop (see lines 3-4)"}) == [7]
    assert blind.finding_lines({"line": 7}) == [7]


def test_a_chain_link_in_a_notebook_shows_its_cell_and_line(tmp_path):
    notebook = {"cells": [{"cell_type": "markdown", "source": ["# title\n"]},
                          {"cell_type": "code", "source": ["import torch\n", "for x in loader:\n", "    y = x.item()\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "demo.ipynb").write_text(json.dumps(notebook))
    finding = {"path": "demo.ipynb", "via_cells": [2],
               "context": {"where": "per-step", "via": [{"path": "demo.ipynb", "line": 2, "why": "for x in loader"}]}}
    assert blind.chain_text(finding, tmp_path) == ("runs: per-step, because:\n"
                                                   "- `demo.ipynb:cell 2:2` for x in loader: `for x in loader:`")


def test_a_finding_in_a_notebook_shows_the_lines_of_its_cell(tmp_path):
    """The line of a notebook finding counts within its cell: the excerpt is the cell's code, not
    the lines of the notebook's JSON."""
    notebook = {"cells": [{"cell_type": "markdown", "source": ["# title\n"]},
                          {"cell_type": "code", "source": ["import torch\n", "for x in loader:\n", "    y = x.item()\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "demo.ipynb").write_text(json.dumps(notebook, indent=1))
    assert blind.excerpt(tmp_path, "demo.ipynb", 3, window=1, cell=2) == \
        "     2  for x in loader:\n     3>>    y = x.item()"
    assert blind.excerpt(tmp_path, "demo.ipynb", 3, window=0, cell=9) == ""
