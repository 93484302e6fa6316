"""CONTRIBUTING.md works when followed as it stands: its example rule, written where the guide
says into a copy of the package, gets its page from the guide's commands, passes the tests they
run, and reports its bad examples and not its good ones; every file and helper the guide names
exists."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

from helpers import REPO

from ptlint.engine.edits import Edits
from ptlint.engine.file_context import FileContext
from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile

GUIDE = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
TEMPLATE = re.compile(r"Create\s+`(?P<path>ptlint/rules/\w+/ptl\d{3}_\w+\.py)`:\n\n````python\n(?P<module>.*?)\n````", re.S)


def guide_commands() -> list[str]:
    """The commands of step 3, "Generate its page and run its tests", in order."""
    step = GUIDE[GUIDE.index("### 3. "):GUIDE.index("### 4. ")]
    [block] = re.findall(r"```sh\n(.*?)```", step, re.S)
    return [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def run(args: list[str], cwd, checkout) -> subprocess.CompletedProcess:
    """A command as the contributor types it, with the copy of the package on the path."""
    if args[0] == "python":
        args = [sys.executable, *args[1:]]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    env.pop("PTLINT_CACHE_DIR", None)
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_following_the_guide_adds_a_working_rule(tmp_path):
    match = TEMPLATE.search(GUIDE)
    assert match, "CONTRIBUTING.md must show the example rule's module under 'Create `ptlint/rules/...`:'"
    path, module = match["path"], match["module"] + "\n"
    code = re.search(r'^    code = "(PTL\d{3})"$', module, re.M)[1]
    assert code not in all_rules() and not code.startswith("PTL9"), \
        f"{code}, the code of CONTRIBUTING.md's example rule, is taken: give the example a free one"
    assert path.split("/")[-1].startswith(code.lower() + "_")

    checkout = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    for folder in ("ptlint", "tests", "docs"):
        shutil.copytree(REPO / folder, checkout / folder, ignore=ignore)
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(REPO / name, checkout / name)
    assert (checkout / path).parent.is_dir(), f"{path}: the guide names a family folder that does not exist"
    (checkout / path).write_text(module, encoding="utf-8")

    commands = guide_commands()
    assert any("catalogue --write" in c for c in commands) and any("pytest" in c for c in commands)
    for command in commands:
        result = run(shlex.split(command), checkout, checkout)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
        if "pytest" in command:
            assert re.search(r"\b[1-9]\d* passed", result.stdout) and "deselected" in result.stdout, result.stdout

    # what the guide says the commands made
    assert (checkout / "docs" / "rules" / f"{code}.md").is_file()
    assert f"| [{code}](docs/rules/{code}.md) |" in (checkout / "README.md").read_text(encoding="utf-8")
    assert f"'{code}':" in (checkout / "ptlint" / "rules" / "_index.py").read_text(encoding="utf-8")
    page = run(["python", "-m", "ptlint", "rule", code], checkout, checkout)
    assert page.returncode == 0 and page.stdout.startswith(f"# {code} ")

    # the new rule reports its bad examples, on their marked lines, and not its good ones
    dump = ("import json; from ptlint.engine.registry import all_rules; "
            f"c = all_rules()[{code!r}]; print(json.dumps([c.bad_examples, c.good_examples]))")
    bad, good = json.loads(run(["python", "-c", dump], checkout, checkout).stdout)
    assert bad and good
    work = tmp_path / "work"
    work.mkdir()
    files = {f"bad_{i}.py": text for i, text in enumerate(bad)} | {f"good_{i}.py": text for i, text in enumerate(good)}
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
    result = run(["python", "-m", "ptlint", "check", "--no-cache", "--select", code, "--output-format", "json",
                  *files], work, checkout)
    assert result.returncode == 1, result.stderr
    found = json.loads(result.stdout)
    for name, text in files.items():
        expected = [n for n, line in enumerate(text.splitlines(), 1) if f"# expect: {code}" in line]
        assert sorted(f["line"] for f in found if f["path"] == name and f["code"] == code) == expected, name
        assert name.startswith("good") or expected


# -- every file and helper the guide names exists ------------------------------------------------
def named_files(text: str) -> set[str]:
    """Paths of this repository that a document names in backquotes (not patterns like `<layer>`)."""
    return set(re.findall(r"`((?:ptlint|tests|bench|docs|fixtures)/[^`<>*\s]*)`", text))


def test_the_files_the_guide_the_readme_and_the_docs_name_exist():
    code = re.search(r"ptl(\d{3})_", TEMPLATE.search(GUIDE)["path"])[1]
    made_by_the_guide = {p for p in named_files(GUIDE) if code in p}  # the example rule and its page
    assert made_by_the_guide  # the guide names what step 3 creates, and this test tells them apart
    named = named_files(GUIDE) - made_by_the_guide
    for document in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        named |= named_files(document.read_text(encoding="utf-8"))
    assert {"ptlint/rules/_index.py", "tests/test_layers.py"} <= named
    assert sorted(p for p in named if not (REPO / p.rstrip("/")).exists()) == []


def test_the_helpers_the_guide_names_exist():
    text = GUIDE[:GUIDE.index("````python")] + GUIDE[GUIDE.rindex("````") + 4:]  # prose, not the example
    tree = ast.parse("x = 1\n")
    ctx = FileContext(SourceFile("m.py", "x = 1\n"), tree)
    for name in set(re.findall(r"`(?:self\.)?ctx\.(\w+)", text)):
        assert hasattr(ctx, name), f"ctx.{name}"
    for name in set(re.findall(r"`edits\.(\w+)\(", text)):
        assert hasattr(Edits, name), f"edits.{name}"
    for module, name in set(re.findall(r"`(values|nodes|autograd|compiled|where|names|project|facts)\.(\w+)", text)):
        assert hasattr(importlib.import_module(f"ptlint.semantics.{module}"), name), f"{module}.{name}"
    for dotted in set(re.findall(r"`(ptlint(?:\.\w+)+)", text)):
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
            try:
                value = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                assert hasattr(value, attr), dotted
                value = getattr(value, attr)
            break
        else:
            raise AssertionError(dotted)
    rule_api = importlib.import_module("ptlint.engine.rule")
    for name in ("PER_STEP", "PER_OUTER", "ONCE", "CALLED", "SAFE", "UNSAFE", "FixExample", "DOC_SECTIONS"):
        assert name in text and hasattr(rule_api, name), name  # the guide says they come from there
