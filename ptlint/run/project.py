"""The project model for a run of `check` or `fix`: each checked file's project, the summaries
of its files, the solve, and the facts each checked file is linted with (DESIGN.md, "The project
model"; ptlint.semantics.project does the joining and solving, ptlint.semantics.summary the
summaries).

A project is the tree under the nearest pyproject.toml / setup.py / setup.cfg / .git above a
checked file (`find_root`). Its Python files, test code left out, are summarised; a summary is
kept in the project's index (one file in the cache folder, keyed by each file's size and
modification time, then by a digest of its bytes), so a later run re-summarises only what
changed. A checked file that had to be summarised is linted in the same pass, with the facts the
last run gave it (or none); only if the solve then says otherwise is it linted again. Findings
are cached by file content and by the digest of the facts they were made with.

What stays unknown: a tree of more than MAX_PROJECT_FILES files is not modelled (each file
stands alone, as with `project = false`); notebooks and standard input stand alone too.
"""

from __future__ import annotations

import ast
import marshal
import os
import re
import stat
import sys

from ptlint.run.check import FileResult, WorkerPool, check_files
from ptlint.run.config import DEFAULT_EXCLUDES, Settings
from ptlint.run.discover import Job
from ptlint.semantics.project import ProjectFacts, ProjectModel, blake2b, find_root
from ptlint.semantics.summary import names_accelerator, uses_unbound_names

MAX_PROJECT_FILES = 10_000
MAX_PROJECT_FOLDERS = 5_000  # a walk that finds no end (a home folder without a project marker): unknown
INDEX_VERSION = 2
# A cheap first guess, before the solve, of whether a project compiles code: the facts a file is
# linted with in the first pass are then right for nearly every file.
COMPILE_TEXT = re.compile(rb"torch\s*\.\s*compile\b|_dynamo|\bcompile\s*\(")
TRAINS_TEXT = re.compile(rb"\.backward\s*\(|_step\s*\(")  # a first guess of ProjectFacts.program_trains
# Other files of a project that may name a def of its Python files (a config's `_target_`, a
# notebook's call, a launch script's `python -c`, an example in the docs): the dead-code facts read
# their words. Larger files are data; more files than this leave nothing known dead.
OTHER_TEXT = (".yaml", ".yml", ".json", ".ipynb", ".toml", ".cfg", ".ini", ".sh", ".md", ".rst", ".txt", ".jsonnet")
DOC_TEXT = (".md", ".rst", ".txt")  # of those, the docs: they name defs, and call none
MAX_OTHER_SIZE = 2_000_000
MAX_OTHER_FILES = 2_000
WORD = re.compile(rb"[A-Za-z_]\w*")
ACCELERATOR_TEXT = re.compile(rb"cuda|device|\bmps\b|xpu|accelerat|lightning|deepspeed|[Ff]abric|importlib|__import__")


def check_project(jobs: list[Job], caches=None, workers: int | None = None, progress=None,
                  given: list[str] | tuple = ()) -> list[FileResult]:
    """`check_files` with each file's project facts; results in the order of `jobs`. `given`: the
    paths named on the command line (a folder without a project marker above it is the project)."""
    groups: dict[str, list[int]] = {}
    roots: dict[str, str] = {}
    for index, job in enumerate(jobs):
        if job.data is not None or not job.settings.project or job.settings.is_test_code(job.path):
            continue  # standard input and test code stand alone
        if job.path.endswith(".ipynb"):
            job.facts = _notebook_facts(job)  # a notebook is a program of its own
            continue
        folder = os.path.dirname(os.path.abspath(job.path))
        if folder not in roots:
            roots[folder] = find_root(job.path, given)
        groups.setdefault(roots[folder], []).append(index)
    position_of = {id(job): index for index, job in enumerate(jobs)}
    projects = []
    for root, members in groups.items():
        project = Project(root, [jobs[i] for i in members], caches)
        known = project.known_facts()  # the last run's, where nothing they come from changed
        if known is not None:
            for job in project.jobs:
                job.facts = known[project.key(job.path)]
            continue
        project.walk()
        if project.files is not None:
            projects.append(project)
    first: list[Job] = []
    first_owner: list[tuple[Project, str, Job | None]] = []
    for project in projects:
        for path, job in project.to_summarise():
            first.append(job)
            first_owner.append((project, path, project.jobs_by_path.get(path)))
    # one pool for both passes, forked before the summaries are read: its workers stay small
    with WorkerPool(workers, caches) as pool:
        if len(first) >= 8:
            pool.start()
        results: dict[int, FileResult] = {}
        linted_with: dict[int, ProjectFacts | None] = {}
        if first:
            for job, (project, path, original), result in zip(first, first_owner,
                                                              check_files(first, caches, workers, pool=pool)):
                project.add_summary(path, result.summary)
                if original is not None:
                    results[position_of[id(original)]] = result
                    linted_with[position_of[id(original)]] = job.facts
        for project in projects:
            facts = project.solve()
            for job in project.jobs:
                job.facts = facts.get(project.key(job.path))  # fix lints with them too
            project.save()
        second: list[Job] = []
        positions: list[int] = []
        for position, job in enumerate(jobs):
            facts = job.facts
            if position in results and (linted_with.get(position) == facts or results[position].error):
                continue
            second.append(Job(**{**vars(job), "facts": facts, "summarize": False}))
            positions.append(position)
        done = len(jobs) - len(second)
        if progress and done:
            progress(done, len(jobs))

        def advance(count: int, _total: int) -> None:
            if progress:
                progress(done + count, len(jobs))

        for position, result in zip(positions, check_files(second, caches, workers, advance, pool)):
            results[position] = result
        return [results[i]._replace(summary=None) for i in range(len(jobs))]


def _notebook_facts(job: Job) -> ProjectFacts | None:
    try:
        with open(job.path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None  # reported where the notebook is read
    return notebook_facts(job.settings, data)


# Text of a notebook that runs code it does not show: another script, a module loaded by name.
NOTEBOOK_RUNS_OTHERS = re.compile(rb"%run|!python|importlib|__import__|runpy")


def notebook_facts(settings, data: bytes) -> ProjectFacts | None:
    """A notebook is a program of its own. Where neither it (`data`, its file or its cells' code)
    nor the configuration compiles code (`torch.compile`, `torch._dynamo`, `compile = true`),
    nothing compiles its `forward`s, and the compile rules have no graph to break. Where it never
    names a device or a library that places models (`.cuda()`, `device`, accelerate, ...) and runs
    no other script, it stays on the CPU, and the sync and transfer rules have nothing to wait for.
    None (nothing known) where it may do both."""
    compiles = settings.compile if settings.compile is not None else COMPILE_TEXT.search(data) is not None
    cpu_only = not names_accelerator(data.decode("utf-8", "replace")) and not NOTEBOOK_RUNS_OTHERS.search(data) \
        and _whole(data)
    if compiles and not cpu_only:
        return None
    return ProjectFacts(compiles=compiles, cpu_only=cpu_only)


def _whole(data: bytes) -> bool:
    """The notebook's code binds every name it uses: a snippet that uses names from elsewhere (a
    kernel's earlier state, a model handed in) may run on any device."""
    from ptlint.run.notebook import NotebookError, build_module, read_notebook  # (notebooks only: json)

    try:
        tree = ast.parse(build_module(read_notebook(data, "notebook")).text)
    except (NotebookError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # reported where the notebook is read; nothing is known
    return not uses_unbound_names(tree)


class Project:
    """One project's files and their summaries, for one run."""

    def __init__(self, root: str, jobs: list[Job], caches, settings=None) -> None:
        self.root = root
        self.jobs = jobs
        self.settings = settings if settings is not None else jobs[0].settings
        self.jobs_by_path = {self.key(job.path): job for job in jobs}
        self.cache_file = self.facts_file = None
        self.cache = None
        self.failed = False  # the model failed: no facts, nothing saved
        if caches is not None:
            cache = self.cache = caches.for_settings(self.settings)
            name = blake2b(root.encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()
            self.cache_file = os.path.join(cache.directory, f"project-{name}.marshal")
            self.facts_file = os.path.join(cache.directory, f"facts-{name}.marshal")
        self._index: dict | None = None
        self.summaries: dict[str, dict] = {}
        self.stamps: dict[str, list] = {}
        self.files: list[str] | None = None
        self.others: list[str] = []  # the project's other text files (_files)
        self._other_names: set[str] | None = None
        self._caller_names: set[str] | None = None  # of those, the files that may call code (not docs)
        # path -> [mtime, size, facts, files they come from], each entry marshalled on its own: a
        # one-file check reads one entry, not the whole project's (27 ms for transformers)
        self.last = _load(self.facts_file, self.root)

    @property
    def index(self) -> dict:
        """The summaries the last run kept: path -> [mtime, size, digest, summary] (read on first use:
        for a large project it is the largest file ptlint reads)."""
        if self._index is None:
            self._index = _load(self.cache_file, self.root)
        return self._index

    def walk(self) -> None:
        self.files = self._files()

    def known_facts(self) -> dict[str, ProjectFacts] | None:
        """The facts of the last run, where they still hold: for a run over a few files (a one-file
        check, pre-commit, the editor), each file's facts while the files they come from (its
        callers elsewhere, the files on their chains) are unchanged; for a larger run, every file's
        while no file of the project changed, appeared or went. None: solve again."""
        if not self.last:
            return None
        out = {}
        if len(self.jobs) <= QUICK_FILES and len(self.jobs) < len(self.last):  # a few files of a larger project
            for job in self.jobs:
                entry = self._last(self.key(job.path))
                if entry is None or not all(_stamp(path) == stamp for path, stamp in entry[3]):
                    return None
                out[self.key(job.path)] = ProjectFacts.from_data(entry[2])
            return out
        self.walk()
        if self.files is None or set(self.files) != set(self.last):
            return None
        entries = {path: self._last(path) for path in self.files}
        for path, entry in entries.items():
            if _stamp(path) != entry[:2]:
                return None
        return {path: ProjectFacts.from_data(entry[2]) for path, entry in entries.items()}

    def _last(self, path: str) -> list | None:
        packed = self.last.get(path)
        if packed is None:
            return None
        try:
            return marshal.loads(packed)
        except (EOFError, ValueError, TypeError):
            return None

    @staticmethod
    def key(path: str) -> str:
        """A file's name in the project: its real path (a symlinked folder holds the same files)."""
        return os.path.realpath(path)

    # -- which files, and which need a summary ----------------------------------------------------
    def _files(self) -> list[str] | None:
        """The project's Python files, test code left out; None when there are too many. Its other
        text files go to `others`."""
        found: list[str] = []
        self.others = []
        settings = self.settings
        folders = 0
        for folder, subfolders, names in os.walk(os.path.realpath(self.root)):
            folders += 1
            if folders > MAX_PROJECT_FOLDERS:
                return None
            subfolders[:] = sorted(d for d in subfolders if d not in DEFAULT_EXCLUDES and not d.startswith(".")
                                   and d != "site-packages")
            for name in sorted(names):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    if not settings.is_test_code(path):
                        found.append(path)
                elif name.endswith(OTHER_TEXT):
                    self.others.append(os.path.join(folder, name))
            if len(found) > MAX_PROJECT_FILES:
                return None
        for path in self.jobs_by_path:  # a checked file is part of its project, test code or not
            if path not in found and not self.jobs_by_path[path].settings.is_test_code(path):
                found.append(path)
        return found

    def to_summarise(self) -> list[tuple[str, Job]]:
        """(path, job) for every file whose summary the index does not hold: checked files are
        linted and summarised at once; the others only summarised."""
        out = []
        bare = Settings(**{**vars(self.settings), "enabled": ()})
        self.compile_guess = self.accelerator_guess = self.trains_guess = False
        for path in self.files:
            try:
                info = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue  # a FIFO or a device named *.py: reading it could wait for ever (check reports it)
            stamp = [info.st_mtime_ns, info.st_size]
            entry = self.index.get(path)
            if entry is not None and entry[:2] == stamp:
                self.summaries[path] = entry[3]
                self.stamps[path] = entry[:3]
                continue
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
            except OSError:
                continue
            digest = blake2b(data, digest_size=16).hexdigest()
            if entry is not None and entry[2] == digest:
                self.summaries[path] = entry[3]
                self.stamps[path] = stamp + [digest]
                continue
            self.stamps[path] = stamp + [digest]
            self.compile_guess = self.compile_guess or COMPILE_TEXT.search(data) is not None
            self.accelerator_guess = self.accelerator_guess or ACCELERATOR_TEXT.search(data) is not None
            self.trains_guess = self.trains_guess or TRAINS_TEXT.search(data) is not None
            job = self.jobs_by_path.get(path)
            if job is not None:
                out.append((path, Job(**{**vars(job), "summarize": True})))
            else:
                out.append((path, Job(path, bare, summarize=True)))
        for path, job in out:  # the guesses read every changed file first
            if job.settings is not bare:
                job.facts = self.assumed(path)
        return out

    def assumed(self, path: str) -> ProjectFacts:
        """The facts a file is linted with before the solve: the last run's, else none but the
        guess of whether the project compiles."""
        entry = self._last(path)
        if entry is not None:
            return ProjectFacts.from_data(entry[2])
        setting = self.compile_setting()
        compiles = setting if setting is not None else (
            self.compile_guess or any(s.get("compiles") for s in self.summaries.values()))
        # a program that never names a device is CPU-only: the guess spares a second lint of it
        return ProjectFacts(compiles=compiles, cpu_only=not self.accelerator_guess, program_trains=self.trains_guess,
                            inference_only=not self.trains_guess)

    def add_summary(self, path: str, summary: dict | None) -> None:
        if summary is not None:
            self.summaries[path] = summary
        else:  # it does not parse: it calls nothing and defines nothing the others can see
            self.stamps.pop(path, None)

    # -- the solve and the index -------------------------------------------------------------------
    def solve(self) -> dict[str, ProjectFacts]:
        """Every file's facts. A failure of the model (a bug: summaries it cannot read) degrades
        to no facts, said on standard error once: each file is then checked on its own, and the
        check goes on."""
        try:
            model = ProjectModel(self.root, self.summaries, self.compile_setting(), self.other_names(),
                                 self._caller_names)
            self.facts = model.solve()
            self.dependencies = model.dependencies
        except Exception as exc:  # noqa: BLE001 - whatever it is, the files still get checked
            if not self.failed:
                print(f"ptlint: warning: the project model of {self.root} failed ({type(exc).__name__}: {exc}); "
                      "its files are checked without whole-program facts", file=sys.stderr)
            self.failed = True
            self.facts, self.dependencies = {}, {}
        return self.facts

    def other_names(self) -> set[str] | None:
        """The words of the project's other text files (read once); None where there are too many
        or one cannot be read, or where a Python file of the project has no summary (it does not
        parse: what it uses is unknown, so nothing is known unused)."""
        if self.files is None or any(path not in self.summaries for path in self.files):
            return None
        if self._other_names is None and len(self.others) <= MAX_OTHER_FILES:
            words: set[bytes] = set()
            callers: set[bytes] = set()  # of configs, notebooks, scripts: not docs, which call nothing
            try:
                for path in self.others:
                    info = os.stat(path)
                    # a FIFO or a device named *.json could wait for ever: not a text file
                    if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_OTHER_SIZE:
                        with open(path, "rb") as handle:
                            found = WORD.findall(handle.read())
                        words.update(found)
                        if not path.endswith(DOC_TEXT):
                            callers.update(found)
            except OSError:
                return None
            self._other_names = {word.decode("ascii") for word in words}
            self._caller_names = {word.decode("ascii") for word in callers}
        return self._other_names

    def compile_setting(self) -> bool | None:
        """`compile` of the configuration; else True where the configuration names dynamic targets
        (`ptlint explain` compiles them with TorchDynamo: the project is compiled code); else None,
        the code decides."""
        if self.settings.compile is not None:
            return self.settings.compile
        dynamic = self.settings.dynamic or {}
        return True if dynamic.get("targets") or dynamic.get("script") else None

    def save(self) -> None:
        """The summaries (with each file's stamp and digest) and the solved facts (with the stamps
        of the files each depends on), for the next run."""
        if self.cache_file is None or self.failed:
            return  # facts that failed are not kept: the next run solves again
        files, facts = {}, {}
        for path, summary in self.summaries.items():
            stamp = self.stamps.get(path)
            if stamp is None or len(stamp) < 3:
                continue
            files[path] = [stamp[0], stamp[1], stamp[2], summary]
            found = self.facts.get(path)
            if found is not None:
                depends = [[other, self.stamps[other][:2]] for other in sorted(self.dependencies.get(path, ()))
                           if other in self.stamps]
                facts[path] = marshal.dumps([stamp[0], stamp[1], found.to_data(), depends])
        self.cache.make_folders()  # a .gitignore only in a cache folder made here
        _dump(self.cache_file, self.root, files)
        _dump(self.facts_file, self.root, facts)


QUICK_FILES = 20  # a run over this many files or fewer trusts each file's facts while their sources hold


def _version() -> tuple[int, int]:
    from ptlint.semantics.summary import SUMMARY_VERSION  # the execution model, only when an index is read

    return (INDEX_VERSION, SUMMARY_VERSION)


def _stamp(path: str) -> list | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size]


def _load(path: str | None, root: str) -> dict:
    if path is None:
        return {}
    try:
        with open(path, "rb") as handle:
            data = marshal.load(handle)
        if data.get("v") != _version() or data.get("root") != root:
            return {}
        return data["files"]
    except (OSError, EOFError, ValueError, TypeError, AttributeError, KeyError):
        return {}  # a missing, old or damaged index: summarise again


def _dump(path: str, root: str, files: dict) -> None:
    """Write atomically: a reader sees the old index or the new one, never half of one."""
    temporary = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            marshal.dump({"v": _version(), "root": root, "files": files}, handle)
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:
            os.unlink(temporary)
        except OSError:
            pass


class LiveProject:
    """A project the language server keeps in memory: the summaries of its files (from the index
    a check left, else made on first use), each open document's made from its text as it is
    edited, and the facts re-solved when a document's summary changes in a way other files can
    see (not only its line numbers)."""

    def __init__(self, root: str, settings, caches=None) -> None:
        from ptlint.engine.source import SourceError, decode_source, read_bytes
        from ptlint.engine.traversal import lint_and_summarize

        self.project = Project(root, [], caches, settings)
        self.facts: dict[str, ProjectFacts] = {}
        self.project.walk()
        if self.project.files is None:
            return
        for path, _ in self.project.to_summarise():
            try:
                source = decode_source(read_bytes(path), path)
                self.project.add_summary(path, lint_and_summarize(source, [], summarize=True)[1])
            except (SourceError, RecursionError, ValueError):
                self.project.add_summary(path, None)
        self.facts = self.project.solve()
        self.project.save()

    def facts_for(self, path: str) -> ProjectFacts | None:
        if self.project.files is None:
            return None
        return self.facts.get(os.path.abspath(path)) or ProjectFacts(compiles=self._compiles())

    def _compiles(self) -> bool:
        setting = self.project.compile_setting()
        return setting if setting is not None else any(s.get("compiles") for s in self.project.summaries.values())

    def update(self, path: str, summary: dict | None) -> set[str]:
        """Take a document's new summary; the paths whose facts changed."""
        path = os.path.abspath(path)
        if summary is None or self.project.files is None:
            return set()  # a text that does not parse (mid-edit): the last summary stands
        old = self.project.summaries.get(path)
        self.project.summaries[path] = summary
        if old is not None and _shape(old) == _shape(summary):
            return set()
        before = self.facts
        self.facts = self.project.solve()
        return {p for p in set(before) | set(self.facts) if before.get(p) != self.facts.get(p)}


def _shape(summary: dict) -> tuple:
    """A summary without its line numbers: what other files' facts depend on, but where."""
    edges = tuple((e[0], repr(e[1]), e[3], e[4], e[5], e[8], e[9], e[10]) for e in summary["edges"])
    defs = tuple((key, entry[1], entry[3], entry[4]) for key, entry in summary["defs"].items())
    classes = tuple((key, repr(entry[1])) for key, entry in summary["classes"].items())
    names = summary["names"]
    tops = tuple((name, *entry) for name, entry in names["tops"].items())
    return (defs, edges, classes, repr(summary["imports"]), repr(summary["exports"]),
            summary["accelerator"], summary["compiles"], summary["dynamic"], summary["unbound"], summary["loads"],
            summary["trains"], names["roots"], tops, repr(names["lookups"]))
