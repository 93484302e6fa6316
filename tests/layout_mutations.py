"""Layout mutations of Python source, for fuzzing the checker and the fixes (tests/engine/test_fuzz.py,
bench/fuzz.py): each takes text and a Random and returns new text; callers keep a result only if it
still parses. Most keep what the code means (rename the torch alias, nest, add comments, break
lines inside brackets, odd spacing, tabs, extra parentheses, a keyword glued to a parenthesised
operand, a parameter that shadows a module the function does not use, a loop over a starred
tuple), so a fix made on the mutated code must behave as the fix of the original: LAYOUT_ONLY.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize
import warnings


def parses(text: str) -> bool:
    return _tree(text) is not None


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _insert_at(text: str, spots: list[tuple[int, str]]) -> str:
    for offset, piece in sorted(spots, reverse=True):
        text = text[:offset] + piece + text[offset:]
    return text


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _insert_at(text: str, spots: list[tuple[int, str]]) -> str:
    for offset, piece in sorted(spots, reverse=True):
        text = text[:offset] + piece + text[offset:]
    return text


# -- mutations: each takes text and a Random, returns new text (kept only if it still parses) ------

def rename_alias(text: str, rng: random.Random) -> str:
    """`import torch as T`, and every use of the name `torch` (not `x.torch`, not in strings or
    comments) spelled `T`."""
    alias = rng.choice(["T", "th", "pt", "torch_"])
    if not re.search(r"^import torch$", text, re.M):
        return text
    text = re.sub(r"^(\s*)import torch$", rf"\1import torch as {alias}", text, flags=re.M)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    starts = _offsets(text)
    changes = []
    previous = None
    for token in tokens:
        if token.type == tokenize.NAME and token.string == "torch" and not (
                previous is not None and previous.type == tokenize.OP and previous.string == ".") and \
                not token.line.lstrip().startswith(("import ", "from ")):
            offset = starts[token.start[0] - 1] + token.start[1]
            changes.append((offset, offset + len("torch")))
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token
    for start, end in reversed(changes):
        text = text[:start] + alias + text[end:]
    return text


def nest(text: str, rng: random.Random) -> str:
    # Not in a class body: the functions in it do not see its names (an `import torch` there
    # means nothing to them), so that nesting would change what the code means.
    header = rng.choice(["if True:", "def wrapper():", "if not running:", "for _i in range(1):",
                         "with context():", "try:", "while running:", "async def wrapper():"])
    indent = rng.choice(["    ", "  ", "        "])
    body = [(indent + line if line.strip() else line) for line in text.splitlines(keepends=True)]
    lines = [header + "\n"] + body
    if header == "try:":
        lines.append("finally:\n" + indent + "pass\n")
    if not any(line.strip() for line in body):
        lines.append(indent + "pass\n")
    return "".join(lines)


def comments_and_blank_lines(text: str, rng: random.Random) -> str:
    starts = _offsets(text)
    spots = []
    for index in range(len(starts) - 1):
        if rng.random() < 0.3:
            line = text[starts[index]:starts[index + 1]]
            indent = line[:len(line) - len(line.lstrip(" \t"))] if line.strip() else ""
            spots.append((starts[index], rng.choice(["\n", f"{indent}# a comment (x.item())\n", "   \n",
                                                     f"{indent}#\n\n"])))
    return _insert_at(text, spots)


def breaks_inside_brackets(text: str, rng: random.Random) -> str:
    try:
        tokens = _tokens(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    starts = _offsets(text)
    depth, spots = 0, []
    for token in tokens:
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        if depth > 0 and token.type == tokenize.OP and token.string in ",([{" and rng.random() < 0.5:
            offset = starts[token.end[0] - 1] + token.end[1]
            spots.append((offset, rng.choice(["\n", "\n        ", "  # why\n    ", "\n\n  "])))
    return _insert_at(text, spots)


def odd_spacing(text: str, rng: random.Random) -> str:
    try:
        tokens = _tokens(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    starts = _offsets(text)
    spots = []
    for token in tokens:
        if token.type == tokenize.OP and rng.random() < 0.4:
            before = starts[token.start[0] - 1] + token.start[1]
            line_start = starts[token.start[0] - 1]
            if text[line_start:before].strip():  # never in the indentation
                spots.append((before, rng.choice([" ", "  ", "\t"])))
            spots.append((starts[token.end[0] - 1] + token.end[1], rng.choice([" ", "   ", ""])))
    return _insert_at(text, spots)


def tabs(text: str, rng: random.Random) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip(" ")
        width = len(line) - len(stripped)
        out.append("\t" * (width // 4) + " " * (width % 4) + stripped)
    return "".join(out)


# -- mutations that need the tree: positions of nodes --------------------------------------------

def _tree(text: str) -> ast.Module | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


class _Spans:
    """Character offsets of node positions (ast counts UTF-8 bytes) in `text`, whose lines end as
    Python's tokenizer ends them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(self, line: int, column: int) -> int:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        content = self.text[start:end]
        return start + (column if content.isascii() else len(content.encode()[:column].decode(errors="replace")))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)


def _replace(text: str, changes: list[tuple[int, int, str]]) -> str:
    """Apply non-overlapping (start, end, content) changes, skipping any that overlaps one kept."""
    kept: list[tuple[int, int, str]] = []
    for change in sorted(changes, key=lambda c: (c[0], -c[1])):
        if kept and change[0] < kept[-1][1]:
            continue
        kept.append(change)
    for start, end, content in reversed(kept):
        text = text[:start] + content + text[end:]
    return text


_STORE = (ast.Store, ast.Del)


def _wrappable(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """An expression that parentheses around it leave meaning the same."""
    if not isinstance(node, ast.expr) or isinstance(node, (ast.Starred, ast.Slice)):
        return False
    if isinstance(node, ast.Tuple) and any(isinstance(e, (ast.Slice, ast.Starred)) for e in node.elts):
        return False  # `x[:, 0]`, `(*a, b)`: a slice or a star needs the tuple bare
    if isinstance(getattr(node, "ctx", None), _STORE):
        return False
    parent = parents.get(id(node))
    while parent is not None:
        if isinstance(parent, (ast.JoinedStr, ast.FormattedValue, ast.MatchValue, ast.match_case)):
            return False  # inside an f-string or a match pattern
        parent = parents.get(id(parent))
    return True


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def extra_parentheses(text: str, rng: random.Random) -> str:
    """`(x)`, `((n))` around expressions: `torch.zeros((n))`, `f((a), b)`."""
    tree = _tree(text)
    if tree is None:
        return text
    spans, parents = _Spans(text), _parents(tree)
    changes = []
    for node in ast.walk(tree):
        if _wrappable(node, parents) and rng.random() < 0.25:
            start, end = spans.span(node)
            opening, closing = ("((", "))") if rng.random() < 0.3 else ("(", ")")
            changes.append((start, start, opening))
            changes.append((end, end, closing))
    changes.sort(key=lambda c: c[0])
    for offset, _, piece in sorted(changes, key=lambda c: c[0], reverse=True):
        text = text[:offset] + piece + text[offset:]
    return text


# keyword -> the operand that follows it in each node type
def _after_keyword(node: ast.AST) -> list[tuple[str, ast.expr]]:
    if isinstance(node, ast.Return) and node.value is not None:
        return [("return", node.value)]
    if isinstance(node, (ast.Yield, ast.YieldFrom)) and node.value is not None:
        return [("yield", node.value)] if isinstance(node, ast.Yield) else []
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return [("not", node.operand)]
    if isinstance(node, ast.Await):
        return [("await", node.value)]
    if isinstance(node, ast.Assert):
        return [("assert", node.test)]
    if isinstance(node, ast.IfExp):
        return [("else", node.orelse), ("if", node.test)]
    if isinstance(node, ast.Compare):
        words = {ast.In: "in", ast.NotIn: "in", ast.Is: "is", ast.IsNot: "not"}
        return [(words[type(op)], right) for op, right in zip(node.ops, node.comparators) if type(op) in words]
    if isinstance(node, ast.BoolOp):
        return [("and" if isinstance(node.op, ast.And) else "or", value) for value in node.values[1:]]
    if isinstance(node, (ast.For, ast.comprehension)):
        return [("in", node.iter)]
    if isinstance(node, ast.Delete):
        return [("del", target) for target in node.targets[:1]]
    return []


def keyword_glued_group(text: str, rng: random.Random) -> str:
    """`return(x + 1)`, `not(a)`, `in(xs)`: the operand after a keyword in parentheses, with no
    space between: a fix that drops the parentheses must not glue the keyword to its text."""
    tree = _tree(text)
    if tree is None:
        return text
    spans, parents = _Spans(text), _parents(tree)
    changes = []
    for node in ast.walk(tree):
        for word, operand in _after_keyword(node):
            if not _wrappable(operand, parents) and not isinstance(node, ast.Delete) or rng.random() < 0.3:
                continue
            start, end = spans.span(operand)
            gap = text[:start]
            stripped = gap.rstrip(" \t")
            if not stripped.endswith(word) or stripped == gap:
                continue
            changes.append((len(stripped), end, "(" + text[start:end] + ")"))
    return _replace(text, changes)


_MODULE_NAMES = ("torch", "F", "nn", "T", "th", "np", "functional")


def shadowing_parameter(text: str, rng: random.Random) -> str:
    """`def step(model, lr, *, torch=None)`: a parameter named like a module the file imports,
    which the function does not use: a fix there must name the module another way."""
    tree = _tree(text)
    if tree is None:
        return text
    imported = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    spans = _Spans(text)
    changes = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or rng.random() < 0.2:
            continue
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
            {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        candidates = [name for name in _MODULE_NAMES if name in imported and name not in used]
        if not candidates:
            continue
        name = rng.choice(candidates)
        close = _closing_parenthesis(text, spans, node)
        if close is None:
            continue
        arguments = node.args
        star = arguments.vararg is not None or arguments.kwonlyargs
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        if arguments.kwarg is not None:
            continue  # `**kwargs` must come last
        prefix = ", " if any(a is not None for a in every) else ""
        changes.append((close, close, f"{prefix}{'' if star else '*, '}{name}=None"))
    return _replace(text, changes)


def _closing_parenthesis(text: str, spans: _Spans, node: ast.AST) -> int | None:
    """The offset of the `)` that ends a def's parameters."""
    start = spans.offset(node.lineno, node.col_offset)
    body = spans.offset(node.body[0].lineno, node.body[0].col_offset)
    header = text[start:body]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(header).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []
    depth = 0
    local = _Spans(header)
    for token in tokens:
        if token.type == tokenize.OP and token.string == "(":
            depth += 1
        elif token.type == tokenize.OP and token.string == ")":
            depth -= 1
            if depth == 0:
                return start + local.offset(token.start[0], len(token.line[:token.start[1]].encode()))
    return None


def tuple_operands(text: str, rng: random.Random) -> str:
    """`for p in *model.parameters(),:` -- a loop over an unparenthesised tuple of the same items."""
    tree = _tree(text)
    if tree is None:
        return text
    spans = _Spans(text)
    changes = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor)) and rng.random() < 0.6 and \
                not isinstance(node.iter, (ast.Tuple, ast.Starred)):
            start, end = spans.span(node.iter)
            changes.append((start, end, "*" + text[start:end] + ","))
    return _replace(text, changes)


# every mutation; those that keep what the code means (a fix made on the result must behave as the
# fix of the original)
MUTATIONS = [rename_alias, nest, comments_and_blank_lines, breaks_inside_brackets, odd_spacing, tabs,
             extra_parentheses, keyword_glued_group, shadowing_parameter, tuple_operands]
LAYOUT_ONLY = [rename_alias, nest, odd_spacing, tabs, extra_parentheses, keyword_glued_group, shadowing_parameter,
               tuple_operands]
