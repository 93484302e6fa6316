"""Jupyter notebooks: check and fix the code cells as one Python module.

Cells run in order in one namespace, so the code cells are joined into one module (a marker
comment before each) and linted like a file: a name an earlier cell defines resolves in a later
one. IPython syntax (`%magic`, `%%cell magic`, `!shell`, `x = !cmd`, `obj?`) is not Python: each
such line becomes a `pass` placeholder of the same indentation, so line numbers stay those of the
cell, and a fix that would rewrite a placeholder is refused. Findings carry `"cell"` (1-based among
all cells, markdown included) and the line in that cell; so do the links of their evidence chain
(`via`) that lie in the notebook, with each link's cell in `"via_cells"`.

nbformat reads and validates the file. Fixes are written by replacing only the JSON text of the
changed cells' `source` values, in the notebook's own style (a list of lines or one string, its
indentation, its escaping): nbformat's writer would re-serialise the whole file and so change the
bytes of notebooks it did not write itself (measured in tests/test_notebook.py), and a fix must
not touch outputs, metadata or other cells.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Iterable

from ptlint.engine.finding import Finding
from ptlint.engine.notebook import Cell, Notebook, NotebookError, read_notebook  # noqa: F401 - read here, used by callers
from ptlint.engine.source import SourceFile, split_lines

_MARKER = "# ptlint-notebook-cell: {number}"
_MARKER_LINE = re.compile(r"^# ptlint-notebook-cell: (\d+)$")
_PLACEHOLDER = "{indent}pass  # ptlint-magic-{id}"
_PLACEHOLDER_LINE = re.compile(r"^[ \t]*pass  # ptlint-magic-(\d+)$")
# Cell magics whose body is Python that runs in the kernel (`%%time` etc.); any other cell magic
# (`%%bash`, `%%writefile`, `%%html`, ...) makes the whole cell something else.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
# At the start of a logical line these are IPython escapes, never Python: magics, shell, help,
# autocall (`/f x`, `,f a b`, `;f a b`).
_ESCAPES = ("%", "!", "?", "/", ",", ";")
_HELP_END = re.compile(r"^\s*%{0,2}[\w*.\[\]-]+\?{1,2}\s*$")  # obj?  obj.attr??  x[0]?  (IPython's own pattern)
_ASSIGN_ESCAPE = re.compile(r"^\s*[\w.\[\], ]+=\s*[!%]")  # files = !ls   t = %timeit -o f()


# -- the module the code cells make ------------------------------------------------------------

@dataclass
class Module:
    """The code cells joined into one Python module, and the way back to the cells."""

    text: str
    cells: list[int]  # numbers of the cells in the module, in order
    magics: dict[int, str] = field(default_factory=dict)  # placeholder id -> the original line
    cell_magics: dict[int, list[int]] = field(default_factory=dict)  # cell -> its placeholder ids, in order


def build_module(notebook: Notebook, blank: Iterable[int] = ()) -> Module:
    """The module of the notebook's Python cells; cells in `blank` (they do not parse) are left
    empty, so that the others can still be checked."""
    blank = set(blank)
    parts: list[str] = []
    module = Module("", [])
    for cell in notebook.code_cells:
        lines = split_lines(cell.source)
        replaced = _python_lines(lines, module, cell.number)
        if replaced is None:  # %%bash and the like: not Python, left alone
            continue
        module.cells.append(cell.number)
        parts.append(_MARKER.format(number=cell.number) + "\n")
        if cell.number in blank:
            replaced = ["\n" if line.endswith(("\n", "\r")) else "" for line in lines]
            module.cell_magics[cell.number] = []
        body = "".join(replaced)
        if body and not body.endswith(("\n", "\r")):
            body += "\n"
        parts.append(body)
    module.text = "".join(parts)
    return module


def _python_lines(lines: list[str], module: Module, number: int) -> list[str] | None:
    """The cell's lines with IPython syntax replaced by placeholders, or None for a cell that a
    non-Python cell magic makes into something else."""
    ids: list[int] = []
    out: list[str] = []

    def placeholder(line: str, indent: str) -> str:
        magic_id = len(module.magics) + 1
        module.magics[magic_id] = line
        ids.append(magic_id)
        ending = line[len(line.rstrip("\r\n")):]
        return _PLACEHOLDER.format(indent=indent, id=magic_id) + (ending or "\n")

    first = next((index for index, line in enumerate(lines) if line.strip()), None)
    start = 0
    if first is not None and lines[first].startswith("%%"):
        name = lines[first][2:].split(None, 1)[0] if lines[first][2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            return None
        out.extend(lines[:first])
        out.append(placeholder(lines[first], ""))
        start = first + 1
    scanner = _LogicalLines()
    magic_indent: str | None = None  # set while a magic continues onto the next line with `\`
    for line in lines[start:]:
        content = line.rstrip("\r\n")
        if magic_indent is not None:
            out.append(placeholder(line, magic_indent))
            magic_indent = magic_indent if content.endswith("\\") else None
            continue
        if scanner.at_start() and _is_escape(content):
            indent = content[:len(content) - len(content.lstrip())]
            out.append(placeholder(line, indent))
            if content.endswith("\\"):
                magic_indent = indent
            continue
        scanner.feed(content)
        out.append(line)
    module.cell_magics[number] = ids
    return out


def _is_escape(content: str) -> bool:
    stripped = content.lstrip()
    if not stripped:
        return False
    return stripped.startswith(_ESCAPES) or bool(_HELP_END.match(content)) or bool(_ASSIGN_ESCAPE.match(content))


class _LogicalLines:
    """Tracks brackets, open strings and backslash continuations, to tell whether the next line
    starts a logical line (only there can an IPython escape be)."""

    def __init__(self) -> None:
        self.depth = 0
        self.quote: str | None = None  # the delimiter of a string still open
        self.continued = False

    def at_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.continued

    def feed(self, line: str) -> None:
        index, length = 0, len(line)
        comment = False
        while index < length:
            char = line[index]
            if self.quote is not None:
                if char == "\\":
                    index += 2
                    continue
                if line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                    continue
                index += 1
                continue
            if char == "#":
                comment = True
                break
            if char in "\"'":
                self.quote = line[index:index + 3] if line.startswith(char * 3, index) else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        self.continued = line.endswith("\\") and not comment and (self.quote is None or len(self.quote) == 1)
        if self.quote is not None and len(self.quote) == 1 and not line.endswith("\\"):
            self.quote = None  # an unclosed one-line string: a syntax error, not our concern


def split_module(module: Module, text: str) -> dict[int, str] | None:
    """The cells' new sources from a (fixed) module text, magics restored; None when the text
    lost a cell marker or a placeholder (a fix rewrote code around a magic)."""
    pieces: dict[int, list[str]] = {}
    order: list[int] = []
    prefix: list[str] = []
    current: list[str] | None = None
    for line in split_lines(text):
        match = _MARKER_LINE.match(line.rstrip("\r\n"))
        if match:
            number = int(match.group(1))
            if number in pieces:
                return None
            order.append(number)
            current = pieces[number] = []
        elif current is None:
            prefix.append(line)  # an import a fix added above the first cell
        else:
            current.append(line)
    if order != module.cells:
        return None
    if prefix and order:
        pieces[order[0]][:0] = prefix
    sources: dict[int, str] = {}
    for number in order:
        restored: list[str] = []
        found: list[int] = []
        for line in pieces[number]:
            match = _PLACEHOLDER_LINE.match(line.rstrip("\r\n"))
            if match:
                found.append(int(match.group(1)))
                restored.append(module.magics.get(int(match.group(1)), line))
            else:
                restored.append(line)
        if found != module.cell_magics.get(number, []):
            return None
        sources[number] = "".join(restored)
    return sources


def restore_endings(notebook: Notebook, sources: dict[int, str]) -> dict[int, str]:
    """The module gives every cell a final line end; drop it where the cell had none."""
    out = {}
    for number, source in sources.items():
        original = notebook.cells[number - 1].source
        if not original.endswith(("\n", "\r")) and source.endswith("\n"):
            source = source[:-2] if source.endswith("\r\n") else source[:-1]
        out[number] = source
    return out


def locate(module_text: str, path: str, findings: list[Finding]) -> list[Finding]:
    """Findings on the module, moved to their cells: `"cell"`, and lines counted in the cell."""
    markers: list[tuple[int, int]] = []  # (module line of the marker, cell number)
    for index, line in enumerate(split_lines(module_text), 1):
        match = _MARKER_LINE.match(line.rstrip("\r\n"))
        if match:
            markers.append((index, int(match.group(1))))
    lines = [line for line, _ in markers]

    def cell_of(module_line: int) -> tuple[int, int, int]:
        """(cell number, line in the cell, the cell's marker line) of a line of the module."""
        # a line on a marker (Python's "unexpected end" of the cell before it) belongs to that cell
        marker_line, number = markers[max(bisect.bisect_left(lines, module_line) - 1, 0)]
        return number, max(module_line - marker_line, 1), marker_line

    out = []
    for finding in findings:
        if not markers:
            continue
        number, line, marker_line = cell_of(finding.line)
        end_line = max(finding.end_line - marker_line, line)
        end_column = finding.end_column if finding.end_line - marker_line >= 1 else finding.column + 1
        extra = {**finding.extra, "cell": number}
        # the evidence chain's links in the notebook itself are mapped like the finding's own
        # line; `via_cells` holds each link's cell (None for a link in another file)
        via: list[tuple[str, int, str]] = []
        cells: list[int | None] = []
        for link_path, link_line, why in finding.via:
            cell = None
            if link_path in (finding.path, path):
                link_path, (cell, link_line, _) = path, cell_of(link_line)
            via.append((link_path, link_line, why))
            cells.append(cell)
        if any(cell is not None for cell in cells):
            extra["via_cells"] = cells
        out.append(Finding(**{**vars(finding), "path": path, "line": line, "end_line": end_line,
                              "end_column": end_column, "via": tuple(via), "extra": extra}))
    return out


# -- check and fix ----------------------------------------------------------------------------

def check_notebook(notebook: Notebook, rule_classes: list, test_code: bool,
                   enabled: tuple[str, ...] | None = None, project=None) -> list[Finding]:
    findings, _ = check_cells(notebook, rule_classes, test_code, enabled, project)
    return findings


def check_cells(notebook: Notebook, rule_classes: list, test_code: bool,
                enabled: tuple[str, ...] | None = None, project=None) -> tuple[list[Finding], set[int]]:
    """Findings, and the cells that do not parse: each gets its PTL001 and is left out, so one
    broken cell does not hide the findings of the others. `enabled` and `project` (what is known
    of the notebook's program: ProjectFacts): as for lint_source."""
    from ptlint.engine.traversal import lint_source

    broken: dict[int, Finding] = {}
    while True:
        module = build_module(notebook, broken)
        findings = locate(module.text, notebook.path,
                          lint_source(SourceFile(notebook.path, module.text), rule_classes, test_code,
                                      enabled=enabled, project=project))
        errors = [f for f in findings if f.code == "PTL001" and f.cell not in broken]
        if not errors:
            break
        broken[errors[0].cell] = errors[0]
    findings = [f for f in findings if f.code != "PTL001"] + list(broken.values())
    return sorted(findings, key=Finding.sort_key), set(broken)
