"""The habits ruff users bring: standard input, colour on a terminal only, --output-file,
--statistics markers that match the findings, noqa prefixes, and the command's own usage."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import REPO, run_ptlint

# PTL302 (safe fix) on line 7, PTL103 (unsafe fix) on line 10, PTL101 (no fix) on line 11
SOURCE = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F


    def train(model, loader):
        losses = []
        logp = torch.log(F.softmax(model.head, dim=-1))
        for x in loader:
            loss = model(x).mean()
            loss.backward()
            losses.append(loss)
            print(loss.item())
        return losses, logp
""")
FIXED_SAFE = SOURCE.replace("torch.log(F.softmax(model.head, dim=-1))", "F.log_softmax(model.head, dim=-1)")


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
