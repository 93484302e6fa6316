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

Responsiveness: a quick fix is the fix's own edits (after the structural check of
ptlint.engine.structure, on the tree kept from the last lint: only the statements they touch are
parsed again), a suppression is one insertion, and "fix all" one edit over the span that changed:
no action diffs the whole document, so a 50,000-line file answers as fast as a small one. A client
that cannot resolve actions lazily gets "fix all" with the cursor's actions only for documents of
up to FIX_ALL_EAGER_LINES lines (it lints the whole file again), and whenever it asks for
`source.fixAll` by kind.

Evidence: a finding's evidence chain (where its code runs, and why: `Finding.via`) is the
diagnostic's related information, one location a link, at the start of its line: the document
itself, a cell of the notebook, or another file (a relative path from the server's current folder,
as `ptlint check` gives it).

Framing (JSON-RPC over stdio): headers are read case-insensitively, one line at most 8 KiB, a
body at most MAX_BODY bytes. A body that is not JSON, not a request or a notification, or a
request whose params have the wrong shape is answered with a JSON-RPC error (-32700, -32600,
-32602) and the server goes on; a header block without a usable Content-Length is answered with an
error and skipped; a Content-Length past MAX_BODY is answered with an error and the connection is
closed (reading that much could exhaust memory, and skipping it could take for ever).
"""

from __future__ import annotations

import ast
import asyncio
import bisect
import json
import logging
import re
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from ptlint import __version__
from ptlint.engine.catalogue import DOCS_URL
from ptlint.engine.finding import SAFE, Edit, Finding, applicable
from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile, line_starts
from ptlint.engine.structure import FixRejected, checked_text
from ptlint.engine import suppress
from ptlint.engine.traversal import lint_and_summarize, lint_source, parse
from ptlint.front.api import default_codes
from ptlint.report.evidence import via_links
from ptlint.run.config import ConfigError, Resolver, Settings
from ptlint.run.fix import fix_source

logger = logging.getLogger(__name__)

# Seconds of quiet after a change before linting: typing does not lint on every key.
DEBOUNCE = float(os.environ.get("PTLINT_LSP_DEBOUNCE", "0.25"))
FIX_ALL_KIND = "source.fixAll.ptlint"
FIX_ALL_EAGER_LINES = 5000  # without lazy resolve: "fix all" at the cursor only up to this size
MAX_HEADER_LINE = 8 * 1024
MAX_HEADERS = 64
MAX_BODY = 64 * 1024 * 1024
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
        self.starts = line_starts(text)

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
    """One edit over the span where `old` and `new` differ (their common start and end are
    found by comparing halves, in C: no line diff of the whole document)."""
    if old == new:
        return []
    prefix = _common_length(old, new, lambda text, n: text[:n])
    suffix = _common_length(old[prefix:], new[prefix:], lambda text, n: text[len(text) - n:])
    start, old_end, new_end = prefix, len(old) - suffix, len(new) - suffix
    # never between the two characters of a `\r\n`: LSP has no position there
    while start > 0 and old[start - 1] == "\r" and old[start:start + 1] == "\n":
        start -= 1
    while old_end < len(old) and old_end > 0 and old[old_end - 1] == "\r" and old[old_end] == "\n":
        old_end, new_end = old_end + 1, new_end + 1
    positions = Positions(old, encoding)
    return [types.TextEdit(range=types.Range(start=positions.from_offset(start), end=positions.from_offset(old_end)),
                           new_text=new[start:new_end])]


def _common_length(a: str, b: str, part) -> int:
    """The length of the longest common prefix (or suffix, as `part` takes) of `a` and `b`."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if part(a, middle) == part(b, middle):
            low = middle
        else:
            high = middle - 1
    return low


def edits_to_text_edits(edits: list[Edit], positions: Positions) -> list[types.TextEdit]:
    """A fix's own edits (1-based finding positions) as LSP text edits, identical ones once."""
    return [types.TextEdit(range=types.Range(start=positions.from_finding(e.line, e.column),
                                             end=positions.from_finding(e.end_line, e.end_column)),
                           new_text=e.content)
            for e in sorted(set(edits), key=lambda e: (e.line, e.column, e.end_line, e.end_column))]


def fix_one(text: str, path: str, finding: Finding, tree: ast.Module | None = None) -> str | None:
    """The text with only this finding's fix applied, after the structural check; None when it
    cannot be applied cleanly (or changes nothing)."""
    if finding.fix is None or not finding.fix.edits:
        return None
    try:
        new_text = checked_text(SourceFile(path, text), finding.fix.edits, tree)
    except FixRejected:
        return None
    except Exception as exc:  # a failing fix must not take the server down
        logger.warning("fix of %s at %s:%s failed: %s", finding.code, path, finding.line, exc)
        return None
    return new_text if new_text != text else None


def fix_edits(text: str, path: str, finding: Finding, tree: ast.Module | None = None) -> list[Edit] | None:
    """This finding's own edits when they pass the structural check on this text, else None."""
    return list(finding.fix.edits) if fix_one(text, path, finding, tree) is not None else None


def noqa_edit(text: str, path: str, finding: Finding, tree: ast.Module | None = None) -> Edit | None:
    """The edit that puts `# noqa: CODE` on the finding's line (extending an existing `# noqa:
    …`), or None when no comment there would suppress it: the line ends inside a string or after
    a line continuation, or a bare noqa already covers every code (engine.suppress.noqa_edit).
    `tree`: the text's tree, so that only the top-level statement around the line is tokenised
    (a code action on a 50,000-line document stays quick)."""
    if finding.code == "PTL001":
        return None
    positions = Positions(text)
    if not 1 <= finding.line <= len(positions.starts):
        return None
    first, last = _statement_lines(tree, finding.line) if tree is not None else (1, len(positions.starts))
    end = positions.starts[last] if last < len(positions.starts) else len(text)
    statement = SourceFile(path, text[positions.starts[first - 1]:end])
    edit = suppress.noqa_edit(statement, finding.line - first + 1, [finding.code])
    if edit is None:
        return None
    shift = first - 1
    return Edit(edit.line + shift, edit.column, edit.end_line + shift, edit.end_column, edit.content)


def add_noqa(text: str, path: str, finding: Finding, tree: ast.Module | None = None) -> str | None:
    """The text with `# noqa: CODE` on the finding's line (see noqa_edit), or None."""
    edit = noqa_edit(text, path, finding, tree)
    if edit is None:
        return None
    positions = Positions(text)
    start = positions.starts[edit.line - 1] + edit.column - 1
    end = positions.starts[edit.end_line - 1] + edit.end_column - 1
    return text[:start] + edit.content + text[end:]


def _statement_lines(tree: ast.Module, line: int) -> tuple[int, int]:
    """The first and last lines of the top-level statement that holds `line` (decorators
    included); just `line` outside any."""
    starts = [min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])]) for s in tree.body]
    index = bisect.bisect_right(starts, line) - 1
    if index >= 0 and line <= (tree.body[index].end_lineno or line):
        return starts[index], tree.body[index].end_lineno or line
    return line, line


# -- the server --------------------------------------------------------------------------------

@dataclass
class LintState:
    version: int | None
    text: str
    path: str
    settings: Settings
    findings: list[Finding]
    tree: ast.Module | None = None  # the text's tree, for the structural check of its fixes


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
        self.projects: dict = {}  # project root -> LiveProject (ptlint.run.project)

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
        source = SourceFile(path, text)
        try:
            tree = parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeEncodeError):
            tree = None  # lint_source reports why
        if not (document.path and settings.matches_exclude(document.path)):
            rules = all_rules()
            try:
                codes = settings.codes_for(path)
                live = self.live_project(document.path, settings)
                test_code = settings.is_test_code(path)
                facts = live.facts_for(document.path) if live is not None else None
                findings, summary = lint_and_summarize(
                    source, [rules[code] for code in codes if code in rules], test_code, settings.root,
                    enabled=codes, tree=tree, project=facts, summarize=live is not None and not test_code)
                if live is not None:
                    changed = live.update(document.path, summary)
                    if os.path.abspath(document.path) in changed:  # its own facts moved: once more
                        findings = lint_source(source, [rules[code] for code in codes if code in rules], test_code,
                                               settings.root, enabled=codes, tree=tree,
                                               project=live.facts_for(document.path))
                    self.refresh_others(uri, changed)
            except Exception as exc:  # a rule's bug: log it, keep serving
                logger.exception("ptlint failed on %s", path)
                self.window_log_message(types.LogMessageParams(
                    type=types.MessageType.Error, message=f"ptlint: internal error on {path}: "
                                                          f"{type(exc).__name__}: {exc}"))
        state = LintState(document.version, text, path, settings, findings, tree)
        self.states[uri] = state
        return state

    def live_project(self, path: str | None, settings: Settings):
        """The project a document on disk belongs to, kept in memory (ptlint.run.project.LiveProject),
        or None: a document without a file, a notebook, `project = false`."""
        if not path or not path.endswith(".py") or not settings.project:
            return None
        from ptlint.run.project import LiveProject, find_root

        root = find_root(path)
        live = self.projects.get(root)
        if live is None:
            from ptlint.run.cache import Caches

            live = self.projects[root] = LiveProject(root, settings, Caches(None))
        return live

    def refresh_others(self, uri: str, changed: set[str]) -> None:
        """Lint again the other open documents whose project facts changed (a helper's callers)."""
        if not changed:
            return
        for other, state in list(self.states.items()):
            if other != uri and os.path.abspath(state.path) in changed:
                self.schedule(other)

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

    def lint_notebook(self, uri: str) -> dict[str, tuple[str, list[tuple[Finding, list | None]]]]:
        """cell uri -> (text, [(finding, its related information)]) for every Python code cell of
        an open notebook."""
        from ptlint.run.notebook import Cell, Notebook, check_notebook
        from ptlint.run.project import notebook_facts

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
            test_code = settings.is_test_code(path)
            facts = None  # as `check` has them: a notebook is a program of its own
            if settings.project and not test_code:
                cells_code = "\n".join(cell.source for cell in cells if cell.kind == "code")
                facts = notebook_facts(settings, cells_code.encode("utf-8", "surrogatepass"))
            try:
                findings = check_notebook(Notebook(path, "", cells, python=True),
                                          [rules[code] for code in settings.codes_for(path) if code in rules],
                                          test_code, project=facts)
            except Exception as exc:  # a rule's bug: log it, keep serving
                logger.exception("ptlint failed on %s", path)
                self.window_log_message(types.LogMessageParams(
                    type=types.MessageType.Error, message=f"ptlint: internal error on {path}: "
                                                          f"{type(exc).__name__}: {exc}"))
        out: dict[str, tuple[str, list[tuple[Finding, list | None]]]] = {
            cell_uri: (text, []) for cell_uri, text in documents.values()}
        cell_uris = {number: cell_uri for number, (cell_uri, _) in documents.items()}
        for finding in findings:
            cell_uri, _ = documents.get(finding.extra.get("cell"), (None, None))
            if cell_uri is not None:
                out[cell_uri][1].append((finding, related_information(finding, uri, path, cell_uris)))
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
                uri=cell_uri, version=version,
                diagnostics=[self.diagnostic(f, positions, related) for f, related in findings]))

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
            diagnostics=[self.diagnostic(finding, positions, related_information(finding, uri, state.path))
                         for finding in state.findings]))

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
    def diagnostic(finding: Finding, positions: Positions,
                   related: list[types.DiagnosticRelatedInformation] | None = None) -> types.Diagnostic:
        return types.Diagnostic(
            range=positions.range_of(finding),
            message=finding.message,
            severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
            code=finding.code,
            code_description=types.CodeDescription(href=DOCS_URL.format(code=finding.code)),
            source="ptlint",
            data={"name": finding.name, "fixable": finding.fix is not None},
            related_information=related,
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

    def workspace_edit(self, uri: str, version: int | None, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
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
                diagnostic = self.diagnostic(finding, positions, related_information(finding, uri, state.path))
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
                suppression = noqa_edit(state.text, state.path, finding, state.tree)
                if suppression is not None:
                    actions.append(types.CodeAction(
                        title=f"Suppress with `# noqa: {finding.code}`", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=self.workspace_edit(uri, state.version, edits_to_text_edits([suppression], positions))))
        # Without resolve support the edit is computed now (a fix-all pass): on a plain request at
        # the cursor, only when a fixable finding is there.
        small = len(positions.starts) <= FIX_ALL_EAGER_LINES
        eager_ok = lazy or bool(only) or (small and any(action.kind == types.CodeActionKind.QuickFix
                                                        and action.data for action in actions))
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
        state = self.resolvable(action)
        if state is not None:
            self.fill(action, state, self.fix_all_edits(state) if action.data.get("action") == "fixAll"
                      else self.quick_fix_edits(state, action.data))
        return action

    async def resolve_async(self, action: types.CodeAction) -> types.CodeAction:
        """`resolve`, with "fix all" (the whole file linted again, pass after pass) in a thread,
        so that other requests are answered meanwhile."""
        state = self.resolvable(action)
        if state is None or action.data.get("action") != "fixAll":
            return self.resolve(action)
        edits = await asyncio.get_running_loop().run_in_executor(self.thread_pool, self.fix_all_edits, state)
        if self.current(action.data["uri"]) is state:  # not typed over meanwhile
            self.fill(action, state, edits)
        return action

    def resolvable(self, action: types.CodeAction) -> LintState | None:
        """The document an action of ours is about, as it is now, if it is the version the
        action was made for; None otherwise (no edit rather than a wrong one)."""
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        state = self.current(uri) if isinstance(uri, str) else None
        if state is None or state.version != data.get("version"):
            return None
        return state

    def quick_fix_edits(self, state: LintState, data: dict) -> list[types.TextEdit]:
        """The fix's own edits, when they pass the structural check."""
        for finding in state.findings:
            if finding.code == data.get("code") and list(_span(finding)) == data.get("span"):
                own = fix_edits(state.text, state.path, finding, state.tree)
                return edits_to_text_edits(own, Positions(state.text, self.encoding)) if own else []
        return []

    def fix_all_edits(self, state: LintState) -> list[types.TextEdit]:
        """One edit over the span every applicable fix changes (until stable)."""
        codes = state.settings.codes_for(state.path)
        result = fix_source(SourceFile(state.path, state.text), codes, state.settings.unsafe_fixes,
                            state.settings.is_test_code(state.path), findings=state.findings)
        return text_edits(state.text, result.fixed, self.encoding) if result.changed else []

    def fill(self, action: types.CodeAction, state: LintState, edits: list[types.TextEdit]) -> None:
        if edits:
            action.edit = self.workspace_edit(action.data["uri"], state.version, edits)


def related_information(finding: Finding, uri: str, path: str, cell_uris: dict[int, str] | None = None
                        ) -> list[types.DiagnosticRelatedInformation] | None:
    """The finding's evidence chain as a diagnostic's related information (None without one): each
    link's why at the start of its line. A link in the checked document (`path`, as the server
    checks it) points at `uri`; one in a cell of the notebook at that cell (`cell_uris`: cell
    number -> uri); one in another file at that file, a relative path taken from the current
    folder, as the path of a document is (the analysis gives paths as `ptlint check` does)."""
    out = []
    for link in via_links(finding):
        if link.cell is not None and cell_uris and link.cell in cell_uris:
            target = cell_uris[link.cell]
        elif link.path == path:
            target = uri
        else:
            target = _fs_uri(os.path.abspath(link.path))
        start = types.Position(line=max(link.line - 1, 0), character=0)
        out.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=target, range=types.Range(start=start, end=start)), message=link.why))
    return out or None


def _span(finding: Finding) -> tuple[int, int, int, int]:
    return (finding.line, finding.column, finding.end_line, finding.end_column)


def _uri_path(uri: str) -> str:
    from pygls.uris import to_fs_path

    return to_fs_path(uri) or uri


def _fs_uri(path: str) -> str:
    """The file URI of an absolute path (the way back of _uri_path)."""
    from pygls.uris import from_fs_path

    return from_fs_path(path) or path


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
    async def code_action_resolve(ls: PtlintServer, params: types.CodeAction) -> types.CodeAction:
        return await ls.resolve_async(params)

    return server


# -- framing -----------------------------------------------------------------------------------

class FramingError(Exception):
    """A frame that cannot be read as sent: `fatal` when the stream cannot be followed past it."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


class FrameReader:
    """JSON-RPC frames (`Content-Length: N`, a blank line, N bytes) from a byte stream, read in
    a thread: `next()` is a body, None at the end of the stream, or raises FramingError."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def next(self) -> bytes | None:
        headers: dict[bytes, bytes] = {}
        garbage = False
        while True:
            line = self.stream.readline(MAX_HEADER_LINE + 1)
            if not line:
                return None
            if len(line) > MAX_HEADER_LINE and not line.endswith(b"\n"):
                self._skip_line()
                raise FramingError(f"a header line longer than {MAX_HEADER_LINE} bytes")
            if not line.strip():
                if headers or garbage:
                    break
                continue  # blank lines between frames
            found = re.search(rb"content-length\s*:", line, re.IGNORECASE)
            if found and found.start() > 0:  # a body that did not end its line ran into this header
                line, garbage = line[found.start():], True
            name, colon, value = line.partition(b":")
            if not colon or not re.fullmatch(rb"[!-9;-~]+", name.strip()):
                garbage = True
                continue
            headers[name.strip().lower()] = value.strip()
            if len(headers) > MAX_HEADERS:
                raise FramingError(f"more than {MAX_HEADERS} headers", fatal=True)
        length = headers.get(b"content-length")
        if length is None or not length.isdigit():
            raise FramingError("a frame without a Content-Length header" if length is None else
                               f"Content-Length {length[:40].decode('ascii', 'replace')!r} is not a number of bytes")
        size = int(length)
        if size > MAX_BODY:
            raise FramingError(f"Content-Length {size} is more than the {MAX_BODY} bytes this server accepts",
                               fatal=True)
        body = b""
        while len(body) < size:
            chunk = self.stream.read(size - len(body))
            if not chunk:
                return None
            body += chunk
        return body

    def _skip_line(self) -> None:
        while True:
            chunk = self.stream.readline(MAX_HEADER_LINE + 1)
            if not chunk or chunk.endswith(b"\n"):
                return


class _Writer:
    """Writes whole frames to the client's stream."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def close(self) -> None:
        self.stream.close()

    def write(self, data: bytes) -> None:
        self.stream.write(data)
        self.stream.flush()


def _serve_io(server: PtlintServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """pygls's stdio loop with framing that survives what a broken client sends (see the module
    docstring): pygls 2.1 ran out of memory on a huge Content-Length and stopped reading for
    good after some header errors."""
    server._stop_event = threading.Event()
    writer = _Writer(stdout)
    server.protocol.set_writer(writer)
    reader = FrameReader(stdin)

    def error(ident, code: int, message: str) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}).encode()
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def loop() -> None:
        running = asyncio.get_running_loop()
        while not server._stop_event.is_set():
            try:
                body = await running.run_in_executor(server.thread_pool, reader.next)
            except FramingError as exc:
                error(None, -32700, f"ptlint: {exc}")
                if exc.fatal:
                    return
                continue
            if body is None:
                return
            _handle_body(server, body, error)

    try:
        asyncio.run(loop())
    except BrokenPipeError:
        logger.error("The connection to the client is lost; shutting down.")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


def _handle_body(server: PtlintServer, body: bytes, error) -> None:
    """One message: handed to pygls, or answered with the JSON-RPC error that says why not."""
    from pygls.exceptions import JsonRpcException

    try:
        raw = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        error(None, -32700, f"Parse error: {str(exc)[:200]}")
        return
    if not isinstance(raw, dict):
        error(None, -32600, "Invalid Request: not a JSON object")
        return
    ident = raw.get("id")
    ident = ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None
    request = ident is not None and isinstance(raw.get("method"), str)
    try:
        message = json.loads(body, object_hook=server.protocol.structure_message)
        if not hasattr(message, "jsonrpc"):
            raise ValueError("not a JSON-RPC 2.0 message")
    except JsonRpcException as exc:
        logger.warning("unusable message: %s", exc)
        if request:
            error(ident, exc.CODE, f"Invalid params for {raw['method']}" if exc.CODE == -32602 else
                  f"Cannot read the request {raw['method']}")
        return
    except Exception as exc:  # noqa: BLE001 - whatever pygls makes of it, the server goes on
        logger.warning("unusable message: %s", exc)
        if request:
            error(ident, -32600, "Invalid Request")
        return
    try:
        server.protocol.handle_message(message)
    except (SystemExit, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception:  # a handler's bug: logged, the server goes on
        logger.exception("unable to handle a message")


def serve() -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    server = create_server()
    _warm_up()  # while the editor is still starting us, not on its first didOpen
    _serve_io(server, sys.stdin.buffer, sys.stdout.buffer)
