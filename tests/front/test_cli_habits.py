"""The habits ruff users bring: standard input, colour on a terminal only, --output-file,
--statistics markers that match the findings, noqa prefixes, and the command's own usage."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from helpers import REPO, THREE_FINDINGS, THREE_FINDINGS_SAFE_FIXED, run_ptlint

SOURCE = THREE_FINDINGS
FIXED_SAFE = THREE_FINDINGS_SAFE_FIXED


def codes(stdout: str) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in json.loads(stdout)]


# -- standard input ----------------------------------------------------------------------------

def test_check_reads_standard_input_as_the_named_file(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text('[tool.ptlint]\nper-file-ignores = { "train.py" = ["PTL103"] }\n')
    result = run_ptlint("check", "--output-format", "json", "--stdin-filename", "pkg/train.py", "-",
                        cwd=tmp_path, input=SOURCE)
    assert result.returncode == 1, result.stderr
    # the config of pkg/ and its per-file-ignores apply, as if the file were pkg/train.py
    assert codes(result.stdout) == [("pkg/train.py", 7, "PTL302"), ("pkg/train.py", 12, "PTL101")]
    other = run_ptlint("check", "--output-format", "json", "--stdin-filename", "other.py", "-", cwd=tmp_path,
                       input=SOURCE)
    assert [c for _, _, c in codes(other.stdout)] == ["PTL302", "PTL103", "PTL101"]
    plain = run_ptlint("check", "--output-format", "concise", "-", cwd=tmp_path, input=SOURCE)
    assert plain.stdout.startswith("-:7:12: PTL302 [*] ")
    assert not (tmp_path / ".ptlint_cache").exists()  # standard input is never cached
    clean = run_ptlint("check", "--stdin-filename", "x.py", cwd=tmp_path, input="import torch\n")
    assert clean.returncode == 0 and "All checks passed!" in clean.stdout


def test_fix_on_standard_input_prints_the_fixed_source(tmp_path: Path):
    result = run_ptlint("fix", "--stdin-filename", "train.py", "-", cwd=tmp_path, input=SOURCE)
    assert result.stdout == FIXED_SAFE
    assert result.returncode == 1  # PTL103 and PTL101 remain
    assert "train.py:11:23: PTL103 [-] " in result.stderr and "train.py:12:15: PTL101 " in result.stderr
    unsafe = run_ptlint("fix", "--unsafe-fixes", "--stdin-filename", "train.py", "-", cwd=tmp_path, input=SOURCE)
    assert "losses.append(loss.detach())" in unsafe.stdout
    nothing = subprocess.run([sys.executable, "-m", "ptlint", "fix", "--stdin-filename", "ok.py", "-"], cwd=tmp_path,
                             input=b"x = 1\r\n# caf\xc3\xa9\r\n", capture_output=True, timeout=60)
    assert nothing.returncode == 0 and nothing.stdout == b"x = 1\r\n# caf\xc3\xa9\r\n" and nothing.stderr == b""
    broken = run_ptlint("fix", "--stdin-filename", "bad.py", "-", cwd=tmp_path, input="def f(:\n")
    assert broken.stdout == "def f(:\n" and broken.returncode == 1 and "PTL001" in broken.stderr


def test_standard_input_honours_force_exclude(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nexclude = ["gen"]\n')
    named = run_ptlint("check", "--output-format", "json", "--stdin-filename", "gen/a.py", "-", cwd=tmp_path,
                       input=SOURCE)
    assert named.returncode == 1
    forced = run_ptlint("check", "--force-exclude", "--stdin-filename", "gen/a.py", "-", cwd=tmp_path, input=SOURCE)
    assert forced.returncode == 0, forced.stdout
    echoed = run_ptlint("fix", "--force-exclude", "--stdin-filename", "gen/a.py", "-", cwd=tmp_path, input=SOURCE)
    assert echoed.stdout == SOURCE and echoed.returncode == 0


def test_standard_input_usage_errors(tmp_path: Path):
    (tmp_path / "a.py").write_text("x = 1\n")
    mixed = run_ptlint("check", "-", "a.py", cwd=tmp_path, input=SOURCE)
    assert mixed.returncode == 2 and "standard input" in mixed.stderr
    misplaced = run_ptlint("check", "--stdin-filename", "b.py", "a.py", cwd=tmp_path, input=SOURCE)
    assert misplaced.returncode == 2 and "--stdin-filename" in misplaced.stderr


# -- colour and output files -------------------------------------------------------------------

def _on_terminal(args: list[str], cwd: Path, env: dict) -> str:
    """Run ptlint with its standard output on a pseudo-terminal; what it printed there."""
    primary, secondary = pty.openpty()
    full_env = {**os.environ, **env}
    full_env.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
    process = subprocess.Popen([sys.executable, "-m", "ptlint", *args], cwd=cwd, stdout=secondary,
                               stderr=subprocess.PIPE, env=full_env)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(primary)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_only(tmp_path: Path):
    (tmp_path / "train.py").write_text(SOURCE)
    args = ["check", "--no-cache", "train.py"]
    coloured = _on_terminal(args, tmp_path, {"TERM": "xterm"})
    assert "\x1b[1;31mPTL302\x1b[0m" in coloured and "\x1b[1mtrain.py\x1b[0m" in coloured
    assert "\x1b[" not in _on_terminal(args, tmp_path, {"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b[" not in _on_terminal([*args[:2], "--color", "never", "train.py"], tmp_path, {"TERM": "xterm"})
    assert "\x1b[" not in run_ptlint(*args, cwd=tmp_path).stdout  # piped
    forced = run_ptlint("check", "--no-cache", "--color", "always", "train.py", cwd=tmp_path, env={"NO_COLOR": "1"})
    assert "\x1b[1;31mPTL302\x1b[0m" in forced.stdout
    machine = run_ptlint("check", "--no-cache", "--color", "always", "--output-format", "json", "train.py",
                         cwd=tmp_path)
    assert "\x1b[" not in machine.stdout and json.loads(machine.stdout)


def test_output_file(tmp_path: Path):
    (tmp_path / "train.py").write_text(SOURCE)
    result = run_ptlint("check", "--no-cache", "--output-format", "json", "--output-file", "reports/out.json",
                        "train.py", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert [c for _, _, c in codes((tmp_path / "reports" / "out.json").read_text())] == ["PTL302", "PTL103", "PTL101"]
    text = run_ptlint("check", "--no-cache", "--output-file", "out.txt", "train.py", cwd=tmp_path)
    report = (tmp_path / "out.txt").read_text()
    assert text.stdout == "" and report.startswith("train.py:7:12: PTL302 [*] ") and "Found 3 findings." in report
    assert "\x1b[" not in report
    diff = run_ptlint("fix", "--no-cache", "--output-file", "fix.diff", "train.py", cwd=tmp_path)
    assert diff.stdout == "" and "+    logp = F.log_softmax(model.head, dim=-1)" in (tmp_path / "fix.diff").read_text()
    bad = run_ptlint("check", "--no-cache", "--output-file", "train.py/x", "train.py", cwd=tmp_path)
    assert bad.returncode == 2 and "cannot write the output file" in bad.stderr and "Traceback" not in bad.stderr


def test_statistics_markers_match_the_findings(tmp_path: Path):
    (tmp_path / "train.py").write_text(SOURCE)
    check = run_ptlint("check", "--no-cache", "--output-format", "concise", "train.py", cwd=tmp_path).stdout
    assert " PTL302 [*] " in check and " PTL103 [-] " in check and " PTL101 `" in check
    stats = run_ptlint("check", "--no-cache", "--statistics", "train.py", cwd=tmp_path).stdout.splitlines()
    rows = {line.split()[1]: line.split()[2:] for line in stats}
    assert rows == {"PTL302": ["[*]", "log-of-softmax"], "PTL103": ["[-]", "graph-kept-alive"],
                    "PTL101": ["sync-in-loop"]}
    unsafe = run_ptlint("check", "--no-cache", "--statistics", "--unsafe-fixes", "train.py", cwd=tmp_path).stdout
    assert {line.split()[1]: line.split()[2] for line in unsafe.splitlines()}["PTL103"] == "[*]"


# -- noqa prefixes -----------------------------------------------------------------------------

def test_noqa_prefixes_count_the_same_in_check_and_flake8(tmp_path: Path):
    quiet = SOURCE.replace("losses.append(loss)", "losses.append(loss)  # noqa: PTL1") \
                  .replace("logp = torch.log(F.softmax(model.head, dim=-1))",
                           "logp = torch.log(F.softmax(model.head, dim=-1))  # noqa: PTL30")
    (tmp_path / "train.py").write_text(quiet)
    result = run_ptlint("check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path)
    assert [(line, code) for _, line, code in codes(result.stdout)] == [(12, "PTL101")]
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "PTL", "train.py"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert [line.split()[1] for line in flake8.stdout.splitlines()] == ["PTL101"], flake8.stdout + flake8.stderr
    (tmp_path / "other.py").write_text("# ptlint: noqa: PTL3\n" + SOURCE)
    result = run_ptlint("check", "--no-cache", "--output-format", "json", "other.py", cwd=tmp_path)
    assert [code for _, _, code in codes(result.stdout)] == ["PTL103", "PTL101"]


# -- usage -------------------------------------------------------------------------------------

def test_usage_help_and_version():
    top = run_ptlint("--help")
    assert top.returncode == 0 and all(name in top.stdout for name in ("check", "fix", "explain", "rule", "lsp"))
    assert run_ptlint("--version").stdout.strip().endswith("0.1.0")
    assert run_ptlint().returncode == 2
    unknown = run_ptlint("chek")
    assert unknown.returncode == 2 and "unknown command 'chek'" in unknown.stderr
    check_help = run_ptlint("check", "--help")
    for option in ("--stdin-filename", "--color", "--output-file", "--force-exclude", "--statistics", "--config"):
        assert option in check_help.stdout
    assert run_ptlint("check", "--jobs", "0").returncode == 2
    assert run_ptlint("check", "--output-format", "xml").returncode == 2
    explain = run_ptlint("explain", "--help")
    assert explain.returncode == 0 and "TARGET" in explain.stdout


def test_options_may_follow_paths(tmp_path: Path):
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "b.py").write_text(SOURCE)
    result = run_ptlint("check", "a.py", "--no-cache", "--select", "PTL302", "b.py", "--output-format", "json",
                        cwd=tmp_path)
    assert [(p, c) for p, _, c in codes(result.stdout)] == [("a.py", "PTL302"), ("b.py", "PTL302")]


def test_import_of_the_cli_loads_neither_click_nor_the_dynamic_pass():
    code = ("import sys, ptlint.front.cli; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('click', 'libcst', 'pygls', 'nbformat') or m.startswith('ptlint.dynamic') or m == 'ptlint.report.sarif'); "
            "print(bad); assert not bad")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


# -- ruff's habits that are ptlint's own (docs/ruff.md; the side-by-side cases: test_ruff_parity) --

def test_watch_checks_again_within_a_second_of_an_edit(tmp_path: Path):
    import selectors
    import signal
    import time

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text("import torch\n")
    # the watch ends on Ctrl-C as a terminal delivers it; a test worker that ignores SIGINT would
    # hand that on to the child (an ignored signal stays ignored across exec), so it is reset there
    inherited = signal.getsignal(signal.SIGINT)
    process = subprocess.Popen([sys.executable, "-m", "ptlint", "check", "--watch", "--output-format", "concise",
                                "pkg"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    watched = selectors.DefaultSelector()
    watched.register(process.stdout, selectors.EVENT_READ)
    seen = b""

    def read_until(marker: bytes, limit: float) -> float:
        nonlocal seen
        start = time.monotonic()
        while marker not in seen:
            left = limit - (time.monotonic() - start)
            assert left > 0, seen.decode()
            if watched.select(timeout=left):
                seen += os.read(process.stdout.fileno(), 65536)
        return time.monotonic() - start

    try:
        read_until(b"Watching for file changes.", 60)
        assert b"All checks passed!" in seen and b"Starting linter in watch mode" in seen
        seen = b""
        (tmp_path / "pkg" / "train.py").write_text(SOURCE)
        elapsed = read_until(b"Watching for file changes.", 30)
        assert b"File change detected" in seen and b"pkg/train.py:7:12: PTL302" in seen
        assert elapsed < 1.0, f"the new check took {elapsed:.2f} s to appear"
        seen = b""
        (tmp_path / "pkg" / "notes.txt").write_text("not python")  # no re-check for this
        (tmp_path / "pkg" / "train.py").write_text("import torch\n")
        read_until(b"Watching for file changes.", 30)
        assert b"All checks passed!" in seen and seen.count(b"File change detected") == 1
    finally:
        process.send_signal(signal.SIGINT)
        # read both pipes while waiting: a child blocked writing to a full stderr pipe never ends
        try:
            _, errors = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _, errors = process.communicate()
            raise AssertionError(f"the interrupted watch did not end (SIGINT here: {inherited}): "
                                 + errors.decode(errors="replace")[-2000:]) from None
        assert process.returncode == 0, errors.decode(errors="replace")[-2000:]
    assert b"Traceback" not in errors


COMMAND_NAMES = ("check", "fix", "explain", "rule", "lsp", "server", "clean", "version")


def test_every_command_reads_the_same_on_a_usage_error():
    """One parser (argparse) for every command, `explain` included: the usage, then one
    `ptlint: error:` line, exit 2."""
    for command in COMMAND_NAMES:
        result = run_ptlint(command, "--bogus")
        lines = result.stderr.splitlines()
        assert result.returncode == 2 and result.stdout == "", command
        assert lines[0].startswith(f"usage: ptlint {command} "), (command, lines)
        assert lines[-1] == "ptlint: error: unrecognized arguments: --bogus", (command, lines)
        helped = run_ptlint(command, "--help")
        assert helped.returncode == 0 and helped.stdout.startswith(f"usage: ptlint {command} "), command
    choice = run_ptlint("explain", "--device", "tpu", "x.py:f")
    assert choice.returncode == 2 and choice.stderr.splitlines()[-1] == (
        "ptlint: error: argument --device: invalid choice: 'tpu' (choose from 'auto', 'cpu', 'cuda')")
    timeout = run_ptlint("explain", "--timeout", "0", "x.py:f")
    assert timeout.stderr.splitlines()[-1] == "ptlint: error: argument --timeout: 0 is not more than 0"
    jobs = run_ptlint("check", "--jobs", "0")
    assert jobs.stderr.splitlines()[-1] == "ptlint: error: argument --jobs/-j: 0 is smaller than 1"


def test_explain_errors_are_one_line_like_the_other_commands(tmp_path: Path):
    nothing = run_ptlint("explain", cwd=tmp_path)
    assert nothing.returncode == 2 and nothing.stderr == (
        "ptlint: error: give TARGETs (file.py:factory or package.module:factory), --script FILE, "
        "or configure [tool.ptlint.dynamic] targets\n")
    missing = run_ptlint("explain", "--script", "nope.py", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr == "ptlint: error: nope.py: no such file\n"
    config = run_ptlint("explain", "--config", "nope.toml", "x.py:f", cwd=tmp_path)
    assert config.returncode == 2 and config.stderr == "ptlint: error: nope.toml: config file not found\n"
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint.dynamic]\ntimeout = -1\n")
    bad = run_ptlint("explain", "x.py:f", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("ptlint: error: ") and "timeout" in bad.stderr
    target = run_ptlint("explain", "no_colon_here", cwd=tmp_path)
    assert target.returncode == 2 and target.stderr.startswith("ptlint: error: ") and "\n" == target.stderr[-1]


def test_click_is_gone():
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not [dep for dep in project["dependencies"] if dep.startswith("click")]
    sources = [path for path in (REPO / "ptlint").rglob("*.py") if "import click" in path.read_text()
               or "from click" in path.read_text()]
    assert sources == []
    assert {"pathspec", "watchdog"} <= {dep.split(">")[0].split("=")[0] for dep in project["dependencies"]}


def test_version_and_server_are_commands():
    from ptlint import __version__

    assert run_ptlint("version").stdout == run_ptlint("--version").stdout == f"ptlint {__version__}\n"
    top = run_ptlint("--help").stdout
    for command in COMMAND_NAMES:
        assert f"\n  {command} " in top, command


def test_every_finding_says_what_to_change(tmp_path: Path):
    from ptlint.engine.registry import all_rules

    (tmp_path / "train.py").write_text(SOURCE)
    full = run_ptlint("check", "--no-cache", "train.py", cwd=tmp_path).stdout
    rules = all_rules()
    for code in ("PTL302", "PTL103", "PTL101"):
        assert f"  = help: {rules[code].help}\n" in full, code
    # the fix follows the help, with its safety; a finding without a fix has the help alone
    assert f"  = help: {rules['PTL302'].help}\n  = fix: Use `log_softmax` (Safe fix)\n" in full
    assert "  = fix: " not in full.split("PTL101 `")[1]
    concise = run_ptlint("check", "--no-cache", "--output-format", "concise", "train.py", cwd=tmp_path).stdout
    assert "help" not in concise and len(concise.splitlines()) == 3 + 3  # three findings, a three-line summary
    found = json.loads(run_ptlint("check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path).stdout)
    assert [f["help"] for f in found] == [rules[c].help for c in ("PTL302", "PTL103", "PTL101")]
    sarif = json.loads(run_ptlint("check", "--no-cache", "--output-format", "sarif", "train.py", cwd=tmp_path).stdout)
    run = sarif["runs"][0]
    result = run["results"][2]
    assert result["properties"]["help"] == rules["PTL101"].help
    assert result["message"]["markdown"].endswith(f"\n\n**help:** {rules['PTL101'].help}")
    [descriptor] = [rule for rule in run["tool"]["driver"]["rules"] if rule["id"] == "PTL101"]
    assert descriptor["help"]["markdown"].startswith(f"**help:** {rules['PTL101'].help}\n\n## What it does")


def test_the_engines_and_dynamic_codes_have_help_too(tmp_path: Path):
    from ptlint.engine.registry import BUILTIN_CODES, CODE_HELP, DYNAMIC_CODES

    assert set(CODE_HELP) == set(BUILTIN_CODES) | set(DYNAMIC_CODES)
    (tmp_path / "bad.py").write_text("def f(:\n")
    [found] = json.loads(run_ptlint("check", "--no-cache", "--output-format", "json", "bad.py", cwd=tmp_path).stdout)
    assert found["code"] == "PTL001" and found["help"] == CODE_HELP["PTL001"]
    assert f"= help: {CODE_HELP['PTL001']}" in run_ptlint("check", "--no-cache", "bad.py", cwd=tmp_path).stdout


def test_the_fix_hint_repeats_the_command_so_following_it_writes_what_was_shown(tmp_path: Path):
    import shlex

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(SOURCE)
    (tmp_path / "other.py").write_text(SOURCE)  # not among the paths: the hint must not reach it
    shown = run_ptlint("fix", "--no-cache", "--unsafe-fixes", "src", cwd=tmp_path)
    assert shown.returncode == 1
    hint = shown.stderr.strip().splitlines()[-1]
    assert hint == "2 fix(es) would change 1 file(s); run `ptlint fix --apply --no-cache --unsafe-fixes src` " \
                   "to write them."
    command = shlex.split(hint[hint.index("`") + 1:hint.rindex("`")])
    assert command[:2] == ["ptlint", "fix"]
    followed = run_ptlint(*command[1:], cwd=tmp_path)
    assert "Fixed 2 finding(s) in 1 file(s)" in followed.stderr
    after = (tmp_path / "src" / "train.py").read_text()
    assert "F.log_softmax(model.head, dim=-1)" in after and "losses.append(loss.detach())" in after
    assert (tmp_path / "other.py").read_text() == SOURCE


def test_a_diff_line_ending_in_a_lone_carriage_return_ends_its_line(tmp_path: Path):
    (tmp_path / "mac.py").write_bytes(SOURCE.replace("\n", "\r").encode())
    result = subprocess.run([sys.executable, "-m", "ptlint", "fix", "--no-cache", "mac.py"], cwd=tmp_path,
                            capture_output=True, timeout=60)
    assert result.returncode == 1
    lines = result.stdout.split(b"\n")
    assert b"-    logp = torch.log(F.softmax(model.head, dim=-1))\r" in lines
    assert b"+    logp = F.log_softmax(model.head, dim=-1)\r" in lines
    assert result.stdout.endswith(b"\n")


def test_other_linters_codes_are_skipped_with_a_warning(tmp_path: Path):
    (tmp_path / "train.py").write_text(SOURCE)
    result = run_ptlint("check", "--no-cache", "--ignore", "E501,PTL103", "--extend-select", "B9",
                        "--output-format", "json", "train.py", cwd=tmp_path)
    assert result.returncode == 1
    assert [c for _, _, c in codes(result.stdout)] == ["PTL302", "PTL101"]
    assert result.stderr.splitlines() == [
        "ptlint: warning: --extend-select: 'B9' is not a ptlint code (another linter's?); ignored",
        "ptlint: warning: --ignore: 'E501' is not a ptlint code (another linter's?); ignored"]
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nignore = ["W", "PTL101"]\n'
                                            'per-file-ignores = { "train.py" = ["E501", "PTL302"] }\n')
    configured = run_ptlint("check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path)
    assert [c for _, _, c in codes(configured.stdout)] == ["PTL103"]
    assert "'W' is not a ptlint code" in configured.stderr and "'E501' is not a ptlint code" in configured.stderr
    unknown = run_ptlint("check", "--no-cache", "--ignore", "PTL999", "train.py", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown rule code or prefix 'PTL999'" in unknown.stderr


def test_unused_noqa_is_reported_and_fixed(tmp_path: Path):
    text = SOURCE.replace("print(loss.item())", "print(loss.item())  # noqa: PTL101, PTL102, E501") \
                 .replace("losses = []", "losses = []  # noqa: PTL103  # why")
    (tmp_path / "train.py").write_text(text)
    result = run_ptlint("check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path)
    found = [(f["line"], f["code"], f["message"]) for f in json.loads(result.stdout)]
    assert found == [(6, "PTL002", "unused `noqa` directive (unused: `PTL103`)"),
                     (7, "PTL302", found[1][2]), (11, "PTL103", found[2][2]),
                     (12, "PTL002", "unused `noqa` directive (unused: `PTL102`)")]
    fixed = run_ptlint("check", "--no-cache", "--fix", "train.py", cwd=tmp_path)
    assert "(3 fixed, 1 remaining)" in fixed.stdout
    assert (tmp_path / "train.py").read_text() == FIXED_SAFE.replace(
        "print(loss.item())", "print(loss.item())  # noqa: PTL101, E501").replace("losses = []", "losses = []  # why")
    ignored = run_ptlint("check", "--no-cache", "--ignore", "PTL002", "--output-format", "json", "-", input=text)
    assert "PTL002" not in ignored.stdout


def test_unused_noqa_in_a_notebook_cell(tmp_path: Path):
    cells = [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": ["# Notes"]},
             {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
              "source": ["import torch\n", "x = torch.zeros(3)  # noqa: PTL201"]}]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    result = run_ptlint("check", "--no-cache", "--output-format", "concise", "nb.ipynb", cwd=tmp_path)
    assert result.stdout.startswith("nb.ipynb:cell 2:2:21: PTL002 [*] unused `noqa` directive (unused: `PTL201`)")
    assert run_ptlint("check", "--no-cache", "--fix", "nb.ipynb", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "nb.ipynb").read_text())["cells"][1]["source"] == ["import torch\n",
                                                                                  "x = torch.zeros(3)"]


def test_ruff_and_flake8_file_noqa_count_the_same_in_check_and_flake8(tmp_path: Path):
    # flake8 skips a file whose line of its own starts with its file-wide noqa, codes or not; ptlint too
    for head, left in (("# ruff: noqa\n", []), ("# flake8: noqa: PTL101\n", []), ("# FLAKE8=NOQA\n", []),
                       ("x = 1  # flake8: noqa\n", ["PTL302", "PTL103", "PTL101"]),
                       ("# ruff: noqa: PTL1\n", ["PTL302"])):
        (tmp_path / "train.py").write_text(head + SOURCE)
        check = run_ptlint("check", "--no-cache", "--output-format", "json", "train.py", cwd=tmp_path)
        assert [c for _, _, c in codes(check.stdout)] == left, head
        flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "PTL", "train.py"], cwd=tmp_path,
                                capture_output=True, text=True, timeout=120)
        assert sorted(line.split()[1] for line in flake8.stdout.splitlines()) == sorted(left), (head, flake8.stdout)


def test_check_fix_on_standard_input_prints_the_fixed_source(tmp_path: Path):
    result = run_ptlint("check", "--fix", "--stdin-filename", "train.py", "-", cwd=tmp_path, input=SOURCE)
    assert result.stdout == FIXED_SAFE and result.returncode == 1
    diff = run_ptlint("check", "--diff", "--stdin-filename", "train.py", "-", cwd=tmp_path, input=SOURCE)
    assert "+    logp = F.log_softmax(model.head, dim=-1)" in diff.stdout and diff.returncode == 1


def test_add_noqa_in_notebooks_and_where_no_comment_can_go(tmp_path: Path):
    (tmp_path / "a.py").write_text(SOURCE + 'note = f"""{torch.log(F.softmax(model.head, dim=-1))}\n"""\n')
    result = run_ptlint("check", "--no-cache", "--add-noqa", "a.py", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.splitlines() == [
        "ptlint: a.py:14: no `# noqa` added: the line ends inside a string or continues with `\\`",
        "Added 3 noqa directives."]
    text = (tmp_path / "a.py").read_text()
    assert "    logp = torch.log(F.softmax(model.head, dim=-1))  # noqa: PTL302\n" in text
    assert "        losses.append(loss)  # noqa: PTL103\n" in text and "print(loss.item())  # noqa: PTL101\n" in text
    cells = [{"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
              "source": SOURCE.splitlines(keepends=True)}]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    assert run_ptlint("check", "--no-cache", "--add-noqa", "nb.ipynb", cwd=tmp_path).returncode == 0
    assert run_ptlint("check", "--no-cache", "nb.ipynb", cwd=tmp_path).returncode == 0
    again = run_ptlint("check", "--no-cache", "--add-noqa", "nb.ipynb", cwd=tmp_path)
    assert again.stderr == "Added 0 noqa directives.\n"
    refused = run_ptlint("check", "--add-noqa", "-", cwd=tmp_path, input=SOURCE)
    assert refused.returncode == 2 and refused.stderr == "ptlint: error: --add-noqa writes files: it cannot read " \
                                                         "standard input\n"


def test_config_values_isolated_and_conflicting_options(tmp_path: Path):
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nignore = ["PTL1"]\n')

    def found(*args: str) -> list[str]:
        result = run_ptlint("check", "--no-cache", "--output-format", "json", *args, "train.py", cwd=tmp_path)
        assert result.returncode in (0, 1), result.stderr
        return [c for _, _, c in codes(result.stdout)]

    assert found() == ["PTL302"]
    assert found("--isolated") == ["PTL302", "PTL103", "PTL101"]
    assert found("--config", "ignore = []") == ["PTL302", "PTL103", "PTL101"]
    assert found("--config", "tool.ptlint.ignore = ['PTL3']") == ["PTL103", "PTL101"]
    # overrides win over the file, flags over both
    assert found("--config", "ignore = []", "--ignore", "PTL101") == ["PTL302", "PTL103"]
    assert found("--isolated", "--config", "select = ['PTL101']") == ["PTL101"]
    for args, message in [
        (["--config", "nope = 1"], "ptlint: error: --config 'nope = 1': unknown key(s) in [tool.ptlint]: nope"),
        (["--config", "select = "], "ptlint: error: --config 'select = ': neither a config file nor a TOML"),
        (["--config", "missing.toml"], "ptlint: error: --config 'missing.toml': no such file, and not a TOML"),
        (["--isolated", "--config", "pyproject.toml"], "ptlint: error: --isolated ignores every config file"),
        (["--config", "pyproject.toml", "--config", "pyproject.toml"], "ptlint: error: --config: one config file"),
        (["--fix", "--add-noqa"], "ptlint: error: --add-noqa and --fix cannot be combined"),
        (["--show-files", "--diff"], "ptlint: error: --diff and --show-files cannot be combined"),
        (["--watch", "--add-noqa"], "ptlint: error: --watch checks files on disk: not with standard input, --add-noqa"),
        (["--statistics", "--output-format", "sarif"], "ptlint: error: --statistics prints text or JSON, not sarif"),
    ]:
        result = run_ptlint("check", *args, "train.py", cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.startswith(message), (args, result.stderr)


def test_show_settings_and_show_files(tmp_path: Path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "pyproject.toml").write_text('[tool.ptlint]\nselect = ["PTL1"]\nexclude = ["gen/*"]\n')
    (tmp_path / "base" / "proj").mkdir()
    (tmp_path / "base" / "proj" / "pyproject.toml").write_text(
        '[tool.ptlint]\nextend = "../pyproject.toml"\nignore = ["PTL101"]\nrespect-gitignore = false\n')
    (tmp_path / "base" / "proj" / "a.py").write_text("x = 1\n")
    result = run_ptlint("check", "--show-settings", "base/proj/a.py", cwd=tmp_path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "Resolved settings for: base/proj/a.py"
    values = {line.split(" = ", 1)[0]: json.loads(line.split(" = ", 1)[1]) for line in lines[1:]}
    assert values["config"] == os.path.join("base", "proj", "pyproject.toml") or values["config"].endswith(
        "base/proj/pyproject.toml")
    assert "PTL101" not in values["enabled"] and "PTL102" in values["enabled"] and "PTL302" not in values["enabled"]
    assert values["exclude"] == ["../gen/*"] and values["respect-gitignore"] is False
    listed = run_ptlint("check", "--show-files", "base", cwd=tmp_path)
    assert listed.stdout == "base/proj/a.py\n" and listed.returncode == 0


def test_clean_removes_only_ptlints_caches(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.py").write_text(SOURCE)
    assert run_ptlint("check", "sub/a.py", cwd=tmp_path).returncode == 1
    caches = list(tmp_path.rglob(".ptlint_cache"))
    assert caches, "the check wrote no cache"
    impostor = tmp_path / "data" / ".ptlint_cache"
    impostor.mkdir(parents=True)
    (impostor / "precious.txt").write_text("keep me")
    result = run_ptlint("clean", "-v", cwd=tmp_path)
    assert result.returncode == 0
    assert not any(cache.exists() for cache in caches) and (impostor / "precious.txt").exists()
    assert f"Removing cache at: {os.path.relpath(caches[0], tmp_path)}" in result.stderr
    assert "data/.ptlint_cache: not removed: it does not look like a ptlint cache" in result.stderr
