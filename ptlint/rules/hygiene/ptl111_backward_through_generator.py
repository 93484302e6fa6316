"""PTL111 backward-through-generator: a discriminator's loss on the generator's output, not detached."""

from __future__ import annotations

import ast

from ptlint.engine.rule import CALLED, PER_OUTER, PER_STEP, Rule
from ptlint.semantics.nodes import DEFINITIONS, STATEMENT_LOOPS, dotted, name_words

# Words of a callee or optimizer that name the generator or the discriminator of a GAN
# (`self.G`, `netG`, `generator`; `self.D`, `netD`, `critic`, `optimizer_D`, `D.optim`).
GENERATOR_WORDS = {"g", "generator", "netg", "gen", "gnet"}
DISCRIMINATOR_WORDS = {"d", "discriminator", "netd", "disc", "critic", "dnet"}


def _callee_words(call: ast.AST) -> set[str]:
    """The words of the name a call calls (`self.netG(z)` -> {"netg"}; not of its receiver:
    `gen_imgs.detach()` -> {"detach"})."""
    if not isinstance(call, ast.Call) or not dotted(call.func):
        return set()
    last = call.func.attr if isinstance(call.func, ast.Attribute) else call.func.id
    return {last.lower(), *last.lower().split("_")}


def _is_generator_call(node: ast.AST) -> bool:
    words = _callee_words(node)
    return bool(words & GENERATOR_WORDS) and not words & DISCRIMINATOR_WORDS


def _is_discriminator_call(node: ast.AST) -> bool:
    words = _callee_words(node)
    return bool(words & DISCRIMINATOR_WORDS) and not words & GENERATOR_WORDS


def _straight_line(block: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a block that run one after another, `with` bodies included."""
    out: list[ast.stmt] = []
    for statement in block:
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            out.extend(_straight_line(statement.body))
        else:
            out.append(statement)
    return out


def _assigned_names(statement: ast.stmt) -> set[str]:
    """The names a statement assigns, also in the branches of an `if` (`if args.loss == "hinge":
    d_loss = ... else: d_loss = ...`) or a `try`."""
    if isinstance(statement, (ast.If, ast.Try)):
        return {name for node in ast.walk(statement) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                for name in _assigned_names(node)}
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, (ast.AugAssign, ast.AnnAssign)) else []
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _backward_of(statement: ast.stmt) -> ast.Call | None:
    """`loss.backward()` as a statement."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "backward":
        return call
    return None


OPTIMIZER_PREFIXES = ("optimizer", "optim", "opt")


def _optimizer_step(statement: ast.stmt) -> set[str] | None:
    """The words of the optimizer a statement steps (`optimizer_D.step()`, `optimizerD.step()` ->
    "d" among them), or None."""
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return None
    words = set(name_words(call.func.value))
    for word in list(words):
        prefix = next((p for p in OPTIMIZER_PREFIXES if word.startswith(p) and len(word) > len(p)), None)
        if prefix is not None:
            words.add(word[len(prefix):].strip("_"))
    return words


class BackwardThroughGenerator(Rule):
    code = "PTL111"
    name = "backward-through-generator"
    message = ("the discriminator's loss takes the generator's output undetached: its `.backward()` runs back "
               "through the generator too, and only the discriminator steps; pass `{fake}.detach()`")
    help = "Call the discriminator on `fake.detach()` in its own update; keep `fake` for the generator's update."
    contexts = frozenset({PER_STEP, PER_OUTER, CALLED})
    cold = False
    triggers = ("backward",)

    def visit_For(self, node: ast.AST) -> None:
        self._block(node.body)

    visit_While = visit_AsyncFor = visit_For

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self._block(node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _block(self, block: list[ast.stmt]) -> None:
        statements = _straight_line(block)
        fakes: dict[str, ast.AST] = {}  # names holding the generator's output, as last assigned
        for index, statement in enumerate(statements):
            if isinstance(statement, (*DEFINITIONS, *STATEMENT_LOOPS)):
                continue
            for call in ast.walk(statement):
                if not _is_discriminator_call(call) or len(call.args) != 1:
                    continue
                argument = call.args[0]
                fake = argument.id if isinstance(argument, ast.Name) and argument.id in fakes else \
                    dotted(argument.func) if _is_generator_call(argument) else None
                if fake is not None and self._only_the_discriminator_steps(statements, index, statement):
                    self.report(call, self.message.format(fake=fake if isinstance(argument, ast.Name) else
                                                           ast.unparse(argument)))
            for name in _assigned_names(statement):
                fakes.pop(name, None)
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name) and _is_generator_call(statement.value):
                fakes[statement.targets[0].id] = statement.value

    @staticmethod
    def _only_the_discriminator_steps(statements: list[ast.stmt], index: int, first: ast.stmt) -> bool:
        """The value computed at `first` reaches a loss whose `.backward()` follows, and the next
        optimizer step after it is the discriminator's."""
        carried = _assigned_names(first)
        backward_seen = isinstance(first, ast.Expr) and _backward_of(first) is not None
        for statement in statements[index + 1:]:
            if isinstance(statement, (*DEFINITIONS, *STATEMENT_LOOPS, ast.If, ast.Try)):
                continue
            backward = _backward_of(statement)
            if backward is not None:
                if _names_in(backward.func.value) & carried:
                    if any(k.arg in ("retain_graph", "retain_variables") for k in backward.keywords):
                        return False  # the graph is kept for the generator's backward: shared, by design
                    backward_seen = True
                continue  # (another loss's backward: a gradient penalty, the real images' term)
            stepped = _optimizer_step(statement)
            if stepped is not None and backward_seen:
                return bool(stepped & DISCRIMINATOR_WORDS) and not stepped & GENERATOR_WORDS
            if not backward_seen and _names_in(statement) & carried:
                carried |= _assigned_names(statement)
        return False

    docs = """
## What it does
Finds the discriminator's update of a GAN that calls the discriminator on the generator's
output as it is (`D(fake)` or `D(G(z))`, not `D(fake.detach())`), backpropagates a loss built
from it, and then steps the discriminator's optimizer only. The generator and discriminator
are told by their names (`G`, `netG`, `generator`; `D`, `netD`, `discriminator`, `critic`, and
their optimizers `optimizer_D`, `D_optimizer`, `D.optim`).

## Why is this bad?
`d_loss.backward()` then runs back through the whole generator: every step computes the
generator's gradients for nothing (its optimizer does not step on them; the generator's own
update zeroes them or, worse, adds its gradients to them). That is a full backward pass of the
generator wasted on every discriminator step, and the generator's activations are kept alive
until then. `D(fake.detach())` cuts the graph: the discriminator's gradients are the same.

Not reported: `D(fake.detach())`, `D(fake.data)`, a fake made under `torch.no_grad()` and named
otherwise; a loss whose backward is followed by the generator's step first (a joint update); a
backward with `retain_graph=` (or `retain_variables=`, its name before PyTorch 0.4: the graph is
kept for the generator's loss, a shared graph by design, which detaching would not keep). Other losses' backwards between (a gradient penalty,
the real images' term) do not change the finding.

## Where it reports
- **Reports** in code that runs every step or every N steps (a discriminator updated every
  `n_critic` steps), and in a function whose callers the file does not show (a `train_step`
  helper).
- **Silent** in once-code, error paths and test code.

## Example
```python
import torch


def train(G, D, loader, opt_g, opt_d, bce):
    for real in loader:
        fake = G(torch.randn(real.size(0), 100, device=real.device))
        opt_d.zero_grad()
        d_loss = bce(D(real), torch.ones_like(D(real))) + bce(D(fake), torch.zeros_like(D(fake)))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(D(fake), torch.ones_like(D(fake)))
        g_loss.backward()
        opt_g.step()
```

## Use instead
```python
import torch


def train(G, D, loader, opt_g, opt_d, bce):
    for real in loader:
        fake = G(torch.randn(real.size(0), 100, device=real.device))
        opt_d.zero_grad()
        out = D(fake.detach())
        d_loss = bce(D(real), torch.ones_like(D(real))) + bce(out, torch.zeros_like(out))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(D(fake), torch.ones_like(D(fake)))
        g_loss.backward()
        opt_g.step()
```

## Fix safety
No automatic fix: which call is the discriminator's update is read from names.

## References
- https://pytorch.org/tutorials/beginner/dcgan_faces_tutorial.html (its discriminator update calls
  `netD(fake.detach())`)
"""

    bad_examples = [
        # the loss chosen by a setting, in each branch; five critic updates per step
        """
import torch
from torch import nn


def train(loader, generator, discriminator, optim_disc, optim_gen, args):
    for data, _ in loader:
        data = data.cuda()
        for _ in range(5):
            z = torch.randn(64, 128, device="cuda")
            optim_disc.zero_grad()
            if args.loss == "hinge":
                disc_loss = nn.ReLU()(1.0 - discriminator(data)).mean() + nn.ReLU()(1.0 + discriminator(generator(z))).mean()  # expect: PTL111
            else:
                disc_loss = -discriminator(data).mean() + discriminator(generator(z)).mean()  # expect: PTL111
            disc_loss.backward()
            optim_disc.step()
        optim_gen.zero_grad()
        gen_loss = -discriminator(generator(torch.randn(64, 128, device="cuda"))).mean()
        gen_loss.backward()
        optim_gen.step()
""",
        """
import torch

def train(G, D, loader, opt_g, opt_d, bce):
    for real in loader:
        fake = G(torch.randn(real.size(0), 100, device=real.device))
        opt_d.zero_grad()
        d_fake = D(fake)  # expect: PTL111
        d_loss = bce(D(real), torch.ones_like(d_fake)) + bce(d_fake, torch.zeros_like(d_fake))
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(D(fake), torch.ones_like(d_fake))
        g_loss.backward()
        opt_g.step()
""",
        # a method of a GAN class: self.G, self.D, self.D_optimizer; the loss through two names
        """
import torch

class GAN:
    def train(self, loader):
        for x_, z_ in loader:
            self.D_optimizer.zero_grad()
            D_real_loss = self.BCE_loss(self.D(x_), self.y_real_)
            G_ = self.G(z_)
            D_fake = self.D(G_)  # expect: PTL111
            D_fake_loss = self.BCE_loss(D_fake, self.y_fake_)
            D_loss = D_real_loss + D_fake_loss
            D_loss.backward()
            self.D_optimizer.step()
            self.G_optimizer.zero_grad()
            G_ = self.G(z_)
            G_loss = self.BCE_loss(self.D(G_), self.y_real_)
            G_loss.backward()
            self.G_optimizer.step()
""",
        # under autocast (a `with` block), the discriminator's loss through a name
        """
import torch

def train(netG, netD, loader, optimizerD):
    for real, z in loader:
        with torch.autocast("cuda"):
            fake = netG(z)
            out = netD(fake)  # expect: PTL111
            errD = out.mean() - netD(real).mean()
        errD.backward()
        optimizerD.step()
""",
        # the fake's term backpropagated on its own, then a gradient penalty's, then the step
        """
def critic_iteration(self, images, z, one, mone):
    d_loss_real = self.D(images).mean()
    d_loss_real.backward(mone)
    fake_images = self.G(z)
    d_loss_fake = self.D(fake_images)  # expect: PTL111
    d_loss_fake = d_loss_fake.mean()
    d_loss_fake.backward(one)
    gradient_penalty = self.calculate_gradient_penalty(images.data, fake_images.data)
    gradient_penalty.backward()
    self.d_optimizer.step()
""",
        # the backward in the same statement; a clipping branch before the step
        """
def critic_step(generator, critic, optimizer_critic, real, z, clip):
    optimizer_critic.zero_grad()
    (critic(generator(z)).mean() - critic(real).mean()).backward()  # expect: PTL111
    if clip:
        clip_weights(critic)
    optimizer_critic.step()
""",
        # the generator called inside the discriminator's call; a critic
        """
import torch

def critic_step(generator, critic, optimizer_critic, real, z):
    optimizer_critic.zero_grad()
    loss = critic(generator(z)).mean() - critic(real).mean()  # expect: PTL111
    loss.backward()
    optimizer_critic.step()
""",
    ]

    good_examples = [
        # the fake detached for the discriminator's update (also through `.data`)
        """
import torch

def train(G, D, loader, opt_g, opt_d, bce):
    for real in loader:
        fake = G(torch.randn(real.size(0), 100, device=real.device))
        opt_d.zero_grad()
        gen_imgs = fake
        d_loss = bce(D(fake.detach()), torch.zeros(real.size(0), device=real.device)) + bce(D(fake.data), 0) \
            + bce(D(gen_imgs.detach()), 0)
        d_loss.backward()
        opt_d.step()
        opt_g.zero_grad()
        g_loss = bce(D(fake), torch.ones(real.size(0), device=real.device))
        g_loss.backward()
        opt_g.step()
""",
        # the generator's update: its loss on D(fake) is what should reach the generator
        """
def gen_step(netG, netD, optimizer_G, z):
    optimizer_G.zero_grad()
    g_loss = -netD(netG(z)).mean()
    g_loss.backward()
    optimizer_G.step()
""",
        # a graph kept for the generator's backward (softmax GAN's shared partition function)
        """
def train(generator, discriminator, optimizer_D, optimizer_G, z, real):
    gen_imgs = generator(z)
    d_fake = discriminator(gen_imgs)
    d_loss = discriminator(real).sum() + d_fake.exp().sum().log()
    d_loss.backward(retain_graph=True)
    optimizer_D.step()
    g_loss = d_fake.sum() + d_fake.exp().sum().log()
    g_loss.backward()
    optimizer_G.step()

def old_train(G, D, opt_D, opt_G, z, real):
    G_paintings = G(z)
    prob_artist1 = D(G_paintings)
    D_loss = -(D(real).log() + (1 - prob_artist1).log()).mean()
    G_loss = (1 - prob_artist1).log().mean()
    opt_D.zero_grad()
    D_loss.backward(retain_variables=True)
    opt_D.step()
    opt_G.zero_grad()
    G_loss.backward()
    opt_G.step()
""",
        # a wrapper that runs both (`G_D`) is neither
        """
def train(G, D, G_D, opt_d, z, real):
    both = G_D(z)
    other = G_D(z).mean() + D(both).mean()
    other.backward()
    opt_d.step()
    made = G(z)
    mixed = G_D(made).mean()
    mixed.backward()
    opt_d.step()
""",
        # the fake's score only logged; the real images' loss backpropagated; one optimizer for both
        """
def step(G, D, opt_d, optimizer, z, real, log):
    fake = G(z)
    d_out = D(fake)
    score = d_out.mean().item()
    real_loss = D(real).mean()
    real_loss.backward()
    opt_d.step()
    log(score)
    loss = D(G(z)).mean()
    loss.backward()
    optimizer.step()
""",
        # a joint update that steps both (one backward for both losses)
        """
def joint(G, D, opt_g, opt_d, z, real):
    fake = G(z)
    loss = D(fake).mean() - D(real).mean()
    loss.backward()
    opt_g.step()
    opt_d.step()
""",
        # the fake rebound to a detached copy before the discriminator sees it; once-code
        """
import torch

def train(G, D, loader, opt_d):
    for real, z in loader:
        fake = G(z)
        fake = fake.detach()
        d_loss = D(fake).mean() - D(real).mean()
        d_loss.backward()
        opt_d.step()

fake = G(z)
loss = D(fake).mean()
loss.backward()
opt_d.step()
""",
    ]
