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


# -- what git ignores ------------------------------------------------------------------------------

def repository(tmp_path: Path) -> Path:
    """A work tree with a .git folder (its contents as git makes them matter only for info/exclude)."""
    root = tmp_path / "repo"
    (root / ".git" / "info").mkdir(parents=True)
    return root


def listed(root: Path, *paths: str, **resolver) -> list[str]:
    """The paths a discovery from `root` finds (as the command line names them, from there)."""
    before = os.getcwd()
    os.chdir(root)
    try:
        return [job.path for job in discover(list(paths) or ["."], Resolver(**resolver)).jobs]
    finally:
        os.chdir(before)


def test_gitignore_files_from_the_root_down_decide_and_the_last_match_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    root = repository(tmp_path)
    for name in ("a.py", "gen_pb2.py", "keep_pb2.py", "out/x.py", "pkg/b.py", "pkg/c_pb2.py", "pkg/sub/d.py",
                 "pkg/sub/tmp.py", "notes.txt", "pkg/out/y.py"):
        write(root / name)
    # anchored `/out/` is the root's folder only; `sub/tmp.py` is relative to pkg/, where it is written
    write(root / ".gitignore", "# generated\n*_pb2.py\n!keep_pb2.py\n/out/\n")
    write(root / "pkg" / ".gitignore", "!c_pb2.py\nsub/tmp.py\n")
    monkeypatch.chdir(root)
    assert listed(root) == ["a.py", "keep_pb2.py", "pkg/b.py", "pkg/c_pb2.py", "pkg/out/y.py", "pkg/sub/d.py"]
    assert listed(root, respect_gitignore=False) == [
        "a.py", "gen_pb2.py", "keep_pb2.py", "out/x.py", "pkg/b.py", "pkg/c_pb2.py", "pkg/out/y.py",
        "pkg/sub/d.py", "pkg/sub/tmp.py"]


def test_info_exclude_global_excludes_and_ignore_files(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    root = repository(tmp_path)
    for name in ("a.py", "local/x.py", "mine.py", "theirs.py", "scratch/y.py"):
        write(root / name)
    write(root / ".git" / "info" / "exclude", "local/\n")
    write(home / ".config" / "git" / "ignore", "mine.py\n")  # git's default global excludes file
    write(root / ".ignore", "scratch/\n")
    assert listed(root) == ["a.py", "theirs.py"]
    # core.excludesFile in ~/.gitconfig replaces the default file; the repository's config wins over it
    write(home / ".gitconfig", '[user]\n\tname = x\n[core]\n\texcludesFile = "~/my-excludes"  # mine\n')
    write(home / "my-excludes", "theirs.py\n")
    assert listed(root) == ["a.py", "mine.py"]
    write(root / ".git" / "config", "[core]\n\tbare = false\n\texcludesfile = " + str(home / "repo-excludes") + "\n")
    write(home / "repo-excludes", "a.py\n")
    assert listed(root) == ["mine.py", "theirs.py"]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    write(tmp_path / "xdg" / "git" / "config", "[core]\nexcludesfile = " + str(home / "xdg-excludes") + "\n")
    (root / ".git" / "config").unlink()
    write(home / "xdg-excludes", "mine.py\n")
    assert listed(root) == ["a.py", "theirs.py"]


def test_outside_a_repository_only_ignore_files_count(tmp_path, monkeypatch):
    root = tmp_path / "plain"
    for name in ("a.py", "b.py", "c.py"):
        write(root / name)
    write(root / ".gitignore", "a.py\n")
    write(root / ".ignore", "b.py\n")
    assert listed(root) == ["a.py", "c.py"]


def test_a_worktree_or_submodule_git_file_marks_a_repository_root(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    main = tmp_path / "main"
    write(main / ".git" / "worktrees" / "wt" / "commondir", "../..\n")
    write(main / ".git" / "info" / "exclude", "excluded.py\n")
    tree = tmp_path / "wt"
    write(tree / ".git", f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    for name in ("a.py", "excluded.py", "ignored.py"):
        write(tree / name)
    write(tree / ".gitignore", "ignored.py\n")
    assert listed(tree) == ["a.py"]
    write(tree / ".git", "not a gitdir line\n")  # a broken .git file: no repository here
    assert listed(tree) == ["a.py", "excluded.py", "ignored.py"]


def test_a_nested_repository_does_not_inherit_the_outer_gitignore(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repository(tmp_path)
    write(root / ".gitignore", "*_gen.py\n")
    write(root / "a_gen.py")
    (root / "vendor" / ".git").mkdir(parents=True)
    write(root / "vendor" / "b_gen.py")
    assert listed(root) == ["vendor/b_gen.py"]


def test_named_paths_are_checked_even_when_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repository(tmp_path)
    write(root / ".gitignore", "out/\n*_pb2.py\nskip.py\n")
    for name in ("out/a.py", "out/b_pb2.py", "out/deep/c.py", "skip.py", "x_pb2.py"):
        write(root / name)
    assert listed(root, "out", "skip.py") == ["out/a.py", "out/deep/c.py", "skip.py"]
    assert listed(root, "out/deep") == ["out/deep/c.py"]
    assert listed(root, ".") == []


def test_each_folders_config_says_whether_git_is_respected(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repository(tmp_path)
    write(root / ".gitignore", "*_gen.py\n")
    write(root / "a_gen.py")
    write(root / "legacy" / "b_gen.py")
    write(root / "legacy" / "pyproject.toml", "[tool.ptlint]\nrespect-gitignore = false\n")
    assert listed(root) == ["legacy/b_gen.py"]  # the root's config (none) respects git, legacy/'s does not
    assert listed(root, respect_gitignore=True) == []  # the command line wins over every config
    assert listed(root, respect_gitignore=False) == ["a_gen.py", "legacy/b_gen.py"]


def test_an_ignore_file_is_read_again_when_it_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repository(tmp_path)
    write(root / "a.py")
    write(root / ".gitignore", "a.py\n")
    assert listed(root) == []
    write(root / ".gitignore", "# nothing now\n\n")
    os.utime(root / ".gitignore", ns=(1, 1))
    assert listed(root) == ["a.py"]


def test_ignored_matches_folders_with_a_slash_and_negations_in_order():
    import pathspec

    rules = (("/r", tuple(pathspec.GitIgnoreSpec.from_lines(["data/", "*.py", "!keep.py"]).patterns)),)
    assert walker.ignored(rules, "/r/data", True) and not walker.ignored(rules, "/r/data", False)
    assert walker.ignored(rules, "/r/x.py", False) and not walker.ignored(rules, "/r/keep.py", False)
    assert not walker.ignored(rules, "/r/x.txt", False)
    deeper = rules + (("/r/sub", tuple(pathspec.GitIgnoreSpec.from_lines(["!y.py"]).patterns)),)
    assert not walker.ignored(deeper, "/r/sub/y.py", False) and walker.ignored(deeper, "/r/sub/z.py", False)
    assert not walker.ignored((), "/r/x.py", False)


def test_links_to_folders_walked_once_and_a_broken_one_costs_only_itself(tmp_path):
    write(tmp_path / "shared" / "s.py")
    (tmp_path / "a_link").symlink_to(tmp_path / "shared", target_is_directory=True)  # not a loop: walked
    (tmp_path / "b_link").symlink_to(tmp_path / "shared", target_is_directory=True)  # the same folder again
    (tmp_path / "m_gone.py").symlink_to(tmp_path / "nowhere.py")
    write(tmp_path / "z.py")  # after the broken link: still found
    names, result = found(tmp_path, "")
    assert names == ["z.py", "a_link/s.py"]
    assert sorted(result.warnings) == [f"{tmp_path / 'b_link'}: symbolic link loop, skipped",
                                       f"{tmp_path / 'm_gone.py'}: broken symbolic link",
                                       f"{tmp_path / 'shared'}: symbolic link loop, skipped"]


def test_a_folder_git_ignores_hides_what_a_negation_inside_it_names(tmp_path, monkeypatch):
    """git cannot re-include a file whose folder it ignores: neither does the walk."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repository(tmp_path)
    write(root / ".gitignore", "gen/\n!gen/keep.py\n")
    write(root / "gen" / "keep.py")
    write(root / "gen.py")  # a file may share the folder pattern's name: `gen/` is for folders
    assert listed(root) == ["gen.py"]
    rules = walker.GitIgnores().rules(str(root))
    assert walker.ignored(rules, str(root / "gen"), True) is True
    assert walker.ignored(rules, str(root / "gen.py"), False) is False


def test_a_named_folder_keeps_its_own_and_its_subfolders_ignore_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = repository(tmp_path)
    write(root / ".gitignore", "out/\n")
    write(root / "out" / ".gitignore", "junk.py\n")
    write(root / "out" / "deep" / ".gitignore", "tmp_*.py\n")
    for name in ("a.py", "junk.py", "deep/b.py", "deep/tmp_c.py"):
        write(root / "out" / name)
    assert listed(root, "out") == ["out/a.py", "out/deep/b.py"]
    assert listed(root, "out/deep") == ["out/deep/b.py"]
    assert listed(root, "out/a.py", "out/junk.py") == ["out/a.py", "out/junk.py"]


def test_the_git_configs_that_name_the_global_excludes(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    config = tmp_path / "config"
    for text, value in [
        ('[core]\n\texcludesFile = "~/x"  ; why\n', "~/x"),
        ("[core]\nexcludesfile=/a=b/x # why\n", "/a=b/x"),
        ("[user]\nexcludesfile = /wrong\n[core]\nbare = false\n", None),  # another section's key
        ("[core]\nexcludesfile = /first\n[core]\nexcludesfile = /second\n", "/second"),
        ("[core \"x\"]\nexcludesfile = /sub\n", None),
        ("[broken\nexcludesfile = /x\n", None),
        ("excludesfile = /no-section\n", None),
        ('[CORE]\nExcludesFile = "/upper"\n', "/upper"),
        ("[core]  ; the section's own comment\nexcludesfile = /a b/x ; why\n", "/a b/x"),
    ]:
        config.write_text(text)
        assert walker._core_excludes_file(str(config)) == value, text
    assert walker._core_excludes_file(str(tmp_path / "missing")) is None
    write(tmp_path / "elsewhere.gitconfig", "[core]\nexcludesfile = /from-env\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "elsewhere.gitconfig"))
    assert walker._global_excludes(str(tmp_path / "no-repo-config")) == "/from-env"
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    assert walker._global_excludes(str(tmp_path / "no-repo-config")) == str(home / ".config" / "git" / "ignore")


def test_a_relative_gitdir_and_an_unreadable_ignore_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path / "store" / "info" / "exclude", "excluded.py\n")
    tree = tmp_path / "tree"
    write(tree / ".git", "gitdir: ../store\n")
    write(tree / "a.py")
    write(tree / "excluded.py")
    (tree / ".gitignore").write_bytes(b"# caf\xe9 (latin-1, not UTF-8)\nb.py\n")
    write(tree / "b.py")
    assert listed(tree) == ["a.py"]
    assert listed(tmp_path, "tree") == ["tree/a.py"]  # the gitdir is relative to the .git file, not to here
