"""A program's command-line options and their defaults (ptlint.semantics.options)."""

from __future__ import annotations

import ast

import pytest

from ptlint.engine.file_context import FileContext
from ptlint.engine.source import SourceFile
from ptlint.semantics.options import UNKNOWN, holds_by_default, option_defaults

PARSER = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--world-size", default=1, type=int)
parser.add_argument("--multiprocessing-distributed", type=str2bool, default=True)
parser.add_argument("--gpu", default=None, type=int)
parser.add_argument("--mGPUs", action="store_true")
parser.add_argument("--no-cuda", dest="use_cuda", action="store_false")
parser.add_argument("--lr", default=0.1)
parser.add_argument("--fast", action="store_true", default=True)
parser.add_argument("-v", action="store_true")
parser.add_argument("-w", "--workers", default=4)
parser.add_argument(FLAG_NAME, default=3)
parser.add_argument("--arch", default=pick_arch())
parser.add_argument("--seed", default=1)
parser.add_argument("--seed", default=2)
args = parser.parse_args()
args.distributed = args.world_size > 1 or args.multiprocessing_distributed
args.multi = args.mGPUs and args.world_size > 1
args.single = args.multi
args.loop = not args.loop
"""


def context(source: str) -> FileContext:
    return FileContext(SourceFile("m.py", source), ast.parse(source))


def test_defaults_are_read_from_the_files_add_argument_calls():
    defaults = option_defaults(context(PARSER))
    assert defaults["world_size"] == 1 and defaults["multiprocessing_distributed"] is True
    assert defaults["gpu"] is None and defaults["mGPUs"] is False and defaults["use_cuda"] is True
    assert defaults["arch"] is UNKNOWN and defaults["seed"] is UNKNOWN  # computed; two defaults
    assert "no_cuda" not in defaults
    assert defaults["fast"] is True  # a default given beside store_true wins
    assert defaults["v"] is False  # a short option alone names its dest
    assert defaults["workers"] == 4 and "w" not in defaults  # the long one, where both are given


@pytest.mark.parametrize("test, expected", [
    ("args.multiprocessing_distributed", True),
    ("args.distributed", True),  # derived: `world_size > 1 or multiprocessing_distributed`
    ("not args.distributed", False),
    ("args.mGPUs", False),
    ("args.multi", False),  # `mGPUs and ...`: false whatever the rest
    ("args.use_cuda", True),
    ("args.gpu is not None", False),
    ("args.world_size > 1", False),
    ("args.lr == 0.1", True),
    ("opt.mGPUs", False),  # the names programs keep options in
    ("self.mGPUs", None),  # an object's attribute of the same name
    ("args.arch == 'resnet'", None),  # a computed default
    ("args.gpu > 1", None),  # None > 1: no answer
    ("args.unknown_option", None),  # defined elsewhere
    ("args.mGPUs or args.unknown_option", None),
    ("args.distributed or args.unknown_option", True),
    ("args.mGPUs and args.unknown_option", False),
    ("args.use_cuda and args.mGPUs", False),
    ("args.use_cuda and args.unknown_option", None),
    ("args.mGPUs or args.world_size > 1", False),
    ("not args.unknown_option", None),
    ("args.single", False),  # derived from a derived option
    ("args.loop", None),  # derived from itself: no answer, and no endless chase
    ("args.distributed == True", True),
    ("True == args.distributed", True),
    ("1 == args.world_size", True),
    ("args.use_cuda and args.fast", True),
    ("torch.cuda.device_count() > 1", None),
])
def test_a_condition_holds_or_fails_by_default(test, expected):
    assert holds_by_default(ast.parse(test, mode="eval").body, context(PARSER)) is expected


def test_without_a_parser_nothing_is_known():
    assert holds_by_default(ast.parse("args.distributed", mode="eval").body, context("import torch\n")) is None
