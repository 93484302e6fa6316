"""The catalogue: every rule class in `ptlint.rules`, by code."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from .rule import Rule


@lru_cache(maxsize=None)
def all_rules() -> dict[str, type[Rule]]:
    from . import rules as package

    found: dict[str, type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule \
                    and value.__module__ == module.__name__ and getattr(value, "code", None):
                if value.code in found:
                    raise RuntimeError(f"two rules claim {value.code}")
                found[value.code] = value
    return dict(sorted(found.items()))


# Codes the engine itself reports (no rule module: they are not findings of a traversal).
BUILTIN_CODES = {
    "PTL001": ("syntax-error", "The file does not parse as Python."),
}

# Codes the dynamic pass reports (documented in ptlint/dynamic/).
DYNAMIC_CODES = {
    "PTL450": ("graph-break", "A graph break that really happened under TorchDynamo."),
    "PTL451": ("recompilation", "A recompilation that really happened, with its guard failure."),
    "PTL452": ("host-sync", "A device-to-host synchronisation that really happened (explain --syncs), with its count."),
    "PTL459": ("dynamic-target-failed", "A dynamic target failed to import, raised, or timed out."),
}


def known_codes() -> set[str]:
    return set(all_rules()) | set(BUILTIN_CODES) | set(DYNAMIC_CODES)


def code_name(code: str) -> str:
    if code in BUILTIN_CODES:
        return BUILTIN_CODES[code][0]
    if code in DYNAMIC_CODES:
        return DYNAMIC_CODES[code][0]
    return all_rules()[code].name
