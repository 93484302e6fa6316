"""The catalogue: every rule class in `ptlint.rules`, by code.

Importing a rule module costs about a millisecond, and the catalogue grows; a one-file check (what
pre-commit runs) must not pay for every rule. `ptlint/rules/_index.py`, generated with the docs
(`python -m ptlint.engine.catalogue --write`), lists each rule's code, name, default, module and triggers,
so that choosing the enabled codes imports no rule, and a check imports only the rules whose
triggers occur in the file. The index carries a fingerprint of the rule modules' source: when it
does not match (a rule was edited and the index not regenerated), everything is imported as before,
so a stale index costs speed, never a finding.
"""

from __future__ import annotations

import importlib
import os
from functools import lru_cache
from typing import Iterable, NamedTuple

from ptlint.engine.rule import Rule, triggered

INDEX_MODULE = "_index"
# The rules are found by path and imported by name: the engine does not import the rules layer.
RULES_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules")


def rule_modules() -> list[str]:
    """Every rule module, as its dotted name under `ptlint.rules` (`sync.ptl101_sync_in_loop`):
    the `ptlNNN_*.py` files of the family folders."""
    root = RULES_FOLDER
    found = []
    for family in sorted(os.listdir(root)):
        folder = os.path.join(root, family)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            found += [f"{family}.{name[:-3]}" for name in sorted(os.listdir(folder))
                      if name.startswith("ptl") and name.endswith(".py")]
    return found


@lru_cache(maxsize=None)
def all_rules() -> dict[str, type[Rule]]:
    found: dict[str, type[Rule]] = {}
    for name in rule_modules():
        module = importlib.import_module(f"ptlint.rules.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule \
                    and value.__module__ == module.__name__ and getattr(value, "code", None):
                if value.code in found:
                    raise RuntimeError(f"two rules claim {value.code}")
                found[value.code] = value
    return dict(sorted(found.items()))


class RuleInfo(NamedTuple):
    """What the catalogue knows of a rule without importing it."""

    name: str
    default: bool
    module: str  # under ptlint.rules
    triggers: tuple[str, ...]  # the rule cannot fire in a file containing none of these (empty: always runs)
    reads_imports: bool = False  # its findings depend on the project modules a file imports


def rules_fingerprint() -> str:
    """A checksum of the rule modules' names and source (rules and their family helpers), to tell
    whether the index describes them (CRC-32 and the total size: it detects edits, and costs no
    hashlib import at start-up)."""
    import zlib

    root = RULES_FOLDER
    folders = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]  # no source there
        folders.append((folder, names))
    checksum, size = 0, 0
    # Every check computes this: one relative path per folder, unbuffered reads (the same value,
    # in the same order, as the index was generated with).
    for folder, names in sorted(folders):
        prefix = os.path.relpath(folder, root).replace(os.sep, "/") + "/"
        prefix = "" if prefix == "./" else prefix
        for name in sorted(names):
            if name.endswith(".py") and not (folder == root and name == INDEX_MODULE + ".py"):
                with open(os.path.join(folder, name), "rb", buffering=0) as handle:
                    data = (prefix + name).encode() + b"\0" + handle.read() + b"\0"
                checksum = zlib.crc32(data, checksum)
                size += len(data)
    return f"{checksum:08x}-{size}"


def index_from_classes() -> dict[str, RuleInfo]:
    return {code: RuleInfo(cls.name, bool(cls.default), cls.__module__.split(".", 2)[2], tuple(cls.triggers),
                           bool(getattr(cls, "reads_imports", False)))
            for code, cls in all_rules().items()}


@lru_cache(maxsize=None)
def rule_index() -> dict[str, RuleInfo]:
    """code -> RuleInfo: from the generated index when it is current, else from the classes."""
    try:
        _index = importlib.import_module(f"ptlint.rules.{INDEX_MODULE}")
    except ImportError:
        return index_from_classes()
    try:
        current = _index.FINGERPRINT == rules_fingerprint()
    except OSError:
        current = False
    if not current:
        return index_from_classes()
    return {code: RuleInfo(*fields) for code, fields in _index.RULES.items()}


def rule_class(code: str) -> type[Rule]:
    """The class of one rule, importing only its module."""
    info = rule_index()[code]
    module = importlib.import_module(f"ptlint.rules.{info.module}")
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, Rule) and getattr(value, "code", None) == code \
                and value.__module__ == module.__name__:
            return value
    return all_rules()[code]  # the index is wrong about this module: ask the modules themselves


def rule_classes_for(codes: Iterable[str], text: str | None = None) -> list[type[Rule]]:
    """The classes of `codes` that can fire in `text` (every one of them when text is None)."""
    index = rule_index()
    chosen = [code for code in codes if code in index]
    if text is not None:
        chosen = [code for code in chosen
                  if triggered(index[code].triggers, text)]
    return [rule_class(code) for code in chosen]


# Codes the engine itself reports (no rule module: they are not findings of a traversal).
BUILTIN_CODES = {
    "PTL001": ("syntax-error", "The file does not parse as Python."),
    "PTL002": ("unused-noqa", "A `# noqa` comment names a ptlint code that suppresses nothing on its line, "
                              "or no ptlint rule at all."),
}
# The engine's checks that are selected and ignored like rules, on by default (PTL001 always runs).
SELECTABLE_BUILTIN = ("PTL002",)

# Codes the dynamic pass reports (documented in ptlint/dynamic/).
DYNAMIC_CODES = {
    "PTL450": ("graph-break", "A graph break that really happened under TorchDynamo."),
    "PTL451": ("recompilation", "A recompilation that really happened, with its guard failure."),
    "PTL452": ("host-sync", "A device-to-host synchronisation that really happened (explain --syncs), with its count."),
    "PTL459": ("dynamic-target-failed", "A dynamic target failed to import, raised, or timed out."),
}


# What to change, for the codes that have no rule class (a rule's own is its `help`).
CODE_HELP = {
    "PTL001": "Fix the syntax error: the rest of the file was not checked.",
    "PTL002": "Remove the stale code from the `# noqa` comment, or the comment itself (`ptlint fix` does it).",
    "PTL450": "Move what breaks the graph (the message names it) out of the compiled code, or write it with "
              "torch operations; the static rule the message names shows how.",
    "PTL451": "Keep what the failed guard checks stable between calls (dtype, device, Python numbers), or "
              "compile with `torch.compile(dynamic=True)` when sizes vary.",
    "PTL452": "Keep the value on the device (accumulate tensors, read them every N steps or after the loop) "
              "instead of reading it on every call.",
    "PTL459": "Fix what the message shows: the import path, a factory returning `(fn, args)`, or a longer "
              "`--timeout`.",
}


def default_codes() -> tuple[str, ...]:
    """The codes on when nothing selects others: the rules on by default and the engine's
    selectable checks (not the dynamic pass's: `check --dynamic` and `explain` add those)."""
    return tuple(sorted({code for code, info in rule_index().items() if info.default} | set(SELECTABLE_BUILTIN)))


def help_for(finding) -> str:
    """What to change for a finding: its own help, else its code's."""
    return finding.help or CODE_HELP.get(finding.code) or ""


def known_codes() -> set[str]:
    return set(rule_index()) | set(BUILTIN_CODES) | set(DYNAMIC_CODES)
