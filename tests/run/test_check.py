"""Finding the files and checking them, in process (so that mutation testing sees it): what a
folder walk picks up and skips, what a named path gives, one-line errors, worker processes that
give the same answers in the same order, and the progress count."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import SYNC_LOSS_ITEM

from ptlint.engine import traversal as engine
from ptlint.run import check as runner
from ptlint.run.check import Job, check_file, check_files, default_jobs, discover
from ptlint.run.config import Resolver, Settings


def write(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def found(tmp_path: Path, *paths: str, resolver: Resolver | None = None):
    result = discover([str(tmp_path / p) if p else str(tmp_path) for p in paths], resolver or Resolver())
    names = [os.path.relpath(job.path, tmp_path).replace(os.sep, "/") for job in result.jobs]
    return names, result


def test_a_folder_walk_is_sorted_and_skips_what_it_should(tmp_path):
    for name in ("b.py", "a.py", "nb.ipynb", "notes.txt", "sub/c.py", "sub/deeper/d.py", ".venv/e.py", "build/f.py",
                 "__pycache__/g.py", "node_modules/h.py", ".ipynb_checkpoints/n.ipynb", "gen/i.py", "x/gen/j.py"):
        write(tmp_path / name)
    write(tmp_path / "pyproject.toml", '[tool.ptlint]\nexclude = ["gen"]\n')
    names, result = found(tmp_path, "")
    assert names == ["a.py", "b.py", "nb.ipynb", "sub/c.py", "sub/deeper/d.py"]
    assert result.warnings == [] and result.failures == []
    assert all(job.settings.exclude == ("gen",) for job in result.jobs)


def test_named_paths_missing_broken_excluded_and_repeated(tmp_path):
    write(tmp_path / "gen" / "a.py")
    write(tmp_path / "b.py")
    write(tmp_path / "pyproject.toml", '[tool.ptlint]\nexclude = ["gen"]\n')
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    names, result = found(tmp_path, "gen/a.py", "missing.py", "dangling.py", "b.py", "b.py")
    assert names == ["gen/a.py", "b.py"]  # named: checked although excluded; once though named twice
    assert result.failures == [f"{tmp_path / 'missing.py'}: no such file or directory",
                               f"{tmp_path / 'dangling.py'}: broken symbolic link"]
    forced, _ = found(tmp_path, "gen/a.py", "b.py", resolver=Resolver(force_exclude=True))
    assert forced == ["b.py"]


def test_links_loops_and_unreadable_folders_are_one_line_each(tmp_path, monkeypatch):
    write(tmp_path / "pkg" / "a.py")
    (tmp_path / "pkg" / "again").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "gone.py").symlink_to(tmp_path / "nowhere.py")
    (tmp_path / "alias.py").symlink_to(tmp_path / "pkg" / "a.py")
    names, result = found(tmp_path, "")
    assert names == ["alias.py"]  # pkg/a.py is the same file: once
    assert sorted(result.warnings) == sorted([f"{tmp_path / 'pkg' / 'again'}: symbolic link loop, skipped",
                                              f"{tmp_path / 'pkg' / 'gone.py'}: broken symbolic link"])
    real_scandir = os.scandir

    def refusing(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    write(tmp_path / "locked" / "z.py")
    monkeypatch.setattr(runner.os, "scandir", refusing)
    _, result = found(tmp_path, "")
    assert f"{tmp_path / 'locked'}: cannot list folder: Permission denied" in result.warnings


def test_a_bad_config_is_reported_once_and_costs_only_its_files(tmp_path):
    write(tmp_path / "good" / "a.py")
    write(tmp_path / "bad" / "b.py")
    write(tmp_path / "bad" / "c.py")
    write(tmp_path / "bad" / "pyproject.toml", "[tool.ptlint]\nselect = 3\n")
    names, result = found(tmp_path, "", "bad/b.py")
    assert names == ["good/a.py"]
    assert len(result.failures) == 1 and "select must be a list of strings" in result.failures[0]


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

    monkeypatch.setattr(engine, "lint_source", broken)
    assert check_file(Job(str(good), settings)).error == f"{good}: internal error while checking: KeyError: 'boom'"

    def deep(*args, **kwargs):
        raise RecursionError

    monkeypatch.setattr(engine, "lint_source", deep)
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

    monkeypatch.setattr(engine, "lint_source", broken)
    assert check_file(Job(str(good), settings)).path == str(good)

    def deep(*args, **kwargs):
        raise RecursionError

    monkeypatch.setattr(engine, "lint_source", deep)
    assert check_file(Job(str(good), settings)).path == str(good)


def test_is_ancestor():
    assert runner._is_ancestor("/a/b", "/a/b")
    assert runner._is_ancestor("/a/b", "/a/b/c")
    assert runner._is_ancestor("/a/b/", "/a/b/c")
    assert not runner._is_ancestor("/a/b", "/a/bc")
    assert not runner._is_ancestor("/a/b/c", "/a/b")
    assert runner._is_ancestor("/", "/a")


def test_a_loop_or_unlistable_folder_costs_only_itself(tmp_path, monkeypatch):
    """After a link loop or a folder that cannot be listed, the walk goes on with its siblings."""
    write(tmp_path / "a" / "x.py")
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    write(tmp_path / "a" / "m" / "y.py")
    write(tmp_path / "b" / "z.py")
    write(tmp_path / "c" / "w.py")
    (tmp_path / "link_to_b").symlink_to(tmp_path / "b", target_is_directory=True)
    real_scandir = os.scandir
    monkeypatch.setattr(runner.os, "scandir",
                        lambda path: (_ for _ in ()).throw(OSError(5, "I/O error")) if str(path).endswith("b")
                        else real_scandir(path))
    names, result = found(tmp_path, "")
    assert names == ["a/x.py", "a/m/y.py", "c/w.py"]  # a folder's files, then its folders
    assert f"{tmp_path / 'a' / 'loop'}: symbolic link loop, skipped" in result.warnings
    assert any(w.startswith(f"{tmp_path / 'b'}: cannot list folder") for w in result.warnings)


def test_a_folder_whose_type_cannot_be_read_is_treated_as_a_file(tmp_path, monkeypatch):
    write(tmp_path / "pkg" / "a.py")
    write(tmp_path / "odd.py" / "inner.py")  # a folder named like a Python file
    real_scandir = os.scandir

    class Entry:
        def __init__(self, entry):
            self._entry, self.name, self.path = entry, entry.name, entry.path

        def is_dir(self):
            if self.name == "odd.py":
                raise OSError(5, "I/O error")
            return self._entry.is_dir()

        def is_symlink(self):
            return self._entry.is_symlink()

    monkeypatch.setattr(runner.os, "scandir", lambda path: [Entry(e) for e in real_scandir(path)])
    names, _ = found(tmp_path, "")
    assert names == ["odd.py", "pkg/a.py"]  # listed as a file: checking it gives its own error
