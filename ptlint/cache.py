"""A content-hash cache of findings: keyed by ptlint's version, the enabled codes and the file text.

One small JSON file per entry, written to a temporary name and renamed into place, so two runs
that share the folder never see half an entry. A corrupt entry counts as a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile

from . import __version__
from .rule import Finding

DEFAULT_DIR = ".ptlint_cache"


def code_fingerprint() -> str:
    """A hash of ptlint's own source (engine and rules): a development install whose rules
    changed without a version bump must not be answered from stale entries."""
    from . import rules

    digest = hashlib.blake2b(digest_size=8)
    for folder in sorted({os.path.dirname(__file__), *rules.__path__}):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as handle:
                    digest.update(name.encode() + b"\0" + handle.read())
    return digest.hexdigest()


class Cache:
    def __init__(self, directory: str, settings_key: str) -> None:
        self.directory = os.path.join(directory, __version__)
        self.settings_key = settings_key + code_fingerprint()

    @classmethod
    def location(cls, cli_dir: str | None, config_dir: str | None, root: str) -> str:
        """--cache-dir wins, then PTLINT_CACHE_DIR, then the config's cache-dir, then .ptlint_cache/."""
        chosen = cli_dir or os.environ.get("PTLINT_CACHE_DIR") or config_dir
        if chosen:
            return chosen if os.path.isabs(chosen) else os.path.abspath(chosen)
        return os.path.join(root, DEFAULT_DIR)

    def key(self, text: str, codes: tuple[str, ...], dependencies: str = "") -> str:
        """`dependencies`: a digest of the other files the findings depend on
        (ptlint.project.dependency_digest), empty for the files, nearly all, that depend on none."""
        digest = hashlib.blake2b(digest_size=20)
        digest.update(self.settings_key.encode())
        digest.update(repr(codes).encode())
        digest.update(text.encode("utf-8", "surrogatepass"))
        if dependencies:
            digest.update(b"\0" + dependencies.encode())
        return digest.hexdigest()

    def _file(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key[2:] + ".json")

    def get(self, key: str, path: str) -> list[Finding] | None:
        try:
            with open(self._file(key), encoding="utf-8") as handle:
                data = json.load(handle)
            findings = [Finding.from_cache(item) for item in data]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        for finding in findings:  # the same content may live at another path
            finding.path = path
        return findings

    def put(self, key: str, findings: list[Finding]) -> None:
        target = self._file(key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            _ensure_gitignore(os.path.dirname(self.directory))
            fd, temporary = tempfile.mkstemp(dir=os.path.dirname(target), suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump([finding.to_cache() for finding in findings], handle)
            os.replace(temporary, target)
        except OSError:
            pass  # a read-only or full disk costs speed, never a result


def _ensure_gitignore(directory: str) -> None:
    marker = os.path.join(directory, ".gitignore")
    if not os.path.exists(marker):
        try:
            with open(marker, "w") as handle:
                handle.write("# created by ptlint\n*\n")
        except OSError:
            pass
