"""Finding the files to check: the paths named on the command line, and the walk of folders
(the default skips, each folder's config `exclude`, and what git ignores).

What git ignores is skipped by default, as ruff does (`respect-gitignore = false` or
`--no-respect-gitignore` turns it off): inside a git repository, every `.gitignore` from the
repository's root down to the folder, `.git/info/exclude` and the user's global excludes
(`core.excludesFile`, else `~/.config/git/ignore`); and `.ignore` files (ripgrep's, which ruff also
reads) anywhere. pathspec matches them with git's own semantics. Like ruff, a path named on the
command line is checked even when git ignores it, and so is what lies below a named folder, except
what other patterns ignore there.
"""

from __future__ import annotations

import os
from typing import Any, Iterator

from ptlint.run.config import DEFAULT_EXCLUDES, ConfigError, Resolver, Settings

# What a folder walk picks up. A file named on the command line is checked whatever its name
# (as Python, or as a notebook when it ends in .ipynb).
SUFFIXES = (".py", ".ipynb")


class Job:
    """One file to check, with the settings of its nearest config. (Plain classes, as
    ptlint.engine.finding.Finding says why; `Job(**{**vars(job), ...})` is a changed copy.)"""

    def __init__(self, path: str, settings: Settings, data: bytes | None = None, facts: Any = None,
                 summarize: bool = False) -> None:
        self.path = path  # as the user gave it (or --stdin-filename)
        self.settings = settings
        self.data = data  # the content, when it comes from standard input
        # what the rest of the project says of this file (ptlint.semantics.project.ProjectFacts), and
        # whether its check also summarises it for the project model (ptlint.run.project)
        self.facts = facts
        self.summarize = summarize


class Discovery:
    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.warnings: list[str] = []  # one-line: unlistable folders, symlink loops
        self.failures: list[str] = []  # one-line, exit 2: missing paths, bad configs


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
        self.ignores = GitIgnores()

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
        self.ignores.named(os.path.abspath(top))
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
            rules = self.ignores.rules(os.path.abspath(directory)) if settings.respect_gitignore else ()
            for entry in entries:
                path = entry.path if directory != "." else entry.name
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if rules and (is_dir or entry.name.endswith(SUFFIXES)) \
                        and ignored(rules, os.path.abspath(path), is_dir):
                    continue
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


# -- what git ignores ----------------------------------------------------------------------------

IGNORE_FILES = (".gitignore", ".ignore")
Rules = tuple[tuple[str, tuple[Any, ...]], ...]  # (folder the patterns are relative to, its patterns)


def ignored(rules: Rules, path: str, is_dir: bool) -> bool:
    """Whether git ignores the absolute `path`: the last pattern that matches it decides (a
    negation `!x` re-includes), deeper files' patterns after their parents'."""
    verdict = False
    for base, patterns in rules:
        relative = path[len(base):].lstrip(os.sep).replace(os.sep, "/") + ("/" if is_dir else "")
        for pattern in patterns:
            if pattern.include is not None and pattern.match_file(relative) is not None:
                verdict = pattern.include
    return verdict


class GitIgnores:
    """The ignore patterns that apply to the entries of each folder, read once per folder."""

    def __init__(self) -> None:
        self._rules: dict[str, tuple[bool, Rules]] = {}  # folder -> (inside a git repository, rules)

    def rules(self, folder: str) -> Rules:
        """The patterns for the entries of an absolute `folder`, its own files' last."""
        return self._chain(folder)[1]

    def named(self, top: str) -> None:
        """A folder named on the command line is walked even when git ignores it (as ruff does):
        the patterns of the folders above it that match it do not apply below it."""
        if not os.path.isdir(top) or top in self._rules:
            return
        parent = os.path.dirname(top)
        if parent == top:
            return
        inside, above = self._chain(parent)
        kept = tuple((base, tuple(p for p in patterns if p.include is None or p.match_file(
            top[len(base):].lstrip(os.sep).replace(os.sep, "/") + "/") is None)) for base, patterns in above)
        self._rules[top] = self._extend(top, inside, kept)

    def _chain(self, folder: str) -> tuple[bool, Rules]:
        if folder not in self._rules:
            parent = os.path.dirname(folder)
            inside, above = self._chain(parent) if parent != folder else (False, ())
            self._rules[folder] = self._extend(folder, inside, above)
        return self._rules[folder]

    def _extend(self, folder: str, inside: bool, above: Rules) -> tuple[bool, Rules]:
        gitdir = _git_dir(folder)
        if gitdir is not None:  # a repository's root: the patterns above it are another repository's
            inside, above = True, tuple((folder, patterns) for patterns in _repository_patterns(gitdir))
        own = [patterns for name in IGNORE_FILES if inside or name == ".ignore"
               if (patterns := _patterns(os.path.join(folder, name)))]
        return inside, above + tuple((folder, patterns) for patterns in own)


def _git_dir(folder: str) -> str | None:
    """The git directory of a repository whose work tree starts at `folder`: `.git`, or the
    folder a `.git` file names (a worktree, a submodule)."""
    dot_git = os.path.join(folder, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    if os.path.isfile(dot_git):
        try:
            with open(dot_git, encoding="utf-8") as handle:
                line = handle.readline().strip()
        except (OSError, UnicodeDecodeError):
            return None
        if line.startswith("gitdir:"):
            return os.path.join(folder, line[len("gitdir:"):].strip())
    return None


def _repository_patterns(gitdir: str) -> list[tuple[Any, ...]]:
    """The user's global excludes, then the repository's .git/info/exclude (git's order of
    precedence, lowest first)."""
    common = gitdir
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:  # a linked worktree
            common = os.path.join(gitdir, handle.read().strip())
    except (OSError, UnicodeDecodeError):
        pass
    found = [_patterns(path) for path in (_global_excludes(os.path.join(common, "config")),
                                          os.path.join(common, "info", "exclude")) if path]
    return [patterns for patterns in found if patterns]


def _global_excludes(repository_config: str) -> str | None:
    """`core.excludesFile` of the repository's or the user's git configuration, else git's default
    `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`)."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    configs = [os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(os.path.expanduser("~"), ".gitconfig"),
               os.path.join(xdg, "git", "config"), repository_config]
    chosen = None
    for config in configs:  # the later wins, as in git
        chosen = _core_excludes_file(config) or chosen
    return os.path.expanduser(chosen) if chosen else os.path.join(xdg, "git", "ignore")


def _core_excludes_file(config: str) -> str | None:
    """The value of core.excludesFile in one git config file (its last one), or None."""
    try:
        with open(config, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    section, value = "", None
    for line in lines:
        line = line.strip()
        if line.startswith("["):
            section = line[1:line.find("]")].strip().lower() if "]" in line else ""
        elif section == "core" and "=" in line:
            key, _, raw = line.partition("=")
            if key.strip().lower() == "excludesfile":
                value = raw.split(" #")[0].split(" ;")[0].strip().strip('"')
    return value


_PATTERNS: dict[str, tuple[tuple[int, int], tuple[Any, ...]]] = {}


def _patterns(path: str) -> tuple[Any, ...]:
    """The compiled patterns of one ignore file (empty when there is none), memoised on its
    modification time. pathspec is imported only when a file has some."""
    try:
        info = os.stat(path)
        stamp = (info.st_mtime_ns, info.st_size)
        if path in _PATTERNS and _PATTERNS[path][0] == stamp:
            return _PATTERNS[path][1]
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ()
    patterns: tuple[Any, ...] = ()
    if any(line.strip() and not line.startswith("#") for line in lines):
        import pathspec

        patterns = tuple(p for p in pathspec.GitIgnoreSpec.from_lines(lines).patterns if p.include is not None)
    _PATTERNS[path] = (stamp, patterns)
    return patterns
