"""`ptlint check --watch`: check, then check again whenever a watched file changes.

The file system tells watchdog (inotify, FSEvents, ReadDirectoryChangesW) rather than ptlint
polling modification times; it is imported only here, so a plain `check` never pays for it. A
burst of events (an editor's save writes, renames and touches) makes one new check, after it
settles. On a terminal the screen is cleared before each check, as ruff does.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable

WATCHED = (".py", ".ipynb", ".pyi", "pyproject.toml", ".gitignore")  # what can change a result
SETTLE = 0.05  # seconds of quiet after an event before checking again


def _stamp() -> str:
    return time.strftime("[%H:%M:%S]")


def _say(text: str) -> None:
    if sys.stdout.isatty():
        sys.stdout.write("\x1b[H\x1b[2J\x1b[3J")
    print(f"{_stamp()} {text}\n", flush=True)


JOIN_SECONDS = 2.0
WAKE_SECONDS = 0.2  # how often the waiting main thread wakes to take a pending Ctrl-C


def watch(paths: list[str], check: Callable[[], object]) -> int:
    """Run `check` now and after each change below `paths`, until interrupted (exit 0). `check`
    reports its own errors: a config broken while being edited must not end the watch."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    changed = threading.Event()

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type in ("opened", "closed_no_write"):
                return  # reads change nothing
            names = (event.src_path, getattr(event, "dest_path", "") or "")
            if any(os.fsdecode(name).endswith(WATCHED) for name in names):
                changed.set()

    observer = Observer()
    handler = Handler()
    for path in dict.fromkeys(paths):
        folder = path if os.path.isdir(path) else (os.path.dirname(path) or ".")
        if os.path.isdir(folder):
            observer.schedule(handler, folder, recursive=os.path.isdir(path))
    observer.start()
    try:
        _say("Starting linter in watch mode...")
        while True:
            check()
            sys.stdout.flush()
            print(f"{_stamp()} Watching for file changes.", flush=True)
            # a bounded wait, again and again: a Ctrl-C the kernel hands to the file-system thread
            # only sets a flag, which the main thread reads when it next runs, not while blocked
            while not changed.wait(timeout=WAKE_SECONDS):
                pass
            while changed.is_set():  # let the burst settle
                changed.clear()
                time.sleep(SETTLE)
            _say("File change detected...")
    except KeyboardInterrupt:
        return 0
    finally:
        observer.stop()
        # a bounded wait: Ctrl-C must end the watch even if the file-system thread is stuck
        # (it is a daemon thread, and dies with the process)
        observer.join(timeout=JOIN_SECONDS)
