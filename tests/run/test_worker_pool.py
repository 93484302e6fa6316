"""One pool of worker processes serves both passes of a project check (ptlint.run.project): its
workers are forked before the project's summaries are read, so the second pass does not fork
copies of a main process that holds them (memory: bench/bench.py's peak)."""

from __future__ import annotations

import concurrent.futures

from ptlint.run import project as project_module
from ptlint.run.check import WorkerPool, check_files
from ptlint.run.config import build_settings
from ptlint.run.discover import Job


def jobs_for(tmp_path, count: int) -> list[Job]:
    settings = build_settings([str(tmp_path)])
    out = []
    for index in range(count):
        path = tmp_path / f"m{index}.py"
        path.write_text("import torch\n\ndef f(model, loader):\n    for x in loader:\n"
                        "        loss = model(x.cuda()).sum()\n        print(loss.item())\n")
        out.append(Job(path=str(path), settings=settings))
    return out


def test_a_pool_forks_its_workers_once_for_several_calls(tmp_path, monkeypatch):
    started = []

    class Counting(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs):
            started.append(kwargs.get("max_workers"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Counting)
    jobs = jobs_for(tmp_path, 9)
    with WorkerPool(2) as pool:
        pool.start()
        first = check_files(jobs, workers=2, pool=pool)
        second = check_files(jobs, workers=2, pool=pool)
    assert started == [2]
    assert [r.findings for r in first] == [r.findings for r in second]
    assert all(r.findings for r in first)  # each file checked: its read in a loop is found


def test_one_worker_starts_no_pool(monkeypatch):
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", None)  # any use would raise
    with WorkerPool(1) as pool:
        assert pool.start() is pool


def test_check_project_lints_both_passes_with_one_pool_started_first(tmp_path, monkeypatch):
    calls = []
    real = project_module.check_files

    def recording(jobs, caches=None, workers=None, progress=None, pool=None):
        calls.append((len(jobs), pool, pool is not None and pool._executor is not None))
        return real(jobs, caches, workers, progress, pool)

    monkeypatch.setattr(project_module, "check_files", recording)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    jobs = jobs_for(tmp_path, 9)
    (tmp_path / "train.py").write_text(
        "from m0 import f\n\ndef main(model, loader):\n    f(model, loader)\n")
    jobs.append(Job(path=str(tmp_path / "train.py"), settings=jobs[0].settings))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PTLINT_CACHE_DIR", str(tmp_path / ".cache"))
    project_module.check_project(jobs, workers=2, given=[str(tmp_path)])
    assert len(calls) == 2  # the first pass, then the files whose facts the solve changed
    pools = {id(pool) for _, pool, _ in calls}
    assert len(pools) == 1 and None not in {pool for _, pool, _ in calls}
    assert calls[0][2]  # forked before the first pass, while the summaries were not yet read
