"""The dynamic pass: `ptlint explain` and `ptlint check --dynamic`, run for real on CPU.

Each worker run costs an `import torch` (seconds), so the targets share a few runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch  # pinned by the test extra: a broken install fails here, it never skips

from ptlint.dynamic.merge import mark_static
from ptlint.dynamic.runner import parse_target, run_targets
from ptlint.rule import Finding

from helpers import FIXTURES, REPO, run_ptlint

# The tests that read break_run's one explain run (seconds of torch) go to one xdist worker
# (`--dist loadgroup`), which then runs it once.
SHARES_BREAK_RUN = pytest.mark.xdist_group("break_run")

DYN = FIXTURES / "dynamic"
BREAKS = "fixtures/dynamic/breaks.py"
FAILING = "fixtures/dynamic/failing.py"


def line_of(path, text: str) -> int:
    """The 1-based line of the first line of `path` that contains `text`."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def explain(*args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, list[dict]]:
    result = run_ptlint("explain", "--output-format", "json", *args, cwd=REPO, env=env)
    findings = json.loads(result.stdout) if result.stdout.strip() else []
    return result, findings


def at(findings: list[dict], code: str, path: str, line: int) -> list[dict]:
    return [f for f in findings if f["code"] == code and f["path"] == path and f["line"] == line]


@pytest.fixture(scope="module")
def break_run():
    """Every kind of break, a clean model, three batch sizes, and failures that do not stop the run.
    An empty TORCH_LOGS (which crashes `import torch`) must be stripped from the worker's env."""
    names = ["make_print", "make_item", "make_loop", "make_nonzero", "make_skipped", "make_clean", "make_batches",
             "make_sizes"]
    targets = [f"{BREAKS}:{name}" for name in names]
    targets += [f"{FAILING}:make_raises", f"{FAILING}:make_exit", f"{FAILING}:make_noisy",
                f"{FAILING}:make_bad_return", "no_such_package.models:make", f"{FAILING}:missing_factory"]
    return explain(*targets, env={"TORCH_LOGS": "", "TORCH_TRACE": "/nonexistent"})


@SHARES_BREAK_RUN
@pytest.mark.parametrize("text, gb, rule", [
    ('print("step")', "GB0059", "PTL401"),  # on the function's first line
    ("scale = y.sum().item()", "GB0124", "PTL402"),
    ("if x.sum() > 0:", "GB0170", "PTL403"),  # inside a loop
    ("return torch.nonzero(y) + 1", "GB0036", "PTL404"),
    ("time.sleep(0)", "GB0007", "PTL405"),
])
def test_each_break_at_the_users_line(break_run, text, gb, rule):
    result, findings = break_run
    found = at(findings, "PTL450", BREAKS, line_of(DYN / "breaks.py", text))
    assert len(found) == 1, findings
    assert f"({gb})" in found[0]["message"] and f"see {rule}" in found[0]["message"]
    assert found[0]["source"] == "dynamic" and found[0]["name"] == "graph-break"


@SHARES_BREAK_RUN
def test_break_in_loop_names_the_frame_skip(break_run):
    _, findings = break_run
    (found,) = at(findings, "PTL450", BREAKS, line_of(DYN / "breaks.py", "if x.sum() > 0:"))
    assert "GB0170" in found["message"] and "GB7000" in found["message"]


@SHARES_BREAK_RUN
def test_recompilation_reported_with_its_guard(break_run):
    _, findings = break_run
    forward = line_of(DYN / "breaks.py", "def forward(self, x):")
    recompiles = [f for f in findings if f["code"] == "PTL451" and f["line"] == forward]
    assert len(recompiles) == 1, recompiles  # batch 2 makes the size dynamic; batch 3 reuses it
    assert recompiles[0]["path"] == BREAKS
    assert recompiles[0]["line"] == line_of(DYN / "breaks.py", "def forward(self, x):")
    assert "size mismatch at index 0" in recompiles[0]["message"]


@SHARES_BREAK_RUN
def test_break_in_a_recompiled_function_is_reported_once(break_run):
    _, findings = break_run
    lines = range(line_of(DYN / "breaks.py", "def rescale"), line_of(DYN / "breaks.py", "class Clean"))
    found = [(f["code"], f["line"]) for f in findings if f["path"] == BREAKS and f["line"] in lines]
    item = line_of(DYN / "breaks.py", "peak = x.abs().max().item()")
    assert [line for code, line in found if code == "PTL450"] == [item]
    assert ("PTL451", lines[0]) in found  # the new size fails the guard on the function's input


@SHARES_BREAK_RUN
def test_clean_model_has_no_finding_in_its_lines(break_run):
    _, findings = break_run
    clean = range(line_of(DYN / "breaks.py", "class Clean"), line_of(DYN / "breaks.py", "def make_print"))
    assert [f for f in findings if f["path"] == BREAKS and f["line"] in clean and f["code"] == "PTL450"] == []


@SHARES_BREAK_RUN
def test_failures_are_reported_and_the_run_goes_on(break_run):
    result, findings = break_run
    assert result.returncode == 2
    messages = " | ".join(f["message"] for f in findings if f["code"] == "PTL459")
    assert len([f for f in findings if f["code"] == "PTL459"]) == 5, messages
    raises = at(findings, "PTL459", FAILING, line_of(DYN / "failing.py", 'raise RuntimeError("no checkpoint'))
    assert raises and "RuntimeError: no checkpoint found" in raises[0]["message"]
    exits = at(findings, "PTL459", FAILING, line_of(DYN / "failing.py", "sys.exit(3)"))
    assert exits and "sys.exit(3)" in exits[0]["message"]
    bad = at(findings, "PTL459", FAILING, line_of(DYN / "failing.py", "def make_bad_return"))
    assert bad and "must return" in bad[0]["message"]
    missing = [f for f in findings if f["code"] == "PTL459" and f["path"] == "no_such_package.models:make"]
    assert missing and "No module named" in missing[0]["message"]
    assert any("missing_factory" in f["message"] and f["path"] == FAILING for f in findings if f["code"] == "PTL459")
    # and the 4 MB the noisy target printed did not disturb the event stream:
    assert "14 target(s) run" in result.stderr
    assert "6 graph break(s), 3 recompilation(s), 5 failed" in result.stderr


def test_clean_target_alone_exits_zero():
    result, findings = explain(f"{BREAKS}:make_clean", "--device", "cpu")
    assert (result.returncode, findings) == (0, []), result.stderr
    assert "1 target(s) run" in result.stderr


def test_hang_and_abort_keep_earlier_findings_and_later_targets_run():
    # The timeout counts each target's compile too: 4 s killed make_print on a 2-core machine at
    # load average 7. 10 s leaves room for that and costs 6 s more on the hang.
    result, findings = explain("--timeout", "10", f"{BREAKS}:make_item", f"{FAILING}:make_hang",
                               f"{FAILING}:make_abort", f"{BREAKS}:make_print")
    assert result.returncode == 2, result.stderr
    assert at(findings, "PTL450", BREAKS, line_of(DYN / "breaks.py", "scale = y.sum().item()")), findings
    assert at(findings, "PTL450", BREAKS, line_of(DYN / "breaks.py", 'print("step")')), findings  # ran after both
    hang = at(findings, "PTL459", FAILING, line_of(DYN / "failing.py", "time.sleep(0.05)"))
    assert hang and "timed out after 10 s" in hang[0]["message"], findings
    abort = at(findings, "PTL459", FAILING, line_of(DYN / "failing.py", "os.abort()"))
    assert abort and "SIGABRT" in abort[0]["message"], findings


def test_script_mode_observes_the_scripts_compiled_regions():
    result, findings = explain("--script", "fixtures/dynamic/train.py", "--", "--steps", "2")
    assert result.returncode == 1, result.stderr
    assert [(f["code"], f["path"], f["line"]) for f in findings] == [
        ("PTL450", "fixtures/dynamic/train.py", line_of(DYN / "train.py", "if out.mean() > 10:"))]
    # without its required argument the script exits 2 (argparse): a failed target
    result, findings = explain("--script", "fixtures/dynamic/train.py")
    assert result.returncode == 2 and [f["code"] for f in findings] == ["PTL459"]
    assert "sys.exit(2)" in findings[0]["message"]


def test_bad_target_syntax_is_a_usage_error():
    result, _ = explain("fixtures/dynamic/breaks.py")
    assert result.returncode == 2 and "file.py:factory" in result.stderr
    with pytest.raises(ValueError):
        parse_target("a b:c")


def test_without_torch_explains_how_to_install(tmp_path):
    blocker = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ModuleNotFoundError("No module named 'torch'")
        sys.meta_path.insert(0, Block())
        from ptlint.cli import main
        main()
    """)
    for args in (["explain", f"{BREAKS}:make_item"], ["check", "--dynamic", "--no-cache", str(DYN / "project")]):
        result = subprocess.run([sys.executable, "-c", blocker, *args], cwd=REPO, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 2, result.stderr
        assert 'pip install "ptlint[dynamic]"' in result.stderr


def test_the_parent_never_imports_torch():
    code = ("import sys; from ptlint.dynamic import command, merge, report, runner, paths; "
            "from ptlint import cli; assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_check_dynamic_runs_the_configured_targets(tmp_path):
    project = DYN / "project"
    result = run_ptlint("check", "--dynamic", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    dynamic = [(f["code"], f["path"], f["line"]) for f in findings if f["source"] == "dynamic"]
    model = project / "model.py"
    assert ("PTL450", "model.py", line_of(model, "peak = h.abs().max().item()")) in dynamic
    assert "1 target(s) run" in result.stderr
    # the static rule's finding on that line is confirmed by the run
    static = [f for f in findings if f["code"] == "PTL402" and f["line"] == dynamic[0][2]]
    assert [f["dynamic"] for f in static] == ["confirmed"]
    # --ignore applies to the dynamic codes like to any other
    ignored = run_ptlint("check", "--dynamic", "--no-cache", "--ignore", "PTL450", "--output-format", "json", ".",
                         cwd=project)
    assert not [f for f in json.loads(ignored.stdout) if f["code"] == "PTL450"]


def test_check_dynamic_without_targets_is_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    result = run_ptlint("check", "--dynamic", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 2 and "no targets" in result.stderr


def test_merge_marks_confirmed_and_not_observed():
    model = DYN / "project" / "model.py"
    run = run_targets([parse_target(f"{model}:make_model")], timeout=60, device="cpu")
    assert not run.failures and run.fatal is None

    def static(code: str, text: str) -> Finding:
        line = line_of(model, text)
        return Finding(code, "x", "m", str(model), line, 9, line, 20)

    item = static("PTL402", "peak = h.abs().max().item()")
    traced = static("PTL405", "h = self.fc(x)")  # Dynamo traced it, no break there
    never_run = static("PTL403", "if x.sum() > 0:")  # in a method no target calls
    other_rule = static("PTL101", "peak = h.abs().max().item()")  # not a compile rule: left alone
    mark_static([item, traced, never_run, other_rule], run.events)
    assert item.extra == {"dynamic": "confirmed"}
    assert traced.extra == {"dynamic": "not-observed"}
    assert never_run.extra == {} and other_rule.extra == {}
    assert item.to_json()["dynamic"] == "confirmed"


def test_break_ids_map_onto_the_static_rules():
    from ptlint.dynamic.report import related_rule

    assert related_rule(["GB0059"], "trace builtin operator `print` with argument types") == "PTL401"
    assert related_rule(["GB0059"], "trace builtin operator `getattr` with argument types") is None
    assert related_rule(["GB0007"], "trace the Python builtin `_warnings.warn`.") == "PTL401"
    # the example in the explanation of every skipped builtin is not the builtin itself
    assert related_rule(["GB0007"], "trace the builtin `time.sleep.` ... a Python builtin (e.g. _warnings.warn)") \
        == "PTL405"
    assert related_rule(["GB0170", "GB7000"], "") == "PTL403"
    assert related_rule(["GB0033"], "Operator `aten._local_scalar_dense.default` has a non-Tensor output") == "PTL402"
    assert related_rule(["GB7000"], "") is None


def test_the_mapped_ids_are_the_registrys():
    registry = json.loads((Path(torch.__file__).parent / "_dynamo" / "graph_break_registry.json").read_text())
    expected = {"GB0124": "Tensor.item()", "GB0059": "builtin operator", "GB0170": "Data-dependent branching",
                "GB0036": "Dynamic shape operator", "GB0007": "marked as skipped", "GB7000": "graph break in loop"}
    for gb, words in expected.items():
        assert words in registry[gb][0]["Gb_type"], (gb, registry[gb][0]["Gb_type"])
