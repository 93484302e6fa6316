"""pytest plugin (entry point `pytest11`): shows a failed ptlint.testing guard as ptlint prints it.

It adds no fixture, option or marker and changes no test's outcome: a `GuardFailure` is reported
as the test's line with the `with` (or decorator) followed by the guard's findings, each with its
`path:line:col` and source line, instead of a traceback through the guard's own code. Nothing here
imports torch.
"""

from __future__ import annotations

import os
from typing import Any

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if not report.failed or excinfo is None:
        return
    from ptlint.testing import GuardFailure

    if isinstance(excinfo.value, GuardFailure):
        report.longrepr = f"{_test_line(item, excinfo)}: {type(excinfo.value).__name__}\n{excinfo.value}"


def _test_line(item: Any, excinfo: Any) -> str:
    """`tests/test_model.py:12`: the innermost line of the test's own file that led to the failure
    (the `with`), else where the test is defined (a guard used as its decorator)."""
    path = str(getattr(item, "path", "") or "")
    for entry in reversed(excinfo.traceback):
        if str(entry.path) == path:
            try:
                shown = os.path.relpath(path)
            except ValueError:
                shown = path
            return f"{shown}:{entry.lineno + 1}"
    file, line, _ = item.location
    return f"{file}:{line + 1}" if line is not None else file
