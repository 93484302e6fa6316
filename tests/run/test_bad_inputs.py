"""Bad input never costs the user the other files: each bad path gets one line on stderr naming
it (or a PTL001 finding when it is Python that does not parse), the sibling file's finding is
still reported, the exit code is as DESIGN.md says, and there is never a traceback.

test_cli.py already covers a plain syntax error, NUL bytes, latin-1 without a cookie, a cookie,
BOM + CRLF positions, a missing path and invalid TOML; this file covers the rest.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import subprocess
import sys
import textwrap
import time

import pytest
from helpers import run_ptlint

SIBLING = textwrap.dedent("""\
    import torch

    def f(xs):
        total = 0.0
        for x in xs:
            total += net(x).sum().item()
        return total
""")
SIBLING_SPOT = ("good.py", 6, "PTL101")

# a fixable finding (PTL103, unsafe) and an unfixable one (PTL101), for the fix runs
KEPT_LOSS = textwrap.dedent("""\
    import torch

    for x in loader:
        loss = model(x)
        loss.backward()
        history.append(loss)
        value = loss.item()
""")


def check(tmp_path, *paths: str):
    result = run_ptlint("check", "--no-cache", "--output-format", "json", *(paths or (".",)), cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    findings = json.loads(result.stdout) if result.stdout.strip() else []
    return result, findings


def spots(findings) -> set[tuple[str, int, str]]:
    return {(f["path"], f["line"], f["code"]) for f in findings}


def stderr_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def parses_in_fresh_python(text: str) -> bool:
    """What this interpreter's parser says, at its default recursion limit (a child process, so
    that nothing this test process did to the limit matters)."""
    code = "import ast, sys\ntry:\n    ast.parse(sys.stdin.read())\nexcept BaseException:\n    sys.exit(1)\n"
    return subprocess.run([sys.executable, "-c", code], input=text, text=True).returncode == 0


# -- files that cannot be read as Python text: one line each, exit 2 -------------------------------

def _binary_late(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"import torch\nx = 1\n\x00\x00\x89PNG\r\n\x1a\n")
    return "binary"


def _png(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    return "binary"


def _unknown_cookie(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    return "encoding"


def _lying_cookie(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"# coding: utf-8\nx = '\xe9t\xe9'\n")  # says UTF-8, is latin-1
    return "decode"


def _invalid_utf8_deep(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"import torch\n" * 50 + b"s = '\xc3\x28'\n")
    return "decode"


def _bom_and_other_cookie(tmp_path):
    (tmp_path / "bad.py").write_bytes(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n")  # Python refuses this
    return "encoding"


def _fifo(tmp_path):
    os.mkfifo(tmp_path / "bad.py")  # opening it would block for ever
    return "regular file"


def _read_error(tmp_path):
    # A file that opens but cannot be read (EIO), whoever we run as: /proc/self/mem at offset 0.
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("needs Linux /proc")
    os.symlink("/proc/self/mem", tmp_path / "bad.py")
    return "error"


def _dangling(tmp_path):
    os.symlink("does-not-exist.py", tmp_path / "bad.py")
    return "broken symbolic link"


# Found in a folder, a dangling link is a warning that does not change the exit code; named on
# the command line, it is a path that does not exist (exit 2).
WARNINGS_ONLY = {_dangling}


UNREADABLE = [_binary_late, _png, _unknown_cookie, _lying_cookie, _invalid_utf8_deep, _bom_and_other_cookie,
              _fifo, _read_error, _dangling]


@pytest.mark.parametrize("make", UNREADABLE, ids=lambda f: f.__name__.strip("_"))
def test_unreadable_file_is_one_line_and_others_are_checked(tmp_path, make):
    needle = make(tmp_path)
    exit_code = 1 if make in WARNINGS_ONLY else 2  # 1: the sibling's finding
    (tmp_path / "good.py").write_text(SIBLING)
    # checked as part of a folder, and named on the command line
    for args in ((".",), ("bad.py", "good.py")):
        result, findings = check(tmp_path, *args)
        assert result.returncode == (2 if args[0] == "bad.py" else exit_code), result.stderr
        lines = stderr_lines(result)
        assert len(lines) == 1 and "bad.py" in lines[0] and needle in lines[0], lines
        assert SIBLING_SPOT in spots(findings)
    # fix: the readable file is still fixed, the bad one untouched, exit 2
    (tmp_path / "good.py").write_text(KEPT_LOSS)
    before = os.lstat(tmp_path / "bad.py")
    result = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", ".", cwd=tmp_path, timeout=60)
    assert result.returncode == exit_code and "Traceback" not in result.stderr  # PTL101 remains
    assert "history.append(loss.detach())" in (tmp_path / "good.py").read_text()
    after = os.lstat(tmp_path / "bad.py")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


# Permission errors, in process: as root (this project's machines) chmod 000 stops neither reads
# nor listings, so the operating system's refusal is made where ptlint meets it. The CLI's exit
# code and one-line stderr for an unreadable file are covered above (read_error: EIO).

def _checked(monkeypatch, tmp_path):
    from ptlint.run.check import check_files
    from ptlint.run.discover import discover
    from ptlint.run.config import Resolver

    monkeypatch.chdir(tmp_path)
    found = discover(["."], Resolver())
    results = check_files(found.jobs, workers=1)
    errors = found.warnings + found.failures + [r.error for r in results if r.error]
    return errors, {(f.path, f.line, f.code) for r in results for f in r.findings}


def test_permission_denied(tmp_path, monkeypatch):
    import builtins

    from ptlint.engine import source

    (tmp_path / "bad.py").write_text("x = 1\n")
    (tmp_path / "good.py").write_text(SIBLING)

    def denying_open(path, *args, **kwargs):
        if os.path.basename(path) == "bad.py":
            raise PermissionError(13, "Permission denied", path)
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(source, "open", denying_open, raising=False)
    errors, found = _checked(monkeypatch, tmp_path)
    assert errors == ["bad.py: permission denied"]
    assert found == {SIBLING_SPOT}


def test_unlistable_folder(tmp_path, monkeypatch):
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "a.py").write_text(SIBLING)
    (tmp_path / "good.py").write_text(SIBLING)
    real_scandir = os.scandir

    def denying_scandir(path="."):
        if os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denying_scandir)
    errors, found = _checked(monkeypatch, tmp_path)
    assert [e.lower() for e in errors] == ["locked: cannot list folder: permission denied"]
    assert found == {SIBLING_SPOT}


def test_symlink_loops_are_reported_once_and_not_followed(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "good.py").write_text(SIBLING)
    os.symlink("..", tmp_path / "pkg" / "up")  # pkg/up -> tmp_path, which holds pkg
    os.symlink(".", tmp_path / "pkg" / "self")
    os.symlink("b.py", tmp_path / "a.py")  # a -> b -> a: a loop of links, not of folders
    os.symlink("a.py", tmp_path / "b.py")
    result, findings = check(tmp_path, ".")
    assert result.returncode == 1  # the finding; skipped loops are warnings
    lines = stderr_lines(result)
    assert len(lines) == 4
    assert any(line.startswith("ptlint: a.py:") for line in lines) and any("b.py" in line for line in lines)
    assert any("pkg/up" in line and "loop" in line for line in lines), lines
    assert any("pkg/self" in line and "loop" in line for line in lines), lines
    # the file is checked exactly once, through its real path
    assert [f["path"] for f in findings] == ["pkg/good.py"]


def test_symlinked_file_and_directory_named_like_a_module(tmp_path):
    (tmp_path / "good.py").write_text(SIBLING)
    os.symlink("good.py", tmp_path / "alias.py")  # the same file twice: reported once
    (tmp_path / "folder.py").mkdir()  # a folder named *.py is a folder
    (tmp_path / "folder.py" / "inner.py").write_text(SIBLING)
    result, findings = check(tmp_path, ".")
    assert result.returncode == 1 and not stderr_lines(result)
    paths = {f["path"] for f in findings}
    assert len(paths) == 2 and "folder.py/inner.py" in paths and paths & {"alias.py", "good.py"}


def test_missing_path_with_fix(tmp_path):
    (tmp_path / "good.py").write_text(KEPT_LOSS)
    result = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", "nope.py", "good.py", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert any("nope.py" in line for line in stderr_lines(result))
    assert "loss.detach()" in (tmp_path / "good.py").read_text()


@pytest.mark.parametrize("config,needle", [
    (b"\xff\xfe[tool.ptlint]\n", "invalid TOML"),  # not UTF-8
    (b"[tool.ptlint]\nper-file-ignores = 3\n", "per-file-ignores"),
    (b"[tool.ptlint]\nexclude = [1]\n", "exclude"),
    (b"[tool]\nptlint = [1, 2]\n", "must be a table"),
])
def test_bad_pyproject_is_one_line_exit_2(tmp_path, config, needle):
    (tmp_path / "pyproject.toml").write_bytes(config)
    (tmp_path / "good.py").write_text(SIBLING)
    for args in (("check", "--no-cache", "good.py"), ("check", "--no-cache", "--config", "pyproject.toml", "good.py"),
                 ("fix", "--apply", "--no-cache", "good.py")):
        result = run_ptlint(*args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        lines = stderr_lines(result)
        assert len(lines) == 1 and needle in lines[0] and "pyproject.toml" in lines[0], lines
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("config", [b"tool = 3\n", b'tool = "ptlint"\n', b"[tool]\nother = 1\n"])
def test_pyproject_without_a_ptlint_table(tmp_path, config):
    """Found by the upward search it is not ptlint's config (defaults apply); named, it is an error."""
    (tmp_path / "pyproject.toml").write_bytes(config)
    (tmp_path / "good.py").write_text(SIBLING)
    result, findings = check(tmp_path, "good.py")
    assert result.returncode == 1 and SIBLING_SPOT in spots(findings) and not stderr_lines(result)
    if b"other" not in config:
        result = run_ptlint("check", "--no-cache", "--config", "pyproject.toml", "good.py", cwd=tmp_path)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert len(stderr_lines(result)) == 1 and "must be a table" in result.stderr


# -- Python that does or does not parse ---------------------------------------------------------------

def _in_loop(expression: str) -> str:
    """An expression inside a loop, next to a `.item()` the check must still find when it parses."""
    return f"import torch\nfor x in loader:\n    y = {expression}\n    v = net(x).item()\n"


NESTED = {
    "parens-150": _in_loop("(" * 150 + "x" + ")" * 150),
    "parens-1000": _in_loop("(" * 1000 + "x" + ")" * 1000),
    "lists-150": _in_loop("[" * 150 + "]" * 150),
    "lists-250": _in_loop("[" * 250 + "]" * 250),
    "calls-180": _in_loop("f(" * 180 + "x" + ")" * 180),
    "calls-2000": _in_loop("f(" * 2000 + "x" + ")" * 2000),
    "sum-1000": _in_loop("+".join(["a"] * 1000)),
    "sum-50000": _in_loop("+".join(["a"] * 50_000)),
    "attributes-20000": _in_loop("a" + ".b" * 20_000),
    "subscripts-5000": _in_loop("a" + "[0]" * 5_000),
    "not-5000": _in_loop("not " * 5_000 + "a"),
    "unary-minus-50000": _in_loop("-" * 50_000 + "a"),
    "lambdas-300": _in_loop("lambda: " * 300 + "x"),
    "ifs-99": "import torch\n" + "".join("    " * i + f"if c{i}:\n" for i in range(99))
              + "    " * 99 + "for x in loader:\n" + "    " * 100 + "v = net(x).item()\n",
    "ifs-101": "".join(" " * i + f"if c{i}:\n" for i in range(101)) + " " * 101 + "pass\n",
    "fstrings-nested": _in_loop('f"{' * 4 + "x" + '}"' * 4),
}


@pytest.mark.parametrize("name", sorted(NESTED))
def test_deep_nesting_is_answered_cleanly(tmp_path, name):
    text = NESTED[name]
    (tmp_path / "deep.py").write_text(text)
    (tmp_path / "good.py").write_text(SIBLING)
    result, findings = check(tmp_path, ".")
    assert SIBLING_SPOT in spots(findings)
    deep = [f for f in findings if f["path"] == "deep.py"]
    if parses_in_fresh_python(text):
        assert result.returncode == 1 and not stderr_lines(result), result.stderr
        assert "PTL001" not in {f["code"] for f in deep}
        if "v = net(x).item()" in text:
            item_line = text.splitlines().index(next(s for s in text.splitlines() if "v = net(x).item()" in s)) + 1
            assert ("deep.py", item_line, "PTL101") in spots(deep)
    else:
        # Python rejects it: one PTL001 finding, like any other syntax error, and no notice
        assert result.returncode == 1 and not stderr_lines(result), result.stderr
        assert [f["code"] for f in deep] == ["PTL001"]
    fixed = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", "deep.py", cwd=tmp_path, timeout=120)
    assert fixed.returncode == 1 and "Traceback" not in fixed.stderr  # its finding remains
    assert (tmp_path / "deep.py").read_text() == text  # nothing fixable in it: untouched


def test_python_312_syntax(tmp_path):
    """Type parameters and nested same-quote f-strings parse on 3.12+, and are PTL001 before."""
    text = textwrap.dedent("""\
        import torch

        def first[T](items: list[T]) -> T:
            for x in items:
                v = x.item()
            return items[0]

        type Pair[T] = tuple[T, T]
        label = f"{"loss" + f"{"!"}"}"
    """)
    (tmp_path / "new.py").write_text(text)
    (tmp_path / "good.py").write_text(SIBLING)
    result, findings = check(tmp_path, ".")
    assert result.returncode == 1 and not stderr_lines(result)
    assert SIBLING_SPOT in spots(findings)
    new = [f for f in findings if f["path"] == "new.py"]
    if sys.version_info >= (3, 12):
        assert [(f["line"], f["code"]) for f in new] == [(5, "PTL101")]
    else:
        assert [f["code"] for f in new] == ["PTL001"] and new[0]["line"] == 3


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf", b"\n\n\n", b"   ", b"# only a comment", b"\x0c\n",
                                     b"\r\n\r\n", b"\r", b"\\\n", b"pass\x1a"], ids=repr)
def test_empty_and_nearly_empty_files(tmp_path, content):
    (tmp_path / "empty.py").write_bytes(content)
    (tmp_path / "good.py").write_text(SIBLING)
    result, findings = check(tmp_path, ".")
    assert SIBLING_SPOT in spots(findings)
    empty = [f for f in findings if f["path"] == "empty.py"]
    try:
        ast.parse(content)
        parses = True
    except (SyntaxError, ValueError):
        parses = False
    assert [f["code"] for f in empty] == ([] if parses else ["PTL001"])
    assert result.returncode == 1 and not stderr_lines(result)


@pytest.mark.parametrize("newline", ["\r\n", "\r", "mixed"])
def test_line_endings_positions_and_fix_keep_every_byte(tmp_path, newline):
    lines = KEPT_LOSS.splitlines()
    if newline == "mixed":
        enders = ["\r\n", "\n", "\r"]
        text = "".join(line + enders[i % 3] for i, line in enumerate(lines))
    else:
        text = "".join(line + newline for line in lines)
    data = b"\xef\xbb\xbf" + text.encode()
    (tmp_path / "a.py").write_bytes(data)
    _, findings = check(tmp_path, "a.py")
    assert {(f["line"], f["column"], f["end_column"], f["code"]) for f in findings} == {
        (6, 20, 24, "PTL103"), (7, 13, 24, "PTL101")}
    result = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", "a.py", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr  # PTL101 remains
    assert (tmp_path / "a.py").read_bytes() == data.replace(b"append(loss)", b"append(loss.detach())")


def test_sixty_thousand_lines(tmp_path):
    lines = ["import torch", ""]
    expected = set()
    while len(lines) < 60_000:
        if len(lines) % 1000 == 0:
            lines += ["for x in xs:", "    t = net(x).item()"]
            expected.add(("big.py", len(lines), "PTL101"))
        else:
            lines.append(f"value_{len(lines)} = torch.zeros({len(lines) % 7})  # filler")
    (tmp_path / "big.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "good.py").write_text(SIBLING)
    start = time.monotonic()
    result, findings = check(tmp_path, ".")
    elapsed = time.monotonic() - start
    assert result.returncode == 1
    assert spots(findings) == expected | {SIBLING_SPOT}
    assert len(expected) >= 59
    assert elapsed < 60, f"60,000 lines took {elapsed:.1f} s"


def test_every_bad_input_at_once(tmp_path):
    """All of the above in one folder: one run, every bad path named once, the good file fixed."""
    bad = tmp_path / "bad"
    for index, make in enumerate(UNREADABLE):
        sub = bad / str(index)
        sub.mkdir(parents=True)
        make(sub)
    for name, text in NESTED.items():
        (bad / f"{name.replace('-', '_')}.py").write_text(text)
    (tmp_path / "good.py").write_text(KEPT_LOSS)
    result = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", "--output-format", "json", ".",
                        cwd=tmp_path, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    named = [line for line in stderr_lines(result) if "/bad.py" in line]
    assert len(named) == len(UNREADABLE), result.stderr
    assert "history.append(loss.detach())" in (tmp_path / "good.py").read_text()
    assert not [p for p in tmp_path.rglob("*.tmp")]
    assert all(stat.S_ISREG(os.lstat(p).st_mode) or os.path.islink(p) or stat.S_ISFIFO(os.lstat(p).st_mode)
               for p in bad.rglob("*.py"))
