"""The dynamic pass: `ptlint explain` and `ptlint check --dynamic`, run for real on CPU.

Each worker run costs an `import torch` (seconds), so the targets share a few runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch  # pinned by the test extra: a broken install fails here, it never skips
from helpers import FIXTURES, REPO, run_ptlint

from ptlint.dynamic.merge import mark_static
from ptlint.dynamic.runner import parse_target, run_targets
from ptlint.engine.finding import Finding

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
        from ptlint.front.cli import main
        main()
    """)
    for args in (["explain", f"{BREAKS}:make_item"], ["check", "--dynamic", "--no-cache", str(DYN / "project")]):
        result = subprocess.run([sys.executable, "-c", blocker, *args], cwd=REPO, capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 2, result.stderr
        assert 'pip install "ptlint[dynamic]"' in result.stderr


def test_the_parent_never_imports_torch():
    code = ("import sys; from ptlint.dynamic import command, merge, report, runner, paths; "
            "from ptlint.front import cli; assert 'torch' not in sys.modules")
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


# -- breaks, recompilations and syncs inside installed code; the host-sync sanitizer ------------

INSTALLED = "fixtures/dynamic/installed.py"
SYNCS = "fixtures/dynamic/syncs.py"
STANDIN = DYN / "site-packages" / "standin_lib" / "__init__.py"


@pytest.fixture(scope="module")
def installed_run():
    """Targets whose events happen in a stand-in installed library (a folder named site-packages),
    and a training step with every kind of host sync, all under `explain --syncs`."""
    names = ["make_library_calls", "make_library_module", "make_unresumable", "make_history", "make_library_sync"]
    targets = [f"{INSTALLED}:{name}" for name in names] + [f"{SYNCS}:make_step", f"{SYNCS}:make_clean_step",
                                                           f"{BREAKS}:make_generator"]
    return explain("--syncs", "--device", "cpu", *targets)


def installed_line(text: str) -> int:
    return line_of(DYN / "installed.py", text)


def where(finding: dict) -> tuple:
    """(user line, origin line or None) of a finding."""
    return finding["line"], finding["origin"]["line"] if "origin" in finding else None


def test_breaks_in_installed_code_are_placed_at_the_users_call_with_their_origin(installed_run):
    _, findings = installed_run
    found = at(findings, "PTL450", INSTALLED, installed_line("return standin_lib.two_prints(y)"))
    # two breaks in one library function stay two findings: deduplicated on the origin, not the user line
    expected = [line_of(STANDIN, 'print("first")'), line_of(STANDIN, 'print("second")')]
    assert sorted(f["origin"]["line"] for f in found) == expected
    for finding in found:
        assert finding["origin"]["path"] == str(STANDIN.resolve())
        assert finding["origin"]["function"] == "two_prints"
        assert f"in standin_lib/__init__.py:{finding['origin']['line']} (`two_prints`)" in finding["message"]
        assert "(GB0059)" in finding["message"] and "see PTL401" in finding["message"]


def test_every_break_once_and_none_at_a_fallback_line(installed_run):
    """Dynamo prints repeats of a break without a stack ("user stack suppressed"); each break is
    reported once, where it really is, and nothing lands on a factory's line but the break of
    the installed module that has no user frame at all."""
    _, findings = installed_run
    item, first, second = (line_of(STANDIN, text) for text in (
        "s = y.sum().item()", 'print("first")', 'print("second")'))
    expected = sorted([
        (installed_line("y = standin_lib.scale_by_sum(x)"), item),
        (installed_line("return standin_lib.two_prints(y)"), first),
        (installed_line("return standin_lib.two_prints(y)"), second),
        (installed_line("return standin_lib.generate(x)"), line_of(STANDIN, 'print("sampling")')),
        (installed_line("return standin_lib.generate(x)"), line_of(STANDIN, "with decoding():")),
        (installed_line("peak = standin_lib.read_peak(x)"), line_of(STANDIN, "return x.abs().max().item()")),
        (installed_line("history.append(y.sum().item())"), None),
        (installed_line("if y.mean() > 0:"), None),
        (installed_line("def make_library_module"), line_of(STANDIN, 'print("block")')),  # no user frame
    ])
    assert sorted(where(f) for f in findings if f["code"] == "PTL450" and f["path"] == INSTALLED) == expected


def test_step_unsupported_is_reported_like_explain_does(installed_run):
    """A break inside a `with` block Dynamo cannot resume in ends the graph at the block: explain
    counts that (step_unsupported); so does ptlint, naming the break that caused it."""
    import importlib.util

    import torch

    _, findings = installed_run
    spec = importlib.util.spec_from_file_location("installed_targets", DYN / "installed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(module.decode)(torch.zeros(4))
    truth = sorted(reason.user_stack[-1].lineno for reason in explained.break_reasons)
    found = at(findings, "PTL450", INSTALLED, installed_line("return standin_lib.generate(x)"))
    assert sorted(f["origin"]["line"] for f in found) == truth
    (cut,) = [f for f in found if f["origin"]["line"] == line_of(STANDIN, "with decoding():")]
    assert "step_unsupported" in cut["message"]
    sampling, block = line_of(STANDIN, 'print("sampling")'), line_of(STANDIN, "with decoding():")
    assert (f"The graph break at standin_lib/__init__.py:{sampling} (`_sample`) happened inside the `with` block "
            f"at standin_lib/__init__.py:{block}, where Dynamo cannot resume") in cut["message"]


def test_recompilations_are_dynamos_count(installed_run):
    """history.append(y.sum().item()) in a step called 5 times: Dynamo recompiles 8 times (the step
    4 times, its resume function 4 times); every one counts."""
    import importlib.util
    import logging

    import torch

    result, findings = installed_run
    spec = importlib.util.spec_from_file_location("installed_targets2", DYN / "installed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    records = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())
    torch._dynamo.reset()
    torch._logging.set_logs(recompiles=True)
    logging.getLogger("torch._dynamo").addHandler(handler)
    try:
        fn, calls = module.make_history()
        compiled = torch.compile(fn, backend="eager")
        for args in calls:
            compiled(*args)
    finally:
        logging.getLogger("torch._dynamo").removeHandler(handler)
        torch._logging.set_logs()
    dynamo = sum(text.startswith("Recompiling function") for text in records)
    ours = [f for f in findings if f["code"] == "PTL451" and f["line"] in
            (installed_line("def record_step"), installed_line("history.append(y.sum().item())"))]
    assert dynamo == 8 and sum(f["count"] for f in ours) == dynamo
    # the summary counts every recompilation: here 8 + scale_by_sum's 1 + Block's 2 + measure's 1
    assert sum(f["count"] for f in findings if f["code"] == "PTL451" and f["path"] == INSTALLED) == 12
    assert f"{sum(f['count'] for f in findings if f['code'] == 'PTL451')} recompilation(s)" in result.stderr


def test_guard_text_is_the_guard_and_specialised_constants_are_explained(installed_run):
    _, findings = installed_run
    (step,) = at(findings, "PTL451", INSTALLED, installed_line("def record_step"))
    assert step["message"] == "recompilation of `record_step`, 4 times: guard failed: not G['history']"
    append = installed_line("history.append(y.sum().item())")
    (resumed,) = at(findings, "PTL451", INSTALLED, append)
    assert resumed["message"] == (
        f"recompilation of `record_step` (resumed after line {append}), 4 times: Dynamo guards on the identity of "
        f"the object in use at line {append} (`history.append(y.sum().item())`) (a `builtin_function_or_method`), "
        "and it is a new object on this call")
    (library,) = at(findings, "PTL451", INSTALLED, installed_line("y = standin_lib.scale_by_sum(x)"))
    item = line_of(STANDIN, "s = y.sum().item()")
    assert f"the value read by `.item()` at standin_lib/__init__.py:{item} was specialised as a constant (" \
        in library["message"]
    assert library["message"].endswith("each new value recompiles")
    assert library["origin"] == {"path": str(STANDIN.resolve()), "line": item, "function": "scale_by_sum"}
    for finding in findings:
        if finding["code"] == "PTL451":
            assert " # " not in finding["message"] and "User stack" not in finding["message"], finding


def test_guards_of_a_record_keep_the_guards_only():
    from ptlint.dynamic.events import guards_of

    comment = " " * 40 + "# history.append(y.sum().item())  # tmp/user.py:17 in hist_step"
    stack = ["    - User stack trace:", '    -   File "/tmp/user.py", line 17, in hist_step',
             "    -     history.append(y.sum().item())"]
    record = "\n".join(["Recompiling function hist_step in /tmp/user.py:15",
                        "    triggered by the following guard failure(s):",
                        f"    - 0/1: len(G['history']) == 1{comment}", *stack,
                        f"    - 0/0: not G['history']{comment}", *stack])
    assert guards_of(record) == ["len(G['history']) == 1", "not G['history']"]


def test_break_in_an_installed_module_without_user_frames_goes_to_the_factory(installed_run):
    _, findings = installed_run
    factory = installed_line("def make_library_module")
    recompiles = sorted(f["origin"]["line"] for f in at(findings, "PTL451", INSTALLED, factory))
    assert recompiles == [line_of(STANDIN, "def forward(self, x):"), line_of(STANDIN, 'print("block")')]


def sync_markers() -> set[tuple[int, int]]:
    """(line, syncs per call) of every `# sync: ...` marker in syncs.py (`, N per call` when not 1)."""
    out = set()
    for number, line in enumerate((DYN / "syncs.py").read_text().splitlines(), 1):
        marker = re.search(r"# sync: [^,]+(?:, (\d+) per call)?", line)
        if marker:
            out.add((number, int(marker.group(1) or 1)))
    return out


def test_host_syncs_exactly_at_the_marked_lines(installed_run):
    """Every kind of sync (bool, formatting, .item(), .cpu(), nonzero, a boolean mask, a condition
    per parameter) once per site with its count per call; nothing from Adam's step counter,
    gradient clipping, cross_entropy, backward, or what the code computes from a host copy."""
    _, findings = installed_run
    found = [(f["line"], f["count"]) for f in findings if f["code"] == "PTL452" and f["path"] == SYNCS]
    assert sorted(found) == sorted(sync_markers())


def test_a_sync_spans_its_expression_and_says_what_it_is(installed_run):
    _, findings = installed_run
    line = line_of(DYN / "syncs.py", "correct = (out.argmax(1) == y).sum().item()")
    (item,) = at(findings, "PTL452", SYNCS, line)
    text = (DYN / "syncs.py").read_text().splitlines()[line - 1]
    start = text.index("(out.argmax")
    assert (item["column"], item["end_column"]) == (start + 1, len(text.split("  #")[0]) + 1)
    assert item["message"] == ("host sync: `.item()` reads a value on the host — the host waits for the device "
                               "(1 per call).")
    assert item["name"] == "host-sync" and item["source"] == "dynamic"


def test_a_sync_inside_installed_code_has_its_origin(installed_run):
    _, findings = installed_run
    (sync,) = at(findings, "PTL452", INSTALLED, installed_line("peak = standin_lib.read_peak(x)"))
    assert sync["origin"]["line"] == line_of(STANDIN, "return x.abs().max().item()")
    assert sync["count"] == 1 and "in standin_lib/__init__.py:" in sync["message"]


def test_syncs_summary_and_exit(installed_run):
    result, _ = installed_run
    assert result.returncode == 1
    assert "host-sync site(s)" in result.stderr


def test_syncs_in_a_script_count_per_run():
    result, findings = explain("--syncs", "--script", "fixtures/dynamic/train.py", "--", "--steps", "3")
    assert result.returncode == 1, result.stderr
    (sync,) = [f for f in findings if f["code"] == "PTL452"]
    assert sync["line"] == line_of(DYN / "train.py", "if out.mean() > 10:")
    assert "(3 times in the run)" in sync["message"]


def test_check_dynamic_confirms_a_static_sync_finding():
    project = DYN / "sync_project"
    result = run_ptlint("check", "--dynamic", "--no-cache", "--output-format", "json", ".", cwd=project)
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    line = line_of(project / "loop.py", "total += model(x).sum().item()")
    static = [f for f in findings if f["code"] == "PTL101" and f["line"] == line]
    assert static and static[0]["dynamic"] == "confirmed"
    (sync,) = [f for f in findings if f["code"] == "PTL452"]
    assert (sync["line"], sync["count"]) == (line, 4)


def test_syncs_setting_must_be_a_bool(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint.dynamic]\ntargets = ["a.py:f"]\nsyncs = "yes"\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    result = run_ptlint("check", "--dynamic", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 2 and "syncs must be true or false" in result.stderr


def test_a_break_dynamo_follows_by_skipping_the_function_is_one_finding(installed_run):
    """`sum(v.item() for v in x)`: the .item() break, then Dynamo's second record ("Failed to handle
    graph break gracefully. Skipping the function", GB8335) at the same line: one break, told both."""
    _, findings = installed_run
    (found,) = at(findings, "PTL450", BREAKS, line_of(DYN / "breaks.py", "return sum(v.item() for v in x)"))
    assert "(GB0124)" in found["message"]
    assert found["message"].endswith("Dynamo then gave up on the whole function and ran it eagerly "
                                     "(GB8335: Generator reconstruction with mutations).")
