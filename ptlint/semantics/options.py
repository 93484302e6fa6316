"""A program's command-line options and their defaults, from the file's own argparse parser.

`parser.add_argument("--multiprocessing-distributed", type=str2bool, default=True)` makes
`args.multiprocessing_distributed` true unless the user says otherwise; `action="store_true"`
makes an option false by default, `"store_false"` true. `args.distributed = args.world_size > 1 or
args.multiprocessing_distributed` (one assignment in the file) derives an option from others. A
condition on these holds or fails *by default* (`holds_by_default`): a branch it rules out runs
only where the user turns an option away from its default. Unknown (None) wherever a value is
not spelled out in the file: an option another file or a config defines, a computed default, a
call, a name that is no option.
"""

from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ptlint.semantics.facts import FileFacts

UNKNOWN = object()
# Names a program keeps its parsed options in (`args = parser.parse_args()`, `opt`, `FLAGS`)
ARGS_NAMES = {"args", "arg", "opt", "opts", "option", "options", "flags", "hparams", "hps", "params", "cfg", "config"}
COMPARISONS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Gt: operator.gt, ast.GtE: operator.ge,
               ast.Lt: operator.lt, ast.LtE: operator.le, ast.Is: operator.is_, ast.IsNot: operator.is_not}


def option_defaults(ctx: "FileFacts") -> dict[str, object]:
    """Option name (argparse's `dest`) -> its default, for the file's `add_argument` calls whose
    default is a constant (or implied by `store_true` / `store_false`); UNKNOWN where an option is
    added twice with different defaults or its default is computed."""
    key = "option-defaults"
    if key not in ctx.memo:
        found: dict[str, object] = {}
        for call in ctx.calls():
            if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
                continue
            dest, default = _dest(call), _default(call)
            if dest is not None:
                found[dest] = default if found.get(dest, default) == default else UNKNOWN
        ctx.memo[key] = found
    return ctx.memo[key]


def _dest(call: ast.Call) -> str | None:
    keywords = {k.arg: k.value for k in call.keywords}
    dest = keywords.get("dest")
    if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
        return dest.value
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    name = next((n for n in names if n.startswith("--")), names[0] if names else None)
    return name.lstrip("-").replace("-", "_") if name else None


def _default(call: ast.Call) -> object:
    keywords = {k.arg: k.value for k in call.keywords}
    action = keywords.get("action")
    if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false") and "default" not in keywords:
        return action.value == "store_false"
    if "default" not in keywords:
        return None  # argparse's default
    default = keywords["default"]
    return default.value if isinstance(default, ast.Constant) else UNKNOWN


def _derived(ctx: "FileFacts") -> dict[str, ast.expr]:
    """`args.<name> = <expression>`: the options the file sets itself, where it sets each once."""
    key = "option-derived"
    if key not in ctx.memo:
        seen: dict[str, list[ast.expr]] = {}
        for node in ast.walk(ctx.tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) \
                    and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id.lower() in ARGS_NAMES:
                seen.setdefault(node.targets[0].attr, []).append(node.value)
        ctx.memo[key] = {name: values[0] for name, values in seen.items() if len(values) == 1}
    return ctx.memo[key]


def holds_by_default(test: ast.AST, ctx: "FileFacts") -> bool | None:
    """Whether `test` holds when every option keeps its default (`args.distributed`, `not
    opt.no_cuda`, `args.world_size > 1 or args.multiprocessing_distributed`); None where that is
    not known."""
    defaults = option_defaults(ctx)
    if not defaults:
        return None
    value = _value(test, defaults, _derived(ctx), 3)
    return None if value is UNKNOWN else bool(value)


def _value(node: ast.AST, defaults: dict, derived: dict, hops: int) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id.lower() in ARGS_NAMES:
        if node.attr in derived and hops:
            return _value(derived[node.attr], defaults, derived, hops - 1)
        return defaults.get(node.attr, UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _value(node.operand, defaults, derived, hops)
        return UNKNOWN if value is UNKNOWN else not value
    if isinstance(node, ast.BoolOp):
        values = [_value(v, defaults, derived, hops) for v in node.values]
        decided = [bool(v) for v in values if v is not UNKNOWN]
        if isinstance(node.op, ast.Or):
            return True if any(decided) else UNKNOWN if len(decided) < len(values) else False
        return False if not all(decided) else UNKNOWN if len(decided) < len(values) else True
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARISONS:
        left = _value(node.left, defaults, derived, hops)
        right = _value(node.comparators[0], defaults, derived, hops)
        if left is UNKNOWN or right is UNKNOWN:
            return UNKNOWN
        try:
            return COMPARISONS[type(node.ops[0])](left, right)
        except TypeError:  # `None > 1`
            return UNKNOWN
    return UNKNOWN
