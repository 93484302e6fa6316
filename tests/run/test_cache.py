"""The findings cache, in process (so that mutation testing sees it): a warm entry answers without
linting, anything that can change the findings misses, entries round-trip every field, and a
broken entry or folder costs speed, never a result. test_cache_and_jobs.py runs it through the CLI."""

from __future__ import annotations

import json
import os
import tempfile

import pytest
from helpers import SYNC_LOSS_ITEM

from ptlint import __version__
from ptlint.engine import traversal as engine
from ptlint.run import check as runner
from ptlint.run import cache as cache_module
from ptlint.engine.finding import SAFE, Edit, Finding, Fix
from ptlint.front.api import default_codes
from ptlint.run.cache import DEFAULT_DIR, Cache, code_fingerprint
from ptlint.run.config import Settings


@pytest.fixture
def lint_calls(monkeypatch) -> list[str]:
    """The paths runner.check_file really lints (a cache hit does not)."""
    calls: list[str] = []
    real = engine.lint_and_summarize

    def counting(source, *args, **kwargs):
        calls.append(source.path)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_and_summarize", counting)  # runner imports it when it lints
    return calls


def settings(codes=None, **kwargs) -> Settings:
    return Settings(enabled=tuple(default_codes() if codes is None else codes), **kwargs)


class _OneFolder:
    """The runner's view of the cache (cache.Caches), all in one folder."""

    def __init__(self, folder) -> None:
        self.folder = folder

    def for_settings(self, chosen: Settings) -> Cache:
        return Cache(str(self.folder), chosen.cache_key())


def check(path, chosen: Settings, folder) -> list[dict]:
    result = runner.check_file(runner.Job(str(path), chosen), _OneFolder(folder))
    assert result.error is None
    return [f.to_json() for f in result.findings]


def test_a_warm_entry_answers_without_linting(tmp_path, lint_calls):
    target = tmp_path / "train.py"
    target.write_text(SYNC_LOSS_ITEM)
    cold = check(target, settings(), tmp_path / "cache")
    assert [f["code"] for f in cold] == ["PTL101"]
    assert lint_calls == [str(target)]
    warm = check(target, settings(), tmp_path / "cache")
    assert warm == cold
    assert lint_calls == [str(target)], "the second check linted again: the cache was not read"


def test_the_same_text_elsewhere_is_a_hit_reported_at_its_own_path(tmp_path, lint_calls):
    (tmp_path / "a.py").write_text(SYNC_LOSS_ITEM)
    (tmp_path / "b.py").write_text(SYNC_LOSS_ITEM)
    first = check(tmp_path / "a.py", settings(), tmp_path / "cache")
    second = check(tmp_path / "b.py", settings(), tmp_path / "cache")
    assert len(lint_calls) == 1
    assert [f["path"] for f in second] == [str(tmp_path / "b.py")]
    assert [link["path"] for f in second for link in f["context"]["via"]] == [str(tmp_path / "b.py")]

    def elsewhere(finding: dict) -> dict:  # the finding, its own path (and its chain's links in it) blanked
        via = [{**link, "path": None if link["path"] == finding["path"] else link["path"]}
               for link in finding["context"]["via"]]
        return {**finding, "path": None, "context": {**finding["context"], "via": via}}

    assert [elsewhere(f) for f in second] == [elsewhere(f) for f in first]


def test_what_changes_findings_misses(tmp_path, lint_calls):
    target = tmp_path / "train.py"
    target.write_text(SYNC_LOSS_ITEM)
    folder = tmp_path / "cache"
    check(target, settings(), folder)
    # another text
    target.write_text(SYNC_LOSS_ITEM.replace("loss.item()", "loss.item() + 1"))
    assert [f["code"] for f in check(target, settings(), folder)] == ["PTL101"]
    assert len(lint_calls) == 2
    # other enabled codes
    assert check(target, settings(["PTL102"]), folder) == []
    assert len(lint_calls) == 3
    # the same codes but other per-file-ignores (part of the settings key)
    check(target, settings(per_file_ignores=(("other/*", ("PTL1",)),)), folder)
    assert len(lint_calls) == 4
    # the same file counted as test code (rules may answer differently there)
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_train.py").write_text(target.read_text())
    check(tests / "test_train.py", settings(root=str(tmp_path)), folder)
    assert len(lint_calls) == 5
    # ...and every one of those is a hit the second time
    check(target, settings(), folder)
    check(target, settings(["PTL102"]), folder)
    check(tests / "test_train.py", settings(root=str(tmp_path)), folder)
    assert len(lint_calls) == 5


def test_key_depends_on_text_codes_and_settings(tmp_path):
    one = Cache(str(tmp_path), "settings-a")
    keys = {one.key(b"x = 1\n", ("PTL101",)), one.key(b"x = 2\n", ("PTL101",)), one.key(b"x = 1\n", ("PTL102",)),
            one.key(b"x = 1\n", ("PTL101", "PTL102")), Cache(str(tmp_path), "settings-b").key(b"x = 1\n", ("PTL101",))}
    assert len(keys) == 5
    assert one.key(b"x = 1\n", ("PTL101",)) == Cache(str(tmp_path), "settings-a").key(b"x = 1\n", ("PTL101",))
    assert all(len(key) == 40 and int(key, 16) >= 0 for key in keys)
    # any bytes, whatever their encoding, make a key
    assert one.key(b"s = '\x80'\n", ()) != one.key(b"s = '\x81'\n", ())


def test_key_changes_with_ptlints_own_code(tmp_path, monkeypatch):
    before = Cache(str(tmp_path), "s").key(b"x = 1\n", ())
    monkeypatch.setattr(cache_module, "code_fingerprint", lambda: "edited")
    assert Cache(str(tmp_path), "s").key(b"x = 1\n", ()) != before


def test_code_fingerprint_covers_the_rule_modules(tmp_path, monkeypatch):
    import shutil

    import ptlint

    copy = tmp_path / "ptlint"
    shutil.copytree(ptlint.__path__[0], copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rules" / "sync" / "notes.txt").write_text("not Python")
    monkeypatch.setattr(ptlint, "__path__", [str(copy)])

    def fingerprint() -> str:  # computed once per process in real runs (lru_cache)
        code_fingerprint.cache_clear()
        return code_fingerprint()

    reference = fingerprint()
    assert reference == fingerprint() and len(reference) == 16
    (copy / "rules" / "sync" / "notes.txt").write_text("still not Python")  # only *.py files count
    assert fingerprint() == reference
    (copy / "dynamic" / "runner.py").write_text("# the dynamic pass makes no finding of check\n")
    assert fingerprint() == reference
    module = next(p for p in sorted((copy / "rules" / "sync").iterdir()) if p.name.startswith("ptl"))
    module.write_text(module.read_text() + "\n# edited\n")
    edited = fingerprint()
    assert edited != reference
    module.rename(copy / ("zz_" + module.name))  # a module renamed, same bytes: another fingerprint
    assert fingerprint() not in (reference, edited)


def test_entries_live_under_the_version_with_a_gitignore(tmp_path):
    folder = tmp_path / "cache"
    store = Cache(str(folder), "s")
    key = store.key(b"x = 1\n", ())
    store.put(key, [])
    assert (folder / __version__ / key[:2] / (key[2:] + ".json")).is_file()
    assert (folder / ".gitignore").read_text() == "# created by ptlint\n*\n"
    assert [p.name for p in (folder / __version__ / key[:2]).iterdir()] == [key[2:] + ".json"]  # no temporary left
    assert store.get(key, "a.py") == []


def test_entries_are_written_beside_their_final_name(tmp_path, monkeypatch, lint_calls):
    """The temporary file is made in the entry's own folder, so that the rename is atomic and
    never crosses file systems: with no usable system temporary folder, entries are still made."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    target = tmp_path / "train.py"
    target.write_text(SYNC_LOSS_ITEM)
    check(target, settings(), tmp_path / "cache")
    check(target, settings(), tmp_path / "cache")
    assert len(lint_calls) == 1


def test_an_existing_gitignore_is_kept(tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / ".gitignore").write_text("mine\n")
    store = Cache(str(folder), "s")
    store.put(store.key(b"x\n", ()), [])
    assert (folder / ".gitignore").read_text() == "mine\n"


def test_entries_round_trip_every_field(tmp_path):
    store = Cache(str(tmp_path), "s")
    findings = [
        Finding("PTL103", "kept-loss", "m1", "a.py", 3, 5, 4, 9, severity="error",
                fix=Fix(SAFE, "detach it", (Edit(3, 5, 3, 9, "loss.detach()"), Edit(1, 1, 1, 1, "import torch\n"))),
                source="static", context="per-step", extra={"confirmed": True}),
        Finding("PTL450", "graph-break", "m2", "a.py", 7, 1, 7, 2, source="dynamic"),
    ]
    key = store.key(b"text\n", ("PTL103",))
    store.put(key, findings)
    back = store.get(key, "b.py")
    assert [f.to_cache() for f in back] == [{**f.to_cache(), "path": "b.py"} for f in findings]
    assert back[0].fix == findings[0].fix and back[0].extra == {"confirmed": True}
    assert back[0].context == "per-step" and back[1].context is None
    assert store.get(store.key(b"text\n", ("PTL101",)), "b.py") is None  # another key: a miss


@pytest.mark.parametrize("content", ["{not json", "", "[1]", '[{"code": "PTL101"}]', '{"a": 1}', "null"])
def test_a_broken_entry_is_a_miss_and_is_replaced(tmp_path, lint_calls, content):
    target = tmp_path / "train.py"
    target.write_text(SYNC_LOSS_ITEM)
    folder = tmp_path / "cache"
    reference = check(target, settings(), folder)
    [entry] = [os.path.join(root, name) for root, _, names in os.walk(folder) for name in names
               if name.endswith(".json")]
    with open(entry, "w") as handle:
        handle.write(content)
    assert check(target, settings(), folder) == reference
    assert len(lint_calls) == 2  # a miss: linted again
    with open(entry) as handle:
        assert [f["code"] for f in json.load(handle)] == ["PTL101"]  # and rewritten whole
    assert check(target, settings(), folder) == reference
    assert len(lint_calls) == 2


def test_an_unwritable_folder_costs_speed_not_results(tmp_path, lint_calls):
    target = tmp_path / "train.py"
    target.write_text(SYNC_LOSS_ITEM)
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    assert [f["code"] for f in check(target, settings(), blocker)] == ["PTL101"]
    assert [f["code"] for f in check(target, settings(), blocker)] == ["PTL101"]
    assert len(lint_calls) == 2
    assert blocker.read_text() == "a file where the cache folder should be"


def test_location_order(tmp_path, monkeypatch):
    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    root = str(tmp_path / "project")
    assert Cache.location(None, None, root) == os.path.join(root, DEFAULT_DIR)
    assert Cache.location(None, "from-config", root) == str(tmp_path / "from-config")
    monkeypatch.setenv("PTLINT_CACHE_DIR", "from-env")
    assert Cache.location(None, "from-config", root) == str(tmp_path / "from-env")
    assert Cache.location("from-flag", "from-config", root) == str(tmp_path / "from-flag")
    assert Cache.location("/abs/flag", None, root) == "/abs/flag"
    # an absolute path is taken as given: `..` after a symbolic link is not the lexical parent
    assert Cache.location("/abs/link/../cache", None, root) == "/abs/link/../cache"
    monkeypatch.setenv("PTLINT_CACHE_DIR", "")  # set but empty: as if unset
    assert Cache.location(None, None, root) == os.path.join(root, DEFAULT_DIR)


def test_dependencies_join_the_key_only_when_there_are_some(tmp_path):
    store = Cache(str(tmp_path), "s")
    plain = store.key(b"x = 1\n", ("PTL603",))
    assert plain == store.key(b"x = 1\n", ("PTL603",), "")
    one, other = store.key(b"x = 1\n", ("PTL603",), "d1"), store.key(b"x = 1\n", ("PTL603",), "d2")
    assert len({plain, one, other}) == 3


def test_caches_give_one_cache_per_location_and_settings(tmp_path, monkeypatch):
    from ptlint.run.cache import Caches

    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    a, b = tmp_path / "a", tmp_path / "b"
    caches = Caches(None)
    first = caches.for_settings(settings(root=str(a)))
    assert caches.for_settings(settings(root=str(a))) is first  # opened once
    assert first.directory == os.path.join(str(a), DEFAULT_DIR, __version__)
    beside_b = caches.for_settings(settings(root=str(b)))
    assert beside_b.directory == os.path.join(str(b), DEFAULT_DIR, __version__)
    assert caches.for_settings(settings(["PTL101"], root=str(a))).settings_key != first.settings_key
    configured = caches.for_settings(settings(root=str(a), cache_dir=str(tmp_path / "own")))
    assert configured.directory == os.path.join(str(tmp_path / "own"), __version__)
    chosen = Caches(str(tmp_path / "cli")).for_settings(settings(root=str(a), cache_dir=str(tmp_path / "own")))
    assert chosen.directory == os.path.join(str(tmp_path / "cli"), __version__)  # --cache-dir wins


# -- a confined cache: nothing written beside what a folder already holds ------------------------

def test_a_gitignore_goes_only_into_the_cache_folder_ptlint_makes(tmp_path):
    folder = tmp_path / "a" / "b" / "cache"
    store = Cache(str(folder), "s")
    store.put(store.key(b"x\n", ()), [])
    assert (folder / ".gitignore").read_text() == "# created by ptlint\n*\n"
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", __version__]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]  # the parents made get nothing
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["cache"]


@pytest.mark.parametrize("contents", [["train.py", "README.md"], []], ids=["holds-files", "empty"])
def test_an_existing_folder_is_used_without_anything_written_beside_its_files(tmp_path, contents):
    """`cache-dir = "."` (the project root) or a shared folder: entries go into the version folder,
    and no `.gitignore` (`*` would hide the whole project from git)."""
    for name in contents:
        (tmp_path / name).write_text("mine\n")
    store = Cache(str(tmp_path), "s")
    key = store.key(b"x\n", ())
    store.put(key, [])
    store.put(store.key(b"y\n", ()), [])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(contents + [__version__])
    assert all((tmp_path / name).read_text() == "mine\n" for name in contents)
    assert store.get(key, "a.py") == []


def test_a_cache_folder_made_by_another_run_meanwhile_is_not_given_a_gitignore(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    real = os.mkdir

    def made_meanwhile(path, *args, **kwargs):
        if os.fspath(path) == str(folder):
            real(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(cache_module.os, "mkdir", made_meanwhile)
    store = Cache(str(folder), "s")
    key = store.key(b"x\n", ())
    store.put(key, [])
    assert sorted(p.name for p in folder.iterdir()) == [__version__]
    assert store.get(key, "a.py") == []


def test_a_relative_cache_dir_is_relative_to_the_config_that_names_it(tmp_path, monkeypatch):
    from ptlint.run.config import Resolver

    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.ptlint]\ncache-dir = "build-cache/ptlint"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    resolved = Resolver().settings_for(str(project / "src"))
    assert resolved.cache_dir == str(project / "build-cache" / "ptlint")
    (project / "pyproject.toml").write_text(f'[tool.ptlint]\ncache-dir = "{tmp_path / "abs"}"\n')
    assert Resolver().settings_for(str(project / "src")).cache_dir == str(tmp_path / "abs")
