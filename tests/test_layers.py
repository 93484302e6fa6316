"""The house rules of ptlint's layout (CONTRIBUTING.md, "Layout"): imports go one way, no circles,
no rule module imports another, no module imports another module's private names; the Layout
list names every module; every folder of the rules is a package that goes into the wheel.

Every import counts: at module level, inside functions and under `TYPE_CHECKING`; an import
that only closes a circle at run time is still a circle for a reader.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from helpers import REPO

PACKAGE = REPO / "ptlint"

# layer -> the layers it may import (besides itself and the package root, `ptlint`)
ALLOWED = {
    "front": {"dynamic", "run", "report", "engine", "semantics"},
    "dynamic": {"run", "report", "engine"},
    "run": {"report", "engine", "semantics"},
    "report": {"engine"},
    "rules": {"engine", "semantics"},
    "engine": {"semantics"},
    "semantics": set(),
}
# modules outside the layer folders and the layer they belong to
TOP_LEVEL = {"ptlint.__main__": "front", "ptlint.testing": "front"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ALLOWED else None


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(module: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for every import of a ptlint module."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(alias.name, [], node.lineno) for alias in node.names if alias.name.split(".")[0] == "ptlint"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "ptlint":
                continue
            names = [alias.name for alias in node.names]
            # `from ptlint.engine import rule` imports the module ptlint.engine.rule
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in MODULES]
            if submodules:
                out += [(s, [], node.lineno) for s in submodules]
                names = [n for n in names if f"{target}.{n}" not in MODULES]
                if not names:
                    continue
            out.append((target, names, node.lineno))
    return out


GRAPH = {module: imports_of(module) for module in MODULES}


def test_every_module_belongs_to_a_layer():
    loose = [m for m in MODULES if m != "ptlint" and layer_of(m) is None]
    assert loose == []


def test_imports_go_one_way():
    wrong = []
    for module, imports in GRAPH.items():
        source = layer_of(module)
        for target, _, line in imports:
            goal = layer_of(target)
            if source is None or goal is None or goal == source:
                continue
            if goal not in ALLOWED[source]:
                wrong.append(f"{MODULES[module].relative_to(REPO)}:{line}: {source} imports {goal} ({target})")
    assert wrong == []


def test_no_rule_module_imports_another():
    wrong = []
    for module, imports in GRAPH.items():
        if layer_of(module) != "rules":
            continue
        family = module.split(".")[2] if module.count(".") >= 2 else None
        for target, _, line in imports:
            if layer_of(target) != "rules":
                continue
            own_helpers = target == f"ptlint.rules.{family}._helpers"
            if not own_helpers and target != "ptlint.rules":
                wrong.append(f"{MODULES[module].relative_to(REPO)}:{line}: imports {target}")
    assert wrong == []


def test_no_private_name_crosses_a_module():
    wrong = []
    for module, imports in GRAPH.items():
        for target, names, line in imports:
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                wrong.append(f"{MODULES[module].relative_to(REPO)}:{line}: {', '.join(private)} from {target}")
        tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ptlint"):
                for alias in node.names:
                    if f"{node.module}.{alias.name}" in MODULES:
                        aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                wrong.append(f"{MODULES[module].relative_to(REPO)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert wrong == []


def test_no_import_circle():
    edges = {m: {t for t, _, _ in imports if t in MODULES and t != m} for m, imports in GRAPH.items()}
    # a package's __init__ is imported on the way to any of its modules: not an edge of its own
    circles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                circles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert circles == []


def test_the_scan_sees_every_kind_of_import(tmp_path):
    """The checks above would pass vacuously if the scan missed imports: it must see one at
    module level, one in a function and one under TYPE_CHECKING."""
    where = GRAPH["ptlint.engine.rule"]
    assert any(t == "ptlint.engine.file_context" for t, _, _ in where)  # under TYPE_CHECKING
    assert any(t.startswith("ptlint.semantics") for t, _, _ in GRAPH["ptlint.engine.file_context"])
    inside = [t for t, _, line in GRAPH["ptlint.engine.file_context"] if t == "ptlint.engine.edits"]
    assert inside  # imported inside the `edits` property


# -- CONTRIBUTING.md's Layout list ---------------------------------------------------------------
def layout_entries(guide: str) -> dict[str, str]:
    """folder -> the text of its entry (continuation lines included) in the Layout list."""
    section = guide[guide.index("## Layout"):guide.index("## Adding a rule")]
    [block] = re.findall(r"```\n(.*?)```", section, re.S)
    entries: dict[str, str] = {}
    folder = None
    for line in block.splitlines():
        match = re.match(r"ptlint/(\w+)/\s+(.*)", line)
        if match:
            folder = match[1]
            entries[folder] = match[2]
        elif folder and line.startswith(" "):
            entries[folder] += " " + line.strip()
        else:
            folder = None
    return entries


def test_the_layout_list_names_every_module():
    entries = layout_entries((REPO / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert set(entries) == set(ALLOWED)  # one entry per layer folder
    missing = []
    for layer in sorted(set(ALLOWED) - {"rules"}):  # the rules are listed by pattern
        words = set(re.findall(r"\w+", entries[layer]))
        missing += [f"ptlint/{layer}/{path.name}" for path in sorted((PACKAGE / layer).glob("*.py"))
                    if path.stem != "__init__" and path.stem not in words]
    assert missing == [], "CONTRIBUTING.md's Layout list does not name these modules"


def test_the_layout_check_reads_continuation_lines():
    guide = ("## Layout\n\n```\nptlint/run/        check, fix,\n                   cache\n"
             "ptlint/report/     formats\ntests/<layer>/     tests\n```\n\n## Adding a rule\n")
    assert layout_entries(guide) == {"run": "check, fix, cache", "report": "formats"}


# -- the wheel: every folder of the rules is a package that setuptools finds -------------------
def unpackaged_folders(package: Path, include: list[str]) -> list[str]:
    """The folders under `package`/rules that the wheel would leave out: without an `__init__.py`,
    or not among the packages `setuptools.find_packages` finds with the project's `include`."""
    from setuptools import find_packages

    found = set(find_packages(where=str(package.parent), include=include))
    folders = sorted(p for p in (package / "rules").rglob("*") if p.is_dir() and p.name != "__pycache__")
    names = {folder: ".".join(folder.relative_to(package.parent).parts) for folder in folders}
    return [names[folder] for folder in folders
            if not (folder / "__init__.py").is_file() or names[folder] not in found]


def test_every_rule_folder_is_a_package_in_the_wheel():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    families = [p for p in (PACKAGE / "rules").iterdir() if p.is_dir() and p.name != "__pycache__"]
    assert len(families) >= 8  # sync, transfer, hygiene, data, numerics, compile, optim, amp, ...
    assert unpackaged_folders(PACKAGE, include) == [], "add an __init__.py: setuptools leaves these out"


def test_a_rule_folder_left_out_of_the_wheel_is_caught(tmp_path):
    package = tmp_path / "ptlint"
    for folder in (package, package / "rules", package / "rules" / "sync"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    (package / "rules" / "newfamily").mkdir()
    (package / "rules" / "newfamily" / "ptl700_new_rule.py").write_text("")
    assert unpackaged_folders(package, ["ptlint*"]) == ["ptlint.rules.newfamily"]
    (package / "rules" / "newfamily" / "__init__.py").write_text("")
    assert unpackaged_folders(package, ["ptlint*"]) == []
    # an `include` that names packages one by one misses a new family
    assert unpackaged_folders(package, ["ptlint", "ptlint.rules", "ptlint.rules.sync"]) == ["ptlint.rules.newfamily"]
