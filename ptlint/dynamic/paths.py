"""Which files are the user's (not torch, the standard library, site-packages or ptlint), and
the innermost user frame of a traceback. Shared by the worker and the parent; no torch here."""

from __future__ import annotations

import os
import re
import sysconfig

_PTLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STDLIB = tuple(os.path.realpath(p) + os.sep for p in {sysconfig.get_path("stdlib"), sysconfig.get_path("platstdlib")}
                if p)
RESUME = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+?)_at_\d+$")


def is_user_file(path: str, extra_excluded: tuple[str, ...] = ()) -> bool:
    """True for a real .py file of the user's: not `<string>`, torch, stdlib, site-packages, ptlint."""
    if not path or path.startswith("<") or not os.path.isfile(path):
        return False
    real = os.path.realpath(path)
    parts = real.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    if real.startswith(_STDLIB) or real.startswith(_PTLINT_DIR + os.sep):
        return False
    return not any(real.startswith(prefix.rstrip(os.sep) + os.sep) for prefix in extra_excluded)


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


# `File "/x/y.py", line 12, in forward` (tracebacks) and `File "/x/y.py", line 12 in forward` (faulthandler)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<func>\S+)')


def frames_in(text: str) -> list[tuple[str, int, str]]:
    """(file, line, function) of every frame line in a traceback text, in text order."""
    out = []
    for line in text.splitlines():
        match = _FRAME.match(line)
        if match:
            out.append((match.group("file"), int(match.group("line")), fold_name(match.group("func"))))
    return out
