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
import functools
import os
import re
from typing import TYPE_CHECKING, NamedTuple

from ptlint.semantics.nodes import parse_python
from ptlint.semantics.packing import unpacked

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

MAX_FILES = 40  # a bound for huge packages; a training script's own helpers are a handful


class ProjectFile(NamedTuple):
    path: str  # absolute
    text: str
    depth: int  # 1: imported by the file itself; 2: by one of those; ...


def import_bases(path: str, root: str | None) -> list[str]:
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
    bases = import_bases(path, root)
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
        return parse_python(text)
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
    import hashlib

    digest = hashlib.blake2b(digest_size=16)
    for found in imported_project_files(path, tree, root):
        digest.update(found.path.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(found.text.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


# -- the project model: whole-program facts --------------------------------------------------------
# Where code runs is a property of the program, not of the file (DESIGN.md, "The project model").
# Each file of the project gives a summary (ptlint.semantics.summary); `ProjectModel` joins them:
# it resolves the calls that cross files, solves where every def runs across the project, finds
# the programs each file belongs to and whether they use an accelerator, and whether anything
# compiles code. What it says of one file is that file's `ProjectFacts`, which the file's own
# execution model (ptlint.semantics.where) takes in. Anything it cannot resolve (a dynamic
# import, a name bound twice, a module it cannot find) stays unknown: no edge, no claim.

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def blake2b(data: bytes, digest_size: int):
    """hashlib's blake2b without hashlib's import of OpenSSL (3 ms of a one-file check)."""
    try:
        from _blake2 import blake2b as make
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b as make
    return make(data, digest_size=digest_size)


def marked_ancestry(folder: str) -> tuple[list[str], str | None]:
    """The folders from `folder` up to the nearest that marks a project (PROJECT_MARKERS), but
    the filesystem's root, and that marked folder (None where none does)."""
    out, current = [], folder
    while True:
        up = os.path.dirname(current)
        if any(os.path.exists(os.path.join(current, marker)) for marker in PROJECT_MARKERS):
            return out + ([current] if up != current else []), current
        if up == current:
            return out, None
        out.append(current)
        current = up


def find_root(path: str, given: list[str] | tuple = ()) -> str:
    """The project a file belongs to: the nearest folder above it holding a pyproject.toml,
    setup.py, setup.cfg or .git; where there is none, the outermost folder named on the command
    line (`given`) that holds the file, else the folder above the outermost package holding the
    file (or its own folder). A folder marked only by a setup.py that builds extensions
    (`builds_extensions_only`) is passed over: the project is what holds it, found so."""
    folder = os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else os.path.abspath(path)
    marked = marked_ancestry(folder)[1]
    weak = None  # a folder marked only by a setup.py that builds extensions, inside a bigger tree
    if marked is not None and builds_extensions_only(marked):
        weak, marked = marked, marked_ancestry(os.path.dirname(marked))[1] if os.path.dirname(marked) != marked \
            else None
    if marked is not None:
        return marked
    named = [os.path.abspath(p) for p in given if os.path.isdir(p)]
    holding = [p for p in named if folder == p or folder.startswith(p.rstrip(os.sep) + os.sep)]
    if holding:
        top = min(holding, key=len)
    else:
        top = folder
        while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.dirname(top) != top:
            top = os.path.dirname(top)
    if weak is not None and not weak.startswith(top.rstrip(os.sep) + os.sep):
        return weak  # nothing above the extension's folder holds it
    return top


EXTENSION_BUILD = re.compile(rb"cpp_extension|CUDAExtension|CppExtension|BuildExtension|ext_modules")


@functools.lru_cache(maxsize=256)
def builds_extensions_only(folder: str) -> bool:
    """The folder is marked only by a setup.py that builds C/CUDA extensions (`lib/setup.py`
    beside `csrc/`, maskrcnn-benchmark's vendored copy in a training repository): the package is
    part of the code around it, whose scripts import it, not a project of its own. A folder with a
    pyproject.toml, a setup.cfg or a .git is one."""
    if any(os.path.exists(os.path.join(folder, marker)) for marker in PROJECT_MARKERS if marker != "setup.py"):
        return False
    try:
        with open(os.path.join(folder, "setup.py"), "rb") as handle:
            return bool(EXTENSION_BUILD.search(handle.read(200_000)))
    except OSError:
        return False


# ProjectFacts.dead's names for a module's `if __name__ == "__main__":` block that never runs, and
# for a module none of whose code runs (its module-level statements too: a script set aside)
MAIN_BLOCK = "__main__"
WHOLE_MODULE = "*"
PACKAGE_METADATA = {"pyproject.toml": re.compile(rb"^\s*\[(project|tool\.poetry|build-system)\]", re.M),
                    "setup.cfg": re.compile(rb"^\s*\[(metadata|options)\]", re.M)}


@functools.lru_cache(maxsize=256)
def is_packaged(root: str) -> bool:
    """The project can be installed (a setup.py that builds more than extensions, a pyproject.toml
    with `[project]`, `[tool.poetry]` or `[build-system]`, a setup.cfg with `[metadata]` or
    `[options]`): others may import any of its modules. A tree marked only by `.git` or by a tool's
    settings (a setup.cfg of flake8 options) is a program's code, run from its own scripts."""
    if os.path.isfile(os.path.join(root, "setup.py")) and not builds_extensions_only(root):
        return True
    for name, pattern in PACKAGE_METADATA.items():
        try:
            with open(os.path.join(root, name), "rb") as handle:
                if pattern.search(handle.read(200_000)):
                    return True
        except OSError:
            continue
    return False


def outer_folders_named(root: str, parts: list[str]) -> int:
    """How many of a dotted name's first parts spell the root's own folder and those above it
    (`detector.YOLOv5.utils.general` under a root `.../detector/YOLOv5`: 2); 0 where none do."""
    folders = os.path.abspath(root).split(os.sep)
    return next((count for count in range(1, min(len(parts), len(folders)))
                 if folders[-count:] == parts[:count]), 0)


class ProjectFacts:
    """What the rest of the project says of one file: the calls of its defs in other files (each
    with the context it runs in and the evidence chain, outermost first), the defs a training
    step elsewhere calls, whether every program holding the file is seen and places nothing on an
    accelerator (`cpu_only`), and whether anything in the project compiles code (`compiles`).
    Only defs whose context or training the other files change are listed."""

    __slots__ = ("callers", "training", "cpu_only", "compiles", "outer_loops", "step_loops", "program_trains",
                 "dead", "inference_only", "host_arguments", "fixed_arguments", "epoch_steps", "_digest")

    def __init__(self, callers: dict | None = None, training=(), cpu_only: bool = False,
                 compiles: bool = True, outer_loops=(), step_loops=(), program_trains: bool = False,
                 dead=(), inference_only: bool = False, host_arguments=(), fixed_arguments=None,
                 epoch_steps=()) -> None:
        from ptlint.semantics.where import Via

        self.callers: dict[str, list[tuple[str, tuple]]] = {
            key: [(context, tuple(Via(*link) for link in via)) for context, via in sites]
            for key, sites in (callers or {}).items()}
        self.training = frozenset(training)
        self.cpu_only = cpu_only
        self.compiles = compiles
        # lines of this file's loops that call a function of another file holding the step loop
        # (`for epoch in ...: train_one_epoch(...)`): once per outer iteration, as ptlint.semantics.where
        # places what they hold outside that call
        self.outer_loops = frozenset(outer_loops)
        # lines of this file's loops that call a training step of another file (`loss =
        # train_step(model, batch)`): what else they do runs in a training step
        self.step_loops = frozenset(step_loops)
        self.program_trains = program_trains  # the project trains models: a module's forward runs in its steps
        # this file's top-level defs and classes that nothing in a training project uses: code that
        # never runs (ProjectModel.dead)
        self.dead = frozenset(dead)
        # every program holding the file is seen and trains nothing (no backward, no optimizer
        # step): an evaluation, export or demo program
        self.inference_only = inference_only
        # this file's defs that every call in the project gives host values only (`meter.update(
        # loss=loss.item())`): a tensor branch there never runs
        self.host_arguments = frozenset(host_arguments)
        # this file's top-level defs whose every call in the project passes known constants for some
        # parameters: def -> parameter -> the values it receives (a branch on them may never run)
        self.fixed_arguments: dict[str, dict[str, tuple]] = {
            key: {name: tuple(values) for name, values in params.items()}
            for key, params in (fixed_arguments or {}).items()}
        # this file's defs that only loops over epochs call, each right in the loop, some in other
        # files (a full-graph training step: once per epoch)
        self.epoch_steps = frozenset(epoch_steps)
        self._digest: str | None = None

    def callers_of(self, key: str) -> list:
        """(context, evidence) of each kept call of a def in other files; the evidence's paths as
        the user reads them (relative to the current folder where they lie below it)."""
        from ptlint.semantics.where import Via

        return [(context, tuple(Via(_display(link.path), link.line, link.why) for link in via))
                for context, via in self.callers.get(key, [])]

    def trains(self, key: str) -> bool:
        return key in self.training

    def to_data(self) -> dict:
        return {"callers": {key: [[context, [list(link) for link in via]] for context, via in sites]
                            for key, sites in sorted(self.callers.items())},
                "training": sorted(self.training), "cpu_only": self.cpu_only, "compiles": self.compiles,
                "outer_loops": sorted(self.outer_loops), "step_loops": sorted(self.step_loops),
                "program_trains": self.program_trains, "dead": sorted(self.dead),
                "inference_only": self.inference_only, "host_arguments": sorted(self.host_arguments),
                "fixed_arguments": {key: {name: list(values) for name, values in sorted(params.items())}
                                    for key, params in sorted(self.fixed_arguments.items())},
                "epoch_steps": sorted(self.epoch_steps)}

    @classmethod
    def from_data(cls, data: dict) -> "ProjectFacts":
        return cls(data.get("callers"), data.get("training", ()), data.get("cpu_only", False),
                   data.get("compiles", True), data.get("outer_loops", ()), data.get("step_loops", ()),
                   data.get("program_trains", False), data.get("dead", ()), data.get("inference_only", False),
                   data.get("host_arguments", ()), data.get("fixed_arguments"), data.get("epoch_steps", ()))

    def _key(self) -> tuple:
        return (tuple(sorted((key, tuple(sites)) for key, sites in self.callers.items())), tuple(sorted(self.training)),
                self.cpu_only, self.compiles, tuple(sorted(self.outer_loops)), tuple(sorted(self.step_loops)),
                self.program_trains, tuple(sorted(self.dead)), self.inference_only, tuple(sorted(self.host_arguments)),
                tuple(sorted((key, tuple(sorted((name, tuple(map(repr, values))) for name, values in params.items())))
                             for key, params in self.fixed_arguments.items())), tuple(sorted(self.epoch_steps)))

    def digest(self) -> str:
        """What the findings of the file depend on, for the cache key (repr of plain tuples and
        strings: the same facts give the same text in every run)."""
        if self._digest is None:
            self._digest = blake2b(repr(self._key()).encode("utf-8", "surrogatepass"), 12).hexdigest()
        return self._digest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProjectFacts) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"ProjectFacts({self.to_data()!r})"


def _received(parameters: list, calls: list, optional: list = ()) -> dict[str, list]:
    """Parameter -> the constants it receives at `calls`, for the parameters that receive only
    constants (a missing one its constant default); {} where a call cannot be matched to the
    parameters. A call is `[positional, {keyword: ...}]`, the number of its positional arguments
    where none is a constant, or None where arguments are spread; an argument is a constant
    (["c", value]), the values a parameter of the caller received (["v", [values]]), or
    unknown. `optional`: calls that may run the def or something else (a method called on an
    object of no known class): those that cannot be matched to its parameters are left out."""
    positional, defaults, variadic = parameters
    if variadic:
        return {}
    seen: dict[str, dict] = {name: {} for name in defaults}
    for arguments, required in [*((c, True) for c in calls), *((c, False) for c in optional)]:
        if arguments is None:
            return {}  # spread: anything
        given = _matched(positional, defaults, arguments)
        if given is None:
            if required:
                return {}
            continue
        for name, default in defaults.items():
            value = given.get(name, default)
            if seen[name] is None:
                continue
            if value == 0 or value[0] == "p":
                seen[name] = None
            else:
                for one in value[1] if value[0] == "v" else [value[1]]:
                    seen[name][(type(one).__name__, repr(one))] = one
    return {name: list(values.values()) for name, values in seen.items() if values}


def _matched(positional: list, defaults: dict, arguments: list | int) -> dict | None:
    """Parameter -> the argument a call gives it (a parameter it leaves out: its default), or None
    where the call cannot run the def: too many positional arguments, a keyword it does not take,
    a required parameter left out."""
    if isinstance(arguments, int):  # that many positional arguments, none a constant
        arguments = [[0] * arguments, {}]
    if len(arguments[0]) > len(positional):
        return None
    given = dict(zip(positional, arguments[0]))
    for name, value in arguments[1].items():
        if name not in defaults or name in given:
            return None
        given[name] = value
    if any(given.get(name, default) == "r" for name, default in defaults.items()):
        return None
    return given


def _handed_values(caller: tuple, arguments, fixed: dict) -> list | int | None:
    """A call's arguments (as `_Edge.arguments`, unpacked), each parameter its caller (path, key)
    hands on (["p", name]) replaced by the values that parameter receives (["v", values]) where
    those are known."""
    if not isinstance(arguments, list) or not any(
            isinstance(a, list) and a[0] == "p" for a in (*arguments[0], *arguments[1].values())):
        return arguments
    received = fixed.get(caller[0], {}).get(caller[1], {})

    def resolve(argument):
        if isinstance(argument, list) and argument[0] == "p":
            return ["v", received[argument[1]]] if argument[1] in received else 0
        return argument

    return [[resolve(a) for a in arguments[0]], {k: resolve(v) for k, v in arguments[1].items()}]


_RANK = {"o": 0, "e": 1, "c": 2, "s": 3}  # once, per outer iteration, called, per step
_INDEX = {"o": 0, "e": 1, "c": 2, "s": 3}  # the position of a base in an edge's transfer
_CONTEXT = {"o": "once", "e": "per-outer-iteration", "c": "called", "s": "per-step"}
# folders where training runs keep their artifacts, and with them copies of the code
ARTIFACT_FOLDERS = {"log", "logs", "wandb", "lightning_logs", "mlruns", "runs", "outputs", "output", "checkpoints",
                    "checkpoint", "ckpt", "ckpts", "snapshots", "snapshot"}
# folders that keep code set aside: nothing in them is the program's, but what another file imports
SET_ASIDE_FOLDERS = {"backup", "backups", "bak", "old", "archive", "archived", "unused"}
MAX_LOOKUP_DEPTH = 8  # re-exports followed through this many modules at most


class _Edge:
    __slots__ = ("path", "caller", "callee", "line", "transfer", "cold", "step_loop", "loop_line", "loop_why",
                 "name", "loop_data", "host_arguments", "arguments", "loop_steps_environment", "loop_counts_epochs",
                 "local")

    def __init__(self, path: str, raw: list, callee: tuple, local: bool) -> None:
        self.path = path
        self.caller = (path, raw[0])
        self.callee = callee
        self.line, self.transfer, self.cold, self.step_loop, self.loop_line, self.loop_why, self.name, \
            self.loop_data, self.host_arguments, self.arguments, self.loop_steps_environment, \
            self.loop_counts_epochs = raw[2:14]
        self.local = local


def live_names(pending: list[tuple], by_name: dict[str, list[tuple]], local: dict[str, set[str]]) -> set[tuple]:
    """The defs (path, name) that `pending` uses, and those their bodies use, transitively.
    `pending`: (path, name), a use in the file `path` (None: from outside the Python files); a use
    of a name the file names only bare (`local`) is of the file's own def, any other use of every
    def so named (`by_name`: a name -> (path, module_names entry) of the top-level defs and classes)."""
    live: set[tuple] = set()
    while pending:
        path, name = pending.pop()
        if path is not None and name in local.get(path, ()):
            targets = [(p, entry) for p, entry in by_name.get(name, ()) if p == path]
        else:
            targets = by_name.get(name, ())
        for target_path, entry in targets:
            if (target_path, name) in live:
                continue
            live.add((target_path, name))
            pending += [(target_path, word) for word in entry[1].split()]
    return live


class ProjectModel:
    """The project's files (absolute path -> summary) joined; see the section comment above. Paths
    in evidence are absolute here (ProjectFacts.callers_of spells them for the user)."""

    def __init__(self, root: str, summaries: dict[str, dict], compile_setting: bool | None = None,
                 other_names: set[str] | None = None, caller_names: set[str] | None = None) -> None:
        self.root = os.path.abspath(root)
        self.summaries = summaries
        self.compile_setting = compile_setting
        # words of the project's other files (configs, notebooks, scripts, docs), which may name a
        # def of its Python files (`_target_: models.Net`); None: not read, nothing is known dead
        self.other_names = other_names
        # ... of those but the docs: files that may call a def with arguments no summary shows
        self.caller_names = caller_names if caller_names is not None else other_names
        self.dirs: set[str] = set()
        for path in summaries:
            folder = os.path.dirname(path)
            while folder not in self.dirs and len(folder) >= len(self.root):
                self.dirs.add(folder)
                up = os.path.dirname(folder)
                if up == folder:
                    break
                folder = up
        self._modules: dict[tuple, str | None] = {}
        self._imports_graph: dict[str, set[str]] | None = None
        self.edges: list[_Edge] = []
        self._runners: tuple[set[tuple], set[tuple]] | None = None  # _pass_runners
        self._memo: dict[str, object] = {}  # answers asked more than once per solve (_looked_into)
        self._resolve_edges()

    # -- resolving names across files -------------------------------------------------------------
    def resolve_module(self, path: str, level: int, module: str) -> str | None:
        """The file (`.../engine.py`, a package's `__init__.py`) or namespace folder that
        `from <level dots><module> import ...` in `path` names, among the project's files."""
        key = (os.path.dirname(path), level, module)
        if key in self._modules:
            return self._modules[key]
        found = None
        parts = [p for p in module.split(".") if p]
        if level:
            base = os.path.dirname(path)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            found = self._walk_module(base, parts)
        else:
            for base in import_bases(path, self.root) + [os.path.join(self.root, "src")]:
                found = self._walk_module(base, parts)
                if found is not None:
                    break
            else:
                found = self._only_module_ending(parts) or self._nearest_module_ending(path, parts) \
                    or self._from_outer_folders(parts)
        self._modules[key] = found
        return found

    def _nearest_module_ending(self, path: str, parts: list[str]) -> str | None:
        """Of several modules whose dotted path ends with `parts`, the one that starts in the
        nearest folder above `path`: `models/Autoformer.py` importing `layers.AutoCorrelation` in a
        tree run as `python run.py` from the folder holding `models/` and `layers/` (Python puts
        the script's folder on `sys.path`), beside a copy under `Formers/FEDformer/layers/`. None
        where no candidate starts above `path`, or two start in the same folder."""
        above = os.path.dirname(path)
        starts: dict[str, list[str]] = {}
        for file in self._module_endings(parts):
            start = file.removesuffix(".py").removesuffix(os.sep + "__init__")
            for _ in parts:
                start = os.path.dirname(start)
            starts.setdefault(start, []).append(file)
        while above.startswith(self.root) and above not in starts and os.path.dirname(above) != above:
            above = os.path.dirname(above)
        found = starts.get(above, [])
        return found[0] if len(found) == 1 else None

    def _imports_an_unfound_project_module(self, path: str) -> bool:
        """`path` imports absolutely a module that no lookup finds, while the project has a folder
        or a module of its first name that no lookup finds either (`from core.function import
        train`, two `core/` folders; not `import paddle.nn` beside a `paddle/` package of the
        project, the installed package's submodule)."""
        names = self._memo.get("first-names")
        if names is None:
            names = {os.path.basename(folder) for folder in self.dirs}
            names.update(os.path.basename(file)[:-3] for file in self.summaries)
            self._memo["first-names"] = names
        return any(level == 0 and module and module.split(".")[0] in names
                   and self.resolve_module(path, 0, module.split(".")[0]) is None
                   and self.resolve_module(path, 0, module) is None
                   for level, module, _ in self.summaries[path]["imports"])

    def _only_module_ending(self, parts: list[str]) -> str | None:
        """The one module of the project whose dotted path ends with `parts` (`lib/core/function.py`
        for `core.function`): what an import finds where a script puts a folder of the project on
        `sys.path` first (`_init_paths.py`, `sys.path.insert(0, "lib")`). None where no module or
        more than one ends so (an installed package of that name, or an ambiguity: unknown)."""
        found = self._module_endings(parts)
        return found[0] if len(found) == 1 else None

    def _from_outer_folders(self, parts: list[str]) -> str | None:
        """`detector.YOLOv5.utils.general` in a project whose root is `.../detector/YOLOv5` (code
        vendored with its own `setup.cfg`, imported by the path of the repository around it): the
        module `utils/general.py` under the root, where the name's first parts are the names of the
        root's own folder and those above it."""
        count = outer_folders_named(self.root, parts)
        return self._walk_module(self.root, parts[count:]) if count else None

    def _module_endings(self, parts: list[str]) -> list[str]:
        """The modules of the project (and its folders: namespace packages) whose dotted path from
        the root ends with `parts`."""
        index = self._memo.get("endings")
        if index is None:
            index = {}
            for file in [*self.summaries, *(folder + ".py" for folder in self.dirs)]:
                pieces = os.path.relpath(file, self.root)[:-3].split(os.sep)
                if pieces[-1] == "__init__":
                    pieces.pop()
                for start in range(len(pieces)):
                    index.setdefault(tuple(pieces[start:]), []).append(file)
            self._memo["endings"] = index
        return index.get(tuple(parts), [])

    def _walk_module(self, base: str, parts: list[str]) -> str | None:
        if not parts:
            init = os.path.join(base, "__init__.py")
            return init if init in self.summaries else (base if base in self.dirs else None)
        current = base
        for index, part in enumerate(parts):
            package = os.path.join(current, part)
            if index == len(parts) - 1:
                module = package + ".py"
                if module in self.summaries:
                    return module
                init = os.path.join(package, "__init__.py")
                if init in self.summaries:
                    return init
                return package if package in self.dirs else None
            if package not in self.dirs:
                return None
            current = package
        return None

    def lookup(self, path: str, level: int, module: str, names: list[str], depth: int = 0) -> tuple | None:
        """What `names` after a module reference names: ("def", path, key) or ("class", path, key),
        following re-exports and submodules; None when unknown."""
        target = self.resolve_module(path, level, module)
        if target is None or depth > MAX_LOOKUP_DEPTH:
            return None
        return self._lookup_in(target, list(names), depth)

    def _lookup_in(self, target: str, names: list[str], depth: int) -> tuple | None:
        if not names:
            return None  # the module itself
        summary = self.summaries.get(target)
        first = names[0]
        if summary is not None:
            if first in summary["defs"] and len(names) == 1:
                return ("def", target, first)
            if first in summary["classes"]:
                if len(names) == 1:
                    return ("class", target, first)
                if len(names) == 2:
                    return self.method_of(target, first, names[1])
                return None
            if first in summary["exports"]:
                ref = summary["exports"][first]
                return self.lookup(target, ref[1], ref[2], ref[3] + names[1:], depth + 1)
        folder = os.path.dirname(target) if target.endswith("__init__.py") else target
        if summary is None or target.endswith("__init__.py"):
            sub = self._walk_module(folder, [first])
            if sub is not None and sub != target:
                return self._lookup_in(sub, names[1:], depth + 1)
        return None

    def class_of(self, path: str, ref: list | None) -> tuple | None:
        """(path, class key) a class reference of `path`'s summary names."""
        if ref is None:
            return None
        if ref[0] == "l":
            return (path, ref[1]) if ref[1] in self.summaries[path]["classes"] else None
        found = self.lookup(path, ref[1], ref[2], ref[3])
        return (found[1], found[2]) if found is not None and found[0] == "class" else None

    def method_of(self, path: str, cls: str, method: str, seen: frozenset = frozenset()) -> tuple | None:
        """("def", path, key) of `method` as the class finds it: its own, else its bases' in order."""
        if (path, cls) in seen or len(seen) > MAX_LOOKUP_DEPTH:
            return None
        summary = self.summaries.get(path)
        if summary is None or cls not in summary["classes"]:
            return None
        key = f"{cls}.{method}"
        if key in summary["defs"]:
            return ("def", path, key)
        for base in summary["classes"][cls][1]:
            found = self.class_of(path, base)
            if found is not None:
                result = self.method_of(found[0], found[1], method, seen | {(path, cls)})
                if result is not None:
                    return result
        return None

    def _resolve_edges(self) -> None:
        children: dict[tuple, list[tuple]] = {}
        for path, summary in self.summaries.items():
            for cls, (_, bases) in summary["classes"].items():
                for base in bases:
                    found = self.class_of(path, base)
                    if found is not None and found != (path, cls):
                        children.setdefault(found, []).append((path, cls))
        self.children = children
        for path, summary in self.summaries.items():
            for raw in summary["edges"]:
                ref = raw[1]
                kind = ref[0]
                if kind == "l":
                    self.edges.append(_Edge(path, raw, (path, ref[1]), True))
                    continue
                targets: list[tuple] = []
                if kind == "m":
                    found = self.lookup(path, ref[1], ref[2], ref[3])
                    if found is not None and found[0] == "def":
                        targets.append((found[1], found[2]))
                    elif found is not None:  # a class called: its `__init__` runs (a helper built per step)
                        init = self.method_of(found[1], found[2], "__init__")
                        if init is not None:
                            targets.append((init[1], init[2]))
                elif kind == "s":
                    cls, method = ref[1], ref[2]
                    found = self.method_of(path, cls, method)
                    if found is not None and found[1] != path:  # inherited from a base elsewhere
                        targets.append((found[1], found[2]))
                    # a subclass elsewhere fills the hook (a base trainer's loop calling
                    # `self.after_step()`); not where the class runs its own implementation, which
                    # would spread one subclass's callers to every other subclass
                    if found is None or self.summaries[found[1]]["defs"][found[2]][5]:
                        targets += self._overrides(path, cls, method)
                elif kind == "i":
                    found = self.class_of(path, ref[1])
                    if found is not None:
                        method = self.method_of(found[0], found[1], ref[2])
                        if method is not None:
                            targets.append((method[1], method[2]))
                for target in dict.fromkeys(targets):
                    if target[0] != path:  # calls within a file are the file's own model's
                        self.edges.append(_Edge(path, raw, target, False))

    def _overrides(self, path: str, cls: str, method: str) -> list[tuple]:
        """The defs of `method` in subclasses of `cls` in other files (a base class's loop calling
        `self.training_step()` that a subclass elsewhere defines)."""
        out = []
        for child in self._descendants(path, cls):
            key = f"{child[1]}.{method}"
            if key in self.summaries[child[0]]["defs"]:
                out.append((child[0], key))
        return out

    def _descendants(self, path: str, cls: str) -> list[tuple]:
        """The subclasses of a class, transitively, in other files; once per class."""
        memo = self.__dict__.setdefault("_descendants_memo", {})
        found = memo.get((path, cls))
        if found is None:
            found, pending, seen = [], [(path, cls)], set()
            while pending:
                for child in self.children.get(pending.pop(), ()):
                    if child not in seen:
                        seen.add(child)
                        pending.append(child)
                        if child[0] != path:
                            found.append(child)
            memo[(path, cls)] = found
        return found

    # -- where code runs across files -------------------------------------------------------------
    def _solve(self, edges: list[_Edge], files) -> tuple[dict, dict, set]:
        """Each def's base context (a letter) and whether it is part of a training step, over
        these edges: what it is, else the most frequent context among its callers, to a fixpoint;
        and the defs that are part of one because they run a step themselves."""
        incoming: dict[tuple, list[_Edge]] = {}
        outgoing: dict[tuple, list[_Edge]] = {}
        for edge in edges:
            incoming.setdefault(edge.callee, []).append(edge)
            outgoing.setdefault(edge.caller, []).append(edge)
        base: dict[tuple, str] = {}
        fixed: set[tuple] = set()
        # defs some file takes from a module it loads by name, to call where no call site shows
        # (`criterion = MODEL.get_loss`): their callers are not all known
        taken = self._taken_by_name()
        for path in files:
            for key, entry in self.summaries[path]["defs"].items():
                node = (path, key)
                if entry[1]:
                    base[node] = entry[1]
                    fixed.add(node)
                else:
                    base[node] = "o" if node in incoming else entry[3]
                    if key in taken and _RANK[base[node]] < _RANK["c"]:
                        base[node] = "c"
            base[(path, "")] = "o"
            fixed.add((path, ""))
        pending = list(base)
        while pending:
            node = pending.pop()
            for edge in outgoing.get(node, ()):
                callee = edge.callee
                if callee in fixed or callee not in base:
                    continue
                context = self._edge_context(edge, base)
                if _RANK[context] > _RANK[base[callee]]:
                    base[callee] = context
                    pending.append(callee)
        training: dict[tuple, bool] = {}
        for node in base:
            path, key = node
            training[node] = bool(key) and bool(self.summaries[path]["defs"][key][4])
        # a def run per step that itself runs a training step (`clm_step` ending in
        # `self.optimize(loss)`) is part of that step, and so are its reads before the call
        pending = [node for node, trains in training.items() if trains]
        drivers: set[tuple] = set()
        while pending:
            for edge in incoming.get(pending.pop(), ()):
                caller = edge.caller
                if caller[1] and not training.get(caller, True) and base.get(caller) == "s" \
                        and not edge.cold:
                    training[caller] = True
                    drivers.add(caller)
                    pending.append(caller)
        pending = [node for node, trains in training.items() if trains] + [(p, "") for p in files]
        for node in list(base):  # loops that run a training step start the propagation too
            if any(edge.step_loop for edge in outgoing.get(node, ())):
                pending.append(node)
        while pending:
            node = pending.pop()
            for edge in outgoing.get(node, ()):
                callee = edge.callee
                if callee not in training or training[callee]:
                    continue
                if self._training_edge(edge, base, training):
                    training[callee] = True
                    pending.append(callee)
        return base, training, drivers

    def _edge_context(self, edge: _Edge, base: dict) -> str:
        if edge.cold:
            return "o"
        caller_base = base.get(edge.caller, "o")
        context = edge.transfer[_INDEX[caller_base]]
        if context == "s" and caller_base != "s" and self._epoch_call(edge):
            return "e"  # `for epoch in ...: train_one_epoch(...)`: the callee is one pass over the data
        return context

    def _calls_a_step(self, edge: _Edge) -> bool:
        entry = self.summaries[edge.callee[0]]["defs"].get(edge.callee[1])
        return entry is not None and bool(entry[4])

    def _epoch_call(self, edge: _Edge) -> bool:
        """A call of a function that holds the step loop, or runs one that does every time it runs
        (`run()` calling another file's `train()`), from a loop that neither walks data nor trains:
        the loop is an epoch loop, or one over whole runs (a file's own model sees only the first)."""
        if not edge.loop_line:
            return False
        if edge.loop_data:
            # a loop that names its steps (`for i_iter in range(max_iter_num)`) is an outer loop
            # only around a rollout (a pass of environment steps) it runs on every iteration, and
            # not where it steps the environment itself (an evaluation rollout every N steps)
            return edge.callee in self._pass_runners()[1] and edge.transfer[0] == "s" \
                and not edge.loop_steps_environment
        return edge.callee in self._pass_runners()[0]

    def _pass_runners(self) -> tuple[set[tuple], set[tuple]]:
        """The defs that hold a loop over data or one that trains (summary `holds_step_loop`: 1 or
        2), and those that call one as often as they run themselves (not under a periodic test, not
        on an error path: `train_step` evaluating every 100 steps is no pass over the data); and of
        those, the ones that run a rollout, a loop of environment steps (2)."""
        if self._runners is None:
            callers: dict[tuple, list[tuple]] = {}
            for edge in self.edges:
                if edge.transfer == "oecs" and not edge.cold and edge.caller[1]:
                    callers.setdefault(edge.callee, []).append(edge.caller)

            def spread(runners: set[tuple]) -> set[tuple]:
                pending = list(runners)
                while pending:
                    for caller in callers.get(pending.pop(), ()):
                        if caller not in runners:
                            runners.add(caller)
                            pending.append(caller)
                return runners

            holding = [((path, key), entry[6]) for path, summary in self.summaries.items()
                       for key, entry in summary["defs"].items() if entry[6]]
            self._runners = (spread({node for node, _ in holding}),
                             spread({node for node, kind in holding if kind == 2}))
        return self._runners

    def _training_edge(self, edge: _Edge, base: dict, training: dict) -> bool:
        return self._edge_context(edge, base) == "s" and (edge.step_loop or training.get(edge.caller, False))

    def solve(self) -> dict[str, ProjectFacts]:
        """Every file's ProjectFacts."""
        files = list(self.summaries)
        base, training, drivers = self._solve(self.edges, files)
        self._base, self._training = base, training
        local_edges: dict[str, list[_Edge]] = {}
        external: dict[tuple, list[_Edge]] = {}
        outgoing_external: dict[str, list[_Edge]] = {}
        for edge in self.edges:
            if edge.local:
                local_edges.setdefault(edge.path, []).append(edge)
            else:
                external.setdefault(edge.callee, []).append(edge)
                outgoing_external.setdefault(edge.path, []).append(edge)
        # unknown code in a program: a file that loads modules by name (importlib, __import__,
        # runpy); for devices also one that star-imports. A file that uses names bound nowhere
        # may hold a device itself, but says nothing of the modules it imports (an exercise
        # with blanks beside the package it imports)
        # and one that imports a module of the project no lookup finds (`core.function` with two
        # `core/function.py`): the code it runs is unknown
        # A star import of the project's own module hides nothing: its code is summarised, and the
        # names the file uses without binding them come from there (pytorch-trpo's `from utils
        # import *`)
        unfound = {p for p in self.summaries if self._imports_an_unfound_project_module(p)}
        loads = {p for p, s in self.summaries.items() if s["loads"]} | unfound
        known_stars = {p for p, s in self.summaries.items() if s["dynamic"] and not s["loads"] and all(
            self.resolve_module(p, level, module) is not None
            for level, module, names in s["imports"] if names == ["*"])}
        dynamic = {p for p, s in self.summaries.items() if s["dynamic"]} - known_stars | unfound
        cpu_only = self._programs_without({p for p, s in self.summaries.items() if s["accelerator"]} | dynamic) \
            - {p for p, s in self.summaries.items() if s["unbound"] and p not in known_stars}
        inference_only = self._programs_without({p for p, s in self.summaries.items() if s["trains"]} | loads,
                                                scripts_only=True)
        compiles = self.compile_setting if self.compile_setting is not None else \
            any(summary["compiles"] for summary in self.summaries.values())
        # a file no program of which compiles anything (the project's other programs may): none
        # of its code is traced (LLMs-from-scratch's chapters, ElegantRL's solvers); but in a
        # project that can be installed, a module that is no script (or one other files import,
        # with a self-test) is a library's, which its users' programs may compile
        never_compiled = self._programs_without({p for p, s in self.summaries.items() if s["compiles"]} | loads,
                                                scripts_only=True) if compiles and self.compile_setting is None else set()
        if never_compiled and is_packaged(self.root):
            imported = {target for targets in self._import_graph().values() for target in targets}
            never_compiled = {p for p in never_compiled if self.summaries[p]["names"]["entry"] and p not in imported}
        self._via: dict[tuple, tuple] = {}
        incoming: dict[tuple, list[_Edge]] = {}
        for edge in self.edges:
            incoming.setdefault(edge.callee, []).append(edge)
        host_arguments = {node for node, edges in incoming.items() if all(edge.host_arguments for edge in edges)}
        # called from other files, and every call right in a loop over epochs (a full-graph step)
        epoch_steps = {node for node, edges in incoming.items()
                       if node in external and all(edge.loop_counts_epochs for edge in edges)}
        trains_anywhere = any(summary.get("trains") for summary in self.summaries.values())
        dead = self.dead() if trains_anywhere else {}
        fixed, fixed_callers = self.fixed_arguments()
        out: dict[str, ProjectFacts] = {}
        # the files whose summaries each file's facts come from: its callers in other files, and
        # the files on their chains (a one-file check trusts its facts while these are unchanged)
        self.dependencies: dict[str, set[str]] = {}
        for path in files:
            callers: dict[str, list] = {}
            trains: list[str] = []
            depends = self.dependencies[path] = set()
            if any((path, key) in external for key in self.summaries[path]["defs"]):
                local_base, local_training, _ = self._solve(local_edges.get(path, []), [path])
                for key in self.summaries[path]["defs"]:
                    node = (path, key)
                    if node not in external:
                        continue
                    if base[node] == local_base[node] and training[node] == local_training[node]:
                        continue
                    # one call per context is all the file's model needs (the most frequent decides,
                    # and its chain is the evidence)
                    kept: dict[str, _Edge] = {}
                    for edge in external[node]:
                        kept.setdefault(self._edge_context(edge, base), edge)
                    callers[key] = [(_CONTEXT[context], self._edge_via(edge)) for context, edge in kept.items()]
                    depends.update(edge.path for edge in kept.values())
                    depends.update(link[0] for _, via in callers[key] for link in via)
                    if training[node] and not local_training[node] and (node in drivers or any(
                            self._training_edge(edge, base, training) for edge in external[node])):
                        trains.append(key)
            for key, via in self._taken_by_name().items():
                if key in self.summaries[path]["defs"]:
                    callers.setdefault(key, []).append(("called", via))
                    depends.add(via[0][0])
            outgoing = outgoing_external.get(path, ())
            outer = {edge.loop_line for edge in outgoing if self._epoch_call(edge)}
            steps = {edge.loop_line for edge in outgoing if edge.loop_line and self._calls_a_step(edge)}
            # (only where it changes a finding: of the defs that training steps elsewhere call)
            host = [key for key in trains if (path, key) in host_arguments]
            depends.update(fixed_callers.get(path, ()))
            epochs = [key for key in self.summaries[path]["defs"] if (path, key) in epoch_steps]
            depends.update(edge.path for key in epochs for edge in external[(path, key)])
            out[path] = ProjectFacts(callers, trains, path in cpu_only, compiles and path not in never_compiled,
                                     outer, steps, trains_anywhere,
                                     dead.get(path, ()), path in inference_only, host, fixed.get(path), epochs)
        return out

    def _taken_by_name(self) -> dict[str, tuple]:
        """Def name -> the evidence of a file that takes it from a module it loads by name
        (`criterion = MODEL.get_loss`, summary `taken`): called where no call site shows it."""
        if "taken" not in self._memo:
            found: dict[str, tuple] = {}
            for path, summary in self.summaries.items():
                for name, line in summary.get("taken", ()):
                    found.setdefault(name, ((path, line, f"takes `{name}` from a module it loads by name"),))
            self._memo["taken"] = found
        return self._memo["taken"]

    # -- code that never runs ----------------------------------------------------------------------
    def dead(self) -> dict[str, set[str]]:
        """Per file, the top-level defs and classes no code of the project uses, by name: not the
        module-level code of any file (a script's `main()` call, a registry, `__all__`), not a
        decorated def (a decorator may register it), not a def used by one that is used, not a
        word of the project's other files. A training program's code nobody uses never runs; a
        library's would run in its users' programs, so this is asked only where the project
        trains and holds a program (a file with `if __name__ == "__main__":` or a loop at top
        level), and only of a program's entry (a script: what its own code never calls, no other
        file names either) and of modules another file imports (one nothing imports that is no
        entry is a library's). Nothing is dead where a file looks names up in a way that cannot be
        followed."""
        if self.other_names is None or not any(s["names"]["entry"] for s in self.summaries.values()):
            return {}  # no program here, only a library: its users are unknown
        importers: dict[str, set[str]] = {}  # a module some file imports -> the files importing it
        for path, summary in self.summaries.items():
            for level, module, names in summary["imports"]:
                for dotted in (module, *(f"{module}.{name}".strip(".") for name in names)):
                    importers.setdefault(self.resolve_module(path, level, dotted), set()).add(path)
        imported = set(importers)  # the parts of a program
        unreached = set(self._unreached_modules(importers))
        out: dict[str, set[str]] = {path: {*self.summaries[path]["names"]["tops"], WHOLE_MODULE} for path in unreached}
        for path, found in self._unused_methods(imported).items():
            out.setdefault(path, set()).update(found)  # (a method is reached by its name, whatever a module's is)
        for path in self._self_tests(importers):
            out.setdefault(path, set()).add(MAIN_BLOCK)
        looked = self._looked_into()
        if looked is None:
            return out
        all_live: set[str] = set(looked)  # modules whose defs are all taken as used
        # a module nothing imports, no program: a library's (its users import it), in a project
        # that can be installed or whose docs name the module; else code that nothing runs
        packaged = is_packaged(self.root)
        for path, summary in self.summaries.items():
            if path not in imported and not summary["names"]["entry"] and (packaged or self._named_in_text(path)) \
                    or os.path.basename(path) == "__init__.py":
                all_live.add(path)  # a library's module (its users call it), a package's front
        by_name: dict[str, list[tuple]] = {}
        local: dict[str, set[str]] = {}
        pending: list[tuple] = [(None, word) for word in self.caller_names]  # (docs name defs, and run none)
        for path, summary in self.summaries.items():
            names = summary["names"]
            local[path] = set(names.get("local", "").split())
            pending += [(path, word) for word in names["roots"].split()]
            for name, entry in names["tops"].items():
                by_name.setdefault(name, []).append((path, entry))
                if entry[0] or path in all_live:  # decorated (a decorator may register it), or kept whole
                    pending.append((path, name))
        live = live_names(pending, by_name, local)
        for path, summary in self.summaries.items():
            if path in all_live or path in unreached:
                continue
            found = {name for name in summary["names"]["tops"] if (path, name) not in live and not name.startswith("__")}
            if found:
                out.setdefault(path, set()).update(found)
        return out

    def _self_tests(self, importers: dict[str, set[str]]) -> list[str]:
        """The modules whose `if __name__ == "__main__":` block is a self-test that the project's
        programs never run: a module other files of the project import (a model's or a network's
        module, `library/unet.py` ending in a benchmark on random inputs), whose name no launch
        script, config or doc of the project spells (`python train.py` in a README keeps
        train.py's block a program's start, whoever imports train.py)."""
        return [path for path, summary in self.summaries.items()
                if summary["names"].get("main") and importers.get(path, set()) - {path}
                and not self._named_in_text(path)]

    def _named_in_text(self, path: str) -> bool:
        """A script, config or doc of the project spells the module's name (`python net.py`)."""
        return os.path.basename(path)[:-3] in self.other_names

    def _unreached_modules(self, importers: dict[str, set[str]]) -> list[str]:
        """The modules of a program no code reaches, even where names are looked up by computed
        names: a private module (`_utils.py`) nothing imports, not an entry (a library's users
        import its public modules; a program's own code would import it), and a snapshot of the
        code kept with a run's artifacts (`log/exp1/model.py`, which a training script copies
        beside its checkpoints): in a folder named for artifacts, a module whose file name the
        project also has outside that folder, that no file outside it imports, and no entry; and
        any module, a script too, of a folder of code set aside (`backup/`, `old/`) that no file
        outside that folder imports."""
        outside: dict[str, set[str]] = {}  # artifact folder -> file names outside it
        found = []
        for path, summary in self.summaries.items():
            aside = self._folder_named(path, SET_ASIDE_FOLDERS)
            if aside is not None:
                if all(p.startswith(aside) for p in importers.get(path, ())):
                    found.append(path)
                continue
            if summary["names"]["entry"]:
                continue
            name = os.path.basename(path)
            if name.startswith("_") and not name.startswith("__") and path not in importers:
                found.append(path)
                continue
            artifacts = self._folder_named(path, ARTIFACT_FOLDERS)
            if artifacts is None:
                continue
            if artifacts not in outside:
                outside[artifacts] = {os.path.basename(p) for p in self.summaries if not p.startswith(artifacts)}
            if name in outside[artifacts] and all(p.startswith(artifacts) for p in importers.get(path, ())):
                found.append(path)
        return found

    def _folder_named(self, path: str, names: set[str]) -> str | None:
        """The outermost folder above `path`, inside the project, that one of `names` names (with
        a trailing separator), None where none does."""
        parts = os.path.relpath(path, self.root).split(os.sep)[:-1]
        index = next((i for i, part in enumerate(parts) if part.lower() in names), None)
        return None if index is None else os.path.join(self.root, *parts[:index + 1]) + os.sep

    def _looked_into(self) -> set[str] | None:
        """The files whose names some file looks up by a computed name (`getattr(models, name)`: the
        module, or every module of a package; its own `globals()` or a def of its own looked into:
        the file itself); None where a lookup may reach anything (`eval` of any module, an import
        by name, a module that cannot be found)."""
        if "looked" not in self._memo:
            self._memo["looked"] = self._compute_looked_into()
        return self._memo["looked"]

    def _compute_looked_into(self) -> set[str] | None:
        looked: set[str] = set()
        for path, summary in self.summaries.items():
            for lookup in summary["names"]["lookups"]:
                if lookup == "*":
                    return None
                if lookup == "." or lookup[0] not in ("m", "n"):
                    looked.add(path)
                    continue
                dotted = ".".join([lookup[2], *lookup[3]]).strip(".")
                target = self.resolve_module(path, lookup[1], dotted)
                if target is None and lookup[0] == "n" and self.resolve_module(path, lookup[1], lookup[2]) is not None:
                    continue  # a def imported from a module of the project: its name is used (summary `_evaluated`)
                if target is None and not lookup[1] and self._module_endings(dotted.split(".")[:1]):
                    continue  # the project's package of that name has no such module: an import that fails
                if target is None:
                    return None  # a module the lookup cannot pin down (one a script puts on sys.path?)
                looked.add(target)
                folder = os.path.dirname(target) if target.endswith("__init__.py") else target
                looked.update(p for p in self.summaries if p.startswith(folder + os.sep))
        return looked

    # -- arguments every call passes -----------------------------------------------------------------
    def fixed_arguments(self) -> tuple[dict[str, dict[str, dict[str, list]]], dict[str, set[str]]]:
        """Per file, its top-level functions and the methods of its top-level classes whose every
        call in the project passes a known constant for some parameters (or leaves them at a
        constant default, or hands on a parameter of its own whose values are known): def ->
        parameter -> the values (`compute_top_k(logits, labels, k=5, reduction="none")` at both
        calls: a `reduction == "mean"` branch there never runs); and per file, the files of those
        calls. Asked only where the project holds a program (a library's users call its functions
        with anything), of defs that are not decorated, not used otherwise than called (handed on,
        stored: `_passed`), not named in a config file, in no module looked into by computed
        names, called with no spread arguments; of methods only where `_method_callers_known`."""
        if self.caller_names is None or not any(summary["names"]["entry"] for summary in self.summaries.values()):
            return {}, {}  # other files unread (or a file does not parse), or no program: callers unknown
        looked = self._looked_into()
        if looked is None:
            return {}, {}
        passed: set[str] = set(self.caller_names)
        for summary in self.summaries.values():
            passed.update(summary.get("passed", ()))
        methods_known = not any(summary.get("attribute_lookup", True) is True for summary in self.summaries.values())
        looked_up = self._classes_looking_themselves_up() if methods_known else None
        incoming: dict[tuple, list[_Edge]] = {}
        for edge in self.edges:
            incoming.setdefault(edge.callee, []).append(edge)
        candidates = []
        for (path, key), edges in incoming.items():
            summary = self.summaries.get(path)
            entry = summary["defs"].get(key) if summary is not None else None
            owner, _, method = key.rpartition(".")
            top = summary["names"]["tops"].get(key.split(".")[0]) if summary is not None else None
            if entry is None or len(entry) < 8 or entry[7] is None or top is None or top[0] or key in passed \
                    or path in looked or owner and not self._method_callers_known(path, owner, method, looked_up):
                continue
            candidates.append((path, key, unpacked(entry[7]), edges, method if owner else None))
        wanted = {method for *_, method in candidates if method is not None}
        unresolved: dict[str, list] = {}  # method name -> argument lists of calls on unknown objects
        for summary in self.summaries.values() if wanted else ():
            for name, entry in unpacked(summary.get("method_calls") or "{}").items():
                if name in wanted:
                    unresolved.setdefault(name, []).extend(entry)
        candidates = [(path, key, parameters, [(edge.caller, unpacked(edge.arguments)) for edge in edges],
                       unresolved.get(method, []) if method else [], edges)
                      for path, key, parameters, edges, method in candidates]
        fixed: dict[str, dict[str, dict[str, list]]] = {}
        for _ in range(4):  # values handed on from caller to callee (`sample` -> `get_time_steps`): a few hops
            found: dict[str, dict[str, dict[str, list]]] = {}
            for path, key, parameters, calls_made, optional, _ in candidates:
                calls = [_handed_values(caller, arguments, fixed) for caller, arguments in calls_made]
                values = _received(parameters, calls, optional)
                if values:
                    found.setdefault(path, {})[key] = values
            if found == fixed:
                break
            fixed = found
        callers: dict[str, set[str]] = {}
        for path, key, _, _, _, edges in candidates:
            if key in fixed.get(path, {}):
                callers.setdefault(path, set()).update(edge.path for edge in edges)
        return fixed, callers

    def _method_callers_known(self, path: str, cls: str, method: str, looked_up: set | None) -> bool:
        """Every call of `cls.method` is one a summary shows: no file reaches methods by computed
        names (`looked_up` None) or the class's own by `getattr(self, name)`; the class derives from
        `object` or `nn.Module` only, through the project's classes (no framework calls its
        hooks); not `forward` or a dunder method, which `model(x)`, `len(x)` and such run."""
        return looked_up is not None and (path, cls) not in looked_up and method != "forward" \
            and not method.startswith("__") and self._plain_class(path, cls, frozenset())

    def _unused_methods(self, imported: set[str]) -> dict[str, set[str]]:
        """Per file of a program (a module another file `imported`, or a program's entry), the
        methods (`Class.method`) whose name no file of the project uses: not as an attribute, a
        name or a string, in no other text file; of classes whose bases are `object`, `nn.Module`
        or such classes of the project (summary `_methods`). Nothing where some file reaches
        attributes by computed names (`getattr(obj, name)(...)`); none of a class whose methods
        look up their own instance so (`getattr(self, name)`), nor of its bases and subclasses. A module nothing imports that is no
        program's entry is a library's: its users may call any method."""
        if any(summary.get("attribute_lookup", True) is True for summary in self.summaries.values()):
            return {}
        looked_up = self._classes_looking_themselves_up()
        words: set[str] = set(self.caller_names or ())
        for summary in self.summaries.values():
            names = summary["names"]
            words.update(summary["attributes"].split())
            words.update(names["roots"].split())
            for _, used in names["tops"].values():
                words.update(used.split())
        out: dict[str, set[str]] = {}
        for path, summary in self.summaries.items():
            if path not in imported and not summary["names"]["entry"]:
                continue
            for cls, methods in summary["methods"].items():
                unused = [name for name in methods if name not in words]
                if unused and (path, cls) not in looked_up and self._plain_class(path, cls, frozenset()):
                    out.setdefault(path, set()).update(f"{cls}.{name}" for name in unused)
        return out

    def _classes_looking_themselves_up(self) -> set[tuple]:
        """(path, class) of the classes whose instances a `getattr(self, name)` may look into: the
        class that holds it, its bases through the project, and its subclasses."""
        out: set[tuple] = set()
        for path, summary in self.summaries.items():
            for cls in summary.get("attribute_lookup") or ():
                pending = [(path, cls)]
                while pending:
                    node = pending.pop()
                    if node in out:
                        continue
                    out.add(node)
                    owner = self.summaries.get(node[0])
                    if owner is not None and node[1] in owner["classes"]:
                        pending += [found for found in (self.class_of(node[0], base) for base in
                                                        owner["classes"][node[1]][1] if base is not None)
                                    if found is not None]
                pending = [(path, cls)]
                while pending:  # and its subclasses, in any file
                    for child in self.children.get(pending.pop(), ()):
                        if child not in out:
                            out.add(child)
                            pending.append(child)
        return out

    def _plain_class(self, path: str, cls: str, seen: frozenset) -> bool:
        """The class and its bases, through the project, derive from `object` or `nn.Module` only."""
        summary = self.summaries.get(path)
        if summary is None or cls not in summary.get("methods", {}) or (path, cls) in seen \
                or len(seen) > MAX_LOOKUP_DEPTH:
            return False
        for base in summary["classes"][cls][1]:
            if base is None:
                continue  # `object` or `nn.Module` (a class of `methods` has no other outside base)
            found = self.class_of(path, base)
            if found is None or not self._plain_class(found[0], found[1], seen | {(path, cls)}):
                return False
        return True

    # -- evidence ----------------------------------------------------------------------------------
    def _edge_via(self, edge: _Edge, visiting: frozenset = frozenset()) -> tuple:
        """Why a call runs where it does, then the call itself: outermost first."""
        return (self._site_via(edge, visiting) + ((edge.path, edge.line, f"calls `{edge.name}`"),))[-8:]

    def _site_via(self, edge: _Edge, visiting: frozenset) -> tuple:
        context = self._edge_context(edge, self._base)
        caller_base = self._base.get(edge.caller, "o")
        if edge.loop_line and context != caller_base:
            return ((edge.path, edge.loop_line, edge.loop_why),)
        if not edge.caller[1]:
            return ()
        return self._node_via(edge.caller, visiting)

    def _node_via(self, node: tuple, visiting: frozenset) -> tuple:
        if node in self._via:
            return self._via[node]
        if node in visiting:
            return ()
        path, key = node
        entry = self.summaries[path]["defs"].get(key)
        if entry is None:
            return ()
        if entry[1]:
            via: tuple = ((path, entry[0], entry[2]),)
        else:
            via = ()
            want = self._base.get(node)
            for edge in self._incoming().get(node, ()):
                if self._edge_context(edge, self._base) == want:
                    via = self._edge_via(edge, visiting | {node})
                    break
        self._via[node] = via
        return via

    def _incoming(self) -> dict:
        if not hasattr(self, "_incoming_edges"):
            table: dict[tuple, list[_Edge]] = {}
            for edge in sorted(self.edges, key=lambda e: not e.local):  # the file's own calls first
                table.setdefault(edge.callee, []).append(edge)
            self._incoming_edges = table
        return self._incoming_edges

    # -- programs and accelerators -----------------------------------------------------------------
    def imports_of(self, path: str) -> set[str]:
        """The project files `path` imports (the modules, and submodules named in `from ... import`)."""
        out = set()
        for level, module, names in self.summaries[path]["imports"]:
            target = self.resolve_module(path, level, module)
            if target is not None and target in self.summaries:
                out.add(target)
            folder = None
            if target is not None:
                folder = os.path.dirname(target) if target.endswith("__init__.py") else \
                    (target if target in self.dirs else None)
            if folder is not None:
                for name in names:
                    sub = self._walk_module(folder, [name]) if name != "*" else None
                    if sub is not None and sub in self.summaries:
                        out.add(sub)
        out.discard(path)
        return out

    def _programs_without(self, evidence: set[str], scripts_only: bool = False) -> set[str]:
        """Files every program of which is seen and holds none of the `evidence` files (one that
        places tensors on an accelerator; one that trains). A program is an entry (a file no
        other file imports; each file of an import cycle no entry reaches is one too) with what
        it imports, transitively. The caller counts a file that may import modules by name at
        run time as evidence (what it loads is unknown). `scripts_only`: an entry that is not a
        script (no `__main__` block, no top-level loop: a library module nothing here imports)
        is a program not seen, and counts as evidence."""
        graph = self._import_graph()
        importers: dict[str, set[str]] = {path: set() for path in graph}
        for path, targets in graph.items():
            for target in targets:
                importers[target].add(path)
        reaching = set(evidence)  # files whose programs include an evidence file below them
        pending = list(evidence)
        while pending:
            for importer in importers[pending.pop()]:
                if importer not in reaching:
                    reaching.add(importer)
                    pending.append(importer)
        entries = [p for p in graph if not importers[p]]
        if scripts_only:
            unseen = {p for p in graph if not self.summaries[p]["names"]["entry"]}
            reaching |= {p for p in entries if p in unseen}
        seen: set[str] = set()
        accelerated: set[str] = set()

        def spread(starts, into):
            stack = list(starts)
            while stack:
                current = stack.pop()
                if current in into:
                    continue
                into.add(current)
                stack.extend(graph[current])

        spread([e for e in entries if e in reaching], accelerated)
        spread(entries, seen)
        for path in graph:  # cycles no entry reaches: each file is an entry of its own
            if path not in seen:
                spread([path], seen)
                if path in reaching or scripts_only and path in unseen:
                    spread([path], accelerated)
        return set(graph) - accelerated

    def _import_graph(self) -> dict[str, set[str]]:
        if self._imports_graph is None:
            self._imports_graph = {path: self.imports_of(path) for path in self.summaries}
        return self._imports_graph


def _display(path: str) -> str:
    """A path in evidence: relative to the current folder where it lies below it, else absolute."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative
