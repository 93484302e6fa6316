"""A content-hash cache of findings: keyed by ptlint's version, the enabled codes and the file text.

One small JSON file per entry, written to a temporary name and renamed into place, so two runs
that share the folder never see half an entry. A corrupt entry counts as a miss.

Entries live in a folder per version (`<cache-dir>/<version>/`). A `.gitignore` (`*`) goes only
into a cache folder ptlint creates itself: a folder that already exists (the project root, a
shared folder, a system folder) gets nothing written beside what it holds.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache

from ptlint import __version__
from ptlint.engine.finding import Finding
from ptlint.semantics.project import blake2b  # hashlib's, without its import of OpenSSL

DEFAULT_DIR = ".ptlint_cache"
CACHE_MARKER = "# created by ptlint\n*\n"  # the cache folder's .gitignore: git skips it, `ptlint clean` knows it


@lru_cache(maxsize=None)
def code_fingerprint() -> str:
    """A hash of the name, size and modification time of ptlint's own source files (engine and
    rules): a development install whose rules changed without a version bump must not be
    answered from stale entries. Their stat, not their bytes: reading them all cost a one-file
    run as much as checking the file."""
    import ptlint

    entries = []
    for folder, subfolders, names in os.walk(ptlint.__path__[0]):
        subfolders[:] = [d for d in subfolders if d not in ("__pycache__", "dynamic")]  # dynamic: no finding of check
        for name in names:
            if name.endswith(".py"):
                info = os.stat(os.path.join(folder, name))
                entries.append(f"{folder}\0{name}\0{info.st_size}\0{info.st_mtime_ns}\0")
    digest = blake2b(b"", 8)
    for entry in sorted(entries):
        digest.update(entry.encode())
    return digest.hexdigest()


class Cache:
    def __init__(self, directory: str, settings_key: str) -> None:
        self.root = directory
        self.directory = os.path.join(directory, __version__)
        self.settings_key = settings_key + code_fingerprint()
        self._made = False  # the folders exist (made or found) in this process

    @classmethod
    def location(cls, cli_dir: str | None, config_dir: str | None, root: str) -> str:
        """--cache-dir wins, then PTLINT_CACHE_DIR, then the config's cache-dir (the config
        resolves a relative one from its own folder), then .ptlint_cache/ beside the config."""
        chosen = cli_dir or os.environ.get("PTLINT_CACHE_DIR") or config_dir
        if chosen:
            return chosen if os.path.isabs(chosen) else os.path.abspath(chosen)
        return os.path.join(root, DEFAULT_DIR)

    def key(self, data: bytes, codes: tuple[str, ...], dependencies: str = "") -> str:
        """The entry for a file's bytes under these codes. `dependencies`: a digest of the other
        files the findings depend on (ptlint.semantics.project.dependency_digest), empty for the files,
        nearly all, that depend on none."""
        digest = blake2b(b"", 20)
        digest.update(self.settings_key.encode())
        digest.update(repr(codes).encode())
        digest.update(data)
        if dependencies:
            digest.update(b"\0" + dependencies.encode())
        return digest.hexdigest()

    def _file(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> list[Finding] | None:
        try:
            with open(self._file(key), encoding="utf-8") as handle:
                data = json.load(handle)
            findings = [Finding.from_cache(item, path) for item in data]  # the same content may live elsewhere
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # any wrong shape: a miss
            return None
        return findings

    def put(self, key: str, findings: list[Finding]) -> None:
        target = self._file(key)
        # a name no other process or thread uses (tempfile would cost its import at start-up)
        temporary = f"{target}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            self.make_folders()
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump([finding.to_cache() for finding in findings], handle)
            os.replace(temporary, target)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            # a read-only or full disk costs speed, never a result


    def make_folders(self) -> None:
        """The cache folder and its version folder; a `.gitignore` only in a cache folder made here."""
        if self._made:
            return
        if not os.path.isdir(self.root):
            parent = os.path.dirname(os.path.abspath(self.root))
            os.makedirs(parent, exist_ok=True)
            try:
                os.mkdir(self.root)
            except FileExistsError:  # another run made it meanwhile: its .gitignore, not ours
                pass
            else:
                _write_gitignore(self.root)
        os.makedirs(self.directory, exist_ok=True)
        self._made = True


class Caches:
    """The cache for each file's settings: files under different configs keep their entries beside
    their own config (or all in --cache-dir / $PTLINT_CACHE_DIR), keyed by their own settings."""

    def __init__(self, cli_dir: str | None) -> None:
        self.cli_dir = cli_dir
        self._open: dict[tuple[str, str], Cache] = {}

    def for_settings(self, settings) -> Cache:
        location = Cache.location(self.cli_dir, settings.cache_dir, settings.root)
        key = (location, settings.cache_key())
        if key not in self._open:
            self._open[key] = Cache(location, key[1])
        return self._open[key]


def _write_gitignore(directory: str) -> None:
    """Keep a cache folder ptlint made out of git (and of `git status`); `ptlint clean` knows it by
    this file."""
    try:
        with open(os.path.join(directory, ".gitignore"), "x") as handle:
            handle.write(CACHE_MARKER)
    except OSError:
        pass


def dependency_digest(source, rule_classes, root: str | None) -> str:
    """A digest of the project files whose text the enabled rules may read for this file, for
    the cache key; "" when no enabled rule reads imports or none can fire here (the common
    case costs nothing)."""
    from ptlint.engine.rule import triggered
    from ptlint.semantics.project import imports_digest

    if not any(getattr(cls, "reads_imports", False) and triggered(cls.triggers, source.text) for cls in rule_classes):
        return ""
    return imports_digest(source.path, source.text, root)
