"""Reading Python source exactly as the interpreter would: encoding cookie, BOM, any line ending.

The one home of two facts every layer needs: where lines end (`line_starts`, `split_lines`: at
`\\r\\n`, `\\r` or `\\n` only, as Python's tokenizer and LSP count them) and where comments are
(`comments`: the tokenizer's, so that a `#` inside a string is none).
"""

from __future__ import annotations

import codecs
import io
import os
import re
import stat
import tokenize

# Python's tokenizer ends lines at \r\n, \r or \n only (str.splitlines also splits on \x0c etc.).
LINE_END = re.compile(r"\r\n|\r|\n")


def line_starts(text: str) -> list[int]:
    """The offset where each line of `text` starts (the first is 0; a final line end starts an
    empty last line)."""
    return [0, *(match.end() for match in LINE_END.finditer(text))]


def split_lines(text: str) -> list[str]:
    """The lines of `text`, each with its line end (the last may have none); "" has no lines."""
    out, start = [], 0
    for match in LINE_END.finditer(text):
        out.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def comments(text: str) -> list[tuple[int, int, str]]:
    """Every comment: (1-based line, 0-based character column, its text from `#`). Past a point
    the tokenizer cannot read (not expected in a file that parses), the first `#` of each later
    line counts."""
    return _tokens(text)[0]


def _tokens(text: str) -> tuple[list[tuple[int, int, str]], set[int]]:
    """The comments, and the lines that end inside a token (a string spanning lines)."""
    found: list[tuple[int, int, str]] = []
    inside: set[int] = set()
    done = 0  # lines the tokenizer finished
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.start[1], token.string))
            elif token.end[0] > token.start[0] and token.type not in (tokenize.NEWLINE, tokenize.NL):
                inside.update(range(token.start[0], token.end[0]))
            done = max(done, token.end[0] - 1)
    except (tokenize.TokenError, SyntaxError):
        seen = {line for line, _, _ in found}
        for number, line in enumerate(split_lines(text)[done:], done + 1):
            line = line.rstrip("\r\n")
            if "#" in line and number not in seen:
                found.append((number, line.index("#"), line[line.index("#"):]))
    return found, inside


NOTEBOOK_SUFFIX = ".ipynb"


def is_notebook(path: str) -> bool:
    """A Jupyter notebook (checked cell by cell) rather than a Python file."""
    return path.endswith(NOTEBOOK_SUFFIX)


class SourceError(Exception):
    """A file that cannot be read as Python text; the message is one line for the user."""


class SourceFile:
    def __init__(self, path: str, text: str, encoding: str = "utf-8", bom: bool = False) -> None:
        self.path = path  # as the user gave it
        self.text = text  # decoded, BOM removed
        self.encoding = encoding
        self.bom = bom
        self._line_starts: list[int] | None = None
        self._comments: list[tuple[int, int, str]] | None = None

    def __repr__(self) -> str:
        return f"SourceFile(path={self.path!r}, encoding={self.encoding!r}, bom={self.bom!r})"

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return self._line_starts

    @property
    def comments(self) -> list[tuple[int, int, str]]:
        """`comments(self.text)`, computed once."""
        if self._comments is None:
            self._comments = comments(self.text) if "#" in self.text else []
        return self._comments

    def can_end_with_comment(self, lineno: int) -> bool:
        """Whether a comment added at the end of a 1-based line would be one: not when the line
        ends inside a string that spans lines, or with a backslash that continues it."""
        if lineno < 1 or lineno > len(self.line_starts):
            return False
        if self.line(lineno).endswith("\\") and not any(line == lineno for line, _, _ in self.comments):
            return False
        return lineno not in _tokens(self.text)[1]

    def line(self, lineno: int) -> str:
        """The text of a 1-based line, without its line ending."""
        starts = self.line_starts
        if lineno < 1 or lineno > len(starts):
            return ""
        start = starts[lineno - 1]
        end = starts[lineno] if lineno < len(starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def char_column(self, lineno: int, byte_col: int) -> int:
        """`ast` gives columns as UTF-8 byte offsets; users and editors count characters."""
        line = self.line(lineno)
        if line.isascii():
            return byte_col
        return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def offset(self, lineno: int, char_col: int) -> int:
        """Character offset into `text` of a 1-based line and 0-based character column."""
        return self.line_starts[lineno - 1] + char_col


def decode_source(data: bytes, path: str) -> SourceFile:
    """Decode bytes the way Python does (PEP 263 cookie, UTF-8 BOM); refuse binary content."""
    if b"\x00" in data:
        raise SourceError("binary content (NUL bytes), not Python source")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        message = str(getattr(exc, "msg", exc))
        if "invalid or missing" in message:  # not UTF-8, and no cookie says what it is
            raise SourceError("cannot decode as utf-8 and no coding cookie names the encoding") from None
        raise SourceError(f"bad encoding declaration: {message}") from None
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise SourceError(f"cannot decode as {encoding}: {_short(exc)}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return SourceFile(path=path, text=text, encoding="utf-8" if encoding == "utf-8-sig" else encoding, bom=bom)


def encode_source(source: SourceFile, text: str) -> bytes:
    """Encode new text with the file's own encoding and BOM, so untouched bytes stay identical."""
    data = text.encode(source.encoding)
    return codecs.BOM_UTF8 + data if source.bom else data


def read_bytes(path: str) -> bytes:
    """A file's bytes; SourceError with a one-line reason."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # opening a FIFO would block for ever
            raise SourceError("not a regular file (a FIFO, socket or device), skipped")
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SourceError(_short(exc)) from None


def _short(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower() if exc.strerror != exc.strerror.lower() else exc.strerror
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid byte {exc.object[exc.start:exc.start + 1]!r} at offset {exc.start}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
