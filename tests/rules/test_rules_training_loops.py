"""The data-movement and loop-hygiene rules (PTL103-PTL110, PTL204, PTL205) on whole programs
written the way public training code is: every line marked `# expect: CODE` carries that finding,
no other line carries one of these codes. The programs follow well-known shapes (the MNIST
example of pytorch/examples, minGPT's trainer, a nanoGPT-style timed loop, a YOLO-style loop,
a Lightning module, a benchmark script, a Lightning Fabric fine-tuning script), not the rules'
own examples."""

from __future__ import annotations

import pytest
from test_rule_examples import expected_lines

from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import lint_source
from ptlint.front.api import check_text, fix_text

CODES = ["PTL103", "PTL104", "PTL105", "PTL106", "PTL107", "PTL108", "PTL109", "PTL110", "PTL204", "PTL205"]

MNIST = '''
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)  # expect: PTL104
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(epoch, loss.item())


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)  # reads back every batch below: nothing to overlap
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss, correct


def score(model, device, test_loader):
    model.eval()
    losses = []
    for data, target in test_loader:
        data, target = data.to(device), target.to(device)  # an evaluation loop: PTL104 is for training steps
        output = model(data)  # expect: PTL107
        losses.append(F.nll_loss(output, target))  # expect: PTL103
    return losses


def main():
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": args.test_batch_size}
    if use_cuda:
        cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs.update(cuda_kwargs)
    transform = transforms.Compose([transforms.ToTensor()])
    dataset1 = datasets.MNIST("../data", train=True, download=True, transform=transform)
    dataset2 = datasets.MNIST("../data", train=False, transform=transform)
    train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        score(model, device, test_loader)


if __name__ == "__main__":
    main()
'''

MINGPT = '''
import time
from collections import defaultdict

import torch
from torch.utils.data.dataloader import DataLoader


class Trainer:
    def __init__(self, config, model, train_dataset):
        self.config = config
        self.model = model
        self.train_dataset = train_dataset
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = self.model.to(self.device)
        self.callbacks = defaultdict(list)

    def run(self):
        model, config = self.model, self.config
        self.optimizer = model.configure_optimizers(config)
        train_loader = DataLoader(
            self.train_dataset,
            sampler=torch.utils.data.RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10)),
            shuffle=False,
            pin_memory=True,
            batch_size=config.batch_size,
            num_workers=config.num_workers,
        )
        model.train()
        self.iter_num = 0
        self.iter_time = time.time()
        data_iter = iter(train_loader)
        while True:
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            batch = [t.to(self.device) for t in batch]  # expect: PTL104
            x, y = batch
            logits, self.loss = model(x, y)
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
            self.optimizer.step()
            self.iter_num += 1
            tnow = time.time()  # expect: PTL108
            self.iter_dt = tnow - self.iter_time
            self.iter_time = tnow
            if config.max_iters is not None and self.iter_num >= config.max_iters:
                break
'''

YOLO_STYLE = '''
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


def train(model, dataset, compute_loss, optimizer, device, epochs, class_weights):
    train_loader = DataLoader(dataset, batch_size=16, shuffle=True, num_workers=8, pin_memory=True)
    nb = len(train_loader)
    for epoch in range(epochs):
        model.train()
        pbar = enumerate(train_loader)
        pbar = tqdm(pbar, total=nb)
        optimizer.zero_grad()
        mloss = torch.zeros(3, device=device)
        for i, (imgs, targets, paths, _) in pbar:
            imgs = imgs.to(device, non_blocking=True).float() / 255
            pred = model(imgs)
            loss, loss_items = compute_loss(pred, targets.to(device))  # expect: PTL104
            weights = class_weights.to(device)  # expect: PTL105
            loss = loss * weights.mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)  # expect: PTL106
            mloss = (mloss * i + loss_items) / (i + 1)
            model.to(device)  # expect: PTL105
'''

LIGHTNING = '''
import lightning as L
import torch
import torch.nn.functional as F


class LitClassifier(L.LightningModule):
    def __init__(self, backbone):
        super().__init__()
        self.backbone = backbone
        self.training_step_outputs = []
        self.validation_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self.backbone(x)
        loss = F.cross_entropy(y_hat, y)
        self.log("train_loss", loss)
        self.training_step_outputs.append(loss)  # expect: PTL103
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.backbone(x), y)
        self.validation_step_outputs.append(loss)
        return loss

    def on_train_epoch_end(self):
        epoch_mean = torch.stack(self.training_step_outputs).mean()
        self.log("training_epoch_mean", epoch_mean)
        self.training_step_outputs.clear()
'''

BENCHMARK = '''
import time
import timeit

import torch
import torchvision

model = torchvision.models.resnet50().cuda().eval()
x = torch.randn(32, 3, 224, 224, device="cuda")


def naive():
    start = time.time()
    for _ in range(100):
        y = model(x)
    end = time.time()  # expect: PTL108
    return (end - start) / 100


def synchronised():
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(100):
        y = model(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / 100


def compiled():
    fast = torch.compile(model)
    t0 = timeit.default_timer()
    fast(x)
    return timeit.default_timer() - t0  # expect: PTL108


with torch.inference_mode():
    print(naive(), synchronised(), compiled())
'''

DATASETS = '''
import json

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class JsonLines(IterableDataset):  # expect: PTL205
    def __init__(self, paths, tokenizer):
        self.paths = paths
        self.tokenizer = tokenizer

    def __iter__(self):
        for path in self.paths:
            with open(path) as f:
                for line in f:
                    yield torch.tensor(self.tokenizer(json.loads(line)["text"]))


class ShardedJsonLines(JsonLines):
    def __iter__(self):
        info = get_worker_info()
        paths = self.paths if info is None else self.paths[info.id::info.num_workers]
        for path in paths:
            with open(path) as f:
                yield from f


def normalise(batch):
    scale = torch.amax(batch.abs())
    return batch / torch.tensor(scale)  # expect: PTL204


loader = DataLoader(JsonLines(["a.jsonl"], len), num_workers=4)
'''

FABRIC_FINETUNE = '''
import lightning as L
import torch
from torch.utils.data import DataLoader

from mypkg.losses import token_cross_entropy


@torch.no_grad()
def validate(fabric: L.Fabric, model, val_loader: DataLoader, max_iters: int) -> torch.Tensor:
    model.eval()
    losses = torch.zeros(min(len(val_loader), max_iters))
    for k, batch in enumerate(val_loader):
        if k >= max_iters:
            break
        logits = model(batch["input_ids"])
        losses[k] = token_cross_entropy(logits[..., :-1, :], batch["labels"][..., 1:])  # expect: PTL110
    model.train()
    return losses.mean()


@torch.no_grad()
def accuracy(fabric: L.Fabric, model, val_loader: DataLoader) -> float:
    model.eval()
    hits = torch.zeros(len(val_loader), device=fabric.device)
    for k, batch in enumerate(val_loader):
        hits[k] = (model(batch["input_ids"]).argmax(-1) == batch["labels"]).float().mean()
    model.train()
    return hits.mean().item()


def fit(fabric: L.Fabric, model, optimizer, train_loader: DataLoader, val_loader: DataLoader, epochs: int):
    epoch_loss = torch.zeros(epochs)
    for epoch in range(epochs):
        for step, batch in enumerate(train_loader):
            logits = model(batch["input_ids"])
            loss = token_cross_entropy(logits[..., :-1, :], batch["labels"][..., 1:])
            fabric.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        epoch_loss[epoch] = validate(fabric, model, val_loader, max_iters=100)
        fabric.print(f"epoch {epoch}: {epoch_loss[epoch].item():.3f}, {accuracy(fabric, model, val_loader):.3f}")
    return epoch_loss


def main(fabric: L.Fabric, model, optimizer, train_loader, val_loader):
    model, optimizer = fabric.setup(model, optimizer)
    train_loader, val_loader = fabric.setup_dataloaders(train_loader, val_loader)
    validate(fabric, model, val_loader, max_iters=2)  # sanity check
    fit(fabric, model, optimizer, train_loader, val_loader, epochs=3)
'''

PROGRAMS = {"mnist": MNIST, "mingpt": MINGPT, "yolo-style": YOLO_STYLE, "lightning": LIGHTNING,
            "benchmark": BENCHMARK, "datasets": DATASETS, "fabric-finetune": FABRIC_FINETUNE}


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("code", CODES)
def test_program_findings_match_markers(name, code):
    program = PROGRAMS[name]
    found = sorted(f.line for f in check_text(program, [code]) if f.code == code)
    assert found == expected_lines(program, code)


@pytest.mark.parametrize("name", PROGRAMS)
def test_test_code_is_silent(name):
    rules = all_rules()
    findings = lint_source(SourceFile("tests/test_train.py", PROGRAMS[name]), [rules[c] for c in CODES],
                           test_code=True)
    # PTL1 and PTL2 are performance rules: silent in test code
    assert findings == []


def test_cold_branch_is_silent():
    program = '''
import time
import torch

def train(model, loader, opt, weights, device):
    for x in loader:
        loss = model(x).mean()
        if not torch.isfinite(loss):
            opt.zero_grad(set_to_none=False)
            w = weights.to(device)
            raise FloatingPointError(f"bad loss with {torch.tensor(loss)}")
        loss.backward()
        opt.step()
'''
    assert [f for f in check_text(program, CODES)] == []
    hot = program.replace("raise FloatingPointError", "print")
    assert sorted(f.code for f in check_text(hot, CODES)) == ["PTL105", "PTL106", "PTL204"]


def test_fixes_of_a_whole_program():
    fixed = fix_text(MNIST, ["PTL104"])
    assert fixed.count("non_blocking=True") == 2  # the training loop only: not test() or score(), evaluation loops
    assert "data, target = data.to(device, non_blocking=True), target.to(device, non_blocking=True)" in fixed
    assert fix_text(MNIST, ["PTL103"]) == MNIST  # unsafe: not without --unsafe-fixes
    unsafe = fix_text(MNIST, ["PTL103"], unsafe=True)
    assert "losses.append(F.nll_loss(output, target).detach())" in unsafe
    yolo = fix_text(YOLO_STYLE, ["PTL106"], unsafe=True)
    assert "optimizer.zero_grad()  # expect: PTL106" in yolo
    assert fix_text(FABRIC_FINETUNE, ["PTL110"]) == FABRIC_FINETUNE  # unsafe: not without --unsafe-fixes
    fabric = fix_text(FABRIC_FINETUNE, ["PTL110"], unsafe=True)
    assert "losses = torch.zeros(min(len(val_loader), max_iters), device=fabric.device)" in fabric
    assert fabric.count("device=fabric.device") == 2  # the one made on the device already stays as it was


# PTL101 (sync-in-loop): each kind of read names itself in the message, which says whether the
# read stalls a loop or a training step; and a module of the data pipeline, found by its path,
# works on host tensors.
SYNC_READS = '''
import torch

def train(model, loader, opt, log):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        log.append(loss.item())
        opt.step()
        log.append(float(loss))
        model(x)
        print(loss)
        model(x)
        log.append("{}".format(loss))
        model(x)
        log.append(f"{loss}")
        model(x)
        log.append("%g" % loss)

def keep_best(model, loader, opt):
    best = torch.tensor(float("inf"))
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        opt.step()
        if loss < best:
            best = loss.detach()
        scale = loss if loss > 1 else 1.0

class Lit:
    def training_step(self, batch, idx):
        loss = self.model(batch).mean()
        self.log("loss", loss.detach().cpu())
        return loss
'''


def test_sync_in_loop_messages_name_the_read():
    in_loop = "in a loop waits for the GPU every iteration (device-to-host sync)"
    in_step = "in code that runs every step waits for the GPU (device-to-host sync)"
    found = [(f.line, f.message) for f in check_text(SYNC_READS, ["PTL101"])]
    assert found == [
        (8, f"`.item()` {in_loop}"),
        (10, f"`float()` of a tensor {in_loop}"),
        (12, f"`print()` of a tensor {in_loop}"),
        (14, f"`.format()` of a tensor {in_loop}"),
        (16, f"formatting a tensor (f-string) {in_loop}"),
        (18, f"`%` formatting of a tensor {in_loop}"),
        (26, f"`if` on a tensor's value {in_loop}"),
        (28, f"a conditional expression on a tensor's value {in_loop}"),
        (33, f"`.cpu()` of a one-element tensor {in_step}"),
    ]


@pytest.mark.parametrize("path,reported", [
    ("proj/train.py", True),
    ("proj/utils/data.py", True),  # a file named `data`, not a `data/` folder
    ("proj/data/train.py", False),
    ("src/pkg/datasets/loop.py", False),
    ("proj\\Data\\train.py", False),  # Windows separators, any case
    ("proj/my_collate.py", False),
    ("proj/export_onnx.py", False),
])
def test_sync_in_loop_is_silent_in_data_pipeline_modules(path, reported):
    lines = [f.line for f in check_text(SYNC_READS, ["PTL101"], path=path)]
    assert lines == ([8, 10, 12, 14, 16, 18, 26, 28, 33] if reported else [])
