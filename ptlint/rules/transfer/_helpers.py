"""What the transfer rules PTL104 and PTL105 share: which calls copy a value to a device. Not a
rule module.

A transfer is `x.cuda(...)`, or `x.to(...)` whose target is visibly a device (a device string,
`torch.device(...)`, a name or attribute called `device` / `dev` / `*_device`, `device=`), not
a dtype (`x.to(torch.float16)`) or another tensor.
"""

from __future__ import annotations

import ast

from ptlint.semantics.values import is_device


def transfer_device(call: ast.AST, ctx) -> ast.AST | None:
    """The device expression of a transfer (`call` itself for `.cuda()` with no device), or None
    when `call` is not visibly a copy to a device."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    keywords = {k.arg: k.value for k in call.keywords}
    if call.func.attr == "cuda":
        return call.args[0] if call.args else keywords.get("device", call)
    if call.func.attr != "to":
        return None
    device = call.args[0] if call.args else keywords.get("device")
    if device is None or not ("device" in keywords or is_device(device, ctx)):
        return None
    return device


def has_non_blocking(call: ast.Call) -> bool:
    """`non_blocking=` given, by keyword or position (`.to(d, dtype, True)`, `.cuda(d, True)`)."""
    if any(k.arg == "non_blocking" for k in call.keywords):
        return True
    return len(call.args) >= (3 if call.func.attr == "to" else 2)
