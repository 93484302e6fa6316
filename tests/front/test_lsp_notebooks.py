"""The language server with notebooks (notebook document sync) and with a config per folder,
driven over stdio by a real LSP client (pytest-lsp)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from test_lsp import SERVER_ENV, opened, published

PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
CELLS = [
    (types.NotebookCellKind.Markup, "markdown", "# Training\n"),
    (types.NotebookCellKind.Code, "python", "%matplotlib inline\nimport torch\nimport torch.nn.functional as F"),
    (types.NotebookCellKind.Code, "python", "!nvidia-smi\nfor x in loader:\n    loss = model(x)\n    print(loss.item())"),
    (types.NotebookCellKind.Code, "python", "logp = torch.log(F.softmax(x, dim=-1))"),
]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "ptlint", "lsp"],
                                              server_env=SERVER_ENV))
async def client(lsp_client: LanguageClient):
    capabilities = types.ClientCapabilities(notebook_document=types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities()))
    result = await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities))
    assert result.capabilities.notebook_document_sync is not None
    yield
    await lsp_client.shutdown_session()


def cell_uri(notebook: Path, index: int) -> str:
    return f"vscode-notebook-cell:{notebook.as_posix()}#W{index}sZmlsZQ%3D%3D"


async def published_all(client: LanguageClient, uris: list[str]) -> dict[str, list[types.Diagnostic]]:
    """The diagnostics published for each of `uris` since their record was cleared (they come in a
    burst, one per cell: read them from the client's record rather than awaiting each one)."""
    for _ in range(300):
        if all(uri in client.diagnostics for uri in uris):
            return {uri: list(client.diagnostics[uri]) for uri in uris}
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no diagnostics for {[u for u in uris if u not in client.diagnostics]}")


def edit_cell(client: LanguageClient, uri: str, cell_uris: list[str], index: int, text: str) -> None:
    """Replace the text of cell `index` (version 2 of the notebook), after clearing the client's
    record of every cell's diagnostics (published_all waits for the new ones)."""
    for cell in cell_uris:
        client.diagnostics.pop(cell, None)
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell_uris[index], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=text)])]))))


@pytest.mark.asyncio
async def test_notebook_cells_get_their_own_diagnostics(client: LanguageClient, tmp_path: Path):
    notebook = tmp_path / "train.ipynb"
    uri = notebook.as_uri()
    cells = [types.NotebookCell(kind=kind, document=cell_uri(notebook, i)) for i, (kind, _, _) in enumerate(CELLS)]
    documents = [types.TextDocumentItem(uri=cell_uri(notebook, i), language_id=language, version=1, text=text)
                 for i, (kind, language, text) in enumerate(CELLS) if kind == types.NotebookCellKind.Code]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=cells),
        cell_text_documents=documents))
    code_uris = [document.uri for document in documents]
    found = await published_all(client, code_uris)
    assert found[code_uris[0]] == []
    [sync] = found[code_uris[1]]
    assert sync.code == "PTL101"
    assert (sync.range.start.line, sync.range.start.character) == (3, 10)  # line 4 of its cell
    [log_softmax] = found[code_uris[2]]  # F comes from the cell before it
    assert log_softmax.code == "PTL302" and log_softmax.range.start == types.Position(line=0, character=7)
    assert log_softmax.code_description.href.endswith("/docs/rules/PTL302.md")

    # an edit to a cell re-checks the notebook; a cell's own code actions are not offered
    edit_cell(client, uri, code_uris, 2, "logp = F.log_softmax(x, dim=-1)")
    found = await published_all(client, code_uris)
    assert found[code_uris[2]] == []
    assert [d.code for d in found[code_uris[1]]] == ["PTL101"]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=code_uris[1]), range=sync.range,
        context=types.CodeActionContext(diagnostics=[sync])))
    assert not actions

    for code in code_uris:
        client.diagnostics.pop(code, None)
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in code_uris]))
    cleared = await published_all(client, code_uris)
    assert all(diagnostics == [] for diagnostics in cleared.values())


@pytest.mark.asyncio
async def test_each_document_uses_its_nearest_config(client: LanguageClient, tmp_path: Path):
    """As in `ptlint check`: a/ ignores PTL101, b/ selects only it; the order of opening is irrelevant."""
    text = "import torch\nfor x in xs:\n    y = net(x).item()\n    torch.cuda.synchronize()\n"
    for folder, config in (("a", 'ignore = ["PTL101"]'), ("b", 'select = ["PTL101"]')):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "pyproject.toml").write_text(f"[tool.ptlint]\n{config}\n")
    b = await opened(client, tmp_path / "b" / "m.py", text)
    a = await opened(client, tmp_path / "a" / "m.py", text)
    assert [d.code for d in a.diagnostics] == ["PTL102"]
    assert [d.code for d in b.diagnostics] == ["PTL101"]
    # an edited config applies from the next check
    (tmp_path / "a" / "pyproject.toml").write_text('[tool.ptlint]\nselect = ["PTL101"]\n\n')
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=(tmp_path / "a" / "m.py").as_uri())))
    again = await published(client, (tmp_path / "a" / "m.py").as_uri())
    assert [d.code for d in again.diagnostics] == ["PTL101"]


@pytest.mark.asyncio
async def test_compile_rules_in_a_notebook_follow_its_own_compile_evidence(client: LanguageClient, tmp_path: Path):
    """As in `ptlint check`: a `forward` nothing compiles has no graph to break; once a cell
    compiles the model, the break is reported."""
    notebook = tmp_path / "seq2seq.ipynb"
    uri = notebook.as_uri()
    texts = ["import random\nfrom torch import nn\n\n\nclass Decoder(nn.Module):\n    def forward(self, x):\n"
             "        if random.random() < 0.5:\n            return x\n        return self.out(x)\n",
             "decoder = Decoder()"]
    uris = [cell_uri(notebook, i) for i in range(len(texts))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=[
            types.NotebookCell(kind=types.NotebookCellKind.Code, document=u) for u in uris]),
        cell_text_documents=[types.TextDocumentItem(uri=u, language_id="python", version=1, text=text)
                             for u, text in zip(uris, texts)]))
    found = await published_all(client, uris)
    assert found[uris[0]] == [] and found[uris[1]] == []
    edit_cell(client, uri, uris, 1, "import torch\ndecoder = torch.compile(Decoder())")
    found = await published_all(client, uris)
    assert [(d.code, d.range.start.line) for d in found[uris[0]]] == [("PTL405", 6)]
