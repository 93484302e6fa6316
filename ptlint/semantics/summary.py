"""What one file tells the rest of the project: its summary for the project model.

A summary is plain data (dicts, lists, strings, numbers), so it can be cached by the file's
content and carried between processes. It holds what the project model
(ptlint.semantics.project) needs to answer, across files, where code runs and what the program
does — never a finding:

- `defs`: every def, by its name in the module (`def_key`: `Trainer.step`), with its line, what it
  is when that alone says how often it runs (`intrinsic`: a `forward`, a step hook, a compiled
  function, with the reason), the context it has when nothing calls it (`alone`: once for set-up
  names, else called), whether it is a training step by itself (`hook`), whether its body
  is a placeholder for subclasses (`pass`, `raise NotImplementedError`), whether it holds a
  loop over data or one that trains (called from a loop, it is an epoch), and for a top-level
  function its parameters with their constant defaults;
- `classes`: every class, with its bases as references (a class of this file, or a name an import
  binds);
- `edges`: every call that may run a def — of this file (resolved by ptlint.semantics.calls) or of
  another module of the project (a name bound by an import, `self.method()` that a base or a
  subclass elsewhere may define, `obj.method()` where `obj` is an instance of a known class) — with
  how its context follows from its function's (`transfer`, ptlint.semantics.where), whether it is
  cold, whether a loop around it runs a training step, the loop to cite as evidence, and its
  constant arguments; `passed`, the defs the file uses otherwise than calling them (handed on,
  stored): called with arguments no call site shows;
- `imports`: the modules the file imports (for the programs it belongs to), and `exports`, the
  names its imports bind at module level (a package's `__init__` re-exporting `train`);
- `names`: what code that never runs can be told by: `roots`, the names the file's module-level
  code uses (a name, an attribute, an imported name, a string that may name a def;
  space-separated); `tops`, each top-level def and class with whether it is decorated (a
  decorator may register it) and the names its body uses (space-separated); `lookups`, what the
  file looks up by a computed name (`getattr(models, args.arch)`, `globals()[name]`, `eval`):
  ["m", ...] a module of the project, ["n", ...] a name imported from one, "." this file, "*"
  anything; `entry`, whether the file is a program's entry (`if __name__ == "__main__":`, or a
  loop at its top level); and `main`, whether it has such an `if` at module level;
- `accelerator`, `compiles`, `dynamic`, `loads`, `trains`: whether the file places tensors on an
  accelerator (or could: a device that arrives from elsewhere), compiles code with
  `torch.compile`, may use code no summary shows (`dynamic`: it imports modules by name, star-
  imports, or uses names bound nowhere), imports modules by name at run time (`loads`: what
  its program holds is then unknown), or trains a model (a loop that runs a training step).

References are lists: `["l", key]` a def or class of this file; `["m", level, module, names]`
what `from <level dots><module> import ...` or `import <module>` binds, then the attributes
after it (`["m", 1, "engine", ["train_one_epoch"]]`); `["s", class_key, method]` a call of
`self.method()` in that class; `["i", class_ref, method]` a method of an instance of a class.
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
import re
from typing import TYPE_CHECKING

from ptlint.semantics.compiled import COMPILE, local_classes
from ptlint.semantics.nodes import FUNCTION_DEFS, SELF_NAMES, class_family, def_key, is_main_test, is_placeholder, walk
from ptlint.semantics.packing import packed
from ptlint.semantics.where import (
    CALLED,
    LETTER,
    ONCE,
    ONCE_NAME,
    ONCE_NAMES,
    counts_epochs,
    step_loop,
    execution_model,
    is_training_hook,
    iterable_is_data,
    loop_why,
    runs_training_step,
    steps_environment_itself,
    transfer,
)

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

SUMMARY_VERSION = 61  # 61: a `try` or `with` body that ends by leaving its loop runs once per run of it; 60: a name moved to the device by `x = x.cuda()` is not on the host; values derive through methods of torch ops' results; 59: a loop over a mapping or a literal inside an epoch loop's own code runs once per epoch; 58: `step == start_step` holds on the first step of a run; 57: `.to(y.device)` of a batch part left on the host is a move to the CPU; 56: a value moved with `.cpu()` last is on the host whatever its input was; 55: a flag named `should_log_...` (spelled out) is a periodic test; 54: a branch or `while` handing set-up to a method of its class that sets what the test asks runs when the need grows; 53: an import several modules could answer finds the one starting nearest above the importer; 52: a cached function (`@lru_cache`) runs once per new argument; a loop over `range(steps)` with `steps = 10` runs a few times; 51: parameters, arguments and method calls kept as literal text (50 held JSON text); 49: methods' parameters, parameters handed on in calls, unresolved method calls (`method_calls`); 48: `taken`, the attributes of a module loaded by name, not called; 47: self-tests, `eval`'s reach, names imported (see git log); 46: an instance built as `Net(c).to(device)` is a Net; 45: a method called on a name bound to instances of several classes (one per branch) runs each class's; 44: only the root's folders are looked in for a module a script puts on sys.path; 43: a Python 2 `print x` statement parses; 42: an import alone uses no name; 41: `getattr(self, name)` keeps only its own class family's methods used; 40: a def whose only data loop walks one batch (`range(batch_size)`) holds no step loop; 39: an import of a module in a folder a script puts on sys.path is kept; 38: a file with the legacy `async=` keyword parses; 37: an edge says whether its innermost loop counts epochs; 36: a function stored on self (self.f = f) is called through it; 35: a training step only an epoch loop calls runs once per epoch; 34: a function that backpropagates, called only once by name, is no step; 33: a method of a global instance (`agent = Agent()` at module level) is resolved in functions; 32: a function that backpropagates only over micro-batches is a step

# Text that says a file places tensors on an accelerator, or may (a device from elsewhere, a
# launcher that picks one): the names of devices and of the libraries that place models.
ACCELERATOR_WORDS = ("cuda", "xpu", "torch_xla", "accelerate", "lightning", "deepspeed", "Fabric", "fabric",
                     "colossalai", "DataParallel", "nccl", "get_device", "device_ids", "ray.train")
ALONE_WORDS = ("mps", "npu", "hpu", "tpu", ".device")  # (these only as words of their own: not `.devices`)
ALONE_TEXT = re.compile(r"\b(?:mps|npu|hpu|tpu)\b|\.device\b")


def uses_unbound_names(found: "ast.Module | _Scan") -> bool:
    """The code (a tree, or its scan) uses a name that nothing binds (a snippet, an exercise with
    blanks, names a notebook's kernel had from elsewhere): its own code is not all there."""
    scan = found if isinstance(found, _Scan) else _Scan(found)
    return bool(scan.used - scan.bound - _BUILTINS)


def names_accelerator(text: str) -> bool:
    """The text names a device or a library that places models. (Substring tests first: one
    regular expression of all the words, tried at every position of a large file, took three
    times as long.)"""
    return any(word in text for word in ACCELERATOR_WORDS) \
        or any(word in text for word in ALONE_WORDS) and ALONE_TEXT.search(text) is not None


CPU_DEVICE = re.compile(r"""\s*["']cpu(:\d+)?["']\s*""")
DYNAMIC_IMPORTS = ("importlib", "__import__", "runpy")


def summarize(ctx: "FileFacts") -> dict:
    """The file's summary (see the module docstring), from its tree; after the traversal, when
    there was one (the model reads the assignments it recorded)."""
    model = execution_model(ctx)
    parent = ctx.parent
    scan = _Scan(ctx.tree)
    ctx.memo["summary-assignments"] = scan.assignments
    imports, exports, bindings = _imports(ctx, scan.imports)
    defs: dict[str, list] = {}
    for function in ctx.function_defs():
        key = model.key(function)
        if key in defs:  # two defs of one name (`if ...: def f` / `else: def f`): the first one
            continue
        intrinsic = model.intrinsic(function)
        hook = is_training_hook(function, ctx)
        once = function.name in ONCE_NAMES or ONCE_NAME.search(function.name)
        defs[key] = [function.lineno, LETTER[intrinsic] if intrinsic else "",
                     model.intrinsic_why.get(id(function), ""), LETTER[ONCE if once else CALLED], hook,
                     is_placeholder(function),
                     2 if model.holds_rollout(function) else int(model.holds_step_loop(function)),
                     packed(_parameters(function)) if parent(function) is ctx.tree else
                     packed(_parameters(function, method=True)) if _top_method(function, parent, ctx) else None]
    classes: dict[str, list] = {}
    for node in scan.classes:
        key = def_key(node, parent)
        if key not in classes:
            classes[key] = [node.lineno, [_reference(base, node, ctx, bindings) for base in node.bases]]
    edges: list[list] = []
    resolved: set[int] = set()
    for function in ctx.function_defs():
        key = model.key(function)
        for call in model.callers(function):
            edges.append(_edge(model, call, ["l", key], function.name))
            resolved.add(id(call))
    for call in ctx.calls():
        for target in _foreign_callees(call, ctx, bindings):
            edges.append(_edge(model, call, target, target[-1] if target[0] != "m" else target[3][-1]))
            resolved.add(id(call))
    stars = [[level, module] for level, module, names in imports if names == ["*"]]
    if stars:  # `from utils import *` ... `calculate_map(...)`: the solve looks the name up in each
        for call in ctx.calls():
            func = call.func
            if type(func) is ast.Name and func.id not in _BUILTINS and ctx.names.binding_scope(func.id, call) is None:
                for level, module in stars:
                    reference = ["m", level, module, [func.id]]
                    if _may_be_project(reference, ctx):
                        edges.append(_edge(model, call, reference, func.id))
    by_name = _imports_by_name(ctx)
    return {
        "v": SUMMARY_VERSION,
        "defs": defs,
        "classes": classes,
        "edges": edges,
        "imports": imports,
        "exports": exports,
        "accelerator": _accelerator(ctx),
        "compiles": _compiles(ctx, scan),
        # the file trains a model: a loop that runs a training step, or a training step of its own
        "trains": any(entry[4] for entry in defs.values()) or any(runs_training_step(loop) for loop in scan.loops),
        "dynamic": scan.star or by_name,
        # it uses names bound nowhere (a snippet, an exercise with blanks): its own code is not all
        # there, but what it imports is known
        "unbound": uses_unbound_names(scan),
        # it loads modules by name at run time: its program holds code no summary shows
        "loads": by_name,
        "names": _names(ctx, scan, bindings, by_name, imports),
        # methods only the project's own code can call, per class; every attribute name the file
        # uses; whether it reaches attributes by computed names (the solve finds unused methods)
        "methods": _methods(ctx, scan, bindings),
        "attributes": " ".join(sorted(scan.attributes)),
        "attribute_lookup": _looks_up_attributes(ctx),
        "passed": _passed(ctx, scan),
        "method_calls": packed(_unresolved_method_calls(ctx, resolved)),
        "taken": _taken_from_loaded_modules(ctx, scan) if by_name else [],
    }


def _constant(node: ast.AST | None) -> list | int:
    """["c", value] for a constant argument or default (a string, a number, a bool, None; `-1`), else 0."""
    if type(node) is ast.UnaryOp and type(node.op) is ast.USub and type(node.operand) is ast.Constant \
            and type(node.operand.value) in (int, float):
        return ["c", -node.operand.value]
    if type(node) is ast.Constant and (node.value is None or type(node.value) in (str, int, float, bool)):
        return ["c", node.value]
    return 0


def _top_method(function: ast.AST, parent, ctx: "FileFacts") -> bool:
    """A method of a class at the module's top level."""
    owner = parent(function)
    return isinstance(owner, ast.ClassDef) and parent(owner) is ctx.tree


def _parameters(function: ast.AST, method: bool = False) -> list:
    """[positional names, {name: default}, takes *args or **kwargs]; a default is `_constant`'s,
    or "r" where the parameter has none. `method`: the instance or class a call binds first is
    left out (not of a `@staticmethod`)."""
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if method and positional and not any(isinstance(d, ast.Name) and d.id == "staticmethod"
                                         for d in function.decorator_list):
        positional = positional[1:]
    pad = len(positional) - len(args.defaults)
    defaults = {name: _constant(args.defaults[i - pad]) if i >= pad else "r" for i, name in enumerate(positional)}
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        defaults[arg.arg] = _constant(default) if default is not None else "r"
    return [positional, defaults, bool(args.vararg or args.kwarg)]


def _arguments(call: ast.Call, passed_on: set[str] = frozenset()) -> list | int | None:
    """[positional arguments, {keyword: argument}] as `_constant`s, or ["p", name] for a parameter
    of the calling def that it hands on unchanged (`passed_on`: `self.get_time_steps(skip_type=
    skip_type)`, whose values are the caller's); only their number where they are positional and
    none is either (most calls: kept small); None where some are spread (`*args`, `**kwargs`)."""
    if any(type(a) is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    positional = [_argument(a, passed_on) for a in call.args]
    if not call.keywords and not any(positional):
        return len(positional)
    return [positional, {k.arg: _argument(k.value, passed_on) for k in call.keywords}]


def _argument(node: ast.AST, passed_on: set[str]) -> list | int:
    if type(node) is ast.Name and node.id in passed_on:
        return ["p", node.id]
    return _constant(node)


def _handed_on(function: ast.AST | None, ctx: "FileFacts") -> set[str]:
    """The parameters of `function` that it never rebinds: a call that passes one passes what
    the function received."""
    if function is None or isinstance(function, ast.Lambda):
        return set()
    key = ("handed-on", id(function))
    if key not in ctx.memo:
        args = function.args
        names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        ctx.memo[key] = {name for name in names if not ctx.assignments(name, function)}
    return ctx.memo[key]


def _unresolved_method_calls(ctx: "FileFacts", resolved: set[int]) -> dict[str, list]:
    """Method name -> the arguments of the calls `x.name(...)` that no edge resolves (the receiver's
    class is not known) and that call no module's function: a method of the project's of that
    name may be what they run. Calls giving only that many non-constant positional arguments are
    kept as the largest such number, the first entry; distinct other argument lists after it."""
    found: dict[str, list] = {}
    for call in ctx.calls():
        func = call.func
        if type(func) is not ast.Attribute or id(call) in resolved or ctx.qualname(func) is not None:
            continue
        arguments = _arguments(call)
        entry = found.setdefault(func.attr, [0])
        if isinstance(arguments, int):
            entry[0] = max(entry[0], arguments)
        elif arguments not in entry[1:]:
            entry.append(arguments)
    return found


def _passed(ctx: "FileFacts", scan: "_Scan") -> list[str]:
    """The defs' names (this file's top-level defs, names imported from modules, `module.f`) that the
    file uses otherwise than calling them: handed on (`pool.map(f, xs)`, `partial(f)`), stored, decorated
    with: called with arguments no call site shows."""
    if not scan.name_refs and not scan.attribute_refs:
        return []
    called = {id(call.func) for call in ctx.calls()}
    modules = {alias.asname or alias.name.split(".")[0] for node in scan.imports if type(node) is ast.Import
               for alias in node.names}
    out = {n.id for n in scan.name_refs if id(n) not in called}
    out.update(a.attr for a in scan.attribute_refs if id(a) not in called and a.value.id in modules)
    return sorted(out)


def _taken_from_loaded_modules(ctx: "FileFacts", scan: "_Scan") -> list[list]:
    """[name, line] of the attributes, not called there, of a module the file imports by a computed name
    (`criterion = MODEL.get_loss` where `MODEL = importlib.import_module(FLAGS.model)`): a def of
    some module of the project, called where no call site of the project shows it."""
    loaded: set[str] = set()
    for call in ctx.calls():
        if not _loads_a_module(call, ctx):
            continue
        parent = ctx.parent(call)
        if isinstance(parent, ast.Assign):
            loaded.update(t.id for t in parent.targets if isinstance(t, ast.Name))
    if not loaded:
        return []
    called = {id(call.func) for call in ctx.calls()}
    first: dict[str, int] = {}
    for a in scan.attribute_refs:
        if id(a) not in called and a.value.id in loaded:
            first[a.attr] = min(first.get(a.attr, a.lineno), a.lineno)
    return sorted([name, line] for name, line in first.items())


# -- what uses a def (ptlint.semantics.project finds the defs nothing uses) --------------------------
WORD = re.compile(r"[A-Za-z_]\w*")
# A string that may name a def: an identifier, a dotted path, `module:attr` (`"resnet50"`,
# `"models.vit.ViT"`, `"train:main"`), not free text.
NAME_STRING = re.compile(r"[A-Za-z_][\w.:]*")
LOOKUP_BUILTINS = {"globals": ".", "vars": ".", "locals": ".", "eval": "*", "exec": "*"}


def _names(ctx: "FileFacts", scan: "_Scan", bindings: dict, imports_by_name: bool, imports: list) -> dict:
    roots, tops, entry, dict_reads = scan.names
    lookups: list = _dynamic_lookups(ctx) if imports_by_name else []  # what it loads may use any def
    for call in ctx.calls():
        func = call.func
        if isinstance(func, ast.Name) and func.id in LOOKUP_BUILTINS and ctx.names.qualname(func, at=call) in (
                None, func.id, f"builtins.{func.id}"):
            if func.id == "vars" and call.args:  # `vars(opt)`: an object's attributes, as `opt.__dict__`
                ref = _reference(call.args[0], call, ctx, bindings) \
                    if isinstance(call.args[0], (ast.Name, ast.Attribute)) else None
                if ref is not None:
                    lookups.append(ref)
            elif LOOKUP_BUILTINS[func.id] == "*":
                lookups.extend(_evaluated(call, imports, ctx, roots))
            else:
                lookups.append(LOOKUP_BUILTINS[func.id])
        elif not call.args and (ctx.names.qualname(func, at=call) or "").endswith("fire.Fire"):
            lookups.append(".")  # `fire.Fire()` makes every global of the file a command
        elif isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) >= 2 \
                and not isinstance(call.args[1], ast.Constant) and isinstance(call.args[0], (ast.Name, ast.Attribute)):
            ref = _reference(call.args[0], call, ctx, bindings)
            if ref is not None:
                lookups.append(ref)
    for node in dict_reads:
        ref = _reference(node.value, node, ctx, bindings)
        if ref is not None:
            lookups.append(ref)
    # names as one string each (split where the solve follows them): a large project's summaries
    # hold a million of them
    # a module-level `if __name__ == "__main__":` block (a script's start, or a module's self-test)
    main = any(isinstance(statement, ast.If) and is_main_test(statement.test) for statement in ctx.tree.body)
    return {"roots": " ".join(sorted(roots)), "tops": tops, "lookups": lookups, "entry": entry,
            "local": " ".join(sorted(_local_names(ctx, scan, tops))), "main": main}


STRING_WORD = re.compile(r"""['"]([A-Za-z_][\w.:]*)['"]""")


def _local_names(ctx: "FileFacts", scan: "_Scan", tops: dict) -> set[str]:
    """This file's top-level defs that it names only as bare names (`fliplr(img)`), never as an
    attribute or in a string: each such use is of its own def, not of a namesake elsewhere
    (train.py's and test.py's own `fliplr`)."""
    own = {name for name in tops if name in scan.def_names}
    if not own:
        return set()
    bare = {node.id for node in scan.name_refs if node.id in own}
    strings = {part for word in STRING_WORD.findall(ctx.text) for part in WORD.findall(word)}
    return bare - scan.attributes - strings


def _evaluated(call: ast.Call, imports: list, ctx: "FileFacts", roots: set[str]) -> list:
    """What `eval(text)` / `exec(text)` may reach (Pyraformer's `eval(opt.model).Model(opt)`): a
    constant text only the names it spells (already names the file uses); any other text any
    name of the file's globals: its own defs ("."), the project's modules it imports whole
    (`import models`, `from models.common import *`), and the names it imports from one (`from
    utils.torch_utils import fuse_conv_and_bn`: that name, added to `roots`; a submodule so
    imported, `from models import common`, whole: ["n", ...], which the solve tells apart)."""
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return []
    out: list = ["."]
    for level, module, names in imports:
        if not (level or module) or not _may_be_project(["m", level, module, []], ctx):
            continue
        if not names or names == ["*"]:
            out.append(["m", level, module, []])
            continue
        roots.update(names)
        out.extend(["n", level, module, [name]] for name in names)
    return out


def module_names(tree: ast.Module, scan: "_Scan") -> tuple[set[str], dict[str, list], bool, list[ast.Attribute]]:
    """(the names the module-level code uses; each top-level def and class: [decorated, the
    names its body uses]; whether the module is a program's entry; its `x.__dict__` reads).
    Every node but docstrings is walked once: `scan` (the _Scan it serves) is told of each."""
    roots: set[str] = set()
    tops: dict[str, list] = {}
    dict_reads: list[ast.Attribute] = []
    entry = False  # the file is a program's entry: `if __name__ == "__main__":`, or a loop at top level
    pending = list(tree.body)
    while pending:
        statement = pending.pop()
        kind = type(statement)
        if kind in WALKED_IN_PARTS:
            scan.node(statement, kind)  # (not walked below: its parts are; other statements are walked whole)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if kind is ast.ClassDef:
                parts = [*statement.body, *statement.bases, *statement.keywords]
            else:  # the defaults and annotations too
                parts = [*statement.body, statement.args, *filter(None, [statement.returns])]
            used = _used_names(parts, dict_reads, scan, in_def=True)
            decorated = any(not _plain_decorator(d) for d in statement.decorator_list)
            if decorated:
                roots.update(_used_names(statement.decorator_list, dict_reads, scan))
            known = tops.get(statement.name)
            if known is None:
                tops[statement.name] = [decorated, " ".join(sorted(used))]
            else:  # two defs of one name (`if ...: class A` / `else: class A`): both live or dead together
                known[:] = [known[0] or decorated, " ".join(sorted(set(known[1].split()) | used))]
        elif kind in (ast.If, ast.Try, ast.With, ast.For, ast.While, getattr(ast, "TryStar", ast.Try)):
            entry = entry or kind in (ast.For, ast.While) or (kind is ast.If and is_main_test(statement.test))
            for field in ("body", "orelse", "finalbody"):
                pending.extend(getattr(statement, field, ()))
            for handler in getattr(statement, "handlers", ()):
                scan.node(handler, ast.ExceptHandler)
                pending.extend(handler.body)
                roots.update(_used_names([handler.type] if handler.type else [], dict_reads, scan))
            roots.update(_used_names([getattr(statement, name) for name in ("test", "iter", "target")
                                      if getattr(statement, name, None) is not None], dict_reads, scan))
            roots.update(_used_names(list(getattr(statement, "items", ())), dict_reads, scan))
        else:
            roots.update(_used_names([statement], dict_reads, scan))
    return roots, tops, entry, dict_reads


# Decorators that wrap a def and register it nowhere: a def that only they decorate is used only
# where its name is (`@torch.no_grad()`, `@functools.lru_cache`, `@contextmanager`).
PLAIN_WRAPPERS = {"no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "lru_cache", "cache", "wraps",
                  "contextmanager", "cached_property", "staticmethod", "classmethod", "property", "autocast",
                  "custom_fwd", "custom_bwd"}


def _plain_decorator(decorator: ast.AST) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name in PLAIN_WRAPPERS


def _used_names(nodes: list, dict_reads: list, scan: "_Scan", in_def: bool = False) -> set[str]:
    """The names, attributes, imported names and the parts of strings that may name one (an
    identifier or a dotted path: a registry's key, a `_target_` path, `__all__`; not free text or
    docstrings) under `nodes`. `in_def`: the body of one def or class, whose own locals (its
    parameters and the names it assigns), and the attributes of those and of `self`, name
    nothing at module level. `x.__dict__` reads go to `dict_reads`."""
    loads: set[str] = set()
    stored: set[str] = {"self", "cls"}
    attributes: list[ast.Attribute] = []
    out: set[str] = set()
    pending = list(nodes)
    while pending:
        top = pending.pop()
        if type(top) is ast.Expr:
            if not (type(top.value) is ast.Constant and type(top.value.value) is str):
                pending.append(top.value)  # a call as a statement; not a docstring
            continue
        for node in walk(top, (ast.Expr,)):
            kind = type(node)
            if kind is ast.Expr:
                pending.append(node)
            elif kind is ast.Name:
                (loads if type(node.ctx) is ast.Load else stored).add(node.id)
                scan.name(node)
            elif kind is ast.Attribute:
                attributes.append(node)
                if node.attr == "__dict__":
                    dict_reads.append(node)
                scan.attribute(node)
            elif kind is ast.arg:
                stored.add(node.arg)
                scan.bound.add(node.arg)
            elif kind is ast.Import or kind is ast.ImportFrom:  # (nodes.walk does not enter `names`)
                # an import binds a name and uses nothing: what the file does with the name uses it
                # (a package's `__init__.py`, which re-exports, is kept whole by the solve)
                scan.imported(node)
            elif kind is ast.Constant and type(node.value) is str and len(node.value) <= 200 \
                    and NAME_STRING.fullmatch(node.value):
                out.update(WORD.findall(node.value))
            elif kind in SCANNED:
                scan.node(node, kind)
    if not in_def:
        return out | loads | {node.attr for node in attributes}
    out |= loads - stored
    out.update(node.attr for node in attributes if not (type(node.value) is ast.Name and node.value.id in stored))
    return out


def _edge(model, call: ast.Call, callee: list, name: str) -> list:
    """[caller key ("" at module level), callee, line, transfer, cold, in a training loop,
    line of the loop to cite (0: none), its header, the name called, whether the innermost loop
    around it walks data or trains, whether every argument is visibly a host value, the
    arguments, whether that loop steps an environment itself, whether that loop counts epochs]."""
    placement = model.local_placement(call)
    function = placement.function
    trains = any(runs_training_step(loop) for loop in placement.loops)
    loop = step_loop(placement.loops) if placement.loops else None
    data = bool(placement.loops) and (iterable_is_data(placement.loops[0]) or runs_training_step(placement.loops[0]))
    arguments = [*call.args, *(k.value for k in call.keywords)]
    host = bool(arguments) and all(_host_argument(a, model.ctx, function) for a in arguments)
    return [model.key(function) if function is not None else "", callee, call.lineno, transfer(placement),
            placement.cold, trains, loop.lineno if loop is not None else 0,
            loop_why(loop) if loop is not None else "", name, data, host,
            packed(_arguments(call, _handed_on(function, model.ctx))),
            bool(placement.loops) and steps_environment_itself(placement.loops[0]),
            bool(placement.loops) and counts_epochs(placement.loops[0])]


HOST_CALLS = {"float", "int", "round", "len", "bool", "str"}
HOST_METHODS = {"item", "tolist", "time", "perf_counter"}


def _host_argument(value: ast.AST, ctx: "FileFacts", scope: ast.AST | None, hops: int = 2) -> bool:
    """`loss.item()`, `float(x)`, `3`, `optimizer.param_groups[0]["lr"]`, `time.time() - end`,
    a local name assigned only such values, `**{k: v.item() for ...}`: a value in host memory
    (a meter's `update(loss=loss.item())` gets no tensor)."""
    kind = type(value)
    if kind is ast.Constant:
        return isinstance(value.value, (int, float))
    if kind is ast.Call:
        func = value.func
        return (type(func) is ast.Name and func.id in HOST_CALLS) or \
            (type(func) is ast.Attribute and func.attr in HOST_METHODS)
    if kind is ast.BinOp:
        return _host_argument(value.left, ctx, scope, hops) and _host_argument(value.right, ctx, scope, hops)
    if kind is ast.UnaryOp:
        return _host_argument(value.operand, ctx, scope, hops)
    if kind is ast.DictComp:
        return _host_argument(value.value, ctx, scope, hops)
    if kind is ast.Subscript:  # an optimizer's learning rate
        return any(type(n) is ast.Attribute and n.attr == "param_groups" for n in ast.walk(value.value))
    if kind is ast.Name and hops:
        values = ctx.assignments(value.id, scope)
        return bool(values) and all(isinstance(v, ast.expr) and _host_argument(v, ctx, scope, hops - 1)
                                    for v in values)
    return False


# -- methods nothing calls (ptlint.semantics.project) ----------------------------------------------
# What torch.nn.Module defines or calls by name: a subclass's def of one is called by torch.
MODULE_API = frozenset("""T_destination _apply _call_impl _compiled_call_impl _get_backward_hooks
    _get_backward_pre_hooks _get_name _load_from_state_dict _maybe_warn_non_full_backward_hook _named_members
    _register_load_state_dict_pre_hook _register_state_dict_hook _replicate_for_data_parallel _save_to_state_dict
    _slow_forward _version _wrapped_call_impl add_module apply bfloat16 buffers call_super_init children compile
    cpu cuda double dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter
    get_submodule half ipu load_state_dict modules mtia named_buffers named_children named_modules
    named_parameters parameters register_backward_hook register_buffer register_forward_hook
    register_forward_pre_hook register_full_backward_hook register_full_backward_pre_hook
    register_load_state_dict_post_hook register_load_state_dict_pre_hook register_module register_parameter
    register_state_dict_post_hook register_state_dict_pre_hook requires_grad_ set_extra_state set_submodule
    share_memory state_dict to to_empty train type xpu zero_grad reset_parameters""".split())
PLAIN_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module", "builtins.object"}
PLAIN_DECORATORS = {"staticmethod", "classmethod", "property", "setter", "getter", "deleter"}
ATTRIBUTE_LOOKUPS = {"getattr", "attrgetter", "methodcaller"}


def _methods(ctx: "FileFacts", scan: "_Scan", bindings: dict) -> dict[str, list[str]]:
    """Class key -> the methods only code of the project can call, by their name: of a class
    whose bases are `object`, `torch.nn.Module` or classes of the project (a framework's base
    may call any method by name), not decorated (a registry's framework may), not a dunder, not a name `nn.Module` calls or defines, not
    decorated but as a static, class method or property (a decorator may register it)."""
    out: dict[str, list[str]] = {}
    for cls in scan.classes:
        if not all(isinstance(base, ast.Name) and base.id == "object" or ctx.names.qualname(base, at=cls) in PLAIN_BASES
                   or _reference(base, cls, ctx, bindings) is not None for base in cls.bases) or cls.keywords \
                or cls.decorator_list:  # a registered class (`@HOOKS.register_module()`): its framework calls it
            continue
        names = [method.name for method in cls.body if isinstance(method, FUNCTION_DEFS)
                 and not (method.name.startswith("__") and method.name.endswith("__"))
                 and method.name not in MODULE_API
                 and all((d.attr if isinstance(d, ast.Attribute) else getattr(d, "id", None)) in PLAIN_DECORATORS
                         for d in method.decorator_list)]
        out.setdefault(def_key(cls, ctx.parent), names)  # (also without any: a plain base of others)
    return out


def _looks_up_attributes(ctx: "FileFacts") -> bool | list[str]:
    """A method may be called by a name computed at run time: `getattr(obj, name)(...)`,
    `operator.methodcaller(name)` / `attrgetter(name)`: True, any class's method may be reached.
    `getattr(self, name)` reaches only what the instance holds: the keys of the classes whose
    methods look so (their bases and subclasses too, as the solve reads it). False where none
    does. (Not a getattr of another object whose result is not called on the spot,
    `getattr(block, bn_name)`: model surgery reads submodules; nor `setattr`, `hasattr`,
    `vars(args)`, which call nothing.)"""
    classes: list[str] = []
    for call in ctx.calls():
        func = call.func
        word = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if word not in ATTRIBUTE_LOOKUPS:
            continue
        names = call.args[:1] if word in ("attrgetter", "methodcaller") else call.args[1:2]
        if names and isinstance(names[0], ast.Constant):
            continue  # a name spelled out: a word the solve sees
        if word in ("attrgetter", "methodcaller") or not call.args:
            return True
        if word != "getattr":
            continue
        if isinstance(call.args[0], ast.Name) and call.args[0].id in SELF_NAMES:
            owner = ctx.method_owner(call)
            if owner is None:
                return True
            classes.append(def_key(owner, ctx.parent))
        elif isinstance(ctx.parent(call), ast.Call) and ctx.parent(call).func is call:
            return True
    return sorted(set(classes)) or False


# -- imports -------------------------------------------------------------------------------------
class _Scan:
    """What one walk of the tree collects for the summary (the walk of `module_names`): imports,
    classes, loops, one-target assignments, the names it uses and binds, attribute names, star
    imports, the names and attributes that may spell `torch.compile`; and `module_names`'s own
    answers (`names`)."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: list = []
        self.classes: list[ast.ClassDef] = []
        self.bound: set[str] = set()
        self.used: set[str] = set()
        self.star = False
        self.compile_refs: list[ast.AST] = []
        self.loops: list[ast.AST] = []
        self.attributes: set[str] = set()
        self.assignments: list[ast.Assign] = []  # one target each (_assignment_tables)
        # names that may name a def (this file's top-level defs, names imported from modules) and
        # `module.name` attributes, where they are loaded: a def used as a value (`pool.map(f,
        # ...)`, `partial(f)`) is called with arguments no call site shows (_passed)
        self.def_names = {s.name for s in tree.body if type(s) in (ast.FunctionDef, ast.AsyncFunctionDef)} | {
            alias.asname or alias.name for s in tree.body if type(s) is ast.ImportFrom for alias in s.names}
        self.name_refs: list[ast.Name] = []
        self.attribute_refs: list[ast.Attribute] = []
        self.names = module_names(tree, self)
        self.classes.sort(key=lambda c: (c.lineno, c.col_offset))
        self.imports.sort(key=lambda i: (i.lineno, i.col_offset))

    def name(self, node: ast.Name) -> None:
        (self.used if type(node.ctx) is ast.Load else self.bound).add(node.id)
        if node.id in self.def_names and type(node.ctx) is ast.Load:
            self.name_refs.append(node)
        if node.id in ("compile", "optimize"):
            self.compile_refs.append(node)

    def attribute(self, node: ast.Attribute) -> None:
        self.attributes.add(node.attr)
        if type(node.value) is ast.Name and type(node.ctx) is ast.Load:
            self.attribute_refs.append(node)
        if node.attr in ("compile", "optimize") or node.attr.startswith("_dynamo"):
            self.compile_refs.append(node)

    def imported(self, node: ast.Import | ast.ImportFrom) -> None:
        self.imports.append(node)
        for alias in node.names:
            if alias.name == "*":
                self.star = True
            self.bound.add(alias.asname or alias.name.split(".")[0])

    def node(self, node: ast.AST, kind: type) -> None:
        """A node of a kind `_used_names` does not look at itself (SCANNED)."""
        if kind is ast.Assign:
            if len(node.targets) == 1:
                self.assignments.append(node)
        elif kind is ast.For or kind is ast.While or kind is ast.AsyncFor:
            self.loops.append(node)
        elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            self.bound.add(node.name)
        elif kind is ast.ClassDef:
            self.bound.add(node.name)
            self.classes.append(node)
        elif kind is ast.Global or kind is ast.Nonlocal:
            self.bound.update(node.names)
        elif kind is ast.ExceptHandler or kind is ast.MatchAs or kind is ast.MatchStar:
            if node.name:
                self.bound.add(node.name)
        elif kind is ast.MatchMapping:
            if node.rest:
                self.bound.add(node.rest)


# Module-level statements `module_names` walks in parts (their bodies, tests, targets), never whole.
WALKED_IN_PARTS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.While})
SCANNED = frozenset({ast.Assign, ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                     ast.Global, ast.Nonlocal, ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.MatchMapping})


def _imports(ctx: "FileFacts", nodes: list) -> tuple[list, dict, dict]:
    """(every import: [level, module, names]; module-level bindings: name -> reference; bindings
    per scope: id(scope) -> name -> reference)."""
    imports: list[list] = []
    bindings: dict[int, dict[str, list]] = {}
    for node in nodes:
        scope = ctx.enclosing_function(node) or ctx.tree
        table = bindings.setdefault(id(scope), {})
        if isinstance(node, ast.Import):
            for alias in node.names:
                imports.append([0, alias.name, []])
                if alias.asname:
                    table[alias.asname] = ["m", 0, alias.name, []]
                else:
                    top = alias.name.split(".")[0]
                    table[top] = ["m", 0, top, []]
        else:
            module = node.module or ""
            names = [alias.name for alias in node.names]
            imports.append([node.level, module, names])
            for alias in node.names:
                if alias.name != "*":
                    table[alias.asname or alias.name] = ["m", node.level, module, [alias.name]]
    bindings["names"] = {name for table in list(bindings.values()) for name in table}  # type: ignore[assignment]
    return imports, dict(bindings.get(id(ctx.tree), {})), bindings


def _binding(name: str, at: ast.AST, ctx: "FileFacts", bindings: dict) -> list | None:
    """What an import binds `name` to where `at` stands (the innermost function first), or None
    where a local binding of the function shadows it or no import binds it."""
    if name not in bindings.get("names", ()):
        return None  # no import anywhere in the file binds it (`self`, `x`, `torch` when not imported)
    scope = ctx.names.binding_scope(name, at)  # the one name resolver decides which binding is seen
    if scope is None:
        return None
    table = bindings.get(id(scope))
    return table.get(name) if table else None  # else a local of that scope shadows every import


def _attribute_chain(node: ast.AST) -> tuple[ast.Name | None, list[str]]:
    """`a.b.c` -> (Name a, ["b", "c"])."""
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    return (node if isinstance(node, ast.Name) else None), list(reversed(names))


def _reference(node: ast.AST, at: ast.AST, ctx: "FileFacts", bindings: dict, alias: bool = True) -> list | None:
    """A class or function named by `node` (a name or an attribute chain): of this file, or
    bound by an import, also through a module-level alias assigned once (`Exp = Exp_Main`);
    None otherwise."""
    head, names = _attribute_chain(node)
    if head is None:
        return None
    bound = _binding(head.id, at, ctx, bindings)
    if bound is not None:
        return ["m", bound[1], bound[2], bound[3] + names] if _may_be_project(bound, ctx) else None
    if not names and head.id in local_classes(ctx):
        return ["l", def_key(local_classes(ctx)[head.id], ctx.parent)]
    if alias and not names:
        values = _assignment_tables(ctx)[0].get(id(ctx.tree), {}).get(head.id)
        if values is not None and len(values) == 1 and isinstance(values[0], (ast.Name, ast.Attribute)):
            return _reference(values[0], values[0], ctx, bindings, alias=False)
    return None


def _foreign_callees(call: ast.Call, ctx: "FileFacts", bindings: dict) -> list[list]:
    """What a call may run in another module: a name an import binds (`train_one_epoch(...)`,
    `engine.evaluate(...)`), `self.method()` (a base or subclass elsewhere may define it), or a
    method of an instance of a known class (`logger = utils.MetricLogger(); logger.update()`,
    `self.meter = Meter()` ... `self.meter.update()`)."""
    func = call.func
    head, names = _attribute_chain(func)
    if head is None:
        return []
    bound = _binding(head.id, call, ctx, bindings)
    if bound is not None:
        if not bound[3] and not names:
            return []  # calling a module
        if not _may_be_project(bound, ctx):
            return []  # torch, numpy, the standard library: not the project's code
        return [["m", bound[1], bound[2], bound[3] + names]]
    if head.id in SELF_NAMES and names:
        owner = ctx.method_owner(call)
        if owner is None:
            return []
        if len(names) == 1:
            if _defined_here(owner, names[0], ctx):
                return []  # the class (or a base in this file) runs its own: the file's model has the call
            return [["s", def_key(owner, ctx.parent), names[0]]]
        if len(names) == 2:  # `self.meter.update()`: `self.meter = Meter(...)` somewhere in the class
            return [["i", made, names[1]] for made in _attribute_class(owner, names[0], ctx, bindings)]
        return []
    if len(names) == 1:  # `logger.update()` where `logger = MetricLogger(...)` in the scope that binds it
        scope = ctx.names.binding_scope(head.id, call)  # (a function's, or a global instance)
        made = _instance_class(head.id, scope, ctx, bindings) if scope is not None else []
        return [["i", one, names[0]] for one in made]
    return []


def _may_be_project(reference: list, ctx: "FileFacts") -> bool:
    """An import that may name a module of the project: a relative one, or one whose top-level
    name is a module or package beside the file, above its packages, at its project's root (where
    ptlint.semantics.project resolves it) or, unless the standard library has it, in a folder
    above the file (`_folders_up_to_a_marker`). Asked of each call of an imported name, so kept
    per top-level name."""
    if reference[1]:
        return True
    top = reference[2].split(".")[0]
    key = ("summary-project-module", top)
    found = ctx.memo.get(key)
    if found is None:
        from ptlint.semantics.project import find_root, import_bases

        found = False
        if not ctx.path.startswith("<") and top:
            bases = ctx.memo.get("summary-import-bases")
            if bases is None:
                root = ctx.memo["summary-root"] = find_root(ctx.path)
                bases = ctx.memo["summary-import-bases"] = import_bases(ctx.path, root) + [os.path.join(root, "src")]
                ctx.memo["summary-folders-up"] = _folders_up_to_a_marker(ctx.path)
            if top not in sys.stdlib_module_names:  # (the folders above never shadow the standard library)
                bases = bases + ctx.memo["summary-folders-up"]
            found = any(os.path.isdir(os.path.join(base, top)) or os.path.isfile(os.path.join(base, top + ".py"))
                        for base in bases + _child_folders(ctx))
        ctx.memo[key] = found
    if not found and top in ctx.memo.get("summary-root", "").split(os.sep):
        # the root's own folders (`detector.YOLOv5.utils` inside a root `.../detector/YOLOv5`):
        # ProjectModel `_from_outer_folders` resolves it
        from ptlint.semantics.project import outer_folders_named

        return bool(outer_folders_named(ctx.memo["summary-root"], reference[2].split(".")))
    return found


def _child_folders(ctx: "FileFacts") -> list[str]:
    """The folders inside the project's root (not hidden ones): a script may put one on
    `sys.path` (`_init_paths.py` adding `lib/`, where `from core.function import train` then finds
    lib/core/function.py), as ProjectModel `_only_module_ending` reads it. (The root's only: a
    package folder of hundreds of models would cost a look in each for every name.)"""
    found = ctx.memo.get("summary-child-folders")
    if found is None:
        try:
            found = [entry.path for entry in os.scandir(ctx.memo["summary-root"])
                     if entry.is_dir() and entry.name[0] not in "._"]
        except OSError:
            found = []
        ctx.memo["summary-child-folders"] = found
    return found


def _folders_up_to_a_marker(path: str) -> list[str]:
    """The folders above the file up to the nearest that marks a project; every one of them where
    none does, but the filesystem's root (`/sys` is no module of a project). Without a marker the
    project's root is the folder the user named that holds the file, which a summary cannot know
    (it is cached by content): any of these may be it, and an import of a module there (`from
    core.agent import Agent` in `examples/`, beside a `sys.path` insert) names the project's code."""
    from ptlint.semantics.project import marked_ancestry

    return marked_ancestry(os.path.dirname(os.path.abspath(path)))[0]


def _defined_here(owner: ast.ClassDef, method: str, ctx: "FileFacts") -> bool:
    """The class or one of its bases in this file defines `method`, not as a placeholder: no base
    elsewhere supplies it, and no subclass elsewhere is followed (ptlint.semantics.project)."""
    key = ("summary-methods", id(owner))
    methods = ctx.memo.get(key)
    if methods is None:
        methods = ctx.memo[key] = {}
        for cls in reversed(class_family(owner, local_classes(ctx))):
            for statement in cls.body:
                if isinstance(statement, FUNCTION_DEFS):
                    methods[statement.name] = not is_placeholder(statement)
    return methods.get(method, False)


def _assignment_tables(ctx: "FileFacts") -> tuple[dict, dict]:
    """From the file's one-target assignments (_Scan), once: per scope (a function or the module),
    name -> the values assigned it there; per class, `self.<name>` -> the values its methods (and
    the classes and functions in it) assign."""
    key = "summary-assignment-tables"
    found = ctx.memo.get(key)
    if found is None:
        names: dict[int, dict[str, list]] = {}
        attributes: dict[int, dict[str, list]] = {}
        for node in ctx.memo.get("summary-assignments", ()):
            target = node.targets[0]
            if type(target) is ast.Name:
                scope = ctx.parent(node)
                while scope is not None and not isinstance(scope, (*FUNCTION_DEFS, ast.ClassDef, ast.Lambda)):
                    scope = ctx.parent(scope)
                if not isinstance(scope, ast.ClassDef):  # (a class body is no function's or module's scope)
                    names.setdefault(id(scope or ctx.tree), {}).setdefault(target.id, []).append(node.value)
            elif type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id in SELF_NAMES:
                owner = ctx.parent(node)
                while owner is not None:
                    if type(owner) is ast.ClassDef:
                        attributes.setdefault(id(owner), {}).setdefault(target.attr, []).append(node.value)
                    owner = ctx.parent(owner)
        found = ctx.memo[key] = (names, attributes)
    return found


def _instance_class(name: str, scope: ast.AST, ctx: "FileFacts", bindings: dict) -> list[list]:
    """The classes `name` may be an instance of in `scope`: every assignment of it calls a class
    of this file or one an import binds (`x = Meter(...)`; `trainer = SingleTrainer(...)` in one
    branch and `EncDecTrainer(...)` in the other gives both). Empty where any assignment is
    something else: then what it holds is unknown."""
    return _classes_called(_assignment_tables(ctx)[0].get(id(scope), {}).get(name, []), ctx, bindings)


def _attribute_class(owner: ast.ClassDef, attribute: str, ctx: "FileFacts", bindings: dict) -> list[list]:
    """The classes of `self.<attribute>` in `owner`: every `self.<attribute> = C(...)` in its
    methods calls a known class."""
    return _classes_called(_assignment_tables(ctx)[1].get(id(owner), {}).get(attribute, []), ctx, bindings)


# Methods of a module that return the module itself: `EdgeModel(config).to(device)` is an EdgeModel.
RETURNS_SELF = {"to", "cuda", "cpu", "train", "eval", "float", "half", "double", "bfloat16", "requires_grad_",
                "share_memory", "apply", "type"}


def _classes_called(values: list, ctx: "FileFacts", bindings: dict) -> list[list]:
    values = [_built(v) for v in values]
    found = [_reference(v.func, v, ctx, bindings) for v in values if isinstance(v, ast.Call)]
    if not found or len(found) != len(values) or None in found:
        return []
    return [reference for number, reference in enumerate(found) if reference not in found[:number]]


def _built(value: ast.AST) -> ast.AST:
    """The constructor call under methods that return the module: `Net(c).to(device).eval()` -> `Net(c)`."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in RETURNS_SELF:
        value = value.func.value
    return value


# -- what the program does -----------------------------------------------------------------------
def _accelerator(ctx: "FileFacts") -> bool:
    """The file places tensors on an accelerator or may: it names a device or a library that
    places models (names_accelerator), or moves tensors to a device that is not spelled as the CPU
    (`.to(device)`, `device=args.device`: a device from elsewhere may be one)."""
    if names_accelerator(ctx.text):
        return True
    if "device" not in ctx.text and ".to(" not in ctx.text:
        return False
    for call in ctx.calls():
        func = call.func
        values = [k.value for k in call.keywords if k.arg == "device"]
        if isinstance(func, ast.Attribute) and func.attr == "to" and call.args:
            values.append(call.args[0])
        for value in values:
            if not _spelled_cpu(value) and not _dtype(value):
                return True
    return False


def _spelled_cpu(node: ast.AST) -> bool:
    """`"cpu"`, `torch.device("cpu")`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and CPU_DEVICE.fullmatch(repr(node.value)) is not None
    if isinstance(node, ast.Call) and node.args and not node.keywords and len(node.args) == 1:
        return isinstance(node.func, ast.Attribute) and node.func.attr == "device" and _spelled_cpu(node.args[0])
    return False


def _dtype(node: ast.AST) -> bool:
    """`torch.float16`, `x.dtype`, `dtype`: a move of type, not of place."""
    head, names = _attribute_chain(node)
    words = ([head.id] if head is not None else []) + names
    return bool(words) and ("dtype" in words[-1] or (words[0] == "torch" and len(words) == 2
                                                     and words[1][:1].islower() and "device" not in words[1]))


_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                                        "__builtins__", "__path__", "__annotations__", "__dict__", "__class__"}


def _imports_by_name(ctx: "FileFacts") -> bool:
    """The file imports or runs modules by name at run time (`importlib.import_module(name)`,
    `__import__(name)`, `runpy.run_path(...)`): what it loads is unknown."""
    if not any(word in ctx.text for word in DYNAMIC_IMPORTS):
        return False
    for call in ctx.calls():
        if isinstance(call.func, ast.Name) and call.func.id == "__import__":
            return True
        qual = ctx.names.qualname(call.func, at=call) or ""
        if qual.startswith(("importlib.", "runpy.")):
            return True
    return False


def _loads_a_module(call: ast.Call, ctx: "FileFacts", qualname: str | None = None) -> bool:
    """`__import__(name)` or `importlib.import_module(name)`: a module imported by a computed name."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "__import__":
        return True
    return (qualname if qualname is not None else ctx.names.qualname(func, at=call)) == "importlib.import_module"


def _dynamic_lookups(ctx: "FileFacts") -> list:
    """What the file's imports by name may load: a package's modules where the name is built on a
    constant package prefix (`__import__("networks." + specs["arch"])`, `importlib.import_module(
    f"models.{name}_model")`: ["m", 0, "networks", []]); anything ("*") otherwise."""
    out: list = []
    for call in ctx.calls():
        qual = ctx.names.qualname(call.func, at=call) or ""
        if _loads_a_module(call, ctx, qual):
            prefix = _constant_prefix(call.args[0]) if call.args else None
            package = prefix.rpartition(".")[0] if prefix else ""
            if not package or package.startswith("."):
                return ["*"]
            out.append(["m", 0, package, []])
        elif qual.startswith(("importlib.", "runpy.")):
            return ["*"]
    return out or ["*"]


def _constant_prefix(node: ast.AST) -> str | None:
    """The constant text a built string starts with: `"networks." + name` -> "networks.",
    `f"models.{name}_model"` -> "models."."""
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        node = node.left
    if isinstance(node, ast.JoinedStr) and node.values:
        node = node.values[0]
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _compiles(ctx: "FileFacts", scan: _Scan) -> bool:
    """The file compiles code with TorchDynamo: `torch.compile(...)`, `@torch.compile`,
    `torch._dynamo.optimize(...)`."""
    for node in scan.compile_refs:
        qual = ctx.names.qualname(node, at=node)
        if qual in COMPILE or (qual or "").startswith("torch._dynamo"):
            return True
    return False
