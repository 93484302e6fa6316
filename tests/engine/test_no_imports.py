"""The static pass reads source and never imports it, nor torch: with a `torch` that leaves a mark
and refuses to import, and user modules that leave a mark when imported, check and fix work as
usual and no mark appears. (The language server is covered the same way in test_lsp.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import run_ptlint

TRAIN = textwrap.dedent("""\
    import torch
    import torch.nn.functional as F
    import user_helpers
    from user_pkg import model as user_model
    from . import sibling

    user_helpers.setup()

    def train(model, loader, opt):
        history = []
        for x in loader:
            loss = model(x)
            loss.backward()
            history.append(loss)
            value = loss.item()
        logp = torch.log(F.softmax(x, dim=-1))
        return history, logp
""")


def _marking_module(mark: Path, name: str) -> str:
    return f"open({str(mark / name)!r}, 'w').close()\nraise ImportError('ptlint imported {name}')\n"


@pytest.fixture
def project(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    fake = tmp_path / "fake-site"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text(_marking_module(marks, "torch"))
    src = tmp_path / "proj"
    (src / "user_pkg").mkdir(parents=True)
    (src / "train.py").write_text(TRAIN)
    (src / "__init__.py").write_text(_marking_module(marks, "package"))
    (src / "sibling.py").write_text(_marking_module(marks, "sibling"))
    (src / "user_helpers.py").write_text(_marking_module(marks, "user_helpers"))
    (src / "user_pkg" / "__init__.py").write_text(_marking_module(marks, "user_pkg"))
    (src / "user_pkg" / "model.py").write_text(_marking_module(marks, "model"))
    # configured dynamic targets are not run (nor imported) without --dynamic
    (src / "pyproject.toml").write_text('[tool.ptlint]\n[tool.ptlint.dynamic]\ntargets = ["train.py:train"]\n')
    env = {"PYTHONPATH": os.pathsep.join([str(fake), str(src)])}
    return src, marks, env


def _no_marks(marks: Path) -> None:
    assert sorted(p.name for p in marks.iterdir()) == [], "the static pass imported these"


def test_check_and_fix_import_neither_torch_nor_user_code(project):
    src, marks, env = project
    result = run_ptlint("check", "--no-cache", "--select", "PTL", "--output-format", "concise", ".", cwd=src, env=env)
    assert result.returncode == 1, result.stderr
    codes = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("train.py:")}
    assert {"PTL101", "PTL103", "PTL302"} <= codes
    for output_format in ("json", "sarif", "github"):
        assert run_ptlint("check", "--no-cache", "--output-format", output_format, ".", cwd=src,
                          env=env).returncode == 1
    # several worker processes, and the cache
    assert run_ptlint("check", "--jobs", "2", ".", "train.py", cwd=src, env=env).returncode == 1
    assert run_ptlint("check", ".", cwd=src, env=env).returncode == 1
    diff = run_ptlint("fix", "--no-cache", "--unsafe-fixes", ".", cwd=src, env=env)
    assert diff.returncode == 1 and "+    logp = F.log_softmax(x, dim=-1)" in diff.stdout
    applied = run_ptlint("fix", "--apply", "--unsafe-fixes", "--no-cache", ".", cwd=src, env=env)
    assert applied.returncode == 1 and "Traceback" not in applied.stderr  # PTL101 remains
    fixed = (src / "train.py").read_text()
    assert "history.append(loss.detach())" in fixed and "F.log_softmax(x, dim=-1)" in fixed
    assert run_ptlint("rule", "--all", env=env).returncode == 0
    _no_marks(marks)


def test_library_interface_imports_nothing(project):
    src, marks, env = project
    code = textwrap.dedent(f"""\
        import sys
        from ptlint.front.api import check_text, fix_text
        from ptlint.front.flake8_plugin import *  # noqa
        text = open({str(src / "train.py")!r}).read()
        assert {{f.code for f in check_text(text)}} >= {{"PTL101", "PTL103", "PTL302"}}
        assert "log_softmax" in fix_text(text, unsafe=True)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "user_helpers", "user_pkg", "sibling"))
        assert not loaded, loaded
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=src, capture_output=True, text=True,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    _no_marks(marks)
