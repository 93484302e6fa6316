"""Findings are identical with and without the cache and for any --jobs; the cache is keyed by
content and settings, lives where the user says, and survives corruption and sharing."""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest
from helpers import FIXTURES, run_ptlint


def sample_tree(tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sample_project", tree)
    # enough files for the process pool to be used (it is skipped for tiny runs)
    for index in range(12):
        shutil.copyfile(tree / "trainer" / "loop.py", tree / f"copy_{index}.py")
    return tree


def findings(*args, cwd, env=None):
    result = run_ptlint("check", "--select", "PTL", "--output-format", "json", *args, cwd=cwd, env=env)
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout)


def test_same_findings_with_and_without_cache_and_any_jobs(tmp_path):
    tree = sample_tree(tmp_path)
    cache = str(tmp_path / "cache")
    reference = findings("--no-cache", "--jobs", "1", ".", cwd=tree)
    assert len(reference) > 12
    assert findings("--no-cache", "--jobs", "2", ".", cwd=tree) == reference
    assert findings("--no-cache", "--jobs", "5", ".", cwd=tree) == reference
    assert findings("--cache-dir", cache, "--jobs", "2", ".", cwd=tree) == reference  # cold: fills
    assert os.listdir(cache)
    assert findings("--cache-dir", cache, "--jobs", "1", ".", cwd=tree) == reference  # warm
    assert findings("--cache-dir", cache, "--jobs", "2", ".", cwd=tree) == reference


def _entries(cache: str) -> list[str]:
    return [os.path.join(root, name) for root, _, names in os.walk(cache) for name in names if name.endswith(".json")]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_warm_run_answers_from_the_cache(tmp_path, jobs):
    """Entries rewritten behind ptlint's back show up in its output: the warm run read them
    (in the worker processes too) instead of linting again."""
    tree = sample_tree(tmp_path)
    cache = str(tmp_path / "cache")
    reference = findings("--cache-dir", cache, "--jobs", jobs, ".", cwd=tree)
    entries = _entries(cache)
    assert len(entries) >= 2
    for entry in entries:
        with open(entry) as handle:
            data = json.load(handle)
        with open(entry, "w") as handle:
            json.dump([{**item, "message": "answered from the cache"} for item in data], handle)
    warm = findings("--cache-dir", cache, "--jobs", jobs, ".", cwd=tree)
    assert warm == [{**f, "message": "answered from the cache"} for f in reference]
    assert findings("--no-cache", "--jobs", jobs, ".", cwd=tree) == reference


def test_cache_follows_content_and_settings(tmp_path):
    tree = sample_tree(tmp_path)
    cache = str(tmp_path / "cache")
    before = findings("--cache-dir", cache, "trainer/loop.py", cwd=tree)
    # a different selection must not be answered from entries made for another one
    result = run_ptlint("check", "--cache-dir", cache, "--select", "PTL102", "--output-format", "json",
                        "trainer/loop.py", cwd=tree)
    assert {f["code"] for f in json.loads(result.stdout)} == {"PTL102"}
    # editing the file invalidates its entry
    path = tree / "trainer" / "loop.py"
    path.write_text(path.read_text().replace("cuda_sync()  # expect: PTL102", "pass"))
    after = findings("--cache-dir", cache, "trainer/loop.py", cwd=tree)
    assert len(after) == len(before) - 1 and not any(f["code"] == "PTL102" for f in after)


def test_cache_location_flag_env_and_default(tmp_path):
    tree = sample_tree(tmp_path)
    findings(".", cwd=tree)  # default: .ptlint_cache beside the project's config
    assert (tree / ".ptlint_cache").is_dir()
    assert (tree / ".ptlint_cache" / ".gitignore").read_text().strip().endswith("*")
    env_dir = tmp_path / "from-env"
    findings(".", cwd=tree, env={"PTLINT_CACHE_DIR": str(env_dir)})
    assert env_dir.is_dir()
    shutil.rmtree(tree / ".ptlint_cache")
    findings("--no-cache", ".", cwd=tree)
    assert not (tree / ".ptlint_cache").exists()


def test_corrupt_cache_entries_are_misses(tmp_path):
    tree = sample_tree(tmp_path)
    cache = tmp_path / "cache"
    reference = findings("--cache-dir", str(cache), ".", cwd=tree)
    for root, _, files in os.walk(cache):
        for name in files:
            if name.endswith(".json"):
                (open(os.path.join(root, name), "w")).write("{not json")
    assert findings("--cache-dir", str(cache), ".", cwd=tree) == reference


def test_two_runs_sharing_a_cache(tmp_path):
    tree = sample_tree(tmp_path)
    cache = str(tmp_path / "cache")
    reference = findings("--no-cache", ".", cwd=tree)
    results = []

    def run():
        results.append(findings("--cache-dir", cache, ".", cwd=tree))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [reference] * 3
    assert findings("--cache-dir", cache, ".", cwd=tree) == reference



def _with_cache_dir(tree, value: str) -> None:
    config = tree / "pyproject.toml"
    text = config.read_text()
    assert "[tool.ptlint]\n" in text and "cache-dir" not in text
    config.write_text(text.replace("[tool.ptlint]\n", f'[tool.ptlint]\ncache-dir = "{value}"\n', 1))


def test_cache_dir_dot_leaves_git_status_alone(tmp_path):
    """`cache-dir = "."`: the entries go into a version folder, and the project root gets no
    `.gitignore` (one with `*` made `git status` empty)."""
    from ptlint import __version__

    tree = sample_tree(tmp_path)
    _with_cache_dir(tree, ".")
    before = sorted(p.name for p in tree.iterdir())
    findings(".", cwd=tree)
    assert sorted(p.name for p in tree.iterdir()) == sorted(before + [__version__])


def test_a_relative_cache_dir_is_found_beside_its_config_from_any_folder(tmp_path):
    tree = sample_tree(tmp_path)
    _with_cache_dir(tree, "cache-here")
    outside = tmp_path / "outside"
    outside.mkdir()
    findings(str(tree), cwd=outside)
    assert (tree / "cache-here" / ".gitignore").is_file()
    assert sorted(p.name for p in outside.iterdir()) == []
