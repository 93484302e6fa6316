"""Building fixes as text edits, at detection, from the `ast` nodes a rule matched.

The model is ruff's: a rule that finds a problem computes the replacement text right there, from
the source of the nodes it matched (so every byte it does not rewrite, comments and quotes
included, stays as it was), and attaches it to the finding as `Edit`s. Nothing re-parses or
re-derives the match later: the fixer only applies edits, the language server turns them into
`TextEdit`s, and the cache stores them like any other part of a finding.

`Edits` (one per file, `ctx.edits`) answers the questions every fix asks: the exact source of a
node, its span, whether a comment lies inside it, how this module spells `torch.softmax` (and the
`import` to add when it has no spelling), and how to add a keyword argument to a call.
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import TYPE_CHECKING

from ptlint.engine.finding import Edit

if TYPE_CHECKING:
    from ptlint.engine.source import SourceFile
    from ptlint.semantics.names import Names

# Expressions that never need parentheses when substituted into another expression.
ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple, ast.Dict,
          ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.JoinedStr)


class Edits:
    def __init__(self, source: "SourceFile", tree: ast.Module, imports: "Names") -> None:
        self.source = source
        self.tree = tree
        self.imports = imports
        self._comments: list[tuple[int, int]] | None = None
        text = source.text
        self.newline = "\r\n" if "\r\n" in text else "\r" if "\r" in text and "\n" not in text else "\n"

    # -- positions ---------------------------------------------------------------------------
    def start(self, node: ast.AST) -> tuple[int, int]:
        """(line, 1-based character column) where `node` starts."""
        return node.lineno, self.source.char_column(node.lineno, node.col_offset) + 1

    def end(self, node: ast.AST) -> tuple[int, int]:
        """(line, 1-based character column) one past where `node` ends."""
        return node.end_lineno, self.source.char_column(node.end_lineno, node.end_col_offset) + 1

    def offset(self, position: tuple[int, int]) -> int:
        return self.source.offset(position[0], position[1] - 1)

    def text(self, node: ast.AST, end_node: ast.AST | None = None) -> str:
        """The exact source of `node` (through `end_node`)."""
        return self.source.text[self.offset(self.start(node)):self.offset(self.end(end_node or node))]

    def expression(self, node: ast.AST) -> str:
        """The source of an expression, parenthesised unless it is atomic or already spans lines
        inside brackets of its own: safe to put anywhere an operand goes."""
        code = self.text(node)
        if isinstance(node, ATOMIC) and "\n" not in code and "\r" not in code:
            return code
        return f"({code})"

    def has_comment(self, node: ast.AST, end_node: ast.AST | None = None) -> bool:
        """A `#` comment inside the span of `node` (through `end_node`): a rewrite would drop it."""
        start, end = self.start(node), self.end(end_node or node)
        return any(start <= position < end for position in self.comments())

    def has_comment_after(self, node: ast.AST, end_node: ast.AST) -> bool:
        """A comment between the end of `node` and the end of `end_node`."""
        start, end = self.end(node), self.end(end_node)
        return any(start <= position < end for position in self.comments())

    def text_between(self, node: ast.AST, end_node: ast.AST) -> str:
        """The source from the end of `node` to the end of `end_node` (`(x, 1)` after a callee)."""
        return self.source.text[self.offset(self.end(node)):self.offset(self.end(end_node))]

    def line_has_comment(self, first: int, last: int) -> bool:
        return any(first <= line <= last for line, _ in self.comments())

    def comments(self) -> list[tuple[int, int]]:
        if self._comments is None:
            self._comments = []
            if "#" in self.source.text:
                try:
                    tokens = tokenize.generate_tokens(io.StringIO(self.source.text).readline)
                    self._comments = [(t.start[0], self.source.char_column(t.start[0], t.start[1]) + 1)
                                      for t in tokens if t.type == tokenize.COMMENT]
                except (tokenize.TokenError, SyntaxError):  # parsed already: not expected
                    self._comments = [(n, 1) for n, line in enumerate(self.source.text.splitlines(), 1)
                                      if "#" in line]
        return self._comments

    # -- edits -------------------------------------------------------------------------------
    def replace(self, node: ast.AST, content: str, end_node: ast.AST | None = None) -> Edit:
        (line, column), (end_line, end_column) = self.start(node), self.end(end_node or node)
        return Edit(line, column, end_line, end_column, content)

    def insert_at(self, position: tuple[int, int], content: str) -> Edit:
        return Edit(position[0], position[1], position[0], position[1], content)

    def add_keyword(self, call: ast.Call, argument: str) -> Edit:
        """Insert `argument` (e.g. "non_blocking=True") as the call's last argument, right after
        its current last one, so that a trailing comma or a comment after it stays put."""
        parts = [*call.args, *call.keywords]
        if not parts:
            line, column = self.end(call)
            return self.insert_at((line, column - 1), argument)  # just before `)`
        last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset))
        return self.insert_at(self.end(last), ", " + argument)

    def call_with_keywords(self, call: ast.Call, arguments: list[str]) -> str:
        """The source of `call` with `arguments` (`"device=d"`) added after its last argument;
        a call laid out one argument per line with a trailing comma gets one line each."""
        text = self.text(call)
        start = self.offset(self.start(call))
        parts = [*call.args, *call.keywords]
        if not parts:
            return text[:-1] + ", ".join(arguments) + text[-1:]  # `f()`: before the `)`
        last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset))
        cut = self.offset(self.end(last)) - start
        gap = text[cut:-1]  # between the last argument and `)`
        first_line = self.source.line(last.lineno)
        indent = first_line[:len(first_line) - len(first_line.lstrip())]
        if gap.lstrip(" \t").startswith(",") and "\n" in gap and first_line.lstrip().startswith(
                self.text(last).splitlines()[0]):
            after_line = cut + gap.index("\n") + 1  # keep a comment on the comma's line where it is
            added = "".join(f"{indent}{a},{self.newline}" for a in arguments)
            return text[:after_line] + added + text[after_line:]
        return text[:cut] + "".join(", " + a for a in arguments) + text[cut:]

    def indentation(self, statement: ast.stmt) -> str:
        """The whitespace before a statement that starts its line."""
        line = self.source.line(statement.lineno)
        return line[:len(line) - len(line.lstrip())]

    # -- names -------------------------------------------------------------------------------
    def spelling(self, qualified: str) -> str | None:
        """How this module spells `qualified` (`torch.nn.functional.softplus` -> `F.softplus`
        under `import torch.nn.functional as F`), or None when no import reaches it."""
        best: str | None = None
        for local, target in self.imports.visible().items():
            if target == qualified:
                return local
            if qualified.startswith(target + ".") and (best is None or len(local) < len(best)):
                best = local + qualified[len(target):]
        return best

    def reference(self, qualified: str) -> tuple[str, tuple[Edit, ...]]:
        """The module's spelling of `qualified`, and the edit adding `import <top package>` when
        it has none."""
        spelled = self.spelling(qualified)
        if spelled is not None:
            return spelled, ()
        return qualified, (self.import_edit(qualified.split(".")[0]),)

    def import_edit(self, module: str) -> Edit:
        """`import module` on its own line after the module's last top-level import (or its
        docstring, or at the top): every fix that needs it produces this same edit."""
        anchor = None
        body = self.tree.body
        for statement in body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                anchor = statement
        if anchor is None and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            anchor = body[0]  # the docstring
        if anchor is None:
            return self.insert_at((1, 1), f"import {module}{self.newline}")
        last = anchor.end_lineno
        if last < len(self.source.line_starts):  # a next line exists: insert at its start
            return self.insert_at((last + 1, 1), f"import {module}{self.newline}")
        line_end = len(self.source.line(last)) + 1
        return self.insert_at((last, line_end), f"{self.newline}import {module}")


def apply_edits(source: "SourceFile", edits: list[Edit]) -> str:
    """The text with non-overlapping edits applied (identical edits count once)."""
    text = source.text
    spans = sorted({(source.offset(e.line, e.column - 1), source.offset(e.end_line, e.end_column - 1), e.content)
                    for e in edits}, reverse=True)
    for start, end, content in spans:
        text = text[:start] + content + text[end:]
    return text


def overlaps(a: Edit, b: Edit) -> bool:
    """Two edits that cannot both apply: their spans intersect, or two different insertions at
    one point (their order would be a guess)."""
    if a == b:
        return False
    a_start, a_end = (a.line, a.column), (a.end_line, a.end_column)
    b_start, b_end = (b.line, b.column), (b.end_line, b.end_column)
    if a_start == a_end and b_start == b_end:
        return a_start == b_start
    if a_start == a_end:
        return b_start < a_start < b_end
    if b_start == b_end:
        return a_start < b_start < a_end
    return a_start < b_end and b_start < a_end
