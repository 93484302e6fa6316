"""The project model (ptlint.semantics.project, ptlint.run.project) through the real command:
projects of several files in tmp_path, each a case written from issue 23's descriptions, checked
from inside the project. Each file line that must carry a finding ends with `# expect: CODE`
(tests/helpers.py); every other line must carry none of the selected codes."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from helpers import expected_markers

from ptlint.front import cli


def write(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def check(root: Path, monkeypatch, capsys, select: str, *extra: str) -> list[dict]:
    monkeypatch.chdir(root)
    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    code = cli.run(["check", "--output-format", "json", "--select", select, *extra, "."])
    out = capsys.readouterr().out
    assert code in (0, 1)
    return json.loads(out)


def found(findings: list[dict]) -> set[tuple[str, int, str]]:
    return {(f["path"], f["line"], f["code"]) for f in findings}


def markers(root: Path, select: str) -> set[tuple[str, int, str]]:
    return {m for m in expected_markers(root) if m[2] in select.split(",")}


TRAIN_CALLS_HELPER = """
    import torch
    from helpers import log_metrics


    def main():
        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader():
            loss = model(batch.cuda()).sum()
            loss.backward()
            opt.step()
            log_metrics(loss)


    def loader():
        return [torch.randn(8, 4) for _ in range(10)]


    if __name__ == "__main__":
        main()
"""


def test_a_helper_in_another_module_called_per_step_is_reported_with_its_chain(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": TRAIN_CALLS_HELPER, "helpers.py": """
        import torch


        def log_metrics(loss):
            print(loss.item())  # expect: PTL101
    """})
    findings = check(tmp_path, monkeypatch, capsys, "PTL101")
    assert found(findings) == markers(tmp_path, "PTL101")
    [finding] = findings
    assert finding["context"] == {"where": "per-step", "via": [
        {"path": "train.py", "line": 8, "why": "for batch in loader()"},
        {"path": "train.py", "line": 12, "why": "calls `log_metrics`"}]}


@pytest.mark.parametrize("cached", ["@functools.lru_cache(maxsize=None)", "@cache", ""])
def test_a_cached_helper_in_another_module_runs_once_per_new_argument(tmp_path, monkeypatch, capsys, cached):
    """A per-step forward calls a helper of another file: with `@lru_cache` / `@cache` its body
    builds the table once for each new length (silent); without, every step (reported)."""
    write(tmp_path, {"tables.py": f"""
        import functools
        from functools import cache

        import torch


        {cached}
        def positions(n, device):
            return torch.arange(n).to(device){"" if cached else "  # expect: PTL201"}
    """, "model.py": """
        import torch
        from tables import positions


        class Net(torch.nn.Module):
            def forward(self, x):
                return x + positions(x.shape[1], x.device)
    """, "train.py": """
        import torch
        from model import Net

        net = Net().cuda()
        for x in loader:
            net(x.cuda()).sum().backward()
    """})
    findings = check(tmp_path, monkeypatch, capsys, "PTL201")
    assert found(findings) == markers(tmp_path, "PTL201")
    assert len(findings) == (0 if cached else 1)


@pytest.mark.parametrize("per_step", [True, False])
def test_a_helper_class_built_per_step_in_another_module_runs_its_init_per_step(tmp_path, monkeypatch, capsys,
                                                                                per_step):
    """`mask = CausalMask(b, n, device=...)` in a forward: the class's `__init__` (in another file)
    runs every step, with the chain; built once in the model's `__init__`, it runs once."""
    built = "mask = CausalMask(x.shape[0], 4, device=x.device)" if per_step else "mask = self.mask"
    write(tmp_path, {"masking.py": f"""
        import torch


        class CausalMask:
            def __init__(self, b, n, device="cpu"):
                self.mask = torch.triu(torch.ones(b, 1, n, n), diagonal=1).to(device){"  # expect: PTL201" if per_step else ""}
    """, "model.py": f"""
        import torch
        from masking import CausalMask


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.mask = CausalMask(8, 4, device="cuda")

            def forward(self, x):
                {built}
                return x.masked_fill(mask.mask.bool(), 0.0)
    """})
    findings = check(tmp_path, monkeypatch, capsys, "PTL201")
    assert found(findings) == markers(tmp_path, "PTL201")
    if per_step:
        assert findings[0]["context"]["via"][-1] == {"path": "model.py", "line": 11, "why": "calls `CausalMask`"}


STAR_HELPERS = """
    import torch


    def per_class(n_classes, device):
        for c in range(1, n_classes):
            hits = torch.zeros(3).to(device){expect}
        return hits
"""


@pytest.mark.parametrize("per_step", [True, False])
def test_a_helper_reached_through_a_star_import(tmp_path, monkeypatch, capsys, per_step):
    """`from helpers import *` ... `per_class(...)`: the call is looked up in the star-imported
    module. Called every step, the helper's per-class work runs per step (with the chain); called
    once from `main()`, once; with its callers unknown, as often as they call it (reported)."""
    call = "per_class(21, device)"
    train = f"""
        import torch
        from helpers import *


        def main(model, loader, device):
            {call if not per_step else "pass"}
            for x in loader:
                model(x.to(device)).sum().backward()
                {call if per_step else "pass"}


        if __name__ == "__main__":
            main(None, [], "cuda")
    """
    write(tmp_path, {"train.py": train, "helpers.py": STAR_HELPERS.format(expect="  # expect: PTL201" if per_step else "")})
    findings = check(tmp_path, monkeypatch, capsys, "PTL201")
    assert found(findings) == markers(tmp_path, "PTL201")
    if per_step:
        assert [link["why"] for link in findings[0]["context"]["via"]] == ["for x in loader", "calls `per_class`"]


def test_the_same_helper_called_only_from_main_is_silent(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch
        from helpers import log_metrics


        def main():
            model = torch.nn.Linear(4, 2).cuda()
            log_metrics(model(torch.randn(8, 4).cuda()).sum())


        if __name__ == "__main__":
            main()
    """, "helpers.py": """
        def log_metrics(loss):
            print(loss.item())
    """})
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == []


def test_alone_the_helper_file_is_reported_as_called_code_nobody_calls(tmp_path, monkeypatch, capsys):
    """Without the script, nothing in the project calls `log_metrics`: its users are unknown."""
    write(tmp_path, {"helpers.py": """
        import torch


        def log_metrics(model, loader):
            for batch in loader:
                loss = model(batch).sum()
                loss.backward()
                print(loss.item())  # expect: PTL101
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


FULL_BATCH_STEP = """
    import torch


    def train_epoch(model, data, optimizer):
        optimizer.zero_grad()
        loss = torch.nn.functional.nll_loss(model(data.x), data.y)
        loss.backward()
        optimizer.step()
        return loss.item(){expect}
"""


@pytest.mark.parametrize("loops, expect", [
    # only loops over epochs call it, each right in the loop: a full-graph step, once per epoch
    (["for epoch in range(epochs):"], ""),
    (["for epoch in range(epochs):", "for ep in tqdm(range(epochs)):"], ""),
    # a loop over batches, or one of the calls in one: a step
    (["for batch in loader:"], "  # expect: PTL101"),
    (["for epoch in range(epochs):", "for batch in loader:"], "  # expect: PTL101"),
    (["for epoch in range(epochs):\n        for split in splits:"], "  # expect: PTL101"),  # right in the split loop
])
def test_a_full_batch_step_another_file_calls_once_per_epoch(tmp_path, monkeypatch, capsys, loops, expect):
    """`train_epoch` of train/engine.py trains on the whole graph; main.py calls it from its epoch
    loop (benchmarking-gnns' WikiCS): what it reads back, it reads once per epoch."""
    calls = "".join(f"    {loop}\n        {'    ' * loop.count(chr(10))}train_epoch(model, data, optimizer)\n"
                    for loop in loops)
    main = ("import torch\nfrom tqdm import tqdm\nfrom engine import train_epoch\n\n\n"
            "def main(model, data, optimizer, loader, splits, epochs):\n    model.cuda()\n" + calls +
            "\n\nif __name__ == '__main__':\n    main(None, None, None, [], [], 10)\n")
    write(tmp_path, {"main.py": main, "engine.py": FULL_BATCH_STEP.format(expect=expect)})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_cpu_only_program_is_silent_for_syncs_and_transfers(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch
        from helpers import log_metrics


        def main():
            model = torch.nn.Linear(4, 2).double()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                batch = torch.randn(8, 4, dtype=torch.float64)
                loss = model(batch).sum()
                loss.backward()
                opt.step()
                print(loss.item())
                log_metrics(loss)


        main()
    """, "helpers.py": """
        def log_metrics(loss):
            print(loss.item())
    """})
    assert check(tmp_path, monkeypatch, capsys, "PTL101,PTL102,PTL201") == []


@pytest.mark.parametrize("star, helper, expect", [
    # the project's own module: its code is known, and the names come from there
    ("from helpers import *", "def log_metrics(loss):\n    print(loss.item())", ""),
    # one of them places tensors on a GPU: the program does
    ("from helpers import *", "def log_metrics(loss):\n    print(loss.cuda().item())", "  # expect: PTL101"),
    # a module the project does not hold: what it binds is unknown, also beside one it holds
    ("from trainlib import *", "", "  # expect: PTL101"),
    ("from helpers import *\n        from trainlib import *", "", "  # expect: PTL101"),
])
def test_a_star_import_of_a_project_module_keeps_a_program_cpu_only(tmp_path, monkeypatch, capsys, star, helper,
                                                                  expect):
    write(tmp_path, {"train.py": f"""
        import torch
        STAR


        def main():
            model = torch.nn.Linear(4, 2).double()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                loss = model(make_batch()).sum()
                loss.backward()
                opt.step()
                print(loss.item()){expect}


        main()
    """.replace("STAR", star), "helpers.py": helper + "\n\n\ndef make_batch():\n    return None\n"})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_the_same_program_on_a_device_is_reported(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch
        from helpers import log_metrics


        def main(device):
            model = torch.nn.Linear(4, 2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(100):
                batch = torch.randn(8, 4).to(device)
                loss = model(batch).sum()
                loss.backward()
                opt.step()
                print(loss.item())  # expect: PTL101
                log_metrics(loss)


        main("cuda" if torch.cuda.is_available() else "cpu")
    """, "helpers.py": """
        import torch


        def log_metrics(loss):
            print(loss.item())  # expect: PTL101
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_module_of_a_gpu_program_shared_with_a_cpu_program_is_reported_only_in_the_gpu_one(
        tmp_path, monkeypatch, capsys):
    loop = """
        import torch
        from common import step


        def main():
            model = torch.nn.Linear(4, 2){move}
            for i in range(10):
                loss = step(model, torch.randn(8, 4){move})
                loss.backward()
                print(loss.item()){expect}


        main()
    """
    write(tmp_path, {
        "gpu.py": loop.format(move=".cuda()", expect="  # expect: PTL101"),
        "cpu.py": loop.format(move="", expect=""),
        "common.py": """
            def step(model, batch):
                return model(batch).sum()
        """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


@pytest.mark.parametrize("move, expect", [("", ""), (".cuda()", "  # expect: {code}")])
def test_per_tensor_optimizer_loops_are_silent_only_in_a_cpu_only_program(tmp_path, monkeypatch, capsys, move, expect):
    """A Polyak update and a per-gradient zeroing in a program on the CPU: a launch per tensor
    costs microseconds there, and foreach saves little."""
    write(tmp_path, {"train.py": f"""
        import torch
        from targets import polyak


        def main():
            net = torch.nn.Linear(4, 2){move}
            target = torch.nn.Linear(4, 2){move}
            opt = torch.optim.SGD(net.parameters(), lr=0.1)
            for step in range(100):
                loss = net(torch.randn(8, 4){move}).sum()
                for p in net.parameters():{expect.format(code="PTL502")}
                    p.grad = None if p.grad is None else p.grad.zero_()
                loss.backward()
                opt.step()
                polyak(net, target)


        main()
    """, "targets.py": f"""
        import torch


        def polyak(net, target):
            with torch.no_grad():
                for p, q in zip(net.parameters(), target.parameters()):{expect.format(code="PTL501")}
                    q.mul_(0.99).add_(p, alpha=0.01)
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL501,PTL502")) == \
        markers(tmp_path, "PTL501") | markers(tmp_path, "PTL502")


DYNAMIC_PROGRAM = """
    import torch
    {load}


    def main():
        model, loader, opt = build()
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            opt.step()
            print(loss.item()){expect}


    main()
"""


def test_a_program_that_imports_modules_by_name_is_not_assumed_to_stay_on_the_cpu(tmp_path, monkeypatch, capsys):
    load = 'import importlib\n    build = importlib.import_module("plugins." + "gpu").build'
    write(tmp_path, {"train.py": DYNAMIC_PROGRAM.format(load=load, expect="  # expect: PTL101")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_the_same_program_loading_a_cpu_builder_from_the_project_is_silent(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": DYNAMIC_PROGRAM.format(load="from builder import build", expect=""),
                     "builder.py": """
        import torch


        def build():
            model = torch.nn.Linear(4, 1)
            return model, [torch.randn(8, 4)], torch.optim.SGD(model.parameters(), lr=0.1)
    """})
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == []


PER_PARAMETER_HELPER = """
    import torch


    def grad_norms(model):
        norms = {}
        for name, p in model.named_parameters():
            if p.grad is not None:
                norms[name] = p.grad.norm().item()  # expect: PTL101
        return norms
"""


def test_a_per_parameter_read_in_a_helper_the_step_calls_is_reported(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch
        from utils.logging import grad_norms


        def train(model, loader, opt, device):
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                norms = grad_norms(model)
                opt.step()
    """, "utils/__init__.py": "", "utils/logging.py": PER_PARAMETER_HELPER})
    findings = check(tmp_path, monkeypatch, capsys, "PTL101")
    assert found(findings) == markers(tmp_path, "PTL101")
    assert [link["why"] for link in findings[0]["context"]["via"]] == ["for x, y in loader", "calls `grad_norms`"]


def test_a_helper_called_through_a_package_reexport_and_a_module_alias(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch
        import utils as U
        from utils import grad_norms


        def train(model, loader, opt, device):
            for x in loader:
                loss = model(x.to(device)).sum()
                loss.backward()
                grad_norms(model)
                U.report(loss)
                opt.step()
    """, "utils/__init__.py": """
        from .logging import grad_norms
        from .report import report
    """, "utils/logging.py": PER_PARAMETER_HELPER, "utils/report.py": """
        def report(loss):
            print(f"{loss.item():.3f}")  # expect: PTL101
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


@pytest.mark.parametrize("arguments, expect", [
    ("loss=loss)", "  # expect: PTL101"),
    ("loss=loss, **losses)", "  # expect: PTL101"),
    # every call gives host values: the tensor branch never runs (the step's own read is reported)
    ("loss=loss.item(), n=3, **{k: v.item() for k, v in losses.items()},  # expect: PTL101\n"
     "                                     lr=optimizer.param_groups[0]['lr'])", ""),
])
def test_a_metric_logger_instance_in_another_module(tmp_path, monkeypatch, capsys, arguments, expect):
    """`metric_logger = utils.MetricLogger()` ... `metric_logger.update(loss=loss)` per step: the
    logger's `update` reads every value back; called only with host values, it reads none."""
    write(tmp_path, {"engine.py": """
        import torch
        import utils


        def train_one_epoch(model, loader, optimizer, device):
            metric_logger = utils.MetricLogger()
            for samples, targets in loader:
                samples = samples.to(device, non_blocking=True)
                losses = model(samples)
                loss = losses["total"]
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                metric_logger.update(ARGUMENTS
    """.replace("ARGUMENTS", arguments), "utils.py": """
        import torch


        class MetricLogger:
            def __init__(self):
                self.meters = {}

            def update(self, **kwargs):
                for k, v in kwargs.items():
                    if isinstance(v, torch.Tensor):
                        v = v.item()EXPECT
                    self.meters[k] = v
    """.replace("EXPECT", expect), "main.py": """
        from engine import train_one_epoch


        def main(model, loader, optimizer, epochs):
            for epoch in range(epochs):
                train_one_epoch(model, loader, optimizer, "cuda")
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


@pytest.mark.parametrize("built, expect", [
    # one class per branch: the method of either runs per step
    ("if params.encoder_only:\n                trainer = SingleTrainer(model)\n            else:\n                trainer = EncDecTrainer(model)",
     "  # expect: PTL101"),
    ("trainer = SingleTrainer(model)", "  # expect: PTL101"),
    # something else in one branch: what the name holds is unknown
    ("if params.encoder_only:\n                trainer = SingleTrainer(model)\n            else:\n                trainer = make_trainer(model)", ""),
])
def test_a_step_method_of_an_instance_built_per_branch_in_another_module(tmp_path, monkeypatch, capsys, built,
                                                                        expect):
    """`trainer = SingleTrainer(...)` or `EncDecTrainer(...)` by a setting, then `trainer.clm_step()`
    per step: the step (inherited from their base) runs per step; it backpropagates through
    `self.optimize(loss)`, so its reads before that call are part of the training step."""
    write(tmp_path, {"trainer.py": """
        import torch


        class Trainer:
            def __init__(self, model):
                self.model = model
                self.stats = {"loss": []}

            def optimize(self, loss):
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()

            def clm_step(self, lang):
                x = self.batch(lang).cuda()
                loss = self.model(x)
                self.stats["loss"].append(loss.item())EXPECT
                self.optimize(loss)


        class SingleTrainer(Trainer):
            pass


        class EncDecTrainer(Trainer):
            pass
    """.replace("EXPECT", expect), "train.py": """
        from trainer import SingleTrainer, EncDecTrainer


        def main(params, model, make_trainer):
            BUILT
            for _ in range(params.max_epoch):
                while trainer.n_sentences < trainer.epoch_size:
                    for lang in params.clm_steps:
                        trainer.clm_step(lang)


        if __name__ == "__main__":
            main(None, None, None)
    """.replace("BUILT", built)})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_def_called_with_host_values_outside_training_is_linted_once(tmp_path, monkeypatch, capsys):
    """Which defs are called with host values only matters for the defs training steps call: a
    helper that a library function calls with a number adds nothing to its file's facts, and the
    file is not linted a second time after the solve."""
    from ptlint.engine import traversal

    write(tmp_path, {"train.py": TRAIN_CALLS_HELPER, "helpers.py": """
        def log_metrics(loss):
            print(loss.item())  # expect: PTL101
    """, "report.py": """
        def report(value):
            return value
    """, "api.py": """
        import torch
        from report import report

        DEVICE = torch.device("cuda")


        def summary(rows):
            return report(len(rows))
    """})
    linted: list[str] = []
    real = traversal.lint_and_summarize

    def counting(source, *args, **kwargs):
        linted.append(os.path.basename(source.path))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(traversal, "lint_and_summarize", counting)
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101", "--no-cache")) == markers(tmp_path, "PTL101")
    assert linted.count("report.py") == 1
    assert linted.count("helpers.py") == 2  # its facts changed: a training step calls it


def test_a_training_step_a_base_trainer_calls_on_a_subclass_in_another_file(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"base.py": """
        class Trainer:
            def fit(self, loader):
                for batch in loader:
                    loss = self.compute(batch)
                    loss.backward()
                    self.optimizer.step()
                    self.after_step(loss)

            def after_step(self, loss):
                pass
    """, "mine.py": """
        import torch
        from base import Trainer


        class MyTrainer(Trainer):
            def compute(self, batch):
                return self.model(batch.cuda()).sum()

            def after_step(self, loss):
                self.history.append(loss.item())  # expect: PTL101
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


COMPILED_FORWARD = """
    import torch
    from torch import nn


    class Gate(nn.Module):
        def forward(self, x):
            if x.abs().max() > 1:{expect}
                x = x / x.abs().max()
            return x
"""


def test_a_forward_in_a_project_that_never_compiles_is_silent_for_compile_rules(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"model.py": COMPILED_FORWARD.format(expect=""), "train.py": """
        from model import Gate

        gate = Gate()
    """})
    assert check(tmp_path, monkeypatch, capsys, "PTL401,PTL402,PTL403,PTL404,PTL405") == []


def test_a_forward_in_a_project_that_compiles_is_reported(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"model.py": COMPILED_FORWARD.format(expect="  # expect: PTL403"), "train.py": """
        import torch
        from model import Gate

        gate = torch.compile(Gate())
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL403")) == markers(tmp_path, "PTL403")


@pytest.mark.parametrize("packaged", [False, True])
def test_a_forward_only_programs_that_never_compile_run_is_silent(tmp_path, monkeypatch, capsys, packaged):
    """One script compiles its model; another, with a model of its own, compiles nothing: only the
    first model's forward is traced. In a project that can be installed, a module the second
    imports (with a self-test of its own) is a library's, which its users may compile."""
    write(tmp_path, {"model.py": COMPILED_FORWARD.format(expect="  # expect: PTL403"), "train.py": """
        import torch
        from model import Gate

        if __name__ == "__main__":
            gate = torch.compile(Gate())
    """, "bench.py": COMPILED_FORWARD.format(expect="") + """

    if __name__ == "__main__":
        import layers
        gate = Gate()
    """, "layers.py": COMPILED_FORWARD.format(expect="  # expect: PTL403" if packaged else "") + """

    if __name__ == "__main__":
        print(Gate()(torch.ones(2)))
    """})
    if not packaged:  # (`write` makes a package)
        (tmp_path / "pyproject.toml").write_text("[tool.black]\n")
    assert found(check(tmp_path, monkeypatch, capsys, "PTL403")) == markers(tmp_path, "PTL403")


def test_compile_true_in_the_configuration_says_users_compile_a_library(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"model.py": COMPILED_FORWARD.format(expect="  # expect: PTL403")})
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\ncompile = true\n")
    assert found(check(tmp_path, monkeypatch, capsys, "PTL403")) == markers(tmp_path, "PTL403")


@pytest.mark.parametrize("setting", ["compile = false", "project = false"])
def test_the_configuration_can_say_no_compile_or_no_project(tmp_path, monkeypatch, capsys, setting):
    write(tmp_path, {"model.py": COMPILED_FORWARD.format(expect=""), "train.py": """
        import torch
        from model import Gate

        gate = torch.compile(Gate())
    """, "helpers.py": """
        import torch


        def log_metrics(loss):
            print(loss.item())
    """, "main.py": TRAIN_CALLS_HELPER})
    (tmp_path / "pyproject.toml").write_text(f"[tool.ptlint]\n{setting}\n")
    findings = check(tmp_path, monkeypatch, capsys, "PTL403,PTL101")
    if setting == "compile = false":
        assert {f["code"] for f in findings} == {"PTL101"}  # the helper: still per step
    else:  # each file alone: the forward is assumed compiled, the helper's callers unknown
        assert found(findings) == {("model.py", 7, "PTL403")}


def test_a_read_in_a_log_interval_branch_that_holds_a_small_loop_is_silent(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch


        def train(model, loader, opt, args):
            model.cuda()
            for batch_idx, (x, y) in enumerate(loader):
                losses = {"ce": model(x.cuda()).mean()}
                losses["ce"].backward()
                opt.step()
                if batch_idx % args.log_interval == 0:
                    for name, value in losses.items():
                        print(name, value.item())
                    if args.dry_run:
                        break
                print(losses["ce"].item())  # expect: PTL101
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_read_after_a_sampling_loop_runs_once_per_sample(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"sample.py": """
        import torch


        def sample(model, shape, device):
            x = torch.randn(shape, device=device)
            for t in reversed(range(1000)):
                x = model(x, t)
            return x.clamp(-1, 1).cpu().numpy()


        def evaluate(model, loader, device):
            images = []
            for batch in loader:
                images.append(sample(model, batch.shape, device))
            return images
    """})
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == []


def test_the_project_cache_answers_a_one_file_check_and_sees_a_helper_change(tmp_path, monkeypatch, capsys):
    """A second run reads the summaries back from the project index; a one-file check of the
    helper sees the script's callers; editing the script changes the helper's findings."""
    write(tmp_path, {"train.py": TRAIN_CALLS_HELPER, "helpers.py": """
        import torch


        def log_metrics(loss):
            print(loss.item())
    """})
    first = check(tmp_path, monkeypatch, capsys, "PTL101")
    assert [f["path"] for f in first] == ["helpers.py"]
    assert list((tmp_path / ".ptlint_cache").rglob("project-*.marshal"))
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == first
    monkeypatch.chdir(tmp_path)
    assert cli.run(["check", "--output-format", "json", "--select", "PTL101", "helpers.py"]) == 1
    assert json.loads(capsys.readouterr().out) == first
    (tmp_path / "train.py").write_text((tmp_path / "train.py").read_text().replace(
        "        log_metrics(loss)\n", "    log_metrics(loss)\n"))  # now after the loop, once
    assert cli.run(["check", "--output-format", "json", "--select", "PTL101", "helpers.py"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_names_bound_nowhere_leave_the_cpu_only_modules_they_import_silent(tmp_path, monkeypatch, capsys):
    """An exercise with blanks (`q1`, `q2` bound nowhere) beside the CPU-only package it imports:
    the exercise itself may hold a device, the package's step stays silent."""
    write(tmp_path, {"algo.py": """
        import torch


        def update(model, opt, batches):
            for batch in batches:
                loss = model(batch).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(loss.item())
    """, "exercise.py": """
        import torch
        from algo import update

        model = torch.nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in batches:
            loss = ((q1 - batch) ** 2).mean() + ((q2 - batch) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(loss.item())  # expect: PTL101
        update(model, opt, [])
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_script_that_uses_names_nothing_binds_is_not_assumed_to_stay_on_the_cpu(tmp_path, monkeypatch, capsys):
    """`for x in xs: net(x).item()` pasted alone: its program is not all there. Star-imported from
    a module of the project that builds them on the CPU, they are known: that program stays there."""
    write(tmp_path, {"snippet.py": """
        import torch
        for x in xs:
            t = net(x).item()  # expect: PTL101
    """, "star.py": """
        import torch
        from setup import *
        for x in xs:
            t = net(x).item()
    """, "setup.py": """
        import torch
        xs = [torch.randn(2)]
        net = torch.nn.Linear(2, 1)
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_rollout_and_update_iteration_reads_its_summary_once_per_iteration(tmp_path, monkeypatch, capsys):
    """An outer loop named for its iterations holds a rollout loop and update epochs whose
    minibatch loop trains: what follows them in the iteration runs once per iteration."""
    write(tmp_path, {"ppo.py": """
        import torch


        def main(agent, envs, optimizer, args, writer, device):
            obs = torch.zeros((args.num_steps, 8), device=device)
            for iteration in range(1, args.num_iterations + 1):
                for step in range(0, args.num_steps):
                    action = agent(obs[step])
                    obs[step] = envs.step(action)
                for epoch in range(args.update_epochs):
                    for start in range(0, args.batch_size, args.minibatch_size):
                        loss = agent(obs[start:start + args.minibatch_size]).mean()
                        optimizer.zero_grad()
                        loss.backward()
                        optimizer.step()
                        print(loss.item())  # expect: PTL101
                writer.add_scalar("losses/value_loss", loss.item(), iteration)
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


EPOCH_HELPER = """
    import torch


    def train_one_epoch(model, loader, optimizer, device):
        total = torch.zeros((), device=device)
        for samples, targets in loader:
            loss = model(samples.to(device)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print(loss.item())  # expect: PTL101
            total += loss.detach()
        print("epoch loss", total.item())
        return total
"""
EPOCH_MAIN = """
    import torch
    {imports}


    def main(model, loader, optimizer, epochs):
        device = torch.device("cuda")
        for epoch in range(epochs):
            stats = train_one_epoch(model, loader, optimizer, device)
            print(epoch, stats.item())


    main(None, [], None, 3)
"""


@pytest.mark.parametrize("layout", ["one file", "two files"])
def test_an_epoch_loop_calling_a_function_that_holds_the_batch_loop(tmp_path, monkeypatch, capsys, layout):
    """`for epoch in range(n): train_one_epoch(...)`: the batch loop inside is per step, what
    train_one_epoch does after it and what the epoch loop does after the call once per epoch; the
    chain cites the batch loop."""
    if layout == "one file":
        write(tmp_path, {"train.py": EPOCH_HELPER + EPOCH_MAIN.format(imports="")})
    else:
        write(tmp_path, {"engine.py": EPOCH_HELPER, "main.py": EPOCH_MAIN.format(imports="from engine import train_one_epoch")})
    findings = check(tmp_path, monkeypatch, capsys, "PTL101")
    assert found(findings) == markers(tmp_path, "PTL101")
    assert [link["why"] for link in findings[0]["context"]["via"]] == ["for samples, targets in loader"]


def test_a_loop_over_whole_runs_through_a_helper_is_an_outer_loop(tmp_path, monkeypatch, capsys):
    """A search over settings (`for params in trials: run(params)`) where `run` calls the
    training function of another file: each trial is one whole run, so what `train` does
    outside its batch loop runs once per trial, not per step. A step that evaluates every 100
    steps is no such run: the loop that calls it stays a step loop."""
    write(tmp_path, {"train.py": """
        import torch


        def train(model, loader, optimizer):
            for x in loader:
                loss = model(x.cuda()).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                print(loss.item())  # expect: PTL101
            torch.cuda.empty_cache()


        def evaluate(model, loader):
            for x in loader:
                model(x.cuda())


        def observe(model, obs, i, loader):
            out = model(obs.cuda())
            torch.cuda.empty_cache()  # expect: PTL102
            if i % 100 == 0:
                evaluate(model, loader)
            return out
    """, "search.py": """
        from train import observe, train


        def run(params, model, loader, optimizer):
            train(model, loader, optimizer)


        def search(trials, model, loader, optimizer):
            for params in trials:
                run(params, model, loader, optimizer)


        def rollout(model, obs, steps, loader):
            for i in range(steps):
                obs = observe(model, obs, i, loader)


        if __name__ == "__main__":
            search([1, 2], None, [], None)
            rollout(None, None, 10, [])
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101,PTL102")) == markers(tmp_path, "PTL101,PTL102")


def test_a_periodic_flag_assigned_before_its_test(tmp_path, monkeypatch, capsys):
    write(tmp_path, {"train.py": """
        import torch


        def train(model, loader, optimizer, args):
            for i, (x, y) in enumerate(loader):
                loss = model(x.cuda()).mean()
                loss.backward()
                optimizer.step()
                is_metric_step = i % args.metric_every == 0 or i == len(loader) - 1
                if is_metric_step:
                    print(loss.item())
                done = loss.item() < 0.1  # expect: PTL101
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_without_a_project_marker_the_folder_named_is_the_project(tmp_path, monkeypatch, capsys):
    """No pyproject.toml, setup.py or .git (an exported tree): helpers in a folder that is not a
    package still belong to the program of the folder checked."""
    for name, text in {"engine.py": """
        import torch
        import util.helpers as helpers


        def train_one_epoch(model, loader, optimizer, device):
            for samples in loader:
                loss = model(samples.to(device)).mean()
                loss.backward()
                optimizer.step()
                helpers.report(loss)
    """, "util/helpers.py": """
        import torch


        def report(loss):
            print(loss.item())  # expect: PTL101
    """}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    monkeypatch.chdir(tmp_path)
    assert cli.run(["check", "--output-format", "json", "--select", "PTL101", "."]) == 1
    assert found(json.loads(capsys.readouterr().out)) == markers(tmp_path, "PTL101")


def test_bad_projects_degrade_to_unknown_and_every_file_is_still_checked(tmp_path, monkeypatch, capsys):
    """A file that does not parse, two modules importing each other, a star import, two modules
    of one name in two folders, a symlinked folder: no crash, each file checked, callers resolved
    where Python would resolve them."""
    write(tmp_path, {
        "broken.py": "def f(:\n",
        "a.py": """
            import torch
            import b


            def step(model, x):
                return b.helper(model, x)
        """,
        "b.py": """
            import torch
            import a


            def helper(model, x):
                return model(x)


            def loop(model, loader, device):
                for x in loader:
                    y = a.step(model, x.to(device))
                    y.sum().backward()
                    print(y.sum().item())  # expect: PTL101
        """,
        "one/train.py": """
            import torch
            import utils


            def main(model, loader, device):
                for x in loader:
                    loss = model(x.to(device)).sum()
                    loss.backward()
                    utils.log(loss)
        """,
        "one/utils.py": """
            import torch


            def log(loss):
                print(loss.item())  # expect: PTL101
        """,
        "two/utils.py": """
            import torch


            def log(loss):
                print(loss.item())
        """,
        "two/run.py": """
            import utils


            def main():
                utils.log(None)


            main()
        """,
    })
    (tmp_path / "linked").symlink_to(tmp_path / "one", target_is_directory=True)
    findings = check(tmp_path, monkeypatch, capsys, "PTL001,PTL101")
    # the walk meets one/ once, by whichever name comes first; its findings are the same
    real = {(os.path.relpath(os.path.realpath(path), tmp_path), line, code) for path, line, code in found(findings)}
    assert ("broken.py", 1, "PTL001") in real
    assert real - {("broken.py", 1, "PTL001")} == markers(tmp_path, "PTL101")


def test_a_tree_too_large_to_model_checks_each_file_alone(tmp_path, monkeypatch, capsys):
    import ptlint.run.project as run_project

    monkeypatch.setattr(run_project, "MAX_PROJECT_FILES", 3)
    write(tmp_path, {"train.py": TRAIN_CALLS_HELPER, "helpers.py": """
        import torch


        def log_metrics(loss):
            print(loss.item())
    """, **{f"pkg/m{i}.py": "x = 1\n" for i in range(5)}})
    # alone, `log_metrics` is called code nobody calls: as without a project, it is not per step
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == []
    assert not list((tmp_path / ".ptlint_cache").rglob("project-*.marshal"))


@pytest.mark.parametrize("layout", ["one file", "two files"])
def test_a_loop_that_calls_a_training_step_is_a_training_loop(tmp_path, monkeypatch, capsys, layout):
    """`loss = train_step(model, batch)` per batch, the step in a function of its own: a read of
    its result in the loop waits every step."""
    step = """
        import torch


        def train_step(model, batch, optimizer, device):
            loss = model(batch.to(device)).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            return loss
    """
    loop = """
        import torch
        {imports}


        def main(model, loader, optimizer, device):
            for batch in loader:
                loss = train_step(model, batch, optimizer, device)
                print(f"loss {{loss.item():.3f}}")  # expect: PTL101


        main(None, [], None, "cuda")
    """
    if layout == "one file":
        write(tmp_path, {"train.py": step + loop.format(imports="").replace("import torch\n", "", 1)})
    else:
        write(tmp_path, {"steps.py": step, "train.py": loop.format(imports="from steps import train_step")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_registered_buffer_read_in_forward_of_a_trained_model(tmp_path, monkeypatch, capsys):
    """A momentum encoder's queue pointer, a buffer, read in forward: each training step of the
    project waits there. Silent where the project compiles (the compile rules' code) and where
    nothing in the project trains."""
    model = """
        import torch
        from torch import nn


        class MoCo(nn.Module):
            def __init__(self, dim=128, k=4096):
                super().__init__()
                self.k = k
                self.register_buffer("queue", torch.randn(dim, k))
                self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

            def forward(self, q, keys):
                ptr = int(self.queue_ptr){expect}
                self.queue[:, ptr:ptr + keys.shape[0]] = keys.T
                self.queue_ptr[0] = (ptr + keys.shape[0]) % self.k
                return q @ self.queue
    """
    train = """
        import torch
        from model import MoCo


        def main(loader, device):
            model = MoCo().to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for q, k in loader:
                loss = model(q.to(device), k.to(device)).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
    write(tmp_path, {"model.py": model.format(expect="  # expect: PTL101"), "train.py": train})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")
    write(tmp_path, {"model.py": model.format(expect=""), "train.py": train.replace(
        "model = MoCo().to(device)", "model = torch.compile(MoCo().to(device))")})
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == []
    (tmp_path / "train.py").unlink()
    assert check(tmp_path, monkeypatch, capsys, "PTL101") == []


def test_a_registered_buffer_read_in_a_helper_forward_calls(tmp_path, monkeypatch, capsys):
    """The same read in the enqueue helper that forward calls (a no_grad method) waits each step
    too; a helper nothing in forward's way calls (a method of set-up) stays silent."""
    model = """
        import torch
        from torch import nn


        class MoCo(nn.Module):
            def __init__(self, dim=128, k=4096):
                super().__init__()
                self.k = k
                self.register_buffer("queue", torch.randn(dim, k))
                self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

            @torch.no_grad()
            def _enqueue(self, keys):
                ptr = int(self.queue_ptr)  # expect: PTL101
                self.queue[:, ptr:ptr + keys.shape[0]] = keys.T
                self.queue_ptr[0] = (ptr + keys.shape[0]) % self.k

            def resize(self, k):
                start = int(self.queue_ptr)
                self.queue = self.queue[:, start:start + k]

            def forward(self, q, keys):
                self._enqueue(keys)
                return q @ self.queue
    """
    train = """
        import torch
        from model import MoCo


        def main(loader, device):
            model = MoCo().to(device)
            model.resize(1024)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            for q, k in loader:
                loss = model(q.to(device), k.to(device)).mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """
    write(tmp_path, {"model.py": model, "train.py": train})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101") != set()


# -- code nobody uses in a training program ---------------------------------------------------------
USES_HELPERS = """
    import torch
    import helpers


    def main():
        model = helpers.Net().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in [torch.randn(8, 4) for _ in range(10)]:
            loss = model(batch.cuda()).sum()
            loss.backward()
            opt.step()
            helpers.log_metrics(loss)


    if __name__ == "__main__":
        main()
"""
HELPERS = """
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 2


    def log_metrics(loss):
        print(loss.item())  # expect: PTL101


    def scale_params(model, factor):
        for p in model.parameters():{scale}
            p.data.mul_(factor)


    class Pool(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attend = Attention()


    class Attention(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v{attention}
"""


@pytest.mark.parametrize("other", [
    {},
    # docs name code and run none: a README's words keep nothing alive
    {"README.md": "Call `scale_params(model, 2)` to halve the step; `Pool` pools.\n"},
    # a text given to eval is only ever the file's own names and what it imports
    {"run.py": "import sys\nimport torch\n\nmodel = eval(sys.argv[1])\nstep = eval('torch.optim.SGD')\n"},
])
def test_defs_nothing_in_a_training_program_uses_are_silent(tmp_path, monkeypatch, capsys, other):
    """`scale_params` is never called; `Attention` is used only by `Pool`, which nothing uses."""
    write(tmp_path, {"train.py": USES_HELPERS, "helpers.py": HELPERS.format(scale="", attention=""), **other})
    select = "PTL101,PTL501,PTL308"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select) != set()


EXTRA = """
    import torch


    def shrink_params(model, factor):
        for p in model.parameters():{expect}
            p.data.mul_(factor)
"""
USES_EXTRA = USES_HELPERS.replace("import helpers\n", "import helpers\n    import extra\n") \
    .replace("opt.step()\n", "opt.step()\n            extra.shrink_params(model, 0.5)\n")
REPORTED_LOOP = "  # expect: PTL501"
MAIN_CALL = """

    if __name__ == "__main__":
        print("a program")
"""
MODULE_LEVEL_LOOP = """

    x = torch.randn(4, 4)
    probs = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True){expect}
"""
LOADS_ANY = "import importlib\nimport sys\n\nm = importlib.import_module(sys.argv[1])\n"


@pytest.mark.parametrize("files", [
    # a snapshot of the code a run keeps beside its checkpoints (log/<run>/extra.py): never imported
    {"log/run1/extra.py": ""},
    {"log/run1/extra.py": "", "run.py": LOADS_ANY},  # even where modules are loaded by name
    {"wandb/run-1/files/code/extra.py": ""},
    {"_extra.py": ""},  # a private module nothing imports
    {"_extra.py": "", "run.py": LOADS_ANY},
    # code set aside (backup/, old/): any module nothing outside imports, a script too, and its
    # module-level code as well as its defs
    {"backup/train_v0.py": ("", MAIN_CALL)},
    {"old/train_v1.py": ("", MODULE_LEVEL_LOOP.format(expect=""))},
    {"old/helpers_v1.py": ""},
    # kept: no file of that name outside the folder, a folder not named for artifacts, an import
    # from outside, a public module (a library's), a private one the program imports
    {"log/run1/other.py": REPORTED_LOOP},
    {"exp1/extra.py": REPORTED_LOOP},
    {"log/run1/extra.py": REPORTED_LOOP, "report.py": "from log.run1 import extra\n\n\ndef report():\n    extra.shrink_params(None, 1)\n"},
    {"tools.py": REPORTED_LOOP},
    {"_extra.py": REPORTED_LOOP, "report.py": "import _extra\n\n\ndef report():\n    _extra.shrink_params(None, 1)\n"},
    {"tools/__init__.py": REPORTED_LOOP},  # a package's front
    {"backup/extra.py": REPORTED_LOOP, "report.py": "from backup import extra\n\n\ndef report():\n    extra.shrink_params(None, 1)\n"},
    # a program of its own (`python log/run1/extra.py`, `python _extra.py`)
    {"log/run1/extra.py": (REPORTED_LOOP, MAIN_CALL)},
    {"tools/train_v1.py": (REPORTED_LOOP, MODULE_LEVEL_LOOP.format(expect="  # expect: PTL301"))},
    {"_extra.py": (REPORTED_LOOP, MAIN_CALL)},
])
def test_modules_no_code_of_the_program_reaches_are_silent(tmp_path, monkeypatch, capsys, files):
    """A training program's snapshot of its own code (a checkpoint folder's copy, which a training
    script writes there with `shutil.copy`), code set aside in a backup folder, and a private
    module nothing imports, never run."""
    helpers = "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\ndef log_metrics(loss):\n    pass\n"
    tree = {"train.py": USES_EXTRA, "helpers.py": helpers, "extra.py": EXTRA.format(expect=REPORTED_LOOP)}
    for path, expect in files.items():
        expect, tail = expect if isinstance(expect, tuple) else (expect, "")
        tree[path] = expect if path.endswith(("run.py", "report.py")) else EXTRA.format(expect=expect) + tail
    write(tmp_path, tree)
    select = "PTL501,PTL301"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select) != set()


@pytest.mark.parametrize("decorator, expect", [
    ("@torch.no_grad()", ""),  # wrappers that register nothing: the def is used only where named
    ("@torch.inference_mode()", ""),
    ("@functools.lru_cache(maxsize=None)", ""),
    ("@register", "  # expect: PTL201"),  # a decorator may register it: kept
])
def test_a_def_only_a_plain_wrapper_decorates_is_unused_like_any_other(tmp_path, monkeypatch, capsys,
                                                                        decorator, expect):
    helpers = HELPERS.format(scale="", attention="") + f"""

    {decorator}
    def sample_grid(device):
        for i in range(4):
            z = torch.randn(8).to(device){expect}


    def register(f):
        return f
"""
    write(tmp_path, {"train.py": USES_HELPERS, "helpers.py": "import functools\n" + textwrap.dedent(helpers)})
    select = "PTL101,PTL201"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select)


@pytest.mark.parametrize("user", [
    # a function of a file nothing imports (a program of its own) calls it
    {"other.py": "from helpers import scale_params, Pool\n\ndef tune(m):\n    scale_params(m, 2)\n    Pool()\n"},
    # a config names it (a registry or `_target_` reads it at run time)
    {"configs/run.yaml": "model:\n  _target_: helpers.Pool\nhook: scale_params\n"},
    # a notebook calls it
    {"explore.ipynb": json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [],
                                             "execution_count": None,
                                             "source": ["helpers.scale_params(m, 0.5)\n", "helpers.Pool()"]}],
                                  "metadata": {}, "nbformat": 4, "nbformat_minor": 5})},
    # a file looks the module's names up by a computed name
    {"other.py": "import helpers, sys\nmake = getattr(helpers, sys.argv[1])\n"},
    {"other.py": "import helpers, sys\nmake = helpers.__dict__[sys.argv[1]]\n"},
    {"other.py": "import sys\nimport helpers\nmake = eval(sys.argv[1])\n"},  # eval reaches what the file imports
])
def test_a_def_a_file_config_or_lookup_may_use_is_reported(tmp_path, monkeypatch, capsys, user):
    write(tmp_path, {"train.py": USES_HELPERS, **user,
                     "helpers.py": HELPERS.format(scale="  # expect: PTL501", attention="  # expect: PTL308")})
    select = "PTL101,PTL501,PTL308"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select)


METHODS_TRAIN = """
    import torch
    from algorithms import Transfer


    def main():
        algorithm = Transfer().cuda()
        for batch in [torch.randn(8, 4) for _ in range(10)]:
            algorithm.update(batch.cuda())


    if __name__ == "__main__":
        main()
"""
METHODS = """
    import torch
    from torch import nn


    class Algorithm(BASE):
        def update(self, x):
            raise NotImplementedError


    class Transfer(Algorithm):
        def update(self, x):
            loss = self.net(x).sum()
            loss.backward()
            self.losses.append(loss.item())  # expect: PTL101

        def update_second(self, x):
            loss = self.net(x).sum()
            loss.backward()
            self.losses.append(loss.item()){expect}

        @staticmethod
        def gap(x):
            return x
"""


@pytest.mark.parametrize("base,user,expect", [
    ("nn.Module", "", ""),  # nothing names update_second: it never runs
    ("object", "", ""),
    ("torch.nn.Module", "", ""),
    # a file names it (as an attribute, a string, a config word), or may call any method by name
    ("nn.Module", "def second(a, x):\n    a.update_second(x)\n", "  # expect: PTL101"),
    ("nn.Module", "OPS = ['update_second']\n", "  # expect: PTL101"),
    ("nn.Module", "import sys\n\ndef run(a):\n    getattr(a, sys.argv[1])(0)\n", "  # expect: PTL101"),
    ("nn.Module", "import operator, sys\nCALL = operator.methodcaller(sys.argv[1])\n", "  # expect: PTL101"),
    # a framework's base may call any method by its name
    ("pl.LightningModule", "", "  # expect: PTL101"),
    ("Unknown", "", "  # expect: PTL101"),
])
def test_a_method_nothing_in_the_project_names_is_silent(tmp_path, monkeypatch, capsys, base, user, expect):
    methods = METHODS.replace("BASE", base).format(expect=expect)
    if base == "pl.LightningModule":
        methods = methods.replace("from torch import nn", "import lightning.pytorch as pl")
    write(tmp_path, {"train.py": METHODS_TRAIN, "algorithms.py": methods, "other.py": user})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_methods_of_a_module_nothing_imports_are_kept(tmp_path, monkeypatch, capsys):
    """A module no file imports and that is no program (a library's) may be used by anyone."""
    library = """
        from torch import nn


        class Trainer(nn.Module):
            def fit_epoch(self, loader):
                for x in loader:
                    loss = self.net(x).sum()
                    loss.backward()
                    self.losses.append(loss.item()){expect}
    """
    write(tmp_path, {"train.py": METHODS_TRAIN.replace("from algorithms import Transfer", "from core import Transfer"),
                     "core.py": "from torch import nn\n\n\nclass Transfer(nn.Module):\n    pass\n",
                     "library.py": library.format(expect="  # expect: PTL101")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101") != set()
    # the same module imported by the program: a method nothing names never runs
    (tmp_path / "train.py").write_text((tmp_path / "train.py").read_text().replace("import torch", "import torch\nimport library"))
    (tmp_path / "library.py").write_text(textwrap.dedent(library.format(expect="")).lstrip())
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == set()


def test_a_getattr_of_a_submodule_or_setattr_does_not_keep_methods(tmp_path, monkeypatch, capsys):
    """Model surgery reads and sets submodules by computed names: it calls no method."""
    user = ("import sys\n\ndef fuse(block, name):\n    setattr(block, name, getattr(block, name + '_bn'))\n"
            "    return vars(sys.modules[__name__])\n")
    write(tmp_path, {"train.py": METHODS_TRAIN, "other.py": user,
                     "algorithms.py": METHODS.replace("BASE", "nn.Module").format(expect="")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101") != set()


def test_a_file_that_does_not_parse_leaves_nothing_unused(tmp_path, monkeypatch, capsys):
    """The one file that uses `scale_params` and `Pool` is being edited and does not parse: what
    it uses is unknown, so nothing is taken for code that never runs."""
    write(tmp_path, {"train.py": USES_HELPERS, "other.py": "from helpers import scale_params, Pool\nPool(\n",
                     "helpers.py": HELPERS.format(scale="  # expect: PTL501", attention="  # expect: PTL308")})
    select = "PTL101,PTL501,PTL308"
    assert found([f for f in check(tmp_path, monkeypatch, capsys, select) if f["path"] != "other.py"]) \
        == markers(tmp_path, select)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_among_the_other_text_files_is_not_read(tmp_path, monkeypatch, capsys):
    """A FIFO named like a config would block a read for ever: it is left out, and the rest holds."""
    write(tmp_path, {"train.py": USES_HELPERS, "helpers.py": HELPERS.format(scale="", attention="")})
    os.mkfifo(tmp_path / "configs.yaml")
    select = "PTL101,PTL501,PTL308"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select) != set()


@pytest.mark.parametrize("lookup", [
    "globals()[name]()",  # its own module's names
    "getattr(Modes, name)",  # one of its own classes, by a computed name (it once crashed the solve)
])
def test_decorated_and_own_lookups_keep_defs(tmp_path, monkeypatch, capsys, lookup):
    """A decorator may register a def; a module that looks its own names up may call any of them."""
    helpers = HELPERS.format(scale="  # expect: PTL501", attention="  # expect: PTL308")
    helpers = helpers.replace("    def scale_params", "    @register\n    def scale_params")
    helpers += "\n\n    def register(f):\n        return f\n\n\n    class Modes:\n        pass\n\n\n" \
               f"    def build(name):\n        return {lookup}\n"
    write(tmp_path, {"train.py": USES_HELPERS, "helpers.py": helpers})
    select = "PTL101,PTL501,PTL308"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select)


@pytest.mark.parametrize("layout", ["library", "not imported", "trains nothing"])
def test_unused_defs_of_a_library_or_a_standalone_module_are_reported(tmp_path, monkeypatch, capsys, layout):
    """Without a program (no `__main__`, no loop at top level) the users are unknown; a module no
    file imports is a program or a library of its own; a project that trains nothing is not asked."""
    helpers = HELPERS.format(scale="  # expect: PTL501", attention="  # expect: PTL308")
    train = USES_HELPERS
    if layout == "library":
        train = train.replace('if __name__ == "__main__":\n        main()', "")
    elif layout == "not imported":
        train = train.replace("import helpers\n", "").replace("helpers.Net()", "torch.nn.Linear(4, 4)") \
            .replace("helpers.log_metrics(loss)", "pass")
        helpers += "\n\n    log_metrics(torch.ones(1))\n"
    else:
        train = train.replace("loss.backward()", "pass").replace("opt.step()", "pass")
    write(tmp_path, {"train.py": train, "helpers.py": helpers})
    select = "PTL501,PTL308"
    assert found(check(tmp_path, monkeypatch, capsys, select)) == markers(tmp_path, select) != set()


def test_data_parallel_in_a_script_whose_loop_runs_another_files_training_step(tmp_path, monkeypatch, capsys):
    """The script evaluates (`model.eval()`, `no_grad`) and also runs `engine.step` every batch,
    a training step of another file: it trains, so its DataParallel is reported. Seen alone
    (`project = false`) it looks like an evaluation script and is silent."""
    write(tmp_path, {"run.py": """
        import torch
        from torch import nn
        from engine import step


        def main(loader, val_loader, opt):
            model = nn.DataParallel(make()).cuda()  # expect: PTL202
            for batch in loader:
                step(model, batch, opt)
            model.eval()
            with torch.no_grad():
                for batch in val_loader:
                    model(batch)


        if __name__ == "__main__":
            main([], [], None)
    """, "engine.py": """
        def step(model, batch, opt):
            loss = model(batch).sum()
            loss.backward()
            opt.step()
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL202")) == markers(tmp_path, "PTL202") != set()
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\nproject = false\n")
    assert check(tmp_path, monkeypatch, capsys, "PTL202") == []


# -- programs that train nothing (PTL202) --------------------------------------------------------

TRAIN_WITH_MODELS = """
    import torch
    from models import build


    def main():
        model = build()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader():
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()


    if __name__ == "__main__":
        main()
"""
MODELS = """
    import torch


    def build():
        return torch.nn.DataParallel(torch.nn.Linear(4, 2)).cuda()  # expect: PTL202
"""


def test_data_parallel_in_programs_that_train_nothing_is_silent(tmp_path, monkeypatch, capsys):
    """eval.py and extract.py are scripts that train nothing; features.py only they import. A
    wrap there runs no training step, wherever it runs (once, in a loop, in a helper)."""
    write(tmp_path, {"train.py": TRAIN_WITH_MODELS, "models.py": MODELS, "eval.py": """
        import torch
        from models import build
        from features import wrap


        def evaluate(paths):
            for path in paths:
                net = torch.nn.DataParallel(build())
                print(net(torch.zeros(1, 4)))


        if __name__ == "__main__":
            evaluate(["a", "b"])
            wrap(build())
    """, "features.py": """
        import torch


        def wrap(model):
            return torch.nn.DataParallel(model)
    """, "extract.py": """
        import torch
        from features import wrap

        for x in range(3):
            print(wrap(torch.nn.Linear(4, 2))(x))
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL202")) == markers(tmp_path, "PTL202")


def test_data_parallel_in_a_module_a_training_program_imports_is_reported(tmp_path, monkeypatch, capsys):
    """features.py is imported by eval.py and by train.py, which trains: reported."""
    write(tmp_path, {"train.py": TRAIN_WITH_MODELS.replace("from models import build", "from models import build\n"
                                                            "    from features import wrap"),
                     "models.py": MODELS, "eval.py": """
        from features import wrap


        if __name__ == "__main__":
            wrap(None)
    """, "features.py": """
        import torch


        def wrap(model):
            return torch.nn.DataParallel(model)  # expect: PTL202
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL202")) == markers(tmp_path, "PTL202")


def test_data_parallel_in_a_library_module_nothing_here_runs_is_reported(tmp_path, monkeypatch, capsys):
    """No script holds lib.py: its program is not seen, and its users may train."""
    write(tmp_path, {"lib.py": """
        import torch


        def parallel(model):
            return torch.nn.DataParallel(model)  # expect: PTL202
    """, "demo.py": """
        import torch

        if __name__ == "__main__":
            net = torch.nn.DataParallel(torch.nn.Linear(2, 2))
            print(net(torch.zeros(1, 2)))
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL202")) == markers(tmp_path, "PTL202")


def test_a_star_import_keeps_the_program_seen_and_a_load_by_name_does_not(tmp_path, monkeypatch, capsys):
    """models/__init__.py star-imports models/net.py: the eval program is still all seen. tools.py
    loads a module by name: its program holds code nobody here sees, which may train."""
    write(tmp_path, {"models/__init__.py": "from .net import *\n", "models/net.py": """
        import torch


        def parallel(model):
            return torch.nn.DataParallel(model)
    """, "eval.py": """
        import torch
        import models

        if __name__ == "__main__":
            net = models.parallel(torch.nn.Linear(2, 2))
            wrapped = torch.nn.DataParallel(net)
    """, "tools.py": """
        import importlib
        import torch

        if __name__ == "__main__":
            plugin = importlib.import_module(name)
            wrapped = torch.nn.DataParallel(plugin.build())  # expect: PTL202
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL202")) == markers(tmp_path, "PTL202")


def test_a_failing_project_model_leaves_each_file_checked_on_its_own(tmp_path, monkeypatch, capsys):
    """A bug in the solve is said once on standard error; every file is still checked, as if
    alone, and no facts are kept for the next run."""
    from ptlint.semantics import project as model

    write(tmp_path, {"train.py": TRAIN_CALLS_HELPER.replace("log_metrics(loss)", "print(loss.item())"),
                     "helpers.py": """
        def log_metrics(loss):
            print(loss.item())
    """})

    def broken(self):
        raise RuntimeError("boom")

    monkeypatch.setattr(model.ProjectModel, "solve", broken)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    for _ in range(2):  # the second run finds no kept facts, and fails the same way
        code = cli.run(["check", "--output-format", "json", "--select", "PTL101", "."])
        captured = capsys.readouterr()
        assert code == 1
        assert captured.err.count("the project model of") == 1
        assert "RuntimeError: boom" in captured.err
        assert {(f["path"], f["line"]) for f in json.loads(captured.out)} == {("train.py", 12)}
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    code = cli.run(["check", "--output-format", "json", "--select", "PTL101", "."])
    assert capsys.readouterr().err == ""


FIXED_TRAIN = """
    import torch
    from metrics import top_k


    def main(mode="none"):
        model = torch.nn.Linear(4, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in [torch.randn(8, 4) for _ in range(10)]:
            logits = model(x.cuda())
            logits.sum().backward()
            opt.step()
            acc1 = top_k(logits, 1, reduction="none")
            acc5 = top_k(logits, 5, SECOND)
    USER

    if __name__ == "__main__":
        main()
"""
FIXED_METRICS = """
    import torch


    DECORATOR
    def top_k(logits, k, reduction="mean", scale=None):
        values, _ = torch.topk(logits, k, dim=-1)
        if reduction == "mean":
            return values.sum(dim=-1).mean().item()EXPECT_MEAN
        if scale is not None and reduction in ("sum", "mean"):
            return values.sum().item()EXPECT_SCALE
        return values.sum(dim=-1)
"""


REPORTED = "  # expect: PTL101"


@pytest.mark.parametrize("second, user, decorator, config, expect_mean, expect_scale", [
    ('"none"', "", "", "", "", ""),  # every call passes "none": the "mean" branch never runs
    ('reduction="none"', "", "", "", "", ""),
    ('"mean"', "", "", "", REPORTED, ""),  # one call passes "mean"; none passes `scale` still
    ("mode", "", "", "", "", ""),  # `main`'s parameter, handed on: `main()` leaves it at "none"
    ("mode.lower()", "", "", "", REPORTED, REPORTED),  # a value the call site does not show
    ('*("none",)', "", "", "", REPORTED, REPORTED),  # spread arguments
    ('"none"', "    stats = list(map(top_k, [logits], [1]))\n", "", "", REPORTED, REPORTED),  # handed on
    ('"none"', "", "@register", "", REPORTED, REPORTED),  # a decorator may call it with anything
    ('"none"', "", "", "hook: top_k\n", REPORTED, REPORTED),  # a config names it
    ('"none"', "", "", "# top_k\n", "", ""),  # a doc that names it calls nothing (a .md below)
])
def test_a_branch_no_call_in_the_project_takes_never_runs(tmp_path, monkeypatch, capsys, second, user, decorator,
                                                            config, expect_mean, expect_scale):
    """`if reduction == "mean":` in a helper every training step calls, where every call passes
    `reduction="none"`: the read there never runs (guided-diffusion's classifier_train.py). The
    `scale` test is decided with it: no call passes `scale`, its default is None."""
    metrics = FIXED_METRICS.replace("DECORATOR", decorator).replace("EXPECT_MEAN", expect_mean) \
        .replace("EXPECT_SCALE", expect_scale)
    if decorator:
        metrics = metrics.replace("    import torch\n", "    import torch\n\n\n    def register(f):\n        return f\n")
    files = {"train.py": FIXED_TRAIN.replace("SECOND", second).replace("    USER\n", user),
             "metrics.py": metrics}
    if config.startswith("#"):
        files["README.md"] = config
    elif config:
        files["configs/run.yaml"] = config
    write(tmp_path, files)
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


def test_a_branch_on_a_parameter_the_function_rebinds_or_of_a_library_is_kept(tmp_path, monkeypatch, capsys):
    """A parameter assigned in the function may hold anything at the test; in a project with no
    program (a library), its users call the function with any arguments."""
    metrics = FIXED_METRICS.replace("DECORATOR", "").replace("EXPECT_MEAN", REPORTED) \
        .replace("EXPECT_SCALE", REPORTED).replace('values, _ = torch', 'reduction = reduction or "mean"\n        values, _ = torch')
    write(tmp_path, {"train.py": FIXED_TRAIN.replace("SECOND", '"none"').replace("    USER\n", ""), "metrics.py": metrics})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101") != set()
    library = FIXED_TRAIN.replace("SECOND", '"none"').replace("    USER\n", "").split("\n\n    if __name__")[0] + "\n"
    metrics = FIXED_METRICS.replace("DECORATOR", "").replace("EXPECT_MEAN", REPORTED).replace("EXPECT_SCALE", REPORTED)
    write(tmp_path, {"train.py": library, "metrics.py": metrics})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101") != set()


def test_received_arguments_per_parameter():
    from ptlint.semantics.project import _received

    parameters = [["x", "k", "mode"], {"x": "r", "k": ["c", 1], "mode": ["c", "mean"]}, False]
    c = lambda value: ["c", value]  # noqa: E731
    assert _received(parameters, [[[0], {"mode": c("none")}], [[0, c(5)], {"mode": c("none")}]]) == {
        "k": [1, 5], "mode": ["none"]}
    assert _received(parameters, [[[0, c(True)], {}], [[0, c(1)], {}]]) == {"k": [True, 1], "mode": ["mean"]}
    assert _received(parameters, [[[0, 0], {}]]) == {"mode": ["mean"]}  # k unknown
    assert _received(parameters, [[[0], {}], None]) == {}  # spread arguments at a call
    assert _received(parameters, [[[0, 0, 0, 0], {}]]) == {}  # more positional arguments than it takes
    assert _received(parameters, [[[0], {"other": c(1)}]]) == {}  # a keyword it does not take
    assert _received(parameters, [[[0, c(1)], {"k": c(2)}]]) == {}  # `k` given twice
    assert _received(parameters, [[[], {}]]) == {}  # `x` left out
    assert _received([["x"], {"x": "r"}, True], [[[c(1)], {}]]) == {}  # *args or **kwargs: unknown calls


def test_received_arguments_of_optional_calls_and_handed_on_values():
    from ptlint.semantics.project import _received

    parameters = [["x", "mode"], {"x": "r", "mode": ["c", "fast"]}, False]
    c = lambda value: ["c", value]  # noqa: E731
    # a call on an object of no known class that cannot run the def is left out; one that can counts
    assert _received(parameters, [[[0], {}]], [[[0, 0, 0], {}], [[], {"shape": 0}]]) == {"mode": ["fast"]}
    assert _received(parameters, [[[0], {}]], [[[0], {"mode": c("slow")}]]) == {"mode": ["fast", "slow"]}
    assert _received(parameters, [[[0], {}]], [None]) == {}  # spread: anything
    # the values a caller's parameter received, handed on; unknown where they are not known
    assert _received(parameters, [[[0], {"mode": ["v", ["a", "b"]]}]]) == {"mode": ["a", "b"]}
    assert _received(parameters, [[[0], {"mode": ["p", "mode"]}]]) == {}


SOLVER_TRAIN = """
    import torch
    from solver import Solver


    def main():
        model = torch.nn.Linear(4, 4).cuda()
        solver = Solver(model)
        for x in [torch.randn(8, 4) for _ in range(10)]:
            y = solver.sample(x.cuda()CALL)
        OTHER

    if __name__ == "__main__":
        main()
"""
SOLVER = """
    import torch


    class Solver:
        def __init__(self, model):
            self.model = model

        def steps(self, skip_type, n, device):
            if skip_type == "logSNR":
                return torch.linspace(0, 1, n).to(device)EXPECT
            return torch.linspace(0, 1, n, device=device)

        def sample(self, x, steps=10, skip_type="time_uniform", method="fast"):
            t = self.steps(skip_type, steps, x.device)
            for step in t:
                x = self.model(x)
                if method == "singlestep":
                    x = x + torch.ones(x.shape).to(x.device)EXPECT
            return x
"""


MOVED = "  # expect: PTL201"


@pytest.mark.parametrize("call, other, expect", [
    ("", "", ""),  # the defaults: neither branch runs (the second through `steps`, handed on)
    (', skip_type="logSNR", method="singlestep"', "", MOVED),  # a call that takes the branches
    ("", "z = make().sample(torch.zeros(2), skip_type='logSNR', method='singlestep')", MOVED),  # of no known class
    ("", "z = make().sample(torch.zeros(2), 3, 4, 5, 6)", ""),  # one that cannot run `Solver.sample`
    ("", "f = getattr(solver, name)(x, 3, 'logSNR', 'singlestep')", MOVED),  # a method reached by a computed name
])
def test_a_branch_of_a_method_no_call_takes_never_runs(tmp_path, monkeypatch, capsys, call, other, expect):
    """A sampler's `method` and `skip_type` keep their defaults at every call in the project
    (efficientvit's and coqui-TTS's vendored DPM-Solver): the branches of the other values never
    run, also in the method the value is handed on to."""
    train = SOLVER_TRAIN.replace("CALL", call).replace("    OTHER\n", f"    {other}\n" if other else "")
    write(tmp_path, {"train.py": train, "solver.py": SOLVER.replace("EXPECT", expect)})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")


def test_a_parameter_rebound_before_it_is_handed_on_is_not_its_callers_value(tmp_path, monkeypatch, capsys):
    solver = SOLVER.replace("EXPECT", "", 1).replace("EXPECT", "").replace(
        "            return torch.linspace(0, 1, n).to(device)", "            return torch.linspace(0, 1, n).to(device)" + MOVED) \
        .replace("            t = self.steps(", "            skip_type = skip_type or \"logSNR\"\n            t = self.steps(")
    write(tmp_path, {"train.py": SOLVER_TRAIN.replace("CALL", "").replace("    OTHER\n", ""), "solver.py": solver})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201") != set()


def test_a_forward_or_a_framework_classs_method_keeps_its_branches(tmp_path, monkeypatch, capsys):
    """`forward` runs through `model(x)` with arguments no call shows, and a class with a base of
    another library may have its methods called by that library."""
    forward = SOLVER.replace("EXPECT", MOVED).replace("def sample(", "def forward(")
    train = SOLVER_TRAIN.replace("solver.sample(", "solver.forward(").replace("CALL", "").replace("    OTHER\n", "")
    write(tmp_path, {"train.py": train, "solver.py": forward})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201") != set()
    framework = SOLVER.replace("EXPECT", MOVED).replace("    import torch\n", "    import torch\n    import lightning\n", 1) \
        .replace("class Solver:", "class Solver(lightning.LightningModule):")
    write(tmp_path, {"train.py": SOLVER_TRAIN.replace("CALL", "").replace("    OTHER\n", ""), "solver.py": framework})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201") != set()


def test_an_evaluation_pass_run_once_after_training_is_once_and_an_inference_programs_is_not(
        tmp_path, monkeypatch, capsys):
    """`evaluate_standard(test_loader, model)` once after the training loop (fast_adversarial's
    train_fgsm.py): its per-batch reads cost one pass of a run that trains. The same pass in a
    program that trains nothing (an evaluation script) is that program's work: each batch counts."""
    utils = """
        import torch


        def evaluate_standard(loader, model):
            total = 0.0
            for x, y in loader:
                total += torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).item()MARK
            return total
    """
    train = """
        import torch
        from utils import evaluate_standard


        def main(model, loader, test_loader, opt):
            for epoch in range(10):
                for x, y in loader:
                    loss = model(x.cuda()).sum()
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
            evaluate_standard(test_loader, model)


        if __name__ == "__main__":
            main(None, [], [], None)
    """
    evaluate = """
        from utils import evaluate_standard

        if __name__ == "__main__":
            evaluate_standard([], None)
    """
    write(tmp_path, {"train.py": train, "utils.py": utils.replace("MARK", "")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == set()
    write(tmp_path, {"train.py": evaluate, "utils.py": utils.replace("MARK", "  # expect: PTL101")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101") != set()


def test_received_counts_positional_arguments_kept_as_a_number():
    from ptlint.semantics.project import _received

    parameters = [["x", "k"], {"x": "r", "k": ["c", 1]}, False]
    assert _received(parameters, [1, 1]) == {"k": [1]}  # `f(a)` twice: k at its default
    assert _received(parameters, [2]) == {}  # `f(a, b)`: k unknown
    assert _received(parameters, [3]) == {}  # more than it takes


SCRIPT_WITH_HELPER = """
    import argparse
    import torch


    def fliplr(img):
        inv_idx = torch.arange(img.size(3) - 1, -1, -1).long().cuda(){expect}
        return img.index_select(3, inv_idx)


    def main(model, loader, opt):
        args = argparse.Namespace(lr=0.1)
        print(vars(args))
        for x in loader:
            loss = model(x.cuda()).sum()
            loss.backward()
            opt.step()
            {use}


    if __name__ == "__main__":
        main(None, [], None)
"""


@pytest.mark.parametrize("use, expect", [
    ("pass", ""),  # train.py never calls its own copy: test.py's calls are of test.py's fliplr
    ("fliplr(x)", "  # expect: PTL201"),
])
def test_a_scripts_own_helper_that_only_a_namesake_elsewhere_calls_never_runs(tmp_path, monkeypatch, capsys,
                                                                               use, expect):
    """train.py and test.py each define `fliplr` (copied helpers, Person_reID's scripts); only
    test.py calls its own. `vars(args)` reads an object, not the script's globals."""
    test_script = SCRIPT_WITH_HELPER.format(expect="  # expect: PTL201", use="fliplr(x)")
    write(tmp_path, {"train.py": SCRIPT_WITH_HELPER.format(expect=expect, use=use), "test.py": test_script})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201") != set()


def test_a_script_that_reads_its_own_globals_keeps_its_defs(tmp_path, monkeypatch, capsys):
    script = SCRIPT_WITH_HELPER.format(expect="  # expect: PTL201", use="pass").replace("vars(args)", "vars()")
    write(tmp_path, {"train.py": script})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201") != set()


@pytest.mark.parametrize("lookup, decided", [
    ("import other\n\nfn = getattr(other, sys.argv[1])\n", True),  # another module looked into: metrics is known
    ("import metrics\n\nfn = getattr(metrics, sys.argv[1])\n", False),  # metrics looked into: any call
    ("import pkg\n\nfn = getattr(pkg, sys.argv[1])\n", True),  # a package looked into: its modules, not metrics
    ("fn = globals()[sys.argv[1]]\n", True),  # this file's own names
    ("import importlib\n\nm = importlib.import_module(sys.argv[1])\n", False),  # anything
    # a name built on a package's prefix: that package's modules, not metrics
    ("import importlib\n\nm = importlib.import_module('pkg.' + sys.argv[1])\n", True),
    ("m = __import__(f'pkg.{sys.argv[1]}', fromlist=['build'])\n", True),
    ("m = __import__('metrics' + sys.argv[1])\n", False),  # no package in the prefix: anything
    ("import importlib\n\nm = importlib.import_module('pkg.' + sys.argv[1])\nn = importlib.import_module(sys.argv[2])\n",
     False),
])
def test_a_branch_no_call_takes_is_decided_only_where_no_lookup_reaches_it(tmp_path, monkeypatch, capsys,
                                                                            lookup, decided):
    expect = "" if decided else REPORTED
    metrics = FIXED_METRICS.replace("DECORATOR", "").replace("EXPECT_MEAN", expect).replace("EXPECT_SCALE", expect)
    write(tmp_path, {"train.py": FIXED_TRAIN.replace("SECOND", '"none"').replace("    USER\n", ""),
                     "metrics.py": metrics, "other.py": "def helper(x):\n    return x\n",
                     "pkg/__init__.py": "", "pkg/inner.py": "def helper(x):\n    return x\n",
                     "run.py": "import sys\n" + lookup})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


ROLLOUT_AGENT = """
    import torch


    class Agent:
        def __init__(self, env, policy):
            self.env, self.policy = env, policy

        def collect_samples(self, min_batch_size):
            memory, steps = [], 0
            while steps < min_batch_size:
                state = self.env.reset()
                for t in range(10000):
                    with torch.no_grad():
                        action = self.policy(torch.as_tensor(state))[0].numpy()
                    state, reward, done, _ = self.env.step(action)
                    memory.append((state, action, reward))
                    steps += 1
                    if done:
                        break
            return memory
"""
ROLLOUT_SCRIPT = """
    import os
    import sys

    import torch

    sys.path.append(os.path.join(os.path.dirname(__file__), ".."))
    from core.agent import Agent

    device = torch.device("cuda")
    policy = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.Adam(policy.parameters())
    agent = Agent(make_env(), policy)


    def update_params(batch):
        loss = policy(torch.tensor(batch, device=device)).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


    def main_loop(max_iter_num):
        for i_iter in range(max_iter_num):
            batch = agent.collect_samples(2048)
            update_params(batch)
            torch.cuda.empty_cache()EXPECT


    main_loop(500)
"""


@pytest.mark.parametrize("marker", [True, False])
@pytest.mark.parametrize("rollout, expect", [
    # each iteration collects a rollout of thousands of environment steps, then updates once
    ("batch = agent.collect_samples(2048)", ""),
    # no rollout: the loop is the training step's own
    ("batch = [[0.0] * 4]", "  # expect: PTL102"),
])
def test_an_iteration_that_collects_a_rollout_is_an_outer_loop(tmp_path, monkeypatch, capsys, marker, rollout,
                                                               expect):
    """`for i_iter in range(max_iter_num): batch = agent.collect_samples(n); update(batch)`, where
    `agent` is a global instance of a class of another folder whose method runs the environment
    for many steps: what else the iteration does runs once per rollout, not per step. Also in a
    tree with no project marker (the script in `examples/` imports the root's `core` package)."""
    files = {"core/__init__.py": "", "core/agent.py": ROLLOUT_AGENT,
             "examples/ppo_gym.py": ROLLOUT_SCRIPT.replace("batch = agent.collect_samples(2048)", rollout)
             .replace("EXPECT", expect)}
    if marker:
        write(tmp_path, files)
    else:
        for name, text in files.items():
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())
    assert found(check(tmp_path, monkeypatch, capsys, "PTL102")) == markers(tmp_path, "PTL102")


def test_a_batch_loop_calling_a_loss_with_an_attack_loop_stays_the_step_loop(tmp_path, monkeypatch, capsys):
    """A loss computed with an inner loop that backpropagates (an adversarial attack's steps) is
    part of one training step: the batch loop that calls it is no outer loop."""
    write(tmp_path, {"trades.py": """
        import torch


        def trades_loss(model, x, y, optimizer, steps=10):
            delta = torch.zeros_like(x, requires_grad=True)
            attack = torch.optim.SGD([delta], lr=0.01)
            for _ in range(steps):
                attack.zero_grad()
                (-model(x + delta).mean()).backward()
                attack.step()
            return torch.nn.functional.cross_entropy(model(x + delta.detach()), y)
    """, "train.py": """
        import torch
        from trades import trades_loss


        def train(model, train_loader, optimizer):
            for batch_idx, (data, target) in enumerate(train_loader):
                data, target = data.cuda(), target.cuda()
                loss = trades_loss(model, data, target, optimizer)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                torch.cuda.empty_cache()  # expect: PTL102


        if __name__ == "__main__":
            train(torch.nn.Linear(4, 2).cuda(), [], None)
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL102")) == markers(tmp_path, "PTL102")


@pytest.mark.parametrize("loop", [
    # the loop of environment steps itself: an evaluation rollout every N steps changes nothing
    """for t in range(int(max_timesteps)):
                state, reward, done, _ = env.step(agent.policy(torch.as_tensor(state).cuda()).argmax().item())
                torch.cuda.empty_cache()  # expect: PTL102
                if (t + 1) % 5000 == 0:
                    agent.collect_samples(10)""",
    # a planning rollout (in a model of the environment) before each real step
    """for t in range(int(max_timesteps)):
                agent.collect_samples(10)
                state, reward, done, _ = env.step(agent.policy(torch.as_tensor(state).cuda()).argmax().item())
                torch.cuda.empty_cache()  # expect: PTL102""",
    # a rollout only every N iterations: each iteration is still one step
    """for i_iter in range(max_timesteps):
                loss = agent.policy(torch.zeros(4).cuda()).sum()
                loss.backward()
                torch.cuda.empty_cache()  # expect: PTL102
                if i_iter % 100 == 0:
                    agent.collect_samples(10)""",
])
def test_a_loop_that_steps_or_evaluates_now_and_then_stays_the_step_loop(tmp_path, monkeypatch, capsys, loop):
    write(tmp_path, {"core/__init__.py": "", "core/agent.py": ROLLOUT_AGENT, "train.py": f"""
        import torch
        from core.agent import Agent


        def main(env, policy, max_timesteps):
            agent = Agent(env, policy)
            state = env.reset()
            {loop}


        if __name__ == "__main__":
            main(make_env(), torch.nn.Linear(4, 2).cuda(), 1e6)
    """})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL102")) == markers(tmp_path, "PTL102") != set()


@pytest.mark.parametrize("module, decided", [
    ("json", True),  # the standard library's, though a folder above the project is named so
    ("proc", True),  # a package of its own, though the filesystem's root holds /proc
    ("helpers", False),  # a folder above the project: may be the project's (a `sys.path` insert)
])
def test_without_a_marker_folders_above_may_hold_the_projects_modules_but_not_the_libraries(
        tmp_path, monkeypatch, capsys, module, decided):
    """With no pyproject.toml, setup.py or .git, an import of a module found in a folder above the
    file may be the project's; a lookup into it (`getattr(helpers, name)`) could reach anything,
    so a branch no call takes is left undecided. Not a module of the standard library, nor a
    folder at the filesystem's root: those lookups reach no code of the project."""
    (tmp_path / "json").mkdir()
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "__init__.py").write_text("")
    project = tmp_path / "project"
    expect = "" if decided else REPORTED
    metrics = FIXED_METRICS.replace("DECORATOR", "").replace("EXPECT_MEAN", expect).replace("EXPECT_SCALE", expect)
    for name, text in {"train.py": FIXED_TRAIN.replace("SECOND", '"none"').replace("    USER\n", ""),
                       "metrics.py": metrics,
                       "run.py": f"import sys\nimport {module}\n\nfn = getattr({module}, sys.argv[1])\n"}.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    monkeypatch.chdir(project)
    monkeypatch.delenv("PTLINT_CACHE_DIR", raising=False)
    cli.run(["check", "--output-format", "json", "--select", "PTL101", "."])
    assert found(json.loads(capsys.readouterr().out)) == markers(project, "PTL101")


# -- a folder of the project put on sys.path by the script (`_init_paths.py`, `sys.path.insert`) --------

SYS_PATH_PROJECT = {
    "tools/_init_paths.py": """
        import os.path as osp
        import sys
        sys.path.insert(0, osp.join(osp.dirname(__file__), "..", "lib"))
    """,
    "tools/train.py": """
        import _init_paths
        import torch
        from torch import nn
        from core.function import train

        def main():
            model = nn.DataParallel(Net()).cuda()  # expect: PTL202
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for epoch in range(10):
                train(model, loader, opt)

        if __name__ == "__main__":
            main()
    """,
    "tools/finetune.py": """
        import _init_paths
        from utils.meters import record

        def main(model, loader, opt, meter):
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
                record(meter, loss)

        if __name__ == "__main__":
            main(*build())
    """,
    "lib/utils/meters.py": """
        def record(meter, loss):
            meter.append(loss.item())  # expect: PTL101
    """,
    "lib/core/function.py": """
        def train(model, loader, opt):
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
                opt.zero_grad()
                loss.backward()
                opt.step()
    """,
}


def test_a_module_found_through_a_project_folder_the_script_puts_on_sys_path(tmp_path, monkeypatch, capsys):
    # `core.function` is nowhere below the script's folder or the root: the one module of the
    # project ending so is lib/core/function.py, which trains, so the program is no inference-only one
    # (and `utils.meters` is lib/utils/meters.py, whose helper the fine-tuning loop calls per step)
    write(tmp_path, SYS_PATH_PROJECT)
    assert found(check(tmp_path, monkeypatch, capsys, "PTL202,PTL101")) == markers(tmp_path, "PTL202,PTL101")


def test_two_modules_ending_so_leave_the_import_unknown(tmp_path, monkeypatch, capsys):
    # a second a/core/function.py (found first, were one taken), which does not train: the import
    # is unknown, and a program with unknown code is not taken for an inference-only one
    files = dict(SYS_PATH_PROJECT)
    files["a/core/function.py"] = "def train(model, loader, opt):\n    return model\n"
    write(tmp_path, files)
    assert ("tools/train.py", 7, "PTL202") in found(check(tmp_path, monkeypatch, capsys, "PTL202"))


@pytest.mark.parametrize("bound, expect", [
    ("batch_size", "  # expect: PTL107"),  # the samples of one batch: each image is still a step
    ("num_batches", ""),  # a pass over the data: the loop around its call repeats whole passes
])
def test_a_helper_that_loops_over_one_batch_is_no_pass_over_the_data(tmp_path, monkeypatch, capsys, bound, expect):
    write(tmp_path, {
        "demo.py": f"""
            import torch
            from boxes import clip_boxes

            def main():
                model = torch.load("model.pt").cuda()
                model.eval()
                while True:
                    image = torch.from_numpy(read()).cuda()
                    boxes = model(image){expect}
                    clip_boxes(boxes, image.shape, {bound})

            if __name__ == "__main__":
                main()
        """,
        "boxes.py": """
            def clip_boxes(boxes, shape, batch_size):
                for i in range(batch_size):
                    boxes[i].clamp_(0, shape[-1] - 1)
                return boxes

            def clip_all(boxes, shape, num_batches):
                for i in range(num_batches):
                    boxes[i].clamp_(0, shape[-1] - 1)
                return boxes
        """,
    })
    if bound == "num_batches":
        (tmp_path / "demo.py").write_text((tmp_path / "demo.py").read_text().replace("clip_boxes", "clip_all"))
    assert found(check(tmp_path, monkeypatch, capsys, "PTL107")) == markers(tmp_path, "PTL107")


@pytest.mark.parametrize("setup, expect", [
    # a vendored package whose setup.py only builds its CUDA ops: part of the training repository
    ("from torch.utils.cpp_extension import BuildExtension\nsetup(ext_modules=[], cmdclass={})\n",
     "  # expect: PTL101"),
    # a package of its own beside the scripts: its users are unknown, nothing here calls it per step
    ("from setuptools import setup\nsetup(name='meters', packages=['meters'])\n", ""),
])
def test_a_folder_whose_setup_py_only_builds_extensions_is_part_of_the_project_around_it(
        tmp_path, monkeypatch, capsys, setup, expect):
    write(tmp_path, {
        "train.py": """
            import torch
            from lib.meters import record

            def main(model, loader, opt, meter):
                model.cuda()
                for x, y in loader:
                    loss = model(x.cuda(), y.cuda())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    record(meter, loss)

            if __name__ == "__main__":
                main(*build())
        """,
        "lib/__init__.py": "",
        "lib/meters.py": f"""
            def record(meter, loss):
                meter.append(loss.item()){expect}
        """,
        "lib/setup.py": setup,
    })
    (tmp_path / "pyproject.toml").unlink()  # an archive of the repository: no marker at its root
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")
    # the one-file check (pre-commit, the editor) finds the same project
    monkeypatch.chdir(tmp_path / "lib")
    code = cli.run(["check", "--output-format", "json", "--select", "PTL101", "meters.py"])
    one = json.loads(capsys.readouterr().out)
    assert code == (1 if expect else 0) and len(one) == (1 if expect else 0)


@pytest.mark.parametrize("lookup, loads, expect", [
    # FPN-style blocks looked up by name on `self`: another class's private helper nobody calls
    # never runs, whatever `getattr(self, ...)` reaches
    ("getattr(self, name)(x)", "", ""),
    # a module imported by a computed name reaches a module's names, not a method's
    ("getattr(self, name)(x)", "importlib.import_module(sys.argv[1])", ""),
    # a method of any object called by a computed name: the helper may be reached
    ("getattr(heads, name)(x)", "", "  # expect: PTL201"),
])
def test_an_uncalled_method_is_dead_beside_lookups_on_another_class(tmp_path, monkeypatch, capsys, lookup, loads,
                                                                    expect):
    write(tmp_path, {
        "train.py": f"""
            import importlib, sys
            import torch
            from heads import RelationHead, Backbone
            {loads}

            def main(loader):
                model = torch.nn.Sequential(Backbone(), RelationHead()).cuda()
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
                for x in loader:
                    model(x.cuda()).sum().backward()
                    opt.step()

            if __name__ == "__main__":
                main(build())
        """,
        "heads.py": f"""
            import torch

            class Backbone(torch.nn.Module):
                def forward(self, x, heads=None, name="layer1"):
                    return {lookup}

                def layer1(self, x):
                    return x

                def _stage(self, proposals):  # reached by `getattr(self, name)`: kept
                    for i, boxes in enumerate(proposals):
                        idx = torch.arange(boxes.shape[0]).cuda()  # expect: PTL201
                    return idx

            class RelationHead(torch.nn.Module):
                def forward(self, proposals):
                    return proposals

                def _proposal_pairs(self, proposals):
                    for i, boxes in enumerate(proposals):
                        idx = torch.arange(boxes.shape[0]).cuda(){expect}
                    return idx
        """,
    })
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")


@pytest.mark.parametrize("use, expect", [
    ("FocalLoss", ""),  # TripletLoss imported and never built: it never runs
    ("TripletLoss", "  # expect: PTL101"),  # built, then called per step
])
def test_a_class_a_program_imports_but_never_uses_is_dead(tmp_path, monkeypatch, capsys, use, expect):
    write(tmp_path, {
        "train.py": f"""
            import torch
            from losses import TripletLoss, FocalLoss

            def main(model, loader, opt):
                model.cuda()
                criterion = {use}()
                for x, y in loader:
                    loss = criterion(model(x.cuda()), y.cuda())
                    opt.zero_grad()
                    loss.backward()
                    opt.step()

            if __name__ == "__main__":
                main(*build())
        """,
        "losses.py": f"""
            import torch

            class FocalLoss(torch.nn.Module):
                def forward(self, x, y):
                    return (x - y).pow(2).mean()

            class TripletLoss(torch.nn.Module):
                def forward(self, x, y):
                    for i in range(x.shape[0]):
                        hard = x[i].max().item(){expect}
                    return x.mean() * hard
        """,
    })
    assert found(check(tmp_path, monkeypatch, capsys, "PTL101")) == markers(tmp_path, "PTL101")


@pytest.mark.parametrize("learner, expect", [
    ("torch.autograd.grad(loss, list(self.head.parameters()))", ""),  # fast weights: the graph is needed
    ("[p.detach() for p in self.head.parameters()]", "  # expect: PTL107"),
])
def test_an_evaluation_of_a_model_that_differentiates_in_another_module(tmp_path, monkeypatch, capsys, learner,
                                                                        expect):
    write(tmp_path, {
        "models/mtl.py": f"""
            import torch
            from torch import nn

            class MtlLearner(nn.Module):
                def forward(self, shot, label, query):
                    loss = nn.functional.cross_entropy(self.head(shot), label)
                    grads = {learner}
                    return self.adapted(query, grads)
        """,
        "trainer/meta.py": f"""
            import torch
            from models.mtl import MtlLearner

            class MetaTrainer:
                def __init__(self, args):
                    self.model = MtlLearner(args).cuda()

                def eval(self, loader):
                    self.model.eval()
                    for shot, label, query in loader:
                        logits = self.model(shot.cuda(), label.cuda(), query.cuda()){expect}
        """,
    })
    assert found(check(tmp_path, monkeypatch, capsys, "PTL107")) == markers(tmp_path, "PTL107")


# -- a module's self-test, modules no program imports, what `eval` reaches ----------------------------
NET_WITH_SELF_TEST = """
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            return x * 2


    if __name__ == "__main__":
        net = Net().cuda()
        for _ in range(10):
            x = torch.randn(8, 4).cuda(){expect}
            net(x).sum().backward()
"""
TRAIN_IMPORTS_NET = """
    import torch
    from net import Net


    def main():
        model = Net().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in [torch.randn(8, 4) for _ in range(10)]:
            model(batch.cuda()).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main()
"""


@pytest.mark.parametrize("other, expect", [
    ({}, ""),  # a model's module that the training script imports: its `__main__` block is a self-test
    ({"README.md": "Benchmark the network with `python net.py`.\n"}, "  # expect: PTL201"),  # a program the docs run
    ({"scripts/bench.sh": "python net.py --steps 10\n"}, "  # expect: PTL201"),
    # nothing imports net.py: a program of its own
    ({"train.py": TRAIN_IMPORTS_NET.replace("from net import Net\n", "").replace("Net()", "torch.nn.Linear(4, 4)")},
     "  # expect: PTL201"),
])
def test_the_main_block_of_a_module_the_program_imports_is_a_self_test(tmp_path, monkeypatch, capsys, other, expect):
    """sd-scripts' `library/sdxl_original_unet.py` ends in a ten-step benchmark on random inputs that
    no training script runs (they import the module): a maintainer does not tune it."""
    write(tmp_path, {"train.py": TRAIN_IMPORTS_NET, "net.py": NET_WITH_SELF_TEST.format(expect=expect), **other})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")


@pytest.mark.parametrize("marker, other, expect", [
    ("[tool.ptlint]\nselect = ['PTL']\n", {}, ""),  # a program's tree (settings only): nothing runs tools.py
    ("", {}, ""),  # no marker at all: the folder named
    ("[project]\nname = 'p'\n", {}, "  # expect: PTL501"),  # installable: users may import any module
    ("[build-system]\nrequires = ['setuptools']\n", {}, "  # expect: PTL501"),
    ("", {"setup.py": "from setuptools import setup\n\nsetup(name='p')\n"}, "  # expect: PTL501"),
    ("", {"setup.cfg": "[metadata]\nname = p\n"}, "  # expect: PTL501"),
    ("", {"setup.cfg": "[flake8]\nmax-line-length = 120\n"}, ""),  # a tool's settings only
    ("[tool.ptlint]\n", {"README.md": "Shrink a model with `from tools import shrink_params`.\n"},
     "  # expect: PTL501"),  # the docs name the module: others import it
])
def test_a_module_no_program_imports_in_a_tree_nobody_installs(tmp_path, monkeypatch, capsys, marker, other, expect):
    write(tmp_path, {"train.py": USES_HELPERS, "helpers.py": HELPERS.format(scale="", attention=""),
                     "tools.py": EXTRA.format(expect=expect), **other})
    if marker:
        (tmp_path / "pyproject.toml").write_text(marker)
    else:
        (tmp_path / "pyproject.toml").unlink()
    assert found(check(tmp_path, monkeypatch, capsys, "PTL501")) == markers(tmp_path, "PTL501")


@pytest.mark.parametrize("run, expect", [
    # `eval(text)` sees the file's globals: the names it imports, not the rest of their module
    ("import sys\nfrom helpers import Net\n\nmodel = eval(sys.argv[1])\n", ""),
    ("import sys\nfrom helpers import *\n\nmodel = eval(sys.argv[1])\n", "  # expect: PTL501"),
    ("import sys\nimport helpers\n\nmodel = eval(sys.argv[1])\n", "  # expect: PTL501"),
    # a module of the project's package that does not exist (a stale import): it reaches nothing
    ("import sys\nfrom helpers import Net\nfrom models.gone import Old\n\nmodel = eval(sys.argv[1])\n", ""),
])
def test_what_eval_reaches_is_what_the_file_imports(tmp_path, monkeypatch, capsys, run, expect):
    write(tmp_path, {"train.py": USES_HELPERS, "run.py": run, "models/__init__.py": "",
                     "helpers.py": HELPERS.format(scale=expect, attention="")})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL501")) == markers(tmp_path, "PTL501")


@pytest.mark.parametrize("spelling", ["vendor.yolo.helpers", "yolo.helpers", "helpers"])
def test_vendored_code_imported_by_the_path_of_the_repository_around_it(tmp_path, monkeypatch, capsys, spelling):
    """A detector vendored with its own setup.cfg (`detector/YOLOv5/`) is a project of its own whose
    files import each other as `detector.YOLOv5.utils.general`: the root's own folders."""
    root = tmp_path / "vendor" / "yolo"
    root.mkdir(parents=True)
    (root / "setup.cfg").write_text("[flake8]\nmax-line-length = 120\n")
    for name, text in {"train.py": TRAIN_CALLS_HELPER.replace("from helpers import", f"from {spelling} import"),
                       "helpers.py": "import torch\n\n\ndef log_metrics(loss):\n    print(loss.item())  # expect: PTL101\n",
                       }.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())
    [finding] = check(root, monkeypatch, capsys, "PTL101")
    assert (finding["path"], finding["line"]) == ("helpers.py", 5)
    assert [link["path"] for link in finding["context"]["via"]] == ["train.py", "train.py"]


def test_a_module_with_an_unused_method_still_has_its_unused_defs_found(tmp_path, monkeypatch, capsys):
    """A method nothing names and a function nothing calls, in one imported module: both never run."""
    helpers = HELPERS.format(scale="", attention="").replace(
        "    class Net(torch.nn.Module):\n", "    class Net(torch.nn.Module):\n        def spare(self):\n            pass\n\n")
    write(tmp_path, {"train.py": USES_HELPERS, "helpers.py": helpers})
    assert "def spare" in (tmp_path / "helpers.py").read_text()
    assert found(check(tmp_path, monkeypatch, capsys, "PTL501")) == set()


LOADS_MODEL = """
    import importlib
    import sys

    import torch

    MODEL = importlib.import_module(sys.argv[1])
    net = MODEL.Net().cuda()
    criterion = MODEL.LOSS
    for batch in [torch.randn(8, 4) for _ in range(10)]:
        loss = criterion(net(batch.cuda()))
        loss.backward()
"""
LOSS_MODULE = """
    import torch


    class Net(torch.nn.Module):
        def forward(self, x):
            return x


    def get_loss(out):
        weights = torch.ones(out.shape[0]).cuda(){expect}
        return (out.sum(1) * weights).mean()


    def other_loss(out):
        weights = torch.ones(out.shape[0]).cuda()
        return (out.sum(1) * weights).mean()


    if __name__ == "__main__":
        print(get_loss(torch.randn(2, 4).cuda()), other_loss(torch.randn(2, 4).cuda()))
"""


@pytest.mark.parametrize("taken, expect", [
    ("get_loss", "  # expect: PTL201"),  # `criterion = MODEL.get_loss`: called where no call site shows it
    ("Net", ""),  # only the module's self-test calls `get_loss`: once
])
def test_a_def_taken_from_a_module_loaded_by_name_has_callers_nobody_sees(tmp_path, monkeypatch, capsys, taken,
                                                                           expect):
    write(tmp_path, {"train.py": LOADS_MODEL.replace("LOSS", taken), "votenet.py": LOSS_MODULE.format(expect=expect)})
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")


def test_what_a_def_taken_by_name_calls_in_another_file_runs_as_often(tmp_path, monkeypatch, capsys):
    module = LOSS_MODULE.format(expect="").replace(
        "        weights = torch.ones(out.shape[0]).cuda()\n        return (out.sum(1) * weights).mean()\n\n\n    def other",
        "        return (out.sum(1) * weights.make(out.shape[0])).mean()\n\n\n    def other", 1)
    module = module.replace("    import torch\n", "    import torch\n\n    import weights\n", 1)
    write(tmp_path, {"train.py": LOADS_MODEL.replace("LOSS", "get_loss"), "votenet.py": module, "weights.py": """
        import torch


        def make(n):
            return torch.ones(n).cuda()  # expect: PTL201
    """})
    assert "weights.make(" in (tmp_path / "votenet.py").read_text()
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")


# A script run from the folder above `layers/` (no `__init__.py`), training the model it imports,
# and the module two copies of which the import could find.
SCRIPT_IMPORTING = """
    import torch
    from {module} import {model}


    def main():
        model = {model}().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in [torch.randn(8, 4) for _ in range(1000)]:
            model(batch.cuda()).sum().backward()
            opt.step()


    if __name__ == "__main__":
        main()
"""
ATTENTION_COPY = """
    import torch


    class Attention(torch.nn.Module):
        def forward(self, x):
            return {used}

        def fast(self, x):
            return x * 2

        def full(self, x):
            index = torch.arange(x.shape[1]).cuda(){expect}
            return x[:, index]
"""


@pytest.mark.parametrize("used, expect", [("self.full(x)", "  # expect: PTL201"), ("self.fast(x)", "")])
def test_an_import_two_copies_could_answer_finds_the_one_above_the_importer(tmp_path, monkeypatch, capsys, used,
                                                                            expect):
    """`python run.py` from the folder holding `models/` and `layers/` (no `__init__.py`): Python
    finds `layers.attention` in the script's folder, not the copy under `Formers/Old/layers/`. So
    the model knows which methods of that module run: a method nothing calls never runs."""
    write(tmp_path, {
        "exp/run.py": SCRIPT_IMPORTING.format(module="models.net", model="Net"),
        "exp/models/net.py": """
            import torch
            from layers.attention import Attention


            class Net(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attention = Attention()

                def forward(self, x):
                    return self.attention(x)
        """,
        "exp/layers/attention.py": ATTENTION_COPY.format(used=used, expect=expect),
        "exp/Formers/Old/layers/attention.py": ATTENTION_COPY.format(used="self.fast(x)", expect=""),
    })
    (tmp_path / "pyproject.toml").unlink()  # a tree of scripts, not a library others import
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")


def test_an_import_two_copies_answer_and_neither_above_the_importer_stays_unknown(tmp_path, monkeypatch, capsys):
    """The same import with the copies in two sibling folders, neither above the importer: which
    one runs is unknown, so no method of either is taken for dead."""
    attention = ATTENTION_COPY.format(used="x * 2", expect="  # expect: PTL201")
    write(tmp_path, {
        "exp/run.py": SCRIPT_IMPORTING.format(module="layers.attention", model="Attention"),
        "a/layers/attention.py": attention,
        "b/layers/attention.py": attention,
    })
    (tmp_path / "pyproject.toml").unlink()
    assert found(check(tmp_path, monkeypatch, capsys, "PTL201")) == markers(tmp_path, "PTL201")
