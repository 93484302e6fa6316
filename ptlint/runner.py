"""Finding the files, and checking them: in parallel, through the content-hash cache."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterator

from .cache import Cache
from .config import DEFAULT_EXCLUDES, Settings
from .engine import FileResult, lint_source
from .project import dependency_digest
from .registry import all_rules
from .source import SourceError, read_source


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)  # display paths, as the user gave them
    errors: list[str] = field(default_factory=list)  # one-line messages: unreadable, loops
    missing: list[str] = field(default_factory=list)  # one-line messages for named paths that do not exist


def discover(paths: list[str], settings: Settings) -> Discovery:
    found = Discovery()
    seen: set[str] = set()

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            found.files.append(path)

    for given in paths:
        if not os.path.lexists(given):
            found.missing.append(f"{given}: no such file or directory")
            continue
        if not os.path.exists(given):  # named by the user, so as missing as a path that never was
            found.missing.append(f"{given}: broken symbolic link")
            continue
        if os.path.isdir(given):
            for path in _walk(given, settings, found.errors):
                add(path)
        elif not settings.matches_exclude(given):
            # Explicit files (pre-commit passes them) honour the configured exclude, not the defaults.
            add(given)
    return found


def _walk(top: str, settings: Settings, errors: list[str]) -> Iterator[str]:
    """Recursive *.py below `top`, sorted, following directory symlinks once (loops reported)."""
    visited: set[str] = set()
    stack = [top]
    while stack:
        directory = stack.pop()
        real = os.path.realpath(directory)
        if real in visited:
            errors.append(f"{directory}: symbolic link loop, skipped")
            continue
        visited.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            errors.append(f"{directory}: cannot list folder: {exc.strerror or exc}")
            continue
        subdirs = []
        for entry in entries:
            path = entry.path if directory != "." else entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name in DEFAULT_EXCLUDES or settings.matches_exclude(path):
                    continue
                if entry.is_symlink() and _is_ancestor(os.path.realpath(path), real):
                    errors.append(f"{path}: symbolic link loop, skipped")
                    continue
                subdirs.append(path)
            elif entry.name.endswith(".py"):
                if entry.is_symlink() and not os.path.exists(path):
                    errors.append(f"{path}: broken symbolic link")
                    continue
                if not settings.matches_exclude(path):
                    yield path
        stack.extend(reversed(subdirs))


def _is_ancestor(candidate: str, path: str) -> bool:
    return path == candidate or path.startswith(candidate.rstrip(os.sep) + os.sep)


# -- checking ----------------------------------------------------------------------------------

def check_file(path: str, settings: Settings, cache: Cache | None = None) -> FileResult:
    """Findings for one file; a file that cannot be read or decoded gives a one-line error."""
    try:
        source = read_source(path)
    except SourceError as exc:
        return FileResult(path, error=f"{path}: {exc}")
    codes = settings.codes_for(path)
    rules = all_rules()
    rule_classes = [rules[code] for code in codes if code in rules]
    key = None
    if cache is not None:
        dependencies = dependency_digest(source, rule_classes, settings.root)
        key = cache.key(source.text, codes + (("test-code",) if settings.is_test_code(path) else ()), dependencies)
        cached = cache.get(key, path)
        if cached is not None:
            return FileResult(path, cached)
    try:
        findings = lint_source(source, rule_classes, settings.is_test_code(path), settings.root)
    except RecursionError:
        return FileResult(path, error=f"{path}: code nested too deeply to analyse, skipped")
    except Exception as exc:  # a bug in a rule must not cost the user the other files
        return FileResult(path, error=f"{path}: internal error while checking: {type(exc).__name__}: {exc}")
    if cache is not None and key is not None:
        cache.put(key, findings)
    return FileResult(path, findings)


_WORKER_STATE: tuple[Settings, Cache | None] | None = None


def _init_worker(settings: Settings, cache: Cache | None) -> None:
    global _WORKER_STATE
    _WORKER_STATE = (settings, cache)


def _check_in_worker(path: str) -> FileResult:
    assert _WORKER_STATE is not None
    return check_file(path, *_WORKER_STATE)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_files(files: list[str], settings: Settings, cache: Cache | None = None, jobs: int | None = None,
                progress: Callable[[int, int], None] | None = None) -> list[FileResult]:
    """Check every file, in worker processes when that pays; results in the order of `files`."""
    jobs = jobs or default_jobs()
    all_rules()  # import the rule modules before forking
    results: list[FileResult] = []
    if jobs <= 1 or len(files) < 8:
        for index, path in enumerate(files):
            results.append(check_file(path, settings, cache))
            if progress:
                progress(index + 1, len(files))
        return results
    import multiprocessing

    method = "fork" if sys.platform.startswith("linux") else None
    context = multiprocessing.get_context(method)
    chunk = max(1, min(32, len(files) // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_init_worker,
                             initargs=(settings, cache)) as pool:
        for index, result in enumerate(pool.map(_check_in_worker, files, chunksize=chunk)):
            results.append(result)
            if progress:
                progress(index + 1, len(files))
    return results
