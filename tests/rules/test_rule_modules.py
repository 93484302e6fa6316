"""A rule module holds its recognisers and its documentation; what the rules share about where
code runs and what values are lives in ptlint/semantics, behind public functions.

PTL101 once held 400 lines of code of its own (where code runs, what is on the host); the target
is at most 250. Code lines are counted on the syntax tree: blank lines, comments, docstrings and
the strings and lists assigned to `docs` and the example lists are not code."""

from __future__ import annotations

import ast
import textwrap

from helpers import REPO

RULES = REPO / "ptlint" / "rules"
DOCUMENTATION = {"docs", "bad_examples", "good_examples", "fix_examples", "unfixable_examples"}
LIMITS = {"ptlint/rules/sync/ptl101_sync_in_loop.py": 250}


def code_lines(text: str) -> int:
    tree = ast.parse(text)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                skipped.update(range(first.lineno, first.end_lineno + 1))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in DOCUMENTATION for t in targets):
                skipped.update(range(node.lineno, node.end_lineno + 1))
    return sum(1 for number, line in enumerate(text.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and number not in skipped)


def test_code_lines_leave_out_documentation():
    text = textwrap.dedent('''\
        """Module docstring,
        two lines."""
        import ast  # code

        # a comment


        class Rule:
            """Class docstring."""
            docs = """
        ## What it does
        """
            bad_examples = [
                "x = 1",
            ]
            fix_examples: list = []
            message = "a message is code"

            def visit(self, node):
                """Method docstring."""
                return node
        ''')
    # import, class, message, def, return
    assert code_lines(text) == 5


def test_rule_modules_stay_within_their_size():
    sizes = {path: code_lines((REPO / path).read_text(encoding="utf-8")) for path in LIMITS}
    assert {path: size for path, size in sizes.items() if size > LIMITS[path]} == {}


def private_reads(text: str) -> list[str]:
    """`x._name` where `x` is not `self` / `cls`: a private attribute of another object."""
    return [ast.unparse(node) for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))]


def test_private_reads_are_found():
    assert private_reads("self._a\ncls._b\nself.ctx._sites\nmodel._sites.get(1)\nx.__class__\n") == [
        "self.ctx._sites", "model._sites"]


def test_no_rule_reads_a_private_attribute_of_another_object():
    found = {str(path.relative_to(REPO)): reads for path in sorted(RULES.rglob("*.py"))
             if (reads := private_reads(path.read_text(encoding="utf-8")))}
    assert found == {}
