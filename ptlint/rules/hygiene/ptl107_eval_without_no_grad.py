"""PTL107 eval-without-no-grad: an evaluation loop that records the autograd graph it never uses."""

from __future__ import annotations

import ast
import re

from ptlint.engine.rule import CALLED, ONCE, PER_STEP, Rule
from ptlint.semantics.autograd import GradRegions, gradient_users, graph_wanted
from ptlint.semantics.nodes import (
    DEFINITIONS,
    argument,
    dotted,
    is_constant,
    name_words,
)
from ptlint.semantics.project import imported_sources
from ptlint.semantics.values import MODEL_WORDS
from ptlint.semantics.where import iterable_is_data


def _mode_switch(call: ast.AST) -> tuple[str, str] | None:
    """(dotted receiver, "eval" | "train") for `m.eval()`, `m.train()`, `m.train(False)`."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return None
    receiver = dotted(call.func.value)
    if receiver is None:
        return None
    if call.func.attr == "eval" and not call.args and not call.keywords:
        return receiver, "eval"
    if call.func.attr == "train" and len(call.args) + len(call.keywords) <= 1:
        mode = call.args[0] if call.args else call.keywords[0].value if call.keywords else None
        if call.keywords and call.keywords[0].arg != "mode":
            return None
        return receiver, "eval" if is_constant(mode, False) else "train"
    return None



# Methods that run a model's layers like its forward (`model.encode(img)` of a VQ-VAE or an
# autoencoder): not `generate`, which disables gradients itself in the libraries that offer it.
FORWARD_METHODS = {"forward", "encode", "decode", "embed", "extract_features", "forward_features", "predict",
                   "infer"}
CHAIN_METHODS = ("eval", "train", "to", "cuda", "cpu", "float", "half", "bfloat16", "requires_grad_")


def _counts(loop: ast.AST) -> bool:
    """`for i in range(n_classes):`: a loop that counts something other than data or steps (a
    few latent samples for an image grid), not an evaluation over batches."""
    source = getattr(loop, "iter", None)
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "enumerate" \
            and source.args:
        source = source.args[0]
    return isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "range" \
        and not iterable_is_data(loop) and not _indexes_data(loop)


DATA_WORDS = {"dataset", "data", "loader", "testset", "valset", "test_set", "val_set", "samples"}


def _indexes_data(loop: ast.AST) -> bool:
    """`for i in range(num_images): im = dataset.pull_item(i)` (or `dataset[i]`): a pass over a
    dataset by index."""
    target = loop.target.id if isinstance(getattr(loop, "target", None), ast.Name) else None
    if target is None:
        return False
    for node in ast.walk(loop):
        holder = node.value if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) \
            and node.slice.id == target else node.func.value if isinstance(node, ast.Call) \
            and isinstance(node.func, ast.Attribute) and any(isinstance(a, ast.Name) and a.id == target
                                                              for a in node.args) else None
        if holder is not None and set(name_words(holder)) & DATA_WORDS:
            return True
    return False


def _builds(loop: ast.AST, model: str) -> bool:
    """`for name in specs: net = build(name); net.eval(); net(x)`: each iteration builds a new model
    and runs it once (a smoke test over configurations), not an evaluation over batches."""
    return any(isinstance(node, ast.Assign) and any(dotted(target) == model for target in node.targets)
               and not (isinstance(node.value, ast.Call) and _receiver(node.value) == model)
               for statement in getattr(loop, "body", []) for node in ast.walk(statement))


def _receiver(node: ast.AST) -> str | None:
    """The model a chain of module methods starts from: `sampler.eval()` -> "sampler"."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CHAIN_METHODS:
        node = node.func.value
    return dotted(node)


def _freezes(value: ast.AST) -> bool:
    """A chain of module methods holding `.requires_grad_(False)`."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr == "requires_grad_" and value.args and is_constant(value.args[0], False):
            return True
        value = value.func.value
    return False

# `Variable(x, volatile=True)`: how PyTorch before 0.4 turned gradients off; ignored since (a warning)
VOLATILE_MESSAGE = "`volatile=True` disables nothing since PyTorch 0.4: `{model}` is in eval mode and every call in " \
                   "this loop records an autograd graph; wrap the loop in `torch.no_grad()`"
VOLATILE_LOOP_MESSAGE = "`volatile=True` disables nothing since PyTorch 0.4: this loop never calls `.backward()`, " \
                        "yet every call of `{model}` in it records an autograd graph; wrap the loop in `torch.no_grad()`"
VOLATILE_HELP = "Drop `volatile=True` (and `Variable`) and wrap the loop in `with torch.no_grad():`."


def _a_model(name: str | None) -> bool:
    """`self` (a model's own method: `self.predict(...)`), or a name that says it holds one."""
    return name is not None and (name == "self" or bool(set(re.split(r"[._]", name.lower())) & MODEL_WORDS))


def _volatile_variable(loop: ast.AST) -> ast.Call | None:
    """The first call in the loop's body passing `volatile=True` (`Variable(x, volatile=True)`)."""
    found = [node for statement in getattr(loop, "body", []) for node in ast.walk(statement)
             if isinstance(node, ast.Call) and any(k.arg == "volatile" and is_constant(k.value, True)
                                                   for k in node.keywords)]
    return min(found, key=lambda call: (call.lineno, call.col_offset), default=None)


def _built_from_a_class_minding_gradients(model: str, ctx) -> bool:
    """`model` (`self.model`, `net`) is built, somewhere in this file, from a class of this file or
    of a project module it imports (ptlint.semantics.project) that decides about gradients itself:
    one that calls `torch.autograd.grad` in a method (`self.model = MtlLearner(args)`: MAML's fast
    weights, a meta-learner's inner loop, an SDF's eikonal term), whose forward needs the graph in
    evaluation too; or one whose `forward` turns gradients off (`with torch.no_grad():` for
    `mode == "inference"`, `@torch.no_grad()` on it), which the loop's calls may rely on."""
    classes = _classes_minding_gradients(ctx)
    if not classes:
        return False
    built = re.findall(rf"(?<![\w.]){re.escape(model)}\s*=\s*(?:[\w.]+\.)?(\w+)\s*\(", ctx.source.text)
    return bool(set(built) & classes)


DIFFERENTIATES = re.compile(r"(?:autograd\.grad|torch\.func\.grad)\s*\(")
GRADIENTS_OFF = re.compile(r"\b(?:no_grad|inference_mode)\s*\(|set_grad_enabled\s*\(\s*False")
FORWARD = re.compile(r"^(\s+)(?:@[^\n]*\n\1)*def forward\s*\(", re.M)


def _classes_minding_gradients(ctx) -> set[str]:
    """The top-level classes, in this file and the project modules it imports, whose body calls
    `autograd.grad(...)` or `torch.func.grad(...)`, or whose `forward` (with its decorators) turns
    gradients off."""
    key = "classes-minding-gradients"
    if key not in ctx.memo:
        found: set[str] = set()
        for text in (ctx.source.text, *(f.text for f in imported_sources(ctx))):
            if "grad" not in text and "inference_mode" not in text or "class " not in text:
                continue
            for block in re.split(r"\n(?=class )", text)[1:]:  # each top-level class to the next top-level line
                body = re.split(r"\n(?=\S)", block, maxsplit=1)[0]
                forward = FORWARD.search(body)
                if forward is not None:  # the forward method, to the next line as little indented
                    indent = forward.group(1)
                    method = re.split(rf"\n(?={indent}\S)(?!{indent}[)\]}}])", body[forward.end():], maxsplit=1)[0]
                    method = body[forward.start():forward.end()] + method
                if DIFFERENTIATES.search(body) or forward is not None and GRADIENTS_OFF.search(method):
                    found.add(re.match(r"class\s+(\w+)", block).group(1))
        ctx.memo[key] = found
    return ctx.memo[key]


def _positional(function: ast.AST) -> list[str]:
    """The parameters a call may pass by position, in order."""
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args)]


class EvalWithoutNoGrad(Rule):
    code = "PTL107"
    name = "eval-without-no-grad"
    message = "`{model}` is in eval mode and this loop never calls `.backward()`, but nothing disables " \
              "gradients: every call records an autograd graph; wrap the loop in `torch.no_grad()` " \
              "or `torch.inference_mode()`"
    help = "Wrap the evaluation loop in `with torch.no_grad():` or `with torch.inference_mode():`."
    # not once per epoch (a sample grid, a test batch in the epoch loop): a graph of one batch; but a
    # pass over data in once-code (a script's test pass) records a graph for every batch of it
    contexts = frozenset({PER_STEP, CALLED, ONCE})
    cold = False
    triggers = (".eval()", ".train(False)", ".train(mode=False)", "volatile")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        # scope -> (receiver, mode) of its `.eval()` / `.train()` calls so far: the traversal
        # meets them in source order, so a model call sees the switches made before it
        self._switches: dict[int, list[tuple[str, str]]] = {}

    def visit_Call(self, node: ast.Call) -> None:
        switch = _mode_switch(node)
        if switch is not None:
            scope = self._scope()
            if scope is not None:
                self._switches.setdefault(id(scope), []).append(switch)
        if not self.ctx.loops:
            return
        loop = self.ctx.loops[-1]
        volatile = self._volatile_variable(loop)
        called = self._called_model(node)
        model = called
        if model is None or self._mode_before(model, node) != "eval":
            model = self._model_in_helper(node) or (called if volatile is not None and _a_model(called) else None)
        if model is None:
            return
        key = ("ptl107-loop", id(loop))
        if key in self.ctx.memo:
            return  # one finding per loop, at its first model call
        in_eval = self._mode_before(model, node) == "eval"
        if not in_eval and volatile is None:
            return  # (inputs made volatile say the loop meant gradients off, in eval mode or not)
        if _counts(loop) or _builds(loop, model) or graph_wanted(loop, self.ctx) or self._frozen(model) \
                or _built_from_a_class_minding_gradients(model, self.ctx):
            return  # (a model that differentiates in its forward needs the graph to evaluate)
        if GradRegions.of(self.ctx).off(node):
            return
        self.ctx.memo[key] = True
        if volatile is not None:  # the line to change: where gradients were meant to go off
            message = VOLATILE_MESSAGE if in_eval else VOLATILE_LOOP_MESSAGE
            self.report(volatile, message.format(model=model), help=VOLATILE_HELP)
        else:
            self.report(node, self.message.format(model=model))

    def keep(self, node: ast.AST, where) -> bool:
        """In once-code, only a loop that walks data (a test pass, an `evaluate()` only `main()`
        calls): each of its batches records a graph; a loop over settings there is set-up. Not
        the one test pass after the training loop of the same function or script: one pass
        beside the whole run, with no more memory than a training step held."""
        if where.context != ONCE:
            return True
        placement = self.ctx.model.placement(node)
        return placement.data_pass and not placement.final_pass

    def _volatile_variable(self, loop: ast.AST) -> ast.Call | None:
        """`_volatile_variable(loop)`, once per loop (every call in the loop asks), and only in a
        file that spells `volatile` at all."""
        if "volatile" not in self.ctx.source.text:
            return None
        key = ("ptl107-volatile", id(loop))
        if key not in self.ctx.memo:
            self.ctx.memo[key] = _volatile_variable(loop)
        return self.ctx.memo[key]

    def _called_model(self, call: ast.Call) -> str | None:
        """`model(x)` / `model.forward(x)` / `model.encode(x)` -> "model"; `self(x)` -> "self"."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in FORWARD_METHODS:
            func = func.value
        name = dotted(func)
        if name is None or (name != "self" and self.ctx.qualname(func) is not None):
            return None
        return name

    def _model_in_helper(self, call: ast.Call) -> str | None:
        """`self._process_one_batch(x)` in the loop, where that method of the class (or a function
        of the file, called by name) runs a model this scope switched to eval mode
        (`self.model(...)`) and wants no graph itself: the model the loop runs through it."""
        func = call.func
        helper = next(iter(self.ctx.defs_called(func)), None)
        if helper is None or helper is self.ctx.function or gradient_users(helper, self.ctx):
            return None
        params = _positional(helper)[1 if isinstance(func, ast.Attribute) else 0:]  # (a method's `self`)
        regions = GradRegions.of(self.ctx)
        for inner in ast.walk(helper):
            if not isinstance(inner, ast.Call):
                continue
            model = self._called_model(inner)
            if model is None or model == "self" or regions.off(inner):
                continue
            if model in params:  # the helper's parameter: the model this call passes there
                arg = argument(call, params.index(model), model)
                model = dotted(arg) if arg is not None else None
            if model is not None and self._mode_before(model, call) == "eval":
                return model
        return None

    def _scope(self) -> ast.AST | None:
        """The function, lambda or module whose body runs this call; None in a class body."""
        for node in reversed(self.ctx.stack):
            if isinstance(node, DEFINITIONS):
                return None if isinstance(node, ast.ClassDef) else node
        return self.ctx.tree

    def _mode_before(self, model: str, call: ast.Call) -> str | None:
        """The mode the last `.eval()` / `.train()` of `model` before `call`, in its scope, set."""
        scope = self._scope()
        switches = self._switches.get(id(scope), []) if scope is not None else []
        modes = [mode for receiver, mode in switches if receiver == model]
        return modes[-1] if modes else self._mode_from_callers(model)

    def _mode_from_callers(self, model: str) -> str | None:
        """"eval" where `model` is a parameter of the function around the loop and every call of
        the function in the file passes a model switched to eval mode before the call
        (`model.eval()` ... `extract(loader, model)`)."""
        function = self.ctx.functions[-1] if self.ctx.functions else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        params = _positional(function)
        if model not in params:
            return None
        index = params.index(model)
        calls = [c for c in self.ctx.calls() if isinstance(c.func, ast.Name) and c.func.id == function.name]
        modes = set()
        for call in calls:
            arg = argument(call, index, model)
            name = dotted(arg) if arg is not None else None
            if name is None:
                return None
            scope = self.ctx.enclosing_function(call) or self.ctx.tree
            switches = sorted((node.lineno, switch[1]) for node in ast.walk(scope)
                              if isinstance(node, ast.Call) and node.lineno < call.lineno
                              and (switch := _mode_switch(node)) is not None and switch[0] == name)
            modes.add(switches[-1][1] if switches else None)
        return "eval" if modes == {"eval"} else None

    def _frozen(self, model: str) -> bool:
        """`model.requires_grad_(False)` or `for p in model.parameters(): p.requires_grad = False`
        anywhere in the file: its calls record nothing."""
        key = ("ptl107-frozen", model)
        if key not in self.ctx.memo:
            frozen = False
            for node in ast.walk(self.ctx.tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr == "requires_grad_" and _receiver(node.func.value) == model \
                        and node.args and is_constant(node.args[0], False):
                    frozen = True
                elif isinstance(node, ast.Assign) and any(dotted(t) == model for t in node.targets) \
                        and _freezes(node.value):
                    frozen = True  # `sampler = copy.deepcopy(G).eval().requires_grad_(False).to(device)`
                elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
                        and isinstance(node.iter.func, ast.Attribute) \
                        and node.iter.func.attr in ("parameters", "named_parameters") \
                        and dotted(node.iter.func.value) == model \
                        and any(isinstance(n, ast.Attribute) and n.attr in ("requires_grad", "requires_grad_")
                                for n in ast.walk(node)):
                    frozen = True
                if frozen:
                    break
            self.ctx.memo[key] = frozen
        return self.ctx.memo[key]

    docs = """
## What it does
Finds a loop that calls a model after `model.eval()` (or `model.train(False)`) in the same
function, with no `torch.no_grad()` / `torch.inference_mode()` around it and no `.backward()`;
also, without `.eval()`, such a loop that wraps its inputs in `Variable(x, volatile=True)` and
calls a model (`net(x)`, `self.predict(x)`): PyTorch 0.3's way to turn gradients off, which 0.4
made a no-op.
A model passed in as a parameter counts as in eval mode where every call of the function in the
file passes one switched to eval mode before the call (`model.eval()` in `main()`, then
`extract(loader, model)`). Calling the model means `model(x)`, `model.forward(x)`, and the
methods that run its layers the same way (`encode`, `decode`, `embed`, `forward_features`,
`extract_features`, `predict`, `infer`), also through a method of the class or a function of
the file that the loop calls and that runs the model (`pred = self._process_one_batch(x)`,
where that method calls `self.model(...)`), unless that helper switches gradients off itself
(`@torch.no_grad()`, `with torch.no_grad():` around its call of the model) or wants them. A loop
over `range(n)` that reads a dataset by its index (`dataset[i]`, `dataset.pull_item(i)`) is a
pass over data.
"No `.backward()`" means none in the loop, and none in the function outside loops of their own
(the training loop before a validation loop does not count). Reported at the first call of the
model in the loop; where the loop wraps its inputs in `Variable(x, volatile=True)`, PyTorch 0.3's
way to turn gradients off, which has done nothing since 0.4, at that call instead: that is the
line to replace.

## Why is this bad?
`model.eval()` only switches layers such as dropout and batch norm to inference behaviour; it
does not stop autograd. Every forward pass still records a graph and keeps each layer's saved
activations until the outputs are dropped — several times the memory of the outputs, and time
spent recording. In an evaluation loop nothing ever calls `.backward()`, so all of that is
wasted; kept outputs or losses (`preds.append(out)`) keep their graphs alive for the whole loop
(see PTL103). `torch.inference_mode()` (or `torch.no_grad()`) skips the recording.

Not reported, because gradients are already off or wanted:
- under `with torch.no_grad():`, `with torch.inference_mode():`,
  `with torch.set_grad_enabled(False):` (or `set_grad_enabled(flag)`, which the code sets
  for its evaluation mode) around the loop or the call, in a function decorated
  with `@torch.no_grad()` / `@torch.inference_mode()`, in a function whose callers in the file
  all run under one of those, after `torch.set_grad_enabled(False)`, and in Lightning's
  `validation_step` / `test_step` / `predict_step` (Lightning disables gradients there);
- a loop or function that calls `.backward()`, steps an optimizer, calls
  `torch.autograd.grad`, or sets `requires_grad` (saliency maps, adversarial examples need the
  graph);
- a model frozen in the file (`model.requires_grad_(False)`, or a loop setting
  `p.requires_grad = False` over its parameters);
- a model switched back with `model.train()` before the loop;
- a model built from a class (of the file, or of a project module it imports) whose `forward`
  turns gradients off itself (`with torch.no_grad():` for `mode == "inference"`, or
  `@torch.no_grad()` on it), or whose methods call `torch.autograd.grad` (a meta-learner).

## Where it reports
- **Reports** at an evaluation loop over data wherever it runs: in a function (whose callers
  the file may not show), in `main()` or at a script's top level, and inside an epoch loop (a
  validation loop over its loader).
- **Silent** in once-code (set-up such as `__init__`, loops over settings or sizes there), code
  that runs once per epoch outside such a loop (a test batch run in the epoch loop itself), a
  loop that counts something else (`for i in range(n_classes):` for an image grid), error paths
  (an `except` body, a branch that raises, or only warns or logs), and test code.

## Example
```python
import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(-1) == y).sum()
    return correct
```

## Use instead
```python
import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    with torch.inference_mode():
        for x, y in val_loader:
            correct += (model(x).argmax(-1) == y).sum()
    return correct
```

## Fix safety
No automatic fix: wrapping the loop changes its indentation, and code in the loop that does
need gradients (a hidden `torch.autograd.grad` in a helper) would break; decorate the function
with `@torch.no_grad()` or add the `with` block by hand.

## References
- https://pytorch.org/docs/stable/notes/autograd.html#locally-disabling-gradient-computation
- https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
"""

    bad_examples = [
        # a model class that turns gradients off in another method than forward (its EMA update)
        """
import torch
from torch import nn

class Student(nn.Module):
    def forward(self, x):
        return self.net(x)

    def update_teacher(self):
        with torch.no_grad():
            self.teacher.copy_(self.net.weight)

model = Student().cuda()
model.eval()
for x, y in loader:
    out = model(x.cuda())  # expect: PTL107
""",
        # inputs made volatile (PyTorch 0.3's gradients off) without `.eval()`: the loop meant no graph
        """
import torch
from torch.autograd import Variable

def validate(net, loader):
    total = 0
    for images, metas in loader:
        metas = metas.numpy()
        images = Variable(images.cuda(), volatile=True)  # expect: PTL107
        outputs = net(images)
        total += outputs.sum()
    return total
""",
        # a test script's one pass (nothing trained before it in the script), and a pass that
        # runs before the training loop rather than after it
        """
import torch

classifier = build_classifier().cuda()
classifier.load_state_dict(torch.load("model.pth"))
classifier.eval()
for points, target in testdataloader:
    pred = classifier(points.cuda())  # expect: PTL107
    print((pred.argmax(1) == target.cuda()).sum().item())
""",
        """
import torch

model = build().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.eval()
for x, y in test_loader:
    baseline = model(x.cuda())  # expect: PTL107
model.train()
for x, y in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    optimizer.step()
""",
        # the same file evaluating a backbone that does not differentiate
        """
import torch
from torch import nn

class Learner(nn.Module):
    def forward(self, support, labels, query):
        grads = torch.autograd.grad(self.loss(support, labels), self.head.parameters())
        return self.adapted(query, grads)

class Trainer:
    def __init__(self, args):
        self.backbone = Conv4().cuda()

    def features(self, loader):
        self.backbone.eval()
        for x, y in loader:
            feats = self.backbone(x.cuda())  # expect: PTL107
""",
        # PyTorch 0.3's way to turn gradients off, ignored since 0.4: reported where it was meant
        """
import torch
from torch.autograd import Variable

def validate(val_loader, model, criterion):
    model.eval()
    for i, (input, target) in enumerate(val_loader):
        target = target.cuda(non_blocking=True)
        input_var = Variable(input, volatile=True)  # expect: PTL107
        target_var = Variable(target, volatile=True)
        output = model(input_var)
        loss = criterion(output, target_var)
""",
        # the loop runs the model through a method of the class, and a pass over a dataset by index
        """
import torch

class Experiment:
    def _process_one_batch(self, batch_x, batch_y):
        out = self.model(batch_x.cuda())
        return out, batch_y.cuda()

    def vali(self, loader, criterion):
        self.model.eval()
        losses = []
        for batch_x, batch_y in loader:
            pred, true = self._process_one_batch(batch_x, batch_y)  # expect: PTL107
            losses.append(criterion(pred, true).item())
        self.model.train()
        return sum(losses) / len(losses)

def forward_batch(m, x):
    return m(x.cuda())

def evaluate(net, loader):
    net.eval()
    for x in loader:
        print(forward_batch(net, x).shape)  # expect: PTL107

def test_net(net, dataset):
    num_images = len(dataset)
    for i in range(num_images):
        im, gt = dataset.pull_item(i)
        detections = net(im.unsqueeze(0).cuda())  # expect: PTL107
        print(detections.shape)

if __name__ == "__main__":
    net = torch.load("ssd.pt").cuda()
    net.eval()
    test_net(net, torch.utils.data.TensorDataset())
""",
        # the model is put in eval mode by the caller, and the helper's loop runs its encoder
        """
import torch

def extract(loader, model, device):
    codes = []
    for img, _ in loader:
        _, ids = model.encode(img.to(device))  # expect: PTL107
        codes.append(ids.cpu())
    return codes

if __name__ == "__main__":
    model = torch.load("vqvae.pt").to("cuda")
    model.eval()
    extract(torch.utils.data.DataLoader([]), model, "cuda")
""",
        # a frozen teacher does not make the student frozen; `train(mode=False)` is eval mode
        """
import torch

def distill(teacher, student, loader):
    for p in teacher.parameters():
        p.requires_grad = False
    teacher.eval()
    for x in loader:
        teacher(x)
    student.train(mode=False)
    for x in loader:
        student(x)  # expect: PTL107
""",
        # at module level, as in a script, and in a lambda
        """
import torch

model = torch.nn.Linear(2, 2)
model.eval()
for x in [torch.ones(2)]:
    print(model(x))  # expect: PTL107

predict = lambda net, xs: (net.eval(), [net(x) for x in xs])  # expect: PTL107
""",
        """
import torch

def evaluate(model, loader):
    model.eval()
    correct = 0
    for x, y in loader:
        out = model(x)  # expect: PTL107
        correct += (out.argmax(-1) == y).sum()
        again = model(x)
    return correct
""",
        # `self.model`, `.train(False)`, a comprehension, an eval loop inside the epoch loop
        """
import torch as T

class Runner:
    def predict(self, batches):
        self.model.train(False)
        return [self.model(b) for b in batches]  # expect: PTL107

    def fit(self, train_loader, val_loader, opt, epochs):
        for epoch in range(epochs):
            self.model.train()
            for x, y in train_loader:
                loss = self.model(x).sum()
                loss.backward()
                opt.step()
            self.model.eval()
            for x, y in val_loader:
                print(self.model.forward(x).mean())  # expect: PTL107
""",
        # a module calling itself, in a loop of once-code
        """
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        return x

    def predict_all(self, xs):
        self.eval()
        outs = []
        for x in xs:
            outs.append(self(x))  # expect: PTL107
        return outs

def main(model, loader):
    model.eval()
    while True:
        batch = next(loader)
        model(batch)  # expect: PTL107

if __name__ == "__main__":
    main(Net(), iter([]))
""",
    ]

    good_examples = [
        # volatile inputs in a loop that trains, and beside calls of no model
        """
import torch
from torch.autograd import Variable

def train(net, loader, optimizer, stats):
    for images, target in loader:
        target = Variable(target.cuda(), volatile=True)
        loss = net(Variable(images.cuda())).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    for values in stats:
        record = Variable(values, volatile=True)
        print(record.numpy(), values.mean())
""",
        # the one test pass a training script runs after its epochs: one pass beside the run
        """
import torch

classifier = build_classifier().cuda()
optimizer = torch.optim.Adam(classifier.parameters())
for epoch in range(250):
    for points, target in dataloader:
        points, target = points.cuda(), target.cuda()
        optimizer.zero_grad()
        classifier.train()
        loss = torch.nn.functional.nll_loss(classifier(points), target)
        loss.backward()
        optimizer.step()

total_correct = 0
for points, target in testdataloader:
    points, target = points.cuda(), target.cuda()
    classifier = classifier.eval()
    pred = classifier(points)
    total_correct += (pred.argmax(1) == target).sum()
print(total_correct.item())
""",
        # a meta-learner whose forward adapts fast weights with `torch.autograd.grad`: evaluating
        # it needs the graph
        """
import torch
from torch import nn

class Learner(nn.Module):
    def forward(self, support, labels, query):
        loss = nn.functional.cross_entropy(self.head(support), labels)
        grads = torch.autograd.grad(loss, self.head.parameters())
        return self.adapted(query, grads)

class Trainer:
    def __init__(self, args):
        self.model = Learner(args).cuda()

    def evaluate(self, loader):
        self.model.eval()
        for support, labels, query in loader:
            logits = self.model(support.cuda(), labels.cuda(), query.cuda())
""",
        # a model whose forward turns gradients off itself for inference (SPADE's `mode=`), and one
        # whose forward is decorated so
        """
import torch
from torch import nn

class Pix2Pix(nn.Module):
    def forward(self, data, mode):
        if mode == "generator":
            return self.generator_loss(data)
        elif mode == "inference":
            with torch.no_grad():
                fake = self.generate(data)
            return fake

class Encoder(nn.Module):
    @torch.no_grad()
    def forward(self, x):
        return self.net(x)

model = Pix2Pix(opt)
encoder = Encoder()
model.eval()
encoder.eval()
for data in loader:
    generated = model(data, mode="inference")
    codes = encoder(data["image"].cuda())
""",
        # helpers that switch gradients off themselves or want the graph, and a loop over sizes
        """
import torch

@torch.no_grad()
def generate(model, idx, steps):
    for _ in range(steps):
        idx = torch.cat([idx, model(idx)[:, -1:].argmax(-1)], 1)
    return idx

def run_model(img, model):
    with torch.no_grad():
        return model(img).argmax(1)

def attack(model, x, y):
    x = x.clone().requires_grad_(True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    return x.grad.sign()

def main(model, loader, prompt):
    model.eval()
    for img, y in loader:
        generate(model, prompt, 10)
        run_model(img.cuda(), model)
        attack(model, img.cuda(), y.cuda())
    for size in range(1, 4):
        model(torch.zeros(size, 3, device="cuda"))
""",
        # a helper whose callers do not all pass a model in eval mode, and one called before the
        # model is switched to eval mode
        """
import torch

def extract(loader, model):
    return [model.encode(img.cuda()) for img in loader]

def run(loader, model):
    outs = []
    for img in loader:
        outs.append(model(img.cuda()))
    return outs

def main(loader, model, other):
    run(loader, model)
    model.eval()
    extract(loader, model)
    extract(loader, other)
""",
        # a smoke test over configurations: each iteration builds a model and runs it once
        """
import torch

specification = {"small": 128, "base": 256}

if __name__ == "__main__":
    for name in specification:
        net = build(name, pretrained=True)
        net.eval()
        net(torch.randn(4, 3, 224, 224))
        print(name, sum(p.numel() for p in net.parameters()))
""",
        # a project's own decorators that turn gradients off
        """
import torch

def nograd(f):
    def wrapped(*args, **kwargs):
        with torch.no_grad():
            return f(*args, **kwargs)
    return wrapped

@nograd
def predict(model, loader):
    model.eval()
    return [model(x) for x in loader]

@utils.smart_inference_mode()
def evaluate(model, loader):
    model.eval()
    for x in loader:
        model(x)
""",
        # once per epoch in the epoch loop: a test batch, and a grid of a few samples per class
        """
import torch

for epoch in range(n_epochs):
    for imgs in dataloader:
        loss = generator(imgs).mean()
        loss.backward()
        optimizer.step()
    generator.eval()
    recon = generator(test_imgs)
    for i in range(n_classes):
        grid = generator(latents[i])
    generator.train()
""",
        """
import copy
import torch


def path_length(G, loader, device):
    sampler = copy.deepcopy(G).eval().requires_grad_(False).to(device)
    dist = []
    for z in loader:
        dist.append(sampler(z.to(device)))
    return dist


def evaluate(model, loader, device):
    model.eval().requires_grad_(False)
    for x in loader:
        model(x.to(device))
""",
        # the switch is in a nested function, a lambda, a class body or a later statement: not run
        # before this loop
        """
import torch

class Holder:
    model = make_model()
    model.eval()
    outputs = [model(x) for x in loader]

def evaluate(model, loader):
    def freeze():
        model.eval()
    to_eval = lambda: model.eval()
    for x in loader:
        model(x)
    model.eval()
""",
        # gradients off: a with block, a decorator (called or bare), a caller, set_grad_enabled
        """
import torch
from torch import no_grad, inference_mode

def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        for x in loader:
            model(x)
    for x in loader:
        with inference_mode():
            model(x)

@torch.inference_mode()
def predict(model, loader):
    model.eval()
    return [model(x) for x in loader]

@no_grad
def score(model, loader):
    model.eval()
    for x in loader:
        model(x)

def _loop(model, loader):
    for x in loader:
        model(x)

def run(model, loader):
    model.eval()
    with torch.no_grad():
        _loop(model, loader)

def helper(net, loader):
    net.eval()
    for x in loader:
        net(x)

def outer(net, loader):
    with torch.set_grad_enabled(False):
        helper(net, loader)

def flagged(model, loader, train):
    model.eval()
    with torch.set_grad_enabled(train):
        for x in loader:
            model(x)

def switched_off(model, loader):
    torch.set_grad_enabled(False)
    model.eval()
    for x in loader:
        model(x)
""",
        # gradients wanted: backward, autograd.grad, requires_grad
        """
import torch

def finetune_frozen_bn(model, loader, opt):
    model.eval()
    for x, y in loader:
        loss = model(x).sum()
        loss.backward()
        opt.step()

def saliency(model, images):
    model.eval()
    maps = []
    for x in images:
        x.requires_grad_()
        score = model(x).max()
        maps.append(torch.autograd.grad(score, x)[0])
    return maps

def accumulate(model, chunks):
    model.eval()
    outs = [model(c) for c in chunks]
    torch.stack(outs).sum().backward()
""",
        # frozen models; a model switched back to training; no eval at all; Lightning hooks
        """
import torch

def distill(teacher, student, loader, opt):
    teacher.eval()
    teacher.requires_grad_(False)
    for x in loader:
        t = teacher(x)

def frozen(encoder, loader):
    for p in encoder.parameters():
        p.requires_grad = False
    encoder.eval()
    for x in loader:
        encoder(x)

def toggled(model, loader):
    model.eval()
    model.train()
    for x in loader:
        model(x)

def plain(model, loader):
    for x in loader:
        model(x)

class Lit:
    def validation_step(self, batch, batch_idx):
        self.model.eval()
        return [self.model(x) for x in batch]
""",
        # once-code set-up and the error path
        """
import torch

class Wrapper:
    def __init__(self, model, samples):
        model.eval()
        self.stats = [model(s) for s in samples]

def check(model, loader):
    model.eval()
    for x in loader:
        if x is None:
            raise ValueError(f"bad batch, model says {model(x)}")
""",
    ]
