"""A progress bar on stderr for long runs in a terminal; silent when piped or in CI."""

from __future__ import annotations

import os
import sys
import time

_MIN_FILES = 200  # short runs finish before a bar would help
_DELAY = 0.5  # seconds before the bar first appears


class Progress:
    def __init__(self, total: int, stream=None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = (total >= _MIN_FILES and _isatty(self.stream) and not os.environ.get("CI")
                        and os.environ.get("TERM") != "dumb")
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < _DELAY or (now - self.last_draw < 0.1 and done < total):
            return
        self.last_draw = now
        width = 30
        filled = int(width * done / max(total, 1))
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        self.stream.flush()
        self.drawn = True

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
