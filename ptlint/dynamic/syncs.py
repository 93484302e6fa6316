"""The host-sync sanitizer: counts, at the user's line, every operation that makes the host wait
for the device (PTL452), while the code runs eagerly.

Why a TorchFunctionMode (and not a TorchDispatchMode): the function mode sees the Python-level
call the user wrote (`.item()`, `bool(t)`, `f"{t:.3f}"`, `.tolist()`, `.numpy()`, `.cpu()`,
`torch.nonzero`, `x[mask]`), so it can name it, and it sees it on the CPU too, where `.cpu()`,
`.numpy()` and `.tolist()` reach no aten operator at all and a dispatch mode would miss them. It
costs one Python call per torch function (autograd's backward is not intercepted), against one
per aten operator for a dispatch mode, backward included.

Which tensors would be on the device: on a CUDA run, the real ones (`t.device`). On a CPU run it
reports what would synchronise on an accelerator: every tensor is taken to live on the device
except those the code itself moved to the host with `.cpu()`, and what is computed only from
those (`.to(...)` cannot tell the host from the device there: both are the CPU). torch.optim's
step counters, which torch keeps on the CPU, are not counted. On CUDA it also turns on
`torch.cuda.set_sync_debug_mode("warn")` and counts the synchronising CUDA operations the table
below does not name, at the Python line that called them.

What it cannot see: syncs inside a torch function written in Python (`F.cross_entropy`'s own
internals run with the mode switched off, as TorchFunctionMode does for every handler) — on CUDA,
the sync debug mode sees those.

torch is imported by `sanitizing()` only; nothing here runs at ptlint's import time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
import weakref
from typing import Any, Callable, Iterator

from ptlint.dynamic.paths import (
    is_ptlint_file,
    is_torch_stdlib_or_ptlint,
    live_frames,
    origin_json,
    scope_of,
    torch_dirs,
)

_DEBUG_WARNING = "synchronizing CUDA operation"
# torch's own dispatch plumbing between the user's call and the mode (never a finding's origin)
_PLUMBING = {"overrides.py", "_tensor.py", "functional.py", "_jit_internal.py", "utils/_device.py",
             "_tensor_str.py", "utils/_python_dispatch.py"}


class SyncCounter:
    """Syncs counted per site (user line, what, installed origin); `take()` hands them out."""

    def __init__(self, is_user: Callable[[str], bool], fallback: tuple[str, int] | None = None) -> None:
        self.is_user = functools.lru_cache(maxsize=8192)(is_user)
        self.fallback = fallback
        self.sites: dict[tuple, dict[str, Any]] = {}
        self.counts: dict[tuple, int] = {}

    def record(self, what: str, frame: Any) -> None:
        """One sync by the code running in `frame` (the first frame outside the sanitizer)."""
        origin = None
        while frame is not None:
            file = frame.f_code.co_filename
            if self.is_user(file):
                break
            if origin is None and not _is_plumbing(file):
                origin = frame
            frame = frame.f_back
        if origin is not None and _reads_a_cpu_counter(origin, what):
            return
        # one site per user line, kind of sync and library line (two f-string fields are one site)
        key = (frame and frame.f_code, frame and frame.f_lineno, what, origin and origin.f_code,
               origin and origin.f_lineno)
        self.counts[key] = self.counts.get(key, 0) + 1
        if key not in self.sites:
            self.sites[key] = self._site(frame, origin, what)

    def _site(self, frame: Any, origin: Any, what: str) -> dict[str, Any]:
        if frame is not None:
            file, line = frame.f_code.co_filename, frame.f_lineno
            column, end_line, end_column = _span(frame.f_code, frame.f_lasti, line)
            function = frame.f_code.co_name
        else:
            (file, line), function = self.fallback or ("", 0), ""
            column = end_line = end_column = None
        stack = live_frames(3)
        return {"event": "sync", "file": file, "line": line, "column": column, "end_line": end_line,
                "end_column": end_column, "function": function, "what": what,
                "origin": origin_json((origin.f_code.co_filename, origin.f_lineno, origin.f_code.co_name))
                if origin is not None else None,
                "scope": scope_of(stack)}

    def take(self) -> list[dict[str, Any]]:
        """One event per site with the syncs counted there since the last take."""
        out = [dict(self.sites[key], count=count) for key, count in self.counts.items()]
        self.counts = {}
        return out


@functools.lru_cache(maxsize=4096)
def _is_plumbing(file: str) -> bool:
    """ptlint's own frames, the warnings module, and torch's dispatch plumbing."""
    if is_ptlint_file(file):
        return True
    real = os.path.realpath(file)
    if os.path.basename(real) == "warnings.py" and is_torch_stdlib_or_ptlint(real):
        return True
    for torch_dir in torch_dirs():
        if real.startswith(torch_dir + os.sep):
            return os.path.relpath(real, torch_dir).replace(os.sep, "/") in _PLUMBING
    return False


def _reads_a_cpu_counter(origin: Any, what: str) -> bool:
    """torch.optim reads its step counter with `.item()` (`_get_value`); the counter lives on the
    CPU on every device unless `capturable`/`fused`, so that read never waits for the device."""
    code = origin.f_code
    return what == _WHAT["item"] and code.co_name == "_get_value" and \
        code.co_filename.replace(os.sep, "/").endswith("/torch/optim/optimizer.py")


_positions: dict[Any, list] = {}


def _span(code: Any, lasti: int, line: int) -> tuple[int | None, int | None, int | None]:
    """1-based (column, end_line, end_column) of the instruction running in a frame (3.11+)."""
    if not hasattr(code, "co_positions") or lasti < 0:
        return None, None, None
    positions = _positions.get(code)
    if positions is None:
        positions = _positions[code] = list(code.co_positions())
    try:
        start, end, column, end_column = positions[lasti // 2]
    except (IndexError, ValueError):
        return None, None, None
    if start != line or column is None or end_column is None:
        return None, None, None
    return column + 1, end, end_column + 1


_WHAT = {
    "item": "`.item()` reads a value on the host",
    "bool": "a tensor used as a Python bool (`if t:`, `bool(t)`, `and`/`or`)",
    "float": "`float(t)` / `int(t)` reads a value on the host",
    "index": "a tensor used as a Python index",
    "format": "formatting a tensor (f-string, `%`, `print`, `str`) reads its values on the host",
    "tolist": "`.tolist()` copies the tensor to the host",
    "numpy": "`.numpy()` / `numpy.asarray(t)` needs the tensor on the host",
    "cpu": "`.cpu()` copies the tensor to the host",
    "to_cpu": "`.to(\"cpu\")` copies the tensor to the host",
    "equal": "a Python bool computed on the device (`torch.equal`, `allclose`, `in`)",
    "sync": "`torch.cuda.synchronize()` waits for all queued work",
    "cuda": "a synchronizing CUDA operation (seen by torch.cuda.set_sync_debug_mode)",
}


def _size_op(name: str) -> str:
    return f"`{name}`: its output size depends on the data, which the host must read"


@functools.lru_cache(maxsize=1)
def _sanitizer_class() -> type:
    import torch
    from torch.overrides import TorchFunctionMode

    T = torch.Tensor
    direct = {
        T.item: "item", T.__bool__: "bool", T.is_nonzero: "bool", T.__float__: "float", T.__int__: "float",
        T.__complex__: "float", T.__index__: "index", T.__format__: "format", T.__repr__: "format",
        T.tolist: "tolist", T.numpy: "numpy", T.__array__: "numpy", T.cpu: "cpu", torch.equal: "equal",
        torch.allclose: "equal", T.allclose: "equal", T.equal: "equal", T.__contains__: "equal",
        torch.is_nonzero: "bool",
    }
    sized = {torch.nonzero: "torch.nonzero", T.nonzero: "nonzero", torch.argwhere: "torch.argwhere",
             T.argwhere: "argwhere", torch.masked_select: "torch.masked_select", T.masked_select: "masked_select",
             torch.unique: "torch.unique", T.unique: "unique", torch.unique_consecutive: "torch.unique_consecutive",
             T.unique_consecutive: "unique_consecutive"}
    # func -> (what it is, None) or (None, the name of the check that decides from the arguments)
    table: dict[Any, tuple[str | None, str | None]] = {func: (_WHAT[key], None) for func, key in direct.items()}
    table.update({func: (_size_op(name), None) for func, name in sized.items()})
    for funcs, check in (((T.__getitem__,), "getitem"), ((T.__setitem__,), "setitem"), ((torch.where,), "where"),
                         ((torch.repeat_interleave, T.repeat_interleave), "repeat_interleave"), ((T.to,), "to")):
        for func in funcs:
            table[func] = (None, check)

    def is_bool_tensor(value: Any) -> bool:
        return isinstance(value, T) and value.dtype in (torch.bool, torch.uint8)

    class SyncSanitizer(TorchFunctionMode):
        """Records each sync with its counter; `hypothetical`: the CPU run of an accelerator."""

        def __init__(self, counter: SyncCounter, hypothetical: bool) -> None:
            super().__init__()
            self.counter = counter
            self.hypothetical = hypothetical
            self.host: dict[int, Any] = {}  # id -> weakref of tensors the code moved to the host
            self.busy = 0  # > 0 while a counted call runs: the debug-mode warning it raises is the same sync

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's protocol
            if kwargs is None:
                kwargs = {}
            entry = table.get(func)
            if entry is None:
                out = func(*args, **kwargs)
                if self.host:
                    self._propagate(args, kwargs, out)
                return out
            what, check = entry
            if check is not None:
                what = self._conditional(check, args, kwargs)
            elif args and isinstance(args[0], T) and not self.on_device(args[0]):
                what = None
            if what is not None:
                self.counter.record(what, sys._getframe(1))
            self.busy += 1
            try:
                out = func(*args, **kwargs)
            finally:
                self.busy -= 1
            if func is T.cpu and self.hypothetical and isinstance(out, T):
                if args and out is args[0]:  # a no-op on the CPU; on a device it is a new host tensor
                    out = out.clone()
                self._tag(out)
            elif self.host:
                self._propagate(args, kwargs, out)
            return out

        def on_device(self, tensor: Any) -> bool:
            if tensor.device.type != "cpu":
                return True
            if not self.hypothetical:
                return False
            ref = self.host.get(id(tensor))
            return ref is None or ref() is not tensor

        def _conditional(self, kind: str, args: tuple, kwargs: dict) -> str | None:
            if kind in ("getitem", "setitem"):
                index = args[1] if len(args) > 1 else None
                parts = index if isinstance(index, tuple) else (index,)
                masks = [p for p in parts if is_bool_tensor(p)]
                if not masks or not any(self.on_device(m) for m in masks):
                    return None
                if kind == "setitem" and not isinstance(index, tuple):
                    value = args[2] if len(args) > 2 else None
                    # `x[mask] = scalar` becomes masked_fill (no sync) unless the value is on the device
                    if not isinstance(value, T) or (value.numel() == 1 and not self.on_device(value)):
                        return None
                    if value.numel() == 1:
                        return _WHAT["item"]
                return _size_op("x[mask]" if kind == "getitem" else "x[mask] = v")
            if kind == "where":
                if len(args) == 1 and not kwargs and isinstance(args[0], T) and self.on_device(args[0]):
                    return _size_op("torch.where(condition)")
                return None
            if kind == "repeat_interleave":
                repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
                if isinstance(repeats, T) and repeats.numel() > 1 and "output_size" not in kwargs \
                        and self.on_device(repeats):
                    return _size_op("repeat_interleave")
                return None
            if kind == "to":  # only a real device tells a move to the host from a move to the device
                source = args[0] if args else None
                if self.hypothetical or not isinstance(source, T) or source.device.type == "cpu":
                    return None
                if kwargs.get("non_blocking") or any(a is True for a in args[1:]):
                    return None  # an asynchronous copy (into pinned memory)
                target = kwargs.get("device")
                for arg in args[1:]:
                    if isinstance(arg, (str, torch.device)):
                        target = arg
                    elif isinstance(arg, T):
                        target = arg.device
                if target is not None and torch.device(target).type == "cpu":
                    return _WHAT["to_cpu"]
                return None
            return None

        def _tag(self, tensor: Any) -> None:
            key = id(tensor)
            host = self.host

            def forget(ref: Any, key: int = key) -> None:
                if host.get(key) is ref:
                    del host[key]

            host[key] = weakref.ref(tensor, forget)

        def _propagate(self, args: tuple, kwargs: dict, out: Any) -> None:
            """What is computed only from host tensors is on the host too."""
            saw_host = False
            for value in (*args, *kwargs.values()):
                for item in (value if isinstance(value, (list, tuple)) else (value,)):
                    if isinstance(item, T):
                        if self.on_device(item):
                            return
                        saw_host = True
            if not saw_host:
                return
            for item in (out if isinstance(out, (list, tuple)) else (out,)):
                if isinstance(item, T):
                    self._tag(item)

    return SyncSanitizer


@contextlib.contextmanager
def sanitizing(counter: SyncCounter, hypothetical: bool | None = None) -> Iterator[Any]:
    """Run the block under the sanitizer. `hypothetical` (default: when CUDA is unavailable) takes
    every CPU tensor for a device tensor unless the code moved it to the host. Restores the CUDA
    sync debug mode, `torch.cuda.synchronize` and the warning filters, also when the block raises."""
    import torch

    cuda = torch.cuda.is_available()
    if hypothetical is None:
        hypothetical = not cuda
    mode = _sanitizer_class()(counter, hypothetical)
    original_sync = torch.cuda.synchronize

    def synchronize(device: Any = None) -> None:
        counter.record(_WHAT["sync"], sys._getframe(1))
        if not cuda and hypothetical:  # what would synchronise: on this machine there is nothing to wait for
            return None
        mode.busy += 1
        try:
            return original_sync(device)
        finally:
            mode.busy -= 1

    with contextlib.ExitStack() as stack:
        if cuda:
            stack.enter_context(_cuda_debug_mode(torch, counter, mode))
        torch.cuda.synchronize = synchronize
        stack.callback(setattr, torch.cuda, "synchronize", original_sync)
        stack.enter_context(mode)
        yield mode


@contextlib.contextmanager
def _cuda_debug_mode(torch: Any, counter: SyncCounter, mode: Any) -> Iterator[None]:
    """set_sync_debug_mode("warn"); each warning it raises outside a call the mode already counted
    is a sync of its own, located at the Python frame that called the operation."""
    previous_mode = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():
        warnings.filterwarnings("always", message=f".*{_DEBUG_WARNING}", category=UserWarning)
        shown = warnings.showwarning

        def showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                        line: Any = None) -> None:
            if _DEBUG_WARNING not in str(message):
                shown(message, category, filename, lineno, file, line)
                return
            if mode.busy == 0:
                counter.record(_WHAT["cuda"], sys._getframe(1))
            if getattr(shown, "ptlint_sync_hook", False):  # an enclosing sanitizer counts it too
                shown(message, category, filename, lineno, file, line)

        showwarning.ptlint_sync_hook = True  # type: ignore[attr-defined]
        warnings.showwarning = showwarning
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous_mode)
