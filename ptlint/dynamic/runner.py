"""The parent side of the dynamic pass: parse targets, run them in a worker process (own process
group, per-target timeout, the group killed at the timeout), and collect its streamed events.

torch is never imported here. One worker imports torch once and runs every target; when a target
hangs or kills the interpreter, it is reported and a fresh worker runs the targets after it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from ptlint.dynamic.paths import frames_in, is_user_file, torch_dirs

INSTALL_HINT = 'the dynamic pass needs PyTorch: pip install "ptlint[dynamic]"'
DEFAULT_TIMEOUT = 120.0
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")


class TargetError(ValueError):
    """A target string that is not `file.py:factory` or `package.module:factory`."""


def torch_available() -> bool:
    """Whether torch can be imported, found without importing it."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def parse_target(text: str, root: str | None = None) -> dict[str, Any]:
    """`path/to/file.py:factory` (relative to `root` when given) or `package.module:factory`."""
    left, sep, factory = text.rpartition(":")
    if not sep or not left or not _IDENT.match(factory):
        raise TargetError(f"bad target {text!r}: expected file.py:factory or package.module:factory")
    if left.endswith(".py") or os.sep in left or "/" in left:
        path = left if root is None or os.path.isabs(left) else os.path.join(root, left)
        return {"kind": "file", "path": path, "factory": factory, "label": text}
    if not _MODULE.match(left):
        raise TargetError(f"bad target {text!r}: {left!r} is neither a .py file nor a dotted module name")
    return {"kind": "module", "module": left, "factory": factory, "label": text}


def script_target(path: str, argv: list[str]) -> dict[str, Any]:
    return {"kind": "script", "path": path, "argv": list(argv), "label": path}


@dataclass
class Failure:
    index: int
    message: str
    file: str | None = None
    line: int | None = None


@dataclass
class RunResult:
    targets: list[dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)  # start, graph, break, recompile, sync, timed, ...
    failures: list[Failure] = field(default_factory=list)
    fatal: str | None = None  # the whole pass could not run (e.g. no CUDA for --device cuda)
    device: str | None = None
    seconds: float = 0.0
    syncs: bool = False  # the host-sync sanitizer ran too


def child_env(device: str = "auto") -> dict[str, str]:
    env = dict(os.environ)
    # An empty TORCH_LOGS crashes `import torch`; any TORCH_LOGS/TORCH_TRACE would reconfigure logging.
    env.pop("TORCH_LOGS", None)
    env.pop("TORCH_TRACE", None)
    if device == "cpu":  # the program runs on the CPU, where the device shadow stands in for the GPU:
        env["CUDA_VISIBLE_DEVICES"] = env["HIP_VISIBLE_DEVICES"] = ""  # it must not find one and use it
    return env


def run_targets(targets: list[dict[str, Any]], timeout: float = DEFAULT_TIMEOUT, device: str = "auto",
                sys_path: list[str] | None = None, syncs: bool = False) -> RunResult:
    """Run every target (and, with `syncs`, once more eagerly under the host-sync sanitizer);
    a failed one becomes a Failure, the others still run."""
    for index, target in enumerate(targets):
        target["index"] = index
    result = RunResult(targets, syncs=syncs)
    started = time.perf_counter()
    pending = list(targets)
    with tempfile.TemporaryDirectory(prefix="ptlint-dynamic-") as scratch:
        attempt = 0
        while pending and result.fatal is None:
            attempt += 1
            pending = _run_worker(pending, timeout, device, sys_path or [], scratch, attempt, result, syncs)
    result.seconds = time.perf_counter() - started
    return result


def _run_worker(pending: list[dict[str, Any]], timeout: float, device: str, sys_path: list[str], scratch: str,
                attempt: int, result: RunResult, syncs: bool) -> list[dict[str, Any]]:
    """One worker over `pending`; returns the targets still to run after a hang or a crash."""
    events_path = os.path.join(scratch, f"events{attempt}.jsonl")
    stacks_path = os.path.join(scratch, f"stacks{attempt}.txt")
    stderr_path = os.path.join(scratch, f"stderr{attempt}.txt")
    spec_path = os.path.join(scratch, f"spec{attempt}.json")
    with open(spec_path, "w") as handle:
        json.dump({"events": events_path, "stacks": stacks_path, "device": device, "sys_path": sys_path,
                   "targets": pending, "syncs": syncs}, handle)
    open(events_path, "w").close()
    package_parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Import ptlint from where this one lives, then drop that folder from sys.path again so it
    # cannot shadow the user's own top-level packages.
    bootstrap = (f"import sys; sys.path.insert(0, {package_parent!r}); "
                 f"from ptlint.dynamic.worker import main; sys.path.pop(0); main({spec_path!r})")
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen([sys.executable, "-c", bootstrap], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=stderr, env=child_env(device),
                                   start_new_session=True)
    reader = _EventReader(events_path)
    state = {"current": None, "ready": False, "clock": time.monotonic()}
    ended: set[int] = set()

    def handle(event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "ready":
            state.update(ready=True, clock=time.monotonic())
            result.device = event.get("device")
        elif kind == "fatal":
            result.fatal = event.get("message")
        elif kind == "error":
            result.failures.append(Failure(event["index"], _error_message(event, pending),
                                           event.get("file"), event.get("line")))
        elif kind in ("break", "recompile", "sync", "traced", "start", "end", "graph", "timed"):
            result.events.append(event)
            if kind == "start":
                state.update(current=event["index"], clock=time.monotonic())
            elif kind == "end":
                ended.add(event["index"])
                state.update(current=None, clock=time.monotonic())

    startup_limit = timeout + 60  # importing torch is not the target's time
    code: int | None = None
    try:
        while True:
            for event in reader.read():
                handle(event)
            code = process.poll()
            if code is not None:
                for event in reader.read(final=True):  # the last lines written before the exit
                    handle(event)
                break
            limit = timeout if state["ready"] else startup_limit
            if time.monotonic() - state["clock"] > limit:
                _dump_stacks(process)
                _kill_group(process)
                for event in reader.read(final=True):
                    handle(event)
                code = None
                break
            time.sleep(0.02)
    finally:
        _kill_group(process)
    current, ready = state["current"], state["ready"]
    remaining = [t for t in pending if t["index"] not in ended]
    if result.fatal is not None:
        return []
    if not remaining:
        return []
    stuck = next((t for t in remaining if t["index"] == current), None)
    where = _last_user_frame(stacks_path)
    if not ready:  # the worker died (or hung) before any target: nothing would do better next time
        tail = _tail(stderr_path)
        reason = "timed out" if code is None else _exit_reason(code)
        result.fatal = f"the dynamic worker {reason} while importing torch" + (f": {tail}" if tail else "")
        return []
    if stuck is None:  # died between targets: blame the next one
        stuck = remaining[0]
    if code is None:
        message = f"{stuck['label']}: timed out after {timeout:g} s (killed)"
    else:
        message = f"{stuck['label']}: the interpreter {_exit_reason(code)}"
        tail = _tail(stderr_path)
        if tail:
            message += f" ({tail})"
    result.failures.append(Failure(stuck["index"], message, *(where or (None, None))))
    return [t for t in remaining if t["index"] != stuck["index"]]


def _error_message(event: dict[str, Any], pending: list[dict[str, Any]]) -> str:
    label = next((t["label"] for t in pending if t["index"] == event["index"]), "?")
    stage = {"import": "cannot import", "factory": "the factory failed", "call": "the compiled call failed",
             "run": "the script failed", "syncs": "the eager run under the sync sanitizer failed"
             }.get(event.get("stage"), "failed")
    return f"{label}: {stage}: {event.get('message')}"


def _exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _dump_stacks(process: subprocess.Popen) -> None:
    """Ask the hung worker for its stack (faulthandler on SIGUSR1), to say where it hung."""
    if not hasattr(signal, "SIGUSR1"):
        return
    try:
        process.send_signal(signal.SIGUSR1)
        time.sleep(0.3)
    except (ProcessLookupError, OSError):
        pass


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _last_user_frame(stacks_path: str) -> tuple[str, int] | None:
    """The innermost user frame of the last stack faulthandler dumped (most recent call first)."""
    try:
        with open(stacks_path, errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    blocks = re.split(r"^(?:Fatal Python error|Current thread|Thread 0x|Stack \(most recent)", text, flags=re.M)
    for block in reversed(blocks):
        frames = [f for f in frames_in(block) if is_user_file(f[0], torch_dirs())]
        if frames:
            return frames[0][0], frames[0][1]
    return None


def _tail(path: str, limit: int = 300) -> str:
    """The last meaningful line the worker wrote on stderr."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 8192))
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    for raw in reversed(lines):
        line = raw.strip()
        # not a traceback's or a warning's quoted source line (indented), nor faulthandler's frames
        if line and not raw.startswith((" ", "\t")) and not line.startswith(
                ("File ", "Current thread", "Fatal Python error: Aborted")):
            return line[:limit]
    return ""


class _EventReader:
    """Complete JSON lines appended to the events file since the last read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0

    def read(self, final: bool = False) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1 if not final else len(data)
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:  # a torn last line from a crash
                continue
        return out
