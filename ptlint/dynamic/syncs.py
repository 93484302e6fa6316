"""The host-sync sanitizer: counts, at the user's line, every operation that makes the host wait
for the device (PTL452), while the code runs eagerly; on CUDA it also times each wait.

How it sees a sync: the Python entry points that synchronise (`.item()`, `bool(t)`, `f"{t:.3f}"`,
`.tolist()`, `.numpy()`, `.cpu()`, `.to("cpu")`, `torch.nonzero`, `x[mask]`, ...) are replaced on
`torch.Tensor` and `torch` while the sanitizer is active, by wrappers that name the call and find
the user's line. Only those calls pay: a training step runs at nearly its own speed (a
TorchFunctionMode, which sees every torch call, costs 1.5-1.8x on a 2 ms step). On CUDA,
`torch.cuda.set_sync_debug_mode("warn")` also counts the synchronising operations the table does
not name, at the line that called them. Only the thread that entered the sanitizer is watched.

Which tensors are on the device: on a CUDA run, the real ones (`t.device`). On a CPU run a device
shadow says which tensors *would* be on the accelerator in the same run on a GPU machine
(`Shadow`); a sync counts only on those. Two policies:
- `assume_device=False` (`ptlint explain --syncs`, a run of the user's whole program): the
  program's own placements decide. A tensor that code moves or creates with `.cuda()`, `.to(d)`
  or `device=d` is on the device unless `d` is spelled as the CPU (`"cpu"`, `torch.device("cpu")`,
  a name only ever assigned such a value, the `.device` of a host tensor) — so
  `device = "cuda" if torch.cuda.is_available() else "cpu"` counts as the device, as it would be
  there; so are a module's parameters and buffers after `model.to(d)`, and whatever is computed
  from a device tensor. Everything else (the data pipeline's tensors, samplers, RNG state,
  optimizer step counters, tensors made without a device) stays on the host. Tracking this needs
  every torch call (a TorchFunctionMode), so this policy costs what such a mode costs.
- `assume_device=True` (`ptlint.testing.no_host_syncs`, a block standing for a step on the device):
  every tensor is on the device except those the code put on the host (`.cpu()`, `.to(<cpu>)`,
  `device=<cpu>`), the batches a DataLoader yields, and what is computed only from those; syncs
  made by torch's own data loading and samplers and reads of optimizer step counters do not count.
  The TorchFunctionMode that follows host tensors is switched on only once the block has made one.

torch is imported by `sanitizing()` only; nothing here runs at ptlint's import time.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import linecache
import os
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Iterator

from ptlint.dynamic.paths import is_ptlint_file, is_torch_stdlib_or_ptlint, origin_json, torch_dirs

_DEBUG_WARNING = "synchronizing CUDA operation"
# torch's own dispatch plumbing between the user's call and the sync (never a finding's origin)
_PLUMBING = {"overrides.py", "_tensor.py", "functional.py", "_jit_internal.py", "utils/_device.py",
             "_tensor_str.py", "utils/_python_dispatch.py"}


class SyncCounter:
    """Syncs counted per site (user line, what, installed origin), with the host's wait at each
    when it was timed; `take()` hands them out."""

    def __init__(self, is_user: Callable[[str], bool], fallback: tuple[str, int] | None = None) -> None:
        self.is_user = functools.lru_cache(maxsize=8192)(is_user)
        self.fallback = fallback
        self.sites: dict[tuple, dict[str, Any]] = {}
        self.counts: dict[tuple, int] = {}
        self.waits: dict[tuple, int] = {}  # key -> nanoseconds the host waited there since the last take
        self.paused = False  # while True nothing is counted (a factory setting a run up)

    def record(self, what: str, frame: Any, wait_ns: int | None = None) -> None:
        """One sync by the code running in `frame` (the first frame outside the sanitizer)."""
        if self.paused:
            return
        start, origin = frame, None
        while frame is not None:
            file = frame.f_code.co_filename
            if self.is_user(file):
                break
            if origin is None and not _is_plumbing(file):
                origin = frame
            frame = frame.f_back
        # one site per user line, kind of sync and library line (two f-string fields are one site)
        key = (frame and frame.f_code, frame and frame.f_lineno, what, origin and origin.f_code,
               origin and origin.f_lineno)
        self.counts[key] = self.counts.get(key, 0) + 1
        if wait_ns is not None:
            self.waits[key] = self.waits.get(key, 0) + wait_ns
        if key not in self.sites:
            self.sites[key] = self._site(frame, origin, what, start)

    def _site(self, frame: Any, origin: Any, what: str, start: Any) -> dict[str, Any]:
        if frame is not None:
            file, line = frame.f_code.co_filename, frame.f_lineno
            column, end_line, end_column = _span(frame.f_code, frame.f_lasti, line)
            function = frame.f_code.co_name
        else:
            (file, line), function = self.fallback or ("", 0), ""
            column = end_line = end_column = None
        return {"event": "sync", "file": file, "line": line, "column": column, "end_line": end_line,
                "end_column": end_column, "function": function, "what": what,
                "origin": origin_json((origin.f_code.co_filename, origin.f_lineno, origin.f_code.co_name))
                if origin is not None else None,
                "scope": _scope(start)}

    def take(self) -> list[dict[str, Any]]:
        """One event per site with the syncs counted there since the last take (and, when they
        were timed, `wait_ms`: how long the host waited at that site in all)."""
        out = []
        for key, count in self.counts.items():
            event = dict(self.sites[key], count=count)
            if key in self.waits:
                event["wait_ms"] = self.waits[key] / 1e6
            out.append(event)
        self.counts, self.waits = {}, {}
        return out


def _scope(frame: Any) -> str | None:
    """The file of the innermost frame outside torch, the standard library and ptlint (what
    ptlint.testing's `within` is matched against; paths.scope_of for a running stack)."""
    while frame is not None:
        if not is_torch_stdlib_or_ptlint(frame.f_code.co_filename):
            return frame.f_code.co_filename
        frame = frame.f_back
    return None


@functools.lru_cache(maxsize=4096)
def _is_plumbing(file: str) -> bool:
    """ptlint's own frames, the warnings module, and torch's dispatch plumbing."""
    if is_ptlint_file(file):
        return True
    real = os.path.realpath(file)
    if os.path.basename(real) == "warnings.py" and is_torch_stdlib_or_ptlint(real):
        return True
    relative = _torch_relative(file)
    return relative is not None and relative in _PLUMBING


@functools.lru_cache(maxsize=4096)
def _torch_relative(file: str) -> str | None:
    """`nn/modules/module.py` for a file of torch's own, else None."""
    real = os.path.realpath(file)
    for torch_dir in torch_dirs():
        if real.startswith(torch_dir + os.sep):
            return os.path.relpath(real, torch_dir).replace(os.sep, "/")
    return None


def _in_torch(frame: Any) -> bool:
    return _torch_relative(frame.f_code.co_filename) is not None


def _in_data_pipeline(frame: Any) -> bool:
    """torch's data loading and samplers (torch.utils.data) run at this frame."""
    return (_torch_relative(frame.f_code.co_filename) or "").startswith("utils/data/")


_positions: dict[Any, list] = {}


def _position(code: Any, lasti: int) -> tuple | None:
    """(line, end_line, column, end_column), 0-based columns, of the instruction at `lasti`."""
    if not hasattr(code, "co_positions") or lasti < 0:
        return None
    positions = _positions.get(code)
    if positions is None:
        positions = _positions[code] = list(code.co_positions())
    try:
        return positions[lasti // 2]
    except IndexError:
        return None


def _span(code: Any, lasti: int, line: int) -> tuple[int | None, int | None, int | None]:
    """1-based (column, end_line, end_column) of the instruction running in a frame (3.11+)."""
    position = _position(code, lasti)
    if position is None:
        return None, None, None
    start, end, column, end_column = position
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


# -- where a call puts its tensor: the device as the source spells it ---------------------------

DEVICE, HOST = True, False
_CPU_NAMES = ("cpu",)
_max_hops = 8  # frames walked outwards to find how a device argument was spelled


@functools.lru_cache(maxsize=4096)
def _call_at(code: Any, lasti: int) -> ast.Call | None:
    """The call expression a frame is executing (its source, parsed), or None."""
    position = _position(code, lasti)
    if position is None or None in position:
        return None
    start, end, column, end_column = position
    lines = [linecache.getline(code.co_filename, number) for number in range(start, end + 1)]
    if not all(lines):
        return None
    lines[-1] = lines[-1][:end_column]
    lines[0] = lines[0][column:]
    try:
        node = ast.parse("(" + "".join(lines) + ")", mode="eval").body
    except (SyntaxError, ValueError):
        return None
    return node if isinstance(node, ast.Call) else None


def _device_argument(call: ast.Call) -> ast.expr | bool | None:
    """How a call spells where its tensor goes: an expression, DEVICE for `.cuda()`, HOST for
    `.cpu()`, or None when it names no device."""
    for keyword in call.keywords:
        if keyword.arg == "device":
            return keyword.value
    if isinstance(call.func, ast.Attribute):
        if call.func.attr == "cuda":
            return DEVICE
        if call.func.attr == "cpu":
            return HOST
        if call.func.attr == "to" and call.args:
            return call.args[0]
    return None


@functools.lru_cache(maxsize=256)
def _module_tree(file: str) -> ast.Module | None:
    try:
        return ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return None


@functools.lru_cache(maxsize=1024)
def _assigned_values(code: Any, name: str) -> tuple[ast.expr, ...] | None:
    """Every value assigned to `name` where `code` finds it: its own function, the function around
    it (a closure's or a comprehension's free name), or the module (a global). None when one of
    its bindings is not a plain assignment (a loop target, an unpacking, an import)."""
    tree = _module_tree(code.co_filename)
    if tree is None:
        return None
    defs = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    own = next((d for d in defs if code.co_firstlineno in (d.lineno, *(x.lineno for x in d.decorator_list))),
               None)
    scope: ast.AST = tree
    if name in code.co_varnames or name in code.co_cellvars:
        scope = own or tree
    elif name in code.co_freevars:  # the innermost function around this one
        around = [d for d in defs if d is not own and d.lineno < code.co_firstlineno <= (d.end_lineno or 0)]
        scope = max(around, key=lambda d: d.lineno) if around else tree
    values = []
    for node in _own_nodes(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name and node.value is not None:
                    values.append(node.value)
                elif not isinstance(target, ast.Name) and any(
                        isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                    return None
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.AugAssign, ast.withitem, ast.comprehension)):
            bound = getattr(node, "target", None) or getattr(node, "optional_vars", None)
            if bound is not None and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(bound)):
                return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name).split(".")[0] == name for alias in node.names):
                return None
    return tuple(values)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function or module, without those of the functions and classes inside it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


class Param:
    """A device argument that is a parameter of the running function: its caller spells it.
    `index` counts the arguments a call passes (a method's `self`/`cls` is the receiver)."""

    def __init__(self, name: str, parameters: tuple[str, ...]) -> None:
        bound = bool(parameters) and parameters[0] in ("self", "cls")
        self.name, self.index = name, parameters.index(name) - bound


def _spelled(expr: ast.expr, frame: Any, shadow: "Shadow", depth: int = 0) -> bool | Param | None:
    """DEVICE or HOST as `expr` spells it in `frame`; a Param when it is an argument the caller
    chose; None when it cannot be told from here (torch's own code passing a device along)."""
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, str):
            return HOST if expr.value.split(":")[0] in _CPU_NAMES else DEVICE
        return DEVICE if isinstance(expr.value, int) and not isinstance(expr.value, bool) else None
    if isinstance(expr, ast.Call):  # torch.device("cpu"), torch.device(type="cpu")
        func = expr.func
        if (isinstance(func, ast.Attribute) and func.attr == "device") or (isinstance(func, ast.Name)
                                                                           and func.id == "device"):
            spelled = expr.args[0] if expr.args else next((k.value for k in expr.keywords if k.arg == "type"), None)
            return _spelled(spelled, frame, shadow, depth + 1) if spelled is not None else None
        return DEVICE if not _in_torch(frame) else None
    if isinstance(expr, ast.Attribute) and expr.attr == "device" and isinstance(expr.value, ast.Name):
        tensor = _lookup(frame, expr.value.id)  # `x.device`: where x is
        if shadow.is_tensor(tensor):
            return DEVICE if shadow.on_device(tensor) else HOST
    if isinstance(expr, ast.IfExp):
        branches = {_spelled(expr.body, frame, shadow, depth + 1), _spelled(expr.orelse, frame, shadow, depth + 1)}
        return HOST if branches == {HOST} else DEVICE if not _in_torch(frame) else None
    if isinstance(expr, ast.Name):
        code = frame.f_code
        parameters = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if expr.id in parameters:
            return Param(expr.id, parameters)
        if _in_torch(frame) or depth > 3:
            return None
        values = _assigned_values(code, expr.id)
        if values:
            spelled = {_spelled(v, frame, shadow, depth + 1) for v in values}
            return HOST if spelled == {HOST} else DEVICE
        return DEVICE
    return None if _in_torch(frame) else DEVICE


def _lookup(frame: Any, name: str) -> Any:
    try:
        names = frame.f_locals
    except Exception:  # noqa: BLE001 - a frame's locals can fail to read; then nothing is known
        return None
    return names[name] if name in names else frame.f_globals.get(name)


def _argument(call: ast.Call, param: Param) -> ast.expr | None:
    """The expression a call passes for a parameter of the function it calls."""
    for keyword in call.keywords:
        if keyword.arg == param.name:
            return keyword.value
    index = param.index
    if 0 <= index < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:index + 1]):
        return call.args[index]
    return None


_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})


def _around_comprehension(frame: Any, expr: ast.expr) -> Any:
    """The frame that spells `expr`: a comprehension runs as a frame of its own (list, set and
    dict comprehensions before Python 3.12, generator expressions always) in which the names of the
    function around it are free; the function around it runs it, so its frame (the comprehension's
    caller) is where they are spelled, and its caller where that function's parameters are.
    `frame` itself when `expr` reads none of those names or one of the comprehension's own."""
    names = {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}
    while frame.f_code.co_name in _COMPREHENSIONS:
        code, outer = frame.f_code, frame.f_back
        free = names & set(code.co_freevars)
        if not free or names & set(code.co_varnames) or outer is None \
                or not free <= set(outer.f_code.co_cellvars) | set(outer.f_code.co_freevars):
            break
        frame = outer
    return frame


def placed_on_device(frame: Any, shadow: "Shadow") -> bool:
    """Whether the call running in `frame` (the caller of a torch function given a device) puts its
    tensor on the device, as its source spells the device: followed outwards through torch's own
    code and through parameters, to the caller that chose it. Not spelled as the CPU: the device."""
    expr: ast.expr | bool | None = None
    for _ in range(_max_hops):
        if frame is None:
            return DEVICE
        if expr is None:
            call = _call_at(frame.f_code, frame.f_lasti)
            expr = _device_argument(call) if call is not None else None
        if expr is None:
            if not _in_torch(frame):
                return DEVICE
            frame = frame.f_back
            continue
        if not isinstance(expr, bool):
            frame = _around_comprehension(frame, expr)
        spelled = expr if isinstance(expr, bool) else _spelled(expr, frame, shadow)
        if isinstance(spelled, bool):
            return spelled
        caller = frame.f_back
        if isinstance(spelled, Param) and caller is not None:
            call = _call_at(caller.f_code, caller.f_lasti)
            expr = _argument(call, spelled) if call is not None else None
            if expr is None:
                return DEVICE
        else:
            expr = None
        frame = caller
    return DEVICE


# -- the device shadow ----------------------------------------------------------------------------

class Shadow:
    """Which tensors would live on the accelerator (see the module's notes). Marks are kept only
    for tensors whose placement differs from the default, by identity, with a weak reference."""

    def __init__(self, torch: Any, assume_device: bool) -> None:
        self.tensor_type = torch.Tensor
        self.assume_device = assume_device
        self.marks: dict[int, tuple[Any, bool]] = {}
        self.pipeline = 0  # > 0 while a DataLoader produces a batch

    def is_tensor(self, value: Any) -> bool:
        return isinstance(value, self.tensor_type)

    def default(self) -> bool:
        return self.assume_device and not self.pipeline

    def on_device(self, tensor: Any) -> bool:
        if tensor.device.type != "cpu":
            return tensor.device.type != "meta"
        entry = self.marks.get(id(tensor))
        if entry is not None and entry[0]() is tensor:
            return entry[1]
        return self.default()

    def place(self, tensor: Any, on_device: bool) -> None:
        key = id(tensor)
        marks = self.marks
        if on_device == self.assume_device:
            marks.pop(key, None)
            return

        def forget(ref: Any, key: int = key) -> None:
            entry = marks.get(key)
            if entry is not None and entry[0] is ref:
                del marks[key]

        marks[key] = (weakref.ref(tensor, forget), on_device)

    def place_all(self, value: Any, on_device: bool, depth: int = 0) -> None:
        """Every tensor in a (nested) tuple, list or dict."""
        if self.is_tensor(value):
            self.place(value, on_device)
        elif depth < 4 and isinstance(value, (list, tuple)):
            for item in value:
                self.place_all(item, on_device, depth + 1)
        elif depth < 4 and isinstance(value, dict):
            for item in value.values():
                self.place_all(item, on_device, depth + 1)

    def inputs_on_device(self, args: tuple, kwargs: dict) -> bool | None:
        """Whether any tensor argument is on the device; None when there is none."""
        seen = False
        for value in (*args, *kwargs.values()):
            for item in (value if isinstance(value, (list, tuple)) else (value,)):
                if isinstance(item, self.tensor_type):
                    if self.on_device(item):
                        return True
                    seen = True
        return False if seen else None


@functools.lru_cache(maxsize=1)
def _follower_class() -> type:
    from torch.overrides import TorchFunctionMode

    class PlacementFollower(TorchFunctionMode):
        """Places each torch call's result in the shadow (`_follow`)."""

        def __init__(self, sanitizer: "Sanitizer") -> None:
            super().__init__()
            self.shadow = sanitizer.shadow

        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's protocol
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if func not in _PLACED_BY_WRAPPERS and out is not None:
                _follow(self.shadow, args, kwargs, out, sys._getframe(1))
            return out

    return PlacementFollower


def _follow(shadow: "Shadow", args: tuple, kwargs: dict, out: Any, frame: Any) -> None:
    """A torch call's result is on the device when an input is, or as its explicit `device=` is
    spelled; made from nothing, it takes the default (torch's own, its counters and seeds, stay on
    the host); an in-place result keeps its place."""
    if (args and out is args[0]) or "out" in kwargs:
        return  # in place: a tensor never changes device by it
    on_device = shadow.inputs_on_device(args, kwargs)
    if kwargs.get("device") is not None:
        on_device = placed_on_device(frame, shadow)
    elif on_device is None:
        on_device = shadow.default() and not _in_torch(frame)
    shadow.place_all(out, on_device)


_PLACED_BY_WRAPPERS: set = set()  # the original functions whose wrappers place their results
_MODULE_FILE = "nn/modules/module.py"  # nn.Module._apply: `model.to(d)` moves each tensor from here


# -- the sanitizer and its hooks ----------------------------------------------------------------

class Sanitizer:
    """One active sanitizer: its counter, whether its devices are real or shadowed, whether it
    times waits; the hooks (process-wide, one set for all active sanitizers) report to it."""

    def __init__(self, torch: Any, counter: SyncCounter, hypothetical: bool, assume_device: bool,
                 timed: bool) -> None:
        self.torch = torch
        self.counter = counter
        self.hypothetical = hypothetical
        self.shadow = Shadow(torch, assume_device) if hypothetical else None
        self.timed = timed
        self.owner = threading.get_ident()
        self.follower: Any = None  # the TorchFunctionMode that follows placements, once pushed
        self.mode_depth = 0  # the torch-function mode stack's depth when the sanitizer started
        self.real_synchronize: Callable[..., Any] = torch.cuda.synchronize

    def on_device(self, tensor: Any) -> bool:
        if self.shadow is None:
            return tensor.device.type not in ("cpu", "meta")
        return self.shadow.on_device(tensor)

    def follow(self) -> None:
        """Start following placements through every torch call (once; only from the thread and at
        the mode-stack depth the sanitizer started at, so that no mode of the user's is under ours)."""
        torch = self.torch
        if self.follower is not None or self.shadow is None or threading.get_ident() != self.owner \
                or torch._C._len_torch_function_stack() != self.mode_depth \
                or torch._guards.TracingContext.try_get() is not None:  # not while Dynamo compiles
            return
        self.follower = _follower_class()(self)
        torch._C._push_on_torch_function_stack(self.follower)

    def unfollow(self) -> None:
        follower, self.follower = self.follower, None
        if follower is None:
            return
        torch = self.torch
        above = []  # modes the user's code left above ours: put back after ours goes
        while torch._C._len_torch_function_stack():
            mode = torch._C._pop_torch_function_stack()
            if mode is follower:
                break
            above.append(mode)
        for mode in reversed(above):
            torch._C._push_on_torch_function_stack(mode)

    def settle(self) -> None:
        """Wait for the device's queued work without counting it (before and after a timed call)."""
        if self.timed:
            _state.busy += 1
            try:
                self.real_synchronize()
            finally:
                _state.busy -= 1

    def placed(self, tensor: Any, on_device: bool, follow: bool = True) -> None:
        """Mark where `tensor` is; a tensor off the default place starts the following (unless
        torch's own code made it: its counters and seeds are read only by torch, which knows)."""
        self.shadow.place(tensor, on_device)
        if follow and on_device != self.shadow.assume_device:
            self.follow()


class _State:
    # > 0 while a hooked call runs: what it does inside is that one sync. Only the threads that
    # own a sanitizer change it (the others pass through the hooks untouched).
    busy = 0


_state = _State()
_active: list[Sanitizer] = []


# torch.compiler.is_compiling once torch is in: True while Dynamo traces a hook (torch.compile
# inside a guarded block); the hook then hands over to the original at once, so that Dynamo
# traces torch's own function, not ptlint's.
_is_compiling: Callable[[], bool] = lambda: False  # noqa: E731


def _watching() -> list[Sanitizer]:
    """The active sanitizers watching this thread. Called by the hooks' bodies only, which `_hook`
    enters only when no hooked call is running, some sanitizer is active and Dynamo is not tracing."""
    me = threading.get_ident()
    if len(_active) == 1:  # the usual case, without building a list
        return _active if _active[0].owner == me else []
    return [s for s in _active if s.owner == me]


def _run_counted(syncs: list[tuple[Sanitizer, str]], frame: Any, call: Callable, *args: Any, **kwargs: Any) -> Any:
    """Run a hooked call (what it calls inside, a subclass's __torch_function__ calling the hook
    again included, is that one call); record each (sanitizer, what) sync at `frame`, timed when
    asked."""
    if not syncs:  # most hooked calls: nothing to record or time
        _state.busy += 1
        try:
            return call(*args, **kwargs)
        finally:
            _state.busy -= 1
    timed = any(s.timed for s, _ in syncs)
    _state.busy += 1
    started = time.perf_counter_ns() if timed else 0
    try:
        return call(*args, **kwargs)
    finally:
        wait = time.perf_counter_ns() - started if timed else None
        _state.busy -= 1
        for sanitizer, what in syncs:
            sanitizer.counter.record(what, frame, wait if sanitizer.timed else None)


def _syncs_on(sanitizers: list[Sanitizer], what: str, tensors: tuple) -> list[tuple[Sanitizer, str]]:
    """(sanitizer, what) for each sanitizer that sees one of `tensors` on the device."""
    return [(s, what) for s in sanitizers if any(s.on_device(t) for t in tensors)]


def _counter_read_code() -> Any:
    """torch.optim reads its step counter with `.item()` (`_get_value`); the counter lives on the
    CPU on every device unless `capturable`/`fused`, so that read never waits for the device.
    Looked up once it exists (every `.item()` asks)."""
    global _counter_code
    if _counter_code is None:
        optimizer = sys.modules.get("torch.optim.optimizer")
        _counter_code = getattr(getattr(optimizer, "_get_value", None), "__code__", None)
    return _counter_code


_counter_code: Any = None


def _hook(original: Any, body: Callable, *bound: Any) -> Callable:
    """A function (so that it binds as a method) that runs `original` at once when no sanitizer
    watches, and otherwise hands the call, with its caller's frame, to `body`."""
    def hooked(*args: Any, **kwargs: Any) -> Any:
        if _state.busy or not _active or _is_compiling():
            return original(*args, **kwargs)
        return body(original, *bound, sys._getframe(1), args, kwargs)
    return functools.wraps(original)(hooked)


@functools.lru_cache(maxsize=1)
def _hook_table(torch: Any) -> tuple[tuple[Any, str, bool, Any, Callable], ...]:
    """(owner, name, whether the owner itself defines it, the original, the hook) for every
    synchronising entry point, and, for the shadow, every call that places a tensor. Made once:
    entering a sanitizer only swaps them in."""
    from torch.utils.data import dataloader

    T = torch.Tensor
    table: list[tuple[Any, str, bool, Any, Callable]] = []

    def replace(owner: Any, name: str, body: Callable, *bound: Any) -> None:
        had = name in vars(owner)
        original = vars(owner)[name] if had else getattr(owner, name)
        table.append((owner, name, had, original, _hook(getattr(owner, name), body, *bound)))

    for name, kind in (("item", "item"), ("__bool__", "bool"), ("is_nonzero", "bool"), ("__float__", "float"),
                       ("__int__", "float"), ("__complex__", "float"), ("__index__", "index"),
                       ("__format__", "format"), ("__repr__", "format"), ("tolist", "tolist"), ("numpy", "numpy"),
                       ("__array__", "numpy"), ("equal", "equal"), ("allclose", "equal"),
                       ("__contains__", "equal")):
        replace(T, name, _on_direct, T, _WHAT[kind])
    for name, kind in (("equal", "equal"), ("allclose", "equal"), ("is_nonzero", "bool")):
        replace(torch, name, _on_direct, T, _WHAT[kind])
    for name in ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive"):
        replace(T, name, _on_direct, T, _size_op(name))
        replace(torch, name, _on_direct, T, _size_op(f"torch.{name}"))
    replace(T, "__getitem__", _on_conditional, functools.partial(_masked, T, "x[mask]"))
    replace(T, "__setitem__", _on_conditional, functools.partial(_masked, T, "x[mask] = v"))
    replace(torch, "where", _on_conditional, _where_condition)
    replace(T, "repeat_interleave", _on_conditional, _repeats)
    replace(torch, "repeat_interleave", _on_conditional, _repeats)
    replace(T, "to", _on_to, torch)
    replace(T, "cpu", _on_cpu_call)
    replace(T, "cuda", _on_cuda, torch)
    _PLACED_BY_WRAPPERS.update({torch._C.TensorBase.to, torch._C.TensorBase.cpu, torch._C.TensorBase.cuda})
    for name in _FACTORIES:
        if hasattr(torch, name):
            _PLACED_BY_WRAPPERS.add(getattr(torch, name))
            replace(torch, name, _on_factory, torch)
    replace(dataloader._BaseDataLoaderIter, "__next__", _on_next_batch)
    replace(torch.cuda, "synchronize", _on_synchronize)
    return tuple(table)


def _on_direct(original: Any, T: type, what: str, frame: Any, args: tuple, kwargs: dict) -> Any:
    """A sync whenever its first argument (or, for torch.equal, any tensor argument) is on the
    device; not torch.optim's read of its step counter, nor torch's own sampling and seeding."""
    if what == _WHAT["item"] and frame.f_code is _counter_read_code():
        return original(*args, **kwargs)
    sanitizers = _watching()
    tensors = [a for a in args if isinstance(a, T)] if what == _WHAT["equal"] else args[:1]
    syncs = _syncs_on(sanitizers, what, tensors)
    if syncs and _in_data_pipeline(frame):
        syncs = [(s, w) for s, w in syncs if s.shadow is None]
    return _run_counted(syncs, frame, original, *args, **kwargs)


def _on_conditional(original: Any, check: Callable[[Sanitizer, tuple, dict], str | None], frame: Any,
                    args: tuple, kwargs: dict) -> Any:
    """A sync when `check` says so (a plain index, `x[0]`, `x[:, 1]`, is none)."""
    syncs = [(s, what) for s in _watching() if (what := check(s, args, kwargs)) is not None]
    return _run_counted(syncs, frame, original, *args, **kwargs)


def _install_hooks(torch: Any) -> Callable[[], None]:
    """Swap the hooks in; returns what puts the originals back."""
    table = _hook_table(torch)
    for owner, name, _, _, hooked in table:
        setattr(owner, name, hooked)

    def undo() -> None:
        for owner, name, had, original, _ in reversed(table):
            if had:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

    return undo


def _masked(T: Any, name: str, sanitizer: Sanitizer, args: tuple, kwargs: dict) -> str | None:
    """`x[mask]` reads how many elements are set; `x[mask] = v` too, unless it is a masked_fill."""
    index = args[1] if len(args) > 1 else None
    parts = index if isinstance(index, tuple) else (index,)
    masks = [p for p in parts if isinstance(p, T) and p.dtype in _BOOL_DTYPES]
    if not masks or not any(sanitizer.on_device(m) for m in masks):
        return None
    if name == "x[mask] = v" and not isinstance(index, tuple):
        value = args[2] if len(args) > 2 else None
        # `x[mask] = scalar` becomes masked_fill (no sync) unless the value is on the device
        if not isinstance(value, T) or (value.numel() == 1 and not sanitizer.on_device(value)):
            return None
        if value.numel() == 1:
            return _WHAT["item"]
    return _size_op(name)


_BOOL_DTYPES: tuple = ()


def _where_condition(sanitizer: Sanitizer, args: tuple, kwargs: dict) -> str | None:
    """`torch.where(condition)` alone (not `where(c, a, b)`) is `nonzero`."""
    condition = args[0] if len(args) == 1 and not kwargs else None
    if isinstance(condition, sanitizer.torch.Tensor) and sanitizer.on_device(condition):
        return _size_op("torch.where(condition)")
    return None


def _repeats(sanitizer: Sanitizer, args: tuple, kwargs: dict) -> str | None:
    repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
    if isinstance(repeats, sanitizer.torch.Tensor) and repeats.numel() > 1 and "output_size" not in kwargs \
            and sanitizer.on_device(repeats):
        return _size_op("repeat_interleave")
    return None


def _target_of(torch: Any, args: tuple, kwargs: dict) -> Any:
    """The device (a name, a torch.device, an ordinal) or tensor `.to(...)` moves to; None when it
    only changes the dtype or memory format."""
    target = kwargs.get("device")
    for arg in args:
        if isinstance(arg, (str, torch.Tensor, torch.device)) or type(arg) is int:
            target = arg
    return target


def _device_type(torch: Any, target: Any) -> str:
    if isinstance(target, torch.Tensor):
        return target.device.type
    if isinstance(target, torch.device):
        return target.type
    if isinstance(target, int):
        return "cuda"
    try:
        return torch.device(target).type
    except (RuntimeError, TypeError):
        return ""


def _moved(sanitizers: list[Sanitizer], source: Any, out: Any, frame: Any, to_device: Callable[[Sanitizer], bool]
           ) -> Any:
    """Place the result of `.to()`, `.cpu()`, `.cuda()` in each shadow. On the CPU a move to the
    place it already is returns its source, which on a GPU machine would stay where it was: the
    result is then a copy (but `model.to(d)` keeps the module's own tensors)."""
    decided = [(s, to_device(s)) for s in sanitizers if s.shadow is not None]
    if out is source and any(s.on_device(source) != where for s, where in decided) \
            and _torch_relative(frame.f_code.co_filename) != _MODULE_FILE:
        out = out.clone()
    for sanitizer, where in decided:
        sanitizer.placed(out, where)
    return out


def _keep_place(sanitizers: list[Sanitizer], source: Any, out: Any) -> Any:
    """A result that is where its source is (a dtype change; torch's own no-op moves)."""
    for sanitizer in sanitizers:
        if sanitizer.shadow is not None and out is not source:
            sanitizer.placed(out, sanitizer.on_device(source), follow=False)
    return out


def _on_to(original: Any, torch: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """`.to(...)`: a sync when it copies a device tensor to the host (not `non_blocking`); for the
    shadow, the result is where the source spells the target."""
    self, args = args[0], args[1:]
    sanitizers = _watching()
    relative = _torch_relative(frame.f_code.co_filename)
    if relative is not None and relative != _MODULE_FILE and all(s.shadow is not None for s in sanitizers):
        # torch's own code (not `model.to(d)`) moving a tensor to a device it computed
        # (`.to(grads[0].device)`): in a GPU run it is already there, so it stays where it was
        return _keep_place(sanitizers, self, _run_counted([], frame, original, self, *args, **kwargs))
    target = _target_of(torch, args, kwargs)
    if target is None:  # a dtype or memory-format change
        return _keep_place(sanitizers, self, _run_counted([], frame, original, self, *args, **kwargs))
    target_type = _device_type(torch, target)
    if target_type == "cuda" and not torch.cuda.is_available() and any(s.hypothetical for s in sanitizers):
        args, kwargs = _on_cpu(torch, args, kwargs)  # the shadow's device is the CPU
    asynchronous = kwargs.get("non_blocking") or any(a is True for a in args)
    where = {s: (s.on_device(target) if isinstance(target, torch.Tensor) else placed_on_device(frame, s.shadow))
             if s.shadow is not None else target_type != "cpu" for s in sanitizers}
    syncs = [(s, _WHAT["to_cpu"]) for s in sanitizers if not where[s] and not asynchronous and s.on_device(self)]
    out = _run_counted(syncs, frame, original, self, *args, **kwargs)
    return _moved(sanitizers, self, out, frame, where.__getitem__)


def _on_cpu_call(original: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """`.cpu()`: a sync from the device; the result is on the host."""
    sanitizers = _watching()
    out = _run_counted(_syncs_on(sanitizers, _WHAT["cpu"], args[:1]), frame, original, *args, **kwargs)
    return _moved(sanitizers, args[0], out, frame, lambda s: HOST)


def _on_cuda(original: Any, torch: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """`.cuda()`: for a shadow on a machine without CUDA, the tensor stays here, marked as on the device."""
    sanitizers = _watching()
    if torch.cuda.is_available() or not any(s.shadow is not None for s in sanitizers):
        return _run_counted([], frame, original, *args, **kwargs)
    return _moved(sanitizers, args[0], args[0], frame, lambda s: DEVICE)


# the functions that make a tensor from no tensor, given a `device=`: hooked so that a block that
# makes a tensor on the CPU starts the shadow following it (the follower sees the others)
_FACTORIES = ("tensor", "as_tensor", "asarray", "zeros", "ones", "empty", "full", "rand", "randn", "randint",
              "randperm", "arange", "linspace", "logspace", "eye", "empty_strided", "scalar_tensor")


def _on_factory(original: Any, torch: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """A tensor made from nothing: where its `device=` is spelled; without one, the default (but
    torch's own, its counters and seeds, stay on the host)."""
    shadows = [s for s in _watching() if s.shadow is not None]
    if not shadows:
        return original(*args, **kwargs)
    device = kwargs.get("device")
    if device is not None and _device_type(torch, device) == "cuda" and not torch.cuda.is_available():
        kwargs = dict(kwargs, device="cpu")  # the shadow's device is the CPU
    _state.busy += 1
    try:
        out = original(*args, **kwargs)
    finally:
        _state.busy -= 1
    for sanitizer in shadows:
        if device is not None:
            sanitizer.placed(out, placed_on_device(frame, sanitizer.shadow))
        else:
            sanitizer.placed(out, sanitizer.shadow.default() and not _in_torch(frame), follow=False)
    return out


def _on_cpu(torch: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The arguments of `.to(...)` with its device replaced by the CPU."""
    def cpu(value: Any) -> Any:
        if isinstance(value, (str, torch.device)) or (isinstance(value, int) and not isinstance(value, bool)):
            return "cpu"
        return value
    return tuple(cpu(a) for a in args), {k: cpu(v) if k == "device" else v for k, v in kwargs.items()}


def _on_next_batch(original: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """A DataLoader's batches are made on the host (in a GPU run too): while it makes one, and for
    the tensors it yields, the shadow says host."""
    shadows = [s for s in _watching() if s.shadow is not None]
    for sanitizer in shadows:
        sanitizer.shadow.pipeline += 1
    try:
        batch = original(*args, **kwargs)
    finally:
        for sanitizer in shadows:
            sanitizer.shadow.pipeline -= 1
    for sanitizer in shadows:
        if sanitizer.shadow.assume_device:
            sanitizer.shadow.place_all(batch, HOST)
            sanitizer.follow()
    return batch


def _on_synchronize(original: Any, frame: Any, args: tuple, kwargs: dict) -> Any:
    """`torch.cuda.synchronize()`: a sync; without CUDA, what would be one (nothing to wait for)."""
    syncs = [(s, _WHAT["sync"]) for s in _watching()]
    if not _cuda_available():
        for sanitizer, what in syncs:
            sanitizer.counter.record(what, frame)
        return None
    return _run_counted(syncs, frame, original, *args, **kwargs)


@functools.lru_cache(maxsize=1)
def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


_hooks_undo: Callable[[], None] | None = None


@contextlib.contextmanager
def sanitizing(counter: SyncCounter, hypothetical: bool | None = None, assume_device: bool = True,
               timed: bool = False) -> Iterator[Sanitizer]:
    """Run the block under the sanitizer. `hypothetical` (default: when CUDA is unavailable) uses
    the device shadow with its `assume_device` policy (see the module's notes) instead of the real
    devices; `timed` measures how long the host waits at each sync (meaningful on CUDA only).
    Restores every hooked function, the CUDA sync debug mode and the warning filters, also when
    the block raises."""
    global _hooks_undo, _BOOL_DTYPES, _is_compiling
    import torch

    _is_compiling = torch.compiler.is_compiling
    cuda = torch.cuda.is_available()
    if hypothetical is None:
        hypothetical = not cuda
    _BOOL_DTYPES = (torch.bool, torch.uint8)
    sanitizer = Sanitizer(torch, counter, hypothetical, assume_device, timed and cuda and not hypothetical)
    sanitizer.mode_depth = torch._C._len_torch_function_stack()
    with contextlib.ExitStack() as stack:
        if not _active:
            _hooks_undo = _install_hooks(torch)

            def unhook() -> None:
                global _hooks_undo
                if not _active and _hooks_undo is not None:
                    _hooks_undo()
                    _hooks_undo = None

            stack.callback(unhook)
        sanitizer.real_synchronize = getattr(torch.cuda.synchronize, "__wrapped__", torch.cuda.synchronize)
        _active.append(sanitizer)
        stack.callback(_active.remove, sanitizer)
        stack.callback(sanitizer.unfollow)
        if cuda:
            stack.enter_context(_cuda_debug_mode(torch, sanitizer))
        if hypothetical and not assume_device:
            sanitizer.follow()  # the program's placements: every call is followed from the start
        yield sanitizer


@contextlib.contextmanager
def _cuda_debug_mode(torch: Any, sanitizer: Sanitizer) -> Iterator[None]:
    """set_sync_debug_mode("warn"); each warning it raises outside a call a hook already counted
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
            if _state.busy == 0 and threading.get_ident() == sanitizer.owner:
                sanitizer.counter.record(_WHAT["cuda"], sys._getframe(1))
            if getattr(shown, "ptlint_sync_hook", False):  # an enclosing sanitizer counts it too
                shown(message, category, filename, lineno, file, line)

        showwarning.ptlint_sync_hook = True  # type: ignore[attr-defined]
        warnings.showwarning = showwarning
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(previous_mode)
