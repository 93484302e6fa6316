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
