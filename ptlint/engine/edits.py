"""Building fixes as text edits, at detection, from the `ast` nodes a rule matched.

The model is ruff's: a rule that finds a problem computes the replacement text right there, from
the source of the nodes it matched (so every byte it does not rewrite, comments and quotes
included, stays as it was), and attaches it to the finding as `Edit`s. Nothing re-parses or
re-derives the match later: the fixer only applies edits, the language server turns them into
`TextEdit`s, and the cache stores them like any other part of a finding.

`Edits` (one per file, `ctx.edits`) answers the questions every fix asks: the exact source of a
node, its span, whether a comment lies inside it, how this module spells `torch.softmax` where
the fix writes it (and the `import` to add when nothing spells it there: under an alias that is
free there when a parameter or local takes the name), and how to add a keyword argument to a call.

Fixes are right by construction where the text meets the code around it: every edit is padded
with a space where its text would otherwise run into a name or keyword beside it (`return(x)` ->
`return torch.expm1(h)`, never `returntorch...`: ruff's rule, a fix never glues two tokens), an
expression that replaces a node is parenthesised where its place needs it (an operand of a
tighter operator, the object of an attribute), operands and arguments taken from the source are
parenthesised where they need it (`expression`, `argument`: an unparenthesised tuple `a, b`, a
named expression, `yield`), and arguments are added after a last argument's own parentheses.
The structural check (ptlint.engine.structure) then verifies the result before anything is
written.
"""

from __future__ import annotations

import ast
import bisect
import io
import tokenize
from typing import TYPE_CHECKING, Callable

from ptlint.engine.finding import Edit
from ptlint.semantics.names import FREE

if TYPE_CHECKING:
    from ptlint.engine.source import SourceFile
    from ptlint.semantics.names import Names

# Expressions that never need parentheses when substituted into another expression (a tuple only
# when it has its own: `a, b` does).
ATOMIC = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant, ast.List, ast.Tuple, ast.Dict,
          ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.JoinedStr)

# Operator precedence, lowest first (the grammar's levels; ast.unparse keeps the same table).
(_NAMED, _TUPLE, _YIELD, _TEST, _OR, _AND, _NOT, _CMP, _BOR, _BXOR, _BAND, _SHIFT, _ARITH, _TERM, _FACTOR,
 _POWER, _AWAIT, _ATOM) = range(18)
_BINARY = {ast.BitOr: _BOR, ast.BitXor: _BXOR, ast.BitAnd: _BAND, ast.LShift: _SHIFT, ast.RShift: _SHIFT,
           ast.Add: _ARITH, ast.Sub: _ARITH, ast.Mult: _TERM, ast.MatMult: _TERM, ast.Div: _TERM,
           ast.FloorDiv: _TERM, ast.Mod: _TERM, ast.Pow: _POWER}


def precedence(node: ast.AST) -> int:
    """How tightly an expression (as parsed on its own, without parentheses around it) binds."""
    if isinstance(node, ast.NamedExpr):
        return _NAMED
    if isinstance(node, ast.Tuple):
        return _TUPLE
    if isinstance(node, (ast.Yield, ast.YieldFrom)):
        return _YIELD
    if isinstance(node, (ast.Lambda, ast.IfExp)):
        return _TEST
    if isinstance(node, ast.BoolOp):
        return _OR if isinstance(node.op, ast.Or) else _AND
    if isinstance(node, ast.UnaryOp):
        return _NOT if isinstance(node.op, ast.Not) else _FACTOR
    if isinstance(node, ast.Compare):
        return _CMP
    if isinstance(node, ast.BinOp):
        return _BINARY[type(node.op)]
    if isinstance(node, ast.Await):
        return _AWAIT
    if isinstance(node, ast.Starred):
        return _BOR
    return _ATOM


def needed(parent: ast.AST | None, node: ast.AST) -> int:
    """The lowest precedence an expression may have to stand, unparenthesised, where `node` is
    in `parent`."""
    if isinstance(parent, ast.BinOp):
        level = _BINARY[type(parent.op)]
        power = isinstance(parent.op, ast.Pow)  # right-associative
        return level + 1 if (node is parent.left) == power else level
    if isinstance(parent, ast.UnaryOp):
        return _NOT if isinstance(parent.op, ast.Not) else _FACTOR
    if isinstance(parent, ast.BoolOp):
        return (_OR if isinstance(parent.op, ast.Or) else _AND) + 1
    if isinstance(parent, ast.Compare):
        return _CMP + 1
    if isinstance(parent, (ast.Attribute, ast.Subscript)) and node is parent.value or \
            isinstance(parent, ast.Call) and node is parent.func or isinstance(parent, ast.Await):
        return _ATOM  # a primary: `(a + b).sum()`, `await (x or y)`
    if isinstance(parent, ast.Starred):
        return _BOR
    if isinstance(parent, ast.IfExp):
        return _TEST if node is parent.orelse else _OR
    if isinstance(parent, ast.comprehension):
        return _OR
    if isinstance(parent, (ast.Expr, ast.Return, ast.Assign, ast.AugAssign, ast.For, ast.AsyncFor)) or \
            isinstance(parent, ast.Subscript) and node is parent.slice:
        return _TUPLE  # `return a, b`, `x[i, j]`
    if isinstance(parent, (ast.JoinedStr, ast.FormattedValue)):
        return _ATOM  # inside an f-string: parenthesise anything that is not atomic
    return _TEST  # an argument, an element, a keyword's value, a condition...


def fits(expression: ast.AST, parent: ast.AST | None, node: ast.AST) -> bool:
    """Whether `expression` (parsed on its own) can stand, unparenthesised, where `node` is in
    `parent` and mean the same as in parentheses there."""
    if isinstance(expression, (ast.Yield, ast.YieldFrom)) and not isinstance(parent, (ast.Expr, ast.Assign,
                                                                                       ast.AugAssign)):
        return False  # `x = yield a` and `yield a` stand; `return yield a`, `for i in yield a` do not
    if isinstance(expression, ast.Constant) and isinstance(expression.value, (int, float, complex)) \
            and isinstance(parent, ast.Attribute) and node is parent.value:
        return False  # `1.real` is a float literal and a name
    return precedence(expression) >= needed(parent, node)


class Edits:
    def __init__(self, source: "SourceFile", tree: ast.Module, names: "Names",
                 parent: Callable[[ast.AST], ast.AST | None]) -> None:
        self.source = source
        self.tree = tree
        self.names = names  # the file's name resolver: what `torch` means where a fix writes it
        self.parent = parent  # the file's parent map (FileFacts.parent)
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
        """The source of an expression, parenthesised unless it is atomic and on one line: safe
        to put anywhere an operand goes (`a, b` becomes `(a, b)`)."""
        code = self.text(node)
        if isinstance(node, ATOMIC) and "\n" not in code and "\r" not in code and \
                not (isinstance(node, ast.Tuple) and not _enclosed(code)):
            return code
        return f"({code})"

    def argument(self, node: ast.AST) -> str:
        """The source of an expression, parenthesised where an argument, an element or a
        keyword's value could not be it as is: an unparenthesised tuple, a named expression,
        `yield`, a starred expression."""
        code = self.text(node)
        if precedence(node) > _YIELD and not isinstance(node, ast.Starred) or _enclosed(code):
            return code
        return f"({code})"

    # -- parentheses -------------------------------------------------------------------------
    def outer(self, node: ast.AST) -> tuple[int, int]:
        """The character offsets of `node` with the grouping parentheses around it (`((n))` in
        `zeros((n))`), not a call's own."""
        text = self.source.text
        start, end = self.offset(self.start(node)), self.offset(self.end(node))
        parent = self.parent(node)
        call_open = None
        if isinstance(parent, ast.Call) and node is not parent.func:
            call_open = self._skip_right(self.outer(parent.func)[1])
        while True:
            left, right = self._skip_left(start), self._skip_right(end)
            if left < 0 or right >= len(text) or text[left] != "(" or text[right] != ")" or left == call_open:
                return start, end
            start, end = left, right + 1

    def _skip_left(self, offset: int) -> int:
        """The index of the last character before `offset` that is not blank, a line break or a
        comment."""
        text = self.source.text
        index = offset - 1
        while index >= 0:
            char = text[index]
            if char in " \t\f\\":
                index -= 1
            elif char in "\r\n":
                index -= 1
                if index >= 0 and char == "\n" and text[index] == "\r":
                    index -= 1
                line = self._line_of(index)
                comment = self._comment_offsets().get(line)
                if comment is not None and comment <= index:
                    index = comment - 1
            else:
                return index
        return index

    def _skip_right(self, offset: int) -> int:
        """The index of the first character from `offset` on that is not blank, a line break, a
        line continuation or a comment."""
        text = self.source.text
        index = offset
        while index < len(text):
            char = text[index]
            if char in " \t\f\\\r\n":
                index += 1
            elif char == "#":
                while index < len(text) and text[index] not in "\r\n":
                    index += 1
            else:
                return index
        return index

    def _line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.source.line_starts, max(offset, 0))

    def _comment_offsets(self) -> dict[int, int]:
        """line -> the character offset where the comment on it starts."""
        if not hasattr(self, "_comment_starts"):
            self._comment_starts = {line: self.offset((line, column)) for line, column in self.comments()}
        return self._comment_starts

    def position(self, offset: int) -> tuple[int, int]:
        """(line, 1-based character column) of a character offset."""
        line = self._line_of(offset)
        return line, offset - self.source.line_starts[line - 1] + 1

    def grouped(self, node: ast.AST, content: str) -> str:
        """`content` (an expression) parenthesised if it cannot stand as is where `node` is."""
        try:
            parsed = ast.parse(content.strip(), mode="eval").body
        except SyntaxError:
            try:
                ast.parse(f"({content})", mode="eval")
            except SyntaxError:
                return content  # not an expression: the structural check judges the result
            return f"({content})"
        if _enclosed(content.strip()) or self.outer(node) != (self.offset(self.start(node)),
                                                              self.offset(self.end(node))):
            return content  # in parentheses already, its own or the code's
        return content if fits(parsed, self.parent(node), node) else f"({content})"

    def has_comment(self, node: ast.AST, end_node: ast.AST | None = None) -> bool:
        """A `#` comment inside the span of `node` (through `end_node`): a rewrite would drop it."""
        start, end = self.start(node), self.end(end_node or node)
        return any(start <= position < end for position in self.comments())

    def has_comment_after(self, node: ast.AST, end_node: ast.AST) -> bool:
        """A comment between the end of `node` and the end of `end_node`."""
        start, end = self.end(node), self.end(end_node)
        return any(start <= position < end for position in self.comments())

    def text_between(self, node: ast.AST, end_node: ast.AST) -> str:
        """The source from the end of `node` (and of its own parentheses) to the end of
        `end_node`: `(x, 1)` after a callee, also after `(torch.softmax)`."""
        return self.source.text[self.outer(node)[1]:self.offset(self.end(end_node))]

    def line_has_comment(self, first: int, last: int) -> bool:
        return any(first <= line <= last for line, _ in self.comments())

    def comments(self) -> list[tuple[int, int]]:
        """(line, 1-based character column) of every comment."""
        if self._comments is None:
            self._comments = [(line, column + 1) for line, column, _ in self.source.comments]
        return self._comments

    # -- edits -------------------------------------------------------------------------------
    def replace(self, node: ast.AST, content: str, end_node: ast.AST | None = None) -> Edit:
        """Replace `node` (through `end_node`) with `content`: an expression replacing an
        expression is parenthesised where its place needs it; the text is padded where it would
        run into a name beside it."""
        if end_node is None and isinstance(node, ast.expr):
            content = self.grouped(node, content)
        start, end = self.offset(self.start(node)), self.offset(self.end(end_node or node))
        return self._edit(start, end, content)

    def replace_grouped(self, node: ast.AST, content: str) -> Edit:
        """Replace `node` and the grouping parentheses around it (`alpha * (exp(h) - 1)` ->
        `alpha * expm1(h)`); `content` is parenthesised again if its place needs it."""
        start, end = self.outer(node)
        if (start, end) != (self.offset(self.start(node)), self.offset(self.end(node))):
            try:
                parsed = ast.parse(content.strip(), mode="eval").body
            except SyntaxError:
                parsed = None
            if parsed is None or not fits(parsed, self.parent(node), node):
                content = f"({content})"
        return self._edit(start, end, content)

    def insert_at(self, position: tuple[int, int], content: str) -> Edit:
        offset = self.offset(position)
        return self._edit(offset, offset, content)

    def _edit(self, start: int, end: int, content: str) -> Edit:
        """An edit of the characters `start:end`, padded with a space on a side where `content`
        would otherwise run into a name, keyword or number beside it."""
        text = self.source.text
        if content and start > 0 and _word_char(text[start - 1]) and (_word_char(content[0]) or content[0] in "'\""):
            content = " " + content
        if content and end < len(text) and _word_char(text[end]) and (_word_char(content[-1]) or content[-1] in "'\""):
            content = content + " "
        (line, column), (end_line, end_column) = self.position(start), self.position(end)
        return Edit(line, column, end_line, end_column, content)

    def last_argument_end(self, call: ast.Call) -> tuple[int, int] | None:
        """Where a new last argument goes: after the call's last argument and its own
        parentheses; None when the call has none, or only a generator expression without
        parentheses of its own (`f(x for x in y)`: no argument can be added as is)."""
        parts = [*call.args, *call.keywords]
        if not parts:
            return None
        last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset))
        if isinstance(last, ast.GeneratorExp) and self.end(last) == self.end(call):
            return None
        return self.after(last)

    def before(self, node: ast.AST) -> tuple[int, int]:
        """Where text goes to come right before `node`: before its own parentheses, if any."""
        return self.position(self.outer(node)[0])

    def after(self, node: ast.AST) -> tuple[int, int]:
        """Where text goes to come right after `node`: after its own parentheses, if any."""
        return self.position(self.outer(node)[1])

    def before_close(self, call: ast.Call) -> tuple[int, int]:
        """The position of a call's closing parenthesis."""
        line, column = self.end(call)
        return line, column - 1

    def add_keyword(self, call: ast.Call, argument: str) -> Edit:
        """Insert `argument` (e.g. "non_blocking=True") as the call's last argument, right after
        its current last one, so that a trailing comma or a comment after it stays put."""
        if not [*call.args, *call.keywords]:
            return self.insert_at(self.before_close(call), argument)  # just before `)`
        end = self.last_argument_end(call)
        if end is None:  # `f(x for x in y)`: the generator gets parentheses of its own
            return self.replace(call, self.call_with_keywords(call, [argument]))
        return self.insert_at(end, ", " + argument)

    def call_with_keywords(self, call: ast.Call, arguments: list[str]) -> str:
        """The source of `call` with `arguments` (`"device=d"`) added after its last argument;
        a call laid out one argument per line with a trailing comma gets one line each."""
        text = self.text(call)
        start = self.offset(self.start(call))
        parts = [*call.args, *call.keywords]
        if not parts:
            return text[:-1] + ", ".join(arguments) + text[-1:]  # `f()`: before the `)`
        last = max(parts, key=lambda n: (n.end_lineno, n.end_col_offset))
        end = self.last_argument_end(call)
        if end is None:  # `f(x for x in y)` -> `f((x for x in y), device=d)`
            opening = self.offset(self.start(last)) - start
            return text[:opening] + "(" + text[opening:] + "".join(", " + a for a in arguments) + ")"
        cut = self.offset(end) - start
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
    def spelling(self, qualified: str, at: ast.AST | None = None) -> str | None:
        """How this module spells `qualified` at the node `at` (by default: where the traversal
        is): `torch.nn.functional.softplus` -> `F.softplus` under `import torch.nn.functional
        as F`; None when no import that means itself there reaches it (none, or a parameter or
        local of that name hides it)."""
        best: str | None = None
        for local, target in self.names.visible(at).items():
            if target == qualified:
                return local
            spelled = local + qualified[len(target):]
            if qualified.startswith(target + ".") and (best is None or len(spelled) < len(best)):
                best = spelled
        return best

    def reference(self, qualified: str, at: ast.AST | None = None) -> tuple[str, tuple[Edit, ...]] | None:
        """The module's spelling of `qualified` at the node `at` (by default: where the traversal
        is), with the edit adding an import when nothing spells it there: `import torch`, or,
        where `torch` means something else at `at` (a parameter `torch=None`, `import numpy as
        torch`), `import torch as torch_` under the first alias that nothing binds. None when no
        name is free for it (a star import may bind any): no fix then."""
        spelled = self.spelling(qualified, at)
        if spelled is not None:
            return spelled, ()
        top, _, rest = qualified.partition(".")
        for alias in (top, f"{top}_", f"_{top}", f"{top}_module", *(f"{top}{n}" for n in range(2, 10))):
            if self.names.meaning(alias, at).kind == FREE and self.names.meaning(alias, self.tree).kind == FREE:
                return alias + ("." + rest if rest else ""), (self.import_edit(top, alias),)
        return None

    def import_edit(self, module: str, alias: str | None = None) -> Edit:
        """`import module` (`import module as alias`) on its own line after the module's last
        top-level import (or its docstring, or at the top): every fix that needs it produces this
        same edit."""
        if alias is not None and alias != module:
            module = f"{module} as {alias}"
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


def _word_char(char: str) -> bool:
    """A character that continues a name, keyword or number."""
    return char.isalnum() or char == "_"


def _enclosed(code: str) -> bool:
    """Whether `code` is wholly inside one pair of brackets of its own: `(a, b)`, `[x]`, not
    `(a), (b)`."""
    if not code or code[0] not in "([{":
        return False
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError):
        return False
    depth = 0
    for index, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
            if depth == 0:
                return index == len(tokens) - 1
    return False


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
