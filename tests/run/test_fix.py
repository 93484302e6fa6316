"""Fixing (ptlint.run.fix): the fixer never corrupts a file (bytes outside fixes, encodings,
permissions, atomic writes, fixes that would not parse, convergence), and `ptlint fix` over files,
in process (so that mutation testing sees it): what is written, what remains, what is said about
files that cannot be read or written, diffs, and the first pass answered from the check's cache."""

from __future__ import annotations

import ast
import os
import stat
import textwrap

import pytest
from helpers import run_ptlint

from ptlint.engine import registry
from ptlint.engine.finding import SAFE, Edit, Fix
from ptlint.engine.rule import Rule
from ptlint.engine.source import SourceFile
from ptlint.run import fix as fixer
from ptlint.run.cache import Caches
from ptlint.run.check import check_file
from ptlint.run.discover import Job
from ptlint.run.config import Settings
from ptlint.run.fix import fix_jobs, unified_diff

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

    result = fixer.fix_source(SourceFile("a.py", "f = print\ntarget\n"), ("PTL102",), unsafe=False)
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


SAFE_ONLY = Settings(enabled=("PTL103", "PTL101"))
WITH_UNSAFE = Settings(enabled=("PTL103", "PTL101"), unsafe_fixes=True)
# PTL103's fix (`.detach()`) is unsafe: it changes what the list holds
UNSAFE_TEXT = KEPT_LOSS


def jobs_and_findings(paths, settings):
    jobs = [Job(str(p), settings) for p in paths]
    findings = [f for job in jobs for f in check_file(job).findings]
    return jobs, findings


def test_write_fixes_files_and_reports_what_remains(tmp_path):
    a = tmp_path / "a.py"
    a.write_text(UNSAFE_TEXT)
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    jobs, findings = jobs_and_findings([a, clean], WITH_UNSAFE)
    assert [f.code for f in findings] == ["PTL103"]
    outcome = fix_jobs(jobs, findings, write=True)
    assert a.read_text() == FIXED_LOSS
    assert outcome.changed == [str(a)] and outcome.fixed == 1
    assert outcome.remaining == [] and outcome.errors == [] and outcome.messages == []
    assert outcome.diff == unified_diff(str(a), UNSAFE_TEXT, FIXED_LOSS)
    assert clean.read_text() == "x = 1\n"


def test_without_write_the_diff_is_shown_and_nothing_changes(tmp_path):
    a = tmp_path / "a.py"
    a.write_text(UNSAFE_TEXT)
    jobs, findings = jobs_and_findings([a], WITH_UNSAFE)
    outcome = fix_jobs(jobs, findings, write=False)
    assert a.read_text() == UNSAFE_TEXT
    assert outcome.changed == [str(a)] and outcome.fixed == 1
    assert "+    history.append(loss.detach())   # keep" in outcome.diff


def test_an_unsafe_fix_without_leave_stays_a_finding(tmp_path):
    a = tmp_path / "a.py"
    a.write_text(UNSAFE_TEXT)
    jobs, findings = jobs_and_findings([a], SAFE_ONLY)
    outcome = fix_jobs(jobs, findings, write=True)
    assert a.read_text() == UNSAFE_TEXT
    assert outcome.changed == [] and outcome.fixed == 0 and outcome.diff == ""
    assert [(f.code, f.line) for f in outcome.remaining] == [("PTL103", 6)]


def test_findings_of_no_job_pass_through_sorted(tmp_path):
    a = tmp_path / "a.py"
    a.write_text(UNSAFE_TEXT)
    jobs, findings = jobs_and_findings([a], SAFE_ONLY)
    other = jobs_and_findings([a], SAFE_ONLY)[1][0]
    other.path = str(tmp_path / "0_dynamic.py")  # e.g. a finding of the dynamic pass
    outcome = fix_jobs(jobs, findings + [other], write=True)
    assert [f.path for f in outcome.remaining] == [str(tmp_path / "0_dynamic.py"), str(a)]


def test_unreadable_unwritable_and_changed_files_are_one_line_each(tmp_path, monkeypatch):
    a = tmp_path / "a.py"
    a.write_text(UNSAFE_TEXT)
    jobs, findings = jobs_and_findings([a], WITH_UNSAFE)
    a.unlink()
    outcome = fix_jobs(jobs, findings, write=True)
    assert outcome.errors == [f"{a}: cannot read: no such file or directory"]
    assert [f.code for f in outcome.remaining] == ["PTL103"] and outcome.changed == []

    a.write_text(UNSAFE_TEXT)
    os.chmod(a, 0o444)
    outcome = fix_jobs(jobs, findings, write=True)
    assert outcome.errors == [f"{a}: cannot write: file is read-only"]
    assert [f.code for f in outcome.remaining] == ["PTL103"] and outcome.changed == [] and outcome.diff == ""
    assert a.read_text() == UNSAFE_TEXT
    os.chmod(a, 0o644)

    real = fixer.write_atomic

    def edited_meanwhile(path, data, expected=None):
        with open(path, "a") as handle:
            handle.write("# meanwhile\n")
        return real(path, data, expected)

    monkeypatch.setattr(fixer, "write_atomic", edited_meanwhile)
    outcome = fix_jobs(jobs, findings, write=True)
    assert outcome.errors == [f"{a}: changed on disk while fixing; not written"]
    assert [f.code for f in outcome.remaining] == ["PTL103"] and outcome.fixed == 0
    assert a.read_text() == UNSAFE_TEXT + "# meanwhile\n"


def test_a_fix_the_declared_encoding_cannot_hold_is_not_written(tmp_path, monkeypatch):
    a = tmp_path / "a.py"
    a.write_bytes(b"# -*- coding: latin-1 -*-\n" + UNSAFE_TEXT.encode())
    jobs, findings = jobs_and_findings([a], WITH_UNSAFE)
    real = fixer.fix_source

    def with_snowman(*args, **kwargs):
        result = real(*args, **kwargs)
        result.fixed += "# \u2603\n"
        return result

    monkeypatch.setattr(fixer, "fix_source", with_snowman)
    outcome = fix_jobs(jobs, findings, write=True)
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith(f"{a}: cannot write: ")
    assert "latin-1" in outcome.errors[0]
    assert a.read_bytes() == b"# -*- coding: latin-1 -*-\n" + UNSAFE_TEXT.encode()


def test_write_atomic_keeps_mode_and_leaves_no_debris(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o751)
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"newer\n", expected=b"old\n")
    assert target.read_bytes() == b"new\n"
    fixer.write_atomic(str(target), b"any\n")  # no expectation: written
    assert target.read_bytes() == b"any\n"


def test_write_atomic_through_a_symlink_replaces_the_target(tmp_path):
    real = tmp_path / "real.py"
    real.write_bytes(b"old\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    fixer.write_atomic(str(link), b"new\n", expected=b"old\n")
    assert link.is_symlink() and real.read_bytes() == b"new\n"


def test_write_atomic_cleans_up_when_the_rename_fails(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fixer.os, "replace", refuse)
    with pytest.raises(OSError):
        fixer.write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


@pytest.mark.parametrize("mode", [0o444, 0o400])
def test_write_atomic_refuses_a_read_only_file(tmp_path, mode):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chmod(target, mode)
    with pytest.raises(PermissionError, match="read-only"):
        fixer.write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"old\n"


def test_unified_diff_marks_a_missing_final_newline():
    diff = unified_diff("a.py", "x = 1\ny = 2", "x = 1\ny = 3")
    assert diff == ("--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n\\ No newline at end of file\n"
                    "+y = 3\n\\ No newline at end of file\n")
    assert unified_diff("a.py", "same\n", "same\n") == ""


def test_the_first_pass_reads_the_checks_findings_from_the_cache(tmp_path, monkeypatch):
    """A check then a fix lint the file once between them; every pass after the first lints."""
    a = tmp_path / "a.py"
    a.write_text(UNSAFE_TEXT)
    caches = Caches(str(tmp_path / "cache"))
    settings = Settings(enabled=("PTL103",), unsafe_fixes=True, root=str(tmp_path))
    job = Job(str(a), settings)
    findings = check_file(job, caches).findings
    calls = []
    real = fixer.lint_source

    def counting(source, *args, **kwargs):
        calls.append(source.text)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(fixer, "lint_source", counting)
    outcome = fix_jobs([job], findings, write=True, caches=caches)
    assert outcome.fixed == 1 and a.read_text() == FIXED_LOSS
    assert calls == [FIXED_LOSS]  # only the fixed text was linted: the original came from the cache
    calls.clear()
    again = fixer.fix_source(SourceFile(str(a), FIXED_LOSS), ("PTL103",), True,
                             cache=caches.for_settings(settings), project_root=str(tmp_path))
    assert calls == [] and not again.applied and again.remaining == []


def test_fix_source_given_findings_does_not_lint_the_original(monkeypatch):
    source = SourceFile("a.py", UNSAFE_TEXT)
    findings = fixer.fix_source(source, ("PTL103",), True).applied
    calls = []
    real = fixer.lint_source
    monkeypatch.setattr(fixer, "lint_source", lambda s, *a, **k: calls.append(s.text) or real(s, *a, **k))
    result = fixer.fix_source(source, ("PTL103",), True, findings=findings)
    assert result.fixed == FIXED_LOSS and calls == [FIXED_LOSS]
    unsafe_refused = fixer.fix_source(source, ("PTL103",), False)
    assert unsafe_refused.fixed == UNSAFE_TEXT and not unsafe_refused.changed
    assert [f.code for f in unsafe_refused.remaining] == ["PTL103"]


def test_choose_skips_fixes_that_overlap_an_earlier_one():
    from ptlint.engine.finding import SAFE, Edit, Finding, Fix

    def finding(line, col, end_col, text):
        return Finding("PTL999", "x", "m", "a.py", line, col, line, end_col,
                       fix=Fix(SAFE, "f", (Edit(line, col, line, end_col, text),)))

    first, overlapping, later, touching = finding(1, 1, 5, "a"), finding(1, 3, 8, "b"), finding(2, 1, 2, "c"), \
        finding(1, 5, 6, "d")
    assert fixer.choose([later, overlapping, first, touching]) == [first, touching, later]


def test_write_atomic_writes_a_hidden_temporary_beside_the_file(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o200)  # writable by its owner only: still writable
    renamed = []
    real = os.replace
    monkeypatch.setattr(fixer.os, "replace", lambda src, dst: renamed.append((src, dst)) or real(src, dst))
    fixer.write_atomic(str(target), b"new\n")
    [(src, dst)] = renamed
    assert os.path.dirname(src) == str(tmp_path) and os.path.basename(src).startswith(".ptlint-")
    assert src.endswith(".tmp") and dst == str(target)
    os.chmod(target, 0o644)
    assert target.read_bytes() == b"new\n"


def test_many_files_in_one_run(tmp_path):
    """One file's trouble costs only that file: the others are fixed, counted and diffed."""
    first, second, gone, kept = (tmp_path / n for n in ("a.py", "b.py", "gone.py", "kept.py"))
    for path in (first, second, gone):
        path.write_text(UNSAFE_TEXT)
    kept.write_text(UNSAFE_TEXT.replace("history.append(loss)", "print(loss.item())"))
    settings = Settings(enabled=("PTL103", "PTL101"), unsafe_fixes=True)
    jobs, findings = jobs_and_findings([gone, kept, first, second], settings)
    gone.unlink()
    outcome = fix_jobs(jobs, findings, write=True)
    assert first.read_text() == second.read_text() == FIXED_LOSS
    assert outcome.changed == [str(first), str(second)] and outcome.fixed == 2
    assert outcome.diff == unified_diff(str(first), UNSAFE_TEXT, FIXED_LOSS) + \
        unified_diff(str(second), UNSAFE_TEXT, FIXED_LOSS)
    assert outcome.errors == [f"{gone}: cannot read: no such file or directory"]
    assert sorted((os.path.basename(f.path), f.code) for f in outcome.remaining) == [
        ("gone.py", "PTL103"), ("kept.py", "PTL101")]


def test_standard_input_is_fixed_from_its_bytes(tmp_path):
    job = Job(str(tmp_path / "piped.py"), WITH_UNSAFE, data=UNSAFE_TEXT.encode())
    findings = check_file(job).findings
    outcome = fix_jobs([job], findings, write=False)
    assert outcome.fixed == 1 and outcome.diff == unified_diff(job.path, UNSAFE_TEXT, FIXED_LOSS)
    assert not (tmp_path / "piped.py").exists()


def test_test_code_keeps_its_performance_findings_unfixed(tmp_path):
    target = tmp_path / "tests" / "test_loss.py"
    target.parent.mkdir()
    target.write_text(UNSAFE_TEXT)
    settings = Settings(enabled=("PTL103", "PTL301"), unsafe_fixes=True, root=str(tmp_path))
    job = Job(str(target), settings)
    # the check (test code: PTL103 silent) gave nothing; a stale PTL103 finding is not fixed either
    stale = check_file(Job(str(target), Settings(enabled=("PTL103",), unsafe_fixes=True))).findings
    outcome = fix_jobs([job], stale, write=True)
    assert target.read_text() == UNSAFE_TEXT and outcome.fixed == 0 and outcome.remaining == []


def test_a_notebooks_cells_are_fixed_and_diffed_per_cell(tmp_path):
    import json

    cells = [{"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# notes"},
             {"cell_type": "code", "id": "a", "metadata": {}, "execution_count": None, "outputs": [],
              "source": "import torch\nx = torch.ones(3)"},
             {"cell_type": "code", "id": "b", "metadata": {}, "execution_count": None, "outputs": [],
              "source": UNSAFE_TEXT.rstrip("\n")}]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}, indent=1))
    jobs, findings = jobs_and_findings([notebook], WITH_UNSAFE)
    assert [(f.code, f.extra.get("cell")) for f in findings] == [("PTL103", 3)]
    outcome = fix_jobs(jobs, findings, write=True)
    assert outcome.fixed == 1 and outcome.changed == [str(notebook)]
    written = json.loads(notebook.read_text())
    assert written["cells"][2]["source"] == FIXED_LOSS.rstrip("\n")
    assert written["cells"][:2] == cells[:2]
    label = f"{notebook}:cell 3"
    assert outcome.diff == unified_diff(label, UNSAFE_TEXT, FIXED_LOSS)  # the cell's last line, ended
    assert fix_jobs(jobs, check_file(jobs[0]).findings, write=True).fixed == 0  # nothing left


# -- a user's edit is never lost; owner and hard links are kept ---------------------------------

def _edit_during(monkeypatch, target, call: str, content: bytes, when: int = 1):
    """Save `content` into `target` (as an editor would) during the `when`-th call of os.`call`
    made by write_atomic: the moments between the first comparison and the rename."""
    real = getattr(fixer.os, call)
    calls = []

    def hooked(*args, **kwargs):
        calls.append(args)
        if len(calls) == when:
            target.write_bytes(content)
        return real(*args, **kwargs)

    monkeypatch.setattr(fixer.os, call, hooked)
    return calls


@pytest.mark.parametrize("call,when", [("fsync", 1), ("chmod", 1), ("stat", 2)])
def test_an_edit_saved_while_the_temporary_is_written_is_not_overwritten(tmp_path, monkeypatch, call, when):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    calls = _edit_during(monkeypatch, target, call, b"the user's edit\n", when)
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert len(calls) >= when
    assert target.read_bytes() == b"the user's edit\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_an_edit_of_the_same_length_within_the_same_tick_is_seen_by_its_content(tmp_path, monkeypatch):
    """Size and modification time can stay equal (a coarse clock): the bytes are compared too."""
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    stamp = os.stat(target).st_mtime_ns
    real = fixer.os.fsync

    def edit_keeping_the_stamp(fd):
        target.write_bytes(b"odd\n")
        os.utime(target, ns=(stamp, stamp))
        return real(fd)

    monkeypatch.setattr(fixer.os, "fsync", edit_keeping_the_stamp)
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert target.read_bytes() == b"odd\n"


def test_an_editor_that_saves_by_renaming_is_seen_by_the_inode(tmp_path, monkeypatch):
    """The same bytes saved as a new file renamed over the old one: not the file that was read."""
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    real = fixer.os.fsync

    def save_by_rename(fd):
        result = real(fd)
        saved = tmp_path / "saved.tmp"
        saved.write_bytes(b"old\n")
        os.rename(saved, target)
        return result

    monkeypatch.setattr(fixer.os, "fsync", save_by_rename)
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert target.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_a_file_deleted_meanwhile_is_not_written(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    real = fixer.os.fsync
    monkeypatch.setattr(fixer.os, "fsync", lambda fd: target.unlink() or real(fd))
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert list(tmp_path.iterdir()) == []


def test_without_expected_bytes_a_modification_is_still_seen(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    _edit_during(monkeypatch, target, "fsync", b"longer edit\n")
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n")
    assert target.read_bytes() == b"longer edit\n"


def test_a_hard_linked_file_is_written_in_place_and_stays_linked(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    other = tmp_path / "b.py"
    os.link(target, other)
    inode = os.stat(target).st_ino
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert os.stat(target).st_ino == inode and os.stat(target).st_nlink == 2
    assert other.read_bytes() == b"new\n" == target.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]  # the copy is gone


def test_a_hard_linked_file_edited_meanwhile_is_not_written(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.link(target, tmp_path / "b.py")
    real_open = open

    def edited_before_open(path, mode="r", *args, **kwargs):
        if mode == "r+b":
            target.write_bytes(b"the user's edit\n")
        return real_open(path, mode, *args, **kwargs)

    import builtins
    monkeypatch.setattr(builtins, "open", edited_before_open)
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    monkeypatch.undo()
    assert target.read_bytes() == b"the user's edit\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py", "b.py"]


def test_writing_in_place_keeps_a_copy_of_the_old_bytes_until_the_new_ones_are_on_disk(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.link(target, tmp_path / "b.py")
    seen = []
    real = fixer.os.fsync

    def look(fd):
        seen.append(sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".orig")))
        return real(fd)

    monkeypatch.setattr(fixer.os, "fsync", look)
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    [copy] = seen[1]  # while the file itself is synced, the copy of the old bytes exists
    assert copy.startswith(".ptlint-") and seen[0] == [copy]
    assert not list(tmp_path.glob("*.orig"))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_as_root_a_users_file_keeps_its_owner(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chown(target, 4321, 4321)
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    info = os.stat(target)
    assert (info.st_uid, info.st_gid) == (4321, 4321) and target.read_bytes() == b"new\n"


def test_an_owner_that_cannot_be_given_back_means_writing_in_place(tmp_path, monkeypatch):
    """Not root, a group-writable file of someone else: chown is refused, so the file's own
    inode is written (its owner stays)."""
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    inode = os.stat(target).st_ino
    real_stat = fixer.os.stat

    def other_owner(path, *args, **kwargs):
        info = real_stat(path, *args, **kwargs)
        if os.path.basename(path) == "a.py":
            values = list(info)
            values[stat.ST_UID] = info.st_uid + 1
            return os.stat_result(values)
        return info

    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(fixer.os, "stat", other_owner)
    monkeypatch.setattr(fixer.os, "chown", refuse)
    monkeypatch.setattr(fixer, "_same_file", lambda a, b: (a.st_ino, a.st_size) == (b.st_ino, b.st_size))
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert real_stat(target).st_ino == inode and target.read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


# -- what the structural check decides: each fix alone, then together ---------------------------------

class _Glues(_Breaks):
    """A test rule whose fix glues `return` to its text (`return(target)` -> `returntarget2`)."""

    code = "PTL102"
    triggers = ("target",)

    def visit_Name(self, node):
        if node.id == "target":
            start, end = self.ctx.edits.outer(node)
            line, column = self.ctx.edits.position(start)
            end_line, end_column = self.ctx.edits.position(end)
            self.report(node, fix=Fix(SAFE, "glue", (Edit(line, column, end_line, end_column, "target2"),)))


def test_a_fix_that_fails_the_check_is_dropped_with_its_line_and_reason_and_the_others_applied(test_rules,
                                                                                                  monkeypatch):
    from ptlint.engine.finding import Edit  # noqa: F401 - used by _Glues
    from ptlint.engine.source import SourceFile

    test_rules["PTL102"] = _Glues
    text = "def f(target):\n    return(target)\n" + KEPT_LOSS
    result = fixer.fix_source(SourceFile("a.py", text), ("PTL102", "PTL103"), unsafe=True)
    assert result.fixed == "def f(target):\n    return(target)\n" + FIXED_LOSS
    assert result.messages == ["a.py:2: dropped the PTL102 fix: it would glue two tokens into `returntarget2` at line 2"]
    assert [f.code for f in result.applied] == ["PTL103"] and [f.code for f in result.remaining] == ["PTL102"]
    assert [[e.content for e in edits] for _, edits in result.passes] == [[".detach()"]]
    assert result.passes[0][0] == text


def test_fixes_each_fine_alone_but_not_together_are_applied_one_pass_at_a_time(monkeypatch):
    """Should two fixes pass the check alone and fail it together, the first is applied and the
    next pass (which lints the new text) takes the other."""
    from ptlint.engine.source import SourceFile

    text = "import torch\n\ndef f(x, y):\n    a = torch.log(torch.softmax(x, -1))\n    b = torch.log(torch.softmax(y, 0))\n"
    real = fixer.checked_text
    together = []

    def refuse_two(source, edits, tree=None):
        edits = list(edits)
        if len({(e.line, e.column) for e in edits}) > 1:
            together.append(len(edits))
            raise fixer.FixRejected("not together")
        return real(source, edits, tree)

    monkeypatch.setattr(fixer, "checked_text", refuse_two)
    result = fixer.fix_source(SourceFile("a.py", text), ("PTL302",), unsafe=False)
    assert result.fixed.endswith("a = torch.log_softmax(x, -1)\n    b = torch.log_softmax(y, 0)\n")
    assert len(result.passes) == 2 and together and result.messages == []


def test_a_text_that_does_not_parse_gets_no_fix():
    from ptlint.engine.source import SourceFile

    source = SourceFile("a.py", "def f(:\n    pass\n")
    finding = fixer.fix_source(SourceFile("a.py", KEPT_LOSS), ("PTL103",), True).applied[0]
    result = fixer.fix_source(source, ("PTL103",), True, findings=[finding])
    assert not result.changed and result.passes == []


# -- details of writing and of fixing notebooks and files (from the survivors of mutation testing) ----

def test_an_ordinary_file_is_replaced_by_a_rename_its_mode_kept(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o464)  # writable by its group only: still written
    inode = os.stat(target).st_ino
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert os.stat(target).st_ino != inode and target.read_bytes() == b"new\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o464


def test_a_read_only_file_is_refused_with_its_name(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o444)
    with pytest.raises(PermissionError) as caught:
        fixer.write_atomic(str(target), b"new\n")
    assert caught.value.errno == 13 and caught.value.filename == str(target)
    os.chmod(target, 0o644)


def test_changed_on_disk_names_the_file(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    with pytest.raises(fixer.ChangedOnDisk) as caught:
        fixer.write_atomic(str(target), b"new\n", expected=b"other\n")
    assert caught.value.args == (str(target),)


@pytest.mark.parametrize("path", ["hard link", "owner kept"])
def test_writing_in_place_compares_the_bytes_too(tmp_path, monkeypatch, path):
    """In place, the last comparison is the one before the write: an edit that kept the size and
    the modification time is still seen by its bytes."""
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    if path == "hard link":
        os.link(target, tmp_path / "b.py")
    else:
        monkeypatch.setattr(fixer, "_give_owner", lambda temporary, original: False)
    stamp = os.stat(target).st_mtime_ns
    real = fixer._unchanged

    def edited_after_the_first_look(real_path, before, expected):
        real(real_path, before, expected)
        target.write_bytes(b"odd\n")
        os.utime(target, ns=(stamp, stamp))

    monkeypatch.setattr(fixer, "_unchanged", edited_after_the_first_look)
    with pytest.raises(fixer.ChangedOnDisk) as caught:
        fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    assert caught.value.args == (str(target),) and target.read_bytes() == b"odd\n"


def test_a_file_gone_meanwhile_is_changed_on_disk_with_its_name(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    before = os.stat(target)
    target.unlink()
    for expected in (None, b"old\n"):
        with pytest.raises(fixer.ChangedOnDisk) as caught:
            fixer._unchanged(str(target), before, expected)
        assert caught.value.args == (str(target),)


def test_diffs_of_lines_ending_in_a_carriage_return():
    assert fixer._ended("a") == "a\n" and fixer._ended("a\r") == "a\r" and fixer._ended("a\n") == "a\n"
    assert fixer._ended("") == ""
    assert "No newline" not in unified_diff("a.py", "x = 1\r", "x = 2\r")
    # a line that ends in a lone carriage return ends the diff's line too: what follows starts below
    assert unified_diff("a.py", "x = 1\r", "x = 2\r").endswith("-x = 1\r\n+x = 2\r\n")


def _notebook(tmp_path, cells, name="nb.ipynb"):
    import nbformat

    from ptlint.engine.notebook import read_notebook

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(text) for text in cells]
    data = nbformat.writes(notebook).encode()
    (tmp_path / name).write_bytes(data)
    return read_notebook(data, str(tmp_path / name)), data


def test_fix_notebook_fixes_the_cells_that_parse_and_keeps_the_broken_ones(tmp_path):
    notebook, _ = _notebook(tmp_path, ["def broken(:\n    pass", "import torch\nx = torch.randn(3)",
                                       "y = torch.log(torch.softmax(x, -1))\nz = x.item()"])
    outcome = fixer.fix_notebook(notebook, ("PTL302", "PTL101"), False, False)
    assert outcome.path == notebook.path and outcome.changed
    assert outcome.changed_cells == {3: ("y = torch.log(torch.softmax(x, -1))\nz = x.item()",
                                         "y = torch.log_softmax(x, -1)\nz = x.item()")}
    assert [(f.code, f.cell) for f in outcome.remaining] == [("PTL001", 1)]
    assert [f.code for f in outcome.applied] == ["PTL302"]
    nothing = fixer.fix_notebook(notebook, ("PTL101",), False, False)
    assert not nothing.changed and [(f.code, f.cell) for f in nothing.remaining] == [("PTL001", 1)]


def test_fix_notebook_as_test_code_leaves_the_performance_findings(tmp_path):
    notebook, _ = _notebook(tmp_path, ["import torch\nfor x in xs:\n    zs.append(torch.zeros(3).cuda())"])
    assert fixer.fix_notebook(notebook, ("PTL201",), True, False).changed
    assert not fixer.fix_notebook(notebook, ("PTL201",), True, True).changed


def test_fix_file_of_a_notebook_labels_each_cell(tmp_path):
    from ptlint.run.config import Settings

    _, data = _notebook(tmp_path, ["import torch", "y = torch.log(torch.softmax(x, -1))"])
    job = Job(str(tmp_path / "nb.ipynb"), Settings(enabled=("PTL302",)))
    outcome = fixer.fix_file(job, data)
    assert outcome.path == job.path and outcome.original == data and [f.code for f in outcome.applied] == ["PTL302"]
    assert outcome.diff.startswith(f"--- a/{job.path}:cell 2\n+++ b/{job.path}:cell 2\n")
    assert b"log_softmax" in outcome.fixed
    unchanged = fixer.fix_file(Job(job.path, Settings(enabled=("PTL101",))), data)
    assert unchanged.fixed == data and unchanged.diff == "" and not unchanged.changed


def test_fix_file_honours_test_code_and_the_project_root(tmp_path, monkeypatch):
    from ptlint.run.config import Settings

    settings = Settings(enabled=("PTL103",), unsafe_fixes=True, root=str(tmp_path), test_code=("tests/**",))
    plain = fixer.fix_file(Job(str(tmp_path / "loop.py"), settings), UNSAFE_TEXT.encode())
    assert plain.fixed == FIXED_LOSS.encode() and plain.diff == unified_diff(str(tmp_path / "loop.py"),
                                                                             UNSAFE_TEXT, FIXED_LOSS)
    seen = []
    real = fixer.fix_source
    monkeypatch.setattr(fixer, "fix_source", lambda *a, **k: seen.append((a[3], k["project_root"])) or real(*a, **k))
    fixer.fix_file(Job(str(tmp_path / "tests" / "test_loop.py"), settings), UNSAFE_TEXT.encode())
    assert seen == [(True, str(tmp_path))]


def test_one_files_trouble_does_not_stop_the_next(tmp_path):
    clean, unfixable, fixable = (tmp_path / n for n in ("clean.py", "unfixable.py", "fixable.py"))
    clean.write_text("x = 1\n")
    unfixable.write_text(UNSAFE_TEXT.replace("history.append(loss)", "print(loss.item())"))
    fixable.write_text(UNSAFE_TEXT)
    jobs, findings = jobs_and_findings([clean, unfixable, fixable], WITH_UNSAFE)
    outcome = fix_jobs(jobs, findings, write=True)
    assert fixable.read_text() == FIXED_LOSS and outcome.changed == [str(fixable)]
    assert [(os.path.basename(f.path), f.code) for f in outcome.remaining] == [("unfixable.py", "PTL101")]


def test_a_write_error_without_a_reason_is_said_by_its_text(tmp_path, monkeypatch):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(UNSAFE_TEXT)
    second.write_text(UNSAFE_TEXT)
    jobs, findings = jobs_and_findings([first, second], WITH_UNSAFE)
    real = fixer.write_atomic

    def refuse_first(path, data, expected=None):
        if path == str(first):
            raise OSError("the disk said no")
        return real(path, data, expected)

    monkeypatch.setattr(fixer, "write_atomic", refuse_first)
    outcome = fix_jobs(jobs, findings, write=True)
    assert outcome.errors == [f"{first}: cannot write: the disk said no"]
    assert second.read_text() == FIXED_LOSS and outcome.changed == [str(second)]


def test_the_message_when_fixes_do_not_converge(test_rules):
    from ptlint.engine.source import SourceFile

    result = fixer.fix_source(SourceFile("a.py", "f = print\ntarget\n"), ("PTL102",), unsafe=False)
    assert result.messages == [f"a.py: fixes did not converge after {fixer.MAX_PASSES} passes; "
                               "the last parsing result is kept"]
    assert [f.code for f in result.remaining] == ["PTL102"]


def test_test_code_fixes_read_the_checks_findings_from_the_cache_too(tmp_path, monkeypatch):
    """The cache key of a test file says so: a fix of test code finds the check's entry."""
    a = tmp_path / "tests" / "test_loss.py"
    a.parent.mkdir()
    a.write_text(KEPT_LOSS.replace("history.append(loss)", "history.append(torch.log(torch.softmax(loss, -1)))"))
    caches = Caches(str(tmp_path / "cache"))
    settings = Settings(enabled=("PTL302",), root=str(tmp_path), test_code=("tests/**",))
    job = Job(str(a), settings)
    findings = check_file(job, caches).findings
    assert [f.code for f in findings] == ["PTL302"]  # numerics rules report in tests too
    calls = []
    real = fixer.lint_source
    monkeypatch.setattr(fixer, "lint_source", lambda source, *args, **kw: calls.append(1) or real(source, *args, **kw))
    outcome = fix_jobs([job], findings, write=True, caches=caches)
    assert outcome.fixed == 1 and len(calls) == 1  # only the fixed text was linted


# -- cases the mutation run of issue 24 found untested ----------------------------------------------

@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file away needs root")
def test_as_root_a_users_file_is_still_replaced_by_a_rename_once_given_back(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    os.chown(target, 4321, 4321)
    inode = os.stat(target).st_ino
    fixer.write_atomic(str(target), b"new\n", expected=b"old\n")
    info = os.stat(target)
    assert info.st_ino != inode and (info.st_uid, info.st_gid) == (4321, 4321)


def test_a_file_modified_meanwhile_is_changed_on_disk_with_its_name(tmp_path):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    before = os.stat(target)
    target.write_bytes(b"longer now\n")
    with pytest.raises(fixer.ChangedOnDisk) as caught:
        fixer._unchanged(str(target), before, None)
    assert caught.value.args == (str(target),)


def test_a_file_that_no_longer_holds_the_expected_bytes_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    target = tmp_path / "a.py"
    target.write_bytes(b"old\n")
    made = []
    real = fixer.tempfile.mkstemp
    monkeypatch.setattr(fixer.tempfile, "mkstemp", lambda *a, **k: made.append(a) or real(*a, **k))
    with pytest.raises(fixer.ChangedOnDisk):
        fixer.write_atomic(str(target), b"new\n", expected=b"odd\n")  # same size and time: the bytes differ
    assert made == [] and target.read_bytes() == b"old\n"


def _parses_of(monkeypatch, text: str) -> list:
    """Every parse of the whole of `text` by the structural check."""
    from ptlint.engine import structure

    seen = []
    real = structure.parse_text
    monkeypatch.setattr(structure, "parse_text", lambda t: seen.append(t == text) or real(t))
    return seen


def test_the_structural_check_is_given_the_tree_of_the_pass(test_rules, monkeypatch):
    """Each pass parses the file once: the check of every fix (together, alone, the good ones
    again) reuses that tree rather than parsing the whole file again."""
    text = "target = 1\n" + KEPT_LOSS
    seen = _parses_of(monkeypatch, text)
    result = fixer.fix_source(SourceFile("a.py", text), ("PTL101", "PTL103"), unsafe=True)
    assert [f.code for f in result.applied] == ["PTL103"]
    assert seen and not any(seen)  # regions were parsed, never the whole file
    plain = fixer.fix_source(SourceFile("a.py", KEPT_LOSS), ("PTL103",), unsafe=True)
    assert plain.fixed == FIXED_LOSS and not any(seen)


def test_fixes_fine_alone_but_not_together_are_applied_one_at_a_time_with_the_passes_tree(monkeypatch):
    text = "import torch\n\ndef f(x, y):\n    a = torch.log(torch.softmax(x, -1))\n    b = torch.log(torch.softmax(y, 0))\n"
    real = fixer.checked_text

    def refuse_two(source, edits, tree=None):
        edits = list(edits)
        if len({(e.line, e.column) for e in edits}) > 1:
            raise fixer.FixRejected("not together")
        return real(source, edits, tree)

    monkeypatch.setattr(fixer, "checked_text", refuse_two)
    seen = _parses_of(monkeypatch, text)
    result = fixer.fix_source(SourceFile("a.py", text), ("PTL302",), unsafe=False)
    assert [(f.code, f.line) for f in result.applied] == [("PTL302", 4), ("PTL302", 5)]
    assert seen and not any(seen)


def test_per_file_ignores_hold_when_fixing(tmp_path):
    settings = Settings(enabled=("PTL103",), unsafe_fixes=True, root=str(tmp_path),
                        per_file_ignores=(("a.py", ("PTL103",)),))
    data = UNSAFE_TEXT.encode()
    ignored = fixer.fix_file(Job(str(tmp_path / "a.py"), settings), data)
    assert ignored.fixed == data and ignored.applied == [] and ignored.diff == ""
    assert fixer.fix_file(Job(str(tmp_path / "b.py"), settings), data).fixed == FIXED_LOSS.encode()


def test_a_file_with_nothing_to_fix_has_no_diff(tmp_path):
    data = UNSAFE_TEXT.encode()
    outcome = fixer.fix_file(Job(str(tmp_path / "a.py"), Settings(enabled=("PTL103",))), data)  # unsafe: not offered
    assert outcome.fixed == data and outcome.diff == "" and [f.code for f in outcome.remaining] == ["PTL103"]


def test_fix_file_of_a_notebook_in_test_code_leaves_its_performance_findings(tmp_path):
    cells = ["import torch\nfor x in xs:\n    zs.append(torch.zeros(3).cuda())"]
    (tmp_path / "tests").mkdir()
    _, data = _notebook(tmp_path, cells, "tests/nb.ipynb")
    settings = Settings(enabled=("PTL201",), unsafe_fixes=True, root=str(tmp_path), test_code=("tests/**",))
    assert not fixer.fix_file(Job(str(tmp_path / "tests" / "nb.ipynb"), settings), data).changed
    _, data = _notebook(tmp_path, cells, "nb.ipynb")
    assert fixer.fix_file(Job(str(tmp_path / "nb.ipynb"), settings), data).changed


def test_the_diff_of_a_notebook_is_each_changed_cells_diff_in_turn(tmp_path):
    _, data = _notebook(tmp_path, ["import torch", "y = torch.log(torch.softmax(x, -1))",
                                   "z = torch.log(torch.softmax(x, 0))"])
    path = str(tmp_path / "nb.ipynb")
    outcome = fixer.fix_file(Job(path, Settings(enabled=("PTL302",))), data)
    assert outcome.diff == (unified_diff(f"{path}:cell 2", "y = torch.log(torch.softmax(x, -1))\n",
                                         "y = torch.log_softmax(x, -1)\n")
                            + unified_diff(f"{path}:cell 3", "z = torch.log(torch.softmax(x, 0))\n",
                                           "z = torch.log_softmax(x, 0)\n"))


def test_fix_notebook_keeps_what_remains_in_every_cell_in_order(tmp_path):
    notebook, _ = _notebook(tmp_path, ["def broken(:\n    pass",
                                       "import torch\nfor x in loader:\n    loss = model(x).mean()\n"
                                       "    loss.backward()\n    print(loss.item())",
                                       "y = torch.log(torch.softmax(x, -1))"])
    outcome = fixer.fix_notebook(notebook, ("PTL302", "PTL101"), False, False)
    assert outcome.changed_cells == {3: ("y = torch.log(torch.softmax(x, -1))", "y = torch.log_softmax(x, -1)")}
    assert [(f.code, f.cell, f.line, f.path) for f in outcome.remaining] == \
        [("PTL001", 1, 1, notebook.path), ("PTL101", 2, 5, notebook.path)]


def test_fix_notebook_fixes_an_unused_noqa_when_that_code_is_enabled(tmp_path):
    notebook, _ = _notebook(tmp_path, ["x = 1  # noqa: PTL102"])
    assert fixer.fix_notebook(notebook, ("PTL002", "PTL102"), False, False).changed_cells == \
        {1: ("x = 1  # noqa: PTL102", "x = 1")}


def test_fix_notebook_as_test_code_neither_reports_nor_fixes_the_performance_rules(tmp_path):
    loop = "import torch\nfor x in loader:\n    loss = model(x).mean()\n    loss.backward()\n    print(loss.item())"
    notebook, _ = _notebook(tmp_path, [loop])
    assert [f.code for f in fixer.fix_notebook(notebook, ("PTL101",), False, True).remaining] == []
    assert [f.code for f in fixer.fix_notebook(notebook, ("PTL101",), False, False).remaining] == ["PTL101"]
    cell = "import torch\nfor x in xs:\n    zs.append(torch.zeros(3).cuda())\n    y = torch.log(torch.softmax(x, -1))"
    notebook, _ = _notebook(tmp_path, [cell], "mixed.ipynb")
    outcome = fixer.fix_notebook(notebook, ("PTL201", "PTL302"), True, True)  # PTL302 reports in tests
    assert outcome.changed_cells == {1: (cell, cell.replace("torch.log(torch.softmax(x, -1))", "torch.log_softmax(x, -1)"))}


def _two_files(tmp_path):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(UNSAFE_TEXT)
    second.write_text(UNSAFE_TEXT)
    return first, second, *jobs_and_findings([first, second], WITH_UNSAFE)


def test_a_file_the_fix_cannot_encode_does_not_stop_the_next(tmp_path, monkeypatch):
    first, second, jobs, findings = _two_files(tmp_path)
    first.write_bytes(b"# -*- coding: latin-1 -*-\n" + UNSAFE_TEXT.encode())
    real = fixer.fix_source

    def with_snowman_in_the_first(source, *args, **kwargs):
        result = real(source, *args, **kwargs)
        if source.path == str(first):
            result.fixed += "# \u2603\n"
        return result

    monkeypatch.setattr(fixer, "fix_source", with_snowman_in_the_first)
    outcome = fix_jobs(jobs, findings, write=True)
    assert len(outcome.errors) == 1 and outcome.errors[0].startswith(f"{first}: cannot write: ")
    assert second.read_text() == FIXED_LOSS and outcome.changed == [str(second)]


def test_a_file_changed_on_disk_does_not_stop_the_next(tmp_path, monkeypatch):
    first, second, jobs, findings = _two_files(tmp_path)
    real = fixer.write_atomic

    def first_changed(path, data, expected=None):
        if path == str(first):
            raise fixer.ChangedOnDisk(path)
        return real(path, data, expected)

    monkeypatch.setattr(fixer, "write_atomic", first_changed)
    outcome = fix_jobs(jobs, findings, write=True)
    assert outcome.errors == [f"{first}: changed on disk while fixing; not written"]
    assert second.read_text() == FIXED_LOSS and outcome.changed == [str(second)]
    assert [(os.path.basename(f.path), f.code) for f in outcome.remaining] == [("a.py", "PTL103")]


def test_a_file_whose_fixes_are_all_dropped_does_not_stop_the_next(tmp_path, test_rules):
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("target = 1\n")
    second.write_text("target = 1\n" + UNSAFE_TEXT)
    settings = Settings(enabled=("PTL101", "PTL103"), unsafe_fixes=True)
    jobs = [Job(str(first), settings), Job(str(second), settings)]
    findings = [f for job in jobs
                for f in fixer.fix_source(SourceFile(job.path, open(job.path).read()), ("PTL101", "PTL103"),
                                          unsafe=False).remaining]
    outcome = fix_jobs(jobs, findings, write=True)
    assert first.read_text() == "target = 1\n" and second.read_text() == "target = 1\n" + FIXED_LOSS
    assert outcome.changed == [str(second)]
    assert [(os.path.basename(f.path), f.code) for f in outcome.remaining] == [("a.py", "PTL101"), ("b.py", "PTL101")]
    assert len(outcome.messages) == 2 and all("dropped the PTL101 fix" in m for m in outcome.messages)


class _GrowsNineTimes(_Breaks):
    """A test rule whose fix wraps `target` until the pass cap, then reports it without a fix."""

    code = "PTL102"

    def visit_Name(self, node):
        if node.id == "target":
            if self.ctx.edits.source.text.count("f(") < fixer.MAX_PASSES:
                self.report(node, fix=Fix(SAFE, "grow", (self.ctx.edits.replace(node, "f(target)"),)))
            else:
                self.report(node)


class _GrowsUnsafely(_Breaks):
    """A test rule whose unsafe fix never converges."""

    code = "PTL102"

    def visit_Name(self, node):
        if node.id == "target":
            self.report(node, fix=Fix("unsafe", "grow", (self.ctx.edits.replace(node, "f(target)"),)))


class _Unchanging(_Breaks):
    """A test rule whose fix writes the very text it replaces."""

    code = "PTL102"

    def visit_Name(self, node):
        if node.id == "target":
            self.report(node, fix=Fix(SAFE, "same", (self.ctx.edits.replace(node, "target"),)))


def test_no_convergence_is_said_only_while_an_applicable_fix_remains(test_rules):
    source = SourceFile("a.py", "f = print\ntarget\n")
    test_rules["PTL102"] = _GrowsNineTimes
    done = fixer.fix_source(source, ("PTL102",), unsafe=False)
    assert done.messages == [] and done.fixed.count("f(") == fixer.MAX_PASSES
    assert [(f.code, f.fix) for f in done.remaining] == [("PTL102", None)]
    test_rules["PTL102"] = _GrowsUnsafely
    unsafe = fixer.fix_source(source, ("PTL102",), unsafe=True)
    assert unsafe.messages == [f"a.py: fixes did not converge after {fixer.MAX_PASSES} passes; "
                               "the last parsing result is kept"]


def test_a_fix_that_changes_nothing_ends_the_passes(test_rules):
    test_rules["PTL102"] = _Unchanging
    result = fixer.fix_source(SourceFile("a.py", "target = 1\n"), ("PTL102",), unsafe=False)
    assert result.path == "a.py" and not result.changed
    assert result.applied == [] and result.passes == [] and result.messages == []
    assert [f.code for f in result.remaining] == ["PTL102"]


def test_fix_source_lints_with_the_enabled_codes_and_the_projects_facts():
    """PTL002 (an unused noqa) runs only when enabled; PTL101 sees a value in a module whose
    functions training steps elsewhere call as a tensor: the project's facts count in every pass."""
    from ptlint.semantics.project import ProjectFacts

    text = "for batch in loader:\n    out = model(batch)\n    print(out.item())\nx = 1  # noqa: PTL102\n"
    fixed = text.replace("  # noqa: PTL102", "")
    alone = fixer.fix_source(SourceFile("a.py", text), ("PTL002", "PTL101", "PTL102"), False)
    assert alone.fixed == fixed and [f.code for f in alone.applied] == ["PTL002"] and alone.remaining == []
    facts = ProjectFacts(training=frozenset({"a.train"}))
    trained = fixer.fix_source(SourceFile("a.py", text), ("PTL002", "PTL101", "PTL102"), False, project=facts)
    assert trained.fixed == fixed and [(f.code, f.line) for f in trained.remaining] == [("PTL101", 3)]


def test_fix_source_as_test_code_leaves_the_performance_fixes():
    text = "import torch\nfor x in xs:\n    zs.append(torch.zeros(3).cuda())\n"
    assert not fixer.fix_source(SourceFile("a.py", text), ("PTL201",), True, test_code=True).changed
    assert fixer.fix_source(SourceFile("a.py", text), ("PTL201",), True, test_code=False).changed


HINTED = "for x in loader:\n    loss = model(x.cuda())\n    loss.backward()\nx = 1  # noqa: PTL102\n"


def _script_importing_helpers(tmp_path, text):
    """scripts/train.py importing helpers.py of the project root, which enables TF32."""
    (tmp_path / "helpers.py").write_text("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "train.py"
    script.write_text("import helpers\nimport torch\n" + text)
    return script


def test_fix_source_resolves_project_imports_from_the_project_root(tmp_path):
    """PTL603 (no TF32) stays silent when a module the script imports from the project root
    enables it: found through `project_root`."""
    script = _script_importing_helpers(tmp_path, HINTED)
    codes = ("PTL002", "PTL102", "PTL603")
    result = fixer.fix_source(SourceFile(str(script), script.read_text()), codes, False, project_root=str(tmp_path))
    assert [f.code for f in result.applied] == ["PTL002"] and result.remaining == []
    alone = fixer.fix_source(SourceFile(str(script), script.read_text()), codes, False)
    assert [f.code for f in alone.remaining] == ["PTL603"]


def test_the_first_pass_reads_the_checks_findings_from_the_cache_with_project_imports_and_facts(tmp_path, monkeypatch):
    """The fix's cache key is the check's: the project modules the rules read (from the root)
    and the project's facts are in both."""
    from ptlint.semantics.project import ProjectFacts

    script = _script_importing_helpers(tmp_path, KEPT_LOSS)
    caches = Caches(str(tmp_path / "cache"))
    settings = Settings(enabled=("PTL103", "PTL603"), unsafe_fixes=True, root=str(tmp_path))
    job = Job(str(script), settings, facts=ProjectFacts(training=frozenset({"x"})))
    findings = check_file(job, caches).findings
    assert [f.code for f in findings] == ["PTL103"]
    calls = []
    real = fixer.lint_source
    monkeypatch.setattr(fixer, "lint_source", lambda s, *a, **k: calls.append(s.text) or real(s, *a, **k))
    outcome = fix_jobs([job], findings, write=True, caches=caches)
    fixed = "import helpers\nimport torch\n" + FIXED_LOSS
    assert outcome.fixed == 1 and script.read_text() == fixed and calls == [fixed]


def test_findings_read_back_from_the_cache_belong_to_the_file_being_fixed(tmp_path):
    """Two files with the same bytes share a cache entry: the fixed findings name the one fixed."""
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text(UNSAFE_TEXT)
    second.write_text(UNSAFE_TEXT)
    caches = Caches(str(tmp_path / "cache"))
    settings = Settings(enabled=("PTL103",), unsafe_fixes=True, root=str(tmp_path))
    check_file(Job(str(first), settings), caches)
    job = Job(str(second), settings)
    outcome = fix_jobs([job], check_file(job, caches).findings, write=True, caches=caches)
    assert [f.path for f in outcome.applied] == [str(second)]


def test_a_file_with_a_bom_is_found_in_the_cache_after_its_fix(tmp_path, monkeypatch):
    """The passes after the first keep the file's BOM, so a later fix (or check) of the fixed
    file finds what they stored."""
    from ptlint.engine.source import decode_source

    a = tmp_path / "a.py"
    a.write_bytes(b"\xef\xbb\xbf" + UNSAFE_TEXT.encode())
    caches = Caches(str(tmp_path / "cache"))
    settings = Settings(enabled=("PTL103",), unsafe_fixes=True, root=str(tmp_path))
    job = Job(str(a), settings)
    fix_jobs([job], check_file(job, caches).findings, write=True, caches=caches)
    assert a.read_bytes() == b"\xef\xbb\xbf" + FIXED_LOSS.encode()
    calls = []
    real = fixer.lint_source
    monkeypatch.setattr(fixer, "lint_source", lambda s, *args, **kw: calls.append(1) or real(s, *args, **kw))
    again = fixer.fix_source(decode_source(a.read_bytes(), str(a)), ("PTL103",), True,
                             cache=caches.for_settings(settings), project_root=str(tmp_path))
    assert calls == [] and not again.applied
