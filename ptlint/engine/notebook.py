"""Reading a Jupyter notebook: its cells and where each code cell's source sits in the file.

nbformat reads and validates the document. Each cell's `source` is also located in the raw JSON
text (`_source_spans`), so that a fix can later replace only those bytes (ptlint.run.notebook).
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from typing import Iterable

from ptlint.engine.source import SourceError, line_starts, split_lines


class NotebookError(SourceError):
    """A notebook that cannot be read; the message is one line."""


# -- reading ----------------------------------------------------------------------------------

@dataclass
class Cell:
    number: int  # 1-based among all cells
    kind: str  # "code", "markdown", "raw"
    source: str
    span: tuple[int, int]  # where the JSON value of "source" lies in Notebook.text
    pieces: list[tuple[int, int]]  # the JSON strings that make it up (one, or one per line)


@dataclass
class Notebook:
    path: str
    text: str  # the file, decoded
    cells: list[Cell]
    python: bool  # the kernel's language is Python (or unstated)
    bom: bool = False

    @property
    def code_cells(self) -> list[Cell]:
        return [cell for cell in self.cells if cell.kind == "code"] if self.python else []

    def cell(self, number: int) -> Cell | None:
        return self.cells[number - 1] if 1 <= number <= len(self.cells) else None

    def encoded(self, text: str | None = None) -> bytes:
        data = (self.text if text is None else text).encode("utf-8")
        return b"\xef\xbb\xbf" + data if self.bom else data

    def with_sources(self, sources: dict[int, str]) -> str:
        """The notebook's text with the `source` of the given cells replaced, every other byte kept."""
        text = self.text
        for number in sorted(sources, reverse=True):  # from the end, so earlier spans stay valid
            cell = self.cells[number - 1]
            start, end = cell.span
            text = text[:start] + self._encode_source(cell, sources[number]) + text[end:]
        return text

    def _encode_source(self, cell: Cell, source: str) -> str:
        old = self.text[cell.span[0]:cell.span[1]]
        # keep the file's escaping: nbformat writes UTF-8 as is, other tools write \\u escapes
        escaped = bool(re.search(r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])", old))

        def dump(value: str) -> str:
            return json.dumps(value, ensure_ascii=escaped)

        if old.startswith('"'):
            return dump(source)
        lines = split_lines(source)
        if not lines:
            return "[]"
        if cell.pieces:
            first, last = cell.pieces[0], cell.pieces[-1]
            opening = self.text[cell.span[0] + 1:first[0]]
            closing = self.text[last[1]:cell.span[1] - 1]
            separator = self.text[first[1]:cell.pieces[1][0]] if len(cell.pieces) > 1 else "," + opening
        else:  # an empty list: indent as Jupyter does, one step deeper than the "source" key
            line_start = self.text.rfind("\n", 0, cell.span[0]) + 1
            indent = re.match(r"[ \t]*", self.text[line_start:]).group(0)
            opening, closing = "\n" + indent + " ", "\n" + indent
            separator = "," + opening
        return "[" + opening + separator.join(dump(line) for line in lines) + closing + "]"

    def raw_position(self, number: int, line: int, column: int) -> tuple[int, int]:
        """The 1-based (line, column) in the .ipynb file of a cell's 1-based line and column:
        where code scanning and review annotations show the file."""
        cell = self.cells[number - 1]
        starts = line_starts(cell.source)
        index = min(max(line, 1), len(starts)) - 1
        offset = min(starts[index] + max(column, 1) - 1, len(cell.source))
        raw = cell.span[0]
        consumed = 0
        for position, (start, end) in enumerate(cell.pieces):
            inner = self.text[start + 1:end - 1]
            length = len(json.loads(self.text[start:end]))
            if offset < consumed + length or position == len(cell.pieces) - 1:
                raw = start + 1 + _raw_index(inner, offset - consumed)
                break
            consumed += length
        line_start = self.text.rfind("\n", 0, raw) + 1
        return self.text.count("\n", 0, raw) + 1, raw - line_start + 1


def _raw_index(inner: str, count: int) -> int:
    """Index in the raw JSON string body `inner` after `count` decoded characters."""
    index = 0
    for _ in range(count):
        if index >= len(inner):
            break
        if inner[index] != "\\":
            index += 1
        elif inner[index + 1:index + 2] == "u":
            high = int(inner[index + 2:index + 6], 16)
            index += 6
            if 0xD800 <= high < 0xDC00 and inner[index:index + 2] == "\\u":
                index += 6  # a surrogate pair is one character
        else:
            index += 2
    return index


def read_notebook(data: bytes, path: str) -> Notebook:
    """Parse and validate a notebook (nbformat 4); NotebookError with a one-line reason."""
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data[3:].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not a valid notebook: not UTF-8 (invalid byte at offset {exc.start})") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise NotebookError("not a valid notebook: the JSON is not an object")
    major = document.get("nbformat")
    if major != 4:
        raise NotebookError(f"notebook format {major!r} is not supported (only 4; upgrade it with "
                            "`jupyter nbconvert --to notebook --nbformat 4`)")
    node = _validated(document)
    spans = _source_spans(text)
    if len(spans) != len(node.cells):
        raise NotebookError("could not locate the cells' sources in the file")
    cells = []
    for number, (cell, (span, pieces)) in enumerate(zip(node.cells, spans), 1):
        source = "".join(json.loads(text[start:end]) for start, end in pieces)
        if source != cell.source:  # our reading of the JSON must agree with nbformat's
            raise NotebookError(f"cell {number}: could not locate its source in the file")
        cells.append(Cell(number, cell.cell_type, source, span, pieces))
    metadata = node.get("metadata", {})
    language = (metadata.get("language_info") or {}).get("name") or (metadata.get("kernelspec") or {}).get("language")
    python = language is None or str(language).lower() in ("python", "python3", "ipython", "ipython3")
    return Notebook(path, text, cells, python, bom)


def _validated(document: dict):
    import nbformat
    from nbformat.validator import ValidationError, validate

    try:
        with warnings.catch_warnings():  # missing cell ids etc. are repaired in memory, not our news
            warnings.simplefilter("ignore")
            node = nbformat.versions[4].to_notebook_json(document, minor=document.get("nbformat_minor", 0))
            validate(node)
    except ValidationError as exc:
        message = str(getattr(exc, "message", exc)).splitlines()[0]
        raise NotebookError(f"not a valid notebook: {_where(exc)}{message}") from None
    except (AttributeError, KeyError, TypeError) as exc:
        raise NotebookError(f"not a valid notebook: {type(exc).__name__}: {exc}") from None
    return node


def _where(error) -> str:
    """`cell 3: ` (1-based, as findings count cells) or `metadata.kernelspec: ` for a schema error."""
    path = list(getattr(error, "absolute_path", None) or [])
    if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
        return f"cell {path[1] + 1}: "
    if path:
        return ".".join(str(part) for part in path) + ": "
    return ""


# The JSON text, tokenised just enough to know where each cell's "source" value lies.
_TOKEN = re.compile(r'\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\]:,])|([^\s{}\[\]:,"]+))', re.S)


def _source_spans(text: str) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """For each cell in order: the span of its "source" value, and the spans of the JSON strings
    in it. The text has already been parsed by json.loads, so it is valid JSON."""
    tokens = [(m.start(1) if m.group(1) else m.start(2) if m.group(2) else m.start(3), m.end(), m.group(2) or "")
              for m in _TOKEN.finditer(text) if m.end() > m.start() and m.lastindex]
    position = 0

    def skip() -> int:
        """Skip one value starting at tokens[position]; return the index after it."""
        nonlocal position
        depth = 0
        while True:
            punct = tokens[position][2]
            position += 1
            if punct in ("{", "["):
                depth += 1
            elif punct in ("}", "]"):
                depth -= 1
            if depth == 0 and punct not in (":", ","):
                return position

    def object_members() -> Iterable[str]:
        """Iterate the keys of the object at tokens[position]; after each key, position is at its value."""
        nonlocal position
        position += 1  # {
        while tokens[position][2] != "}":
            key = json.loads(text[tokens[position][0]:tokens[position][1]])
            position += 2  # key, colon
            before = position
            yield key
            if position == before:
                skip()
            if tokens[position][2] == ",":
                position += 1
        position += 1  # }

    spans: list[tuple[tuple[int, int], list[tuple[int, int]]]] = []
    for key in object_members():
        if key != "cells" or tokens[position][2] != "[":
            continue
        position += 1  # [
        while tokens[position][2] != "]":
            if tokens[position][2] == "{":
                for cell_key in object_members():
                    if cell_key == "source":
                        start = tokens[position][0]
                        pieces = []
                        if tokens[position][2] == "[":
                            position += 1
                            while tokens[position][2] != "]":
                                if tokens[position][2] != ",":
                                    pieces.append((tokens[position][0], tokens[position][1]))
                                position += 1
                            position += 1
                        else:
                            pieces.append((tokens[position][0], tokens[position][1]))
                            position += 1
                        spans.append(((start, tokens[position - 1][1]), pieces))
            else:
                skip()
            if tokens[position][2] == ",":
                position += 1
        position += 1  # ]
    return spans
