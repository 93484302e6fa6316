"""The PTL501/PTL502 foreach fixes on CUDA, in the states the CPU tests cannot reach: parameters on
two devices in one list, float16/bfloat16 on the GPU, a tensor listed twice. Run it where a GPU
is (prints one line per check, exits 1 if the fixed code and the loop disagree where the rule
pages say they agree):

    python bench/cuda_fix_check.py
"""

from __future__ import annotations

import sys

import torch


def loop_update(params, grads, lr):
    for p, g in zip(params, grads):
        p.add_(g, alpha=-lr)


def foreach_update(params, grads, lr):
    if params:
        torch._foreach_add_(params, grads, alpha=-lr)


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
    return ok


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 2
    torch.manual_seed(0)
    results = []
    # mixed devices in one list: the loop works; does foreach?
    params = [torch.randn(5, device="cuda"), torch.randn(5)]
    grads = [torch.randn(5, device="cuda"), torch.randn(5)]
    a = [p.clone() for p in params]
    b = [p.clone() for p in params]
    loop_update(a, grads, 0.1)
    try:
        foreach_update(b, grads, 0.1)
        results.append(check("add_ over cuda+cpu tensors", all(torch.equal(x, y) for x, y in zip(a, b))))
    except RuntimeError as exc:
        results.append(check("add_ over cuda+cpu tensors", False, f"foreach raised: {exc}"))
    zeros = [torch.ones(3, device="cuda"), torch.ones(3)]
    try:
        torch._foreach_zero_(zeros)
        results.append(check("zero_ over cuda+cpu tensors", all(not z.any() for z in zeros)))
    except RuntimeError as exc:
        results.append(check("zero_ over cuda+cpu tensors", False, f"foreach raised: {exc}"))
    # dtypes on the GPU: add_ with alpha, and mul_ by a Python number
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        p = torch.randn(4096, device="cuda").to(dtype)
        g = torch.randn(4096, device="cuda").to(dtype)
        x, y = p.clone(), p.clone()
        loop_update([x], [g], 0.1)
        foreach_update([y], [g], 0.1)
        results.append(check(f"add_ alpha {dtype}", torch.equal(x, y)))
        x, y = p.clone(), p.clone()
        x.mul_(1 - 0.1 * 0.01)
        torch._foreach_mul_([y], 1 - 0.1 * 0.01)
        equal = torch.equal(x, y)
        close = torch.allclose(x.float(), y.float(), rtol=2 ** -7, atol=0)
        print(f"info mul_ by a Python number {dtype}: bit-identical={equal}, within one rounding={close}")
    # gradient scaling by a 0-dim tensor (torchtune's `scale_grads`): on the gradients' device, and
    # a CPU scalar tensor, which the loop accepts for CUDA tensors
    for where in ("cuda", "cpu"):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            grads = [torch.randn(4096, device="cuda").to(dtype), torch.randn(7, device="cuda").to(dtype)]
            scale = torch.tensor(0.37, device=where)
            x, y = [g.clone() for g in grads], [g.clone() for g in grads]
            for g in x:
                g *= scale
            name = f"mul_ by a 0-dim {where} tensor {dtype}"
            try:
                torch._foreach_mul_(y, scale)
                results.append(check(name, all(torch.equal(a, b) for a, b in zip(x, y))))
            except RuntimeError as exc:
                results.append(check(name, False, f"foreach raised: {exc}"))
    # a Polyak update written with `torch.add(..., out=)`, into a float16 or float32 target
    for dtype in (torch.float32, torch.float16):
        target = [torch.randn(4096, device="cuda").to(dtype), torch.randn(7, device="cuda").to(dtype)]
        source = [torch.randn(4096, device="cuda"), torch.randn(7, device="cuda")]
        x, y = [t.clone() for t in target], [t.clone() for t in target]
        for t, s in zip(x, source):
            torch.add(t, s, alpha=0.005, out=t)
        torch._foreach_add_(y, source, alpha=0.005)
        results.append(check(f"add(out=) {dtype} target", all(torch.equal(a, b) for a, b in zip(x, y))))
    # a tensor listed twice: the loop updates it twice; the fused kernel?
    p = torch.zeros(8, device="cuda")
    g = torch.ones(8, device="cuda")
    x, y = p.clone(), p.clone()
    loop_update([x, x], [g, g], 1.0)
    foreach_update([y, y], [g, g], 1.0)
    print(f"info tensor listed twice: loop={x[0].item()} foreach={y[0].item()}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
