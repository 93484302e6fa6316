"""Running a fix example's original and fixed code side by side in one of its inputs (FixInput,
ptlint.engine.rule), with torch on the CPU, and comparing the outcomes. Used by
tests/rules/test_fix_examples_run.py, the fuzz tests and bench/fuzz.py."""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class Outcome:
    result: Any  # a snapshot of `result`, None after an exception
    error: str | None  # the exception's class name
    namespace: dict


class InputClaimFailed(AssertionError):
    """The input's own claim about its state did not hold: the input proves nothing."""


def run(source: str, code: str) -> Outcome:
    """Run the example's code, then the input's, with the seeds set; the snapshot of `result`.
    The input runs in a scope of its own (the example's names, and `torch`): what it imports
    never reaches the example's globals, so a fix that forgot an import still fails."""
    namespace: dict = {"__name__": "fix_example"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecations of the original, "CUDA is not available"...
        _seed()
        exec(compile(source, "<example>", "exec"), namespace)
        scope = dict(namespace, torch=torch)
        _seed()
        try:
            exec(compile(code, "<input>", "exec"), scope)
        except AssertionError as exc:
            raise InputClaimFailed(f"the input's claim failed: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - the outcome, compared with the other run's
            return Outcome(None, type(exc).__name__, scope)
    return Outcome(snapshot(scope.get("result")), None, scope)


def _seed() -> None:
    torch.manual_seed(0)
    random.seed(0)


def snapshot(value: Any) -> Any:
    """A copy of what a result holds, taken right after the run (later runs cannot change it)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone() if value.layout == torch.strided else value.detach().to_dense().clone()
    if isinstance(value, torch.nn.Module):
        return {"parameters": [(name, snapshot(p), snapshot(p.grad)) for name, p in value.named_parameters()],
                "buffers": [(name, snapshot(b)) for name, b in value.named_buffers()]}
    if isinstance(value, (list, tuple)):
        return type(value)(snapshot(v) for v in value) if not hasattr(value, "_fields") else tuple(map(snapshot, value))
    if isinstance(value, dict):
        return {key: snapshot(v) for key, v in value.items()}
    return value


def same(a: Any, b: Any, tolerance: float | dict[str, float] = 0.0) -> bool:
    """Equal snapshots: tensors of the same dtype, shape and device, equal bit for bit (NaN
    equal to NaN) or, for a floating dtype given a tolerance, within it relative to the larger
    of the two tensors' largest magnitudes."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device:
            return False
        allowed = tolerance.get(str(a.dtype).removeprefix("torch."), 0.0) if isinstance(tolerance, dict) \
            else tolerance
        if allowed and (a.is_floating_point() or a.is_complex()):
            return close(a, b, allowed)
        both_nan = torch.isnan(a) & torch.isnan(b) if (a.is_floating_point() or a.is_complex()) else \
            torch.zeros_like(a, dtype=torch.bool)
        return bool(((a == b) | both_nan).all())
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tolerance) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        if isinstance(tolerance, float) and tolerance:
            return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-30)
    return type(a) is type(b) and a == b


def close(a: Any, b: Any, tolerance: float) -> bool:
    """`a` and `b` agree to `tolerance` relative to their largest magnitude (compared in float64;
    infinities and NaNs must sit in the same places)."""
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(close(x, y, tolerance) for x, y in zip(a, b))
    a, b = torch.as_tensor(a).detach().double(), torch.as_tensor(b).detach().double()
    if a.shape != b.shape:
        return False
    finite_a, finite_b = torch.isfinite(a), torch.isfinite(b)
    if not torch.equal(finite_a, finite_b):
        return False
    odd_a, odd_b = a[~finite_a], b[~finite_b]  # infinities of the same sign, NaN with NaN
    if not ((odd_a == odd_b) | (torch.isnan(odd_a) & torch.isnan(odd_b))).all():
        return False
    finite = torch.isfinite(a)
    if not finite.any():
        return True
    scale = max(a[finite].abs().max().item(), b[finite].abs().max().item(), 1e-30)
    return bool(((a[finite] - b[finite]).abs() <= tolerance * scale).all())


def finite(value: Any) -> bool:
    return bool(torch.isfinite(torch.as_tensor(value)).all())


HELPERS = {"same": same, "close": close, "finite": finite, "torch": torch}


def side_by_side(before: str, after: str, fix_input) -> tuple[bool, str]:
    """(whether the two runs agree as the input says, a description of the outcomes)."""
    original, fixed = run(before, fix_input.code), run(after, fix_input.code)
    described = (f"{fix_input.name}: before -> {original.error or _short(original.result)}; "
                 f"after -> {fixed.error or _short(fixed.result)}")
    if fix_input.check is not None:
        scope = dict(fixed.namespace)
        scope.update(HELPERS, before=original.result, after=fixed.result, before_error=original.error,
                     after_error=fixed.error)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return bool(eval(fix_input.check, scope)), described  # noqa: S307 - the rule's own example
    if original.error or fixed.error:
        return original.error == fixed.error, described
    return same(original.result, fixed.result, fix_input.tolerance), described


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:297] + "..."


def cuda() -> bool:
    return torch.cuda.is_available()
