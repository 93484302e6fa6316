"""Building fixes (ptlint.engine.edits): the text an edit puts in never runs into the code beside it,
an expression that replaces one is parenthesised where its place needs it, operands and arguments
taken from the source keep their grouping, and arguments are added after a last argument's own
parentheses. Each case is the kind of code the issue named: a keyword before a parenthesis
(`return(`, `not(`, `yield(`...), tuple operands (`for p in a, b`, `x[i, j]`), extra parentheses
(`torch.zeros((n))`)."""

from __future__ import annotations

import ast

import pytest

from ptlint.engine.edits import Edits, apply_edits, fits, overlaps
from ptlint.engine.finding import Edit
from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile


def edits_for(text: str) -> Edits:
    return FileContext(SourceFile("a.py", text), ast.parse(text)).edits


def find(edits: Edits, kind: type, source: str, occurrence: int = 0) -> ast.AST:
    """The `occurrence`-th node of `kind` whose source is `source`."""
    found = [n for n in ast.walk(edits.tree) if isinstance(n, kind) and edits.text(n) == source]
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    return found[occurrence]


def applied(edits: Edits, *made: Edit) -> str:
    return apply_edits(edits.source, list(made))


# -- padding -------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["return(h - 1) / h", "yield(h - 1) / h", "x = not(h - 1)", "assert(h - 1)",
                                  "x = a in(h - 1)", "x = a is(h - 1)", "x = a if b else(h - 1)",
                                  "x = a and(h - 1)", "x = a or(h - 1)", "x = [y for y in(h - 1)]",
                                  "x = lambda:(h - 1)", "await(h - 1)", "x = (h - 1)if a else b"])
def test_a_keyword_beside_a_removed_parenthesis_gets_a_space(line):
    """The fixed code means what the original means with `g(h)` in place of `(h - 1)`."""
    text = f"async def f(h, a, b):\n    {line}\n"
    edits = edits_for(text)
    node = find(edits, ast.BinOp, "h - 1")
    fixed = applied(edits, edits.replace_grouped(node, "g(h)"))
    assert "(" not in fixed.splitlines()[1].replace("g(h)", "")  # the parentheses went
    assert ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(text.replace("(h - 1)", "(g(h))")))


def test_a_space_is_added_only_where_a_name_would_run_into_the_text():
    edits = edits_for("x = f(a)+b\ny = (a)if c else d\n")
    call = find(edits, ast.Call, "f(a)")
    assert edits.replace(call, "g").content == "g"  # `=` before, `+` after: nothing to pad
    name = find(edits, ast.Name, "a", 1)
    made = edits.replace_grouped(name, "a2")
    assert made.content == "a2 "  # `if` after it
    assert applied(edits, made) == "x = f(a)+b\ny = a2 if c else d\n"
    assert edits.insert_at((1, 9), "'s'").content == "'s'"  # between `)` and `+`
    assert edits.insert_at((1, 5), "'s'").content == "'s' "  # before `f`


@pytest.mark.parametrize("before,content,expected", [
    ("x = a", "b", "x = a b"), ("x = 1", "2", "x = 1 2"), ("x = _", "_y", "x = _ _y"), ("x = é", "é", "x = é é"),
    ("x = r", "'s'", "x = r 's'"), ("x = a", ".b", "x = a.b"), ("x = a", "(b)", "x = a(b)"),
])
def test_padding_at_the_start(before, content, expected):
    edits = edits_for(before + "\n")
    assert applied(edits, edits.insert_at((1, len(before) + 1), content)) == expected + "\n"


@pytest.mark.parametrize("after,content,expected", [
    ("a = b", "c", "c a = b"), ("a = b", "c.", "c.a = b"), ("a = b", "'s'", "'s' a = b"), ("a = b", "(", "(a = b"),
    ("a = b", "1", "1 a = b"),
])
def test_padding_at_the_end(after, content, expected):
    edits = edits_for(after + "\n")
    assert applied(edits, edits.insert_at((1, 1), content)) == expected + "\n"


def test_an_edit_at_the_start_or_end_of_the_file_is_not_padded():
    edits = edits_for("x\n")
    assert edits.insert_at((1, 1), "import y\n").content == "import y\n"
    assert edits.replace(find(edits, ast.Name, "x"), "y").content == "y"


# -- grouping ----------------------------------------------------------------------------------

@pytest.mark.parametrize("text,target,content,expected", [
    ("r = a * b", "b", "c + d", "r = a * (c + d)"),
    ("r = a * b", "a", "c + d", "r = (c + d) * b"),
    ("r = a - b", "b", "c - d", "r = a - (c - d)"),
    ("r = a - b", "a", "c - d", "r = c - d - b"),
    ("r = a ** b", "a", "c ** d", "r = (c ** d) ** b"),
    ("r = a ** b", "b", "c ** d", "r = a ** c ** d"),
    ("r = a.b", "a", "c + d", "r = (c + d).b"),
    ("r = a.b", "a", "1", "r = (1).b"),
    ("r = a[0]", "a", "c if d else e", "r = (c if d else e)[0]"),
    ("r = a(0)", "a", "lambda: c", "r = (lambda: c)(0)"),
    ("r = -a", "a", "c * d", "r = -(c * d)"),
    ("r = -a", "a", "c ** d", "r = -c ** d"),
    ("r = not a", "a", "c == d", "r = not c == d"),
    ("r = not a", "a", "c and d", "r = not (c and d)"),
    ("r = a and b", "b", "c or d", "r = a and (c or d)"),
    ("r = a < b", "b", "c < d", "r = a < (c < d)"),
    ("r = f(a)", "a", "c, d", "r = f((c, d))"),
    ("r = f(a)", "a", "c := d", "r = f((c := d))"),
    ("r = f(a)", "a", "c if d else e", "r = f(c if d else e)"),
    ("r = a", "a", "c, d", "r = c, d"),
    ("r = x[a]", "a", "c, d", "r = x[c, d]"),
    ("r = [a for _ in y]", "y", "c if d else e", "r = [a for _ in (c if d else e)]"),
    ("r = a if b else e", "b", "c if d else f", "r = a if (c if d else f) else e"),
    ("r = a if b else e", "e", "c if d else f", "r = a if b else c if d else f"),
    ("r = [*a]", "a", "c or d", "r = [*(c or d)]"),
    ("r = a * (b)", "b", "c + d", "r = a * (c + d)"),
    ("r = a * b", "b", "(c + d)", "r = a * (c + d)"),
    ("r = f'{a}'", "a", "c + d", "r = f'{(c + d)}'"),
])
def test_a_replacement_is_parenthesised_where_its_place_needs_it(text, target, content, expected):
    edits = edits_for(text + "\n")
    node = find(edits, ast.Name, target)
    fixed = applied(edits, edits.replace(node, content))
    assert fixed == expected + "\n"
    ast.parse(fixed)


def test_a_replacement_that_is_not_an_expression_is_left_as_it_is():
    edits = edits_for("r = a\n")
    assert edits.replace(find(edits, ast.Name, "a"), "b =").content == "b ="
    assert edits.grouped(find(edits, ast.Name, "a"), "yield b") == "(yield b)"


def test_a_statement_replacement_is_not_grouped():
    edits = edits_for("for p in xs:\n    p.add_(1)\n")
    loop = edits.tree.body[0]
    assert edits.replace(loop, "a, b = 1, 2").content == "a, b = 1, 2"


def test_replace_grouped_keeps_parentheses_the_place_needs():
    edits = edits_for("r = (a + b) * c\ns = x * (a + b)\nt = f(a + b)\n")
    first, second = find(edits, ast.BinOp, "a + b"), find(edits, ast.BinOp, "a + b", 1)
    assert applied(edits, edits.replace_grouped(first, "g(a)")).startswith("r = g(a) * c\n")
    assert applied(edits, edits.replace_grouped(first, "a - b")).startswith("r = (a - b) * c\n")
    assert "s = x * y.z\n" in applied(edits, edits.replace_grouped(second, "y.z"))
    call_argument = find(edits, ast.BinOp, "a + b", 2)
    assert applied(edits, edits.replace_grouped(call_argument, "g(a)")).endswith("t = f(g(a))\n")


# -- operands and arguments from the source ------------------------------------------------------

@pytest.mark.parametrize("text,source,expression,argument", [
    ("for p in a, b: pass", "a, b", "(a, b)", "(a, b)"),
    ("x[i, j]", "i, j", "(i, j)", "(i, j)"),
    ("f((a, b))", "(a, b)", "(a, b)", "(a, b)"),
    ("f((a), (b))", "a", "a", "a"),
    ("x = (a), (b)", "(a), (b)", "((a), (b))", "((a), (b))"),
    ("f(y := 1)", "y := 1", "(y := 1)", "(y := 1)"),
    ("def g():\n    f((yield))", "yield", "(yield)", "(yield)"),
    ("f(*a)", "*a", "(*a)", "(*a)"),
    ("f(a + b)", "a + b", "(a + b)", "a + b"),
    ("f(a if b else c)", "a if b else c", "(a if b else c)", "a if b else c"),
    ("f(lambda: 1)", "lambda: 1", "(lambda: 1)", "lambda: 1"),
    ("f(x.y[0])", "x.y[0]", "x.y[0]", "x.y[0]"),
    ("f([\n    a,\n])", "[\n    a,\n]", "([\n    a,\n])", "[\n    a,\n]"),
    ("f(x for x in y)", "(x for x in y)", "(x for x in y)", "(x for x in y)"),
])
def test_operands_and_arguments_keep_their_grouping(text, source, expression, argument):
    edits = edits_for(text + "\n")
    node = next(n for n in ast.walk(edits.tree) if isinstance(n, ast.expr) and edits.text(n) == source)
    assert edits.expression(node) == expression
    assert edits.argument(node) == argument


SAMPLES = ["a := b", "a, b", "yield a", "a if b else c", "lambda: a", "a or b", "a and b", "not a", "a < b",
           "a | b", "a ^ b", "a & b", "a << b", "a + b", "a * b", "-a", "a ** b", "await a", "a.b"]
PLACES = ["f({})", "x = {}", "{}", "x += {}", "{} * y", "y * {}", "y - {}", "{} - y", "{}.z", "not {}", "-{}", "y ** {}", "{} ** y",
          "[w for w in {}]", "y if {} else z", "{} if y else z", "y if z else {}", "[*{}]", "x[{}]", "y < {}",
          "y and {}", "y or {}", "{}(1)", "{}[1]", "await {}", "return {}", "for i in {}: pass", "x += {}",
          "f'{{{}}}'", "{{k: {}}}", "f(k={})"]


def _holder(place: str):
    code = "async def f():\n    " + place.format("PLACEHOLDER")
    tree = ast.parse(code)
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    holder = next(n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "PLACEHOLDER")
    return code, holder, parents[id(holder)]


@pytest.mark.parametrize("place", PLACES)
def test_precedence_and_needed_agree_with_the_grammar(place):
    """Where `needed` says an expression may stand unparenthesised, it parses there, as the
    same tree as with parentheses around it."""
    code, holder, parent = _holder(place)
    for sample in SAMPLES:
        expression = ast.parse("async def f():\n    (" + sample + ")").body[0].body[0].value
        if not fits(expression, parent, holder):
            continue
        bare = code.replace("PLACEHOLDER", sample)
        assert ast.dump(ast.parse(bare)) == ast.dump(ast.parse(code.replace("PLACEHOLDER", f"({sample})"))), \
            (place, sample)


@pytest.mark.parametrize("place,sample", [("{} * y", "a + b"), ("y - {}", "a - b"), ("{} ** y", "a ** b"),
                                          ("{}.z", "a + b"), ("not {}", "a and b"), ("-{}", "a * b"),
                                          ("[w for w in {}]", "a if b else c"), ("y if {} else z", "lambda: a"),
                                          ("y and {}", "a or b"), ("y < {}", "a < b"), ("f({})", "a, b"),
                                          ("{}(1)", "-a"), ("await {}", "a + b"), ("[*{}]", "a if b else c"),
                                          ("return {}", "yield a"), ("for i in {}: pass", "yield a"),
                                          ("x[{}]", "yield a"), ("f({})", "yield a"), ("{}.real", "1")])
def test_needed_asks_for_parentheses_where_the_bare_expression_means_something_else(place, sample):
    code, holder, parent = _holder(place)
    expression = ast.parse("async def f():\n    (" + sample + ")").body[0].body[0].value
    assert not fits(expression, parent, holder)
    bare = code.replace("PLACEHOLDER", sample)
    grouped = ast.dump(ast.parse(code.replace("PLACEHOLDER", f"({sample})")))
    try:
        assert ast.dump(ast.parse(bare)) != grouped, (place, sample)
    except SyntaxError:
        pass


# -- adding arguments ----------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("torch.zeros((n)).to(d)", "torch.zeros((n), device=d)"),
    ("torch.zeros(((n))).to(d)", "torch.zeros(((n)), device=d)"),
    ("torch.zeros(n).to(d)", "torch.zeros(n, device=d)"),
    ("torch.zeros(n,).to(d)", "torch.zeros(n, device=d,)"),
    ("torch.zeros().to(d)", "torch.zeros(device=d)"),
    ("torch.zeros(x for x in y).to(d)", "torch.zeros((x for x in y), device=d)"),
    ("torch.zeros(n  # why (\n).to(d)", "torch.zeros(n, device=d  # why (\n)"),
    ("torch.zeros(\n    n,\n).to(d)", "torch.zeros(\n    n,\n    device=d,\n)"),
])
def test_call_with_keywords_adds_after_the_last_arguments_own_parentheses(text, expected):
    edits = edits_for(f"x = {text}\n")
    factory = edits.tree.body[0].value.func.value
    result = edits.call_with_keywords(factory, ["device=d"])
    assert result == expected
    ast.parse(result)


@pytest.mark.parametrize("text,expected", [
    ("f((x))", "f((x), k=1)"),
    ("f(x)", "f(x, k=1)"),
    ("f()", "f(k=1)"),
    ("f(x for x in y)", "f((x for x in y), k=1)"),
    ("f(a, (b)  # (\n)", "f(a, (b), k=1  # (\n)"),
    ("(f)(x)", "(f)(x, k=1)"),
])
def test_add_keyword(text, expected):
    edits = edits_for(f"{text}\n")
    call = edits.tree.body[0].value
    assert applied(edits, edits.add_keyword(call, "k=1")) == expected + "\n"


def test_outer_counts_grouping_parentheses_not_a_calls_own():
    text = "f(x)\nf((x))\n(g)(x)\nf(  # (\n    (x)  # )\n)\ny = (  # note (\n  x\n)\n"
    edits = edits_for(text)
    xs = sorted((n for n in ast.walk(edits.tree) if isinstance(n, ast.Name) and n.id == "x"),
                key=lambda n: n.lineno)
    spans = [text[slice(*edits.outer(x))] for x in xs]
    assert spans == ["x", "(x)", "x", "(x)", "(  # note (\n  x\n)"]
    g = find(edits, ast.Name, "g")
    assert text[slice(*edits.outer(g))] == "(g)"
    assert edits.before(xs[1]) == (2, 3) and edits.after(xs[1]) == (2, 6)


def test_an_argument_inserted_before_a_parenthesised_argument_goes_before_its_parentheses():
    edits = edits_for("autocast((True))\n")
    argument = edits.tree.body[0].value.args[0]
    assert applied(edits, edits.insert_at(edits.before(argument), '"cuda", enabled=')) == \
        'autocast("cuda", enabled=(True))\n'


# -- applying ------------------------------------------------------------------------------------

def test_apply_edits_applies_from_the_end_and_counts_identical_edits_once():
    edits = edits_for("a = 1\nb = 2\n")
    first, second = Edit(1, 5, 1, 6, "10"), Edit(2, 5, 2, 6, "20")
    assert applied(edits, first, second, first) == "a = 10\nb = 20\n"


@pytest.mark.parametrize("a,b,expected", [
    ((1, 1, 1, 5), (1, 3, 1, 8), True), ((1, 1, 1, 5), (1, 5, 1, 8), False), ((1, 3, 1, 3), (1, 3, 1, 3), True),
    ((1, 3, 1, 3), (1, 1, 1, 5), True), ((1, 1, 1, 3), (1, 3, 1, 3), False), ((1, 3, 1, 3), (1, 3, 1, 5), False),
    ((1, 1, 2, 1), (1, 5, 1, 6), True), ((2, 1, 2, 1), (1, 1, 2, 1), False),
])
def test_overlaps(a, b, expected):
    first, second = Edit(*a, "x"), Edit(*b, "y")
    assert overlaps(first, second) is expected and overlaps(second, first) is expected
    assert not overlaps(first, first)


def test_reference_spells_a_name_through_the_modules_imports_or_adds_one():
    edits = edits_for("import torch.nn.functional as F\nimport torch\n")
    assert edits.reference("torch.nn.functional.softplus") == ("F.softplus", ())
    assert edits.reference("torch.expm1") == ("torch.expm1", ())
    bare = edits_for('"""doc"""\nx = 1\n')
    spelled, (added,) = bare.reference("torch.expm1")
    assert spelled == "torch.expm1" and added == Edit(2, 1, 2, 1, "import torch\n")
    assert edits_for("x = 1").import_edit("torch") == Edit(1, 1, 1, 1, "import torch\n")
    assert edits_for("import os").import_edit("torch") == Edit(1, 10, 1, 10, "\nimport torch")


# -- names at the place the fix writes them --------------------------------------------------------

SHADOWED = """\
import torch
import torch.nn.functional as F

def step(model, lr, torch=None):
    return model

def other(F):
    return F

def local_import():
    import numpy as torch
    return torch

def later():
    torch_ = 1
    return torch_
"""


def _returned(edits: Edits, function: str) -> ast.AST:
    definition = next(n for n in edits.tree.body if isinstance(n, ast.FunctionDef) and n.name == function)
    return definition.body[-1].value


def test_a_name_a_parameter_or_local_shadows_is_reached_through_an_alias_free_there():
    """`def step(model, lr, torch=None)`: a fix there must not call the parameter."""
    edits = edits_for(SHADOWED)
    spelled, (added,) = edits.reference("torch._foreach_mul_", at=_returned(edits, "step"))
    assert spelled == "torch_._foreach_mul_" and added.content == "import torch as torch_\n"
    assert edits.reference("torch._foreach_mul_", at=_returned(edits, "other")) == ("torch._foreach_mul_", ())
    assert edits.reference("torch.expm1", at=_returned(edits, "local_import"))[0] == "torch_.expm1"


def test_an_alias_bound_anywhere_at_module_level_or_there_is_not_taken():
    text = SHADOWED + "torch_ = None\n"
    edits = edits_for(text)
    spelled, (added,) = edits.reference("torch.expm1", at=_returned(edits, "step"))
    assert spelled == "_torch.expm1" and added.content == "import torch as _torch\n"
    spelled, _ = edits.reference("torch.expm1", at=_returned(edits_for(SHADOWED), "later"))
    assert spelled == "torch.expm1"  # `torch_` is local to `later`, but `torch` means the module there


def test_a_shadowed_alias_falls_back_to_another_spelling_of_the_module():
    edits = edits_for(SHADOWED)
    assert edits.reference("torch.nn.functional.softplus", at=_returned(edits, "other")) == \
        ("torch.nn.functional.softplus", ())
    assert edits.reference("torch.nn.functional.softplus", at=_returned(edits, "step")) == ("F.softplus", ())


def test_no_free_name_means_no_fix():
    """A star import may bind any name: no alias can be relied on."""
    edits = edits_for("from os import *\n\ndef f(torch):\n    return torch\n")
    assert edits.reference("torch.expm1", at=_returned(edits, "f")) is None
    assert edits.reference("torch.expm1", at=edits.tree) is None


# -- details that decide the text of a fix ---------------------------------------------------------

@pytest.mark.parametrize("text,newline", [("x = 1\r\ny = 2\r\n", "\r\n"), ("x = 1\ry = 2\r", "\r"),
                                          ("x = 1\ny = 2\n", "\n"), ("x = 1\ry = 2\n", "\n")])
def test_added_lines_end_as_the_files_lines_do(text, newline):
    edits = edits_for(text)
    assert edits.newline == newline
    assert edits.import_edit("torch").content == f"import torch{newline}"


@pytest.mark.parametrize("code,expected", [
    ("(a, b)", True), ("((a))", True), ("[x, y]", True), ("{a: 1}", True), ("(a), (b)", False), ("(a)[0]", False),
    ("f(x)", False), ("a", False), ("", False), ("(a", False), ("(a)  # c", True), ("(\n a\n)", True),
    ("X(a)", False),
])
def test_enclosed(code, expected):
    from ptlint.engine.edits import _enclosed

    assert _enclosed(code) is expected


@pytest.mark.parametrize("text,needle,occurrence,expected", [
    ("y = (  # (\r\n  x\r\n)\r\n", "x", 0, "(  # (\r\n  x\r\n)"),
    ("y = (\\\n  x)\n", "x", 0, "(\\\n  x)"),
    ("(x)\n", "x", 0, "(x)"),
    ("x\n", "x", 0, "x"),
    ("f((x  # c\n))\n", "x", 0, "(x  # c\n)"),
    ("f(  # )\n  x)\n", "x", 0, "x"),
    ("y = (x)\r", "x", 0, "(x)"),
])
def test_outer_across_line_ends_comments_and_continuations(text, needle, occurrence, expected):
    edits = edits_for(text)
    node = [n for n in ast.walk(edits.tree) if isinstance(n, ast.Name) and n.id == needle][occurrence]
    start, end = edits.outer(node)
    assert text[start:end] == expected


def test_comments_are_found_by_the_tokenizer_at_character_columns(monkeypatch):
    edits = edits_for("s = 'é # not one'  # one\nx = 1\n# two\n")
    assert edits.comments() == [(1, 20), (3, 1)]
    assert edits.line_has_comment(1, 1) and edits.line_has_comment(3, 3) and not edits.line_has_comment(2, 2)
    import tokenize

    def broken(readline):
        raise tokenize.TokenError("no", (1, 0))

    monkeypatch.setattr(tokenize, "generate_tokens", broken)
    fallback = edits_for("x = 1  # a\ny = '#'\nz = 2\n")
    # the first `#` of every line counts as a comment there (engine.source.comments): no fix loses one
    assert fallback.comments() == [(1, 8), (2, 6)]


def test_a_comment_counts_inside_a_node_not_right_after_it():
    edits = edits_for("y = x# c\nz = f(a,  # why\n      b)\nw = g(a)  # after\n")
    x = find(edits, ast.Name, "x")
    call = find(edits, ast.Call, "f(a,  # why\n      b)")
    g = find(edits, ast.Call, "g(a)")
    assert not edits.has_comment(x) and edits.has_comment(call) and not edits.has_comment(g)
    assert edits.has_comment_after(call.args[0], call) and not edits.has_comment_after(call.func, call.args[0])


@pytest.mark.parametrize("text,position,content,expected", [
    ("x = a\n", (1, 6), "'s'", "x = a 's'\n"), ("a\n", (1, 2), "b", "a b\n"), ("x = a\n", (1, 5), "'s'", "x = 's' a\n"),
])
def test_padding_on_either_side(text, position, content, expected):
    edits = edits_for(text)
    assert applied(edits, edits.insert_at(position, content)) == expected


@pytest.mark.parametrize("text,target,content,expected", [
    ("r = a - b", "b", "c * d", "r = a - c * d"),
    ("r = a < b", "b", "c | d", "r = a < c | d"),
    ("r = a or b", "b", "c and d", "r = a or c and d"),
    ("r = a * b", "b", "-c", "r = a * -c"),
    ("r = x.y", "x", "1.5", "r = (1.5).y"),
    ("r = x.y", "x", "c", "r = c.y"),
])
def test_no_more_parentheses_than_the_place_needs(text, target, content, expected):
    edits = edits_for(text + "\n")
    assert applied(edits, edits.replace(find(edits, ast.Name, target), content)) == expected + "\n"


@pytest.mark.parametrize("text,arguments,expected", [
    ("torch.zeros().to(d)", ["dtype=t", "device=d"], "torch.zeros(dtype=t, device=d)"),
    ("torch.zeros(x for x in y).to(d)", ["dtype=t", "device=d"], "torch.zeros((x for x in y), dtype=t, device=d)"),
    ("torch.zeros(\n    n ,  # count\n\n).to(d)", ["device=d", "dtype=t"],
     "torch.zeros(\n    n ,  # count\n    device=d,\n    dtype=t,\n\n)"),
    ("torch.zeros(n,\n).to(d)", ["device=d"], "torch.zeros(n, device=d,\n)"),
])
def test_call_with_keywords_in_each_layout(text, arguments, expected):
    edits = edits_for(f"x = {text}\n")
    factory = edits.tree.body[0].value.func.value
    assert edits.call_with_keywords(factory, arguments) == expected


def test_an_argument_after_a_parenthesised_generator_goes_after_it():
    edits = edits_for("f(a, (x for x in y))\n")
    assert applied(edits, edits.add_keyword(edits.tree.body[0].value, "k=1")) == "f(a, (x for x in y), k=1)\n"


def test_an_operand_spanning_lines_gets_parentheses_whatever_its_line_ends():
    edits = edits_for("x = f(a,\r  b)\r")
    assert edits.expression(find(edits, ast.Call, "f(a,\r  b)")) == "(f(a,\r  b))"


def test_aliases_are_tried_in_order_and_each_must_be_free_there_and_at_module_level():
    taken = "import torch\n\ndef f(x, torch, torch_, _torch, torch_module):\n    return x\n"
    edits = edits_for(taken)
    assert edits.reference("torch.relu", at=_returned(edits, "f"))[0] == "torch2.relu"
    local = "import torch\n\ndef f(x, torch):\n    torch_ = 1\n    return x\n"
    edits = edits_for(local)
    assert edits.reference("torch.relu", at=_returned(edits, "f"))[0] == "_torch.relu"
    every = "import torch\n\ndef f(x, torch, torch_, _torch, torch_module, " + \
        ", ".join(f"torch{n}" for n in range(2, 10)) + "):\n    return x\n"
    edits = edits_for(every)
    assert edits.reference("torch.relu", at=_returned(edits, "f")) is None


# -- cases the mutation run of issue 24 found untested ----------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("y = (\n  x\n)\n", "(\n  x\n)"),  # a line feed alone: nothing before it is skipped with it
    ("y = (\r\n  x\r\n)\r\n", "(\r\n  x\r\n)"),  # CRLF without a comment: both characters, no more
    ("y = (  #\n  x\n)\n", "(  #\n  x\n)"),  # a comment that is a lone `#`
    ("y = (# c\n  x\n)\n", "(# c\n  x\n)"),  # a comment right after the parenthesis
    ("y = (x  # X\n)\n", "(x  # X\n)"),  # a comment after the node runs to the line end, whatever it holds
    ("y = x  # c", "x"),  # a comment that ends the file without a line break
])
def test_outer_skips_exactly_the_blanks_line_ends_and_comments(text, expected):
    edits = edits_for(text)
    node = find(edits, ast.Name, "x")
    start, end = edits.outer(node)
    assert text[start:end] == expected


def test_an_import_at_the_top_of_a_file_that_starts_with_a_blank_line_goes_on_line_one():
    assert edits_for("\nx = 1\n").import_edit("torch") == Edit(1, 1, 1, 1, "import torch\n")


def test_a_comment_right_at_the_end_of_a_node_counts_as_after_it_and_not_after_the_call():
    edits = edits_for("y = f(a# c\n  , b)\nz = g(a)# c\n")
    call, other = edits.tree.body[0].value, edits.tree.body[1].value
    assert edits.has_comment_after(call.args[0], call) is True  # the comment starts where `a` ends
    assert edits.has_comment_after(other.func, other) is False  # it starts where the call ends


def test_a_comma_on_the_line_after_the_last_argument_keeps_the_argument_on_its_line():
    edits = edits_for("x = torch.zeros(\n    n\n    ,\n).to(d)\n")
    factory = edits.tree.body[0].value.func.value
    assert edits.call_with_keywords(factory, ["device=d"]) == "torch.zeros(\n    n, device=d\n    ,\n)"


def test_reference_to_a_bare_module_adds_its_import_and_no_dot():
    assert edits_for("x = 1\n").reference("torch") == ("torch", (Edit(1, 1, 1, 1, "import torch\n"),))


def test_of_two_equally_short_spellings_the_first_import_wins():
    assert edits_for("import torch as A\nimport torch as B\n").reference("torch.relu") == ("A.relu", ())


def test_replace_groups_only_an_expression_replaced_alone():
    loop = edits_for("for p in xs:\n    p.add_(1)\n")
    assert loop.replace(loop.tree.body[0], "a, b").content == "a, b"  # a statement: never grouped
    edits = edits_for("r = a * b\n")
    b = edits.tree.body[0].value.right
    assert edits.replace(b, "c + d", end_node=b).content == "c + d"  # a span through `end_node`: as given
    assert edits.replace(b, "c + d").content == "(c + d)"


def test_replace_grouped_keeps_parentheses_for_what_is_not_an_expression_and_drops_them_for_a_left_operand():
    edits = edits_for("r = (a) * b\n")
    made = edits.replace_grouped(edits.tree.body[0].value.left, "yield c")
    assert applied(edits, made) == "r = (yield c) * b\n"
    edits = edits_for("r = (a) - b\n")
    made = edits.replace_grouped(edits.tree.body[0].value.left, "c - d")
    assert applied(edits, made) == "r = c - d - b\n"
