"""The language server survives what editors and broken clients send: malformed JSON-RPC, unknown
methods, bad params, documents that do not parse or hold odd characters, 200 edits in a burst
(the last diagnostics match the last text), and 1,000 edits without its memory growing.

Driven over raw stdio with our own framing, so that we can send what no well-behaved client would.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pygls  # noqa: F401  pinned by the test extra: without it `ptlint lsp` cannot start, so fail here
import pytest
from helpers import SYNC_LOSS_ITEM

from ptlint.front.api import check_text

BAD = SYNC_LOSS_ITEM


class Server:
    """`ptlint lsp` in a child process, spoken to in raw Content-Length frames."""

    def __init__(self, cwd: Path, debounce: str | None = None) -> None:
        env = dict(os.environ)
        env.pop("PTLINT_LSP_DEBOUNCE", None)
        if debounce is not None:
            env["PTLINT_LSP_DEBOUNCE"] = debounce
        self.stderr = open(cwd / "server.stderr", "w+b")
        self.process = subprocess.Popen([sys.executable, "-m", "ptlint", "lsp"], cwd=cwd, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.messages: queue.Queue = queue.Queue()
        self.published: dict[str, dict] = {}
        self.replies: dict = {}  # id -> the server's response, for every response read so far
        self.seen: list[str] = []  # the last messages, for failure reports
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            body = json.loads(stream.read(length))
            self.messages.put(body)

    # -- sending ----------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send_body(self, body: bytes) -> None:
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict) -> None:
        self.send_body(json.dumps(message).encode())

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params=None, timeout: float = 90) -> dict:
        self.next_id += 1
        ident = self.next_id
        message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.wait(lambda m: m.get("id") == ident and "method" not in m, timeout)

    # -- receiving --------------------------------------------------------------------------------
    def wait(self, predicate, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no matching message in {timeout} s; last seen: {self.seen}; "
                                     f"stderr: {self.stderr_text()[-2000:]}")
            try:
                message = self.messages.get(timeout=remaining)
            except queue.Empty:
                continue
            if message is None:
                raise AssertionError(f"the server closed its output; stderr: {self.stderr_text()[-2000:]}")
            self.seen = (self.seen + [json.dumps(message)[:300]])[-8:]
            if "id" in message and "method" not in message:
                self.replies[json.dumps(message["id"])] = message
            if message.get("method") == "textDocument/publishDiagnostics":
                self.published[message["params"]["uri"]] = message["params"]
            if "id" in message and "method" in message:  # a request from the server: answer it
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            if predicate(message):
                return message

    def diagnostics(self, uri: str, version: int | None = None, timeout: float = 90) -> dict:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri
                         and (version is None or m["params"].get("version") == version), timeout)["params"]

    def stderr_text(self) -> str:
        self.stderr.flush()
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")

    def rss_kb(self) -> int:
        with open(f"/proc/{self.process.pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    # -- documents --------------------------------------------------------------------------------
    def initialize(self, root: Path) -> dict:
        reply = self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                            "capabilities": {}})
        self.notify("initialized", {})
        return reply

    def open(self, uri: str, text: str, version: int = 1, language: str = "python") -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                              "version": version, "text": text}})

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": [{"text": text}]})

    def alive_and_linting(self, root: Path, name: str = "probe.py") -> None:
        """The server still answers: a fresh document gets its PTL101 diagnostic."""
        assert self.process.poll() is None, self.stderr_text()
        uri = (root / name).as_uri()
        self.open(uri, BAD)
        assert [d["code"] for d in self.diagnostics(uri)["diagnostics"]] == ["PTL101"]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.request("shutdown", timeout=10)
                self.notify("exit", None)
                self.process.wait(timeout=10)
            except Exception:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


@pytest.fixture
def server(tmp_path):
    server = Server(tmp_path)
    reply = server.initialize(tmp_path)
    assert "capabilities" in reply["result"]
    yield server
    server.close()


def test_malformed_json_rpc(server, tmp_path):
    for body in (b"{not json", b"", b"null", b"[1, 2, 3]", b'"a string"', b"42", b'{"jsonrpc": "2.0"}',
                 b'{"jsonrpc": "2.0", "id": 99}', b'{"jsonrpc": "1.0", "id": 98, "method": "shutdownx"}',
                 b'{"id": {"nested": true}, "method": 7}', "{\"x\": \"\udc80\"}".encode("utf-8", "surrogatepass"),
                 b"\xff\xfe\x00garbage"):
        server.send_body(body)
    server.alive_and_linting(tmp_path, "after_bodies.py")
    # a frame whose header is garbage, then a proper message: the stream recovers
    server.send_raw(b"X-Nonsense: 1\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
                    b"Content-Length: 2\r\n\r\n{}")
    server.alive_and_linting(tmp_path, "after_headers.py")


def test_unknown_methods_and_bad_notifications(server, tmp_path):
    reply = server.request("ptlint/noSuchMethod", {"x": 1})
    assert reply["error"]["code"] == -32601  # method not found
    server.notify("ptlint/noSuchNotification", {"x": 1})
    server.notify("$/cancelRequest", {"id": 12345})
    # bad params for the notifications the server does handle: no reply (notifications get none)
    uri = (tmp_path / "a.py").as_uri()
    server.notify("textDocument/didOpen", {"textDocument": {"uri": uri}})  # no text, version, language
    server.notify("textDocument/didOpen", {"textDocument": "not an object"})
    server.notify("textDocument/didOpen", None)
    server.notify("textDocument/didChange", {"textDocument": {"uri": (tmp_path / "never_opened.py").as_uri(),
                                                              "version": 3}, "contentChanges": [{"text": "x"}]})
    server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": "three"},
                                             "contentChanges": "no"})
    server.notify("textDocument/didSave", {"textDocument": {"uri": (tmp_path / "never_opened.py").as_uri()}})
    server.notify("textDocument/didClose", {"textDocument": {"uri": (tmp_path / "never_opened.py").as_uri()}})
    server.alive_and_linting(tmp_path)
    assert list(server.replies) == [json.dumps(id_) for id_ in range(1, server.next_id + 1)]  # ours only


def test_requests_with_params_of_the_wrong_shape(server, tmp_path):
    """JSON-RPC's answer is error -32602 (invalid params). pygls 2.1 sends no reply at all to
    requests whose params it cannot structure; either way the server keeps serving."""
    uri = (tmp_path / "a.py").as_uri()
    ids = []
    for params in ({"textDocument": {"uri": uri}}, None, {"title": 5}):
        ids.append(1000 + len(ids))
        server.send({"jsonrpc": "2.0", "id": ids[-1], "method": "textDocument/codeAction", "params": params})
    ids.append(2000)
    server.send({"jsonrpc": "2.0", "id": 2000, "method": "codeAction/resolve", "params": {"no": "title"}})
    server.alive_and_linting(tmp_path)
    for ident in ids:
        reply = server.replies.get(json.dumps(ident))
        assert reply is None or reply["error"]["code"] == -32602, reply


FAR = {"start": {"line": 10**6, "character": 10**9}, "end": {"line": 10**9, "character": 0}}


def test_requests_about_a_document_in_use(server, tmp_path):
    """Ranges far outside it, data from an older version, a span with no finding: no action, no edit."""
    uri = (tmp_path / "a.py").as_uri()
    server.open(uri, BAD)
    assert server.diagnostics(uri)["diagnostics"]
    reply = server.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": FAR,
                                                       "context": {"diagnostics": []}})
    assert reply["result"] == []
    near = {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": 40}}
    actions = server.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": near,
                                                         "context": {"diagnostics": []}})["result"]
    assert [a["title"] for a in actions] == ["Suppress with `# noqa: PTL101`"]
    for data in ({"uri": uri, "action": "fix", "version": 1, "code": "PTL101", "span": [1, 1, 1, 1]},  # no such finding
                 {"uri": uri, "action": "fixAll", "version": 0},  # an older version
                 {"uri": uri, "action": "fix", "version": 1, "code": "PTL101", "span": [8, 18, 8, 29]}):  # no fix
        reply = server.request("codeAction/resolve", {"title": "x", "data": data})
        assert reply["result"] == {"title": "x", "data": data}, reply
    server.alive_and_linting(tmp_path)


@pytest.mark.parametrize("data", ["garbage", {"uri": 5, "action": "fixAll"}, None, {"action": "fixAll"}],
                         ids=["string", "uri-not-a-string", "none", "no-uri"])
def test_resolve_with_data_that_is_not_ours(server, tmp_path, data):
    """The action comes back as it went, without an edit."""
    reply = server.request("codeAction/resolve", {"title": "x", "data": data})
    assert reply["result"] == ({"title": "x"} if data is None else {"title": "x", "data": data})
    server.alive_and_linting(tmp_path)


def test_requests_about_documents_never_opened(server, tmp_path):
    """No document, no actions and no edit (not an internal error with a traceback)."""
    uri = (tmp_path / "never_opened.py").as_uri()
    for target in (uri, "file:///no/such/file.py"):
        reply = server.request("textDocument/codeAction", {"textDocument": {"uri": target}, "range": FAR,
                                                           "context": {"diagnostics": []}})
        assert reply.get("result") == [], reply.get("error", {}).get("message")
    for data in ({"uri": uri, "action": "fix", "version": 1, "code": "PTL101", "span": [1, 1, 1, 1]},
                 {"uri": uri, "action": "fixAll", "version": None}):
        reply = server.request("codeAction/resolve", {"title": "x", "data": data})
        assert reply.get("result") == {"title": "x", "data": data}, reply.get("error", {}).get("message")
    server.alive_and_linting(tmp_path)


def test_code_actions_on_positions_outside_the_document(server, tmp_path):
    uri = (tmp_path / "a.py").as_uri()
    server.open(uri, BAD)
    diagnostics = server.diagnostics(uri)["diagnostics"]
    assert diagnostics
    far = {"start": {"line": 500, "character": 500}, "end": {"line": 600, "character": 0}}
    reply = server.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": far,
                                                       "context": {"diagnostics": diagnostics}})
    assert reply["result"] == []
    server.alive_and_linting(tmp_path)


EXPECTED_CODES = {"syntax": ["PTL001"], "nul": ["PTL001"], "surrogate": ["PTL001"], "nonbmp": ["PTL101"],
                  "empty": [], "crlf": ["PTL101"], "form-feed": ["PTL101"],
                  "py312": [] if sys.version_info >= (3, 12) else ["PTL001"]}


@pytest.mark.parametrize("name,text", [
    ("syntax", "import torch\ndef f(:\n"),
    ("nul", "import torch\nx = 1\x00\n"),
    ("deep", "x = " + "+".join(["a"] * 50_000) + "\n"),
    ("parens", "x = " + "(" * 1000 + ")" * 1000 + "\n"),
    ("surrogate", "import torch\ns = '\ud800'\nfor x in xs:\n    net(x).item()\n"),
    ("nonbmp", "import torch\nfor x in xs:\n    s = '\U0001f525'; net(x).item()\n"),
    ("empty", ""),
    ("crlf", BAD.replace("\n", "\r\n")),
    ("bom", "\ufeff" + BAD),  # editors strip the BOM; one that does not gets PTL001 (Python's view of str)
    ("form-feed", "import torch\n\x0c\nfor x in xs:\n    net(x).item()\n"),
    ("py312", "def f[T](x: T) -> T:\n    return x\n"),
])
def test_documents_that_do_not_parse_or_are_odd(server, tmp_path, name, text):
    uri = (tmp_path / f"{name}.py").as_uri()
    server.open(uri, text)
    params = server.diagnostics(uri)
    if name in EXPECTED_CODES:
        assert [d["code"] for d in params["diagnostics"]] == EXPECTED_CODES[name]
    reply = server.request("textDocument/codeAction", {"textDocument": {"uri": uri},
                                                       "range": {"start": {"line": 0, "character": 0},
                                                                 "end": {"line": 0, "character": 0}},
                                                       "context": {"diagnostics": params["diagnostics"]}})
    assert reply["result"] == []  # no finding on the first line has a fix or can take a noqa
    server.change(uri, BAD, version=2)
    assert [d["code"] for d in server.diagnostics(uri, version=2)["diagnostics"]] == ["PTL101"]
    # non-Python documents are left alone
    other = (tmp_path / f"{name}.txt").as_uri()
    server.open(other, text, language="plaintext")
    server.alive_and_linting(tmp_path)


def _variant(index: int) -> str:
    """Texts whose findings differ from one edit to the next."""
    body = BAD.replace("total += loss.item()", "total += loss.item()\n" * (index % 4 + 1))
    return body if index % 3 else body.replace("def train(model", "def train(model,")  # some do not parse


def test_burst_of_edits_ends_with_the_last_texts_diagnostics(server, tmp_path):
    uri = (tmp_path / "burst.py").as_uri()
    server.open(uri, BAD)
    server.diagnostics(uri)
    for version in range(2, 202):
        server.change(uri, _variant(version), version)
    final = server.diagnostics(uri, version=201)
    expected = sorted((f.code, f.line - 1) for f in check_text(_variant(201), path="burst.py"))
    assert sorted((d["code"], d["range"]["start"]["line"]) for d in final["diagnostics"]) == expected
    assert expected  # the last text has findings: an empty list would prove nothing
    # nothing staler arrives afterwards
    time.sleep(1)
    assert server.published[uri]["version"] == 201


def test_memory_does_not_grow_over_a_thousand_edits(tmp_path):
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs Linux /proc")
    server = Server(tmp_path, debounce="0")  # lint every edit
    try:
        server.initialize(tmp_path)
        uris = [(tmp_path / f"doc{i}.py").as_uri() for i in range(3)]
        for uri in uris:
            server.open(uri, BAD)
            server.diagnostics(uri)
        version = 1

        def edits(count: int) -> None:
            nonlocal version
            for _ in range(count):
                version += 1
                uri = uris[version % len(uris)]
                server.change(uri, _variant(version), version)
                server.diagnostics(uri, version=version)
                if version % 10 == 0:  # code actions too: fixes build libcst trees
                    reply = server.request("textDocument/codeAction", {
                        "textDocument": {"uri": uri},
                        "range": {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": 30}},
                        "context": {"diagnostics": []}})
                    assert "result" in reply

        edits(200)  # warm up: imports, caches, allocator pools
        before = server.rss_kb()
        edits(1000)
        after = server.rss_kb()
        print(f"RSS {before} kB -> {after} kB after 1,000 edits")
        assert after - before < max(20_000, before // 5), f"RSS grew from {before} kB to {after} kB"
        server.alive_and_linting(tmp_path)
    finally:
        server.close()


# -- framing: what a broken client puts on the wire ------------------------------------------------

def _framing_error(server: Server) -> dict:
    return server.wait(lambda m: "error" in m and m.get("id") is None, timeout=30)


def test_a_body_that_is_not_json_is_answered_with_a_parse_error(server, tmp_path):
    server.send_body(b"{not json")
    assert _framing_error(server)["error"]["code"] == -32700
    server.send_body(b"[1, 2, 3]")
    assert _framing_error(server)["error"]["code"] == -32600
    server.alive_and_linting(tmp_path)


def test_a_request_with_params_of_the_wrong_shape_gets_an_invalid_params_error(server, tmp_path):
    server.send({"jsonrpc": "2.0", "id": 77, "method": "textDocument/codeAction", "params": {"title": 5}})
    reply = server.wait(lambda m: m.get("id") == 77, timeout=30)
    assert reply["error"]["code"] == -32602
    server.alive_and_linting(tmp_path)


@pytest.mark.parametrize("header", [b"content-length: %d\r\n\r\n", b"CONTENT-LENGTH:%d\r\n\r\n",
                                    b"Content-Length:   %d  \r\n\r\n", b"Content-Length: %d\n\n",
                                    b"Content-Type: application/vscode-jsonrpc\r\nContent-Length: %d\r\n\r\n"],
                         ids=["lower-case", "upper-case-no-space", "spaces", "bare-newlines", "content-type-first"])
def test_headers_as_clients_spell_them_are_understood(server, tmp_path, header):
    body = json.dumps({"jsonrpc": "2.0", "id": 55, "method": "ptlint/noSuchMethod", "params": {}}).encode()
    server.send_raw(header % len(body) + body)
    assert server.wait(lambda m: m.get("id") == 55, timeout=30)["error"]["code"] == -32601
    server.alive_and_linting(tmp_path)


@pytest.mark.parametrize("frame,needle", [
    (b"Content-Length: ten\r\n\r\n", "not a number"),
    (b"X-Only: 1\r\n\r\n", "without a Content-Length"),
    (b"this is not a header\r\n\r\n", "without a Content-Length"),
    (b"X-Long: " + b"a" * 100_000 + b"\r\n\r\n", "longer than"),
], ids=["not-a-number", "no-length", "garbage-line", "long-line"])
def test_a_frame_that_cannot_be_read_is_answered_and_the_stream_goes_on(server, tmp_path, frame, needle):
    server.send_raw(frame)
    error = _framing_error(server)
    assert error["error"]["code"] == -32700 and needle in error["error"]["message"], error
    server.alive_and_linting(tmp_path)


def test_a_body_that_runs_into_the_next_header_is_recovered_from(server, tmp_path):
    """A client that counted its body short: the rest of it and the next frame's header share a
    line; that frame is still read."""
    body = json.dumps({"jsonrpc": "2.0", "id": 66, "method": "ptlint/noSuchMethod", "params": {}}).encode()
    server.send_raw(b"Content-Length: 2\r\n\r\n{}junk" + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    assert server.wait(lambda m: m.get("id") == 66, timeout=30)["error"]["code"] == -32601
    server.alive_and_linting(tmp_path)


def test_an_absurd_content_length_is_answered_and_the_connection_closed_cleanly(tmp_path):
    """pygls 2.1 tried to read 10**12 bytes into memory and died of MemoryError."""
    server = Server(tmp_path)
    server.initialize(tmp_path)
    server.send_raw(b"Content-Length: 1000000000000\r\n\r\n")
    error = _framing_error(server)
    assert "more than" in error["error"]["message"]
    assert server.process.wait(timeout=30) == 0
    assert "Traceback" not in server.stderr_text() and "MemoryError" not in server.stderr_text()
    server.close()


def test_a_stream_that_ends_inside_a_body_ends_the_server_cleanly(tmp_path):
    server = Server(tmp_path)
    server.initialize(tmp_path)
    server.send_raw(b"Content-Length: 100\r\n\r\n{\"jsonrpc\": ")
    server.process.stdin.close()
    assert server.process.wait(timeout=30) == 0
    assert "Traceback" not in server.stderr_text()
    server.close()
