"""`ptlint lsp`: the language server (pygls) on stdio.

Diagnostics on open, save and (debounced) change; code actions: a quick fix per fixable finding,
"Fix all ptlint findings" (`source.fixAll.ptlint`), and "Suppress with `# noqa: CODE`".
Settings come from the `[tool.ptlint]` nearest the document, as for `ptlint check`; a bad config
is shown once as an error message and the default rules run until it is fixed.

Notebooks (notebook document sync, for Python cells): the code cells are checked together as
`ptlint check` checks a .ipynb file, and each cell gets its own diagnostics. Code actions are not
offered in notebook cells (a cell's fix depends on the other cells).

Positions: findings count 1-based lines and characters; LSP counts 0-based lines and, unless the
client offers another position encoding, UTF-16 code units. Line ends are `\\r\\n`, `\\r`, `\\n`
for both Python and LSP (not `str.splitlines`, which also splits at `\\x0c` or U+2028), so the
server asks for whole-document sync and converts positions itself.
"""

from __future__ import annotations

import asyncio
import difflib
import io
import logging
import os
import re
import tokenize
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ptlint import __version__
from ptlint.engine.catalogue import DOCS_URL
from ptlint.engine.finding import SAFE, Finding
from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile
from ptlint.engine.suppress import LINE_NOQA
from ptlint.engine.traversal import lint_source
from ptlint.front.api import default_codes
from ptlint.run.config import ConfigError, Resolver, Settings
from ptlint.engine.finding import applicable
from ptlint.run.fix import fix_source

logger = logging.getLogger(__name__)

# Seconds of quiet after a change before linting: typing does not lint on every key.
DEBOUNCE = float(os.environ.get("PTLINT_LSP_DEBOUNCE", "0.25"))
FIX_ALL_KIND = "source.fixAll.ptlint"
_LINE_END = re.compile(r"\r\n|\r|\n")
_SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
             "info": types.DiagnosticSeverity.Information, "hint": types.DiagnosticSeverity.Hint}


# -- positions ---------------------------------------------------------------------------------

def _units(text: str, encoding: str) -> int:
    """Length of `text` in the client's position units."""
    if encoding == types.PositionEncodingKind.Utf32 or text.isascii():
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)  # surrogate pairs


class Positions:
    """Converts between character offsets / 1-based finding positions and LSP positions."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.text = text
        self.encoding = encoding
        self.starts = [0] + [match.end() for match in _LINE_END.finditer(text)]

    def line_text(self, index: int) -> str:
        """0-based line `index` without its line end."""
        start = self.starts[index]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")

    def from_offset(self, offset: int) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        index = _bisect(self.starts, offset)
        return types.Position(line=index, character=_units(self.text[self.starts[index]:offset], self.encoding))

    def from_finding(self, line: int, column: int) -> types.Position:
        """A finding's 1-based line and 1-based character column."""
        index = min(max(line - 1, 0), len(self.starts) - 1)
        text = self.line_text(index)
        return types.Position(line=index, character=_units(text[: max(column - 1, 0)], self.encoding))

    def to_offset(self, position: types.Position) -> int:
        if position.line >= len(self.starts):
            return len(self.text)
        text = self.line_text(position.line)
        units = 0
        for count, char in enumerate(text):
            if units >= position.character:
                return self.starts[position.line] + count
            units += _units(char, self.encoding)
        return self.starts[position.line] + len(text)  # past the end: the end of the line

    def range_of(self, finding: Finding) -> types.Range:
        return types.Range(start=self.from_finding(finding.line, finding.column),
                           end=self.from_finding(finding.end_line, finding.end_column))


def _bisect(starts: list[int], offset: int) -> int:
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= offset:
            low = middle
        else:
            high = middle - 1
    return low


# -- edits -------------------------------------------------------------------------------------

def text_edits(old: str, new: str, encoding: str = types.PositionEncodingKind.Utf16) -> list[types.TextEdit]:
    """Line-granular edits that turn `old` into `new` (non-overlapping, against `old`)."""
    positions = Positions(old, encoding)
    old_lines = _split_lines(old)
    new_lines = _split_lines(new)
    old_starts = positions.starts + [len(old)]
    edits = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = old_starts[i1] if i1 < len(old_lines) else len(old)
        end = old_starts[i2] if i2 < len(old_lines) else len(old)
        edits.append(types.TextEdit(
            range=types.Range(start=positions.from_offset(start), end=positions.from_offset(end)),
            new_text="".join(new_lines[j1:j2])))
    return edits


def _split_lines(text: str) -> list[str]:
    """Lines with their ends, split only at `\\r\\n`, `\\r`, `\\n`."""
    out, start = [], 0
    for match in _LINE_END.finditer(text):
        out.append(text[start:match.end()])
        start = match.end()
    if start < len(text):
        out.append(text[start:])
    return out


def fix_one(text: str, path: str, finding: Finding) -> str | None:
    """The text with only this finding's fix applied, or None when it cannot be applied cleanly."""
    from ptlint.engine.structure import FixRejected
    from ptlint.run.fix import apply_fixes

    if finding.fix is None or not finding.fix.edits:
        return None
    try:
        new_text = apply_fixes(SourceFile(path, text), [finding])
    except FixRejected:
        return None
    except Exception as exc:  # a failing fix must not take the server down
        logger.warning("fix of %s at %s:%s failed: %s", finding.code, path, finding.line, exc)
        return None
    return new_text if new_text is not None and new_text != text else None


def add_noqa(text: str, path: str, finding: Finding) -> str | None:
    """The text with `# noqa: CODE` on the finding's line (extending an existing `# noqa: …`),
    or None when no comment there would suppress it (e.g. the line ends inside a string)."""
    if finding.code == "PTL001":
        return None
    positions = Positions(text)
    index = finding.line - 1
    if index >= len(positions.starts):
        return None
    line = positions.line_text(index)
    line_start = positions.starts[index]
    comment = _comment_on_line(text, finding.line)
    if comment is not None:
        column, comment_text = comment
        match = LINE_NOQA.search(comment_text)
        if match and match.group("codes") is None:
            return None  # a bare noqa already covers every code
        if match:
            at = line_start + column + match.end("codes")
            new_text = text[:at] + f", {finding.code}" + text[at:]
        else:
            at = line_start + column + len(comment_text)
            new_text = text[:at] + f"  # noqa: {finding.code}" + text[at:]
    else:
        content = line.rstrip()
        at = line_start + len(content)
        new_text = text[:at] + f"  # noqa: {finding.code}" + text[line_start + len(line):]
    # Check it really suppresses the finding and keeps the file parsing.
    rule = all_rules().get(finding.code)
    if rule is None:
        return None
    after = lint_source(SourceFile(path, new_text), [rule])
    if any(f.code == "PTL001" or (f.code == finding.code and f.line == finding.line) for f in after):
        return None
    return new_text


def _comment_on_line(text: str, line: int) -> tuple[int, str] | None:
    """(character column, text) of the comment token on a 1-based line, if any."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > line:
                break
            if token.type == tokenize.COMMENT and token.start[0] == line:
                return token.start[1], token.string
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


# -- the server --------------------------------------------------------------------------------

@dataclass
class LintState:
    version: int | None
    text: str
    path: str
    settings: Settings
    findings: list[Finding]


class PtlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("ptlint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         # "*": every notebook type (LSP spec); only its Python cells are synced
                         notebook_document_sync=types.NotebookDocumentSyncOptions(notebook_selector=[
                             types.NotebookDocumentFilterWithCells(
                                 notebook="*", cells=[types.NotebookCellLanguage("python")])], save=True))
        self.states: dict[str, LintState] = {}
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.shown_errors: set[str] = set()
        self.notebook_cells: dict[str, list[str]] = {}  # notebook uri -> cell uris last published

    # -- settings and linting ------------------------------------------------------------------
    def settings_for(self, path: str | None) -> Settings:
        start = path
        if not start or not os.path.exists(start):
            start = os.path.dirname(start) if start else None
        if not start or not os.path.exists(start):
            start = self.workspace.root_path or "."
        try:
            # A fresh resolver each time (the folder may have gained a config); the TOML files
            # themselves are read again only when they change.
            settings = Resolver().settings_for(start)
        except ConfigError as exc:
            message = str(exc)
            if message not in self.shown_errors:  # once, not on every keystroke
                self.shown_errors.add(message)
                self.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error,
                    message=f"ptlint: {message} (using the default rules until it is fixed)"))
            return Settings(enabled=default_codes())
        self.shown_errors.clear()
        return settings

    @property
    def encoding(self) -> str:
        return self.workspace.position_encoding or types.PositionEncodingKind.Utf16

    def lint(self, uri: str) -> LintState | None:
        if self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return None  # a notebook cell: linted with its notebook (lint_notebook)
        try:
            document = self.workspace.get_text_document(uri)
        except Exception:
            return None
        path = document.path or uri
        if not (document.language_id == "python" or path.endswith((".py", ".pyi", ".pyw"))):
            return None
        text = document.source
        settings = self.settings_for(document.path)
        findings: list[Finding] = []
        if not (document.path and settings.matches_exclude(document.path)):
            rules = all_rules()
            try:
                findings = lint_source(SourceFile(path, text),
                                       [rules[code] for code in settings.codes_for(path) if code in rules],
                                       settings.is_test_code(path), settings.root)
            except Exception as exc:  # a rule's bug: log it, keep serving
                logger.exception("ptlint failed on %s", path)
                self.window_log_message(types.LogMessageParams(
                    type=types.MessageType.Error, message=f"ptlint: internal error on {path}: "
                                                          f"{type(exc).__name__}: {exc}"))
        state = LintState(document.version, text, path, settings, findings)
        self.states[uri] = state
        return state

    def current(self, uri: str) -> LintState | None:
        """The lint result for the document as it is now (re-linting if it changed); None for a
        document the client never opened (pygls would read it from disk)."""
        state = self.states.get(uri)
        if uri not in self.workspace.text_documents:
            return None
        try:
            document = self.workspace.get_text_document(uri)
        except Exception:
            return None
        if state is None or state.version != document.version or state.text != document.source:
            state = self.lint(uri)
        return state

    def lint_notebook(self, uri: str) -> dict[str, tuple[str, list[Finding]]]:
        """cell uri -> (text, findings) for every Python code cell of an open notebook."""
        from ptlint.run.notebook import Cell, Notebook, check_notebook

        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return {}
        path = _uri_path(uri)
        cells: list[Cell] = []
        documents: dict[int, tuple[str, str]] = {}  # cell number -> (uri, text)
        for number, cell in enumerate(notebook.cells, 1):
            kind = "markdown"
            if cell.kind == types.NotebookCellKind.Code:
                try:
                    document = self.workspace.get_text_document(cell.document)
                except Exception:
                    document = None
                if document is not None and document.language_id == "python":
                    kind = "code"
                    documents[number] = (cell.document, document.source)
            cells.append(Cell(number, kind, documents.get(number, ("", ""))[1], (0, 0), []))
        settings = self.settings_for(path)
        findings: list[Finding] = []
        if not settings.matches_exclude(path):
            rules = all_rules()
            try:
                findings = check_notebook(Notebook(path, "", cells, python=True),
                                          [rules[code] for code in settings.codes_for(path) if code in rules],
                                          settings.is_test_code(path))
            except Exception as exc:  # a rule's bug: log it, keep serving
                logger.exception("ptlint failed on %s", path)
                self.window_log_message(types.LogMessageParams(
                    type=types.MessageType.Error, message=f"ptlint: internal error on {path}: "
                                                          f"{type(exc).__name__}: {exc}"))
        out = {cell_uri: (text, []) for cell_uri, text in documents.values()}
        for finding in findings:
            cell_uri, _ = documents.get(finding.extra.get("cell"), (None, None))
            if cell_uri is not None:
                out[cell_uri][1].append(finding)
        return out

    def publish_notebook(self, uri: str) -> None:
        self.pending.pop(uri, None)
        results = self.lint_notebook(uri)
        for cell_uri in self.notebook_cells.get(uri, []):  # cells since removed: clear theirs
            if cell_uri not in results:
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
        self.notebook_cells[uri] = list(results)
        for cell_uri, (text, findings) in results.items():
            positions = Positions(text, self.encoding)
            try:
                version = self.workspace.get_text_document(cell_uri).version
            except Exception:
                version = None
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=cell_uri, version=version, diagnostics=[self.diagnostic(f, positions) for f in findings]))

    def close_notebook(self, uri: str, cell_uris: list[str]) -> None:
        self.cancel(uri)
        for cell_uri in set(self.notebook_cells.pop(uri, [])) | set(cell_uris):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))

    def publish(self, uri: str) -> None:
        self.pending.pop(uri, None)
        state = self.lint(uri)
        if state is None:
            return
        positions = Positions(state.text, self.encoding)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=state.version,
            diagnostics=[self.diagnostic(finding, positions) for finding in state.findings]))

    def schedule(self, uri: str, publish=None) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()
        self.pending[uri] = asyncio.get_event_loop().call_later(DEBOUNCE, publish or self.publish, uri)

    def cancel(self, uri: str) -> None:
        handle = self.pending.pop(uri, None)
        if handle is not None:
            handle.cancel()

    @staticmethod
    def diagnostic(finding: Finding, positions: Positions) -> types.Diagnostic:
        return types.Diagnostic(
            range=positions.range_of(finding),
            message=finding.message,
            severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
            code=finding.code,
            code_description=types.CodeDescription(href=DOCS_URL.format(code=finding.code)),
            source="ptlint",
            data={"name": finding.name, "fixable": finding.fix is not None},
        )

    # -- code actions --------------------------------------------------------------------------
    def _capability(self, *names: str) -> Any:
        value: Any = self.client_capabilities
        for name in names:
            value = getattr(value, name, None)
            if value is None:
                return None
        return value

    def can_resolve_edits(self) -> bool:
        properties = self._capability("text_document", "code_action", "resolve_support", "properties")
        return bool(properties) and "edit" in properties

    def workspace_edit(self, uri: str, version: int | None, old: str, new: str) -> types.WorkspaceEdit:
        edits = text_edits(old, new, self.encoding)
        if self._capability("workspace", "workspace_edit", "document_changes"):
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                edits=edits)])
        return types.WorkspaceEdit(changes={uri: edits})

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        if self.workspace.get_notebook_document(cell_uri=uri) is not None:
            return []  # see the module docstring
        state = self.current(uri)
        if state is None:
            return []
        only = params.context.only

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)

        positions = Positions(state.text, self.encoding)
        lazy = self.can_resolve_edits()
        actions: list[types.CodeAction] = []
        if wanted(types.CodeActionKind.QuickFix):
            requested = (params.range.start.line, params.range.start.character,
                         params.range.end.line, params.range.end.character)
            for finding in state.findings:
                diagnostic = self.diagnostic(finding, positions)
                span = diagnostic.range
                if (span.end.line, span.end.character) < requested[:2] or \
                        (span.start.line, span.start.character) > requested[2:]:
                    continue
                if finding.fix is not None:
                    unsafe = finding.fix.applicability != SAFE
                    action = types.CodeAction(
                        title=f"{finding.fix.message} ({finding.code}{', unsafe fix' if unsafe else ''})",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=not unsafe,
                        data={"uri": uri, "version": state.version, "action": "fix", "code": finding.code,
                              "span": list(_span(finding))})
                    if lazy or self.resolve(action).edit is not None:
                        actions.append(action)
                suppressed = add_noqa(state.text, state.path, finding)
                if suppressed is not None:
                    actions.append(types.CodeAction(
                        title=f"Suppress with `# noqa: {finding.code}`", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=self.workspace_edit(uri, state.version, state.text, suppressed)))
        # Without resolve support the edit is computed now (a fix-all pass): on a plain request at
        # the cursor, only when a fixable finding is there.
        eager_ok = lazy or bool(only) or any(action.kind == types.CodeActionKind.QuickFix and action.data
                                             for action in actions)
        if wanted(FIX_ALL_KIND) and eager_ok and \
                any(applicable(f, state.settings.unsafe_fixes) for f in state.findings):
            action = types.CodeAction(
                title="Fix all ptlint findings", kind=FIX_ALL_KIND,
                data={"uri": uri, "version": state.version, "action": "fixAll"})
            if lazy or self.resolve(action).edit is not None:
                actions.append(action)
        return actions

    def resolve(self, action: types.CodeAction) -> types.CodeAction:
        """Fill in the edit of a fix action (lazily: fix-all re-lints the file until stable)."""
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        state = self.current(uri) if uri else None
        if state is None or state.version != data.get("version"):
            return action  # the document changed since: no edit rather than a wrong one
        new_text = None
        if data.get("action") == "fix":
            for finding in state.findings:
                if finding.code == data.get("code") and list(_span(finding)) == data.get("span"):
                    new_text = fix_one(state.text, state.path, finding)
                    break
        elif data.get("action") == "fixAll":
            codes = state.settings.codes_for(state.path)
            result = fix_source(SourceFile(state.path, state.text), codes, state.settings.unsafe_fixes,
                                state.settings.is_test_code(state.path))
            new_text = result.fixed if result.changed else None
        if new_text is not None:
            action.edit = self.workspace_edit(uri, state.version, state.text, new_text)
        return action


def _span(finding: Finding) -> tuple[int, int, int, int]:
    return (finding.line, finding.column, finding.end_line, finding.end_column)


def _uri_path(uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(uri) or uri


def _warm_up() -> None:
    """Import the rules and run them once before the first document arrives: the first didOpen
    then costs what every other does."""
    from ptlint.run.notebook import build_module  # noqa: F401 - imported by the first notebook otherwise

    rules = all_rules()
    lint_source(SourceFile("warm-up.py", "import torch\nfor x in xs:\n    y = x.item()\n"), list(rules.values()))


def create_server() -> PtlintServer:
    server = PtlintServer()

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: PtlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.cancel(params.notebook_document.uri)
        ls.publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: PtlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.publish_notebook)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: PtlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.cancel(params.notebook_document.uri)
        ls.publish_notebook(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: PtlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.close_notebook(params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents])

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: PtlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: PtlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: PtlintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):  # the config may have changed: re-lint what is open
            for open_uri in list(ls.states):
                ls.cancel(open_uri)
                ls.publish(open_uri)
            for notebook_uri in list(ls.notebook_cells):
                ls.cancel(notebook_uri)
                ls.publish_notebook(notebook_uri)
            return
        ls.cancel(uri)
        ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: PtlintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.cancel(uri)
        ls.states.pop(uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL_KIND],
        resolve_provider=True))
    def code_action(ls: PtlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    def code_action_resolve(ls: PtlintServer, params: types.CodeAction) -> types.CodeAction:
        return ls.resolve(params)

    return server


def serve() -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    server = create_server()
    _warm_up()  # while the editor is still starting us, not on its first didOpen
    server.start_io()
