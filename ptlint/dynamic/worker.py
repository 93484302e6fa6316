"""The child process of the dynamic pass: imports torch once, runs every target under
`torch.compile` with a recording backend, and streams what Dynamo logs as JSON lines; with
`syncs`, runs each target once more eagerly under the host-sync sanitizer.

Run by ptlint.dynamic.runner as `python -c ... main(spec_file)`; never imported by the parent.
Events go to a file of their own (not stdout, which belongs to the user's code):
  ready {torch, device} · start {index, location} · graph {index} (one per graph compiled, streamed
  so that a timeout keeps them) · break {...} · recompile {...} (events.py) · sync {..., count,
  calls, call, wait_ms} (syncs.py) · timed {index, seconds} (an eager run's wall time, on a
  device) · traced {index, lines: {file: [line, ...]}} · end {index, calls, seconds} ·
  error {index, stage, message, file, line} · fatal {message}
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import inspect
import json
import linecache
import os
import re
import signal
import sys
import time
import traceback
from typing import Any, Callable, Iterator

from ptlint.dynamic.events import DynamoListener, gb_registry, listening
from ptlint.dynamic.paths import is_user_file
from ptlint.dynamic.syncs import SyncCounter, sanitizing

_EVENTS_FD = -1
_TORCH_DIR: tuple[str, ...] = ()


def emit(event: str, **fields: Any) -> None:
    """One JSON line per event, written whole with one os.write so a crash never leaves half."""
    fields["event"] = event
    os.write(_EVENTS_FD, (json.dumps(fields, default=str) + "\n").encode())


@functools.lru_cache(maxsize=4096)  # asked once per traced source line: cache the stat calls
def user_file(path: str) -> bool:
    return is_user_file(path, _TORCH_DIR)


_target_index = -1  # the target whose events these are


def _sink(event: dict[str, Any]) -> None:
    event.setdefault("index", _target_index)
    kind = event.pop("event")
    emit(kind, **event)


class Recorder:
    """The backend: reports each graph and runs it as traced (no code generation)."""

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        emit("graph", index=_target_index)
        return gm.forward


_real_exit = os._exit


def _restore_exit() -> None:
    os._exit = _real_exit


os.register_at_fork(after_in_child=_restore_exit)  # a forked child (a DataLoader worker) exits for real


@contextlib.contextmanager
def exits_raise() -> Iterator[None]:
    """While a target runs, `os._exit(code)` raises SystemExit(code) instead of ending the process,
    so that its line is known and the other targets still run. It is `sys.exit`, a builtin, so
    that Dynamo breaks the graph at the call as it does on the real one."""
    os._exit = sys.exit
    try:
        yield
    finally:
        _restore_exit()


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


def _describe(exc: BaseException, where: tuple[str, int] | None = None) -> str:
    if isinstance(exc, SystemExit):
        line = linecache.getline(*where) if where else ""
        exit_call = "os._exit" if "_exit(" in line and "sys.exit(" not in line else "sys.exit"  # see exits_raise
        return f"called {exit_call}({exc.code!r})"
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


def run_target(torch: Any, listener: DynamoListener, recorder: Recorder, target: dict[str, Any], device: str,
               syncs: bool) -> None:
    global _target_index
    index = _target_index = target["index"]
    listener.fallback = None
    torch._dynamo.reset()  # every target starts with empty caches: its breaks are its own
    started = time.perf_counter()
    stage, calls = "import", 0
    try:
        with exits_raise():
            if target["kind"] == "script":
                emit("start", index=index, location=[target["path"], 1])
                listener.fallback = (target["path"], 1)
                stage = "run"
                _run_script(torch, recorder, target)
                if syncs:
                    stage = "syncs"
                    _sanitize(torch, listener.fallback, torch.cuda.is_available(),
                              lambda: [lambda: _run_script(torch, recorder, target, eager=True)])
            else:
                factory = _load_factory(target)
                listener.fallback = _location_of(factory)
                emit("start", index=index, location=list(listener.fallback) if listener.fallback else None)
                stage = "factory"

                def make_calls() -> tuple[Any, list[tuple]]:
                    return _calls(factory(device=device) if _takes_device(factory) else factory())

                fn, all_args = make_calls()
                listener.fallback = _location_of(fn) or listener.fallback
                compiled = torch.compile(fn, backend=recorder)
                stage = "call"
                for args in all_args:
                    compiled(*args)
                    calls += 1
                if syncs:
                    stage = "syncs"

                    def eager_calls() -> list[Any]:
                        fresh, fresh_args = make_calls()
                        return [functools.partial(fresh, *args) for args in fresh_args]

                    _sanitize(torch, listener.fallback, device != "cpu", eager_calls)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        if not (target["kind"] == "script" and isinstance(exc, SystemExit) and exc.code in (0, None)):
            where = _error_location(exc)
            emit("error", index=index, stage=stage, message=_describe(exc, where),
                 file=where[0] if where else None, line=where[1] if where else None)
    emit("traced", index=index, lines=listener.take_traced())
    emit("end", index=index, calls=calls, seconds=round(time.perf_counter() - started, 3))


def _sanitize(torch: Any, fallback: tuple[str, int] | None, on_device: bool, make_runs: Callable[[], list]) -> None:
    """Each run eagerly (every torch.compile off) under the sync sanitizer, set up afresh by
    `make_runs` inside it so that the device shadow sees where the target puts its tensors (the
    set-up's own syncs are not counted). The syncs of each run are streamed as soon as it returns,
    and what a failing run did before it failed is kept. On a device each run is timed, from
    queued work done to queued work done: `timed {index, seconds}`."""
    counter = SyncCounter(user_file, fallback)
    calls = run_number = 0
    try:
        with torch._dynamo.config.patch(disable=True), \
                sanitizing(counter, hypothetical=not on_device, assume_device=False, timed=on_device) as sanitizer:
            counter.paused = True
            try:
                runs = make_runs()
            finally:
                counter.paused = False
            calls = len(runs)
            for run in runs:
                sanitizer.settle()
                started = time.perf_counter()
                run()
                sanitizer.settle()
                if sanitizer.timed:
                    emit("timed", index=_target_index, seconds=time.perf_counter() - started)
                _emit_syncs(counter, calls, run_number)
                run_number += 1
    finally:
        _emit_syncs(counter, calls or 1, run_number)


def _emit_syncs(counter: SyncCounter, calls: int, call: int) -> None:
    for event in counter.take():
        _sink(dict(event, calls=calls, call=call))


def _run_script(torch: Any, recorder: Recorder, target: dict[str, Any], eager: bool = False) -> None:
    """runpy the script with its argv; its torch.compile calls use the recording backend (or,
    `eager`, run as they are while Dynamo is disabled)."""
    import runpy

    real_compile = torch.compile

    def compile(model: Any = None, **kwargs: Any) -> Any:  # noqa: A001 - stands in for torch.compile
        kwargs["backend"] = recorder
        kwargs["fullgraph"] = False  # observe every region instead of stopping at the first break
        kwargs.pop("mode", None)  # mode and options configure inductor, which does not run
        kwargs.pop("options", None)
        return real_compile(model, **kwargs) if model is not None else real_compile(**kwargs)

    if not eager:
        torch.compile = compile
    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [target["path"], *target.get("argv", [])]
    sys.path.insert(0, os.path.dirname(os.path.abspath(target["path"])))
    try:
        runpy.run_path(target["path"], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
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
    listener = DynamoListener(_sink, user_file, gb_registry(torch), trace_source=True)
    recorder = Recorder()
    emit("ready", torch=torch.__version__, device=device)
    with listening(listener, trace_source=True):
        for target in spec["targets"]:
            run_target(torch, listener, recorder, target, device, bool(spec.get("syncs")))
    emit("done")
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: user threads or atexit hooks must not hang us


if __name__ == "__main__":
    main(sys.argv[1])
