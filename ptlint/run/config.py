"""`[tool.ptlint]` in the nearest pyproject.toml, merged with the command line (which wins).

Layers, as in ruff: the defaults, the file a config `extend`s (recursively), the config itself,
`--config "key = value"` overrides, then the command line's flags. Codes of other linters in a
selector (`E501`, `RUF`) are skipped with a warning: a config or command line shared with ruff or
flake8 stays usable.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from typing import Any

from ptlint.engine.registry import DYNAMIC_CODES, default_codes, known_codes

DEFAULT_EXCLUDES = (".git", ".venv", "venv", "build", "dist", "__pycache__", "node_modules", ".ipynb_checkpoints")
KNOWN_KEYS = {"select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude",
              "force-exclude", "unsafe-fixes", "dynamic", "cache-dir", "test-code", "extend", "respect-gitignore",
              "compile", "project"}
# Files where performance and compile rules stay silent (DESIGN.md, "Where code runs"). A pattern
# `dir/**` whose dir has no slash matches a folder of that name anywhere, like `tests/` in git.
DEFAULT_TEST_CODE = ("tests/**", "test_*.py", "*_test.py", "conftest.py",
                     # a library's helpers for its own tests (diffusers' testing_utils.py, accelerate's test_utils/)
                     "testing_utils.py", "test_utils/**")
DYNAMIC_KEYS = {"targets", "timeout", "device", "script", "syncs"}


class ConfigError(Exception):
    """A bad configuration or selector; the CLI prints it and exits 2."""


class Settings:
    """Everything that decides what a check reports. Picklable, hashable into the cache key.
    (A plain class, as ptlint.engine.finding.Finding says why; `Settings(**{**vars(settings),
    ...})` is a changed copy.)"""

    def __init__(self, enabled: tuple[str, ...], root: str = ".", config_path: str | None = None,
                 exclude: tuple[str, ...] = (), per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (),
                 unsafe_fixes: bool = False, dynamic: dict[str, Any] | None = None,
                 cache_dir: str | None = None, test_code: tuple[str, ...] = DEFAULT_TEST_CODE,
                 force_exclude: bool = False, respect_gitignore: bool = True, compile: bool | None = None,
                 project: bool = True) -> None:
        self.enabled = enabled  # rule codes that run
        self.root = root  # folder of the config file; exclude and per-file-ignores are relative to it
        self.config_path = config_path
        self.exclude = exclude
        self.per_file_ignores = per_file_ignores
        self.unsafe_fixes = unsafe_fixes
        self.dynamic: dict[str, Any] = {} if dynamic is None else dynamic
        self.cache_dir = cache_dir
        self.test_code = test_code
        self.force_exclude = force_exclude  # `exclude` also applies to paths named on the command line
        self.respect_gitignore = respect_gitignore  # folder walks skip what git ignores (ptlint.run.discover)
        # `compile = true`: users compile this code (a library), so the torch.compile rules report
        # without a `torch.compile` in the project; false: they never do; None: the project's own
        # code decides
        self.compile = compile
        self.project = project  # `project = false`: each file on its own, no whole-program facts

    def __eq__(self, other: object) -> bool:
        return type(other) is Settings and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment] - mutable

    def __repr__(self) -> str:
        return f"Settings({', '.join(f'{key}={value!r}' for key, value in vars(self).items())})"

    def cache_key(self) -> str:
        return repr((self.enabled, self.per_file_ignores, self.test_code))

    def is_test_code(self, path: str) -> bool:
        """True when the file matches a `test-code` pattern: test suites, fixtures, conftest."""
        relative = _relative(path, self.root)
        return any(_matches(relative, pattern) for pattern in self.test_code)

    def codes_for(self, path: str) -> tuple[str, ...]:
        """Enabled codes for one file, after per-file-ignores."""
        if not self.per_file_ignores:
            return self.enabled
        relative = _relative(path, self.root)
        ignored: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if _matches(relative, pattern):
                ignored.update(expand(codes, source="per-file-ignores"))
        return tuple(code for code in self.enabled if code not in ignored)

    def matches_exclude(self, path: str) -> bool:
        """True when the path matches one of the configured `exclude` patterns."""
        relative = _relative(path, self.root)
        return any(_matches(relative, pattern) for pattern in self.exclude)


def _relative(path: str, root: str) -> str:
    try:
        return os.path.relpath(os.path.abspath(path), os.path.abspath(root)).replace(os.sep, "/")
    except ValueError:  # another drive on Windows
        return path.replace(os.sep, "/")


def _matches(relative: str, pattern: str) -> bool:
    """gitignore-like: a pattern without a slash matches any path component or the file name."""
    pattern = pattern.rstrip("/")
    if pattern.endswith("/**") and "/" not in pattern[:-3]:
        pattern = pattern[:-3]  # `tests/**`: everything under any folder called tests
    if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern + "/*"):
        return True
    if "/" not in pattern:
        return any(fnmatch.fnmatch(part, pattern) for part in relative.split("/"))
    return False


OWN_PREFIX = "PTL"
_FOREIGN = re.compile(r"[A-Z]+[0-9]*")  # a code or prefix of another linter: `E501`, `RUF`, `B9`


def expand(selectors: list[str] | tuple[str, ...], source: str, warnings: list[str] | None = None) -> set[str]:
    """`PTL1` -> every code starting with it; `PTL` -> all. An unknown ptlint code is an error;
    a code of another linter is skipped (with a warning in `warnings`, when given)."""
    codes = known_codes()
    out: set[str] = set()
    for raw in selectors:
        selector = raw.strip().upper()
        if not selector:
            continue
        if selector == "ALL":
            selector = OWN_PREFIX
        matched = {code for code in codes if code.startswith(selector)}
        if not matched and not selector.startswith(OWN_PREFIX) and _FOREIGN.fullmatch(selector):
            if warnings is not None and (message := f"{source}: {raw.strip()!r} is not a ptlint code "
                                                    "(another linter's?); ignored") not in warnings:
                warnings.append(message)
            continue
        if not matched:
            raise ConfigError(f"{source}: unknown rule code or prefix {raw.strip()!r} "
                              f"(see `ptlint rule --all`)")
        out |= matched
    return out


def split_codes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part for part in value.replace(" ", ",").split(",") if part]


_TOML_CACHE: dict[str, tuple[tuple[int, int], dict[str, Any] | ConfigError]] = {}


def _read_toml(path: str, only_if_mentioning: bytes | None = None) -> dict[str, Any]:
    """A pyproject.toml's data, memoised on (mtime, size): a run or a language server that asks
    for many files reads each config once, and sees an edited one at once. With
    `only_if_mentioning`, a file whose bytes do not contain it is not parsed (it reads as empty)."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    stamp = (info.st_mtime_ns, info.st_size)
    cached = _TOML_CACHE.get(path)
    if cached is None or cached[0] != stamp:
        try:
            with open(path, "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            cached = (stamp, ConfigError(f"{path}: cannot read: {exc.strerror or exc}"))
        else:
            if only_if_mentioning is not None and only_if_mentioning not in raw:
                return {}  # not ptlint's business: not even parsed (nor tomllib imported)
            cached = (stamp, _parse_toml(raw, path))
        _TOML_CACHE[path] = cached
    if isinstance(cached[1], ConfigError):
        raise cached[1]
    return cached[1]


def _parse_toml(raw: bytes, path: str) -> dict[str, Any] | ConfigError:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:  # TOML is UTF-8
        return ConfigError(f"{path}: invalid TOML: {str(exc).splitlines()[0]}")


def _has_ptlint_table(path: str) -> bool:
    if not os.path.isfile(path):
        return False
    tool = _read_toml(path, only_if_mentioning=b"ptlint").get("tool")
    return isinstance(tool, dict) and "ptlint" in tool


def load_config(path: str) -> dict[str, Any]:
    tool = _read_toml(path).get("tool", {})
    table = tool.get("ptlint", {}) if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.ptlint] must be a table")
    return table


def _str_list(table: dict, key: str, path: str) -> list[str] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: [tool.ptlint] {key} must be a list of strings")
    return value


def validate(table: dict[str, Any], path: str, warnings: list[str] | None = None) -> None:
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.ptlint]: {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(KNOWN_KEYS))})")
    for key in ("select", "ignore", "extend-select", "exclude", "extend-exclude", "test-code"):
        _str_list(table, key, path)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict) or not all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in pfi.values()):
        raise ConfigError(f"{path}: [tool.ptlint] per-file-ignores must map patterns to lists of codes")
    for pattern, codes in pfi.items():
        expand(codes, source=f"{path}: per-file-ignores[{pattern!r}]", warnings=warnings)
    for key in ("unsafe-fixes", "force-exclude", "respect-gitignore", "compile", "project"):
        if key in table and not isinstance(table[key], bool):
            raise ConfigError(f"{path}: [tool.ptlint] {key} must be true or false")
    for key in ("cache-dir", "extend"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(f"{path}: [tool.ptlint] {key} must be a string")
    dynamic = table.get("dynamic", {})
    if not isinstance(dynamic, dict):
        raise ConfigError(f"{path}: [tool.ptlint.dynamic] must be a table")
    unknown = sorted(set(dynamic) - DYNAMIC_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.ptlint.dynamic]: {', '.join(unknown)} "
                          f"(known: {', '.join(sorted(DYNAMIC_KEYS))})")
    if "targets" in dynamic:
        _str_list(dynamic, "targets", path + " [tool.ptlint.dynamic]")
    if "timeout" in dynamic and (not isinstance(dynamic["timeout"], (int, float))
                                 or isinstance(dynamic["timeout"], bool) or dynamic["timeout"] <= 0):
        raise ConfigError(f"{path}: [tool.ptlint.dynamic] timeout must be a positive number of seconds")
    if "device" in dynamic and dynamic["device"] not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"{path}: [tool.ptlint.dynamic] device must be one of auto, cpu, cuda")
    if "syncs" in dynamic and not isinstance(dynamic["syncs"], bool):
        raise ConfigError(f"{path}: [tool.ptlint.dynamic] syncs must be true or false")


Layer = tuple[list[str] | None, list[str] | None, list[str] | None, str]  # select, extend-select, ignore, label


def resolve_enabled(file_select: list[str] | None, file_extend: list[str] | None, file_ignore: list[str] | None,
                    cli_select: list[str] | None, cli_extend: list[str] | None, cli_ignore: list[str] | None,
                    config_label: str = "config") -> tuple[str, ...]:
    """Layered like ruff: defaults, then the file, then the command line.

    In each layer `select` replaces the set, `extend-select` adds, `ignore` removes.
    """
    return enabled_codes([(file_select, file_extend, file_ignore, config_label),
                          (cli_select, cli_extend, cli_ignore, COMMAND_LINE)])


COMMAND_LINE = "the command line"  # a layer's label: its messages name the option instead


def _source(label: str, option: str) -> str:
    return f"--{option}" if label == COMMAND_LINE else label


def enabled_codes(layers: list[Layer], warnings: list[str] | None = None) -> tuple[str, ...]:
    """The codes that run after each layer in turn (the defaults first)."""
    enabled = set(default_codes()) | set(DYNAMIC_CODES)
    for select, extend, ignore, label in layers:
        if select is not None:
            enabled = expand(select, _source(label, "select"), warnings)
        if extend:
            enabled |= expand(extend, _source(label, "extend-select"), warnings)
        if ignore:
            enabled -= expand(ignore, _source(label, "ignore"), warnings)
    # The engine runs only the traversal rules; `check --dynamic` keeps the enabled dynamic codes.
    return tuple(sorted(enabled))


def parse_override(text: str) -> dict[str, Any]:
    """`--config "select = ['PTL1']"`: one TOML `key = value` pair of [tool.ptlint] (dotted keys
    reach into tables: `dynamic.timeout = 30`; a leading `tool.ptlint.` is allowed)."""
    try:
        data = _parse_toml(text.encode("utf-8"), "--config")
    except UnicodeEncodeError:
        data = ConfigError("--config: not UTF-8")
    if isinstance(data, ConfigError):
        raise ConfigError(f"--config {text!r}: neither a config file nor a TOML `key = value` pair "
                          f"({str(data).split(': ', 2)[-1]})")
    tool = data.get("tool")
    if list(data) == ["tool"] and isinstance(tool, dict) and list(tool) == ["ptlint"] \
            and isinstance(tool["ptlint"], dict):
        data = tool["ptlint"]
    validate(data, f"--config {text!r}")
    if "extend" in data:
        raise ConfigError(f"--config {text!r}: `extend` belongs in a config file")
    return data


class Resolver:
    """Settings per file, like ruff: the nearest pyproject.toml with a [tool.ptlint] table above
    the file, or one `--config` file for everything (`isolated`: none at all). The `overrides`
    (`--config "key = value"`) and the command line's options apply on top of each. Answers are
    memoised per folder and per config file, so the order in which files are asked for never
    changes an answer. `warnings`: one line each, for the caller to print (other linters' codes)."""

    def __init__(self, config_file: str | None = None, select: str | None = None, ignore: str | None = None,
                 extend_select: str | None = None, unsafe_fixes: bool | None = None,
                 force_exclude: bool | None = None, respect_gitignore: bool | None = None,
                 isolated: bool = False, overrides: list[dict[str, Any]] | None = None) -> None:
        self.warnings: list[str] = []
        self.cli = (split_codes(select), split_codes(extend_select), split_codes(ignore))
        for codes, option in zip(self.cli, ("select", "extend-select", "ignore")):
            if codes:  # a bad selector on the command line is an error before any file
                expand(codes, f"--{option}", self.warnings)
        self.unsafe_fixes = unsafe_fixes
        self.force_exclude = force_exclude
        self.respect_gitignore = respect_gitignore
        self.isolated = isolated
        self.overrides = list(overrides or [])
        self.config_file = config_file
        self._nearest: dict[str, str | None] = {}  # folder -> its config file
        self._settings: dict[str | None, Settings | ConfigError] = {}
        if config_file is not None:
            if not os.path.isfile(config_file):
                raise ConfigError(f"{config_file}: config file not found")
            self.settings_for_config(config_file)

    def config_for(self, path: str) -> str | None:
        """The config file that applies to `path` (a folder: the folder itself; a file: its folder)."""
        if self.config_file is not None or self.isolated:
            return self.config_file
        absolute = os.path.abspath(path)
        folder = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        visited = []
        directory = folder
        while directory not in self._nearest:
            visited.append(directory)
            candidate = os.path.join(directory, "pyproject.toml")
            if _has_ptlint_table(candidate):
                self._nearest[directory] = candidate
                break
            parent = os.path.dirname(directory)
            if parent == directory:
                self._nearest[directory] = None
                break
            directory = parent
        found = self._nearest[directory]
        for seen in visited:
            self._nearest[seen] = found
        return found

    def settings_for(self, path: str) -> Settings:
        """Settings for a file or folder; ConfigError when its config is bad."""
        return self.settings_for_config(self.config_for(path))

    def settings_for_config(self, config: str | None) -> Settings:
        if config not in self._settings:
            try:
                self._settings[config] = self._build(config)
            except ConfigError as exc:
                self._settings[config] = exc
        answer = self._settings[config]
        if isinstance(answer, ConfigError):
            raise answer
        return answer

    def _build(self, path: str | None) -> Settings:
        root = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
        layers: list[Layer] = []
        table: dict[str, Any] = {}
        chain = _extended(path) if path else []
        if self.overrides:  # they replace keys of the config itself, as ruff's do
            table_of, folder_of, label_of = chain.pop() if chain else ({}, root, "config")
            overridden = dict(table_of)
            for override in self.overrides:
                _merge_layer(overridden, override, replace_all=True)
            chain.append((overridden, folder_of, f"{label_of} (with --config)"))
        for part, folder, label in chain:
            validate(part, label, self.warnings)
            layers.append((_str_list(part, "select", label), _str_list(part, "extend-select", label),
                           _str_list(part, "ignore", label), label))
            _merge_layer(table, _rebased(part, folder, root))
        layers.append((*self.cli, COMMAND_LINE))
        enabled = enabled_codes(layers, self.warnings)
        pfi = tuple((pattern, tuple(codes)) for pattern, codes in table.get("per-file-ignores", {}).items())
        exclude = tuple((table.get("exclude") or []) + (table.get("extend-exclude") or []))

        def flag(key: str, cli: bool | None, default: bool) -> bool:
            return bool(table.get(key, default)) if cli is None else cli

        return Settings(
            enabled=enabled, root=root, config_path=path, exclude=exclude, per_file_ignores=pfi,
            unsafe_fixes=flag("unsafe-fixes", self.unsafe_fixes, False), dynamic=dict(table.get("dynamic", {})),
            # a relative cache-dir is relative to the config that names it (an extended one: rebased above)
            cache_dir=os.path.join(root, table["cache-dir"]) if table.get("cache-dir") else None,
            test_code=tuple(table.get("test-code", DEFAULT_TEST_CODE)),
            force_exclude=flag("force-exclude", self.force_exclude, False),
            respect_gitignore=flag("respect-gitignore", self.respect_gitignore, True),
            compile=table.get("compile"), project=bool(table.get("project", True)),
        )


def _extended(path: str) -> list[tuple[dict[str, Any], str, str]]:
    """(table, its folder, label) of `path` and of the configs it `extend`s, the farthest first.
    `extend` is a path relative to the config's folder (`~` and `$VARS` expanded), to a
    pyproject.toml with a [tool.ptlint] table."""
    chain: list[tuple[dict[str, Any], str, str]] = []
    seen: list[str] = []
    current: str | None = path
    while current is not None:
        real = os.path.realpath(current)
        if real in seen:
            raise ConfigError(f"{current}: `extend` goes round in a circle: {' -> '.join(seen + [real])}")
        seen.append(real)
        table = load_config(current)
        chain.append((table, os.path.dirname(os.path.abspath(current)), current))
        target = table.get("extend")
        if target is None:
            break
        if not isinstance(target, str):
            raise ConfigError(f"{current}: [tool.ptlint] extend must be a string")
        base = os.path.join(os.path.dirname(os.path.abspath(current)),
                            os.path.expandvars(os.path.expanduser(target)))
        if not os.path.isfile(base):
            raise ConfigError(f"{current}: extend = {target!r}: no such file")
        if not _has_ptlint_table(base):
            raise ConfigError(f"{current}: extend = {target!r}: {base} has no [tool.ptlint] table")
        current = base
    return list(reversed(chain))


def _merge_layer(table: dict[str, Any], part: dict[str, Any], replace_all: bool = False) -> None:
    """A later layer's keys win; `extend-exclude` adds up and `dynamic` merges key by key (ruff's
    `extend`), unless `replace_all` (an override replaces every key it names). The selectors
    merged here are not read: each config's are a layer of their own (enabled_codes)."""
    for key, value in part.items():
        if key == "extend-exclude" and not replace_all:
            table[key] = list(table.get(key, [])) + list(value)
        elif key == "dynamic":
            table[key] = {**table.get(key, {}), **value}
        else:
            table[key] = value


def _rebased(table: dict[str, Any], folder: str, root: str) -> dict[str, Any]:
    """A config's paths, written relative to its own folder, made relative to `root` (the folder
    of the config that extends it): exclude, per-file-ignores and test-code patterns, cache-dir,
    and file targets of the dynamic pass."""
    if os.path.abspath(folder) == os.path.abspath(root):
        return table
    out = dict(table)

    def pattern(text: str) -> str:
        body = text.rstrip("/")
        body = body[:-3] if body.endswith("/**") else body
        if "/" not in body or text.startswith("**/"):
            return text  # matches a name anywhere: the same from every folder
        return _relative(os.path.normpath(os.path.join(folder, text)), root) + ("/" if text.endswith("/") else "")

    for key in ("exclude", "extend-exclude", "test-code"):
        if isinstance(table.get(key), list):
            out[key] = [pattern(item) for item in table[key]]
    if isinstance(table.get("per-file-ignores"), dict):
        out["per-file-ignores"] = {pattern(key): codes for key, codes in table["per-file-ignores"].items()}
    if isinstance(table.get("cache-dir"), str) and not os.path.isabs(table["cache-dir"]):
        out["cache-dir"] = os.path.normpath(os.path.join(folder, table["cache-dir"]))
    dynamic = table.get("dynamic")
    if isinstance(dynamic, dict) and isinstance(dynamic.get("targets"), list):
        targets = []
        for target in dynamic["targets"]:
            file, sep, factory = target.rpartition(":") if isinstance(target, str) else ("", "", "")
            if sep and file.endswith(".py") and not os.path.isabs(file):
                target = _relative(os.path.join(folder, file), root) + ":" + factory
            targets.append(target)
        out["dynamic"] = {**dynamic, "targets": targets}
    return out


def build_settings(paths: list[str], config_file: str | None = None, select: str | None = None,
                   ignore: str | None = None, extend_select: str | None = None,
                   unsafe_fixes: bool | None = None) -> Settings:
    """Settings for one path (the first; default: the current folder): `config_file`, or the
    nearest [tool.ptlint] above it. A run over several files uses a Resolver instead."""
    resolver = Resolver(config_file, select=select, ignore=ignore, extend_select=extend_select,
                        unsafe_fixes=unsafe_fixes)
    return resolver.settings_for(paths[0] if paths else ".")
