"""The dynamic pass's messages where user code exits, hangs after compiling, or has Dynamo end a
graph early inside a library; a script that compiles nothing; and the host-sync timings a CUDA
run adds (their arithmetic and wording here on the CPU, the measurement itself on a CUDA device)."""

from __future__ import annotations

import json
import re

import pytest
import torch

from ptlint.dynamic.report import Summary, event_findings, sync_message, sync_wait
from ptlint.dynamic.runner import _tail
from ptlint.testing import GuardFailure, no_graph_breaks

from helpers import FIXTURES, REPO, run_ptlint

DYN = FIXTURES / "dynamic"
FAILING = "fixtures/dynamic/failing.py"
STANDIN = DYN / "site-packages"


def line_of(path, text: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {path}")


def explain(*args: str) -> tuple:
    result = run_ptlint("explain", "--output-format", "json", *args, cwd=REPO)
    return result, (json.loads(result.stdout) if result.stdout.strip() else [])


@pytest.fixture(scope="module")
def failing_run():
    """os._exit in a run function, then a target that compiles two graphs and hangs, then one
    that must still run."""
    return explain("--timeout", "10", f"{FAILING}:make_os_exit", f"{FAILING}:make_compiles_then_hangs",
                   "fixtures/dynamic/breaks.py:make_print")


def test_os_exit_is_reported_at_the_line_that_exits(failing_run):
    result, findings = failing_run
    (failed,) = [f for f in findings if f["code"] == "PTL459" and "make_os_exit" in f["message"]]
    assert failed["path"] == FAILING and failed["line"] == line_of(DYN / "failing.py", "os._exit(0)  # ends")
    assert failed["message"].endswith(": called os._exit(0)")
    assert "torch" not in failed["message"]  # no quoted line of torch's source


def test_a_timeout_keeps_the_graphs_compiled_before_it(failing_run):
    result, findings = failing_run
    (hang,) = [f for f in findings if f["code"] == "PTL459" and "timed out after 10 s" in f["message"]]
    source = (DYN / "failing.py").read_text().splitlines()
    start = line_of(DYN / "failing.py", "def sleep_forever")
    assert (hang["path"], hang["line"]) == (FAILING, next(
        number for number in range(start, len(source) + 1) if "time.sleep(0.05)" in source[number - 1]))
    # the hanging target compiled 2 graphs before it hung (its first call's, and its second's up
    # to the hang); make_os_exit and make_print compile 1 each (2 when run alone)
    assert re.search(r"3 target\(s\) run, 4 graph\(s\)", result.stderr), result.stderr
    # and the target after both still ran
    assert any(f["code"] == "PTL450" and f["path"] == "fixtures/dynamic/breaks.py" for f in findings)


def test_a_script_ending_in_os_exit_ends_normally():
    result, findings = explain("--syncs", "--script", "fixtures/dynamic/exits_script.py")
    assert [(f["code"], f["line"]) for f in findings] == [
        ("PTL452", line_of(DYN / "exits_script.py", "print(out.sum().item())"))], result.stderr
    assert "0 failed" in result.stderr and "1 graph(s)" in result.stderr


def test_a_script_that_compiles_nothing_says_so():
    result, findings = explain("--script", "fixtures/dynamic/eager_script.py")
    assert (result.returncode, findings) == (0, [])
    assert "0 graph(s)" in result.stderr
    assert ("note: fixtures/dynamic/eager_script.py compiled nothing: no `torch.compile`d function or module ran "
            "in it") in result.stderr


def test_a_script_that_compiles_says_nothing_of_the_kind():
    result, _ = explain("--script", "fixtures/dynamic/train.py", "--", "--steps", "1")
    assert "compiled nothing" not in result.stderr and "note:" not in result.stderr


def test_step_unsupported_names_the_break_in_another_module_and_the_block():
    """A transformers-like layer calls, inside a `try`, a check in another module whose
    `logger.warning_once` breaks the graph; Dynamo cannot resume inside the `try`, ends the graph
    before it and runs the rest of `forward` eagerly. The message names both places."""
    import sys

    sys.path.insert(0, str(STANDIN))
    from standin_lib.layers import Layer

    layers, checks = STANDIN / "standin_lib" / "layers.py", STANDIN / "standin_lib" / "checks.py"
    with pytest.raises(GuardFailure) as failure:
        with no_graph_breaks():
            torch.compile(Layer(), backend="eager")(torch.randn(2, 4))
    (cut,) = [f for f in failure.value.findings if "step_unsupported" in f.message]
    warning = line_of(checks, "logger.warning_once(")
    block = line_of(layers, "try:")
    assert cut.extra["origin"]["line"] == block and cut.extra["origin"]["function"] == "forward"
    assert (f"The graph break at standin_lib/checks.py:{warning} (`check_attention`) happened inside the `try` "
            f"block at standin_lib/layers.py:{block}, where Dynamo cannot resume, so the graph ends there and the "
            "rest of `forward` runs eagerly.") in cut.message
    assert "this `with`" not in cut.message
    (logged,) = [f for f in failure.value.findings if "GB0291" in f.message]
    assert logged.extra["origin"]["line"] == warning


def test_the_stderr_tail_skips_quoted_source_lines(tmp_path):
    stderr = tmp_path / "stderr.txt"
    stderr.write_text("/x/torch/_dynamo/utils.py:12: UserWarning: something\n"
                      "  torch._dynamo.utils.warn_once(explanation)\n")
    assert _tail(str(stderr)) == "/x/torch/_dynamo/utils.py:12: UserWarning: something"
    stderr.write_text("Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\n"
                      "    boom()\nRuntimeError: out of memory\n")
    assert _tail(str(stderr)) == "RuntimeError: out of memory"


# -- host-sync timings: the arithmetic and the words (CPU), the measurement (CUDA) -----------------

def sync_event(line: int, count: int, call: int, wait_ms: float | None, calls: int = 3, what: str = "`.item()`"):
    event = {"event": "sync", "index": 0, "file": str(DYN / "syncs.py"), "line": line, "column": None,
             "end_line": None, "end_column": None, "function": "train_step", "what": what, "origin": None,
             "count": count, "calls": calls, "call": call}
    if wait_ms is not None:
        event["wait_ms"] = wait_ms
    return event


def test_the_wait_per_call_is_a_median_over_every_call():
    # waited 3.0 and 4.0 ms in two of three calls, none in the third: median 3.0, total 7.0
    waits = {(0, 0): 3.0, (0, 2): 4.0}
    assert sync_wait(waits, 3, 70.0) == {"median": 3.0, "total": 7.0, "share": 0.1}
    assert sync_wait({(0, 0): 2.0}, 4, 0.0) == {"median": 0.0, "total": 2.0, "share": None}
    assert sync_wait({(0, 0): 1.0, (0, 1): 2.0, (0, 2): 9.0, (0, 3): 4.0}, 4, 100.0)["median"] == 3.0


def test_the_message_says_how_long_the_host_waits_and_its_share():
    wait = {"median": 3.2, "total": 9.6, "share": 0.11}
    assert sync_message(["`.item()` reads a value on the host"], None, 3, 3, "call", wait) == (
        "host sync: `.item()` reads a value on the host — the host waits for the device (1 per call): "
        "it waits 3.20 ms per call (median; 9.60 ms in all, 11% of the wall time).")
    assert sync_message(["x"], None, 1, 1, "run", {"median": 250.0, "total": 250.0, "share": None}).endswith(
        "(1 time in the run): it waits 250 ms per run (median; 250 ms in all).")
    assert sync_message(["x"], None, 2, 1, "call") == "host sync: x — the host waits for the device (2 per call)."


def test_timed_events_become_a_findings_wait():
    """Two kinds of sync on one line are one finding: their waits add up per call."""
    events = [sync_event(29, 1, 0, 2.0), sync_event(29, 1, 0, 1.0, what="`.cpu()`"), sync_event(29, 1, 1, 3.0),
              sync_event(29, 1, 2, 2.5), sync_event(31, 1, 0, None),
              {"event": "timed", "index": 0, "seconds": 0.01}, {"event": "timed", "index": 0, "seconds": 0.02}]
    findings, counts = event_findings(events, lambda event: "target")
    timed, untimed = sorted(findings, key=lambda f: f.line)
    assert timed.extra["wait_ms"] == {"median": 3.0, "total": 8.5, "share": round(8.5 / 30.0, 4)}
    assert timed.extra["count"] == 1.33  # 4 syncs in 3 calls
    assert "it waits 3.00 ms per call (median; 8.50 ms in all, 28% of the wall time)" in timed.message
    assert "wait_ms" not in untimed.extra and "it waits" not in untimed.message
    assert counts.syncs == 5


def test_the_summary_prints_its_notes_under_the_line():
    summary = Summary(1, 0, 0, 0, 0, 1.0, "cpu", 2, ["one thing", "another"])
    assert summary.line("explain").splitlines() == [
        "ptlint explain: 1 target(s) run, 0 graph(s), 0 graph break(s), 0 recompilation(s), 2 host-sync site(s), "
        "0 failed, 1.0 s on cpu", "note: one thing", "note: another"]


CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="needs a CUDA device: the host's wait at a sync is measured only there")


@CUDA
def test_on_cuda_each_site_has_its_wait_and_the_debug_mode_agrees():
    """On a GPU: the training script's three reads are timed, their waits are positive and add up
    to less than the run; torch.cuda.set_sync_debug_mode counts as many syncs at those lines."""
    result, findings = explain("--syncs", "--device", "cuda", "--script", "fixtures/dynamic/shadow_train.py")
    syncs = [f for f in findings if f["code"] == "PTL452"]
    assert len(syncs) == 3, result.stderr
    for finding in syncs:
        wait = finding["wait_ms"]
        assert wait["total"] > 0 and 0 < wait["share"] < 1
        assert "ms per run" in finding["message"]
    assert "not timed" not in result.stderr


def test_code_inductor_generated_is_not_the_users(tmp_path):
    """A hang inside a compiled kernel's wrapper is placed at the user's line, not in inductor's cache."""
    from ptlint.dynamic.paths import is_user_file

    generated = tmp_path / "torchinductor_someone" / "ab" / "cabcdef.py"
    generated.parent.mkdir(parents=True)
    generated.write_text("def call(args):\n    pass\n")
    mine = tmp_path / "train.py"
    mine.write_text("x = 1\n")
    assert not is_user_file(str(generated)) and is_user_file(str(mine))


def test_sync_messages_count_per_call_or_per_run_and_name_each_kind():
    origin = {"path": str(STANDIN / "standin_lib" / "__init__.py"), "line": 47, "function": "read_peak"}
    assert sync_message(["`.item()`", "formatting"], origin, 5, 3, "call") == (
        "host sync: `.item()`; formatting in standin_lib/__init__.py:47 (`read_peak`), reached from this line "
        "— the host waits for the device (5 in 3 calls).")
    assert sync_message(["x"], None, 1, 1, "run").endswith("(1 time in the run).")
    assert sync_message(["x"], None, 3, 1, "block").endswith("(3 times in the block).")


def test_waits_are_rounded_and_shown_to_the_hundredth_below_100_ms():
    from ptlint.dynamic.report import _ms

    assert sync_wait({(0, 0): 1.234567}, 1, 0.5) == {"median": 1.2346, "total": 1.2346, "share": 2.4691}
    assert [_ms(v) for v in (0.004, 99.994, 100.0, 100.4, 1234.5)] == ["0.00", "99.99", "100", "100", "1234"]


def test_a_summary_without_syncs_or_device_says_neither():
    assert Summary(2, 3, 1, 0, 1, 2.25, None).line("check --dynamic") == (
        "ptlint check --dynamic: 2 target(s) run, 3 graph(s), 1 graph break(s), 0 recompilation(s), 1 failed, 2.2 s")


def test_two_kinds_of_sync_on_one_line_are_one_finding_spanning_both():
    first = dict(sync_event(29, 1, 0, None), column=5, end_line=29, end_column=12)
    second = dict(sync_event(29, 2, 0, None, what="formatting"), column=20, end_line=29, end_column=31)
    (finding,), _ = event_findings([first, second], lambda event: "target")
    assert (finding.column, finding.end_column) == (5, 31)
    assert finding.message.startswith("host sync: `.item()`; formatting — ")
    assert finding.extra["count"] == 1  # 3 syncs in 3 calls


def test_an_exit_is_named_by_the_call_on_its_line():
    from ptlint.dynamic.worker import _describe

    failing = DYN / "failing.py"
    os_exit = (str(failing), line_of(failing, "os._exit(0)  # ends"))
    sys_exit = (str(failing), line_of(failing, "sys.exit(3)"))
    assert _describe(SystemExit(0), os_exit) == "called os._exit(0)"
    assert _describe(SystemExit(3), sys_exit) == "called sys.exit(3)"
    assert _describe(SystemExit(2)) == "called sys.exit(2)"
    assert _describe(RuntimeError("no checkpoint\nmore")) == "RuntimeError: no checkpoint"


def test_the_summary_counts_graph_events_and_notes_targets_that_compiled_nothing():
    from ptlint.dynamic.report import findings_from
    from ptlint.dynamic.runner import Failure, RunResult, parse_target, script_target

    targets = [script_target("fixtures/dynamic/eager_script.py", []), parse_target(f"{FAILING}:make_raises"),
               parse_target("fixtures/dynamic/breaks.py:make_clean"),
               parse_target("fixtures/dynamic/breaks.py:make_loop")]
    for index, target in enumerate(targets):
        target["index"] = index
    events = [{"event": "start", "index": i, "location": None} for i in range(4)]
    events += [{"event": "graph", "index": 2}, {"event": "graph", "index": 2}, {"event": "end", "index": 3}]
    run = RunResult(targets, events, [Failure(1, "make_raises: the factory failed")], device="cpu", syncs=True)
    findings, summary = findings_from(run)
    assert (summary.targets, summary.graphs, summary.failed, summary.syncs) == (4, 2, 1, 0)
    assert summary.notes == [
        "fixtures/dynamic/eager_script.py compiled nothing: no `torch.compile`d function or module ran in it, so "
        "Dynamo had nothing to observe (is the torch.compile call behind a flag?)",
        "fixtures/dynamic/breaks.py:make_loop: Dynamo compiled no graph (it ran every frame of it eagerly)",
        "host syncs are counted, not timed, on cpu: with no accelerator the host never waits, so there is no wait "
        "to measure; on a CUDA machine (--device cuda) each site also shows how long the host waited there"]
    assert [f.code for f in findings] == ["PTL459"]
    timed = RunResult(targets[2:3], [{"event": "graph", "index": 0}, {"event": "timed", "index": 0, "seconds": 1.0}],
                      device="cuda", syncs=True)
    for target in timed.targets:
        target["index"] = 0
    assert findings_from(timed)[1].notes == []


@pytest.mark.parametrize("device, hidden", [("cpu", True), ("auto", False)])
def test_device_cpu_hides_the_gpu_from_the_program(tmp_path, device, hidden):
    """`--device cpu` runs the program on the CPU even on a GPU machine (the device shadow stands in
    for the GPU); otherwise the program sees the machine's devices as the user set them."""
    script = tmp_path / "sees.py"
    script.write_text("import os\n\n"
                      "seen = os.environ.get('CUDA_VISIBLE_DEVICES'), os.environ.get('HIP_VISIBLE_DEVICES')\n"
                      "if seen != ('', ''):\n"
                      "    raise SystemExit(f'visible devices: {seen}')\n")
    result = run_ptlint("explain", "--device", device, "--output-format", "json", "--script", str(script),
                        env={"CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "0"})
    failures = [f["message"] for f in json.loads(result.stdout) if f["code"] == "PTL459"]
    if hidden:
        assert failures == [], result.stderr
    else:
        assert len(failures) == 1 and "visible devices: ('0', '0')" in failures[0], failures
