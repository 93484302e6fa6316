"""What `expm1(x)` gains over `exp(x) - 1` in each line shape PTL305 met in the corpus.

    python bench/expm1_accuracy.py                                  # both parts (under a minute)
    python bench/expm1_accuracy.py --only samplers --data gauss --jitter 0.01 [--state float16]
    python bench/expm1_accuracy.py --only other

The standard (PTL305's page): a rewrite is worth reporting when it measurably improves what the
program computes, not the difference `exp(x) - 1` on its own. Every number is the error of a
program's result against float64 arithmetic on the same rounded inputs, once with the line as
written and once with `expm1`; the gain is their ratio. A gain near 1 means nothing measurable
changes: `exp(x) - 1` keeps an absolute error of about one unit in the last place of 1, which is
all a term added to a larger one keeps anyway.

Part 1, diffusion samplers (diffusers' DPM-Solver, DPM-Solver++, SDE-DPM-Solver, DEIS, EDM and
SA-Solver schedulers). A toy data set with an exact denoiser (the posterior mean, in float64) is
sampled with the published update formulas, written here from the papers' equations, on Stable
Diffusion's schedule (timesteps spaced linearly, or Karras sigmas) and EDM's. The step runs in
float32 as the library's does (it upcasts the sample; alpha, sigma, the log-SNR and h are float32);
the denoiser's output is rounded to float32. `--jitter` adds a fixed random error of that size to
every denoiser output, for a network whose outputs are not smooth along the trajectory (that makes
the finite differences D1, D2 of the higher-order terms large); `--state float16` rounds the sample
to float16 after every step, as the library does for a float16 model. Each shape is switched to
`exp(x) - 1` alone (the others use `expm1`), then all of them together as the library writes them.
"local" is the one-step error (from the float64 run's state and outputs, rounded) averaged over the
steps, "final" the error of the finished sample, both relative to the largest element; the
mixture's final error is chaotic (a pixel near the boundary between modes can go either way), so
read its local gains.

Part 2, the other shapes: k3 KL estimates `(exp(r) - 1) - r` and `exp(d) - d - 1`, `(exp(x) - 1) / x`
as a factor, alpha-divergence DPO scores `(exp(t) - 1) * coef` (loss and gradient), an exponential
integrator step, a soft clip `-s * (exp(-o) - 1) + m`, an ELU-style activation feeding a layer, a
log-normal variance `(exp(s**2) - 1) * m`.
"""

from __future__ import annotations

import argparse

import torch

F64 = torch.float64
SHAPES = {  # name -> the line shape it stands for (data-prediction form; noise prediction uses +h)
    "first": "a_t * (exp(-h) - 1) * D0, a term of (s_t / s_s) * x - ... (every order; DEIS)",
    "half": "0.5 * a_t * (exp(-h) - 1) * D1 (2nd order, midpoint)",
    "phi2": "a_t * ((exp(-h) - 1) / h + 1) * D1 (2nd order heun, 3rd order)",
    "phi3": "a_t * ((exp(-h) - 1 + h) / h**2 - 0.5) * D2 (3rd order)",
    "noise": "s_t * sqrt(exp(2 * h) - 1) * z (SDE noise; SA-Solver)",
    "int0": "exp(-b) * (exp(b - a) - 1), SA-Solver's order-0 integral, in its predictor coefficients",
}


class Forms:
    """`em1(x, shape)`: `exp(x) - 1` for the shapes in `exp_shapes`, `expm1(x)` for the others."""

    def __init__(self, exp_shapes=()):
        self.exp_shapes = set(exp_shapes)

    def em1(self, x, shape):
        return torch.exp(x) - 1.0 if shape in self.exp_shapes else torch.expm1(x)


# --- the toy problem -----------------------------------------------------------------------------

class Problem:
    """Each pixel is Gaussian (`gauss`: N(mu, std**2)) or a mixture of two narrow Gaussians
    (`mixture`: modes mu -/+ 0.5, std 0.05; its denoiser commits to a mode over a short range of noise
    levels, so its outputs bend sharply along the trajectory as a trained network's do); x = alpha * x0
    + sigma * noise. The denoiser (the posterior mean) is exact in float64; its output is rounded to
    the working dtype, as a network's would be."""

    def __init__(self, dim, data="mixture", seed=0, jitter=0.0):
        self.data, self.jitter = data, jitter
        g = torch.Generator().manual_seed(seed)
        self.mu = torch.rand(dim, generator=g, dtype=F64) - 0.5
        self.std = 0.05 + 0.45 * torch.rand(dim, generator=g, dtype=F64)
        self.generator = g

    def x0(self, x, alpha, sigma):
        x, alpha, sigma = x.to(F64), torch.as_tensor(alpha).to(F64), torch.as_tensor(sigma).to(F64)
        if self.data == "gauss":
            var = self.std ** 2
            return self.mu + alpha * var / (alpha ** 2 * var + sigma ** 2) * (x - alpha * self.mu)
        var = torch.tensor(0.05 ** 2, dtype=F64)
        modes = torch.stack([self.mu - 0.5, self.mu + 0.5])
        spread = alpha ** 2 * var + sigma ** 2
        weights = torch.softmax(-(x - alpha * modes) ** 2 / (2 * spread), dim=0)
        return (weights * (modes + alpha * var / spread * (x - alpha * modes))).sum(0)

    def output(self, x, alpha, sigma, data, dtype, call):
        """The denoiser's output at the `call`-th evaluation; with jitter, plus that much of a fixed
        random error per call, as a network's outputs are not smooth along the trajectory."""
        x0 = self.x0(x, alpha, sigma)
        if self.jitter:
            x0 = x0 + self.jitter * torch.randn(x0.shape, generator=torch.Generator().manual_seed(call), dtype=F64)
        out = x0 if data else (x.to(F64) - torch.as_tensor(alpha).to(F64) * x0) / torch.as_tensor(sigma).to(F64)
        return out.to(dtype)

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.generator, dtype=F64)


def sd_sigmas(steps, spacing):
    """Stable Diffusion's scaled-linear schedule, float32 as the library keeps it: sigma = sqrt((1-a)/a)."""
    betas = torch.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000, dtype=torch.float32) ** 2
    train = ((1 - torch.cumprod(1 - betas, 0)) / torch.cumprod(1 - betas, 0)).sqrt()
    if spacing == "linspace":
        return train[torch.linspace(999, 0, steps + 1).round().long().unique_consecutive()]
    return karras(train[-1].item(), train[0].item(), steps)


def karras(sigma_max, sigma_min, steps, rho=7.0):
    ramp = torch.linspace(0, 1, steps + 1, dtype=F64)
    lo, hi = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    return ((hi + ramp * (lo - hi)) ** rho).to(torch.float32)


def schedule(sigmas, vp, dtype):
    """alpha_t, sigma_t and the log-SNR lambda_t of each noise level, computed in `dtype` from the
    (float32) sigmas, as the library computes them in the step."""
    alphas, sigs = alpha_sigma(sigmas.to(dtype), vp)
    return alphas, sigs, torch.log(alphas) - torch.log(sigs)


def alpha_sigma(sig, vp):
    """(alpha_t, sigma_t) of a noise level: variance preserving (SD) or exploding (EDM, alpha = 1)."""
    if not vp:
        return torch.ones_like(sig), sig
    alpha = 1 / torch.sqrt(sig ** 2 + 1)
    return alpha, sig * alpha


# --- samplers ------------------------------------------------------------------------------------
# A solver is (data_prediction, step(x, ms, lams, a_s, s_s, a_t, s_t, lam_t, z, order, forms)).

def dpmpp_step(x, ms, lams, a_s, s_s, a_t, s_t, lam_t, z, order, f, variant):
    """DPM-Solver++ (data prediction), multistep; variant midpoint/heun for order 2."""
    h = lam_t - lams[-1]
    x_t = (s_t / s_s) * x - (a_t * f.em1(-h, "first")) * ms[-1]
    if order == 1:
        return x_t
    r0 = (lams[-1] - lams[-2]) / h
    d1_0 = (1.0 / r0) * (ms[-1] - ms[-2])
    if order == 2:
        if variant == "midpoint":
            return x_t - 0.5 * (a_t * f.em1(-h, "half")) * d1_0
        return x_t + (a_t * (f.em1(-h, "phi2") / h + 1.0)) * d1_0
    r1 = (lams[-2] - lams[-3]) / h
    d1_1 = (1.0 / r1) * (ms[-2] - ms[-3])
    d1 = d1_0 + (r0 / (r0 + r1)) * (d1_0 - d1_1)
    d2 = (1.0 / (r0 + r1)) * (d1_0 - d1_1)
    return (x_t + (a_t * (f.em1(-h, "phi2") / h + 1.0)) * d1
            - (a_t * ((f.em1(-h, "phi3") + h) / h ** 2 - 0.5)) * d2)


def dpm_step(x, ms, lams, a_s, s_s, a_t, s_t, lam_t, z, order, f, variant):
    """DPM-Solver (noise prediction), multistep; order 1 is also DEIS's first-order update."""
    h = lam_t - lams[-1]
    x_t = (a_t / a_s) * x - (s_t * f.em1(h, "first")) * ms[-1]
    if order == 1:
        return x_t
    r0 = (lams[-1] - lams[-2]) / h
    d1_0 = (1.0 / r0) * (ms[-1] - ms[-2])
    if order == 2:
        if variant == "midpoint":
            return x_t - 0.5 * (s_t * f.em1(h, "half")) * d1_0
        return x_t - (s_t * (f.em1(h, "phi2") / h - 1.0)) * d1_0
    r1 = (lams[-2] - lams[-3]) / h
    d1_1 = (1.0 / r1) * (ms[-2] - ms[-3])
    d1 = d1_0 + (r0 / (r0 + r1)) * (d1_0 - d1_1)
    d2 = (1.0 / (r0 + r1)) * (d1_0 - d1_1)
    return (x_t - (s_t * (f.em1(h, "phi2") / h - 1.0)) * d1
            - (s_t * ((f.em1(h, "phi3") - h) / h ** 2 - 0.5)) * d2)


def sde_dpm_step(x, ms, lams, a_s, s_s, a_t, s_t, lam_t, z, order, f, variant):
    """SDE-DPM-Solver (noise prediction) with fresh noise z each step; order 1 or 2."""
    h = lam_t - lams[-1]
    x_t = (a_t / a_s) * x - 2.0 * (s_t * f.em1(h, "first")) * ms[-1] + s_t * torch.sqrt(f.em1(2 * h, "noise")) * z
    if order == 1:
        return x_t
    r0 = (lams[-1] - lams[-2]) / h
    d1_0 = (1.0 / r0) * (ms[-1] - ms[-2])
    if variant == "midpoint":
        return x_t - (s_t * f.em1(h, "half")) * d1_0
    return x_t - 2.0 * (s_t * (f.em1(h, "phi2") / h - 1.0)) * d1_0


def sa_integral(k, a, b, f):
    """Closed form of the integral of exp(-x) * x**k over [a, b], as SA-Solver writes it."""
    e = torch.exp(b - a)
    if k == 0:
        return torch.exp(-b) * f.em1(b - a, "int0")
    poly = {1: lambda v: v + 1, 2: lambda v: v ** 2 + 2 * v + 2, 3: lambda v: v ** 3 + 3 * v ** 2 + 6 * v + 6}[k]
    return torch.exp(-b) * (poly(a) * e - poly(b))


def lagrange_monomials(nodes):
    """For each node i, the coefficients (highest power first) of the Lagrange basis polynomial L_i."""
    out = []
    for i, xi in enumerate(nodes):
        coeffs = [torch.ones_like(xi)]
        for j, xj in enumerate(nodes):
            if j != i:  # multiply by (x - xj) / (xi - xj)
                scale = 1.0 / (xi - xj)
                coeffs = [c * scale for c in coeffs] + [torch.zeros_like(xi)]
                for n in range(len(coeffs) - 1, 0, -1):
                    coeffs[n] = coeffs[n] - xj * coeffs[n - 1]
        out.append(coeffs)
    return out


def sa_step(x, ms, lams, a_s, s_s, a_t, s_t, lam_t, z, order, f, variant, tau=1.0):
    """SA-Solver predictor, noise prediction (its exp(x) - 1 path), tau = 1 as on most of its schedule."""
    h = lam_t - lams[-1]
    nodes = [lams[-1 - i] for i in range(order)]
    basis = lagrange_monomials(nodes)
    x_t = (a_t / a_s) * x
    for i in range(order):
        coeff = sum(basis[i][j] * sa_integral(order - 1 - j, lams[-1], lam_t, f) for j in range(order))
        x_t = x_t - (1 + tau ** 2) * a_t * coeff * ms[-1 - i]
    return x_t + tau * s_t * torch.sqrt(f.em1(2 * h, "noise")) * z


SOLVERS = {  # name -> (data prediction, step, orders, variant, shapes it writes with exp(x) - 1)
    "DPM-Solver++ 3M (also 1, 2M heun)": (True, dpmpp_step, (1, 2, 3), "heun", ("first", "phi2", "phi3")),
    "DPM-Solver++ 2M midpoint": (True, dpmpp_step, (1, 2), "midpoint", ("first", "half")),
    "DPM-Solver 3M (also 1, 2M heun; DEIS 1)": (False, dpm_step, (1, 2, 3), "heun", ("first", "phi2", "phi3")),
    "DPM-Solver 2M midpoint": (False, dpm_step, (1, 2), "midpoint", ("first", "half")),
    "SDE-DPM-Solver 2M heun": (False, sde_dpm_step, (1, 2), "heun", ("first", "phi2", "noise")),
    "SDE-DPM-Solver 2M midpoint": (False, sde_dpm_step, (1, 2), "midpoint", ("first", "half", "noise")),
    "SA-Solver predictor 3, noise prediction": (False, sa_step, (1, 2, 3), "", ("int0", "noise")),
}


def run(problem, solver, sigmas, vp, dtype, forms, x_T, noises, state_dtype=None, reference=None):
    """Sample with the multistep warm-up (order 1, then 2, ...). Returns the final sample, and the
    mean one-step error when `reference` (the float64 run's states and outputs) is given."""
    data, step, orders, variant, _ = solver
    alphas, sigs, lams = schedule(sigmas, vp, dtype)
    exact = schedule(sigmas, vp, F64)
    x = x_T.to(dtype)
    states, outputs, local = [x], [], []
    for i in range(len(sigmas) - 1):
        outputs.append(problem.output(x, alphas[i], sigs[i], data, dtype, i))
        order = min(orders[-1], i + 1)
        args = (lams[: i + 1], alphas[i], sigs[i], alphas[i + 1], sigs[i + 1], lams[i + 1],
                noises[i].to(dtype), order, forms, variant)
        if reference is not None:  # one step from the float64 trajectory's state and outputs, rounded
            ref_states, ref_outputs = reference
            rounded = [o.to(dtype) for o in ref_outputs[max(0, i - 2): i + 1]]
            a64, s64, l64 = exact
            want = step(ref_states[i].to(dtype).to(F64), [o.to(F64) for o in rounded], l64[: i + 1], a64[i], s64[i],
                        a64[i + 1], s64[i + 1], l64[i + 1], noises[i].to(dtype).to(F64), order, Forms(), variant)
            got = step(ref_states[i].to(dtype), rounded, *args)
            if state_dtype is not None:
                got = got.to(state_dtype)
            local.append(((got.to(F64) - want).abs().max() / want.abs().max()).item())
        x = step(x, outputs[-3:], *args)
        if state_dtype is not None:
            x = x.to(state_dtype).to(dtype)
        states.append(x)
    return x, sum(local) / max(len(local), 1), (states, outputs)


def sampler_table(problem, steps_list, state_dtype):
    dim = problem.mu.numel()
    print(f"\n## Samplers ({problem.data} data, jitter {problem.jitter:g}, float32 step"
          f"{', float16 state' if state_dtype else ''}): gain = error as written / error with expm1\n")
    for shape, text in SHAPES.items():
        print(f"  {shape:<6} {text}")
    print(f"\n{'solver':<40}{'sched':>9}{'steps':>6}{'h min..max':>16}{'expm1 local':>13}{'final':>10}  gain local/final per shape")
    for name, solver in SOLVERS.items():
        shapes = solver[4]
        schedules = (("linspace", True), ("karras", True), ("edm", False)) if solver[1] is dpmpp_step \
            and solver[3] == "heun" else (("linspace", True),)
        for spacing, vp in schedules:
            for steps in steps_list:
                sigmas = karras(80.0, 0.002, steps) if spacing == "edm" else sd_sigmas(steps, spacing)
                x_T = (problem.randn(dim) * (sigmas[0].double() if not vp else 1.0))
                noises = [problem.randn(dim) for _ in range(len(sigmas) - 1)]
                ref_final, _, reference = run(problem, solver, sigmas, vp, F64, Forms(), x_T, noises)
                errors = {}
                for label, forms in (("expm1", Forms()), ("as written", Forms(shapes)),
                                     *((s, Forms([s])) for s in shapes)):
                    final, local, _ = run(problem, solver, sigmas, vp, torch.float32, forms, x_T, noises,
                                          state_dtype, reference)
                    errors[label] = (local, ((final.to(F64) - ref_final).abs().max() / ref_final.abs().max()).item())
                base_local, base_final = errors["expm1"]
                h = schedule(sigmas, vp, F64)[2].diff()
                gains = "  ".join(f"{label} {errors[label][0] / base_local:.1f}/{errors[label][1] / base_final:.1f}"
                                  for label in (*shapes, "as written"))
                print(f"{name:<40}{spacing:>9}{steps:>6}{h.min().item():>8.1e}..{h.max().item():<7.1e}"
                      f"{base_local:>12.1e}{base_final:>10.1e}  {gains}")


# --- the other shapes ----------------------------------------------------------------------------

def rel(got, want):
    return ((got.to(F64) - want).abs().max() / want.abs().max()).item()


def other_table(dim):
    g = torch.Generator().manual_seed(1)
    randn = lambda *s: torch.randn(*s, generator=g, dtype=F64)  # noqa: E731

    def about(s):  # magnitudes between s and 2 s, random signs: the worst case does not depend on --dim
        return s * (1 + torch.rand(dim, generator=g, dtype=F64)) * torch.randn(dim, generator=g, dtype=F64).sign()
    print("\n## Other shapes: relative error of the program's result; gain = exp form / expm1 form\n")
    print(f"{'shape':<62}{'dtype':>9}{'case':>18}{'exp':>10}{'expm1':>10}{'gain':>7}")

    def line(shape, dtype, case, compute, inputs):
        want = compute(torch.expm1, *(t.to(dtype).to(F64) for t in inputs))
        a = rel(compute(lambda v: torch.exp(v) - 1, *(t.to(dtype) for t in inputs)), want)
        b = rel(compute(torch.expm1, *(t.to(dtype) for t in inputs)), want)
        print(f"{shape:<62}{str(dtype)[6:]:>9}{case:>18}{a:>10.1e}{b:>10.1e}{a / max(b, 1e-300):>7.1f}")

    # k3 KL estimate (PPO approx_kl, GRPO logging): mean((exp(r) - 1) - r)
    for dtype in (torch.float32, torch.bfloat16):
        for s in (1e-4, 1e-3, 1e-2, 1e-1):
            line("mean((exp(r) - 1) - r)  k3 KL, r = log-ratio", dtype, f"std(r) {s:g}",
                 lambda em1, r: (em1(r) - r).mean(), (randn(dim) * s,))
    # (exp(x) - 1) / x used as a factor, and exp(x) - 1 - x (Taylor remainders)
    for s in (1e-4, 1e-2, 1.0):
        line("y * (exp(x) - 1) / x  (phi_1 as a factor)", torch.float32, f"|x|~{s:g}",
             lambda em1, x, y: y * em1(x) / x, (about(s), randn(dim)))
    # alpha-divergence DPO: scores = (exp(t) - 1) * coef, t = (alpha - 1) * logratio; loss and gradient
    for alpha in (0.5, 0.9, 0.999):
        for s in (1e-2, 1.0):
            def dpo(em1, lc, lr, alpha=alpha, grad=False):
                lc = lc.clone().requires_grad_(grad)
                coef = 1.0 / (alpha - 1.0)
                score = lambda v: em1((alpha - 1.0) * v) * coef  # noqa: E731
                loss = -torch.nn.functional.logsigmoid(0.1 * (score(lc) - score(lr))).mean()
                if not grad:
                    return loss.detach()
                return torch.autograd.grad(loss, lc)[0]
            pair = (randn(dim) * s, randn(dim) * s)
            line("DPO alpha-divergence loss, (exp(t) - 1) * coef", torch.float32, f"a={alpha} lr~{s:g}", dpo, pair)
            line("  ... its gradient", torch.float32, f"a={alpha} lr~{s:g}",
                 lambda em1, lc, lr, f=dpo: f(em1, lc, lr, grad=True), pair)
    # the same estimate as GRPO writes it: exp(d) - d - 1, fixed as expm1(d) - d
    line("exp(d) - d - 1  k3 KL per token (GRPO), mean", torch.float32, "std(d) 0.001",
         lambda em1, d: (em1(d) - d).mean() if em1 is torch.expm1 else (torch.exp(d) - d - 1).mean(),
         (randn(dim) * 1e-3,))
    # an exponential integrator step u * e^(Lh) + (e^(Lh) - 1) / L * N: a phi term added to the state,
    # which the rule leaves; here the term is not O(h) small, and its digits show
    for s in (1e-4, 1e-2):
        line("u * exp(L*h) + (exp(L*h) - 1) / L * N  (ETD1 step, h=0.1)", torch.float32, f"|L|~{s:g}",
             lambda em1, u, lam, n: u * torch.exp(lam * 0.1) + em1(lam * 0.1) / lam * n,
             (randn(dim), about(s), randn(dim)))
    # soft clip added to a bound (kornia jpeg), ELU-style activation into a linear layer
    over = randn(dim).abs() * 1e-3
    line("-s * (exp(-o) - 1) + m  (soft clip to m = 1)", torch.float32, "o~1e-3",
         lambda em1, o: -0.1 * em1(-o / 0.1) + 1.0, (over,))
    weight = randn(dim, 64) / dim ** 0.5
    for s in (1e-3, 1.0):
        line("W @ where(x > 0, x, exp(x) - 1)  (ELU into a layer)", torch.float32, f"|x|~{s:g}",
             lambda em1, x, w: torch.where(x > 0, x, em1(x)) @ w, (about(s), weight))
    # log-normal variance (exp(s^2) - 1) * exp(2 mu + s^2), a result used on its own
    for s in (1e-3, 0.1, 1.0):
        line("(exp(s**2) - 1) * exp(2*mu + s**2)  log-normal variance", torch.float32, f"s~{s:g}",
             lambda em1, sd, mu: em1(sd ** 2) * torch.exp(2 * mu + sd ** 2), (about(s).abs(), randn(dim)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dim", type=int, default=16384, help="pixels of the toy sample")
    parser.add_argument("--steps", default="10,20,50,200,1000", help="comma list of sampling step counts")
    parser.add_argument("--state", choices=("float32", "float16"), default="float32",
                        help="dtype the sample is kept in between steps (float16: a float16 pipeline)")
    parser.add_argument("--data", choices=("mixture", "gauss"), default="mixture",
                        help="pixel distribution of the toy problem")
    parser.add_argument("--jitter", type=float, default=0.0,
                        help="random error added to each denoiser output (1: differences D1, D2 of order 1)")
    parser.add_argument("--only", choices=("samplers", "other"), help="one part only")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.only != "other":
        state = torch.float16 if args.state == "float16" else None
        sampler_table(Problem(args.dim, args.data, jitter=args.jitter), [int(s) for s in args.steps.split(",")], state)
    if args.only != "samplers":
        other_table(args.dim)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
