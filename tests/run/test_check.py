"""Checking the files, in process (so that mutation testing sees it): one-line errors, worker
processes that give the same answers in the same order, and the progress count."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import SYNC_LOSS_ITEM

from ptlint.engine import traversal as engine
from ptlint.run import check as runner
from ptlint.run.check import check_file, check_files, default_jobs
from ptlint.run.discover import Job
from ptlint.run.config import Settings


def write(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_check_file_findings_and_one_line_errors(tmp_path, monkeypatch):
    settings = Settings(enabled=("PTL101",))
    good = write(tmp_path / "train.py", SYNC_LOSS_ITEM)
    result = check_file(Job(str(good), settings))
    assert result.error is None and [(f.code, f.line) for f in result.findings] == [("PTL101", 8)]
    assert check_file(Job(str(good), Settings(enabled=()))).findings == []
    from_stdin = check_file(Job("piped.py", settings, data=SYNC_LOSS_ITEM.encode()))
    assert [f.path for f in from_stdin.findings] == ["piped.py"]
    assert check_file(Job(str(tmp_path / "nope.py"), settings)).error == f"{tmp_path / 'nope.py'}: no such file or directory"
    binary = tmp_path / "bin.py"
    binary.write_bytes(b"x = 1\x00")
    assert check_file(Job(str(binary), settings)).error == f"{binary}: binary content (NUL bytes), not Python source"
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [],
         "source": SYNC_LOSS_ITEM}]}))
    [finding] = check_file(Job(str(notebook), settings)).findings
    assert (finding.code, finding.extra.get("cell"), finding.line) == ("PTL101", 1, 8)
    assert check_file(Job(str(tmp_path / "bad.ipynb"), settings, data=b"{")).error.startswith(
        f"{tmp_path / 'bad.ipynb'}: ")
    # test code: performance rules say nothing there
    tests_file = write(tmp_path / "tests" / "test_train.py", SYNC_LOSS_ITEM)
    assert check_file(Job(str(tests_file), Settings(enabled=("PTL101",), root=str(tmp_path)))).findings == []

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(engine, "lint_and_summarize", broken)
    assert check_file(Job(str(good), settings)).error == f"{good}: internal error while checking: KeyError: 'boom'"

    def deep(*args, **kwargs):
        raise RecursionError

    monkeypatch.setattr(engine, "lint_and_summarize", deep)
    assert check_file(Job(str(good), settings)).error == f"{good}: code nested too deeply to analyse, skipped"


@pytest.mark.parametrize("workers", [1, 2])
def test_check_files_keeps_the_order_and_counts_progress(tmp_path, workers):
    settings = Settings(enabled=("PTL101",))
    jobs = []
    for index in range(10):
        text = SYNC_LOSS_ITEM if index % 3 == 0 else "x = 1\n"
        jobs.append(Job(str(write(tmp_path / f"f{index:02d}.py", text)), settings))
    jobs.append(Job(str(tmp_path / "missing.py"), settings))
    seen = []
    results = check_files(jobs, workers=workers, progress=lambda done, total: seen.append((done, total)))
    assert [r.path for r in results] == [j.path for j in jobs]
    assert [bool(r.findings) for r in results] == [i % 3 == 0 for i in range(10)] + [False]
    assert results[-1].error is not None
    assert seen == [(n, 11) for n in range(1, 12)]


def test_default_jobs_is_the_cores_this_process_may_use():
    assert default_jobs() == len(os.sched_getaffinity(0)) >= 1


def test_project_dependencies_only_when_a_rule_reads_imports(tmp_path):
    from ptlint.engine.source import SourceFile

    write(tmp_path / "utils.py", "X = 1\n")
    text = "import torch\nimport utils\n\nfor x in loader:\n    model(x).sum().backward()\n"
    source = SourceFile(str(tmp_path / "train.py"), text)
    settings = Settings(enabled=(), root=str(tmp_path))
    assert runner._dependencies(source, ("PTL101", "PTL201"), settings) == ""
    digest = runner._dependencies(source, ("PTL101", "PTL603"), settings)
    assert digest and digest == runner._dependencies(source, ("PTL603",), settings)
    write(tmp_path / "utils.py", "X = 2\n")
    assert runner._dependencies(source, ("PTL603",), settings) != digest


TF32_SCRIPT = """import torch
import settings_module

def train(model, loader, optimizer):
    model = model.cuda()
    for x in loader:
        loss = model(x.cuda()).mean()
        loss.backward()
        optimizer.step()
"""


def test_cached_answers_depend_on_test_code_notebook_and_imported_modules(tmp_path):
    """The cache keys a file by more than its bytes: whether it is test code, whether it is read as
    a notebook, and (for rules that read imports) the project modules it imports."""
    from ptlint.run.cache import Caches

    caches = Caches(str(tmp_path / "cache"))
    root = str(tmp_path)
    # the same bytes, as a training script and as test code
    script = write(tmp_path / "train.py", SYNC_LOSS_ITEM)
    in_tests = write(tmp_path / "tests" / "train.py", SYNC_LOSS_ITEM)
    settings = Settings(enabled=("PTL101",), root=root)
    first = check_file(Job(str(script), settings), caches)
    assert [(f.code, f.path) for f in first.findings] == [("PTL101", str(script))]
    assert check_file(Job(str(in_tests), settings), caches).findings == []
    again = check_file(Job(str(script), settings), caches)  # from the cache, with its own path
    assert again.path == str(script) and [f.path for f in again.findings] == [str(script)]
    # the same bytes, as Python (a dict expression: nothing to report) and as a notebook
    cells = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [],
         "source": SYNC_LOSS_ITEM}]}
    data = json.dumps(cells).replace("null", "None").encode()  # valid JSON and valid Python
    assert check_file(Job(str(tmp_path / "cells.py"), settings, data=data), caches).findings == []
    notebook = check_file(Job(str(tmp_path / "cells.ipynb"), settings, data=data.replace(b"None", b"null")), caches)
    assert [f.code for f in notebook.findings] == ["PTL101"]
    # a notebook in the tests folder is test code too
    assert check_file(Job(str(tmp_path / "tests" / "cells.ipynb"), settings,
                          data=data.replace(b"None", b"null")), caches).findings == []
    # a rule that reads the project's modules: the answer follows the imported module
    write(tmp_path / "settings_module.py", "X = 1\n")
    hints = Settings(enabled=("PTL603",), root=root)
    tf32 = write(tmp_path / "tf32.py", TF32_SCRIPT)
    assert [f.code for f in check_file(Job(str(tf32), hints), caches).findings] == ["PTL603"]
    write(tmp_path / "settings_module.py", "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    assert check_file(Job(str(tf32), hints), caches).findings == []


def test_error_results_carry_the_path(tmp_path, monkeypatch):
    settings = Settings(enabled=("PTL101",))
    good = write(tmp_path / "train.py", SYNC_LOSS_ITEM)
    missing = str(tmp_path / "nope.py")
    assert check_file(Job(missing, settings)).path == missing

    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(engine, "lint_and_summarize", broken)
    assert check_file(Job(str(good), settings)).path == str(good)

    def deep(*args, **kwargs):
        raise RecursionError

    monkeypatch.setattr(engine, "lint_and_summarize", deep)
    assert check_file(Job(str(good), settings)).path == str(good)


