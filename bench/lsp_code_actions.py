"""Language-server code actions on a large document: how long a quick fix, its resolve and a
suppression take, and whether another request is answered meanwhile.

    python bench/lsp_code_actions.py                       # 50,000 lines, 10 requests of each kind
    python bench/lsp_code_actions.py --lines 5000 --requests 20
    python bench/lsp_code_actions.py --root /work/base-6232b71 --requests 1   # another checkout

The server (`python -m ptlint lsp`) runs as an editor starts it, over stdio; the document is
bench/lsp_latency.py's generated training code (a PTL301 finding with a fix every ~50 lines).
After the diagnostics of `didOpen` arrive, for findings near the end of the document (the worst
place for anything that walks the text from its start):

- codeAction (lazy client): the actions at the finding, without edits;
- resolve: the quick fix's edit;
- codeAction (client without resolve support): every edit computed at once (the quick fix and
  the suppression; "fix all" only for documents of up to FIX_ALL_EAGER_LINES lines);
- a second request sent right behind a resolve: when its answer comes (the server is not busy
  for long);
- with --fix-all: resolving "fix all" once (every fix in the file, linted again until stable), and
  a request sent while it runs (answered meanwhile: fix all runs in a thread).
Medians (min-max), in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lsp_latency import make_source  # noqa: E402 - the same generated document


def capabilities(lazy: bool) -> types.ClientCapabilities:
    code_action = types.CodeActionClientCapabilities(
        resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]) if lazy else None,
        code_action_literal_support=types.ClientCodeActionLiteralOptions(
            code_action_kind=types.ClientCodeActionKindOptions(value_set=["quickfix", "source.fixAll"])))
    return types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(code_action=code_action))


async def measure(path: Path, text: str, requests: int, lazy: bool, root: str | None,
                  fix_all: bool) -> dict[str, list[float]]:
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = root
    client = LanguageClient("ptlint-bench", "1")
    published: asyncio.Future = asyncio.get_running_loop().create_future()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        if params.diagnostics and not published.done():
            published.set_result(params.diagnostics)

    await client.start_io(sys.executable, "-m", "ptlint", "lsp", env=env)
    await client.initialize_async(types.InitializeParams(capabilities=capabilities(lazy)))
    client.initialized(types.InitializedParams())
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)))
    diagnostics = await asyncio.wait_for(published, 600)
    fixable = [d for d in diagnostics if d.data and d.data.get("fixable")][-requests:]
    timings: dict[str, list[float]] = {"codeAction": [], "resolve": [], "behind": []}
    for diagnostic in fixable:
        params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                                        range=diagnostic.range,
                                        context=types.CodeActionContext(diagnostics=[diagnostic]))
        start = time.perf_counter()
        actions = await asyncio.wait_for(client.text_document_code_action_async(params), 600)
        timings["codeAction"].append(time.perf_counter() - start)
        [fix] = [a for a in actions if a.kind == types.CodeActionKind.QuickFix and "noqa" not in a.title]
        if lazy:
            start = time.perf_counter()
            resolving = client.code_action_resolve_async(fix)
            behind = client.text_document_code_action_async(params)
            resolved = await asyncio.wait_for(resolving, 600)
            timings["resolve"].append(time.perf_counter() - start)
            await asyncio.wait_for(behind, 600)
            timings["behind"].append(time.perf_counter() - start)
            assert resolved.edit is not None, "the quick fix has no edit"
        else:
            assert fix.edit is not None, "the quick fix has no edit"
    if lazy and fix_all:
        diagnostic = fixable[-1]
        params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
                                        range=diagnostic.range,
                                        context=types.CodeActionContext(diagnostics=[diagnostic],
                                                                        only=["source.fixAll"]))
        [action] = await asyncio.wait_for(client.text_document_code_action_async(params), 600)
        start = time.perf_counter()
        resolving = client.code_action_resolve_async(action)
        await asyncio.sleep(0.2)  # the server is at work on it now
        sent = time.perf_counter()
        await asyncio.wait_for(client.text_document_code_action_async(params), 600)
        timings["behind fix all"] = [time.perf_counter() - sent]
        resolved = await asyncio.wait_for(resolving, 1200)
        timings["fix all"] = [time.perf_counter() - start]
        assert resolved.edit is not None, "fix all has no edit"
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {name: values for name, values in timings.items() if values}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50000)
    parser.add_argument("--requests", type=int, default=10)
    parser.add_argument("--root", help="the checkout whose ptlint serves (default: the installed one)")
    parser.add_argument("--fix-all", action="store_true", help="also resolve \"fix all\" once (lints the file "
                        "again: seconds on 50,000 lines), with a request sent meanwhile")
    args = parser.parse_args()
    text = make_source(args.lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.py"
        path.write_text(text)
        print(f"{args.lines}-line document, {args.requests} findings near its end, ptlint from "
              f"{args.root or 'the installed package'}; medians (min-max), ms")
        for lazy in (True, False):
            timings = asyncio.run(measure(path, text, args.requests, lazy, args.root, args.fix_all))
            client = "client with resolve support" if lazy else "client without resolve support"
            for name, values in timings.items():
                label = {"codeAction": "codeAction", "resolve": "resolve (the quick fix's edit)",
                         "behind": "a codeAction sent behind that resolve",
                         "fix all": "resolve of fix all (every fix, re-linted)",
                         "behind fix all": "a codeAction sent during that resolve"}[name]
                ms = [t * 1000 for t in values]
                print(f"  {client}: {label:<40} {statistics.median(ms):9.1f} ({min(ms):.1f}-{max(ms):.1f})")
        print(f"  load average {os.getloadavg()[0]:.2f}, {len(os.sched_getaffinity(0))} cores, "
              f"Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
