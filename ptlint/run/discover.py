"""Finding the files to check: the paths named on the command line, and the walk of folders
(the default skips, each folder's config `exclude`, and what git ignores)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterator

from ptlint.run.config import DEFAULT_EXCLUDES, ConfigError, Resolver, Settings

# What a folder walk picks up. A file named on the command line is checked whatever its name
# (as Python, or as a notebook when it ends in .ipynb).
SUFFIXES = (".py", ".ipynb")


@dataclass
class Job:
    """One file to check, with the settings of its nearest config."""

    path: str  # as the user gave it (or --stdin-filename)
    settings: Settings
    data: bytes | None = None  # the content, when it comes from standard input


@dataclass
class Discovery:
    jobs: list[Job] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # one-line: unlistable folders, symlink loops
    failures: list[str] = field(default_factory=list)  # one-line, exit 2: missing paths, bad configs


def discover(paths: list[str], resolver: Resolver) -> Discovery:
    """The files to check under `paths`. A file or folder named on the command line is checked even
    when `exclude` matches it, unless `force-exclude` is set (ruff's rule); inside a folder, the
    default skips and `exclude` (of each folder's own config) apply."""
    found = Discovery()
    seen: set[str] = set()
    walker = _Walker(resolver, found)

    for given in paths:
        if not os.path.lexists(given):
            found.failures.append(f"{given}: no such file or directory")
            continue
        if not os.path.exists(given):  # named by the user, so as missing as a path that never was
            found.failures.append(f"{given}: broken symbolic link")
            continue
        settings = walker.settings(given)
        if settings is None or (settings.force_exclude and settings.matches_exclude(given)):
            continue
        candidates = walker.walk(given) if os.path.isdir(given) else [(given, settings)]
        for path, file_settings in candidates:
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                found.jobs.append(Job(path, file_settings))
    return found


class _Walker:
    def __init__(self, resolver: Resolver, found: Discovery) -> None:
        self.resolver = resolver
        self.found = found
        self.reported: set[str] = set()

    def settings(self, path: str) -> Settings | None:
        """The settings for a path; a bad config is reported once and its files are skipped."""
        try:
            return self.resolver.settings_for(path)
        except ConfigError as exc:
            message = str(exc)
            if message not in self.reported:
                self.reported.add(message)
                self.found.failures.append(message)
            return None

    def walk(self, top: str) -> Iterator[tuple[str, Settings]]:
        """Files below `top` with SUFFIXES, sorted, following directory symlinks once (loops
        reported). Each entry is matched against the `exclude` of its folder's config."""
        errors = self.found.warnings
        visited: set[str] = set()
        stack = [top]
        while stack:
            directory = stack.pop()
            real = os.path.realpath(directory)
            if real in visited:
                errors.append(f"{directory}: symbolic link loop, skipped")
                continue
            visited.add(real)
            settings = self.settings(directory)
            if settings is None:
                continue
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
                elif entry.name.endswith(SUFFIXES):
                    if entry.is_symlink() and not os.path.exists(path):
                        errors.append(f"{path}: broken symbolic link")
                        continue
                    if not settings.matches_exclude(path):
                        yield path, settings
            stack.extend(reversed(subdirs))


def _is_ancestor(candidate: str, path: str) -> bool:
    return path == candidate or path.startswith(candidate.rstrip(os.sep) + os.sep)
