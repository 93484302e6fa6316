"""Checking the files: each with its own settings, in parallel, through the cache."""

from __future__ import annotations

import os
import sys
from typing import Callable, NamedTuple

from ptlint.engine.finding import Finding
from ptlint.engine.source import SourceError, decode_source, is_notebook, read_bytes
from ptlint.run.config import Settings
from ptlint.run.discover import Job


class FileResult(NamedTuple):
    """Everything one file produced: findings, or a one-line error when it could not be checked."""

    path: str
    findings: list[Finding] = []  # never changed in place: a result is made whole
    error: str | None = None
    summary: dict | None = None  # for the project model, when the job asked for it (Job.summarize)


def _dependencies(source, codes: tuple[str, ...], settings: Settings) -> str:
    """The digest of the project modules this file's findings depend on: only when an enabled
    rule reads imports (the off-by-default project hints), else nothing to compute."""
    from ptlint.engine.registry import rule_classes_for, rule_index

    index = rule_index()
    if not any(index[code].reads_imports for code in codes if code in index):
        return ""
    from ptlint.run.cache import dependency_digest

    return dependency_digest(source, rule_classes_for(codes, source.text), settings.root)


def check_file(job: Job, caches=None) -> FileResult:
    """Findings for one file or notebook; one that cannot be read or decoded gives a one-line error."""
    path, settings = job.path, job.settings
    try:
        data = job.data if job.data is not None else read_bytes(path)
    except SourceError as exc:
        return FileResult(path, error=f"{path}: {exc}")
    notebook = is_notebook(path)
    codes = settings.codes_for(path)
    test_code = settings.is_test_code(path)
    cache = caches.for_settings(settings) if caches is not None and codes else None  # a summary alone: no entry
    key = None
    from ptlint.engine.registry import rule_classes_for

    try:
        source = None if notebook else decode_source(data, path)
        summary = None
        if cache is not None:
            dependencies = _dependencies(source, codes, settings) if source is not None else ""
            if job.facts is not None:
                dependencies += "project:" + job.facts.digest()
            key = cache.key(data, codes + (("test-code",) if test_code else ())
                            + (("notebook",) if notebook else ()), dependencies)
            cached = cache.get(key, path) if not job.summarize else None
            if cached is not None:
                return FileResult(path, cached)
        if notebook:
            from ptlint.run.notebook import check_notebook, read_notebook

            findings = check_notebook(read_notebook(data, path), rule_classes_for(codes), test_code, codes,
                                      project=job.facts)
        else:
            from ptlint.engine.traversal import lint_and_summarize

            # only the rules that can fire in this text are imported (registry.rule_index)
            findings, summary = lint_and_summarize(source, rule_classes_for(codes, source.text), test_code,
                                                   settings.root, codes, project=job.facts, summarize=job.summarize)
    except SourceError as exc:
        return FileResult(path, error=f"{path}: {exc}")
    except RecursionError:
        return FileResult(path, error=f"{path}: code nested too deeply to analyse, skipped")
    except Exception as exc:  # a bug in a rule must not cost the user the other files
        return FileResult(path, error=f"{path}: internal error while checking: {type(exc).__name__}: {exc}")
    if cache is not None and key is not None:
        cache.put(key, findings)
    return FileResult(path, findings, summary=summary)


_WORKER_CACHES = None


def _init_worker(caches, parent: int) -> None:
    global _WORKER_CACHES
    _WORKER_CACHES = caches
    die_with_parent(parent)


def die_with_parent(parent: int) -> None:
    """Make this worker process end when the process that started it (pid `parent`) ends, even
    by SIGKILL, which gives the pool no chance to stop its workers. Linux: the kernel sends
    SIGKILL at once (prctl PR_SET_PDEATHSIG). Everywhere (macOS, Windows, and Linux should prctl
    be unavailable): a thread waits on multiprocessing's parent sentinel, which the end of the
    parent closes, and ends the process; a worker busy in one long C call (a huge ast.parse)
    notices when it returns."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        except (OSError, AttributeError):  # no libc prctl: the thread below still watches
            pass
    if os.getppid() != parent:  # it ended before the request above took effect
        os._exit(1)
    import multiprocessing
    import threading

    started_by = multiprocessing.parent_process()
    if started_by is not None and started_by.sentinel is not None:
        threading.Thread(target=_exit_when_ready, args=(started_by.sentinel,), name="ptlint-parent-watch",
                         daemon=True).start()


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _exit_when_ready(sentinel) -> None:
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(1)


def _check_in_worker(job: Job) -> FileResult:
    return check_file(job, _WORKER_CACHES)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def check_files(jobs: list[Job], caches=None, workers: int | None = None,
                progress: Callable[[int, int], None] | None = None, pool=None) -> list[FileResult]:
    """Check every file, in worker processes when that pays; results in the order of `jobs`.
    `pool`: a WorkerPool to use (one pool for several calls: its workers were forked once)."""
    workers = workers or default_jobs()
    results: list[FileResult] = []
    if workers <= 1 or len(jobs) < 8:
        for index, job in enumerate(jobs):
            results.append(check_file(job, caches))
            if progress:
                progress(index + 1, len(jobs))
        return results
    if pool is None:
        with WorkerPool(workers, caches) as own:
            return check_files(jobs, caches, workers, progress, own)
    chunk = max(1, min(32, len(jobs) // (workers * 8)))
    for index, result in enumerate(pool.executor.map(_check_in_worker, jobs, chunksize=chunk)):
        results.append(result)
        if progress:
            progress(index + 1, len(jobs))
    return results


class WorkerPool:
    """Worker processes for `check_files`, started when first used. Forked from this process: a
    pool started before the project's summaries are read (check_project) keeps its workers small
    for the second pass too, where a pool forked later would copy the summaries into each."""

    def __init__(self, workers: int | None = None, caches=None) -> None:
        self.workers = workers or default_jobs()
        self.caches = caches
        self._executor = None

    @property
    def executor(self):
        if self._executor is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            from ptlint.engine.registry import all_rules
            from ptlint.engine.traversal import lint_source  # noqa: F401 - the engine and rules before forking

            all_rules()
            method = "fork" if sys.platform.startswith("linux") else None
            self._executor = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context(method),
                initializer=_init_worker, initargs=(self.caches, os.getpid()))
        return self._executor

    def start(self) -> "WorkerPool":
        """Fork the workers now (the pool's processes start with its first task otherwise); with
        one worker, check_files works in this process and there is nothing to start."""
        if self.workers > 1:
            list(self.executor.map(_started, range(self.workers)))
        return self

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *_exc) -> None:
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None


def _started(_index: int) -> None:
    """A task that does nothing: it makes the pool fork its workers."""
