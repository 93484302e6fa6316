"""The child process of the dynamic pass: imports torch once, runs every target under
`torch.compile` with a recording backend, and streams what Dynamo logs as JSON lines.

Run by ptlint.dynamic.runner as `python -c ... main(spec_file)`; never imported by the parent.
Events go to a file of their own (not stdout, which belongs to the user's code):
  ready {torch, device} · start {index, location} · break {...} · recompile {...}
  traced {index, lines: {file: [line, ...]}} · end {index, graphs, calls, seconds}
  error {index, stage, message, file, line} · fatal {message}
"""

from __future__ import annotations

import faulthandler
import functools
import inspect
import json
import logging
import os
import re
import signal
import sys
import time
import traceback
from typing import Any

from .paths import fold_name, frames_in, is_user_file

_EVENTS_FD = -1
_TORCH_DIR: tuple[str, ...] = ()


def emit(event: str, **fields: Any) -> None:
    """One JSON line per event, written whole with one os.write so a crash never leaves half."""
    fields["event"] = event
    os.write(_EVENTS_FD, (json.dumps(fields, default=str) + "\n").encode())


@functools.lru_cache(maxsize=4096)  # asked once per traced source line: cache the stat calls
def user_file(path: str) -> bool:
    return is_user_file(path, _TORCH_DIR)


class Observer(logging.Handler):
    """Reads Dynamo's own graph-break, recompile and trace-source records."""

    # also "Graph break (user stack suppressed due to duplicate graph break) in user code at f.py:4"
    _BREAK_AT = re.compile(r"^Graph break\b.*? in user code at (?P<file>.+):(?P<line>\d+)$", re.M)
    _GB_ID = re.compile(r"/gb/gb(\d{4})\.html")
    _RECOMPILE = re.compile(r"^Recompiling function (?P<func>\S+) in (?P<file>.+):(?P<line>\d+)$", re.M)
    _GUARD = re.compile(r"^\s*- (?:\d+/\d+: )?(?P<guard>.+)$", re.M)
    _TRACE = re.compile(r"^TRACE starts_line (?P<file>.+):(?P<line>\d+) in ")

    def __init__(self, registry: dict[str, Any]) -> None:
        super().__init__(logging.DEBUG)
        self.registry = registry
        self.index = -1
        self.fallback: tuple[str, int] | None = None  # the target's own definition
        self.traced: dict[str, set[int]] = {}

    def emit(self, record: logging.LogRecord) -> None:  # noqa: A003 - logging's name
        try:
            if record.name.endswith("__trace_source"):
                self._trace(record.getMessage())
            elif record.name.endswith("__graph_breaks"):
                self._break(record.getMessage())
            elif record.name.endswith("__recompiles"):
                self._recompile(record.getMessage())
        except Exception as exc:  # never let our parsing break the user's run
            emit("note", message=f"could not read a Dynamo log record: {type(exc).__name__}: {exc}")

    def _trace(self, text: str) -> None:
        match = self._TRACE.match(text)
        if match and user_file(match.group("file")):
            self.traced.setdefault(os.path.realpath(match.group("file")), set()).add(int(match.group("line")))

    def _break(self, text: str) -> None:
        ids = [f"GB{number}" for number in self._GB_ID.findall(text)]
        types = [self._gb_type(gb) for gb in ids]
        if not ids:  # a record without a registry id: take the reason line
            reason = re.search(r"^Graph Break Reason: (.*)$", text, re.M)
            types = [reason.group(1).strip() if reason else "graph break"]
        explanation = re.search(r"^\s+Explanation: (.*)$", text, re.M)
        hints = [h.strip() for h in re.findall(r"^\s+Hint: (.*)$", text, re.M)]
        location = None
        user_frames: list[tuple[str, int, str]] = []
        tail = text.split("User code traceback:", 1)
        if len(tail) == 2:
            user_frames = [f for f in frames_in(tail[1]) if user_file(f[0])]
            if user_frames:
                location = user_frames[-1]
        if location is None:
            header = self._BREAK_AT.search(text)
            if header and user_file(header.group("file")):
                location = (header.group("file"), int(header.group("line")), "")
        file, line = (location[0], location[1]) if location else (self.fallback or ("", 0))
        emit("break", index=self.index, file=file, line=line, function=location[2] if location else "",
             gb_ids=ids, types=types, explanation=explanation.group(1).strip() if explanation else "",
             hints=hints, frames=[[f[0], f[1]] for f in user_frames])

    def _recompile(self, text: str) -> None:
        match = self._RECOMPILE.search(text)
        if not match:
            return
        guards = [g.group("guard").strip() for g in self._GUARD.finditer(text.split("guard failure(s):", 1)[-1])]
        function = fold_name(match.group("func"))
        if user_file(match.group("file")):
            file, line = match.group("file"), int(match.group("line"))
        else:  # torch's own wrapper (a compiled nn.Module): the user's call site, else the target
            file, line = self._caller() or self.fallback or ("", 0)
        emit("recompile", index=self.index, file=file, line=line, function=function, guards=guards)

    @staticmethod
    def _caller() -> tuple[str, int] | None:
        frame = inspect.currentframe()
        while frame is not None:
            if user_file(frame.f_code.co_filename):
                return frame.f_code.co_filename, frame.f_lineno
            frame = frame.f_back
        return None

    def _gb_type(self, gb: str) -> str:
        entries = self.registry.get(gb) or [{}]
        return entries[0].get("Gb_type", gb)

    def take_traced(self) -> dict[str, list[int]]:
        out = {file: sorted(lines) for file, lines in self.traced.items()}
        self.traced = {}
        return out


def _install_observer(torch: Any) -> Observer:
    registry: dict[str, Any] = {}
    try:
        with open(os.path.join(os.path.dirname(torch.__file__), "_dynamo", "graph_break_registry.json")) as handle:
            registry = json.load(handle)
    except (OSError, ValueError):
        pass
    torch._logging.set_logs(graph_breaks=True, recompiles=True, trace_source=True)
    try:  # set_logs also prints every record on stderr: keep only our handler
        from torch._logging import _internal

        for name in _internal.log_registry.get_log_qnames():
            _internal._clear_handlers(logging.getLogger(name))
    except Exception:
        pass
    observer = Observer(registry)
    logging.getLogger("torch._dynamo").addHandler(observer)
    return observer


class Recorder:
    """The backend: counts graphs and runs them as traced (no code generation)."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs += 1
        return gm.forward


def _location_of(obj: Any) -> tuple[str, int] | None:
    """Where a function, or a module's forward, is defined, when that is a user file."""
    target = obj
    if not inspect.isfunction(obj) and not inspect.ismethod(obj):
        target = getattr(type(obj), "forward", None) or getattr(type(obj), "__call__", None)
    try:
        target = inspect.unwrap(target)
        code = target.__code__
    except (AttributeError, TypeError, ValueError):
        return None
    return (code.co_filename, code.co_firstlineno) if user_file(code.co_filename) else None


def _error_location(exc: BaseException) -> tuple[str, int] | None:
    frames = [(f.filename, f.lineno) for f in traceback.extract_tb(exc.__traceback__) if user_file(f.filename)]
    return frames[-1] if frames else None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


_loaded: dict[str, Any] = {}


def _load_factory(target: dict[str, Any]) -> Any:
    import importlib
    import importlib.util

    if target["kind"] == "module":
        module = importlib.import_module(target["module"])
    else:
        path = os.path.realpath(target["path"])
        module = _loaded.get(path)
        if module is None:
            folder = os.path.dirname(path)
            if folder not in sys.path:
                sys.path.insert(0, folder)  # sibling imports work as in `python file.py`
            name = "ptlint_target_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
            name += f"_{len(_loaded)}"
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {target['path']}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            _loaded[path] = module
    factory = getattr(module, target["factory"], None)
    if factory is None or not callable(factory):
        raise AttributeError(f"no callable {target['factory']!r} in {target.get('path') or target['module']}")
    return factory


def _calls(result: Any) -> tuple[Any, list[tuple]]:
    if not (isinstance(result, tuple) and len(result) == 2 and callable(result[0])):
        raise TypeError("the factory must return (fn_or_module, args) or (fn_or_module, [args, ...])")
    fn, args = result
    if isinstance(args, tuple):
        return fn, [args]
    if isinstance(args, list) and args and all(isinstance(item, tuple) for item in args):
        return fn, args
    raise TypeError("the factory's args must be a tuple, or a non-empty list of tuples (one per call)")


def _takes_device(factory: Any) -> bool:
    try:
        return "device" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def run_target(torch: Any, observer: Observer, recorder: Recorder, target: dict[str, Any], device: str) -> None:
    index = target["index"]
    observer.index, observer.fallback = index, None
    torch._dynamo.reset()  # every target starts with empty caches: its breaks are its own
    recorder.graphs = 0
    started = time.perf_counter()
    stage, calls = "import", 0
    try:
        if target["kind"] == "script":
            emit("start", index=index, location=[target["path"], 1])
            observer.fallback = (target["path"], 1)
            stage = "run"
            _run_script(torch, recorder, target)
        else:
            factory = _load_factory(target)
            observer.fallback = _location_of(factory)
            emit("start", index=index, location=list(observer.fallback) if observer.fallback else None)
            stage = "factory"
            result = factory(device=device) if _takes_device(factory) else factory()
            fn, all_args = _calls(result)
            observer.fallback = _location_of(fn) or observer.fallback
            compiled = torch.compile(fn, backend=recorder)
            stage = "call"
            for args in all_args:
                compiled(*args)
                calls += 1
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        if not (target["kind"] == "script" and isinstance(exc, SystemExit) and exc.code in (0, None)):
            where = _error_location(exc)
            emit("error", index=index, stage=stage, message=_describe(exc),
                 file=where[0] if where else None, line=where[1] if where else None)
    emit("traced", index=index, lines=observer.take_traced())
    emit("end", index=index, graphs=recorder.graphs, calls=calls, seconds=round(time.perf_counter() - started, 3))


def _run_script(torch: Any, recorder: Recorder, target: dict[str, Any]) -> None:
    """runpy the script with its argv; its torch.compile calls use the recording backend."""
    import runpy

    real_compile = torch.compile

    def compile(model: Any = None, **kwargs: Any) -> Any:  # noqa: A001 - stands in for torch.compile
        kwargs["backend"] = recorder
        kwargs["fullgraph"] = False  # observe every region instead of stopping at the first break
        kwargs.pop("mode", None)  # mode and options configure inductor, which does not run
        kwargs.pop("options", None)
        return real_compile(model, **kwargs) if model is not None else real_compile(**kwargs)

    torch.compile = compile
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [target["path"], *target.get("argv", [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(target["path"])))
    try:
        runpy.run_path(target["path"], run_name="__main__")
    finally:
        torch.compile = real_compile
        sys.argv, sys.path[:] = saved_argv, saved_path


def main(spec_file: str) -> None:
    global _EVENTS_FD, _TORCH_DIR
    with open(spec_file) as handle:
        spec = json.load(handle)
    _EVENTS_FD = os.open(spec["events"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    # A hang (SIGUSR1 from the parent) or a crash (SIGABRT, SIGSEGV) dumps the stack here.
    stacks = open(spec["stacks"], "a")
    faulthandler.enable(file=stacks, all_threads=False)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=False)
    for entry in reversed(spec.get("sys_path", [])):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    import torch

    _TORCH_DIR = (os.path.dirname(os.path.realpath(torch.__file__)),)
    device = spec.get("device", "auto")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda" and not torch.cuda.is_available():
        emit("fatal", message="--device cuda was asked for, but torch.cuda.is_available() is False")
        return
    observer = _install_observer(torch)
    recorder = Recorder()
    emit("ready", torch=torch.__version__, device=device)
    for target in spec["targets"]:
        run_target(torch, observer, recorder, target, device)
    emit("done")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: user threads or atexit hooks must not hang us


if __name__ == "__main__":
    main(sys.argv[1])
