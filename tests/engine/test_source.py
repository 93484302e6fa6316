"""The one line splitter and the one comment tokeniser (engine/source.py) every layer uses, and
`noqa_edit`, which `--add-noqa` and the editor's "Suppress" action share."""

from __future__ import annotations

import pytest

from ptlint.engine.edits import apply_edits
from ptlint.engine.source import SourceFile, comments, line_starts, split_lines
from ptlint.engine.suppress import noqa_edit


@pytest.mark.parametrize("text,lines", [
    ("", []),
    ("a", ["a"]),
    ("a\n", ["a\n"]),
    ("a\r\nb\rc\n", ["a\r\n", "b\r", "c\n"]),
    ("a\n\nb", ["a\n", "\n", "b"]),
    ("a\x0cb\u2028c\x1cd\n", ["a\x0cb\u2028c\x1cd\n"]),  # str.splitlines would split here; Python does not
    ("\r\n\r", ["\r\n", "\r"]),
])
def test_split_lines_ends_lines_where_python_does(text, lines):
    assert split_lines(text) == lines
    assert "".join(split_lines(text)) == text


def test_line_starts_and_source_lines_agree():
    text = "a\r\nbb\rccc\nd"
    assert line_starts(text) == [0, 3, 6, 10]
    source = SourceFile("x.py", text)
    assert [source.line(n) for n in range(1, 5)] == ["a", "bb", "ccc", "d"]
    assert line_starts("a\n") == [0, 2]  # a final line end starts an empty last line


def test_comments_are_tokens_not_hashes_in_strings():
    text = 's = "# no"  # yes\nt = """\n# no\n"""\n    # indented\nu = "é"  # after é\n'
    assert comments(text) == [(1, 12, "# yes"), (5, 4, "# indented"), (6, 9, "# after é")]
    assert comments("x = 1\n") == []


def test_comments_past_what_the_tokenizer_reads_are_found_by_lines():
    text = 'x = 1  # one\ny = (  # two\nz = 3  # three\n'  # an unclosed bracket: TokenError at the end
    assert comments(text) == [(1, 7, "# one"), (2, 7, "# two"), (3, 7, "# three")]
    text = 'a = 1  # one\ns = """never closed  # in the string\nb = 2  # two\n'
    assert comments(text) == [(1, 7, "# one"), (2, 21, "# in the string"), (3, 7, "# two")]


def test_the_edits_see_comment_columns_in_characters():
    from ptlint.engine.file_context import FileContext
    from ptlint.engine.traversal import parse

    source = SourceFile("x.py", 'u = "éé"  # c\n')
    assert FileContext(source, parse(source)).edits.comments() == [(1, 11)]


@pytest.mark.parametrize("text,line,ok", [
    ("x = 1\n", 1, True),
    ('x = """\nabc"""\n', 1, False),  # ends inside a string
    ('x = """\nabc"""\n', 2, True),
    ("x = 1 + \\\n    2\n", 1, False),  # a backslash continues it
    ("x = (1 +\n     2)\n", 1, True),  # inside brackets a comment is fine
    ("x = 1\n", 0, False),
    ("x = 1\n", 3, False),
])
def test_where_a_comment_can_end_a_line(text, line, ok):
    assert SourceFile("x.py", text).can_end_with_comment(line) is ok


@pytest.mark.parametrize("line,codes,after", [
    ("x = 1", ["PTL101"], "x = 1  # noqa: PTL101"),
    ("x = 1   ", ["PTL102", "PTL101", "PTL101"], "x = 1  # noqa: PTL101, PTL102"),
    ("x = 1  # why", ["PTL101"], "x = 1  # why  # noqa: PTL101"),
    ("x = 1  # noqa: E501", ["PTL101"], "x = 1  # noqa: E501, PTL101"),
    ("x = 1  # noqa: E501", ["PTL201", "PTL101"], "x = 1  # noqa: E501, PTL101, PTL201"),
    ("x = 1  # noqa:E501 because", ["PTL101"], "x = 1  # noqa:E501, PTL101 because"),
    ("x = 1  # noqa: PTL1", ["PTL101", "PTL201"], "x = 1  # noqa: PTL1, PTL201"),
    ("x = 1  # noqa", ["PTL101"], None),  # a bare noqa covers it
    ("x = 1  # noqa: PTL101", ["PTL101"], None),
])
def test_noqa_edit_adds_only_missing_codes(line, codes, after):
    source = SourceFile("x.py", f"import torch\n{line}\ny = 2\n")
    edit = noqa_edit(source, 2, codes)
    if after is None:
        assert edit is None
    else:
        assert apply_edits(source, [edit]) == f"import torch\n{after}\ny = 2\n"


def test_noqa_edit_refuses_lines_a_comment_cannot_end():
    source = SourceFile("x.py", 'x = f("""\n""")\ny = 1 + \\\n    2\n')
    assert noqa_edit(source, 1, ["PTL101"]) is None and noqa_edit(source, 3, ["PTL101"]) is None
    assert noqa_edit(source, 2, ["PTL101"]) is not None
