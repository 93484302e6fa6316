"""The text of the files findings point into, read once each: source lines for the `full`
format and SARIF snippets, notebook cells included."""

from __future__ import annotations

from ptlint.engine.source import SourceError, decode_source, is_notebook, read_bytes, split_lines


class Sources:
    """The text of the files findings point into, read once each; standard input is given."""

    def __init__(self, given: dict[str, bytes] | None = None) -> None:
        self.given = dict(given or {})
        self._lines: dict[tuple[str, int | None], list[str] | None] = {}
        self._notebooks: dict[str, object] = {}

    def data(self, path: str) -> bytes | None:
        if path in self.given:
            return self.given[path]
        try:
            return read_bytes(path)
        except SourceError:
            return None

    def notebook(self, path: str):
        """The parsed notebook at `path`, or None."""
        if path not in self._notebooks:
            # imported here: a run over .py files never needs the notebook reader (nor json)
            from ptlint.engine.notebook import read_notebook

            data = self.data(path)
            try:
                self._notebooks[path] = read_notebook(data, path) if data is not None else None
            except SourceError:
                self._notebooks[path] = None
        return self._notebooks[path]

    def lines(self, path: str, cell: int | None) -> list[str] | None:
        key = (path, cell)
        if key not in self._lines:
            text = None
            if cell is not None:
                notebook = self.notebook(path)
                found = notebook.cell(cell) if notebook is not None else None
                text = found.source if found is not None else None
            elif not is_notebook(path):
                data = self.data(path)
                try:
                    text = decode_source(data, path).text if data is not None else None
                except SourceError:
                    text = None
            self._lines[key] = [line.rstrip("\r\n") for line in split_lines(text)] if text is not None else None
        return self._lines[key]
