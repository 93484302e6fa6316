"""Small questions rules ask of `ast` nodes, answered the same way everywhere, and the kinds of
node they ask about. Nothing here depends on what a name means (ptlint.semantics.names) or on
the file being walked: only on the nodes.
"""

from __future__ import annotations

import ast
import re
import warnings

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)  # a new function scope (loops start afresh)
# Definitions: their bodies run when called (or, for a class, where it is defined), not where
# they stand in the code around them.
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
STATEMENT_LOOPS = (ast.For, ast.AsyncFor, ast.While)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SELF_NAMES = ("self", "cls")  # the first parameter of a method or class method


# PyTorch before 0.4 spelled `non_blocking=True` as `async=True` (`x.cuda(async=True)`): a keyword
# Python 3.7 made a syntax error, still in old training scripts that run on their own old Python.
LEGACY_ASYNC_KEYWORD = re.compile(r"(?<=[(,])(\s*)async(?=\s*=[^=])")


def parse_python(text: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, quietly (invalid escape sequences are not ours to report), that also reads old
    training scripts as the Python they ran on: the legacy `async=` keyword argument as the
    `non_blocking=` it became (the text is parsed again with `Async=` in its place, the same
    length, and the keyword is renamed in the tree), and Python 2's `print x` statement as the
    call `print(x)` (`_print_calls`). Every position holds. A text that fails otherwise raises the
    SyntaxError of what else fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=filename, type_comments=False)
        except SyntaxError:
            legacy = LEGACY_ASYNC_KEYWORD.sub(r"\1Async", text) if "async" in text else text
            if "print" in legacy:
                legacy = _print_calls(legacy)
            if legacy == text:
                raise
            tree = ast.parse(legacy, filename=filename, type_comments=False)  # its error: what else fails
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "Async":
            node.arg = "non_blocking"
    return tree


def _print_calls(text: str) -> str:
    """Python 2's `print x, y` statements as calls, `print(x, y)`, each position kept: the space
    after `print` becomes `(` and `)` closes the statement after its last token (a comment after
    it moves one column); a bare `print` becomes `print()`. `print >>f, x` and text the tokenizer
    refuses are left as they are."""
    import io
    import tokenize

    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (line index, column, text to put there), or a replaced space
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    starts = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING)
    for index, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string != "print":
            continue
        before = next((t for t in reversed(tokens[:index]) if t.type != tokenize.COMMENT), None)
        if before is not None and before.type not in starts and before.string not in (":", ";"):
            continue  # not where a statement starts
        after = tokens[index + 1]  # (the tokens end with ENDMARKER)
        if after.type == tokenize.OP and after.string not in ("-", "+", "~", "[", "{"):
            continue  # already a call (`print(x)`), or `print` used as a name (`print = log`)
        row, column = token.end
        if after.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            edits.append((row - 1, column, "()"))  # a bare `print`
            continue
        if lines[row - 1][column:column + 1] != " ":
            continue  # `print"x"`: no space to turn into `(`
        end = next(i for i in range(index + 1, len(tokens))
                   if tokens[i].type in (tokenize.NEWLINE, tokenize.ENDMARKER) or tokens[i].string == ";")
        last = next(t for t in reversed(tokens[index + 1:end]) if t.type not in (tokenize.COMMENT, tokenize.NL))
        edits.append((row - 1, column, "(\0"))  # the space becomes `(`
        edits.append((last.end[0] - 1, last.end[1], ")"))
    for row, column, piece in sorted(edits, reverse=True):
        line = lines[row]
        lines[row] = line[:column] + "(" + line[column + 1:] if piece == "(\0" else line[:column] + piece + line[column:]
    return "".join(lines)


def method_name(node: ast.AST) -> str | None:
    """`x.item()` -> "item"; None when `node` is not a call of an attribute."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    """The argument passed at `position` or as `name=`."""
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[: position + 1]):
        return call.args[position]
    return keyword(call, name)


def is_constant(node: ast.AST, value: object) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is type(value) and node.value == value


def parameter_names(args: ast.arguments) -> list[str]:
    """Every name a def or lambda binds for its parameters: `a, /, b, *c, d, **e`."""
    every = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
    return [a.arg for a in every if a is not None]


def callee_name(func: ast.AST) -> str:
    """The identifier a call is made through, in lower case: `self.model` -> "model", `net` ->
    "net"; "" for anything else."""
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name.lower()


def dotted(node: ast.AST) -> str | None:
    """`self.model.device` -> "self.model.device"; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def is_plain_python_value(node: ast.AST) -> bool:
    """Literals and displays: never a tensor."""
    return isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.JoinedStr,
                             ast.ListComp, ast.DictComp, ast.SetComp))


def name_words(node: ast.AST) -> set[str]:
    """Lower-case words of the names and attributes in an expression (`train_loader` ->
    {"train_loader", "train", "loader"})."""
    out: set[str] = set()
    for child in ast.walk(node):
        name = child.id if isinstance(child, ast.Name) else child.attr if isinstance(child, ast.Attribute) else None
        if name:
            lower = name.lower()
            out.add(lower)
            out.update(part for part in lower.split("_") if part)
    return out


def calls_in(statements: list[ast.AST], stop_at: tuple[type, ...] = DEFINITIONS):
    """The calls under `statements`, not entering nodes of the `stop_at` types (by default
    nested functions and classes)."""
    for statement in statements:
        if type(statement) in stop_at:
            continue
        for node in walk(statement, stop_at):
            if type(node) is ast.Call:
                yield node


def own_attribute(node: ast.AST) -> str | None:
    """`self.x` (or `cls.x`) -> "x"; None for anything else."""
    return node.attr if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
        and node.value.id in SELF_NAMES else None


def chain_head(node: ast.AST) -> ast.Name | None:
    """The name at the head of a chain of calls, attributes and subscripts: `x` of `x.a[0].f()`."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node if isinstance(node, ast.Name) else None


def root_name(node: ast.AST) -> str | None:
    """The name a value derives from: `x` of `x.a[0].f()`, of `x * 2`."""
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.BinOp)):
        node = node.func if isinstance(node, ast.Call) else node.left if isinstance(node, ast.BinOp) else node.value
    return node.id if isinstance(node, ast.Name) else None


def body_nodes(statements: list[ast.stmt], stop_at: tuple[type, ...] = DEFINITIONS) -> list[ast.AST]:
    """Every node under `statements`; nodes of the `stop_at` types are listed but not entered
    (by default nested functions and classes, whose bodies do not run here)."""
    out: list[ast.AST] = []
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        out.append(node)
        if not isinstance(node, stop_at):
            pending.extend(ast.iter_child_nodes(node))
    return out


def built_string(node: ast.AST) -> bool:
    """A string constant, or one built from them (`"%11s" * 2 + "%11.4g" * 5`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return built_string(node.left) and built_string(node.right)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = node.left, node.right
        return built_string(left) and isinstance(right, ast.Constant) and type(right.value) is int \
            or built_string(right) and isinstance(left, ast.Constant) and type(left.value) is int
    return False


def block_of(statement: ast.AST | None, holder: ast.AST | None) -> tuple[list[ast.stmt], int] | None:
    """The block of `holder` (its body, `else` or `finally`) that holds `statement`, and the index
    of `statement` there; None when `holder` holds it in no block."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(holder, field, None)
        if isinstance(block, list):
            for index, candidate in enumerate(block):
                if candidate is statement:
                    return block, index
    return None


def class_family(cls: ast.ClassDef, local: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The class and its bases found in `local` (name -> class of this file), transitively."""
    family, pending = [], [cls]
    while pending:
        current = pending.pop()
        if current in family:
            continue
        family.append(current)
        pending.extend(local[b.id] for b in current.bases if isinstance(b, ast.Name) and b.id in local)
    return family


# Fields that never hold a node: names and flags, and the operator and context singletons.
_NOT_NODE_FIELDS = {"ctx", "op", "ops", "id", "attr", "arg", "kind", "type_comment", "level", "module", "asname",
                    "is_async", "conversion", "simple", "tag", "kwd_attrs", "name", "names", "rest"}
_FIELDS: dict[type, tuple[str, ...]] = {}  # a node type -> its fields that may hold nodes (_fields_of)


def _fields_of(kind: type) -> tuple[str, ...]:
    fields = _FIELDS[kind] = tuple(f for f in kind._fields if f not in _NOT_NODE_FIELDS)
    return fields


def walk(root: ast.AST, stop_at: tuple[type, ...] = ()):
    """Every node under `root` (itself included), in no particular order: `ast.walk` without its
    per-node generator of fields, for the analyses that look at every node of a large file.
    Nodes of a type in `stop_at` are given but not entered (unless `root` is one)."""
    pending = [root]
    pop, append = pending.pop, pending.append
    node_type = ast.AST
    fields_of = _FIELDS
    while pending:
        node = pop()
        yield node
        kind = type(node)
        if stop_at and node is not root and kind in stop_at:
            continue
        fields = fields_of.get(kind)
        if fields is None:  # (not `or`: a node with no fields, `ast.Load`, has an empty tuple)
            fields = _fields_of(kind)
        for field in fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:  # (a loop, not a generator per list: a quarter faster)
                    if isinstance(item, node_type):
                        append(item)
            elif isinstance(value, node_type):
                append(value)


def def_key(function: ast.AST, parent_of) -> str:
    """A def's (or a class's) name in its module, through the classes and functions around it
    (`Trainer.step`, `main.closure`): how the project model names it across files."""
    parts = [function.name]
    parent = parent_of(function)
    while parent is not None and not isinstance(parent, ast.Module):
        if isinstance(parent, (*FUNCTION_DEFS, ast.ClassDef)):
            parts.append(parent.name)
        parent = parent_of(parent)
    return ".".join(reversed(parts))


def is_placeholder(function: ast.AST) -> bool:
    """A def whose body does nothing a subclass must keep (`pass`, `...`, a docstring, `raise
    NotImplementedError`, `return None`): a hook for subclasses to fill, as a base trainer's
    `after_step`; or an `@abstractmethod`."""
    if any((d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", "")) == "abstractmethod"
           for d in function.decorator_list):
        return True
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return True
    if len(body) != 1:
        return False
    only = body[0]
    if isinstance(only, ast.Pass):
        return True
    if isinstance(only, ast.Return):
        return only.value is None or (isinstance(only.value, ast.Constant) and only.value.value is None)
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False


def is_main_test(test: ast.AST) -> bool:
    """`__name__ == "__main__"` (either way round): the test of a script's start."""
    return isinstance(test, ast.Compare) and any(
        isinstance(side, ast.Name) and side.id == "__name__" for side in (test.left, *test.comparators))
