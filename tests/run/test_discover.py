"""Finding the files, in process (so that mutation testing sees it): what a folder walk picks up
and skips (the default folders, `exclude`, what git ignores), what a named path gives, and
one-line errors for links, loops and unreadable folders."""

from __future__ import annotations

import os
from pathlib import Path

from ptlint.run import discover as walker
from ptlint.run.config import Resolver
from ptlint.run.discover import discover


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
    monkeypatch.setattr(walker.os, "scandir", refusing)
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


def test_is_ancestor():
    assert walker._is_ancestor("/a/b", "/a/b")
    assert walker._is_ancestor("/a/b", "/a/b/c")
    assert walker._is_ancestor("/a/b/", "/a/b/c")
    assert not walker._is_ancestor("/a/b", "/a/bc")
    assert not walker._is_ancestor("/a/b/c", "/a/b")
    assert walker._is_ancestor("/", "/a")


def test_a_loop_or_unlistable_folder_costs_only_itself(tmp_path, monkeypatch):
    """After a link loop or a folder that cannot be listed, the walk goes on with its siblings."""
    write(tmp_path / "a" / "x.py")
    (tmp_path / "a" / "loop").symlink_to(tmp_path, target_is_directory=True)
    write(tmp_path / "a" / "m" / "y.py")
    write(tmp_path / "b" / "z.py")
    write(tmp_path / "c" / "w.py")
    (tmp_path / "link_to_b").symlink_to(tmp_path / "b", target_is_directory=True)
    real_scandir = os.scandir
    monkeypatch.setattr(walker.os, "scandir",
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

    monkeypatch.setattr(walker.os, "scandir", lambda path: [Entry(e) for e in real_scandir(path)])
    names, _ = found(tmp_path, "")
    assert names == ["odd.py", "pkg/a.py"]  # listed as a file: checking it gives its own error
