"""The modules of the user's own project that a file imports, found and read — never imported.

A few rules answer a question about a whole training script ("is TF32 enabled anywhere?") where
the answer may sit in a module the script imports (`from utils import setup_cuda`). This module
resolves a file's imports the way Python would for a project checked out on disk:

- relative imports (`from .models import Net`, `from .. import utils`) from the file's package;
- absolute imports whose top-level name is a module or package found in the file's folder, in
  the folder above the outermost package that holds the file, or in the project root (the
  folder of the configuration file): `import models`, `from mypkg.train import utils`.

Anything not found there (torch, numpy, the standard library) is not the project's. Imports are
followed transitively, breadth first, up to `MAX_FILES` files, and each file is read once.

Findings that depend on these files must not be answered from the content-hash cache when one
of them changes: `dependency_digest` gives the runner a digest of every file read (and of the
resolution itself), which goes into the cache key of the files where such rules run.
"""

from __future__ import annotations

import ast
import hashlib
import os
import warnings
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

MAX_FILES = 40  # a bound for huge packages; a training script's own helpers are a handful


class ProjectFile(NamedTuple):
    path: str  # absolute
    text: str
    depth: int  # 1: imported by the file itself; 2: by one of those; ...


def _bases(path: str, root: str | None) -> list[str]:
    """Folders where the file's absolute imports can start: its own folder, the folder above the
    outermost package that holds it, and the project root."""
    folder = os.path.dirname(os.path.abspath(path))
    out = [folder]
    top = folder
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
        top = os.path.dirname(top)
    out.append(top)
    if root is not None:
        out.append(os.path.abspath(root))
    return list(dict.fromkeys(out))


def _module_files(base: str, dotted: str) -> list[str]:
    """Files Python runs for `import dotted` from `base`: each package's `__init__.py` on the way
    and the module itself; [] when the top-level name is not in `base`."""
    parts = dotted.split(".")
    found = []
    folder = base
    for index, part in enumerate(parts):
        package = os.path.join(folder, part)
        module = package + ".py"
        if os.path.isdir(package):
            init = os.path.join(package, "__init__.py")
            if os.path.isfile(init):
                found.append(init)
            folder = package
        elif os.path.isfile(module) and index == len(parts) - 1:
            found.append(module)
            return found
        else:
            return found if index else []
    return found


def _imports(tree: ast.Module, path: str, root: str | None) -> list[str]:
    """Project files one module's imports reach (module level and inside functions)."""
    bases = _bases(path, root)
    folder = os.path.dirname(os.path.abspath(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                for base in bases:
                    files = _module_files(base, alias.name)
                    if files:
                        found += files
                        break
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                start = folder
                for _ in range(node.level - 1):
                    start = os.path.dirname(start)
                candidates = [start]
            else:
                candidates = bases
            for base in candidates:
                module = node.module or ""
                files = _module_files(base, module) if module else []
                package = os.path.join(base, *module.split(".")) if module else base
                # `from pkg import name`: name may be a submodule
                for alias in node.names:
                    files += [f for f in _module_files(package, alias.name) if alias.name != "*"]
                if files or node.level:
                    found += files
                    break
    return found


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return data.decode("utf-8", errors="replace")
    except OSError:
        return None


def _parse(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def imported_project_files(path: str, tree: ast.Module, root: str | None) -> list[ProjectFile]:
    """The project modules `path` imports, directly or through each other, breadth first.
    None of them is imported or run."""
    if path.startswith("<") or not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        return []  # text without a place on disk (`check_text`): no project to look into
    own = os.path.abspath(path)
    seen = {own}
    out: list[ProjectFile] = []
    pending = [(own, tree, 0)]
    while pending and len(out) < MAX_FILES:
        current, current_tree, depth = pending.pop(0)
        for found in _imports(current_tree, current, root):
            found = os.path.abspath(found)
            if found in seen or len(out) >= MAX_FILES:
                continue
            seen.add(found)
            text = _read(found)
            if text is None:
                continue
            out.append(ProjectFile(found, text, depth + 1))
            parsed = _parse(text)
            if parsed is not None:
                pending.append((found, parsed, depth + 1))
    return out


def imported_sources(ctx: "FileFacts") -> list[ProjectFile]:
    """`imported_project_files` for the file being checked, computed once per file."""
    key = "project-imports"
    if key not in ctx.memo:
        ctx.memo[key] = imported_project_files(ctx.path, ctx.tree, ctx.project_root)
    return ctx.memo[key]


def imports_digest(path: str, text: str, root: str | None) -> str:
    """A digest of the project files `text` (the file at `path`) imports, transitively, and of
    where they were found: what a rule that reads imported modules saw. "" when it does not parse."""
    tree = _parse(text)
    if tree is None:
        return ""
    digest = hashlib.blake2b(digest_size=16)
    for found in imported_project_files(path, tree, root):
        digest.update(found.path.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(found.text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()
