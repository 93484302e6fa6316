"""The language server, driven end to end over stdio by a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp  # pygls and pytest-lsp are pinned by the test extra: missing is a failure, not a skip
from helpers import SYNC_LOSS_ITEM
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ptlint.engine.finding import UNSAFE, Finding
from ptlint.engine.registry import all_rules
from ptlint.front.api import check_text, fix_text
from ptlint.front.lsp import Positions, add_noqa, text_edits

# A `torch` that leaves a mark when imported: the server must never import it.
FAKE_TORCH = Path(tempfile.mkdtemp(prefix="ptlint-fake-torch-"))
TORCH_MARK = FAKE_TORCH / "torch-was-imported"
(FAKE_TORCH / "torch").mkdir()
(FAKE_TORCH / "torch" / "__init__.py").write_text(
    f"open({str(TORCH_MARK)!r}, 'w').close()\nraise ImportError('the static pass imported torch')\n")

SERVER_ENV = dict(os.environ, PYTHONPATH=os.pathsep.join([str(FAKE_TORCH), os.environ.get("PYTHONPATH", "")]))
SERVER_ENV.pop("PTLINT_LSP_DEBOUNCE", None)
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS

BAD = SYNC_LOSS_ITEM
GOOD = BAD.replace("        total += loss.item()\n", "        total += loss.detach()\n")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "ptlint", "lsp"],
                                              server_env=SERVER_ENV))
async def client(lsp_client: LanguageClient):
    capabilities = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),
        text_document=types.TextDocumentClientCapabilities(
            code_action=types.CodeActionClientCapabilities(
                resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]))))
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    yield
    server = lsp_client._server
    if server is not None and server.returncode is None:
        await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "ptlint", "lsp"],
                                              server_env=SERVER_ENV))
async def plain_client(lsp_client: LanguageClient):
    """A client without codeAction/resolve nor versioned edits, that prefers UTF-8 positions."""
    capabilities = types.ClientCapabilities(general=types.GeneralClientCapabilities(
        position_encodings=[types.PositionEncodingKind.Utf8, types.PositionEncodingKind.Utf16]))
    result = await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    yield
    await lsp_client.shutdown_session()


async def opened(client: LanguageClient, path: Path, text: str, version: int = 1) -> types.PublishDiagnosticsParams:
    """didOpen, then the diagnostics the server publishes for it."""
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return await published(client, uri)


async def changed(client: LanguageClient, uri: str, text: str, version: int) -> types.PublishDiagnosticsParams:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    return await published(client, uri)


async def published(client: LanguageClient, uri: str) -> types.PublishDiagnosticsParams:
    while True:
        params = await asyncio.wait_for(client.wait_for_notification(PUBLISH), timeout=30)
        if params.uri == uri:
            return params


async def actions_at(client: LanguageClient, uri: str, diagnostic: types.Diagnostic,
                     only: list[str] | None = None) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=only)))
    return [action for action in result or [] if isinstance(action, types.CodeAction)]


def apply_edit(text: str, edit: types.WorkspaceEdit, encoding: str = types.PositionEncodingKind.Utf16) -> str:
    """Apply a WorkspaceEdit as an editor would (positions in `encoding`, edits against the original)."""
    edits = [e for change in edit.document_changes or [] for e in change.edits]
    for uri_edits in (edit.changes or {}).values():
        edits.extend(uri_edits)
    positions = Positions(text, encoding)
    spans = sorted(((positions.to_offset(e.range.start), positions.to_offset(e.range.end), e.new_text)
                    for e in edits), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


@pytest.mark.asyncio
async def test_diagnostic_code_action_and_clearing(client: LanguageClient, tmp_path: Path):
    target = tmp_path / "train.py"
    params = await opened(client, target, BAD)
    assert [d.code for d in params.diagnostics] == ["PTL101"]
    diagnostic = params.diagnostics[0]
    assert diagnostic.range.start == types.Position(line=7, character=17)  # `loss.item()` on line 8
    assert diagnostic.range.end == types.Position(line=7, character=28)
    assert diagnostic.source == "ptlint"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.code_description.href.endswith("/docs/rules/PTL101.md")
    assert params.version == 1

    actions = await actions_at(client, target.as_uri(), diagnostic)
    titles = [action.title for action in actions]
    assert "Suppress with `# noqa: PTL101`" in titles
    suppress = actions[titles.index("Suppress with `# noqa: PTL101`")]
    suppressed = apply_edit(BAD, suppress.edit)
    assert "        total += loss.item()  # noqa: PTL101\n" in suppressed
    assert check_text(suppressed) == []

    params = await changed(client, target.as_uri(), GOOD, version=2)
    assert list(params.diagnostics) == []
    assert params.version == 2
    params = await changed(client, target.as_uri(), BAD, version=3)
    assert [d.code for d in params.diagnostics] == ["PTL101"]
    assert not TORCH_MARK.exists(), "the language server imported torch"


@pytest.mark.asyncio
async def test_syntax_error_then_still_serving(client: LanguageClient, tmp_path: Path):
    broken = tmp_path / "broken.py"
    params = await opened(client, broken, "import torch\ndef f(:\n    pass\n")
    assert [d.code for d in params.diagnostics] == ["PTL001"]
    assert params.diagnostics[0].severity == types.DiagnosticSeverity.Error
    assert params.diagnostics[0].range.start.line == 1
    # a code action request on it is answered (no noqa offer: a syntax error cannot be waved through)
    actions = await actions_at(client, broken.as_uri(), params.diagnostics[0])
    assert not any("noqa" in action.title for action in actions)
    # and the server keeps answering: another document, then the broken one fixed
    params = await opened(client, tmp_path / "ok.py", BAD)
    assert [d.code for d in params.diagnostics] == ["PTL101"]
    params = await changed(client, broken.as_uri(), "import torch\n", version=2)
    assert list(params.diagnostics) == []


@pytest.mark.asyncio
async def test_non_bmp_characters_use_utf16_columns(client: LanguageClient, tmp_path: Path):
    text = BAD.replace("        total += loss.item()\n", "        s = '😀😀'; total += loss.item()\n")
    params = await opened(client, tmp_path / "emoji.py", text)
    [diagnostic] = params.diagnostics
    line = text.splitlines()[7]
    characters = line.index("loss.item()")
    assert diagnostic.range.start.character == characters + 2  # each emoji is two UTF-16 units
    assert diagnostic.range.end.character == characters + 2 + len("loss.item()")


@pytest.mark.asyncio
async def test_config_is_honoured_and_a_bad_one_reported(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.ptlint]\nignore = ["PTL101"]\nexclude = ["gen"]\n')
    params = await opened(client, project / "quiet.py", BAD)
    assert list(params.diagnostics) == []
    (project / "gen").mkdir()
    (project / "pyproject.toml").write_text('[tool.ptlint]\nexclude = ["gen"]\n')
    params = await opened(client, project / "gen" / "skipped.py", BAD)
    assert list(params.diagnostics) == []
    # the config is read again when a file is saved: PTL101 is no longer ignored
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=(project / "quiet.py").as_uri())))
    params = await published(client, (project / "quiet.py").as_uri())
    assert [d.code for d in params.diagnostics] == ["PTL101"]

    broken = tmp_path / "broken_config"
    broken.mkdir()
    (broken / "pyproject.toml").write_text('[tool.ptlint]\nselect = ["PTL999"]\n')
    params = await opened(client, broken / "a.py", BAD)
    assert [d.code for d in params.diagnostics] == ["PTL101"]  # the default rules
    for _ in range(50):
        if client.messages:
            break
        await asyncio.sleep(0.1)
    [message] = client.messages
    assert message.type == types.MessageType.Error
    assert "PTL999" in message.message


def _single_fix_cases():
    """Fix examples of the registered rules whose `before` has exactly one fixable finding."""
    cases = []
    for code, cls in all_rules().items():
        for example in cls.fix_examples:
            findings = [f for f in check_text(example.before, [code]) if f.fix]
            if len(findings) == 1 and (example.unsafe or findings[0].fix.applicability != UNSAFE):
                cases.append((code, example.before, example.unsafe))
    return cases


@pytest.mark.asyncio
async def test_quick_fix_and_fix_all_match_the_fixer(client: LanguageClient, tmp_path: Path):
    cases = _single_fix_cases()
    assert cases, "no registered rule has a single-finding fix example: this test would prove nothing"
    default_codes = [c for c, cls in all_rules().items() if cls.default]
    for number, (code, before, unsafe) in enumerate(cases):
        folder = tmp_path / f"case{number}"
        folder.mkdir()
        (folder / "pyproject.toml").write_text(
            f'[tool.ptlint]\nextend-select = ["{code}"]\nunsafe-fixes = {str(unsafe).lower()}\n')
        target = folder / "case.py"
        params = await opened(client, target, before)
        [diagnostic] = [d for d in params.diagnostics if d.code == code and d.data and d.data.get("fixable")]
        actions = await actions_at(client, target.as_uri(), diagnostic)
        [fix] = [a for a in actions if "noqa" not in a.title and a.kind == types.CodeActionKind.QuickFix]
        fix = await client.code_action_resolve_async(fix)
        assert apply_edit(before, fix.edit) == fix_text(before, [code], unsafe=unsafe), code

        [fix_all] = await actions_at(client, target.as_uri(), diagnostic, only=["source.fixAll"])
        assert fix_all.kind == "source.fixAll.ptlint"
        fix_all = await client.code_action_resolve_async(fix_all)
        assert apply_edit(before, fix_all.edit) == fix_text(before, sorted({*default_codes, code}), unsafe=unsafe)


@pytest.mark.asyncio
async def test_shutdown_and_exit(client: LanguageClient, tmp_path: Path):
    await opened(client, tmp_path / "a.py", BAD)
    await client.shutdown_session()
    assert client._server.returncode == 0
    assert not TORCH_MARK.exists()


@pytest.mark.asyncio
async def test_utf8_client_without_resolve_gets_edits_at_once(plain_client: LanguageClient, tmp_path: Path):
    text = "# 😀 é\n" + BAD.replace("        total += loss.item()\n", "        s = 'é😀'; total += loss.item()\n")
    params = await opened(plain_client, tmp_path / "utf8.py", text)
    [diagnostic] = params.diagnostics
    line = text.splitlines()[8]
    assert diagnostic.range.start == types.Position(
        line=8, character=len(line[:line.index("loss.item()")].encode("utf-8")))
    actions = await actions_at(plain_client, (tmp_path / "utf8.py").as_uri(), diagnostic)
    [suppress] = [a for a in actions if "noqa" in a.title]
    assert suppress.edit.changes and not suppress.edit.document_changes
    fixed = apply_edit(text, suppress.edit, types.PositionEncodingKind.Utf8)
    assert fixed == text.replace(line + "\n", line + "  # noqa: PTL101\n")

    cases = _single_fix_cases()
    safe = [(code, before) for code, before, unsafe in cases if not unsafe and all_rules()[code].default]
    assert safe, "no default rule has a safe single-finding fix example"
    code, before = safe[0]
    params = await opened(plain_client, tmp_path / "fix.py", before)
    [diagnostic] = [d for d in params.diagnostics if d.code == code and d.data.get("fixable")]
    actions = await actions_at(plain_client, (tmp_path / "fix.py").as_uri(), diagnostic)
    [fix] = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and "noqa" not in a.title]
    assert apply_edit(before, fix.edit, types.PositionEncodingKind.Utf8) == fix_text(before, [code])
    [fix_all] = [a for a in actions if a.kind == "source.fixAll.ptlint"]
    assert apply_edit(before, fix_all.edit, types.PositionEncodingKind.Utf8) == fix_text(before)


# -- the pieces, in process ------------------------------------------------------------------

@pytest.mark.parametrize("old,new", [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("a\nb", "a\nb\nc"),
    ("import x\n\ny = 1\n", "import torch\nimport x\n\ny = 1\n"),
    ("x = '😀'\r\ny = 2\r\n", "x = '😀'\r\ny = 3\r\n"),
    ("a\x0cb\nc\n", "a\x0cb\nC\n"),
    ("", "x = 1\n"),
    ("x = 1\n", ""),
])
def test_text_edits_reproduce_the_new_text(old, new):
    assert apply_edit(old, types.WorkspaceEdit(changes={"u": text_edits(old, new)})) == new


def test_positions_in_each_encoding():
    text = "a = '😀é'; b\n"
    column = text.index("b") + 1
    # the emoji counts 2 UTF-16 units
    assert Positions(text, types.PositionEncodingKind.Utf16).from_finding(1, column).character == column
    assert Positions(text, types.PositionEncodingKind.Utf8).from_finding(1, column).character == \
        len(text[:column - 1].encode("utf-8"))
    assert Positions(text, types.PositionEncodingKind.Utf32).from_finding(1, column).character == column - 1
    positions = Positions(text)
    assert positions.to_offset(positions.from_finding(1, column)) == column - 1


@pytest.mark.parametrize("with_tree", [False, True], ids=["whole-text", "statement-only"])
def test_noqa_extends_existing_comments_and_refuses_strings(with_tree):
    """With the tree, only the statement around the line is tokenised: the same answers."""
    import ast

    line = "        total += loss.item()"

    def noqa(text):
        [finding] = [f for f in check_text(text) if f.code == "PTL101"]  # `# noqa:PTL999` also gets a PTL002
        return add_noqa(text, "<t>", finding, ast.parse(text) if with_tree else None)

    for tail, expected in [("  # noqa: E501", "  # noqa: E501, PTL101"),
                           ("  # why not", "  # why not  # noqa: PTL101"),
                           ("   ", "  # noqa: PTL101"),
                           ("  # noqa:PTL999 (why)", "  # noqa:PTL999, PTL101 (why)")]:
        text = BAD.replace(line + "\n", line + tail + "\n")
        assert noqa(text) == BAD.replace(line + "\n", line + expected + "\n")
    # the reported line ends inside a string, or after a line continuation: no comment there can
    # suppress it; a bare noqa already does
    assert noqa(BAD.replace(line + "\n", '        total += loss.item() + len("""\n""")\n')) is None
    assert noqa(BAD.replace(line + "\n", "        total += loss.item() + \\\n            1\n")) is None
    # the line of a multi-line call, inside brackets: a comment there works
    text = BAD.replace(line + "\n", "        total += max(\n            loss.item(), 0)\n")
    [finding] = check_text(text)
    fixed = add_noqa(text, "<t>", finding, ast.parse(text) if with_tree else None)
    assert fixed is not None and not check_text(fixed)


# -- code actions are the fixes' own edits, not a diff of the document ------------------------------

@pytest.mark.asyncio
async def test_a_quick_fix_is_the_fixs_own_edits(client: LanguageClient, tmp_path: Path):
    """The resolved edit is exactly the finding's edits (positions and text), and "fix all" is one
    edit over the span that changed: nothing compares the whole document line by line."""
    text = "import torch\nimport torch.nn.functional as F\n\n" + "x = 1\n" * 2000 + \
        "def f(x):\n    a = torch.log(torch.softmax(x, -1))\n    b = torch.log(F.softmax(x, 1))\n" + "y = 2\n" * 2000
    (tmp_path / "pyproject.toml").write_text('[tool.ptlint]\nselect = ["PTL302"]\n')
    path = tmp_path / "big.py"
    params = await opened(client, path, text)
    findings = check_text(text, ["PTL302"])
    assert len(findings) == 2 and len(params.diagnostics) == 2
    diagnostic = params.diagnostics[0]
    [fix] = [a for a in await actions_at(client, path.as_uri(), diagnostic)
             if a.kind == types.CodeActionKind.QuickFix and "noqa" not in a.title]
    fix = await client.code_action_resolve_async(fix)
    [change] = fix.edit.document_changes
    positions = Positions(text)
    expected = sorted(findings[0].fix.edits, key=lambda e: (e.line, e.column))
    assert [(e.range.start, e.range.end, e.new_text) for e in change.edits] == [
        (positions.from_finding(e.line, e.column), positions.from_finding(e.end_line, e.end_column), e.content)
        for e in expected]
    [fix_all] = await actions_at(client, path.as_uri(), diagnostic, only=["source.fixAll"])
    fix_all = await client.code_action_resolve_async(fix_all)
    [edit] = fix_all.edit.document_changes[0].edits
    line = text.splitlines().index("def f(x):") + 1
    assert (edit.range.start.line, edit.range.end.line) == (line, line + 1)  # the changed lines, not the file
    assert apply_edit(text, fix_all.edit) == fix_text(text, ["PTL302"])
    [suppress] = [a for a in await actions_at(client, path.as_uri(), diagnostic) if "noqa" in a.title]
    [insertion] = suppress.edit.document_changes[0].edits
    assert insertion.range.start == insertion.range.end and insertion.new_text == "  # noqa: PTL302"


@pytest.mark.asyncio
async def test_a_quick_fix_that_fails_the_structural_check_is_not_offered_as_an_edit(
        plain_client: LanguageClient, tmp_path: Path):
    """A client without resolve support gets the edits at once: a fix that would break the code
    comes without an edit, never with a broken one."""
    from ptlint.front import lsp

    text = "import torch\n\ndef f(h):\n    return(torch.exp(h) - 1.0) / h\n"
    [finding] = check_text(text, ["PTL305"])
    assert lsp.fix_one(text, "a.py", finding) == "import torch\n\ndef f(h):\n    return torch.expm1(h) / h\n"
    glued = Finding(**{**vars(finding), "fix": finding.fix._replace(
        edits=tuple(e._replace(content=e.content.strip()) for e in finding.fix.edits))})
    assert lsp.fix_edits(text, "a.py", glued) is None and lsp.fix_one(text, "a.py", glued) is None


@pytest.mark.parametrize("old,new,span", [
    ("a\r\nb\r\n", "a\r\nc\r\n", ((1, 0), (1, 1), "c")),
    ("x\r\n", "x\r\ny\r\n", ((1, 0), (1, 0), "y\r\n")),
    ("abc", "abc", None),
    ("same start, end", "same start, other end", ((0, 12), (0, 12), "other ")),
])
def test_text_edits_is_one_edit_over_the_changed_span(old, new, span):
    edits = text_edits(old, new)
    if span is None:
        assert edits == []
        return
    [edit] = edits
    (line, character), (end_line, end_character), content = span
    assert (edit.range.start.line, edit.range.start.character) == (line, character)
    assert (edit.range.end.line, edit.range.end.character) == (end_line, end_character)
    assert edit.new_text == content
    assert apply_edit(old, types.WorkspaceEdit(changes={"u": edits})) == new


# -- the evidence chain (Finding.via) as related information ----------------------------------------

# The server run with the traversal's lint functions replaced: each finding's chain is the
# `# via: [path, line, why]` comments of the checked text ("<self>": the checked file; in a
# notebook, lines of the joined module), a stand-in for the analysis that fills chains. It runs in
# VIA_CWD, where relative paths of other files start.
VIA_CWD = Path(tempfile.mkdtemp(prefix="ptlint-lsp-cwd-")).resolve()
VIA_SERVER = f"""
import json, os, re
import ptlint.engine.traversal as traversal
import ptlint.front.lsp as lsp
from ptlint.engine.finding import Finding

real = traversal.lint_and_summarize

def lint_and_summarize(source, *args, **kwargs):
    chain = tuple((source.path if path == "<self>" else path, line, why)
                  for path, line, why in (json.loads(m) for m in re.findall(r"# via: (\\[.*\\])", source.text)))
    findings, summary = real(source, *args, **kwargs)
    return [Finding(**{{**vars(f), "via": chain}}) if chain else f for f in findings], summary

def lint_source(source, *args, **kwargs):
    return lint_and_summarize(source, *args, **kwargs)[0]

traversal.lint_and_summarize = lsp.lint_and_summarize = lint_and_summarize
traversal.lint_source = lsp.lint_source = lint_source
os.chdir({str(VIA_CWD)!r})
lsp.serve()
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-c", VIA_SERVER], server_env=SERVER_ENV))
async def via_client(lsp_client: LanguageClient):
    capabilities = types.ClientCapabilities(notebook_document=types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()))
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    yield
    await lsp_client.shutdown_session()


def _related(diagnostic: types.Diagnostic) -> list[tuple[str, int, int, int, int, str]]:
    return [(info.location.uri, info.location.range.start.line, info.location.range.start.character,
             info.location.range.end.line, info.location.range.end.character, info.message)
            for info in diagnostic.related_information or []]


@pytest.mark.asyncio
async def test_the_chain_is_related_information(via_client: LanguageClient, tmp_path: Path):
    outside = tmp_path / "shared" / "engine.py"
    chain = ('# via: ["<self>", 6, "for x in loader"]\n'
             '# via: ["pkg/engine.py", 45, "calls train_step"]\n'
             f'# via: [{json.dumps(str(outside))}, 12, "calls reduce_metrics"]\n')
    target = tmp_path / "train.py"
    params = await opened(via_client, target, BAD + chain)
    [diagnostic] = params.diagnostics
    assert diagnostic.code == "PTL101" and diagnostic.range.start == types.Position(line=7, character=17)
    assert _related(diagnostic) == [
        (target.as_uri(), 5, 0, 5, 0, "for x in loader"),  # the document itself
        ((VIA_CWD / "pkg" / "engine.py").as_uri(), 44, 0, 44, 0, "calls train_step"),  # from the server's folder
        (outside.as_uri(), 11, 0, 11, 0, "calls reduce_metrics"),
    ]
    # the diagnostic a code action carries is the published one
    [suppress] = [a for a in await actions_at(via_client, target.as_uri(), diagnostic) if "noqa" in a.title]
    assert _related(suppress.diagnostics[0]) == _related(diagnostic)
    # no declared chain: the analysis's own, the loop around the read
    params = await changed(via_client, target.as_uri(), BAD, version=2)
    [diagnostic] = params.diagnostics
    assert _related(diagnostic) == [(target.as_uri(), 5, 0, 5, 0, "for x in loader")]


@pytest.mark.asyncio
async def test_a_link_in_a_notebook_points_at_its_cell(via_client: LanguageClient, tmp_path: Path):
    """The module of the cells: 1 marker, 2-3 cell 1, 4 marker, 5-6 cell 2: module line 5 is the
    loop, cell 2's line 1; a link in another file points at that file."""
    notebook = tmp_path / "train.ipynb"
    uris = [f"vscode-notebook-cell:{notebook.as_posix()}#W{index}sZmlsZQ%3D%3D" for index in range(2)]
    texts = ['import torch  # via: ["<self>", 5, "for x in loader"]\n# via: ["/abs/data.py", 3, "calls load"]',
             "for x in loader:\n    y = net(x).item()"]
    via_client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=notebook.as_uri(), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri) for uri in uris]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
                             for uri, text in zip(uris, texts)]))
    for _ in range(300):  # one publication a cell, in a burst: read the client's record
        if all(uri in via_client.diagnostics for uri in uris):
            break
        await asyncio.sleep(0.1)
    assert list(via_client.diagnostics[uris[0]]) == []
    [diagnostic] = via_client.diagnostics[uris[1]]
    assert diagnostic.range.start.line == 1
    assert _related(diagnostic) == [(uris[1], 0, 0, 0, 0, "for x in loader"),
                                    (Path("/abs/data.py").as_uri(), 2, 0, 2, 0, "calls load")]


PROJECT_SCRIPT = """import torch
from helpers import log_metrics


def main():
    model = torch.nn.Linear(4, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in [torch.randn(8, 4) for _ in range(10)]:
        loss = model(batch.cuda()).sum()
        loss.backward()
        opt.step()
        log_metrics(loss)


main()
"""
PROJECT_HELPER = """import torch


def log_metrics(loss):
    print(loss.item())
"""


@pytest.mark.asyncio
async def test_editing_a_caller_updates_the_helper_it_calls(client: LanguageClient, tmp_path: Path):
    """The server keeps the project in memory: the helper's finding exists because the script
    calls it every step (with that chain as related information); when an edit of the script
    moves the call out of the loop, the helper's diagnostics are published again, empty."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(PROJECT_SCRIPT)
    helper = await opened(client, tmp_path / "helpers.py", PROJECT_HELPER)
    assert [d.code for d in helper.diagnostics] == ["PTL101"]
    assert [(r.location.uri, r.location.range.start.line, r.message) for r in helper.diagnostics[0].related_information] \
        == [((tmp_path / "train.py").as_uri(), 7, "for batch in [torch.randn(8, 4) for _ in range(10)]"),
            ((tmp_path / "train.py").as_uri(), 11, "calls `log_metrics`")]
    script = await opened(client, tmp_path / "train.py", PROJECT_SCRIPT)
    helper_uri = (tmp_path / "helpers.py").as_uri()
    edited = PROJECT_SCRIPT.replace("        log_metrics(loss)\n", "    log_metrics(loss)\n")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=script.uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
    again = await published(client, helper_uri)
    assert list(again.diagnostics) == []


EPOCH_MAIN = """import torch
from engine import run_epoch


def main(model, loader, optimizer, epochs):
    model.cuda()
    for epoch in range(epochs):
        stats = run_epoch(model, loader, optimizer)
        print(stats.item())


main(None, [], None, 3)
"""
EPOCH_ENGINE = """import torch


def run_epoch(model, loader, optimizer):
    total = torch.zeros((), device="cuda")
    for x in loader:
        loss = model(x.cuda()).mean()
        loss.backward()
        optimizer.step()
        total += loss.detach()
    return total
"""


@pytest.mark.asyncio
async def test_editing_a_helper_updates_the_files_that_call_it(client: LanguageClient, tmp_path: Path):
    """`run_epoch` holds the batch loop, so the script's epoch loop reads its result once per
    epoch (no finding); an edit of the helper that drops its loop makes each call one step, and
    the script's diagnostics are published again with the read."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "engine.py").write_text(EPOCH_ENGINE)
    script = await opened(client, tmp_path / "main.py", EPOCH_MAIN)
    assert list(script.diagnostics) == []
    helper = await opened(client, tmp_path / "engine.py", EPOCH_ENGINE)
    one_step = EPOCH_ENGINE.replace("    for x in loader:\n        loss", "    x = loader\n    if True:\n        loss")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=helper.uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=one_step)]))
    again = await published(client, script.uri)
    assert [(d.code, d.range.start.line) for d in again.diagnostics] == [("PTL101", 8)]
