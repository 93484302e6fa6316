"""Which files are the user's (not torch, the standard library, site-packages or ptlint), the
innermost user frame of a stack, and the installed frame (the "origin") a finding came from.
Shared by the worker, the parent and ptlint.testing; no torch here."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import sysconfig
from typing import Callable, Iterable

Frame = tuple[str, int, str]  # (file, line, function)

_PTLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB = tuple(os.path.realpath(p) + os.sep for p in {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
                if p)
_INSTALLED_DIRS = ("site-packages", "dist-packages")
RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+?)_at_(?P<line>\d+)$")


@functools.lru_cache(maxsize=1)
def torch_dirs() -> tuple[str, ...]:
    """Where torch is installed, found without importing it."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ()
    return tuple(os.path.realpath(p) for p in (spec.submodule_search_locations or [])) if spec else ()


def _under(real: str, prefixes: Iterable[str]) -> bool:
    return any(real == p or real.startswith(p.rstrip(os.sep) + os.sep) for p in prefixes)


def is_user_file(path: str, extra_excluded: tuple[str, ...] = ()) -> bool:
    """True for a real .py file of the user's: not `<string>`, torch, stdlib, site-packages, ptlint."""
    if not path or path.startswith("<") or not os.path.isfile(path):
        return False
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    if any(d in parts for d in _INSTALLED_DIRS) or any(p.startswith("torchinductor_") for p in parts):
        return False  # installed code, or code torch generated (inductor's cache)
    if real.startswith(_STDLIB) or real.startswith(_PTLINT_DIR + os.sep):
        return False
    return not _under(real, extra_excluded)


@functools.lru_cache(maxsize=8192)
def is_torch_stdlib_or_ptlint(path: str) -> bool:
    """Frames that are never the user's business in ptlint.testing's `within=None`."""
    if not path or path.startswith("<"):
        return True
    real = os.path.realpath(path)
    return real.startswith(_STDLIB) or real.startswith(_PTLINT_DIR + os.sep) or _under(real, torch_dirs())


def is_ptlint_file(path: str) -> bool:
    return os.path.realpath(path).startswith(_PTLINT_DIR + os.sep)


def fold_name(name: str) -> str:
    """Dynamo's continuation functions `torch_dynamo_resume_in_forward_at_12` belong to `forward`."""
    match = RESUME.match(name)
    return match.group("name") if match else name


def display_path(path: str) -> str:
    """Relative to the working folder when inside it (as a user would type it), else absolute."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive on Windows
        return absolute
    return absolute if relative.startswith("..") else relative


def installed_label(path: str) -> str:
    """A short name for an installed file: `transformers/generation/utils.py`, `torch/nn/functional.py`,
    `contextlib.py`; the display path for anything else."""
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    for index in range(len(parts) - 1, -1, -1):
        if parts[index] in _INSTALLED_DIRS:
            return "/".join(parts[index + 1:])
    for stdlib in _STDLIB:
        if real.startswith(stdlib):
            return real[len(stdlib):].replace(os.sep, "/")
    for torch_dir in torch_dirs():
        if _under(real, [torch_dir]):
            return "torch/" + os.path.relpath(real, torch_dir).replace(os.sep, "/")
    return display_path(path)


def locate(frames: list[Frame], is_user: Callable[[str], bool]) -> tuple[Frame | None, Frame | None]:
    """(the innermost user frame, the innermost frame when it is installed code) of a stack given
    outermost first. The second is a finding's "origin": where in a library it really happened."""
    location = next((f for f in reversed(frames) if is_user(f[0])), None)
    innermost = next((f for f in reversed(frames) if f[0] and not f[0].startswith("<")), None)
    origin = innermost if innermost is not None and not is_user(innermost[0]) else None
    return location, origin


def scope_of(frames: list[Frame]) -> str | None:
    """The file of the innermost frame outside torch, the standard library and ptlint (what
    ptlint.testing's `within` is matched against), or None."""
    return next((f[0] for f in reversed(frames) if not is_torch_stdlib_or_ptlint(f[0])), None)


def live_frames(skip: int = 1) -> list[Frame]:
    """The running Python stack, outermost first, without ptlint's own frames (the callers of
    whatever Dynamo or the sanitizer is doing right now)."""
    out = []
    frame = sys._getframe(skip)
    while frame is not None:
        out.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    out.reverse()
    return [f for f in out if not f[0].startswith(_PTLINT_DIR + os.sep)]


def origin_json(frame: Frame | None) -> dict | None:
    return {"path": os.path.abspath(frame[0]), "line": frame[1], "function": fold_name(frame[2])} if frame else None


# `File "/x/y.py", line 12, in forward` (tracebacks) and `File "/x/y.py", line 12 in forward` (faulthandler)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>\S+)')


def frames_in(text: str) -> list[Frame]:
    """(file, line, function) of every frame line in a traceback text, in text order."""
    out = []
    for line in text.splitlines():
        match = _FRAME.match(line)
        if match:
            out.append((match.group("file"), int(match.group("line")), fold_name(match.group("func"))))
    return out
