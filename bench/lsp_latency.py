"""Language-server latency: from `didOpen` (and `didChange`) to the `publishDiagnostics` for it.

    python bench/lsp_latency.py                  # 1,000-line file: 20 opens, 20 changes
    python bench/lsp_latency.py --lines 5000 --changes 50

The server (`python -m ptlint lsp`) runs as an editor would start it, over stdio. `didOpen` is
measured on a fresh document each time (another file of the same folder, closed afterwards; the
first open, which also imports the rules, is reported apart). `didChange` is measured twice: with
the default debounce (the pause after a change, so typing does not lint on every key) and with
`PTLINT_LSP_DEBOUNCE=0`, which leaves the processing time alone. The same text is also linted in
process (settings lookup + lint), to show what the server adds. Medians (min-max), in ms.
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

BLOCK = '''

class Block{n}(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.norm(x + torch.relu(self.proj(x)))


def train_{n}(model, loader, optimizer, device):
    model.train()
    total = 0.0
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.item()
        if step % 100 == 0:
            print(step, total / (step + 1))
    return total


def evaluate_{n}(model, loader):
    scores = []
    with torch.no_grad():
        for x, y in loader:
            probs = torch.exp(model(x)) / torch.exp(model(x)).sum(-1, keepdim=True)
            scores.append((probs.argmax(-1) == y).float().mean())
    return torch.stack(scores).mean()
'''
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def make_source(lines: int) -> str:
    text, n = HEADER, 0
    while text.count("\n") < lines:
        text += BLOCK.format(n=n)
        n += 1
    return "\n".join(text.split("\n")[:lines]) + "\n"


async def measure(path: Path, text: str, changes: int, debounce: str | None
                  ) -> tuple[list[float], list[float], float, int]:
    """(didOpen timings, didChange timings, the first didOpen, diagnostics in the last answer)."""
    env = dict(os.environ)
    env.pop("PTLINT_LSP_DEBOUNCE", None)
    if debounce is not None:
        env["PTLINT_LSP_DEBOUNCE"] = debounce
    client = LanguageClient("ptlint-bench", "1")
    waiting: dict[int, asyncio.Future] = {}
    counts: list[int] = []

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        future = waiting.pop(params.version, None)
        if future is not None and not future.done():
            counts.append(len(params.diagnostics))
            future.set_result(time.perf_counter())

    await client.start_io(sys.executable, "-m", "ptlint", "lsp", env=env)
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    loop = asyncio.get_running_loop()
    opens = []
    for index in range(changes + 1):
        # an editor opening another file of the project; version 1 is what a fresh document has
        other = path.with_name(f"model_{index}.py")
        other.write_text(text)
        future = waiting[1] = loop.create_future()
        start = time.perf_counter()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=other.as_uri(), language_id="python", version=1, text=text)))
        opens.append(await asyncio.wait_for(future, 60) - start)
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=other.as_uri())))
        await asyncio.sleep(0.05)
    uri = path.as_uri()
    waiting[1] = loop.create_future()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
    await asyncio.wait_for(waiting[1], 60)
    timings = []
    for version in range(2, changes + 2):
        # an edit as a user makes it: one line changes (a comment typed at the end of the file)
        changed = text + f"# edit {version}\n"
        future = waiting[version] = loop.create_future()
        start = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=changed)]))
        end = await asyncio.wait_for(future, 60)
        timings.append(end - start)
        await asyncio.sleep(0.05)  # the next keystroke comes after this one is answered
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return opens[1:], timings, opens[0], counts[-1] if counts else -1


def in_process(path: Path, text: str, repeat: int) -> tuple[list[float], list[float]]:
    """(wall, CPU) seconds of settings lookup + lint, in this process: what the server must do."""
    from ptlint.engine.registry import all_rules
    from ptlint.engine.source import SourceFile
    from ptlint.engine.traversal import lint_source
    from ptlint.run.config import build_settings

    rules = all_rules()
    timings, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        settings = build_settings([str(path)])
        lint_source(SourceFile(str(path), text), [rules[c] for c in settings.codes_for(str(path)) if c in rules])
        timings.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return timings, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=20)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from ptlint.front.lsp import DEBOUNCE

    text = make_source(args.lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.py"
        path.write_text(text)
        print(f"{args.lines}-line file, {args.changes} opens and {args.changes} changes, medians (min-max), ms")
        for label, debounce in ((f"default debounce ({DEBOUNCE * 1000:.0f} ms)", None), ("debounce 0", "0")):
            opens, timings, first, found = asyncio.run(measure(path, text, args.changes, debounce))
            if debounce is None:
                ms = [t * 1000 for t in opens]
                print(f"  didOpen   -> publishDiagnostics{'':<29} {statistics.median(ms):7.1f} "
                      f"({min(ms):.1f}-{max(ms):.1f})  [{found} diagnostics; first open {first * 1000:.1f}]")
            ms = [t * 1000 for t in timings]
            print(f"  didChange -> publishDiagnostics, {label:<26} {statistics.median(ms):7.1f} "
                  f"({min(ms):.1f}-{max(ms):.1f})")
        wall, cpu = in_process(path, text, args.changes)
        ms = [t * 1000 for t in wall]
        print(f"  settings + lint in process{'':<33} {statistics.median(ms):7.1f} ({min(ms):.1f}-{max(ms):.1f})"
              f"  [CPU {statistics.median(cpu) * 1000:.1f}]")
        print(f"  load average {os.getloadavg()[0]:.2f}, {len(os.sched_getaffinity(0))} cores, Python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
