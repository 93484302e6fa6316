"""The house rules of ptlint's layout (README, "Layout"): imports go one way, no circles, no rule
module imports another, no module imports another module's private names.

Every import counts: at module level, inside functions and under `TYPE_CHECKING`; an import
that only closes a circle at run time is still a circle for a reader.
"""

from __future__ import annotations

import ast
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
