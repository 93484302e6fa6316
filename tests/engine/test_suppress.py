"""`# noqa` comments, in process (so that mutation testing sees them): which lines and codes each
form suppresses, that only real comments count, and that PTL001 cannot be waved through."""

from __future__ import annotations

import pytest
from helpers import SYNC_LOSS_ITEM

from ptlint.engine.finding import Finding
from ptlint.engine.suppress import ALL, Suppressions
from ptlint.front.api import check_text, fix_text


def finding(code: str, line: int) -> Finding:
    return Finding(code, "name", "message", "a.py", line, 1, line, 2)


@pytest.mark.parametrize("comment,codes", [
    ("# noqa", ALL),
    ("#noqa", ALL),
    ("# NOQA", ALL),  # found although the text holds no lower-case `noqa`
    ("# noqa: PTL101", {"PTL101"}),
    ("#  noqa:PTL101,PTL102", {"PTL101", "PTL102"}),
    ("# NOQA: ptl101 ptl102", {"PTL101", "PTL102"}),  # spaces separate codes too; case does not matter
    ("# noqa: E501, PTL101", {"E501", "PTL101"}),
    ("# why # noqa: PTL102", {"PTL102"}),  # later in the comment
    ("# noqa:", ALL),  # no codes after the colon: a bare noqa
])
def test_line_noqa_forms(comment, codes):
    scanned = Suppressions.scan(f"import torch\nx = 1  {comment}\ny = 2\n")
    assert scanned.lines == {2: codes}
    assert scanned.file_codes == set()


@pytest.mark.parametrize("comment,codes", [
    ("# ptlint: noqa", ALL),
    ("#ptlint:noqa", ALL),
    ("# PTLINT: NOQA", ALL),
    ("# ptlint: noqa: PTL102", {"PTL102"}),
    ("# ptlint: noqa: ptl101, PTL102", {"PTL101", "PTL102"}),
])
def test_file_noqa_forms(comment, codes):
    scanned = Suppressions.scan(f"{comment}\nimport torch\n")
    assert scanned.file_codes == codes
    assert scanned.lines == {}  # a file-wide comment is not also a line comment


def test_noqa_must_follow_a_hash_and_file_noqa_be_the_whole_comment():
    """`# ptlint: noqa because ...` is not file-wide, and `# why: noqa` is no line noqa."""
    scanned = Suppressions.scan("# ptlint: noqa because generated\nx = 1  # why: noqa: PTL101\n")
    assert scanned.file_codes == set()
    assert scanned.lines == {}


def test_file_noqa_comments_add_up():
    scanned = Suppressions.scan("# ptlint: noqa: PTL101\n# ptlint: noqa: PTL102\nx = 1\n")
    assert scanned.file_codes == {"PTL101", "PTL102"}
    assert Suppressions.scan("# ptlint: noqa: PTL101\n# ptlint: noqa\nx = 1\n").file_codes is ALL
    assert Suppressions.scan("# ptlint: noqa\n# ptlint: noqa: PTL101\nx = 1\n").file_codes is ALL


def test_noqa_inside_strings_is_not_a_comment():
    scanned = Suppressions.scan('s = "# noqa"\nt = """\n# ptlint: noqa\n"""\nu = 1  # noqa: PTL102\n')
    assert scanned.lines == {5: {"PTL102"}}
    assert scanned.file_codes == set()


def test_text_without_noqa_has_no_suppressions():
    scanned = Suppressions.scan("import torch  # a comment\nx = 1  # another\n")
    assert scanned.lines == {} and scanned.file_codes == set()
    assert not scanned.suppresses(finding("PTL101", 1))


@pytest.mark.parametrize("text", [
    'x = 1\ny = 2  # noqa: PTL101  # why\nz = 3  # noqa\ns = """never closed\n',  # the tokenizer's TokenError
    "if x:\n        a = 1\ny = 2  # noqa: PTL101\n   z = 3  # noqa\n",  # an IndentationError
])
def test_comments_are_found_by_lines_when_the_tokenizer_fails(text):
    scanned = Suppressions.scan(text)
    assert scanned.lines == {2 if "never" in text else 3: {"PTL101"}, 3 if "never" in text else 4: ALL}


def test_suppresses_by_line_and_code():
    scanned = Suppressions.scan("a = 1  # noqa: PTL101\nb = 2  # noqa\nc = 3\n")
    assert scanned.suppresses(finding("PTL101", 1))
    assert not scanned.suppresses(finding("PTL102", 1))  # another code on a coded line
    assert scanned.suppresses(finding("PTL102", 2))  # a bare noqa: any code
    assert not scanned.suppresses(finding("PTL101", 3))  # a line without a comment
    assert not scanned.suppresses(finding("PTL101", 4))


def test_file_codes_suppress_only_their_codes_everywhere():
    scanned = Suppressions.scan("# ptlint: noqa: PTL101\na = 1\nb = 2  # noqa: PTL103\n")
    assert scanned.suppresses(finding("PTL101", 2)) and scanned.suppresses(finding("PTL101", 3))
    assert not scanned.suppresses(finding("PTL102", 2))
    assert scanned.suppresses(finding("PTL103", 3)) and not scanned.suppresses(finding("PTL102", 3))


def test_syntax_errors_are_never_suppressed():
    for text in ("# ptlint: noqa\nx = (\n", "# ptlint: noqa: PTL001\nx = (\n", "x = (  # noqa\n",
                 "x = (  # noqa: PTL001\n"):
        scanned = Suppressions.scan(text)
        assert not scanned.suppresses(finding("PTL001", 1)), text
        assert not scanned.suppresses(finding("PTL001", 2)), text
        assert [f.code for f in check_text(text)] == ["PTL001"], text


def test_check_text_applies_the_comments():
    line = "        total += loss.item()"
    assert [f.code for f in check_text(SYNC_LOSS_ITEM)] == ["PTL101"]
    for tail in ("  # noqa", "  # noqa: PTL101", "  # NOQA:ptl101"):
        assert check_text(SYNC_LOSS_ITEM.replace(line, line + tail)) == [], tail
    # PTL102 suppresses nothing there: PTL101 stays, and PTL002 reports the stale code
    assert [f.code for f in check_text(SYNC_LOSS_ITEM.replace(line, line + "  # noqa: PTL102"))] == \
        ["PTL101", "PTL002"]
    assert check_text("# ptlint: noqa\n" + SYNC_LOSS_ITEM) == []
    assert [f.line for f in check_text("# ptlint: noqa: PTL102\n" + SYNC_LOSS_ITEM)] == [9]


# -- file-wide comments of other linters -----------------------------------------------------

@pytest.mark.parametrize("comment,codes", [
    ("# ruff: noqa", ALL),
    ("# flake8: noqa", ALL),
    ("# flake8=noqa", ALL),  # flake8's other spelling
    ("# Ruff: NOQA: ptl101", {"PTL101"}),
    ("# flake8: noqa: PTL101, E501", ALL),  # flake8 skips the file whatever follows: so does ptlint
    ("# FLAKE8: NOQA because generated", ALL),
])
def test_ruff_and_flake8_file_noqa_silence_the_file(comment, codes):
    scanned = Suppressions.scan(f"{comment}\nimport torch\n")
    assert scanned.file_codes == codes and scanned.lines == {}


def test_flake8_file_noqa_only_on_a_line_of_its_own():
    scanned = Suppressions.scan("x = 1  # flake8: noqa\n#flake8: noqa\n")
    assert scanned.file_codes == set()  # after code, or without flake8's one space: flake8 ignores it too


def test_ruff_file_noqa_in_check_text():
    assert check_text("# ruff: noqa\n" + SYNC_LOSS_ITEM) == []
    assert check_text("# flake8: noqa\n" + SYNC_LOSS_ITEM) == []
    assert [f.code for f in check_text("# ruff: noqa: PTL102\n" + SYNC_LOSS_ITEM)] == ["PTL101"]
    assert [f.code for f in check_text("# mypy: noqa\n" + SYNC_LOSS_ITEM)] == ["PTL101"]  # not a linter we follow


# -- PTL002 unused-noqa --------------------------------------------------------------------------

ENABLED = ("PTL101", "PTL102", "PTL201")
KNOWN = ("PTL001", "PTL002", "PTL101", "PTL102", "PTL201", "PTL202", "PTL450")


def unused(text: str, findings: list[Finding], enabled=ENABLED) -> list[tuple[int, str]]:
    scanned = Suppressions.scan(text)
    for found in findings:
        scanned.suppresses(found)
    return [(f.line, f.message) for f in scanned.unused("a.py", enabled, KNOWN)]


def test_a_ptlint_code_that_suppressed_nothing_is_unused():
    text = "a = 1  # noqa: PTL101\nb = 2  # noqa: PTL101\n"
    assert unused(text, [finding("PTL101", 1)]) == [(2, "unused `noqa` directive (unused: `PTL101`)")]


def test_prefixes_unknown_and_disabled_codes():
    text = ("a = 1  # noqa: PTL1\n"  # a prefix: used by PTL102
            "b = 2  # noqa: PTL2\n"  # a prefix of enabled PTL201 that suppressed nothing
            "c = 3  # noqa: PTL999, PTL202\n"  # unknown; PTL202 is known but not enabled: left alone
            "d = 4  # noqa: PTL450\n")  # the dynamic pass's: not the static pass's to judge
    assert unused(text, [finding("PTL102", 1)]) == [
        (2, "unused `noqa` directive (unused: `PTL2`)"),
        (3, "unused `noqa` directive (unknown: `PTL999`)")]


def test_bare_noqa_and_other_linters_codes_are_never_judged():
    text = "a = 1  # noqa\nb = 2  # noqa: E501, RUF100\nc = 3  # noqa: E501, PTL102\n"
    assert unused(text, []) == [(3, "unused `noqa` directive (unused: `PTL102`)")]


def test_several_stale_codes_make_one_finding_spanning_the_directive():
    text = "x = 1  # why  # noqa: PTL101, PTL999\n"
    scanned = Suppressions.scan(text)
    [found] = scanned.unused("a.py", ENABLED, KNOWN)
    assert found.message == "unused `noqa` directive (unused: `PTL101`; unknown: `PTL999`)"
    assert (found.code, found.name, found.line, found.column, found.end_line, found.end_column) == (
        "PTL002", "unused-noqa", 1, 15, 1, 37)
    assert found.fix.applicability == "safe" and found.fix.message == "Remove the unused codes"
    [one] = Suppressions.scan("x = 1  # noqa: PTL101\n").unused("a.py", ENABLED, KNOWN)
    assert one.fix.message == "Remove the unused code" and (one.line, one.end_line) == (1, 1)
    assert found.help.startswith("Remove the stale code")


def test_noqa_for_ptl002_and_file_noqa_keep_stale_codes():
    assert unused("x = 1  # noqa: PTL101, PTL002\n", []) == []
    assert unused("x = 1  # noqa: PTL101, PTL0\n", []) == []
    assert unused("# ptlint: noqa: PTL002\nx = 1  # noqa: PTL101\n", []) == []
    assert unused("x = 1  # noqa: PTL101\ny = 1  # noqa: PTL002\n", []) == [(1, "unused `noqa` directive (unused: `PTL101`)")]


@pytest.mark.parametrize("comment,fixed", [
    ("  # noqa: PTL102", ""),
    ("\t# noqa: PTL102", ""),
    ("  # noqa: PTL102, E501", "  # noqa: E501"),
    ("  # noqa:E501,PTL102,W291", "  # noqa:E501, W291"),
    ("  # noqa: PTL102, PTL999", ""),
    ("  # why  # noqa: PTL102", "  # why"),
    ("  # noqa: PTL102 # why", "  # why"),
    ("  # noqa: PTL102 because", "  # because"),
    ("  # why # noqa: PTL102 more", "  # why more"),
    ("  # NOQA: PTL101, ptl102", "  # NOQA: PTL101"),  # PTL101 suppresses the `.item()`
    ("  # noqa: PTL1, PTL102", "  # noqa: PTL1"),
])
def test_the_fix_removes_only_what_is_stale(comment, fixed):
    line = "        total += loss.item()"
    text = SYNC_LOSS_ITEM.replace(line, line + comment)
    assert fix_text(text, codes=("PTL002", "PTL101", "PTL102")) == SYNC_LOSS_ITEM.replace(line, line + fixed)


def test_unused_noqa_needs_ptl002_enabled_and_sees_rules_that_did_not_run():
    text = "import torch\nx = torch.zeros(3)  # noqa: PTL101\n"  # no trigger of PTL101: it never ran
    assert [f.code for f in check_text(text)] == ["PTL002"]
    assert check_text(text, codes=("PTL101",)) == []  # PTL002 not among the codes
    assert check_text(text, codes=("PTL002",)) == []  # PTL101 off: its code is left alone
    assert [f.code for f in check_text(text, codes=("PTL002", "PTL101"))] == ["PTL002"]


def test_a_noqa_that_a_dropped_finding_needed_is_unused():
    """A finding the engine drops (here: a duplicate on the same line) is not what suppressed it."""
    line = "        total += loss.item()"
    text = SYNC_LOSS_ITEM.replace(line, line + "  # noqa: PTL101")
    assert check_text(text) == []
