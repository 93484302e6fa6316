"""Small plain data kept as JSON text in summaries, read back where the solve needs it.

A project of thousands of files holds tens of thousands of small lists and dicts in its
summaries (a def's parameters, a call's arguments, the method calls of a file); one string each
costs a fraction of their memory, and only the few the solve asks about are read back.
"""

from __future__ import annotations

import json


def packed(value):
    """A list or dict as its JSON text; numbers, strings and None as they are."""
    return json.dumps(value, separators=(",", ":")) if isinstance(value, (list, dict)) else value


def unpacked(value):
    """What `packed` stored: a list or dict from its text, anything else as it is."""
    return json.loads(value) if isinstance(value, str) else value
