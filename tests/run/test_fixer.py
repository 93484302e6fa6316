"""The fixer never corrupts a file: bytes outside fixes, encodings, permissions, atomic writes,
fixes that would not parse, convergence."""

from __future__ import annotations

import ast
import os
import stat
import textwrap

import pytest
from helpers import run_ptlint

from ptlint.engine import registry
from ptlint.engine.finding import SAFE, Fix
from ptlint.engine.rule import Rule
from ptlint.run import fixer

KEPT_LOSS = textwrap.dedent("""\
    import torch  # the model's imports

    for x in loader:
        loss = model(x)
        loss.backward()
        history.append(loss)   # keep   'quotes' and  spacing
""")
FIXED_LOSS = KEPT_LOSS.replace("history.append(loss)", "history.append(loss.detach())")


def fix_apply(*args, cwd):
    return run_ptlint("fix", "--apply", "--no-cache", *args, cwd=cwd)


def test_fix_shows_diff_and_writes_nothing(tmp_path):
    target = tmp_path / "a.py"
    target.write_text(KEPT_LOSS)
    result = run_ptlint("fix", "--no-cache", "--unsafe-fixes", "a.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "-    history.append(loss)" in result.stdout and "+    history.append(loss.detach())" in result.stdout
    assert result.stdout.startswith("--- a/a.py\n+++ b/a.py\n")
    assert target.read_text() == KEPT_LOSS
    # without --unsafe-fixes the unsafe fix is not offered: nothing would change
    assert run_ptlint("fix", "--no-cache", "a.py", cwd=tmp_path).returncode == 0


def test_apply_writes_and_exit_code_tells_what_remains(tmp_path):
    target = tmp_path / "a.py"
    target.write_text(KEPT_LOSS + "for y in ys:\n    torch.cuda.synchronize()\n")
    result = fix_apply("--unsafe-fixes", "a.py", cwd=tmp_path)
    assert target.read_text() == FIXED_LOSS + "for y in ys:\n    torch.cuda.synchronize()\n"
    assert result.returncode == 1  # the PTL102 finding has no fix and remains
    assert "PTL102" in result.stdout
    target.write_text(KEPT_LOSS)
    assert fix_apply("--unsafe-fixes", "a.py", cwd=tmp_path).returncode == 0
    assert target.read_text() == FIXED_LOSS


def test_crlf_bom_and_encoding_are_kept_byte_for_byte(tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(b"\xef\xbb\xbf" + KEPT_LOSS.replace("\n", "\r\n").encode())
    latin = tmp_path / "latin.py"
    header = "# -*- coding: latin-1 -*-\n# r\xe9sum\xe9\n"
    latin.write_bytes((header + KEPT_LOSS).encode("latin-1"))
    fix_apply("--unsafe-fixes", ".", cwd=tmp_path)
    assert crlf.read_bytes() == b"\xef\xbb\xbf" + FIXED_LOSS.replace("\n", "\r\n").encode()
    assert latin.read_bytes() == (header + FIXED_LOSS).encode("latin-1")


def test_permissions_kept_and_untouched_files_not_rewritten(tmp_path):
    fixed = tmp_path / "a.py"
    fixed.write_text(KEPT_LOSS)
    os.chmod(fixed, 0o750)
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\nfor y in ys:\n    torch.cuda.synchronize()\n")
    before = os.stat(clean)
    fix_apply("--unsafe-fixes", ".", cwd=tmp_path)
    assert stat.S_IMODE(os.stat(fixed).st_mode) == 0o750
    after = os.stat(clean)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_read_only_file_is_reported_not_written(tmp_path):
    target = tmp_path / "a.py"
    target.write_text(KEPT_LOSS)
    os.chmod(target, 0o444)
    result = fix_apply("--unsafe-fixes", "a.py", cwd=tmp_path)
    assert result.returncode == 2
    assert "a.py" in result.stderr and "read-only" in result.stderr and "Traceback" not in result.stderr
    assert target.read_text() == KEPT_LOSS


def test_file_changed_on_disk_is_not_overwritten(tmp_path, monkeypatch):
    from ptlint.run.check import check_file
    from ptlint.run.discover import Job
    from ptlint.run.config import build_settings
    from ptlint.run.fix import fix_jobs

    target = tmp_path / "a.py"
    target.write_text(KEPT_LOSS)
    job = Job(str(target), build_settings([str(target)], unsafe_fixes=True))
    findings = check_file(job).findings
    real_fix_source = fixer.fix_source

    def edit_meanwhile(*args, **kwargs):
        result = real_fix_source(*args, **kwargs)
        target.write_text("# edited by the user meanwhile\n" + KEPT_LOSS)
        return result

    monkeypatch.setattr(fixer, "fix_source", edit_meanwhile)
    outcome = fix_jobs([job], findings, write=True)
    assert any("changed on disk" in e for e in outcome.errors)
    assert target.read_text() == "# edited by the user meanwhile\n" + KEPT_LOSS


class _Breaks(Rule):
    """A test rule whose fix produces code that does not parse."""

    code, name, message, fixable = "PTL101", "sync-in-loop", "m", SAFE
    triggers = ("target",)

    def visit_Name(self, node):
        if node.id == "target":
            self.report(node, fix=Fix(SAFE, "break it", (self.ctx.edits.replace(node, "target +"),)))


class _Grows(_Breaks):
    """A test rule whose fix never converges: each pass makes a new finding."""

    code = "PTL102"

    def visit_Name(self, node):
        if node.id == "target":
            self.report(node, fix=Fix(SAFE, "grow", (self.ctx.edits.replace(node, "f(target)"),)))


class _NeedsTorch(_Breaks):
    """A test rule whose fixes each need `import torch`."""

    code = "PTL302"

    def visit_Name(self, node):
        if node.id == "target":
            spelled, imports = self.ctx.edits.reference("torch.softmax")
            self.report(node, fix=Fix(SAFE, "use torch", (self.ctx.edits.replace(node, spelled), *imports)))


@pytest.fixture
def test_rules(monkeypatch):
    rules = dict(registry.all_rules())
    rules["PTL101"], rules["PTL102"], rules["PTL302"] = _Breaks, _Grows, _NeedsTorch
    monkeypatch.setattr(fixer, "all_rules", lambda: rules)
    return rules


def test_fix_that_does_not_parse_is_dropped_others_kept(test_rules):
    from ptlint.engine.source import SourceFile

    text = "target = 1\n" + KEPT_LOSS
    result = fixer.fix_source(SourceFile("a.py", text), ("PTL101", "PTL103"), unsafe=True)
    assert result.fixed == "target = 1\n" + FIXED_LOSS  # PTL103's fix kept, PTL101's dropped
    assert any("PTL101" in m and "dropped" in m and "would not parse" in m for m in result.messages)
    assert [f.code for f in result.applied] == ["PTL103"]
    assert [f.code for f in result.remaining] == ["PTL101"]


def test_fixes_that_never_converge_stop_at_the_cap(test_rules):
    from ptlint.engine.source import SourceFile

    result = fixer.fix_source(SourceFile("a.py", "target\n"), ("PTL102",), unsafe=False)
    assert any("did not converge" in m for m in result.messages)
    assert result.fixed.count("f(") == fixer.MAX_PASSES
    ast.parse(result.fixed)


def test_fix_adds_a_needed_import_once(test_rules):
    from ptlint.engine.source import SourceFile

    text = '"""doc"""\nimport os\n\nx = target\ny = target\n'
    result = fixer.fix_source(SourceFile("a.py", text), ("PTL302",), unsafe=False)
    assert result.fixed == '"""doc"""\nimport os\nimport torch\n\nx = torch.softmax\ny = torch.softmax\n'
    assert len(result.applied) == 2


def test_import_goes_after_the_docstring_or_first_when_there_is_none(test_rules):
    from ptlint.engine.source import SourceFile

    def fixed(text):
        return fixer.fix_source(SourceFile("a.py", text), ("PTL302",), unsafe=False).fixed

    assert fixed('"""doc"""\nx = target\n') == '"""doc"""\nimport torch\nx = torch.softmax\n'
    assert fixed("x = target\n") == "import torch\nx = torch.softmax\n"
    assert fixed("import os\r\nx = target") == "import os\r\nimport torch\r\nx = torch.softmax"
    assert fixed("import os  # keep\nx = target") == "import os  # keep\nimport torch\nx = torch.softmax"
    assert fixed("import torch as T\nx = target") == "import torch as T\nx = T.softmax"


def test_an_offered_fix_is_made_or_explained():
    """A finding that says it has a fix either gets it or the fixer says why not; otherwise the
    editor and `fix --diff` promise a fix that never comes."""
    from ptlint.front.api import check_text, fix_text

    text = "import torch\n\ndef f(n, device):\n    return torch.arange(n).to(device,  # why\n    non_blocking=True)\n"
    [finding] = check_text(text, ["PTL201"])
    if finding.fix is not None:  # offered (not offering one is fine too: the comment would be lost)
        assert fix_text(text, ["PTL201"], unsafe=True) != text
