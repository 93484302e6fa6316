"""`ptlint check` / `rule` as a user runs them: exit codes, JSON shape, noqa, config, bad input."""

from __future__ import annotations

import json
import os
import textwrap

import pytest
from helpers import FIXTURES, run_ptlint

from ptlint.engine.registry import all_rules
from ptlint.rules.sync.ptl101_sync_in_loop import SyncInLoop

SYNC_LOOP = textwrap.dedent("""\
    import torch

    def f(xs):
        total = 0.0
        for x in xs:
            total += net(x).sum().item()
        return total
""")


def write(path, text: str, encoding: str = "utf-8") -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode(encoding))
    return str(path)


def check_json(*args, cwd):
    result = run_ptlint("check", "--no-cache", "--output-format", "json", *args, cwd=cwd)
    return result, (json.loads(result.stdout) if result.stdout.strip() else None)


def test_exit_codes(tmp_path):
    write(tmp_path / "clean.py", "import torch\nx = torch.zeros(3)\n")
    write(tmp_path / "dirty.py", SYNC_LOOP)
    assert run_ptlint("check", "--no-cache", "clean.py", cwd=tmp_path).returncode == 0
    assert run_ptlint("check", "--no-cache", "dirty.py", cwd=tmp_path).returncode == 1
    assert run_ptlint("check", "--no-cache", "--exit-zero", "dirty.py", cwd=tmp_path).returncode == 0
    missing = run_ptlint("check", "--no-cache", "nope.py", "dirty.py", cwd=tmp_path)
    assert missing.returncode == 2
    assert "nope.py" in missing.stderr and "Traceback" not in missing.stderr
    assert "dirty.py:6:" in missing.stdout  # the other path is still checked
    assert run_ptlint("check", "--select", "PTL999", "dirty.py", cwd=tmp_path).returncode == 2
    assert run_ptlint("check", "--bogus-flag", cwd=tmp_path).returncode == 2


def test_json_shape_matches_design(tmp_path):
    write(tmp_path / "src" / "train.py", SYNC_LOOP)
    result, findings = check_json("src", cwd=tmp_path)
    assert result.returncode == 1
    assert len(findings) == 1
    finding = findings[0]
    assert finding == {
        "code": "PTL101", "name": "sync-in-loop", "message": finding["message"],
        "path": os.path.join("src", "train.py"), "line": 6, "column": 18, "end_line": 6, "end_column": 37,
        "severity": "warning", "fix": None, "source": "static", "context": {"where": "per-step", "via": [{"path": "src/train.py", "line": 5, "why": "for x in xs"}]},
        "help": SyncInLoop.help,
    }
    assert "item" in finding["message"]
    assert finding["help"].startswith("Keep the value on the device")


def test_relative_and_absolute_paths_stay_as_given(tmp_path):
    write(tmp_path / "pkg" / "a.py", SYNC_LOOP)
    _, findings = check_json("./pkg", cwd=tmp_path)
    assert findings[0]["path"] == "./pkg/a.py"
    _, findings = check_json(str(tmp_path / "pkg" / "a.py"), cwd=tmp_path)
    assert findings[0]["path"] == str(tmp_path / "pkg" / "a.py")


def test_noqa_silences_only_its_line_and_code(tmp_path):
    text = textwrap.dedent("""\
        import torch

        for x in xs:
            a = net(x).item()  # noqa: PTL101
            b = net(x).item()  # noqa: PTL102
            c = net(x).item()  # noqa
            d = net(x).item()
            e = "# noqa"; f = net(x).item()
            g = net(x).item()  # NOQA:PTL101,PTL102
    """)
    write(tmp_path / "a.py", text)
    _, findings = check_json("a.py", cwd=tmp_path)
    assert [f["line"] for f in findings if f["code"] == "PTL101"] == [5, 7, 8]
    # the PTL102 codes suppress nothing: PTL002 says so where they are
    assert [(f["line"], f["message"]) for f in findings if f["code"] == "PTL002"] == [
        (5, "unused `noqa` directive (unused: `PTL102`)"), (9, "unused `noqa` directive (unused: `PTL102`)")]


def test_file_level_noqa(tmp_path):
    write(tmp_path / "a.py", "# ptlint: noqa\n" + SYNC_LOOP)
    write(tmp_path / "b.py", "# ptlint: noqa: PTL102\n" + SYNC_LOOP)
    result, findings = check_json("a.py", "b.py", cwd=tmp_path)
    assert [f["path"] for f in findings] == ["b.py"]


def test_select_ignore_and_prefixes(tmp_path):
    write(tmp_path / "a.py", SYNC_LOOP + "\nfor y in ys:\n    torch.cuda.synchronize()\n")
    _, findings = check_json("a.py", cwd=tmp_path)
    assert {f["code"] for f in findings} == {"PTL101", "PTL102"}
    _, findings = check_json("--select", "PTL102", "a.py", cwd=tmp_path)
    assert {f["code"] for f in findings} == {"PTL102"}
    _, findings = check_json("--ignore", "PTL10", "a.py", cwd=tmp_path)
    assert findings == []
    _, findings = check_json("--select", "PTL1", "--ignore", "PTL101", "a.py", cwd=tmp_path)
    assert {f["code"] for f in findings} == {"PTL102"}


def test_syntax_error_does_not_stop_other_files(tmp_path):
    write(tmp_path / "bad.py", "def f(:\n    pass\n")
    write(tmp_path / "good.py", SYNC_LOOP)
    result, findings = check_json(".", cwd=tmp_path)
    assert result.returncode == 1
    by_code = {f["code"]: f for f in findings}
    assert by_code["PTL001"]["path"] == "bad.py" and by_code["PTL001"]["line"] == 1
    assert by_code["PTL001"]["severity"] == "error"
    assert by_code["PTL101"]["path"] == "good.py"


def test_unreadable_binary_and_undecodable_files_get_one_line(tmp_path):
    (tmp_path / "binary.py").write_bytes(b"\x00\x01\x02import torch\n")
    (tmp_path / "latin.py").write_bytes(b"x = '\xe9'\n")  # not UTF-8, no cookie
    write(tmp_path / "good.py", SYNC_LOOP)
    result = run_ptlint("check", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = result.stderr.strip().splitlines()
    assert any("binary.py" in line and "binary" in line for line in errors)
    assert any("latin.py" in line and "decode" in line for line in errors)
    assert "good.py:6:" in result.stdout


def test_coding_cookie_bom_and_crlf(tmp_path):
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + SYNC_LOOP.replace("total = 0.0", "total = 0.0  # \xe9t\xe9")
    write(tmp_path / "latin.py", latin, encoding="latin-1")
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + SYNC_LOOP.replace("\n", "\r\n").encode())
    # a non-ASCII character before the span: the column counts characters, not UTF-8 bytes
    write(tmp_path / "wide.py", "import torch\nfor x in xs:\n    s = 'é' + str(net(x).item())\n")
    _, findings = check_json(".", cwd=tmp_path)
    spots = {(f["path"], f["line"], f["column"], f["end_column"]) for f in findings}
    assert ("latin.py", 8, 18, 37) in spots
    assert ("bom.py", 6, 18, 37) in spots
    assert ("wide.py", 3, 19, 32) in spots


def test_default_excludes_and_config_exclude(tmp_path):
    for folder in (".venv", "build", "node_modules", "generated", "src"):
        write(tmp_path / folder / "a.py", SYNC_LOOP)
    write(tmp_path / "pyproject.toml", '[tool.ptlint]\nexclude = ["generated"]\n')
    _, findings = check_json(".", cwd=tmp_path)
    assert {f["path"] for f in findings} == {"src/a.py"}
    # a file named on the command line is checked, as in ruff, unless force-exclude is set
    result, findings = check_json("generated/a.py", "src/a.py", cwd=tmp_path)
    assert {f["path"] for f in findings} == {"generated/a.py", "src/a.py"}
    result, findings = check_json("--force-exclude", "generated/a.py", "src/a.py", cwd=tmp_path)
    assert {f["path"] for f in findings} == {"src/a.py"}


def test_config_select_ignore_per_file_ignores(tmp_path):
    write(tmp_path / "a.py", SYNC_LOOP)
    write(tmp_path / "tests" / "test_a.py", SYNC_LOOP)
    write(tmp_path / "pyproject.toml", textwrap.dedent("""\
        [tool.ptlint]
        ignore = ["PTL102"]
        per-file-ignores = { "tests/*" = ["PTL1"] }
    """))
    _, findings = check_json(".", cwd=tmp_path)
    assert {f["path"] for f in findings} == {"a.py"}
    # the command line wins over the file
    write(tmp_path / "pyproject.toml", '[tool.ptlint]\nignore = ["PTL101"]\n')
    _, findings = check_json("a.py", cwd=tmp_path)
    assert findings == []
    _, findings = check_json("--select", "PTL101", "a.py", cwd=tmp_path)
    assert [f["code"] for f in findings] == ["PTL101"]


@pytest.mark.parametrize("config,needle", [
    ('[tool.ptlint]\nselect = ["PTL101"\n', "invalid TOML"),
    ('[tool.ptlint]\nslect = ["PTL101"]\n', "unknown key"),
    ('[tool.ptlint]\nselect = ["PTL9X"]\n', "unknown rule code"),
    ('[tool.ptlint]\nselect = "PTL101"\n', "list of strings"),
    ('[tool.ptlint.dynamic]\ntimeout = -1\n', "timeout"),
])
def test_bad_config_is_a_clear_error(tmp_path, config, needle):
    write(tmp_path / "pyproject.toml", config)
    write(tmp_path / "a.py", SYNC_LOOP)
    result = run_ptlint("check", "--no-cache", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert needle in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_explicit_config_file(tmp_path):
    write(tmp_path / "a.py", SYNC_LOOP)
    write(tmp_path / "other.toml", '[tool.ptlint]\nignore = ["PTL101"]\n')
    assert run_ptlint("check", "--no-cache", "--config", "other.toml", "a.py", cwd=tmp_path).returncode == 0
    assert run_ptlint("check", "--config", "missing.toml", "a.py", cwd=tmp_path).returncode == 2


def test_full_output_shows_source_and_carets(tmp_path):
    write(tmp_path / "a.py", SYNC_LOOP)
    result = run_ptlint("check", "--no-cache", "a.py", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("a.py:6:18: PTL101 ")
    source = next(line for line in lines if "total += net(x).sum().item()" in line)
    caret = lines[lines.index(source) + 1]
    assert caret.index("^") - caret.index("|") == source.index("net(x)") - source.index("|")
    assert caret.count("^") == len("net(x).sum().item()")
    assert "Found 1 finding." in result.stdout


def test_concise_and_statistics(tmp_path):
    write(tmp_path / "a.py", SYNC_LOOP)
    result = run_ptlint("check", "--no-cache", "--output-format", "concise", "a.py", cwd=tmp_path)
    assert result.stdout.splitlines()[0] == "a.py:6:18: PTL101 " + json.loads(
        run_ptlint("check", "--no-cache", "--output-format", "json", "a.py", cwd=tmp_path).stdout)[0]["message"]
    stats = run_ptlint("check", "--no-cache", "--statistics", "a.py", cwd=tmp_path)
    assert stats.stdout.split() == ["1", "PTL101", "sync-in-loop"]


def test_rule_command():
    page = run_ptlint("rule", "PTL101")
    assert page.returncode == 0
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert section in page.stdout
    assert run_ptlint("rule", "PTL999").returncode == 2
    listing = run_ptlint("rule", "--all")
    assert listing.returncode == 0
    rows = [line.split()[:3] for line in listing.stdout.splitlines()[1:]]
    expected = [[code, cls.name, "on" if cls.default else "off"] for code, cls in all_rules().items()]
    assert [row for row in rows if row[0] in all_rules()] == expected
    assert ["PTL001", "syntax-error", "always"] in rows


def test_sample_project_from_readme():
    """The README's main command: the shipped sample reports its findings and exits 1."""
    result = run_ptlint("check", "--no-cache", str(FIXTURES / "sample_project"))
    assert result.returncode == 1
    assert "loop.py:16:" in result.stdout
    assert "generated" not in result.stdout  # excluded by the sample's own config
