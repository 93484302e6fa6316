"""ptlint.testing: the guards users put in their own tests, run here in-process on CPU, and the
small package under fixtures/dynamic/guarded_project whose own tests use them."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from helpers import FIXTURES, REPO

from ptlint.testing import GuardFailure, no_graph_breaks, no_host_syncs, no_recompiles

HERE = Path(__file__).resolve()
SHOWN = os.path.relpath(HERE)  # how findings name this file
STANDIN = FIXTURES / "dynamic" / "site-packages"
PROJECT = FIXTURES / "dynamic" / "guarded_project"
sys.path.insert(0, str(STANDIN))
import standin_lib  # noqa: E402


def line_of(text: str, path: Path = HERE) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line and not line.lstrip().startswith("assert"):
            return number
    raise AssertionError(f"{text!r} not in {path}")


def clean(x):
    return (x * 2).relu().sum()


def one_print(x):
    x = x + 1
    print("one")
    return x * 2


def two_prints(x):
    x = x + 1
    print("first of two")
    x = x * 2
    print("second of two")
    return x


def scaled(x, n):
    return x * n


def compile_and_call(fn, *args):
    return torch.compile(fn, backend="eager")(*args)


def on_device(*shape: int) -> torch.Tensor:
    """A tensor whose read is a sync: on CUDA where there is one (there the guard counts what really
    synchronises); on a CPU-only machine a plain one, which the guard takes to be on the device."""
    x = torch.randn(*shape)
    return x.cuda() if torch.cuda.is_available() else x


def test_import_does_not_import_torch():
    code = ("import sys, ptlint.testing, ptlint.front.pytest_plugin; ptlint.testing.no_graph_breaks(max=1); "
            "ptlint.testing.no_host_syncs(within='x'); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_a_clean_function_passes():
    with no_graph_breaks() as breaks, no_recompiles() as recompiles, no_host_syncs() as syncs:
        compile_and_call(clean, torch.randn(4))
    assert (breaks.count, recompiles.count, syncs.count) == (0, 0, 0)
    assert breaks.findings == recompiles.findings == syncs.findings == []


def test_a_print_break_is_named_by_its_line():
    with pytest.raises(GuardFailure) as failure:
        with no_graph_breaks():
            compile_and_call(one_print, torch.randn(4))
    assert isinstance(failure.value, AssertionError)
    message = str(failure.value)
    line = line_of('print("one")')
    assert message.startswith("no_graph_breaks: 1 graph break, at most 0 allowed:\n")
    assert f"\n{SHOWN}:{line}:5: PTL450 graph break: Failed to trace builtin operator (GB0059) — see PTL401." in message
    assert 'print("one")' in message and "Hint:" in message
    assert [(f.code, f.line) for f in failure.value.findings] == [("PTL450", line)]


def test_a_budget():
    with no_graph_breaks(max=2) as guard:
        compile_and_call(two_prints, torch.randn(4))
    assert guard.count == 2
    with pytest.raises(GuardFailure) as failure:
        with no_graph_breaks(max=1):
            compile_and_call(two_prints, torch.randn(4))
    message = str(failure.value)
    assert "2 graph breaks, at most 1 allowed" in message
    for text in ('print("first of two")', 'print("second of two")'):
        assert f"{SHOWN}:{line_of(text)}:5: PTL450" in message


def test_the_same_break_in_two_tests_is_seen_twice():
    """Dynamo does not trace what it compiled before: the guard starts from empty caches."""
    for _ in range(2):
        with pytest.raises(GuardFailure):
            with no_graph_breaks():
                compile_and_call(one_print, torch.randn(4))


def test_recompilations():
    torch._dynamo.reset()  # count from scratch
    compiled = torch.compile(scaled, backend="eager")
    with pytest.raises(GuardFailure) as failure:
        with no_recompiles():
            for n in (2, 3, 4):
                compiled(torch.randn(3), n)
    message = str(failure.value)
    assert f"{SHOWN}:{line_of('def scaled(x, n):')}:1: PTL451 recompilation of `scaled`" in message
    assert "the argument `n` was specialised as the constant 2; each new value recompiles" in message
    torch._dynamo.reset()
    with no_recompiles(max=1) as guard:  # n=3 recompiles once; Dynamo then makes `n` dynamic
        for n in (2, 3, 4):
            compiled(torch.randn(3), n)
    assert guard.count == 1 and [f.extra["count"] for f in guard.findings] == [1]
    torch._dynamo.reset()
    with no_recompiles():  # warmed up inside the block: the same call hits the cache
        compiled(torch.randn(3), 2)
        compiled(torch.randn(3), 2)


def shifted(x, n):
    return x + n


def test_a_warm_up_before_the_block_counts_as_compiled():
    torch._dynamo.reset()
    compiled = torch.compile(shifted, backend="eager")
    compiled(torch.randn(3), 5)
    with no_recompiles():  # the cache from before the block is kept: the same call is no recompilation
        compiled(torch.randn(3), 5)
    with pytest.raises(GuardFailure, match=r"the argument `n` was specialised as the constant 5"):
        with no_recompiles():
            compiled(torch.randn(3), 6)


def test_a_sync_at_its_line():
    x = on_device(5)
    with pytest.raises(GuardFailure) as failure:
        with no_host_syncs():
            total = (x * 2).sum()
            value = total.item()
    assert value == pytest.approx(float((x * 2).sum()))
    line = line_of("value = total.item()")
    assert f"{SHOWN}:{line}:21: PTL452 host sync: `.item()` reads a value on the host" in str(failure.value)
    with no_host_syncs(max=3) as guard:
        for _ in range(3):
            if x.sum() > 100:
                pass
    assert guard.count == 3 and guard.findings[0].line == line_of("if x.sum() > 100:")
    with pytest.raises(GuardFailure, match="`torch.cuda.synchronize\\(\\)` waits for all queued work"):
        with no_host_syncs():  # on a CPU-only machine: what would synchronise, without failing here
            torch.cuda.synchronize()


def test_within_counts_only_events_there():
    # a break in the installed library, reached from this file
    here = str(HERE.parent)
    with no_graph_breaks(within=here) as guard:
        compile_and_call(standin_lib.two_prints, torch.randn(4))
    assert guard.count == 0
    with pytest.raises(GuardFailure) as failure:
        with no_graph_breaks(within="standin_lib"):
            compile_and_call(standin_lib.two_prints, torch.randn(4))
    library = STANDIN / "standin_lib" / "__init__.py"
    # files under `within` are the user's code for placing: the finding is in the library itself
    expected = [line_of('print("first")', library), line_of('print("second")', library)]
    assert sorted(f.line for f in failure.value.findings) == expected
    assert all(f.path.endswith(os.path.join("standin_lib", "__init__.py")) for f in failure.value.findings)
    with pytest.raises(GuardFailure) as failure:  # None: anything outside torch and the standard library
        with no_graph_breaks():
            compile_and_call(standin_lib.two_prints, torch.randn(4))
    (first, second) = failure.value.findings
    assert first.path == SHOWN and first.extra["origin"]["function"] == "two_prints"
    with no_host_syncs(within=here) as guard:  # the sync is in the library's read_peak
        standin_lib.read_peak(on_device(3))
    assert guard.count == 0
    with pytest.raises(GuardFailure, match=r"within 'standin_lib'"):
        with no_host_syncs(within="standin_lib"):
            standin_lib.read_peak(on_device(3))


def torch_settings() -> dict:
    """Everything a guard touches, as plain values (Dynamo's memory of the breaks it logged is the
    object a torch.compile inside the block replaces and a Dynamo guard puts back)."""
    from torch._dynamo import utils as dynamo_utils
    from torch._logging import _internal

    names = sorted(logging.root.manager.loggerDict)
    loggers = {name: (logging.getLogger(name).level, logging.getLogger(name).propagate,
                      tuple(logging.getLogger(name).handlers)) for name in names if name.startswith("torch")}
    return {"loggers": loggers, "artifacts": frozenset(_internal.log_state.artifact_names),
            "seen_breaks": id(dynamo_utils.graph_break_dup_warning_checker.set),
            "synchronize": torch.cuda.synchronize, "modes": len(torch.overrides._get_current_function_mode_stack()),
            "filters": list(warnings.filters), "showwarning": warnings.showwarning}


def test_settings_are_restored_after_a_failure_and_after_an_error():
    before = torch_settings()
    for guard in (no_graph_breaks, no_recompiles, no_host_syncs):
        with pytest.raises(GuardFailure):
            with guard():
                compile_and_call(one_print, torch.randn(4))
                compile_and_call(one_print, torch.randn(5))
                on_device(2).sum().item()
        check_restored(before, guard)
        with pytest.raises(ZeroDivisionError):  # the block's own error goes through, unchanged
            with guard():
                compile_and_call(one_print, torch.randn(4))
                1 / 0
        check_restored(before, guard)


def check_restored(before: dict, guard: type) -> None:
    after = torch_settings()
    if guard is no_host_syncs:  # it does not touch Dynamo; the block's torch.compile did
        before, after = dict(before, seen_breaks=None), dict(after, seen_breaks=None)
    assert after == before, guard.__name__


def test_nesting():
    with no_graph_breaks(max=1) as outer, no_host_syncs(max=1) as syncs:
        with pytest.raises(GuardFailure):
            with no_graph_breaks() as inner:
                compile_and_call(one_print, torch.randn(4))
        on_device(3).sum().item()
    assert (outer.count, inner.count, syncs.count) == (1, 1, 1)
    with pytest.raises(RuntimeError, match="already active"):
        with no_graph_breaks() as guard:
            with guard:
                pass


@no_graph_breaks()
def decorated(x):
    return compile_and_call(one_print, x)


def test_as_a_decorator_each_call_is_guarded():
    line = line_of('print("one")')
    for _ in range(2):
        with pytest.raises(GuardFailure, match=f"{re.escape(SHOWN)}:{line}:5: PTL450"):
            decorated(torch.randn(4))
    assert decorated.__name__ == "decorated"


@pytest.mark.parametrize("kwargs, error", [
    ({"max": -1}, ValueError), ({"max": 1.5}, ValueError), ({"max": True}, ValueError), ({"within": 3}, TypeError)])
def test_bad_arguments_are_clear_errors(kwargs, error):
    with pytest.raises(error, match="no_graph_breaks"):
        no_graph_breaks(**kwargs)


def test_within_naming_nothing_warns_and_counts_nothing():
    with pytest.warns(UserWarning, match=r"no_graph_breaks\(within='no_such_package_anywhere'\): no module"):
        with no_graph_breaks(within="no_such_package_anywhere") as guard:
            compile_and_call(one_print, torch.randn(4))
    assert guard.count == 0


def run_project_tests(**env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k not in ("TINYNET_DEBUG", "PYTEST_ADDOPTS")}
    full_env.update(env)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging"],
                          cwd=PROJECT, env=full_env, capture_output=True, text=True, timeout=600)


def test_the_fixture_projects_guard_tests_pass_and_their_failing_variant_names_the_lines():
    passing = run_project_tests()
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert "3 passed" in passing.stdout
    failing = run_project_tests(TINYNET_DEBUG="1")
    out = failing.stdout
    assert failing.returncode == 1 and "3 failed" in out, out
    model = PROJECT / "tinynet" / "model.py"
    debug_print = line_of('print("hidden norm", h.norm())', model)
    loss_print = line_of('print(f"loss {loss:.4f}")', model)
    tests = PROJECT / "tests" / "test_guards.py"
    # the plugin: the test's own line, then the findings as ptlint prints them
    assert f"tests/test_guards.py:{line_of('with no_graph_breaks(within=', tests)}: GuardFailure\n" \
           "no_graph_breaks: 1 graph break within 'tinynet', at most 0 allowed:\n" \
           f"tinynet/model.py:{debug_print}:13: PTL450 graph break: Failed to trace builtin operator (GB0059)" in out
    assert f"tinynet/model.py:{line_of('def forward(self, x):', model)}:5: PTL451 recompilation of `forward`" in out
    assert "2 recompilations within 'tinynet', at most 1 allowed" in out
    assert f"tests/test_guards.py:{line_of('@no_host_syncs(within=', tests)}: GuardFailure\n" in out
    assert "no_host_syncs: 6 host syncs within 'tinynet', at most 0 allowed:" in out
    assert f"tinynet/model.py:{debug_print}:13: PTL452 host sync: formatting a tensor" in out
    # on the CPU the shadow sees the f-string format its tensor; on CUDA (an H200, torch 2.11) the
    # read is seen at the tensor inside it
    column = 22 if torch.cuda.is_available() else 15
    assert f"tinynet/model.py:{loss_print}:{column}: PTL452 host sync: formatting a tensor" in out
    assert "(3 times in the block)" in out
    assert "site-packages/ptlint" not in out and "testing.py" not in out  # no traceback through the guard


GUARDED_TEST = """import logging

import torch
from ptlint.testing import no_graph_breaks


def shout(x):
    print("hi")
    return x + 1


def test_compiles_whole():
    logging.getLogger("user").warning("a record of the test itself")
    with no_graph_breaks():
        torch.compile(shout, backend="eager")(torch.ones(3))
"""


def test_a_failing_guard_is_not_buried_under_torch_trace_records(tmp_path):
    """With pytest's logging plugin on (the default), a failing guard's report carries no
    `torch.__trace` records (each compile writes dozens), while the test's own records still show."""
    (tmp_path / "test_guarded.py").write_text(GUARDED_TEST)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_guarded.py"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = result.stdout
    assert result.returncode == 1 and "1 failed" in out, out
    assert "no_graph_breaks: 1 graph break" in out
    assert "WARNING  user:test_guarded.py:13 a record of the test itself" in out
    assert "torch.__trace" not in out


def test_the_readme_example_is_a_complete_passing_test_file(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- ptlint-testing-example -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "test_compile_health.py").write_text(block)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging",
                             "test_compile_health.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout + result.stderr


def test_dynamos_own_warnings_still_reach_the_user_inside_a_guard():
    seen: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: seen.append(record.getMessage())
    logging.getLogger("torch._dynamo").addHandler(handler)
    try:
        with no_graph_breaks():
            logging.getLogger("torch._dynamo.output_graph").warning("a warning Dynamo gives")
            logging.getLogger("torch._dynamo.output_graph").debug("a record only the guard wants")
    finally:
        logging.getLogger("torch._dynamo").removeHandler(handler)
    assert seen == ["a warning Dynamo gives"]
