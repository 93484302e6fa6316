"""The engine's own guarantees: how names resolve, and where code runs."""

from ptlint.api import check_text


def test_an_import_inside_a_function_binds_a_name_of_that_function_only():
    source = """
import torch

def make():
    import numpy as torch
    return torch.ones(2)

def train(loader):
    for x in loader:
        torch.cuda.synchronize()
"""
    assert [(f.code, f.line) for f in check_text(source, ["PTL102"])] == [("PTL102", 10)]


def test_a_function_level_import_resolves_inside_that_function():
    source = """
def train(loader):
    import torch as T
    for x in loader:
        T.cuda.synchronize()

def other(loader):
    for x in loader:
        T.cuda.synchronize()
"""
    assert [(f.code, f.line) for f in check_text(source, ["PTL102"])] == [("PTL102", 5)]


PER_STEP_SYNC_AND_SOFTMAX = """
import torch

def train(model, loader):
    for x in loader:
        loss = model(x).mean()
        loss.backward()
        print(loss.item())
        p = torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
"""


def test_test_code_silences_performance_rules_not_numerics(tmp_path):
    from helpers import run_json

    for folder in ("src", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "test_loop.py").write_text(PER_STEP_SYNC_AND_SOFTMAX)
    (tmp_path / "src" / "loop.py").write_text(PER_STEP_SYNC_AND_SOFTMAX)
    _, findings = run_json("check", "--select", "PTL101,PTL301", ".", cwd=tmp_path)
    found = sorted((f["path"].removeprefix("./"), f["code"]) for f in findings)
    assert found == [("src/loop.py", "PTL101"), ("src/loop.py", "PTL301"),
                     ("src/test_loop.py", "PTL301"), ("tests/test_loop.py", "PTL301")]
    # `test-code = []` turns it off
    (tmp_path / "pyproject.toml").write_text("[tool.ptlint]\ntest-code = []\n")
    _, findings = run_json("check", "--select", "PTL101,PTL301", ".", cwd=tmp_path)
    assert sorted(f["code"] for f in findings) == ["PTL101"] * 3 + ["PTL301"] * 3


def test_each_finding_carries_its_context():
    source = PER_STEP_SYNC_AND_SOFTMAX + """
def softmax(x):
    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)

probs = torch.exp(t) / torch.exp(t).sum(-1, keepdim=True)
"""
    found = [(f.code, f.line, f.context) for f in check_text(source, ["PTL101", "PTL301"])]
    assert found == [("PTL101", 8, "per-step"), ("PTL301", 9, "per-step"), ("PTL301", 12, "called"),
                     ("PTL301", 14, "once")]
