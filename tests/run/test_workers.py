"""Check's worker processes end with the process that started them, even when it is killed
(SIGKILL gives the pool no chance to stop them): on Linux by the kernel (PR_SET_PDEATHSIG), and
everywhere by a thread that waits on multiprocessing's parent sentinel (tested here with the
Linux mechanism switched off, in both start methods: fork, Linux's, and spawn, macOS's and
Windows')."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import FIXTURES, REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")


def children(pid: int) -> set[int]:
    found: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found.update(int(p) for p in handle.read().split())
    except (FileNotFoundError, ProcessLookupError):
        pass
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting for a parent to reap it has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def kill_and_expect_the_workers_gone(parent: subprocess.Popen, workers: set[int]) -> None:
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert wait_for(lambda: not any(alive(w) for w in workers), 10), [w for w in workers if alive(w)]


def test_killing_check_ends_its_workers(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    loop = (FIXTURES / "sample_project" / "trainer" / "loop.py").read_text()
    for index in range(400):  # seconds of work for two workers
        (tree / f"m{index}.py").write_text(loop * 8)
    parent = subprocess.Popen([sys.executable, "-m", "ptlint", "check", "--no-cache", "--jobs", "2", str(tree)],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for(lambda: len(children(parent.pid)) >= 2, 60), "the workers never started"
        workers = children(parent.pid)
        assert parent.poll() is None, "the check ended before it could be killed"
        kill_and_expect_the_workers_gone(parent, workers)
    finally:
        if parent.poll() is None:
            parent.kill()


# A pool like check's with one of the two mechanisms switched off: the Linux one (an option prctl
# refuses), or the sentinel thread (it returns at once). The workers sleep in their task.
POOL = """
import multiprocessing, os, sys, time
from concurrent.futures import ProcessPoolExecutor
from ptlint.run import check

if sys.argv[2] == "sentinel":
    check._PR_SET_PDEATHSIG = -1
else:
    check._exit_when_ready = lambda sentinel: None

def task(_):
    # one write: with PYTHONUNBUFFERED (as CI sets it) print writes the pid and its newline
    # apart, and the two workers' lines interleave
    os.write(1, f"{os.getpid()}\\n".encode())
    time.sleep(120)

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    with ProcessPoolExecutor(2, mp_context=context, initializer=check._init_worker,
                             initargs=(None, os.getpid())) as pool:
        list(pool.map(task, range(2)))
"""


@pytest.mark.parametrize("method,mechanism", [("fork", "sentinel"), ("spawn", "sentinel"), ("fork", "pdeathsig"),
                                              ("spawn", "pdeathsig")])
def test_each_mechanism_alone_ends_the_workers(tmp_path, method, mechanism):
    script = tmp_path / "pool.py"
    script.write_text(textwrap.dedent(POOL))
    parent = subprocess.Popen([sys.executable, str(script), method, mechanism], cwd=REPO, stdout=subprocess.PIPE,
                              text=True)
    try:
        workers = {int(parent.stdout.readline()), int(parent.stdout.readline())}
        assert all(alive(w) for w in workers)
        kill_and_expect_the_workers_gone(parent, workers)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_worker_whose_parent_is_already_gone_ends_at_once(tmp_path):
    """The parent died before the worker asked the kernel to tell it: getppid is no longer it."""
    probe = subprocess.run([sys.executable, "-c", "from ptlint.run import check; check.die_with_parent(1)\n"
                            "print('survived')"], cwd=REPO, capture_output=True, text=True)
    assert probe.returncode == 1 and "survived" not in probe.stdout
    same = subprocess.run([sys.executable, "-c", "import os; from ptlint.run import check; "
                           "check.die_with_parent(os.getppid()); print('survived')"],
                          cwd=REPO, capture_output=True, text=True)
    assert same.returncode == 0 and same.stdout == "survived\n"
