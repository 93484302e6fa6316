"""The structural check of a fix (ptlint.engine.structure): written from what a broken fix does to
the code around it, with raw edits (as a careless rule would make them) and, where a rule made the
same mistake, through that rule: a keyword glued to the replacement (`return(x)` -> `returnx`), a
replacement that regroups the expression around it, a name that shadows the module a fix refers
to, a binding the fix adds or removes under the user's names."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ptlint.engine.finding import Edit
from ptlint.engine.source import SourceFile
from ptlint.engine.structure import (
    FixRejected,
    checked_text,
    module_bindings,
    parse_text,
)


def at(text: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """(line, 1-based column) of the `occurrence`-th `needle` in `text`."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def replacing(text: str, needle: str, content: str, occurrence: int = 0) -> Edit:
    line, column = at(text, needle, occurrence)
    return Edit(line, column, line, column + len(needle), content)


def inserting(text: str, needle: str, content: str, occurrence: int = 0, after: bool = True) -> Edit:
    line, column = at(text, needle, occurrence)
    column += len(needle) if after else 0
    return Edit(line, column, line, column, content)


def check(text: str, *edits: Edit) -> str:
    return checked_text(SourceFile("a.py", textwrap.dedent(text)), edits)


def rejected(text: str, *edits: Edit) -> str:
    with pytest.raises(FixRejected) as caught:
        check(text, *edits)
    message = str(caught.value)
    assert "\n" not in message
    return message


# -- tokens glued to the replacement -------------------------------------------------------------

GLUED = [
    ("return", "def f(h):\n    return(torch.exp(h) - 1.0) / h\n"),
    ("yield", "def f(h):\n    yield(torch.exp(h) - 1.0) / h\n"),
    ("not", "def f(h):\n    return not(torch.exp(h) - 1.0) / h\n"),
    ("await", "async def f(h):\n    return await(torch.exp(h) - 1.0)\n"),
    ("in", "def f(h, s):\n    return s in(torch.exp(h) - 1.0)\n"),
    ("is", "def f(h, s):\n    return s is(torch.exp(h) - 1.0)\n"),
    ("else", "def f(h, s):\n    return s if s else(torch.exp(h) - 1.0)\n"),
    ("assert", "def f(h):\n    assert(torch.exp(h) - 1.0)\n"),
    ("del", "def f(h):\n    del(h)\n"),
]


@pytest.mark.parametrize("keyword,text", GLUED, ids=[k for k, _ in GLUED])
def test_a_keyword_glued_to_the_replacement_is_rejected(keyword, text):
    """The replacement drops the parentheses and no space comes between: the keyword and the
    replacement become one name (or the code no longer parses)."""
    text = "import torch\n" + text
    if keyword == "del":
        message = rejected(text, replacing(text, "(h)", "h", 1))
    else:
        message = rejected(text, replacing(text, "(torch.exp(h) - 1.0)", "torch.expm1(h)"))
    assert "glue" in message or "would not parse" in message or "would change" in message, message


@pytest.mark.parametrize("keyword,text", GLUED, ids=[k for k, _ in GLUED])
def test_the_same_replacement_with_a_space_is_accepted(keyword, text):
    text = "import torch\n" + text
    group = "(h)" if keyword == "del" else "(torch.exp(h) - 1.0)"
    content = " h" if keyword == "del" else " torch.expm1(h)"
    fixed = check(text, replacing(text, group, content, 1 if keyword == "del" else 0))
    assert f"{keyword} {content.strip()}" in fixed


def test_return_glued_names_the_glued_token():
    text = "import torch\ndef f(h):\n    return(torch.exp(h) - 1.0) / h\n"
    message = rejected(text, replacing(text, "(torch.exp(h) - 1.0)", "torch.expm1(h)"))
    assert message == "it would glue two tokens into `returntorch` at line 3"


def test_a_statement_replaced_whole_may_change_its_kind():
    """A fix that rewrites a whole statement (PTL501's loop into a call) changes that statement:
    the block around it is what must stay."""
    text = "def f(xs, g):\n    for x in xs:\n        x.add_(1)\n"
    line, column = at(text, "for x")
    loop = Edit(line, column, line + 1, len("        x.add_(1)") + 1, "g(xs)")
    assert check(text, loop) == "def f(xs, g):\n    g(xs)\n"


def test_not_glued_names_the_glued_token():
    text = "import torch\ndef f(h):\n    if not(h):\n        pass\n"
    message = rejected(text, replacing(text, "(h)", "torch.ones_like(h)", 1))
    assert message == "it would glue two tokens into `nottorch` at line 3"


def test_a_number_glued_to_a_number_is_rejected():
    text = "x = 1 + 2\n"
    assert "glue" in rejected(text, replacing(text, " + 2", "2"))


def test_a_name_glued_after_the_replacement_is_rejected():
    text = "def f(a, c, d):\n    return (a)if c else d\n"
    message = rejected(text, replacing(text, "(a)", "a"))
    assert "glue" in message or "would not parse" in message
    assert check(text, replacing(text, "(a)", "a ")) == "def f(a, c, d):\n    return a if c else d\n"


# -- grouping ------------------------------------------------------------------------------------

def test_a_replacement_that_regroups_its_surroundings_is_rejected():
    text = "def f(a, b, c, d):\n    return a * b\n"
    message = rejected(text, replacing(text, "b", "c + d", 1))
    assert message == "it would change a `*` expression at line 2 into a `+` expression"
    assert check(text, replacing(text, "b", "(c + d)", 1)).endswith("return a * (c + d)\n")


def test_an_unparenthesised_tuple_where_one_operand_goes_is_rejected():
    text = "def f(a, b, xs):\n    return [p for p in xs]\n"
    assert "would not parse" in rejected(text, replacing(text, "xs", "a, b", 1))
    text = "def f(a, b, x):\n    return x.sum() * 2\n"
    message = rejected(text, replacing(text, "x.sum()", "a, b.sum()"))
    assert message == "it would change a `*` expression at line 2 into a tuple"


def test_an_argument_added_inside_the_last_arguments_parentheses_is_rejected():
    """PTL201's old mistake: `torch.zeros((n)).to(d)` -> `torch.zeros((n, device=d))`."""
    text = "import torch\ndef f(n, d):\n    return torch.zeros((n)).to(d)\n"
    assert "would not parse" in rejected(text, replacing(text, "torch.zeros((n)).to(d)",
                                                         "torch.zeros((n, device=d))"))
    fixed = check(text, replacing(text, "torch.zeros((n)).to(d)", "torch.zeros((n), device=d)"))
    assert fixed.endswith("return torch.zeros((n), device=d)\n")


def test_the_parse_error_gives_the_line_in_the_fixed_file():
    text = "import os\n\n\ndef f(x):\n    return x\n"
    edits = [Edit(2, 1, 2, 1, "import torch\n"), replacing(text, "x", "x +", 1)]
    assert rejected(text, *edits).startswith("the result would not parse (")
    assert rejected(text, *edits).endswith("at line 6)")


# -- names and their bindings ------------------------------------------------------------------

def test_a_parameter_that_shadows_the_module_is_rejected():
    """PTL501's fix in `def step(model, lr, torch=None)` would call the parameter."""
    text = textwrap.dedent("""\
        import torch

        def step(model, lr, torch=None):
            for p in model.parameters():
                p.data.mul_(lr)
        """)
    loop = "for p in model.parameters():\n        p.data.mul_(lr)"
    line, column = at(text, "for p")
    edit = Edit(line, column, line + 1, len("        p.data.mul_(lr)") + 1,
                "torch._foreach_mul_([p.data for p in model.parameters()], lr)")
    assert text.count(loop) == 1
    message = rejected(text, edit)
    assert message == ("`torch` at line 4 is a local, parameter or other binding there, which hides the "
                       "module the fix means")


@pytest.mark.parametrize("binding", ["torch = None", "import numpy as torch", "for torch in range(3): pass",
                                     "with open('x') as torch: pass", "def torch(): pass", "class torch: pass",
                                     "(torch := 1)", "try:\n        pass\n    except Exception as torch:\n        pass"])
def test_a_local_binding_of_the_module_name_is_rejected(binding):
    text = f"import torch\n\ndef f(x):\n    {binding}\n    return x\n"
    assert "`torch`" in rejected(text, replacing(text, "return x", "return torch.relu(x)"))


def test_the_module_the_file_imports_is_accepted():
    text = "import torch\n\ndef f(x):\n    return x\n"
    assert check(text, replacing(text, "return x", "return torch.relu(x)")).endswith("torch.relu(x)\n")


def test_an_import_in_a_try_with_a_fallback_counts_as_the_module():
    text = "try:\n    import torch\nexcept ImportError:\n    torch = None\n\ndef f(x):\n    return x\n"
    assert check(text, replacing(text, "return x", "return torch.relu(x)")).endswith("torch.relu(x)\n")


def test_an_import_the_fix_adds_elsewhere_counts():
    text = '"""doc"""\nimport os\n\n\ndef f(x):\n    return x\n'
    fixed = check(text, Edit(3, 1, 3, 1, "import torch\n"), replacing(text, "return x", "return torch.relu(x)"))
    assert fixed == '"""doc"""\nimport os\nimport torch\n\n\ndef f(x):\n    return torch.relu(x)\n'


def test_an_import_in_a_class_body_is_not_seen_by_its_methods():
    text = "class A:\n    import torch\n\n    def f(self, x):\n        return x\n"
    assert "not defined there" in rejected(text, replacing(text, "return x", "return torch.relu(x)"))


def test_a_name_nothing_defines_is_rejected_unless_a_star_import_may_define_it():
    text = "def f(x):\n    return x\n"
    message = rejected(text, replacing(text, "return x", "return torch.relu(x)"))
    assert message == "`torch` at line 2 is not defined there"
    starred = "from torch import *\n\n" + text
    assert check(starred, replacing(starred, "return x", "return relu(x)")).endswith("return relu(x)\n")


def test_builtins_and_the_users_own_variables_may_be_brought_in():
    text = "def f(fabric, x):\n    y = x\n    return y\n"
    assert check(text, replacing(text, "x\n", "list(x, device=fabric.device)\n")).count("fabric.device") == 1


def test_a_variable_of_the_fix_named_like_one_of_the_users_is_rejected():
    text = "def f(xs, params):\n    for x in xs:\n        x.add_(1)\n    return params\n"
    line, column = at(text, "for x")
    loop = Edit(line, column, line + 1, len("        x.add_(1)") + 1, "params = list(xs)\n    for x in params: x.add_(1)")
    message = rejected(text, loop)
    assert message.startswith("`params` at line 4 would no longer mean what it meant")


def test_a_loop_variable_read_after_the_loop_the_fix_replaces_is_rejected():
    text = "import torch\n\ndef f(xs):\n    for x in xs:\n        x.add_(1)\n    return x\n"
    line, column = at(text, "for x")
    loop = Edit(line, column, line + 1, len("        x.add_(1)") + 1, "torch._foreach_add_(list(xs), 1)")
    assert rejected(text, loop).startswith("`x` at line 5 would no longer mean what it meant")
    unused = text.replace("return x", "return xs")
    assert "torch._foreach_add_(list(xs), 1)" in check(unused, loop)


def test_names_the_fix_binds_and_carries_over_are_its_own():
    text = "import torch\n\ndef f(model, lr):\n    for p in model.parameters():\n        p.mul_(lr)\n"
    line, column = at(text, "for p")
    edit = Edit(line, column, line + 1, len("        p.mul_(lr)") + 1,
                "params = [p for p in model.parameters()]\n    if params:\n        torch._foreach_mul_(params, lr)")
    assert "torch._foreach_mul_(params, lr)" in check(text, edit)


def test_a_name_outside_the_edit_lost_or_added_is_rejected():
    text = "f(a)\ng(b)\n"
    assert rejected(text, Edit(2, 1, 2, 1, "#")) == "it would lose `g` near line 2"
    text = "x = 1  # ; h = 2\n"
    assert rejected(text, replacing(text, "# ", "")) == "it would make a new `h` at line 1 out of the code around the edit"


def test_undefined_before_and_imported_by_the_fix_is_accepted():
    """The code read `torch` that nothing defined (a NameError); the fix imports it."""
    text = "from torch.cuda.amp import autocast\n\nwith autocast(torch.float16):\n    pass\n"
    fixed = check(text, Edit(2, 1, 2, 1, "import torch\n"), replacing(text, "autocast(", "torch.autocast(\"cuda\", "))
    assert fixed.startswith("from torch.cuda.amp import autocast\nimport torch\n")


@pytest.mark.parametrize("code,meaning", [
    ("x = 1\ndef f():\n    global x\n    x = 2\n    return x\n", "module"),
    ("def f():\n    x = 1\n    def g():\n        nonlocal x\n        x = 2\n        return x\n    return g\n", "function"),
    ("x = 1\nclass A:\n    x = 2\n    def f(self):\n        return x\n", "module"),
    ("x = 1\nclass A:\n    x = 2\n    y = [x for _ in range(1)]\n", "module"),
    ("x = []\nclass A:\n    x = [1]\n    y = [i for i in x]\n", "class"),
    ("def f():\n    [(x := i) for i in range(3)]\n    return x\n", "function"),
    ("def f(x=1):\n    return lambda x=x: x\n", "lambda"),
    ("def f():\n    return x\n", "builtin"),
    ("def f(a):\n    try:\n        pass\n    except E as x:\n        return x\n", "function"),
    ("def f(a):\n    match a:\n        case [*x]:\n            return x\n", "function"),
])
def test_scopes_follow_python(code, meaning):
    """Where the last `x` read in `code` is bound: a fix that adds a binding of that name in
    another scope must not change which one it means; one in the same scope must be seen."""
    tree = parse_text(code)
    from ptlint.engine import structure

    module = structure._Scope("module", None, None)
    walker = structure._Bindings(module, lambda start, end: False)
    walker.positions = structure._Positions(code)
    walker.walk(tree.body, module)
    node, scope = max((load for load in walker.loads if load[0].id == "x"),
                      key=lambda load: (load[0].lineno, load[0].col_offset))
    target, _ = structure._resolve(scope, node.id)
    assert (target.kind if target is not None else "builtin") == meaning


def test_module_bindings_are_the_names_bound_at_module_level():
    tree = parse_text("import a.b\nfrom c import d as e\nx = 1\ndef f():\n    y = 2\nclass K:\n    z = 3\n"
                      "for i in range(2): pass\n[w := 1 for _ in range(1)]\n")
    assert module_bindings(tree.body) == {"a": {"outside", "import", "module=a"},
                                         "e": {"outside", "import", "module=c.d"}, "x": {"outside"},
                                         "f": {"outside"}, "K": {"outside"}, "i": {"outside"}, "w": {"outside"}}


# -- edits, regions, lines -----------------------------------------------------------------------

def test_overlapping_edits_are_rejected_and_no_edit_changes_nothing():
    text = "x = 1 + 2\n"
    assert rejected(text, replacing(text, "1 + 2", "3"), replacing(text, "2", "4")) == "its edits overlap"
    assert check(text) == text


def test_identical_edits_count_once():
    text = "import os\nx = 1\n"
    edit = Edit(2, 1, 2, 1, "import torch\n")
    assert check(text, edit, edit) == "import os\nimport torch\nx = 1\n"


def test_an_original_that_does_not_parse_is_said():
    assert rejected("def f(:\n", Edit(1, 1, 1, 1, "x")) == "the original does not parse"


def test_edits_in_several_statements_and_between_them():
    text = "import torch\n\n\ndef f(x):\n    return x\n\n# a comment\n\ndef g(y):\n    return y\n"
    fixed = check(text, replacing(text, "return x", "return torch.relu(x)"), Edit(7, 1, 7, 1, "# more\n"),
                  replacing(text, "return y", "return torch.relu(y)"))
    assert fixed.count("torch.relu") == 2 and "# more\n# a comment" in fixed


def test_positions_count_characters_not_bytes():
    text = "import torch\ndef f(h):\n    s = 'é'\n    return(torch.exp(h) - 1.0) / h  # é\n"
    assert check(text, replacing(text, "(torch.exp(h) - 1.0)", " torch.expm1(h)")).endswith(
        "return torch.expm1(h) / h  # é\n")
    assert "return" in rejected(text, replacing(text, "(torch.exp(h) - 1.0)", "torch.expm1(h)"))


def test_decorators_belong_to_their_statement():
    text = "import torch\n\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n"
    fixed = check(text, replacing(text, "torch.cuda.amp.custom_fwd", 'torch.amp.custom_fwd(device_type="cuda")'))
    assert '@torch.amp.custom_fwd(device_type="cuda")\ndef f' in fixed


def test_crlf_and_a_statement_after_a_semicolon():
    text = "import torch\r\nx = 1; y = torch.exp(x) - 1\r\n"
    fixed = check(text, replacing(text, "torch.exp(x) - 1", "torch.expm1(x)"))
    assert fixed == "import torch\r\nx = 1; y = torch.expm1(x)\r\n"


# -- messages and details --------------------------------------------------------------------------

@pytest.mark.parametrize("code,description", [
    ("x", "an expression statement"), ("x = 1", "an assignment"), ("x += 1", "an augmented assignment"),
    ("x: int = 1", "an annotated assignment"), ("def f(): pass", "a `def`"), ("async def f(): pass", "an `async def`"),
    ("class A: pass", "a `class`"), ("from a import b", "a `from ... import`"), ("return 1", "a `return` statement"),
    ("while x: pass", "a `while` statement"), ("import a", "a `import` statement"),
    ("a + b", "a `+` expression"), ("a ** b", "a `**` expression"), ("a // b", "a `//` expression"),
    ("a @ b", "a `@` expression"), ("a % b", "a `%` expression"), ("a << b", "a `<<` expression"),
    ("a >> b", "a `>>` expression"), ("a | b", "a `|` expression"), ("a ^ b", "a `^` expression"),
    ("a & b", "a `&` expression"), ("a - b", "a `-` expression"), ("a / b", "a `/` expression"),
    ("a * b", "a `*` expression"), ("-a", "a `-` expression"), ("+a", "a `+` expression"), ("~a", "a `~` expression"),
    ("not a", "a `not` expression"), ("a and b", "a `and` expression"), ("a or b", "a `or` expression"),
    ("a == b != c", "a `== !=` comparison"), ("a < b <= c > d >= e", "a `< <= > >=` comparison"),
    ("a is b is not c", "a `is is not` comparison"), ("a in b not in c", "a `in not in` comparison"),
    ("f()", "a call"), ("a.b", "an attribute"), ("a[0]", "a subscript"), ("a", "a name"), ("a, b", "a tuple"),
    ("a if b else c", "a conditional expression"), ("lambda: 1", "a lambda"), ("[a]", "a List"),
])
def test_nodes_are_described_in_words(code, description):
    from ptlint.engine.structure import _describe

    tree = parse_text(code)
    statement = tree.body[0]
    node = statement.value if isinstance(statement, ast.Expr) and description != "an expression statement" \
        else statement
    assert _describe(node) == description
    call = parse_text("f(k=1)").body[0].value
    assert _describe(call.keywords[0]) == "a keyword argument"


def test_the_second_edit_of_a_region_is_placed_after_the_firsts_change_of_length():
    text = "import torch\ndef f(h, g):\n    y = g(h)\n    return(torch.exp(h) - 1.0) / h\n"
    first = replacing(text, "g(h)", "g(h, h, h)")
    assert "glue" in rejected(text, first, replacing(text, "(torch.exp(h) - 1.0)", "torch.expm1(h)"))
    assert check(text, first, replacing(text, "(torch.exp(h) - 1.0)", " torch.expm1(h)")).endswith(
        "    y = g(h, h, h)\n    return torch.expm1(h) / h\n")


@pytest.mark.parametrize("text,edit_line,accepted", [
    ("import torch\n\ndef f(x):\n    import torch\n    return x\n", 5, True),  # the same module
    ("import torch\n\ndef f(x):\n    import numpy as torch\n    return x\n", 5, False),  # another one
    ("import numpy\n\ndef f(x):\n    import torch\n    return x\n", 5, True),  # only there
    ("from torch import nn as torch\n\ndef f(x):\n    import torch\n    return x\n", 5, False),
])
def test_an_import_inside_a_function_counts_when_it_names_the_module_level_one(text, edit_line, accepted):
    edit = replacing(text, "return x", "return torch.relu(x)")
    if accepted:
        assert "torch.relu(x)" in check(text, edit)
    else:
        assert "hides the module" in rejected(text, edit)


def test_names_lost_or_made_are_named_without_their_kind_marks():
    text = "def f(a, b):\n    g(a, k=b).y\n    return b\n"
    assert rejected(text, Edit(2, 5, 2, 5, "#")) == "it would lose `y` near line 2"  # the attribute `.y`
    text = "def f(a):\n    x = 1  # ; a.attr = 2\n"
    assert rejected(text, replacing(text, "# ", "")) == "it would make a new `attr` at line 2 out of the code around the edit"
    text = "def f(a):\n    x = 1  # ; g(k=a)\n"
    assert "new `g`" in rejected(text, replacing(text, "# ", ""))


def test_an_edit_at_the_end_of_a_file_without_a_final_newline():
    text = "import torch\nx = torch.exp(y) - 1"
    assert check(text, replacing(text, "torch.exp(y) - 1", "torch.expm1(y)")) == "import torch\nx = torch.expm1(y)"
    comments = "import torch\nx = 1\n# a note"
    assert check(comments, replacing(comments, "# a note", "# a longer note")) == "import torch\nx = 1\n# a longer note"


def test_edits_in_statements_sharing_a_line_and_in_touching_statements_are_one_region():
    text = "import os; import sys\nx = 1\ny = 2\n"
    fixed = check(text, Edit(1, 12, 1, 12, "import torch; "), Edit(2, 5, 2, 6, "2"), Edit(3, 5, 3, 6, "3"))
    assert fixed == "import os; import torch; import sys\nx = 2\ny = 3\n"


def test_a_binding_the_fix_adds_to_a_scope_a_name_is_read_in_is_seen():
    text = "x = 0\n\ndef f(a):\n    a.go()\n    return x\n"
    message = rejected(text, replacing(text, "a.go()", "x = a.go()"))
    assert message.startswith("`x` at line 5 would no longer mean what it meant")
    text = "x = 0\n\ndef f(a):\n    a.go()\n    return a\n"  # `x` not read: the fix's own variable
    assert "x = a.go()" in check(text, replacing(text, "a.go()", "x = a.go()"))


def test_carried_names_keep_the_meaning_they_had_in_the_code_replaced():
    text = "import torch\n\ndef f(x, torch_):\n    return x + 1\n"
    assert "x.exp()" in check(text, replacing(text, "x + 1", "x.exp()"))
    text = "import torch\n\ndef f(x):\n    y = x\n    return y + 1\n"
    message = rejected(text, replacing(text, "y + 1", "z + 1"))
    assert message == "`z` at line 5 is not defined there"


# -- cases the mutation run of issue 24 found untested ----------------------------------------------

def test_a_node_that_changes_into_another_of_no_operator_is_rejected():
    text = "y = f(a)\n"
    assert rejected(text, replacing(text, "(a)", "[a]")) == "it would change a call at line 1 into a subscript"
    text = "x += a\n"
    assert rejected(text, replacing(text, "+=", "+")) == \
        "it would change an augmented assignment at line 1 into an expression statement"


def test_a_node_whose_place_holds_no_node_after_the_fix_is_said_so():
    text = "x = f(a)\n"
    assert rejected(text, replacing(text, ")", "); z = 1")) == \
        "it would change an assignment at line 1 into something else"


def test_a_node_that_begins_inside_another_edit_is_not_compared():
    text = "a = b = c = f = g = h = 0\ny = f(a) + g(b)\n"
    assert check(text, replacing(text, "= f(", "= h("), replacing(text, "b)", "c)")) == \
        "a = b = c = f = g = h = 0\ny = h(a) + g(c)\n"


def test_text_added_at_the_end_of_a_statement_extends_it():
    text = "y = f(x)\n"
    assert check(text, inserting(text, "f(x)", ".cpu()")) == "y = f(x).cpu()\n"


@pytest.mark.parametrize("text,edit,expected", [
    # a replacement padded after: the call it ends stays where it was
    ("a = b = c = d = f = 0\ny = f(a)if c else d\n", ("(a)", "(b) "), "a = b = c = d = f = 0\ny = f(b) if c else d\n"),
])
def test_padding_around_a_replacement_is_not_part_of_the_node_beside_it(text, edit, expected):
    assert check(text, replacing(text, *edit)) == expected


def test_insertions_padded_with_spaces_keep_the_names_beside_them():
    text = "y = a + b\n"
    assert check(text, inserting(text, "a", " * 2 ")) == "y = a * 2  + b\n"
    assert check(text, inserting(text, "b", " 2 * ", after=False)) == "y = a +  2 * b\n"


def test_edits_that_touch_without_overlapping_are_both_applied():
    text = "x = 1 + 2\n"
    assert check(text, replacing(text, "1", "3"), replacing(text, " + 2", " + 4")) == "x = 3 + 4\n"


@pytest.mark.parametrize("text,comment,name", [
    ("f(a  # , k=b\n)\n", "# ", "k="),  # a keyword argument
    ("f(a  # , **b\n)\n", "# ", "**="),  # keyword arguments unpacked
    ("x = 1  # ; import numpy as np\n", "# ", "numpy as np"),
    ("x = 1  # ; import numpy\n", "# ", "numpy"),
])
def test_a_new_keyword_or_imported_name_out_of_a_comment_is_named(text, comment, name):
    assert rejected(text, replacing(text, comment, "")) == \
        f"it would make a new `{name}` at line 1 out of the code around the edit"


def test_names_are_named_whole_in_messages():
    assert rejected("f(a)\nXg(b)\n", Edit(2, 1, 2, 1, "#")) == "it would lose `Xg` near line 2"
    text = "x = 1  # ; Xh = 2\n"
    assert rejected(text, replacing(text, "# ", "")) == "it would make a new `Xh` at line 1 out of the code around the edit"


def test_a_rejection_on_the_last_line_of_a_file_without_a_final_newline_gives_that_line():
    text = "def f(a, b, c, d):\n    return a * b"
    assert rejected(text, replacing(text, "b", "c + d", 1)) == "it would change a `*` expression at line 2 into a `+` expression"


def test_a_glued_token_spanning_lines_is_placed_at_its_first_line():
    text = "x = 1\ny = r + '''s\nt'''\n"
    with pytest.raises(FixRejected) as caught:
        check(text, replacing(text, " + ", ""))
    assert str(caught.value) == "it would glue two tokens into `r'''s ...` at line 2"  # one line


@pytest.mark.parametrize("content", ["1\0", "-" * 100000 + "1"])
def test_a_result_with_a_null_byte_or_nested_too_deep_does_not_parse(content):
    text = "x = 1\n"
    assert rejected(text, replacing(text, "1", content)).startswith("the result would not parse")


def test_parse_errors_count_the_lines_every_region_before_added():
    text = "import os\n\n\ndef f(x):\n    return x\n\n\ndef g(y):\n    return y\n"
    edits = [Edit(2, 1, 2, 1, "import torch\n"), replacing(text, "return x", "return (x,\n        x)"),
             replacing(text, "return y", "return y +")]
    assert rejected(text, *edits).endswith("at line 11)")


# bindings made by the fix, or around it --------------------------------------------------------------

OWN_BINDINGS = {
    "def": "def torch(v):\n        return v\n    torch(a)",
    "class": "class torch:\n        pass\n    torch()",
    "walrus": "if (torch := a.go()):\n        torch.stop()",
    "except": "try:\n        a.go()\n    except Exception as torch:\n        print(torch)",
    "capture": "match a:\n        case [torch]:\n            print(torch)",
    "star": "match a:\n        case [*torch]:\n            print(torch)",
    "rest": "match a:\n        case {**torch}:\n            print(torch)",
}


@pytest.mark.parametrize("kind", sorted(OWN_BINDINGS))
def test_a_name_the_fix_binds_itself_is_its_own_even_where_a_module_of_that_name_is_imported(kind):
    text = "import torch\n\ndef f(a):\n    a.go()\n    return a\n"
    fixed = check(text, replacing(text, "a.go()", OWN_BINDINGS[kind]))
    assert OWN_BINDINGS[kind] in fixed


def test_a_parameter_the_fix_adds_is_its_own():
    text = "import torch\n\ndef f(a):\n    a.go()\n    return a\n"
    fixed = check(text, inserting(text, "def f(a", ", torch=None"), replacing(text, "a.go()", "torch.go(a)"))
    assert fixed == "import torch\n\ndef f(a, torch=None):\n    torch.go(a)\n    return a\n"


def test_a_function_the_fix_defines_may_import_another_module_under_the_name():
    text = "import torch\n\ndef f(a):\n    a.go()\n    return a\n"
    body = "def g():\n        import numpy as torch\n        return torch\n    g()"
    assert body in check(text, replacing(text, "a.go()", body))


@pytest.mark.parametrize("header", ["def g(torch):", "def g(*torch):", "def g(**torch):",
                                    "def g(a, *, torch):", "def g(torch=1):"])
def test_a_parameter_of_an_inner_function_hides_the_module_imported_two_scopes_out(header):
    text = f"import torch\n\ndef f():\n    {header}\n        return 1\n    return g\n"
    assert "hides the module" in rejected(text, replacing(text, "return 1", "return torch.relu(1)"))


def test_a_match_mapping_rest_binds_its_name():
    text = "import torch\n\ndef f(a):\n    match a:\n        case {**torch}:\n            pass\n    return a\n"
    assert "hides the module" in rejected(text, replacing(text, "return a", "return torch.relu(a)"))


def test_an_import_of_a_submodule_under_the_modules_name_is_another_module():
    text = "import torch\n\ndef f(x):\n    import torch.nn as torch\n    return x\n"
    assert "hides the module" in rejected(text, replacing(text, "return x", "return torch.relu(x)"))


@pytest.mark.parametrize("where", ["def f(a=torch.float32):", "def f(*, a=torch.float32):",
                                   "@torch.no_grad()\ndef f(a):", "def f(a: torch.Tensor):",
                                   "def f(a) -> torch.Tensor:"])
def test_reads_in_a_defs_header_are_checked_in_the_scope_around_it(where):
    """`torch` in a default, decorator or annotation is read at module level: a fix that binds
    `torch` there changes it."""
    text = f"import torch\n\n{where}\n    return a\n"
    line = text.count("\n", 0, text.index("torch.")) + 2
    assert rejected(text, Edit(3, 1, 3, 1, "torch = None\n")) == \
        f"`torch` at line {line} would no longer mean what it meant (the fix adds or removes a binding of that name)"
    # the same header with a keyword-only parameter without default, checked for what it is
    assert "torch = 1" in check(text, Edit(3, 1, 3, 1, "def g(*, k): pass\n"), replacing(text, "return a", "torch = 1"))


def test_a_class_body_reading_its_own_names_is_checked():
    text = "class A:\n    x = 1\n    y = x\n"
    assert check(text, replacing(text, "1", "2")) == "class A:\n    x = 2\n    y = x\n"


def test_a_binding_removed_from_another_region_changes_a_read_there():
    text = "x = 1\n\n\ndef f(a):\n    a.go()\n    return x\n"
    message = rejected(text, replacing(text, "x = 1", "y = 1"), replacing(text, "a.go()", "a.stop()"))
    assert message.startswith("`x` at line 6 would no longer mean what it meant")


@pytest.mark.parametrize("text,old,new", [
    ("a = 1; x = 2; y = x\n", "1", "1000000000"),  # the edit grows over where `x` was
    ("a = 1000000000; x = 2; y = x\n", "1000000000", "1"),  # it shrinks: `x` moves where it was
])
def test_module_bindings_beside_an_edit_that_changes_length_stay_outside_it(text, old, new):
    assert check(text, replacing(text, old, new)) == text.replace(old, new)


def test_module_bindings_on_a_line_after_an_edit_that_adds_lines_stay_outside_it():
    text = "a = 1000000; b = 2\nx = 3; y = x\n"
    assert check(text, replacing(text, "1000000", "(\n1)"), replacing(text, "3", "4")) == \
        "a = (\n1); b = 2\nx = 4; y = x\n"


@pytest.mark.parametrize("text,old,new", [
    ("def f():\n    x = 1\n    return x\n", "x = 1", "x = 2"),  # the target where the edit starts
    ("def f(a):\n    with a as x:\n        pass\n    return x\n", "a as x", "a.open() as x"),  # where it ends
])
def test_a_binding_the_fix_rewrites_keeps_its_meaning_for_reads_after_it(text, old, new):
    assert check(text, replacing(text, old, new)) == text.replace(old, new)


def test_a_function_after_an_insertion_at_its_line_is_the_same_scope():
    text = "import os\ndef f(a):\n    b = a\n    return b\n"
    assert check(text, Edit(2, 1, 2, 1, "import torch\n")) == "import os\nimport torch\ndef f(a):\n    b = a\n    return b\n"


def test_a_binding_inserted_right_before_a_read_changes_it():
    text = "def f(a):\n    x\n    return a\n"
    message = rejected(text, inserting(text, "    ", "x = 0; "))  # right where `x` is read
    assert message.startswith("`x` at line 2 would no longer mean what it meant")


def test_a_module_the_fix_imports_over_one_the_code_reads_is_rejected():
    text = "import torch\n\nx = torch.ones(1)\n"
    message = rejected(text, Edit(3, 1, 3, 1, "import numpy as torch\n"))
    assert message.startswith("`torch` at line 4 would no longer mean what it meant")


@pytest.mark.parametrize("binding", ["y = 1", "list = None"])
def test_a_fix_that_defines_a_name_the_code_read_as_undefined_or_builtin_is_rejected(binding):
    text = "def f(a):\n    return list(a), y\n"
    name = binding.split()[0]
    message = rejected(text, Edit(1, 1, 1, 1, binding + "\n"))
    assert message.startswith(f"`{name}` at line 3 would no longer mean what it meant")


def test_every_read_is_checked_after_one_the_fixs_import_defines():
    text = "y = 1\n\ndef f(a):\n    torch.zeros(a)\n    a.go()\n    return y\n"
    message = rejected(text, Edit(1, 1, 1, 1, "import torch\n"), replacing(text, "a.go()", "y = a.go()"))
    assert message.startswith("`y` at line 7 would no longer mean what it meant")


@pytest.mark.parametrize("code,meaning", [
    ("x = 1\ndef f():\n    x = 2\n    def g():\n        global x\n        return x\n    return g\n", "module"),
    ("x = 1\ny = [x for x in range(2) for _ in range(1)]\n", "comprehension"),
    ("x = 1\ny = {x: x for x in range(2) for _ in range(1)}\n", "comprehension"),
])
def test_more_scopes_follow_python(code, meaning):
    test_scopes_follow_python(code, meaning)


# regions: the statements an edit touches -------------------------------------------------------------

def _regions(text: str, *edits: Edit):
    from ptlint.engine.source import SourceFile as Source
    from ptlint.engine.structure import _Check, _Region

    source = Source("a.py", text)
    spans = sorted((source.offset(e.line, e.column - 1), source.offset(e.end_line, e.end_column - 1), e.content)
                   for e in edits)
    return _Check(text, parse_text(text), spans).regions(), _Region


REGIONS = "a = 1\n\n# note\n\nb = 2\nc = 3\n"


def test_a_region_is_the_statement_an_edit_is_in():
    regions, Region = _regions(REGIONS, replacing(REGIONS, "2", "4"))
    assert regions == [Region(15, 21, [1], [(4, 5, "4")])]


def test_an_insertion_right_after_a_statement_touches_it():
    regions, Region = _regions(REGIONS, Edit(2, 1, 2, 1, "x = 0\n"))
    assert regions == [Region(0, 6, [0], [(6, 6, "x = 0\n")])]


def test_an_edit_among_comments_only_is_a_region_of_its_own_lines():
    regions, Region = _regions(REGIONS, replacing(REGIONS, "note", "memo"))
    assert regions == [Region(7, 14, [], [(2, 6, "memo")])]
    text = "a = 1\n\n# note"
    regions, Region = _regions(text, replacing(text, "note", "memo"))
    assert regions == [Region(7, 13, [], [(2, 6, "memo")])]
    assert check(text, replacing(text, "note", "memo")) == "a = 1\n\n# memo"


def test_edits_in_adjacent_statements_are_one_region():
    regions, Region = _regions(REGIONS, replacing(REGIONS, "2", "4"), replacing(REGIONS, "3", "5"))
    assert regions == [Region(15, 27, [1, 2], [(4, 5, "4"), (10, 11, "5")])]
