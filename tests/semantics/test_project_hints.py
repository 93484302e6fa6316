"""The project-level hints PTL603-PTL606: once per training script, at its training loop; silent
where the setting is made in the script or in a project module it imports (found on disk, read,
never imported); and never answered stale from the cache when such a module changes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from helpers import run_ptlint

from ptlint.engine.registry import all_rules
from ptlint.engine.source import SourceFile
from ptlint.engine.traversal import lint_source
from ptlint.front.api import check_text
from ptlint.run.cache import Cache
from ptlint.run.cache import dependency_digest
from ptlint.semantics.project import imported_project_files

HINTS = ["PTL603", "PTL604", "PTL605", "PTL606"]

TRAIN = """\
import torch
import torch.nn as nn
{imports}

def main(loader, epochs):
    model = nn.Linear(8, 1).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    for x, y in loader:  # a second loop that trains: the script is still reported once
        model(x.cuda()).sum().backward()
"""


def train(imports: str = "") -> str:
    return TRAIN.format(imports=imports)


def loop_line(text: str) -> int:
    """The line of `for x, y in loader:` around the first backward: where the hints report."""
    return text.splitlines().index("        for x, y in loader:") + 1


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


LOOP_LINE = "the training loop"


def findings(root: Path, target: str, *options: str) -> list[tuple[str, int | str]]:
    """(code, line) of the hints `ptlint check` reports on `target`, the line of the training
    loop written LOOP_LINE."""
    result = run_ptlint("check", "--select", ",".join(HINTS), "--output-format", "json", *options, target, cwd=root)
    assert result.returncode in (0, 1), result.stderr
    loop = loop_line((root / target).read_text())
    return sorted((f["code"], LOOP_LINE if f["line"] == loop else f["line"]) for f in json.loads(result.stdout))


def test_reported_once_at_the_training_loop(tmp_path):
    write(tmp_path, {"train.py": train("")})
    assert findings(tmp_path, "train.py", "--no-cache") == [("PTL603", LOOP_LINE), ("PTL606", LOOP_LINE)]


def test_silent_when_an_imported_project_module_makes_the_setting(tmp_path):
    write(tmp_path, {
        "train.py": train("from utils import setup\n"),
        "utils.py": "import torch\n\ndef setup():\n    torch.backends.cuda.matmul.allow_tf32 = True\n",
    })
    assert findings(tmp_path, "train.py", "--no-cache") == [("PTL606", LOOP_LINE)]


def test_relative_transitive_and_root_package_imports(tmp_path):
    """`from .env import x` inside a package, a module that imports another one, and a script in
    a folder of its own that imports a package at the project root."""
    write(tmp_path, {
        "pyproject.toml": "[tool.ptlint]\n",
        "mypkg/__init__.py": "",
        "mypkg/train.py": train("from .env import configure\n"),
        "mypkg/env.py": "from .precision import use_amp\n",
        "mypkg/precision.py": "import torch\n\ndef use_amp():\n    return torch.autocast('cuda')\n",
        "scripts/run.py": train("import mypkg.settings\n"),
        "mypkg/settings.py": "import torch\ntorch.set_float32_matmul_precision('high')\n",
    })
    # autocast reached through two modules: neither the TF32 hint nor the mixed-precision one
    assert findings(tmp_path, "mypkg/train.py", "--no-cache") == []
    # the script finds mypkg at the project root; TF32 is set there, mixed precision is not
    assert findings(tmp_path, "scripts/run.py", "--no-cache") == [("PTL606", LOOP_LINE)]


def test_imported_modules_are_read_not_run(tmp_path):
    marker = tmp_path / "ran"
    write(tmp_path, {
        "train.py": train("import helpers_mod\n"),
        "helpers_mod.py": f"open({str(marker)!r}, 'w').write('imported')\nraise SystemExit(3)\n",
    })
    assert findings(tmp_path, "train.py", "--no-cache") == [("PTL603", LOOP_LINE), ("PTL606", LOOP_LINE)]
    assert not marker.exists()


def test_cache_is_not_stale_when_an_imported_module_changes(tmp_path):
    cache = tmp_path / "cache"
    write(tmp_path, {
        "train.py": train("import utils\nimport later\n"),
        "utils.py": "import torch\n",
    })
    options = ("--cache-dir", str(cache))
    assert findings(tmp_path, "train.py", *options) == [("PTL603", LOOP_LINE), ("PTL606", LOOP_LINE)]
    assert any(cache.rglob("*.json")), "the first run must have filled the cache"
    # the imported module changes; train.py does not
    write(tmp_path, {"utils.py": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n"})
    assert findings(tmp_path, "train.py", *options) == [("PTL606", LOOP_LINE)]
    # a module that did not exist (the import resolved to nothing) appears
    write(tmp_path, {"later.py": "import torch\nUSE = torch.bfloat16\n"})
    assert findings(tmp_path, "train.py", *options) == []
    # and back: the entry for the first state is still right
    (tmp_path / "later.py").unlink()
    write(tmp_path, {"utils.py": "import torch\n"})
    assert findings(tmp_path, "train.py", *options) == [("PTL603", LOOP_LINE), ("PTL606", LOOP_LINE)]


def test_fix_reads_the_same_dependencies(tmp_path):
    """`ptlint fix` keys the cache like `check`: the hints do not turn up stale among the remaining findings."""
    write(tmp_path, {
        "train.py": train("import utils\n") + "\ny = torch.log(1 + torch.exp(x))\n",
        "utils.py": "import torch\n",
    })
    cache = ("--cache-dir", str(tmp_path / "cache"))
    select = ("--select", "PTL305,PTL603")
    first = run_ptlint("fix", *select, *cache, "--output-format", "json", "train.py", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    write(tmp_path, {"utils.py": "import torch\ntorch.set_float32_matmul_precision('high')\n"})
    result = run_ptlint("check", *select, *cache, "--output-format", "json", "train.py", cwd=tmp_path)
    assert sorted(f["code"] for f in json.loads(result.stdout)) == ["PTL305"]


def test_digest_is_empty_on_the_common_path(tmp_path):
    """Files where no rule reads imports keep the key they always had."""
    rules = all_rules()
    write(tmp_path, {"train.py": train("import utils\n"), "utils.py": "X = 1\n"})
    source = SourceFile(str(tmp_path / "train.py"), (tmp_path / "train.py").read_text())
    default = [cls for cls in rules.values() if cls.default]
    assert dependency_digest(source, default, str(tmp_path)) == ""
    digest = dependency_digest(source, [rules["PTL603"]], str(tmp_path))
    assert digest
    cache = Cache(str(tmp_path / "c"), "settings")
    data = source.text.encode()
    assert cache.key(data, ("PTL603",)) == cache.key(data, ("PTL603",), "")
    assert cache.key(data, ("PTL603",), digest) != cache.key(data, ("PTL603",))
    # no training loop in the file: no rule can fire, nothing is read
    plain = SourceFile(str(tmp_path / "utils.py"), "import train\n")
    assert dependency_digest(plain, [rules["PTL603"]], str(tmp_path)) == ""


def test_resolution_ignores_installed_and_missing_modules(tmp_path):
    write(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "from . import b\nfrom .c import d\n", "pkg/b.py": "",
                     "pkg/c/__init__.py": "", "pkg/c/d.py": "", "main.py": "import torch, os\nimport pkg.a\n"})
    import ast

    text = (tmp_path / "main.py").read_text()
    found = [(Path(f.path).relative_to(tmp_path).as_posix(), f.depth)
             for f in imported_project_files(str(tmp_path / "main.py"), ast.parse(text), str(tmp_path))]
    assert found == [("pkg/__init__.py", 1), ("pkg/a.py", 1), ("pkg/b.py", 2), ("pkg/c/__init__.py", 2),
                     ("pkg/c/d.py", 2)]
    # text that lives nowhere (the API's default path) has no project
    assert imported_project_files("<string>", ast.parse(text), None) == []


def test_test_code_is_silent(tmp_path):
    write(tmp_path, {"tests/test_train.py": train("")})
    assert findings(tmp_path, "tests/test_train.py", "--no-cache") == []


def test_hints_are_off_by_default():
    source = train("")
    assert check_text(source) == [] or all(f.code not in HINTS for f in check_text(source))
    assert {f.code for f in check_text(source, HINTS)} == {"PTL603", "PTL606"}


def test_lint_source_without_a_root_uses_the_files_folder(tmp_path):
    write(tmp_path, {"train.py": train("import utils\n"),
                     "utils.py": "import torch\nwith torch.autocast('cuda'):\n    pass\n"})
    source = SourceFile(str(tmp_path / "train.py"), (tmp_path / "train.py").read_text())
    assert [f.code for f in lint_source(source, [all_rules()["PTL606"]])] == []
