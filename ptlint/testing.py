"""Fail a test when code starts breaking graphs, recompiling or making the host wait for the device.

    from ptlint.testing import no_graph_breaks, no_recompiles, no_host_syncs

    def test_forward_compiles_whole(model, batch):
        with no_graph_breaks(within="mypkg"):    # only breaks whose innermost frame is in mypkg
            torch.compile(model, backend="eager")(batch)

    @no_host_syncs(max=1)                         # a budget: at most one sync in the test
    def test_step_syncs_once(step, batch):
        step(batch)

Each guard is a context manager and a decorator. On leaving the block with more events than `max`
it raises `GuardFailure` (an AssertionError) whose message lists each event as `ptlint explain`
prints it: `path:line:col: PTL450 graph break: ... (GB0059) ...`, with the source line under it.
They run in the test's own process, reuse the dynamic pass's reading of Dynamo's records
(ptlint.dynamic.events), its sanitizer (ptlint.dynamic.syncs) and its findings
(ptlint.dynamic.report), and put back every logger, artifact switch, Dynamo memory, CUDA sync
debug mode and patched function they touch, also when the block raises. Nesting works.

Dynamo reports a graph break only while it traces, and it does not trace again code it has
already compiled: so `no_graph_breaks`, when no other graph-break or recompile guard is active,
clears Dynamo's caches on entry (`torch._dynamo.reset()`), and the block is traced as in a fresh
process whatever earlier tests compiled. `no_recompiles` clears nothing: a recompilation is a
compilation of code Dynamo compiled before, so a warm-up before the block counts (call
`torch._dynamo.reset()` first to count from scratch).

`within` is a module or package name (`"mypkg"`, `"mypkg.models"`) or a path prefix
(`"src/mypkg"`): an event counts when the innermost frame outside torch and the standard library
is there. `None` counts every event with such a frame. Files under `within` also count as the
user's code when an event is placed, even when the package is installed in site-packages. A name
that is neither an importable module nor an existing path warns, and then no event counts.

torch is imported when a guard is entered, never by `import ptlint.testing`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import sys
import warnings
from typing import Any, Callable

__all__ = ["GuardFailure", "no_graph_breaks", "no_host_syncs", "no_recompiles"]

_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
_dynamo_guards: list[Any] = []  # the graph-break and recompile guards now active, outermost first


class GuardFailure(AssertionError):
    """More events than a guard allows; `findings` are the ptlint findings its message lists."""

    def __init__(self, message: str, findings: list[Any]) -> None:
        super().__init__(message)
        self.findings = findings


class _Guard(contextlib.ContextDecorator):
    name = ""  # the guard's own name, in messages
    kind = ""  # the event it counts: "break", "recompile" or "sync"
    noun = ""  # what the count counts, in messages

    def __init__(self, within: str | os.PathLike[str] | None = None, max: int = 0) -> None:  # noqa: A002 - the API
        if isinstance(max, bool) or not isinstance(max, int) or max < 0:
            raise ValueError(f"{self.name}(max=...) must be a whole number >= 0, not {max!r}")
        if within is not None and not isinstance(within, (str, os.PathLike)):
            raise TypeError(f"{self.name}(within=...) must be a module name or a path, not {within!r}")
        self.within = within
        self.max = max
        self.count = 0  # after the block: the events counted
        self._found: list[Any] | None = []  # after the block: those events as findings (made when asked)
        self._stack: contextlib.ExitStack | None = None

    @property
    def findings(self) -> list[Any]:
        """The events counted, as ptlint findings (made on first use: a passing block need not)."""
        if self._found is None:
            self._found = self._findings()[0]
        return self._found

    def _recreate_cm(self) -> "_Guard":  # a decorated function gets a fresh guard per call
        return type(self)(self.within, self.max)

    def __enter__(self) -> "_Guard":
        if self._stack is not None:
            raise RuntimeError(f"this {self.name}() is already active; nest a new one instead")
        prefixes = _resolve(self.within, self.name)
        self._events: list[dict[str, Any]] = []
        self._in_scope = functools.partial(_under, prefixes) if prefixes else None
        stack = contextlib.ExitStack()
        try:
            self._start(stack)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        __tracebackhide__ = True  # pytest: the failure points at the test, not here
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()
        self._collect()
        if exc_type is not None:
            return False  # the block's own exception goes on, everything already restored
        self._found, self.count = None, self._count()
        if self.count > self.max:
            raise GuardFailure(self._report(), self.findings)
        return False

    # -- what each guard watches --------------------------------------------------------------

    def _is_user(self) -> Callable[[str], bool]:
        in_scope = self._in_scope
        if in_scope is None:
            return _user_file
        return lambda path: bool(path) and (_user_file(path) or in_scope(path))

    def _start(self, stack: contextlib.ExitStack) -> None:
        import torch

        from ptlint.dynamic.events import DynamoListener, listening

        if self.kind == "break" and not _dynamo_guards:  # trace the block afresh (see the module's notes)
            torch._dynamo.reset()
        _dynamo_guards.append(self)
        stack.callback(_dynamo_guards.remove, self)
        listener = DynamoListener(self._events.append, self._is_user(), _registry(torch))
        stack.enter_context(listening(listener))

    def _collect(self) -> None:
        pass

    def _findings(self) -> tuple[list[Any], int]:
        from ptlint.dynamic.report import event_findings

        events = [e for e in self._events if e["event"] == self.kind and self._counts(e)]
        findings, counts = event_findings(events, lambda event: "<no user frame>", lambda event: "block")
        count = {"break": counts.breaks, "recompile": counts.recompiles, "sync": counts.syncs}[self.kind]
        return sorted(findings, key=lambda f: (f.path, f.line, f.column, f.code)), count

    def _count(self) -> int:
        return self._findings()[1]

    def _counts(self, event: dict[str, Any]) -> bool:
        scope = event.get("scope")
        if scope is None:
            return False  # nothing but torch and the standard library: not the user's business
        return self._in_scope is None or self._in_scope(scope)

    def _report(self) -> str:
        from ptlint.report.formats import format_full

        where = f" within {os.fspath(self.within)!r}" if self.within is not None else ""
        plural = "" if self.count == 1 else "s"
        head = f"{self.name}: {self.count} {self.noun}{plural}{where}, at most {self.max} allowed:\n"
        return head + format_full(self.findings).rstrip() + "\n"


class no_graph_breaks(_Guard):  # noqa: N801 - used like a function
    """Fail when more than `max` distinct graph breaks (PTL450) happen in the block."""

    name, kind, noun = "no_graph_breaks", "break", "graph break"


class no_recompiles(_Guard):  # noqa: N801
    """Fail when Dynamo recompiles more than `max` times (PTL451) in the block."""

    name, kind, noun = "no_recompiles", "recompile", "recompilation"


class no_host_syncs(_Guard):  # noqa: N801
    """Fail when the host waits for the device more than `max` times (PTL452) in the block.

    The block runs under ptlint's sync sanitizer (ptlint.dynamic.syncs), which hooks the
    synchronising calls only, so a step pays at its syncs. With CUDA available it counts what
    really synchronises and also turns on `torch.cuda.set_sync_debug_mode("warn")`. On the CPU
    the block stands for a step on the device: every tensor is taken to be on the device except
    the host ones (what the code puts on the CPU, a DataLoader's batches, what is computed only
    from those); torch's own data loading, samplers and optimizer step counters do not count."""

    name, kind, noun = "no_host_syncs", "sync", "host sync"

    def _start(self, stack: contextlib.ExitStack) -> None:
        from ptlint.dynamic.syncs import SyncCounter, sanitizing

        self._counter = SyncCounter(self._is_user())
        stack.enter_context(sanitizing(self._counter))

    def _collect(self) -> None:
        self._events.extend(self._counter.take())

    def _count(self) -> int:  # event_findings' sync count, without making the findings
        return sum(e.get("count", 1) for e in self._events if e["event"] == "sync" and self._counts(e))


@functools.lru_cache(maxsize=1)
def _registry(torch: Any) -> dict[str, Any]:
    from ptlint.dynamic.events import gb_registry

    return gb_registry(torch)


def _resolve(within: str | os.PathLike[str] | None, guard: str) -> tuple[str, ...]:
    """The real paths that `within` names: a package's folders, a module's file, or a path prefix."""
    if within is None:
        return ()
    text = os.fspath(within)
    if _DOTTED.match(text) and not os.path.exists(text):
        module = sys.modules.get(text)
        try:
            spec = module.__spec__ if module is not None else importlib.util.find_spec(text)
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            places = list(spec.submodule_search_locations or []) or [spec.origin]
            return tuple(os.path.realpath(p) for p in places if p)
        warnings.warn(f"{guard}(within={text!r}): no module, package or path of that name; no event can count",
                      stacklevel=3)
    return (os.path.realpath(text),)


def _under(prefixes: tuple[str, ...], path: str) -> bool:
    real = os.path.realpath(path)
    for prefix in prefixes:
        if os.path.isdir(prefix):
            if real.startswith(prefix + os.sep):
                return True
        elif real.startswith(prefix):  # a module's file, or a prefix of file names
            return True
    return False


@functools.lru_cache(maxsize=8192)
def _user_file(path: str) -> bool:
    """A file of the user's (ptlint.dynamic.paths.is_user_file), asked once per file in the process:
    every guard's first sync at a site walks the stack's files, which a fresh answer per guard
    made cost a small block as much as its own steps."""
    from ptlint.dynamic.paths import is_user_file, torch_dirs

    return bool(path) and is_user_file(path, torch_dirs())
