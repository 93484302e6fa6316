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
    """Parse and validate a notebook (nbformat 4); NotebookError with a one-line reason, in the
    user's words: what is wrong, and where (`cell 3, output 1: ...`)."""
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data[3:].decode("utf-8") if bom else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(f"not a valid notebook: not UTF-8 (invalid byte at offset {exc.start})") from None
    document = _json(text)
    if not isinstance(document, dict):
        raise NotebookError(f"not a valid notebook: the file holds {_kind(document)}, not a JSON object")
    major = document.get("nbformat")
    if type(major) is not int:
        raise NotebookError(f'not a valid notebook: "nbformat" must be a whole number, not {_short(major)}'
                            if "nbformat" in document else 'not a valid notebook: no "nbformat" version')
    if major != 4:
        raise NotebookError(f"notebook format {major!r} is not supported (only 4; upgrade it with "
                            "`jupyter nbconvert --to notebook --nbformat 4`)")
    minor = document.get("nbformat_minor", 0)
    if type(minor) is not int or minor < 0:
        raise NotebookError(f'not a valid notebook: "nbformat_minor" must be a whole number of 0 or more, '
                            f"not {_short(minor)}")
    node = _validated(document, minor)
    spans = _source_spans(text)
    if len(spans) != len(node.cells):
        raise NotebookError("could not locate the cells' sources in the file")
    cells = []
    for number, (cell, (span, pieces)) in enumerate(zip(node.cells, spans), 1):
        source = "".join(json.loads(text[start:end]) for start, end in pieces)
        if source != cell.source:  # our reading of the JSON must agree with nbformat's
            raise NotebookError(f"cell {number}: could not locate its source in the file (is a key repeated?)")
        cells.append(Cell(number, cell.cell_type, source, span, pieces))
    metadata = node.get("metadata", {})
    language = (metadata.get("language_info") or {}).get("name") or (metadata.get("kernelspec") or {}).get("language")
    python = language is None or str(language).lower() in ("python", "python3", "ipython", "ipython3")
    return Notebook(path, text, cells, python, bom)


def _json(text: str):
    def refuse(constant: str):
        raise ValueError(f"{constant} is not a JSON value")

    try:
        return json.loads(text, parse_constant=refuse)
    except RecursionError:
        raise NotebookError("not a valid notebook: the JSON nests too deeply to read") from None
    except ValueError as exc:
        reason = str(exc).splitlines()[0]
        if "integer string conversion" in reason:  # Python's limit on digits, and its advice to raise it
            reason = "a number too long to read"
        raise NotebookError(f"not a valid notebook: invalid JSON: {reason}") from None


def _validated(document: dict, minor: int):
    """nbformat's reading of the document, after its schema says it is valid."""
    import nbformat
    from nbformat.validator import ValidationError, validate

    for key, kind in (("metadata", dict), ("cells", list)):
        if key not in document:
            raise NotebookError(f'not a valid notebook: no "{key}"')
        if not isinstance(document[key], kind):
            raise NotebookError(f'not a valid notebook: "{key}" must be {_TYPES[kind.__name__]}, '
                                f"not {_short(document[key])}")
    for number, cell in enumerate(document["cells"], 1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a valid notebook: cell {number} must be a JSON object, not {_short(cell)}")
        for key in ("cell_type", "id"):  # nbformat's reading trips on these before its schema speaks
            if key in cell and not isinstance(cell[key], str):
                raise NotebookError(f"not a valid notebook: cell {number}, {key}: must be text, not {_short(cell[key])}")
    with warnings.catch_warnings():  # missing cell ids etc. are repaired in memory, not our news
        warnings.simplefilter("ignore")
        try:
            node = nbformat.versions[4].to_notebook_json(document, minor=minor)
            validate(node)
        except ValidationError as exc:
            raise NotebookError(f"not a valid notebook: {_schema_message(exc)}") from None
        except (AttributeError, KeyError, TypeError, ValueError, AssertionError):
            # nbformat's reading tripped on a shape its schema forbids: the schema says which
            try:
                validate(document, version=4, version_minor=min(minor, nbformat.versions[4].nbformat_minor))
            except ValidationError as exc:
                raise NotebookError(f"not a valid notebook: {_schema_message(exc)}") from None
            except Exception:  # noqa: BLE001 - nbformat's own trouble: said below, in general terms
                pass
            raise NotebookError("not a valid notebook: its cells or metadata do not have the shapes "
                                "nbformat 4 describes") from None
    return node


_TYPES = {"string": "text", "str": "text", "object": "a JSON object", "dict": "a JSON object", "array": "a list",
          "list": "a list", "integer": "a whole number", "number": "a number", "boolean": "true or false",
          "null": "null"}


def _kind(value) -> str:
    if isinstance(value, bool):
        return "true or false"
    for python, name in ((str, "text"), (dict, "a JSON object"), (list, "a list"), (int, "a whole number"),
                         (float, "a number")):
        if isinstance(value, python):
            return name
    return "null"


def _short(value) -> str:
    """A value as the user wrote it in the JSON, cut short."""
    if isinstance(value, (dict, list)):
        return _kind(value)
    if isinstance(value, float) and value != value:
        return "NaN"
    shown = json.dumps(value) if value is None or isinstance(value, (bool, str, int, float)) else repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


def _schema_message(error) -> str:
    """What a schema error means, where it is: the alternative (`oneOf`) meant is the one whose
    `cell_type` / `output_type` matches, and an unknown type is said as such."""
    path = list(getattr(error, "absolute_path", None) or [])
    while error.validator in ("oneOf", "anyOf") and error.context:
        branches: dict = {}
        for inner in error.context:
            branches.setdefault(inner.relative_schema_path[0], []).append(inner)

        def names_the_type(inner) -> bool:
            return inner.validator in ("enum", "const") and len(inner.relative_path) == 1 and \
                str(inner.relative_path[0]).endswith("_type")

        meant = [errors for errors in branches.values() if not any(names_the_type(e) for e in errors)]
        if not meant:
            wrong = [e for e in error.context if names_the_type(e)]
            known = sorted({str(v) for e in wrong for v in
                            (e.validator_value if e.validator == "enum" else [e.validator_value])})
            return (f"{_where(path)}unknown {wrong[0].relative_path[0]} {_short(wrong[0].instance)} "
                    f"(one of {', '.join(known)})")
        # the alternative for the value's own type (a list of lines, not one string), then the
        # one with the fewest complaints
        error = min(meant, key=lambda errors: (any(e.validator == "type" and not e.relative_path for e in errors),
                                               len(errors)))[0]
        path = path + list(error.relative_path)
    where = _where(path)
    if error.validator == "type":
        expected = error.validator_value
        expected = [expected] if isinstance(expected, str) else list(expected)
        return f"{where}must be {' or '.join(_TYPES.get(e, e) for e in expected)}, not {_short(error.instance)}"
    if error.validator == "required":
        missing = next((name for name in error.validator_value if isinstance(error.instance, dict)
                        and name not in error.instance), None)
        return f'{where}"{missing}" is missing' if missing else f"{where}a required key is missing"
    if error.validator == "enum":
        return f"{where}must be one of {', '.join(_short(v) for v in error.validator_value)}, not {_short(error.instance)}"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set((error.schema or {}).get("properties", {}))
        extra = sorted(str(k) for k in error.instance if k not in allowed)
        return f"{where}unexpected key{'s' if len(extra) != 1 else ''} {', '.join(_short(k) for k in extra)}"
    if error.validator == "pattern":
        if path and path[-1] == "id":
            return f"{where}{_short(error.instance)} is not a cell id (letters, digits, - and _)"
        return f"{where}{_short(error.instance)} does not have the form nbformat 4 asks for"
    message = str(getattr(error, "message", error)).splitlines()[0]
    return f"{where}{message if len(message) <= 120 else message[:117] + '...'}"


def _where(path: list) -> str:
    """`cell 3: `, `cell 3, output 1: ` (1-based, as findings count cells), or
    `metadata.kernelspec: ` for a schema error at `path` in the document."""
    parts: list[str] = []
    index = 0
    while index < len(path):
        part = path[index]
        following = path[index + 1] if index + 1 < len(path) else None
        if part in ("cells", "outputs") and isinstance(following, int):
            parts.append(f"{'cell' if part == 'cells' else 'output'} {following + 1}")
            index += 2
            continue
        if isinstance(part, int):
            parts.append(f"item {part + 1}")
        elif parts and not parts[-1].startswith(("cell ", "output ", "item ")):
            parts[-1] += f".{part}"
        else:
            parts.append(str(part))
        index += 1
    return ", ".join(parts) + ": " if parts else ""


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
