"""Small plain data kept as text in summaries, read back where the solve needs it.

A project of thousands of files holds tens of thousands of small lists and dicts in its
summaries (a def's parameters, a call's arguments, the method calls of a file); one string each
costs a fraction of their memory, and only the few the solve asks about are read back. The text
is Python's own literal syntax (`repr`, read by `ast.literal_eval`): no JSON module to import on
a one-file check.
"""

from __future__ import annotations

import ast


def packed(value):
    """A list or dict of constants as its literal text; numbers, strings and None as they are."""
    return repr(value) if isinstance(value, (list, dict)) else value


def unpacked(value):
    """What `packed` stored: a list or dict from its text, anything else as it is."""
    return ast.literal_eval(value) if isinstance(value, str) else value
