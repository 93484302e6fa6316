"""`ptlint clean`: remove ptlint's caches, as `ruff clean` removes ruff's: every `.ptlint_cache`
folder below the current one, $PTLINT_CACHE_DIR, and the current config's `cache-dir`. Only a
folder ptlint made (its `.gitignore` says so) is removed: a cache directory pointed at the wrong
folder costs a warning, not the folder."""

from __future__ import annotations

import os
import shutil

from ptlint.run.cache import CACHE_MARKER, DEFAULT_DIR, Cache
from ptlint.run.config import DEFAULT_EXCLUDES, ConfigError, Resolver


def cache_folders(start: str = ".") -> list[str]:
    """The cache folders `clean` considers, absolute, sorted."""
    found = set()
    for folder, subfolders, _ in os.walk(start):
        if DEFAULT_DIR in subfolders:
            found.add(os.path.abspath(os.path.join(folder, DEFAULT_DIR)))
        subfolders[:] = [name for name in subfolders if name not in DEFAULT_EXCLUDES and name != DEFAULT_DIR]
    configured = os.environ.get("PTLINT_CACHE_DIR")
    try:
        settings = Resolver().settings_for(start)
        configured = configured or settings.cache_dir
        root = settings.root
    except ConfigError:
        root = os.path.abspath(start)
    if configured:
        found.add(os.path.abspath(Cache.location(None, configured, root)))
    return sorted(found)


def is_cache(folder: str) -> bool:
    """A folder ptlint's cache made: its `.gitignore` is the one the cache writes."""
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8") as handle:
            return handle.read() == CACHE_MARKER
    except (OSError, UnicodeDecodeError):
        return False


def clean(start: str = ".") -> tuple[list[str], list[str]]:
    """(the folders removed, one-line warnings)."""
    removed, warnings = [], []
    for folder in cache_folders(start):
        if not os.path.isdir(folder):
            continue
        if not is_cache(folder):
            warnings.append(f"{folder}: not removed: it does not look like a ptlint cache (no .gitignore of ptlint's)")
            continue
        try:
            shutil.rmtree(folder)
        except OSError as exc:
            warnings.append(f"{folder}: cannot remove: {exc.strerror or exc}")
            continue
        removed.append(folder)
    return removed, warnings
