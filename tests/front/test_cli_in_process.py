"""The command line in the test process (so that mutation testing sees ptlint.front.cli): what each
option prints, where, and the exit code. The same behaviours through a real child process, and
side by side with ruff, are in test_cli_habits.py and test_ruff_parity.py."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from helpers import THREE_FINDINGS, THREE_FINDINGS_SAFE_FIXED

from ptlint.front import cli

SOURCE = THREE_FINDINGS
SAFE = THREE_FINDINGS_SAFE_FIXED
BOTH = SAFE.replace("losses.append(loss)", "losses.append(loss.detach())")


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    (tmp_path / "train.py").write_text(SOURCE)
    return tmp_path


def ptlint(capsys, *argv: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    code = cli.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def codes(out: str) -> list[tuple[int, str]]:
    return [(f["line"], f["code"]) for f in json.loads(out)]


def test_check_exit_codes_and_formats(here, capsys):
    assert ptlint(capsys, "check", "-n", "--output-format", "json", "train.py")[0] == 1
    code, out, err = ptlint(capsys, "check", "-n", "--output-format", "json", "train.py")
    assert codes(out) == [(7, "PTL302"), (11, "PTL103"), (12, "PTL101")] and err == ""
    code, out, _ = ptlint(capsys, "check", "-n", "-e", "train.py")
    assert code == 0 and out.endswith("Found 3 findings.\n[*] 1 fixable with `ptlint fix --apply`.\n"
                                      "[-] 1 more fixable with `ptlint fix --apply --unsafe-fixes`.\n")
    code, out, _ = ptlint(capsys, "check", "-n", "-q", "--output-format", "concise", "train.py")
    assert code == 1 and len(out.splitlines()) == 3 and "Found" not in out
    code, out, err = ptlint(capsys, "check", "-n", "-s", "train.py")
    assert (code, out, err) == (1, "", "")
    code, out, _ = ptlint(capsys, "check", "-n", "-o", "report.txt", "--output-format", "concise", "train.py")
    assert code == 1 and out == "" and (here / "report.txt").read_text().startswith("train.py:7:12: PTL302 [*] ")
    (here / "clean.py").write_text("x = 1\n")
    assert ptlint(capsys, "check", "-n", "clean.py") == (0, "All checks passed!\n", "")
    assert ptlint(capsys, "check", "-n", "--silent", "clean.py") == (0, "", "")


def test_check_fix_reports_what_remains(here, capsys):
    code, out, err = ptlint(capsys, "check", "-n", "--fix", "--output-format", "concise", "train.py")
    assert code == 1 and err == ""
    assert (here / "train.py").read_text() == SAFE
    assert out.endswith("Found 3 findings (1 fixed, 2 remaining).\n[-] 1 more fixable with "
                        "`ptlint fix --apply --unsafe-fixes`.\n")
    assert [line.split(": ")[1].split()[0] for line in out.splitlines()[:2]] == ["PTL103", "PTL101"]
    (here / "train.py").write_text(SOURCE)
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "--unsafe-fixes", "--show-fixes", "--output-format",
                          "concise", "train.py")
    assert code == 1 and (here / "train.py").read_text() == BOTH
    assert "\nFixed 2 findings:\n- train.py:\n    1 × PTL103 (graph-kept-alive)\n    1 × PTL302 (log-of-softmax)\n\n" \
           "Found 3 findings (2 fixed, 1 remaining).\n" in out
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "--exit-zero", "train.py")
    assert code == 0 and "Found 1 finding.\n" in out
    (here / "fixable.py").write_text(SOURCE.replace("        print(loss.item())\n", "")
                                     .replace("losses.append(loss)", "losses.append(loss.detach())"))
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "fixable.py")
    assert code == 0 and out.endswith("Found 1 finding (1 fixed, 0 remaining).\n")
    (here / "fixable.py").write_text(SOURCE.replace("        print(loss.item())\n", "")
                                     .replace("losses.append(loss)", "losses.append(loss.detach())"))
    assert ptlint(capsys, "check", "-n", "--fix", "--exit-non-zero-on-fix", "fixable.py")[0] == 1
    assert ptlint(capsys, "check", "-n", "--fix", "--exit-non-zero-on-fix", "fixable.py")[0] == 0
    assert ptlint(capsys, "check", "-n", "--fix", "--no-fix", "fixable.py")[0] == 0


def test_diff_and_fix_only(here, capsys):
    code, out, err = ptlint(capsys, "check", "-n", "--diff", "train.py")
    assert code == 1 and err == "" and (here / "train.py").read_text() == SOURCE
    assert out.startswith("--- a/train.py\n+++ b/train.py\n") and out.endswith("\nWould fix 1 finding.\n")
    code, out, _ = ptlint(capsys, "check", "-n", "--diff", "-q", "--unsafe-fixes", "train.py")
    assert code == 1 and "Would fix" not in out and "+        losses.append(loss.detach())\n" in out
    code, out, _ = ptlint(capsys, "check", "-n", "--fix-only", "--show-fixes", "train.py")
    assert code == 0 and (here / "train.py").read_text() == SAFE
    assert out == "\nFixed 1 finding:\n- train.py:\n    1 × PTL302 (log-of-softmax)\n\nFixed 1 finding.\n"
    assert ptlint(capsys, "check", "-n", "--fix-only", "train.py") == (0, "", "")
    assert ptlint(capsys, "check", "-n", "--diff", "train.py") == (0, "", "")
    (here / "train.py").write_text(SOURCE)
    code, out, _ = ptlint(capsys, "check", "-n", "--fix-only", "--exit-non-zero-on-fix", "-q", "train.py")
    assert (code, out) == (1, "")


def test_add_noqa_show_files_and_show_settings(here, capsys):
    code, out, err = ptlint(capsys, "check", "-n", "--add-noqa", "train.py")
    assert (code, out, err) == (0, "", "Added 3 noqa directives.\n")
    text = (here / "train.py").read_text()
    assert text.count("  # noqa: PTL") == 3 and "losses.append(loss)  # noqa: PTL103\n" in text
    assert ptlint(capsys, "check", "-n", "--add-noqa", "train.py") == (0, "", "Added 0 noqa directives.\n")
    assert ptlint(capsys, "check", "-n", "--add-noqa", "-s", "train.py") == (0, "", "")
    (here / "sub").mkdir()
    (here / "sub" / "b.py").write_text("x = 1\n")
    assert ptlint(capsys, "check", "--show-files", ".") == (0, "sub/b.py\ntrain.py\n", "")
    code, out, _ = ptlint(capsys, "check", "--show-settings", "--select", "PTL1", "sub")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "Resolved settings for: sub/b.py" and lines[1] == "config = null"
    assert lines[2] == f"root = {json.dumps(str(here))}" and lines[3].startswith('enabled = ["PTL101", "PTL102"')
    code, out, _ = ptlint(capsys, "check", "--show-settings", "empty")
    assert code == 2 and out.startswith("Resolved settings for: empty\n")


def test_standard_input(here, capsys, monkeypatch):
    code, out, err = ptlint(capsys, "check", "--fix", "--stdin-filename", "t.py", "-", stdin=SOURCE,
                            monkeypatch=monkeypatch)
    assert (code, err.splitlines()[0].split(": ")[1][:6]) == (1, "PTL103")
    code, out, _ = ptlint(capsys, "check", "--diff", "-", stdin=SOURCE, monkeypatch=monkeypatch)
    assert code == 1 and "+++ b/-\n" in out
    with pytest.raises(cli.Failure, match="--add-noqa writes files"):
        ptlint(capsys, "check", "--add-noqa", "-", stdin=SOURCE, monkeypatch=monkeypatch)
    with pytest.raises(cli.Failure, match="cannot be combined with other paths"):
        ptlint(capsys, "check", "-", "train.py", stdin=SOURCE, monkeypatch=monkeypatch)
    with pytest.raises(cli.Failure, match="--stdin-filename names standard input"):
        ptlint(capsys, "check", "--stdin-filename", "x.py", "train.py")


@pytest.mark.parametrize("argv,message", [
    (["--fix", "--add-noqa"], "--add-noqa and --fix cannot be combined"),
    (["--fix-only", "--show-files"], "--show-files and --fix-only cannot be combined"),
    (["--show-settings", "--show-files"], "--show-files and --show-settings cannot be combined"),
    (["--watch", "--diff"], "--watch checks files on disk"),
    (["--watch", "-"], "--watch checks files on disk"),
    (["--statistics", "--output-format", "github"], "--statistics prints text or JSON, not github"),
    (["--config", "x = 1"], "--config 'x = 1': unknown key(s)"),
    (["--config", "nothing-here"], "--config 'nothing-here': no such file, and not a TOML `key = value` pair"),
    (["--isolated", "--config", "pyproject.toml"], "--isolated ignores every config file"),
    (["--config", "pyproject.toml", "--config", "other.toml"], "--config: one config file at most"),
    (["--select", "PTL99"], "--select: unknown rule code or prefix 'PTL99'"),
])
def test_usage_failures(here, capsys, argv, message):
    (here / "pyproject.toml").write_text("[tool.ptlint]\n")
    (here / "other.toml").write_text("[tool.ptlint]\n")
    with pytest.raises(cli.Failure) as failure:
        ptlint(capsys, "check", *argv, "train.py")
    assert str(failure.value).startswith(message)


def test_the_diff_and_fix_both_combine_with_fix(here, capsys):
    """--diff with --fix is --diff (ruff's: it implies --fix-only)."""
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "--diff", "train.py")
    assert code == 1 and (here / "train.py").read_text() == SOURCE and out.endswith("Would fix 1 finding.\n")


def test_warnings_for_other_linters_codes(here, capsys):
    code, out, err = ptlint(capsys, "check", "-n", "--ignore", "E501", "--output-format", "json", "train.py")
    assert code == 1 and len(codes(out)) == 3
    assert err == "ptlint: warning: --ignore: 'E501' is not a ptlint code (another linter's?); ignored\n"
    code, _, err = ptlint(capsys, "check", "-n", "--show-files", "--select", "W6", "train.py")
    assert code == 0 and "'W6' is not a ptlint code" in err


def test_statistics(here, capsys):
    code, out, _ = ptlint(capsys, "check", "-n", "--statistics", "--output-format", "json", "train.py")
    assert code == 1 and json.loads(out) == [
        {"code": "PTL101", "name": "sync-in-loop", "count": 1, "fixable": False, "fixable_count": 0},
        {"code": "PTL103", "name": "graph-kept-alive", "count": 1, "fixable": False, "fixable_count": 0},
        {"code": "PTL302", "name": "log-of-softmax", "count": 1, "fixable": True, "fixable_count": 1}]
    code, out, _ = ptlint(capsys, "check", "-n", "--statistics", "--unsafe-fixes", "--output-format", "json",
                          "train.py")
    assert [row["fixable"] for row in json.loads(out)] == [False, True, True]
    code, out, _ = ptlint(capsys, "check", "-n", "--statistics", "train.py")
    assert out.splitlines()[0].split() == ["1", "PTL101", "sync-in-loop"]


def test_fix_command_hint_and_apply(here, capsys):
    code, out, err = ptlint(capsys, "fix", "-n", "--unsafe-fixes", "train.py")
    assert code == 1 and out.startswith("--- a/train.py")
    assert err == "2 fix(es) would change 1 file(s); run `ptlint fix --apply -n --unsafe-fixes train.py` to " \
                  "write them.\n"
    code, _, err = ptlint(capsys, "fix", "-n", "--select", "PTL302", "some file.py", "train.py")
    assert "run `ptlint fix --apply -n --select PTL302 'some file.py' train.py` to write them." in err
    assert code == 2
    assert ptlint(capsys, "fix", "-n", "-s", "train.py") == (1, "", "")
    code, out, err = ptlint(capsys, "fix", "-n", "--apply", "train.py")
    assert code == 1 and (here / "train.py").read_text() == SAFE
    assert err == "Fixed 1 finding(s) in 1 file(s); 2 remaining.\n"
    assert ptlint(capsys, "fix", "-n", "--apply", "-s", "train.py") == (1, "", "")
    (here / "ok.py").write_text("x = 1\n")
    assert ptlint(capsys, "fix", "-n", "ok.py") == (0, "", "Nothing to fix.\n")


def test_the_other_commands(here, capsys):
    from ptlint import __version__

    assert ptlint(capsys, "version") == (0, f"ptlint {__version__}\n", "")
    assert ptlint(capsys, "--version") == (0, f"ptlint {__version__}\n", "")
    assert ptlint(capsys, "-V") == (0, f"ptlint {__version__}\n", "")
    code, out, err = ptlint(capsys, "chek")
    assert code == 2 and out == "" and err.endswith("ptlint: error: unknown command 'chek'\n")
    code, out, _ = ptlint(capsys)
    assert code == 2 and "\n  server   Another name for `lsp` (ruff's).\n" in out
    assert ptlint(capsys, "--help")[0] == 0
    code, out, _ = ptlint(capsys, "rule", "ptl302")
    assert code == 0 and out.startswith("# PTL302 log-of-softmax\n")
    with pytest.raises(cli.Failure, match="unknown rule code 'PTL999'"):
        ptlint(capsys, "rule", "PTL999")
    with pytest.raises(cli.Failure, match="give a rule code"):
        ptlint(capsys, "rule")
    assert json.loads(ptlint(capsys, "rule", "--all", "--output-format", "json")[1])[0]["code"] == "PTL001"
    with pytest.raises(SystemExit) as usage:
        ptlint(capsys, "server", "--bogus")
    assert usage.value.code == 2 and capsys.readouterr().err.startswith("usage: ptlint server [-h]\n")
    with pytest.raises(SystemExit):
        ptlint(capsys, "version", "extra")


def test_clean(here, capsys, monkeypatch):
    assert ptlint(capsys, "check", "train.py")[0] == 1
    assert (here / ".ptlint_cache").is_dir()
    (here / "elsewhere").mkdir()
    monkeypatch.setenv("PTLINT_CACHE_DIR", str(here / "elsewhere"))
    code, _, err = ptlint(capsys, "clean", "--verbose")
    assert code == 0 and not (here / ".ptlint_cache").exists() and (here / "elsewhere").is_dir()
    assert err.splitlines() == ["Removing cache at: .ptlint_cache", f"ptlint: warning: {here / 'elsewhere'}: not "
                                "removed: it does not look like a ptlint cache (no .gitignore of ptlint's)"]
    monkeypatch.delenv("PTLINT_CACHE_DIR")
    assert ptlint(capsys, "clean") == (0, "", "")


def test_explain_errors_in_process(here, capsys, monkeypatch):
    with pytest.raises(cli.Failure, match="give TARGETs"):
        ptlint(capsys, "explain")
    with pytest.raises(cli.Failure, match="nope.py: no such file"):
        ptlint(capsys, "explain", "--script", "nope.py")
    with pytest.raises(cli.Failure, match="x.toml: config file not found"):
        ptlint(capsys, "explain", "--config", "x.toml")
    seen = {}

    def explain(targets, **options):
        seen.update(options, targets=targets)
        return 1

    import ptlint.dynamic.command as command

    monkeypatch.setattr(command, "explain", explain)
    assert ptlint(capsys, "explain", "--script", "train.py", "--timeout", "2.5", "--device", "cpu", "-q", "--",
                  "--epochs", "1")[0] == 1
    assert seen == {"targets": ["--epochs", "1"], "script": "train.py", "timeout": 2.5, "device": "cpu",
                    "output_format": "full", "config_file": None, "syncs": None, "quiet": True}
    ptlint(capsys, "explain", "a.py:f", "--syncs", "b.py:g", "--output-format", "json")
    assert seen["targets"] == ["a.py:f", "b.py:g"] and seen["syncs"] is True and seen["output_format"] == "json"
    ptlint(capsys, "explain", "--script", "train.py", "--", "-q", "--", "x")  # after `--`, all the script's
    assert seen["targets"] == ["-q", "--", "x"] and seen["quiet"] is False

    def failing(targets, **options):
        raise command.ExplainError("torch is missing")

    monkeypatch.setattr(command, "explain", failing)
    with pytest.raises(cli.Failure, match="^torch is missing$"):
        ptlint(capsys, "explain", "a.py:f")
    for bad in (["--timeout", "-1"], ["--timeout", "soon"], ["--device", "tpu"]):
        with pytest.raises(SystemExit):
            ptlint(capsys, "explain", *bad, "a.py:f")


def test_main_turns_errors_into_one_line_and_a_closed_pipe_into_silence(here, capsys, monkeypatch):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["rule", "PTL999"])
    assert exit_.value.code == 2 and capsys.readouterr().err == \
        "ptlint: error: unknown rule code 'PTL999' (see `ptlint rule --all`)\n"
    closed = []

    def reader_went_away(argv):
        raise BrokenPipeError

    monkeypatch.setattr(cli, "run", reader_went_away)
    monkeypatch.setattr(cli, "_closed_pipe", lambda: closed.append(True) or 0)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check"])
    assert exit_.value.code == 0 and closed == [True] and capsys.readouterr().err == ""


def test_watch_is_handed_the_paths_and_a_check_that_survives_errors(here, capsys, monkeypatch):
    import ptlint.front.watch as watch

    calls = []

    def fake_watch(paths, check):
        calls.append(paths)
        check()
        (here / "pyproject.toml").write_text("[tool.ptlint]\nselect = 3\n")
        check()  # a broken config: one line, and the watch goes on
        return 0

    monkeypatch.setattr(watch, "watch", fake_watch)
    code, out, err = ptlint(capsys, "check", "-n", "--watch", "--output-format", "concise", "train.py")
    assert code == 0 and calls == [["train.py"]]
    assert out.count("train.py:7:12: PTL302") == 1
    assert err.endswith("pyproject.toml: [tool.ptlint] select must be a list of strings\n")
    code, _, _ = ptlint(capsys, "check", "-w")
    assert calls[-1] == ["."]


# -- the help of every command, as it stands (a change to an option shows up here) ---------------

HELP_FILE = Path(__file__).with_name("cli_help.txt")


def help_texts(capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "102")
    parts = []
    for argv in ([], *[[command, "--help"] for command in cli.COMMANDS]):
        try:
            cli.run(argv)
        except SystemExit:
            pass
        parts.append(f"$ ptlint {' '.join(argv)}\n{capsys.readouterr().out}")
    return "\n".join(parts)


def test_the_help_of_every_command(capsys, monkeypatch):
    """Regenerate after changing an option: PTLINT_WRITE_HELP=1 python -m pytest -k help_of_every."""
    text = help_texts(capsys, monkeypatch)
    if os.environ.get("PTLINT_WRITE_HELP"):
        HELP_FILE.write_text(text, encoding="utf-8")
    assert text == HELP_FILE.read_text(encoding="utf-8")
    monkeypatch.setenv("COLUMNS", "not a number")  # then the terminal's width (none here), else 80 columns
    assert cli._Formatter("p")._width == 78
    assert cli._Formatter("p", width=50)._width == 50


# -- what more the options do --------------------------------------------------------------------

def test_check_fix_errors_counts_and_formats(here, capsys):
    (here / "two.py").write_text(SOURCE.replace("losses.append(loss)", "losses.append(loss)\n"
                                                "        other = torch.log(F.softmax(x, dim=-1))"))
    code, out, _ = ptlint(capsys, "check", "-n", "--diff", "two.py")
    assert code == 1 and out.endswith("\nWould fix 2 findings.\n")
    code, out, _ = ptlint(capsys, "check", "-n", "--fix-only", "two.py")
    assert code == 0 and out == "Fixed 2 findings.\n"
    (here / "train.py").chmod(0o444)
    try:
        code, out, err = ptlint(capsys, "check", "-n", "--fix", "--output-format", "concise", "train.py", "gone.py")
    finally:
        (here / "train.py").chmod(0o644)
    assert code == 2 and err.splitlines() == ["ptlint: gone.py: no such file or directory",
                                              "ptlint: train.py: cannot write: file is read-only"]
    assert "train.py:7:12: PTL302 [*] " in out and out.endswith("Found 3 findings.\n[*] 1 fixable with `ptlint fix "
                                                               "--apply`.\n[-] 1 more fixable with `ptlint fix "
                                                               "--apply --unsafe-fixes`.\n")
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "--statistics", "--unsafe-fixes", "train.py")
    assert code == 1 and out.split() == ["1", "PTL101", "sync-in-loop"]
    (here / "train.py").write_text(SOURCE)
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "-q", "train.py")
    assert code == 1 and "Found" not in out and "\n9 |         loss = model(x).mean()\n" not in out
    assert "12 |         print(loss.item())\n" in out  # the full format shows the fixed file's lines
    (here / "train.py").write_text(SOURCE)
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "--output-format", "json", "--unsafe-fixes", "train.py")
    assert codes(out) == [(12, "PTL101")]
    code, out, _ = ptlint(capsys, "check", "-n", "--fix", "gone.py")
    assert code == 2 and out == "No findings in the files that were checked; 1 path(s) could not be checked.\n"


def test_dynamic_findings_join_the_static_ones(here, capsys, monkeypatch):
    import ptlint.dynamic.merge as merge
    from ptlint.engine.finding import Finding

    asked = []

    def targets(settings, findings):
        asked.append((settings.config_path, [f.code for f in findings]))
        return [Finding("PTL450", "graph-break", "a break", "train.py", 1, 1, 1, 2)], ["a target failed"]

    monkeypatch.setattr(merge, "run_configured_targets", targets)
    (here / "pyproject.toml").write_text('[tool.ptlint.dynamic]\ntargets = ["train.py:make"]\n')
    (here / "sub").mkdir()
    (here / "sub" / "pyproject.toml").write_text("[tool.ptlint]\n")
    code, out, err = ptlint(capsys, "check", "-n", "--dynamic", "--output-format", "json", "train.py", "sub")
    assert code == 2 and err == "ptlint: a target failed\n"
    assert codes(out) == [(1, "PTL450"), (7, "PTL302"), (11, "PTL103"), (12, "PTL101")]
    assert asked == [(str(here / "pyproject.toml"), ["PTL302", "PTL103", "PTL101"])]  # only configs with targets
    (here / "pyproject.toml").write_text("[tool.ptlint]\n")
    asked.clear()
    ptlint(capsys, "check", "-n", "--dynamic", "sub", "train.py")
    assert asked == [(str(here / "pyproject.toml"), ["PTL302", "PTL103", "PTL101"])]  # none has: the first config


def test_fix_reads_standard_input_and_writes_it_back(here, capsys, monkeypatch):
    code, out, err = ptlint(capsys, "fix", "--stdin-filename", "t.py", "-", stdin=SOURCE, monkeypatch=monkeypatch)
    assert code == 1 and out == SAFE
    assert [line.split()[1] for line in err.splitlines()] == ["PTL103", "PTL101"]
    assert "PTL103 [-] " in err
    code, out, err = ptlint(capsys, "fix", "--unsafe-fixes", "-q", "-o", "fixed.py", "-", stdin=SOURCE,
                            monkeypatch=monkeypatch)
    assert (code, out, err) == (1, "", "") and "losses.append(loss.detach())" in (here / "fixed.py").read_text()
    code, _, err = ptlint(capsys, "fix", "-s", "-e", "-", stdin=SOURCE, monkeypatch=monkeypatch)
    assert (code, err) == (0, "")
    assert ptlint(capsys, "fix", "-", stdin="x = 1\n", monkeypatch=monkeypatch) == (0, "x = 1\n", "")
    code, out, err = ptlint(capsys, "fix", "--stdin-filename", "t.py", "-", stdin="def f(:\n", monkeypatch=monkeypatch)
    assert (code, out) == (1, "def f(:\n") and "PTL001" in err
    with pytest.raises(cli.Failure, match="cannot write the output file"):
        ptlint(capsys, "fix", "-o", "train.py/x", "-", stdin=SOURCE, monkeypatch=monkeypatch)
    bad = SOURCE.replace("import torch\n", "# -*- coding: ascii -*-\nimport torch\n") \
        .replace("model.head", "model.tête")
    code, _, err = ptlint(capsys, "fix", "--stdin-filename", "t.py", "-", stdin=bad, monkeypatch=monkeypatch)
    assert code == 2 and err.startswith("ptlint: t.py: ")


def test_fix_apply_errors_and_what_remains(here, capsys):
    code, out, err = ptlint(capsys, "fix", "-n", "--apply", "--diff", "--unsafe-fixes", "train.py")
    assert code == 1 and out.startswith("--- a/train.py") and (here / "train.py").read_text() == \
        SAFE.replace("losses.append(loss)", "losses.append(loss.detach())")
    assert "train.py:12:15: PTL101 " in out and err == "Fixed 2 finding(s) in 1 file(s); 1 remaining.\n"
    (here / "train.py").write_text(SOURCE)
    code, out, _ = ptlint(capsys, "fix", "-n", "--apply", "-q", "-e", "train.py")
    assert code == 0 and out == ""
    (here / "train.py").write_text(SOURCE)
    code, out, _ = ptlint(capsys, "fix", "-n", "--apply", "--output-format", "json", "train.py")
    assert codes(out) == [(11, "PTL103"), (12, "PTL101")]
    (here / "train.py").write_text(SOURCE)
    (here / "train.py").chmod(0o444)
    try:
        code, _, err = ptlint(capsys, "fix", "-n", "--apply", "train.py")
    finally:
        (here / "train.py").chmod(0o644)
    assert code == 2 and err.startswith("ptlint: train.py: cannot write: file is read-only\n")
    code, out, err = ptlint(capsys, "fix", "-n", "gone.py")
    assert (code, out, err) == (2, "", "ptlint: gone.py: no such file or directory\n")
    code, out, err = ptlint(capsys, "fix", "-n", "--apply", "gone.py")
    assert (code, err) == (2, "ptlint: gone.py: no such file or directory\n")


def test_colour_when_asked(here, capsys):
    code, out, _ = ptlint(capsys, "fix", "-n", "--color", "always", "train.py")
    assert "\x1b[1m--- a/train.py\x1b[0m\n" in out and "\x1b[31m-    logp = torch.log(" in out
    assert "\x1b[32m+    logp = F.log_softmax(" in out and "\x1b[36m@@ -4,7 +4,7 @@\x1b[0m\n" in out
    assert "\n     for x in loader:\n" in out  # context lines stay plain
    code, out, _ = ptlint(capsys, "check", "-n", "--color", "always", "--diff", "train.py")
    assert "\x1b[31m-" in out
    assert "\x1b[" not in ptlint(capsys, "fix", "-n", "--color", "never", "train.py")[1]


def test_add_noqa_counts_one_and_fails_on_what_it_cannot_write(here, capsys):
    (here / "one.py").write_text("import torch\nimport torch.nn.functional as F\ny = torch.log(F.softmax(x, -1))\n")
    assert ptlint(capsys, "check", "-n", "--add-noqa", "one.py") == (0, "", "Added 1 noqa directive.\n")
    (here / "train.py").chmod(0o444)
    try:
        code, _, err = ptlint(capsys, "check", "-n", "--add-noqa", "train.py", "gone.py")
    finally:
        (here / "train.py").chmod(0o644)
    assert code == 2 and err.splitlines() == ["ptlint: gone.py: no such file or directory",
                                              "ptlint: train.py: cannot add noqa: file is read-only",
                                              "Added 0 noqa directives."]


def test_run_details(here, capsys, monkeypatch):
    (here / "pyproject.toml").write_text('[tool.ptlint]\nexclude = ["gen"]\n')
    code, out, _ = ptlint(capsys, "check", "--force-exclude", "--stdin-filename", "gen/a.py", "-", stdin=SOURCE,
                          monkeypatch=monkeypatch)
    assert (code, out) == (0, "All checks passed!\n")
    (here / "sub").mkdir()
    (here / "sub" / "pyproject.toml").write_text("[tool.ptlint]\nselect = 1\n")
    with pytest.raises(cli.Failure, match="select must be a list of strings"):
        ptlint(capsys, "check", "--stdin-filename", "sub/a.py", "-", stdin=SOURCE, monkeypatch=monkeypatch)
    (here / "binary.py").write_bytes(b"\x00\x01")
    code, out, err = ptlint(capsys, "check", "--cache-dir", "cached", "-j", "1", "binary.py", "train.py")
    assert code == 2 and err == "ptlint: binary.py: binary content (NUL bytes), not Python source\n"
    assert (here / "cached").is_dir() and not (here / ".ptlint_cache").exists()
    assert "Found 3 findings." in out
    code, out, _ = ptlint(capsys, "check", "--cache-dir", "cached", "--output-format", "json", "train.py")
    assert len(codes(out)) == 3  # from the cache, the same
    for bad, message in (("0", "0 is smaller than 1"), ("x", "'x' is not a whole number")):
        with pytest.raises(SystemExit):
            ptlint(capsys, "check", "-j", bad, "train.py")
        assert capsys.readouterr().err.endswith(f"ptlint: error: argument --jobs/-j: {message}\n")


def test_main_reads_sys_argv_and_reports_an_interruption(here, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["ptlint", "version"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 0 and capsys.readouterr().out.startswith("ptlint ")

    def interrupted(argv):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run", interrupted)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check"])
    assert exit_.value.code == 130 and capsys.readouterr().err == "ptlint: interrupted\n"


def test_a_closed_pipe_sends_standard_output_to_nothing(tmp_path, monkeypatch):
    with open(tmp_path / "out.txt", "w") as stream:
        monkeypatch.setattr(sys, "stdout", stream)
        assert cli._closed_pipe() == 0
        os.write(stream.fileno(), b"lost")
    assert (tmp_path / "out.txt").read_text() == ""


def test_rule_listing_and_the_language_server_without_pygls(here, capsys, monkeypatch):
    code, out, _ = ptlint(capsys, "rule", "--all")
    assert code == 0 and out.splitlines()[0].split() == ["code", "name", "default", "fix", "summary"]
    assert json.loads(ptlint(capsys, "rule", "--all", "--output-format", "json")[1])[1]["code"] == "PTL002"
    monkeypatch.setitem(sys.modules, "ptlint.front.lsp", None)  # as if pygls were not installed
    with pytest.raises(cli.Failure, match=r'^the language server needs pygls: pip install "ptlint\[lsp\]" \('):
        ptlint(capsys, "server")
    with pytest.raises(cli.Failure, match="needs pygls"):
        ptlint(capsys, "lsp")


def test_the_options_reach_the_settings(here, capsys, monkeypatch):
    (here / "pyproject.toml").write_text('[tool.ptlint]\nignore = ["PTL1"]\nrespect-gitignore = false\n')
    (here / "elsewhere.toml").write_text('[tool.ptlint]\nselect = ["PTL103"]\n')

    def settings(*argv: str) -> dict:
        code, out, _ = ptlint(capsys, "check", "--show-settings", *argv, "train.py")
        assert code == 0
        return {line.split(" = ", 1)[0]: json.loads(line.split(" = ", 1)[1]) for line in out.splitlines()[1:]}

    configured = settings()
    assert configured["config"] == str(here / "pyproject.toml") and configured["respect-gitignore"] is False
    assert "PTL101" not in configured["enabled"] and configured["exclude"] == [] and configured["cache-dir"] is None
    isolated = settings("--isolated")
    assert isolated["config"] is None and "PTL101" in isolated["enabled"] and isolated["respect-gitignore"] is True
    assert settings("--config", "elsewhere.toml")["enabled"] == ["PTL103"]
    overridden = settings("--config", "ignore = []", "--config", "exclude = ['gen']", "--config",
                          "per-file-ignores = { 'a.py' = ['PTL3'] }", "--config", "cache-dir = 'c'",
                          "--config", "test-code = []", "--config", "dynamic.timeout = 3", "--unsafe-fixes",
                          "--force-exclude", "--respect-gitignore", "--extend-select", "PTL203")
    assert "PTL101" in overridden["enabled"] and "PTL203" in overridden["enabled"]
    assert overridden["exclude"] == ["gen"] and overridden["per-file-ignores"] == {"a.py": ["PTL3"]}
    # a relative cache-dir is relative to the config's folder
    assert overridden["cache-dir"] == str(here / "c") and overridden["test-code"] == [] and overridden["dynamic"] == {"timeout": 3}
    assert overridden["unsafe-fixes"] is True and overridden["force-exclude"] is True
    assert overridden["respect-gitignore"] is True
    assert settings("--no-unsafe-fixes")["unsafe-fixes"] is False
    (here / "pyproject.toml").write_text("[tool.ptlint]\nselect = 1\n")
    with pytest.raises(cli.Failure, match=r"^.*pyproject.toml: \[tool.ptlint\] select must be a list of strings$"):
        ptlint(capsys, "check", "--show-settings", "nothing-here")


def test_option_spellings_are_exact(here, capsys, monkeypatch):
    for argv, message in ((["--sel", "PTL1"], "unrecognized arguments: --sel"),  # no abbreviations
                          (["--color", "AUTO"], "argument --color: invalid choice: 'AUTO'")):
        with pytest.raises(SystemExit):
            ptlint(capsys, "check", *argv, "train.py")
        assert capsys.readouterr().err.splitlines()[-1].startswith(f"ptlint: error: {message}")
    seen = {}

    import ptlint.dynamic.command as command

    def explain(targets, **options):
        seen.update(options)
        return 0

    monkeypatch.setattr(command, "explain", explain)
    assert ptlint(capsys, "explain", "--timeout", "0.5", "a.py:f")[0] == 0
    assert seen["timeout"] == 0.5
    for value, message in (("0", "0 is not more than 0"), ("-2", "-2 is not more than 0"),
                           ("soon", "'soon' is not a number of seconds")):
        with pytest.raises(SystemExit):
            ptlint(capsys, "explain", "--timeout", value, "a.py:f")
        assert capsys.readouterr().err.splitlines()[-1] == f"ptlint: error: argument --timeout: {message}"


def test_a_watched_check_that_fails_says_so_and_goes_on(here, capsys, monkeypatch):
    import ptlint.front.watch as watch

    def failing(args):
        raise cli.Failure("the config broke")

    monkeypatch.setattr(cli, "_check_once", failing)
    monkeypatch.setattr(watch, "watch", lambda paths, check: check() or check() or 0)
    assert ptlint(capsys, "check", "--watch", ".") == (0, "", "ptlint: error: the config broke\n" * 2)
