"""The README's rule table and the pages under docs/rules/ are generated from the rule modules;
they must not drift (regenerate: python -m ptlint.engine.catalogue --write)."""

import json
import re

from helpers import REPO, run_ptlint

from ptlint.engine.catalogue import (
    DOCS_URL,
    README_END,
    README_START,
    doc_page,
    readme_table,
    stale_docs,
)
from ptlint.engine.registry import BUILTIN_CODES, DYNAMIC_CODES, all_rules

REGENERATE = "run: python -m ptlint.engine.catalogue --write"


def test_readme_rule_table_is_current():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text[text.index(README_START) + len(README_START):text.index(README_END)]
    assert table.strip() == readme_table().strip(), REGENERATE


def test_rule_pages_match_the_rule_modules():
    to_write, orphans = stale_docs(str(REPO))
    assert not to_write and not orphans, f"{REGENERATE} (stale: {sorted(to_write) + orphans})"
    codes = set(all_rules()) | set(BUILTIN_CODES) | set(DYNAMIC_CODES)
    pages = {path.stem for path in (REPO / "docs" / "rules").glob("PTL*.md")}
    assert pages == codes
    for code, cls in all_rules().items():
        page = (REPO / "docs" / "rules" / f"{code}.md").read_text(encoding="utf-8")
        assert page == doc_page(code)
        assert page.splitlines()[1] == f"# {code} {cls.name}"
        for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
            assert section in page, (code, section)


def test_every_link_to_a_rule_page_resolves():
    """README table links, SARIF helpUri and the language server's codeDescription (DOCS_URL)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/rules/PTL\d+\.md)\)", readme)
    assert len(links) == len(set(all_rules()) | set(BUILTIN_CODES) | set(DYNAMIC_CODES))
    assert all((REPO / link).is_file() for link in links)
    prefix = "https://github.com/ptlint/ptlint/blob/main/"
    assert DOCS_URL.startswith(prefix)
    assert (REPO / DOCS_URL.format(code="PTL101")[len(prefix):]).is_file()
    sarif = run_ptlint("check", "--no-cache", "--output-format", "sarif", "-", input="x = 1\n")
    rules = json.loads(sarif.stdout)["runs"][0]["tool"]["driver"]["rules"]
    for rule in rules:
        assert (REPO / rule["helpUri"][len(prefix):]).is_file(), rule["helpUri"]


def test_the_regeneration_command(tmp_path):
    (tmp_path / "README.md").write_text(f"# x\n\n{README_START}\nold\n{README_END}\n")
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "docs" / "rules" / "PTL999.md").write_text("a rule that is gone\n")
    import subprocess
    import sys

    def catalogue(*args):
        return subprocess.run([sys.executable, "-m", "ptlint.engine.catalogue", "--root", str(tmp_path), *args],
                              capture_output=True, text=True, timeout=60)

    assert catalogue("--check").returncode == 1
    assert "updated docs/rules/PTL101.md" in catalogue("--write").stdout
    assert not (tmp_path / "docs" / "rules" / "PTL999.md").exists()
    assert catalogue("--check").returncode == 0 and catalogue("--write").stdout.strip() == "up to date"
    assert "| [PTL101](docs/rules/PTL101.md) | sync-in-loop |" in (tmp_path / "README.md").read_text()


def test_readme_commands_match_ci():
    """.ci/run installs the test extra and runs the very pytest command the README gives."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    [command] = [line for line in readme.splitlines() if 'pip install -e ".[test]" && python -m pytest' in line]
    pytest_command = command[command.index("python -m pytest"):]
    assert ci[ci.index('pip install -q -e ".[test]"') + 1] == pytest_command
    assert ci[-1] == pytest_command  # the last command: its exit status is the run's
    assert "ptlint check fixtures/sample_project" in readme


def test_rule_index_describes_the_rules_and_a_stale_one_is_ignored(monkeypatch):
    from ptlint.engine import registry

    registry.rule_index.cache_clear()
    assert registry.rule_index() == registry.index_from_classes()
    monkeypatch.setattr(registry, "rules_fingerprint", lambda: "edited since")
    registry.rule_index.cache_clear()
    import ptlint.rules._index as index

    monkeypatch.setitem(index.RULES, "PTL101", ("wrong", False, "nowhere", ()))
    assert registry.rule_index()["PTL101"].name == "sync-in-loop"  # the classes, not the stale index
    monkeypatch.undo()
    registry.rule_index.cache_clear()


def test_the_rule_index_fingerprint_follows_the_rule_sources(tmp_path, monkeypatch):
    """It changes with a rule module, a family's helpers or a new rule, not with the index itself
    nor with byte-compiled files; and a copy of the sources has the same one."""
    import shutil

    from ptlint.engine import registry

    here = registry.rules_fingerprint()
    copy = tmp_path / "rules"
    shutil.copytree(registry.RULES_FOLDER, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(registry, "RULES_FOLDER", str(copy))
    assert registry.rules_fingerprint() == here
    (copy / "sync" / "__pycache__").mkdir()
    (copy / "sync" / "__pycache__" / "ptl101_sync_in_loop.cpython-311.pyc").write_bytes(b"\0" * 64)
    (copy / "_index.py").write_text("RULES = {}\n")
    assert registry.rules_fingerprint() == here
    seen = {here}
    for path in (copy / "sync" / "ptl101_sync_in_loop.py", copy / "numerics" / "_helpers.py"):
        path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        seen.add(registry.rules_fingerprint())
    (copy / "sync" / "ptl998_new_rule.py").write_text("")
    seen.add(registry.rules_fingerprint())
    assert len(seen) == 4


def test_a_check_imports_only_the_rules_that_can_fire():
    import subprocess
    import sys

    code = ("import sys\n"
            "from ptlint.run.config import build_settings\n"
            "from ptlint.engine.registry import rule_classes_for\n"
            "codes = build_settings(['.']).enabled\n"
            "assert not [m for m in sys.modules if '.ptl' in m], 'settings imported rules'\n"
            "classes = rule_classes_for(codes, 'for x in xs:\\n    x.item()\\n')\n"
            "loaded = sorted(m.rsplit('.', 1)[1] for m in sys.modules if '.ptl' in m)\n"
            "print(loaded)\n"
            "assert [c.code for c in classes] == ['PTL101', 'PTL113'], classes\n"  # PTL402 (also triggered) is off
            "assert loaded == ['ptl101_sync_in_loop', 'ptl113_host_output_without_no_grad'], loaded\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
