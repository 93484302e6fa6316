"""Old training scripts (PyTorch before 0.4, Python 2) copy batches with `x.cuda(async=True)`, a
keyword argument Python 3.7 made a syntax error, and print with the `print x` statement. ptlint
reads them as the `non_blocking=True` and the `print(x)` they became, checks the rest of the file
at the same positions, and fixes it without touching the legacy spelling."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ptlint.front.api import check_text, fix_text
from ptlint.semantics.nodes import parse_python

LEGACY = textwrap.dedent("""\
    import torch

    loader = torch.utils.data.DataLoader(dataset, batch_size=64, pin_memory=True)
    model = Net().cuda()
    for x, y in loader:
        y = y.cuda(async=True)
        x = x.cuda(
            async =True)
        loss = model(x, y)
        noise = torch.randn(4).cuda()
        loss.backward()
        print(loss.item())
""")


def test_the_legacy_keyword_is_read_as_non_blocking_at_its_own_position():
    tree = parse_python(LEGACY)
    keywords = [node for node in ast.walk(tree) if isinstance(node, ast.keyword)]
    assert [(k.arg, k.lineno, k.col_offset) for k in keywords if k.arg != "batch_size" and k.arg != "pin_memory"] \
        == [("non_blocking", 6, 15), ("non_blocking", 8, 8)]


def test_a_legacy_file_is_checked_and_its_findings_keep_their_columns():
    found = {(f.code, f.line, f.column) for f in check_text(LEGACY)}
    assert ("PTL001", 6, 16) not in found and not any(code == "PTL001" for code, _, _ in found)
    assert ("PTL201", 10, 13) in found and ("PTL101", 12, 11) in found
    # the legacy copies are non-blocking: nothing asks for `non_blocking=True` on them
    assert not any(code == "PTL104" and line in (6, 7) for code, line, _ in found)


def test_a_fix_in_a_legacy_file_keeps_the_legacy_spelling():
    fixed = fix_text(LEGACY, unsafe=True)
    assert 'noise = torch.randn(4, device="cuda")' in fixed
    assert fixed.replace('torch.randn(4, device="cuda")', "torch.randn(4).cuda()") == LEGACY


PYTHON2 = textwrap.dedent("""\
    import torch

    for i, (x, y) in enumerate(loader):
        loss = model(x.cuda(async=True), y.cuda())
        print "step %d loss %.3f" % (i,
                                     loss.item())  # expect: PTL101
        noise = torch.randn(4).cuda()
        if i % 10 == 0: print i
        print
        print (i, loss)
        loss.backward()
""")


def test_python2_print_statements_are_read_as_calls_at_their_own_positions():
    tree = parse_python(PYTHON2)
    printed = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "print"]
    assert sorted((p.lineno, p.col_offset, len(p.args)) for p in printed) == [(5, 4, 1), (8, 20, 1), (9, 4, 0),
                                                                              (10, 4, 2)]
    found = {(f.code, f.line, f.column) for f in check_text(PYTHON2)}
    assert ("PTL101", 6, 34) in found and ("PTL201", 7, 13) in found and not any(c == "PTL001" for c, _, _ in found)


def test_a_fix_in_a_python2_file_keeps_its_print_statements():
    fixed = fix_text(PYTHON2, unsafe=True)
    assert fixed == PYTHON2.replace("torch.randn(4).cuda()", 'torch.randn(4, device="cuda")')


@pytest.mark.parametrize("text, message", [
    # another spelling Python 3 refuses in the same file: what else fails is the one reported
    ("x = y.cuda(async=True)\nexec 'done'\n", "Missing parentheses in call to 'exec'"),
    # `async` as a name, not a keyword argument, is not read
    ("async = True\n", "invalid syntax"),
    # a comparison, not a keyword argument
    ("f(async == 1)\n", "invalid syntax"),
])
def test_what_is_not_the_legacy_keyword_is_still_a_syntax_error(text, message):
    with pytest.raises(SyntaxError) as raised:
        parse_python(text)
    assert message in raised.value.msg
    assert [f.code for f in check_text(text)] == ["PTL001"]


def test_a_file_that_parses_is_not_rewritten():
    text = 'f(Async=True)\ns = "(async=1)"\n'
    keywords = [n.arg for n in ast.walk(parse_python(text)) if isinstance(n, ast.keyword)]
    assert keywords == ["Async"]


@pytest.mark.parametrize("text, expected", [
    ("print x\n", "print(x)\n"),
    ("print\n", "print()\n"),
    ("print", "print()"),  # no newline at the end of the file
    ("print x  # note\n", "print(x)  # note\n"),
    ("print x; y = 1\n", "print(x); y = 1\n"),
    ("y = 1; print x\n", "y = 1; print(x)\n"),
    ("if x: print x\n", "if x: print(x)\n"),
    ("print -x\n", "print(-x)\n"),
    ("print [x]\n", "print([x])\n"),
    ("print {1: x}\n", "print({1: x})\n"),
    ("print ~x\n", "print(~x)\n"),
    ("print +x\n", "print(+x)\n"),
    ("print x; print y\n", "print(x); print(y)\n"),  # two on one line: the second's columns hold
    # a `print` left alone does not end the search for the next
    ("print(a)\nprint b\n", "print(a)\nprint(b)\n"),
    ('print"a"\nprint b\n', 'print"a"\nprint(b)\n'),
    ("x.print\nprint b\n", "x.print\nprint(b)\n"),
    ("print\nprint b\n", "print()\nprint(b)\n"),
    ("print 'a %s' % (x,\n       y)\n", "print('a %s' % (x,\n       y))\n"),
    ("def f():\n    print x\n", "def f():\n    print(x)\n"),
    # `print` as a name, or already a call: left alone
    ("print(x)\n", "print(x)\n"),
    ("print (x, y)\n", "print (x, y)\n"),
    ("print = log\n", "print = log\n"),
    ("print.x\n", "print.x\n"),
    ("f(print, x)\n", "f(print, x)\n"),
    ("x = [print]\n", "x = [print]\n"),
    ("y = x.print\n", "y = x.print\n"),
    ("print >>f, x\n", "print >>f, x\n"),
    ("print *x\n", "print *x\n"),
    ('print"x"\n', 'print"x"\n'),  # no space to turn into `(`
    # text the tokenizer refuses is left as it is
    ("print (x\n", "print (x\n"),
])
def test_print_statements_become_calls_and_nothing_else_changes(text, expected):
    from ptlint.semantics.nodes import _print_calls

    assert _print_calls(text) == expected
