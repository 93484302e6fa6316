"""PTL113 host-output-without-no-grad: a model run for a value the function returns to the host."""

from __future__ import annotations

import ast

from ptlint.engine.rule import CALLED, PER_STEP, Rule
from ptlint.semantics.autograd import GradRegions
from ptlint.semantics.nodes import COMPREHENSIONS, DEFINITIONS, STATEMENT_LOOPS, walk
from ptlint.semantics.values import MODEL_WORDS

# Callees that run a model: `self.actor(s)`, `self.q_net(s)`, `self.Q(s)`, `self.forward(s)`,
# `policy(obs)`; not a torch or NumPy function.
RUNNER_WORDS = MODEL_WORDS | {"forward", "q", "qnet", "pi", "dqn", "mlp"}
# The ends of a chain that hand a tensor's value to the host.
HOST_ENDS = {"numpy", "item", "tolist"}


def _host_value(node: ast.AST | None, assigned: dict[str, list[ast.AST]], hops: int = 2) -> bool:
    """`x.detach().cpu().numpy()[0]`, `q.argmax().item()`, `(a.tolist(), 0)`, `... if c else ...`,
    or a local name last assigned one: a value in host memory."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(_host_value(e, assigned, hops) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _host_value(node.body, assigned, hops) and _host_value(node.orelse, assigned, hops)
    if isinstance(node, ast.Name):  # its last assignment (`a = model(x)`, then `a = a.cpu().numpy()`)
        values = assigned.get(node.id, [])
        last = max(values, key=lambda v: (v.lineno, v.col_offset), default=None)
        return hops > 0 and last is not None and _host_value(last, assigned, hops - 1)
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and node.attr in HOST_ENDS:
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return False


def _derived_names(calls: list[ast.Call], assigned: dict[str, list[ast.AST]]) -> set[str]:
    """The local names assigned the output of one of `calls`, or a value computed from one."""
    ids = {id(n) for call in calls for n in ast.walk(call)}
    derived: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in assigned.items():
            if name not in derived and any(id(n) in ids or isinstance(n, ast.Name) and n.id in derived
                                           for value in values for n in ast.walk(value)):
                derived.add(name)
                changed = True
    return derived


def _mentions(value: ast.AST, calls: list[ast.Call], derived: set[str]) -> bool:
    ids = {id(call) for call in calls}
    return any(id(n) in ids or isinstance(n, ast.Name) and n.id in derived for n in ast.walk(value))


class HostOutputWithoutNoGrad(Rule):
    code = "PTL113"
    name = "host-output-without-no-grad"
    message = ("`{model}` runs with autograd on, but the function only hands its result to the host "
               "(returned as NumPy or a number): it records a graph nothing backpropagates; run it "
               "under `torch.no_grad()`")
    help = "Decorate the function with `@torch.no_grad()` (or `@torch.inference_mode()`)."
    contexts = frozenset({PER_STEP, CALLED})
    cold = False
    triggers = ("numpy()", ".item()", ".tolist()")

    def visit_FunctionDef(self, node: ast.AST) -> None:
        if node.name == "forward":
            return
        assigned: dict[str, list[ast.AST]] = {}
        kept: list[ast.AST] = []  # values stored on an object (`self.transition = [state, action]`)
        returns: list[ast.AST] = []
        for child in walk(node, DEFINITIONS):
            if isinstance(child, ast.Return) and child.value is not None:
                returns.append(child.value)
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.func.attr in ("backward", "manual_backward", "step"):
                return  # it trains (or steps something): gradients may be wanted
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
                    and child.func.attr in ("append", "extend", "put", "push", "add"):
                return  # handed to a container: the tensor may be kept
            if isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                for target in targets:
                    if child.value is None:
                        continue  # (`x: int` assigns nothing)
                    if not isinstance(child, ast.AugAssign) and any(
                            isinstance(part, (ast.Attribute, ast.Subscript)) for part in ast.walk(target)):
                        kept.append(child.value)
                        continue
                    for name in (n for n in ast.walk(target) if isinstance(n, ast.Name)):
                        assigned.setdefault(name.id, []).append(child.value)
        if not returns or not all(_host_value(value, assigned) for value in returns):
            return  # (asked first: most functions return a tensor, or nothing)
        # the model runs once per call, outside any loop of the function (an action, a score)
        model_calls = [c for c in walk(node, (*DEFINITIONS, *STATEMENT_LOOPS, *COMPREHENSIONS))
                       if isinstance(c, ast.Call) and self._runs_model(c)]
        if not model_calls:
            return
        derived = _derived_names(model_calls, assigned)
        if not any(_mentions(value, model_calls, derived) for value in returns):
            return  # what it returns is not the model's output (a step counter)
        for value in kept:
            parts = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
            if any(_mentions(part, model_calls, derived) and not _host_value(part, assigned) for part in parts):
                return  # the model's tensor kept on an object: it may carry the graph on
        first = model_calls[0]
        if GradRegions.of(self.ctx).off(first):
            return
        self.report(first, self.message.format(model=ast.unparse(first.func)))

    visit_AsyncFunctionDef = visit_FunctionDef

    def _runs_model(self, call: ast.Call) -> bool:
        func = call.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last is None or last.startswith("__") and last != "__call__":
            return False  # `self.module.__repr__()`: text, no forward
        words = {last.lower(), last.lower().split("_")[-1]}  # `q_net`, `target_model`; not `load_model_file`
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute):
            inner = func.value.attr.lower()  # `self.policy_net.get_action(s)`
            words |= {inner, inner.split("_")[-1]}
        return bool(words & RUNNER_WORDS)

    docs = """
## What it does
Finds a function that runs a model (`self.actor(state)`, `self.q_net(s)`, `self.forward(s)`,
`policy(obs)`) with autograd on — no `torch.no_grad()` or `torch.inference_mode()` around it,
no `@torch.no_grad()` on it or on the functions that call it — and whose every `return` hands a
value to the host: `.cpu().numpy()`, `.item()`, `.tolist()` (also through a local name, a
tuple, or both branches of a conditional). The action selection of a reinforcement-learning
agent is the usual case: `select_action(state)`, called on every environment step.

## Why is this bad?
With autograd on, every operation of the forward records its node and keeps the tensors its
backward would need, until the result is dropped; the function then reads the result to the
host, where nothing can backpropagate through it. That is time and memory spent on every call
for a graph nobody uses — on every environment step of a rollout, for each of millions of
steps. Under `torch.no_grad()` the same forward records nothing.

Not reported: a function that calls `.backward()` or steps an optimizer, one that keeps a
tensor on an object (`self.hidden = h`) or hands it to a container (`buffer.append(...)`), one
that returns a tensor, `forward` itself.

## Where it reports
- **Reports** in code that runs every step and in a function whose callers the file does not
  show (an agent's `select_action`, called from a training script elsewhere).
- **Silent** in once-code, once per epoch (a few evaluation episodes), error paths and test code.

## Example
```python
import torch


class Agent:
    def select_action(self, state):
        state = torch.as_tensor(state, dtype=torch.float32, device="cuda").unsqueeze(0)
        return self.actor(state).cpu().numpy()[0]
```

## Use instead
```python
import torch


class Agent:
    @torch.no_grad()
    def select_action(self, state):
        state = torch.as_tensor(state, dtype=torch.float32, device="cuda").unsqueeze(0)
        return self.actor(state).cpu().numpy()[0]
```

## Fix safety
No automatic fix: the decorator changes what the function's other callers get if one of them
backpropagates through a tensor it returns in some other way.

## References
- https://pytorch.org/docs/stable/generated/torch.no_grad.html
"""

    bad_examples = [
        """
import torch

class Agent:
    def select_action(self, state):
        state = torch.FloatTensor(state.reshape(1, -1)).to("cuda")
        return self.actor(state).cpu().data.numpy().flatten()  # expect: PTL113

    def act(self, obs, eps):
        q = self.q_net(torch.as_tensor(obs, device="cuda"))  # expect: PTL113
        return q.argmax().item() if eps < 0.5 else 0

    def explore(self, state):
        return self.policy_net.sample(state).cpu().numpy()  # expect: PTL113
""",
        # through a local name assigned from either branch; the module's own forward
        """
import torch

class PolicyNetwork(torch.nn.Module):
    def get_action(self, state, deterministic):
        state = torch.FloatTensor(state).unsqueeze(0).to("cuda")
        mean, log_std = self.forward(state)  # expect: PTL113
        action = torch.tanh(mean + log_std.exp() * torch.randn_like(mean))
        action = torch.tanh(mean).detach().cpu().numpy()[0] if deterministic else action.detach().cpu().numpy()[0]
        return action
""",
        # the host copy (and the input) kept on the object for the replay buffer
        """
import torch

class DQNAgent:
    def select_action(self, state):
        if self.epsilon > 0.5:
            selected = self.env.action_space.sample()
        else:
            selected = self.dqn(torch.FloatTensor(state).to("cuda")).argmax()  # expect: PTL113
            selected = selected.detach().cpu().numpy()
        if not self.is_test:
            self.transition = [state, selected]
        self.last_action = selected
        return selected
""",
    ]

    good_examples = [
        # under no_grad (decorator, with block), or it returns a tensor
        """
import torch

class Agent:
    @torch.no_grad()
    def select_action(self, state):
        return self.actor(state).cpu().numpy()

    def act(self, state):
        with torch.no_grad():
            q = self.q_net(state)
        return q.argmax().item()

    def evaluate(self, state):
        return self.critic(state)

    def sample(self, state):
        action = self.actor(state)
        return action, action.detach().cpu().numpy()
""",
        # it trains, or keeps a tensor on the object or in a buffer
        """
import torch

class Agent:
    def update(self, batch):
        loss = self.critic(batch).mean()
        loss.backward()
        self.opt.step()
        return loss.item()

    def act(self, obs):
        out, self.hidden = self.policy(obs, self.hidden)
        return out.cpu().numpy()

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        text += self.module.__repr__()
        text += ")"
        return text

    def act_and_keep(self, obs):
        q = self.q_net(obs)
        self.transition = [obs, q]
        return q.argmax().item()

    def rollout(self, obs, memory):
        value = self.critic(obs)
        memory.append(value)
        return value.item()
""",
        # an annotation without a value assigns nothing
        """
import torch

class Agent:
    def act(self, state):
        action: torch.Tensor
        action = self.actor(state)
        return action
""",
        # a training pass through a helper, returning a counter; a helper named for a model file;
        # a model run in a loop of the function (a pass over data)
        """
import torch

def train_validate(model, loader, optimizer, train_step):
    for data in loader:
        _, loss = model(data["input"].cuda())
        optimizer_step(loss, optimizer)
        train_step += 1
    return train_step

def restore(opt, experiment):
    download_model_checkpoint(opt, experiment)
    return True

def features(net, loader):
    total = 0
    for x in loader:
        total += net(x.cuda()).sum()
    return total.item()
""",
        # a tensor in one branch; a result that is not the model's; a module's own forward; a
        # function named for loading a model's weights
        """
import torch

class Agent(torch.nn.Module):
    def act(self, state, flag):
        x = self.actor(state)
        return x.cpu().numpy() if flag else x

    def snapshot(self, state, path):
        out = self.model(state)
        torch.save(out, path)
        return True

    def forward(self, x):
        return self.net(x).cpu().numpy()

def weights(path):
    w = load_model_weights(path)
    return w.numpy()
""",
        # once-code: a function only `main()` calls, once
        """
import torch

def first_action(policy, obs):
    return policy(torch.as_tensor(obs)).cpu().numpy()

def main(policy, obs):
    print(first_action(policy, obs))

if __name__ == "__main__":
    main(torch.nn.Linear(4, 2), [0.0, 1.0, 2.0, 3.0])
""",
        # no model is run: torch and NumPy functions
        """
import numpy as np
import torch

def to_numpy(x):
    return torch.sigmoid(x).cpu().numpy()

def score(x):
    return np.mean(x).item()
""",
    ]
