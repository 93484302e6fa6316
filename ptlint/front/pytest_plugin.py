"""pytest plugin (entry point `pytest11`): shows a failed ptlint.testing guard as ptlint prints it.

It adds no fixture, option or marker and changes no test's outcome: a `GuardFailure` is reported
as the test's line with the `with` (or decorator) followed by the guard's findings, each with its
`path:line:col` and source line, instead of a traceback through the guard's own code. And pytest's
captured log leaves out torch's structured-trace records (logger `torch.__trace`): every compile
writes dozens of them, each an empty DEBUG line meant for tlparse, which buried a failing guard's
report. Nothing here imports torch.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest

TORCH_TRACE_LOGGER = "torch.__trace"


class _WithoutTorchTrace(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != TORCH_TRACE_LOGGER


WITHOUT_TORCH_TRACE = _WithoutTorchTrace()


@pytest.hookimpl(trylast=True)
def pytest_configure(config: Any) -> None:
    """Keep torch's trace records out of what pytest's logging plugin captures and reports."""
    plugin = config.pluginmanager.get_plugin("logging-plugin")
    for name in ("caplog_handler", "report_handler", "log_file_handler", "log_cli_handler"):
        handler = getattr(plugin, name, None)
        if handler is not None:
            handler.addFilter(WITHOUT_TORCH_TRACE)


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
